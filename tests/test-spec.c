/* Metadata parsing and macro validation (src/jit/spec.c, src/base/expr.c). */
#include "test_util.h"

#include "base/error.h"
#include "base/expr.h"
#include "jit/spec.h"
#include "base/util.h"

static kj__spec *parse_ok(const char *text) {
    kj__spec *s = NULL;
    kj_status st = kj__spec_parse("t.cu", text, strlen(text), &s);
    if (st != KJ_OK) fail_msg("parse failed: %s", kj_last_error());
    return s;
}

static void parse_bad(const char *text, const char *needle) {
    kj__spec *s = NULL;
    assert_int_equal(kj__spec_parse("t.cu", text, strlen(text), &s), KJ_ERR_SPEC);
    assert_null(s);
    if (!strstr(kj_last_error(), needle)) fail_msg("message '%s' lacks '%s'", kj_last_error(), needle);
}

static void test_full_block(void **state) {
    (void)state;
    kj__spec *s = parse_ok("//@kernjit summary  Some kernels \n"
                           "//@kernjit entry a b\n"
                           "//@kernjit entry c\n"
                           "//@kernjit param OP sum max = max\n"
                           "//@kernjit tune BLOCK_SIZE pow2 32..256 = 64\n"
                           "//@kernjit tune N 1..4 = 2\n"
                           "//@kernjit launch GRID pow2 1..8 = 2\n"
                           "//@kernjit require BLOCK_SIZE * N <= 512\n"
                           "//@kernjit rdc\n"
                           "//@kernjit limit pending-launches 4096\n"
                           "//@kernjit whole-file\n"
                           "__global__ void a() {}\n");
    assert_true(s->present);
    assert_string_equal(s->summary, "Some kernels");
    assert_int_equal(s->entry_count, 3);
    assert_string_equal(s->entries[2], "c");
    assert_int_equal(s->param_count, 4);
    const kj__param *grid = kj__spec_find_param(s, "GRID");
    assert_true(grid->launch);
    assert_true(grid->tunable);
    assert_int_equal(grid->value_count, 4);
    assert_false(kj__spec_find_param(s, "N")->launch);
    /* the launch parameter is validated with the others, then left out of what the compiler gets */
    kj_define bad[] = {{"GRID", "3"}};
    char **canonical;
    size_t count;
    assert_int_equal(kj__spec_resolve(s, "k", bad, 1, &canonical, &count), KJ_ERR_INVALID_DEFINE);
    kj_define good[] = {{"GRID", "8"}};
    KJ_ASSERT_OK(kj__spec_resolve(s, "k", good, 1, &canonical, &count));
    assert_int_equal(count, 4);
    kj__spec_drop_launch(s, canonical, &count);
    assert_int_equal(count, 3);
    for (size_t i = 0; i < count; i++) assert_null(strstr(canonical[i], "GRID"));
    kj__strings_free(canonical, count);
    const kj__param *b = kj__spec_find_param(s, "BLOCK_SIZE");
    assert_non_null(b);
    assert_int_equal(b->value_count, 4);
    assert_string_equal(b->values[0], "32");
    assert_string_equal(b->values[3], "256");
    assert_true(b->tunable);
    assert_false(kj__spec_find_param(s, "OP")->tunable);
    assert_int_equal(kj__spec_find_param(s, "N")->value_count, 4);
    assert_true(s->rdc);
    assert_true(s->whole_file);
    assert_int_equal(s->pending_launches, 4096);
    assert_int_equal(s->require_count, 1);
    kj__spec_free(s);
}

