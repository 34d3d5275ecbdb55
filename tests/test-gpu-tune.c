/* The gpu suite for tuning: kj_tune picks a valid configuration of the reduction that computes the
 * right result, stores it, and kj_reduce then reports config_from KJ_CONFIG_TUNED with those values (in this
 * runtime, and in a new one that reads the file); explicit options still win; sizes far from the
 * tuned bucket keep the defaults; a budget limits the variants touched; entries that ignore
 * COARSE_FACTOR and single-block entries that cannot take the size; forgetting; a stored record the
 * run does not reproduce gives way. Exits 77 without a GPU. */
#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <sys/stat.h>

typedef struct {
    size_t calls[3];
    int wrong_thread;
    pthread_t caller;
} progress_check;

static void on_progress(const kj_progress *p, void *user) {
    progress_check *c = user;
    if ((unsigned)p->phase < 3) c->calls[p->phase]++;
    if (!pthread_equal(pthread_self(), c->caller)) c->wrong_thread = 1;
}

static unsigned value_in(const char *label, const char *name) {
    const char *p = strstr(label, name);
    return p ? (unsigned)strtoul(p + strlen(name) + 1, NULL, 10) : 0;
}

/* n random f32 on the device, and their CPU reference. */
static kj_devptr upload(size_t n, float *want, double *abs_sum) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (float)(kj_test_uniform(&kj_test_rng) * 2 - 1);
    kj_devptr d;
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, n * sizeof *h, &d));
    KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, d, h, n * sizeof *h));
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_F32, h, n, want, abs_sum));
    free(h);
    return d;
}

static void check_sum(kj_runtime *r, kj_devptr d, size_t n, float want, double abs_sum, const kj_reduce_options *o) {
    float got = NAN;
    KJ_ASSERT_OK(kj_reduce(r, KJ_OP_SUM, KJ_TYPE_F32, d, n, &got, o));
    double tol = kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, n, want, abs_sum, o->report);
    if (!(fabs((double)got - want) <= tol)) fail_msg("n=%zu: GPU %.9g, CPU %.9g, tolerance %.3g", n, got, want, tol);
}

