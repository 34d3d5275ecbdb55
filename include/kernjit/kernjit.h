/*
 * kernjit/kernjit.h: the public interface of kernjit, a runtime-compiled CUDA kernel service.
 *
 * A program asks for a kernel by name and macro values; kernjit finds the .cu source, validates the
 * values against the kernel's metadata, compiles it with NVRTC (linking the device runtime with
 * nvJitLink when the kernel needs it), caches the binary on disk keyed by everything that changes it,
 * and loads and launches it through the CUDA Driver API.
 *
 * Using it: `pkg-config --cflags --libs kernjit` (add --static to link libkernjit.a), or
 * dependency('kernjit') in Meson, where kernjit may also be a subproject. Every header is in the
 * kernjit/ folder: this one (#include <kernjit/kernjit.h>: the service: runtime, kernels, launch,
 * memory, metadata, caches), the generated version.h it includes, ops.h (the built-in kernel
 * families: reductions, vector add, transpose, dynamic parallelism, Mandelbrot) and tune.h
 * (variants, offline builds, tuning and its database), which include this one. <kernjit.h> beside
 * the folder includes this header, for programs written for 0.2.0.
 *
 * The host program's own CUDA objects: this header needs no CUDA header, and kernjit works with the
 * memory and streams the program made itself, through the Driver API or the Runtime API:
 * - device pointers are kj_devptr: a CUdeviceptr as it is, or a cudaMalloc'd pointer converted through
 *   uintptr_t: (kj_devptr)(uintptr_t)p;
 * - streams are kj_stream: a CUstream or a cudaStream_t cast as it is, (kj_stream)s; NULL is the
 *   default stream; CU_STREAM_LEGACY / cudaStreamLegacy and CU_STREAM_PER_THREAD /
 *   cudaStreamPerThread may be passed the same way;
 * - the memory and the stream must belong to the runtime's context. By default that is the device's
 *   primary context, the one the Runtime API uses, so a program using cudart on the same device
 *   shares it with nothing to do. A program that created its own context with the Driver API passes
 *   it as kj_runtime_options.cu_context.
 *
 * Conventions for every function below:
 * - Functions return kj_status; KJ_OK is 0. On failure, kj_last_error() gives a message naming what
 *   was wrong and what is allowed (for a compile error, followed by the compiler's log). Each
 *   declaration lists the statuses it returns; KJ_ERR_USAGE always includes a required pointer
 *   argument that is NULL.
 * - Outputs are written only on success.
 * - Ownership: what a function returns through a pointer is owned by the library unless the
 *   declaration names the function that frees it; the lifetime of each such value is stated.
 * - Handles come in create/destroy pairs (kj_runtime_create/kj_runtime_destroy, kj_describe/
 *   kj_desc_free, kj_event_create/kj_event_destroy, kj_stream_create/kj_stream_destroy); every
 *   destroy accepts NULL. A kj_kernel is owned by its runtime and has no destroy.
 * - Structs the caller allocates (options, requests, configs, filters; info, stats, results and
 *   reports the library fills) begin with `size_t size`, set by the struct's KJ_*_INIT macro
 *   (kj_request r = KJ_REQUEST_INIT;), which also gives the defaults; from a language without the
 *   macros, set size to the struct's sizeof and every other field to 0 (kj_runtime_options_init and
 *   kj_tune_filter_init fill the two whose defaults are not all 0). The
 *   library reads min(size, its sizeof) bytes of an input, the rest taking their defaults (0 means
 *   the default for every field added after 0.2.0), and writes min(size, its sizeof) bytes of an
 *   output, zeroing a larger struct's bytes past its own. So a program built against older headers
 *   keeps working with a newer library, and one built against newer headers works with an older
 *   library as long as it leaves the fields that library lacks at 0. KJ_ERR_USAGE: a size of 0 (a
 *   struct not initialized; the message names its KJ_*_INIT), a size that no such struct has, or a
 *   larger struct with a non-zero byte past the library's sizeof (a field it cannot honour). Sizes
 *   are multiples of 8: a size that would end inside a field is refused as well. Such a struct has no
 *   implicit padding: where its fields would leave some, a field named `reserved` holds the bytes (0,
 *   and an input's is refused otherwise), so every byte of a caller's struct is one it set. Structs
 *   grow in units of 8 bytes, never into padding; a later field of 4 bytes takes a `reserved`.
 * - Structs the library hands out (a kj_cache_entry in a callback, a kj_tune_result it allocates)
 *   carry no size: they only ever grow at their end. Arrays of structs are read through accessors
 *   (kj_tune_result_variant, kj_compile_result_resource), never indexed, since a program indexes
 *   with the sizeof it knew.
 * - Strings in structs (paths, names, keys) are pointers owned by the library, never arrays of a
 *   fixed length; each field states how long it stays valid.
 * - The library never prints, never aborts and never exits. Warnings (a damaged cache entry, a cache
 *   folder that cannot be used) go to the log callback of kj_runtime_options.
 * - Thread safety is stated per function. A kj_runtime may be shared by threads; calls that use the
 *   device make the runtime's context current on the calling thread and leave it current.
 * - Compatibility: the library is libkernjit.so.2 (0.1's, whose ABI differs, was libkernjit.so.0)
 *   and its symbols carry the version KERNJIT_0.2 (a version script exports the KJ_API functions of
 *   these headers; nothing else the library exports is API), so that a program built against 0.1
 *   fails to start against this library instead of misreading it.
 *   Status values are fixed numbers. kj_version_number() tells the library that was loaded.
 */
#ifndef KERNJIT_H
#define KERNJIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "kernjit/version.h" /* KJ_VERSION_MAJOR/MINOR/PATCH, KJ_VERSION_STRING, KJ_VERSION_HEX */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(KJ_NO_VISIBILITY)
#define KJ_API __attribute__((visibility("default")))
#else
#define KJ_API
#endif
#if defined(__GNUC__)
#define KJ_FORMAT_PRINTF(f, a) __attribute__((format(printf, f, a))) /* the compiler checks the arguments */
#else
#define KJ_FORMAT_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------------------------------------
 * Status codes. KJ_STATUS_MAP(X) calls X(name, value, class, description) once per status. value is
 * the number, fixed for good: a status keeps its number in every later release, and new ones take
 * the next free number (KJ_STATUS_COUNT_ is one past the largest). class is 0 (success), 1 (failure)
 * or 2 (usage error: the caller asked for something not allowed); the CLI exits with the class of
 * the status it got.
 * ---------------------------------------------------------------------------------------------- */
#define KJ_STATUS_MAP(X)                                                                                               \
    X(OK, 0, 0, "success")                                                                                             \
    X(ERR_USAGE, 1, 2, "invalid argument")                                                                             \
    X(ERR_UNKNOWN_KERNEL, 2, 2, "unknown kernel")                                                                      \
    X(ERR_UNKNOWN_ENTRY, 3, 2, "unknown entry point")                                                                  \
    X(ERR_INVALID_DEFINE, 4, 2, "macro value not allowed")                                                             \
    X(ERR_LIMIT, 5, 2, "request exceeds a device limit")                                                               \
    X(ERR_SOURCE, 6, 1, "cannot read kernel source")                                                                   \
    X(ERR_SPEC, 7, 1, "malformed kernel metadata")                                                                     \
    X(ERR_COMPILE, 8, 1, "NVRTC compilation failed")                                                                   \
    X(ERR_LINK, 9, 1, "nvJitLink link failed")                                                                         \
    X(ERR_NO_DRIVER, 10, 1, "CUDA driver not available")                                                               \
    X(ERR_NO_DEVICE, 11, 1, "no CUDA device")                                                                          \
    X(ERR_CUDA, 12, 1, "CUDA driver call failed")                                                                      \
    X(ERR_HOST_MEMORY, 13, 1, "out of host memory")                                                                    \
    X(ERR_DEVICE_MEMORY, 14, 1, "out of device memory")                                                                \
    X(ERR_DEVICE_LAUNCH, 15, 1, "device-side kernel launch failed")                                                    \
    X(ERR_IO, 16, 1, "file system error")                                                                              \
    X(ERR_UNSUPPORTED, 17, 1, "not supported")                                                                         \
    X(ERR_NOT_FOUND, 18, 1, "not found")                                                                               \
    X(ERR_WRONG_RESULT, 19, 1, "result does not match the reference")

typedef enum kj_status {
#define KJ_STATUS_ENUM_(name, value, class_, text) KJ_##name = value,
    KJ_STATUS_MAP(KJ_STATUS_ENUM_)
#undef KJ_STATUS_ENUM_
        KJ_STATUS_COUNT_
} kj_status;

/* A short English description of the status ("unknown kernel"); "unknown status" for a value outside
 * the list. Static storage, never NULL. Thread-safe. No errors. */
