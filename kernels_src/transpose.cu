//@kernjit summary  Matrix transpose, any rows x cols: row/column access orders, shared-memory tiles, L1 mappings, vectors
//@kernjit entry    transpose_padded transpose_read_rows transpose_read_cols transpose_shared transpose_l1_8x32 transpose_l1_4x32 transpose_vec
//@kernjit param    ELEM_BYTES 2 4 8 = 4
//@kernjit tune     TILE_DIM 16 32 64 128 = 64
//@kernjit tune     BLOCK_ROWS 1 2 4 8 16 32 = 8
//@kernjit launch   GROUP 1 2 4 8 16 = 1
//@kernjit require  TILE_DIM % BLOCK_ROWS == 0
//@kernjit require  TILE_DIM * BLOCK_ROWS <= 1024
//@kernjit shared-dynamic transpose_padded: TILE_DIM * (TILE_DIM + 1) * ELEM_BYTES
//@kernjit carveout transpose_l1_8x32: max-l1
//@kernjit carveout transpose_l1_4x32: max-l1

// in is rows x cols, row-major; out is cols x rows, row-major: out[c * rows + r] = in[r * cols + c].
// A transpose moves bits, so the element is an unsigned integer of ELEM_BYTES bytes: one kernel serves
// f16 and bf16 (2), f32/i32/u32 (4) and f64/i64 (8).
//
// Every entry works on tiles (square but for transpose_vec's), numbered along the rows of tiles on a 1-D grid (blockIdx.x), so
// that no grid dimension limits the matrix (a 2-D grid allows only 65535 tile rows). Threads outside
// the matrix (the last row or column of tiles of a size that is not a multiple of the tile) skip their
// elements; they still reach __syncthreads.
//
// TILE_DIM, BLOCK_ROWS and GROUP shape transpose_padded only (TILE_DIM x BLOCK_ROWS threads per tile,
// each moving TILE_DIM / BLOCK_ROWS elements; the tiles in groups of GROUP rows of tiles, a knob of the
// launch alone: the host passes it as the kernel's last argument, so its values share one binary);
// the other entries keep the fixed 32 x 32 tile they are defined by, so that they compare access
// orders at the same shape.

#if ELEM_BYTES == 2
typedef unsigned short kj_word;
#elif ELEM_BYTES == 4
typedef unsigned int kj_word;
#elif ELEM_BYTES == 8
typedef unsigned long long kj_word;
#else
#error "transpose: ELEM_BYTES must be 2, 4 or 8"
#endif

typedef unsigned long long kj_u64;

#define KJ_TILE 32 // the fixed tile of every entry but transpose_padded
#define KJ_ROWS 8  // ... and its rows of threads (32 x 8 threads)

// The first input row and column of tile number `tile` for tiles of t x t.
__device__ __forceinline__ void kj_tile_origin(unsigned tile, unsigned cols, unsigned t, unsigned *row0,
                                               unsigned *col0) {
    const unsigned tiles_x = (cols + t - 1) / t;
    *row0 = tile / tiles_x * t;
    *col0 = tile % tiles_x * t;
}

// Tile number `tile` of t x t tiles taken in groups of `group` rows of tiles, each group walked down
// its columns: the blocks running at once then cover `group` rows of tiles side by side, so that what
// they write (rows of the output, columns of the input) fills runs of group x t elements of each
// output row, where one row of tiles writes runs of t. group 1 is kj_tile_origin's order. (A plain
// transpose on the H200 moved 8% more bytes with groups of 4 or 8 than along the rows of tiles.)
__device__ __forceinline__ void kj_tile_origin_grouped(unsigned tile, unsigned rows, unsigned cols, unsigned t,
                                                       unsigned group, unsigned *row0, unsigned *col0) {
    const unsigned tiles_x = (cols + t - 1) / t, tiles_y = (rows + t - 1) / t;
    const unsigned per_group = group * tiles_x, first = tile / per_group * group, in_group = tile % per_group;
    const unsigned height = tiles_y - first < group ? tiles_y - first : group;
    *row0 = (first + in_group % height) * t;
    *col0 = in_group / height * t;
}

// Read rows, write columns (the naive order). A warp reads 32 consecutive elements of one input row
// (coalesced) and writes them down an output column: 32 rows of out, one sector each, mostly unused.
extern "C" __global__ void __launch_bounds__(KJ_TILE * KJ_ROWS)
    transpose_read_rows(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows, unsigned cols) {
    unsigned row0, col0;
    kj_tile_origin(blockIdx.x, cols, KJ_TILE, &row0, &col0);
    const unsigned c = col0 + threadIdx.x;
    if (c >= cols) return;
#pragma unroll
    for (unsigned j = threadIdx.y; j < KJ_TILE; j += KJ_ROWS) {
        const unsigned r = row0 + j;
        if (r < rows) out[(kj_u64)c * rows + r] = in[(kj_u64)r * cols + c];
    }
}

