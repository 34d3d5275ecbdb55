/* A stand-in for libcuda.so.1 (loaded through KERNJIT_LIBCUDA) so that `kernjit launch` can be run
 * end to end where there is no GPU: one "sm_90" device whose memory is host memory, modules that are
 * the real NVRTC cubins or PTX (only searched for the entry's name), and launches that run a few known
 * kernels on the CPU. It checks the CLI's plumbing (argument bytes, fills, copies back, files,
 * validation), never CUDA semantics: the gpu suite does that on a device.
 *
 *   KJ_STUB_PARAMS   the parameter sizes cuFuncGetParamInfo reports, "8,8,8,4" (offsets aligned
 *                    naturally); unset: those of the test kernel the function's name matches, else
 *                    none
 *   KJ_STUB_FREE     free device memory in bytes (default 1 GiB)
 *   KJ_STUB_ATTR_FAIL set: cuFuncGetAttribute fails (CUDA_ERROR_INVALID_HANDLE)
 *   KJ_STUB_JIT_FAIL set: loading PTX fails (CUDA_ERROR_INVALID_PTX), the JIT's error log this text
 *   KJ_STUB_DEVICES  how many devices it presents (default 1, at most 16), alike but for their
 *                    names ("kernjit stub device", then "... device 1" ...); a primary context each
 *   KJ_STUB_EVENT_PENDING  N: after each record, an event answers N queries "not ready" before it is
 *                    done (work still running)
 *   KJ_STUB_FAULT_DEVICE D: waits on device D's work (its events, its streams) fail with
 *                    CUDA_ERROR_LAUNCH_FAILED, as after a fault in one of its kernels
 *   KJ_STUB_LAUNCH_NOTHING set: every launch succeeds and runs nothing (a kernel that never writes
 *                    its output, for the checks that must not take an unwritten result for a right one)
 *   KJ_STUB_TRACE    a file to which each launch, context switch, copy back, event record and query,
 *                    and stream or context wait appends a line "CALL DEVICE [ANSWER]", for tests of
 *                    what a call asks of the driver and in which order
 * reduce_fast "reduces" to its element count (see cuLaunchKernel), for kj_reduce_devices' plumbing.
 * Built twice: with cuFuncGetParamInfo, and without it (-DSTUB_OLD_DRIVER) as a CUDA 12.0 driver. */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

#define MAX_DEVICES 16
static int context_tokens[MAX_DEVICES]; /* a device's context is &context_tokens[ordinal] */
static _Thread_local CUcontext current; /* per thread, as the driver's current context is */

static int env_int(const char *name, int otherwise) {
    const char *env = getenv(name);
    return env && *env ? atoi(env) : otherwise;
}

/* The device of a context (-1: none). */
static int device_of(CUcontext c) { return c ? (int)((int *)c - context_tokens) : -1; }

/* A line of KJ_STUB_TRACE; the file is opened for each line, so that a test may set and unset the
 * variable between calls. */
static void trace(const char *call, int device, const char *answer) {
    const char *path = getenv("KJ_STUB_TRACE");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s %d%s%s\n", call, device, answer ? " " : "", answer ? answer : "");
    fclose(f);
}

/* Waits on the work of this device fail (KJ_STUB_FAULT_DEVICE). */
static int faulted(int device) { return device >= 0 && device == env_int("KJ_STUB_FAULT_DEVICE", -1); }

static int device_count(void) {
    const char *env = getenv("KJ_STUB_DEVICES");
    int n = env ? atoi(env) : 1;
    return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}

typedef struct stub_function {
    char name[512];
    int early_launch_said;      /* cuLaunchKernelEx has said so once */
    struct stub_function *next; /* the module's functions, freed with it */
} stub_function;

