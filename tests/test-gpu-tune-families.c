/* The gpu suite for the transpose and vector-add tuning targets: kj_tune picks a valid configuration
 * that computes the right result and stores it; kj_transpose and kj_vector_add then report
 * config_from KJ_CONFIG_TUNED with those values (in this runtime, and in a new one that reads the file) and
 * still compute right; explicit options win; other element types, entries and sizes far from the
 * tuned bucket keep the defaults. Also: the vector add's scalar entry (pointers one element into
 * their allocations), a budgeted f16 transpose of a non-square n, a deliberately wrong kernel (from
 * the search path) that the tuner must mark wrong, and the usage errors. Exits 77 without a GPU. */
#include "test_util.h"

static unsigned value_in(const char *label, const char *name) {
    const char *p = strstr(label, name);
    return p ? (unsigned)strtoul(p + strlen(name) + 1, NULL, 10) : 0;
}

/* kj_tune on the fixture's runtime; says what won. */
static kj_tune_result *tune(kj_tune_options o) {
    kj_tune_result *r;
    KJ_ASSERT_OK(kj_tune(kj_test_rt, &o, &r));
    printf("%s tuned in %.2f s: %s, %.1f GB/s, again %.1f GB/s\n", o.kernel, r->total_ms / 1e3,
           kj_tune_result_variant(r, r->best)[0].label, r->best_gbps, r->remeasured_gbps);
    return r;
}

/* Sizes: 2^20 elements, or 2^16 in small mode (compute-sanitizer). */
static size_t problem_n(void) { return kj_test_small() ? 1u << 16 : 1u << 20; }
static unsigned problem_bucket(void) { return kj_test_small() ? 16 : 20; }

/* Transposes a rows x cols matrix of random bytes with options o on r and checks every element. */
static void check_transpose(kj_runtime *r, kj_type type, size_t rows, size_t cols, const kj_transpose_options *o) {
    size_t es = kj_type_size(type), bytes = rows * cols * es;
    unsigned char *in = malloc(bytes), *out = malloc(bytes);
    assert_non_null(in);
    assert_non_null(out);
    for (size_t i = 0; i < bytes; i++) in[i] = (unsigned char)(kj_test_next(&kj_test_rng) >> 56);
    kj_devptr din, dout;
    KJ_ASSERT_OK(kj_mem_alloc(r, bytes, &din));
    KJ_ASSERT_OK(kj_mem_alloc(r, bytes, &dout));
    KJ_ASSERT_OK(kj_memcpy_htod(r, din, in, bytes));
    KJ_ASSERT_OK(kj_memset_u8(r, dout, 0xA5, bytes));
    KJ_ASSERT_OK(kj_synchronize(r));
    KJ_ASSERT_OK(kj_transpose(r, type, din, dout, rows, cols, o));
    KJ_ASSERT_OK(kj_synchronize(r));
    KJ_ASSERT_OK(kj_memcpy_dtoh(r, out, dout, bytes));
    size_t wrong = 0, bad_r = 0, bad_c = 0;
    for (size_t row = 0; row < rows; row++)
        for (size_t c = 0; c < cols; c++)
            if (memcmp(out + (c * rows + row) * es, in + (row * cols + c) * es, es) != 0 && wrong++ == 0) {
                bad_r = row;
                bad_c = c;
            }
    if (wrong)
        fail_msg("%zu x %zu %s: %zu elements wrong, the first input row %zu, column %zu", rows, cols,
                 kj_type_name(type), wrong, bad_r, bad_c);
    KJ_ASSERT_OK(kj_mem_free(r, din));
    KJ_ASSERT_OK(kj_mem_free(r, dout));
    free(in);
    free(out);
}

/* c = a + b over n random elements, the arrays `offset` elements into their allocations; every sum
 * must equal the CPU's bit for bit. */
