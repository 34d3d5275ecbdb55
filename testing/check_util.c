#include "check_util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static uint64_t start(uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    return s ? s : 1;
}

uint64_t check_fresh_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}

void check_fill_bits(void *buf, size_t bytes, uint64_t seed) {
    uint64_t s = start(seed);
    unsigned char *p = buf;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t r = next(&s);
        memcpy(p + i, &r, 8);
    }
    if (i < bytes) {
        uint64_t r = next(&s);
        memcpy(p + i, &r, bytes - i);
    }
}

static int same_element(const unsigned char *in, const unsigned char *out, size_t rows, size_t cols, size_t esize,
                        size_t r, size_t c) {
    return memcmp(in + (r * cols + c) * esize, out + (c * rows + r) * esize, esize) == 0;
}

size_t check_transpose(const void *in_, const void *out_, size_t rows, size_t cols, size_t esize, size_t samples,
                       uint64_t seed, size_t *bad_r, size_t *bad_c) {
    const unsigned char *in = in_, *out = out_;
    size_t wrong = 0;
#define CHECK_AT(r_, c_)                                                                                               \
    do {                                                                                                               \
        size_t r__ = (r_), c__ = (c_);                                                                                 \
        if (!same_element(in, out, rows, cols, esize, r__, c__) && wrong++ == 0) {                                     \
            *bad_r = r__;                                                                                              \
            *bad_c = c__;                                                                                              \
        }                                                                                                              \
    } while (0)
    if (!rows || !cols) return 0;
    if (samples == 0) {
        /* row by row of the output, so that the writes' side streams through the cache */
        for (size_t c = 0; c < cols; c++)
            for (size_t r = 0; r < rows; r++) CHECK_AT(r, c);
        return wrong;
    }
    CHECK_AT(0, 0);
    CHECK_AT(0, cols - 1);
    CHECK_AT(rows - 1, 0);
    CHECK_AT(rows - 1, cols - 1);
    uint64_t s = start(seed);
    for (size_t i = 0; i < samples; i++) {
        uint64_t x = next(&s);
        CHECK_AT((size_t)(x % rows), (size_t)((x >> 32) % cols));
    }
#undef CHECK_AT
    return wrong;
}

static int add_ok(kj_type type, const void *a, const void *b, const void *c, size_t i) {
    if (type == KJ_TYPE_F64) {
        double e = ((const double *)a)[i] + ((const double *)b)[i];
        return memcmp(&e, (const double *)c + i, sizeof e) == 0;
    }
    float e = ((const float *)a)[i] + ((const float *)b)[i];
    return memcmp(&e, (const float *)c + i, sizeof e) == 0;
}

size_t check_vector_add(kj_type type, const void *a, const void *b, const void *c, size_t n, size_t samples,
                        uint64_t seed, size_t *bad) {
    size_t wrong = 0;
    if (samples == 0 || samples >= n) {
        for (size_t i = 0; i < n; i++)
            if (!add_ok(type, a, b, c, i) && wrong++ == 0) *bad = i;
        return wrong;
    }
    uint64_t s = start(seed);
    for (size_t k = 0; k < samples; k++) {
        size_t i = (size_t)(next(&s) % n);
        if (!add_ok(type, a, b, c, i) && wrong++ == 0) *bad = i;
    }
    for (size_t i = n > 64 ? n - 64 : 0; i < n; i++)
        if (!add_ok(type, a, b, c, i) && wrong++ == 0) *bad = i;
    return wrong;
}

size_t check_poisoned(const void *out_, size_t count, size_t esize, unsigned char poison) {
    const unsigned char *out = out_;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        size_t b = 0;
        while (b < esize && out[i * esize + b] == poison) b++;
        n += b == esize;
    }
    return n;
}

void check_wrong_text(char *buf, size_t size, const void *out, size_t count, size_t esize, unsigned char poison,
                      size_t wrong, const char *against, const char *first) {
    size_t unwritten = check_poisoned(out, count, esize, poison);
    if (unwritten == count)
        snprintf(buf, size,
                 "the GPU output was never written: all %zu elements still hold the poison put there "
                 "before the run",
                 count);
    else if (unwritten)
        snprintf(buf, size,
                 "%zu elements differ from %s, %zu of them never written (still the poison put there "
                 "before the run); the first %s",
                 wrong, against, unwritten, first);
    else snprintf(buf, size, "%zu elements differ from %s; the first %s", wrong, against, first);
}
