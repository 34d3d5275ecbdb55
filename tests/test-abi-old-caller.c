/* A program built against older headers, whose structs are the 0.2.0 ones less their last fields, and
 * one built against newer headers, whose structs have fields this library does not know: the ABI
 * rules of include/kernjit.h's conventions, one struct of each kind (an input with non-zero defaults,
 * an input read on the hot path, an output).
 * - an old input works, the fields it lacks taking their defaults (the bytes after it, poisoned here,
 *   are never read);
 * - an old output is written up to its size and no further (a canary after it stays intact);
 * - a newer input with a non-zero unknown byte is refused, with zeros it works; a newer output gets
 *   zeros in the bytes this library does not know;
 * - size 0 is refused;
 * - the fields an older input lacks take their documented defaults, which are not all 0. */
#include "test_util.h"

#include <stddef.h>

static const uint8_t POISON = 0xA5;

/* kj_runtime_options of 0.2.0 less the remote tier's three fields */
typedef struct old_runtime_options {
    size_t size;
    int device;
    const char *arch;
    const char *cache_dir;
    kj_cache_mode cache_mode;
    uint64_t cache_max_bytes;
    const char *search_path;
    void *cu_context;
    kj_log_fn log;
    void *log_user;
    kj_log_level log_level;
} old_runtime_options;

/* kj_request less sources and source_count */
typedef struct old_request {
    size_t size;
    const char *kernel;
    const char *source_text;
    const char *entry;
    const kj_define *defines;
    size_t define_count;
    const char *const *options;
    size_t option_count;
    const char *arch;
} old_request;

/* kj_stats less the remote tier's last two fields */
typedef struct old_stats {
    size_t size;
    uint64_t requests, memory_hits, disk_hits, misses, compiles, compile_errors, links, bad_entries, store_failures;
    double compile_ms, link_ms;
    uint64_t remote_hits, remote_misses, remote_waits, remote_pushes, remote_refusals;
} old_stats;

/* The old structs are the new ones' beginnings. */
_Static_assert(offsetof(old_runtime_options, log_level) == offsetof(kj_runtime_options, log_level), "layout");
_Static_assert(sizeof(old_runtime_options) < sizeof(kj_runtime_options), "older is smaller");
_Static_assert(offsetof(old_request, arch) == offsetof(kj_request, arch), "layout");
_Static_assert(sizeof(old_request) < sizeof(kj_request), "older is smaller");
_Static_assert(offsetof(old_stats, remote_refusals) == offsetof(kj_stats, remote_refusals), "layout");
_Static_assert(sizeof(old_stats) < sizeof(kj_stats), "older is smaller");

static const char SOURCE[] = "extern \"C\" __global__ void k(int *x) { *x = 1; }\n";

/* Each old struct sits in front of poisoned bytes: a library reading past its size finds garbage
 * (a source list at 0xA5A5..., a remote cache URL there) and fails or crashes. */
typedef struct {
    old_runtime_options o;
    unsigned char poison[256];
} old_options_box;
typedef struct {
    old_request r;
    unsigned char poison[256];
} old_request_box;
typedef struct {
    old_stats s;
    unsigned char canary[256];
} old_stats_box;

static kj_runtime *old_runtime(void) {
    old_options_box box;
    memset(&box, POISON, sizeof box);
    KJ_ASSERT_OK(kj_runtime_options_init((kj_runtime_options *)&box.o, sizeof box.o));
    for (size_t i = 0; i < sizeof box.poison; i++) assert_int_equal(box.poison[i], POISON); /* init wrote no further */
    assert_int_equal(box.o.size, sizeof box.o);
    assert_int_equal(box.o.device, KJ_DEVICE_AUTO);
    assert_int_equal(box.o.log_level, KJ_LOG_WARN);
    box.o.device = KJ_DEVICE_NONE;
    box.o.arch = "sm_90";
    box.o.cache_mode = KJ_CACHE_MEMORY_ONLY;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create((const kj_runtime_options *)&box.o, &rt));
    assert_string_equal(kj_runtime_arch(rt), "sm_90");
    return rt;
}

static void test_old_caller(void **state) {
    (void)state;
    kj_runtime *rt = old_runtime();
    /* the remote fields it lacks are their defaults: no remote tier (the poison is no URL) */
    kj_remote_info remote = KJ_REMOTE_INFO_INIT;
    KJ_ASSERT_OK(kj_remote_query(rt, &remote));
    assert_int_equal(remote.configured, 0);

    old_request_box req;
    memset(&req, POISON, sizeof req);
    req.r = (old_request){.size = sizeof req.r, .kernel = "k.cu", .source_text = SOURCE};
    kj_compile_result result = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, (const kj_request *)&req.r, &result));
    assert_int_equal(result.source_count, 1); /* a program of one source: sources took its default */
    assert_true(result.binary_bytes > 0);
    kj_kernel *k = NULL;
    assert_int_equal(kj_kernel_get(rt, (const kj_request *)&req.r, &k, NULL), KJ_ERR_NO_DEVICE);

    old_stats_box stats;
    memset(&stats, POISON, sizeof stats);
    stats.s.size = sizeof stats.s;
    KJ_ASSERT_OK(kj_runtime_stats(rt, (kj_stats *)&stats.s));
    assert_int_equal(stats.s.size, sizeof stats.s);
    assert_int_equal(stats.s.requests, 2);
    assert_int_equal(stats.s.compiles, 1);
    assert_int_equal(stats.s.remote_refusals, 0);
    for (size_t i = 0; i < sizeof stats.canary; i++) assert_int_equal(stats.canary[i], POISON);
    kj_runtime_destroy(rt);
}

