/* TLS for the remote cache's connections (rediss://), through OpenSSL's libssl loaded at run time
 * (libssl.so.3, else libssl.so.1.1; 1.1.1 or later), so that kernjit builds with no OpenSSL header and
 * runs without libssl wherever TLS is not asked for. TLS 1.2 at least; the server's chain checked
 * against the configuration's CAs (tls_ca) or the system's store, and its name against the URL's host
 * (SNI for a name); the client's certificate and key when given. Every step is non-blocking: the
 * caller polls the socket for what the step says it waits for, under its own deadline (redis.c).
 * No step raises SIGPIPE: it is blocked in the calling thread while OpenSSL writes, and one raised
 * then is taken back. */
#ifndef KJ_TLS_H
#define KJ_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "kernjit.h"
#include "base/log.h"
#include "cache/remote_config.h"

typedef struct kj__tls kj__tls;
typedef struct kj__tls_conn kj__tls_conn;

/* Loads libssl (once per process) and sets up what cfg's connections share: its CAs, its client
 * certificate, the checks. KJ_ERR_UNSUPPORTED when libssl cannot be loaded or is too old,
 * KJ_ERR_USAGE when a file holds no usable certificate or key (each naming the library or the file).
 * tls_verify=no is a warning through log, every time. cfg must outlive the result. */
kj_status kj__tls_create(const kj__remote_config *cfg, const kj__logger *log, kj__tls **out);
void kj__tls_destroy(kj__tls *t);

/* TLS over the connected, non-blocking socket fd (which stays the caller's to close). NULL and why
 * when out of memory. */
kj__tls_conn *kj__tls_conn_new(kj__tls *t, int fd, char *why, size_t why_size);
void kj__tls_conn_free(kj__tls_conn *c);

/* Each step: > 0 when done (the handshake) or bytes moved (send, recv); 0 when it must wait for
 * *wait's poll events on the socket, then be called again with the same arguments; -1 when it failed:
 * *err is an errno (0: the server closed the connection), or -1 with why saying what TLS refused
 * (the server's certificate and why it does not verify, an alert from the server). */
ssize_t kj__tls_handshake(kj__tls_conn *c, short *wait, int *err, char *why, size_t why_size);
ssize_t kj__tls_send(kj__tls_conn *c, const void *data, size_t n, short *wait, int *err, char *why, size_t why_size);
ssize_t kj__tls_recv(kj__tls_conn *c, void *data, size_t n, short *wait, int *err, char *why, size_t why_size);

#endif
