/* kj_kernel_prefetch, which obtains requests (compiled, or read from a cache, and loaded) on the
 * runtime's background threads while the host program goes on with its own start-up, so that a later
 * kj_kernel_get (kernel_get.c) of the same request waits only for what is left. */
#ifndef KJ_PREFETCH_H
#define KJ_PREFETCH_H

#include <stdint.h>

#include "kernjit.h"

/* Before a request does its own work: when a prefetch of the same request (hash h) is queued, it is
 * taken off the queue (the caller does it at once rather than wait its turn); when one is running,
 * waits for it to end. Returns 1 when it waited (the kernel may now be in memory), else 0. */
int kj__prefetch_wait(kj_runtime *rt, const uint8_t h[16]);

/* Drops the queued requests, waits for the running ones and ends the threads (kj_runtime_destroy). */
void kj__prefetch_destroy(kj_runtime *rt);

#endif
