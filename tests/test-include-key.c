/* The cache key covers every byte NVRTC reads (compile suite: NVRTC, no GPU). For every way a header
 * can reach a compile, an edit gives a new key and a real compile; two projects with the same kernel
 * text and different headers get two keys; the working folder is never searched; and the toolkit's
 * own headers (cooperative groups, CUB, libcu++, fp16/bf16, mma, barriers), dynamic parallelism and
 * a wrapper file compile with no options at all (tests/kernels/jit_*.cu). */
#include "test_util.h"

#include "jit/toolkit.h"

static const char *at(const char *rel) { return kj_test_path(kj_test_dir, rel); }

static void put(const char *rel, const char *text) { kj_test_put(kj_test_dir, rel, text); }

typedef struct result {
    char key[33];
    int hit;
} result;

static result compile_with(const char *kernel, const char *const *options, size_t nopt, const kj_define *d, size_t nd) {
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = kernel,
                      .options = options,
                      .option_count = nopt,
                      .defines = d,
                      .define_count = nd};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    kj_status s = kj_compile(kj_test_rt, &req, &r);
    if (s != KJ_OK) fail_msg("compiling %s: %s", kernel, kj_last_error());
    result out;
    snprintf(out.key, sizeof out.key, "%s", r.key);
    out.hit = r.cache_hit;
    return out;
}

static result compile(const char *kernel) { return compile_with(kernel, NULL, 0, NULL, 0); }

/* The edit of `header` (rel) must change the key of `kernel` and compile it again; the old text back
 * must find the old entry. */
static void expect_edit_seen(const char *kernel, const char *const *options, size_t nopt, const kj_define *d, size_t nd,
                             const char *header, const char *before, const char *after) {
    put(header, before);
    result a = compile_with(kernel, options, nopt, d, nd);
    result again = compile_with(kernel, options, nopt, d, nd);
    assert_string_equal(a.key, again.key);
    assert_true(again.hit);
    put(header, after);
    result b = compile_with(kernel, options, nopt, d, nd);
    assert_string_not_equal(a.key, b.key);
    assert_false(b.hit);
    put(header, before);
    result c = compile_with(kernel, options, nopt, d, nd);
    assert_string_equal(a.key, c.key);
    assert_true(c.hit);
}

#define KERNEL_USING(X) "extern \"C\" __global__ void k(int *o) { o[0] = " X "; }\n"

static void test_header_beside(void **state) {
    (void)state;
    put("beside/k.cu", "#include \"cfg.h\"\n" KERNEL_USING("CFG"));
    expect_edit_seen(at("beside/k.cu"), NULL, 0, NULL, 0, "beside/cfg.h", "#define CFG 1\n", "#define CFG 2\n");
}

static void test_sibling_in_subfolder(void **state) {
    (void)state;
    /* sub/a.h's "b.h" is sub/b.h, not the b.h beside the source */
    put("sib/k.cu", "#include \"sub/a.h\"\n" KERNEL_USING("A + B"));
    put("sib/sub/a.h", "#include \"b.h\"\n#define A 1\n");
    put("sib/b.h", "#define B 100\n");
    expect_edit_seen(at("sib/k.cu"), NULL, 0, NULL, 0, "sib/sub/b.h", "#define B 1\n", "#define B 2\n");
    /* the decoy beside the source is not part of it: editing it changes nothing */
    result a = compile(at("sib/k.cu"));
    put("sib/b.h", "#define B 200\n");
    result b = compile(at("sib/k.cu"));
    assert_string_equal(a.key, b.key);
    assert_true(b.hit);
}

