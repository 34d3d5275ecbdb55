// A template kernel with exactly one explicit instance: launched with no entry, kernjit takes the
// instance axpy<double>.
template <typename T>
__global__ void __launch_bounds__(256) axpy(T *y, const T *x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

template __global__ void axpy<double>(double *, const double *, double, int);
