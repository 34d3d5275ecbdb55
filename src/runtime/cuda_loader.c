#include "runtime/cuda_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/util.h"

#define KJ_STR_(x) #x
#define KJ_STR(x) KJ_STR_(x) /* expands the cuda.h macro first: cuMemAlloc -> "cuMemAlloc_v2" */

static kj__cuda_api api;
static kj_status load_status = KJ_ERR_NO_DRIVER;
static char load_message[KJ__MESSAGE_MAX];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* The driver stays loaded for the life of the process, as every CUDA program does: unloading it
 * while contexts exist would be unsafe. */
static void load(void) {
    const char *lib = kj__getenv_path("KERNJIT_LIBCUDA");
    if (!lib) lib = "libcuda.so.1";
    /* dlopen reads a FIFO, waiting for a writer forever: a path must be a regular file */
    struct stat st;
    if (strchr(lib, '/') && stat(lib, &st) == 0 && !S_ISREG(st.st_mode)) {
        kj_message_format(load_message, sizeof load_message,
                          "no CUDA driver: cannot load %s (it is %s, not a "
                          "library file)",
                          lib, S_ISDIR(st.st_mode) ? "a folder" : "a special file");
        return;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        kj_message_format(load_message, sizeof load_message, "no CUDA driver: cannot load %s (%s)", lib, dlerror());
        return;
    }
#define KJ_CUDA_LOOKUP_(name, required)                                                                                \
    api.name = (__typeof__(name) *)dlsym(h, KJ_STR(name));                                                             \
    if (!api.name && (required)) {                                                                                     \
        kj_message_format(load_message, sizeof load_message,                                                           \
                          "the CUDA driver %s lacks %s: a driver for CUDA 12.0 or newer is needed", lib,               \
                          KJ_STR(name));                                                                               \
        return;                                                                                                        \
    }
    KJ_CUDA_SYMBOLS(KJ_CUDA_LOOKUP_)
#undef KJ_CUDA_LOOKUP_

    CUresult r = api.cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        api.cuGetErrorName(r, &name);
        if (r == CUDA_ERROR_NO_DEVICE) {
            load_status = KJ_ERR_NO_DEVICE;
            snprintf(load_message, sizeof load_message, "no CUDA device (cuInit: %s)", name);
        } else {
            load_status = KJ_ERR_CUDA;
            snprintf(load_message, sizeof load_message, "cuInit failed: %s", name);
        }
        return;
    }
    if (api.cuDriverGetVersion(&api.driver_version) != CUDA_SUCCESS || api.driver_version < KJ_MIN_DRIVER_VERSION) {
        snprintf(load_message, sizeof load_message, "the CUDA driver supports CUDA %d.%d; kernjit needs %d.%d or newer",
                 api.driver_version / 1000, api.driver_version % 1000 / 10, KJ_MIN_DRIVER_VERSION / 1000,
                 KJ_MIN_DRIVER_VERSION % 1000 / 10);
        return;
    }
    load_status = KJ_OK;
}

kj_status kj__cuda_load(const kj__cuda_api **out) {
    pthread_once(&load_once, load);
    if (load_status != KJ_OK) return KJ_FAIL(load_status, "%s", load_message);
    *out = &api;
    return KJ_OK;
}

kj_status kj__cuda_fail(CUresult r, const char *file, int line, const char *what) {
    const char *name = "CUDA_ERROR_UNKNOWN", *text = "unknown error";
    if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
    if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
    kj_status st = KJ_ERR_CUDA;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) st = KJ_ERR_DEVICE_MEMORY;
    else if (r == CUDA_ERROR_NO_DEVICE) st = KJ_ERR_NO_DEVICE;
    else if (r == CUDA_ERROR_INVALID_VALUE && strstr(what, "launch")) st = KJ_ERR_LIMIT;
    return kj__fail(st, file, line, "%s: %s (%s)", what, name, text);
}
