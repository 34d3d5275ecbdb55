// One block per 4096 elements: CUB's BlockReduce for the block's sum and WarpReduce for each warp's
// maximum, written per block (the host adds and compares).
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

template <int THREADS>
__global__ void cub_sums(const float *in, int n, float *block_sums, float *warp_max) {
    using BlockSum = cub::BlockReduce<float, THREADS>;
    using WarpMax = cub::WarpReduce<float>;
    __shared__ typename BlockSum::TempStorage block_tmp;
    __shared__ typename WarpMax::TempStorage warp_tmp[THREADS / 32];
    float sum = 0.0f, top = -3.0e38f;
    for (int i = blockIdx.x * 4096 + threadIdx.x; i < min(n, (int)(blockIdx.x + 1) * 4096); i += THREADS) {
        sum += in[i];
        top = fmaxf(top, in[i]);
    }
    float total = BlockSum(block_tmp).Sum(sum);
    float wmax = WarpMax(warp_tmp[threadIdx.x / 32]).Reduce(top, ::cuda::maximum<>{});
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
    if (threadIdx.x % 32 == 0) warp_max[blockIdx.x * (THREADS / 32) + threadIdx.x / 32] = wmax;
}
template __global__ void cub_sums<256>(const float *, int, float *, float *);
