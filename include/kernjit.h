/*
 * kernjit.h: the public interface of kernjit, a runtime-compiled CUDA kernel service.
 *
 * A program asks for a kernel by name and macro values; kernjit finds the .cu source, validates the
 * values against the kernel's metadata, compiles it with NVRTC (linking the device runtime with
 * nvJitLink when the kernel needs it), caches the binary on disk keyed by everything that changes it,
 * and loads and launches it through the CUDA Driver API.
 *
 * This header needs no CUDA header: device pointers are kj_devptr (the same bits as CUdeviceptr and
 * as a runtime-API device pointer cast to an integer), streams are kj_stream (a CUstream or a
 * cudaStream_t, passed as is), and a context is a void * (a CUcontext).
 *
 * Conventions for every function below:
 * - Functions return kj_status; KJ_OK is 0. On failure, kj_last_error() gives a message naming what
 *   was wrong and what is allowed (for a compile error, followed by the compiler's log).
 * - Outputs are written only on success.
 * - Handles come in create/destroy pairs; every destroy accepts NULL.
 * - The library never prints, never aborts and never exits. Warnings (a damaged cache entry, a cache
 *   folder that cannot be used) go to the log callback of kj_runtime_options.
 * - Thread safety is stated per function. A kj_runtime may be shared by threads.
 */
#ifndef KERNJIT_H
#define KERNJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(KJ_NO_VISIBILITY)
#define KJ_API __attribute__((visibility("default")))
#else
#define KJ_API
#endif

/* ------------------------------------------------------------------------------------------------
 * Status codes. KJ_STATUS_MAP(X) calls X(name, class, description) once per status; class is
 * 0 (success), 1 (failure) or 2 (usage error: the caller asked for something not allowed).
 * The CLI exits with the class of the status it got.
 * ---------------------------------------------------------------------------------------------- */
#define KJ_STATUS_MAP(X)                                                                            \
    X(OK, 0, "success")                                                                             \
    X(ERR_USAGE, 2, "invalid argument")                                                             \
    X(ERR_UNKNOWN_KERNEL, 2, "unknown kernel")                                                      \
    X(ERR_UNKNOWN_ENTRY, 2, "unknown entry point")                                                  \
    X(ERR_INVALID_DEFINE, 2, "macro value not allowed")                                             \
    X(ERR_LIMIT, 2, "request exceeds a device limit")                                               \
    X(ERR_SOURCE, 1, "cannot read kernel source")                                                   \
    X(ERR_SPEC, 1, "malformed kernel metadata")                                                     \
    X(ERR_COMPILE, 1, "NVRTC compilation failed")                                                   \
    X(ERR_LINK, 1, "nvJitLink link failed")                                                         \
    X(ERR_NO_DRIVER, 1, "CUDA driver not available")                                                \
    X(ERR_NO_DEVICE, 1, "no CUDA device")                                                           \
    X(ERR_CUDA, 1, "CUDA driver call failed")                                                       \
    X(ERR_HOST_MEMORY, 1, "out of host memory")                                                     \
    X(ERR_DEVICE_MEMORY, 1, "out of device memory")                                                 \
    X(ERR_DEVICE_LAUNCH, 1, "device-side kernel launch failed")                                     \
    X(ERR_IO, 1, "file system error")                                                               \
    X(ERR_UNSUPPORTED, 1, "not supported")                                                          \
    X(ERR_NOT_FOUND, 1, "not found")                                                                \
    X(ERR_WRONG_RESULT, 1, "result does not match the reference")

typedef enum kj_status {
#define KJ_STATUS_ENUM_(name, class_, text) KJ_##name,
    KJ_STATUS_MAP(KJ_STATUS_ENUM_)
#undef KJ_STATUS_ENUM_
    KJ_STATUS_COUNT_
} kj_status;

/* A short English description of the status ("unknown kernel"). Never NULL. Thread-safe. */
KJ_API const char *kj_strerror(kj_status status);
/* The status's name ("KJ_ERR_UNKNOWN_KERNEL"). Never NULL. Thread-safe. */
KJ_API const char *kj_status_name(kj_status status);
/* 0 for KJ_OK, 2 for a usage error, 1 for any other failure. Thread-safe. */
KJ_API int kj_status_class(kj_status status);
/* The message describing the last failure of a kj_ call made by the calling thread: what was wrong,
 * what is allowed and, after a compile or link error, the compiler's log. "" when there was none.
 * The string stays valid until this thread's next failing kj_ call. Successful calls leave it as it
 * is. Thread-safe (one message per thread). */
KJ_API const char *kj_last_error(void);

/* The library's version, "MAJOR.MINOR.PATCH". */
KJ_API const char *kj_version_string(void);

/* ------------------------------------------------------------------------------------------------
 * Plain types
 * ---------------------------------------------------------------------------------------------- */
typedef uint64_t kj_devptr;               /* a device address: CUdeviceptr, or (uintptr_t)cudaMalloc'd */
typedef struct kj_stream_opaque *kj_stream; /* a CUstream / cudaStream_t; NULL is the default stream */

