/* Host-side data of `kernjit launch`: filling a buffer as its --arg says, and writing elements as
 * text. Pure (no CUDA, no I/O), like launch_args. */
#ifndef KJ_LAUNCH_DATA_H
#define KJ_LAUNCH_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "launch_args.h"

/* Writes count elements of a's type to buf for the fills zeros, random, iota and VALUE (FILE is read
 * by the caller; buf is left as it is). random is seeded: the same seed and index give the same
 * data; index (the --arg's position) makes buffers of one launch differ.
 *   random  floats uniform in [-1, 1] (rounded to the type); signed integers uniform in [-100, 100]; unsigned in [0, 100]
 *   iota    element i = i in the type: integers wrap (i8 after 127), f16 is exact to 2048 only, bf16 to 256 */
void launch_fill_host(const launch_arg *a, void *buf, uint64_t count, uint64_t seed, unsigned index);

/* Element bytes as text: integers exactly, floats with enough digits to read back the same value
 * (%.9g for f32, %.17g for f64, %.5g for f16, %.4g for bf16): "nan", "inf" and "-inf" for the specials. Returns 1
 * when the text is a JSON number, 0 for nan/inf. */
int launch_format(launch_type type, const void *element, char *buf, size_t size);

#endif
