#include "jit/key.h"

#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "base/util.h"
#include "jit/trim.h"

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

/* One translation unit: its file name (NVRTC writes it into line info), its text, the names of its
 * pre-included headers (canonical names are the unit's own) and every header in name order: the
 * order they were found in must not matter. */
static void hash_source(XXH3_state_t *st, const kj__source *src) {
    if (src->kind != KJ__UNIT_CU) field_int(st, 'Y', src->kind); /* only then: .cu keys stay as they were */
    field_str(st, 'f', src->file);
    field(st, 'S', src->text, src->len);
    field_int(st, 'p', (int64_t)src->pre_include_count);
    for (size_t i = 0; i < src->pre_include_count; i++) field_str(st, 'P', src->pre_include_names[i]);
    static _Thread_local const kj__header *sorted[KJ_MAX_HEADERS];
    size_t n = src->header_count;
    for (size_t i = 0; i < n; i++) sorted[i] = &src->headers[i];
    qsort(sorted, n, sizeof sorted[0], cmp_header);
    field_int(st, 'h', (int64_t)n);
    for (size_t i = 0; i < n; i++) {
        field_str(st, 'H', sorted[i]->name);
        field(st, 'T', sorted[i]->text, sorted[i]->len);
    }
}

void kj__key_compute(const kj__key_input *in, kj__key *out) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    field_int(&st, 'F', KJ_CACHE_FORMAT_VERSION);
    field_int(&st, 'V', KJ_KEY_VERSION);
    field_int(&st, 'N', in->nvrtc_version);
    field_int(&st, 'L', in->linked);
    if (in->linked) field_int(&st, 'J', in->nvjitlink_version);
    field_int(&st, 'd', in->devrt_hash != NULL);
    if (in->devrt_hash) field(&st, 'D', in->devrt_hash, 16);
    field_str(&st, 'A', in->arch);
    field_int(&st, 'o', (int64_t)in->option_count);
    for (size_t i = 0; i < in->option_count; i++) field_str(&st, 'O', in->options[i]);
    field_str(&st, 'E', in->name_expression);
    if (in->entry_count) { /* only then: the keys of one entry stay what they were */
        field_int(&st, 'e', (int64_t)in->entry_count);
        for (size_t i = 0; i < in->entry_count; i++) field_str(&st, 'I', in->entries[i]);
    }
    if (in->alone_entry) { /* only then: the keys of whole files stay what they were */
        field_int(&st, 'x', KJ_TRIM_RULE);
        field_str(&st, 'X', in->alone_entry);
    }
    field_int(&st, 'k', in->toolkit != NULL);
    if (in->toolkit) field(&st, 'K', in->toolkit, 16);
    /* the units in their order: the order is the program's (it decides which definitions the linker
     * meets first in its messages), and a set in another order is another request */
    field_int(&st, 'u', (int64_t)in->source_count);
    for (size_t i = 0; i < in->source_count; i++) hash_source(&st, in->sources[i]);

    XXH128_hash_t h = XXH3_128bits_digest(&st);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out->bytes, c.digest, 16);
    kj__hex(out->bytes, 16, out->hex);
}

static int hex_value(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

int kj__key_from_hex(const char *hex, kj__key *key) {
    if (!hex || strlen(hex) != 32) return -1;
    uint8_t bytes[16];
    for (int i = 0; i < 16; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        bytes[i] = (uint8_t)(hi * 16 + lo);
    }
    memcpy(key->bytes, bytes, 16);
    memcpy(key->hex, hex, 33);
    return 0;
}

void kj__hash128(const void *data, size_t len, uint8_t out[16]) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    memcpy(out, c.digest, 16);
}
