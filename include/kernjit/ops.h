/*
 * kernjit/ops.h: kernjit's built-in kernel families: reductions, vector add, matrix transpose, the
 * recursive reductions and hello world of dynamic parallelism, and Mandelbrot images. Each is a host
 * function that picks a configuration (given, tuned or default), gets its kernel from the runtime's
 * pipeline and launches it. The conventions are kernjit.h's, which this header includes.
 */
#ifndef KERNJIT_OPS_H
#define KERNJIT_OPS_H

#include "kernjit.h" /* kernjit/kernjit.h, beside this one */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------
 * Reductions (kernels_src/reduce.cu)
 * ---------------------------------------------------------------------------------------------- */
typedef enum kj_op { KJ_OP_SUM = 0, KJ_OP_MAX, KJ_OP_MIN, KJ_OP_PROD, KJ_OP_COUNT_ } kj_op;
/* Element types. The result of a reduction has the accumulator type: the element type itself,
 * except f16 and bf16, which are accumulated and returned as f32 (a float). Integer sums and products
 * wrap as C's unsigned arithmetic does (two's complement for i32/i64). max and min return NaN when any
 * element is NaN. n = 0 gives the operator's identity. The values are part of the ABI: a new type
 * takes the next number, and KJ_TYPE_COUNT_ grows (so a type that is out of range is refused). */
typedef enum kj_type {
    KJ_TYPE_I32 = 0,
    KJ_TYPE_U32 = 1,
    KJ_TYPE_I64 = 2,
    KJ_TYPE_F16 = 3, /* IEEE binary16 */
    KJ_TYPE_F32 = 4,
    KJ_TYPE_F64 = 5,
    KJ_TYPE_BF16 = 6, /* bfloat16: the high half of an f32 */
    KJ_TYPE_COUNT_
} kj_type;

/* Names and sizes: static strings, thread-safe, no errors. */
KJ_API const char *kj_op_name(kj_op op);       /* "sum"; "?" when out of range */
KJ_API const char *kj_type_name(kj_type type); /* "f32"; "?" when out of range */
/* Parse "sum"/"max"/... and "i32"/"f16"/"bf16"/... into *op / *type (not NULL). Thread-safe.
 * Errors: KJ_ERR_USAGE naming the allowed values (text NULL or not one of them). */
KJ_API kj_status kj_op_parse(const char *text, kj_op *op);
KJ_API kj_status kj_type_parse(const char *text, kj_type *type);
KJ_API size_t kj_type_size(kj_type type);   /* bytes of one element (2 for f16, bf16); 0 out of range */
KJ_API size_t kj_result_size(kj_type type); /* bytes of the result (4 for f16, bf16: a float); 0 out of range */

/* Where a family's call took its configuration (block size, coarsening, unroll, tile) from: the
 * caller's options, else the tuning database, else the family's defaults for the device and size. */
typedef enum kj_config_from {
    KJ_CONFIG_DEFAULT = 0,  /* the family's defaults (a fixed variant's shape included) */
    KJ_CONFIG_TUNED = 1,    /* the tuning database's entry for the device, macros and size bucket */
    KJ_CONFIG_EXPLICIT = 2, /* the caller's options */
} kj_config_from;
/* "default", "tuned", "explicit"; "unknown" for another value. Static storage. Thread-safe. No errors. */
KJ_API const char *kj_config_from_name(kj_config_from from);

typedef struct kj_reduce_report {
    size_t size;       /* sizeof(kj_reduce_report): KJ_REDUCE_REPORT_INIT */
    const char *entry; /* the entry that ran; static storage */
    unsigned block_size;
    unsigned coarse_factor;
    unsigned grid;    /* blocks launched (first pass) */
    kj_origin origin; /* how the kernel was obtained on this call */
    kj_config_from config_from;
    unsigned waves; /* reduce_fast: its grid was at most WAVES times the blocks the device holds at
                                once; 0 for the other entries */
} kj_reduce_report;
#define KJ_REDUCE_REPORT_INIT KJ_SIZED_INIT_(kj_reduce_report)

