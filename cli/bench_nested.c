/* kernjit bench nested: the dynamic-parallelism programs next to their flat counterparts. The nested
 * reductions (sum, time, device-side launches) beside the flat default reduction (kj_reduce) on the
 * same input, and the Mandelbrot times of escape time and Mariani-Silver, with the image comparison.
 * Times are GPU times (CUDA events): medians of R runs. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "kjtest.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit bench nested [--n N] [--block B] [--size S] [--dwell D]\n"
           "                            [--repeat R] [--only reduce|mandelbrot] [--json]\n"
           "\n"
           "Nested reductions (sync, nosync, reduce2; blocks of B, default 512) on N random\n"
           "i32 (default 2^20) next to the flat default reduction (kj_reduce) on the same\n"
           "input: sum, median GPU time and device-side launches. Then the Mandelbrot image\n"
           "of S x S pixels (default 16384) with dwell D (default 512): escape time and\n"
           "Mariani-Silver, their median GPU times, the speed-up (target: Mariani-Silver at\n"
           "least 3x faster) and whether the two images are identical. R defaults to 5.\n");
}

typedef struct nested_bench {
    bench_ctx bench;
    uint64_t n, block, size, dwell;
    int reduce, mandelbrot; /* the parts to run (--only) */
    double *times;          /* repeat of them */
    /* the reduction part's job */
    kj_devptr pristine, work, result; /* the input, the copy a nested reduction works on in place, flat's sum */
    kj_nested_options nested;
    int32_t sum;
    /* the Mandelbrot part's */
    kj_devptr image;
    kj_mandelbrot_options mandelbrot_options;
} nested_bench;

static kj_status flat_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    nested_bench *b = user;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .stream = stream};
    return kj_reduce_async(b->bench.rt, KJ_OP_SUM, KJ_TYPE_I32, b->pristine, (size_t)b->n, b->result, &o);
}

static kj_status nested_once(nested_bench *b) {
    kj_status s = kj_memcpy_dtod(b->bench.rt, b->work, b->pristine, (size_t)b->n * sizeof(int32_t), NULL);
    return s == KJ_OK ? kj_nested_reduce(b->bench.rt, KJ_TYPE_I32, b->work, (size_t)b->n, &b->sum, &b->nested) : s;
}

static kj_status mandelbrot_once(nested_bench *b) {
    return kj_mandelbrot(b->bench.rt, b->image, (unsigned)b->size, (unsigned)b->size, &b->mandelbrot_options);
}

/* For the calls that wait and report their GPU time (in *gpu_ms): run 0 (compiling or loading the
 * kernels) untimed, then --repeat runs; their median, scaled. */
static kj_status median_reported(nested_bench *b, kj_status (*once)(nested_bench *), const double *gpu_ms, double scale,
                                 double *median) {
    unsigned repeat = (unsigned)b->bench.samples;
    for (unsigned i = 0; i <= repeat; i++) {
        kj_status s = once(b);
        if (s != KJ_OK) return s;
        if (i) b->times[i - 1] = *gpu_ms * scale;
    }
    *median = cli_median(b->times, repeat);
    return KJ_OK;
}

