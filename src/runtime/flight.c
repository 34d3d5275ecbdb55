#include "runtime/flight.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct kj__flight {
    struct kj__flight *next;
    uint8_t key[16];
    unsigned refs; /* the leader until it lands, and each waiter until it leaves */
    int landed;
    int has_entry;
    kj__flight_entry entry; /* its strings and bytes owned by the flight */
};

/* Few keys are in flight at once (one per compile running): a list is enough. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t landed = PTHREAD_COND_INITIALIZER;
static kj__flight *flights;

static void flight_free(kj__flight *f) {
    free((void *)f->entry.data);
    free((void *)f->entry.description);
    free((void *)f->entry.cache_root);
    free((void *)f->entry.path);
    free(f);
}

kj__flight *kj__flight_join(const uint8_t key[16], int *leads) {
    pthread_mutex_lock(&lock);
    kj__flight *f = flights;
    while (f && memcmp(f->key, key, 16) != 0) f = f->next;
    if (f) {
        f->refs++;
        while (!f->landed) pthread_cond_wait(&landed, &lock);
        *leads = 0;
    } else if ((f = calloc(1, sizeof *f)) != NULL) {
        memcpy(f->key, key, 16);
        f->refs = 1;
        f->next = flights;
        flights = f;
        *leads = 1;
    }
    pthread_mutex_unlock(&lock);
    return f;
}

/* Copies e into the flight; 0 when out of memory (then nothing is kept). */
static int keep(kj__flight *f, const kj__flight_entry *e) {
    char *data = malloc(e->size ? e->size : 1);
    char *description = kj__strdup(e->description);
    char *root = kj__strdup(e->cache_root ? e->cache_root : "");
    char *path = kj__strdup(e->path ? e->path : "");
    if (!data || !description || !root || !path) {
        free(data);
        free(description);
        free(root);
        free(path);
        return 0;
    }
    memcpy(data, e->data, e->size);
    f->entry = (kj__flight_entry){data, e->size, e->flags, description, root, path};
    return 1;
}

/* Takes f off the table (no effect when it is off already); under the lock. */
static void take_off(kj__flight *f) {
    for (kj__flight **p = &flights; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
}

int kj__flight_close(kj__flight *f) {
    pthread_mutex_lock(&lock);
    take_off(f);
    int waited = f->refs > 1;
    pthread_mutex_unlock(&lock);
    return waited;
}

void kj__flight_land(kj__flight *f, const kj__flight_entry *entry) {
    int kept = entry && keep(f, entry); /* outside the lock: the copy may be megabytes */
    pthread_mutex_lock(&lock);
    take_off(f);
    f->has_entry = kept;
    f->landed = 1;
    pthread_cond_broadcast(&landed);
    pthread_mutex_unlock(&lock);
    kj__flight_leave(f);
}

const kj__flight_entry *kj__flight_result(const kj__flight *f) { return f->has_entry ? &f->entry : NULL; }

void kj__flight_leave(kj__flight *f) {
    pthread_mutex_lock(&lock);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&lock);
    if (last) flight_free(f);
}
