/* Finding kernel sources: built-in, KERNJIT_PATH, explicit paths, quoted includes, and the ways a
 * source can be unusable. */
#include "test_util.h"

#include <sys/stat.h>

#include "jit/source.h"

static char *path_in(const char *name) {
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", kj_test_dir, name);
    return p;
}

static void put(const char *name, const char *text) { kj_test_write(path_in(name), text, strlen(text)); }

static void expect_fail(const char *search, const char *kernel, kj_status want, const char *needle) {
    kj__source *s = NULL;
    kj_status got = kj__source_find(search, kernel, NULL, &s);
    if (got != want)
        fail_msg("%s: got %s (%s), expected %s", kernel, kj_status_name(got), kj_last_error(), kj_status_name(want));
    assert_null(s);
    if (!strstr(kj_last_error(), needle)) fail_msg("message '%s' lacks '%s'", kj_last_error(), needle);
}

static void test_builtin(void **state) {
    (void)state;
    assert_true(kj_builtin_count() >= 1);
    int has_reduce = 0; /* other families are built in too, in name order */
    for (size_t i = 0; i < kj_builtin_count(); i++) has_reduce |= strcmp(kj_builtin_name(i), "reduce") == 0;
    assert_true(has_reduce);
    assert_null(kj_builtin_name(kj_builtin_count()));
    kj__source *s;
    KJ_ASSERT_OK(kj__source_find(NULL, "reduce", NULL, &s));
    assert_true(s->embedded);
    assert_string_equal(s->origin, "built-in reduce.cu"); /* what messages call it */
    assert_string_equal(s->file, "reduce.cu");
    assert_non_null(strstr(s->text, "//@kernjit"));
    /* common.cuh is resolved from the embedded copy */
    assert_int_equal(s->header_count, 1);
    assert_string_equal(s->headers[0].name, KJ__VROOT "/common.cuh");
    assert_null(s->headers[0].path); /* embedded */
    /* the include line names it as NVRTC knows it */
    assert_non_null(strstr(s->text, "#include \"" KJ__VROOT "/common.cuh\""));
    kj__source_free(s);
}

static void test_search_path_overrides(void **state) {
    (void)state;
    put("reduce.cu", "// mine\n#include \"common.cuh\"\n__global__ void x() {}\n");
    put("common.cuh", "// my common\n");
    char search[PATH_MAX + 16];
    snprintf(search, sizeof search, "/nonexistent:%s", kj_test_dir);
    kj__source *s;
    KJ_ASSERT_OK(kj__source_find(search, "reduce", NULL, &s));
    assert_false(s->embedded);
    assert_string_equal(s->origin, path_in("reduce.cu"));
    assert_non_null(strstr(s->text, "// mine"));
    /* the header beside the file wins over the embedded one */
    assert_int_equal(s->header_count, 1);
    assert_string_equal(s->headers[0].text, "// my common\n");
    kj__source_free(s);
    /* a folder without the file falls back to the built-in */
    KJ_ASSERT_OK(kj__source_find("/nonexistent", "reduce", NULL, &s));
    assert_true(s->embedded);
    kj__source_free(s);
    unlink(path_in("reduce.cu"));
    unlink(path_in("common.cuh"));
}

/* A built-in's includes are its own headers, whatever folders the request or KERNJIT_PATH name; an
 * override on KERNJIT_PATH is a user file: the header beside it, else the built-in one. */
static void test_builtin_headers_first(void **state) {
    (void)state;
    mkdir(path_in("planted"), 0700);
    put("planted/common.cuh", "#error planted\n");
    char *dir = strdup(path_in("planted"));
    char *const dirs[] = {dir};
    kj__include_config cfg = {.search_path = dir, .dirs = dirs, .dir_count = 1};
    kj__source *s;
    KJ_ASSERT_OK(kj__source_find_with(&cfg, "reduce", NULL, &s));
    assert_int_equal(s->header_count, 1);
    assert_null(s->headers[0].path);
    assert_null(strstr(s->headers[0].text, "planted"));
    kj__source_free(s);
    /* the override, with no common.cuh beside it: the built-in one */
    mkdir(path_in("over"), 0700);
    put("over/reduce.cu", "#include \"common.cuh\"\n__global__ void x() {}\n");
    KJ_ASSERT_OK(kj__source_find(path_in("over"), "reduce", NULL, &s));
    assert_false(s->embedded);
    assert_int_equal(s->header_count, 1);
    assert_null(s->headers[0].path);
    assert_string_equal(s->headers[0].name, KJ__VROOT "/common.cuh");
    kj__source_free(s);
    free(dir);
}

/* A user file may have a built-in header's name: the built-in header, which a built-in header
 * includes, then takes a name no user file can have, and NVRTC gets both. */
