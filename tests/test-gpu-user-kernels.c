/* Users' own kernels on the GPU (tests/kernels/jit_*.cu, link_*.cu), as a user brings them: no
 * metadata, no options. Through the API: a cooperative grid-wide sum (grid.sync()), CUB block and
 * warp reduce, BlockRadixSort and BlockScan, a libcu++ atomic histogram (also through a wrapper
 * file), cuda::std::atomic_ref, cooperative groups' memcpy_async and inclusive_scan, fp16/bf16 axpy,
 * dynamic parallelism without metadata (a tail launch), thread-block clusters with distributed
 * shared memory, a struct passed by value, two sources linked by nvJitLink (a kernel calling a
 * __device__ function and reading a __device__ variable of the other file; also with -dlto, and with
 * the one file given as LTO-IR or PTX compiled beforehand), a template's two instances compiled
 * together (kj_request.entries), an instruction of
 * sm_90a's own set built for that target, and the resources kj_compile reports against the driver's. Through `kernjit launch`: the same features from the
 * command line. Each result against a CPU computation on fresh random inputs (seed printed), outputs
 * poisoned first, at awkward sizes. Exits 77 without a GPU.
 * Usage: test-gpu-user-kernels path/to/kernjit */
#include "test_util.h"

#include <math.h>

static const char *kernjit;
static kj_device_info dev = KJ_DEVICE_INFO_INIT;

static const size_t sizes[] = {1, 31, 1000003, (1u << 24) + 7};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static int setup(void **state) {
    if (kj_test_setup_gpu_runtime(state) != 0) return -1;
    return kj_runtime_device(kj_test_rt, &dev) == KJ_OK ? 0 : -1;
}

static kj_kernel *get(const char *file, const char *entry) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", KJ_TEST_KERNELS, file);
    kj_request req = {.size = sizeof(kj_request), .kernel = path, .entry = entry};
    kj_kernel *k = NULL;
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &req, &k, NULL));
    return k;
}

static kj_devptr upload(const void *host, size_t bytes) {
    kj_devptr d;
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, bytes ? bytes : 1, &d));
    if (bytes) KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, d, host, bytes));
    return d;
}

static kj_devptr poisoned(size_t bytes) {
    kj_devptr d;
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, bytes, &d));
    KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, d, 0xff, bytes));
    return d;
}

static int32_t *random_ints(size_t n, int range) {
    int32_t *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (int32_t)(kj_test_next(&kj_test_rng) % (2u * range + 1)) - range;
    return v;
}

/* ---- cooperative groups: grid.sync() needs a cooperative launch -------------------------------- */

static void test_cooperative_grid_sum(void **state) {
    (void)state;
    kj_kernel *k = get("jit_coop.cu", "coop_sum");
    int per_sm = 0;
    KJ_ASSERT_OK(kj_kernel_occupancy(k, 256, 0, &per_sm));
    unsigned grid = (unsigned)per_sm * (unsigned)dev.sm_count;
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        int32_t *in = random_ints(n, 1000000);
        uint64_t expect = 0;
        for (size_t i = 0; i < n; i++) expect += (uint32_t)in[i];
        kj_devptr din = upload(in, n * 4), scratch, out = poisoned(8);
        KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, 8, &scratch));
        KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, scratch, 0, 8));
        int nn = (int)n;
        void *args[] = {&din, &nn, &scratch, &out};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {grid}, .block = {256}, .cooperative = 1};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_synchronize(kj_test_rt));
        uint64_t got;
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, &got, out, 8));
        if (got != expect)
            fail_msg("coop_sum n=%zu: %llu, expected %llu", n, (unsigned long long)got, (unsigned long long)expect);
        kj_mem_free(kj_test_rt, din), kj_mem_free(kj_test_rt, scratch), kj_mem_free(kj_test_rt, out);
        free(in);
    }
    /* one block more than fits at once is refused, naming the largest grid */
    int nn = 1;
    kj_devptr z = 0;
    void *args[] = {&z, &nn, &z, &z};
    kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {grid + 1}, .block = {256}, .cooperative = 1};
    assert_int_equal(kj_kernel_launch(k, &c, args), KJ_ERR_LIMIT);
    char want[64];
    snprintf(want, sizeof want, "so at most %u blocks", grid);
    assert_non_null(strstr(kj_last_error(), want));
}

/* ---- CUB block and warp primitives ---------------------------------------------------------- */