// Read columns, write rows: the mirror. A warp writes 32 consecutive elements of one output row
// (coalesced) and gathers them down an input column; the sectors it does not use may still be in L1
// when the warps handling the next columns ask for them.
extern "C" __global__ void __launch_bounds__(KJ_TILE * KJ_ROWS)
    transpose_read_cols(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows, unsigned cols) {
    unsigned row0, col0;
    kj_tile_origin(blockIdx.x, cols, KJ_TILE, &row0, &col0);
    const unsigned r = row0 + threadIdx.x; // the input row = the output column this lane writes
    if (r >= rows) return;
#pragma unroll
    for (unsigned j = threadIdx.y; j < KJ_TILE; j += KJ_ROWS) {
        const unsigned c = col0 + j; // the input column = the output row
        if (c < cols) out[(kj_u64)c * rows + r] = in[(kj_u64)r * cols + c];
    }
}

// Shared-memory tile, 32 x 8 threads: the block reads its 32 x 32 tile row by row (coalesced) and
// writes it transposed into shared memory (tile[column][row]), then stores the tile's rows in order
// (coalesced). Writing a column of a 32-wide shared array puts the warp's 32 words in one bank: a
// 32-way bank conflict on every shared store, which transpose_padded removes.
extern "C" __global__ void __launch_bounds__(KJ_TILE * KJ_ROWS)
    transpose_shared(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows, unsigned cols) {
    __shared__ kj_word tile[KJ_TILE][KJ_TILE];
    unsigned row0, col0;
    kj_tile_origin(blockIdx.x, cols, KJ_TILE, &row0, &col0);
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned c = col0 + tx;
#pragma unroll
    for (unsigned j = 0; j < KJ_TILE; j += KJ_ROWS) {
        const unsigned r = row0 + ty + j;
        if (c < cols && r < rows) tile[tx][ty + j] = in[(kj_u64)r * cols + c];
    }
    __syncthreads();
    const unsigned oc = row0 + tx; // output column = input row
#pragma unroll
    for (unsigned j = 0; j < KJ_TILE; j += KJ_ROWS) {
        const unsigned orow = col0 + ty + j; // output row = input column
        if (oc < rows && orow < cols) out[(kj_u64)orow * rows + oc] = tile[ty + j][tx];
    }
}

// "L1 instead of shared memory": no shared array; the thread block's shape decides which sectors a
// warp touches, and the caches regroup the rest. BX x 32 threads cover a 32 x 32 tile: thread (x, y)
// moves input row y, columns x, x + BX, ... A warp (BX columns x 32/BX rows) then
//   BX = 8: reads 4 rows x 8 consecutive elements (whole 32-byte sectors for f32) and writes 8 output
//           rows x 4 consecutive elements (half sectors, completed in L2 by the neighbouring warp);
//   BX = 4: writes 4 output rows x 8 consecutive elements (whole sectors) and reads 8 rows x 4
//           elements (half sectors), the other half of each being the thread's next step, served by
//           L1.
// The metadata prefers the largest L1 (carveout max-l1) for both.
template <unsigned BX>
__device__ __forceinline__ void kj_transpose_l1(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows,
                                                unsigned cols) {
    unsigned row0, col0;
    kj_tile_origin(blockIdx.x, cols, KJ_TILE, &row0, &col0);
    const unsigned r = row0 + threadIdx.y;
    if (r >= rows) return;
#pragma unroll
    for (unsigned k = threadIdx.x; k < KJ_TILE; k += BX) {
        const unsigned c = col0 + k;
        if (c < cols) out[(kj_u64)c * rows + r] = in[(kj_u64)r * cols + c];
    }
}

extern "C" __global__ void __launch_bounds__(8 * KJ_TILE)
    transpose_l1_8x32(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows, unsigned cols) {
    kj_transpose_l1<8>(in, out, rows, cols);
}

extern "C" __global__ void __launch_bounds__(4 * KJ_TILE)
    transpose_l1_4x32(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows, unsigned cols) {
    kj_transpose_l1<4>(in, out, rows, cols);
}

