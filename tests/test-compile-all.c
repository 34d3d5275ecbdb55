/* The compile suite for offline variant builds (kj_compile_all): the whole reduction space for sm_90
 * without a GPU, then all of it from the cache; the transpose and vector-add spaces (the other tuned
 * families; transpose's `require` lines skip some); a kernel whose requirements leave variants out; a
 * kernel where some variants do not compile; the progress callback; shards of a space. */
#include "test_util.h"

#include <pthread.h>

typedef struct {
    size_t calls, last_done, total;
    int out_of_order, wrong_thread;
    pthread_t caller;
} progress_check;

static void on_progress(const kj_progress *p, void *user) {
    progress_check *c = user;
    if (p->phase != KJ_PHASE_COMPILE || p->done != c->last_done + 1) c->out_of_order = 1;
    if (!pthread_equal(pthread_self(), c->caller)) c->wrong_thread = 1;
    c->last_done = p->done;
    c->total = p->total;
    c->calls++;
    assert_non_null(strstr(p->variant, "BLOCK_SIZE="));
}

static void test_reduce_all_then_cached(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    progress_check pc = {.caller = pthread_self()};
    kj_define fixed[] = {{"OP", "max"}, {"T", "f64"}};
    kj_compile_all_options o = {.size = sizeof(kj_compile_all_options),
                                .kernel = "reduce",
                                .fixed = fixed,
                                .fixed_count = 2,
                                .arch = "sm_90",
                                .progress = on_progress,
                                .progress_user = &pc};
    kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile_all(rt, &o, &r));
    printf("36 variants compiled in %.2f s on %u threads\n", r.wall_ms / 1e3, r.threads);
    assert_int_equal(r.variants, 36);
    assert_int_equal(r.compiled, 36);
    assert_int_equal(r.cached, 0);
    assert_int_equal(r.skipped, 0);
    assert_int_equal(r.failed, 0);
    assert_string_equal(r.arch, "sm_90");
    assert_int_equal(pc.calls, 36);
    assert_int_equal(pc.total, 36);
    assert_false(pc.out_of_order);
    assert_false(pc.wrong_thread);
    uint64_t entries;
    KJ_ASSERT_OK(kj_cache_usage(rt, &entries, NULL, NULL));
    assert_int_equal(entries, 36);
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.compiles, 36);
    kj_runtime_destroy(rt);

    /* a second run, in a new runtime (as on another machine sharing the cache): all hits */
    rt = kj_test_compile_runtime(kj_test_dir, &log);
    memset(&pc, 0, sizeof pc);
    pc.caller = pthread_self();
    KJ_ASSERT_OK(kj_compile_all(rt, &o, &r));
    assert_int_equal(r.compiled, 0);
    assert_int_equal(r.cached, 36);
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.disk_hits, 36);
    /* each variant is the key kj_compile gives for the same macros */
    kj_define one[] = {{"T", "f64"}, {"OP", "max"}, {"BLOCK_SIZE", "128"}, {"COARSE_FACTOR", "16"}};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .defines = one, .define_count = 4};
    kj_compile_result cr = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &cr));
    assert_true(cr.cache_hit);
    assert_int_equal(log.warnings, 0);
    kj_runtime_destroy(rt);
}

/* What `kernjit tune transpose` and `kernjit tune vector_add` compile: every valid variant builds for
 * sm_90; the 4 transpose variants that break a `require` line are skipped, not failed. */
