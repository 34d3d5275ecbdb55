/* The gpu suite for reductions: every entry x op x type (bf16 included) at sizes 1, 2, 31, 1000003 and 2^24+7
 * (within each entry's limits) against the CPU reference, with fresh random input each run and the
 * result poisoned first; identities at n = 0; NaN; wrapping integers; misaligned input; the default
 * entry's determinism; several streams at once; the default entry's early launch (programmatic
 * dependent launch) still seeing what the kernel before it wrote. Exits 77 without a GPU. */
#include "test_util.h"

#include <math.h>

static const char *const entries[] = {"reduce_fast",   "reduce_simple",    "reduce_convergent",
                                      "reduce_shared", "reduce_segmented", "reduce_coarsened"};
#define ENTRY_COUNT 6
static int single_block(int e) { return e >= 1 && e <= 3; }

static kj_devptr d_in, d_out;
static void *host;
#define MAX_N ((1u << 24) + 7)

/* The fixture's runtime, and buffers for the largest size. */
static int setup(void **state) {
    if (kj_test_setup_gpu_runtime(state) != 0) return -1;
    host = malloc((size_t)MAX_N * 8 + 64);
    return host && kj_mem_alloc(kj_test_rt, (size_t)MAX_N * 8 + 64, &d_in) == KJ_OK &&
                   kj_mem_alloc(kj_test_rt, 64, &d_out) == KJ_OK
               ? 0
               : -1;
}

static int teardown(void **state) {
    kj_mem_free(kj_test_rt, d_in);
    kj_mem_free(kj_test_rt, d_out);
    free(host);
    return kj_test_teardown(state);
}

static void fill(void *buf, kj_type t, kj_op op, size_t n, int exact) {
    kj_test_fill_reduction(buf, t, op, n, exact, &kj_test_rng);
}

/* Runs one reduction on the device with the result poisoned first; returns the status. */
static kj_status gpu_reduce(kj_op op, kj_type t, kj_devptr in, size_t n, const char *entry, void *result,
                            kj_reduce_report *report) {
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = entry, .report = report};
    kj_status s = kj_memset_u8(kj_test_rt, d_out, 0xA5, 16);
    if (s == KJ_OK) s = kj_reduce_async(kj_test_rt, op, t, in, n, d_out, &o);
    if (s == KJ_OK) s = kj_memcpy_dtoh(kj_test_rt, result, d_out, kj_result_size(t));
    return s;
}

static void check_one(int e, kj_op op, kj_type t, size_t n, int exact) {
    size_t es = kj_type_size(t);
    fill(host, t, op, n, exact);
    KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, d_in, host, n * es));
    unsigned char want[8], got[8];
    double abs_sum;
    KJ_ASSERT_OK(kjtest_reduce_reference(op, t, host, n, want, &abs_sum));
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_status s = gpu_reduce(op, t, d_in, n, entries[e], got, &rep);
    if (s != KJ_OK) fail_msg("%s %s %s n=%zu: %s", entries[e], kj_op_name(op), kj_type_name(t), n, kj_last_error());
    double w = kjtest_result_as_double(t, want), g = kjtest_result_as_double(t, got);
    double tol = exact ? 0 : kjtest_reduce_tolerance(op, t, n, w, abs_sum, &rep);
    int same_bits = memcmp(want, got, kj_result_size(t)) == 0;
    if (!same_bits && !(fabs(g - w) <= tol))
        fail_msg("%s %s %s n=%zu%s: GPU %.17g, CPU %.17g, tolerance %.3g (block %u, grid %u)", entries[e],
                 kj_op_name(op), kj_type_name(t), n, exact ? " (exact data)" : "", g, w, tol, rep.block_size, rep.grid);
}

