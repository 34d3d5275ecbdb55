#include "cache/redis.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "cache/tls.h"

#define MAX_IDLE 4
#define BREAKER_FAILURES 3
#define BREAKER_FIRST_MS 30000u
#define BREAKER_MOST_MS 300000u
#define RESOLVE_MIN_MS 1000u /* a name lookup gets at least this long, whatever the connect timeout */
#define READ_CHUNK (64u << 10)

typedef struct conn {
    int fd;
    kj__tls_conn *tls; /* rediss:// */
    struct conn *next;
} conn;

struct kj__redis {
    const kj__remote_config *cfg;
    kj__logger log;
    kj__tls *tls;         /* rediss:// */
    pthread_mutex_t lock; /* guards everything below */
    conn *idle;
    unsigned idle_count;
    unsigned failures; /* in a row */
    int tripped;       /* the breaker opened and no call has succeeded since */
    double open_until; /* kj__now_ms() before which nothing is tried */
    unsigned pause_ms; /* the next pause */
    double cut_off;    /* 0, or when every call ends (kj__redis_cut_off) */
    char cut_why[160];
};

kj_status kj__redis_create(const kj__remote_config *cfg, const kj__logger *log, kj__redis **out) {
    kj__redis *r = calloc(1, sizeof *r);
    if (!r) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    r->cfg = cfg;
    if (log) r->log = *log;
    if (cfg->tls) {
        kj_status s = kj__tls_create(cfg, log, &r->tls);
        if (s != KJ_OK) {
            free(r);
            return s;
        }
    }
    r->pause_ms = BREAKER_FIRST_MS;
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return KJ_OK;
}

static void conn_close(conn *c) {
    if (!c) return;
    kj__tls_conn_free(c->tls);
    close(c->fd);
    free(c);
}