static void test_parent_folder_and_two_projects(void **state) {
    (void)state;
    put("p1/src/k.cu", "#include \"../cfg.h\"\n" KERNEL_USING("CFG"));
    put("p2/src/k.cu", "#include \"../cfg.h\"\n" KERNEL_USING("CFG"));
    put("p2/cfg.h", "#define CFG 2\n");
    expect_edit_seen(at("p1/src/k.cu"), NULL, 0, NULL, 0, "p1/cfg.h", "#define CFG 1\n", "#define CFG 3\n");
    /* the same kernel text, another ../cfg.h: another key, and no hit */
    result one = compile(at("p1/src/k.cu"));
    result two = compile(at("p2/src/k.cu"));
    assert_string_not_equal(one.key, two.key);
    assert_false(two.hit);
}

static void test_absolute_path(void **state) {
    (void)state;
    char text[PATH_MAX + 200];
    snprintf(text, sizeof text, "#include \"%s\"\n" KERNEL_USING("ABS"), at("abs/inc/abs.h"));
    put("abs/k.cu", text);
    expect_edit_seen(at("abs/k.cu"), NULL, 0, NULL, 0, "abs/inc/abs.h", "#define ABS 1\n", "#define ABS 2\n");
}

static void test_include_folder_option(void **state) {
    (void)state;
    put("opt/k.cu", "#include <cfg.h>\n" KERNEL_USING("CFG"));
    char dir1[PATH_MAX + 8], dir2[PATH_MAX + 32];
    snprintf(dir1, sizeof dir1, "-I%s", at("opt/one"));
    snprintf(dir2, sizeof dir2, "--include-path=%s", at("opt/two"));
    const char *o1[] = {dir1}, *o2[] = {dir2};
    put("opt/two/cfg.h", "#define CFG 22\n");
    expect_edit_seen(at("opt/k.cu"), o1, 1, NULL, 0, "opt/one/cfg.h", "#define CFG 1\n", "#define CFG 2\n");
    /* another folder, another header: another key */
    assert_string_not_equal(compile_with(at("opt/k.cu"), o1, 1, NULL, 0).key,
                            compile_with(at("opt/k.cu"), o2, 1, NULL, 0).key);
}

static void test_pre_include(void **state) {
    (void)state;
    put("pre/k.cu", KERNEL_USING("PRE"));
    char opt[PATH_MAX + 20];
    snprintf(opt, sizeof opt, "--pre-include=%s", at("pre/pre.h"));
    const char *o[] = {opt};
    expect_edit_seen(at("pre/k.cu"), o, 1, NULL, 0, "pre/pre.h", "#define PRE 1\n", "#define PRE 2\n");
}

static void test_conditional_include(void **state) {
    (void)state;
    /* the header is hashed even where the #if leaves it out */
    put("cond/k.cu", "#if USE_EXTRA\n#include \"extra.h\"\n#endif\n" KERNEL_USING("1"));
    expect_edit_seen(at("cond/k.cu"), NULL, 0, NULL, 0, "cond/extra.h", "#define E 1\n", "#define E 2\n");
    kj_define on = {"USE_EXTRA", "1"};
    put("cond/extra.h", "#define E 1\n");
    put("cond/k.cu", "#if USE_EXTRA\n#include \"extra.h\"\n#endif\n" KERNEL_USING("E"));
    expect_edit_seen(at("cond/k.cu"), NULL, 0, &on, 1, "cond/extra.h", "#define E 1\n", "#define E 2\n");
}

static void test_macro_include(void **state) {
    (void)state;
    put("mac/k.cu", "#define CONFIG \"config.h\"\n#include CONFIG\n" KERNEL_USING("CFG"));
    expect_edit_seen(at("mac/k.cu"), NULL, 0, NULL, 0, "mac/config.h", "#define CFG 1\n", "#define CFG 2\n");
    /* named by -D */
    put("mac/d.cu", "#include HEADER\n" KERNEL_USING("CFG"));
    kj_define d = {"HEADER", "\"other.h\""};
    expect_edit_seen(at("mac/d.cu"), NULL, 0, &d, 1, "mac/other.h", "#define CFG 1\n", "#define CFG 2\n");
}

