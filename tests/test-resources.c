/* Resource use known without a GPU (compile suite): each kernel's registers, spills, stack and static
 * shared memory as ptxas (inside NVRTC) and nvJitLink report them, on kj_compile's result, again from
 * the cache on a hit, and for linked programs; ptxas's report is not a warning. The kernels of
 * tests/kernels/resources.cu have resources known in advance. */
#include "test_util.h"

static char *cache;
static kj_runtime *rt;

static int setup(void **state) {
    (void)state;
    cache = kj_test_tmpdir();
    rt = kj_test_runtime(cache, KJ_DEVICE_NONE, NULL);
    return cache && rt ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kj_runtime_destroy(rt);
    kj_test_rmdir(cache);
    return 0;
}

static const char *kernel_path(const char *file) {
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", KJ_TEST_KERNELS, file);
    return path;
}

static const kj_resource_usage *find(const kj_compile_result *r, const char *symbol) {
    for (size_t i = 0; i < r->resource_count; i++)
        if (strcmp(r->resources[i].symbol, symbol) == 0) return &r->resources[i];
    fail_msg("no resources for %s among %zu kernels", symbol, r->resource_count);
    return NULL;
}

static void compile(const char *file, const char *entry, const char *const *options, size_t nopt,
                    kj_compile_result *r) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", kernel_path(file));
    kj_request req = {.kernel = path, .entry = entry, .options = options, .option_count = nopt};
    if (kj_compile(rt, &req, r) != KJ_OK) fail_msg("%s:%s: %s", file, entry, kj_last_error());
}

static void test_known_resources(void **state) {
    (void)state;
    kj_compile_result r;
    compile("resources.cu", "shared_tile", NULL, 0, &r);
    assert_false(r.cache_hit);
    assert_int_equal(r.resource_count, 3); /* every kernel of the binary */
    assert_non_null(r.entry_resources);
    assert_string_equal(r.entry_resources->symbol, "shared_tile");
    assert_int_equal(r.entry_resources->shared_static_bytes, 256); /* float tile[64] */
    assert_true(r.entry_resources->registers > 0);
    const kj_resource_usage *local = find(&r, "local_array");
    assert_true(local->stack_bytes >= 1024); /* float table[256], indexed at run time */
    assert_int_equal(local->shared_static_bytes, 0);
    /* ptxas's report is not a warning */
    assert_null(strstr(r.log, "ptxas info"));
    assert_null(strstr(r.log, "bytes stack frame"));
}

static void test_spills(void **state) {
    (void)state;
    kj_compile_result r;
    compile("resources.cu", "many_live", NULL, 0, &r);
    assert_int_equal(r.entry_resources->spill_store_bytes, 0);
    const char *tight[] = {"-maxrregcount=24"};
    compile("resources.cu", "many_live", tight, 1, &r);
    assert_true(r.entry_resources->registers <= 24);
    assert_true(r.entry_resources->spill_store_bytes > 0);
    assert_true(r.entry_resources->spill_load_bytes > 0);
    /* a real ptxas warning still is one */
    const char *tighter[] = {"-maxrregcount=16"};
    compile("resources.cu", "many_live", tighter, 1, &r);
    assert_non_null(strstr(r.log, "ptxas warning"));
    assert_null(strstr(r.log, "ptxas info"));
}

/* A disk hit reports what the compile did: the numbers are stored with the entry. */
static void test_from_the_cache(void **state) {
    (void)state;
    kj_compile_result r;
    compile("resources.cu", "local_array", NULL, 0, &r);
    size_t count = r.resource_count;
    kj_resource_usage first[8];
    char symbols[8][64];
    assert_true(count <= 8);
    for (size_t i = 0; i < count; i++) {
        first[i] = r.resources[i];
        snprintf(symbols[i], sizeof symbols[i], "%s", r.resources[i].symbol);
    }
    compile("resources.cu", "local_array", NULL, 0, &r);
    assert_true(r.cache_hit);
    assert_int_equal(r.resource_count, count);
    for (size_t i = 0; i < count; i++) {
        assert_string_equal(r.resources[i].symbol, symbols[i]);
        assert_int_equal(r.resources[i].registers, first[i].registers);
        assert_int_equal(r.resources[i].stack_bytes, first[i].stack_bytes);
        assert_int_equal(r.resources[i].shared_static_bytes, first[i].shared_static_bytes);
        assert_int_equal(r.resources[i].spill_store_bytes, first[i].spill_store_bytes);
        assert_int_equal(r.resources[i].spill_load_bytes, first[i].spill_load_bytes);
    }
    assert_string_equal(r.entry_resources->symbol, "local_array");
}

/* Linked programs report the linker's numbers: the device runtime's kernels are left out, and the
 * shared memory is the kernel's own (nvJitLink counts 1 KiB more on sm_90). */
static void test_linked_programs(void **state) {
    (void)state;
    kj_compile_result r;
    compile("jit_tail.cu", "parent", NULL, 0, &r);
    assert_true(r.linked);
    assert_non_null(r.entry_resources);
    assert_true(r.entry_resources->registers > 0);
    for (size_t i = 0; i < r.resource_count; i++) assert_null(strstr(r.resources[i].symbol, "cuda_device_runtime"));
    assert_null(strstr(r.log, "info    :"));

    const char *lib = kernel_path("link_lib.cu");
    char lib_path[PATH_MAX];
    snprintf(lib_path, sizeof lib_path, "%s", lib);
    const char *sources[] = {lib_path};
    char main_path[PATH_MAX];
    snprintf(main_path, sizeof main_path, "%s", kernel_path("link_main.cu"));
    kj_request req = {.kernel = main_path, .entry = "tile_sums", .sources = sources, .source_count = 1};
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_int_equal(r.source_count, 2);
    assert_int_equal(r.resource_count, 2);
    assert_string_equal(r.entry_resources->symbol, "tile_sums");
    assert_int_equal(r.entry_resources->shared_static_bytes, 256);
    assert_int_equal(find(&r, "blend")->shared_static_bytes, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_resources),
        cmocka_unit_test(test_spills),
        cmocka_unit_test(test_from_the_cache),
        cmocka_unit_test(test_linked_programs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
