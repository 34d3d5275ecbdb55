/* The CPU reference for reductions and the tolerance rules (src/ops/reduce/reduce_reference.c): the
 * semantics every GPU entry is checked against, so they are pinned down here on known values. */
#include "test_util.h"

#include <float.h>
#include <math.h>

static double ref(kj_op op, kj_type t, const void *data, size_t n) {
    unsigned char r[8];
    KJ_ASSERT_OK(kjtest_reduce_reference(op, t, data, n, r, NULL));
    return kjtest_result_as_double(t, r);
}

static void test_integer_wrap(void **state) {
    (void)state;
    int32_t a[] = {INT32_MAX, 1};
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_I32, a, 2) == (double)INT32_MIN);
    uint32_t u[] = {UINT32_MAX, 2};
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_U32, u, 2) == 1.0);
    int64_t l[] = {INT64_MAX, 1};
    int64_t r;
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I64, l, 2, &r, NULL));
    assert_true(r == INT64_MIN);
    int32_t p[] = {65536, 65536, 3};
    assert_true(ref(KJ_OP_PROD, KJ_TYPE_I32, p, 3) == 0.0); /* 2^32 * 3 wraps to 0 */
    int32_t q[] = {-3, 5, -7};
    assert_true(ref(KJ_OP_PROD, KJ_TYPE_I32, q, 3) == 105.0);
    int32_t m[] = {-5, 7, -9, 3};
    assert_true(ref(KJ_OP_MAX, KJ_TYPE_I32, m, 4) == 7.0);
    assert_true(ref(KJ_OP_MIN, KJ_TYPE_I32, m, 4) == -9.0);
    uint32_t mu[] = {3, 0x80000000u, 7};
    assert_true(ref(KJ_OP_MAX, KJ_TYPE_U32, mu, 3) == 2147483648.0); /* compared unsigned */
}

static void test_identities(void **state) {
    (void)state;
    for (int t = 0; t < KJ_TYPE_COUNT_; t++) {
        unsigned char r[8];
        KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, (kj_type)t, NULL, 0, r, NULL));
        assert_true(kjtest_result_as_double((kj_type)t, r) == 0.0);
        KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_PROD, (kj_type)t, NULL, 0, r, NULL));
        assert_true(kjtest_result_as_double((kj_type)t, r) == 1.0);
    }
    unsigned char r[8];
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_MAX, KJ_TYPE_I32, NULL, 0, r, NULL));
    assert_true(kjtest_result_as_double(KJ_TYPE_I32, r) == (double)INT32_MIN);
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_MIN, KJ_TYPE_U32, NULL, 0, r, NULL));
    assert_true(kjtest_result_as_double(KJ_TYPE_U32, r) == (double)UINT32_MAX);
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_MAX, KJ_TYPE_F32, NULL, 0, r, NULL));
    assert_true(isinf(kjtest_result_as_double(KJ_TYPE_F32, r)) && kjtest_result_as_double(KJ_TYPE_F32, r) < 0);
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_MIN, KJ_TYPE_F64, NULL, 0, r, NULL));
    assert_true(isinf(kjtest_result_as_double(KJ_TYPE_F64, r)) && kjtest_result_as_double(KJ_TYPE_F64, r) > 0);
}

static void test_nan_propagates(void **state) {
    (void)state;
    float first[] = {NAN, 1, 2}, last[] = {1, 2, NAN}, none[] = {1, 3, 2};
    assert_true(isnan(ref(KJ_OP_MAX, KJ_TYPE_F32, first, 3)));
    assert_true(isnan(ref(KJ_OP_MAX, KJ_TYPE_F32, last, 3)));
    assert_true(isnan(ref(KJ_OP_MIN, KJ_TYPE_F32, first, 3)));
    assert_true(isnan(ref(KJ_OP_MIN, KJ_TYPE_F32, last, 3)));
    assert_true(ref(KJ_OP_MAX, KJ_TYPE_F32, none, 3) == 3.0);
    double d[] = {1, NAN};
    assert_true(isnan(ref(KJ_OP_SUM, KJ_TYPE_F64, d, 2)));
    uint16_t h[] = {0x3c00, 0x7e00}; /* 1.0, NaN */
    assert_true(isnan(ref(KJ_OP_MAX, KJ_TYPE_F16, h, 2)));
}