typedef struct kj_runtime kj_runtime;     /* one device (or none) and one cache; see kj_runtime_create */
typedef struct kj_kernel kj_kernel;       /* a loaded entry point; owned by its runtime */
typedef struct kj_event kj_event;         /* a CUDA event for timing */
typedef struct kj_kernel_desc kj_kernel_desc; /* a kernel source's metadata, for listing */

typedef enum kj_log_level { KJ_LOG_ERROR = 0, KJ_LOG_WARN = 1, KJ_LOG_INFO = 2, KJ_LOG_DEBUG = 3 } kj_log_level;
/* Receives warnings and information. Called from the thread that made the kj_ call; must not call
 * back into the same runtime. */
typedef void (*kj_log_fn)(kj_log_level level, const char *message, void *user);

/* A macro value for a kernel: -DNAME=VALUE. */
typedef struct kj_define {
    const char *name;
    const char *value;
} kj_define;

/* ------------------------------------------------------------------------------------------------
 * Runtime
 * ---------------------------------------------------------------------------------------------- */
#define KJ_DEVICE_AUTO (-1) /* device 0 when the driver and a device are present, else compile-only */
#define KJ_DEVICE_NONE (-2) /* compile-only: never load the driver */

typedef enum kj_cache_mode {
    KJ_CACHE_DISK = 0,        /* memory and disk (the default) */
    KJ_CACHE_MEMORY_ONLY = 1, /* never read or write the disk cache */
} kj_cache_mode;

typedef struct kj_runtime_options {
    int device;                    /* an ordinal, KJ_DEVICE_AUTO (default) or KJ_DEVICE_NONE */
    const char *arch;              /* target when there is no device, "sm_XY" (default "sm_90") */
    const char *cache_dir;         /* NULL: $KERNJIT_CACHE_DIR, $XDG_CACHE_HOME/kernjit, ~/.cache/kernjit */
    kj_cache_mode cache_mode;
    uint64_t cache_max_bytes;      /* 0: $KERNJIT_CACHE_MAX (bytes, or with K/M/G suffix), else 1 GiB */
    const char *search_path;       /* NULL: $KERNJIT_PATH; colon-separated folders searched for NAME.cu */
    void *cu_context;              /* a CUcontext the host program created: kernjit uses it as is and
                                      never destroys it; NULL: the device's primary context */
    kj_log_fn log;                 /* NULL: warnings are dropped */
    void *log_user;
    kj_log_level log_level;        /* messages above this level are not passed on (default KJ_LOG_WARN) */
} kj_runtime_options;

/* Fills *options with the defaults. Call it before setting fields, so that new fields get defaults. */
KJ_API void kj_runtime_options_init(kj_runtime_options *options);

/* Creates a runtime: loads the driver (dlopen of libcuda.so.1; a missing driver is not an error with
 * KJ_DEVICE_AUTO), retains the device's primary context (or adopts options->cu_context) and opens
 * the cache. options may be NULL (defaults). The strings in options are copied.
 * Errors: KJ_ERR_USAGE (bad arch or option), KJ_ERR_NO_DRIVER / KJ_ERR_NO_DEVICE (an explicit
 * device was asked for and is not there), KJ_ERR_CUDA, KJ_ERR_HOST_MEMORY.
 * A cache folder that cannot be used is not an error: the runtime warns and compiles in memory. */
KJ_API kj_status kj_runtime_create(const kj_runtime_options *options, kj_runtime **out);
/* Unloads every module, releases the context and frees the runtime; every kj_kernel and kj_event of
 * it becomes invalid. Not to be called while another thread uses the runtime. Accepts NULL. */
KJ_API void kj_runtime_destroy(kj_runtime *rt);
/* 1 when the runtime has a device to launch on, 0 when it is compile-only. */
KJ_API int kj_runtime_has_device(const kj_runtime *rt);
/* The compile target, "sm_90". Valid for the runtime's lifetime. */
KJ_API const char *kj_runtime_arch(const kj_runtime *rt);

typedef struct kj_device_info {
    int ordinal;
    char name[256];
    int cc_major, cc_minor;
    char arch[16];                    /* "sm_90" */
    const char *arch_name;            /* "Hopper"; static storage */
    int sm_count;
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int max_block_dim[3];
    int max_grid_dim[3];
    int regs_per_block;
    int regs_per_sm;
    size_t total_memory;
    size_t shared_per_block;          /* without opt-in (48 KiB) */
    size_t shared_per_block_optin;    /* the most a kernel may opt in to */
    size_t shared_per_sm;
    size_t l2_bytes;
    int clock_khz;
    int memory_clock_khz;
    int memory_bus_bits;
    double peak_bandwidth_gbs;        /* 2 x memory clock x bus width (DDR), GB/s */
    int driver_version;               /* 13000 for CUDA 13.0 */
    int max_nesting_depth;            /* device-runtime nesting depth limit (24 on CC >= 3.5) */
} kj_device_info;

/* Number of devices. *count = 0 and KJ_OK when the driver loads and has none; KJ_ERR_NO_DRIVER when
 * libcuda.so.1 is missing. Thread-safe. */
KJ_API kj_status kj_device_count(int *count);
/* Properties of device `ordinal`, without creating a context. Thread-safe. */
KJ_API kj_status kj_device_query(int ordinal, kj_device_info *info);
/* The runtime's device. KJ_ERR_NO_DEVICE when compile-only. */
KJ_API kj_status kj_runtime_device(const kj_runtime *rt, kj_device_info *info);

