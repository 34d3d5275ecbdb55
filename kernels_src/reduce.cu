//@kernjit summary  Parallel reductions (PMPP chapter 10) and a fast default; sum/max/min/prod over i32 u32 i64 f16 bf16 f32 f64
//@kernjit entry    reduce_fast reduce_simple reduce_convergent reduce_shared reduce_segmented reduce_coarsened reduce_init reduce_load
//@kernjit param    OP sum max min prod = sum
//@kernjit param    T i32 u32 i64 f16 bf16 f32 f64 = f32
//@kernjit tune     BLOCK_SIZE pow2 32..1024 = 256
//@kernjit tune     COARSE_FACTOR 1 2 4 8 16 32 = 8
//@kernjit launch   WAVES pow2 1..64 = 1
//@kernjit pdl      reduce_fast
//
// The entries, each a faithful form of its textbook idea (PMPP = Hwu, Kirk, El Hajj, "Programming
// Massively Parallel Processors", 4th ed., chapter 10):
//   reduce_simple      Fig. 10.6   one block; owner = 2*threadIdx.x, stride doubling; in place
//   reduce_convergent  Fig. 10.9   one block; stride halving, the active threads stay contiguous; in place
//   reduce_shared      Fig. 10.11  one block; partial results in shared memory, the input untouched
//   reduce_segmented   Fig. 10.13  many blocks, one segment of 2*BLOCK_SIZE each, combined atomically
//   reduce_coarsened   Fig. 10.15  as segmented, with COARSE_FACTOR elements per thread before the tree
//   reduce_fast        the default: 16-byte loads, COARSE_FACTOR loads in flight per thread, warp
//                      shuffles, and a deterministic last-block combine (no floating-point atomics);
//                      launched early (pdl), so back-to-back calls overlap their launch latency;
//                      its grid is at most WAVES times the blocks the device holds at once (a knob of
//                      the launch alone: the host reads it, the compiler never sees it)
// The single-block entries reduce at most 2*BLOCK_SIZE elements; the in-place ones (simple,
// convergent) work on a copy that reduce_load makes in the accumulator type, so the caller's input is
// never modified. Elements past n count as the identity, so any n works.
#include "common.cuh"

// ---- helpers ------------------------------------------------------------------------------------

__device__ __forceinline__ kj_acc kj_load_or_identity(const kj_elem *in, unsigned long long i, unsigned long long n) {
    return i < n ? kj_to_acc(in[i]) : kj_identity();
}

// Thread 0 ends up with the block's combination of v. Every thread of the block must call it, with
// the warps converged: the shuffles use the full mask.
__device__ __forceinline__ kj_acc kj_warp_reduce(kj_acc v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = kj_combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ kj_acc kj_block_reduce(kj_acc v, kj_acc *warp_partials) {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    v = kj_warp_reduce(v);
    if (lane == 0) warp_partials[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK_SIZE / 32 ? warp_partials[lane] : kj_identity();
        v = kj_warp_reduce(v);
    }
    return v;
}

// ---- small entries ------------------------------------------------------------------------------

// Writes the identity into the result, for the entries that combine into it atomically.
extern "C" __global__ void reduce_init(kj_acc *out) { *out = kj_identity(); }

// Copies up to 2*BLOCK_SIZE elements into a workspace of accumulators, the rest of it the identity:
// the in-place entries then work on the copy.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_load(const kj_elem *in, unsigned long long n,
                                                                     kj_acc *work) {
    for (unsigned i = threadIdx.x; i < 2u * BLOCK_SIZE; i += BLOCK_SIZE) work[i] = kj_load_or_identity(in, i, n);
}

// ---- the textbook family ------------------------------------------------------------------------