KJ_API const char *kj_strerror(kj_status status);
/* The status's name ("KJ_ERR_UNKNOWN_KERNEL"); "KJ_UNKNOWN" for a value outside the list. Static
 * storage, never NULL. Thread-safe. No errors. */
KJ_API const char *kj_status_name(kj_status status);
/* 0 for KJ_OK, 2 for a usage error, 1 for any other failure (and for a value outside the list).
 * Thread-safe. No errors. */
KJ_API int kj_status_class(kj_status status);
/* The message describing the last failure of a kj_ call made by the calling thread: what was wrong,
 * what is allowed and, after a compile or link error, the compiler's log. "" when there was none.
 * Owned by the library (per thread); the string stays valid until this thread's next failing kj_
 * call or its exit. Successful calls leave it as it is. Thread-safe (one message per thread). Never
 * NULL. No errors. */
KJ_API const char *kj_last_error(void);
/* Formats a message (printf's format) into dst, size bytes with the NUL, as kernjit formats its own:
 * a message longer than the buffer is not cut at its end, where the reason is, but its longest words
 * (paths, names, values) lose their middle, marked with an ellipsis ("/very/long/pre\u2026/the/file.cu",
 * the mark in UTF-8), so that each keeps its start and its end and every other word stays whole.
 * kj_last_error() and the log callback's messages are formatted so, in 2048 bytes (the compiler log
 * after an error is not shortened). Returns the length written (without the NUL); nothing is written
 * when dst is NULL or size 0. Thread-safe. No errors. */
KJ_API size_t kj_message_format(char *dst, size_t size, const char *fmt, ...) KJ_FORMAT_PRINTF(3, 4);
/* kj_message_format with a va_list (ap is consumed, as by vsnprintf). */
KJ_API size_t kj_message_vformat(char *dst, size_t size, const char *fmt, va_list ap);

/* Reads a size or a count as kernjit writes them everywhere (every count option of the CLI,
 * KERNJIT_CACHE_MAX): decimal digits, then optionally K, M, G or T, each a factor of 1024 (k, Ki, KiB
 * and KB mean K too); or a power BASE^EXP ("2^28"). No sign, space or fraction. The value must be from
 * min to max. Thread-safe.
 * Errors: KJ_ERR_USAGE (text NULL or malformed, or out of range), the message
 * "'TEXT' is not a number from MIN to MAX (digits, with K, M, G or T for x1024 each, or a power
 * such as 2^28)", the bounds as 2^N and 2^N-1 where they are. */
KJ_API kj_status kj_size_parse(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* The loaded library's version, "MAJOR.MINOR.PATCH" (KJ_VERSION_STRING is the header's). Static
 * storage, never NULL. Thread-safe. No errors. */
KJ_API const char *kj_version_string(void);
/* The loaded library's version as KJ_VERSION_HEX encodes it (0xMMmmpp), for comparing with the
 * header the program was compiled with. Thread-safe. No errors. */
KJ_API unsigned kj_version_number(void);

/* ------------------------------------------------------------------------------------------------
 * Plain types
 * ---------------------------------------------------------------------------------------------- */
/* The KJ_*_INIT of a struct whose defaults are all 0: its size, every other field 0 or NULL. C++
 * before C++20 has no designated initializers, so there it is a value made by kj_sized_init_. */
#ifdef __cplusplus
#define KJ_SIZED_INIT_(type) (kj_sized_init_<type>())
#else
#define KJ_SIZED_INIT_(type)                                                                                           \
    { .size = sizeof(type) }
#endif

typedef uint64_t kj_devptr;                 /* a device address: CUdeviceptr, or (uintptr_t)cudaMalloc'd */
typedef struct kj_stream_opaque *kj_stream; /* a CUstream / cudaStream_t; NULL is the default stream */

typedef struct kj_runtime kj_runtime;         /* one device (or none) and one cache; see kj_runtime_create */
typedef struct kj_kernel kj_kernel;           /* a loaded entry point; owned by its runtime */
typedef struct kj_event kj_event;             /* a CUDA event for timing */
typedef struct kj_kernel_desc kj_kernel_desc; /* a kernel source's metadata, for listing */

typedef enum kj_log_level { KJ_LOG_ERROR = 0, KJ_LOG_WARN = 1, KJ_LOG_INFO = 2, KJ_LOG_DEBUG = 3 } kj_log_level;
/* Receives warnings and information. Called from the thread that made the kj_ call or from the
 * library's threads working for it (kj_compile_all's, kj_kernel_prefetch's), so from several threads
 * at once; must not call back into the same runtime. message is valid only during the call. */
typedef void (*kj_log_fn)(kj_log_level level, const char *message, void *user);

/* A macro value for a kernel: -DNAME=VALUE. The strings are read during the call they are passed to
 * and not kept. value is one word and must be given: a NULL or empty value is refused
 * (KJ_ERR_INVALID_DEFINE) rather than guessed; nvcc's -DNAME (which `kernjit -D NAME` follows) is
 * {"NAME", "1"}. */
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

/* What this process does with the remote cache (a shared Redis): fleet nodes read, builders (and by
 * default every process) also write. */
typedef enum kj_remote_mode {
    KJ_REMOTE_DEFAULT = 0,   /* $KERNJIT_REMOTE_MODE, else KJ_REMOTE_READWRITE */
    KJ_REMOTE_OFF = 1,       /* no remote tier, whatever the environment says */
    KJ_REMOTE_READ = 2,      /* fetch entries; never push, never take a compile lease */
    KJ_REMOTE_READWRITE = 3, /* fetch, push what is compiled here, and compile each key once fleet-wide */
} kj_remote_mode;

typedef struct kj_runtime_options {
    size_t size;           /* sizeof(kj_runtime_options): KJ_RUNTIME_OPTIONS_INIT */
    int device;            /* an ordinal, KJ_DEVICE_AUTO (default) or KJ_DEVICE_NONE */
    const char *arch;      /* the target: sm_XY, sm_XYa (that architecture alone), sm_XYf (its
                                      family), compute_XY, compute_XYa or compute_XYf (PTX the driver
                                      compiles). With a device, one whose code the device runs (sm_90a
                                      on 9.0), NULL being the device's own sm_XY; with none, NULL is
                                      "sm_90" */
    const char *cache_dir; /* NULL: $KERNJIT_CACHE_DIR, $XDG_CACHE_HOME/kernjit, ~/.cache/kernjit */
    kj_cache_mode cache_mode;
    uint64_t cache_max_bytes; /* 0: $KERNJIT_CACHE_MAX (bytes, or with K/M/G suffix), else 1 GiB */
    const char *search_path;  /* NULL: $KERNJIT_PATH; colon-separated folders searched for NAME.cu */
    void *cu_context;         /* a CUcontext the host program created: kernjit uses it as is and
                                      never destroys it; it must outlive the runtime. The runtime's
                                      device is the context's (device must still name an existing
                                      device or be KJ_DEVICE_AUTO). NULL: the device's primary
                                      context, which the CUDA Runtime API shares */
    kj_log_fn log;            /* NULL: warnings are dropped */
    void *log_user;
    kj_log_level log_level; /* messages above this level are not passed on (default KJ_LOG_WARN) */
    /* The remote cache tier: a Redis server that machines share (see "Remote cache" below). */
    const char *remote_cache;   /* NULL or "": $KERNJIT_REMOTE_CACHE; "redis://[[USER]:PASSWORD@]HOST[:PORT]
                                      [/DB][?OPTIONS]" or "unix:///PATH[?OPTIONS]"; OPTIONS are
                                      connect_timeout=MS (default 50), timeout=MS (each operation,
                                      default 200) and, for a socket, db=N; unset everywhere: no remote */
    const char *remote_secret;  /* NULL or "": $KERNJIT_REMOTE_SECRET; an absolute path ("/...") names
                                      a file holding the secret (less a final new line); a value that
                                      looks like a relative path (a '/' after its first character, or
                                      a first '~' or '.') is refused; anything else is the secret
                                      itself; 16 to 4096 bytes. With a secret, what is pushed is
                                      signed (HMAC-SHA256) and what is fetched must be */
    kj_remote_mode remote_mode; /* KJ_REMOTE_DEFAULT: $KERNJIT_REMOTE_MODE (read or readwrite), else
                                      readwrite; KJ_REMOTE_OFF: no remote tier whatever the environment */
    uint32_t reserved;          /* 0 (refused otherwise): names what would be padding, so that a later
                                      field never lands in bytes an older caller left undefined */
    const char *seed_dirs;      /* NULL: $KERNJIT_SEED_PATH; seed folders (colon-separated) of binaries
                                      built ahead of time (`kernjit seed`), searched in order after the
                                      memory map and before the disk cache, then the installed seed
                                      (<prefix>/share/kernjit/seed, found beside the library); "" (or
                                      KERNJIT_SEED_PATH set empty): no seed at all. See "Seeds" below */
} kj_runtime_options;
/* The size and the defaults: KJ_DEVICE_AUTO, the disk cache, KJ_LOG_WARN, every other field 0 or NULL. */
#ifdef __cplusplus
#define KJ_RUNTIME_OPTIONS_INIT (kj_runtime_options_defaults_())
#else
#define KJ_RUNTIME_OPTIONS_INIT                                                                                        \
    {                                                                                                                  \
        .size = sizeof(kj_runtime_options), .device = KJ_DEVICE_AUTO, .cache_mode = KJ_CACHE_DISK,                     \
        .log_level = KJ_LOG_WARN                                                                                       \
    }
