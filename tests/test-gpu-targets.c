/* The built-in kernels' lower paths on real hardware: a runtime whose target is an older virtual one
 * (compute_75, the path of Turing, the T4 and the RTX 20 series: reduce without its L2 prefetch hint;
 * compute_80) builds every built-in as PTX, and the driver compiles that PTX for this device. Every
 * reduction entry, operator and type, every transpose variant and element size, and the vector add,
 * aligned and not, against the CPU: fresh random inputs, outputs poisoned first, sizes 1, 31,
 * 1000003 and 2^24 + 7. The kernels that launch kernels cannot be PTX (the device runtime is linked
 * as machine code): they are refused, saying so. Exits 77 without a GPU. */
#include "test_util.h"

#include <math.h>

#include "check_util.h"

static const char *const targets[] = {"compute_75", "compute_80"};
#define TARGET_COUNT (sizeof targets / sizeof targets[0])

/* A runtime on the device building for target (its PTX in kj_test_dir's cache, folder target). */
static kj_runtime *runtime_for(const char *target) {
    kj_test_log log;
    kj_runtime *rt = kj_test_runtime_for(kj_test_dir, KJ_DEVICE_AUTO, target, &log);
    assert_non_null(rt);
    assert_true(kj_runtime_has_device(rt));
    assert_string_equal(kj_runtime_arch(rt), target);
    return rt;
}

static void poison(kj_runtime *rt, kj_devptr d, size_t bytes) {
    KJ_ASSERT_OK(kj_memset_u8(rt, d, 0xA5, bytes));
    KJ_ASSERT_OK(kj_synchronize(rt));
}

/* Every entry found in the cache is the target's PTX: nothing was built for the device's own sm_XY. */
static void count_entry(const kj_cache_entry *e, void *user) {
    const char **want = user;
    if (strcmp(e->arch, *want) != 0) fail_msg("a cache entry for %s (%s), expected only %s", e->arch, e->kernel, *want);
}

static void expect_only_target(kj_runtime *rt, const char *target) {
    uint64_t entries = 0;
    KJ_ASSERT_OK(kj_cache_usage(rt, &entries, NULL, NULL));
    assert_true(entries > 0);
    KJ_ASSERT_OK(kj_cache_list(rt, count_entry, &target));
}

/* ---- reductions ------------------------------------------------------------------------------- */

static const char *const reduce_entries[] = {"reduce_fast",   "reduce_simple",    "reduce_convergent",
                                             "reduce_shared", "reduce_segmented", "reduce_coarsened"};
#define REDUCE_ENTRIES 6
static int single_block(int e) { return e >= 1 && e <= 3; }

static void reduce_one(kj_runtime *rt, int e, kj_op op, kj_type t, size_t n, void *host, kj_devptr in, kj_devptr out,
                       const char *target) {
    kj_test_fill_reduction(host, t, op, n, 0, &kj_test_rng);
    KJ_ASSERT_OK(kj_memcpy_htod(rt, in, host, n * kj_type_size(t)));
    unsigned char want[8], got[8];
    double abs_sum;
    KJ_ASSERT_OK(kjtest_reduce_reference(op, t, host, n, want, &abs_sum));
    poison(rt, out, 16);
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = reduce_entries[e], .report = &rep};
    kj_status s = kj_reduce_async(rt, op, t, in, n, out, &o);
    if (s == KJ_OK) s = kj_memcpy_dtoh(rt, got, out, kj_result_size(t));
    if (s != KJ_OK)
        fail_msg("%s %s %s %s n=%zu: %s", target, reduce_entries[e], kj_op_name(op), kj_type_name(t), n,
                 kj_last_error());
    double w = kjtest_result_as_double(t, want), g = kjtest_result_as_double(t, got);
    double tol = kjtest_reduce_tolerance(op, t, n, w, abs_sum, &rep);
    if (memcmp(want, got, kj_result_size(t)) != 0 && !(fabs(g - w) <= tol))
        fail_msg("%s %s %s %s n=%zu: GPU %.17g, CPU %.17g, tolerance %.3g", target, reduce_entries[e], kj_op_name(op),
                 kj_type_name(t), n, g, w, tol);
}

