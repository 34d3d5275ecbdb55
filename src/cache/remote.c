#include "cache/remote.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "base/error.h"
#include "cache/sign.h"
#include "base/util.h"

#define LEASE_MS 2000     /* a lease's life: what a dead holder costs the others at most */
#define RENEW_MS 500      /* how often a live holder renews it */
#define NOPUSH_MS 10000   /* how long "nopush" tells waiters to compile at once */
#define WAIT_MAX_MS 60000 /* the longest wait for a live holder that keeps renewing */
#define POLL_FIRST_MS 2
#define POLL_MOST_MS 50
#define DRAIN_MS 2000  /* what closing a runtime gives the queued pushes */
#define FLUSH_MS 10000 /* how often a long-running process adds its counters to the server's */
#define MAX_QUEUED (64u << 20)
#define LEASE_PREFIX "kernjit:lease:"

/* Fetch the entry (at most ARGV[3] + 1 bytes: GETRANGE, so that a huge value costs no memory here;
 * "" is no value, as no entry is empty); else take the lease; else say who holds it. One round trip,
 * atomic. A key of another type (a hash where the lease belongs) is an answer for that key, {4,
 * "key: the server's error"}: raised, it would fail the script as a whole, as a server that refuses
 * scripts does. */
static const char LOOKUP_SCRIPT[] = "local v = redis.pcall('GETRANGE', KEYS[1], 0, ARGV[3]) "
                                    "if type(v) == 'table' then return {4, KEYS[1] .. ': ' .. tostring(v.err)} end "
                                    "if #v > 0 then return {1, v} end "
                                    "if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end "
                                    "local h = redis.pcall('GET', KEYS[2]) "
                                    "if type(h) == 'table' then return {4, KEYS[2] .. ': ' .. tostring(h.err)} end "
                                    "return {3, h or ''}";
