/* The compile suite: NVRTC and nvJitLink for sm_90 with no GPU. Every built-in kernel with its
 * defaults and with every allowed value of each parameter; the cache flow; compile errors and their
 * log; C++ entries; linking with the device runtime; CDP1 sources. */
#include "test_util.h"

#include <sys/stat.h>

static void compile_ok(kj_runtime *rt, const char *kernel, const char *entry, const kj_define *d, size_t nd) {
    kj_request req = {.size = sizeof(kj_request), .kernel = kernel, .entry = entry, .defines = d, .define_count = nd};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    kj_status s = kj_compile(rt, &req, &r);
    if (s != KJ_OK)
        fail_msg("%s:%s with %s=%s: %s", kernel, entry ? entry : "", nd ? d[0].name : "(defaults)",
                 nd ? d[0].value : "", kj_last_error());
    assert_true(r.binary_bytes > 0);
    assert_string_equal(r.arch, "sm_90");
}

/* Counts the messages that say a compile with kernjit's shortcuts failed and was done as written. */
static void count_as_written(kj_log_level level, const char *message, void *user) {
    (void)level;
    if (strstr(message, "compiling it as written")) ++*(int *)user;
}

/* A compile-only runtime for sm_90 (its cache in dir; NULL: memory only) that counts the compiles
 * done as written after a shortcut failed into *as_written. */
static kj_runtime *counting_runtime(const char *dir, int *as_written) {
    *as_written = 0;
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.arch = "sm_90";
    o.cache_dir = dir;
    o.cache_mode = dir ? KJ_CACHE_DISK : KJ_CACHE_MEMORY_ONLY;
    o.log = count_as_written;
    o.log_user = as_written;
    o.log_level = KJ_LOG_INFO;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    return rt;
}

/* Every entry of every built-in kernel, with its defaults and then each allowed value of each
 * parameter (the others at their defaults) when the kernel's requirements allow that combination.
 * Each request compiles its entry alone (trim.h), and none of them needs the whole file. */
static void test_every_builtin_every_value(void **state) {
    (void)state;
    int as_written;
    kj_runtime *rt = counting_runtime(NULL, &as_written);
    size_t compiled = 0;
    for (size_t i = 0; kj_builtin_name(i); i++) {
        const char *name = kj_builtin_name(i);
        kj_kernel_desc *d;
        KJ_ASSERT_OK(kj_describe(rt, name, &d));
        for (size_t e = 0; e < kj_desc_entry_count(d); e++) {
            const char *entry = kj_desc_entry(d, e);
            compile_ok(rt, name, entry, NULL, 0);
            compiled++;
            for (size_t p = 0; p < kj_desc_param_count(d); p++) {
                kj_param_info info = KJ_PARAM_INFO_INIT;
                KJ_ASSERT_OK(kj_desc_param(d, p, &info));
                for (size_t v = 0; v < info.value_count; v++) {
                    if (strcmp(info.values[v], info.default_value) == 0) continue;
                    kj_define def = {info.name, info.values[v]};
                    kj_request req = {
                        .size = sizeof(kj_request), .kernel = name, .entry = entry, .defines = &def, .define_count = 1};
                    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
                    kj_status s = kj_compile(rt, &req, &r);
                    if (s == KJ_ERR_INVALID_DEFINE && strstr(kj_last_error(), "requirement")) continue;
                    if (s != KJ_OK)
                        fail_msg("%s:%s -D %s=%s: %s", name, entry, info.name, info.values[v], kj_last_error());
                    compiled++;
                }
            }
        }
        kj_desc_free(d);
    }
    assert_int_equal(as_written, 0);
    printf("compiled %zu variants\n", compiled);
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.compiles, compiled);
    assert_int_equal(st.compile_errors, 0);
    kj_runtime_destroy(rt);
}

