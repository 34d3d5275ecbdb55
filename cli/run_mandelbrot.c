/* kernjit run mandelbrot: renders a Mandelbrot image of dwells with escape time or Mariani-Silver
 * (dynamic parallelism), times it, spot-checks it against the CPU, optionally compares the two
 * algorithms and writes the image. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "run.h"
#include "check_util.h"
#include "run_harness.h"
#include "kjtest.h"

static void help(void) {
    printf("usage: kernjit run mandelbrot [--size N] [--width W --height H] [--dwell D]\n"
           "           [--algo escape|ms] [--out FILE.png|FILE.ppm|FILE.pgm]\n"
           "           [--window X0,X1,Y0,Y1] [--compare] [--init-subdiv S] [--subdiv S]\n"
           "           [--max-depth D] [--min-size M] [--repeat R] [--pending P] [--json]\n"
           "\n"
           "Renders an N x N image (default 16384) of Mandelbrot dwells (default at most\n"
           "512) on the window [-1.5, 0.5] x [-1, 1]: escape time (a thread per pixel) or\n"
           "Mariani-Silver (default: squares with a uniform border are filled, others split\n"
           "into child grids launched from the GPU). Prints the median GPU time of R runs\n"
           "(default 5), the device-side launches, and checks 1000 random pixels against the\n"
           "CPU. --compare also renders with the other algorithm and counts the pixels that\n"
           "differ (exit 1 unless none). --out writes the image in colour: PNG when kernjit\n"
           "was built with libpng%s, otherwise PPM (FILE.png becomes FILE.ppm);\n"
           "FILE.pgm is grayscale. The Mariani-Silver parameters take the values `kernjit\n"
           "list mandelbrot` shows.\n",
           image_have_png() ? " (it was)" : " (it was not)");
}

/* The value must be one of the metadata's for that macro (checked here, before any device is
 * needed, so that a mistyped value is a usage error everywhere). */
static int check_macro(const char *cmd, const char *option, const char *macro, unsigned value) {
    kj_kernel_desc *d;
    if (kj_describe(NULL, "mandelbrot", &d) != KJ_OK) return cli_error(cmd, "%s", kj_last_error());
    char v[24];
    snprintf(v, sizeof v, "%u", value);
    int rc = EXIT_OK;
    for (size_t i = 0; i < kj_desc_param_count(d); i++) {
        kj_param_info p = KJ_PARAM_INFO_INIT;
        if (kj_desc_param(d, i, &p) != KJ_OK || strcmp(p.name, macro) != 0) continue;
        int found = 0;
        for (size_t j = 0; j < p.value_count; j++) found |= strcmp(p.values[j], v) == 0;
        if (!found) {
            char allowed[512] = "";
            for (size_t j = 0; j < p.value_count; j++) {
                size_t len = strlen(allowed);
                snprintf(allowed + len, sizeof allowed - len, "%s%s", j ? " " : "", p.values[j]);
            }
            rc = cli_usage(cmd, "%s %u: allowed are %s", option, value, allowed);
        }
    }
    kj_desc_free(d);
    return rc;
}

static int parse_window(const char *text, kj_mandelbrot_options *o) {
    char *end;
    double v[4];
    const char *p = text;
    for (int i = 0; i < 4; i++) {
        v[i] = strtod(p, &end);
        if (end == p || (i < 3 && *end != ',') || (i == 3 && *end) || !isfinite(v[i])) return -1;
        p = end + 1;
    }
    if (!(v[0] < v[1]) || !(v[2] < v[3])) return -1;
    o->x_min = v[0];
    o->x_max = v[1];
    o->y_min = v[2];
    o->y_max = v[3];
    return 0;
}

/* Inside the set black; outside, brighter the longer the point took to escape. */
/* Dwell to pixels: inside the set (dwell = max) black; outside, log-scaled dwell on the colour map
 * (or its lightness alone for a .pgm), so that the fast-escaping outer bands and the slow ones near
 * the boundary both stay visible. */
