#include "bench_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "devices.h"

/* Records one batch of fn and returns its time per run in microseconds. */
static kj_status time_batch(kj_event *start, kj_event *stop, kj_stream stream, bench_fn fn, void *user, unsigned batch,
                            unsigned *i, double *us) {
    float ms = 0;
    kj_status s = kj_event_record(start, stream);
    for (unsigned b = 0; s == KJ_OK && b < batch; b++) s = fn(user, stream, (*i)++);
    if (s == KJ_OK) s = kj_event_record(stop, stream);
    if (s == KJ_OK) s = kj_event_elapsed_ms(start, stop, &ms);
    *us = ms * 1e3 / batch;
    return s;
}

/* A batch that lasts about 200 us, from one timed run. */
static unsigned batch_for(double us) { return us >= 200 ? 1 : us <= 1 ? 200 : (unsigned)(200 / us) + 1; }

static void summarize(double *t, unsigned samples, unsigned batch, bench_result *out) {
    double lo = t[0], hi = t[0];
    for (unsigned k = 1; k < samples; k++) {
        lo = t[k] < lo ? t[k] : lo;
        hi = t[k] > hi ? t[k] : hi;
    }
    out->median_us = cli_median(t, samples);
    out->min_us = lo;
    out->max_us = hi;
    out->samples = samples;
    out->batch = batch;
}

kj_status bench_time_pair(kj_runtime *rt, kj_stream stream, bench_fn a, void *user_a, bench_fn b, void *user_b,
                          unsigned warmup, unsigned samples, bench_result *out_a, bench_result *out_b) {
    if (samples == 0) samples = 1;
    kj_event *start = NULL, *stop = NULL;
    kj_status s = kj_event_create(rt, &start);
    if (s == KJ_OK) s = kj_event_create(rt, &stop);
    unsigned ia = 0, ib = 0;
    for (unsigned w = 0; s == KJ_OK && w < warmup; w++) {
        s = a(user_a, stream, ia++);
        if (s == KJ_OK && b) s = b(user_b, stream, ib++);
    }
    if (s == KJ_OK) s = kj_stream_synchronize(rt, stream);
    double one_a = 0, one_b = 0;
    if (s == KJ_OK) s = time_batch(start, stop, stream, a, user_a, 1, &ia, &one_a);
    if (s == KJ_OK && b) s = time_batch(start, stop, stream, b, user_b, 1, &ib, &one_b);
    unsigned batch_a = batch_for(one_a), batch_b = batch_for(one_b);
    double *ta = calloc(samples, sizeof *ta), *tb = calloc(samples, sizeof *tb);
    if ((!ta || !tb) && s == KJ_OK) s = KJ_ERR_HOST_MEMORY;
    for (unsigned k = 0; s == KJ_OK && k < samples; k++) {
        s = time_batch(start, stop, stream, a, user_a, batch_a, &ia, &ta[k]);
        if (s == KJ_OK && b) s = time_batch(start, stop, stream, b, user_b, batch_b, &ib, &tb[k]);
    }
    if (s == KJ_OK) {
        summarize(ta, samples, batch_a, out_a);
        if (b) summarize(tb, samples, batch_b, out_b);
    }
    free(ta);
    free(tb);
    kj_event_destroy(start);
    kj_event_destroy(stop);
    return s;
}

kj_status bench_time(kj_runtime *rt, kj_stream stream, bench_fn fn, void *user, unsigned warmup, unsigned samples,
                     unsigned batch, bench_result *out) {
    if (batch == 0) return bench_time_pair(rt, stream, fn, user, NULL, NULL, warmup, samples, out, NULL);
    if (samples == 0) samples = 1;
    kj_event *start = NULL, *stop = NULL;
    kj_status s = kj_event_create(rt, &start);
    if (s == KJ_OK) s = kj_event_create(rt, &stop);
    unsigned i = 0;
    for (unsigned w = 0; s == KJ_OK && w < warmup; w++) s = fn(user, stream, i++);
    double *t = calloc(samples, sizeof *t);
    if (!t && s == KJ_OK) s = KJ_ERR_HOST_MEMORY;
    for (unsigned k = 0; s == KJ_OK && k < samples; k++)
        s = time_batch(start, stop, stream, fn, user, batch, &i, &t[k]);
    if (s == KJ_OK) summarize(t, samples, batch, out);
    free(t);
    kj_event_destroy(start);
    kj_event_destroy(stop);
    return s;
}

typedef struct {
    kj_runtime *rt;
    kj_devptr src, dst;
    size_t bytes;
} copy_job;

static kj_status copy_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    copy_job *j = user;
    return kj_memcpy_dtod(j->rt, j->dst, j->src, j->bytes, stream);
}

kj_status bench_copy(kj_runtime *rt, size_t bytes, unsigned samples, bench_result *out) {
    copy_job j = {rt, 0, 0, bytes};
    kj_status s = kj_mem_alloc(rt, bytes, &j.src);
    if (s == KJ_OK) s = kj_mem_alloc(rt, bytes, &j.dst);
    if (s == KJ_OK) s = kj_memset_u8(rt, j.src, 0x5a, bytes);
    if (s == KJ_OK) s = bench_time(rt, NULL, copy_once, &j, 3, samples, 0, out);
    kj_mem_free(rt, j.src);
    kj_mem_free(rt, j.dst);
    return s;
}