#endif

/* KJ_RUNTIME_OPTIONS_INIT for a language without the macro: sets the first `size` bytes of *options
 * (size: the caller's sizeof(kj_runtime_options), smaller for older headers) to the defaults and the
 * size field to size; nothing past them is written. Thread-safe. Errors: KJ_ERR_USAGE (options NULL;
 * size 0, or not the size of a kj_runtime_options). */
KJ_API kj_status kj_runtime_options_init(kj_runtime_options *options, size_t size);

/* Creates a runtime: loads the driver (dlopen of libcuda.so.1; a missing driver is not an error with
 * KJ_DEVICE_AUTO), retains the device's primary context (or adopts options->cu_context) and opens
 * the cache. options may be NULL (defaults). The strings in options are copied; the log callback
 * and log_user are kept. The runtime's context is left current on the calling thread.
 * *out is owned by the caller: free it with kj_runtime_destroy. Several runtimes may exist at once,
 * on the same or different devices and contexts; each has its own kernels and statistics. Several
 * GPUs: one runtime per device; runtimes of one process asking at the same moment for a kernel that
 * no cache holds compile it once (the others wait and load its bytes; their origin is memory).
 * Thread-safe (a runtime is created by one thread, then may be shared).
 * Errors: KJ_ERR_USAGE (bad arch, an arch whose code the device does not run, a device or option
 * that is not there), KJ_ERR_NO_DRIVER / KJ_ERR_NO_DEVICE (an
 * explicit device was asked for and is not there), KJ_ERR_UNSUPPORTED (a device older than NVRTC
 * can target), KJ_ERR_CUDA (including a cu_context that is not a valid context), KJ_ERR_HOST_MEMORY.
 * A cache folder that cannot be used is not an error: the runtime warns and compiles in memory. The
 * runtime holds no file descriptor for its cache (the folder is opened and checked at each use), so a
 * process may hold any number of runtimes. */
KJ_API kj_status kj_runtime_create(const kj_runtime_options *options, kj_runtime **out);
/* Unloads every module, releases the primary context (a cu_context is left alone: still the host's)
 * and frees the runtime; every kj_kernel of it becomes invalid, and the strings it returned. Streams
 * and events made with kj_stream_create / kj_event_create must be destroyed first. The host's own
 * memory and streams are untouched. Not to be called while another thread uses the runtime (not
 * thread-safe with respect to rt). Accepts NULL. No errors. */
KJ_API void kj_runtime_destroy(kj_runtime *rt);
/* 1 when the runtime has a device to launch on, 0 when it is compile-only (or rt is NULL).
 * Thread-safe. No errors. */
KJ_API int kj_runtime_has_device(const kj_runtime *rt);
/* The compile target: options->arch, else the device's "sm_90" (compute_XY when NVRTC is older than
 * the device and the driver finishes PTX). Owned by the runtime, valid until kj_runtime_destroy; ""
 * when rt is NULL.
 * Thread-safe. No errors. */
KJ_API const char *kj_runtime_arch(const kj_runtime *rt);

typedef struct kj_device_info {
    size_t size; /* sizeof(kj_device_info): KJ_DEVICE_INFO_INIT */
    int ordinal;
    const char *name; /* "NVIDIA H100 80GB HBM3"; static storage (the process's life) */
    int cc_major, cc_minor;
    const char *arch;      /* "sm_90"; static storage */
    const char *arch_name; /* "Hopper"; static storage */
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
    size_t shared_per_block;       /* without opt-in (48 KiB) */
    size_t shared_per_block_optin; /* the most a kernel may opt in to */
    size_t shared_per_sm;
    size_t l2_bytes;
    int clock_khz;
    int memory_clock_khz;
    int memory_bus_bits;
    double peak_bandwidth_gbs; /* 2 x memory clock x bus width (DDR), GB/s */
    int driver_version;        /* 13000 for CUDA 13.0 */
    int max_nesting_depth;     /* device-runtime nesting depth limit (24 on CC >= 3.5) */
} kj_device_info;
#define KJ_DEVICE_INFO_INIT KJ_SIZED_INIT_(kj_device_info)

/* Number of devices. Loads the driver on first use (once per process). *count = 0 and KJ_OK when the
 * driver loads and reports none. Thread-safe.
 * Errors: KJ_ERR_USAGE, KJ_ERR_NO_DRIVER (libcuda.so.1 missing, or older than CUDA 12.0),
 * KJ_ERR_CUDA (cuInit failed). */
KJ_API kj_status kj_device_count(int *count);
/* Properties of device `ordinal` into *info (caller's storage; arch_name is static), without creating
 * a context. Thread-safe.
 * Errors: KJ_ERR_USAGE (no such ordinal), KJ_ERR_NO_DRIVER, KJ_ERR_NO_DEVICE, KJ_ERR_CUDA. */
KJ_API kj_status kj_device_query(int ordinal, kj_device_info *info);
/* The runtime's device, copied into *info. Thread-safe.
 * Errors: KJ_ERR_USAGE, KJ_ERR_NO_DEVICE (a compile-only runtime). */
KJ_API kj_status kj_runtime_device(const kj_runtime *rt, kj_device_info *info);
/* The shared-memory capacities (KiB per multiprocessor) the device's architecture can split off its
 * unified L1/shared memory, smallest first: what a carveout (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_
 * CARVEOUT, `//@kernjit carveout`, a percentage of the largest) chooses among. Writes up to max values
 * to kib and returns how many there are; for an architecture kernjit does not know, the usual steps up
 * to device->shared_per_sm. Thread-safe. */
KJ_API size_t kj_device_carveouts(const kj_device_info *device, unsigned *kib, size_t max);

typedef struct kj_stats {
    size_t size;          /* sizeof(kj_stats): KJ_STATS_INIT */
    uint64_t requests;    /* kj_kernel_get and kj_compile calls */
    uint64_t memory_hits; /* answered from the in-memory map (no system call) */
    uint64_t disk_hits;   /* answered from a verified disk entry */
    uint64_t misses;      /* neither: compiled */
    uint64_t compiles;    /* successful NVRTC compilations */
    uint64_t compile_errors;
    uint64_t links;          /* nvJitLink links with the device runtime */
    uint64_t bad_entries;    /* disk entries found damaged and replaced */
    uint64_t store_failures; /* entries that could not be written (the kernel still ran) */
    double compile_ms;       /* total NVRTC time */
    double link_ms;          /* total nvJitLink time */
    /* the remote tier (0 without one) */
    uint64_t remote_hits;     /* verified remote entries used (and stored on disk) */
    uint64_t remote_misses;   /* looked up and not there: compiled here */
    uint64_t remote_waits;    /* waited for another process that was compiling the same key */
    uint64_t remote_pushes;   /* entries and tuning results written to the remote */
    uint64_t remote_refusals; /* remote values refused: damaged, unsigned, wrongly signed, another format */
    uint64_t remote_errors;   /* operations that failed or timed out, and those skipped by the breaker */
    double remote_ms;         /* total time of the lookups, waits included */
    uint64_t seed_hits;       /* answered from a verified seed entry (kj_runtime_options.seed_dirs) */
} kj_stats;
#define KJ_STATS_INIT KJ_SIZED_INIT_(kj_stats)

/* Counters since the runtime was created, copied into *stats (a consistent snapshot). Thread-safe.
 * Errors: KJ_ERR_USAGE (NULL argument, stats->size refused). */
KJ_API kj_status kj_runtime_stats(const kj_runtime *rt, kj_stats *stats);

