#include "jit/spec.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/expr.h"
#include "base/util.h"

#define DIRECTIVE "//@kernjit"

int kj__is_identifier(const char *name) {
    if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_')) return 0;
    size_t n = 0;
    for (const char *p = name; *p; p++, n++)
        if (!isalnum((unsigned char)*p) && *p != '_') return 0;
    return n <= 64;
}

static void param_free(kj__param *p);

static void attrs_free(kj__launch_attr *a, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(a[i].entry);
        free(a[i].expr);
    }
    free(a);
}

void kj__spec_free(kj__spec *spec) {
    if (!spec) return;
    attrs_free(spec->shared_dynamic, spec->shared_dynamic_count);
    attrs_free(spec->carveouts, spec->carveout_count);
    kj__strings_free(spec->pdl_entries, spec->pdl_count);
    free(spec->summary);
    kj__strings_free(spec->entries, spec->entry_count);
    for (size_t i = 0; i < spec->param_count; i++) param_free(&spec->params[i]);
    free(spec->params);
    kj__strings_free(spec->requires, spec->require_count);
    free(spec);
}

const kj__param *kj__spec_find_param(const kj__spec *spec, const char *name) {
    for (size_t i = 0; i < spec->param_count; i++)
        if (strcmp(spec->params[i].name, name) == 0) return &spec->params[i];
    return NULL;
}

int kj__spec_has_entry(const kj__spec *spec, const char *entry) {
    for (size_t i = 0; i < spec->entry_count; i++)
        if (strcmp(spec->entries[i], entry) == 0) return 1;
    return 0;
}

/* ---- parsing --------------------------------------------------------------------------------- */

typedef struct {
    const char *origin;
    int line;
} where;

#define SPEC_FAIL(w, ...) spec_fail((w), __FILE__, __LINE__, __VA_ARGS__)
static kj_status spec_fail(const where *w, const char *file, int line, const char *fmt, ...) KJ_PRINTF(4, 5);
static kj_status spec_fail(const where *w, const char *file, int line, const char *fmt, ...) {
    char msg[KJ__MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    kj_message_vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kj__fail(KJ_ERR_SPEC, file, line, "%s:%d: malformed kernjit metadata: %s", w->origin, w->line, msg);
}

/* Splits the directive's arguments on white space; returns the number of tokens (at most max). */
static size_t tokenize(char *s, char **tok, size_t max) {
    size_t n = 0;
    while (*s && n < max) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) break;
        tok[n++] = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (*s) *s++ = '\0';
    }
    return n;
}

static int valid_value(const char *v) {
    size_t n = strlen(v);
    if (n == 0 || n > KJ_MAX_VALUE_LEN) return 0;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.+-", *p)) return 0;
    return 1;
}

