/* Helpers shared by the cmocka tests: temporary folders, a runtime with a private cache, the skip
 * code for GPU tests, and seeded random data. Header-only so that each test binary stays one file. */
#ifndef KJ_TEST_UTIL_H
#define KJ_TEST_UTIL_H

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernjit.h"

/* meson treats exit code 77 as "skipped" */
#define KJ_TEST_SKIP 77

/* A fresh folder under /tmp, removed by kj_test_rmdir. */
static inline char *kj_test_tmpdir(void) {
    char *dir = strdup("/tmp/kernjit-test-XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}

static inline void kj_test_rmdir(char *dir) {
    if (!dir) return;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    free(dir);
}

static inline void kj_test_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* dir/rel (rel may name sub-folders, made as needed), in static storage that the next eight calls
 * reuse. */
static inline const char *kj_test_path(const char *dir, const char *rel) {
    static char paths[8][PATH_MAX];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, PATH_MAX, "%s/%s", dir, rel);
    return p;
}

/* Writes text to dir/rel, making its folders. */
static inline void kj_test_put(const char *dir, const char *rel, const char *text) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0700);
        *s = '/';
    }
    kj_test_write(path, text, strlen(text));
}

/* Collects warnings so that tests can assert on them. */
typedef struct kj_test_log {
    int warnings;
    char last[4096]; /* a message is at most 2047 bytes */
} kj_test_log;

static inline void kj_test_log_fn(kj_log_level level, const char *message, void *user) {
    kj_test_log *log = user;
    if (level <= KJ_LOG_WARN) log->warnings++;
    snprintf(log->last, sizeof log->last, "%s", message);
}

/* A runtime with its cache in dir (NULL: memory only), device as given. */
static inline kj_runtime *kj_test_runtime(const char *dir, int device, kj_test_log *log) {
    kj_runtime_options o;
    kj_runtime_options_init(&o);
    o.device = device;
    o.cache_dir = dir;
    o.cache_mode = dir ? KJ_CACHE_DISK : KJ_CACHE_MEMORY_ONLY;
    if (log) {
        memset(log, 0, sizeof *log);
        o.log = kj_test_log_fn;
        o.log_user = log;
    }
    kj_runtime *rt = NULL;
    kj_status s = kj_runtime_create(&o, &rt);
    if (s != KJ_OK) fprintf(stderr, "kj_runtime_create: %s\n", kj_last_error());
    return rt;
}

/* A compile-only runtime on a private cache folder, and a private folder for the files a test
 * writes (kj_test_put): what the compile-suite groups set up and tear down. */
typedef struct kj_test_workspace {
    char *work, *cache;
    kj_runtime *rt;
} kj_test_workspace;

static inline int kj_test_workspace_open(kj_test_workspace *w) {
    w->work = kj_test_tmpdir();
    w->cache = kj_test_tmpdir();
    w->rt = w->cache ? kj_test_runtime(w->cache, KJ_DEVICE_NONE, NULL) : NULL;
    return w->work && w->cache && w->rt ? 0 : -1;
}

static inline void kj_test_workspace_close(kj_test_workspace *w) {
    kj_runtime_destroy(w->rt);
    kj_test_rmdir(w->work);
    kj_test_rmdir(w->cache);
    memset(w, 0, sizeof *w);
}

/* For GPU tests: exits with the skip code when there is no device. */
static inline void kj_test_require_gpu(void) {
    int n = 0;
    if (kj_device_count(&n) != KJ_OK || n == 0) {
        printf("no CUDA device: skipping\n");
        exit(KJ_TEST_SKIP);
    }
}

/* A seed that differs every run (fresh random inputs), printed so that a failure can be replayed
 * with KERNJIT_TEST_SEED. */
static inline uint64_t kj_test_seed(void) {
    const char *env = getenv("KERNJIT_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20));
    printf("seed %llu (replay with KERNJIT_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    return seed;
}

static inline uint64_t kj_test_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* The gpu tests' small mode, KERNJIT_TEST_SMALL=1: for runs under compute-sanitizer (tools/gpu-check
 * sanitize), which slows kernels down tens to hundreds of times. Element counts are capped at
 * KJ_TEST_SMALL_ELEMENTS (still several blocks of every entry, so that the cross-block paths run) and
 * matrix and image sides at KJ_TEST_SMALL_SIDE; lists of sizes that the caps make equal run once; a
 * test whose point is a number at full size (launch counts at 2^20, identical images at 16384^2) is
 * skipped. Every kernel, entry, operator and type still runs. */
#define KJ_TEST_SMALL_ELEMENTS 100003u
#define KJ_TEST_SMALL_SIDE 1000u

static inline int kj_test_small(void) {
    const char *e = getenv("KERNJIT_TEST_SMALL");
    return e && *e && strcmp(e, "0") != 0;
}
static inline size_t kj_test_cap(size_t n) {
    return kj_test_small() && n > KJ_TEST_SMALL_ELEMENTS ? KJ_TEST_SMALL_ELEMENTS : n;
}
static inline size_t kj_test_cap_side(size_t n) {
    return kj_test_small() && n > KJ_TEST_SMALL_SIDE ? KJ_TEST_SMALL_SIDE : n;
}
/* In small mode: says that `what` is skipped and returns 1. */
static inline int kj_test_skip_if_small(const char *what) {
    if (!kj_test_small()) return 0;
    printf("small mode (KERNJIT_TEST_SMALL): skipping %s\n", what);
    return 1;
}

#define KJ_ASSERT_OK(expr)                                                                          \
    do {                                                                                            \
        kj_status kj_test_s_ = (expr);                                                              \
        if (kj_test_s_ != KJ_OK) fail_msg("%s -> %s: %s", #expr, kj_status_name(kj_test_s_), kj_last_error()); \
    } while (0)

#endif
