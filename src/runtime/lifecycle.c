/* kj_runtime_create and kj_runtime_destroy: the runtime's life, on top of the rest of runtime/:
 * opening the device, choosing the arch and opening the caches (disk, remote, seeds); then tearing down prefetches, states,
 * kernels and modules in that order. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/sized.h"
#include "base/util.h"
#include "runtime/kernel.h"
#include "runtime/prefetch.h"
#include "runtime/runtime.h"

kj_status kj_runtime_options_init(kj_runtime_options *o, size_t size) {
    KJ_RETURN_IF(!o, KJ_ERR_USAGE, "kj_runtime_options_init: options is NULL");
    static const kj_runtime_options defaults = KJ_RUNTIME_OPTIONS_INIT;
    return kj__sized_init(o, size, &defaults, sizeof defaults, "kj_runtime_options", "KJ_RUNTIME_OPTIONS_INIT");
}

static kj_status open_device(kj_runtime *rt, const kj_runtime_options *o) {
    const kj__cuda_api *cu;
    kj_status s = kj__cuda_load(&cu);
    int count = 0;
    if (s == KJ_OK && cu->cuDeviceGetCount(&count) != CUDA_SUCCESS) count = 0;
    if (o->device == KJ_DEVICE_AUTO && (s != KJ_OK || count == 0)) {
        kj__log(&rt->log, KJ_LOG_INFO, "no CUDA device (%s); compiling only",
                s != KJ_OK ? kj_last_error() : "the driver reports none");
        return KJ_OK;
    }
    KJ_FORWARD(s);
    int ordinal = o->device == KJ_DEVICE_AUTO ? 0 : o->device;
    KJ_RETURN_IF(count == 0, KJ_ERR_NO_DEVICE, "no CUDA device");
    KJ_RETURN_IF(ordinal < 0 || ordinal >= count, KJ_ERR_USAGE,
                 "device %d does not exist: this machine has %d device%s", ordinal, count, count == 1 ? "" : "s");
    rt->cu = cu;
    KJ_FORWARD(kj__query_device(cu, ordinal, &rt->info));
    KJ_CU(cu->cuDeviceGet(&rt->device, ordinal), "cuDeviceGet");
    if (o->cu_context) {
        rt->context = (CUcontext)o->cu_context;
        CUcontext prev;
        KJ_CU(cu->cuCtxGetCurrent(&prev), "cuCtxGetCurrent");
        KJ_CU(cu->cuCtxSetCurrent(rt->context), "cuCtxSetCurrent (the context given in the options)");
        CUdevice dev;
        CUresult r = cu->cuCtxGetDevice(&dev);
        cu->cuCtxSetCurrent(prev);
        KJ_CU(r, "cuCtxGetDevice");
        rt->device = dev;
        int ord = 0, n = 0;
        cu->cuDeviceGetCount(&n);
        for (int i = 0; i < n; i++) {
            CUdevice d;
            if (cu->cuDeviceGet(&d, i) == CUDA_SUCCESS && d == dev) ord = i;
        }
        KJ_FORWARD(kj__query_device(cu, ord, &rt->info));
    } else {
        KJ_CU(cu->cuDevicePrimaryCtxRetain(&rt->context, rt->device), "cuDevicePrimaryCtxRetain");
        rt->owns_primary = 1;
    }
    rt->has_device = 1;
    KJ_CU(cu->cuCtxSetCurrent(rt->context), "cuCtxSetCurrent");
    return KJ_OK;
}

static kj_status choose_arch(kj_runtime *rt, const kj_runtime_options *o) {
    if (!rt->has_device) return kj__arch_for_user(o->arch && *o->arch ? o->arch : "sm_90", &rt->target);
    KJ_FORWARD(kj__arch_for_device(rt->info.cc_major * 10 + rt->info.cc_minor, &rt->target));
    rt->own_target = 1;
    /* a target asked for that is the device's own, by either name, stays the device's */
    if (o->arch && *o->arch && strcmp(o->arch, rt->target.arch) != 0 && strcmp(o->arch, rt->target.cache_arch) != 0) {
        kj__target asked;
        KJ_FORWARD(kj__arch_for_user(o->arch, &asked));
        KJ_FORWARD(kj__runtime_runs(rt, o->arch));
        rt->target = asked;
        rt->own_target = 0;
        return KJ_OK;
    }
    if (rt->target.ptx)
        kj__log(&rt->log, KJ_LOG_INFO, "device %s is newer than NVRTC knows: compiling PTX for %s",
                rt->target.cache_arch, rt->target.arch);
    return KJ_OK;
}

static uint64_t cache_bound(const kj_runtime_options *o, const kj__logger *log) {
    if (o->cache_max_bytes) return o->cache_max_bytes;
    const char *env = getenv("KERNJIT_CACHE_MAX");
    uint64_t v;
    if (env && *env) {
        /* the command line's grammar and message (kj_size_parse); 0 apart, for the switch it is not */
        char why[256];
        if (kj__size_parse(env, 1, UINT64_MAX, &v, why, sizeof why) == 0) return v;
        if (kj__size_parse(env, 0, 0, &v, NULL, 0) == 0)
            kj__log(log, KJ_LOG_WARN,
                    "KERNJIT_CACHE_MAX='%.40s' is 0: the bound is at least 1 byte "
                    "(KERNJIT_CACHE_DISABLE=1 turns the cache off); using 1 GiB",
                    env);
        else kj__log(log, KJ_LOG_WARN, "KERNJIT_CACHE_MAX=%s; using 1 GiB", why);
    }
    return KJ_CACHE_DEFAULT_MAX;
}

