/* kernjit run transpose: one transpose of fresh random input, checked against the CPU and timed. */
#include <inttypes.h>
#include <stddef.h>

#include "check_util.h"
#include "run.h"
#include "run_harness.h"

#define MAX_SIDE 2147483647ull

static void help(void) {
    printf("usage: kernjit run transpose [--rows R] [--cols C] [--variant V] [--type T]\n"
           "           [-D TILE_DIM=N] [-D BLOCK_ROWS=N] [-D GROUP=G] [--seed S]\n"
           "           [--repeat N] [--json]\n"
           "\n"
           "Transposes an R x C row-major matrix (default 8192 x 8192, f32) of seeded random\n"
           "bits on the GPU into C x R, after poisoning the output, compares every element\n"
           "with the input on the CPU, and prints the median time of N timed runs (CUDA\n"
           "events, after the checked run), GB/s (bytes read + written), the configuration\n"
           "and whether the kernel came from the cache.\n"
           "\n"
           "  --variant   padded (default: shared-memory tile padded against bank conflicts;\n"
           "              -D TILE_DIM, -D BLOCK_ROWS, -D GROUP), read-rows, read-cols,\n"
           "              shared (32x8, transposed into shared memory), l1-8x32, l1-4x32\n"
           "              (no shared memory: thread-block shapes and L1), vec (no shared\n"
           "              memory: 4x4 blocks transposed in registers, 16-byte accesses)\n"
           "  --type      i32 u32 i64 f16 bf16 f32 f64: only the element size (2, 4,\n"
           "              8 bytes) matters\n"
           "  --seed      replays an input (the default is fresh each run and printed)\n"
           "R and C take suffixes: 4097, 8K, 2^13. Exit 1 when the result is wrong.\n");
}

typedef struct transpose_run {
    run_ctx run;
    uint64_t rows, cols;
    kj_type type;
    size_t esize, bytes;
    kj_transpose_options options;
    kj_transpose_report first;
    kj_devptr din, dout;
    size_t wrong; /* elements that differ from the CPU's transpose */
} transpose_run;

static int option(run_ctx *c, int opt, char *arg) {
    transpose_run *t = (transpose_run *)c;
    switch (opt) {
    case 'V': return cli_parsed(c->cmd, kj_transpose_variant_parse(arg, &t->options.variant));
    case 't': return cli_parsed(c->cmd, kj_type_parse(arg, &t->type));
    }
    return cli_count_arg(c->cmd, opt == 'R' ? "--rows" : "--cols", arg, 1, MAX_SIDE, opt == 'R' ? &t->rows : &t->cols);
}

static int prepare(run_ctx *c) {
    transpose_run *t = (transpose_run *)c;
    if (t->options.variant != KJ_TRANSPOSE_PADDED && (t->options.tile_dim || t->options.block_rows || t->options.group))
        return cli_usage(c->cmd,
                         "-D TILE_DIM, -D BLOCK_ROWS and -D GROUP shape the padded variant; %s has a fixed tile",
                         kj_transpose_variant_name(t->options.variant));
    t->esize = kj_type_size(t->type);
    if (t->rows * t->cols > SIZE_MAX / 2 / t->esize)
        return cli_usage(c->cmd, "%llu x %llu: the byte count overflows", (unsigned long long)t->rows,
                         (unsigned long long)t->cols);
    t->bytes = (size_t)(t->rows * t->cols) * t->esize;
    c->device_bytes = 2 * t->bytes;
    c->bytes = 2.0 * t->bytes;
    snprintf(c->what, sizeof c->what, "%llu x %llu", (unsigned long long)t->rows, (unsigned long long)t->cols);
    return EXIT_OK;
}

static kj_status launch(run_ctx *c) {
    transpose_run *t = (transpose_run *)c;
    return kj_transpose(c->rt, t->type, t->din, t->dout, (size_t)t->rows, (size_t)t->cols, &t->options);
}

