/* Reading the command line: cli_getopt, the one option parser of every command (its sets of
 * options, getopt_long under it, its messages for an option it does not take), the parsers of option
 * values (counts, powers of two, -D, --arch lists) and of the program a command names. */
#include "cli.h"
#include "nvcc_options.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

char **cli_name_argv0(char **argv, const char *parent) {
    /* getopt names argv[0] in its messages ("kernjit compile: unrecognized option '--x'"); the
     * strings live as long as the process, as argv does */
    static char names[4][64];
    static int next;
    char *name = names[next++ % 4];
    snprintf(name, sizeof names[0], "%s %s", parent, argv[0]);
    argv[0] = name;
    return argv;
}

/* getopt_long's answer for an option it did not take ('?', or ':' for a missing value: every
 * optstring starts with ':' so that getopt itself prints nothing), named as the user typed it:
 * "unrecognized option '--x'", "option '--n' needs a value", "option '--json' takes no value",
 * "option '--s' is ambiguous: --samples, --seed". Returns EXIT_USAGE. */
static int bad_option(const char *cmd, char **argv, const struct option *options, int answer) {
    const char *word = optind > 0 ? argv[optind - 1] : "";
    if (answer == ':')
        return optopt && word[0] == '-' && word[1] != '-' ? cli_usage(cmd, "option '-%c' needs a value", optopt)
                                                          : cli_usage(cmd, "option '%s' needs a value", word);
    if (optopt) /* a known long option given a value (--json=1), or a letter no option has */
        return strncmp(word, "--", 2) == 0 && strchr(word, '=')
                   ? cli_usage(cmd, "option '%.*s' takes no value", (int)(strchr(word, '=') - word), word)
                   : cli_usage(cmd, "unrecognized option '-%c'", optopt);
    /* a long option that none is, or the start of several */
    size_t len = strcspn(word + 2, "="), matches = 0;
    char names[512] = "";
    for (const struct option *o = options; o && o->name; o++)
        if (strncmp(o->name, word + 2, len) == 0 && strlen(names) + strlen(o->name) + 5 < sizeof names)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s--%s", matches++ ? ", " : "", o->name);
    if (strncmp(word, "--", 2) == 0 && matches > 1)
        return cli_usage(cmd, "option '%.*s' is ambiguous: %s", (int)len + 2, word, names);
    return cli_usage(cmd, "unrecognized option '%s'", word);
}

int cli_getopt(const char *cmd, int argc, char **argv, const cli_option_set *sets, size_t count, void *user) {
    unsigned nvcc = 0;
    struct option all[CLI_MAX_OPTIONS + 1];
    char names[1024], letters[2 * CLI_MAX_OPTIONS + 2] = ":"; /* at most "L:" an option; ':' see bad_option */
    unsigned char set_of[256] = {0};                          /* the set each letter belongs to */
    const cli_option_set *operands = NULL;
    size_t n = 0, used = 0;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(sets[i].options);
        assert(used + len < sizeof names);
        char *spec = memcpy(names + used, sets[i].options, len + 1), *save;
        used += len + 1;
        for (char *p = strtok_r(spec, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(p, '=');
            int long_only = strncmp(p, "--", 2) == 0;
            assert(eq && n < CLI_MAX_OPTIONS && !set_of[(unsigned char)eq[1]]);
            *eq = '\0'; /* the name ends here */
            all[n++] = (struct option){p + 2 * long_only, eq[2] == ':' ? required_argument : no_argument, NULL, eq[1]};
            set_of[(unsigned char)eq[1]] = (unsigned char)(i + 1);
            if (!long_only) strncat(letters, eq + 1, 2);
        }
        nvcc |= sets[i].nvcc;
        if (sets[i].operands) operands = &sets[i];
    }
    all[n] = (struct option){0, 0, 0, 0};
    int opt, rc = nvcc ? cli_nvcc_options(cmd, &argc, argv, all, letters, nvcc) : EXIT_OK;
    if (rc != EXIT_OK) return rc;
    optind = 0; /* getopt starts over: the demo has parsed its own line before it runs reduce */
    while (rc == EXIT_OK && (opt = getopt_long(argc, argv, letters, all, NULL)) != -1) {
        if (opt == '?' || opt == ':') return bad_option(cmd, argv, all, opt);
        rc = sets[set_of[(unsigned char)opt] - 1].fn(user, opt, optarg);
    }
    if (rc != EXIT_OK) return rc;
    if (operands) return operands->operands(user, argc - optind, argv + optind);
    return optind < argc ? cli_usage(cmd, "unexpected argument '%s'", argv[optind]) : EXIT_OK;
}

int cli_parse_define(char *text, kj_define *out, char *err, size_t err_size) {
    char *eq = strchr(text, '=');
    if (!eq) { /* -DNDEBUG: defined, as nvcc and NVRTC define it */
        out->name = text;
        out->value = "1";
        return 0;
    }
    if (eq == text) {
        kj_message_format(err, err_size, "-D '%s' has no macro name: write -D NAME=VALUE", text);
        return -1;
    }
    if (eq[1] == '\0') {
        kj_message_format(err, err_size, "-D '%s' has an empty value: write -D NAME=VALUE (-D NAME is NAME=1)", text);
        return -1;
    }
    *eq = '\0';
    out->name = text;
    out->value = eq + 1;
    return 0;
}

