/* kernjit bench reduce --host: what a kj_reduce costs the host, call after call. */
#ifndef KJ_BENCH_REDUCE_HOST_H
#define KJ_BENCH_REDUCE_HOST_H

#include "bench_util.h"

/* The defaults of --op, --type and --sizes with --host: the sizes where the host's share of a call
 * is largest (at 2^20 the GPU takes about 4 us). */
#define BENCH_HOST_OPS "sum"
#define BENCH_HOST_TYPES "f32"
#define BENCH_HOST_SIZES "2^10,2^12,2^14,2^16,2^18,2^20"
#define BENCH_HOST_MAX_SAMPLES 1000 /* the family's --samples bound */

/* Every op x type x size with the entry and configuration given (NULL, 0: the defaults): a row each of the host's time per
 * kj_reduce_async (the calls alone, the device drained between batches, untimed) and per kj_reduce
 * (to the result on the host). Returns the exit code. */
int bench_reduce_host(bench_ctx *c, const kj_reduce_options *config, const kj_op *ops, int n_ops, const kj_type *types,
                      int n_types, const uint64_t *sizes, int n_sizes);

#endif
