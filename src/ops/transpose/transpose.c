/* Host side of kernels_src/transpose.cu: kj_transpose maps the variant to its entry and thread block,
 * gets the kernel (ELEM_BYTES from the type; TILE_DIM and BLOCK_ROWS for the padded tile by
 * kj__config_resolve) and launches one block per tile. The padded tile's shared memory comes from
 * the kernel's metadata (shared-dynamic), already opted in by kj_kernel_get. */
#include <stdio.h>

#include "ops/ops.h"
#include "ops/transpose/transpose.h"

/* The padded tile when none is given or tuned: 64 x 64 elements, each thread of its 64 x BLOCK_ROWS
 * moving 64 / BLOCK_ROWS of them, with GROUP 1 (along the rows of tiles) until a card is tuned.
 * BLOCK_ROWS is 8 while the loads that all resident threads hold in flight cover IN_FLIGHT_NS of the
 * device's bandwidth, else 4 (twice the loads a thread). Measured at 8192 x 8192 against a device
 * copy: on the H100 (3.35 TB/s), 64 x 8 is the best, 96.5% for f32 (8.6 MB in flight, 2.6 us of its
 * bandwidth); on the H200 (4.8 TB/s), f32 gets 90.8% with 64 x 8 (1.8 us) and 93.5% with 64 x 4, f16
 * 63.4% and 71.4%, while f64 (3.6 us with 64 x 8) gets 95.0% with 64 x 8 and 93.3% with 64 x 4. */
#define DEFAULT_TILE 64
#define IN_FLIGHT_NS 2000.0
#define DEFAULT_GROUP 1
#define MAX_SIDE 2147483647u /* the kernels index with 32-bit unsigned rows and columns, plus a tile */

/* The thread block of each entry, and its tile: 32 x 32 for the fixed variants, TILE_DIM x TILE_DIM
 * for the padded one (block 0 x 0 here), and for transpose_vec 32 V rows x 8 V columns, V being the
 * elements of one vector (kernels_src/transpose.cu: KJ_V). */
static const struct {
    const char *entry;
    unsigned block_x, block_y;
} variants[KJ_TRANSPOSE_VARIANT_COUNT_] = {
    [KJ_TRANSPOSE_PADDED] = {"transpose_padded", 0, 0},
    [KJ_TRANSPOSE_READ_ROWS] = {"transpose_read_rows", 32, 8},
    [KJ_TRANSPOSE_READ_COLS] = {"transpose_read_cols", 32, 8},
    [KJ_TRANSPOSE_SHARED] = {"transpose_shared", 32, 8},
    [KJ_TRANSPOSE_L1_8X32] = {"transpose_l1_8x32", 8, 32},
    [KJ_TRANSPOSE_L1_4X32] = {"transpose_l1_4x32", 4, 32},
    [KJ_TRANSPOSE_VEC] = {"transpose_vec", 8, 32},
};

static const char *const variant_names[KJ_TRANSPOSE_VARIANT_COUNT_] = {"padded",  "read-rows", "read-cols", "shared",
                                                                       "l1-8x32", "l1-4x32",   "vec"};

const char *kj_transpose_variant_name(kj_transpose_variant v) {
    return (unsigned)v < KJ_TRANSPOSE_VARIANT_COUNT_ ? variant_names[v] : "?";
}

const char *kj_transpose_variant_entry(kj_transpose_variant v) {
    return (unsigned)v < KJ_TRANSPOSE_VARIANT_COUNT_ ? variants[v].entry : "?";
}

kj_status kj_transpose_variant_parse(const char *text, kj_transpose_variant *v) {
    KJ_RETURN_IF(!v, KJ_ERR_USAGE, "kj_transpose_variant_parse: variant is NULL");
    int i = kj__name_find(variant_names, KJ_TRANSPOSE_VARIANT_COUNT_, text);
    KJ_RETURN_IF(i < 0, KJ_ERR_USAGE,
                 "unknown transpose variant '%.40s': allowed are padded, read-rows, read-cols, shared, l1-8x32, "
                 "l1-4x32, vec",
                 text ? text : "(null)");
    *v = (kj_transpose_variant)i;
    return KJ_OK;
}

kj_status kj__transpose_launch(kj_runtime *rt, kj_kernel *k, const unsigned tile[2], const unsigned block[2],
                               unsigned group, kj_devptr in, kj_devptr out, size_t rows, size_t cols, kj_stream stream,
                               unsigned *tiles) {
    *tiles = 0;
    if (!rows || !cols) return KJ_OK;
    uint64_t n = (uint64_t)((rows + tile[0] - 1) / tile[0]) * (uint64_t)((cols + tile[1] - 1) / tile[1]);
    int most = kj__device_info(rt)->max_grid_dim[0];
    KJ_RETURN_IF(n > (uint64_t)most, KJ_ERR_LIMIT,
                 "kj_transpose: %zu x %zu takes %llu tiles of %ux%u; a grid holds at "
                 "most %d blocks",
                 rows, cols, (unsigned long long)n, tile[0], tile[1], most);
    unsigned r32 = (unsigned)rows, c32 = (unsigned)cols;
    void *args[] = {&in, &out, &r32, &c32, &group}; /* the fixed variants take the first four */
    /* shared_bytes 0: the launch takes the metadata's shared-dynamic (the padded tile's size) */
    kj_launch_config cfg = {
        .size = sizeof cfg, .grid = {(unsigned)n, 1, 1}, .block = {block[0], block[1], 1}, .stream = stream};
    KJ_FORWARD(kj__kernel_launch(k, &cfg, args));
    *tiles = (unsigned)n;
    return KJ_OK;
}