static void test_cache_flow(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    assert_string_equal(kj_cache_dir(rt), kj_test_dir);
    kj_define d[] = {{"OP", "max"}, {"T", "i32"}};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .defines = d, .define_count = 2};
    kj_compile_result a = KJ_COMPILE_RESULT_INIT, b = KJ_COMPILE_RESULT_INIT, c = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &a));
    assert_false(a.cache_hit);
    assert_true(a.stored);
    assert_true(a.compile_ms > 0);
    struct stat st;
    assert_int_equal(stat(a.cache_path, &st), 0);
    char expect_prefix[PATH_MAX];
    snprintf(expect_prefix, sizeof expect_prefix, "%s/sm_90/%s.cubin", kj_test_dir, a.key);
    assert_string_equal(a.cache_path, expect_prefix);
    /* the strings are the library's until this thread's next kj_compile */
    char key[65], path[PATH_MAX];
    snprintf(key, sizeof key, "%s", a.key);
    snprintf(path, sizeof path, "%s", a.cache_path);
    KJ_ASSERT_OK(kj_compile(rt, &req, &b));
    assert_true(b.cache_hit);
    assert_string_equal(key, b.key);
    assert_int_equal(a.binary_bytes, b.binary_bytes);
    /* the order of the defines does not change the key */
    kj_define swapped[] = {{"T", "i32"}, {"OP", "max"}};
    kj_request req2 = {.size = sizeof(kj_request), .kernel = "reduce", .defines = swapped, .define_count = 2};
    KJ_ASSERT_OK(kj_compile(rt, &req2, &c));
    assert_true(c.cache_hit);
    assert_string_equal(key, c.key);
    /* a damaged entry: recompiled, replaced, with a warning */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 200, SEEK_SET);
    int byte = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(byte ^ 0xff, f);
    fclose(f);
    KJ_ASSERT_OK(kj_compile(rt, &req, &c));
    assert_false(c.cache_hit);
    assert_true(c.stored);
    assert_true(log.warnings >= 1);
    assert_non_null(strstr(log.last, "damaged"));
    kj_stats s = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &s));
    assert_int_equal(s.bad_entries, 1);
    assert_int_equal(s.disk_hits, 2);
    assert_int_equal(s.compiles, 2);
    KJ_ASSERT_OK(kj_compile(rt, &req, &c));
    assert_true(c.cache_hit);
    /* usage and clearing */
    uint64_t entries, bytes, max;
    KJ_ASSERT_OK(kj_cache_usage(rt, &entries, &bytes, &max));
    assert_int_equal(entries, 1);
    assert_true(bytes > (uint64_t)c.binary_bytes);
    assert_int_equal(max, 1ull << 30);
    KJ_ASSERT_OK(kj_cache_clear(rt, &entries, NULL));
    assert_int_equal(entries, 1);
    kj_runtime_destroy(rt);
}

/* Editing a .cu on KERNJIT_PATH takes effect on the next run: a new runtime sees a new key. */
static void test_edit_takes_effect(void **state) {
    (void)state;
    char src[PATH_MAX];
    snprintf(src, sizeof src, "%s/mine.cu", kj_test_dir);
    const char *v1 =
        "//@kernjit entry k\n//@kernjit param V 1 2 = 1\nextern \"C\" __global__ void k(int *x) { *x = V; }\n";
    const char *v2 =
        "//@kernjit entry k\n//@kernjit param V 1 2 = 1\nextern \"C\" __global__ void k(int *x) { *x = V + 1; }\n";
    kj_test_write(src, v1, strlen(v1));
    setenv("KERNJIT_PATH", kj_test_dir, 1);
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    kj_request req = {.size = sizeof(kj_request), .kernel = "mine"};
    kj_compile_result a = KJ_COMPILE_RESULT_INIT, b = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &a));
    char key[65];
    snprintf(key, sizeof key, "%s", a.key);
    kj_runtime_destroy(rt);
    kj_test_write(src, v2, strlen(v2));
    rt = kj_test_compile_runtime(kj_test_dir, &log);
    KJ_ASSERT_OK(kj_compile(rt, &req, &b));
    assert_false(b.cache_hit);
    assert_string_not_equal(key, b.key);
    kj_runtime_destroy(rt);
    unsetenv("KERNJIT_PATH");
}

