/* Launching (launch.c): kj_kernel_launch's checks against the device and the function, the metadata's
 * launch attributes set when a kernel is made, and the context's pending-launch limit, which only the
 * launch code sets (the kernel families read it through ops/ops.h). */
#ifndef KJ_LAUNCH_H
#define KJ_LAUNCH_H

#include <stdint.h>

#include "kernjit.h"

/* The pending-launch limit of the runtime's context now (CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT):
 * what the launches of kernels that launch kernels raised it to, or another runtime on the same
 * context did. The runtime's context must be current (kj__enter). */
uint64_t kj__pending_launch_limit(kj_runtime *rt);

/* The metadata's launch attributes, set once when the kernel is made (before any launch): the
 * dynamic shared memory it asks for is opted in above the function's default limit, and the carveout
 * preference is applied. A size the device cannot give fails here, naming both numbers, so that the
 * kernel is never handed out. */
kj_status kj__kernel_apply_metadata(kj_kernel *k);

/* kj_kernel_launch for a caller that has entered the kernel's runtime on this thread (kj__enter) and
 * passes a whole kj_launch_config of this version (size sizeof(kj_launch_config)). */
kj_status kj__kernel_launch(kj_kernel *k, const kj_launch_config *c, void **args);

#endif
