/* The tuning database (src/tunedb/tunedb.c, src/tunedb/tunedb_api.c): size buckets and their neighbours, keys kept
 * apart by device, compute capability, target, version and macros, the text format, damaged files (garbage,
 * truncated, binary), atomic updates, writers in several processes, and the public API on a
 * compile-only runtime. No GPU. */
#include "test_util.h"

#include <malloc.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tunedb/tunedb.h"

#define H100 "NVIDIA H100 80GB HBM3"
#define A100 "NVIDIA A100-SXM4-80GB"

static kj__tuned_rec rec(const char *device, int major, int minor, const char *fixed, unsigned bucket,
                         const char *values) {
    kj__tuned_rec r = {.kernel = (char *)"reduce",
                       .entry = (char *)"reduce_fast",
                       .fixed = (char *)fixed,
                       .bucket = bucket,
                       .device = (char *)device,
                       .cc_major = major,
                       .cc_minor = minor,
                       .version = (char *)"0.1.0",
                       .values = (char *)values,
                       .gbps = 3000.5,
                       .us = 12.25,
                       .n = 1ull << bucket,
                       .time = 1700000000};
    return r;
}

static const kj__tuned_rec *find(const kj__tunedb *db, const char *device, int major, int minor, const char *fixed,
                                 uint64_t n) {
    return kj__tunedb_find(db, "reduce", "reduce_fast", fixed, n, device, major, minor, "", "0.1.0");
}

static void test_buckets(void **state) {
    (void)state;
    assert_int_equal(kj__tunedb_bucket(0), 0);
    assert_int_equal(kj__tunedb_bucket(1), 0);
    assert_int_equal(kj__tunedb_bucket(2), 1);
    assert_int_equal(kj__tunedb_bucket(3), 1);
    assert_int_equal(kj__tunedb_bucket(1000003), 19);
    assert_int_equal(kj__tunedb_bucket(1u << 28), 28);
    assert_int_equal(kj__tunedb_bucket((1u << 29) - 1), 28);
    assert_int_equal(kj__tunedb_bucket(UINT64_MAX), 63);
}

/* A size's own bucket first, then the one below, then the one above; never two away. */
static void test_bucket_matching(void **state) {
    (void)state;
    kj__tunedb db = {0};
    kj__tuned_rec r = rec(H100, 9, 0, "OP=sum T=f32", 20, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    KJ_ASSERT_OK(kj__tunedb_put(&db, &r));
    const char *f = "OP=sum T=f32";
    assert_non_null(find(&db, H100, 9, 0, f, 1u << 20));
    assert_non_null(find(&db, H100, 9, 0, f, (1u << 21) - 1));
    assert_non_null(find(&db, H100, 9, 0, f, 1u << 21));       /* bucket 21: 20 is one below */
    assert_non_null(find(&db, H100, 9, 0, f, (1u << 19) + 5)); /* bucket 19: 20 is one above */
    assert_null(find(&db, H100, 9, 0, f, 1u << 22));
    assert_null(find(&db, H100, 9, 0, f, 1u << 18));
    /* both neighbours: the one below wins; the exact bucket wins over both */
    kj__tuned_rec below = rec(H100, 9, 0, f, 21, "BLOCK_SIZE=512 COARSE_FACTOR=4");
    kj__tuned_rec above = rec(H100, 9, 0, f, 23, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    KJ_ASSERT_OK(kj__tunedb_put(&db, &below));
    KJ_ASSERT_OK(kj__tunedb_put(&db, &above));
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 22)->values, "BLOCK_SIZE=512 COARSE_FACTOR=4");
    kj__tuned_rec exact = rec(H100, 9, 0, f, 22, "BLOCK_SIZE=128 COARSE_FACTOR=2");
    KJ_ASSERT_OK(kj__tunedb_put(&db, &exact));
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 22)->values, "BLOCK_SIZE=128 COARSE_FACTOR=2");
    /* the same key again, as fast: the newer replaces the entry */
    assert_int_equal(db.count, 4);
    kj__tuned_rec again = rec(H100, 9, 0, f, 22, "BLOCK_SIZE=64 COARSE_FACTOR=1");
    KJ_ASSERT_OK(kj__tunedb_put(&db, &again));
    assert_int_equal(db.count, 4);
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 22)->values, "BLOCK_SIZE=64 COARSE_FACTOR=1");
    kj__tunedb_clear(&db);
}

/* The conflict rule (the same in the file, a runtime's copy and the remote cache): of two results for
 * one key the faster re-measured one stays, with its numbers, whichever comes last; equal GB/s goes to
 * the shorter time per run, a full tie to the newer. */
