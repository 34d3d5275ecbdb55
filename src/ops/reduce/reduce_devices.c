/* kj_reduce_devices: one reduction over data split across devices. Every part is launched before any
 * is waited for, so the devices work at once. Each part's kernel writes its partial straight into
 * page-locked host memory, and a marker event recorded after it says when it is there, so that
 * nothing is copied back and one loop polls every part's event, whichever finishes first; the
 * partials are then combined on the host in the order of the parts, by the CPU reference's rules, so
 * the result does not depend on which device finished first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/ops.h"
#include "ops/reduce/reduce.h"
#include "ops/reduce/reduce_cpu.h"

/* Each (runtime, stream) pair's partial lands in host memory of its own, kept per stream as the
 * reduction's workspace is, with the marker that says when it is there. */
static const kj__state_key partials_key = KJ__HOST_LANES;
#define PARTIAL_BYTES 16

static kj_stream stream_of(const kj_stream *streams, size_t i) { return streams ? streams[i] : NULL; }

/* Every argument, before any part is launched: no (runtime, stream) pair twice (their partials
 * would share a buffer), and a device behind every runtime. */
static kj_status check_args(kj_runtime *const *rts, const kj_devptr *parts, const size_t *counts, size_t n, kj_op op,
                            kj_type type, const void *result, const kj_stream *streams) {
    KJ_RETURN_IF(n == 0, KJ_ERR_USAGE, "kj_reduce_devices: no parts (n = 0): give one part per device at least");
    KJ_RETURN_IF(!rts || !parts || !counts, KJ_ERR_USAGE, "kj_reduce_devices: %s is NULL with n = %zu parts",
                 !rts     ? "rts"
                 : !parts ? "parts"
                          : "counts",
                 n);
    KJ_RETURN_IF(!result, KJ_ERR_USAGE, "kj_reduce_devices: result is NULL");
    KJ_RETURN_IF((unsigned)op >= KJ_OP_COUNT_, KJ_ERR_USAGE, "kj_reduce_devices: operator %d is not a kj_op (0 to 3)",
                 (int)op);
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE,
                 "kj_reduce_devices: type %d is not a kj_type (0 to %d)", (int)type, KJ_TYPE_COUNT_ - 1);
    for (size_t i = 0; i < n; i++) {
        KJ_RETURN_IF(!rts[i], KJ_ERR_USAGE, "kj_reduce_devices: runtime %zu is NULL", i);
        KJ_RETURN_IF(!kj_runtime_has_device(rts[i]), KJ_ERR_NO_DEVICE,
                     "kj_reduce_devices: runtime %zu is compile-only: every part needs a runtime on a device", i);
        for (size_t j = 0; j < i; j++)
            KJ_RETURN_IF(rts[j] == rts[i] && stream_of(streams, j) == stream_of(streams, i), KJ_ERR_USAGE,
                         "kj_reduce_devices: parts %zu and %zu have the same runtime and stream: give each part a "
                         "runtime (one per device) or a stream of its own",
                         j, i);
    }
    return KJ_OK;
}

/* A part: not launched; launched, but its marker not recorded (its stream is then waited for);
 * launched and marked; done (finished or failed). */
typedef enum { NOT_LAUNCHED, LAUNCHED, MARKED, DONE } part_state;

typedef struct part {
    kj__lane *lane;
    part_state state;
} part;

/* The call's first failure, the one it reports, its message led by the part and its device (a later
 * one is the same fault seen again, or follows from it). */
typedef struct failure {
    kj_status status;
    char why[KJ__MESSAGE_MAX];
} failure;

static void note(failure *f, kj_status s, kj_runtime *rt, size_t i) {
    if (f->status != KJ_OK) return;
    f->status = s;
    snprintf(f->why, sizeof f->why, "kj_reduce_devices: part %zu (device %d): %s", i, kj__device_info(rt)->ordinal,
             kj_last_error());
}

