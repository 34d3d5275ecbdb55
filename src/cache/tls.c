#include "cache/tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"

/* libssl's and libcrypto's C interface, declared here so that no OpenSSL header is needed to build:
 * these functions and numbers are the same in OpenSSL 1.1.1 and 3, and every struct is opaque. Where
 * the headers have a macro, its call is written out (SSL_CTX_set_min_proto_version is SSL_CTX_ctrl).
 * The libcrypto functions are looked up through libssl's handle, so that they are the very libcrypto
 * this libssl uses. */
typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_method_st SSL_METHOD;
typedef struct x509_st X509;
typedef struct x509_store_st X509_STORE;
typedef struct X509_VERIFY_PARAM_st X509_VERIFY_PARAM;
typedef struct evp_pkey_st EVP_PKEY;
typedef struct bio_st BIO;
typedef int pem_password_cb(char *buf, int size, int rwflag, void *user);

#define SSL_VERIFY_PEER 0x01
#define SSL_ERROR_SSL 1
#define SSL_ERROR_WANT_READ 2
#define SSL_ERROR_WANT_WRITE 3
#define SSL_ERROR_SYSCALL 5
#define SSL_ERROR_ZERO_RETURN 6
#define SSL_CTRL_EXTRA_CHAIN_CERT 14
#define SSL_CTRL_SET_TLSEXT_HOSTNAME 55
#define SSL_CTRL_SET_MIN_PROTO_VERSION 123
#define TLS1_2_VERSION 0x0303
#define TLSEXT_NAMETYPE_host_name 0
#define X509_V_OK 0
#define ERR_REASON_MASK 0xfff                  /* the bits of a reason in 1.1.1 and 3 alike */
#define SSL_R_UNEXPECTED_EOF_WHILE_READING 294 /* OpenSSL 3: closed without TLS's close_notify */
#define SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED 1116
#define MIN_VERSION 0x10101000UL /* 1.1.1: TLS 1.3, SSL_set1_host */

#define TLS_SYMBOLS(X)                                                                                                 \
    X(OpenSSL_version_num, unsigned long, (void))                                                                      \
    X(TLS_client_method, const SSL_METHOD *, (void))                                                                   \
    X(SSL_CTX_new, SSL_CTX *, (const SSL_METHOD *method))                                                              \
    X(SSL_CTX_free, void, (SSL_CTX * ctx))                                                                             \
    X(SSL_CTX_ctrl, long, (SSL_CTX * ctx, int cmd, long larg, void *parg))                                             \
    X(SSL_CTX_set_verify, void, (SSL_CTX * ctx, int mode, int (*callback)(int, void *)))                               \
    X(SSL_CTX_set_default_verify_paths, int, (SSL_CTX * ctx))                                                          \
    X(SSL_CTX_get_cert_store, X509_STORE *, (const SSL_CTX *ctx))                                                      \
    X(SSL_CTX_use_certificate, int, (SSL_CTX * ctx, X509 * x))                                                         \
    X(SSL_CTX_use_PrivateKey, int, (SSL_CTX * ctx, EVP_PKEY * key))                                                    \
    X(SSL_CTX_check_private_key, int, (const SSL_CTX *ctx))                                                            \
    X(SSL_new, SSL *, (SSL_CTX * ctx))                                                                                 \
    X(SSL_free, void, (SSL * ssl))                                                                                     \
    X(SSL_set_fd, int, (SSL * ssl, int fd))                                                                            \
    X(SSL_ctrl, long, (SSL * ssl, int cmd, long larg, void *parg))                                                     \
    X(SSL_set1_host, int, (SSL * ssl, const char *host))                                                               \
    X(SSL_get0_param, X509_VERIFY_PARAM *, (SSL * ssl))                                                                \
    X(X509_VERIFY_PARAM_set1_ip_asc, int, (X509_VERIFY_PARAM * param, const char *ip))                                 \
    X(SSL_connect, int, (SSL * ssl))                                                                                   \
    X(SSL_read, int, (SSL * ssl, void *buf, int n))                                                                    \
    X(SSL_write, int, (SSL * ssl, const void *buf, int n))                                                             \
    X(SSL_get_error, int, (const SSL *ssl, int ret))                                                                   \
    X(SSL_get_verify_result, long, (const SSL *ssl))                                                                   \
    X(X509_verify_cert_error_string, const char *, (long n))                                                           \
    X(BIO_new_mem_buf, BIO *, (const void *data, int n))                                                               \
    X(BIO_free, int, (BIO * bio))                                                                                      \
    X(PEM_read_bio_X509, X509 *, (BIO * bio, X509 * *x, pem_password_cb * cb, void *user))                             \
    X(PEM_read_bio_PrivateKey, EVP_PKEY *, (BIO * bio, EVP_PKEY * *x, pem_password_cb * cb, void *user))               \
    X(X509_STORE_add_cert, int, (X509_STORE * store, X509 * x))                                                        \
    X(X509_free, void, (X509 * x))                                                                                     \
    X(EVP_PKEY_free, void, (EVP_PKEY * key))                                                                           \
    X(ERR_get_error, unsigned long, (void))                                                                            \
    X(ERR_clear_error, void, (void))                                                                                   \
    X(ERR_reason_error_string, const char *, (unsigned long e))                                                        \
    X(ERR_error_string_n, void, (unsigned long e, char *buf, size_t len))

