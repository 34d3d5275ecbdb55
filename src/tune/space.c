#include "tune/space.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/sized.h"
#include "runtime/context.h"
#include "jit/source.h"
#include "base/util.h"

/* One macro of the kernel as the space sees it: its values (one when fixed). */
typedef struct macro {
    const char *name;
    char **values; /* owned copies */
    size_t value_count;
    int tunable;
    int given; /* the caller named it */
    int dim;   /* index among the dimensions, or -1 */
} macro;

struct kj_space {
    kj__source *src;
    kj__spec *spec;
    macro *macros; /* sorted by name: the order of a variant's defines */
    size_t macro_count;
    size_t *dims; /* macro index of each dimension, in the metadata's order */
    size_t dim_count;
    size_t count, valid;
    kj_define *defines; /* count * macro_count */
    size_t *coords;     /* count * dim_count */
    char **labels;
    char **skipped;
    char *fixed;
};

static void macro_free(macro *m) { kj__strings_free(m->values, m->value_count); }

void kj_space_free(kj_space *s) {
    if (!s) return;
    for (size_t i = 0; i < s->macro_count; i++) macro_free(&s->macros[i]);
    free(s->macros);
    free(s->dims);
    free(s->defines);
    free(s->coords);
    if (s->labels) kj__strings_free(s->labels, s->count);
    if (s->skipped) kj__strings_free(s->skipped, s->count);
    free(s->fixed);
    kj__spec_free(s->spec);
    kj__source_free(s->src);
    free(s);
}

static int by_name(const void *a, const void *b) { return strcmp(((const macro *)a)->name, ((const macro *)b)->name); }

static void list_values(kj__buf *b, const kj__param *p) {
    for (size_t i = 0; i < p->value_count; i++) kj__buf_printf(b, "%s%s", i ? " " : "", p->values[i]);
}

/* Splits "a,b,c" into checked copies; the values must be allowed by p (when there is metadata). */
static kj_status split_values(const char *kernel, const kj_define *d, const kj__param *p, macro *m) {
    const char *v = d->value;
    KJ_RETURN_IF(!v || !*v, KJ_ERR_INVALID_DEFINE, "macro %s for %s has no value: write %s=VALUE or %s=V1,V2,...",
                 d->name, kernel, d->name, d->name);
    for (const char *start = v;;) {
        const char *end = strchr(start, ',');
        size_t n = end ? (size_t)(end - start) : strlen(start);
        KJ_RETURN_IF(n == 0, KJ_ERR_INVALID_DEFINE, "%s=%.80s for %s: an empty value in the list", d->name, v, kernel);
        char *one = kj__strndup(start, n);
        if (!one) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        int allowed = !p, repeated = 0;
        for (size_t i = 0; p && i < p->value_count && !allowed; i++) allowed = strcmp(p->values[i], one) == 0;
        for (size_t i = 0; i < m->value_count; i++) repeated |= strcmp(m->values[i], one) == 0;
        if (!allowed || repeated) {
            kj__buf b = {0};
            if (p) list_values(&b, p);
            kj_status s = repeated
                              ? KJ_FAIL(KJ_ERR_INVALID_DEFINE, "%s=%.80s for %s lists %s twice", d->name, v, kernel,
                                        one)
                              : KJ_FAIL(KJ_ERR_INVALID_DEFINE, "%s=%s is not allowed for %s: allowed values are %s",
                                        d->name, one, kernel, b.data ? b.data : "");
            kj__buf_free(&b);
            free(one);
            return s;
        }
        char **grown = realloc(m->values, (m->value_count + 1) * sizeof *grown);
        if (!grown) {
            free(one);
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        }
        m->values = grown;
        m->values[m->value_count++] = one;
        if (!end) break;
        start = end + 1;
    }
    return KJ_OK;
}

static int in_list(const char *const *list, const char *name) {
    for (size_t i = 0; list && list[i]; i++)
        if (strcmp(list[i], name) == 0) return 1;
    return 0;
}