typedef struct kj_stats {
    uint64_t requests;        /* kj_kernel_get and kj_compile calls */
    uint64_t memory_hits;     /* answered from the in-memory map (no system call) */
    uint64_t disk_hits;       /* answered from a verified disk entry */
    uint64_t misses;          /* neither: compiled */
    uint64_t compiles;        /* successful NVRTC compilations */
    uint64_t compile_errors;
    uint64_t links;           /* nvJitLink links with the device runtime */
    uint64_t bad_entries;     /* disk entries found damaged and replaced */
    uint64_t store_failures;  /* entries that could not be written (the kernel still ran) */
    double compile_ms;        /* total NVRTC time */
    double link_ms;           /* total nvJitLink time */
} kj_stats;

/* Counters since the runtime was created. Thread-safe. */
KJ_API void kj_runtime_stats(const kj_runtime *rt, kj_stats *stats);

/* ------------------------------------------------------------------------------------------------
 * Kernels
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_request {
    const char *kernel;        /* a built-in name ("reduce"), a name found as NAME.cu on the search path
                                  (which wins over the built-in), or a path to a .cu file (contains '/'
                                  or ends in ".cu"); with source_text, the name used in messages */
    const char *source_text;   /* optional: the source itself, NUL-terminated; quoted #includes are
                                  resolved beside `kernel` if it is a path, else on the search path */
    const char *entry;         /* entry point: a name from the metadata, an extern "C" function or a C++
                                  name expression ("scale<float,256>"); NULL: the first entry */
    const kj_define *defines;  /* -D macros, validated against the kernel's metadata */
    size_t define_count;
    const char *const *options;/* extra NVRTC options ("-lineinfo"); part of the cache key */
    size_t option_count;
    const char *arch;          /* kj_compile only: target other than the runtime's ("sm_80") */
} kj_request;

typedef enum kj_origin {
    KJ_ORIGIN_MEMORY = 0,   /* already loaded in this runtime */
    KJ_ORIGIN_DISK = 1,     /* loaded from the disk cache */
    KJ_ORIGIN_COMPILED = 2, /* compiled now */
} kj_origin;

/* Returns the loaded kernel for the request, compiling and caching as needed. The kernel is owned by
 * the runtime and valid until kj_runtime_destroy; asking again returns the same handle (a memory hit:
 * no system call). origin may be NULL.
 * Thread-safe: threads may ask for the same or different kernels at once.
 * Errors: KJ_ERR_UNKNOWN_KERNEL, KJ_ERR_UNKNOWN_ENTRY, KJ_ERR_INVALID_DEFINE (unknown macro or a value
 * outside the allowed set), KJ_ERR_SOURCE, KJ_ERR_SPEC, KJ_ERR_COMPILE / KJ_ERR_LINK (the log is in
 * kj_last_error()), KJ_ERR_NO_DEVICE (compile-only runtime), KJ_ERR_CUDA. */
KJ_API kj_status kj_kernel_get(kj_runtime *rt, const kj_request *request, kj_kernel **out, kj_origin *origin);

typedef struct kj_compile_result {
    int cache_hit;          /* 1: a valid entry was already on disk */
    int stored;             /* 1: the cache holds the entry now (0: compiled in memory only) */
    int linked;             /* 1: linked with the device runtime */
    int is_ptx;             /* 1: PTX for the driver to finish (device newer than NVRTC) */
    char arch[24];          /* the target compiled for: sm_XY, or compute_XY for PTX */
    char key[33];           /* the cache key, 32 hex digits */
    char cache_path[4096];  /* the entry's path; "" when not stored */
    double compile_ms;      /* NVRTC time (0 on a hit) */
    double link_ms;         /* nvJitLink time (0 when not linked or on a hit) */
    size_t binary_bytes;
} kj_compile_result;

/* Compiles (or finds in the cache) without loading; works with no device and no driver.
 * result may be NULL. Thread-safe. Errors as kj_kernel_get, except KJ_ERR_NO_DEVICE. */
KJ_API kj_status kj_compile(kj_runtime *rt, const kj_request *request, kj_compile_result *result);

typedef struct kj_kernel_info {
    const char *kernel;        /* the request's kernel name */
    const char *entry;         /* the entry asked for */
    const char *lowered_name;  /* the symbol in the binary */
    const char *arch;
    const char *key;           /* cache key, 32 hex digits */
    const char *defines;       /* the canonical define list, "BLOCK_SIZE=256 OP=sum ..." */
    const char *log;           /* NVRTC/nvJitLink warnings, "" when none or loaded from disk */
    kj_origin origin;          /* how it was first obtained */
    int num_regs;
    int shared_static_bytes;
    int local_bytes;
    int max_threads_per_block; /* for this function */
    int linked;
} kj_kernel_info;

/* Facts about a loaded kernel; the strings live as long as the kernel. Thread-safe. */
KJ_API kj_status kj_kernel_query(const kj_kernel *kernel, kj_kernel_info *info);

/* How many blocks of block_threads threads (with dynamic_shared bytes each) fit on one
 * multiprocessor at once, given the kernel's registers and shared memory. Thread-safe. */
