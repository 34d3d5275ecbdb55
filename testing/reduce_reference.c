/* The reduction's oracle: the library's CPU reference (src/ops/reduce/reduce_cpu.c). */
#include "oracle.h"

#include <math.h>
#include <string.h>

#include "ops/reduce/reduce_cpu.h"

kj_status kjtest_reduce_reference(kj_op op, kj_type type, const void *data, size_t n, void *result, double *abs_sum) {
    if (kj__reduce_reference(op, type, data, n, result, abs_sum) == 0) return KJ_OK;
    return kjtest_fail(KJ_ERR_USAGE,
                       "kjtest_reduce_reference: operator %d, type %d (in range?), data %s with n = %zu, "
                       "result %s",
                       (int)op, (int)type, data ? "set" : "NULL", n, result ? "set" : "NULL");
}

double kjtest_reduce_tolerance(kj_op op, kj_type type, size_t n, double expected, double abs_sum,
                               const kj_reduce_report *report) {
    return kj__reduce_tolerance(op, type, n, expected, abs_sum, report);
}

void kjtest_reduce_input(kj_op op, kj_type type, void *data, size_t n, uint64_t seed) {
    kj__reduce_fill(op, type, data, n, seed);
}

void kjtest_reduce_poison(kj_type type, const void *expected, void *poison) {
    kj__reduce_poison(type, expected, poison);
}

int kjtest_reduce_unwritten(kj_type type, const void *result, const void *poison) {
    return memcmp(result, poison, kj_result_size(type)) == 0;
}

int kjtest_reduce_right(kj_op op, kj_type type, size_t n, const void *got, const void *expected, double abs_sum,
                        const kj_reduce_report *report) {
    if (memcmp(got, expected, kj_result_size(type)) == 0) return 1;
    double x = kj__result_as_double(type, got), w = kj__result_as_double(type, expected);
    if (isnan(x) && isnan(w)) return 1;
    return fabs(x - w) <= kj__reduce_tolerance(op, type, n, w, abs_sum, report);
}

double kjtest_result_as_double(kj_type type, const void *result) { return kj__result_as_double(type, result); }
uint16_t kj_f16_bits(float f) { return kj__f16_bits(f); }
uint16_t kj_bf16_bits(float f) { return kj__bf16_bits(f); }
