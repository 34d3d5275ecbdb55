/* kernjit bench cache: what each tier of the cache costs for one ~6 KB cubin, against the cold
 * compile it replaces, all in one run: a memory hit, a disk hit (read, verify, load), a remote hit
 * (fetch, verify, store on disk, load; unsigned and signed) and a cold compile (compile, store, load).
 * The remote is a Redis server: --remote URL, else one started for the run from redis-server on PATH
 * on a free loopback port. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "devices.h"
#include "cli.h"
#include "run.h"

extern char **environ;

#define SECRET "kernjit bench cache: a secret of more than 16 bytes"

static void help(void) {
    printf("usage: kernjit bench cache [--repeat R] [--remote URL] [--goals] [--device N]\n"
           "                           [--json]\n\n"
           "Times, as medians of R samples (default 15), each on a kernel of its own (a\n"
           "cubin of about 6 KB):\n"
           "  memory hit     the same request again (microseconds)\n"
           "  disk hit       read, verify (header, checksum), load\n"
           "  remote hit     fetch from Redis, verify, store on disk, load; and again\n"
           "                 with signatures (KERNJIT_REMOTE_SECRET: HMAC-SHA256)\n"
           "  cold compile   NVRTC, store, load (the driver's cache off:\n"
           "                 CUDA_CACHE_DISABLE=1)\n"
           "The Redis server is URL (--remote), else one started for the run from\n"
           "redis-server on PATH, on a free loopback port; without either the remote rows\n"
           "say so. Without a GPU (or with the stub driver) loading is skipped (or fake)\n"
           "and the table says so.\n\n"
           "--goals   the project's targets after their rows, and whether they were met:\n"
           "          a remote hit within 0.5 ms on loopback, and at least 50 times\n"
           "          faster than the cold compile (the --json document has them either\n"
           "          way: goal_remote_met, goal_ratio_met).\n" CLI_DEVICE_HELP);
}

/* Sample i gets a text of its own: each request is a miss in every tier it should miss. */
static char *source_for(unsigned long run, int set, int sample) {
    static const char *fmt = "// kernjit bench cache: run %lu set %d sample %d\n"
                             "extern \"C\" __global__ void poly(const float *x, float *y, unsigned long long n) {\n"
                             "    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
                             "    if (i >= n) return;\n"
                             "    float v = x[i];\n"
                             "    y[i] = sinf(v) * v + 1.0f;\n"
                             "}\n";
    return cli_format(fmt, run, set, sample);
}

/* One request, timed: to a loaded kernel with a device, else to a stored binary. */
static kj_status get_timed(kj_runtime *rt, const char *src, double *ms, kj_origin *origin, size_t *bytes) {
    kj_request req = {.size = sizeof(kj_request), .kernel = "bench.cu", .source_text = src, .entry = "poly"};
    double t0 = cli_now_ms();
    kj_status s;
    if (kj_runtime_has_device(rt)) {
        kj_kernel *k;
        s = kj_kernel_get(rt, &req, &k, origin);
    } else {
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        s = kj_compile(rt, &req, &r);
        *origin = r.origin;
        if (bytes) *bytes = r.binary_bytes;
    }
    *ms = cli_now_ms() - t0;
    return s;
}

typedef struct tier {
    const char *dir;    /* NULL: memory only */
    const char *remote; /* NULL: no remote tier */
    const char *secret;
} tier;

static kj_status open_tier(const tier *t, kj_runtime **rt) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    cli_runtime_options(&o, 0, NULL, 0);
    o.cache_dir = t->dir;
    o.cache_mode = t->dir ? KJ_CACHE_DISK : KJ_CACHE_MEMORY_ONLY;
    o.remote_cache = t->remote;
    o.remote_mode = t->remote ? KJ_REMOTE_READWRITE : KJ_REMOTE_OFF;
    o.remote_secret = t->secret;
    return kj_runtime_create(&o, rt);
}

/* Runs every sample of one set through a runtime of the tier; each must come from `want`. The times
 * go to ms[]; the warm-up (sample -1, untimed) pays for first connections and first loads. */
