// out = 2 x in, after a wgmma fence: an instruction of sm_90a's architecture-specific set (Hopper's
// warpgroup matrix multiply), so the file compiles for sm_90a (and compute_90a) alone, and its code
// runs on compute capability 9.0 alone. Every thread of a warpgroup (128 threads) executes the fence:
// launch blocks of whole warpgroups.
extern "C" __global__ void twice_fenced(const float *in, float *out, int n) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