static void test_no_metadata(void **state) {
    (void)state;
    kj__spec *s = parse_ok("extern \"C\" __global__ void k() {}\n");
    assert_false(s->present);
    kj_define d[] = {{"ANY", "3"}, {"ALPHA", "x"}};
    char **list;
    size_t n;
    KJ_ASSERT_OK(kj__spec_resolve(s, "k", d, 2, &list, &n));
    assert_int_equal(n, 2);
    assert_string_equal(list[0], "ALPHA=x"); /* sorted */
    assert_string_equal(list[1], "ANY=3");
    kj__strings_free(list, n);
    /* BLOCK_SIZE is checked even without metadata */
    kj_define bad = {"BLOCK_SIZE", "48"};
    assert_int_equal(kj__spec_resolve(s, "k", &bad, 1, &list, &n), KJ_ERR_INVALID_DEFINE);
    kj__spec_free(s);
}

static void test_malformed(void **state) {
    (void)state;
    parse_bad("//@kernjit param OP sum max\n", "NAME VALUES... = DEFAULT");
    parse_bad("//@kernjit param OP sum max = avg\n", "default 'avg' is not among");
    parse_bad("//@kernjit param 9X a = a\n", "C identifier");
    parse_bad("//@kernjit param A x = x\n//@kernjit param A y = y\n", "declared twice");
    parse_bad("//@kernjit tune BLOCK_SIZE 32 48 = 32\n", "not a power of two");
    parse_bad("//@kernjit tune BLOCK_SIZE pow2 32..2048 = 32\n", "not a power of two up to 1024");
    parse_bad("//@kernjit tune X pow2 3..8 = 4\n", "powers of two");
    parse_bad("//@kernjit tune X 5..1 = 5\n", "not a range");
    parse_bad("//@kernjit bogus\n", "unknown directive");
    parse_bad("//@kernjit entry 1abc\n", "not a C identifier");
    parse_bad("//@kernjit limit pending-launches 0\n", "pending-launches");
    parse_bad("//@kernjit rdc yes\n", "takes no arguments");
    parse_bad("//@kernjit whole-file yes\n", "`whole-file` takes no arguments");
    parse_bad("//@kernjit tune A 1 2 = 2\n//@kernjit require A < 2\n", "defaults fail");
    /* the line number is in the message */
    parse_bad("\n\n//@kernjit bogus\n", "t.cu:3:");
}

static kj__spec *reduce_like(void) {
    return parse_ok("//@kernjit entry r\n"
                    "//@kernjit param OP sum max min prod = sum\n"
                    "//@kernjit tune BLOCK_SIZE pow2 32..1024 = 256\n"
                    "//@kernjit tune COARSE_FACTOR 1 2 4 8 = 2\n"
                    "//@kernjit require BLOCK_SIZE * COARSE_FACTOR <= 4096\n");
}

static void expect_invalid(kj__spec *s, const char *name, const char *value, const char *needle) {
    kj_define d = {name, value};
    char **list = NULL;
    size_t n = 0;
    kj_status st = kj__spec_resolve(s, "reduce", &d, 1, &list, &n);
    assert_int_equal(st, KJ_ERR_INVALID_DEFINE);
    if (!strstr(kj_last_error(), needle)) fail_msg("message '%s' lacks '%s'", kj_last_error(), needle);
}