static void to_pixels(const uint16_t *dwells, size_t n, unsigned max_dwell, int channels, uint8_t *out) {
    static uint8_t lut[65536][3];
    for (unsigned d = 0; d <= max_dwell; d++) {
        if (d >= max_dwell) {
            lut[d][0] = lut[d][1] = lut[d][2] = 0;
            continue;
        }
        double t = 0.1 + 0.9 * log1p((double)d) / log1p((double)max_dwell);
        image_colormap(t, lut[d]);
        if (channels == 1) lut[d][0] = (uint8_t)(255.0 * t + 0.5);
    }
    for (size_t i = 0; i < n; i++)
        memcpy(out + i * (size_t)channels, lut[dwells[i] <= max_dwell ? dwells[i] : max_dwell], (size_t)channels);
}

typedef struct mandelbrot_run {
    run_ctx run;
    kj_mandelbrot_options options;
    uint64_t width, height;
    unsigned w, h, max_dwell;
    size_t pixels, bytes;
    const char *out;            /* --out */
    int compare;                /* --compare */
    kj_dp_report report, first; /* the last run's and the first's */
    kj_devptr image;
    uint16_t *host;                      /* the last run's image */
    unsigned checked, bad, bad_x, bad_y; /* the spot check */
    kj_mandelbrot_algo other_algo;       /* --compare: the other algorithm, its time, the pixels that differ */
    double other_ms;
    size_t differ;
    char written[4096]; /* the file --out wrote */
} mandelbrot_run;

static int option(run_ctx *c, int opt, char *arg) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    kj_mandelbrot_options *o = &m->options;
    uint64_t v;
    switch (opt) {
    case 'N':
    case 'W':
    case 'H': {
        int rc = cli_count_arg(c->cmd, opt == 'N' ? "--size" : opt == 'W' ? "--width" : "--height", arg, 1, 32768, &v);
        if (rc != EXIT_OK) return rc;
        if (opt != 'H') m->width = v;
        if (opt != 'W') m->height = v;
        break;
    }
    case 'd':
    case 'I':
    case 'S':
    case 'D':
    case 'M': {
        const char *name = opt == 'd'   ? "--dwell"
                           : opt == 'I' ? "--init-subdiv"
                           : opt == 'S' ? "--subdiv"
                           : opt == 'D' ? "--max-depth"
                                        : "--min-size";
        const char *macro = opt == 'd'   ? "MAX_DWELL"
                            : opt == 'I' ? "INIT_SUBDIV"
                            : opt == 'S' ? "SUBDIV"
                            : opt == 'D' ? "MAX_DEPTH"
                                         : "MIN_SIZE";
        if (cli_parse_uint(arg, 1u << 20, &v) != 0 || v == 0)
            return cli_usage(c->cmd, "%s '%s' is not a positive integer", name, arg);
        int rc = check_macro(c->cmd, name, macro, (unsigned)v);
        if (rc != EXIT_OK) return rc;
        *(opt == 'd'   ? &o->max_dwell
          : opt == 'I' ? &o->init_subdiv
          : opt == 'S' ? &o->subdiv
          : opt == 'D' ? &o->max_depth
                       : &o->min_size) = (unsigned)v;
        break;
    }
    case 'a': return cli_parsed(c->cmd, kj_mandelbrot_algo_parse(arg, &o->algo));
    case 'o': m->out = arg; break;
    case 'w':
        if (parse_window(arg, o) != 0)
            return cli_usage(c->cmd, "--window '%s' is not X0,X1,Y0,Y1 with X0 < X1 and Y0 < Y1", arg);
        break;
    case 'c': m->compare = 1; break;
    case 'p': return cli_count_arg(c->cmd, "--pending", arg, 1, 1u << 30, &o->pending_launches);
    }
    return EXIT_OK;
}

static int prepare(run_ctx *c) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    if (m->out) {
        /* before the work: a picture that cannot be written would be found out only after it */
        char what[CLI_MESSAGE_MAX];
        kj_message_format(what, sizeof what, "--out '%s'", m->out);
        int rc = cli_check_output_folder(c->cmd, what, m->out);
        if (rc) return rc;
    }
    m->w = (unsigned)m->width;
    m->h = (unsigned)m->height;
    m->max_dwell = m->options.max_dwell ? m->options.max_dwell : 512;
    unsigned probe;
    if (kjtest_mandelbrot_dwell(m->w, m->h, 0, 0, &m->options, &probe) != KJ_OK)
        return cli_usage(c->cmd, "%s", kjtest_last_error());
    m->pixels = (size_t)m->w * m->h;
    m->bytes = m->pixels * sizeof(uint16_t);
    m->other_algo = m->options.algo == KJ_MANDELBROT_MS ? KJ_MANDELBROT_ESCAPE : KJ_MANDELBROT_MS;
    m->options.report = &m->report;
    c->device_bytes = (m->compare ? 2 : 1) * (uint64_t)m->bytes;
    snprintf(c->what, sizeof c->what, "%u x %u%s", m->w, m->h, m->compare ? " with --compare" : "");
    return EXIT_OK;
}

