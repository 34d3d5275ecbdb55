//@kernjit summary  Parallel reductions (PMPP chapter 10): sum/max/min/prod over i32 u32 i64 f16 f32 f64
//@kernjit entry    reduce_coarsened reduce_init
//@kernjit param    OP sum max min prod = sum
//@kernjit param    T i32 u32 i64 f16 f32 f64 = f32
//@kernjit tune     BLOCK_SIZE pow2 32..1024 = 256
//@kernjit tune     COARSE_FACTOR 1 2 4 8 16 32 = 8
#include "common.cuh"

// Writes the operator's identity into the result, so that the atomic-combining entries can start
// from it. Runs as one thread.
extern "C" __global__ void reduce_init(kj_acc *out) { *out = kj_identity(); }

// PMPP Fig. 10.15, thread coarsening: each block owns a segment of 2 * COARSE_FACTOR * BLOCK_SIZE
// elements; each thread first combines 2 * COARSE_FACTOR of them (strided by BLOCK_SIZE, so the warp's
// loads stay coalesced), then the block runs the shared-memory tree with stride halving, and thread 0
// folds the block's value into *out atomically. Out-of-range elements count as the identity, so any n
// works. *out must hold the identity first (reduce_init).
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_coarsened(const kj_elem *in, unsigned long long n,
                                                                          kj_acc *out) {
    __shared__ kj_acc partial[BLOCK_SIZE];
    const unsigned t = threadIdx.x;
    const unsigned long long segment = 2ull * COARSE_FACTOR * BLOCK_SIZE * blockIdx.x;
    const unsigned long long i = segment + t;
    kj_acc v = kj_identity();
#pragma unroll
    for (unsigned tile = 0; tile < 2 * COARSE_FACTOR; tile++) {
        const unsigned long long j = i + (unsigned long long)tile * BLOCK_SIZE;
        if (j < n) v = kj_combine(v, kj_to_acc(in[j]));
    }
    partial[t] = v;
    for (unsigned stride = BLOCK_SIZE / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (t < stride) partial[t] = kj_combine(partial[t], partial[t + stride]);
    }
    if (t == 0) kj_atomic_combine(out, partial[0]);
}
