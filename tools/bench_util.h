/* Timing for the benchmarks: CUDA events around batches of runs after a warm-up, medians, and the
 * device-to-device copy that every table is compared with. Speed lives here, never in tests. */
#ifndef KJ_BENCH_UTIL_H
#define KJ_BENCH_UTIL_H

#include <stddef.h>

#include "kernjit.h"

/* Enqueues run number i of the thing being timed on stream (without waiting). */
typedef kj_status (*bench_fn)(void *user, kj_stream stream, unsigned i);

typedef struct bench_result {
    double median_us; /* median over the samples of (batch time / batch) */
    double min_us;
    double max_us;
    unsigned samples;
    unsigned batch;
} bench_result;

/* Runs fn `warmup` times, then `samples` times a batch of `batch` runs between two events; each sample
 * is the batch's time divided by batch. batch 0 picks one so that a batch lasts about 200 us (for
 * small sizes, where launch gaps would otherwise dominate). fn receives a running index, so that it
 * can rotate among input buffers when the data would fit in L2. */
kj_status bench_time(kj_runtime *rt, kj_stream stream, bench_fn fn, void *user, unsigned warmup, unsigned samples,
                     unsigned batch, bench_result *out);

/* Times a and b interleaved (a batch of a, a batch of b, and again), so that both see the same
 * clocks and temperature; each gets its own batch size (as bench_time with batch 0). */
kj_status bench_time_pair(kj_runtime *rt, kj_stream stream, bench_fn a, void *user_a, bench_fn b, void *user_b,
                          unsigned warmup, unsigned samples, bench_result *out_a, bench_result *out_b);

/* The device-to-device copy of `bytes` (read once, written once) under the same timing: the
 * reference every bandwidth table is compared with. GB/s = 2 * bytes / time. */
kj_status bench_copy(kj_runtime *rt, size_t bytes, unsigned samples, bench_result *out);

/* A monotonic clock in milliseconds, for what CUDA events cannot time (compiles, cache hits). */
double bench_now_ms(void);
/* A malloc'd string made as printf makes it (a kernel's source for one sample); NULL when out of
 * memory. */
char *bench_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* rm -rf of a folder the benchmark made; its exit status. */
int bench_remove_tree(const char *dir);

/* 2^k for the tables: "2^20" */
const char *bench_pow2_label(size_t n, char *buf, size_t size);

#endif
