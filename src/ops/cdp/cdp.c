#include "ops/cdp/cdp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"

#define MAX_LANES 64

typedef struct cdp_state {
    pthread_mutex_t lock;
    kj__cdp_lane lanes[MAX_LANES];
    int lane_count;
} cdp_state;

static kj_status state_create(kj_runtime *rt, void **out) {
    (void)rt; /* called under the runtime's lock: nothing here may call back into the runtime */
    cdp_state *s = calloc(1, sizeof *s);
    if (!s) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return KJ_OK;
}

static void state_destroy(kj_runtime *rt, void *p) {
    cdp_state *s = p;
    for (int i = 0; i < s->lane_count; i++) {
        kj_mem_free(rt, s->lanes[i].buffer);
        kj_event_destroy(s->lanes[i].start);
        kj_event_destroy(s->lanes[i].stop);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* (Re)allocates the lane's buffer for scratch_bytes of scratch. The old buffer may still be read by
 * work on the stream, so the stream is drained before it is freed. */
static kj_status grow(kj_runtime *rt, kj__cdp_lane *lane, size_t scratch_bytes) {
    KJ_RETURN_IF(scratch_bytes > SIZE_MAX - KJ__CDP_SCRATCH, KJ_ERR_USAGE, "scratch of %zu bytes is too large",
                 scratch_bytes);
    if (lane->buffer) {
        KJ_FORWARD(kj_stream_synchronize(rt, lane->stream));
        KJ_FORWARD(kj_mem_free(rt, lane->buffer));
        lane->buffer = 0;
        lane->scratch_bytes = 0;
    }
    /* grow geometrically so that a sweep over sizes does not reallocate every call */
    size_t want = scratch_bytes < 4096 ? 4096 : scratch_bytes;
    KJ_FORWARD(kj_mem_alloc(rt, KJ__CDP_SCRATCH + want, &lane->buffer));
    lane->scratch_bytes = want;
    return KJ_OK;
}

kj_status kj__cdp_lane_get(kj_runtime *rt, kj_stream stream, size_t scratch_bytes, kj__cdp_lane **out) {
    void *p;
    KJ_FORWARD(kj__slot(rt, KJ__SLOT_CDP, state_create, state_destroy, &p));
    cdp_state *s = p;
    kj_status st = KJ_OK;
    pthread_mutex_lock(&s->lock);
    int i = 0;
    while (i < s->lane_count && s->lanes[i].stream != stream) i++;
    kj__cdp_lane *lane = &s->lanes[i];
    if (i == s->lane_count) {
        if (s->lane_count == MAX_LANES) {
            st = KJ_FAIL(KJ_ERR_UNSUPPORTED, "the dynamic-parallelism calls serve at most %d streams per runtime",
                         MAX_LANES);
        } else {
            memset(lane, 0, sizeof *lane);
            lane->stream = stream;
            st = kj_event_create(rt, &lane->start);
            if (st == KJ_OK) st = kj_event_create(rt, &lane->stop);
            if (st == KJ_OK) st = grow(rt, lane, scratch_bytes);
            if (st == KJ_OK) {
                s->lane_count++;
            } else {
                kj_event_destroy(lane->start);
                kj_event_destroy(lane->stop);
                memset(lane, 0, sizeof *lane);
            }
        }
    } else if (lane->scratch_bytes < scratch_bytes) {
        size_t twice = lane->scratch_bytes * 2;
        st = grow(rt, lane, scratch_bytes > twice ? scratch_bytes : twice);
    }
    pthread_mutex_unlock(&s->lock);
    KJ_FORWARD(st);
    *out = lane;
    return KJ_OK;
}

kj_status kj__cdp_check_depth(kj_runtime *rt, unsigned levels, const char *what) {
    unsigned most = (unsigned)rt->info.max_nesting_depth;
    KJ_RETURN_IF(levels > most, KJ_ERR_LIMIT,
                 "%s nests %u levels of grids; the device runtime allows at most %u (kj_device_info.max_nesting_depth)",
                 what, levels, most);
    return KJ_OK;
}

kj_status kj__cdp_begin(kj_runtime *rt, kj__cdp_lane *lane) {
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuMemsetD8Async((CUdeviceptr)(lane->buffer + KJ__CDP_STATUS), 0, sizeof(kj__cdp_status),
                                  (CUstream)lane->stream),
          "clearing the device-launch status (cuMemsetD8Async)");
    KJ_FORWARD(kj_event_record(lane->start, lane->stream));
    return KJ_OK;
}

uint64_t kj__cdp_pending_limit(kj_runtime *rt) {
    /* The context's own value: another runtime on the same primary context may have raised it. */
    size_t v = 0;
    if (rt->has_device && rt->cu->cuCtxGetLimit(&v, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) == CUDA_SUCCESS)
        return v;
    pthread_mutex_lock(&rt->lock);
    uint64_t cached = rt->pending_launch_limit;
    pthread_mutex_unlock(&rt->lock);
    return cached;
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

kj_status kj__cdp_finish(kj_runtime *rt, kj__cdp_lane *lane, void *result, size_t result_bytes, const char *what,
                         kj__cdp_status *status, double *gpu_ms) {
    KJ_RETURN_IF(result_bytes > KJ__CDP_SCRATCH - KJ__CDP_RESULT, KJ_ERR_USAGE, "result of %zu bytes", result_bytes);
    KJ_FORWARD(kj__enter(rt));
    KJ_FORWARD(kj_event_record(lane->stop, lane->stream));
    unsigned char back[KJ__CDP_SCRATCH];
    size_t bytes = KJ__CDP_RESULT + result_bytes;
    KJ_CU(rt->cu->cuMemcpyDtoHAsync(back, (CUdeviceptr)lane->buffer, bytes, (CUstream)lane->stream),
          "copying the device-launch status back (cuMemcpyDtoHAsync)");
    KJ_CU(rt->cu->cuStreamSynchronize((CUstream)lane->stream), "the launch tree failed (cuStreamSynchronize)");
    kj__cdp_status st;
    memcpy(&st, back + KJ__CDP_STATUS, sizeof st);
    if (st.failures) {
        unsigned long long limit = (unsigned long long)kj__cdp_pending_limit(rt);
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
