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

#endif
