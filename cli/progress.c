/* The progress display of long work on stderr: a live line on a terminal, plain lines in a log. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The display's clock, in seconds. A test hook: with KJ_TEST_PROGRESS_STEP=S in the environment
 * (tests/test-progress.sh) the clock stands still but for S seconds at each reading, so that what a
 * log shows follows the steps of the work and not the host's speed: 0, no work is long; 3
 * (CLI_PROGRESS_EVERY_S), every state after the first is said. */
static double progress_now(void) {
    static int hooked = -1;
    static double step, fake = 1000; /* any start but 0, which progress.start keeps for "not begun" */
    if (hooked < 0) {
        const char *text = getenv("KJ_TEST_PROGRESS_STEP");
        char *end = NULL;
        step = text && *text ? strtod(text, &end) : -1;
        hooked = end && !*end && step >= 0;
    }
    return hooked ? fake += step : cli_now_ms() / 1e3;
}

static struct {
    double start, last;
    int printed, tty, columns;
    char unsaid[1200]; /* in a log: the latest state, while it is not printed */
} progress;

/* A line in a log: after what stdout holds, so that a log of both streams keeps the rows before it
 * whole (a file's stdout is fully buffered). */
static void progress_line(const char *line) {
    fflush(stdout);
    fputs(line, stderr);
}

/* One state of long work: drawn on a terminal each time; in a log, once the work has lasted
 * CLI_PROGRESS_EVERY_S, that often, and its last state (final, or at cli_progress_end) when a line
 * was printed before or the work lasted that long. */
static void progress_show(const char *cmd, const char *live, const char *logged, int final) {
    double now = progress_now();
    if (progress.start == 0) {
        progress.start = progress.last = now;
        progress.tty = isatty(2);
        struct winsize ws;
        progress.columns = progress.tty && ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    }
    if (progress.tty) {
        /* within one row of the terminal: a line that wrapped could not be rewritten in place */
        fprintf(stderr, "\r\033[K%.*s", progress.columns - 1, live);
        fflush(stderr);
        progress.printed = 1;
        return;
    }
    /* kept until printed: a last step that runs past the interval is said at cli_progress_end */
    snprintf(progress.unsaid, sizeof progress.unsaid, "kernjit %s: %s\n", cmd, logged);
    if ((now - progress.last >= CLI_PROGRESS_EVERY_S && now - progress.start >= CLI_PROGRESS_EVERY_S) ||
        (final && progress.printed)) {
        progress_line(progress.unsaid);
        progress.last = now;
        progress.printed = 1;
        progress.unsaid[0] = '\0';
    }
}

void cli_progress(const char *cmd, const char *phase, size_t done, size_t total, const char *detail) {
    char live[1024], logged[1024];
    snprintf(live, sizeof live, "[%s %zu/%zu] %s", phase, done, total, detail ? detail : "");
    snprintf(logged, sizeof logged, "%s %zu/%zu%s%s", phase, done, total, detail ? ": " : "", detail ? detail : "");
    progress_show(cmd, live, logged, done == total);
}

void cli_progress_waiting(const char *cmd, const char *what, double seconds) {
    char live[1024], logged[1024];
    snprintf(live, sizeof live, "[%s: %.0f s]", what, seconds);
    snprintf(logged, sizeof logged, "%s: %.0f s", what, seconds);
    progress_show(cmd, live, logged, 0);
}

void cli_progress_pause(void) {
    if (!progress.tty || !progress.printed) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress.printed = 0;
}

void cli_progress_end(void) {
    cli_progress_pause();
    if (progress.unsaid[0] && (progress.printed || progress_now() - progress.start >= CLI_PROGRESS_EVERY_S))
        progress_line(progress.unsaid);
    memset(&progress, 0, sizeof progress);
}
