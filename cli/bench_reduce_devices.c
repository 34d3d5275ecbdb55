/* kernjit bench reduce --devices: for each op, type and size per device, the time of kj_reduce_devices
 * over the devices listed (every device reducing N elements of its own at once, the results combined
 * on the host) against a local kj_reduce of N elements on the first device: both synchronous calls,
 * both timed on the host clock from the call to its result in host memory, so that the difference is
 * what spreading the work costs, and that over the devices past the first what each one adds. Beside
 * them the same parts collected one device after the other (a synchronous copy each), the way the
 * call worked before it polled its parts' events, for comparison. The combined results are checked,
 * bit for bit, against the host combine of each device's own kj_reduce. */
#include "bench_reduce_devices.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kjtest.h"

#define TARGET_US 10.0     /* the target: the multi-device call within 10 us of the local one at every size */
#define TARGET_X_NCCL 10.0 /* and at least 10x faster than an NCCL all-reduce of the whole data at 1 GiB */
#define BATCH_US 200.0     /* a sample lasts about this long: calls of a few us are timed in batches */

/* NCCL, when kernjit finds it (kj_nccl_library): a communicator per device made with the same
 * library, and an output buffer of the data's size on each. */
typedef struct nccl_side {
    int (*all_reduce)(const void *, void *, size_t, int, int, void *, void *);
    int (*group_start)(void), (*group_end)(void);
    int (*comm_destroy)(void *);
    void *comms[CLI_MAX_DEVICES];
    kj_devptr outputs[CLI_MAX_DEVICES];
    char why[512]; /* why there is none */
} nccl_side;

typedef struct spread {
    bench_ctx *c;
    int count;
    kj_runtime *rts[CLI_MAX_DEVICES];
    kj_devptr inputs[CLI_MAX_DEVICES];
    kj_devptr partials[CLI_MAX_DEVICES]; /* call_sequential's, a result each */
    kj_op op;
    kj_type type;
    size_t n, counts[CLI_MAX_DEVICES];
    const void *host; /* every device's input, on the host */
    unsigned char result[8];
    nccl_side *nccl; /* NULL: no NCCL */
} spread;

typedef kj_status (*call_fn)(spread *s);

/* A failed call ends the measurement with its status (its message in kj_last_error). */
#define TRY(call)                                                                                                      \
    do {                                                                                                               \
        kj_status try_s_ = (call);                                                                                     \
        if (try_s_ != KJ_OK) return try_s_;                                                                            \
    } while (0)

static kj_status call_local(spread *s) {
    return kj_reduce(s->rts[0], s->op, s->type, s->inputs[0], s->n, s->result, NULL);
}

static kj_status call_devices(spread *s) {
    return kj_reduce_devices(s->rts, s->inputs, s->counts, (size_t)s->count, s->op, s->type, s->result, NULL);
}

/* The type the partials have: f16 and bf16 reductions return f32. */
static kj_type acc_type(kj_type t) { return t == KJ_TYPE_F16 || t == KJ_TYPE_BF16 ? KJ_TYPE_F32 : t; }

/* The parts launched as kj_reduce_devices launches them, then collected one device after the other:
 * each result copied back by a synchronous copy to pageable memory, which waits for its part (and
 * the next device's copy only starts once it is done); then the same host combine. */
static kj_status call_sequential(spread *s) {
    size_t rs = kj_result_size(s->type);
    unsigned char partials[CLI_MAX_DEVICES * 8];
    for (int i = 0; i < s->count; i++)
        TRY(kj_reduce_async(s->rts[i], s->op, s->type, s->inputs[i], s->counts[i], s->partials[i], NULL));
    for (int i = 0; i < s->count; i++) TRY(kj_memcpy_dtoh(s->rts[i], partials + (size_t)i * rs, s->partials[i], rs));
    return kjtest_reduce_reference(s->op, acc_type(s->type), partials, (size_t)s->count, s->result, NULL);
}

/* NCCL's types and operators for the data (ncclDataType_t, ncclRedOp_t). */
static const int nccl_types[KJ_TYPE_COUNT_] = {
    [KJ_TYPE_I32] = 2, [KJ_TYPE_U32] = 3, [KJ_TYPE_I64] = 4, [KJ_TYPE_F16] = 6,
    [KJ_TYPE_F32] = 7, [KJ_TYPE_F64] = 8, [KJ_TYPE_BF16] = 9};
