/* Several devices in one process, on the stub driver (tests/stub-cuda.c with KJ_STUB_DEVICES=4:
 * four sm_90 devices, a primary context each): one runtime per device; a kernel that every runtime
 * asks for at the same moment, from several threads, is compiled once in the process (the others
 * wait and load the same bytes), and a second process finds it on disk. Real NVRTC compiles; the
 * stub's modules are those cubins. */
#include "test_util.h"

#include <pthread.h>

#define DEVICES 4
#define THREADS_PER_DEVICE 2

static const char *const source = "extern \"C\" __global__ void scale(float *x, float a, int n) {\n"
                                  "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                  "    if (i < n) x[i] *= a;\n"
                                  "}\n";

static int setup(void **state) { return kj_test_setup_stub_devices(state, DEVICES); }

static void test_every_device_listed(void **state) {
    (void)state;
    for (int d = 0; d < DEVICES; d++) {
        kj_device_info info = KJ_DEVICE_INFO_INIT;
        KJ_ASSERT_OK(kj_device_query(d, &info));
        assert_int_equal(info.ordinal, d);
        assert_string_equal(info.arch, "sm_90");
    }
    kj_device_info info = KJ_DEVICE_INFO_INIT;
    assert_int_equal(kj_device_query(DEVICES, &info), KJ_ERR_USAGE);
    assert_string_equal(kj_last_error(), "device 4 does not exist: this machine has 4 devices");
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = DEVICES;
    kj_runtime *rt = NULL;
    assert_int_equal(kj_runtime_create(&o, &rt), KJ_ERR_USAGE);
    assert_null(rt);
    assert_non_null(strstr(kj_last_error(), "device 4 does not exist: this machine has 4 devices"));
}

typedef struct asker {
    kj_runtime *rt;
    pthread_barrier_t *start;
    kj_kernel *kernel;
    kj_status status;
} asker;

static void *ask(void *arg) {
    asker *a = arg;
    kj_request req = {.size = sizeof(kj_request), .kernel = "scale.cu", .source_text = source, .entry = "scale"};
    pthread_barrier_wait(a->start);
    a->status = kj_kernel_get(a->rt, &req, &a->kernel, NULL);
    return NULL;
}

/* Every runtime's threads ask at once; returns the compiles of all the runtimes together. */
static uint64_t ask_at_once(kj_runtime **rts, size_t n_rts) {
    asker askers[DEVICES * THREADS_PER_DEVICE];
    pthread_t threads[DEVICES * THREADS_PER_DEVICE];
    size_t n = n_rts * THREADS_PER_DEVICE;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (size_t i = 0; i < n; i++) {
        askers[i] = (asker){rts[i % n_rts], &start, NULL, KJ_OK};
        assert_int_equal(pthread_create(&threads[i], NULL, ask, &askers[i]), 0);
    }
    for (size_t i = 0; i < n; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    uint64_t compiles = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(askers[i].status, KJ_OK);
        kj_kernel_info info = KJ_KERNEL_INFO_INIT;
        KJ_ASSERT_OK(kj_kernel_query(askers[i].kernel, &info));
        assert_string_equal(info.arch, "sm_90");
        /* each runtime's kernel is its own (its device's module), the same for its threads */
        for (size_t j = 0; j < n; j++)
            if (askers[j].rt == askers[i].rt) assert_ptr_equal(askers[j].kernel, askers[i].kernel);
            else assert_ptr_not_equal(askers[j].kernel, askers[i].kernel);
    }
    for (size_t r = 0; r < n_rts; r++) {
        kj_stats st = KJ_STATS_INIT;
        KJ_ASSERT_OK(kj_runtime_stats(rts[r], &st));
        compiles += st.compiles;
        assert_int_equal(st.compile_errors, 0);
    }
    return compiles;
}

static void test_one_compile_for_every_device(void **state) {
    (void)state;
    kj_runtime *rts[DEVICES];
    for (int d = 0; d < DEVICES; d++) {
        assert_non_null(rts[d] = kj_test_runtime(kj_test_dir, d, NULL));
        kj_device_info info = KJ_DEVICE_INFO_INIT;
        KJ_ASSERT_OK(kj_runtime_device(rts[d], &info));
        assert_int_equal(info.ordinal, d);
    }
    assert_int_equal(ask_at_once(rts, DEVICES), 1);
    for (int d = 0; d < DEVICES; d++) kj_runtime_destroy(rts[d]);

    /* another process: a disk hit on every device, no compile */
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        uint64_t compiles = 0, disk_hits = 0;
        for (int d = 0; d < DEVICES; d++) {
            kj_runtime *rt = kj_test_runtime(kj_test_dir, d, NULL);
            kj_request req = {
                .size = sizeof(kj_request), .kernel = "scale.cu", .source_text = source, .entry = "scale"};
            kj_kernel *k;
            kj_origin origin;
            if (!rt || kj_kernel_get(rt, &req, &k, &origin) != KJ_OK || origin != KJ_ORIGIN_DISK) _exit(1);
            kj_stats st = KJ_STATS_INIT;
            if (kj_runtime_stats(rt, &st) != KJ_OK) _exit(3);
            compiles += st.compiles;
            disk_hits += st.disk_hits;
            kj_runtime_destroy(rt);
        }
        _exit(compiles == 0 && disk_hits == DEVICES ? 0 : 2);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Runtimes with different disk caches (and one with none) still share the compile, and each disk
 * cache gets the entry. */
static void test_one_compile_across_caches(void **state) {
    (void)state;
    char *dirs[2] = {kj_test_tmpdir(), kj_test_tmpdir()};
    kj_runtime *rts[3] = {kj_test_runtime(dirs[0], 0, NULL), kj_test_runtime(dirs[1], 1, NULL),
                          kj_test_runtime(NULL, 2, NULL)};
    for (int i = 0; i < 3; i++) assert_non_null(rts[i]);
    assert_int_equal(ask_at_once(rts, 3), 1);
    for (int i = 0; i < 3; i++) kj_runtime_destroy(rts[i]);
    for (int i = 0; i < 2; i++) {
        kj_runtime *rt = kj_test_runtime(dirs[i], 3, NULL);
        kj_request req = {.size = sizeof(kj_request), .kernel = "scale.cu", .source_text = source, .entry = "scale"};
        kj_kernel *k;
        kj_origin origin;
        KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, &origin));
        assert_int_equal(origin, KJ_ORIGIN_DISK);
        kj_runtime_destroy(rt);
        kj_test_rmdir(dirs[i]);
    }
}

KJ_TEST_MAIN(setup, kj_test_teardown, cmocka_unit_test(test_every_device_listed),
             cmocka_unit_test(test_one_compile_for_every_device), cmocka_unit_test(test_one_compile_across_caches))
