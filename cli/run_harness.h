/* `kernjit run FAMILY`: the flow every family shares, written once (run_harness.c), and the table of
 * callbacks through which a family (run_<family>.c) gives what is its own.
 *
 * run_main parses the options (the family's, --help and --json, and --seed, --repeat and -D as it
 * takes them), has the family check them, opens a runtime on the device (none: exit 1 naming `kernjit
 * compile`), checks that the device memory the command line asks for is free (else a usage error),
 * lets the family prepare its inputs and run once (compiling or loading the kernel), times --repeat
 * more runs (CUDA events, or the GPU time the library reports) and keeps their median, has the family
 * check the result against the CPU, reports in text or JSON, and exits 1 naming what is wrong. */
#ifndef KJ_RUN_HARNESS_H
#define KJ_RUN_HARNESS_H

#include <stdint.h>

#include "cli.h"

#define RUN_MAX_BUFFERS 8

typedef struct run_family run_family;

/* One run's state; a family's own state is a struct whose first member is this one. */
typedef struct run_ctx {
    const char *cmd; /* "run reduce" ("demo" when the demo runs it): messages name what was typed */
    kj_runtime *rt;
    uint64_t seed;         /* the inputs' seed: --seed, else fresh each run (and printed: --seed replays it) */
    uint64_t repeat;       /* the timed runs: the family's default, or --repeat */
    int json;              /* --json */
    uint64_t device_bytes; /* set by prepare: device memory the command line asks for (0: not checked) */
    char what[96];         /* and how it asked, for the message: "--n 1048576", "1000 x 1000" */
    double bytes;          /* set by prepare: bytes one run reads and writes, when the family reports GB/s */
    double median_ms;      /* of the timed runs */
    char wrong[512];       /* set by check when the result is wrong: the message, exit 1 */

    /* the harness's own */
    const run_family *family;
    double *times;
    kj_event *start, *stop;
    void *host[RUN_MAX_BUFFERS];
    kj_devptr device[RUN_MAX_BUFFERS];
    unsigned hosts, devices;
} run_ctx;

/* The two macros a family takes from -D NAME=VALUE (its other macros come from its options). */
#define RUN_MACROS 3
typedef struct run_macros {
    const char *names[RUN_MACROS]; /* NULL past the last */
    size_t at[RUN_MACROS];         /* where each value goes: an unsigned at that offset in the family's state */
    uint64_t max;                  /* values from 1 to max */
    const char *allowed;           /* the message's name for that range: "a positive integer" */
    const char *instead;           /* where the other macros come from: "use --type for the element size" */
} run_macros;

/* Callbacks return EXIT_OK, or an exit code after printing why (cli_usage, cli_error, cli_fail). */
struct run_family {
    const char *kernel; /* its source: JSON "kernel", `kernjit compile KERNEL` */
    void (*help)(void);
    const char *options;      /* its own, as cli_getopt takes them ("n=n: type=t:"); the harness adds
                                      help=h, json=j, seed=s:, repeat=r: and define=D: as the family takes them */
    int seeded;               /* takes --seed: its inputs are random */
    int reports_gbps;         /* c->bytes / the median time, in the report */
    uint64_t max_repeat;      /* --repeat from 1 to this */
    const run_macros *macros; /* the -D it takes; NULL: none */
    int (*option)(run_ctx *c, int opt, char *arg); /* one of its own options */
    int (*prepare)(run_ctx *c); /* after the options: what they ask for together (device_bytes, what) */
    int (*setup)(run_ctx *c);   /* on the device: inputs, poisoned outputs, and the first run */
    /* a timed run: either enqueued (timed with events around it) or measuring its own GPU time;
     * neither: no timed runs, no --repeat */
    kj_status (*launch)(run_ctx *c);
    kj_status (*timed)(run_ctx *c, double *gpu_ms);
    int (*check)(run_ctx *c); /* after the timed runs, against the CPU: fills c->wrong (or setup does) */
    void (*json)(run_ctx *c); /* the JSON fields after "kernel", "device" and "arch" */
    void (*text)(run_ctx *c);
    void (*teardown)(run_ctx *c); /* releases what the family took beyond run_host and run_device (runtimes
                                      of its own); NULL: nothing. Runs whenever the runtime was opened */
};

/* `kernjit run FAMILY ARGS`: c is the family's state (its first member), holding its defaults. */
int run_main(const run_family *f, run_ctx *c, int argc, char **argv);

/* Host memory freed when the run ends: NULL (said) when there is none. */
void *run_host(run_ctx *c, size_t bytes);
/* n random values of the type from seed (cli_random_fill) in host memory as run_host gives it. */
void *run_random(run_ctx *c, kj_type type, uint64_t n, uint64_t seed);
/* Device memory freed when the run ends. */
kj_status run_device(run_ctx *c, size_t bytes, kj_devptr *out);

/* In a family's callbacks: a failed call ends the run with the library's message. */
#define RUN_TRY(c, call)                                                                                               \
    do {                                                                                                               \
        kj_status run_s_ = (call);                                                                                     \
        if (run_s_ != KJ_OK) return cli_fail((c)->cmd, run_s_);                                                        \
    } while (0)

/* The timed runs in a report: JSON "repeat", "median_us" and "gbps" (when the family reports it); text
 * "  time        12.50 us median of 20 runs, 3.2 GB/s (NOTE)" (GB/s likewise, NOTE when given). */
void run_json_time(const run_ctx *c);
void run_text_time(const run_ctx *c, const char *note);
/* The text report's last lines for a result checked element by element: where the kernel came from,
 * "  check       ok (HOW)" (or WRONG), and the time (NOTE as above). */
void run_text_checked(const run_ctx *c, kj_origin origin, int ok, const char *how, const char *note);

#endif