static void test_cub_block_and_warp(void **state) {
    (void)state;
    kj_kernel *k = get("jit_cub.cu", "cub_sums<256>");
    for (size_t s = 0; s < 3; s++) {
        size_t n = kj_test_cap(sizes[s]), blocks = (n + 4095) / 4096;
        float *in = malloc(n * sizeof *in);
        for (size_t i = 0; i < n; i++) in[i] = (float)((double)(kj_test_next(&kj_test_rng) % 2000001) / 1e6 - 1.0);
        kj_devptr din = upload(in, n * 4), sums = poisoned(blocks * 4), maxes = poisoned(blocks * 8 * 4);
        int nn = (int)n;
        void *args[] = {&din, &nn, &sums, &maxes};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)blocks}, .block = {256}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        float *gs = malloc(blocks * 4), *gm = malloc(blocks * 32);
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, gs, sums, blocks * 4));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, gm, maxes, blocks * 32));
        for (size_t b = 0; b < blocks; b++) {
            double sum = 0, mag = 0;
            for (size_t i = b * 4096; i < n && i < (b + 1) * 4096; i++) sum += in[i], mag += fabs(in[i]);
            /* float additions in CUB's order: within 4096 roundings of the magnitudes */
            if (fabs(gs[b] - sum) > 4096 * 0x1p-24 * mag + 1e-30)
                fail_msg("block %zu of n=%zu: sum %.9g, expected %.9g", b, n, gs[b], sum);
            for (int w = 0; w < 8; w++) {
                float top = -3.0e38f;
                for (int t = w * 32; t < w * 32 + 32; t++)
                    for (size_t i = b * 4096 + (size_t)t; i < n && i < (b + 1) * 4096; i += 256)
                        top = fmaxf(top, in[i]);
                if (gm[b * 8 + (size_t)w] != top)
                    fail_msg("block %zu warp %d of n=%zu: max %.9g, expected %.9g", b, w, n, gm[b * 8 + (size_t)w],
                             top);
            }
        }
        kj_mem_free(kj_test_rt, din), kj_mem_free(kj_test_rt, sums), kj_mem_free(kj_test_rt, maxes);
        free(in), free(gs), free(gm);
    }
}

/* ---- libcu++: cuda::atomic_ref -------------------------------------------------------------- */

static void run_histogram(const char *file) {
    kj_kernel *k = get(file, "histogram");
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        unsigned char *in = malloc(n);
        unsigned expect[256] = {0}, got[256];
        for (size_t i = 0; i < n; i++) expect[in[i] = (unsigned char)kj_test_next(&kj_test_rng)]++;
        kj_devptr din = upload(in, n), bins;
        KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, sizeof got, &bins));
        KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, bins, 0, sizeof got));
        int nn = (int)n;
        void *args[] = {&din, &nn, &bins};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)dev.sm_count * 4}, .block = {256}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, bins, sizeof got));
        assert_memory_equal(got, expect, sizeof got);
        kj_mem_free(kj_test_rt, din), kj_mem_free(kj_test_rt, bins);
        free(in);
    }
}

static void test_atomic_histogram(void **state) {
    (void)state;
    run_histogram("jit_atomic.cu");
    run_histogram("jit_wrapper.cu"); /* a file that only includes jit_atomic.cu and jit_half.cu */
}

/* cuda::std::atomic_ref: a count above a threshold and the largest element */
static void test_std_atomic_ref(void **state) {
    (void)state;
    kj_kernel *k = get("jit_std_atomic.cu", "count_above");
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        int32_t *in = random_ints(n, 1000000), threshold = 250000, largest = INT32_MIN;
        uint64_t expect = 0, got;
        for (size_t i = 0; i < n; i++) {
            expect += in[i] > threshold;
            if (in[i] > largest) largest = in[i];
        }
        kj_devptr din = upload(in, n * 4), count, top;
        KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, 8, &count));
        KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, count, 0, 8));
        int32_t lowest = INT32_MIN, got_top;
        top = upload(&lowest, 4);
        int nn = (int)n;
        void *args[] = {&din, &nn, &threshold, &count, &top};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 255) / 256)}, .block = {256}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, &got, count, 8));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, &got_top, top, 4));
        if (got != expect || got_top != largest)
            fail_msg("n=%zu: %llu above, largest %d; expected %llu, %d", n, (unsigned long long)got, got_top,
                     (unsigned long long)expect, largest);
        kj_mem_free(kj_test_rt, din), kj_mem_free(kj_test_rt, count), kj_mem_free(kj_test_rt, top);
        free(in);
    }
}

