/* The remote cache's configuration (kj_runtime_options.remote_*, else KERNJIT_REMOTE_CACHE,
 * KERNJIT_REMOTE_SECRET, KERNJIT_REMOTE_MODE, KERNJIT_REMOTE_TLS_CA), read and checked once when a
 * runtime is created: a value that is not allowed, or a file named that cannot be read, is a usage
 * error naming it and what is allowed; nothing is contacted. */
#ifndef KJ_REMOTE_CONFIG_H
#define KJ_REMOTE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit.h"
#include "base/log.h"

#define KJ_REMOTE_DEFAULT_PORT 6379
#define KJ_REMOTE_CONNECT_TIMEOUT_MS 50
#define KJ_REMOTE_TIMEOUT_MS 200
#define KJ_REMOTE_SECRET_MIN 16
#define KJ_REMOTE_SECRET_MAX 4096
/* A CA bundle, a certificate chain or a key, at most: the system's bundle is ~220 KB. */
#define KJ_REMOTE_TLS_FILE_MAX (4u << 20)

/* A file the configuration names, read when the configuration is (a key, zeroed when freed). */
typedef struct kj__remote_file {
    char *path; /* as given; NULL: not given */
    char *data;
    size_t len;
} kj__remote_file;

typedef struct kj__remote_config {
    char *url;  /* for messages: as given, a password replaced by "***" */
    char *host; /* TCP: a name, or an IPv4 or IPv6 address (without brackets) */
    int port;
    char *socket_path;     /* a unix socket instead of host and port */
    char *user, *password; /* NULL when not given */
    int db;
    unsigned connect_timeout_ms, timeout_ms;
    kj_remote_mode mode; /* KJ_REMOTE_READ or KJ_REMOTE_READWRITE */
    uint8_t *secret;     /* NULL: values are neither signed nor required to be */
    size_t secret_len;
    int tls;                  /* rediss:// */
    int tls_verify;           /* 0: tls_verify=no, the server's certificate is not checked */
    kj__remote_file tls_ca;   /* the CAs the server's chain must end at; none: the system's store */
    kj__remote_file tls_cert; /* the client's certificate (and its chain) and key: both or neither */
    kj__remote_file tls_key;
} kj__remote_config;

/* Reads the configuration into *cfg. *configured = 0 when no remote cache is asked for (no URL, or
 * KJ_REMOTE_OFF): then the secret and the mode are not read either. KJ_ERR_USAGE names the bad value
 * (a malformed URL or option, an unknown mode, a secret too short, a secret, CA, certificate or key
 * file that cannot be read) and what is allowed. A secret or key file that others may read is a
 * warning. */
kj_status kj__remote_config_read(const kj_runtime_options *options, const kj__logger *log, kj__remote_config *cfg,
                                 int *configured);
void kj__remote_config_free(kj__remote_config *cfg);

/* A secret given as KERNJIT_REMOTE_SECRET is (an absolute path names a file holding it, anything else
 * is the secret itself; 16 to 4096 bytes), for another tier that verifies signatures (seed.h):
 * *secret malloc'd (zero it before freeing). KJ_ERR_USAGE names `what` and what is allowed. */
kj_status kj__secret_read(const char *what, const char *value, const kj__logger *log, uint8_t **secret, size_t *len);

#endif
