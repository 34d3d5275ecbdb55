#include "cache/remote_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/util.h"

#define URL_FORMS "redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?OPTIONS] or unix:///PATH[?OPTIONS]"
#define OPTION_NAMES                                                                                                   \
    "connect_timeout=MS, timeout=MS, db=N (unix sockets), tls_ca=FILE, tls_cert=FILE, tls_key=FILE, tls_verify=no "    \
    "(rediss://)"

static void file_free(kj__remote_file *f, int secret) {
    if (secret && f->data) memset(f->data, 0, f->len);
    kj__free_all(f->path, f->data);
}

void kj__remote_config_free(kj__remote_config *c) {
    if (!c) return;
    if (c->secret) memset(c->secret, 0, c->secret_len);
    kj__free_all(c->url, c->host, c->socket_path, c->user, c->password, c->secret);
    file_free(&c->tls_ca, 0);
    file_free(&c->tls_cert, 0);
    file_free(&c->tls_key, 1);
    memset(c, 0, sizeof *c);
}

/* A decimal number from min to max, the whole of [s, s + n). */
static int number(const char *s, size_t n, long min, long max, long *out) {
    if (n == 0 || n > 9) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < min || v > max) return -1;
    *out = v;
    return 0;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* [s, s + n) with %XX decoded (user names and passwords may hold any byte); NULL when malformed. */
static char *percent_decoded(const char *s, size_t n) {
    char *out = malloc(n + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            *o++ = s[i];
            continue;
        }
        int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1;
        int lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            return NULL;
        }
        *o++ = (char)(hi * 16 + lo);
        i += 2;
    }
    *o = '\0';
    return out;
}