static void test_reduce_as_ptx(void **state) {
    (void)state;
    size_t sizes[4], nsizes = kj_test_sizes(sizes), max_n = sizes[nsizes - 1], checks = 0;
    const size_t block_sizes[] = {1, 31, 2047, 2048}; /* the single-block entries: up to 2 x 1024 */
    void *host = malloc(max_n * 8);
    assert_non_null(host);
    for (size_t a = 0; a < TARGET_COUNT; a++) {
        kj_runtime *rt = runtime_for(targets[a]);
        kj_devptr in, out;
        KJ_ASSERT_OK(kj_mem_alloc(rt, max_n * 8, &in));
        KJ_ASSERT_OK(kj_mem_alloc(rt, 16, &out));
        for (int e = 0; e < REDUCE_ENTRIES; e++)
            for (int op = 0; op < KJ_OP_COUNT_; op++)
                for (int t = 0; t < KJ_TYPE_COUNT_; t++)
                    for (size_t s = 0; s < (single_block(e) ? 4 : nsizes); s++, checks++)
                        reduce_one(rt, e, (kj_op)op, (kj_type)t, single_block(e) ? block_sizes[s] : sizes[s], host, in,
                                   out, targets[a]);
        /* the default entry is built for the target, and launched without the early start: its PTX
         * predates griddepcontrol, so it could not wait for the kernel before it */
        kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .entry = "reduce_fast"};
        kj_kernel *k;
        KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, NULL));
        kj_kernel_info info = KJ_KERNEL_INFO_INIT;
        KJ_ASSERT_OK(kj_kernel_query(k, &info));
        assert_string_equal(info.arch, targets[a]);
        assert_int_equal(info.pdl, 0);
        expect_only_target(rt, targets[a]);
        kj_mem_free(rt, in), kj_mem_free(rt, out);
        KJ_ASSERT_OK(kj_cache_clear(rt, NULL, NULL)); /* the next target's entries alone */
        kj_runtime_destroy(rt);
    }
    free(host);
    printf("%zu reductions as PTX checked against the CPU\n", checks);
}

/* ---- transposes ------------------------------------------------------------------------------- */

static void transpose_all_variants(kj_runtime *rt, kj_type type, size_t rows, size_t cols, const char *target) {
    size_t esize = kj_type_size(type), bytes = rows * cols * esize;
    void *in = malloc(bytes), *got = malloc(bytes);
    assert_non_null(in);
    assert_non_null(got);
    check_fill_bits(in, bytes, kj_test_next(&kj_test_rng));
    kj_devptr din, dout;
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &din));
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &dout));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, din, in, bytes));
    for (int v = 0; v < KJ_TRANSPOSE_VARIANT_COUNT_; v++) {
        poison(rt, dout, bytes);
        kj_transpose_options o = {.size = sizeof(kj_transpose_options), .variant = (kj_transpose_variant)v};
        KJ_ASSERT_OK(kj_transpose(rt, type, din, dout, rows, cols, &o));
        KJ_ASSERT_OK(kj_synchronize(rt));
        KJ_ASSERT_OK(kj_memcpy_dtoh(rt, got, dout, bytes));
        size_t bad_r = 0, bad_c = 0, wrong = check_transpose(in, got, rows, cols, esize, 0, 0, &bad_r, &bad_c);
        if (wrong)
            fail_msg("%s %s %s %zu x %zu: %zu elements wrong, the first in[%zu][%zu]", target,
                     kj_transpose_variant_name((kj_transpose_variant)v), kj_type_name(type), rows, cols, wrong, bad_r,
                     bad_c);
    }
    kj_mem_free(rt, din), kj_mem_free(rt, dout);
    free(in), free(got);
}

