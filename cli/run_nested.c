/* kernjit run nested-reduce / nested-hello: the dynamic-parallelism programs of kernels_src/nested.cu
 * on the GPU. nested-reduce checks the sum against the CPU and reports the device-side launches. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "run.h"
#include "run_harness.h"
#include "kjtest.h"

/* ---- nested-reduce ---------------------------------------------------------------------------- */

static void reduce_help(void) {
    printf("usage: kernjit run nested-reduce [--variant sync|nosync|reduce2] [--n N]\n"
           "           [--block B] [--type i32|u32|i64|f32|f64] [--seed S] [--repeat R]\n"
           "           [--pending P] [--json]\n"
           "\n"
           "Sums N seeded random values (default 1M, i32) with a recursive reduction that\n"
           "launches kernels from the GPU (Professional CUDA C Programming, ch. 3, for\n"
           "CDP2): sync (block barrier, children fire-and-forget), nosync (no barrier,\n"
           "children tail-launched), reduce2 (block 0 launches one grid per level). Blocks\n"
           "of B threads (a power of two from 2 to 1024, default 512). Prints the sum, the\n"
           "CPU reference, the median GPU time of R runs (default 10) and the device-side\n"
           "launches, counted on the device. --pending asks for that pending-launch limit\n"
           "instead of the tree's need (the limit is only ever raised). The input is fresh\n"
           "each run and its seed printed; --seed S replays it. Exit 1 when the sum is wrong\n"
           "or a device launch failed.\n");
}

typedef struct nested_run {
    run_ctx run;
    kj_nested_options options;
    kj_type type;
    uint64_t n, block, pending;
    size_t bytes;
    kj_dp_report report, first;                   /* the last run's and the first's */
    kj_devptr pristine, work;                     /* the input, and the copy each run reduces in place */
    unsigned char expected[8], got[8], poison[8]; /* poison: in got before each run */
    double abs_sum, want, have, tolerance, error;
    int exact, ok, unwritten;
} nested_run;

static int reduce_option(run_ctx *c, int opt, char *arg) {
    nested_run *r = (nested_run *)c;
    switch (opt) {
    case 'v': return cli_parsed(c->cmd, kj_nested_variant_parse(arg, &r->options.variant));
    case 'n': return cli_count_arg(c->cmd, "--n", arg, 0, 1ull << 34, &r->n);
    case 'b': return cli_pow2_arg(c->cmd, "--block", arg, 2, 1024, &r->block);
    case 'p': return cli_count_arg(c->cmd, "--pending", arg, 1, 1u << 30, &r->pending);
    }
    if (kj_type_parse(arg, &r->type) != KJ_OK) return cli_usage(c->cmd, "%s", kj_last_error()); /* 't' */
    if (r->type == KJ_TYPE_F16 || r->type == KJ_TYPE_BF16)
        return cli_usage(c->cmd, "--type %s: allowed are i32, u32, i64, f32, f64", kj_type_name(r->type));
    return EXIT_OK;
}

static int reduce_prepare(run_ctx *c) {
    nested_run *r = (nested_run *)c;
    r->options.block_size = (unsigned)r->block;
    r->options.pending_launches = r->pending;
    r->options.report = &r->report;
    r->bytes = (size_t)r->n * kj_type_size(r->type);
    c->device_bytes = 2 * (uint64_t)r->bytes; /* the input and its working copy */
    snprintf(c->what, sizeof c->what, "--n %llu", (unsigned long long)r->n);
    return EXIT_OK;
}

/* The reduction is in place: every run starts from a fresh copy of the input. */
static kj_status reduce_timed(run_ctx *c, double *gpu_ms) {
    nested_run *r = (nested_run *)c;
    memcpy(r->got, r->poison, sizeof r->got);
    kj_status s = r->n ? kj_memcpy_dtod(c->rt, r->work, r->pristine, r->bytes, NULL) : KJ_OK;
    if (s == KJ_OK) s = kj_nested_reduce(c->rt, r->type, r->work, (size_t)r->n, r->got, &r->options);
    *gpu_ms = r->report.gpu_ms;
    return s;
}

