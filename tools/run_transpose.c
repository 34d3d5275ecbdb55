/* kernjit run transpose: one transpose of fresh random input, checked against the CPU and timed. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "cli.h"
#include "run.h"

#define CMD "run transpose"
#define MAX_SIDE 2147483647ull

static void help(void) {
    printf("usage: kernjit run transpose [--rows R] [--cols C] [--variant V] [--type T] [-D TILE_DIM=N]\n"
           "                             [-D BLOCK_ROWS=N] [--seed S] [--repeat N] [--json]\n\n"
           "Transposes an R x C row-major matrix (default 8192 x 8192, f32) of seeded random bits on the\n"
           "GPU into C x R, after poisoning the output, compares every element with the input on the CPU,\n"
           "and prints the median time of N timed runs (CUDA events, after the checked run), GB/s (bytes\n"
           "read + written), the configuration and whether the kernel came from the cache.\n\n"
           "  --variant   padded (default: shared-memory tile padded against bank conflicts; -D TILE_DIM,\n"
           "              -D BLOCK_ROWS), read-rows, read-cols, shared (32x8, transposed into shared\n"
           "              memory), l1-8x32, l1-4x32 (no shared memory: thread-block shapes and L1),\n"
           "              vec (no shared memory: 4x4 blocks transposed in registers, 16-byte accesses)\n"
           "  --type      i32 u32 i64 f16 f32 f64: only the element size (2, 4, 8 bytes) matters\n"
           "  --seed      replays an input (the default is fresh each run and printed)\n"
           "R and C take suffixes: 4097, 8K, 2^13. Exit 1 when the result is wrong.\n");
}

int run_transpose(int argc, char **argv) {
    static const struct option opts[] = {
        {"rows", required_argument, 0, 'R'},   {"cols", required_argument, 0, 'C'},
        {"variant", required_argument, 0, 'V'}, {"type", required_argument, 0, 't'},
        {"define", required_argument, 0, 'D'}, {"seed", required_argument, 0, 's'},
        {"repeat", required_argument, 0, 'r'}, {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    uint64_t rows = 8192, cols = 8192, repeat = 20, seed = 0, v;
    int seed_given = 0, json = 0, c;
    kj_type type = KJ_TYPE_F32;
    kj_transpose_options to = {0};
    char err[256];
    optind = 1;
    while ((c = getopt_long(argc, argv, "hR:C:V:t:D:s:r:j", opts, NULL)) != -1) {
        switch (c) {
        case 'R':
        case 'C':
            if (cli_parse_count(optarg, MAX_SIDE, &v) != 0 || v == 0)
                return cli_usage(CMD, "--%s '%s' is not a count from 1 to 2^31-1 (examples: 4097, 8K, 2^13)",
                                 c == 'R' ? "rows" : "cols", optarg);
            if (c == 'R') rows = v;
            else cols = v;
            break;
        case 'V':
            if (kj_transpose_variant_parse(optarg, &to.variant) != KJ_OK) return cli_usage(CMD, "%s", kj_last_error());
            break;
        case 't':
            if (kj_type_parse(optarg, &type) != KJ_OK) return cli_usage(CMD, "%s", kj_last_error());
            break;
        case 'D': {
            kj_define d;
            if (cli_parse_define(optarg, &d, err, sizeof err) != 0) return cli_usage(CMD, "%s", err);
            int tile = strcmp(d.name, "TILE_DIM") == 0, brows = strcmp(d.name, "BLOCK_ROWS") == 0;
            if (!tile && !brows)
                return cli_usage(CMD, "-D %s: run transpose takes -D TILE_DIM and -D BLOCK_ROWS (use --type for the "
                                 "element size)", d.name);
            if (cli_parse_uint(d.value, 1024, &v) != 0 || v == 0)
                return cli_usage(CMD, "-D %s=%s: the value must be an integer from 1 to 1024", d.name, d.value);
            if (tile) to.tile_dim = (unsigned)v;
            else to.block_rows = (unsigned)v;
            break;
        }
        case 's':
            if (cli_parse_uint(optarg, UINT64_MAX, &seed) != 0)
                return cli_usage(CMD, "--seed '%s' is not a non-negative integer", optarg);
            seed_given = 1;
            break;
        case 'r':
            if (cli_parse_uint(optarg, 100000, &repeat) != 0 || repeat == 0)
                return cli_usage(CMD, "--repeat '%s' is not a count from 1 to 100000", optarg);
            break;
        case 'j': json = 1; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage(CMD, "unknown option");
        }
    }
    if (optind < argc) return cli_usage(CMD, "unexpected argument '%s'", argv[optind]);
    if (to.variant != KJ_TRANSPOSE_PADDED && (to.tile_dim || to.block_rows))
        return cli_usage(CMD, "-D TILE_DIM and -D BLOCK_ROWS shape the padded variant; %s has a fixed tile",
                         kj_transpose_variant_name(to.variant));
    if (!seed_given) seed = check_fresh_seed();
    size_t esize = kj_type_size(type);
    if (rows * cols > SIZE_MAX / 2 / esize)
        return cli_usage(CMD, "%llu x %llu: the byte count overflows", (unsigned long long)rows, (unsigned long long)cols);
    size_t bytes = (size_t)(rows * cols) * esize;

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(CMD, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(CMD, "no CUDA device: nothing can run here (`kernjit compile transpose` works without one)");
    }
    size_t free_b = 0, total_b = 0;
    kj_mem_info(rt, &free_b, &total_b);
    if (2 * bytes > free_b) {
        kj_runtime_destroy(rt);
        return cli_usage(CMD, "%llu x %llu needs %zu bytes of device memory; %zu of %zu are free",
                         (unsigned long long)rows, (unsigned long long)cols, 2 * bytes, free_b, total_b);
    }

    int rc = EXIT_OK;
    void *in = malloc(bytes), *got = malloc(bytes);
    double *times = calloc(repeat, sizeof *times);
    kj_devptr din = 0, dout = 0;
    kj_event *start = NULL, *stop = NULL;
    if (!in || !got || !times) {
        rc = cli_error(CMD, "out of host memory for 2 x %zu bytes", bytes);
        goto done;
    }
    check_fill_bits(in, bytes, seed);
    kj_transpose_report report;
    to.report = &report;
    if ((s = kj_mem_alloc(rt, bytes, &din)) != KJ_OK || (s = kj_mem_alloc(rt, bytes, &dout)) != KJ_OK ||
        (s = kj_memcpy_htod(rt, din, in, bytes)) != KJ_OK || (s = kj_memset_u8(rt, dout, 0xA5, bytes)) != KJ_OK ||
        (s = kj_event_create(rt, &start)) != KJ_OK || (s = kj_event_create(rt, &stop)) != KJ_OK ||
        (s = kj_transpose(rt, type, din, dout, (size_t)rows, (size_t)cols, &to)) != KJ_OK ||
        (s = kj_synchronize(rt)) != KJ_OK || (s = kj_memcpy_dtoh(rt, got, dout, bytes)) != KJ_OK) {
        rc = cli_fail(CMD, s);
        goto done;
    }
    kj_transpose_report first = report;
    size_t bad_r = 0, bad_c = 0;
    size_t wrong = check_transpose(in, got, (size_t)rows, (size_t)cols, esize, 0, 0, &bad_r, &bad_c);
    to.report = NULL;
    for (uint64_t i = 0; i < repeat; i++) {
        float ms = 0;
        if ((s = kj_event_record(start, to.stream)) != KJ_OK ||
            (s = kj_transpose(rt, type, din, dout, (size_t)rows, (size_t)cols, &to)) != KJ_OK ||
            (s = kj_event_record(stop, to.stream)) != KJ_OK || (s = kj_event_elapsed_ms(start, stop, &ms)) != KJ_OK) {
            rc = cli_fail(CMD, s);
            goto done;
        }
        times[i] = ms;
    }
    double med_ms = cli_median(times, repeat);
    double gbs = med_ms > 0 ? 2.0 * bytes / (med_ms * 1e-3) / 1e9 : 0;

    if (json) {
        json_begin_object();
        json_string("kernel", "transpose");
        json_string("variant", kj_transpose_variant_name(to.variant));
        json_string("entry", first.entry);
        json_string("type", kj_type_name(type));
        json_uint("rows", rows);
        json_uint("cols", cols);
        json_uint("seed", seed);
        json_uint("tile_rows", first.tile[0]);
        json_uint("tile_cols", first.tile[1]);
        json_uint("block_x", first.block[0]);
        json_uint("block_y", first.block[1]);
        json_uint("grid", first.grid);
        json_uint("shared_bytes", first.shared_bytes);
        json_string("origin", cli_origin_text(first.origin));
        json_string("config_from", first.config_from);
        json_uint("wrong", wrong);
        json_bool("ok", wrong == 0);
        json_uint("repeat", repeat);
        json_double("median_us", med_ms * 1e3);
        json_double("gbps", gbs);
        json_end_object();
        json_done();
    } else {
        printf("transpose %llu x %llu %s, variant %s (seed %llu)\n", (unsigned long long)rows,
               (unsigned long long)cols, kj_type_name(type), kj_transpose_variant_name(to.variant),
               (unsigned long long)seed);
        printf("  entry       %s, %ux%u tile, %ux%u threads (%s), %u blocks, %u bytes of dynamic shared memory\n",
               first.entry, first.tile[0], first.tile[1], first.block[0], first.block[1], first.config_from,
               first.grid, first.shared_bytes);
        printf("  kernel      %s\n", cli_origin_text(first.origin));
        printf("  check       %s (every element against the input, on the CPU)\n", wrong ? "WRONG" : "ok");
        printf("  time        %.2f us median of %llu runs, %.1f GB/s (read + write)\n", med_ms * 1e3,
               (unsigned long long)repeat, gbs);
    }
    if (wrong)
        rc = cli_error(CMD, "%zu elements differ from the CPU transpose; the first: input row %zu, column %zu", wrong,
                       bad_r, bad_c);
done:
    kj_event_destroy(start);
    kj_event_destroy(stop);
    kj_mem_free(rt, din);
    kj_mem_free(rt, dout);
    free(in);
    free(got);
    free(times);
    kj_runtime_destroy(rt);
    return rc;
}
