//@kernjit summary  Dynamic parallelism (CDP2): nested hello world and the recursive reductions of Professional CUDA C Programming, ch. 3
//@kernjit entry    nested_reduce nested_reduce_nosync nested_reduce2 nested_fold nested_hello
//@kernjit param    T i32 u32 i64 f32 f64 = i32
//@kernjit param    COUNT_LAUNCHES 0 1 = 0
//@kernjit rdc
//@kernjit limit    pending-launches 16384
//
// The book's programs were written for CDP1, where a parent thread could wait for its children with
// device-side cudaDeviceSynchronize(). That call does not exist on compute capability 9.0 (CDP2), so
// each kernel here says which named stream replaces it and why that is correct:
//
//   cudaStreamFireAndForget  the child may start at once, concurrently with the rest of its parent
//                            grid; nothing but the end of the whole launch tree waits for it.
//   cudaStreamTailLaunch     the child starts only after the launching grid, and all the work that
//                            grid launched into other streams, has completed; tail launches of one
//                            grid run one after another, each with all its descendants.
//
// Under CDP2 a parent can never read what its child wrote (there is no wait); only work that runs
// after the child can: a tail-launched grid, or the host, or a kernel the host launches after the
// tree in the same stream (a host-launched grid is complete only when every grid it spawned, tail
// launches included, is complete). So none of these kernels consumes a child's result in the parent:
// each recursion level writes its result where the next level, or the host's fold, reads it.
//
// The reductions reduce in place (the input is overwritten, as in the book) and write one partial
// sum per top-level block; nested_fold adds those up. Any n works: elements past n are never read.
// Every device-side launch is checked (cdp.cuh): failures reach the host as an error, not as a
// partial sum.
#include "common.cuh"
#include "cdp.cuh"

#if KJ_TYPE == KJ_T_f16 || KJ_TYPE == KJ_T_bf16
#error "the nested reductions work in place and need an element type that is its own accumulator"
#endif

typedef unsigned long long kj_u64;

// Valid elements of the segment of `size` that starts at `start`, when n elements exist in all.
__device__ __forceinline__ kj_u64 kj_segment_count(kj_u64 n, kj_u64 start, kj_u64 size) {
    return n - start < size ? n - start : size;
}

// The last step of every recursion: two elements (or one) left.
__device__ __forceinline__ kj_acc kj_pair(const kj_elem *seg, kj_u64 count) {
    return count > 1 ? kj_combine(seg[0], seg[1]) : seg[0];
}

// The book's nestedReduce (gpuRecursiveReduce): each block folds the upper half of its segment onto
// the lower half in place, then its thread 0 launches a one-block grid with half the threads on the
// lower half, down to two elements. blockDim.x == isize. The top-level grid has ceil(n / isize)
// blocks and writes sums[blockIdx.x]; a child grid has one block and writes the slot its parent
// passes. Launches: log2(isize) - 1 per top-level block.
//
// Why the barrier and fire-and-forget are correct under CDP2: a child sees the global-memory writes
// that its launching thread made, or had seen, before the launch. __syncthreads() makes every
// thread's fold visible to thread 0 before it launches, so the child reads the whole folded half.
// Nobody needs to wait for the child (the book's cudaDeviceSynchronize() and second barrier only
// held the parent alive): the child writes the block's sum itself and the host reads it after the
// whole tree. Fire-and-forget lets the chains of all blocks run concurrently.
extern "C" __global__ void __launch_bounds__(1024)
    nested_reduce(kj_elem *data, kj_acc *sums, kj_u64 n, unsigned isize, kj_cdp_status *status) {
    const unsigned t = threadIdx.x;
    const kj_u64 start = (kj_u64)blockIdx.x * isize;
    kj_elem *seg = data + start;
    kj_acc *sum = sums + blockIdx.x;
    const kj_u64 count = kj_segment_count(n, start, isize);
    if (isize <= 2) {
        if (t == 0) *sum = kj_pair(seg, count);
        return;
    }
    const unsigned half = isize / 2;
    if (t + half < count) seg[t] = kj_combine(seg[t], seg[t + half]);
    __syncthreads();
    if (t == 0) {
        nested_reduce<<<1, half, 0, cudaStreamFireAndForget>>>(seg, sum, count < half ? count : half, half, status);
        kj_cdp_check(status);
    }
}

