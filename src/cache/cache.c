#include "cache/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "cache/sign.h"
#include "jit/arch.h"

static const char MAGIC[8] = {'K', 'J', 'C', 'U', 'B', 'I', 'N', '\0'};
#define MAX_PAYLOAD (1ull << 30)
#define MAX_DESCRIPTION (1u << 16)
#define TMP_PREFIX ".tmp-"
#define STALE_TMP_SECONDS 3600
#define REFRESH_AFTER_S 60 /* a hit refreshes an entry's modification time when it is older */

/* A folder verified as the rules below require, known by its identity: a later use that finds the same
 * folder (and it still this user's, and private) needs no other check. */
typedef struct {
    dev_t dev;
    ino_t ino;
    char arch[16]; /* an arch folder's name; "" for a free slot */
} verified_folder;
#define VERIFIED_ARCHS 4

struct kj__cache {
    char *root; /* opened at each use: no descriptor is held */
    uint64_t max_bytes;
    kj__logger log;
    int seed;             /* a seed folder: read, never written; root may own it (an install's) */
    uid_t uid;            /* the user whose folders and entries are trusted (geteuid at open) */
    pthread_mutex_t lock; /* guards what the uses learn: */
    int root_verified;
    verified_folder root_id, archs[VERIFIED_ARCHS];
    unsigned next_arch; /* the slot the next arch folder takes when all are used */
};

/* ---- the folder ------------------------------------------------------------------------------ */

static const kj__private_dir CACHE_FOLDER = {"cache folder",
                                             "cached binaries are code that will run",
                                             "writes",
                                             "set KERNJIT_CACHE_DIR to a folder of your own, not a link",
                                             "set KERNJIT_CACHE_DIR to a folder in a parent of your own",
                                             "it is another user's folder: set KERNJIT_CACHE_DIR to one of your own",
                                             "chmod 700 the folder, or set KERNJIT_CACHE_DIR",
                                             "set KERNJIT_CACHE_DIR to a folder of your own",
                                             0};

char *kj__cache_default_dir(void) {
    const char *env = kj__getenv_path("KERNJIT_CACHE_DIR");
    if (env) return kj__strdup(env);
    env = kj__getenv_path("XDG_CACHE_HOME");
    if (env && env[0] == '/') return kj__asprintf("%s/kernjit", env);
    env = kj__getenv_path("HOME");
    if (env && env[0] == '/') return kj__asprintf("%s/.cache/kernjit", env);
    return NULL;
}

/* Entries live at <root>/<target>/<32 hex>.cubin, a target's name of at most 13 characters
 * (compute_1234f): the root's path leaves room for that in PATH_MAX. */
#define ROOT_MAX (PATH_MAX - 1 - 64)

/* A cache folder path that can be used whole: checked before anything is created, so that a path
 * that cannot work (too long, a name the file system refuses) leaves no folders behind. */
static int check_root_path(const kj__private_dir *k, const char *dir, char *why, size_t size) {
    size_t n = strlen(dir);
    if (n > ROOT_MAX) {
        kj_message_format(why, size,
                          "not using the %s %s: its path has %zu characters, at most %d (the "
                          "entries are stored below it, and a path has at most %d)",
                          k->what, dir, n, ROOT_MAX, PATH_MAX - 1);
        return -1;
    }
    for (const char *p = dir; *p;) {
        size_t len = strcspn(p, "/");
        if (len > NAME_MAX) {
            kj_message_format(why, size,
                              "not using the %s %s: it has a name of %zu characters ('%.24s...'), "
                              "at most %d",
                              k->what, dir, len, p, NAME_MAX);
            return -1;
        }
        p += len + (p[len] == '/');
    }
    return 0;
}

/* mkdir, where a folder that already exists is success. A read-only or foreign file system may
 * report EROFS or EACCES for an existing folder rather than EEXIST: then the folder is looked at.
 * *made: whether this call created it. */
static int make_dir(const char *path, int *made) {
    *made = mkdir(path, 0700) == 0;
    if (*made || errno == EEXIST) return 0;
    int err = errno;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    errno = err;
    return -1;
}

/* Removes the folders of path from its end back to the one that ends at offset `from` (those a
 * make_dirs call created), each only if empty. */
static void unmake_dirs(const char *path, size_t from) {
    char *p = kj__strdup(path);
    if (!p) return;
    for (size_t n = strlen(p); n >= from && n > 0;) {
        p[n] = '\0';
        rmdir(p);
        while (n > 0 && p[n - 1] == '/') n--;
        while (n > 0 && p[n - 1] != '/') n--;
        while (n > 1 && p[n - 1] == '/') n--;
    }
    free(p);
}

/* mkdir -p, creating missing components 0700; existing components are left as they are. Returns the
 * offset where the first folder it created ends (0 when it created none), or -1 with errno after
 * removing again what it created. */
static long make_dirs(const char *path) {
    char *p = kj__strdup(path);
    if (!p) return -1;
    size_t first = 0;
    int made = 0, failed = 0;
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = '\0';
        failed = make_dir(p, &made) != 0;
        if (made && !first) first = (size_t)(s - p);
        *s = c;
        if (failed || !c) break;
    }
    int err = errno;
    free(p);
    if (failed) {
        if (first) unmake_dirs(path, first);
        errno = err;
        return -1;
    }
    return (long)first;
}

