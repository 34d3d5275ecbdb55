//@kernjit summary  Mandelbrot dwell images: escape time (a thread per pixel) and Mariani-Silver with dynamic parallelism (CDP2)
//@kernjit entry    mandelbrot_ms mandelbrot_escape
//@kernjit param    MAX_DWELL pow2 16..16384 = 512
//@kernjit param    INIT_SUBDIV 4 8 16 32 64 = 32
//@kernjit param    SUBDIV 2 4 8 = 4
//@kernjit param    MAX_DEPTH 1..8 = 4
//@kernjit param    MIN_SIZE 4 8 16 32 64 = 32
//@kernjit param    COUNT_LAUNCHES 0 1 = 0
//@kernjit rdc
//@kernjit limit    pending-launches 32768
//
// The image is w x h dwells (unsigned short, row-major); pixel (x, y) is the point
// c = (x0 + x dx, y1 - y dy) and its dwell the number of iterations z <- z^2 + c, from z = c, that
// keep |z|^2 <= 4, at most MAX_DWELL.
//
// Every floating-point operation of the dwell is rounded on its own (__fmul_rn, __fadd_rn: the
// compiler may not fuse them into multiply-adds), so a CPU doing the same operations in IEEE single
// precision gets every dwell bit for bit (src/ops/mandelbrot/mandelbrot_reference.c). That is what lets the
// tests compare images byte for byte.
//
// Mariani-Silver (mandelbrot_ms): the host launches INIT_SUBDIV x INIT_SUBDIV blocks over the image,
// each owning a square of side ceil(max(w, h) / INIT_SUBDIV). A block computes the dwells of its
// square's border. If they are all equal it fills the inside with that dwell (a border in the set
// must moreover lie inside the main cardioid or the period-2 disk; see mandelbrot_ms); otherwise, if the
// squares one level down (side ceil(side / SUBDIV)) are at least MIN_SIZE and the grid's depth + 1
// is below MAX_DEPTH, its thread 0 launches a grid of SUBDIV x SUBDIV blocks on the sub-squares;
// otherwise it computes the inside pixel by pixel. Squares are clipped to the image (and children to
// their parent's square), so any w and h work.
//
// The fill is the algorithm's bet: for the exact set, a closed curve of equal dwell encloses only
// that dwell (the set and its escape-time bands are connected and have no holes), but the border is
// only sampled at pixels, and a filament thinner than a pixel can slip between two samples. So the
// two algorithms give the same image exactly when no filled square hides such a filament. The CPU
// emulation of both (src/ops/mandelbrot/mandelbrot_reference.c) found such squares at 16384 x 16384, dwell 512,
// only among borders wholly in the set (29 escaping pixels under 16 squares); with those squares
// required to lie inside the cardioid or the period-2 disk, which is checked in closed form, the
// default configuration gives the escape-time image exactly there, on the default window, and so do
// the configurations of the tests. kjtest_mandelbrot_reference runs the same comparison for others.
#include "cdp.cuh"

#define MB_BX 32
#define MB_BY 8
#define MB_THREADS (MB_BX * MB_BY)

#include "mandelbrot_view.h"

__device__ __forceinline__ unsigned kj_dwell(const kj_view &v, unsigned x, unsigned y) {
    const float cx = __fadd_rn(v.x0, __fmul_rn(__uint2float_rn(x), v.dx));
    const float cy = __fsub_rn(v.y1, __fmul_rn(__uint2float_rn(y), v.dy));
    float zx = cx, zy = cy;
    unsigned d = 0;
    while (d < MAX_DWELL) {
        const float x2 = __fmul_rn(zx, zx), y2 = __fmul_rn(zy, zy);
        if (__fadd_rn(x2, y2) > 4.0f) break;
        zy = __fadd_rn(__fmul_rn(__fadd_rn(zx, zx), zy), cy);
        zx = __fadd_rn(__fsub_rn(x2, y2), cx);
        d++;
    }
    return d;
}

// Whether c is strictly inside the main cardioid or the period-2 disk, the two parts of the set with a
// closed form (about 91% of its area), in float with the same separately rounded operations as the
// CPU's copy, so that both make the same decision.
__device__ __forceinline__ bool kj_surely_inside(const kj_view &v, unsigned x, unsigned y) {
    const float cx = __fadd_rn(v.x0, __fmul_rn(__uint2float_rn(x), v.dx));
    const float cy = __fsub_rn(v.y1, __fmul_rn(__uint2float_rn(y), v.dy));
    const float xm = __fsub_rn(cx, 0.25f), y2 = __fmul_rn(cy, cy);
    const float q = __fadd_rn(__fmul_rn(xm, xm), y2);
    if (__fmul_rn(q, __fadd_rn(q, xm)) < __fmul_rn(0.25f, y2)) return true;
    const float xp = __fadd_rn(cx, 1.0f);
    return __fadd_rn(__fmul_rn(xp, xp), y2) < 0.0625f;
}