/* The macros: every param of the metadata (or, without metadata, the ones given), with their values. */
static kj_status collect(kj_space *s, const char *kernel, const kj_define *fixed, size_t fixed_count,
                         const char *const *pin, int single_params, int vary_launch) {
    const kj__spec *spec = s->spec;
    for (size_t i = 0; i < fixed_count; i++) {
        KJ_RETURN_IF(!fixed[i].name || !kj__is_identifier(fixed[i].name), KJ_ERR_INVALID_DEFINE,
                     "macro name '%.80s' for %s is not a C identifier", fixed[i].name ? fixed[i].name : "(null)",
                     kernel);
        for (size_t j = 0; j < i; j++)
            KJ_RETURN_IF(strcmp(fixed[i].name, fixed[j].name) == 0, KJ_ERR_INVALID_DEFINE,
                         "macro %s for %s is given twice (list several values as %s=V1,V2)", fixed[i].name, kernel,
                         fixed[i].name);
        if (spec->present && !kj__spec_find_param(spec, fixed[i].name)) {
            kj__buf b = {0};
            for (size_t p = 0; p < spec->param_count; p++)
                kj__buf_printf(&b, "%s%s", p ? ", " : "", spec->params[p].name);
            kj_status st = KJ_FAIL(KJ_ERR_INVALID_DEFINE, "unknown macro %s for %s: its macros are %s", fixed[i].name,
                                   kernel, b.data ? b.data : "(none)");
            kj__buf_free(&b);
            return st;
        }
    }
    size_t n = spec->present ? spec->param_count : fixed_count;
    s->macros = calloc(n ? n : 1, sizeof *s->macros);
    if (!s->macros) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        macro *m = &s->macros[s->macro_count++];
        const kj__param *p = spec->present ? &spec->params[i] : NULL;
        m->name = p ? p->name : fixed[i].name;
        m->tunable = p ? p->tunable : 0;
        m->dim = -1;
        const kj_define *given = NULL;
        for (size_t j = 0; j < fixed_count && !given; j++)
            if (strcmp(fixed[j].name, m->name) == 0) given = &fixed[j];
        m->given = given != NULL;
        if (given) {
            KJ_FORWARD(split_values(kernel, given, p, m));
            KJ_RETURN_IF(single_params && !m->tunable && m->value_count > 1, KJ_ERR_USAGE,
                         "%s=%s for %s: %s changes the result, so it takes one value here (tune each separately)",
                         m->name, given->value, kernel, m->name);
        } else {
            int all = m->tunable && !in_list(pin, m->name) && (vary_launch || !p->launch);
            size_t count = all ? p->value_count : 1;
            m->values = calloc(count, sizeof *m->values);
            if (!m->values) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            for (size_t v = 0; v < count; v++) {
                m->values[v] = kj__strdup(all ? p->values[v] : p->default_value);
                if (!m->values[v]) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
                m->value_count++;
            }
        }
    }
    return KJ_OK;
}

/* Dimensions in the metadata's order (the macros are sorted by name later). */
static kj_status choose_dims(kj_space *s) {
    s->dims = calloc(s->macro_count ? s->macro_count : 1, sizeof *s->dims);
    if (!s->dims) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    uint64_t count = 1;
    for (size_t i = 0; i < s->macro_count; i++) {
        macro *m = &s->macros[i];
        if (m->value_count < 2) continue;
        m->dim = (int)s->dim_count;
        s->dims[s->dim_count++] = i;
        count *= m->value_count;
        KJ_RETURN_IF(count > KJ_SPACE_MAX, KJ_ERR_USAGE,
                     "the variants of %s number more than %u: pin or restrict some macros (NAME=VALUE or NAME=V1,V2)",
                     s->src->name, KJ_SPACE_MAX);
    }
    s->count = (size_t)count;
    return KJ_OK;
}

/* After sorting the macros by name, the dimensions point at their new places. */
static void renumber_dims(kj_space *s) {
    for (size_t i = 0; i < s->macro_count; i++)
        if (s->macros[i].dim >= 0) s->dims[s->macros[i].dim] = i;
}

static char *fixed_list(const kj_space *s) {
    kj__buf b = {0};
    kj__buf_puts(&b, "");
    for (size_t i = 0; i < s->macro_count; i++) {
        const macro *m = &s->macros[i];
        if (m->dim >= 0 || (m->tunable && !m->given)) continue;
        kj__buf_printf(&b, "%s%s=%s", b.len ? " " : "", m->name, m->values[0]);
    }
    return b.data;
}

static kj_status enumerate(kj_space *s) {
    size_t nm = s->macro_count, nd = s->dim_count;
    s->defines = calloc(s->count * (nm ? nm : 1), sizeof *s->defines);
    s->coords = calloc(s->count * (nd ? nd : 1), sizeof *s->coords);
    s->labels = calloc(s->count, sizeof *s->labels);
    s->skipped = calloc(s->count, sizeof *s->skipped);
    char **canonical = calloc(nm ? nm : 1, sizeof *canonical);
    kj_status st = KJ_OK;
    if (!s->defines || !s->coords || !s->labels || !s->skipped || !canonical)
        st = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t v = 0; v < s->count && st == KJ_OK; v++) {
        size_t *c = s->coords + v * nd;
        size_t rest = v;
        for (size_t d = nd; d-- > 0;) {
            size_t size = s->macros[s->dims[d]].value_count;
            c[d] = rest % size;
            rest /= size;
        }
        kj_define *defs = s->defines + v * nm;
        kj__buf label = {0};
        kj__buf_puts(&label, "");
        for (size_t i = 0; i < nm; i++) {
            const macro *m = &s->macros[i];
            defs[i].name = m->name;
            defs[i].value = m->values[m->dim >= 0 ? c[m->dim] : 0];
        }
        for (size_t d = 0; d < nd; d++) {
            const macro *m = &s->macros[s->dims[d]];
            kj__buf_printf(&label, "%s%s=%s", d ? " " : "", m->name, m->values[c[d]]);
        }
        s->labels[v] = label.data;
        if (!label.data) st = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        if (st != KJ_OK || !s->spec->require_count) {
            s->valid += st == KJ_OK;
            continue;
        }
        for (size_t i = 0; i < nm && st == KJ_OK; i++)
            if (!(canonical[i] = kj__asprintf("%s=%s", defs[i].name, defs[i].value)))
                st = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        char err[256];
        long broken = st == KJ_OK ? kj__spec_broken_requirement(s->spec, canonical, nm, err, sizeof err) : -1;
        for (size_t i = 0; i < nm; i++) {
            free(canonical[i]);
            canonical[i] = NULL;
        }
        if (broken == -2) st = KJ_FAIL(KJ_ERR_SPEC, "%s: the requirement %s", s->src->name, err);
        else if (broken >= 0 &&
                 !(s->skipped[v] = kj__asprintf("breaks the requirement `%s`", s->spec->requires[broken])))
            st = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        else if (broken < 0) s->valid++;
    }
    free(canonical);
    return st;
}

