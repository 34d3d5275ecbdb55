// A 2-D grid: out (w rows of h columns) is the transpose of in (h rows of w columns).
__global__ void transpose(const float *in, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[(size_t)x * h + y] = in[(size_t)y * w + x];
}
