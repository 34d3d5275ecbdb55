/* What the transpose's tuning target needs of transpose.c. */
#ifndef KJ_OPS_TRANSPOSE_H
#define KJ_OPS_TRANSPOSE_H

#include "ops/ops.h"

/* kj_transpose's launch of k, an entry whose blocks of block[0] x block[1] threads each move a tile
 * of tile[0] input rows by tile[1] columns, on a rows x cols matrix of elements of elem_bytes:
 * one block per tile, the dynamic shared memory the kernel's metadata asks for. group: 0 for the
 * fixed variants; transpose_padded's GROUP, its last argument, else. *tiles gets the blocks launched
 * (0 when the matrix is empty). KJ_ERR_LIMIT when the grid would be too large. The caller has entered
 * rt (kj__enter) on this thread. */
kj_status kj__transpose_launch(kj_runtime *rt, kj_kernel *k, const unsigned tile[2], const unsigned block[2],
                               unsigned group, kj_devptr in, kj_devptr out, size_t rows, size_t cols, kj_stream stream,
                               unsigned *tiles);

#endif
