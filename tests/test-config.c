/* "Explicit, else tuned, else default" (kj__config_resolve), as the families that have tunables
 * report it, on the stub driver (tests/stub-cuda.c: an sm_90 device whose memory is host memory and
 * on which these kernels' launches do nothing): the kernels are compiled and loaded for real, the
 * tuning database is the runtime's own, and each call's report says what it ran and why. */
#include "test_util.h"

#include "tunedb/tunedb.h"

#define N 1500 /* fits one block of 1024 (a single-block entry), not one of 512 */

static kj_devptr a, b, c;

static int setup(void **state) {
    if (kj_test_setup_dir(state) != 0) return -1;
    kj_test_rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, &kj_test_rt_log);
    if (!kj_test_rt || !kj_runtime_has_device(kj_test_rt)) return -1; /* KERNJIT_LIBCUDA is the stub */
    return kj_mem_alloc(kj_test_rt, 3 * N * 8, &a) == KJ_OK ? (b = a + N * 8, c = b + N * 8, 0) : -1;
}

/* Stores a winner for this device, faster than any before it (so that it replaces them). */
static void store(const char *kernel, const char *entry, const char *fixed, const char *values) {
    static double gbps = 1;
    kj_device_info info = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(kj_test_rt, &info));
    char device[256];
    kj__tunedb_device_name(info.name, device);
    kj__tuned_rec rec = {.kernel = (char *)kernel,
                         .entry = (char *)entry,
                         .fixed = (char *)fixed,
                         .bucket = kj__tunedb_bucket(N),
                         .device = device,
                         .cc_major = info.cc_major,
                         .cc_minor = info.cc_minor,
                         .version = (char *)kj_version_string(),
                         .values = (char *)values,
                         .gbps = gbps++,
                         .us = 1,
                         .n = N,
                         .time = 1};
    KJ_ASSERT_OK(kj__tuned_store(kj_test_rt, &rec, NULL));
}

static kj_vector_add_report vector_add(unsigned block, unsigned unroll) {
    kj_vector_add_report r = KJ_VECTOR_ADD_REPORT_INIT;
    kj_vector_add_options o = {
        .size = sizeof(kj_vector_add_options), .block_size = block, .unroll = unroll, .report = &r};
    KJ_ASSERT_OK(kj_vector_add(kj_test_rt, KJ_TYPE_F32, a, b, c, N, &o));
    return r;
}

static void test_vector_add(void **state) {
    (void)state;
    kj_vector_add_report r = vector_add(0, 0);
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.block_size, 256);
    assert_int_equal(r.unroll, 4);
    r = vector_add(128, 0); /* one value given: the other stays at its default */
    assert_int_equal(r.config_from, KJ_CONFIG_EXPLICIT);
    assert_int_equal(r.block_size, 128);
    assert_int_equal(r.unroll, 4);

    /* a record from before WAVES existed: its values, and WAVES at its default */
    store("vector_add", "vector_add", "T=f32", "BLOCK_SIZE=512 UNROLL=2");
    r = vector_add(0, 0);
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.block_size, 512);
    assert_int_equal(r.unroll, 2);
    assert_int_equal(r.waves, 1024);
    store("vector_add", "vector_add", "T=f32", "BLOCK_SIZE=512 UNROLL=2 WAVES=4");
    r = vector_add(0, 0);
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.waves, 4);
    r = vector_add(0, 8); /* what the caller gives wins over the database */
    assert_int_equal(r.config_from, KJ_CONFIG_EXPLICIT);
    assert_int_equal(r.block_size, 256);
    assert_int_equal(r.unroll, 8);

    /* values that are not plain numbers from 1 to 1024 are not taken: the defaults, silently */
    int warnings = kj_test_rt_log.warnings;
    store("vector_add", "vector_add", "T=f32", "BLOCK_SIZE=2048 UNROLL=2");
    r = vector_add(0, 0);
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(kj_test_rt_log.warnings, warnings);

    /* values the metadata refuses (a hand-edited database): a warning, then the defaults */
    store("vector_add", "vector_add", "T=f32", "BLOCK_SIZE=512 UNROLL=3");
    r = vector_add(0, 0);
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.unroll, 4);
    assert_int_equal(kj_test_rt_log.warnings, warnings + 1);
    assert_non_null(strstr(kj_test_rt_log.last,
                           "the tuning database's BLOCK_SIZE=512 UNROLL=3 WAVES=1024 for vector_add "
                           "cannot be used"));
    assert_non_null(strstr(kj_test_rt_log.last, "UNROLL=3"));
    /* the call's plan keeps the defaults it fell back to: no warning again */
    r = vector_add(0, 0);
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(kj_test_rt_log.warnings, warnings + 1);
    /* and explicit values the metadata refuses are the caller's error */
    kj_vector_add_options o = {.size = sizeof(kj_vector_add_options), .unroll = 3};
    assert_int_equal(kj_vector_add(kj_test_rt, KJ_TYPE_F32, a, b, c, N, &o), KJ_ERR_INVALID_DEFINE);
}

