/* The benchmarks' shared parts: timing (CUDA events around batches of runs after a warm-up, medians,
 * and the device-to-device copy that every table is compared with), the checked measurement of one
 * configuration, the speed columns of the tables, and bench_main, the flow every `kernjit bench FAMILY`
 * shares. Speed lives here, never in tests. */
#ifndef KJ_BENCH_UTIL_H
#define KJ_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

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
/* rm -rf of a folder the benchmark made; its exit status. */
int bench_remove_tree(const char *dir);

/* 2^k for the tables: "2^20" */
const char *bench_pow2_label(size_t n, char *buf, size_t size);

/* GB/s of moving `bytes` in `us` microseconds. */
double bench_gbps(double bytes, double us);

/* One configuration to measure: run writes `bytes` at out; check compares the copy in host with the
 * CPU (1: right; it says what is wrong otherwise). */
typedef struct bench_checked {
    bench_fn run;
    void *job;
    kj_devptr out;
    void *host;
    size_t bytes;
    int (*check)(void *job, const void *host);
} bench_checked;

/* out poisoned, one run (compiling or loading the kernel) copied back and checked (*ok), then timed
 * (bench_time: 3 warm-up runs, samples batches). Returns the first failure's status. */
kj_status bench_measure(kj_runtime *rt, const bench_checked *b, unsigned samples, int *ok, bench_result *time);

/* A table row's speed next to the device copy's: JSON "median_us", "gbps", "copy_gbps", "copy_percent";
 * CSV the same four, after a comma. */
void bench_json_speed(double median_us, double gbps, double copy_gbps);
void bench_csv_speed(double median_us, double gbps, double copy_gbps);

/* After a table whose rows were checked against the CPU: `wrong` of its `rows` were wrong, which fails
 * the run, said once (KJ_ERR_WRONG_RESULT: the rows are marked WRONG, "ok": false in JSON). Returns
 * the failure's exit code, or rc when none was wrong. */
int bench_wrong_rows(const char *cmd, size_t wrong, size_t rows, int rc);

/* ---- `kernjit bench FAMILY`: bench_main ------------------------------------------------------- */

typedef struct bench_family bench_family;

/* One benchmark's state; a family's own state is a struct whose first member is this one. */
typedef struct bench_ctx {
    const char *cmd; /* "bench transpose": messages */
    kj_runtime *rt;
    kj_device_info dev;
    uint64_t samples; /* the family's default, or its option (bench_parse_samples) */
    int format;       /* 't' text, 'j' --json, 'c' --csv */
    const bench_family *family;
    size_t steps, step; /* progress: the units of work the family will do (it sets steps), and those begun */
} bench_ctx;

/* Callbacks return EXIT_OK, or an exit code after printing why. */
struct bench_family {
    void (*help)(void);
    const char *options;  /* its own, as cli_getopt takes them ("n=N: type=t:"); the harness adds
                                      help=h, json=j and (csv) csv=c */
    int csv;              /* takes --csv besides --json */
    uint64_t max_samples; /* for bench_parse_samples */
    int (*option)(bench_ctx *c, int opt, char *arg);
    int (*prepare)(bench_ctx *c); /* after the options: what they ask for together */
    int (*run)(bench_ctx *c);     /* on the device (c->rt, c->dev): measures and prints (under --json, the
                                      fields after "device", "arch" and "samples" of the open document) */
};

/* Parses the options (the family's, --help, --json and --csv), has the family check them, opens a
 * runtime on the device (none: exit 1), and runs the family. c is the family's state, with its
 * defaults. */
int bench_main(const bench_family *f, bench_ctx *c, int argc, char **argv);

/* Progress (cli_progress, ended by bench_main): the family sets c->steps before it starts, then calls
 * bench_step as it begins each unit, naming it ("sum f32 2^20"); one that prints rows as it goes
 * calls cli_progress_pause before each. */
void bench_step(bench_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A family's --samples (or --repeat) option: from 1 to the family's max_samples. */
int bench_parse_samples(bench_ctx *c, const char *option, const char *arg);

#endif
