/* Host side of kernels_src/transpose.cu: kj_transpose maps the variant to its entry and thread block,
 * gets the kernel (ELEM_BYTES from the type, TILE_DIM and BLOCK_ROWS for the padded tile: the caller's,
 * else the tuning database's, else the defaults) and launches one block per tile. The padded tile's
 * shared memory comes from the kernel's metadata (shared-dynamic), already opted in by kj_kernel_get. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernjit/ops.h"
#include "base/error.h"
#include "runtime/runtime.h"
#include "tunedb/tunedb.h"
#include "base/util.h"

#define DEFAULT_TILE 32
#define DEFAULT_ROWS 8
#define MAX_SIDE 2147483647u /* the kernels index with 32-bit unsigned rows and columns, plus a tile */

/* The thread block of each entry, and its tile: 32 x 32 for the fixed variants, TILE_DIM x TILE_DIM
 * for the padded one (block 0 x 0 here), and for transpose_vec 32 V rows x 8 V columns, V being the
 * elements of one vector (kernels_src/transpose.cu: KJ_V). */
static const struct {
    const char *name;
    const char *entry;
    unsigned block_x, block_y;
} variants[KJ_TRANSPOSE_VARIANT_COUNT_] = {
    [KJ_TRANSPOSE_PADDED] = {"padded", "transpose_padded", 0, 0},
    [KJ_TRANSPOSE_READ_ROWS] = {"read-rows", "transpose_read_rows", 32, 8},
    [KJ_TRANSPOSE_READ_COLS] = {"read-cols", "transpose_read_cols", 32, 8},
    [KJ_TRANSPOSE_SHARED] = {"shared", "transpose_shared", 32, 8},
    [KJ_TRANSPOSE_L1_8X32] = {"l1-8x32", "transpose_l1_8x32", 8, 32},
    [KJ_TRANSPOSE_L1_4X32] = {"l1-4x32", "transpose_l1_4x32", 4, 32},
    [KJ_TRANSPOSE_VEC] = {"vec", "transpose_vec", 8, 32},
};

const char *kj_transpose_variant_name(kj_transpose_variant v) {
    return (unsigned)v < KJ_TRANSPOSE_VARIANT_COUNT_ ? variants[v].name : "?";
}

const char *kj_transpose_variant_entry(kj_transpose_variant v) {
    return (unsigned)v < KJ_TRANSPOSE_VARIANT_COUNT_ ? variants[v].entry : "?";
}

kj_status kj_transpose_variant_parse(const char *text, kj_transpose_variant *v) {
    KJ_RETURN_IF(!v, KJ_ERR_USAGE, "kj_transpose_variant_parse: variant is NULL");
    for (int i = 0; text && i < KJ_TRANSPOSE_VARIANT_COUNT_; i++)
        if (strcmp(text, variants[i].name) == 0) {
            *v = (kj_transpose_variant)i;
            return KJ_OK;
        }
    return KJ_FAIL(KJ_ERR_USAGE,
                   "unknown transpose variant '%.40s': allowed are padded, read-rows, read-cols, shared, l1-8x32, "
                   "l1-4x32, vec", text ? text : "(null)");
}

/* The tuning database's TILE_DIM and BLOCK_ROWS for the padded tile at this element size and
 * rows x cols elements (the in-memory copy only; src/ops/transpose/transpose_tune.c tunes by element count).
 * A tuned pair is used whole: values that are not plain numbers mean the defaults apply. */
static int tuned(kj_runtime *rt, size_t elem_bytes, uint64_t n, unsigned *tile, unsigned *block_rows) {
    char fixed[32], values[256];
    snprintf(fixed, sizeof fixed, "ELEM_BYTES=%zu", elem_bytes);
    if (!n || !kj__tuned_find(rt, "transpose", "transpose_padded", fixed, n, values, sizeof values)) return 0;
    unsigned x, y;
    if (kj__tunedb_uint(values, "TILE_DIM", 1024, &x) != 0 || kj__tunedb_uint(values, "BLOCK_ROWS", 1024, &y) != 0)
        return 0;
    *tile = x;
    *block_rows = y;
    return 1;
}

