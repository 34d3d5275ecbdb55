/* Shared pieces of the kernjit command-line tool: output (text or JSON), errors and exit codes, and
 * the parsers for sizes and -D values. The tool uses only the public header. */
#ifndef KJ_CLI_H
#define KJ_CLI_H

#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernjit.h"
#include "kernjit/ops.h"
#include "kernjit/tune.h"

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

enum { EXIT_OK = 0, EXIT_FAILURE_ = 1, EXIT_USAGE = 2 };

/* The bound of a message the tool formats itself (kj_message_format: long paths lose their middle). */
#define CLI_MESSAGE_MAX 2048

/* A command: argv[0] names it as typed ("kernjit compile", getopt's messages say it). Returns the exit
 * code. */
typedef int cli_command(int argc, char **argv);

/* kernjit's own commands, cmd_<name>.c each (kernjit run and kernjit bench: run.h) */
cli_command cmd_info, cmd_list, cmd_compile, cmd_cache, cmd_demo, cmd_launch, cmd_tune, cmd_seed;

/* Sets argv[0] to "PARENT ARGV0" ("kernjit compile") for a subcommand's getopt messages; returns argv. */
char **cli_name_argv0(char **argv, const char *parent);
/* The failures below print "kernjit CMD: message" to stderr ("kernjit: message" when cmd is NULL)
 * and, under --json, put it in the document's "error" too (the first failure only).
 *
 * A usage error, with a pointer to --help: returns EXIT_USAGE (status KJ_ERR_USAGE). */
/* Milliseconds on the monotonic clock, for durations. */
double cli_now_ms(void);
/* A malloc'd string made as printf makes it; NULL when out of memory. */
char *cli_format(const char *fmt, ...) CLI_PRINTF(1, 2);
int cli_usage(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* getopt_long's answer for an option it did not take ('?', or ':' for a missing value: every
 * optstring starts with ':' so that getopt itself prints nothing), named as the user typed it:
 * "unrecognized option '--x'", "option '--n' needs a value", "option '--json' takes no value",
 * "option '--s' is ambiguous: --samples, --seed". Returns EXIT_USAGE. */
int cli_bad_option(const char *cmd, char **argv, const struct option *options, int answer);
/* Options in sets: a command's own, and those a harness adds for all its commands. Each option is
 * "NAME=L" (--NAME or -L) or "NAME=L:" (taking a value), space-separated: "rows=R: cols=C: json=j". */
typedef struct cli_option_set {
    const char *options;
    int (*fn)(void *user, int opt, char *arg); /* one option of the set (L): EXIT_OK, CLI_DONE, or an exit code */
    unsigned nvcc; /* nvcc's spellings the set takes (CLI_NVCC_*, nvcc_options.h): 0, none */
} cli_option_set;

/* fn has done what the command line asked (printed --help): stop, exit 0. */
#define CLI_DONE (-1)
#define CLI_MAX_OPTIONS 32

/* getopt_long over argv with every set's options (a letter belongs to one set), after nvcc's spellings
 * that a set takes are rewritten into its options (cli_nvcc_options); each option goes to its set's fn
 * with user. An unknown option or a left-over argument is a usage error. Returns EXIT_OK,
 * CLI_DONE, or the exit code of the first error. At most CLI_MAX_OPTIONS options in all. */
int cli_getopt(const char *cmd, int argc, char **argv, const cli_option_set *sets, size_t count, void *user);

/* A process that works for another (compile --all's workers) hands its failures and the library's
 * log lines to it rather than to the user: while fn is set (NULL: not), the failures above and below
 * and the log of cli_runtime's runtimes call fn instead of writing to stderr and the JSON document.
 * failure: 1 with the status's name (NULL for none) and the class; 0 for a log line of that level. */
typedef void cli_diversion(int failure, const char *status, int class_or_level, const char *message);
void cli_divert(cli_diversion *fn);
/* What another process handed over, said here as its own: a failure (returns class_), a log line
 * (a warning or an error already said, by this process or another, is not said again). */
