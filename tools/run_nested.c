/* kernjit run nested-reduce / nested-hello: the dynamic-parallelism programs of kernels_src/nested.cu
 * on the GPU. nested-reduce checks the sum against the CPU and reports the device-side launches. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "cli.h"
#include "run.h"

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* ---- nested-reduce ---------------------------------------------------------------------------- */

static void reduce_help(void) {
    printf("usage: kernjit run nested-reduce [--variant sync|nosync|reduce2] [--n N] [--block B]\n"
           "                                 [--type i32|u32|i64|f32|f64] [--seed S] [--repeat R]\n"
           "                                 [--pending P] [--json]\n\n"
           "Sums N seeded random values (default 1M, i32) with a recursive reduction that launches kernels\n"
           "from the GPU (Professional CUDA C Programming, ch. 3, for CDP2): sync (block barrier, children\n"
           "fire-and-forget), nosync (no barrier, children tail-launched), reduce2 (block 0 launches one\n"
           "grid per level). Blocks of B threads (a power of two from 2 to 1024, default 512). Prints the\n"
           "sum, the CPU reference, the median GPU time of R runs (default 10) and the device-side launches,\n"
           "counted on the device. --pending asks for that pending-launch limit instead of the tree's need\n"
           "(the limit is only ever raised). The input is fresh each run and its seed printed; --seed S\n"
           "replays it. Exit 1 when the sum is wrong or a device launch failed.\n");
}

