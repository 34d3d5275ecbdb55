/* Compiling only the entry asked for (trim.h): which definitions go, which stay, and that what is
 * left keeps every line and every preprocessor line where it was. */
#include "test_util.h"

#include "jit/lex.h"
#include "jit/trim.h"

static const char *const three[] = {"first", "second", "third"};

/* The text trimmed to keep; NULL when nothing was left out. */
static char *trim(const char *text, const char *const *entries, size_t n, const char *keep, const char *header) {
    char *code = kj__lex_blank(text, strlen(text), 1);
    char *header_code = header ? kj__lex_blank(header, strlen(header), 1) : NULL;
    assert_non_null(code);
    const char *headers[] = {header_code};
    char *out = (char *)1;
    int r = kj__trim_to_entry(text, code, strlen(text), entries, n, keep, headers, header ? 1 : 0, &out);
    free(code);
    free(header_code);
    assert_int_not_equal(r, -1);
    assert_int_equal(r == 1, out != NULL);
    if (out) {
        assert_int_equal(strlen(out), strlen(text));
        for (size_t i = 0; text[i]; i++)
            if (text[i] == '\n') assert_int_equal(out[i], '\n'); /* every line where it was */
    }
    return out;
}

static const char *file = "#include \"common.cuh\"\n"
                          "// first(): a comment naming an entry does not keep it\n"
                          "__device__ int helper(int v) { return v + 1; }\n"
                          "#define LIMIT 4\n"
                          "extern \"C\" __global__ void __launch_bounds__(256) first(int *v) {\n"
                          "#pragma unroll\n"
                          "    for (int i = 0; i < LIMIT; i++) v[i] = helper(i);\n"
                          "}\n"
                          "extern \"C\" __global__ void second(int *v) { if (v) { v[0] = '}'; } }\n"
                          "#define AFTER 1\n"
                          "extern \"C\"\n"
                          "__global__ void third(int *v) { v[1] = AFTER; }\n";

static void test_leaves_out_the_others(void **state) {
    (void)state;
    char *out = trim(file, three, 3, "third", NULL);
    assert_non_null(out);
    assert_null(strstr(out, "first(int"));
    assert_null(strstr(out, "second"));
    assert_null(strstr(out, "pragma"));                    /* the unroll went with its loop */
    assert_non_null(strstr(out, "__device__ int helper")); /* not an entry: stays */
    assert_non_null(strstr(out, "#define LIMIT 4\n"));
    assert_non_null(strstr(out, "#define AFTER 1\n"));
    assert_non_null(strstr(out, "extern \"C\"\n__global__ void third(int *v) { v[1] = AFTER; }"));
    assert_non_null(strstr(out, "// first(): a comment")); /* comments outside definitions stay */
    free(out);
    out = trim(file, three, 3, "first", NULL);
    assert_non_null(strstr(out, "first(int *v) {\n#pragma unroll\n"));
    assert_null(strstr(out, "second"));
    assert_null(strstr(out, "third"));
    free(out);
}

static void test_what_stays_never_names_what_goes(void **state) {
    (void)state;
    /* a device-side launch keeps the launched entry, and what that one names in turn */
    const char *launches = "extern \"C\" __global__ void first(int *v) { second<<<1, 1>>>(v); }\n"
                           "extern \"C\" __global__ void second(int *v) { if (!v) third<<<1, 1>>>(v); }\n"
                           "extern \"C\" __global__ void third(int *v) { v[0] = 1; }\n";
    assert_null(trim(launches, three, 3, "first", NULL));
    char *out = trim(launches, three, 3, "second", NULL);
    assert_null(strstr(out, "void first"));
    assert_non_null(strstr(out, "void third"));
    free(out);
    /* a prototype, a macro and a header name an entry: it stays */
    const char *proto = "extern \"C\" __global__ void second(int *v);\n"
                        "extern \"C\" __global__ void first(int *v) { }\n"
                        "extern \"C\" __global__ void second(int *v) { }\n"
                        "#define THIRD third\n"
                        "extern \"C\" __global__ void third(int *v) { }\n";
    assert_null(trim(proto, three, 3, "first", NULL));
    const char *plain = "extern \"C\" __global__ void first(int *v) { }\n"
                        "extern \"C\" __global__ void second(int *v) { }\n"
                        "extern \"C\" __global__ void third(int *v) { }\n";
    out = trim(plain, three, 3, "first", "void launch_second() { second<<<1, 1>>>(0); }\n");
    assert_non_null(strstr(out, "void second"));
    assert_null(strstr(out, "void third"));
    free(out);
}

static void test_what_cannot_go(void **state) {
    (void)state;
    /* a preprocessor line inside a body other than an unroll pragma: the definition stays */
    const char *cond = "extern \"C\" __global__ void first(int *v) { }\n"
                       "extern \"C\" __global__ void second(int *v) {\n#if X\n v[0] = 1;\n#endif\n}\n";
    assert_null(trim(cond, three, 2, "first", NULL));
    /* an entry only declared, or not __global__, or under #if 0: nothing to leave out */
    const char *decl = "extern \"C\" __global__ void first(int *v) { }\n"
                       "extern \"C\" __global__ void second(int *v);\n"
                       "__device__ void third(int *v) { }\n"
                       "#if 0\nextern \"C\" __global__ void third(int *v) { }\n#endif\n";
    assert_null(trim(decl, three, 3, "first", NULL));
    /* a definition continued from a multi-line #define starts after it */
    const char *cont = "#define TWO(x) \\\n  ((x) * 2)\n"
                       "extern \"C\" __global__ void second(int *v) { v[0] = TWO(1); }\n"
                       "extern \"C\" __global__ void first(int *v) { }\n";
    char *out = trim(cont, three, 2, "first", NULL);
    assert_non_null(strstr(out, "#define TWO(x) \\\n  ((x) * 2)\n"));
    assert_null(strstr(out, "second"));
    free(out);
    /* one entry, or one asked for in a file that has only it: nothing to do */
    assert_null(trim(cont, three, 1, "first", NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_leaves_out_the_others),
                                       cmocka_unit_test(test_what_stays_never_names_what_goes),
                                       cmocka_unit_test(test_what_cannot_go)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
