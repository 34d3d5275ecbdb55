/* Host side of kernels_src/vector_add.cu: kj_vector_add picks the entry (16-byte vectors when every
 * pointer allows them) and its BLOCK_SIZE and UNROLL (the caller's, else the tuning database's, else
 * the defaults), sizes the grid to the device and launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernjit/ops.h"
#include "base/error.h"
#include "runtime/runtime.h"
#include "tunedb/tunedb.h"

#define DEFAULT_BLOCK 256
#define DEFAULT_UNROLL 4
/* Grid-stride blocks per slot the device holds at once: a whole number of full waves keeps every
 * multiprocessor busy to the end (a partial last wave would leave most of them idle while it runs),
 * and several waves let a multiprocessor that runs ahead take more of the work. */
#define WAVES 4

/* Blocks of `block` threads one multiprocessor holds at once (the runtime caches the answer). */
static kj_status resident_per_sm(kj_kernel *k, unsigned block, unsigned *out) {
    int n = 0;
    KJ_FORWARD(kj_kernel_occupancy(k, block, 0, &n));
    *out = n > 0 ? (unsigned)n : 1;
    return KJ_OK;
}

/* The tuning database's BLOCK_SIZE and UNROLL for this entry, type and size (the in-memory copy
 * only). A tuned pair is used whole: values that are not plain numbers mean the defaults apply. */
static int tuned(kj_runtime *rt, const char *entry, kj_type type, size_t n, unsigned *block, unsigned *unroll) {
    char fixed[32], values[256];
    snprintf(fixed, sizeof fixed, "T=%s", kj_type_name(type));
    if (!n || !kj__tuned_find(rt, "vector_add", entry, fixed, n, values, sizeof values)) return 0;
    unsigned x, y;
    if (kj__tunedb_uint(values, "BLOCK_SIZE", 1024, &x) != 0 || kj__tunedb_uint(values, "UNROLL", 1024, &y) != 0)
        return 0;
    *block = x;
    *unroll = y;
    return 1;
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
    kj_vector_add_options defaults = {0};
    if (!o) o = &defaults;
    KJ_FORWARD(kj__enter(rt));
    /* 16-byte vectors need every pointer on a 16-byte boundary (allocations are; offsets into them
     * may not be). */
    int vectors = ((a | b | c) & 15) == 0;
    const char *entry = vectors ? "vector_add" : "vector_add_scalar";
    unsigned block = DEFAULT_BLOCK, unroll = DEFAULT_UNROLL;
    const char *from = "default";
    if (o->block_size || o->unroll) {
        from = "explicit"; /* what the caller gives wins; the rest stays at the default */
        if (o->block_size) block = o->block_size;
        if (o->unroll) unroll = o->unroll;
    } else if (tuned(rt, entry, type, n, &block, &unroll)) {
        from = "tuned";
    }

    char bs[16], us[16];
    snprintf(bs, sizeof bs, "%u", block);
    snprintf(us, sizeof us, "%u", unroll);
    kj_define defs[] = {{"T", kj_type_name(type)}, {"BLOCK_SIZE", bs}, {"UNROLL", us}};
    kj_request req = {.kernel = "vector_add", .entry = entry, .defines = defs, .define_count = 3};
    kj_kernel *k;
    kj_origin origin;
    kj_status got = kj_kernel_get(rt, &req, &k, &origin);
    if (got != KJ_OK && strcmp(from, "tuned") == 0 && got == KJ_ERR_INVALID_DEFINE) {
        /* a hand-edited database, or metadata changed since: the defaults still work */
        kj__log(&rt->log, KJ_LOG_WARN, "the tuning database's BLOCK_SIZE=%u UNROLL=%u for %s cannot be used (%s); "
                "using the defaults", block, unroll, entry, kj_last_error());
        block = DEFAULT_BLOCK;
        unroll = DEFAULT_UNROLL;
        snprintf(bs, sizeof bs, "%u", block);
        snprintf(us, sizeof us, "%u", unroll);
        from = "default";
        got = kj_kernel_get(rt, &req, &k, &origin);
    }
    KJ_FORWARD(got);

    uint64_t grid = 0;
    if (n) {
        uint64_t per_vector = vectors ? 16 / kj_type_size(type) : 1;
        uint64_t units = n / per_vector;
        uint64_t needed = (units + (uint64_t)block * unroll - 1) / ((uint64_t)block * unroll);
        unsigned per_sm;
        KJ_FORWARD(resident_per_sm(k, block, &per_sm));
        uint64_t wave = (uint64_t)per_sm * (uint64_t)rt->info.sm_count;
        if (needed <= wave) grid = needed ? needed : 1; /* at least one block: it adds the tail */
        else grid = wave * (needed / wave < WAVES ? needed / wave : WAVES);
        if (grid > (uint64_t)rt->info.max_grid_dim[0]) grid = (uint64_t)rt->info.max_grid_dim[0];
        unsigned long long count = n;
        void *args[] = {&a, &b, &c, &count};
        kj_launch_config cfg = {{(unsigned)grid, 1, 1}, {block, 1, 1}, 0, o->stream, 0};
        KJ_FORWARD(kj_kernel_launch(k, &cfg, args));
    }
    if (o->report) {
        kj_vector_add_report *r = o->report;
        snprintf(r->entry, sizeof r->entry, "%s", entry);
        r->block_size = block;
        r->unroll = unroll;
        r->grid = (unsigned)grid;
        r->origin = origin;
        r->config_from = from;
    }
    return KJ_OK;
}