typedef struct kj_reduce_options {
    size_t size;              /* sizeof(kj_reduce_options): KJ_REDUCE_OPTIONS_INIT */
    const char *entry;        /* NULL: the fast default entry */
    unsigned block_size;      /* 0: chosen (tuning database, else a default for the device and size) */
    unsigned coarse_factor;   /* 0: chosen likewise */
    kj_stream stream;         /* NULL: the default stream; the host's own stream is fine */
    kj_reduce_report *report; /* optional: filled on success (caller's storage) */
    unsigned waves;           /* reduce_fast: its grid is at most WAVES (a power of two up to 64) times the
                                 blocks the device holds at once; 0: chosen as block_size is */
    uint32_t reserved;        /* 0 (refused otherwise): names what would be padding */
} kj_reduce_options;
#define KJ_REDUCE_OPTIONS_INIT KJ_SIZED_INIT_(kj_reduce_options)

/* Reduces n elements at `input` (device memory of the runtime's context: kj_mem_alloc'd, or the
 * host's own cuMemAlloc/cudaMalloc memory) with op, writes the result (kj_result_size bytes) to
 * host_result and waits for it. The work is ordered on options->stream after what the host queued
 * there before. input is only read, and may be reused once the call returns. options may be NULL.
 * The runtime keeps a workspace of about 150 KiB of device memory per stream it has reduced on
 * (the result, the default entry's ticket and per-block slots), until kj_runtime_destroy; a stream
 * is known by its handle value.
 * Thread-safe; calls on different streams may run at once.
 * Errors: KJ_ERR_USAGE (bad op/type/entry or options, input 0 with n > 0 or not aligned to its
 * elements, n beyond a single-block entry, NULL host_result), KJ_ERR_LIMIT (n needs more blocks
 * than the device allows), KJ_ERR_NO_DEVICE, KJ_ERR_DEVICE_MEMORY, KJ_ERR_CUDA (also a kernel
 * failure, e.g. input not valid in the context), and those of kj_kernel_get. */
KJ_API kj_status kj_reduce(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, void *host_result,
                           const kj_reduce_options *options);
/* As kj_reduce, but writes the result (kj_result_size bytes) to device memory at `result` on
 * options->stream and returns without waiting: result is written once the stream reaches it, and
 * input must stay valid until then. On compute capability 9.0 and later the default entry is
 * launched with programmatic dependent launch: it may start while the kernel before it is finishing,
 * and waits on the device before it reads anything, so stream order holds as usual. A kernel of
 * yours launched after it with programmatic dependent launch itself must wait in turn
 * (cudaGridDependencySynchronize) before it reads the result. Thread-safe. Errors as kj_reduce, with
 * KJ_ERR_USAGE for a result that is 0 or not aligned to kj_result_size. */
KJ_API kj_status kj_reduce_async(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n, kj_devptr result,
                                 const kj_reduce_options *options);
/* Starts getting the kernels that kj_reduce with these arguments (n elements, options->entry,
 * block_size, coarse_factor; the rest is not read) will launch, on the runtime's background threads
 * (kj_kernel_prefetch), and returns at once: a program calls it before making its input, so that
 * the first kj_reduce waits only for what is left of the compile. Thread-safe. Errors: KJ_ERR_USAGE
 * (what kj_reduce would refuse for op, type, n and options), KJ_ERR_HOST_MEMORY; a compile that
 * fails is reported by kj_reduce. */
KJ_API kj_status kj_reduce_prefetch(kj_runtime *rt, kj_op op, kj_type type, size_t n, const kj_reduce_options *options);
/* One reduction over data split across devices: part i is counts[i] elements at parts[i], in the
 * memory of runtime rts[i]'s device (one runtime per device, kj_runtime_options.device; two runtimes
 * may share one). Each part is reduced by its runtime with the default entry, as kj_reduce does, and
 * every part is launched before any is waited for, so the devices work at once. The n partials are
 * then combined on the host in the order of the parts, by the rules of the CPU reference (wrapping
 * integers, NaN-propagating max and min, float sums and products in long double rounded once; an
 * f16 or bf16 reduction's partials are its f32 results), and the result (kj_result_size bytes) is written to
 * `result`: bit-identical from run to run, whichever device finishes first. A part may be empty
 * (counts[i] = 0: the identity). streams: NULL for each runtime's default stream, else one per part
 * (a stream of that part's runtime); each part's work is ordered after what was queued there before.
 * Each part's kernel writes its result straight into page-locked host memory, and the call polls
 * every part's completion in turn, so that no part's result waits for another's. Returns once every
 * part is done, also on an error (the parts already launched are waited for), so the inputs may be
 * reused at once; a part not done after 120 s (work queued before it that never ends) is reported
 * instead, its work still queued. The runtime keeps a small page-locked host buffer and an event per
 * stream it has reduced parts on, until kj_runtime_destroy. Thread-safe as kj_reduce: calls on
 * different streams may run at once.
 * Errors (those of the arguments before any part is launched): KJ_ERR_USAGE (n = 0, rts, parts,
 * counts or result NULL, a NULL runtime, one runtime twice with the same stream, a bad op or type),
 * KJ_ERR_NO_DEVICE (a compile-only runtime), KJ_ERR_HOST_MEMORY; then kj_reduce's errors for a part,
 * and KJ_ERR_CUDA for a part that fails on its device or is not done after 120 s, the message led by
 * "part I (device D)". */
