/* Helpers shared by the cmocka tests: temporary folders, a runtime with a private cache, the skip
 * code for GPU tests, seeded random data, and the fixture (a private folder, a runtime on the device)
 * that group setups make. Header-only so that each test binary stays one file. */
#ifndef KJ_TEST_UTIL_H
#define KJ_TEST_UTIL_H

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernjit.h"
#include "kernjit/ops.h"
#include "kernjit/tune.h"
#include "kjtest.h"

/* meson treats exit code 77 as "skipped" */
#define KJ_TEST_SKIP 77

/* A call that must succeed: else the test fails with the status and the library's message. */
#define KJ_ASSERT_OK(expr)                                                                                             \
    do {                                                                                                               \
        kj_status kj_test_s_ = (expr);                                                                                 \
        if (kj_test_s_ != KJ_OK) fail_msg("%s -> %s: %s", #expr, kj_status_name(kj_test_s_), kj_last_error());         \
    } while (0)

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

/* A runtime with its cache in dir (NULL: memory only), device as given (KJ_DEVICE_NONE: compile-only,
 * for arch, NULL: the default), warnings into log (NULL: the library's default). */
static inline kj_runtime *kj_test_runtime_for(const char *dir, int device, const char *arch, kj_test_log *log) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = device;
    o.arch = arch;
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

static inline kj_runtime *kj_test_runtime(const char *dir, int device, kj_test_log *log) {
    return kj_test_runtime_for(dir, device, NULL, log);
}

/* A compile-only runtime for sm_90 (asserted). */
static inline kj_runtime *kj_test_compile_runtime(const char *dir, kj_test_log *log) {
    kj_runtime *rt = kj_test_runtime_for(dir, KJ_DEVICE_NONE, "sm_90", log);
    assert_non_null(rt);
    assert_false(kj_runtime_has_device(rt));
    assert_string_equal(kj_runtime_arch(rt), "sm_90");
    return rt;
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

/* ---- the fixture a test program's tests share: cmocka group setups and teardown -------------- */

static char *kj_test_dir;          /* a private folder, for caches and files */
static char *kj_test_cache_dir;    /* kj_test_setup_workspace: kj_test_rt's cache, apart from the files */
static kj_runtime *kj_test_rt;     /* kj_test_setup_gpu_runtime: on the device, its cache in kj_test_dir;
                                        kj_test_setup_workspace: compile-only, its cache in kj_test_cache_dir */
static kj_test_log kj_test_rt_log; /* that runtime's warnings */
static uint64_t kj_test_rng;       /* a generator for kj_test_next, freshly seeded (printed) */

static inline int kj_test_setup_dir(void **state) {
    (void)state;
    kj_test_dir = kj_test_tmpdir();
    return kj_test_dir ? 0 : -1;
}

/* For programs on the stub driver (KERNJIT_LIBCUDA): it presents `count` devices (KJ_STUB_DEVICES, set
 * before the driver is loaded, in the first call here), or the setup fails saying so. */
static inline int kj_test_setup_stub_devices(void **state, int count) {
    char text[16];
    snprintf(text, sizeof text, "%d", count);
    setenv("KJ_STUB_DEVICES", text, 1);
    int n = 0;
    if (kj_device_count(&n) != KJ_OK || n != count) {
        fprintf(stderr, "the stub driver (KERNJIT_LIBCUDA) should present %d devices, not %d\n", count, n);
        return -1;
    }
    return kj_test_setup_dir(state);
}

/* Exits 77 without a device. */
static inline int kj_test_setup_gpu(void **state) {
    kj_test_require_gpu();
    return kj_test_setup_dir(state);
}

static inline int kj_test_setup_gpu_runtime(void **state) {
    if (kj_test_setup_gpu(state) != 0) return -1;
    kj_test_rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, &kj_test_rt_log);
    kj_test_rng = kj_test_seed();
    return kj_test_rt ? 0 : -1;
}

/* The compile suites' fixture: kj_test_dir for the files a test writes (kj_test_put), and kj_test_rt,
 * compile-only for the default arch, with its cache in a folder of its own (kj_test_cache_dir). */
static inline int kj_test_setup_workspace(void **state) {
    if (kj_test_setup_dir(state) != 0 || !(kj_test_cache_dir = kj_test_tmpdir())) return -1;
    kj_test_rt = kj_test_runtime(kj_test_cache_dir, KJ_DEVICE_NONE, NULL);
    return kj_test_rt ? 0 : -1;
}

/* Ends what any of the setups began. */
static inline int kj_test_teardown(void **state) {
    (void)state;
    kj_runtime_destroy(kj_test_rt);
    kj_test_rt = NULL;
    kj_test_rmdir(kj_test_dir);
    kj_test_dir = NULL;
    kj_test_rmdir(kj_test_cache_dir);
    kj_test_cache_dir = NULL;
    return 0;
}

/* kj_tune options for kernel at n with the fixture's seed, the macros in fixed (fixed_count of them)
 * held. */
static inline kj_tune_options kj_test_tune_options(const char *kernel, const kj_define *fixed, size_t fixed_count,
                                                   size_t n) {
    kj_tune_options o = KJ_TUNE_OPTIONS_INIT;
    o.kernel = kernel;
    o.fixed = fixed;
    o.fixed_count = fixed_count;
    o.n = n;
    o.seed = kj_test_rng;
    return o;
}

/* kj_tune_db_forget of the entries of kernel with those fixed macros: how many it removed (asserted to
 * succeed). */
static inline size_t kj_test_forget(kj_runtime *rt, const char *kernel, const char *fixed) {
    kj_tune_filter f = KJ_TUNE_FILTER_INIT;
    f.kernel = kernel;
    f.fixed = fixed;
    size_t removed = 0;
    KJ_ASSERT_OK(kj_tune_db_forget(rt, &f, &removed));
    return removed;
}

/* A tuning that went right: what was tuned, and each of its `variants` measured or skipped (none wrong,
 * failed or left untried). */
static inline void kj_test_assert_tuned(const kj_tune_result *r, const char *kernel, const char *entry,
                                        const char *fixed, unsigned bucket, size_t variants) {
    assert_string_equal(r->kernel, kernel);
    assert_string_equal(r->entry, entry);
    assert_string_equal(r->fixed, fixed);
    assert_int_equal(r->bucket, bucket);
    assert_int_equal(r->variant_count, variants);
    assert_int_equal(r->wrong, 0);
    assert_int_equal(r->failed, 0);
    assert_int_equal(r->not_tried, 0);
    assert_int_equal(r->measured + r->skipped, variants);
}

#ifdef KJ_TEST_KERNELS
/* The request for tests/kernels' program of two sources (link_main.cu, link_lib.cu), at entry. Its
 * paths live in static storage (one such request at a time). */
static inline kj_request kj_test_two_sources(const char *entry) {
    static char main_cu[PATH_MAX], lib_cu[PATH_MAX];
    static const char *more[1] = {lib_cu};
    snprintf(main_cu, sizeof main_cu, "%s/link_main.cu", KJ_TEST_KERNELS);
    snprintf(lib_cu, sizeof lib_cu, "%s/link_lib.cu", KJ_TEST_KERNELS);
    return (kj_request){
        .size = sizeof(kj_request), .kernel = main_cu, .entry = entry, .sources = more, .source_count = 1};
}
#endif

/* Runs `KERNJIT launch ARGS` (ARGS made as printf makes them) as a user would, in folder with its cache
 * in cache; its stdout and stderr in out (size bytes, printed after the command line). Returns its exit
 * code (-1: it did not exit). */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static inline int
kj_test_launch(const char *kernjit, const char *folder, const char *cache, char *out, size_t size, const char *fmt,
               ...) {
    char args[4096], cmd[4096 + 3 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && KERNJIT_CACHE_DIR='%s' '%s' launch %s 2>&1", folder, cache, kernjit, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    printf("$ kernjit launch %s\n%s", args, out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The vector add's buffers on the device: d[0] and d[1] hold a and b (bytes each) `offset` bytes into
 * allocations of offset + bytes, d[2] is all poisoned (0xA5); ready when this returns. */
static inline void kj_test_vector_add_buffers(kj_runtime *rt, const void *a, const void *b, size_t bytes, size_t offset,
                                              kj_devptr d[3]) {
    for (int i = 0; i < 3; i++) KJ_ASSERT_OK(kj_mem_alloc(rt, offset + bytes, &d[i]));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, d[0] + offset, a, bytes));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, d[1] + offset, b, bytes));
    KJ_ASSERT_OK(kj_memset_u8(rt, d[2], 0xA5, offset + bytes)); /* an element never written shows */
    KJ_ASSERT_OK(kj_synchronize(rt));
}