API CUresult cuInit(unsigned int flags) {
    (void)flags;
    return CUDA_SUCCESS;
}
API CUresult cuDriverGetVersion(int *v) {
#ifdef STUB_OLD_DRIVER
    *v = 12000;
#else
    *v = 13000;
#endif
    return CUDA_SUCCESS;
}
API CUresult cuGetErrorName(CUresult e, const char **s) {
    *s = e == CUDA_ERROR_OUT_OF_MEMORY   ? "CUDA_ERROR_OUT_OF_MEMORY"
         : e == CUDA_ERROR_NOT_FOUND     ? "CUDA_ERROR_NOT_FOUND"
         : e == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
         : e == CUDA_ERROR_LAUNCH_FAILED ? "CUDA_ERROR_LAUNCH_FAILED"
         : e == CUDA_ERROR_INVALID_PTX   ? "CUDA_ERROR_INVALID_PTX"
                                         : "CUDA_ERROR_STUB";
    return CUDA_SUCCESS;
}
API CUresult cuGetErrorString(CUresult e, const char **s) {
    (void)e;
    *s = "stub driver error";
    return CUDA_SUCCESS;
}
API CUresult cuDeviceGetCount(int *n) {
    *n = device_count();
    return CUDA_SUCCESS;
}
API CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    *d = ordinal;
    return ordinal >= 0 && ordinal < device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
API CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (d) snprintf(name, (size_t)len, "kernjit stub device %d", d); /* which one ran shows in reports */
    else snprintf(name, (size_t)len, "kernjit stub device");
    return CUDA_SUCCESS;
}
API CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    (void)d;
    switch (a) {
    /* KJ_STUB_CC=80 pretends a compute capability 8.0 device (refusals of what needs 9.0) */
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = getenv("KJ_STUB_CC") ? atoi(getenv("KJ_STUB_CC")) / 10 : 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = getenv("KJ_STUB_CC") ? atoi(getenv("KJ_STUB_CC")) % 10 : 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
    /* an H100 SXM's memory, which the reduction's defaults are derived from: 50 MiB of L2, HBM3 at
     * 2619 MHz on 5120 bits (3.35 TB/s) */
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
    default: *v = 1; break;
    }
    return CUDA_SUCCESS;
}
API CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = 80ull << 30;
    return CUDA_SUCCESS;
}
API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    if (d < 0 || d >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
    *c = (CUcontext)&context_tokens[d];
    return CUDA_SUCCESS;
}
API CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
    (void)d;
    return CUDA_SUCCESS;
}
API CUresult cuCtxGetCurrent(CUcontext *c) {
    *c = current;
    return CUDA_SUCCESS;
}
API CUresult cuCtxSetCurrent(CUcontext c) {
    trace("cuCtxSetCurrent", device_of(c), NULL);
    current = c;
    return CUDA_SUCCESS;
}
API CUresult cuCtxGetDevice(CUdevice *d) {
    *d = current ? (CUdevice)device_of(current) : 0;
    return CUDA_SUCCESS;
}
API CUresult cuCtxSynchronize(void) {
    trace("cuCtxSynchronize", device_of(current), NULL);
    return faulted(device_of(current)) ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}
API CUresult cuCtxSetLimit(CUlimit l, size_t v) {
    (void)l, (void)v;
    return CUDA_SUCCESS;
}
API CUresult cuCtxGetLimit(size_t *v, CUlimit l) {
    (void)l;
    *v = 2048;
    return CUDA_SUCCESS;
}

/* ---- modules: the cubin is kept only to find entry names in it ---- */

typedef struct stub_module {
    unsigned char *image; /* a copy, as the driver makes: the caller may free its own at once */
    size_t size;
    int is_ptx; /* the image is PTX text */
    stub_function *functions;
} stub_module;

API CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    const unsigned char *p = image;
    if (strncmp(image, "//", 2) == 0 || strncmp(image, ".version", 8) == 0) {
        /* PTX, which the driver would compile: its text, searched for ".entry NAME(" */
        stub_module *sm = calloc(1, sizeof *sm);
        sm->size = strlen(image) + 1;
        sm->image = malloc(sm->size);
        memcpy(sm->image, image, sm->size);
        sm->is_ptx = 1;
        *m = (CUmodule)sm;
        return CUDA_SUCCESS;
    }
    if (p[0] != 0x7f || p[1] != 'E' || p[2] != 'L' || p[3] != 'F') return CUDA_ERROR_INVALID_IMAGE;
    stub_module *sm = calloc(1, sizeof *sm);
    /* the ELF header's section-header offset and count bound the file: e_shoff + e_shnum * e_shentsize */
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&shentsize, p + 0x3a, 2);
    memcpy(&shnum, p + 0x3c, 2);
    sm->size = (size_t)(shoff + (uint64_t)shentsize * shnum);
    sm->image = malloc(sm->size);
    memcpy(sm->image, p, sm->size);
    *m = (CUmodule)sm;
    return CUDA_SUCCESS;
}
/* PTX through the driver's JIT: with KJ_STUB_JIT_FAIL set, the JIT fails and its error log holds
 * that text */
API CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *options, void **values) {
    const char *fail = getenv("KJ_STUB_JIT_FAIL");
    if (!fail || (strncmp(image, "//", 2) != 0 && strncmp(image, ".version", 8) != 0))
        return cuModuleLoadData(m, image);
    char *log = NULL;
    size_t size = 0;
    for (unsigned i = 0; i < n; i++) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER) log = values[i];
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) size = (size_t)(uintptr_t)values[i];
    }
    if (log && size) snprintf(log, size, "%s", fail);
    return CUDA_ERROR_INVALID_PTX;
}
API CUresult cuModuleUnload(CUmodule m) {
    stub_module *sm = (stub_module *)m;
    for (stub_function *f = sm->functions, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    free(sm->image);
    free(sm);
    return CUDA_SUCCESS;
}
/* threads of one runtime may look up functions of one module at once, as the driver allows */
static pthread_mutex_t functions_lock = PTHREAD_MUTEX_INITIALIZER;

API CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    stub_module *sm = (stub_module *)m;
    size_t n = strlen(name);
    char entry[600];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    if (sm->is_ptx ? !strstr((const char *)sm->image, entry) : !memmem(sm->image, sm->size, name, n + 1))
        return CUDA_ERROR_NOT_FOUND;
    stub_function *fn = calloc(1, sizeof *fn);
    snprintf(fn->name, sizeof fn->name, "%s", name);
    pthread_mutex_lock(&functions_lock);
    fn->next = sm->functions;
    sm->functions = fn;
    pthread_mutex_unlock(&functions_lock);
    *f = (CUfunction)fn;
    return CUDA_SUCCESS;
}
API CUresult cuModuleGetGlobal(CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name) {
    (void)p, (void)bytes, (void)m, (void)name;
    return CUDA_ERROR_NOT_FOUND;
}
API CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
    (void)f;
    if (getenv("KJ_STUB_ATTR_FAIL")) return CUDA_ERROR_INVALID_HANDLE;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 16; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = 49152; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}
API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t shared) {
    (void)f, (void)shared;
    *n = block > 0 ? 2048 / block : 0;
    return CUDA_SUCCESS;
}
API CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
    (void)f, (void)a, (void)v;
    return CUDA_SUCCESS;
}

#ifndef STUB_OLD_DRIVER
/* What the real driver would read from the cubins of tests/kernels/, by (lowered) name. */
static const char *known_params(const char *name) {
    static const struct {
        const char *part, *sizes;
    } known[] = {{"vadd", "8,8,8,4"},      {"scaleIf", "8,4,4"},    {"scaleId", "8,8,4"},   {"axpyId", "8,8,8,4"},
                 {"transpose", "8,8,4,4"}, {"accumulate", "8,8,4"}, {"scalars", "1,2,8,8"}, {"coop_sum", "8,4,8,8"},
                 {"affine", "16,8,8"},     {"blend", "8,8,8,4"}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strstr(name, known[i].part)) return known[i].sizes;
    return "";
}

