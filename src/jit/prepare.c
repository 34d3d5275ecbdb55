/* Request preparation (prepare.h): the request checked, its sources read, the entry chosen, the
 * program scanned, the option list built and the cache key computed. */
#include "jit/prepare.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "jit/compile.h"
#include "jit/lex.h"
#include "jit/link.h"
#include "jit/options.h"
#include "jit/toolkit.h"
#include "jit/trim.h"

#define MAX_OPTIONS 2048 /* the metadata's 1024 macros, the user's 128 options, kernjit's few */
#define MAX_ENTRY_LEN 512

void kj__prepared_free(kj__prepared *p) {
    for (size_t i = 0; i < p->unit_count; i++) kj__source_free(p->units[i]);
    kj__spec_free(p->spec);
    kj__strings_free(p->defines, p->define_count);
    kj__strings_free(p->options, p->option_count);
    free(p->entry);
    free(p->name_expression);
    kj__strings_free(p->listed, p->listed_count);
    kj__strings_free(p->expressions, p->expression_count);
    free(p->description);
    free(p->alone_text);
    memset(p, 0, sizeof *p);
}

/* The __global__ functions of a source without metadata, found lexically: the identifier before the
 * parameter list, past attributes such as __launch_bounds__(256). A template's name alone is not a
 * kernel NVRTC can look up: it needs an instance ("scale<float,256>"), which an explicit
 * instantiation or specialization in the file gives ("template __global__ void scale<float, 256>(
 * float *, float);"); those are collected apart. Good enough to pick the only kernel of a file; NVRTC
 * has the final word when the function is looked up. */
typedef struct kernel_names {
    size_t n, ninst;
    char names[8][MAX_ENTRY_LEN];
    int is_template[8];
    char instances[8][MAX_ENTRY_LEN];
} kernel_names;

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Adds [start, end) to list unless it is there; returns its index, or -1 when it does not fit. */
static int add_unique(char (*list)[MAX_ENTRY_LEN], size_t *n, const char *start, const char *end) {
    size_t len = (size_t)(end - start);
    for (size_t i = 0; i < *n; i++)
        if (strncmp(list[i], start, len) == 0 && list[i][len] == '\0') return (int)i;
    if (len == 0 || len >= MAX_ENTRY_LEN || *n == 8) return -1;
    memcpy(list[*n], start, len);
    list[*n][len] = '\0';
    return (int)(*n)++;
}

/* The identifier ending at end (after blanks), not before floor. */
static const char *ident_before(const char *floor, const char **end) {
    while (*end > floor && isspace((unsigned char)(*end)[-1])) (*end)--;
    const char *start = *end;
    while (start > floor && ident_char(start[-1])) start--;
    return start;
}

/* Adds the __global__ functions of text to k. */
static void global_functions(const char *text, kernel_names *k) {
    for (const char *p = strstr(text, "__global__"); p; p = strstr(p + 10, "__global__")) {
        const char *before = p;
        while (before > text && isspace((unsigned char)before[-1])) before--;
        int is_template = before > text && before[-1] == '>'; /* template <...> __global__ */
        const char *paren = strchr(p, '('), *end = paren, *start = NULL;
        for (; paren; paren = strchr(paren, '(')) {
            end = paren;
            start = ident_before(p, &end);
            if (!(end - start > 4 && strncmp(start, "__", 2) == 0 && strncmp(end - 2, "__", 2) == 0)) break;
            int depth = 0; /* an attribute, __launch_bounds__(...): past its arguments */
            for (; *paren; paren++)
                if (*paren == '(') depth++;
                else if (*paren == ')' && --depth == 0) break;
        }
        if (!paren) break;
        if (end > p && end[-1] == '>') {
            const char *lt = end - 1; /* an instance: back over the template arguments to the name */
            for (int depth = 0; lt > p; lt--)
                if (*lt == '>') depth++;
                else if (*lt == '<' && --depth == 0) break;
            const char *name_end = lt;
            const char *name = ident_before(p, &name_end);
            if (*lt == '<' && name < name_end) add_unique(k->instances, &k->ninst, name, end);
            continue;
        }
        size_t had = k->n;
        int i = add_unique(k->names, &k->n, start, end);
        if (i >= 0) k->is_template[i] = (k->n > had ? 0 : k->is_template[i]) | is_template;
    }
}

