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

/* Blanks the lines under `#if 0` up to the matching #else/#elif/#endif. */
static void blank_if0(char *s, size_t len) {
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
    if (skip_if0) blank_if0(s, len);
    return s;
}

int kj__lex_launches_kernels(const char *s) {
    static const char *calls[] = {"cudaLaunchDevice", "cudaGetParameterBuffer", "cudaStreamTailLaunch",
                                  "cudaStreamFireAndForget"};
    for (const char *p = strstr(s, "<<<"); p; p = strstr(p + 3, "<<<"))
        if (p == s || p[-1] != '<') return 1; /* not a shift of a shift: `a <<<< b` does not exist */
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        for (const char *p = strstr(s, calls[i]); p; p = strstr(p + 1, calls[i])) {
            size_t n = strlen(calls[i]);
            if ((p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                !(isalnum((unsigned char)p[n]) || p[n] == '_'))
                return 1;
        }
    return 0;
}

static int word_start(const char *s, const char *p) { return p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'); }

int kj__lex_minimal_ok(const char *s) {
    if (kj__lex_launches_kernels(s)) return 0;
    static const char *prefixes[] = {"cuda", "tex1D", "tex2D", "tex3D", "texCubemap", "tex1Dfetch", "surf1D",
                                     "surf2D", "surf3D", "surfCubemap"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        for (const char *p = strstr(s, prefixes[i]); p; p = strstr(p + 1, prefixes[i]))
            if (word_start(s, p)) return 0;
    return 1;
}
