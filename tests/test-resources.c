/* Resource use known without a GPU (compile suite): each kernel's registers, spills, stack and static
 * shared memory as ptxas (inside NVRTC) and nvJitLink report them, on kj_compile's result, again from
 * the cache on a hit, and for linked programs; ptxas's report is not a warning. The kernels of
 * tests/kernels/resources.cu have resources known in advance. */
#include "test_util.h"

#include "jit/resources.h"

static const char *kernel_path(const char *file) {
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", KJ_TEST_KERNELS, file);
    return path;
}

static const kj_resource_usage *find(const kj_compile_result *r, const char *symbol) {
    for (size_t i = 0; i < r->resource_count; i++)
        if (strcmp(kj_compile_result_resource(r, i)->symbol, symbol) == 0) return kj_compile_result_resource(r, i);
    fail_msg("no resources for %s among %zu kernels", symbol, r->resource_count);
    return NULL;
}

static void compile(const char *file, const char *entry, const char *const *options, size_t nopt,
                    kj_compile_result *r) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", kernel_path(file));
    kj_request req = {
        .size = sizeof(kj_request), .kernel = path, .entry = entry, .options = options, .option_count = nopt};
    if (kj_compile(kj_test_rt, &req, r) != KJ_OK) fail_msg("%s:%s: %s", file, entry, kj_last_error());
}

static void test_known_resources(void **state) {
    (void)state;
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
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
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
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
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    compile("resources.cu", "local_array", NULL, 0, &r);
    size_t count = r.resource_count;
    kj_resource_usage first[8];
    char symbols[8][64];
    assert_true(count <= 8);
    for (size_t i = 0; i < count; i++) {
        first[i] = *kj_compile_result_resource(&r, i);
        snprintf(symbols[i], sizeof symbols[i], "%s", kj_compile_result_resource(&r, i)->symbol);
    }
    compile("resources.cu", "local_array", NULL, 0, &r);
    assert_true(r.cache_hit);
    assert_int_equal(r.resource_count, count);
    for (size_t i = 0; i < count; i++) {
        const kj_resource_usage *u = kj_compile_result_resource(&r, i);
        assert_string_equal(u->symbol, symbols[i]);
        assert_int_equal(u->registers, first[i].registers);
        assert_int_equal(u->stack_bytes, first[i].stack_bytes);
        assert_int_equal(u->shared_static_bytes, first[i].shared_static_bytes);
        assert_int_equal(u->spill_store_bytes, first[i].spill_store_bytes);
        assert_int_equal(u->spill_load_bytes, first[i].spill_load_bytes);
    }
    assert_string_equal(r.entry_resources->symbol, "local_array");
    assert_null(kj_compile_result_resource(&r, count)); /* past the end */
    assert_null(kj_compile_result_resource(NULL, 0));
}

/* Linked programs report the linker's numbers: the device runtime's kernels are left out, and the
 * shared memory is the kernel's own (nvJitLink counts 1 KiB more on sm_90). */
static void test_linked_programs(void **state) {
    (void)state;
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    compile("jit_tail.cu", "parent", NULL, 0, &r);
    assert_true(r.linked);
    assert_non_null(r.entry_resources);
    assert_true(r.entry_resources->registers > 0);
    for (size_t i = 0; i < r.resource_count; i++)
        assert_null(strstr(kj_compile_result_resource(&r, i)->symbol, "cuda_device_runtime"));
    assert_null(strstr(r.log, "info    :"));

    const char *lib = kernel_path("link_lib.cu");
    char lib_path[PATH_MAX];
    snprintf(lib_path, sizeof lib_path, "%s", lib);
    const char *sources[] = {lib_path};
    char main_path[PATH_MAX];
    snprintf(main_path, sizeof main_path, "%s", kernel_path("link_main.cu"));
    kj_request req = {
        .size = sizeof(kj_request), .kernel = main_path, .entry = "tile_sums", .sources = sources, .source_count = 1};
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    assert_int_equal(r.source_count, 2);
    assert_int_equal(r.resource_count, 2);
    assert_string_equal(r.entry_resources->symbol, "tile_sums");
    assert_int_equal(r.entry_resources->shared_static_bytes, 256);
    assert_int_equal(find(&r, "blend")->shared_static_bytes, 0);
}

