/* Several entries of one program in one compile (kj_request.entries), on the stub driver: a template
 * with two instances is lowered by one NVRTC compile into one binary, stored as one cache entry; each
 * instance then has its own handle, loaded from the one module, and both launch. The key covers the
 * list and its order. (A malformed list: tests/test-bad-input-api.c.) */
#include "test_util.h"

#include <dirent.h>
#include <math.h>

static const char *const source = "template <typename T, int BLOCK>\n"
                                  "__global__ void scale(T *x, T a, int n) {\n"
                                  "    int i = blockIdx.x * BLOCK + threadIdx.x;\n"
                                  "    if (i < n) x[i] *= a;\n"
                                  "}\n";
static const char *const instances[] = {"scale<float,256>", "scale<double,256>"};

static kj_request request(const char *const *entries, size_t n, const char *entry) {
    kj_request r = {.size = sizeof(kj_request),
                    .kernel = "scale.cu",
                    .source_text = source,
                    .entry = entry,
                    .entries = entries,
                    .entry_count = n};
    return r;
}

/* The .cubin entries of the cache for sm_90. */
static size_t cache_entries(void) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sm_90", kj_test_dir);
    DIR *d = opendir(path);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".cubin") != NULL;
    if (d) closedir(d);
    return n;
}

static uint64_t compiles(kj_runtime *rt) {
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    return st.compiles;
}

static void test_one_compile_one_entry(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_NONE, NULL);
    kj_request req = request(instances, 2, NULL);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_false(r.cache_hit);
    assert_int_equal(compiles(rt), 1);
    assert_int_equal(cache_entries(), 1);
    /* both instances are in the binary, each entry's symbol its lowered name */
    assert_int_equal(r.entry_symbol_count, 2);
    assert_string_equal(r.entry_symbols[0], "_Z5scaleIfLi256EEvPT_S0_i");
    assert_string_equal(r.entry_symbols[1], "_Z5scaleIdLi256EEvPT_S0_i");
    assert_int_equal(r.resource_count, 2);
    assert_string_equal(r.entry_resources->symbol, r.entry_symbols[0]);
    char key[33];
    snprintf(key, sizeof key, "%s", r.key);
    /* the other instance: the same key and entry, from the disk */
    req.entry = instances[1];
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_true(r.cache_hit);
    assert_string_equal(r.key, key);
    assert_string_equal(r.entry_resources->symbol, "_Z5scaleIdLi256EEvPT_S0_i");
    assert_int_equal(compiles(rt), 1);
    assert_int_equal(cache_entries(), 1);
    /* the key covers the list in its order, and a list is not the entry alone */
    const char *const reversed[] = {instances[1], instances[0]};
    kj_request other = request(reversed, 2, NULL);
    KJ_ASSERT_OK(kj_compile(rt, &other, &r));
    assert_string_not_equal(r.key, key);
    assert_string_equal(r.entry_resources->symbol, "_Z5scaleIdLi256EEvPT_S0_i");
    kj_request alone = request(NULL, 0, instances[0]);
    KJ_ASSERT_OK(kj_compile(rt, &alone, &r));
    assert_string_not_equal(r.key, key);
    assert_int_equal(r.entry_symbol_count, 1);
    assert_int_equal(compiles(rt), 3);
    kj_runtime_destroy(rt);

    /* a new runtime: each instance's lowered name comes from the stored entry */
    rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_NONE, NULL);
    req.entry = instances[1];
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_true(r.cache_hit);
    assert_string_equal(r.entry_resources->symbol, "_Z5scaleIdLi256EEvPT_S0_i");
    assert_int_equal(compiles(rt), 0);
    kj_runtime_destroy(rt);
}