static kj_status timed(run_ctx *c, double *gpu_ms) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    kj_status s = kj_memset_u8(c->rt, m->image, 0xff, m->bytes);
    if (s == KJ_OK) s = kj_mandelbrot(c->rt, m->image, m->w, m->h, &m->options);
    *gpu_ms = m->report.gpu_ms;
    return s;
}

static int setup(run_ctx *c) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    RUN_TRY(c, run_device(c, m->bytes, &m->image));
    double ms;
    RUN_TRY(c, timed(c, &ms)); /* compiles or loads the kernel: not timed */
    m->first = m->report;
    return EXIT_OK;
}

/* The same pixels every run (a fixed generator), against the CPU's dwells. */
static void spot_check(mandelbrot_run *m) {
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        unsigned x = (unsigned)(r % m->w), y = (unsigned)((r >> 32) % m->h), want = 0;
        kjtest_mandelbrot_dwell(m->w, m->h, x, y, &m->options, &want);
        m->checked++;
        if (m->host[(size_t)y * m->w + x] != want && m->bad++ == 0) {
            m->bad_x = x;
            m->bad_y = y;
        }
    }
}

/* --compare: the other algorithm's image, pixel for pixel. */
static int compare(run_ctx *c) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    kj_mandelbrot_options oo = m->options;
    kj_dp_report rr = KJ_DP_REPORT_INIT;
    kj_devptr other;
    oo.algo = m->other_algo;
    oo.report = &rr;
    uint16_t *host_other = run_host(c, m->bytes);
    if (!host_other) return EXIT_FAILURE_;
    RUN_TRY(c, run_device(c, m->bytes, &other));
    RUN_TRY(c, kj_memset_u8(c->rt, other, 0xff, m->bytes));
    RUN_TRY(c, kj_mandelbrot(c->rt, other, m->w, m->h, &oo));
    RUN_TRY(c, kj_mandelbrot(c->rt, other, m->w, m->h, &oo));
    RUN_TRY(c, kj_memcpy_dtoh(c->rt, host_other, other, m->bytes));
    m->other_ms = rr.gpu_ms;
    for (size_t i = 0; i < m->pixels; i++) m->differ += m->host[i] != host_other[i];
    return EXIT_OK;
}

/* --out: the image in colour (or grayscale for a .pgm). */
static int write_image(run_ctx *c) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    char err[4200];
    /* a .pgm asked for by name stays grayscale; PNG (and PPM) get colour */
    size_t len = strlen(m->out);
    int channels = len >= 4 && strcmp(m->out + len - 4, ".pgm") == 0 ? 1 : 3;
    uint8_t *pixels = run_host(c, m->pixels * (size_t)channels);
    if (!pixels) return EXIT_FAILURE_;
    to_pixels(m->host, m->pixels, m->max_dwell, channels, pixels);
    if ((channels == 1 ? image_write_gray : image_write_rgb)(m->out, pixels, m->w, m->h, m->written, sizeof m->written,
                                                             err, sizeof err) != 0)
        return cli_error(c->cmd, "%s", err);
    return EXIT_OK;
}