void kj__redis_destroy(kj__redis *r) {
    if (!r) return;
    for (conn *c = r->idle, *next; c; c = next) {
        next = c->next;
        conn_close(c);
    }
    kj__tls_destroy(r->tls);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void kj__redis_cut_off(kj__redis *r, double when_ms, const char *why) {
    pthread_mutex_lock(&r->lock);
    r->cut_off = when_ms;
    snprintf(r->cut_why, sizeof r->cut_why, "%s", why);
    pthread_mutex_unlock(&r->lock);
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

/* ---- time ------------------------------------------------------------------------------------- */

/* How a call failed: GONE, a connection the server had closed before any of the answer came (a kept
 * one is worth one more try on a new one); BROKE, anything else; CUT, the cut-off. */
typedef enum failure { FINE = 0, GONE, BROKE, CUT } failure;

/* 0, or when every call ends (kj__redis_cut_off). */
static double cut_off_of(kj__redis *r) {
    pthread_mutex_lock(&r->lock);
    double when = r->cut_off;
    pthread_mutex_unlock(&r->lock);
    return when;
}

static failure cut_short(kj__redis *r, char *why, size_t why_size) {
    pthread_mutex_lock(&r->lock);
    snprintf(why, why_size, "%s", r->cut_why);
    pthread_mutex_unlock(&r->lock);
    return CUT;
}

/* Waits until fd is ready for events, or the deadline or the cut-off passes (*cut set: the cut-off,
 * which kj__redis_cut_off may bring forward meanwhile): 1 ready, 0 a deadline, -1 an error. A socket
 * that is ready is never called late, however long this thread waited for a processor. */
#define SLICE_MS 100 /* how soon a cut-off set meanwhile is seen */
static int ready(kj__redis *r, int fd, short events, double at, int *cut) {
    for (;;) {
        double cut_off = cut_off_of(r);
        *cut = cut_off > 0 && cut_off <= at;
        double left = (*cut ? cut_off : at) - kj__now_ms();
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, left <= 0 ? 0 : left < SLICE_MS ? (int)left + 1 : SLICE_MS);
        if (n > 0) return 1;
        if (n < 0 && errno != EINTR) return -1;
        if (left <= 0) return 0;
    }
}

/* ---- connecting ------------------------------------------------------------------------------- */

/* The host's address. A name is looked up in the background (getaddrinfo_a) and given up after
 * bound_ms: the system's resolver has no bound of its own. A lookup that cannot be cancelled keeps
 * its memory, which the resolver still writes to. */
static int resolve(const kj__remote_config *cfg, unsigned bound_ms, struct sockaddr_storage *addr, socklen_t *addr_len,
                   char *where, size_t where_size, char *why, size_t why_size) {
    struct lookup {
        struct gaicb cb;
        struct addrinfo hints;
        char port[16];
    } *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    l->hints.ai_socktype = SOCK_STREAM;
    l->hints.ai_flags = AI_NUMERICSERV;
    snprintf(l->port, sizeof l->port, "%d", cfg->port);
    struct addrinfo *numeric = NULL;
    struct addrinfo hints = l->hints;
    hints.ai_flags |= AI_NUMERICHOST;
    int rc = getaddrinfo(cfg->host, l->port, &hints, &numeric);
    if (rc == 0) {
        l->cb.ar_result = numeric;
    } else {
        l->cb.ar_name = cfg->host; /* the configuration outlives the lookup, even an abandoned one */
        l->cb.ar_service = l->port;
        l->cb.ar_request = &l->hints;
        struct gaicb *list[1] = {&l->cb};
        if (getaddrinfo_a(GAI_NOWAIT, list, 1, NULL) != 0) {
            free(l);
            snprintf(why, why_size, "cannot look up %s", cfg->host);
            return -1;
        }
        double until = kj__now_ms() + bound_ms;
        while ((rc = gai_error(&l->cb)) == EAI_INPROGRESS) {
            double left = until - kj__now_ms();
            if (left <= 0) break;
            struct timespec ts = {(time_t)(left / 1e3), (long)((left - (time_t)(left / 1e3) * 1e3) * 1e6)};
            gai_suspend((const struct gaicb *const *)list, 1, &ts);
        }
        if (rc == EAI_INPROGRESS) {
            if (gai_cancel(&l->cb) == EAI_CANCELED) free(l);
            snprintf(why, why_size, "the name %s was not resolved within %u ms", cfg->host, bound_ms);
            return -1;
        }
        if (rc != 0) {
            snprintf(why, why_size, "cannot resolve %s: %s", cfg->host, gai_strerror(rc));
            free(l);
            return -1;
        }
    }
    const struct addrinfo *ai = l->cb.ar_result;
    memcpy(addr, ai->ai_addr, ai->ai_addrlen);
    *addr_len = ai->ai_addrlen;
    char ip[80]; /* a numeric address, with an IPv6 scope */
    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, ip, sizeof ip, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(ip, sizeof ip, "%s", cfg->host);
    snprintf(where, where_size, "%s port %d", ip, cfg->port);
    freeaddrinfo(l->cb.ar_result);
    free(l);
    return 0;
}

static failure exchange(kj__redis *r, conn *c, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, int *clean,
                        char *why, size_t why_size);

/* TLS's handshake on c's socket, under the operation timeout, as AUTH's exchange is: a server that
 * never answers it (a port without TLS, which waits for a line) or trickles it is given up then. */
static failure handshake(kj__redis *r, conn *c, char *why, size_t why_size) {
    unsigned ms = r->cfg->timeout_ms;
    double at = kj__now_ms() + ms;
    if (!(c->tls = kj__tls_conn_new(r->tls, c->fd, why, why_size))) return BROKE;
    for (;;) {
        short wait = 0;
        int err = 0, cut;
        ssize_t k = kj__tls_handshake(c->tls, &wait, &err, why, why_size);
        if (k > 0) return FINE;
        if (k < 0) {
            if (err >= 0)
                snprintf(why, why_size, "the TLS handshake failed: %s",
                         err ? kj__strerror(err) : "the server closed the connection");
            return BROKE;
        }
        int w = wait ? ready(r, c->fd, wait, at, &cut) : 1;
        if (w < 0) {
            snprintf(why, why_size, "the TLS handshake failed: %s", kj__strerror(errno));
            return BROKE;
        }
        if (w == 0 && cut) return cut_short(r, why, why_size);
        if (w == 0) {
            snprintf(why, why_size, "the TLS handshake was not done within %u ms (the operation timeout)", ms);
            return BROKE;
        }
    }
}

/* A new connection, with its credentials and database set; NULL and why (and *f) when there is none. */
static conn *connect_one(kj__redis *r, failure *f, char *why, size_t why_size) {
    const kj__remote_config *cfg = r->cfg;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char where[300];
    *f = BROKE;
    if (cfg->socket_path) {
        struct sockaddr_un *un = (struct sockaddr_un *)&addr;
        if (strlen(cfg->socket_path) >= sizeof un->sun_path) {
            snprintf(why, why_size, "the socket path %s is longer than the %zu bytes a unix socket's may be",
                     cfg->socket_path, sizeof un->sun_path - 1);
            return NULL;
        }
        memset(un, 0, sizeof *un);
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, cfg->socket_path);
        addr_len = sizeof *un;
        snprintf(where, sizeof where, "%s", cfg->socket_path);
    } else {
        unsigned bound = cfg->connect_timeout_ms > RESOLVE_MIN_MS ? cfg->connect_timeout_ms : RESOLVE_MIN_MS;
        double cut_off = cut_off_of(r), left = cut_off - kj__now_ms();
        if (cut_off > 0 && left < 1) {
            *f = cut_short(r, why, why_size);
            return NULL;
        }
        if (cut_off > 0 && left < bound) bound = (unsigned)left;
        if (resolve(cfg, bound, &addr, &addr_len, where, sizeof where, why, why_size) != 0) return NULL;
    }
    int cut;
    double at = kj__now_ms() + cfg->connect_timeout_ms;
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, why_size, "cannot connect to %s: %s", where, kj__strerror(errno));
        return NULL;
    }
    int rc = connect(fd, (struct sockaddr *)&addr, addr_len), err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS || err == EINTR) {
        int w = ready(r, fd, POLLOUT, at, &cut);
        socklen_t len = sizeof err;
        if (w == 0) {
            close(fd);
            if (cut) {
                *f = cut_short(r, why, why_size);
                return NULL;
            }
            snprintf(why, why_size, "cannot connect to %s within %u ms (the connect timeout)", where,
                     cfg->connect_timeout_ms);
            return NULL;
        }
        err = w < 0 ? errno : getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ? errno : err;
    }
    if (err) {
        close(fd);
        snprintf(why, why_size, "cannot connect to %s: %s", where, kj__strerror(err));
        return NULL;
    }
    int one = 1;
    if (!cfg->socket_path) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    c->fd = fd;
    if (r->tls && (*f = handshake(r, c, why, why_size)) != FINE) {
        conn_close(c);
        return NULL;
    }
    /* credentials and database, in one round trip */
    char db[16];
    snprintf(db, sizeof db, "%d", cfg->db);
    const char *auth[] = {"AUTH", cfg->user ? cfg->user : cfg->password, cfg->password};
    const char *select[] = {"SELECT", db};
    kj__redis_cmd setup[2];
    size_t n = 0;
    if (cfg->password) setup[n++] = (kj__redis_cmd){cfg->user ? 3 : 2, auth, NULL, KJ__REDIS_REPLY_SMALL};
    if (cfg->db) setup[n++] = (kj__redis_cmd){2, select, NULL, KJ__REDIS_REPLY_SMALL};
    kj__reply *replies[2] = {NULL, NULL};
    int clean = 1;
    if (n && (*f = exchange(r, c, n, setup, replies, &clean, why, why_size)) != FINE) {
        conn_close(c);
        return NULL;
    }
    int refused = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *err_text = kj__reply_str(replies[i], &len);
        if (kj__reply_kind(replies[i]) == KJ__REPLY_ERROR && !refused) {
            snprintf(why, why_size, "%s refused: %.*s", setup[i].argv[0], (int)len, err_text);
            refused = 1;
        }
        kj__reply_free(replies[i]);
    }
    if (refused || !clean) {
        if (!refused) snprintf(why, why_size, "the server answered more than it was asked");
        *f = BROKE;
        conn_close(c);
        return NULL;
    }
    *f = FINE;
    return c;
}