typedef struct ssl_api {
#define TLS_FIELD_(name, ret, params) ret(*name) params;
    TLS_SYMBOLS(TLS_FIELD_)
#undef TLS_FIELD_
} ssl_api;

static ssl_api api;
static unsigned long version;
static int loaded;
static char load_message[640];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *names[] = {"libssl.so.3", "libssl.so.1.1"};
    char first[400] = "";
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        const char *e = h ? NULL : dlerror();
        if (!h && !first[0]) snprintf(first, sizeof first, "%s", e ? e : names[i]);
    }
    if (!h) {
        snprintf(load_message, sizeof load_message,
                 "TLS (rediss://) needs OpenSSL's libssl (libssl.so.3 or "
                 "libssl.so.1.1), which cannot be loaded (%s): install it (Debian and Ubuntu: libssl3)",
                 first);
        return;
    }
#define TLS_LOOKUP_(name, ret, params)                                                                                 \
    api.name = (ret(*) params)dlsym(h, #name);                                                                         \
    if (!api.name) {                                                                                                   \
        snprintf(load_message, sizeof load_message,                                                                    \
                 "TLS (rediss://): the libssl found lacks %s: OpenSSL 1.1.1 or "                                       \
                 "later is needed",                                                                                    \
                 #name);                                                                                               \
        return;                                                                                                        \
    }
    TLS_SYMBOLS(TLS_LOOKUP_)
#undef TLS_LOOKUP_
    version = api.OpenSSL_version_num();
    if (version < MIN_VERSION) {
        snprintf(load_message, sizeof load_message,
                 "TLS (rediss://): the libssl found is OpenSSL %lu.%lu.%lu; 1.1.1 "
                 "or later is needed",
                 version >> 28, (version >> 20) & 0xff, (version >> 12) & 0xff);
        return;
    }
    loaded = 1;
}

/* ---- SIGPIPE ---------------------------------------------------------------------------------- */

/* OpenSSL writes to the socket with write(), which raises SIGPIPE on a connection the server closed
 * (send's MSG_NOSIGNAL is not OpenSSL's to give). So SIGPIPE is blocked in this thread around each
 * step, and one raised meanwhile is taken back before it is unblocked: the host program's
 * disposition is untouched. One that was pending before stays pending. */
typedef struct quiet {
    sigset_t old;
    int was_pending;
} quiet;

static void quiet_begin(quiet *q) {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &q->old);
    q->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

static void quiet_end(quiet *q) {
    int saved = errno;
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!q->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
        struct timespec now = {0, 0};
        while (sigtimedwait(&pipe, NULL, &now) < 0 && errno == EINTR) continue;
    }
    pthread_sigmask(SIG_SETMASK, &q->old, NULL);
    errno = saved;
}

/* ---- the context ------------------------------------------------------------------------------ */

struct kj__tls {
    const kj__remote_config *cfg;
    SSL_CTX *ctx;
};