static const int nccl_ops[KJ_OP_COUNT_] = {[KJ_OP_SUM] = 0, [KJ_OP_PROD] = 1, [KJ_OP_MAX] = 2, [KJ_OP_MIN] = 3};

/* An NCCL all-reduce of the whole data (n elements a device) into the outputs, to completion. */
static kj_status call_nccl(spread *s) {
    nccl_side *x = s->nccl;
    int r = x->group_start();
    for (int i = 0; i < s->count && r == 0; i++)
        r = x->all_reduce((const void *)(uintptr_t)s->inputs[i], (void *)(uintptr_t)x->outputs[i], s->n,
                          nccl_types[s->type], nccl_ops[s->op], x->comms[i], NULL);
    int end = x->group_end();
    if (r || end) {
        fprintf(stderr, "%s: ncclAllReduce failed: NCCL error %d\n", s->c->cmd, r ? r : end);
        return KJ_ERR_CUDA;
    }
    for (int i = 0; i < s->count; i++) TRY(kj_stream_synchronize(s->rts[i], NULL));
    return KJ_OK;
}

/* Communicators of the devices through the NCCL kernjit loads; 0, or -1 with why (the rows' NCCL
 * columns are then left out). */
static int nccl_open(spread *s, const cli_devices *d, size_t bytes, nccl_side *x) {
    const char *path = NULL;
    if (kj_nccl_library(&path, NULL) != KJ_OK) return snprintf(x->why, sizeof x->why, "%s", kj_last_error()), -1;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*init_all)(void **, int, const int *) = h ? (int (*)(void **, int, const int *))dlsym(h, "ncclCommInitAll")
                                                   : NULL;
    x->all_reduce = h ? (int (*)(const void *, void *, size_t, int, int, void *, void *))dlsym(h, "ncclAllReduce")
                      : NULL;
    x->group_start = h ? (int (*)(void))dlsym(h, "ncclGroupStart") : NULL;
    x->group_end = h ? (int (*)(void))dlsym(h, "ncclGroupEnd") : NULL;
    x->comm_destroy = h ? (int (*)(void *))dlsym(h, "ncclCommDestroy") : NULL;
    if (!init_all || !x->all_reduce || !x->group_start || !x->group_end || !x->comm_destroy)
        return snprintf(x->why, sizeof x->why, "%s lacks ncclCommInitAll, ncclAllReduce or ncclGroupStart", path), -1;
    int r = init_all(x->comms, d->count, d->ordinals);
    if (r) return snprintf(x->why, sizeof x->why, "ncclCommInitAll failed: NCCL error %d", r), -1;
    for (int i = 0; i < d->count; i++)
        if (kj_mem_alloc(s->rts[i], bytes, &x->outputs[i]) != KJ_OK)
            return snprintf(x->why, sizeof x->why, "no device memory for its output: %s", kj_last_error()), -1;
    snprintf(x->why, sizeof x->why, "%s", path);
    return 0;
}

static void nccl_close(spread *s, nccl_side *x) {
    for (int i = 0; i < s->count; i++) {
        if (x->comms[i]) x->comm_destroy(x->comms[i]);
        kj_mem_free(s->rts[i], x->outputs[i]);
    }
}

/* The median over `samples` of a batch's time per call, after three calls of warm-up. */
static kj_status time_calls(spread *s, call_fn fn, unsigned samples, double *median_us) {
    for (int i = 0; i < 3; i++) TRY(fn(s));
    double start = cli_now_ms();
    TRY(fn(s));
    double one_us = (cli_now_ms() - start) * 1e3;
    unsigned batch = one_us >= BATCH_US ? 1 : (unsigned)(BATCH_US / (one_us > 0.5 ? one_us : 0.5));
    double *t = malloc(samples * sizeof *t);
    if (!t) return KJ_ERR_HOST_MEMORY;
    kj_status st = KJ_OK;
    for (unsigned i = 0; i < samples && st == KJ_OK; i++) {
        start = cli_now_ms();
        for (unsigned b = 0; b < batch && st == KJ_OK; b++) st = fn(s);
        t[i] = (cli_now_ms() - start) * 1e3 / batch;
    }
    *median_us = cli_median(t, samples);
    free(t);
    return st;
}

/* The median over `samples` of the calling thread's time to launch the first `parts` parts (their
 * kj_reduce_async, as kj_reduce_devices makes them) before any wait; each sample then waits for its
 * parts, untimed. What each device past the first adds to the launches, against what it adds to the
 * whole call, says whether the host's launches or the wait is where the time goes. */