/* The parameter sizes (KJ_STUB_PARAMS, else by name); returns the count, -1 when malformed */
static int stub_params(CUfunction f, size_t *sizes, size_t max) {
    const char *env = getenv("KJ_STUB_PARAMS");
    if (!env) env = known_params(((stub_function *)f)->name);
    if (!*env) return 0;
    int n = 0;
    for (const char *p = env; *p && (size_t)n < max;) {
        char *end;
        sizes[n++] = strtoul(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) return -1;
    }
    return n;
}

API CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
    size_t sizes[256];
    int n = stub_params(f, sizes, 256);
    if (n < 0 || index >= (size_t)n) return CUDA_ERROR_INVALID_VALUE;
    size_t off = 0;
    for (size_t i = 0; i <= index; i++) {
        off = (off + sizes[i] - 1) / sizes[i] * sizes[i];
        if (i < index) off += sizes[i];
    }
    if (offset) *offset = off;
    if (size) *size = sizes[index];
    return CUDA_SUCCESS;
}
#endif

/* ---- memory: host memory behind the device pointers ---- */

static size_t stub_free(void) {
    const char *env = getenv("KJ_STUB_FREE");
    return env ? (size_t)strtoull(env, NULL, 10) : (size_t)1 << 30;
}
API CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
    if (bytes > stub_free()) return CUDA_ERROR_OUT_OF_MEMORY;
    void *m = malloc(bytes);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    memset(m, 0xA5, bytes); /* fresh device memory is not zero */
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}
API CUresult cuMemFree(CUdeviceptr p) {
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}
API CUresult cuMemGetInfo(size_t *f, size_t *t) {
    *f = stub_free();
    *t = 80ull << 30;
    return CUDA_SUCCESS;
}
API CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) {
    memcpy((void *)(uintptr_t)d, s, n);
    return CUDA_SUCCESS;
}
static void copy_back(void *d, CUdeviceptr s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); }
API CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) {
    trace("cuMemcpyDtoH", device_of(current), NULL);
    copy_back(d, s, n);
    return CUDA_SUCCESS;
}
API CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) {
    (void)st;
    trace("cuMemcpyDtoHAsync", device_of(current), NULL);
    copy_back(d, s, n);
    return CUDA_SUCCESS;
}
/* Page-locked host memory: plain host memory, its device address its host address (unified
 * addressing). */
API CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags) {
    (void)flags;
    *p = malloc(bytes ? bytes : 1);
    if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
    memset(*p, 0xA5, bytes); /* not zeroed, as the driver's is not */
    return CUDA_SUCCESS;
}
API CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned int flags) {
    (void)flags;
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
API CUresult cuMemFreeHost(void *p) {
    free(p);
    return CUDA_SUCCESS;
}
API CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) {
    (void)st;
    return cuMemcpyHtoD(d, s, n);
}
API CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    (void)st;
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}
API CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {
    memset((void *)(uintptr_t)d, v, n);
    return CUDA_SUCCESS;
}
API CUresult cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n) {
    for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)d + 4 * i, &v, 4);
    return CUDA_SUCCESS;
}
API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
    (void)st;
    return cuMemsetD8(d, v, n);
}
/* Each stream a handle of its own, as the driver's are (work per stream is kept apart by handle). */
API CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
    (void)flags;
    *s = malloc(1);
    return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
API CUresult cuStreamDestroy(CUstream s) {
    free(s);
    return CUDA_SUCCESS;
}
/* A stream's work is the current context's (the stub's streams do not know their device). */
API CUresult cuStreamSynchronize(CUstream s) {
    (void)s;
    trace("cuStreamSynchronize", device_of(current), NULL);
    return faulted(device_of(current)) ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}
API CUresult cuStreamQuery(CUstream s) {
    (void)s;
    trace("cuStreamQuery", device_of(current), NULL);
    return faulted(device_of(current)) ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}
/* An event knows its device (the context current when it was made) and how many more queries it
 * answers "not ready" (KJ_STUB_EVENT_PENDING, from its last record). */