/* A runtime on the device with its cache in kj_test_dir (asserted), its warnings in log (NULL: none). */
static inline kj_runtime *kj_test_gpu_runtime(kj_test_log *log) {
    kj_runtime *rt = kj_test_runtime(kj_test_dir, KJ_DEVICE_AUTO, log);
    assert_non_null(rt);
    assert_true(kj_runtime_has_device(rt));
    return rt;
}

static inline uint64_t kj_test_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* n random int32 from -1000000 to 1000000, to be freed. */
static inline int32_t *kj_test_random_i32(size_t n, uint64_t *seed) {
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) v[i] = (int32_t)(kj_test_next(seed) % 2000001) - 1000000;
    return v;
}

/* Uniform in [0, 1), from kj_test_next. */
static inline double kj_test_uniform(uint64_t *s) { return (double)(kj_test_next(s) >> 11) / 9007199254740992.0; }

/* n elements of type t for a reduction with op, from rng: integers anywhere in their range (odd ones
 * for products); floats uniform in [-1, 1), or with exact, whole numbers from -8 to 8 whose every
 * partial sum is exact (any order gives the reference's bits: catches a dropped or doubled element,
 * which a tolerance might hide); products mostly 1 with about ten of 2, 0.5, -1, 3, -2 (exact, and in
 * range: 3^10 < 2^24). */
