/* Launching (launch.h): kj_kernel_launch's checks against the device and the function, the opt-ins
 * and limits a launch needs first, and kj_kernel_occupancy, which cooperative launches ask too. */
#include "runtime/launch.h"

#include <stdint.h>

#include "base/error.h"
#include "base/sized.h"
#include "jit/spec.h"
#include "runtime/runtime.h"

kj_status kj_kernel_occupancy(const kj_kernel *k, unsigned block_threads, unsigned dynamic_shared, int *blocks_per_sm) {
    KJ_RETURN_IF(!k || !blocks_per_sm, KJ_ERR_USAGE, "kj_kernel_occupancy: NULL argument");
    KJ_RETURN_IF(block_threads == 0 || block_threads > (unsigned)k->max_threads, KJ_ERR_LIMIT,
                 "a block of %u threads: %s allows 1 to %d", block_threads, k->entry, k->max_threads);
    kj_runtime *rt = k->rt;
    kj_kernel *mk = (kj_kernel *)k; /* the cache is not part of the kernel's observable state */
    pthread_mutex_lock(&rt->lock);
    int cached = mk->occupancy_block == block_threads && mk->occupancy_shared == dynamic_shared ? mk->occupancy : -1;
    pthread_mutex_unlock(&rt->lock);
    if (cached >= 0) {
        *blocks_per_sm = cached;
        return KJ_OK;
    }
    KJ_FORWARD(kj__enter(rt));
    int n = 0;
    KJ_CU(rt->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k->function, (int)block_threads, dynamic_shared),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    pthread_mutex_lock(&rt->lock);
    mk->occupancy_block = block_threads;
    mk->occupancy_shared = dynamic_shared;
    mk->occupancy = n;
    pthread_mutex_unlock(&rt->lock);
    *blocks_per_sm = n;
    return KJ_OK;
}

static unsigned dim(unsigned v) { return v ? v : 1; }

static kj_status check_config(const kj_kernel *k, const kj_launch_config *c) {
    const kj_device_info *d = &k->rt->info;
    static const char axis[] = "xyz";
    uint64_t threads = 1;
    for (int i = 0; i < 3; i++) {
        KJ_RETURN_IF(dim(c->block[i]) > (unsigned)d->max_block_dim[i], KJ_ERR_LIMIT,
                     "block %c = %u exceeds the device's limit of %d", axis[i], c->block[i], d->max_block_dim[i]);
        KJ_RETURN_IF(dim(c->grid[i]) > (unsigned)d->max_grid_dim[i], KJ_ERR_LIMIT,
                     "grid %c = %u exceeds the device's limit of %d", axis[i], c->grid[i], d->max_grid_dim[i]);
        threads *= dim(c->block[i]);
    }
    KJ_RETURN_IF(threads > (uint64_t)k->max_threads, KJ_ERR_LIMIT,
                 "a block of %llu threads exceeds %s's limit of %d threads per block (device: %d)",
                 (unsigned long long)threads, k->entry, k->max_threads, d->max_threads_per_block);
    return KJ_OK;
}

/* Dynamic shared memory above the function's current limit must be opted in first; beyond the
 * device's opt-in maximum (less the static shared memory) it cannot run at all. */