static void test_every_entry_op_type_size(void **state) {
    (void)state;
    const size_t sizes[] = {1, 2, 31, 1000003, MAX_N};
    const size_t block_sizes[] = {1, 2, 31, 2047, 2048}; /* single-block entries: up to 2 x 1024 */
    size_t checks = 0;
    for (int e = 0; e < ENTRY_COUNT; e++)
        for (int op = 0; op < KJ_OP_COUNT_; op++)
            for (int t = 0; t < KJ_TYPE_COUNT_; t++)
                for (int si = 0; si < 5; si++) {
                    size_t n = kj_test_cap(single_block(e) ? block_sizes[si] : sizes[si]);
                    if (si && n == kj_test_cap(single_block(e) ? block_sizes[si - 1] : sizes[si - 1])) continue;
                    int is_float = t == KJ_TYPE_F16 || t == KJ_TYPE_BF16 || t == KJ_TYPE_F32 || t == KJ_TYPE_F64;
                    check_one(e, (kj_op)op, (kj_type)t, n, 0);
                    checks++;
                    if (is_float && op == KJ_OP_SUM) {
                        check_one(e, (kj_op)op, (kj_type)t, n, 1);
                        checks++;
                    }
                }
    printf("%zu reductions checked against the CPU\n", checks);
}

static void test_empty_gives_identity(void **state) {
    (void)state;
    for (int e = 0; e < ENTRY_COUNT; e++)
        for (int op = 0; op < KJ_OP_COUNT_; op++)
            for (int t = 0; t < KJ_TYPE_COUNT_; t++) {
                unsigned char want[8], got[8];
                KJ_ASSERT_OK(kjtest_reduce_reference((kj_op)op, (kj_type)t, NULL, 0, want, NULL));
                KJ_ASSERT_OK(gpu_reduce((kj_op)op, (kj_type)t, d_in, 0, entries[e], got, NULL));
                if (memcmp(want, got, kj_result_size((kj_type)t)) != 0)
                    fail_msg("%s %s %s n=0 is not the identity", entries[e], kj_op_name((kj_op)op),
                             kj_type_name((kj_type)t));
            }
}

static void test_nan_propagates(void **state) {
    (void)state;
    const kj_type types[] = {KJ_TYPE_F16, KJ_TYPE_BF16, KJ_TYPE_F32, KJ_TYPE_F64};
    for (int e = 0; e < ENTRY_COUNT; e++)
        for (int ti = 0; ti < 4; ti++)
            for (int op = 0; op < KJ_OP_COUNT_; op++) {
                kj_type t = types[ti];
                size_t n = single_block(e) ? 2000 : kj_test_cap(1000003);
                fill(host, t, (kj_op)op, n, 0);
                size_t at = kj_test_next(&kj_test_rng) % n;
                if (t == KJ_TYPE_F16) ((uint16_t *)host)[at] = 0x7e00;
                else if (t == KJ_TYPE_BF16) ((uint16_t *)host)[at] = 0x7fc0;
                else if (t == KJ_TYPE_F32) ((float *)host)[at] = NAN;
                else ((double *)host)[at] = NAN;
                KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, d_in, host, n * kj_type_size(t)));
                unsigned char got[8];
                KJ_ASSERT_OK(gpu_reduce((kj_op)op, t, d_in, n, entries[e], got, NULL));
                if (!isnan(kjtest_result_as_double(t, got)))
                    fail_msg("%s %s %s: a NaN at %zu did not propagate", entries[e], kj_op_name((kj_op)op),
                             kj_type_name(t), at);
            }
}

/* Input that does not start on a 16-byte boundary: the fast entry's head and tail. */
static void test_misaligned_input(void **state) {
    (void)state;
    const kj_type types[] = {KJ_TYPE_F16, KJ_TYPE_BF16, KJ_TYPE_I32, KJ_TYPE_F64};
    for (int ti = 0; ti < 4; ti++)
        for (size_t off = 1; off < 8; off++) {
            kj_type t = types[ti];
            size_t es = kj_type_size(t), n = 100003;
            fill(host, t, KJ_OP_SUM, n + off, 1);
            KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, d_in, host, (n + off) * es));
            unsigned char want[8], got[8];
            KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, t, (char *)host + off * es, n, want, NULL));
            KJ_ASSERT_OK(gpu_reduce(KJ_OP_SUM, t, d_in + off * es, n, "reduce_fast", got, NULL));
            if (memcmp(want, got, kj_result_size(t)) != 0)
                fail_msg("%s at offset %zu: GPU %.17g, CPU %.17g", kj_type_name(t), off,
                         kjtest_result_as_double(t, got), kjtest_result_as_double(t, want));
        }
    /* a pointer not aligned to its element is refused */
    unsigned char got[8];
    assert_int_equal(gpu_reduce(KJ_OP_SUM, KJ_TYPE_F32, d_in + 2, 10, NULL, got, NULL), KJ_ERR_USAGE);
}