/* ------------------------------------------------------------------------------------------------
 * Kernels
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_request {
    size_t size;              /* sizeof(kj_request): KJ_REQUEST_INIT */
    const char *kernel;       /* a built-in name ("reduce"), a name found as NAME.cu on the search path
                                  (which wins over the built-in), or a path to a .cu file (contains '/'
                                  or ends in ".cu"); with source_text, the name used in messages */
    const char *source_text;  /* optional: the source itself, NUL-terminated; quoted #includes are
                                  resolved beside `kernel` if it is a path, else on the search path */
    const char *entry;        /* entry point: a name from the metadata, an extern "C" function or a C++
                                  name expression ("scale<float,256>"); NULL: the first entry */
    const kj_define *defines; /* -D macros, validated against the kernel's metadata */
    size_t define_count;
    const char *const *options; /* extra NVRTC options ("-lineinfo"); part of the cache key */
    size_t option_count;
    const char *arch;           /* a target other than the runtime's, as kj_runtime_options.arch names
                                  it ("sm_80", "sm_90a", "compute_75"): kj_compile builds any NVRTC
                                  has; kj_kernel_get one whose code the device runs (sm_90a only on
                                  9.0, compute_75 on 7.5 and newer), and refuses another before the
                                  driver sees it. NULL: the runtime's */
    const char *const *sources; /* more translation units of the same program: paths to .cu files (a
                                  '/' or ".cu" in each; `kernel` must then be a path to a .cu file
                                  too, and source_text NULL), or to compiled code that nvJitLink
                                  takes as it is by its extension (.ptx text, a relocatable .cubin,
                                  .ltoir). `kernel` and these, in this order, are each compiled as
                                  relocatable device code (-rdc=true; LTO-IR with the option -dlto)
                                  with the same macros and options, and linked by nvJitLink into one
                                  binary (with the device runtime only when the program launches
                                  kernels or asks for -rdc=true; with -lto when any unit is LTO-IR).
                                  The entry may be in any of them. Only `kernel` may
                                  carry a metadata block; the key covers every source and header, and
                                  their order. NULL with source_count 0: a program of one source */
    size_t source_count;        /* at most 63 */
    const char *const *entries; /* several entries of one program, compiled together as CuPy's
                                  RawModule(name_expressions=...) does: each a name `entry` could be
                                  ("scale<float,256>", "scale<double,256>"), all lowered by one NVRTC
                                  compile into one binary, stored as one cache entry (the key covers
                                  the list and its order, not `entry`). `entry` must then be NULL (the
                                  first of them) or one of them: the kernel returned is that one, and
                                  a request that differs only in `entry` gets another instance of the
                                  same binary (the module is loaded once). NULL with entry_count 0:
                                  the entry alone */
    size_t entry_count;         /* at most 64, each listed once */
} kj_request;                   /* read during the call only: nothing of it is kept */
#define KJ_REQUEST_INIT KJ_SIZED_INIT_(kj_request)

typedef enum kj_origin {
    KJ_ORIGIN_MEMORY = 0,   /* already loaded in this runtime */
    KJ_ORIGIN_DISK = 1,     /* loaded from the disk cache */
    KJ_ORIGIN_COMPILED = 2, /* compiled now */
    KJ_ORIGIN_REMOTE = 3,   /* fetched from the remote cache, verified, and stored on disk */
    KJ_ORIGIN_SEED = 4,     /* loaded from a seed folder (built ahead of time; not copied to the disk) */
} kj_origin;

/* "memory", "disk", "compiled", "remote" or "seed"; "unknown" for another value. Static storage, never
 * NULL. Thread-safe. No errors. */
KJ_API const char *kj_origin_name(kj_origin origin);

/* Returns the loaded kernel for the request, compiling and caching as needed. The kernel is owned by
 * the runtime and valid until kj_runtime_destroy (there is no per-kernel destroy); asking again
 * returns the same handle (a memory hit: no system call). origin may be NULL.
 * Edits: a memory hit is keyed by the request as given and reads no file, so once a runtime has
 * loaded a kernel it keeps it; an edit of its source or of any header it includes is noticed by the
 * next request that is not a memory hit (a new runtime, another spelling of the request, and every
 * kj_compile, which re-reads and re-hashes them all). Nothing stale is ever taken from the disk cache.
 * Thread-safe: threads may ask for the same or different kernels at once.
 * Errors: KJ_ERR_USAGE (a malformed request: bad names, options or arch; an arch whose code the
 * device does not run), KJ_ERR_UNKNOWN_KERNEL,
 * KJ_ERR_UNKNOWN_ENTRY, KJ_ERR_INVALID_DEFINE (unknown macro or a value outside the allowed set),
 * KJ_ERR_SOURCE, KJ_ERR_SPEC, KJ_ERR_COMPILE / KJ_ERR_LINK (the log is in kj_last_error()),
 * KJ_ERR_IO (the process has no file descriptor left for NVRTC: EMFILE or ENFILE, named so),
 * KJ_ERR_NO_DEVICE (compile-only runtime), KJ_ERR_CUDA / KJ_ERR_DEVICE_MEMORY (loading the module),
 * KJ_ERR_LIMIT (the metadata's shared-dynamic asks for more than the device allows a block: the
 * message names both numbers), KJ_ERR_HOST_MEMORY. A disk cache that cannot be read or written is not an error (a warning). */
KJ_API kj_status kj_kernel_get(kj_runtime *rt, const kj_request *request, kj_kernel **out, kj_origin *origin);

/* Starts getting the n requests' kernels on the runtime's background threads (at most 4, fewer on
 * fewer processors; started on first use, ended by kj_runtime_destroy) and returns at once, so that
 * compiles run while the host program does its own start-up: a later kj_kernel_get of the same
 * request (the same fields, as its memory hit compares them) waits only for what is left. A request
 * still queued when kj_kernel_get asks for it is taken off the queue and done at once by the asking
 * thread; the first kj_kernel_get of a prefetched kernel reports how the prefetch obtained it
 * (compiled, disk, remote), later ones a memory hit. Requests already loaded or already prefetching
 * are skipped. On a runtime without a device the kernels are compiled into the cache (kj_compile,
 * which does not wait for prefetches). The requests are copied: they may go away when this returns.
 * Errors: only what can be told at once: KJ_ERR_USAGE (NULL rt, NULL requests with n > 0, or a
 * malformed request, named, and then nothing is queued), KJ_ERR_HOST_MEMORY (the requests before it
 * stay queued). Anything that fails later (an unknown kernel, a compile error) is not reported here:
 * the kj_kernel_get of that request does the work again and returns the error with its message (the
 * failed prefetch is noted at KJ_LOG_INFO). When no thread can be started the work is done before
 * returning. Thread-safe. */
KJ_API kj_status kj_kernel_prefetch(kj_runtime *rt, const kj_request *requests, size_t n);

/* What one kernel of a binary uses, as the compiler (ptxas, inside NVRTC) reports it, or for a
 * program linked by nvJitLink, the linker: known without a GPU. Sizes in bytes. */
typedef struct kj_resource_usage {
    const char *symbol;      /* the kernel's name in the binary (mangled for a C++ kernel) */
    int registers;           /* per thread */
    int spill_store_bytes;   /* per thread: stores of values that did not fit the registers */
    int spill_load_bytes;    /* per thread: their loads back */
    int stack_bytes;         /* local memory per thread: the kernel's stack frame, with the functions
                                  it calls where the compiler says (sm_90 and later, and linked
                                  programs), and local memory besides the stack */
    int shared_static_bytes; /* static shared memory per block (__shared__ variables; dynamic shared
                                  memory is given at launch); without the 1 KiB that compute
                                  capability 9.0 reserves per block for the system */
} kj_resource_usage;

typedef struct kj_compile_result {
    size_t size;   /* sizeof(kj_compile_result): KJ_COMPILE_RESULT_INIT */
    int cache_hit; /* 1: a valid entry was already on disk (in the disk cache, or a seed) */
    int stored;    /* 1: the cache holds the entry now (0: compiled in memory only) */
    int linked;    /* 1: linked with the device runtime */
    int is_ptx;    /* 1: PTX for the driver to finish (a compute_XY target, or a device newer
                               than NVRTC) */
    /* The strings (never NULL) and the resources below are owned by the library: valid until the
     * calling thread's next kj_compile, kj_emit or kj_compile_all, or its exit. */
    const char *arch;       /* the target compiled for: sm_XY, sm_XYa, sm_XYf, or compute_XY... for PTX */
    const char *key;        /* the cache key, 32 hex digits */
    const char *cache_path; /* the entry's path (a seed's file for KJ_ORIGIN_SEED); "" when not stored */
    double compile_ms;      /* NVRTC time (0 on a hit) */
    double link_ms;         /* nvJitLink time (0 when not linked or on a hit) */
    size_t binary_bytes;
    const char *log;                          /* NVRTC's (and nvJitLink's) warnings, "" when none: from this compile, or
                               as stored with the entry on a hit. They also reach the log callback
                               (KJ_LOG_WARN). */
    const void *resource_table;               /* the library's: each kernel's kj_resource_usage, read through
                               kj_compile_result_resource */
    size_t resource_count;                    /* kernels of the binary whose resources are known (in the compiler's
                               order), from this compile or as stored with the entry on a hit; 0 when
                               not known (a PTX target: the driver compiles it) */
    const kj_resource_usage *entry_resources; /* the requested entry's (one of resources), or NULL */
    unsigned source_count;            /* translation units compiled: 1, or the linked sources (kj_request.sources) */
    kj_origin origin;                 /* where the binary came from: KJ_ORIGIN_SEED, _DISK, _REMOTE or _COMPILED */
    const char *const *entry_symbols; /* the symbol of each entry compiled: kj_request.entries' in their
                               order (a C++ name expression's lowered name), else the one entry's */
    size_t entry_symbol_count;
} kj_compile_result;
#define KJ_COMPILE_RESULT_INIT KJ_SIZED_INIT_(kj_compile_result)