KJ_API kj_status kj_reduce_devices(kj_runtime *const *rts, const kj_devptr *parts, const size_t *counts, size_t n,
                                   kj_op op, kj_type type, void *result, const kj_stream *streams);

/* NCCL, loaded at run time (once per process), so that kernjit builds and runs without it: the
 * libnccl.so.2 the process has loaded already (the host program's communicators are that library's),
 * else the file named by KERNJIT_NCCL when set (and only it), else "libnccl.so.2" on the dynamic loader's
 * path, else the nvidia-nccl Python package's nvidia/nccl/lib/libnccl.so.2 under the site-packages
 * and dist-packages folders of the Python environments beside each python3 on PATH, of
 * $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local, /usr and /opt/conda, and in each PYTHONPATH
 * folder. *path gets the file loaded (valid for the life of the process; dlopen it to make
 * communicators with the same NCCL), *version NCCL's version code (22703 for 2.27.3; 0 when it says
 * none) when version is not NULL. Thread-safe.
 * Errors: KJ_ERR_USAGE (path NULL), KJ_ERR_UNSUPPORTED (no NCCL: the message names KERNJIT_NCCL and
 * where it looked; or one that lacks a function kernjit calls, named). */
KJ_API kj_status kj_nccl_library(const char **path, int *version);
/* One reduction across the ranks of an NCCL communicator, the host program's own (comm: its
 * ncclComm_t, made with ncclCommInitRank, MPI, ...; void * so that no NCCL header is needed): each
 * rank calls it with its part, `count` elements at `part` in its runtime's device memory, and every
 * rank gets the reduction of all the parts (kj_result_size bytes) in `result`. The rank reduces its
 * part with kj_reduce on `stream`; a small all-reduce checks that every rank reduces with the same op
 * and type; one all-reduce of the single partial then combines the ranks, in NCCL's order: integer
 * sums and products wrap (unsigned arithmetic), float max and min return NaN when any element is
 * NaN, as kj_reduce does (the quiet NaN 0x7fc00000 of f32, or f64's, for max, and its negative for
 * min: the payload of no particular rank); an f16 or bf16 reduction's partials are f32. The communicator must be on the
 * runtime's device. Every wait watches the communicator's asynchronous errors and a limit of 120 s,
 * so that a rank that never calls is reported, not waited for forever; after such an error the
 * communicator must be aborted (ncclCommAbort). Blocks until the result is in host memory. The
 * runtime keeps 32 bytes of device memory per stream it has done this on. Thread-safe as kj_reduce,
 * but NCCL's rules hold: calls on one communicator must be made in the same order on every rank.
 * Errors: KJ_ERR_USAGE (rt, comm or result NULL, a bad op or type, the communicator on another
 * device, ranks that disagree on op or type: named), KJ_ERR_UNSUPPORTED (no NCCL: see
 * kj_nccl_library), KJ_ERR_CUDA (an NCCL error, the communicator's asynchronous error, or the time
 * limit), and kj_reduce's. */
KJ_API kj_status kj_reduce_nccl(kj_runtime *rt, void *comm, kj_devptr part, size_t count, kj_op op, kj_type type,
                                void *result, kj_stream stream);

/* ------------------------------------------------------------------------------------------------
 * Vector add and matrix transpose (kernels_src/vector_add.cu, kernels_src/transpose.cu)
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_vector_add_report {
    size_t size;       /* sizeof(kj_vector_add_report): KJ_VECTOR_ADD_REPORT_INIT */
    const char *entry; /* "vector_add" (16-byte vectors) or "vector_add_scalar" (pointers not
                               aligned to 16 bytes); static storage */
    unsigned block_size;
    unsigned unroll;  /* vectors (or elements) each thread has in flight */
    unsigned grid;    /* blocks launched */
    kj_origin origin; /* how the kernel was obtained on this call */
    kj_config_from config_from;
    unsigned waves; /* the grid was at most WAVES times the blocks the device holds at once */
} kj_vector_add_report;
#define KJ_VECTOR_ADD_REPORT_INIT KJ_SIZED_INIT_(kj_vector_add_report)