static void test_default_is_deterministic(void **state) {
    (void)state;
    const kj_type types[] = {KJ_TYPE_F32, KJ_TYPE_F64, KJ_TYPE_F16, KJ_TYPE_BF16};
    for (int ti = 0; ti < 4; ti++) {
        kj_type t = types[ti];
        size_t n = kj_test_cap(MAX_N);
        fill(host, t, KJ_OP_SUM, n, 0);
        KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, d_in, host, n * kj_type_size(t)));
        unsigned char first[8], again[8];
        KJ_ASSERT_OK(gpu_reduce(KJ_OP_SUM, t, d_in, n, NULL, first, NULL));
        for (int r = 0; r < 9; r++) {
            KJ_ASSERT_OK(gpu_reduce(KJ_OP_SUM, t, d_in, n, NULL, again, NULL));
            if (memcmp(first, again, 8) != 0) fail_msg("%s sum differs between runs", kj_type_name(t));
        }
    }
}

static void test_limits_and_options(void **state) {
    (void)state;
    unsigned char got[8];
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = "reduce_simple"};
    assert_int_equal(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F32, d_in, 2049, d_out, &o), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "at most 2 x BLOCK_SIZE = 2048"));
    o.block_size = 64;
    assert_int_equal(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F32, d_in, 129, d_out, &o), KJ_ERR_USAGE);
    o = (kj_reduce_options){.size = sizeof(kj_reduce_options), .entry = "reduce_bogus"};
    assert_int_equal(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F32, d_in, 10, d_out, &o), KJ_ERR_USAGE);
    o = (kj_reduce_options){.size = sizeof(kj_reduce_options), .block_size = 48};
    assert_int_equal(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F32, d_in, 10, d_out, &o), KJ_ERR_INVALID_DEFINE);
    o = (kj_reduce_options){.size = sizeof(kj_reduce_options), .coarse_factor = 3};
    assert_int_equal(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F32, d_in, 10, d_out, &o), KJ_ERR_INVALID_DEFINE);
    assert_int_equal(kj_reduce_async(kj_test_rt, (kj_op)4, KJ_TYPE_F32, d_in, 10, d_out, NULL), KJ_ERR_USAGE);
    o = (kj_reduce_options){.size = sizeof(kj_reduce_options), .entry = "reduce_segmented", .coarse_factor = 4};
    assert_int_equal(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_F32, d_in, 10, d_out, &o), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "does not coarsen"));
    /* explicit configurations are used and reported */
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    o = (kj_reduce_options){.size = sizeof(kj_reduce_options), .block_size = 128, .coarse_factor = 2, .report = &rep};
    fill(host, KJ_TYPE_I32, KJ_OP_SUM, 5000, 0);
    KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, d_in, host, 5000 * 4));
    KJ_ASSERT_OK(kj_reduce(kj_test_rt, KJ_OP_SUM, KJ_TYPE_I32, d_in, 5000, got, &o));
    assert_int_equal(rep.block_size, 128);
    assert_int_equal(rep.coarse_factor, 2);
    assert_int_equal(rep.config_from, KJ_CONFIG_EXPLICIT);
    assert_string_equal(rep.entry, "reduce_fast");
    unsigned char want[8];
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, host, 5000, want, NULL));
    assert_memory_equal(want, got, 4);
}

