// A template kernel with no explicit instance: launched as scale.cu:'scale<float,256>' (an NVRTC name
// expression instantiates it). BLOCK only has to match the launch's block size.
template <typename T, int BLOCK>
__global__ void scale(T *x, T a, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) x[i] *= a;
}
