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
