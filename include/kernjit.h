/*
 * kernjit.h: the public interface of kernjit, a runtime-compiled CUDA kernel service.
 *
 * A program asks for a kernel by name and macro values; kernjit finds the .cu source, validates the
 * values against the kernel's metadata, compiles it with NVRTC (linking the device runtime with
 * nvJitLink when the kernel needs it), caches the binary on disk keyed by everything that changes it,
 * and loads and launches it through the CUDA Driver API.
 *
 * Using it: `pkg-config --cflags --libs kernjit` (add --static to link libkernjit.a), or
 * dependency('kernjit') in Meson, where kernjit may also be a subproject. This header and the
 * kernjit-version.h beside it are all a program includes.
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
 * - Structs of options are zero-initialized by the caller (= {0}), so that fields added later take
 *   their defaults; kj_runtime_options has kj_runtime_options_init for the same purpose.
 * - The library never prints, never aborts and never exits. Warnings (a damaged cache entry, a cache
 *   folder that cannot be used) go to the log callback of kj_runtime_options.
 * - Thread safety is stated per function. A kj_runtime may be shared by threads; calls that use the
 *   device make the runtime's context current on the calling thread and leave it current.
 * - Compatibility: the symbols carry the version KERNJIT_0 (a version script exports exactly the
 *   KJ_API functions below). Before 1.0 a minor release may change the API and ABI: rebuild the
 *   program with the new headers. kj_version_number() tells the library that was loaded.
 */
#ifndef KERNJIT_H
#define KERNJIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "kernjit-version.h" /* KJ_VERSION_MAJOR/MINOR/PATCH, KJ_VERSION_STRING, KJ_VERSION_HEX */

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

/* The loaded library's version, "MAJOR.MINOR.PATCH" (KJ_VERSION_STRING is the header's). Static
 * storage, never NULL. Thread-safe. No errors. */
KJ_API const char *kj_version_string(void);
/* The loaded library's version as KJ_VERSION_HEX encodes it (0xMMmmpp), for comparing with the
 * header the program was compiled with. Thread-safe. No errors. */
KJ_API unsigned kj_version_number(void);

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
/* Receives warnings and information. Called from the thread that made the kj_ call, so from several
 * threads at once when threads share the runtime; must not call back into the same runtime. message
 * is valid only during the call. */
typedef void (*kj_log_fn)(kj_log_level level, const char *message, void *user);

/* A macro value for a kernel: -DNAME=VALUE. The strings are read during the call they are passed to
 * and not kept. */
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
    int device;                    /* an ordinal, KJ_DEVICE_AUTO (default) or KJ_DEVICE_NONE */
    const char *arch;              /* target when there is no device, "sm_XY" (default "sm_90") */
    const char *cache_dir;         /* NULL: $KERNJIT_CACHE_DIR, $XDG_CACHE_HOME/kernjit, ~/.cache/kernjit */
    kj_cache_mode cache_mode;
    uint64_t cache_max_bytes;      /* 0: $KERNJIT_CACHE_MAX (bytes, or with K/M/G suffix), else 1 GiB */
    const char *search_path;       /* NULL: $KERNJIT_PATH; colon-separated folders searched for NAME.cu */
    void *cu_context;              /* a CUcontext the host program created: kernjit uses it as is and
                                      never destroys it; it must outlive the runtime. The runtime's
                                      device is the context's (device must still name an existing
                                      device or be KJ_DEVICE_AUTO). NULL: the device's primary
                                      context, which the CUDA Runtime API shares */
    kj_log_fn log;                 /* NULL: warnings are dropped */
    void *log_user;
    kj_log_level log_level;        /* messages above this level are not passed on (default KJ_LOG_WARN) */
    /* The remote cache tier: a Redis server that machines share (see "Remote cache" below). */
    const char *remote_cache;      /* NULL or "": $KERNJIT_REMOTE_CACHE; "redis://[[USER]:PASSWORD@]HOST[:PORT]
                                      [/DB][?OPTIONS]" or "unix:///PATH[?OPTIONS]"; OPTIONS are
                                      connect_timeout=MS (default 50), timeout=MS (each operation,
                                      default 200) and, for a socket, db=N; unset everywhere: no remote */
    const char *remote_secret;     /* NULL or "": $KERNJIT_REMOTE_SECRET; an absolute path ("/...") names
                                      a file holding the secret (less a final new line), anything else
                                      is the secret itself; 16 to 4096 bytes. With a secret, what is
                                      pushed is signed (HMAC-SHA256) and what is fetched must be */
    kj_remote_mode remote_mode;    /* KJ_REMOTE_DEFAULT: $KERNJIT_REMOTE_MODE (read or readwrite), else
                                      readwrite; KJ_REMOTE_OFF: no remote tier whatever the environment */
} kj_runtime_options;

