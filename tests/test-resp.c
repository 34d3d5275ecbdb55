/* The Redis protocol (src/cache/resp.c), with no server: commands as the server reads them; replies
 * of every kind, whole or fed a byte at a time; and what a hostile server may announce (an array of
 * 2^31-1 elements, a string of 512 MiB, a status line without end, arrays nested without end,
 * malformed headers) refused at its header, before anything is allocated or read further. */
#include "test_util.h"

#include "cache/resp.h"

#define MOST (1u << 20)

/* Parses text (n bytes) whole: must be DONE, taking all of it. */
static kj__reply *parse_all(const char *text, size_t n) {
    kj__reply *r = NULL;
    size_t used = 0;
    char why[256] = "";
    assert_int_equal(kj__resp_parse(text, n, MOST, "TEST", &r, &used, why, sizeof why), KJ__RESP_DONE);
    assert_int_equal(used, n);
    return r;
}

/* Must be refused, with a message holding needle, from its first bytes on (before the rest came). */
static void refused(const char *text, size_t n, size_t most, const char *needle) {
    kj__reply *r = (kj__reply *)1;
    size_t used = 0;
    char why[256] = "";
    assert_int_equal(kj__resp_parse(text, n, most, "EVAL", &r, &used, why, sizeof why), KJ__RESP_BAD);
    assert_null(r);
    if (!strstr(why, needle)) fail_msg("'%s' does not hold '%s'", why, needle);
}