KJ_API kj_status kj_kernel_occupancy(const kj_kernel *kernel, unsigned block_threads, unsigned dynamic_shared,
                                     int *blocks_per_sm);

typedef struct kj_launch_config {
    unsigned grid[3];          /* 0 in a field is taken as 1 */
    unsigned block[3];
    unsigned shared_bytes;     /* dynamic shared memory; above 48 KiB the kernel is opted in */
    kj_stream stream;
    uint64_t pending_launches; /* device-side launches this launch may have pending at once;
                                  0: what the kernel's metadata says */
} kj_launch_config;

/* Launches the kernel with args as for cuLaunchKernel (an array of pointers to each argument).
 * Before launching a kernel that uses the device runtime, the context's pending-launch limit
 * (CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) is raised to what the config or the metadata asks.
 * Dynamic shared memory above the default 48 KiB is opted in for the function. Grid, block and
 * shared memory are checked against the device and the function first: KJ_ERR_LIMIT names both
 * numbers. Asynchronous: errors of the kernel itself surface at the next synchronizing call.
 * Thread-safe. */
KJ_API kj_status kj_kernel_launch(kj_kernel *kernel, const kj_launch_config *config, void **args);

/* ------------------------------------------------------------------------------------------------
 * Device memory, streams, events: thin wrappers so that a program needs no CUDA header.
 * All thread-safe; they make the runtime's context current on the calling thread.
 * ---------------------------------------------------------------------------------------------- */
KJ_API kj_status kj_mem_alloc(kj_runtime *rt, size_t bytes, kj_devptr *out);
KJ_API kj_status kj_mem_free(kj_runtime *rt, kj_devptr ptr); /* 0 is accepted */
KJ_API kj_status kj_mem_info(kj_runtime *rt, size_t *free_bytes, size_t *total_bytes);
KJ_API kj_status kj_memcpy_htod(kj_runtime *rt, kj_devptr dst, const void *src, size_t bytes);
KJ_API kj_status kj_memcpy_dtoh(kj_runtime *rt, void *dst, kj_devptr src, size_t bytes);
KJ_API kj_status kj_memcpy_dtod(kj_runtime *rt, kj_devptr dst, kj_devptr src, size_t bytes, kj_stream stream);
KJ_API kj_status kj_memset_u8(kj_runtime *rt, kj_devptr dst, uint8_t value, size_t bytes);
KJ_API kj_status kj_memset_u32(kj_runtime *rt, kj_devptr dst, uint32_t value, size_t count);
/* Waits for all work of the context; reports errors of kernels that ran. */
KJ_API kj_status kj_synchronize(kj_runtime *rt);

KJ_API kj_status kj_stream_create(kj_runtime *rt, kj_stream *out);
KJ_API kj_status kj_stream_destroy(kj_runtime *rt, kj_stream stream); /* NULL is accepted */
KJ_API kj_status kj_stream_synchronize(kj_runtime *rt, kj_stream stream);

KJ_API kj_status kj_event_create(kj_runtime *rt, kj_event **out);
KJ_API void kj_event_destroy(kj_event *event);
KJ_API kj_status kj_event_record(kj_event *event, kj_stream stream);
/* Waits for `end` and gives the milliseconds between the two events. */
KJ_API kj_status kj_event_elapsed_ms(kj_event *start, kj_event *end, float *ms);

/* ------------------------------------------------------------------------------------------------
 * Toolchain
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_toolchain {
    int nvrtc_version;            /* 13000 for 13.0 */
    int nvjitlink_version;
    const char *cuda_home;        /* where the device runtime and CUDA headers are looked for */
    const char *devrt_path;       /* libcudadevrt.a, or NULL when it is missing */
    int arch_count;
    int archs[64];                /* compute capabilities NVRTC can target, 90 for sm_90 */
} kj_toolchain;

/* What compiles kernels here; needs no driver. Thread-safe. */
KJ_API void kj_toolchain_query(kj_toolchain *info);

/* ------------------------------------------------------------------------------------------------
 * Kernel metadata (what `kernjit list` shows)
 * ---------------------------------------------------------------------------------------------- */
/* The built-in kernels, embedded in the library. Index from 0; NULL past the end. */
KJ_API size_t kj_builtin_count(void);
KJ_API const char *kj_builtin_name(size_t index);

typedef struct kj_param_info {
    const char *name;           /* "BLOCK_SIZE" */
    const char *default_value;  /* "256" */
    size_t value_count;
    const char *const *values;  /* the allowed values, in the order the metadata gives them */
    int tunable;                /* 1: a performance knob (the tuner varies it); 0: it changes the result */
} kj_param_info;

/* Reads the metadata of a kernel (found as kj_kernel_get finds it; rt may be NULL for the defaults).
 * Free with kj_desc_free. Errors: KJ_ERR_UNKNOWN_KERNEL, KJ_ERR_SOURCE, KJ_ERR_SPEC. Thread-safe. */
