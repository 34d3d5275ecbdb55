/* kernjit bench transpose: every variant, and a sweep of the padded tile's TILE_DIM x BLOCK_ROWS, next
 * to a device-to-device copy of the same bytes measured in the same run. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "check_util.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit bench transpose [--rows R --cols C] [--type T] [--samples N]\n"
           "                               [--json | --csv]\n"
           "\n"
           "For each size (default 8192x8192, 4096x4096 and 8000x6000; or the one given),\n"
           "times a copy of the same bytes (cuMemcpyDtoD, read once and written once), then\n"
           "every transpose variant and the padded tile with several TILE_DIM x BLOCK_ROWS:\n"
           "median us, GB/s (read + write) and %% of the copy's GB/s. Each configuration's\n"
           "output is checked on the CPU (sampled) first. The last lines name the best\n"
           "configuration per size; the target on an H100 is 90%% of the copy at 8192x8192.\n");
}

typedef struct config {
    kj_transpose_variant variant;
    unsigned tile_dim, block_rows, group; /* 0 for the fixed variants (group 0: the default, 1) */
} config;

/* the padded tile's default first (64 x 8, along the rows of tiles), then other shapes, then the best
 * shapes with the tiles in groups of rows of tiles */
static const config configs[] = {
    {KJ_TRANSPOSE_READ_ROWS, 0, 0, 0}, {KJ_TRANSPOSE_READ_COLS, 0, 0, 0}, {KJ_TRANSPOSE_SHARED, 0, 0, 0},
    {KJ_TRANSPOSE_L1_8X32, 0, 0, 0},   {KJ_TRANSPOSE_L1_4X32, 0, 0, 0},   {KJ_TRANSPOSE_VEC, 0, 0, 0},
    {KJ_TRANSPOSE_PADDED, 64, 8, 0},   {KJ_TRANSPOSE_PADDED, 16, 16, 0},  {KJ_TRANSPOSE_PADDED, 32, 4, 0},
    {KJ_TRANSPOSE_PADDED, 32, 8, 0},   {KJ_TRANSPOSE_PADDED, 32, 16, 0},  {KJ_TRANSPOSE_PADDED, 32, 32, 0},
    {KJ_TRANSPOSE_PADDED, 64, 4, 0},   {KJ_TRANSPOSE_PADDED, 64, 16, 0},  {KJ_TRANSPOSE_PADDED, 128, 8, 0},
    {KJ_TRANSPOSE_PADDED, 64, 4, 4},   {KJ_TRANSPOSE_PADDED, 64, 4, 8},   {KJ_TRANSPOSE_PADDED, 64, 8, 4},
    {KJ_TRANSPOSE_PADDED, 64, 8, 8},   {KJ_TRANSPOSE_PADDED, 64, 8, 16},  {KJ_TRANSPOSE_PADDED, 32, 8, 8},
};
#define CONFIG_COUNT (sizeof configs / sizeof configs[0])

typedef struct job {
    kj_runtime *rt;
    kj_type type;
    kj_devptr in, out;
    const void *host_in;
    size_t rows, cols;
    uint64_t seed; /* of the sampled check's positions */
    kj_transpose_options options;
} job;

static kj_status run_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    job *j = user;
    j->options.stream = stream;
    return kj_transpose(j->rt, j->type, j->in, j->out, j->rows, j->cols, &j->options);
}

static int check(void *user, const void *host_out) {
    job *j = user;
    size_t r = 0, c = 0;
    if (check_transpose(j->host_in, host_out, j->rows, j->cols, kj_type_size(j->type), 1u << 20, j->seed, &r, &c) == 0)
        return 1;
    fprintf(stderr, "kernjit bench transpose: %s %zux%zu is WRONG at input row %zu, column %zu\n",
            kj_transpose_variant_name(j->options.variant), j->rows, j->cols, r, c);
    return 0;
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
        snprintf(buf, size, "TILE_DIM=%u BLOCK_ROWS=%u GROUP=%u", w->cfg.tile_dim, w->cfg.block_rows,
                 w->cfg.group ? w->cfg.group : 1);
    else snprintf(buf, size, "%ux%u tile, %ux%u threads", w->tile[0], w->tile[1], w->block[0], w->block[1]);
}

typedef struct transpose_bench {
    bench_ctx bench;
    uint64_t rows, cols; /* --rows, --cols: that size alone */
    kj_type type;
    size_t sizes[3][2], size_count;
    row *rows_v; /* size_count x CONFIG_COUNT at most */
    size_t nrows;
} transpose_bench;

static int option(bench_ctx *c, int opt, char *arg) {
    transpose_bench *t = (transpose_bench *)c;
    switch (opt) {
    case 't': return cli_parsed(c->cmd, kj_type_parse(arg, &t->type));
    case 'n': return bench_parse_samples(c, "--samples", arg);
    }
    return cli_count_arg(c->cmd, opt == 'R' ? "--rows" : "--cols", arg, 1, 2147483647ull,
                         opt == 'R' ? &t->rows : &t->cols);
}