static void check_vector_add(kj_runtime *r, kj_type type, size_t n, size_t offset, const kj_vector_add_options *o) {
    size_t es = kj_type_size(type), bytes = n * es, off = offset * es;
    unsigned char *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    for (size_t i = 0; i < n; i++) {
        double u = kj_test_uniform(&kj_test_rng) * 2 - 1;
        double v = kj_test_uniform(&kj_test_rng) * 200 - 100;
        if (type == KJ_TYPE_F64) {
            ((double *)a)[i] = u;
            ((double *)b)[i] = v;
        } else {
            ((float *)a)[i] = (float)u;
            ((float *)b)[i] = (float)v;
        }
    }
    kj_devptr d[3];
    kj_test_vector_add_buffers(r, a, b, bytes, off, d);
    KJ_ASSERT_OK(kj_vector_add(r, type, d[0] + off, d[1] + off, d[2] + off, n, o));
    KJ_ASSERT_OK(kj_synchronize(r));
    KJ_ASSERT_OK(kj_memcpy_dtoh(r, c, d[2] + off, bytes));
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        int same;
        if (type == KJ_TYPE_F64) {
            double e = ((const double *)a)[i] + ((const double *)b)[i];
            same = memcmp(&e, c + i * 8, 8) == 0;
        } else {
            float e = ((const float *)a)[i] + ((const float *)b)[i];
            same = memcmp(&e, c + i * 4, 4) == 0;
        }
        if (!same && wrong++ == 0) first = i;
    }
    if (wrong) fail_msg("n = %zu %s: %zu sums wrong, the first at %zu", n, kj_type_name(type), wrong, first);
    for (int i = 0; i < 3; i++) KJ_ASSERT_OK(kj_mem_free(r, d[i]));
    free(a);
    free(b);
    free(c);
}

static void test_transpose_tuned(void **state) {
    (void)state;
    const size_t n = problem_n();
    kj_tune_result *r = tune(kj_test_tune_options("transpose", NULL, 0, n));
    /* TILE_DIM x BLOCK_ROWS x GROUP, the last a launch parameter: 20 binaries */
    kj_test_assert_tuned(r, "transpose", "transpose_padded", "ELEM_BYTES=4", problem_bucket(), 24 * 5);
    assert_int_equal(kj_space_dim_count(r->space), 3);
    assert_string_equal(r->strategy, "exhaustive");
    assert_true(r->bytes_per_run == 2.0 * (double)n * 4);
    assert_true(r->skipped >= 4 * 5);   /* the require lines: 16x32, 64x32, 128x16, 128x32 */
    assert_true(r->measured >= 16 * 5); /* only a device limit (shared memory, registers) may skip more */
    assert_true(r->compiled <= 20);
    assert_true(r->stored);
    const kj_tune_variant *best = kj_tune_result_variant(r, r->best);
    assert_int_equal(best->status, KJ_VARIANT_MEASURED);
    unsigned tile = value_in(best->label, "TILE_DIM"), rows = value_in(best->label, "BLOCK_ROWS");
    assert_true(tile == 16 || tile == 32 || tile == 64 || tile == 128);
    assert_true(rows >= 1 && tile % rows == 0 && tile * rows <= 1024);
    for (size_t i = 0; i < r->variant_count; i++)
        if (kj_tune_result_variant(r, i)[0].status == KJ_VARIANT_SKIPPED)
            assert_true(strlen(kj_tune_result_variant(r, i)[0].note) > 0);

    kj_tuned t = KJ_TUNED_INIT;
    KJ_ASSERT_OK(kj_tune_db_lookup(kj_test_rt, "transpose", "transpose_padded", "ELEM_BYTES=4", n, &t));
    assert_string_equal(t.values, best->label);

    /* kj_transpose takes it for any rows x cols of the bucket, and transposes right */
    const size_t side = kj_test_small() ? 256 : 1024, mr = side * 1000 / 1024, mc = side * 1100 / 1024;
    kj_transpose_report rep = KJ_TRANSPOSE_REPORT_INIT;
    kj_transpose_options to = {.size = sizeof(kj_transpose_options), .report = &rep};
    check_transpose(kj_test_rt, KJ_TYPE_F32, mr, mc, &to);
    assert_int_equal(rep.config_from, KJ_CONFIG_TUNED);
    assert_string_equal(rep.entry, "transpose_padded");
    assert_int_equal(rep.tile[0], tile);
    assert_int_equal(rep.tile[1], tile);
    assert_int_equal(rep.block[0], tile);
    assert_int_equal(rep.block[1], rows);
    assert_int_equal(rep.shared_bytes, tile * (tile + 1) * 4);
    /* explicit values win; the one not given keeps its default (the device's: 8 or 4 rows) */
    to = (kj_transpose_options){.size = sizeof(kj_transpose_options), .tile_dim = 16, .report = &rep};
    check_transpose(kj_test_rt, KJ_TYPE_F32, mr, mc, &to);
    assert_int_equal(rep.config_from, KJ_CONFIG_EXPLICIT);
    assert_int_equal(rep.tile[0], 16);
    assert_true(rep.block[1] == 8 || rep.block[1] == 4);
    unsigned default_rows = rep.block[1];
    to = (kj_transpose_options){.size = sizeof(kj_transpose_options), .block_rows = 4, .report = &rep};
    check_transpose(kj_test_rt, KJ_TYPE_F32, mr, mc, &to);
    assert_int_equal(rep.config_from, KJ_CONFIG_EXPLICIT);
    assert_int_equal(rep.tile[0], 64); /* the default tile */
    assert_int_equal(rep.block[1], 4);
    /* a fixed variant, another element size, a size two buckets away: the defaults */
    to = (kj_transpose_options){.size = sizeof(kj_transpose_options), .variant = KJ_TRANSPOSE_VEC, .report = &rep};
    check_transpose(kj_test_rt, KJ_TYPE_F32, mr, mc, &to);
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    to = (kj_transpose_options){.size = sizeof(kj_transpose_options), .report = &rep};
    check_transpose(kj_test_rt, KJ_TYPE_F64, mr, mc, &to);
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(rep.tile[0], 64);
    check_transpose(kj_test_rt, KJ_TYPE_F32, side / 4, side / 4, &to);
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(rep.block[1], default_rows);

    /* a new runtime reads the file once and uses the entry too */
    kj_test_log log_again;
    kj_runtime *rt2 = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, &log_again);
    assert_non_null(rt2);
    check_transpose(rt2, KJ_TYPE_U32, mr, mc, &to);
    assert_int_equal(rep.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(rep.tile[0], tile);
    assert_int_equal(rep.block[1], rows);
    assert_int_equal(log_again.warnings, 0);
    kj_runtime_destroy(rt2);
    kj_tune_result_free(r);
}

