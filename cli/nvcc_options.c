#include "nvcc_options.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct spelling {
    const char *names[2]; /* as nvcc takes them; names[0] ends a word or precedes '=' (-I: its value) */
    unsigned kind;
    int takes_value;     /* NAME V, NAME=V */
    const char *becomes; /* the word getopt gets: this, then the value */
} spellings[] = {
    {{"-arch", "--gpu-architecture"}, CLI_NVCC_ARCH, 1, "--arch="},
    {{"--define-macro", NULL}, CLI_NVCC_DEFINES, 1, "--define="},
    {{"-I", "--include-path"}, CLI_NVCC_COMPILER, 1, "--option=--include-path="},
    {{"-std", "--std"}, CLI_NVCC_COMPILER, 1, "--option=-std="},
    {{"-use_fast_math", "--use_fast_math"}, CLI_NVCC_COMPILER, 0, "--option=--use_fast_math"},
    {{"-G", "--device-debug"}, CLI_NVCC_COMPILER, 0, "--option=--device-debug"},
    {{"-lineinfo", "--generate-line-info"}, CLI_NVCC_COMPILER, 0, "--option=--generate-line-info"},
    {{"-Xptxas", "--ptxas-options"}, CLI_NVCC_COMPILER, 1, "--option=--ptxas-options="},
};

/* Whether getopt takes the word after w as w's value: a long option (or the one it abbreviates) or a
 * last letter of a cluster that requires one, written without it. */
static int takes_next(const char *w, const struct option *options, const char *letters) {
    if (w[0] != '-' || !w[1]) return 0;
    if (w[1] == '-') {
        if (!w[2] || strchr(w, '=')) return 0;
        size_t n = strlen(w + 2), count = 0;
        const struct option *match = NULL;
        for (const struct option *o = options; o->name; o++)
            if (strncmp(o->name, w + 2, n) == 0) {
                if (strlen(o->name) == n) return o->has_arg == required_argument;
                match = o, count++;
            }
        return count == 1 && match->has_arg == required_argument;
    }
    for (const char *c = w + 1; *c; c++) {
        const char *at = *c == ':' ? NULL : strchr(letters, *c);
        if (!at) return 0;
        if (at[1] == ':') return !c[1];
    }
    return 0;
}

/* The spelling w is, and its value: in w (after '=', or -I's attached), or NULL for the next word's.
 * A letter of the command's own (letters) is the command's. */
static const struct spelling *spelled(const char *w, unsigned take, const char *letters, const char **value) {
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        const struct spelling *s = &spellings[i];
        if (!(s->kind & take)) continue;
        for (int k = 0; k < 2 && s->names[k]; k++) {
            size_t n = strlen(s->names[k]);
            if (strncmp(w, s->names[k], n) != 0 || (n == 2 && strchr(letters, s->names[k][1]))) continue;
            *value = NULL;
            if (!w[n]) return s;
            if (s->takes_value && w[n] == '=') *value = w + n + 1;
            else if (s->takes_value && strcmp(s->names[k], "-I") == 0) *value = w + n;
            if (*value) return s;
        }
    }
    return NULL;
}

int cli_nvcc_options(const char *cmd, int *argc, char **argv, const struct option *options, const char *letters,
                     unsigned take) {
    static char **made; /* the words made, for the life of the process */
    static size_t made_count;
    int out = 1, skip = 0;
    unsigned kinds = take & CLI_NVCC_NO_COMPILER ? take | CLI_NVCC_COMPILER : take; /* those recognized */
    for (int i = 1; i < *argc; i++) {
        const char *w = argv[i], *value;
        const struct spelling *s = skip ? NULL : spelled(w, kinds, letters, &value);
        if (strcmp(w, "--") == 0 && !skip) {
            while (i < *argc) argv[out++] = argv[i++];
            break;
        }
        if (!s) {
            skip = !skip && takes_next(w, options, letters);
            argv[out++] = argv[i];
            continue;
        }
        if (s->kind == CLI_NVCC_COMPILER && !(take & CLI_NVCC_COMPILER))
            return cli_usage(cmd,
                             "'%s' is an option of the compiler: kernjit %s builds its kernels as they are "
                             "(kernjit compile and kernjit launch take it)",
                             w, cmd);
        if (s->takes_value && !value) {
            if (i + 1 == *argc) return cli_usage(cmd, "option '%s' needs a value", w);
            value = argv[++i];
        }
        char **grown = realloc(made, (made_count + 1) * sizeof *made);
        char *word = grown ? cli_format("%s%s", s->becomes, value ? value : "") : NULL;
        if (grown) made = grown;
        if (!word) return cli_error_as(cmd, KJ_ERR_HOST_MEMORY, "out of memory");
        argv[out++] = made[made_count++] = word;
    }
    argv[ *argc = out] = NULL;
    return EXIT_OK;
}
