/* Programs of several sources (compile suite: NVRTC and nvJitLink, no GPU): each source compiled
 * apart and linked by nvJitLink, keyed as one program (every source, its headers and their order),
 * the entry found in any source, the same macros in every one, and the refusals: a missing source,
 * an entry in none, a symbol undefined or defined twice, a second metadata block. */
#include "test_util.h"

static const char *at(const char *rel) { return kj_test_path(kj_test_dir, rel); }

static void put(const char *rel, const char *text) { kj_test_put(kj_test_dir, rel, text); }

/* Copies tests/kernels/<file> into the work folder, under the same name. */
static void copy_kernel(const char *file) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", KJ_TEST_KERNELS, file);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    put(file, text);
}

/* kj_compile of the work folder's files (relative names), in order; entry may be NULL. */
static kj_status compile_files(const char *entry, const char *const *files, size_t count, const kj_define *d, size_t nd,
                               kj_compile_result *r) {
    static char paths[8][PATH_MAX];
    const char *more[8];
    assert_true(count >= 1 && count <= 8);
    for (size_t i = 0; i < count; i++) snprintf(paths[i], PATH_MAX, "%s", at(files[i]));
    for (size_t i = 1; i < count; i++) more[i - 1] = paths[i];
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = paths[0],
                      .entry = entry,
                      .sources = more,
                      .source_count = count - 1,
                      .defines = d,
                      .define_count = nd};
    return kj_compile(kj_test_rt, &req, r);
}

static void compile_ok(const char *entry, const char *const *files, size_t count, kj_compile_result *r) {
    if (compile_files(entry, files, count, NULL, 0, r) != KJ_OK) fail_msg("%s", kj_last_error());
}

static void setup_program(void) {
    copy_kernel("link_main.cu");
    copy_kernel("link_lib.cu");
    copy_kernel("link_lib.cuh");
}