/* The reports as the tools print them (NVRTC 13's ptxas for sm_80, without a cumulative stack, and
 * nvJitLink 13's for sm_90 and sm_80), read without compiling. */
static void test_reading_the_reports(void **state) {
    (void)state;
    const char *ptxas =
        "ptxas info    : Overriding maximum register limit 256 for 'k' with  32 of maxrregcount option\n"
        "ptxas info    : 4 bytes gmem\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     800 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads\n"
        "ptxas info    : Used 32 registers, used 1 barriers, 256 bytes smem, 360 bytes cmem[0]\n"
        "ptxas info    : Compile time = 1.680 ms\n"
        "ptxas warning : Registers are spilled to local memory in function 'k', 40 bytes spill stores\n"
        "ptxas info    : Function properties for _Z6helperf\n"
        "ptxas         .     264 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
    kj__resources res = {0};
    char *kept = kj__resources_from_ptxas(ptxas, &res);
    assert_non_null(kept);
    assert_string_equal(kept,
                        "ptxas warning : Registers are spilled to local memory in function 'k', 40 bytes spill stores");
    free(kept);
    assert_int_equal(res.count, 1); /* the kernel, not the device function */
    kj_resource_usage k = res.items[0];
    assert_string_equal(k.symbol, "k");
    assert_int_equal(k.registers, 32);
    assert_int_equal(k.stack_bytes, 800);
    assert_int_equal(k.spill_store_bytes, 16);
    assert_int_equal(k.spill_load_bytes, 24);
    assert_int_equal(k.shared_static_bytes, 256);
    /* the linker's numbers replace the compiler's but for spills; 1 KiB of sm_90's is not the kernel's */
    const char *nvlink =
        "info    : 4 bytes gmem, 128 bytes cmem[3]\n"
        "info    : Function properties for 'k':\n"
        "info    : used 46 registers, used 1 barriers, 264 stack, 1280 bytes smem, 536 bytes cmem[0], "
        "8 bytes lmem\n"
        "info    : Function properties for 'devrt_kernel':\n"
        "info    : used 16 registers, used 1 barriers, 0 stack, 3080 bytes smem, 656 bytes cmem[0], 0 bytes lmem\n"
        "warning : a linker warning";
    kept = kj__resources_from_linker(nvlink, "sm_90", &res);
    assert_string_equal(kept, "warning : a linker warning");
    free(kept);
    assert_int_equal(res.count, 1);
    assert_int_equal(res.items[0].registers, 46);
    assert_int_equal(res.items[0].stack_bytes, 264 + 8);
    assert_int_equal(res.items[0].shared_static_bytes, 256);
    assert_int_equal(res.items[0].spill_store_bytes, 16);
    free(kj__resources_from_linker(nvlink, "sm_80", &res));
    assert_int_equal(res.items[0].shared_static_bytes, 1280);

    /* stored in a description and read back; lines that do not read so are no resources */
    kj__buf d = {0};
    kj__buf_puts(&d, "lowered: k\n");
    kj__resources_describe(&res, &d);
    kj__buf_puts(&d, "resources: 99999999999 1 2 3 4 overflow\nresources: 1 2 3 4 5\nresources: 1\n2 3 4 5 split\n"
                     "resources: 1 2 3 4 5 \nkernel: k (k.cu)\n");
    kj__resources back = {0};
    assert_int_equal(kj__resources_from_description(d.data, &back), 0);
    assert_int_equal(back.count, 1);
    assert_string_equal(back.items[0].symbol, "k");
    assert_memory_equal(&back.items[0].registers, &res.items[0].registers, 5 * sizeof(int));
    kj__buf_free(&d);
    kj__resources_free(&back);
    kj__resources_free(&res);
}

KJ_TEST_MAIN(kj_test_setup_workspace, kj_test_teardown, cmocka_unit_test(test_known_resources),
             cmocka_unit_test(test_spills), cmocka_unit_test(test_from_the_cache),
             cmocka_unit_test(test_linked_programs), cmocka_unit_test(test_reading_the_reports))
