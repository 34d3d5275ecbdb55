/* Many threads of one runtime asking for dozens of kernel variants at once get the right kernels
 * (DEVELOPERS.md, "Concurrency"). A single-threaded pass first records what each variant compiles to (its
 * key and its binary); then THREADS threads share one runtime and ask for every variant, each in its
 * own order, so that every variant is asked for by several threads at the same moment:
 *   - kj_compile on a compile-only runtime with a disk cache: every answer has the variant's key, and
 *     the cache ends with exactly one valid entry a variant, byte for byte the single-threaded binary,
 *     and no temporary file;
 *   - kj_kernel_get on the stub driver's device (argv[1]): the variant's key and defines, one handle a
 *     request whichever thread asked, and launches from every thread at once (dynamic shared memory
 *     above the default, so that the opt-in path is taken concurrently);
 *   - separate runtimes, one a thread, on one cache folder;
 *   - one kernel launched by threads that raise its shared-memory limit (the locked path) while
 *     others launch it without asking for any (the unlocked fast path);
 *   - kj_reduce_async from every thread, whose plans (kj__config_resolve) are read without a lock,
 *     while one thread stores tuning results that make them stale.
 * Run under ThreadSanitizer by scripts/test (build-tsan) and under helgrind by the valgrind setup. */
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>

#include "cache/cache.h"
#include "tunedb/tunedb.h"

#define THREADS 8
#define KINDS 2
#define FACTORS 24
#define VARIANTS (KINDS * FACTORS)

static const char *SOURCE = "//@kernjit entry scale\n"
                            "//@kernjit param ELEM float double = float\n"
                            "//@kernjit param FACTOR 1..24 = 1\n"
                            "extern \"C\" __global__ void scale(ELEM *x, int n) {\n"
                            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    if (i < n) x[i] *= (ELEM)FACTOR;\n"
                            "}\n";

typedef struct variant {
    char factor[8];
    kj_define defines[2];
    char key[33]; /* from the single-threaded pass */
    size_t binary_bytes;
    char joined[64]; /* "ELEM=double FACTOR=3": the canonical define list */
} variant;

static variant variants[VARIANTS];
static char *dirs_to_remove[6];

static void make_variants(void) {
    for (int v = 0; v < VARIANTS; v++) {
        variant *x = &variants[v];
        snprintf(x->factor, sizeof x->factor, "%d", v % FACTORS + 1);
        x->defines[0] = (kj_define){"ELEM", v < FACTORS ? "float" : "double"};
        x->defines[1] = (kj_define){"FACTOR", x->factor};
        snprintf(x->joined, sizeof x->joined, "ELEM=%.8s FACTOR=%.7s", x->defines[0].value, x->factor);
    }
}

static kj_request request_for(const variant *x) {
    kj_request r = {.size = sizeof(kj_request),
                    .kernel = "scale.cu",
                    .source_text = SOURCE,
                    .defines = x->defines,
                    .define_count = 2};
    return r;
}

static kj_runtime *runtime(const char *dir, int device) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = device;
    o.cache_dir = dir;
    o.cache_mode = dir ? KJ_CACHE_DISK : KJ_CACHE_MEMORY_ONLY;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    return rt;
}

/* The payload of the cache entry for key in dir/sm_90 (malloc'd), or NULL. */
static uint8_t *entry_payload(const char *dir, const char *key, size_t *len) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sm_90/%s.cubin", dir, key);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *desc;
    size_t dlen;
    const uint8_t *payload;
    uint32_t flags;
    if (kj__cache_parse_entry(buf, n, NULL, &desc, &dlen, &payload, len, &flags) != 0) return NULL;
    uint8_t *out = malloc(*len);
    if (out) memcpy(out, payload, *len);
    return out;
}

static size_t count_prefix(const char *dir, const char *prefix, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
        else if (suffix && len > strlen(suffix) && strcmp(e->d_name + len - strlen(suffix), suffix) == 0) n++;
    }
    closedir(d);
    return n;
}

/* ---- the single-threaded reference ----------------------------------------------------------- */

static char *reference_dir;

