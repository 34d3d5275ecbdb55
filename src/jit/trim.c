#include "jit/trim.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* Beyond this many entries a file is compiled whole: the rule's scans grow with entries x text. */
#define MAX_TRIM_ENTRIES 64

typedef struct span {
    size_t start, end; /* [start, end) of the text */
} span;

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Whether the line starting at ls is a preprocessor line, or the continuation (a backslash before its
 * new line) of one. */
static int directive_line(const char *code, size_t ls) {
    for (;;) {
        size_t p = ls;
        while (code[p] == ' ' || code[p] == '\t') p++;
        if (code[p] == '#') return 1;
        if (ls < 2) return 0;
        size_t above_end = ls - 1; /* the new line that ends the line above */
        if (above_end > 0 && code[above_end - 1] == '\r') above_end--;
        if (above_end == 0 || code[above_end - 1] != '\\') return 0;
        ls = above_end - 1;
        while (ls > 0 && code[ls - 1] != '\n') ls--;
    }
}

/* `#pragma unroll` or `#pragma nounroll` on the line at ls (blanks allowed around the words). */
static int unroll_pragma(const char *code, size_t ls) {
    const char *p = code + ls;
    while (*p == ' ' || *p == '\t') p++;
    if (*p++ != '#') return 0;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, "pragma", 6) != 0 || ident_char(p[6])) return 0;
    for (p += 6; *p == ' ' || *p == '\t';) p++;
    if (strncmp(p, "unroll", 6) == 0) return !ident_char(p[6]);
    return strncmp(p, "nounroll", 8) == 0 && !ident_char(p[8]);
}

/* The index after the string or character literal that starts at code[i]. */
static size_t past_literal(const char *code, size_t len, size_t i) {
    char quote = code[i];
    for (i++; i < len && code[i] != quote && code[i] != '\n'; i++)
        if (code[i] == '\\' && i + 1 < len) i++;
    return i < len ? i + 1 : len;
}

/* The index of the bracket closing the one at code[open]; len when it is not closed. */
static size_t closing(const char *code, size_t len, size_t open) {
    char o = code[open], c = o == '(' ? ')' : '}';
    size_t depth = 0;
    for (size_t i = open; i < len;) {
        if (code[i] == '"' || code[i] == '\'') {
            i = past_literal(code, len, i);
            continue;
        }
        if (code[i] == o) depth++;
        else if (code[i] == c && --depth == 0) return i;
        i++;
    }
    return len;
}

static size_t skip_blanks(const char *code, size_t len, size_t i) {
    while (i < len && isspace((unsigned char)code[i])) i++;
    return i;
}

/* The definition whose name is at code[at] (n bytes): from its declaration's first token to the
 * brace closing its body, into *s. 0 when this is no definition of a __global__ function, or one
 * whose body holds a preprocessor line that cannot go with it. */
static int definition_at(const char *code, size_t len, size_t at, size_t n, span *s) {
    size_t start = at;
    while (start > 0) {
        char c = code[start - 1];
        if (c == ';' || c == '{' || c == '}') break;
        if (c == '\n') {
            size_t ls = start - 1;
            while (ls > 0 && code[ls - 1] != '\n') ls--;
            if (directive_line(code, ls)) break;
        }
        start--;
    }
    start = skip_blanks(code, at, start);
    const char *global = NULL;
    for (const char *g = code + start; (g = strstr(g, "__global__")) && g < code + at; g += 10)
        if ((g == code || !ident_char(g[-1])) && !ident_char(g[10])) global = g;
    if (!global) return 0;
    size_t i = skip_blanks(code, len, at + n);
    if (i == len || code[i] != '(') return 0;
    i = closing(code, len, i);
    if (i == len) return 0;
    i = skip_blanks(code, len, i + 1);
    if (i == len || code[i] != '{') return 0;
    size_t end = closing(code, len, i);
    if (end == len) return 0;
    for (size_t p = start; p < end; p++)
        if (code[p] == '\n' && directive_line(code, p + 1) && !unroll_pragma(code, p + 1)) return 0;
    s->start = start;
    s->end = end + 1;
    return 1;
}

