/* The gpu suite's transpose: every variant at 8192x8192, 1x1, 1x4097, 3000x17 and other odd sizes,
 * for 2-, 4- and 8-byte elements, against the CPU; every TILE_DIM x BLOCK_ROWS of the padded tile;
 * the metadata's dynamic shared memory above 48 KiB (opted in) and beyond the device (refused, naming
 * both numbers); the carveout. Exits 77 (skipped) without a GPU. */
#include "test_util.h"

#include "runtime/runtime.h" /* the kj_kernel's CUfunction, to read back the attributes kernjit set */

static void fill_bits(void *buf, size_t bytes, uint64_t *seed) {
    unsigned char *p = buf;
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t r = kj_test_next(seed);
        memcpy(p + i, &r, bytes - i < 8 ? bytes - i : 8);
    }
}

/* Transposes a rows x cols matrix already on the device (din, host copy in) into dout, poisoned
 * first, and compares every element with the CPU. */
static void run_and_check(kj_runtime *rt, kj_type type, const void *in, kj_devptr din, kj_devptr dout, size_t rows,
                          size_t cols, const kj_transpose_options *o, void *got) {
    size_t esize = kj_type_size(type), bytes = rows * cols * esize;
    KJ_ASSERT_OK(kj_memset_u8(rt, dout, 0xA5, bytes));
    /* the copies and the poison run on the default stream; a non-blocking stream does not wait for it */
    KJ_ASSERT_OK(kj_synchronize(rt));
    kj_transpose_report rep = KJ_TRANSPOSE_REPORT_INIT;
    kj_transpose_options opt = *o;
    opt.report = &rep;
    KJ_ASSERT_OK(kj_transpose(rt, type, din, dout, rows, cols, &opt));
    if (o->group) assert_int_equal(rep.group, o->group);
    KJ_ASSERT_OK(kj_synchronize(rt));
    KJ_ASSERT_OK(kj_memcpy_dtoh(rt, got, dout, bytes));
    assert_int_equal(rep.grid, ((rows + rep.tile[0] - 1) / rep.tile[0]) * ((cols + rep.tile[1] - 1) / rep.tile[1]));
    const unsigned char *a = in, *b = got;
    for (size_t c = 0; c < cols; c++)
        for (size_t r = 0; r < rows; r++)
            if (memcmp(a + (r * cols + c) * esize, b + (c * rows + r) * esize, esize) != 0)
                fail_msg("%s %s tile %ux%u BLOCK_ROWS=%u, %zu x %zu: out[%zu][%zu] differs from in[%zu][%zu]",
                         kj_transpose_variant_name(o->variant), kj_type_name(type), rep.tile[0], rep.tile[1],
                         o->block_rows, rows, cols, c, r, r, c);
}

static void check_all_variants(kj_runtime *rt, kj_type type, size_t rows, size_t cols, uint64_t *seed) {
    rows = kj_test_cap_side(rows);
    cols = kj_test_cap_side(cols);
    size_t bytes = rows * cols * kj_type_size(type);
    void *in = malloc(bytes), *got = malloc(bytes);
    assert_non_null(in);
    assert_non_null(got);
    fill_bits(in, bytes, seed);
    kj_devptr din, dout;
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &din));
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &dout));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, din, in, bytes));
    for (int v = 0; v < KJ_TRANSPOSE_VARIANT_COUNT_; v++) {
        kj_transpose_options o = {.size = sizeof(kj_transpose_options), .variant = (kj_transpose_variant)v};
        run_and_check(rt, type, in, din, dout, rows, cols, &o, got);
    }
    KJ_ASSERT_OK(kj_mem_free(rt, din));
    KJ_ASSERT_OK(kj_mem_free(rt, dout));
    free(in);
    free(got);
}

static const size_t odd_sizes[][2] = {{1, 1},   {1, 4097},    {4097, 1},   {3000, 17}, {17, 3000}, {31, 33},
                                      {33, 31}, {1023, 1025}, {777, 1000}, {32, 32},   {64, 96}};
#define ODD_COUNT (sizeof odd_sizes / sizeof odd_sizes[0])

static void test_every_variant_f32(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    uint64_t seed = kj_test_seed();
    check_all_variants(rt, KJ_TYPE_F32, 8192, 8192, &seed);
    for (size_t i = 0; i < ODD_COUNT; i++) check_all_variants(rt, KJ_TYPE_F32, odd_sizes[i][0], odd_sizes[i][1], &seed);
    kj_runtime_destroy(rt);
}

