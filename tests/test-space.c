/* Variant spaces (src/tune/space.c): enumeration of the tunables, pinned and restricted macros,
 * requirements leaving variants out, the limits; and the thread pool (src/base/pool.c). No NVRTC. */
#include "test_util.h"

#include <pthread.h>

#include "base/pool.h"
#include "tune/space.h"

static const char require_src[] = "//@kernjit entry k\n"
                                  "//@kernjit param T f32 f64 = f32\n"
                                  "//@kernjit tune TILE 8 16 32 = 16\n"
                                  "//@kernjit tune ROWS 1 2 4 8 16 = 4\n"
                                  "//@kernjit require TILE % ROWS == 0 && TILE * ROWS <= 256\n"
                                  "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = TILE * ROWS; }\n";

/* The fixture's folder, holding the kernels of the tests that find them by name. */
static int setup(void **state) {
    if (kj_test_setup_dir(state) != 0) return -1;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/req.cu", kj_test_dir);
    kj_test_write(path, require_src, strlen(require_src));
    const char *big = "//@kernjit entry k\n//@kernjit tune A 1..1000 = 1\n//@kernjit tune B 1..100 = 1\n"
                      "extern \"C\" __global__ void k() {}\n";
    snprintf(path, sizeof path, "%s/big.cu", kj_test_dir);
    kj_test_write(path, big, strlen(big));
    setenv("KERNJIT_PATH", kj_test_dir, 1);
    return 0;
}

static int teardown(void **state) {
    unsetenv("KERNJIT_PATH");
    return kj_test_teardown(state);
}

static const char *define_of(const kj_variant *v, const char *name) {
    for (size_t i = 0; i < v->define_count; i++)
        if (strcmp(v->defines[i].name, name) == 0) return v->defines[i].value;
    return NULL;
}

/* The reduction: BLOCK_SIZE x COARSE_FACTOR, 6 x 6, params at their defaults, last dimension fastest;
 * WAVES, a `launch` parameter (no new binary), held at its default for an offline build. */
static void test_reduce_space(void **state) {
    (void)state;
    kj_space *s;
    KJ_ASSERT_OK(kj_space_create(NULL, "reduce", NULL, 0, &s));
    assert_int_equal(kj_space_count(s), 36);
    assert_int_equal(kj_space_valid_count(s), 36);
    assert_int_equal(kj_space_dim_count(s), 2);
    assert_string_equal(kj_space_dim_name(s, 0), "BLOCK_SIZE");
    assert_string_equal(kj_space_dim_name(s, 1), "COARSE_FACTOR");
    assert_int_equal(kj_space_dim_size(s, 0), 6);
    assert_string_equal(kj_space_dim_value(s, 0, 0), "32");
    assert_string_equal(kj_space_dim_value(s, 0, 5), "1024");
    assert_null(kj_space_dim_value(s, 0, 6));
    assert_null(kj_space_dim_name(s, 2));
    kj_variant v = KJ_VARIANT_INIT;
    KJ_ASSERT_OK(kj_space_variant(s, 7, &v)); /* 7 = 1 * 6 + 1 */
    assert_int_equal(v.coords[0], 1);
    assert_int_equal(v.coords[1], 1);
    assert_string_equal(v.label, "BLOCK_SIZE=64 COARSE_FACTOR=2");
    assert_null(v.skipped);
    assert_int_equal(v.define_count, 5);
    /* sorted by name, with the params at their defaults */
    assert_string_equal(v.defines[0].name, "BLOCK_SIZE");
    assert_string_equal(v.defines[1].name, "COARSE_FACTOR");
    assert_string_equal(v.defines[2].name, "OP");
    assert_string_equal(v.defines[3].name, "T");
    assert_string_equal(v.defines[4].name, "WAVES");
    assert_string_equal(define_of(&v, "WAVES"), "1");
    assert_string_equal(define_of(&v, "OP"), "sum");
    assert_string_equal(define_of(&v, "T"), "f32");
    /* every combination once */
    int seen[6][6] = {{0}};
    for (size_t i = 0; i < kj_space_count(s); i++) {
        KJ_ASSERT_OK(kj_space_variant(s, i, &v));
        seen[v.coords[0]][v.coords[1]]++;
        assert_int_equal(kj__space_index(s, v.coords), i);
        assert_string_equal(define_of(&v, "BLOCK_SIZE"), kj_space_dim_value(s, 0, v.coords[0]));
    }
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) assert_int_equal(seen[a][b], 1);
    assert_int_equal(kj_space_variant(s, 36, &v), KJ_ERR_USAGE);
    assert_string_equal(kj__space_fixed(s), "OP=sum T=f32");
    kj_space_free(s);
    kj_space_free(NULL);
}