char *kj__prepared_origins(const kj__prepared *p) {
    kj__buf b = {0};
    for (size_t i = 0; i < p->unit_count; i++) kj__buf_printf(&b, "%s%s", i ? ", " : "", p->units[i]->origin);
    return b.data;
}

/* The text of a unit (i 0) or of its header i - 1, with comments and `#if 0` blanked (lex.h): made
 * once, when a scan first asks for it, and shared by every scan that reads it. NULL when out of
 * memory. */
static const char *code_of(kj__source *unit, size_t i) {
    kj__header *h = i ? &unit->headers[i - 1] : NULL;
    char **code = h ? &h->code : &unit->code;
    if (!*code) *code = kj__lex_blank(h ? h->text : unit->text, h ? h->len : unit->len, 1);
    return *code;
}

/* The kernels of a unit's text, outside comments and #if 0, added to k. */
static kj_status scan_kernels(kj__source *unit, kernel_names *k) {
    const char *code = code_of(unit, 0);
    if (!code) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    global_functions(code, k);
    return KJ_OK;
}

/* The one kernel of a program without metadata when the request names none. */
static kj_status detect_entry(kj__prepared *p, const char **asked, kernel_names *k) {
    for (size_t i = 0; i < p->unit_count; i++) KJ_FORWARD(scan_kernels(p->units[i], k));
    char *where = kj__prepared_origins(p);
    if (!where) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj_status s = KJ_OK;
    kj__buf b = {0};
    if (k->n == 0 && k->ninst == 0) {
        s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "%s %s no __global__ function to launch", where,
                    p->unit_count > 1 ? "have" : "has");
    } else if (k->n > 1) {
        for (size_t i = 0; i < k->n; i++) kj__buf_printf(&b, "%s%s", i ? ", " : "", k->names[i]);
        s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "%s %s several kernels (%s%s): name one as FILE.cu:ENTRY", where,
                    p->unit_count > 1 ? "have" : "has", b.data ? b.data : "", k->n == 8 ? ", ..." : "");
    } else if (k->n == 1 && !k->is_template[0]) {
        *asked = k->names[0];
    } else if (k->ninst == 1) {
        *asked = k->instances[0]; /* a template kernel with one instance in the file: that one */
    } else {
        const char *name = k->n ? k->names[0] : "?";
        for (size_t i = 0; i < k->ninst; i++) kj__buf_printf(&b, "%s%s", i ? ", " : "", k->instances[i]);
        s = k->ninst ? KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY,
                               "%s: kernel %s is a template with several instances (%s): name "
                               "one as FILE.cu:ENTRY",
                               where, name, b.data ? b.data : "")
                     : KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY,
                               "%s: kernel %s is a template: name an instance as FILE.cu:%s<...> "
                               "(for example %s<float>)",
                               where, name, name, name);
    }
    kj__buf_free(&b);
    free(where);
    return s;
}

/* Whether code (blanked) declares a __global__ function called name: the word, with "__global__"
 * between it and the declaration's start (the last ';', '{' or '}' before it). */
static int declares_kernel(const char *code, const char *name, size_t len) {
    for (const char *at = strstr(code, name); at; at = strstr(at + 1, name)) {
        if ((at > code && ident_char(at[-1])) || ident_char(at[len])) continue;
        const char *start = at;
        while (start > code && !strchr(";{}", start[-1])) start--;
        const char *global = strstr(start, "__global__");
        if (global && global < at) return 1;
    }
    return 0;
}

/* Which units get name expression e: in a program of several sources, those that declare a
 * __global__ function of its name (in their text or their own headers); NVRTC then lowers it there.
 * One source always gets it (NVRTC has the final word, for kernels kernjit cannot see lexically). */