static void test_working_folder_never_searched(void **state) {
    (void)state;
    /* a header planted in the working folder is not found for a source elsewhere... */
    put("cwd/planted.h", "#define PLANTED 666\n");
    put("src/needs.cu", "#include \"planted.h\"\n" KERNEL_USING("PLANTED"));
    put("src/beside.cu", "#include \"cfg.h\"\n" KERNEL_USING("CFG"));
    put("src/cfg.h", "#define CFG 1\n");
    put("cwd/cfg.h", "#define CFG 666\n");
    char here[PATH_MAX];
    assert_non_null(getcwd(here, sizeof here));
    assert_int_equal(chdir(at("cwd")), 0);
    kj_request req = {.size = sizeof(kj_request), .kernel = at("src/needs.cu")};
    kj_status s = kj_compile(kj_test_rt, &req, NULL);
    assert_int_equal(s, KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "\"planted.h\" in "));
    /* ...and the one beside the source wins over the working folder's: the same key from anywhere */
    result from_cwd = compile(at("src/beside.cu"));
    assert_int_equal(chdir(here), 0);
    result from_here = compile(at("src/beside.cu"));
    assert_string_equal(from_cwd.key, from_here.key);
    assert_true(from_here.hit);
    /* nothing was stored for the failed compile */
    uint64_t entries = 0;
    KJ_ASSERT_OK(kj_cache_usage(kj_test_rt, &entries, NULL, NULL));
    assert_true(entries > 0);
}

static void test_refused_options(void **state) {
    (void)state;
    put("ref/k.cu", KERNEL_USING("1"));
    static const struct {
        const char *option, *message;
    } cases[] = {
        {"--time=t.csv", "writes a file"},
        {"--create-pch=x.pch", "precompiled headers"},
        {"-U", "undo macros"},
        {"-UFOO", "undo macros"},
        {"-dc", "makes an object to link"},
        {"--fdevice-time-trace=x.json", "writes a file"},
        {"-MD", "dependency file"},
        {"-I", "names no folder"},
        {"--pre-include", "names no file"},
        {"-rdc=maybe", "-rdc=true"},
        {"--resource-usage", "reports each kernel's resources itself"},
        {"-res-usage", "reports each kernel's resources itself"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *o[] = {cases[i].option};
        kj_request req = {.size = sizeof(kj_request), .kernel = at("ref/k.cu"), .options = o, .option_count = 1};
        kj_status s = kj_compile(kj_test_rt, &req, NULL);
        if (s != KJ_ERR_USAGE || !strstr(kj_last_error(), cases[i].message))
            fail_msg("%s: %s, '%s'", cases[i].option, kj_status_name(s), kj_last_error());
    }
    /* a pre-include that is not there is the caller's mistake */
    const char *o[] = {"--pre-include=/nonexistent/x.h"};
    kj_request req = {.size = sizeof(kj_request), .kernel = at("ref/k.cu"), .options = o, .option_count = 1};
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_USAGE);
}

/* Compiles kernel with the options and macros given: its status, and its key and hit when it built. */
static kj_status try_compile(const char *kernel, const char *const *options, size_t nopt, const kj_define *d, size_t nd,
                             result *out) {
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = kernel,
                      .options = options,
                      .option_count = nopt,
                      .defines = d,
                      .define_count = nd};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    kj_status s = kj_compile(kj_test_rt, &req, &r);
    if (s == KJ_OK && out) {
        snprintf(out->key, sizeof out->key, "%s", r.key);
        out->hit = r.cache_hit;
    }
    return s;
}

/* The branch a file's #if took, as a static_assert in it reports it: whether the compile with
 * WANT=want passed. */
static int takes(const char *kernel, const char *want, const char *const *options, size_t nopt) {
    kj_define d = {"WANT", want};
    kj_status s = try_compile(kernel, options, nopt, &d, 1, NULL);
    if (s != KJ_OK && !strstr(kj_last_error(), "the branch taken")) fail_msg("%s: %s", kernel, kj_last_error());
    return s == KJ_OK;
}