static void test_half_conversion(void **state) {
    (void)state;
    uint16_t h[] = {0x3c00, 0xc000, 0x0001, 0x3555}; /* 1, -2, 2^-24, 0.333251953125 */
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_F16, h, 1) == 1.0);
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_F16, h + 1, 1) == -2.0);
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_F16, h + 2, 1) == ldexp(1.0, -24));
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_F16, h + 3, 1) == 0.333251953125);
    uint16_t inf = 0x7c00;
    assert_true(isinf(ref(KJ_OP_SUM, KJ_TYPE_F16, &inf, 1)));
    /* f16 results are f32: 2048 + 1 is exact in f32 although not in f16 */
    uint16_t big[] = {0x6800, 0x3c00}; /* 2048, 1 */
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_F16, big, 2) == 2049.0);
}

static void test_bfloat16(void **state) {
    (void)state;
    /* a bfloat16 is the high half of an f32 */
    uint16_t b[] = {0x3f80, 0xc000, 0x0001, 0x3eab}; /* 1, -2, 2^-133, 0.333984375 */
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_BF16, b, 1) == 1.0);
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_BF16, b + 1, 1) == -2.0);
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_BF16, b + 2, 1) == ldexp(1.0, -133));
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_BF16, b + 3, 1) == 0.333984375);
    uint16_t inf = 0xff80, nan_[] = {0x3f80, 0x7fc0};
    assert_true(isinf(ref(KJ_OP_SUM, KJ_TYPE_BF16, &inf, 1)) && ref(KJ_OP_SUM, KJ_TYPE_BF16, &inf, 1) < 0);
    assert_true(isnan(ref(KJ_OP_MAX, KJ_TYPE_BF16, nan_, 2)));
    assert_true(isnan(ref(KJ_OP_MIN, KJ_TYPE_BF16, nan_, 2)));
    /* results are f32: 256 + 1 is exact in f32 although not in bf16 */
    uint16_t big[] = {0x4380, 0x3f80}; /* 256, 1 */
    assert_true(ref(KJ_OP_SUM, KJ_TYPE_BF16, big, 2) == 257.0);
    uint16_t m[] = {0xc0a0, 0x4040, 0x3f00}; /* -5, 3, 0.5 */
    assert_true(ref(KJ_OP_MAX, KJ_TYPE_BF16, m, 3) == 3.0);
    assert_true(ref(KJ_OP_MIN, KJ_TYPE_BF16, m, 3) == -5.0);
    assert_true(ref(KJ_OP_PROD, KJ_TYPE_BF16, m, 3) == -7.5);
    /* the tolerance is the f32 accumulator's, as for f16 */
    assert_true(kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_BF16, 1000, 5, 100, NULL) ==
                kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, 1000, 5, 100, NULL));
    assert_true(kjtest_reduce_tolerance(KJ_OP_MAX, KJ_TYPE_BF16, 1000, 5, 100, NULL) == 0);
    /* kj_bf16_bits rounds to nearest even, and every bfloat16 value converts back to itself */
    assert_int_equal(kj_bf16_bits(1.0f), 0x3f80);
    assert_int_equal(kj_bf16_bits(1.0f + 0x1p-8f), 0x3f80);            /* a tie: the even one */
    assert_int_equal(kj_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);        /* a tie: the even one */
    assert_int_equal(kj_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* past the tie */
    assert_int_equal(kj_bf16_bits(-0.0f), 0x8000);
    assert_int_equal(kj_bf16_bits(FLT_MAX), 0x7f80); /* rounds past the largest bfloat16 */
    assert_int_equal(kj_bf16_bits(NAN) & 0x7fc0, 0x7fc0);
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue; /* NaN payloads */
        uint32_t bits = h << 16;
        float f;
        memcpy(&f, &bits, 4);
        if (kj_bf16_bits(f) != h) fail_msg("0x%04x -> %g -> 0x%04x", h, (double)f, kj_bf16_bits(f));
    }
}

static void test_float_sum_rounds_once(void **state) {
    (void)state;
    /* in float, 1 + 1e-8 (x 1000) would stay 1; the reference adds in long double and rounds once */
    float v[1001];
    v[0] = 1.0f;
    for (int i = 1; i <= 1000; i++) v[i] = 1e-8f;
    double abs_sum;
    float r;
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_F32, v, 1001, &r, &abs_sum));
    assert_true(r == 1.00001f);
    assert_true(fabs(abs_sum - 1.00001) < 1e-9);
}