static void test_faster_result_wins(void **state) {
    (void)state;
    kj__tunedb db = {0};
    const char *f = "OP=sum T=f32";
    kj__tuned_rec fast = rec(H100, 9, 0, f, 24, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    fast.gbps = 3100.0;
    fast.us = 21.6;
    kj__tuned_rec slow = rec(H100, 9, 0, f, 24, "BLOCK_SIZE=128 COARSE_FACTOR=1");
    slow.gbps = 2500.0;
    slow.us = 26.8;
    KJ_ASSERT_OK(kj__tunedb_put(&db, &fast));
    KJ_ASSERT_OK(kj__tunedb_put(&db, &slow));
    const kj__tuned_rec *r = find(&db, H100, 9, 0, f, 1u << 24);
    assert_string_equal(r->values, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    assert_true(r->gbps == 3100.0 && r->us == 21.6);
    kj__tunedb_clear(&db);
    KJ_ASSERT_OK(kj__tunedb_put(&db, &slow));
    KJ_ASSERT_OK(kj__tunedb_put(&db, &fast));
    r = find(&db, H100, 9, 0, f, 1u << 24);
    assert_string_equal(r->values, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    assert_int_equal(db.count, 1);
    /* as many GB/s in less time per run (a larger n in the same bucket) */
    kj__tuned_rec shorter = rec(H100, 9, 0, f, 24, "BLOCK_SIZE=512 COARSE_FACTOR=8");
    shorter.gbps = 3100.0;
    shorter.us = 20.0;
    KJ_ASSERT_OK(kj__tunedb_put(&db, &shorter));
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 24)->values, "BLOCK_SIZE=512 COARSE_FACTOR=8");
    assert_true(kj__tunedb_better(&fast, &slow) && !kj__tunedb_better(&slow, &fast));
    assert_true(kj__tunedb_better(&shorter, &shorter)); /* a tie: the newer */
    /* a file with both lines keeps the faster, whatever their order */
    char *text = kj__tunedb_format(&db);
    char *line = kj__tunedb_format_record(&slow);
    size_t n = strlen(text) + strlen(line) + 1;
    char *both = malloc(n);
    snprintf(both, n, "%s%s", text, line);
    kj__tunedb_clear(&db);
    kj__logger quiet = {0};
    KJ_ASSERT_OK(kj__tunedb_parse(both, strlen(both), "t", &quiet, &db));
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 24)->values, "BLOCK_SIZE=512 COARSE_FACTOR=8");
    free(text);
    free(line);
    free(both);
    kj__tunedb_clear(&db);
}

/* Entries for another device, compute capability, version, entry or fixed macros never match. */
static void test_keys_apart(void **state) {
    (void)state;
    kj__tunedb db = {0};
    const char *f = "OP=sum T=f32";
    kj__tuned_rec h = rec(H100, 9, 0, f, 28, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    kj__tuned_rec a = rec(A100, 8, 0, f, 28, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    kj__tuned_rec same_name_other_cc = rec(H100, 8, 9, f, 28, "BLOCK_SIZE=64 COARSE_FACTOR=2");
    KJ_ASSERT_OK(kj__tunedb_put(&db, &h));
    KJ_ASSERT_OK(kj__tunedb_put(&db, &a));
    KJ_ASSERT_OK(kj__tunedb_put(&db, &same_name_other_cc));
    assert_int_equal(db.count, 3);
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 28)->values, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    assert_string_equal(find(&db, A100, 8, 0, f, 1u << 28)->values, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    assert_string_equal(find(&db, H100, 8, 9, f, 1u << 28)->values, "BLOCK_SIZE=64 COARSE_FACTOR=2");
    assert_null(find(&db, A100, 9, 0, f, 1u << 28));
    assert_null(find(&db, "NVIDIA H200", 9, 0, f, 1u << 28));
    assert_null(find(&db, H100, 9, 0, "OP=max T=f32", 1u << 28));
    assert_null(find(&db, H100, 9, 0, "", 1u << 28));
    assert_null(kj__tunedb_find(&db, "reduce", "reduce_coarsened", f, 1u << 28, H100, 9, 0, "", "0.1.0"));
    assert_null(kj__tunedb_find(&db, "reduce", "reduce_fast", f, 1u << 28, H100, 9, 0, "", "0.2.0"));
    assert_null(kj__tunedb_find(&db, "transpose", "reduce_fast", f, 1u << 28, H100, 9, 0, "", "0.1.0"));
    kj__tunedb_clear(&db);
}

/* A runtime that builds for another target than the device's own (sm_90a on a 9.0 device) keeps
 * its results apart: its own key, its own line ("9.0/sm_90a"), and no other target's. */
static void test_targets_apart(void **state) {
    (void)state;
    kj__tunedb db = {0}, back = {0};
    const char *f = "OP=sum T=f32";
    kj__tuned_rec own = rec(H100, 9, 0, f, 28, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    kj__tuned_rec a = rec(H100, 9, 0, f, 28, "BLOCK_SIZE=512 COARSE_FACTOR=8");
    a.target = (char *)"sm_90a";
    a.gbps = 1; /* slower: it must not replace the device's own, nor be replaced by it */
    KJ_ASSERT_OK(kj__tunedb_put(&db, &own));
    KJ_ASSERT_OK(kj__tunedb_put(&db, &a));
    assert_int_equal(db.count, 2);
    const kj__tuned_rec *r = kj__tunedb_find(&db, "reduce", "reduce_fast", f, 1u << 28, H100, 9, 0, "sm_90a", "0.1.0");
    assert_non_null(r);
    assert_string_equal(r->values, "BLOCK_SIZE=512 COARSE_FACTOR=8");
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 28)->values, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    assert_null(kj__tunedb_find(&db, "reduce", "reduce_fast", f, 1u << 28, H100, 9, 0, "compute_80", "0.1.0"));
    char *text = kj__tunedb_format(&db);
    assert_non_null(text);
    assert_non_null(strstr(text, "\t9.0/sm_90a\t0.1.0\tBLOCK_SIZE=512"));
    assert_non_null(strstr(text, "\t9.0\t0.1.0\tBLOCK_SIZE=1024"));
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_DEBUG};
    KJ_ASSERT_OK(kj__tunedb_parse(text, strlen(text), "t", &lg, &back));
    assert_int_equal(log.warnings, 0);
    assert_int_equal(back.count, 2);
    r = kj__tunedb_find(&back, "reduce", "reduce_fast", f, 1u << 28, H100, 9, 0, "sm_90a", "0.1.0");
    assert_non_null(r);
    assert_string_equal(r->target, "sm_90a");
    /* a target that is not one kernjit writes is a damaged line; so is one put in directly */
    const char *bad = "reduce\treduce_fast\t-\t10\tX\t9.0/../etc\t0.1.0\tA=1\t1.0\t1.000\t1024\t1\n";
    kj__tunedb none = {0};
    KJ_ASSERT_OK(kj__tunedb_parse(bad, strlen(bad), "t", &lg, &none));
    assert_int_equal(none.count, 0);
    assert_non_null(strstr(log.last, "the target after the compute capability is not a target's name"));
    a.target = (char *)"sm90a";
    assert_int_equal(kj__tunedb_put(&db, &a), KJ_ERR_USAGE);
    free(text);
    kj__tunedb_clear(&db);
    kj__tunedb_clear(&back);
}

static void test_format_round_trip(void **state) {
    (void)state;
    kj__tunedb db = {0}, back = {0};
    kj__tuned_rec a = rec(H100, 9, 0, "OP=sum T=f32", 28, "BLOCK_SIZE=1024 COARSE_FACTOR=4");
    kj__tuned_rec b = rec(A100, 8, 0, "", 10, "TILE=32");
    KJ_ASSERT_OK(kj__tunedb_put(&db, &a));
    KJ_ASSERT_OK(kj__tunedb_put(&db, &b));
    char *text = kj__tunedb_format(&db);
    assert_non_null(text);
    assert_non_null(strstr(text, "reduce\treduce_fast\tOP=sum T=f32\t28\t" H100 "\t9.0\t0.1.0\tBLOCK_SIZE=1024 "
                                 "COARSE_FACTOR=4\t3000.5\t12.250\t268435456\t1700000000\n"));
    assert_non_null(strstr(text, "\t-\t10\t")); /* empty fixed list */
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_DEBUG};
    KJ_ASSERT_OK(kj__tunedb_parse(text, strlen(text), "t", &lg, &back));
    assert_int_equal(log.warnings, 0);
    assert_int_equal(back.count, 2);
    const kj__tuned_rec *r = kj__tunedb_find(&back, "reduce", "reduce_fast", "", 1024, A100, 8, 0, "", "0.1.0");
    assert_non_null(r);
    assert_string_equal(r->values, "TILE=32");
    r = find(&back, H100, 9, 0, "OP=sum T=f32", 1u << 28);
    assert_non_null(r);
    assert_true(r->gbps == 3000.5 && r->us == 12.25 && r->n == (1u << 28) && r->time == 1700000000);
    free(text);
    kj__tunedb_clear(&db);
    kj__tunedb_clear(&back);
}