/* Kernel `index` (below result->resource_count) of a result that kj_compile or kj_emit filled, or
 * NULL past the end or for a NULL result. An accessor rather than an array, since kj_resource_usage
 * may grow. Owned by the library; valid until the calling thread's next kj_compile, kj_emit or
 * kj_compile_all, or its exit. Thread-safe. */
KJ_API const kj_resource_usage *kj_compile_result_resource(const kj_compile_result *result, size_t index);

/* Compiles (or finds in the cache) without loading; works with no device and no driver. The binary
 * stays in the disk cache (result->cache_path) when the runtime has one. result (caller's storage)
 * may be NULL. Thread-safe.
 * Errors as kj_kernel_get, except KJ_ERR_NO_DEVICE and the module-loading ones; KJ_ERR_USAGE also
 * for a request arch that NVRTC cannot target; KJ_ERR_UNSUPPORTED for a linked program (several
 * sources, or kernels that launch kernels) built for a compute_XY target (nvJitLink links machine
 * code only); KJ_ERR_LINK saying so when the toolkit's device runtime has no code for the target. */
KJ_API kj_status kj_compile(kj_runtime *rt, const kj_request *request, kj_compile_result *result);

/* The compiler's output, to keep or to hand to other tools. */
typedef enum kj_emit_format {
    KJ_EMIT_CUBIN = 0,  /* the binary the driver loads: an ELF file, as readelf, cuobjdump and nvdisasm take it
                          (a disk cache entry holds the same bytes after a header of kernjit's own) */
    KJ_EMIT_PTX = 1,    /* NVRTC's PTX for the target: text */
    KJ_EMIT_LTOIR = 2,  /* LTO-IR (NVRTC with -dlto): NVVM IR that nvJitLink links and optimizes across units
                          (NVJITLINK_INPUT_LTOIR) */
    KJ_EMIT_FATBIN = 3, /* a fat binary: the cubin (PTX for compute_XY) of each target, which the driver
                          picks from when it loads it (kj_emit_fatbin for several targets) */
    KJ_EMIT_FORMAT_COUNT_
} kj_emit_format;

/* "cubin", "ptx", "ltoir", "fatbin"; "unknown" for another value. Static storage. Thread-safe. No errors. */
KJ_API const char *kj_emit_format_name(kj_emit_format format);
/* Parses a format name. Errors: KJ_ERR_USAGE naming the allowed names (text NULL or not one). */
KJ_API kj_status kj_emit_format_parse(const char *text, kj_emit_format *out);

/* Compiles the request as kj_compile does and gives its output in `format`: *data, *size bytes,
 * belongs to the caller, who frees it with kj_emit_free (it is never NULL on success; PTX is
 * followed by a NUL that *size does not count).
 * - KJ_EMIT_CUBIN comes through the cache like kj_compile (a hit costs no compile; a miss is compiled
 *   and stored); a program of several sources, or one that launches kernels, gives the linked binary.
 * - KJ_EMIT_PTX and KJ_EMIT_LTOIR are compiled now, every time (the cache keeps binaries only), with
 *   exactly the options the cache key covers (LTOIR adds -dlto, which kj_request.options refuses);
 *   they take a program of one source and give that unit's output, before any link with the device
 *   runtime.
 * result (caller's storage) may be NULL; for PTX and LTO-IR it says cache_hit 0, stored 0, cache_path
 * "" and origin KJ_ORIGIN_COMPILED, and binary_bytes is *size. Works with no device and no driver.
 * Thread-safe.
 * Errors as kj_compile; KJ_ERR_USAGE also for a NULL data or size, a format outside the enum, or PTX
 * or LTO-IR of a program of several sources; KJ_ERR_UNSUPPORTED for KJ_EMIT_CUBIN when the target is
 * compute_XY (asked for, or a device newer than this NVRTC, for which only PTX exists). */
KJ_API kj_status kj_emit(kj_runtime *rt, const kj_request *request, kj_emit_format format, void **data, size_t *size,
                         kj_compile_result *result);
/* A fat binary of the request's binary for each of the targets in archs (arch_count from 1 to 16,
 * each named as kj_request.arch names one, none twice; the request's own arch is not used): each
 * comes through the cache as KJ_EMIT_CUBIN's does (a compute_XY target gives PTX), and they are
 * packed by nvFatbin (libnvfatbin from the toolkit, loaded at run time; KERNJIT_NVFATBIN=PATH names
 * it, =off leaves it) or, without it, by kernjit in the format the toolkit's fatbinary writes. *data
 * (*size bytes) is the caller's, freed with kj_emit_free. result, when not NULL, describes the last
 * target's binary, with binary_bytes the fat binary's size. Works with no device. Thread-safe.
 * Errors as kj_emit's for KJ_EMIT_CUBIN, per target; KJ_ERR_USAGE for no archs, more than 16, NULL
 * names or one twice; KJ_ERR_UNSUPPORTED for a compute_XY target without nvFatbin. */
KJ_API kj_status kj_emit_fatbin(kj_runtime *rt, const kj_request *request, const char *const *archs, size_t arch_count,
                                void **data, size_t *size, kj_compile_result *result);
/* Whether kj_emit_fatbin can hold the code of target `arch` here, checked without compiling: KJ_OK, or
 * KJ_ERR_UNSUPPORTED for a compute_XY or architecture-specific target (sm_90a) when nvFatbin cannot
 * be loaded (kernjit's own writer packs sm_XY cubins), naming what to give instead. Thread-safe. */
KJ_API kj_status kj_emit_fatbin_target(const char *arch);
/* Frees what kj_emit and kj_emit_fatbin gave. Accepts NULL. Thread-safe. */
KJ_API void kj_emit_free(void *data);

typedef struct kj_kernel_info {
    size_t size;              /* sizeof(kj_kernel_info): KJ_KERNEL_INFO_INIT */
    const char *kernel;       /* the request's kernel name */
    const char *entry;        /* the entry asked for */
    const char *lowered_name; /* the symbol in the binary */
    const char *arch;
    const char *key;     /* cache key, 32 hex digits */
    const char *defines; /* the canonical define list, "BLOCK_SIZE=256 OP=sum ..." */
    const char *log;     /* NVRTC/nvJitLink warnings, "" when none (from the cache entry on a disk hit) */
    kj_origin origin;    /* how it was first obtained */
    int num_regs;
    int shared_static_bytes;
    int local_bytes;
    int max_threads_per_block; /* for this function */
    int linked;
    unsigned shared_dynamic_bytes; /* dynamic shared memory the metadata asks for with these macros
                                      (`//@kernjit shared-dynamic`), already opted in; 0: none */
    int carveout;                  /* the preferred shared-memory carveout applied from the metadata: a
                                  percentage 0..100 of the largest shared memory, -1: the driver's choice */
    int pdl;                       /* 1: launched with programmatic dependent launch (the metadata's `pdl`,
                                  on a device and target of compute capability 9.0 or later) */
    uint32_t reserved;             /* written 0: names what would be padding (a later field takes its place) */
} kj_kernel_info;
#define KJ_KERNEL_INFO_INIT KJ_SIZED_INIT_(kj_kernel_info)

/* Facts about a loaded kernel, into *info (caller's storage). The strings are owned by the kernel
 * and live as long as it (until kj_runtime_destroy). Thread-safe. Errors: KJ_ERR_USAGE. */
KJ_API kj_status kj_kernel_query(const kj_kernel *kernel, kj_kernel_info *info);

/* How many blocks of block_threads threads (with dynamic_shared bytes each) fit on one
 * multiprocessor at once, given the kernel's registers and shared memory, into *blocks_per_sm.
 * The last answer is remembered per kernel, so asking again with the same values costs no driver
 * call. Thread-safe.
 * Errors: KJ_ERR_USAGE (NULL argument), KJ_ERR_LIMIT (block_threads 0 or above the kernel's limit),
 * KJ_ERR_CUDA. */
