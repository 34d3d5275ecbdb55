/* What the families' tuning targets share (ops.h: "tuning targets"). */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define MAX_ROTATION 1024u
#define SPARE_MEMORY (64u << 20)
#define COMPARE_CHUNK (32u << 20)

/* The distance between copies of an array of `bytes`: a multiple of 256 bytes. */
static size_t stride_of(size_t bytes) {
    size_t stride = (bytes + 255) & ~(size_t)255;
    return stride ? stride : 256;
}

/* How many copies of a run's data (`bytes`, all its arrays) rotate: one when the data is larger than
 * the device's L2; else enough to span more than twice the L2 (at most 1024), so that a run does not
 * find its input in L2 from the run before. */
static unsigned slots_for(const kj_runtime *rt, size_t bytes) {
    size_t l2 = kj__device_info(rt)->l2_bytes;
    if (bytes > l2) return 1;
    size_t want = 2 * l2 / stride_of(bytes) + 1; /* copies that together span more than twice the L2 */
    return want > MAX_ROTATION ? MAX_ROTATION : want < 2 ? 2 : (unsigned)want;
}

/* Device memory for `slots` copies of a problem's arrays (`of` names them: "the input"), when the
 * device has it to spare (64 MiB are left free); else KJ_ERR_DEVICE_MEMORY: "<what> needs N bytes of
 * device memory (S copies of <of>) and 64 MiB to spare, more than the F bytes free (of T)". */
static kj_status alloc_spare(kj_runtime *rt, size_t bytes, const char *what, unsigned slots, const char *of,
                             kj_devptr *out) {
    size_t free_b = 0, total = 0;
    KJ_FORWARD(kj_mem_info(rt, &free_b, &total));
    KJ_RETURN_IF(bytes > free_b || free_b - bytes < SPARE_MEMORY, KJ_ERR_DEVICE_MEMORY,
                 "%s needs %zu bytes of device memory (%u cop%s of %s) and 64 MiB to spare, more than the %zu bytes "
                 "free (of %zu)",
                 what, bytes, slots, slots == 1 ? "y" : "ies", of, free_b, total);
    return kj_mem_alloc(rt, bytes, out);
}

/* Copies the first `stride` bytes at base into slots 1 .. slots - 1 (doubling, device to device). */
static kj_status replicate(kj_runtime *rt, kj_devptr base, size_t stride, unsigned slots) {
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

/* Compares `bytes` of device memory at dev with host memory at want, copying through a bounded host
 * buffer (an output of several GiB needs no second host copy): *first gets the byte offset of the
 * first difference, or SIZE_MAX when they are equal. */
static kj_status compare(kj_runtime *rt, kj_devptr dev, const void *want, size_t bytes, size_t *first) {
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

kj_status kj__tune_arrays_alloc(kj_runtime *rt, const char *what, const char *of, unsigned count, unsigned outputs,
                                uint64_t n, size_t es, size_t offset, kj__tune_arrays *a) {
    *a = (kj__tune_arrays){.rt = rt, .count = count, .outputs = outputs, .offset = offset};
    KJ_RETURN_IF(n > (1ull << 40) / es, KJ_ERR_USAGE, "n = %llu elements of %zu bytes: at most 2^40 bytes an array",
                 (unsigned long long)n, es);
    size_t bytes = (size_t)n * es;
    a->slots = slots_for(rt, count * bytes);
    a->stride = stride_of(bytes + offset);
    return alloc_spare(rt, count * (size_t)a->slots * a->stride, what, a->slots, of, &a->base);
}

void kj__tune_arrays_free(kj__tune_arrays *a) {
    kj_mem_free(a->rt, a->base);
    a->base = 0;
}

kj_devptr kj__tune_array(const kj__tune_arrays *a, unsigned array, unsigned copy) {
    return a->base + ((kj_devptr)array * a->slots + copy) * a->stride + a->offset;
}

kj_status kj__tune_arrays_replicate(const kj__tune_arrays *a, unsigned array) {
    return replicate(a->rt, kj__tune_array(a, array, 0) - a->offset, a->stride, a->slots);
}

kj_status kj__tune_arrays_upload(const kj__tune_arrays *a, unsigned array, const void *host, size_t bytes) {
    KJ_FORWARD(kj_memcpy_htod(a->rt, kj__tune_array(a, array, 0), host, bytes));
    return kj__tune_arrays_replicate(a, array);
}

unsigned kj__tune_arrays_rotate(kj__tune_arrays *a, unsigned i) { return a->last = i % a->slots; }

kj_status kj__tune_arrays_poison(const kj__tune_arrays *a) {
    kj_devptr first = kj__tune_array(a, a->count - a->outputs, 0) - a->offset;
    return kj__tune_poison(a->rt, first, (size_t)a->outputs * a->slots * a->stride);
}

kj_status kj__tune_arrays_check(const kj__tune_arrays *a, unsigned array, const void *want, size_t bytes, size_t es,
                                size_t *first, void *got) {
    kj_devptr out = kj__tune_array(a, array, a->last);
    size_t byte;
    KJ_FORWARD(compare(a->rt, out, want, bytes, &byte));
    *first = byte == SIZE_MAX ? SIZE_MAX : byte / es;
    if (byte != SIZE_MAX) KJ_FORWARD(kj_memcpy_dtoh(a->rt, got, out + *first * es, es));
    return kj__tune_arrays_poison(a);
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