static kj_status place_expression(kj__prepared *p, size_t e) {
    const uint64_t bit = 1ull << e;
    if (p->unit_count == 1) {
        p->lowers_here[0] |= bit;
        return KJ_OK;
    }
    /* the function's own name: past a scope (ns::k) and before template arguments (k<float>) */
    const char *expr = p->expressions[e];
    size_t len = strcspn(expr, "<( ");
    const char *base = expr;
    for (const char *c = expr; c + 1 < expr + len; c++)
        if (c[0] == ':' && c[1] == ':') base = c + 2;
    char name[MAX_ENTRY_LEN + 1];
    snprintf(name, sizeof name, "%.*s", (int)(len - (size_t)(base - expr)), base);
    int found = 0;
    int link_inputs = 0;
    for (size_t u = 0; u < p->unit_count; u++) {
        kj__source *unit = p->units[u];
        link_inputs |= unit->kind != KJ__UNIT_CU;
        if (unit->kind != KJ__UNIT_CU) continue;
        for (size_t i = 0; i <= unit->header_count && !(p->lowers_here[u] & bit); i++) {
            if (i && !unit->headers[i - 1].path) continue; /* the embedded headers declare no user kernel */
            const char *code = code_of(unit, i);
            if (!code) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            if (*name && declares_kernel(code, name, strlen(name))) p->lowers_here[u] |= bit;
        }
        found |= (p->lowers_here[u] & bit) != 0;
    }
    if (found) return KJ_OK;
    if (link_inputs) {
        p->unplaced |= bit;
        return KJ_OK;
    }
    char *where = kj__prepared_origins(p);
    kj_status s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "no __global__ function '%.200s' in any source of the program (%s)",
                          expr, where ? where : "");
    free(where);
    return s;
}

/* An entry name as a request gives it: 1 to MAX_ENTRY_LEN characters, none a control character. */
static kj_status check_entry_name(const char *name, const char *what) {
    size_t n = strlen(name);
    KJ_RETURN_IF(n == 0 || n > MAX_ENTRY_LEN, KJ_ERR_USAGE, "%s name of %zu characters: 1 to %d are allowed", what, n,
                 MAX_ENTRY_LEN);
    for (const char *c = name; *c; c++)
        KJ_RETURN_IF(iscntrl((unsigned char)*c), KJ_ERR_USAGE, "%s name has a control character", what);
    return KJ_OK;
}

/* kj_request.entries: each a well-formed name, listed once, and `entry` one of them (NULL: the
 * first); p->listed gets the list and *asked the entry. */
static kj_status choose_listed(kj__prepared *p, const kj_request *req, const char **asked) {
    for (size_t i = 0; i < req->entry_count; i++) {
        char what[32];
        snprintf(what, sizeof what, "entries[%zu]", i);
        KJ_FORWARD(check_entry_name(req->entries[i], what));
        for (size_t j = 0; j < i; j++)
            KJ_RETURN_IF(strcmp(req->entries[i], req->entries[j]) == 0, KJ_ERR_USAGE,
                         "entry '%.200s' is listed twice in entries (%zu and %zu): list each once", req->entries[i], j,
                         i);
        if (*asked && strcmp(*asked, req->entries[i]) == 0) p->listed_index = i;
    }
    if (!*asked) {
        *asked = req->entries[0];
        p->listed_index = 0;
    } else if (strcmp(*asked, req->entries[p->listed_index]) != 0) {
        return KJ_FAIL(KJ_ERR_USAGE,
                       "entry '%.200s' is not one of the request's %zu entries (the first is '%.200s'): "
                       "give one of them, or NULL for the first",
                       *asked, req->entry_count, req->entries[0]);
    }
    for (size_t i = 0; i < req->entry_count; i++)
        if (kj__strings_push(&p->listed, &p->listed_count, kj__strdup(req->entries[i])) != 0)
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    return KJ_OK;
}

static kj_status unknown_entry(const kj__prepared *p, const char *name) {
    char *list = kj__spec_entry_list(p->spec);
    kj_status s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "unknown entry '%.100s' for %s: its entries are %s", name, p->src->name,
                          list ? list : "");
    free(list);
    return s;
}

