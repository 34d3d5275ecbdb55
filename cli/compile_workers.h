/* Compiles in worker processes: compile --all's variants, seed's entries. NVRTC serializes part of its
 * work inside one process: threads of one process stop scaling at about 8, processes do not
 * (docs/DESIGN.md, "Offline builds"). So the parent runs J workers, each its command again on a part
 * of the same list of jobs (`kernjit compile KERNEL --all ... --arch A --shard k/J --threads 1
 * --worker`: kj_compile_all's shards; `kernjit seed DIR ... --shard k/J --worker`), and drives one
 * progress display and one result from what they report on their stdout, a line each (a message's
 * backslashes and newlines written \\ and \n):
 *   v INDEX compiled|cached          a job (a variant of the space, a seed entry) done
 *   v INDEX failed MESSAGE           a job that did not compile, and kj_compile's message
 *   l LEVEL MESSAGE                  a line of the library's log (kj_log_level)
 *   end STATUS                       the last line after kj_compile_all ran: its status (a number)
 *   e STATUS_NAME|- CLASS MESSAGE    the last line after a failure of the worker's own
 * The parent says each log line and each failure once, however many workers had it. */
#ifndef KJ_COMPILE_WORKERS_H
#define KJ_COMPILE_WORKERS_H

#include "cli.h"

/* Job `index` of a plan's list: its label (a variant's macros; static or the list's storage), and
 * *skipped 1 when it is left out (a requirement breaks). */
typedef const char *workers_label_fn(const void *jobs, size_t index, int *skipped);

/* A worker's argument that stands for its part, "K/N" (the value of its --shard). */
extern const char WORKERS_SHARD[];

/* What the parent asks of its workers. */
typedef struct workers_plan {
    const char *cmd;         /* "compile", "seed": the progress line names it */
    const char *const *args; /* a worker's arguments after "kernjit" and the global flags, NULL-ended,
                                   WORKERS_SHARD where its part goes; the worker compiles its part of
                                   the same list (a worker opens no device) */
    size_t count;            /* the list's jobs, indexed from 0 */
    workers_label_fn *label;
    const void *jobs;       /* label's */
    const char *what;       /* the jobs in the first failure's message: "variants of reduce" */
    const char *arch;       /* the result's arch; may be NULL */
    unsigned shard, shards; /* the parent's own part of the list (0 and 0: all of it) */
    unsigned processes;     /* 2 or more */
} workers_plan;

/* The failures the workers reported, each once, to be said after the command's output. */
typedef struct workers_failure {
    const char *status; /* a kj_status name; NULL for a failure no status names (a worker killed) */
    int class_;
    char *message;
} workers_failure;

typedef struct workers_failures {
    workers_failure *items;
    size_t count;
} workers_failures;

/* Runs the plan's workers and waits for every one of them; the progress goes through cli_progress and
 * the result is kj_compile_all's for the parent's part (threads: a worker's, 1). The failures, the
 * variants' first (as kj_compile_all says it) then each worker's own, are added to *failures. */
void workers_compile_all(const workers_plan *plan, kj_compile_all_result *result, workers_failures *failures);

/* Says each failure (stderr, and the JSON document's "error" for the first) and frees them; returns
 * the first's exit code, or EXIT_OK when there is none. */
int workers_report(const char *cmd, workers_failures *failures);

/* The worker's side. worker_begin sends, from now on, the process's failures and log lines to the
 * parent; worker_done says that job `index` is done (outcome "compiled" or "cached"; error: why it
 * failed, or NULL); worker_progress is kj_compile_all's progress function (user: the space) for
 * compile --all's; worker_end sends the last line. */
void worker_begin(void);
void worker_done(long long index, const char *outcome, const char *error);
void worker_progress(const kj_progress *progress, void *space);
void worker_end(kj_status status);

#endif