/* 2- and 8-byte elements change the kernels' word type and the shared-memory bank pattern. */
static void test_every_variant_f16_f64(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    uint64_t seed = kj_test_seed();
    kj_type types[] = {KJ_TYPE_F16, KJ_TYPE_F64};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (size_t i = 0; i < ODD_COUNT; i++)
            check_all_variants(rt, types[t], odd_sizes[i][0], odd_sizes[i][1], &seed);
        check_all_variants(rt, types[t], 2048, 1536, &seed);
    }
    kj_runtime_destroy(rt);
}

/* Every TILE_DIM x BLOCK_ROWS the metadata allows, at sizes that are not multiples of any tile. */
static void test_padded_every_tunable(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    kj_device_info dev = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(rt, &dev));
    uint64_t seed = kj_test_seed();
    const size_t sizes[][2] = {{777, 1000}, {3000, 17}, {1, 4097}};
    const unsigned tiles[] = {16, 32, 64, 128}, block_rows[] = {1, 2, 4, 8, 16, 32};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t rows = kj_test_cap_side(sizes[s][0]), cols = kj_test_cap_side(sizes[s][1]), bytes = rows * cols * 4;
        void *in = malloc(bytes), *got = malloc(bytes);
        fill_bits(in, bytes, &seed);
        kj_devptr din, dout;
        KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &din));
        KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &dout));
        KJ_ASSERT_OK(kj_memcpy_htod(rt, din, in, bytes));
        size_t tried = 0;
        for (size_t t = 0; t < 4; t++) {
            for (size_t b = 0; b < 6; b++) {
                if (tiles[t] % block_rows[b] || tiles[t] * block_rows[b] > 1024) {
                    /* the metadata's requirements refuse it, naming the rule */
                    kj_transpose_options bad = {
                        sizeof(kj_transpose_options), KJ_TRANSPOSE_PADDED, tiles[t], block_rows[b], NULL, NULL};
                    assert_int_equal(kj_transpose(rt, KJ_TYPE_F32, din, dout, rows, cols, &bad), KJ_ERR_INVALID_DEFINE);
                    assert_non_null(strstr(kj_last_error(), "requirement"));
                    continue;
                }
                size_t need = (size_t)tiles[t] * (tiles[t] + 1) * 4;
                kj_transpose_options o = {
                    sizeof(kj_transpose_options), KJ_TRANSPOSE_PADDED, tiles[t], block_rows[b], NULL, NULL};
                if (need > dev.shared_per_block_optin) {
                    assert_int_equal(kj_transpose(rt, KJ_TYPE_F32, din, dout, rows, cols, &o), KJ_ERR_LIMIT);
                    continue;
                }
                run_and_check(rt, KJ_TYPE_F32, in, din, dout, rows, cols, &o, got);
                tried++;
            }
        }
        assert_true(tried >= 15);
        /* the tiles in groups of rows of tiles, a group larger than the matrix's rows of tiles too */
        const unsigned groups[] = {2, 4, 8, 16};
        for (size_t g = 0; g < 4; g++) {
            kj_transpose_options o = {.size = sizeof o, .tile_dim = 32, .block_rows = 8, .group = groups[g]};
            run_and_check(rt, KJ_TYPE_F32, in, din, dout, rows, cols, &o, got);
        }
        KJ_ASSERT_OK(kj_mem_free(rt, din));
        KJ_ASSERT_OK(kj_mem_free(rt, dout));
        free(in);
        free(got);
    }
    /* tile_dim with a fixed variant is refused */
    kj_transpose_options fixed = {sizeof(kj_transpose_options), KJ_TRANSPOSE_SHARED, 64, 0, NULL, NULL};
    assert_int_equal(kj_transpose(rt, KJ_TYPE_F32, 256, 512, 4, 4, &fixed), KJ_ERR_USAGE);
    kj_runtime_destroy(rt);
}

static int get_attr(kj_kernel *k, CUfunction_attribute attr, int *value) {
    return k->rt->cu->cuFuncGetAttribute(value, attr, k->function) == CUDA_SUCCESS ? 0 : -1;
}

/* The built-in padded tile at TILE_DIM=128 with 8-byte elements asks its metadata for 128 x 129 x 8 =
 * 132096 bytes: more than 48 KiB, so kj_kernel_get opts the function in before any launch. */
