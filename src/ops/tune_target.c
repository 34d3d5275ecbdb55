/* What the families' tuning targets share (ops.h: "tuning targets"). */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define MAX_ROTATION 1024u
#define SPARE_MEMORY (64u << 20)
#define COMPARE_CHUNK (32u << 20)

size_t kj__tune_stride(size_t bytes) {
    size_t stride = (bytes + 255) & ~(size_t)255;
    return stride ? stride : 256;
}

unsigned kj__tune_slots(const kj_runtime *rt, size_t bytes) {
    size_t l2 = kj__device_info(rt)->l2_bytes;
    if (bytes > l2) return 1;
    size_t want = 2 * l2 / kj__tune_stride(bytes) + 1; /* copies that together span more than twice the L2 */
    return want > MAX_ROTATION ? MAX_ROTATION : want < 2 ? 2 : (unsigned)want;
}

kj_status kj__tune_alloc(kj_runtime *rt, size_t bytes, const char *what, unsigned slots, const char *of,
                         kj_devptr *out) {
    size_t free_b = 0, total = 0;
    KJ_FORWARD(kj_mem_info(rt, &free_b, &total));
    KJ_RETURN_IF(bytes > free_b || free_b - bytes < SPARE_MEMORY, KJ_ERR_DEVICE_MEMORY,
                 "%s needs %zu bytes of device memory (%u cop%s of %s); %zu of %zu are free", what, bytes, slots,
                 slots == 1 ? "y" : "ies", of, free_b, total);
    return kj_mem_alloc(rt, bytes, out);
}

kj_status kj__tune_replicate(kj_runtime *rt, kj_devptr base, size_t stride, unsigned slots) {
    for (size_t have = 1; have < slots; have *= 2) {
        size_t more = slots - have < have ? slots - have : have;
        KJ_FORWARD(kj_memcpy_dtod(rt, base + have * stride, base, more * stride, NULL));
    }
    return KJ_OK;
}

kj_status kj__tune_poison(kj_runtime *rt, kj_devptr dev, size_t bytes) {
    KJ_FORWARD(kj_memset_u8(rt, dev, 0xA5, bytes));
    return kj_synchronize(rt); /* the memset runs on the legacy stream; the runs do not */
}

kj_status kj__tune_compare(kj_runtime *rt, kj_devptr dev, const void *want, size_t bytes, size_t *first) {
    *first = SIZE_MAX;
    size_t chunk = bytes < COMPARE_CHUNK ? bytes : COMPARE_CHUNK;
    unsigned char *got = malloc(chunk ? chunk : 1);
    if (!got) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    const unsigned char *w = want;
    kj_status s = KJ_OK;
    for (size_t at = 0; at < bytes && s == KJ_OK && *first == SIZE_MAX; at += chunk) {
        size_t len = bytes - at < chunk ? bytes - at : chunk;
        s = kj_memcpy_dtoh(rt, got, dev + at, len);
        if (s == KJ_OK && memcmp(got, w + at, len) != 0)
            for (size_t i = 0; i < len; i++)
                if (got[i] != w[at + i]) {
                    *first = at + i;
                    break;
                }
    }
    free(got);
    return s;
}

uint64_t kj__tune_seed(uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    return s ? s : 1;
}

/* xorshift64* */
uint64_t kj__tune_random(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

const char *kj__tune_define(const kj_define *d, size_t count, const char *name) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(d[i].name, name) == 0) return d[i].value;
    return NULL;
}

unsigned kj__tune_define_uint(const kj_define *d, size_t count, const char *name) {
    const char *v = kj__tune_define(d, count, name);
    return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}