/* The input, the poisoned output and the first run, checked in full on the CPU. */
static int setup(run_ctx *c) {
    transpose_run *t = (transpose_run *)c;
    void *in = run_host(c, t->bytes), *got = run_host(c, t->bytes);
    if (!in || !got) return EXIT_FAILURE_;
    check_fill_bits(in, t->bytes, c->seed);
    RUN_TRY(c, run_device(c, t->bytes, &t->din));
    RUN_TRY(c, run_device(c, t->bytes, &t->dout));
    RUN_TRY(c, kj_memcpy_htod(c->rt, t->din, in, t->bytes));
    RUN_TRY(c, kj_memset_u8(c->rt, t->dout, 0xA5, t->bytes));
    t->options.report = &t->first;
    RUN_TRY(c, launch(c));
    t->options.report = NULL;
    RUN_TRY(c, kj_synchronize(c->rt));
    RUN_TRY(c, kj_memcpy_dtoh(c->rt, got, t->dout, t->bytes));
    size_t bad_r = 0, bad_c = 0;
    t->wrong = check_transpose(in, got, (size_t)t->rows, (size_t)t->cols, t->esize, 0, 0, &bad_r, &bad_c);
    if (t->wrong) {
        char first[64];
        snprintf(first, sizeof first, "at input row %zu, column %zu", bad_r, bad_c);
        check_wrong_text(c->wrong, sizeof c->wrong, got, (size_t)(t->rows * t->cols), t->esize, 0xA5, t->wrong,
                         "the CPU transpose", first);
    }
    return EXIT_OK;
}

static void json(run_ctx *c) {
    transpose_run *t = (transpose_run *)c;
    const kj_transpose_report *f = &t->first;
    json_fields("variant=%s entry=%s type=%s rows=%" PRIu64 " cols=%" PRIu64 " seed=%" PRIu64 " tile_rows=%u "
                "tile_cols=%u block_x=%u block_y=%u grid=%u shared_bytes=%u origin=%s config_from=%s wrong=%zu ok?=%d",
                kj_transpose_variant_name(t->options.variant), f->entry, kj_type_name(t->type), t->rows, t->cols,
                c->seed, f->tile[0], f->tile[1], f->block[0], f->block[1], f->grid, f->shared_bytes,
                kj_origin_name(f->origin), kj_config_from_name(f->config_from), t->wrong, t->wrong == 0);
    run_json_time(c);
}

static void text(run_ctx *c) {
    transpose_run *t = (transpose_run *)c;
    printf("transpose %llu x %llu %s, variant %s (seed %llu)\n", (unsigned long long)t->rows,
           (unsigned long long)t->cols, kj_type_name(t->type), kj_transpose_variant_name(t->options.variant),
           (unsigned long long)c->seed);
    printf("  entry       %s, %ux%u tile, %ux%u threads (%s), %u blocks, %u bytes of dynamic shared memory\n",
           t->first.entry, t->first.tile[0], t->first.tile[1], t->first.block[0], t->first.block[1],
           kj_config_from_name(t->first.config_from), t->first.grid, t->first.shared_bytes);
    run_text_checked(c, t->first.origin, !t->wrong, "every element against the input, on the CPU", "read + write");
}

static const run_family transpose = {
    .kernel = "transpose",
    .help = help,
    .seeded = 1,
    .reports_gbps = 1,
    .max_repeat = 100000,
    .options = "rows=R: cols=C: variant=V: type=t:",
    .macros = &(const run_macros){{"TILE_DIM", "BLOCK_ROWS", "GROUP"},
                                  {offsetof(transpose_run, options.tile_dim),
                                   offsetof(transpose_run, options.block_rows), offsetof(transpose_run, options.group)},
                                  1024,
                                  "an integer from 1 to 1024",
                                  "use --type for the element size"},
    .option = option,
    .prepare = prepare,
    .setup = setup,
    .launch = launch,
    .json = json,
    .text = text};

int run_transpose(int argc, char **argv) {
    transpose_run t = {.run.repeat = 20,
                       .rows = 8192,
                       .cols = 8192,
                       .type = KJ_TYPE_F32,
                       .options = KJ_TRANSPOSE_OPTIONS_INIT,
                       .first = KJ_TRANSPOSE_REPORT_INIT};
    return run_main(&transpose, &t.run, argc, argv);
}