static void test_validation(void **state) {
    (void)state;
    kj__spec *s = reduce_like();
    char **list;
    size_t n;
    KJ_ASSERT_OK(kj__spec_resolve(s, "reduce", NULL, 0, &list, &n));
    assert_int_equal(n, 3);
    assert_string_equal(list[0], "BLOCK_SIZE=256");
    assert_string_equal(list[1], "COARSE_FACTOR=2");
    assert_string_equal(list[2], "OP=sum");
    kj__strings_free(list, n);

    kj_define ok[] = {{"OP", "max"}, {"BLOCK_SIZE", "1024"}};
    KJ_ASSERT_OK(kj__spec_resolve(s, "reduce", ok, 2, &list, &n));
    assert_string_equal(list[0], "BLOCK_SIZE=1024");
    assert_string_equal(list[2], "OP=max");
    kj__strings_free(list, n);

    expect_invalid(s, "OP", "avg", "allowed values are sum max min prod");
    expect_invalid(s, "FOO", "1", "its macros are OP, BLOCK_SIZE, COARSE_FACTOR");
    expect_invalid(s, "BLOCK_SIZE", "300", "power of two");
    expect_invalid(s, "BLOCK_SIZE", "2048", "power of two from 1 to 1024");
    expect_invalid(s, "BLOCK_SIZE", "0", "power of two");
    expect_invalid(s, "BLOCK_SIZE", "-64", "power of two");
    expect_invalid(s, "BLOCK_SIZE", "99999999999999999999999", "power of two");
    expect_invalid(s, "BLOCK_SIZE", "16", "allowed values"); /* a power of two, but not listed */
    expect_invalid(s, "", "1", "macro name");
    expect_invalid(s, "OP", "", "no value");
    expect_invalid(s, "OP", "a b", "one word");

    kj_define twice[] = {{"OP", "max"}, {"OP", "min"}};
    assert_int_equal(kj__spec_resolve(s, "reduce", twice, 2, &list, &n), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "given twice"));

    kj_define breaks[] = {{"BLOCK_SIZE", "1024"}, {"COARSE_FACTOR", "8"}};
    assert_int_equal(kj__spec_resolve(s, "reduce", breaks, 2, &list, &n), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "BLOCK_SIZE * COARSE_FACTOR <= 4096"));
    kj__spec_free(s);
}

static int lookup(const char *name, size_t len, int64_t *v, void *user) {
    (void)user;
    if (len == 1 && name[0] == 'A') return *v = 12, 0;
    if (len == 1 && name[0] == 'B') return *v = 5, 0;
    return -1;
}

static void test_expressions(void **state) {
    (void)state;
    struct {
        const char *text;
        int64_t value;
    } ok[] = {{"1 + 2 * 3", 7},        {"(1 + 2) * 3", 9}, {"A % B", 2}, {"A / B", 2}, {"A >= 12 && B < 6", 1},
              {"A == 1 || B != 5", 0}, {"-A + 2", -10},    {"!0", 1},    {"A<=B", 0},  {"7 - 2 - 1", 4}};
    char err[128];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v;
        if (kj__expr_eval(ok[i].text, lookup, NULL, &v, err, sizeof err) != 0) fail_msg("%s: %s", ok[i].text, err);
        if (v != ok[i].value) fail_msg("%s = %lld, expected %lld", ok[i].text, (long long)v, (long long)ok[i].value);
    }
    const char *bad[] = {"1 +", "A % 0", "C + 1", "(1", "1 2", "A = 1", "", "9223372036854775807 * 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v;
        if (kj__expr_eval(bad[i], lookup, NULL, &v, err, sizeof err) == 0) fail_msg("'%s' was accepted", bad[i]);
    }
}

/* A requirement the values make impossible to evaluate (10 / A with A=0, an overflow) is a bad define
 * naming the values and the requirement, as a broken one is. */
static void test_requirement_not_evaluable(void **state) {
    (void)state;
    kj__spec *s = parse_ok(
        "//@kernjit entry k\n//@kernjit param A 0 1 2 = 1\n//@kernjit param B 1 4611686018427387904 = 1\n"
        "//@kernjit require 10 / A > 0\n//@kernjit require B * 4 > 0\n");
    kj_define d[] = {{"A", "0"}, {"B", "4611686018427387904"}};
    char **list;
    size_t n;
    assert_int_equal(kj__spec_resolve(s, "k", d, 1, &list, &n), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(),
                           "A=0 B=1 for k: the requirement `10 / A > 0` cannot be evaluated with these "
                           "values (division by zero"));
    assert_int_equal(kj__spec_resolve(s, "k", d + 1, 1, &list, &n), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "the requirement `B * 4 > 0` cannot be evaluated"));
    assert_non_null(strstr(kj_last_error(), "overflow"));
    kj__spec_free(s);
}