// Fig. 10.6: each thread owns the element at 2*threadIdx.x; in round k the threads whose index is a
// multiple of 2^k add the element 2^k further on. Divergent (the active threads spread out), in place.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_simple(kj_acc *input, kj_acc *output) {
    const unsigned i = 2u * threadIdx.x;
    for (unsigned stride = 1; stride <= BLOCK_SIZE; stride *= 2) {
        if (threadIdx.x % stride == 0) input[i] = kj_combine(input[i], input[i + stride]);
        __syncthreads();
    }
    if (threadIdx.x == 0) *output = input[0];
}

// Fig. 10.9: the stride halves from BLOCK_SIZE, so the active threads are always the first `stride`
// ones: whole warps retire together (less divergence) and the accesses stay coalesced.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_convergent(kj_acc *input, kj_acc *output) {
    const unsigned i = threadIdx.x;
    for (unsigned stride = BLOCK_SIZE; stride >= 1; stride /= 2) {
        if (threadIdx.x < stride) input[i] = kj_combine(input[i], input[i + stride]);
        __syncthreads();
    }
    if (threadIdx.x == 0) *output = input[0];
}

// Fig. 10.11: the first round reads global memory once into shared memory; the tree runs there,
// leaving the input untouched.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_shared(const kj_elem *input, unsigned long long n,
                                                                       kj_acc *output) {
    __shared__ kj_acc input_s[BLOCK_SIZE];
    const unsigned t = threadIdx.x;
    input_s[t] = kj_combine(kj_load_or_identity(input, t, n), kj_load_or_identity(input, t + BLOCK_SIZE, n));
    for (unsigned stride = BLOCK_SIZE / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (t < stride) input_s[t] = kj_combine(input_s[t], input_s[t + stride]);
    }
    if (t == 0) *output = input_s[0];
}

// Fig. 10.13: any n. Block b reduces the segment [2*BLOCK_SIZE*b, 2*BLOCK_SIZE*(b+1)) as
// reduce_shared does and folds its value into *output atomically (*output holds the identity first).
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_segmented(const kj_elem *input, unsigned long long n,
                                                                          kj_acc *output) {
    __shared__ kj_acc input_s[BLOCK_SIZE];
    const unsigned t = threadIdx.x;
    const unsigned long long i = 2ull * BLOCK_SIZE * blockIdx.x + t;
    input_s[t] = kj_combine(kj_load_or_identity(input, i, n), kj_load_or_identity(input, i + BLOCK_SIZE, n));
    for (unsigned stride = BLOCK_SIZE / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (t < stride) input_s[t] = kj_combine(input_s[t], input_s[t + stride]);
    }
    if (t == 0) kj_atomic_combine(output, input_s[0]);
}

// Fig. 10.15, thread coarsening: each block owns 2*COARSE_FACTOR*BLOCK_SIZE elements; each thread
// first combines 2*COARSE_FACTOR of them (strided by BLOCK_SIZE, so a warp's loads stay coalesced),
// then the block runs the shared-memory tree and folds its value into *output atomically.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_coarsened(const kj_elem *input, unsigned long long n,
                                                                          kj_acc *output) {
    __shared__ kj_acc input_s[BLOCK_SIZE];
    const unsigned t = threadIdx.x;
    const unsigned long long i = 2ull * COARSE_FACTOR * BLOCK_SIZE * blockIdx.x + t;
    kj_acc v = kj_identity();
#pragma unroll
    for (unsigned tile = 0; tile < 2 * COARSE_FACTOR; tile++)
        v = kj_combine(v, kj_load_or_identity(input, i + (unsigned long long)tile * BLOCK_SIZE, n));
    input_s[t] = v;
    for (unsigned stride = BLOCK_SIZE / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (t < stride) input_s[t] = kj_combine(input_s[t], input_s[t + stride]);
    }
    if (t == 0) kj_atomic_combine(output, input_s[0]);
}

// ---- the fast default ---------------------------------------------------------------------------

#define KJ_VEC_ELEMS (16 / (int)sizeof(kj_elem))

union kj_vec {
    uint4 bits;
    kj_elem e[KJ_VEC_ELEMS];
};