/* Launches part i: its reduction into its lane's host memory, then the lane's marker. */
static kj_status launch_part(kj_runtime *rt, kj_devptr input, size_t count, kj_op op, kj_type type, kj_stream stream,
                             part *p) {
    KJ_FORWARD(kj__lane_get(rt, &partials_key, stream, PARTIAL_BYTES, &p->lane));
    kj_reduce_options o = {.size = sizeof o, .stream = stream};
    KJ_FORWARD(kj_reduce_async(rt, op, type, input, count, p->lane->buffer, &o));
    p->state = LAUNCHED;
    KJ_FORWARD(kj_event_record(p->lane->done, stream));
    p->state = MARKED;
    return KJ_OK;
}

/* Whether a launched part is done: its marker (no context switch), else its stream. */
static kj_status part_done(kj_runtime *rt, kj_stream stream, const part *p, int *done) {
    static const char what[] = "the part's reduction failed";
    return p->state == MARKED ? kj__event_done(p->lane->done, what, done) : kj__stream_done(rt, stream, what, done);
}

/* Waits until every launched part is done, asking each in every round (they finish in any order). A
 * part that fails is done, its failure noted; the others are still waited for, so that no input is
 * in use once the call returns. After KJ__REDUCE_WAIT_LIMIT_MS the wait gives up, and says so. */
static void wait_parts(kj_runtime *const *rts, const kj_stream *streams, part *parts, size_t n, failure *f) {
    double start = kj__now_ms();
    for (;;) {
        size_t left = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
            if (parts[i].state != LAUNCHED && parts[i].state != MARKED) continue;
            int done = 0;
            kj_status s = part_done(rts[i], stream_of(streams, i), &parts[i], &done);
            if (s != KJ_OK) note(f, s, rts[i], i);
            if (s != KJ_OK || done) parts[i].state = DONE;
            else if (left++ == 0) first = i;
        }
        if (!left) return;
        double waited = kj__now_ms() - start;
        if (waited > KJ__REDUCE_WAIT_LIMIT_MS) {
            kj_status s = KJ_FAIL(KJ_ERR_CUDA,
                                  "not done after %.0f s (work queued before it on its stream may never end); it and "
                                  "%zu other part(s) are still queued: their inputs stay in use until their streams "
                                  "are done",
                                  KJ__REDUCE_WAIT_LIMIT_MS / 1000, left - 1);
            note(f, s, rts[first], first);
            return;
        }
        if (waited > KJ__SPIN_MS) nanosleep(&(struct timespec){0, KJ__PAUSE_NS}, NULL);
    }
}

kj_status kj_reduce_devices(kj_runtime *const *rts, const kj_devptr *parts, const size_t *counts, size_t n, kj_op op,
                            kj_type type, void *result, const kj_stream *streams) {
    KJ_FORWARD(check_args(rts, parts, counts, n, op, type, result, streams));
    size_t bytes = kj_result_size(type);
    part *ps = calloc(n, sizeof *ps);
    unsigned char *partials = calloc(n, bytes); /* side by side: the reference reads them as an array */
    if (!ps || !partials) {
        free(ps);
        free(partials);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "kj_reduce_devices: out of memory for %zu parts", n);
    }
    failure f;
    f.status = KJ_OK;
    for (size_t i = 0; i < n && f.status == KJ_OK; i++) {
        kj_status s = launch_part(rts[i], parts[i], counts[i], op, type, stream_of(streams, i), &ps[i]);
        if (s != KJ_OK) note(&f, s, rts[i], i);
    }
    wait_parts(rts, streams, ps, n, &f);
    if (f.status == KJ_OK) {
        for (size_t i = 0; i < n; i++) memcpy(partials + i * bytes, ps[i].lane->host, bytes);
        /* An f16 or bf16 reduction's partials are floats: combined as f32 values. */
        kj__reduce_reference(op, kj__reduce_acc_type(type), partials, n, result, NULL);
    }
    free(ps);
    free(partials);
    return f.status == KJ_OK ? KJ_OK : KJ_FAIL(f.status, "%s", f.why);
}