/* shared-dynamic and carveout: scoped and unscoped lines, evaluation over the request's macros. */
static const char *launch_block = "//@kernjit entry tile plain other\n"
                                  "//@kernjit param E 2 4 8 = 4\n"
                                  "//@kernjit tune TILE 16 32 64 = 32\n"
                                  "//@kernjit tune D 0 1 3 = 1\n"
                                  "//@kernjit shared-dynamic tile: TILE * (TILE + 1) * E\n"
                                  "//@kernjit shared-dynamic 1024 / D\n"
                                  "//@kernjit carveout   max-l1\n"
                                  "//@kernjit carveout tile: max-shared\n"
                                  "//@kernjit carveout other: 25\n";

static uint32_t shared_for(const kj__spec *s, const char *entry, const kj_define *d, size_t nd) {
    char **list;
    size_t n;
    KJ_ASSERT_OK(kj__spec_resolve(s, "k", d, nd, &list, &n));
    uint32_t bytes = 12345;
    KJ_ASSERT_OK(kj__spec_shared_dynamic(s, "k", entry, list, n, &bytes));
    kj__strings_free(list, n);
    return bytes;
}

static void test_launch_attributes(void **state) {
    (void)state;
    kj__spec *s = parse_ok(launch_block);
    assert_int_equal(s->shared_dynamic_count, 2);
    assert_int_equal(s->carveout_count, 3);
    assert_string_equal(s->shared_dynamic[0].entry, "tile");
    assert_string_equal(s->shared_dynamic[0].expr, "TILE * (TILE + 1) * E");
    assert_null(s->shared_dynamic[1].entry);
    assert_int_equal(s->shared_dynamic[1].line, 6);
    /* the scoped line wins; other entries take the unscoped one */
    assert_int_equal(shared_for(s, "tile", NULL, 0), 32 * 33 * 4);
    assert_int_equal(shared_for(s, "plain", NULL, 0), 1024);
    kj_define big[] = {{"TILE", "64"}, {"E", "8"}};
    assert_int_equal(shared_for(s, "tile", big, 2), 64 * 65 * 8);
    kj_define d3 = {"D", "3"};
    assert_int_equal(shared_for(s, "other", &d3, 1), 341);
    assert_int_equal(kj__spec_carveout(s, "tile"), 100);
    assert_int_equal(kj__spec_carveout(s, "plain"), 0);
    assert_int_equal(kj__spec_carveout(s, "other"), 25);
    assert_int_equal(kj__spec_carveout(s, NULL), 0);

    /* values that make the expression fail are a bad define, naming the expression and the values */
    kj_define d0 = {"D", "0"};
    char **list;
    size_t n;
    KJ_ASSERT_OK(kj__spec_resolve(s, "k", &d0, 1, &list, &n));
    uint32_t bytes;
    assert_int_equal(kj__spec_shared_dynamic(s, "k", "plain", list, n, &bytes), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "1024 / D"));
    assert_non_null(strstr(kj_last_error(), "D=0"));
    assert_non_null(strstr(kj_last_error(), "division by zero"));
    /* the scoped entry does not use D */
    KJ_ASSERT_OK(kj__spec_shared_dynamic(s, "k", "tile", list, n, &bytes));
    kj__strings_free(list, n);
    kj__spec_free(s);

    /* a source without these lines asks for nothing */
    s = reduce_like();
    assert_int_equal(shared_for(s, "r", NULL, 0), 0);
    assert_int_equal(kj__spec_carveout(s, "r"), KJ__CARVEOUT_UNSET);
    kj__spec_free(s);

    /* a constant, without entries or macros; carveout default */
    s = parse_ok("//@kernjit shared-dynamic 64 * 1024\n//@kernjit carveout default\n");
    assert_true(s->present);
    assert_int_equal(shared_for(s, "anything", NULL, 0), 65536);
    assert_int_equal(kj__spec_carveout(s, "anything"), KJ__CARVEOUT_DEFAULT);
    kj__spec_free(s);

    /* sizes out of range with some values: negative, and above 2^31 - 1 */
    s = parse_ok("//@kernjit param K 1 -1 3000000 = 1\n//@kernjit shared-dynamic K * 1024\n");
    kj_define neg = {"K", "-1"}, huge = {"K", "3000000"};
    KJ_ASSERT_OK(kj__spec_resolve(s, "k", &neg, 1, &list, &n));
    assert_int_equal(kj__spec_shared_dynamic(s, "k", NULL, list, n, &bytes), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "gives -1024 bytes"));
    kj__strings_free(list, n);
    KJ_ASSERT_OK(kj__spec_resolve(s, "k", &huge, 1, &list, &n));
    assert_int_equal(kj__spec_shared_dynamic(s, "k", NULL, list, n, &bytes), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "3072000000 bytes; 0 to 2147483647"));
    kj__strings_free(list, n);
    kj__spec_free(s);
}