/* The query string "a=1&b=2" after '?'. */
static kj_status parse_options(const char *what, const char *url, const char *q, int unix_socket,
                               kj__remote_config *c) {
    int db_given = 0, verify_given = 0;
    while (*q) {
        size_t n = strcspn(q, "&");
        const char *eq = memchr(q, '=', n);
        KJ_RETURN_IF(!eq, KJ_ERR_USAGE, "%s='%s': option '%.*s' has no value; the options are %s", what, url, (int)n, q,
                     OPTION_NAMES);
        size_t name_len = (size_t)(eq - q), value_len = n - name_len - 1;
        const char *value = eq + 1;
        long v;
        kj__remote_file *file = NULL;
        if (name_len == 6 && strncmp(q, "tls_ca", 6) == 0) file = &c->tls_ca;
        else if (name_len == 8 && strncmp(q, "tls_cert", 8) == 0) file = &c->tls_cert;
        else if (name_len == 7 && strncmp(q, "tls_key", 7) == 0) file = &c->tls_key;
        if ((file || (name_len == 10 && strncmp(q, "tls_verify", 10) == 0)) && !c->tls)
            return KJ_FAIL(KJ_ERR_USAGE,
                           "%s='%s': %.*s is an option of TLS: give rediss://HOST[:PORT] for a server "
                           "that speaks TLS",
                           what, url, (int)name_len, q);
        if (file) {
            KJ_RETURN_IF(file->path, KJ_ERR_USAGE, "%s='%s': %.*s is given twice", what, url, (int)name_len, q);
            KJ_RETURN_IF(value_len == 0, KJ_ERR_USAGE, "%s='%s': %.*s names a file: %.*s=FILE", what, url,
                         (int)name_len, q, (int)name_len, q);
            /* a path may hold bytes a URL cannot (a space): %XX */
            if (!(file->path = percent_decoded(value, value_len)))
                return KJ_FAIL(KJ_ERR_USAGE, "%s='%s': %.*s has a malformed %%XX escape", what, url, (int)name_len, q);
        } else if (name_len == 10 && strncmp(q, "tls_verify", 10) == 0) {
            KJ_RETURN_IF(verify_given++, KJ_ERR_USAGE, "%s='%s': tls_verify is given twice", what, url);
            if (value_len == 3 && strncmp(value, "yes", 3) == 0) c->tls_verify = 1;
            else if (value_len == 2 && strncmp(value, "no", 2) == 0) c->tls_verify = 0;
            else
                return KJ_FAIL(KJ_ERR_USAGE,
                               "%s='%s': tls_verify is yes (the default: the server's certificate and "
                               "name are checked) or no (nothing is checked)",
                               what, url);
        } else if (name_len == 15 && strncmp(q, "connect_timeout", 15) == 0) {
            KJ_RETURN_IF(number(value, value_len, 1, 60000, &v) != 0, KJ_ERR_USAGE,
                         "%s='%s': connect_timeout is milliseconds from 1 to 60000", what, url);
            c->connect_timeout_ms = (unsigned)v;
        } else if (name_len == 7 && strncmp(q, "timeout", 7) == 0) {
            KJ_RETURN_IF(number(value, value_len, 1, 600000, &v) != 0, KJ_ERR_USAGE,
                         "%s='%s': timeout is milliseconds from 1 to 600000", what, url);
            c->timeout_ms = (unsigned)v;
        } else if (name_len == 2 && strncmp(q, "db", 2) == 0 && unix_socket) {
            KJ_RETURN_IF(number(value, value_len, 0, 999999999, &v) != 0, KJ_ERR_USAGE,
                         "%s='%s': db is a database number", what, url);
            c->db = (int)v;
            db_given++;
        } else if (name_len == 2 && strncmp(q, "db", 2) == 0) {
            return KJ_FAIL(KJ_ERR_USAGE, "%s='%s': give the database in the path, %s://HOST:PORT/DB", what, url,
                           c->tls ? "rediss" : "redis");
        } else {
            return KJ_FAIL(KJ_ERR_USAGE, "%s='%s': unknown option '%.*s'; the options are %s", what, url, (int)name_len,
                           q, OPTION_NAMES);
        }
        q += n;
        if (*q == '&') q++;
    }
    KJ_RETURN_IF(db_given > 1, KJ_ERR_USAGE, "%s='%s': db is given twice", what, url);
    KJ_RETURN_IF(!c->tls_cert.path != !c->tls_key.path, KJ_ERR_USAGE,
                 "%s='%s': %s without %s: a client certificate is tls_cert=FILE and tls_key=FILE (its private key, "
                 "which may be the same file)",
                 what, url, c->tls_cert.path ? "tls_cert" : "tls_key", c->tls_cert.path ? "tls_key" : "tls_cert");
    return KJ_OK;
}

/* "[USER]:PASSWORD" before '@' */
static kj_status parse_userinfo(const char *what, const char *url, const char *s, size_t n, kj__remote_config *c) {
    const char *colon = memchr(s, ':', n);
    KJ_RETURN_IF(!colon, KJ_ERR_USAGE, "%s='%s': write the credentials as USER:PASSWORD@ or :PASSWORD@", what, url);
    size_t ulen = (size_t)(colon - s), plen = n - ulen - 1;
    KJ_RETURN_IF(plen == 0, KJ_ERR_USAGE, "%s='%s': the password before '@' is empty", what, url);
    if (ulen && !(c->user = percent_decoded(s, ulen)))
        return KJ_FAIL(KJ_ERR_USAGE, "%s='%s': the user name has a malformed %%XX escape", what, url);
    if (!(c->password = percent_decoded(colon + 1, plen)))
        return KJ_FAIL(KJ_ERR_USAGE, "%s='%s': the password has a malformed %%XX escape", what, url);
    return KJ_OK;
}

