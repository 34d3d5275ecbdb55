#include "cache/redis.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/error.h"
#include "cache/redis_loader.h"
#include "base/util.h"

#ifdef KJ_HAVE_HIREDIS

#define MAX_IDLE 4
#define BREAKER_FAILURES 3
#define BREAKER_FIRST_MS 30000u
#define BREAKER_MOST_MS 300000u
#define RESOLVE_MIN_MS 1000u /* a name lookup gets at least this long, whatever the connect timeout */

typedef struct idle_conn {
    redisContext *ctx;
    struct idle_conn *next;
} idle_conn;

struct kj__redis {
    const kj__redis_api *api;
    const kj__remote_config *cfg;
    kj__logger log;
    pthread_mutex_t lock; /* guards everything below */
    idle_conn *idle;
    unsigned idle_count;
    unsigned failures;    /* in a row */
    int tripped;          /* the breaker opened and no call has succeeded since */
    double open_until;    /* kj__now_ms() before which nothing is tried */
    unsigned pause_ms;    /* the next pause */
};

kj_status kj__redis_create(const kj__remote_config *cfg, const kj__logger *log, kj__redis **out) {
    const kj__redis_api *api;
    KJ_FORWARD(kj__redis_load(&api));
    kj__redis *r = calloc(1, sizeof *r);
    if (!r) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    r->api = api;
    r->cfg = cfg;
    if (log) r->log = *log;
    r->pause_ms = BREAKER_FIRST_MS;
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return KJ_OK;
}

