/* kj_tune: the autotuner. The search space comes from the kernel's metadata (src/tune/space.c); variants
 * are compiled and loaded in parallel (src/base/pool.c, through the cache), checked against the device's
 * limits, then timed one after the other on a stream of their own and verified against the family's
 * CPU reference (a tuning target: ops/ops.h, listed in src/tune/targets.c). The fastest correct variant
 * is timed again and stored in the tuning database (src/tunedb/tunedb.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/sized.h"
#include "base/pool.h"
#include "runtime/context.h"
#include "tune/space.h"
#include "tune/targets.h"
#include "tunedb/tunedb.h"
#include "base/util.h"

#define DEFAULT_SAMPLES 10u
#define MIN_SAMPLES 10u
#define MAX_SAMPLES 100000u
#define REMEASURE_FACTOR 3u
#define RUNOFF_MAX 4          /* variants timed again before the winner is chosen */
#define RUNOFF_WITHIN 1.03    /* ... those within 3% of the sweep's best */
#define BATCH_TARGET_US 200.0 /* short runs are timed in batches that last about this long */
#define MAX_BATCH 200u
#define DEFAULT_SEED 20240601u

/* ---- the result ------------------------------------------------------------------------------ */

/* The public struct first, so that a kj_tune_result * is the box's address. */
typedef struct box {
    kj_tune_result pub;
    kj_space *space;
    kj_tune_variant *variants;
    char **notes;
    char *kernel, *entry, *fixed, *strategy, *db_path;
} box;

void kj_tune_result_free(kj_tune_result *r) {
    if (!r) return;
    box *b = (box *)r;
    if (b->notes) kj__strings_free(b->notes, b->pub.variant_count);
    kj_space_free(b->space);
    kj__free_all(b->variants, b->kernel, b->entry, b->fixed, b->strategy, b->db_path, b);
}

const kj_tune_variant *kj_tune_result_variant(const kj_tune_result *r, size_t index) {
    if (!r || index >= r->variant_count) return NULL;
    return &((const box *)r)->variants[index];
}

/* ---- the tuner's state ----------------------------------------------------------------------- */

typedef struct tuner {
    kj_runtime *rt;
    const kj_tune_options *o;
    const kj__tune_target *target;
    void *tstate;
    box *b;
    kj_space *space;
    size_t count;
    kj_kernel **kernels;    /* per variant, once loaded */
    unsigned char *touched; /* compiled or ruled out: counts against the budget */
    int warmed;             /* the device has run long enough to be at its full clock */
    kj_stream stream;
    kj_event *start, *stop;
    unsigned samples;
    unsigned rotation; /* the running run index: rotates the inputs */
    long best;         /* the fastest measured variant so far, or -1 */
    size_t planned;    /* variants the search means to touch (progress totals) */
    size_t compile_done, measure_done;
    double compile_ms, measure_ms;
    uint64_t rng;
    /* the compile batch in flight */
    const size_t *batch;
    kj_status *bstatus;
    kj_origin *borigin;
    char **berror;
} tuner;

static kj_tune_variant *var(tuner *t, size_t i) { return &t->b->variants[i]; }

static void set_note(tuner *t, size_t i, kj_variant_status status, const char *fmt, ...) KJ_PRINTF(4, 5);
static void set_note(tuner *t, size_t i, kj_variant_status status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    kj_message_vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *copy = kj__strdup(msg);
    if (copy) {
        free(t->b->notes[i]);
        t->b->notes[i] = copy;
        var(t, i)->note = copy;
    }
    var(t, i)->status = status;
}

static void progress(tuner *t, kj_phase phase, size_t done, size_t total, size_t i, const char *outcome) {
    if (!t->o->progress) return;
    kj_progress p = {phase, done, total, var(t, i)->label, outcome, t->best >= 0 ? var(t, t->best)->gbps : 0};
    t->o->progress(&p, t->o->progress_user);
}

/* ---- compiling and loading (parallel) -------------------------------------------------------- */

static void load_one(size_t k, void *user) {
    tuner *t = user;
    size_t i = t->batch[k];
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(t->space, i, &v);
    kj_request req = {.size = sizeof req,
                      .kernel = t->o->kernel,
                      .entry = t->b->entry,
                      .defines = v.defines,
                      .define_count = v.define_count};
    t->bstatus[k] = kj_kernel_get(t->rt, &req, &t->kernels[i], &t->borigin[k]);
    if (t->bstatus[k] != KJ_OK) t->berror[k] = kj__strdup(kj_last_error());
}

