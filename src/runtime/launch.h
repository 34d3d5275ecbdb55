/* Launching: kj_kernel_launch's checks against the device and the function, and the context's
 * pending-launch limit, which only the launch code sets. */
#ifndef KJ_LAUNCH_H
#define KJ_LAUNCH_H

#include <stdint.h>

#include "kernjit.h"

/* The pending-launch limit of the runtime's context now (CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT):
 * what the launches of kernels that launch kernels raised it to, or another runtime on the same
 * context did. The runtime's context must be current (kj__enter). */
uint64_t kj__pending_launch_limit(kj_runtime *rt);

/* kj_kernel_launch for a caller that has entered the kernel's runtime on this thread (kj__enter) and
 * passes a whole kj_launch_config of this version (size sizeof(kj_launch_config)). */
kj_status kj__kernel_launch(kj_kernel *k, const kj_launch_config *c, void **args);

#endif
