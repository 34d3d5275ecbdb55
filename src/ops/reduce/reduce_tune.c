/* The reduction's tuning target: the variant's kernel launched as kj_reduce_async launches it
 * (kj__reduce_launch) on n seeded random elements, checked against the CPU reference.
 *
 * Filling and referencing 2^28 random elements on the CPU would take longer than timing the whole
 * 6 x 6 sweep, so the input is periodic: a random tile of TILE elements (a prime, so that no
 * power-of-two stride lines up with it) is uploaded once and repeated on the device. The reference
 * is then the tile's reduction combined q times with the reduction of the partial tile, computed by
 * the reference itself over those partial results in the accumulator type. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/reduce/reduce.h"
#include "ops/reduce/reduce_cpu.h"

#define TILE 1048573u /* the largest prime below 2^20 */

typedef struct state {
    kj_runtime *rt;
    kj_op op;
    kj_type type;
    const char *entry;
    int coarsens, single_block;
    size_t n, bytes;
    kj__tune_arrays input;
    kj_devptr out;
    unsigned char expected[8], poison[8]; /* poison: what out holds before each run (kj__reduce_poison) */
    double abs_sum;
    unsigned block, coarse, grid;  /* of the latest run: its configuration bounds the float error */
    kj_kernel *helper_of, *helper; /* the helper kernel (kj__reduce_helper) of the variant whose kernel
                                      is helper_of */
} state;

static const char *const unused_coarse[] = {"COARSE_FACTOR", "WAVES", NULL};
static const char *const unused_waves[] = {"WAVES", NULL};

/* reduce_fast alone sizes its grid by WAVES; the entries that do not coarsen ignore COARSE_FACTOR too. */
static const char *const *unused_tunables(const char *entry) {
    int coarsens = 1, single = 0;
    if (entry && strcmp(entry, "reduce_fast") == 0) return NULL;
    if (kj__reduce_entry(entry, &coarsens, &single) == 0 && !coarsens) return unused_coarse;
    return unused_waves;
}

/* The reference of n periodic elements: q whole tiles and a partial one, combined in the
 * accumulator type (f32 for f16 and bf16) by the reference itself: exact for integers and max/min, within
 * far less than the tolerance for float sums (each partial result is rounded once). The arguments
 * are checked already, so the reference cannot refuse them. */
static kj_status reference(state *st, const void *tile, size_t tile_n) {
    size_t q = st->n / tile_n, r = st->n % tile_n;
    kj_type acc = kj__reduce_acc_type(st->type);
    size_t rs = kj_result_size(st->type);
    unsigned char *parts = malloc((q + 1) * rs);
    if (!parts) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    double abs_tile = 0, abs_rest = 0;
    kj__reduce_reference(st->op, st->type, tile, tile_n, parts, &abs_tile);
    for (size_t i = 1; i < q; i++) memcpy(parts + i * rs, parts, rs);
    kj__reduce_reference(st->op, st->type, tile, r, parts + q * rs, &abs_rest);
    kj__reduce_reference(st->op, acc, parts, q + 1, st->expected, NULL);
    st->abs_sum = (double)q * abs_tile + abs_rest;
    free(parts);
    return KJ_OK;
}

/* The result poisoned, so that a variant that never writes it cannot pass. */
static kj_status poison(state *st) { return kj_memcpy_htod(st->rt, st->out, st->poison, kj_result_size(st->type)); }

static void teardown(void *p) {
    state *st = p;
    kj__tune_arrays_free(&st->input);
    kj_mem_free(st->rt, st->out);
}

