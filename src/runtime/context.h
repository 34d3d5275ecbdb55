/* What the layers above the runtime need of it without its struct: the device and its context, state
 * kept per runtime under a key of the user's own, the log, host memory the device writes, completion
 * events, and copies and clears ordered on a stream. The kernel families reach these through
 * ops/ops.h. runtime.c implements it beside the public wrappers it shares helpers with (runtime.h is
 * that file's private face). */
#ifndef KJ_CONTEXT_H
#define KJ_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "kernjit.h"

/* Makes the runtime's context current on this thread; KJ_ERR_NO_DEVICE when compile-only. A public
 * call enters once, after its checks; what it calls inside trusts that (the kj__ forms that say so:
 * kj__kernel_launch, kj__event_record), so that a call asks the driver for the current context once. */
kj_status kj__enter(kj_runtime *rt);

/* The runtime's device (all zero for a compile-only runtime); valid as long as the runtime. */
const kj_device_info *kj__device_info(const kj_runtime *rt);

/* Where the runtime's warnings go (kj__log). */
const kj__logger *kj__runtime_log(const kj_runtime *rt);

/* Whether the runtime has a device (0: compile-only). */
int kj__has_device(const kj_runtime *rt);

/* Where the runtime looks for kernel sources (its options' path, else KERNJIT_PATH's; NULL: none). */
const char *kj__search_path(const kj_runtime *rt);

/* Whether the runtime compiles for its device's own target (kj_runtime_arch), not one the user
 * named: what the tuning database assumes. */
int kj__own_target(const kj_runtime *rt);

/* The runtime's caches: the disk store (NULL: memory only), *named set when its folder was named
 * (options, KERNJIT_CACHE_DIR) rather than the default; the remote tier (NULL: none). */
typedef struct kj__cache kj__cache;
typedef struct kj__remote kj__remote;
kj__cache *kj__runtime_cache(const kj_runtime *rt, int *named);
kj__remote *kj__runtime_remote(const kj_runtime *rt);

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

/* Page-locked host memory that the device reads and writes directly: kernels are given *device, the
 * host reads *host (the same address under unified addressing). A kernel's result written there is
 * in host memory once an event recorded after the kernel is done (kj__event_done): no copy to queue,
 * none to wait for. Freed by kj__host_free (NULL: nothing). */
kj_status kj__host_alloc(kj_runtime *rt, size_t bytes, void **host, kj_devptr *device);
void kj__host_free(kj_runtime *rt, void *host);

/* An event that only marks completion (no timestamps, which makes it cheaper to record and to query);
 * recorded with kj_event_record, freed with kj_event_destroy. */
kj_status kj__event_create_marker(kj_runtime *rt, kj_event **out);
/* kj_event_record for a caller that has entered the event's runtime (kj__enter) on this thread. */
kj_status kj__event_record(kj_event *e, kj_stream stream);
/* Whether the work queued before the event's last record is done (*done), without waiting and
 * without making the event's runtime current (the driver needs no current context to query an
 * event), so that one loop may poll the events of several devices. A failure of that work is named
 * as `what`. */
kj_status kj__event_done(kj_event *e, const char *what, int *done);

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
