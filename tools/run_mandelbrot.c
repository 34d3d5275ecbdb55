/* kernjit run mandelbrot: renders a Mandelbrot image of dwells with escape time or Mariani-Silver
 * (dynamic parallelism), times it, spot-checks it against the CPU, optionally compares the two
 * algorithms and writes the image. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "image.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit run mandelbrot [--size N] [--width W --height H] [--dwell D] [--algo escape|ms]\n"
           "                              [--out FILE.png|FILE.ppm|FILE.pgm] [--window X0,X1,Y0,Y1] [--compare]\n"
           "                              [--init-subdiv S] [--subdiv S] [--max-depth D] [--min-size M]\n"
           "                              [--repeat R] [--pending P] [--json]\n\n"
           "Renders an N x N image (default 16384) of Mandelbrot dwells (default at most 512) on the window\n"
           "[-1.5, 0.5] x [-1, 1]: escape time (a thread per pixel) or Mariani-Silver (default: squares\n"
           "with a uniform border are filled, others split into child grids launched from the GPU).\n"
           "Prints the median GPU time of R runs (default 5), the device-side launches, and checks 1000\n"
           "random pixels against the CPU. --compare also renders with the other algorithm and counts the\n"
           "pixels that differ (exit 1 unless none). --out writes the image in colour: PNG when kernjit was\n"
           "built with libpng%s, otherwise PPM (FILE.png becomes FILE.ppm); FILE.pgm is grayscale.\n"
           "The Mariani-Silver parameters take\n"
           "the values `kernjit list mandelbrot` shows.\n",
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
        kj_param_info p;
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

int run_mandelbrot(int argc, char **argv) {
    static const struct option opts[] = {
        {"size", required_argument, 0, 'N'},        {"width", required_argument, 0, 'W'},
        {"height", required_argument, 0, 'H'},      {"dwell", required_argument, 0, 'd'},
        {"algo", required_argument, 0, 'a'},        {"out", required_argument, 0, 'o'},
        {"window", required_argument, 0, 'w'},      {"compare", no_argument, 0, 'c'},
        {"init-subdiv", required_argument, 0, 'I'}, {"subdiv", required_argument, 0, 'S'},
        {"max-depth", required_argument, 0, 'D'},   {"min-size", required_argument, 0, 'M'},
        {"repeat", required_argument, 0, 'r'},      {"pending", required_argument, 0, 'p'},
        {"json", no_argument, 0, 'j'},              {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *cmd = "run mandelbrot";
    kj_mandelbrot_options o = {0};
    o.algo = KJ_MANDELBROT_MS;
    o.count_launches = 1;
    uint64_t width = 16384, height = 16384, v, repeat = 5;
    const char *out = NULL;
    int compare = 0, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hN:W:H:d:a:o:w:cI:S:D:M:r:p:j", opts, NULL)) != -1) {
        switch (c) {
        case 'N': case 'W': case 'H':
            if (cli_parse_count(optarg, 32768, &v) != 0 || v == 0)
                return cli_usage(cmd, "--%s '%s': a size from 1 to 32768 (32K) is allowed",
                                 c == 'N' ? "size" : c == 'W' ? "width" : "height", optarg);
            if (c != 'H') width = v;
            if (c != 'W') height = v;
            break;
        case 'd': case 'I': case 'S': case 'D': case 'M': {
            const char *name = c == 'd' ? "--dwell" : c == 'I' ? "--init-subdiv" : c == 'S' ? "--subdiv"
                             : c == 'D' ? "--max-depth" : "--min-size";
            const char *macro = c == 'd' ? "MAX_DWELL" : c == 'I' ? "INIT_SUBDIV" : c == 'S' ? "SUBDIV"
                              : c == 'D' ? "MAX_DEPTH" : "MIN_SIZE";
            if (cli_parse_uint(optarg, 1u << 20, &v) != 0 || v == 0)
                return cli_usage(cmd, "%s '%s' is not a positive integer", name, optarg);
            int rc = check_macro(cmd, name, macro, (unsigned)v);
            if (rc != EXIT_OK) return rc;
            if (c == 'd') o.max_dwell = (unsigned)v;
            else if (c == 'I') o.init_subdiv = (unsigned)v;
            else if (c == 'S') o.subdiv = (unsigned)v;
            else if (c == 'D') o.max_depth = (unsigned)v;
            else o.min_size = (unsigned)v;
            break;
        }
        case 'a':
            if (kj_mandelbrot_algo_parse(optarg, &o.algo) != KJ_OK) return cli_usage(cmd, "%s", kj_last_error());
            break;
        case 'o': out = optarg; break;
        case 'w':
            if (parse_window(optarg, &o) != 0)
                return cli_usage(cmd, "--window '%s' is not X0,X1,Y0,Y1 with X0 < X1 and Y0 < Y1", optarg);
            break;
        case 'c': compare = 1; break;
        case 'r':
            if (cli_parse_uint(optarg, 1000, &repeat) != 0 || repeat == 0)
                return cli_usage(cmd, "--repeat '%s' is not a count from 1 to 1000", optarg);
            break;
        case 'p':
            if (cli_parse_uint(optarg, 1u << 30, &v) != 0 || v == 0)
                return cli_usage(cmd, "--pending '%s' is not a count from 1 to 2^30", optarg);
            o.pending_launches = v;
            break;
        case 'j': json = 1; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage(cmd, "unknown option");
        }
    }
    if (optind < argc) return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
    if (out) {
        /* before the work: a picture that cannot be written would be found out only after it */
        char what[CLI_MESSAGE_MAX];
        kj_message_format(what, sizeof what, "--out '%s'", out);
        int rc = cli_check_output_folder(cmd, what, out);
        if (rc) return rc;
    }
    unsigned w = (unsigned)width, h = (unsigned)height, max_dwell = o.max_dwell ? o.max_dwell : 512;
    unsigned probe;
    if (kj_mandelbrot_dwell(w, h, 0, 0, &o, &probe) != KJ_OK) return cli_usage(cmd, "%s", kj_last_error());
    size_t pixels = (size_t)w * h, bytes = pixels * sizeof(uint16_t);

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(cmd, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(cmd, "no CUDA device: nothing can run here (`kernjit compile mandelbrot` works without one)");
    }
    char what[64];
    snprintf(what, sizeof what, "%u x %u%s", w, h, compare ? " with --compare" : "");
    int rc = cli_check_device_memory(rt, cmd, what, (compare ? 2 : 1) * (uint64_t)bytes);
    if (rc != EXIT_OK) {
        kj_runtime_destroy(rt);
        return rc;
    }
    kj_devptr img = 0, other = 0;
    uint16_t *host = NULL, *host_other = NULL;
    uint8_t *gray = NULL;
    double *times = calloc(repeat, sizeof *times);
    kj_dp_report report, first;
    o.report = &report;
    if (!times || (s = kj_mem_alloc(rt, bytes, &img)) != KJ_OK) {
        rc = times ? cli_fail(cmd, s) : cli_error(cmd, "out of host memory");
        goto done;
    }
    /* Run 0 compiles or loads the kernel and is not timed. */
    for (uint64_t i = 0; i <= repeat; i++) {
        if ((s = kj_memset_u8(rt, img, 0xff, bytes)) != KJ_OK || (s = kj_mandelbrot(rt, img, w, h, &o)) != KJ_OK) {
            rc = cli_fail(cmd, s);
            goto done;
        }
        if (i == 0) first = report;
        else times[i - 1] = report.gpu_ms;
    }
    double med = cli_median(times, repeat);
    if (!(host = malloc(bytes))) {
        rc = cli_error(cmd, "out of host memory for %zu bytes", bytes);
        goto done;
    }
    if ((s = kj_memcpy_dtoh(rt, host, img, bytes)) != KJ_OK) {
        rc = cli_fail(cmd, s);
        goto done;
    }
    /* Spot check: the same pixels every run (a fixed generator), against the CPU's dwells. */
    unsigned checked = 0, bad = 0, bx = 0, by = 0;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        unsigned x = (unsigned)(r % w), y = (unsigned)((r >> 32) % h), want = 0;
        kj_mandelbrot_dwell(w, h, x, y, &o, &want);
        checked++;
        if (host[(size_t)y * w + x] != want && bad++ == 0) {
            bx = x;
            by = y;
        }
    }
    double other_ms = 0;
    size_t differ = 0;
    kj_mandelbrot_algo other_algo = o.algo == KJ_MANDELBROT_MS ? KJ_MANDELBROT_ESCAPE : KJ_MANDELBROT_MS;
    if (compare) {
        kj_mandelbrot_options oo = o;
        kj_dp_report rr;
        oo.algo = other_algo;
        oo.report = &rr;
        if (!(host_other = malloc(bytes))) {
            rc = cli_error(cmd, "out of host memory for %zu bytes", bytes);
            goto done;
        }
        if ((s = kj_mem_alloc(rt, bytes, &other)) != KJ_OK || (s = kj_memset_u8(rt, other, 0xff, bytes)) != KJ_OK ||
            (s = kj_mandelbrot(rt, other, w, h, &oo)) != KJ_OK || (s = kj_mandelbrot(rt, other, w, h, &oo)) != KJ_OK ||
            (s = kj_memcpy_dtoh(rt, host_other, other, bytes)) != KJ_OK) {
            rc = cli_fail(cmd, s);
            goto done;
        }
        other_ms = rr.gpu_ms;
        for (size_t i = 0; i < pixels; i++) differ += host[i] != host_other[i];
    }
    char written[4096] = "";
    if (out) {
        char err[4200];
        /* a .pgm asked for by name stays grayscale; PNG (and PPM) get colour */
        size_t len = strlen(out);
        int channels = len >= 4 && strcmp(out + len - 4, ".pgm") == 0 ? 1 : 3;
        if (!(gray = malloc(pixels * (size_t)channels))) {
            rc = cli_error(cmd, "out of host memory for %zu bytes", pixels * (size_t)channels);
            goto done;
        }
        to_pixels(host, pixels, max_dwell, channels, gray);
        if ((channels == 1 ? image_write_gray : image_write_rgb)(out, gray, w, h, written, sizeof written, err,
                                                                 sizeof err) != 0) {
            rc = cli_error(cmd, "%s", err);
            goto done;
        }
    }

    if (json) {
        json_begin_object();
        json_string("kernel", "mandelbrot");
        json_string("algo", kj_mandelbrot_algo_name(o.algo));
        json_string("entry", first.entry);
        json_uint("width", w);
        json_uint("height", h);
        json_uint("max_dwell", max_dwell);
        json_uint("levels", first.levels);
        json_string("origin", cli_origin_text(first.origin));
        json_uint("repeat", repeat);
        json_double("median_ms", med);
        json_uint("device_launches", report.device_launches);
        json_uint("launch_bound", report.expected_launches);
        json_uint("pending_limit", report.pending_limit);
        json_uint("spot_checked", checked);
        json_uint("spot_wrong", bad);
        if (compare) {
            json_string("compared_with", kj_mandelbrot_algo_name(other_algo));
            json_double("other_ms", other_ms);
            json_uint("pixels_differ", differ);
        }
        if (out) json_string("image", written);
        json_end_object();
        json_done();
    } else {
        printf("mandelbrot %s, %u x %u, dwell %u\n", kj_mandelbrot_algo_name(o.algo), w, h, max_dwell);
        printf("  kernel      %s, %u x %u blocks of %u x %u, %u level%s of grids (%s)\n", first.entry, first.grid[0],
               first.grid[1], first.block[0], first.block[1], first.levels, first.levels == 1 ? "" : "s",
               cli_origin_text(first.origin));
        printf("  time        %.3f ms median of %llu runs (GPU)\n", med, (unsigned long long)repeat);
        if (o.algo == KJ_MANDELBROT_MS)
            printf("  launches    %llu device-side (at most %llu), pending-launch limit %llu\n",
                   (unsigned long long)report.device_launches, (unsigned long long)report.expected_launches,
                   (unsigned long long)report.pending_limit);
        printf("  check       %u of %u random pixels equal the CPU's dwells\n", checked - bad, checked);
        if (compare)
            printf("  compare     %s (%.3f ms): %zu of %zu pixels differ%s\n", kj_mandelbrot_algo_name(other_algo),
                   other_ms, differ, pixels, differ ? "" : ", identical images");
        if (out) printf("  image       %s\n", written);
    }
    if (bad)
        rc = cli_error(cmd, "%u of %u pixels differ from the CPU's dwells (first at %u, %u)", bad, checked, bx, by);
    else if (differ)
        rc = cli_error(cmd, "the %s and %s images differ in %zu pixels", kj_mandelbrot_algo_name(o.algo),
                       kj_mandelbrot_algo_name(other_algo), differ);
done:
    kj_mem_free(rt, img);
    kj_mem_free(rt, other);
    free(host);
    free(host_other);
    free(gray);
    free(times);
    kj_runtime_destroy(rt);
    return rc;
}