static inline void kj_test_fill_reduction(void *buf, kj_type t, kj_op op, size_t n, int exact, uint64_t *rng) {
    static const double few[] = {2, 0.5, -1, 3, -2};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kj_test_next(rng);
        double v = op == KJ_OP_PROD ? (r % (n / 10 + 1) == 0 ? few[(r >> 20) % 5] : 1)
                   : exact          ? (double)(int)(r % 17) - 8
                                    : kj_test_uniform(rng) * 2 - 1;
        switch (t) {
        case KJ_TYPE_I32: ((int32_t *)buf)[i] = op == KJ_OP_PROD ? (int32_t)(r | 1) : (int32_t)(uint32_t)r; break;
        case KJ_TYPE_U32: ((uint32_t *)buf)[i] = op == KJ_OP_PROD ? (uint32_t)(r | 1) : (uint32_t)r; break;
        case KJ_TYPE_I64: ((int64_t *)buf)[i] = op == KJ_OP_PROD ? (int64_t)(r | 1) : (int64_t)r; break;
        case KJ_TYPE_F16: ((uint16_t *)buf)[i] = kj_f16_bits((float)v); break;
        case KJ_TYPE_BF16: ((uint16_t *)buf)[i] = kj_bf16_bits((float)v); break;
        case KJ_TYPE_F32: ((float *)buf)[i] = (float)v; break;
        default: ((double *)buf)[i] = v; break;
        }
    }
}

/* The gpu tests' small mode, KERNJIT_TEST_SMALL=1: for runs under compute-sanitizer (scripts/gpu-check
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

/* The sizes GPU correctness tests run at: 1, 31, 1000003 and 2^24 + 7, capped in small mode (a size the
 * cap makes equal to the one before is left out). Returns how many it put in sizes. */
static inline size_t kj_test_sizes(size_t sizes[4]) {
    static const size_t all[] = {1, 31, 1000003, (1u << 24) + 7};
    size_t count = 0;
    for (size_t i = 0; i < 4; i++)
        if (!count || kj_test_cap(all[i]) != sizes[count - 1]) sizes[count++] = kj_test_cap(all[i]);
    return count;
}

/* A test with a fresh kj_test_dir of its own, removed after it whatever its outcome. */
#define KJ_TEST_IN_DIR(test) cmocka_unit_test_setup_teardown(test, kj_test_setup_dir, kj_test_teardown)

/* main() of a test program: the tests (cmocka_unit_test(...), ...) run as one cmocka group with that
 * group setup and teardown (NULL, NULL: none). */
#define KJ_TEST_MAIN(setup, teardown, ...)                                                                             \
    int main(void) {                                                                                                   \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                                                               \
        return cmocka_run_group_tests(tests, setup, teardown);                                                         \
    }

#endif
