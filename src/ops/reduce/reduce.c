/* Host side of kernels_src/reduce.cu: kj_reduce picks the entry and its configuration, gets the
 * kernels from the runtime and launches them on the caller's stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/reduce/reduce.h"

/* ---- the entries ----------------------------------------------------------------------------- */

typedef enum { FAST, SIMPLE, CONVERGENT, SHARED, SEGMENTED, COARSENED, ENTRY_COUNT } entry_id;

static const struct {
    const char *name;
    int single_block;       /* reduces at most 2 * BLOCK_SIZE elements */
    int in_place;           /* works on a copy made by reduce_load */
    int atomic;             /* combines into the result, which reduce_init sets first */
    int coarsens;           /* uses COARSE_FACTOR */
    unsigned block, coarse; /* default configuration */
} entries[ENTRY_COUNT] = {
    [FAST] = {"reduce_fast", 0, 0, 0, 1, 0, 0}, /* by size: fast_default() */
    [SIMPLE] = {"reduce_simple", 1, 1, 0, 0, 1024, 8},
    [CONVERGENT] = {"reduce_convergent", 1, 1, 0, 0, 1024, 8},
    [SHARED] = {"reduce_shared", 1, 0, 0, 0, 1024, 8},
    [SEGMENTED] = {"reduce_segmented", 0, 0, 1, 0, 256, 8},
    [COARSENED] = {"reduce_coarsened", 0, 0, 1, 1, 256, 8},
};

/* The metadata's COARSE_FACTOR default: entries that do not use it all share one module. */
#define UNUSED_COARSE_VALUE 8
#define UNUSED_COARSE ((unsigned)UNUSED_COARSE_VALUE)
#define TEXT(x) #x
#define TEXT_OF(x) TEXT(x)
#define MAX_GRID 8192u

const char kj__reduce_entry_list[] = "reduce_fast (the default), reduce_simple, reduce_convergent, reduce_shared, "
                                     "reduce_segmented, reduce_coarsened";

static int lookup_entry(const char *name, entry_id *out) {
    if (!name) {
        *out = FAST;
        return 0;
    }
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (strcmp(name, entries[i].name) == 0) {
            *out = (entry_id)i;
            return 0;
        }
    return -1;
}

static kj_status find_entry(const char *name, entry_id *out) {
    KJ_RETURN_IF(lookup_entry(name, out) != 0, KJ_ERR_USAGE, "unknown reduction entry '%.60s': the entries are %s",
                 name, kj__reduce_entry_list);
    return KJ_OK;
}

int kj__reduce_entry(const char *name, int *coarsens, int *single_block) {
    entry_id e;
    if (lookup_entry(name, &e) != 0) return -1;
    *coarsens = entries[e].coarsens;
    *single_block = entries[e].single_block;
    return 0;
}

/* ---- per-stream workspace -------------------------------------------------------------------- */

/* Work on one stream runs in order, so one workspace a stream is enough: the result of the
 * synchronous call, the fast entry's ticket counter (which its last block resets to 0) and its slots
 * (two 8-byte words a block, cleared as they are read), and the copy the in-place entries work on.
 * It starts zeroed, as reduce_fast needs. */
#define WS_RESULT 0
#define WS_COUNTER 16
#define WS_SLOTS 64
#define WS_COPY (WS_SLOTS + MAX_GRID * 16)
#define WS_BYTES (WS_COPY + 2048 * 8)

static const kj__state_key lanes = KJ__LANES;
/* The synchronous call's result: page-locked host memory that reduce_fast writes directly, so that
 * the host reads it once the marker after the kernel is done, with no copy to queue and wait for
 * (about 10 us of a one-element call on the H200). The other entries combine into their result with
 * atomics, which stay in device memory: they use the workspace and a copy. */
static const kj__state_key results = KJ__HOST_LANES;

/* The stream's workspace (reduce_fast needs it cleared, as kj__lane_get makes it). */
static kj_status workspace(kj_runtime *rt, kj_stream stream, kj_devptr *out) {
    kj__lane *lane;
    KJ_FORWARD(kj__lane_get(rt, &lanes, stream, WS_BYTES, &lane));
    *out = lane->buffer;
    return KJ_OK;
}

/* ---- launching ------------------------------------------------------------------------------- */

/* The request of a helper entry (reduce_load, reduce_init) for a configuration, with its macros'
 * storage: the main entry's macros, so that both come from one module. */