int cli_arch_list(const char *cmd, char *arg, const char **archs, size_t *n, size_t max) {
    for (char *t = arg;; t++) {
        char *comma = strchr(t, ',');
        if (comma) *comma = '\0';
        if (!*t)
            return cli_usage(cmd, "--arch has an empty target: give a target (sm_90, sm_90a, compute_90), or "
                                  "several separated by commas (sm_80,sm_90)");
        if (*n == max) return cli_usage(cmd, "at most %zu targets", max);
        for (size_t k = 0; k < *n; k++)
            if (strcmp(archs[k], t) == 0) return cli_usage(cmd, "target %s is given twice", t);
        archs[(*n)++] = t;
        if (!comma) return EXIT_OK;
        t = comma;
    }
}

int cli_same_name(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_'))) return 0;
    return *a == *b;
}

const char *cli_kernel_name(const char *name) {
    if (!name || !strchr(name, '-') || strchr(name, '/')) return name;
    for (size_t i = 0; kj_builtin_name(i); i++)
        if (cli_same_name(name, kj_builtin_name(i))) return kj_builtin_name(i);
    return name;
}

/* A .cu file, or compiled code to link (.ptx, .cubin, .ltoir), or a path. */
static int is_file_name(const char *s) {
    static const char *const ext[] = {".cu", ".ptx", ".cubin", ".ltoir"};
    size_t n = strlen(s);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (n > strlen(ext[i]) && strcmp(s + n - strlen(ext[i]), ext[i]) == 0) return 1;
    return strchr(s, '/') != NULL;
}

int cli_parse_program(const char *cmd, char **args, int count, const char *entry_option, cli_program *out) {
    memset(out, 0, sizeof *out);
    out->entry = entry_option;
    if (count > CLI_MAX_SOURCES)
        return cli_usage(cmd, "%d sources: a program links at most %d", count, CLI_MAX_SOURCES);
    for (int i = 0; i < count; i++) {
        char *source = args[i];
        /* FILE.cu:ENTRY, or a built-in kernel as NAME:ENTRY */
        char *colon = strstr(source, ".cu:");
        if (colon) colon += 3;
        else if (!strchr(source, '/')) colon = strchr(source, ':');
        if (colon) {
            *colon = '\0';
            if (!colon[1]) return cli_usage(cmd, "'%s:' names no entry after ':'", source);
            if (entry_option) return cli_usage(cmd, "give the entry either as FILE.cu:ENTRY or with --entry, not both");
            if (out->entry && out->entry != entry_option)
                return cli_usage(cmd, "two entries ('%s' and '%s'): a program is launched at one entry", out->entry,
                                 colon + 1);
            out->entry = colon + 1;
        }
        if (count > 1 && !is_file_name(source))
            return cli_usage(cmd,
                             "'%s' is not a .cu file: several sources are linked into one program, so each is a "
                             "file (FILE.cu, or .ptx, .cubin, .ltoir code, or a path); a built-in kernel stands alone",
                             source);
        if (i == 0) out->kernel = count == 1 ? cli_kernel_name(source) : source;
        else out->sources[out->source_count++] = source;
    }
    return EXIT_OK;
}

/* The digits text starts with (no sign, no space) as *v, *end after them; -1 when there are none or
 * the number is above 2^64 - 1. */
static int leading_number(const char *text, unsigned long long *v, char **end) {
    if (!text || !isdigit((unsigned char)text[0])) return -1;
    errno = 0;
    *v = strtoull(text, end, 10);
    return errno ? -1 : 0;
}

int cli_parse_uint(const char *text, uint64_t max, uint64_t *out) {
    unsigned long long v;
    char *end;
    if (leading_number(text, &v, &end) != 0 || *end || v > max) return -1;
    *out = v;
    return 0;
}

int cli_parsed(const char *cmd, kj_status parse_status) {
    return parse_status == KJ_OK ? EXIT_OK : cli_usage(cmd, "%s", kj_last_error());
}

int cli_count_arg(const char *cmd, const char *option, const char *arg, uint64_t min, uint64_t max, uint64_t *out) {
    return kj_size_parse(arg, min, max, out) == KJ_OK ? EXIT_OK : cli_usage(cmd, "%s %s", option, kj_last_error());
}

int cli_pow2_arg(const char *cmd, const char *option, const char *arg, uint64_t min, uint64_t max, uint64_t *out) {
    uint64_t v;
    if (kj_size_parse(arg, min, max, &v) != KJ_OK || (v & (v - 1)))
        return cli_usage(cmd, "%s '%s': a power of two from %llu to %llu is allowed", option, arg,
                         (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return EXIT_OK;
}
