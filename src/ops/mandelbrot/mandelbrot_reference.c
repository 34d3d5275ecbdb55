/* The CPU side of the Mandelbrot family: options -> configuration, the dwell with exactly the
 * kernel's arithmetic, and Mariani-Silver emulated as the GPU runs it. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "ops/mandelbrot/mandelbrot.h"
#include "testing/kjtest.h"

/* Every dwell must be the GPU's bit for bit. The kernel rounds each operation on its own (__fmul_rn,
 * __fadd_rn); here each operation is its own statement and contraction into fused multiply-adds is
 * off (GCC in ISO C mode does not contract; clang honours the pragma), and x86-64 and AArch64 compute
 * float in float (FLT_EVAL_METHOD 0). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

kj_status kj__mb_config_make(unsigned width, unsigned height, const kj_mandelbrot_options *o, kj__mb_config *out) {
    kj_mandelbrot_options defaults = {0};
    if (!o) o = &defaults;
    KJ_RETURN_IF(width < 1 || width > KJ__MB_MAX_SIDE || height < 1 || height > KJ__MB_MAX_SIDE, KJ_ERR_USAGE,
                 "Mandelbrot image of %u x %u pixels: each side must be 1 to %d", width, height, KJ__MB_MAX_SIDE);
    KJ_RETURN_IF((unsigned)o->algo >= KJ_MANDELBROT_ALGO_COUNT_, KJ_ERR_USAGE,
                 "Mandelbrot algorithm %d: allowed are escape and ms", (int)o->algo);
    kj__mb_config c;
    memset(&c, 0, sizeof c);
    c.max_dwell = o->max_dwell ? o->max_dwell : KJ__MB_MAX_DWELL;
    c.init_subdiv = o->init_subdiv ? o->init_subdiv : KJ__MB_INIT_SUBDIV;
    c.subdiv = o->subdiv ? o->subdiv : KJ__MB_SUBDIV;
    c.max_depth = o->max_depth ? o->max_depth : KJ__MB_MAX_DEPTH;
    c.min_size = o->min_size ? o->min_size : KJ__MB_MIN_SIZE;
    /* dwells are stored as uint16_t */
    KJ_RETURN_IF(c.max_dwell > 65535, KJ_ERR_USAGE, "max_dwell %u: at most 65535 (dwells are 16-bit)", c.max_dwell);
    KJ_RETURN_IF(c.init_subdiv > KJ__MB_MAX_SIDE, KJ_ERR_USAGE, "init_subdiv %u: at most %d", c.init_subdiv,
                 KJ__MB_MAX_SIDE);
    KJ_RETURN_IF(c.subdiv < 2 || c.subdiv > 64, KJ_ERR_USAGE, "subdiv %u: a square splits into 2 to 64 per side",
                 c.subdiv);
    KJ_RETURN_IF(c.max_depth > 64, KJ_ERR_USAGE, "max_depth %u: at most 64", c.max_depth);

    double x_min = o->x_min, x_max = o->x_max, y_min = o->y_min, y_max = o->y_max;
    if (x_min == 0 && x_max == 0 && y_min == 0 && y_max == 0) {
        x_min = -1.5;
        x_max = 0.5;
        y_min = -1;
        y_max = 1;
    }
    KJ_RETURN_IF(!isfinite(x_min) || !isfinite(x_max) || !isfinite(y_min) || !isfinite(y_max) || !(x_min < x_max) ||
                     !(y_min < y_max) || fabs(x_min) > 1e6 || fabs(x_max) > 1e6 || fabs(y_min) > 1e6 ||
                     fabs(y_max) > 1e6,
                 KJ_ERR_USAGE,
                 "Mandelbrot window [%g, %g] x [%g, %g]: need finite x_min < x_max and y_min < y_max within 1e6", x_min,
                 x_max, y_min, y_max);
    c.view.x0 = (float)x_min;
    c.view.y1 = (float)y_max;
    c.view.dx = (float)((x_max - x_min) / width);
    c.view.dy = (float)((y_max - y_min) / height);
    KJ_RETURN_IF(!(c.view.dx > 0) || !(c.view.dy > 0), KJ_ERR_USAGE,
                 "Mandelbrot window [%g, %g] x [%g, %g] is too small for single precision at %u x %u", x_min, x_max,
                 y_min, y_max, width, height);
    c.view.w = width;
    c.view.h = height;
    *out = c;
    return KJ_OK;
}

unsigned kj__mb_dwell(const kj_view *v, unsigned max_dwell, unsigned x, unsigned y) {
    float t = (float)x * v->dx;
    const float cx = v->x0 + t;
    t = (float)y * v->dy;
    const float cy = v->y1 - t;
    float zx = cx, zy = cy;
    unsigned d = 0;
    while (d < max_dwell) {
        const float x2 = zx * zx;
        const float y2 = zy * zy;
        const float r2 = x2 + y2;
        if (r2 > 4.0f) break;
        const float twice = zx + zx;
        const float p = twice * zy;
        zy = p + cy;
        const float q = x2 - y2;
        zx = q + cx;
        d++;
    }
    return d;
}

