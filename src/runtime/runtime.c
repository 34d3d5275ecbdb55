/* kj_runtime: the device and its context, the cache, counters, and thin wrappers over device memory,
 * streams and events so that host programs need no CUDA header. */
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jit/compile.h"
#include "jit/prepare.h"
#include "base/error.h"
#include "base/sized.h"
#include "base/util.h"

/* From kernjit-version.h as the library was built: what the program loaded, which may differ from the
 * header the program was compiled with. */
const char *kj_version_string(void) { return KJ_VERSION_STRING; }
unsigned kj_version_number(void) { return KJ_VERSION_HEX; }

/* ---- devices --------------------------------------------------------------------------------- */

static const char *arch_name(int major, int minor) {
    switch (major) {
    case 3: return "Kepler";
    case 5: return "Maxwell";
    case 6: return "Pascal";
    case 7: return minor >= 5 ? "Turing" : "Volta";
    case 8: return minor == 9 ? "Ada Lovelace" : "Ampere";
    case 9: return "Hopper";
    case 10:
    case 11:
    case 12: return "Blackwell";
    default: return "unknown";
    }
}

kj_status kj__query_device(const kj__cuda_api *cu, int ordinal, kj_device_info *info) {
    CUdevice dev;
    KJ_CU(cu->cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    memset(info, 0, sizeof *info);
    info->ordinal = ordinal;
    char name[256], arch[16];
    KJ_CU(cu->cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
    struct {
        CUdevice_attribute attr;
        int *out;
    } ints[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info->cc_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info->cc_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info->sm_count},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &info->warp_size},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info->max_threads_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &info->max_threads_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, &info->max_blocks_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &info->max_block_dim[0]},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &info->max_block_dim[1]},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &info->max_block_dim[2]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &info->max_grid_dim[0]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &info->max_grid_dim[1]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &info->max_grid_dim[2]},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &info->regs_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &info->regs_per_sm},
        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info->clock_khz},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &info->memory_clock_khz},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &info->memory_bus_bits},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        *ints[i].out = 0;
        /* clock rates are missing on some newer drivers: leave them 0 rather than fail */
        if (cu->cuDeviceGetAttribute(ints[i].out, ints[i].attr, dev) != CUDA_SUCCESS) *ints[i].out = 0;
    }
    int v;
    if (cu->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev) == CUDA_SUCCESS)
        info->shared_per_block = (size_t)v;
    if (cu->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev) == CUDA_SUCCESS)
        info->shared_per_block_optin = (size_t)v;
    if (cu->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev) == CUDA_SUCCESS)
        info->shared_per_sm = (size_t)v;
    if (cu->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) == CUDA_SUCCESS)
        info->l2_bytes = (size_t)v;
    KJ_CU(cu->cuDeviceTotalMem(&info->total_memory, dev), "cuDeviceTotalMem");
    snprintf(arch, sizeof arch, "sm_%d%d", info->cc_major, info->cc_minor);
    info->name = kj__intern(name);
    info->arch = kj__intern(arch);
    KJ_RETURN_IF(!info->name || !info->arch, KJ_ERR_HOST_MEMORY, "out of memory");
    info->arch_name = arch_name(info->cc_major, info->cc_minor);
    info->peak_bandwidth_gbs = 2.0 * info->memory_clock_khz * 1e3 * (info->memory_bus_bits / 8.0) / 1e9;
    info->driver_version = cu->driver_version;
    info->max_nesting_depth = 24; /* the device runtime's documented hardware limit */
    return KJ_OK;
}

kj_status kj_device_count(int *count) {
    KJ_RETURN_IF(!count, KJ_ERR_USAGE, "kj_device_count: count is NULL");
    const kj__cuda_api *cu;
    kj_status s = kj__cuda_load(&cu);
    if (s == KJ_ERR_NO_DEVICE) {
        *count = 0;
        return KJ_OK;
    }
    KJ_FORWARD(s);
    int n = 0;
    KJ_CU(cu->cuDeviceGetCount(&n), "cuDeviceGetCount");
    *count = n;
    return KJ_OK;
}