static void test_tolerance(void **state) {
    (void)state;
    assert_true(kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_I32, 1000, 5, 100, NULL) == 0);
    assert_true(kjtest_reduce_tolerance(KJ_OP_MAX, KJ_TYPE_F32, 1000, 5, 100, NULL) == 0);
    assert_true(kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, 1, 5, 100, NULL) == 0);
    /* without a configuration: n - 1 operations in any order */
    double any = kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, 1000, 5, 100, NULL);
    assert_true(fabs(any - 1000 * (FLT_EPSILON / 2) * 100) < 1e-12);
    /* a tree is much tighter than a chain */
    kj_reduce_report tree = {.size = sizeof(kj_reduce_report), .entry = "reduce_fast", .block_size = 256, .grid = 4};
    double t = kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, 1 << 20, 5, 100, &tree);
    assert_true(t < kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, 1 << 20, 5, 100, NULL) / 100);
    assert_true(t > 0);
    /* f64 is tighter than f32 */
    assert_true(kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F64, 1000, 5, 100, NULL) < any / 1e8);
    /* atomic entries: a chain across the blocks */
    kj_reduce_report atomic = {
        .size = sizeof(kj_reduce_report), .entry = "reduce_segmented", .block_size = 256, .grid = 2048};
    assert_true(kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, 1 << 20, 5, 100, &atomic) > t);
}

/* A poisoned result is never what a run leaves: a float's is a signalling NaN (no arithmetic makes
 * one), another when the reference has those very bits; an integer's is not the reference. */
static void test_poison(void **state) {
    (void)state;
    float f = 3.5f, fp, fq;
    kjtest_reduce_poison(KJ_TYPE_F32, &f, &fp);
    uint32_t bits;
    memcpy(&bits, &fp, 4);
    assert_true(isnan(fp));
    assert_int_equal(bits & 0x00400000u, 0);    /* the quiet bit clear: signalling */
    kjtest_reduce_poison(KJ_TYPE_F16, &f, &fq); /* f16's result is an f32 */
    assert_memory_equal(&fp, &fq, 4);
    kjtest_reduce_poison(KJ_TYPE_F32, &fp, &fq);
    assert_memory_not_equal(&fp, &fq, 4);
    assert_true(isnan(fq));
    double d = -1, dp;
    kjtest_reduce_poison(KJ_TYPE_F64, &d, &dp);
    uint64_t dbits;
    memcpy(&dbits, &dp, 8);
    assert_true(isnan(dp) && (dbits & 0x0008000000000000ull) == 0);
    int64_t i = 12345, ip;
    kjtest_reduce_poison(KJ_TYPE_I64, &i, &ip);
    assert_true(ip != i);
    uint32_t u = 0xA5A5A5A5u, up;
    kjtest_reduce_poison(KJ_TYPE_U32, &u, &up);
    assert_true(up != u);
    assert_int_equal(kjtest_reduce_unwritten(KJ_TYPE_U32, &up, &up), 1);
    assert_int_equal(kjtest_reduce_unwritten(KJ_TYPE_U32, &u, &up), 0);
    assert_int_equal(kjtest_reduce_unwritten(KJ_TYPE_F32, &f, &fp), 0);
    /* the check takes neither the poison nor a quiet NaN for a right float sum */
    assert_int_equal(kjtest_reduce_right(KJ_OP_SUM, KJ_TYPE_F32, 1000, &fp, &f, 1000, NULL), 0);
    float q = NAN;
    assert_int_equal(kjtest_reduce_right(KJ_OP_SUM, KJ_TYPE_F32, 1000, &q, &f, 1000, NULL), 0);
}

/* The inputs tell a right reduction from a wrong one: a float sum's bound is a small part of it at
 * any n (same-signed values), a float product is +-1, an integer product is odd. */