static int prepare(bench_ctx *c) {
    transpose_bench *t = (transpose_bench *)c;
    if (!t->rows != !t->cols) return cli_usage(c->cmd, "give both --rows and --cols, or neither");
    if (t->rows) {
        t->sizes[0][0] = (size_t)t->rows;
        t->sizes[0][1] = (size_t)t->cols;
        t->size_count = 1;
    }
    if (t->rows && t->rows * t->cols > SIZE_MAX / 2 / kj_type_size(t->type)) /* each is below 2^31: the product fits */
        return cli_usage(c->cmd, "--rows %llu --cols %llu: the byte count overflows", (unsigned long long)t->rows,
                         (unsigned long long)t->cols);
    return EXIT_OK;
}

/* Every configuration at one size, into t->rows_v. */
static int measure_size(transpose_bench *t, size_t R, size_t C, uint64_t seed) {
    bench_ctx *c = &t->bench;
    size_t esize = kj_type_size(t->type);
    if (R * C > SIZE_MAX / 2 / esize) return cli_usage(c->cmd, "%zu x %zu: the byte count overflows", R, C);
    size_t bytes = R * C * esize;
    bench_result copy;
    kj_status s = bench_copy(c->rt, bytes, (unsigned)c->samples, &copy);
    if (s != KJ_OK) return cli_fail(c->cmd, s);
    void *host_in = malloc(bytes), *host_out = malloc(bytes);
    job j = {c->rt, t->type, 0, 0, host_in, R, C, 0, {0}};
    int rc = EXIT_OK;
    if (!host_in || !host_out)
        rc = cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory for 2 x %zu bytes", bytes);
    if (rc == EXIT_OK) {
        check_fill_bits(host_in, bytes, seed);
        if ((s = kj_mem_alloc(c->rt, bytes, &j.in)) != KJ_OK || (s = kj_mem_alloc(c->rt, bytes, &j.out)) != KJ_OK ||
            (s = kj_memcpy_htod(c->rt, j.in, host_in, bytes)) != KJ_OK)
            rc = cli_fail(c->cmd, s);
    }
    const bench_checked measured = {run_once, &j, j.out, host_out, bytes, check};
    for (size_t k = 0; k < CONFIG_COUNT && rc == EXIT_OK; k++) {
        row *w = &t->rows_v[t->nrows];
        kj_transpose_report rep = KJ_TRANSPOSE_REPORT_INIT;
        *w = (row){.rows = R, .cols = C, .cfg = configs[k], .copy_gbps = bench_gbps(2.0 * bytes, copy.median_us)};
        j.options = (kj_transpose_options){.size = sizeof(kj_transpose_options),
                                           .variant = configs[k].variant,
                                           .tile_dim = configs[k].tile_dim,
                                           .block_rows = configs[k].block_rows,
                                           .report = &rep,
                                           .group = configs[k].group};
        j.seed = seed ^ k;
        bench_step(c, "%zu x %zu %s %u", R, C, kj_transpose_variant_name(configs[k].variant), configs[k].tile_dim);
        s = bench_measure(c->rt, &measured, (unsigned)c->samples, &w->ok, &w->r);
        if (s == KJ_ERR_LIMIT) {
            /* this device cannot give the tile its shared memory: say so and go on */
            fprintf(stderr, "kernjit %s: skipping %s TILE_DIM=%u: %s\n", c->cmd,
                    kj_transpose_variant_name(configs[k].variant), configs[k].tile_dim, kj_last_error());
            continue;
        }
        if (s != KJ_OK) {
            rc = cli_fail(c->cmd, s);
            break;
        }
        if (!w->ok) rc = EXIT_FAILURE_;
        memcpy(w->tile, rep.tile, sizeof w->tile);
        memcpy(w->block, rep.block, sizeof w->block);
        w->gbps = bench_gbps(2.0 * bytes, w->r.median_us);
        t->nrows++;
    }
    kj_mem_free(c->rt, j.in);
    kj_mem_free(c->rt, j.out);
    free(host_in);
    free(host_out);
    return rc;
}

/* The best right configuration at each size. */
static void find_best(const transpose_bench *t, const row **best) {
    for (size_t i = 0; i < t->nrows; i++)
        for (size_t si = 0; si < t->size_count; si++)
            if (t->rows_v[i].rows == t->sizes[si][0] && t->rows_v[i].cols == t->sizes[si][1] && t->rows_v[i].ok &&
                (!best[si] || t->rows_v[i].gbps > best[si]->gbps))
                best[si] = &t->rows_v[i];
}

