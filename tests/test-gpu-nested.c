/* The gpu suite's check of kernels_src/nested.cu: every recursive reduction against the CPU at the
 * awkward sizes, block sizes and types (fresh random input, result poisoned), the device-side launch
 * counts (16384, 16384 and 8 for 2^20 elements in blocks of 512), the hello tree, and a forced
 * pending-launch overflow, which must be an error and never a sum. Exits 77 (skipped) without a GPU. */
#include "test_util.h"

#include <math.h>

/* n fresh random values of the type, on the host and on the device. */
static void *fresh_input(kj_runtime *rt, kj_type type, size_t n, uint64_t *seed, kj_devptr *dev) {
    size_t es = kj_type_size(type), bytes = n * es;
    unsigned char *host = malloc(bytes ? bytes : 1);
    assert_non_null(host);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kj_test_next(seed);
        double u = (double)(r >> 11) / 9007199254740992.0;
        switch (type) {
        case KJ_TYPE_I32: ((int32_t *)host)[i] = (int32_t)(uint32_t)r; break;
        case KJ_TYPE_U32: ((uint32_t *)host)[i] = (uint32_t)(r >> 32); break;
        case KJ_TYPE_I64: ((int64_t *)host)[i] = (int64_t)r; break;
        case KJ_TYPE_F32: ((float *)host)[i] = (float)(u * 2 - 1); break;
        case KJ_TYPE_F64: ((double *)host)[i] = u * 2 - 1; break;
        default: fail_msg("type %s not used here", kj_type_name(type));
        }
    }
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes ? bytes : 1, dev));
    if (bytes) KJ_ASSERT_OK(kj_memcpy_htod(rt, *dev, host, bytes));
    return host;
}

static unsigned log2u(unsigned v) {
    unsigned k = 0;
    while (v > 1) {
        v >>= 1;
        k++;
    }
    return k;
}

/* One reduction checked against the CPU; returns the device-side launches counted. */
static uint64_t check_sum(kj_runtime *rt, kj_type type, size_t n, kj_nested_variant variant, unsigned block,
                          uint64_t *seed) {
    kj_devptr dev;
    void *host = fresh_input(rt, type, n, seed, &dev);
    unsigned char want[8] = {0}, got[8];
    double abs_sum = 0;
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, type, host, n, want, &abs_sum));
    memset(got, 0xA5, sizeof got);
    kj_dp_report r = KJ_DP_REPORT_INIT;
    kj_nested_options o = {sizeof(kj_nested_options), variant, block, 1, 0, NULL, &r};
    kj_status s = kj_nested_reduce(rt, type, dev, n, got, &o);
    if (s != KJ_OK)
        fail_msg("%s %s n=%zu block %u: %s: %s", kj_nested_variant_name(variant), kj_type_name(type), n, block,
                 kj_status_name(s), kj_last_error());
    size_t rs = kj_result_size(type);
    if (type == KJ_TYPE_F32 || type == KJ_TYPE_F64) {
        double w = kjtest_result_as_double(type, want), g = kjtest_result_as_double(type, got);
        double tol = kjtest_reduce_tolerance(KJ_OP_SUM, type, n, w, abs_sum, NULL);
        if (!(fabs(g - w) <= tol))
            fail_msg("%s %s n=%zu block %u: GPU %.17g, CPU %.17g (tolerance %.3g)", kj_nested_variant_name(variant),
                     kj_type_name(type), n, block, g, w, tol);
    } else if (memcmp(want, got, rs) != 0) {
        fail_msg("%s %s n=%zu block %u: GPU %.17g, CPU %.17g", kj_nested_variant_name(variant), kj_type_name(type), n,
                 block, kjtest_result_as_double(type, got), kjtest_result_as_double(type, want));
    }
    /* the launches the variant makes, counted on the device */
    uint64_t grid = (n + block - 1) / block, chain = log2u(block) - 1;
    uint64_t expected = n == 0 ? 0 : variant == KJ_NESTED_REDUCE2 ? chain : grid * chain;
    assert_true(r.counted);
    assert_int_equal(r.expected_launches, expected);
    if (r.device_launches != expected)
        fail_msg("%s n=%zu block %u: %llu device-side launches, expected %llu", kj_nested_variant_name(variant), n,
                 block, (unsigned long long)r.device_launches, (unsigned long long)expected);
    assert_int_equal(r.levels, chain + 1);
    assert_true(r.pending_limit >= r.pending_launches);
    assert_true(r.gpu_ms >= 0);
    KJ_ASSERT_OK(kj_mem_free(rt, dev));
    free(host);
    return r.device_launches;
}

