// y = a * x + y in half and bfloat16: products rounded to each type as the hardware does (the host
// reference rounds the same way, once per operation).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void axpy_half(int n, float a, const __half *x, __half *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd(__hmul(__float2half(a), x[i]), y[i]);
}

extern "C" __global__ void axpy_bf16(int n, float a, const __nv_bfloat16 *x, __nv_bfloat16 *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd(__hmul(__float2bfloat16(a), x[i]), y[i]);
}
