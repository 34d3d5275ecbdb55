// The CUB reference for `kernjit bench reduce`: cub::DeviceReduce on the same buffers, built by nvcc
// into a plugin (libkernjit-cub.so) that the benchmark loads with dlopen, so that the CLI itself
// needs neither nvcc nor the CUDA runtime. The operators and types follow kernjit's numbering
// (kj_op, kj_type); f16 and bf16 accumulate in f32 as kernjit does.
#include <cub/device/device_reduce.cuh>
#include <cuda/functional>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>

namespace {

template <class In, class Acc, class Op>
cudaError_t run(void *temp, size_t *bytes, const void *in, size_t n, void *out, Op op, Acc init, cudaStream_t s) {
    return cub::DeviceReduce::Reduce(temp, *bytes, static_cast<const In *>(in), static_cast<Acc *>(out),
                                     static_cast<int64_t>(n), op, init, s);
}

template <class In, class Acc>
cudaError_t by_op(int op, void *temp, size_t *bytes, const void *in, size_t n, void *out, cudaStream_t s) {
    switch (op) {
    case 0: return run<In, Acc>(temp, bytes, in, n, out, cuda::std::plus<Acc>{}, Acc(0), s);
    case 1: return run<In, Acc>(temp, bytes, in, n, out, cuda::maximum<Acc>{}, std::numeric_limits<Acc>::lowest(), s);
    case 2: return run<In, Acc>(temp, bytes, in, n, out, cuda::minimum<Acc>{}, std::numeric_limits<Acc>::max(), s);
    case 3: return run<In, Acc>(temp, bytes, in, n, out, cuda::std::multiplies<Acc>{}, Acc(1), s);
    default: return cudaErrorInvalidValue;
    }
}

cudaError_t dispatch(int op, int type, void *temp, size_t *bytes, const void *in, size_t n, void *out, cudaStream_t s) {
    switch (type) {
    case 0: return by_op<int32_t, int32_t>(op, temp, bytes, in, n, out, s);
    case 1: return by_op<uint32_t, uint32_t>(op, temp, bytes, in, n, out, s);
    case 2: return by_op<int64_t, int64_t>(op, temp, bytes, in, n, out, s);
    case 3: return by_op<__half, float>(op, temp, bytes, in, n, out, s);
    case 4: return by_op<float, float>(op, temp, bytes, in, n, out, s);
    case 5: return by_op<double, double>(op, temp, bytes, in, n, out, s);
    case 6: return by_op<__nv_bfloat16, float>(op, temp, bytes, in, n, out, s);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" {

// Bytes of temporary storage CUB needs for this reduction; 0 on error.
__attribute__((visibility("default"))) size_t kj_cub_temp_bytes(int op, int type, size_t n) {
    size_t bytes = 0;
    return dispatch(op, type, nullptr, &bytes, nullptr, n, nullptr, 0) == cudaSuccess ? bytes : 0;
}

// Enqueues the reduction on stream (a CUstream / cudaStream_t); returns a cudaError_t.
__attribute__((visibility("default"))) int kj_cub_reduce(int op, int type, const void *in, size_t n, void *out,
                                                         void *temp, size_t temp_bytes, void *stream) {
    size_t bytes = temp_bytes;
    return dispatch(op, type, temp, &bytes, in, n, out, static_cast<cudaStream_t>(stream));
}

// The version of CUB this was built with (MMMmmmpp).
__attribute__((visibility("default"))) int kj_cub_version(void) { return CUB_VERSION; }

// The error's name, for messages.
__attribute__((visibility("default"))) const char *kj_cub_error_name(int error) {
    return cudaGetErrorName(static_cast<cudaError_t>(error));
}
}
