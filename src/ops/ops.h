/* What a kernel family (src/ops/<family>/) gets of the layers below: its one internal header. A family
 * gets kernels from the pipeline (kj_kernel_get) through its call's plan (kj__config_resolve), and
 * launches them (kj__kernel_launch) once its public function has checked the call and entered the
 * runtime, once (kj__enter); and through this header: the context and the device, state kept per
 * runtime under a key of its own, copies and clears ordered on a stream, the pending-launch limit,
 * the rule that picks a configuration, names of values, and what a tuning target is. It never sees
 * the runtime's struct, its lock or the driver. */
#ifndef KJ_OPS_H
#define KJ_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/sized.h"
#include "base/util.h"
#include "kernjit.h"
#include "kernjit/ops.h"
#include "runtime/context.h"
#include "runtime/launch.h"
#include "runtime/nccl_loader.h" /* NCCL's table, for kj_reduce_nccl */

/* ---- per-stream work buffers ---------------------------------------------------------------- */

/* A family's buffer for one stream: work on one stream runs in order, so one buffer a stream is
 * enough. Kept until the runtime is destroyed; a stream is known by its handle value. The buffer is
 * device memory, or in a table of host lanes page-locked host memory the device writes directly
 * (kj__host_alloc): kernels are given `buffer`, the host reads `host` once `done`, recorded after
 * them, is (kj__event_done). */
typedef struct kj__lane {
    kj_stream stream;
    kj_devptr buffer;
    size_t bytes;
    kj_event *start, *stop; /* device lanes: for timing work on the stream */
    void *host;             /* host lanes: the buffer's host address (NULL in device lanes) */
    kj_event *done;         /* host lanes: a marker for the work that writes the buffer */
} kj__lane;

/* A family's table of lanes is its state under a key of its own:
 *   static const kj__state_key lanes = KJ__LANES;        (device memory)
 *   static const kj__state_key lanes = KJ__HOST_LANES;   (page-locked host memory) */
kj_status kj__lanes_create(kj_runtime *rt, void **state);
kj_status kj__host_lanes_create(kj_runtime *rt, void **state);
void kj__lanes_destroy(kj_runtime *rt, void *state);
#define KJ__LANES                                                                                                      \
    { kj__lanes_create, kj__lanes_destroy }
#define KJ__HOST_LANES                                                                                                 \
    { kj__host_lanes_create, kj__lanes_destroy }

/* The lane of `stream` in the table under `lanes`, with a buffer of at least `bytes`. A new buffer is
 * cleared to zero (device memory in order on its stream); a buffer too small is replaced by one of
 * `bytes`, or twice its size when that is more (the stream is drained first). The lane stays where
 * it is. */
kj_status kj__lane_get(kj_runtime *rt, const kj__state_key *lanes, kj_stream stream, size_t bytes, kj__lane **out);

/* Waiting for results in host lanes: the marker is polled without a pause for KJ__SPIN_MS (the caller
 * waits for nothing else, and a sleep, or a blocking wait, would add its wake-up, tens of us, to the
 * result's latency), then every KJ__PAUSE_NS. */
#define KJ__SPIN_MS 2.0
#define KJ__PAUSE_NS 20000
/* Waits until the host lane's marker, recorded after the work that writes it, is done; a failure of
 * that work is named as `what`. After limit_ms it gives up: KJ_ERR_CUDA, saying the work is still
 * queued. */
kj_status kj__lane_wait(kj__lane *lane, const char *what, double limit_ms);

/* ---- names ---------------------------------------------------------------------------------- */

/* The index of text in names[0 .. count), or -1 (text NULL included). */
int kj__name_find(const char *const *names, int count, const char *text);

/* ---- "explicit, else tuned, else default" ----------------------------------------------------- */

#define KJ__CONFIG_MAX 4      /* tunables of one call */
#define KJ__CONFIG_DEFINES 16 /* macros of one call's request: params, pinned macros and tunables */

/* A call of a family that has tunables: its kernel and the macros of its request (fixed_count +
 * pinned_count + count at most KJ__CONFIG_DEFINES). */
