/* What nvJitLink takes besides .cu sources (compile suite, no GPU): a program's sources may be PTX,
 * relocatable cubins and LTO-IR, read as they are and linked with the .cu files (their bytes and
 * their kind in the key); -dlto compiles every .cu unit to LTO-IR and links them with link-time
 * optimisation, storing the linked cubin. The compiled inputs here are kernjit's own outputs
 * (kj_emit of PTX and LTO-IR) and, for the cubin, NVRTC's relocatable one. */
#include "test_util.h"

#include <nvrtc.h>

static const char *const main_src = "__device__ float lib_blend(float x, float y);\n"
                                    "extern \"C\" __global__ void blend(const float *x, float *out) {\n"
                                    "    out[threadIdx.x] = lib_blend(x[threadIdx.x], 1.0f);\n"
                                    "}\n";
static const char *const lib_src = "__device__ float lib_blend(float x, float y) { return 3.0f * x - y; }\n";

static const char *at(const char *rel) { return kj_test_path(kj_test_dir, rel); }

static void write_bytes(const char *rel, const void *data, size_t size) {
    FILE *f = fopen(at(rel), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

/* kj_emit of main.cu (format, with these options) into the work folder as rel. */
static void emit_main(kj_emit_format format, const char *const *options, size_t n, const char *rel) {
    kj_test_put(kj_test_dir, "main.cu", main_src);
    kj_request req = {.size = sizeof(kj_request), .kernel = at("main.cu"), .options = options, .option_count = n};
    void *data;
    size_t size;
    if (kj_emit(kj_test_rt, &req, format, &data, &size, NULL) != KJ_OK) fail_msg("%s", kj_last_error());
    write_bytes(rel, data, size);
    kj_emit_free(data);
}

/* lib.cu (the .cu source, first) with `input` (the compiled main) after it: entry blend. */
static kj_status link_with(const char *input, const char *const *options, size_t n, kj_compile_result *r) {
    kj_test_put(kj_test_dir, "lib.cu", lib_src);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", at(input));
    const char *more[] = {path};
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = at("lib.cu"),
                      .entry = "blend",
                      .sources = more,
                      .source_count = 1,
                      .options = options,
                      .option_count = n};
    return kj_compile(kj_test_rt, &req, r);
}

/* Linked, blend among the symbols; for code that the link compiles (PTX, LTO-IR) its resources as
 * ptxas reported them then (a cubin's were reported when it was compiled: not known here). */
static void link_ok(const char *input, kj_compile_result *r) {
    if (link_with(input, NULL, 0, r) != KJ_OK) fail_msg("%s: %s", input, kj_last_error());
    assert_int_equal(r->source_count, 2);
    assert_true(r->link_ms > 0 || r->cache_hit);
    assert_int_equal(r->entry_symbol_count, 1);
    assert_string_equal(r->entry_symbols[0], "blend");
    if (strstr(input, ".cubin")) return;
    assert_non_null(r->entry_resources);
    assert_string_equal(r->entry_resources->symbol, "blend");
    assert_true(r->entry_resources->registers > 0);
}

static void test_ptx_input(void **state) {
    (void)state;
    const char *rdc[] = {"-rdc=true"};
    emit_main(KJ_EMIT_PTX, rdc, 1, "main.ptx");
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    link_ok("main.ptx", &r);
    assert_false(r.cache_hit);
    char key[33];
    snprintf(key, sizeof key, "%s", r.key);
    link_ok("main.ptx", &r);
    assert_true(r.cache_hit);
    assert_string_equal(r.key, key);
    /* its bytes are in the key: an edit is another program */
    FILE *f = fopen(at("main.ptx"), "ab");
    assert_non_null(f);
    fputs("\n// edited\n", f);
    fclose(f);
    link_ok("main.ptx", &r);
    assert_false(r.cache_hit);
    assert_string_not_equal(r.key, key);
}

static void test_ltoir_input(void **state) {
    (void)state;
    emit_main(KJ_EMIT_LTOIR, NULL, 0, "main.ltoir");
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    link_ok("main.ltoir", &r);
    /* the same bytes named as another kind are another input, and another key */
    char key[33];
    snprintf(key, sizeof key, "%s", r.key);
    void *data;
    size_t size;
    FILE *f = fopen(at("main.ltoir"), "rb");
    assert_non_null(f);
    static char bytes[1 << 20];
    size = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    data = bytes;
    write_bytes("main.cubin", data, size);
    kj_status s = link_with("main.cubin", NULL, 0, &r);
    if (s == KJ_OK) assert_string_not_equal(r.key, key);
    else assert_int_equal(s, KJ_ERR_LINK); /* nvJitLink does not take LTO-IR as a cubin */
}

static void test_cubin_input(void **state) {
    (void)state;
    nvrtcProgram prog;
    assert_int_equal(nvrtcCreateProgram(&prog, main_src, "main.cu", 0, NULL, NULL), NVRTC_SUCCESS);
    const char *opts[] = {"-arch=sm_90", "-rdc=true"};
    assert_int_equal(nvrtcCompileProgram(prog, 2, opts), NVRTC_SUCCESS);
    size_t size;
    assert_int_equal(nvrtcGetCUBINSize(prog, &size), NVRTC_SUCCESS);
    char *cubin = malloc(size);
    assert_non_null(cubin);
    assert_int_equal(nvrtcGetCUBIN(prog, cubin), NVRTC_SUCCESS);
    nvrtcDestroyProgram(&prog);
    write_bytes("main.cubin", cubin, size);
    free(cubin);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    link_ok("main.cubin", &r);
}

/* -dlto: both .cu units compiled to LTO-IR and linked with -lto; the key is not the plain link's. */
static void test_dlto_across_sources(void **state) {
    (void)state;
    kj_test_put(kj_test_dir, "main.cu", main_src);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    kj_stats before = KJ_STATS_INIT, after = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(kj_test_rt, &before));
    link_ok("main.cu", &r);
    char plain[33];
    snprintf(plain, sizeof plain, "%s", r.key);
    const char *dlto[] = {"-dlto"};
    if (link_with("main.cu", dlto, 1, &r) != KJ_OK) fail_msg("%s", kj_last_error());
    assert_false(r.cache_hit);
    assert_string_not_equal(r.key, plain);
    assert_true(r.link_ms > 0);
    assert_non_null(r.entry_resources); /* from the ptxas of the link, since the units made LTO-IR */
    assert_true(r.entry_resources->registers > 0);
    KJ_ASSERT_OK(kj_runtime_stats(kj_test_rt, &after));
    assert_int_equal(after.compiles - before.compiles, 4); /* two units, plain and -dlto */
    assert_int_equal(after.links - before.links, 2);
    /* the linked cubin is what is stored: an ELF the driver loads */
    FILE *f = fopen(r.cache_path, "rb");
    assert_non_null(f);
    fclose(f);
    void *data;
    size_t size;
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = at("lib.cu"),
                      .entry = "blend",
                      .sources = (const char *const[]){at("main.cu")},
                      .source_count = 1,
                      .options = dlto,
                      .option_count = 1};
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &req, KJ_EMIT_CUBIN, &data, &size, &r));
    assert_true(r.cache_hit);
    assert_true(size > 4 && memcmp(data, "\177ELF", 4) == 0);
    kj_emit_free(data);
}

/* A compiled input that is not there: named (the refusals of malformed inputs: test-bad-input-api). */
static void test_missing_input(void **state) {
    (void)state;
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    assert_int_equal(link_with("missing.cubin", NULL, 0, &r), KJ_ERR_SOURCE);
    assert_non_null(strstr(kj_last_error(), "missing.cubin"));
}

KJ_TEST_MAIN(kj_test_setup_workspace, kj_test_teardown, cmocka_unit_test(test_ptx_input),
             cmocka_unit_test(test_ltoir_input), cmocka_unit_test(test_cubin_input),
             cmocka_unit_test(test_dlto_across_sources), cmocka_unit_test(test_missing_input))