static void test_compile_error_log(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(NULL, &log);
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = "broken.cu",
                      .source_text = "extern \"C\" __global__ void k(int *x) {\n  x[0] = not_declared;\n}\n"};
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_COMPILE);
    const char *msg = kj_last_error();
    assert_non_null(strstr(msg, "broken.cu(2): error"));
    assert_non_null(strstr(msg, "not_declared"));
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.compile_errors, 1);
    kj_runtime_destroy(rt);
}

static void test_cpp_entries(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    const char *src = "template <typename T, int N> __global__ void scale(T *x, T a) { x[threadIdx.x % N] *= a; }\n"
                      "template __global__ void scale<float, 256>(float *, float);\n"
                      "__global__ void plain(int *x) { *x = 1; }\n";
    kj_request req = {.size = sizeof(kj_request), .kernel = "t.cu", .source_text = src, .entry = "scale<float,256>"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_false(r.cache_hit);
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_true(r.cache_hit);
    char key[65];
    snprintf(key, sizeof key, "%s", r.key);
    /* the entry is part of the key for sources without metadata */
    kj_request other = {.size = sizeof(kj_request), .kernel = "t.cu", .source_text = src, .entry = "plain"};
    kj_compile_result r2 = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &other, &r2));
    assert_string_not_equal(key, r2.key);
    /* several kernels and no entry named: a usage error listing them */
    kj_request none = {.size = sizeof(kj_request), .kernel = "t.cu", .source_text = src};
    assert_int_equal(kj_compile(rt, &none, NULL), KJ_ERR_UNKNOWN_ENTRY);
    assert_non_null(strstr(kj_last_error(), "scale, plain"));
    kj_runtime_destroy(rt);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The symbols of a compile's kernels in name order, "a b" (static storage). */
static const char *symbols(const kj_compile_result *r) {
    static char out[256];
    const char *names[8];
    size_t n = r->resource_count < 8 ? r->resource_count : 8;
    for (size_t i = 0; i < n; i++) names[i] = kj_compile_result_resource(r, i)->symbol;
    qsort(names, n, sizeof names[0], by_name);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? " " : "", names[i]);
    return out;
}

/* A request compiles its entry alone: the binary holds that kernel only, each entry has its own key;
 * a file whose entries name each other in ways kernjit cannot see is compiled whole (under the same
 * key, every time), as is one whose metadata says `whole-file`. */
/* A `launch` parameter is checked like a macro but never compiled: its values share one key. */
static void test_launch_parameter_shares_the_binary(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, NULL);
    kj_define one[] = {{"WAVES", "1"}}, eight[] = {{"WAVES", "8"}}, three[] = {{"WAVES", "3"}};
    kj_request req = {
        .size = sizeof(kj_request), .kernel = "reduce", .entry = "reduce_fast", .defines = one, .define_count = 1};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    char key[33];
    snprintf(key, sizeof key, "%s", r.key);
    req.defines = eight;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_string_equal(r.key, key);
    assert_true(r.cache_hit);
    req.defines = three;
    assert_int_equal(kj_compile(rt, &req, &r), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "WAVES"));
    kj_runtime_destroy(rt);
}

