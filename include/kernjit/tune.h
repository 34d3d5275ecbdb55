/*
 * kernjit/tune.h: the variants of a kernel (its tunables' combinations), building them all into the
 * cache without a GPU, timing them on the device, and the tuning database that the kernel families
 * of kernjit/ops.h consult. The conventions are kernjit.h's, which this header includes.
 */
#ifndef KERNJIT_TUNE_H
#define KERNJIT_TUNE_H

#include "kernjit.h" /* kernjit/kernjit.h, beside this one */

#ifdef __cplusplus
extern "C" {
#endif

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
    size_t done, total;  /* variants finished in this phase, of total (a budgeted search may
                                raise total as it goes) */
    const char *variant; /* the one that just finished: "BLOCK_SIZE=256 COARSE_FACTOR=8" */
    const char *outcome; /* "compiled", "cached", "2981.3 GB/s", "skipped: ...", "wrong result" */
    double best_gbps;    /* the best verified speed so far (measure phases); 0 before any */
    const char *error;   /* kj_compile_all, a variant that failed: why (kj_compile's message, the
                                compiler's log included); NULL otherwise */
} kj_progress;
/* Called on the thread that made the call, never twice at once, while the call runs; the strings
 * are valid during the call only. Must not call back into the same runtime. */
typedef void (*kj_progress_fn)(const kj_progress *progress, void *user);

/* The most combinations a space may have: pin or restrict some macros below it. */
#define KJ_SPACE_MAX 65536u

/* Builds the variants of `kernel` (found as kj_kernel_get finds it; rt may be NULL for the
 * defaults). `fixed` holds macros: NAME=VALUE pins a param or a tunable to one value;
 * NAME=V1,V2,... restricts it to those values (a param given so varies too: for offline builds of
 * several operators). Tunables not given vary over all their values, but for `launch` parameters
 * (knobs of the launch alone, which the compiler never sees: the variants that differ only in them are
 * one binary), which take their default; params not given take their default. Every value is checked against the metadata. Combinations that break a `require` line
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
    size_t size;              /* sizeof(kj_variant): KJ_VARIANT_INIT */
    const kj_define *defines; /* every macro of the kernel, sorted by name: a kj_request's defines */
    size_t define_count;
    const size_t *coords; /* per dimension, the index of its value; the variant's index is these
                                 digits in mixed radix, the last dimension fastest */
    const char *label;    /* the varied macros, "BLOCK_SIZE=256 COARSE_FACTOR=8" ("" if none) */
    const char *skipped;  /* NULL when the variant is in the space, else why not */
} kj_variant;
#define KJ_VARIANT_INIT KJ_SIZED_INIT_(kj_variant)

/* Variant `index` (below kj_space_count). The pointers live as long as the space. */
KJ_API kj_status kj_space_variant(const kj_space *space, size_t index, kj_variant *out);

typedef struct kj_compile_all_options {
    size_t size;            /* sizeof(kj_compile_all_options): KJ_COMPILE_ALL_OPTIONS_INIT */
    const char *kernel;     /* required */
    const char *entry;      /* NULL: the first entry. Each entry of a source with metadata is compiled
                                  alone, as its own cache entry: build each entry the program launches */
    const kj_define *fixed; /* as for kj_space_create */
    size_t fixed_count;
    const char *arch;        /* the target (sm_XY, sm_XYa, sm_XYf, compute_XY...: kj_runtime_options.arch);
                                  NULL: the runtime's */
    unsigned threads;        /* compiling threads; 0: the processors online */
    kj_progress_fn progress; /* optional */
    void *progress_user;
    unsigned shard, shards; /* a part of the space, for builders that share the work (machines, or
                                  processes): the variants whose index is shard modulo shards (every
                                  shards-th from the shard-th, so that each part has as many of each
                                  dimension's values as the others); 0 and 0: all. The parts 0 to
                                  shards - 1 are disjoint and cover the space */
} kj_compile_all_options;
#define KJ_COMPILE_ALL_OPTIONS_INIT KJ_SIZED_INIT_(kj_compile_all_options)

