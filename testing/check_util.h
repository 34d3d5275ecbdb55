/* CPU checks for `kernjit run` and `kernjit bench` of the transpose and vector add: random inputs,
 * and comparisons of a device result (copied back) with what the CPU computes. */
#ifndef KJ_CHECK_UTIL_H
#define KJ_CHECK_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit/ops.h"

/* A seed that differs every run (time and process id), for fresh inputs; print it for replay. */
uint64_t check_fresh_seed(void);

/* Fills bytes of buf with seeded random bits (a transpose moves bits: every pattern is a test). */
void check_fill_bits(void *buf, size_t bytes, uint64_t seed);

/* Compares out (cols x rows) with the transpose of in (rows x cols), elements of esize bytes (2, 4
 * or 8). samples 0: every element; else that many seeded random positions plus the four corners.
 * Returns the number of wrong elements found; the first one's input row and column go to *bad_r,
 * *bad_c. */
size_t check_transpose(const void *in, const void *out, size_t rows, size_t cols, size_t esize, size_t samples,
                       uint64_t seed, size_t *bad_r, size_t *bad_c);

/* Compares c with a + b computed on the CPU (f32 or f64; IEEE addition, so the bits must be equal).
 * samples 0: every element; else that many seeded random indices plus the last 64. Returns the number
 * of wrong elements; the first one's index goes to *bad. */
size_t check_vector_add(kj_type type, const void *a, const void *b, const void *c, size_t n, size_t samples,
                        uint64_t seed, size_t *bad);

/* How many of the count elements (esize bytes each) at out still hold the byte poison in every byte:
 * where an output poisoned first was never written. */
size_t check_poisoned(const void *out, size_t count, size_t esize, unsigned char poison);

/* The message for wrong elements of an output poisoned with poison first, into buf: that the GPU never
 * wrote it (every element still the poison), or how many differ and how many of those were never
 * written; what the family adds (the first wrong element) follows. */
void check_wrong_text(char *buf, size_t size, const void *out, size_t count, size_t esize, unsigned char poison,
                      size_t wrong, const char *against, const char *first);

#endif