static void reference(void) {
    reference_dir = kj_test_tmpdir();
    dirs_to_remove[0] = reference_dir;
    kj_runtime *rt = runtime(reference_dir, KJ_DEVICE_NONE);
    for (int v = 0; v < VARIANTS; v++) {
        kj_request r = request_for(&variants[v]);
        kj_compile_result res = KJ_COMPILE_RESULT_INIT;
        KJ_ASSERT_OK(kj_compile(rt, &r, &res));
        snprintf(variants[v].key, sizeof variants[v].key, "%s", res.key);
        variants[v].binary_bytes = res.binary_bytes;
        for (int w = 0; w < v; w++)
            if (strcmp(variants[w].key, res.key) == 0) fail_msg("variants %d and %d share the key %s", w, v, res.key);
    }
    kj_runtime_destroy(rt);
}

/* ---- kj_compile from many threads ------------------------------------------------------------ */

typedef struct worker {
    kj_runtime *rt;
    int index;
    int errors;
    char message[512];
    kj_kernel *kernels[VARIANTS]; /* kj_kernel_get: what this thread got for each variant */
    pthread_barrier_t *start;
} worker;

static void note(worker *w, const char *fmt, const char *a, const char *b) {
    if (w->errors++ == 0) snprintf(w->message, sizeof w->message, fmt, a, b);
}

/* Thread i asks for the variants from (i * 7) on: every variant has several threads on it at once. */
static void *compile_worker(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int j = 0; j < VARIANTS; j++) {
        const variant *x = &variants[(w->index * 7 + j) % VARIANTS];
        kj_request r = request_for(x);
        kj_compile_result res = KJ_COMPILE_RESULT_INIT;
        if (kj_compile(w->rt, &r, &res) != KJ_OK) {
            note(w, "kj_compile %s: %s", x->joined, kj_last_error());
            continue;
        }
        if (strcmp(res.key, x->key) != 0) note(w, "%s: key %s", x->joined, res.key);
        if (res.binary_bytes != x->binary_bytes) note(w, "%s: a binary of another size (%s)", x->joined, "");
    }
    return NULL;
}

static void run_workers(kj_runtime *rt, void *(*fn)(void *), worker *workers) {
    pthread_t t[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i] = (worker){.rt = rt, .index = i, .start = &start};
        assert_int_equal(pthread_create(&t[i], NULL, fn, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        if (workers[i].errors)
            fail_msg("thread %d: %d error(s), the first: %s", i, workers[i].errors, workers[i].message);
}

static void test_compile_from_threads(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    dirs_to_remove[1] = dir;
    kj_runtime *rt = runtime(dir, KJ_DEVICE_NONE);
    static worker workers[THREADS];
    run_workers(rt, compile_worker, workers);
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.requests, THREADS * VARIANTS);
    assert_true(st.compiles >= VARIANTS); /* threads that met an uncached variant together each compiled it */
    assert_int_equal(st.compile_errors, 0);
    assert_int_equal(st.bad_entries, 0);
    assert_int_equal(st.store_failures, 0);
    kj_runtime_destroy(rt);
    /* exactly one entry a variant, each the single-threaded binary; no temporary file */
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm_90", dir);
    assert_int_equal(count_prefix(sub, NULL, ".cubin"), VARIANTS);
    assert_int_equal(count_prefix(sub, ".tmp-", NULL), 0);
    for (int v = 0; v < VARIANTS; v++) {
        size_t a_len = 0, b_len = 0;
        uint8_t *a = entry_payload(reference_dir, variants[v].key, &a_len);
        uint8_t *b = entry_payload(dir, variants[v].key, &b_len);
        if (!a || !b) fail_msg("%s: no valid entry %s", variants[v].joined, variants[v].key);
        assert_int_equal(a_len, b_len);
        assert_memory_equal(a, b, a_len);
        free(a);
        free(b);
    }
}

/* ---- kj_kernel_get and launches from many threads (stub device) -------------------------------- */

static void *get_worker(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int j = 0; j < VARIANTS; j++) {
        int v = (w->index * 7 + j) % VARIANTS;
        const variant *x = &variants[v];
        kj_request r = request_for(x);
        kj_kernel *k;
        if (kj_kernel_get(w->rt, &r, &k, NULL) != KJ_OK) {
            note(w, "kj_kernel_get %s: %s", x->joined, kj_last_error());
            continue;
        }
        w->kernels[v] = k;
        kj_kernel_info info = KJ_KERNEL_INFO_INIT;
        if (kj_kernel_query(k, &info) != KJ_OK) {
            note(w, "kj_kernel_query %s: %s", x->joined, kj_last_error());
            continue;
        }
        if (strcmp(info.key, x->key) != 0) note(w, "%s: key %s", x->joined, info.key);
        if (strcmp(info.defines, x->joined) != 0) note(w, "%s: defines %s", x->joined, info.defines);
        if (strcmp(info.lowered_name, "scale") != 0) note(w, "%s: symbol %s", x->joined, info.lowered_name);
        /* every thread launches every kernel, with more dynamic shared memory than the default */
        kj_devptr data = 0;
        int n = 0;
        void *args[] = {&data, &n};
        kj_launch_config cfg = {
            sizeof(kj_launch_config), {1, 1, 1}, {32, 1, 1}, (unsigned)(49152 + 1024 * (w->index + 1)), NULL, 0};
        if (kj_kernel_launch(k, &cfg, args) != KJ_OK) note(w, "launch %s: %s", x->joined, kj_last_error());
        int blocks;
        if (kj_kernel_occupancy(k, 32 << (j % 5), 0, &blocks) != KJ_OK)
            note(w, "occupancy %s: %s", x->joined, kj_last_error());
    }
    return NULL;
}