static kj_status time_issue(spread *s, int parts, unsigned samples, double *median_us) {
    double *t = malloc(samples * sizeof *t);
    if (!t) return KJ_ERR_HOST_MEMORY;
    kj_status st = KJ_OK;
    unsigned char partial[8];
    for (unsigned i = 0; i < samples + 3 && st == KJ_OK; i++) {
        double start = cli_now_ms();
        for (int p = 0; p < parts && st == KJ_OK; p++)
            st = kj_reduce_async(s->rts[p], s->op, s->type, s->inputs[p], s->counts[p], s->partials[p], NULL);
        if (i >= 3) t[i - 3] = (cli_now_ms() - start) * 1e3;
        for (int p = 0; p < parts && st == KJ_OK; p++)
            st = kj_memcpy_dtoh(s->rts[p], partial, s->partials[p], kj_result_size(s->type));
    }
    if (st == KJ_OK) *median_us = cli_median(t, samples);
    free(t);
    return st;
}

/* The result of kj_reduce_devices, and of the parts collected one after the other, equals the combine
 * of each device's own kj_reduce, in the order listed; and each of those is right by the CPU reference
 * of the input, which every device holds (so that kernels that never ran, leaving the same stale or
 * zero results everywhere, cannot agree with one another and pass). */
static kj_status same_as_parts(spread *s, int *same) {
    size_t rs = kj_result_size(s->type);
    kj_type acc = acc_type(s->type);
    unsigned char partials[CLI_MAX_DEVICES * 8], combined[8], want[8], poison[8];
    double abs_sum;
    TRY(kjtest_reduce_reference(s->op, s->type, s->host, s->n, want, &abs_sum));
    *same = 1;
    for (int i = 0; i < s->count; i++) {
        unsigned char *part = partials + (size_t)i * rs;
        kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = {.size = sizeof o, .report = &rep};
        TRY(kj_reduce(s->rts[i], s->op, s->type, s->inputs[i], s->n, part, &o));
        *same = *same && kjtest_reduce_right(s->op, s->type, s->n, part, want, abs_sum, &rep);
    }
    TRY(kjtest_reduce_reference(s->op, acc, partials, (size_t)s->count, combined, NULL));
    kjtest_reduce_poison(s->type, combined, poison);
    call_fn calls[] = {call_devices, call_sequential};
    for (int c = 0; c < 2; c++) {
        memcpy(s->result, poison, rs);
        TRY(calls[c](s));
        *same = *same && memcmp(combined, s->result, rs) == 0;
    }
    return KJ_OK;
}

typedef struct row {
    kj_op op;
    kj_type type;
    size_t n;
    int devices, same;
    double local_us, multi_us, sequential_us, nccl_us; /* nccl_us NAN: not measured */
    double issue_one_us, issue_all_us;                 /* the calling thread's launches alone: part 0, every part */
} row;

/* What each device past the first adds: (multi - local) / (devices - 1); NAN with one device. */
static double per_device(const row *r) { return r->devices > 1 ? (r->multi_us - r->local_us) / (r->devices - 1) : NAN; }

static void print_row(const bench_ctx *c, const row *r, int first) {
    char size[32];
    bench_pow2_label(r->n, size, sizeof size);
    double diff = r->multi_us - r->local_us;
    if (c->format == 'j') {
        json_begin_object();
        json_fields("op=%s type=%s n=%zu device_count=%d local_median_us=%g multi_median_us=%g diff_us=%g "
                    "sequential_median_us=%g same_as_parts?=%d launch_one_median_us=%g launch_all_median_us=%g",
                    kj_op_name(r->op), kj_type_name(r->type), r->n, r->devices, r->local_us, r->multi_us, diff,
                    r->sequential_us, r->same, r->issue_one_us, r->issue_all_us);
        if (r->devices > 1) json_fields("per_device_us=%g", per_device(r));
        if (!isnan(r->nccl_us)) json_fields("nccl_median_us=%g x_nccl=%g", r->nccl_us, r->nccl_us / r->multi_us);
        json_end_object();
    } else if (c->format == 'c') {
        if (first)
            printf("op,type,n_per_device,devices,local_us,multi_us,diff_us,per_device_us,sequential_us,same_as_parts,"
                   "nccl_us,x_nccl,launch_one_us,launch_all_us\n");
        printf("%s,%s,%zu,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%.3f,%.2f,%.3f,%.3f\n", kj_op_name(r->op),
               kj_type_name(r->type), r->n, r->devices, r->local_us, r->multi_us, diff, per_device(r), r->sequential_us,
               r->same, r->nccl_us, r->nccl_us / r->multi_us, r->issue_one_us, r->issue_all_us);
    } else {
        if (first)
            printf("%-4s %-4s %-8s %7s %10s %10s %9s %10s %10s %11s %8s %9s %9s\n", "op", "type", "n/device", "devices",
                   "local us", "multi us", "diff us", "/device", "one by one", "NCCL us", "x NCCL", "launch 1",
                   "launch all");
        printf("%-4s %-4s %-8s %7d %10.2f %10.2f %9.2f", kj_op_name(r->op), kj_type_name(r->type), size, r->devices,
               r->local_us, r->multi_us, diff);
        if (r->devices > 1) printf(" %10.2f", per_device(r));
        else printf(" %10s", "-");
        printf(" %10.2f", r->sequential_us);
        if (isnan(r->nccl_us)) printf(" %11s %8s", "-", "-");
        else printf(" %11.2f %7.1fx", r->nccl_us, r->nccl_us / r->multi_us);
        printf(" %9.2f %9.2f", r->issue_one_us, r->issue_all_us);
        printf("%s\n", r->same ? "" : "  RESULT DIFFERS from the parts' own");
    }
}

