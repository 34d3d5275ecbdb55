/* What the layers above the runtime need of it without its struct: the device and its context,
 * state kept per runtime under a key of the user's own, the log, and copies and clears ordered on a
 * stream. The kernel families reach these through ops/ops.h. */
#ifndef KJ_CONTEXT_H
#define KJ_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "kernjit.h"

/* Makes the runtime's context current on this thread; KJ_ERR_NO_DEVICE when compile-only. */
kj_status kj__enter(kj_runtime *rt);

/* The runtime's device (all zero for a compile-only runtime); valid as long as the runtime. */
const kj_device_info *kj__device_info(const kj_runtime *rt);

/* Where the runtime's warnings go (kj__log). */
const kj__logger *kj__runtime_log(const kj_runtime *rt);

/* State a layer above keeps per runtime (a family's work buffers), found by the address of a key the
 * user owns (a static const in its own file), so that the runtime names none of its users. */
typedef struct kj__state_key {
    /* Makes the state on first use, under the runtime's lock: it must not call back into the runtime
     * in a way that takes the lock (kj__state, kj_kernel_get). */
    kj_status (*create)(kj_runtime *rt, void **state);
    /* Releases it when the runtime is destroyed, with the runtime's context current; the states go
     * newest first, before the kernels and modules. */
    void (*destroy)(kj_runtime *rt, void *state);
} kj__state_key;

/* The state under key, made with key->create on first use. Thread-safe. */
kj_status kj__state(kj_runtime *rt, const kj__state_key *key, void **state);

/* Work ordered on `stream` after what was queued there before (the legacy kj_memset_u8 and
 * kj_memcpy_dtoh are not ordered with a non-blocking stream). `what` names the work in the message
 * of a failure ("clearing the workspace"). */
kj_status kj__memset_async(kj_runtime *rt, kj_devptr dst, uint8_t value, size_t bytes, kj_stream stream,
                           const char *what);
kj_status kj__memcpy_dtoh_async(kj_runtime *rt, void *dst, kj_devptr src, size_t bytes, kj_stream stream,
                                const char *what);
/* src is read before the call returns (pageable memory is staged at once). */
kj_status kj__memcpy_htod_async(kj_runtime *rt, kj_devptr dst, const void *src, size_t bytes, kj_stream stream,
                                const char *what);
/* Waits for everything queued on the stream; a failure of that work is named as `what` ("the
 * reduction failed"). */
kj_status kj__stream_wait(kj_runtime *rt, kj_stream stream, const char *what);
/* Whether everything queued on the stream is done (*done), without waiting: for a wait that must watch
 * something else too (a collective whose other ranks may never come). */
kj_status kj__stream_done(kj_runtime *rt, kj_stream stream, const char *what, int *done);

#endif