/* Fills *options with the defaults. Call it before setting fields, so that new fields get defaults.
 * options must not be NULL. Thread-safe. No errors. */
KJ_API void kj_runtime_options_init(kj_runtime_options *options);

/* Creates a runtime: loads the driver (dlopen of libcuda.so.1; a missing driver is not an error with
 * KJ_DEVICE_AUTO), retains the device's primary context (or adopts options->cu_context) and opens
 * the cache. options may be NULL (defaults). The strings in options are copied; the log callback
 * and log_user are kept. The runtime's context is left current on the calling thread.
 * *out is owned by the caller: free it with kj_runtime_destroy. Several runtimes may exist at once,
 * on the same or different devices and contexts; each has its own kernels and statistics.
 * Thread-safe (a runtime is created by one thread, then may be shared).
 * Errors: KJ_ERR_USAGE (bad arch, device or option), KJ_ERR_NO_DRIVER / KJ_ERR_NO_DEVICE (an
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
/* The compile target, "sm_90" (compute_XY when NVRTC is older than the device and the driver
 * finishes PTX). Owned by the runtime, valid until kj_runtime_destroy; "" when rt is NULL.
 * Thread-safe. No errors. */
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
    /* the remote tier (0 without one) */
    uint64_t remote_hits;     /* verified remote entries used (and stored on disk) */
    uint64_t remote_misses;   /* looked up and not there: compiled here */
    uint64_t remote_waits;    /* waited for another process that was compiling the same key */
    uint64_t remote_pushes;   /* entries and tuning results written to the remote */
    uint64_t remote_refusals; /* remote values refused: damaged, unsigned, wrongly signed, another format */
    uint64_t remote_errors;   /* operations that failed or timed out, and those skipped by the breaker */
    double remote_ms;         /* total time of the lookups, waits included */
} kj_stats;

/* Counters since the runtime was created, copied into *stats (a consistent snapshot). Does nothing
 * when rt or stats is NULL. Thread-safe. No errors. */
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
    const char *const *sources;/* more translation units of the same program: paths to .cu files (a
                                  '/' or ".cu" in each; `kernel` must then be a path too, and
                                  source_text NULL). `kernel` and these, in this order, are
                                  each compiled as relocatable device code (-rdc=true) with the same
                                  macros and options, and linked by nvJitLink into one binary (with
                                  the device runtime only when the program launches kernels or asks
                                  for -rdc=true). The entry may be in any of them. Only `kernel` may
                                  carry a metadata block; the key covers every source and header, and
                                  their order. NULL with source_count 0: a program of one source */
    size_t source_count;       /* at most 63 */
} kj_request; /* read during the call only: nothing of it is kept */

typedef enum kj_origin {
    KJ_ORIGIN_MEMORY = 0,   /* already loaded in this runtime */
    KJ_ORIGIN_DISK = 1,     /* loaded from the disk cache */
    KJ_ORIGIN_COMPILED = 2, /* compiled now */
    KJ_ORIGIN_REMOTE = 3,   /* fetched from the remote cache, verified, and stored on disk */
} kj_origin;

/* "memory", "disk", "compiled" or "remote"; "unknown" for another value. Static storage, never NULL.
 * Thread-safe. No errors. */
KJ_API const char *kj_origin_name(kj_origin origin);