#define BRANCH_CHECK(X) "static_assert(" X " == WANT, \"the branch taken\");\n"

/* __has_include answers as the #include of the name would resolve (nvcc stores 71 here), and what it
 * looked at is in the key: a header that appears beside the file, or goes, changes the key and the
 * branch. */
static void test_has_include_beside_and_toolkit(void **state) {
    (void)state;
    put("has/k.cu",
        "#if __has_include(\"cfg.h\")\n#include \"cfg.h\"\n#else\n#define CFG 10\n#endif\n"
        "#if __has_include(<cuda_fp16.h>)\n#define FP16 61\n#else\n#define FP16 0\n#endif\n" BRANCH_CHECK("CFG + FP16")
            KERNEL_USING("CFG + FP16"));
    unlink(at("has/cfg.h"));
    kj_define d71 = {"WANT", "71"}, d81 = {"WANT", "81"};
    result absent, again, back;
    KJ_ASSERT_OK(try_compile(at("has/k.cu"), NULL, 0, &d71, 1, &absent));
    KJ_ASSERT_OK(try_compile(at("has/k.cu"), NULL, 0, &d71, 1, &again));
    assert_string_equal(absent.key, again.key);
    assert_true(again.hit);
    /* the header appears: a new key (not the absent one's binary), and the other branch */
    put("has/cfg.h", "#define CFG 20\n");
    assert_int_equal(try_compile(at("has/k.cu"), NULL, 0, &d71, 1, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "the branch taken"));
    KJ_ASSERT_OK(try_compile(at("has/k.cu"), NULL, 0, &d81, 1, NULL));
    /* an edit of it is an edit of the source */
    put("has/k2.cu", "#if __has_include(\"cfg.h\")\n#include \"cfg.h\"\n#endif\n" KERNEL_USING("1"));
    expect_edit_seen(at("has/k2.cu"), NULL, 0, NULL, 0, "has/cfg.h", "#define CFG 20\n", "#define CFG 21\n");
    /* gone again: the first key, from the cache */
    unlink(at("has/cfg.h"));
    KJ_ASSERT_OK(try_compile(at("has/k.cu"), NULL, 0, &d71, 1, &back));
    assert_string_equal(absent.key, back.key);
    assert_true(back.hit);
}

/* Every way to name what __has_include looks for: an include folder, a header beside a header, the
 * built-in headers, a macro (in the source or with -D), a wrapper macro, and __has_include_next with
 * #include_next. */
