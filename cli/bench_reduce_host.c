/* kernjit bench reduce --host (bench_reduce_host.h). The host's time per call is what the calls cost
 * before the device is involved: the checks, picking the configuration, getting the kernels, the
 * launch. kj_reduce_async is timed in batches whose launches the queue takes without waiting (the
 * device is drained between batches, outside the time), so the time is the host's alone; kj_reduce
 * adds the wait for the result, which on the GPU is the kernel's time too. */
#include <stdlib.h>
#include <string.h>

#include "bench_reduce_host.h"
#include "run.h"

#define BATCH 100 /* calls a sample: well inside the launch queue's depth */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of samples x (a batch of BATCH calls, in us per call): async or sync. */
static kj_status time_calls(kj_runtime *rt, int sync, kj_op op, kj_type type, kj_devptr in, size_t n, kj_devptr out,
                            const kj_reduce_options *o, unsigned samples, double *median) {
    double t[BENCH_HOST_MAX_SAMPLES];
    unsigned char result[8];
    kj_status s = KJ_OK;
    for (unsigned i = 0; i < samples && s == KJ_OK; i++) {
        double start = cli_now_ms();
        for (unsigned k = 0; k < BATCH && s == KJ_OK; k++)
            s = sync ? kj_reduce(rt, op, type, in, n, result, o) : kj_reduce_async(rt, op, type, in, n, out, o);
        t[i] = (cli_now_ms() - start) * 1e3 / BATCH;
        if (s == KJ_OK) s = kj_synchronize(rt);
    }
    qsort(t, samples, sizeof *t, cmp_double);
    *median = t[samples / 2];
    return s;
}

int bench_reduce_host(bench_ctx *c, const kj_reduce_options *config, const kj_op *ops, int n_ops, const kj_type *types,
                      int n_types, const uint64_t *sizes, int n_sizes) {
    uint64_t most = 0;
    for (int i = 0; i < n_sizes; i++) most = sizes[i] > most ? sizes[i] : most;
    kj_devptr in = 0, out = 0;
    kj_status s = kj_mem_alloc(c->rt, (size_t)most * 8, &in);
    if (s == KJ_OK) s = kj_mem_alloc(c->rt, 64, &out);
    if (s == KJ_OK) s = kj_memset_u8(c->rt, in, 0, (size_t)most * 8);
    if (s != KJ_OK) {
        kj_mem_free(c->rt, in);
        return cli_fail(c->cmd, s);
    }
    if (c->format == 't')
        printf("bench reduce --host: %s (%s); host us per call, medians of %llu batches of %d calls\n"
               "%-5s %-5s %-6s %-18s %12s %12s\n",
               c->dev.name, c->dev.arch, (unsigned long long)c->samples, BATCH, "op", "type", "n", "entry", "async us",
               "sync us");
    if (c->format == 'c') printf("op,type,n,entry,async_us,sync_us\n");
    if (c->format == 'j') json_begin_array("host");
    c->steps = (size_t)n_ops * (size_t)n_types * (size_t)n_sizes;
    for (int i = 0; i < n_ops * n_types * n_sizes && s == KJ_OK; i++) {
        kj_op op = ops[i / n_sizes / n_types];
        kj_type type = types[i / n_sizes % n_types];
        size_t n = (size_t)sizes[i % n_sizes];
        char label[32];
        bench_step(c, "%s %s %s", kj_op_name(op), kj_type_name(type), bench_pow2_label(n, label, sizeof label));
        kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
        kj_reduce_options o = *config;
        o.report = &rep;
        unsigned char result[8];
        double async_us = 0, sync_us = 0;
        s = kj_reduce(c->rt, op, type, in, n, result, &o); /* gets the kernels: not timed */
        o.report = NULL;
        for (int w = 0; w < 3 && s == KJ_OK; w++) s = kj_reduce(c->rt, op, type, in, n, result, &o);
        if (s == KJ_OK) s = time_calls(c->rt, 0, op, type, in, n, out, &o, (unsigned)c->samples, &async_us);
        if (s == KJ_OK) s = time_calls(c->rt, 1, op, type, in, n, out, &o, (unsigned)c->samples, &sync_us);
        if (s != KJ_OK) break;
        cli_progress_pause();
        if (c->format == 't')
            printf("%-5s %-5s %-6s %-18s %12.2f %12.2f\n", kj_op_name(op), kj_type_name(type), label, rep.entry,
                   async_us, sync_us);
        if (c->format == 'c')
            printf("%s,%s,%zu,%s,%.3f,%.3f\n", kj_op_name(op), kj_type_name(type), n, rep.entry, async_us, sync_us);
        if (c->format == 'j') {
            json_begin_object();
            json_fields("op=%s type=%s n=%zu entry=%s async_us=%g sync_us=%g", kj_op_name(op), kj_type_name(type), n,
                        rep.entry, async_us, sync_us);
            json_end_object();
        }
    }
    if (c->format == 'j') json_end_array();
    kj_mem_free(c->rt, in);
    kj_mem_free(c->rt, out);
    return s == KJ_OK ? EXIT_OK : cli_fail(c->cmd, s);
}
