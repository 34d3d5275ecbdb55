/* The gpu suite's check of the pipeline: compile, load and launch on the device; memory, disk and
 * compile origins; launch limits. Exits 77 (skipped) without a GPU. */
#include "test_util.h"

#include <math.h>

static void test_origins(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    kj_define d[] = {{"OP", "sum"}, {"T", "i32"}};
    kj_request req = {
        .size = sizeof(kj_request), .kernel = "reduce", .entry = "reduce_coarsened", .defines = d, .define_count = 2};
    kj_kernel *k1, *k2, *k3;
    kj_origin o;
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k1, &o));
    assert_int_equal(o, KJ_ORIGIN_COMPILED);
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k2, &o));
    assert_int_equal(o, KJ_ORIGIN_MEMORY);
    assert_ptr_equal(k1, k2);
    /* another entry of the same file: compiled alone (trim.h), a module and a key of its own */
    kj_request init = req;
    init.entry = "reduce_init";
    KJ_ASSERT_OK(kj_kernel_get(rt, &init, &k3, &o));
    assert_int_equal(o, KJ_ORIGIN_COMPILED);
    assert_ptr_not_equal(k3, k1);
    kj_kernel_info init_info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k3, &init_info));
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k1, &info));
    assert_string_equal(info.entry, "reduce_coarsened");
    assert_non_null(strstr(info.defines, "T=i32"));
    assert_true(info.num_regs > 0);
    assert_true(info.max_threads_per_block >= 256);
    assert_string_not_equal(info.key, init_info.key);
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.compiles, 2);
    assert_int_equal(st.memory_hits, 1);
    kj_runtime_destroy(rt);
    /* a new runtime (as a new process would) finds it on disk */
    rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, &log);
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k1, &o));
    assert_int_equal(o, KJ_ORIGIN_DISK);
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.disk_hits, 1);
    kj_runtime_destroy(rt);
}

/* The coarsened reduction against the CPU at the awkward sizes, fresh input each run. */
static void test_launch_and_check(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    uint64_t seed = kj_test_seed();
    size_t sizes[4], count = kj_test_sizes(sizes);
    for (size_t si = 0; si < count; si++) {
        size_t n = sizes[si];
        int32_t *host = kj_test_random_i32(n, &seed);
        kj_devptr in;
        KJ_ASSERT_OK(kj_mem_alloc(rt, n * 4, &in));
        KJ_ASSERT_OK(kj_memcpy_htod(rt, in, host, n * 4));
        int32_t expected, got = (int32_t)0xdeadbeef;
        KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, host, n, &expected, NULL));
        kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = "reduce_coarsened"};
        KJ_ASSERT_OK(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_I32, in, n, &got, &o));
        if (got != expected) fail_msg("n=%zu: GPU %d, CPU %d", n, got, expected);
        KJ_ASSERT_OK(kj_mem_free(rt, in));
        free(host);
    }
    kj_runtime_destroy(rt);
}

static void test_launch_limits(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    kj_device_info dev = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(rt, &dev));
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .entry = "reduce_init"};
    kj_kernel *k;
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, NULL));
    kj_devptr out;
    KJ_ASSERT_OK(kj_mem_alloc(rt, 16, &out));
    void *args[] = {&out};
    kj_launch_config big_block = {sizeof(kj_launch_config), {1, 1, 1}, {2048, 1, 1}, 0, NULL, 0};
    assert_int_equal(kj_kernel_launch(k, &big_block, args), KJ_ERR_LIMIT);
    assert_non_null(strstr(kj_last_error(), "2048"));
    kj_launch_config big_grid_y = {sizeof(kj_launch_config), {1, 100000, 1}, {1, 1, 1}, 0, NULL, 0};
    assert_int_equal(kj_kernel_launch(k, &big_grid_y, args), KJ_ERR_LIMIT);
    kj_launch_config too_much_shared = {
        sizeof(kj_launch_config), {1, 1, 1}, {1, 1, 1}, (unsigned)dev.shared_per_block_optin + 1, NULL, 0};
    assert_int_equal(kj_kernel_launch(k, &too_much_shared, args), KJ_ERR_LIMIT);
    char optin[32];
    snprintf(optin, sizeof optin, "%zu", dev.shared_per_block_optin);
    assert_non_null(strstr(kj_last_error(), optin));
    /* opting in above 48 KiB works */
    kj_launch_config opted = {sizeof(kj_launch_config), {1, 1, 1}, {1, 1, 1}, 100 * 1024, NULL, 0};
    KJ_ASSERT_OK(kj_kernel_launch(k, &opted, args));
    KJ_ASSERT_OK(kj_synchronize(rt));
    KJ_ASSERT_OK(kj_mem_free(rt, out));
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(kj_test_setup_gpu, kj_test_teardown, cmocka_unit_test(test_origins),
             cmocka_unit_test(test_launch_and_check), cmocka_unit_test(test_launch_limits))