static int warnings_seen;
static void count_warnings(kj_log_level level, const char *message, void *user) {
    (void)message, (void)user;
    if (level == KJ_LOG_WARN) warnings_seen++;
}

/* The fields an older (smaller) struct lacks take their documented defaults, not 0: a struct of the
 * size field alone asks for KJ_DEVICE_AUTO (0 would be device 0, which this process's driver, a file
 * that does not exist, cannot give), and one that ends before log_level logs warnings (0 would be
 * errors only). */
static void test_old_caller_defaults(void **state) {
    (void)state;
    setenv("KERNJIT_LIBCUDA", "/proc/self/fdinfo/no-driver/libcuda.so.1", 1);
    struct {
        kj_runtime_options o;
        unsigned char poison[64];
    } box;
    memset(&box, POISON, sizeof box);
    box.o.size = sizeof box.o.size;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&box.o, &rt));
    assert_int_equal(kj_runtime_has_device(rt), 0); /* AUTO without a driver: compile-only */
    kj_runtime_destroy(rt);

    memset(&box, POISON, sizeof box);
    memset(&box.o, 0, offsetof(kj_runtime_options, log_level));
    box.o.size = offsetof(kj_runtime_options, log_level);
    box.o.device = KJ_DEVICE_NONE;
    box.o.cache_mode = KJ_CACHE_MEMORY_ONLY;
    box.o.log = count_warnings;
    setenv("KERNJIT_PATH", " /tmp", 1); /* white space at an end: a warning */
    warnings_seen = 0;
    KJ_ASSERT_OK(kj_runtime_create(&box.o, &rt));
    unsetenv("KERNJIT_PATH");
    assert_int_equal(warnings_seen, 1);
    kj_runtime_destroy(rt);
}

/* A program built against the headers before seeds: its kj_runtime_options ends with `reserved`, and
 * the poisoned bytes after it are no seed_dirs (a pointer read from them would be followed): the seeds
 * are KERNJIT_SEED_PATH's, none here. */
static void test_caller_before_seeds(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    struct {
        kj_runtime_options o;
        unsigned char poison[64];
    } box;
    memset(&box, POISON, sizeof box);
    size_t size = offsetof(kj_runtime_options, seed_dirs);
    KJ_ASSERT_OK(kj_runtime_options_init(&box.o, size));
    box.o.device = KJ_DEVICE_NONE;
    box.o.cache_dir = dir;
    setenv("KERNJIT_SEED_PATH", "", 1);
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&box.o, &rt));
    assert_null(kj_seed_dir(rt, 0));
    kj_compile_result result = KJ_COMPILE_RESULT_INIT;
    kj_request req = {.size = sizeof req, .kernel = "k.cu", .source_text = SOURCE};
    KJ_ASSERT_OK(kj_compile(rt, &req, &result));
    kj_runtime_destroy(rt);
    kj_test_rmdir(dir);
}

static void test_newer_caller(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_compile_runtime(NULL, NULL);
    struct {
        kj_request r;
        uint64_t newer[2];
    } req;
    memset(&req, 0, sizeof req);
    req.r.size = sizeof req;
    req.r.kernel = "k.cu";
    req.r.source_text = SOURCE;
    req.newer[1] = 1 << 20;
    kj_compile_result result = KJ_COMPILE_RESULT_INIT;
    assert_int_equal(kj_compile(rt, &req.r, &result), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "kj_request has a non-zero byte at offset"));
    req.newer[1] = 0;

    struct {
        kj_stats s;
        uint64_t newer[2];
    } stats;
    memset(&stats, POISON, sizeof stats);
    stats.s.size = sizeof stats;
    KJ_ASSERT_OK(kj_compile(rt, &req.r, &result));
    KJ_ASSERT_OK(kj_runtime_stats(rt, &stats.s));
    assert_int_equal(stats.s.size, sizeof stats); /* the caller's size is kept */
    assert_int_equal(stats.s.compiles, 1);
    assert_int_equal(stats.newer[0], 0); /* what this library does not know reads as 0 */
    assert_int_equal(stats.newer[1], 0);
    kj_runtime_destroy(rt);
}

static void test_size_zero(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_compile_runtime(NULL, NULL);
    kj_request req = {.size = 0, .kernel = "k.cu", .source_text = SOURCE};
    kj_compile_result result = KJ_COMPILE_RESULT_INIT;
    assert_int_equal(kj_compile(rt, &req, &result), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "kj_request.size is 0: initialize the struct with KJ_REQUEST_INIT"));
    kj_stats st;
    memset(&st, POISON, sizeof st);
    st.size = 0;
    assert_int_equal(kj_runtime_stats(rt, &st), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "kj_stats.size is 0: initialize the struct with KJ_STATS_INIT"));
    assert_int_equal(st.requests, 0xA5A5A5A5A5A5A5A5ull);
    kj_runtime_destroy(rt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_caller),          cmocka_unit_test(test_old_caller_defaults),
        cmocka_unit_test(test_caller_before_seeds), cmocka_unit_test(test_newer_caller),
        cmocka_unit_test(test_size_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