/* Whether a file or folder is owned by someone this process trusts with code: itself, or for a seed
 * (read, never written: an install's files) root too. */
static int trusted_owner(const struct stat *st, int seed, uid_t uid) {
    return st->st_uid == uid || (seed && st->st_uid == 0);
}

/* A folder is safe when it is ours (or root's, for a seed) and nobody else may write to it. */
static int safe_folder(const struct stat *st, int seed, uid_t uid) {
    return S_ISDIR(st->st_mode) && trusted_owner(st, seed, uid) && !(st->st_mode & 022);
}

/* Why a folder is not safe (safe_folder), in words; NULL when it is. */
static const char *unsafe_reason(const struct stat *st, int seed, uid_t uid, char *buf, size_t size) {
    if (!S_ISDIR(st->st_mode)) return "it is not a folder";
    if (!trusted_owner(st, seed, uid)) {
        snprintf(buf, size, "it is owned by uid %u, not by this user (uid %u)%s", (unsigned)st->st_uid, (unsigned)uid,
                 seed ? " or root" : "");
        return buf;
    }
    if (st->st_mode & 022) {
        snprintf(buf, size, "others may write to it (mode %04o)", (unsigned)(st->st_mode & 07777));
        return buf;
    }
    return NULL;
}

static const kj__private_dir SEED_FOLDER = {"seed folder",
                                            "seeded binaries are code that will run",
                                            "reads",
                                            "name the folder itself in KERNJIT_SEED_PATH, not a link",
                                            "keep seeds in a folder whose parent only its owner may write",
                                            "it is another user's folder: copy it to one of your own",
                                            "chmod go-w the folder",
                                            "name a folder in KERNJIT_SEED_PATH",
                                            1};

static const kj__private_dir *folder_kind(const kj__cache *c) { return c->seed ? &SEED_FOLDER : &CACHE_FOLDER; }

/* The folder holding the cache folder: one that others may write to without the sticky bit lets
 * them replace the cache folder itself (by a link, between one run and the next). A parent that does
 * not exist yet will be created 0700. */
static int unsafe_parent(const kj__private_dir *k, const char *dir, char *why, size_t size) {
    char *parent = kj__strdup(dir);
    if (!parent) return 0;
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (slash == parent) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(parent, strlen(parent) + 1, ".");
    struct stat st;
    int unsafe = stat(parent, &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX);
    if (unsafe)
        kj_message_format(why, size,
                          "not using the %s %s: its parent %s may be written by anyone without "
                          "the sticky bit (mode %04o), so the folder could be replaced by a link; %s (fix: %s)",
                          k->what, dir, parent, (unsigned)(st.st_mode & 07777), k->stake, k->fix_parent);
    free(parent);
    return unsafe;
}

/* Opens the cache folder for one use, creating it (and its missing parents, 0700) when asked. No
 * descriptor is held between uses, so a process may have any number of runtimes: the folder is
 * found again at each use instead (see "the folders' identities" below). It is refused when it is a symbolic link (opened with O_NOFOLLOW: a
 * link planted in a shared folder would redirect the writes, and `cache clear`, to wherever it
 * points), not ours, writable by others, or in a parent anyone may write without the sticky bit.
 * The path is checked whole before anything is made, and what was made is removed again when the
 * folder then cannot be used. Returns the descriptor (its fstat in *st), or -1 with why (a sentence
 * naming the folder) and *err (the errno of a failed call, 0 for a refusal). uid: the user trusted. */
static int open_root(const kj__private_dir *k, const char *dir, int create, uid_t uid, struct stat *st, char *why,
                     size_t size, int *err) {
    *err = 0;
    if (check_root_path(k, dir, why, size) != 0 || unsafe_parent(k, dir, why, size)) return -1;
    long made = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR) && create) {
        if ((made = make_dirs(dir)) < 0) {
            *err = errno;
            kj_message_format(why, size, "cannot create the %s %s (%s)", k->what, dir, kj__strerror(*err));
            return -1;
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0 || fstat(fd, st) != 0) {
        *err = errno;
        struct stat link;
        if ((*err == ELOOP || *err == ENOTDIR) && lstat(dir, &link) == 0 && S_ISLNK(link.st_mode))
            kj_message_format(why, size,
                              "not using the %s %s: it is a symbolic link (owned by uid %u%s), "
                              "and a link planted in a shared folder would send kernjit's %s wherever it points "
                              "(fix: %s)",
                              k->what, dir, (unsigned)link.st_uid,
                              link.st_uid == uid ? ", this user" : ", not this user", k->moves, k->fix_link);
        else if (*err == ELOOP || *err == ENOTDIR)
            kj_message_format(why, size, "not using the %s %s: it is not a folder (fix: %s)", k->what, dir,
                              k->fix_other);
        else kj_message_format(why, size, "cannot open the %s %s (%s)", k->what, dir, kj__strerror(*err));
    } else {
        char detail[160];
        const char *reason = unsafe_reason(st, k->root_may_own, uid, detail, sizeof detail);
        if (!reason) return fd;
        kj_message_format(why, size, "not using the %s %s: %s; %s (fix: %s)", k->what, dir, reason, k->stake,
                          trusted_owner(st, k->root_may_own, uid) ? k->fix_mode : k->fix_owner);
    }
    if (fd >= 0) close(fd);
    if (made > 0) unmake_dirs(dir, (size_t)made);
    return -1;
}

