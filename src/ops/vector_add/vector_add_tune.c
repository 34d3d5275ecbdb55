/* The vector add's tuning target: the variant's kernel launched as kj_vector_add launches it
 * (kj__vector_add_launch: the same grid) on n seeded random elements of T (f32 or f64), checked bit
 * for bit against the CPU's a + b.
 *
 * vector_add_scalar is what kj_vector_add runs for pointers that are not on a 16-byte boundary: its
 * problem views every array one element into its allocation, as a caller adding at an offset would.
 *
 * Inputs that fit in L2 rotate: a, b and c each have `slots` copies, in three regions, so that the
 * outputs can be poisoned with a single memset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/vector_add/vector_add.h"

typedef struct state {
    kj_runtime *rt;
    kj_type type;
    const char *entry;
    size_t n, es, bytes, offset; /* offset: bytes into each slot (vector_add_scalar: one element) */
    unsigned slots;
    size_t stride;               /* between slots of one array */
    kj_devptr base;              /* a's slots, then b's, then c's */
    unsigned last;               /* the slot of the latest run */
    void *expected;              /* a + b, on the CPU */
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

static kj_devptr slot_of(const state *st, unsigned array, unsigned slot) {
    return st->base + ((kj_devptr)array * st->slots + slot) * st->stride + st->offset;
}

static void teardown(void *p) {
    state *st = p;
    kj_mem_free(st->rt, st->base);
    free(st->expected);
}

/* Every c slot. */
static kj_status poison(state *st) {
    return kj__tune_poison(st->rt, st->base + 2 * (kj_devptr)st->slots * st->stride, (size_t)st->slots * st->stride);
}

/* Fills one input array on the host (the same seeded stream as its CPU reference) and uploads it
 * to slot 0 of its region. */
static kj_status upload(state *st, unsigned array, void *host, uint64_t *rng) {
    fill(st->type, host, st->n, rng);
    return kj_memcpy_htod(st->rt, slot_of(st, array, 0), host, st->bytes);
}

static kj_status setup(const kj__tune_problem *p, void *state_) {
    state *st = state_;
    st->rt = p->rt;
    const char *t = kj__tune_define(p->fixed, p->fixed_count, "T");
    KJ_RETURN_IF(!t, KJ_ERR_SPEC, "vector_add: the metadata lacks T");
    KJ_FORWARD(kj_type_parse(t, &st->type));
    KJ_RETURN_IF(st->type != KJ_TYPE_F32 && st->type != KJ_TYPE_F64, KJ_ERR_USAGE,
                 "vector_add: T=%s: vector add takes f32 or f64", t);
    KJ_RETURN_IF(strcmp(p->entry, "vector_add") != 0 && strcmp(p->entry, "vector_add_scalar") != 0, KJ_ERR_USAGE,
                 "vector_add entry '%.60s' cannot be tuned: the entries kj_vector_add runs are vector_add (the "
                 "default) and vector_add_scalar", p->entry);
    st->entry = p->entry;
    st->es = kj_type_size(st->type);
    KJ_RETURN_IF(p->n > (1ull << 40) / st->es, KJ_ERR_USAGE, "n = %llu elements of %s: at most 2^40 bytes an array",
                 (unsigned long long)p->n, t);
    st->n = (size_t)p->n;
    st->bytes = st->n * st->es;
    st->offset = strcmp(p->entry, "vector_add_scalar") == 0 ? st->es : 0;
    st->slots = kj__tune_slots(st->rt, 3 * st->bytes);
    st->stride = kj__tune_stride(st->bytes + st->offset);
    char what[64];
    snprintf(what, sizeof what, "tuning vector_add at n = %zu", st->n);
    KJ_FORWARD(kj__tune_alloc(st->rt, 3 * (size_t)st->slots * st->stride, what, st->slots, "a, b and c", &st->base));

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
    for (unsigned array = 0; s == KJ_OK && array < 2; array++)
        s = kj__tune_replicate(st->rt, slot_of(st, array, 0) - st->offset, st->stride, st->slots);
    if (s == KJ_OK) s = poison(st);
    return s;
}

static double bytes_per_run(void *p) { return 3.0 * (double)((state *)p)->bytes; } /* a, b read; c written */

static kj_status run(void *p, kj_kernel *k, const kj_define *d, size_t count, kj_stream stream, unsigned i) {
    state *st = p;
    unsigned grid;
    st->last = i % st->slots;
    return kj__vector_add_launch(st->rt, k, st->type, kj__tune_define_uint(d, count, "BLOCK_SIZE"),
                                 kj__tune_define_uint(d, count, "UNROLL"), slot_of(st, 0, st->last),
                                 slot_of(st, 1, st->last), slot_of(st, 2, st->last), st->n, stream, &grid);
}

static kj_status verify(void *p) {
    state *st = p;
    size_t first;
    kj_devptr c = slot_of(st, 2, st->last);
    KJ_FORWARD(kj__tune_compare(st->rt, c, st->expected, st->bytes, &first));
    double got = 0, want = 0;
    if (first != SIZE_MAX) {
        size_t i = first / st->es;
        unsigned char g[8];
        KJ_FORWARD(kj_memcpy_dtoh(st->rt, g, c + i * st->es, st->es));
        if (st->type == KJ_TYPE_F64) {
            memcpy(&got, g, 8);
            want = ((const double *)st->expected)[i];
        } else {
            float f;
            memcpy(&f, g, 4);
            got = f;
            want = ((const float *)st->expected)[i];
        }
    }
    KJ_FORWARD(poison(st));
    if (first == SIZE_MAX) return KJ_OK;
    return KJ_FAIL(KJ_ERR_WRONG_RESULT, "c[%zu] = %.17g, the CPU's a + b = %.17g (n = %zu)", first / st->es, got, want,
                   st->n);
}

const kj__tune_target kj__tune_target_vector_add = {
    .kernel = "vector_add",
    .default_entry = "vector_add",
    .default_n = 1u << 26,
    .state_size = sizeof(state),
    .unused_tunables = NULL,
    .setup = setup,
    .bytes_per_run = bytes_per_run,
    .applicable = NULL,
    .block_threads = NULL,
    .dynamic_shared = NULL,
    .run = run,
    .verify = verify,
    .teardown = teardown,
};
