/* A tuning target: what the tuner needs from a kernel family to time its variants on a problem and
 * to check their results. One file per family (src/ops/<family>/<family>_tune.c) defines a kj__tune_target
 * and adds one line to KJ__TUNE_TARGETS below; the tuner (src/tune/tune.c) does the rest: the search
 * space, parallel compilation, device limits, timing, the winner and the database. */
#ifndef KJ_TUNE_TARGET_H
#define KJ_TUNE_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit.h"

/* The problem, as the tuner hands it to the target. */
typedef struct kj__tune_problem {
    kj_runtime *rt;
    const char *entry;          /* never NULL */
    const kj_define *fixed;     /* the params' values (every non-varied macro, sorted by name) */
    size_t fixed_count;
    uint64_t n;
    uint64_t seed;
} kj__tune_problem;

typedef struct kj__tune_target {
    const char *kernel;         /* the family's kernel: "reduce" */
    const char *default_entry;  /* used when kj_tune_options.entry is NULL */
    uint64_t default_n;         /* used when kj_tune_options.n is 0 */
    /* Tunables the entry does not use (NULL-terminated), held at their defaults; NULL: none. */
    const char *const *(*unused_tunables)(const char *entry);
    /* Allocates the inputs (rotating copies when they fit in L2: see kj__tune_rotation), fills them
     * from the seed, computes the CPU reference; *state is the target's. Usage errors name the value. */
    kj_status (*setup)(const kj__tune_problem *problem, void **state);
    /* Bytes one run reads and writes, for GB/s. */
    double (*bytes_per_run)(void *state);
    /* 0 when the variant can run this problem; else writes why not (a single-block entry and a large
     * n): the variant is skipped, not failed. May be NULL. */
    int (*applicable)(void *state, const kj_define *defines, size_t count, char *why, size_t why_size);
    /* Threads per block and dynamic shared bytes of a variant, for the device-limit checks; NULL:
     * BLOCK_SIZE and 0. */
    unsigned (*block_threads)(void *state, const kj_define *defines, size_t count);
    unsigned (*dynamic_shared)(void *state, const kj_define *defines, size_t count);
    /* Enqueues run number i of the variant on stream, without waiting; i picks the rotating input. */
    kj_status (*run)(void *state, kj_kernel *kernel, const kj_define *defines, size_t count, kj_stream stream,
                     unsigned i);
    /* After the stream is synchronized: KJ_OK when the last run's result matches the reference,
     * else KJ_ERR_WRONG_RESULT with a message giving both. */
    kj_status (*verify)(void *state);
    void (*teardown)(void *state);
} kj__tune_target;

/* How inputs of `bytes` rotate: `slots` copies `stride` bytes apart (256-byte aligned). One slot
 * when the input is larger than the device's L2; else enough copies to span more than twice the L2
 * (at most 1024), so that a run does not find its input in L2 from the run before. */
void kj__tune_rotation(const kj_runtime *rt, size_t bytes, unsigned *slots, size_t *stride);

/* Copies the first `stride` bytes at base into slots 1 .. slots - 1 (doubling, device to device). */
kj_status kj__tune_replicate(kj_runtime *rt, kj_devptr base, size_t stride, unsigned slots);

/* Compares `bytes` of device memory at dev with host memory at want, copying through a bounded host
 * buffer (an output of several GiB needs no second host copy): *first gets the byte offset of the
 * first difference, or SIZE_MAX when they are equal. */
kj_status kj__tune_compare(kj_runtime *rt, kj_devptr dev, const void *want, size_t bytes, size_t *first);

/* The value of macro `name` in a define list, or NULL. */
const char *kj__tune_define(const kj_define *defines, size_t count, const char *name);
/* The same as a number (the space's values are the metadata's, checked when it was parsed); 0 when
 * the macro is not in the list. */
unsigned kj__tune_define_uint(const kj_define *defines, size_t count, const char *name);

#define KJ__TUNE_TARGETS(X) X(reduce) X(transpose) X(vector_add)

#define KJ__TUNE_TARGET_DECLARE_(name) extern const kj__tune_target kj__tune_target_##name;
KJ__TUNE_TARGETS(KJ__TUNE_TARGET_DECLARE_)
#undef KJ__TUNE_TARGET_DECLARE_

#endif