static void test_vector_add_tuned(void **state) {
    (void)state;
    const size_t n = problem_n();
    kj_tune_result *r = tune(kj_test_tune_options("vector_add", NULL, 0, n));
    /* BLOCK_SIZE x UNROLL x WAVES (a launch parameter: 20 binaries) */
    kj_test_assert_tuned(r, "vector_add", "vector_add", "T=f32", problem_bucket(), 20 * 11);
    assert_true(r->bytes_per_run == 3.0 * (double)n * 4);
    assert_true(r->measured >= 16 * 11);
    assert_true(r->compiled <= 20);
    assert_true(r->stored);
    const kj_tune_variant *best = kj_tune_result_variant(r, r->best);
    unsigned block = value_in(best->label, "BLOCK_SIZE"), unroll = value_in(best->label, "UNROLL");
    assert_true(block >= 64 && block <= 1024 && (block & (block - 1)) == 0);
    assert_true(unroll == 1 || unroll == 2 || unroll == 4 || unroll == 8);
    kj_tuned t = KJ_TUNED_INIT;
    KJ_ASSERT_OK(kj_tune_db_lookup(kj_test_rt, "vector_add", "vector_add", "T=f32", n, &t));
    assert_string_equal(t.values, best->label);

    const size_t m = n + n / 8;
    kj_vector_add_report rep = KJ_VECTOR_ADD_REPORT_INIT;
    kj_vector_add_options vo = {.size = sizeof(kj_vector_add_options), .report = &rep};
    check_vector_add(kj_test_rt, KJ_TYPE_F32, m, 0, &vo);
    assert_int_equal(rep.config_from, KJ_CONFIG_TUNED);
    assert_string_equal(rep.entry, "vector_add");
    assert_int_equal(rep.block_size, block);
    assert_int_equal(rep.unroll, unroll);
    vo = (kj_vector_add_options){.size = sizeof(kj_vector_add_options), .unroll = 2, .report = &rep};
    check_vector_add(kj_test_rt, KJ_TYPE_F32, m, 0, &vo);
    assert_int_equal(rep.config_from, KJ_CONFIG_EXPLICIT);
    assert_int_equal(rep.block_size, 256);
    assert_int_equal(rep.unroll, 2);
    /* the scalar entry (not tuned yet), f64, a size two buckets away: the defaults */
    vo = (kj_vector_add_options){.size = sizeof(kj_vector_add_options), .report = &rep};
    check_vector_add(kj_test_rt, KJ_TYPE_F32, m, 1, &vo);
    assert_string_equal(rep.entry, "vector_add_scalar");
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    check_vector_add(kj_test_rt, KJ_TYPE_F64, m, 0, &vo);
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    check_vector_add(kj_test_rt, KJ_TYPE_F32, n / 4, 0, &vo);
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(rep.block_size, 256);
    assert_int_equal(rep.unroll, 4);
    kj_tune_result_free(r);
}