/* ---- cooperative groups: memcpy_async and inclusive_scan ------------------------------------- */

static void test_cg_memcpy_async_and_scan(void **state) {
    (void)state;
    kj_kernel *k = get("jit_cg_scan.cu", "warp_scans");
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        int32_t *in = random_ints(n, 1000), *got = malloc(n * 4);
        kj_devptr din = upload(in, n * 4), dout = poisoned(n * 4);
        int nn = (int)n;
        void *args[] = {&din, &dout, &nn};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 255) / 256)}, .block = {256}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, dout, n * 4));
        int32_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            sum = i % 32 ? sum + in[i] : in[i]; /* the warps' segments start at multiples of 32 */
            if (got[i] != sum) fail_msg("n=%zu [%zu]: %d, expected %d", n, i, got[i], sum);
        }
        kj_mem_free(kj_test_rt, din), kj_mem_free(kj_test_rt, dout);
        free(in), free(got);
    }
}

/* ---- CUB: BlockRadixSort and BlockScan ------------------------------------------------------- */

static int by_value(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void test_cub_sort_and_scan(void **state) {
    (void)state;
    kj_kernel *k = get("jit_cub_sort.cu", "sort_and_scan");
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        uint32_t *keys = malloc(n * 4), *sorted = malloc(n * 4);
        int32_t *values = random_ints(n, 1000), *prefix = malloc(n * 4);
        for (size_t i = 0; i < n; i++) keys[i] = (uint32_t)kj_test_next(&kj_test_rng);
        kj_devptr dkeys = upload(keys, n * 4), dvalues = upload(values, n * 4), dsorted = poisoned(n * 4),
                  dprefix = poisoned(n * 4);
        int nn = (int)n;
        void *args[] = {&dkeys, &dsorted, &dvalues, &dprefix, &nn};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 511) / 512)}, .block = {128}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, sorted, dsorted, n * 4));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, prefix, dprefix, n * 4));
        for (size_t b = 0; b < n; b += 512) {
            size_t m = n - b < 512 ? n - b : 512;
            qsort(keys + b, m, 4, by_value);
            if (memcmp(keys + b, sorted + b, m * 4) != 0) fail_msg("n=%zu: the block at %zu is not sorted right", n, b);
            int32_t sum = 0;
            for (size_t i = b; i < b + m; i++) {
                if (prefix[i] != sum) fail_msg("n=%zu [%zu]: prefix %d, expected %d", n, i, prefix[i], sum);
                sum += values[i];
            }
        }
        kj_mem_free(kj_test_rt, dkeys), kj_mem_free(kj_test_rt, dvalues), kj_mem_free(kj_test_rt, dsorted),
            kj_mem_free(kj_test_rt, dprefix);
        free(keys), free(sorted), free(values), free(prefix);
    }
}

/* ---- fp16 / bf16 ---------------------------------------------------------------------------- */

/* v rounded to a binary format with `digits` significant bits and least exponent emin (normal), to
 * nearest, ties to even: what one hardware operation gives when v is its exact result. */
