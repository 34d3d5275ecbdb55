/* Per-stream buffers of a family, in device memory or in page-locked host memory (ops.h: kj__lane_get). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/ops.h"

typedef struct node {
    kj__lane lane;
    struct node *next;
} node;

typedef struct lanes {
    pthread_mutex_t lock;
    int host; /* the buffers are page-locked host memory */
    node *head;
} lanes;

static kj_status create(int host, void **out) {
    lanes *l = calloc(1, sizeof *l);
    if (!l) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_init(&l->lock, NULL);
    l->host = host;
    *out = l;
    return KJ_OK;
}

/* called under the runtime's lock (kj__state_key) */
kj_status kj__lanes_create(kj_runtime *rt, void **out) {
    (void)rt;
    return create(0, out);
}

kj_status kj__host_lanes_create(kj_runtime *rt, void **out) {
    (void)rt;
    return create(1, out);
}

static void release(kj_runtime *rt, kj__lane *lane) {
    if (lane->host) kj__host_free(rt, lane->host);
    else kj_mem_free(rt, lane->buffer);
    lane->host = NULL;
    lane->buffer = 0;
    lane->bytes = 0;
}

static void lane_free(kj_runtime *rt, node *n) {
    release(rt, &n->lane);
    kj_event_destroy(n->lane.start);
    kj_event_destroy(n->lane.stop);
    kj_event_destroy(n->lane.done);
    free(n);
}

void kj__lanes_destroy(kj_runtime *rt, void *p) {
    lanes *l = p;
    for (node *n = l->head, *next; n; n = next) {
        next = n->next;
        lane_free(rt, n);
    }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* Gives the lane a buffer of `bytes`, cleared (device memory on its stream). The old buffer may still
 * be in use by work on the stream, so the stream is drained before it is freed. */
static kj_status grow(kj_runtime *rt, const lanes *l, kj__lane *lane, size_t bytes) {
    if (lane->buffer) {
        KJ_FORWARD(kj_stream_synchronize(rt, lane->stream));
        release(rt, lane);
    }
    if (l->host) {
        KJ_FORWARD(kj__host_alloc(rt, bytes, &lane->host, &lane->buffer));
        memset(lane->host, 0, bytes);
        lane->bytes = bytes;
        return KJ_OK;
    }
    KJ_FORWARD(kj_mem_alloc(rt, bytes, &lane->buffer));
    lane->bytes = bytes;
    return kj__memset_async(rt, lane->buffer, 0, bytes, lane->stream, "clearing a work buffer");
}

static kj_status add(kj_runtime *rt, lanes *l, kj_stream stream, size_t bytes, node **out) {
    node *n = calloc(1, sizeof *n);
    if (!n) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    n->lane.stream = stream;
    kj_status s = l->host ? kj__event_create_marker(rt, &n->lane.done) : kj_event_create(rt, &n->lane.start);
    if (s == KJ_OK && !l->host) s = kj_event_create(rt, &n->lane.stop);
    if (s == KJ_OK) s = grow(rt, l, &n->lane, bytes);
    if (s != KJ_OK) {
        lane_free(rt, n);
        return s;
    }
    n->next = l->head;
    l->head = n;
    *out = n;
    return KJ_OK;
}

kj_status kj__lane_get(kj_runtime *rt, const kj__state_key *key, kj_stream stream, size_t bytes, kj__lane **out) {
    KJ_RETURN_IF(bytes == 0 || bytes > SIZE_MAX / 2, KJ_ERR_USAGE, "a work buffer of %zu bytes", bytes);
    void *p;
    KJ_FORWARD(kj__state(rt, key, &p));
    lanes *l = p;
    kj_status s = KJ_OK;
    pthread_mutex_lock(&l->lock);
    node *n = l->head;
    while (n && n->lane.stream != stream) n = n->next;
    if (!n) s = add(rt, l, stream, bytes, &n);
    else if (n->lane.bytes < bytes) s = grow(rt, l, &n->lane, bytes > 2 * n->lane.bytes ? bytes : 2 * n->lane.bytes);
    pthread_mutex_unlock(&l->lock);
    KJ_FORWARD(s);
    *out = &n->lane;
    return KJ_OK;
}

kj_status kj__lane_wait(kj__lane *lane, const char *what, double limit_ms) {
    double start = kj__now_ms();
    for (;;) {
        int done = 0;
        KJ_FORWARD(kj__event_done(lane->done, what, &done));
        if (done) return KJ_OK;
        double waited = kj__now_ms() - start;
        KJ_RETURN_IF(waited > limit_ms, KJ_ERR_CUDA,
                     "%s: not done after %.0f s (work queued before it on its stream may never end); it is still "
                     "queued",
                     what, limit_ms / 1000);
        if (waited > KJ__SPIN_MS) nanosleep(&(struct timespec){0, KJ__PAUSE_NS}, NULL);
    }
}
