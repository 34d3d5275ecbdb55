/* kj_reduce_devices on the GPU: a runtime per device, or, on a machine of one GPU, two runtimes on
 * device 0 standing in for two devices. Every op and type at sizes 1, 31, 1000003 and 2^24+7, split
 * unevenly across the runtimes (empty parts included), fresh random inputs, the result poisoned
 * first; the result must equal the CPU reference over the whole input (within the float bound), be
 * bit for bit the host combine of each part's own kj_reduce in part order, and be the same bits when
 * the call is repeated on a stream of each runtime's own (the parts' results come back through host
 * memory their kernels write, and events on those streams). Exits 77 without a GPU. */
#include "test_util.h"

#include <math.h>

#define MAX_RUNTIMES 8

static kj_runtime *rts[MAX_RUNTIMES];
static kj_devptr inputs[MAX_RUNTIMES];
static kj_stream streams[MAX_RUNTIMES];
static size_t runtimes;
static void *host;
#define MAX_N ((1u << 24) + 7)

static int setup(void **state) {
    if (kj_test_setup_gpu(state) != 0) return -1;
    kj_test_rng = kj_test_seed();
    int devices = 0;
    if (kj_device_count(&devices) != KJ_OK) return -1;
    runtimes = devices < 2 ? 2 : devices > MAX_RUNTIMES ? MAX_RUNTIMES : (size_t)devices;
    printf("%zu runtime(s) on %d device(s)\n", runtimes, devices);
    for (size_t i = 0; i < runtimes; i++) {
        if (!(rts[i] = kj_test_runtime(kj_test_dir, devices < 2 ? 0 : (int)i, NULL))) return -1;
        if (kj_mem_alloc(rts[i], (size_t)MAX_N * 8, &inputs[i]) != KJ_OK) return -1;
        if (kj_stream_create(rts[i], &streams[i]) != KJ_OK) return -1;
    }
    return (host = malloc((size_t)MAX_N * 8)) ? 0 : -1;
}

static int teardown(void **state) {
    for (size_t i = 0; i < runtimes; i++) {
        kj_mem_free(rts[i], inputs[i]);
        kj_stream_destroy(rts[i], streams[i]);
        kj_runtime_destroy(rts[i]);
    }
    free(host);
    return kj_test_teardown(state);
}

/* Uneven parts: part i gets a share growing with i (i + 1 of 1 + 2 + ... + P), the last the rest;
 * small n leaves the first parts empty. */
static void split(size_t n, size_t *counts) {
    size_t whole = runtimes * (runtimes + 1) / 2, given = 0;
    for (size_t i = 0; i + 1 < runtimes; i++) given += counts[i] = n / whole * (i + 1);
    counts[runtimes - 1] = n - given;
}

static void check(kj_op op, kj_type t, size_t n) {
    size_t es = kj_type_size(t), rs = kj_result_size(t), counts[MAX_RUNTIMES], at = 0;
    kj_test_fill_reduction(host, t, op, n, 0, &kj_test_rng);
    split(n, counts);
    unsigned char partials[MAX_RUNTIMES * 8];
    for (size_t i = 0; i < runtimes; i++) {
        KJ_ASSERT_OK(kj_memcpy_htod(rts[i], inputs[i], (char *)host + at * es, counts[i] * es));
        KJ_ASSERT_OK(kj_reduce(rts[i], op, t, inputs[i], counts[i], partials + i * rs, NULL));
        at += counts[i];
    }
    unsigned char want[8], combined[8], got[8], again[8];
    double abs_sum;
    KJ_ASSERT_OK(kjtest_reduce_reference(op, t, host, n, want, &abs_sum));
    KJ_ASSERT_OK(kjtest_reduce_reference(op, t == KJ_TYPE_F16 || t == KJ_TYPE_BF16 ? KJ_TYPE_F32 : t, partials,
                                         runtimes, combined, NULL));
    memset(got, 0xA5, sizeof got);
    memset(again, 0x5A, sizeof again);
    kj_status s = kj_reduce_devices(rts, inputs, counts, runtimes, op, t, got, NULL);
    if (s == KJ_OK) s = kj_reduce_devices(rts, inputs, counts, runtimes, op, t, again, streams);
    if (s != KJ_OK) fail_msg("%s %s n=%zu: %s", kj_op_name(op), kj_type_name(t), n, kj_last_error());
    const char *what = kj_op_name(op), *type = kj_type_name(t);
    if (memcmp(got, combined, rs) != 0)
        fail_msg("%s %s n=%zu: %.17g is not the combine of the parts' own results in part order, %.17g", what, type, n,
                 kjtest_result_as_double(t, got), kjtest_result_as_double(t, combined));
    if (memcmp(got, again, rs) != 0)
        fail_msg("%s %s n=%zu: %.17g, then %.17g on the runtimes' own streams: not bit-identical from run to run", what,
                 type, n, kjtest_result_as_double(t, got), kjtest_result_as_double(t, again));
    double w = kjtest_result_as_double(t, want), g = kjtest_result_as_double(t, got);
    double tol = kjtest_reduce_tolerance(op, t, n, w, abs_sum, NULL);
    if (memcmp(want, got, rs) != 0 && !(fabs(g - w) <= tol))
        fail_msg("%s %s n=%zu over %zu runtimes: GPU %.17g, CPU %.17g, tolerance %.3g", what, type, n, runtimes, g, w,
                 tol);
}

static void test_every_op_type_size(void **state) {
    (void)state;
    size_t sizes[4], n_sizes = kj_test_sizes(sizes), checks = 0;
    for (int op = 0; op < KJ_OP_COUNT_; op++)
        for (int t = 0; t < KJ_TYPE_COUNT_; t++)
            for (size_t s = 0; s < n_sizes; s++, checks++) check((kj_op)op, (kj_type)t, sizes[s]);
    printf("%zu reductions over %zu runtimes checked against the CPU\n", checks, runtimes);
}

KJ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_every_op_type_size))