/* The numbers: 2^20 elements, 2048 blocks of 512. */
static void test_book_launch_counts(void **state) {
    (void)state;
    if (kj_test_skip_if_small("the launch counts at 2^20 elements (every variant runs in the next test)")) return;
    kj_runtime *rt = kj_test_gpu_runtime(NULL);
    uint64_t seed = kj_test_seed();
    assert_int_equal(check_sum(rt, KJ_TYPE_I32, 1u << 20, KJ_NESTED_SYNC, 512, &seed), 16384);
    assert_int_equal(check_sum(rt, KJ_TYPE_I32, 1u << 20, KJ_NESTED_NOSYNC, 512, &seed), 16384);
    assert_int_equal(check_sum(rt, KJ_TYPE_I32, 1u << 20, KJ_NESTED_REDUCE2, 512, &seed), 8);
    kj_runtime_destroy(rt);
}

static void test_every_variant_every_size(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_gpu_runtime(NULL);
    uint64_t seed = kj_test_seed();
    const size_t sizes[] = {0, 1, 31, 1000003, (1u << 22) + 7};
    for (int v = 0; v < KJ_NESTED_VARIANT_COUNT_; v++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            if (!i || kj_test_cap(sizes[i]) != kj_test_cap(sizes[i - 1]))
                check_sum(rt, KJ_TYPE_I32, kj_test_cap(sizes[i]), (kj_nested_variant)v, 512, &seed);
        /* block sizes: 2 launches nothing, 1024 nests deepest */
        const unsigned blocks[] = {2, 4, 64, 1024};
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
            check_sum(rt, KJ_TYPE_I32, 100003, (kj_nested_variant)v, blocks[b], &seed);
        const kj_type types[] = {KJ_TYPE_U32, KJ_TYPE_I64, KJ_TYPE_F32, KJ_TYPE_F64};
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            check_sum(rt, types[t], kj_test_cap(1000003), (kj_nested_variant)v, 256, &seed);
    }
    kj_runtime_destroy(rt);
}

static void test_usage_errors(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_gpu_runtime(NULL);
    kj_devptr dev;
    KJ_ASSERT_OK(kj_mem_alloc(rt, 1024, &dev));
    int32_t sum;
    kj_nested_options o = {sizeof(kj_nested_options), KJ_NESTED_SYNC, 0, 0, 0, NULL, NULL};
    assert_int_equal(kj_nested_reduce(rt, KJ_TYPE_F16, dev, 16, &sum, &o), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "f16"));
    const unsigned bad_blocks[] = {1, 3, 2048};
    for (size_t i = 0; i < 3; i++) {
        o.block_size = bad_blocks[i];
        assert_int_equal(kj_nested_reduce(rt, KJ_TYPE_I32, dev, 16, &sum, &o), KJ_ERR_USAGE);
        assert_non_null(strstr(kj_last_error(), "power of two from 2 to 1024"));
    }
    o.block_size = 0;
    o.variant = (kj_nested_variant)9;
    assert_int_equal(kj_nested_reduce(rt, KJ_TYPE_I32, dev, 16, &sum, &o), KJ_ERR_USAGE);
    o.variant = KJ_NESTED_SYNC;
    assert_int_equal(kj_nested_reduce(rt, KJ_TYPE_I32, dev, 16, NULL, &o), KJ_ERR_USAGE);
    kj_nested_variant v;
    assert_int_equal(kj_nested_variant_parse("fast", &v), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "sync, nosync, reduce2"));
    KJ_ASSERT_OK(kj_nested_variant_parse("reduce2", &v));
    assert_int_equal(v, KJ_NESTED_REDUCE2);
    assert_int_equal(kj_nested_hello(rt, 1, 3, NULL), KJ_ERR_USAGE);
    assert_int_equal(kj_nested_hello(rt, 0, 8, NULL), KJ_ERR_USAGE);
    assert_int_equal(kj_nested_hello(rt, 8, 1024, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "8192"));
    KJ_ASSERT_OK(kj_mem_free(rt, dev));
    kj_runtime_destroy(rt);
}