static int run_set(const tier *t, unsigned long run, int set, uint64_t repeat, kj_origin want, int warm_up, double *ms,
                   size_t *bytes) {
    kj_runtime *rt;
    kj_status s = open_tier(t, &rt);
    if (s != KJ_OK) return cli_fail("bench cache", s);
    int rc = EXIT_OK;
    for (int64_t i = warm_up ? -1 : 0; i < (int64_t)repeat && rc == EXIT_OK; i++) {
        char *src = source_for(run, set, (int)i);
        kj_origin origin;
        double took;
        cli_progress("bench cache",
                     want == KJ_ORIGIN_COMPILED ? "cold compiles"
                     : want == KJ_ORIGIN_REMOTE ? "remote hits"
                                                : "disk hits",
                     (size_t)(i + 1 + warm_up), repeat + warm_up, NULL);
        s = src ? get_timed(rt, src, &took, &origin, bytes) : KJ_ERR_HOST_MEMORY;
        free(src);
        if (s != KJ_OK) rc = cli_fail("bench cache", s);
        else if (origin != want)
            rc = cli_error("bench cache", "sample %lld of set %d came from %s, not %s", (long long)i, set,
                           kj_origin_name(origin), kj_origin_name(want));
        else if (i >= 0) ms[i] = took;
    }
    if (rc == EXIT_OK && bytes) {
        /* the cubin's size, which kj_kernel_get does not tell: a disk hit through kj_compile */
        char *src = source_for(run, set, 0);
        kj_request req = {.size = sizeof(kj_request), .kernel = "bench.cu", .source_text = src, .entry = "poly"};
        kj_compile_result cr = KJ_COMPILE_RESULT_INIT;
        if (src && kj_compile(rt, &req, &cr) == KJ_OK) *bytes = cr.binary_bytes;
        free(src);
    }
    if (rc == EXIT_OK && t->remote && want == KJ_ORIGIN_COMPILED) {
        /* the pushes went in the background: wait for them before anyone reads */
        kj_remote_transfer tr = KJ_REMOTE_TRANSFER_INIT;
        if (kj_remote_push(rt, NULL, &tr) != KJ_OK || tr.failed) rc = cli_error("bench cache", "pushes failed");
    }
    kj_runtime_destroy(rt);
    return rc;
}

static double memory_hit_us(const tier *t, unsigned long run, int *ok) {
    kj_runtime *rt;
    *ok = 0;
    if (open_tier(t, &rt) != KJ_OK) return 0;
    char *src = source_for(run, 0, 0);
    kj_request req = {.size = sizeof(kj_request), .kernel = "bench.cu", .source_text = src, .entry = "poly"};
    kj_kernel *k;
    kj_origin o;
    double samples[10];
    enum { CALLS = 100000 };
    *ok = src && kj_kernel_get(rt, &req, &k, &o) == KJ_OK;
    for (int b = 0; b < 10 && *ok; b++) {
        double t0 = cli_now_ms();
        for (int i = 0; i < CALLS && *ok; i++) *ok = kj_kernel_get(rt, &req, &k, &o) == KJ_OK && o == KJ_ORIGIN_MEMORY;
        samples[b] = (cli_now_ms() - t0) * 1e3 / CALLS;
    }
    free(src);
    kj_runtime_destroy(rt);
    return *ok ? cli_median(samples, 10) : 0;
}

/* ---- a Redis server for the run ----------------------------------------------------------------- */

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

