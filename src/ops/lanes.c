/* Per-stream device buffers of a family (ops.h: kj__lane_get). */
#include <pthread.h>
#include <stdlib.h>

#include "ops/ops.h"

typedef struct node {
    kj__lane lane;
    struct node *next;
} node;

typedef struct lanes {
    pthread_mutex_t lock;
    node *head;
} lanes;

kj_status kj__lanes_create(kj_runtime *rt, void **out) {
    (void)rt; /* called under the runtime's lock (kj__state_key) */
    lanes *l = calloc(1, sizeof *l);
    if (!l) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_init(&l->lock, NULL);
    *out = l;
    return KJ_OK;
}

void kj__lanes_destroy(kj_runtime *rt, void *p) {
    lanes *l = p;
    for (node *n = l->head, *next; n; n = next) {
        next = n->next;
        kj_mem_free(rt, n->lane.buffer);
        kj_event_destroy(n->lane.start);
        kj_event_destroy(n->lane.stop);
        free(n);
    }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* Gives the lane a buffer of `bytes`, cleared on its stream. The old buffer may still be read by work
 * on the stream, so the stream is drained before it is freed. */
static kj_status grow(kj_runtime *rt, kj__lane *lane, size_t bytes) {
    if (lane->buffer) {
        KJ_FORWARD(kj_stream_synchronize(rt, lane->stream));
        KJ_FORWARD(kj_mem_free(rt, lane->buffer));
        lane->buffer = 0;
        lane->bytes = 0;
    }
    KJ_FORWARD(kj_mem_alloc(rt, bytes, &lane->buffer));
    lane->bytes = bytes;
    return kj__memset_async(rt, lane->buffer, 0, bytes, lane->stream, "clearing a work buffer");
}

static kj_status add(kj_runtime *rt, lanes *l, kj_stream stream, size_t bytes, node **out) {
    node *n = calloc(1, sizeof *n);
    if (!n) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    n->lane.stream = stream;
    kj_status s = kj_event_create(rt, &n->lane.start);
    if (s == KJ_OK) s = kj_event_create(rt, &n->lane.stop);
    if (s == KJ_OK) s = grow(rt, &n->lane, bytes);
    if (s != KJ_OK) {
        kj_mem_free(rt, n->lane.buffer);
        kj_event_destroy(n->lane.start);
        kj_event_destroy(n->lane.stop);
        free(n);
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
    else if (n->lane.bytes < bytes) s = grow(rt, &n->lane, bytes > 2 * n->lane.bytes ? bytes : 2 * n->lane.bytes);
    pthread_mutex_unlock(&l->lock);
    KJ_FORWARD(s);
    *out = &n->lane;
    return KJ_OK;
}