KJ_API kj_status kj_kernel_occupancy(const kj_kernel *kernel, unsigned block_threads, unsigned dynamic_shared,
                                     int *blocks_per_sm);

typedef struct kj_launch_config {
    size_t size;      /* sizeof(kj_launch_config): KJ_LAUNCH_CONFIG_INIT */
    unsigned grid[3]; /* 0 in a field is taken as 1 */
    unsigned block[3];
    unsigned shared_bytes; /* dynamic shared memory; above 48 KiB the kernel is opted in;
                                  0: what the kernel's metadata asks for (kj_kernel_info.shared_dynamic_bytes) */
    kj_stream stream;
    uint64_t pending_launches; /* device-side launches this launch may have pending at once;
                                  0: what the kernel's metadata says */
    int cooperative;           /* 1: a cooperative launch, for kernels that synchronize the whole grid
                                  (cooperative_groups' grid.sync()): every block is resident at once,
                                  so the grid may have at most blocks-per-SM x SMs blocks (KJ_ERR_LIMIT
                                  names the largest that fits) */
    unsigned cluster[3];       /* thread-block cluster dimensions (compute capability 9.0 and later);
                                  all 0: no clusters. Each grid dimension must be a multiple of its
                                  cluster dimension, and the cluster must fit the device (KJ_ERR_LIMIT) */
} kj_launch_config;
#define KJ_LAUNCH_CONFIG_INIT KJ_SIZED_INIT_(kj_launch_config)

/* Launches the kernel on config->stream (the host's own stream is fine; see the top of this file)
 * with args as for cuLaunchKernel: an array of pointers to each argument, read during the call (the
 * values are copied, so they may change or go away once it returns).
 * Before launching a kernel that uses the device runtime, the context's pending-launch limit
 * (CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) is raised to what the config or the metadata asks.
 * Dynamic shared memory above the default 48 KiB is opted in for the function. Grid, block and
 * shared memory are checked against the device and the function first: KJ_ERR_LIMIT names both
 * numbers. Cooperative launches and clusters (config->cooperative, config->cluster) go through
 * cuLaunchKernelEx, with programmatic dependent launch too when the kernel is marked so.
 * Asynchronous: errors of the kernel itself surface at the next synchronizing call.
 * Thread-safe (threads may launch the same kernel at once).
 * Errors: KJ_ERR_USAGE, KJ_ERR_LIMIT (also a cooperative grid or a cluster that cannot fit, naming the
 * numbers), KJ_ERR_UNSUPPORTED (clusters below compute capability 9.0, or a driver without
 * cuLaunchKernelEx), KJ_ERR_NO_DEVICE, KJ_ERR_CUDA (for example a stream of another context). */
KJ_API kj_status kj_kernel_launch(kj_kernel *kernel, const kj_launch_config *config, void **args);

/* ------------------------------------------------------------------------------------------------
 * Kernel parameters: what the compiled function takes, as the driver reads it from the binary
 * ---------------------------------------------------------------------------------------------- */
/* The number of parameters of the kernel's function. Read with cuFuncGetParamInfo (CUDA 12.4 or
 * newer): KJ_ERR_UNSUPPORTED when the driver lacks it, so that a caller can fall back (count the
 * parameters another way, or skip its check). Thread-safe. */
KJ_API kj_status kj_kernel_param_count(const kj_kernel *kernel, size_t *count);
/* Parameter `index` (from 0): its offset in the kernel's parameter buffer and its size in bytes (a
 * pointer 8, an int 4, a struct passed by value its sizeof). offset and size may be NULL.
 * KJ_ERR_USAGE when index is not below the count (the message gives the count); KJ_ERR_UNSUPPORTED
 * as above. Thread-safe. */
KJ_API kj_status kj_kernel_param_info(const kj_kernel *kernel, size_t index, size_t *offset, size_t *size);

/* ------------------------------------------------------------------------------------------------
 * Device memory, streams, events: thin wrappers so that a program needs no CUDA header. A program
 * that uses the Driver or Runtime API itself may use its own calls instead: these are conveniences,
 * never required (kj_reduce and kj_kernel_launch take any memory and stream of the context).
 * All thread-safe; they make the runtime's context current on the calling thread and leave it so.
 * All need a device: KJ_ERR_NO_DEVICE from a compile-only runtime, KJ_ERR_USAGE for a NULL rt or
 * output, KJ_ERR_CUDA when the driver refuses (the message names the call and the CUDA error).
 * Copies and memsets without a stream argument run on the legacy default stream: they wait for work
 * on blocking streams, but not for work on non-blocking streams (kj_stream_create makes those, and
 * cudaStreamNonBlocking ones): synchronize such a stream first.
 * ---------------------------------------------------------------------------------------------- */
/* Allocates bytes (> 0) of device memory in the runtime's context. *out is owned by the caller: free
 * it with kj_mem_free (or cuMemFree in the same context) before kj_runtime_destroy.
 * Errors: KJ_ERR_USAGE (0 bytes), KJ_ERR_DEVICE_MEMORY (naming the free and total bytes). */
KJ_API kj_status kj_mem_alloc(kj_runtime *rt, size_t bytes, kj_devptr *out);
/* Frees memory from kj_mem_alloc (or cuMemAlloc/cudaMalloc in the runtime's context). 0 is accepted
 * (KJ_OK, nothing done). */
KJ_API kj_status kj_mem_free(kj_runtime *rt, kj_devptr ptr);
/* Free and total device memory in bytes; either pointer may be NULL. */
KJ_API kj_status kj_mem_info(kj_runtime *rt, size_t *free_bytes, size_t *total_bytes);
/* Copies bytes from host to device; returns once src may be reused. bytes = 0 does nothing. */
KJ_API kj_status kj_memcpy_htod(kj_runtime *rt, kj_devptr dst, const void *src, size_t bytes);
/* Copies bytes from device to host; returns when dst holds them. bytes = 0 does nothing. */
KJ_API kj_status kj_memcpy_dtoh(kj_runtime *rt, void *dst, kj_devptr src, size_t bytes);
/* Copies bytes between device buffers, ordered on stream; returns without waiting. */
KJ_API kj_status kj_memcpy_dtod(kj_runtime *rt, kj_devptr dst, kj_devptr src, size_t bytes, kj_stream stream);
/* Sets bytes bytes (kj_memset_u8) or count 4-byte words (kj_memset_u32, dst 4-byte aligned) to value.
 * May return before the device has done it; later work on the default stream sees the result. */
KJ_API kj_status kj_memset_u8(kj_runtime *rt, kj_devptr dst, uint8_t value, size_t bytes);
KJ_API kj_status kj_memset_u32(kj_runtime *rt, kj_devptr dst, uint32_t value, size_t count);
/* Waits for all work of the context, every stream of it (the host's own included); reports
 * errors of kernels that ran (KJ_ERR_CUDA naming the CUDA error, after which the context is
 * usually unusable, as in any CUDA program). */
KJ_API kj_status kj_synchronize(kj_runtime *rt);

/* Creates a non-blocking stream in the runtime's context. *out is owned by the caller: destroy it
 * with kj_stream_destroy before kj_runtime_destroy. A stream of the host's own works as well. */
KJ_API kj_status kj_stream_create(kj_runtime *rt, kj_stream *out);
/* Destroys a stream from kj_stream_create; work queued on it still completes. NULL is accepted
 * (KJ_OK, nothing done). */
KJ_API kj_status kj_stream_destroy(kj_runtime *rt, kj_stream stream);
/* Waits for the work on stream (NULL: the default stream); reports errors of kernels that ran on it. */
KJ_API kj_status kj_stream_synchronize(kj_runtime *rt, kj_stream stream);

/* Creates an event for timing work on streams of the runtime. *out is owned by the caller: destroy
 * it with kj_event_destroy before kj_runtime_destroy. Errors add KJ_ERR_HOST_MEMORY. */
KJ_API kj_status kj_event_create(kj_runtime *rt, kj_event **out);
/* Destroys an event. Accepts NULL. No errors. */
KJ_API void kj_event_destroy(kj_event *event);
/* Records the event on stream (NULL: the default stream). Errors: KJ_ERR_USAGE, KJ_ERR_CUDA. */
KJ_API kj_status kj_event_record(kj_event *event, kj_stream stream);
/* Waits for `end` and gives the milliseconds between the two events (both recorded, same runtime).
 * Errors: KJ_ERR_USAGE, KJ_ERR_CUDA (an event not recorded, or a kernel before it failed). */
KJ_API kj_status kj_event_elapsed_ms(kj_event *start, kj_event *end, float *ms);

