// Cooperative groups beyond reduce: each block of 256 threads stages its part of the input in shared
// memory with cg::memcpy_async (waited on with cg::wait), then every warp writes the inclusive prefix
// sums of its 32 elements with cg::inclusive_scan.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

extern "C" __global__ void warp_scans(const int *in, int *out, int n) {
    __shared__ int tile[256];
    cg::thread_block block = cg::this_thread_block();
    int base = blockIdx.x * 256;
    int count = min(256, n - base);
    cg::memcpy_async(block, tile, in + base, sizeof(int) * count);
    cg::wait(block);
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int t = threadIdx.x;
    int sum = cg::inclusive_scan(warp, t < count ? tile[t] : 0, cg::plus<int>());
    if (t < count) out[base + t] = sum;
}