struct kj__tls_conn {
    kj__tls *t;
    SSL *ssl;
};

/* A key with a passphrase is refused rather than asked for: OpenSSL's own callback reads the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *user) {
    (void)buf, (void)size, (void)rwflag, (void)user;
    return -1;
}

/* OpenSSL's reason for its last error (its queue emptied), for messages. */
static const char *reason(char *buf, size_t size) {
    unsigned long e = api.ERR_get_error();
    while (api.ERR_get_error() != 0) continue;
    const char *r = e ? api.ERR_reason_error_string(e) : NULL;
    if (r) snprintf(buf, size, "%s", r);
    else if (e) api.ERR_error_string_n(e, buf, size);
    else snprintf(buf, size, "no reason given");
    return buf;
}

/* Each PEM certificate of f in order, handed to take (0 when taken); how many, or -1 when take failed. */
static int each_cert(kj__tls *t, const kj__remote_file *f, int (*take)(kj__tls *t, X509 *x, int i)) {
    BIO *bio = api.BIO_new_mem_buf(f->data, (int)f->len);
    if (!bio) return -1;
    int n = 0;
    X509 *x;
    while ((x = api.PEM_read_bio_X509(bio, NULL, no_passphrase, NULL)) != NULL)
        if (take(t, x, n++) != 0) {
            n = -1;
            break;
        }
    api.BIO_free(bio);
    if (n >= 0) api.ERR_clear_error(); /* the end of the file is an error to PEM_read_bio_X509 */
    return n;
}

static int take_ca(kj__tls *t, X509 *x, int i) {
    (void)i;
    api.X509_STORE_add_cert(api.SSL_CTX_get_cert_store(t->ctx), x); /* a certificate twice is no fault */
    api.X509_free(x);
    return 0;
}

/* The client's certificate, then the intermediates that lead to the server's CA. */
static int take_chain(kj__tls *t, X509 *x, int i) {
    if (i == 0) {
        int ok = api.SSL_CTX_use_certificate(t->ctx, x) == 1;
        api.X509_free(x);
        return ok ? 0 : -1;
    }
    if (api.SSL_CTX_ctrl(t->ctx, SSL_CTRL_EXTRA_CHAIN_CERT, 0, x) == 1) return 0;
    api.X509_free(x);
    return -1;
}