static kj_reduce_report reduce(const char *entry) {
    kj_reduce_report r = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = entry, .report = &r};
    KJ_ASSERT_OK(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_I32, a, N, c, &o));
    return r;
}

static void test_reduce(void **state) {
    (void)state;
    kj_reduce_report r = reduce("reduce_shared");
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.block_size, 1024);
    assert_int_equal(r.coarse_factor, 0);
    /* a single-block entry takes tuned values only when its one block covers n */
    store("reduce", "reduce_shared", "OP=sum T=i32", "BLOCK_SIZE=512");
    r = reduce("reduce_shared");
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.block_size, 1024);
    store("reduce", "reduce_shared", "OP=sum T=i32", "BLOCK_SIZE=1024");
    assert_int_equal(reduce("reduce_shared").config_from, KJ_CONFIG_TUNED);
    /* the tuned values of the entry that coarsens: both of them */
    store("reduce", "reduce_fast", "OP=sum T=i32", "BLOCK_SIZE=64 COARSE_FACTOR=2");
    r = reduce(NULL);
    assert_string_equal(r.entry, "reduce_fast");
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.block_size, 64);
    assert_int_equal(r.coarse_factor, 2);
    /* another operator has nothing tuned */
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &r};
    KJ_ASSERT_OK(kj_reduce_async(kj_test_rt, KJ_OP_MAX, KJ_TYPE_I32, a, N, c, &o));
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
}

static kj_reduce_report reduce_of(kj_op op, kj_type type, size_t n, const char *entry) {
    kj_reduce_report r = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = entry, .report = &r};
    KJ_ASSERT_OK(kj_reduce_async(kj_test_rt, op, type, a, n, c, &o));
    return r;
}

/* A call's plan (kj__config_resolve) is never stale: a result stored after it, a better one after
 * that, and a forget each change what the next call runs, as they change the database's copy. */
static void test_plan_follows_the_database(void **state) {
    (void)state;
    kj_reduce_report r = reduce_of(KJ_OP_SUM, KJ_TYPE_F64, N, NULL);
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    r = reduce_of(KJ_OP_SUM, KJ_TYPE_F64, N, NULL);
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.origin, KJ_ORIGIN_MEMORY); /* from the plan */
    unsigned block = r.block_size;
    store("reduce", "reduce_fast", "OP=sum T=f64", "BLOCK_SIZE=128 COARSE_FACTOR=2 WAVES=2");
    r = reduce_of(KJ_OP_SUM, KJ_TYPE_F64, N, NULL);
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.block_size, 128);
    assert_int_equal(r.coarse_factor, 2);
    assert_int_equal(r.waves, 2);
    store("reduce", "reduce_fast", "OP=sum T=f64", "BLOCK_SIZE=64 COARSE_FACTOR=1 WAVES=1"); /* faster */
    r = reduce_of(KJ_OP_SUM, KJ_TYPE_F64, N, NULL);
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.block_size, 64);
    assert_int_equal(r.coarse_factor, 1);
    assert_int_equal(kj_test_forget(kj_test_rt, "reduce", "OP=sum T=f64"), 1);
    r = reduce_of(KJ_OP_SUM, KJ_TYPE_F64, N, NULL);
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.block_size, block);
    /* what the caller gives is its own plan, and the database's plan stays right beside it */
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .block_size = 256, .report = &r};
    KJ_ASSERT_OK(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F64, a, N, c, &o));
    assert_int_equal(r.config_from, KJ_CONFIG_EXPLICIT);
    assert_int_equal(r.block_size, 256);
    assert_int_equal(reduce_of(KJ_OP_SUM, KJ_TYPE_F64, N, NULL).config_from, KJ_CONFIG_DEFAULT);
}

/* A single-block entry's plan is kept under n itself, not its bucket: tuned values whose block does
 * not cover n are not used, and two sizes of one bucket each get their own answer. */
