/* What every command shares: its messages and exit codes (and the library's log, and what a worker
 * process relays), the runtime it creates, how it names what the library reports, and small helpers
 * of numbers (a median, seeded random data, a monotonic clock). Options: options.c; JSON: json.c;
 * progress: progress.c; files: files.c. */
#include "cli.h"
#include "devices.h"
#include "kjtest.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Messages carry names and paths the user typed or a file held: a terminal escape sequence in one
 * must reach the terminal as text, never as a command. Control bytes but newline and tab are shown as
 * \xNN. */
static void put_message(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) fprintf(stderr, "\\x%02x", *p);
        else fputc(*p, stderr);
}

static cli_diversion *diversion;

void cli_divert(cli_diversion *fn) { diversion = fn; }

/* "kernjit CMD: message" on stderr, and the document's "error" under --json. */
static int report(const char *cmd, const char *status, int class_, const char *message) {
    if (diversion) {
        diversion(1, status, class_, message);
        return class_;
    }
    cli_progress_pause();
    fprintf(stderr, "kernjit%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    put_message(message);
    fputc('\n', stderr);
    json_error(cmd, status, class_, message);
    return class_;
}

/* Formatted as the library's messages are: a long path loses its middle, never the reason after it. */
static int report_formatted(const char *cmd, const char *status, int class_, const char *fmt, va_list ap) {
    char buf[CLI_MESSAGE_MAX];
    kj_message_vformat(buf, sizeof buf, fmt, ap);
    return report(cmd, status, class_, buf);
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report_formatted(cmd, kj_status_name(KJ_ERR_USAGE), EXIT_USAGE, fmt, ap);
    va_end(ap);
    if (!diversion) fprintf(stderr, "Try 'kernjit%s%s --help'.\n", cmd ? " " : "", cmd ? cmd : "");
    return EXIT_USAGE;
}

int cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report_formatted(cmd, NULL, EXIT_FAILURE_, fmt, ap);
    va_end(ap);
    return EXIT_FAILURE_;
}

int cli_error_as(const char *cmd, kj_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = report_formatted(cmd, kj_status_name(status), kj_status_class(status), fmt, ap);
    va_end(ap);
    return rc;
}

int cli_fail(const char *cmd, kj_status s) {
    const char *msg = kj_last_error();
    return report(cmd, kj_status_name(s), kj_status_class(s), *msg ? msg : kj_strerror(s));
}

int cli_relay_failure(const char *cmd, const char *status, int class_, const char *message) {
    return report(cmd, status, class_, message);
}

/* The warnings and errors said, so that one relayed from another process is not said again: every
 * worker's runtime warns of the same environment as this process's. The library logs from its pool's
 * threads at once (kj_compile_all, prefetch), so the list and the lines written are under one lock. */
#define SAID_MAX 64
static char *said[SAID_MAX];
static size_t said_count;
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;

static int said_before(const char *message) {
    for (size_t i = 0; i < said_count; i++)
        if (strcmp(said[i], message) == 0) return 1;
    if (said_count < SAID_MAX && (said[said_count] = strdup(message))) said_count++;
    return 0;
}

static void log_to_stderr(kj_log_level level, const char *message, void *user) {
    (void)user;
    if (diversion) {
        diversion(0, NULL, (int)level, message);
        return;
    }
    pthread_mutex_lock(&said_lock);
    if (level <= KJ_LOG_WARN) said_before(message);
    cli_progress_pause();
    fprintf(stderr, "kernjit: %s: ", level == KJ_LOG_ERROR ? "error" : level == KJ_LOG_WARN ? "warning" : "note");
    put_message(message);
    fputc('\n', stderr);
    pthread_mutex_unlock(&said_lock);
}

void cli_relay_log(kj_log_level level, const char *message) {
    pthread_mutex_lock(&said_lock);
    int new_message = level > KJ_LOG_WARN || !said_before(message);
    pthread_mutex_unlock(&said_lock);
    if (new_message) log_to_stderr(level, message, NULL);
}

char *cli_format(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

int cli_verbosity = 1;

void cli_runtime_options(kj_runtime_options *o, int compile_only, const char *arch, int verbose) {
    *o = (kj_runtime_options)KJ_RUNTIME_OPTIONS_INIT;
    o->device = compile_only ? KJ_DEVICE_NONE : cli_device;
    o->arch = arch || compile_only ? arch : cli_arch;
    o->log = log_to_stderr;
    o->log_level = cli_verbosity == 0 ? KJ_LOG_ERROR : verbose || cli_verbosity >= 2 ? KJ_LOG_INFO : KJ_LOG_WARN;
}

kj_status cli_runtime(kj_runtime **rt, int compile_only, const char *arch, int verbose) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    cli_runtime_options(&o, compile_only, arch, verbose);
    return kj_runtime_create(&o, rt);
}

const char *cli_origin_text(kj_origin o) {
    switch (o) {
    case KJ_ORIGIN_COMPILED: return "compiled now";
    case KJ_ORIGIN_DISK: return "disk cache";
    case KJ_ORIGIN_REMOTE: return "remote cache";
    case KJ_ORIGIN_SEED: return "seed (built ahead of time)";
    default: return "memory (already loaded)";
    }
}

static const char *mode_name(kj_remote_mode m) { return m == KJ_REMOTE_READ ? "read" : "readwrite"; }