static void test_builtin_above_48k(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    kj_device_info dev = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(rt, &dev));
    kj_define d[] = {{"ELEM_BYTES", "8"}, {"TILE_DIM", "128"}, {"BLOCK_ROWS", "8"}};
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = "transpose",
                      .entry = "transpose_padded",
                      .defines = d,
                      .define_count = 3};
    kj_kernel *k;
    const unsigned need = 128 * 129 * 8;
    if (need > dev.shared_per_block_optin) {
        assert_int_equal(kj_kernel_get(rt, &req, &k, NULL), KJ_ERR_LIMIT);
        kj_runtime_destroy(rt);
        return;
    }
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, NULL));
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k, &info));
    assert_int_equal(info.shared_dynamic_bytes, need);
    assert_true(info.shared_dynamic_bytes > 48 * 1024);
    int allowed = 0;
    assert_int_equal(get_attr(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &allowed), 0);
    assert_true(allowed >= (int)need);
    /* and it transposes correctly through kj_transpose, which launches with shared_bytes 0 */
    uint64_t seed = kj_test_seed();
    size_t rows = 1000, cols = 999, bytes = rows * cols * 8;
    void *in = malloc(bytes), *got = malloc(bytes);
    fill_bits(in, bytes, &seed);
    kj_devptr din, dout;
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &din));
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &dout));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, din, in, bytes));
    kj_transpose_options o = {sizeof(kj_transpose_options), KJ_TRANSPOSE_PADDED, 128, 8, NULL, NULL};
    run_and_check(rt, KJ_TYPE_F64, in, din, dout, rows, cols, &o, got);
    KJ_ASSERT_OK(kj_mem_free(rt, din));
    KJ_ASSERT_OK(kj_mem_free(rt, dout));
    free(in);
    free(got);
    kj_runtime_destroy(rt);
}

/* A kernel of its own whose metadata sizes its dynamic shared memory: it fills all of it, reads the
 * last byte back and reports the size the launch gave it (%dynamic_smem_size). */
static const char *shm_source =
    "//@kernjit entry fill\n"
    "//@kernjit param KB 1 64 200 100000 = 1\n"
    "//@kernjit shared-dynamic KB * 1024\n"
    "//@kernjit carveout max-shared\n"
    "extern \"C\" __global__ void fill(unsigned *out) {\n"
    "    extern __shared__ unsigned char smem[];\n"
    "    const unsigned n = KB * 1024u;\n"
    "    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) smem[i] = (unsigned char)(i * 7u + 3u);\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) {\n"
    "        unsigned dyn;\n"
    "        asm volatile(\"mov.u32 %0, %%dynamic_smem_size;\" : \"=r\"(dyn));\n"
    "        out[0] = smem[n - 1];\n"
    "        out[1] = smem[n / 2];\n"
    "        out[2] = dyn;\n"
    "    }\n"
    "}\n";

static void run_fill(kj_runtime *rt, const char *kb, unsigned expect_bytes) {
    kj_define d = {"KB", kb};
    kj_request req = {
        .size = sizeof(kj_request), .kernel = "shm.cu", .source_text = shm_source, .defines = &d, .define_count = 1};
    kj_kernel *k;
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, NULL));
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k, &info));
    assert_int_equal(info.shared_dynamic_bytes, expect_bytes);
    assert_int_equal(info.carveout, 100);
    int carveout = -5;
    if (get_attr(k, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &carveout) == 0)
        assert_int_equal(carveout, 100);
    int allowed = 0;
    assert_int_equal(get_attr(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &allowed), 0);
    assert_true(allowed >= (int)expect_bytes);
    kj_devptr out;
    KJ_ASSERT_OK(kj_mem_alloc(rt, 16, &out));
    KJ_ASSERT_OK(kj_memset_u8(rt, out, 0xA5, 16));
    void *args[] = {&out};
    kj_launch_config cfg = {sizeof(kj_launch_config), {1, 1, 1}, {256, 1, 1}, 0, NULL, 0}; /* 0: the metadata's size */
    KJ_ASSERT_OK(kj_kernel_launch(k, &cfg, args));
    KJ_ASSERT_OK(kj_synchronize(rt));
    unsigned got[4];
    KJ_ASSERT_OK(kj_memcpy_dtoh(rt, got, out, 16));
    assert_int_equal(got[2], expect_bytes);
    assert_int_equal(got[0], (unsigned char)((expect_bytes - 1) * 7u + 3u));
    assert_int_equal(got[1], (unsigned char)((expect_bytes / 2) * 7u + 3u));
    KJ_ASSERT_OK(kj_mem_free(rt, out));
}

