/* A small fork-join pool for the tuner and offline builds: runs count independent tasks on a few
 * threads (NVRTC is thread-safe, so variants compile side by side) while the calling thread hears of
 * each completion, so that progress callbacks run on the caller's thread, one at a time. */
#ifndef KJ_POOL_H
#define KJ_POOL_H

#include <stddef.h>

/* Runs on a pool thread (or the caller's, see below); tasks must not depend on each other. */
typedef void (*kj__pool_task)(size_t index, void *user);
/* Runs on the calling thread after task(index) finished, in completion order. */
typedef void (*kj__pool_done)(size_t index, void *user);

/* Runs task(i) for every i in [0, count) on up to `threads` threads and returns when all are done.
 * done (may be NULL) is called once per task on the calling thread. When threads cannot be created
 * the remaining tasks run on the calling thread: the work always completes. */
void kj__pool_run(unsigned threads, size_t count, kj__pool_task task, kj__pool_done done, void *user);

/* The number of processors online (at least 1): the default thread count. */
unsigned kj__pool_default_threads(void);

#endif
