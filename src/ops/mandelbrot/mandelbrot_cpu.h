/* The Mandelbrot family's host arithmetic: options -> the configuration the kernels run, the host's
 * grid, and the launches Mariani-Silver can make. Host code that uses nothing of the library but its
 * public API, so that testing/ links it too: its oracle (testing/mandelbrot_reference.c) emulates the
 * kernels on the same configuration. Thread-safe. */
#ifndef KJ_OPS_MANDELBROT_CPU_H
#define KJ_OPS_MANDELBROT_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_src/mandelbrot_view.h"
#include "kernjit/ops.h"

typedef struct kj__mb_config {
    kj_view view;
    unsigned max_dwell, init_subdiv, subdiv, max_depth, min_size;
} kj__mb_config;

/* The metadata's defaults (a unit test checks that they agree with kernels_src/mandelbrot.cu). */
#define KJ__MB_MAX_DWELL 512
#define KJ__MB_INIT_SUBDIV 32
#define KJ__MB_SUBDIV 4
#define KJ__MB_MAX_DEPTH 4
#define KJ__MB_MIN_SIZE 32
#define KJ__MB_MAX_SIDE 32768

/* Options (NULL: the defaults) for a width x height image -> configuration. Checks the size, the
 * window and that the values are usable (the GPU call then checks them against the metadata): 0, or
 * -1 with why (why_size bytes) naming the value, as a usage error's message. */
int kj__mb_config_make(unsigned width, unsigned height, const kj_mandelbrot_options *options, kj__mb_config *out,
                       char *why, size_t why_size);

/* The host's grid for Mariani-Silver: squares of `side`, gx x gy of them. */
void kj__mb_top(const kj__mb_config *c, unsigned *side, unsigned *gx, unsigned *gy);

/* The most device-side launches Mariani-Silver can make (each square of a level that may split
 * launches at most once), and the levels of grids it can reach (the host's included). */
uint64_t kj__mb_launch_bound(const kj__mb_config *c, unsigned *levels);

#endif