static void test_put_checks_fields(void **state) {
    (void)state;
    kj__tunedb db = {0};
    kj__tuned_rec r = rec(H100, 9, 0, "OP=sum T=f32", 28, "BLOCK_SIZE=1024");
    r.entry = (char *)"reduce fast";
    assert_int_equal(kj__tunedb_put(&db, &r), KJ_ERR_USAGE);
    r = rec("tab\there", 9, 0, "OP=sum", 28, "BLOCK_SIZE=1024");
    assert_int_equal(kj__tunedb_put(&db, &r), KJ_ERR_USAGE);
    r = rec(H100, 9, 0, "OP=sum  T=f32", 28, "BLOCK_SIZE=1024");
    assert_int_equal(kj__tunedb_put(&db, &r), KJ_ERR_USAGE);
    r = rec(H100, 9, 0, "OP=sum", 28, "");
    assert_int_equal(kj__tunedb_put(&db, &r), KJ_ERR_USAGE);
    r = rec(H100, 9, 0, "OP=sum", 28, "BLOCK_SIZE=1024");
    r.gbps = -1;
    assert_int_equal(kj__tunedb_put(&db, &r), KJ_ERR_USAGE);
    assert_int_equal(db.count, 0);
    /* device names are made printable before they are stored or looked up */
    char name[256];
    kj__tunedb_device_name("GPU\twith \x01 odd\xc3\xa9 bytes", name);
    assert_string_equal(name, "GPU?with ? odd?? bytes");
    char v[16];
    assert_int_equal(kj__tunedb_value("BLOCK_SIZE=1024 COARSE_FACTOR=4", "COARSE_FACTOR", v, sizeof v), 0);
    assert_string_equal(v, "4");
    assert_int_equal(kj__tunedb_value("BLOCK_SIZE=1024 COARSE_FACTOR=4", "BLOCK", v, sizeof v), -1);
    kj__tunedb_clear(&db);
}

#define GOOD                                                                                                           \
    "reduce\treduce_fast\tOP=sum T=f32\t20\t" H100                                                                     \
    "\t9.0\t0.1.0\tBLOCK_SIZE=256 COARSE_FACTOR=8\t100.0\t1.0\t1048576\t1\n"
#define GOOD2                                                                                                          \
    "reduce\treduce_fast\tOP=max T=i32\t20\t" H100                                                                     \
    "\t9.0\t0.1.0\tBLOCK_SIZE=512 COARSE_FACTOR=8\t100.0\t1.0\t1048576\t1\n"