static void test_metadata_shared(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    kj_device_info dev = KJ_DEVICE_INFO_INIT;
    KJ_ASSERT_OK(kj_runtime_device(rt, &dev));
    run_fill(rt, "1", 1024);
    run_fill(rt, "64", 64 * 1024); /* above 48 KiB: opted in by kj_kernel_get */
    if (200 * 1024 <= dev.shared_per_block_optin) run_fill(rt, "200", 200 * 1024);

    /* more than the device allows: refused before any launch, naming both numbers */
    kj_define d = {"KB", "100000"};
    kj_request req = {
        .size = sizeof(kj_request), .kernel = "shm.cu", .source_text = shm_source, .defines = &d, .define_count = 1};
    kj_kernel *k = NULL;
    assert_int_equal(kj_kernel_get(rt, &req, &k, NULL), KJ_ERR_LIMIT);
    assert_null(k);
    char want[32], allowed[32];
    snprintf(want, sizeof want, "%u bytes", 100000u * 1024u);
    snprintf(allowed, sizeof allowed, "allows %zu", dev.shared_per_block_optin);
    const char *msg = kj_last_error();
    if (!strstr(msg, want) || !strstr(msg, allowed)) fail_msg("message '%s' lacks '%s' or '%s'", msg, want, allowed);
    assert_non_null(strstr(msg, "KB=100000"));

    /* an explicit launch size beyond the device is refused too */
    kj_define small = {"KB", "1"};
    kj_request ok = {.size = sizeof(kj_request),
                     .kernel = "shm.cu",
                     .source_text = shm_source,
                     .defines = &small,
                     .define_count = 1};
    KJ_ASSERT_OK(kj_kernel_get(rt, &ok, &k, NULL));
    kj_devptr out;
    KJ_ASSERT_OK(kj_mem_alloc(rt, 16, &out));
    void *args[] = {&out};
    kj_launch_config big = {
        sizeof(kj_launch_config), {1, 1, 1}, {32, 1, 1}, (unsigned)dev.shared_per_block_optin + 1, NULL, 0};
    assert_int_equal(kj_kernel_launch(k, &big, args), KJ_ERR_LIMIT);
    KJ_ASSERT_OK(kj_mem_free(rt, out));
    kj_runtime_destroy(rt);
}

/* The L1 variants ask for the largest L1 (carveout max-l1); the padded tile sets none. */
static void test_carveouts(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    const struct {
        const char *entry;
        int carveout;
    } want[] = {{"transpose_l1_8x32", 0}, {"transpose_l1_4x32", 0}, {"transpose_padded", -1}, {"transpose_shared", -1}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        kj_request req = {.size = sizeof(kj_request), .kernel = "transpose", .entry = want[i].entry};
        kj_kernel *k;
        KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, NULL));
        kj_kernel_info info = KJ_KERNEL_INFO_INIT;
        KJ_ASSERT_OK(kj_kernel_query(k, &info));
        assert_int_equal(info.carveout, want[i].carveout);
        int v;
        if (want[i].carveout >= 0 && get_attr(k, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &v) == 0)
            assert_int_equal(v, want[i].carveout);
        assert_int_equal(info.shared_dynamic_bytes, strcmp(want[i].entry, "transpose_padded") == 0 ? 64 * 65 * 4 : 0);
    }
    kj_runtime_destroy(rt);
}

static void test_empty_and_streams(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    /* nothing to move: no launch, no error (pointers may be 0) */
    KJ_ASSERT_OK(kj_transpose(rt, KJ_TYPE_F32, 0, 0, 0, 5, NULL));
    KJ_ASSERT_OK(kj_transpose(rt, KJ_TYPE_F32, 0, 0, 5, 0, NULL));
    /* on a stream of its own */
    uint64_t seed = kj_test_seed();
    size_t rows = 300, cols = 500, bytes = rows * cols * 4;
    void *in = malloc(bytes), *got = malloc(bytes);
    fill_bits(in, bytes, &seed);
    kj_devptr din, dout;
    kj_stream st;
    KJ_ASSERT_OK(kj_stream_create(rt, &st));
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &din));
    KJ_ASSERT_OK(kj_mem_alloc(rt, bytes, &dout));
    KJ_ASSERT_OK(kj_memcpy_htod(rt, din, in, bytes));
    kj_transpose_options o = {.size = sizeof(kj_transpose_options), .variant = KJ_TRANSPOSE_PADDED, .stream = st};
    run_and_check(rt, KJ_TYPE_F32, in, din, dout, rows, cols, &o, got);
    KJ_ASSERT_OK(kj_stream_destroy(rt, st));
    KJ_ASSERT_OK(kj_mem_free(rt, din));
    KJ_ASSERT_OK(kj_mem_free(rt, dout));
    free(in);
    free(got);
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(kj_test_setup_gpu, kj_test_teardown, cmocka_unit_test(test_every_variant_f32),
             cmocka_unit_test(test_every_variant_f16_f64), cmocka_unit_test(test_padded_every_tunable),
             cmocka_unit_test(test_builtin_above_48k), cmocka_unit_test(test_metadata_shared),
             cmocka_unit_test(test_carveouts), cmocka_unit_test(test_empty_and_streams))