static kj_status setup(const kj__tune_problem *p, void *state_) {
    state *st = state_;
    st->rt = p->rt;
    const char *op = kj__tune_define(p->fixed, p->fixed_count, "OP");
    const char *t = kj__tune_define(p->fixed, p->fixed_count, "T");
    KJ_RETURN_IF(!op || !t, KJ_ERR_SPEC, "reduce: the metadata lacks OP or T");
    KJ_FORWARD(kj_op_parse(op, &st->op));
    KJ_FORWARD(kj_type_parse(t, &st->type));
    KJ_RETURN_IF(kj__reduce_entry(p->entry, &st->coarsens, &st->single_block) != 0, KJ_ERR_USAGE,
                 "reduce entry '%.60s' cannot be tuned: the entries kj_reduce runs are %s", p->entry,
                 kj__reduce_entry_list);
    st->entry = p->entry;
    size_t es = kj_type_size(st->type);
    char what[64];
    snprintf(what, sizeof what, "tuning reduce at n = %llu", (unsigned long long)p->n);
    KJ_FORWARD(kj__tune_arrays_alloc(st->rt, what, "the input", 1, 0, p->n, es, 0, &st->input));
    st->n = (size_t)p->n;
    st->bytes = st->n * es;
    KJ_FORWARD(kj_mem_alloc(st->rt, 16, &st->out));
    kj_devptr base = kj__tune_array(&st->input, 0, 0);

    size_t tile_n = st->n < TILE ? st->n : TILE;
    void *tile = malloc(tile_n ? tile_n * es : 1);
    if (!tile) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj__reduce_fill(st->op, st->type, tile, tile_n, kj__tune_seed(p->seed));
    kj_status s = kj_memcpy_htod(st->rt, base, tile, tile_n * es);
    /* repeat the tile through the input: copies of a whole number of tiles keep the period */
    for (size_t have = tile_n; s == KJ_OK && have < st->n; have *= 2) {
        size_t more = st->n - have < have ? st->n - have : have;
        s = kj_memcpy_dtod(st->rt, base + have * es, base, more * es, NULL);
    }
    if (s == KJ_OK && tile_n) s = reference(st, tile, tile_n);
    else if (s == KJ_OK) kj__reduce_reference(st->op, st->type, NULL, 0, st->expected, &st->abs_sum);
    free(tile);
    kj__reduce_poison(st->type, st->expected, st->poison);
    if (s == KJ_OK) s = kj__tune_arrays_replicate(&st->input, 0);
    if (s == KJ_OK) s = poison(st);
    return s;
}

static double bytes_per_run(void *p) { return (double)((state *)p)->bytes; }

static int applicable(void *p, const kj_define *d, size_t count, char *why, size_t size) {
    state *st = p;
    unsigned block = kj__tune_define_uint(d, count, "BLOCK_SIZE");
    if (st->single_block && st->n > 2ull * block) {
        snprintf(why, size, "%s reduces in one block, at most 2 x BLOCK_SIZE = %u elements; n = %zu", st->entry,
                 2 * block, st->n);
        return -1;
    }
    return 0;
}

static kj_status run(void *p, kj_kernel *k, const kj_define *d, size_t count, kj_stream stream, unsigned i) {
    state *st = p;
    /* COARSE_FACTOR is in the variant's macros also where the entry does not use it (at its default) */
    kj_devptr input = kj__tune_array(&st->input, 0, kj__tune_arrays_rotate(&st->input, i));
    kj__reduce_job job = {st->entry,
                          st->op,
                          st->type,
                          input,
                          st->n,
                          st->out,
                          kj__tune_define_uint(d, count, "BLOCK_SIZE"),
                          kj__tune_define_uint(d, count, "COARSE_FACTOR"),
                          kj__tune_define_uint(d, count, "WAVES"),
                          stream,
                          NULL};
    st->block = job.block;
    st->coarse = job.coarse;
    if (k != st->helper_of) { /* the variant's first run: its helper, kept for the runs after it */
        KJ_FORWARD(kj__reduce_helper(st->rt, &job, &st->helper));
        st->helper_of = k;
    }
    job.helper = st->helper;
    return kj__reduce_launch(st->rt, k, &job, &st->grid);
}

static kj_status verify(void *p) {
    state *st = p;
    unsigned char got[8];
    KJ_FORWARD(kj_memcpy_dtoh(st->rt, got, st->out, kj_result_size(st->type)));
    KJ_FORWARD(poison(st));
    KJ_RETURN_IF(memcmp(got, st->poison, kj_result_size(st->type)) == 0, KJ_ERR_WRONG_RESULT,
                 "the GPU result was never written (it still holds the poison written before the run)");
    if (memcmp(got, st->expected, kj_result_size(st->type)) == 0) return KJ_OK;
    double g = kj__result_as_double(st->type, got), w = kj__result_as_double(st->type, st->expected);
    if (isnan(g) && isnan(w)) return KJ_OK;
    kj_reduce_report ran = {
        .entry = st->entry, .block_size = st->block, .coarse_factor = st->coarsens ? st->coarse : 0, .grid = st->grid};
    double tol = kj__reduce_tolerance(st->op, st->type, st->n, w, st->abs_sum, &ran);
    if (fabs(g - w) <= tol) return KJ_OK;
    return KJ_FAIL(KJ_ERR_WRONG_RESULT, "GPU %.17g, CPU reference %.17g, tolerance %.3g", g, w, tol);
}

const kj__tune_target kj__tune_target_reduce = {
    .kernel = "reduce",
    .default_entry = "reduce_fast",
    .default_n = 1u << 24,
    .state_size = sizeof(state),
    .unused_tunables = unused_tunables,
    .setup = setup,
    .bytes_per_run = bytes_per_run,
    .applicable = applicable,
    .run = run,
    .verify = verify,
    .teardown = teardown,
};
