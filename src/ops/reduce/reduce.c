/* Host side of kernels_src/reduce.cu: kj_reduce picks the entry and its configuration, gets the
 * kernels from the runtime and launches them on the caller's stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/reduce/reduce.h"

#include "kernjit/ops.h"
#include "base/error.h"
#include "runtime/runtime.h"
#include "tunedb/tunedb.h"
#include "base/util.h"

static const char *const op_names[KJ_OP_COUNT_] = {"sum", "max", "min", "prod"};
static const char *const type_names[KJ_TYPE_COUNT_] = {"i32", "u32", "i64", "f16", "f32", "f64"};
static const size_t type_sizes[KJ_TYPE_COUNT_] = {4, 4, 8, 2, 4, 8};
static const size_t result_sizes[KJ_TYPE_COUNT_] = {4, 4, 8, 4, 4, 8};

const char *kj_op_name(kj_op op) { return (unsigned)op < KJ_OP_COUNT_ ? op_names[op] : "?"; }
const char *kj_type_name(kj_type t) { return (unsigned)t < KJ_TYPE_COUNT_ ? type_names[t] : "?"; }
size_t kj_type_size(kj_type t) { return (unsigned)t < KJ_TYPE_COUNT_ ? type_sizes[t] : 0; }
size_t kj_result_size(kj_type t) { return (unsigned)t < KJ_TYPE_COUNT_ ? result_sizes[t] : 0; }

kj_status kj_op_parse(const char *text, kj_op *op) {
    for (int i = 0; text && i < KJ_OP_COUNT_; i++)
        if (strcmp(text, op_names[i]) == 0) {
            *op = (kj_op)i;
            return KJ_OK;
        }
    return KJ_FAIL(KJ_ERR_USAGE, "unknown operator '%.40s': allowed are sum, max, min, prod", text ? text : "(null)");
}

kj_status kj_type_parse(const char *text, kj_type *type) {
    for (int i = 0; text && i < KJ_TYPE_COUNT_; i++)
        if (strcmp(text, type_names[i]) == 0) {
            *type = (kj_type)i;
            return KJ_OK;
        }
    return KJ_FAIL(KJ_ERR_USAGE, "unknown type '%.40s': allowed are i32, u32, i64, f16, f32, f64", text ? text : "(null)");
}

/* ---- the entries ----------------------------------------------------------------------------- */

typedef enum { FAST, SIMPLE, CONVERGENT, SHARED, SEGMENTED, COARSENED, ENTRY_COUNT } entry_id;

