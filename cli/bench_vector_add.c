/* kernjit bench vector-add: sizes x types with the default configuration, and a sweep of BLOCK_SIZE x
 * UNROLL at the largest size, next to a device-to-device copy that moves as many bytes, measured in
 * the same run. */
#include <inttypes.h>
#include <stdlib.h>

#include "bench_util.h"
#include "check_util.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit bench vector-add [--n N] [--type f32|f64] [--samples S]\n"
           "                                [--json | --csv]\n"
           "\n"
           "For f32 and f64 (or the type given) and n = 2^20, 2^24, 2^26, 2^28 (or the N\n"
           "given), times c = a + b with the default configuration, then BLOCK_SIZE x UNROLL\n"
           "variations at the largest n; and a device-to-device copy (cuMemcpyDtoD) of 1.5 x\n"
           "n elements, which reads and writes as many bytes as the add (two vectors read,\n"
           "one written). Prints median us, GB/s and %% of the copy's GB/s. Each result is\n"
           "checked on the CPU (sampled) first. Sizes that fit in L2 measure L2 on both\n"
           "sides. The target on an H100 is 95%% of the copy at the large sizes.\n");
}

typedef struct config {
    unsigned block, unroll, waves; /* 0: the defaults */
} config;

/* variations at the largest size, besides the default (256, 4, a block per tile): the grid held to 1
 * and 4 waves of the blocks the device holds at once among them */
static const config sweep[] = {{256, 1, 0},  {256, 2, 0},  {256, 8, 0}, {128, 4, 0}, {512, 4, 0},
                               {1024, 4, 0}, {1024, 1, 0}, {256, 4, 1}, {256, 4, 4}};
#define SWEEP_COUNT (sizeof sweep / sizeof sweep[0])

typedef struct job {
    kj_runtime *rt;
    kj_type type;
    kj_devptr a, b, c;
    const void *host_a, *host_b;
    size_t n;
    uint64_t seed; /* of the sampled check's indices */
    kj_vector_add_options options;
} job;

static kj_status run_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    job *j = user;
    j->options.stream = stream;
    return kj_vector_add(j->rt, j->type, j->a, j->b, j->c, j->n, &j->options);
}

static int check(void *user, const void *host_c) {
    job *j = user;
    size_t bad = 0;
    if (check_vector_add(j->type, j->host_a, j->host_b, host_c, j->n, 1u << 20, j->seed, &bad) == 0) return 1;
    fprintf(stderr, "kernjit bench vector-add: %s n=%zu BLOCK_SIZE=%u UNROLL=%u is WRONG at index %zu\n",
            kj_type_name(j->type), j->n, j->options.report->block_size, j->options.report->unroll, bad);
    return 0;
}

typedef struct row {
    kj_type type;
    size_t n;
    kj_vector_add_report rep;
    bench_result r;
    double gbps, copy_gbps;
    int ok;
} row;

typedef struct vector_add_bench {
    bench_ctx bench;
    uint64_t n_given; /* --n: that size alone */
    kj_type types[2];
    size_t type_count;
    size_t sizes[4], size_count;
    row *rows; /* type_count x (size_count + SWEEP_COUNT) at most */
    size_t nrows;
} vector_add_bench;

static int option(bench_ctx *c, int opt, char *arg) {
    vector_add_bench *v = (vector_add_bench *)c;
    switch (opt) {
    case 'N': {
        int rc = cli_count_arg(c->cmd, "--n", arg, 1, 1ull << 34, &v->n_given);
        v->sizes[0] = (size_t)v->n_given; /* that size alone */
        v->size_count = 1;
        return rc;
    }
    case 's': return bench_parse_samples(c, "--samples", arg);
    }
    if (kj_type_parse(arg, &v->types[0]) != KJ_OK) return cli_usage(c->cmd, "%s", kj_last_error()); /* 't' */
    if (v->types[0] != KJ_TYPE_F32 && v->types[0] != KJ_TYPE_F64)
        return cli_usage(c->cmd, "--type %s: vector-add takes f32 or f64", arg);
    v->type_count = 1;
    return EXIT_OK;
}