typedef struct kj_compile_all_result {
    size_t size; /* sizeof(kj_compile_all_result): KJ_COMPILE_ALL_RESULT_INIT */
    /* the counts are the shard's when options->shards is set */
    size_t variants;  /* combinations in the space */
    size_t compiled;  /* compiled now (and stored, when the runtime has a disk cache) */
    size_t cached;    /* already in the disk cache, or fetched from the remote cache */
    size_t skipped;   /* left out by a `require` line */
    size_t failed;    /* did not compile */
    unsigned threads; /* threads used */
    double wall_ms;
    const char *arch; /* the target; static storage (the process's life) */
} kj_compile_all_result;
#define KJ_COMPILE_ALL_RESULT_INIT KJ_SIZED_INIT_(kj_compile_all_result)

/* Compiles every variant of the space (kj_space_create with options->fixed), or of its shard, into
 * the cache, on `threads` threads at once; needs no device and no driver. result may be NULL; unlike
 * other outputs it is written when some variants fail, so that the counts can be shown, and the call
 * then returns the first failure's status (its message names the variant). Thread-safe.
 * Errors: those of kj_space_create and kj_compile; KJ_ERR_USAGE for a shard not below shards (or a
 * shard with shards 0), naming both. */
KJ_API kj_status kj_compile_all(kj_runtime *rt, const kj_compile_all_options *options, kj_compile_all_result *result);

typedef struct kj_tune_options {
    size_t size;            /* sizeof(kj_tune_options): KJ_TUNE_OPTIONS_INIT */
    const char *kernel;     /* required: a family with a tuning target: "reduce", "transpose",
                                  "vector_add" */
    const char *entry;      /* NULL: the family's default entry (reduce_fast, transpose_padded,
                                  vector_add); transpose tunes transpose_padded only (the other entries
                                  have a fixed tile); vector_add_scalar is tuned on arrays one element
                                  into their allocations (the pointers kj_vector_add runs it for) */
    const kj_define *fixed; /* params at one value each (OP=sum, T=f32; defaults otherwise), and
                                  tunables pinned (BLOCK_SIZE=256) or restricted (BLOCK_SIZE=256,512) */
    size_t fixed_count;
    uint64_t n;              /* problem size in elements; 0: the family's default (reduce 2^24,
                                  transpose 2^26 = 8192 x 8192, vector_add 2^26). transpose: a rows x
                                  cols = n matrix, rows the largest divisor of n not above sqrt(n)
                                  (square for a square n; 2^25 is 4096 x 8192; a prime n is one row) */
    size_t budget;           /* 0: exhaustive; else at most this many variants are compiled and timed
                                  (greedy coordinate descent from the defaults, then from random
                                  starting points while the budget lasts) */
    unsigned samples;        /* timed samples per variant, whose median counts; 0: 10; at least 10 */
    unsigned threads;        /* compiling threads; 0: the processors online */
    uint64_t seed;           /* input data and random starting points; 0: a fixed seed */
    int dry_run;             /* 1: do not write the tuning database */
    kj_progress_fn progress; /* optional */
    void *progress_user;
} kj_tune_options;
#define KJ_TUNE_OPTIONS_INIT KJ_SIZED_INIT_(kj_tune_options)

typedef enum kj_variant_status {
    KJ_VARIANT_MEASURED = 0, /* timed, and its result matched the CPU reference */
    KJ_VARIANT_NOT_TRIED,    /* left out by the budget */
    KJ_VARIANT_SKIPPED,      /* breaks a requirement, does not fit the device (threads per block for
                                its registers, shared memory) or cannot take the problem; see note */
    KJ_VARIANT_FAILED,       /* did not compile, load or launch; note has the message */
    KJ_VARIANT_WRONG,        /* ran, but its result differs from the CPU reference: never wins */
} kj_variant_status;