/* Returns the loaded kernel for the request, compiling and caching as needed. The kernel is owned by
 * the runtime and valid until kj_runtime_destroy (there is no per-kernel destroy); asking again
 * returns the same handle (a memory hit: no system call). origin may be NULL.
 * Edits: a memory hit is keyed by the request as given and reads no file, so once a runtime has
 * loaded a kernel it keeps it; an edit of its source or of any header it includes is noticed by the
 * next request that is not a memory hit (a new runtime, another spelling of the request, and every
 * kj_compile, which re-reads and re-hashes them all). Nothing stale is ever taken from the disk cache.
 * Thread-safe: threads may ask for the same or different kernels at once.
 * Errors: KJ_ERR_USAGE (a malformed request: bad names, options or arch), KJ_ERR_UNKNOWN_KERNEL,
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
    const char *symbol;        /* the kernel's name in the binary (mangled for a C++ kernel) */
    int registers;             /* per thread */
    int spill_store_bytes;     /* per thread: stores of values that did not fit the registers */
    int spill_load_bytes;      /* per thread: their loads back */
    int stack_bytes;           /* local memory per thread: the kernel's stack frame, with the functions
                                  it calls where the compiler says (sm_90 and later, and linked
                                  programs), and local memory besides the stack */
    int shared_static_bytes;   /* static shared memory per block (__shared__ variables; dynamic shared
                                  memory is given at launch); without the 1 KiB that compute
                                  capability 9.0 reserves per block for the system */
} kj_resource_usage;

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
    const char *log;        /* NVRTC's (and nvJitLink's) warnings, "" when none: from this compile, or
                               as stored with the entry on a hit. Owned by the library; valid until the
                               calling thread's next kj_compile. They also reach the log callback
                               (KJ_LOG_WARN). */
    const kj_resource_usage *resources; /* each kernel of the binary (in the compiler's order), from
                               this compile or as stored with the entry on a hit; NULL when not known
                               (a PTX target: the driver compiles it). Owned by the library; valid
                               until the calling thread's next kj_compile */
    size_t resource_count;
    const kj_resource_usage *entry_resources; /* the requested entry's (one of resources), or NULL */
    unsigned source_count;  /* translation units compiled: 1, or the linked sources (kj_request.sources) */
    kj_origin origin;       /* where the binary came from: KJ_ORIGIN_DISK, _REMOTE or _COMPILED */
} kj_compile_result;

/* Compiles (or finds in the cache) without loading; works with no device and no driver. The binary
 * stays in the disk cache (result->cache_path) when the runtime has one. result (caller's storage)
 * may be NULL. Thread-safe.
 * Errors as kj_kernel_get, except KJ_ERR_NO_DEVICE and the module-loading ones; KJ_ERR_USAGE also
 * for a request arch that NVRTC cannot target. */
KJ_API kj_status kj_compile(kj_runtime *rt, const kj_request *request, kj_compile_result *result);

typedef struct kj_kernel_info {
    const char *kernel;        /* the request's kernel name */
    const char *entry;         /* the entry asked for */
    const char *lowered_name;  /* the symbol in the binary */
    const char *arch;
    const char *key;           /* cache key, 32 hex digits */
    const char *defines;       /* the canonical define list, "BLOCK_SIZE=256 OP=sum ..." */
    const char *log;           /* NVRTC/nvJitLink warnings, "" when none (from the cache entry on a disk hit) */
    kj_origin origin;          /* how it was first obtained */
    int num_regs;
    int shared_static_bytes;
    int local_bytes;
    int max_threads_per_block; /* for this function */
    int linked;
    unsigned shared_dynamic_bytes; /* dynamic shared memory the metadata asks for with these macros
                                      (`//@kernjit shared-dynamic`), already opted in; 0: none */
    int carveout;              /* the preferred shared-memory carveout applied from the metadata: a
                                  percentage 0..100 of the largest shared memory, -1: the driver's choice */
    int pdl;                   /* 1: launched with programmatic dependent launch (the metadata's `pdl`,
                                  on a device and target of compute capability 9.0 or later) */
} kj_kernel_info;

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
    unsigned grid[3];          /* 0 in a field is taken as 1 */
    unsigned block[3];
    unsigned shared_bytes;     /* dynamic shared memory; above 48 KiB the kernel is opted in;
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
    int nvrtc_version;            /* 13000 for 13.0 */
    int nvjitlink_version;
    const char *cuda_home;        /* where the device runtime and CUDA headers are looked for */
    const char *devrt_path;       /* libcudadevrt.a, or NULL when it is missing */
    int arch_count;
    int archs[64];                /* compute capabilities NVRTC can target, 90 for sm_90 */
} kj_toolchain;

/* What compiles kernels here, into *info (caller's storage); needs no driver. The strings are static
 * (valid for the life of the process). Does nothing when info is NULL. Thread-safe. No errors. */
KJ_API void kj_toolchain_query(kj_toolchain *info);

/* ------------------------------------------------------------------------------------------------
 * Kernel metadata (what `kernjit list` shows)
 * ---------------------------------------------------------------------------------------------- */
/* The built-in kernels, embedded in the library: their count, and the name at index (from 0; NULL
 * past the end). The names are static. Thread-safe. No errors. */
KJ_API size_t kj_builtin_count(void);
KJ_API const char *kj_builtin_name(size_t index);