static void test_hello_tree(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_gpu_runtime(NULL);
    kj_dp_report r = KJ_DP_REPORT_INIT;
    fflush(stdout);
    KJ_ASSERT_OK(kj_nested_hello(rt, 2, 8, &r));
    fflush(stdout);
    assert_int_equal(r.device_launches, 6); /* 8 -> 4 -> 2 -> 1 in each of the 2 blocks */
    assert_int_equal(r.expected_launches, 6);
    assert_int_equal(r.levels, 4);
    KJ_ASSERT_OK(kj_nested_hello(rt, 1, 1, &r)); /* one thread: nothing to launch */
    assert_int_equal(r.device_launches, 0);
    kj_runtime_destroy(rt);
}

/* More launches pending at once than the limit: the kernels see the failures, the call reports them
 * and writes no sum; with the limit the tree needs, the same reduction is right. Last, so that a
 * device that handled the overflow badly cannot spoil the other tests. */
static void test_pending_overflow_is_an_error(void **state) {
    (void)state;
    /* Overflowing the launch pool on purpose makes the device runtime store the refused launches'
     * parameters outside any allocation, which memcheck rightly reports; the sanitizer pass (small
     * mode) leaves this case to the normal gpu suite. */
    if (kj_test_skip_if_small("the forced pending-launch overflow (the device runtime then writes the refused "
                              "launches' parameters outside its pool, which memcheck reports)"))
        return;
    kj_runtime *rt = kj_test_gpu_runtime(NULL);
    uint64_t seed = kj_test_seed();
    /* The context's limit now (the limit is only raised, so asking for 1 keeps it), learnt from a
     * tree of 250 launches, which fits the default limit (2048) and anything above. Blocks of 4: one
     * launch per block, so that the tree below needs no more slots than it has blocks. */
    kj_dp_report r = KJ_DP_REPORT_INIT;
    kj_nested_options o = {sizeof(kj_nested_options), KJ_NESTED_NOSYNC, 4, 1, 1, NULL, &r};
    kj_devptr dev;
    int32_t sum, want;
    int32_t *host = fresh_input(rt, KJ_TYPE_I32, 1000, &seed, &dev);
    KJ_ASSERT_OK(kj_nested_reduce(rt, KJ_TYPE_I32, dev, 1000, &sum, &o));
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, host, 1000, &want, NULL));
    assert_int_equal(sum, want);
    uint64_t limit = r.pending_limit;
    assert_true(limit >= 1);
    kj_mem_free(rt, dev);
    free(host);

    /* nosync: every block of the top grid tail-launches its child, and none of those launches can
     * start before the whole grid has completed, so limit + 4096 blocks overflow the buffer. */
    size_t n = (size_t)(limit + 4096) * 4;
    host = fresh_input(rt, KJ_TYPE_I32, n, &seed, &dev);
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, host, n, &want, NULL));
    sum = 0x5a5a5a5a;
    kj_status s = kj_nested_reduce(rt, KJ_TYPE_I32, dev, n, &sum, &o);
    if (s != KJ_ERR_DEVICE_LAUNCH)
        fail_msg("%llu blocks tail-launching with a pending-launch limit of %llu: %s (%s), expected "
                 "KJ_ERR_DEVICE_LAUNCH",
                 (unsigned long long)(limit + 4096), (unsigned long long)limit, kj_status_name(s), kj_last_error());
    printf("reported: %s\n", kj_last_error());
    assert_non_null(strstr(kj_last_error(), "failed"));
    assert_non_null(strstr(kj_last_error(), "pending-launch limit"));
    assert_int_equal(sum, 0x5a5a5a5a); /* no result */

    /* the same input with the limit the tree needs (the data was overwritten: upload it again) */
    KJ_ASSERT_OK(kj_memcpy_htod(rt, dev, host, n * sizeof(int32_t)));
    o.pending_launches = 0;
    KJ_ASSERT_OK(kj_nested_reduce(rt, KJ_TYPE_I32, dev, n, &sum, &o));
    assert_int_equal(sum, want);
    assert_int_equal(r.device_launches, r.expected_launches);
    assert_true(r.pending_limit >= r.expected_launches);
    kj_mem_free(rt, dev);
    free(host);
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(kj_test_setup_gpu, kj_test_teardown, cmocka_unit_test(test_book_launch_counts),
             cmocka_unit_test(test_every_variant_every_size), cmocka_unit_test(test_usage_errors),
             cmocka_unit_test(test_hello_tree), cmocka_unit_test(test_pending_overflow_is_an_error))