static kj_status choose_entry(kj__prepared *p, const kj_request *req) {
    const kj__spec *spec = p->spec;
    const char *asked = req->entry;
    if (asked) KJ_FORWARD(check_entry_name(asked, "entry"));
    if (req->entry_count) KJ_FORWARD(choose_listed(p, req, &asked));
    if (spec->entry_count) {
        if (!asked) asked = spec->entries[0];
        if (!kj__spec_has_entry(spec, asked)) return unknown_entry(p, asked);
        for (size_t i = 0; i < p->listed_count; i++)
            if (!kj__spec_has_entry(spec, p->listed[i])) return unknown_entry(p, p->listed[i]);
        p->entry = kj__strdup(asked);
        return p->entry ? KJ_OK : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    kernel_names k; /* its lists fill as they grow: only the counts start at zero (not 8 KB to clear) */
    k.n = k.ninst = 0;
    if (!asked) KJ_FORWARD(detect_entry(p, &asked, &k));
    p->entry = kj__strdup(asked);
    /* Sources without metadata may be C++ (no extern "C", templates): NVRTC lowers the names. */
    p->name_expression = kj__strdup(p->entry);
    if (!p->entry || !p->name_expression) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < (p->listed_count ? p->listed_count : 1); i++)
        if (kj__strings_push(&p->expressions, &p->expression_count,
                             kj__strdup(p->listed_count ? p->listed[i] : p->entry)) != 0)
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t e = 0; e < p->expression_count; e++) KJ_FORWARD(place_expression(p, e));
    return KJ_OK;
}

static int push(char ***list, size_t *n, char *s) {
    if (*n == MAX_OPTIONS) {
        free(s);
        return -1;
    }
    return kj__strings_push(list, n, s);
}

static int any_unit_uses_toolkit(const kj__prepared *p) {
    for (size_t i = 0; i < p->unit_count; i++)
        if (p->units[i]->toolkit) return 1;
    return 0;
}

/* The option list NVRTC gets, and the key covers: the target, the language (c++17, or the request's
 * -std in its place), relocatable code when linked, ptxas's report of each kernel's resources
 * (resources.h; not for PTX, which ptxas does not see), NVRTC's own cache of compiled code off
 * (below), the toolkit's include folders when a header resolved there (NVRTC searches no other: see
 * includes.h), the canonical macros, the pre-included headers, then the user's options. Every unit
 * of a program gets the same list, with its own names for the pre-included headers (unit_options). */
static kj_status build_options(kj__prepared *p, const kj__user_options *user) {
    int oom = 0;
    oom |= push(&p->options, &p->option_count, kj__asprintf("-arch=%s", p->target.arch));
    oom |= push(&p->options, &p->option_count, kj__asprintf("-std=%s", user->std ? user->std : "c++17"));
    if (p->rdc) oom |= push(&p->options, &p->option_count, kj__strdup("-rdc=true"));
    if (p->lto) oom |= push(&p->options, &p->option_count, kj__strdup("-dlto"));
    if (p->minimal) oom |= push(&p->options, &p->option_count, kj__strdup("-minimal"));
    if (!p->target.ptx) oom |= push(&p->options, &p->option_count, kj__strdup("--ptxas-options=-v"));
    /* NVRTC 12.9 and later keep compiled code in the driver's compute cache where a driver is
     * installed; a hit there skips ptxas, and with it the resources and warnings an entry stores, so
     * the same inputs would give entries that differ. kernjit's cache decides what is compiled. */
    if (kj__nvrtc_version() >= 12090) oom |= push(&p->options, &p->option_count, kj__strdup("--no-cache"));
    if (any_unit_uses_toolkit(p)) {
        const char *dirs[2];
        size_t n;
        kj__toolkit_include_dirs(dirs, &n);
        for (size_t i = 0; i < n; i++)
            oom |= push(&p->options, &p->option_count, kj__asprintf("--include-path=%s", dirs[i]));
    }
    for (size_t i = 0; i < p->define_count; i++)
        oom |= push(&p->options, &p->option_count, kj__asprintf("-D%s", p->defines[i]));
    for (size_t i = 0; i < p->src->pre_include_count; i++)
        oom |= push(&p->options, &p->option_count, kj__asprintf("--pre-include=%s", p->src->pre_include_names[i]));
    for (size_t i = 0; i < user->pass_count; i++) oom |= push(&p->options, &p->option_count, kj__strdup(user->pass[i]));
    return oom ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
}