static void test_tuned_families_all(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    kj_define eight[] = {{"ELEM_BYTES", "8"}}; /* the largest tile: 128 x 129 x 8 bytes of shared memory */
    kj_compile_all_options o = {.size = sizeof(kj_compile_all_options),
                                .kernel = "transpose",
                                .fixed = eight,
                                .fixed_count = 1,
                                .arch = "sm_90"};
    kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile_all(rt, &o, &r));
    printf("transpose: %zu variants compiled in %.2f s on %u threads\n", r.compiled, r.wall_ms / 1e3, r.threads);
    assert_int_equal(r.variants, 24);
    assert_int_equal(r.skipped, 4);
    assert_int_equal(r.compiled, 20);
    assert_int_equal(r.failed, 0);

    kj_define f64[] = {{"T", "f64"}};
    o = (kj_compile_all_options){.size = sizeof(kj_compile_all_options),
                                 .kernel = "vector_add",
                                 .fixed = f64,
                                 .fixed_count = 1,
                                 .arch = "sm_90"};
    KJ_ASSERT_OK(kj_compile_all(rt, &o, &r));
    printf("vector_add: %zu variants compiled in %.2f s on %u threads\n", r.compiled, r.wall_ms / 1e3, r.threads);
    assert_int_equal(r.variants, 20);
    assert_int_equal(r.skipped, 0);
    assert_int_equal(r.compiled, 20);
    assert_int_equal(r.failed, 0);
    assert_int_equal(log.warnings, 0);
    kj_runtime_destroy(rt);
}

static const char require_src[] = "//@kernjit entry k\n"
                                  "//@kernjit tune TILE 8 16 32 = 16\n"
                                  "//@kernjit tune ROWS 1 2 4 8 16 = 4\n"
                                  "//@kernjit require TILE % ROWS == 0 && TILE * ROWS <= 256\n"
                                  "#if TILE == 32 && ROWS == 1\n"
                                  "#error this variant does not build\n"
                                  "#endif\n"
                                  "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = TILE * ROWS; }\n";

/* The failed variant's progress carries its message; the others none. */
typedef struct {
    size_t failed, errors;
    char failed_variant[64];
    int error_names_it;
} failure_check;

static void on_failure_progress(const kj_progress *p, void *user) {
    failure_check *c = user;
    if (strcmp(p->outcome, "failed") == 0) {
        c->failed++;
        snprintf(c->failed_variant, sizeof c->failed_variant, "%s", p->variant);
        c->error_names_it = p->error && strstr(p->error, "does not build");
    }
    c->errors += p->error != NULL;
}

static void test_requirements_and_failures(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/req.cu", kj_test_dir);
    kj_test_write(path, require_src, strlen(require_src));
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    failure_check fc = {0};
    kj_compile_all_options o = {.size = sizeof(kj_compile_all_options),
                                .kernel = path,
                                .threads = 3,
                                .progress = on_failure_progress,
                                .progress_user = &fc};
    kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
    /* 15 combinations, 2 break the requirement, 1 does not compile: the call fails, the counts are there */
    assert_int_equal(kj_compile_all(rt, &o, &r), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "1 of 13 variants"));
    assert_non_null(strstr(kj_last_error(), "TILE=32 ROWS=1"));
    assert_non_null(strstr(kj_last_error(), "does not build"));
    assert_int_equal(r.variants, 15);
    assert_int_equal(r.skipped, 2);
    assert_int_equal(r.compiled, 12);
    assert_int_equal(r.failed, 1);
    assert_int_equal(fc.failed, 1);
    assert_int_equal(fc.errors, 1);
    assert_string_equal(fc.failed_variant, "TILE=32 ROWS=1");
    assert_true(fc.error_names_it);
    o.progress = NULL;
    /* restricted so that the failing one is out: all from the cache now */
    kj_define rows[] = {{"ROWS", "2,4,8,16"}};
    o.fixed = rows;
    o.fixed_count = 1;
    KJ_ASSERT_OK(kj_compile_all(rt, &o, &r));
    assert_int_equal(r.variants, 12);
    assert_int_equal(r.skipped, 2);
    assert_int_equal(r.cached, 10);
    assert_int_equal(r.compiled, 0);
    /* usage errors before any compiling */
    o.arch = "sm_9";
    assert_int_equal(kj_compile_all(rt, &o, &r), KJ_ERR_USAGE);
    o.arch = NULL;
    kj_define bad[] = {{"TILE", "64"}};
    o.fixed = bad;
    assert_int_equal(kj_compile_all(rt, &o, &r), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "allowed values are 8 16 32"));
    kj_runtime_destroy(rt);
}

