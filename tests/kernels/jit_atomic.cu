// A histogram of bytes into 256 bins with libcu++ atomics (cuda::atomic_ref, device scope).
#include <cuda/atomic>
#include <cuda/std/cstdint>

extern "C" __global__ void histogram(const unsigned char *in, int n, unsigned int *bins) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        cuda::atomic_ref<unsigned int, cuda::thread_scope_device> bin(bins[in[i]]);
        bin.fetch_add(1u, cuda::std::memory_order_relaxed);
    }
}
