/* kernjit bench vector-add: sizes x types with the default configuration, and a sweep of BLOCK_SIZE x
 * UNROLL at the largest size, next to a device-to-device copy that moves as many bytes, measured in
 * the same run. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "check_util.h"
#include "cli.h"
#include "run.h"

#define CMD "bench vector-add"

static void help(void) {
    printf("usage: kernjit bench vector-add [--n N] [--type f32|f64] [--samples S] [--json | --csv]\n\n"
           "For f32 and f64 (or the type given) and n = 2^20, 2^24, 2^26, 2^28 (or the N given), times\n"
           "c = a + b with the default configuration, then BLOCK_SIZE x UNROLL variations at the largest\n"
           "n; and a device-to-device copy (cuMemcpyDtoD) of 1.5 x n elements, which reads and writes as\n"
           "many bytes as the add (two vectors read, one written). Prints median us, GB/s and %% of the\n"
           "copy's GB/s. Each result is checked on the CPU (sampled) first. Sizes that fit in L2 measure\n"
           "L2 on both sides. The target on an H100 is 95%% of the copy at the large sizes.\n");
}

typedef struct config {
    unsigned block, unroll; /* 0: the defaults */
} config;

/* variations at the largest size, besides the default (256, 4) */
static const config sweep[] = {{256, 1}, {256, 2}, {256, 8}, {128, 4}, {512, 4}, {1024, 4}};
#define SWEEP_COUNT (sizeof sweep / sizeof sweep[0])

typedef struct job {
    kj_runtime *rt;
    kj_type type;
    kj_devptr a, b, c;
    size_t n;
    kj_vector_add_options options;
} job;

static kj_status run_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    job *j = user;
    j->options.stream = stream;
    return kj_vector_add(j->rt, j->type, j->a, j->b, j->c, j->n, &j->options);
}

typedef struct row {
    kj_type type;
    size_t n;
    kj_vector_add_report rep;
    bench_result r;
    double gbps, copy_gbps;
    int ok;
} row;

/* Times one configuration (after checking it) into *w. */
static kj_status measure(job *j, const config *cfg, unsigned samples, void *ha, void *hb, void *hc, uint64_t seed,
                         row *w) {
    size_t bytes = j->n * kj_type_size(j->type);
    j->options = (kj_vector_add_options){cfg->block, cfg->unroll, NULL, &w->rep};
    kj_status s = kj_memset_u8(j->rt, j->c, 0xA5, bytes);
    if (s == KJ_OK) s = run_once(j, NULL, 0);
    if (s == KJ_OK) s = kj_synchronize(j->rt);
    if (s == KJ_OK) s = kj_memcpy_dtoh(j->rt, hc, j->c, bytes);
    if (s != KJ_OK) return s;
    size_t bad = 0;
    w->ok = check_vector_add(j->type, ha, hb, hc, j->n, 1u << 20, seed, &bad) == 0;
    if (!w->ok)
        fprintf(stderr, "kernjit %s: %s n=%zu BLOCK_SIZE=%u UNROLL=%u is WRONG at index %zu\n", CMD,
                kj_type_name(j->type), j->n, w->rep.block_size, w->rep.unroll, bad);
    j->options.report = NULL;
    s = bench_time(j->rt, NULL, run_once, j, 3, samples, 0, &w->r);
    if (s != KJ_OK) return s;
    w->type = j->type;
    w->n = j->n;
    w->gbps = 3.0 * bytes / (w->r.median_us * 1e-6) / 1e9;
    return KJ_OK;
}