/* ---- commands --------------------------------------------------------------------------------- */

/* err: an errno (0: the end of the stream), or -1 where why says what failed already (TLS's reasons). */
static failure io_failure(int err, size_t answered, char *why, size_t why_size) {
    if (err < 0) return BROKE;
    if (err == 0 || err == ECONNRESET || err == EPIPE) {
        snprintf(why, why_size, "the server closed the connection");
        return answered ? BROKE : GONE;
    }
    snprintf(why, why_size, "%s", kj__strerror(err));
    return BROKE;
}

/* The deadline passed, with got bytes of the answer: the cut-off's, or the operation timeout's. */
static failure timed_out(kj__redis *r, int cut, unsigned ms, size_t got, char *why, size_t why_size) {
    if (cut) return cut_short(r, why, why_size);
    snprintf(why, why_size, "no %sanswer within %u ms (the operation timeout)", got ? "whole " : "", ms);
    return BROKE;
}

/* Waits for events on fd until the deadline at: FINE, or how the call failed (got: bytes of the answer
 * so far). */
static failure await(kj__redis *r, int fd, short events, double at, unsigned ms, size_t got, char *why,
                     size_t why_size) {
    int cut;
    int w = ready(r, fd, events, at, &cut);
    if (w > 0) return FINE;
    if (w < 0) return io_failure(errno, got, why, why_size);
    return timed_out(r, cut, ms, got, why, why_size);
}