/* KERNJIT_CACHE_DISABLE=1 forces compiles, as CUDA_CACHE_DISABLE does for the driver's cache: for a
 * cold timing, or to rule the cache out. Anything but 1/0 (true/false, yes/no, on/off) is a warning. */
static int cache_disabled_by_env(const kj__logger *log) {
    const char *env = getenv("KERNJIT_CACHE_DISABLE");
    if (!env || !*env) return 0;
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(env, yes[i]) == 0) return 1;
        if (strcasecmp(env, no[i]) == 0) return 0;
    }
    kj__log(log, KJ_LOG_WARN,
            "KERNJIT_CACHE_DISABLE='%.40s' is not 1 or 0 (true/false, yes/no, on/off); the disk "
            "cache stays on",
            env);
    return 0;
}

kj_status kj_runtime_create(const kj_runtime_options *options, kj_runtime **out) {
    KJ_RETURN_IF(!out, KJ_ERR_USAGE, "kj_runtime_create: out is NULL");
    kj_runtime_options defaults = KJ_RUNTIME_OPTIONS_INIT, copy;
    const kj_runtime_options *o = options ? options : &defaults;
    KJ__SIZED_INPUT(o, copy, kj_runtime_options, KJ_RUNTIME_OPTIONS_INIT);
    KJ_RETURN_IF(o->device < KJ_DEVICE_NONE, KJ_ERR_USAGE,
                 "device %d: use an ordinal, KJ_DEVICE_AUTO or KJ_DEVICE_NONE", o->device);
    KJ_RETURN_IF(o->cache_mode != KJ_CACHE_DISK && o->cache_mode != KJ_CACHE_MEMORY_ONLY, KJ_ERR_USAGE,
                 "cache_mode %d is not KJ_CACHE_DISK or KJ_CACHE_MEMORY_ONLY", (int)o->cache_mode);
    KJ_RETURN_IF(o->reserved != 0, KJ_ERR_USAGE,
                 "kj_runtime_options.reserved is %u: it must be 0 (initialize the struct with KJ_RUNTIME_OPTIONS_INIT, "
                 "or set every field it does not name to 0)",
                 (unsigned)o->reserved);
    kj_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_init(&rt->lock, NULL);
    rt->log = (kj__logger){o->log, o->log_user, o->log_level};
    kj__warn_path_variables(&rt->log);
    kj_status s = KJ_OK;
    if (o->device != KJ_DEVICE_NONE) s = open_device(rt, o);
    if (s == KJ_OK) s = choose_arch(rt, o);
    if (s == KJ_OK) {
        const char *sp = o->search_path ? o->search_path : kj__getenv_path("KERNJIT_PATH");
        if (sp && *sp && !(rt->search_path = kj__strdup(sp))) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    int disabled = s == KJ_OK && o->cache_mode == KJ_CACHE_DISK && cache_disabled_by_env(&rt->log);
    if (disabled) {
        kj__log(&rt->log, KJ_LOG_INFO,
                "KERNJIT_CACHE_DISABLE is set: every kernel is compiled, nothing is read "
                "from or written to the disk cache, the seeds or the remote cache");
    } else if (s == KJ_OK && o->cache_mode == KJ_CACHE_DISK) {
        rt->cache_given = (o->cache_dir && *o->cache_dir) || kj__getenv_path("KERNJIT_CACHE_DIR");
        char *dir = o->cache_dir && *o->cache_dir ? kj__strdup(o->cache_dir) : kj__cache_default_dir();
        rt->cache = kj__cache_open(dir, cache_bound(o, &rt->log), &rt->log);
        free(dir);
    }
    if (s == KJ_OK && !disabled) s = kj__remote_open(o, &rt->log, &rt->remote);
    if (s == KJ_OK && !disabled && o->cache_mode == KJ_CACHE_DISK) {
        const kj__remote_config *rc = kj__remote_settings(rt->remote);
        s = kj__seed_open(o, rc != NULL, rc ? rc->secret : NULL, rc ? rc->secret_len : 0, &rt->log, &rt->seed);
    }
    if (s == KJ_OK) *out = rt;
    else kj_runtime_destroy(rt);
    return s;
}

void kj_runtime_destroy(kj_runtime *rt) {
    if (!rt) return;
    kj__prefetch_destroy(rt);
    if (rt->has_device) rt->cu->cuCtxSetCurrent(rt->context);
    for (kj__state_node *n = rt->states, *next; n; n = next) {
        next = n->next;
        n->key->destroy(rt, n->state);
        free(n);
    }
    kj__kernels_destroy(rt);
    if (rt->owns_primary) rt->cu->cuDevicePrimaryCtxRelease(rt->device);
    kj__remote_close(rt->remote);
    kj__seed_close(rt->seed);
    kj__cache_close(rt->cache);
    free(rt->search_path);
    pthread_mutex_destroy(&rt->lock);
    free(rt);
}