void kj__unit_options_free(kj__unit_options *l) {
    for (size_t i = 0; i < l->owned_count; i++) free(l->owned[i]);
    free(l->options);
    memset(l, 0, sizeof *l);
}

kj_status kj__unit_options_make(const kj__prepared *p, size_t u, kj__unit_options *l) {
    memset(l, 0, sizeof *l);
    if (!(l->options = malloc((p->option_count + 1) * sizeof *l->options)))
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    const kj__source *unit = p->units[u];
    for (size_t i = 0; i < p->option_count; i++) {
        l->options[i] = p->options[i];
        if (u && strncmp(p->options[i], "--pre-include=", 14) == 0 && l->owned_count < unit->pre_include_count) {
            char *mine = kj__asprintf("--pre-include=%s", unit->pre_include_names[l->owned_count]);
            if (!mine) {
                kj__unit_options_free(l);
                return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            }
            l->options[i] = l->owned[l->owned_count++] = mine;
        }
    }
    return KJ_OK;
}

/* What the program's text says about how to compile it, outside comments and `#if 0`, in every
 * source and every header it reaches:
 * - whether it launches kernels from the device (it then needs the device runtime): its metadata
 *   says so, the request asks for -rdc=true, or a launch shows;
 * - whether it is compiled as relocatable code and linked: when it needs the device runtime, and
 *   always for a program of several sources;
 * - whether NVRTC's -minimal can leave features out (lex.h): a faster compile, and when the guess is
 *   wrong, compiled again without it (runtime/binary.c). Never with the toolkit's headers, which may
 *   use any of it, nor for relocatable code. */
static kj_status scan_program(kj__prepared *p, int asked_rdc, const kj__user_options *user) {
    p->devrt = p->spec->rdc || asked_rdc;
    p->lto = user->lto;
    p->minimal = p->unit_count == 1 && !p->devrt && !p->lto && !any_unit_uses_toolkit(p) && !user->no_minimal;
    for (size_t u = 0; u < p->unit_count; u++) {
        kj__source *src = p->units[u];
        if (src->kind != KJ__UNIT_CU) continue; /* compiled code: nothing to read */
        for (size_t i = 0; i <= src->header_count && (!p->devrt || p->minimal); i++) {
            const char *code = code_of(src, i);
            if (!code) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            unsigned found = kj__lex_features(code);
            if (found & KJ__LEX_LAUNCHES) p->devrt = 1;
            if (found & KJ__LEX_NOT_MINIMAL) p->minimal = 0;
        }
    }
    p->rdc = p->devrt || p->unit_count > 1 || p->lto;
    return KJ_OK;
}

/* Whether the entry is compiled alone (trim.h): a source of one unit whose metadata declares several
 * entries and does not ask for the whole file; the text NVRTC gets then leaves the others out. */
static kj_status choose_text(kj__prepared *p) {
    kj__source *src = p->src;
    if (p->unit_count != 1 || p->spec->entry_count < 2 || p->spec->whole_file || p->listed_count > 1) return KJ_OK;
    const char *codes[KJ_MAX_HEADERS + 1];
    for (size_t i = 0; i <= src->header_count; i++)
        if (!(codes[i] = code_of(src, i))) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    int r = kj__trim_to_entry(src->text, codes[0], src->len, (const char *const *)p->spec->entries,
                              p->spec->entry_count, p->entry, codes + 1, src->header_count, &p->alone_text);
    return r < 0 ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
}

static kj_status choose_target(const kj__prepare_env *env, kj__prepared *p, const char *arch) {
    const kj__target *own = &env->target;
    if (!arch || !*arch || (env->has_device && strcmp(arch, own->cache_arch) == 0) || strcmp(arch, own->arch) == 0) {
        p->target = *own;
        return KJ_OK;
    }
    KJ_FORWARD(kj__arch_for_user(arch, &p->target));
    /* a kernel to launch: any target whose code the device runs, refused here rather than by the driver */
    if (env->device) KJ_FORWARD(kj__arch_check_device(arch, env->device_cc, env->device));
    return KJ_OK;
}