KJ_API kj_status kj_describe(kj_runtime *rt, const char *kernel, kj_kernel_desc **out);
KJ_API void kj_desc_free(kj_kernel_desc *desc);
KJ_API const char *kj_desc_name(const kj_kernel_desc *desc);
KJ_API const char *kj_desc_origin(const kj_kernel_desc *desc); /* "built-in" or the file's path */
KJ_API const char *kj_desc_summary(const kj_kernel_desc *desc); /* one line, "" when none */
KJ_API size_t kj_desc_entry_count(const kj_kernel_desc *desc);
KJ_API const char *kj_desc_entry(const kj_kernel_desc *desc, size_t index);
KJ_API size_t kj_desc_param_count(const kj_kernel_desc *desc);
KJ_API kj_status kj_desc_param(const kj_kernel_desc *desc, size_t index, kj_param_info *info);
KJ_API int kj_desc_needs_device_runtime(const kj_kernel_desc *desc);
KJ_API uint64_t kj_desc_pending_launches(const kj_kernel_desc *desc); /* 0 when not set */

/* ------------------------------------------------------------------------------------------------
 * Disk cache
 * ---------------------------------------------------------------------------------------------- */
/* The cache folder in use, or NULL when the runtime compiles in memory only (refused or disabled). */
KJ_API const char *kj_cache_dir(const kj_runtime *rt);

typedef struct kj_cache_entry {
    const char *path;
    const char *arch;          /* "sm_90" */
    const char *key;           /* 32 hex digits */
    const char *description;   /* "reduce entry=... BLOCK_SIZE=256 ..." as stored; "" if unreadable */
    uint64_t bytes;            /* file size */
    int64_t mtime;             /* last use, seconds since the epoch */
    int valid;                 /* 1: header and checksum verify */
} kj_cache_entry;
typedef void (*kj_cache_visit_fn)(const kj_cache_entry *entry, void *user);

/* Calls visit for each entry, most recently used first. KJ_ERR_NOT_FOUND when memory-only. */
KJ_API kj_status kj_cache_list(kj_runtime *rt, kj_cache_visit_fn visit, void *user);
/* Removes every entry (and stray temporary files); the counts may be NULL. */
KJ_API kj_status kj_cache_clear(kj_runtime *rt, uint64_t *removed_entries, uint64_t *removed_bytes);
/* Entries and bytes on disk, and the bound that eviction keeps them under. */
KJ_API kj_status kj_cache_usage(kj_runtime *rt, uint64_t *entries, uint64_t *bytes, uint64_t *max_bytes);


/* ------------------------------------------------------------------------------------------------
 * Reductions (kernels_src/reduce.cu)
 * ---------------------------------------------------------------------------------------------- */
typedef enum kj_op { KJ_OP_SUM = 0, KJ_OP_MAX, KJ_OP_MIN, KJ_OP_PROD, KJ_OP_COUNT_ } kj_op;
/* Element types. The result of a reduction has the accumulator type: the element type itself,
 * except f16, which is accumulated and returned as f32 (a float). Integer sums and products wrap
 * as C's unsigned arithmetic does (two's complement for i32/i64). max and min return NaN when any
 * element is NaN. n = 0 gives the operator's identity. */
typedef enum kj_type { KJ_TYPE_I32 = 0, KJ_TYPE_U32, KJ_TYPE_I64, KJ_TYPE_F16, KJ_TYPE_F32, KJ_TYPE_F64, KJ_TYPE_COUNT_ } kj_type;

KJ_API const char *kj_op_name(kj_op op);       /* "sum"; "?" when out of range */
KJ_API const char *kj_type_name(kj_type type); /* "f32"; "?" when out of range */
/* Parse "sum"/"max"/... and "i32"/"f16"/...; KJ_ERR_USAGE naming the allowed values otherwise. */
KJ_API kj_status kj_op_parse(const char *text, kj_op *op);
KJ_API kj_status kj_type_parse(const char *text, kj_type *type);
KJ_API size_t kj_type_size(kj_type type);        /* bytes of one element (2 for f16) */
KJ_API size_t kj_result_size(kj_type type);      /* bytes of the result (4 for f16: a float) */

typedef struct kj_reduce_report {
    char entry[64];          /* the entry that ran */
    unsigned block_size;
    unsigned coarse_factor;
    unsigned grid;           /* blocks launched (first pass) */
    kj_origin origin;        /* how the kernel was obtained on this call */
    const char *config_from; /* "explicit", "tuned" or "default" */
} kj_reduce_report;

typedef struct kj_reduce_options {
    const char *entry;        /* NULL: the fast default entry */
    unsigned block_size;      /* 0: chosen (tuning database, else a default for the device and size) */
    unsigned coarse_factor;   /* 0: chosen likewise */
    kj_stream stream;         /* NULL: the default stream */
    kj_reduce_report *report; /* optional: filled on success */
} kj_reduce_options;

/* The CPU reference: reduces n host elements with the same semantics as the GPU (wrapping integers,
 * NaN-propagating max/min), floating-point sums and products in long double, and writes the result
 * (kj_result_size bytes, rounded to the result type) to result. abs_sum, when not NULL, gets the sum
 * of the magnitudes |x_i| (for error bounds). Thread-safe. */
KJ_API kj_status kj_reduce_reference(kj_op op, kj_type type, const void *data, size_t n, void *result,
                                     double *abs_sum);
