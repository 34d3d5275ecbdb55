// Dynamic parallelism with no kernjit metadata: each block launches a child grid that squares its
// slice (fire and forget), and a tail-launched grid marks the parent's completion after every child.
__global__ void square(int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * v[i];
}

__global__ void mark_done(int *flag) { *flag = 1; }

extern "C" __global__ void parent(int *v, int n, int slice, int *flag) {
    if (threadIdx.x == 0) {
        int start = blockIdx.x * slice;
        int count = min(slice, n - start);
        if (count > 0) square<<<(count + 127) / 128, 128, 0, cudaStreamFireAndForget>>>(v + start, count);
        if (blockIdx.x == 0) mark_done<<<1, 1, 0, cudaStreamTailLaunch>>>(flag);
    }
}
