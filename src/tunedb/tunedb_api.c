/* The runtime's copy of the tuning database and the public kj_tune_db_* functions. The copy is read
 * on first use and replaced when this runtime stores or forgets; the strings kj_tune_db_lookup hands
 * out are interned (one copy of each distinct string, kept until the runtime goes), so they stay
 * valid while another thread replaces the copy, and memory grows with the distinct values returned,
 * not with the number of updates. Lookups take a mutex and compare a few strings: no file system
 * access after the first. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/sized.h"
#include "cache/cache.h"
#include "tunedb/remote_tune.h"
#include "runtime/context.h"
#include "tunedb/tunedb.h"
#include "base/util.h"

typedef struct db_state {
    pthread_mutex_t lock;
    char *dir;        /* the database's folder (kj__tunedb_dir); NULL when memory-only */
    char *path;       /* <dir>/tuning.db */
    char device[256]; /* the device's name as the file has it */
    int loaded;
    kj__tunedb *current;
    uint64_t generation; /* counts the copies installed; changed under the lock, read without it
                              (kj__tuned_generation) */
    char **interned;     /* the strings lookups handed out, one copy each */
    size_t interned_count;
} db_state;

/* A database the cache folder holds (where 0.2.0 kept it) is moved to the database's own folder on
 * first use; one that cannot be moved stays, and stays in use, so that nothing is lost. */
static void move_from_cache(kj_runtime *rt, db_state *st, const char *root) {
    const kj__logger *log = kj__runtime_log(rt);
    size_t moved = 0;
    if (strcmp(st->dir, root) == 0) return;
    if (kj__tunedb_move(root, st->dir, log, &moved) == KJ_OK) {
        if (moved)
            kj__log(log, KJ_LOG_INFO, "the tuning database (%zu result%s) moved from the cache folder %s to %s", moved,
                    moved == 1 ? "" : "s", root, st->dir);
        return;
    }
    kj__log(log, KJ_LOG_WARN, "the tuning database stays in the cache folder %s, and is used there: %s", root,
            kj_last_error());
    free(st->dir);
    st->dir = kj__strdup(root);
}

