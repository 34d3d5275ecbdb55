/* Host side of kernels_src/nested.cu: the recursive reductions (kj_nested_reduce) and the nested hello
 * world (kj_nested_hello). Each call checks the nesting depth, sizes the pending-launch limit from
 * the launches its tree makes, launches, and checks the device-side launches before returning. */
#include <stdio.h>
#include <string.h>

#include "ops/cdp/cdp.h"
#include "ops/ops.h"

static const char *const variant_names[KJ_NESTED_VARIANT_COUNT_] = {"sync", "nosync", "reduce2"};
static const char *const variant_entries[KJ_NESTED_VARIANT_COUNT_] = {"nested_reduce", "nested_reduce_nosync",
                                                                      "nested_reduce2"};

#define FOLD_THREADS 256u
#define HELLO_MAX_LINES 8192u /* what the device's default printf buffer (1 MiB) surely holds */

const char *kj_nested_variant_name(kj_nested_variant v) {
    return (unsigned)v < KJ_NESTED_VARIANT_COUNT_ ? variant_names[v] : "?";
}

kj_status kj_nested_variant_parse(const char *text, kj_nested_variant *variant) {
    int i = kj__name_find(variant_names, KJ_NESTED_VARIANT_COUNT_, text);
    KJ_RETURN_IF(i < 0, KJ_ERR_USAGE, "unknown nested-reduce variant '%.40s': allowed are sync, nosync, reduce2",
                 text ? text : "(null)");
    *variant = (kj_nested_variant)i;
    return KJ_OK;
}

static unsigned log2u(unsigned v) { return v > 1 ? 31u - (unsigned)__builtin_clz(v) : 0; } /* rounded down */

/* The kernels of entry (and of helper, NULL: none) at these macros, from the call's plan. */
static kj_status get(kj_runtime *rt, const char *entry, const char *helper, kj_type type, int count, kj__config *out) {
    kj_define defs[] = {{"COUNT_LAUNCHES", count ? "1" : "0"}, {"T", kj_type_name(type)}};
    kj__config_call call = {.kernel = "nested", .entry = entry, .helper = helper, .fixed = defs, .fixed_count = 2};
    return kj__config_resolve(rt, &call, out);
}

static void fill_report(kj_dp_report *caller, const char *entry, unsigned grid, unsigned block, unsigned levels,
                        int counted, const kj_cdp_status *st, uint64_t expected, uint64_t pending, uint64_t limit,
                        double ms, kj_origin origin) {
    kj_dp_report full, *r = &full;
    memset(r, 0, sizeof *r);
    r->entry = entry;
    r->grid[0] = grid;
    r->grid[1] = 1;
    r->block[0] = block;
    r->block[1] = 1;
    r->levels = levels;
    r->counted = counted;
    r->device_launches = counted ? st->launches : 0;
    r->expected_launches = expected;
    r->pending_launches = pending;
    r->pending_limit = limit;
    r->gpu_ms = ms;
    r->origin = origin;
    KJ__SIZED_WRITE(caller, full);
}