/* How far a GPU result may lie from the reference and still be right: 0 for integers and for
 * max/min; for float sums, the first-order bound depth * u * abs_sum, where u is the unit roundoff of
 * the accumulator and depth the longest chain of additions of the configuration in report (per-thread
 * elements plus the tree levels), or of any configuration when report is NULL; for float products,
 * depth * u * |expected| (plus the smallest normal, so that 0 compares). */
KJ_API double kj_reduce_tolerance(kj_op op, kj_type type, size_t n, double expected, double abs_sum,
                                  const kj_reduce_report *report);
/* Result bytes (kj_result_size) as a double, for printing and comparing. */
KJ_API double kj_result_as_double(kj_type type, const void *result);

/* Reduces n elements at `input` (device memory) with op, writes the result (kj_result_size bytes) to
 * host_result and waits for it. options may be NULL. Thread-safe; calls on different streams may run
 * at once. Errors: KJ_ERR_USAGE (bad op/type/entry, n too large for a single-block entry),
 * KJ_ERR_NO_DEVICE, KJ_ERR_DEVICE_MEMORY, KJ_ERR_CUDA, and those of kj_kernel_get. */
KJ_API kj_status kj_reduce(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n,
                           void *host_result, const kj_reduce_options *options);
/* As kj_reduce, but writes the result to device memory at `result` and returns without waiting. */
KJ_API kj_status kj_reduce_async(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n,
                                 kj_devptr result, const kj_reduce_options *options);

/* ------------------------------------------------------------------------------------------------
 * Variants, offline builds and tuning
 *
 * A kernel's metadata declares `tune` parameters (performance knobs such as BLOCK_SIZE and
 * COARSE_FACTOR) beside the `param`s that change the result (OP, T). Its variants are the
 * combinations of the tunables' allowed values with the params held fixed; the metadata's `require`
 * lines leave some out. kj_compile_all builds every variant into the cache without a GPU (to prepare a
 * cache for a fleet); kj_tune times them on the device, keeps the fastest that computes the right
 * result, and records it in the tuning database, which kj_reduce (and so `kernjit run` and
 * `kernjit bench`) consult when the caller gives no configuration.
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_space kj_space; /* the variants of a kernel; see kj_space_create */

/* Progress of a long call (kj_compile_all, kj_tune). */
typedef enum kj_phase {
    KJ_PHASE_COMPILE = 0,   /* variants compiled (or found in the cache) and loaded, in parallel */
    KJ_PHASE_MEASURE = 1,   /* variants timed on the device, one after the other */
    KJ_PHASE_REMEASURE = 2, /* the winner timed again with more samples */
} kj_phase;

typedef struct kj_progress {
    kj_phase phase;
    size_t done, total;      /* variants finished in this phase, of total (a budgeted search may
                                raise total as it goes) */
    const char *variant;     /* the one that just finished: "BLOCK_SIZE=256 COARSE_FACTOR=8" */
    const char *outcome;     /* "compiled", "cached", "2981.3 GB/s", "skipped: ...", "wrong result" */
    double best_gbps;        /* the best verified speed so far (measure phases); 0 before any */
} kj_progress;
/* Called on the thread that made the call, never twice at once, while the call runs; the strings
 * are valid during the call only. Must not call back into the same runtime. */
typedef void (*kj_progress_fn)(const kj_progress *progress, void *user);

/* The most combinations a space may have: pin or restrict some macros below it. */
#define KJ_SPACE_MAX 65536u

/* Builds the variants of `kernel` (found as kj_kernel_get finds it; rt may be NULL for the
 * defaults). `fixed` holds macros: NAME=VALUE pins a param or a tunable to one value;
 * NAME=V1,V2,... restricts it to those values (a param given so varies too: for offline builds of
 * several operators). Tunables not given vary over all their values; params not given take their
 * default. Every value is checked against the metadata. Combinations that break a `require` line
 * stay in the space, marked skipped with the requirement as the reason.
 * Errors: those of kj_describe; KJ_ERR_INVALID_DEFINE (unknown macro, value not allowed, macro
 * given twice); KJ_ERR_USAGE (more than KJ_SPACE_MAX combinations); KJ_ERR_SPEC (a requirement
 * cannot be evaluated). Free with kj_space_free. Thread-safe; a space is read-only once made and
 * may be shared by threads. */
KJ_API kj_status kj_space_create(kj_runtime *rt, const char *kernel, const kj_define *fixed, size_t fixed_count,
                                 kj_space **out);
KJ_API void kj_space_free(kj_space *space);
/* The macros that vary (the dimensions), in the metadata's order, and their values in the order the
 * metadata (or the restricting list) gives them. NULL past the end. */
KJ_API size_t kj_space_dim_count(const kj_space *space);
KJ_API const char *kj_space_dim_name(const kj_space *space, size_t dim);
KJ_API size_t kj_space_dim_size(const kj_space *space, size_t dim);
KJ_API const char *kj_space_dim_value(const kj_space *space, size_t dim, size_t value);
/* Every combination, skipped ones included (the product of the dimensions' sizes), and those kept. */
KJ_API size_t kj_space_count(const kj_space *space);
KJ_API size_t kj_space_valid_count(const kj_space *space);