static void test_plan_of_a_single_block_entry(void **state) {
    (void)state;
    store("reduce", "reduce_shared", "OP=min T=i32", "BLOCK_SIZE=512"); /* bucket 10: 1024 to 2047 */
    kj_reduce_report r = reduce_of(KJ_OP_MIN, KJ_TYPE_I32, 1100, "reduce_shared");
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.block_size, 1024);
    r = reduce_of(KJ_OP_MIN, KJ_TYPE_I32, 1024, "reduce_shared");
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.block_size, 512);
    r = reduce_of(KJ_OP_MIN, KJ_TYPE_I32, 1100, "reduce_shared");
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.block_size, 1024);
    /* entries with a helper (reduce_load, reduce_init) get both kernels from their plan */
    static const char *const helped[] = {"reduce_simple", "reduce_segmented", "reduce_coarsened"};
    for (size_t i = 0; i < sizeof helped / sizeof helped[0]; i++) {
        reduce_of(KJ_OP_MIN, KJ_TYPE_I32, 1000, helped[i]);
        r = reduce_of(KJ_OP_MIN, KJ_TYPE_I32, 1000, helped[i]);
        assert_string_equal(r.entry, helped[i]);
        assert_int_equal(r.origin, KJ_ORIGIN_MEMORY);
    }
}

/* The fast entry's defaults by size (reduce.c, fast_default) on the stub's device (132 SMs, 50 MiB of
 * L2, 3.35 TB/s): one block up to 8 vectors a thread of 256; then 512 threads with two vectors a pass
 * where 132 blocks still get them, else one; past half the L2 (25 MiB) 1024 threads with the loads in
 * flight that hold 3 us of the bandwidth: 4. */
static void test_reduce_fast_defaults(void **state) {
    (void)state;
    static const struct {
        kj_type type;
        size_t n;
        unsigned block, coarse;
    } cases[] = {{KJ_TYPE_F32, 1000, 256, 1},
                 {KJ_TYPE_F32, 8192, 256, 8},
                 {KJ_TYPE_F32, 8193, 512, 1},
                 {KJ_TYPE_F32, 512 * 4 * 2 * 132 - 1, 512, 1},
                 {KJ_TYPE_F32, 512 * 4 * 2 * 132, 512, 2},
                 {KJ_TYPE_F16, 512 * 8 * 2 * 132, 512, 2},
                 {KJ_TYPE_F16, 512 * 8 * 2 * 132 - 1, 512, 1},
                 {KJ_TYPE_F64, (25u << 20) / 8, 512, 2},
                 {KJ_TYPE_F64, (25u << 20) / 8 + 1, 1024, 4},
                 {KJ_TYPE_F32, 25u << 18, 512, 2},
                 {KJ_TYPE_F32, (25u << 18) + 1, 1024, 4}};
    kj_devptr in;
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, (32u << 20) + 64, &in));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kj_reduce_report r = KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &r};
        KJ_ASSERT_OK(kj_reduce_async(kj_test_rt, KJ_OP_MAX, cases[i].type, in, cases[i].n, c, &o));
        assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
        assert_int_equal(r.block_size, cases[i].block);
        assert_int_equal(r.coarse_factor, cases[i].coarse);
    }
    KJ_ASSERT_OK(kj_mem_free(kj_test_rt, in));
}

static void test_transpose(void **state) {
    (void)state;
    kj_transpose_report r = KJ_TRANSPOSE_REPORT_INIT;
    kj_transpose_options o = {.size = sizeof(kj_transpose_options), .report = &r};
    store("transpose", "transpose_padded", "ELEM_BYTES=4", "BLOCK_ROWS=4 TILE_DIM=16");
    KJ_ASSERT_OK(kj_transpose(kj_test_rt, KJ_TYPE_F32, a, c, 30, 50, &o));
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.tile[0], 16);
    assert_int_equal(r.block[1], 4);
    assert_int_equal(r.grid, 2 * 4);
    assert_int_equal(r.shared_bytes, 16 * 17 * 4);
    o.variant = KJ_TRANSPOSE_SHARED; /* a fixed tile: nothing to tune */
    KJ_ASSERT_OK(kj_transpose(kj_test_rt, KJ_TYPE_F32, a, c, 30, 50, &o));
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(r.tile[0], 32);
}

/* A tuning target runs the kernel the tuner got for the variant: one request a variant, however many
 * times it runs (the stub's launches do nothing, so every variant comes out wrong). */
