#include "runtime/prefetch.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/sized.h"
#include "base/pool.h"
#include "jit/prepare.h"
#include "runtime/kernel.h"
#include "runtime/runtime.h"
#include "base/util.h"

/* Compiles run side by side (NVRTC is thread-safe), but a host starting up has its own work: at most
 * this many threads, and no more than the processors. */
#define MAX_PREFETCH_THREADS 4

/* A request copied whole, so that the caller's may go away when kj_kernel_prefetch returns. */
typedef struct job {
    struct job *next;
    uint8_t hash[16];
    kj_request req;
    kj_define *defines;
    const char **options, **sources; /* req's arrays (req points to them only when they hold any) */
    char **strings;                  /* every string the copy owns */
    size_t string_count;
} job;

struct kj__prefetch {
    pthread_mutex_t lock;
    pthread_cond_t work;  /* a job was queued, or the runtime is going away */
    pthread_cond_t ended; /* a running job ended */
    job *queue, *queue_tail;
    job *running[MAX_PREFETCH_THREADS];
    pthread_t threads[MAX_PREFETCH_THREADS];
    unsigned thread_count;
    int stopping;
};

static void job_free(job *j) {
    if (!j) return;
    kj__strings_free(j->strings, j->string_count);
    kj__free_all(j->defines, j->options, j->sources, j);
}

/* A copy of s that the job owns (NULL stays NULL); sets *oom when it cannot be made. */
static const char *own(job *j, const char *s, int *oom) {
    if (!s) return NULL;
    char *copy = kj__strdup(s);
    if (!copy) {
        *oom = 1;
        return NULL;
    }
    j->strings[j->string_count++] = copy;
    return copy;
}

static job *job_copy(const kj_request *r) {
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    size_t nd = r->defines ? r->define_count : 0, no = r->options ? r->option_count : 0;
    size_t ns = r->sources ? r->source_count : 0;
    j->strings = calloc(4 + 2 * nd + no + ns, sizeof *j->strings);
    j->defines = calloc(nd ? nd : 1, sizeof *j->defines);
    const char **options = j->options = calloc(no ? no : 1, sizeof *options);
    const char **sources = j->sources = calloc(ns ? ns : 1, sizeof *sources);
    int oom = !j->strings || !j->defines || !options || !sources;
    if (oom) {
        job_free(j);
        return NULL;
    }
    j->req.size = sizeof j->req;
    j->req.kernel = own(j, r->kernel, &oom);
    j->req.source_text = own(j, r->source_text, &oom);
    j->req.entry = own(j, r->entry, &oom);
    j->req.arch = own(j, r->arch, &oom);
    for (size_t i = 0; i < nd; i++)
        j->defines[i] = (kj_define){own(j, r->defines[i].name, &oom), own(j, r->defines[i].value, &oom)};
    for (size_t i = 0; i < no; i++) options[i] = own(j, r->options[i], &oom);
    for (size_t i = 0; i < ns; i++) sources[i] = own(j, r->sources[i], &oom);
    j->req.defines = nd ? j->defines : NULL;
    j->req.define_count = nd;
    j->req.options = no ? options : NULL;
    j->req.option_count = no;
    j->req.sources = ns ? sources : NULL;
    j->req.source_count = ns;
    if (oom) {
        job_free(j);
        return NULL;
    }
    return j;
}

/* What a prefetch does: the whole way to a loaded kernel, or to the cache without a device. A failure
 * is only noted: the later kj_kernel_get does the work again and reports it. */
static void run_job(kj_runtime *rt, job *j) {
    kj_kernel *k;
    kj_status s = rt->has_device ? kj__kernel_get_now(rt, &j->req, j->hash, 1, &k, NULL)
                                 : kj_compile(rt, &j->req, NULL);
    if (s != KJ_OK)
        kj__log(&rt->log, KJ_LOG_INFO, "prefetching %s%s%s failed (kj_kernel_get will say why): %s",
                j->req.kernel ? j->req.kernel : "?", j->req.entry ? ":" : "", j->req.entry ? j->req.entry : "",
                kj_last_error());
}

typedef struct worker_arg {
    kj_runtime *rt;
    unsigned index;
} worker_arg;

static void *worker(void *arg) {
    kj_runtime *rt = ((worker_arg *)arg)->rt;
    unsigned me = ((worker_arg *)arg)->index;
    free(arg);
    kj__prefetch *p = rt->prefetch;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->queue && !p->stopping) pthread_cond_wait(&p->work, &p->lock);
        if (p->stopping) break;
        job *j = p->queue;
        p->queue = j->next;
        if (!p->queue) p->queue_tail = NULL;
        p->running[me] = j;
        pthread_mutex_unlock(&p->lock);
        run_job(rt, j);
        pthread_mutex_lock(&p->lock);
        p->running[me] = NULL;
        pthread_cond_broadcast(&p->ended);
        job_free(j);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The runtime's prefetcher, made on first use. */
static kj__prefetch *prefetcher(kj_runtime *rt) {
    pthread_mutex_lock(&rt->lock);
    if (!rt->prefetch && (rt->prefetch = calloc(1, sizeof *rt->prefetch))) {
        pthread_mutex_init(&rt->prefetch->lock, NULL);
        pthread_cond_init(&rt->prefetch->work, NULL);
        pthread_cond_init(&rt->prefetch->ended, NULL);
    }
    kj__prefetch *p = rt->prefetch;
    pthread_mutex_unlock(&rt->lock);
    return p;
}

