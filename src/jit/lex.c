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

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* One pass over the text, word by word (a word: a run of letters, digits and '_'), for what both
 * questions look for; done as soon as a launch shows, which settles both. */
unsigned kj__lex_features(const char *s) {
    static const char *calls[] = {"cudaLaunchDevice", "cudaGetParameterBuffer", "cudaStreamTailLaunch",
                                  "cudaStreamFireAndForget"};
    static const char *prefixes[] = {"cuda", "tex1D", "tex2D", "tex3D", "texCubemap", "surf1D", "surf2D", "surf3D",
                                     "surfCubemap"};
    unsigned found = 0;
    for (const char *p = s; *p;) {
        if (*p == '<') { /* a run of three or more: `<<<` is a launch, `<<` a shift */
            const char *q = p;
            while (*q == '<') q++;
            if (q - p >= 3) return found | KJ__LEX_LAUNCHES | KJ__LEX_NOT_MINIMAL;
            p = q;
        } else if (ident_char(*p)) {
            const char *q = p;
            while (ident_char(*q)) q++;
            size_t n = (size_t)(q - p);
            if (*p == 'c' || *p == 't' || *p == 's') { /* the first letters of every word looked for */
                for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
                    if (n >= strlen(prefixes[i]) && memcmp(p, prefixes[i], strlen(prefixes[i])) == 0)
                        found |= KJ__LEX_NOT_MINIMAL;
                for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
                    if (n == strlen(calls[i]) && memcmp(p, calls[i], n) == 0)
                        return found | KJ__LEX_LAUNCHES | KJ__LEX_NOT_MINIMAL;
            }
            p = q;
        } else {
            p++;
        }
    }
    return found;
}
