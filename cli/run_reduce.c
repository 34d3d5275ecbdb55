/* kernjit run reduce: one reduction on seeded random input, checked against the CPU and timed. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "devices.h"
#include "run.h"
#include "run_harness.h"
#include "kjtest.h"

static void help(void) {
    printf("usage: kernjit run reduce [--op sum|max|min|prod]\n"
           "           [--type i32|u32|i64|f16|bf16|f32|f64] [--n N] [--entry E]\n"
           "           [-D BLOCK_SIZE=B] [-D COARSE_FACTOR=C] [-D WAVES=W] [--seed S]\n"
           "           [--repeat R] [--devices all|I,J,...] [--json]\n"
           "\n"
           "Reduces N seeded random values (default sum, f32, 64M) on the GPU, compares with\n"
           "the CPU reference, and prints the result, the error, the median time of R timed\n"
           "runs (CUDA events, after a warm-up), GB/s of input read, the configuration and\n"
           "whether the kernel came from the cache. N takes suffixes: 1000003, 64M, 1G,\n"
           "2^28. The input is fresh each run and its seed printed; --seed S replays it.\n"
           "Exit 1 when the result is wrong. With --devices, the N values are split evenly\n"
           "over the devices listed (kj_reduce_devices: every device reduces its part with\n"
           "the default entry at once, and the host combines their results in the order\n"
           "listed, bit-identical run to run); the time is that of the whole call, from its\n"
           "start on the first device to the combined result on the host.\n" CLI_DEVICES_HELP);
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
    unsigned char expected[8], got[8], poison[8]; /* poison: in every result before it is written */
    double abs_sum, want, have, tolerance, error;
    int ok, unwritten;
    /* --devices: part i (counts[i] elements at parts[i]) on rts[i]; rts[0] is the harness's runtime */
    cli_devices devices;
    kj_runtime *rts[CLI_MAX_DEVICES];
    kj_devptr parts[CLI_MAX_DEVICES];
    size_t counts[CLI_MAX_DEVICES];
    kj_reduce_report reports[CLI_MAX_DEVICES];
    unsigned char last[8]; /* the last timed run's result: the same bits as the first's */
} reduce_run;

static int option(run_ctx *c, int opt, char *arg) {
    reduce_run *r = (reduce_run *)c;
    switch (opt) {
    case 'o': return cli_parsed(c->cmd, kj_op_parse(arg, &r->op));
    case 't': return cli_parsed(c->cmd, kj_type_parse(arg, &r->type));
    case 'n': return cli_count_arg(c->cmd, "--n", arg, 0, 1ull << 40, &r->n);
    case 'd': return cli_devices_arg(c->cmd, arg, &r->devices);
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
    int k = r->devices.count, rc = cli_devices_check(c->cmd, &r->devices);
    if (rc != EXIT_OK || !k) return rc;
    if (r->options.entry || r->options.block_size || r->options.coarse_factor)
        return cli_usage(c->cmd, "--entry and -D do not go with --devices: each device runs the default entry "
                                 "with its tuned or default configuration");
    for (int i = 0; i < k; i++) r->counts[i] = (size_t)(r->n / (unsigned)k + ((unsigned)i < r->n % (unsigned)k));
    c->device_bytes = r->counts[0] * esize; /* the largest part; the other devices are checked in setup */
    snprintf(c->what, sizeof c->what, "--n %llu over %d devices", (unsigned long long)r->n, k);
    return EXIT_OK;
}

/* --devices: a runtime and the part of the input on each device, each device's first kj_reduce of
 * its part (compiling or loading the kernel, its report kept), then the first kj_reduce_devices. */
static int setup_devices(run_ctx *c, reduce_run *r, const unsigned char *host) {
    size_t esize = kj_type_size(r->type), at = 0;
    for (int i = 0; i < r->devices.count; i++) {
        if (i) RUN_TRY(c, cli_device_runtime(r->devices.ordinals[i], &r->rts[i]));
        int rc = i ? cli_check_device_memory(r->rts[i], c->cmd, c->what, r->counts[i] * esize) : EXIT_OK;
        if (rc != EXIT_OK) return rc;
        RUN_TRY(c, kj_reduce_prefetch(r->rts[i], r->op, r->type, r->counts[i], NULL));
    }
    for (int i = 0; i < r->devices.count; i++) {
        RUN_TRY(c, kj_mem_alloc(r->rts[i], r->counts[i] * esize + 1, &r->parts[i]));
        RUN_TRY(c, kj_memcpy_htod(r->rts[i], r->parts[i], host + at * esize, r->counts[i] * esize));
        at += r->counts[i];
        r->reports[i] = (kj_reduce_report)KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &r->reports[i]};
        unsigned char partial[8];
        RUN_TRY(c, kj_reduce(r->rts[i], r->op, r->type, r->parts[i], r->counts[i], partial, &o));
    }
    r->first = r->reports[0];
    memcpy(r->got, r->poison, sizeof r->got);
    RUN_TRY(c, kj_reduce_devices(r->rts, r->parts, r->counts, (size_t)r->devices.count, r->op, r->type, r->got, NULL));
    memcpy(r->last, r->poison, sizeof r->last); /* each timed run writes it */
    return EXIT_OK;
}