static void test_tune_gets_each_variant_once(void **state) {
    (void)state;
    kj_define f32[] = {{"T", "f32"}};
    kj_tune_options o = kj_test_tune_options("vector_add", f32, 1, N);
    o.budget = 3;
    o.dry_run = 1;
    kj_stats before = KJ_STATS_INIT, after = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(kj_test_rt, &before));
    kj_tune_result *r = NULL;
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_NOT_FOUND);
    assert_non_null(strstr(kj_last_error(), "3 wrong"));
    KJ_ASSERT_OK(kj_runtime_stats(kj_test_rt, &after));
    assert_int_equal(after.requests - before.requests, 3);
}

/* A runtime whose target is not the device's own (sm_90a on the stub's 9.0) builds every family's
 * kernels for it, in its folder, and keeps its tuning results apart: what it stored the device's own
 * target does not use, and the database's line says the target. */
static void test_target_keeps_its_tuning(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime_for(kj_test_dir, KJ_DEVICE_AUTO, "sm_90a", NULL);
    assert_non_null(rt);
    assert_string_equal(kj_runtime_arch(rt), "sm_90a");
    assert_string_equal(kj__tuned_target(rt), "sm_90a");
    assert_string_equal(kj__tuned_target(kj_test_rt), "");
    kj_device_info info = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(rt, &info));
    char device[256];
    kj__tunedb_device_name(info.name, device);
    kj__tuned_rec rec = {.kernel = (char *)"vector_add",
                         .entry = (char *)"vector_add",
                         .fixed = (char *)"T=f64",
                         .bucket = kj__tunedb_bucket(N),
                         .device = device,
                         .cc_major = info.cc_major,
                         .cc_minor = info.cc_minor,
                         .target = (char *)kj__tuned_target(rt),
                         .version = (char *)kj_version_string(),
                         .values = (char *)"BLOCK_SIZE=128 UNROLL=1",
                         .gbps = 1,
                         .us = 1,
                         .n = N,
                         .time = 1};
    KJ_ASSERT_OK(kj__tuned_store(rt, &rec, NULL));
    kj_vector_add_report r = KJ_VECTOR_ADD_REPORT_INIT;
    kj_vector_add_options o = {.size = sizeof(kj_vector_add_options), .report = &r};
    KJ_ASSERT_OK(kj_vector_add(rt, KJ_TYPE_F64, a, b, c, N, &o));
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.block_size, 128);
    kj_tuned t = KJ_TUNED_INIT;
    KJ_ASSERT_OK(kj_tune_db_lookup(rt, "vector_add", "vector_add", "T=f64", N, &t));
    assert_string_equal(t.target, "sm_90a");
    struct stat st;
    assert_int_equal(stat(kj_test_path(kj_test_dir, "sm_90a"), &st), 0); /* its kernels' folder */
    /* a runtime for the device's own sm_90 reads the same file and does not take it */
    kj_runtime *own = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, NULL);
    assert_non_null(own);
    KJ_ASSERT_OK(kj_vector_add(own, KJ_TYPE_F64, a, b, c, N, &o));
    assert_int_equal(r.config_from, KJ_CONFIG_DEFAULT);
    assert_int_equal(kj_tune_db_lookup(own, "vector_add", "vector_add", "T=f64", N, &t), KJ_ERR_NOT_FOUND);
    kj_runtime_destroy(own);
    kj_runtime_destroy(rt);
}

static int teardown(void **state) {
    kj_mem_free(kj_test_rt, a);
    return kj_test_teardown(state);
}

/* The words the CLI and its JSON print for the reports' enum. */
static void test_config_from_names(void **state) {
    (void)state;
    assert_string_equal(kj_config_from_name(KJ_CONFIG_DEFAULT), "default");
    assert_string_equal(kj_config_from_name(KJ_CONFIG_TUNED), "tuned");
    assert_string_equal(kj_config_from_name(KJ_CONFIG_EXPLICIT), "explicit");
    assert_string_equal(kj_config_from_name((kj_config_from)3), "unknown");
    assert_string_equal(kj_config_from_name((kj_config_from)-1), "unknown");
}

KJ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_vector_add), cmocka_unit_test(test_reduce),
             cmocka_unit_test(test_reduce_fast_defaults), cmocka_unit_test(test_plan_follows_the_database),
             cmocka_unit_test(test_plan_of_a_single_block_entry), cmocka_unit_test(test_transpose),
             cmocka_unit_test(test_tune_gets_each_variant_once), cmocka_unit_test(test_config_from_names),
             cmocka_unit_test(test_target_keeps_its_tuning))
