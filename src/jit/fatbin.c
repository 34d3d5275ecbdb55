#include "jit/fatbin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/util.h"
#include "jit/arch.h"
#include "jit/toolkit.h"

/* ---- nvFatbin, when the toolkit has it ------------------------------------------------------ */

typedef int (*create_fn)(void **handle, const char **options, size_t count);
typedef int (*add_cubin_fn)(void *handle, const void *code, size_t size, const char *arch, const char *name);
typedef int (*add_ptx_fn)(void *handle, const char *code, size_t size, const char *arch, const char *name,
                          const char *options);
typedef int (*size_fn)(void *handle, size_t *size);
typedef int (*get_fn)(void *handle, void *buffer);
typedef int (*destroy_fn)(void **handle);
typedef const char *(*error_fn)(int result);

static struct {
    create_fn create;
    add_cubin_fn add_cubin;
    add_ptx_fn add_ptx;
    size_fn size;
    get_fn get;
    destroy_fn destroy;
    error_fn error;
} nv;
static int nv_loaded;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void *open_regular(const char *path) {
    struct stat st; /* dlopen reads a FIFO, waiting for a writer forever: a path must be a regular file */
    if (strchr(path, '/') && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) return NULL;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* The library stays loaded for the life of the process, as the driver does. */
static void load(void) {
    const char *asked = getenv("KERNJIT_NVFATBIN");
    if (asked && strcmp(asked, "off") == 0) return;
    void *h = NULL;
    if (asked && *asked) {
        h = open_regular(asked);
    } else {
        char path[4096];
        static const char *const names[] = {"libnvfatbin.so.13", "libnvfatbin.so"};
        for (size_t i = 0; i < 2 && !h; i++) {
            snprintf(path, sizeof path, "%s/lib64/%s", kj__cuda_home(), names[i]);
            h = open_regular(path);
        }
        for (size_t i = 0; i < 2 && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) return;
    *(void **)&nv.create = dlsym(h, "nvFatbinCreate");
    *(void **)&nv.add_cubin = dlsym(h, "nvFatbinAddCubin");
    *(void **)&nv.add_ptx = dlsym(h, "nvFatbinAddPTX");
    *(void **)&nv.size = dlsym(h, "nvFatbinSize");
    *(void **)&nv.get = dlsym(h, "nvFatbinGet");
    *(void **)&nv.destroy = dlsym(h, "nvFatbinDestroy");
    *(void **)&nv.error = dlsym(h, "nvFatbinGetErrorString");
    nv_loaded = nv.create && nv.add_cubin && nv.add_ptx && nv.size && nv.get && nv.destroy && nv.error;
}

static kj_status with_nvfatbin(const kj__fatbin_image *images, size_t count, char **out, size_t *size) {
    void *h = NULL;
    int r = nv.create(&h, NULL, 0);
    for (size_t i = 0; i < count && r == 0; i++) {
        const char *under = strchr(images[i].target, '_'); /* nvFatbin names a target "90", "90a" */
        const char *arch = under ? under + 1 : images[i].target;
        r = images[i].is_ptx ? nv.add_ptx(h, images[i].data, images[i].size, arch, NULL, NULL)
                             : nv.add_cubin(h, images[i].data, images[i].size, arch, NULL);
    }
    size_t n = 0;
    if (r == 0) r = nv.size(h, &n);
    char *buf = r == 0 ? malloc(n ? n : 1) : NULL;
    if (r == 0 && buf) r = nv.get(h, buf);
    if (h) nv.destroy(&h);
    if (r != 0) {
        free(buf);
        return KJ_FAIL(KJ_ERR_LINK, "nvFatbin could not make the fat binary: %s", nv.error(r));
    }
    if (!buf) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    *out = buf;
    *size = n;
    return KJ_OK;
}

/* ---- the format, as the toolkit's fatbinary writes it for cubins ----------------------------- */

#define FATBIN_MAGIC 0xBA55ED50u
#define HEADER_BYTES 16u
#define ENTRY_BYTES 64u
#define KIND_PTX 1u
#define KIND_ELF 2u
#define FLAGS_64BIT_LINUX 0x11u /* 64-bit code, a Linux host */

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The container header, then per image a 64-byte entry header (kind ELF, version 1 and the ELF's
 * ABI version, the architecture, the flags) and the cubin, each padded to 8 bytes. */
static kj_status with_writer(const kj__fatbin_image *images, size_t count, char **out, size_t *size) {
    size_t total = HEADER_BYTES;
    for (size_t i = 0; i < count; i++) {
        KJ_FORWARD(kj__fatbin_check_target(images[i].target));
        KJ_RETURN_IF(images[i].is_ptx, KJ_ERR_UNSUPPORTED, "PTX for compute_%d in a fat binary needs nvFatbin",
                     images[i].arch); /* a device newer than NVRTC gets PTX for an sm_XY request */
        KJ_RETURN_IF(images[i].size < 16 || memcmp(images[i].data, "\177ELF", 4) != 0, KJ_ERR_USAGE,
                     "the code for sm_%d is not an ELF cubin", images[i].arch);
        total += ENTRY_BYTES + ((images[i].size + 7) & ~(size_t)7);
    }
    unsigned char *buf = calloc(1, total);
    if (!buf) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    put_le(buf, FATBIN_MAGIC, 4);
    put_le(buf + 4, 1, 2);
    put_le(buf + 6, HEADER_BYTES, 2);
    put_le(buf + 8, total - HEADER_BYTES, 8);
    unsigned char *p = buf + HEADER_BYTES;
    for (size_t i = 0; i < count; i++) {
        size_t padded = (images[i].size + 7) & ~(size_t)7;
        put_le(p, KIND_ELF, 2);
        put_le(p + 2, 0x0101, 2);
        put_le(p + 4, ENTRY_BYTES, 4);
        put_le(p + 8, padded, 8);
        put_le(p + 24, (unsigned char)images[i].data[8], 2); /* the ELF's EI_ABIVERSION */
        put_le(p + 26, 1, 2);
        put_le(p + 28, (uint64_t)images[i].arch, 4);
        put_le(p + 40, FLAGS_64BIT_LINUX, 8);
        memcpy(p + ENTRY_BYTES, images[i].data, images[i].size);
        p += ENTRY_BYTES + padded;
    }
    *out = (char *)buf;
    *size = total;
    return KJ_OK;
}

kj_status kj__fatbin_check_target(const char *target) {
    pthread_once(&nv_once, load);
    kj__arch_name name;
    if (nv_loaded || kj__arch_parse(target, &name) != 0 || (!name.ptx && !name.suffix)) return KJ_OK;
    return KJ_FAIL(KJ_ERR_UNSUPPORTED,
                   "a fat binary with %s (%s) needs nvFatbin (libnvfatbin in %s/lib64, or "
                   "KERNJIT_NVFATBIN=PATH), which cannot be loaded: give sm_XY targets",
                   target, name.ptx ? "PTX" : "an architecture-specific target", kj__cuda_home());
}

kj_status kj__fatbin_build(const kj__fatbin_image *images, size_t count, char **out, size_t *size, const char **maker) {
    pthread_once(&nv_once, load);
    *maker = nv_loaded ? "nvFatbin" : "kernjit";
    return nv_loaded ? with_nvfatbin(images, count, out, size) : with_writer(images, count, out, size);
}

int kj__fatbin_list(const void *data, size_t size, int *arch, int *ptx, int max) {
    const unsigned char *d = data;
    if (size < HEADER_BYTES || get_le(d, 4) != FATBIN_MAGIC || get_le(d + 6, 2) != HEADER_BYTES) return -1;
    uint64_t body = get_le(d + 8, 8);
    if (body > size - HEADER_BYTES) return -1;
    size_t at = HEADER_BYTES, end = HEADER_BYTES + (size_t)body;
    int n = 0;
    while (at < end) {
        if (end - at < 32) return -1;
        uint64_t kind = get_le(d + at, 2), head = get_le(d + at + 4, 4), payload = get_le(d + at + 8, 8);
        if (head < 32 || head > end - at || payload > end - at - head) return -1;
        if ((kind == KIND_ELF || kind == KIND_PTX) && n < max) {
            arch[n] = (int)get_le(d + at + 28, 4);
            ptx[n++] = kind == KIND_PTX;
        }
        at += (size_t)(head + payload);
    }
    return n;
}
