/* kj_describe: a kernel's metadata for listing (`kernjit list`) and for the tuner. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/sized.h"
#include "runtime/runtime.h"
#include "jit/source.h"
#include "jit/spec.h"
#include "base/util.h"

struct kj_kernel_desc {
    kj__source *src;
    kj__spec *spec;
};

kj_status kj_describe(kj_runtime *rt, const char *kernel, kj_kernel_desc **out) {
    KJ_RETURN_IF(!kernel || !out, KJ_ERR_USAGE, "kj_describe: kernel and out are required");
    const char *search = rt ? rt->search_path : kj__getenv_path("KERNJIT_PATH");
    kj_kernel_desc *d = calloc(1, sizeof *d);
    if (!d) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj_status s = kj__source_find(search && *search ? search : NULL, kernel, NULL, &d->src);
    if (s == KJ_OK) s = kj__spec_parse(d->src->file, d->src->text, d->src->len, &d->spec);
    if (s == KJ_OK) *out = d;
    else kj_desc_free(d);
    return s;
}

void kj_desc_free(kj_kernel_desc *d) {
    if (!d) return;
    kj__source_free(d->src);
    kj__spec_free(d->spec);
    free(d);
}

const char *kj_desc_name(const kj_kernel_desc *d) { return d ? d->src->name : ""; }
const char *kj_desc_origin(const kj_kernel_desc *d) { return !d ? "" : d->src->embedded ? "built-in" : d->src->origin; }
const char *kj_desc_summary(const kj_kernel_desc *d) { return d && d->spec->summary ? d->spec->summary : ""; }
size_t kj_desc_entry_count(const kj_kernel_desc *d) { return d ? d->spec->entry_count : 0; }
const char *kj_desc_entry(const kj_kernel_desc *d, size_t i) {
    return d && i < d->spec->entry_count ? d->spec->entries[i] : NULL;
}
size_t kj_desc_param_count(const kj_kernel_desc *d) { return d ? d->spec->param_count : 0; }
int kj_desc_needs_device_runtime(const kj_kernel_desc *d) { return d && d->spec->rdc; }
uint64_t kj_desc_pending_launches(const kj_kernel_desc *d) { return d ? d->spec->pending_launches : 0; }

kj_status kj_desc_param(const kj_kernel_desc *d, size_t i, kj_param_info *info) {
    KJ_RETURN_IF(!d || !info, KJ_ERR_USAGE, "kj_desc_param: NULL argument");
    KJ_FORWARD(KJ__SIZED_CHECK(info, kj_param_info, KJ_PARAM_INFO_INIT));
    KJ_RETURN_IF(i >= d->spec->param_count, KJ_ERR_USAGE, "parameter %zu of %s does not exist (it has %zu)", i,
                 d->src->name, d->spec->param_count);
    const kj__param *p = &d->spec->params[i];
    kj_param_info full = {.name = p->name,
                          .default_value = p->default_value,
                          .value_count = p->value_count,
                          .values = (const char *const *)p->values,
                          .tunable = p->tunable,
                          .launch = p->launch};
    KJ__SIZED_WRITE(info, full);
    return KJ_OK;
}

size_t kj_desc_require_count(const kj_kernel_desc *d) { return d ? d->spec->require_count : 0; }
const char *kj_desc_require(const kj_kernel_desc *d, size_t i) {
    return d && i < d->spec->require_count ? d->spec->requires[i] : NULL;
}
int kj_desc_entry_pdl(const kj_kernel_desc *d, const char *entry) { return d && kj__spec_pdl(d->spec, entry); }
const char *kj_desc_entry_shared_dynamic(const kj_kernel_desc *d, const char *entry) {
    return d ? kj__spec_shared_dynamic_expr(d->spec, entry) : NULL;
}
int kj_desc_entry_carveout(const kj_kernel_desc *d, const char *entry) {
    _Static_assert(KJ_CARVEOUT_NONE == KJ__CARVEOUT_UNSET && KJ_CARVEOUT_DRIVER == KJ__CARVEOUT_DEFAULT,
                   "the public carveout values are the metadata's");
    return d ? kj__spec_carveout(d->spec, entry) : KJ_CARVEOUT_NONE;
}
