/* The cache key: XXH3-128 over every input that changes the binary, and nothing else. */
#ifndef KJ_KEY_H
#define KJ_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "jit/unit.h"

/* Bump when the entry format changes (cache.c writes it in every entry's header). */
#define KJ_CACHE_FORMAT_VERSION 1
/* Hashed first into every key: bump when the meaning of any key input changes, so that no key made
 * the old way can name a binary made the new way. 2: include lines rewritten to canonical names, and
 * the toolkit's fingerprint. 3: programs of several sources, linking apart from the device runtime. */
#define KJ_KEY_VERSION 3

typedef struct kj__key {
    uint8_t bytes[16];
    char hex[33];
} kj__key;

typedef struct kj__key_input {
    int nvrtc_version; /* major * 1000 + minor * 10 */
    int linked;        /* linked by nvJitLink: its version counts */
    int nvjitlink_version;
    const uint8_t *devrt_hash;  /* 16 bytes: XXH3-128 of libcudadevrt.a when it is linked, else NULL */
    const char *arch;           /* "sm_90", or "compute_90" when PTX is kept */
    const char *const *options; /* the full NVRTC option list in its canonical order */
    size_t option_count;
    const char *name_expression;      /* the C++ entry asked for when it must be lowered, else NULL */
    const kj__source *const *sources; /* each translation unit in order: text, headers, pre-includes */
    size_t source_count;
    const uint8_t *toolkit;     /* 16 bytes (toolkit.h) when NVRTC searches the toolkit's headers, else NULL */
    const char *alone_entry;    /* the entry compiled alone (trim.h), else NULL: the first source's text
                                      then goes to NVRTC with the other entries left out, by the rule of
                                      KJ_TRIM_RULE (and whole when that compile fails): a function of the
                                      text, the entry and the rule */
    const char *const *entries; /* the entries compiled together (kj_request.entries), in order, else
                                      NULL: then the key covers them and not name_expression */
    size_t entry_count;
} kj__key_input;

void kj__key_compute(const kj__key_input *in, kj__key *out);
/* The key a name gives (an entry's file name less ".cubin", a remote value's last part): 0 when hex is
 * exactly 32 lower-case hex digits, as kj__key_compute writes them; -1 otherwise (*key unchanged). */
int kj__key_from_hex(const char *hex, kj__key *key);

/* XXH3-128 of bytes, as 16 big-endian bytes (the canonical form). */
void kj__hash128(const void *data, size_t len, uint8_t out[16]);

#endif