kj_status kj_device_query(int ordinal, kj_device_info *info) {
    KJ_RETURN_IF(!info, KJ_ERR_USAGE, "kj_device_query: info is NULL");
    KJ_FORWARD(KJ__SIZED_CHECK(info, kj_device_info, KJ_DEVICE_INFO_INIT));
    const kj__cuda_api *cu;
    KJ_FORWARD(kj__cuda_load(&cu));
    int n = 0;
    KJ_CU(cu->cuDeviceGetCount(&n), "cuDeviceGetCount");
    KJ_RETURN_IF(ordinal < 0 || ordinal >= n, KJ_ERR_USAGE, "device %d does not exist: this machine has %d device%s",
                 ordinal, n, n == 1 ? "" : "s");
    kj_device_info full;
    KJ_FORWARD(kj__query_device(cu, ordinal, &full));
    KJ__SIZED_WRITE(info, full);
    return KJ_OK;
}

kj_status kj_runtime_device(const kj_runtime *rt, kj_device_info *info) {
    KJ_RETURN_IF(!rt || !info, KJ_ERR_USAGE, "kj_runtime_device: NULL argument");
    KJ_FORWARD(KJ__SIZED_CHECK(info, kj_device_info, KJ_DEVICE_INFO_INIT));
    KJ_RETURN_IF(!rt->has_device, KJ_ERR_NO_DEVICE, "no CUDA device: this runtime only compiles (for %s)",
                 rt->target.arch);
    KJ__SIZED_WRITE(info, rt->info);
    return KJ_OK;
}

int kj_runtime_has_device(const kj_runtime *rt) { return rt && rt->has_device; }
const char *kj_runtime_arch(const kj_runtime *rt) { return rt ? rt->target.arch : ""; }

kj_status kj_runtime_stats(const kj_runtime *rt, kj_stats *stats) {
    KJ_RETURN_IF(!rt || !stats, KJ_ERR_USAGE, "kj_runtime_stats: NULL argument");
    KJ_FORWARD(KJ__SIZED_CHECK(stats, kj_stats, KJ_STATS_INIT));
    kj_stats full;
    pthread_mutex_lock((pthread_mutex_t *)&rt->lock);
    full = rt->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&rt->lock);
    kj__remote_counters(rt->remote, &full);
    KJ__SIZED_WRITE(stats, full);
    return KJ_OK;
}

kj_status kj__enter(kj_runtime *rt) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "runtime is NULL");
    KJ_RETURN_IF(!rt->has_device, KJ_ERR_NO_DEVICE,
                 "no CUDA device: this runtime can compile (for %s) but not run kernels", rt->target.arch);
    CUcontext cur = NULL;
    if (rt->cu->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != rt->context)
        KJ_CU(rt->cu->cuCtxSetCurrent(rt->context), "cuCtxSetCurrent");
    return KJ_OK;
}

const kj_device_info *kj__device_info(const kj_runtime *rt) { return &rt->info; }

/* The device as messages name it: "device 0 (NAME)". */
static void device_label(const kj_runtime *rt, char *out, size_t size) {
    snprintf(out, size, "device %d (%s)", rt->info.ordinal, rt->info.name ? rt->info.name : "?");
}

kj_status kj__runtime_runs(const kj_runtime *rt, const char *arch) {
    char device[320];
    device_label(rt, device, sizeof device);
    return kj__arch_check_device(arch, rt->info.cc_major * 10 + rt->info.cc_minor, device);
}

kj_status kj__runtime_prepare(const kj_runtime *rt, const kj_request *req, int for_launch, kj__prepared *p) {
    char device[320];
    device_label(rt, device, sizeof device);
    kj__prepare_env env = {rt->search_path, rt->target, rt->has_device, for_launch ? device : NULL,
                           rt->info.cc_major * 10 + rt->info.cc_minor};
    return kj__prepare(&env, req, p);
}

