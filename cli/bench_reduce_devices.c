/* kernjit bench reduce --devices: for each op, type and size per device, the time of kj_reduce_devices
 * over the devices listed (every device reducing N elements of its own at once, the results combined
 * on the host) against a local kj_reduce of N elements on the first device: both synchronous calls,
 * both timed on the host clock from the call to its result in host memory, so that the difference is
 * what spreading the work costs. The combined result is checked, bit for bit, against the host
 * combine of each device's own kj_reduce. */
#include "bench_reduce_devices.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kjtest.h"

#define TARGET_US 20.0 /* the target: the multi-device call within 20 us of the local one at 1 GiB a device */
#define BATCH_US 200.0 /* a sample lasts about this long: calls of a few us are timed in batches */

typedef struct spread {
    bench_ctx *c;
    int count;
    kj_runtime *rts[CLI_MAX_DEVICES];
    kj_devptr inputs[CLI_MAX_DEVICES];
    kj_op op;
    kj_type type;
    size_t n, counts[CLI_MAX_DEVICES];
    unsigned char result[8];
} spread;

typedef kj_status (*call_fn)(spread *s);

/* A failed call ends the measurement with its status (its message in kj_last_error). */
#define TRY(call)                                                                                                     \
    do {                                                                                                              \
        kj_status try_s_ = (call);                                                                                    \
        if (try_s_ != KJ_OK) return try_s_;                                                                           \
    } while (0)

static kj_status call_local(spread *s) { return kj_reduce(s->rts[0], s->op, s->type, s->inputs[0], s->n, s->result, NULL); }