/* The default configuration at one size of one type, and the sweep at the largest, into v->rows. */
static int measure_size(vector_add_bench *v, kj_type type, size_t n, size_t configs, uint64_t seed) {
    bench_ctx *c = &v->bench;
    size_t bytes = n * kj_type_size(type);
    size_t free_b = 0, total_b = 0;
    kj_mem_info(c->rt, &free_b, &total_b);
    if (3 * bytes + bytes / 8 > free_b && v->n_given) { /* asked for: a failure; the defaults are skipped */
        char what[64];
        snprintf(what, sizeof what, "--n %zu", n);
        return cli_device_memory_short(c->cmd, what, 3 * bytes + bytes / 8, free_b, total_b);
    }
    if (3 * bytes + bytes / 8 > free_b) {
        cli_progress_pause();
        fprintf(stderr, "kernjit %s: skipping %s n=%zu: %zu bytes needed, %zu free\n", c->cmd, kj_type_name(type), n,
                3 * bytes, free_b);
        return EXIT_OK;
    }
    /* the copy first, while the add's buffers are not allocated */
    bench_result copy;
    kj_status s = bench_copy(c->rt, bytes * 3 / 2, (unsigned)c->samples, &copy);
    if (s != KJ_OK) return cli_fail(c->cmd, s);
    void *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
    job j = {c->rt, type, 0, 0, 0, ha, hb, n, 0, {0}};
    int rc = EXIT_OK;
    if (!ha || !hb || !hc) rc = cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory for 3 x %zu bytes", bytes);
    if (rc == EXIT_OK) {
        cli_random_fill(type, ha, n, seed, 0);
        cli_random_fill(type, hb, n, seed + 1, 0);
        if ((s = kj_mem_alloc(c->rt, bytes, &j.a)) != KJ_OK || (s = kj_mem_alloc(c->rt, bytes, &j.b)) != KJ_OK ||
            (s = kj_mem_alloc(c->rt, bytes, &j.c)) != KJ_OK || (s = kj_memcpy_htod(c->rt, j.a, ha, bytes)) != KJ_OK ||
            (s = kj_memcpy_htod(c->rt, j.b, hb, bytes)) != KJ_OK)
            rc = cli_fail(c->cmd, s);
    }
    const bench_checked measured = {run_once, &j, j.c, hc, bytes, check};
    for (size_t k = 0; k < configs && rc == EXIT_OK; k++) {
        config cfg = k == 0 ? (config){0, 0, 0} : sweep[k - 1];
        row *w = &v->rows[v->nrows];
        *w = (row){.type = type,
                   .n = n,
                   .rep = KJ_VECTOR_ADD_REPORT_INIT,
                   .copy_gbps = bench_gbps(2.0 * (double)(bytes * 3 / 2), copy.median_us)};
        j.options = (kj_vector_add_options){.size = sizeof(kj_vector_add_options),
                                            .block_size = cfg.block,
                                            .unroll = cfg.unroll,
                                            .report = &w->rep,
                                            .waves = cfg.waves};
        j.seed = seed ^ k;
        if (k)
            bench_step(c, "%s n=%zu BLOCK_SIZE=%u UNROLL=%u WAVES=%u", kj_type_name(type), n, cfg.block, cfg.unroll,
                       cfg.waves);
        else bench_step(c, "%s n=%zu, its default configuration", kj_type_name(type), n);
        if ((s = bench_measure(c->rt, &measured, (unsigned)c->samples, &w->ok, &w->r)) != KJ_OK) {
            rc = cli_fail(c->cmd, s);
            break;
        }
        w->gbps = bench_gbps(3.0 * bytes, w->r.median_us);
        if (!w->ok) rc = EXIT_FAILURE_;
        v->nrows++;
    }
    kj_mem_free(c->rt, j.a);
    kj_mem_free(c->rt, j.b);
    kj_mem_free(c->rt, j.c);
    free(ha);
    free(hb);
    free(hc);
    return rc;
}

static void print_json(const vector_add_bench *v) {
    json_begin_array("results");
    for (size_t i = 0; i < v->nrows; i++) {
        const row *w = &v->rows[i];
        json_begin_object();
        json_fields("type=%s n=%zu entry=%s block_size=%u unroll=%u waves=%u grid=%u", kj_type_name(w->type), w->n,
                    w->rep.entry, w->rep.block_size, w->rep.unroll, w->rep.waves, w->rep.grid);
        bench_json_speed(w->r.median_us, w->gbps, w->copy_gbps);
        json_bool("ok", w->ok);
        json_end_object();
    }
    json_end_array();
}