int cli_relay_failure(const char *cmd, const char *status, int class_, const char *message);
void cli_relay_log(kj_log_level level, const char *message);

/* The library's failure: kj_last_error(), and the exit code for the status (its class). */
int cli_fail(const char *cmd, kj_status status);
/* A failure the command found itself, as one of the library's statuses (KJ_ERR_NO_DEVICE,
 * KJ_ERR_WRONG_RESULT, KJ_ERR_HOST_MEMORY, KJ_ERR_IO ...): returns the status's class. */
int cli_error_as(const char *cmd, kj_status status, const char *fmt, ...) CLI_PRINTF(3, 4);
/* A failure of the command's own that no status names (a benchmark's sanity check): "status" is null
 * in JSON. Returns EXIT_FAILURE_. */
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

/* How a kernel was obtained, for people: "compiled now", "disk cache", "remote cache", "seed (built
 * ahead of time)", "memory (already loaded)". */
const char *cli_origin_text(kj_origin origin);

/* The remote cache's state and the fleet's counters (kj_remote_query), as text lines or as a JSON
 * object under "remote" (inside the caller's object). */
void cli_print_remote(const kj_remote_info *info, int json);

/* A transfer's counts (kj_remote_push, kj_remote_pull) as fields of the object being written:
 * "entries", "moved", "present", "refused", "failed", "moved_bytes". */
void json_transfer_fields(const kj_remote_transfer *t);

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
    const char *kernel;                         /* the first source */
    const char *sources[CLI_MAX_SOURCES - 1];   /* the others, in order */
    size_t source_count;
    const char *entry;                          /* NULL: the program's only kernel */
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
/* Device memory the command line asks for (`what`, "--n 1048576") that the device does not have free:
 * "WHAT needs N bytes of device memory, more than the F bytes free (of T)", a failure and not a usage
 * error (the same line is right on a larger device; KJ_ERR_DEVICE_MEMORY, exit 1). Returns its code. */
int cli_device_memory_short(const char *cmd, const char *what, uint64_t bytes, size_t free_b, size_t total_b);
/* Before allocating: `bytes` for what the command line asks for, against the device's free memory:
 * EXIT_OK, or the shortage said as above. */
int cli_check_device_memory(kj_runtime *rt, const char *cmd, const char *what, uint64_t bytes);

/* ---- JSON (docs/json.md) --------------------------------------------------------------------
 * Under --json, stdout holds exactly one document, an object: {"schema": CLI_JSON_SCHEMA, "command":
 * "cache list", ...the command's fields}. A failure is in it too, last, as "error": {"status":
 * "KJ_ERR_...", "class": 2, "message": "..."} after whatever the command had written, with the same
 * exit code; the message also goes to stderr as text, as without --json. */
#define CLI_JSON_SCHEMA 1

/* Set by main when --json is on the command line, before any command parses it: from then on every
 * error (a usage error too, even one about the command's name) is written as a JSON document. */
extern int cli_json;
/* The command the document names ("run reduce"): the dispatcher sets it as it descends; a command
 * whose first argument is an action (cache list) or whose options pick another document (tune
 * --show) sets it itself, before the document begins. */
void json_command(const char *name);

/* The writer, to stdout, with commas handled. A key is NULL inside arrays. json_begin_object() at the
 * top begins the document (with "schema" and "command"); json_end_object() there leaves it open:
 * json_finish() ends it, after the command, so that a failure found after the output (a wrong result)
 * still lands in it. There are no documents but objects. */
void json_begin_object(void);
void json_end_object(void);
void json_begin_array(const char *key);
void json_end_array(void);
void json_object_in(const char *key); /* begins a nested object under key (key NULL inside arrays) */
void json_string(const char *key, const char *value); /* always valid UTF-8 (see json_escaped) */
void json_int(const char *key, long long value);
void json_uint(const char *key, unsigned long long value);
void json_double(const char *key, double value);     /* the shortest form that reads back the same; null
                                                         when not finite */
