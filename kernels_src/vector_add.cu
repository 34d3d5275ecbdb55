//@kernjit summary  Vector add c = a + b over f32 or f64, any n: 16-byte accesses, UNROLL of them in flight per thread
//@kernjit entry    vector_add vector_add_scalar
//@kernjit param    T f32 f64 = f32
//@kernjit tune     BLOCK_SIZE pow2 64..1024 = 256
//@kernjit tune     UNROLL 1 2 4 8 = 4
//@kernjit launch   WAVES pow2 1..1024 = 1024
#include "common.cuh"

// A memory-bound kernel reaches the device's bandwidth only with enough bytes in flight: each thread
// issues UNROLL 16-byte loads from each input before it uses any of them. The grid is at most WAVES
// times the blocks the device holds at once (the host reads WAVES; the compiler never sees it), the
// blocks striding through the rest: on the H200 a grid of one block per BLOCK_SIZE x UNROLL vectors,
// each block one pass, moved 4.29-4.35 TB/s against 4.04-4.12 for 1 to 4 waves (1 GiB arrays).

#if KJ_TYPE == KJ_T_f32
typedef float4 kj_vec;
#define KJ_VEC 4
__device__ __forceinline__ kj_vec kj_add(kj_vec x, kj_vec y) {
    return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}
#elif KJ_TYPE == KJ_T_f64
typedef double2 kj_vec;
#define KJ_VEC 2
__device__ __forceinline__ kj_vec kj_add(kj_vec x, kj_vec y) { return make_double2(x.x + y.x, x.y + y.y); }
#else
#error "vector_add: T must be f32 or f64"
#endif
__device__ __forceinline__ kj_elem kj_add(kj_elem x, kj_elem y) { return x + y; }

typedef unsigned long long kj_u64;

// c[i] = a[i] + b[i] for i < count, V being a 16-byte vector or one element. Consecutive threads take
// consecutive V's (coalesced); a thread's UNROLL V's lie `stride` apart, so every load of the unrolled
// group is one coalesced warp access. The loads of a group are all issued before the first add.
template <typename V>
__device__ __forceinline__ void kj_add_stream(const V *__restrict__ a, const V *__restrict__ b, V *__restrict__ c,
                                              kj_u64 count) {
    const kj_u64 stride = (kj_u64)gridDim.x * BLOCK_SIZE;
    kj_u64 i = (kj_u64)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < count; i += UNROLL * stride) {
        V x[UNROLL], y[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            x[u] = a[i + u * stride];
            y[u] = b[i + u * stride];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) c[i + u * stride] = kj_add(x[u], y[u]);
    }
    for (; i < count; i += stride) c[i] = kj_add(a[i], b[i]);
}

// a, b and c aligned to 16 bytes: n / KJ_VEC vectors, then the last n % KJ_VEC elements by the first
// threads of the grid. c may be a or b (each element is read by the thread that writes it, first).
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) vector_add(const kj_elem *a, const kj_elem *b, kj_elem *c,
                                                                    kj_u64 n) {
    const kj_u64 nvec = n / KJ_VEC;
    kj_add_stream<kj_vec>((const kj_vec *)a, (const kj_vec *)b, (kj_vec *)c, nvec);
    const kj_u64 tail = nvec * KJ_VEC + (kj_u64)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (tail < n) c[tail] = a[tail] + b[tail];
}

// Any alignment (pointers into the middle of an array): element by element, same loop.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) vector_add_scalar(const kj_elem *a, const kj_elem *b,
                                                                           kj_elem *c, kj_u64 n) {
    kj_add_stream<kj_elem>(a, b, c, n);
}
