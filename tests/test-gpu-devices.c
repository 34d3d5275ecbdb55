/* One runtime per device (and, on a machine of one GPU, two runtimes on device 0 standing in for two
 * devices): every runtime reduces at the same moment, from a thread of its own, into a fresh cache;
 * each kernel is compiled once in the process (at most one runtime reports "compiled" per
 * configuration, the others load its bytes), and every result equals the CPU reference. Fresh random
 * inputs, results poisoned first, sizes 1, 31, 1000003, 2^24+7. */
#include "test_util.h"

#include <math.h>
#include <pthread.h>

#define MAX_RUNTIMES 8

typedef struct worker {
    kj_runtime *rt;
    pthread_barrier_t *start;
    kj_type type;
    size_t n;
    void *host;
    kj_devptr input, result;
    unsigned char got[8];
    kj_reduce_report report;
    kj_status status;
    char error[2048];
} worker;

static void *reduce_at_once(void *arg) {
    worker *w = arg;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &w->report};
    pthread_barrier_wait(w->start);
    w->status = kj_reduce_async(w->rt, KJ_OP_SUM, w->type, w->input, w->n, w->result, &o);
    if (w->status == KJ_OK) w->status = kj_memcpy_dtoh(w->rt, w->got, w->result, kj_result_size(w->type));
    if (w->status != KJ_OK) snprintf(w->error, sizeof w->error, "%s", kj_last_error());
    return NULL;
}

static void fill(void *buf, kj_type t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kj_test_next(&kj_test_rng);
        if (t == KJ_TYPE_I32) ((int32_t *)buf)[i] = (int32_t)(uint32_t)r;
        else ((float *)buf)[i] = (float)(kj_test_uniform(&kj_test_rng) * 2 - 1);
    }
}

static void test_every_runtime_at_once(void **state) {
    (void)state;
    int devices = 0;
    KJ_ASSERT_OK(kj_device_count(&devices));
    int count = devices < 2 ? 2 : devices > MAX_RUNTIMES ? MAX_RUNTIMES : devices;
    printf("%d runtime(s) on %d device(s)\n", count, devices);
    worker w[MAX_RUNTIMES];
    size_t sizes[4], n_sizes = kj_test_sizes(sizes), max_n = sizes[n_sizes - 1];
    for (int i = 0; i < count; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].report = (kj_reduce_report)KJ_REDUCE_REPORT_INIT;
        assert_non_null(w[i].rt = kj_test_runtime(kj_test_dir, i % devices, NULL));
        assert_non_null(w[i].host = malloc(max_n * 4));
        KJ_ASSERT_OK(kj_mem_alloc(w[i].rt, max_n * 4, &w[i].input));
        KJ_ASSERT_OK(kj_mem_alloc(w[i].rt, 16, &w[i].result));
    }
    const kj_type types[] = {KJ_TYPE_I32, KJ_TYPE_F32};
    for (size_t t = 0; t < 2; t++)
        for (size_t s = 0; s < n_sizes; s++) {
            pthread_barrier_t start;
            pthread_barrier_init(&start, NULL, (unsigned)count);
            pthread_t threads[MAX_RUNTIMES];
            for (int i = 0; i < count; i++) {
                w[i].type = types[t];
                w[i].n = sizes[s];
                w[i].start = &start;
                fill(w[i].host, types[t], sizes[s]);
                KJ_ASSERT_OK(kj_memcpy_htod(w[i].rt, w[i].input, w[i].host, sizes[s] * 4));
                KJ_ASSERT_OK(kj_memset_u8(w[i].rt, w[i].result, 0xA5, 16));
                assert_int_equal(pthread_create(&threads[i], NULL, reduce_at_once, &w[i]), 0);
            }
            int compiled = 0;
            for (int i = 0; i < count; i++) {
                pthread_join(threads[i], NULL);
                if (w[i].status != KJ_OK) fail_msg("runtime %d, n=%zu: %s", i, sizes[s], w[i].error);
                unsigned char want[8];
                double abs_sum;
                KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, types[t], w[i].host, sizes[s], want, &abs_sum));
                double wv = kjtest_result_as_double(types[t], want), gv = kjtest_result_as_double(types[t], w[i].got);
                double tol = kjtest_reduce_tolerance(KJ_OP_SUM, types[t], sizes[s], wv, abs_sum, &w[i].report);
                if (memcmp(want, w[i].got, kj_result_size(types[t])) != 0 && !(fabs(gv - wv) <= tol))
                    fail_msg("runtime %d sum %s n=%zu: GPU %.17g, CPU %.17g, tolerance %.3g", i, kj_type_name(types[t]),
                             sizes[s], gv, wv, tol);
                compiled += w[i].report.origin == KJ_ORIGIN_COMPILED;
            }
            pthread_barrier_destroy(&start);
            /* every runtime ran the same configuration (one device model): one compile at most */
            if (compiled > 1)
                fail_msg("sum %s n=%zu: compiled by %d runtimes", kj_type_name(types[t]), sizes[s], compiled);
        }
    uint64_t compiles = 0;
    for (int i = 0; i < count; i++) {
        kj_stats st = KJ_STATS_INIT;
        KJ_ASSERT_OK(kj_runtime_stats(w[i].rt, &st));
        compiles += st.compiles;
        kj_mem_free(w[i].rt, w[i].input);
        kj_mem_free(w[i].rt, w[i].result);
        kj_runtime_destroy(w[i].rt);
        free(w[i].host);
    }
    printf("%llu compile(s) for %d runtimes\n", (unsigned long long)compiles, count);
    assert_true(compiles >= 1 && compiles <= 2 * n_sizes);
}

KJ_TEST_MAIN(kj_test_setup_gpu_runtime, kj_test_teardown, cmocka_unit_test(test_every_runtime_at_once))