static void test_has_include_forms(void **state) {
    (void)state;
    char inc[PATH_MAX + 8], one[PATH_MAX + 8], two[PATH_MAX + 8];
    snprintf(inc, sizeof inc, "-I%s", at("forms/inc"));
    snprintf(one, sizeof one, "-I%s", at("forms/one"));
    snprintf(two, sizeof two, "-I%s", at("forms/two"));
    const char *o_inc[] = {inc}, *o_both[] = {one, two}, *o_one[] = {one};
    put("forms/inc/found.h", "#define FOUND 1\n");
    put("forms/folder.cu",
        "#if __has_include(<found.h>) && !__has_include(<nothere.h>)\n#define R 1\n#else\n#define R 2\n"
        "#endif\n" BRANCH_CHECK("R") KERNEL_USING("R"));
    assert_true(takes(at("forms/folder.cu"), "1", o_inc, 1));
    assert_true(takes(at("forms/folder.cu"), "2", NULL, 0));
    /* a header's quoted names look beside it */
    put("forms/sub/h.h", "#if __has_include(\"near.h\")\n#define NEAR 1\n#else\n#define NEAR 2\n#endif\n");
    put("forms/sub/near.h", "\n");
    put("forms/near.cu", "#include \"sub/h.h\"\n" BRANCH_CHECK("NEAR") KERNEL_USING("NEAR"));
    assert_true(takes(at("forms/near.cu"), "1", NULL, 0));
    /* the built-in headers answer a quoted name, as #include finds them */
    put("forms/builtin.cu", "#if __has_include(\"common.cuh\") && !__has_include(<common.cuh>)\n#define B 1\n#else\n"
                            "#define B 2\n#endif\n" BRANCH_CHECK("B") KERNEL_USING("B"));
    assert_true(takes(at("forms/builtin.cu"), "1", NULL, 0));
    /* NAME #defined as a header name, in the source or with -D */
    put("forms/found.h", "\n");
    put("forms/macro.cu", "#define HEADER \"found.h\"\n#if __has_include(HEADER) && __has_include(OTHER)\n#define M 1\n"
                          "#else\n#define M 2\n#endif\n" BRANCH_CHECK("M") KERNEL_USING("M"));
    kj_define md[] = {{"OTHER", "\"found.h\""}, {"WANT", "1"}};
    KJ_ASSERT_OK(try_compile(at("forms/macro.cu"), NULL, 0, md, 2, NULL));
    /* wrappers: a function-like macro, an alias, one in a header, CCCL's */
    put("forms/wrap.h", "#define HAS_HEADER(x) (defined(__has_include) && __has_include(x))\n");
    put("forms/wrap.cu",
        "#include \"wrap.h\"\n#define HAS(x) __has_include(x)\n#define HAS_ALIAS __has_include\n"
        "#define _CCCL_HAS_INCLUDE(x) __has_include(x)\n"
        "#if HAS(\"found.h\") && !HAS(\"nothere.h\") && HAS_ALIAS(\"found.h\") && HAS_HEADER(\"found.h\") && "
        "_CCCL_HAS_INCLUDE(\"found.h\")\n#define W 1\n#else\n#define W 2\n#endif\n" BRANCH_CHECK("W")
            KERNEL_USING("W"));
    assert_true(takes(at("forms/wrap.cu"), "1", NULL, 0));
    /* __has_include_next and #include_next go on past the folder the header was found in */
    put("forms/one/n.h", "#if __has_include_next(<n.h>)\n#include_next <n.h>\n#else\n#define N 2\n#endif\n");
    put("forms/two/n.h", "#define N 1\n");
    put("forms/next.cu", "#include <n.h>\n" BRANCH_CHECK("N") KERNEL_USING("N"));
    assert_true(takes(at("forms/next.cu"), "1", o_both, 2));
    assert_true(takes(at("forms/next.cu"), "2", o_one, 1));
}

/* An operand kernjit cannot resolve is refused: NVRTC, which sees no user folder, would answer false
 * for a file kernjit would have found. */
static void test_has_include_refused(void **state) {
    (void)state;
    put("hasref/name.cu", "#define NOWHERE PICK(cfg)\n#if __has_include(NOWHERE)\n#endif\n" KERNEL_USING("1"));
    assert_int_equal(try_compile(at("hasref/name.cu"), NULL, 0, NULL, 0, NULL), KJ_ERR_SOURCE);
    assert_non_null(strstr(kj_last_error(), "__has_include(NOWHERE) in "));
    assert_non_null(strstr(kj_last_error(), "kernjit follows __has_include(NAME) only when NAME is #defined as"));
    put("hasref/odd.cu", "#if __has_include(dir/x.h)\n#endif\n" KERNEL_USING("1"));
    assert_int_equal(try_compile(at("hasref/odd.cu"), NULL, 0, NULL, 0, NULL), KJ_ERR_SOURCE);
    assert_non_null(strstr(kj_last_error(), "__has_include(dir/x.h) in "));
    assert_non_null(strstr(kj_last_error(), "only as \"file\", <file> or a NAME #defined as one"));
    put("hasref/open.cu", "#if __has_include(\"x.h\"\n#endif\n" KERNEL_USING("1"));
    assert_int_equal(try_compile(at("hasref/open.cu"), NULL, 0, NULL, 0, NULL), KJ_ERR_SOURCE);
    assert_non_null(strstr(kj_last_error(), "kernjit reads __has_include only with its operand and ')' on the line"));
    /* a NAME defined nowhere is NVRTC's error where it is evaluated, and nothing where it is not */
    put("hasref/unset.cu", "#ifdef UNSET\n#if __has_include(UNSET)\n#endif\n#endif\n" KERNEL_USING("1"));
    KJ_ASSERT_OK(try_compile(at("hasref/unset.cu"), NULL, 0, NULL, 0, NULL));
    put("hasref/unset2.cu", "#if __has_include(UNSET)\n#endif\n" KERNEL_USING("1"));
    assert_int_equal(try_compile(at("hasref/unset2.cu"), NULL, 0, NULL, 0, NULL), KJ_ERR_COMPILE);
    /* `defined(__has_include)` and #ifdef ask whether it exists: nothing to resolve */
    put("hasref/defined.cu",
        "#if defined(__has_include)\n#define D 1\n#endif\n#ifdef __has_include\n#endif\n" KERNEL_USING("D"));
    KJ_ASSERT_OK(try_compile(at("hasref/defined.cu"), NULL, 0, NULL, 0, NULL));
}

