/* The compile API: kj_compile, and kj_emit with the fat binaries of kj_emit_fatbin. A request is
 * prepared (jit/prepare.h) and its binary obtained (binary.h) as kj_kernel_get does, with nothing
 * loaded; the result the caller gets is kept per thread. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/sized.h"
#include "base/util.h"
#include "jit/fatbin.h"
#include "jit/prepare.h"
#include "jit/resources.h"
#include "runtime/binary.h"
#include "runtime/runtime.h"

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
static void keep_for_result(const kj__prepared *p, kj__binary *bin, const char *entry_symbol,
                            kj_compile_result *result) {
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
        const char *symbol = i < bin->lowered_count && bin->lowered[i] ? bin->lowered[i]
                             : !p->listed_count                        ? entry_symbol
                                                                       : name;
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
        s = KJ_FAIL(KJ_ERR_UNSUPPORTED,
                    "the target is %s: there is PTX for the driver to finish, no cubin; emit ptx, "
                    "or give an sm_XY target",
                    p.target.arch);
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
                         "kj_emit_fatbin: target %.40s is given twice: a fat binary holds one image a target",
                         archs[i]);
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
        images[got] = (kj__fatbin_image){
            bins[got].data,
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