static int check(run_ctx *c) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    if (!(m->host = run_host(c, m->bytes))) return EXIT_FAILURE_;
    RUN_TRY(c, kj_memcpy_dtoh(c->rt, m->host, m->image, m->bytes));
    spot_check(m);
    int rc = m->compare ? compare(c) : EXIT_OK;
    if (rc == EXIT_OK && m->out) rc = write_image(c);
    /* no dwell is 0xffff: a pixel still the poison was never written, spot-checked or not */
    size_t unwritten = check_poisoned(m->host, m->pixels, sizeof *m->host, 0xff);
    if (unwritten == m->pixels)
        snprintf(c->wrong, sizeof c->wrong,
                 "the GPU image was never written: all %zu pixels still hold the poison "
                 "(0xffff, no dwell) put there before the run",
                 unwritten);
    else if (m->bad)
        snprintf(c->wrong, sizeof c->wrong,
                 "%u of %u pixels differ from the CPU's dwells (first at %u, %u); %zu of the "
                 "image's never written",
                 m->bad, m->checked, m->bad_x, m->bad_y, unwritten);
    else if (unwritten)
        snprintf(c->wrong, sizeof c->wrong,
                 "%zu of the image's %zu pixels were never written (they still hold the "
                 "poison put there before the run)",
                 unwritten, m->pixels);
    else if (m->differ)
        snprintf(c->wrong, sizeof c->wrong, "the %s and %s images differ in %zu pixels",
                 kj_mandelbrot_algo_name(m->options.algo), kj_mandelbrot_algo_name(m->other_algo), m->differ);
    return rc;
}

static void json(run_ctx *c) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    json_fields("algo=%s entry=%s width=%u height=%u max_dwell=%u levels=%u origin=%s repeat=%" PRIu64
                " median_ms=%g device_launches=%" PRIu64 " launch_bound=%" PRIu64 " pending_limit=%" PRIu64
                " spot_checked=%u spot_wrong=%u",
                kj_mandelbrot_algo_name(m->options.algo), m->first.entry, m->w, m->h, m->max_dwell, m->first.levels,
                kj_origin_name(m->first.origin), c->repeat, c->median_ms, m->report.device_launches,
                m->report.expected_launches, m->report.pending_limit, m->checked, m->bad);
    if (m->compare)
        json_fields("compared_with=%s compared_median_ms=%g pixels_differ=%zu", kj_mandelbrot_algo_name(m->other_algo),
                    m->other_ms, m->differ);
    if (m->out) json_string("image_path", m->written);
}

static void text(run_ctx *c) {
    mandelbrot_run *m = (mandelbrot_run *)c;
    printf("mandelbrot %s, %u x %u, dwell %u\n", kj_mandelbrot_algo_name(m->options.algo), m->w, m->h, m->max_dwell);
    printf("  kernel      %s, %u x %u blocks of %u x %u, %u level%s of grids (%s)\n", m->first.entry, m->first.grid[0],
           m->first.grid[1], m->first.block[0], m->first.block[1], m->first.levels, m->first.levels == 1 ? "" : "s",
           cli_origin_text(m->first.origin));
    printf("  time        %.3f ms median of %llu runs (GPU)\n", c->median_ms, (unsigned long long)c->repeat);
    if (m->options.algo == KJ_MANDELBROT_MS)
        printf("  launches    %llu device-side (at most %llu), pending-launch limit %llu\n",
               (unsigned long long)m->report.device_launches, (unsigned long long)m->report.expected_launches,
               (unsigned long long)m->report.pending_limit);
    printf("  check       %u of %u random pixels equal the CPU's dwells\n", m->checked - m->bad, m->checked);
    if (m->compare)
        printf("  compare     %s (%.3f ms): %zu of %zu pixels differ%s\n", kj_mandelbrot_algo_name(m->other_algo),
               m->other_ms, m->differ, m->pixels, m->differ ? "" : ", identical images");
    if (m->out) printf("  image       %s\n", m->written);
}

static const run_family mandelbrot = {
    .kernel = "mandelbrot",
    .help = help,
    .max_repeat = 1000,
    .options = "size=N: width=W: height=H: dwell=d: algo=a: out=o: window=w: compare=c init-subdiv=I: subdiv=S: "
               "max-depth=D: min-size=M: pending=p:",
    .option = option,
    .prepare = prepare,
    .setup = setup,
    .timed = timed,
    .check = check,
    .json = json,
    .text = text};

int run_mandelbrot(int argc, char **argv) {
    mandelbrot_run m = {
        .run.repeat = 5,
        .options = {.size = sizeof(kj_mandelbrot_options), .algo = KJ_MANDELBROT_MS, .count_launches = 1},
        .report = KJ_DP_REPORT_INIT,
        .width = 16384,
        .height = 16384};
    return run_main(&mandelbrot, &m.run, argc, argv);
}
