// cdp.cuh: bookkeeping of device-side launches (CUDA dynamic parallelism, CDP2), shared by the
// kernels that launch kernels.
//
// A device-side launch that fails (the pending-launch buffer is full: cudaErrorLaunchPendingCountExceeded,
// or cudaErrorLaunchOutOfResources as the CDP2 guide puts it; a bad configuration) is reported only
// to the launching thread, through cudaGetLastError(); the host never sees it, and the work that
// the child would have done is silently missing. So every launch is followed by kj_cdp_check, which
// records failures in a status word in device memory that the host reads after the launch tree has
// completed: a failure becomes an error of the host call, never a wrong result.
//
//   COUNT_LAUNCHES = 0 1    1: also count the successful launches (one atomic per launch)
#pragma once

#ifndef COUNT_LAUNCHES
#define COUNT_LAUNCHES 0
#endif

#include "cdp_status.h"

// Call in the launching thread right after a <<<>>> launch: the device runtime keeps the last error
// per thread, and these kernels make no other runtime call that could set it in between. Returns
// whether the launch was accepted.
__device__ __forceinline__ bool kj_cdp_check(kj_cdp_status *status) {
    const cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
#if COUNT_LAUNCHES
        atomicAdd(&status->launches, 1u);
#endif
        return true;
    }
    atomicAdd(&status->failures, 1u);
    atomicCAS(&status->first_error, 0, (int)e);
    return false;
}
