/* The transpose's tuning target: kj_transpose's padded tile (transpose_padded, the only entry with
 * tunables: TILE_DIM x BLOCK_ROWS threads a tile) on a rows x cols matrix of seeded random elements
 * of ELEM_BYTES bytes, with the variant's TILE_DIM and BLOCK_ROWS given explicitly, checked element
 * for element against the CPU's transpose.
 *
 * The problem size is n elements, as for every target (the tuning database keys by n's bucket, and
 * kj_transpose looks up rows * cols): the matrix is rows x cols = n with rows the largest divisor of
 * n not above sqrt(n). Square when n is a square (2^26: 8192 x 8192), else as close to square as n
 * allows (2^25: 4096 x 8192; a prime n is one row).
 *
 * The runs launch the variant's kernel as kj_transpose does (kj__transpose_launch), so that the grid,
 * the block and the dynamic shared memory are exactly the op's for those values. Inputs that fit in
 * L2 rotate (kj__tune_arrays: in, out). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/transpose/transpose.h"

#define MAX_SIDE 2147483647ull /* kj_transpose's limit on rows and cols */
#define BLOCK 64               /* the CPU reference's tile: both sides stay in cache */

typedef struct state {
    kj__tune_arrays arrays; /* in, out */
    kj_runtime *rt;
    size_t es, rows, cols, n, bytes;
    void *expected; /* cols x rows: the CPU's transpose */
} state;

/* A transpose moves bits: any bits will do, and distinct ones show a misplaced element. */
static void fill(void *buf, size_t es, size_t n, uint64_t seed) {
    uint64_t s = kj__tune_seed(seed);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kj__tune_random(&s);
        if (es == 2) ((uint16_t *)buf)[i] = (uint16_t)(r >> 48);
        else if (es == 4) ((uint32_t *)buf)[i] = (uint32_t)(r >> 32);
        else ((uint64_t *)buf)[i] = r;
    }
}

/* out[c * rows + r] = in[r * cols + c], in BLOCK x BLOCK blocks. */
#define TRANSPOSE_AS(word)                                                                                             \
    for (size_t r0 = 0; r0 < rows; r0 += BLOCK)                                                                        \
        for (size_t c0 = 0; c0 < cols; c0 += BLOCK)                                                                    \
            for (size_t r = r0; r < r0 + BLOCK && r < rows; r++)                                                       \
                for (size_t c = c0; c < c0 + BLOCK && c < cols; c++)                                                   \
                    ((word *)out)[c * rows + r] = ((const word *)in)[r * cols + c];

static void transpose_cpu(const void *in, void *out, size_t es, size_t rows, size_t cols) {
    if (es == 2) TRANSPOSE_AS(uint16_t)
    else if (es == 4) TRANSPOSE_AS(uint32_t)
    else TRANSPOSE_AS(uint64_t)
}

/* rows x cols = n, rows the largest divisor of n not above sqrt(n). */
static void shape(uint64_t n, size_t *rows, size_t *cols) {
    uint64_t r = (uint64_t)sqrt((double)n);
    while (r * r > n) r--;
    while ((r + 1) * (r + 1) <= n) r++;
    while (r > 1 && n % r) r--;
    if (r == 0) r = 1;
    *rows = (size_t)r;
    *cols = (size_t)(n / r);
}

static void teardown(void *p) {
    state *st = p;
    kj__tune_arrays_free(&st->arrays);
    free(st->expected);
}

static kj_status setup(const kj__tune_problem *p, void *state_) {
    state *st = state_;
    st->rt = p->rt;
    const char *eb = kj__tune_define(p->fixed, p->fixed_count, "ELEM_BYTES");
    KJ_RETURN_IF(!eb, KJ_ERR_SPEC, "transpose: the metadata lacks ELEM_BYTES");
    st->es = strtoul(eb, NULL, 10);
    KJ_RETURN_IF(st->es != 2 && st->es != 4 && st->es != 8, KJ_ERR_USAGE,
                 "transpose: ELEM_BYTES=%.20s: allowed are 2, 4 and 8", eb);
    KJ_RETURN_IF(strcmp(p->entry, "transpose_padded") != 0, KJ_ERR_USAGE,
                 "transpose entry '%.60s' cannot be tuned: it has a fixed 32 x 32 tile; TILE_DIM and BLOCK_ROWS "
                 "shape transpose_padded (the default) only",
                 p->entry);
    shape(p->n, &st->rows, &st->cols);
    KJ_RETURN_IF(st->cols > MAX_SIDE, KJ_ERR_USAGE,
                 "n = %llu: its matrix is %zu x %zu (rows the largest divisor of n not above its square root), and "
                 "kj_transpose takes at most %llu columns; give an n with closer factors (2^26 = 8192 x 8192)",
                 (unsigned long long)p->n, st->rows, st->cols, MAX_SIDE);
    char what[128];
    snprintf(what, sizeof what, "tuning transpose at n = %llu (%zu x %zu)", (unsigned long long)p->n, st->rows,
             st->cols);
    KJ_FORWARD(kj__tune_arrays_alloc(st->rt, what, "the input and the output", 2, 1, p->n, st->es, 0, &st->arrays));
    st->n = (size_t)p->n;
    st->bytes = st->n * st->es;

    void *in = malloc(st->bytes);
    st->expected = malloc(st->bytes);
    kj_status s = in && st->expected ? KJ_OK : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (s == KJ_OK) {
        fill(in, st->es, st->n, p->seed);
        transpose_cpu(in, st->expected, st->es, st->rows, st->cols);
        s = kj__tune_arrays_upload(&st->arrays, 0, in, st->bytes);
    }
    free(in);
    if (s == KJ_OK) s = kj__tune_arrays_poison(&st->arrays);
    return s;
}

