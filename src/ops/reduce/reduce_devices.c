/* kj_reduce_devices: one reduction over data split across devices. Every part is launched before any
 * is waited for, so the devices work at once; the partials are combined on the host in the order of
 * the parts, by the CPU reference's rules, so the result does not depend on which device finished
 * first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/reduce/reduce_cpu.h"

/* Each (runtime, stream) pair's partial lands in a buffer of its own, kept per stream as the
 * reduction's workspace is. */
static const kj__state_key partials_key = KJ__LANES;
#define PARTIAL_BYTES 16

static kj_stream stream_of(const kj_stream *streams, size_t i) { return streams ? streams[i] : NULL; }

/* Every argument, before any part is launched: no (runtime, stream) pair twice (their partials
 * would share a buffer), and a device behind every runtime. */
static kj_status check_args(kj_runtime *const *rts, const kj_devptr *parts, const size_t *counts, size_t n, kj_op op,
                            kj_type type, const void *result, const kj_stream *streams) {
    KJ_RETURN_IF(n == 0, KJ_ERR_USAGE, "kj_reduce_devices: no parts (n = 0): give one part per device at least");
    KJ_RETURN_IF(!rts || !parts || !counts, KJ_ERR_USAGE, "kj_reduce_devices: %s is NULL with n = %zu parts",
                 !rts ? "rts" : !parts ? "parts" : "counts", n);
    KJ_RETURN_IF(!result, KJ_ERR_USAGE, "kj_reduce_devices: result is NULL");
    KJ_RETURN_IF((unsigned)op >= KJ_OP_COUNT_, KJ_ERR_USAGE, "kj_reduce_devices: operator %d is not a kj_op (0 to 3)",
                 (int)op);
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE,
                 "kj_reduce_devices: type %d is not a kj_type (0 to 5)", (int)type);
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

/* After failure s: waits for the parts launched so far (their inputs must not be in use once the call
 * returns), and returns s with its message, whatever the waits report. */
static kj_status drain(kj_status s, kj_runtime *const *rts, const kj_stream *streams, size_t launched) {
    char why[KJ__MESSAGE_MAX];
    snprintf(why, sizeof why, "%s", kj_last_error());
    for (size_t i = 0; i < launched; i++) kj_stream_synchronize(rts[i], stream_of(streams, i));
    return KJ_FAIL(s, "%s", why);
}

/* A part's failure, its message led by the part and its device. */
static kj_status part_failed(kj_status s, kj_runtime *rt, size_t i) {
    char why[KJ__MESSAGE_MAX];
    snprintf(why, sizeof why, "%s", kj_last_error());
    return KJ_FAIL(s, "kj_reduce_devices: part %zu (device %d): %s", i, kj__device_info(rt)->ordinal, why);
}

/* Launches part i into its partial buffer, whose address goes to *at. */
static kj_status launch_part(kj_runtime *rt, kj_devptr part, size_t count, kj_op op, kj_type type, kj_stream stream,
                             kj_devptr *at) {
    kj__lane *lane;
    KJ_FORWARD(kj__lane_get(rt, &partials_key, stream, PARTIAL_BYTES, &lane));
    kj_reduce_options o = {.size = sizeof o, .stream = stream};
    KJ_FORWARD(kj_reduce_async(rt, op, type, part, count, lane->buffer, &o));
    *at = lane->buffer;
    return KJ_OK;
}

/* Part i's partial copied to the host (the copy waits for that part only). */
static kj_status collect_part(kj_runtime *rt, kj_devptr at, size_t bytes, kj_stream stream, void *partial) {
    KJ_FORWARD(kj__memcpy_dtoh_async(rt, partial, at, bytes, stream, "copying the part's result"));
    return kj__stream_wait(rt, stream, "the part's reduction failed");
}

kj_status kj_reduce_devices(kj_runtime *const *rts, const kj_devptr *parts, const size_t *counts, size_t n, kj_op op,
                            kj_type type, void *result, const kj_stream *streams) {
    KJ_FORWARD(check_args(rts, parts, counts, n, op, type, result, streams));
    size_t bytes = kj_result_size(type);
    unsigned char *partials = calloc(n, bytes); /* side by side: the reference reads them as an array */
    kj_devptr *at = calloc(n, sizeof *at);
    kj_status s = !partials || !at ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "kj_reduce_devices: out of memory for %zu parts", n)
                                   : KJ_OK;
    size_t launched = 0;
    while (s == KJ_OK && launched < n) {
        size_t i = launched;
        if ((s = launch_part(rts[i], parts[i], counts[i], op, type, stream_of(streams, i), &at[i])) != KJ_OK)
            s = part_failed(s, rts[i], i);
        else launched++;
    }
    for (size_t i = 0; s == KJ_OK && i < n; i++)
        if ((s = collect_part(rts[i], at[i], bytes, stream_of(streams, i), partials + i * bytes)) != KJ_OK)
            s = part_failed(s, rts[i], i);
    if (s != KJ_OK) {
        s = drain(s, rts, streams, launched);
    } else {
        /* An f16 reduction's partials are floats: combined as f32 values. */
        kj_type of = type == KJ_TYPE_F16 ? KJ_TYPE_F32 : type;
        kj__reduce_reference(op, of, partials, n, result, NULL);
    }
    free(partials);
    free(at);
    return s;
}