/* Each damaged line is skipped with a warning; the good ones around it survive. */
static void test_damaged_lines(void **state) {
    (void)state;
    static const char *const bad[] = {
        "complete garbage\n",
        "reduce\treduce_fast\tOP=sum T=f32\t20\t" H100
        "\t9.0\t0.1.0\tBLOCK_SIZE=256\t100.0\t1.0\t1048576\n", /* 11 fields */
        "reduce\treduce_fast\tOP=sum T=f32\t64\t" H100
        "\t9.0\t0.1.0\tBLOCK_SIZE=256\t100.0\t1.0\t1048576\t1\n", /* bucket */
        "reduce\treduce_fast\tOP=sum T=f32\t21\t" H100
        "\t9.0\t0.1.0\tBLOCK_SIZE=256\t100.0\t1.0\t1048576\t1\n", /* n vs bucket */
        "reduce\treduce_fast\tOP=sum T=f32\t20\t" H100 "\t9\t0.1.0\tBLOCK_SIZE=256\t100.0\t1.0\t1048576\t1\n", /* cc */
        "reduce\treduce_fast\tOP=sum T=f32\t20\t" H100
        "\t9.0\t0.1.0\tBLOCK_SIZE=256\tfast\t1.0\t1048576\t1\n", /* gbps */
        "reduce\treduce_fast\tOP=sum T=f32\t20\t" H100
        "\t9.0\t0.1.0\tBLOCK_SIZE\t100.0\t1.0\t1048576\t1\n", /* values */
        "reduce\treduce_fast\tOP=sum T=f32\t20\tNVIDIA \xc3\xa9\t9.0\t0.1.0\tBLOCK_SIZE=256\t100.0\t1.0\t1048576\t1\n",
        "reduce\treduce_fast\tOP=sum T=f32\t20\t" H100 "\t9.0\t0.1.0\tBLOCK_SIZE=256\t100.0\t1.0\t1048576\t1\r\n",
        "reduce\treduce_fast\tOP=sum T=f32\t20\t" H100 "\t9.0\t0.1.0\tBLOCK_SIZE=256\t100.0\t1.0\t1048576\t1\textra\n",
    };
    size_t nbad = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < nbad; i++) {
        kj__tunedb db = {0};
        kj_test_log log = {0};
        kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_WARN};
        char text[2048];
        snprintf(text, sizeof text, "# header\n\n%s%s%s", GOOD, bad[i], GOOD2);
        KJ_ASSERT_OK(kj__tunedb_parse(text, strlen(text), "tuning.db", &lg, &db));
        if (db.count != 2 || log.warnings != 1)
            fail_msg("bad line %zu: %zu records, %d warnings (%s)", i, db.count, log.warnings, log.last);
        assert_non_null(strstr(log.last, "tuning.db, line 4"));
        kj__tunedb_clear(&db);
    }
    /* a truncated last line (no new line) is dropped, even if what is left would parse */
    kj__tunedb db = {0};
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_WARN};
    char text[1024];
    snprintf(text, sizeof text, "%s%s", GOOD, GOOD2);
    KJ_ASSERT_OK(kj__tunedb_parse(text, strlen(text) - 3, "tuning.db", &lg, &db));
    assert_int_equal(db.count, 1);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "truncated"));
    kj__tunedb_clear(&db);
    /* NUL bytes inside a line */
    memset(&log, 0, sizeof log);
    memcpy(text, GOOD "ab\0cd\n" GOOD2, sizeof GOOD + sizeof GOOD2 + 5);
    KJ_ASSERT_OK(kj__tunedb_parse(text, sizeof GOOD - 1 + 6 + sizeof GOOD2 - 1, "tuning.db", &lg, &db));
    assert_int_equal(db.count, 2);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "binary"));
    kj__tunedb_clear(&db);
}

/* Random bytes: no crash, no record, and only a handful of warnings (then a count). */
static void test_binary_junk(void **state) {
    (void)state;
    uint64_t seed = kj_test_seed();
    size_t n = 1 << 16;
    char *junk = malloc(n);
    for (size_t i = 0; i < n; i++) junk[i] = (char)(kj_test_next(&seed) >> 24);
    kj__tunedb db = {0};
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_WARN};
    KJ_ASSERT_OK(kj__tunedb_parse(junk, n, "junk", &lg, &db));
    assert_int_equal(db.count, 0);
    assert_true(log.warnings >= 1 && log.warnings <= 6);
    kj__tunedb_clear(&db);
    /* a very long line */
    memset(junk, 'a', n - 1);
    junk[n - 1] = '\n';
    memset(&log, 0, sizeof log);
    KJ_ASSERT_OK(kj__tunedb_parse(junk, n, "long", &lg, &db));
    assert_int_equal(db.count, 0);
    assert_non_null(strstr(log.last, "longer than"));
    free(junk);
}

static size_t count_lines(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4200];
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

/* Reading and updating the file: a missing file is empty; damaged lines are dropped on rewrite; no
 * temporary files stay behind; forgetting by filter. */
static void test_file_update(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tuning.db", kj_test_dir);
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_WARN};
    kj__tunedb db = {0};
    KJ_ASSERT_OK(kj__tunedb_read(kj_test_dir, &lg, &db));
    assert_int_equal(db.count, 0);
    assert_int_equal(log.warnings, 0);

    const char *damaged = GOOD "garbage\n" GOOD2 "trunc";
    kj_test_write(path, damaged, strlen(damaged));
    KJ_ASSERT_OK(kj__tunedb_read(kj_test_dir, &lg, &db));
    assert_int_equal(db.count, 2);
    assert_int_equal(log.warnings, 2);
    kj__tunedb_clear(&db);

    kj__tuned_rec r = rec(A100, 8, 0, "OP=sum T=f64", 24, "BLOCK_SIZE=512 COARSE_FACTOR=2");
    kj__tunedb merged = {0};
    kj__tunedb one = {.recs = &r, .count = 1};
    kj__tunedb_change add = {.add = &one};
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, &lg, &add, NULL, &merged));
    assert_int_equal(merged.count, 3);
    kj__tunedb_clear(&merged);
    assert_int_equal(count_lines(path, "garbage"), 0);
    assert_int_equal(count_lines(path, "trunc"), 0);
    assert_int_equal(count_lines(path, "reduce\t"), 3);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' | grep tmp)\"", kj_test_dir);
    assert_int_equal(system(cmd), 0);

    kj_tune_filter f = KJ_TUNE_FILTER_INIT;
    f.device = H100;
    f.fixed = "T=i32";
    size_t removed = 99;
    kj__tunedb_change forget = {.forget = &f}, nothing = {0};
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, &lg, &forget, &removed, NULL));
    assert_int_equal(removed, 1);
    assert_int_equal(count_lines(path, "reduce\t"), 2);
    KJ_ASSERT_OK(kj_tune_filter_init(&f, sizeof f));
    f.cc = 80;
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, &lg, &forget, &removed, NULL));
    assert_int_equal(removed, 1);
    KJ_ASSERT_OK(kj_tune_filter_init(&f, sizeof f));
    f.bucket = 19;
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, &lg, &forget, &removed, NULL));
    assert_int_equal(removed, 0);
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, &lg, &nothing, &removed, NULL)); /* no filter: nothing */
    assert_int_equal(count_lines(path, "reduce\t"), 1);

    /* not a regular file: ignored with a warning */
    unlink(path);
    mkdir(path, 0700);
    memset(&log, 0, sizeof log);
    KJ_ASSERT_OK(kj__tunedb_read(kj_test_dir, &lg, &db));
    assert_int_equal(db.count, 0);
    assert_int_equal(log.warnings, 1);
    rmdir(path);
}

