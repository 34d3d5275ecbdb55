/* Loaded kernels: a request's kernel made (prepared by jit/prepare.h, its binary obtained by
 * binary.h, the module loaded once per cache key, the function found and its attributes read), kept
 * in the runtime's memory map under the request's hash, described by kj_kernel_query and unloaded
 * with the runtime. The door in front of it, kj_kernel_get, is kernel_get.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "base/error.h"
#include "base/sized.h"
#include "jit/prepare.h"
#include "runtime/binary.h"
#include "runtime/launch.h"
#include "runtime/kernel.h"
#include "runtime/runtime.h"
#include "jit/spec.h"
#include "base/util.h"

static void hash_str(XXH3_state_t *st, const char *s) {
    uint64_t n = s ? strlen(s) + 1 : 0; /* NULL and "" hash differently */
    XXH3_128bits_update(st, &n, sizeof n);
    if (s) XXH3_128bits_update(st, s, n);
}

/* The memory map's key: the request exactly as given. Two spellings of one kernel map to the same
 * module through the cache key; this hash only has to be fast and exact. */
void kj__request_hash(const kj_request *req, uint8_t out[16]) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    hash_str(&st, req->kernel);
    hash_str(&st, req->source_text);
    hash_str(&st, req->entry);
    hash_str(&st, req->arch);
    uint64_t n = req->defines ? req->define_count : 0;
    XXH3_128bits_update(&st, &n, sizeof n);
    for (size_t i = 0; i < n; i++) {
        hash_str(&st, req->defines[i].name);
        hash_str(&st, req->defines[i].value);
    }
    n = req->options ? req->option_count : 0;
    XXH3_128bits_update(&st, &n, sizeof n);
    for (size_t i = 0; i < n; i++) hash_str(&st, req->options[i]);
    n = req->sources ? req->source_count : 0;
    XXH3_128bits_update(&st, &n, sizeof n);
    for (size_t i = 0; i < n; i++) hash_str(&st, req->sources[i]);
    n = req->entries ? req->entry_count : 0;
    XXH3_128bits_update(&st, &n, sizeof n);
    for (size_t i = 0; i < n; i++) hash_str(&st, req->entries[i]);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
    memcpy(out, c.digest, 16);
}

static void kernel_free(kj_kernel *k) {
    if (k) kj__free_all(k->kernel, k->entry, k->lowered_name, k->key, k->defines, k->log, k);
}

static void kernel_free_cb(void *k, void *user) {
    (void)user;
    kernel_free(k);
}

void kj__kernels_destroy(kj_runtime *rt) {
    kj__map_clear(&rt->requests, kernel_free_cb, NULL);
    kj__map_clear(&rt->modules, NULL, NULL);
    for (kj__module *m = rt->module_list, *next; m; m = next) {
        next = m->next;
        if (rt->has_device) rt->cu->cuModuleUnload(m->module);
        kj__strings_free(m->lowered, m->lowered_count);
        free(m);
    }
    rt->module_list = NULL;
}

static char *joined_defines(const kj__prepared *p) {
    kj__buf b = {0};
    kj__buf_puts(&b, "");
    for (size_t i = 0; i < p->define_count; i++) kj__buf_printf(&b, "%s%s", i ? " " : "", p->defines[i]);
    return b.data;
}

/* A loaded module's lowered names, for another request of the same key (another of its entries). */
static kj_status lowered_from_module(const kj__prepared *p, const kj__module *m, kj__binary *bin) {
    size_t entry = p->listed_count ? p->listed_index : 0;
    if (!p->expression_count || entry >= m->lowered_count || !m->lowered[entry]) return KJ_OK;
    bin->lowered_name = kj__strdup(m->lowered[entry]);
    return bin->lowered_name ? KJ_OK : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
}