/* A built-in's includes are its own headers: a common.cuh in an include folder changes nothing. */
static void test_builtin_headers_are_its_own(void **state) {
    (void)state;
    put("planted/common.cuh", "#error planted\n");
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "-I%s", at("planted"));
    const char *o[] = {dir};
    kj_define d = {"OP", "max"};
    result plain, with;
    KJ_ASSERT_OK(try_compile("reduce", NULL, 0, &d, 1, &plain));
    KJ_ASSERT_OK(try_compile("reduce", o, 1, &d, 1, &with));
    assert_string_equal(plain.key, with.key);
    assert_true(with.hit);
}

/* The toolkit's own folders given again with -I (as CuPy's and jitify's examples do) are the
 * toolkit's: one file has one name (no "already defined"), the key is the one without them, and
 * nothing is linked that was not. */
static void test_toolkit_folders_given_again(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/jit_cub.cu", KJ_TEST_KERNELS);
    char cccl[PATH_MAX + 32], include[PATH_MAX + 32], slash[PATH_MAX + 32];
    snprintf(cccl, sizeof cccl, "-I%s/include/cccl", kj__cuda_home());
    snprintf(include, sizeof include, "-I%s/include", kj__cuda_home());
    snprintf(slash, sizeof slash, "--include-path=%s/include/", kj__cuda_home());
    const char *const options[][1] = {{cccl}, {include}, {slash}};
    kj_request req = {.size = sizeof(kj_request), .kernel = path, .entry = "cub_sums<256>"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    char key[33];
    snprintf(key, sizeof key, "%s", r.key);
    for (size_t i = 0; i < 3; i++) {
        req.options = options[i];
        req.option_count = 1;
        if (kj_compile(kj_test_rt, &req, &r) != KJ_OK) fail_msg("%s: %s", options[i][0], kj_last_error());
        assert_string_equal(r.key, key);
        assert_false(r.linked);
    }
}

/* The user kernels of tests/kernels: the toolkit's headers, dynamic parallelism without metadata, a
 * wrapper, each with no options. */
static void test_user_kernels_compile(void **state) {
    (void)state;
    static const struct {
        const char *file, *entry;
        int linked;
    } kernels[] = {
        {"jit_coop.cu", "coop_sum", 0},          {"jit_cub.cu", "cub_sums<256>", 0},
        {"jit_atomic.cu", "histogram", 0},       {"jit_half.cu", "axpy_half", 0},
        {"jit_half.cu", "axpy_bf16", 0},         {"jit_tail.cu", "parent", 1},
        {"jit_wrapper.cu", "histogram", 0},      {"jit_wrapper.cu", "axpy_bf16", 0},
        {"jit_mma.cu", "mma_tile", 0},           {"jit_cg_scan.cu", "warp_scans", 0},
        {"jit_cub_sort.cu", "sort_and_scan", 0}, {"jit_std_atomic.cu", "count_above", 0},
        {"jit_cluster.cu", "cluster_sums", 0},   {"jit_struct.cu", "affine", 0},
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", KJ_TEST_KERNELS, kernels[i].file);
        kj_request req = {.size = sizeof(kj_request), .kernel = path, .entry = kernels[i].entry};
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        kj_status s = kj_compile(kj_test_rt, &req, &r);
        if (s != KJ_OK) fail_msg("%s:%s: %s", kernels[i].file, kernels[i].entry, kj_last_error());
        assert_int_equal(r.linked, kernels[i].linked);
    }
}

/* A block that declares no macro accepts any well-formed -D; `-rdc=true` links the device runtime. */
static void test_metadata_without_params_and_rdc_option(void **state) {
    (void)state;
    put("meta/k.cu", "//@kernjit rdc\n" KERNEL_USING("N"));
    kj_define d = {"N", "3"};
    kj_request req = {.size = sizeof(kj_request), .kernel = at("meta/k.cu"), .defines = &d, .define_count = 1};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    assert_true(r.linked);
    put("meta/plain.cu", KERNEL_USING("1"));
    const char *o[] = {"-rdc=true"};
    kj_request plain = {.size = sizeof(kj_request), .kernel = at("meta/plain.cu"), .options = o, .option_count = 1};
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &plain, &r));
    assert_true(r.linked);
    plain.option_count = 0;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &plain, &r));
    assert_false(r.linked);
}

