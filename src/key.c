#include "key.h"

#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "util.h"

/* Every field is written as a tag byte, a 64-bit length and the bytes, so that no two different
 * inputs can produce the same byte stream ("ab"+"c" versus "a"+"bc"). */
static void field(XXH3_state_t *st, char tag, const void *data, size_t len) {
    uint64_t n = len;
    XXH3_128bits_update(st, &tag, 1);
    XXH3_128bits_update(st, &n, sizeof n);
    if (len) XXH3_128bits_update(st, data, len);
}

static void field_int(XXH3_state_t *st, char tag, int64_t v) { field(st, tag, &v, sizeof v); }
static void field_str(XXH3_state_t *st, char tag, const char *s) { field(st, tag, s, s ? strlen(s) : 0); }

static int cmp_header(const void *a, const void *b) {
    return strcmp((*(const kj__header *const *)a)->name, (*(const kj__header *const *)b)->name);
}

void kj__key_compute(const kj__key_input *in, kj__key *out) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    field_int(&st, 'F', KJ_CACHE_FORMAT_VERSION);
    field_int(&st, 'V', KJ_KEY_VERSION);
    field_int(&st, 'N', in->nvrtc_version);
    field_int(&st, 'L', in->linked);
    if (in->linked) {
        field_int(&st, 'J', in->nvjitlink_version);
        field(&st, 'D', in->devrt_hash, 16);
    }
    field_str(&st, 'A', in->arch);
    field_int(&st, 'o', (int64_t)in->option_count);
    for (size_t i = 0; i < in->option_count; i++) field_str(&st, 'O', in->options[i]);
    field_str(&st, 'E', in->name_expression);
    field_str(&st, 'f', in->source->file); /* NVRTC writes it into line info */
    field(&st, 'S', in->source->text, in->source->len);

    field_int(&st, 'k', in->toolkit != NULL);
    if (in->toolkit) field(&st, 'K', in->toolkit, 16);

    /* Headers in name order: the order they were found in must not matter. */
    static _Thread_local const kj__header *sorted[KJ_MAX_HEADERS];
    size_t n = in->source->header_count;
    for (size_t i = 0; i < n; i++) sorted[i] = &in->source->headers[i];
    qsort(sorted, n, sizeof sorted[0], cmp_header);
    field_int(&st, 'h', (int64_t)n);
    for (size_t i = 0; i < n; i++) {
        field_str(&st, 'H', sorted[i]->name);
        field(&st, 'T', sorted[i]->text, sorted[i]->len);
    }

    XXH128_hash_t h = XXH3_128bits_digest(&st);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out->bytes, c.digest, 16);
    kj__hex(out->bytes, 16, out->hex);
}

void kj__hash128(const void *data, size_t len, uint8_t out[16]) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    memcpy(out, c.digest, 16);
}