typedef struct kj_param_info {
    const char *name;           /* "BLOCK_SIZE" */
    const char *default_value;  /* "256" */
    size_t value_count;
    const char *const *values;  /* the allowed values, in the order the metadata gives them */
    int tunable;                /* 1: a performance knob (the tuner varies it); 0: it changes the result */
} kj_param_info;

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
KJ_API const char *kj_desc_origin(const kj_kernel_desc *desc); /* "built-in" or the file's path */
KJ_API const char *kj_desc_summary(const kj_kernel_desc *desc); /* one line, "" when none */
KJ_API size_t kj_desc_entry_count(const kj_kernel_desc *desc);
KJ_API const char *kj_desc_entry(const kj_kernel_desc *desc, size_t index); /* NULL past the end */
KJ_API size_t kj_desc_param_count(const kj_kernel_desc *desc);
/* Parameter index into *info. Errors: KJ_ERR_USAGE (NULL argument, index past the end). */
KJ_API kj_status kj_desc_param(const kj_kernel_desc *desc, size_t index, kj_param_info *info);
KJ_API int kj_desc_needs_device_runtime(const kj_kernel_desc *desc); /* 1: rdc + cudadevrt */
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
    const char *arch;          /* "sm_90" */
    const char *key;           /* 32 hex digits */
    const char *description;   /* what was compiled, as stored (several lines); "" if unreadable */
    uint64_t bytes;            /* file size */
    int64_t mtime;             /* last use, seconds since the epoch */
    int valid;                 /* 1: header and checksum verify */
    /* The description taken apart ("" when it does not say): */
    const char *kernel;        /* "reduce", or the file's name */
    const char *macros;        /* the macros it was compiled with, "NAME=VALUE NAME=VALUE ..." */
    const char *options;       /* the other NVRTC options (less the target and -std=c++17, which
                                  every compile has), space-separated */
    const char *entry;         /* the entry compiled alone (the file's other entries left out); "" when
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
 * Remote cache: a Redis server that machines share, behind each one's disk cache
 *
 * Lookups go memory, disk, remote, compile. A remote value is an entry as the disk holds it (header,
 * checksum) and, when a secret is set, its HMAC-SHA256 signature; it is verified, stored on disk,
 * then used (KJ_ORIGIN_REMOTE). What is compiled here is stored on disk and pushed in the background:
 * the caller never waits for the server. When processes miss the same key at once, one compiles
 * (under a lease it renews while it works) and the others wait for its push; a lease whose holder
 * died expires within 2 s and another process takes over. Faults never fail a call: an unreachable
 * or slow server, a damaged, unsigned or wrongly signed value, a full server are warnings, and the
 * local path goes on; after 3 failures in a row the tier is skipped for 30 s (then 60, 120, up to
 * 300 s) and tried again. Tuning results are shared the same way (kj_tune pushes its winner; a
 * runtime merges the records for its device, compute capability and toolchain into its tuning
 * database on first use). Warnings of background pushes reach the log callback from kernjit's push
 * thread. Configured by kj_runtime_options.remote_* or KERNJIT_REMOTE_CACHE, KERNJIT_REMOTE_SECRET,
 * KERNJIT_REMOTE_MODE; a malformed value is KJ_ERR_USAGE from kj_runtime_create. A kernjit built
 * without hiredis's header, or a machine without libhiredis, warns and works without the tier.
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_remote_info {
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
    uint64_t fetches;            /* lookups that reached the server */
    double fetch_ms_total, fetch_ms_max;
    uint64_t bytes_fetched, bytes_pushed;
} kj_remote_info;

/* The remote tier's configuration and state, and the server's counters, into *info (caller's
 * storage): a few round trips, each bounded by the timeouts. The strings are owned by the runtime and
 * valid until the next kj_remote_query on it or kj_runtime_destroy. No tier, or a server that does
 * not answer, is not an error (configured or reachable 0; state says why). Thread-safe.
 * Errors: KJ_ERR_USAGE (NULL argument). */
KJ_API kj_status kj_remote_query(kj_runtime *rt, kj_remote_info *info);

typedef struct kj_remote_transfer {
    uint64_t entries;  /* local entries (push) or remote keys (pull) considered */
    uint64_t moved;    /* pushed, or pulled into the disk cache */
    uint64_t present;  /* already there, left alone */
    uint64_t refused;  /* pull: values refused (damaged, unsigned, wrongly signed, another format) */
    uint64_t failed;   /* not moved because of a fault: the warnings say which */
    uint64_t bytes;    /* bytes moved */
} kj_remote_transfer;

