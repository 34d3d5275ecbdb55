/* The runtime's internals, shared by runtime.c (device, context, memory), kernel.c (the request
 * pipeline and launches), describe.c and the host side of each kernel family in ops/. */
#ifndef KJ_RUNTIME_H
#define KJ_RUNTIME_H

#include <pthread.h>
#include <stdint.h>

#include "cache/cache.h"
#include "runtime/cuda_loader.h"
#include "base/map.h"
#include "base/log.h"
#include "cache/remote.h"

/* Per-runtime state that a kernel family keeps (work buffers, chosen configurations). */
typedef enum kj__op_slot { KJ__SLOT_REDUCE = 0, KJ__SLOT_CDP, KJ__SLOT_TUNEDB, KJ__SLOT_COUNT } kj__op_slot;
typedef void (*kj__slot_destroy)(kj_runtime *rt, void *state);

typedef struct kj__prefetch kj__prefetch; /* prefetch.c */

typedef struct kj__module {
    CUmodule module;
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
    unsigned shared_dynamic;         /* the metadata's shared-dynamic for these macros; 0: none */
    int carveout;                    /* the metadata's carveout (KJ__CARVEOUT_UNSET: none) */
    int pdl;                         /* launched with programmatic stream serialization */
    int prefetched;                  /* loaded by a prefetch and not yet asked for: the first
                                        kj_kernel_get reports how it was obtained (origin) */
};

struct kj_runtime {
    kj__logger log;
    const kj__cuda_api *cu;     /* NULL when compile-only */
    int has_device;
    CUdevice device;
    CUcontext context;
    int owns_primary;           /* we retained the primary context and must release it */
    kj_device_info info;
    char arch[24];              /* the compile target: "sm_90", or "compute_XY" (PTX) */
    int arch_is_ptx;
    char cache_arch[16];        /* the cache folder: "sm_XY" of the device (or of arch) */
    char *search_path;
    kj__cache *cache;           /* NULL: memory only */
    kj__remote *remote;         /* NULL: no remote tier (remote.h) */

    pthread_mutex_t lock;       /* guards everything below */
    kj__map requests;           /* request hash -> kj_kernel */
    kj__map modules;            /* cache key -> CUmodule */
    kj__module *module_list;
    uint64_t pending_launch_limit; /* what we set CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT to */
    kj_stats stats;
    void *slots[KJ__SLOT_COUNT];
    kj__slot_destroy slot_destroy[KJ__SLOT_COUNT];
    kj__prefetch *prefetch;     /* made on the first kj_kernel_prefetch */
};

/* What makes a request malformed whatever its kernel (kernel.c): KJ_ERR_USAGE naming it. */
kj_status kj__check_request(const kj_request *req);

/* Makes the runtime's context current on this thread; KJ_ERR_NO_DEVICE when compile-only. */
kj_status kj__enter(kj_runtime *rt);

/* Returns the family's state, creating it with create() on first use (under the runtime's lock). */
kj_status kj__slot(kj_runtime *rt, kj__op_slot slot, kj_status (*create)(kj_runtime *rt, void **state),
                   kj__slot_destroy destroy, void **state);

/* The kernel pipeline's teardown, called by kj_runtime_destroy. */
void kj__kernels_destroy(kj_runtime *rt);

/* Parses "sm_90" into 90; -1 when malformed. */
int kj__arch_cc(const char *arch);

#endif
