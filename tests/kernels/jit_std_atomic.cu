// libcu++'s standard-library form: cuda::std::atomic_ref counts the elements above a threshold
// (fetch_add) and keeps the largest element seen (a compare-exchange loop, as standard C++ writes it).
#include <cuda/std/atomic>

extern "C" __global__ void count_above(const int *in, int n, int threshold, unsigned long long *count, int *largest) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuda::std::atomic_ref<unsigned long long> above(*count);
    cuda::std::atomic_ref<int> top(*largest);
    if (in[i] > threshold) above.fetch_add(1ull, cuda::std::memory_order_relaxed);
    int seen = top.load(cuda::std::memory_order_relaxed);
    while (in[i] > seen && !top.compare_exchange_weak(seen, in[i], cuda::std::memory_order_relaxed)) {
    }
}