// Bank-conflict-free tile: TILE_DIM x BLOCK_ROWS threads, the tile in dynamic shared memory
// (TILE_DIM rows of TILE_DIM + 1 words: the metadata's shared-dynamic). The tile is stored in order
// and read down its columns; the padding word shifts each row by one bank, so the 32 lanes reading a
// column hit 32 different banks (8-byte words are served per half warp, 16 lanes over 32 banks; 2-byte
// words land in distinct banks too). Both global sides are coalesced rows, and each thread has
// TILE_DIM / BLOCK_ROWS loads in flight before the barrier.
extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
    transpose_padded(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows, unsigned cols,
                     unsigned group) {
    extern __shared__ kj_word kj_padded_tile[];
    const unsigned pitch = TILE_DIM + 1;
    unsigned row0, col0;
    kj_tile_origin_grouped(blockIdx.x, rows, cols, TILE_DIM, group, &row0, &col0);
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned c = col0 + tx;
#pragma unroll
    for (unsigned j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        const unsigned r = row0 + ty + j;
        if (c < cols && r < rows) kj_padded_tile[(ty + j) * pitch + tx] = in[(kj_u64)r * cols + c];
    }
    __syncthreads();
    const unsigned oc = row0 + tx; // output column = input row
#pragma unroll
    for (unsigned j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        const unsigned orow = col0 + ty + j; // output row = input column
        if (oc < rows && orow < cols) out[(kj_u64)orow * rows + oc] = kj_padded_tile[tx * pitch + ty + j];
    }
}

// Vectors in registers: each thread loads KJ_V rows of KJ_V consecutive elements (one 16-byte vector
// each; 8 bytes for 2-byte words), transposes that KJ_V x KJ_V block in its registers and stores KJ_V
// output rows of KJ_V elements, again one vector each. No shared memory and no barrier, and every
// thread has KJ_V vector loads in flight. With 8 x 32 threads a warp (8 lanes across, 4 down) reads
// 4 rows x 128 contiguous bytes per load and writes 8 output rows x 64 contiguous bytes per store:
// whole 32-byte sectors on both sides. The block's tile is 8 KJ_V columns x 32 KJ_V rows.
// Vectors need every row of both matrices to start on a vector boundary (rows and cols multiples of
// KJ_V, aligned pointers); otherwise, and for a block partly outside the matrix, a thread moves its
// block element by element.
#if ELEM_BYTES == 8
#define KJ_V 2
#else
#define KJ_V 4
#endif
#define KJ_VEC_BX 8
#define KJ_VEC_BY 32

struct alignas(KJ_V * ELEM_BYTES) kj_vec_t {
    kj_word w[KJ_V];
};

extern "C" __global__ void __launch_bounds__(KJ_VEC_BX * KJ_VEC_BY)
    transpose_vec(const kj_word *__restrict__ in, kj_word *__restrict__ out, unsigned rows, unsigned cols) {
    const unsigned tile_cols = KJ_VEC_BX * KJ_V, tile_rows = KJ_VEC_BY * KJ_V;
    const unsigned tiles_x = (cols + tile_cols - 1) / tile_cols;
    const unsigned c0 = blockIdx.x % tiles_x * tile_cols + threadIdx.x * KJ_V;
    const unsigned r0 = blockIdx.x / tiles_x * tile_rows + threadIdx.y * KJ_V;
    if (r0 >= rows || c0 >= cols) return;
    const bool vectors = cols % KJ_V == 0 && rows % KJ_V == 0 &&
                         (((unsigned long long)in | (unsigned long long)out) % sizeof(kj_vec_t)) == 0;
    if (vectors) { // then r0 + KJ_V <= rows and c0 + KJ_V <= cols: both are multiples of KJ_V
        kj_vec_t v[KJ_V];
#pragma unroll
        for (unsigned i = 0; i < KJ_V; i++) v[i] = *(const kj_vec_t *)(in + (kj_u64)(r0 + i) * cols + c0);
#pragma unroll
        for (unsigned k = 0; k < KJ_V; k++) {
            kj_vec_t o;
#pragma unroll
            for (unsigned i = 0; i < KJ_V; i++) o.w[i] = v[i].w[k];
            *(kj_vec_t *)(out + (kj_u64)(c0 + k) * rows + r0) = o;
        }
        return;
    }
#pragma unroll
    for (unsigned i = 0; i < KJ_V; i++)
#pragma unroll
        for (unsigned k = 0; k < KJ_V; k++) {
            const unsigned r = r0 + i, c = c0 + k;
            if (r < rows && c < cols) out[(kj_u64)c * rows + r] = in[(kj_u64)r * cols + c];
        }
}