void cli_print_remote(const kj_remote_info *r, int json) {
    double mean = r->fetches ? r->fetch_ms_total / (double)r->fetches : 0;
    if (json) {
        json_object_in("remote");
        json_fields("configured?=%d", r->configured);
        if (r->configured)
            json_fields("url=%s mode=%s signed?=%d reachable?=%d", r->url, mode_name(r->mode), r->signed_entries,
                        r->reachable);
        json_string("state", r->state);
        if (r->reachable) {
            json_fields("server_version=%s eviction_policy=%s used_memory_bytes=%" PRIu64 " max_memory_bytes=%" PRIu64
                        " keys=%" PRIu64 " round_trip_ms=%g",
                        r->server_version, r->eviction_policy, r->used_memory, r->max_memory, r->keys,
                        r->round_trip_ms);
            json_object_in("fleet");
            json_fields("hits=%" PRIu64 " misses=%" PRIu64 " waits=%" PRIu64 " pushes=%" PRIu64 " refusals=%" PRIu64
                        " errors=%" PRIu64 " fetches=%" PRIu64 " fetch_mean_ms=%g fetch_max_ms=%g"
                        " fetched_bytes=%" PRIu64 " pushed_bytes=%" PRIu64,
                        r->hits, r->misses, r->waits, r->pushes, r->refusals, r->errors, r->fetches, mean,
                        r->fetch_ms_max, r->bytes_fetched, r->bytes_pushed);
            json_end_object();
        }
        json_end_object();
        return;
    }
    if (!r->configured) {
        printf("remote cache: %s\n", r->state);
        return;
    }
    printf("remote cache: %s (%s%s): %s\n", r->url, mode_name(r->mode), r->signed_entries ? ", signed" : "", r->state);
    if (!r->reachable) return;
    printf("  server     Redis %s, %.1f MiB used of %s, maxmemory-policy %s%s, %llu keys\n", r->server_version,
           r->used_memory / 1048576.0, r->max_memory ? "a bound" : "no bound", r->eviction_policy,
           strcmp(r->eviction_policy, "allkeys-lru") == 0 ? "" : " (the documented setup is allkeys-lru)",
           (unsigned long long)r->keys);
    printf("  latency    %.3f ms round trip now; lookups %.3f ms mean, %.3f ms at most (%llu lookups)\n",
           r->round_trip_ms, mean, r->fetch_ms_max, (unsigned long long)r->fetches);
    printf("  fleet      %llu hits, %llu misses, %llu waits for another's compile, %llu pushes, %llu refusals, %llu "
           "errors\n",
           (unsigned long long)r->hits, (unsigned long long)r->misses, (unsigned long long)r->waits,
           (unsigned long long)r->pushes, (unsigned long long)r->refusals, (unsigned long long)r->errors);
    printf("  traffic    %.1f MiB fetched, %.1f MiB pushed\n", r->bytes_fetched / 1048576.0,
           r->bytes_pushed / 1048576.0);
}

void json_transfer_fields(const kj_remote_transfer *t) {
    json_fields("entries=%" PRIu64 " moved=%" PRIu64 " present=%" PRIu64 " refused=%" PRIu64 " failed=%" PRIu64
                " moved_bytes=%" PRIu64,
                t->entries, t->moved, t->present, t->refused, t->failed, t->bytes);
}

int cli_device_memory_short(const char *cmd, const char *what, uint64_t bytes, size_t free_b, size_t total_b) {
    return cli_error_as(cmd, KJ_ERR_DEVICE_MEMORY,
                        "%s needs %llu bytes of device memory, more than the %zu bytes free (of %zu)", what,
                        (unsigned long long)bytes, free_b, total_b);
}

int cli_check_device_memory(kj_runtime *rt, const char *cmd, const char *what, uint64_t bytes) {
    size_t free_b = 0, total_b = 0;
    if (kj_mem_info(rt, &free_b, &total_b) != KJ_OK) return EXIT_OK; /* the allocation will say what is wrong */
    return bytes <= free_b ? EXIT_OK : cli_device_memory_short(cmd, what, bytes, free_b, total_b);
}

double cli_median(double *v, size_t n) {
    if (!n) return 0;
    for (size_t i = 1; i < n; i++) /* insertion sort: the arrays are small */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- random data ----------------------------------------------------------------------------- */

static uint64_t next(uint64_t *s) {
    /* xorshift64*: fast, seeded, good enough for test data */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

void cli_random_fill(kj_type type, void *buf, size_t n, uint64_t seed, int small_ints) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    if (!s) s = 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next(&s);
        double u = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
        switch (type) {
        case KJ_TYPE_I32: ((int32_t *)buf)[i] = small_ints ? (int32_t)(r % 2001) - 1000 : (int32_t)(uint32_t)r; break;
        case KJ_TYPE_U32: ((uint32_t *)buf)[i] = small_ints ? (uint32_t)(r % 1000) : (uint32_t)r; break;
        case KJ_TYPE_I64: ((int64_t *)buf)[i] = small_ints ? (int64_t)(r % 2001) - 1000 : (int64_t)r; break;
        case KJ_TYPE_F16: ((uint16_t *)buf)[i] = kj_f16_bits((float)(u * 2 - 1)); break;
        case KJ_TYPE_BF16: ((uint16_t *)buf)[i] = kj_bf16_bits((float)(u * 2 - 1)); break;
        case KJ_TYPE_F32: ((float *)buf)[i] = (float)(u * 2 - 1); break;
        case KJ_TYPE_F64: ((double *)buf)[i] = u * 2 - 1; break;
        default: break;
        }
    }
}

double cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