static void loaded(size_t k, void *user) {
    tuner *t = user;
    size_t i = t->batch[k];
    const char *outcome;
    if (t->bstatus[k] == KJ_OK) {
        var(t, i)->origin = t->borigin[k];
        outcome = t->borigin[k] == KJ_ORIGIN_COMPILED ? "compiled" : "cached";
        if (t->borigin[k] == KJ_ORIGIN_COMPILED) t->b->pub.compiled++;
        else t->b->pub.cached++;
    } else {
        t->kernels[i] = NULL;
        set_note(t, i, KJ_VARIANT_FAILED, "%s", t->berror[k] ? t->berror[k] : kj_strerror(t->bstatus[k]));
        t->b->pub.failed++;
        outcome = "failed";
    }
    progress(t, KJ_PHASE_COMPILE, ++t->compile_done, t->planned, i, outcome);
}

/* Compiles (or finds) and loads the variants of idx[0..n) in parallel, then checks each against the
 * device's limits. Those that fail or do not fit are marked; the others have t->kernels set. */
static kj_status load_batch(tuner *t, const size_t *idx, size_t n) {
    if (!n) return KJ_OK;
    double t0 = kj__now_ms();
    t->batch = idx;
    t->bstatus = calloc(n, sizeof *t->bstatus);
    t->borigin = calloc(n, sizeof *t->borigin);
    t->berror = calloc(n, sizeof *t->berror);
    if (!t->bstatus || !t->borigin || !t->berror) {
        free(t->bstatus);
        free(t->borigin);
        free(t->berror);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    kj__pool_run(t->b->pub.threads, n, load_one, loaded, t);
    kj__strings_free(t->berror, n);
    free(t->bstatus);
    free(t->borigin);
    t->bstatus = NULL;
    t->borigin = NULL;
    t->berror = NULL;

    const kj_device_info *dev = kj__device_info(t->rt);
    for (size_t k = 0; k < n; k++) {
        size_t i = idx[k];
        kj_kernel *kernel = t->kernels[i];
        if (!kernel) continue;
        kj_variant v = KJ_VARIANT_INIT;
        kj_space_variant(t->space, i, &v);
        kj_kernel_info info = KJ_KERNEL_INFO_INIT;
        kj_kernel_query(kernel, &info);
        var(t, i)->registers = info.num_regs;
        var(t, i)->max_threads = info.max_threads_per_block;
        const char *bs = kj__tune_define(v.defines, v.define_count, "BLOCK_SIZE");
        unsigned threads = t->target->block_threads ? t->target->block_threads(t->tstate, v.defines, v.define_count)
                           : bs                     ? (unsigned)strtoul(bs, NULL, 10)
                                                    : 0;
        unsigned dyn = t->target->dynamic_shared ? t->target->dynamic_shared(t->tstate, v.defines, v.define_count) : 0;
        size_t shared = (size_t)info.shared_static_bytes + dyn;
        int per_sm = 1;
        if (threads > (unsigned)info.max_threads_per_block) {
            set_note(t, i, KJ_VARIANT_SKIPPED,
                     "%u threads per block is above this function's limit of %d (it uses %d registers a thread, of "
                     "%d a block)",
                     threads, info.max_threads_per_block, info.num_regs, dev->regs_per_block);
        } else if (shared > dev->shared_per_block_optin) {
            set_note(t, i, KJ_VARIANT_SKIPPED, "needs %zu bytes of shared memory a block; the device allows %zu",
                     shared, dev->shared_per_block_optin);
        } else if (threads && kj_kernel_occupancy(kernel, threads, dyn, &per_sm) == KJ_OK && per_sm == 0) {
            set_note(t, i, KJ_VARIANT_SKIPPED,
                     "no block of %u threads fits on a multiprocessor (registers, shared memory)", threads);
        } else {
            continue;
        }
        t->kernels[i] = NULL;
        t->b->pub.skipped++;
    }
    t->compile_ms += kj__now_ms() - t0;
    return KJ_OK;
}

/* ---- timing (sequential) --------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct timing {
    double median_us, min_us, max_us;
    unsigned samples, batch;
} timing;

/* The variant's row takes the timing's numbers, and GB/s from them. */
static void record(tuner *t, size_t i, const timing *tm) {
    kj_tune_variant *v = var(t, i);
    v->median_us = tm->median_us;
    v->min_us = tm->min_us;
    v->max_us = tm->max_us;
    v->samples = tm->samples;
    v->batch = tm->batch;
    v->gbps = tm->median_us > 0 ? t->b->pub.bytes_per_run / (tm->median_us * 1e3) : 0;
}

static kj_status run_once(tuner *t, size_t i, const kj_variant *v) {
    KJ_FORWARD(kj__enter(t->rt)); /* what a target's run expects */
    return t->target->run(t->tstate, t->kernels[i], v->defines, v->define_count, t->stream, t->rotation++);
}

static kj_status time_batch(tuner *t, size_t i, const kj_variant *v, unsigned batch, double *us) {
    float ms = 0;
    KJ_FORWARD(kj_event_record(t->start, t->stream));
    for (unsigned r = 0; r < batch; r++) KJ_FORWARD(run_once(t, i, v));
    KJ_FORWARD(kj_event_record(t->stop, t->stream));
    KJ_FORWARD(kj_event_elapsed_ms(t->start, t->stop, &ms));
    *us = ms * 1e3 / batch;
    return KJ_OK;
}

/* A warm variant: one timed run picks the batch, then `samples` batches; the median counts. */
static kj_status time_variant(tuner *t, size_t i, unsigned samples, timing *out) {
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(t->space, i, &v);
    double one;
    KJ_FORWARD(time_batch(t, i, &v, 1, &one));
    unsigned batch = one >= BATCH_TARGET_US               ? 1
                     : one <= BATCH_TARGET_US / MAX_BATCH ? MAX_BATCH
                                                          : (unsigned)(BATCH_TARGET_US / one) + 1;
    double *s = malloc(samples * sizeof *s);
    if (!s) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj_status st = KJ_OK;
    for (unsigned k = 0; k < samples && st == KJ_OK; k++) st = time_batch(t, i, &v, batch, &s[k]);
    if (st == KJ_OK) {
        qsort(s, samples, sizeof *s, cmp_double);
        out->median_us = samples % 2 ? s[samples / 2] : (s[samples / 2 - 1] + s[samples / 2]) / 2;
        out->min_us = s[0];
        out->max_us = s[samples - 1];
        out->samples = samples;
        out->batch = batch;
    }
    free(s);
    return st;
}

/* Whether a failure ends the tuning: out of host memory, or a driver error that left the context
 * unusable (a sticky error: the next synchronization fails too). A launch the driver refused (too
 * many resources) fails only this variant. */
static int fatal(tuner *t, kj_status s) {
    if (s == KJ_ERR_HOST_MEMORY) return 1;
    if (s != KJ_ERR_CUDA && s != KJ_ERR_DEVICE_LAUNCH) return 0;
    char *msg = kj__strdup(kj_last_error());
    int sticky = kj_synchronize(t->rt) != KJ_OK;
    kj__fail(s, __FILE__, __LINE__, "%s", msg ? msg : kj_strerror(s)); /* the original message, not the sync's */
    free(msg);
    return sticky;
}

/* The sweep's best of many is biased low by chance: each median carries noise, and the smallest of
 * dozens of noisy numbers is likely a lucky one. So the variants within RUNOFF_WITHIN of it (at most
 * RUNOFF_MAX, fastest first) run again with REMEASURE_FACTOR times the samples; their table entries
 * then show the runoff's medians, and the smallest median of the table wins. */
static kj_status runoff(tuner *t) {
    size_t cand[RUNOFF_MAX], n = 0;
    double bound = var(t, t->best)->median_us * RUNOFF_WITHIN;
    for (size_t i = 0; i < t->count; i++) {
        const kj_tune_variant *v = var(t, i);
        if (v->status != KJ_VARIANT_MEASURED || v->median_us > bound) continue;
        if (n < RUNOFF_MAX) cand[n++] = i;
        else if (var(t, cand[n - 1])->median_us > v->median_us) cand[n - 1] = i;
        else continue;
        for (size_t k = n - 1; k > 0 && var(t, cand[k - 1])->median_us > var(t, cand[k])->median_us; k--) {
            size_t x = cand[k];
            cand[k] = cand[k - 1];
            cand[k - 1] = x;
        }
    }
    if (n < 2) return KJ_OK;
    long best = -1;
    for (size_t k = 0; k < n; k++) {
        timing tm;
        double t0 = kj__now_ms();
        KJ_FORWARD(time_variant(t, cand[k], t->samples * REMEASURE_FACTOR, &tm));
        t->measure_ms += kj__now_ms() - t0;
        record(t, cand[k], &tm);
    }
    /* the table now mixes runoff and sweep medians: the winner is the smallest of them all (a variant
     * just outside the runoff wins if the re-timed ones all came out slower than it) */
    for (size_t i = 0; i < t->count; i++)
        if (var(t, i)->status == KJ_VARIANT_MEASURED && (best < 0 || var(t, i)->median_us < var(t, best)->median_us))
            best = (long)i;
    t->best = best;
    return KJ_OK;
}

/* Runs the variant once and checks it, warms it up, times it and checks the last result again. */
static kj_status measure(tuner *t, size_t i) {
    if (!t->kernels[i]) return KJ_OK;
    double t0 = kj__now_ms();
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(t->space, i, &v);
    kj_tune_variant *tv = var(t, i);
    timing tm = {0};
    kj_status s = run_once(t, i, &v);
    if (s == KJ_OK) s = kj_stream_synchronize(t->rt, t->stream);
    kj_status check = s == KJ_OK ? t->target->verify(t->tstate) : KJ_OK;
    if (s == KJ_OK && check == KJ_OK) s = run_once(t, i, &v); /* a second warm-up run */
    if (s == KJ_OK && check == KJ_OK) s = time_variant(t, i, t->samples, &tm);
    if (s == KJ_OK && check == KJ_OK) s = kj_stream_synchronize(t->rt, t->stream);
    if (s == KJ_OK && check == KJ_OK) check = t->target->verify(t->tstate);
    const char *outcome;
    char text[64];
    if (s != KJ_OK) {
        if (fatal(t, s)) return s;
        set_note(t, i, KJ_VARIANT_FAILED, "%s", kj_last_error());
        t->b->pub.failed++;
        outcome = "failed";
    } else if (check != KJ_OK) {
        if (fatal(t, check)) return check;
        set_note(t, i, KJ_VARIANT_WRONG, "wrong result: %s", kj_last_error());
        t->b->pub.wrong++;
        outcome = "wrong result";
    } else {
        tv->status = KJ_VARIANT_MEASURED;
        record(t, i, &tm);
        t->b->pub.measured++;
        if (t->best < 0 || tm.median_us < var(t, t->best)->median_us) t->best = (long)i;
        snprintf(text, sizeof text, "%.1f GB/s", tv->gbps);
        outcome = text;
    }
    t->measure_ms += kj__now_ms() - t0;
    progress(t, KJ_PHASE_MEASURE, ++t->measure_done, t->planned, i, outcome);
    return KJ_OK;
}

/* ---- search strategies ----------------------------------------------------------------------- */

/* Whether variant i may be touched: in the space and able to take the problem (marking it skipped,
 * without compiling, when not). */
static int eligible(tuner *t, size_t i) {
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(t->space, i, &v);
    if (v.skipped) return 0;
    if (var(t, i)->status == KJ_VARIANT_SKIPPED) return 0;
    char why[256];
    if (t->target->applicable && t->target->applicable(t->tstate, v.defines, v.define_count, why, sizeof why) != 0) {
        set_note(t, i, KJ_VARIANT_SKIPPED, "%s", why);
        t->b->pub.skipped++;
        return 0;
    }
    return 1;
}

/* An idle GPU runs at a low clock and takes tens of milliseconds to reach its full one; the first
 * variants timed would pay for that (seen on the H100: a whole row of the table at a fifth of its
 * speed). So before the first timing, a loaded variant runs for WARM_MS. */
#define WARM_MS 50.0
static kj_status warm_device(tuner *t, const size_t *todo, size_t m) {
    if (t->warmed) return KJ_OK;
    for (size_t k = 0; k < m; k++) {
        if (!t->kernels[todo[k]]) continue;
        kj_variant v = KJ_VARIANT_INIT;
        kj_space_variant(t->space, todo[k], &v);
        double t0 = kj__now_ms();
        kj_status s = KJ_OK;
        for (int r = 0; r < 100000 && s == KJ_OK && kj__now_ms() - t0 < WARM_MS; r++) {
            s = run_once(t, todo[k], &v);
            if (s == KJ_OK && r % 16 == 15) s = kj_stream_synchronize(t->rt, t->stream);
        }
        if (s == KJ_OK) s = kj_stream_synchronize(t->rt, t->stream);
        /* a variant that fails here fails again when measured, which says why; only a sticky error
         * of the context stops the tune */
        if (s != KJ_OK && fatal(t, s)) return s;
        t->warmed = 1;
        return KJ_OK;
    }
    return KJ_OK;
}

/* Touches the candidates not touched yet, at most `room` of them: compiles them together, then
 * times each. Returns how many it touched in *used. */
static kj_status try_variants(tuner *t, const size_t *cand, size_t n, size_t room, size_t *used) {
    size_t *todo = malloc((n ? n : 1) * sizeof *todo), m = 0;
    if (!todo) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t k = 0; k < n && m < room; k++) {
        size_t i = cand[k];
        if (t->touched[i] || !eligible(t, i)) continue;
        t->touched[i] = 1;
        var(t, i)->status = KJ_VARIANT_FAILED; /* until measured */
        todo[m++] = i;
    }
    kj_status s = load_batch(t, todo, m);
    if (s == KJ_OK) s = warm_device(t, todo, m);
    for (size_t k = 0; k < m && s == KJ_OK; k++) s = measure(t, todo[k]);
    free(todo);
    *used = m;
    return s;
}