int kj__private_dir_check(const kj__private_dir *k, const char *dir, int create, char *why, size_t size) {
    struct stat st;
    int err, fd = open_root(k, dir, create, geteuid(), &st, why, size, &err);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

/* A cache of dir, whose root (when root is not NULL: its fstat) has just been verified. */
static kj__cache *new_cache(const char *dir, const kj__logger *log, int seed, uid_t uid, const struct stat *root) {
    kj__cache *c = calloc(1, sizeof *c);
    if (!c || !(c->root = kj__strdup(dir)) || pthread_mutex_init(&c->lock, NULL) != 0) {
        if (c) free(c->root);
        free(c);
        return NULL;
    }
    c->seed = seed;
    c->uid = uid;
    if (log) c->log = *log;
    if (root) {
        c->root_verified = 1;
        c->root_id.dev = root->st_dev;
        c->root_id.ino = root->st_ino;
    }
    return c;
}

kj__cache *kj__cache_open(const char *dir, uint64_t max_bytes, const kj__logger *log) {
    if (!dir || !*dir) {
        kj__log(log, KJ_LOG_WARN, "no cache folder (set KERNJIT_CACHE_DIR or HOME); compiling in memory only");
        return NULL;
    }
    char why[KJ__MESSAGE_MAX];
    int err;
    uid_t uid = geteuid();
    struct stat st;
    int fd = open_root(&CACHE_FOLDER, dir, 1, uid, &st, why, sizeof why, &err);
    if (fd >= 0) {
        close(fd);
    } else if (err == EMFILE || err == ENFILE) {
        /* the process's state, not the folder's: the folder is checked again at each use */
        kj__log(log, KJ_LOG_WARN, "%s; it is checked again at each use of the cache", why);
    } else {
        kj__log(log, KJ_LOG_WARN, "%s; compiling in memory only", why);
        return NULL;
    }
    kj__cache *c = new_cache(dir, log, 0, uid, fd >= 0 ? &st : NULL);
    if (c) c->max_bytes = max_bytes ? max_bytes : KJ_CACHE_DEFAULT_MAX;
    return c;
}

void kj__cache_close(kj__cache *c) {
    if (!c) return;
    pthread_mutex_destroy(&c->lock);
    free(c->root);
    free(c);
}

const char *kj__cache_root(const kj__cache *c) { return c ? c->root : NULL; }
uint64_t kj__cache_max_bytes(const kj__cache *c) { return c ? c->max_bytes : 0; }

/* ---- the folders' identities ---------------------------------------------------------------------
 * Checking the folders from the root's parent down costs a dozen system calls, which would be most of
 * a disk hit's own cost if every lookup paid them. A folder that passed those checks is known by its
 * identity (device, inode) instead: a later use opens <root>/<arch> by its path (never through a link
 * at its end) and takes it only when it is that same folder, still this user's and private; an arch
 * folder not seen yet, only when its parent (its ".." entry) is the verified root. Anything else (the
 * folder gone, another folder, a link, a mode others may write) forgets what was known and checks
 * everything from the root again, as the first use did, with the same warnings and refusals. The
 * folder used is thus always one that passed every check: whatever path leads to it (a link put in
 * the root's place that points to the very folder verified leads to the verified folder), nobody but
 * this user can have written it. */

static verified_folder *known_arch(kj__cache *c, const char *arch) {
    for (size_t i = 0; i < VERIFIED_ARCHS; i++)
        if (strcmp(c->archs[i].arch, arch) == 0) return &c->archs[i];
    return NULL;
}

static int same_folder(const verified_folder *f, const struct stat *st) {
    return f->dev == st->st_dev && f->ino == st->st_ino;
}

/* Under the lock. */
static void remember_arch(kj__cache *c, const char *arch, const struct stat *st) {
    size_t n = strlen(arch); /* at most 13: kj__arch_folder_valid */
    if (n >= sizeof c->archs[0].arch) return;
    verified_folder *f = known_arch(c, arch);
    if (!f) {
        f = known_arch(c, "");
        if (!f) f = &c->archs[c->next_arch++ % VERIFIED_ARCHS];
    }
    memcpy(f->arch, arch, n + 1);
    f->dev = st->st_dev;
    f->ino = st->st_ino;
}

static void forget_arch(kj__cache *c, const char *arch) {
    pthread_mutex_lock(&c->lock);
    verified_folder *f = known_arch(c, arch);
    if (f) f->arch[0] = '\0';
    pthread_mutex_unlock(&c->lock);
}

/* <root>/<arch> when it is a folder verified before (see above), else -1 (and nothing known about it
 * any more). dir_path: the folder's path, writable (it is cut at its last '/' for a moment). */
static int open_verified_arch(kj__cache *c, const char *arch, char *dir_path) {
    int fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st, up;
    if (fd < 0 || fstat(fd, &st) != 0 || !safe_folder(&st, c->seed, c->uid)) {
        if (fd >= 0) close(fd);
        forget_arch(c, arch);
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    const verified_folder *f = known_arch(c, arch);
    int ok = f && same_folder(f, &st), ask_parent = !f && c->root_verified;
    verified_folder root = c->root_id;
    pthread_mutex_unlock(&c->lock);
    if (ask_parent) {
        ok = fstatat(fd, "..", &up, 0) == 0 && same_folder(&root, &up);
        pthread_mutex_lock(&c->lock);
        if (ok) remember_arch(c, arch, &st);
        else if (c->root_id.dev == root.dev && c->root_id.ino == root.ino) c->root_verified = 0; /* the root moved */
        pthread_mutex_unlock(&c->lock);
    }
    if (ok) return fd;
    close(fd);
    forget_arch(c, arch);
    return -1;
}

/* The root for one operation, checked from its parent down; -1 after a warning (none when it is
 * simply gone and create is 0: nothing is cached then). What it finds is what is known of the root
 * from now on; when it cannot be used, nothing is known of any folder. */
static int use_root(kj__cache *c, int create, const char *then) {
    char why[KJ__MESSAGE_MAX];
    int err;
    struct stat st;
    int fd = open_root(folder_kind(c), c->root, create, c->uid, &st, why, sizeof why, &err);
    if (fd < 0 && (create || err != ENOENT)) kj__log(&c->log, KJ_LOG_WARN, "%s; %s", why, then);
    pthread_mutex_lock(&c->lock);
    c->root_verified = fd >= 0;
    c->root_id.dev = fd >= 0 ? st.st_dev : 0;
    c->root_id.ino = fd >= 0 ? st.st_ino : 0;
    for (size_t i = 0; fd < 0 && i < VERIFIED_ARCHS; i++) c->archs[i].arch[0] = '\0'; /* refused: nothing is known */
    pthread_mutex_unlock(&c->lock);
    return fd;
}

/* Opens <root>/<arch> (creating it when asked), refusing a link or an unsafe folder: the folder
 * verified before when it is still there, else checked from the root. path: the entry's path
 * (<root>/<arch>/<name>), which is cut at its last '/' for a moment. */
static int open_arch_dir(kj__cache *c, const char *arch, int create, char *path) {
    char *slash = strrchr(path, '/');
    *slash = '\0';
    int fd = open_verified_arch(c, arch, path);
    *slash = '/';
    if (fd >= 0) return fd;
    int rfd = use_root(c, create,
                       create    ? "the kernel is kept in memory only"
                       : c->seed ? "not using its entries"
                                 : "compiling again");
    if (rfd < 0) return -1;
    /* As for make_dir: a failed mkdirat matters only if the folder is not there after all. */
    int mkdir_err = create && mkdirat(rfd, arch, 0700) != 0 && errno != EEXIST ? errno : 0;
    fd = openat(rfd, arch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(rfd);
    if (fd < 0 && err == ENOENT && mkdir_err) {
        kj__log(&c->log, KJ_LOG_WARN, "cannot create %s/%s (%s); the kernel is kept in memory only", c->root, arch,
                kj__strerror(mkdir_err));
        return -1;
    }
    if (fd < 0) {
        if (err != ENOENT)
            kj__log(&c->log, KJ_LOG_WARN, "cannot open %s/%s (%s%s); not using it", c->root, arch, kj__strerror(err),
                    err == ELOOP || err == ENOTDIR ? ": a symbolic link or not a folder" : "");
        return -1;
    }
    struct stat st;
    char why[128];
    const char *reason = fstat(fd, &st) != 0 ? "it cannot be inspected"
                                             : unsafe_reason(&st, c->seed, c->uid, why, sizeof why);
    if (reason) {
        kj__log(&c->log, KJ_LOG_WARN, "not using %s/%s: %s", c->root, arch, reason);
        close(fd);
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    remember_arch(c, arch, &st);
    pthread_mutex_unlock(&c->lock);
    return fd;
}

/* ---- the entry format ------------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Checksum over the description and the payload, which lie next to each other after the header. */
static void checksum(const uint8_t *body, size_t len, uint8_t out[16]) { kj__hash128(body, len, out); }

int kj__cache_parse_entry(const uint8_t *data, size_t size, const kj__key *key, const char **description,
                          size_t *description_len, const uint8_t **payload, size_t *payload_len, uint32_t *flags) {
    if (size < KJ_CACHE_HEADER_BYTES || memcmp(data, MAGIC, sizeof MAGIC) != 0) return -1;
    if (get32(data + 8) != KJ_CACHE_FORMAT_VERSION) return -1;
    uint64_t plen = get64(data + 16);
    uint32_t dlen = get32(data + 24);
    if (get32(data + 28) != 0 || plen > MAX_PAYLOAD || dlen > MAX_DESCRIPTION) return -1;
    /* a signed entry (a seed, or a remote value) ends with its signature, which whoever requires one
     * checks (sign.h); the entry is what comes before it */
    uint64_t whole = KJ_CACHE_HEADER_BYTES + (uint64_t)dlen + plen;
    if (size != whole && !(size == whole + KJ_SIGNED_TRAILER_BYTES && kj__sign_unsealed_size(data, size) == whole))
        return -1;
    size = (size_t)whole;
    if (key && memcmp(data + 32, key->bytes, 16) != 0) return -1;
    uint8_t sum[16];
    checksum(data + KJ_CACHE_HEADER_BYTES, size - KJ_CACHE_HEADER_BYTES, sum);
    if (memcmp(sum, data + 48, 16) != 0) return -1;
    *flags = get32(data + 12);
    *description = (const char *)data + KJ_CACHE_HEADER_BYTES;
    *description_len = dlen;
    *payload = data + KJ_CACHE_HEADER_BYTES + dlen;
    *payload_len = (size_t)plen;
    return 0;
}

int kj__cache_entry_take(uint8_t *data, const char *desc, size_t desc_len, const uint8_t *payload_in, size_t len,
                         char **payload, char **description) {
    char *d = description ? kj__strndup(desc, desc_len) : NULL;
    if (description && !d) {
        free(data);
        return -1;
    }
    /* the binary moved to the front of the buffer that holds it: no second buffer, no second copy */
    memmove(data, payload_in, len);
    *payload = (char *)data;
    if (description) *description = d;
    return 0;
}

int kj__cache_entry_version(const uint8_t *data, size_t size) {
    if (size < KJ_CACHE_HEADER_BYTES || memcmp(data, MAGIC, sizeof MAGIC) != 0) return -1;
    return (int)get32(data + 8);
}

int kj__cache_entry_key(const uint8_t *data, size_t size, kj__key *key) {
    const char *desc;
    const uint8_t *payload;
    size_t dlen, plen;
    uint32_t flags;
    if (kj__cache_parse_entry(data, size, NULL, &desc, &dlen, &payload, &plen, &flags) != 0) return -1;
    memcpy(key->bytes, data + 32, 16);
    kj__hex(key->bytes, 16, key->hex);
    return 0;
}

uint8_t *kj__cache_format_entry(const kj__key *key, const char *description, const void *payload, size_t len,
                                uint32_t flags, size_t *size) {
    size_t dlen = description ? strlen(description) : 0;
    if (dlen > MAX_DESCRIPTION) dlen = MAX_DESCRIPTION;
    if ((uint64_t)len > MAX_PAYLOAD) return NULL;
    size_t body = dlen + len;
    uint8_t *buf = malloc(KJ_CACHE_HEADER_BYTES + body);
    if (!buf) return NULL;
    memset(buf, 0, KJ_CACHE_HEADER_BYTES);
    memcpy(buf, MAGIC, sizeof MAGIC);
    put32(buf + 8, KJ_CACHE_FORMAT_VERSION);
    put32(buf + 12, flags);
    put64(buf + 16, len);
    put32(buf + 24, (uint32_t)dlen);
    memcpy(buf + 32, key->bytes, 16);
    if (dlen) memcpy(buf + KJ_CACHE_HEADER_BYTES, description, dlen);
    if (len) memcpy(buf + KJ_CACHE_HEADER_BYTES + dlen, payload, len);
    checksum(buf + KJ_CACHE_HEADER_BYTES, body, buf + 48);
    *size = KJ_CACHE_HEADER_BYTES + body;
    return buf;
}

/* The entry's file name (name) and path (path): -1 after a warning when the folder or the key is not
 * one kernjit writes, so that no load or store names a path outside the cache's folders, whoever
 * gave the arch and the key (a remote server names both). */
static int entry_path(kj__cache *c, const char *arch, const kj__key *key, char name[64], char path[PATH_MAX]) {
    kj__key parsed;
    int folder_ok = kj__arch_folder_valid(arch);
    if (!folder_ok || kj__key_from_hex(key->hex, &parsed) != 0 || memcmp(parsed.bytes, key->bytes, 16) != 0) {
        snprintf(path, PATH_MAX, "%s", c->root);
        if (!folder_ok)
            kj__log(&c->log, KJ_LOG_WARN,
                    "not using a cache entry in %s: the folder name '%.40s' is not one kernjit "
                    "writes (%s)",
                    c->root, arch ? arch : "", KJ_ARCH_FOLDER_FORM);
        else
            kj__log(&c->log, KJ_LOG_WARN,
                    "not using a cache entry in %s: its key '%.40s' is not 32 lower-case hex "
                    "digits",
                    c->root, key->hex);
        return -1;
    }
    /* put together by hand, not formatted (this is on every hit): the root has at most ROOT_MAX
     * characters (checked when the cache was opened) and the folder at most 13, which leaves room */
    memcpy(name, key->hex, 32);
    memcpy(name + 32, ".cubin", sizeof ".cubin");
    size_t r = strlen(c->root), a = strlen(arch);
    if (r + a + 2 + 32 + sizeof ".cubin" > PATH_MAX) {
        snprintf(path, PATH_MAX, "%s/%s/%s", c->root, arch, name);
        return 0;
    }
    memcpy(path, c->root, r);
    path[r] = '/';
    memcpy(path + r + 1, arch, a);
    path[r + 1 + a] = '/';
    memcpy(path + r + a + 2, name, 32 + sizeof ".cubin");
    return 0;
}

/* Reads a whole entry through an open descriptor (its fstat into *st); NULL when it is not a plain
 * file of ours (for a seed: ours or root's, and nobody else's to write) or too big. */
static uint8_t *read_entry(int fd, int seed, uid_t uid, size_t *size, struct stat *st_out) {
    struct stat st;
    if (st_out) memset(st_out, 0, sizeof *st_out);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !trusted_owner(&st, seed, uid) || (seed && (st.st_mode & 022)) ||
        (uint64_t)st.st_size > MAX_PAYLOAD + MAX_DESCRIPTION + KJ_CACHE_HEADER_BYTES + KJ_SIGNED_TRAILER_BYTES)
        return NULL;
    if (st_out) *st_out = st;
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return NULL;
    int err; /* a short entry fails its checks */
    *size = kj__read_all(fd, buf, n, &err);
    return buf;
}

/* Removes a bad entry, but only while its name still refers to the file that was found bad (seen):
 * another process may have renamed a good entry into place since, and that one must stay. Returns
 * the errno of a failed removal (a read-only folder), else 0. */
static int remove_bad(int dfd, const char *name, const struct stat *seen) {
    struct stat now;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0) return 0; /* already gone */
    if (now.st_dev != seen->st_dev || now.st_ino != seen->st_ino) return 0;
    return unlinkat(dfd, name, 0) == 0 || errno == ENOENT ? 0 : errno;
}

kj__lookup kj__cache_load(kj__cache *c, const char *arch, const kj__key *key, char **payload, size_t *len,
                          uint32_t *flags, char **description, char path[PATH_MAX]) {
    char name[64];
    if (entry_path(c, arch, key, name, path) != 0) return KJ__MISS;
    int dfd = open_arch_dir(c, arch, 0, path);
    if (dfd < 0) return KJ__MISS;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        kj__lookup r = KJ__MISS;
        struct stat link;
        if (err == ELOOP && fstatat(dfd, name, &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode)) {
            /* A link where an entry belongs: remove the link itself (unlinkat never follows it). */
            int failed = remove_bad(dfd, name, &link);
            kj__log(&c->log, KJ_LOG_WARN, "cache entry %s is a symbolic link; %s%s%s and compiling again", path,
                    failed ? "cannot remove it (" : "removed it", failed ? kj__strerror(failed) : "",
                    failed ? ")" : "");
            r = KJ__BAD;
        } else if (err != ENOENT) {
            kj__log(&c->log, KJ_LOG_WARN, "cannot open cache entry %s (%s); compiling again", path, kj__strerror(err));
        }
        close(dfd);
        return r;
    }
    size_t size = 0;
    struct stat st;
    uint8_t *data = read_entry(fd, c->seed, c->uid, &size, &st);
    const char *desc;
    size_t dlen;
    const uint8_t *bin;
    size_t blen;
    uint32_t fl;
    if (!data || kj__cache_parse_entry(data, size, key, &desc, &dlen, &bin, &blen, &fl) != 0) {
        free(data);
        struct stat seen;
        int failed = fstat(fd, &seen) == 0 ? remove_bad(dfd, name, &seen) : 0;
        close(fd);
        kj__log(&c->log, KJ_LOG_WARN, "cache entry %s is damaged or not ours; %s%s%s and compiling again", path,
                failed ? "cannot remove it (" : "removed it", failed ? kj__strerror(failed) : "", failed ? ")" : "");
        close(dfd);
        return KJ__BAD;
    }
    /* Least-recently-used eviction reads modification times: a hit makes this entry the newest, unless
     * it was within the last minute (a hot entry's inode is not written on every hit; eviction does
     * not need finer ages). */
    if (time(NULL) - st.st_mtime >= REFRESH_AFTER_S) futimens(fd, NULL);
    close(fd);
    close(dfd);
    if (kj__cache_entry_take(data, desc, dlen, bin, blen, payload, description) != 0) return KJ__MISS;
    *len = blen;
    *flags = fl;
    return KJ__HIT;
}

/* ---- seed folders: read only ------------------------------------------------------------------ */

kj__cache *kj__cache_open_seed(const char *dir, const kj__logger *log, int *missing) {
    char why[KJ__MESSAGE_MAX];
    int err;
    *missing = 0;
    uid_t uid = geteuid();
    struct stat st;
    int fd = open_root(&SEED_FOLDER, dir, 0, uid, &st, why, sizeof why, &err);
    if (fd >= 0) {
        close(fd);
    } else if (err == ENOENT) {
        *missing = 1;
        return NULL;
    } else if (err == EMFILE || err == ENFILE) {
        kj__log(log, KJ_LOG_WARN, "%s; it is checked again at each use", why);
    } else {
        kj__log(log, KJ_LOG_WARN, "%s; not using its entries", why);
        return NULL;
    }
    return new_cache(dir, log, 1, uid, fd >= 0 ? &st : NULL);
}

kj__lookup kj__cache_read(kj__cache *c, const char *arch, const kj__key *key, uint8_t **data, size_t *size,
                          char path[PATH_MAX]) {
    char name[64];
    if (entry_path(c, arch, key, name, path) != 0) return KJ__MISS;
    int dfd = open_arch_dir(c, arch, 0, path);
    if (dfd < 0) return KJ__MISS;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    int err = errno;
    close(dfd);
    if (fd < 0 && err == ENOENT) return KJ__MISS;
    if (fd < 0) {
        kj__log(&c->log, KJ_LOG_WARN, "not using %s (%s%s)", path, kj__strerror(err),
                err == ELOOP ? ": a symbolic link, which is never followed" : "");
        return KJ__BAD;
    }
    uint8_t *d = read_entry(fd, c->seed, c->uid, size, NULL);
    close(fd);
    if (!d) {
        kj__log(&c->log, KJ_LOG_WARN,
                "not using %s: it is not a regular file of this user%s%s, or it is larger than "
                "any entry",
                path, c->seed ? " or root" : "", c->seed ? " that only its owner may write" : "");
        return KJ__BAD;
    }
    *data = d;
    return KJ__HIT;
}

/* ---- storing and evicting -------------------------------------------------------------------- */

static void evict(kj__cache *c, const char *keep_arch, const char *keep_name);

int kj__cache_store(kj__cache *c, const char *arch, const kj__key *key, const char *description, const void *payload,
                    size_t len, uint32_t flags, char path[PATH_MAX]) {
    char name[64];
    if (entry_path(c, arch, key, name, path) != 0) return -1;
    if ((uint64_t)len > MAX_PAYLOAD) {
        kj__log(&c->log, KJ_LOG_WARN, "binary of %zu bytes is too large to cache", len);
        return -1;
    }
    size_t size;
    uint8_t *buf = kj__cache_format_entry(key, description, payload, len, flags, &size);
    if (!buf) return -1;
    int r = kj__cache_store_raw(c, arch, key, buf, size, path);
    free(buf);
    return r;
}

int kj__cache_store_raw(kj__cache *c, const char *arch, const kj__key *key, const uint8_t *buf, size_t size,
                        char path[PATH_MAX]) {
    char name[64];
    if (entry_path(c, arch, key, name, path) != 0) return -1;
    int dfd = c->seed ? -1 : open_arch_dir(c, arch, 1, path);
    if (dfd < 0) return -1;

    /* A name no other writer uses: O_EXCL fails rather than open anything already there. */
    static unsigned counter;
    char tmp[128];
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(tmp, sizeof tmp, TMP_PREFIX "%s-%ld-%u-%ld", key->hex, (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED), (long)ts.tv_nsec);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    int ok = fd >= 0 && kj__write_all(fd, buf, size) == 0;
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (ok && renameat(dfd, tmp, dfd, name) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        if (fd >= 0) unlinkat(dfd, tmp, 0);
        kj__log(&c->log, KJ_LOG_WARN, "cannot write cache entry %s (%s); the kernel is kept in memory only", path,
                kj__strerror(err));
    }
    close(dfd);
    if (!ok) return -1;
    evict(c, arch, name);
    return 0;
}

/* Every file in every arch folder, with its size and time. */
typedef struct {
    char arch[16];
    char name[64];
    uint64_t bytes;
    int64_t mtime;
    int is_tmp;
} file_info;

static int is_entry_name(const char *s) {
    char hex[33];
    kj__key key;
    if (strlen(s) != 32 + 6 || !kj__ends_with(s, ".cubin")) return 0;
    snprintf(hex, sizeof hex, "%.32s", s);
    return kj__key_from_hex(hex, &key) == 0;
}

/* The files below the root (rfd, which stays open). */
static int scan(int rfd, file_info **out, size_t *count) {
    *out = NULL;
    *count = 0;
    size_t cap = 0;
    int dfd = dup(rfd);
    if (dfd < 0) return -1;
    DIR *root = fdopendir(dfd);
    if (!root) {
        close(dfd);
        return -1;
    }
    rewinddir(root);
    struct dirent *d;
    while ((d = readdir(root))) {
        if (!kj__arch_folder_valid(d->d_name)) continue;
        int afd = openat(rfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (afd < 0) continue;
        DIR *ad = fdopendir(afd);
        if (!ad) {
            close(afd);
            continue;
        }
        struct dirent *e;
        while ((e = readdir(ad))) {
            int tmp = strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
            if (!tmp && !is_entry_name(e->d_name)) continue;
            struct stat st;
            if (fstatat(afd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            if (*count == cap) {
                cap = cap ? cap * 2 : 64;
                file_info *p = realloc(*out, cap * sizeof *p);
                if (!p) break;
                *out = p;
            }
            file_info *f = &(*out)[(*count)++];
            snprintf(f->arch, sizeof f->arch, "%.15s", d->d_name); /* at most 13: kj__arch_folder_valid */
            snprintf(f->name, sizeof f->name, "%s", e->d_name);
            f->bytes = (uint64_t)st.st_size;
            f->mtime = (int64_t)st.st_mtime;
            f->is_tmp = tmp;
        }
        closedir(ad);
    }
    closedir(root);
    return 0;
}

static int by_mtime_oldest_first(const void *a, const void *b) {
    const file_info *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Whether the file starts as every kernjit entry does (its magic), read without following a link:
 * `clear` removes nothing else, whatever its name. */
static int is_ours(const kj__cache *c, int rfd, const file_info *f) {
    int afd = openat(rfd, f->arch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (afd < 0) return 0;
    int fd = openat(afd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(afd);
    if (fd < 0) return 0;
    unsigned char head[sizeof MAGIC];
    struct stat st;
    int ours = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == c->uid &&
               read(fd, head, sizeof head) == (ssize_t)sizeof head && memcmp(head, MAGIC, sizeof MAGIC) == 0;
    close(fd);
    return ours;
}

static int remove_file(int rfd, const file_info *f) {
    int afd = openat(rfd, f->arch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (afd < 0) return -1;
    int r = unlinkat(afd, f->name, 0);
    close(afd);
    return r;
}

/* Keeps the total under the bound: when it is passed, removes the least recently used entries until
 * 90% of the bound is left, so that eviction does not run again at the very next store. Temporary
 * files left by crashed writers are removed once they are an hour old. */
static void evict(kj__cache *c, const char *keep_arch, const char *keep_name) {
    char why[KJ__MESSAGE_MAX];
    int err;
    struct stat st;
    int rfd = open_root(folder_kind(c), c->root, 0, c->uid, &st, why, sizeof why, &err);
    file_info *files;
    size_t n;
    if (rfd < 0) return;
    if (scan(rfd, &files, &n) != 0) {
        close(rfd);
        return;
    }
    uint64_t total = 0;
    time_t now = time(NULL);
    for (size_t i = 0; i < n; i++) {
        if (files[i].is_tmp && now - files[i].mtime > STALE_TMP_SECONDS) {
            remove_file(rfd, &files[i]);
            files[i].bytes = 0;
        }
        total += files[i].bytes;
    }
    if (total > c->max_bytes) {
        qsort(files, n, sizeof *files, by_mtime_oldest_first);
        uint64_t target = c->max_bytes / 10 * 9;
        for (size_t i = 0; i < n && total > target; i++) {
            if (files[i].is_tmp || (strcmp(files[i].arch, keep_arch) == 0 && strcmp(files[i].name, keep_name) == 0))
                continue;
            remove_file(rfd, &files[i]);
            total -= files[i].bytes;
            kj__log(&c->log, KJ_LOG_INFO, "cache over %llu bytes: evicted %s/%s", (unsigned long long)c->max_bytes,
                    files[i].arch, files[i].name);
        }
    }
    free(files);
    close(rfd);
}

/* ---- listing and clearing -------------------------------------------------------------------- */

/* The root and the files below it, for listing and clearing: a root that is gone holds nothing
 * (*rfd -1, no files); one that cannot be used is an error naming why. */
static kj_status scan_root(kj__cache *c, int *rfd, file_info **files, size_t *n) {
    char why[KJ__MESSAGE_MAX];
    int err;
    *files = NULL;
    *n = 0;
    struct stat st;
    *rfd = open_root(folder_kind(c), c->root, 0, c->uid, &st, why, sizeof why, &err);
    if (*rfd < 0) return err == ENOENT ? KJ_OK : KJ_FAIL(KJ_ERR_IO, "%s", why);
    if (scan(*rfd, files, n) == 0) return KJ_OK;
    err = errno;
    close(*rfd);
    return KJ_FAIL(KJ_ERR_IO, "cannot read the cache folder %s: %s", c->root, kj__strerror(err));
}

static int by_mtime_newest_first(const void *a, const void *b) {
    const kj__cache_item *x = a, *y = b;
    return x->mtime > y->mtime ? -1 : x->mtime < y->mtime;
}

kj_status kj__cache_items(kj__cache *c, int verify, kj__cache_item **items, size_t *count) {
    file_info *files;
    size_t n;
    int rfd;
    KJ_FORWARD(scan_root(c, &rfd, &files, &n));
    kj__cache_item *out = calloc(n ? n : 1, sizeof *out);
    if (!out) {
        free(files);
        if (rfd >= 0) close(rfd);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (files[i].is_tmp) continue;
        kj__cache_item *it = &out[m++];
        snprintf(it->path, sizeof it->path, "%s/%s/%s", c->root, files[i].arch, files[i].name);
        snprintf(it->arch, sizeof it->arch, "%s", files[i].arch);
        snprintf(it->key, sizeof it->key, "%.32s", files[i].name);
        it->bytes = files[i].bytes;
        it->mtime = files[i].mtime;
        it->description = NULL;
        if (verify) {
            int afd = openat(rfd, files[i].arch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int fd = afd < 0 ? -1 : openat(afd, files[i].name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            size_t size = 0;
            uint8_t *data = fd < 0 ? NULL : read_entry(fd, c->seed, c->uid, &size, NULL);
            const char *desc;
            size_t dlen;
            const uint8_t *bin;
            size_t blen;
            uint32_t fl;
            if (data && kj__cache_parse_entry(data, size, NULL, &desc, &dlen, &bin, &blen, &fl) == 0) {
                char hex[33];
                kj__hex(data + 32, 16, hex);
                it->valid = strcmp(hex, it->key) == 0;
                it->description = kj__strndup(desc, dlen);
            }
            free(data);
            if (fd >= 0) close(fd);
            if (afd >= 0) close(afd);
        }
        if (!it->description) it->description = kj__strdup("");
    }
    free(files);
    if (rfd >= 0) close(rfd);
    qsort(out, m, sizeof *out, by_mtime_newest_first);
    *items = out;
    *count = m;
    return KJ_OK;
}

void kj__cache_items_free(kj__cache_item *items, size_t count) {
    if (!items) return;
    for (size_t i = 0; i < count; i++) free(items[i].description);
    free(items);
}

kj_status kj__cache_clear(kj__cache *c, uint64_t *entries, uint64_t *bytes) {
    file_info *files;
    size_t n;
    int rfd;
    KJ_FORWARD(scan_root(c, &rfd, &files, &n));
    uint64_t e = 0, b = 0;
    int failed = 0;
    time_t now = time(NULL);
    for (size_t i = 0; i < n; i++) {
        if (files[i].is_tmp && now - files[i].mtime <= STALE_TMP_SECONDS) continue; /* a write in progress */
        if (!files[i].is_tmp && !is_ours(c, rfd, &files[i])) continue; /* named like an entry, but not one */
        if (remove_file(rfd, &files[i]) != 0) {
            failed = errno;
            continue;
        }
        if (!files[i].is_tmp) e++;
        b += files[i].bytes;
    }
    free(files);
    if (rfd >= 0) close(rfd);
    if (entries) *entries = e;
    if (bytes) *bytes = b;
    KJ_RETURN_IF(failed, KJ_ERR_IO, "cannot remove some entries of %s: %s", c->root, kj__strerror(failed));
    return KJ_OK;
}