static void test_pin_and_restrict(void **state) {
    (void)state;
    kj_space *s;
    kj_define pin[] = {{"BLOCK_SIZE", "256"}, {"T", "f64"}};
    KJ_ASSERT_OK(kj_space_create(NULL, "reduce", pin, 2, &s));
    assert_int_equal(kj_space_count(s), 6);
    assert_int_equal(kj_space_dim_count(s), 1);
    assert_string_equal(kj_space_dim_name(s, 0), "COARSE_FACTOR");
    /* a tunable pinned by the caller is part of the fixed key; params always are */
    assert_string_equal(kj__space_fixed(s), "BLOCK_SIZE=256 OP=sum T=f64");
    kj_space_free(s);

    kj_define restrict_[] = {{"BLOCK_SIZE", "1024,128"}, {"COARSE_FACTOR", "4"}};
    KJ_ASSERT_OK(kj_space_create(NULL, "reduce", restrict_, 2, &s));
    assert_int_equal(kj_space_count(s), 2);
    assert_string_equal(kj_space_dim_value(s, 0, 0), "1024"); /* in the order given */
    kj_variant v = KJ_VARIANT_INIT;
    KJ_ASSERT_OK(kj_space_variant(s, 1, &v));
    assert_string_equal(v.label, "BLOCK_SIZE=128");
    assert_string_equal(define_of(&v, "COARSE_FACTOR"), "4");
    assert_string_equal(kj__space_fixed(s), "COARSE_FACTOR=4 OP=sum T=f32");
    kj_space_free(s);

    /* a param with several values varies too (offline builds of several operators) */
    kj_define ops[] = {{"OP", "sum,max,min"}};
    KJ_ASSERT_OK(kj_space_create(NULL, "reduce", ops, 1, &s));
    assert_int_equal(kj_space_count(s), 108);
    assert_int_equal(kj_space_dim_count(s), 3);
    assert_string_equal(kj_space_dim_name(s, 0), "OP"); /* metadata order: OP T BLOCK_SIZE COARSE_FACTOR */
    kj_space_free(s);
    /* ... but not for tuning */
    assert_int_equal(kj__space_create(NULL, "reduce", ops, 1, NULL, 1, 1, &s), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "one value"));

    /* the tuner pins tunables an entry ignores: they leave the space and the key; it varies WAVES
     * (pow2 1..64) too */
    static const char *const pin_coarse[] = {"COARSE_FACTOR", NULL};
    KJ_ASSERT_OK(kj__space_create(NULL, "reduce", NULL, 0, pin_coarse, 1, 1, &s));
    assert_int_equal(kj_space_count(s), 6 * 7);
    assert_string_equal(kj_space_dim_name(s, 1), "WAVES");
    kj_space_free(s);
    KJ_ASSERT_OK(kj__space_create(NULL, "reduce", NULL, 0, pin_coarse, 1, 0, &s));
    assert_int_equal(kj_space_count(s), 6);
    KJ_ASSERT_OK(kj_space_variant(s, 0, &v));
    assert_string_equal(define_of(&v, "COARSE_FACTOR"), "8");
    assert_string_equal(kj__space_fixed(s), "OP=sum T=f32");
    kj_space_free(s);
}