typedef struct kj_vector_add_options {
    size_t size;                  /* sizeof(kj_vector_add_options): KJ_VECTOR_ADD_OPTIONS_INIT */
    unsigned block_size;          /* BLOCK_SIZE; with unroll 0 too: the tuning database's entry for the entry,
                               type and n (see kj_tune_db_lookup), else 256 */
    unsigned unroll;              /* UNROLL; 0: likewise, else 4 (one of them given: the other's default) */
    kj_stream stream;             /* NULL: the default stream */
    kj_vector_add_report *report; /* optional: filled on success */
    unsigned waves;               /* WAVES: the grid holds at most this many times (a power of two up to 1024) the
                               blocks the device holds at once, each block striding through its share;
                               0: chosen as block_size is, else 1024 (every block one pass) */
    uint32_t reserved;            /* 0 (refused otherwise): names what would be padding */
} kj_vector_add_options;
#define KJ_VECTOR_ADD_OPTIONS_INIT KJ_SIZED_INIT_(kj_vector_add_options)

/* c[i] = a[i] + b[i] for i < n (device memory), elements of type KJ_TYPE_F32 or KJ_TYPE_F64: one IEEE
 * addition rounded to nearest, so the bits equal a CPU's. c may be a or b (in place); other overlaps
 * are not allowed. Asynchronous on options->stream; n = 0 launches nothing. options may be NULL.
 * Thread-safe. Errors: KJ_ERR_USAGE (another type, a 0 pointer with n > 0), KJ_ERR_INVALID_DEFINE (a
 * block_size or unroll the kernel does not offer), KJ_ERR_NO_DEVICE, and those of kj_kernel_get and
 * kj_kernel_launch. */
KJ_API kj_status kj_vector_add(kj_runtime *rt, kj_type type, kj_devptr a, kj_devptr b, kj_devptr c, size_t n,
                               const kj_vector_add_options *options);

typedef enum kj_transpose_variant {
    KJ_TRANSPOSE_PADDED = 0, /* shared-memory tile padded to TILE_DIM + 1 columns (no bank conflicts),
                                 TILE_DIM x BLOCK_ROWS threads, the tiles in groups of GROUP rows
                                 of tiles: tunable, default 64 x 8, GROUP 1. The default. */
    KJ_TRANSPOSE_READ_ROWS,  /* read rows, write columns: coalesced reads, scattered writes */
    KJ_TRANSPOSE_READ_COLS,  /* read columns, write rows: scattered reads, coalesced writes */
    KJ_TRANSPOSE_SHARED,     /* 32x32 tile, 32x8 threads, written transposed into shared memory (32-way
                                 bank conflicts), then stored in order */
    KJ_TRANSPOSE_L1_8X32,    /* no shared memory: 8x32 threads a 32x32 tile, the caches regroup sectors */
    KJ_TRANSPOSE_L1_4X32,    /* the same with 4x32 threads */
    KJ_TRANSPOSE_VEC,        /* no shared memory: each thread transposes a 4x4 block (2x2 for 8-byte
                                 elements) in registers, with 16-byte loads and stores; 8x32 threads */
    KJ_TRANSPOSE_VARIANT_COUNT_
} kj_transpose_variant;

/* "padded", "read-rows", "read-cols", "shared", "l1-8x32", "l1-4x32", "vec"; "?" when out of range. */
KJ_API const char *kj_transpose_variant_name(kj_transpose_variant variant);
/* The entry point of the variant in kernels_src/transpose.cu ("transpose_padded"); "?" when out of range. */
KJ_API const char *kj_transpose_variant_entry(kj_transpose_variant variant);
/* Parses a variant name; KJ_ERR_USAGE naming the allowed names otherwise. */
KJ_API kj_status kj_transpose_variant_parse(const char *text, kj_transpose_variant *variant);

