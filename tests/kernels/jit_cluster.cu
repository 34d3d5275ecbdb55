// Thread-block clusters (compute capability 9.0): each block of a cluster sums its slice into its own
// shared memory; after cluster.sync() block 0 of the cluster reads every block's sum through
// distributed shared memory (map_shared_rank) and writes the cluster's total.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cluster_sums(const int *in, int n, long long *out) {
    __shared__ long long block_sum;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) block_sum = 0;
    __syncthreads();
    long long mine = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) mine += in[i];
    atomicAdd((unsigned long long *)&block_sum, (unsigned long long)mine);
    cluster.sync();
    if (cluster.block_rank() == 0 && threadIdx.x == 0) {
        long long total = 0;
        for (unsigned r = 0; r < cluster.num_blocks(); r++) total += *cluster.map_shared_rank(&block_sum, r);
        out[blockIdx.x / cluster.num_blocks()] = total;
    }
    cluster.sync(); /* no block leaves while another may still read its shared memory */
}