typedef struct kj_tune_variant {
    const char *label; /* "BLOCK_SIZE=256 COARSE_FACTOR=8" */
    kj_variant_status status;
    const char *note;                 /* why it was not measured, or "" */
    kj_origin origin;                 /* how its kernel was obtained: compiled now, disk or memory */
    int registers;                    /* per thread, from the compiled function (0 when not loaded) */
    int max_threads;                  /* the function's threads-per-block limit given its registers */
    double median_us, min_us, max_us; /* per run */
    double gbps;                      /* bytes moved per run / median */
    unsigned samples, batch;          /* samples, and runs per sample (short runs are timed in batches) */
} kj_tune_variant;

typedef struct kj_tune_result {
    const char *kernel;
    const char *entry;
    const char *fixed; /* the macros held fixed, canonical: "OP=sum T=f32" */
    uint64_t n;
    unsigned bucket;                       /* the size bucket it is stored under: floor(log2 n) */
    double bytes_per_run;                  /* what GB/s counts */
    const kj_space *space;                 /* the variants searched (owned by the result): names and values of
                                   the dimensions through kj_space_dim_* */
    size_t variant_count;                  /* kj_space_count(space) */
    size_t best;                           /* the winner's index */
    double best_us, best_gbps;             /* its median in the sweep */
    double remeasured_us, remeasured_gbps; /* timed again afterwards, with more samples */
    unsigned remeasured_samples;
    const char *strategy; /* "exhaustive", or "greedy + random restarts, budget K" */
    size_t measured, compiled, cached, skipped, failed, wrong, not_tried;
    unsigned threads;                        /* compiling threads */
    double compile_ms, measure_ms, total_ms; /* wall-clock times of the phases and of the call */
    int stored;                              /* 1: written to the tuning database */
    const char *db_path;                     /* the database's path; NULL when the runtime has no disk cache */
    const char *device;                      /* the device's name; static storage (the process's life) */
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
/* Variant `index` of the result (indexed as the space is: below variant_count; result->best is the
 * winner's), or NULL past the end or for a NULL result. Owned by the result, valid until
 * kj_tune_result_free. (An accessor rather than an array: kj_tune_variant may grow.) Thread-safe. */
KJ_API const kj_tune_variant *kj_tune_result_variant(const kj_tune_result *result, size_t index);

/* The tuning database: tuning.db, plain text, in $KERNJIT_STATE_DIR; else, for a runtime whose cache
 * folder was named (kj_runtime_options.cache_dir, $KERNJIT_CACHE_DIR), in that folder; else in
 * $XDG_STATE_HOME/kernjit, else ~/.local/state/kernjit (its results cost GPU time to measure again:
 * it is not kept with the cache, which may be cleared). A database in the runtime's cache folder
 * (where 0.2.0 kept it) is moved there on first use, merged by the rule below with one already there;
 * one that cannot be moved stays and is used where it is, with a warning. One line per (kernel,
 * entry, fixed macros, size bucket, device name, compute capability, target when not the device's
 * own, kernjit version) -> the winning values and
 * their speed. The size bucket of n is floor(log2 n): an entry serves sizes in [2^b, 2^(b+1)).
 * A lookup for size n takes the entry of n's bucket, else that of bucket - 1, else bucket + 1, else
 * none (the kernel's defaults apply). A runtime reads the file once, on first use, and keeps it in
 * memory (kj_tune and kj_tune_db_forget update that copy): lookups touch no file. With a remote
 * cache, the results other machines published for this device name, compute capability, kernjit
 * version and NVRTC version are merged into the file then. Of two results for one key, the faster
 * re-measured one is kept (more GB/s; as many in less time), with its numbers, everywhere; unless
 * kj_tune measured the kept one's variant on this machine at less than 1/1.5 of its claim: then its
 * own result replaces it (a warning says so). Damaged lines are ignored, each with a warning through
 * the log callback. */
typedef struct kj_tuned {
    size_t size; /* sizeof(kj_tuned): KJ_TUNED_INIT */
    const char *kernel;
    const char *entry;
    const char *fixed; /* "OP=sum T=f32"; "" when none */
    unsigned bucket;
    const char *device; /* the device's name (printable ASCII) */
    int cc_major, cc_minor;
    const char *version; /* kernjit's version that tuned it */
    const char *values;  /* the winner: "BLOCK_SIZE=1024 COARSE_FACTOR=4" */
    double gbps;
    double us;          /* median time per run */
    uint64_t n;         /* the size tuned for */
    int64_t time;       /* when it was stored, seconds since the epoch */
    const char *target; /* "" when tuned with the device's own target (sm_XY); else the runtime's
                                   target ("sm_90a", kj_runtime_options.arch), which only a runtime
                                   with that target uses */
} kj_tuned;
#define KJ_TUNED_INIT KJ_SIZED_INIT_(kj_tuned)
typedef void (*kj_tuned_visit_fn)(const kj_tuned *entry, void *user);

/* The database file's path (where it is, or will be once something is stored: see above), or NULL
 * when the runtime has no disk cache. Valid for the runtime's lifetime. */
KJ_API const char *kj_tune_db_path(const kj_runtime *rt);
/* Reads the file now and calls visit for each valid line, in key order. The strings are valid
 * during the call only. KJ_ERR_NOT_FOUND when the runtime has no disk cache. Thread-safe. */
KJ_API kj_status kj_tune_db_list(kj_runtime *rt, kj_tuned_visit_fn visit, void *user);

/* Which entries kj_tune_db_forget removes: NULL strings and -1 numbers match anything. */
typedef struct kj_tune_filter {
    size_t size; /* sizeof(kj_tune_filter): KJ_TUNE_FILTER_INIT */
    const char *kernel;
    const char *entry;
    const char *fixed;  /* every NAME=VALUE in it (space-separated) must be among the entry's */
    const char *device; /* the device name, exactly */
    int cc;             /* compute capability as major * 10 + minor */
    int bucket;
} kj_tune_filter;
/* The size and every field "anything": NULL strings, cc and bucket -1. */
#ifdef __cplusplus
#define KJ_TUNE_FILTER_INIT (kj_tune_filter_defaults_())
#else
#define KJ_TUNE_FILTER_INIT                                                                                            \
    { .size = sizeof(kj_tune_filter), .cc = -1, .bucket = -1 }
#endif
/* KJ_TUNE_FILTER_INIT for a language without the macro: sets the first `size` bytes of *filter (size:
 * the caller's sizeof(kj_tune_filter)) to "anything", the size field to size; nothing past them is
 * written. Thread-safe. Errors: KJ_ERR_USAGE (filter NULL; size 0, or not the size of a
 * kj_tune_filter). */
KJ_API kj_status kj_tune_filter_init(kj_tune_filter *filter, size_t size);
/* Removes matching entries from the file (atomically, under the lock) and from the runtime's copy;
 * *removed (may be NULL) counts those. With a remote cache in KJ_REMOTE_READWRITE mode the matching
 * shared results are removed from the server too (a note at KJ_LOG_INFO says how many), else the next
 * runtime would merge them back; a read-only process, or a server that cannot be reached, leaves
 * them there with a warning that they come back. filter NULL removes all. KJ_ERR_NOT_FOUND when the
 * runtime has no disk cache; KJ_ERR_IO when the file cannot be written. Thread-safe. */
KJ_API kj_status kj_tune_db_forget(kj_runtime *rt, const kj_tune_filter *filter, size_t *removed);
/* The entry that a kernel family would use on this runtime's device: kernel, entry and fixed
 * ("OP=sum T=f32", canonical) for size n, by the bucket rule above. KJ_ERR_NOT_FOUND when there is
 * none (or no disk cache); KJ_ERR_NO_DEVICE when compile-only. The strings live as long as the
 * runtime. Thread-safe. */
KJ_API kj_status kj_tune_db_lookup(kj_runtime *rt, const char *kernel, const char *entry, const char *fixed, uint64_t n,
                                   kj_tuned *out);

#ifdef __cplusplus
}

inline kj_tune_filter kj_tune_filter_defaults_() {
    kj_tune_filter f = kj_sized_init_<kj_tune_filter>();
    f.cc = -1;
    f.bucket = -1;
    return f;
}
#endif
#endif /* KERNJIT_TUNE_H */
