/* The pipeline's door: kj_kernel_get, and kj_kernel_prefetch, which obtains requests (compiled, or
 * read from a cache, and loaded) on the runtime's background threads while the host program goes on
 * with its own start-up, so that a later kj_kernel_get of the same request waits only for what is
 * left. */
#ifndef KJ_PREFETCH_H
#define KJ_PREFETCH_H

#include "kernjit.h"

/* Drops the queued requests, waits for the running ones and ends the threads (kj_runtime_destroy). */
void kj__prefetch_destroy(kj_runtime *rt);

#endif