static double round_to(double v, int digits, int emin) {
    if (v == 0 || !isfinite(v)) return v;
    int e;
    frexp(v, &e); /* v = f * 2^e, 0.5 <= |f| < 1 */
    int shift = (e - 1 < emin ? emin : e - 1) - (digits - 1);
    return nearbyint(ldexp(v, -shift)) * ldexp(1.0, shift);
}
static double half_value(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h >> 15 ? -v : v;
}
static uint16_t to_half(double v) { /* v is a half value already */
    uint16_t sign = v < 0 ? 0x8000 : 0;
    v = fabs(v);
    if (v < 0x1p-14) return sign | (uint16_t)ldexp(v, 24);
    int e;
    double f = frexp(v, &e);
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)(ldexp(f, 11) - 1024);
}
static double bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t to_bf16(double v) { /* v is a bf16 value already */
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static void test_half_and_bfloat(void **state) {
    (void)state;
    for (int bf = 0; bf < 2; bf++) {
        kj_kernel *k = get("jit_half.cu", bf ? "axpy_bf16" : "axpy_half");
        int digits = bf ? 8 : 11, emin = bf ? -126 : -14;
        for (size_t s = 0; s < 3; s++) {
            size_t n = kj_test_cap(sizes[s]);
            uint16_t *x = malloc(n * 2), *y = malloc(n * 2), *got = malloc(n * 2);
            for (size_t i = 0; i < n; i++) {
                double a = round_to((double)(kj_test_next(&kj_test_rng) % 20001) / 1000 - 10, digits, emin);
                double b = round_to((double)(kj_test_next(&kj_test_rng) % 20001) / 1000 - 10, digits, emin);
                x[i] = bf ? to_bf16(a) : to_half(a);
                y[i] = bf ? to_bf16(b) : to_half(b);
            }
            float alpha = 1.7f;
            kj_devptr dx = upload(x, n * 2), dy = upload(y, n * 2);
            int nn = (int)n;
            void *args[] = {&nn, &alpha, &dx, &dy};
            kj_launch_config c = {
                .size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 255) / 256)}, .block = {256}};
            KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
            KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, dy, n * 2));
            double ah = round_to(alpha, digits, emin);
            for (size_t i = 0; i < n; i++) {
                double xv = bf ? bf16_value(x[i]) : half_value(x[i]), yv = bf ? bf16_value(y[i]) : half_value(y[i]);
                /* __hmul then __hadd, each rounded; or one fused multiply-add, which NVRTC may contract
                 * them into (the products and sums are exact in double, so each is rounded once here) */
                double want = round_to(round_to(ah * xv, digits, emin) + yv, digits, emin);
                double fused = round_to(ah * xv + yv, digits, emin);
                double have = bf ? bf16_value(got[i]) : half_value(got[i]);
                if (have != want && have != fused)
                    fail_msg("%s n=%zu [%zu]: %.9g, expected %.9g (or %.9g fused)", bf ? "bf16" : "half", n, i, have,
                             want, fused);
            }
            kj_mem_free(kj_test_rt, dx), kj_mem_free(kj_test_rt, dy);
            free(x), free(y), free(got);
        }
    }
}

/* ---- dynamic parallelism without metadata --------------------------------------------------- */

static void test_tail_launch_without_metadata(void **state) {
    (void)state;
    kj_kernel *k = get("jit_tail.cu", "parent");
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k, &info));
    assert_true(info.linked); /* the launch in the source was seen */
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        int32_t *v = random_ints(n, 40000), *got = malloc(n * 4);
        int slice = 4096, nn = (int)n, flag_host = 0;
        unsigned grid = (unsigned)((n + (size_t)slice - 1) / (size_t)slice);
        kj_devptr dv = upload(v, n * 4), flag = poisoned(4);
        KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, flag, 0, 4));
        void *args[] = {&dv, &nn, &slice, &flag};
        kj_launch_config c = {
            .size = sizeof(kj_launch_config), .grid = {grid}, .block = {32}, .pending_launches = grid + 16};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_synchronize(kj_test_rt));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, dv, n * 4));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, &flag_host, flag, 4));
        assert_int_equal(flag_host, 1);
        for (size_t i = 0; i < n; i++)
            if (got[i] != v[i] * v[i]) fail_msg("n=%zu [%zu]: %d, expected %d", n, i, got[i], v[i] * v[i]);
        kj_mem_free(kj_test_rt, dv), kj_mem_free(kj_test_rt, flag);
        free(v), free(got);
    }
}

/* ---- thread-block clusters ------------------------------------------------------------------ */

static void test_clusters(void **state) {
    (void)state;
    if (dev.cc_major < 9) {
        printf("compute capability %d.%d: clusters need 9.0; skipped\n", dev.cc_major, dev.cc_minor);
        return;
    }
    kj_kernel *k = get("jit_cluster.cu", "cluster_sums");
    const unsigned grid = 64, block = 256, cl = 2;
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        int32_t *in = random_ints(n, 1000);
        int64_t expect[32] = {0}, got[32];
        for (size_t i = 0; i < n; i++) expect[((i / block) % grid) / cl] += in[i];
        kj_devptr din = upload(in, n * 4), out = poisoned(sizeof got);
        int nn = (int)n;
        void *args[] = {&din, &nn, &out};
        kj_launch_config c = {
            .size = sizeof(kj_launch_config), .grid = {grid}, .block = {block}, .cluster = {cl, 1, 1}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, out, sizeof got));
        assert_memory_equal(got, expect, sizeof got);
        kj_mem_free(kj_test_rt, din), kj_mem_free(kj_test_rt, out);
        free(in);
    }
    kj_launch_config odd = {
        .size = sizeof(kj_launch_config), .grid = {grid + 1}, .block = {block}, .cluster = {cl, 1, 1}};
    int nn = 1;
    kj_devptr z = 0;
    void *args[] = {&z, &nn, &z};
    assert_int_equal(kj_kernel_launch(k, &odd, args), KJ_ERR_LIMIT);
}

