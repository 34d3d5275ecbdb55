#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

kj_status bench_time(kj_runtime *rt, kj_stream stream, bench_fn fn, void *user, unsigned warmup, unsigned samples,
                     unsigned batch, bench_result *out) {
    kj_event *start = NULL, *stop = NULL;
    kj_status s = kj_event_create(rt, &start);
    if (s == KJ_OK) s = kj_event_create(rt, &stop);
    unsigned i = 0;
    for (unsigned w = 0; s == KJ_OK && w < warmup; w++) s = fn(user, stream, i++);
    if (s == KJ_OK) s = kj_stream_synchronize(rt, stream);
    if (s == KJ_OK && batch == 0) {
        /* one timed run to size the batch */
        float ms = 0;
        s = kj_event_record(start, stream);
        if (s == KJ_OK) s = fn(user, stream, i++);
        if (s == KJ_OK) s = kj_event_record(stop, stream);
        if (s == KJ_OK) s = kj_event_elapsed_ms(start, stop, &ms);
        double us = ms * 1e3;
        batch = us >= 200 ? 1 : us <= 1 ? 200 : (unsigned)(200 / us) + 1;
    }
    double *t = calloc(samples ? samples : 1, sizeof *t);
    if (!t && s == KJ_OK) s = KJ_ERR_HOST_MEMORY;
    for (unsigned k = 0; s == KJ_OK && k < samples; k++) {
        float ms = 0;
        s = kj_event_record(start, stream);
        for (unsigned b = 0; s == KJ_OK && b < batch; b++) s = fn(user, stream, i++);
        if (s == KJ_OK) s = kj_event_record(stop, stream);
        if (s == KJ_OK) s = kj_event_elapsed_ms(start, stop, &ms);
        t[k] = ms * 1e3 / batch;
    }
    if (s == KJ_OK) {
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
