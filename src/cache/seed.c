#include "cache/seed.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "cache/remote.h"
#include "cache/remote_config.h"
#include "cache/sign.h"

struct kj__seed {
    kj__cache **folders;
    size_t count;
    uint8_t *secret; /* NULL: entries need no signature */
    size_t secret_len;
    kj__logger log;
};

/* ---- where the seeds are ---------------------------------------------------------------------- */

/* path with "." and "NAME/.." taken out, lexically: only ever applied below a real path (no link in
 * it), where that is what the file system would do. In place. */
static void normalize(char *path) {
    char *out = path;
    for (const char *p = path; *p;) {
        while (*p == '/') p++;
        const char *end = p + strcspn(p, "/");
        size_t n = (size_t)(end - p);
        if (n == 1 && p[0] == '.') {
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (out > path && *--out != '/') {}
        } else if (n) {
            *out++ = '/';
            memmove(out, p, n);
            out += n;
        }
        p = end;
    }
    if (out == path) *out++ = '/';
    *out = '\0';
}

char *kj__seed_installed_dir(void) {
    if (KJ_SEED_FROM_LIBRARY[0] == '/') return kj__strdup(KJ_SEED_FROM_LIBRARY);
    Dl_info info;
    char *file = NULL;
    if (dladdr((void *)&kj__seed_installed_dir, &info) && info.dli_fname && strchr(info.dli_fname, '/'))
        file = kj__real_path(info.dli_fname);
    if (!file) file = kj__real_path("/proc/self/exe"); /* the program itself, as the loader names it */
    char *slash = file ? strrchr(file, '/') : NULL;
    char *dir = slash ? kj__asprintf("%.*s/%s", (int)(slash - file), file, KJ_SEED_FROM_LIBRARY) : NULL;
    free(file);
    if (dir) normalize(dir);
    return dir;
}

/* Adds the folder (a listed one: warn when it is missing). */
static kj_status add_folder(kj__seed *s, const char *dir, const char *listed_by) {
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(kj__cache_root(s->folders[i]), dir) == 0) return KJ_OK;
    int missing;
    kj__cache *c = kj__cache_open_seed(dir, &s->log, &missing);
    if (!c) {
        if (missing && listed_by)
            kj__log(&s->log, KJ_LOG_WARN, "the seed folder %s (%s) does not exist; not using it", dir, listed_by);
        return KJ_OK;
    }
    kj__cache **grown = realloc(s->folders, (s->count + 1) * sizeof *grown);
    if (!grown) {
        kj__cache_close(c);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    s->folders = grown;
    s->folders[s->count++] = c;
    return KJ_OK;
}

static kj_status add_folders(kj__seed *s, const kj_runtime_options *o) {
    const char *listed_by = "kj_runtime_options.seed_dirs", *dirs = o->seed_dirs;
    if (!dirs) {
        listed_by = "KERNJIT_SEED_PATH";
        dirs = getenv(listed_by) ? kj__getenv_path(listed_by) : NULL;
        if (getenv(listed_by) && !dirs) dirs = ""; /* set, and empty (or white space): off */
    }
    if (dirs && !*dirs) return KJ_OK;
    for (const char *p = dirs; p && *p;) {
        size_t n = strcspn(p, ":");
        char *dir = n ? kj__strndup(p, n) : NULL;
        if (n && !dir) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        kj_status st = dir ? add_folder(s, dir, listed_by) : KJ_OK;
        free(dir);
        KJ_FORWARD(st);
        p += n + (p[n] == ':');
    }
    char *installed = kj__seed_installed_dir();
    kj_status st = installed ? add_folder(s, installed, NULL) : KJ_OK;
    free(installed);
    return st;
}

static kj_status read_secret(kj__seed *s, const kj_runtime_options *o, int remote_configured,
                             const uint8_t *remote_secret, size_t remote_secret_len) {
    const char *what = "KERNJIT_SEED_SECRET", *value = getenv(what);
    if (!value || !*value) {
        if (remote_configured) {
            if (!remote_secret) return KJ_OK;
            if (!(s->secret = malloc(remote_secret_len))) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            memcpy(s->secret, remote_secret, remote_secret_len);
            s->secret_len = remote_secret_len;
            return KJ_OK;
        }
        what = "remote_secret";
        value = o->remote_secret;
        if (!value || !*value) value = getenv(what = "KERNJIT_REMOTE_SECRET");
    }
    if (!value || !*value) return KJ_OK;
    KJ_FORWARD(kj__secret_read(what, value, &s->log, &s->secret, &s->secret_len));
    return kj__sign_load();
}

kj_status kj__seed_open(const kj_runtime_options *o, int remote_configured, const uint8_t *remote_secret,
                        size_t remote_secret_len, const kj__logger *log, kj__seed **out) {
    kj__seed *s = calloc(1, sizeof *s);
    if (!s) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (log) s->log = *log;
    kj_status st = read_secret(s, o, remote_configured, remote_secret, remote_secret_len);
    if (st == KJ_OK) st = add_folders(s, o);
    if (st != KJ_OK) {
        kj__seed_close(s);
        return st;
    }
    *out = s;
    return KJ_OK;
}

void kj__seed_close(kj__seed *s) {
    if (!s) return;
    for (size_t i = 0; i < s->count; i++) kj__cache_close(s->folders[i]);
    free(s->folders);
    if (s->secret) memset(s->secret, 0, s->secret_len);
    free(s->secret);
    free(s);
}

size_t kj__seed_count(const kj__seed *s) { return s ? s->count : 0; }
const char *kj__seed_dir(const kj__seed *s, size_t i) {
    return s && i < s->count ? kj__cache_root(s->folders[i]) : NULL;
}
int kj__seed_signed(const kj__seed *s) { return s && s->secret; }