static kj_status call_devices(spread *s) {
    return kj_reduce_devices(s->rts, s->inputs, s->counts, (size_t)s->count, s->op, s->type, s->result, NULL);
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over `samples` of a batch's time per call, after three calls of warm-up. */
static kj_status time_calls(spread *s, call_fn fn, unsigned samples, double *median_us) {
    for (int i = 0; i < 3; i++) TRY(fn(s));
    double start = bench_now_ms();
    TRY(fn(s));
    double one_us = (bench_now_ms() - start) * 1e3;
    unsigned batch = one_us >= BATCH_US ? 1 : (unsigned)(BATCH_US / (one_us > 0.5 ? one_us : 0.5));
    double *t = malloc(samples * sizeof *t);
    if (!t) return KJ_ERR_HOST_MEMORY;
    kj_status st = KJ_OK;
    for (unsigned i = 0; i < samples && st == KJ_OK; i++) {
        start = bench_now_ms();
        for (unsigned b = 0; b < batch && st == KJ_OK; b++) st = fn(s);
        t[i] = (bench_now_ms() - start) * 1e3 / batch;
    }
    qsort(t, samples, sizeof *t, by_value);
    *median_us = samples % 2 ? t[samples / 2] : (t[samples / 2 - 1] + t[samples / 2]) / 2;
    free(t);
    return st;
}

/* kj_reduce_devices' result equals the combine of each device's own kj_reduce, in the order listed. */
static kj_status same_as_parts(spread *s, int *same) {
    size_t rs = kj_result_size(s->type);
    unsigned char partials[CLI_MAX_DEVICES * 8], combined[8];
    for (int i = 0; i < s->count; i++)
        TRY(kj_reduce(s->rts[i], s->op, s->type, s->inputs[i], s->n, partials + (size_t)i * rs, NULL));
    TRY(kj_reduce_reference(s->op, s->type == KJ_TYPE_F16 ? KJ_TYPE_F32 : s->type, partials, (size_t)s->count,
                                   combined, NULL));
    memset(s->result, 0xA5, sizeof s->result);
    TRY(call_devices(s));
    *same = memcmp(combined, s->result, rs) == 0;
    return KJ_OK;
}

typedef struct row {
    kj_op op;
    kj_type type;
    size_t n;
    int devices, same;
    double local_us, multi_us;
} row;

static void print_row(const bench_ctx *c, const row *r, int first) {
    char size[32];
    bench_pow2_label(r->n, size, sizeof size);
    double diff = r->multi_us - r->local_us;
    if (c->format == 'j') {
        json_begin_object();
        json_fields("op=%s type=%s n=%zu device_count=%d local_median_us=%g multi_median_us=%g diff_us=%g "
                    "same_as_parts?=%d",
                    kj_op_name(r->op), kj_type_name(r->type), r->n, r->devices, r->local_us, r->multi_us, diff, r->same);
        json_end_object();
    } else if (c->format == 'c') {
        if (first) printf("op,type,n_per_device,devices,local_us,multi_us,diff_us,same_as_parts\n");
        printf("%s,%s,%zu,%d,%.3f,%.3f,%.3f,%d\n", kj_op_name(r->op), kj_type_name(r->type), r->n, r->devices,
               r->local_us, r->multi_us, diff, r->same);
    } else {
        if (first) printf("%-4s %-4s %-8s %7s %10s %10s %9s\n", "op", "type", "n/device", "devices", "local us", "multi us",
                          "diff us");
        printf("%-4s %-4s %-8s %7d %10.2f %10.2f %9.2f%s\n", kj_op_name(r->op), kj_type_name(r->type), size, r->devices,
               r->local_us, r->multi_us, diff, r->same ? "" : "  RESULT DIFFERS from the parts' own");
    }
}

/* One op and type at one size (the inputs already hold random values of the type). */
static kj_status measure(spread *s, row *r) {
    r->op = s->op;
    r->type = s->type;
    r->n = s->n;
    r->devices = s->count;
    for (int i = 0; i < s->count; i++) s->counts[i] = s->n;
    TRY(same_as_parts(s, &r->same));
    TRY(time_calls(s, call_local, (unsigned)s->c->samples, &r->local_us));
    return time_calls(s, call_devices, (unsigned)s->c->samples, &r->multi_us);
}

static int run_all(spread *s, const kj_op *ops, int n_ops, const kj_type *types, int n_types, const uint64_t *sizes,
                   int n_sizes, size_t max_n) {
    bench_ctx *c = s->c;
    size_t bytes = max_n * 8;
    void *host = malloc(bytes);
    if (!host) return cli_error(c->cmd, "out of host memory (%zu bytes)", bytes);
    int first = 1, differ = 0, met = -1;
    double at_target = NAN;
    kj_status st = KJ_OK;
    c->steps = (size_t)n_ops * (size_t)n_types * (size_t)n_sizes;
    if (c->format == 'j') json_begin_array("rows");
    for (int ti = 0; ti < n_types && st == KJ_OK; ti++) {
        s->type = types[ti];
        size_t es = kj_type_size(s->type);
        cli_random_fill(s->type, host, max_n, 12345 + (uint64_t)ti, 0);
        for (int i = 0; i < s->count && st == KJ_OK; i++) st = kj_memcpy_htod(s->rts[i], s->inputs[i], host, max_n * es);
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
                if (s->n * es == (1ull << 30)) {
                    double diff = r.multi_us - r.local_us;
                    if (isnan(at_target) || diff > at_target) at_target = diff;
                    met = (met != 0) && diff <= TARGET_US;
                }
            }
    }
    free(host);
    cli_progress_pause();
    if (c->format == 'j') json_end_array();
    if (st != KJ_OK) return cli_fail(c->cmd, st);
    if (c->format == 't') {
        printf("\ntarget: 1 GiB per device, multi - local <= %.0f us:", TARGET_US);
        if (met < 0) printf(" not measured (give --sizes 2^28 --type f32)\n");
        else printf(" %.2f us (the worst op and type) -> %s\n", at_target, met ? "met" : "MISSED");
        printf("NCCL all-reduce of the whole data: not measured (kj_reduce_nccl is not built yet)\n");
    }
    if (differ) return cli_error_as(c->cmd, KJ_ERR_WRONG_RESULT, "%d row(s) whose result differs from the combine "
                                    "of the devices' own kj_reduce", differ);
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
        if (st == KJ_OK && rc == EXIT_OK) st = kj_mem_alloc(s.rts[i], max_n * max_es + 1, &s.inputs[i]);
    }
    if (st != KJ_OK) rc = cli_fail(c->cmd, st);
    if (rc == EXIT_OK && c->format == 't') {
        printf("bench reduce --devices:");
        for (int i = 0; i < d->count; i++) {
            kj_device_info info;
            kj_runtime_device(s.rts[i], &info);
            printf("%s %d (%s)", i ? "," : "", d->ordinals[i], info.name);
        }
        printf("\nmedians of %llu samples, host clock, each call to its result in host memory; local: kj_reduce of\n"
               "n/device on device %d alone; multi: kj_reduce_devices, n/device on each device at once; inputs\n"
               "are not rotated (sizes below L2 are timed warm, alike)\n",
               (unsigned long long)c->samples, d->ordinals[0]);
    }
    if (rc == EXIT_OK) rc = run_all(&s, ops, n_ops, types, n_types, sizes, n_sizes, max_n);
    for (int i = 0; i < d->count; i++) {
        if (s.rts[i]) kj_mem_free(s.rts[i], s.inputs[i]);
        if (i) kj_runtime_destroy(s.rts[i]);
    }
    return rc;
}
