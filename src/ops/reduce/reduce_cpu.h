/* The reduction on the CPU: the reference the tuning target checks every variant with, and how far a
 * GPU result may lie from it. Host code that uses nothing of the library but its public API, so that
 * testing/ links it too (kjtest_reduce_reference and its neighbours in testing/kjtest.h). Thread-safe. */
#ifndef KJ_OPS_REDUCE_CPU_H
#define KJ_OPS_REDUCE_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit/ops.h"

/* Reduces n host elements with the GPU's semantics (wrapping integers, NaN-propagating max/min),
 * floating-point sums and products in long double, and writes the result (kj_result_size bytes,
 * rounded to the result type) to result; abs_sum, when not NULL, gets the sum of the magnitudes |x_i|
 * (for error bounds). -1 for an op or type out of range, a NULL result, or NULL data with n > 0. */
int kj__reduce_reference(kj_op op, kj_type type, const void *data, size_t n, void *result, double *abs_sum);

/* n seeded random inputs for op whose reduction a check tells from a wrong one: float sums of values
 * in [0, 1) (same-signed: |sum| = abs_sum, so the bound below is a small part of the result at any n,
 * never larger than the result itself, as it is for values of both signs); float products of +-1
 * (exact, never 0 or infinite: a result near 0 is wrong); integer products of odd values (never 0);
 * max, min and integer sums of any values ([-1, 1) for floats). */
void kj__reduce_fill(kj_op op, kj_type type, void *data, size_t n, uint64_t seed);

/* The value a result (kj_result_size bytes) is poisoned with before a run, which no run that writes it
 * leaves: for float results (f16's f32, f32, f64) a signalling NaN with a payload (arithmetic makes
 * only quiet NaNs; another payload when expected has these very bits); for integers the complement
 * of expected (the reference's result), which a right result never is. A result that still holds it
 * after the run was never written. */
void kj__reduce_poison(kj_type type, const void *expected, void *poison);

/* How far a GPU result may lie from the reference and still be right: 0 for integers and for
 * max/min; for float sums, the first-order bound depth * u * abs_sum, where u is the unit roundoff of
 * the accumulator and depth the longest chain of additions of the configuration in report (per-thread
 * elements plus the tree levels; for the nested reduction's entries, a block's tree, then the fold of
 * grid partial sums), or of any configuration when report is NULL; for float products,
 * depth * u * |expected| (plus the smallest normal, so that 0 compares). */
double kj__reduce_tolerance(kj_op op, kj_type type, size_t n, double expected, double abs_sum,
                            const kj_reduce_report *report);

/* The type a reduction accumulates in and returns: f32 for f16 and bf16, else the type itself. */
kj_type kj__reduce_acc_type(kj_type type);

/* 1 for the floating-point types (f16, bf16, f32, f64), else 0. */
int kj__type_is_float(kj_type type);

/* Result bytes (kj_result_size) as a double, for printing and comparing. */
double kj__result_as_double(kj_type type, const void *result);

/* f as the bits of an IEEE half, rounded to nearest even: too large becomes infinity, below the
 * smallest normal half a signed zero (inputs are made for reductions, never NaN). */
uint16_t kj__f16_bits(float f);

/* f as the bits of a bfloat16 (its high half), rounded to nearest even; a NaN stays a quiet NaN. */
uint16_t kj__bf16_bits(float f);

#endif
