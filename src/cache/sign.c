#include "cache/sign.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* libcrypto's C interface, declared here so that no OpenSSL header is needed to build: these three
 * functions have had these signatures since OpenSSL 1.1 (EVP_MD is opaque). */
typedef struct evp_md_st EVP_MD;
typedef struct crypto_api {
    unsigned char *(*HMAC)(const EVP_MD *md, const void *key, int key_len, const unsigned char *data, size_t n,
                           unsigned char *out, unsigned int *out_len);
    const EVP_MD *(*EVP_sha256)(void);
    int (*CRYPTO_memcmp)(const void *a, const void *b, size_t len);
} crypto_api;

static crypto_api api;
static int loaded;
static char load_message[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *names[] = {"libcrypto.so.3", "libcrypto.so.1.1"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_message, sizeof load_message,
                 "signing needs OpenSSL's libcrypto (libcrypto.so.3 or .so.1.1), "
                 "which cannot be loaded (%s)",
                 dlerror());
        return;
    }
    *(void **)&api.HMAC = dlsym(h, "HMAC");
    *(void **)&api.EVP_sha256 = dlsym(h, "EVP_sha256");
    *(void **)&api.CRYPTO_memcmp = dlsym(h, "CRYPTO_memcmp");
    if (!api.HMAC || !api.EVP_sha256 || !api.CRYPTO_memcmp) {
        snprintf(load_message, sizeof load_message, "the libcrypto found lacks HMAC, EVP_sha256 or CRYPTO_memcmp");
        return;
    }
    loaded = 1;
}

kj_status kj__sign_load(void) {
    pthread_once(&load_once, load);
    KJ_RETURN_IF(!loaded, KJ_ERR_UNSUPPORTED, "%s", load_message);
    return KJ_OK;
}

int kj__sign(const uint8_t *secret, size_t secret_len, size_t parts, const void *const *data, const size_t *lens,
             uint8_t mac[KJ_SIGNATURE_BYTES]) {
    if (kj__sign_load() != KJ_OK) return -1;
    size_t total = 0;
    for (size_t i = 0; i < parts; i++) total += lens[i];
    unsigned char *joined = malloc(total ? total : 1);
    if (!joined) return -1;
    size_t at = 0;
    for (size_t i = 0; i < parts; i++) {
        if (lens[i]) memcpy(joined + at, data[i], lens[i]);
        at += lens[i];
    }
    unsigned int n = 0;
    int ok = api.HMAC(api.EVP_sha256(), secret, (int)secret_len, joined, total, mac, &n) && n == KJ_SIGNATURE_BYTES;
    free(joined);
    return ok ? 0 : -1;
}

int kj__sign_equal(const uint8_t a[KJ_SIGNATURE_BYTES], const uint8_t b[KJ_SIGNATURE_BYTES]) {
    return loaded && api.CRYPTO_memcmp(a, b, KJ_SIGNATURE_BYTES) == 0;
}

static const char SIG_MAGIC[8] = {'K', 'J', 'S', 'I', 'G', '2', '5', '6'};

int kj__sign_named(const uint8_t *secret, size_t secret_len, const char *name, const void *data, size_t size,
                   uint8_t mac[KJ_SIGNATURE_BYTES]) {
    const void *parts[] = {name, "", data};
    size_t lens[] = {strlen(name), 1, size};
    return kj__sign(secret, secret_len, 3, parts, lens, mac);
}

uint8_t *kj__sign_seal(const uint8_t *secret, size_t secret_len, const char *name, uint8_t *data, size_t size,
                       size_t *sealed_size) {
    uint8_t *grown = realloc(data, size + KJ_SIGNED_TRAILER_BYTES);
    if (!grown || kj__sign_named(secret, secret_len, name, grown, size, grown + size + sizeof SIG_MAGIC) != 0) {
        free(grown ? grown : data);
        return NULL;
    }
    memcpy(grown + size, SIG_MAGIC, sizeof SIG_MAGIC);
    *sealed_size = size + KJ_SIGNED_TRAILER_BYTES;
    return grown;
}

size_t kj__sign_unsealed_size(const uint8_t *v, size_t n) {
    int sealed = n >= KJ_SIGNED_TRAILER_BYTES &&
                 memcmp(v + n - KJ_SIGNED_TRAILER_BYTES, SIG_MAGIC, sizeof SIG_MAGIC) == 0;
    return sealed ? n - KJ_SIGNED_TRAILER_BYTES : n;
}

int kj__sign_verify(const uint8_t *secret, size_t secret_len, const char *name, const uint8_t *v, size_t n, size_t *len,
                    char *why, size_t why_size) {
    *len = kj__sign_unsealed_size(v, n);
    uint8_t want[KJ_SIGNATURE_BYTES];
    if (*len == n) {
        snprintf(why, why_size, "not signed, and this process requires signatures (a secret is set)");
        return -1;
    }
    if (kj__sign_named(secret, secret_len, name, v, *len, want) != 0) {
        snprintf(why, why_size, "its signature cannot be checked (libcrypto failed)");
        return -1;
    }
    if (!kj__sign_equal(want, v + *len + sizeof SIG_MAGIC)) {
        snprintf(why, why_size, "signed with another secret, or changed after it was signed");
        return -1;
    }
    return 0;
}
