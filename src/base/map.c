#include "base/map.h"

#include <stdlib.h>
#include <string.h>

static void split(const uint8_t key[16], uint64_t *k0, uint64_t *k1) {
    memcpy(k0, key, 8);
    memcpy(k1, key + 8, 8);
}

/* The keys are already XXH3 hashes: any 64 bits of them index the table well. */
static size_t find(const kj__map_slot *slots, size_t cap, uint64_t k0, uint64_t k1) {
    size_t i = (size_t)(k0 ^ (k1 >> 7)) & (cap - 1);
    while (slots[i].value && (slots[i].k0 != k0 || slots[i].k1 != k1)) i = (i + 1) & (cap - 1);
    return i;
}

void *kj__map_get(const kj__map *m, const uint8_t key[16]) {
    if (!m->cap) return NULL;
    uint64_t k0, k1;
    split(key, &k0, &k1);
    return m->slots[find(m->slots, m->cap, k0, k1)].value;
}

static int grow(kj__map *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    kj__map_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].value) slots[find(slots, cap, m->slots[i].k0, m->slots[i].k1)] = m->slots[i];
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int kj__map_put(kj__map *m, const uint8_t key[16], void *value) {
    /* at most half full, so probes stay short and find() always meets an empty slot */
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0) return -1;
    uint64_t k0, k1;
    split(key, &k0, &k1);
    size_t i = find(m->slots, m->cap, k0, k1);
    if (!m->slots[i].value) m->count++;
    m->slots[i] = (kj__map_slot){k0, k1, value};
    return 0;
}

void kj__map_clear(kj__map *m, void (*fn)(void *value, void *user), void *user) {
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].value && fn) fn(m->slots[i].value, user);
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}