/* Metadata entries (extern "C") compile together too: the whole file, both in one binary. */
static void test_metadata_entries(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_NONE, NULL);
    const char *const both[] = {"reduce_fast", "reduce_shared"};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .entries = both, .entry_count = 2};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_int_equal(r.entry_symbol_count, 2);
    assert_string_equal(r.entry_symbols[1], "reduce_shared");
    int fast = 0, shared = 0;
    for (size_t i = 0; i < r.resource_count; i++) {
        fast |= strcmp(kj_compile_result_resource(&r, i)->symbol, "reduce_fast") == 0;
        shared |= strcmp(kj_compile_result_resource(&r, i)->symbol, "reduce_shared") == 0;
    }
    assert_true(fast && shared);
    const char *const unknown[] = {"reduce_fast", "reduce_nope"};
    req.entries = unknown;
    assert_int_equal(kj_compile(rt, &req, &r), KJ_ERR_UNKNOWN_ENTRY);
    assert_non_null(strstr(kj_last_error(), "unknown entry 'reduce_nope' for reduce"));
    kj_runtime_destroy(rt);
}

/* Each instance gets its own handle from the one module, and both launch. */
static void test_both_instances_launch(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, NULL);
    kj_request req = request(instances, 2, NULL);
    kj_kernel *kf, *kd;
    kj_origin of, od;
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &kf, &of));
    req.entry = instances[1];
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &kd, &od));
    assert_ptr_not_equal(kf, kd);
    assert_int_equal(od, KJ_ORIGIN_MEMORY); /* the module the first loaded */
    assert_int_equal(compiles(rt), of == KJ_ORIGIN_COMPILED);
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(kd, &info));
    assert_string_equal(info.entry, "scale<double,256>");
    assert_string_equal(info.lowered_name, "_Z5scaleIdLi256EEvPT_S0_i");

    enum { N = 100 };
    float xf[N];
    double xd[N];
    for (int i = 0; i < N; i++) xf[i] = (float)i, xd[i] = i;
    kj_devptr df, dd;
    KJ_ASSERT_OK(kj_mem_alloc(rt, sizeof xf, &df));
    KJ_ASSERT_OK(kj_mem_alloc(rt, sizeof xd, &dd));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, df, xf, sizeof xf));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, dd, xd, sizeof xd));
    float af = 0.5f;
    double ad = -3;
    int n = N;
    void *args_f[] = {&df, &af, &n}, *args_d[] = {&dd, &ad, &n};
    kj_launch_config cfg = {.size = sizeof cfg, .grid = {1, 1, 1}, .block = {256, 1, 1}};
    KJ_ASSERT_OK(kj_kernel_launch(kf, &cfg, args_f));
    KJ_ASSERT_OK(kj_kernel_launch(kd, &cfg, args_d));
    KJ_ASSERT_OK(kj_memcpy_dtoh(rt, xf, df, sizeof xf));
    KJ_ASSERT_OK(kj_memcpy_dtoh(rt, xd, dd, sizeof xd));
    for (int i = 0; i < N; i++) {
        if (xf[i] != 0.5f * (float)i) fail_msg("float instance: x[%d] = %g", i, (double)xf[i]);
        if (xd[i] != -3.0 * i) fail_msg("double instance: x[%d] = %g", i, xd[i]);
    }
    kj_mem_free(rt, df);
    kj_mem_free(rt, dd);
    /* asking again: the same handles, from memory */
    req.entry = NULL;
    kj_kernel *again;
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &again, &of));
    assert_ptr_equal(again, kf);
    assert_int_equal(of, KJ_ORIGIN_MEMORY);
    kj_runtime_destroy(rt);
}

/* A name NVRTC cannot lower among the entries: nothing is compiled or stored. */
static void test_entry_nvrtc_cannot_find(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_NONE, NULL);
    const char *const absent[] = {instances[0], "scale<float>"};
    kj_request req = request(absent, 2, NULL);
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_UNKNOWN_ENTRY);
    assert_non_null(strstr(kj_last_error(), "or another of the entries"));
    assert_int_equal(cache_entries(), 0);
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(NULL, NULL, KJ_TEST_IN_DIR(test_one_compile_one_entry), KJ_TEST_IN_DIR(test_metadata_entries),
             KJ_TEST_IN_DIR(test_both_instances_launch), KJ_TEST_IN_DIR(test_entry_nvrtc_cannot_find))