typedef struct kj__config_call {
    const char *kernel, *entry;
    const char *helper;     /* an entry launched with this one, of the same macros (reduce_init);
                                    NULL: none */
    const kj_define *fixed; /* the params, sorted by name: in the request, and (as "NAME=VALUE ...")
                                    the tuning database's key, as the tuner writes it */
    size_t fixed_count;
    const kj_define *pinned; /* macros held at a value whatever the configuration (an entry that
                                    does not use a tunable): in the request only */
    size_t pinned_count;
    uint64_t n;   /* the problem's size, whose bucket the database keys; 0: none is looked up */
    size_t count; /* the tunables, at most KJ__CONFIG_MAX */
    const char *names[KJ__CONFIG_MAX];
    unsigned given[KJ__CONFIG_MAX]; /* the caller's values; 0: not given */
    unsigned defaults[KJ__CONFIG_MAX];
    /* Whether tuned values can run this call (a single-block entry and its n): it may judge them
     * against n and nothing else (a plan keeps its answer under n); NULL: any can. */
    int (*suits)(const void *user, const unsigned *values);
    const void *user;
} kj__config_call;

/* What kj__config_resolve chose and got. */
typedef struct kj__config {
    unsigned values[KJ__CONFIG_MAX];
    kj_config_from from;
    kj_kernel *kernel, *helper; /* helper: the call's helper entry's (NULL: none) */
    kj_origin origin;
} kj__config;

/* The rule every family follows: the values the caller gives (any given one makes the call explicit;
 * the others stay at the defaults); else the tuning database's for this device, kernel, entry, params
 * and size bucket (from the runtime's copy: no file access), used whole when each is a plain number
 * from 1 to 1024 and suits() accepts them; else the defaults. Then the kernel of those values (and
 * its helper's). Tuned values whose kernel cannot be had as a usage of the metadata
 * (KJ_ERR_INVALID_DEFINE: a hand-edited database, or metadata changed since) or of the device
 * (KJ_ERR_LIMIT) give a warning, and the defaults are used instead. Errors: those of kj_kernel_get
 * for the values used.
 *
 * What it makes of a call is the call's plan, kept per runtime under everything it was derived from
 * (the call's macros, tunables, given values, defaults and size bucket; the runtime's device and
 * target; the database's copy as kj__tuned_generation numbers it): a call whose plan is kept gets its
 * values and kernels without a lock, a request or a database lookup (origin KJ_ORIGIN_MEMORY). A
 * family with no tunables (count 0) passes its macros as fixed, and gets plans the same way. */
kj_status kj__config_resolve(kj_runtime *rt, const kj__config_call *call, kj__config *out);

/* The values alone, as kj__config_resolve chooses them before it gets the kernel (out->kernel is
 * NULL): for a prefetch. */
void kj__config_choose(kj_runtime *rt, const kj__config_call *call, kj__config *out);

/* The request of the call at values, as kj__config_resolve makes it; its storage is in r. */
typedef struct kj__config_request {
    kj_define defines[KJ__CONFIG_DEFINES];
    char text[KJ__CONFIG_MAX][16];
    kj_request req;
} kj__config_request;
const kj_request *kj__config_request_of(const kj__config_call *call, const unsigned *values, kj__config_request *r);

/* ---- tuning targets ------------------------------------------------------------------------- */

/* What the tuner (src/tune/tune.c) needs of a family to time its variants on a problem and check
 * their results: a kj__tune_target in the family's <family>_tune.c, listed in src/tune/targets.c. The
 * tuner does the rest: the search space, parallel compilation, device limits, timing, the winner and
 * the database. */

/* The problem, as the tuner hands it to the target. */
typedef struct kj__tune_problem {
    kj_runtime *rt;
    const char *entry;      /* never NULL */
    const kj_define *fixed; /* the params' values (every non-varied macro, sorted by name) */
    size_t fixed_count;
    uint64_t n;
    uint64_t seed;
} kj__tune_problem;