static void teardown(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    for (int i = 0; i < r->devices.count; i++) {
        if (r->rts[i]) kj_mem_free(r->rts[i], r->parts[i]);
        if (i) kj_runtime_destroy(r->rts[i]);
    }
}

static int setup(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    /* the kernel compiles (or loads) while the input is made */
    if (!r->devices.count) RUN_TRY(c, kj_reduce_prefetch(c->rt, r->op, r->type, (size_t)r->n, &r->options));
    void *host = run_host(c, r->bytes);
    if (!host) return EXIT_FAILURE_;
    kjtest_reduce_input(r->op, r->type, host, (size_t)r->n, c->seed);
    kjtest_reduce_reference(r->op, r->type, host, (size_t)r->n, r->expected, &r->abs_sum);
    kjtest_reduce_poison(r->type, r->expected, r->poison);
    r->rts[0] = c->rt;
    if (r->devices.count) return setup_devices(c, r, host);
    RUN_TRY(c, run_device(c, r->bytes, &r->input));
    RUN_TRY(c, kj_memcpy_htod(c->rt, r->input, host, r->bytes));
    RUN_TRY(c, run_device(c, 16, &r->result));
    /* The first call compiles or loads the kernel; its report says which. Its result goes where the
     * timed runs' go, poisoned before each: a result kj_reduce copies back from its own buffer would
     * be whatever that held, were the kernel never to run. */
    size_t rs = kj_result_size(r->type);
    r->options.report = &r->report;
    RUN_TRY(c, kj_memcpy_htod(c->rt, r->result, r->poison, rs));
    RUN_TRY(c, kj_reduce_async(c->rt, r->op, r->type, r->input, (size_t)r->n, r->result, &r->options));
    RUN_TRY(c, kj_synchronize(c->rt));
    RUN_TRY(c, kj_memcpy_dtoh(c->rt, r->got, r->result, rs));
    r->first = r->report;
    RUN_TRY(c, kj_memcpy_htod(c->rt, r->result, r->poison, rs));
    return EXIT_OK;
}

static kj_status launch(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    if (r->devices.count)
        return kj_reduce_devices(r->rts, r->parts, r->counts, (size_t)r->devices.count, r->op, r->type, r->last, NULL);
    return kj_reduce_async(c->rt, r->op, r->type, r->input, (size_t)r->n, r->result, &r->options);
}

