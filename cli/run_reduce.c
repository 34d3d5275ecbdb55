/* kernjit run reduce: one reduction on seeded random input, checked against the CPU and timed. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "run.h"
#include "run_harness.h"
#include "kjtest.h"

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

typedef struct reduce_run {
    run_ctx run;
    kj_op op;
    kj_type type;
    uint64_t n;
    size_t bytes;
    kj_reduce_options options;
    kj_reduce_report report, first;
    kj_devptr input, result;
    unsigned char expected[8], got[8];
    double abs_sum, want, have, tolerance, error;
    int ok;
} reduce_run;

static int option(run_ctx *c, int opt, char *arg) {
    reduce_run *r = (reduce_run *)c;
    switch (opt) {
    case 'o': return cli_parsed(c->cmd, kj_op_parse(arg, &r->op));
    case 't': return cli_parsed(c->cmd, kj_type_parse(arg, &r->type));
    case 'n': return cli_count_arg(c->cmd, "--n", arg, 0, 1ull << 40, &r->n);
    }
    r->options.entry = arg; /* 'e' */
    return EXIT_OK;
}

static int prepare(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    size_t esize = kj_type_size(r->type);
    if (r->n > SIZE_MAX / esize)
        return cli_usage(c->cmd, "--n %llu: the byte count overflows", (unsigned long long)r->n);
    r->bytes = (size_t)r->n * esize;
    c->device_bytes = r->bytes;
    c->bytes = (double)r->bytes; /* read */
    snprintf(c->what, sizeof c->what, "--n %llu", (unsigned long long)r->n);
    return EXIT_OK;
}

static int setup(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    /* the kernel compiles (or loads) while the input is made */
    RUN_TRY(c, kj_reduce_prefetch(c->rt, r->op, r->type, (size_t)r->n, &r->options));
    void *host = run_random(c, r->type, r->n, c->seed);
    if (!host) return EXIT_FAILURE_;
    kj_reduce_reference(r->op, r->type, host, (size_t)r->n, r->expected, &r->abs_sum);
    RUN_TRY(c, run_device(c, r->bytes, &r->input));
    RUN_TRY(c, kj_memcpy_htod(c->rt, r->input, host, r->bytes));
    RUN_TRY(c, run_device(c, 16, &r->result));
    /* The first call compiles or loads the kernel; its report says which. */
    r->options.report = &r->report;
    memset(r->got, 0xA5, sizeof r->got); /* poisoned: a result never written shows */
    RUN_TRY(c, kj_reduce(c->rt, r->op, r->type, r->input, (size_t)r->n, r->got, &r->options));
    r->first = r->report;
    return EXIT_OK;
}

static kj_status launch(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    return kj_reduce_async(c->rt, r->op, r->type, r->input, (size_t)r->n, r->result, &r->options);
}

static int check(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    r->want = kj_result_as_double(r->type, r->expected);
    r->have = kj_result_as_double(r->type, r->got);
    r->tolerance = kj_reduce_tolerance(r->op, r->type, (size_t)r->n, r->want, r->abs_sum, &r->first);
    r->error = fabs(r->have - r->want);
    r->ok = memcmp(r->expected, r->got, kj_result_size(r->type)) == 0 || (isnan(r->want) && isnan(r->have)) ||
            r->error <= r->tolerance;
    if (!r->ok)
        snprintf(c->wrong, sizeof c->wrong,
                 "the GPU result %.17g differs from the CPU reference %.17g by more than %.3g", r->have, r->want,
                 r->tolerance);
    return EXIT_OK;
}

static void json(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    json_fields("op=%s type=%s n=%" PRIu64 " seed=%" PRIu64 " entry=%s block_size=%u coarse_factor=%u grid=%u "
                "config_from=%s origin=%s result=%g reference=%g abs_error=%g tolerance=%g ok?=%d",
                kj_op_name(r->op), kj_type_name(r->type), r->n, c->seed, r->first.entry, r->first.block_size,
                r->first.coarse_factor, r->first.grid, r->first.config_from, kj_origin_name(r->first.origin), r->have,
                r->want, r->error, r->tolerance, r->ok);
    run_json_time(c);
}

static void text(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    printf("reduce %s %s, n = %llu (seed %llu)\n", kj_op_name(r->op), kj_type_name(r->type), (unsigned long long)r->n,
           (unsigned long long)c->seed);
    printf("  entry       %s, BLOCK_SIZE=%u COARSE_FACTOR=%u, %u blocks (%s configuration)\n", r->first.entry,
           r->first.block_size, r->first.coarse_factor, r->first.grid, r->first.config_from);
    printf("  kernel      %s\n", cli_origin_text(r->first.origin));
    printf("  result      %.17g\n  reference   %.17g (CPU)\n", r->have, r->want);
    printf("  error       %.3g (tolerance %.3g) %s\n", r->error, r->tolerance, r->ok ? "ok" : "WRONG");
    run_text_time(c, NULL);
}

static const run_family reduce = {
    .kernel = "reduce", .help = help, .seeded = 1, .reports_gbps = 1, .max_repeat = 100000,
    .options = "op=o: type=t: n=n: entry=e:",
    .macros = &(const run_macros){{"BLOCK_SIZE", "COARSE_FACTOR"},
                                  {offsetof(reduce_run, options.block_size),
                                   offsetof(reduce_run, options.coarse_factor)},
                                  1u << 20, "a positive integer",
                                  "use --op and --type for the operator and type"},
    .option = option, .prepare = prepare, .setup = setup, .launch = launch, .check = check, .json = json, .text = text};

int run_reduce(int argc, char **argv) {
    reduce_run r = {.run.repeat = 20, .op = KJ_OP_SUM, .type = KJ_TYPE_F32, .n = 64ull << 20};
    return run_main(&reduce, &r.run, argc, argv);
}