/* ---- a struct by value ---------------------------------------------------------------------- */

struct affine_params {
    float scale, offset;
    int n, pad;
};

static void test_struct_by_value(void **state) {
    (void)state;
    kj_kernel *k = get("jit_struct.cu", "affine");
    size_t size = 0;
    if (kj_kernel_param_info(k, 0, NULL, &size) == KJ_OK) assert_int_equal(size, sizeof(struct affine_params));
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        float *x = malloc(n * 4), *y = malloc(n * 4);
        for (size_t i = 0; i < n; i++) x[i] = (float)((double)(kj_test_next(&kj_test_rng) % 2000001) / 1e3 - 1000);
        struct affine_params p = {1.25f, -3.5f, (int)n, 0};
        kj_devptr dx = upload(x, n * 4), dy = poisoned(n * 4);
        void *args[] = {&p, &dx, &dy};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 255) / 256)}, .block = {256}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, y, dy, n * 4));
        for (size_t i = 0; i < n; i++) /* NVRTC contracts to a fused multiply-add by default */
            if (y[i] != fmaf(p.scale, x[i], p.offset) && y[i] != p.scale * x[i] + p.offset)
                fail_msg("n=%zu [%zu]: %.9g, expected %.9g", n, i, y[i], fmaf(p.scale, x[i], p.offset));
        kj_mem_free(kj_test_rt, dx), kj_mem_free(kj_test_rt, dy);
        free(x), free(y);
    }
}

/* ---- two sources linked by nvJitLink -------------------------------------------------------- */

/* link_lib.cu's lib_blend, 3x - y in float: rounded twice, or once when ptxas fuses it */
static float blend_value(float x, float y, int fused) { return fused ? fmaf(3.0f, x, -y) : 3.0f * x - y; }

/* blend and tile_sums of the program req makes (its entry is set here), at every size */
static void check_blend_program(kj_request req, const char *what) {
    kj_kernel *blend, *sums;
    req.entry = "blend";
    if (kj_kernel_get(kj_test_rt, &req, &blend, NULL) != KJ_OK) fail_msg("%s: %s", what, kj_last_error());
    req.entry = "tile_sums";
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &req, &sums, NULL));
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]), blocks = (n + 63) / 64;
        float *x = malloc(n * 4), *y = malloc(n * 4), *got = malloc(n * 4), *got_sums = malloc(blocks * 4);
        for (size_t i = 0; i < n; i++) {
            x[i] = (float)((double)(kj_test_next(&kj_test_rng) % 20001) / 1000 - 10);
            y[i] = (float)((double)(kj_test_next(&kj_test_rng) % 20001) / 1000 - 10);
        }
        kj_devptr dx = upload(x, n * 4), dy = upload(y, n * 4), dout = poisoned(n * 4), dsums = poisoned(blocks * 4);
        int nn = (int)n;
        void *args[] = {&dx, &dy, &dout, &nn};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 255) / 256)}, .block = {256}};
        KJ_ASSERT_OK(kj_kernel_launch(blend, &c, args));
        void *sum_args[] = {&dx, &dy, &dsums, &nn};
        kj_launch_config cs = {.size = sizeof(kj_launch_config), .grid = {(unsigned)blocks}, .block = {64}};
        KJ_ASSERT_OK(kj_kernel_launch(sums, &cs, sum_args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, dout, n * 4));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got_sums, dsums, blocks * 4));
        /* one way of rounding for every element (one lib_blend serves them all): told apart by the
         * first element where the two differ */
        int fused = 0;
        for (size_t i = 0; i < n; i++)
            if (blend_value(x[i], y[i], 1) != blend_value(x[i], y[i], 0)) {
                fused = got[i] == blend_value(x[i], y[i], 1) * 0.5f;
                break;
            }
        for (size_t i = 0; i < n; i++)
            if (got[i] != blend_value(x[i], y[i], fused) * 0.5f)
                fail_msg("%s: blend n=%zu [%zu]: %.9g, expected %.9g", what, n, i, got[i],
                         blend_value(x[i], y[i], fused) * 0.5f);
        for (size_t b = 0; b < blocks; b++) {
            float want[2] = {0.0f, 0.0f};
            for (int f = 0; f < 2; f++)
                for (size_t i = b * 64; i < (b + 1) * 64; i++) want[f] += i < n ? blend_value(x[i], y[i], f) : 0.0f;
            if (got_sums[b] != want[fused])
                fail_msg("%s: tile_sums n=%zu block %zu: %.9g, expected %.9g", what, n, b, got_sums[b], want[fused]);
        }
        kj_mem_free(kj_test_rt, dx), kj_mem_free(kj_test_rt, dy), kj_mem_free(kj_test_rt, dout),
            kj_mem_free(kj_test_rt, dsums);
        free(x), free(y), free(got), free(got_sums);
    }
}