static void test_kernels_from_threads(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    dirs_to_remove[2] = dir;
    kj_runtime *rt = runtime(dir, 0);
    assert_true(kj_runtime_has_device(rt));
    static worker workers[THREADS];
    run_workers(rt, get_worker, workers);
    /* one handle a request, whichever thread got it */
    for (int v = 0; v < VARIANTS; v++)
        for (int i = 1; i < THREADS; i++) assert_ptr_equal(workers[i].kernels[v], workers[0].kernels[v]);
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.requests, THREADS * VARIANTS);
    assert_int_equal(st.compile_errors, 0);
    kj_runtime_destroy(rt);
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm_90", dir);
    assert_int_equal(count_prefix(sub, NULL, ".cubin"), VARIANTS);
    assert_int_equal(count_prefix(sub, ".tmp-", NULL), 0);
}

/* ---- several runtimes at once on one cache folder -------------------------------------------- */

static void *runtime_worker(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(w->start);
    /* each thread its own runtime on the shared folder, as separate programs would have */
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.cache_dir = (const char *)w->rt;
    kj_runtime *rt;
    if (kj_runtime_create(&o, &rt) != KJ_OK) {
        note(w, "kj_runtime_create: %s%s", kj_last_error(), "");
        return NULL;
    }
    for (int j = 0; j < VARIANTS; j += 3) {
        const variant *x = &variants[(w->index * 5 + j) % VARIANTS];
        kj_request r = request_for(x);
        kj_compile_result res = KJ_COMPILE_RESULT_INIT;
        if (kj_compile(rt, &r, &res) != KJ_OK) note(w, "kj_compile %s: %s", x->joined, kj_last_error());
        else if (strcmp(res.key, x->key) != 0) note(w, "%s: key %s", x->joined, res.key);
    }
    kj_runtime_destroy(rt);
    return NULL;
}

static void test_runtimes_sharing_a_folder(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    dirs_to_remove[3] = dir;
    static worker workers[THREADS];
    run_workers((kj_runtime *)dir, runtime_worker, workers); /* the folder rides in the runtime slot */
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm_90", dir);
    assert_int_equal(count_prefix(sub, ".tmp-", NULL), 0);
    kj_runtime *rt = runtime(dir, KJ_DEVICE_NONE);
    uint64_t entries = 0;
    KJ_ASSERT_OK(kj_cache_usage(rt, &entries, NULL, NULL));
    assert_int_equal(entries, count_prefix(sub, NULL, ".cubin"));
    kj_runtime_destroy(rt);
}

/* ---- launches that raise a kernel's shared-memory limit while others launch it ------------------- */