typedef struct kj__tune_target {
    const char *kernel;        /* the family's kernel: "reduce" */
    const char *default_entry; /* used when kj_tune_options.entry is NULL */
    uint64_t default_n;        /* used when kj_tune_options.n is 0 */
    size_t state_size;         /* the target's state: the tuner passes a zeroed one of this size */
    /* Tunables the entry does not use (NULL-terminated), held at their defaults; NULL: none. */
    const char *const *(*unused_tunables)(const char *entry);
    /* Allocates the inputs (rotating copies when they fit in L2: kj__tune_arrays), fills them from the
     * seed, computes the CPU reference. Usage errors name the value. */
    kj_status (*setup)(const kj__tune_problem *problem, void *state);
    /* Bytes one run reads and writes, for GB/s. */
    double (*bytes_per_run)(void *state);
    /* 0 when the variant can run this problem; else writes why not (a single-block entry and a large
     * n): the variant is skipped, not failed. May be NULL. */
    int (*applicable)(void *state, const kj_define *defines, size_t count, char *why, size_t why_size);
    /* Threads per block and dynamic shared bytes of a variant, for the device-limit checks; NULL:
     * BLOCK_SIZE and 0. */
    unsigned (*block_threads)(void *state, const kj_define *defines, size_t count);
    unsigned (*dynamic_shared)(void *state, const kj_define *defines, size_t count);
    /* Enqueues run number i of the variant on stream, without waiting, with its kernel, which the
     * tuner got for the variant's macros; i picks the rotating input. The tuner has entered the
     * runtime (kj__enter), as the families' launch functions expect. */
    kj_status (*run)(void *state, kj_kernel *kernel, const kj_define *defines, size_t count, kj_stream stream,
                     unsigned i);
    /* After the stream is synchronized: KJ_OK when the last run's result matches the reference,
     * else KJ_ERR_WRONG_RESULT with a message giving both. */
    kj_status (*verify)(void *state);
    /* Releases what setup took, also after a setup that failed part way. */
    void (*teardown)(void *state);
} kj__tune_target;

/* Fills `bytes` at dev with 0xA5 and waits, so that a variant that writes nothing cannot pass on an
 * earlier one's output. */
kj_status kj__tune_poison(kj_runtime *rt, kj_devptr dev, size_t bytes);

/* A problem's device arrays in rotating copies: one copy of them all when they are larger than the
 * device's L2, else enough that the copies span more than twice the L2 (at most 1024), so that a run
 * does not find its input in L2 from the run before. The copies of one array lie side by side, the
 * written arrays (outputs) last, so that one memset poisons every copy of them. */
typedef struct kj__tune_arrays {
    kj_runtime *rt;
    unsigned count, outputs; /* arrays; the last `outputs` of them are what the runs write */
    unsigned slots;
    size_t stride, offset; /* between copies; where in its copy an array starts */
    kj_devptr base;
    unsigned last; /* the copy of the latest run */
} kj__tune_arrays;

/* count arrays of n elements of es bytes, each starting offset bytes into its copies (a caller that
 * works at an offset). KJ_ERR_USAGE names n when an array would pass 2^40 bytes; KJ_ERR_DEVICE_MEMORY
 * when the device cannot spare the copies and 64 MiB: "<what> needs N bytes of device memory (S
 * copies of <of>) and 64 MiB to spare, more than the F bytes free (of T)". */
kj_status kj__tune_arrays_alloc(kj_runtime *rt, const char *what, const char *of, unsigned count, unsigned outputs,
                                uint64_t n, size_t es, size_t offset, kj__tune_arrays *a);
void kj__tune_arrays_free(kj__tune_arrays *a);
/* Where copy `copy` of array `array` starts. */
kj_devptr kj__tune_array(const kj__tune_arrays *a, unsigned array, unsigned copy);
/* Copies copy 0 of array into its other copies (doubling, device to device). */
kj_status kj__tune_arrays_replicate(const kj__tune_arrays *a, unsigned array);
/* bytes of host into copy 0 of array, then into every copy. */
kj_status kj__tune_arrays_upload(const kj__tune_arrays *a, unsigned array, const void *host, size_t bytes);
/* Makes the copy of run number i (i modulo the copies) the latest, and returns it. */
unsigned kj__tune_arrays_rotate(kj__tune_arrays *a, unsigned i);
/* Every copy of the outputs, by kj__tune_poison. */
kj_status kj__tune_arrays_poison(const kj__tune_arrays *a);
/* Compares the latest copy of output `array` (bytes, elements of es bytes) with want, then poisons
 * the outputs: *first gets the index of the first element that differs, its es bytes copied to got,
 * or SIZE_MAX when none does. */
kj_status kj__tune_arrays_check(const kj__tune_arrays *a, unsigned array, const void *want, size_t bytes, size_t es,
                                size_t *first, void *got);

/* The inputs' random numbers: a generator seeded from the problem's seed, and its next value. */
uint64_t kj__tune_seed(uint64_t seed);
uint64_t kj__tune_random(uint64_t *state);

/* The value of macro `name` in a define list, or NULL. */
const char *kj__tune_define(const kj_define *defines, size_t count, const char *name);
/* The same as a number (the space's values are the metadata's, checked when it was parsed); 0 when
 * the macro is not in the list. */
unsigned kj__tune_define_uint(const kj_define *defines, size_t count, const char *name);

#endif