typedef struct helper {
    char block[16], coarse[16];
    kj_define defines[4];
    kj_request req;
} helper;

static const kj_request *helper_request(helper *h, const char *entry, kj_op op, kj_type type, unsigned block,
                                        unsigned coarse) {
    snprintf(h->block, sizeof h->block, "%u", block);
    snprintf(h->coarse, sizeof h->coarse, "%u", coarse);
    h->defines[0] = (kj_define){"OP", kj_op_name(op)};
    h->defines[1] = (kj_define){"T", kj_type_name(type)};
    h->defines[2] = (kj_define){"BLOCK_SIZE", h->block};
    h->defines[3] = (kj_define){"COARSE_FACTOR", h->coarse};
    h->req = (kj_request){
        .size = sizeof(kj_request), .kernel = "reduce", .entry = entry, .defines = h->defines, .define_count = 4};
    return &h->req;
}

/* The helper entry an entry launches first, or NULL. */
static const char *helper_of(entry_id e) {
    return entries[e].in_place ? "reduce_load" : entries[e].atomic ? "reduce_init" : NULL;
}

/* A helper entry's kernel for a job (the tuner's: kj_reduce has its plan's). */
kj_status kj__reduce_helper(kj_runtime *rt, const kj__reduce_job *j, kj_kernel **out) {
    entry_id e = FAST;
    KJ_FORWARD(find_entry(j->entry, &e));
    *out = NULL;
    const char *aid = helper_of(e);
    helper h;
    return aid ? kj_kernel_get(rt, helper_request(&h, aid, j->op, j->type, j->block, j->coarse), out, NULL) : KJ_OK;
}

