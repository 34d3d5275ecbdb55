/* Compiles in worker processes (compile --all, seed): the parent spawns and reads them, the workers
 * report (the protocol is in compile_workers.h). */
#include "compile_workers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- the lines: a message's backslashes and newlines escaped ---------------------------------- */

static void put_escaped(FILE *f, const char *s) {
    for (; *s; s++)
        if (*s == '\\') fputs("\\\\", f);
        else if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
}

/* In place: "\\n" back to a newline, "\\\\" to a backslash. */
static char *unescape(char *s) {
    char *out = s;
    for (const char *p = s; *p; p++) {
        if (*p == '\\' && (p[1] == 'n' || p[1] == '\\')) *out++ = *++p == 'n' ? '\n' : '\\';
        else *out++ = *p;
    }
    *out = '\0';
    return s;
}

/* ---- the worker's side -------------------------------------------------------------------------- */

static void send_diverted(int failure, const char *status, int class_or_level, const char *message) {
    if (failure) printf("e %s %d ", status ? status : "-", class_or_level);
    else printf("l %d ", class_or_level);
    put_escaped(stdout, message);
    putchar('\n');
    fflush(stdout);
}

/* The pid of the process that started a worker, in the worker's environment (spawn_worker). */
#define PARENT_VARIABLE "KJ_WORKERS_PARENT"

