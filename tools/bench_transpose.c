/* kernjit bench transpose: every variant, and a sweep of the padded tile's TILE_DIM x BLOCK_ROWS, next
 * to a device-to-device copy of the same bytes measured in the same run. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "check_util.h"
#include "cli.h"
#include "run.h"

#define CMD "bench transpose"

static void help(void) {
    printf("usage: kernjit bench transpose [--rows R --cols C] [--type T] [--samples N] [--json | --csv]\n\n"
           "For each size (default 8192x8192, 4096x4096 and 8000x6000; or the one given), times a copy of\n"
           "the same bytes (cuMemcpyDtoD, read once and written once), then every transpose variant and the\n"
           "padded tile with several TILE_DIM x BLOCK_ROWS: median us, GB/s (read + write) and %% of the\n"
           "copy's GB/s. Each configuration's output is checked on the CPU (sampled) first. The last lines\n"
           "name the best configuration per size; the target on an H100 is 90%% of the copy at 8192x8192.\n");
}

typedef struct config {
    kj_transpose_variant variant;
    unsigned tile_dim, block_rows; /* 0 for the fixed variants */
} config;

static const config configs[] = {
    {KJ_TRANSPOSE_READ_ROWS, 0, 0}, {KJ_TRANSPOSE_READ_COLS, 0, 0}, {KJ_TRANSPOSE_SHARED, 0, 0},
    {KJ_TRANSPOSE_L1_8X32, 0, 0},   {KJ_TRANSPOSE_L1_4X32, 0, 0},   {KJ_TRANSPOSE_VEC, 0, 0},
    {KJ_TRANSPOSE_PADDED, 32, 8},
    {KJ_TRANSPOSE_PADDED, 16, 16},  {KJ_TRANSPOSE_PADDED, 32, 4},   {KJ_TRANSPOSE_PADDED, 32, 16},
    {KJ_TRANSPOSE_PADDED, 32, 32},  {KJ_TRANSPOSE_PADDED, 64, 4},   {KJ_TRANSPOSE_PADDED, 64, 8},
    {KJ_TRANSPOSE_PADDED, 64, 16},  {KJ_TRANSPOSE_PADDED, 128, 8},
};
#define CONFIG_COUNT (sizeof configs / sizeof configs[0])

typedef struct job {
    kj_runtime *rt;
    kj_type type;
    kj_devptr in, out;
    size_t rows, cols;
    kj_transpose_options options;
} job;

static kj_status run_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    job *j = user;
    j->options.stream = stream;
    return kj_transpose(j->rt, j->type, j->in, j->out, j->rows, j->cols, &j->options);
}

typedef struct row {
    size_t rows, cols;
    config cfg;
    unsigned tile[2], block[2];
    bench_result r;
    double gbps, copy_gbps;
    int ok;
} row;

static void config_label(const row *w, char *buf, size_t size) {
    if (w->cfg.variant == KJ_TRANSPOSE_PADDED)
        snprintf(buf, size, "TILE_DIM=%u BLOCK_ROWS=%u", w->cfg.tile_dim, w->cfg.block_rows);
    else snprintf(buf, size, "%ux%u tile, %ux%u threads", w->tile[0], w->tile[1], w->block[0], w->block[1]);
}