typedef struct stub_event {
    int device, pending;
} stub_event;
API CUresult cuEventCreate(CUevent *e, unsigned int flags) {
    (void)flags;
    stub_event *se = calloc(1, sizeof *se);
    if (!se) return CUDA_ERROR_OUT_OF_MEMORY;
    se->device = device_of(current);
    *e = (CUevent)se;
    return CUDA_SUCCESS;
}
API CUresult cuEventDestroy(CUevent e) {
    free(e);
    return CUDA_SUCCESS;
}
API CUresult cuEventRecord(CUevent e, CUstream s) {
    (void)s;
    stub_event *se = (stub_event *)e;
    trace("cuEventRecord", se->device, NULL);
    se->pending = env_int("KJ_STUB_EVENT_PENDING", 0);
    return CUDA_SUCCESS;
}
API CUresult cuEventQuery(CUevent e) {
    stub_event *se = (stub_event *)e;
    CUresult r = faulted(se->device) ? CUDA_ERROR_LAUNCH_FAILED : se->pending > 0 ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
    if (r == CUDA_ERROR_NOT_READY) se->pending--;
    trace("cuEventQuery", se->device, r == CUDA_SUCCESS ? "done" : r == CUDA_ERROR_NOT_READY ? "not-ready" : "failed");
    return r;
}
API CUresult cuEventSynchronize(CUevent e) {
    stub_event *se = (stub_event *)e;
    trace("cuEventSynchronize", se->device, NULL);
    se->pending = 0;
    return faulted(se->device) ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}
API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
    (void)a, (void)b;
    *ms = 0.0125f;
    return CUDA_SUCCESS;
}

/* ---- launches: a few test kernels (tests/kernels/) run on the CPU, over the threads launched ---- */

/* A parameter's bytes, as the driver takes them: copied, whatever the alignment of the caller's copy. */
static void *ptr_at(void **params, int i) {
    void *v;
    memcpy(&v, params[i], sizeof v);
    return v;
}
static int int_at(void **params, int i) {
    int v;
    memcpy(&v, params[i], sizeof v);
    return v;
}
static float f32_at(void **params, int i) {
    float v;
    memcpy(&v, params[i], sizeof v);
    return v;
}
static double f64_at(void **params, int i) {
    double v;
    memcpy(&v, params[i], sizeof v);
    return v;
}