static void test_tune_store_and_use(void **state) {
    (void)state;
    const size_t n = 1u << 20;
    progress_check pc = {.caller = pthread_self()};
    kj_define fixed[] = {{"OP", "sum"}, {"T", "f32"}};
    kj_tune_options o = kj_test_tune_options("reduce", fixed, 2, n);
    o.progress = on_progress;
    o.progress_user = &pc;
    kj_tune_result *r;
    KJ_ASSERT_OK(kj_tune(kj_test_rt, &o, &r));
    printf("tuned in %.2f s (compile %.2f s, measure %.2f s): %s, %.1f GB/s, again %.1f GB/s\n", r->total_ms / 1e3,
           r->compile_ms / 1e3, r->measure_ms / 1e3, kj_tune_result_variant(r, r->best)[0].label, r->best_gbps,
           r->remeasured_gbps);
    /* BLOCK_SIZE x COARSE_FACTOR x WAVES, the last a launch parameter: 36 binaries for 252 variants */
    kj_test_assert_tuned(r, "reduce", "reduce_fast", "OP=sum T=f32", 20, 36 * 7);
    assert_int_equal(kj_space_dim_count(r->space), 3);
    assert_string_equal(kj_space_dim_name(r->space, 2), "WAVES");
    assert_string_equal(r->strategy, "exhaustive");
    assert_true(r->measured >= 30 * 7); /* only a device limit may skip a few */
    assert_int_equal(r->compiled + r->cached, 36 * 7);
    assert_true(r->compiled <= 36);
    const kj_tune_variant *best = kj_tune_result_variant(r, r->best);
    assert_int_equal(best->status, KJ_VARIANT_MEASURED);
    assert_true(best->samples >= 10);
    assert_true(best->registers > 0);
    for (size_t i = 0; i < r->variant_count; i++)
        if (kj_tune_result_variant(r, i)[0].status == KJ_VARIANT_MEASURED)
            assert_true(kj_tune_result_variant(r, i)[0].median_us >= best->median_us);
    assert_true(r->best_gbps > 0 && r->remeasured_gbps > 0);
    assert_true(r->remeasured_samples >= 30);
    assert_true(r->stored);
    struct stat st;
    assert_int_equal(stat(r->db_path, &st), 0);
    assert_true(pc.calls[KJ_PHASE_COMPILE] == 36 * 7);
    assert_true(pc.calls[KJ_PHASE_MEASURE] == r->measured);
    assert_true(pc.calls[KJ_PHASE_REMEASURE] == 1);
    assert_false(pc.wrong_thread);
    unsigned block = value_in(best->label, "BLOCK_SIZE"), coarse = value_in(best->label, "COARSE_FACTOR");
    assert_true(block >= 32 && block <= 1024 && (block & (block - 1)) == 0);
    assert_true(coarse >= 1 && coarse <= 32);

    kj_tuned t = KJ_TUNED_INIT;
    KJ_ASSERT_OK(kj_tune_db_lookup(kj_test_rt, "reduce", "reduce_fast", "OP=sum T=f32", n, &t));
    assert_string_equal(t.values, best->label);
    assert_int_equal(t.bucket, 20);

    /* kj_reduce now takes it, for any size of the bucket (and a neighbour), and computes right */
    float want;
    double abs_sum;
    const size_t m = n + 12345;
    kj_devptr d = upload(m, &want, &abs_sum);
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options ro = {.size = sizeof(kj_reduce_options), .report = &rep};
    check_sum(kj_test_rt, d, m, want, abs_sum, &ro);
    assert_int_equal(rep.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(rep.block_size, block);
    assert_int_equal(rep.coarse_factor, coarse);
    assert_string_equal(rep.entry, "reduce_fast");
    /* explicit options win */
    ro = (kj_reduce_options){.size = sizeof(kj_reduce_options), .block_size = 128, .report = &rep};
    check_sum(kj_test_rt, d, m, want, abs_sum, &ro);
    assert_int_equal(rep.config_from, KJ_CONFIG_EXPLICIT);
    assert_int_equal(rep.block_size, 128);
    /* another operator, or a size two buckets away: the defaults */
    float got;
    ro = (kj_reduce_options){.size = sizeof(kj_reduce_options), .report = &rep};
    KJ_ASSERT_OK(kj_reduce(kj_test_rt, KJ_OP_MAX, KJ_TYPE_F32, d, m, &got, &ro));
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    KJ_ASSERT_OK(kj_mem_free(kj_test_rt, d));
    d = upload(1000, &want, &abs_sum);
    check_sum(kj_test_rt, d, 1000, want, abs_sum, &ro);
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    KJ_ASSERT_OK(kj_mem_free(kj_test_rt, d));

    /* a new runtime reads the file once and uses the entry too */
    kj_test_log log_again;
    kj_runtime *rt2 = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, &log_again);
    assert_non_null(rt2);
    kj_runtime *keep = kj_test_rt;
    kj_test_rt = rt2; /* upload() works on kj_test_rt */
    d = upload(n, &want, &abs_sum);
    check_sum(rt2, d, n, want, abs_sum, &ro);
    assert_int_equal(rep.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(rep.block_size, block);
    assert_int_equal(rep.coarse_factor, coarse);
    assert_int_equal(log_again.warnings, 0);
    KJ_ASSERT_OK(kj_mem_free(rt2, d));
    kj_test_rt = keep;
    kj_runtime_destroy(rt2);
    kj_tune_result_free(r);
}

/* A budget touches at most that many variants, by greedy descent from the defaults; dry_run stores
 * nothing. */
static void test_budget(void **state) {
    (void)state;
    kj_define fixed[] = {{"OP", "max"}, {"T", "i32"}};
    kj_tune_options o = kj_test_tune_options("reduce", fixed, 2, 3000017);
    o.budget = 7;
    o.dry_run = 1;
    kj_tune_result *r;
    KJ_ASSERT_OK(kj_tune(kj_test_rt, &o, &r));
    assert_non_null(strstr(r->strategy, "greedy"));
    assert_true(r->measured >= 1 && r->measured + r->skipped + r->failed + r->wrong <= 7);
    assert_true(r->not_tried >= 36 * 7 - 7);
    assert_int_equal(r->wrong, 0);
    assert_false(r->stored);
    /* the defaults (BLOCK_SIZE=256 COARSE_FACTOR=8 WAVES=1) are where the descent starts */
    size_t start = 0;
    for (size_t i = 0; i < r->variant_count; i++)
        if (strcmp(kj_tune_result_variant(r, i)[0].label, "BLOCK_SIZE=256 COARSE_FACTOR=8 WAVES=1") == 0) start = i;
    assert_int_equal(kj_tune_result_variant(r, start)[0].status, KJ_VARIANT_MEASURED);
    kj_tuned t = KJ_TUNED_INIT;
    assert_int_equal(kj_tune_db_lookup(kj_test_rt, "reduce", "reduce_fast", "OP=max T=i32", o.n, &t), KJ_ERR_NOT_FOUND);
    kj_tune_result_free(r);
}

/* An entry that ignores COARSE_FACTOR: only BLOCK_SIZE varies, and kj_reduce reports no coarsening;
 * a single-block entry skips the block sizes too small for n. */
static void test_other_entries(void **state) {
    (void)state;
    kj_define fixed[] = {{"OP", "min"}, {"T", "f64"}};
    kj_tune_options o = kj_test_tune_options("reduce", fixed, 2, 100003);
    o.entry = "reduce_segmented";
    kj_tune_result *r;
    KJ_ASSERT_OK(kj_tune(kj_test_rt, &o, &r));
    assert_int_equal(r->variant_count, 6);
    assert_int_equal(kj_space_dim_count(r->space), 1);
    assert_string_equal(kj_space_dim_name(r->space, 0), "BLOCK_SIZE");
    assert_string_equal(r->fixed, "OP=min T=f64");
    assert_int_equal(r->wrong, 0);
    assert_true(r->stored);
    unsigned block = value_in(kj_tune_result_variant(r, r->best)[0].label, "BLOCK_SIZE");
    kj_tune_result_free(r);
    kj_devptr d;
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, 100003 * 8, &d));
    KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, d, 0, 100003 * 8));
    double got;
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options ro = {.size = sizeof(kj_reduce_options), .entry = "reduce_segmented", .report = &rep};
    KJ_ASSERT_OK(kj_reduce(kj_test_rt, KJ_OP_MIN, KJ_TYPE_F64, d, 100003, &got, &ro));
    assert_true(got == 0.0);
    assert_int_equal(rep.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(rep.block_size, block);
    assert_int_equal(rep.coarse_factor, 0);
    KJ_ASSERT_OK(kj_mem_free(kj_test_rt, d));

    o.entry = "reduce_shared";
    o.n = 1000; /* one block holds 2 x BLOCK_SIZE: 512 and 1024 can take it */
    o.dry_run = 1;
    KJ_ASSERT_OK(kj_tune(kj_test_rt, &o, &r));
    assert_int_equal(r->variant_count, 6);
    assert_int_equal(r->skipped, 4);
    assert_non_null(strstr(kj_tune_result_variant(r, 0)[0].note, "at most 2 x BLOCK_SIZE"));
    assert_true(value_in(kj_tune_result_variant(r, r->best)[0].label, "BLOCK_SIZE") >= 512);
    kj_tune_result_free(r);
}