static void test_input(void **state) {
    (void)state;
    enum { N = 1 << 20 };
    float *v = malloc(N * sizeof *v);
    uint32_t *w = malloc(N * sizeof *w);
    assert_non_null(v);
    assert_non_null(w);
    kjtest_reduce_input(KJ_OP_SUM, KJ_TYPE_F32, v, N, 7);
    for (size_t i = 0; i < N; i++) assert_true(v[i] >= 0 && v[i] < 1);
    float sum;
    double abs_sum;
    KJ_ASSERT_OK(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_F32, v, N, &sum, &abs_sum));
    kj_reduce_report tree = {.size = sizeof(kj_reduce_report), .entry = "reduce_fast", .block_size = 1024, .grid = 264};
    assert_true(kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, N, sum, abs_sum, &tree) < sum / 1000);
    float zero = 0;
    assert_int_equal(kjtest_reduce_right(KJ_OP_SUM, KJ_TYPE_F32, N, &zero, &sum, abs_sum, &tree), 0);
    assert_int_equal(kjtest_reduce_right(KJ_OP_SUM, KJ_TYPE_F32, N, &sum, &sum, abs_sum, &tree), 1);
    float again;
    kjtest_reduce_input(KJ_OP_SUM, KJ_TYPE_F32, &again, 1, 7); /* seeded: the same values again */
    assert_true(again == v[0]);
    kjtest_reduce_input(KJ_OP_PROD, KJ_TYPE_F32, v, N, 8);
    for (size_t i = 0; i < N; i++) assert_true(v[i] == 1 || v[i] == -1);
    assert_true(fabs(ref(KJ_OP_PROD, KJ_TYPE_F32, v, N)) == 1);
    kjtest_reduce_input(KJ_OP_PROD, KJ_TYPE_U32, w, N, 9);
    for (size_t i = 0; i < N; i++) assert_true(w[i] & 1);
    kjtest_reduce_input(KJ_OP_MAX, KJ_TYPE_F32, v, N, 10);
    int negative = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(v[i] >= -1 && v[i] < 1);
        negative += v[i] < 0;
    }
    assert_true(negative > 0);
    free(v);
    free(w);
}

/* The nested reduction's bound: a block's tree and the fold of the blocks' sums, far below any order's. */
static void test_tolerance_nested(void **state) {
    (void)state;
    kj_reduce_report nested = {
        .size = sizeof(kj_reduce_report), .entry = "nested_reduce", .block_size = 512, .grid = 2048};
    double t = kjtest_reduce_tolerance(KJ_OP_SUM, KJ_TYPE_F32, 1 << 20, 5, 100, &nested);
    /* 1 per thread + 9 levels + 8 partial sums per fold thread + 8 fold levels + 2 */
    assert_true(fabs(t - 28 * (FLT_EPSILON / 2) * 100) < 1e-12);
}

static void test_bad_arguments(void **state) {
    (void)state;
    unsigned char r[8];
    int x = 1;
    assert_int_equal(kjtest_reduce_reference((kj_op)7, KJ_TYPE_I32, &x, 1, r, NULL), KJ_ERR_USAGE);
    assert_int_equal(kjtest_reduce_reference(KJ_OP_SUM, (kj_type)9, &x, 1, r, NULL), KJ_ERR_USAGE);
    assert_int_equal(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, NULL, 1, r, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kjtest_last_error(), "data NULL with n = 1"));
    assert_int_equal(kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, &x, 1, NULL, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kjtest_last_error(), "result NULL"));
    kj_op op;
    kj_type t;
    assert_int_equal(kj_op_parse("avg", &op), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "sum, max, min, prod"));
    assert_int_equal(kj_type_parse("f8", &t), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "i32, u32, i64, f16, bf16, f32, f64"));
    KJ_ASSERT_OK(kj_op_parse("prod", &op));
    assert_int_equal(op, KJ_OP_PROD);
    KJ_ASSERT_OK(kj_type_parse("f16", &t));
    assert_int_equal(kj_type_size(t), 2);
    assert_int_equal(kj_result_size(t), 4);
    KJ_ASSERT_OK(kj_type_parse("bf16", &t));
    assert_int_equal(t, KJ_TYPE_BF16);
    assert_int_equal(t, 6); /* the ABI: appended after f64 */
    assert_string_equal(kj_type_name(t), "bf16");
    assert_int_equal(kj_type_size(t), 2);
    assert_int_equal(kj_result_size(t), 4);
    assert_string_equal(kj_type_name(KJ_TYPE_COUNT_), "?");
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_integer_wrap), cmocka_unit_test(test_identities),
             cmocka_unit_test(test_nan_propagates), cmocka_unit_test(test_half_conversion),
             cmocka_unit_test(test_bfloat16), cmocka_unit_test(test_float_sum_rounds_once),
             cmocka_unit_test(test_tolerance), cmocka_unit_test(test_poison), cmocka_unit_test(test_input),
             cmocka_unit_test(test_tolerance_nested), cmocka_unit_test(test_bad_arguments))