/* ---- lookups ---------------------------------------------------------------------------------- */

/* Why the entry data (size bytes, read from a seed) cannot serve key; NULL when it can, with *len its
 * length less a signature. */
static const char *refusal(const kj__seed *s, const char *arch, const kj__key *key, const uint8_t *data, size_t size,
                           size_t *len, char *why, size_t why_size) {
    *len = size;
    if (s->secret) {
        char name[256];
        kj__remote_entry_name(arch, key, name, sizeof name);
        if (kj__sign_verify(s->secret, s->secret_len, name, data, size, len, why, why_size) != 0) return why;
    }
    int version = kj__cache_entry_version(data, *len);
    if (version < 0) {
        snprintf(why, why_size, "it is not a kernjit entry (%zu bytes)", size);
        return why;
    }
    if (version != KJ_CACHE_FORMAT_VERSION) {
        snprintf(why, why_size,
                 "it is an entry of format version %d, and this kernjit reads version %d (make the "
                 "seed again with this kernjit)",
                 version, KJ_CACHE_FORMAT_VERSION);
        return why;
    }
    return NULL;
}

kj__lookup kj__seed_load(kj__seed *s, const char *arch, const kj__key *key, char **payload, size_t *len,
                         uint32_t *flags, char **description, char path[PATH_MAX]) {
    kj__lookup result = KJ__MISS;
    for (size_t i = 0; s && i < s->count; i++) {
        uint8_t *data;
        size_t size, n;
        kj__lookup r = kj__cache_read(s->folders[i], arch, key, &data, &size, path);
        if (r == KJ__BAD) result = KJ__BAD;
        if (r != KJ__HIT) continue;
        char why[256];
        const char *refused = refusal(s, arch, key, data, size, &n, why, sizeof why);
        const char *desc;
        const uint8_t *bin;
        size_t dlen, blen;
        uint32_t fl;
        if (!refused && kj__cache_parse_entry(data, n, key, &desc, &dlen, &bin, &blen, &fl) != 0) {
            snprintf(why, sizeof why,
                     "it is damaged, or not the entry of its name's key: its length, key or checksum "
                     "does not verify (%zu bytes)",
                     size);
            refused = why;
        }
        if (refused) {
            kj__log(&s->log, KJ_LOG_WARN, "seed entry %s is refused: %s; not using it", path, refused);
            free(data);
            result = KJ__BAD;
            continue;
        }
        if (kj__cache_entry_take(data, desc, dlen, bin, blen, payload, description) != 0) return KJ__MISS;
        *len = blen;
        *flags = fl;
        return KJ__HIT;
    }
    return result;
}

/* ---- signing a seed --------------------------------------------------------------------------- */

/* Signs one entry of the cache (item) when it is not signed under the secret yet: 1 when it was,
 * 0 when it needed nothing, -1 after a failure (why). */
static int sign_entry(const kj__seed *s, kj__cache *cache, const kj__cache_item *item, char *why, size_t why_size) {
    kj__key key;
    uint8_t *data;
    size_t size, len;
    char path[PATH_MAX], name[256];
    if (kj__key_from_hex(item->key, &key) != 0 ||
        kj__cache_read(cache, item->arch, &key, &data, &size, path) != KJ__HIT) {
        snprintf(why, why_size, "cannot read %s", item->path);
        return -1;
    }
    len = kj__sign_unsealed_size(data, size);
    if (kj__cache_entry_key(data, len, &key) != 0 || strcmp(key.hex, item->key) != 0) {
        free(data);
        snprintf(why, why_size, "%s is damaged, or not the entry its name says: it is not signed", item->path);
        return -1;
    }
    kj__remote_entry_name(item->arch, &key, name, sizeof name);
    size_t checked;
    char ignored[128];
    if (kj__sign_verify(s->secret, s->secret_len, name, data, size, &checked, ignored, sizeof ignored) == 0) {
        free(data);
        return 0;
    }
    size_t sealed_size;
    uint8_t *sealed = kj__sign_seal(s->secret, s->secret_len, name, data, len, &sealed_size);
    if (!sealed) {
        snprintf(why, why_size, "cannot sign %s (libcrypto failed or out of memory)", item->path);
        return -1;
    }
    int r = kj__cache_store_raw(cache, item->arch, &key, sealed, sealed_size, path);
    free(sealed);
    if (r != 0) snprintf(why, why_size, "cannot write %s signed (the warning says why)", item->path);
    return r == 0 ? 1 : -1;
}

kj_status kj__seed_sign(const kj__seed *s, kj__cache *cache, uint64_t *count) {
    *count = 0;
    KJ_RETURN_IF(!s || !s->secret, KJ_ERR_USAGE,
                 "no secret to sign the seed with: set KERNJIT_SEED_SECRET (or "
                 "KERNJIT_REMOTE_SECRET) to the secret, or to the absolute path of a file holding it (16 to %d bytes)",
                 KJ_REMOTE_SECRET_MAX);
    KJ_FORWARD(kj__sign_load());
    kj__cache_item *items;
    size_t n;
    KJ_FORWARD(kj__cache_items(cache, 0, &items, &n));
    kj_status st = KJ_OK;
    for (size_t i = 0; i < n && st == KJ_OK; i++) {
        char why[PATH_MAX + 128];
        int r = sign_entry(s, cache, &items[i], why, sizeof why);
        if (r < 0) st = KJ_FAIL(KJ_ERR_IO, "signing the seed %s: %s", kj__cache_root(cache), why);
        else *count += (uint64_t)r;
    }
    kj__cache_items_free(items, n);
    return st;
}
