/* The progress display of long work (progress.c). Part of cli.h, which includes it. */
#ifndef KJ_CLI_PROGRESS_H
#define KJ_CLI_PROGRESS_H

#include <stddef.h>

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
