/* The progress display of long work on stderr: a live line on a terminal, plain lines in a log. */
#include "cli.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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
    double now = cli_now_ms() / 1e3;
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
    if (progress.unsaid[0] && (progress.printed || cli_now_ms() / 1e3 - progress.start >= CLI_PROGRESS_EVERY_S))
        progress_line(progress.unsaid);
    memset(&progress, 0, sizeof progress);
}