/* Reductions on several streams at once each use their own workspace. */
static void test_streams(void **state) {
    (void)state;
    enum { S = 4 };
    const size_t N = kj_test_cap(3000017);
    kj_stream streams[S];
    kj_devptr in[S], out[S];
    int32_t *data = malloc((size_t)N * 4), results[S], want[S];
    for (int i = 0; i < S; i++) {
        KJ_ASSERT_OK(kj_stream_create(kj_test_rt, &streams[i]));
        KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, (size_t)N * 4, &in[i]));
        KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, 8, &out[i]));
        for (size_t j = 0; j < N; j++) data[j] = (int32_t)kj_test_next(&kj_test_rng);
        KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, in[i], data, (size_t)N * 4));
        KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, data, N, &want[i], NULL));
        KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, out[i], 0xA5, 8));
    }
    for (int rep = 0; rep < 5; rep++)
        for (int i = 0; i < S; i++) {
            kj_reduce_options o = {.size = sizeof(kj_reduce_options), .stream = streams[i]};
            KJ_ASSERT_OK(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_I32, in[i], N, out[i], &o));
        }
    KJ_ASSERT_OK(kj_synchronize(kj_test_rt));
    for (int i = 0; i < S; i++) {
        KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, &results[i], out[i], 4));
        assert_int_equal(results[i], want[i]);
        kj_mem_free(kj_test_rt, in[i]);
        kj_mem_free(kj_test_rt, out[i]);
        kj_stream_destroy(kj_test_rt, streams[i]);
    }
    free(data);
}

/* A producer that lets the kernel after it launch at once (griddepcontrol.launch_dependents), then
 * writes slowly, front to back; and, as a control, a consumer marked `pdl` that reads the last
 * PEEK_TAIL elements (the producer's last writes) BEFORE it waits: it shows that the next kernel
 * really starts while the producer is still writing, so the check on reduce_fast (which waits
 * first) would catch a missing wait. */
#define PEEK_TAIL 4096
static const char *pdl_source =
    "//@kernjit entry fill_slowly sum_tail_before_waiting\n"
    "//@kernjit pdl sum_tail_before_waiting\n"
    "extern \"C\" __global__ void fill_slowly(int *x, unsigned long long n, int v) {\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "    asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "#endif\n"
    "    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n"
    "        __nanosleep(200);\n"
    "        x[i] = v + (int)(i % 7);\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void sum_tail_before_waiting(const int *x, unsigned long long n, unsigned tail, int *out) "
    "{\n"
    "    int s = 0;\n"
    "    for (unsigned i = threadIdx.x; i < tail; i += blockDim.x) s += x[n - 1 - i];\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "    asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "#endif\n"
    "    atomicAdd(out, s);\n"
    "}\n";