typedef struct kj_transpose_report {
    size_t size;                /* sizeof(kj_transpose_report): KJ_TRANSPOSE_REPORT_INIT */
    const char *entry;          /* the entry that ran; static storage */
    unsigned tile[2];           /* the input rows and columns each block moves */
    unsigned block[2];          /* threads per block, x and y */
    unsigned grid;              /* blocks launched: one per tile */
    unsigned shared_bytes;      /* dynamic shared memory per block (the metadata's shared-dynamic) */
    kj_origin origin;           /* how the kernel was obtained on this call */
    kj_config_from config_from; /* the fixed variants: KJ_CONFIG_DEFAULT */
    unsigned group;             /* KJ_TRANSPOSE_PADDED: the tiles taken in groups of this many rows of tiles */
    uint32_t reserved;          /* written 0: names what would be padding (a later field takes its place) */
} kj_transpose_report;
#define KJ_TRANSPOSE_REPORT_INIT KJ_SIZED_INIT_(kj_transpose_report)

typedef struct kj_transpose_options {
    size_t size;                  /* sizeof(kj_transpose_options): KJ_TRANSPOSE_OPTIONS_INIT */
    kj_transpose_variant variant; /* KJ_TRANSPOSE_PADDED when zeroed */
    unsigned tile_dim;            /* KJ_TRANSPOSE_PADDED only: TILE_DIM; with block_rows 0 too: the tuning
                                database's entry for ELEM_BYTES and rows x cols elements (see
                                kj_tune_db_lookup), else 64 */
    unsigned block_rows;          /* KJ_TRANSPOSE_PADDED only: BLOCK_ROWS; 0: likewise, else 8 (one of them
                                given: the others' defaults) */
    kj_stream stream;             /* NULL: the default stream */
    kj_transpose_report *report;  /* optional: filled on success */
    unsigned group;               /* KJ_TRANSPOSE_PADDED only: GROUP, the tiles taken in groups of 1, 2, 4, 8 or
                                16 rows of tiles, each group walked down its columns; 0: chosen as
                                tile_dim is, else 1 (along the rows of tiles) */
    uint32_t reserved;            /* 0 (refused otherwise): names what would be padding */
} kj_transpose_options;
#define KJ_TRANSPOSE_OPTIONS_INIT KJ_SIZED_INIT_(kj_transpose_options)

/* Writes the transpose of `in` (rows x cols, row-major) to `out` (cols x rows, row-major):
 * out[c * rows + r] = in[r * cols + c]. Elements are kj_type_size(type) bytes, moved as they are
 * (any kj_type). in and out must not overlap. rows or cols 0 launches nothing; each may be up to
 * 2^31 - 1. Asynchronous on options->stream. options may be NULL. Thread-safe.
 * Errors: KJ_ERR_USAGE (bad type or variant, tile_dim or block_rows with another variant, a size too
 * large, a 0 pointer), KJ_ERR_INVALID_DEFINE (a TILE_DIM/BLOCK_ROWS pair the kernel does not allow),
 * KJ_ERR_LIMIT (the tile needs more shared memory than the device gives a block, or more blocks than
 * a grid holds), KJ_ERR_NO_DEVICE, and those of kj_kernel_get and kj_kernel_launch. */
KJ_API kj_status kj_transpose(kj_runtime *rt, kj_type type, kj_devptr in, kj_devptr out, size_t rows, size_t cols,
                              const kj_transpose_options *options);

/* ------------------------------------------------------------------------------------------------
 * Dynamic parallelism (kernels_src/nested.cu, kernels_src/mandelbrot.cu)
 *
 * Kernels that launch kernels, for CDP2 (compute capability 9.0 has no device-side
 * cudaDeviceSynchronize(): children go to the fire-and-forget or the tail-launch stream; each kernel's
 * comments say why its choice is correct). Every call below:
 * - refuses (KJ_ERR_LIMIT) a launch tree deeper than the device's nesting limit
 *   (kj_device_info.max_nesting_depth, counting the host's grid), before compiling or launching;
 * - raises the context's pending-launch limit (CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) to the most
 *   launches the tree can have outstanding at once (a launch counts from the moment it is made until
 *   its grid completes): the number of device-side launches the tree makes, or for Mariani-Silver the
 *   most it can make, computed from the configuration before launching; or to the options'
 *   pending_launches (the limit is only ever raised, never lowered);
 * - has the kernels record every device-side launch that fails (a full pending-launch buffer is an
 *   error that only the launching GPU thread sees) and then fails with
 *   KJ_ERR_DEVICE_LAUNCH, naming how many launches failed and the first device error, without
 *   writing a result: an incomplete tree never passes for a result;
 * - waits for the whole tree.
 * Thread-safe; calls on different streams may run at once.
 * ---------------------------------------------------------------------------------------------- */

