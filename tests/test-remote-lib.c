/* The library's remote tier against a real Redis (tests/with-redis.sh starts it: KJ_TEST_REDIS_URL).
 * Machines are cache folders with the stub driver's device (the tuning database belongs to a device).
 * Tuning results (src/tunedb/remote_tune.c, src/tunedb/tunedb_api.c): a result stored on one machine is what another
 * machine's lookup returns, with no tuning there, and is merged into its database; the conflict rule
 * (the faster re-measured result wins, with its numbers) holds on the server and in every file; other
 * devices, compute capabilities and secrets keep apart; a result a tuning run here does not reproduce
 * gives way; forgetting removes the shared results too; merging thousands rewrites the file once.
 * Threads: many threads of one runtime push and fetch at once, and each kernel is compiled once. A
 * server that closes the connection while a large command is being written raises no SIGPIPE in the
 * host program (whose disposition is the default: the signal would kill it). A call under a cut-off
 * (a runtime that closes) ends at it.
 * Usage: with-redis.sh test-remote-lib path/to/libstub-cuda.so */
#include "test_util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "cache/redis.h"
#include "jit/compile.h"

#include "tunedb/remote_tune.h"
#include "runtime/runtime.h"
#include "tunedb/tunedb.h"

/* Every warning of a machine (and its notes, when its level lets them through), one after the
 * other: several may come in one call. */
typedef struct all_log {
    kj_test_log counted;
    char all[8192];
} all_log;

static void all_log_fn(kj_log_level level, const char *message, void *user) {
    all_log *l = user;
    kj_test_log_fn(level, message, &l->counted);
    size_t n = strlen(l->all);
    if (level <= KJ_LOG_INFO) snprintf(l->all + n, sizeof l->all - n, "%s\n", message);
}

static const char *url;
static char *root;
static char device[256];

static const char *FIXED = "OP=sum T=f32";
#define N (1u << 24)

/* A machine: a runtime on the stub device with its own cache folder (name) and the remote. */
static kj_runtime *machine(const char *name, const char *secret, kj_test_log *log) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.cache_dir = dir;
    o.remote_cache = url;
    o.remote_secret = secret;
    memset(log, 0, sizeof *log);
    o.log = kj_test_log_fn;
    o.log_user = log;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    assert_true(kj_runtime_has_device(rt));
    return rt;
}

/* A machine as machine() makes it, in a mode, logging everything up to level into log. */
static kj_runtime *machine_logged(const char *name, kj_remote_mode mode, kj_log_level level, all_log *log) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.cache_dir = dir;
    o.remote_cache = url;
    o.remote_mode = mode;
    memset(log, 0, sizeof *log);
    o.log = all_log_fn;
    o.log_user = log;
    o.log_level = level;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    return rt;
}

static kj__tuned_rec result(const char *dev, const char *values, double gbps, double us) {
    kj__tuned_rec r = {.kernel = (char *)"reduce",
                       .entry = (char *)"reduce_fast",
                       .fixed = (char *)FIXED,
                       .bucket = kj__tunedb_bucket(N),
                       .device = (char *)dev,
                       .cc_major = 9,
                       .cc_minor = 0,
                       .version = (char *)kj_version_string(),
                       .values = (char *)values,
                       .gbps = gbps,
                       .us = us,
                       .n = N,
                       .time = 1700000000};
    return r;
}

/* The result a machine's lookup gives: its values, or NULL. */
static const char *lookup(kj_runtime *rt, kj_tuned *t) {
    return kj_tune_db_lookup(rt, "reduce", "reduce_fast", FIXED, N, t) == KJ_OK ? t->values : NULL;
}

static int file_has(const char *name, const char *needle) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s/tuning.db", root, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, needle) != NULL;
}

/* One machine's result is another's, which never tuned: the lookup finds it, and its database keeps
 * it for the next process. */