/* ------------------------------------------------------------------------------------------------
 * Toolchain
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_toolchain {
    size_t size;       /* sizeof(kj_toolchain): KJ_TOOLCHAIN_INIT */
    int nvrtc_version; /* 13000 for 13.0 */
    int nvjitlink_version;
    const char *cuda_home;  /* where the device runtime and CUDA headers are looked for */
    const char *devrt_path; /* libcudadevrt.a, or NULL when it is missing */
    int arch_count;
    const int *archs; /* arch_count compute capabilities NVRTC can target, 90 for sm_90 */
} kj_toolchain;
#define KJ_TOOLCHAIN_INIT KJ_SIZED_INIT_(kj_toolchain)

/* What compiles kernels here, into *info (caller's storage); needs no driver. The strings and archs
 * are static storage (valid for the life of the process). Thread-safe. Errors: KJ_ERR_USAGE (info NULL, or its size refused). */
KJ_API kj_status kj_toolchain_query(kj_toolchain *info);

/* ------------------------------------------------------------------------------------------------
 * Kernel metadata (what `kernjit list` shows)
 * ---------------------------------------------------------------------------------------------- */
/* The built-in kernels, embedded in the library: their count, and the name at index (from 0; NULL
 * past the end). The names are static. Thread-safe. No errors. */
KJ_API size_t kj_builtin_count(void);
KJ_API const char *kj_builtin_name(size_t index);

typedef struct kj_param_info {
    size_t size;               /* sizeof(kj_param_info): KJ_PARAM_INFO_INIT */
    const char *name;          /* "BLOCK_SIZE" */
    const char *default_value; /* "256" */
    size_t value_count;
    const char *const *values; /* the allowed values, in the order the metadata gives them */
    int tunable;               /* 1: a performance knob (the tuner varies it); 0: it changes the result */
    int launch;                /* 1: a knob of the launch alone (`launch` in the metadata: the grid, say),
                                   tunable, read by the host; the compiler never sees it and the variants
                                   that differ only in it share one binary */
} kj_param_info;
#define KJ_PARAM_INFO_INIT KJ_SIZED_INIT_(kj_param_info)

/* Reads the metadata of a kernel (found as kj_kernel_get finds it, on rt's search path; rt may be
 * NULL for the defaults: $KERNJIT_PATH, then the built-ins). Needs no device.
 * *out is owned by the caller: free it with kj_desc_free; it does not depend on rt, which may be
 * destroyed first. Thread-safe.
 * Errors: KJ_ERR_USAGE, KJ_ERR_UNKNOWN_KERNEL, KJ_ERR_SOURCE, KJ_ERR_SPEC, KJ_ERR_HOST_MEMORY. */
KJ_API kj_status kj_describe(kj_runtime *rt, const char *kernel, kj_kernel_desc **out);
/* Frees a description and every string it returned. Accepts NULL. */
KJ_API void kj_desc_free(kj_kernel_desc *desc);
/* The accessors below read a description: the strings they return (and the arrays in kj_param_info)
 * are owned by it and valid until kj_desc_free. Given NULL they return "", 0 or NULL rather than
 * fail. A description may be read by several threads at once. No errors except kj_desc_param's. */
KJ_API const char *kj_desc_name(const kj_kernel_desc *desc);
KJ_API const char *kj_desc_origin(const kj_kernel_desc *desc);  /* "built-in" or the file's path */
KJ_API const char *kj_desc_summary(const kj_kernel_desc *desc); /* one line, "" when none */
KJ_API size_t kj_desc_entry_count(const kj_kernel_desc *desc);
KJ_API const char *kj_desc_entry(const kj_kernel_desc *desc, size_t index); /* NULL past the end */
KJ_API size_t kj_desc_param_count(const kj_kernel_desc *desc);
/* Parameter index into *info. Errors: KJ_ERR_USAGE (NULL argument, index past the end). */
KJ_API kj_status kj_desc_param(const kj_kernel_desc *desc, size_t index, kj_param_info *info);
KJ_API int kj_desc_needs_device_runtime(const kj_kernel_desc *desc);  /* 1: rdc + cudadevrt */
KJ_API uint64_t kj_desc_pending_launches(const kj_kernel_desc *desc); /* 0 when not set */
/* The `require` lines: their count, and the expression at index as written (NULL past the end). */
KJ_API size_t kj_desc_require_count(const kj_kernel_desc *desc);
KJ_API const char *kj_desc_require(const kj_kernel_desc *desc, size_t index);
/* What the metadata says of one entry (any name: the lines without an entry apply to every entry):
 * whether it is marked `pdl` (1) and so launched early on compute capability 9.0 and later; its
 * `shared-dynamic` byte-count expression as written, NULL when none applies; its `carveout`, a
 * percentage 0..100 of the largest shared memory (max-l1 is 0, max-shared 100), KJ_CARVEOUT_DRIVER
 * for the driver's choice, or KJ_CARVEOUT_NONE when no line applies. */
#define KJ_CARVEOUT_DRIVER (-1)
#define KJ_CARVEOUT_NONE (-2)
KJ_API int kj_desc_entry_pdl(const kj_kernel_desc *desc, const char *entry);
KJ_API const char *kj_desc_entry_shared_dynamic(const kj_kernel_desc *desc, const char *entry);
KJ_API int kj_desc_entry_carveout(const kj_kernel_desc *desc, const char *entry);

/* ------------------------------------------------------------------------------------------------
 * Disk cache
 * ---------------------------------------------------------------------------------------------- */
/* The cache folder in use, or NULL when the runtime compiles in memory only (refused or disabled) or
 * rt is NULL. Owned by the runtime, valid until kj_runtime_destroy. Thread-safe. No errors. */
KJ_API const char *kj_cache_dir(const kj_runtime *rt);

typedef struct kj_cache_entry {
    const char *path;
    const char *arch;        /* "sm_90" */
    const char *key;         /* 32 hex digits */
    const char *description; /* what was compiled, as stored (several lines); "" if unreadable */
    uint64_t bytes;          /* file size */
    int64_t mtime;           /* last use, seconds since the epoch */
    int valid;               /* 1: header and checksum verify */
    /* The description taken apart ("" when it does not say): */
    const char *kernel;  /* "reduce", or the file's name */
    const char *macros;  /* the macros it was compiled with, "NAME=VALUE NAME=VALUE ..." */
    const char *options; /* the other NVRTC options (less the target and -std=c++17, which
                                  every compile has), space-separated */
    const char *entry;   /* the entry compiled alone (the file's other entries left out); "" when
                                  the whole file was compiled */
} kj_cache_entry;
/* entry and its strings are valid only during the call. */
typedef void (*kj_cache_visit_fn)(const kj_cache_entry *entry, void *user);

/* The functions below work on the disk cache shared by every runtime and process that uses the same
 * folder; they are thread-safe, and safe while other processes use the folder (entries appear and
 * go atomically). They need no device.
 * Errors: KJ_ERR_USAGE (NULL rt or visit), KJ_ERR_NOT_FOUND (a memory-only runtime), KJ_ERR_IO (the
 * folder cannot be read, or some entries cannot be removed), KJ_ERR_HOST_MEMORY. */
/* Calls visit for each entry, most recently used first, from the calling thread; visit must not
 * call back into the cache functions. Verifies each entry (reads it). */
KJ_API kj_status kj_cache_list(kj_runtime *rt, kj_cache_visit_fn visit, void *user);
/* Removes every entry (and temporary files that writers left more than an hour ago: a newer one is
 * a write in progress, in this or another process, and is let finish); the counts may be NULL. Kernels already loaded
 * stay loaded. */
KJ_API kj_status kj_cache_clear(kj_runtime *rt, uint64_t *removed_entries, uint64_t *removed_bytes);
/* Entries and bytes on disk, and the bound that eviction keeps them under; each pointer may be NULL. */
KJ_API kj_status kj_cache_usage(kj_runtime *rt, uint64_t *entries, uint64_t *bytes, uint64_t *max_bytes);