/* A run that measured 32/1 at 400 GB/s, did not try 64/2, and measured the rest at 2000. */
static double measured_here(const char *values, void *user) {
    (void)user;
    if (strcmp(values, "BLOCK_SIZE=32 COARSE_FACTOR=1") == 0) return 400.0;
    return strcmp(values, "BLOCK_SIZE=64 COARSE_FACTOR=2") == 0 ? -1 : 2000.0;
}

/* A record this machine's tuning run did not reproduce (it claims more than 1.5 times what the run
 * measured of its variant) gives way to the new measurement, whatever its speed: in a database and in
 * the file, with a warning; without that evidence (not measured, or no run) the faster one stays. */
static void test_unreproduced_record_gives_way(void **state) {
    (void)state;
    const char *f = "OP=sum T=f32";
    kj__tunedb_measured run = {measured_here, NULL};
    kj__tuned_rec bogus = rec(H100, 9, 0, f, 24, "BLOCK_SIZE=32 COARSE_FACTOR=1");
    bogus.gbps = 99999.0;
    kj__tuned_rec real = rec(H100, 9, 0, f, 24, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    real.gbps = 2000.0;
    double got;
    assert_true(kj__tunedb_unreproduced(&bogus, &run, &got));
    assert_true(got == 400.0);
    assert_true(kj__tunedb_replaces(&real, &bogus, &run));
    assert_false(kj__tunedb_replaces(&real, &bogus, NULL));
    bogus.gbps = 600.0; /* 1.5 times 400: within the margin */
    assert_false(kj__tunedb_unreproduced(&bogus, &run, NULL));
    assert_false(kj__tunedb_replaces(&real, &bogus, &run) && !kj__tunedb_better(&real, &bogus));
    kj__tuned_rec unmeasured = rec(H100, 9, 0, f, 24, "BLOCK_SIZE=64 COARSE_FACTOR=2");
    unmeasured.gbps = 99999.0;
    assert_false(kj__tunedb_replaces(&real, &unmeasured, &run));
    /* the file: a bogus line there gives way to the run's result, with a warning naming both */
    bogus.gbps = 99999.0;
    kj__tunedb one = {.recs = &bogus, .count = 1};
    kj__tunedb_change change = {.add = &one};
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, NULL, &change, NULL, NULL));
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_WARN};
    one.recs = &real;
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, &lg, &change, NULL, NULL));
    kj__tunedb db = {0};
    KJ_ASSERT_OK(kj__tunedb_read(kj_test_dir, &lg, &db));
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 24)->values, "BLOCK_SIZE=32 COARSE_FACTOR=1");
    kj__tunedb_clear(&db);
    assert_int_equal(log.warnings, 0);
    change.measured = &run;
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, &lg, &change, NULL, NULL));
    KJ_ASSERT_OK(kj__tunedb_read(kj_test_dir, &lg, &db));
    assert_string_equal(find(&db, H100, 9, 0, f, 1u << 24)->values, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    assert_int_equal(db.count, 1);
    kj__tunedb_clear(&db);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last,
                           "BLOCK_SIZE=32 COARSE_FACTOR=1 at 99999.0 GB/s, was not reproduced here (this run "
                           "measured 400.0 GB/s of it): replaced by BLOCK_SIZE=256 COARSE_FACTOR=8 at 2000.0"));
}

/* One update puts many records and writes the file once; a change with nothing in it writes nothing. */
static void test_update_many_at_once(void **state) {
    (void)state;
    enum { COUNT = 300 };
    kj__tunedb add = {0};
    for (int i = 0; i < COUNT; i++) {
        char fixed[32];
        snprintf(fixed, sizeof fixed, "OP=sum T=m%d", i);
        kj__tuned_rec r = rec(H100, 9, 0, fixed, 20, "BLOCK_SIZE=256 COARSE_FACTOR=8");
        KJ_ASSERT_OK(kj__tunedb_put(&add, &r));
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tuning.db", kj_test_dir);
    kj__tunedb_change change = {.add = &add}, nothing = {0};
    kj__tunedb merged = {0};
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, NULL, &change, NULL, &merged));
    assert_int_equal(merged.count, COUNT);
    kj__tunedb_clear(&merged);
    assert_int_equal(count_lines(path, "reduce\t"), COUNT);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    KJ_ASSERT_OK(kj__tunedb_update(kj_test_dir, NULL, &nothing, NULL, NULL));
    assert_int_equal(stat(path, &after), 0);
    assert_true(before.st_ino == after.st_ino); /* not rewritten */
    kj__tunedb_clear(&add);
}