/* Pushes the disk cache's entries (all, or those of `kernel`, a name as `kj_cache_entry.kernel` has
 * it; NULL: all) to the remote, skipping those it holds already, after the background pushes queued
 * so far are done; returns when everything was tried. A read-only mode (KJ_REMOTE_READ) pushes
 * nothing, with a warning. Faults are warnings and counted in result->failed. result may be NULL.
 * Thread-safe. Errors: KJ_ERR_USAGE (NULL rt), KJ_ERR_NOT_FOUND (no remote tier, or no disk cache). */
KJ_API kj_status kj_remote_push(kj_runtime *rt, const char *kernel, kj_remote_transfer *result);
/* Fetches the remote's entries (all, or those of `kernel`) that the disk cache lacks, verifies them
 * and stores them on disk. Faults are warnings; refused values are counted. result may be NULL.
 * Thread-safe. Errors: KJ_ERR_USAGE (NULL rt), KJ_ERR_NOT_FOUND (no remote tier, or no disk cache). */
KJ_API kj_status kj_remote_pull(kj_runtime *rt, const char *kernel, kj_remote_transfer *result);

/* ------------------------------------------------------------------------------------------------
 * Reductions (kernels_src/reduce.cu)
 * ---------------------------------------------------------------------------------------------- */
typedef enum kj_op { KJ_OP_SUM = 0, KJ_OP_MAX, KJ_OP_MIN, KJ_OP_PROD, KJ_OP_COUNT_ } kj_op;
/* Element types. The result of a reduction has the accumulator type: the element type itself,
 * except f16, which is accumulated and returned as f32 (a float). Integer sums and products wrap
 * as C's unsigned arithmetic does (two's complement for i32/i64). max and min return NaN when any
 * element is NaN. n = 0 gives the operator's identity. */
typedef enum kj_type { KJ_TYPE_I32 = 0, KJ_TYPE_U32, KJ_TYPE_I64, KJ_TYPE_F16, KJ_TYPE_F32, KJ_TYPE_F64, KJ_TYPE_COUNT_ } kj_type;

/* Names and sizes: static strings, thread-safe, no errors. */
KJ_API const char *kj_op_name(kj_op op);       /* "sum"; "?" when out of range */
KJ_API const char *kj_type_name(kj_type type); /* "f32"; "?" when out of range */
/* Parse "sum"/"max"/... and "i32"/"f16"/... into *op / *type (not NULL). Thread-safe.
 * Errors: KJ_ERR_USAGE naming the allowed values (text NULL or not one of them). */
KJ_API kj_status kj_op_parse(const char *text, kj_op *op);
KJ_API kj_status kj_type_parse(const char *text, kj_type *type);
KJ_API size_t kj_type_size(kj_type type);        /* bytes of one element (2 for f16); 0 out of range */
KJ_API size_t kj_result_size(kj_type type);      /* bytes of the result (4 for f16: a float); 0 out of range */

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
    kj_stream stream;         /* NULL: the default stream; the host's own stream is fine */
    kj_reduce_report *report; /* optional: filled on success (caller's storage) */
} kj_reduce_options;

/* The CPU reference: reduces n host elements with the same semantics as the GPU (wrapping integers,
 * NaN-propagating max/min), floating-point sums and products in long double, and writes the result
 * (kj_result_size bytes, rounded to the result type) to result. abs_sum, when not NULL, gets the sum
 * of the magnitudes |x_i| (for error bounds). Needs no device. Thread-safe.
 * Errors: KJ_ERR_USAGE (bad op or type, NULL result, NULL data with n > 0). */
KJ_API kj_status kj_reduce_reference(kj_op op, kj_type type, const void *data, size_t n, void *result,
                                     double *abs_sum);
/* How far a GPU result may lie from the reference and still be right: 0 for integers and for
 * max/min; for float sums, the first-order bound depth * u * abs_sum, where u is the unit roundoff of
 * the accumulator and depth the longest chain of additions of the configuration in report (per-thread
 * elements plus the tree levels), or of any configuration when report is NULL; for float products,
 * depth * u * |expected| (plus the smallest normal, so that 0 compares). Thread-safe. No errors. */
KJ_API double kj_reduce_tolerance(kj_op op, kj_type type, size_t n, double expected, double abs_sum,
                                  const kj_reduce_report *report);
/* Result bytes (kj_result_size) as a double, for printing and comparing. Thread-safe. No errors. */
KJ_API double kj_result_as_double(kj_type type, const void *result);

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
KJ_API kj_status kj_reduce(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n,
                           void *host_result, const kj_reduce_options *options);
