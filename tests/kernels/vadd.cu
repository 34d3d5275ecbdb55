// c = a + b, written as plain CUDA C++ (no extern "C"): kernjit launch finds it by its source name.
__global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
