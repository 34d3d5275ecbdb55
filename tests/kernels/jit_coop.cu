// A grid-wide sum with cooperative groups: every block adds its part to one word, the whole grid
// waits at grid.sync(), then block 0 copies the total. Launched cooperatively (grid.sync() needs it).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void coop_sum(const int *in, int n, unsigned long long *scratch, unsigned long long *out) {
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    unsigned long long mine = 0;
    for (long long i = grid.thread_rank(); i < n; i += grid.size()) mine += (unsigned)in[i];
    unsigned long long w = cg::reduce(warp, mine, cg::plus<unsigned long long>());
    if (warp.thread_rank() == 0) atomicAdd(scratch, w);
    grid.sync();
    if (grid.thread_rank() == 0) *out = *scratch;
}
