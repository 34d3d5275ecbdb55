/* kernjit bench nested: the dynamic-parallelism programs next to their flat counterparts. The nested
 * reductions (sum, time, device-side launches) beside the flat default reduction (kj_reduce) on the
 * same input, and the Mandelbrot times of escape time and Mariani-Silver, with the image comparison.
 * Times are GPU times (CUDA events): medians of R runs. */
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit bench nested [--n N] [--block B] [--size S] [--dwell D] [--repeat R]\n"
           "                            [--only reduce|mandelbrot] [--json]\n\n"
           "Nested reductions (sync, nosync, reduce2; blocks of B, default 512) on N random i32 (default\n"
           "2^20) next to the flat default reduction (kj_reduce) on the same input: sum, median GPU time\n"
           "and device-side launches. Then the Mandelbrot image of S x S pixels (default 16384) with dwell\n"
           "D (default 512): escape time and Mariani-Silver, their median GPU times, the speed-up (target:\n"
           "Mariani-Silver at least 3x faster) and whether the two images are identical. R defaults to 5.\n");
}

typedef struct flat_job {
    kj_runtime *rt;
    kj_devptr input, result;
    size_t n;
} flat_job;

static kj_status flat_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    flat_job *j = user;
    kj_reduce_options o = {0};
    o.stream = stream;
    return kj_reduce_async(j->rt, KJ_OP_SUM, KJ_TYPE_I32, j->input, j->n, j->result, &o);
}

static int bench_reduce_part(kj_runtime *rt, size_t n, unsigned block, unsigned repeat, int json) {
    const char *cmd = "bench nested";
    size_t bytes = n * sizeof(int32_t);
    int rc = EXIT_OK;
    int32_t *host = malloc(bytes ? bytes : 1);
    double *t = calloc(repeat, sizeof *t);
    kj_devptr pristine = 0, work = 0, result = 0;
    kj_status s;
    if (!host || !t) {
        rc = cli_error(cmd, "out of host memory");
        goto done;
    }
    cli_random_fill(KJ_TYPE_I32, host, n, 1, 0);
    int32_t want;
    kj_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, host, n, &want, NULL);
    if ((s = kj_mem_alloc(rt, bytes, &pristine)) != KJ_OK || (s = kj_mem_alloc(rt, bytes, &work)) != KJ_OK ||
        (s = kj_mem_alloc(rt, 16, &result)) != KJ_OK || (s = kj_memcpy_htod(rt, pristine, host, bytes)) != KJ_OK) {
        rc = cli_fail(cmd, s);
        goto done;
    }
    /* flat: the default reduction, read-only on the input */
    int32_t flat_sum = 0;
    bench_result flat;
    flat_job job = {rt, pristine, result, n};
    if ((s = kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_I32, pristine, n, &flat_sum, NULL)) != KJ_OK ||
        (s = bench_time(rt, NULL, flat_once, &job, 3, repeat, 0, &flat)) != KJ_OK) {
        rc = cli_fail(cmd, s);
        goto done;
    }
    char label[32];
    bench_pow2_label(n, label, sizeof label);
    if (json) {
        json_object_in("reduce");
        json_uint("n", n);
        json_uint("block_size", block);
        json_int("reference", want);
        json_begin_array("rows");
        json_object_in(NULL);
        json_string("variant", "flat");
        json_int("sum", flat_sum);
        json_double("median_us", flat.median_us);
        json_uint("device_launches", 0);
        json_end_object();
    } else {
        printf("nested reduce: sum of %s random i32, blocks of %u (CPU reference %d)\n\n", label, block, want);
        printf("  %-22s %14s %14s %16s %10s\n", "variant", "sum", "median us", "device launches", "vs flat");
        printf("  %-22s %14d %14.1f %16u %9.1fx%s\n", "flat (kj_reduce)", flat_sum, flat.median_us, 0u, 1.0,
               flat_sum == want ? "" : "  WRONG");
    }
    if (flat_sum != want) rc = EXIT_FAILURE_;
    for (int v = 0; v < KJ_NESTED_VARIANT_COUNT_; v++) {
        kj_dp_report r;
        kj_nested_options o = {(kj_nested_variant)v, block, 1, 0, NULL, &r};
        int32_t sum = 0;
        /* run 0 loads the kernels; every run starts from a fresh copy (the reduction is in place) */
        for (unsigned i = 0; i <= repeat; i++) {
            if ((s = kj_memcpy_dtod(rt, work, pristine, bytes, NULL)) != KJ_OK ||
                (s = kj_nested_reduce(rt, KJ_TYPE_I32, work, n, &sum, &o)) != KJ_OK) {
                rc = cli_fail(cmd, s);
                goto done;
            }
            if (i) t[i - 1] = r.gpu_ms * 1e3;
        }
        double med = cli_median(t, repeat);
        int ok = sum == want && r.device_launches == r.expected_launches;
        if (!ok) rc = EXIT_FAILURE_;
        if (json) {
            json_object_in(NULL);
            json_string("variant", kj_nested_variant_name((kj_nested_variant)v));
            json_int("sum", sum);
            json_double("median_us", med);
            json_uint("device_launches", r.device_launches);
            json_uint("expected_launches", r.expected_launches);
            json_bool("ok", ok);
            json_end_object();
        } else {
            printf("  %-22s %14d %14.1f %16llu %9.1fx%s\n", kj_nested_variant_name((kj_nested_variant)v), sum, med,
                   (unsigned long long)r.device_launches, flat.median_us > 0 ? med / flat.median_us : 0,
                   sum != want ? "  WRONG SUM" : r.device_launches != r.expected_launches ? "  UNEXPECTED LAUNCHES" : "");
        }
    }
    if (json) {
        json_end_array();
        json_end_object();
    } else {
        printf("\n  (\"vs flat\": time / flat time; nested times include the final fold of the per-block sums)\n\n");
    }
