/* Host side of kernels_src/mandelbrot.cu: kj_mandelbrot picks the entry, checks the nesting depth,
 * sizes the pending-launch limit, launches and checks the device-side launches. */
#include <stdio.h>
#include <string.h>

#include "ops/cdp/cdp.h"
#include "ops/mandelbrot/mandelbrot_cpu.h"
#include "ops/ops.h"

#define MB_BX 32 /* the kernels' block: MB_BX x MB_BY */
#define MB_BY 8

static const char *const algo_names[KJ_MANDELBROT_ALGO_COUNT_] = {"escape", "ms"};

const char *kj_mandelbrot_algo_name(kj_mandelbrot_algo a) {
    return (unsigned)a < KJ_MANDELBROT_ALGO_COUNT_ ? algo_names[a] : "?";
}

kj_status kj_mandelbrot_algo_parse(const char *text, kj_mandelbrot_algo *algo) {
    int i = kj__name_find(algo_names, KJ_MANDELBROT_ALGO_COUNT_, text);
    KJ_RETURN_IF(i < 0, KJ_ERR_USAGE, "unknown Mandelbrot algorithm '%.40s': allowed are escape, ms",
                 text ? text : "(null)");
    *algo = (kj_mandelbrot_algo)i;
    return KJ_OK;
}

kj_status kj_mandelbrot(kj_runtime *rt, kj_devptr dwells, unsigned width, unsigned height,
                        const kj_mandelbrot_options *o) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_mandelbrot: runtime is NULL");
    KJ_RETURN_IF(!dwells, KJ_ERR_USAGE, "kj_mandelbrot: dwells is 0");
    kj_mandelbrot_options defaults = KJ_MANDELBROT_OPTIONS_INIT, copy;
    if (!o) o = &defaults;
    KJ__SIZED_INPUT(o, copy, kj_mandelbrot_options, KJ_MANDELBROT_OPTIONS_INIT);
    if (o->report) KJ_FORWARD(KJ__SIZED_CHECK(o->report, kj_dp_report, KJ_DP_REPORT_INIT));
    kj__mb_config c;
    char why[512];
    KJ_RETURN_IF(kj__mb_config_make(width, height, o, &c, why, sizeof why) != 0, KJ_ERR_USAGE, "%s", why);
    KJ_FORWARD(kj__enter(rt));
    const int ms = o->algo == KJ_MANDELBROT_MS;
    char what[96];
    snprintf(what, sizeof what, "Mandelbrot (%s, %u x %u, max_depth %u)", algo_names[o->algo], width, height,
             c.max_depth);
    /* The depth asked for, before anything is compiled or launched. */
    if (ms) KJ_FORWARD(kj__cdp_check_depth(rt, c.max_depth, what));

    char v[6][16];
    snprintf(v[0], sizeof v[0], "%u", c.max_dwell);
    snprintf(v[1], sizeof v[1], "%u", c.init_subdiv);
    snprintf(v[2], sizeof v[2], "%u", c.subdiv);
    snprintf(v[3], sizeof v[3], "%u", c.max_depth);
    snprintf(v[4], sizeof v[4], "%u", c.min_size);
    snprintf(v[5], sizeof v[5], "%d", o->count_launches ? 1 : 0);
    kj_define defs[] = {{"MAX_DWELL", v[0]}, {"INIT_SUBDIV", v[1]}, {"SUBDIV", v[2]},
                        {"MAX_DEPTH", v[3]}, {"MIN_SIZE", v[4]},    {"COUNT_LAUNCHES", v[5]}};
    const char *entry = ms ? "mandelbrot_ms" : "mandelbrot_escape";
    /* nothing to tune: the plan keeps the kernel of these macros */
    kj__config_call call = {.kernel = "mandelbrot", .entry = entry, .fixed = defs, .fixed_count = 6};
    kj__config got;
    KJ_FORWARD(kj__config_resolve(rt, &call, &got));
    kj_kernel *k = got.kernel;
    kj_origin origin = got.origin;

    kj__lane *lane;
    KJ_FORWARD(kj__cdp_lane_get(rt, o->stream, 0, &lane));
    kj_devptr status = lane->buffer + KJ__CDP_STATUS;
    unsigned levels = 1, side = 0, gx, gy, bx = MB_BX, by = MB_BY;
    uint64_t bound = 0, pending = 0;
    KJ_FORWARD(kj__cdp_begin(rt, lane));
    if (ms) {
        /* Nothing beyond the launches the tree makes can be pending at once. */
        bound = kj__mb_launch_bound(&c, &levels);
        pending = o->pending_launches ? o->pending_launches : (bound ? bound : 1);
        kj__mb_top(&c, &side, &gx, &gy);
        unsigned zero = 0, w = width, h = height;
        void *args[] = {&dwells, &c.view, &zero, &zero, &side, &w, &h, &zero, &status};
        kj_launch_config cfg = {.size = sizeof cfg,
                                .grid = {gx, gy, 1},
                                .block = {bx, by, 1},
                                .stream = o->stream,
                                .pending_launches = pending};
        KJ_FORWARD(kj__kernel_launch(k, &cfg, args));
    } else {
        gx = (width + bx - 1) / bx;
        gy = (height + by - 1) / by;
        pending = o->pending_launches ? o->pending_launches : 1;
        void *args[] = {&dwells, &c.view};
        kj_launch_config cfg = {.size = sizeof cfg,
                                .grid = {gx, gy, 1},
                                .block = {bx, by, 1},
                                .stream = o->stream,
                                .pending_launches = pending};
        KJ_FORWARD(kj__kernel_launch(k, &cfg, args));
    }
    kj_cdp_status st;
    double ms_time = 0;
    KJ_FORWARD(kj__cdp_finish(rt, lane, NULL, 0, what, &st, o->report ? &ms_time : NULL));
    if (o->report) {
        kj_dp_report full, *r = &full;
        memset(r, 0, sizeof *r);
        r->entry = entry;
        r->grid[0] = gx;
        r->grid[1] = gy;
        r->block[0] = bx;
        r->block[1] = by;
        r->levels = levels;
        r->counted = o->count_launches ? 1 : 0;
        r->device_launches = r->counted ? st.launches : 0;
        r->expected_launches = bound;
        r->pending_launches = pending;
        r->pending_limit = kj__pending_launch_limit(rt);
        r->gpu_ms = ms_time;
        r->origin = origin;
        KJ__SIZED_WRITE(o->report, full);
    }
    return KJ_OK;
}