// One thread per pixel; blocks of MB_BX x MB_BY.
extern "C" __global__ void __launch_bounds__(MB_THREADS) mandelbrot_escape(unsigned short *dwells, kj_view v) {
    const unsigned x = blockIdx.x * MB_BX + threadIdx.x, y = blockIdx.y * MB_BY + threadIdx.y;
    if (x < v.w && y < v.h) dwells[(size_t)y * v.w + x] = (unsigned short)kj_dwell(v, x, y);
}

// Block (bx, by) of the grid owns the square of side `side` at (ox + bx side, oy + by side), clipped
// to [0, xlim) x [0, ylim); the grid is sized so that no square is empty. Blocks of MB_BX x MB_BY.
extern "C" __global__ void __launch_bounds__(MB_THREADS)
    mandelbrot_ms(unsigned short *dwells, kj_view v, unsigned ox, unsigned oy, unsigned side, unsigned xlim,
                  unsigned ylim, unsigned depth, kj_cdp_status *status) {
    __shared__ unsigned lo, hi;
    const unsigned t = threadIdx.y * MB_BX + threadIdx.x;
    const unsigned x0 = ox + blockIdx.x * side, y0 = oy + blockIdx.y * side;
    const unsigned x1 = min(x0 + side, xlim), y1 = min(y0 + side, ylim);
    const unsigned rw = x1 - x0, rh = y1 - y0;
    if (t == 0) {
        lo = 0xffffffffu;
        hi = 0;
    }
    __syncthreads();

    // The border, each pixel once: top row, bottom row, then the left and right columns between them.
    // Its dwells are exact, so they are stored whatever happens next.
    const unsigned bottom = rh > 1 ? rw : 0, sides = rh > 2 ? rh - 2 : 0, right = rw > 1 ? sides : 0;
    const unsigned border = rw + bottom + sides + right;
    unsigned my_lo = 0xffffffffu, my_hi = 0;
    int my_inside = 1;
    for (unsigned k = t; k < border; k += MB_THREADS) {
        unsigned x, y, i = k;
        if (i < rw) {
            x = x0 + i;
            y = y0;
        } else if ((i -= rw) < bottom) {
            x = x0 + i;
            y = y1 - 1;
        } else if ((i -= bottom) < sides) {
            x = x0;
            y = y0 + 1 + i;
        } else {
            x = x1 - 1;
            y = y0 + 1 + (i - sides);
        }
        const unsigned d = kj_dwell(v, x, y);
        dwells[(size_t)y * v.w + x] = (unsigned short)d;
        my_lo = min(my_lo, d);
        my_hi = max(my_hi, d);
        my_inside &= kj_surely_inside(v, x, y);
    }
    atomicMin(&lo, my_lo);
    atomicMax(&hi, my_hi);
    const int inside = __syncthreads_and(my_inside);

    // Fill when the border has one dwell, except that a border wholly in the set (dwell MAX_DWELL)
    // must also lie inside the cardioid or the period-2 disk: those are simply connected and smooth
    // but for the cardioid's cusp, whose outside spike (on the real axis) a border samples wherever
    // it crosses it, so the whole square is then inside them. Elsewhere a border in the set can
    // enclose escaping pixels (the CPU emulation finds such squares at 16384 x 16384); such a square
    // is handled as a non-uniform one.
    const bool uniform = lo == hi && (lo < MAX_DWELL || inside);
    const unsigned child = (side + SUBDIV - 1) / SUBDIV;
    if (!uniform && depth + 1 < MAX_DEPTH && child >= MIN_SIZE) {
        // Why fire-and-forget is correct under CDP2: a child needs nothing from its parent but its
        // arguments (it computes its own border; the parent's border pixels it may share hold the
        // same exact dwells), no sibling reads another's pixels, and nothing reads the image before
        // the host, after the whole launch tree has completed. So the children may run at once,
        // concurrently with the rest of their parent grid.
        if (t == 0) {
            const dim3 grid((rw + child - 1) / child, (rh + child - 1) / child);
            mandelbrot_ms<<<grid, dim3(MB_BX, MB_BY), 0, cudaStreamFireAndForget>>>(dwells, v, x0, y0, child, x1, y1,
                                                                                     depth + 1, status);
            kj_cdp_check(status);
        }
        return;
    }
    // The inside: filled with the border's dwell when that is uniform, else computed pixel by pixel.
    for (unsigned y = y0 + 1 + threadIdx.y; y + 1 < y1; y += MB_BY)
        for (unsigned x = x0 + 1 + threadIdx.x; x + 1 < x1; x += MB_BX)
            dwells[(size_t)y * v.w + x] = (unsigned short)(uniform ? lo : kj_dwell(v, x, y));
}