// The book's nestedReduceNosync: the same recursion without the block barrier. Under CDP1 the child
// could read halves that other threads had not folded yet. Here the child goes to the tail-launch
// stream: it starts only when this whole grid has completed, so every thread's fold is done and
// visible, with no barrier. The price is that the tail launches of one grid run one at a time (each
// with all its descendants), so the blocks' chains are serialized: the device runs the
// grid x (log2(isize) - 1) launches one after another. Same launches as nested_reduce.
extern "C" __global__ void __launch_bounds__(1024)
    nested_reduce_nosync(kj_elem *data, kj_acc *sums, kj_u64 n, unsigned isize, kj_cdp_status *status) {
    const unsigned t = threadIdx.x;
    const kj_u64 start = (kj_u64)blockIdx.x * isize;
    kj_elem *seg = data + start;
    kj_acc *sum = sums + blockIdx.x;
    const kj_u64 count = kj_segment_count(n, start, isize);
    if (isize <= 2) {
        if (t == 0) *sum = kj_pair(seg, count);
        return;
    }
    const unsigned half = isize / 2;
    if (t + half < count) seg[t] = kj_combine(seg[t], seg[t + half]);
    if (t == 0) {
        nested_reduce_nosync<<<1, half, 0, cudaStreamTailLaunch>>>(seg, sum, count < half ? count : half, half,
                                                                   status);
        kj_cdp_check(status);
    }
}

// The book's gpuRecursiveReduce2: every block folds with `stride` threads (blockDim.x == stride) on
// its segment of `dim` elements, and block 0 alone launches the next level for the whole grid, with
// half the threads, until the stride is 1. Launches: log2(dim) - 1 in all, whatever n is.
//
// Why the tail launch is correct under CDP2 (and needed): the child folds every block's segment, so
// it must see the writes of all blocks, not only block 0's. In the book the child could start while
// other blocks of its parent were still folding. A tail-launched child starts only after the whole
// parent grid has completed, so all of its writes are visible; each level waits for the one before,
// which is what the recursion needs.
extern "C" __global__ void __launch_bounds__(1024)
    nested_reduce2(kj_elem *data, kj_acc *sums, kj_u64 n, unsigned stride, unsigned dim, kj_cdp_status *status) {
    const unsigned t = threadIdx.x;
    const kj_u64 start = (kj_u64)blockIdx.x * dim;
    kj_elem *seg = data + start;
    // After the levels above, only the first 2 * stride elements of the segment are still live.
    const kj_u64 count = kj_segment_count(n, start, dim < 2ull * stride ? dim : 2ull * stride);
    if (stride <= 1) {
        if (t == 0) sums[blockIdx.x] = kj_pair(seg, count);
        return;
    }
    if (t + stride < count) seg[t] = kj_combine(seg[t], seg[t + stride]);
    if (t == 0 && blockIdx.x == 0) {
        nested_reduce2<<<gridDim.x, stride / 2, 0, cudaStreamTailLaunch>>>(data, sums, n, stride / 2, dim, status);
        kj_cdp_check(status);
    }
}

// Adds the m partial sums into *out: one block, launched by the host after the launch tree in the same
// stream, so it runs after every grid of the tree has written its sum. blockDim.x is a power of two
// up to 1024. m = 0 gives 0.
extern "C" __global__ void __launch_bounds__(1024) nested_fold(const kj_acc *sums, kj_u64 m, kj_acc *out) {
    __shared__ kj_acc part[1024];
    const unsigned t = threadIdx.x;
    kj_acc v = kj_identity();
    for (kj_u64 i = t; i < m; i += blockDim.x) v = kj_combine(v, sums[i]);
    part[t] = v;
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        __syncthreads();
        if (t < s) part[t] = kj_combine(part[t], part[t + s]);
    }
    if (t == 0) *out = part[0];
}

// The book's nestedHelloWorld: every thread greets; thread 0 of each block launches one block with half
// the threads, one level deeper, down to one thread. The host launches it with size == blockDim.x and
// depth 0. Launches: log2(size) per top-level block.
//
// The tail launch makes the output readable: a child prints only after its whole parent grid has,
// so the lines of one level come before those of the next, and the chains of the top-level blocks
// follow one another. (Fire-and-forget would be just as correct; the lines would interleave.)
extern "C" __global__ void __launch_bounds__(1024) nested_hello(unsigned size, unsigned depth, kj_cdp_status *status) {
    printf("Recursion=%u: Hello World from thread %u block %u\n", depth, threadIdx.x, blockIdx.x);
    const unsigned half = size / 2;
    if (threadIdx.x == 0 && half > 0) {
        nested_hello<<<1, half, 0, cudaStreamTailLaunch>>>(half, depth + 1, status);
        kj_cdp_check(status);
    }
}
