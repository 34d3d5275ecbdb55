/* One request, end to end: prepared (jit/prepare.h: the source found, the macros validated against
 * its metadata, the cache key computed), looked up in memory, then in the seeds, on disk, then in the
 * remote cache, else compiled (and linked with the device runtime), stored (and pushed), the module
 * loaded and the entry found. The launch is launch.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "jit/fatbin.h"
#include "base/error.h"
#include "base/sized.h"
#include "jit/prepare.h"
#include "jit/resources.h"
#include "runtime/binary.h"
#include "runtime/launch.h"
#include "runtime/kernel.h"
#include "runtime/runtime.h"
#include "jit/spec.h"
#include "base/util.h"

/* ---- requests -------------------------------------------------------------------------------- */

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
    if (r != CUDA_SUCCESS) return kj__cuda_fail(r, __FILE__, __LINE__, "loading the compiled module (cuModuleLoadData)");
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
        return KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "entry '%.200s' is not a kernel of %s (is it __global__ and extern \"C\"?)",
                       p->entry, p->src->origin);
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

/* What kj_compile_result points to (its strings, the resources): the calling thread's until its next
 * kj_compile or kj_emit, freed with the thread (a pthread key, so that a pool's threads leave nothing
 * behind). */
typedef struct result_storage {
    char *log;
    char **entry_symbols;
    size_t entry_symbol_count;
    kj__resources resources;
    char arch[24];
    char key[33];
    char cache_path[PATH_MAX];
} result_storage;

static pthread_key_t result_key;
static pthread_once_t result_once = PTHREAD_ONCE_INIT;

static void free_result_storage(void *v) {
    result_storage *r = v;
    if (!r) return;
    free(r->log);
    kj__strings_free(r->entry_symbols, r->entry_symbol_count);
    kj__resources_free(&r->resources);
    free(r);
}

static void make_result_key(void) { (void)pthread_key_create(&result_key, free_result_storage); }

/* Moves the binary's log and resources into the thread's storage, copies the strings there, and
 * points result at them (at "" when out of memory). */
static void keep_for_result(const kj__prepared *p, kj__binary *bin, const char *entry_symbol, kj_compile_result *result) {
    pthread_once(&result_once, make_result_key);
    free_result_storage(pthread_getspecific(result_key));
    result_storage *r = calloc(1, sizeof *r);
    (void)pthread_setspecific(result_key, r);
    result->log = result->arch = result->key = result->cache_path = "";
    if (!r) return;
    snprintf(r->arch, sizeof r->arch, "%s", p->target.arch);
    snprintf(r->key, sizeof r->key, "%s", p->key.hex);
    snprintf(r->cache_path, sizeof r->cache_path, "%s", bin->path);
    result->arch = r->arch;
    result->key = r->key;
    result->cache_path = r->cache_path;
    r->log = bin->log ? bin->log : kj__strdup("");
    r->resources = bin->resources;
    bin->log = NULL;
    memset(&bin->resources, 0, sizeof bin->resources);
    if (r->log) result->log = r->log;
    result->resource_table = r->resources.count ? r->resources.items : NULL;
    result->resource_count = r->resources.count;
    result->entry_resources = kj__resources_find(&r->resources, entry_symbol);
    /* each entry's symbol: the listed entries', else the one's */
    size_t n = p->listed_count ? p->listed_count : 1;
    for (size_t i = 0; i < n; i++) {
        const char *name = p->listed_count ? p->listed[i] : p->entry;
        const char *symbol = i < bin->lowered_count && bin->lowered[i] ? bin->lowered[i] : !p->listed_count ? entry_symbol : name;
        if (kj__strings_push(&r->entry_symbols, &r->entry_symbol_count, kj__strdup(symbol)) != 0) break;
    }
    result->entry_symbols = (const char *const *)r->entry_symbols;
    result->entry_symbol_count = r->entry_symbol_count;
}

const kj_resource_usage *kj_compile_result_resource(const kj_compile_result *result, size_t index) {
    size_t known = offsetof(kj_compile_result, resource_count) + sizeof result->resource_count;
    if (!result || result->size < known || index >= result->resource_count) return NULL;
    return &((const kj_resource_usage *)result->resource_table)[index];
}

/* What kj_compile and kj_emit say about the binary they got (its log and resources move into the
 * thread's storage), into the caller's result (checked by KJ__SIZED_CHECK) as far as its size goes. */