/* What a launch tree did. */
typedef struct kj_dp_report {
    size_t size;       /* sizeof(kj_dp_report): KJ_DP_REPORT_INIT */
    const char *entry; /* the kernel the host launched; static storage */
    unsigned grid[2];  /* its grid (x, y) and block (x, y) */
    unsigned block[2];
    unsigned levels;            /* grids from the host's to the deepest the configuration allows */
    int counted;                /* 1: device_launches was counted on the device (count_launches) */
    uint64_t device_launches;   /* device-side launches made (0 when not counted) */
    uint64_t expected_launches; /* the reductions and the hello tree: the launches the algorithm makes;
                                   Mariani-Silver: the most it can make (the count depends on the image) */
    uint64_t pending_launches;  /* the pending-launch limit the launch asked for */
    uint64_t pending_limit;     /* the context's limit after the run (it may have been higher already) */
    double gpu_ms;              /* GPU time of the whole tree (CUDA events) */
    kj_origin origin;           /* how the kernel was obtained on this call */
    uint32_t reserved;          /* written 0: names what would be padding (a later field takes its place) */
} kj_dp_report;
#define KJ_DP_REPORT_INIT KJ_SIZED_INIT_(kj_dp_report)

/* The recursive reductions of "Professional CUDA C Programming", ch. 3, for CDP2. */
typedef enum kj_nested_variant {
    KJ_NESTED_SYNC = 0,    /* "sync": per-block recursion, block barrier before thread 0 launches the next
                              level, fire-and-forget children (the book's nestedReduce) */
    KJ_NESTED_NOSYNC = 1,  /* "nosync": the same without the barrier; children tail-launched, so that
                              they see the whole grid's writes (nestedReduceNosync). Tail launches of
                              one grid run one after another: the blocks' chains are serialized */
    KJ_NESTED_REDUCE2 = 2, /* "reduce2": block 0 alone launches the next level for all blocks, tail-
                              launched (gpuRecursiveReduce2) */
    KJ_NESTED_VARIANT_COUNT_
} kj_nested_variant;

KJ_API const char *kj_nested_variant_name(kj_nested_variant variant); /* "sync"; "?" when out of range */
/* Parses "sync", "nosync", "reduce2"; KJ_ERR_USAGE naming the allowed values otherwise. */
KJ_API kj_status kj_nested_variant_parse(const char *text, kj_nested_variant *variant);

typedef struct kj_nested_options {
    size_t size; /* sizeof(kj_nested_options): KJ_NESTED_OPTIONS_INIT */
    kj_nested_variant variant;
    unsigned block_size;       /* threads of a top-level block: a power of two from 2 to 1024; 0: 512 */
    int count_launches;        /* 1: count the device-side launches (kernels built with COUNT_LAUNCHES=1) */
    uint64_t pending_launches; /* pending-launch limit to ask for; 0: what the tree can need (above) */
    kj_stream stream;          /* NULL: the default stream */
    kj_dp_report *report;      /* optional: filled on success */
} kj_nested_options;
#define KJ_NESTED_OPTIONS_INIT KJ_SIZED_INIT_(kj_nested_options)

/* Sums n elements at `data` (device memory) with the chosen recursive reduction and writes the sum
 * (kj_result_size bytes) to host_result. Types: i32 u32 i64 f32 f64, with kj_reduce's semantics
 * (integers wrap; n = 0 gives 0). Like the book's kernels the reduction works in place: the n
 * elements are overwritten. Device-side launches, with grid = ceil(n / block_size) top-level blocks:
 * grid x (log2(block_size) - 1) for sync and nosync, log2(block_size) - 1 for reduce2; n = 2^20 and
 * blocks of 512: 16384, 16384 and 8. options may be NULL.
 * Errors: KJ_ERR_USAGE (type, variant, block size), KJ_ERR_LIMIT, KJ_ERR_DEVICE_LAUNCH, KJ_ERR_CUDA,
 * KJ_ERR_DEVICE_MEMORY, and those of kj_kernel_get. */
KJ_API kj_status kj_nested_reduce(kj_runtime *rt, kj_type type, kj_devptr data, size_t n, void *host_result,
                                  const kj_nested_options *options);