static void test_shared_result(void **state) {
    (void)state;
    kj_test_log la, lb;
    kj_runtime *a = machine("shared-a", NULL, &la), *b = machine("shared-b", NULL, &lb);
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(a, &d));
    kj__tunedb_device_name(d.name, device);
    kj__tuned_rec r = result(device, "BLOCK_SIZE=512 COARSE_FACTOR=4", 1000.0, 67.1);
    KJ_ASSERT_OK(kj__tuned_store(a, &r, NULL));
    kj_tuned t = KJ_TUNED_INIT;
    assert_non_null(lookup(b, &t));
    assert_string_equal(t.values, "BLOCK_SIZE=512 COARSE_FACTOR=4");
    assert_true(t.gbps == 1000.0 && t.us > 67.0 && t.us < 67.2);
    assert_true(file_has("shared-b", "BLOCK_SIZE=512 COARSE_FACTOR=4\t1000.0"));
    assert_int_equal(lb.warnings, 0);
    kj_stats s = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(a, &s));
    assert_int_equal(s.remote_pushes, 1);
    kj_runtime_destroy(a);
    kj_runtime_destroy(b);
}

/* The faster re-measured result wins, with its numbers, whoever stores last and wherever: on the
 * server, in the files, in the lookups. */
static void test_conflict_rule(void **state) {
    (void)state;
    kj_test_log l1, l2, l3, l4, l5;
    kj_runtime *first = machine("rule-1", NULL, &l1);
    kj__tuned_rec mid = result(device, "BLOCK_SIZE=256 COARSE_FACTOR=8", 2000.0, 33.5);
    KJ_ASSERT_OK(kj__tuned_store(first, &mid, NULL));
    kj_tuned t = KJ_TUNED_INIT;
    /* a slower result on a machine that has the faster one: kept out, with a warning */
    kj_runtime *second = machine("rule-2", NULL, &l2);
    assert_string_equal(lookup(second, &t), "BLOCK_SIZE=256 COARSE_FACTOR=8");
    kj__tuned_rec slow = result(device, "BLOCK_SIZE=64 COARSE_FACTOR=1", 1500.0, 44.7);
    KJ_ASSERT_OK(kj__tuned_store(second, &slow, NULL));
    assert_non_null(strstr(l2.last, "keeps its faster result"));
    assert_string_equal(lookup(second, &t), "BLOCK_SIZE=256 COARSE_FACTOR=8");
    /* a slower result from a machine that never saw the faster one: the server keeps the faster */
    kj__tuned_rec slower = result(device, "BLOCK_SIZE=32 COARSE_FACTOR=1", 900.0, 74.5);
    kj__remote_tune_publish(second->remote, &slower, NULL);
    kj_runtime *third = machine("rule-3", NULL, &l3);
    assert_string_equal(lookup(third, &t), "BLOCK_SIZE=256 COARSE_FACTOR=8");
    /* a faster one replaces it everywhere it is looked up next, numbers and all */
    kj__tuned_rec fast = result(device, "BLOCK_SIZE=1024 COARSE_FACTOR=2", 2500.0, 26.8);
    KJ_ASSERT_OK(kj__tuned_store(third, &fast, NULL));
    kj_runtime *fourth = machine("rule-4", NULL, &l4);
    assert_string_equal(lookup(fourth, &t), "BLOCK_SIZE=1024 COARSE_FACTOR=2");
    assert_true(t.gbps == 2500.0 && t.us > 26.7 && t.us < 26.9);
    /* the first machine's file had the slower one: a new process there merges the faster */
    kj_runtime_destroy(first);
    first = machine("rule-1", NULL, &l5);
    assert_string_equal(lookup(first, &t), "BLOCK_SIZE=1024 COARSE_FACTOR=2");
    assert_true(file_has("rule-1", "BLOCK_SIZE=1024 COARSE_FACTOR=2\t2500.0"));
    assert_false(file_has("rule-1", "COARSE_FACTOR=8\t2000.0"));
    kj_runtime_destroy(first);
    kj_runtime_destroy(second);
    kj_runtime_destroy(third);
    kj_runtime_destroy(fourth);
}

