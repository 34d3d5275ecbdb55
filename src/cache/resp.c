#include "cache/resp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kj__reply {
    kj__reply_type type;
    long long integer;
    size_t len; /* a string's bytes, or an array's elements */
    char *str;  /* NUL-terminated */
    kj__reply **element;
};

#define NODE sizeof(kj__reply)
#define POINTER sizeof(kj__reply *)
#define HEADER_MOST 24 /* the digits of a length or an integer, and its sign */

/* ---- commands --------------------------------------------------------------------------------- */

int kj__resp_command(kj__buf *out, int argc, const char *const *argv, const size_t *lens) {
    if (kj__buf_printf(out, "*%d\r\n", argc) != 0) return -1;
    for (int i = 0; i < argc; i++) {
        size_t n = lens ? lens[i] : strlen(argv[i]);
        if (kj__buf_printf(out, "$%zu\r\n", n) != 0 || kj__buf_append(out, argv[i], n) != 0 ||
            kj__buf_append(out, "\r\n", 2) != 0)
            return -1;
    }
    return 0;
}

/* ---- replies ---------------------------------------------------------------------------------- */

/* One pass over a reply: the first checks that it is whole and within the bound, allocating
 * nothing; the second (build) allocates it from bytes the first accepted. */
typedef struct walker {
    const char *p, *end;
    size_t left; /* what the reply may still allocate */
    size_t most;
    const char *to;
    char *why;
    size_t why_size;
    int build;
} walker;

static void size_text(size_t bytes, char *out, size_t size) {
    if (bytes >= (1u << 20)) snprintf(out, size, "%.1f MiB", bytes / 1048576.0);
    else if (bytes >= 1024) snprintf(out, size, "%.0f KiB", bytes / 1024.0);
    else snprintf(out, size, "%zu bytes", bytes);
}

static kj__resp_result too_large(walker *w, const char *what, long long n, const char *unit) {
    char most[32];
    size_text(w->most, most, sizeof most);
    snprintf(w->why, w->why_size, "%s of %lld %s: more than the answer to %s may take (%s)", what, n, unit, w->to,
             most);
    return KJ__RESP_BAD;
}

static kj__resp_result malformed(walker *w, const char *what) {
    snprintf(w->why, w->why_size, "not a Redis answer to %s: %s", w->to, what);
    return KJ__RESP_BAD;
}

/* The line at w->p, up to CRLF, of at most limit bytes. */
static kj__resp_result line(walker *w, size_t limit, const char **start, size_t *n) {
    size_t avail = (size_t)(w->end - w->p);
    size_t scan = avail < limit + 2 ? avail : limit + 2;
    for (size_t i = 0; i + 1 < scan; i++)
        if (w->p[i] == '\r' && w->p[i + 1] == '\n') {
            *start = w->p;
            *n = i;
            w->p += i + 2;
            return KJ__RESP_DONE;
        }
    return avail >= limit + 2 ? KJ__RESP_BAD : KJ__RESP_MORE;
}

static int number(const char *s, size_t n, long long *out) {
    size_t i = n > 0 && s[0] == '-';
    if (i == n || n - i > 18) return -1;
    long long v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = s[0] == '-' ? -v : v;
    return 0;
}

static kj__reply *node(walker *w, kj__reply_type type) {
    kj__reply *r = calloc(1, NODE);
    if (r) r->type = type;
    else snprintf(w->why, w->why_size, "out of memory");
    return r;
}

static char *copy(walker *w, const char *s, size_t n) {
    char *c = kj__strndup(s, n);
    if (!c) snprintf(w->why, w->why_size, "out of memory");
    return c;
}