static void test_errors_and_forget(void **state) {
    (void)state;
    kj_tune_options o = kj_test_tune_options("reduce", NULL, 0, 0);
    kj_tune_result *r = NULL;
    o.samples = 5;
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_USAGE);
    o.samples = 0;
    kj_define two[] = {{"OP", "sum,max"}};
    o.fixed = two;
    o.fixed_count = 1;
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_USAGE);
    o.fixed_count = 0;
    o.entry = "reduce_init";
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_USAGE);
    o.entry = "nope";
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_UNKNOWN_ENTRY);
    o.entry = NULL;
    o.kernel = "nosuch";
    assert_int_equal(kj_tune(kj_test_rt, &o, &r), KJ_ERR_UNSUPPORTED);
    assert_non_null(strstr(kj_last_error(), "reduce"));
    assert_null(r);

    /* forgetting the sum entry: kj_reduce is back to the defaults */
    assert_int_equal(kj_test_forget(kj_test_rt, "reduce", "OP=sum"), 1);
    kj_devptr d;
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, (1u << 20) * 4, &d));
    KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, d, 0, (1u << 20) * 4));
    float got;
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options ro = {.size = sizeof(kj_reduce_options), .report = &rep};
    KJ_ASSERT_OK(kj_reduce(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F32, d, 1u << 20, &got, &ro));
    assert_int_equal(rep.config_from, KJ_CONFIG_DEFAULT);
    KJ_ASSERT_OK(kj_mem_free(kj_test_rt, d));
}

