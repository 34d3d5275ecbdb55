/* What the host does around a launch tree of the dynamic-parallelism families (ops/nested/nested.c,
 * ops/mandelbrot/mandelbrot.c): a per-stream work buffer with the status word that kernels_src/cdp.cuh writes,
 * the nesting-depth check before launching, and the check of the status after the tree. */
#ifndef KJ_OPS_CDP_H
#define KJ_OPS_CDP_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_src/cdp_status.h"
#include "ops/ops.h"

/* A stream's work buffer (a kj__lane) holds the status word, room for a result, then scratch; each
 * call waits for its tree. */
#define KJ__CDP_STATUS 0 /* offsets in the buffer */
#define KJ__CDP_RESULT 16
#define KJ__CDP_SCRATCH 256

/* The lane of `stream`, with at least scratch_bytes of scratch. */
kj_status kj__cdp_lane_get(kj_runtime *rt, kj_stream stream, size_t scratch_bytes, kj__lane **out);

/* Refuses (KJ_ERR_LIMIT) a tree of `levels` grids, the host's included, deeper than the device's
 * nesting limit; `what` names the request in the message ("nested-reduce with block 512"). */
kj_status kj__cdp_check_depth(kj_runtime *rt, unsigned levels, const char *what);

/* Before the tree: clears the status word and records the start event on the lane's stream. This and
 * kj__cdp_finish expect the caller to have entered rt (kj__enter) on this thread. */
kj_status kj__cdp_begin(kj_runtime *rt, kj__lane *lane);

/* After the tree has been enqueued: records the stop event, copies the status word and result_bytes
 * of the result slot (to result; result may be NULL when result_bytes is 0) and waits. A failed
 * device-side launch gives KJ_ERR_DEVICE_LAUNCH naming the count, the first device error and the
 * pending-launch limit in force; `what` names the request. status and gpu_ms may be NULL. */
kj_status kj__cdp_finish(kj_runtime *rt, kj__lane *lane, void *result, size_t result_bytes, const char *what,
                         kj_cdp_status *status, double *gpu_ms);

/* "cudaErrorLaunchOutOfResources" for the device runtime's error codes that a launch can give;
 * "cudaError" for others. */
const char *kj__cuda_error_name(int code);

#endif
