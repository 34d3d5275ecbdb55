// The example program's own kernel: y = a * x + y. kernjit needs its text at run time too (the cache
// key is computed from it), so it ships beside the program with the seed built from it.
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