static int answers(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/* Starts redis-server (from PATH) on a free loopback port, in dir, persisting nothing. 0 and *pid. */
static int start_redis(const char *dir, char *url, size_t size, pid_t *pid) {
    int port = free_port();
    if (port < 0) return -1;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    char *argv[] = {
        "redis-server", "--port", ports,          "--bind", "127.0.0.1",          "--dir",       (char *)dir,
        "--save",       "",       "--appendonly", "no",     "--maxmemory-policy", "allkeys-lru", "--loglevel",
        "warning",      NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
    int r = posix_spawnp(pid, "redis-server", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0) return -1;
    for (int i = 0; i < 500 && !answers(port); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (waitpid(*pid, NULL, WNOHANG) == *pid) return -1;
    }
    snprintf(url, size, "redis://127.0.0.1:%d", port);
    return answers(port) ? 0 : -1;
}

/* ---- the table ------------------------------------------------------------------------------------- */

typedef struct rows {
    double memory_us, disk_ms, remote_ms, signed_ms, cold_ms;
    int memory_ok, remote_ok, signed_ok;
    size_t bytes;
} rows;

/* device: "NAME, target sm_XY" for people; device_name (NULL: none) and arch for JSON */
static void print_table(const rows *r, uint64_t repeat, const char *device, const char *device_name, const char *arch,
                        const char *remote_note, int json, int goals) {
    double ratio = r->remote_ok ? r->cold_ms / r->remote_ms : 0;
    if (json) {
        json_begin_object();
        /* a row that was not measured is null (NAN) */
        json_fields("device=%s arch=%s samples=%" PRIu64 " binary_bytes=%zu remote_note=%s memory_hit_us=%g "
                    "disk_hit_ms=%g remote_hit_ms=%g remote_hit_signed_ms=%g cold_compile_ms=%g",
                    device_name, arch, repeat, r->bytes, remote_note, r->memory_ok ? r->memory_us : NAN, r->disk_ms,
                    r->remote_ok ? r->remote_ms : NAN, r->signed_ok ? r->signed_ms : NAN, r->cold_ms);
        if (r->remote_ok)
            json_fields("cold_over_remote=%g goal_remote_met?=%d goal_ratio_met?=%d", ratio, r->remote_ms <= 0.5,
                        ratio >= 50);
        json_end_object();
        return;
    }
    printf("bench cache: %s; a %.1f KB cubin, medians of %llu samples, each a kernel of its own\n", device,
           r->bytes / 1024.0, (unsigned long long)repeat);
    printf("  remote: %s\n", remote_note);
    if (r->memory_ok) printf("  %-52s %10.3f us\n", "memory hit", r->memory_us);
    else printf("  %-52s %10s\n", "memory hit", "(no device: nothing is loaded)");
    const char *load = strstr(device, "no CUDA device") ? "" : " + load";
    char label[128];
    snprintf(label, sizeof label, "disk hit (read + verify%s)", load);
    printf("  %-52s %10.3f ms\n", label, r->disk_ms);
    snprintf(label, sizeof label, "remote hit (fetch + verify + store on disk%s)", load);
    if (r->remote_ok)
        printf("  %-52s %10.3f ms%s%s\n", label, r->remote_ms, goals ? "   goal <= 0.5 ms: " : "",
               !goals                ? ""
               : r->remote_ms <= 0.5 ? "met"
                                     : "MISSED");
    else printf("  %-52s %10s\n", label, "(no Redis)");
    if (r->signed_ok) printf("  %-52s %10.3f ms\n", "remote hit, signed (+ HMAC-SHA256 check)", r->signed_ms);
    snprintf(label, sizeof label, "cold compile (NVRTC + store%s)", load);
    printf("  %-52s %10.2f ms\n", label, r->cold_ms);
    if (r->remote_ok)
        printf("  %-52s %9.0fx%s%s\n", "remote hit against the cold compile", ratio, goals ? "    goal >= 50x: " : "",
               !goals        ? ""
               : ratio >= 50 ? "met"
                             : "MISSED");
}

typedef struct options {
    uint64_t repeat;
    const char *remote; /* NULL: a redis-server started for the run */
    int json;
    int goals; /* --goals: the project's targets after their rows */
} options;

static int option(void *user, int opt, char *arg) {
    options *o = user;
    switch (opt) {
    case 'h': help(); return CLI_DONE;
    case 'j': o->json = 1; break;
    case 'g': o->goals = 1; break;
    case 'R': o->remote = arg; break;
    case 'r': return cli_count_arg("bench cache", "--repeat", arg, 1, 1000, &o->repeat);
    case 'G': return cli_device_arg("bench cache", arg);
    }
    return EXIT_OK;
}

int bench_cache(int argc, char **argv) {
    options o = {.repeat = 15};
    const cli_option_set set = {"repeat=r: remote=R: json=j help=h device=G: goals=g", option};
    int rc = cli_getopt("bench cache", argc, argv, &set, 1, &o);
    if (rc != EXIT_OK) return rc == CLI_DONE ? EXIT_OK : rc;
    uint64_t repeat = o.repeat;
    const char *remote = o.remote;
    int json = o.json;

    /* every compile cold: NVRTC keeps compiled code in the driver's cache where there is a driver */
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    char root[] = "/tmp/kernjit-bench-cache-XXXXXX";
    if (!mkdtemp(root)) return cli_error("bench cache", "cannot create a temporary folder: %s", strerror(errno));
    char writer[4200], reader[4200], signer[4200], signed_reader[4200], server_dir[4200], url[300] = "";
    snprintf(writer, sizeof writer, "%s/writer", root);
    snprintf(reader, sizeof reader, "%s/reader", root);
    snprintf(signer, sizeof signer, "%s/signer", root);
    snprintf(signed_reader, sizeof signed_reader, "%s/signed-reader", root);
    snprintf(server_dir, sizeof server_dir, "%s/redis", root);
    pid_t server = 0;
    char note[400];
    if (remote) {
        snprintf(url, sizeof url, "%s", remote);
        snprintf(note, sizeof note, "%s (--remote)", remote);
    } else if (mkdir(server_dir, 0700) == 0 && start_redis(server_dir, url, sizeof url, &server) == 0) {
        snprintf(note, sizeof note, "%s, a redis-server started for this run (loopback)", url);
    } else {
        if (server > 0) kill(server, SIGKILL), waitpid(server, NULL, 0);
        server = 0;
        url[0] = '\0';
        snprintf(note, sizeof note, "none: no --remote URL, and no redis-server on PATH could be started");
    }

    kj_runtime *probe;
    kj_status s = open_tier(&(tier){NULL, NULL, NULL}, &probe);
    if (s != KJ_OK) {
        bench_remove_tree(root);
        return cli_fail("bench cache", s);
    }
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    char device[300], arch[32];
    int has_device = kj_runtime_device(probe, &d) == KJ_OK;
    snprintf(device, sizeof device, "%s, target %s",
             has_device ? d.name : "no CUDA device (compile-only: loading skipped)", kj_runtime_arch(probe));
    snprintf(arch, sizeof arch, "%s", kj_runtime_arch(probe));
    kj_runtime_destroy(probe);

    unsigned long run = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
    double *cold = calloc(2 * repeat, sizeof *cold), *hit = calloc(repeat, sizeof *hit);
    rows r = {0};
    rc = cold && hit ? EXIT_OK : cli_error("bench cache", "out of memory");
    int have_remote = url[0] != '\0';
    /* set 0: compiled by a writer (pushed when there is a remote), then fetched by a reader with an
     * empty disk cache, then read from that disk cache */
    tier w = {writer, have_remote ? url : NULL, NULL}, rd = {reader, url, NULL}, disk = {reader, NULL, NULL};
    if (rc == EXIT_OK) rc = run_set(&w, run, 0, repeat, KJ_ORIGIN_COMPILED, 1, cold, &r.bytes);
    if (rc == EXIT_OK && have_remote) {
        rc = run_set(&rd, run, 0, repeat, KJ_ORIGIN_REMOTE, 1, hit, NULL);
        r.remote_ms = cli_median(hit, repeat);
        r.remote_ok = rc == EXIT_OK;
    } else if (rc == EXIT_OK) {
        /* no remote: the reader's disk cache is the writer's */
        snprintf(reader, sizeof reader, "%s", writer);
    }
    if (rc == EXIT_OK) rc = run_set(&disk, run, 0, repeat, KJ_ORIGIN_DISK, 1, hit, NULL);
    if (rc == EXIT_OK) r.disk_ms = cli_median(hit, repeat);
    /* set 1: the same through signed values (a writer and a reader sharing a secret) */
    tier sw = {signer, url, SECRET}, sr = {signed_reader, url, SECRET};
    if (rc == EXIT_OK && have_remote) rc = run_set(&sw, run, 1, repeat, KJ_ORIGIN_COMPILED, 1, cold + repeat, NULL);
    if (rc == EXIT_OK && have_remote) {
        rc = run_set(&sr, run, 1, repeat, KJ_ORIGIN_REMOTE, 1, hit, NULL);
        r.signed_ms = cli_median(hit, repeat);
        r.signed_ok = rc == EXIT_OK;
    }
    if (rc == EXIT_OK) r.cold_ms = cli_median(cold, have_remote ? 2 * repeat : repeat);
    if (rc == EXIT_OK) r.memory_us = memory_hit_us(&disk, run, &r.memory_ok);
    cli_progress_end();
    if (rc == EXIT_OK) print_table(&r, repeat, device, has_device ? d.name : NULL, arch, note, json, o.goals);
    free(cold);
    free(hit);
    if (server > 0) {
        kill(server, SIGKILL); /* it keeps nothing: no clean shutdown to wait for */
        waitpid(server, NULL, 0);
    }
    bench_remove_tree(root);
    return rc;
}