const kj__logger *kj__runtime_log(const kj_runtime *rt) { return &rt->log; }

int kj__has_device(const kj_runtime *rt) { return rt->has_device; }

const char *kj__search_path(const kj_runtime *rt) { return rt->search_path; }

int kj__own_target(const kj_runtime *rt) { return rt->own_target; }

kj__cache *kj__runtime_cache(const kj_runtime *rt, int *named) {
    if (named) *named = rt->cache_given;
    return rt->cache;
}

kj__remote *kj__runtime_remote(const kj_runtime *rt) { return rt->remote; }

/* A state, once made, stays until the runtime goes, and a node is complete before it is published
 * (the release store below), its fields never written again: so a state already made is found
 * without the lock, from the list as an acquire load of its head sees it. Only a miss takes the lock,
 * and looks again under it. */
static kj__state_node *state_find(kj__state_node *n, const kj__state_key *key) {
    while (n && n->key != key) n = n->next;
    return n;
}

kj_status kj__state(kj_runtime *rt, const kj__state_key *key, void **state) {
    kj__state_node *made = state_find(__atomic_load_n(&rt->states, __ATOMIC_ACQUIRE), key);
    if (made) {
        *state = made->state;
        return KJ_OK;
    }
    pthread_mutex_lock(&rt->lock);
    kj__state_node *n = state_find(rt->states, key);
    while (n && n->key != key) n = n->next;
    kj_status s = KJ_OK;
    if (!n) {
        n = calloc(1, sizeof *n);
        s = n ? key->create(rt, &n->state) : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        if (s == KJ_OK) {
            n->key = key;
            n->next = rt->states;
            __atomic_store_n(&rt->states, n, __ATOMIC_RELEASE);
        } else {
            free(n);
            n = NULL;
        }
    }
    *state = n ? n->state : NULL;
    pthread_mutex_unlock(&rt->lock);
    return s;
}

/* ---- memory, streams, events ------------------------------------------------------------------ */

kj_status kj_mem_alloc(kj_runtime *rt, size_t bytes, kj_devptr *out) {
    KJ_RETURN_IF(!out, KJ_ERR_USAGE, "kj_mem_alloc: out is NULL");
    KJ_RETURN_IF(bytes == 0, KJ_ERR_USAGE, "kj_mem_alloc: 0 bytes asked for");
    KJ_FORWARD(kj__enter(rt));
    CUdeviceptr p;
    CUresult r = rt->cu->cuMemAlloc(&p, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        size_t free_b = 0, total = 0;
        rt->cu->cuMemGetInfo(&free_b, &total);
        return KJ_FAIL(KJ_ERR_DEVICE_MEMORY, "cannot allocate %zu bytes on the device: %zu of %zu bytes are free",
                       bytes, free_b, total);
    }
    KJ_CU(r, "cuMemAlloc");
    *out = (kj_devptr)p;
    return KJ_OK;
}

kj_status kj_mem_free(kj_runtime *rt, kj_devptr ptr) {
    if (!ptr) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuMemFree((CUdeviceptr)ptr), "cuMemFree");
    return KJ_OK;
}

kj_status kj_mem_info(kj_runtime *rt, size_t *free_bytes, size_t *total_bytes) {
    KJ_FORWARD(kj__enter(rt));
    size_t f = 0, t = 0;
    KJ_CU(rt->cu->cuMemGetInfo(&f, &t), "cuMemGetInfo");
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return KJ_OK;
}

