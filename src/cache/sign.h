/* Signatures of what the remote cache holds: HMAC-SHA256 under the fleet's secret, computed by
 * OpenSSL's libcrypto (loaded at run time, as the driver is, so that kernjit needs it only when a
 * secret is set), and compared in constant time (CRYPTO_memcmp): a reader learns nothing from how
 * long a wrong signature takes to refuse. */
#ifndef KJ_SIGN_H
#define KJ_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit.h"

#define KJ_SIGNATURE_BYTES 32

/* Loads libcrypto once per process (libcrypto.so.3, else libcrypto.so.1.1). KJ_ERR_UNSUPPORTED names
 * what is missing. Thread-safe. */
kj_status kj__sign_load(void);

/* HMAC-SHA256 under secret of the parts laid end to end, into mac. 0, or -1 when libcrypto is not
 * loaded or memory runs out. */
int kj__sign(const uint8_t *secret, size_t secret_len, size_t parts, const void *const *data, const size_t *lens,
             uint8_t mac[KJ_SIGNATURE_BYTES]);

/* 1 when the two signatures are equal, compared in constant time. */
int kj__sign_equal(const uint8_t a[KJ_SIGNATURE_BYTES], const uint8_t b[KJ_SIGNATURE_BYTES]);

/* A signed value (what the remote cache holds under a secret, and a signed seed entry): the value,
 * then a trailer of KJ_SIGNED_TRAILER_BYTES: "KJSIG256" and the HMAC-SHA256 of the value's name, a
 * NUL and the value. The name (the remote's key for an entry: its format, target and cache key) binds
 * the signature to the place of the value, so that a signed value moved to another name is refused. */
#define KJ_SIGNED_TRAILER_BYTES (8 + KJ_SIGNATURE_BYTES)

/* The HMAC of a named value, as the trailer holds it: 0, or -1 (kj__sign's failures). */
int kj__sign_named(const uint8_t *secret, size_t secret_len, const char *name, const void *data, size_t size,
                   uint8_t mac[KJ_SIGNATURE_BYTES]);
/* data (malloc'd, size bytes) with its trailer appended (realloc'd): *sealed_size set. NULL when it
 * cannot be signed (libcrypto, memory); data is freed then. */
uint8_t *kj__sign_seal(const uint8_t *secret, size_t secret_len, const char *name, uint8_t *data, size_t size,
                       size_t *sealed_size);
/* The value's length without its trailer: n less the trailer when v ends with one (its magic), else n. */
size_t kj__sign_unsealed_size(const uint8_t *v, size_t n);
/* Checks the trailer of v (n bytes) against the secret: 0 with *len the value's length, or -1 with why
 * (not signed; cannot be checked; signed with another secret or changed). */
int kj__sign_verify(const uint8_t *secret, size_t secret_len, const char *name, const uint8_t *v, size_t n, size_t *len,
                    char *why, size_t why_size);

#endif
