/* Shared pieces of the kernjit command-line tool: messages and exit codes, the runtime, a few helpers
 * (cli.c); through the headers it includes, the option parser (options.h), the JSON writer (json.h),
 * files (files.h) and the progress display (progress.h). The tool uses only the public header. */
#ifndef KJ_CLI_H
#define KJ_CLI_H

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

#include "files.h"
#include "json.h"
#include "options.h"
#include "progress.h"

/* The failures below print "kernjit CMD: message" to stderr ("kernjit: message" when cmd is NULL)
 * and, under --json, put it in the document's "error" too (the first failure only).
 *
 * A usage error, with a pointer to --help: returns EXIT_USAGE (status KJ_ERR_USAGE). */
int cli_usage(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

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

/* Device memory the command line asks for (`what`, "--n 1048576") that the device does not have free:
 * "WHAT needs N bytes of device memory, more than the F bytes free (of T)", a failure and not a usage
 * error (the same line is right on a larger device; KJ_ERR_DEVICE_MEMORY, exit 1). Returns its code. */
int cli_device_memory_short(const char *cmd, const char *what, uint64_t bytes, size_t free_b, size_t total_b);
/* Before allocating: `bytes` for what the command line asks for, against the device's free memory:
 * EXIT_OK, or the shortage said as above. */
int cli_check_device_memory(kj_runtime *rt, const char *cmd, const char *what, uint64_t bytes);

/* A malloc'd string made as printf makes it; NULL when out of memory. */
char *cli_format(const char *fmt, ...) CLI_PRINTF(1, 2);

/* Milliseconds on the monotonic clock, for durations. */
double cli_now_ms(void);

/* Median of n values (the array is sorted). */
double cli_median(double *v, size_t n);

/* Fills buf with n bytes of the type's random values in a fixed, seeded way (xorshift). */
void cli_random_fill(kj_type type, void *buf, size_t n, uint64_t seed, int small_ints);

#endif