static int reduce_setup(run_ctx *c) {
    nested_run *r = (nested_run *)c;
    void *host = run_host(c, r->bytes);
    if (!host) return EXIT_FAILURE_;
    kjtest_reduce_input(KJ_OP_SUM, r->type, host, (size_t)r->n, c->seed); /* same-signed: a tight bound */
    kjtest_reduce_reference(KJ_OP_SUM, r->type, host, (size_t)r->n, r->expected, &r->abs_sum);
    kjtest_reduce_poison(r->type, r->expected, r->poison);
    if (r->n) {
        RUN_TRY(c, run_device(c, r->bytes, &r->pristine));
        RUN_TRY(c, run_device(c, r->bytes, &r->work));
        RUN_TRY(c, kj_memcpy_htod(c->rt, r->pristine, host, r->bytes));
    }
    double ms;
    RUN_TRY(c, reduce_timed(c, &ms)); /* compiles or loads the kernels: not timed */
    r->first = r->report;
    return EXIT_OK;
}

static int reduce_check(run_ctx *c) {
    nested_run *r = (nested_run *)c;
    r->want = kjtest_result_as_double(r->type, r->expected);
    r->have = kjtest_result_as_double(r->type, r->got);
    /* the bound of the tree this run built: a block's pairwise tree, then the fold of the blocks' sums */
    kj_reduce_report tree = {.entry = r->first.entry, .block_size = r->first.block[0], .grid = r->first.grid[0]};
    r->tolerance = kjtest_reduce_tolerance(KJ_OP_SUM, r->type, (size_t)r->n, r->want, r->abs_sum, &tree);
    r->exact = memcmp(r->expected, r->got, kj_result_size(r->type)) == 0;
    r->error = fabs(r->have - r->want);
    r->unwritten = kjtest_reduce_unwritten(r->type, r->got, r->poison);
    r->ok = !r->unwritten && (r->exact || r->error <= r->tolerance);
    if (r->unwritten)
        snprintf(c->wrong, sizeof c->wrong,
                 "the GPU sum was never written: the last run left the poison put there "
                 "before it");
    else if (!r->ok)
        snprintf(c->wrong, sizeof c->wrong, "the GPU sum %.17g differs from the CPU reference %.17g by more than %.3g",
                 r->have, r->want, r->tolerance);
    else if (r->report.device_launches != r->report.expected_launches)
        snprintf(c->wrong, sizeof c->wrong, "the device made %llu launches; the variant makes %llu",
                 (unsigned long long)r->report.device_launches, (unsigned long long)r->report.expected_launches);
    return EXIT_OK;
}

static void reduce_json(run_ctx *c) {
    nested_run *r = (nested_run *)c;
    json_fields("variant=%s entry=%s type=%s n=%" PRIu64 " seed=%" PRIu64 " block_size=%" PRIu64 " grid=%u levels=%u "
                "origin=%s sum=%g reference=%g abs_error=%g ok?=%d",
                kj_nested_variant_name(r->options.variant), r->first.entry, kj_type_name(r->type), r->n, c->seed,
                r->block, r->first.grid[0], r->first.levels, kj_origin_name(r->first.origin), r->have, r->want,
                r->error, r->ok);
    run_json_time(c);
    json_fields(
        "device_launches=%" PRIu64 " expected_launches=%" PRIu64 " pending_launches=%" PRIu64 " pending_limit=%" PRIu64,
        r->report.device_launches, r->report.expected_launches, r->report.pending_launches, r->report.pending_limit);
}

static void reduce_text(run_ctx *c) {
    nested_run *r = (nested_run *)c;
    printf("nested-reduce %s, sum of %llu %s (seed %llu)\n", kj_nested_variant_name(r->options.variant),
           (unsigned long long)r->n, kj_type_name(r->type), (unsigned long long)c->seed);
    printf("  kernel      %s, %u blocks of %u threads, %u levels of grids (%s)\n", r->first.entry, r->first.grid[0],
           r->first.block[0], r->first.levels, cli_origin_text(r->first.origin));
    printf("  sum         %.17g\n  reference   %.17g (CPU)\n", r->have, r->want);
    if (r->exact) printf("  error       0 ok\n");
    else printf("  error       %.3g (tolerance %.3g) %s\n", r->error, r->tolerance, r->ok ? "ok" : "WRONG");
    run_text_time(c, "GPU: the launch tree and the final fold");
    printf("  launches    %llu device-side (expected %llu), pending-launch limit %llu (asked %llu)\n",
           (unsigned long long)r->report.device_launches, (unsigned long long)r->report.expected_launches,
           (unsigned long long)r->report.pending_limit, (unsigned long long)r->report.pending_launches);
}

static const run_family nested_reduce = {.kernel = "nested",
                                         .help = reduce_help,
                                         .seeded = 1,
                                         .max_repeat = 100000,
                                         .options = "variant=v: n=n: block=b: type=t: pending=p:",
                                         .option = reduce_option,
                                         .prepare = reduce_prepare,
                                         .setup = reduce_setup,
                                         .timed = reduce_timed,
                                         .check = reduce_check,
                                         .json = reduce_json,
                                         .text = reduce_text};