/* The other tuned families. transpose: TILE_DIM x BLOCK_ROWS x GROUP, 4 x 6 x 5, of which the
 * `require` lines (TILE_DIM % BLOCK_ROWS == 0, TILE_DIM * BLOCK_ROWS <= 1024) leave out 16x32, 64x32,
 * 128x16 and 128x32 (with each GROUP); keyed by ELEM_BYTES. vector_add: BLOCK_SIZE x UNROLL x WAVES, 5 x 4 x 11, all valid; keyed by T. */
static void test_family_spaces(void **state) {
    (void)state;
    kj_space *s;
    KJ_ASSERT_OK(kj__space_create(NULL, "transpose", NULL, 0, NULL, 1, 1, &s));
    assert_int_equal(kj_space_count(s), 24 * 5);
    assert_int_equal(kj_space_valid_count(s), 20 * 5);
    assert_int_equal(kj_space_dim_count(s), 3);
    assert_string_equal(kj_space_dim_name(s, 0), "TILE_DIM");
    assert_string_equal(kj_space_dim_name(s, 1), "BLOCK_ROWS");
    assert_string_equal(kj_space_dim_name(s, 2), "GROUP");
    assert_string_equal(kj__space_fixed(s), "ELEM_BYTES=4");
    for (size_t i = 0; i < kj_space_count(s); i++) {
        kj_variant v = KJ_VARIANT_INIT;
        KJ_ASSERT_OK(kj_space_variant(s, i, &v));
        long tile = strtol(define_of(&v, "TILE_DIM"), NULL, 10), rows = strtol(define_of(&v, "BLOCK_ROWS"), NULL, 10);
        int ok = tile % rows == 0 && tile * rows <= 1024;
        if (ok) assert_null(v.skipped);
        else assert_non_null(v.skipped);
    }
    kj_space_free(s);
    kj_define eight[] = {{"ELEM_BYTES", "8"}};
    KJ_ASSERT_OK(kj__space_create(NULL, "transpose", eight, 1, NULL, 1, 1, &s));
    assert_string_equal(kj__space_fixed(s), "ELEM_BYTES=8");
    kj_space_free(s);

    KJ_ASSERT_OK(kj__space_create(NULL, "vector_add", NULL, 0, NULL, 1, 1, &s));
    assert_int_equal(kj_space_count(s), 220);
    assert_int_equal(kj_space_valid_count(s), 220);
    assert_int_equal(kj_space_dim_count(s), 3);
    assert_string_equal(kj_space_dim_name(s, 0), "BLOCK_SIZE");
    assert_string_equal(kj_space_dim_name(s, 1), "UNROLL");
    assert_string_equal(kj_space_dim_name(s, 2), "WAVES");
    assert_string_equal(kj_space_dim_value(s, 0, 0), "64");
    assert_string_equal(kj__space_fixed(s), "T=f32");
    kj_space_free(s);
}

static void test_bad_macros(void **state) {
    (void)state;
    kj_space *s = NULL;
    kj_define unknown[] = {{"FOO", "1"}};
    assert_int_equal(kj_space_create(NULL, "reduce", unknown, 1, &s), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "unknown macro FOO"));
    kj_define bad[] = {{"BLOCK_SIZE", "256,300"}};
    assert_int_equal(kj_space_create(NULL, "reduce", bad, 1, &s), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "BLOCK_SIZE=300 is not allowed"));
    assert_non_null(strstr(kj_last_error(), "32 64 128 256 512 1024"));
    kj_define twice[] = {{"OP", "sum"}, {"OP", "max"}};
    assert_int_equal(kj_space_create(NULL, "reduce", twice, 2, &s), KJ_ERR_INVALID_DEFINE);
    kj_define repeated[] = {{"OP", "sum,sum"}};
    assert_int_equal(kj_space_create(NULL, "reduce", repeated, 1, &s), KJ_ERR_INVALID_DEFINE);
    kj_define empty[] = {{"OP", "sum,"}};
    assert_int_equal(kj_space_create(NULL, "reduce", empty, 1, &s), KJ_ERR_INVALID_DEFINE);
    assert_int_equal(kj_space_create(NULL, "nosuch", NULL, 0, &s), KJ_ERR_UNKNOWN_KERNEL);
    assert_null(s);
}