/* The nested reductions next to the flat one, on the same i32 input. */
static int compare_reductions(nested_bench *b) {
    bench_ctx *c = &b->bench;
    size_t n = (size_t)b->n, bytes = n * sizeof(int32_t);
    int json = c->format == 'j';
    int32_t *host = malloc(bytes ? bytes : 1), want, flat_sum = 0;
    if (!host) return cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory");
    cli_random_fill(KJ_TYPE_I32, host, n, 1, 0);
    kjtest_reduce_reference(KJ_OP_SUM, KJ_TYPE_I32, host, n, &want, NULL);
    int32_t poison; /* in each sum before its run: a sum never written is never taken for the right one */
    kjtest_reduce_poison(KJ_TYPE_I32, &want, &poison);
    flat_sum = poison;
    kj_status s;
    bench_result flat;
    bench_step(c, "reduce, flat");
    /* flat: the default reduction, read-only on the input */
    if ((s = kj_mem_alloc(c->rt, bytes, &b->pristine)) != KJ_OK ||
        (s = kj_mem_alloc(c->rt, bytes, &b->work)) != KJ_OK || (s = kj_mem_alloc(c->rt, 16, &b->result)) != KJ_OK ||
        (s = kj_memcpy_htod(c->rt, b->pristine, host, bytes)) != KJ_OK ||
        (s = kj_reduce(c->rt, KJ_OP_SUM, KJ_TYPE_I32, b->pristine, n, &flat_sum, NULL)) != KJ_OK ||
        (s = bench_time(c->rt, NULL, flat_once, b, 3, (unsigned)c->samples, 0, &flat)) != KJ_OK) {
        free(host);
        return cli_fail(c->cmd, s);
    }
    free(host);
    size_t wrong = flat_sum != want;
    char label[32];
    cli_progress_pause();
    if (json) {
        json_object_in("reduce");
        json_fields("n=%zu block_size=%" PRIu64 " reference=%d", n, b->block, want);
        json_begin_array("rows");
        json_object_in(NULL);
        json_fields("variant=%s sum=%d median_us=%g device_launches=%u ok?=%d", "flat", flat_sum, flat.median_us, 0u,
                    flat_sum == want);
        json_end_object();
    } else {
        printf("nested reduce: sum of %s random i32, blocks of %" PRIu64 " (CPU reference %d)\n\n",
               bench_pow2_label(n, label, sizeof label), b->block, want);
        printf("  %-22s %14s %14s %16s %10s\n", "variant", "sum", "median us", "device launches", "vs flat");
        printf("  %-22s %14d %14.1f %16u %9.1fx%s\n", "flat (kj_reduce)", flat_sum, flat.median_us, 0u, 1.0,
               flat_sum == want ? "" : "  WRONG");
    }
    for (int v = 0; v < KJ_NESTED_VARIANT_COUNT_; v++) {
        kj_dp_report r = KJ_DP_REPORT_INIT;
        double med;
        b->nested = (kj_nested_options){
            sizeof(kj_nested_options), (kj_nested_variant)v, (unsigned)b->block, 1, 0, NULL, &r};
        b->sum = poison;
        bench_step(c, "reduce, %s", kj_nested_variant_name((kj_nested_variant)v));
        if ((s = median_reported(b, nested_once, &r.gpu_ms, 1e3, &med)) != KJ_OK) return cli_fail(c->cmd, s);
        int ok = b->sum == want && r.device_launches == r.expected_launches;
        wrong += !ok;
        cli_progress_pause();
        const char *name = kj_nested_variant_name((kj_nested_variant)v);
        if (json) {
            json_object_in(NULL);
            json_fields("variant=%s sum=%d median_us=%g device_launches=%" PRIu64 " expected_launches=%" PRIu64
                        " ok?=%d",
                        name, b->sum, med, r.device_launches, r.expected_launches, ok);
            json_end_object();
        } else {
            printf("  %-22s %14d %14.1f %16" PRIu64 " %9.1fx%s\n", name, b->sum, med, r.device_launches,
                   flat.median_us > 0 ? med / flat.median_us : 0,
                   b->sum != want                             ? "  WRONG SUM"
                   : r.device_launches != r.expected_launches ? "  UNEXPECTED LAUNCHES"
                                                              : "");
        }
    }
    if (json) {
        json_end_array();
        json_end_object();
    } else {
        printf("\n  (\"vs flat\": time / flat time; nested times include the final fold of the per-block sums)\n\n");
    }
    return bench_wrong_rows(c->cmd, wrong, 1 + KJ_NESTED_VARIANT_COUNT_, EXIT_OK);
}

/* Its buffers are given back before the Mandelbrot part, which may need the memory. */
static int reduce_part(nested_bench *b) {
    int rc = compare_reductions(b);
    kj_mem_free(b->bench.rt, b->pristine);
    kj_mem_free(b->bench.rt, b->work);
    kj_mem_free(b->bench.rt, b->result);
    return rc;
}