/* ------------------------------------------------------------------------------------------------
 * Seeds: binaries built ahead of time, carried by an application or an install
 *
 * A seed folder holds cache entries in the disk cache's layout (<folder>/sm_XY/<key>.cubin) and a
 * manifest, made by `kernjit seed DIR ...` (kj_compile into a runtime whose cache_dir is the folder,
 * then kj_seed_sign when it is to be signed), for the targets the application supports. A runtime
 * looks in its seed folders (kj_runtime_options.seed_dirs or KERNJIT_SEED_PATH, then the installed
 * seed) after the memory map and before the disk cache: lookups go memory, seed, disk, remote,
 * compile. The key is computed from the request's inputs as for any tier, so a seed built from other
 * headers, options, toolkit or target simply has no entry for it, and the kernel is compiled as
 * usual (for a GPU nobody seeded). A seed entry is verified as a disk entry is (header, length,
 * checksum, key), read in place, and never copied into the disk cache (KJ_ORIGIN_SEED). Folders
 * follow the disk cache's rules, read-side: a folder (or entry) that another user than this one or
 * root owns, that others may write to, that is a symbolic link, or whose parent anyone may write
 * without the sticky bit is not used, with a warning. With a secret (KERNJIT_SEED_SECRET, else the
 * remote cache's: kj_runtime_options.remote_secret or KERNJIT_REMOTE_SECRET) every seed entry must be
 * signed with it (HMAC-SHA256, as remote values are): an unsigned or wrongly signed one is refused
 * with a warning, and the lookup goes on to the disk cache. KJ_CACHE_MEMORY_ONLY and
 * KERNJIT_CACHE_DISABLE=1 leave the seeds out too.
 * ---------------------------------------------------------------------------------------------- */
/* Seed folder `index` (from 0) of the runtime, in the order they are searched; NULL past the end, for
 * a runtime without seeds, or rt NULL. Owned by the runtime, valid until kj_runtime_destroy.
 * Thread-safe. No errors. */
KJ_API const char *kj_seed_dir(const kj_runtime *rt, size_t index);
/* Signs every entry of the runtime's disk cache folder that is not signed under the seed secret yet
 * (KERNJIT_SEED_SECRET, else the remote cache's secret), so that the folder is a seed that runtimes
 * holding the secret accept; run on a runtime whose cache_dir is the seed being made (with
 * seed_dirs ""), after compiling into it. Each entry is rewritten atomically; count (may be NULL)
 * gets the entries signed now. Thread-safe, but not while other processes compile into the folder.
 * Errors: KJ_ERR_USAGE (rt NULL, or no secret set), KJ_ERR_NOT_FOUND (no disk cache),
 * KJ_ERR_UNSUPPORTED (no libcrypto), KJ_ERR_IO (an entry that cannot be read or rewritten, named). */
KJ_API kj_status kj_seed_sign(kj_runtime *rt, uint64_t *count);

/* ------------------------------------------------------------------------------------------------
 * Remote cache: a Redis server that machines share, behind each one's disk cache
 *
 * Lookups go memory, seed, disk, remote, compile. A remote value is an entry as the disk holds it (header,
 * checksum) and, when a secret is set, its HMAC-SHA256 signature; it is verified, stored on disk,
 * then used (KJ_ORIGIN_REMOTE). What is compiled here is stored on disk and pushed in the background:
 * the caller never waits for the server. When processes miss the same key at once, one compiles
 * (under a lease it renews while it works) and the others wait for its push; a lease whose holder
 * died expires within 2 s and another process takes over. Faults never fail a call: an unreachable
 * or slow server (each call bounded by the timeout, whole), a damaged, unsigned or wrongly signed
 * value, a full server, an answer that makes no sense or is larger than it may be are warnings, and
 * the local path goes on; after 3 failures in a row the tier is skipped for 30 s (then 60, 120, up to
 * 300 s) and tried again. Tuning results are shared the same way (kj_tune pushes its winner; a
 * runtime merges the records for its device, compute capability and toolchain into its tuning
 * database on first use). Warnings of background pushes reach the log callback from kernjit's push
 * thread. Configured by kj_runtime_options.remote_* or KERNJIT_REMOTE_CACHE, KERNJIT_REMOTE_SECRET,
 * KERNJIT_REMOTE_MODE; a malformed value is KJ_ERR_USAGE from kj_runtime_create. Signing needs
 * OpenSSL's libcrypto, loaded at run time: a machine without it, with a secret set, warns and works
 * without the tier. kj_runtime_destroy gives the pushes still queued at most 2 s.
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_remote_info {
    size_t size;                 /* sizeof(kj_remote_info): KJ_REMOTE_INFO_INIT */
    int configured;              /* 0: no remote tier (the fields below are 0 or "") */
    const char *url;             /* as configured, a password shown as "***" */
    kj_remote_mode mode;         /* KJ_REMOTE_READ or KJ_REMOTE_READWRITE */
    int signed_entries;          /* 1: a secret is set */
    int reachable;               /* 1: the server answered just now */
    const char *state;           /* "ok", or why not: a library missing, the server unreachable or
                                    slow, the breaker open */
    const char *server_version;  /* "7.0.15"; "" when unknown */
    const char *eviction_policy; /* the server's maxmemory-policy ("allkeys-lru" is the documented
                                    setup); "" when unknown */
    uint64_t used_memory;        /* bytes the server uses */
    uint64_t max_memory;         /* its bound; 0: none */
    uint64_t keys;               /* keys in the database (all of them, kernjit's and others') */
    double round_trip_ms;        /* median of a few PINGs */
    /* The fleet's counters, as the server keeps them: every process adds its own when it ends (and
     * every 10 s while it runs). */
    uint64_t hits, misses, waits, pushes, refusals, errors;
    uint64_t fetches; /* lookups that reached the server */
    double fetch_ms_total, fetch_ms_max;
    uint64_t bytes_fetched, bytes_pushed;
} kj_remote_info;
#define KJ_REMOTE_INFO_INIT KJ_SIZED_INIT_(kj_remote_info)

/* The remote tier's configuration and state, and the server's counters, into *info (caller's
 * storage): a few round trips, each bounded by the timeouts. The strings are owned by the runtime and
 * valid until the next kj_remote_query on it or kj_runtime_destroy. No tier, or a server that does
 * not answer, is not an error (configured or reachable 0; state says why). Thread-safe.
 * Errors: KJ_ERR_USAGE (NULL argument). */
KJ_API kj_status kj_remote_query(kj_runtime *rt, kj_remote_info *info);

typedef struct kj_remote_transfer {
    size_t size;      /* sizeof(kj_remote_transfer): KJ_REMOTE_TRANSFER_INIT */
    uint64_t entries; /* local entries (push) or remote keys (pull) considered */
    uint64_t moved;   /* pushed, or pulled into the disk cache */
    uint64_t present; /* already there (push: the same bytes, or a value that verifies), left alone */
    uint64_t refused; /* pull: values refused (damaged, unsigned, wrongly signed, another format, a
                          name no kernjit writes) */
    uint64_t failed;  /* not moved because of a fault: the warnings say which */
    uint64_t bytes;   /* bytes moved */
} kj_remote_transfer;
#define KJ_REMOTE_TRANSFER_INIT KJ_SIZED_INIT_(kj_remote_transfer)

/* Pushes the disk cache's entries (all, or those of `kernel`, a name as `kj_cache_entry.kernel` has
 * it; NULL: all) to the remote, after the background pushes queued so far are done; returns when
 * everything was tried. An entry is left alone when the server holds the same bytes or another value
 * that verifies under this process's secret; a value that does not (signed with a secret since
 * rotated, damaged, unsigned where a secret is set) is pushed over. A read-only mode
 * (KJ_REMOTE_READ) pushes nothing, with a warning. Faults of single entries are warnings, counted in
 * result->failed. result may be NULL. Thread-safe. Errors: KJ_ERR_USAGE (NULL rt), KJ_ERR_NOT_FOUND
 * (no remote tier, or no disk cache), KJ_ERR_UNSUPPORTED (the tier cannot work here: no libhiredis),
 * KJ_ERR_IO (the server does not answer: nothing was pushed). */
KJ_API kj_status kj_remote_push(kj_runtime *rt, const char *kernel, kj_remote_transfer *result);
/* Fetches the remote's entries (all, or those of `kernel`) that the disk cache lacks, verifies them
 * and stores them on disk; a name whose folder or key kernjit does not write is refused. Faults are
 * warnings; refused values are counted. result may be NULL. Thread-safe. Errors: KJ_ERR_USAGE (NULL
 * rt), KJ_ERR_NOT_FOUND (no remote tier, or no disk cache), KJ_ERR_UNSUPPORTED (no libhiredis),
 * KJ_ERR_IO (the server does not answer: nothing was pulled). */
KJ_API kj_status kj_remote_pull(kj_runtime *rt, const char *kernel, kj_remote_transfer *result);

#ifdef __cplusplus
}

/* The KJ_*_INIT values of C++ (see KJ_SIZED_INIT_). */
template <typename T> inline T kj_sized_init_() {
    T t = T();
    t.size = sizeof(T);
    return t;
}
inline kj_runtime_options kj_runtime_options_defaults_() {
    kj_runtime_options o = kj_sized_init_<kj_runtime_options>();
    o.device = KJ_DEVICE_AUTO;
    o.cache_mode = KJ_CACHE_DISK;
    o.log_level = KJ_LOG_WARN;
    return o;
}
#endif
#endif /* KERNJIT_H */