/* A record in the database that claims far more than this device gives for its variant (a bogus
 * shared result: 99999 GB/s for the slowest) once won for good, the faster being kept: a tuning run
 * that measures that variant here replaces it with its own winner. */
static void test_unreproduced_record_replaced(void **state) {
    (void)state;
    const size_t n = 1u << 20;
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(kj_test_rt, &d));
    char line[1024];
    snprintf(line, sizeof line,
             "reduce\treduce_fast\tOP=prod T=f32\t20\t%s\t%d.%d\t%s\tBLOCK_SIZE=32 COARSE_FACTOR=1\t"
             "99999.0\t0.042\t%zu\t1700000000\n",
             d.name, d.cc_major, d.cc_minor, kj_version_string(), n);
    FILE *f = fopen(kj_tune_db_path(kj_test_rt), "a");
    assert_non_null(f);
    fputs(line, f);
    fclose(f);
    kj_define fixed[] = {{"OP", "prod"}, {"T", "f32"}, {"BLOCK_SIZE", "32,256"}, {"COARSE_FACTOR", "1,8"}};
    kj_tune_options o = kj_test_tune_options("reduce", fixed, 4, n);
    kj_tune_result *r;
    KJ_ASSERT_OK(kj_tune(kj_test_rt, &o, &r));
    const char *best = kj_tune_result_variant(r, r->best)->label;
    printf("winner %s at %.1f GB/s over a record of BLOCK_SIZE=32 COARSE_FACTOR=1 at 99999 GB/s\n", best,
           r->remeasured_gbps);
    assert_true(r->stored);
    kj_tuned t = KJ_TUNED_INIT;
    KJ_ASSERT_OK(kj_tune_db_lookup(kj_test_rt, "reduce", "reduce_fast", "OP=prod T=f32", n, &t));
    assert_string_equal(t.values, best);
    assert_true(t.gbps < 99999.0);
    kj_tune_result_free(r);
    assert_int_equal(kj_test_forget(kj_test_rt, "reduce", "OP=prod"), 1);
}

KJ_TEST_MAIN(kj_test_setup_gpu_runtime, kj_test_teardown, cmocka_unit_test(test_tune_store_and_use),
             cmocka_unit_test(test_budget), cmocka_unit_test(test_other_entries),
             cmocka_unit_test(test_errors_and_forget), cmocka_unit_test(test_unreproduced_record_replaced))
