/* The fuzz targets' entry point, as libFuzzer calls it. Built with clang and -Dfuzzing=true, each
 * target is a libFuzzer program (scripts/fuzz runs them); otherwise replay.c supplies main() and the
 * target replays its corpus in the unit suite, under whichever compiler and sanitizers the build
 * uses. */
#ifndef KJ_FUZZ_H
#define KJ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