/* Writers in several processes at once: every line survives (lock + re-read + rename). */
static void test_concurrent_writers(void **state) {
    (void)state;
    enum { WRITERS = 4, EACH = 12 };
    for (int w = 0; w < WRITERS; w++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            int bad = 0;
            for (int i = 0; i < EACH; i++) {
                char fixed[64];
                snprintf(fixed, sizeof fixed, "OP=sum T=w%di%d", w, i);
                kj__tuned_rec r = rec(H100, 9, 0, fixed, 20, "BLOCK_SIZE=256 COARSE_FACTOR=8");
                kj__tunedb one = {.recs = &r, .count = 1};
                kj__tunedb_change add = {.add = &one};
                bad |= kj__tunedb_update(kj_test_dir, NULL, &add, NULL, NULL) != KJ_OK;
            }
            _exit(bad);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status;
        assert_true(wait(&status) > 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    kj__tunedb db = {0};
    KJ_ASSERT_OK(kj__tunedb_read(kj_test_dir, NULL, &db));
    assert_int_equal(db.count, WRITERS * EACH);
    kj__tunedb_clear(&db);
}

static void visit_count(const kj_tuned *t, void *user) {
    (*(size_t *)user)++;
    assert_string_equal(t->kernel, "reduce");
}

/* The public API without a device: path, list, forget; lookups need a device. */
static void test_public_api(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_NONE, &log);
    assert_non_null(rt);
    char want[PATH_MAX];
    snprintf(want, sizeof want, "%s/tuning.db", kj_test_dir);
    assert_string_equal(kj_tune_db_path(rt), want);
    size_t n = 0;
    KJ_ASSERT_OK(kj_tune_db_list(rt, visit_count, &n));
    assert_int_equal(n, 0);
    const char *text = "# c\n" GOOD "junk\n" GOOD2;
    kj_test_write(want, text, strlen(text));
    KJ_ASSERT_OK(kj_tune_db_list(rt, visit_count, &n));
    assert_int_equal(n, 2);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "line 3"));
    assert_int_equal(kj_test_forget(rt, "reduce", "OP=max"), 1);
    size_t removed = 0;
    KJ_ASSERT_OK(kj_tune_db_forget(rt, NULL, &removed));
    assert_int_equal(removed, 1);
    kj_tuned t = KJ_TUNED_INIT;
    assert_int_equal(kj_tune_db_lookup(rt, "reduce", "reduce_fast", "OP=sum T=f32", 100, &t), KJ_ERR_NO_DEVICE);
    kj_runtime_destroy(rt);
    /* memory only: no database */
    rt = kj_test_runtime(NULL, KJ_DEVICE_NONE, NULL);
    assert_null(kj_tune_db_path(rt));
    assert_int_equal(kj_tune_db_list(rt, visit_count, &n), KJ_ERR_NOT_FOUND);
    assert_int_equal(kj_tune_db_forget(rt, NULL, NULL), KJ_ERR_NOT_FOUND);
    kj_tune_result *r;
    kj_tune_options o = KJ_TUNE_OPTIONS_INIT;
    o.kernel = "reduce";
    assert_int_equal(kj_tune(rt, &o, &r), KJ_ERR_NO_DEVICE);
    kj_runtime_destroy(rt);
}

/* ---- where the database lives ------------------------------------------------------------------ */

/* The folder variables, as the test started with them. */
static const char *const FOLDER_VARIABLES[] = {"HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "KERNJIT_CACHE_DIR",
                                               "KERNJIT_STATE_DIR"};
#define FOLDER_VARIABLE_COUNT (sizeof FOLDER_VARIABLES / sizeof FOLDER_VARIABLES[0])
static char *saved_variables[FOLDER_VARIABLE_COUNT];
static int variables_saved;

/* The environment of a user whose home is kj_test_dir/home, no other folder variable set. */
static void plain_user(void) {
    for (size_t i = 0; i < FOLDER_VARIABLE_COUNT && !variables_saved; i++) {
        const char *v = getenv(FOLDER_VARIABLES[i]);
        saved_variables[i] = v ? strdup(v) : NULL;
    }
    variables_saved = 1;
    for (size_t i = 0; i < FOLDER_VARIABLE_COUNT; i++) unsetenv(FOLDER_VARIABLES[i]);
    setenv("HOME", kj_test_path(kj_test_dir, "home"), 1);
}

/* The environment the test started with. */
static void user_back(void) {
    for (size_t i = 0; i < FOLDER_VARIABLE_COUNT; i++) {
        if (saved_variables[i]) setenv(FOLDER_VARIABLES[i], saved_variables[i], 1);
        else unsetenv(FOLDER_VARIABLES[i]);
        free(saved_variables[i]);
        saved_variables[i] = NULL;
    }
    variables_saved = 0;
}

/* A compile-only runtime on the default cache folder (none named), warnings and notes into log. */
static kj_runtime *default_runtime(kj_test_log *log) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.log_level = KJ_LOG_INFO;
    memset(log, 0, sizeof *log);
    o.log = kj_test_log_fn;
    o.log_user = log;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    return rt;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = calloc(1, 1 << 16);
    assert_non_null(text);
    assert_true(fread(text, 1, (1 << 16) - 1, f) < (1 << 16) - 1);
    fclose(f);
    return text;
}

static void assert_db_path(kj_runtime *rt, const char *want) {
    assert_non_null(kj_tune_db_path(rt));
    assert_string_equal(kj_tune_db_path(rt), want);
}

/* KERNJIT_STATE_DIR; else the cache folder when one was named; else $XDG_STATE_HOME/kernjit, else
 * ~/.local/state/kernjit: not the cache folder, ~/.cache/kernjit, which a user may clear. */