static void test_early_launch_waits_for_the_producer(void **state) {
    (void)state;
    enum { R = 8 };
    const size_t N = kj_test_cap(1u << 20);
    kj_request fill_req = {
        .size = sizeof(kj_request), .kernel = "pdl.cu", .source_text = pdl_source, .entry = "fill_slowly"};
    kj_request peek_req = {
        .size = sizeof(kj_request), .kernel = "pdl.cu", .source_text = pdl_source, .entry = "sum_tail_before_waiting"};
    kj_kernel *fill, *peek;
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &fill_req, &fill, NULL));
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &peek_req, &peek, NULL));
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(fill, &info));
    assert_int_equal(info.pdl, 0);
    KJ_ASSERT_OK(kj_kernel_query(peek, &info));
    kj_device_info dev = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(kj_test_rt, &dev));
    assert_int_equal(info.pdl, dev.cc_major >= 9);
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &rep};
    int32_t first;
    KJ_ASSERT_OK(kj_reduce(kj_test_rt, KJ_OP_SUM, KJ_TYPE_I32, d_in, 1, &first, &o));
    kj_kernel *fast;
    kj_request fast_req = {.size = sizeof(kj_request), .kernel = "reduce", .entry = "reduce_fast"};
    char b[16], c[16];
    snprintf(b, sizeof b, "%u", rep.block_size);
    snprintf(c, sizeof c, "%u", rep.coarse_factor);
    kj_define defs[] = {{"OP", "sum"}, {"T", "i32"}, {"BLOCK_SIZE", b}, {"COARSE_FACTOR", c}};
    fast_req.defines = defs;
    fast_req.define_count = 4;
    KJ_ASSERT_OK(kj_kernel_get(kj_test_rt, &fast_req, &fast, NULL));
    KJ_ASSERT_OK(kj_kernel_query(fast, &info));
    assert_int_equal(info.pdl, dev.cc_major >= 9);

    kj_stream stream;
    KJ_ASSERT_OK(kj_stream_create(kj_test_rt, &stream));
    kj_devptr x, outs;
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, N * 4, &x));
    KJ_ASSERT_OK(kj_mem_alloc(kj_test_rt, 2 * R * 4, &outs));
    KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, x, 0, N * 4));
    KJ_ASSERT_OK(kj_memset_u8(kj_test_rt, outs, 0, 2 * R * 4));
    KJ_ASSERT_OK(kj_synchronize(kj_test_rt));
    unsigned long long n = N;
    unsigned tail = N < PEEK_TAIL ? (unsigned)N : PEEK_TAIL;
    int32_t want[R], want_control[R];
    for (int r = 0; r < R; r++) {
        int v = 1000 * (r + 1);
        uint32_t w = 0, wc = 0; /* the sums wrap as int32 arithmetic does */
        for (size_t i = 0; i < N; i++) {
            w += (uint32_t)(v + (int)(i % 7));
            if (i >= N - tail) wc += (uint32_t)(-v + (int)(i % 7));
        }
        want[r] = (int32_t)w;
        want_control[r] = (int32_t)wc;
        kj_launch_config lc = {.size = sizeof(kj_launch_config), .grid = {16}, .block = {256}, .stream = stream};
        void *fill_args[] = {&x, &n, &v};
        KJ_ASSERT_OK(kj_kernel_launch(fill, &lc, fill_args));
        kj_reduce_options ro = {.size = sizeof(kj_reduce_options), .stream = stream};
        KJ_ASSERT_OK(kj_reduce_async(kj_test_rt, KJ_OP_SUM, KJ_TYPE_I32, x, N, outs + (kj_devptr)r * 4, &ro));
        /* the control: the same writes, then a consumer that reads their end before it waits */
        v = -v;
        KJ_ASSERT_OK(kj_kernel_launch(fill, &lc, fill_args));
        kj_devptr peek_out = outs + (kj_devptr)(R + r) * 4;
        kj_launch_config pc = {.size = sizeof(kj_launch_config), .grid = {1}, .block = {256}, .stream = stream};
        void *peek_args[] = {&x, &n, &tail, &peek_out};
        KJ_ASSERT_OK(kj_kernel_launch(peek, &pc, peek_args));
    }
    KJ_ASSERT_OK(kj_stream_synchronize(kj_test_rt, stream));
    int32_t got[2 * R];
    KJ_ASSERT_OK(kj_memcpy_dtoh(kj_test_rt, got, outs, sizeof got));
    int stale = 0;
    for (int r = 0; r < R; r++) {
        assert_int_equal(got[r], want[r]);
        stale += got[R + r] != want_control[r];
    }
    printf("early launch: reduce_fast saw every write in %d of %d runs; the consumer that reads the end before it "
           "waits read unfinished data in %d of %d\n",
           R, R, stale, R);
    /* Without overlap (a device before 9.0, or tools that serialize kernels, such as compute-sanitizer,
     * which runs this test in small mode) the control proves nothing, and is only reported. */
    if (info.pdl && !kj_test_small() && stale == 0)
        fail_msg("the control never read unfinished data: the early launch did not overlap the producer, so this "
                 "test could not have caught a missing wait");
    kj_mem_free(kj_test_rt, x);
    kj_mem_free(kj_test_rt, outs);
    kj_stream_destroy(kj_test_rt, stream);
}

KJ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_every_entry_op_type_size),
             cmocka_unit_test(test_empty_gives_identity), cmocka_unit_test(test_nan_propagates),
             cmocka_unit_test(test_misaligned_input), cmocka_unit_test(test_default_is_deterministic),
             cmocka_unit_test(test_limits_and_options), cmocka_unit_test(test_streams),
             cmocka_unit_test(test_early_launch_waits_for_the_producer))
