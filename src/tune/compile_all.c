/* kj_compile_all: every variant of a kernel (or of a shard of its space) into the cache, several
 * NVRTC compilations at once. kj_compile is thread-safe and each variant is independent, so the pool's
 * threads call it directly; the calling thread only hears of completions (for progress). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/sized.h"
#include "base/pool.h"
#include "jit/arch.h"
#include "tune/space.h"
#include "base/util.h"

typedef struct job {
    kj_runtime *rt;
    const kj_compile_all_options *o;
    const kj_space *space;
    size_t *todo;      /* the variants to compile (not skipped) */
    kj_status *status; /* per todo item */
    int *cache_hit;
    char **error; /* the failing call's message (kj_last_error is per thread), captured on its own */
    char arch[24];
    kj_compile_all_result *r;
    size_t n, done; /* variants to compile, and compiled so far */
} job;

static void compile_one(size_t i, void *user) {
    job *j = user;
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(j->space, j->todo[i], &v);
    kj_request req = {.size = sizeof req,
                      .kernel = j->o->kernel,
                      .entry = j->o->entry,
                      .defines = v.defines,
                      .define_count = v.define_count,
                      .arch = j->o->arch};
    kj_compile_result res = KJ_COMPILE_RESULT_INIT;
    j->status[i] = kj_compile(j->rt, &req, &res);
    if (j->status[i] == KJ_OK) {
        j->cache_hit[i] = res.origin != KJ_ORIGIN_COMPILED; /* on disk, or fetched from the remote */
        if (i == 0) snprintf(j->arch, sizeof j->arch, "%s", res.arch);
    } else {
        j->error[i] = kj__asprintf("%s", kj_last_error());
    }
}

static void compiled(size_t i, void *user) {
    job *j = user;
    j->done++;
    if (j->status[i] == KJ_OK) {
        if (j->cache_hit[i]) j->r->cached++;
        else j->r->compiled++;
    } else {
        j->r->failed++;
    }
    if (!j->o->progress) return;
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(j->space, j->todo[i], &v);
    const char *outcome = j->status[i] != KJ_OK ? "failed" : j->cache_hit[i] ? "cached" : "compiled";
    kj_progress p = {.phase = KJ_PHASE_COMPILE,
                     .done = j->done,
                     .total = j->n,
                     .variant = v.label,
                     .outcome = outcome,
                     .error = j->status[i] != KJ_OK ? j->error[i] : NULL};
    j->o->progress(&p, j->o->progress_user);
}

/* The variant indices of the shard that are in the space (not skipped by a requirement), in order;
 * the shard's combinations in *variants. */
static size_t shard_todo(const kj_space *space, const kj_compile_all_options *o, size_t *todo, size_t *variants) {
    size_t step = o->shards ? o->shards : 1, k = 0;
    *variants = 0;
    for (size_t i = o->shards ? o->shard : 0; i < kj_space_count(space); i += step) {
        kj_variant v = KJ_VARIANT_INIT;
        kj_space_variant(space, i, &v);
        ++*variants;
        if (!v.skipped) todo[k++] = i;
    }
    return k;
}

kj_status kj_compile_all(kj_runtime *rt, const kj_compile_all_options *o, kj_compile_all_result *result) {
    KJ_RETURN_IF(!rt || !o, KJ_ERR_USAGE, "kj_compile_all: runtime and options are required");
    kj_compile_all_options copy;
    KJ__SIZED_INPUT(o, copy, kj_compile_all_options, KJ_COMPILE_ALL_OPTIONS_INIT);
    KJ_RETURN_IF(!o->kernel, KJ_ERR_USAGE, "kj_compile_all: options->kernel is required");
    KJ_RETURN_IF(o->shards ? o->shard >= o->shards : o->shard != 0, KJ_ERR_USAGE,
                 "kj_compile_all: shard %u of %u shards: the shard must be below shards (0 and 0 for the whole "
                 "space)",
                 o->shard, o->shards);
    if (result) KJ_FORWARD(KJ__SIZED_CHECK(result, kj_compile_all_result, KJ_COMPILE_ALL_RESULT_INIT));
    double t0 = kj__now_ms();
    kj__target target;
    if (o->arch) KJ_FORWARD(kj__arch_for_user(o->arch, &target)); /* once, rather than once per variant */
    kj_space *space;
    KJ_FORWARD(kj_space_create(rt, o->kernel, o->fixed, o->fixed_count, &space));
    kj_compile_all_result r;
    memset(&r, 0, sizeof r);
    size_t most = kj_space_valid_count(space);
    job j = {.rt = rt, .o = o, .space = space, .r = &r};
    j.todo = calloc(most ? most : 1, sizeof *j.todo);
    j.status = calloc(most ? most : 1, sizeof *j.status);
    j.cache_hit = calloc(most ? most : 1, sizeof *j.cache_hit);
    j.error = calloc(most ? most : 1, sizeof *j.error);
    kj_status s = KJ_OK;
    if (!j.todo || !j.status || !j.cache_hit || !j.error) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    size_t n = 0;
    if (s == KJ_OK) {
        n = j.n = shard_todo(space, o, j.todo, &r.variants);
        r.skipped = r.variants - n;
        r.threads = o->threads ? o->threads : kj__pool_default_threads();
        if (r.threads > n) r.threads = n ? (unsigned)n : 1;
        kj__pool_run(r.threads, n, compile_one, compiled, &j);
        r.arch = kj__intern(j.arch[0] ? j.arch : (o->arch ? o->arch : kj_runtime_arch(rt)));
        if (!r.arch) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        r.wall_ms = kj__now_ms() - t0;
        for (size_t i = 0; i < n && s == KJ_OK; i++)
            if (j.status[i] != KJ_OK) {
                kj_variant v = KJ_VARIANT_INIT;
                kj_space_variant(space, j.todo[i], &v);
                /* a kernel without tunables has one variant, with no label */
                s = KJ_FAIL(j.status[i], "%zu of %zu variants of %s failed to compile%s%s: %s", r.failed, n, o->kernel,
                            *v.label ? "; the first, " : "", v.label, j.error[i] ? j.error[i] : "(no message)");
            }
        if (result) KJ__SIZED_WRITE(result, r);
    }
    if (j.error)
        for (size_t i = 0; i < n; i++) free(j.error[i]);
    free(j.error);
    free(j.todo);
    free(j.status);
    free(j.cache_hit);
    kj_space_free(space);
    return s;
}
