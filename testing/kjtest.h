/*
 * kjtest.h: the CPU oracles that device results are held against, for the CLI (`kernjit run`,
 * `kernjit bench`) and the tests. Not installed and not part of kernjit's API: testing/ is a static
 * library of its own, which builds in the library's CPU code that the oracles share with it (the
 * reduction's reference, which the tuning target checks with; the Mandelbrot configuration).
 */
#ifndef KJTEST_H
#define KJTEST_H

#include <stdint.h>

#include "kernjit/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why the calling thread's last oracle call that failed did ("" when none failed). */
const char *kjtest_last_error(void);

/* The CPU reference: reduces n host elements with the same semantics as the GPU (wrapping integers,
 * NaN-propagating max/min), floating-point sums and products in long double, and writes the result
 * (kj_result_size bytes, rounded to the result type) to result. abs_sum, when not NULL, gets the sum
 * of the magnitudes |x_i| (for error bounds). Needs no device. Thread-safe.
 * Errors: KJ_ERR_USAGE (bad op or type, NULL result, NULL data with n > 0). */
kj_status kjtest_reduce_reference(kj_op op, kj_type type, const void *data, size_t n, void *result, double *abs_sum);
/* n seeded random inputs for op whose reduction the checks tell from a wrong one (the same that `kernjit
 * tune` uses): float sums of values in [0, 1), same-signed, so that kjtest_reduce_tolerance's bound is a
 * small part of the result at any n (for values of both signs it can exceed the result, and a result
 * of 0 would pass); float products of +-1 (exact, never 0); integer products of odd values (never 0);
 * max, min and integer sums of any values ([-1, 1) for floats). Thread-safe. No errors. */
void kjtest_reduce_input(kj_op op, kj_type type, void *data, size_t n, uint64_t seed);
/* The poison for a reduction's result (kj_result_size bytes), given the reference's result expected:
 * write it where the GPU will write the result, before the run; a result that still holds it was
 * never written. A float result's poison is a signalling NaN (arithmetic makes only quiet ones), an
 * integer's the complement of expected: neither is what a right run leaves, so the check cannot
 * take an unwritten result for a right one, whatever the tolerance. Thread-safe. No errors. */
void kjtest_reduce_poison(kj_type type, const void *expected, void *poison);
/* 1 when result still holds poison (the GPU never wrote it), else 0. */
int kjtest_reduce_unwritten(kj_type type, const void *result, const void *poison);
/* How far a GPU result may lie from the reference and still be right: 0 for integers and for
 * max/min; for float sums, the first-order bound depth * u * abs_sum, where u is the unit roundoff of
 * the accumulator and depth the longest chain of additions of the configuration in report (per-thread
 * elements plus the tree levels; for the nested reduction's entries, a block's tree, then the fold of
 * grid partial sums), or of any configuration when report is NULL; for float products,
 * depth * u * |expected| (plus the smallest normal, so that 0 compares). Thread-safe. No errors. */
double kjtest_reduce_tolerance(kj_op op, kj_type type, size_t n, double expected, double abs_sum,
                               const kj_reduce_report *report);
/* 1 when the GPU result got is right by the reference's expected (abs_sum: the reference's sum of
 * magnitudes; report: the run's configuration, or NULL): the same bits, both NaN, or within
 * kjtest_reduce_tolerance; else 0. Thread-safe. No errors. */
int kjtest_reduce_right(kj_op op, kj_type type, size_t n, const void *got, const void *expected, double abs_sum,
                        const kj_reduce_report *report);
/* Result bytes (kj_result_size) as a double, for printing and comparing. Thread-safe. No errors. */
double kjtest_result_as_double(kj_type type, const void *result);
/* f as the bits of an IEEE half, rounded to nearest even (infinity when too large, a signed zero
 * below the smallest normal half). Thread-safe. No errors. */
uint16_t kj_f16_bits(float f);
/* f as the bits of a bfloat16 (the high half of f, rounded to nearest even; a NaN stays a NaN).
 * Thread-safe. No errors. */
uint16_t kj_bf16_bits(float f);

/* The CPU reference: the same image with options->algo, every dwell bit for bit the GPU's;
 * Mariani-Silver is emulated square by square as the GPU runs it, and device_launches (when not NULL)
 * gets the launches the GPU makes. dwells: width x height host values. Needs no device. Thread-safe.
 * Slow: about a second per million pixels inside the set at dwell 512.
 * Errors: KJ_ERR_USAGE (what kj_mandelbrot refuses, NULL dwells). */
kj_status kjtest_mandelbrot_reference(unsigned width, unsigned height, const kj_mandelbrot_options *options,
                                      uint16_t *dwells, uint64_t *device_launches);
/* Mariani-Silver as kjtest_mandelbrot_reference emulates it, whatever options->algo says, also counting
 * in *wrong_fills the pixels of the squares it fills whose own dwell differs from the fill (0: the
 * image is the escape-time image). */
kj_status kjtest_mandelbrot_reference_ms(unsigned width, unsigned height, const kj_mandelbrot_options *options,
                                         uint16_t *dwells, uint64_t *device_launches, uint64_t *wrong_fills);
/* One pixel's dwell as the GPU computes it. Errors: those of kjtest_mandelbrot_reference, and KJ_ERR_USAGE
 * for a pixel outside the image. */
kj_status kjtest_mandelbrot_dwell(unsigned width, unsigned height, unsigned x, unsigned y,
                                  const kj_mandelbrot_options *options, unsigned *dwell);

#ifdef __cplusplus
}
#endif
#endif /* KJTEST_H */
