#include "base/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 64

typedef struct pool {
    pthread_mutex_t lock;
    pthread_cond_t finished; /* signalled when a task completes */
    size_t count, next;      /* tasks, and the next one to hand out */
    size_t *completed;       /* indices in completion order */
    size_t completed_count;
    kj__pool_task task;
    void *user;
} pool;

/* Takes the next task, or returns 0 when none is left. */
static int take(pool *p, size_t *index) {
    pthread_mutex_lock(&p->lock);
    int got = p->next < p->count;
    if (got) *index = p->next++;
    pthread_mutex_unlock(&p->lock);
    return got;
}

static void finish(pool *p, size_t index) {
    pthread_mutex_lock(&p->lock);
    p->completed[p->completed_count++] = index;
    pthread_cond_signal(&p->finished);
    pthread_mutex_unlock(&p->lock);
}

static void *worker(void *arg) {
    pool *p = arg;
    size_t i;
    while (take(p, &i)) {
        p->task(i, p->user);
        finish(p, i);
    }
    return NULL;
}

unsigned kj__pool_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

void kj__pool_run(unsigned threads, size_t count, kj__pool_task task, kj__pool_done done, void *user) {
    if (!count) return;
    if (threads == 0) threads = kj__pool_default_threads();
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads > count) threads = (unsigned)count;
    pool p = {.count = count, .task = task, .user = user};
    p.completed = malloc(count * sizeof *p.completed);
    pthread_t ids[MAX_THREADS];
    unsigned started = 0;
    if (p.completed && threads > 1) {
        pthread_mutex_init(&p.lock, NULL);
        pthread_cond_init(&p.finished, NULL);
        for (; started < threads; started++)
            if (pthread_create(&ids[started], NULL, worker, &p) != 0) break;
        if (started == 0) {
            pthread_mutex_destroy(&p.lock);
            pthread_cond_destroy(&p.finished);
        }
    }
    if (started == 0) {
        /* one thread, or none could be made: the caller does the work itself */
        for (size_t i = 0; i < count; i++) {
            task(i, user);
            if (done) done(i, user);
        }
        free(p.completed);
        return;
    }
    size_t reported = 0;
    pthread_mutex_lock(&p.lock);
    while (reported < count) {
        while (reported == p.completed_count) pthread_cond_wait(&p.finished, &p.lock);
        size_t index = p.completed[reported++];
        pthread_mutex_unlock(&p.lock);
        if (done) done(index, user);
        pthread_mutex_lock(&p.lock);
    }
    pthread_mutex_unlock(&p.lock);
    for (unsigned t = 0; t < started; t++) pthread_join(ids[t], NULL);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.finished);
    free(p.completed);
}
