#include "runtime/nccl_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/util.h"

#define SONAME "libnccl.so.2"
#define IN_PACKAGE "nvidia/nccl/lib/" SONAME /* the nvidia-nccl wheel's copy, under site-packages */

static kj__nccl_api api;
static kj_status load_status = KJ_ERR_UNSUPPORTED;
static char load_message[KJ__MESSAGE_MAX];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Where the search has looked, for the message when nothing is found. */
typedef struct looked {
    char *text;
    size_t size, used;
} looked;

static void note(looked *l, const char *what) {
    if (l->used + 1 >= l->size) return;
    int n = snprintf(l->text + l->used, l->size - l->used, "%s%s", l->used ? ", " : "", what);
    if (n > 0) l->used += (size_t)n;
}

/* dlopen reads a FIFO, waiting for a writer forever: a path must be a regular file. NULL with why
 * (in why) when it cannot be loaded. */
static void *open_file(const char *path, char *why, size_t size) {
    struct stat st;
    if (strchr(path, '/') && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(why, size, "it is %s, not a library file", S_ISDIR(st.st_mode) ? "a folder" : "a special file");
        return NULL;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(why, size, "%s", dlerror());
    return h;
}

static int regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The package's copy under the lib folders matching pattern ("/usr/lib/python3*"), in site-packages
 * or dist-packages: 0 with its path, or -1. */
static int find_under(const char *pattern, looked *l, char *path, size_t size) {
    static const char *const kinds[] = {"site-packages", "dist-packages"};
    int found = -1;
    for (int k = 0; k < 2 && found; k++) {
        char want[4096];
        snprintf(want, sizeof want, "%s/%s/%s", pattern, kinds[k], IN_PACKAGE);
        glob_t g;
        if (glob(want, 0, NULL, &g) == 0)
            for (size_t i = 0; i < g.gl_pathc && found; i++)
                if (regular_file(g.gl_pathv[i])) found = snprintf(path, size, "%s", g.gl_pathv[i]) < (int)size ? 0 : -1;
        globfree(&g);
    }
    char where[4200];
    snprintf(where, sizeof where, "%s/{site,dist}-packages", pattern);
    if (found) note(l, where);
    return found;
}

int kj__nccl_find_in_packages(char *path, size_t size, char *looked_text, size_t looked_size) {
    looked l = {looked_text, looked_size, 0};
    if (looked_size) looked_text[0] = '\0';
    char pattern[4096];
    /* each python3 on PATH: its environment's lib folder (a virtual environment's, conda's, /usr's) */
    const char *env = getenv("PATH");
    for (const char *p = env ? env : ""; *p; p += *p == ':') {
        size_t len = strcspn(p, ":");
        snprintf(pattern, sizeof pattern, "%.*s/python3", (int)len, p);
        if (len && regular_file(pattern)) {
            snprintf(pattern, sizeof pattern, "%.*s/../lib/python3*", (int)len, p);
            if (find_under(pattern, &l, path, size) == 0) return 0;
        }
        p += len;
    }
    static const char *const prefixes[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
    for (int i = 0; i < 2; i++)
        if ((env = getenv(prefixes[i])) && *env) {
            snprintf(pattern, sizeof pattern, "%s/lib/python3*", env);
            if (find_under(pattern, &l, path, size) == 0) return 0;
        }
    if ((env = kj__getenv_path("HOME"))) {
        snprintf(pattern, sizeof pattern, "%s/.local/lib/python3*", env);
        if (find_under(pattern, &l, path, size) == 0) return 0;
    }
    static const char *const fixed[] = {"/usr/local/lib/python3*", "/usr/lib/python3*", "/opt/conda/lib/python3*"};
    for (int i = 0; i < 3; i++)
        if (find_under(fixed[i], &l, path, size) == 0) return 0;
    /* PYTHONPATH folders hold packages themselves */
    env = getenv("PYTHONPATH");
    for (const char *p = env ? env : ""; *p; p += *p == ':') {
        size_t len = strcspn(p, ":");
        snprintf(pattern, sizeof pattern, "%.*s/" IN_PACKAGE, (int)len, p);
        if (len && regular_file(pattern)) return snprintf(path, size, "%s", pattern) < (int)size ? 0 : -1;
        if (len) note(&l, pattern);
        p += len;
    }
    return -1;
}

/* The file behind a handle, for messages and for those who make communicators with it. */
static void name_of(void *h, const char *otherwise) {
    struct link_map *map = NULL;
    const char *name = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name ? map->l_name
                                                                                                   : otherwise;
    snprintf(api.library, sizeof api.library, "%s", name);
}

/* The library stays loaded for the life of the process, as the driver does. An NCCL the process has
 * loaded already comes first: the host program's communicators are that library's, and another copy
 * would not know them. */
static void load(void) {
    const char *named = kj__getenv_path("KERNJIT_NCCL");
    char why[512], found[4096], looked_text[1400];
    void *h = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h) {
        name_of(h, SONAME);
    } else if (named) {
        if (!(h = open_file(named, why, sizeof why))) {
            kj_message_format(load_message, sizeof load_message, "NCCL: cannot load KERNJIT_NCCL=%s (%s)", named, why);
            return;
        }
        name_of(h, named);
    } else if ((h = open_file(SONAME, why, sizeof why))) {
        name_of(h, SONAME);
    } else if (kj__nccl_find_in_packages(found, sizeof found, looked_text, sizeof looked_text) == 0) {
        if (!(h = open_file(found, why, sizeof why))) {
            kj_message_format(load_message, sizeof load_message,
                              "NCCL: cannot load %s (%s); set KERNJIT_NCCL to "
                              "another libnccl.so.2",
                              found, why);
            return;
        }
        name_of(h, found);
    } else {
        kj_message_format(load_message, sizeof load_message,
                          "NCCL not found: set KERNJIT_NCCL to the path of %s. Looked for %s on the dynamic loader's "
                          "path (%s) and for the nvidia-nccl package's %s under %s",
                          SONAME, SONAME, why, IN_PACKAGE, looked_text[0] ? looked_text : "no Python environment");
        return;
    }
#define KJ_NCCL_LOOKUP_(name, ret, params)                                                                             \
    api.name = (ret(*) params)dlsym(h, #name);                                                                         \
    if (!api.name) {                                                                                                   \
        kj_message_format(load_message, sizeof load_message, "NCCL: %s lacks %s: NCCL 2.x is needed", api.library,     \
                          #name);                                                                                      \
        return;                                                                                                        \
    }
    KJ_NCCL_SYMBOLS(KJ_NCCL_LOOKUP_)
#undef KJ_NCCL_LOOKUP_
    if (api.ncclGetVersion(&api.version) != KJ__NCCL_SUCCESS) api.version = 0;
    load_status = KJ_OK;
}

kj_status kj__nccl_load(const kj__nccl_api **out) {
    pthread_once(&load_once, load);
    if (load_status != KJ_OK) return KJ_FAIL(load_status, "%s", load_message);
    *out = &api;
    return KJ_OK;
}