/* Shards: for N = 1, 2, 3 and 7, the parts 0..N-1 of a space of 36 (one skipped by its requirement)
 * are disjoint and cover it, each counts only its own variants, and a part's variants are those whose
 * index is the part modulo N. The first pass (N = 1) compiles, the others find everything cached. */
static const char shard_src[] = "//@kernjit entry k\n"
                                "//@kernjit tune A 1..6 = 1\n"
                                "//@kernjit tune B 1..6 = 1\n"
                                "//@kernjit require A + B != 12\n"
                                "extern \"C\" __global__ void k(int *x) { x[threadIdx.x] = A * 10 + B; }\n";

typedef struct {
    const kj_space *space;
    unsigned shard, shards;
    int seen[36];
    int wrong_shard;
} shard_check;

static void on_shard_progress(const kj_progress *p, void *user) {
    shard_check *c = user;
    for (size_t i = 0; i < kj_space_count(c->space); i++) {
        kj_variant v = KJ_VARIANT_INIT;
        KJ_ASSERT_OK(kj_space_variant(c->space, i, &v));
        if (strcmp(v.label, p->variant) != 0) continue;
        c->seen[i]++;
        if (i % c->shards != c->shard) c->wrong_shard = 1;
    }
}

static void test_shards_cover_the_space(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/shards.cu", kj_test_dir);
    kj_test_write(path, shard_src, strlen(shard_src));
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    kj_space *space;
    KJ_ASSERT_OK(kj_space_create(rt, path, NULL, 0, &space));
    assert_int_equal(kj_space_count(space), 36);
    assert_int_equal(kj_space_valid_count(space), 35);
    const unsigned parts[] = {1, 2, 3, 7};
    for (size_t t = 0; t < sizeof parts / sizeof *parts; t++) {
        shard_check c = {.space = space, .shards = parts[t]};
        size_t variants = 0, compiled = 0, cached = 0, skipped = 0;
        for (c.shard = 0; c.shard < c.shards; c.shard++) {
            kj_compile_all_options o = {.size = sizeof(kj_compile_all_options),
                                        .kernel = path,
                                        .arch = "sm_90",
                                        .threads = 2,
                                        .progress = on_shard_progress,
                                        .progress_user = &c,
                                        .shard = c.shard,
                                        .shards = c.shards};
            kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
            KJ_ASSERT_OK(kj_compile_all(rt, &o, &r));
            /* the part's own counts: indices shard, shard + N, ... below 36 */
            assert_int_equal(r.variants, (36 - c.shard + c.shards - 1) / c.shards);
            assert_int_equal(r.compiled + r.cached + r.skipped, r.variants);
            variants += r.variants;
            compiled += r.compiled;
            cached += r.cached;
            skipped += r.skipped;
        }
        printf("%u shards: %zu variants, %zu compiled, %zu cached, %zu skipped\n", c.shards, variants, compiled, cached,
               skipped);
        assert_int_equal(variants, 36);
        assert_int_equal(skipped, 1);
        assert_int_equal(compiled, t == 0 ? 35 : 0);
        assert_int_equal(cached, t == 0 ? 0 : 35);
        assert_false(c.wrong_shard);
        for (size_t i = 0; i < 36; i++) assert_int_equal(c.seen[i], i == 35 ? 0 : 1); /* A=6 B=6 skipped */
    }
    kj_space_free(space);
    assert_int_equal(log.warnings, 0);
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(NULL, NULL, KJ_TEST_IN_DIR(test_reduce_all_then_cached), KJ_TEST_IN_DIR(test_shards_cover_the_space),
             KJ_TEST_IN_DIR(test_requirements_and_failures), KJ_TEST_IN_DIR(test_tuned_families_all))