const char *bench_pow2_label(size_t n, char *buf, size_t size) {
    int k = 0;
    while (k < 63 && ((size_t)1 << k) < n) k++;
    if (((size_t)1 << k) == n) snprintf(buf, size, "2^%d", k);
    else snprintf(buf, size, "%zu", n);
    return buf;
}

int bench_remove_tree(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

double bench_gbps(double bytes, double us) { return bytes / (us * 1e-6) / 1e9; }

kj_status bench_measure(kj_runtime *rt, const bench_checked *b, unsigned samples, int *ok, bench_result *time) {
    kj_status s = kj_memset_u8(rt, b->out, 0xA5, b->bytes);
    if (s == KJ_OK) s = b->run(b->job, NULL, 0);
    if (s == KJ_OK) s = kj_synchronize(rt);
    if (s == KJ_OK) s = kj_memcpy_dtoh(rt, b->host, b->out, b->bytes);
    if (s != KJ_OK) return s;
    *ok = b->check(b->job, b->host);
    return bench_time(rt, NULL, b->run, b->job, 3, samples, 0, time);
}

void bench_json_speed(double median_us, double gbps, double copy_gbps) {
    json_double("median_us", median_us);
    json_double("gbps", gbps);
    json_double("copy_gbps", copy_gbps);
    json_double("copy_percent", 100.0 * gbps / copy_gbps);
}

void bench_csv_speed(double median_us, double gbps, double copy_gbps) {
    printf(",%.3f,%.1f,%.1f,%.1f", median_us, gbps, copy_gbps, 100.0 * gbps / copy_gbps);
}

int bench_wrong_rows(const char *cmd, size_t wrong, size_t rows, int rc) {
    if (!wrong) return rc;
    return cli_error_as(cmd, KJ_ERR_WRONG_RESULT,
                        "%zu of %zu configuration%s gave a wrong result (checked against "
                        "the CPU)",
                        wrong, rows, rows == 1 ? "" : "s");
}

/* ---- bench_main ------------------------------------------------------------------------------ */

typedef struct parse_state {
    bench_ctx *c;
    int json, csv;
} parse_state;

static int harness_option(void *user, int opt, char *arg) {
    parse_state *p = user;
    switch (opt) {
    case 'h':
        p->c->family->help();
        printf(CLI_DEVICE_HELP);
        return CLI_DONE;
    case 'G': return cli_device_arg(p->c->cmd, arg);
    case 'j': p->json = 1; break;
    case 'c': p->csv = 1; break;
    }
    return EXIT_OK;
}

static int family_option(void *user, int opt, char *arg) {
    bench_ctx *c = ((parse_state *)user)->c;
    return c->family->option(c, opt, arg);
}

void bench_step(bench_ctx *c, const char *fmt, ...) {
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    c->step++;
    cli_progress(c->cmd, "measure", c->step, c->steps > c->step ? c->steps : c->step, detail);
}

int bench_parse_samples(bench_ctx *c, const char *option, const char *arg) {
    return cli_count_arg(c->cmd, option, arg, 1, c->family->max_samples, &c->samples);
}

int bench_main(const bench_family *f, bench_ctx *c, int argc, char **argv) {
    c->cmd = argv[0] + strlen("kernjit "); /* argv[0] is "kernjit bench NAME" */
    c->family = f;
    const cli_option_set sets[] = {
        {f->options, family_option},
        {f->csv ? "help=h json=j csv=c device=G:" : "help=h json=j device=G:", harness_option}};
    parse_state p = {c, 0, 0};
    int rc = cli_getopt(c->cmd, argc, argv, sets, 2, &p);
    if (rc == CLI_DONE) return EXIT_OK;
    if (rc != EXIT_OK) return rc;
    if (p.json && p.csv) return cli_usage(c->cmd, "choose one of --json and --csv");
    c->format = p.json ? 'j' : p.csv ? 'c' : 't';
    if (f->prepare && (rc = f->prepare(c)) != EXIT_OK) return rc;

    kj_status s = cli_runtime(&c->rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(c->cmd, s);
    if (kj_runtime_has_device(c->rt)) {
        c->dev = (kj_device_info)KJ_DEVICE_INFO_INIT;
        kj_runtime_device(c->rt, &c->dev);
        if (c->format == 'j') { /* what every benchmark's document starts with; the family adds its fields */
            json_begin_object();
            json_fields("device=%s", c->dev.name);
            json_arch("arch", c->dev.cc_major, c->dev.cc_minor);
            json_uint("samples", c->samples);
        }
        rc = f->run(c);
        cli_progress_end();
        if (c->format == 'j') json_end_object();
    } else {
        rc = cli_error_as(c->cmd, KJ_ERR_NO_DEVICE, "no CUDA device: nothing to measure here");
    }
    kj_runtime_destroy(c->rt);
    return rc;
}
