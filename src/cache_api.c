/* The public face of the disk cache: kj_cache_dir, kj_cache_list, kj_cache_clear, kj_cache_usage. */
#include "cache.h"
#include "error.h"
#include "runtime.h"

const char *kj_cache_dir(const kj_runtime *rt) { return rt ? kj__cache_root(rt->cache) : NULL; }

static kj_status need_cache(const kj_runtime *rt) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "runtime is NULL");
    KJ_RETURN_IF(!rt->cache, KJ_ERR_NOT_FOUND, "this runtime has no disk cache (memory only)");
    return KJ_OK;
}

kj_status kj_cache_list(kj_runtime *rt, kj_cache_visit_fn visit, void *user) {
    KJ_FORWARD(need_cache(rt));
    KJ_RETURN_IF(!visit, KJ_ERR_USAGE, "kj_cache_list: visit is NULL");
    kj__cache_item *items;
    size_t n;
    KJ_FORWARD(kj__cache_items(rt->cache, 1, &items, &n));
    for (size_t i = 0; i < n; i++) {
        kj_cache_entry e = {items[i].path, items[i].arch, items[i].key, items[i].description,
                            items[i].bytes, items[i].mtime, items[i].valid};
        visit(&e, user);
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