/* The Mandelbrot image with escape time and with Mariani-Silver: times, and whether they agree. */
static int mandelbrot_part(nested_bench *b) {
    bench_ctx *c = &b->bench;
    unsigned size = (unsigned)b->size;
    size_t pixels = (size_t)size * size, bytes = pixels * sizeof(uint16_t);
    int json = c->format == 'j';
    uint16_t *host[2] = {malloc(bytes), malloc(bytes)};
    double med[2];
    kj_dp_report r[2] = {KJ_DP_REPORT_INIT, KJ_DP_REPORT_INIT};
    kj_status s = host[0] && host[1] ? KJ_OK : KJ_ERR_HOST_MEMORY;
    for (int a = 0; a < 2 && s == KJ_OK; a++) {
        b->mandelbrot_options = (kj_mandelbrot_options){.size = sizeof(kj_mandelbrot_options),
                                                        .algo = a ? KJ_MANDELBROT_MS : KJ_MANDELBROT_ESCAPE,
                                                        .max_dwell = (unsigned)b->dwell,
                                                        .count_launches = 1,
                                                        .report = &r[a]};
        bench_step(c, "mandelbrot, %s", kj_mandelbrot_algo_name(b->mandelbrot_options.algo));
        kj_mem_free(c->rt, b->image);
        b->image = 0;
        if ((s = kj_mem_alloc(c->rt, bytes, &b->image)) == KJ_OK &&
            (s = kj_memset_u8(c->rt, b->image, 0xff, bytes)) == KJ_OK &&
            (s = median_reported(b, mandelbrot_once, &r[a].gpu_ms, 1, &med[a])) == KJ_OK)
            s = kj_memcpy_dtoh(c->rt, host[a], b->image, bytes);
    }
    size_t differ = 0;
    for (size_t i = 0; s == KJ_OK && i < pixels; i++) differ += host[0][i] != host[1][i];
    free(host[0]);
    free(host[1]);
    if (s == KJ_ERR_HOST_MEMORY)
        return cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory for two %u x %u images", size, size);
    if (s != KJ_OK) return cli_fail(c->cmd, s);
    double speedup = med[1] > 0 ? med[0] / med[1] : 0;
    cli_progress_pause();
    if (json) {
        json_object_in("mandelbrot");
        json_fields("width=%u height=%u max_dwell=%" PRIu64 " escape_time_median_ms=%g mariani_silver_median_ms=%g "
                    "speedup=%g mariani_silver_device_launches=%" PRIu64 " pixels_differ=%zu",
                    size, size, b->dwell, med[0], med[1], speedup, r[1].device_launches, differ);
        json_end_object();
    } else {
        printf("mandelbrot %u x %u, dwell %" PRIu64 "\n\n", size, size, b->dwell);
        printf("  %-22s %12s %16s\n", "algorithm", "median ms", "device launches");
        printf("  %-22s %12.3f %16u\n", "escape time", med[0], 0u);
        printf("  %-22s %12.3f %16" PRIu64 "\n", "Mariani-Silver", med[1], r[1].device_launches);
        printf("\n  Mariani-Silver is %.2fx faster than escape time (target: at least 3x)%s\n", speedup,
               speedup >= 3 ? "" : "  BELOW TARGET");
        printf("  images: %s\n", differ ? "DIFFERENT" : "identical");
        if (differ) printf("  %zu of %zu pixels differ\n", differ, pixels);
    }
    return differ ? cli_error_as(c->cmd, KJ_ERR_WRONG_RESULT,
                                 "the escape-time and Mariani-Silver images differ in %zu "
                                 "pixels",
                                 differ)
                  : EXIT_OK;
}

static int option(bench_ctx *c, int opt, char *arg) {
    nested_bench *b = (nested_bench *)c;
    switch (opt) {
    case 'n': return cli_count_arg(c->cmd, "--n", arg, 1, 1ull << 28, &b->n);
    case 'b': return cli_pow2_arg(c->cmd, "--block", arg, 2, 1024, &b->block);
    case 'd': return cli_pow2_arg(c->cmd, "--dwell", arg, 16, 16384, &b->dwell);
    case 'r': return bench_parse_samples(c, "--repeat", arg);
    case 's': return cli_count_arg(c->cmd, "--size", arg, 1, 32768, &b->size);
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
    snprintf(what, sizeof what, "--n %" PRIu64, b->n);
    if (b->reduce) rc = cli_check_device_memory(c->rt, c->cmd, what, 2 * b->n * sizeof(int32_t));
    snprintf(what, sizeof what, "--size %" PRIu64, b->size);
    if (rc == EXIT_OK && b->mandelbrot)
        rc = cli_check_device_memory(c->rt, c->cmd, what, 2 * b->size * b->size * sizeof(uint16_t));
    if (rc != EXIT_OK) return rc;
    if (!(b->times = calloc(c->samples, sizeof *b->times)))
        return cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory");
    if (c->format != 'j') printf("kernjit bench nested on %s (%s)\n\n", c->dev.name, c->dev.arch);
    c->steps = (b->reduce ? 1 + KJ_NESTED_VARIANT_COUNT_ : 0) + (b->mandelbrot ? 2 : 0);
    if (b->reduce && (r = reduce_part(b)) != EXIT_OK) rc = r;
    if (b->mandelbrot && (r = mandelbrot_part(b)) != EXIT_OK) rc = r;
    kj_mem_free(c->rt, b->image);
    free(b->times);
    return rc;
}

static const bench_family nested = {.help = help,
                                    .max_samples = 1000,
                                    .options = "n=n: block=b: size=s: dwell=d: repeat=r: only=o:",
                                    .option = option,
                                    .run = run};

int bench_nested(int argc, char **argv) {
    nested_bench b = {
        .bench.samples = 5, .n = 1ull << 20, .block = 512, .size = 16384, .dwell = 512, .reduce = 1, .mandelbrot = 1};
    return bench_main(&nested, &b.bench, argc, argv);
}