static kj_status exhaustive(tuner *t) {
    size_t *all = malloc(t->count * sizeof *all), n = 0;
    if (!all) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < t->count; i++)
        if (eligible(t, i)) all[n++] = i;
    t->planned = n;
    size_t used;
    kj_status s = try_variants(t, all, n, n, &used);
    free(all);
    return s;
}

static int better(tuner *t, size_t a, long than) {
    if (var(t, a)->status != KJ_VARIANT_MEASURED) return 0;
    return than < 0 || var(t, than)->status != KJ_VARIANT_MEASURED || var(t, a)->median_us < var(t, than)->median_us;
}

/* The variant whose every dimension is at the macro's default, or -1 when that one is not eligible. */
static long default_variant(tuner *t) {
    size_t dims = kj_space_dim_count(t->space);
    size_t *coords = calloc(dims ? dims : 1, sizeof *coords);
    if (!coords) return -1;
    const kj__spec *spec = kj__space_spec(t->space);
    for (size_t d = 0; d < dims; d++) {
        const kj__param *p = kj__spec_find_param(spec, kj_space_dim_name(t->space, d));
        for (size_t v = 0; p && v < kj_space_dim_size(t->space, d); v++)
            if (strcmp(kj_space_dim_value(t->space, d, v), p->default_value) == 0) coords[d] = v;
    }
    size_t i = kj__space_index(t->space, coords);
    free(coords);
    return eligible(t, i) ? (long)i : -1;
}