static kj_status launch(kj_kernel *k, unsigned grid, unsigned block, kj_stream stream, void **args) {
    kj_launch_config c = {.size = sizeof c, .grid = {grid, 1, 1}, .block = {block, 1, 1}, .stream = stream};
    return kj__kernel_launch(k, &c, args);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* The fast entry's grid: enough blocks for the data, at most `waves` times what is resident at once
 * (the blocks then stride through the rest) and at most the slots of the workspace. One wave means no
 * block waits for a slot on the device; more waves even out how fast the multiprocessors drain their
 * share (a block that finishes early makes room for another), which a streaming read on the H200 was
 * measured to gain from (0.3% to 1% at 1 GiB), at the cost of more slots for the last block. */
static kj_status fast_grid(kj_runtime *rt, kj_kernel *k, kj_type type, size_t n, unsigned block, unsigned coarse,
                           unsigned waves, unsigned *grid) {
    int per_sm = 0;
    KJ_FORWARD(kj_kernel_occupancy(k, block, 0, &per_sm));
    uint64_t resident = (uint64_t)(per_sm > 0 ? per_sm : 1) * (uint64_t)kj__device_info(rt)->sm_count;
    uint64_t per_block = (uint64_t)block * coarse * (16 / kj_type_size(type));
    uint64_t g = ceil_div(n ? n : 1, per_block);
    if (g > resident * (waves ? waves : 1)) g = resident * (waves ? waves : 1);
    if (g > MAX_GRID) g = MAX_GRID;
    *grid = (unsigned)(g ? g : 1);
    return KJ_OK;
}

/* A DRAM round trip under a full streaming load, for Little's law below: a read on the H200 reached
 * 97% of its best with one 16-byte load in flight per resident thread (4.3 MB in flight), 98.8% with
 * two and 99.9% with four (17 MB), so the memory wants about 3 us of its bandwidth in flight. */
#define LOADED_LATENCY_NS 3000.0
#define STREAM_WAVES 1u

/* The fast entry's configuration when none is given or tuned, from what the device reports:
 * - up to 8 vectors a thread, one block of 256 threads does it all, which saves the cross-block
 *   combine (the slots, the ticket and the last block's pass over the slots);
 * - then, while the input is at most half the L2, 512 threads a block, each with one vector in flight
 *   per pass, or two where that still leaves at least one block an SM: more threads with fewer loads
 *   each reach the memory sooner than 256 threads with 8 (H100, f16 at 2^20: 3.5-3.8 us a call
 *   against 4.2-4.6; f64 at 2^22: 13.8 against 14.3);
 * - larger inputs stream from DRAM: the largest block (1024 threads), and enough loads in flight per
 *   thread that the resident threads hold the bandwidth x latency product (Little's law), a power of
 *   two from 2 to 8: 4 on the H100 (3.35 TB/s) and the H200 (4.8 TB/s), each with 2048 threads on each
 *   of its 132 multiprocessors. */
static void fast_default(const kj_device_info *d, kj_type type, size_t n, unsigned *block, unsigned *coarse,
                         unsigned *waves) {
    size_t vec = 16 / kj_type_size(type);
    uint64_t l2 = d->l2_bytes ? d->l2_bytes : 50u << 20;
    *waves = STREAM_WAVES;
    if ((uint64_t)n * kj_type_size(type) > l2 / 2) {
        double gbs = d->peak_bandwidth_gbs > 0 ? d->peak_bandwidth_gbs : 3350;
        double threads = (double)(d->sm_count > 0 ? d->sm_count : 132) *
                         (d->max_threads_per_sm > 0 ? d->max_threads_per_sm : 2048);
        double in_flight = gbs * LOADED_LATENCY_NS; /* bytes: GB/s x ns */
        unsigned loads = 2;
        while (loads < 8 && loads * 16.0 * threads < in_flight) loads *= 2;
        *block = d->max_threads_per_block >= 1024 || d->max_threads_per_block <= 0 ? 1024 : 512;
        *coarse = loads;
        return;
    }
    if (n <= 256 * 8 * vec) {
        unsigned p = 1;
        while ((uint64_t)256 * vec * p < n) p *= 2; /* one block */
        *block = 256;
        *coarse = p;
        return;
    }
    unsigned sms = d->sm_count > 0 ? (unsigned)d->sm_count : 132;
    *block = 512;
    *coarse = (uint64_t)n >= (uint64_t)512 * vec * 2 * sms ? 2 : 1;
}

kj_status kj__reduce_launch(kj_runtime *rt, kj_kernel *k, const kj__reduce_job *j, unsigned *grid) {
    entry_id e = FAST;
    KJ_FORWARD(find_entry(j->entry, &e));
    kj_devptr ws = 0, input = j->input, result = j->result;
    if (e == FAST || entries[e].in_place) KJ_FORWARD(workspace(rt, j->stream, &ws));
    unsigned long long count = j->n;
    *grid = 1;
    if (e == FAST) {
        KJ_FORWARD(fast_grid(rt, k, j->type, j->n, j->block, j->coarse, j->waves, grid));
        kj_devptr slots = ws + WS_SLOTS, counter = ws + WS_COUNTER;
        void *args[] = {&input, &count, &result, &slots, &counter};
        return launch(k, *grid, j->block, j->stream, args);
    }
    KJ_RETURN_IF(!j->helper && (entries[e].in_place || entries[e].atomic), KJ_ERR_USAGE,
                 "%s needs its helper entry's kernel (kj__reduce_helper)", entries[e].name);
    if (entries[e].in_place) {
        kj_kernel *load = j->helper;
        kj_devptr copy = ws + WS_COPY;
        void *load_args[] = {&input, &count, &copy};
        KJ_FORWARD(launch(load, 1, j->block, j->stream, load_args));
        void *args[] = {&copy, &result};
        return launch(k, 1, j->block, j->stream, args);
    }
    void *args[] = {&input, &count, &result};
    if (e == SHARED) return launch(k, 1, j->block, j->stream, args);
    kj_kernel *init = j->helper;
    void *init_args[] = {&result};
    KJ_FORWARD(launch(init, 1, 1, j->stream, init_args));
    uint64_t g = ceil_div(j->n, 2ull * j->block * (e == COARSENED ? j->coarse : 1));
    int most = kj__device_info(rt)->max_grid_dim[0];
    KJ_RETURN_IF(g > (uint64_t)most, KJ_ERR_LIMIT, "%s: %zu elements need %llu blocks of %u; the device allows %d",
                 entries[e].name, j->n, (unsigned long long)g, j->block, most);
    *grid = (unsigned)g;
    return g ? launch(k, *grid, j->block, j->stream, args) : KJ_OK;
}

/* Tuned values fit a single-block entry when its one block covers n. */
static int fits(const void *user, const unsigned *values) { return *(const size_t *)user <= 2ull * values[0]; }

/* What a call will run: its entry, and its configuration call (which points into this struct: it is
 * not copied). */
typedef struct call {
    entry_id e;
    size_t n;
    kj_define fixed[2], pinned;
    kj__config_call call;
} call;

/* The checks of every call that need no device, and what it will run. */
static kj_status call_of(kj_runtime *rt, kj_op op, kj_type type, size_t n, const kj_reduce_options *o, call *p) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_reduce: runtime is NULL");
    KJ_RETURN_IF((unsigned)op >= KJ_OP_COUNT_, KJ_ERR_USAGE, "kj_reduce: operator %d is not a kj_op (0 to 3)", (int)op);
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE, "kj_reduce: type %d is not a kj_type (0 to %d)",
                 (int)type, KJ_TYPE_COUNT_ - 1);
    KJ_RETURN_IF(n > SIZE_MAX / kj_type_size(type), KJ_ERR_USAGE,
                 "kj_reduce: n = %zu %s elements: the byte count overflows size_t", n, kj_type_name(type));
    entry_id e = FAST;
    KJ_FORWARD(find_entry(o->entry, &e));
    KJ_RETURN_IF(o->coarse_factor && !entries[e].coarsens, KJ_ERR_USAGE,
                 "%s does not coarsen: COARSE_FACTOR applies to reduce_fast and reduce_coarsened", entries[e].name);
    KJ_RETURN_IF(o->waves && e != FAST, KJ_ERR_USAGE,
                 "%s has a grid fixed by n: WAVES (waves) applies to reduce_fast alone", entries[e].name);
    KJ_RETURN_IF(o->reserved, KJ_ERR_USAGE, "kj_reduce_options.reserved is %u: it must be 0", (unsigned)o->reserved);
    unsigned block = entries[e].block, coarse = entries[e].coarse, waves = 0;
    if (e == FAST) fast_default(kj__device_info(rt), type, n, &block, &coarse, &waves);
    /* tuned values that would not fit are not used (fits), so the block given or the default decides */
    unsigned given_block = o->block_size ? o->block_size : block;
    KJ_RETURN_IF(entries[e].single_block && n > 2ull * given_block, KJ_ERR_USAGE,
                 "%s reduces in one block, at most 2 x BLOCK_SIZE = %u elements; n = %zu: use reduce_fast (the "
                 "default), reduce_segmented or reduce_coarsened",
                 entries[e].name, 2 * given_block, n);
    p->e = e;
    p->n = n;
    p->fixed[0] = (kj_define){"OP", kj_op_name(op)};
    p->fixed[1] = (kj_define){"T", kj_type_name(type)};
    p->pinned = (kj_define){"COARSE_FACTOR", TEXT_OF(UNUSED_COARSE_VALUE)};
    int coarsens = entries[e].coarsens;
    p->call = (kj__config_call){.kernel = "reduce",
                                .entry = entries[e].name,
                                .helper = helper_of(e),
                                .fixed = p->fixed,
                                .fixed_count = 2,
                                .pinned = coarsens ? NULL : &p->pinned,
                                .pinned_count = coarsens ? 0 : 1,
                                .n = n,
                                .count = e == FAST  ? 3
                                         : coarsens ? 2
                                                    : 1,
                                .names = {"BLOCK_SIZE", "COARSE_FACTOR", "WAVES"},
                                .given = {o->block_size, o->coarse_factor, o->waves},
                                .defaults = {block, coarse, waves},
                                .suits = entries[e].single_block ? fits : NULL,
                                .user = &p->n};
    return KJ_OK;
}