void worker_begin(void) {
    cli_divert(send_diverted);
    /* a parent gone (killed) leaves no one to read: stop rather than compile for nobody. A parent
     * that died before this call sends no signal: this process has another parent by now. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    const char *parent = getenv(PARENT_VARIABLE);
    if (parent && strtol(parent, NULL, 10) != (long)getppid()) raise(SIGTERM);
}

/* A variant's index from its label (kj_progress names variants by label): the labels sorted once. */
typedef struct labelled {
    const char *label;
    size_t index;
} labelled;

static int by_label(const void *a, const void *b) {
    return strcmp(((const labelled *)a)->label, ((const labelled *)b)->label);
}

static long long variant_index(const kj_space *space, const char *label) {
    static labelled *sorted;
    size_t n = kj_space_count(space);
    if (!sorted) {
        if (!(sorted = malloc(n * sizeof *sorted))) return -1;
        for (size_t i = 0; i < n; i++) {
            kj_variant v = KJ_VARIANT_INIT;
            kj_space_variant(space, i, &v);
            sorted[i] = (labelled){v.label, i};
        }
        qsort(sorted, n, sizeof *sorted, by_label);
    }
    labelled key = {label, 0}, *found = bsearch(&key, sorted, n, sizeof *sorted, by_label);
    return found ? (long long)found->index : -1;
}

void worker_done(long long index, const char *outcome, const char *error) {
    printf("v %lld %s", index, error ? "failed " : outcome);
    if (error) put_escaped(stdout, error);
    putchar('\n');
    fflush(stdout);
}

void worker_progress(const kj_progress *p, void *space) {
    worker_done(variant_index(space, p->variant), p->outcome, p->error);
}

void worker_end(kj_status status) {
    printf("end %d\n", (int)status);
    fflush(stdout);
}

/* ---- the parent's side -------------------------------------------------------------------------- */

typedef struct worker {
    pid_t pid; /* 0: not started */
    int fd;    /* the read end of its stdout; -1 once closed */
    unsigned shard, shards;
    char *line; /* what has come since the last newline */
    size_t len, cap;
    int finished;              /* its last line came: "end" or "e" */
    kj_status status;          /* "end"'s */
    size_t variants, reported; /* to compile in its part; reported done */
} worker;

typedef struct parent {
    const workers_plan *plan;
    worker *w;
    kj_compile_all_result *r;
    workers_failures *failures;
    size_t total, done, failed; /* the parent's part's variants to compile, done so far, failed so far */
    long long first_failed;     /* the lowest index that failed, -1 before one */
    char *first_error;          /* its message */
} parent;

static void add_failure(workers_failures *f, const char *status, int class_, char *message) {
    int known = !message;
    for (size_t i = 0; i < f->count && !known; i++) known = strcmp(f->items[i].message, message) == 0;
    workers_failure *more = known ? NULL : realloc(f->items, (f->count + 1) * sizeof *more);
    if (!more) {
        free(message);
        return;
    }
    f->items = more;
    f->items[f->count++] = (workers_failure){status, class_, message};
}

/* "worker 3 of 8 (pid 1234, shard 3/8)" */
static char *worker_name(const parent *p, const worker *w) {
    return cli_format("worker %u of %u (pid %ld, shard %u/%u)", (unsigned)(w - p->w) + 1, p->plan->processes,
                      (long)w->pid, w->shard, w->shards);
}

static void worker_failed(parent *p, const worker *w, const char *what) {
    char *name = worker_name(p, w);
    add_failure(p->failures, NULL, EXIT_FAILURE_,
                cli_format("%s %s: %zu of its %zu variants were not compiled", name ? name : "a worker", what,
                           w->variants - w->reported, w->variants));
    free(name);
}

static const char *status_name_of(const char *name) {
    /* the static name kj_status_name gives, so that the failure outlives the line */
    for (int s = 0; s < KJ_STATUS_COUNT_; s++)
        if (strcmp(kj_status_name((kj_status)s), name) == 0) return kj_status_name((kj_status)s);
    return NULL;
}

static void said_variant(parent *p, worker *w, char *rest) {
    char *end;
    long long index = strtoll(rest, &end, 10);
    const char *outcome = *end == ' ' ? end + 1 : "";
    int skipped;
    if (index < 0 || (size_t)index >= p->plan->count || (size_t)index % w->shards != w->shard) {
        worker_failed(p, w, "named a job that is not in its part");
        return;
    }
    const char *label = p->plan->label(p->plan->jobs, (size_t)index, &skipped);
    w->reported++;
    p->done++;
    if (strcmp(outcome, "compiled") == 0) p->r->compiled++;
    else if (strcmp(outcome, "cached") == 0) p->r->cached++;
    else {
        p->failed++;
        if (p->first_failed < 0 || index < p->first_failed) {
            free(p->first_error);
            p->first_failed = index;
            p->first_error = strdup(strncmp(outcome, "failed ", 7) == 0 ? unescape((char *)outcome + 7)
                                                                        : "(no message)");
        }
        outcome = "failed";
    }
    char detail[512];
    snprintf(detail, sizeof detail, "%s: %s", label, outcome);
    cli_progress(p->plan->cmd, "compile", p->done, p->total, detail);
}

static void said_log(char *rest) {
    char *message;
    long level = strtol(rest, &message, 10);
    cli_relay_log((kj_log_level)level, unescape(*message == ' ' ? message + 1 : message));
}

static void said_failure(parent *p, worker *w, char *rest) {
    char *status = rest, *space = strchr(rest, ' ');
    w->finished = 1;
    if (!space) {
        worker_failed(p, w, "failed without saying why");
        return;
    }
    *space = '\0';
    char *message;
    long class_ = strtol(space + 1, &message, 10);
    message = unescape(*message == ' ' ? message + 1 : message);
    add_failure(p->failures, status_name_of(status), class_ == EXIT_USAGE ? EXIT_USAGE : EXIT_FAILURE_,
                strdup(message));
}

static void said(parent *p, worker *w, char *line) {
    if (strncmp(line, "v ", 2) == 0) said_variant(p, w, line + 2);
    else if (strncmp(line, "l ", 2) == 0) said_log(line + 2);
    else if (strncmp(line, "e ", 2) == 0) said_failure(p, w, line + 2);
    else if (strncmp(line, "end ", 4) == 0) {
        w->finished = 1;
        w->status = (kj_status)atoi(line + 4);
    } else {
        char *what = cli_format("wrote a line that is not of the protocol: '%.200s'", line);
        worker_failed(p, w, what ? what : "wrote a line that is not of the protocol");
        free(what);
    }
}

/* What came on the worker's pipe: each whole line said. */
static void took(parent *p, worker *w, const char *data, size_t n) {
    if (w->len + n + 1 > w->cap) {
        size_t cap = (w->len + n + 1) * 2;
        char *grown = realloc(w->line, cap);
        if (!grown) return; /* the line is lost; the worker's count says so at the end */
        w->line = grown;
        w->cap = cap;
    }
    memcpy(w->line + w->len, data, n);
    w->len += n;
    w->line[w->len] = '\0';
    char *start = w->line, *nl;
    while ((nl = memchr(start, '\n', w->len - (size_t)(start - w->line)))) {
        *nl = '\0';
        said(p, w, start);
        start = nl + 1;
    }
    w->len -= (size_t)(start - w->line);
    memmove(w->line, start, w->len);
}

/* The worker's pipe closed: reap it, and say what went wrong if it did. */
static void reap(parent *p, worker *w) {
    close(w->fd);
    w->fd = -1;
    int st;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {}
    char what[128];
    if (WIFSIGNALED(st)) {
        snprintf(what, sizeof what, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        worker_failed(p, w, what);
    } else if (!w->finished) {
        snprintf(what, sizeof what, "exited with status %d without its last line", WEXITSTATUS(st));
        worker_failed(p, w, what);
    } else if (w->reported < w->variants && w->status == KJ_OK) {
        worker_failed(p, w, "finished without reporting every variant");
    }
}

const char WORKERS_SHARD[] = "{shard}";

/* argv of worker w: kernjit [-q|-v] ARGS..., its part "K/N" where ARGS has WORKERS_SHARD. *shard
 * holds the part's text. */
static char **worker_argv(const workers_plan *plan, const worker *w, char **shard) {
    size_t count = 0;
    while (plan->args[count]) count++;
    char **argv = calloc(count + 3, sizeof *argv);
    if (!argv || !(*shard = cli_format("%u/%u", w->shard, w->shards))) return free(argv), NULL;
    size_t n = 0;
    argv[n++] = "kernjit";
    if (cli_verbosity != 1) argv[n++] = cli_verbosity ? "-v" : "-q";
    for (size_t i = 0; i < count; i++) argv[n++] = plan->args[i] == WORKERS_SHARD ? *shard : (char *)plan->args[i];
    return argv;
}

/* This process's environment and PARENT_VARIABLE=its pid (in `own`), for a worker. */
static char **worker_environment(char *own, size_t size) {
    snprintf(own, size, PARENT_VARIABLE "=%ld", (long)getpid());
    size_t count = 0, n = 0;
    while (environ[count]) count++;
    char **env = calloc(count + 2, sizeof *env);
    if (!env) return NULL;
    for (size_t i = 0; i < count; i++)
        if (strncmp(environ[i], PARENT_VARIABLE "=", sizeof PARENT_VARIABLE) != 0) env[n++] = environ[i];
    env[n] = own;
    return env;
}

/* Starts worker w, its stdout a pipe (close-on-exec: no other worker holds it, so that its end is
 * seen), its stdin /dev/null, and this process's pid in its environment (worker_begin). Returns 0,
 * or an errno. */
static int spawn_worker(const workers_plan *plan, worker *w) {
    char *shard = NULL, **argv = worker_argv(plan, w, &shard), own[64];
    char **env = worker_environment(own, sizeof own);
    int fds[2] = {-1, -1}, err = argv && env ? 0 : ENOMEM;
    if (!err && pipe2(fds, O_CLOEXEC) != 0) err = errno;
    if (!err) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        err = posix_spawn(&w->pid, "/proc/self/exe", &fa, NULL, argv, env);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        if (err) {
            w->pid = 0;
            close(fds[0]);
        } else {
            w->fd = fds[0];
        }
    }
    free(shard);
    free(argv);
    free(env);
    return err;
}

/* The parent's part's jobs, and each worker's: index i of the part (i = shard + shards * m) is
 * worker m % J's, whose part is shard + shards * w modulo shards * J. */
static void count_variants(parent *p) {
    const workers_plan *plan = p->plan;
    size_t step = plan->shards ? plan->shards : 1, m = 0;
    for (size_t i = plan->shards ? plan->shard : 0; i < plan->count; i += step, m++) {
        int skipped;
        plan->label(plan->jobs, i, &skipped);
        p->r->variants++;
        if (skipped) p->r->skipped++;
        else p->total++, p->w[m % plan->processes].variants++;
    }
}

void workers_compile_all(const workers_plan *plan, kj_compile_all_result *r, workers_failures *failures) {
    double t0 = cli_now_ms();
    *r = (kj_compile_all_result)KJ_COMPILE_ALL_RESULT_INIT;
    r->threads = 1;
    r->arch = plan->arch;
    unsigned j = plan->processes, shards = plan->shards ? plan->shards : 1, shard = plan->shards ? plan->shard : 0;
    workers_failures own = {0}; /* the workers' own failures, said after the variants' */
    parent p = {.plan = plan, .r = r, .failures = &own, .first_failed = -1};
    p.w = calloc(j, sizeof *p.w);
    struct pollfd *fds = calloc(j, sizeof *fds);
    if (!p.w || !fds) {
        add_failure(failures, kj_status_name(KJ_ERR_HOST_MEMORY), EXIT_FAILURE_, strdup("out of memory"));
        free(p.w);
        free(fds);
        return;
    }
    count_variants(&p);
    unsigned open = 0;
    for (unsigned k = 0; k < j; k++) {
        worker *w = &p.w[k];
        w->fd = -1;
        w->shard = shard + shards * k;
        w->shards = shards * j;
        int err = spawn_worker(plan, w);
        if (!err) {
            open++;
            continue;
        }
        char what[160];
        snprintf(what, sizeof what,
                 "could not be started (posix_spawn /proc/self/exe: %s; --threads 1 compiles in "
                 "this process)",
                 strerror(err));
        worker_failed(&p, w, what);
    }
    while (open) {
        for (unsigned k = 0; k < j; k++) fds[k] = (struct pollfd){.fd = p.w[k].fd, .events = POLLIN};
        if (poll(fds, j, -1) < 0) {
            if (errno == EINTR) continue;
            break; /* not for descriptors of ours; the workers are still reaped below */
        }
        for (unsigned k = 0; k < j; k++) {
            if (fds[k].fd < 0 || !fds[k].revents) continue;
            char buf[65536];
            ssize_t n = read(fds[k].fd, buf, sizeof buf);
            if (n > 0) took(&p, &p.w[k], buf, (size_t)n);
            else if (n == 0 || (errno != EINTR && errno != EAGAIN)) reap(&p, &p.w[k]), open--;
        }
    }
    for (unsigned k = 0; k < j; k++)
        if (p.w[k].fd >= 0) reap(&p, &p.w[k]);
    /* what a failed worker did not report did not compile either */
    r->failed = p.failed;
    for (unsigned k = 0; k < j; k++) r->failed += p.w[k].variants - p.w[k].reported;
    if (p.first_failed >= 0) {
        int skipped;
        const char *label = plan->label(plan->jobs, (size_t)p.first_failed, &skipped);
        /* the status of the worker whose part holds it: its first failure is this one */
        const worker *w = &p.w[(size_t)(p.first_failed - shard) / shards % j];
        kj_status s = w->status != KJ_OK ? w->status : KJ_ERR_COMPILE;
        add_failure(failures, kj_status_name(s), kj_status_class(s),
                    cli_format("%zu of %zu %s failed to compile%s%s: %s", p.failed, p.total, plan->what,
                               *label ? "; the first, " : "", label, p.first_error ? p.first_error : "(no message)"));
    }
    for (size_t i = 0; i < own.count; i++)
        add_failure(failures, own.items[i].status, own.items[i].class_, own.items[i].message);
    free(own.items);
    r->wall_ms = cli_now_ms() - t0;
    for (unsigned k = 0; k < j; k++) free(p.w[k].line);
    free(p.first_error);
    free(p.w);
    free(fds);
}

int workers_report(const char *cmd, workers_failures *f) {
    int rc = EXIT_OK;
    for (size_t i = 0; i < f->count; i++) {
        int c = cli_relay_failure(cmd, f->items[i].status, f->items[i].class_, f->items[i].message);
        if (i == 0) rc = c;
        free(f->items[i].message);
    }
    free(f->items);
    f->items = NULL;
    f->count = 0;
    return rc;
}