// A 16-byte load through the read-only path, with no L2 prefetch hint: on the H200 the
// `.L2::256B` hint held a streaming read at 4.20 TB/s against 4.44 without it (1 GiB, 1024 threads,
// 4 loads in flight a thread); on the H100 the two were within 0.5%. It needs nothing newer than
// sm_75's instructions.
__device__ __forceinline__ kj_vec kj_load_vec(const uint4 *p) {
    kj_vec v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.bits.x), "=r"(v.bits.y), "=r"(v.bits.z), "=r"(v.bits.w)
                 : "l"(p));
    return v;
}

// A block's partial travels to the combining block in "slots": one 64-bit word per 32 bits of the
// accumulator, the bits in the low half and 1 in the high half ("written"). A 64-bit store is seen
// whole or not at all, so a reader that sees the mark also sees the bits, without any fence. The
// combining block clears the slots after reading them, so a mark always belongs to the current call
// (the workspace starts zeroed).
#define KJ_SLOT_WORDS ((int)(sizeof(kj_acc) / 4))

__device__ __forceinline__ void kj_slot_store(unsigned long long *slot, kj_acc v) {
    const unsigned long long bits = (unsigned long long)kj_to_bits(v);
#pragma unroll
    for (int h = 0; h < KJ_SLOT_WORDS; h++) {
        const unsigned long long word = (1ull << 32) | (unsigned)(bits >> (32 * h));
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(slot + h), "l"(word) : "memory");
    }
}

__device__ __forceinline__ void kj_slot_load(const unsigned long long *slot, unsigned long long *word) {
#pragma unroll
    for (int h = 0; h < KJ_SLOT_WORDS; h++)
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word[h]) : "l"(slot + h) : "memory");
}

__device__ __forceinline__ bool kj_slot_marked(const unsigned long long *word) {
    bool marked = true;
#pragma unroll
    for (int h = 0; h < KJ_SLOT_WORDS; h++) marked = marked && (word[h] >> 32) != 0;
    return marked;
}

// The KJ_TAKE slots slot[0], slot[stride], ... (those whose index k * stride is below `count`) combined in that order into v,
// each cleared for the next call. Every slot's words are loaded before any is waited for, so a pass
// costs one round trip to L2 however many slots it takes; a slot not yet marked (its writer has taken
// its ticket, so the stores are on their way) is loaded again until it is.
#define KJ_TAKE 8
__device__ __forceinline__ kj_acc kj_slots_take(unsigned long long *slot, unsigned stride, unsigned count, kj_acc v) {
    unsigned long long word[KJ_TAKE][KJ_SLOT_WORDS];
#pragma unroll
    for (int k = 0; k < KJ_TAKE; k++)
        if (k * stride < count) kj_slot_load(slot + (unsigned long long)k * stride * KJ_SLOT_WORDS, word[k]);
#pragma unroll
    for (int k = 0; k < KJ_TAKE; k++) {
        if (k * stride >= count) break;
        unsigned long long *s = slot + (unsigned long long)k * stride * KJ_SLOT_WORDS;
        while (!kj_slot_marked(word[k])) {
            __nanosleep(32);
            kj_slot_load(s, word[k]);
        }
        unsigned long long bits = 0;
#pragma unroll
        for (int h = 0; h < KJ_SLOT_WORDS; h++) {
            bits |= (unsigned long long)(unsigned)word[k][h] << (32 * h);
            s[h] = 0;
        }
        v = kj_combine(v, kj_from_bits((kj_bits)bits));
    }
    return v;
}