/* Loads the module for the key, or finds the one already loaded. */
static kj_status module_for(kj_runtime *rt, const kj__prepared *p, kj__binary *bin, CUmodule *out) {
    pthread_mutex_lock(&rt->lock);
    kj__module *known = kj__map_get(&rt->modules, p->key.bytes);
    pthread_mutex_unlock(&rt->lock);
    if (known) { /* modules live until the runtime does */
        bin->origin = KJ_ORIGIN_MEMORY;
        *out = known->module;
        return lowered_from_module(p, known, bin);
    }
    CUmodule m = NULL;
    KJ_FORWARD(kj__obtain_binary(rt, p, bin));
    KJ_FORWARD(kj__enter(rt));
    CUmodule loaded;
    CUresult r;
    /* PTX is compiled by the driver now: what it says when it cannot goes into the message */
    char jit_log[4096] = "";
    if (bin->is_ptx && rt->cu->cuModuleLoadDataEx) {
        CUjit_option names[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *values[] = {jit_log, (void *)(uintptr_t)sizeof jit_log};
        r = rt->cu->cuModuleLoadDataEx(&loaded, bin->data, 2, names, values);
    } else {
        r = rt->cu->cuModuleLoadData(&loaded, bin->data);
    }
    if (r != CUDA_SUCCESS && bin->is_ptx) {
        char what[160];
        snprintf(what, sizeof what, "the driver compiling the PTX for %s for device %d (sm_%d%d) (cuModuleLoadDataEx)",
                 p->target.arch, rt->info.ordinal, rt->info.cc_major, rt->info.cc_minor);
        kj_status s = kj__cuda_fail(r, __FILE__, __LINE__, what);
        jit_log[sizeof jit_log - 1] = '\0';
        if (*jit_log) kj__error_append(jit_log);
        return s;
    }
    if (r != CUDA_SUCCESS)
        return kj__cuda_fail(r, __FILE__, __LINE__, "loading the compiled module (cuModuleLoadData)");
    kj__module *node = calloc(1, sizeof *node);
    int oom = !node;
    if (node && bin->lowered_count) {
        node->lowered = calloc(bin->lowered_count, sizeof *node->lowered);
        node->lowered_count = node->lowered ? bin->lowered_count : 0;
        oom = !node->lowered;
        for (size_t i = 0; i < node->lowered_count; i++)
            if (bin->lowered[i] && !(node->lowered[i] = kj__strdup(bin->lowered[i]))) oom = 1;
    }
    pthread_mutex_lock(&rt->lock);
    kj__module *existing = kj__map_get(&rt->modules, p->key.bytes);
    kj_status s = KJ_OK;
    if (existing) {
        m = existing->module; /* another thread loaded it meanwhile */
    } else if (oom || kj__map_put(&rt->modules, p->key.bytes, node) != 0) {
        s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    } else {
        node->module = loaded;
        node->next = rt->module_list;
        rt->module_list = node;
        node = NULL;
        m = loaded;
    }
    pthread_mutex_unlock(&rt->lock);
    if (node) kj__strings_free(node->lowered, node->lowered_count);
    free(node);
    if (m != loaded) rt->cu->cuModuleUnload(loaded);
    *out = m;
    return s;
}

/* What kj_kernel_info reports and launches check: a value the driver cannot give is an error, not a
 * silent zero (a zero max_threads would refuse every launch). */
static kj_status read_attributes(kj_runtime *rt, CUfunction fn, kj_kernel *k) {
    KJ_CU(rt->cu->cuFuncGetAttribute(&k->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute(NUM_REGS)");
    KJ_CU(rt->cu->cuFuncGetAttribute(&k->shared_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
          "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
    KJ_CU(rt->cu->cuFuncGetAttribute(&k->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn),
          "cuFuncGetAttribute(LOCAL_SIZE_BYTES)");
    KJ_CU(rt->cu->cuFuncGetAttribute(&k->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
          "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
    int dyn = 0;
    KJ_CU(rt->cu->cuFuncGetAttribute(&dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn),
          "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    k->dynamic_shared_allowed = dyn > 0 ? (unsigned)dyn : 0;
    return KJ_OK;
}

static kj_status make_kernel(kj_runtime *rt, const kj_request *req, const kj__prepared *p, kj__binary *bin, CUmodule m,
                             kj_kernel **out) {
    const char *symbol = bin->lowered_name ? bin->lowered_name : p->entry;
    CUfunction fn;
    CUresult r = rt->cu->cuModuleGetFunction(&fn, m, symbol);
    if (r == CUDA_ERROR_NOT_FOUND)
        return KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY,
                       "entry '%.200s' is not a kernel of %s (is it __global__ and extern \"C\"?)", p->entry,
                       p->src->origin);
    if (r != CUDA_SUCCESS) return kj__cuda_fail(r, __FILE__, __LINE__, "cuModuleGetFunction");
    kj_kernel *k = calloc(1, sizeof *k);
    if (!k) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    k->rt = rt;
    k->function = fn;
    k->kernel = kj__strdup(req->kernel ? req->kernel : p->src->name);
    k->entry = kj__strdup(p->entry);
    k->lowered_name = kj__strdup(symbol);
    k->key = kj__strdup(p->key.hex);
    k->defines = joined_defines(p);
    k->log = kj__strdup(bin->log ? bin->log : "");
    k->arch = kj__intern(p->target.arch);
    k->origin = bin->origin;
    k->linked = p->devrt;
    k->pending_launches = p->spec->pending_launches;
    k->shared_dynamic = p->shared_dynamic;
    k->carveout = p->carveout;
    /* The wait only exists in code built for 9.0 or later (griddepcontrol), and only such devices
     * honour the attribute. */
    k->pdl = p->pdl && rt->info.cc_major >= 9 && rt->cu->cuLaunchKernelEx != NULL;
    if (!k->kernel || !k->entry || !k->lowered_name || !k->key || !k->defines || !k->log || !k->arch) {
        kernel_free(k);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    kj_status s = read_attributes(rt, fn, k);
    if (s == KJ_OK) s = kj__kernel_apply_metadata(k);
    if (s == KJ_OK) *out = k;
    else kernel_free(k);
    return s;
}

kj_kernel *kj__memory_hit(kj_runtime *rt, const uint8_t h[16], kj_origin *origin) {
    pthread_mutex_lock(&rt->lock);
    kj_kernel *k = kj__map_get(&rt->requests, h);
    if (k) {
        rt->stats.memory_hits++;
        if (origin) *origin = k->prefetched ? k->origin : KJ_ORIGIN_MEMORY;
        k->prefetched = 0;
    }
    pthread_mutex_unlock(&rt->lock);
    return k;
}

kj_status kj__kernel_get_now(kj_runtime *rt, const kj_request *req, const uint8_t h[16], int prefetch, kj_kernel **out,
                             kj_origin *origin) {
    kj_kernel *k = NULL;
    KJ_RETURN_IF(!rt->has_device, KJ_ERR_NO_DEVICE,
                 "no CUDA device: kernels can be compiled here (for %s) but not loaded", rt->target.arch);

    kj__prepared p;
    kj__binary bin = {0};
    CUmodule m = NULL;
    kj_status s = kj__runtime_prepare(rt, req, 1, &p);
    if (s == KJ_OK) s = module_for(rt, &p, &bin, &m);
    if (s == KJ_OK) s = make_kernel(rt, req, &p, &bin, m, &k);
    kj_origin from = bin.origin;
    kj__binary_free(&bin);
    kj__prepared_free(&p);
    KJ_FORWARD(s);

    k->prefetched = prefetch;
    pthread_mutex_lock(&rt->lock);
    kj_kernel *existing = kj__map_get(&rt->requests, h);
    if (!existing && kj__map_put(&rt->requests, h, k) != 0) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_unlock(&rt->lock);
    if (existing || s != KJ_OK) {
        kernel_free(k);
        k = existing;
        from = KJ_ORIGIN_MEMORY;
    }
    KJ_FORWARD(s);
    *out = k;
    if (origin) *origin = from;
    return KJ_OK;
}

kj_status kj_kernel_query(const kj_kernel *k, kj_kernel_info *info) {
    KJ_RETURN_IF(!k || !info, KJ_ERR_USAGE, "kj_kernel_query: NULL argument");
    KJ_FORWARD(KJ__SIZED_CHECK(info, kj_kernel_info, KJ_KERNEL_INFO_INIT));
    kj_kernel_info full;
    kj_kernel_info *caller = info;
    info = &full;
    memset(info, 0, sizeof *info);
    info->kernel = k->kernel;
    info->entry = k->entry;
    info->lowered_name = k->lowered_name;
    info->arch = k->arch;
    info->key = k->key;
    info->defines = k->defines;
    info->log = k->log;
    info->origin = k->origin;
    info->num_regs = k->num_regs;
    info->shared_static_bytes = k->shared_static;
    info->local_bytes = k->local_bytes;
    info->max_threads_per_block = k->max_threads;
    info->linked = k->linked;
    info->shared_dynamic_bytes = k->shared_dynamic;
    info->carveout = k->carveout == KJ__CARVEOUT_UNSET ? KJ__CARVEOUT_DEFAULT : k->carveout;
    info->pdl = k->pdl;
    KJ__SIZED_WRITE(caller, full);
    return KJ_OK;
}