done:
    kj_mem_free(rt, pristine);
    kj_mem_free(rt, work);
    kj_mem_free(rt, result);
    free(host);
    free(t);
    return rc;
}

static int bench_mandelbrot_part(kj_runtime *rt, unsigned size, unsigned dwell, unsigned repeat, int json) {
    const char *cmd = "bench nested";
    size_t pixels = (size_t)size * size, bytes = pixels * sizeof(uint16_t);
    int rc = EXIT_OK;
    kj_devptr img[2] = {0, 0};
    uint16_t *host[2] = {malloc(bytes), malloc(bytes)};
    double *t = calloc(repeat, sizeof *t), med[2];
    kj_dp_report r[2];
    kj_status s;
    if (!host[0] || !host[1] || !t) {
        rc = cli_error(cmd, "out of host memory for two %u x %u images", size, size);
        goto done;
    }
    for (int a = 0; a < 2; a++) {
        kj_mandelbrot_options o = {0};
        o.algo = a ? KJ_MANDELBROT_MS : KJ_MANDELBROT_ESCAPE;
        o.max_dwell = dwell;
        o.count_launches = 1;
        o.report = &r[a];
        if ((s = kj_mem_alloc(rt, bytes, &img[a])) != KJ_OK || (s = kj_memset_u8(rt, img[a], 0xff, bytes)) != KJ_OK) {
            rc = cli_fail(cmd, s);
            goto done;
        }
        for (unsigned i = 0; i <= repeat; i++) {
            if ((s = kj_mandelbrot(rt, img[a], size, size, &o)) != KJ_OK) {
                rc = cli_fail(cmd, s);
                goto done;
            }
            if (i) t[i - 1] = r[a].gpu_ms;
        }
        med[a] = cli_median(t, repeat);
        if ((s = kj_memcpy_dtoh(rt, host[a], img[a], bytes)) != KJ_OK) {
            rc = cli_fail(cmd, s);
            goto done;
        }
    }
    size_t differ = 0;
    for (size_t i = 0; i < pixels; i++) differ += host[0][i] != host[1][i];
    double speedup = med[1] > 0 ? med[0] / med[1] : 0;
    if (differ) rc = EXIT_FAILURE_;
    if (json) {
        json_object_in("mandelbrot");
        json_uint("size", size);
        json_uint("max_dwell", dwell);
        json_double("escape_ms", med[0]);
        json_double("ms_ms", med[1]);
        json_double("speedup", speedup);
        json_uint("ms_device_launches", r[1].device_launches);
        json_uint("pixels_differ", differ);
        json_end_object();
    } else {
        printf("mandelbrot %u x %u, dwell %u\n\n", size, size, dwell);
        printf("  %-22s %12s %16s\n", "algorithm", "median ms", "device launches");
        printf("  %-22s %12.3f %16u\n", "escape time", med[0], 0u);
        printf("  %-22s %12.3f %16llu\n", "Mariani-Silver", med[1], (unsigned long long)r[1].device_launches);
        printf("\n  Mariani-Silver is %.2fx faster than escape time (target: at least 3x)%s\n", speedup,
               speedup >= 3 ? "" : "  BELOW TARGET");
        printf("  images: %s\n", differ ? "DIFFERENT" : "identical");
        if (differ) printf("  %zu of %zu pixels differ\n", differ, pixels);
    }
done:
    kj_mem_free(rt, img[0]);
    kj_mem_free(rt, img[1]);
    free(host[0]);
    free(host[1]);
    free(t);
    return rc;
}