static void test_command(void **state) {
    (void)state;
    kj__buf b = {0};
    const char *argv[] = {"SET", "k", "a\0b"};
    size_t lens[] = {3, 1, 3};
    assert_int_equal(kj__resp_command(&b, 3, argv, lens), 0);
    const char *argv2[] = {"GET", "k"};
    assert_int_equal(kj__resp_command(&b, 2, argv2, NULL), 0);
    static const char want[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na\0b\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    assert_int_equal(b.len, sizeof want - 1);
    assert_memory_equal(b.data, want, sizeof want - 1);
    kj__buf_free(&b);
}

static void test_kinds(void **state) {
    (void)state;
    static const char text[] = "*6\r\n+OK\r\n-ERR no\r\n:-42\r\n$3\r\na\0b\r\n$-1\r\n*2\r\n*0\r\n*-1\r\n";
    kj__reply *r = parse_all(text, sizeof text - 1);
    assert_int_equal(kj__reply_kind(r), KJ__REPLY_ARRAY);
    assert_int_equal(kj__reply_count(r), 6);
    size_t len;
    assert_int_equal(kj__reply_kind(kj__reply_at(r, 0)), KJ__REPLY_STATUS);
    assert_string_equal(kj__reply_str(kj__reply_at(r, 0), NULL), "OK");
    assert_int_equal(kj__reply_kind(kj__reply_at(r, 1)), KJ__REPLY_ERROR);
    assert_string_equal(kj__reply_str(kj__reply_at(r, 1), NULL), "ERR no");
    assert_int_equal(kj__reply_int(kj__reply_at(r, 2)), -42);
    assert_memory_equal(kj__reply_str(kj__reply_at(r, 3), &len), "a\0b", 3);
    assert_int_equal(len, 3);
    assert_int_equal(kj__reply_kind(kj__reply_at(r, 4)), KJ__REPLY_NIL);
    const kj__reply *nested = kj__reply_at(r, 5);
    assert_int_equal(kj__reply_count(nested), 2);
    assert_int_equal(kj__reply_kind(kj__reply_at(nested, 0)), KJ__REPLY_ARRAY);
    assert_int_equal(kj__reply_count(kj__reply_at(nested, 0)), 0);
    assert_int_equal(kj__reply_kind(kj__reply_at(nested, 1)), KJ__REPLY_NIL);
    assert_null(kj__reply_at(r, 6));
    /* accessors of the wrong kind read as nothing */
    assert_null(kj__reply_str(kj__reply_at(r, 2), &len));
    assert_int_equal(len, 0);
    assert_int_equal(kj__reply_int(kj__reply_at(r, 0)), 0);
    assert_int_equal(kj__reply_count(kj__reply_at(r, 3)), 0);
    char text2[256];
    kj__reply_describe(r, text2, sizeof text2);
    assert_string_equal(text2, "[OK, (error) ERR no, -42, \"a\\x00b\", (nil), [[], (nil)]]");
    kj__reply_free(r);
    assert_int_equal(kj__reply_kind(NULL), KJ__REPLY_NIL);
    kj__reply_describe(NULL, text2, sizeof text2);
    assert_string_equal(text2, "(nil)");
}

/* Fed a byte at a time, a reply is MORE until its last byte, then DONE, taking only its own bytes
 * (the next reply's stay). */
static void test_piecewise(void **state) {
    (void)state;
    static const char text[] = "*2\r\n:1\r\n$5\r\nhello\r\n+NEXT\r\n";
    size_t whole = sizeof text - 1 - 7;
    for (size_t n = 0; n < whole; n++) {
        kj__reply *r = NULL;
        size_t used = 0;
        char why[256];
        assert_int_equal(kj__resp_parse(text, n, MOST, "TEST", &r, &used, why, sizeof why), KJ__RESP_MORE);
        assert_null(r);
    }
    kj__reply *r = NULL;
    size_t used = 0;
    char why[256];
    assert_int_equal(kj__resp_parse(text, sizeof text - 1, MOST, "TEST", &r, &used, why, sizeof why), KJ__RESP_DONE);
    assert_int_equal(used, whole);
    assert_string_equal(kj__reply_str(kj__reply_at(r, 1), NULL), "hello");
    kj__reply_free(r);
}

/* What a server announces is checked against the bound at the header, with nothing more there. */
static void test_bounds(void **state) {
    (void)state;
    refused("*2147483647\r\n", 13, MOST,
            "an array of 2147483647 elements: more than the answer to EVAL may take (1.0 MiB)");
    refused("$536870912\r\n", 12, MOST, "a string of 536870912 bytes: more than the answer to EVAL may take");
    refused("*999999999999999999\r\n", 21, MOST, "an array of 999999999999999999 elements");
    refused("$999999999999999999\r\n", 21, MOST, "a string of 999999999999999999 bytes");
    /* the bound is the sum: two strings that fit one at a time */
    size_t big = 600u << 10;
    char *two = malloc(big + 64);
    int n = snprintf(two, 64, "*2\r\n$%zu\r\n", big);
    memset(two + n, 'v', big);
    n += (int)big;
    n += snprintf(two + n, 64, "\r\n$%zu\r\n", big);
    refused(two, (size_t)n, MOST, "a string of 614400 bytes: more than the answer to EVAL may take");
    free(two);
    char head[64];
    n = snprintf(head, sizeof head, "$%u\r\n", 600u << 10);
    kj__reply *r = NULL;
    size_t used;
    char why[256];
    assert_int_equal(kj__resp_parse(head, (size_t)n, MOST, "GET", &r, &used, why, sizeof why), KJ__RESP_MORE);
    /* a status line that never ends: refused once it is longer than the bound */
    char *line = malloc(5000);
    line[0] = '+';
    memset(line + 1, 'x', 4999);
    assert_int_equal(kj__resp_parse(line, 4000, 4096, "GET", &r, &used, why, sizeof why), KJ__RESP_MORE);
    refused(line, 5000, 4096, "a line of");
    free(line);
    /* a small bound: a lease holder */
    refused("$5000\r\n", 7, 4096, "a string of 5000 bytes: more than the answer to EVAL may take (4 KiB)");
}

static void test_malformed(void **state) {
    (void)state;
    refused("?what\r\n", 7, MOST, "not a Redis answer to EVAL: it starts with '?'");
    refused("\x01", 1, MOST, "it starts with \\x01");
    refused(":12a\r\n", 6, MOST, "a header that is not a number");
    refused("$-2\r\n", 5, MOST, "a negative length");
    refused("$\r\n", 3, MOST, "a header that is not a number");
    refused(":123456789012345678901234567890", 31, MOST, "a header longer than 24 bytes");
    refused("$3\r\nabcd\r\n", 10, MOST, "a string longer than its header says");
    refused("*1\r\n%1\r\n", 8, MOST, "it starts with '%'");
    /* nesting: 8 arrays deep is read, 9 refused */
    char deep[64] = "";
    for (int i = 0; i < 8; i++) strcat(deep, "*1\r\n");
    strcat(deep, ":1\r\n");
    kj__reply_free(parse_all(deep, strlen(deep)));
    char deeper[64] = "*1\r\n";
    strcat(deeper, deep);
    refused(deeper, strlen(deeper), MOST, "arrays nested more than 8 deep");
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_command), cmocka_unit_test(test_kinds), cmocka_unit_test(test_piecewise),
             cmocka_unit_test(test_bounds), cmocka_unit_test(test_malformed))
