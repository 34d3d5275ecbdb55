/* A host program that set up CUDA itself: it loads the driver, creates its own context (not the
 * primary one), allocates with cuMemAlloc and makes its own stream, then hands the context to kernjit
 * (kj_runtime_options.cu_context) and reduces its memory on its stream. The memory exists only in that
 * context, so a right answer shows that kernjit ran there. kernjit must leave the context alive.
 *
 * The test reaches the driver as a host program would, by its own dlopen, not through kernjit's
 * internal table. Exits 77 (skipped) without a GPU. */
#include "test_util.h"

#include <dlfcn.h>
#include <math.h>

#include <cuda.h>

/* The driver entry points looked up under their ABI names, with the signatures of those versions:
 * cuda.h maps cuCtxCreate to a newer variant (cuCtxCreate_v4 in CUDA 13) whose arguments differ, so
 * the fields are named apart from cuda.h's macros. */
typedef struct host_driver {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice);
    CUresult (*ctx_destroy)(CUcontext);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*memcpy_htod)(CUdeviceptr, const void *, size_t);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_synchronize)(CUstream);
} host_driver;

static host_driver drv;

#define CU_OK(call)                                                                                                    \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) fail_msg("%s -> CUresult %d", #call, (int)r_);                                         \
    } while (0)

static void load_driver(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) fail_msg("kj_device_count saw a device, but dlopen(libcuda.so.1) failed: %s", dlerror());
    struct {
        const char *symbol;
        void **slot;
    } table[] = {
        {"cuInit", (void **)&drv.init},
        {"cuDeviceGet", (void **)&drv.device_get},
        {"cuCtxCreate_v2", (void **)&drv.ctx_create},
        {"cuCtxDestroy_v2", (void **)&drv.ctx_destroy},
        {"cuCtxSetCurrent", (void **)&drv.ctx_set_current},
        {"cuCtxGetCurrent", (void **)&drv.ctx_get_current},
        {"cuMemAlloc_v2", (void **)&drv.mem_alloc},
        {"cuMemFree_v2", (void **)&drv.mem_free},
        {"cuMemcpyHtoD_v2", (void **)&drv.memcpy_htod},
        {"cuStreamCreate", (void **)&drv.stream_create},
        {"cuStreamDestroy_v2", (void **)&drv.stream_destroy},
        {"cuStreamSynchronize", (void **)&drv.stream_synchronize},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        *table[i].slot = dlsym(h, table[i].symbol);
        if (!*table[i].slot) fail_msg("the driver lacks %s", table[i].symbol);
    }
    CU_OK(drv.init(0));
}

static kj_runtime *runtime_on(CUcontext ctx) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.cu_context = ctx;
    o.cache_dir = kj_test_dir;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    return rt;
}

/* i32 sums (exact) at the awkward sizes, on the host's stream, in the host's context. */
static void test_reduce_in_host_context(void **state) {
    (void)state;
    load_driver();
    CUdevice dev;
    CUcontext ctx;
    CU_OK(drv.device_get(&dev, 0));
    CU_OK(drv.ctx_create(&ctx, 0, dev)); /* current on this thread from here */
    CUstream stream;
    CU_OK(drv.stream_create(&stream, CU_STREAM_NON_BLOCKING));

    kj_runtime *rt = runtime_on(ctx);
    assert_true(kj_runtime_has_device(rt));
    uint64_t seed = kj_test_seed();
    size_t sizes[4], count = kj_test_sizes(sizes);
    for (size_t si = 0; si < count; si++) {
        size_t n = sizes[si];
        int32_t *host = kj_test_random_i32(n, &seed);
        CUdeviceptr in;
        CU_OK(drv.ctx_set_current(ctx)); /* as a host program would, between its own calls */
        CU_OK(drv.mem_alloc(&in, n * sizeof *host));
        CU_OK(drv.memcpy_htod(in, host, n * sizeof *host));
        int32_t expected, got = (int32_t)0xdeadbeef;
        KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, host, n, &expected, NULL));
        kj_reduce_options o = {.size = sizeof(kj_reduce_options), .stream = (kj_stream)stream};
        KJ_ASSERT_OK(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_I32, (kj_devptr)in, n, &got, &o));
        if (got != expected) fail_msg("n = %zu: kj_reduce gave %d, the CPU %d", n, got, expected);
        /* kernjit leaves the runtime's context current: the host's own */
        CUcontext cur = NULL;
        CU_OK(drv.ctx_get_current(&cur));
        assert_ptr_equal(cur, ctx);
        CU_OK(drv.mem_free(in));
        free(host);
    }
    kj_runtime_destroy(rt);

    /* the context is the host's: still usable after kernjit is gone, and the host destroys it */
    CU_OK(drv.ctx_set_current(ctx));
    CUdeviceptr p;
    CU_OK(drv.mem_alloc(&p, 4));
    CU_OK(drv.mem_free(p));
    CU_OK(drv.stream_synchronize(stream));
    CU_OK(drv.stream_destroy(stream));
    CU_OK(drv.ctx_destroy(ctx));
}

/* An f32 sum on the host's stream, asked of two runtimes that share the one host context. */
static void test_float_and_two_runtimes(void **state) {
    (void)state;
    load_driver();
    CUdevice dev;
    CUcontext ctx;
    CU_OK(drv.device_get(&dev, 0));
    CU_OK(drv.ctx_create(&ctx, 0, dev));
    CUstream stream;
    CU_OK(drv.stream_create(&stream, CU_STREAM_NON_BLOCKING));
    kj_runtime *a = runtime_on(ctx), *b = runtime_on(ctx);
    uint64_t seed = kj_test_seed();
    size_t n = kj_test_cap(1000003);
    float *host = malloc(n * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < n; i++) host[i] = (float)(kj_test_uniform(&seed) - 0.5);
    CUdeviceptr in;
    CU_OK(drv.mem_alloc(&in, n * sizeof *host));
    CU_OK(drv.memcpy_htod(in, host, n * sizeof *host));
    float expected;
    double abs_sum;
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_F32, host, n, &expected, &abs_sum));
    kj_runtime *rts[] = {a, b};
    for (int r = 0; r < 2; r++) {
        float got = NAN;
        kj_reduce_report report = KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = {.size = sizeof(kj_reduce_options), .stream = (kj_stream)stream, .report = &report};
        KJ_ASSERT_OK(kj_reduce(rts[r], KJ_OP_SUM, KJ_TYPE_F32, (kj_devptr)in, n, &got, &o));
        double tol = kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, n, expected, abs_sum, &report);
        if (!(fabs((double)got - (double)expected) <= tol))
            fail_msg("runtime %d: kj_reduce gave %.9g, the CPU %.9g (tolerance %.3g)", r, got, expected, tol);
    }
    kj_runtime_destroy(a);
    kj_runtime_destroy(b);
    CU_OK(drv.ctx_set_current(ctx));
    CU_OK(drv.mem_free(in));
    CU_OK(drv.stream_destroy(stream));
    CU_OK(drv.ctx_destroy(ctx));
    free(host);
}

KJ_TEST_MAIN(kj_test_setup_gpu, kj_test_teardown, cmocka_unit_test(test_reduce_in_host_context),
             cmocka_unit_test(test_float_and_two_runtimes))
