/* The vector add's tuning target: the variant's kernel launched as kj_vector_add launches it
 * (kj__vector_add_launch: the same grid) on n seeded random elements of T (f32 or f64), checked bit
 * for bit against the CPU's a + b.
 *
 * vector_add_scalar is what kj_vector_add runs for pointers that are not on a 16-byte boundary: its
 * problem views every array one element into its allocation, as a caller adding at an offset would.
 *
 * Inputs that fit in L2 rotate (kj__tune_arrays: a, b, c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vector_add/vector_add.h"

typedef struct state {
    kj__tune_arrays arrays; /* a, b, c */
    kj_type type;
    const char *entry;
    size_t n, es, bytes;
    void *expected; /* a + b, on the CPU */
} state;

/* Uniform in [-1, 1) with the type's whole mantissa, times a power of two from 2^-6 to 2^9: mixed
 * magnitudes and signs, so that most sums round (and a wrong rounding shows). */
static void fill(kj_type t, void *buf, size_t n, uint64_t *s) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kj__tune_random(s);
        double scale = (double)(1u << (r & 15)) / 64.0;
        double u = (double)(r >> 11) / 9007199254740992.0 * 2 - 1;
        if (t == KJ_TYPE_F64) ((double *)buf)[i] = u * scale;
        else ((float *)buf)[i] = (float)(u * scale);
    }
}

static void teardown(void *p) {
    state *st = p;
    kj__tune_arrays_free(&st->arrays);
    free(st->expected);
}

/* Fills one input array on the host (the same seeded stream as its CPU reference) and uploads it. */
static kj_status upload(state *st, unsigned array, void *host, uint64_t *rng) {
    fill(st->type, host, st->n, rng);
    return kj__tune_arrays_upload(&st->arrays, array, host, st->bytes);
}

static kj_status setup(const kj__tune_problem *p, void *state_) {
    state *st = state_;
    const char *t = kj__tune_define(p->fixed, p->fixed_count, "T");
    KJ_RETURN_IF(!t, KJ_ERR_SPEC, "vector_add: the metadata lacks T");
    KJ_FORWARD(kj_type_parse(t, &st->type));
    KJ_RETURN_IF(st->type != KJ_TYPE_F32 && st->type != KJ_TYPE_F64, KJ_ERR_USAGE,
                 "vector_add: T=%s: vector add takes f32 or f64", t);
    KJ_RETURN_IF(strcmp(p->entry, "vector_add") != 0 && strcmp(p->entry, "vector_add_scalar") != 0, KJ_ERR_USAGE,
                 "vector_add entry '%.60s' cannot be tuned: the entries kj_vector_add runs are vector_add (the "
                 "default) and vector_add_scalar",
                 p->entry);
    st->entry = p->entry;
    st->es = kj_type_size(st->type);
    char what[64];
    snprintf(what, sizeof what, "tuning vector_add at n = %llu", (unsigned long long)p->n);
    size_t offset = strcmp(p->entry, "vector_add_scalar") == 0 ? st->es : 0;
    KJ_FORWARD(kj__tune_arrays_alloc(p->rt, what, "a, b and c", 3, 1, p->n, st->es, offset, &st->arrays));
    st->n = (size_t)p->n;
    st->bytes = st->n * st->es;

    st->expected = malloc(st->bytes ? st->bytes : 1);
    void *b = malloc(st->bytes ? st->bytes : 1);
    kj_status s = st->expected && b ? KJ_OK : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    uint64_t rng = kj__tune_seed(p->seed);
    if (s == KJ_OK) s = upload(st, 0, st->expected, &rng);
    if (s == KJ_OK) s = upload(st, 1, b, &rng);
    /* one IEEE addition rounded to nearest, as the GPU does it (no contraction: a single operation) */
    for (size_t i = 0; s == KJ_OK && i < st->n; i++) {
        if (st->type == KJ_TYPE_F64) ((double *)st->expected)[i] += ((const double *)b)[i];
        else ((float *)st->expected)[i] += ((const float *)b)[i];
    }
    free(b);
    if (s == KJ_OK) s = kj__tune_arrays_poison(&st->arrays);
    return s;
}

static double bytes_per_run(void *p) { return 3.0 * (double)((state *)p)->bytes; } /* a, b read; c written */

static kj_status run(void *p, kj_kernel *k, const kj_define *d, size_t count, kj_stream stream, unsigned i) {
    state *st = p;
    unsigned grid, copy = kj__tune_arrays_rotate(&st->arrays, i);
    return kj__vector_add_launch(st->arrays.rt, k, st->type, kj__tune_define_uint(d, count, "BLOCK_SIZE"),
                                 kj__tune_define_uint(d, count, "UNROLL"), kj__tune_define_uint(d, count, "WAVES"),
                                 kj__tune_array(&st->arrays, 0, copy), kj__tune_array(&st->arrays, 1, copy),
                                 kj__tune_array(&st->arrays, 2, copy), st->n, stream, &grid);
}

static kj_status verify(void *p) {
    state *st = p;
    size_t i;
    unsigned char g[8];
    KJ_FORWARD(kj__tune_arrays_check(&st->arrays, 2, st->expected, st->bytes, st->es, &i, g));
    if (i == SIZE_MAX) return KJ_OK;
    double got, want;
    if (st->type == KJ_TYPE_F64) {
        memcpy(&got, g, 8);
        want = ((const double *)st->expected)[i];
    } else {
        float f;
        memcpy(&f, g, 4);
        got = f;
        want = ((const float *)st->expected)[i];
    }
    return KJ_FAIL(KJ_ERR_WRONG_RESULT, "c[%zu] = %.17g, the CPU's a + b = %.17g (n = %zu)", i, got, want, st->n);
}

const kj__tune_target kj__tune_target_vector_add = {
    .kernel = "vector_add",
    .default_entry = "vector_add",
    .default_n = 1u << 26,
    .state_size = sizeof(state),
    .setup = setup,
    .bytes_per_run = bytes_per_run,
    .run = run,
    .verify = verify,
    .teardown = teardown,
};