/* An untouched eligible variant at random, or -1 when none is left. */
static long random_untouched(tuner *t) {
    size_t left = 0;
    for (size_t i = 0; i < t->count; i++) left += !t->touched[i] && eligible(t, i);
    if (!left) return -1;
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    size_t pick = (size_t)(t->rng % left);
    for (size_t i = 0; i < t->count; i++)
        if (!t->touched[i] && eligible(t, i) && pick-- == 0) return (long)i;
    return -1;
}

/* Greedy coordinate descent: from the current point, time every value of one dimension with the
 * others held, move to the best, go on to the next dimension; when a whole pass over the dimensions
 * moves nowhere (a local optimum), start again from a random untouched variant. Stops when the
 * budget is spent or nothing is left. Lines are compiled together, so parallelism helps here too. */
static kj_status greedy(tuner *t, size_t budget) {
    size_t dims = kj_space_dim_count(t->space), used = 0, got;
    size_t eligible_count = 0;
    for (size_t i = 0; i < t->count; i++) eligible_count += eligible(t, i);
    t->planned = budget < eligible_count ? budget : eligible_count;
    size_t *line = malloc((t->count ? t->count : 1) * sizeof *line);
    size_t *coords = malloc((dims ? dims : 1) * sizeof *coords);
    if (!line || !coords) {
        free(line);
        free(coords);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    kj_status s = KJ_OK;
    long current = default_variant(t);
    if (current < 0) current = random_untouched(t);
    while (s == KJ_OK && current >= 0 && used < budget) {
        size_t start = (size_t)current;
        s = try_variants(t, &start, 1, budget - used, &got);
        used += got;
        if (var(t, start)->status != KJ_VARIANT_MEASURED) {
            current = random_untouched(t);
            continue;
        }
        int moved = 1;
        while (s == KJ_OK && moved && used < budget) {
            moved = 0;
            for (size_t d = 0; d < dims && s == KJ_OK && used < budget; d++) {
                kj_variant v = KJ_VARIANT_INIT;
                kj_space_variant(t->space, (size_t)current, &v);
                memcpy(coords, v.coords, dims * sizeof *coords);
                size_t here = coords[d], size = kj_space_dim_size(t->space, d), n = 0;
                /* nearest values first: when the budget cuts the line short, the neighbours count most */
                for (size_t dist = 1; dist < size; dist++) {
                    if (here >= dist) {
                        coords[d] = here - dist;
                        line[n++] = kj__space_index(t->space, coords);
                    }
                    if (here + dist < size) {
                        coords[d] = here + dist;
                        line[n++] = kj__space_index(t->space, coords);
                    }
                }
                s = try_variants(t, line, n, budget - used, &got);
                used += got;
                for (size_t k = 0; k < n; k++)
                    if (better(t, line[k], current)) {
                        current = (long)line[k];
                        moved = 1;
                    }
            }
        }
        current = random_untouched(t);
    }
    free(line);
    free(coords);
    return s;
}

/* ---- kj_tune --------------------------------------------------------------------------------- */

static const kj__tune_target *find_target(const char *kernel) {
    for (size_t i = 0; kj__tune_targets[i]; i++)
        if (strcmp(kj__tune_targets[i]->kernel, kernel) == 0) return kj__tune_targets[i];
    return NULL;
}

static kj_status no_target(const char *kernel) {
    kj__buf b = {0};
    for (size_t i = 0; kj__tune_targets[i]; i++) kj__buf_printf(&b, "%s%s", i ? ", " : "", kj__tune_targets[i]->kernel);
    kj_status s = KJ_FAIL(KJ_ERR_UNSUPPORTED,
                          "%.100s has no tuning target (the host code that runs and checks it): the kernels that can "
                          "be tuned are %s; `kernjit compile %.100s --all` still builds its variants",
                          kernel, b.data ? b.data : "", kernel);
    kj__buf_free(&b);
    return s;
}

static kj_status check_options(kj_runtime *rt, const kj_tune_options *o) {
    KJ_RETURN_IF(!rt || !o || !o->kernel, KJ_ERR_USAGE, "kj_tune: runtime, options and options->kernel are required");
    KJ_RETURN_IF(o->samples && (o->samples < MIN_SAMPLES || o->samples > MAX_SAMPLES), KJ_ERR_USAGE,
                 "samples = %u: a median of %u to %u samples is taken", o->samples, MIN_SAMPLES, MAX_SAMPLES);
    KJ_RETURN_IF(o->fixed_count && !o->fixed, KJ_ERR_USAGE, "fixed_count is %zu but fixed is NULL", o->fixed_count);
    return KJ_OK;
}

/* After every check of the request itself, so that a wrong request is named as such with or
 * without a device. */
static kj_status check_device(kj_runtime *rt, const kj_tune_options *o) {
    KJ_RETURN_IF(!kj__has_device(rt), KJ_ERR_NO_DEVICE,
                 "no CUDA device: tuning times kernels on one (`kernjit compile %.100s --all` builds the variants "
                 "without a device)",
                 o->kernel);
    return KJ_OK;
}

static kj_status make_box(tuner *t, const char *entry) {
    box *b = calloc(1, sizeof *b);
    if (!b) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    t->b = b;
    b->space = t->space; /* owned by the result from here on */
    b->pub.space = t->space;
    b->variants = calloc(t->count ? t->count : 1, sizeof *b->variants);
    b->notes = calloc(t->count ? t->count : 1, sizeof *b->notes);
    b->kernel = kj__strdup(t->target->kernel);
    b->entry = kj__strdup(entry);
    b->fixed = kj__strdup(kj__space_fixed(t->space));
    if (!b->variants || !b->notes || !b->kernel || !b->entry || !b->fixed)
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    b->pub.variant_count = t->count;
    b->pub.kernel = b->kernel;
    b->pub.entry = b->entry;
    b->pub.fixed = b->fixed;
    for (size_t i = 0; i < t->count; i++) {
        kj_variant v = KJ_VARIANT_INIT;
        kj_space_variant(t->space, i, &v);
        kj_tune_variant *tv = &b->variants[i];
        tv->label = v.label;
        tv->note = "";
        tv->status = KJ_VARIANT_NOT_TRIED;
        tv->origin = KJ_ORIGIN_COMPILED;
        if (v.skipped) {
            tv->status = KJ_VARIANT_SKIPPED;
            tv->note = v.skipped;
            b->pub.skipped++;
        }
    }
    return KJ_OK;
}

/* The problem's fixed macros for the target: a variant's macros that are not dimensions. */
static void problem_fixed(tuner *t, kj_define **out, size_t *count) {
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(t->space, 0, &v);
    *out = malloc((v.define_count ? v.define_count : 1) * sizeof **out);
    *count = 0;
    if (!*out) return;
    for (size_t i = 0; i < v.define_count; i++) {
        int dim = 0;
        for (size_t d = 0; d < kj_space_dim_count(t->space); d++)
            dim |= strcmp(kj_space_dim_name(t->space, d), v.defines[i].name) == 0;
        if (!dim) (*out)[(*count)++] = v.defines[i];
    }
}

/* Whether a variant's label ("BLOCK_SIZE=32 COARSE_FACTOR=1 WAVES=1") is the variant a record's values
 * name: each of the label's values is the record's, or, where the record has none (it predates that
 * tunable), the metadata's default, as the families read such a record. */
static int label_is(const tuner *t, const char *label, const char *values) {
    const kj__spec *spec = kj__space_spec(t->space);
    for (const char *p = label; *p;) {
        size_t len = strcspn(p, " "), eq = strcspn(p, "=");
        if (eq < len) {
            char name[KJ_TUNEDB_MAX_LINE], mine[KJ_TUNEDB_MAX_LINE], theirs[KJ_TUNEDB_MAX_LINE];
            snprintf(name, sizeof name, "%.*s", (int)eq, p);
            snprintf(mine, sizeof mine, "%.*s", (int)(len - eq - 1), p + eq + 1);
            const kj__param *param = kj__spec_find_param(spec, name);
            const char *want = kj__tunedb_value(values, name, theirs, sizeof theirs) == 0 ? theirs
                               : param                                                    ? param->default_value
                                                                                          : NULL;
            if (!want || strcmp(want, mine) != 0) return 0;
        }
        p += len;
        while (*p == ' ') p++;
    }
    return 1;
}

/* What this run measured of a variant (its label), the evidence against a stored record that claims
 * far more (kj__tunedb_replaces): the winner's re-measured GB/s, a correct variant's median, 0 for one
 * that failed, was wrong or could not run here; -1 for one the run did not try. */
static double measured_gbps(const char *values, void *user) {
    tuner *t = user;
    const kj_tune_result *r = &t->b->pub;
    for (size_t i = 0; i < t->count; i++) {
        const kj_tune_variant *v = var(t, i);
        if (!label_is(t, v->label, values)) continue;
        if (i == r->best) return r->remeasured_gbps;
        return v->status == KJ_VARIANT_MEASURED ? v->gbps : v->status == KJ_VARIANT_NOT_TRIED ? -1 : 0;
    }
    return -1;
}

static void store(tuner *t) {
    kj_tune_result *r = &t->b->pub;
    const char *dir = kj_cache_dir(t->rt);
    const char *path = kj_tune_db_path(t->rt);
    if (path) t->b->db_path = kj__strdup(path);
    r->db_path = t->b->db_path;
    if (t->o->dry_run || !dir || !*var(t, r->best)->label) return;
    char device[256];
    kj__tunedb_device_name(kj__device_info(t->rt)->name, device);
    kj__tuned_rec rec = {.kernel = t->b->kernel,
                         .entry = t->b->entry,
                         .fixed = t->b->fixed,
                         .bucket = r->bucket,
                         .device = device,
                         .cc_major = kj__device_info(t->rt)->cc_major,
                         .cc_minor = kj__device_info(t->rt)->cc_minor,
                         .target = (char *)kj__tuned_target(t->rt),
                         .version = (char *)kj_version_string(),
                         .values = (char *)var(t, r->best)->label,
                         .gbps = r->remeasured_gbps,
                         .us = r->remeasured_us,
                         .n = r->n,
                         .time = (int64_t)time(NULL)};
    kj__tunedb_measured measured = {measured_gbps, t};
    if (kj__tuned_store(t->rt, &rec, &measured) == KJ_OK) r->stored = 1;
    else kj__log(kj__runtime_log(t->rt), KJ_LOG_WARN, "the tuning result was not stored: %s", kj_last_error());
}

static kj_status tune(tuner *t, const kj_tune_options *o) {
    kj_runtime *rt = t->rt;
    const char *entry = o->entry ? o->entry : t->target->default_entry;
    const char *const *pin = t->target->unused_tunables ? t->target->unused_tunables(entry) : NULL;
    KJ_FORWARD(kj__space_create(rt, o->kernel, o->fixed, o->fixed_count, pin, 1, 1, &t->space));
    const kj__spec *spec = kj__space_spec(t->space);
    if (spec->present && !kj__spec_has_entry(spec, entry)) {
        char *list = kj__spec_entry_list(spec);
        kj_status s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "unknown entry '%.100s' for %s: its entries are %s", entry,
                              o->kernel, list ? list : "");
        free(list);
        return s;
    }
    KJ_FORWARD(check_device(rt, o));
    t->count = kj_space_count(t->space);
    KJ_FORWARD(make_box(t, entry));
    kj_tune_result *r = &t->b->pub;
    r->n = o->n ? o->n : t->target->default_n;
    r->bucket = kj__tunedb_bucket(r->n);
    r->threads = o->threads ? o->threads : kj__pool_default_threads();
    r->device = kj__device_info(rt)->name;
    r->cc_major = kj__device_info(rt)->cc_major;
    r->cc_minor = kj__device_info(rt)->cc_minor;
    t->samples = o->samples ? o->samples : DEFAULT_SAMPLES;
    t->best = -1;
    t->rng = o->seed ? o->seed : DEFAULT_SEED;
    t->kernels = calloc(t->count ? t->count : 1, sizeof *t->kernels);
    t->touched = calloc(t->count ? t->count : 1, 1);
    if (!t->kernels || !t->touched) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");

    kj_define *fixed;
    size_t fixed_count;
    problem_fixed(t, &fixed, &fixed_count);
    if (!fixed) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj__tune_problem problem = {rt, entry, fixed, fixed_count, r->n, o->seed ? o->seed : DEFAULT_SEED};
    t->tstate = calloc(1, t->target->state_size);
    kj_status s = t->tstate ? t->target->setup(&problem, t->tstate) : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    free(fixed);
    KJ_FORWARD(s);
    r->bytes_per_run = t->target->bytes_per_run(t->tstate);
    KJ_FORWARD(kj_stream_create(rt, &t->stream));
    KJ_FORWARD(kj_event_create(rt, &t->start));
    KJ_FORWARD(kj_event_create(rt, &t->stop));

    int budgeted = o->budget && o->budget < kj_space_valid_count(t->space);
    char *strategy = budgeted ? kj__asprintf("greedy + random restarts, budget %zu", o->budget)
                              : kj__strdup("exhaustive");
    if (!strategy) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    t->b->strategy = strategy;
    r->strategy = strategy;
    KJ_FORWARD(budgeted ? greedy(t, o->budget) : exhaustive(t));
    for (size_t i = 0; i < t->count; i++) r->not_tried += var(t, i)->status == KJ_VARIANT_NOT_TRIED;
    r->compile_ms = t->compile_ms;
    r->measure_ms = t->measure_ms;

    if (t->best < 0) {
        const kj_tune_variant *example = NULL;
        for (size_t i = 0; i < t->count && !example; i++)
            if (var(t, i)->status == KJ_VARIANT_FAILED || var(t, i)->status == KJ_VARIANT_WRONG) example = var(t, i);
        for (size_t i = 0; i < t->count && !example; i++)
            if (var(t, i)->status == KJ_VARIANT_SKIPPED) example = var(t, i);
        return KJ_FAIL(
            KJ_ERR_NOT_FOUND,
            "no variant of %s %s ran correctly: of %zu, %zu skipped, %zu failed, %zu wrong, %zu not tried%s%s%s%s",
            o->kernel, entry, t->count, r->skipped, r->failed, r->wrong, r->not_tried, example ? "; for example " : "",
            example ? example->label : "", example ? ": " : "", example ? example->note : "");
    }
    KJ_FORWARD(runoff(t));
    r->best = (size_t)t->best;
    r->best_us = var(t, r->best)->median_us;
    r->best_gbps = var(t, r->best)->gbps;

    /* the winner again, with more samples: the sweep's best of many is biased low by chance */
    double t0 = kj__now_ms();
    timing tm;
    KJ_FORWARD(time_variant(t, r->best, t->samples * REMEASURE_FACTOR, &tm));
    KJ_FORWARD(kj_stream_synchronize(rt, t->stream));
    KJ_FORWARD(t->target->verify(t->tstate));
    t->measure_ms += kj__now_ms() - t0;
    r->measure_ms = t->measure_ms;
    r->remeasured_us = tm.median_us;
    r->remeasured_gbps = tm.median_us > 0 ? r->bytes_per_run / (tm.median_us * 1e3) : 0;
    r->remeasured_samples = tm.samples;
    char text[64];
    snprintf(text, sizeof text, "%.1f GB/s", r->remeasured_gbps);
    progress(t, KJ_PHASE_REMEASURE, 1, 1, r->best, text);
    store(t);
    return KJ_OK;
}