/* link_main.cu compiled alone into `format` (for the device's target) as kj_test_dir/name */
static const char *emit_main(kj_emit_format format, const char *name) {
    static char path[2][PATH_MAX];
    static int next;
    char *out = path[next++ % 2];
    kj_request req = kj_test_two_sources(NULL);
    req.sources = NULL, req.source_count = 0;
    const char *rdc[] = {"-rdc=true"}; /* PTX to link: its functions stay external */
    if (format == KJ_EMIT_PTX) req.options = rdc, req.option_count = 1;
    req.entry = "blend";
    void *data;
    size_t size;
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &req, format, &data, &size, NULL));
    snprintf(out, PATH_MAX, "%s/%s", kj_test_dir, name);
    FILE *f = fopen(out, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
    kj_emit_free(data);
    return out;
}

/* Two .cu sources; the same with link-time optimisation (-dlto); link_lib.cu with link_main's code
 * compiled beforehand, as LTO-IR and as PTX (the kernels then extern "C" names in compiled code). */
static void test_two_sources_linked(void **state) {
    (void)state;
    check_blend_program(kj_test_two_sources("blend"), "two sources");
    kj_request req = kj_test_two_sources("blend");
    const char *dlto[] = {"-dlto"};
    req.options = dlto, req.option_count = 1;
    check_blend_program(req, "-dlto");
    static char lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/link_lib.cu", KJ_TEST_KERNELS);
    const char *ltoir[] = {emit_main(KJ_EMIT_LTOIR, "main.ltoir")}, *ptx[] = {emit_main(KJ_EMIT_PTX, "main.ptx")};
    kj_request inputs = {.size = sizeof(kj_request), .kernel = lib, .sources = ltoir, .source_count = 1};
    check_blend_program(inputs, "link_lib.cu + main.ltoir");
    inputs.sources = ptx;
    check_blend_program(inputs, "link_lib.cu + main.ptx");
}

/* ---- several entries in one compile ---------------------------------------------------------- */

/* scale.cu's two instances, compiled together (kj_request.entries): one module, two handles, each
 * scaling its own type exactly (a product by 0.5 or -3 is exact here). */
static void test_template_instances_together(void **state) {
    (void)state;
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/scale.cu", KJ_TEST_KERNELS);
    const char *const both[] = {"scale<float,256>", "scale<double,256>"};
    kj_request req = {.size = sizeof(kj_request), .kernel = path, .entries = both, .entry_count = 2};
    kj_kernel *kf, *kd;
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &req, &kf, NULL));
    req.entry = both[1];
    kj_origin origin;
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &req, &kd, &origin));
    assert_int_equal(origin, KJ_ORIGIN_MEMORY);
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        float *xf = malloc(n * 4);
        double *xd = malloc(n * 8);
        for (size_t i = 0; i < n; i++) xf[i] = (float)(i % 1001), xd[i] = (double)(i % 999);
        kj_devptr df = upload(xf, n * 4), dd = upload(xd, n * 8);
        float af = 0.5f;
        double ad = -3;
        int nn = (int)n;
        void *args_f[] = {&df, &af, &nn}, *args_d[] = {&dd, &ad, &nn};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 255) / 256)}, .block = {256}};
        KJ_ASSERT_OK(kj_kernel_launch(kf, &c, args_f));
        KJ_ASSERT_OK(kj_kernel_launch(kd, &c, args_d));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, xf, df, n * 4));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, xd, dd, n * 8));
        for (size_t i = 0; i < n; i++) {
            if (xf[i] != 0.5f * (float)(i % 1001)) fail_msg("scale<float> n=%zu [%zu]: %.9g", n, i, (double)xf[i]);
            if (xd[i] != -3.0 * (double)(i % 999)) fail_msg("scale<double> n=%zu [%zu]: %.17g", n, i, xd[i]);
        }
        kj_mem_free(kj_test_rt, df), kj_mem_free(kj_test_rt, dd);
        free(xf), free(xd);
    }
}