static void print_json(const transpose_bench *t, const row **best) {
    char label[64];
    json_string("type", kj_type_name(t->type));
    json_begin_array("results");
    for (size_t i = 0; i < t->nrows; i++) {
        const row *w = &t->rows_v[i];
        json_begin_object();
        json_fields("rows=%zu cols=%zu variant=%s tile_rows=%u tile_cols=%u block_x=%u block_y=%u", w->rows, w->cols,
                    kj_transpose_variant_name(w->cfg.variant), w->tile[0], w->tile[1], w->block[0], w->block[1]);
        bench_json_speed(w->r.median_us, w->gbps, w->copy_gbps);
        json_bool("ok", w->ok);
        json_end_object();
    }
    json_end_array();
    json_begin_array("best");
    for (size_t si = 0; si < t->size_count; si++) {
        if (!best[si]) continue;
        config_label(best[si], label, sizeof label);
        json_begin_object();
        json_fields("rows=%zu cols=%zu variant=%s config=%s gbps=%g copy_percent=%g", best[si]->rows, best[si]->cols,
                    kj_transpose_variant_name(best[si]->cfg.variant), label, best[si]->gbps,
                    100.0 * best[si]->gbps / best[si]->copy_gbps);
        json_end_object();
    }
    json_end_array();
}

static void print_csv(const transpose_bench *t) {
    printf("rows,cols,type,variant,tile_rows,tile_cols,block_x,block_y,median_us,gbps,copy_gbps,pct_of_copy,ok\n");
    for (size_t i = 0; i < t->nrows; i++) {
        const row *w = &t->rows_v[i];
        printf("%zu,%zu,%s,%s,%u,%u,%u,%u", w->rows, w->cols, kj_type_name(t->type),
               kj_transpose_variant_name(w->cfg.variant), w->tile[0], w->tile[1], w->block[0], w->block[1]);
        bench_csv_speed(w->r.median_us, w->gbps, w->copy_gbps);
        printf(",%d\n", w->ok);
    }
}

static void print_text(const transpose_bench *t, const row **best) {
    char label[64];
    printf("transpose %s on %s (median of %llu samples; GB/s = bytes read + written / time)\n", kj_type_name(t->type),
           t->bench.dev.name, (unsigned long long)t->bench.samples);
    size_t last_r = 0, last_c = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        const row *w = &t->rows_v[i];
        if (w->rows != last_r || w->cols != last_c) {
            printf("\n%zu x %zu: device copy of the same bytes %.1f GB/s\n", w->rows, w->cols, w->copy_gbps);
            printf("  %-10s %-36s %10s %9s %8s %s\n", "variant", "configuration", "median us", "GB/s", "% copy",
                   "check");
            last_r = w->rows;
            last_c = w->cols;
        }
        config_label(w, label, sizeof label);
        printf("  %-10s %-36s %10.2f %9.1f %7.1f%% %s\n", kj_transpose_variant_name(w->cfg.variant), label,
               w->r.median_us, w->gbps, 100.0 * w->gbps / w->copy_gbps, w->ok ? "ok" : "WRONG");
    }
    printf("\n");
    for (size_t si = 0; si < t->size_count; si++) {
        if (!best[si]) continue;
        config_label(best[si], label, sizeof label);
        printf("best at %zu x %zu: %s %s, %.1f GB/s = %.1f%% of the copy\n", best[si]->rows, best[si]->cols,
               kj_transpose_variant_name(best[si]->cfg.variant), label, best[si]->gbps,
               100.0 * best[si]->gbps / best[si]->copy_gbps);
    }
}

static int run(bench_ctx *c) {
    transpose_bench *t = (transpose_bench *)c;
    if (t->rows) {
        char what[96];
        snprintf(what, sizeof what, "--rows %" PRIu64 " --cols %" PRIu64, t->rows, t->cols);
        int rc = cli_check_device_memory(c->rt, c->cmd, what, 2 * t->rows * t->cols * kj_type_size(t->type));
        if (rc != EXIT_OK) return rc; /* input and output */
    }
    if (!(t->rows_v = calloc(t->size_count * CONFIG_COUNT, sizeof *t->rows_v)))
        return cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory");
    uint64_t seed = check_fresh_seed();
    int rc = EXIT_OK;
    c->steps = t->size_count * CONFIG_COUNT;
    for (size_t si = 0; si < t->size_count && rc == EXIT_OK; si++)
        rc = measure_size(t, t->sizes[si][0], t->sizes[si][1], seed + si);
    const row *best[3] = {NULL, NULL, NULL};
    find_best(t, best);
    if (c->format == 'j') print_json(t, best);
    else if (c->format == 'c') print_csv(t);
    else print_text(t, best);
    size_t wrong = 0;
    for (size_t i = 0; i < t->nrows; i++) wrong += !t->rows_v[i].ok;
    free(t->rows_v);
    return bench_wrong_rows(c->cmd, wrong, t->nrows, rc);
}

static const bench_family transpose = {.help = help,
                                       .csv = 1,
                                       .max_samples = 10000,
                                       .options = "rows=R: cols=C: type=t: samples=n:",
                                       .option = option,
                                       .prepare = prepare,
                                       .run = run};

int bench_transpose(int argc, char **argv) {
    transpose_bench t = {
        .bench.samples = 20, .type = KJ_TYPE_F32, .sizes = {{8192, 8192}, {4096, 4096}, {8000, 6000}}, .size_count = 3};
    return bench_main(&transpose, &t.bench, argc, argv);
}
