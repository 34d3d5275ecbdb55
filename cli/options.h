/* Reading the command line (options.c): the one option parser every command uses, cli_getopt, and
 * the parsers of option values and of the program a command names. Part of cli.h, which includes it. */
#ifndef KJ_CLI_OPTIONS_H
#define KJ_CLI_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "kernjit.h"

/* Sets argv[0] to "PARENT ARGV0" ("kernjit compile") for a subcommand's getopt messages; returns argv. */
char **cli_name_argv0(char **argv, const char *parent);
/* Options in sets: a command's own, and those a harness adds for all its commands. Each option is
 * "NAME=L" (--NAME or -L) or "NAME=L:" (taking a value), space-separated: "rows=R: cols=C: json=j";
 * "--NAME=L" is --NAME alone, L only telling fn which option it is ("--save=o:": -o is no option). */
typedef struct cli_option_set {
    const char *options;
    int (*fn)(void *user, int opt, char *arg); /* one option of the set (L): EXIT_OK, CLI_DONE, or an exit code */
    unsigned nvcc; /* nvcc's spellings the set takes (CLI_NVCC_*, nvcc_options.h): 0, none */
    /* the arguments that are not options, in order (count may be 0), once every option is taken:
     * EXIT_OK or an exit code. NULL: the command takes none ("unexpected argument 'X'"). */
    int (*operands)(void *user, int count, char **args);
} cli_option_set;

/* fn has done what the command line asked (printed --help): stop, exit 0. */
#define CLI_DONE (-1)
#define CLI_MAX_OPTIONS 32

/* getopt_long over argv with every set's options (a letter belongs to one set), after nvcc's spellings
 * that a set takes are rewritten into its options (cli_nvcc_options); each option goes to its set's fn
 * with user, then the other arguments to the set that takes them. An unknown option, or an argument
 * where no set takes any, is a usage error. Returns EXIT_OK, CLI_DONE, or the exit code of the first
 * error. At most CLI_MAX_OPTIONS options in all. Every command parses its command line with it. */
int cli_getopt(const char *cmd, int argc, char **argv, const cli_option_set *sets, size_t count, void *user);

/* Names on the command line take '-' and '_' alike (`run vector_add`, `compile vector-add`): 1 when a
 * and b are the same name so read. */
int cli_same_name(const char *a, const char *b);
/* The built-in kernel that `name` spells with '-' for '_' (vector-add: vector_add), or name itself
 * (a path, NAME.cu, a name that is no built-in's). */
const char *cli_kernel_name(const char *name);

/* The program a command line names (compile, launch): SOURCE[:ENTRY]..., one kernel (a built-in
 * name, in either spelling: cli_kernel_name; NAME.cu on KERNJIT_PATH, or a file) or several .cu files compiled apart and linked into one
 * program (kj_request.sources); at most one of them names the entry, and not with --entry
 * (entry_option, NULL when not given). The strings point into args, which is modified. Returns
 * EXIT_OK, or EXIT_USAGE after printing why. */
#define CLI_MAX_SOURCES 64
typedef struct cli_program {
    const char *kernel;                       /* the first source */
    const char *sources[CLI_MAX_SOURCES - 1]; /* the others, in order */
    size_t source_count;
    const char *entry; /* NULL: the program's only kernel */
} cli_program;
int cli_parse_program(const char *cmd, char **args, int count, const char *entry_option, cli_program *out);

/* --arch's value: one target or several separated by commas (--arch sm_80,sm_90), added to archs[*n]
 * (pointing into arg, which is modified); --arch may be given again. An empty item ("" is no target to
 * the library), a target given twice or more than max in all is a usage error. EXIT_OK, or EXIT_USAGE
 * after printing why. */
int cli_arch_list(const char *cmd, char *arg, const char **archs, size_t *n, size_t max);
/* "NAME=VALUE" -> define (pointing into text, which is modified); "NAME" alone is NAME=1, as nvcc's
 * -DNAME. 0 on success, else -1 with a message written to err. */
int cli_parse_define(char *text, kj_define *out, char *err, size_t err_size);
/* Plain decimal digits up to max, for what is not a count (a seed, a macro's value); 0 on success. */
int cli_parse_uint(const char *text, uint64_t max, uint64_t *out);
/* An option's value, checked, for a command's option parser: EXIT_OK, or a usage error naming the
 * option and what is allowed (exit 2).
 *   cli_parsed      a kj_*_parse function's status ("unknown type 'f8': allowed are ...")
 *   cli_count_arg   a count from min to max in the one grammar of sizes (kj_size_parse: 1000003, 64M,
 *                   2^28): "OPTION 'ARG' is not a number from MIN to MAX (digits, with K, M, G or T ...)"
 *   cli_pow2_arg    a power of two from min to max: "OPTION 'ARG': a power of two from MIN to MAX is allowed" */
int cli_parsed(const char *cmd, kj_status parse_status);
int cli_count_arg(const char *cmd, const char *option, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
int cli_pow2_arg(const char *cmd, const char *option, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
#endif