/* As kj_reduce, but writes the result (kj_result_size bytes) to device memory at `result` on
 * options->stream and returns without waiting: result is written once the stream reaches it, and
 * input must stay valid until then. On compute capability 9.0 and later the default entry is
 * launched with programmatic dependent launch: it may start while the kernel before it is finishing,
 * and waits on the device before it reads anything, so stream order holds as usual. A kernel of
 * yours launched after it with programmatic dependent launch itself must wait in turn
 * (cudaGridDependencySynchronize) before it reads the result. Thread-safe. Errors as kj_reduce, with
 * KJ_ERR_USAGE for a result that is 0 or not aligned to kj_result_size. */
KJ_API kj_status kj_reduce_async(kj_runtime *rt, kj_op op, kj_type type, kj_devptr input, size_t n,
                                 kj_devptr result, const kj_reduce_options *options);
/* Starts getting the kernels that kj_reduce with these arguments (n elements, options->entry,
 * block_size, coarse_factor; the rest is not read) will launch, on the runtime's background threads
 * (kj_kernel_prefetch), and returns at once: a program calls it before making its input, so that
 * the first kj_reduce waits only for what is left of the compile. Thread-safe. Errors: KJ_ERR_USAGE
 * (what kj_reduce would refuse for op, type, n and options), KJ_ERR_HOST_MEMORY; a compile that
 * fails is reported by kj_reduce. */
KJ_API kj_status kj_reduce_prefetch(kj_runtime *rt, kj_op op, kj_type type, size_t n, const kj_reduce_options *options);

/* ------------------------------------------------------------------------------------------------
 * Vector add and matrix transpose (kernels_src/vector_add.cu, kernels_src/transpose.cu), and the
 * shared-memory carveouts of a device
 * ---------------------------------------------------------------------------------------------- */
typedef struct kj_vector_add_report {
    char entry[32];         /* "vector_add" (16-byte vectors) or "vector_add_scalar" (pointers not
                               aligned to 16 bytes) */
    unsigned block_size;
    unsigned unroll;        /* vectors (or elements) each thread has in flight */
    unsigned grid;          /* blocks launched: a whole number of the blocks the device holds at once */
    kj_origin origin;       /* how the kernel was obtained on this call */
    const char *config_from; /* "explicit", "tuned" or "default" (static string) */
} kj_vector_add_report;

typedef struct kj_vector_add_options {
    unsigned block_size;    /* BLOCK_SIZE; with unroll 0 too: the tuning database's entry for the entry,
                               type and n (see kj_tune_db_lookup), else 256 */
    unsigned unroll;        /* UNROLL; 0: likewise, else 4 (one of them given: the other's default) */
    kj_stream stream;       /* NULL: the default stream */
    kj_vector_add_report *report; /* optional: filled on success */
} kj_vector_add_options;

/* c[i] = a[i] + b[i] for i < n (device memory), elements of type KJ_TYPE_F32 or KJ_TYPE_F64: one IEEE
 * addition rounded to nearest, so the bits equal a CPU's. c may be a or b (in place); other overlaps
 * are not allowed. Asynchronous on options->stream; n = 0 launches nothing. options may be NULL.
 * Thread-safe. Errors: KJ_ERR_USAGE (another type, a 0 pointer with n > 0), KJ_ERR_INVALID_DEFINE (a
 * block_size or unroll the kernel does not offer), KJ_ERR_NO_DEVICE, and those of kj_kernel_get and
 * kj_kernel_launch. */
KJ_API kj_status kj_vector_add(kj_runtime *rt, kj_type type, kj_devptr a, kj_devptr b, kj_devptr c, size_t n,
                               const kj_vector_add_options *options);

typedef enum kj_transpose_variant {
    KJ_TRANSPOSE_PADDED = 0,  /* shared-memory tile padded to TILE_DIM + 1 columns (no bank conflicts),
                                 TILE_DIM x BLOCK_ROWS threads: tunable, default 32 x 8. The default. */
    KJ_TRANSPOSE_READ_ROWS,   /* read rows, write columns: coalesced reads, scattered writes */
    KJ_TRANSPOSE_READ_COLS,   /* read columns, write rows: scattered reads, coalesced writes */
    KJ_TRANSPOSE_SHARED,      /* 32x32 tile, 32x8 threads, written transposed into shared memory (32-way
                                 bank conflicts), then stored in order */
    KJ_TRANSPOSE_L1_8X32,     /* no shared memory: 8x32 threads a 32x32 tile, the caches regroup sectors */
    KJ_TRANSPOSE_L1_4X32,     /* the same with 4x32 threads */
    KJ_TRANSPOSE_VEC,         /* no shared memory: each thread transposes a 4x4 block (2x2 for 8-byte
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
    char entry[32];          /* the entry that ran */
    unsigned tile[2];        /* the input rows and columns each block moves */
    unsigned block[2];       /* threads per block, x and y */
    unsigned grid;           /* blocks launched: one per tile */
    unsigned shared_bytes;   /* dynamic shared memory per block (the metadata's shared-dynamic) */
    kj_origin origin;        /* how the kernel was obtained on this call */
    const char *config_from; /* "explicit", "tuned" or "default" (static string; the fixed variants:
                                "default") */
} kj_transpose_report;