/* The default BLOCK_ROWS on this device for this element size (see DEFAULT_TILE). */
static unsigned default_rows(const kj_device_info *d, kj_type type) {
    double gbs = d->peak_bandwidth_gbs > 0 ? d->peak_bandwidth_gbs : 3350;
    double threads = (double)(d->sm_count > 0 ? d->sm_count : 132) *
                     (d->max_threads_per_sm > 0 ? d->max_threads_per_sm : 2048);
    double in_flight = threads * (DEFAULT_TILE / 8) * (double)kj_type_size(type); /* bytes, with 64 x 8 */
    return in_flight >= gbs * IN_FLIGHT_NS ? 8 : 4;
}

kj_status kj_transpose(kj_runtime *rt, kj_type type, kj_devptr in, kj_devptr out, size_t rows, size_t cols,
                       const kj_transpose_options *o) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_transpose: runtime is NULL");
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE, "kj_transpose: type %d is not a kj_type", (int)type);
    kj_transpose_options defaults = KJ_TRANSPOSE_OPTIONS_INIT, copy;
    if (!o) o = &defaults;
    KJ__SIZED_INPUT(o, copy, kj_transpose_options, KJ_TRANSPOSE_OPTIONS_INIT);
    if (o->report) KJ_FORWARD(KJ__SIZED_CHECK(o->report, kj_transpose_report, KJ_TRANSPOSE_REPORT_INIT));
    kj_transpose_variant v = o->variant;
    KJ_RETURN_IF((unsigned)v >= KJ_TRANSPOSE_VARIANT_COUNT_, KJ_ERR_USAGE,
                 "kj_transpose: variant %d is not a kj_transpose_variant (0 to %d)", (int)v,
                 KJ_TRANSPOSE_VARIANT_COUNT_ - 1);
    int padded = v == KJ_TRANSPOSE_PADDED;
    KJ_RETURN_IF(!padded && (o->tile_dim || o->block_rows || o->group), KJ_ERR_USAGE,
                 "kj_transpose: tile_dim %u, block_rows %u and group %u shape the padded variant only; %s has a "
                 "fixed tile",
                 o->tile_dim, o->block_rows, o->group, variant_names[v]);
    KJ_RETURN_IF(o->reserved, KJ_ERR_USAGE, "kj_transpose_options.reserved is %u: it must be 0", (unsigned)o->reserved);
    KJ_RETURN_IF(rows > MAX_SIDE || cols > MAX_SIDE, KJ_ERR_USAGE,
                 "kj_transpose: %zu x %zu: rows and cols may be at most %u", rows, cols, MAX_SIDE);
    KJ_RETURN_IF(rows && cols && (!in || !out), KJ_ERR_USAGE, "kj_transpose: %s is 0 with %zu x %zu elements",
                 !in ? "in" : "out", rows, cols);
    KJ_FORWARD(kj__enter(rt));

    /* The fixed variants have no tunables and leave TILE_DIM and BLOCK_ROWS at their defaults: every
     * variant then comes from one module per element size. */
    char eb[8];
    snprintf(eb, sizeof eb, "%zu", kj_type_size(type));
    kj_define elem = {"ELEM_BYTES", eb};
    kj__config_call call = {.kernel = "transpose",
                            .entry = variants[v].entry,
                            .fixed = &elem,
                            .fixed_count = 1,
                            .n = (uint64_t)rows * cols,
                            .count = padded ? 3 : 0,
                            .names = {"TILE_DIM", "BLOCK_ROWS", "GROUP"},
                            .given = {o->tile_dim, o->block_rows, o->group},
                            .defaults = {DEFAULT_TILE, default_rows(kj__device_info(rt), type), DEFAULT_GROUP}};
    kj__config cfg;
    KJ_FORWARD(kj__config_resolve(rt, &call, &cfg));
    unsigned tile[2] = {32, 32}, block[2] = {variants[v].block_x, variants[v].block_y};
    if (padded) {
        tile[0] = tile[1] = block[0] = cfg.values[0];
        block[1] = cfg.values[1];
    } else if (v == KJ_TRANSPOSE_VEC) {
        unsigned vec = kj_type_size(type) == 8 ? 2 : 4;
        tile[0] = block[1] * vec;
        tile[1] = block[0] * vec;
    }
    unsigned tiles;
    KJ_FORWARD(kj__transpose_launch(rt, cfg.kernel, tile, block, padded ? cfg.values[2] : 0, in, out, rows, cols,
                                    o->stream, &tiles));
    if (o->report) {
        kj_transpose_report full = {0}, *r = &full;
        kj_kernel_info info = KJ_KERNEL_INFO_INIT;
        KJ_FORWARD(kj_kernel_query(cfg.kernel, &info));
        r->entry = variants[v].entry;
        r->tile[0] = tile[0];
        r->tile[1] = tile[1];
        r->block[0] = block[0];
        r->block[1] = block[1];
        r->grid = tiles;
        r->shared_bytes = info.shared_dynamic_bytes;
        r->origin = cfg.origin;
        r->config_from = cfg.from;
        r->group = padded ? cfg.values[2] : 0;
        KJ__SIZED_WRITE(o->report, full);
    }
    return KJ_OK;
}