/* COARSE_FACTOR of a configuration: the chosen one where the entry uses it, else the metadata's. */
static unsigned coarse_of(const call *p, const kj__config *c) {
    return entries[p->e].coarsens ? c->values[1] : UNUSED_COARSE;
}
/* WAVES of a configuration: reduce_fast's; 0 for the entries whose grid n fixes. */
static unsigned waves_of(const call *p, const kj__config *c) { return p->e == FAST ? c->values[2] : 0; }

/* The caller's options (NULL: the defaults) in our layout; their report's size checked. */
static kj_status options_of(const kj_reduce_options **o, kj_reduce_options *copy) {
    static const kj_reduce_options defaults = KJ_REDUCE_OPTIONS_INIT;
    const kj_reduce_options *view = *o ? *o : &defaults;
    KJ__SIZED_INPUT(view, *copy, kj_reduce_options, KJ_REDUCE_OPTIONS_INIT);
    if (view->report) KJ_FORWARD(KJ__SIZED_CHECK(view->report, kj_reduce_report, KJ_REDUCE_REPORT_INIT));
    *o = view;
    return KJ_OK;
}

kj_status kj_reduce_prefetch(kj_runtime *rt, kj_op op, kj_type type, size_t n, const kj_reduce_options *o) {
    kj_reduce_options copy;
    KJ_FORWARD(options_of(&o, &copy));
    call p;
    KJ_FORWARD(call_of(rt, op, type, n, o, &p));
    kj__config c;
    kj__config_choose(rt, &p.call, &c);
    kj__config_request main;
    kj_request reqs[2] = {*kj__config_request_of(&p.call, c.values, &main)};
    reqs[1] = reqs[0];
    reqs[1].entry = p.call.helper; /* the same macros: one module */
    return kj_kernel_prefetch(rt, reqs, p.call.helper ? 2 : 1);
}