static double bytes_per_run(void *p) { return 2.0 * (double)((state *)p)->bytes; } /* read + write */

static unsigned block_threads(void *p, const kj_define *d, size_t count) {
    (void)p;
    return kj__tune_define_uint(d, count, "TILE_DIM") * kj__tune_define_uint(d, count, "BLOCK_ROWS");
}

/* The metadata's shared-dynamic for transpose_padded: TILE_DIM rows of TILE_DIM + 1 elements. */
static unsigned dynamic_shared(void *p, const kj_define *d, size_t count) {
    unsigned tile = kj__tune_define_uint(d, count, "TILE_DIM");
    return tile * (tile + 1) * (unsigned)((state *)p)->es;
}

/* The tuner checks threads and shared memory against the loaded function; these are checked first,
 * without compiling: a tile the device cannot give shared memory to would fail in kj_kernel_get, and
 * a grid of more tiles than the device allows in the launch. */
static int applicable(void *p, const kj_define *d, size_t count, char *why, size_t size) {
    state *st = p;
    unsigned tile = kj__tune_define_uint(d, count, "TILE_DIM");
    size_t shared = dynamic_shared(p, d, count);
    const kj_device_info *dev = kj__device_info(st->rt);
    if (shared > dev->shared_per_block_optin) {
        snprintf(why, size,
                 "a %u x %u tile of %zu-byte elements needs %zu bytes of shared memory a block; the device "
                 "allows %zu",
                 tile, tile + 1, st->es, shared, dev->shared_per_block_optin);
        return -1;
    }
    uint64_t tiles = tile ? (uint64_t)((st->rows + tile - 1) / tile) * ((st->cols + tile - 1) / tile) : 0;
    if (tiles > (uint64_t)dev->max_grid_dim[0]) {
        snprintf(why, size, "%zu x %zu takes %llu tiles of %ux%u; a grid holds at most %d blocks", st->rows, st->cols,
                 (unsigned long long)tiles, tile, tile, dev->max_grid_dim[0]);
        return -1;
    }
    return 0;
}

static kj_status run(void *p, kj_kernel *k, const kj_define *d, size_t count, kj_stream stream, unsigned i) {
    state *st = p;
    unsigned dim = kj__tune_define_uint(d, count, "TILE_DIM");
    unsigned tile[2] = {dim, dim}, block[2] = {dim, kj__tune_define_uint(d, count, "BLOCK_ROWS")}, tiles;
    unsigned copy = kj__tune_arrays_rotate(&st->arrays, i);
    unsigned group = kj__tune_define_uint(d, count, "GROUP");
    return kj__transpose_launch(st->rt, k, tile, block, group ? group : 1, kj__tune_array(&st->arrays, 0, copy),
                                kj__tune_array(&st->arrays, 1, copy), st->rows, st->cols, stream, &tiles);
}

static uint64_t word_at(const unsigned char *p, size_t es) {
    uint64_t v = 0;
    if (es == 2) v = *(const uint16_t *)p;
    else if (es == 4) v = *(const uint32_t *)p;
    else memcpy(&v, p, 8);
    return v;
}

static kj_status verify(void *p) {
    state *st = p;
    size_t i;
    unsigned char g[8];
    KJ_FORWARD(kj__tune_arrays_check(&st->arrays, 1, st->expected, st->bytes, st->es, &i, g));
    if (i == SIZE_MAX) return KJ_OK;
    uint64_t got = word_at(g, st->es), want = word_at((const unsigned char *)st->expected + i * st->es, st->es);
    /* output row = input column, output column = input row */
    return KJ_FAIL(KJ_ERR_WRONG_RESULT,
                   "%zu x %zu: output row %zu, column %zu is 0x%llx; the input's row %zu, column %zu is 0x%llx",
                   st->rows, st->cols, i / st->rows, i % st->rows, (unsigned long long)got, i % st->rows, i / st->rows,
                   (unsigned long long)want);
}

const kj__tune_target kj__tune_target_transpose = {
    .kernel = "transpose",
    .default_entry = "transpose_padded",
    .default_n = 1u << 26, /* 8192 x 8192 */
    .state_size = sizeof(state),
    .setup = setup,
    .bytes_per_run = bytes_per_run,
    .applicable = applicable,
    .block_threads = block_threads,
    .dynamic_shared = dynamic_shared,
    .run = run,
    .verify = verify,
    .teardown = teardown,
};
