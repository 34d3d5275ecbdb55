// The kernels of a program of two sources: they call a __device__ function and read a __device__
// variable that only link_lib.cu defines, so they run only once nvJitLink has linked both.
extern __device__ float lib_weight;
__device__ float lib_blend(float x, float y);

// out[i] = lib_blend(x[i], y[i]) * lib_weight
extern "C" __global__ void blend(const float *x, const float *y, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = lib_blend(x[i], y[i]) * lib_weight;
}

// sums[b] = the blended values of block b's 64 elements, added in a fixed order through a shared tile
extern "C" __global__ void tile_sums(const float *x, const float *y, float *sums, int n) {
    __shared__ float tile[64];
    int i = blockIdx.x * 64 + threadIdx.x;
    tile[threadIdx.x] = i < n ? lib_blend(x[i], y[i]) : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int k = 0; k < 64; k++) s += tile[k];
        sums[blockIdx.x] = s;
    }
}