/* One op and type at one size (the inputs already hold random values of the type). */
static kj_status measure(spread *s, row *r) {
    r->op = s->op;
    r->type = s->type;
    r->n = s->n;
    r->devices = s->count;
    for (int i = 0; i < s->count; i++) s->counts[i] = s->n;
    r->nccl_us = NAN;
    TRY(same_as_parts(s, &r->same));
    TRY(time_calls(s, call_local, (unsigned)s->c->samples, &r->local_us));
    TRY(time_calls(s, call_devices, (unsigned)s->c->samples, &r->multi_us));
    TRY(time_calls(s, call_sequential, (unsigned)s->c->samples, &r->sequential_us));
    TRY(time_issue(s, 1, (unsigned)s->c->samples, &r->issue_one_us));
    TRY(time_issue(s, s->count, (unsigned)s->c->samples, &r->issue_all_us));
    return s->nccl ? time_calls(s, call_nccl, (unsigned)s->c->samples, &r->nccl_us) : KJ_OK;
}

/* ---- the first launch on every device ------------------------------------------------------------ */

/* A runtime of its own and its first kj_reduce (sum f32 of 1024 elements), from a thread. */
typedef struct first_call {
    kj_runtime *rt;
    kj_devptr input;
    kj_status status;
} first_call;

static void *first_reduce(void *arg) {
    first_call *f = arg;
    float result;
    f->status = kj_reduce(f->rt, KJ_OP_SUM, KJ_TYPE_F32, f->input, 1024, &result, NULL);
    return NULL;
}

/* A runtime on each device, on the disk cache at dir (NULL: memory only, nothing shared), and input. */
static kj_status open_runtimes(const cli_devices *d, const char *dir, first_call *f) {
    for (int i = 0; i < d->count; i++) {
        kj_runtime_options o;
        cli_runtime_options(&o, 0, NULL, 0);
        o.device = d->ordinals[i];
        o.cache_dir = dir;
        o.cache_mode = dir ? KJ_CACHE_DISK : KJ_CACHE_MEMORY_ONLY;
        TRY(kj_runtime_create(&o, &f[i].rt));
        TRY(kj_mem_alloc(f[i].rt, 4096, &f[i].input));
        TRY(kj_memset_u8(f[i].rt, f[i].input, 0, 4096));
    }
    return KJ_OK;
}

static void close_runtimes(const cli_devices *d, first_call *f) {
    for (int i = 0; i < d->count; i++) {
        if (f[i].rt) kj_mem_free(f[i].rt, f[i].input);
        kj_runtime_destroy(f[i].rt);
    }
}

/* The first call on every device: all at once on one empty disk cache (one compile in the process,
 * the other devices load its bytes), in ms into *shared; one device after the other on runtimes that
 * share nothing (N compiles) into *apart. */
