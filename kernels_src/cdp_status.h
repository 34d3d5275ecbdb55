/* cdp_status.h: the status word of device-side launches (CUDA dynamic parallelism). The kernels that
 * launch kernels record each launch that fails in it (cdp.cuh); the host clears it before a launch
 * tree and reads it once the tree is done (src/ops/cdp/cdp.c). One definition for both sides: NVRTC
 * and the C compiler include this file. */
#ifndef KJ_CDP_STATUS_H
#define KJ_CDP_STATUS_H

typedef struct kj_cdp_status {
    unsigned int launches; /* successful device-side launches (counted only with COUNT_LAUNCHES=1) */
    unsigned int failures; /* device-side launches that failed */
    int first_error;       /* the cudaError_t of the first failure recorded; 0 when none */
    unsigned int reserved;
} kj_cdp_status;

#endif