kj_status kj_transpose(kj_runtime *rt, kj_type type, kj_devptr in, kj_devptr out, size_t rows, size_t cols,
                       const kj_transpose_options *o) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_transpose: runtime is NULL");
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE, "kj_transpose: type %d is not a kj_type", (int)type);
    kj_transpose_options defaults = {0};
    if (!o) o = &defaults;
    kj_transpose_variant v = o->variant;
    KJ_RETURN_IF((unsigned)v >= KJ_TRANSPOSE_VARIANT_COUNT_, KJ_ERR_USAGE,
                 "kj_transpose: variant %d is not a kj_transpose_variant (0 to %d)", (int)v,
                 KJ_TRANSPOSE_VARIANT_COUNT_ - 1);
    KJ_RETURN_IF(v != KJ_TRANSPOSE_PADDED && (o->tile_dim || o->block_rows), KJ_ERR_USAGE,
                 "kj_transpose: tile_dim %u and block_rows %u shape the padded variant only; %s has a fixed tile",
                 o->tile_dim, o->block_rows, variants[v].name);
    KJ_RETURN_IF(rows > MAX_SIDE || cols > MAX_SIDE, KJ_ERR_USAGE,
                 "kj_transpose: %zu x %zu: rows and cols may be at most %u", rows, cols, MAX_SIDE);
    KJ_RETURN_IF(rows && cols && (!in || !out), KJ_ERR_USAGE, "kj_transpose: %s is 0 with %zu x %zu elements",
                 !in ? "in" : "out", rows, cols);
    KJ_FORWARD(kj__enter(rt));

    unsigned tile_rows = 32, tile_cols = 32, bx = variants[v].block_x, by = variants[v].block_y;
    if (v == KJ_TRANSPOSE_VEC) {
        unsigned vec = kj_type_size(type) == 8 ? 2 : 4;
        tile_rows = by * vec;
        tile_cols = bx * vec;
    }
    char eb[8], td[16], br[16];
    snprintf(eb, sizeof eb, "%zu", kj_type_size(type));
    kj_define defs[3] = {{"ELEM_BYTES", eb}};
    size_t ndefs = 1;
    const char *from = "default"; /* the fixed variants have nothing to choose */
    unsigned tile = DEFAULT_TILE, block_rows = DEFAULT_ROWS;
    if (v == KJ_TRANSPOSE_PADDED) {
        if (o->tile_dim || o->block_rows) {
            from = "explicit"; /* what the caller gives wins; the rest stays at the default */
            if (o->tile_dim) tile = o->tile_dim;
            if (o->block_rows) block_rows = o->block_rows;
        } else if (tuned(rt, kj_type_size(type), (uint64_t)rows * cols, &tile, &block_rows)) {
            from = "tuned";
        }
        snprintf(td, sizeof td, "%u", tile);
        snprintf(br, sizeof br, "%u", block_rows);
        defs[ndefs++] = (kj_define){"TILE_DIM", td};
        defs[ndefs++] = (kj_define){"BLOCK_ROWS", br};
    }
    /* The fixed variants leave TILE_DIM and BLOCK_ROWS at their defaults: every variant then comes
     * from one module per element size. */
    kj_request req = {.kernel = "transpose", .entry = variants[v].entry, .defines = defs, .define_count = ndefs};
    kj_kernel *k;
    kj_origin origin;
    kj_status got = kj_kernel_get(rt, &req, &k, &origin);
    if (got != KJ_OK && strcmp(from, "tuned") == 0 && (got == KJ_ERR_INVALID_DEFINE || got == KJ_ERR_LIMIT)) {
        /* a hand-edited database, or metadata changed since: the defaults still work */
        kj__log(&rt->log, KJ_LOG_WARN, "the tuning database's TILE_DIM=%u BLOCK_ROWS=%u for transpose_padded cannot be "
                "used (%s); using the defaults", tile, block_rows, kj_last_error());
        tile = DEFAULT_TILE;
        block_rows = DEFAULT_ROWS;
        snprintf(td, sizeof td, "%u", tile);
        snprintf(br, sizeof br, "%u", block_rows);
        from = "default";
        got = kj_kernel_get(rt, &req, &k, &origin);
    }
    KJ_FORWARD(got);
    if (v == KJ_TRANSPOSE_PADDED) {
        tile_rows = tile_cols = bx = tile;
        by = block_rows;
    }

    uint64_t tiles = 0;
    if (rows && cols) {
        tiles = (uint64_t)((rows + tile_rows - 1) / tile_rows) * (uint64_t)((cols + tile_cols - 1) / tile_cols);
        KJ_RETURN_IF(tiles > (uint64_t)rt->info.max_grid_dim[0], KJ_ERR_LIMIT,
                     "kj_transpose: %zu x %zu takes %llu tiles of %ux%u; a grid holds at most %d blocks", rows, cols,
                     (unsigned long long)tiles, tile_rows, tile_cols, rt->info.max_grid_dim[0]);
        unsigned r32 = (unsigned)rows, c32 = (unsigned)cols;
        void *args[] = {&in, &out, &r32, &c32};
        /* shared_bytes 0: the launch takes the metadata's shared-dynamic (the padded tile's size) */
        kj_launch_config cfg = {{(unsigned)tiles, 1, 1}, {bx, by, 1}, 0, o->stream, 0};
        KJ_FORWARD(kj_kernel_launch(k, &cfg, args));
    }
    if (o->report) {
        kj_transpose_report *r = o->report;
        snprintf(r->entry, sizeof r->entry, "%s", variants[v].entry);
        r->tile[0] = tile_rows;
        r->tile[1] = tile_cols;
        r->block[0] = bx;
        r->block[1] = by;
        r->grid = (unsigned)tiles;
        r->shared_bytes = k->shared_dynamic;
        r->origin = origin;
        r->config_from = from;
    }
    return KJ_OK;
}
