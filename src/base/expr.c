#include "base/expr.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *p;
    kj__expr_lookup lookup;
    void *user;
    char *err;
    size_t err_size;
    int failed;
    int depth; /* nested parentheses and unary operators, bounded so that no text can exhaust the stack */
} parser;

#define MAX_DEPTH 64

static int64_t fail(parser *ps, const char *msg) {
    if (!ps->failed) snprintf(ps->err, ps->err_size, "%s at '%.20s'", msg, ps->p);
    ps->failed = 1;
    return 0;
}

static void skip(parser *ps) {
    while (isspace((unsigned char)*ps->p)) ps->p++;
}

static int accept(parser *ps, const char *tok) {
    skip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0) return 0;
    ps->p += n; /* callers try "<=" before "<", so a prefix never steals a longer operator */
    return 1;
}

static int64_t parse_or(parser *ps);

static int64_t parse_nested(parser *ps, int64_t (*parse)(parser *)) {
    if (ps->depth == MAX_DEPTH) return fail(ps, "nested more than 64 deep");
    ps->depth++;
    int64_t v = parse(ps);
    ps->depth--;
    return v;
}

static int64_t parse_primary(parser *ps) {
    skip(ps);
    if (accept(ps, "(")) {
        int64_t v = parse_nested(ps, parse_or);
        if (!accept(ps, ")")) return fail(ps, "expected ')'");
        return v;
    }
    if (accept(ps, "-")) {
        int64_t v = parse_nested(ps, parse_primary);
        if (v == INT64_MIN) return fail(ps, "overflow"); /* -INT64_MIN is not an int64_t */
        return -v;
    }
    if (accept(ps, "!")) return !parse_nested(ps, parse_primary);
    if (isdigit((unsigned char)*ps->p)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*ps->p)) {
            if (v > (INT64_MAX - 9) / 10) return fail(ps, "number too large");
            v = v * 10 + (*ps->p++ - '0');
        }
        return v;
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        const char *start = ps->p;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
        int64_t v;
        if (ps->lookup(start, (size_t)(ps->p - start), &v, ps->user) != 0) {
            if (!ps->failed)
                snprintf(ps->err, ps->err_size, "'%.*s' is not a macro with an integer value", (int)(ps->p - start),
                         start);
            ps->failed = 1;
            return 0;
        }
        return v;
    }
    return fail(ps, "expected a number, a macro name or '('");
}

static int64_t parse_mul(parser *ps) {
    int64_t v = parse_primary(ps);
    for (;;) {
        skip(ps);
        char op = *ps->p;
        if (op != '*' && op != '/' && op != '%') return v;
        ps->p++;
        int64_t r = parse_primary(ps);
        if (op == '*') {
            if (__builtin_mul_overflow(v, r, &v)) return fail(ps, "overflow");
        } else if (r == 0) {
            return fail(ps, op == '%' ? "remainder by zero" : "division by zero");
        } else if (r == -1 && v == INT64_MIN) {
            return fail(ps, "overflow");
        } else {
            v = op == '%' ? v % r : v / r;
        }
    }
}

static int64_t parse_add(parser *ps) {
    int64_t v = parse_mul(ps);
    for (;;) {
        if (accept(ps, "+")) {
            if (__builtin_add_overflow(v, parse_mul(ps), &v)) return fail(ps, "overflow");
        } else if (accept(ps, "-")) {
            if (__builtin_sub_overflow(v, parse_mul(ps), &v)) return fail(ps, "overflow");
        } else {
            return v;
        }
    }
}

static int64_t parse_rel(parser *ps) {
    int64_t v = parse_add(ps);
    for (;;) {
        if (accept(ps, "<=")) v = v <= parse_add(ps);
        else if (accept(ps, ">=")) v = v >= parse_add(ps);
        else if (accept(ps, "<")) v = v < parse_add(ps);
        else if (accept(ps, ">")) v = v > parse_add(ps);
        else return v;
    }
}

static int64_t parse_eq(parser *ps) {
    int64_t v = parse_rel(ps);
    for (;;) {
        if (accept(ps, "==")) v = v == parse_rel(ps);
        else if (accept(ps, "!=")) v = v != parse_rel(ps);
        else return v;
    }
}

static int64_t parse_and(parser *ps) {
    int64_t v = parse_eq(ps);
    while (accept(ps, "&&")) {
        int64_t r = parse_eq(ps);
        v = v && r;
    }
    return v;
}

static int64_t parse_or(parser *ps) {
    int64_t v = parse_and(ps);
    while (accept(ps, "||")) {
        int64_t r = parse_and(ps);
        v = v || r;
    }
    return v;
}

int kj__expr_eval(const char *text, kj__expr_lookup lookup, void *user, int64_t *value, char *err, size_t err_size) {
    parser ps = {text, lookup, user, err, err_size, 0, 0};
    int64_t v = parse_or(&ps);
    skip(&ps);
    if (!ps.failed && *ps.p) fail(&ps, "unexpected text");
    if (ps.failed) return -1;
    *value = v;
    return 0;
}