/* HOST[:PORT][/DB] of a redis:// URL, [s, s + n). */
static kj_status parse_host(const char *what, const char *url, const char *s, size_t n, kj__remote_config *c) {
    const char *end = s + n, *host = s, *host_end, *p;
    if (*s == '[') {
        host = s + 1;
        host_end = memchr(host, ']', n - 1);
        KJ_RETURN_IF(!host_end || host_end == host, KJ_ERR_USAGE, "%s='%s': an IPv6 address is written [ADDRESS]", what,
                     url);
        for (const char *h = host; h < host_end; h++)
            KJ_RETURN_IF(!isxdigit((unsigned char)*h) && *h != ':' && *h != '.', KJ_ERR_USAGE,
                         "%s='%s': '%.*s' is not an IPv6 address", what, url, (int)(host_end - host), host);
        p = host_end + 1;
    } else {
        host_end = host;
        while (host_end < end &&
               (isalnum((unsigned char)*host_end) || *host_end == '.' || *host_end == '-' || *host_end == '_'))
            host_end++;
        KJ_RETURN_IF(host_end == host, KJ_ERR_USAGE, "%s='%s': no host: the forms are %s", what, url, URL_FORMS);
        p = host_end;
    }
    KJ_RETURN_IF(host_end - host > 253, KJ_ERR_USAGE, "%s='%s': the host name is longer than 253 characters", what,
                 url);
    c->host = kj__strndup(host, (size_t)(host_end - host));
    c->port = KJ_REMOTE_DEFAULT_PORT;
    if (p < end && *p == ':') {
        const char *q = ++p;
        while (p < end && *p != '/') p++;
        long v;
        KJ_RETURN_IF(number(q, (size_t)(p - q), 1, 65535, &v) != 0, KJ_ERR_USAGE,
                     "%s='%s': port '%.*s' is not a number from 1 to 65535", what, url, (int)(p - q), q);
        c->port = (int)v;
    }
    if (p < end && *p == '/') {
        const char *q = ++p;
        long v;
        if (p < end) {
            KJ_RETURN_IF(number(q, (size_t)(end - q), 0, 999999999, &v) != 0, KJ_ERR_USAGE,
                         "%s='%s': database '%.*s' is not a number", what, url, (int)(end - q), q);
            c->db = (int)v;
        }
        p = end;
    }
    KJ_RETURN_IF(p != end, KJ_ERR_USAGE, "%s='%s': unexpected '%.*s' after the host: the forms are %s", what, url,
                 (int)(end - p), p, URL_FORMS);
    return c->host ? KJ_OK : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
}

/* The URL for messages, computed before anything else is looked at, so that no message shows a
 * password: the credentials (up to the last '@', which ends them, as URL parsers have it, whatever the
 * password holds: '@', '?', '/') shown as "USER:***" or, without a ':', "***". unix:///PATH has no
 * credentials and is shown as given. */
static char *shown_url(const char *url) {
    if (strncmp(url, "unix:///", 8) == 0) return kj__strdup(url);
    const char *scheme = strstr(url, "://");
    const char *start = scheme ? scheme + 3 : url;
    const char *at = strrchr(start, '@');
    if (!at) return kj__strdup(url);
    const char *colon = memchr(start, ':', (size_t)(at - start));
    const char *keep = colon ? colon + 1 : start;
    return kj__asprintf("%.*s***%s", (int)(keep - url), url, at);
}

