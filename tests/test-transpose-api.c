/* The transpose and vector-add API without a GPU: variant names, argument checks (made before the
 * device is needed), and the carveout table of kj_device_carveouts. */
#include "test_util.h"

static kj_runtime *compile_only(void) {
    kj_runtime *rt = kj_test_runtime(NULL, KJ_DEVICE_NONE, NULL); /* the cache in memory only */
    assert_non_null(rt);
    return rt;
}

static void test_variant_names(void **state) {
    (void)state;
    const char *names[] = {"padded", "read-rows", "read-cols", "shared", "l1-8x32", "l1-4x32", "vec"};
    const char *entries[] = {"transpose_padded",  "transpose_read_rows", "transpose_read_cols", "transpose_shared",
                             "transpose_l1_8x32", "transpose_l1_4x32",   "transpose_vec"};
    assert_int_equal(KJ_TRANSPOSE_VARIANT_COUNT_, 7);
    for (int i = 0; i < KJ_TRANSPOSE_VARIANT_COUNT_; i++) {
        kj_transpose_variant v = KJ_TRANSPOSE_VARIANT_COUNT_;
        assert_string_equal(kj_transpose_variant_name((kj_transpose_variant)i), names[i]);
        assert_string_equal(kj_transpose_variant_entry((kj_transpose_variant)i), entries[i]);
        KJ_ASSERT_OK(kj_transpose_variant_parse(names[i], &v));
        assert_int_equal(v, i);
    }
    assert_int_equal(KJ_TRANSPOSE_PADDED, 0); /* a zeroed options struct takes the fastest */
    assert_string_equal(kj_transpose_variant_name(KJ_TRANSPOSE_VARIANT_COUNT_), "?");
    assert_string_equal(kj_transpose_variant_entry((kj_transpose_variant)-1), "?");
    kj_transpose_variant v;
    assert_int_equal(kj_transpose_variant_parse("naive", &v), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "'naive': allowed are padded, read-rows"));
    assert_int_equal(kj_transpose_variant_parse(NULL, &v), KJ_ERR_USAGE);
}

/* Every entry the host side names exists in the kernel's metadata. */
static void test_entries_in_metadata(void **state) {
    (void)state;
    kj_kernel_desc *d;
    KJ_ASSERT_OK(kj_describe(NULL, "transpose", &d));
    assert_int_equal(kj_desc_entry_count(d), KJ_TRANSPOSE_VARIANT_COUNT_);
    for (int i = 0; i < KJ_TRANSPOSE_VARIANT_COUNT_; i++) {
        int found = 0;
        for (size_t e = 0; e < kj_desc_entry_count(d); e++)
            found |= strcmp(kj_desc_entry(d, e), kj_transpose_variant_entry((kj_transpose_variant)i)) == 0;
        if (!found) fail_msg("entry %s is not in transpose.cu", kj_transpose_variant_entry((kj_transpose_variant)i));
    }
    kj_desc_free(d);
    KJ_ASSERT_OK(kj_describe(NULL, "vector_add", &d));
    assert_string_equal(kj_desc_entry(d, 0), "vector_add");
    assert_string_equal(kj_desc_entry(d, 1), "vector_add_scalar");
    kj_desc_free(d);
}

static void test_argument_errors(void **state) {
    (void)state;
    kj_runtime *rt = compile_only();
    kj_devptr p = 256;
    kj_transpose_options o = KJ_TRANSPOSE_OPTIONS_INIT;
    o.variant = KJ_TRANSPOSE_SHARED;
    o.tile_dim = 64;
    assert_int_equal(kj_transpose(rt, KJ_TYPE_F32, p, p + 4096, 64, 64, &o), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "shared has a fixed tile"));
    o = (kj_transpose_options){.size = sizeof(kj_transpose_options), .variant = (kj_transpose_variant)9};
    assert_int_equal(kj_transpose(rt, KJ_TYPE_F32, p, p, 64, 64, &o), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "variant 9"));
    assert_int_equal(kj_transpose(rt, KJ_TYPE_COUNT_, p, p, 64, 64, NULL), KJ_ERR_USAGE);
    assert_int_equal(kj_transpose(rt, KJ_TYPE_F32, p, p, (size_t)1 << 31, 2, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "at most 2147483647"));
    assert_int_equal(kj_transpose(rt, KJ_TYPE_F32, 0, p, 3, 3, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "in is 0"));
    assert_int_equal(kj_transpose(NULL, KJ_TYPE_F32, p, p, 3, 3, NULL), KJ_ERR_USAGE);
    /* valid arguments reach the device check */
    assert_int_equal(kj_transpose(rt, KJ_TYPE_F64, p, p + 4096, 3, 3, NULL), KJ_ERR_NO_DEVICE);

    assert_int_equal(kj_vector_add(rt, KJ_TYPE_I32, p, p, p, 10, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "type i32: vector add takes f32 or f64"));
    assert_int_equal(kj_vector_add(rt, KJ_TYPE_F32, p, 0, p, 10, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "b 0"));
    assert_int_equal(kj_vector_add(NULL, KJ_TYPE_F32, p, p, p, 10, NULL), KJ_ERR_USAGE);
    assert_int_equal(kj_vector_add(rt, KJ_TYPE_F64, p, p, p, 10, NULL), KJ_ERR_NO_DEVICE);
    kj_runtime_destroy(rt);
}

static void expect_carveouts(int major, int minor, size_t shared_per_sm, const unsigned *want, size_t n) {
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    d.cc_major = major;
    d.cc_minor = minor;
    d.shared_per_sm = shared_per_sm;
    unsigned kib[16];
    size_t got = kj_device_carveouts(&d, kib, 16);
    if (got != n) fail_msg("sm_%d%d: %zu carveouts, expected %zu", major, minor, got, n);
    for (size_t i = 0; i < n; i++)
        if (kib[i] != want[i])
            fail_msg("sm_%d%d: carveout %zu is %u KiB, expected %u", major, minor, i, kib[i], want[i]);
}

static void test_carveouts(void **state) {
    (void)state;
    static const unsigned hopper[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
    static const unsigned a100[] = {0, 8, 16, 32, 64, 100, 132, 164};
    static const unsigned ga10x[] = {0, 8, 16, 32, 64, 100};
    static const unsigned volta[] = {0, 8, 16, 32, 64, 96};
    static const unsigned turing[] = {32, 64};
    expect_carveouts(9, 0, 233472, hopper, 10);
    expect_carveouts(8, 0, 167936, a100, 8);
    expect_carveouts(8, 6, 102400, ga10x, 6);
    expect_carveouts(8, 9, 102400, ga10x, 6);
    expect_carveouts(7, 0, 98304, volta, 6);
    expect_carveouts(7, 5, 65536, turing, 2);
    /* an architecture not in the table: the usual steps up to its shared memory per multiprocessor */
    expect_carveouts(42, 0, 164 * 1024, a100, 8);
    /* the count is returned even when fewer values fit, and NULL output is allowed */
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    d.cc_major = 9;
    unsigned two[2];
    assert_int_equal(kj_device_carveouts(&d, two, 2), 10);
    assert_int_equal(two[1], 8);
    assert_int_equal(kj_device_carveouts(&d, NULL, 0), 10);
    assert_int_equal(kj_device_carveouts(NULL, two, 2), 0);
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_variant_names), cmocka_unit_test(test_entries_in_metadata),
             cmocka_unit_test(test_argument_errors), cmocka_unit_test(test_carveouts))