typedef struct kj_variant {
    const kj_define *defines; /* every macro of the kernel, sorted by name: a kj_request's defines */
    size_t define_count;
    const size_t *coords;     /* per dimension, the index of its value; the variant's index is these
                                 digits in mixed radix, the last dimension fastest */
    const char *label;        /* the varied macros, "BLOCK_SIZE=256 COARSE_FACTOR=8" ("" if none) */
    const char *skipped;      /* NULL when the variant is in the space, else why not */
} kj_variant;

/* Variant `index` (below kj_space_count). The pointers live as long as the space. */
KJ_API kj_status kj_space_variant(const kj_space *space, size_t index, kj_variant *out);

typedef struct kj_compile_all_options {
    const char *kernel;        /* required */
    const char *entry;         /* NULL: the first entry (one module holds every entry of a source with
                                  metadata, so the entry rarely matters) */
    const kj_define *fixed;    /* as for kj_space_create */
    size_t fixed_count;
    const char *arch;          /* target "sm_XY"; NULL: the runtime's */
    unsigned threads;          /* compiling threads; 0: the processors online */
    kj_progress_fn progress;   /* optional */
    void *progress_user;
} kj_compile_all_options;

typedef struct kj_compile_all_result {
    size_t variants;           /* combinations in the space */
    size_t compiled;           /* compiled now (and stored, when the runtime has a disk cache) */
    size_t cached;             /* already in the disk cache */
    size_t skipped;            /* left out by a `require` line */
    size_t failed;             /* did not compile */
    unsigned threads;          /* threads used */
    double wall_ms;
    char arch[24];             /* the target */
} kj_compile_all_result;

/* Compiles every variant of the space (kj_space_create with options->fixed) into the cache, on
 * `threads` threads at once; needs no device and no driver. result may be NULL; unlike other
 * outputs it is written when some variants fail, so that the counts can be shown, and the call
 * then returns the first failure's status (its message names the variant). Thread-safe.
 * Errors: those of kj_space_create and kj_compile. */
KJ_API kj_status kj_compile_all(kj_runtime *rt, const kj_compile_all_options *options, kj_compile_all_result *result);

typedef struct kj_tune_options {
    const char *kernel;        /* required: a family with a tuning target ("reduce") */
    const char *entry;         /* NULL: the family's default entry (reduce_fast) */
    const kj_define *fixed;    /* params at one value each (OP=sum, T=f32; defaults otherwise), and
                                  tunables pinned (BLOCK_SIZE=256) or restricted (BLOCK_SIZE=256,512) */
    size_t fixed_count;
    uint64_t n;                /* problem size in elements; 0: 2^24 */
    size_t budget;             /* 0: exhaustive; else at most this many variants are compiled and timed
                                  (greedy coordinate descent from the defaults, then from random
                                  starting points while the budget lasts) */
    unsigned samples;          /* timed samples per variant, whose median counts; 0: 10; at least 10 */
    unsigned threads;          /* compiling threads; 0: the processors online */
    uint64_t seed;             /* input data and random starting points; 0: a fixed seed */
    int dry_run;               /* 1: do not write the tuning database */
    kj_progress_fn progress;   /* optional */
    void *progress_user;
} kj_tune_options;

/* Fills *options with the defaults (every field 0 or NULL today); call it before setting fields. */
KJ_API void kj_tune_options_init(kj_tune_options *options);

typedef enum kj_variant_status {
    KJ_VARIANT_MEASURED = 0, /* timed, and its result matched the CPU reference */
    KJ_VARIANT_NOT_TRIED,    /* left out by the budget */
    KJ_VARIANT_SKIPPED,      /* breaks a requirement, does not fit the device (threads per block for
                                its registers, shared memory) or cannot take the problem; see note */
    KJ_VARIANT_FAILED,       /* did not compile, load or launch; note has the message */
    KJ_VARIANT_WRONG,        /* ran, but its result differs from the CPU reference: never wins */
} kj_variant_status;

typedef struct kj_tune_variant {
    const char *label;         /* "BLOCK_SIZE=256 COARSE_FACTOR=8" */
    kj_variant_status status;
    const char *note;          /* why it was not measured, or "" */
    kj_origin origin;          /* how its kernel was obtained: compiled now, disk or memory */
    int registers;             /* per thread, from the compiled function (0 when not loaded) */
    int max_threads;           /* the function's threads-per-block limit given its registers */
    double median_us, min_us, max_us; /* per run */
    double gbps;               /* bytes moved per run / median */
    unsigned samples, batch;   /* samples, and runs per sample (short runs are timed in batches) */
} kj_tune_variant;

typedef struct kj_tune_result {
    const char *kernel;
    const char *entry;
    const char *fixed;          /* the macros held fixed, canonical: "OP=sum T=f32" */
    uint64_t n;
    unsigned bucket;            /* the size bucket it is stored under: floor(log2 n) */
    double bytes_per_run;       /* what GB/s counts */
    const kj_space *space;      /* the variants searched (owned by the result): names and values of
                                   the dimensions through kj_space_dim_* */
    size_t variant_count;       /* kj_space_count(space) */
    const kj_tune_variant *variants; /* indexed as the space is */
    size_t best;                /* the winner's index */
    double best_us, best_gbps;  /* its median in the sweep */
    double remeasured_us, remeasured_gbps; /* timed again afterwards, with more samples */
    unsigned remeasured_samples;
    const char *strategy;       /* "exhaustive", or "greedy + random restarts, budget K" */
    size_t measured, compiled, cached, skipped, failed, wrong, not_tried;
    unsigned threads;           /* compiling threads */
    double compile_ms, measure_ms, total_ms; /* wall-clock times of the phases and of the call */
    int stored;                 /* 1: written to the tuning database */
    const char *db_path;        /* the database's path; NULL when the runtime has no disk cache */
    char device[256];
    int cc_major, cc_minor;
} kj_tune_result;