typedef struct kj_transpose_options {
    kj_transpose_variant variant; /* KJ_TRANSPOSE_PADDED when zeroed */
    unsigned tile_dim;       /* KJ_TRANSPOSE_PADDED only: TILE_DIM; with block_rows 0 too: the tuning
                                database's entry for ELEM_BYTES and rows x cols elements (see
                                kj_tune_db_lookup), else 32 */
    unsigned block_rows;     /* KJ_TRANSPOSE_PADDED only: BLOCK_ROWS; 0: likewise, else 8 (one of them
                                given: the other's default) */
    kj_stream stream;        /* NULL: the default stream */
    kj_transpose_report *report; /* optional: filled on success */
} kj_transpose_options;

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

/* The shared-memory capacities (KiB per multiprocessor) the device's architecture can split off its
 * unified L1/shared memory, smallest first: what a carveout (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_
 * CARVEOUT, `//@kernjit carveout`, a percentage of the largest) chooses among. Writes up to max values
 * to kib and returns how many there are; for an architecture kernjit does not know, the usual steps up
 * to device->shared_per_sm. Thread-safe. */
KJ_API size_t kj_device_carveouts(const kj_device_info *device, unsigned *kib, size_t max);

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
 * Thread-safe; calls on different streams may run at once (at most 64 streams per runtime).
 * ---------------------------------------------------------------------------------------------- */

/* What a launch tree did. */
typedef struct kj_dp_report {
    char entry[32];             /* the kernel the host launched */
    unsigned grid[2];           /* its grid (x, y) and block (x, y) */
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
} kj_dp_report;

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
    kj_nested_variant variant;
    unsigned block_size;       /* threads of a top-level block: a power of two from 2 to 1024; 0: 512 */
    int count_launches;        /* 1: count the device-side launches (kernels built with COUNT_LAUNCHES=1) */
    uint64_t pending_launches; /* pending-launch limit to ask for; 0: what the tree can need (above) */
    kj_stream stream;          /* NULL: the default stream */
    kj_dp_report *report;      /* optional: filled on success */
} kj_nested_options;

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
    kj_mandelbrot_algo algo;
    unsigned max_dwell;        /* MAX_DWELL: a power of two from 16 to 16384; 0: 512 */
    double x_min, x_max;       /* the window; all four 0: [-1.5, 0.5] x [-1, 1]. Pixel (x, y) is */
    double y_min, y_max;       /* c = (x_min + x dx, y_max - y dy), dx = (x_max - x_min) / width,
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

/* Renders the width x height image of dwells (one uint16_t per pixel, row-major, row 0 at y_max; a
 * pixel in the set has max_dwell) into device memory at `dwells` and waits. width and height: 1 to
 * 32768. Both algorithms compute every dwell with the same IEEE single-precision operations, so they
 * agree wherever Mariani-Silver computes; it fills a square whose border has one dwell (a border in
 * the set only when it also lies inside the main cardioid or the period-2 disk, checked in closed
 * form), which is exact unless a feature thinner than a pixel slips between two border pixels. With
 * the default parameters the two images are identical at 16384 x 16384, dwell 512, on the default
 * window (checked with the CPU emulation); kj_mandelbrot_reference compares other settings.
 * options may be NULL.
 * Errors: KJ_ERR_USAGE (a value not allowed: the message names it), KJ_ERR_LIMIT (max_depth deeper
 * than the device allows), KJ_ERR_DEVICE_LAUNCH, KJ_ERR_CUDA, and those of kj_kernel_get. */
KJ_API kj_status kj_mandelbrot(kj_runtime *rt, kj_devptr dwells, unsigned width, unsigned height,
                               const kj_mandelbrot_options *options);