static void fill_result(const kj__prepared *p, kj__binary *bin, kj_compile_result *caller) {
    kj_compile_result full, *result = &full;
    memset(result, 0, sizeof *result);
    result->cache_hit = bin->origin == KJ_ORIGIN_DISK || bin->origin == KJ_ORIGIN_SEED;
    result->origin = bin->origin;
    result->stored = bin->stored;
    result->linked = p->devrt;
    result->is_ptx = bin->is_ptx;
    result->compile_ms = bin->compile_ms;
    result->link_ms = bin->link_ms;
    result->binary_bytes = bin->size;
    result->source_count = (unsigned)p->unit_count;
    keep_for_result(p, bin, bin->lowered_name ? bin->lowered_name : p->entry, result);
    KJ__SIZED_WRITE(caller, full);
}

static void count_request(kj_runtime *rt) {
    pthread_mutex_lock(&rt->lock);
    rt->stats.requests++;
    pthread_mutex_unlock(&rt->lock);
}

kj_status kj_compile(kj_runtime *rt, const kj_request *req, kj_compile_result *result) {
    KJ_RETURN_IF(!rt || !req, KJ_ERR_USAGE, "kj_compile: runtime and request are required");
    kj_request copy;
    KJ__SIZED_INPUT(req, copy, kj_request, KJ_REQUEST_INIT);
    if (result) KJ_FORWARD(KJ__SIZED_CHECK(result, kj_compile_result, KJ_COMPILE_RESULT_INIT));
    count_request(rt);
    kj__prepared p;
    kj__binary bin;
    kj_status s = kj__runtime_prepare(rt, req, 0, &p);
    if (s == KJ_OK) s = kj__obtain_binary(rt, &p, &bin);
    if (s == KJ_OK && result) fill_result(&p, &bin, result);
    if (s == KJ_OK) kj__binary_free(&bin);
    kj__prepared_free(&p);
    return s;
}

/* ---- the compiler's output (kj_emit) --------------------------------------------------------- */

static const char *const emit_names[KJ_EMIT_FORMAT_COUNT_] = {"cubin", "ptx", "ltoir", "fatbin"};

const char *kj_emit_format_name(kj_emit_format f) {
    return (unsigned)f < KJ_EMIT_FORMAT_COUNT_ ? emit_names[f] : "unknown";
}

kj_status kj_emit_format_parse(const char *text, kj_emit_format *out) {
    KJ_RETURN_IF(!out, KJ_ERR_USAGE, "kj_emit_format_parse: out is NULL");
    for (int i = 0; text && i < KJ_EMIT_FORMAT_COUNT_; i++)
        if (strcmp(text, emit_names[i]) == 0) {
            *out = (kj_emit_format)i;
            return KJ_OK;
        }
    return KJ_FAIL(KJ_ERR_USAGE, "unknown output format '%.40s': allowed are cubin, ptx, ltoir, fatbin",
                   text ? text : "(null)");
}

void kj_emit_free(void *data) { free(data); }


kj_status kj_emit(kj_runtime *rt, const kj_request *req, kj_emit_format format, void **data, size_t *size,
                  kj_compile_result *result) {
    KJ_RETURN_IF(!rt || !req || !data || !size, KJ_ERR_USAGE, "kj_emit: runtime, request, data and size are required");
    KJ_RETURN_IF((unsigned)format >= KJ_EMIT_FORMAT_COUNT_, KJ_ERR_USAGE,
                 "kj_emit: format %d is not one of KJ_EMIT_CUBIN, KJ_EMIT_PTX, KJ_EMIT_LTOIR, KJ_EMIT_FATBIN",
                 (int)format);
    if (format == KJ_EMIT_FATBIN) {
        const char *arch = req->arch && *req->arch ? req->arch : rt->target.arch;
        return kj_emit_fatbin(rt, req, &arch, 1, data, size, result);
    }
    kj_request copy;
    KJ__SIZED_INPUT(req, copy, kj_request, KJ_REQUEST_INIT);
    if (result) KJ_FORWARD(KJ__SIZED_CHECK(result, kj_compile_result, KJ_COMPILE_RESULT_INIT));
    count_request(rt);
    kj__prepared p;
    kj__binary bin;
    kj_status s = kj__runtime_prepare(rt, req, 0, &p);
    if (s == KJ_OK && format == KJ_EMIT_CUBIN && p.target.ptx)
        s = KJ_FAIL(KJ_ERR_UNSUPPORTED, "the target is %s: there is PTX for the driver to finish, no cubin; emit ptx, "
                    "or give an sm_XY target", p.target.arch);
    if (s == KJ_OK) s = format == KJ_EMIT_CUBIN ? kj__obtain_binary(rt, &p, &bin) : kj__emit_unit(rt, &p, format, &bin);
    if (s == KJ_OK) {
        if (result) fill_result(&p, &bin, result);
        *data = bin.data;
        *size = bin.size;
        bin.data = NULL;
        kj__binary_free(&bin);
    }
    kj__prepared_free(&p);
    return s;
}