/* The call's input: n elements of type, aligned to them. */
static kj_status check_input(kj_type type, size_t n, kj_devptr input) {
    KJ_RETURN_IF(n && !input, KJ_ERR_USAGE, "kj_reduce: input is 0 with n = %zu", n);
    KJ_RETURN_IF(input % kj_type_size(type), KJ_ERR_USAGE,
                 "kj_reduce: input 0x%llx is not aligned to its %zu-byte %s elements", (unsigned long long)input,
                 kj_type_size(type), kj_type_name(type));
    return KJ_OK;
}

/* kj_reduce_async once the call is checked and its runtime entered. */
static kj_status reduce_entered(kj_runtime *rt, const call *p, kj_op op, kj_type type, kj_devptr input, size_t n,
                                kj_devptr result, const kj_reduce_options *o) {
    kj__config c;
    KJ_FORWARD(kj__config_resolve(rt, &p->call, &c));
    kj__reduce_job job = {entries[p->e].name, op,        type,    input, n, result, c.values[0], coarse_of(p, &c),
                          waves_of(p, &c),    o->stream, c.helper};
    unsigned grid;
    KJ_FORWARD(kj__reduce_launch(rt, c.kernel, &job, &grid));
    if (o->report) {
        kj_reduce_report full = {0}, *r = &full;
        r->entry = job.entry;
        r->block_size = job.block;
        r->coarse_factor = entries[p->e].coarsens ? job.coarse : 0;
        r->grid = grid;
        r->origin = c.origin;
        r->config_from = c.from;
        r->waves = job.waves;
        KJ__SIZED_WRITE(o->report, full);
    }
    return KJ_OK;
}

kj_status kj_reduce_async(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, kj_devptr result,
                          const kj_reduce_options *o) {
    kj_reduce_options copy;
    KJ_FORWARD(options_of(&o, &copy));
    call p;
    KJ_FORWARD(call_of(rt, op, type, n, o, &p));
    KJ_FORWARD(check_input(type, n, input));
    KJ_RETURN_IF(!result || result % kj_result_size(type), KJ_ERR_USAGE,
                 "kj_reduce: result 0x%llx is 0 or not aligned to %zu bytes", (unsigned long long)result,
                 kj_result_size(type));
    KJ_FORWARD(kj__enter(rt));
    return reduce_entered(rt, &p, op, type, input, n, result, o);
}

kj_status kj_reduce(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, void *host_result,
                    const kj_reduce_options *o) {
    KJ_RETURN_IF(!host_result, KJ_ERR_USAGE, "kj_reduce: host_result is NULL");
    kj_reduce_options copy;
    KJ_FORWARD(options_of(&o, &copy));
    call p;
    KJ_FORWARD(call_of(rt, op, type, n, o, &p));
    KJ_FORWARD(check_input(type, n, input));
    KJ_FORWARD(kj__enter(rt));
    kj_stream stream = o->stream;
    if (p.e == FAST) {
        kj__lane *lane;
        KJ_FORWARD(kj__lane_get(rt, &results, stream, 16, &lane));
        KJ_FORWARD(reduce_entered(rt, &p, op, type, input, n, lane->buffer, o));
        KJ_FORWARD(kj__event_record(lane->done, stream));
        KJ_FORWARD(kj__lane_wait(lane, "the reduction failed", KJ__REDUCE_WAIT_LIMIT_MS));
        memcpy(host_result, lane->host, kj_result_size(type));
        return KJ_OK;
    }
    kj_devptr ws;
    KJ_FORWARD(workspace(rt, stream, &ws));
    KJ_FORWARD(reduce_entered(rt, &p, op, type, input, n, ws + WS_RESULT, o));
    KJ_FORWARD(
        kj__memcpy_dtoh_async(rt, host_result, ws + WS_RESULT, kj_result_size(type), stream, "copying the result"));
    return kj__stream_wait(rt, stream, "the reduction failed");
}