static int parse_i64(const char *s, long long *out) {
    if (!s || !*s) return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* "A..B" -> a, b */
static int parse_range(const char *s, long long *a, long long *b) {
    const char *dots = strstr(s, "..");
    if (!dots) return -1;
    char left[32];
    size_t n = (size_t)(dots - s);
    if (n == 0 || n >= sizeof left) return -1;
    memcpy(left, s, n);
    left[n] = '\0';
    return parse_i64(left, a) == 0 && parse_i64(dots + 2, b) == 0 && *a <= *b ? 0 : -1;
}

static void param_free(kj__param *p) {
    kj__strings_free(p->values, p->value_count);
    free(p->name);
    free(p->default_value);
}

static kj_status fill_values(const where *w, kj__param *p, char **vals, size_t nvals) {
    long long a, b;
    if ((nvals == 2 && strcmp(vals[0], "pow2") == 0) || (nvals == 1 && strstr(vals[0], ".."))) {
        int pow2 = nvals == 2;
        if (parse_range(vals[nvals - 1], &a, &b) != 0)
            return SPEC_FAIL(w, "macro %s: '%s' is not a range A..B with A <= B", p->name, vals[nvals - 1]);
        if (pow2 && (!kj__is_pow2(a) || !kj__is_pow2(b)))
            return SPEC_FAIL(w, "macro %s: pow2 range ends must be powers of two", p->name);
        for (long long v = a;; v = pow2 ? v * 2 : v + 1) {
            if (p->value_count == KJ_MAX_VALUES)
                return SPEC_FAIL(w, "macro %s: more than %d values", p->name, KJ_MAX_VALUES);
            if (kj__strings_push(&p->values, &p->value_count, kj__asprintf("%lld", v)) != 0)
                return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            /* stop before the step, which could pass LLONG_MAX when b is near it */
            if (pow2 ? v > b / 2 : v >= b) break;
        }
        return KJ_OK;
    }
    for (size_t i = 0; i < nvals; i++) {
        if (!valid_value(vals[i]))
            return SPEC_FAIL(w, "macro %s: value '%.80s' (values use letters, digits and _.+-, at most %d)", p->name,
                             vals[i], KJ_MAX_VALUE_LEN);
        for (size_t j = 0; j < p->value_count; j++)
            if (strcmp(p->values[j], vals[i]) == 0)
                return SPEC_FAIL(w, "macro %s: value %s listed twice", p->name, vals[i]);
        if (kj__strings_push(&p->values, &p->value_count, kj__strdup(vals[i])) != 0)
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    return KJ_OK;
}

static kj_status check_param(const where *w, const kj__param *p) {
    int found = 0;
    for (size_t i = 0; i < p->value_count; i++) found |= strcmp(p->values[i], p->default_value) == 0;
    if (!found) return SPEC_FAIL(w, "macro %s: the default '%s' is not among its values", p->name, p->default_value);
    if (strcmp(p->name, "BLOCK_SIZE") == 0) {
        for (size_t i = 0; i < p->value_count; i++) {
            long long v;
            if (parse_i64(p->values[i], &v) != 0 || !kj__is_pow2(v) || v > 1024)
                return SPEC_FAIL(w, "BLOCK_SIZE value '%s' is not a power of two up to 1024", p->values[i]);
        }
    }
    return KJ_OK;
}

static kj_status parse_param(const where *w, kj__spec *spec, char **tok, size_t n, const char *kind) {
    int tunable = strcmp(kind, "param") != 0;
    if (n < 4 || strcmp(tok[n - 2], "=") != 0) return SPEC_FAIL(w, "`%s` takes NAME VALUES... = DEFAULT", kind);
    const char *name = tok[0];
    if (!kj__is_identifier(name)) return SPEC_FAIL(w, "`%s %.80s`: the name must be a C identifier", kind, name);
    if (kj__spec_find_param(spec, name)) return SPEC_FAIL(w, "macro %s is declared twice", name);
    if (spec->param_count == KJ_MAX_ITEMS) return SPEC_FAIL(w, "more than %d macros", KJ_MAX_ITEMS);
    kj__param p = {0};
    p.tunable = tunable;
    p.launch = strcmp(kind, "launch") == 0;
    p.name = kj__strdup(name);
    p.default_value = kj__strdup(tok[n - 1]);
    kj_status s = !p.name || !p.default_value ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
    if (s == KJ_OK) s = fill_values(w, &p, tok + 1, n - 3); /* the tokens between the name and "=" */
    if (s == KJ_OK) s = check_param(w, &p);
    kj__param *grown = NULL;
    if (s == KJ_OK && !(grown = realloc(spec->params, (spec->param_count + 1) * sizeof *grown)))
        s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (s != KJ_OK) {
        param_free(&p);
        return s;
    }
    spec->params = grown;
    spec->params[spec->param_count++] = p;
    return KJ_OK;
}

static char *trimmed(const char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    return kj__strndup(s, n);
}

/* An optional `ENTRY:` before the value of shared-dynamic and carveout. Sets *entry to a new string
 * (NULL when the line has no scope) and *value to the text after the scope. */
static kj_status split_scope(const where *w, const char *directive, const char *text, char **entry,
                             const char **value) {
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    const char *start = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    *entry = NULL;
    *value = start;
    if (p == start || *p != ':') return KJ_OK; /* expressions have no ':', so this is never ambiguous */
    char *e = kj__strndup(start, (size_t)(p - start));
    if (!e) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (!kj__is_identifier(e)) {
        kj_status s = SPEC_FAIL(w, "`%s %.80s:`: the entry must be a C identifier", directive, e);
        free(e);
        return s;
    }
    *entry = e;
    *value = p + 1;
    return KJ_OK;
}

static int same_scope(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* Appends attr to the list, taking its strings (freed on failure). One line per scope. */
static kj_status push_attr(const where *w, const char *directive, kj__launch_attr **list, size_t *count,
                           kj__launch_attr attr) {
    kj_status s = *count == KJ_MAX_ITEMS ? SPEC_FAIL(w, "more than %d `%s` lines", KJ_MAX_ITEMS, directive) : KJ_OK;
    for (size_t i = 0; i < *count && s == KJ_OK; i++)
        if (same_scope((*list)[i].entry, attr.entry))
            s = SPEC_FAIL(w, "`%s` for %s is already given on line %d", directive,
                          attr.entry ? attr.entry : "every entry", (*list)[i].line);
    kj__launch_attr *grown = NULL;
    if (s == KJ_OK && !(grown = realloc(*list, (*count + 1) * sizeof *grown)))
        s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (s != KJ_OK) {
        free(attr.entry);
        free(attr.expr);
        return s;
    }
    grown[(*count)++] = attr;
    *list = grown;
    return KJ_OK;
}

static kj_status parse_shared_dynamic(const where *w, kj__spec *spec, const char *after) {
    kj__launch_attr a = {0};
    const char *value;
    KJ_FORWARD(split_scope(w, "shared-dynamic", after, &a.entry, &value));
    a.expr = trimmed(value);
    a.line = w->line;
    if (!a.expr) {
        free(a.entry);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (!*a.expr) {
        free(a.entry);
        free(a.expr);
        return SPEC_FAIL(w, "`shared-dynamic` needs a byte count: an expression over integers and the macros, "
                            "optionally after `ENTRY:`");
    }
    /* Checked with the defaults once the whole block is read (the macros may be declared later). */
    return push_attr(w, "shared-dynamic", &spec->shared_dynamic, &spec->shared_dynamic_count, a);
}

static kj_status parse_carveout(const where *w, kj__spec *spec, const char *after) {
    kj__launch_attr a = {0};
    const char *value;
    KJ_FORWARD(split_scope(w, "carveout", after, &a.entry, &value));
    a.line = w->line;
    char *v = trimmed(value);
    if (!v) {
        free(a.entry);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    long long pct;
    kj_status s = KJ_OK;
    if (strcmp(v, "max-shared") == 0) a.value = 100; /* CU_SHAREDMEM_CARVEOUT_MAX_SHARED */
    else if (strcmp(v, "max-l1") == 0) a.value = 0;  /* CU_SHAREDMEM_CARVEOUT_MAX_L1 */
    else if (strcmp(v, "default") == 0) a.value = KJ__CARVEOUT_DEFAULT;
    else if (parse_i64(v, &pct) == 0 && pct >= 0 && pct <= 100) a.value = (int)pct;
    else s = SPEC_FAIL(w, "carveout '%.80s' is not a percentage from 0 to 100, max-shared, max-l1 or default", v);
    free(v);
    if (s != KJ_OK) {
        free(a.entry);
        return s;
    }
    return push_attr(w, "carveout", &spec->carveouts, &spec->carveout_count, a);
}

/* One `pdl` line: alone it marks every entry, `pdl A B` marks those (checked against `entry` once the
 * block is read). */
static kj_status parse_pdl(const where *w, kj__spec *spec, char **names, size_t count) {
    if (spec->pdl_line)
        return SPEC_FAIL(w, "`pdl` is already given on line %d: list every entry on one line", spec->pdl_line);
    spec->pdl_line = w->line;
    if (count == 0) {
        spec->pdl_all = 1;
        return KJ_OK;
    }
    for (size_t i = 0; i < count; i++) {
        if (!kj__is_identifier(names[i])) return SPEC_FAIL(w, "`pdl %.80s`: an entry must be a C identifier", names[i]);
        for (size_t j = 0; j < spec->pdl_count; j++)
            if (strcmp(spec->pdl_entries[j], names[i]) == 0) return SPEC_FAIL(w, "`pdl`: %s is listed twice", names[i]);
        if (spec->pdl_count == KJ_MAX_ITEMS) return SPEC_FAIL(w, "more than %d `pdl` entries", KJ_MAX_ITEMS);
        if (kj__strings_push(&spec->pdl_entries, &spec->pdl_count, kj__strdup(names[i])) != 0)
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    return KJ_OK;
}

static kj_status parse_line(const where *w, kj__spec *spec, const char *rest) {
    char buf[1024];
    size_t n = strlen(rest);
    if (n >= sizeof buf) return SPEC_FAIL(w, "line longer than %zu characters", sizeof buf - 1);
    memcpy(buf, rest, n + 1);
    char *tok[KJ_MAX_VALUES + 8];
    size_t ntok = tokenize(buf, tok, sizeof tok / sizeof tok[0]);
    if (ntok == 0) return SPEC_FAIL(w, "empty directive");
    const char *d = tok[0];
    /* the text after the directive word, for the free-form directives */
    const char *after = rest;
    while (isspace((unsigned char)*after)) after++;
    after += strlen(d);

    if (strcmp(d, "summary") == 0) {
        free(spec->summary);
        spec->summary = trimmed(after);
        return spec->summary ? KJ_OK : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (strcmp(d, "entry") == 0) {
        if (ntok < 2) return SPEC_FAIL(w, "`entry` needs at least one function name");
        for (size_t i = 1; i < ntok; i++) {
            if (!kj__is_identifier(tok[i])) return SPEC_FAIL(w, "entry '%.80s' is not a C identifier", tok[i]);
            if (kj__spec_has_entry(spec, tok[i])) return SPEC_FAIL(w, "entry %s is listed twice", tok[i]);
            if (spec->entry_count == KJ_MAX_ITEMS) return SPEC_FAIL(w, "more than %d entries", KJ_MAX_ITEMS);
            if (kj__strings_push(&spec->entries, &spec->entry_count, kj__strdup(tok[i])) != 0)
                return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        }
        return KJ_OK;
    }
    if (strcmp(d, "param") == 0 || strcmp(d, "tune") == 0 || strcmp(d, "launch") == 0)
        return parse_param(w, spec, tok + 1, ntok - 1, d);
    if (strcmp(d, "require") == 0) {
        char *expr = trimmed(after);
        if (!expr) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        if (!*expr) {
            free(expr);
            return SPEC_FAIL(w, "`require` needs an expression");
        }
        if (spec->require_count == KJ_MAX_ITEMS) {
            free(expr);
            return SPEC_FAIL(w, "more than %d requirements", KJ_MAX_ITEMS);
        }
        return kj__strings_push(&spec->requires, &spec->require_count, expr) == 0
                   ? KJ_OK
                   : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (strcmp(d, "rdc") == 0) {
        if (ntok != 1) return SPEC_FAIL(w, "`rdc` takes no arguments");
        spec->rdc = 1;
        return KJ_OK;
    }
    if (strcmp(d, "whole-file") == 0) {
        if (ntok != 1) return SPEC_FAIL(w, "`whole-file` takes no arguments");
        spec->whole_file = 1;
        return KJ_OK;
    }
    if (strcmp(d, "limit") == 0) {
        long long v;
        if (ntok != 3 || strcmp(tok[1], "pending-launches") != 0)
            return SPEC_FAIL(w, "`limit` takes `pending-launches N`");
        if (parse_i64(tok[2], &v) != 0 || v < 1 || v > (1LL << 30))
            return SPEC_FAIL(w, "pending-launches '%s' is not a count from 1 to 2^30", tok[2]);
        spec->pending_launches = (uint64_t)v;
        return KJ_OK;
    }
    if (strcmp(d, "shared-dynamic") == 0) return parse_shared_dynamic(w, spec, after);
    if (strcmp(d, "carveout") == 0) return parse_carveout(w, spec, after);
    if (strcmp(d, "pdl") == 0) return parse_pdl(w, spec, tok + 1, ntok - 1);
    return SPEC_FAIL(w,
                     "unknown directive '%.40s' (known: summary entry param tune launch require rdc limit "
                     "shared-dynamic carveout pdl whole-file)",
                     d);
}

typedef struct {
    const kj__spec *spec;
    char **names; /* NAME=VALUE strings */
    size_t count;
} value_env;

static int lookup_value(const char *name, size_t len, int64_t *value, void *user) {
    const value_env *env = user;
    for (size_t i = 0; i < env->count; i++) {
        const char *s = env->names[i];
        if (strncmp(s, name, len) == 0 && s[len] == '=') {
            long long v;
            if (parse_i64(s + len + 1, &v) != 0) return -1;
            *value = v;
            return 0;
        }
    }
    return -1;
}

long kj__spec_broken_requirement(const kj__spec *spec, char **canonical, size_t count, char *err, size_t err_size) {
    value_env env = {spec, canonical, count};
    for (size_t i = 0; i < spec->require_count; i++) {
        int64_t v;
        char why[256];
        if (kj__expr_eval(spec->requires[i], lookup_value, &env, &v, why, sizeof why) != 0) {
            kj_message_format(err, err_size, "`%s` cannot be evaluated with these values (%s)", spec->requires[i], why);
            return -2;
        }
        if (!v) return (long)i;
    }
    return -1;
}

static void join_values(kj__buf *b, char *const *canonical, size_t count) {
    for (size_t i = 0; i < count; i++) kj__buf_printf(b, "%s%s", i ? " " : "", canonical[i]);
    if (!count) kj__buf_puts(b, "(no macros)");
}

/* Evaluates one shared-dynamic line over the NAME=VALUE list; KJ_ERR_INVALID_DEFINE as described for
 * kj__spec_shared_dynamic. */
static kj_status eval_shared(const kj__spec *spec, const char *kernel, const kj__launch_attr *a, char *const *canonical,
                             size_t count, uint32_t *bytes) {
    value_env env = {spec, (char **)canonical, count};
    char err[256];
    int64_t v = 0;
    int failed = kj__expr_eval(a->expr, lookup_value, &env, &v, err, sizeof err) != 0;
    if (!failed && v >= 0 && v <= KJ__SHARED_DYNAMIC_MAX) {
        *bytes = (uint32_t)v;
        return KJ_OK;
    }
    kj__buf b = {0};
    join_values(&b, canonical, count);
    kj_status s = failed
                      ? KJ_FAIL(KJ_ERR_INVALID_DEFINE,
                                "%s for %s: the metadata's shared-dynamic `%s` cannot be evaluated: %s",
                                b.data ? b.data : "", kernel, a->expr, err)
                      : KJ_FAIL(KJ_ERR_INVALID_DEFINE,
                                "%s for %s: the metadata's shared-dynamic `%s` gives %lld bytes; 0 to %lld are allowed",
                                b.data ? b.data : "", kernel, a->expr, (long long)v, KJ__SHARED_DYNAMIC_MAX);
    kj__buf_free(&b);
    return s;
}

/* The line for entry: its own, else the unscoped one, else NULL. */
static const kj__launch_attr *find_attr(const kj__launch_attr *list, size_t count, const char *entry) {
    const kj__launch_attr *all = NULL;
    for (size_t i = 0; i < count; i++) {
        if (!list[i].entry) all = &list[i];
        else if (entry && strcmp(list[i].entry, entry) == 0) return &list[i];
    }
    return all;
}

kj_status kj__spec_shared_dynamic(const kj__spec *spec, const char *kernel, const char *entry, char *const *canonical,
                                  size_t count, uint32_t *bytes) {
    const kj__launch_attr *a = find_attr(spec->shared_dynamic, spec->shared_dynamic_count, entry);
    *bytes = 0;
    return a ? eval_shared(spec, kernel, a, canonical, count, bytes) : KJ_OK;
}

const char *kj__spec_shared_dynamic_expr(const kj__spec *spec, const char *entry) {
    const kj__launch_attr *a = find_attr(spec->shared_dynamic, spec->shared_dynamic_count, entry);
    return a ? a->expr : NULL;
}

int kj__spec_carveout(const kj__spec *spec, const char *entry) {
    const kj__launch_attr *a = find_attr(spec->carveouts, spec->carveout_count, entry);
    return a ? a->value : KJ__CARVEOUT_UNSET;
}

char *kj__spec_entry_list(const kj__spec *spec) {
    kj__buf b = {0};
    for (size_t e = 0; e < spec->entry_count; e++) kj__buf_printf(&b, "%s%s", e ? ", " : "", spec->entries[e]);
    return b.data;
}

int kj__spec_pdl(const kj__spec *spec, const char *entry) {
    if (spec->pdl_all) return 1;
    for (size_t i = 0; entry && i < spec->pdl_count; i++)
        if (strcmp(spec->pdl_entries[i], entry) == 0) return 1;
    return 0;
}

/* `pdl ENTRY` must name declared entries (when the block declares any). */
static kj_status check_pdl(const char *origin, const kj__spec *spec) {
    for (size_t i = 0; i < spec->pdl_count && spec->entry_count; i++) {
        if (kj__spec_has_entry(spec, spec->pdl_entries[i])) continue;
        where w = {origin, spec->pdl_line};
        char *list = kj__spec_entry_list(spec);
        kj_status s = SPEC_FAIL(&w, "`pdl %s` names no entry: the entries are %s", spec->pdl_entries[i],
                                list ? list : "");
        free(list);
        return s;
    }
    return KJ_OK;
}

/* After the whole block is read: scoped lines must name declared entries (when the block declares
 * any), and every shared-dynamic expression must give a size with the defaults, so that a typo
 * shows when the metadata is read rather than at some later request. */
static kj_status check_launch_attrs(const char *origin, const kj__spec *spec, char *const *defaults, size_t count) {
    const struct {
        const char *directive;
        const kj__launch_attr *list;
        size_t n;
    } kinds[] = {{"shared-dynamic", spec->shared_dynamic, spec->shared_dynamic_count},
                 {"carveout", spec->carveouts, spec->carveout_count}};
    for (size_t k = 0; k < 2; k++) {
        for (size_t i = 0; i < kinds[k].n; i++) {
            const kj__launch_attr *a = &kinds[k].list[i];
            where w = {origin, a->line};
            if (a->entry && spec->entry_count && !kj__spec_has_entry(spec, a->entry)) {
                char *list = kj__spec_entry_list(spec);
                kj_status s = SPEC_FAIL(&w, "`%s %s:` names no entry: the entries are %s", kinds[k].directive, a->entry,
                                        list ? list : "");
                free(list);
                return s;
            }
            uint32_t bytes;
            if (a->expr && eval_shared(spec, origin, a, defaults, count, &bytes) != KJ_OK) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", kj_last_error());
                return SPEC_FAIL(&w, "with the defaults: %s", msg);
            }
        }
    }
    return KJ_OK;
}

kj_status kj__spec_parse(const char *origin, const char *text, size_t len, kj__spec **out) {
    kj__spec *spec = calloc(1, sizeof *spec);
    if (!spec) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    where w = {origin, 0};
    size_t i = 0;
    kj_status s = KJ_OK;
    while (i < len && s == KJ_OK) {
        size_t end = i;
        while (end < len && text[end] != '\n') end++;
        w.line++;
        size_t j = i;
        while (j < end && (text[j] == ' ' || text[j] == '\t')) j++;
        size_t dl = strlen(DIRECTIVE);
        if (end - j >= dl && strncmp(text + j, DIRECTIVE, dl) == 0 &&
            (end - j == dl || isspace((unsigned char)text[j + dl]))) {
            spec->present = 1;
            char *line = kj__strndup(text + j + dl, end - j - dl);
            if (!line) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            else s = parse_line(&w, spec, line);
            free(line);
        }
        i = end + 1;
    }
    if (s == KJ_OK) s = check_pdl(origin, spec);
    if (s == KJ_OK && (spec->require_count || spec->shared_dynamic_count || spec->carveout_count)) {
        /* The defaults must satisfy the requirements: otherwise a request with no -D could not run. */
        char **canonical;
        size_t count;
        s = kj__spec_resolve(spec, origin, NULL, 0, &canonical, &count);
        if (s == KJ_OK) {
            s = check_launch_attrs(origin, spec, canonical, count);
            kj__strings_free(canonical, count);
        } else {
            s = kj__fail(KJ_ERR_SPEC, __FILE__, __LINE__, "%s: the metadata's defaults fail: %s", origin,
                         kj_last_error());
        }
    }
    if (s == KJ_OK) *out = spec;
    else kj__spec_free(spec);
    return s;
}

void kj__spec_drop_launch(const kj__spec *spec, char **canonical, size_t *count) {
    size_t kept = 0;
    for (size_t i = 0; i < *count; i++) {
        size_t len = strcspn(canonical[i], "=");
        const kj__param *p = NULL;
        for (size_t j = 0; j < spec->param_count && !p; j++)
            if (strlen(spec->params[j].name) == len && strncmp(spec->params[j].name, canonical[i], len) == 0)
                p = &spec->params[j];
        if (p && p->launch) free(canonical[i]);
        else canonical[kept++] = canonical[i];
    }
    *count = kept;
}

/* ---- validating a request's macros ----------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void list_values(kj__buf *b, const kj__param *p) {
    for (size_t i = 0; i < p->value_count; i++) {
        if (i) kj__buf_puts(b, " ");
        kj__buf_puts(b, p->values[i]);
    }
}

static void list_params(kj__buf *b, const kj__spec *spec) {
    for (size_t i = 0; i < spec->param_count; i++) {
        if (i) kj__buf_puts(b, ", ");
        kj__buf_puts(b, spec->params[i].name);
    }
    if (!spec->param_count) kj__buf_puts(b, "(none)");
}

/* BLOCK_SIZE means threads per block everywhere: a power of two from 1 to 1024. */
static kj_status check_block_size(const char *kernel, const char *value) {
    const char *p = value;
    unsigned long long v = 0;
    int digits = 0, overflow = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (v > 1000000) overflow = 1;
        else v = v * 10 + (unsigned)(*p - '0');
    }
    if (!digits || *p || overflow || v == 0 || v > 1024 || !kj__is_pow2((long long)v))
        return KJ_FAIL(KJ_ERR_INVALID_DEFINE,
                       "BLOCK_SIZE=%.80s for %s: BLOCK_SIZE must be a power of two from 1 to 1024", value, kernel);
    return KJ_OK;
}

static kj_status check_define_text(const char *kernel, const kj_define *d) {
    if (!d->name || !kj__is_identifier(d->name))
        return KJ_FAIL(KJ_ERR_INVALID_DEFINE,
                       "macro name '%.80s' for %s: a macro name is a C identifier (letters, digits, '_'; not "
                       "starting with a digit; at most 64 characters)",
                       d->name ? d->name : "(null)", kernel);
    if (!d->value || !*d->value)
        return KJ_FAIL(KJ_ERR_INVALID_DEFINE, "macro %s for %s has no value: write %s=VALUE", d->name, kernel, d->name);
    size_t n = strlen(d->value);
    if (n > KJ_MAX_DEFINE_VALUE_LEN)
        return KJ_FAIL(KJ_ERR_INVALID_DEFINE, "macro %s for %s: value of %zu characters, at most %d", d->name, kernel,
                       n, KJ_MAX_DEFINE_VALUE_LEN);
    for (const char *p = d->value; *p; p++) {
        KJ_RETURN_IF((unsigned char)*p >= 0x80, KJ_ERR_INVALID_DEFINE,
                     "macro %s for %s: the value has a non-ASCII byte (0x%02x at %zu); values are ASCII words", d->name,
                     kernel, (unsigned char)*p, (size_t)(p - d->value));
        KJ_RETURN_IF(isspace((unsigned char)*p) || iscntrl((unsigned char)*p), KJ_ERR_INVALID_DEFINE,
                     "macro %s for %s: the value has a space or control character; values are one word", d->name,
                     kernel);
    }
    return KJ_OK;
}

kj_status kj__spec_resolve(const kj__spec *spec, const char *kernel, const kj_define *defines, size_t count,
                           char ***canonical, size_t *canonical_count) {
    /* as many as a block may declare: more once ran past NVRTC's option list as "out of memory" (and
     * the duplicate check below is quadratic) */
    KJ_RETURN_IF(count > KJ_MAX_ITEMS, KJ_ERR_USAGE, "%zu macros for %s: at most %d are allowed", count, kernel,
                 KJ_MAX_ITEMS);
    /* a block that declares no macro (only `rdc`, say) constrains none: any well-formed -D goes */
    int checked = spec->present && spec->param_count > 0;
    for (size_t i = 0; i < count; i++) {
        KJ_FORWARD(check_define_text(kernel, &defines[i]));
        for (size_t j = 0; j < i; j++)
            KJ_RETURN_IF(strcmp(defines[i].name, defines[j].name) == 0, KJ_ERR_INVALID_DEFINE,
                         "macro %s for %s is given twice", defines[i].name, kernel);
        if (strcmp(defines[i].name, "BLOCK_SIZE") == 0) KJ_FORWARD(check_block_size(kernel, defines[i].value));
        if (!checked) continue;
        const kj__param *p = kj__spec_find_param(spec, defines[i].name);
        if (!p) {
            kj__buf b = {0};
            list_params(&b, spec);
            kj_status s = KJ_FAIL(KJ_ERR_INVALID_DEFINE, "unknown macro %s for %s: its macros are %s", defines[i].name,
                                  kernel, b.data ? b.data : "(none)");
            kj__buf_free(&b);
            return s;
        }
        int allowed = 0;
        for (size_t v = 0; v < p->value_count && !allowed; v++) allowed = strcmp(p->values[v], defines[i].value) == 0;
        if (!allowed) {
            kj__buf b = {0};
            list_values(&b, p);
            kj_status s = KJ_FAIL(KJ_ERR_INVALID_DEFINE, "%s=%.80s is not allowed for %s: allowed values are %s",
                                  defines[i].name, defines[i].value, kernel, b.data ? b.data : "");
            kj__buf_free(&b);
            return s;
        }
    }

    char **list = NULL;
    size_t n = 0;
    int oom = 0;
    if (checked) {
        for (size_t i = 0; i < spec->param_count && !oom; i++) {
            const char *value = spec->params[i].default_value;
            for (size_t j = 0; j < count; j++)
                if (strcmp(defines[j].name, spec->params[i].name) == 0) value = defines[j].value;
            oom = kj__strings_push(&list, &n, kj__asprintf("%s=%s", spec->params[i].name, value)) != 0;
        }
    } else {
        for (size_t j = 0; j < count && !oom; j++)
            oom = kj__strings_push(&list, &n, kj__asprintf("%s=%s", defines[j].name, defines[j].value)) != 0;
    }
    if (oom) {
        kj__strings_free(list, n);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (n) qsort(list, n, sizeof *list, cmp_str);

    char err[256];
    long broken = kj__spec_broken_requirement(spec, list, n, err, sizeof err);
    if (broken != -1) {
        kj__buf b = {0};
        for (size_t i = 0; i < n; i++) kj__buf_printf(&b, "%s%s", i ? " " : "", list[i]);
        /* a requirement that cannot be evaluated with these values (10 / A with A=0, an overflow) is
         * the values' fault, as a broken one is: a usage error naming both */
        kj_status s = broken == -2 ? KJ_FAIL(KJ_ERR_INVALID_DEFINE, "%s for %s: the requirement %s: give others",
                                             b.data ? b.data : "(defaults)", kernel, err)
                                   : KJ_FAIL(KJ_ERR_INVALID_DEFINE, "%s for %s breaks the kernel's requirement `%s`",
                                             b.data ? b.data : "(defaults)", kernel, spec->requires[broken]);
        kj__buf_free(&b);
        kj__strings_free(list, n);
        return s;
    }
    *canonical = list;
    *canonical_count = n;
    return KJ_OK;
}
