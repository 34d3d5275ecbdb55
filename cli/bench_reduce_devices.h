/* kernjit bench reduce --devices: kj_reduce_devices over several devices against a local kj_reduce of
 * the same per-device size. */
#ifndef KJ_BENCH_REDUCE_DEVICES_H
#define KJ_BENCH_REDUCE_DEVICES_H

#include "bench_util.h"
#include "devices.h"

/* The defaults of --op, --type and --sizes with --devices (sizes per device, from one element, where
 * the call is all overhead, to 2^28 f32, the 1 GiB per device of the NCCL target). */
#define BENCH_DEVICES_OPS "sum"
#define BENCH_DEVICES_TYPES "f32"
#define BENCH_DEVICES_SIZES "1,2^10,2^20,2^24,2^28"

/* Every op x type x size (elements per device) over the devices listed, c->rt being the first's: a
 * row each, then the target's line. Returns the exit code. */
int bench_reduce_devices(bench_ctx *c, const cli_devices *d, const kj_op *ops, int n_ops, const kj_type *types,
                         int n_types, const uint64_t *sizes, int n_sizes);

#endif
