/* One compile per key in a process: every runtime (one per device, or several on one) that misses
 * memory at the same moment for the same cache key joins one flight. The first leads: it obtains the
 * entry as usual (disk, remote, compile) and lands it; the others wait and take a copy of its bytes
 * and description, as they would a disk entry. Keyed by the cache key alone: the key holds the
 * architecture, so devices of one compute capability share a flight and the entry it lands. */
#ifndef KJ_RUNTIME_FLIGHT_H
#define KJ_RUNTIME_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

typedef struct kj__flight kj__flight;

/* What a flight carries: the cache entry's parts, the leader's disk cache root ("" for none) and the
 * entry's path there ("" when not stored), so that a waiter with another disk cache stores the entry
 * in its own. */
typedef struct kj__flight_entry {
    const char *data;
    size_t size;
    uint32_t flags;
    const char *description;
    const char *cache_root;
    const char *path;
} kj__flight_entry;

/* Joins the flight for key, making it when there is none. *leads = 1: the caller leads and must call
 * kj__flight_land once, whatever happens. *leads = 0: the leader has landed; kj__flight_result tells
 * what it brought, and the caller must kj__flight_leave. NULL when out of memory (no flight: do the
 * work alone). */
kj__flight *kj__flight_join(const uint8_t key[16], int *leads);

/* The leader, before it lands: takes the flight off the table, so that no one joins it any more, and
 * tells whether anyone did (0: the entry need not be copied; land with NULL). */
int kj__flight_close(kj__flight *f);

/* The leader's entry, copied into the flight (NULL or a failure: the waiters do the work themselves,
 * so that each reports its own error). Takes the flight off the table and wakes the waiters. */
void kj__flight_land(kj__flight *f, const kj__flight_entry *entry);

/* The landed entry, valid until kj__flight_leave; NULL when the leader failed. */
const kj__flight_entry *kj__flight_result(const kj__flight *f);

void kj__flight_leave(kj__flight *f);

#endif