/* pdl: every entry, some entries, none; malformed lines. */
static void test_pdl(void **state) {
    (void)state;
    kj__spec *s = parse_ok("//@kernjit entry a b c\n//@kernjit pdl a c\n");
    assert_true(kj__spec_pdl(s, "a"));
    assert_false(kj__spec_pdl(s, "b"));
    assert_true(kj__spec_pdl(s, "c"));
    assert_false(kj__spec_pdl(s, NULL));
    kj__spec_free(s);
    s = parse_ok("//@kernjit entry a b\n//@kernjit pdl\n");
    assert_true(kj__spec_pdl(s, "a"));
    assert_true(kj__spec_pdl(s, "b"));
    kj__spec_free(s);
    s = parse_ok("//@kernjit entry a b\n");
    assert_false(kj__spec_pdl(s, "a"));
    kj__spec_free(s);
    /* entries named before `entry` lines are checked once the block is read */
    s = parse_ok("//@kernjit pdl b\n//@kernjit entry a b\n");
    assert_true(kj__spec_pdl(s, "b"));
    kj__spec_free(s);
    parse_bad("//@kernjit entry a b\n//@kernjit pdl z\n", "`pdl z` names no entry: the entries are a, b");
    parse_bad("//@kernjit entry a b\n//@kernjit pdl a\n//@kernjit pdl b\n", "already given on line 2");
    parse_bad("//@kernjit pdl\n//@kernjit pdl\n", "already given on line 1");
    parse_bad("//@kernjit pdl a a\n", "a is listed twice");
    parse_bad("//@kernjit pdl 9a\n", "C identifier");
}

static void test_launch_attributes_malformed(void **state) {
    (void)state;
    parse_bad("//@kernjit shared-dynamic\n", "needs a byte count");
    parse_bad("//@kernjit shared-dynamic k:\n", "needs a byte count");
    parse_bad("//@kernjit shared-dynamic 1 +\n", "with the defaults");
    parse_bad("//@kernjit shared-dynamic NOPE * 4\n", "'NOPE' is not a macro with an integer value");
    parse_bad("//@kernjit param T f32 f64 = f32\n//@kernjit shared-dynamic T * 4\n", "'T' is not a macro");
    parse_bad("//@kernjit shared-dynamic 0 - 4\n", "gives -4 bytes");
    parse_bad("//@kernjit shared-dynamic 4\n//@kernjit shared-dynamic 8\n", "already given on line 1");
    parse_bad("//@kernjit entry a\n//@kernjit shared-dynamic a: 4\n//@kernjit shared-dynamic a: 8\n",
              "`shared-dynamic` for a is already given on line 2");
    parse_bad("//@kernjit entry a b\n//@kernjit shared-dynamic c: 4\n", "names no entry: the entries are a, b");
    parse_bad("//@kernjit entry a b\n\n//@kernjit carveout zz: 4\n", "t.cu:3:");
    parse_bad("//@kernjit carveout 101\n", "carveout '101' is not a percentage from 0 to 100");
    parse_bad("//@kernjit carveout -1\n", "is not a percentage");
    parse_bad("//@kernjit carveout lots\n", "max-shared, max-l1 or default");
    parse_bad("//@kernjit carveout max-l1 please\n", "is not a percentage");
    parse_bad("//@kernjit carveout\n", "is not a percentage");
    parse_bad("//@kernjit carveout 50\n//@kernjit carveout max-l1\n", "already given");
    /* the defaults are checked whatever the order of the lines */
    kj__spec *s = parse_ok("//@kernjit shared-dynamic TILE * 4\n//@kernjit tune TILE 8 16 = 8\n");
    kj__spec_free(s);
}