kj_status kj__host_alloc(kj_runtime *rt, size_t bytes, void **host, kj_devptr *device) {
    KJ_RETURN_IF(bytes == 0, KJ_ERR_USAGE, "page-locked host memory of 0 bytes asked for");
    KJ_FORWARD(kj__enter(rt));
    void *p = NULL;
    KJ_CU(rt->cu->cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc (page-locked host memory)");
    CUdeviceptr d = 0;
    CUresult r = rt->cu->cuMemHostGetDevicePointer(&d, p, 0);
    if (r != CUDA_SUCCESS) {
        rt->cu->cuMemFreeHost(p);
        return kj__cuda_fail(r, __FILE__, __LINE__, "cuMemHostGetDevicePointer (host memory the device writes)");
    }
    *host = p;
    *device = (kj_devptr)d;
    return KJ_OK;
}

void kj__host_free(kj_runtime *rt, void *host) {
    if (host && kj__enter(rt) == KJ_OK) rt->cu->cuMemFreeHost(host);
}

kj_status kj_memcpy_htod(kj_runtime *rt, kj_devptr dst, const void *src, size_t bytes) {
    if (!bytes) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuMemcpyHtoD((CUdeviceptr)dst, src, bytes), "cuMemcpyHtoD");
    return KJ_OK;
}

kj_status kj_memcpy_dtoh(kj_runtime *rt, void *dst, kj_devptr src, size_t bytes) {
    if (!bytes) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuMemcpyDtoH(dst, (CUdeviceptr)src, bytes), "cuMemcpyDtoH");
    return KJ_OK;
}

kj_status kj_memcpy_dtod(kj_runtime *rt, kj_devptr dst, kj_devptr src, size_t bytes, kj_stream stream) {
    if (!bytes) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, (CUstream)stream), "cuMemcpyDtoDAsync");
    return KJ_OK;
}

/* A failed driver call of the stream-ordered helpers, named "what (call)" as KJ_CU names its calls. */
static kj_status stream_fail(CUresult r, const char *what, const char *call) {
    char named[256];
    snprintf(named, sizeof named, "%s (%s)", what, call);
    return kj__cuda_fail(r, __FILE__, __LINE__, named);
}

kj_status kj__memset_async(kj_runtime *rt, kj_devptr dst, uint8_t value, size_t bytes, kj_stream stream,
                           const char *what) {
    if (!bytes) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    CUresult r = rt->cu->cuMemsetD8Async((CUdeviceptr)dst, value, bytes, (CUstream)stream);
    return r == CUDA_SUCCESS ? KJ_OK : stream_fail(r, what, "cuMemsetD8Async");
}

kj_status kj__memcpy_htod_async(kj_runtime *rt, kj_devptr dst, const void *src, size_t bytes, kj_stream stream,
                                const char *what) {
    if (!bytes) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    CUresult r = rt->cu->cuMemcpyHtoDAsync((CUdeviceptr)dst, src, bytes, (CUstream)stream);
    return r == CUDA_SUCCESS ? KJ_OK : stream_fail(r, what, "cuMemcpyHtoDAsync");
}

kj_status kj__memcpy_dtoh_async(kj_runtime *rt, void *dst, kj_devptr src, size_t bytes, kj_stream stream,
                                const char *what) {
    if (!bytes) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    CUresult r = rt->cu->cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, bytes, (CUstream)stream);
    return r == CUDA_SUCCESS ? KJ_OK : stream_fail(r, what, "cuMemcpyDtoHAsync");
}

kj_status kj__stream_wait(kj_runtime *rt, kj_stream stream, const char *what) {
    KJ_FORWARD(kj__enter(rt));
    CUresult r = rt->cu->cuStreamSynchronize((CUstream)stream);
    return r == CUDA_SUCCESS ? KJ_OK : stream_fail(r, what, "cuStreamSynchronize");
}

kj_status kj__stream_done(kj_runtime *rt, kj_stream stream, const char *what, int *done) {
    KJ_FORWARD(kj__enter(rt));
    CUresult r = rt->cu->cuStreamQuery((CUstream)stream);
    *done = r != CUDA_ERROR_NOT_READY;
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY ? KJ_OK : stream_fail(r, what, "cuStreamQuery");
}

kj_status kj_memset_u8(kj_runtime *rt, kj_devptr dst, uint8_t value, size_t bytes) {
    if (!bytes) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuMemsetD8((CUdeviceptr)dst, value, bytes), "cuMemsetD8");
    return KJ_OK;
}

