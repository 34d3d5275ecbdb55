/* Shared by the host side of kernels_src/mandelbrot.cu (ops/mandelbrot/mandelbrot.c) and its CPU reference
 * (ops/mandelbrot/mandelbrot_reference.c): the resolved configuration and the CPU versions of the kernels'
 * arithmetic and decisions. */
#ifndef KJ_OPS_MANDELBROT_H
#define KJ_OPS_MANDELBROT_H

#include <stdint.h>

#include "kernels_src/mandelbrot_view.h"
#include "kernjit/ops.h"

typedef struct kj__mb_config {
    kj_view view;
    unsigned max_dwell, init_subdiv, subdiv, max_depth, min_size;
} kj__mb_config;

/* The metadata's defaults (a compile test checks that they agree with kernels_src/mandelbrot.cu). */
#define KJ__MB_MAX_DWELL 512
#define KJ__MB_INIT_SUBDIV 32
#define KJ__MB_SUBDIV 4
#define KJ__MB_MAX_DEPTH 4
#define KJ__MB_MIN_SIZE 32
#define KJ__MB_MAX_SIDE 32768

/* Options (NULL: the defaults) for a width x height image -> configuration. Checks the size, the
 * window and that the values are usable (the GPU call then checks them against the metadata):
 * KJ_ERR_USAGE naming the value. */
kj_status kj__mb_config_make(unsigned width, unsigned height, const kj_mandelbrot_options *options,
                             kj__mb_config *out);

/* The dwell of pixel (x, y), with the kernel's operations in the kernel's order. */
unsigned kj__mb_dwell(const kj_view *view, unsigned max_dwell, unsigned x, unsigned y);

/* Whether pixel (x, y) is surely in the set (strictly inside the main cardioid or the period-2
 * disk), decided with the kernel's operations. */
int kj__mb_surely_inside(const kj_view *view, unsigned x, unsigned y);

/* The host's grid for Mariani-Silver: squares of `side`, gx x gy of them. */
void kj__mb_top(const kj__mb_config *c, unsigned *side, unsigned *gx, unsigned *gy);

/* The most device-side launches Mariani-Silver can make (each square of a level that may split
 * launches at most once), and the levels of grids it can reach (the host's included). */
uint64_t kj__mb_launch_bound(const kj__mb_config *c, unsigned *levels);

/* Mariani-Silver on the CPU, square by square as the GPU runs it: writes the image it gives (w x h)
 * and counts the launches the GPU makes. When wrong_fills is not NULL, every filled pixel is also
 * computed, and the pixels whose dwell differs from the fill are counted: 0 means the image equals
 * the escape-time image. */
void kj__mb_ms_render(const kj__mb_config *c, uint16_t *img, uint64_t *launches, uint64_t *wrong_fills);
/* The same for the host's block (bx, by) alone (its whole subtree); adds to *launches and *wrong_fills
 * (when not NULL). The blocks own disjoint pixels, so they may run on different threads. */
void kj__mb_ms_render_square(const kj__mb_config *c, unsigned bx, unsigned by, uint16_t *img, uint64_t *launches,
                             uint64_t *wrong_fills);

#endif
