#include "jit/lex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* Blanks comments in place, keeping literals and newlines. */
static void blank_comments(char *s, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '"' || c == '\'') { /* a literal: to its closing quote, past escapes, never past the line */
            for (i++; i < len && s[i] != c && s[i] != '\n'; i++)
                if (s[i] == '\\' && i + 1 < len && s[i + 1] != '\n') i++;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            for (; i < len && s[i] != '\n'; i++) s[i] = ' ';
        } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            s[i] = s[i + 1] = ' ';
            for (i += 2; i < len && !(s[i] == '*' && i + 1 < len && s[i + 1] == '/'); i++)
                if (s[i] != '\n') s[i] = ' ';
            if (i < len) s[i] = ' ';
            if (i + 1 < len) s[++i] = ' ';
        }
    }
}

/* The directive of a line ("if", "ifdef", "else", ...) when it is one: its word into word. */
static int directive(const char *line, const char *end, char *word, size_t size) {
    const char *p = line;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p == end || *p != '#') return 0;
    for (p++; p < end && (*p == ' ' || *p == '\t');) p++;
    size_t n = 0;
    while (p + n < end && isalpha((unsigned char)p[n]) && n + 1 < size) n++;
    memcpy(word, p, n);
    word[n] = '\0';
    /* `#if 0`: report it as its own word */
    if (strcmp(word, "if") == 0) {
        const char *q = p + n;
        while (q < end && (*q == ' ' || *q == '\t')) q++;
        if (q < end && *q == '0' && (q + 1 == end || !isalnum((unsigned char)q[1]))) snprintf(word, size, "if0");
    }
    return n > 0;
}

void kj__lex_blank_if0(char *s, size_t len) {
    int depth = 0; /* > 0: inside an `#if 0`, counting the conditionals nested in it */
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && s[end] != '\n') end++;
        char word[16];
        int is_dir = directive(s + i, s + end, word, sizeof word);
        if (depth == 0) {
            if (is_dir && strcmp(word, "if0") == 0) depth = 1;
        } else {
            if (is_dir && (strncmp(word, "if", 2) == 0)) depth++;
            else if (is_dir && depth == 1 && (strcmp(word, "else") == 0 || strcmp(word, "elif") == 0)) depth = 0;
            else if (is_dir && strcmp(word, "endif") == 0) depth--;
            if (depth > 0 || !is_dir) memset(s + i, ' ', end - i);
        }
        i = end + 1;
    }
}

char *kj__lex_blank(const char *text, size_t len, int skip_if0) {
    char *s = kj__strndup(text, len);
    if (!s) return NULL;
    blank_comments(s, len);
    if (skip_if0) kj__lex_blank_if0(s, len);
    return s;
}

/* isalnum or '_', without a call for the ASCII bytes (whose class no locale changes). */
static inline int ident_char(char c) {
    unsigned char u = (unsigned char)c;
    return u < 0x80 ? (unsigned)((u | 32) - 'a') < 26 || (unsigned)(u - '0') < 10 || u == '_' : isalnum(u) != 0;
}

typedef struct word {
    const char *s;
    size_t n;
} word;
#define WORD(s)                                                                                                        \
    { s, sizeof s - 1 }

static int starts_with(const char *p, size_t n, word w) {
    if (n < w.n) return 0;
    for (size_t i = 0; i < w.n; i++)
        if (p[i] != w.s[i]) return 0;
    return 1;
}

/* One pass over the text, from each '<' and each word (a run of letters, digits and '_') that starts
 * with a letter a word looked for starts with, to the next; done as soon as a launch shows, which
 * settles both questions. */
unsigned kj__lex_features(const char *s) {
    static const word calls[] = {WORD("cudaLaunchDevice"), WORD("cudaGetParameterBuffer"), WORD("cudaStreamTailLaunch"),
                                 WORD("cudaStreamFireAndForget")};
    static const word prefixes[] = {WORD("cuda"),   WORD("tex1D"),      WORD("tex2D"),
                                    WORD("tex3D"),  WORD("texCubemap"), WORD("surf1D"),
                                    WORD("surf2D"), WORD("surf3D"),     WORD("surfCubemap")};
    unsigned found = 0;
    for (const char *p = s; (p = strpbrk(p, "<cst"));) {
        const char *q = p;
        if (*p == '<') { /* a run of three or more: `<<<` is a launch, `<<` a shift */
            while (*q == '<') q++;
            if (q - p >= 3) return KJ__LEX_LAUNCHES | KJ__LEX_NOT_MINIMAL;
        } else if (p > s && ident_char(p[-1])) { /* inside a word */
            q++;
        } else {
            while (ident_char(*q)) q++;
            size_t n = (size_t)(q - p);
            for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !found; i++)
                if (starts_with(p, n, prefixes[i])) found |= KJ__LEX_NOT_MINIMAL;
            for (size_t i = 0; i < sizeof calls / sizeof calls[0] && *p == 'c'; i++)
                if (n == calls[i].n && starts_with(p, n, calls[i])) return KJ__LEX_LAUNCHES | KJ__LEX_NOT_MINIMAL;
        }
        p = q;
    }
    return found;
}