/* Tunes kernel `options->kernel` for this runtime's device and the problem size: enumerates the
 * space (as kj_space_create; a target may pin tunables its entry ignores), compiles and loads the
 * variants in parallel through the cache, leaves out those the device cannot run (threads per block
 * above the function's limit for its registers, too much shared memory), then times each on the
 * device in turn (CUDA events after a warm-up; the median of `samples`; inputs that would fit in
 * L2 rotate through copies spanning more than twice its size) and checks its result against the CPU
 * reference. The fastest correct variant wins; it is timed again with three times the samples, and
 * stored in the tuning database (unless dry_run or the runtime has no disk cache). Free *out with
 * kj_tune_result_free. Thread-safe, but other work on the device distorts the timings.
 * Errors: KJ_ERR_UNSUPPORTED (no tuning target for the kernel: the message lists those there are),
 * KJ_ERR_NO_DEVICE, KJ_ERR_USAGE (samples below 10, a param given several values, bad entry),
 * KJ_ERR_DEVICE_MEMORY, KJ_ERR_NOT_FOUND (no variant ran correctly; the message counts why), and
 * those of kj_space_create. A failure to write the database is not an error: a warning goes to the
 * log and stored stays 0. */
KJ_API kj_status kj_tune(kj_runtime *rt, const kj_tune_options *options, kj_tune_result **out);
KJ_API void kj_tune_result_free(kj_tune_result *result);

/* The tuning database: <cache folder>/tuning.db, plain text, one line per (kernel, entry, fixed
 * macros, size bucket, device name, compute capability, kernjit version) -> the winning values and
 * their speed. The size bucket of n is floor(log2 n): an entry serves sizes in [2^b, 2^(b+1)).
 * A lookup for size n takes the entry of n's bucket, else that of bucket - 1, else bucket + 1, else
 * none (the kernel's defaults apply). A runtime reads the file once, on first use, and keeps it in
 * memory (kj_tune and kj_tune_db_forget update that copy): lookups touch no file. Damaged lines are
 * ignored, each with a warning through the log callback. */
typedef struct kj_tuned {
    const char *kernel;
    const char *entry;
    const char *fixed;          /* "OP=sum T=f32"; "" when none */
    unsigned bucket;
    const char *device;         /* the device's name (printable ASCII) */
    int cc_major, cc_minor;
    const char *version;        /* kernjit's version that tuned it */
    const char *values;         /* the winner: "BLOCK_SIZE=1024 COARSE_FACTOR=4" */
    double gbps;
    double us;                  /* median time per run */
    uint64_t n;                 /* the size tuned for */
    int64_t time;               /* when it was stored, seconds since the epoch */
} kj_tuned;
typedef void (*kj_tuned_visit_fn)(const kj_tuned *entry, void *user);

/* The database file's path, or NULL when the runtime has no disk cache. Valid for the runtime's
 * lifetime. */
KJ_API const char *kj_tune_db_path(const kj_runtime *rt);
/* Reads the file now and calls visit for each valid line, in key order. The strings are valid
 * during the call only. KJ_ERR_NOT_FOUND when the runtime has no disk cache. Thread-safe. */
KJ_API kj_status kj_tune_db_list(kj_runtime *rt, kj_tuned_visit_fn visit, void *user);

/* Which entries kj_tune_db_forget removes: NULL strings and -1 numbers match anything. */
typedef struct kj_tune_filter {
    const char *kernel;
    const char *entry;
    const char *fixed;   /* every NAME=VALUE in it (space-separated) must be among the entry's */
    const char *device;  /* the device name, exactly */
    int cc;              /* compute capability as major * 10 + minor */
    int bucket;
} kj_tune_filter;
/* Sets every field to "anything". */
KJ_API void kj_tune_filter_init(kj_tune_filter *filter);
/* Removes matching entries from the file (atomically, under the lock) and from the runtime's copy.
 * filter NULL removes all. removed may be NULL. KJ_ERR_NOT_FOUND when the runtime has no disk
 * cache; KJ_ERR_IO when the file cannot be written. Thread-safe. */
KJ_API kj_status kj_tune_db_forget(kj_runtime *rt, const kj_tune_filter *filter, size_t *removed);
/* The entry that a kernel family would use on this runtime's device: kernel, entry and fixed
 * ("OP=sum T=f32", canonical) for size n, by the bucket rule above. KJ_ERR_NOT_FOUND when there is
 * none (or no disk cache); KJ_ERR_NO_DEVICE when compile-only. The strings live as long as the
 * runtime. Thread-safe. */
KJ_API kj_status kj_tune_db_lookup(kj_runtime *rt, const char *kernel, const char *entry, const char *fixed,
                                   uint64_t n, kj_tuned *out);

#ifdef __cplusplus
}
#endif
#endif /* KERNJIT_H */
