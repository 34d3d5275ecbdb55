/* The loaded kernels (kernel.c) as the door in front of them (kernel_get.c), the prefetch threads
 * (prefetch.c) and the runtime's teardown (lifecycle.c) use them. */
#ifndef KJ_KERNEL_H
#define KJ_KERNEL_H

#include <stdint.h>

#include "kernjit.h"

/* The request's hash: the key of the runtime's map of loaded kernels. */
void kj__request_hash(const kj_request *req, uint8_t out[16]);

/* The kernel when the request (hash h) is loaded already, else NULL; counts a memory hit. Its origin
 * is a memory hit's or, for the first ask after a prefetch loaded it, how the prefetch obtained it. */
kj_kernel *kj__memory_hit(kj_runtime *rt, const uint8_t h[16], kj_origin *origin);

/* Obtains the kernel (compiled, or read from a cache) and loads it, without looking at prefetches;
 * prefetch is 1 on the prefetch threads. */
kj_status kj__kernel_get_now(kj_runtime *rt, const kj_request *req, const uint8_t h[16], int prefetch, kj_kernel **out,
                             kj_origin *origin);

/* Unloads every kernel and module (kj_runtime_destroy, after the states). */
void kj__kernels_destroy(kj_runtime *rt);

#endif