static void test_entry_alone(void **state) {
    (void)state;
    int as_written;
    kj_runtime *rt = counting_runtime(kj_test_dir, &as_written);
    const char *two = "//@kernjit entry first second\n"
                      "extern \"C\" __global__ void first(int *v) { v[0] = 1; }\n"
                      "extern \"C\" __global__ void second(int *v) { v[1] = 2; }\n";
    kj_request req = {.size = sizeof(kj_request), .kernel = "two.cu", .source_text = two};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_string_equal(symbols(&r), "first");
    char first_key[33];
    snprintf(first_key, sizeof first_key, "%s", r.key);
    req.entry = "second";
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_string_equal(symbols(&r), "second");
    assert_string_not_equal(r.key, first_key);
    assert_int_equal(as_written, 0);

    /* `second` is named only by pasting tokens: compiled alone, `first` cannot find it */
    const char *pasted = "//@kernjit entry first second\n"
                         "#define CAT(a, b) a##b\n"
                         "extern \"C\" __global__ void second(int *v) { v[1] = 2; }\n"
                         "extern \"C\" __global__ void first(int *v) { v[0] = (int)sizeof(&CAT(sec, ond)); }\n";
    kj_request p = {.size = sizeof(kj_request), .kernel = "pasted.cu", .source_text = pasted};
    KJ_ASSERT_OK(kj_compile(rt, &p, &r));
    assert_int_equal(as_written, 1);
    assert_false(r.cache_hit);
    assert_string_equal(symbols(&r), "first second");
    KJ_ASSERT_OK(kj_compile(rt, &p, &r)); /* the same key: the whole file's binary, from the cache */
    assert_true(r.cache_hit);
    assert_string_equal(symbols(&r), "first second");

    const char *whole = "//@kernjit entry first second\n//@kernjit whole-file\n"
                        "extern \"C\" __global__ void first(int *v) { v[0] = 1; }\n"
                        "extern \"C\" __global__ void second(int *v) { v[1] = 2; }\n";
    kj_request w = {.size = sizeof(kj_request), .kernel = "whole.cu", .source_text = whole};
    KJ_ASSERT_OK(kj_compile(rt, &w, &r));
    assert_string_equal(symbols(&r), "first second");
    assert_int_equal(as_written, 1);
    kj_runtime_destroy(rt);
}

/* Choosing the entry of a source without metadata: a template is no kernel until instantiated, so
 * the file's one explicit instance is taken, and a name NVRTC cannot resolve is a usage error. */
static void test_entry_resolution(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(NULL, &log);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    const char *tmpl = "template <typename T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n";
    kj_request req = {.size = sizeof(kj_request), .kernel = "t.cu", .source_text = tmpl};
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_UNKNOWN_ENTRY);
    assert_non_null(strstr(kj_last_error(), "kernel scale is a template: name an instance"));

    const char *one = "template <typename T>\n__global__ void __launch_bounds__(128) scale(T *x, T a) { x[0] *= a; }\n"
                      "template __global__ void scale<double>(double *, double);\n";
    req.source_text = one;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    char key[65];
    snprintf(key, sizeof key, "%s", r.key);
    kj_request named = {.size = sizeof(kj_request), .kernel = "t.cu", .source_text = one, .entry = "scale<double>"};
    kj_compile_result r2 = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &named, &r2));
    assert_string_equal(key, r2.key); /* the same entry as naming the instance */

    const char *two = "template <typename T> __global__ void scale(T *x, T a) { x[0] *= a; }\n"
                      "template __global__ void scale<float>(float *, float);\n"
                      "template __global__ void scale<int>(int *, int);\n";
    req.source_text = two;
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_UNKNOWN_ENTRY);
    assert_non_null(strstr(kj_last_error(), "several instances (scale<float>, scale<int>)"));

    /* an attribute before the name is not the kernel's name */
    kj_request bounds = {.size = sizeof(kj_request),
                         .kernel = "b.cu",
                         .source_text = "__global__ void __launch_bounds__(64) k(int *x) { *x = 1; }\n"};
    KJ_ASSERT_OK(kj_compile(rt, &bounds, NULL));

    /* names NVRTC cannot resolve: usage errors with its explanation, not compile failures */
    kj_request missing = {.size = sizeof(kj_request), .kernel = "t.cu", .source_text = one, .entry = "nosuch"};
    kj_status s = kj_compile(rt, &missing, NULL);
    assert_int_equal(s, KJ_ERR_UNKNOWN_ENTRY);
    assert_int_equal(kj_status_class(s), 2);
    assert_non_null(strstr(kj_last_error(), "no kernel 'nosuch' in t.cu"));
    assert_non_null(strstr(kj_last_error(), "__nv_name_map"));
    kj_request bare = {.size = sizeof(kj_request), .kernel = "t.cu", .source_text = tmpl, .entry = "scale"};
    assert_int_equal(kj_compile(rt, &bare, NULL), KJ_ERR_UNKNOWN_ENTRY);
    /* an error in the source itself stays a compile error */
    kj_request broken = {.size = sizeof(kj_request),
                         .kernel = "x.cu",
                         .source_text = "__global__ void k(int *x) { *x = oops; }\n",
                         .entry = "k"};
    assert_int_equal(kj_compile(rt, &broken, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "x.cu(1): error"));
    kj_runtime_destroy(rt);
}