static void test_transpose_as_ptx(void **state) {
    (void)state;
    /* 1, 31, about 1000003 and about 2^24 + 7 elements, none a multiple of a tile */
    const size_t shapes[][2] = {{1, 1}, {1, 31}, {31, 1}, {997, 1003}, {4093, 4099}};
    const kj_type types[] = {KJ_TYPE_F16, KJ_TYPE_F32, KJ_TYPE_F64};
    for (size_t a = 0; a < TARGET_COUNT; a++) {
        kj_runtime *rt = runtime_for(targets[a]);
        for (size_t t = 0; t < 3; t++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                transpose_all_variants(rt, types[t], kj_test_cap_side(shapes[s][0]), kj_test_cap_side(shapes[s][1]),
                                       targets[a]);
        expect_only_target(rt, targets[a]);
        KJ_ASSERT_OK(kj_cache_clear(rt, NULL, NULL));
        kj_runtime_destroy(rt);
    }
}

/* ---- the vector add --------------------------------------------------------------------------- */

static void test_vector_add_as_ptx(void **state) {
    (void)state;
    size_t sizes[4], nsizes = kj_test_sizes(sizes);
    const kj_type types[] = {KJ_TYPE_F32, KJ_TYPE_F64};
    for (size_t a = 0; a < TARGET_COUNT; a++) {
        kj_runtime *rt = runtime_for(targets[a]);
        for (size_t t = 0; t < 2; t++)
            for (size_t s = 0; s < nsizes; s++)
                for (size_t offset = 0; offset < 2; offset++) { /* one element in: the scalar entry */
                    size_t n = sizes[s], es = kj_type_size(types[t]), bytes = n * es, off = offset * es;
                    void *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
                    assert_non_null(x);
                    assert_non_null(y);
                    assert_non_null(z);
                    kj_test_fill_reduction(x, types[t], KJ_OP_SUM, n, 0, &kj_test_rng);
                    kj_test_fill_reduction(y, types[t], KJ_OP_SUM, n, 0, &kj_test_rng);
                    kj_devptr d[3];
                    kj_test_vector_add_buffers(rt, x, y, bytes, off, d);
                    kj_vector_add_report rep = KJ_VECTOR_ADD_REPORT_INIT;
                    kj_vector_add_options o = {.size = sizeof(kj_vector_add_options), .report = &rep};
                    KJ_ASSERT_OK(kj_vector_add(rt, types[t], d[0] + off, d[1] + off, d[2] + off, n, &o));
                    KJ_ASSERT_OK(kj_synchronize(rt));
                    KJ_ASSERT_OK(kj_memcpy_dtoh(rt, z, d[2] + off, bytes));
                    assert_string_equal(rep.entry, offset ? "vector_add_scalar" : "vector_add");
                    size_t bad = 0, wrong = check_vector_add(types[t], x, y, z, n, 0, 0, &bad);
                    if (wrong)
                        fail_msg("%s %s %s n=%zu: %zu elements wrong, the first [%zu]", targets[a], rep.entry,
                                 kj_type_name(types[t]), n, wrong, bad);
                    for (int i = 0; i < 3; i++) kj_mem_free(rt, d[i]);
                    free(x), free(y), free(z);
                }
        expect_only_target(rt, targets[a]);
        KJ_ASSERT_OK(kj_cache_clear(rt, NULL, NULL));
        kj_runtime_destroy(rt);
    }
}

/* ---- kernels that launch kernels ------------------------------------------------------------- */

static void test_launching_kernels_refused(void **state) {
    (void)state;
    for (size_t a = 0; a < TARGET_COUNT; a++) {
        kj_runtime *rt = runtime_for(targets[a]);
        kj_devptr d;
        KJ_ASSERT_OK(kj_mem_alloc(rt, 4096, &d));
        int32_t sum = 0x5a5a5a5a;
        char want[96];
        snprintf(want, sizeof want, "nested cannot be built as PTX (%s): it launches kernels", targets[a]);
        assert_int_equal(kj_nested_reduce(rt, KJ_TYPE_I32, d, 1000, &sum, NULL), KJ_ERR_UNSUPPORTED);
        assert_non_null(strstr(kj_last_error(), want));
        assert_int_equal(sum, 0x5a5a5a5a);
        snprintf(want, sizeof want, "mandelbrot cannot be built as PTX (%s)", targets[a]);
        assert_int_equal(kj_mandelbrot(rt, d, 32, 32, NULL), KJ_ERR_UNSUPPORTED);
        assert_non_null(strstr(kj_last_error(), want));
        kj_mem_free(rt, d);
        kj_runtime_destroy(rt);
    }
}

static int setup(void **state) {
    if (kj_test_setup_gpu(state) != 0) return -1;
    kj_test_rng = kj_test_seed();
    return 0;
}

KJ_TEST_MAIN(setup, kj_test_teardown, cmocka_unit_test(test_reduce_as_ptx), cmocka_unit_test(test_transpose_as_ptx),
             cmocka_unit_test(test_vector_add_as_ptx), cmocka_unit_test(test_launching_kernels_refused))
