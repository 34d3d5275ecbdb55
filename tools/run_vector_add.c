/* kernjit run vector-add: c = a + b on fresh random input, checked against the CPU and timed. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "cli.h"
#include "run.h"

#define CMD "run vector-add"

static void help(void) {
    printf("usage: kernjit run vector-add [--n N] [--type f32|f64] [-D BLOCK_SIZE=B] [-D UNROLL=U]\n"
           "                              [--offset K] [--seed S] [--repeat R] [--json]\n\n"
           "Adds two vectors of N seeded random values (default 64M, f32) on the GPU after poisoning the\n"
           "output, compares every element with the CPU's sum (the bits must be equal), and prints the\n"
           "median time of R timed runs (CUDA events, after the checked run), GB/s (two vectors read, one\n"
           "written), the entry and configuration and whether the kernel came from the cache.\n\n"
           "  --offset K  start the three vectors K elements into their allocations (K = 1 takes the\n"
           "              entry for pointers not aligned to 16 bytes)\n"
           "N takes suffixes: 1000003, 64M, 2^24. Exit 1 when the result is wrong.\n");
}

int run_vector_add(int argc, char **argv) {
    static const struct option opts[] = {
        {"n", required_argument, 0, 'n'},      {"type", required_argument, 0, 't'},
        {"define", required_argument, 0, 'D'}, {"offset", required_argument, 0, 'o'},
        {"seed", required_argument, 0, 's'},   {"repeat", required_argument, 0, 'r'},
        {"json", no_argument, 0, 'j'},         {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    uint64_t n = 64ull << 20, repeat = 20, seed = 0, offset = 0, v;
    int seed_given = 0, json = 0, c;
    kj_type type = KJ_TYPE_F32;
    kj_vector_add_options vo = {0};
    char err[256];
    optind = 1;
    while ((c = getopt_long(argc, argv, "hn:t:D:o:s:r:j", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (cli_parse_count(optarg, 1ull << 40, &n) != 0 || n == 0)
                return cli_usage(CMD, "--n '%s' is not a count from 1 to 2^40 (examples: 1000003, 64M, 2^24)", optarg);
            break;
        case 't':
            if (kj_type_parse(optarg, &type) != KJ_OK) return cli_usage(CMD, "%s", kj_last_error());
            if (type != KJ_TYPE_F32 && type != KJ_TYPE_F64)
                return cli_usage(CMD, "--type %s: vector-add takes f32 or f64", optarg);
            break;
        case 'D': {
            kj_define d;
            if (cli_parse_define(optarg, &d, err, sizeof err) != 0) return cli_usage(CMD, "%s", err);
            int block = strcmp(d.name, "BLOCK_SIZE") == 0, unroll = strcmp(d.name, "UNROLL") == 0;
            if (!block && !unroll)
                return cli_usage(CMD, "-D %s: run vector-add takes -D BLOCK_SIZE and -D UNROLL (use --type for the "
                                 "element type)", d.name);
            if (cli_parse_uint(d.value, 1024, &v) != 0 || v == 0)
                return cli_usage(CMD, "-D %s=%s: the value must be an integer from 1 to 1024", d.name, d.value);
            if (block) vo.block_size = (unsigned)v;
            else vo.unroll = (unsigned)v;
            break;
        }
        case 'o':
            if (cli_parse_uint(optarg, 1024, &offset) != 0)
                return cli_usage(CMD, "--offset '%s' is not a count from 0 to 1024", optarg);
            break;
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
    if (!seed_given) seed = check_fresh_seed();
    size_t esize = kj_type_size(type);
    size_t bytes = (size_t)n * esize, alloc = (size_t)(n + offset) * esize;

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(CMD, s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error(CMD, "no CUDA device: nothing can run here (`kernjit compile vector_add` works without one)");
    }
    size_t free_b = 0, total_b = 0;
    kj_mem_info(rt, &free_b, &total_b);
    if (3 * alloc > free_b) {
        kj_runtime_destroy(rt);
        return cli_usage(CMD, "--n %llu needs %zu bytes of device memory; %zu of %zu are free", (unsigned long long)n,
                         3 * alloc, free_b, total_b);
    }

    int rc = EXIT_OK;
    void *a = malloc(bytes), *b = malloc(bytes), *got = malloc(bytes);
    double *times = calloc(repeat, sizeof *times);
    kj_devptr da = 0, db = 0, dc = 0;
    kj_event *start = NULL, *stop = NULL;
    if (!a || !b || !got || !times) {
        rc = cli_error(CMD, "out of host memory for 3 x %zu bytes", bytes);
        goto done;
    }
    cli_random_fill(type, a, (size_t)n, seed, 0);
    cli_random_fill(type, b, (size_t)n, seed + 1, 0);
    kj_vector_add_report report;
    vo.report = &report;
    size_t off = (size_t)offset * esize;
    if ((s = kj_mem_alloc(rt, alloc, &da)) != KJ_OK || (s = kj_mem_alloc(rt, alloc, &db)) != KJ_OK ||
        (s = kj_mem_alloc(rt, alloc, &dc)) != KJ_OK || (s = kj_memcpy_htod(rt, da + off, a, bytes)) != KJ_OK ||
        (s = kj_memcpy_htod(rt, db + off, b, bytes)) != KJ_OK || (s = kj_memset_u8(rt, dc, 0xA5, alloc)) != KJ_OK ||
        (s = kj_event_create(rt, &start)) != KJ_OK || (s = kj_event_create(rt, &stop)) != KJ_OK ||
        (s = kj_vector_add(rt, type, da + off, db + off, dc + off, (size_t)n, &vo)) != KJ_OK ||
        (s = kj_synchronize(rt)) != KJ_OK || (s = kj_memcpy_dtoh(rt, got, dc + off, bytes)) != KJ_OK) {
        rc = cli_fail(CMD, s);
        goto done;
    }
    kj_vector_add_report first = report;
    size_t bad = 0;
    size_t wrong = check_vector_add(type, a, b, got, (size_t)n, 0, 0, &bad);
    vo.report = NULL;
    for (uint64_t i = 0; i < repeat; i++) {
        float ms = 0;
        if ((s = kj_event_record(start, vo.stream)) != KJ_OK ||
            (s = kj_vector_add(rt, type, da + off, db + off, dc + off, (size_t)n, &vo)) != KJ_OK ||
            (s = kj_event_record(stop, vo.stream)) != KJ_OK || (s = kj_event_elapsed_ms(start, stop, &ms)) != KJ_OK) {
            rc = cli_fail(CMD, s);
            goto done;
        }
        times[i] = ms;
    }
    double med_ms = cli_median(times, repeat);
    double gbs = med_ms > 0 ? 3.0 * bytes / (med_ms * 1e-3) / 1e9 : 0;

    if (json) {
        json_begin_object();
        json_string("kernel", "vector_add");
        json_string("type", kj_type_name(type));
        json_uint("n", n);
        json_uint("offset", offset);
        json_uint("seed", seed);
        json_string("entry", first.entry);
        json_uint("block_size", first.block_size);
        json_uint("unroll", first.unroll);
        json_uint("grid", first.grid);
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
        printf("vector add %s, n = %llu (seed %llu%s)\n", kj_type_name(type), (unsigned long long)n,
               (unsigned long long)seed, offset ? ", offset into the allocations" : "");
        printf("  entry       %s, BLOCK_SIZE=%u UNROLL=%u (%s), %u blocks\n", first.entry, first.block_size,
               first.unroll, first.config_from, first.grid);
        printf("  kernel      %s\n", cli_origin_text(first.origin));
        printf("  check       %s (every element against the CPU's a + b, bit for bit)\n", wrong ? "WRONG" : "ok");
        printf("  time        %.2f us median of %llu runs, %.1f GB/s (2 reads + 1 write)\n", med_ms * 1e3,
               (unsigned long long)repeat, gbs);
    }
    if (wrong) rc = cli_error(CMD, "%zu elements differ from the CPU's a + b; the first at index %zu", wrong, bad);
done:
    kj_event_destroy(start);
    kj_event_destroy(stop);
    kj_mem_free(rt, da);
    kj_mem_free(rt, db);
    kj_mem_free(rt, dc);
    free(a);
    free(b);
    free(got);
    free(times);
    kj_runtime_destroy(rt);
    return rc;
}