int run_nested_reduce(int argc, char **argv) {
    nested_run r = {.run.repeat = 10,
                    .options = {.size = sizeof(kj_nested_options), .variant = KJ_NESTED_SYNC, .count_launches = 1},
                    .report = KJ_DP_REPORT_INIT,
                    .type = KJ_TYPE_I32,
                    .n = 1ull << 20,
                    .block = 512};
    return run_main(&nested_reduce, &r.run, argc, argv);
}

/* ---- nested-hello ----------------------------------------------------------------------------- */

static void hello_help(void) {
    printf("usage: kernjit run nested-hello [--block B] [--grid G] [--json]\n"
           "\n"
           "The nested hello world: G blocks (default 1) of B threads (a power of two up to\n"
           "1024, default 8) print \"Recursion=0: Hello World from thread T block B\"; thread\n"
           "0 of each block launches one block of half the threads one level deeper (tail\n"
           "launch), down to one thread. Prints the tree (G x (2B - 1) lines, at most 8192),\n"
           "then the device-side launches. --json puts the printed lines in the document\n"
           "(\"device_output\").\n");
}

typedef struct hello_run {
    run_ctx run;
    uint64_t block, grid;
    kj_dp_report report;
    cli_capture printed; /* under --json: the device's lines, for the document */
} hello_run;

static int hello_option(run_ctx *c, int opt, char *arg) {
    hello_run *h = (hello_run *)c;
    if (opt == 'b') return cli_pow2_arg(c->cmd, "--block", arg, 1, 1024, &h->block);
    return cli_count_arg(c->cmd, "--grid", arg, 1, 8192, &h->grid);
}

static int hello_prepare(run_ctx *c) {
    hello_run *h = (hello_run *)c;
    uint64_t lines = h->grid * (2 * h->block - 1);
    if (lines > 8192)
        return cli_usage(c->cmd,
                         "--grid %llu --block %llu prints %llu lines; at most 8192 fit the device's printf buffer",
                         (unsigned long long)h->grid, (unsigned long long)h->block, (unsigned long long)lines);
    return EXIT_OK;
}

static int hello_setup(run_ctx *c) {
    hello_run *h = (hello_run *)c;
    if (!c->json)
        printf("nested-hello: %llu block%s of %llu threads\n", (unsigned long long)h->grid, h->grid == 1 ? "" : "s",
               (unsigned long long)h->block);
    fflush(stdout); /* the device's lines are written by the driver, after ours */
    cli_capture_begin(&h->printed);
    kj_status s = kj_nested_hello(c->rt, (unsigned)h->grid, (unsigned)h->block, &h->report);
    cli_capture_end(&h->printed);
    fflush(stdout);
    RUN_TRY(c, s);
    if (h->report.device_launches != h->report.expected_launches)
        snprintf(c->wrong, sizeof c->wrong, "the device made %llu launches; the tree has %llu",
                 (unsigned long long)h->report.device_launches, (unsigned long long)h->report.expected_launches);
    return EXIT_OK;
}

static void hello_text(run_ctx *c) {
    hello_run *h = (hello_run *)c;
    printf("%llu device-side launches (expected %llu), %u levels of grids\n",
           (unsigned long long)h->report.device_launches, (unsigned long long)h->report.expected_launches,
           h->report.levels);
}

static void hello_json(run_ctx *c) {
    hello_run *h = (hello_run *)c;
    json_fields("grid=%" PRIu64 " block_size=%" PRIu64 " levels=%u device_launches=%" PRIu64
                " expected_launches=%" PRIu64,
                h->grid, h->block, h->report.levels, h->report.device_launches, h->report.expected_launches);
    json_captured("device_output", &h->printed);
}

static const run_family nested_hello = {.kernel = "nested",
                                        .help = hello_help,
                                        .options = "block=b: grid=g:",
                                        .option = hello_option,
                                        .prepare = hello_prepare,
                                        .setup = hello_setup,
                                        .json = hello_json,
                                        .text = hello_text};

int run_nested_hello(int argc, char **argv) {
    hello_run h = {.block = 8, .grid = 1, .report = KJ_DP_REPORT_INIT, .printed = {-1, NULL}};
    int rc = run_main(&nested_hello, &h.run, argc, argv);
    cli_capture_free(&h.printed);
    return rc;
}