static kj_status time_first_calls(const cli_devices *d, const char *dir, double *shared, double *apart,
                                  uint64_t *compiles) {
    first_call f[CLI_MAX_DEVICES] = {{0}}, g[CLI_MAX_DEVICES] = {{0}};
    pthread_t threads[CLI_MAX_DEVICES];
    kj_status st = open_runtimes(d, dir, f);
    if (st == KJ_OK) st = open_runtimes(d, NULL, g);
    int started = 0;
    double start = cli_now_ms();
    for (; started < d->count && st == KJ_OK; started++)
        if (pthread_create(&threads[started], NULL, first_reduce, &f[started]) != 0) st = KJ_ERR_HOST_MEMORY;
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    *shared = cli_now_ms() - start;
    *compiles = 0;
    for (int i = 0; i < started; i++) {
        kj_stats stats = KJ_STATS_INIT;
        kj_runtime_stats(f[i].rt, &stats);
        *compiles += stats.compiles;
        if (st == KJ_OK) st = f[i].status;
    }
    start = cli_now_ms();
    for (int i = 0; i < d->count && st == KJ_OK; i++) first_reduce(&g[i]), st = g[i].status;
    *apart = cli_now_ms() - start;
    close_runtimes(d, f);
    close_runtimes(d, g);
    return st;
}

static int cold_start(bench_ctx *c, const cli_devices *d) {
    char dir[] = "/tmp/kernjit-bench-devices-XXXXXX";
    if (!mkdtemp(dir)) return cli_error(c->cmd, "cannot create a temporary cache folder: %s", strerror(errno));
    double shared = 0, apart = 0;
    uint64_t compiles = 0;
    kj_status st = time_first_calls(d, dir, &shared, &apart, &compiles);
    bench_remove_tree(dir);
    if (st != KJ_OK) return cli_fail(c->cmd, st);
    if (c->format == 'j') {
        json_object_in("first_launch");
        json_fields("device_count=%d shared_compile_ms=%g compiles=%llu separate_compiles_ms=%g", d->count, shared,
                    (unsigned long long)compiles, apart);
        json_end_object();
    } else if (c->format == 't') {
        printf("first launch on every device (an empty cache, in this process): %.1f ms all at once (%llu compile%s\n"
               "in all, the other devices loading its bytes) against %.1f ms for %d compiles, one device after the\n"
               "other (%.1fx)\n",
               shared, (unsigned long long)compiles, compiles == 1 ? "" : "s", apart, d->count, apart / shared);
    }
    return EXIT_OK;
}

static int run_all(spread *s, const kj_op *ops, int n_ops, const kj_type *types, int n_types, const uint64_t *sizes,
                   int n_sizes, size_t max_n) {
    bench_ctx *c = s->c;
    size_t bytes = max_n * 8;
    void *host = malloc(bytes);
    if (!host) return cli_error(c->cmd, "out of host memory (%zu bytes)", bytes);
    int first = 1, differ = 0, met = -1, met_nccl = -1;
    double worst = NAN, x_nccl = NAN; /* the largest multi - local, the smallest x NCCL at 1 GiB */
    row worst_row = {0};
    kj_status st = KJ_OK;
    c->steps = (size_t)n_ops * (size_t)n_types * (size_t)n_sizes;
    if (c->format == 'j') json_begin_array("rows");
    for (int ti = 0; ti < n_types && st == KJ_OK; ti++) {
        s->type = types[ti];
        size_t es = kj_type_size(s->type);
        kjtest_reduce_input(KJ_OP_SUM, s->type, host, max_n, 12345 + (uint64_t)ti); /* same-signed floats */
        s->host = host;
        for (int i = 0; i < s->count && st == KJ_OK; i++)
            st = kj_memcpy_htod(s->rts[i], s->inputs[i], host, max_n * es);
        for (int si = 0; si < n_sizes && st == KJ_OK; si++)
            for (int oi = 0; oi < n_ops && st == KJ_OK; oi++) {
                s->n = (size_t)sizes[si];
                s->op = ops[oi];
                char size[32];
                bench_step(c, "%s %s %s x %d devices", kj_op_name(s->op), kj_type_name(s->type),
                           bench_pow2_label(s->n, size, sizeof size), s->count);
                row r;
                if ((st = measure(s, &r)) != KJ_OK) break;
                cli_progress_pause();
                print_row(c, &r, first);
                first = 0;
                differ += !r.same;
                double diff = r.multi_us - r.local_us;
                if (isnan(worst) || diff > worst) worst = diff, worst_row = r;
                met = (met != 0) && diff <= TARGET_US;
                if (s->n * es == (1ull << 30)) {
                    double x = r.nccl_us / r.multi_us;
                    if (!isnan(x) && (isnan(x_nccl) || x < x_nccl)) x_nccl = x;
                    if (!isnan(x)) met_nccl = (met_nccl != 0) && x >= TARGET_X_NCCL;
                }
            }
    }
    free(host);
    cli_progress_pause();
    if (c->format == 'j') json_end_array();
    if (st != KJ_OK) return cli_fail(c->cmd, st);
    if (c->format == 't' && met >= 0) {
        char size[32];
        printf("\ntargets (the worst row):\n  multi - local <= %.0f us at every size: %.2f us (%s %s %s) -> %s\n",
               TARGET_US, worst, kj_op_name(worst_row.op), kj_type_name(worst_row.type),
               bench_pow2_label(worst_row.n, size, sizeof size), met ? "met" : "MISSED");
        printf("  NCCL all-reduce of the whole data / multi >= %.0fx at 1 GiB per device:", TARGET_X_NCCL);
        if (met_nccl < 0) printf(" not measured%s\n", s->nccl ? " (give --sizes 2^28 --type f32)" : "");
        else printf(" %.1fx -> %s\n", x_nccl, met_nccl ? "met" : "MISSED");
    }
    if (differ)
        return cli_error_as(c->cmd, KJ_ERR_WRONG_RESULT,
                            "%d row(s) whose result differs from the combine "
                            "of the devices' own kj_reduce, or from the CPU reference",
                            differ);
    return EXIT_OK;
}