/* What a plain socket's send or recv that returned k <= 0 means, as tls.h's steps say it. */
static ssize_t plain_step(ssize_t k, short events, short *wait, int *err) {
    *wait = 0;
    if (k == 0) {
        *err = 0; /* recv: the end of the stream */
        return -1;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *wait = events;
        return 0;
    }
    if (errno == EINTR) return 0;
    *err = errno;
    return -1;
}

/* One step of I/O on c, plain or TLS (tls.h): > 0 bytes moved; 0 to wait for *wait's events (0: again
 * at once); -1 when it failed, *err an errno (0: the server closed the connection) or -1 with why. */
static ssize_t conn_send(conn *c, const char *data, size_t n, short *wait, int *err, char *why, size_t why_size) {
    if (c->tls) return kj__tls_send(c->tls, data, n, wait, err, why, why_size);
    ssize_t k = send(c->fd, data, n, MSG_NOSIGNAL);
    return k > 0 ? k : plain_step(k, POLLOUT, wait, err);
}

static ssize_t conn_recv(conn *c, char *data, size_t n, short *wait, int *err, char *why, size_t why_size) {
    if (c->tls) return kj__tls_recv(c->tls, data, n, wait, err, why, why_size);
    ssize_t k = recv(c->fd, data, n, 0);
    return k > 0 ? k : plain_step(k, POLLIN, wait, err);
}

/* Writes the commands and reads their replies, all before one deadline. *clean = 0 when the server
 * sent more than the replies: the connection is not used again. */