/* A kernel with a `require` line: the variants that break it stay in the space, marked skipped. */
static void test_requirements_filter(void **state) {
    (void)state;
    kj_space *s;
    KJ_ASSERT_OK(kj_space_create(NULL, "req", NULL, 0, &s));
    assert_int_equal(kj_space_count(s), 15);
    assert_int_equal(kj_space_valid_count(s), 13);
    size_t skipped = 0;
    for (size_t i = 0; i < kj_space_count(s); i++) {
        kj_variant v = KJ_VARIANT_INIT;
        KJ_ASSERT_OK(kj_space_variant(s, i, &v));
        long tile = strtol(define_of(&v, "TILE"), NULL, 10), rows = strtol(define_of(&v, "ROWS"), NULL, 10);
        int ok = tile % rows == 0 && tile * rows <= 256;
        if (ok) {
            assert_null(v.skipped);
        } else {
            assert_non_null(v.skipped);
            assert_non_null(strstr(v.skipped, "TILE % ROWS == 0 && TILE * ROWS <= 256"));
            skipped++;
        }
    }
    assert_int_equal(skipped, 2); /* TILE=8 ROWS=16, TILE=32 ROWS=16 */
    kj_space_free(s);
    /* pinning into a broken combination leaves nothing valid, without an error */
    kj_define pin[] = {{"ROWS", "16"}};
    KJ_ASSERT_OK(kj_space_create(NULL, "req", pin, 1, &s));
    assert_int_equal(kj_space_count(s), 3);
    assert_int_equal(kj_space_valid_count(s), 1);
    kj_space_free(s);
}

static void test_too_big(void **state) {
    (void)state;
    kj_space *s = NULL;
    assert_int_equal(kj_space_create(NULL, "big", NULL, 0, &s), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "pin or restrict"));
    kj_define pin[] = {{"B", "1,2,3"}};
    KJ_ASSERT_OK(kj_space_create(NULL, "big", pin, 1, &s));
    assert_int_equal(kj_space_count(s), 3000);
    kj_space_free(s);
}

/* ---- the pool -------------------------------------------------------------------------------- */

typedef struct {
    pthread_mutex_t lock;
    int runs[200];
    int dones[200];
    size_t done_count;
    pthread_t caller;
    int wrong_thread;
} pool_check;

static void task(size_t i, void *user) {
    pool_check *c = user;
    pthread_mutex_lock(&c->lock);
    c->runs[i]++;
    pthread_mutex_unlock(&c->lock);
}

static void done(size_t i, void *user) {
    pool_check *c = user;
    c->dones[i]++;
    c->done_count++;
    if (!pthread_equal(pthread_self(), c->caller)) c->wrong_thread = 1;
}

static void test_pool(void **state) {
    (void)state;
    for (unsigned threads = 0; threads <= 8; threads += 4) {
        pool_check c;
        memset(&c, 0, sizeof c);
        pthread_mutex_init(&c.lock, NULL);
        c.caller = pthread_self();
        kj__pool_run(threads, 200, task, done, &c);
        for (int i = 0; i < 200; i++) {
            assert_int_equal(c.runs[i], 1);
            assert_int_equal(c.dones[i], 1);
        }
        assert_int_equal(c.done_count, 200);
        assert_false(c.wrong_thread);
        pthread_mutex_destroy(&c.lock);
    }
    kj__pool_run(4, 0, task, done, NULL); /* nothing to do */
    assert_true(kj__pool_default_threads() >= 1);
}

KJ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_reduce_space), cmocka_unit_test(test_pin_and_restrict),
             cmocka_unit_test(test_bad_macros), cmocka_unit_test(test_requirements_filter),
             cmocka_unit_test(test_too_big), cmocka_unit_test(test_pool), cmocka_unit_test(test_family_spaces))