static const char *rdc_source = "//@kernjit entry parent\n"
                                "//@kernjit rdc\n"
                                "//@kernjit limit pending-launches 4096\n"
                                "extern \"C\" __global__ void child(int *x) { x[threadIdx.x] = 1; }\n"
                                "extern \"C\" __global__ void parent(int *x) {\n"
                                "    if (threadIdx.x == 0) child<<<1, 32, 0, cudaStreamTailLaunch>>>(x);\n"
                                "}\n";

static void test_link_device_runtime(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(NULL, &log);
    kj_request req = {.size = sizeof(kj_request), .kernel = "dp.cu", .source_text = rdc_source};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_true(r.linked);
    assert_true(r.link_ms > 0);
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.links, 1);
    /* plain kernels are never linked */
    kj_request plain = {.size = sizeof(kj_request), .kernel = "reduce"};
    KJ_ASSERT_OK(kj_compile(rt, &plain, &r));
    assert_false(r.linked);
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.links, 1);
    kj_runtime_destroy(rt);
}

static void test_cdp1_explained(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(NULL, &log);
    const char *cdp1 = "//@kernjit entry parent\n//@kernjit rdc\n"
                       "extern \"C\" __global__ void child(int *x) { *x = 1; }\n"
                       "extern \"C\" __global__ void parent(int *x) {\n"
                       "    child<<<1, 1>>>(x);\n"
                       "    cudaDeviceSynchronize();\n"
                       "}\n";
    kj_request req = {.size = sizeof(kj_request), .kernel = "cdp1.cu", .source_text = cdp1};
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_COMPILE);
    const char *msg = kj_last_error();
    assert_non_null(strstr(msg, "cdp1.cu(6)"));
    assert_non_null(strstr(msg, "CDP1"));
    assert_non_null(strstr(msg, "cudaStreamTailLaunch"));
    kj_runtime_destroy(rt);
}

