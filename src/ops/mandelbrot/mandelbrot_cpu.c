/* The Mandelbrot family's host arithmetic (mandelbrot_cpu.h). */
#include "ops/mandelbrot/mandelbrot_cpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Writes why (printf format) and returns -1 when cond holds. */
#define REFUSE_IF(cond, ...)                                                                                           \
    do {                                                                                                               \
        if (cond) return snprintf(why, why_size, __VA_ARGS__), -1;                                                     \
    } while (0)

int kj__mb_config_make(unsigned width, unsigned height, const kj_mandelbrot_options *o, kj__mb_config *out, char *why,
                       size_t why_size) {
    kj_mandelbrot_options defaults = {0};
    if (!o) o = &defaults;
    REFUSE_IF(width < 1 || width > KJ__MB_MAX_SIDE || height < 1 || height > KJ__MB_MAX_SIDE,
              "Mandelbrot image of %u x %u pixels: each side must be 1 to %d", width, height, KJ__MB_MAX_SIDE);
    REFUSE_IF((unsigned)o->algo >= KJ_MANDELBROT_ALGO_COUNT_, "Mandelbrot algorithm %d: allowed are escape and ms",
              (int)o->algo);
    kj__mb_config c;
    memset(&c, 0, sizeof c);
    c.max_dwell = o->max_dwell ? o->max_dwell : KJ__MB_MAX_DWELL;
    c.init_subdiv = o->init_subdiv ? o->init_subdiv : KJ__MB_INIT_SUBDIV;
    c.subdiv = o->subdiv ? o->subdiv : KJ__MB_SUBDIV;
    c.max_depth = o->max_depth ? o->max_depth : KJ__MB_MAX_DEPTH;
    c.min_size = o->min_size ? o->min_size : KJ__MB_MIN_SIZE;
    /* dwells are stored as uint16_t */
    REFUSE_IF(c.max_dwell > 65535, "max_dwell %u: at most 65535 (dwells are 16-bit)", c.max_dwell);
    REFUSE_IF(c.init_subdiv > KJ__MB_MAX_SIDE, "init_subdiv %u: at most %d", c.init_subdiv, KJ__MB_MAX_SIDE);
    REFUSE_IF(c.subdiv < 2 || c.subdiv > 64, "subdiv %u: a square splits into 2 to 64 per side", c.subdiv);
    REFUSE_IF(c.max_depth > 64, "max_depth %u: at most 64", c.max_depth);

    double x_min = o->x_min, x_max = o->x_max, y_min = o->y_min, y_max = o->y_max;
    if (x_min == 0 && x_max == 0 && y_min == 0 && y_max == 0) {
        x_min = -1.5;
        x_max = 0.5;
        y_min = -1;
        y_max = 1;
    }
    REFUSE_IF(!isfinite(x_min) || !isfinite(x_max) || !isfinite(y_min) || !isfinite(y_max) || !(x_min < x_max) ||
                  !(y_min < y_max) || fabs(x_min) > 1e6 || fabs(x_max) > 1e6 || fabs(y_min) > 1e6 || fabs(y_max) > 1e6,
              "Mandelbrot window [%g, %g] x [%g, %g]: need finite x_min < x_max and y_min < y_max within 1e6", x_min,
              x_max, y_min, y_max);
    c.view.x0 = (float)x_min;
    c.view.y1 = (float)y_max;
    c.view.dx = (float)((x_max - x_min) / width);
    c.view.dy = (float)((y_max - y_min) / height);
    REFUSE_IF(!(c.view.dx > 0) || !(c.view.dy > 0),
              "Mandelbrot window [%g, %g] x [%g, %g] is too small for single precision at %u x %u", x_min, x_max, y_min,
              y_max, width, height);
    c.view.w = width;
    c.view.h = height;
    *out = c;
    return 0;
}

void kj__mb_top(const kj__mb_config *c, unsigned *side, unsigned *gx, unsigned *gy) {
    unsigned longer = c->view.w > c->view.h ? c->view.w : c->view.h;
    unsigned s = (longer + c->init_subdiv - 1) / c->init_subdiv;
    if (s == 0) s = 1;
    *side = s;
    *gx = (c->view.w + s - 1) / s;
    *gy = (c->view.h + s - 1) / s;
}

uint64_t kj__mb_launch_bound(const kj__mb_config *c, unsigned *levels) {
    unsigned side, gx, gy;
    kj__mb_top(c, &side, &gx, &gy);
    uint64_t squares = (uint64_t)gx * gy, total = 0;
    unsigned depth = 0;
    /* A square splits only below MAX_DEPTH and when its children are at least MIN_SIZE; each of its
     * children is at most 1/subdiv of it per side, so a level has at most subdiv^2 times the squares
     * of the one above. */
    while (depth + 1 < c->max_depth) {
        unsigned child = (side + c->subdiv - 1) / c->subdiv;
        if (child < c->min_size) break;
        total += squares;
        squares *= (uint64_t)c->subdiv * c->subdiv;
        side = child;
        depth++;
    }
    if (levels) *levels = depth + 1;
    return total;
}