/* NVRTC's warnings reach the compile result, from the compile and again from the cache. */
static void test_warnings_kept(void **state) {
    (void)state;
    put("warn/k.cu", "#define ROWS 16\n" KERNEL_USING("ROWS"));
    kj_define d = {"ROWS", "8"};
    kj_request req = {.size = sizeof(kj_request), .kernel = at("warn/k.cu"), .defines = &d, .define_count = 1};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    assert_false(r.cache_hit);
    assert_non_null(strstr(r.log, "incompatible redefinition of macro \"ROWS\""));
    assert_non_null(strstr(r.log, at("warn/k.cu"))); /* the real path, not NVRTC's name for it */
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    assert_true(r.cache_hit);
    assert_non_null(strstr(r.log, "incompatible redefinition of macro \"ROWS\""));
    put("warn/clean.cu", KERNEL_USING("1"));
    kj_request clean = {.size = sizeof(kj_request), .kernel = at("warn/clean.cu")};
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &clean, &r));
    assert_string_equal(r.log, "");
}

/* The one kernel of a file is found past kernels that are commented out or under #if 0. */
static void test_entry_detection_ignores_dead_code(void **state) {
    (void)state;
    put("dead/k.cu", "// __global__ void old(int *o) { }\n"
                     "/* __global__ void older(int *o) { } */\n"
                     "#if 0\n__global__ void disabled(int *o) { }\n#else\n"
                     "__global__ void live(int *o) { o[0] = 1; }\n#endif\n");
    kj_request req = {.size = sizeof(kj_request), .kernel = at("dead/k.cu")};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    put("dead/two.cu", "__global__ void a(int *o) { }\n__global__ void b(int *o) { }\n");
    kj_request two = {.size = sizeof(kj_request), .kernel = at("dead/two.cu")};
    assert_int_equal(kj_compile(kj_test_rt, &two, &r), KJ_ERR_UNKNOWN_ENTRY);
    assert_non_null(strstr(kj_last_error(), "several kernels (a, b)"));
}

/* Failed compiles that a user's first file meets say the way out: NVRTC has no C library headers
 * (device printf needs none); a header of host declarations compiles with -default-device. */