static void test_other_arch(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, &log);
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .arch = "sm_80"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_string_equal(r.arch, "sm_80");
    assert_non_null(strstr(r.cache_path, "/sm_80/"));
    /* an architecture-specific, a family and a PTX target: each its own name, folder and key */
    const char *forms[] = {"sm_90a", "sm_100f", "compute_80"};
    char keys[3][33];
    for (size_t i = 0; i < 3; i++) {
        req.arch = forms[i];
        KJ_ASSERT_OK(kj_compile(rt, &req, &r));
        assert_string_equal(r.arch, forms[i]);
        assert_int_equal(r.is_ptx, i == 2);
        char folder[32];
        snprintf(folder, sizeof folder, "/%s/", forms[i]);
        assert_non_null(strstr(r.cache_path, folder));
        snprintf(keys[i], sizeof keys[i], "%s", r.key);
    }
    assert_string_not_equal(keys[0], keys[1]);
    req.arch = "sm_90";
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_string_not_equal(r.key, keys[0]);
    kj_request bad = {.size = sizeof(kj_request), .kernel = "reduce", .arch = "sm_9"};
    assert_int_equal(kj_compile(rt, &bad, NULL), KJ_ERR_USAGE);
    bad.arch = "compute_90x";
    assert_int_equal(kj_compile(rt, &bad, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "is not a target's name: give sm_XY"));
    bad.arch = "sm_80a"; /* 'a' targets begin at 9.0 */
    assert_int_equal(kj_compile(rt, &bad, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "its architecture-specific targets are sm_90a"));
    bad.arch = "sm_90f"; /* 'f' targets begin at 10.0 */
    assert_int_equal(kj_compile(rt, &bad, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "its family-specific targets are sm_100f"));
    bad.arch = "sm_999";
    assert_int_equal(kj_compile(rt, &bad, NULL), KJ_ERR_USAGE);
    kj_runtime_destroy(rt);
    /* a runtime for an arch NVRTC does not know is refused */
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.arch = "sm_30";
    kj_runtime *r2 = NULL;
    assert_int_equal(kj_runtime_create(&o, &r2), KJ_ERR_USAGE);
    assert_null(r2);
}

/* A user kernel with an instruction of sm_90a's own set (wgmma.fence): built for sm_90a and
 * compute_90a, each in its own folder; for sm_90 the compile fails with ptxas's words and a note that
 * names the target that has it. A runtime for sm_90a builds it by default. */
static void test_arch_specific_instruction(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_compile_runtime(kj_test_dir, NULL);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/wgmma_fence.cu", KJ_TEST_KERNELS);
    kj_request req = {.size = sizeof(kj_request), .kernel = path, .arch = "sm_90a"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_string_equal(r.arch, "sm_90a");
    assert_non_null(strstr(r.cache_path, "/sm_90a/"));
    assert_int_equal(r.is_ptx, 0);
    req.arch = "compute_90a";
    void *ptx;
    size_t size;
    KJ_ASSERT_OK(kj_emit(rt, &req, KJ_EMIT_PTX, &ptx, &size, NULL));
    assert_non_null(memmem(ptx, size, ".target sm_90a", 14));
    assert_non_null(memmem(ptx, size, "wgmma.fence.sync.aligned", 24));
    kj_emit_free(ptx);
    req.arch = NULL; /* the runtime's sm_90 */
    assert_int_equal(kj_compile(rt, &req, &r), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "Instruction 'wgmma.fence' not supported on .target 'sm_90'"));
    assert_non_null(strstr(kj_last_error(), "if this one belongs to sm_90a's, build for that target (--arch sm_90a, "
                                            "kj_request.arch)"));
    req.arch = "sm_100a"; /* not Blackwell's either: no note for an architecture-specific target */
    assert_int_equal(kj_compile(rt, &req, &r), KJ_ERR_COMPILE);
    assert_null(strstr(kj_last_error(), "note: some instructions"));
    kj_runtime_destroy(rt);
    kj_runtime *a = kj_test_runtime_for(kj_test_dir, KJ_DEVICE_NONE, "sm_90a", NULL);
    assert_non_null(a);
    assert_string_equal(kj_runtime_arch(a), "sm_90a");
    req.arch = NULL;
    KJ_ASSERT_OK(kj_compile(a, &req, &r));
    assert_string_equal(r.arch, "sm_90a");
    assert_int_equal(r.cache_hit, 1); /* the same target, key and folder as the request's above */
    kj_runtime_destroy(a);
}

static void test_no_device_means_no_launch(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(NULL, &log);
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    kj_kernel *k = NULL;
    assert_int_equal(kj_kernel_get(rt, &req, &k, NULL), KJ_ERR_NO_DEVICE);
    assert_null(k);
    assert_non_null(strstr(kj_last_error(), "no CUDA device"));
    kj_devptr p;
    assert_int_equal(kj_mem_alloc(rt, 16, &p), KJ_ERR_NO_DEVICE);
    kj_runtime_destroy(rt);
}

