/* Host side of kernels_src/vector_add.cu: kj_vector_add picks the entry (16-byte vectors when every
 * pointer allows them) and its BLOCK_SIZE and UNROLL (kj__config_resolve), sizes the grid to the
 * device and launches. */
#include <stdio.h>

#include "ops/ops.h"
#include "ops/vector_add/vector_add.h"

#define DEFAULT_BLOCK 256
#define DEFAULT_UNROLL 4
/* The grid's bound, in waves of the blocks the device holds at once: by default as many blocks as
 * the data has tiles of BLOCK_SIZE x UNROLL vectors (up to 1024 waves), each one pass, so that the
 * multiprocessors that drain their blocks sooner take more of them; measured on the H200 4.29-4.35 TB/s
 * (1 GiB arrays, f32 and f64) against 4.04-4.12 with the grid held to 1 to 4 waves. */
#define DEFAULT_WAVES 1024

/* 16-byte vectors need every pointer on a 16-byte boundary (allocations are; offsets into them may
 * not be). */
static int vectors(kj_devptr a, kj_devptr b, kj_devptr c) { return ((a | b | c) & 15) == 0; }

kj_status kj__vector_add_launch(kj_runtime *rt, kj_kernel *k, kj_type type, unsigned block, unsigned unroll,
                                unsigned waves, kj_devptr a, kj_devptr b, kj_devptr c, size_t n, kj_stream stream,
                                unsigned *grid) {
    *grid = 0;
    if (!n) return KJ_OK;
    uint64_t per_vector = vectors(a, b, c) ? 16 / kj_type_size(type) : 1;
    uint64_t needed = (n / per_vector + (uint64_t)block * unroll - 1) / ((uint64_t)block * unroll);
    int per_sm = 0;
    KJ_FORWARD(kj_kernel_occupancy(k, block, 0, &per_sm));
    const kj_device_info *d = kj__device_info(rt);
    uint64_t wave = (uint64_t)(per_sm > 0 ? per_sm : 1) * (uint64_t)d->sm_count;
    uint64_t most = wave * (waves ? waves : 1);
    uint64_t g = needed < most ? needed : most;
    if (!g) g = 1; /* at least one block: it adds the tail */
    if (g > (uint64_t)d->max_grid_dim[0]) g = (uint64_t)d->max_grid_dim[0];
    unsigned long long count = n;
    void *args[] = {&a, &b, &c, &count};
    kj_launch_config cfg = {.size = sizeof cfg, .grid = {(unsigned)g, 1, 1}, .block = {block, 1, 1}, .stream = stream};
    KJ_FORWARD(kj__kernel_launch(k, &cfg, args));
    *grid = (unsigned)g;
    return KJ_OK;
}

kj_status kj_vector_add(kj_runtime *rt, kj_type type, kj_devptr a, kj_devptr b, kj_devptr c, size_t n,
                        const kj_vector_add_options *o) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_vector_add: runtime is NULL");
    KJ_RETURN_IF(type != KJ_TYPE_F32 && type != KJ_TYPE_F64, KJ_ERR_USAGE,
                 "kj_vector_add: type %s: vector add takes f32 or f64", kj_type_name(type));
    KJ_RETURN_IF(n > SIZE_MAX / kj_type_size(type), KJ_ERR_USAGE,
                 "kj_vector_add: n = %zu %s elements: the byte count overflows size_t", n, kj_type_name(type));
    KJ_RETURN_IF(n && (!a || !b || !c), KJ_ERR_USAGE, "kj_vector_add: a 0 pointer (a %s, b %s, c %s) with n = %zu",
                 a ? "set" : "0", b ? "set" : "0", c ? "set" : "0", n);
    kj_vector_add_options defaults = KJ_VECTOR_ADD_OPTIONS_INIT, copy;
    if (!o) o = &defaults;
    KJ__SIZED_INPUT(o, copy, kj_vector_add_options, KJ_VECTOR_ADD_OPTIONS_INIT);
    if (o->report) KJ_FORWARD(KJ__SIZED_CHECK(o->report, kj_vector_add_report, KJ_VECTOR_ADD_REPORT_INIT));
    KJ_RETURN_IF(o->reserved, KJ_ERR_USAGE, "kj_vector_add_options.reserved is %u: it must be 0",
                 (unsigned)o->reserved);
    KJ_FORWARD(kj__enter(rt));
    const char *entry = vectors(a, b, c) ? "vector_add" : "vector_add_scalar";
    kj_define t = {"T", kj_type_name(type)};
    kj__config_call call = {.kernel = "vector_add",
                            .entry = entry,
                            .fixed = &t,
                            .fixed_count = 1,
                            .n = n,
                            .count = 3,
                            .names = {"BLOCK_SIZE", "UNROLL", "WAVES"},
                            .given = {o->block_size, o->unroll, o->waves},
                            .defaults = {DEFAULT_BLOCK, DEFAULT_UNROLL, DEFAULT_WAVES}};
    kj__config cfg;
    KJ_FORWARD(kj__config_resolve(rt, &call, &cfg));
    unsigned grid;
    KJ_FORWARD(kj__vector_add_launch(rt, cfg.kernel, type, cfg.values[0], cfg.values[1], cfg.values[2], a, b, c, n,
                                     o->stream, &grid));
    if (o->report) {
        kj_vector_add_report full = {0}, *r = &full;
        r->entry = entry;
        r->block_size = cfg.values[0];
        r->unroll = cfg.values[1];
        r->grid = grid;
        r->origin = cfg.origin;
        r->config_from = cfg.from;
        r->waves = cfg.values[2];
        KJ__SIZED_WRITE(o->report, full);
    }
    return KJ_OK;
}