/* ---- an architecture-specific target: sm_90a's own instructions ------------------------------ */

/* wgmma_fence.cu, built for sm_90a through the request's arch: on a 9.0 device it runs (out = 2 x in,
 * exact); on any other it is refused before the driver sees it. */
static void test_arch_specific_target(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/wgmma_fence.cu", KJ_TEST_KERNELS);
    kj_request req = {.size = sizeof(kj_request), .kernel = path, .arch = "sm_90a"};
    kj_kernel *k = NULL;
    if (dev.cc_major != 9 || dev.cc_minor != 0) {
        assert_int_equal(kj_kernel_get(kj_test_rt, &req, &k, NULL), KJ_ERR_USAGE);
        assert_non_null(strstr(kj_last_error(), "arch sm_90a: its code runs only on compute capability 9.0"));
        printf("device %d.%d: sm_90a refused, as it must be\n", dev.cc_major, dev.cc_minor);
        return;
    }
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &req, &k, NULL));
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k, &info));
    assert_string_equal(info.arch, "sm_90a");
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = kj_test_cap(sizes[s]);
        float *in = malloc(n * 4), *got = malloc(n * 4);
        for (size_t i = 0; i < n; i++) in[i] = (float)((double)(kj_test_next(&kj_test_rng) % 2000001) / 1e3 - 1000);
        kj_devptr din = upload(in, n * 4), dout = poisoned(n * 4);
        int nn = (int)n;
        void *args[] = {&din, &dout, &nn};
        kj_launch_config c = {.size = sizeof(kj_launch_config), .grid = {(unsigned)((n + 127) / 128)}, .block = {128}};
        KJ_ASSERT_OK(kj_kernel_launch(k, &c, args));
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, dout, n * 4));
        for (size_t i = 0; i < n; i++)
            if (got[i] != 2.0f * in[i])
                fail_msg("twice_fenced n=%zu [%zu]: %.9g, expected %.9g", n, i, got[i], 2.0f * in[i]);
        kj_mem_free(kj_test_rt, din), kj_mem_free(kj_test_rt, dout);
        free(in), free(got);
    }
    /* the device's own sm_90 has no wgmma: the compile fails and says which target has it */
    req.arch = NULL;
    assert_int_equal(kj_kernel_get(kj_test_rt, &req, &k, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "build for that target (--arch sm_90a"));
}

/* ---- resources known at compile time, against the driver's ------------------------------------ */

/* What kj_compile reports from ptxas and nvJitLink is what the driver says of the loaded function. */
static void expect_resources_match(const char *file, const char *const *more, size_t nmore, const char *entry) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", KJ_TEST_KERNELS, file);
    kj_request req = {
        .size = sizeof(kj_request), .kernel = path, .entry = entry, .sources = more, .source_count = nmore};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(kj_test_rt, &req, &r));
    if (!r.entry_resources) fail_msg("%s:%s: no resources", file, entry);
    kj_resource_usage u = *r.entry_resources;
    kj_kernel *k;
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &req, &k, NULL));
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k, &info));
    printf("%s:%s: compile time %d registers, %d B stack, %d B shared; driver %d, %d, %d\n", file, entry, u.registers,
           u.stack_bytes, u.shared_static_bytes, info.num_regs, info.local_bytes, info.shared_static_bytes);
    assert_int_equal(u.registers, info.num_regs);
    assert_int_equal(u.shared_static_bytes, info.shared_static_bytes);
    assert_int_equal(u.stack_bytes, info.local_bytes);
}

static void test_resources_match_driver(void **state) {
    (void)state;
    expect_resources_match("resources.cu", NULL, 0, "local_array");
    expect_resources_match("resources.cu", NULL, 0, "shared_tile");
    expect_resources_match("resources.cu", NULL, 0, "many_live");
    char lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/link_lib.cu", KJ_TEST_KERNELS);
    const char *more[] = {lib};
    expect_resources_match("link_main.cu", more, 1, "tile_sums");
    expect_resources_match("link_main.cu", more, 1, "blend");
}

/* ---- the same from the command line --------------------------------------------------------- */

static char out[1 << 16], cli_cache[PATH_MAX];

/* `kernjit launch ARGS` in tests/kernels, with a cache of its own: its exit code, its output in out. */
#define launch(...) kj_test_launch(kernjit, KJ_TEST_KERNELS, cli_cache, out, sizeof out, __VA_ARGS__)