int bench_transpose(int argc, char **argv) {
    static const struct option opts[] = {
        {"rows", required_argument, 0, 'R'}, {"cols", required_argument, 0, 'C'}, {"type", required_argument, 0, 't'},
        {"samples", required_argument, 0, 'n'}, {"json", no_argument, 0, 'j'}, {"csv", no_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    uint64_t rows = 0, cols = 0, samples = 20, v;
    kj_type type = KJ_TYPE_F32;
    int json = 0, csv = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hR:C:t:n:jc", opts, NULL)) != -1) {
        switch (c) {
        case 'R':
        case 'C':
            if (cli_parse_count(optarg, 2147483647ull, &v) != 0 || v == 0)
                return cli_usage(CMD, "--%s '%s' is not a count from 1 to 2^31-1", c == 'R' ? "rows" : "cols", optarg);
            if (c == 'R') rows = v;
            else cols = v;
            break;
        case 't':
            if (kj_type_parse(optarg, &type) != KJ_OK) return cli_usage(CMD, "%s", kj_last_error());
            break;
        case 'n':
            if (cli_parse_uint(optarg, 10000, &samples) != 0 || samples == 0)
                return cli_usage(CMD, "--samples '%s' is not a count from 1 to 10000", optarg);
            break;
        case 'j': json = 1; break;
        case 'c': csv = 1; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage(CMD, "unknown option");
        }
    }
    if (optind < argc) return cli_usage(CMD, "unexpected argument '%s'", argv[optind]);
    if (json && csv) return cli_usage(CMD, "choose one of --json and --csv");
    if (!rows != !cols) return cli_usage(CMD, "give both --rows and --cols, or neither");

    size_t sizes[3][2] = {{8192, 8192}, {4096, 4096}, {8000, 6000}};
    size_t size_count = 3;
    if (rows) {
        sizes[0][0] = (size_t)rows;
        sizes[0][1] = (size_t)cols;
        size_count = 1;
    }
    size_t esize = kj_type_size(type);
    if (rows && rows * cols > SIZE_MAX / 2 / esize) /* each is below 2^31: the product fits */
        return cli_usage(CMD, "--rows %llu --cols %llu: the byte count overflows", (unsigned long long)rows,
                         (unsigned long long)cols);

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(CMD, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(CMD, "no CUDA device: nothing to measure here");
    }
    if (rows) {
        char what[96];
        snprintf(what, sizeof what, "--rows %llu --cols %llu", (unsigned long long)rows, (unsigned long long)cols);
        int r = cli_check_device_memory(rt, CMD, what, 2 * rows * cols * esize); /* input and output */
        if (r != EXIT_OK) {
            kj_runtime_destroy(rt);
            return r;
        }
    }
    kj_device_info dev;
    kj_runtime_device(rt, &dev);

    row *rowsv = calloc(size_count * CONFIG_COUNT, sizeof *rowsv);
    double copy_gbps[3] = {0};
    size_t nrows = 0;
    int rc = EXIT_OK;
    if (!rowsv) {
        kj_runtime_destroy(rt);
        return cli_error(CMD, "out of host memory");
    }
    uint64_t seed = check_fresh_seed();
    for (size_t si = 0; si < size_count && rc == EXIT_OK; si++) {
        size_t R = sizes[si][0], C = sizes[si][1];
        if (R * C > SIZE_MAX / 2 / esize) {
            rc = cli_usage(CMD, "%zu x %zu: the byte count overflows", R, C);
            break;
        }
        size_t bytes = R * C * esize;
        bench_result copy;
        if ((s = bench_copy(rt, bytes, (unsigned)samples, &copy)) != KJ_OK) {
            rc = cli_fail(CMD, s);
            break;
        }
        copy_gbps[si] = 2.0 * bytes / (copy.median_us * 1e-6) / 1e9;
        void *host_in = malloc(bytes), *host_out = malloc(bytes);
        job j = {rt, type, 0, 0, R, C, {0}};
        if (!host_in || !host_out) rc = cli_error(CMD, "out of host memory for 2 x %zu bytes", bytes);
        if (rc == EXIT_OK) {
            check_fill_bits(host_in, bytes, seed + si);
            if ((s = kj_mem_alloc(rt, bytes, &j.in)) != KJ_OK || (s = kj_mem_alloc(rt, bytes, &j.out)) != KJ_OK ||
                (s = kj_memcpy_htod(rt, j.in, host_in, bytes)) != KJ_OK)
                rc = cli_fail(CMD, s);
        }
        for (size_t k = 0; k < CONFIG_COUNT && rc == EXIT_OK; k++) {
            row *w = &rowsv[nrows];
            w->rows = R;
            w->cols = C;
            w->cfg = configs[k];
            kj_transpose_report rep;
            j.options = (kj_transpose_options){configs[k].variant, configs[k].tile_dim, configs[k].block_rows, NULL,
                                               &rep};
            s = kj_memset_u8(rt, j.out, 0xA5, bytes);
            if (s == KJ_OK) s = run_once(&j, NULL, 0);
            if (s == KJ_OK) s = kj_synchronize(rt);
            if (s == KJ_ERR_LIMIT) {
                /* this device cannot give the tile its shared memory: say so and go on */
                fprintf(stderr, "kernjit %s: skipping %s TILE_DIM=%u: %s\n", CMD,
                        kj_transpose_variant_name(configs[k].variant), configs[k].tile_dim, kj_last_error());
                continue;
            }
            if (s == KJ_OK) s = kj_memcpy_dtoh(rt, host_out, j.out, bytes);
            if (s != KJ_OK) {
                rc = cli_fail(CMD, s);
                break;
            }
            size_t br = 0, bc = 0;
            w->ok = check_transpose(host_in, host_out, R, C, esize, 1u << 20, seed ^ k, &br, &bc) == 0;
            if (!w->ok) {
                fprintf(stderr, "kernjit %s: %s %zux%zu is WRONG at input row %zu, column %zu\n", CMD,
                        kj_transpose_variant_name(configs[k].variant), R, C, br, bc);
                rc = EXIT_FAILURE_;
            }
            w->tile[0] = rep.tile[0];
            w->tile[1] = rep.tile[1];
            w->block[0] = rep.block[0];
            w->block[1] = rep.block[1];
            j.options.report = NULL;
            if ((s = bench_time(rt, NULL, run_once, &j, 3, (unsigned)samples, 0, &w->r)) != KJ_OK) {
                rc = cli_fail(CMD, s);
                break;
            }
            w->gbps = 2.0 * bytes / (w->r.median_us * 1e-6) / 1e9;
            w->copy_gbps = copy_gbps[si];
            nrows++;
        }
        kj_mem_free(rt, j.in);
        kj_mem_free(rt, j.out);
        free(host_in);
        free(host_out);
    }

    /* the best per size */
    const row *best[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < nrows; i++)
        for (size_t si = 0; si < size_count; si++)
            if (rowsv[i].rows == sizes[si][0] && rowsv[i].cols == sizes[si][1] && rowsv[i].ok &&
                (!best[si] || rowsv[i].gbps > best[si]->gbps))
                best[si] = &rowsv[i];

    char label[64];
    if (json) {
        json_begin_object();
        json_string("benchmark", "transpose");
        json_string("device", dev.name);
        json_string("type", kj_type_name(type));
        json_uint("samples", samples);
        json_begin_array("results");
        for (size_t i = 0; i < nrows; i++) {
            const row *w = &rowsv[i];
            json_begin_object();
            json_uint("rows", w->rows);
            json_uint("cols", w->cols);
            json_string("variant", kj_transpose_variant_name(w->cfg.variant));
            json_uint("tile_rows", w->tile[0]);
            json_uint("tile_cols", w->tile[1]);
            json_uint("block_x", w->block[0]);
            json_uint("block_y", w->block[1]);
            json_double("median_us", w->r.median_us);
            json_double("gbps", w->gbps);
            json_double("copy_gbps", w->copy_gbps);
            json_double("pct_of_copy", 100.0 * w->gbps / w->copy_gbps);
            json_bool("ok", w->ok);
            json_end_object();
        }
        json_end_array();
        json_begin_array("best");
        for (size_t si = 0; si < size_count; si++) {
            if (!best[si]) continue;
            config_label(best[si], label, sizeof label);
            json_begin_object();
            json_uint("rows", best[si]->rows);
            json_uint("cols", best[si]->cols);
            json_string("variant", kj_transpose_variant_name(best[si]->cfg.variant));
            json_string("config", label);
            json_double("gbps", best[si]->gbps);
            json_double("pct_of_copy", 100.0 * best[si]->gbps / best[si]->copy_gbps);
            json_end_object();
        }
        json_end_array();
        json_end_object();
        json_done();
    } else if (csv) {
        printf("rows,cols,type,variant,tile_rows,tile_cols,block_x,block_y,median_us,gbps,copy_gbps,pct_of_copy,ok\n");
        for (size_t i = 0; i < nrows; i++) {
            const row *w = &rowsv[i];
            printf("%zu,%zu,%s,%s,%u,%u,%u,%u,%.3f,%.1f,%.1f,%.1f,%d\n", w->rows, w->cols, kj_type_name(type),
                   kj_transpose_variant_name(w->cfg.variant), w->tile[0], w->tile[1], w->block[0], w->block[1],
                   w->r.median_us, w->gbps, w->copy_gbps, 100.0 * w->gbps / w->copy_gbps, w->ok);
        }
    } else {
        printf("transpose %s on %s (median of %llu samples; GB/s = bytes read + written / time)\n",
               kj_type_name(type), dev.name, (unsigned long long)samples);
        size_t last_r = 0, last_c = 0;
        for (size_t i = 0; i < nrows; i++) {
            const row *w = &rowsv[i];
            if (w->rows != last_r || w->cols != last_c) {
                printf("\n%zu x %zu: device copy of the same bytes %.1f GB/s\n", w->rows, w->cols, w->copy_gbps);
                printf("  %-10s %-28s %10s %9s %8s %s\n", "variant", "configuration", "median us", "GB/s", "% copy",
                       "check");
                last_r = w->rows;
                last_c = w->cols;
            }
            config_label(w, label, sizeof label);
            printf("  %-10s %-28s %10.2f %9.1f %7.1f%% %s\n", kj_transpose_variant_name(w->cfg.variant), label,
                   w->r.median_us, w->gbps, 100.0 * w->gbps / w->copy_gbps, w->ok ? "ok" : "WRONG");
        }
        printf("\n");
        for (size_t si = 0; si < size_count; si++) {
            if (!best[si]) continue;
            config_label(best[si], label, sizeof label);
            printf("best at %zu x %zu: %s %s, %.1f GB/s = %.1f%% of the copy\n", best[si]->rows, best[si]->cols,
                   kj_transpose_variant_name(best[si]->cfg.variant), label, best[si]->gbps,
                   100.0 * best[si]->gbps / best[si]->copy_gbps);
        }
    }
    free(rowsv);
    kj_runtime_destroy(rt);
    return rc;
}
