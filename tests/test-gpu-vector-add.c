/* The gpu suite's vector add: f32 and f64 at n = 1, 31, 1000003 and 2^24 + 7, with aligned pointers
 * (16-byte vectors) and pointers one element into their allocations (the scalar entry), in place,
 * and with other block sizes and unroll factors; the sums must equal the CPU's bit for bit. Exits 77
 * (skipped) without a GPU. */
#include "test_util.h"

/* Values of mixed magnitudes and signs, so that the sums round. */
static void fill(kj_type type, void *buf, size_t n, uint64_t *seed) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kj_test_next(seed);
        double u = (double)(r >> 11) / 9007199254740992.0 * 2 - 1;
        double scale = (double)(1u << (r & 15)) / 64.0;
        if (type == KJ_TYPE_F64) ((double *)buf)[i] = u * scale;
        else ((float *)buf)[i] = (float)(u * scale);
    }
}

static int same_sum(kj_type type, const void *a, const void *b, const void *c, size_t i) {
    if (type == KJ_TYPE_F64) {
        double e = ((const double *)a)[i] + ((const double *)b)[i];
        return memcmp(&e, (const double *)c + i, 8) == 0;
    }
    float e = ((const float *)a)[i] + ((const float *)b)[i];
    return memcmp(&e, (const float *)c + i, 4) == 0;
}

typedef struct setup_args {
    size_t offset; /* elements into each allocation */
    int in_place;  /* c = a */
    unsigned block, unroll;
    const char *entry; /* expected */
} setup_args;

static void check_one(kj_runtime *rt, kj_type type, size_t n, const setup_args *s, uint64_t *seed) {
    size_t es = kj_type_size(type), bytes = n * es, off = s->offset * es;
    void *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    fill(type, a, n, seed);
    fill(type, b, n, seed);
    kj_devptr d[3];
    kj_test_vector_add_buffers(rt, a, b, bytes, off, d);
    kj_devptr out = s->in_place ? d[0] + off : d[2] + off;
    kj_vector_add_report rep = KJ_VECTOR_ADD_REPORT_INIT;
    kj_vector_add_options o = {sizeof(kj_vector_add_options), s->block, s->unroll, NULL, &rep};
    KJ_ASSERT_OK(kj_vector_add(rt, type, d[0] + off, d[1] + off, out, n, &o));
    KJ_ASSERT_OK(kj_synchronize(rt));
    KJ_ASSERT_OK(kj_memcpy_dtoh(rt, c, out, bytes));
    assert_string_equal(rep.entry, s->entry);
    assert_int_equal(rep.block_size, s->block ? s->block : 256);
    assert_int_equal(rep.unroll, s->unroll ? s->unroll : 4);
    assert_true(rep.grid >= 1);
    for (size_t i = 0; i < n; i++)
        if (!same_sum(type, a, b, c, i))
            fail_msg("%s n=%zu offset=%zu%s BLOCK_SIZE=%u UNROLL=%u: c[%zu] differs from the CPU's a + b",
                     kj_type_name(type), n, s->offset, s->in_place ? " in place" : "", rep.block_size, rep.unroll, i);
    /* the elements before the vectors are left alone */
    if (s->offset && !s->in_place) {
        unsigned char before[64];
        KJ_ASSERT_OK(kj_memcpy_dtoh(rt, before, d[2], off));
        for (size_t i = 0; i < off; i++) assert_int_equal(before[i], 0xA5);
    }
    for (int i = 0; i < 3; i++) KJ_ASSERT_OK(kj_mem_free(rt, d[i]));
    free(a);
    free(b);
    free(c);
}

static const size_t sizes[] = {1, 31, 1000003, (1u << 24) + 7};
#define SIZE_COUNT (sizeof sizes / sizeof sizes[0])

static void test_sizes_and_alignments(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    uint64_t seed = kj_test_seed();
    kj_type types[] = {KJ_TYPE_F32, KJ_TYPE_F64};
    for (size_t t = 0; t < 2; t++) {
        for (size_t i = 0; i < SIZE_COUNT; i++) {
            if (i && kj_test_cap(sizes[i]) == kj_test_cap(sizes[i - 1])) continue;
            setup_args aligned = {0, 0, 0, 0, "vector_add"};
            setup_args shifted = {1, 0, 0, 0, "vector_add_scalar"};
            setup_args in_place = {0, 1, 0, 0, "vector_add"};
            check_one(rt, types[t], kj_test_cap(sizes[i]), &aligned, &seed);
            check_one(rt, types[t], kj_test_cap(sizes[i]), &shifted, &seed);
            check_one(rt, types[t], kj_test_cap(sizes[i]), &in_place, &seed);
        }
    }
    kj_runtime_destroy(rt);
}

static void test_tunables(void **state) {
    (void)state;
    kj_test_log log;
    kj_runtime *rt = kj_test_gpu_runtime(&log);
    uint64_t seed = kj_test_seed();
    const unsigned blocks[] = {64, 1024}, unrolls[] = {1, 2, 8};
    for (size_t b = 0; b < 2; b++) {
        for (size_t u = 0; u < 3; u++) {
            setup_args s = {0, 0, blocks[b], unrolls[u], "vector_add"};
            check_one(rt, KJ_TYPE_F32, kj_test_cap(1000003), &s, &seed);
            check_one(rt, KJ_TYPE_F64, 31, &s, &seed);
            setup_args sc = {3, 0, blocks[b], unrolls[u], "vector_add_scalar"};
            check_one(rt, KJ_TYPE_F64, kj_test_cap(1000003), &sc, &seed);
        }
    }
    /* values the metadata does not list are refused, naming them */
    kj_devptr p;
    KJ_ASSERT_OK(kj_mem_alloc(rt, 64, &p));
    kj_vector_add_options bad = {.size = sizeof(kj_vector_add_options), .block_size = 96};
    assert_int_equal(kj_vector_add(rt, KJ_TYPE_F32, p, p, p, 16, &bad), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "BLOCK_SIZE=96"));
    bad = (kj_vector_add_options){.size = sizeof(kj_vector_add_options), .unroll = 3};
    assert_int_equal(kj_vector_add(rt, KJ_TYPE_F32, p, p, p, 16, &bad), KJ_ERR_INVALID_DEFINE);
    assert_non_null(strstr(kj_last_error(), "UNROLL=3"));
    assert_int_equal(kj_vector_add(rt, KJ_TYPE_I64, p, p, p, 16, NULL), KJ_ERR_USAGE);
    /* n = 0 launches nothing */
    KJ_ASSERT_OK(kj_vector_add(rt, KJ_TYPE_F32, 0, 0, 0, 0, NULL));
    KJ_ASSERT_OK(kj_synchronize(rt));
    KJ_ASSERT_OK(kj_mem_free(rt, p));
    kj_runtime_destroy(rt);
}

KJ_TEST_MAIN(kj_test_setup_gpu, kj_test_teardown, cmocka_unit_test(test_sizes_and_alignments),
             cmocka_unit_test(test_tunables))