/* Marks in named[] the names (of count) that occur as whole identifiers in code. */
static void mark_names(const char *code, const char *const *names, const size_t *lens, size_t count, int *named) {
    for (const char *p = code; *p;) {
        if (!ident_char(*p)) {
            p++;
            continue;
        }
        const char *w = p;
        while (ident_char(*p)) p++;
        size_t n = (size_t)(p - w);
        for (size_t e = 0; e < count; e++)
            if (lens[e] == n && memcmp(w, names[e], n) == 0) named[e] = 1;
    }
}

typedef struct trim_state {
    const char *code;
    size_t len;
    span *spans;
    size_t *owner; /* the entry of each span */
    size_t span_count;
    int dropped[MAX_TRIM_ENTRIES];
} trim_state;

/* Adds every definition of entry e; 0 when there is none, -1 when out of memory. */
static int find_definitions(trim_state *t, const char *name, size_t e) {
    size_t n = strlen(name);
    int found = 0;
    for (const char *p = strstr(t->code, name); p; p = strstr(p + n, name)) {
        size_t at = (size_t)(p - t->code);
        if ((at > 0 && ident_char(p[-1])) || ident_char(p[n])) continue;
        span s;
        if (!definition_at(t->code, t->len, at, n, &s)) continue;
        int overlaps = 0;
        for (size_t i = 0; i < t->span_count; i++) overlaps |= s.start < t->spans[i].end && t->spans[i].start < s.end;
        if (overlaps) continue;
        span *spans = realloc(t->spans, (t->span_count + 1) * sizeof *spans);
        if (spans) t->spans = spans;
        size_t *owner = spans ? realloc(t->owner, (t->span_count + 1) * sizeof *owner) : NULL;
        if (!owner) return -1;
        t->owner = owner;
        t->spans[t->span_count] = s;
        t->owner[t->span_count++] = e;
        found = 1;
    }
    return found;
}

/* Blanks the spans of dropped entries in s, keeping new lines. */
static void blank_dropped(const trim_state *t, char *s) {
    for (size_t i = 0; i < t->span_count; i++)
        if (t->dropped[t->owner[i]])
            for (size_t p = t->spans[i].start; p < t->spans[i].end; p++)
                if (s[p] != '\n') s[p] = ' ';
}

int kj__trim_to_entry(const char *text, const char *code, size_t len, const char *const *entries, size_t entry_count,
                      const char *keep, const char *const *header_codes, size_t header_count, char **out) {
    *out = NULL;
    if (entry_count < 2 || entry_count > MAX_TRIM_ENTRIES) return 0;
    trim_state t = {.len = len};
    size_t lens[MAX_TRIM_ENTRIES];
    int named[MAX_TRIM_ENTRIES] = {0};
    char *kept = NULL;
    int r = 0;
    t.code = code;
    for (size_t e = 0; e < entry_count && r == 0; e++) {
        lens[e] = strlen(entries[e]);
        if (strcmp(entries[e], keep) == 0) continue;
        int found = find_definitions(&t, entries[e], e);
        if (found < 0) r = -1;
        t.dropped[e] = found > 0;
    }
    /* what a header names stays, whatever is left out of the file */
    for (size_t h = 0; h < header_count && r == 0; h++) mark_names(header_codes[h], entries, lens, entry_count, named);
    for (size_t e = 0; e < entry_count; e++) t.dropped[e] &= !named[e];
    if (r == 0 && !(kept = malloc(len + 1))) r = -1;
    /* what stays must not name what goes: put back what it names, until that holds */
    for (int changed = 1; changed && r == 0;) {
        changed = 0;
        memcpy(kept, code, len + 1);
        blank_dropped(&t, kept);
        memset(named, 0, sizeof named);
        mark_names(kept, entries, lens, entry_count, named);
        for (size_t e = 0; e < entry_count; e++)
            if (t.dropped[e] && named[e]) t.dropped[e] = 0, changed = 1;
    }
    int any = 0;
    for (size_t e = 0; e < entry_count; e++) any |= t.dropped[e];
    if (r == 0 && any) {
        if ((*out = kj__strndup(text, len))) {
            blank_dropped(&t, *out);
            r = 1;
        } else {
            r = -1;
        }
    }
    free(kept);
    free(t.spans);
    free(t.owner);
    return r;
}
