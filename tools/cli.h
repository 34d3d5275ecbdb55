/* Shared pieces of the kernjit command-line tool: output (text or JSON), errors and exit codes, and
 * the parsers for sizes and -D values. The tool uses only the public header. */
#ifndef KJ_CLI_H
#define KJ_CLI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernjit.h"

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

enum { EXIT_OK = 0, EXIT_FAILURE_ = 1, EXIT_USAGE = 2 };

/* The bound of a message the tool formats itself (kj_message_format: long paths lose their middle). */
#define CLI_MESSAGE_MAX 2048

/* Each subcommand: argv[0] is the subcommand's name. Returns the exit code. */
typedef int (*cli_command_fn)(int argc, char **argv);

int cmd_info(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_launch(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Prints "kernjit CMD: message" to stderr and a pointer to --help; returns EXIT_USAGE. */
/* Sets argv[0] to "PARENT ARGV0" ("kernjit compile") for a subcommand's getopt messages; returns argv. */
char **cli_name_argv0(char **argv, const char *parent);
int cli_usage(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* Prints kj_last_error() (after "kernjit CMD: ") and returns the exit code for the status. */
int cli_fail(const char *cmd, kj_status status);
/* Prints "kernjit CMD: message" to stderr; returns EXIT_FAILURE_. */
int cli_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* -q/--quiet (0), default (1), -v/--verbose (2): the global flags, set before any command runs. The
 * library's log reaches stderr from KJ_LOG_ERROR, KJ_LOG_WARN or KJ_LOG_INFO (cache decisions,
 * evictions) on. */
extern int cli_verbosity;

/* A runtime for a command: device when present (or none when compile_only), warnings to stderr.
 * arch may be NULL. Returns the status; prints nothing. */
kj_status cli_runtime(kj_runtime **rt, int compile_only, const char *arch, int verbose);
/* The options cli_runtime uses, for a command that changes some before creating the runtime. */
void cli_runtime_options(kj_runtime_options *o, int compile_only, const char *arch, int verbose);

/* How a kernel was obtained, for people: "compiled now", "disk cache", "remote cache", "memory
 * (already loaded)". */
const char *cli_origin_text(kj_origin origin);

/* The remote cache's state and the fleet's counters (kj_remote_query), as text lines or as a JSON
 * object under "remote" (inside the caller's object). */
void cli_print_remote(const kj_remote_info *info, int json);

/* The program a command line names (compile, launch): SOURCE[:ENTRY]..., one kernel (a built-in
 * name, NAME.cu on KERNJIT_PATH, or a file) or several .cu files compiled apart and linked into one
 * program (kj_request.sources); at most one of them names the entry, and not with --entry
 * (entry_option, NULL when not given). The strings point into args, which is modified. Returns
 * EXIT_OK, or EXIT_USAGE after printing why. */
#define CLI_MAX_SOURCES 64
typedef struct cli_program {
    const char *kernel;                         /* the first source */
    const char *sources[CLI_MAX_SOURCES - 1];   /* the others, in order */
    size_t source_count;
    const char *entry;                          /* NULL: the program's only kernel */
} cli_program;
int cli_parse_program(const char *cmd, char **args, int count, const char *entry_option, cli_program *out);

/* "NAME=VALUE" -> define (pointing into text, which is modified). 0 on success, else -1 with a
 * message written to err. */
int cli_parse_define(char *text, kj_define *out, char *err, size_t err_size);
/* Element counts: "1000003", "64M" (2^20), "1G", "2^28", "16K"; 0 on success. Rejects negative
 * numbers, text, and values above max. */
int cli_parse_count(const char *text, uint64_t max, uint64_t *out);
/* A positive integer up to max; 0 on success. */
int cli_parse_uint(const char *text, uint64_t max, uint64_t *out);
/* Before allocating: what the command line asks for (`what`, "--n 1048576") needs `bytes` of device
 * memory; more than is free is a usage error naming both (EXIT_USAGE, after printing), else EXIT_OK. */
int cli_check_device_memory(kj_runtime *rt, const char *cmd, const char *what, uint64_t bytes);

/* Minimal JSON writer to stdout: nesting with commas handled. */
void json_begin_object(void);
void json_end_object(void);
void json_begin_array(const char *key);
void json_end_array(void);
void json_object_in(const char *key); /* begins a nested object under key (key NULL inside arrays) */
void json_string(const char *key, const char *value);
void json_int(const char *key, long long value);
void json_uint(const char *key, unsigned long long value);
void json_double(const char *key, double value);
void json_bool(const char *key, int value);
void json_null(const char *key);
void json_raw(const char *key, const char *literal); /* a value the caller formatted (a number) */
/* "NAME=VALUE NAME=VALUE" as an object {"NAME":"VALUE",...} under key: macro sets are objects. */
void json_macros(const char *key, const char *macros);
void json_done(void); /* ends the document with a newline */

/* Median of n values (the array is sorted). */
double cli_median(double *v, size_t n);

/* Fills buf with n bytes of the type's random values in a fixed, seeded way (xorshift). */
void cli_random_fill(kj_type type, void *buf, size_t n, uint64_t seed, int small_ints);

/* Opens path for reading, a regular file only: with O_NONBLOCK, so that a FIFO (whose open waits for
 * a writer, forever) is refused by fstat rather than waited on. NULL with *why ("not a regular
 * file", or strerror) when it cannot. */
FILE *cli_open_regular(const char *path, const char **why);

/* Creates a temporary file beside path (in its folder, so that a rename puts it in place), under a
 * name no other process uses: a fixed name (pid) that a killed writer left would block every later
 * one where process ids repeat, as in containers. Returns the descriptor, its name in tmp; -1 with
 * errno. */
int cli_create_beside(const char *path, char *tmp, size_t size);

/* A file the command will write at the end (what: "--plot FILE", "--save 2=FILE"), checked before it
 * does any work: its path must fit PATH_MAX and its name NAME_MAX, it must be a regular file if it
 * exists (never a device, a FIFO or a folder), and its folder must exist and be writable, else a
 * usage error naming it (EXIT_USAGE). */
int cli_check_output_folder(const char *cmd, const char *what, const char *path);

/* Progress of long work (compile --all, tune, the benchmarks) on stderr: on a terminal one line
 * rewritten in place; in a log, nothing for work shorter than CLI_PROGRESS_EVERY_S, then a plain
 * "kernjit CMD: PHASE n/N: detail" line that often, and the last one. cli_progress_end clears the
 * terminal line and starts over. */
#define CLI_PROGRESS_EVERY_S 3.0
void cli_progress(const char *cmd, const char *phase, size_t done, size_t total, const char *detail);
void cli_progress_end(void);

#endif
