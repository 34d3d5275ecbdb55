/* The public face of the disk cache: kj_cache_dir, kj_cache_list, kj_cache_clear, kj_cache_usage; of
 * the seeds: kj_seed_dir, kj_seed_sign; and the names of the tiers a binary comes from
 * (kj_origin_name). */
#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "base/error.h"
#include "runtime/runtime.h"
#include "base/util.h"

const char *kj_origin_name(kj_origin origin) {
    switch (origin) {
    case KJ_ORIGIN_MEMORY: return "memory";
    case KJ_ORIGIN_DISK: return "disk";
    case KJ_ORIGIN_COMPILED: return "compiled";
    case KJ_ORIGIN_REMOTE: return "remote";
    case KJ_ORIGIN_SEED: return "seed";
    }
    return "unknown";
}

const char *kj_cache_dir(const kj_runtime *rt) { return rt ? kj__cache_root(rt->cache) : NULL; }

static kj_status need_cache(const kj_runtime *rt) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "runtime is NULL");
    KJ_RETURN_IF(!rt->cache, KJ_ERR_NOT_FOUND, "this runtime has no disk cache (memory only)");
    return KJ_OK;
}

/* The description's "kernel: NAME (origin)", "options: ..." and "entry alone: ENTRY" lines (jit/prepare.c
 * writes them), split into the kernel's name, its -D macros and the other options, less the target and
 * the language standard that kernjit gives every compile, and the entry compiled alone. */
typedef struct parts {
    kj__buf kernel, macros, options, entry;
} parts;

void kj__cache_description_kernel(const char *desc, char *out, size_t size) {
    out[0] = '\0';
    for (const char *line = desc; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, "kernel: ", 8) == 0) {
            snprintf(out, size, "%.*s", (int)strcspn(line + 8, " \n"), line + 8);
            return;
        }
}

static void take_apart(const char *desc, parts *out) {
    memset(out, 0, sizeof *out);
    char kernel[4096];
    kj__cache_description_kernel(desc, kernel, sizeof kernel);
    kj__buf_puts(&out->kernel, kernel);
    for (const char *line = desc; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t len = strcspn(line, "\n");
        if (strncmp(line, "entry alone: ", 13) == 0) kj__buf_append(&out->entry, line + 13, len - 13);
        if (strncmp(line, "options:", 8) == 0) {
            for (const char *o = line + 8; o < line + len;) {
                o += strspn(o, " ");
                size_t n = strcspn(o, " \n");
                if (n == 0) break;
                if (strncmp(o, "-D", 2) == 0) {
                    if (out->macros.len) kj__buf_puts(&out->macros, " ");
                    kj__buf_append(&out->macros, o + 2, n - 2);
                } else if (strncmp(o, "-arch=", 6) != 0 && !(n == 10 && strncmp(o, "-std=c++17", 10) == 0)) {
                    if (out->options.len) kj__buf_puts(&out->options, " ");
                    kj__buf_append(&out->options, o, n);
                }
                o += n;
            }
        }
    }
}

static const char *or_empty(const kj__buf *b) { return b->data ? b->data : ""; }

kj_status kj_cache_list(kj_runtime *rt, kj_cache_visit_fn visit, void *user) {
    KJ_FORWARD(need_cache(rt));
    KJ_RETURN_IF(!visit, KJ_ERR_USAGE, "kj_cache_list: visit is NULL");
    kj__cache_item *items;
    size_t n;
    KJ_FORWARD(kj__cache_items(rt->cache, 1, &items, &n));
    for (size_t i = 0; i < n; i++) {
        parts p;
        take_apart(items[i].description, &p);
        kj_cache_entry e = {items[i].path,       items[i].arch,        items[i].key,      items[i].description,
                            items[i].bytes,      items[i].mtime,       items[i].valid,    or_empty(&p.kernel),
                            or_empty(&p.macros), or_empty(&p.options), or_empty(&p.entry)};
        visit(&e, user);
        kj__buf_free(&p.entry);
        kj__buf_free(&p.kernel);
        kj__buf_free(&p.macros);
        kj__buf_free(&p.options);
    }
    kj__cache_items_free(items, n);
    return KJ_OK;
}

kj_status kj_cache_clear(kj_runtime *rt, uint64_t *entries, uint64_t *bytes) {
    KJ_FORWARD(need_cache(rt));
    return kj__cache_clear(rt->cache, entries, bytes);
}

kj_status kj_cache_usage(kj_runtime *rt, uint64_t *entries, uint64_t *bytes, uint64_t *max_bytes) {
    KJ_FORWARD(need_cache(rt));
    kj__cache_item *items;
    size_t n;
    KJ_FORWARD(kj__cache_items(rt->cache, 0, &items, &n));
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += items[i].bytes;
    kj__cache_items_free(items, n);
    if (entries) *entries = n;
    if (bytes) *bytes = total;
    if (max_bytes) *max_bytes = kj__cache_max_bytes(rt->cache);
    return KJ_OK;
}

const char *kj_seed_dir(const kj_runtime *rt, size_t index) { return rt ? kj__seed_dir(rt->seed, index) : NULL; }

kj_status kj_seed_sign(kj_runtime *rt, uint64_t *count) {
    KJ_FORWARD(need_cache(rt));
    uint64_t n = 0;
    KJ_FORWARD(kj__seed_sign(rt->seed, rt->cache, &n));
    if (count) *count = n;
    return KJ_OK;
}
