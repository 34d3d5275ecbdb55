#include "jit/toolkit.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "base/error.h"
#include "base/util.h"

#ifndef KJ_DEFAULT_CUDA_HOME
#define KJ_DEFAULT_CUDA_HOME "/usr/local/cuda"
#endif

const char *kj__cuda_home(void) {
    const char *env = kj__getenv_path("KERNJIT_CUDA_HOME");
    if (env) return env;
    env = kj__getenv_path("CUDA_HOME");
    if (env) return env;
    return KJ_DEFAULT_CUDA_HOME;
}

void kj__toolkit_include_dirs(const char *dirs[2], size_t *count) {
    static char include[PATH_MAX], cccl[PATH_MAX];
    static const char *home;
    /* the toolkit folder can change only through the environment, read each time */
    const char *now = kj__cuda_home();
    if (!home || strcmp(home, now) != 0) {
        snprintf(include, sizeof include, "%s/include", now);
        snprintf(cccl, sizeof cccl, "%s/include/cccl", now);
        home = now;
    }
    struct stat st;
    dirs[0] = include;
    dirs[1] = cccl;
    *count = stat(cccl, &st) == 0 && S_ISDIR(st.st_mode) ? 2 : 1;
}

/* The toolkit's include folders and their real paths, kept while the toolkit folder stays the same:
 * a realpath per header looked up would cost a system call per component. */
static pthread_mutex_t real_lock = PTHREAD_MUTEX_INITIALIZER;
static char real_home[PATH_MAX], dirs_of_home[2][PATH_MAX], real_dirs[2][PATH_MAX];
static size_t real_count;

/* Whether a and b are the same file (both exist). */
static int same_file(const char *a, const char *b) {
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

char *kj__toolkit_name(const char *real) {
    char dirs[2][PATH_MAX], reals[2][PATH_MAX];
    size_t count;
    const char *home = kj__cuda_home();
    pthread_mutex_lock(&real_lock);
    if (strcmp(real_home, home) != 0) {
        const char *now[2];
        kj__toolkit_include_dirs(now, &real_count);
        for (size_t i = 0; i < real_count; i++) {
            char *r = kj__real_path(now[i]); /* open and readlink, not realpath's readlink per component */
            snprintf(dirs_of_home[i], sizeof dirs_of_home[i], "%s", now[i]);
            snprintf(real_dirs[i], sizeof real_dirs[i], "%s", r ? r : "");
            free(r);
        }
        snprintf(real_home, sizeof real_home, "%s", home);
    }
    count = real_count;
    memcpy(dirs, dirs_of_home, sizeof dirs);
    memcpy(reals, real_dirs, sizeof reals);
    pthread_mutex_unlock(&real_lock);
    /* the deepest folder first: <cub/...> rather than <cccl/cub/...>, when NVRTC meets that file first */
    for (size_t i = count; i-- > 0;) {
        size_t n = strlen(reals[i]);
        if (!n || strncmp(real, reals[i], n) != 0 || real[n] != '/') continue;
        const char *rel = real + n + 1;
        for (size_t j = 0; j < count; j++) { /* NVRTC's order: the first folder that has rel wins */
            char path[2 * PATH_MAX];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dirs[j], rel);
            if (stat(path, &st) != 0) continue;
            if (same_file(path, real)) return kj__strdup(rel);
            break;
        }
    }
    errno = 0;
    return NULL;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Hashes the folder at path (relative name rel) and everything under it, in name order; symbolic
 * links are hashed as what they point to (NVRTC follows them). Returns 0, or -1 with errno. */
static int walk(XXH3_state_t *st, const char *path, const char *rel, int depth) {
    if (depth > 64) return errno = ELOOP, -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *grown);
            if (!grown) break;
            names = grown;
        }
        if (!(names[n] = kj__strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char full[PATH_MAX], sub[PATH_MAX];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
        struct stat s;
        if (rc == 0 && stat(full, &s) == 0) {
            uint64_t fields[4] = {(uint64_t)s.st_mode, (uint64_t)s.st_size, (uint64_t)s.st_mtim.tv_sec,
                                  (uint64_t)s.st_mtim.tv_nsec};
            XXH3_128bits_update(st, sub, strlen(sub) + 1);
            XXH3_128bits_update(st, fields, sizeof fields);
            if (S_ISDIR(s.st_mode)) rc = walk(st, full, sub, depth + 1);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static uint8_t fingerprint[16];
static kj_status outcome;
static char failure[KJ__MESSAGE_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void compute(void) {
    const char *dirs[2];
    size_t count;
    kj__toolkit_include_dirs(dirs, &count); /* include/cccl lies inside include/: one walk covers both */
    char *real = realpath(dirs[0], NULL);
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    if (!real || (XXH3_128bits_update(&st, real, strlen(real) + 1), walk(&st, real, "", 0) != 0)) {
        kj_message_format(failure, sizeof failure, "cannot read the CUDA toolkit's headers at %s: %s", dirs[0],
                          strerror(errno));
        outcome = KJ_ERR_SOURCE;
    }
    free(real);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
    memcpy(fingerprint, c.digest, sizeof fingerprint);
}

kj_status kj__toolkit_fingerprint(const uint8_t **out) {
    pthread_once(&once, compute);
    KJ_RETURN_IF(outcome != KJ_OK, outcome, "%s", failure);
    *out = fingerprint;
    return KJ_OK;
}
