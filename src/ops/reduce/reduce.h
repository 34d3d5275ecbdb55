/* What the reduction's tuning target needs of reduce.c, and what the reductions across devices and
 * ranks share. */
#ifndef KJ_OPS_REDUCE_H
#define KJ_OPS_REDUCE_H

#include "ops/ops.h"

/* Facts about a reduction entry that kj_reduce runs: 0 when `name` is one (NULL is the default
 * entry), with whether it uses COARSE_FACTOR and whether it reduces in a single block (at most
 * 2 x BLOCK_SIZE elements); -1 for other names (the helpers reduce_init and reduce_load included). */
int kj__reduce_entry(const char *name, int *coarsens, int *single_block);

/* The entries kj_reduce runs, for messages: "reduce_fast (the default), reduce_simple, ..." */
extern const char kj__reduce_entry_list[];

/* One reduction as kj_reduce_async runs it, once its configuration is chosen. */
typedef struct kj__reduce_job {
    const char *entry; /* one that kj_reduce runs */
    kj_op op;
    kj_type type;
    kj_devptr input;
    size_t n;
    kj_devptr result;
    unsigned block, coarse; /* the kernel's BLOCK_SIZE and COARSE_FACTOR */
    unsigned waves;         /* reduce_fast's grid: at most WAVES times the blocks the device holds at once */
    kj_stream stream;
    kj_kernel *helper; /* the helper entry's kernel at these macros: reduce_load for the entries
                                that work on a copy, reduce_init for those that combine with atomics;
                                NULL for the others (kj__reduce_helper) */
} kj__reduce_job;

/* The job's helper kernel (NULL when its entry has none), as kj_kernel_get gets it. */
kj_status kj__reduce_helper(kj_runtime *rt, const kj__reduce_job *job, kj_kernel **out);

/* Launches the job with k, its entry's kernel, and its helper on the job's stream; *grid gets the
 * blocks of the main launch. The caller has entered rt (kj__enter) on this thread. */
kj_status kj__reduce_launch(kj_runtime *rt, kj_kernel *k, const kj__reduce_job *job, unsigned *grid);

/* The longest a reduction waits for work it queued (kj_reduce_devices' parts, kj_reduce_nccl's
 * collectives) before it reports that work as not done: far past any reduction, short of forever
 * (a kernel queued before it that never ends, a rank that never calls). */
#define KJ__REDUCE_WAIT_LIMIT_MS (120 * 1000.0)

#endif
