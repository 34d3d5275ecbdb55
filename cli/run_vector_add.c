/* kernjit run vector-add: c = a + b on fresh random input, checked against the CPU and timed. */
#include <inttypes.h>
#include <stddef.h>

#include "check_util.h"
#include "run.h"
#include "run_harness.h"

static void help(void) {
    printf("usage: kernjit run vector-add [--n N] [--type f32|f64] [-D BLOCK_SIZE=B]\n"
           "           [-D UNROLL=U] [--offset K] [--seed S] [--repeat R] [--json]\n"
           "\n"
           "Adds two vectors of N seeded random values (default 64M, f32) on the GPU after\n"
           "poisoning the output, compares every element with the CPU's sum (the bits must\n"
           "be equal), and prints the median time of R timed runs (CUDA events, after the\n"
           "checked run), GB/s (two vectors read, one written), the entry and configuration\n"
           "and whether the kernel came from the cache.\n"
           "\n"
           "  --offset K  start the three vectors K elements into their allocations (K = 1\n"
           "              takes the entry for pointers not aligned to 16 bytes)\n"
           "N takes suffixes: 1000003, 64M, 2^24. Exit 1 when the result is wrong.\n");
}

typedef struct vector_add_run {
    run_ctx run;
    uint64_t n, offset;
    kj_type type;
    size_t bytes, alloc;
    kj_vector_add_options options;
    kj_vector_add_report first;
    kj_devptr a, b, c; /* offset elements into their allocations */
    size_t wrong;      /* elements that differ from the CPU's sum */
} vector_add_run;

static int option(run_ctx *c, int opt, char *arg) {
    vector_add_run *v = (vector_add_run *)c;
    switch (opt) {
    case 'n': return cli_count_arg(c->cmd, "--n", arg, 1, 1ull << 40, &v->n);
    case 'o': return cli_count_arg(c->cmd, "--offset", arg, 0, 1024, &v->offset);
    }
    if (kj_type_parse(arg, &v->type) != KJ_OK) return cli_usage(c->cmd, "%s", kj_last_error()); /* 't' */
    if (v->type != KJ_TYPE_F32 && v->type != KJ_TYPE_F64)
        return cli_usage(c->cmd, "--type %s: vector-add takes f32 or f64", arg);
    return EXIT_OK;
}

static int prepare(run_ctx *c) {
    vector_add_run *v = (vector_add_run *)c;
    size_t esize = kj_type_size(v->type);
    v->bytes = (size_t)v->n * esize;
    v->alloc = (size_t)(v->n + v->offset) * esize;
    c->device_bytes = 3 * v->alloc;
    c->bytes = 3.0 * v->bytes;
    snprintf(c->what, sizeof c->what, "--n %llu", (unsigned long long)v->n);
    return EXIT_OK;
}

static kj_status launch(run_ctx *c) {
    vector_add_run *v = (vector_add_run *)c;
    return kj_vector_add(c->rt, v->type, v->a, v->b, v->c, (size_t)v->n, &v->options);
}

/* The inputs, the poisoned output and the first run, checked in full on the CPU. */
static int setup(run_ctx *c) {
    vector_add_run *v = (vector_add_run *)c;
    size_t off = (size_t)v->offset * kj_type_size(v->type);
    void *a = run_random(c, v->type, v->n, c->seed), *b = run_random(c, v->type, v->n, c->seed + 1);
    void *got = run_host(c, v->bytes);
    if (!a || !b || !got) return EXIT_FAILURE_;
    RUN_TRY(c, run_device(c, v->alloc, &v->a));
    RUN_TRY(c, run_device(c, v->alloc, &v->b));
    RUN_TRY(c, run_device(c, v->alloc, &v->c));
    RUN_TRY(c, kj_memset_u8(c->rt, v->c, 0xA5, v->alloc));
    v->a += off;
    v->b += off;
    v->c += off;
    RUN_TRY(c, kj_memcpy_htod(c->rt, v->a, a, v->bytes));
    RUN_TRY(c, kj_memcpy_htod(c->rt, v->b, b, v->bytes));
    v->options.report = &v->first;
    RUN_TRY(c, launch(c));
    v->options.report = NULL;
    RUN_TRY(c, kj_synchronize(c->rt));
    RUN_TRY(c, kj_memcpy_dtoh(c->rt, got, v->c, v->bytes));
    size_t bad = 0;
    v->wrong = check_vector_add(v->type, a, b, got, (size_t)v->n, 0, 0, &bad);
    if (v->wrong) {
        char first[64];
        snprintf(first, sizeof first, "at index %zu", bad);
        check_wrong_text(c->wrong, sizeof c->wrong, got, (size_t)v->n, kj_type_size(v->type), 0xA5, v->wrong,
                         "the CPU's a + b", first);
    }
    return EXIT_OK;
}

static void json(run_ctx *c) {
    vector_add_run *v = (vector_add_run *)c;
    json_fields("type=%s n=%" PRIu64 " offset=%" PRIu64 " seed=%" PRIu64 " entry=%s block_size=%u unroll=%u grid=%u "
                "origin=%s config_from=%s wrong=%zu ok?=%d",
                kj_type_name(v->type), v->n, v->offset, c->seed, v->first.entry, v->first.block_size, v->first.unroll,
                v->first.grid, kj_origin_name(v->first.origin), kj_config_from_name(v->first.config_from), v->wrong,
                v->wrong == 0);
    run_json_time(c);
}

static void text(run_ctx *c) {
    vector_add_run *v = (vector_add_run *)c;
    printf("vector add %s, n = %llu (seed %llu%s)\n", kj_type_name(v->type), (unsigned long long)v->n,
           (unsigned long long)c->seed, v->offset ? ", offset into the allocations" : "");
    printf("  entry       %s, BLOCK_SIZE=%u UNROLL=%u (%s), %u blocks\n", v->first.entry, v->first.block_size,
           v->first.unroll, kj_config_from_name(v->first.config_from), v->first.grid);
    run_text_checked(c, v->first.origin, !v->wrong, "every element against the CPU's a + b, bit for bit",
                     "2 reads + 1 write");
}

static const run_family vector_add = {
    .kernel = "vector_add",
    .help = help,
    .seeded = 1,
    .reports_gbps = 1,
    .max_repeat = 100000,
    .options = "n=n: type=t: offset=o:",
    .macros = &(const run_macros){{"BLOCK_SIZE", "UNROLL", "WAVES"},
                                  {offsetof(vector_add_run, options.block_size),
                                   offsetof(vector_add_run, options.unroll), offsetof(vector_add_run, options.waves)},
                                  1024,
                                  "an integer from 1 to 1024",
                                  "use --type for the element type"},
    .option = option,
    .prepare = prepare,
    .setup = setup,
    .launch = launch,
    .json = json,
    .text = text};

int run_vector_add(int argc, char **argv) {
    vector_add_run v = {.run.repeat = 20,
                        .n = 64ull << 20,
                        .type = KJ_TYPE_F32,
                        .options = KJ_VECTOR_ADD_OPTIONS_INIT,
                        .first = KJ_VECTOR_ADD_REPORT_INIT};
    return run_main(&vector_add, &v.run, argc, argv);
}