static kj_status client_certificate(kj__tls *t) {
    const kj__remote_config *cfg = t->cfg;
    char why[256];
    int n = each_cert(t, &cfg->tls_cert, take_chain);
    KJ_RETURN_IF(n < 0, KJ_ERR_USAGE, "tls_cert=%s: the certificate cannot be used: %s", cfg->tls_cert.path,
                 reason(why, sizeof why));
    KJ_RETURN_IF(n == 0, KJ_ERR_USAGE, "tls_cert=%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                 cfg->tls_cert.path);
    BIO *bio = api.BIO_new_mem_buf(cfg->tls_key.data, (int)cfg->tls_key.len);
    EVP_PKEY *key = bio ? api.PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
    if (bio) api.BIO_free(bio);
    KJ_RETURN_IF(!key, KJ_ERR_USAGE, "tls_key=%s holds no PEM private key without a passphrase (%s)", cfg->tls_key.path,
                 reason(why, sizeof why));
    int used = api.SSL_CTX_use_PrivateKey(t->ctx, key) == 1 && api.SSL_CTX_check_private_key(t->ctx) == 1;
    api.EVP_PKEY_free(key);
    KJ_RETURN_IF(!used, KJ_ERR_USAGE, "tls_key=%s is not the key of tls_cert=%s (%s)", cfg->tls_key.path,
                 cfg->tls_cert.path, reason(why, sizeof why));
    return KJ_OK;
}

static kj_status set_up(kj__tls *t, const kj__logger *log) {
    const kj__remote_config *cfg = t->cfg;
    char why[256];
    t->ctx = api.SSL_CTX_new(api.TLS_client_method());
    KJ_RETURN_IF(!t->ctx, KJ_ERR_HOST_MEMORY, "TLS: no context: %s", reason(why, sizeof why));
    KJ_RETURN_IF(api.SSL_CTX_ctrl(t->ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL) != 1,
                 KJ_ERR_UNSUPPORTED, "TLS: this libssl cannot be held to TLS 1.2 or later: %s",
                 reason(why, sizeof why));
    if (cfg->tls_ca.path) {
        int n = each_cert(t, &cfg->tls_ca, take_ca);
        KJ_RETURN_IF(n <= 0, KJ_ERR_USAGE, "the CA file %s holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                     cfg->tls_ca.path);
    } else if (cfg->tls_verify && api.SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        return KJ_FAIL(KJ_ERR_UNSUPPORTED, "TLS: the system's CA store cannot be read (%s): give tls_ca=FILE",
                       reason(why, sizeof why));
    }
    if (cfg->tls_verify) api.SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    else
        kj__log(log, KJ_LOG_WARN,
                "remote cache %s: tls_verify=no: the server's certificate is not checked, so anyone "
                "on the way to it can pose as the server, read the password and what passes, and hand this machine "
                "kernels to run: check the certificate (tls_ca=FILE), or at least sign the values "
                "(KERNJIT_REMOTE_SECRET)",
                cfg->url);
    if (cfg->tls_cert.path) KJ_FORWARD(client_certificate(t));
    return KJ_OK;
}

kj_status kj__tls_create(const kj__remote_config *cfg, const kj__logger *log, kj__tls **out) {
    *out = NULL;
    pthread_once(&load_once, load);
    KJ_RETURN_IF(!loaded, KJ_ERR_UNSUPPORTED, "%s", load_message);
    kj__tls *t = calloc(1, sizeof *t);
    if (!t) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    t->cfg = cfg;
    api.ERR_clear_error();
    kj_status s = set_up(t, log);
    api.ERR_clear_error();
    if (s != KJ_OK) {
        kj__tls_destroy(t);
        return s;
    }
    *out = t;
    return KJ_OK;
}

void kj__tls_destroy(kj__tls *t) {
    if (!t) return;
    if (t->ctx) api.SSL_CTX_free(t->ctx);
    free(t);
}

/* ---- connections ------------------------------------------------------------------------------ */

kj__tls_conn *kj__tls_conn_new(kj__tls *t, int fd, char *why, size_t why_size) {
    kj__tls_conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    c->t = t;
    const kj__remote_config *cfg = t->cfg;
    unsigned char address[16];
    int numeric = inet_pton(AF_INET, cfg->host, address) == 1 || inet_pton(AF_INET6, cfg->host, address) == 1;
    api.ERR_clear_error();
    int ok = (c->ssl = api.SSL_new(t->ctx)) != NULL && api.SSL_set_fd(c->ssl, fd) == 1;
    /* SNI for a name (an address is not sent, RFC 6066); the name checked as a name, an address as one */
    if (ok && !numeric)
        ok = api.SSL_ctrl(c->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, cfg->host) == 1;
    if (ok && cfg->tls_verify)
        ok = numeric ? api.X509_VERIFY_PARAM_set1_ip_asc(api.SSL_get0_param(c->ssl), cfg->host) == 1
                     : api.SSL_set1_host(c->ssl, cfg->host) == 1;
    if (!ok) {
        char r[256];
        snprintf(why, why_size, "TLS: %s", reason(r, sizeof r));
        kj__tls_conn_free(c);
        return NULL;
    }
    return c;
}

void kj__tls_conn_free(kj__tls_conn *c) {
    if (!c) return;
    /* no close_notify: the connection is closed, or given up on, and nothing waits for it */
    if (c->ssl) api.SSL_free(c->ssl);
    free(c);
}

/* A step that returned rc <= 0 (errno_then: errno right after it): what it waits for, or why it failed. */
static ssize_t step_failed(kj__tls_conn *c, int rc, int errno_then, short *wait, int *err, char *why, size_t why_size) {
    const kj__remote_config *cfg = c->t->cfg;
    int code = api.SSL_get_error(c->ssl, rc);
    *wait = 0;
    if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
        *wait = code == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 0;
    }
    if (code == SSL_ERROR_ZERO_RETURN) {
        *err = 0;
        return -1;
    }
    if (code == SSL_ERROR_SYSCALL && errno_then == EINTR) {
        api.ERR_clear_error();
        return 0; /* again, at once */
    }
    unsigned long e = api.ERR_get_error();
    /* without the checks, the result of a verification nobody asked for says nothing */
    long verified = cfg->tls_verify ? api.SSL_get_verify_result(c->ssl) : X509_V_OK;
    int why_e = e ? (int)(e & ERR_REASON_MASK) : 0;
    if (code == SSL_ERROR_SYSCALL && !e) {
        *err = errno_then; /* 0: the server closed the connection */
        return -1;
    }
    if (code == SSL_ERROR_SSL && verified == X509_V_OK && version >= 0x30000000UL &&
        why_e == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        api.ERR_clear_error();
        *err = 0;
        return -1;
    }
    *err = -1;
    if (verified != X509_V_OK) {
        api.ERR_clear_error();
        snprintf(why, why_size,
                 "TLS: the server's certificate does not verify: %s (it must name %s and come from a "
                 "CA %s%s)",
                 api.X509_verify_cert_error_string(verified), cfg->host,
                 cfg->tls_ca.path ? "in " : "of the system's store", cfg->tls_ca.path ? cfg->tls_ca.path : "");
        return -1;
    }
    char r[256];
    const char *text = api.ERR_reason_error_string(e);
    if (!text && e) api.ERR_error_string_n(e, r, sizeof r);
    else snprintf(r, sizeof r, "%s", text ? text : "an error OpenSSL gave no reason for");
    api.ERR_clear_error();
    snprintf(why, why_size, "TLS: %s%s", r,
             why_e == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED && !cfg->tls_cert.path
                 ? " (the server requires a client certificate: give tls_cert=FILE and tls_key=FILE)"
                 : "");
    return -1;
}

ssize_t kj__tls_handshake(kj__tls_conn *c, short *wait, int *err, char *why, size_t why_size) {
    quiet q;
    quiet_begin(&q);
    api.ERR_clear_error();
    errno = 0;
    int rc = api.SSL_connect(c->ssl);
    ssize_t result = rc == 1 ? 1 : step_failed(c, rc, errno, wait, err, why, why_size);
    quiet_end(&q);
    return result;
}

/* A write that failed because the server closed the connection: the server may have said why before
 * it closed (an alert: a client certificate it requires), which is then the message. */
static void last_words(kj__tls_conn *c, int *err, char *why, size_t why_size) {
    char scratch[512], said[512];
    short wait;
    int read_err = 0;
    api.ERR_clear_error();
    errno = 0;
    int rc = api.SSL_read(c->ssl, scratch, sizeof scratch);
    if (rc <= 0 && step_failed(c, rc, errno, &wait, &read_err, said, sizeof said) < 0 && read_err < 0) {
        snprintf(why, why_size, "%s", said);
        *err = -1;
    }
    api.ERR_clear_error();
}

ssize_t kj__tls_send(kj__tls_conn *c, const void *data, size_t n, short *wait, int *err, char *why, size_t why_size) {
    quiet q;
    quiet_begin(&q);
    api.ERR_clear_error();
    errno = 0;
    int rc = api.SSL_write(c->ssl, data, n > INT_MAX ? INT_MAX : (int)n);
    ssize_t result = rc > 0 ? rc : step_failed(c, rc, errno, wait, err, why, why_size);
    if (result < 0 && (*err == EPIPE || *err == ECONNRESET)) last_words(c, err, why, why_size);
    quiet_end(&q);
    return result;
}

ssize_t kj__tls_recv(kj__tls_conn *c, void *data, size_t n, short *wait, int *err, char *why, size_t why_size) {
    quiet q;
    quiet_begin(&q); /* a read may write: an alert, an answer to the server's key update */
    api.ERR_clear_error();
    errno = 0;
    int rc = api.SSL_read(c->ssl, data, n > INT_MAX ? INT_MAX : (int)n);
    ssize_t result = rc > 0 ? rc : step_failed(c, rc, errno, wait, err, why, why_size);
    quiet_end(&q);
    return result;
}