void kj__redis_destroy(kj__redis *r) {
    if (!r) return;
    for (idle_conn *c = r->idle, *next; c; c = next) {
        next = c->next;
        r->api->redisFree(c->ctx);
        free(c);
    }
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* ---- SIGPIPE ---------------------------------------------------------------------------------- */

/* hiredis writes with write(): to a connection the server has closed, that raises SIGPIPE, which
 * would kill the host program. The signal is blocked in this thread around the I/O, and one it caused
 * is taken off the pending set before the mask is restored (a SIGPIPE that was already pending is
 * left for the program). */
typedef struct sigpipe_guard {
    sigset_t old;
    int was_pending;
} sigpipe_guard;

static void sigpipe_block(sigpipe_guard *g) {
    sigset_t pipe_only, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &g->old);
    g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

static void sigpipe_restore(sigpipe_guard *g) {
    sigset_t pipe_only, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
        struct timespec none = {0, 0};
        while (sigtimedwait(&pipe_only, NULL, &none) < 0 && errno == EINTR) {}
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ---- the breaker ------------------------------------------------------------------------------ */

static int breaker_open(kj__redis *r, char *why, size_t why_size) {
    pthread_mutex_lock(&r->lock);
    double left = r->tripped ? r->open_until - kj__now_ms() : 0;
    pthread_mutex_unlock(&r->lock);
    if (left <= 0) return 0;
    snprintf(why, why_size, "skipped for %.0f s more after failures in a row", left / 1e3 + 0.5);
    return 1;
}

static void open_breaker(kj__redis *r, const char *why, const char *what) {
    r->tripped = 1;
    r->open_until = kj__now_ms() + r->pause_ms;
    kj__log(&r->log, KJ_LOG_WARN, "remote cache %s: %s (the last: %s): not used for %u s, then tried again",
            r->cfg->url, what, why, r->pause_ms / 1000);
    r->pause_ms = r->pause_ms * 2 > BREAKER_MOST_MS ? BREAKER_MOST_MS : r->pause_ms * 2;
    r->failures = 0;
}

static void failed(kj__redis *r, const char *why) {
    pthread_mutex_lock(&r->lock);
    if (r->tripped) {
        open_breaker(r, why, "still failing after the pause");
    } else if (++r->failures >= BREAKER_FAILURES) {
        char what[64];
        snprintf(what, sizeof what, "%u failures in a row", r->failures);
        open_breaker(r, why, what);
    }
    pthread_mutex_unlock(&r->lock);
}

static void succeeded(kj__redis *r) {
    pthread_mutex_lock(&r->lock);
    if (r->tripped) kj__log(&r->log, KJ_LOG_INFO, "remote cache %s answers again", r->cfg->url);
    r->tripped = 0;
    r->failures = 0;
    r->pause_ms = BREAKER_FIRST_MS;
    pthread_mutex_unlock(&r->lock);
}

int kj__redis_failing(kj__redis *r) {
    pthread_mutex_lock(&r->lock);
    int failing = r->failures > 0 || r->tripped;
    pthread_mutex_unlock(&r->lock);
    return failing;
}

/* ---- connecting ------------------------------------------------------------------------------- */

static struct timeval ms_to_tv(unsigned ms) {
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

/* The host as a numeric address. hiredis would look a name up itself, with no bound on the time:
 * here the lookup runs in the background (getaddrinfo_a) and is given up after bound_ms. A lookup
 * that cannot be cancelled keeps its memory, which the resolver still writes to. */
static int resolve(const char *host, unsigned bound_ms, char *out, size_t size, char *why, size_t why_size) {
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1) {
        snprintf(out, size, "%s", host);
        return 0;
    }
    struct lookup {
        struct gaicb cb;
        struct addrinfo hints;
    } *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    l->hints.ai_socktype = SOCK_STREAM;
    l->cb.ar_name = host; /* the configuration outlives the lookup, even an abandoned one */
    l->cb.ar_request = &l->hints;
    struct gaicb *list[1] = {&l->cb};
    if (getaddrinfo_a(GAI_NOWAIT, list, 1, NULL) != 0) {
        free(l);
        snprintf(why, why_size, "cannot look up %s", host);
        return -1;
    }
    double until = kj__now_ms() + bound_ms;
    int rc;
    while ((rc = gai_error(&l->cb)) == EAI_INPROGRESS) {
        double left = until - kj__now_ms();
        if (left <= 0) break;
        struct timespec ts = {(time_t)(left / 1e3), (long)((left - (time_t)(left / 1e3) * 1e3) * 1e6)};
        gai_suspend((const struct gaicb *const *)list, 1, &ts);
    }
    if (rc == EAI_INPROGRESS) {
        if (gai_cancel(&l->cb) == EAI_CANCELED) free(l);
        snprintf(why, why_size, "the name %s was not resolved within %u ms", host, bound_ms);
        return -1;
    }
    if (rc != 0) {
        snprintf(why, why_size, "cannot resolve %s: %s", host, gai_strerror(rc));
        free(l);
        return -1;
    }
    const struct addrinfo *ai = l->cb.ar_result;
    rc = getnameinfo(ai->ai_addr, ai->ai_addrlen, out, (socklen_t)size, NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(l->cb.ar_result);
    free(l);
    if (rc != 0) snprintf(why, why_size, "cannot resolve %s: %s", host, gai_strerror(rc));
    return rc ? -1 : 0;
}

/* A blocking read or write that ran past SO_RCVTIMEO/SO_SNDTIMEO (redisSetTimeout). */
static int timed_out(const redisContext *c) {
    return c->err == REDIS_ERR_IO && strstr(c->errstr, "temporarily unavailable") != NULL;
}

/* hiredis's message for a failed connection, in words that say what happened. */
static void describe(const redisContext *c, unsigned timeout_ms, char *why, size_t why_size) {
    if (timed_out(c))
        snprintf(why, why_size, "no answer within %u ms (the operation timeout)", timeout_ms);
    else if (c->err == REDIS_ERR_EOF)
        snprintf(why, why_size, "the server closed the connection");
    else
        snprintf(why, why_size, "%s", c->errstr);
}

static int run_on(kj__redis *r, redisContext *c, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, char *why,
                  size_t why_size);

static redisContext *connect_one(kj__redis *r, char *why, size_t why_size) {
    const kj__remote_config *cfg = r->cfg;
    struct timeval tv = ms_to_tv(cfg->connect_timeout_ms);
    redisContext *c;
    char where[300];
    if (cfg->socket_path) {
        snprintf(where, sizeof where, "%s", cfg->socket_path);
        c = r->api->redisConnectUnixWithTimeout(cfg->socket_path, tv);
    } else {
        char ip[INET6_ADDRSTRLEN + 1];
        unsigned bound = cfg->connect_timeout_ms > RESOLVE_MIN_MS ? cfg->connect_timeout_ms : RESOLVE_MIN_MS;
        if (resolve(cfg->host, bound, ip, sizeof ip, why, why_size) != 0) return NULL;
        snprintf(where, sizeof where, "%s port %d", ip, cfg->port);
        c = r->api->redisConnectWithTimeout(ip, cfg->port, tv);
    }
    if (!c) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    if (c->err) {
        char what[256];
        describe(c, cfg->timeout_ms, what, sizeof what);
        if (strstr(what, "timed out"))
            snprintf(why, why_size, "cannot connect to %s within %u ms (the connect timeout)", where,
                     cfg->connect_timeout_ms);
        else
            snprintf(why, why_size, "cannot connect to %s: %s", where, what);
        r->api->redisFree(c);
        return NULL;
    }
    r->api->redisSetTimeout(c, ms_to_tv(cfg->timeout_ms));
    fcntl(c->fd, F_SETFD, FD_CLOEXEC); /* hiredis does not: the host's children must not inherit it */
    /* credentials and database, in one round trip */
    char db[16];
    snprintf(db, sizeof db, "%d", cfg->db);
    const char *auth[] = {"AUTH", cfg->user ? cfg->user : cfg->password, cfg->password};
    const char *select[] = {"SELECT", db};
    kj__redis_cmd setup[2];
    size_t n = 0;
    if (cfg->password) setup[n++] = (kj__redis_cmd){cfg->user ? 3 : 2, auth, NULL};
    if (cfg->db) setup[n++] = (kj__redis_cmd){2, select, NULL};
    kj__reply *replies[2] = {NULL, NULL};
    if (n && run_on(r, c, n, setup, replies, why, why_size) != 0) {
        r->api->redisFree(c);
        return NULL;
    }
    int refused = 0;
    for (size_t i = 0; i < n; i++) {
        const redisReply *rep = (const redisReply *)replies[i];
        if (rep->type == REDIS_REPLY_ERROR && !refused) {
            snprintf(why, why_size, "%s refused: %.*s", setup[i].argv[0], (int)rep->len, rep->str);
            refused = 1;
        }
        kj__reply_free(replies[i]);
    }
    if (refused) {
        r->api->redisFree(c);
        return NULL;
    }
    return c;
}

/* ---- commands --------------------------------------------------------------------------------- */

static int run_on(kj__redis *r, redisContext *c, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, char *why,
                  size_t why_size) {
    for (size_t i = 0; i < n; i++)
        if (r->api->redisAppendCommandArgv(c, cmds[i].argc, (const char **)cmds[i].argv, cmds[i].len) != REDIS_OK) {
            describe(c, r->cfg->timeout_ms, why, why_size);
            return -1;
        }
    for (size_t i = 0; i < n; i++) {
        void *reply = NULL;
        if (r->api->redisGetReply(c, &reply) != REDIS_OK || !reply) {
            describe(c, r->cfg->timeout_ms, why, why_size);
            for (size_t j = 0; j < i; j++) kj__reply_free(replies[j]);
            return -1;
        }
        replies[i] = reply;
    }
    return 0;
}

static redisContext *take_idle(kj__redis *r) {
    pthread_mutex_lock(&r->lock);
    idle_conn *c = r->idle;
    if (c) {
        r->idle = c->next;
        r->idle_count--;
    }
    pthread_mutex_unlock(&r->lock);
    redisContext *ctx = c ? c->ctx : NULL;
    free(c);
    return ctx;
}

static void give_back(kj__redis *r, redisContext *ctx) {
    idle_conn *c = malloc(sizeof *c);
    pthread_mutex_lock(&r->lock);
    if (c && r->idle_count < MAX_IDLE) {
        c->ctx = ctx;
        c->next = r->idle;
        r->idle = c;
        r->idle_count++;
        ctx = NULL;
        c = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    free(c);
    if (ctx) r->api->redisFree(ctx);
}

kj__redis_result kj__redis_exec(kj__redis *r, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, char *why,
                                size_t why_size) {
    if (breaker_open(r, why, why_size)) return KJ__REDIS_SKIPPED;
    sigpipe_guard guard;
    sigpipe_block(&guard);
    redisContext *c = take_idle(r);
    int kept = c != NULL, rc = -1;
    if (!c) c = connect_one(r, why, why_size);
    if (c) rc = run_on(r, c, n, cmds, replies, why, why_size);
    if (rc != 0 && kept && !timed_out(c)) {
        /* a connection kept from before that the server closed meanwhile (restarted, idle timeout):
         * once more on a new one. Not after a timeout: the server may be working on the commands. */
        r->api->redisFree(c);
        c = connect_one(r, why, why_size);
        if (c) rc = run_on(r, c, n, cmds, replies, why, why_size);
    }
    sigpipe_restore(&guard);
    if (rc != 0) {
        if (c) r->api->redisFree(c);
        failed(r, why);
        return KJ__REDIS_FAILED;
    }
    give_back(r, c);
    succeeded(r);
    return KJ__REDIS_OK;
}

/* ---- replies ---------------------------------------------------------------------------------- */

kj__reply_type kj__reply_kind(const kj__reply *reply) {
    const redisReply *r = (const redisReply *)reply;
    if (!r) return KJ__REPLY_NIL;
    switch (r->type) {
    case REDIS_REPLY_STRING: return KJ__REPLY_STRING;
    case REDIS_REPLY_INTEGER: return KJ__REPLY_INTEGER;
    case REDIS_REPLY_STATUS: return KJ__REPLY_STATUS;
    case REDIS_REPLY_ERROR: return KJ__REPLY_ERROR;
    case REDIS_REPLY_ARRAY: return KJ__REPLY_ARRAY;
    default: return KJ__REPLY_NIL;
    }
}

const char *kj__reply_str(const kj__reply *reply, size_t *len) {
    const redisReply *r = (const redisReply *)reply;
    kj__reply_type t = kj__reply_kind(reply);
    int has = t == KJ__REPLY_STRING || t == KJ__REPLY_STATUS || t == KJ__REPLY_ERROR;
    if (len) *len = has ? r->len : 0;
    return has ? r->str : NULL;
}

long long kj__reply_int(const kj__reply *reply) {
    return kj__reply_kind(reply) == KJ__REPLY_INTEGER ? ((const redisReply *)reply)->integer : 0;
}

size_t kj__reply_count(const kj__reply *reply) {
    return kj__reply_kind(reply) == KJ__REPLY_ARRAY ? ((const redisReply *)reply)->elements : 0;
}

const kj__reply *kj__reply_at(const kj__reply *reply, size_t index) {
    return index < kj__reply_count(reply) ? (const kj__reply *)((const redisReply *)reply)->element[index] : NULL;
}

void kj__reply_free(kj__reply *reply) {
    const kj__redis_api *api;
    if (reply && kj__redis_load(&api) == KJ_OK) api->freeReplyObject(reply);
}

#else /* built without hiredis's header: kj__redis_create says so, and nothing else is reached */

kj_status kj__redis_create(const kj__remote_config *cfg, const kj__logger *log, kj__redis **out) {
    (void)cfg, (void)log, (void)out;
    const kj__redis_api *api;
    return kj__redis_load(&api);
}
void kj__redis_destroy(kj__redis *r) { (void)r; }
int kj__redis_failing(kj__redis *r) { return (void)r, 1; }
kj__redis_result kj__redis_exec(kj__redis *r, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, char *why,
                                size_t why_size) {
    (void)r, (void)n, (void)cmds, (void)replies;
    snprintf(why, why_size, "no Redis client in this build");
    return KJ__REDIS_FAILED;
}
kj__reply_type kj__reply_kind(const kj__reply *reply) { return (void)reply, KJ__REPLY_NIL; }
const char *kj__reply_str(const kj__reply *reply, size_t *len) {
    (void)reply;
    if (len) *len = 0;
    return NULL;
}
long long kj__reply_int(const kj__reply *reply) { return (void)reply, 0; }
size_t kj__reply_count(const kj__reply *reply) { return (void)reply, 0; }
const kj__reply *kj__reply_at(const kj__reply *reply, size_t index) { return (void)reply, (void)index, NULL; }
void kj__reply_free(kj__reply *reply) { (void)reply; }

#endif
