// Tensor cores through <mma.h> (one 16x16x16 tile, half in, float out) and a block-scope barrier
// from <cuda/barrier>: compiled, to show the toolkit's headers need no options.
#include <cuda/barrier>
#include <mma.h>

extern "C" __global__ void mma_tile(const __half *a, const __half *b, float *c) {
    using namespace nvcuda;
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    bar.arrive_and_wait();
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
