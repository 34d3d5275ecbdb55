/* compile --all in worker processes. NVRTC serializes part of its work inside one process: threads of
 * one process stop scaling at about 8, processes do not (docs/DESIGN.md, "Offline builds"). So the
 * parent runs J workers, `kernjit compile KERNEL --all ... --arch A --shard k/J --threads 1 --worker`,
 * each a part of the space (kj_compile_all's shards), and drives one progress display and one result
 * from what they report on their stdout, a line each (a message's backslashes and newlines written
 * \\ and \n):
 *   v INDEX compiled|cached          a variant of the space done
 *   v INDEX failed MESSAGE           a variant that did not compile, and kj_compile's message
 *   l LEVEL MESSAGE                  a line of the library's log (kj_log_level)
 *   end STATUS                       the last line after kj_compile_all ran: its status (a number)
 *   e STATUS_NAME|- CLASS MESSAGE    the last line after a failure of the worker's own
 * The parent says each log line and each failure once, however many workers had it. */
#ifndef KJ_COMPILE_WORKERS_H
#define KJ_COMPILE_WORKERS_H

#include "cli.h"

/* What the parent asks of its workers. */
typedef struct workers_plan {
    const char *kernel, *entry; /* entry may be NULL */
    const kj_define *defines;   /* as given on the command line (-D) */
    size_t define_count;
    const char *arch;           /* resolved by the parent: a worker opens no device */
    unsigned shard, shards;     /* the parent's own part of the space (0 and 0: all of it) */
    unsigned processes;         /* 2 or more */
    const kj_space *space;      /* the space of the command line, as each worker makes it */
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
 * parent; worker_progress is kj_compile_all's progress function (user: the space); worker_end sends
 * the last line. */
void worker_begin(void);
void worker_progress(const kj_progress *progress, void *space);
void worker_end(kj_status status);

#endif