int kj__mb_surely_inside(const kj_view *v, unsigned x, unsigned y) {
    float t = (float)x * v->dx;
    const float cx = v->x0 + t;
    t = (float)y * v->dy;
    const float cy = v->y1 - t;
    const float xm = cx - 0.25f;
    const float y2 = cy * cy;
    const float xm2 = xm * xm;
    const float q = xm2 + y2;
    const float qx = q + xm;
    const float lhs = q * qx;
    const float rhs = 0.25f * y2;
    if (lhs < rhs) return 1;
    const float xp = cx + 1.0f;
    const float xp2 = xp * xp;
    const float r2 = xp2 + y2;
    return r2 < 0.0625f;
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

typedef struct ms_run {
    const kj__mb_config *c;
    uint16_t *img;
    uint64_t launches;
    uint64_t *wrong;
} ms_run;

static void border_pixel(ms_run *m, unsigned x, unsigned y, unsigned *lo, unsigned *hi, int *inside) {
    unsigned d = kj__mb_dwell(&m->c->view, m->c->max_dwell, x, y);
    m->img[(size_t)y * m->c->view.w + x] = (uint16_t)d;
    if (d < *lo) *lo = d;
    if (d > *hi) *hi = d;
    *inside &= kj__mb_surely_inside(&m->c->view, x, y);
}

/* One block of mandelbrot_ms: the square [x0, x1) x [y0, y1) of nominal side `side` at `depth`. */
static void ms_square(ms_run *m, unsigned x0, unsigned y0, unsigned x1, unsigned y1, unsigned side, unsigned depth) {
    const kj__mb_config *c = m->c;
    const unsigned w = c->view.w;
    unsigned lo = UINT_MAX, hi = 0;
    int inside = 1;
    for (unsigned x = x0; x < x1; x++) {
        border_pixel(m, x, y0, &lo, &hi, &inside);
        if (y1 - y0 > 1) border_pixel(m, x, y1 - 1, &lo, &hi, &inside);
    }
    for (unsigned y = y0 + 1; y + 1 < y1; y++) {
        border_pixel(m, x0, y, &lo, &hi, &inside);
        if (x1 - x0 > 1) border_pixel(m, x1 - 1, y, &lo, &hi, &inside);
    }
    /* the kernel's rule: see mandelbrot_ms */
    const int uniform = lo == hi && (lo < c->max_dwell || inside);
    const unsigned child = (side + c->subdiv - 1) / c->subdiv;
    if (!uniform && depth + 1 < c->max_depth && child >= c->min_size) {
        m->launches++;
        for (unsigned y = y0; y < y1; y += child)
            for (unsigned x = x0; x < x1; x += child)
                ms_square(m, x, y, x + child < x1 ? x + child : x1, y + child < y1 ? y + child : y1, child, depth + 1);
        return;
    }
    for (unsigned y = y0 + 1; y + 1 < y1; y++)
        for (unsigned x = x0 + 1; x + 1 < x1; x++) {
            uint16_t *p = &m->img[(size_t)y * w + x];
            if (!uniform) {
                *p = (uint16_t)kj__mb_dwell(&c->view, c->max_dwell, x, y);
            } else {
                *p = (uint16_t)lo;
                if (m->wrong && kj__mb_dwell(&c->view, c->max_dwell, x, y) != lo) (*m->wrong)++;
            }
        }
}

void kj__mb_ms_render_square(const kj__mb_config *c, unsigned bx, unsigned by, uint16_t *img, uint64_t *launches,
                             uint64_t *wrong_fills) {
    ms_run m = {c, img, 0, wrong_fills};
    unsigned side, gx, gy;
    kj__mb_top(c, &side, &gx, &gy);
    unsigned x0 = bx * side, y0 = by * side;
    unsigned x1 = x0 + side < c->view.w ? x0 + side : c->view.w;
    unsigned y1 = y0 + side < c->view.h ? y0 + side : c->view.h;
    ms_square(&m, x0, y0, x1, y1, side, 0);
    *launches += m.launches;
}

void kj__mb_ms_render(const kj__mb_config *c, uint16_t *img, uint64_t *launches, uint64_t *wrong_fills) {
    uint64_t n = 0;
    if (wrong_fills) *wrong_fills = 0;
    unsigned side, gx, gy;
    kj__mb_top(c, &side, &gx, &gy);
    for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) kj__mb_ms_render_square(c, bx, by, img, &n, wrong_fills);
    if (launches) *launches = n;
}

kj_status kj_mandelbrot_reference(unsigned width, unsigned height, const kj_mandelbrot_options *o, uint16_t *dwells,
                                  uint64_t *device_launches) {
    KJ_RETURN_IF(!dwells, KJ_ERR_USAGE, "kj_mandelbrot_reference: dwells is NULL");
    kj__mb_config c;
    KJ_FORWARD(kj__mb_config_make(width, height, o, &c));
    uint64_t launches = 0;
    if (o && o->algo == KJ_MANDELBROT_MS) {
        kj__mb_ms_render(&c, dwells, &launches, NULL);
    } else {
        for (unsigned y = 0; y < height; y++)
            for (unsigned x = 0; x < width; x++)
                dwells[(size_t)y * width + x] = (uint16_t)kj__mb_dwell(&c.view, c.max_dwell, x, y);
    }
    if (device_launches) *device_launches = launches;
    return KJ_OK;
}

kj_status kj_mandelbrot_dwell(unsigned width, unsigned height, unsigned x, unsigned y,
                              const kj_mandelbrot_options *o, unsigned *dwell) {
    KJ_RETURN_IF(!dwell, KJ_ERR_USAGE, "kj_mandelbrot_dwell: dwell is NULL");
    kj__mb_config c;
    KJ_FORWARD(kj__mb_config_make(width, height, o, &c));
    KJ_RETURN_IF(x >= width || y >= height, KJ_ERR_USAGE, "pixel (%u, %u) is outside the %u x %u image", x, y, width,
                 height);
    *dwell = kj__mb_dwell(&c.view, c.max_dwell, x, y);
    return KJ_OK;
}