static void test_failure_hints(void **state) {
    (void)state;
    put("hint/stdio.cu", "#include <stdio.h>\nextern \"C\" __global__ void k(int *o) { printf(\"%d\\n\", o[0]); }\n");
    kj_request req = {.size = sizeof(kj_request), .kernel = at("hint/stdio.cu")};
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "NVRTC ships no C library headers; device printf and assert need none"));
    put("hint/host.h", "int twice(int x) { return 2 * x; }\n");
    put("hint/host.cu", "#include \"host.h\"\nextern \"C\" __global__ void k(int *o) { o[0] = twice(o[0]); }\n");
    req.kernel = at("hint/host.cu");
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "can be compiled for the device with --option -default-device"));
    const char *o[] = {"-default-device"};
    req.options = o;
    req.option_count = 1;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, NULL));
    /* without the #include, device printf compiles */
    put("hint/printf.cu", "extern \"C\" __global__ void k(int *o) { printf(\"%d\\n\", o[0]); }\n");
    kj_request plain = {.size = sizeof(kj_request), .kernel = at("hint/printf.cu")};
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &plain, NULL));
    /* all of CUB is host code too: the block- and warp-level headers are what a kernel includes */
    put("hint/cub.cu", "#include <cub/cub.cuh>\n" KERNEL_USING("1"));
    kj_request cub = {.size = sizeof(kj_request), .kernel = at("hint/cub.cu")};
    assert_int_equal(kj_compile(kj_test_rt, &cub, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "note: <cub/cub.cuh>, CUB's device-wide algorithms (<cub/device/...>) and "
                                            "Thrust are host code, which NVRTC does not compile"));
    assert_null(strstr(kj_last_error(), "-default-device"));
}

/* Messages name files as the user knows them: a header by its path (also inside parentheses), a
 * built-in by its name. */
static void test_messages_name_files(void **state) {
    (void)state;
    put("names/a.h", "__device__ int v;\n");
    put("names/b.h", "__device__ int v;\n");
    put("names/k.cu", "#include \"a.h\"\n#include \"b.h\"\n" KERNEL_USING("v"));
    kj_request req = {.size = sizeof(kj_request), .kernel = at("names/k.cu")};
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_COMPILE);
    char want[PATH_MAX + 40];
    snprintf(want, sizeof want, "(previous definition at line 1 of %s)", at("names/a.h"));
    if (!strstr(kj_last_error(), want)) fail_msg("no '%s' in: %s", want, kj_last_error());
    put("names/bad.h", "int oops = ;\n");
    char pre[PATH_MAX + 20];
    snprintf(pre, sizeof pre, "--pre-include=%s", at("names/bad.h"));
    const char *o[] = {pre};
    req = (kj_request){.size = sizeof(kj_request), .kernel = "vector_add", .options = o, .option_count = 1};
    assert_int_equal(kj_compile(kj_test_rt, &req, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "compiling built-in vector_add.cu failed"));
}

KJ_TEST_MAIN(kj_test_setup_workspace, kj_test_teardown, cmocka_unit_test(test_header_beside),
             cmocka_unit_test(test_sibling_in_subfolder), cmocka_unit_test(test_parent_folder_and_two_projects),
             cmocka_unit_test(test_absolute_path), cmocka_unit_test(test_include_folder_option),
             cmocka_unit_test(test_pre_include), cmocka_unit_test(test_conditional_include),
             cmocka_unit_test(test_macro_include), cmocka_unit_test(test_working_folder_never_searched),
             cmocka_unit_test(test_refused_options), cmocka_unit_test(test_user_kernels_compile),
             cmocka_unit_test(test_metadata_without_params_and_rdc_option), cmocka_unit_test(test_warnings_kept),
             cmocka_unit_test(test_entry_detection_ignores_dead_code), cmocka_unit_test(test_failure_hints),
             cmocka_unit_test(test_has_include_beside_and_toolkit), cmocka_unit_test(test_has_include_forms),
             cmocka_unit_test(test_has_include_refused), cmocka_unit_test(test_builtin_headers_are_its_own),
             cmocka_unit_test(test_toolkit_folders_given_again), cmocka_unit_test(test_messages_name_files))