static void test_state_folder(void **state) {
    (void)state;
    kj_test_log log;
    plain_user();
    kj_runtime *rt = default_runtime(&log);
    assert_string_equal(kj_cache_dir(rt), kj_test_path(kj_test_dir, "home/.cache/kernjit"));
    assert_db_path(rt, kj_test_path(kj_test_dir, "home/.local/state/kernjit/tuning.db"));
    size_t n = 0; /* nothing there yet: an empty database, and nothing is created by reading */
    KJ_ASSERT_OK(kj_tune_db_list(rt, visit_count, &n));
    assert_int_equal(n, 0);
    struct stat st;
    assert_int_equal(stat(kj_test_path(kj_test_dir, "home/.local"), &st), -1);
    kj_runtime_destroy(rt);
    assert_int_equal(log.warnings, 0);

    setenv("XDG_STATE_HOME", kj_test_path(kj_test_dir, "xdg-state"), 1);
    rt = default_runtime(&log);
    assert_db_path(rt, kj_test_path(kj_test_dir, "xdg-state/kernjit/tuning.db"));
    kj_runtime_destroy(rt);
    setenv("XDG_STATE_HOME", "relative/state", 1); /* not absolute: ignored, as the XDG rules say */
    rt = default_runtime(&log);
    assert_db_path(rt, kj_test_path(kj_test_dir, "home/.local/state/kernjit/tuning.db"));
    kj_runtime_destroy(rt);

    /* a cache folder named (KERNJIT_CACHE_DIR, or the options): it holds the database too */
    setenv("KERNJIT_CACHE_DIR", kj_test_path(kj_test_dir, "fleet-cache"), 1);
    rt = default_runtime(&log);
    assert_db_path(rt, kj_test_path(kj_test_dir, "fleet-cache/tuning.db"));
    kj_runtime_destroy(rt);
    rt = kj_test_runtime(kj_test_path(kj_test_dir, "given"), KJ_DEVICE_NONE, NULL);
    assert_db_path(rt, kj_test_path(kj_test_dir, "given/tuning.db"));
    kj_runtime_destroy(rt);
    /* KERNJIT_STATE_DIR wins over both */
    setenv("KERNJIT_STATE_DIR", kj_test_path(kj_test_dir, "state"), 1);
    rt = kj_test_runtime(kj_test_path(kj_test_dir, "given"), KJ_DEVICE_NONE, NULL);
    assert_db_path(rt, kj_test_path(kj_test_dir, "state/tuning.db"));
    kj_runtime_destroy(rt);
    user_back();
}

/* A database where 0.2.0 kept it (the cache folder) moves on first use: renamed, byte for byte,
 * when the new place has none; its folder is made 0700. */