static kj_status parse_url(const char *what, const char *url, kj__remote_config *c) {
    for (const char *p = url; *p; p++)
        KJ_RETURN_IF((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f, KJ_ERR_USAGE,
                     "%s has a space, control or non-ASCII character: the forms are %s", what, URL_FORMS);
    c->connect_timeout_ms = KJ_REMOTE_CONNECT_TIMEOUT_MS;
    c->timeout_ms = KJ_REMOTE_TIMEOUT_MS;
    c->tls_verify = 1;
    if (!(c->url = shown_url(url))) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    const char *shown = c->url;
    if (strncmp(url, "unix://", 7) == 0) {
        const char *path = url + 7, *query = strchr(path, '?');
        size_t n = query ? (size_t)(query - path) : strlen(path);
        KJ_RETURN_IF(n < 2 || path[0] != '/', KJ_ERR_USAGE, "%s='%s': a socket is unix:///PATH (an absolute path)",
                     what, shown);
        KJ_RETURN_IF(n > 107, KJ_ERR_USAGE, "%s='%s': the socket path is %zu characters; at most 107 are allowed", what,
                     shown, n);
        if (!(c->socket_path = kj__strndup(path, n))) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        return query ? parse_options(what, shown, query + 1, 1, c) : KJ_OK;
    }
    c->tls = strncmp(url, "rediss://", 9) == 0;
    KJ_RETURN_IF(!c->tls && strncmp(url, "redis://", 8) != 0, KJ_ERR_USAGE,
                 "%s='%s' is not a Redis URL: the forms are %s", what, shown, URL_FORMS);
    const char *rest = url + (c->tls ? 9 : 8), *at = strrchr(rest, '@');
    if (at) {
        KJ_FORWARD(parse_userinfo(what, shown, rest, (size_t)(at - rest), c));
        rest = at + 1;
    }
    const char *query = strchr(rest, '?'), *end = query ? query : rest + strlen(rest);
    KJ_FORWARD(parse_host(what, shown, rest, (size_t)(end - rest), c));
    return query ? parse_options(what, shown, query + 1, 0, c) : KJ_OK;
}

static kj_status parse_mode(const kj_runtime_options *o, kj_remote_mode *mode) {
    if (o->remote_mode != KJ_REMOTE_DEFAULT) {
        KJ_RETURN_IF(o->remote_mode != KJ_REMOTE_READ && o->remote_mode != KJ_REMOTE_READWRITE, KJ_ERR_USAGE,
                     "remote_mode %d is not KJ_REMOTE_DEFAULT, KJ_REMOTE_OFF, KJ_REMOTE_READ or KJ_REMOTE_READWRITE",
                     (int)o->remote_mode);
        *mode = o->remote_mode;
        return KJ_OK;
    }
    const char *env = getenv("KERNJIT_REMOTE_MODE");
    *mode = KJ_REMOTE_READWRITE;
    if (!env || !*env) return KJ_OK;
    if (strcasecmp(env, "read") == 0) *mode = KJ_REMOTE_READ;
    else if (strcasecmp(env, "readwrite") != 0)
        return KJ_FAIL(KJ_ERR_USAGE,
                       "KERNJIT_REMOTE_MODE='%.40s' is not a mode: read (fetch only) or readwrite (fetch "
                       "and push)",
                       env);
    return KJ_OK;
}

/* A warning when others than its owner may read path, a file holding what must stay secret. */
static void warn_if_shared(const kj__logger *log, const char *holding, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        kj__log(log, KJ_LOG_WARN, "the remote cache's %s file %s may be read by others (mode %04o): chmod 600 it",
                holding, path, (unsigned)(st.st_mode & 07777));
}

/* The secret: an absolute path names a file holding it; a value that looks like a relative path (a '/'
 * after its start, a first '~' or '.') is refused, since taking it as the secret would make a
 * guessable key of a file name nobody reads; anything else is the secret itself. A final new line (LF
 * or CR LF) is not part of it, so that `echo ... > file` and $(cat file) both work. The value is
 * never shown: it may be the secret. */
static kj_status read_secret(const char *what, const char *value, const kj__logger *log, kj__remote_config *c) {
    char *data = NULL;
    size_t len = strlen(value);
    if (value[0] == '/') {
        if (kj__read_file(value, KJ_REMOTE_SECRET_MAX + 2, KJ_ERR_USAGE, &data, &len) != KJ_OK) {
            char why[600];
            snprintf(why, sizeof why, "%s", kj_last_error());
            return KJ_FAIL(KJ_ERR_USAGE,
                           "%s names the file %s (a value starting with '/' is a file holding the "
                           "secret): %s",
                           what, value, why);
        }
        warn_if_shared(log, "secret", value);
    } else if (strchr(value, '/') || value[0] == '~' || value[0] == '.') {
        return KJ_FAIL(KJ_ERR_USAGE,
                       "%s looks like a relative path (it has a '/' after its first character, or "
                       "starts with '~' or '.'), which kernjit neither reads nor takes as the secret: name the file by "
                       "its absolute path (starting with '/'; '~' is not expanded), or give the secret itself (16 to "
                       "%d bytes with no '/', not starting with '~' or '.', for example the output of `openssl rand "
                       "-hex 32`)",
                       what, KJ_REMOTE_SECRET_MAX);
    } else if (!(data = kj__strdup(value))) {
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (len && data[len - 1] == '\n') len--;
    if (len && data[len - 1] == '\r') len--;
    if (len < KJ_REMOTE_SECRET_MIN || len > KJ_REMOTE_SECRET_MAX) {
        memset(data, 0, len);
        free(data);
        return KJ_FAIL(KJ_ERR_USAGE,
                       "%s: the secret%s is %zu bytes; %d to %d are allowed (for example the output of "
                       "`openssl rand -hex 32`)",
                       what, value[0] == '/' ? " in the file" : "", len, KJ_REMOTE_SECRET_MIN, KJ_REMOTE_SECRET_MAX);
    }
    c->secret = (uint8_t *)data;
    c->secret_len = len;
    return KJ_OK;
}

/* The files TLS needs, read now, so that one that cannot be read is the configuration's error: tls_ca (else
 * KERNJIT_REMOTE_TLS_CA), tls_cert and tls_key. What they hold is checked when the connections are set up
 * (src/cache/tls.c), where OpenSSL is. */
static kj_status read_tls_files(const char *what, const char *url, const kj__logger *log, kj__remote_config *c) {
    if (!c->tls) return KJ_OK;
    const char *ca = "tls_ca", *env = kj__getenv_path("KERNJIT_REMOTE_TLS_CA");
    if (!c->tls_ca.path && env) {
        ca = "KERNJIT_REMOTE_TLS_CA";
        if (!(c->tls_ca.path = kj__strdup(env))) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    struct {
        const char *name;
        kj__remote_file *file;
    } files[] = {{ca, &c->tls_ca}, {"tls_cert", &c->tls_cert}, {"tls_key", &c->tls_key}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        kj__remote_file *f = files[i].file;
        if (!f->path) continue;
        if (kj__read_file(f->path, KJ_REMOTE_TLS_FILE_MAX, KJ_ERR_USAGE, &f->data, &f->len) != KJ_OK) {
            char why[600];
            snprintf(why, sizeof why, "%s", kj_last_error());
            return KJ_FAIL(KJ_ERR_USAGE, "%s='%s': %s names a file that cannot be read: %s", what, url, files[i].name,
                           why);
        }
    }
    if (c->tls_key.path) warn_if_shared(log, "TLS key", c->tls_key.path);
    return KJ_OK;
}

kj_status kj__remote_config_read(const kj_runtime_options *o, const kj__logger *log, kj__remote_config *c,
                                 int *configured) {
    memset(c, 0, sizeof *c);
    *configured = 0;
    if (o->remote_mode == KJ_REMOTE_OFF) return KJ_OK;
    const char *what = "remote_cache", *url = o->remote_cache;
    if (!url || !*url) {
        what = "KERNJIT_REMOTE_CACHE";
        url = getenv(what);
    }
    if (!url || !*url) return KJ_OK;
    kj_status s = parse_url(what, url, c);
    if (s == KJ_OK) s = read_tls_files(what, c->url, log, c);
    if (s == KJ_OK) s = parse_mode(o, &c->mode);
    const char *secret_what = "remote_secret", *secret = o->remote_secret;
    if (!secret || !*secret) {
        secret_what = "KERNJIT_REMOTE_SECRET";
        secret = getenv(secret_what);
    }
    if (s == KJ_OK && secret && *secret) s = read_secret(secret_what, secret, log, c);
    if (s != KJ_OK) {
        kj__remote_config_free(c);
        return s;
    }
    *configured = 1;
    return KJ_OK;
}

kj_status kj__secret_read(const char *what, const char *value, const kj__logger *log, uint8_t **secret, size_t *len) {
    kj__remote_config c;
    memset(&c, 0, sizeof c);
    KJ_FORWARD(read_secret(what, value, log, &c));
    *secret = c.secret;
    *len = c.secret_len;
    return KJ_OK;
}