// One pass over the input. The input splits into a head (elements before the first 16-byte boundary),
// a body of whole 16-byte vectors and a tail. Each thread walks the body with a grid stride, keeping
// COARSE_FACTOR vector loads in flight before it combines them, with one accumulator per vector lane.
// Each block reduces its threads (warp shuffles), stores its value in its slot and takes a ticket
// (words[0]); the block that takes the last ticket combines the slots in index order and writes
// *out, then resets the ticket counter for the next call. Every combination happens in an order fixed
// by n, the grid and the block size, so the result is bit-identical run after run (no float atomics).
// The ticket only elects the combining block, so it needs no ordering (relaxed); the marks in the
// slots carry the data (measured on the H100: ~0.4 us less per call than a release/acquire ticket).
// Launched with programmatic dependent launch: the kernel waits for the grids before it before it
// reads anything (the input, the counter and the slots may be theirs), and lets the next kernel be
// scheduled at once.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE) reduce_fast(const kj_elem *in, unsigned long long n,
                                                                     kj_acc *out, unsigned long long *slots,
                                                                     unsigned *words) {
    __shared__ kj_acc warp_partials[BLOCK_SIZE / 32];
    __shared__ bool last_block;
    kj_wait_for_prior_grids();
    kj_allow_dependent_launch();
    const unsigned long long addr = (unsigned long long)in;
    unsigned long long head = ((16 - (addr & 15)) & 15) / sizeof(kj_elem);
    if (head > n) head = n;
    const unsigned long long nvec = (n - head) / KJ_VEC_ELEMS;
    const unsigned long long tail = head + nvec * KJ_VEC_ELEMS;
    const uint4 *body = (const uint4 *)(in + head);
    const unsigned long long tid = (unsigned long long)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK_SIZE;

    kj_acc lane_acc[KJ_VEC_ELEMS];
#pragma unroll
    for (int k = 0; k < KJ_VEC_ELEMS; k++) lane_acc[k] = kj_identity();
    unsigned long long i = tid;
    for (; i + (COARSE_FACTOR - 1) * stride < nvec; i += COARSE_FACTOR * stride) {
        kj_vec v[COARSE_FACTOR];
#pragma unroll
        for (int u = 0; u < COARSE_FACTOR; u++) v[u] = kj_load_vec(body + i + u * stride);
#pragma unroll
        for (int u = 0; u < COARSE_FACTOR; u++)
#pragma unroll
            for (int k = 0; k < KJ_VEC_ELEMS; k++) lane_acc[k] = kj_combine(lane_acc[k], kj_to_acc(v[u].e[k]));
    }
    for (; i < nvec; i += stride) {
        kj_vec v = kj_load_vec(body + i);
#pragma unroll
        for (int k = 0; k < KJ_VEC_ELEMS; k++) lane_acc[k] = kj_combine(lane_acc[k], kj_to_acc(v.e[k]));
    }
    kj_acc v = lane_acc[0];
#pragma unroll
    for (int k = 1; k < KJ_VEC_ELEMS; k++) v = kj_combine(v, lane_acc[k]);
    // at most 15 elements outside the body: one each for the first threads of the grid
    if (tid < head) v = kj_combine(v, kj_to_acc(in[tid]));
    if (tid < n - tail) v = kj_combine(v, kj_to_acc(in[tail + tid]));

    v = kj_block_reduce(v, warp_partials);
    if (gridDim.x == 1) { // nothing to combine across blocks
        if (threadIdx.x == 0) *out = v;
        return;
    }
    if (threadIdx.x == 0) {
        kj_slot_store(slots + (unsigned long long)blockIdx.x * KJ_SLOT_WORDS, v);
        unsigned ticket;
        asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], 1;" : "=r"(ticket) : "l"(words) : "memory");
        last_block = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_block) return;
    // thread t combines the slots t, t + BLOCK_SIZE, t + 2 BLOCK_SIZE, ... in that order
    kj_acc w = kj_identity();
    for (unsigned j = threadIdx.x; j < gridDim.x; j += KJ_TAKE * BLOCK_SIZE)
        w = kj_slots_take(slots + (unsigned long long)j * KJ_SLOT_WORDS, BLOCK_SIZE, gridDim.x - j, w);
    w = kj_block_reduce(w, warp_partials);
    if (threadIdx.x == 0) {
        *out = w;
        words[0] = 0;
    }
}
