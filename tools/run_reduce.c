/* kernjit run reduce: one reduction on seeded random input, checked against the CPU and timed. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "cli.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit run reduce [--op sum|max|min|prod] [--type i32|u32|i64|f16|f32|f64] [--n N]\n"
           "                          [--entry E] [-D BLOCK_SIZE=B] [-D COARSE_FACTOR=C] [--seed S] [--repeat R]\n"
           "                          [--json]\n\n"
           "Reduces N seeded random values (default sum, f32, 64M) on the GPU, compares with the CPU\n"
           "reference, and prints the result, the error, the median time of R timed runs (CUDA events,\n"
           "after a warm-up), GB/s of input read, the configuration and whether the kernel came from the\n"
           "cache. N takes suffixes: 1000003, 64M, 1G, 2^28. The input is fresh each run and its seed printed;\n"
           "--seed S replays it. Exit 1 when the result is wrong.\n");
}

int run_reduce(int argc, char **argv) {
    /* "kernjit run reduce", or "kernjit demo" when the demo runs it: messages name what was typed */
    const char *cmd = strncmp(argv[0], "kernjit ", 8) == 0 ? argv[0] + 8 : "run reduce";
    static const struct option opts[] = {
        {"op", required_argument, 0, 'o'},     {"type", required_argument, 0, 't'},  {"n", required_argument, 0, 'n'},
        {"entry", required_argument, 0, 'e'},  {"define", required_argument, 0, 'D'}, {"seed", required_argument, 0, 's'},
        {"repeat", required_argument, 0, 'r'}, {"json", no_argument, 0, 'j'},         {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    kj_op op = KJ_OP_SUM;
    kj_type type = KJ_TYPE_F32;
    uint64_t n = 64ull << 20, seed = 0, repeat = 20;
    kj_reduce_options ro = {0};
    int json = 0, c, seed_given = 0;
    char err[256];
    while ((c = getopt_long(argc, argv, "ho:t:n:e:D:s:r:j", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (kj_op_parse(optarg, &op) != KJ_OK) return cli_usage(cmd, "%s", kj_last_error());
            break;
        case 't':
            if (kj_type_parse(optarg, &type) != KJ_OK) return cli_usage(cmd, "%s", kj_last_error());
            break;
        case 'n':
            if (cli_parse_count(optarg, 1ull << 40, &n) != 0)
                return cli_usage(cmd, "--n '%s' is not a count (examples: 1000003, 64M, 1G, 2^28)", optarg);
            break;
        case 'e': ro.entry = optarg; break;
        case 's':
            if (cli_parse_uint(optarg, UINT64_MAX, &seed) != 0)
                return cli_usage(cmd, "--seed '%s' is not a non-negative integer", optarg);
            seed_given = 1;
            break;
        case 'r':
            if (cli_parse_uint(optarg, 100000, &repeat) != 0 || repeat == 0)
                return cli_usage(cmd, "--repeat '%s' is not a count from 1 to 100000", optarg);
            break;
        case 'D': {
            kj_define d;
            uint64_t v;
            if (cli_parse_define(optarg, &d, err, sizeof err) != 0) return cli_usage(cmd, "%s", err);
            int is_block = strcmp(d.name, "BLOCK_SIZE") == 0, is_coarse = strcmp(d.name, "COARSE_FACTOR") == 0;
            if (!is_block && !is_coarse)
                return cli_usage(cmd, "-D %s: run reduce takes -D BLOCK_SIZE and -D COARSE_FACTOR (use --op and "
                                 "--type for the operator and type)", d.name);
            if (cli_parse_uint(d.value, 1u << 20, &v) != 0 || v == 0)
                return cli_usage(cmd, "-D %s=%s: the value must be a positive integer", d.name, d.value);
            if (is_block) ro.block_size = (unsigned)v;
            else ro.coarse_factor = (unsigned)v;
            break;
        }
        case 'j': json = 1; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage(cmd, "unknown option");
        }
    }
    if (optind < argc) return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);

    size_t esize = kj_type_size(type);
    if (n > SIZE_MAX / esize) return cli_usage(cmd, "--n %llu: the byte count overflows", (unsigned long long)n);
    size_t bytes = (size_t)n * esize;

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(cmd, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(cmd, "no CUDA device: nothing can run here (`kernjit compile reduce` works without one)");
    }
    size_t free_b = 0, total_b = 0;
    kj_mem_info(rt, &free_b, &total_b);
    if (bytes > free_b) {
        kj_runtime_destroy(rt);
        return cli_usage(cmd, "--n %llu needs %zu bytes of device memory; %zu of %zu are free",
                         (unsigned long long)n, bytes, free_b, total_b);
    }

    int rc = EXIT_OK;
    void *host = malloc(bytes ? bytes : 1);
    kj_devptr input = 0, result = 0;
    kj_event *start = NULL, *stop = NULL;
    double *times = calloc(repeat, sizeof *times);
    if (!host || !times) {
        rc = cli_error(cmd, "out of host memory for %zu bytes", bytes);
        goto done;
    }
    if (!seed_given) seed = check_fresh_seed(); /* fresh each run, printed: --seed replays it */
    cli_random_fill(type, host, (size_t)n, seed, 0);
    unsigned char expected[8] = {0}, got[8] = {0};
    double abs_sum = 0;
    kj_reduce_reference(op, type, host, (size_t)n, expected, &abs_sum);

    if ((s = kj_mem_alloc(rt, bytes ? bytes : 1, &input)) != KJ_OK || (s = kj_memcpy_htod(rt, input, host, bytes)) != KJ_OK ||
        (s = kj_mem_alloc(rt, 16, &result)) != KJ_OK || (s = kj_event_create(rt, &start)) != KJ_OK ||
        (s = kj_event_create(rt, &stop)) != KJ_OK) {
        rc = cli_fail(cmd, s);
        goto done;
    }
    /* The first call compiles or loads the kernel; its report says which. */
    kj_reduce_report report;
    ro.report = &report;
    memset(got, 0xA5, sizeof got); /* poisoned: a result never written shows */
    if ((s = kj_reduce(rt, op, type, input, (size_t)n, got, &ro)) != KJ_OK) {
        rc = cli_fail(cmd, s);
        goto done;
    }
    kj_reduce_report first = report;
    for (uint64_t i = 0; i < repeat; i++) {
        float ms = 0;
        if ((s = kj_event_record(start, ro.stream)) != KJ_OK ||
            (s = kj_reduce_async(rt, op, type, input, (size_t)n, result, &ro)) != KJ_OK ||
            (s = kj_event_record(stop, ro.stream)) != KJ_OK || (s = kj_event_elapsed_ms(start, stop, &ms)) != KJ_OK) {
            rc = cli_fail(cmd, s);
            goto done;
        }
        times[i] = ms;
    }
    double med_ms = cli_median(times, repeat);
    double gbs = med_ms > 0 ? bytes / (med_ms * 1e-3) / 1e9 : 0;
    double want = kj_result_as_double(type, expected), have = kj_result_as_double(type, got);
    double tol = kj_reduce_tolerance(op, type, (size_t)n, want, abs_sum, &first);
    int exact = memcmp(expected, got, kj_result_size(type)) == 0;
    double error = fabs(have - want);
    int ok = exact || (isnan(want) && isnan(have)) || error <= tol;

    if (json) {
        json_begin_object();
        json_string("kernel", "reduce");
        json_string("op", kj_op_name(op));
        json_string("type", kj_type_name(type));
        json_uint("n", n);
        json_uint("seed", seed);
        json_string("entry", first.entry);
        json_uint("block_size", first.block_size);
        json_uint("coarse_factor", first.coarse_factor);
        json_uint("grid", first.grid);
        json_string("config_from", first.config_from);
        json_string("origin", cli_origin_text(first.origin));
        json_double("result", have);
        json_double("reference", want);
        json_double("error", error);
        json_double("tolerance", tol);
        json_bool("ok", ok);
        json_uint("repeat", repeat);
        json_double("median_us", med_ms * 1e3);
        json_double("gbps", gbs);
        json_end_object();
        json_done();
    } else {
        printf("reduce %s %s, n = %llu (seed %llu)\n", kj_op_name(op), kj_type_name(type), (unsigned long long)n,
               (unsigned long long)seed);
        printf("  entry       %s, BLOCK_SIZE=%u COARSE_FACTOR=%u, %u blocks (%s configuration)\n", first.entry,
               first.block_size, first.coarse_factor, first.grid, first.config_from);
        printf("  kernel      %s\n", cli_origin_text(first.origin));
        printf("  result      %.17g\n  reference   %.17g (CPU)\n", have, want);
        printf("  error       %.3g (tolerance %.3g) %s\n", error, tol, ok ? "ok" : "WRONG");
        printf("  time        %.2f us median of %llu runs, %.1f GB/s\n", med_ms * 1e3, (unsigned long long)repeat, gbs);
    }
    if (!ok) rc = cli_error(cmd, "the GPU result %.17g differs from the CPU reference %.17g by more than %.3g",
                            have, want, tol);
done:
    kj_event_destroy(start);
    kj_event_destroy(stop);
    kj_mem_free(rt, input);
    kj_mem_free(rt, result);
    free(host);
    free(times);
    kj_runtime_destroy(rt);
    return rc;
}