static int check(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    /* the last timed run's result: kj_reduce_devices wrote it on the host; one device's is on the device */
    if (!r->devices.count) {
        RUN_TRY(c, kj_synchronize(c->rt));
        RUN_TRY(c, kj_memcpy_dtoh(c->rt, r->last, r->result, kj_result_size(r->type)));
    }
    r->want = kjtest_result_as_double(r->type, r->expected);
    r->have = kjtest_result_as_double(r->type, r->got);
    /* over devices, the bound of the part with the longest chains (the host's combine, in long double
     * and rounded once, is within the bound's slack) */
    r->tolerance = r->devices.count
                       ? 0
                       : kjtest_reduce_tolerance(r->op, r->type, (size_t)r->n, r->want, r->abs_sum, &r->first);
    for (int i = 0; i < r->devices.count; i++) {
        double part = kjtest_reduce_tolerance(r->op, r->type, r->counts[i], r->want, r->abs_sum, &r->reports[i]);
        if (part > r->tolerance) r->tolerance = part;
    }
    r->error = fabs(r->have - r->want);
    r->unwritten = kjtest_reduce_unwritten(r->type, r->got, r->poison) ||
                   kjtest_reduce_unwritten(r->type, r->last, r->poison);
    r->ok = !r->unwritten && (memcmp(r->expected, r->got, kj_result_size(r->type)) == 0 ||
                              (isnan(r->want) && isnan(r->have)) || r->error <= r->tolerance);
    if (r->unwritten)
        snprintf(c->wrong, sizeof c->wrong, "the GPU result was never written: %s",
                 kjtest_reduce_unwritten(r->type, r->got, r->poison)
                     ? "the first run left the poison put there before it"
                     : "the timed runs left the poison put there before them");
    else if (r->ok && memcmp(r->got, r->last, kj_result_size(r->type)) != 0)
        snprintf(c->wrong, sizeof c->wrong,
                 "the result of the last run, %.17g, differs from the first's, %.17g: "
                 "not bit-identical from run to run",
                 kjtest_result_as_double(r->type, r->last), r->have);
    else if (!r->ok)
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
                r->first.coarse_factor, r->first.grid, kj_config_from_name(r->first.config_from),
                kj_origin_name(r->first.origin), r->have, r->want, r->error, r->tolerance, r->ok);
    if (r->devices.count) {
        json_begin_array("devices");
        for (int i = 0; i < r->devices.count; i++) {
            kj_device_info d = KJ_DEVICE_INFO_INIT;
            kj_runtime_device(r->rts[i], &d);
            json_object_in(NULL);
            json_fields("ordinal=%d device=%s n=%zu origin=%s", r->devices.ordinals[i], d.name, r->counts[i],
                        kj_origin_name(r->reports[i].origin));
            json_end_object();
        }
        json_end_array();
    }
    run_json_time(c);
}

static void text(run_ctx *c) {
    reduce_run *r = (reduce_run *)c;
    printf("reduce %s %s, n = %llu (seed %llu)\n", kj_op_name(r->op), kj_type_name(r->type), (unsigned long long)r->n,
           (unsigned long long)c->seed);
    for (int i = 0; i < r->devices.count; i++) {
        kj_device_info d = KJ_DEVICE_INFO_INIT;
        kj_runtime_device(r->rts[i], &d);
        printf("  %-11s %d (%s): %zu elements, kernel %s\n", i ? "" : "devices", r->devices.ordinals[i], d.name,
               r->counts[i], cli_origin_text(r->reports[i].origin));
    }
    printf("  entry       %s, BLOCK_SIZE=%u COARSE_FACTOR=%u, %u blocks (%s configuration)\n", r->first.entry,
           r->first.block_size, r->first.coarse_factor, r->first.grid, kj_config_from_name(r->first.config_from));
    if (!r->devices.count) printf("  kernel      %s\n", cli_origin_text(r->first.origin));
    printf("  result      %.17g%s\n  reference   %.17g (CPU)\n", r->have,
           r->devices.count ? " (the devices' results combined on the host, in the order listed)" : "", r->want);
    if (r->unwritten) printf("  error       the result was never written: WRONG\n");
    else printf("  error       %.3g (tolerance %.3g) %s\n", r->error, r->tolerance, r->ok ? "ok" : "WRONG");
    run_text_time(c, r->devices.count ? "every device, to the combined result" : NULL);
}

static const run_family reduce = {
    .kernel = "reduce",
    .help = help,
    .seeded = 1,
    .reports_gbps = 1,
    .max_repeat = 100000,
    .options = "op=o: type=t: n=n: entry=e: devices=d:",
    .macros = &(const run_macros){{"BLOCK_SIZE", "COARSE_FACTOR", "WAVES"},
                                  {offsetof(reduce_run, options.block_size),
                                   offsetof(reduce_run, options.coarse_factor), offsetof(reduce_run, options.waves)},
                                  1u << 20,
                                  "a positive integer",
                                  "use --op and --type for the operator and type"},
    .option = option,
    .prepare = prepare,
    .setup = setup,
    .launch = launch,
    .check = check,
    .json = json,
    .text = text,
    .teardown = teardown};

int run_reduce(int argc, char **argv) {
    reduce_run r = {.run.repeat = 20,
                    .op = KJ_OP_SUM,
                    .type = KJ_TYPE_F32,
                    .n = 64ull << 20,
                    .options = KJ_REDUCE_OPTIONS_INIT,
                    .report = KJ_REDUCE_REPORT_INIT};
    return run_main(&reduce, &r.run, argc, argv);
}
