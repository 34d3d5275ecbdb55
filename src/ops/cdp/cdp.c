#include "ops/cdp/cdp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kj__state_key lanes = KJ__LANES;

kj_status kj__cdp_lane_get(kj_runtime *rt, kj_stream stream, size_t scratch_bytes, kj__lane **out) {
    KJ_RETURN_IF(scratch_bytes > SIZE_MAX / 2 - KJ__CDP_SCRATCH, KJ_ERR_USAGE, "scratch of %zu bytes is too large",
                 scratch_bytes);
    return kj__lane_get(rt, &lanes, stream, KJ__CDP_SCRATCH + scratch_bytes, out);
}

kj_status kj__cdp_check_depth(kj_runtime *rt, unsigned levels, const char *what) {
    unsigned most = (unsigned)kj__device_info(rt)->max_nesting_depth;
    KJ_RETURN_IF(levels > most, KJ_ERR_LIMIT,
                 "%s nests %u levels of grids; the device runtime allows at most %u (kj_device_info.max_nesting_depth)",
                 what, levels, most);
    return KJ_OK;
}

kj_status kj__cdp_begin(kj_runtime *rt, kj__lane *lane) {
    KJ_FORWARD(kj__memset_async(rt, lane->buffer + KJ__CDP_STATUS, 0, sizeof(kj_cdp_status), lane->stream,
                                "clearing the device-launch status"));
    return kj__event_record(lane->start, lane->stream);
}

const char *kj__cuda_error_name(int code) {
    switch (code) {
    case 1: return "cudaErrorInvalidValue";
    case 2: return "cudaErrorMemoryAllocation";
    case 9: return "cudaErrorInvalidConfiguration";
    case 68: return "cudaErrorSyncDepthExceeded";
    case 69: return "cudaErrorLaunchPendingCountExceeded";
    case 98: return "cudaErrorInvalidDeviceFunction";
    case 200: return "cudaErrorInvalidKernelImage";
    case 400: return "cudaErrorInvalidResourceHandle";
    case 701: return "cudaErrorLaunchOutOfResources";
    case 719: return "cudaErrorLaunchFailure";
    case 800: return "cudaErrorNotPermitted";
    case 801: return "cudaErrorNotSupported";
    case 811: return "cudaErrorCdpNotSupported";
    case 812: return "cudaErrorCdpVersionMismatch";
    default: return "cudaError";
    }
}

kj_status kj__cdp_finish(kj_runtime *rt, kj__lane *lane, void *result, size_t result_bytes, const char *what,
                         kj_cdp_status *status, double *gpu_ms) {
    KJ_RETURN_IF(result_bytes > KJ__CDP_SCRATCH - KJ__CDP_RESULT, KJ_ERR_USAGE, "result of %zu bytes", result_bytes);
    KJ_FORWARD(kj__event_record(lane->stop, lane->stream));
    unsigned char back[KJ__CDP_SCRATCH];
    KJ_FORWARD(kj__memcpy_dtoh_async(rt, back, lane->buffer, KJ__CDP_RESULT + result_bytes, lane->stream,
                                     "copying the device-launch status back"));
    KJ_FORWARD(kj__stream_wait(rt, lane->stream, "the launch tree failed"));
    kj_cdp_status st;
    memcpy(&st, back + KJ__CDP_STATUS, sizeof st);
    if (st.failures) {
        unsigned long long limit = (unsigned long long)kj__pending_launch_limit(rt);
        return KJ_FAIL(KJ_ERR_DEVICE_LAUNCH,
                       "%s: %u device-side launch%s failed (the first with error %d, %s), so the result is incomplete "
                       "and was not returned; the pending-launch limit is %llu%s",
                       what, st.failures, st.failures == 1 ? "" : "es", st.first_error,
                       kj__cuda_error_name(st.first_error), limit,
                       st.first_error == 701 || st.first_error == 69 ? ": raise it (pending_launches)" : "");
    }
    if (gpu_ms) {
        float ms = 0;
        KJ_FORWARD(kj_event_elapsed_ms(lane->start, lane->stop, &ms));
        *gpu_ms = ms;
    }
    if (result_bytes) memcpy(result, back + KJ__CDP_RESULT, result_bytes);
    if (status) *status = st;
    return KJ_OK;
}