kj_status kj_memset_u32(kj_runtime *rt, kj_devptr dst, uint32_t value, size_t count) {
    if (!count) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuMemsetD32((CUdeviceptr)dst, value, count), "cuMemsetD32");
    return KJ_OK;
}

kj_status kj_synchronize(kj_runtime *rt) {
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuCtxSynchronize(), "a kernel or copy failed (cuCtxSynchronize)");
    return KJ_OK;
}

kj_status kj_stream_create(kj_runtime *rt, kj_stream *out) {
    KJ_RETURN_IF(!out, KJ_ERR_USAGE, "kj_stream_create: out is NULL");
    KJ_FORWARD(kj__enter(rt));
    CUstream s;
    KJ_CU(rt->cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    *out = (kj_stream)s;
    return KJ_OK;
}

kj_status kj_stream_destroy(kj_runtime *rt, kj_stream stream) {
    if (!stream) return KJ_OK;
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuStreamDestroy((CUstream)stream), "cuStreamDestroy");
    return KJ_OK;
}

kj_status kj_stream_synchronize(kj_runtime *rt, kj_stream stream) {
    KJ_FORWARD(kj__enter(rt));
    KJ_CU(rt->cu->cuStreamSynchronize((CUstream)stream), "a kernel or copy failed (cuStreamSynchronize)");
    return KJ_OK;
}

struct kj_event {
    kj_runtime *rt;
    CUevent event;
};

static kj_status event_create(kj_runtime *rt, unsigned flags, kj_event **out) {
    KJ_RETURN_IF(!out, KJ_ERR_USAGE, "kj_event_create: out is NULL");
    KJ_FORWARD(kj__enter(rt));
    kj_event *e = calloc(1, sizeof *e);
    if (!e) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    CUresult r = rt->cu->cuEventCreate(&e->event, flags);
    if (r != CUDA_SUCCESS) {
        free(e);
        return kj__cuda_fail(r, __FILE__, __LINE__, "cuEventCreate");
    }
    e->rt = rt;
    *out = e;
    return KJ_OK;
}

kj_status kj_event_create(kj_runtime *rt, kj_event **out) { return event_create(rt, CU_EVENT_DEFAULT, out); }

kj_status kj__event_create_marker(kj_runtime *rt, kj_event **out) {
    return event_create(rt, CU_EVENT_DISABLE_TIMING, out);
}

/* No kj__enter: the driver queries an event whatever context is current, so a loop over the events of
 * several devices switches no context. */
kj_status kj__event_done(kj_event *e, const char *what, int *done) {
    CUresult r = e->rt->cu->cuEventQuery(e->event);
    *done = r != CUDA_ERROR_NOT_READY;
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY ? KJ_OK : stream_fail(r, what, "cuEventQuery");
}

void kj_event_destroy(kj_event *e) {
    if (!e) return;
    if (kj__enter(e->rt) == KJ_OK) e->rt->cu->cuEventDestroy(e->event);
    free(e);
}

kj_status kj__event_record(kj_event *e, kj_stream stream) {
    KJ_CU(e->rt->cu->cuEventRecord(e->event, (CUstream)stream), "cuEventRecord");
    return KJ_OK;
}

kj_status kj_event_record(kj_event *e, kj_stream stream) {
    KJ_RETURN_IF(!e, KJ_ERR_USAGE, "kj_event_record: event is NULL");
    KJ_FORWARD(kj__enter(e->rt));
    return kj__event_record(e, stream);
}

kj_status kj_event_elapsed_ms(kj_event *start, kj_event *end, float *ms) {
    KJ_RETURN_IF(!start || !end || !ms, KJ_ERR_USAGE, "kj_event_elapsed_ms: NULL argument");
    KJ_FORWARD(kj__enter(end->rt));
    KJ_CU(end->rt->cu->cuEventSynchronize(end->event), "a kernel failed (cuEventSynchronize)");
    KJ_CU(end->rt->cu->cuEventElapsedTime(ms, start->event, end->event), "cuEventElapsedTime");
    return KJ_OK;
}