static void expect_out(int rc, const char *needle) {
    if (rc != 0) fail_msg("exit %d", rc);
    if (!strstr(out, needle)) fail_msg("the output lacks '%s'", needle);
}

static void test_cli(void **state) {
    (void)state;
    snprintf(cli_cache, sizeof cli_cache, "%s/cli", kj_test_dir);
    /* cooperative: the sum of 0..999999 */
    int per_sm = 0;
    kj_kernel *k = get("jit_coop.cu", "coop_sum");
    KJ_ASSERT_OK(kj_kernel_occupancy(k, 256, 0, &per_sm));
    expect_out(launch("jit_coop.cu --cooperative --grid %d --block 256 --arg 'i32[1000000]=iota' --arg i32=1000000 "
                      "--arg 'u64[1]=zeros' --arg 'u64[1]=zeros' --print 3 --repeat 0",
                      per_sm * dev.sm_count),
               "[0] 499999500000");
    /* a struct by value: scale 2, offset 1, n 8 (little-endian floats 0x40000000, 0x3f800000) */
    expect_out(launch("jit_struct.cu --grid 1 --block 32 --arg 'bytes[16]=0x000000400000803f0800000000000000' "
                      "--arg 'f32[8]=iota' --arg 'f32[8]=zeros' --print 2 --repeat 0"),
               "[7] 15");
    /* a pointer into a buffer: vadd's a moved on by one element */
    expect_out(launch("vadd.cu --grid 1 --block 32 --arg 'f32[9]=iota' --arg '&0+4' --arg 'f32[8]=zeros' --arg i32=8 "
                      "--print 2 --repeat 0"),
               "[7] 15");
    /* clusters: 1000 ones over 8 blocks of 256 in clusters of 2 */
    if (dev.cc_major >= 9) {
        expect_out(launch("jit_cluster.cu --cluster 2 --grid 8 --block 256 --arg 'i32[1000]=1' --arg i32=1000 "
                          "--arg 'i64[4]=zeros' --print 2 --repeat 0"),
                   "[1] 488");
        assert_non_null(strstr(out, "[0] 512"));
    }
    /* dynamic parallelism with no metadata line: the tail-launched grid sets the flag */
    expect_out(launch("jit_tail.cu:parent --grid 3 --block 32 --arg 'i32[10000]=iota' --arg i32=10000 --arg i32=4096 "
                      "--arg 'i32[1]=zeros' --pending 64 --print 3 --print 0:9999 --repeat 0"),
               "[9999] 99980001");
    assert_non_null(strstr(out, "[0] 1"));
    /* two sources linked: (3 * 7 - 1) * 0.5 */
    expect_out(launch("link_main.cu link_lib.cu:blend --grid 1 --block 32 --arg 'f32[8]=iota' --arg 'f32[8]=1' "
                      "--arg 'f32[8]=zeros' --arg i32=8 --print 2 --repeat 0"),
               "[7] 10");
    assert_non_null(strstr(out, "[3] 4"));
    /* an architecture-specific target: runs on 9.0, refused (usage, exit 2) elsewhere */
    int rc = launch("wgmma_fence.cu --arch sm_90a --grid 2 --block 128 --arg 'f32[200]=iota' --arg 'f32[200]=zeros' "
                    "--arg i32=200 --print 1 --print 1:199 --repeat 0");
    if (dev.cc_major == 9 && dev.cc_minor == 0) {
        expect_out(rc, "[199] 398");
        assert_non_null(strstr(out, "for sm_90a"));
    } else {
        assert_int_equal(rc, 2);
        assert_non_null(strstr(out, "its code runs only on compute capability 9.0"));
    }
}

int main(int argc, char **argv) {
    kernjit = argc > 1 ? argv[1] : "kernjit";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cooperative_grid_sum),
        cmocka_unit_test(test_cub_block_and_warp),
        cmocka_unit_test(test_atomic_histogram),
        cmocka_unit_test(test_std_atomic_ref),
        cmocka_unit_test(test_cg_memcpy_async_and_scan),
        cmocka_unit_test(test_cub_sort_and_scan),
        cmocka_unit_test(test_half_and_bfloat),
        cmocka_unit_test(test_tail_launch_without_metadata),
        cmocka_unit_test(test_clusters),
        cmocka_unit_test(test_struct_by_value),
        cmocka_unit_test(test_two_sources_linked),
        cmocka_unit_test(test_template_instances_together),
        cmocka_unit_test(test_resources_match_driver),
        cmocka_unit_test(test_arch_specific_target),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, kj_test_teardown);
}