static void test_bad_options(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(NULL, &log);
    const char *opts[] = {"-arch=sm_80"};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .options = opts, .option_count = 1};
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_USAGE);
    opts[0] = "lineinfo";
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_USAGE);
    opts[0] = "-DOP=max";
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_USAGE);
    opts[0] = "-lineinfo";
    kj_compile_result r = KJ_COMPILE_RESULT_INIT, r2 = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    char key[65];
    snprintf(key, sizeof key, "%s", r.key);
    kj_request plain = {.size = sizeof(kj_request), .kernel = "reduce"};
    KJ_ASSERT_OK(kj_compile(rt, &plain, &r2));
    assert_string_not_equal(key, r2.key); /* options are part of the key */
    kj_runtime_destroy(rt);
}

/* A request's -std (or --std) takes the place of kernjit's -std=c++17: NVRTC gets one standard (two
 * would be a warning on every compile), the key holds the one used, and -std=c++17 given or not is
 * one key. */
static void test_language_standard(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_compile_runtime(NULL, &log);
    static const char *src = "__device__ consteval int two() { return 2; }\n" /* C++20 */
                             "extern \"C\" __global__ void k(int *o) { o[0] = two(); }\n";
    const char *opts[1];
    kj_request req = {
        .size = sizeof(kj_request), .kernel = "std20.cu", .source_text = src, .options = opts, .option_count = 1};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    char key20[65], key20long[65];
    opts[0] = "-std=c++20";
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    assert_null(strstr(r.log, "std")); /* no word about a second standard */
    snprintf(key20, sizeof key20, "%s", r.key);
    opts[0] = "--std=c++20";
    KJ_ASSERT_OK(kj_compile(rt, &req, &r));
    snprintf(key20long, sizeof key20long, "%s", r.key);
    assert_string_equal(key20, key20long);
    req.option_count = 0; /* kernjit's c++17: consteval is not there */
    assert_int_equal(kj_compile(rt, &req, NULL), KJ_ERR_COMPILE);
    opts[0] = "-std=c++99"; /* NVRTC judges the value */
    req.option_count = 1;
    assert_int_not_equal(kj_compile(rt, &req, NULL), KJ_OK);
    assert_non_null(strstr(kj_last_error(), "invalid value for --std"));

    kj_request plain = {.size = sizeof(kj_request), .kernel = "vector_add"}, asked = plain;
    opts[0] = "-std=c++17";
    asked.options = opts;
    asked.option_count = 1;
    char key17[65];
    KJ_ASSERT_OK(kj_compile(rt, &plain, &r));
    snprintf(key17, sizeof key17, "%s", r.key);
    KJ_ASSERT_OK(kj_compile(rt, &asked, &r));
    assert_string_equal(key17, r.key);
    opts[0] = "-std=c++20";
    KJ_ASSERT_OK(kj_compile(rt, &asked, &r));
    assert_string_not_equal(key17, r.key);
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_every_builtin_every_value), KJ_TEST_IN_DIR(test_cache_flow),
             KJ_TEST_IN_DIR(test_edit_takes_effect), cmocka_unit_test(test_compile_error_log),
             KJ_TEST_IN_DIR(test_cpp_entries), KJ_TEST_IN_DIR(test_launch_parameter_shares_the_binary),
             KJ_TEST_IN_DIR(test_entry_alone), cmocka_unit_test(test_entry_resolution),
             cmocka_unit_test(test_link_device_runtime), cmocka_unit_test(test_cdp1_explained),
             KJ_TEST_IN_DIR(test_other_arch), KJ_TEST_IN_DIR(test_arch_specific_instruction),
             cmocka_unit_test(test_no_device_means_no_launch), cmocka_unit_test(test_bad_options),
             cmocka_unit_test(test_language_standard))
