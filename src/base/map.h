/* An open-addressing hash map from 128-bit keys to pointers: the in-memory cache. Lookups make no
 * system call and no allocation, which keeps a memory hit under a microsecond. Not synchronized:
 * the runtime holds its lock around every call. */
#ifndef KJ_MAP_H
#define KJ_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kj__map_slot {
    uint64_t k0, k1;
    void *value; /* NULL: empty */
} kj__map_slot;

typedef struct kj__map {
    kj__map_slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t count;
} kj__map;

void *kj__map_get(const kj__map *m, const uint8_t key[16]);
/* Inserts or replaces; returns 0, or -1 when out of memory. value must not be NULL. */
int kj__map_put(kj__map *m, const uint8_t key[16], void *value);
/* Calls fn on every value, then empties the map. */
void kj__map_clear(kj__map *m, void (*fn)(void *value, void *user), void *user);

#endif