kj_status kj_nested_reduce(kj_runtime *rt, kj_type type, kj_devptr data, size_t n, void *host_result,
                           const kj_nested_options *o) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_nested_reduce: runtime is NULL");
    KJ_RETURN_IF(!host_result, KJ_ERR_USAGE, "kj_nested_reduce: host_result is NULL");
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_ || type == KJ_TYPE_F16 || type == KJ_TYPE_BF16, KJ_ERR_USAGE,
                 "kj_nested_reduce: type %s: allowed are i32, u32, i64, f32, f64 (the reduction is in place, so the "
                 "element type must be its own accumulator)",
                 kj_type_name(type));
    KJ_RETURN_IF(n && !data, KJ_ERR_USAGE, "kj_nested_reduce: data is 0 with n = %zu", n);
    KJ_RETURN_IF(n > SIZE_MAX / kj_type_size(type), KJ_ERR_USAGE,
                 "kj_nested_reduce: n = %zu %s elements: the byte count overflows size_t", n, kj_type_name(type));
    kj_nested_options defaults = KJ_NESTED_OPTIONS_INIT, copy;
    if (!o) o = &defaults;
    KJ__SIZED_INPUT(o, copy, kj_nested_options, KJ_NESTED_OPTIONS_INIT);
    if (o->report) KJ_FORWARD(KJ__SIZED_CHECK(o->report, kj_dp_report, KJ_DP_REPORT_INIT));
    KJ_RETURN_IF((unsigned)o->variant >= KJ_NESTED_VARIANT_COUNT_, KJ_ERR_USAGE,
                 "kj_nested_reduce: variant %d: allowed are sync, nosync, reduce2", (int)o->variant);
    const unsigned block = o->block_size ? o->block_size : 512;
    KJ_RETURN_IF(!kj__is_pow2(block) || block < 2 || block > 1024, KJ_ERR_USAGE,
                 "nested-reduce block size %u: a power of two from 2 to 1024 is allowed", block);
    KJ_FORWARD(kj__enter(rt));
    const uint64_t grid64 = n ? ((uint64_t)n + block - 1) / block : 0;
    KJ_RETURN_IF(grid64 > (uint64_t)kj__device_info(rt)->max_grid_dim[0], KJ_ERR_LIMIT,
                 "nested-reduce of %zu elements needs %llu blocks of %u; the device allows %d", n,
                 (unsigned long long)grid64, block, kj__device_info(rt)->max_grid_dim[0]);
    const unsigned grid = (unsigned)grid64;
    const kj_nested_variant variant = o->variant;
    const char *entry = variant_entries[variant];

    /* A chain halves the block down to two elements: log2(block) - 1 launches below the host's grid. */
    const unsigned chain = log2u(block) - 1, levels = chain + 1;
    char what[96];
    snprintf(what, sizeof what, "nested-reduce %s (n = %zu, block %u)", variant_names[variant], n, block);
    KJ_FORWARD(kj__cdp_check_depth(rt, levels, what));
    const uint64_t expected = grid == 0 ? 0 : variant == KJ_NESTED_REDUCE2 ? chain : (uint64_t)grid * chain;
    /* Never more launches are pending at once than the tree makes in all (for sync every chain may
     * be alive at once; for nosync the top grid's tail stream holds one launch per block). */
    const uint64_t pending = o->pending_launches ? o->pending_launches : expected ? expected : 1;

    kj__config got;
    KJ_FORWARD(get(rt, entry, "nested_fold", type, o->count_launches, &got));
    kj_kernel *top = got.kernel, *fold = got.helper;
    kj_origin origin = got.origin;
    const size_t acc = kj_result_size(type);
    kj__lane *lane;
    KJ_FORWARD(kj__cdp_lane_get(rt, o->stream, (size_t)grid * acc, &lane));
    kj_devptr status = lane->buffer + KJ__CDP_STATUS, result = lane->buffer + KJ__CDP_RESULT,
              sums = lane->buffer + KJ__CDP_SCRATCH;

    KJ_FORWARD(kj__cdp_begin(rt, lane));
    unsigned long long count = n;
    if (grid) {
        unsigned threads = block, size = block, dim = block;
        void *per_block[] = {&data, &sums, &count, &size, &status};
        void *reduce2[] = {&data, &sums, &count, &size, &dim, &status};
        if (variant == KJ_NESTED_REDUCE2) {
            threads = block / 2;
            size = block / 2; /* the first stride */
        }
        kj_launch_config cfg = {.size = sizeof cfg,
                                .grid = {grid, 1, 1},
                                .block = {threads, 1, 1},
                                .stream = o->stream,
                                .pending_launches = pending};
        KJ_FORWARD(kj__kernel_launch(top, &cfg, variant == KJ_NESTED_REDUCE2 ? reduce2 : per_block));
    }
    /* Stream order puts the fold after the whole tree: a host-launched grid is complete only when all
     * the grids it spawned are. */
    unsigned long long m = grid;
    void *fold_args[] = {&sums, &m, &result};
    kj_launch_config one = {.size = sizeof one,
                            .grid = {1, 1, 1},
                            .block = {FOLD_THREADS, 1, 1},
                            .stream = o->stream,
                            .pending_launches = pending};
    KJ_FORWARD(kj__kernel_launch(fold, &one, fold_args));

    kj_cdp_status st;
    double ms = 0;
    KJ_FORWARD(kj__cdp_finish(rt, lane, host_result, acc, what, &st, o->report ? &ms : NULL));
    if (o->report)
        fill_report(o->report, entry, grid, variant == KJ_NESTED_REDUCE2 ? block / 2 : block, levels,
                    o->count_launches ? 1 : 0, &st, expected, pending, kj__pending_launch_limit(rt), ms, origin);
    return KJ_OK;
}

kj_status kj_nested_hello(kj_runtime *rt, unsigned grid, unsigned block, kj_dp_report *report) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_nested_hello: runtime is NULL");
    KJ_RETURN_IF(!kj__is_pow2(block) || block > 1024, KJ_ERR_USAGE,
                 "nested-hello block %u: a power of two from 1 to 1024 is allowed", block);
    KJ_RETURN_IF(grid < 1, KJ_ERR_USAGE, "nested-hello grid %u: at least 1 block", grid);
    if (report) KJ_FORWARD(KJ__SIZED_CHECK(report, kj_dp_report, KJ_DP_REPORT_INIT));
    const uint64_t lines = (uint64_t)grid * (2ull * block - 1);
    KJ_RETURN_IF(lines > HELLO_MAX_LINES, KJ_ERR_USAGE,
                 "nested-hello with %u blocks of %u prints %llu lines; at most %u fit the device's printf buffer", grid,
                 block, (unsigned long long)lines, HELLO_MAX_LINES);
    KJ_FORWARD(kj__enter(rt));
    const unsigned chain = log2u(block), levels = chain + 1;
    char what[64];
    snprintf(what, sizeof what, "nested-hello (grid %u, block %u)", grid, block);
    KJ_FORWARD(kj__cdp_check_depth(rt, levels, what));
    const uint64_t expected = (uint64_t)grid * chain, pending = expected ? expected : 1;

    kj__config got;
    KJ_FORWARD(get(rt, "nested_hello", NULL, KJ_TYPE_I32, 1, &got));
    kj_kernel *k = got.kernel;
    kj_origin origin = got.origin;
    kj__lane *lane;
    KJ_FORWARD(kj__cdp_lane_get(rt, NULL, 0, &lane));
    kj_devptr status = lane->buffer + KJ__CDP_STATUS;
    unsigned size = block, depth = 0;
    void *args[] = {&size, &depth, &status};
    KJ_FORWARD(kj__cdp_begin(rt, lane));
    kj_launch_config cfg = {
        .size = sizeof cfg, .grid = {grid, 1, 1}, .block = {block, 1, 1}, .pending_launches = pending};
    KJ_FORWARD(kj__kernel_launch(k, &cfg, args));
    kj_cdp_status st;
    double ms = 0;
    KJ_FORWARD(kj__cdp_finish(rt, lane, NULL, 0, what, &st, report ? &ms : NULL));
    /* The device's printf buffer is written out at a synchronization of the context. */
    KJ_FORWARD(kj_synchronize(rt));
    if (report)
        fill_report(report, "nested_hello", grid, block, levels, 1, &st, expected, pending,
                    kj__pending_launch_limit(rt), ms, origin);
    return KJ_OK;
}