static void print_csv(const vector_add_bench *v) {
    printf("type,n,entry,block_size,unroll,waves,grid,median_us,gbps,copy_gbps,pct_of_copy,ok\n");
    for (size_t i = 0; i < v->nrows; i++) {
        const row *w = &v->rows[i];
        printf("%s,%zu,%s,%u,%u,%u,%u", kj_type_name(w->type), w->n, w->rep.entry, w->rep.block_size, w->rep.unroll,
               w->rep.waves, w->rep.grid);
        bench_csv_speed(w->r.median_us, w->gbps, w->copy_gbps);
        printf(",%d\n", w->ok);
    }
}

static void print_text(const vector_add_bench *v) {
    char n_label[32];
    printf("vector add on %s (median of %llu samples; GB/s = 2 reads + 1 write / time; the copy moves as many "
           "bytes)\n\n",
           v->bench.dev.name, (unsigned long long)v->bench.samples);
    printf("  %-4s %-8s %-10s %5s %6s %5s %7s %10s %9s %10s %8s %s\n", "type", "n", "entry", "block", "unroll", "waves",
           "grid", "median us", "GB/s", "copy GB/s", "% copy", "check");
    for (size_t i = 0; i < v->nrows; i++) {
        const row *w = &v->rows[i];
        printf("  %-4s %-8s %-10s %5u %6u %5u %7u %10.2f %9.1f %10.1f %7.1f%% %s\n", kj_type_name(w->type),
               bench_pow2_label(w->n, n_label, sizeof n_label), w->rep.entry, w->rep.block_size, w->rep.unroll,
               w->rep.waves, w->rep.grid, w->r.median_us, w->gbps, w->copy_gbps, 100.0 * w->gbps / w->copy_gbps,
               w->ok ? "ok" : "WRONG");
    }
    printf("\n");
    /* the best right configuration per type, at its largest size */
    for (size_t ti = 0; ti < v->type_count; ti++) {
        const row *best = NULL;
        for (size_t i = 0; i < v->nrows; i++) {
            const row *w = &v->rows[i];
            if (w->type == v->types[ti] && w->ok &&
                (!best || w->n > best->n || (w->n == best->n && w->gbps > best->gbps)))
                best = w;
        }
        if (best)
            printf("best %s at n = %s: BLOCK_SIZE=%u UNROLL=%u WAVES=%u, %.1f GB/s = %.1f%% of the copy\n",
                   kj_type_name(best->type), bench_pow2_label(best->n, n_label, sizeof n_label), best->rep.block_size,
                   best->rep.unroll, best->rep.waves, best->gbps, 100.0 * best->gbps / best->copy_gbps);
    }
}

static int run(bench_ctx *c) {
    vector_add_bench *v = (vector_add_bench *)c;
    if (!(v->rows = calloc(v->type_count * (v->size_count + SWEEP_COUNT), sizeof *v->rows)))
        return cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory");
    uint64_t seed = check_fresh_seed();
    int rc = EXIT_OK;
    c->steps = v->type_count * (v->size_count + SWEEP_COUNT);
    for (size_t ti = 0; ti < v->type_count && rc == EXIT_OK; ti++)
        for (size_t si = 0; si < v->size_count && rc == EXIT_OK; si++)
            rc = measure_size(v, v->types[ti], v->sizes[si], si == v->size_count - 1 ? 1 + SWEEP_COUNT : 1,
                              seed + 17 * si);
    if (c->format == 'j') print_json(v);
    else if (c->format == 'c') print_csv(v);
    else print_text(v);
    size_t wrong = 0;
    for (size_t i = 0; i < v->nrows; i++) wrong += !v->rows[i].ok;
    free(v->rows);
    return bench_wrong_rows(c->cmd, wrong, v->nrows, rc);
}

static const bench_family vector_add = {
    .help = help, .csv = 1, .max_samples = 10000, .options = "n=N: type=t: samples=s:", .option = option, .run = run};

int bench_vector_add(int argc, char **argv) {
    vector_add_bench v = {.bench.samples = 20,
                          .types = {KJ_TYPE_F32, KJ_TYPE_F64},
                          .type_count = 2,
                          .sizes = {1u << 20, 1u << 24, 1u << 26, 1u << 28},
                          .size_count = 4};
    return bench_main(&vector_add, &v.bench, argc, argv);
}
