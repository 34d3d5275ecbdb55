// Kernels whose resources are known before they run (test-resources): an array indexed at run
// time cannot live in registers, so it takes a stack frame of at least its 1024 bytes; a shared
// tile of 64 floats is 256 bytes of static shared memory; forty values alive at once do not fit in
// the 24 registers that -maxrregcount=24 leaves, so some are spilled.
extern "C" __global__ void local_array(const int *index, float *out) {
    float table[256];
    for (int i = 0; i < 256; i++) table[i] = i * 0.5f + index[i % 7];
    out[threadIdx.x] = table[index[threadIdx.x] & 255];
}

extern "C" __global__ void shared_tile(const float *in, float *out) {
    __shared__ float tile[64];
    tile[threadIdx.x % 64] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[63 - threadIdx.x % 64];
}

extern "C" __global__ void many_live(const float *in, float *out, int stride) {
    float v[40];
#pragma unroll
    for (int i = 0; i < 40; i++) v[i] = in[threadIdx.x + i * stride];
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < 40; i++) acc += v[i] * v[39 - i] + v[(i * 7) % 40];
    out[threadIdx.x] = acc;
}