int run_nested_reduce(int argc, char **argv) {
    static const struct option opts[] = {
        {"variant", required_argument, 0, 'v'}, {"n", required_argument, 0, 'n'},
        {"block", required_argument, 0, 'b'},   {"type", required_argument, 0, 't'},
        {"seed", required_argument, 0, 's'},    {"repeat", required_argument, 0, 'r'},
        {"pending", required_argument, 0, 'p'}, {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *cmd = "run nested-reduce";
    kj_nested_variant variant = KJ_NESTED_SYNC;
    kj_type type = KJ_TYPE_I32;
    uint64_t n = 1ull << 20, block = 512, seed = 0, repeat = 10, pending = 0;
    int json = 0, c, seed_given = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hv:n:b:t:s:r:p:j", opts, NULL)) != -1) {
        switch (c) {
        case 'v':
            if (kj_nested_variant_parse(optarg, &variant) != KJ_OK) return cli_usage(cmd, "%s", kj_last_error());
            break;
        case 'n':
            if (cli_parse_count(optarg, 1ull << 34, &n) != 0)
                return cli_usage(cmd, "--n '%s' is not a count up to 2^34 (examples: 1000003, 1M, 2^20)", optarg);
            break;
        case 'b':
            if (cli_parse_uint(optarg, 1024, &block) != 0 || !is_pow2(block) || block < 2)
                return cli_usage(cmd, "--block '%s': a power of two from 2 to 1024 is allowed", optarg);
            break;
        case 't':
            if (kj_type_parse(optarg, &type) != KJ_OK) return cli_usage(cmd, "%s", kj_last_error());
            if (type == KJ_TYPE_F16) return cli_usage(cmd, "--type f16: allowed are i32, u32, i64, f32, f64");
            break;
        case 's':
            if (cli_parse_uint(optarg, UINT64_MAX, &seed) != 0)
                return cli_usage(cmd, "--seed '%s' is not a non-negative integer", optarg);
            seed_given = 1;
            break;
        case 'r':
            if (cli_parse_uint(optarg, 100000, &repeat) != 0 || repeat == 0)
                return cli_usage(cmd, "--repeat '%s' is not a count from 1 to 100000", optarg);
            break;
        case 'p':
            if (cli_parse_uint(optarg, 1u << 30, &pending) != 0 || pending == 0)
                return cli_usage(cmd, "--pending '%s' is not a count from 1 to 2^30", optarg);
            break;
        case 'j': json = 1; break;
        case 'h': reduce_help(); return EXIT_OK;
        default: return cli_usage(cmd, "unknown option");
        }
    }
    if (optind < argc) return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
    size_t esize = kj_type_size(type), bytes = (size_t)n * esize;

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(cmd, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(cmd, "no CUDA device: nothing can run here (`kernjit compile nested` works without one)");
    }
    char what[64];
    snprintf(what, sizeof what, "--n %llu", (unsigned long long)n);
    int rc = cli_check_device_memory(rt, cmd, what, 2 * (uint64_t)bytes); /* the input and its working copy */
    if (rc != EXIT_OK) {
        kj_runtime_destroy(rt);
        return rc;
    }
    void *host = malloc(bytes ? bytes : 1);
    double *times = calloc(repeat, sizeof *times);
    kj_devptr pristine = 0, work = 0;
    if (!host || !times) {
        rc = cli_error(cmd, "out of host memory for %zu bytes", bytes);
        goto done;
    }
    if (!seed_given) seed = check_fresh_seed(); /* fresh each run, printed: --seed replays it */
    cli_random_fill(type, host, (size_t)n, seed, 0);
    unsigned char expected[8] = {0}, got[8];
    double abs_sum = 0;
    kj_reduce_reference(KJ_OP_SUM, type, host, (size_t)n, expected, &abs_sum);
    if (n && ((s = kj_mem_alloc(rt, bytes, &pristine)) != KJ_OK || (s = kj_mem_alloc(rt, bytes, &work)) != KJ_OK ||
              (s = kj_memcpy_htod(rt, pristine, host, bytes)) != KJ_OK)) {
        rc = cli_fail(cmd, s);
        goto done;
    }
    kj_dp_report report, first;
    kj_nested_options o = {variant, (unsigned)block, 1, pending, NULL, &report};
    /* Run 0 compiles or loads the kernels and is not timed; the reduction is in place, so every run
     * starts from a fresh copy of the input. */
    for (uint64_t i = 0; i <= repeat; i++) {
        memset(got, 0xA5, sizeof got); /* poisoned: a sum never written shows */
        if ((n && (s = kj_memcpy_dtod(rt, work, pristine, bytes, NULL)) != KJ_OK) ||
            (s = kj_nested_reduce(rt, type, work, (size_t)n, got, &o)) != KJ_OK) {
            rc = cli_fail(cmd, s);
            goto done;
        }
        if (i == 0) first = report;
        else times[i - 1] = report.gpu_ms;
    }
    double med_ms = cli_median(times, repeat);
    double want = kj_result_as_double(type, expected), have = kj_result_as_double(type, got);
    double tol = kj_reduce_tolerance(KJ_OP_SUM, type, (size_t)n, want, abs_sum, NULL);
    int exact = memcmp(expected, got, kj_result_size(type)) == 0;
    double error = fabs(have - want);
    int ok = exact || error <= tol;
    int launches_ok = report.device_launches == report.expected_launches;

    if (json) {
        json_begin_object();
        json_string("kernel", "nested");
        json_string("variant", kj_nested_variant_name(variant));
        json_string("entry", first.entry);
        json_string("type", kj_type_name(type));
        json_uint("n", n);
        json_uint("seed", seed);
        json_uint("block_size", block);
        json_uint("grid", first.grid[0]);
        json_uint("levels", first.levels);
        json_string("origin", cli_origin_text(first.origin));
        json_double("sum", have);
        json_double("reference", want);
        json_double("error", error);
        json_bool("ok", ok);
        json_uint("repeat", repeat);
        json_double("median_us", med_ms * 1e3);
        json_uint("device_launches", report.device_launches);
        json_uint("expected_launches", report.expected_launches);
        json_uint("pending_launches", report.pending_launches);
        json_uint("pending_limit", report.pending_limit);
        json_end_object();
        json_done();
    } else {
        printf("nested-reduce %s, sum of %llu %s (seed %llu)\n", kj_nested_variant_name(variant),
               (unsigned long long)n, kj_type_name(type), (unsigned long long)seed);
        printf("  kernel      %s, %u blocks of %u threads, %u levels of grids (%s)\n", first.entry, first.grid[0],
               first.block[0], first.levels, cli_origin_text(first.origin));
        printf("  sum         %.17g\n  reference   %.17g (CPU)\n", have, want);
        if (exact) printf("  error       0 ok\n");
        else printf("  error       %.3g (tolerance %.3g) %s\n", error, tol, ok ? "ok" : "WRONG");
        printf("  time        %.2f us median of %llu runs (GPU: the launch tree and the final fold)\n", med_ms * 1e3,
               (unsigned long long)repeat);
        printf("  launches    %llu device-side (expected %llu), pending-launch limit %llu (asked %llu)\n",
               (unsigned long long)report.device_launches, (unsigned long long)report.expected_launches,
               (unsigned long long)report.pending_limit, (unsigned long long)report.pending_launches);
    }
    if (!ok)
        rc = cli_error(cmd, "the GPU sum %.17g differs from the CPU reference %.17g by more than %.3g", have, want, tol);
    else if (!launches_ok)
        rc = cli_error(cmd, "the device made %llu launches; the variant makes %llu",
                       (unsigned long long)report.device_launches, (unsigned long long)report.expected_launches);
done:
    kj_mem_free(rt, pristine);
    kj_mem_free(rt, work);
    free(host);
    free(times);
    kj_runtime_destroy(rt);
    return rc;
}

/* ---- nested-hello ----------------------------------------------------------------------------- */

static void hello_help(void) {
    printf("usage: kernjit run nested-hello [--block B] [--grid G]\n\n"
           "The nested hello world: G blocks (default 1) of B threads (a power of two up to 1024, default 8)\n"
           "print \"Recursion=0: Hello World from thread T block B\"; thread 0 of each block launches one\n"
           "block of half the threads one level deeper (tail launch), down to one thread. Prints the tree\n"
           "(G x (2B - 1) lines, at most 8192), then the device-side launches.\n");
}

int run_nested_hello(int argc, char **argv) {
    static const struct option opts[] = {{"block", required_argument, 0, 'b'},
                                         {"grid", required_argument, 0, 'g'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *cmd = "run nested-hello";
    uint64_t block = 8, grid = 1;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hb:g:", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (cli_parse_uint(optarg, 1024, &block) != 0 || !is_pow2(block))
                return cli_usage(cmd, "--block '%s': a power of two from 1 to 1024 is allowed", optarg);
            break;
        case 'g':
            if (cli_parse_uint(optarg, 8192, &grid) != 0 || grid == 0)
                return cli_usage(cmd, "--grid '%s' is not a count from 1 to 8192", optarg);
            break;
        case 'h': hello_help(); return EXIT_OK;
        default: return cli_usage(cmd, "unknown option");
        }
    }
    if (optind < argc) return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
    uint64_t lines = grid * (2 * block - 1);
    if (lines > 8192)
        return cli_usage(cmd, "--grid %llu --block %llu prints %llu lines; at most 8192 fit the device's printf buffer",
                         (unsigned long long)grid, (unsigned long long)block, (unsigned long long)lines);
    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(cmd, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(cmd, "no CUDA device: nothing can run here (`kernjit compile nested` works without one)");
    }
    printf("nested-hello: %llu block%s of %llu threads\n", (unsigned long long)grid, grid == 1 ? "" : "s",
           (unsigned long long)block);
    fflush(stdout); /* the device's lines are written by the driver, after ours */
    kj_dp_report r;
    s = kj_nested_hello(rt, (unsigned)grid, (unsigned)block, &r);
    fflush(stdout);
    int rc = EXIT_OK;
    if (s != KJ_OK) {
        rc = cli_fail(cmd, s);
    } else {
        printf("%llu device-side launches (expected %llu), %u levels of grids\n",
               (unsigned long long)r.device_launches, (unsigned long long)r.expected_launches, r.levels);
        if (r.device_launches != r.expected_launches)
            rc = cli_error(cmd, "the device made %llu launches; the tree has %llu",
                           (unsigned long long)r.device_launches, (unsigned long long)r.expected_launches);
    }
    kj_runtime_destroy(rt);
    return rc;
}