static const struct {
    const char *name;
    int single_block; /* reduces at most 2 * BLOCK_SIZE elements */
    int in_place;     /* works on a copy made by reduce_load */
    int atomic;       /* combines into the result, which reduce_init sets first */
    int coarsens;     /* uses COARSE_FACTOR */
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
#define UNUSED_COARSE 8u
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

typedef struct lane {
    kj_stream stream;
    kj_devptr base;
} lane;

/* The kernels kj_reduce asked for last, direct-mapped by configuration: a repeated call then skips
 * building the request, whose macros a memory hit would still format and hash. */
#define PLAN_SLOTS 64
typedef struct plan {
    const char *entry;
    unsigned op, type, block, coarse;
    kj_kernel *kernel;
} plan;

typedef struct reduce_state {
    pthread_mutex_t lock;
    lane *lanes;
    size_t count;
    plan plans[PLAN_SLOTS];
} reduce_state;

static kj_status state_create(kj_runtime *rt, void **out) {
    (void)rt;
    reduce_state *s = calloc(1, sizeof *s);
    if (!s) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return KJ_OK;
}

static void state_destroy(kj_runtime *rt, void *p) {
    reduce_state *s = p;
    for (size_t i = 0; i < s->count; i++) kj_mem_free(rt, s->lanes[i].base);
    free(s->lanes);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static kj_status workspace(kj_runtime *rt, kj_stream stream, kj_devptr *out) {
    void *p;
    KJ_FORWARD(kj__slot(rt, KJ__SLOT_REDUCE, state_create, state_destroy, &p));
    reduce_state *s = p;
    kj_status st = KJ_OK;
    pthread_mutex_lock(&s->lock);
    size_t i = 0;
    while (i < s->count && s->lanes[i].stream != stream) i++;
    if (i == s->count) {
        lane *grown = realloc(s->lanes, (s->count + 1) * sizeof *grown);
        kj_devptr base = 0;
        if (!grown) st = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        else s->lanes = grown;
        if (st == KJ_OK) st = kj_mem_alloc(rt, WS_BYTES, &base);
        /* the counter starts at 0. On the lane's own stream: kj_memset_u8 runs on the legacy default
         * stream, which a non-blocking stream (the host's, or kj_stream_create's) is not ordered
         * after, so the first reduction could read the counter before it is cleared. */
        if (st == KJ_OK) {
            CUresult r = rt->cu->cuMemsetD8Async((CUdeviceptr)base, 0, WS_BYTES, (CUstream)stream);
            if (r != CUDA_SUCCESS) st = kj__cuda_fail(r, __FILE__, __LINE__, "clearing the workspace (cuMemsetD8Async)");
        }
        if (st == KJ_OK) s->lanes[s->count++] = (lane){stream, base};
        else kj_mem_free(rt, base);
    }
    if (st == KJ_OK) *out = s->lanes[i].base;
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ---- launching ------------------------------------------------------------------------------- */

/* The request for an entry and configuration, with its macros' storage. */
typedef struct request {
    char block[16], coarse[16];
    kj_define defines[4];
    kj_request req;
} request;

static const kj_request *request_for(request *r, const char *entry, kj_op op, kj_type type, unsigned block,
                                     unsigned coarse) {
    snprintf(r->block, sizeof r->block, "%u", block);
    snprintf(r->coarse, sizeof r->coarse, "%u", coarse);
    r->defines[0] = (kj_define){"OP", op_names[op]};
    r->defines[1] = (kj_define){"T", type_names[type]};
    r->defines[2] = (kj_define){"BLOCK_SIZE", r->block};
    r->defines[3] = (kj_define){"COARSE_FACTOR", r->coarse};
    r->req = (kj_request){.kernel = "reduce", .entry = entry, .defines = r->defines, .define_count = 4};
    return &r->req;
}

static kj_status get(kj_runtime *rt, const char *entry, kj_op op, kj_type type, unsigned block, unsigned coarse,
                     kj_kernel **k, kj_origin *origin) {
    void *p;
    KJ_FORWARD(kj__slot(rt, KJ__SLOT_REDUCE, state_create, state_destroy, &p));
    reduce_state *s = p;
    plan *slot = &s->plans[(entry[7] * 31u + op * 7u + type * 13u + block / 32u + coarse * 5u) % PLAN_SLOTS];
    pthread_mutex_lock(&s->lock);
    kj_kernel *hit = slot->kernel && slot->op == (unsigned)op && slot->type == (unsigned)type && slot->block == block &&
                             slot->coarse == coarse && strcmp(slot->entry, entry) == 0
                         ? slot->kernel
                         : NULL;
    pthread_mutex_unlock(&s->lock);
    if (hit) {
        *k = hit;
        if (origin) *origin = KJ_ORIGIN_MEMORY;
        return KJ_OK;
    }
    request r;
    KJ_FORWARD(kj_kernel_get(rt, request_for(&r, entry, op, type, block, coarse), k, origin));
    pthread_mutex_lock(&s->lock);
    *slot = (plan){entry, (unsigned)op, (unsigned)type, block, coarse, *k};
    pthread_mutex_unlock(&s->lock);
    return KJ_OK;
}

static kj_status launch(kj_kernel *k, unsigned grid, unsigned block, kj_stream stream, void **args) {
    kj_launch_config c = {{grid, 1, 1}, {block, 1, 1}, 0, stream, 0};
    return kj_kernel_launch(k, &c, args);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* The fast entry's grid: enough blocks for the data, at most what is resident at once (the blocks
 * then stride through the rest), so that no block waits for a slot. */
static kj_status fast_grid(kj_runtime *rt, kj_kernel *k, kj_type type, size_t n, unsigned block, unsigned coarse,
                           unsigned *grid) {
    int per_sm = 0;
    KJ_FORWARD(kj_kernel_occupancy(k, block, 0, &per_sm));
    uint64_t resident = (uint64_t)(per_sm > 0 ? per_sm : 1) * (uint64_t)rt->info.sm_count;
    uint64_t per_block = (uint64_t)block * coarse * (16 / kj_type_size(type));
    uint64_t g = ceil_div(n ? n : 1, per_block);
    if (g > resident) g = resident;
    if (g > MAX_GRID) g = MAX_GRID;
    *grid = (unsigned)(g ? g : 1);
    return KJ_OK;
}

/* The fast entry's configuration when none is given or tuned, from sweeps on an H100 (every op and
 * type, 2^10 to 2^28): up to 8 vectors a thread, one block of 256 threads does it all, which saves
 * the cross-block combine (slots, a ticket and a second pass; half a microsecond where the whole
 * call took four, measured with the earlier fence-based combine); then 256 threads and as much coarsening as keeps at least 64 blocks busy, up to
 * 8; large inputs stream best with 1024 threads and 4 loads in flight per thread (2 blocks an SM). */
static void fast_default(kj_type type, size_t n, unsigned *block, unsigned *coarse) {
    size_t vec = 16 / kj_type_size(type);
    if ((uint64_t)n * kj_type_size(type) > (32u << 20)) {
        *block = 1024;
        *coarse = 4;
        return;
    }
    *block = 256;
    unsigned p = 1;
    if (n <= 256 * 8 * vec) {
        while ((uint64_t)256 * vec * p < n) p *= 2; /* one block */
    } else {
        uint64_t c = n / (256 * vec * 64);
        while (p * 2 <= c && p < 8) p *= 2;
    }
    *coarse = p;
}

/* The tuning database's configuration for this entry, operator, type and size (see kernjit.h for the
 * size buckets), when there is one that this entry can run: the in-memory copy only, no file access.
 * The `fixed` key is the metadata's params, OP and T, canonical as the tuner writes them. A tuned
 * pair is used whole: values that are not plain numbers, or a block too small for a single-block
 * entry's n, mean the defaults apply. */
static int tuned(kj_runtime *rt, entry_id e, kj_op op, kj_type type, size_t n, unsigned *block, unsigned *coarse) {
    char fixed[32], values[256];
    snprintf(fixed, sizeof fixed, "OP=%s T=%s", op_names[op], type_names[type]);
    if (!kj__tuned_find(rt, "reduce", entries[e].name, fixed, n, values, sizeof values)) return 0;
    unsigned b, c = *coarse;
    if (kj__tunedb_uint(values, "BLOCK_SIZE", 1024, &b) != 0 || (b & (b - 1))) return 0;
    if (entries[e].coarsens && kj__tunedb_uint(values, "COARSE_FACTOR", 1024, &c) != 0) return 0;
    if (entries[e].single_block && n > 2ull * b) return 0;
    *block = b;
    *coarse = c;
    return 1;
}

/* What a call will run: its entry and configuration, and where the configuration came from. */
typedef struct call_plan {
    entry_id e;
    unsigned block, coarse;
    const char *from;
} call_plan;

/* The checks of every call that need no device, and its plan. */
static kj_status plan_call(kj_runtime *rt, kj_op op, kj_type type, size_t n, const kj_reduce_options *o, call_plan *c) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_reduce: runtime is NULL");
    KJ_RETURN_IF((unsigned)op >= KJ_OP_COUNT_, KJ_ERR_USAGE, "kj_reduce: operator %d is not a kj_op (0 to 3)", (int)op);
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE, "kj_reduce: type %d is not a kj_type (0 to 5)", (int)type);
    KJ_RETURN_IF(n > SIZE_MAX / kj_type_size(type), KJ_ERR_USAGE,
                 "kj_reduce: n = %zu %s elements: the byte count overflows size_t", n, type_names[type]);
    kj_reduce_options defaults = {0};
    if (!o) o = &defaults;
    entry_id e = FAST;
    KJ_FORWARD(find_entry(o->entry, &e));
    unsigned block = entries[e].block, coarse = entries[e].coarse;
    if (e == FAST) fast_default(type, n, &block, &coarse);
    const char *from = "default";
    if (o->block_size || o->coarse_factor) {
        from = "explicit"; /* what the caller gives wins; the rest stays at the defaults */
        if (o->block_size) block = o->block_size;
        if (o->coarse_factor) coarse = o->coarse_factor;
    } else if (tuned(rt, e, op, type, n, &block, &coarse)) {
        from = "tuned";
    }
    KJ_RETURN_IF(o->coarse_factor && !entries[e].coarsens, KJ_ERR_USAGE,
                 "%s does not coarsen: COARSE_FACTOR applies to reduce_fast and reduce_coarsened", entries[e].name);
    if (!entries[e].coarsens) coarse = UNUSED_COARSE;
    if (entries[e].single_block)
        KJ_RETURN_IF(n > 2ull * block, KJ_ERR_USAGE,
                     "%s reduces in one block, at most 2 x BLOCK_SIZE = %u elements; n = %zu: use reduce_fast (the "
                     "default), reduce_segmented or reduce_coarsened", entries[e].name, 2 * block, n);
    *c = (call_plan){e, block, coarse, from};
    return KJ_OK;
}

kj_status kj_reduce_prefetch(kj_runtime *rt, kj_op op, kj_type type, size_t n, const kj_reduce_options *o) {
    call_plan c;
    KJ_FORWARD(plan_call(rt, op, type, n, o, &c));
    request r[2];
    kj_request reqs[2];
    size_t count = 0;
    reqs[count++] = *request_for(&r[0], entries[c.e].name, op, type, c.block, c.coarse);
    const char *helper = entries[c.e].in_place ? "reduce_load" : entries[c.e].atomic ? "reduce_init" : NULL;
    if (helper) reqs[count++] = *request_for(&r[1], helper, op, type, c.block, c.coarse);
    return kj_kernel_prefetch(rt, reqs, count);
}

kj_status kj_reduce_async(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, kj_devptr result,
                          const kj_reduce_options *o) {
    call_plan c;
    KJ_FORWARD(plan_call(rt, op, type, n, o, &c));
    KJ_RETURN_IF(n && !input, KJ_ERR_USAGE, "kj_reduce: input is 0 with n = %zu", n);
    KJ_RETURN_IF(input % kj_type_size(type), KJ_ERR_USAGE, "kj_reduce: input 0x%llx is not aligned to its %zu-byte %s elements",
                 (unsigned long long)input, kj_type_size(type), type_names[type]);
    KJ_RETURN_IF(!result || result % kj_result_size(type), KJ_ERR_USAGE,
                 "kj_reduce: result 0x%llx is 0 or not aligned to %zu bytes", (unsigned long long)result,
                 kj_result_size(type));
    KJ_FORWARD(kj__enter(rt));
    kj_reduce_options defaults = {0};
    if (!o) o = &defaults;
    entry_id e = c.e;
    unsigned block = c.block, coarse = c.coarse;
    const char *from = c.from;

    kj_kernel *k;
    kj_origin origin;
    kj_status got = get(rt, entries[e].name, op, type, block, coarse, &k, &origin);
    if (got != KJ_OK && strcmp(from, "tuned") == 0 && (got == KJ_ERR_INVALID_DEFINE || got == KJ_ERR_LIMIT)) {
        /* a hand-edited database, or metadata changed since: the defaults still work */
        kj__log(&rt->log, KJ_LOG_WARN, "the tuning database's BLOCK_SIZE=%u COARSE_FACTOR=%u for %s cannot be used (%s); "
                "using the defaults", block, coarse, entries[e].name, kj_last_error());
        block = entries[e].block;
        coarse = entries[e].coarse;
        if (e == FAST) fast_default(type, n, &block, &coarse);
        if (!entries[e].coarsens) coarse = UNUSED_COARSE;
        from = "default";
        got = get(rt, entries[e].name, op, type, block, coarse, &k, &origin);
    }
    KJ_FORWARD(got);
    kj_devptr ws = 0;
    if (e == FAST || entries[e].in_place) KJ_FORWARD(workspace(rt, o->stream, &ws));
    unsigned long long count = n;
    unsigned grid = 1;

    if (e == FAST) {
        KJ_FORWARD(fast_grid(rt, k, type, n, block, coarse, &grid));
        kj_devptr slots = ws + WS_SLOTS, counter = ws + WS_COUNTER;
        void *args[] = {&input, &count, &result, &slots, &counter};
        KJ_FORWARD(launch(k, grid, block, o->stream, args));
    } else if (entries[e].in_place) {
        kj_kernel *load;
        KJ_FORWARD(get(rt, "reduce_load", op, type, block, coarse, &load, NULL));
        kj_devptr copy = ws + WS_COPY;
        void *load_args[] = {&input, &count, &copy};
        KJ_FORWARD(launch(load, 1, block, o->stream, load_args));
        void *args[] = {&copy, &result};
        KJ_FORWARD(launch(k, 1, block, o->stream, args));
    } else if (e == SHARED) {
        void *args[] = {&input, &count, &result};
        KJ_FORWARD(launch(k, 1, block, o->stream, args));
    } else {
        kj_kernel *init;
        KJ_FORWARD(get(rt, "reduce_init", op, type, block, coarse, &init, NULL));
        void *init_args[] = {&result};
        KJ_FORWARD(launch(init, 1, 1, o->stream, init_args));
        uint64_t per_block = 2ull * block * (e == COARSENED ? coarse : 1);
        uint64_t g = ceil_div(n, per_block);
        KJ_RETURN_IF(g > (uint64_t)rt->info.max_grid_dim[0], KJ_ERR_LIMIT,
                     "%s: %zu elements need %llu blocks of %u; the device allows %d", entries[e].name, n,
                     (unsigned long long)g, block, rt->info.max_grid_dim[0]);
        grid = (unsigned)g;
        if (grid) {
            void *args[] = {&input, &count, &result};
            KJ_FORWARD(launch(k, grid, block, o->stream, args));
        }
    }
    if (o->report) {
        kj_reduce_report *r = o->report;
        snprintf(r->entry, sizeof r->entry, "%s", entries[e].name);
        r->block_size = block;
        r->coarse_factor = entries[e].coarsens ? coarse : 0;
        r->grid = grid;
        r->origin = origin;
        r->config_from = from;
    }
    return KJ_OK;
}

kj_status kj_reduce(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, void *host_result,
                    const kj_reduce_options *o) {
    KJ_RETURN_IF(!host_result, KJ_ERR_USAGE, "kj_reduce: host_result is NULL");
    KJ_FORWARD(kj__enter(rt));
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE, "kj_reduce: type %d is not a kj_type (0 to 5)", (int)type);
    kj_stream stream = o ? o->stream : NULL;
    kj_devptr ws;
    KJ_FORWARD(workspace(rt, stream, &ws));
    KJ_FORWARD(kj_reduce_async(rt, op, type, input, n, ws + WS_RESULT, o));
    KJ_CU(rt->cu->cuMemcpyDtoHAsync(host_result, (CUdeviceptr)(ws + WS_RESULT), kj_result_size(type), (CUstream)stream),
          "copying the result (cuMemcpyDtoHAsync)");
    KJ_CU(rt->cu->cuStreamSynchronize((CUstream)stream), "the reduction failed (cuStreamSynchronize)");
    return KJ_OK;
}
