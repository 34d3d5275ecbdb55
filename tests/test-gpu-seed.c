/* A program's first kj_reduce from a seed, on the GPU (exits 77 without one): the kernels kj_reduce
 * runs on this device (its own choice for each size, learned by a runtime of its own) are built ahead
 * of time by `kernjit seed` for the device's target; then a fresh runtime, its cache empty and the seed
 * listed, reduces fresh random data at each size: every kernel it gets comes from the seed, nothing
 * is compiled (kj_stats), nothing lands in its cache, and every result matches the CPU.
 * Usage: test-gpu-seed path/to/kernjit */
#include "test_util.h"

#include <math.h>

static const char *kernjit;

static kj_runtime *runtime(const char *cache, const char *seeds) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.cache_dir = cache;
    o.seed_dirs = seeds;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    assert_true(kj_runtime_has_device(rt));
    return rt;
}

/* Appends "V" to a comma-separated list of values unless it is there. */
static void add_value(char *list, size_t size, unsigned v) {
    char item[16];
    snprintf(item, sizeof item, "%u", v);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == strlen(item) && strncmp(p, item, n) == 0) return;
        p += n + (p[n] == ',');
    }
    size_t len = strlen(list);
    snprintf(list + len, size - len, "%s%s", len ? "," : "", item);
}

static void test_first_reduce_from_the_seed(void **state) {
    (void)state;
    size_t sizes[4], count = kj_test_sizes(sizes), most = sizes[count - 1];
    float *host = malloc(most * sizeof *host);
    assert_non_null(host);
    kj_devptr in;

    /* what kj_reduce runs here at each size: a runtime of its own, reading no seed */
    kj_runtime *rt = runtime(kj_test_path(kj_test_dir, "scratch"), "");
    char arch[32], blocks[128] = "", coarse[128] = "";
    snprintf(arch, sizeof arch, "%s", kj_runtime_arch(rt));
    KJ_ASSERT_OK(kj_mem_alloc(rt, most * sizeof *host, &in));
    KJ_ASSERT_OK(kj_memset_u8(rt, in, 0, most * sizeof *host));
    for (size_t i = 0; i < count; i++) {
        float result;
        kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = KJ_REDUCE_OPTIONS_INIT;
        o.report = &rep;
        KJ_ASSERT_OK(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, in, sizes[i], &result, &o));
        add_value(blocks, sizeof blocks, rep.block_size);
        add_value(coarse, sizeof coarse, rep.coarse_factor);
        printf("n = %zu: %s, BLOCK_SIZE=%u COARSE_FACTOR=%u\n", sizes[i], rep.entry, rep.block_size, rep.coarse_factor);
    }
    kj_mem_free(rt, in);
    kj_runtime_destroy(rt);

    /* the seed, as an application makes it: kernjit seed, for this device's target */
    char cmd[3 * PATH_MAX], seed[PATH_MAX];
    snprintf(seed, sizeof seed, "%s/seed", kj_test_dir);
    snprintf(cmd, sizeof cmd,
             "KERNJIT_SEED_PATH= '%s' -q seed '%s' reduce:reduce_fast -D OP=sum -D T=f32 "
             "-D BLOCK_SIZE=%s -D COARSE_FACTOR=%s --arch %s",
             kernjit, seed, blocks, coarse, arch);
    printf("%s\n", cmd);
    assert_int_equal(system(cmd), 0);

    /* a program's first kj_reduce: its cache empty, the seed listed */
    const char *cache = kj_test_path(kj_test_dir, "cache");
    rt = runtime(cache, seed);
    KJ_ASSERT_OK(kj_mem_alloc(rt, most * sizeof *host, &in));
    for (size_t i = 0; i < count; i++) {
        size_t n = sizes[i];
        kj_test_fill_reduction(host, KJ_TYPE_F32, KJ_OP_SUM, n, 0, &kj_test_rng);
        KJ_ASSERT_OK(kj_memcpy_htod(rt, in, host, n * sizeof *host));
        float want, got = NAN;
        double abs_sum;
        KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_F32, host, n, &want, &abs_sum));
        kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = KJ_REDUCE_OPTIONS_INIT;
        o.report = &rep;
        KJ_ASSERT_OK(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, in, n, &got, &o));
        /* the first call of a configuration gets its kernel from the seed, later ones from memory */
        if (rep.origin != KJ_ORIGIN_SEED && rep.origin != KJ_ORIGIN_MEMORY)
            fail_msg("n = %zu: the kernel came from %s, not the seed", n, kj_origin_name(rep.origin));
        if (i == 0) assert_int_equal(rep.origin, KJ_ORIGIN_SEED);
        double tol = kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, n, want, abs_sum, &rep);
        if (!(fabs((double)got - (double)want) <= tol))
            fail_msg("n = %zu: GPU %.9g, CPU %.9g, tolerance %.3g", n, got, want, tol);
    }
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    printf("%llu seed hits, %llu compiles, %llu disk hits\n", (unsigned long long)st.seed_hits,
           (unsigned long long)st.compiles, (unsigned long long)st.disk_hits);
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.misses, 0);
    assert_int_equal(st.disk_hits, 0);
    assert_true(st.seed_hits >= 1);
    uint64_t entries = 1;
    KJ_ASSERT_OK(kj_cache_usage(rt, &entries, NULL, NULL));
    assert_int_equal(entries, 0); /* read from the seed, not copied into the cache */
    kj_mem_free(rt, in);
    kj_runtime_destroy(rt);
    free(host);
}

int main(int argc, char **argv) {
    kernjit = argc > 1 ? argv[1] : "kernjit";
    kj_test_require_gpu();
    kj_test_rng = kj_test_seed();
    const struct CMUnitTest tests[] = {KJ_TEST_IN_DIR(test_first_reduce_from_the_seed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