int bench_reduce_devices(bench_ctx *c, const cli_devices *d, const kj_op *ops, int n_ops, const kj_type *types,
                         int n_types, const uint64_t *sizes, int n_sizes) {
    spread s = {.c = c, .count = d->count};
    size_t max_n = 0, max_es = 0;
    for (int i = 0; i < n_sizes; i++) max_n = sizes[i] > max_n ? (size_t)sizes[i] : max_n;
    for (int i = 0; i < n_types; i++) max_es = kj_type_size(types[i]) > max_es ? kj_type_size(types[i]) : max_es;
    char what[64];
    snprintf(what, sizeof what, "--sizes up to %zu per device", max_n);
    int rc = EXIT_OK;
    kj_status st = KJ_OK;
    s.rts[0] = c->rt;
    for (int i = 0; i < d->count && rc == EXIT_OK && st == KJ_OK; i++) {
        if (i) st = cli_device_runtime(d->ordinals[i], &s.rts[i]);
        if (st == KJ_OK) rc = cli_check_device_memory(s.rts[i], c->cmd, what, max_n * max_es);
        if (st == KJ_OK && rc == EXIT_OK) st = kj_mem_alloc(s.rts[i], max_n * max_es, &s.inputs[i]);
        if (st == KJ_OK && rc == EXIT_OK) st = kj_mem_alloc(s.rts[i], 16, &s.partials[i]);
    }
    if (st != KJ_OK) rc = cli_fail(c->cmd, st);
    if (rc == EXIT_OK && c->format == 't') {
        printf("bench reduce --devices:");
        for (int i = 0; i < d->count; i++) {
            kj_device_info info = KJ_DEVICE_INFO_INIT;
            kj_runtime_device(s.rts[i], &info);
            printf("%s %d (%s)", i ? "," : "", d->ordinals[i], info.name);
        }
        printf("\nmedians of %llu samples, host clock, each call to its result in host memory; local: kj_reduce of\n"
               "n/device on device %d alone; multi: kj_reduce_devices, n/device on each device at once; /device:\n"
               "(multi - local) / (devices - 1); one by one: the same parts, each result copied back\n"
               "synchronously, device after device (the earlier design, for comparison); launch 1 / launch all:\n"
               "the calling thread's kj_reduce_async of the first part / of every part, before any wait; inputs\n"
               "are not rotated (sizes below L2 are timed warm, alike)\n",
               (unsigned long long)c->samples, d->ordinals[0]);
    }
    if (rc == EXIT_OK) rc = cold_start(c, d);
    nccl_side nccl = {0};
    if (rc == EXIT_OK) {
        s.nccl = nccl_open(&s, d, max_n * max_es, &nccl) == 0 ? &nccl : NULL;
        if (c->format == 't')
            printf("NCCL all-reduce of the whole data: %s%s%s\n\n", s.nccl ? "" : "not measured (", nccl.why,
                   s.nccl ? "" : ")");
        rc = run_all(&s, ops, n_ops, types, n_types, sizes, n_sizes, max_n);
    }
    if (nccl.comm_destroy) nccl_close(&s, &nccl);
    for (int i = 0; i < d->count; i++) {
        if (s.rts[i]) kj_mem_free(s.rts[i], s.inputs[i]), kj_mem_free(s.rts[i], s.partials[i]);
        if (i) kj_runtime_destroy(s.rts[i]);
    }
    return rc;
}