/* The scalar entry is tuned on arrays one element into their allocations, and kj_vector_add uses the
 * result for such pointers. */
static void test_vector_add_scalar(void **state) {
    (void)state;
    const size_t n = 100003;
    kj_define f64[] = {{"T", "f64"}};
    kj_tune_options o = kj_test_tune_options("vector_add", f64, 1, n);
    o.entry = "vector_add_scalar";
    kj_tune_result *r = tune(o);
    assert_string_equal(r->entry, "vector_add_scalar");
    assert_string_equal(r->fixed, "T=f64");
    assert_int_equal(r->wrong, 0);
    assert_int_equal(r->failed, 0);
    assert_true(r->stored);
    unsigned block = value_in(kj_tune_result_variant(r, r->best)[0].label, "BLOCK_SIZE");
    unsigned unroll = value_in(kj_tune_result_variant(r, r->best)[0].label, "UNROLL");
    kj_tune_result_free(r);
    kj_vector_add_report rep = KJ_VECTOR_ADD_REPORT_INIT;
    kj_vector_add_options vo = {.size = sizeof(kj_vector_add_options), .report = &rep};
    check_vector_add(kj_test_rt, KJ_TYPE_F64, n, 1, &vo);
    assert_string_equal(rep.entry, "vector_add_scalar");
    assert_int_equal(rep.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(rep.block_size, block);
    assert_int_equal(rep.unroll, unroll);
    check_vector_add(kj_test_rt, KJ_TYPE_F64, n, 0, &vo); /* aligned: the vector entry, not tuned for f64 */
    assert_string_equal(rep.entry, "vector_add");
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
}

/* f16 (ELEM_BYTES=2) on 999 x 1001 with a budget: greedy from the defaults, nothing stored. */
static void test_transpose_budget(void **state) {
    (void)state;
    kj_define two[] = {{"ELEM_BYTES", "2"}};
    kj_tune_options o = kj_test_tune_options("transpose", two, 1, kj_test_small() ? 99 * 101 : 999 * 1001);
    o.budget = 6;
    o.dry_run = 1;
    kj_tune_result *r = tune(o);
    assert_string_equal(r->fixed, "ELEM_BYTES=2");
    assert_non_null(strstr(r->strategy, "greedy"));
    assert_true(r->measured >= 1 && r->measured + r->failed + r->wrong <= 6);
    assert_int_equal(r->wrong, 0);
    assert_false(r->stored);
    size_t start = r->variant_count;
    for (size_t i = 0; i < r->variant_count; i++)
        if (strcmp(kj_tune_result_variant(r, i)[0].label, "TILE_DIM=64 BLOCK_ROWS=8 GROUP=1") == 0) start = i;
    assert_true(start < r->variant_count);
    assert_int_equal(kj_tune_result_variant(r, start)[0].status, KJ_VARIANT_MEASURED);
    kj_tuned t = KJ_TUNED_INIT;
    assert_int_equal(kj_tune_db_lookup(kj_test_rt, "transpose", "transpose_padded", "ELEM_BYTES=2", o.n, &t),
                     KJ_ERR_NOT_FOUND);
    kj_tune_result_free(r);
}

/* A vector add that leaves the last element unwritten when UNROLL is 2, put on the search path in
 * place of the built-in: those variants run after a correct one (UNROLL=1) wrote the same outputs,
 * so only the poisoned outputs show them wrong. They must never win. */
static const char wrong_src[] =
    "//@kernjit entry    vector_add vector_add_scalar\n"
    "//@kernjit param    T f32 f64 = f32\n"
    "//@kernjit tune     BLOCK_SIZE pow2 64..1024 = 256\n"
    "//@kernjit tune     UNROLL 1 2 4 8 = 4\n"
    "typedef unsigned long long u64;\n"
    "__device__ void add(const float *a, const float *b, float *c, u64 n) {\n"
    "    const u64 end = UNROLL == 2 && n ? n - 1 : n;\n"
    "    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += (u64)gridDim.x * blockDim.x)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(BLOCK_SIZE) vector_add(const float *a, const float *b, float *c,\n"
    "                                                                    u64 n) { add(a, b, c, n); }\n"
    "extern \"C\" __global__ void __launch_bounds__(BLOCK_SIZE) vector_add_scalar(const float *a, const float *b,\n"
    "                                                                           float *c, u64 n) { add(a, b, c, n); "
    "}\n";

static void test_wrong_variants_never_win(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    char path[PATH_MAX], cache[PATH_MAX];
    snprintf(path, sizeof path, "%s/vector_add.cu", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    kj_test_write(path, wrong_src, strlen(wrong_src));
    kj_runtime_options ro = KJ_RUNTIME_OPTIONS_INIT;
    ro.cache_dir = cache;
    ro.search_path = dir;
    kj_runtime *r2 = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&ro, &r2));
    kj_tune_options o = kj_test_tune_options("vector_add", NULL, 0, 4099);
    o.dry_run = 1;
    kj_tune_result *r;
    KJ_ASSERT_OK(kj_tune(r2, &o, &r));
    assert_int_equal(r->variant_count, 20);
    assert_int_equal(r->wrong, 5);
    assert_int_equal(r->failed, 0);
    assert_int_equal(r->measured + r->skipped, 15);
    for (size_t i = 0; i < r->variant_count; i++) {
        const kj_tune_variant *v = kj_tune_result_variant(r, i);
        if (value_in(v->label, "UNROLL") != 2) continue;
        assert_int_equal(v->status, KJ_VARIANT_WRONG);
        assert_non_null(strstr(v->note, "c[4098]"));
        assert_non_null(strstr(v->note, "the CPU's a + b"));
    }
    assert_int_not_equal(value_in(kj_tune_result_variant(r, r->best)[0].label, "UNROLL"), 2);
    kj_tune_result_free(r);
    kj_runtime_destroy(r2);
    kj_test_rmdir(dir);
}

static void test_errors(void **state) {
    (void)state;
    kj_tune_options o = kj_test_tune_options("transpose", NULL, 0, 0);
    kj_tune_result *r = NULL;
    o.entry = "transpose_vec";
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "fixed 32 x 32 tile"));
    o.entry = NULL;
    o.n = 2147483659ull; /* a prime: one row, wider than kj_transpose takes */
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "1 x 2147483659"));
    o.n = 0;
    o.kernel = "vector_add";
    kj_define f16[] = {{"T", "f16"}};
    o.fixed = f16;
    o.fixed_count = 1;
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_INVALID_DEFINE);
    o.fixed_count = 0;
    o.kernel = "nosuch";
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_UNSUPPORTED);
    assert_non_null(strstr(kj_last_error(), "reduce, transpose, vector_add"));
    assert_null(r);
}

KJ_TEST_MAIN(kj_test_setup_gpu_runtime, kj_test_teardown, cmocka_unit_test(test_transpose_tuned),
             cmocka_unit_test(test_vector_add_tuned), cmocka_unit_test(test_vector_add_scalar),
             cmocka_unit_test(test_transpose_budget), cmocka_unit_test(test_wrong_variants_never_win),
             cmocka_unit_test(test_errors))
