/* What the vector add's tuning target needs of vector_add.c. */
#ifndef KJ_OPS_VECTOR_ADD_H
#define KJ_OPS_VECTOR_ADD_H

#include "ops/ops.h"

/* kj_vector_add's launch of k (the entry for these pointers, built with BLOCK_SIZE = block and
 * UNROLL = unroll) on stream: the grid sized to the data, at most `waves` times the blocks the device
 * holds at once, written to *grid (0 when n is 0). The caller has entered rt (kj__enter) on this
 * thread. */
kj_status kj__vector_add_launch(kj_runtime *rt, kj_kernel *k, kj_type type, unsigned block, unsigned unroll,
                                unsigned waves, kj_devptr a, kj_devptr b, kj_devptr c, size_t n, kj_stream stream,
                                unsigned *grid);

#endif