static void test_state_move(void **state) {
    (void)state;
    kj_test_log log;
    plain_user();
    const char *text = "# kept as written\n" GOOD GOOD2;
    kj_test_put(kj_test_dir, "home/.cache/kernjit/tuning.db", text);
    kj_runtime *rt = default_runtime(&log);
    const char *now = kj_test_path(kj_test_dir, "home/.local/state/kernjit/tuning.db");
    assert_db_path(rt, now);
    char *got = slurp(now);
    assert_non_null(got);
    assert_string_equal(got, text);
    free(got);
    struct stat st;
    assert_int_equal(stat(kj_test_path(kj_test_dir, "home/.cache/kernjit/tuning.db"), &st), -1);
    assert_int_equal(stat(kj_test_path(kj_test_dir, "home/.local/state/kernjit"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(log.warnings, 0);
    assert_non_null(strstr(log.last, "the tuning database (2 results) moved from the cache folder"));
    size_t n = 0;
    KJ_ASSERT_OK(kj_tune_db_list(rt, visit_count, &n));
    assert_int_equal(n, 2);
    kj_runtime_destroy(rt);
    user_back();
}

/* Both places hold a database (an older kernjit tuned after the move): merged by the conflict rule,
 * the faster result of a key kept whichever file held it, and only then the old file removed. */
static void test_state_merge(void **state) {
    (void)state;
    kj_test_log log;
    plain_user();
#define LINE(fixed, values, gbps)                                                                                      \
    "reduce\treduce_fast\t" fixed "\t20\t" H100 "\t9.0\t0.1.0\t" values "\t" gbps "\t1.0\t1048576\t1\n"
    kj_test_put(kj_test_dir, "home/.cache/kernjit/tuning.db",
                LINE("OP=sum T=f32", "BLOCK_SIZE=128 COARSE_FACTOR=8", "900.0")   /* faster than the new file's */
                LINE("OP=max T=f32", "BLOCK_SIZE=128 COARSE_FACTOR=8", "100.0")   /* slower than the new file's */
                LINE("OP=min T=f32", "BLOCK_SIZE=128 COARSE_FACTOR=8", "100.0")); /* only here */
    kj_test_put(kj_test_dir, "home/.local/state/kernjit/tuning.db",
                LINE("OP=sum T=f32", "BLOCK_SIZE=256 COARSE_FACTOR=8", "500.0")
                    LINE("OP=max T=f32", "BLOCK_SIZE=256 COARSE_FACTOR=8", "500.0")
                        LINE("OP=prod T=f32", "BLOCK_SIZE=256 COARSE_FACTOR=8", "500.0")); /* only here */
#undef LINE
    kj_runtime *rt = default_runtime(&log);
    assert_db_path(rt, kj_test_path(kj_test_dir, "home/.local/state/kernjit/tuning.db")); /* its first use */
    kj__tunedb db = {0};
    KJ_ASSERT_OK(kj__tunedb_read(kj_test_path(kj_test_dir, "home/.local/state/kernjit"), NULL, &db));
    assert_int_equal(db.count, 4);
    const char *want[][2] = {{"OP=sum T=f32", "BLOCK_SIZE=128 COARSE_FACTOR=8"},
                             {"OP=max T=f32", "BLOCK_SIZE=256 COARSE_FACTOR=8"},
                             {"OP=min T=f32", "BLOCK_SIZE=128 COARSE_FACTOR=8"},
                             {"OP=prod T=f32", "BLOCK_SIZE=256 COARSE_FACTOR=8"}};
    for (size_t i = 0; i < 4; i++) {
        const kj__tuned_rec *r = find(&db, H100, 9, 0, want[i][0], 1u << 20);
        assert_non_null(r);
        assert_string_equal(r->values, want[i][1]);
    }
    kj__tunedb_clear(&db);
    struct stat st;
    assert_int_equal(stat(kj_test_path(kj_test_dir, "home/.cache/kernjit/tuning.db"), &st), -1);
    assert_int_equal(log.warnings, 0);
    kj_runtime_destroy(rt);
    user_back();
}

/* A database that cannot be moved stays where it is, untouched, and is used there, with a warning:
 * the new folder cannot be made (a file in the way), or the old file cannot be read whole. */
static void test_state_move_fails(void **state) {
    (void)state;
    kj_test_log log;
    plain_user();
    const char *text = GOOD GOOD2;
    kj_test_put(kj_test_dir, "home/.cache/kernjit/tuning.db", text);
    kj_test_put(kj_test_dir, "home/.local/state", "a file where the folder would go");
    kj_runtime *rt = default_runtime(&log);
    const char *old = kj_test_path(kj_test_dir, "home/.cache/kernjit/tuning.db");
    assert_db_path(rt, old);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "the tuning database stays in the cache folder"));
    assert_non_null(strstr(log.last, "cannot create the tuning database's folder"));
    size_t n = 0;
    KJ_ASSERT_OK(kj_tune_db_list(rt, visit_count, &n));
    assert_int_equal(n, 2);
    kj_runtime_destroy(rt);
    char *got = slurp(old);
    assert_non_null(got);
    assert_string_equal(got, text);
    free(got);

    /* a link where the old database was: never read through, never moved */
    assert_int_equal(unlink(kj_test_path(kj_test_dir, "home/.local/state")), 0);
    assert_int_equal(unlink(old), 0);
    kj_test_put(kj_test_dir, "elsewhere/tuning.db", text);
    assert_int_equal(symlink(kj_test_path(kj_test_dir, "elsewhere/tuning.db"), old), 0);
    rt = default_runtime(&log);
    assert_db_path(rt, old);
    assert_non_null(strstr(log.last, "it is a symbolic link"));
    kj_runtime_destroy(rt);
    struct stat st;
    assert_int_equal(lstat(old, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(kj_test_path(kj_test_dir, "home/.local/state/kernjit/tuning.db"), &st), -1);
    user_back();
}

/* A long-running host that forgets (or stores) again and again keeps one copy of the database, not
 * every earlier one: once +73 MB after 2000 calls. glibc's allocator counts the bytes in use (a
 * sanitizer's allocator does not: there the count stays flat and this checks nothing). */
static void test_memory_bounded(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_NONE, NULL);
    assert_non_null(rt);
    /* 200 entries: 5 devices (name, compute capability) x 40 size buckets */
    kj__tunedb db = {0};
    for (unsigned i = 0; i < 200; i++) {
        kj__tuned_rec r = rec(H100, 9, 0, "OP=sum T=f32", i % 40, "BLOCK_SIZE=256 COARSE_FACTOR=8");
        r.device = i < 40 ? (char *)H100 : (char *)A100;
        r.cc_major = 7 + (int)(i / 40);
        KJ_ASSERT_OK(kj__tunedb_put(&db, &r));
    }
    char *text = kj__tunedb_format(&db);
    assert_non_null(text);
    size_t bytes = strlen(text), used_after_warmup = 0;
    kj__tunedb_clear(&db);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tuning.db", kj_test_dir);
    kj_tune_filter f = KJ_TUNE_FILTER_INIT;
    f.bucket = 3;
    f.cc = 70;
    for (int i = 0; i < 500; i++) {
        kj_test_write(path, text, bytes);
        size_t removed = 0;
        KJ_ASSERT_OK(kj_tune_db_forget(rt, &f, &removed));
        assert_int_equal(removed, 1);
        if (i == 10) used_after_warmup = mallinfo2().uordblks;
    }
    size_t used = mallinfo2().uordblks;
    if (used > used_after_warmup + (1u << 20))
        fail_msg("500 updates grew the heap from %zu to %zu bytes", used_after_warmup, used);
    free(text);
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_buckets), cmocka_unit_test(test_bucket_matching),
             cmocka_unit_test(test_faster_result_wins), cmocka_unit_test(test_keys_apart),
             cmocka_unit_test(test_format_round_trip), cmocka_unit_test(test_targets_apart),
             cmocka_unit_test(test_put_checks_fields), cmocka_unit_test(test_damaged_lines),
             cmocka_unit_test(test_binary_junk), KJ_TEST_IN_DIR(test_file_update),
             KJ_TEST_IN_DIR(test_concurrent_writers), KJ_TEST_IN_DIR(test_unreproduced_record_gives_way),
             KJ_TEST_IN_DIR(test_update_many_at_once), KJ_TEST_IN_DIR(test_public_api),
             KJ_TEST_IN_DIR(test_memory_bounded), KJ_TEST_IN_DIR(test_state_folder), KJ_TEST_IN_DIR(test_state_move),
             KJ_TEST_IN_DIR(test_state_merge), KJ_TEST_IN_DIR(test_state_move_fails))