static kj_status ensure_shared(kj_kernel *k, unsigned bytes) {
    kj_runtime *rt = k->rt;
    /* the fast path reads without the lock, which launches from other threads may be taking to raise
     * the limit: an atomic load, so that the read is defined (it can only be stale low, which the
     * locked path then corrects) */
    if (bytes <= __atomic_load_n(&k->dynamic_shared_allowed, __ATOMIC_ACQUIRE)) return KJ_OK;
    size_t optin = rt->info.shared_per_block_optin;
    size_t most = optin > (size_t)k->shared_static ? optin - (size_t)k->shared_static : 0;
    KJ_RETURN_IF(bytes > most, KJ_ERR_LIMIT,
                 "%s asks for %u bytes of dynamic shared memory; the device allows %zu per block (opt-in maximum %zu "
                 "less %d static)",
                 k->entry, bytes, most, optin, k->shared_static);
    pthread_mutex_lock(&rt->lock);
    CUresult r = CUDA_SUCCESS;
    if (bytes > k->dynamic_shared_allowed) {
        r = rt->cu->cuFuncSetAttribute(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
        if (r == CUDA_SUCCESS) __atomic_store_n(&k->dynamic_shared_allowed, bytes, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&rt->lock);
    KJ_CU(r, "opting in to dynamic shared memory (cuFuncSetAttribute)");
    return KJ_OK;
}

kj_status kj__kernel_apply_metadata(kj_kernel *k) {
    kj_runtime *rt = k->rt;
    if (k->shared_dynamic) {
        size_t optin = rt->info.shared_per_block_optin;
        size_t most = optin > (size_t)k->shared_static ? optin - (size_t)k->shared_static : 0;
        KJ_RETURN_IF(k->shared_dynamic > most, KJ_ERR_LIMIT,
                     "%s (%s): its metadata asks for %u bytes of dynamic shared memory; the device allows %zu per "
                     "block (opt-in maximum %zu less %d static)",
                     k->entry, k->defines, k->shared_dynamic, most, optin, k->shared_static);
        KJ_FORWARD(ensure_shared(k, k->shared_dynamic));
    }
    if (k->carveout != KJ__CARVEOUT_UNSET)
        KJ_CU(rt->cu->cuFuncSetAttribute(k->function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, k->carveout),
              "setting the preferred shared-memory carveout (cuFuncSetAttribute)");
    return KJ_OK;
}

uint64_t kj__pending_launch_limit(kj_runtime *rt) {
    size_t v = 0;
    if (rt->cu->cuCtxGetLimit(&v, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) == CUDA_SUCCESS) return v;
    pthread_mutex_lock(&rt->lock);
    uint64_t known = rt->pending_launch_limit;
    pthread_mutex_unlock(&rt->lock);
    return known;
}

/* The device runtime keeps launches that are not yet running in a buffer sized by this limit; a
 * launch that does not fit fails on the device only, so it is raised before launching, and never
 * lowered: below what this runtime set, or what the context has (another runtime may share it). */
static kj_status ensure_pending_limit(kj_runtime *rt, uint64_t need) {
    if (!need) return KJ_OK;
    pthread_mutex_lock(&rt->lock);
    CUresult r = CUDA_SUCCESS;
    size_t now = 0;
    if (need > rt->pending_launch_limit &&
        rt->cu->cuCtxGetLimit(&now, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) == CUDA_SUCCESS &&
        now > rt->pending_launch_limit)
        rt->pending_launch_limit = now;
    if (need > rt->pending_launch_limit) {
        r = rt->cu->cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, (size_t)need);
        if (r == CUDA_SUCCESS) rt->pending_launch_limit = need;
    }
    pthread_mutex_unlock(&rt->lock);
    KJ_CU(r, "setting CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT");
    return KJ_OK;
}

static uint64_t blocks_of(const unsigned v[3]) { return (uint64_t)dim(v[0]) * dim(v[1]) * dim(v[2]); }

/* Every block of a cooperative grid is resident at once: at most blocks-per-SM x SMs. */
static kj_status check_cooperative(kj_kernel *k, const kj_launch_config *c, unsigned shared) {
    int per_sm = 0;
    KJ_FORWARD(kj_kernel_occupancy(k, (unsigned)blocks_of(c->block), shared, &per_sm));
    uint64_t most = (uint64_t)per_sm * (uint64_t)k->rt->info.sm_count, want = blocks_of(c->grid);
    KJ_RETURN_IF(
        want > most, KJ_ERR_LIMIT,
        "a cooperative grid of %llu blocks does not fit: %s runs at most %d blocks of %llu threads (%u bytes of "
        "dynamic shared memory) per multiprocessor, so at most %llu blocks on the %d multiprocessors",
        (unsigned long long)want, k->entry, per_sm, (unsigned long long)blocks_of(c->block), shared,
        (unsigned long long)most, k->rt->info.sm_count);
    return KJ_OK;
}

/* Clusters: compute capability 9.0 and later, whole clusters in every grid dimension, and a cluster
 * the device can place (cuOccupancyMaxActiveClusters, where the driver has it). */
static kj_status check_cluster(kj_kernel *k, const kj_launch_config *c, unsigned shared) {
    kj_runtime *rt = k->rt;
    KJ_RETURN_IF(rt->info.cc_major < 9, KJ_ERR_UNSUPPORTED,
                 "thread-block clusters need compute capability 9.0 or later; this device is %d.%d", rt->info.cc_major,
                 rt->info.cc_minor);
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++)
        KJ_RETURN_IF(dim(c->grid[i]) % dim(c->cluster[i]), KJ_ERR_LIMIT,
                     "grid %c = %u is not a multiple of the cluster's %c = %u", axis[i], dim(c->grid[i]), axis[i],
                     dim(c->cluster[i]));
    if (!rt->cu->cuOccupancyMaxActiveClusters) return KJ_OK;
    CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
    attr.value.clusterDim.x = dim(c->cluster[0]);
    attr.value.clusterDim.y = dim(c->cluster[1]);
    attr.value.clusterDim.z = dim(c->cluster[2]);
    CUlaunchConfig lc = {.gridDimX = dim(c->grid[0]),
                         .gridDimY = dim(c->grid[1]),
                         .gridDimZ = dim(c->grid[2]),
                         .blockDimX = dim(c->block[0]),
                         .blockDimY = dim(c->block[1]),
                         .blockDimZ = dim(c->block[2]),
                         .sharedMemBytes = shared,
                         .attrs = &attr,
                         .numAttrs = 1};
    int clusters = 0;
    CUresult r = rt->cu->cuOccupancyMaxActiveClusters(&clusters, k->function, &lc);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_VALUE && r != CUDA_ERROR_INVALID_CLUSTER_SIZE)
        return kj__cuda_fail(r, __FILE__, __LINE__, "cuOccupancyMaxActiveClusters");
    KJ_RETURN_IF(r != CUDA_SUCCESS || clusters == 0, KJ_ERR_LIMIT,
                 "a cluster of %u x %u x %u blocks of %llu threads cannot be placed on this device (a cluster holds "
                 "at most 8 blocks portably, all resident on one GPC at once)",
                 dim(c->cluster[0]), dim(c->cluster[1]), dim(c->cluster[2]), (unsigned long long)blocks_of(c->block));
    return KJ_OK;
}