/* Results of another device or compute capability are not this device's. */
static void test_other_devices_apart(void **state) {
    (void)state;
    kj_test_log la, lb;
    kj_runtime *a = machine("apart-a", NULL, &la);
    kj__tuned_rec other = result("NVIDIA A100-SXM4-80GB", "BLOCK_SIZE=128 COARSE_FACTOR=16", 9999.0, 1.0);
    other.fixed = (char *)"OP=max T=f32";
    kj__remote_tune_publish(a->remote, &other, NULL);
    kj__tuned_rec cc = result(device, "BLOCK_SIZE=128 COARSE_FACTOR=16", 9999.0, 1.0);
    cc.fixed = (char *)"OP=max T=f32";
    cc.cc_major = 8;
    kj__remote_tune_publish(a->remote, &cc, NULL);
    kj_runtime *b = machine("apart-b", NULL, &lb);
    kj_tuned t = KJ_TUNED_INIT;
    assert_int_equal(kj_tune_db_lookup(b, "reduce", "reduce_fast", "OP=max T=f32", N, &t), KJ_ERR_NOT_FOUND);
    kj_runtime_destroy(a);
    kj_runtime_destroy(b);
}

/* With a secret, results are signed; another secret refuses them with a warning and tunes nothing in;
 * a process without a secret takes them. */
static void test_signed_results(void **state) {
    (void)state;
    kj_test_log la, lc;
    kj_runtime *a = machine("signed-a", "the fleet's tuning secret, 1", &la);
    kj__tuned_rec r = result(device, "BLOCK_SIZE=256 COARSE_FACTOR=2", 3000.0, 22.4);
    r.fixed = (char *)"OP=min T=f32";
    KJ_ASSERT_OK(kj__tuned_store(a, &r, NULL));
    /* b's log keeps every warning: the results of the tests before, unsigned, are refused too */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/signed-b", root);
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.cache_dir = dir;
    o.remote_cache = url;
    o.remote_secret = "another secret, not the fleet's";
    all_log lb = {0};
    o.log = all_log_fn;
    o.log_user = &lb;
    kj_runtime *b = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &b));
    kj_tuned t = KJ_TUNED_INIT;
    assert_int_equal(kj_tune_db_lookup(b, "reduce", "reduce_fast", "OP=min T=f32", N, &t), KJ_ERR_NOT_FOUND);
    assert_non_null(strstr(lb.all, "OP=min T=f32\t24 of kernjit:tune:v1:kernjit stub device|9.0|"));
    assert_non_null(strstr(lb.all, "signed with another secret"));
    assert_non_null(strstr(lb.all, "not signed, and this process requires signatures"));
    kj_runtime *c = machine("signed-c", NULL, &lc);
    KJ_ASSERT_OK(kj_tune_db_lookup(c, "reduce", "reduce_fast", "OP=min T=f32", N, &t));
    assert_string_equal(t.values, "BLOCK_SIZE=256 COARSE_FACTOR=2");
    kj_runtime_destroy(a);
    kj_runtime_destroy(b);
    kj_runtime_destroy(c);
}

/* What a tuning run measured here, for kj__tuned_store's evidence: variant -> GB/s, NULL-ended. */
typedef struct measurement {
    const char *values;
    double gbps;
} measurement;

static double measured_here(const char *values, void *user) {
    for (const measurement *m = user; m->values; m++)
        if (strcmp(m->values, values) == 0) return m->gbps;
    return -1;
}

/* A bogus shared result (99999 GB/s for the slowest variant) once pinned the fleet for good, the
 * faster one being kept everywhere: a tuning run that measures that variant at far less replaces it,
 * in its file and on the server. Without that evidence, or within the margin of noise, the faster
 * record stays. */