/* The nested hello world: `grid` blocks of `block` threads (a power of two from 1 to 1024) each print
 * "Recursion=0: Hello World from thread T block B"; thread 0 of every block launches one block with
 * half the threads one level deeper, down to one thread. grid x (2 block - 1) lines, at most 8192,
 * written by the device's printf to the process's standard output (the one output of the library,
 * by design) before the call returns. Device-side launches: grid x log2(block), counted.
 * report may be NULL. Errors as kj_nested_reduce. */
KJ_API kj_status kj_nested_hello(kj_runtime *rt, unsigned grid, unsigned block, kj_dp_report *report);

/* Mandelbrot images of dwells: escape time, one thread per pixel, or Mariani-Silver with dynamic
 * parallelism (a square whose border has one dwell is filled with it; otherwise it is split into
 * subdiv x subdiv squares launched as a child grid, down to min_size or max_depth, below which the
 * pixels are computed one by one). */
typedef enum kj_mandelbrot_algo {
    KJ_MANDELBROT_ESCAPE = 0, /* "escape" */
    KJ_MANDELBROT_MS = 1,     /* "ms": Mariani-Silver */
    KJ_MANDELBROT_ALGO_COUNT_
} kj_mandelbrot_algo;

KJ_API const char *kj_mandelbrot_algo_name(kj_mandelbrot_algo algo); /* "escape", "ms"; "?" otherwise */
KJ_API kj_status kj_mandelbrot_algo_parse(const char *text, kj_mandelbrot_algo *algo);

typedef struct kj_mandelbrot_options {
    size_t size; /* sizeof(kj_mandelbrot_options): KJ_MANDELBROT_OPTIONS_INIT */
    kj_mandelbrot_algo algo;
    unsigned max_dwell;  /* MAX_DWELL: a power of two from 16 to 16384; 0: 512 */
    double x_min, x_max; /* the window; all four 0: [-1.5, 0.5] x [-1, 1]. Pixel (x, y) is */
    double y_min, y_max; /* c = (x_min + x dx, y_max - y dy), dx = (x_max - x_min) / width,
                                  dy = (y_max - y_min) / height, computed in float */
    /* Mariani-Silver (0: the default; the escape-time algorithm ignores them): */
    unsigned init_subdiv;      /* INIT_SUBDIV: the host's grid is init_subdiv^2 squares (4 8 16 32 64; 32) */
    unsigned subdiv;           /* SUBDIV: a square splits into subdiv^2 (2 4 8; 4) */
    unsigned max_depth;        /* MAX_DEPTH: levels of grids, the host's included (1 to 8; 4) */
    unsigned min_size;         /* MIN_SIZE: squares are not split below this side (4 8 16 32 64; 32) */
    int count_launches;        /* 1: count the device-side launches */
    uint64_t pending_launches; /* pending-launch limit to ask for; 0: what the tree can need (above) */
    kj_stream stream;          /* NULL: the default stream */
    kj_dp_report *report;      /* optional: filled on success */
} kj_mandelbrot_options;
#define KJ_MANDELBROT_OPTIONS_INIT KJ_SIZED_INIT_(kj_mandelbrot_options)

/* Renders the width x height image of dwells (one uint16_t per pixel, row-major, row 0 at y_max; a
 * pixel in the set has max_dwell) into device memory at `dwells` and waits. width and height: 1 to
 * 32768. Both algorithms compute every dwell with the same IEEE single-precision operations, so they
 * agree wherever Mariani-Silver computes; it fills a square whose border has one dwell (a border in
 * the set only when it also lies inside the main cardioid or the period-2 disk, checked in closed
 * form), which is exact unless a feature thinner than a pixel slips between two border pixels. With
 * the default parameters the two images are identical at 16384 x 16384, dwell 512, on the default
 * window (checked against a CPU emulation of both).
 * options may be NULL.
 * Errors: KJ_ERR_USAGE (a value not allowed: the message names it), KJ_ERR_LIMIT (max_depth deeper
 * than the device allows), KJ_ERR_DEVICE_LAUNCH, KJ_ERR_CUDA, and those of kj_kernel_get. */
KJ_API kj_status kj_mandelbrot(kj_runtime *rt, kj_devptr dwells, unsigned width, unsigned height,
                               const kj_mandelbrot_options *options);

#ifdef __cplusplus
}
#endif
#endif /* KERNJIT_OPS_H */
