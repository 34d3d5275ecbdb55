#include "cub_plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernjit.h"

#ifndef KJ_CUB_PLUGIN_INSTALLED
#define KJ_CUB_PLUGIN_INSTALLED ""
#endif

static int try_load(cub_plugin *p, const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
    p->temp_bytes = (size_t(*)(int, int, size_t))dlsym(h, "kj_cub_temp_bytes");
    p->reduce = (int (*)(int, int, const void *, size_t, void *, void *, size_t, void *))dlsym(h, "kj_cub_reduce");
    p->version = (int (*)(void))dlsym(h, "kj_cub_version");
    p->error_name = (const char *(*)(int))dlsym(h, "kj_cub_error_name");
    if (!p->temp_bytes || !p->reduce || !p->version || !p->error_name) {
        dlclose(h);
        return -1;
    }
    snprintf(p->path, sizeof p->path, "%s", path);
    return 0;
}

int cub_plugin_load(cub_plugin *p, char *why, size_t why_size) {
    memset(p, 0, sizeof *p);
    const char *env = getenv("KERNJIT_CUB_PLUGIN");
    if (env && *env) {
        /* dlopen reads a FIFO, waiting for a writer forever: a path must be a regular file */
        struct stat st;
        if (stat(env, &st) == 0 && !S_ISREG(st.st_mode)) {
            kj_message_format(why, why_size, "KERNJIT_CUB_PLUGIN=%s cannot be loaded (it is %s, not a library file)",
                              env, S_ISDIR(st.st_mode) ? "a folder" : "a special file");
            return -1;
        }
        if (try_load(p, env) == 0) return 0;
        kj_message_format(why, why_size, "KERNJIT_CUB_PLUGIN=%s cannot be loaded (%s)", env, dlerror());
        return -1;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            strcpy(slash + 1, "libkernjit-cub.so");
            if (try_load(p, exe) == 0) return 0;
        }
    }
    if (*KJ_CUB_PLUGIN_INSTALLED && try_load(p, KJ_CUB_PLUGIN_INSTALLED) == 0) return 0;
    snprintf(why, why_size, "the CUB reference is absent (it is built with nvcc where nvcc is available; "
                            "or set KERNJIT_CUB_PLUGIN)");
    return -1;
}