#define MAX_FATBIN_TARGETS 16

kj_status kj_emit_fatbin_target(const char *arch) {
    KJ_RETURN_IF(!arch || !*arch, KJ_ERR_USAGE, "kj_emit_fatbin_target: the target is %s", arch ? "empty" : "NULL");
    return kj__fatbin_check_target(arch);
}

kj_status kj_emit_fatbin(kj_runtime *rt, const kj_request *req, const char *const *archs, size_t arch_count,
                         void **data, size_t *size, kj_compile_result *result) {
    KJ_RETURN_IF(!rt || !req || !data || !size, KJ_ERR_USAGE,
                 "kj_emit_fatbin: runtime, request, data and size are required");
    KJ_RETURN_IF(!archs || arch_count == 0 || arch_count > MAX_FATBIN_TARGETS, KJ_ERR_USAGE,
                 "kj_emit_fatbin: %zu targets: give 1 to %d", archs ? arch_count : 0, MAX_FATBIN_TARGETS);
    for (size_t i = 0; i < arch_count; i++) {
        KJ_RETURN_IF(!archs[i] || !*archs[i], KJ_ERR_USAGE, "kj_emit_fatbin: target %zu is %s: name each (sm_90)", i,
                     archs[i] ? "empty" : "NULL");
        for (size_t j = 0; j < i; j++)
            KJ_RETURN_IF(strcmp(archs[i], archs[j]) == 0, KJ_ERR_USAGE,
                         "kj_emit_fatbin: target %.40s is given twice: a fat binary holds one image a target", archs[i]);
        KJ_FORWARD(kj__fatbin_check_target(archs[i])); /* before anything compiles */
    }
    kj_request copy;
    KJ__SIZED_INPUT(req, copy, kj_request, KJ_REQUEST_INIT);
    if (result) KJ_FORWARD(KJ__SIZED_CHECK(result, kj_compile_result, KJ_COMPILE_RESULT_INIT));
    kj_request one = *req; /* the request (a view of the caller's, or its copy), a target at a time */
    kj__binary bins[MAX_FATBIN_TARGETS];
    kj__fatbin_image images[MAX_FATBIN_TARGETS];
    memset(bins, 0, sizeof bins);
    kj_status s = KJ_OK;
    size_t got = 0;
    kj__prepared p;
    memset(&p, 0, sizeof p);
    for (; got < arch_count && s == KJ_OK; got++) {
        count_request(rt);
        kj__prepared_free(&p);
        one.arch = archs[got];
        s = kj__runtime_prepare(rt, &one, 0, &p);
        if (s == KJ_OK) s = kj__obtain_binary(rt, &p, &bins[got]);
        if (s != KJ_OK) break;
        /* PTX keeps its NUL after the text, uncounted */
        images[got] = (kj__fatbin_image){bins[got].data,
                                         bins[got].size - (bins[got].is_ptx && bins[got].size && !bins[got].data[bins[got].size - 1]),
                                         kj__arch_number(p.target.arch), archs[got], bins[got].is_ptx};
    }
    char *fat = NULL;
    size_t fat_size = 0;
    const char *maker;
    if (s == KJ_OK) s = kj__fatbin_build(images, arch_count, &fat, &fat_size, &maker);
    if (s == KJ_OK) {
        kj__log(&rt->log, KJ_LOG_INFO, "%s: a fat binary of %zu targets made by %s", p.src->name, arch_count, maker);
        if (result) {
            bins[arch_count - 1].size = fat_size;
            fill_result(&p, &bins[arch_count - 1], result);
        }
        *data = fat;
        *size = fat_size;
    }
    for (size_t i = 0; i < got && i < MAX_FATBIN_TARGETS; i++) kj__binary_free(&bins[i]);
    kj__prepared_free(&p);
    return s;
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