kj_status kj__space_create(kj_runtime *rt, const char *kernel, const kj_define *fixed, size_t fixed_count,
                           const char *const *pin, int single_params, int vary_launch, kj_space **out) {
    KJ_RETURN_IF(!kernel || !out, KJ_ERR_USAGE, "kj_space_create: kernel and out are required");
    KJ_RETURN_IF(fixed_count && !fixed, KJ_ERR_USAGE, "fixed_count is %zu but fixed is NULL", fixed_count);
    kj_space *s = calloc(1, sizeof *s);
    if (!s) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    const char *search = rt ? kj__search_path(rt) : kj__getenv_path("KERNJIT_PATH");
    kj_status st = kj__source_find(search && *search ? search : NULL, kernel, NULL, &s->src);
    if (st == KJ_OK) st = kj__spec_parse(s->src->file, s->src->text, s->src->len, &s->spec);
    if (st == KJ_OK) st = collect(s, s->src->name, fixed, fixed_count, pin, single_params, vary_launch);
    if (st == KJ_OK) st = choose_dims(s);
    if (st == KJ_OK) {
        qsort(s->macros, s->macro_count, sizeof *s->macros, by_name);
        renumber_dims(s);
        if (!(s->fixed = fixed_list(s))) st = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (st == KJ_OK) st = enumerate(s);
    if (st != KJ_OK) {
        kj_space_free(s);
        return st;
    }
    *out = s;
    return KJ_OK;
}

kj_status kj_space_create(kj_runtime *rt, const char *kernel, const kj_define *fixed, size_t fixed_count,
                          kj_space **out) {
    return kj__space_create(rt, kernel, fixed, fixed_count, NULL, 0, 0, out);
}

size_t kj_space_dim_count(const kj_space *s) { return s ? s->dim_count : 0; }
const char *kj_space_dim_name(const kj_space *s, size_t d) {
    return s && d < s->dim_count ? s->macros[s->dims[d]].name : NULL;
}
size_t kj_space_dim_size(const kj_space *s, size_t d) {
    return s && d < s->dim_count ? s->macros[s->dims[d]].value_count : 0;
}
const char *kj_space_dim_value(const kj_space *s, size_t d, size_t v) {
    if (!s || d >= s->dim_count) return NULL;
    const macro *m = &s->macros[s->dims[d]];
    return v < m->value_count ? m->values[v] : NULL;
}
size_t kj_space_count(const kj_space *s) { return s ? s->count : 0; }
size_t kj_space_valid_count(const kj_space *s) { return s ? s->valid : 0; }

kj_status kj_space_variant(const kj_space *s, size_t i, kj_variant *out) {
    KJ_RETURN_IF(!s || !out, KJ_ERR_USAGE, "kj_space_variant: space and out are required");
    KJ_FORWARD(KJ__SIZED_CHECK(out, kj_variant, KJ_VARIANT_INIT));
    KJ_RETURN_IF(i >= s->count, KJ_ERR_USAGE, "variant %zu of %s does not exist: the space has %zu", i, s->src->name,
                 s->count);
    kj_variant full = {.defines = s->defines + i * s->macro_count,
                       .define_count = s->macro_count,
                       .coords = s->coords + i * s->dim_count,
                       .label = s->labels[i],
                       .skipped = s->skipped[i]};
    KJ__SIZED_WRITE(out, full);
    return KJ_OK;
}

const char *kj__space_fixed(const kj_space *s) { return s->fixed; }
const kj__spec *kj__space_spec(const kj_space *s) { return s->spec; }

size_t kj__space_index(const kj_space *s, const size_t *coords) {
    size_t index = 0;
    for (size_t d = 0; d < s->dim_count; d++) index = index * s->macros[s->dims[d]].value_count + coords[d];
    return index;
}
