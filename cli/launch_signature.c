#include "launch_signature.h"

#include <string.h>

static int ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
static int blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* If a comment, string or character literal starts at i, returns the index just past it; else i. */
static size_t skip_noise(const char *s, size_t n, size_t i) {
    if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
        while (i < n && s[i] != '\n') i++;
        return i;
    }
    if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
        for (i += 2; i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'); i++) {}
        return i + 1 < n ? i + 2 : n;
    }
    /* a quote after a digit is a C++14 digit separator (1'000), not a character literal */
    if (s[i] == '"' || (s[i] == '\'' && !(i > 0 && ident_char(s[i - 1])))) {
        char q = s[i];
        for (i++; i < n && s[i] != q && s[i] != '\n'; i++)
            if (s[i] == '\\' && i + 1 < n) i++;
        return i < n ? i + 1 : n;
    }
    return i;
}

/* Index past blanks and comments from i. */
static size_t skip_space(const char *s, size_t n, size_t i) {
    for (;;) {
        while (i < n && blank(s[i])) i++;
        size_t j = i < n ? skip_noise(s, n, i) : i;
        if (j == i || (s[i] != '/')) return i; /* strings are not space */
        i = j;
    }
}

/* A parameter written as one capitalised identifier ("ARGS") is most likely a macro standing for
 * several: the lexical count cannot be trusted then. */
static int looks_like_macro(const char *s, size_t a, size_t b) {
    if (b - a < 2) return 0;
    for (size_t i = a; i < b; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return 0;
    return 1;
}

static void add_param(launch_signature *sig, const char *s, size_t a, size_t b, int *uncertain) {
    while (a < b && blank(s[a])) a++;
    while (b > a && blank(s[b - 1])) b--;
    if (looks_like_macro(s, a, b)) *uncertain = 1;
    if (sig->count < LAUNCH_SIG_MAX) {
        sig->start[sig->count] = a;
        sig->len[sig->count] = b - a;
    }
    sig->count++;
}

/* The parameter list opening at s[i] == '('; returns the index past ')' or 0 when it never closes.
 * *uncertain is set when the count cannot be trusted: "..." (a C varargs list or a parameter pack),
 * or a parameter that looks like a macro. */
static size_t parse_params(const char *s, size_t n, size_t i, launch_signature *sig, int *uncertain) {
    memset(sig, 0, sizeof *sig);
    *uncertain = 0;
    int depth = 0, angle = 0;
    size_t param_start = i + 1;
    for (; i < n; i++) {
        size_t j = skip_noise(s, n, i);
        if (j != i) {
            i = j - 1;
            continue;
        }
        char c = s[i];
        if (c == '(' || c == '[' || c == '{') depth++;
        else if (c == ')' || c == ']' || c == '}') {
            if (--depth == 0) {
                add_param(sig, s, param_start, i, uncertain);
                /* "()" and "(void)" declare no parameter */
                if (sig->count == 1 &&
                    (sig->len[0] == 0 || (sig->len[0] == 4 && memcmp(s + sig->start[0], "void", 4) == 0)))
                    sig->count = 0;
                return i + 1;
            }
        } else if (c == '<') angle++;
        else if (c == '>' && angle > 0) angle--;
        else if (c == ',' && depth == 1 && angle == 0) {
            add_param(sig, s, param_start, i, uncertain);
            param_start = i + 1;
        } else if (c == '.' && i + 2 < n && s[i + 1] == '.' && s[i + 2] == '.') *uncertain = 1;
    }
    return 0;
}

/* entry's last name before template arguments: [*name, *name + *len) */
static int base_name(const char *entry, const char **name, size_t *len) {
    size_t end = strcspn(entry, "<(");
    while (end > 0 && blank(entry[end - 1])) end--;
    size_t start = end;
    while (start > 0 && ident_char(entry[start - 1])) start--;
    if (start == end) return -1;
    *name = entry + start;
    *len = end - start;
    return 0;
}

int launch_find_signature(const char *s, size_t n, const char *entry, long want, launch_signature *out) {
    const char *name;
    size_t name_len;
    if (!s || !entry || base_name(entry, &name, &name_len) != 0) return -1;
    launch_signature cand, first;
    int found = 0, global_seen = 0, line_start = 1;
    for (size_t i = 0; i < n;) {
        size_t j = skip_noise(s, n, i);
        if (j != i) {
            i = j;
            continue;
        }
        char c = s[i];
        if (c == '\n') line_start = 1;
        if (blank(c)) {
            i++;
            continue;
        }
        if (c == '#' && line_start) {
            /* a preprocessor line, with its continuations: a macro's body is not a declaration */
            while (i < n && s[i] != '\n') i += (s[i] == '\\' && i + 1 < n) ? 2 : 1;
            global_seen = 0;
            continue;
        }
        line_start = 0;
        if (c == ';' || c == '{' || c == '}') {
            global_seen = 0;
            i++;
            continue;
        }
        if (!ident_char(c) || (i > 0 && ident_char(s[i - 1]))) {
            i++;
            continue;
        }
        size_t e = i;
        while (e < n && ident_char(s[e])) e++;
        if (e - i == 10 && memcmp(s + i, "__global__", 10) == 0) {
            global_seen = 1;
        } else if (global_seen && e - i == name_len && memcmp(s + i, name, name_len) == 0) {
            size_t p = skip_space(s, n, e);
            if (p < n && s[p] == '(') {
                int uncertain;
                size_t past = parse_params(s, n, p, &cand, &uncertain);
                if (!past) return -1;
                if (want >= 0) {
                    if (!uncertain && cand.count == (size_t)want) {
                        *out = cand;
                        return 0;
                    }
                } else {
                    if (uncertain || (found && cand.count != first.count)) return -1;
                    if (!found) first = cand;
                    found = 1;
                }
                global_seen = 0;
                i = past;
                continue;
            }
        }
        i = e;
    }
    if (want >= 0 || !found) return -1;
    *out = first;
    return 0;
}

void launch_signature_param(const char *s, const launch_signature *sig, size_t i, char *buf, size_t size) {
    if (!size) return;
    buf[0] = '\0';
    if (i >= sig->count || i >= LAUNCH_SIG_MAX) return;
    size_t a = sig->start[i], b = a + sig->len[i], o = 0;
    int space = 0, cut = 0;
    for (size_t k = a; k < b;) {
        size_t j = skip_noise(s, b, k);
        if (j != k && s[k] == '/') { /* a comment: dropped, counts as a blank */
            space = 1;
            k = j;
            continue;
        }
        if (blank(s[k])) {
            space = 1;
            k++;
            continue;
        }
        if (o + 1 + (space && o > 0) >= size) {
            cut = 1;
            break;
        }
        if (space && o > 0) buf[o++] = ' ';
        space = 0;
        buf[o++] = s[k];
        k++;
    }
    buf[o] = '\0';
    if (cut && size > 4) memcpy(buf + size - 4, "...", 4);
}