static kj_status describe(kj__prepared *p) {
    kj__buf b = {0};
    kj__buf_printf(&b, "kernel: %s (%s)\n", p->src->name, p->src->embedded ? "built-in" : p->src->origin);
    if (p->unit_count > 1) {
        kj__buf_puts(&b, "linked with:");
        for (size_t i = 1; i < p->unit_count; i++) kj__buf_printf(&b, " %s", p->units[i]->origin);
        kj__buf_puts(&b, "\n");
    }
    kj__buf_puts(&b, "options:");
    for (size_t i = 0; i < p->option_count; i++) {
        kj__buf_puts(&b, " ");
        kj__buf_puts(&b, p->options[i]);
    }
    kj__buf_puts(&b, "\n");
    if (p->listed_count) {
        kj__buf_puts(&b, "entries:");
        for (size_t i = 0; i < p->listed_count; i++) kj__buf_printf(&b, " %s", p->listed[i]);
        kj__buf_puts(&b, "\n");
    } else if (p->name_expression) {
        kj__buf_printf(&b, "entry: %s\n", p->name_expression);
    }
    if (p->alone_text) kj__buf_printf(&b, "entry alone: %s\n", p->entry);
    if (!b.data) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    p->description = b.data;
    return KJ_OK;
}

static kj_status prepare_source(const kj__prepare_env *env, const kj_request *req, const kj__user_options *user,
                                kj__prepared *p);

/* Checked before the memory map is consulted, so that the same request always gets the same answer. */
kj_status kj__check_request(const kj_request *req) {
    KJ_RETURN_IF(req->define_count && !req->defines, KJ_ERR_USAGE, "define_count is %zu but defines is NULL",
                 req->define_count);
    KJ_RETURN_IF(req->option_count && !req->options, KJ_ERR_USAGE, "option_count is %zu but options is NULL",
                 req->option_count);
    KJ_RETURN_IF(req->source_count && !req->sources, KJ_ERR_USAGE, "source_count is %zu but sources is NULL",
                 req->source_count);
    KJ_RETURN_IF(req->source_count >= KJ_MAX_SOURCES, KJ_ERR_USAGE,
                 "%zu more sources: a program links at most %d sources in all", req->source_count, KJ_MAX_SOURCES);
    KJ_RETURN_IF(req->source_count && req->source_text, KJ_ERR_USAGE,
                 "source_text with sources: a program of several sources is read from files");
    for (size_t i = 0; i < req->source_count; i++)
        KJ_RETURN_IF(!req->sources[i], KJ_ERR_USAGE, "sources[%zu] is NULL: give paths to .cu files", i);
    KJ_RETURN_IF(req->entry_count && !req->entries, KJ_ERR_USAGE, "entry_count is %zu but entries is NULL",
                 req->entry_count);
    KJ_RETURN_IF(req->entry_count > KJ_MAX_ENTRIES, KJ_ERR_USAGE, "%zu entries: one compile takes at most %d",
                 req->entry_count, KJ_MAX_ENTRIES);
    for (size_t i = 0; i < req->entry_count; i++)
        KJ_RETURN_IF(!req->entries[i], KJ_ERR_USAGE, "entries[%zu] is NULL: give the entries' names", i);
    return KJ_OK;
}

/* The sources after the first, found and read as the first is, with the same include folders and
 * pre-includes. Only the first may carry a metadata block: it declares the program's macros and
 * entries, and a second block could contradict it. */
static kj_status find_more_sources(const kj_request *req, const kj__include_config *cfg, kj__prepared *p) {
    for (size_t i = 0; i < req->source_count; i++) {
        kj__source *unit;
        KJ_FORWARD(kj__source_find_unit(cfg, req->sources[i], &unit));
        p->units[p->unit_count++] = unit;
        if (unit->kind != KJ__UNIT_CU) continue;
        kj__spec *spec;
        KJ_FORWARD(kj__spec_parse(unit->origin, unit->text, unit->len, &spec));
        int present = spec->present;
        kj__spec_free(spec);
        KJ_RETURN_IF(present, KJ_ERR_USAGE,
                     "%s has a //@kernjit block: in a program of several sources only the first "
                     "(%s) may have one, and it speaks for the whole program",
                     unit->origin, p->src->origin);
    }
    for (size_t i = 0; i < p->unit_count; i++)
        if (kj__source_has_kernel(p->units[i])) return KJ_OK;
    char *where = kj__prepared_origins(p);
    kj_status s = KJ_FAIL(KJ_ERR_SOURCE,
                          "none of the sources (%s) has a __global__ function, nor do the files they "
                          "include",
                          where ? where : "");
    free(where);
    return s;
}