kj_status kj_kernel_launch(kj_kernel *k, const kj_launch_config *c, void **args) {
    KJ_RETURN_IF(!k || !c, KJ_ERR_USAGE, "kj_kernel_launch: kernel and config are required");
    kj_launch_config copy;
    KJ__SIZED_INPUT(c, copy, kj_launch_config, KJ_LAUNCH_CONFIG_INIT);
    KJ_FORWARD(kj__enter(k->rt));
    return kj__kernel_launch(k, c, args);
}

kj_status kj__kernel_launch(kj_kernel *k, const kj_launch_config *c, void **args) {
    kj_runtime *rt = k->rt;
    KJ_FORWARD(check_config(k, c));
    /* 0 means "what the kernel's metadata asks for" (shared-dynamic), itself 0 when it asks nothing. */
    unsigned shared = c->shared_bytes ? c->shared_bytes : k->shared_dynamic;
    KJ_FORWARD(ensure_shared(k, shared));
    if (k->linked)
        KJ_FORWARD(ensure_pending_limit(rt, c->pending_launches ? c->pending_launches : k->pending_launches));
    int clustered = c->cluster[0] || c->cluster[1] || c->cluster[2];
    if (c->cooperative) KJ_FORWARD(check_cooperative(k, c, shared));
    if (clustered) KJ_FORWARD(check_cluster(k, c, shared));
    if (k->pdl || c->cooperative || clustered) {
        CUlaunchAttribute attrs[3];
        unsigned n = 0;
        if (k->pdl) {
            /* programmatic stream serialization: the kernel may start while the one before it
             * finishes; it waits (griddepcontrol.wait) before touching memory, as its metadata promises */
            attrs[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
            attrs[n++].value.programmaticStreamSerializationAllowed = 1;
        }
        if (c->cooperative) {
            attrs[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
            attrs[n++].value.cooperative = 1;
        }
        if (clustered) {
            attrs[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
            attrs[n].value.clusterDim.x = dim(c->cluster[0]);
            attrs[n].value.clusterDim.y = dim(c->cluster[1]);
            attrs[n++].value.clusterDim.z = dim(c->cluster[2]);
        }
        KJ_RETURN_IF(!rt->cu->cuLaunchKernelEx, KJ_ERR_UNSUPPORTED,
                     "cooperative and cluster launches need cuLaunchKernelEx (a CUDA 12 driver or newer)");
        CUlaunchConfig lc = {.gridDimX = dim(c->grid[0]),
                             .gridDimY = dim(c->grid[1]),
                             .gridDimZ = dim(c->grid[2]),
                             .blockDimX = dim(c->block[0]),
                             .blockDimY = dim(c->block[1]),
                             .blockDimZ = dim(c->block[2]),
                             .sharedMemBytes = shared,
                             .hStream = (CUstream)c->stream,
                             .attrs = attrs,
                             .numAttrs = n};
        KJ_CU(rt->cu->cuLaunchKernelEx(&lc, k->function, args, NULL), "kernel launch (cuLaunchKernelEx)");
        return KJ_OK;
    }
    KJ_CU(rt->cu->cuLaunchKernel(k->function, dim(c->grid[0]), dim(c->grid[1]), dim(c->grid[2]), dim(c->block[0]),
                                 dim(c->block[1]), dim(c->block[2]), shared, (CUstream)c->stream, args, NULL),
          "kernel launch (cuLaunchKernel)");
    return KJ_OK;
}