static failure exchange(kj__redis *r, conn *c, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, int *clean,
                        char *why, size_t why_size) {
    unsigned ms = r->cfg->timeout_ms;
    double at = kj__now_ms() + ms;
    kj__buf out = {0};
    for (size_t i = 0; i < n; i++)
        if (kj__resp_command(&out, cmds[i].argc, cmds[i].argv, cmds[i].len) != 0) {
            kj__buf_free(&out);
            snprintf(why, why_size, "out of memory");
            return BROKE;
        }
    failure f = FINE;
    for (size_t sent = 0; sent < out.len && f == FINE;) {
        short wait;
        int err;
        ssize_t k = conn_send(c, out.data + sent, out.len - sent, &wait, &err, why, why_size);
        if (k > 0) sent += (size_t)k;
        else if (k < 0) f = io_failure(err, 0, why, why_size);
        else if (wait) f = await(r, c->fd, wait, at, ms, 0, why, why_size);
    }
    kj__buf_free(&out);
    char *in = NULL;
    size_t len = 0, cap = 0, off = 0, got = 0;
    for (size_t i = 0; i < n && f == FINE;) {
        size_t used = 0;
        size_t most = cmds[i].most ? cmds[i].most : KJ__REDIS_REPLY_MOST;
        kj__resp_result res = len > off ? kj__resp_parse(in + off, len - off, most, cmds[i].argv[0], &replies[i], &used,
                                                         why, why_size)
                                        : KJ__RESP_MORE;
        if (res == KJ__RESP_DONE) {
            off += used;
            i++;
            continue;
        }
        if (res == KJ__RESP_BAD) {
            f = BROKE;
            break;
        }
        if (cap - len < READ_CHUNK) {
            char *grown = realloc(in, cap + READ_CHUNK * 2);
            if (!grown) {
                snprintf(why, why_size, "out of memory");
                f = BROKE;
                break;
            }
            in = grown;
            cap += READ_CHUNK * 2;
        }
        short wait;
        int err;
        ssize_t k = conn_recv(c, in + len, cap - len, &wait, &err, why, why_size);
        if (k > 0) len += (size_t)k, got += (size_t)k;
        else if (k < 0) f = io_failure(err, got, why, why_size);
        else if (wait) f = await(r, c->fd, wait, at, ms, got, why, why_size);
    }
    *clean = off == len;
    free(in);
    if (f != FINE)
        for (size_t i = 0; i < n; i++) {
            kj__reply_free(replies[i]);
            replies[i] = NULL;
        }
    return f;
}

static conn *take_idle(kj__redis *r) {
    pthread_mutex_lock(&r->lock);
    conn *c = r->idle;
    if (c) {
        r->idle = c->next;
        r->idle_count--;
    }
    pthread_mutex_unlock(&r->lock);
    return c;
}

static void give_back(kj__redis *r, conn *c) {
    pthread_mutex_lock(&r->lock);
    if (r->idle_count < MAX_IDLE) {
        c->next = r->idle;
        r->idle = c;
        r->idle_count++;
        c = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    conn_close(c);
}

kj__redis_result kj__redis_exec(kj__redis *r, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, char *why,
                                size_t why_size) {
    for (size_t i = 0; i < n; i++) replies[i] = NULL;
    if (breaker_open(r, why, why_size)) return KJ__REDIS_SKIPPED;
    double cut_off = cut_off_of(r);
    if (cut_off > 0 && cut_off <= kj__now_ms()) {
        cut_short(r, why, why_size);
        return KJ__REDIS_SKIPPED;
    }
    conn *c = take_idle(r);
    int kept = c != NULL, clean = 1;
    failure f = FINE;
    if (!c) c = connect_one(r, &f, why, why_size);
    if (c) f = exchange(r, c, n, cmds, replies, &clean, why, why_size);
    if (f == GONE && kept) {
        /* a connection kept from before that the server closed meanwhile (restarted, idle timeout):
         * once more on a new one. Not after a timeout: the server may be working on the commands. */
        conn_close(c);
        c = connect_one(r, &f, why, why_size);
        if (c) f = exchange(r, c, n, cmds, replies, &clean, why, why_size);
    }
    if (f != FINE) {
        conn_close(c);
        if (f != CUT) failed(r, why);
        return KJ__REDIS_FAILED;
    }
    /* a connection that timed out, or carries bytes nobody asked for, is never used again */
    if (clean) give_back(r, c);
    else conn_close(c);
    succeeded(r);
    return KJ__REDIS_OK;
}