API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream s, void **params, void **extra) {
    (void)gz, (void)bz, (void)shared, (void)s, (void)extra;
    const char *name = ((stub_function *)f)->name;
    uint64_t threads = (uint64_t)gx * bx;
    trace("launch", device_of(current), name);
    if (getenv("KJ_STUB_LAUNCH_NOTHING")) {
    } else if (strstr(name, "vadd")) { /* (const float *a, const float *b, float *c, int n) */
        const float *a = ptr_at(params, 0), *b = ptr_at(params, 1);
        float *c = ptr_at(params, 2);
        int n = int_at(params, 3);
        for (uint64_t i = 0; i < threads && i < (uint64_t)n; i++) c[i] = a[i] + b[i];
    } else if (strstr(name, "blend")) { /* link_main.cu with link_lib.cu: out = (3x - y) * 0.5 */
        const float *x = ptr_at(params, 0), *y = ptr_at(params, 1);
        float *out = ptr_at(params, 2);
        int n = int_at(params, 3);
        for (uint64_t i = 0; i < threads && i < (uint64_t)n; i++) out[i] = (3.0f * x[i] - y[i]) * 0.5f;
    } else if (strstr(name, "accumulate")) { /* (float *y, const float *x, int n) */
        float *y = ptr_at(params, 0);
        const float *x = ptr_at(params, 1);
        int n = int_at(params, 2);
        for (uint64_t i = 0; i < threads && i < (uint64_t)n; i++) y[i] += x[i];
    } else if (strstr(name, "transpose") && !strstr(name, "transpose_")) {
        /* tests/kernels/transpose.cu (const float *in, float *out, int w, int h); not the built-in
         * family's transpose_* entries, whose element size and parameters differ */
        const float *in = ptr_at(params, 0);
        float *out = ptr_at(params, 1);
        int w = int_at(params, 2), h = int_at(params, 3);
        for (uint64_t y = 0; y < (uint64_t)gy * by && y < (uint64_t)h; y++)
            for (uint64_t x = 0; x < threads && x < (uint64_t)w; x++)
                out[x * (uint64_t)h + y] = in[y * (uint64_t)w + x];
    } else if (strstr(name, "scaleIf")) { /* scale<float, B>(float *x, float a, int n) */
        float *x = ptr_at(params, 0);
        float a = f32_at(params, 1);
        int n = int_at(params, 2);
        for (uint64_t i = 0; i < threads && i < (uint64_t)n; i++) x[i] *= a;
    } else if (strstr(name, "scaleId")) { /* scale<double, B>(double *x, double a, int n) */
        double *x = ptr_at(params, 0);
        double a = f64_at(params, 1);
        int n = int_at(params, 2);
        for (uint64_t i = 0; i < threads && i < (uint64_t)n; i++) x[i] *= a;
    } else if (strstr(name, "axpyId")) { /* axpy<double>(double *y, const double *x, double a, int n) */
        double *y = ptr_at(params, 0);
        const double *x = ptr_at(params, 1);
        double a = f64_at(params, 2);
        int n = int_at(params, 3);
        for (uint64_t i = 0; i < threads && i < (uint64_t)n; i++) y[i] = a * x[i] + y[i];
    } else if (strstr(name, "reduce_fast")) {
        /* (input, unsigned long long n, result, ...): the stub cannot know the op or type the kernel was
         * compiled for, so it writes n as a 32-bit result, which a u32 or i64 reduction (whose result
         * starts zeroed) reads as n: each device's part and its count are seen in the combined result */
        unsigned long long n;
        memcpy(&n, params[1], sizeof n);
        uint32_t count = (uint32_t)n;
        memcpy(ptr_at(params, 2), &count, sizeof count);
    } else if (strstr(name, "scalars")) { /* (unsigned char a, short b, double c, long long *out) */
        long long *out = ptr_at(params, 3);
        unsigned char a;
        short b;
        memcpy(&a, params[0], 1);
        memcpy(&b, params[1], 2);
        out[0] = a;
        out[1] = b;
        out[2] = (long long)f64_at(params, 2);
    }
    return CUDA_SUCCESS;
}

/* Only programmatic stream serialization is expected (kernels marked `pdl`); the first such launch
 * of a function says so on stderr, for the CLI tests to see. */
/* A cluster fits when it has at most 8 blocks (the portable size); a real device also asks that its
 * blocks fit one GPC at once. */
API CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *c) {
    (void)f;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
        unsigned blocks = c->attrs[i].value.clusterDim.x * c->attrs[i].value.clusterDim.y *
                          c->attrs[i].value.clusterDim.z;
        *n = blocks <= 8 ? 132 / (int)blocks : 0;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* Says once per function which attributes a launch carried, so that the CLI tests can see them. */
API CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    stub_function *sf = (stub_function *)f;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
            a->value.programmaticStreamSerializationAllowed == 1) {
            /* once, whichever of the threads that launch the function is first */
            if (!__atomic_exchange_n(&sf->early_launch_said, 1, __ATOMIC_RELAXED))
                fprintf(stderr, "stub-cuda: programmatic dependent launch of %s\n", sf->name);
        } else if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative == 1) {
            fprintf(stderr, "stub-cuda: cooperative launch of %s\n", sf->name);
        } else if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            const unsigned x = a->value.clusterDim.x, y = a->value.clusterDim.y, z = a->value.clusterDim.z;
            if (!x || !y || !z || c->gridDimX % x || c->gridDimY % y || c->gridDimZ % z)
                return CUDA_ERROR_INVALID_VALUE;
            fprintf(stderr, "stub-cuda: cluster launch of %s, clusters of %ux%ux%u\n", sf->name, x, y, z);
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                          c->sharedMemBytes, c->hStream, params, extra);
}