static void test_identifier(void **state) {
    (void)state;
    assert_true(kj__is_identifier("BLOCK_SIZE"));
    assert_true(kj__is_identifier("_x9"));
    assert_false(kj__is_identifier("9x"));
    assert_false(kj__is_identifier(""));
    assert_false(kj__is_identifier("a-b"));
    char longname[80];
    memset(longname, 'A', 65);
    longname[65] = '\0';
    assert_false(kj__is_identifier(longname));
}

/* Found while fuzzing: inputs at the edges of 64-bit arithmetic and of the stack must be refused with
 * a message, never overflow (undefined behaviour) or recurse without bound. */
static void test_arithmetic_edges(void **state) {
    (void)state;
    char err[128];
    int64_t v;
    /* -INT64_MIN does not exist */
    assert_int_equal(kj__expr_eval("-(0 - 922337203685477580 * 10 - 8)", lookup, NULL, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "overflow"));
    assert_int_equal(kj__expr_eval("0 - 922337203685477580 * 10 - 8", lookup, NULL, &v, err, sizeof err), 0);
    assert_true(v == INT64_MIN);
    /* nesting is bounded: 64 levels are fine, 10000 are refused */
    char deep[20010];
    size_t n = 0;
    for (int i = 0; i < 64; i++) deep[n++] = '(';
    deep[n++] = '1';
    for (int i = 0; i < 64; i++) deep[n++] = ')';
    deep[n] = '\0';
    assert_int_equal(kj__expr_eval(deep, lookup, NULL, &v, err, sizeof err), 0);
    n = 0;
    for (int i = 0; i < 10000; i++) deep[n++] = i % 2 ? '(' : '-';
    deep[n++] = '1';
    deep[n] = '\0';
    assert_int_equal(kj__expr_eval(deep, lookup, NULL, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "nested more than 64 deep"));
    /* ranges that end at the top of long long stop there rather than step past it */
    kj__spec *s = parse_ok("//@kernjit param P pow2 1..4611686018427387904 = 1\n"
                           "//@kernjit param L 9223372036854775806..9223372036854775807 = 9223372036854775807\n");
    assert_int_equal(kj__spec_find_param(s, "P")->value_count, 63);
    assert_int_equal(kj__spec_find_param(s, "L")->value_count, 2);
    kj__spec_free(s);
}

/* A block may declare at most KJ_MAX_ITEMS entries (and macros, requirements, attribute lines). */
static void test_item_limits(void **state) {
    (void)state;
    kj__buf b = {0};
    for (int i = 0; i <= KJ_MAX_ITEMS; i++) kj__buf_printf(&b, "//@kernjit entry e%d\n", i);
    parse_bad(b.data, "more than 1024 entries");
    kj__buf_free(&b);
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_full_block), cmocka_unit_test(test_no_metadata),
             cmocka_unit_test(test_malformed), cmocka_unit_test(test_validation), cmocka_unit_test(test_expressions),
             cmocka_unit_test(test_identifier), cmocka_unit_test(test_requirement_not_evaluable),
             cmocka_unit_test(test_launch_attributes), cmocka_unit_test(test_launch_attributes_malformed),
             cmocka_unit_test(test_pdl), cmocka_unit_test(test_arithmetic_edges), cmocka_unit_test(test_item_limits))