void json_bool(const char *key, int value);
void json_null(const char *key);
void json_raw(const char *key, const char *literal); /* a value the caller formatted (a number) */
/* Several fields at once, keys and values from one printf format (checked by the compiler): "KEY=%CONV"
 * separated by spaces, one argument each. %s a string (NULL: null); %d %ld %lld %zd and %u %lu %llu
 * %zu integers; %g a double (json_double); a key ending in '?' is a bool from an int ("ok?=%d").
 * json_fields("n=%zu type=%s ok?=%d", n, "f32", 1) writes "n":N,"type":"f32","ok":true. */
void json_fields(const char *format, ...) CLI_PRINTF(1, 2);
/* A string as the writer writes it (quoted, escaped, valid UTF-8), to another file (a manifest). */
void json_escape_to(FILE *f, const char *s);
/* "NAME=VALUE NAME=VALUE" as an object {"NAME":"VALUE",...} under key: macro sets are objects. */
void json_macros(const char *key, const char *macros);
/* "sm_90" from a compute capability: every compute capability in the documents is written so. */
void json_arch(const char *key, int cc_major, int cc_minor);
/* A version as "MAJOR.MINOR" from CUDA's encoding (1000 * major + 10 * minor: 13000 -> "13.0"). */
void json_cuda_version(const char *key, int version);
/* After the command: closes what is open, adds the first failure as "error", and ends the document
 * with a newline. A command that failed (exit_code not 0) without saying why through cli_usage,
 * cli_fail or cli_error still gets an "error", pointing to stderr. Nothing is written without
 * --json, nor for --help. */
void json_finish(int exit_code);

/* Device printf writes to the process's stdout, which under --json holds the document: between
 * cli_capture_begin and cli_capture_end it goes to a temporary file instead, whose lines
 * json_captured writes as an array of strings under key (an empty one without --json);
 * cli_capture_free ends the capture if still on and frees it. */
typedef struct cli_capture {
    int saved_fd; /* stdout while captured; -1 when not capturing */
    FILE *file;
} cli_capture;
void cli_capture_begin(cli_capture *c);
void cli_capture_end(cli_capture *c);
void json_captured(const char *key, const cli_capture *c);
void cli_capture_free(cli_capture *c);

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

/* Writes a file the user named (--save, -o): to a temporary file beside it, renamed over it, so that a
 * write that fails (a full disk) leaves the previous file whole and no partial one. EXIT_OK, or the
 * failure said (KJ_ERR_IO). */
int cli_write_file(const char *cmd, const char *path, const void *data, size_t size);

/* A file the command will write at the end (what: "--plot FILE", "--save 2=FILE"), checked before it
 * does any work: its path must fit PATH_MAX and its name NAME_MAX, it must be a regular file if it
 * exists (never a device, a FIFO or a folder), and its folder must exist and be writable, else a
 * usage error naming it (EXIT_USAGE). */
int cli_check_output_folder(const char *cmd, const char *what, const char *path);

/* Progress of long work (compile --all, tune, the benchmarks) on stderr: on a terminal one line
 * rewritten in place; in a log, nothing for work shorter than CLI_PROGRESS_EVERY_S, then a plain
 * "kernjit CMD: PHASE n/N: detail" line that often, and the last one. cli_progress_pause clears the
 * terminal line until the next cli_progress, for output printed in between (a table's row);
 * cli_progress_end clears it and starts over. */
#define CLI_PROGRESS_EVERY_S 3.0
void cli_progress(const char *cmd, const char *phase, size_t done, size_t total, const char *detail);
void cli_progress_pause(void);
void cli_progress_end(void);
/* The same for one long wait (a build): "[WHAT: 12 s]" on a terminal, "kernjit CMD: WHAT: 12 s" in a
 * log every CLI_PROGRESS_EVERY_S. */
void cli_progress_waiting(const char *cmd, const char *what, double seconds);

#endif
