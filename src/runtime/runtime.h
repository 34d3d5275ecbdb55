/* The runtime's internals: its structs and the device queries, shared by every file of runtime/.
 * runtime.c is the bottom of the folder (devices, context, states, memory, streams); binary.c obtains
 * a prepared request's binary, kernel.c loads it as a kernel, launch.c launches it; kernel_get.c is
 * the door in front of them (kj_kernel_get), prefetch.c the background threads (kj_kernel_prefetch),
 * compile_api.c kj_compile and kj_emit; lifecycle.c creates and destroys a runtime on top of them
 * all. The layers above see none of this: they reach the runtime through context.h and launch.h
 * (ops/ by way of ops/ops.h). */
/* layers: private */
#ifndef KJ_RUNTIME_H
#define KJ_RUNTIME_H

#include <pthread.h>
#include <stdint.h>

#include "cache/cache.h"
#include "jit/arch.h"
#include "runtime/cuda_loader.h"
#include "base/map.h"
#include "base/log.h"
#include "cache/remote.h"
#include "cache/seed.h"
#include "runtime/context.h"

/* One state of kj__state (context.h). */
typedef struct kj__state_node {
    const kj__state_key *key;
    void *state;
    struct kj__state_node *next;
} kj__state_node;

typedef struct kj__prefetch kj__prefetch; /* prefetch.c */

typedef struct kj__module {
    CUmodule module;
    char **lowered; /* the lowered name of each name expression compiled into it, in order */
    size_t lowered_count;
    struct kj__module *next;
} kj__module;

struct kj_kernel {
    kj_runtime *rt;
    CUfunction function;
    char *kernel, *entry, *lowered_name, *key, *defines, *log;
    const char *arch;
    kj_origin origin;
    int linked;
    uint64_t pending_launches; /* from the metadata; 0 when none */
    int num_regs, shared_static, local_bytes, max_threads;
    unsigned dynamic_shared_allowed; /* the function's current dynamic shared-memory limit */
    /* the last occupancy answer: ops ask it on every launch, and the driver call costs microseconds */
    unsigned occupancy_block, occupancy_shared;
    int occupancy;
    unsigned shared_dynamic; /* the metadata's shared-dynamic for these macros; 0: none */
    int carveout;            /* the metadata's carveout (KJ__CARVEOUT_UNSET: none) */
    int pdl;                 /* launched with programmatic stream serialization */
    int prefetched;          /* loaded by a prefetch and not yet asked for: the first
                                        kj_kernel_get reports how it was obtained (origin) */
};

struct kj_runtime {
    kj__logger log;
    const kj__cuda_api *cu; /* NULL when compile-only */
    int has_device;
    CUdevice device;
    CUcontext context;
    int owns_primary; /* we retained the primary context and must release it */
    kj_device_info info;
    kj__target target; /* the options' arch, else the device's own (kj__arch_for_device) */
    int own_target;    /* target is the device's own (what the tuning database assumes) */
    char *search_path;
    kj__cache *cache;   /* NULL: memory only */
    int cache_given;    /* its folder was named (options, KERNJIT_CACHE_DIR), not the default */
    kj__remote *remote; /* NULL: no remote tier (remote.h) */
    kj__seed *seed;     /* NULL: no seed tier (seed.h: memory only, or the disk cache disabled) */

    pthread_mutex_t lock; /* guards everything below */
    kj__map requests;     /* request hash -> kj_kernel */
    kj__map modules;      /* cache key -> kj__module */
    kj__module *module_list;
    uint64_t pending_launch_limit; /* CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT as the launch code last
                                      saw or set it (launch.c) */
    kj_stats stats;
    kj__state_node *states; /* kj__state's, newest first: added under the lock, found without it */
    kj__prefetch *prefetch; /* made on the first kj_kernel_prefetch */
};

/* KJ_ERR_USAGE, naming the device, when code built for arch does not run on the runtime's device
 * (kj__arch_check_device). */
kj_status kj__runtime_runs(const kj_runtime *rt, const char *arch);

/* Prepares req (jit/prepare.h) for this runtime's search path and target; for_launch: for a kernel to
 * launch on its device, which must run the request's target. */
typedef struct kj__prepared kj__prepared;
kj_status kj__runtime_prepare(const kj_runtime *rt, const kj_request *req, int for_launch, kj__prepared *p);

/* The device `ordinal` as kj_device_query describes it, through an open driver table. */
kj_status kj__query_device(const kj__cuda_api *cu, int ordinal, kj_device_info *info);

#endif