static void test_two_sources_linked(void **state) {
    (void)state;
    setup_program();
    const char *files[] = {"link_main.cu", "link_lib.cu"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    compile_ok("blend", files, 2, &r);
    assert_false(r.cache_hit);
    assert_int_equal(r.source_count, 2);
    assert_false(r.linked); /* no kernel launches a kernel: no device runtime */
    assert_true(r.link_ms > 0);
    compile_ok("blend", files, 2, &r);
    assert_true(r.cache_hit);
    /* the entry is found in whichever source has it, in any order */
    const char *reversed[] = {"link_lib.cu", "link_main.cu"};
    compile_ok("tile_sums", reversed, 2, &r);
    assert_string_equal(r.entry_resources->symbol, "tile_sums");
    /* one source alone does not link: its symbols are undefined */
    const char *alone[] = {"link_main.cu"};
    assert_int_equal(compile_files("blend", alone, 1, NULL, 0, &r), KJ_ERR_COMPILE);
}

/* The key covers every source, every header of each, and their order. */
static void test_stale_keys(void **state) {
    (void)state;
    setup_program();
    put("extra.cu", "__device__ int extra_value = 7;\n");
    const char *files[] = {"link_main.cu", "link_lib.cu"};
    kj_compile_result a = KJ_COMPILE_RESULT_INIT, r = KJ_COMPILE_RESULT_INIT;
    compile_ok("blend", files, 2, &a);
    char key[33];
    snprintf(key, sizeof key, "%s", a.key);

    /* the second source edited: a new key, compiled again */
    put("link_lib.cu", "#include \"link_lib.cuh\"\n__device__ float lib_weight = LIB_WEIGHT;\n"
                       "__device__ float lib_blend(float x, float y) { return 2.0f * x - y; }\n");
    compile_ok("blend", files, 2, &r);
    assert_string_not_equal(r.key, key);
    assert_false(r.cache_hit);
    copy_kernel("link_lib.cu");
    compile_ok("blend", files, 2, &r);
    assert_string_equal(r.key, key);
    assert_true(r.cache_hit);

    /* a header of the second source edited */
    put("link_lib.cuh", "#define LIB_WEIGHT 0.25f\n");
    compile_ok("blend", files, 2, &r);
    assert_string_not_equal(r.key, key);
    assert_false(r.cache_hit);
    copy_kernel("link_lib.cuh");

    /* another order, another set: other keys */
    const char *reversed[] = {"link_lib.cu", "link_main.cu"};
    compile_ok("blend", reversed, 2, &r);
    assert_string_not_equal(r.key, key);
    const char *three[] = {"link_main.cu", "link_lib.cu", "extra.cu"};
    compile_ok("blend", three, 3, &r);
    assert_string_not_equal(r.key, key);
    assert_int_equal(r.source_count, 3);
    compile_ok("blend", files, 2, &r);
    assert_string_equal(r.key, key);
    assert_true(r.cache_hit);
}

/* Every source gets the request's macros and options. */
static void test_same_macros_everywhere(void **state) {
    (void)state;
    put("m/a.cu", "#ifndef SCALE\n#error a.cu was not given SCALE\n#endif\n__device__ int scaled(int x);\n"
                  "extern \"C\" __global__ void k(int *o) { o[0] = scaled(o[0]) + SCALE; }\n");
    put("m/b.cu", "#ifndef SCALE\n#error b.cu was not given SCALE\n#endif\n"
                  "__device__ int scaled(int x) { return x * SCALE; }\n");
    const char *files[] = {"m/a.cu", "m/b.cu"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    kj_define d = {"SCALE", "3"};
    KJ_ASSERT_OK(compile_files(NULL, files, 2, &d, 1, &r)); /* k, the only kernel, found without naming it */
    assert_int_equal(compile_files(NULL, files, 2, NULL, 0, &r), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "a.cu was not given SCALE"));
}

/* A pre-included header reaches every source, each in its own folder (so under its own name for it),
 * and is in the key. */
static void test_pre_include_in_every_source(void **state) {
    (void)state;
    put("pre/one/a.cu", "__device__ int offset(int x);\n"
                        "extern \"C\" __global__ void k(int *o) { o[0] = offset(o[0]) + PRE; }\n");
    put("pre/two/b.cu", "__device__ int offset(int x) { return x + PRE; }\n");
    put("pre/one/pre.h", "#define PRE 1\n");
    char option[PATH_MAX + 20], a[PATH_MAX], b[PATH_MAX];
    snprintf(option, sizeof option, "--pre-include=%s", at("pre/one/pre.h"));
    snprintf(a, sizeof a, "%s", at("pre/one/a.cu"));
    snprintf(b, sizeof b, "%s", at("pre/two/b.cu"));
    const char *o[] = {option}, *more[] = {b};
    kj_request req = {
        .size = sizeof(kj_request), .kernel = a, .sources = more, .source_count = 1, .options = o, .option_count = 1};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    char key[33];
    snprintf(key, sizeof key, "%s", r.key);
    put("pre/one/pre.h", "#define PRE 2\n");
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    assert_string_not_equal(r.key, key);
    assert_false(r.cache_hit);
}

/* A kernel in one source launching a kernel of another: the device runtime is linked too. */
static void test_launch_across_sources(void **state) {
    (void)state;
    put("dp/parent.cu", "__global__ void child(int *v);\n"
                        "extern \"C\" __global__ void parent(int *v) {\n"
                        "    if (threadIdx.x == 0) child<<<1, 32, 0, cudaStreamFireAndForget>>>(v);\n}\n");
    put("dp/child.cu", "__global__ void child(int *v) { v[threadIdx.x] += 1; }\n");
    const char *files[] = {"dp/parent.cu", "dp/child.cu"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    compile_ok("parent", files, 2, &r);
    assert_true(r.linked);
}

/* A launch counts where NVRTC sees it: not in a comment nor under `#if 0`, in a source whose include
 * lines were rewritten or one left as it was, and in a header; the scans read one blanked copy of
 * each file. */
static void test_launch_seen_where_it_is(void **state) {
    (void)state;
    static const char hidden[] = "// child<<<1, 1>>>(v);\n"
                                 "#if 0\n"
                                 "__global__ void child(int *v) {}\n"
                                 "__device__ void go(int *v) { child<<<1, 1>>>(v); }\n"
                                 "#endif\n";
    put("seen/plain.cu",
        "__global__ void plain(int *v) { v[0] = 1; }\n/* cudaLaunchDevice */\n#if 0\nx<<<1, 1>>>();\n#endif\n");
    put("seen/hidden.cuh", hidden);
    put("seen/quiet.cu", "#include \"hidden.cuh\"\n__global__ void quiet(int *v) { v[0] = 1; }\n");
    put("seen/shown.cuh", "__global__ void child(int *v) { v[0] = 1; }\n"
                          "__device__ void go(int *v) { child<<<1, 1>>>(v); }\n");
    put("seen/loud.cu", "#include \"shown.cuh\"\n__global__ void loud(int *v) { go(v); }\n");
    put("seen/self.cu", "__global__ void child(int *v) { v[0] = 1; }\n"
                        "__global__ void self(int *v) { child<<<1, 1>>>(v); }\n");
    const struct {
        const char *file, *entry;
        int linked;
    } cases[] = {{"seen/plain.cu", "plain", 0},
                 {"seen/quiet.cu", "quiet", 0},
                 {"seen/loud.cu", "loud", 1},
                 {"seen/self.cu", "self", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        compile_ok(cases[i].entry, &cases[i].file, 1, &r);
        if (r.linked != cases[i].linked)
            fail_msg("%s: linked %d, expected %d", cases[i].file, r.linked, cases[i].linked);
    }
}

static void expect_failure(kj_status want, const char *message, const char *entry, const char *const *files,
                           size_t count) {
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    uint64_t before = 0, after = 0;
    KJ_ASSERT_OK(kj_cache_usage(kj_test_rt, &before, NULL, NULL));
    kj_status s = compile_files(entry, files, count, NULL, 0, &r);
    if (s != want || !strstr(kj_last_error(), message))
        fail_msg("expected %s with '%s'; got %s: %s", kj_status_name(want), message, kj_status_name(s),
                 kj_last_error());
    KJ_ASSERT_OK(kj_cache_usage(kj_test_rt, &after, NULL, NULL));
    assert_int_equal(before, after); /* nothing stored */
}

static void test_refusals(void **state) {
    (void)state;
    setup_program();
    put("empty_lib.cu", "// defines nothing\n");
    put("copy_lib.cu", "__device__ float lib_blend(float x, float y) { return x; }\n");
    put("meta.cu", "//@kernjit summary a second metadata block\n__device__ int m;\n");
    const char *missing[] = {"link_main.cu", "nothere.cu"};
    expect_failure(KJ_ERR_SOURCE, "nothere.cu': No such file", "blend", missing, 2);
    const char *files[] = {"link_main.cu", "link_lib.cu"};
    expect_failure(KJ_ERR_UNKNOWN_ENTRY, "no __global__ function 'nope' in any source of the program", "nope", files,
                   2);
    expect_failure(KJ_ERR_UNKNOWN_ENTRY, "have several kernels (blend, tile_sums)", NULL, files, 2);
    const char *undefined[] = {"link_main.cu", "empty_lib.cu"};
    expect_failure(KJ_ERR_LINK, "Undefined reference to '_Z9lib_blendff' in '", "blend", undefined, 2);
    const char *twice[] = {"link_main.cu", "link_lib.cu", "copy_lib.cu"};
    expect_failure(KJ_ERR_LINK, "'_Z9lib_blendff' in ", "blend", twice, 3);
    assert_non_null(strstr(kj_last_error(), "link_lib.cu and in "));
    const char *meta[] = {"link_main.cu", "link_lib.cu", "meta.cu"};
    expect_failure(KJ_ERR_USAGE, "meta.cu has a //@kernjit block", "blend", meta, 3);

    /* malformed requests */
    const char *name[] = {"reduce"};
    kj_request req = {.size = sizeof(kj_request), .kernel = at("link_main.cu"), .sources = name, .source_count = 1};
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "source 'reduce' is not a path to a .cu file"));
    req.sources = NULL;
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_USAGE);
    const char *lib[] = {at("link_lib.cu")};
    req.sources = lib;
    req.source_text = "extern \"C\" __global__ void k() {}";
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_USAGE);
}

KJ_TEST_MAIN(kj_test_setup_workspace, kj_test_teardown, cmocka_unit_test(test_two_sources_linked),
             cmocka_unit_test(test_stale_keys), cmocka_unit_test(test_same_macros_everywhere),
             cmocka_unit_test(test_pre_include_in_every_source), cmocka_unit_test(test_launch_across_sources),
             cmocka_unit_test(test_launch_seen_where_it_is), cmocka_unit_test(test_refusals))
