/* The families' common rules: value names, and "explicit, else tuned, else default". */
#include "ops/ops.h"

#include <stdio.h>
#include <string.h>

#include "tunedb/tunedb.h"

#define MAX_TUNED 1024 /* the largest tuned value taken: no tunable of a family goes beyond */

int kj__name_find(const char *const *names, int count, const char *text) {
    for (int i = 0; text && i < count; i++)
        if (strcmp(text, names[i]) == 0) return i;
    return -1;
}

const char *kj_config_from_name(kj_config_from from) {
    static const char *const names[] = {"default", "tuned", "explicit"};
    return (unsigned)from < sizeof names / sizeof names[0] ? names[from] : "unknown";
}

/* "NAME=VALUE NAME=VALUE" of count defines into out. */
static void join(const kj_define *d, size_t count, char *out, size_t size) {
    out[0] = '\0';
    for (size_t i = 0, len = 0; i < count && len < size; i++, len = strlen(out))
        snprintf(out + len, size - len, "%s%s=%s", i ? " " : "", d[i].name, d[i].value);
}

/* The tuning database's values for the call, into values when each is usable (see ops.h). */
static int tuned(kj_runtime *rt, const kj__config_call *c, unsigned *values) {
    if (!c->count || !c->n) return 0;
    char fixed[256], list[KJ_TUNEDB_MAX_LINE];
    join(c->fixed, c->fixed_count, fixed, sizeof fixed);
    if (kj__tuned_find(rt, c->kernel, c->entry, fixed, c->n, list, sizeof list) != 0) return 0;
    /* a record from before a tunable existed (WAVES, say) gives what it has, the rest its default; a
     * value that is there but not a plain number from 1 to MAX_TUNED makes the whole record unused */
    unsigned v[KJ__CONFIG_MAX];
    size_t found = 0;
    for (size_t i = 0; i < c->count; i++) {
        char text[32];
        if (kj__tunedb_value(list, c->names[i], text, sizeof text) != 0) {
            v[i] = c->defaults[i];
            continue;
        }
        if (kj__tunedb_uint(list, c->names[i], MAX_TUNED, &v[i]) != 0) return 0;
        found++;
    }
    if (!found) return 0;
    if (c->suits && !c->suits(c->user, v)) return 0;
    memcpy(values, v, c->count * sizeof *v);
    return 1;
}

/* The call's tunables at values, as defines (their text in text). */
static void tunables(const kj__config_call *c, const unsigned *values, char (*text)[16], kj_define *out) {
    for (size_t i = 0; i < c->count; i++) {
        snprintf(text[i], sizeof text[i], "%u", values[i]);
        out[i] = (kj_define){c->names[i], text[i]};
    }
}

const kj_request *kj__config_request_of(const kj__config_call *c, const unsigned *values, kj__config_request *r) {
    size_t n = 0;
    for (size_t i = 0; i < c->fixed_count; i++) r->defines[n++] = c->fixed[i];
    for (size_t i = 0; i < c->pinned_count; i++) r->defines[n++] = c->pinned[i];
    tunables(c, values, r->text, r->defines + n);
    r->req = (kj_request){.size = sizeof(kj_request), .kernel = c->kernel, .entry = c->entry, .defines = r->defines, .define_count = n + c->count};
    return &r->req;
}

static kj_status get(kj_runtime *rt, const kj__config_call *c, kj__config *out) {
    kj__config_request r;
    return kj_kernel_get(rt, kj__config_request_of(c, out->values, &r), &out->kernel, &out->origin);
}

void kj__config_choose(kj_runtime *rt, const kj__config_call *c, kj__config *out) {
    memset(out, 0, sizeof *out);
    int given = 0;
    for (size_t i = 0; i < c->count; i++) {
        out->values[i] = c->given[i] ? c->given[i] : c->defaults[i];
        given |= c->given[i] != 0;
    }
    out->from = given ? KJ_CONFIG_EXPLICIT : tuned(rt, c, out->values) ? KJ_CONFIG_TUNED : KJ_CONFIG_DEFAULT;
}

kj_status kj__config_resolve(kj_runtime *rt, const kj__config_call *c, kj__config *out) {
    kj__config_choose(rt, c, out);
    kj_status s = get(rt, c, out);
    if (s == KJ_OK || out->from != KJ_CONFIG_TUNED || (s != KJ_ERR_INVALID_DEFINE && s != KJ_ERR_LIMIT)) return s;
    kj_define tried[KJ__CONFIG_MAX];
    char text[KJ__CONFIG_MAX][16], list[256];
    tunables(c, out->values, text, tried);
    join(tried, c->count, list, sizeof list);
    kj__log(kj__runtime_log(rt), KJ_LOG_WARN, "the tuning database's %s for %s cannot be used (%s); using the defaults",
            list, c->entry, kj_last_error());
    memcpy(out->values, c->defaults, c->count * sizeof *out->values);
    out->from = KJ_CONFIG_DEFAULT;
    return get(rt, c, out);
}
