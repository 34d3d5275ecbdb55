/* The Mandelbrot family's oracle: the dwell with exactly the kernel's arithmetic, and Mariani-Silver
 * emulated as the GPU runs it, on the configuration the library makes of the options
 * (src/ops/mandelbrot/mandelbrot_cpu.c). */
#include "oracle.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ops/mandelbrot/mandelbrot_cpu.h"

/* Every dwell must be the GPU's bit for bit. The kernel rounds each operation on its own (__fmul_rn,
 * __fadd_rn); here each operation is its own statement and contraction into fused multiply-adds is
 * off (GCC in ISO C mode does not contract; clang honours the pragma), and x86-64 and AArch64 compute
 * float in float (FLT_EVAL_METHOD 0). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

static unsigned dwell(const kj_view *v, unsigned max_dwell, unsigned x, unsigned y) {
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

static int surely_inside(const kj_view *v, unsigned x, unsigned y) {
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

typedef struct ms_run {
    const kj__mb_config *c;
    uint16_t *img;
    uint64_t launches;
    uint64_t *wrong;
} ms_run;

static void border_pixel(ms_run *m, unsigned x, unsigned y, unsigned *lo, unsigned *hi, int *inside) {
    unsigned d = dwell(&m->c->view, m->c->max_dwell, x, y);
    m->img[(size_t)y * m->c->view.w + x] = (uint16_t)d;
    if (d < *lo) *lo = d;
    if (d > *hi) *hi = d;
    *inside &= surely_inside(&m->c->view, x, y);
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
                *p = (uint16_t)dwell(&c->view, c->max_dwell, x, y);
            } else {
                *p = (uint16_t)lo;
                if (m->wrong && dwell(&c->view, c->max_dwell, x, y) != lo) (*m->wrong)++;
            }
        }
}

/* The host's block (bx, by) and its whole subtree; adds to *launches and *wrong_fills (when not NULL). */
static void ms_block(const kj__mb_config *c, unsigned bx, unsigned by, uint16_t *img, uint64_t *launches,
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

/* The configuration kj_mandelbrot makes of the options, or its refusal. */
static kj_status configure(const char *who, unsigned width, unsigned height, const kj_mandelbrot_options *o,
                           const void *out, kj__mb_config *c) {
    if (!out) return kjtest_fail(KJ_ERR_USAGE, "%s: the output is NULL", who);
    char why[512];
    if (kj__mb_config_make(width, height, o, c, why, sizeof why) != 0) return kjtest_fail(KJ_ERR_USAGE, "%s", why);
    return KJ_OK;
}

kj_status kjtest_mandelbrot_reference_ms(unsigned width, unsigned height, const kj_mandelbrot_options *o,
                                         uint16_t *dwells, uint64_t *device_launches, uint64_t *wrong_fills) {
    kj__mb_config c;
    kj_status s = configure("kjtest_mandelbrot_reference", width, height, o, dwells, &c);
    if (s != KJ_OK) return s;
    uint64_t launches = 0;
    if (wrong_fills) *wrong_fills = 0;
    unsigned side, gx, gy;
    kj__mb_top(&c, &side, &gx, &gy);
    for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) ms_block(&c, bx, by, dwells, &launches, wrong_fills);
    if (device_launches) *device_launches = launches;
    return KJ_OK;
}

kj_status kjtest_mandelbrot_reference(unsigned width, unsigned height, const kj_mandelbrot_options *o, uint16_t *dwells,
                                      uint64_t *device_launches) {
    if (o && o->algo == KJ_MANDELBROT_MS)
        return kjtest_mandelbrot_reference_ms(width, height, o, dwells, device_launches, NULL);
    kj__mb_config c;
    kj_status s = configure("kjtest_mandelbrot_reference", width, height, o, dwells, &c);
    if (s != KJ_OK) return s;
    for (unsigned y = 0; y < height; y++)
        for (unsigned x = 0; x < width; x++)
            dwells[(size_t)y * width + x] = (uint16_t)dwell(&c.view, c.max_dwell, x, y);
    if (device_launches) *device_launches = 0;
    return KJ_OK;
}

kj_status kjtest_mandelbrot_dwell(unsigned width, unsigned height, unsigned x, unsigned y,
                                  const kj_mandelbrot_options *o, unsigned *out) {
    kj__mb_config c;
    kj_status s = configure("kjtest_mandelbrot_dwell", width, height, o, out, &c);
    if (s != KJ_OK) return s;
    if (x >= width || y >= height)
        return kjtest_fail(KJ_ERR_USAGE, "pixel (%u, %u) is outside the %u x %u image", x, y, width, height);
    *out = dwell(&c.view, c.max_dwell, x, y);
    return KJ_OK;
}