/* The CPU reference: the same image with options->algo, every dwell bit for bit the GPU's;
 * Mariani-Silver is emulated square by square as the GPU runs it, and device_launches (when not NULL)
 * gets the launches the GPU makes. dwells: width x height host values. Needs no device. Thread-safe.
 * Slow: about a second per million pixels inside the set at dwell 512. */
KJ_API kj_status kj_mandelbrot_reference(unsigned width, unsigned height, const kj_mandelbrot_options *options,
                                         uint16_t *dwells, uint64_t *device_launches);
/* One pixel's dwell as the GPU computes it. */
KJ_API kj_status kj_mandelbrot_dwell(unsigned width, unsigned height, unsigned x, unsigned y,
                                     const kj_mandelbrot_options *options, unsigned *dwell);

/* ------------------------------------------------------------------------------------------------
 * Variants, offline builds and tuning
 *
 * A kernel's metadata declares `tune` parameters (performance knobs such as BLOCK_SIZE and
 * COARSE_FACTOR) beside the `param`s that change the result (OP, T). Its variants are the
 * combinations of the tunables' allowed values with the params held fixed; the metadata's `require`
 * lines leave some out. kj_compile_all builds every variant into the cache without a GPU (to prepare a
 * cache for a fleet); kj_tune times them on the device, keeps the fastest that computes the right
 * result, and records it in the tuning database, which kj_reduce, kj_transpose (its padded tile) and
 * kj_vector_add (and so `kernjit run` and `kernjit bench`) consult when the caller gives no
 * configuration.
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
    size_t cached;             /* already in the disk cache, or fetched from the remote cache */
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
    const char *kernel;        /* required: a family with a tuning target: "reduce", "transpose",
                                  "vector_add" */
    const char *entry;         /* NULL: the family's default entry (reduce_fast, transpose_padded,
                                  vector_add); transpose tunes transpose_padded only (the other entries
                                  have a fixed tile); vector_add_scalar is tuned on arrays one element
                                  into their allocations (the pointers kj_vector_add runs it for) */
    const kj_define *fixed;    /* params at one value each (OP=sum, T=f32; defaults otherwise), and
                                  tunables pinned (BLOCK_SIZE=256) or restricted (BLOCK_SIZE=256,512) */
    size_t fixed_count;
    uint64_t n;                /* problem size in elements; 0: the family's default (reduce 2^24,
                                  transpose 2^26 = 8192 x 8192, vector_add 2^26). transpose: a rows x
                                  cols = n matrix, rows the largest divisor of n not above sqrt(n)
                                  (square for a square n; 2^25 is 4096 x 8192; a prime n is one row) */
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
 * stored in the tuning database (unless dry_run or the runtime has no disk cache; a faster result
 * already stored for the same key stays, with a warning) and published to the remote cache when
 * the runtime has one. Free *out with
 * kj_tune_result_free. Thread-safe, but other work on the device distorts the timings.
 * Errors: KJ_ERR_UNSUPPORTED (no tuning target for the kernel: the message lists those there are),
 * KJ_ERR_NO_DEVICE, KJ_ERR_USAGE (samples below 10, a param given several values, bad entry, an n
 * the family cannot take: a transpose matrix wider than 2^31 - 1), KJ_ERR_DEVICE_MEMORY,
 * KJ_ERR_NOT_FOUND (no variant ran correctly; the message counts why), and
 * those of kj_space_create. A failure to write the database is not an error: a warning goes to the
 * log and stored stays 0. */
KJ_API kj_status kj_tune(kj_runtime *rt, const kj_tune_options *options, kj_tune_result **out);
KJ_API void kj_tune_result_free(kj_tune_result *result);

/* The tuning database: <cache folder>/tuning.db, plain text, one line per (kernel, entry, fixed
 * macros, size bucket, device name, compute capability, kernjit version) -> the winning values and
 * their speed. The size bucket of n is floor(log2 n): an entry serves sizes in [2^b, 2^(b+1)).
 * A lookup for size n takes the entry of n's bucket, else that of bucket - 1, else bucket + 1, else
 * none (the kernel's defaults apply). A runtime reads the file once, on first use, and keeps it in
 * memory (kj_tune and kj_tune_db_forget update that copy): lookups touch no file. With a remote
 * cache, the results other machines published for this device name, compute capability, kernjit
 * version and NVRTC version are merged into the file then. Of two results for one key, the faster
 * re-measured one is kept (more GB/s; as many in less time), with its numbers, everywhere. Damaged
 * lines are ignored, each with a warning through the log callback. */
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