kj_status kj_tune(kj_runtime *rt, const kj_tune_options *o, kj_tune_result **out) {
    KJ_RETURN_IF(!out || !o, KJ_ERR_USAGE, "kj_tune: options and out are required");
    kj_tune_options copy;
    KJ__SIZED_INPUT(o, copy, kj_tune_options, KJ_TUNE_OPTIONS_INIT);
    KJ_FORWARD(check_options(rt, o));
    const kj__tune_target *target = find_target(o->kernel);
    if (!target) return no_target(o->kernel);
    /* variants that fail set this thread's message; a successful call must leave it as it was */
    char *saved = kj__strdup(kj_last_error());
    double t0 = kj__now_ms();
    tuner t = {.rt = rt, .o = o, .target = target};
    kj_status s = tune(&t, o);
    if (t.stream) {
        kj_stream_synchronize(rt, t.stream);
        kj_stream_destroy(rt, t.stream);
    }
    kj_event_destroy(t.start);
    kj_event_destroy(t.stop);
    if (t.tstate) target->teardown(t.tstate);
    free(t.tstate);
    free(t.kernels);
    free(t.touched);
    if (s != KJ_OK) {
        if (t.b) kj_tune_result_free(&t.b->pub);
        else kj_space_free(t.space);
        free(saved);
        return s;
    }
    t.b->pub.total_ms = kj__now_ms() - t0;
    if (saved && strcmp(saved, kj_last_error()) != 0) kj__fail(KJ_OK, __FILE__, __LINE__, "%s", saved);
    free(saved);
    *out = &t.b->pub;
    return KJ_OK;
}