int bench_vector_add(int argc, char **argv) {
    static const struct option opts[] = {
        {"n", required_argument, 0, 'N'}, {"type", required_argument, 0, 't'}, {"samples", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'}, {"csv", no_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    uint64_t n_given = 0, samples = 20;
    kj_type types[2] = {KJ_TYPE_F32, KJ_TYPE_F64};
    size_t type_count = 2;
    int json = 0, csv = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hN:t:s:jc", opts, NULL)) != -1) {
        switch (c) {
        case 'N':
            if (cli_parse_count(optarg, 1ull << 34, &n_given) != 0 || n_given == 0)
                return cli_usage(CMD, "--n '%s' is not a count from 1 to 2^34 (examples: 1000003, 64M, 2^24)", optarg);
            break;
        case 't':
            if (kj_type_parse(optarg, &types[0]) != KJ_OK) return cli_usage(CMD, "%s", kj_last_error());
            if (types[0] != KJ_TYPE_F32 && types[0] != KJ_TYPE_F64)
                return cli_usage(CMD, "--type %s: vector-add takes f32 or f64", optarg);
            type_count = 1;
            break;
        case 's':
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
    size_t sizes[4] = {1u << 20, 1u << 24, 1u << 26, 1u << 28};
    size_t size_count = 4;
    if (n_given) {
        sizes[0] = (size_t)n_given;
        size_count = 1;
    }

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(CMD, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(CMD, "no CUDA device: nothing to measure here");
    }
    kj_device_info dev;
    kj_runtime_device(rt, &dev);
    size_t max_rows = type_count * (size_count + SWEEP_COUNT);
    row *rows = calloc(max_rows, sizeof *rows);
    size_t nrows = 0;
    int rc = rows ? EXIT_OK : cli_error(CMD, "out of host memory");
    uint64_t seed = check_fresh_seed();

    for (size_t ti = 0; ti < type_count && rc == EXIT_OK; ti++) {
        kj_type type = types[ti];
        size_t esize = kj_type_size(type);
        for (size_t si = 0; si < size_count && rc == EXIT_OK; si++) {
            size_t n = sizes[si], bytes = n * esize;
            size_t free_b = 0, total_b = 0;
            kj_mem_info(rt, &free_b, &total_b);
            if (3 * bytes + bytes / 8 > free_b && n_given) {
                /* a size the command line asked for is a usage error; the default sizes are skipped */
                rc = cli_usage(CMD, "--n %zu needs %zu bytes of device memory; %zu of %zu are free", n, 3 * bytes + bytes / 8,
                               free_b, total_b);
                break;
            }
            if (3 * bytes + bytes / 8 > free_b) {
                fprintf(stderr, "kernjit %s: skipping %s n=%zu: %zu bytes needed, %zu free\n", CMD,
                        kj_type_name(type), n, 3 * bytes, free_b);
                continue;
            }
            /* the copy first, while the add's buffers are not allocated */
            bench_result copy;
            if ((s = bench_copy(rt, bytes * 3 / 2, (unsigned)samples, &copy)) != KJ_OK) {
                rc = cli_fail(CMD, s);
                break;
            }
            double copy_gbps = 2.0 * (double)(bytes * 3 / 2) / (copy.median_us * 1e-6) / 1e9;
            void *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
            job j = {rt, type, 0, 0, 0, n, {0}};
            if (!ha || !hb || !hc) rc = cli_error(CMD, "out of host memory for 3 x %zu bytes", bytes);
            if (rc == EXIT_OK) {
                cli_random_fill(type, ha, n, seed + 2 * si, 0);
                cli_random_fill(type, hb, n, seed + 2 * si + 1, 0);
                if ((s = kj_mem_alloc(rt, bytes, &j.a)) != KJ_OK || (s = kj_mem_alloc(rt, bytes, &j.b)) != KJ_OK ||
                    (s = kj_mem_alloc(rt, bytes, &j.c)) != KJ_OK || (s = kj_memcpy_htod(rt, j.a, ha, bytes)) != KJ_OK ||
                    (s = kj_memcpy_htod(rt, j.b, hb, bytes)) != KJ_OK)
                    rc = cli_fail(CMD, s);
            }
            /* the default configuration at every size; the sweep at the largest */
            size_t configs = si == size_count - 1 ? 1 + SWEEP_COUNT : 1;
            for (size_t k = 0; k < configs && rc == EXIT_OK; k++) {
                config cfg = k == 0 ? (config){0, 0} : sweep[k - 1];
                row *w = &rows[nrows];
                if ((s = measure(&j, &cfg, (unsigned)samples, ha, hb, hc, seed ^ (k + 17 * si), w)) != KJ_OK) {
                    rc = cli_fail(CMD, s);
                    break;
                }
                w->copy_gbps = copy_gbps;
                if (!w->ok) rc = EXIT_FAILURE_;
                nrows++;
            }
            kj_mem_free(rt, j.a);
            kj_mem_free(rt, j.b);
            kj_mem_free(rt, j.c);
            free(ha);
            free(hb);
            free(hc);
        }
    }

    /* the best per type at its largest size */
    const row *best[2] = {NULL, NULL};
    for (size_t i = 0; i < nrows; i++) {
        size_t ti = rows[i].type == types[0] ? 0 : 1;
        const row *b = best[ti];
        if (rows[i].ok && (!b || rows[i].n > b->n || (rows[i].n == b->n && rows[i].gbps > b->gbps))) best[ti] = &rows[i];
    }
    char n_label[32];
    if (json) {
        json_begin_object();
        json_string("benchmark", "vector-add");
        json_string("device", dev.name);
        json_uint("samples", samples);
        json_begin_array("results");
        for (size_t i = 0; i < nrows; i++) {
            const row *w = &rows[i];
            json_begin_object();
            json_string("type", kj_type_name(w->type));
            json_uint("n", w->n);
            json_string("entry", w->rep.entry);
            json_uint("block_size", w->rep.block_size);
            json_uint("unroll", w->rep.unroll);
            json_uint("grid", w->rep.grid);
            json_double("median_us", w->r.median_us);
            json_double("gbps", w->gbps);
            json_double("copy_gbps", w->copy_gbps);
            json_double("pct_of_copy", 100.0 * w->gbps / w->copy_gbps);
            json_bool("ok", w->ok);
            json_end_object();
        }
        json_end_array();
        json_end_object();
        json_done();
    } else if (csv) {
        printf("type,n,entry,block_size,unroll,grid,median_us,gbps,copy_gbps,pct_of_copy,ok\n");
        for (size_t i = 0; i < nrows; i++) {
            const row *w = &rows[i];
            printf("%s,%zu,%s,%u,%u,%u,%.3f,%.1f,%.1f,%.1f,%d\n", kj_type_name(w->type), w->n, w->rep.entry,
                   w->rep.block_size, w->rep.unroll, w->rep.grid, w->r.median_us, w->gbps, w->copy_gbps,
                   100.0 * w->gbps / w->copy_gbps, w->ok);
        }
    } else {
        printf("vector add on %s (median of %llu samples; GB/s = 2 reads + 1 write / time; the copy moves as many "
               "bytes)\n\n",
               dev.name, (unsigned long long)samples);
        printf("  %-4s %-8s %-10s %5s %6s %7s %10s %9s %10s %8s %s\n", "type", "n", "entry", "block", "unroll",
               "grid", "median us", "GB/s", "copy GB/s", "% copy", "check");
        for (size_t i = 0; i < nrows; i++) {
            const row *w = &rows[i];
            printf("  %-4s %-8s %-10s %5u %6u %7u %10.2f %9.1f %10.1f %7.1f%% %s\n", kj_type_name(w->type),
                   bench_pow2_label(w->n, n_label, sizeof n_label), w->rep.entry, w->rep.block_size, w->rep.unroll,
                   w->rep.grid, w->r.median_us, w->gbps, w->copy_gbps, 100.0 * w->gbps / w->copy_gbps,
                   w->ok ? "ok" : "WRONG");
        }
        printf("\n");
        for (size_t ti = 0; ti < 2; ti++) {
            if (!best[ti]) continue;
            printf("best %s at n = %s: BLOCK_SIZE=%u UNROLL=%u, %.1f GB/s = %.1f%% of the copy\n",
                   kj_type_name(best[ti]->type), bench_pow2_label(best[ti]->n, n_label, sizeof n_label),
                   best[ti]->rep.block_size, best[ti]->rep.unroll, best[ti]->gbps,
                   100.0 * best[ti]->gbps / best[ti]->copy_gbps);
        }
    }
    free(rows);
    kj_runtime_destroy(rt);
    return rc;
}