typedef struct nested_bench {
    bench_ctx bench;
    uint64_t n, block, size, dwell;
    int reduce, mandelbrot; /* the parts to run (--only) */
} nested_bench;

static int option(bench_ctx *c, int opt, char *arg) {
    nested_bench *b = (nested_bench *)c;
    switch (opt) {
    case 'n':
        if (cli_parse_count(arg, 1ull << 28, &b->n) != 0 || b->n == 0)
            return cli_usage(c->cmd, "--n '%s' is not a count from 1 to 2^28", arg);
        break;
    case 'b':
        if (cli_parse_uint(arg, 1024, &b->block) != 0 || b->block < 2 || (b->block & (b->block - 1)))
            return cli_usage(c->cmd, "--block '%s': a power of two from 2 to 1024 is allowed", arg);
        break;
    case 's':
        if (cli_parse_count(arg, 32768, &b->size) != 0 || b->size == 0)
            return cli_usage(c->cmd, "--size '%s': a size from 1 to 32768 is allowed", arg);
        break;
    case 'd':
        if (cli_parse_uint(arg, 16384, &b->dwell) != 0 || b->dwell < 16 || (b->dwell & (b->dwell - 1)))
            return cli_usage(c->cmd, "--dwell '%s': a power of two from 16 to 16384 is allowed", arg);
        break;
    case 'r': return bench_parse_samples(c, "--repeat", arg);
    case 'o':
        if (strcmp(arg, "reduce") == 0) b->mandelbrot = 0;
        else if (strcmp(arg, "mandelbrot") == 0) b->reduce = 0;
        else return cli_usage(c->cmd, "--only '%s': allowed are reduce, mandelbrot", arg);
        break;
    }
    return EXIT_OK;
}

static int run(bench_ctx *c) {
    nested_bench *b = (nested_bench *)c;
    char what[64];
    int rc = EXIT_OK, r;
    snprintf(what, sizeof what, "--n %llu", (unsigned long long)b->n);
    if (b->reduce) rc = cli_check_device_memory(c->rt, c->cmd, what, 2 * b->n * sizeof(int32_t));
    snprintf(what, sizeof what, "--size %llu", (unsigned long long)b->size);
    if (rc == EXIT_OK && b->mandelbrot)
        rc = cli_check_device_memory(c->rt, c->cmd, what, 2 * b->size * b->size * sizeof(uint16_t));
    if (rc != EXIT_OK) return rc;
    unsigned repeat = (unsigned)c->samples;
    int json = c->format == 'j';
    if (json) {
        json_begin_object();
        json_string("device", c->dev.name);
    } else {
        printf("kernjit bench nested on %s (%s)\n\n", c->dev.name, c->dev.arch);
    }
    if (b->reduce && (r = bench_reduce_part(c->rt, (size_t)b->n, (unsigned)b->block, repeat, json)) != EXIT_OK) rc = r;
    if (b->mandelbrot && (r = bench_mandelbrot_part(c->rt, (unsigned)b->size, (unsigned)b->dwell, repeat, json)) != EXIT_OK)
        rc = r;
    if (json) {
        json_end_object();
        json_done();
    }
    return rc;
}

static const struct option options[] = {{"n", required_argument, 0, 'n'},      {"block", required_argument, 0, 'b'},
                                        {"size", required_argument, 0, 's'},   {"dwell", required_argument, 0, 'd'},
                                        {"repeat", required_argument, 0, 'r'}, {"only", required_argument, 0, 'o'},
                                        {0, 0, 0, 0}};

static const bench_family nested = {
    .help = help,
    .optstring = "n:b:s:d:r:o:",
    .options = options,
    .max_samples = 1000,
    .option = option,
    .run = run,
};

int bench_nested(int argc, char **argv) {
    nested_bench b = {.bench.samples = 5, .n = 1ull << 20, .block = 512, .size = 16384, .dwell = 512, .reduce = 1,
                      .mandelbrot = 1};
    return bench_main(&nested, &b.bench, argc, argv);
}