typedef struct launcher {
    kj_kernel *k;
    int raise; /* 1: ask for ever more dynamic shared memory (the locked path); 0: none (the fast path) */
    int index;
    int errors;
    pthread_barrier_t *start;
} launcher;

static void *launch_worker(void *arg) {
    launcher *l = arg;
    pthread_barrier_wait(l->start);
    kj_devptr data = 0;
    int n = 0;
    void *args[] = {&data, &n};
    for (unsigned i = 0; i < 2000; i++) {
        unsigned shared = l->raise ? 49152 + 8 * (i * THREADS + (unsigned)l->index) : 0;
        kj_launch_config cfg = {sizeof(kj_launch_config), {1, 1, 1}, {32, 1, 1}, shared, NULL, 0};
        l->errors += kj_kernel_launch(l->k, &cfg, args) != KJ_OK;
    }
    return NULL;
}

static void test_launches_raise_limits(void **state) {
    (void)state;
    kj_runtime *rt = runtime(NULL, 0);
    kj_request r = request_for(&variants[0]);
    kj_kernel *k;
    KJ_ASSERT_OK(kj_kernel_get(rt, &r, &k, NULL));
    pthread_t t[THREADS];
    launcher l[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        l[i] = (launcher){k, i % 2, i, 0, &start};
        assert_int_equal(pthread_create(&t[i], NULL, launch_worker, &l[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) assert_int_equal(l[i].errors, 0);
    kj_runtime_destroy(rt);
}

/* ---- plans read while the database changes (stub device) ------------------------------------ */

#define PLAN_N 1000 /* reduce_fast's default at this size: 256 threads, COARSE_FACTOR 1 */
#define PLAN_CALLS 300
#define PLAN_STORES 12

static const char *const plan_values[2] = {"BLOCK_SIZE=128 COARSE_FACTOR=1 WAVES=1",
                                           "BLOCK_SIZE=64 COARSE_FACTOR=1 WAVES=1"};

typedef struct planner {
    kj_runtime *rt;
    kj_devptr in, out;
    int index, errors;
    char message[256];
    pthread_barrier_t *start;
} planner;

/* Thread 0 stores PLAN_STORES results, each faster than the one before, alternating between two
 * configurations; the others call kj_reduce_async, each answer being the default or one of those. */
static void *plan_worker(void *arg) {
    planner *p = arg;
    pthread_barrier_wait(p->start);
    if (p->index == 0) {
        kj_device_info info = KJ_DEVICE_INFO_INIT;
        char device[256];
        if (kj_runtime_device(p->rt, &info) != KJ_OK) p->errors++;
        kj__tunedb_device_name(info.name, device);
        for (int i = 0; i < PLAN_STORES; i++) {
            kj__tuned_rec rec = {.kernel = (char *)"reduce",
                                 .entry = (char *)"reduce_fast",
                                 .fixed = (char *)"OP=sum T=f32",
                                 .bucket = kj__tunedb_bucket(PLAN_N),
                                 .device = device,
                                 .cc_major = info.cc_major,
                                 .cc_minor = info.cc_minor,
                                 .version = (char *)kj_version_string(),
                                 .values = (char *)plan_values[i % 2],
                                 .gbps = 10.0 + i,
                                 .us = 1,
                                 .n = PLAN_N,
                                 .time = 1};
            if (kj__tuned_store(p->rt, &rec, NULL) != KJ_OK && p->errors++ == 0)
                snprintf(p->message, sizeof p->message, "store: %s", kj_last_error());
        }
        return NULL;
    }
    for (int i = 0; i < PLAN_CALLS; i++) {
        kj_reduce_report r = KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = {.size = sizeof o, .report = &r};
        kj_op op = i % 3 ? KJ_OP_SUM : KJ_OP_MAX; /* two plans, one of them changing */
        if (kj_reduce_async(p->rt, op, KJ_TYPE_F32, p->in, PLAN_N, p->out, &o) != KJ_OK) {
            if (p->errors++ == 0) snprintf(p->message, sizeof p->message, "kj_reduce_async: %s", kj_last_error());
            continue;
        }
        int right = r.config_from == KJ_CONFIG_DEFAULT
                        ? r.block_size == 256 && r.coarse_factor == 1
                        : op == KJ_OP_SUM && r.config_from == KJ_CONFIG_TUNED &&
                              (r.block_size == 128 || r.block_size == 64) && r.coarse_factor == 1;
        if (!right && p->errors++ == 0)
            snprintf(p->message, sizeof p->message, "%s: from %d, block %u, coarse %u", kj_op_name(op), r.config_from,
                     r.block_size, r.coarse_factor);
    }
    return NULL;
}

static void test_plans_from_threads(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    dirs_to_remove[5] = dir;
    kj_runtime *rt = runtime(dir, 0);
    kj_devptr in, out;
    KJ_ASSERT_OK(kj_mem_alloc(rt, PLAN_N * 4 + 16 * THREADS, &in));
    out = in + PLAN_N * 4;
    pthread_t t[THREADS];
    planner p[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        /* a result each: the stub driver runs a launch on the thread that makes it */
        p[i] = (planner){.rt = rt, .in = in, .out = out + 16 * (kj_devptr)i, .index = i, .start = &start};
        assert_int_equal(pthread_create(&t[i], NULL, plan_worker, &p[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        if (p[i].errors) fail_msg("thread %d: %d error(s), the first: %s", i, p[i].errors, p[i].message);
    /* after the churn, the call runs the last result stored: no plan made before it is used */
    kj_reduce_report r = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options o = {.size = sizeof o, .report = &r};
    KJ_ASSERT_OK(kj_reduce_async(rt, KJ_OP_SUM, KJ_TYPE_F32, in, PLAN_N, out, &o));
    assert_int_equal(r.config_from, KJ_CONFIG_TUNED);
    assert_int_equal(r.block_size, (PLAN_STORES - 1) % 2 ? 64 : 128);
    KJ_ASSERT_OK(kj_synchronize(rt));
    KJ_ASSERT_OK(kj_mem_free(rt, in));
    kj_runtime_destroy(rt);
}

/* ---- kj_kernel_prefetch (stub device) --------------------------------------------------------- */

static uint64_t compiles_of(kj_runtime *rt) {
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    return st.compiles;
}

static void test_prefetch(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    dirs_to_remove[4] = dir;
    kj_runtime *rt = runtime(dir, 0);
    kj_request reqs[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) reqs[v] = request_for(&variants[v]);

    /* a malformed request is refused at once, naming it, and nothing is queued */
    kj_request mixed[2] = {reqs[0], reqs[1]};
    mixed[1].define_count = 1;
    mixed[1].defines = NULL;
    assert_int_equal(kj_kernel_prefetch(rt, mixed, 2), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "defines is NULL"));
    assert_int_equal(kj_kernel_prefetch(NULL, reqs, 1), KJ_ERR_USAGE);
    assert_int_equal(kj_kernel_prefetch(rt, NULL, 1), KJ_ERR_USAGE);
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, NULL, 0));

    /* one request: whether the get finds it queued (and does it) or running (and waits), it is
     * compiled once, and the first get says so */
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, &reqs[0], 1));
    kj_kernel *k, *again;
    kj_origin origin;
    KJ_ASSERT_OK(kj_kernel_get(rt, &reqs[0], &k, &origin));
    assert_int_equal(origin, KJ_ORIGIN_COMPILED);
    KJ_ASSERT_OK(kj_kernel_get(rt, &reqs[0], &again, &origin));
    assert_ptr_equal(k, again);
    assert_int_equal(origin, KJ_ORIGIN_MEMORY);
    assert_int_equal(compiles_of(rt), 1);

    /* a finished prefetch: the first get is answered from memory but reports the compile */
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, &reqs[1], 1));
    for (int i = 0; i < 6000 && compiles_of(rt) < 2; i++) usleep(10000);
    assert_int_equal(compiles_of(rt), 2);
    KJ_ASSERT_OK(kj_kernel_get(rt, &reqs[1], &k, &origin));
    assert_int_equal(origin, KJ_ORIGIN_COMPILED);
    KJ_ASSERT_OK(kj_kernel_get(rt, &reqs[1], &k, &origin));
    assert_int_equal(origin, KJ_ORIGIN_MEMORY);

    /* every variant, prefetched twice (the second skipped), then asked for by every thread at once */
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, reqs, VARIANTS));
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, reqs, VARIANTS));
    static worker workers[THREADS];
    run_workers(rt, get_worker, workers);
    for (int v = 0; v < VARIANTS; v++)
        for (int i = 1; i < THREADS; i++) assert_ptr_equal(workers[i].kernels[v], workers[0].kernels[v]);
    assert_true(compiles_of(rt) >= VARIANTS);

    /* a prefetch that fails says nothing; the get does the work again and reports why */
    kj_request unknown = {.size = sizeof(kj_request), .kernel = "no_such_kernel"};
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, &unknown, 1));
    assert_int_equal(kj_kernel_get(rt, &unknown, &k, NULL), KJ_ERR_UNKNOWN_KERNEL);
    assert_non_null(strstr(kj_last_error(), "no_such_kernel"));
    kj_runtime_destroy(rt);

    /* kj_reduce_prefetch: what kj_reduce_async will launch (its helper too) is compiled before it asks */
    rt = runtime(NULL, 0);
    kj_devptr in, out;
    KJ_ASSERT_OK(kj_mem_alloc(rt, 4u << 20, &in));
    KJ_ASSERT_OK(kj_mem_alloc(rt, 16, &out));
    KJ_ASSERT_OK(kj_reduce_prefetch(rt, KJ_OP_SUM, KJ_TYPE_F32, 1u << 20, NULL));
    kj_reduce_options segmented = {.size = sizeof(kj_reduce_options), .entry = "reduce_segmented"};
    KJ_ASSERT_OK(kj_reduce_prefetch(rt, KJ_OP_MAX, KJ_TYPE_I32, 1000, &segmented));
    for (int i = 0; i < 6000 && compiles_of(rt) < 3; i++) usleep(10000);
    assert_int_equal(compiles_of(rt), 3);
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &rep};
    KJ_ASSERT_OK(kj_reduce_async(rt, KJ_OP_SUM, KJ_TYPE_F32, in, 1u << 20, out, &o));
    assert_int_equal(rep.origin, KJ_ORIGIN_COMPILED);
    segmented.report = &rep;
    KJ_ASSERT_OK(kj_reduce_async(rt, KJ_OP_MAX, KJ_TYPE_I32, in, 1000, out, &segmented));
    assert_int_equal(rep.origin, KJ_ORIGIN_COMPILED);
    assert_int_equal(compiles_of(rt), 3);
    assert_int_equal(kj_reduce_prefetch(rt, KJ_OP_SUM, KJ_TYPE_F32, 1u << 20,
                                        &(kj_reduce_options){.size = sizeof(kj_reduce_options), .entry = "nope"}),
                     KJ_ERR_USAGE);
    kj_mem_free(rt, in);
    kj_mem_free(rt, out);
    kj_runtime_destroy(rt);

    /* destroyed with work queued and running: it returns, and nothing is left behind */
    rt = runtime(NULL, 0);
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, reqs, VARIANTS));
    kj_runtime_destroy(rt);
    /* a compile-only runtime fills its cache */
    char *only = kj_test_tmpdir();
    rt = runtime(only, KJ_DEVICE_NONE);
    KJ_ASSERT_OK(kj_kernel_prefetch(rt, &reqs[2], 1));
    for (int i = 0; i < 6000 && compiles_of(rt) < 1; i++) usleep(10000);
    kj_runtime_destroy(rt);
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm_90", only);
    assert_int_equal(count_prefix(sub, NULL, ".cubin"), 1);
    kj_test_rmdir(only);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test-threads path/to/libstub-cuda.so\n");
        return 2;
    }
    setenv("KERNJIT_LIBCUDA", argv[1], 1);
    make_variants();
    reference();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_from_threads),
        cmocka_unit_test(test_kernels_from_threads),
        cmocka_unit_test(test_runtimes_sharing_a_folder),
        cmocka_unit_test(test_launches_raise_limits),
        cmocka_unit_test(test_prefetch),
        cmocka_unit_test(test_plans_from_threads),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (int i = 0; i < 6; i++) kj_test_rmdir(dirs_to_remove[i]);
    return rc;
}
