#include "link.h"

#include <nvJitLink.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "key.h"
#include "util.h"

static pthread_once_t devrt_once = PTHREAD_ONCE_INIT;
static char *devrt_path;
static uint8_t devrt_hash[16];
static int devrt_found;
static char devrt_error[KJ__MESSAGE_MAX];

static void find_devrt(void) {
    devrt_path = kj__asprintf("%s/lib64/libcudadevrt.a", kj__cuda_home());
    if (!devrt_path) return;
    char *data;
    size_t len;
    if (kj__read_file(devrt_path, 64u << 20, KJ_ERR_LINK, &data, &len) != KJ_OK) {
        kj_message_format(devrt_error, sizeof devrt_error,
                          "the device runtime library is missing: looked for %s (set KERNJIT_CUDA_HOME or CUDA_HOME "
                          "to the CUDA toolkit): %s", devrt_path, kj_last_error());
        return;
    }
    kj__hash128(data, len, devrt_hash);
    free(data);
    devrt_found = 1;
}

kj_status kj__devrt(const char **path, const uint8_t **hash) {
    pthread_once(&devrt_once, find_devrt);
    KJ_RETURN_IF(!devrt_path, KJ_ERR_HOST_MEMORY, "out of memory");
    KJ_RETURN_IF(!devrt_found, KJ_ERR_LINK, "%s", devrt_error);
    *path = devrt_path;
    *hash = devrt_hash;
    return KJ_OK;
}

int kj__nvjitlink_version(void) {
    unsigned major = 0, minor = 0;
    nvJitLinkVersion(&major, &minor);
    return (int)(major * 1000 + minor * 10);
}

static char *link_log(nvJitLinkHandle h) {
    size_t n = 0;
    if (nvJitLinkGetErrorLogSize(h, &n) != NVJITLINK_SUCCESS || n == 0) return NULL;
    char *log = malloc(n + 1);
    if (log && nvJitLinkGetErrorLog(h, log) == NVJITLINK_SUCCESS) log[n] = '\0';
    else if (log) log[0] = '\0';
    return log;
}

kj_status kj__link_devrt(const char *arch, kj__compiled *c, double *ms) {
    const char *lib;
    const uint8_t *hash;
    KJ_FORWARD(kj__devrt(&lib, &hash));
    char opt_arch[32];
    snprintf(opt_arch, sizeof opt_arch, "-arch=%s", arch);
    int want_ptx = strncmp(arch, "compute_", 8) == 0;
    const char *opts[] = {opt_arch, want_ptx ? "-ptx" : NULL};
    double t0 = kj__now_ms();
    nvJitLinkHandle h;
    nvJitLinkResult r = nvJitLinkCreate(&h, want_ptx ? 2 : 1, opts);
    KJ_RETURN_IF(r != NVJITLINK_SUCCESS, KJ_ERR_LINK, "nvJitLink cannot start a link for %s (error %d)", arch, (int)r);
    r = nvJitLinkAddData(h, c->is_ptx ? NVJITLINK_INPUT_PTX : NVJITLINK_INPUT_CUBIN, c->binary, c->size, "kernel");
    if (r == NVJITLINK_SUCCESS) r = nvJitLinkAddFile(h, NVJITLINK_INPUT_LIBRARY, lib);
    if (r == NVJITLINK_SUCCESS) r = nvJitLinkComplete(h);
    size_t size = 0;
    char *out = NULL;
    if (r == NVJITLINK_SUCCESS) r = want_ptx ? nvJitLinkGetLinkedPtxSize(h, &size) : nvJitLinkGetLinkedCubinSize(h, &size);
    if (r == NVJITLINK_SUCCESS && !(out = malloc(size ? size : 1))) r = NVJITLINK_ERROR_INTERNAL;
    if (r == NVJITLINK_SUCCESS) r = want_ptx ? nvJitLinkGetLinkedPtx(h, out) : nvJitLinkGetLinkedCubin(h, out);
    if (r != NVJITLINK_SUCCESS) {
        char *log = link_log(h);
        kj_status s = KJ_FAIL(KJ_ERR_LINK, "linking with the device runtime (%s) for %s failed (nvJitLink error %d)",
                              lib, arch, (int)r);
        kj__error_append(log);
        free(log);
        free(out);
        nvJitLinkDestroy(&h);
        return s;
    }
    nvJitLinkDestroy(&h);
    free(c->binary);
    c->binary = out;
    c->size = size;
    *ms = kj__now_ms() - t0;
    return KJ_OK;
}