static kj__resp_result walk(walker *w, int depth, kj__reply **out) {
    if (w->p == w->end) return KJ__RESP_MORE;
    char type = *w->p++;
    if (w->left < NODE) return too_large(w, "an element", 1, "more");
    w->left -= NODE;
    const char *s;
    size_t n;
    kj__resp_result res;
    long long v;
    switch (type) {
    case '+':
    case '-':
        /* status and error lines: their text is allocated */
        res = line(w, w->left > 0 ? w->left - 1 : 0, &s, &n);
        if (res == KJ__RESP_BAD) return too_large(w, "a line", (long long)(w->end - w->p), "bytes or more");
        if (res != KJ__RESP_DONE) return res;
        w->left -= n + 1;
        if (!w->build) return KJ__RESP_DONE;
        if (!(*out = node(w, type == '+' ? KJ__REPLY_STATUS : KJ__REPLY_ERROR))) return KJ__RESP_BAD;
        (*out)->len = n;
        return ((*out)->str = copy(w, s, n)) ? KJ__RESP_DONE : KJ__RESP_BAD;
    case ':':
    case '$':
    case '*':
        res = line(w, HEADER_MOST, &s, &n);
        if (res == KJ__RESP_BAD) return malformed(w, "a header longer than 24 bytes");
        if (res != KJ__RESP_DONE) return res;
        if (number(s, n, &v) != 0) return malformed(w, "a header that is not a number");
        break;
    default: {
        char what[64];
        unsigned char c = (unsigned char)type;
        snprintf(what, sizeof what, c >= 0x20 && c < 0x7f ? "it starts with '%c'" : "it starts with \\x%02x", c);
        return malformed(w, what);
    }
    }
    if (type == ':') {
        if (w->build && (*out = node(w, KJ__REPLY_INTEGER))) (*out)->integer = v;
        return w->build && !*out ? KJ__RESP_BAD : KJ__RESP_DONE;
    }
    if (v == -1) { /* a nil string or array */
        if (w->build && !(*out = node(w, KJ__REPLY_NIL))) return KJ__RESP_BAD;
        return KJ__RESP_DONE;
    }
    if (v < 0) return malformed(w, "a negative length");
    if (type == '$') {
        if (w->left < 1 || (unsigned long long)v > w->left - 1) return too_large(w, "a string", v, "bytes");
        w->left -= (size_t)v + 1;
        if ((size_t)(w->end - w->p) < (size_t)v + 2) return KJ__RESP_MORE;
        s = w->p;
        w->p += v + 2;
        if (s[v] != '\r' || s[v + 1] != '\n') return malformed(w, "a string longer than its header says");
        if (!w->build) return KJ__RESP_DONE;
        if (!(*out = node(w, KJ__REPLY_STRING))) return KJ__RESP_BAD;
        (*out)->len = (size_t)v;
        return ((*out)->str = copy(w, s, (size_t)v)) ? KJ__RESP_DONE : KJ__RESP_BAD;
    }
    /* an array: its pointers, and a node for each element at the least, must fit before it is read */
    if (depth >= KJ__RESP_DEPTH) return malformed(w, "arrays nested more than 8 deep");
    if ((unsigned long long)v > w->left / (POINTER + NODE)) return too_large(w, "an array", v, "elements");
    w->left -= (size_t)v * POINTER;
    if (w->build) {
        if (!(*out = node(w, KJ__REPLY_ARRAY))) return KJ__RESP_BAD;
        if (v && !((*out)->element = calloc((size_t)v, POINTER))) {
            snprintf(w->why, w->why_size, "out of memory");
            return KJ__RESP_BAD;
        }
        (*out)->len = (size_t)v;
    }
    for (long long i = 0; i < v; i++) {
        res = walk(w, depth + 1, w->build ? &(*out)->element[i] : NULL);
        if (res != KJ__RESP_DONE) return res;
    }
    return KJ__RESP_DONE;
}

kj__resp_result kj__resp_parse(const char *data, size_t len, size_t most, const char *to, kj__reply **out, size_t *used,
                               char *why, size_t why_size) {
    *out = NULL;
    walker w = {data, data + len, most, most, to, why, why_size, 0};
    kj__resp_result res = walk(&w, 0, NULL);
    if (res != KJ__RESP_DONE) return res;
    size_t n = (size_t)(w.p - data);
    walker b = {data, data + n, most, most, to, why, why_size, 1};
    if (walk(&b, 0, out) != KJ__RESP_DONE) {
        kj__reply_free(*out);
        *out = NULL;
        return KJ__RESP_BAD;
    }
    *used = n;
    return KJ__RESP_DONE;
}

kj__reply_type kj__reply_kind(const kj__reply *reply) { return reply ? reply->type : KJ__REPLY_NIL; }

const char *kj__reply_str(const kj__reply *reply, size_t *len) {
    kj__reply_type t = kj__reply_kind(reply);
    int has = t == KJ__REPLY_STRING || t == KJ__REPLY_STATUS || t == KJ__REPLY_ERROR;
    if (len) *len = has ? reply->len : 0;
    return has ? reply->str : NULL;
}

long long kj__reply_int(const kj__reply *reply) {
    return kj__reply_kind(reply) == KJ__REPLY_INTEGER ? reply->integer : 0;
}

size_t kj__reply_count(const kj__reply *reply) { return kj__reply_kind(reply) == KJ__REPLY_ARRAY ? reply->len : 0; }

const kj__reply *kj__reply_at(const kj__reply *reply, size_t index) {
    return index < kj__reply_count(reply) ? reply->element[index] : NULL;
}

void kj__reply_free(kj__reply *reply) {
    if (!reply) return;
    if (reply->element)
        for (size_t i = 0; i < reply->len; i++) kj__reply_free(reply->element[i]);
    free(reply->element);
    free(reply->str);
    free(reply);
}

/* ---- a reply in words --------------------------------------------------------------------------- */

static void put(kj__buf *b, const char *s) { kj__buf_puts(b, s); }

static void describe(const kj__reply *r, kj__buf *b) {
    char tmp[48];
    switch (kj__reply_kind(r)) {
    case KJ__REPLY_NIL: put(b, "(nil)"); return;
    case KJ__REPLY_INTEGER:
        snprintf(tmp, sizeof tmp, "%lld", r->integer);
        put(b, tmp);
        return;
    case KJ__REPLY_ARRAY:
        put(b, "[");
        for (size_t i = 0; i < r->len && b->len < 200; i++) {
            if (i) put(b, ", ");
            describe(r->element[i], b);
        }
        put(b, "]");
        return;
    default: break;
    }
    put(b, r->type == KJ__REPLY_ERROR ? "(error) " : r->type == KJ__REPLY_STRING ? "\"" : "");
    for (size_t i = 0; i < r->len && i < 40; i++) {
        unsigned char c = (unsigned char)r->str[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') snprintf(tmp, sizeof tmp, "%c", c);
        else snprintf(tmp, sizeof tmp, "\\x%02x", c);
        put(b, tmp);
    }
    if (r->len > 40) put(b, "...");
    if (r->type == KJ__REPLY_STRING) put(b, "\"");
}

void kj__reply_describe(const kj__reply *reply, char *out, size_t size) {
    kj__buf b = {0};
    describe(reply, &b);
    snprintf(out, size, "%s", b.data ? b.data : "(out of memory)");
    kj__buf_free(&b);
}
