/* Host side of kernels_src/reduce.cu: kj_reduce picks the entry and configuration, gets the kernels
 * from the runtime and launches them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../runtime.h"
#include "../util.h"

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

/* ---- per-stream scratch: the result of the synchronous call ---------------------------------- */

#define MAX_STREAMS 64

typedef struct reduce_state {
    pthread_mutex_t lock;
    struct {
        kj_stream stream;
        kj_devptr result;
    } lanes[MAX_STREAMS];
    int lane_count;
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
    for (int i = 0; i < s->lane_count; i++) kj_mem_free(rt, s->lanes[i].result);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* A result buffer for this stream: work on one stream runs in order, so one buffer a stream is enough. */
static kj_status result_buffer(kj_runtime *rt, kj_stream stream, kj_devptr *out) {
    void *p;
    KJ_FORWARD(kj__slot(rt, KJ__SLOT_REDUCE, state_create, state_destroy, &p));
    reduce_state *s = p;
    kj_status st = KJ_OK;
    pthread_mutex_lock(&s->lock);
    int i = 0;
    while (i < s->lane_count && s->lanes[i].stream != stream) i++;
    if (i == s->lane_count) {
        if (s->lane_count == MAX_STREAMS) st = KJ_FAIL(KJ_ERR_UNSUPPORTED, "kj_reduce serves at most %d streams", MAX_STREAMS);
        else if ((st = kj_mem_alloc(rt, 16, &s->lanes[i].result)) == KJ_OK) s->lanes[s->lane_count++].stream = stream;
    }
    if (st == KJ_OK) *out = s->lanes[i].result;
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ---- the launch ------------------------------------------------------------------------------ */

static kj_status get(kj_runtime *rt, const char *entry, kj_op op, kj_type type, unsigned block, unsigned coarse,
                     kj_kernel **k, kj_origin *origin) {
    char b[16], c[16];
    snprintf(b, sizeof b, "%u", block);
    snprintf(c, sizeof c, "%u", coarse);
    kj_define defs[] = {{"OP", op_names[op]}, {"T", type_names[type]}, {"BLOCK_SIZE", b}, {"COARSE_FACTOR", c}};
    kj_request req = {.kernel = "reduce", .entry = entry, .defines = defs, .define_count = 4};
    return kj_kernel_get(rt, &req, k, origin);
}

kj_status kj_reduce_async(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, kj_devptr result,
                          const kj_reduce_options *o) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_reduce: runtime is NULL");
    KJ_RETURN_IF((unsigned)op >= KJ_OP_COUNT_, KJ_ERR_USAGE, "kj_reduce: operator %d is not a kj_op", (int)op);
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE, "kj_reduce: type %d is not a kj_type", (int)type);
    KJ_RETURN_IF(n && !input, KJ_ERR_USAGE, "kj_reduce: input is 0 with n = %zu", n);
    KJ_RETURN_IF(!result, KJ_ERR_USAGE, "kj_reduce: result is 0");
    kj_reduce_options defaults = {0};
    if (!o) o = &defaults;
    const char *entry = o->entry ? o->entry : "reduce_coarsened";
    KJ_RETURN_IF(strcmp(entry, "reduce_coarsened") != 0, KJ_ERR_USAGE,
                 "kj_reduce: unknown entry '%.60s': the entries are reduce_coarsened", entry);
    unsigned block = o->block_size ? o->block_size : 256, coarse = o->coarse_factor ? o->coarse_factor : 8;
    const char *from = o->block_size || o->coarse_factor ? "explicit" : "default";

    kj_kernel *init, *main_k;
    kj_origin origin;
    KJ_FORWARD(get(rt, "reduce_init", op, type, block, coarse, &init, NULL));
    KJ_FORWARD(get(rt, entry, op, type, block, coarse, &main_k, &origin));
    void *init_args[] = {&result};
    kj_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0, o->stream, 0};
    KJ_FORWARD(kj_kernel_launch(init, &one, init_args));
    uint64_t per_block = 2ull * coarse * block;
    uint64_t grid = (n + per_block - 1) / per_block;
    if (grid) {
        unsigned long long count = n;
        void *args[] = {&input, &count, &result};
        KJ_RETURN_IF(grid > (uint64_t)rt->info.max_grid_dim[0], KJ_ERR_LIMIT,
                     "kj_reduce: %zu elements need %llu blocks of %u; the device allows %d", n,
                     (unsigned long long)grid, block, rt->info.max_grid_dim[0]);
        kj_launch_config cfg = {{(unsigned)grid, 1, 1}, {block, 1, 1}, 0, o->stream, 0};
        KJ_FORWARD(kj_kernel_launch(main_k, &cfg, args));
    }
    if (o->report) {
        kj_reduce_report *r = o->report;
        snprintf(r->entry, sizeof r->entry, "%s", entry);
        r->block_size = block;
        r->coarse_factor = coarse;
        r->grid = (unsigned)grid;
        r->origin = origin;
        r->config_from = from;
    }
    return KJ_OK;
}

kj_status kj_reduce(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, void *host_result,
                    const kj_reduce_options *o) {
    KJ_RETURN_IF(!host_result, KJ_ERR_USAGE, "kj_reduce: host_result is NULL");
    KJ_FORWARD(kj__enter(rt));
    kj_stream stream = o ? o->stream : NULL;
    kj_devptr result;
    KJ_FORWARD(result_buffer(rt, stream, &result));
    KJ_FORWARD(kj_reduce_async(rt, op, type, input, n, result, o));
    KJ_CU(rt->cu->cuMemcpyDtoHAsync(host_result, (CUdeviceptr)result, kj_result_size(type), (CUstream)stream),
          "copying the result (cuMemcpyDtoHAsync)");
    KJ_CU(rt->cu->cuStreamSynchronize((CUstream)stream), "the reduction failed (cuStreamSynchronize)");
    return KJ_OK;
}