static void test_builtin_header_name_taken(void **state) {
    (void)state;
    mkdir(path_in("clash"), 0700);
    put("clash/cdp_status.h", "#define MINE 1\n");
    put("clash/k.cu", "#include \"cdp_status.h\"\n#include \"cdp.cuh\"\n__global__ void k() {}\n");
    kj__source *s;
    KJ_ASSERT_OK(kj__source_find(NULL, path_in("clash/k.cu"), NULL, &s));
    const kj__header *mine = NULL, *builtin = NULL, *cdp = NULL;
    for (size_t i = 0; i < s->header_count; i++) {
        const kj__header *h = &s->headers[i];
        if (h->path && strstr(h->path, "clash/cdp_status.h")) mine = h;
        if (!h->path && strstr(h->name, "cdp_status.h")) builtin = h;
        if (!h->path && strstr(h->name, "cdp.cuh")) cdp = h;
    }
    assert_non_null(mine);
    assert_non_null(builtin);
    assert_non_null(cdp);
    assert_string_equal(mine->name, KJ__VROOT "/cdp_status.h");
    assert_string_equal(builtin->name, KJ__VROOT "/./built-in/cdp_status.h");
    assert_non_null(strstr(cdp->text, "#include \"" KJ__VROOT "/./built-in/cdp_status.h\""));
    kj__source_free(s);
}

static void test_explicit_path_and_nested_includes(void **state) {
    (void)state;
    mkdir(path_in("inc"), 0700);
    put("k.cu", "#include \"a.cuh\"\n  #  include \"inc/b.cuh\"\n#include <cstdio>\n#include "
                "\"missing.cuh\"\n__global__ void k() {}\n");
    put("a.cuh", "#include \"inc/b.cuh\"\n#include \"a.cuh\"\n");
    put("inc/b.cuh", "#define B 1\n");
    kj__source *s;
    KJ_ASSERT_OK(kj__source_find(NULL, path_in("k.cu"), NULL, &s));
    assert_string_equal(s->name, "k");
    assert_string_equal(s->file, "k.cu");
    /* a.cuh and inc/b.cuh once each, named relative to the source's folder; <cstdio> and
     * missing.cuh are found nowhere: left as written, and said */
    assert_int_equal(s->header_count, 2);
    assert_string_equal(s->headers[0].name, KJ__VROOT "/a.cuh");
    assert_string_equal(s->headers[1].name, KJ__VROOT "/inc/b.cuh");
    assert_non_null(strstr(s->unresolved.data, "\"missing.cuh\" in "));
    assert_non_null(strstr(s->unresolved.data, "<cstdio> in "));
    assert_non_null(strstr(s->text, "#include <cstdio>"));
    assert_false(s->toolkit);
    kj__source_free(s);
}

static void test_source_text(void **state) {
    (void)state;
    kj__source *s;
    KJ_ASSERT_OK(kj__source_find(NULL, NULL, "#include \"common.cuh\"\n__global__ void k() {}", &s));
    assert_string_equal(s->name, "source");
    assert_int_equal(s->header_count, 1);
    kj__source_free(s);
    KJ_ASSERT_OK(kj__source_find(NULL, "mine.cu", "__global__ void k() {}", &s));
    assert_string_equal(s->file, "mine.cu");
    kj__source_free(s);
}

static void test_bad_sources(void **state) {
    (void)state;
    expect_fail(NULL, "nosuch", KJ_ERR_UNKNOWN_KERNEL, "the built-in kernels are ");
    assert_non_null(strstr(kj_last_error(), "reduce"));
    expect_fail(NULL, "", KJ_ERR_USAGE, "empty kernel name");
    expect_fail(NULL, "bad name!", KJ_ERR_USAGE, "letters, digits");
    char longname[200];
    memset(longname, 'a', 100);
    longname[100] = '\0';
    expect_fail(NULL, longname, KJ_ERR_USAGE, "at most 64");
    char longpath[PATH_MAX + 10];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    expect_fail(NULL, longpath, KJ_ERR_USAGE, "at most");
    expect_fail(NULL, path_in("missing.cu"), KJ_ERR_SOURCE, "No such file");
    put("empty.cu", "");
    expect_fail(NULL, path_in("empty.cu"), KJ_ERR_SOURCE, "is empty");
    kj_test_write(path_in("binary.cu"),
                  "\x7f"
                  "ELF\0\0__global__",
                  16);
    expect_fail(NULL, path_in("binary.cu"), KJ_ERR_SOURCE, "not text");
    put("notes.cu", "just some notes, no kernel here\n");
    expect_fail(NULL, path_in("notes.cu"), KJ_ERR_SOURCE, "not a kernel file");
    mkdir(path_in("folder.cu"), 0700);
    expect_fail(NULL, path_in("folder.cu"), KJ_ERR_SOURCE, "a folder");
    put("afile", "x");
    expect_fail(path_in("afile"), "reduce", KJ_ERR_USAGE, "is not a folder");
}

KJ_TEST_MAIN(kj_test_setup_dir, kj_test_teardown, cmocka_unit_test(test_builtin),
             cmocka_unit_test(test_search_path_overrides), cmocka_unit_test(test_builtin_headers_first),
             cmocka_unit_test(test_builtin_header_name_taken), cmocka_unit_test(test_explicit_path_and_nested_includes),
             cmocka_unit_test(test_source_text), cmocka_unit_test(test_bad_sources))