kj_status kj__prepare(const kj__prepare_env *env, const kj_request *req, kj__prepared *p) {
    memset(p, 0, sizeof *p);
    KJ_FORWARD(kj__check_request(req));
    kj__user_options user;
    KJ_FORWARD(kj__user_options_parse(req->options, req->option_count, &user));
    kj__include_config cfg = {env->search_path,  user.include_dirs, user.include_dir_count, req->defines,
                              req->define_count, user.pre_includes, user.pre_include_count};
    kj_status s = req->source_count ? kj__source_find_unit(&cfg, req->kernel, &p->src)
                                    : kj__source_find_with(&cfg, req->kernel, req->source_text, &p->src);
    if (s == KJ_OK) {
        p->units[p->unit_count++] = p->src;
        if (p->src->kind != KJ__UNIT_CU)
            s = KJ_FAIL(KJ_ERR_USAGE,
                        "'%.200s' is the program's first source, which must be a .cu file (its metadata "
                        "and entries speak for the program): give .ptx, .cubin and .ltoir files after it (sources)",
                        req->kernel);
        else if (req->source_count) s = find_more_sources(req, &cfg, p);
    }
    if (s == KJ_OK) s = prepare_source(env, req, &user, p);
    kj__user_options_free(&user);
    return s;
}

/* The rest of kj__prepare, once the sources and their headers are read. */
static kj_status prepare_source(const kj__prepare_env *env, const kj_request *req, const kj__user_options *user,
                                kj__prepared *p) {
    KJ_FORWARD(kj__spec_parse(p->src->file, p->src->text, p->src->len, &p->spec));
    KJ_FORWARD(choose_entry(p, req));
    KJ_FORWARD(scan_program(p, user->rdc, user));
    KJ_FORWARD(choose_text(p));
    KJ_FORWARD(kj__spec_resolve(p->spec, p->src->name, req->defines, req->define_count, &p->defines, &p->define_count));
    /* Not part of the key (they do not change the binary), but evaluated here so that kj_compile
     * reports a size the macros make impossible as early as kj_kernel_get does. */
    KJ_FORWARD(
        kj__spec_shared_dynamic(p->spec, p->src->name, p->entry, p->defines, p->define_count, &p->shared_dynamic));
    kj__spec_drop_launch(p->spec, p->defines, &p->define_count);
    p->carveout = kj__spec_carveout(p->spec, p->entry);
    KJ_FORWARD(choose_target(env, p, req->arch));
    p->pdl = kj__spec_pdl(p->spec, p->entry) && kj__arch_number(p->target.arch) >= 90;
    KJ_FORWARD(build_options(p, user));

    kj__key_input in = {0};
    in.nvrtc_version = kj__nvrtc_version();
    if (any_unit_uses_toolkit(p)) KJ_FORWARD(kj__toolkit_fingerprint(&in.toolkit));
    in.linked = p->rdc;
    if (in.linked) in.nvjitlink_version = kj__nvjitlink_version();
    if (p->devrt) {
        const char *path;
        KJ_FORWARD(kj__devrt(&path, &in.devrt_hash));
    }
    in.arch = p->target.arch;
    in.options = (const char *const *)p->options;
    in.option_count = p->option_count;
    in.name_expression = p->listed_count ? NULL : p->name_expression;
    in.entries = (const char *const *)p->listed;
    in.entry_count = p->listed_count;
    in.sources = (const kj__source *const *)p->units;
    in.source_count = p->unit_count;
    in.alone_entry = p->alone_text ? p->entry : NULL;
    kj__key_compute(&in, &p->key);
    return describe(p);
}