static void test_unreproduced_result_replaced(void **state) {
    (void)state;
    const char *fixed = "OP=max T=i32";
    kj_test_log l1, l2, l3;
    kj_runtime *m1 = machine("bogus-1", NULL, &l1);
    kj__tuned_rec bogus = result(device, "BLOCK_SIZE=32 COARSE_FACTOR=1", 99999.0, 0.7);
    bogus.fixed = (char *)fixed;
    kj__remote_tune_publish(m1->remote, &bogus, NULL);
    kj_tuned t = KJ_TUNED_INIT;
    KJ_ASSERT_OK(kj_tune_db_lookup(m1, "reduce", "reduce_fast", fixed, N, &t)); /* merged into m1's file */
    assert_string_equal(t.values, "BLOCK_SIZE=32 COARSE_FACTOR=1");
    kj__tuned_rec real = result(device, "BLOCK_SIZE=256 COARSE_FACTOR=8", 2000.0, 33.5);
    real.fixed = (char *)fixed;
    /* no evidence against it, or a claim within the margin (1.4 times what was measured): it stays */
    KJ_ASSERT_OK(kj__tuned_store(m1, &real, NULL));
    assert_non_null(strstr(l1.last, "keeps its faster result"));
    measurement close[] = {{"BLOCK_SIZE=32 COARSE_FACTOR=1", 99999.0 / 1.4}, {NULL, 0}};
    kj__tunedb_measured near = {measured_here, close};
    KJ_ASSERT_OK(kj__tuned_store(m1, &real, &near));
    KJ_ASSERT_OK(kj_tune_db_lookup(m1, "reduce", "reduce_fast", fixed, N, &t));
    assert_string_equal(t.values, "BLOCK_SIZE=32 COARSE_FACTOR=1");
    /* this machine measured that variant at 500 GB/s: the new measurement wins, here and on the server */
    measurement run[] = {
        {"BLOCK_SIZE=256 COARSE_FACTOR=8", 2000.0}, {"BLOCK_SIZE=32 COARSE_FACTOR=1", 500.0}, {NULL, 0}};
    kj__tunedb_measured evidence = {measured_here, run};
    int warnings = l1.warnings;
    KJ_ASSERT_OK(kj__tuned_store(m1, &real, &evidence));
    assert_int_equal(l1.warnings, warnings + 1);
    assert_non_null(strstr(l1.last, "BLOCK_SIZE=32 COARSE_FACTOR=1 at 99999.0 GB/s, was not reproduced here (this run "
                                    "measured 500.0 GB/s of it): replaced by BLOCK_SIZE=256 COARSE_FACTOR=8"));
    KJ_ASSERT_OK(kj_tune_db_lookup(m1, "reduce", "reduce_fast", fixed, N, &t));
    assert_string_equal(t.values, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    assert_false(file_has("bogus-1", "99999.0"));
    kj_runtime *m2 = machine("bogus-2", NULL, &l2);
    KJ_ASSERT_OK(kj_tune_db_lookup(m2, "reduce", "reduce_fast", fixed, N, &t));
    assert_string_equal(t.values, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    assert_true(t.gbps == 2000.0);
    /* and a faster honest result still wins over it, the rule as before */
    kj_runtime *m3 = machine("bogus-3", NULL, &l3);
    KJ_ASSERT_OK(kj_tune_db_lookup(m3, "reduce", "reduce_fast", fixed, N, &t));
    kj__tuned_rec slower = result(device, "BLOCK_SIZE=64 COARSE_FACTOR=4", 1900.0, 35.3);
    slower.fixed = (char *)fixed;
    KJ_ASSERT_OK(kj__tuned_store(m3, &slower, &evidence)); /* its run measured 256/8 at 2000: reproduced */
    assert_non_null(strstr(l3.last, "keeps its faster result"));
    KJ_ASSERT_OK(kj_tune_db_lookup(m3, "reduce", "reduce_fast", fixed, N, &t));
    assert_string_equal(t.values, "BLOCK_SIZE=256 COARSE_FACTOR=8");
    assert_int_equal(l2.warnings, 0);
    kj_runtime_destroy(m1);
    kj_runtime_destroy(m2);
    kj_runtime_destroy(m3);
}

/* `tune --forget` once removed only the file's record: the next runtime merged the server's back. A
 * read-write process removes the matching shared results too (not the others); a read-only one
 * removes none, and says they come back and how to remove them. */
static void test_forget_shared(void **state) {
    (void)state;
    const char *fixed = "OP=prod T=f32";
    kj_test_log la, lc;
    kj_runtime *a = machine("forget-a", NULL, &la);
    kj__tuned_rec r = result(device, "BLOCK_SIZE=512 COARSE_FACTOR=2", 1200.0, 55.9);
    r.fixed = (char *)fixed;
    KJ_ASSERT_OK(kj__tuned_store(a, &r, NULL));
    kj_tune_filter f = KJ_TUNE_FILTER_INIT;
    f.kernel = "reduce";
    f.fixed = "OP=prod";
    size_t removed = 99;
    all_log lr;
    kj_runtime *reader = machine_logged("forget-reader", KJ_REMOTE_READ, KJ_LOG_WARN, &lr);
    KJ_ASSERT_OK(kj_tune_db_forget(reader, &f, &removed));
    assert_int_equal(removed, 0); /* its file had none */
    assert_non_null(strstr(lr.all, "1 shared tuning result matches, and stays on the server: this process only reads "
                                   "it (KERNJIT_REMOTE_MODE=read), so it comes back into the tuning database at a "
                                   "runtime's next first use; remove it with the same `kernjit tune --forget` where "
                                   "KERNJIT_REMOTE_MODE=readwrite"));
    kj_tuned t = KJ_TUNED_INIT;
    all_log lb;
    kj_runtime *b = machine_logged("forget-b", KJ_REMOTE_DEFAULT, KJ_LOG_INFO, &lb);
    KJ_ASSERT_OK(kj_tune_db_lookup(b, "reduce", "reduce_fast", fixed, N, &t)); /* merged into b's file */
    KJ_ASSERT_OK(kj_tune_db_forget(b, &f, &removed));
    assert_int_equal(removed, 1);
    assert_non_null(strstr(lb.all, "removed 1 shared tuning result; machines that merged it keep it until they forget "
                                   "it too"));
    assert_int_equal(lb.counted.warnings, 0);
    kj_runtime_destroy(b);
    b = machine("forget-b", NULL, &lc); /* its next process: nothing comes back */
    assert_int_equal(kj_tune_db_lookup(b, "reduce", "reduce_fast", fixed, N, &t), KJ_ERR_NOT_FOUND);
    kj_runtime *c = machine("forget-c", NULL, &lc);
    assert_int_equal(kj_tune_db_lookup(c, "reduce", "reduce_fast", fixed, N, &t), KJ_ERR_NOT_FOUND);
    /* the other results stay shared */
    KJ_ASSERT_OK(kj_tune_db_lookup(c, "reduce", "reduce_fast", FIXED, N, &t));
    assert_int_equal(lc.warnings, 0);
    kj_runtime_destroy(a);
    kj_runtime_destroy(b);
    kj_runtime_destroy(c);
    kj_runtime_destroy(reader);
}

/* Merging the server's results into the file once rewrote it per record, under the tuning lock,
 * inside the first kj_reduce (4096 records: 112 s). It is one update now: the file is renamed into
 * place once, whatever the count. */
static void test_merge_rewrites_once(void **state) {
    (void)state;
    enum { RECORDS = 4096 }; /* the most a runtime reads */
    kj_test_log la;
    kj_runtime *a = machine("many-a", NULL, &la);
    char hash[600];
    snprintf(hash, sizeof hash, "kernjit:tune:v1:%s|9.0|%s|nvrtc%d", device, kj_version_string(), kj__nvrtc_version());
    const char *del[] = {"DEL", hash}; /* the results of the tests before: the count is then exactly ours */
    kj__reply_free(kj__remote_call(a->remote, 2, del, NULL, "clearing", "the test fails"));
    for (int i = 0; i < RECORDS; i++) {
        char kernel[32];
        snprintf(kernel, sizeof kernel, "many%04d", i);
        kj__tuned_rec r = result(device, "BLOCK_SIZE=256 COARSE_FACTOR=8", 100.0 + i, 10.0);
        r.kernel = kernel;
        kj__remote_tune_publish(a->remote, &r, NULL);
    }
    assert_int_equal(la.warnings, 0);
    kj_test_log lb;
    kj_runtime *b = machine("many-b", NULL, &lb);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/many-b", root);
    int watch = inotify_init1(IN_NONBLOCK);
    assert_true(watch >= 0);
    assert_true(inotify_add_watch(watch, dir, IN_MOVED_TO) >= 0);
    double t0 = kj__now_ms();
    kj_tuned t = KJ_TUNED_INIT;
    KJ_ASSERT_OK(kj_tune_db_lookup(b, "many4095", "reduce_fast", FIXED, N, &t));
    double ms = kj__now_ms() - t0;
    assert_true(t.gbps == 100.0 + 4095);
    int renames = 0;
    char events[1 << 16];
    for (ssize_t got; (got = read(watch, events, sizeof events)) > 0;)
        for (char *p = events; p < events + got;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            renames += e->len && strcmp(e->name, "tuning.db") == 0;
            p += sizeof *e + e->len;
        }
    close(watch);
    printf("merged %d shared results in %.0f ms, %d rewrite(s) of the file\n", RECORDS, ms, renames);
    assert_int_equal(renames, 1);
    assert_true(ms < 20000);
    assert_int_equal(lb.warnings, 0);
    kj_runtime_destroy(a);
    kj_runtime_destroy(b);
}

/* ---- threads ---------------------------------------------------------------------------------- */

#define THREADS 8
#define PER_THREAD 4

typedef struct worker {
    kj_runtime *rt;
    int index;
    unsigned long run;
    int ok;
    kj_origin origins[PER_THREAD];
} worker;

static void *compile_some(void *arg) {
    worker *w = arg;
    w->ok = 1;
    for (int i = 0; i < PER_THREAD; i++) {
        char src[512];
        snprintf(src, sizeof src,
                 "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] += %d.0f; } // %lu thread %d kernel %d\n",
                 w->index * PER_THREAD + i, w->run, w->index, i);
        kj_request req = {.size = sizeof(kj_request), .kernel = "threads.cu", .source_text = src};
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        if (kj_compile(w->rt, &req, &r) != KJ_OK) w->ok = 0;
        else w->origins[i] = r.origin;
    }
    return NULL;
}

/* Runs THREADS threads on rt, each compiling PER_THREAD kernels of its own; every kernel's origin
 * must be want. */
static void all_threads(kj_runtime *rt, unsigned long run, kj_origin want) {
    pthread_t ids[THREADS];
    worker w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t] = (worker){.rt = rt, .index = t, .run = run};
        assert_int_equal(pthread_create(&ids[t], NULL, compile_some, &w[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) pthread_join(ids[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        assert_true(w[t].ok);
        for (int i = 0; i < PER_THREAD; i++) assert_int_equal(w[t].origins[i], want);
    }
}

/* Threads of one machine compile and push at once; threads of another fetch every kernel. */
static void test_threads_share_the_tier(void **state) {
    (void)state;
    unsigned long run = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
    kj_test_log la, lb;
    kj_runtime *a = machine("threads-a", NULL, &la);
    all_threads(a, run, KJ_ORIGIN_COMPILED);
    kj_remote_transfer t = KJ_REMOTE_TRANSFER_INIT;
    KJ_ASSERT_OK(kj_remote_push(a, NULL, &t)); /* waits for the background pushes */
    assert_int_equal(t.moved, 0);
    assert_int_equal(t.failed, 0);
    kj_stats s = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(a, &s));
    assert_int_equal(s.remote_pushes, THREADS * PER_THREAD);
    assert_int_equal(s.remote_misses, THREADS * PER_THREAD);
    kj_runtime *b = machine("threads-b", NULL, &lb);
    all_threads(b, run, KJ_ORIGIN_REMOTE);
    KJ_ASSERT_OK(kj_runtime_stats(b, &s));
    assert_int_equal(s.remote_hits, THREADS * PER_THREAD);
    assert_int_equal(s.compiles, 0);
    assert_int_equal(la.warnings + lb.warnings, 0);
    kj_runtime_destroy(a);
    kj_runtime_destroy(b);
}

/* ---- SIGPIPE ---------------------------------------------------------------------------------- */

/* A server that takes one connection, reads a few bytes of the command and closes it. */
static void *hang_up(void *arg) {
    int listener = *(int *)arg, fd = accept(listener, NULL, NULL);
    char some[64];
    if (fd >= 0) {
        ssize_t n = recv(fd, some, sizeof some, 0);
        (void)n;
        close(fd); /* with unread bytes: a reset, and the client's next write fails */
    }
    return NULL;
}

/* On a unix socket a write to a closed peer raises SIGPIPE at once (on TCP, after a reset). */
static void test_no_sigpipe(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_DFL);
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/hangs-up.sock", root);
    assert_int_equal(bind(listener, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(listener, 1), 0);
    pthread_t server;
    assert_int_equal(pthread_create(&server, NULL, hang_up, &listener), 0);
    kj__remote_config cfg = {.url = (char *)"unix:// (hangs up)",
                             .socket_path = a.sun_path,
                             .connect_timeout_ms = 1000,
                             .timeout_ms = 5000,
                             .mode = KJ_REMOTE_READWRITE};
    kj__redis *r = NULL;
    KJ_ASSERT_OK(kj__redis_create(&cfg, NULL, &r));
    size_t size = 16u << 20; /* more than the socket buffers take */
    char *value = calloc(1, size);
    const char *argv[] = {"SET", "k", value};
    size_t lens[] = {3, 1, size};
    kj__redis_cmd cmd = {3, argv, lens, 0};
    kj__reply *reply = NULL;
    char why[512] = "";
    assert_int_equal(kj__redis_exec(r, 1, &cmd, &reply, why, sizeof why), KJ__REDIS_FAILED);
    assert_null(reply);
    assert_non_null(strstr(why, "the server closed the connection"));
    free(value);
    kj__redis_destroy(r);
    pthread_join(server, NULL);
    close(listener);
    unlink(a.sun_path);
}

/* ---- the cut-off -------------------------------------------------------------------------------- */

/* A server that answers one connection a byte every 50 ms, without end. */
static void *trickle(void *arg) {
    int listener = *(int *)arg, fd = accept(listener, NULL, NULL);
    char some[64];
    if (fd < 0) return NULL;
    ssize_t n = recv(fd, some, sizeof some, 0);
    (void)n;
    for (int i = 0; i < 200 && send(fd, i ? "x" : "+", 1, MSG_NOSIGNAL) == 1; i++) usleep(50000);
    close(fd);
    return NULL;
}

/* A call under a cut-off ends at it, however long its operation timeout, and says why; later calls
 * are skipped. */
static void test_cut_off(void **state) {
    (void)state;
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/trickles.sock", root);
    assert_int_equal(bind(listener, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(listener, 1), 0);
    pthread_t server;
    assert_int_equal(pthread_create(&server, NULL, trickle, &listener), 0);
    kj__remote_config cfg = {.url = (char *)"unix:// (trickles)",
                             .socket_path = a.sun_path,
                             .connect_timeout_ms = 1000,
                             .timeout_ms = 8000,
                             .mode = KJ_REMOTE_READWRITE};
    kj__redis *r = NULL;
    KJ_ASSERT_OK(kj__redis_create(&cfg, NULL, &r));
    double t0 = kj__now_ms();
    kj__redis_cut_off(r, t0 + 300, "cut off for the test");
    const char *argv[] = {"PING"};
    kj__redis_cmd cmd = {1, argv, NULL, 0};
    kj__reply *reply = NULL;
    char why[512] = "";
    assert_int_equal(kj__redis_exec(r, 1, &cmd, &reply, why, sizeof why), KJ__REDIS_FAILED);
    double took = kj__now_ms() - t0;
    assert_string_equal(why, "cut off for the test");
    assert_true(took >= 290 && took < 2000);
    assert_int_equal(kj__redis_exec(r, 1, &cmd, &reply, why, sizeof why), KJ__REDIS_SKIPPED);
    assert_string_equal(why, "cut off for the test");
    assert_false(kj__redis_failing(r)); /* its own cut-off is not the server's failure */
    kj__redis_destroy(r);
    pthread_join(server, NULL);
    close(listener);
    unlink(a.sun_path);
}

int main(int argc, char **argv) {
    url = getenv("KJ_TEST_REDIS_URL");
    if (!url || argc < 2) {
        fprintf(stderr, "usage: with-redis.sh test-remote-lib path/to/libstub-cuda.so\n");
        return 1;
    }
    setenv("KERNJIT_LIBCUDA", argv[1], 1);
    unsetenv("KERNJIT_REMOTE_SECRET");
    unsetenv("KERNJIT_REMOTE_MODE");
    root = kj_test_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_result),
        cmocka_unit_test(test_conflict_rule),
        cmocka_unit_test(test_other_devices_apart),
        cmocka_unit_test(test_signed_results),
        cmocka_unit_test(test_unreproduced_result_replaced),
        cmocka_unit_test(test_forget_shared),
        cmocka_unit_test(test_merge_rewrites_once),
        cmocka_unit_test(test_threads_share_the_tier),
        cmocka_unit_test(test_no_sigpipe),
        cmocka_unit_test(test_cut_off),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kj_test_rmdir(root);
    return rc;
}