/* Starts threads for the queue, up to the bound; 0 when none runs (none could be started). Called with
 * p->lock held. */
static unsigned ensure_threads(kj_runtime *rt, kj__prefetch *p, size_t queued) {
    unsigned most = kj__pool_default_threads();
    if (most > MAX_PREFETCH_THREADS) most = MAX_PREFETCH_THREADS;
    while (p->thread_count < most && p->thread_count < queued) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) break;
        *a = (worker_arg){rt, p->thread_count};
        if (pthread_create(&p->threads[p->thread_count], NULL, worker, a) != 0) {
            free(a);
            break;
        }
        p->thread_count++;
    }
    return p->thread_count;
}

static int queued_or_running(const kj__prefetch *p, const uint8_t h[16]) {
    for (const job *j = p->queue; j; j = j->next)
        if (memcmp(j->hash, h, 16) == 0) return 1;
    for (unsigned t = 0; t < p->thread_count; t++)
        if (p->running[t] && memcmp(p->running[t]->hash, h, 16) == 0) return 1;
    return 0;
}

/* Request i of the caller's array, whose elements are the caller's sizeof(kj_request) apart (its first
 * element's size: every element must have that size), in our layout in *copy when it differs. */
static kj_status request_at(const kj_request *requests, size_t i, kj_request *copy, const kj_request **out) {
    size_t stride = requests[0].size;
    const kj_request *r = (const kj_request *)((const char *)requests + i * stride);
    if (i)
        KJ_RETURN_IF(r->size != stride, KJ_ERR_USAGE,
                     "kj_kernel_prefetch: requests[%zu].size is %zu, requests[0].size "
                     "%zu: the elements of one array have one size (KJ_REQUEST_INIT)",
                     i, r->size, stride);
    KJ__SIZED_INPUT(r, *copy, kj_request, KJ_REQUEST_INIT);
    *out = r;
    return KJ_OK;
}

kj_status kj_kernel_prefetch(kj_runtime *rt, const kj_request *requests, size_t n) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "kj_kernel_prefetch: runtime is NULL");
    KJ_RETURN_IF(n && !requests, KJ_ERR_USAGE, "kj_kernel_prefetch: %zu requests but requests is NULL", n);
    kj_request copy;
    const kj_request *req;
    for (size_t i = 0; i < n; i++) {
        KJ_FORWARD(request_at(requests, i, &copy, &req));
        KJ_FORWARD(kj__check_request(req));
    }
    kj__prefetch *p = n ? prefetcher(rt) : NULL;
    KJ_RETURN_IF(n && !p, KJ_ERR_HOST_MEMORY, "out of memory");
    job *mine = NULL; /* to do on this thread: no thread could be started */
    kj_status s = KJ_OK;
    for (size_t i = 0; i < n && s == KJ_OK; i++) {
        uint8_t h[16];
        request_at(requests, i, &copy, &req); /* checked above */
        kj__request_hash(req, h);
        pthread_mutex_lock(&rt->lock);
        int loaded = kj__map_get(&rt->requests, h) != NULL;
        pthread_mutex_unlock(&rt->lock);
        if (loaded) continue;
        job *j = job_copy(req);
        if (!j) {
            s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            break;
        }
        memcpy(j->hash, h, 16);
        pthread_mutex_lock(&p->lock);
        if (queued_or_running(p, h)) {
            pthread_mutex_unlock(&p->lock);
            job_free(j);
            continue;
        }
        size_t queued = 1;
        for (const job *q = p->queue; q; q = q->next) queued++;
        if (ensure_threads(rt, p, queued)) {
            if (p->queue_tail) p->queue_tail->next = j;
            else p->queue = j;
            p->queue_tail = j;
            pthread_cond_signal(&p->work);
        } else {
            j->next = mine;
            mine = j;
        }
        pthread_mutex_unlock(&p->lock);
    }
    for (job *j = mine, *next; j; j = next) {
        next = j->next;
        run_job(rt, j);
        job_free(j);
    }
    return s;
}

int kj__prefetch_wait(kj_runtime *rt, const uint8_t h[16]) {
    pthread_mutex_lock(&rt->lock);
    kj__prefetch *p = rt->prefetch;
    pthread_mutex_unlock(&rt->lock);
    if (!p) return 0;
    pthread_mutex_lock(&p->lock);
    for (job **at = &p->queue, *prev = NULL; *at; prev = *at, at = &(*at)->next) {
        if (memcmp((*at)->hash, h, 16) != 0) continue;
        job *j = *at;
        *at = j->next;
        if (p->queue_tail == j) p->queue_tail = prev;
        pthread_mutex_unlock(&p->lock);
        job_free(j);
        return 0;
    }
    int waited = 0;
    while (queued_or_running(p, h)) {
        pthread_cond_wait(&p->ended, &p->lock);
        waited = 1;
    }
    pthread_mutex_unlock(&p->lock);
    return waited;
}

void kj__prefetch_destroy(kj_runtime *rt) {
    kj__prefetch *p = rt->prefetch;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    for (job *j = p->queue, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    p->queue = p->queue_tail = NULL;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned t = 0; t < p->thread_count; t++) pthread_join(p->threads[t], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->ended);
    pthread_mutex_destroy(&p->lock);
    free(p);
    rt->prefetch = NULL;
}