/* Extend the lease, if it is still ours. */
static const char RENEW_SCRIPT[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
/* End the lease, if it is still ours: removed after a push, else left saying why for a while. */
static const char RELEASE_SCRIPT[] = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
                                     "if ARGV[2] == '' then return redis.call('DEL', KEYS[1]) end "
                                     "redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1";
/* Add deltas to the fleet's counters; keep the largest fetch time. */
static const char FLUSH_SCRIPT[] =
    "for i = 1, #ARGV - 1, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end "
    "local m = tonumber(redis.call('HGET', KEYS[1], 'fetch_us_max') or '0') "
    "if tonumber(ARGV[#ARGV]) > m then redis.call('HSET', KEYS[1], 'fetch_us_max', ARGV[#ARGV]) end "
    "return 1";

static const char *const COUNTER_NAMES[KJ__RC_COUNT] = {
    "hits", "misses", "waits", "pushes", "refusals", "errors", "fetches", "fetch_us", "bytes_fetched", "bytes_pushed"};

typedef struct job {
    struct job *next;
    char name[160]; /* the value's key */
    uint8_t *value; /* sealed; NULL: only the claim is released */
    size_t size;
    kj__remote_claim claim; /* released (and forgotten) once the push is done */
    char nopush[96];        /* what the lease says when there is nothing to push */
} job;

typedef struct held {
    struct held *next;
    kj__remote_claim claim;
} held;

struct kj__remote {
    kj__remote_config cfg;
    kj__logger log;
    kj__redis *redis; /* NULL when unavailable */
    char *unavailable;
    char host[64];          /* for lease tokens */
    pthread_mutex_t lock;   /* guards everything below */
    pthread_cond_t changed; /* jobs queued or finished, leases taken, closing */
    job *head, *tail;
    size_t queued, queued_bytes, dropped;
    held *leases; /* leases this runtime holds: the worker renews them */
    pthread_t worker;
    int worker_running, closing;
    double drain_until, next_renew, last_flush;
    uint64_t tokens;
    uint64_t total[KJ__RC_COUNT], unflushed[KJ__RC_COUNT], fetch_us_max;
    double lookup_ms;
    int no_leases; /* the server refused the lookup script: plain lookups from now on */
    kj__remote_report report;
};

kj__remote_report *kj__remote_report_of(kj__remote *r) { return &r->report; }

const char *kj__remote_counter_name(kj__remote_counter which) { return COUNTER_NAMES[which]; }
const char *kj__remote_unavailable(const kj__remote *r) { return r ? r->unavailable : NULL; }
const kj__remote_config *kj__remote_settings(const kj__remote *r) { return r ? &r->cfg : NULL; }
kj__redis *kj__remote_redis(const kj__remote *r) { return r ? r->redis : NULL; }

void kj__remote_count(kj__remote *r, kj__remote_counter which, uint64_t n) {
    pthread_mutex_lock(&r->lock);
    r->total[which] += n;
    r->unflushed[which] += n;
    pthread_mutex_unlock(&r->lock);
}

void kj__remote_counters(kj__remote *r, kj_stats *s) {
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    s->remote_hits = r->total[KJ__RC_HITS];
    s->remote_misses = r->total[KJ__RC_MISSES];
    s->remote_waits = r->total[KJ__RC_WAITS];
    s->remote_pushes = r->total[KJ__RC_PUSHES];
    s->remote_refusals = r->total[KJ__RC_REFUSALS];
    s->remote_errors = r->total[KJ__RC_ERRORS];
    s->remote_ms = r->lookup_ms;
    pthread_mutex_unlock(&r->lock);
}

static void say(kj__remote *r, kj_log_level level, const char *fmt, va_list ap) {
    char msg[1536];
    vsnprintf(msg, sizeof msg, fmt, ap);
    kj__log(&r->log, level, "remote cache %s: %s", r->cfg.url, msg);
}

void kj__remote_warn(kj__remote *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    say(r, KJ_LOG_WARN, fmt, ap);
    va_end(ap);
}

void kj__remote_note(kj__remote *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    say(r, KJ_LOG_INFO, fmt, ap);
    va_end(ap);
}

void kj__remote_fault(kj__remote *r, kj__redis_result result, const char *what, const char *why,
                      const char *consequence) {
    kj__remote_count(r, KJ__RC_ERRORS, 1);
    kj__log(&r->log, result == KJ__REDIS_SKIPPED ? KJ_LOG_INFO : KJ_LOG_WARN, "remote cache %s: %s failed: %s; %s",
            r->cfg.url, what, why, consequence);
}

kj__reply *kj__remote_call(kj__remote *r, int argc, const char *const *argv, const size_t *lens, const char *what,
                           const char *consequence) {
    char why[512];
    kj__redis_cmd cmd = {argc, argv, lens};
    kj__reply *reply = NULL;
    kj__redis_result res = kj__redis_exec(r->redis, 1, &cmd, &reply, why, sizeof why);
    if (res == KJ__REDIS_OK) return reply;
    kj__remote_fault(r, res, what, why, consequence);
    return NULL;
}

/* ---- names and values ------------------------------------------------------------------------- */

void kj__remote_entry_name(const char *arch, const kj__key *key, char *out, size_t size) {
    snprintf(out, size, KJ_REMOTE_ENTRY_PREFIX "%d:%s:%s", KJ_CACHE_FORMAT_VERSION, arch, key->hex);
}

static void lease_name(const char *arch, const kj__key *key, char *out, size_t size) {
    snprintf(out, size, LEASE_PREFIX "%s:%s", arch, key->hex);
}

static int mac(kj__remote *r, const char *name, const void *data, size_t size, uint8_t out[KJ_SIGNATURE_BYTES]) {
    return kj__sign_named(r->cfg.secret, r->cfg.secret_len, name, data, size, out);
}

uint8_t *kj__remote_seal(kj__remote *r, const char *name, uint8_t *data, size_t size, size_t *sealed_size) {
    if (!r->cfg.secret) {
        *sealed_size = size;
        return data;
    }
    uint8_t *sealed = kj__sign_seal(r->cfg.secret, r->cfg.secret_len, name, data, size, sealed_size);
    if (!sealed)
        kj__log(&r->log, KJ_LOG_WARN,
                "remote cache %s: cannot sign %s (libcrypto failed or out of memory); not "
                "pushed",
                r->cfg.url, name);
    return sealed;
}

int kj__remote_open_value(kj__remote *r, const char *name, const kj__key *key, const uint8_t *v, size_t n,
                          kj__remote_entry *entry, char *why, size_t why_size) {
    if (n > KJ_REMOTE_MAX_VALUE) {
        snprintf(why, why_size, "larger than the %u MiB bound for values (not read whole)", KJ_REMOTE_MAX_VALUE >> 20);
        return -1;
    }
    size_t len = kj__sign_unsealed_size(v, n);
    if (r->cfg.secret && kj__sign_verify(r->cfg.secret, r->cfg.secret_len, name, v, n, &len, why, why_size) != 0)
        return -1;
    int version = kj__cache_entry_version(v, len);
    if (version < 0) {
        snprintf(why, why_size, "not a kernjit entry (%zu bytes: torn, truncated or overwritten)", n);
        return -1;
    }
    if (version != KJ_CACHE_FORMAT_VERSION) {
        snprintf(why, why_size, "an entry of format version %d; this kernjit reads version %d", version,
                 KJ_CACHE_FORMAT_VERSION);
        return -1;
    }
    memset(entry, 0, sizeof *entry);
    const char *desc;
    const uint8_t *payload;
    if (kj__cache_parse_entry(v, len, key, &desc, &entry->description_len, &payload, &entry->len, &entry->flags) != 0) {
        snprintf(why, why_size, "damaged: its length, key or checksum does not verify (%zu bytes)", n);
        return -1;
    }
    if (!(entry->data = malloc(len))) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    memcpy(entry->data, v, len);
    entry->description = (const char *)entry->data + (desc - (const char *)v);
    entry->payload = entry->data + (payload - v);
    return 0;
}

int kj__remote_sign_text(kj__remote *r, const char *name, const char *text, char hex[65]) {
    hex[0] = '\0';
    if (!r->cfg.secret) return 0;
    uint8_t m[KJ_SIGNATURE_BYTES];
    if (mac(r, name, text, strlen(text), m) != 0) return -1;
    kj__hex(m, sizeof m, hex);
    return 0;
}

int kj__remote_text_signed(kj__remote *r, const char *name, const char *text, const char *hex) {
    if (!r->cfg.secret) return 1;
    char want[65];
    uint8_t a[KJ_SIGNATURE_BYTES], b[KJ_SIGNATURE_BYTES];
    if (kj__remote_sign_text(r, name, text, want) != 0 || strlen(hex) != 64) return 0;
    for (size_t i = 0; i < KJ_SIGNATURE_BYTES; i++) {
        unsigned x, y;
        if (sscanf(want + 2 * i, "%2x", &x) != 1 || sscanf(hex + 2 * i, "%2x", &y) != 1) return 0;
        a[i] = (uint8_t)x;
        b[i] = (uint8_t)y;
    }
    return kj__sign_equal(a, b);
}

/* ---- opening and closing ---------------------------------------------------------------------- */

static void set_unavailable(kj__remote *r, const char *why) {
    r->unavailable = kj__strdup(why);
    kj__log(&r->log, KJ_LOG_WARN, "remote cache %s is not used: %s", r->cfg.url, why);
}

kj_status kj__remote_open(const kj_runtime_options *o, const kj__logger *log, kj__remote **out) {
    *out = NULL;
    kj__remote_config cfg;
    int configured;
    KJ_FORWARD(kj__remote_config_read(o, log, &cfg, &configured));
    if (!configured) return KJ_OK;
    kj__remote *r = calloc(1, sizeof *r);
    if (!r) {
        kj__remote_config_free(&cfg);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    r->cfg = cfg;
    if (log) r->log = *log;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    if (gethostname(r->host, sizeof r->host) != 0) snprintf(r->host, sizeof r->host, "?");
    r->host[sizeof r->host - 1] = '\0';
    r->last_flush = kj__now_ms();
    if (kj__redis_create(&r->cfg, &r->log, &r->redis) != KJ_OK) {
        r->redis = NULL;
        set_unavailable(r, kj_last_error());
    } else if (r->cfg.secret && kj__sign_load() != KJ_OK) {
        kj__redis_destroy(r->redis);
        r->redis = NULL;
        set_unavailable(r, kj_last_error());
    }
    *out = r;
    return KJ_OK;
}

static void flush_counters(kj__remote *r);

void kj__remote_close(kj__remote *r) {
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    r->closing = 1;
    r->drain_until = kj__now_ms() + DRAIN_MS;
    /* a call in progress (a push to a server that trickles its answer) ends then too */
    if (r->redis) {
        char why[64];
        snprintf(why, sizeof why, "not done within %d s of closing the runtime", DRAIN_MS / 1000);
        kj__redis_cut_off(r->redis, r->drain_until, why);
    }
    pthread_cond_broadcast(&r->changed);
    int running = r->worker_running;
    pthread_mutex_unlock(&r->lock);
    if (running) pthread_join(r->worker, NULL);
    if (r->redis && !kj__redis_failing(r->redis)) flush_counters(r);
    for (held *h = r->leases, *next; h; h = next) {
        next = h->next;
        free(h);
    }
    kj__redis_destroy(r->redis);
    free(r->unavailable);
    kj__remote_config_free(&r->cfg);
    pthread_cond_destroy(&r->changed);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* ---- the worker: pushes, lease renewals, counters ---------------------------------------------- */

int kj__remote_store_value(kj__remote *r, const char *name, const uint8_t *value, size_t size) {
    char ex[32];
    snprintf(ex, sizeof ex, "%d", KJ_REMOTE_TTL_S);
    const char *argv[] = {"SET", name, (const char *)value, "EX", ex};
    size_t lens[] = {3, strlen(name), size, 2, strlen(ex)};
    kj__reply *reply = kj__remote_call(r, 5, argv, lens, "a push", "the entry stays in the local cache only");
    if (!reply) return 0;
    int ok = kj__reply_kind(reply) != KJ__REPLY_ERROR;
    if (ok) {
        kj__remote_count(r, KJ__RC_PUSHES, 1);
        kj__remote_count(r, KJ__RC_BYTES_PUSHED, size);
        kj__log(&r->log, KJ_LOG_INFO, "remote cache %s: pushed %s (%zu bytes)", r->cfg.url, name, size);
    } else {
        /* the server answered but would not store it: maxmemory with noeviction, a read-only replica,
         * an ACL */
        size_t len;
        const char *err = kj__reply_str(reply, &len);
        kj__remote_count(r, KJ__RC_ERRORS, 1);
        kj__log(&r->log, KJ_LOG_WARN,
                "remote cache %s refused the push of %s: %.*s; the entry stays in the local "
                "cache only",
                r->cfg.url, name, (int)(len > 300 ? 300 : len), err);
    }
    kj__reply_free(reply);
    return ok;
}

/* Ends a lease this process holds: removed when its entry was pushed (nopush ""), else left saying
 * why for NOPUSH_MS so that the processes waiting for it compile at once instead. */
static void release(kj__remote *r, const kj__remote_claim *c, const char *nopush) {
    char px[32];
    snprintf(px, sizeof px, "%d", NOPUSH_MS);
    const char *argv[] = {"EVAL", RELEASE_SCRIPT, "1", c->lease, c->token, nopush, px};
    kj__reply_free(kj__remote_call(r, 7, argv, NULL, "releasing a compile lease", "it lapses by itself within 2 s"));
    pthread_mutex_lock(&r->lock);
    for (held **p = &r->leases; *p; p = &(*p)->next)
        if (strcmp((*p)->claim.token, c->token) == 0) {
            held *h = *p;
            *p = h->next;
            free(h);
            break;
        }
    pthread_mutex_unlock(&r->lock);
}

static void run_job(kj__remote *r, job *j) {
    const char *nopush = j->nopush;
    if (j->value && kj__remote_store_value(r, j->name, j->value, j->size)) nopush = "";
    else if (j->value) nopush = "nopush: the push failed";
    if (j->claim.held) release(r, &j->claim, nopush);
}

static void renew_leases(kj__remote *r) {
    pthread_mutex_lock(&r->lock);
    size_t n = 0;
    for (held *h = r->leases; h; h = h->next) n++;
    kj__remote_claim *claims = n ? malloc(n * sizeof *claims) : NULL;
    size_t k = 0;
    for (held *h = r->leases; h && claims; h = h->next) claims[k++] = h->claim;
    pthread_mutex_unlock(&r->lock);
    char px[32];
    snprintf(px, sizeof px, "%d", LEASE_MS);
    for (size_t i = 0; i < k; i++) {
        const char *argv[] = {"EVAL", RENEW_SCRIPT, "1", claims[i].lease, claims[i].token, px};
        kj__reply_free(kj__remote_call(r, 6, argv, NULL, "renewing a compile lease",
                                       "it may lapse, and another process compile the kernel too"));
    }
    free(claims);
}

/* Adds the counters gathered since the last time to the server's; a read-only process writes
 * nothing, these neither. */
static void flush_counters(kj__remote *r) {
    if (r->cfg.mode != KJ_REMOTE_READWRITE) return;
    char values[KJ__RC_COUNT][24], max[24];
    const char *argv[4 + 2 * KJ__RC_COUNT + 1] = {"EVAL", FLUSH_SCRIPT, "1", KJ_REMOTE_STATS_KEY};
    int argc = 4;
    pthread_mutex_lock(&r->lock);
    uint64_t taken[KJ__RC_COUNT];
    int any = 0;
    for (int i = 0; i < KJ__RC_COUNT; i++) {
        taken[i] = r->unflushed[i];
        r->unflushed[i] = 0;
        any |= taken[i] != 0;
        snprintf(values[i], sizeof values[i], "%llu", (unsigned long long)taken[i]);
        if (!taken[i]) continue;
        argv[argc++] = COUNTER_NAMES[i];
        argv[argc++] = values[i];
    }
    snprintf(max, sizeof max, "%llu", (unsigned long long)r->fetch_us_max);
    r->last_flush = kj__now_ms();
    pthread_mutex_unlock(&r->lock);
    if (!any) return;
    argv[argc++] = max;
    /* bookkeeping: a failure here follows one already reported, so it is only noted */
    char why[512];
    kj__redis_cmd cmd = {argc, argv, NULL};
    kj__reply *reply = NULL;
    if (kj__redis_exec(r->redis, 1, &cmd, &reply, why, sizeof why) == KJ__REDIS_OK) kj__reply_free(reply);
    else
        kj__log(&r->log, KJ_LOG_INFO, "remote cache %s: the fleet's counters miss this process's (%s)", r->cfg.url,
                why);
}

static int any_unflushed(const kj__remote *r) {
    for (int i = 0; i < KJ__RC_COUNT; i++)
        if (r->unflushed[i]) return 1;
    return 0;
}

static void wait_until(kj__remote *r, double when_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double in_ms = when_ms - kj__now_ms();
    if (in_ms < 1) in_ms = 1;
    long long ns = ts.tv_nsec + (long long)(in_ms * 1e6);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_cond_timedwait(&r->changed, &r->lock, &ts);
}

static void drop_queue(kj__remote *r) {
    size_t n = 0, bytes = 0;
    while (r->head) {
        job *j = r->head;
        r->head = j->next;
        n += j->value != NULL;
        bytes += j->size;
        free(j->value);
        free(j);
    }
    r->tail = NULL;
    r->queued = r->queued_bytes = 0;
    if (n)
        kj__log(&r->log, KJ_LOG_WARN,
                "remote cache %s: %zu push%s (%zu bytes) not done within %d s of closing the "
                "runtime: dropped (the entries stay in the local cache)",
                r->cfg.url, n, n == 1 ? "" : "es", bytes, DRAIN_MS / 1000);
}

static void *worker_main(void *arg) {
    kj__remote *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        double now = kj__now_ms();
        if (r->head && !(r->closing && now > r->drain_until)) {
            job *j = r->head;
            r->head = j->next;
            if (!r->head) r->tail = NULL;
            pthread_mutex_unlock(&r->lock);
            run_job(r, j);
            pthread_mutex_lock(&r->lock);
            r->queued--;
            r->queued_bytes -= j->size;
            free(j->value);
            free(j);
            pthread_cond_broadcast(&r->changed);
            continue;
        }
        if (r->closing) break;
        if (r->leases && now >= r->next_renew) {
            r->next_renew = now + RENEW_MS;
            pthread_mutex_unlock(&r->lock);
            renew_leases(r);
            pthread_mutex_lock(&r->lock);
            continue;
        }
        if (any_unflushed(r) && now >= r->last_flush + FLUSH_MS) {
            r->last_flush = now; /* the next try in FLUSH_MS, whatever happens to this one */
            if (kj__redis_failing(r->redis)) continue;
            pthread_mutex_unlock(&r->lock);
            flush_counters(r);
            pthread_mutex_lock(&r->lock);
            continue;
        }
        double next = now + 3600e3;
        if (r->leases) next = r->next_renew;
        if (any_unflushed(r) && r->last_flush + FLUSH_MS < next) next = r->last_flush + FLUSH_MS;
        wait_until(r, next);
    }
    drop_queue(r);
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* Starts the worker on first need; called with r->lock held. 0 when it runs. */
static int need_worker(kj__remote *r) {
    if (r->worker_running) return 0;
    if (r->closing || pthread_create(&r->worker, NULL, worker_main, r) != 0) return -1;
    r->worker_running = 1;
    return 0;
}

/* Queues a job (taken); a full queue drops it, with a warning, but still lets go of its claim. */
static void enqueue(kj__remote *r, job *j) {
    pthread_mutex_lock(&r->lock);
    if (j->value && r->queued_bytes + j->size > MAX_QUEUED) {
        if (r->dropped++ == 0)
            kj__log(&r->log, KJ_LOG_WARN,
                    "remote cache %s: more than %u MiB of pushes waiting: %s and later ones "
                    "over the bound are not pushed",
                    r->cfg.url, MAX_QUEUED >> 20, j->name);
        free(j->value);
        j->value = NULL;
        j->size = 0;
        snprintf(j->nopush, sizeof j->nopush, "nopush: too many pushes waiting");
    }
    if ((!j->value && !j->claim.held) || need_worker(r) != 0) {
        if (j->value)
            kj__log(&r->log, KJ_LOG_WARN,
                    "remote cache %s: cannot start the push thread; %s is not "
                    "pushed",
                    r->cfg.url, j->name);
        pthread_mutex_unlock(&r->lock);
        free(j->value);
        free(j);
        return;
    }
    if (r->tail) r->tail->next = j;
    else r->head = j;
    r->tail = j;
    r->queued++;
    r->queued_bytes += j->size;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

size_t kj__remote_drain(kj__remote *r, unsigned timeout_ms) {
    if (!r) return 0;
    double until = kj__now_ms() + timeout_ms;
    pthread_mutex_lock(&r->lock);
    while (r->queued && kj__now_ms() < until) wait_until(r, until);
    size_t left = r->queued;
    pthread_mutex_unlock(&r->lock);
    return left;
}

/* ---- the request path ------------------------------------------------------------------------- */

static void hold(kj__remote *r, const kj__remote_claim *c) {
    held *h = calloc(1, sizeof *h);
    pthread_mutex_lock(&r->lock);
    if (h) {
        h->claim = *c;
        h->next = r->leases;
        r->leases = h;
        r->next_renew = kj__now_ms() + RENEW_MS;
        /* without the worker nobody renews it: it then lapses after LEASE_MS, and others take over */
        need_worker(r);
        pthread_cond_broadcast(&r->changed);
    }
    pthread_mutex_unlock(&r->lock);
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Whether lookups take leases: read-write, and the server has not refused the script. */
static int leasing(kj__remote *r) {
    return r->cfg.mode == KJ_REMOTE_READWRITE && !__atomic_load_n(&r->no_leases, __ATOMIC_RELAXED);
}

/* What one look saw. */
typedef enum seen {
    SEEN_VALUE,     /* the entry's value (not yet verified) */
    SEEN_ACQUIRED,  /* the lease, taken by this process */
    SEEN_HOLDER,    /* the lease's value: who holds it (checked by the caller) */
    SEEN_NOBODY,    /* neither value nor lease (read-only) */
    SEEN_KEY_ERROR, /* the server's error for one of the keys (why) */
    SEEN_ODD        /* an answer that is none of these (why) */
} seen;

typedef struct look_result {
    seen what;
    kj__reply *reply; /* owns what value and holder point into */
    const char *value;
    size_t value_len;
    const kj__reply *holder; /* a string reply */
} look_result;

static void key_error(look_result *out, const char *name, const kj__reply *err, char *why, size_t why_size) {
    size_t len;
    const char *text = kj__reply_str(err, &len);
    out->what = SEEN_KEY_ERROR;
    snprintf(why, why_size, "the server's error for %s%s%.*s", name ? name : "", name ? ": " : "",
             (int)(len > 300 ? 300 : len), text ? text : "");
}

static void odd(look_result *out, const char *what, const kj__reply *reply, char *why, size_t why_size) {
    char text[256];
    kj__reply_describe(reply, text, sizeof text);
    out->what = SEEN_ODD;
    snprintf(why, why_size, "%s: %s", what, text);
}

/* The lookup script's answer (see LOOKUP_SCRIPT), every part checked. */
static void read_script_answer(look_result *out, char *why, size_t why_size) {
    const kj__reply *rep = out->reply, *arg = kj__reply_at(rep, 1);
    long long what = kj__reply_kind(kj__reply_at(rep, 0)) == KJ__REPLY_INTEGER ? kj__reply_int(kj__reply_at(rep, 0))
                                                                               : 0;
    kj__reply_type kind = kj__reply_kind(arg);
    size_t count = kj__reply_count(rep);
    if (what == 1 && count == 2 && kind == KJ__REPLY_STRING && (out->value = kj__reply_str(arg, &out->value_len)) &&
        out->value_len) {
        out->what = SEEN_VALUE;
    } else if (what == 2 && count == 1) {
        out->what = SEEN_ACQUIRED;
    } else if (what == 3 && count == 2 && kind == KJ__REPLY_STRING) {
        out->what = SEEN_HOLDER;
        out->holder = arg;
    } else if (what == 4 && count == 2 && (kind == KJ__REPLY_STRING || kind == KJ__REPLY_ERROR)) {
        key_error(out, NULL, arg, why, why_size);
    } else {
        out->value = NULL;
        odd(out, "an answer that is not the lookup script's", rep, why, why_size);
    }
}

/* One look: the entry, else (read-write) the lease, else what the lease says. On an answer,
 * out->reply holds it (free it), and out->what says what it is. */
static kj__redis_result look(kj__remote *r, const char *name, const char *lease, const char *token, look_result *out,
                             char *why, size_t why_size) {
    memset(out, 0, sizeof *out);
    char px[32], most[32];
    snprintf(px, sizeof px, "%d", LEASE_MS);
    snprintf(most, sizeof most, "%u", KJ_REMOTE_MAX_VALUE);
    if (leasing(r)) {
        const char *argv[] = {"EVAL", LOOKUP_SCRIPT, "2", name, lease, token, px, most};
        kj__redis_cmd cmd = {8, argv, NULL, 0};
        kj__redis_result res = kj__redis_exec(r->redis, 1, &cmd, &out->reply, why, why_size);
        if (res != KJ__REDIS_OK) return res;
        size_t len;
        const char *err = kj__reply_str(out->reply, &len);
        if (kj__reply_kind(out->reply) != KJ__REPLY_ERROR) {
            read_script_answer(out, why, why_size);
            return KJ__REDIS_OK;
        }
        if (strncmp(err, "WRONGTYPE", 9) == 0) {
            /* a server that raised a key's error through the script: that key's, not the script's */
            key_error(out, name, out->reply, why, why_size);
            return KJ__REDIS_OK;
        }
        /* a full server (maxmemory with noeviction refuses scripts that may write), a replica,
         * scripting forbidden by an ACL: look up without leases */
        if (!__atomic_exchange_n(&r->no_leases, 1, __ATOMIC_RELAXED))
            kj__remote_warn(r,
                            "the server refused the lookup script (%.*s): looking up without compile leases "
                            "from now on (processes missing the same kernel each compile it)",
                            (int)(len > 200 ? 200 : len), err);
        kj__reply_free(out->reply);
        return look(r, name, lease, token, out, why, why_size);
    }
    /* read-only: a plain fetch, and whether someone compiles the key */
    const char *get_value[] = {"GETRANGE", name, "0", most}, *get_lease[] = {"GET", lease};
    kj__redis_cmd cmds[2] = {{4, get_value, NULL, 0}, {2, get_lease, NULL, KJ__REDIS_REPLY_SMALL}};
    kj__reply *replies[2];
    kj__redis_result res = kj__redis_exec(r->redis, 2, cmds, replies, why, why_size);
    if (res != KJ__REDIS_OK) return res;
    kj__reply *value = replies[0], *holder = replies[1];
    kj__reply_type vk = kj__reply_kind(value), hk = kj__reply_kind(holder);
    out->reply = holder; /* the one kept: the value's when there is one */
    if (vk == KJ__REPLY_STRING && (out->value = kj__reply_str(value, &out->value_len)) && out->value_len) {
        out->what = SEEN_VALUE;
        out->reply = value;
    } else if (vk == KJ__REPLY_ERROR) {
        key_error(out, name, value, why, why_size);
    } else if (vk != KJ__REPLY_STRING) {
        odd(out, "an answer to GETRANGE that is not a string", value, why, why_size);
    } else if (hk == KJ__REPLY_ERROR) {
        key_error(out, lease, holder, why, why_size);
    } else if (hk == KJ__REPLY_STRING) {
        out->what = SEEN_HOLDER;
        out->holder = holder;
    } else if (hk == KJ__REPLY_NIL) {
        out->what = SEEN_NOBODY;
    } else {
        odd(out, "an answer to GET that is neither a string nor nil", holder, why, why_size);
    }
    kj__reply_free(out->reply == value ? holder : value);
    return KJ__REDIS_OK;
}

/* host:pid:n, as kj__remote_lookup makes them: anything else in a lease is nobody's. */
static int is_token(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && s[i] != ':' && s[i] > ' ' && s[i] < 0x7f) i++;
    if (i == 0 || i == n || s[i] != ':') return 0;
    for (int part = 0; part < 2; part++) {
        size_t from = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == from || i - from > 20) return 0;
        if (part == 0 && (i == n || s[i] != ':')) return 0;
    }
    return i == n && n < sizeof((kj__remote_claim *)0)->token;
}

int kj__remote_lookup(kj__remote *r, const char *arch, const kj__key *key, kj__remote_entry *entry,
                      kj__remote_claim *claim) {
    memset(claim, 0, sizeof *claim);
    if (!r || !r->redis) return 0;
    char name[160], why[512];
    kj__remote_entry_name(arch, key, name, sizeof name);
    lease_name(arch, key, claim->lease, sizeof claim->lease);
    pthread_mutex_lock(&r->lock);
    snprintf(claim->token, sizeof claim->token, "%s:%ld:%llu", r->host, (long)getpid(),
             (unsigned long long)++r->tokens);
    pthread_mutex_unlock(&r->lock);
    double t0 = kj__now_ms();
    unsigned poll = POLL_FIRST_MS;
    int waited = 0, hit = 0;
    for (int round = 0;; round++) {
        look_result l;
        kj__redis_result res = look(r, name, claim->lease, claim->token, &l, why, sizeof why);
        if (round == 0 && res == KJ__REDIS_OK) {
            uint64_t us = (uint64_t)((kj__now_ms() - t0) * 1e3);
            kj__remote_count(r, KJ__RC_FETCHES, 1);
            kj__remote_count(r, KJ__RC_FETCH_US, us);
            pthread_mutex_lock(&r->lock);
            if (us > r->fetch_us_max) r->fetch_us_max = us;
            pthread_mutex_unlock(&r->lock);
        }
        if (res != KJ__REDIS_OK) {
            kj__remote_fault(r, res, "a lookup", why, "compiling here");
            break;
        }
        /* Only a holder at work is looked at again, after a pause: a server that answers anything else
         * at once is never asked in a busy loop. A push follows a sane answer only. */
        claim->reached = l.what != SEEN_ODD;
        if (l.what == SEEN_ODD || l.what == SEEN_KEY_ERROR) {
            kj__remote_fault(r, KJ__REDIS_FAILED, "a lookup", why, "compiling here");
            kj__reply_free(l.reply);
            break;
        }
        if (l.what == SEEN_VALUE) {
            if (kj__remote_open_value(r, name, key, (const uint8_t *)l.value, l.value_len, entry, why, sizeof why) ==
                0) {
                hit = 1;
                kj__remote_count(r, KJ__RC_HITS, 1);
                kj__remote_count(r, KJ__RC_BYTES_FETCHED, l.value_len);
            } else {
                kj__remote_count(r, KJ__RC_REFUSALS, 1);
                kj__log(&r->log, KJ_LOG_WARN, "remote cache %s: refused %s: %s; compiling here%s", r->cfg.url, name,
                        why, r->cfg.mode == KJ_REMOTE_READWRITE ? " (and pushing over it)" : "");
            }
            kj__reply_free(l.reply);
            break;
        }
        size_t len = 0;
        const char *holder = l.what == SEEN_HOLDER ? kj__reply_str(l.holder, &len) : "";
        int gave_up = len >= 6 && strncmp(holder, "nopush", 6) == 0, too_long = kj__now_ms() - t0 > WAIT_MAX_MS;
        int nobody = l.what != SEEN_HOLDER || gave_up || !is_token(holder, len);
        if (l.what == SEEN_ACQUIRED) {
            claim->held = 1;
            hold(r, claim);
        } else if (gave_up) {
            kj__log(&r->log, KJ_LOG_INFO,
                    "remote cache %s: the process that compiled %s pushed nothing (%.*s); "
                    "compiling here",
                    r->cfg.url, name, (int)(len > 100 ? 100 : len), holder);
        } else if (nobody && l.what == SEEN_HOLDER) {
            char text[160];
            kj__reply_describe(l.holder, text, sizeof text);
            kj__remote_warn(r, "the lease %s holds %s, which is not a compiling process's token: compiling here",
                            claim->lease, text);
        } else if (too_long && !nobody) {
            kj__log(&r->log, KJ_LOG_WARN,
                    "remote cache %s: %s was still being compiled by %s after %d s; compiling "
                    "here",
                    r->cfg.url, name, holder, WAIT_MAX_MS / 1000);
        }
        if (nobody || too_long) {
            kj__remote_count(r, KJ__RC_MISSES, 1);
            kj__reply_free(l.reply);
            break;
        }
        if (!waited)
            kj__log(&r->log, KJ_LOG_INFO, "remote cache %s: %s is being compiled by %s; waiting for its push",
                    r->cfg.url, name, holder);
        waited = 1;
        kj__reply_free(l.reply);
        sleep_ms(poll);
        poll = poll * 2 > POLL_MOST_MS ? POLL_MOST_MS : poll * 2;
    }
    kj__remote_count(r, KJ__RC_WAITS, waited);
    pthread_mutex_lock(&r->lock);
    r->lookup_ms += kj__now_ms() - t0;
    pthread_mutex_unlock(&r->lock);
    return hit;
}

void kj__remote_publish(kj__remote *r, const char *arch, const kj__key *key, uint8_t *data, size_t size,
                        kj__remote_claim *claim) {
    if (!r || !r->redis || r->cfg.mode != KJ_REMOTE_READWRITE || (claim && !claim->reached)) {
        free(data);
        return;
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        free(data);
        kj__remote_abandon(r, claim);
        return;
    }
    kj__remote_entry_name(arch, key, j->name, sizeof j->name);
    if (claim) j->claim = *claim;
    if (size > KJ_REMOTE_MAX_VALUE) {
        kj__log(&r->log, KJ_LOG_INFO,
                "remote cache %s: %s is %zu bytes, above the %u MiB bound for values: not "
                "pushed",
                r->cfg.url, j->name, size, KJ_REMOTE_MAX_VALUE >> 20);
        free(data);
        snprintf(j->nopush, sizeof j->nopush, "nopush: too large to push");
    } else {
        j->value = kj__remote_seal(r, j->name, data, size, &j->size);
        if (!j->value) snprintf(j->nopush, sizeof j->nopush, "nopush: cannot sign");
    }
    enqueue(r, j);
    if (claim) claim->held = 0;
}

void kj__remote_abandon(kj__remote *r, kj__remote_claim *claim) {
    if (!r || !claim || !claim->held) return;
    job *j = calloc(1, sizeof *j);
    if (!j) return; /* the lease lapses by itself */
    j->claim = *claim;
    snprintf(j->nopush, sizeof j->nopush, "nopush: the compile failed");
    enqueue(r, j);
    claim->held = 0;
}