static kj_status state_create(kj_runtime *rt, void **out) {
    db_state *st = calloc(1, sizeof *st);
    if (!st) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_init(&st->lock, NULL);
    kj__tunedb_device_name(kj__device_info(rt)->name, st->device);
    int named;
    const char *root = kj__cache_root(kj__runtime_cache(rt, &named));
    if (root && (st->dir = kj__tunedb_dir(root, named))) move_from_cache(rt, st, root);
    if (root && (!st->dir || !(st->path = kj__asprintf("%s/%s", st->dir, KJ_TUNEDB_FILE)))) {
        free(st->dir);
        free(st);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    *out = st;
    return KJ_OK;
}

static void db_free(kj__tunedb *db) {
    if (!db) return;
    kj__tunedb_clear(db);
    free(db);
}

static void state_destroy(kj_runtime *rt, void *p) {
    (void)rt;
    db_state *st = p;
    db_free(st->current);
    for (size_t i = 0; i < st->interned_count; i++) free(st->interned[i]);
    free(st->interned);
    free(st->dir);
    free(st->path);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static const kj__state_key state_key = {state_create, state_destroy};

static kj_status get_state(const kj_runtime *rt, db_state **out) {
    *out = NULL;
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "runtime is NULL");
    void *p;
    /* the state is made once; the runtime is not otherwise changed */
    KJ_FORWARD(kj__state((kj_runtime *)rt, &state_key, &p));
    *out = p;
    return KJ_OK;
}

/* Makes db the current copy (taking it); lookups copied out what they handed out (intern). Called
 * with st->lock held. */
static void install(db_state *st, kj__tunedb *db) {
    db_free(st->current);
    st->current = db;
    st->loaded = 1;
    /* after the copy: a reader that sees the new number finds the new copy */
    __atomic_store_n(&st->generation, st->generation + 1, __ATOMIC_RELEASE);
}

/* The runtime's one copy of s; NULL when out of memory. Called with st->lock held. */
static const char *intern(db_state *st, const char *s) {
    for (size_t i = 0; i < st->interned_count; i++)
        if (strcmp(st->interned[i], s) == 0) return st->interned[i];
    char *copy = kj__strdup(s);
    char **grown = copy ? realloc(st->interned, (st->interned_count + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(copy);
        return NULL;
    }
    st->interned = grown;
    return st->interned[st->interned_count++] = copy;
}

/* The remote cache's results for this device that beat (or are missing from) the file: merged into
 * it by the conflict rule, all in one update (one rewrite of the file, however many), so that this
 * machine and its next processes use them. db is the file's copy, replaced by the merged one. */
static void merge_remote(kj_runtime *rt, db_state *st, kj__tunedb **db) {
    const kj__logger *log = kj__runtime_log(rt);
    const kj_device_info *dev = kj__device_info(rt);
    kj__tunedb fetched = {0}, wins = {0};
    if (!kj__remote_tune_fetch(kj__runtime_remote(rt), st->device, dev->cc_major, dev->cc_minor, kj__tuned_target(rt),
                               kj_version_string(), &fetched))
        return;
    for (size_t i = 0; i < fetched.count; i++) {
        const kj__tuned_rec *r = &fetched.recs[i];
        const kj__tuned_rec *mine = kj__tunedb_find(*db, r->kernel, r->entry, r->fixed, r->n, r->device, r->cc_major,
                                                    r->cc_minor, r->target, r->version);
        int same_key = mine && mine->bucket == r->bucket;
        if (same_key &&
            (!kj__tunedb_better(r, mine) || (strcmp(mine->values, r->values) == 0 && mine->gbps == r->gbps)))
            continue; /* the file's is as good */
        if (kj__tunedb_put(&wins, r) != KJ_OK) break;
        kj__log(log, KJ_LOG_DEBUG, "tuning result of %s %s %s (bucket %u) from the remote cache: %s, %.1f GB/s",
                r->kernel, r->entry, r->fixed, r->bucket, r->values, r->gbps);
    }
    kj__tunedb *merged = wins.count ? calloc(1, sizeof *merged) : NULL;
    kj__tunedb_change change = {.add = &wins};
    if (merged && kj__tunedb_update(st->dir, log, &change, NULL, merged) == KJ_OK) {
        db_free(*db);
        *db = merged;
        kj__log(log, KJ_LOG_INFO, "%zu tuning result%s from the remote cache merged into %s", wins.count,
                wins.count == 1 ? "" : "s", st->path);
    } else {
        free(merged);
    }
    kj__tunedb_clear(&wins);
    kj__tunedb_clear(&fetched);
}

/* Loads the file (and the remote's results) on first use; called with st->lock held. */
static void ensure_loaded(kj_runtime *rt, db_state *st) {
    if (st->loaded || !st->dir) return;
    kj__tunedb *db = calloc(1, sizeof *db);
    if (!db) return;
    if (kj__tunedb_read(st->dir, kj__runtime_log(rt), db) != KJ_OK) {
        db_free(db);
        return;
    }
    if (kj__runtime_remote(rt) && kj__has_device(rt)) merge_remote(rt, st, &db);
    install(st, db);
}

static const kj__tuned_rec *find_locked(kj_runtime *rt, db_state *st, const char *kernel, const char *entry,
                                        const char *fixed, uint64_t n) {
    ensure_loaded(rt, st);
    if (!st->current) return NULL;
    const kj_device_info *dev = kj__device_info(rt);
    return kj__tunedb_find(st->current, kernel, entry, fixed ? fixed : "", n, st->device, dev->cc_major, dev->cc_minor,
                           kj__tuned_target(rt), kj_version_string());
}

const char *kj__tuned_target(const kj_runtime *rt) { return kj__own_target(rt) ? "" : kj_runtime_arch(rt); }

int kj__tuned_find(kj_runtime *rt, const char *kernel, const char *entry, const char *fixed, uint64_t n, char *values,
                   size_t size) {
    if (!rt || !kj__has_device(rt) || !kj__runtime_cache(rt, NULL)) return -1;
    db_state *st;
    if (get_state(rt, &st) != KJ_OK) return -1;
    pthread_mutex_lock(&st->lock);
    const kj__tuned_rec *r = find_locked(rt, st, kernel, entry, fixed, n);
    int found = r && strlen(r->values) < size;
    if (found) memcpy(values, r->values, strlen(r->values) + 1);
    pthread_mutex_unlock(&st->lock);
    return found ? 0 : -1;
}

uint64_t kj__tuned_generation(kj_runtime *rt) {
    if (!rt || !kj__has_device(rt) || !kj__runtime_cache(rt, NULL)) return 0;
    db_state *st;
    if (get_state(rt, &st) != KJ_OK) return 0;
    uint64_t g = __atomic_load_n(&st->generation, __ATOMIC_ACQUIRE);
    if (g) return g;
    /* not loaded yet: loaded now, so that what is derived from it is not stale at once */
    pthread_mutex_lock(&st->lock);
    ensure_loaded(rt, st);
    g = st->generation;
    pthread_mutex_unlock(&st->lock);
    return g;
}

kj_status kj__tuned_store(kj_runtime *rt, const kj__tuned_rec *rec, const kj__tunedb_measured *measured) {
    db_state *st;
    KJ_FORWARD(get_state(rt, &st));
    KJ_RETURN_IF(!st->dir, KJ_ERR_NOT_FOUND, "this runtime has no disk cache (memory only): nothing to store into");
    kj__tunedb *merged = calloc(1, sizeof *merged);
    if (!merged) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj__tunedb one = {.recs = (kj__tuned_rec *)rec, .count = 1};
    kj__tunedb_change change = {.add = &one, .measured = measured};
    kj_status s = kj__tunedb_update(st->dir, kj__runtime_log(rt), &change, NULL, merged);
    if (s != KJ_OK) {
        free(merged);
        return s;
    }
    const kj__tuned_rec *kept = kj__tunedb_find(merged, rec->kernel, rec->entry, rec->fixed, rec->n, rec->device,
                                                rec->cc_major, rec->cc_minor, rec->target ? rec->target : "",
                                                rec->version);
    if (kept && kept->bucket == rec->bucket && strcmp(kept->values, rec->values) != 0 &&
        !kj__tunedb_replaces(rec, kept, measured))
        kj__log(
            kj__runtime_log(rt), KJ_LOG_WARN,
            "the tuning database keeps its faster result for %s %s %s (bucket %u): %s at "
            "%.1f GB/s, against %s at %.1f GB/s now (the faster re-measured result wins, unless a run here measures "
            "its variant at far less; `kernjit tune --forget` starts over)",
            rec->kernel, rec->entry, rec->fixed, rec->bucket, kept->values, kept->gbps, rec->values, rec->gbps);
    pthread_mutex_lock(&st->lock);
    install(st, merged);
    pthread_mutex_unlock(&st->lock);
    kj__remote_tune_publish(kj__runtime_remote(rt), rec, measured);
    return KJ_OK;
}

/* ---- public ---------------------------------------------------------------------------------- */

const char *kj_tune_db_path(const kj_runtime *rt) {
    db_state *st;
    if (!rt || !kj__runtime_cache(rt, NULL) || get_state(rt, &st) != KJ_OK) return NULL;
    return st->path;
}

static kj_status need_db(kj_runtime *rt, db_state **st) {
    KJ_FORWARD(get_state(rt, st));
    KJ_RETURN_IF(!(*st)->dir, KJ_ERR_NOT_FOUND, "this runtime has no disk cache (memory only), so no tuning database");
    return KJ_OK;
}

static void to_public(const kj__tuned_rec *r, kj_tuned *t) {
    t->size = sizeof *t;
    t->kernel = r->kernel;
    t->entry = r->entry;
    t->fixed = r->fixed;
    t->bucket = r->bucket;
    t->device = r->device;
    t->cc_major = r->cc_major;
    t->cc_minor = r->cc_minor;
    t->target = r->target;
    t->version = r->version;
    t->values = r->values;
    t->gbps = r->gbps;
    t->us = r->us;
    t->n = r->n;
    t->time = r->time;
}

kj_status kj_tune_db_list(kj_runtime *rt, kj_tuned_visit_fn visit, void *user) {
    KJ_RETURN_IF(!visit, KJ_ERR_USAGE, "kj_tune_db_list: visit is NULL");
    db_state *st;
    KJ_FORWARD(need_db(rt, &st));
    kj__tunedb db = {0};
    kj_status s = kj__tunedb_read(st->dir, kj__runtime_log(rt), &db);
    kj__tunedb_sort(&db);
    for (size_t i = 0; s == KJ_OK && i < db.count; i++) {
        kj_tuned t;
        to_public(&db.recs[i], &t);
        visit(&t, user);
    }
    kj__tunedb_clear(&db);
    return s;
}

kj_status kj_tune_filter_init(kj_tune_filter *f, size_t size) {
    KJ_RETURN_IF(!f, KJ_ERR_USAGE, "kj_tune_filter_init: filter is NULL");
    static const kj_tune_filter anything = KJ_TUNE_FILTER_INIT;
    return kj__sized_init(f, size, &anything, sizeof anything, "kj_tune_filter", "KJ_TUNE_FILTER_INIT");
}

kj_status kj_tune_db_forget(kj_runtime *rt, const kj_tune_filter *filter, size_t *removed) {
    kj_tune_filter all = KJ_TUNE_FILTER_INIT, copy;
    if (!filter) filter = &all;
    KJ__SIZED_INPUT(filter, copy, kj_tune_filter, KJ_TUNE_FILTER_INIT);
    db_state *st;
    KJ_FORWARD(need_db(rt, &st));
    kj__tunedb *merged = calloc(1, sizeof *merged);
    if (!merged) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    size_t gone = 0;
    kj__tunedb_change change = {.forget = filter};
    kj_status s = kj__tunedb_update(st->dir, kj__runtime_log(rt), &change, &gone, merged);
    if (s != KJ_OK) {
        free(merged);
        return s;
    }
    pthread_mutex_lock(&st->lock);
    install(st, merged);
    pthread_mutex_unlock(&st->lock);
    /* else the next runtime's first use merges them back */
    kj__remote_tune_forget(kj__runtime_remote(rt), filter);
    if (removed) *removed = gone;
    return KJ_OK;
}

kj_status kj_tune_db_lookup(kj_runtime *rt, const char *kernel, const char *entry, const char *fixed, uint64_t n,
                            kj_tuned *out) {
    KJ_RETURN_IF(!rt || !kernel || !entry || !out, KJ_ERR_USAGE,
                 "kj_tune_db_lookup: runtime, kernel, entry and out are required");
    KJ_FORWARD(KJ__SIZED_CHECK(out, kj_tuned, KJ_TUNED_INIT));
    KJ_RETURN_IF(!kj__has_device(rt), KJ_ERR_NO_DEVICE, "no CUDA device: tuned configurations belong to a device");
    db_state *st;
    KJ_FORWARD(need_db(rt, &st));
    pthread_mutex_lock(&st->lock);
    const kj__tuned_rec *r = find_locked(rt, st, kernel, entry, fixed, n);
    kj_tuned t;
    int oom = 0;
    if (r) {
        to_public(r, &t);
        /* strings that outlive this copy of the database */
        const char **fields[] = {&t.kernel, &t.entry, &t.fixed, &t.device, &t.target, &t.version, &t.values};
        for (size_t i = 0; i < sizeof fields / sizeof fields[0] && !oom; i++)
            oom = !(*fields[i] = intern(st, *fields[i]));
    }
    pthread_mutex_unlock(&st->lock);
    KJ_RETURN_IF(oom, KJ_ERR_HOST_MEMORY, "out of memory");
    if (r) KJ__SIZED_WRITE(out, t);
    const kj_device_info *dev = kj__device_info(rt);
    KJ_RETURN_IF(!r, KJ_ERR_NOT_FOUND, "no tuned configuration of %.100s %.100s%s%.200s for n = %llu on %s (sm_%d%d)",
                 kernel, entry, fixed && *fixed ? " " : "", fixed ? fixed : "", (unsigned long long)n, dev->name,
                 dev->cc_major, dev->cc_minor);
    return KJ_OK;
}
