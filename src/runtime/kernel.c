/* One request, end to end: find the source, validate the macros against its metadata, compute the
 * cache key, look in memory, then in the seeds, on disk, then in the remote cache, else compile (and
 * link with the device runtime), store (and push), load the module and find the entry. Also the
 * launch. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "jit/compile.h"
#include "jit/fatbin.h"
#include "base/error.h"
#include "base/sized.h"
#include "jit/key.h"
#include "jit/lex.h"
#include "jit/link.h"
#include "jit/options.h"
#include "jit/resources.h"
#include "runtime/launch.h"
#include "runtime/kernel.h"
#include "runtime/flight.h"
#include "runtime/runtime.h"
#include "jit/source.h"
#include "jit/spec.h"
#include "jit/toolkit.h"
#include "jit/trim.h"
#include "base/util.h"

#define MAX_OPTIONS 2048 /* the metadata's 1024 macros, the user's 128 options, kernjit's few */
#define MAX_ENTRY_LEN 512
#define MAX_SOURCES 64 /* translation units of one program: kj_request.sources and the kernel */
#define MAX_ENTRIES 64 /* kj_request.entries: a bit each in prepared.lowers_here */

/* Everything known about a request before any binary exists. */
typedef struct prepared {
    kj__source *src;        /* the program's first source; units[0] */
    kj__source *units[MAX_SOURCES]; /* every translation unit, in order */
    size_t unit_count;
    uint64_t lowers_here[MAX_SOURCES]; /* per unit, a bit for each expression it lowers (place_entries) */
    kj__spec *spec;
    char **defines; /* canonical NAME=VALUE, sorted */
    size_t define_count;
    char **options; /* the NVRTC option list the key covers */
    size_t option_count;
    char *entry;
    char *name_expression; /* set for sources without metadata: the entry is lowered by NVRTC */
    char **listed;         /* kj_request.entries, in order: compiled together (0: the entry alone) */
    size_t listed_count;
    size_t listed_index;   /* the entry's place among them */
    char **expressions;    /* what NVRTC lowers (sources without metadata): the listed entries, else
                              the entry; none for metadata entries, which are extern "C" names */
    size_t expression_count;
    kj__target target;
    kj__key key;
    char *description;
    uint32_t shared_dynamic; /* launch attributes from the metadata, for the entry and these macros */
    int carveout;
    int pdl;
    int rdc;                 /* compiled as relocatable code and linked by nvJitLink (see scan_program) */
    int devrt;               /* linked with the device runtime: the program launches kernels */
    int minimal;             /* compiled with -minimal (see scan_program) */
    int lto;                 /* -dlto: each .cu unit compiled to LTO-IR, linked with -lto */
    uint64_t unplaced;       /* name expressions no .cu unit declares: taken as the names of kernels in
                                the program's compiled inputs (extern "C"), lowered nowhere */
    char *alone_text;        /* the first source with the other entries left out (trim.h), or NULL */
} prepared;

static void prepared_free(prepared *p) {
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

/* ---- request validation ---------------------------------------------------------------------- */

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

/* The program's sources for messages: "a.cu", or "a.cu, b.cu" (malloc'd). */
static char *program_origins(const prepared *p) {
    kj__buf b = {0};
    for (size_t i = 0; i < p->unit_count; i++) kj__buf_printf(&b, "%s%s", i ? ", " : "", p->units[i]->origin);
    return b.data;
}

/* The kernels of a unit's text, outside comments and #if 0, added to k. */
static kj_status scan_kernels(const kj__source *unit, kernel_names *k) {
    char *code = kj__lex_blank(unit->text, unit->len, 1);
    if (!code) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    global_functions(code, k);
    free(code);
    return KJ_OK;
}

/* The one kernel of a program without metadata when the request names none. */
static kj_status detect_entry(prepared *p, const char **asked, kernel_names *k) {
    for (size_t i = 0; i < p->unit_count; i++) KJ_FORWARD(scan_kernels(p->units[i], k));
    char *where = program_origins(p);
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
        s = k->ninst ? KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "%s: kernel %s is a template with several instances (%s): name "
                               "one as FILE.cu:ENTRY", where, name, b.data ? b.data : "")
                     : KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "%s: kernel %s is a template: name an instance as FILE.cu:%s<...> "
                               "(for example %s<float>)", where, name, name, name);
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
static kj_status place_expression(prepared *p, size_t e) {
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
        const kj__source *unit = p->units[u];
        link_inputs |= unit->kind != KJ__UNIT_CU;
        if (unit->kind != KJ__UNIT_CU) continue;
        for (size_t i = 0; i <= unit->header_count && !(p->lowers_here[u] & bit); i++) {
            if (i && !unit->headers[i - 1].path) continue; /* the embedded headers declare no user kernel */
            const char *text = i ? unit->headers[i - 1].text : unit->text;
            char *code = kj__lex_blank(text, i ? unit->headers[i - 1].len : unit->len, 1);
            if (!code) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            if (*name && declares_kernel(code, name, strlen(name))) p->lowers_here[u] |= bit;
            free(code);
        }
        found |= (p->lowers_here[u] & bit) != 0;
    }
    if (found) return KJ_OK;
    if (link_inputs) {
        p->unplaced |= bit;
        return KJ_OK;
    }
    char *where = program_origins(p);
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
static kj_status choose_listed(prepared *p, const kj_request *req, const char **asked) {
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
        return KJ_FAIL(KJ_ERR_USAGE, "entry '%.200s' is not one of the request's %zu entries (the first is '%.200s'): "
                       "give one of them, or NULL for the first", *asked, req->entry_count, req->entries[0]);
    }
    for (size_t i = 0; i < req->entry_count; i++)
        if (kj__strings_push(&p->listed, &p->listed_count, kj__strdup(req->entries[i])) != 0)
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    return KJ_OK;
}

static kj_status unknown_entry(const prepared *p, const char *name) {
    char *list = kj__spec_entry_list(p->spec);
    kj_status s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "unknown entry '%.100s' for %s: its entries are %s", name, p->src->name,
                          list ? list : "");
    free(list);
    return s;
}

static kj_status choose_entry(prepared *p, const kj_request *req) {
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

static int any_unit_uses_toolkit(const prepared *p) {
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
static kj_status build_options(prepared *p, const kj__user_options *user) {
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
        for (size_t i = 0; i < n; i++) oom |= push(&p->options, &p->option_count, kj__asprintf("--include-path=%s", dirs[i]));
    }
    for (size_t i = 0; i < p->define_count; i++)
        oom |= push(&p->options, &p->option_count, kj__asprintf("-D%s", p->defines[i]));
    for (size_t i = 0; i < p->src->pre_include_count; i++)
        oom |= push(&p->options, &p->option_count, kj__asprintf("--pre-include=%s", p->src->pre_include_names[i]));
    for (size_t i = 0; i < user->pass_count; i++) oom |= push(&p->options, &p->option_count, kj__strdup(user->pass[i]));
    return oom ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
}

/* The option list of unit u: the program's, with the unit's own names for the pre-included headers
 * (the same files, in the same order; the key has each unit's names). */
typedef struct unit_option_list {
    const char **options; /* into p->options, but for the names below */
    char *owned[16];      /* "--pre-include=NAME" of this unit (kj__source.pre_include_names' bound) */
    size_t owned_count;
} unit_option_list;

static void unit_options_free(unit_option_list *l) {
    for (size_t i = 0; i < l->owned_count; i++) free(l->owned[i]);
    free(l->options);
    memset(l, 0, sizeof *l);
}

static kj_status unit_options(const prepared *p, size_t u, unit_option_list *l) {
    memset(l, 0, sizeof *l);
    if (!(l->options = malloc((p->option_count + 1) * sizeof *l->options)))
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    const kj__source *unit = p->units[u];
    for (size_t i = 0; i < p->option_count; i++) {
        l->options[i] = p->options[i];
        if (u && strncmp(p->options[i], "--pre-include=", 14) == 0 && l->owned_count < unit->pre_include_count) {
            char *mine = kj__asprintf("--pre-include=%s", unit->pre_include_names[l->owned_count]);
            if (!mine) {
                unit_options_free(l);
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
 *   wrong, compiled again without it (obtain_binary). Never with the toolkit's headers, which may
 *   use any of it, nor for relocatable code. */
static kj_status scan_program(prepared *p, int asked_rdc, const kj__user_options *user) {
    p->devrt = p->spec->rdc || asked_rdc;
    p->lto = user->lto;
    p->minimal = p->unit_count == 1 && !p->devrt && !p->lto && !any_unit_uses_toolkit(p) && !user->no_minimal;
    for (size_t u = 0; u < p->unit_count; u++) {
        const kj__source *src = p->units[u];
        if (src->kind != KJ__UNIT_CU) continue; /* compiled code: nothing to read */
        for (size_t i = 0; i <= src->header_count && (!p->devrt || p->minimal); i++) {
            const char *text = i ? src->headers[i - 1].text : src->text;
            size_t len = i ? src->headers[i - 1].len : src->len;
            char *blanked = kj__lex_blank(text, len, 1);
            if (!blanked) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            if (kj__lex_launches_kernels(blanked)) p->devrt = 1, p->minimal = 0;
            if (!kj__lex_minimal_ok(blanked)) p->minimal = 0;
            free(blanked);
        }
    }
    p->rdc = p->devrt || p->unit_count > 1 || p->lto;
    return KJ_OK;
}

/* Whether the entry is compiled alone (trim.h): a source of one unit whose metadata declares several
 * entries and does not ask for the whole file; the text NVRTC gets then leaves the others out. */
static kj_status choose_text(prepared *p) {
    const kj__source *src = p->src;
    if (p->unit_count != 1 || p->spec->entry_count < 2 || p->spec->whole_file || p->listed_count > 1) return KJ_OK;
    const char *texts[KJ_MAX_HEADERS];
    size_t lens[KJ_MAX_HEADERS];
    for (size_t i = 0; i < src->header_count; i++) texts[i] = src->headers[i].text, lens[i] = src->headers[i].len;
    int r = kj__trim_to_entry(src->text, src->len, (const char *const *)p->spec->entries, p->spec->entry_count,
                              p->entry, texts, lens, src->header_count, &p->alone_text);
    return r < 0 ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
}

static kj_status choose_target(kj_runtime *rt, prepared *p, const char *arch, int for_launch) {
    const kj__target *own = &rt->target;
    if (!arch || !*arch || (rt->has_device && strcmp(arch, own->cache_arch) == 0) || strcmp(arch, own->arch) == 0) {
        p->target = *own;
        return KJ_OK;
    }
    KJ_FORWARD(kj__arch_for_user(arch, &p->target));
    /* a kernel to launch: any target whose code the device runs, refused here rather than by the driver */
    if (for_launch) KJ_FORWARD(kj__runtime_runs(rt, arch));
    return KJ_OK;
}

static kj_status describe(prepared *p) {
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

static kj_status prepare_source(kj_runtime *rt, const kj_request *req, int for_launch, const kj__user_options *user,
                                prepared *p);

/* What makes a request malformed whatever its kernel: checked before the memory map is consulted, so
 * that the same request always gets the same answer. */
kj_status kj__check_request(const kj_request *req) {
    KJ_RETURN_IF(req->define_count && !req->defines, KJ_ERR_USAGE, "define_count is %zu but defines is NULL",
                 req->define_count);
    KJ_RETURN_IF(req->option_count && !req->options, KJ_ERR_USAGE, "option_count is %zu but options is NULL",
                 req->option_count);
    KJ_RETURN_IF(req->source_count && !req->sources, KJ_ERR_USAGE, "source_count is %zu but sources is NULL",
                 req->source_count);
    KJ_RETURN_IF(req->source_count >= MAX_SOURCES, KJ_ERR_USAGE,
                 "%zu more sources: a program links at most %d sources in all", req->source_count, MAX_SOURCES);
    KJ_RETURN_IF(req->source_count && req->source_text, KJ_ERR_USAGE,
                 "source_text with sources: a program of several sources is read from files");
    for (size_t i = 0; i < req->source_count; i++)
        KJ_RETURN_IF(!req->sources[i], KJ_ERR_USAGE, "sources[%zu] is NULL: give paths to .cu files", i);
    KJ_RETURN_IF(req->entry_count && !req->entries, KJ_ERR_USAGE, "entry_count is %zu but entries is NULL",
                 req->entry_count);
    KJ_RETURN_IF(req->entry_count > MAX_ENTRIES, KJ_ERR_USAGE, "%zu entries: one compile takes at most %d",
                 req->entry_count, MAX_ENTRIES);
    for (size_t i = 0; i < req->entry_count; i++)
        KJ_RETURN_IF(!req->entries[i], KJ_ERR_USAGE, "entries[%zu] is NULL: give the entries' names", i);
    return KJ_OK;
}

/* The sources after the first, found and read as the first is, with the same include folders and
 * pre-includes. Only the first may carry a metadata block: it declares the program's macros and
 * entries, and a second block could contradict it. */
static kj_status find_more_sources(const kj_request *req, const kj__include_config *cfg, prepared *p) {
    for (size_t i = 0; i < req->source_count; i++) {
        kj__source *unit;
        KJ_FORWARD(kj__source_find_unit(cfg, req->sources[i], &unit));
        p->units[p->unit_count++] = unit;
        if (unit->kind != KJ__UNIT_CU) continue;
        kj__spec *spec;
        KJ_FORWARD(kj__spec_parse(unit->origin, unit->text, unit->len, &spec));
        int present = spec->present;
        kj__spec_free(spec);
        KJ_RETURN_IF(present, KJ_ERR_USAGE, "%s has a //@kernjit block: in a program of several sources only the first "
                     "(%s) may have one, and it speaks for the whole program", unit->origin, p->src->origin);
    }
    for (size_t i = 0; i < p->unit_count; i++)
        if (kj__source_has_kernel(p->units[i])) return KJ_OK;
    char *where = program_origins(p);
    kj_status s = KJ_FAIL(KJ_ERR_SOURCE, "none of the sources (%s) has a __global__ function, nor do the files they "
                          "include", where ? where : "");
    free(where);
    return s;
}

static kj_status prepare(kj_runtime *rt, const kj_request *req, int for_launch, prepared *p) {
    memset(p, 0, sizeof *p);
    KJ_FORWARD(kj__check_request(req));
    kj__user_options user;
    KJ_FORWARD(kj__user_options_parse(req->options, req->option_count, &user));
    kj__include_config cfg = {rt->search_path, user.include_dirs, user.include_dir_count, req->defines,
                              req->define_count, user.pre_includes, user.pre_include_count};
    kj_status s = req->source_count
                      ? kj__source_find_unit(&cfg, req->kernel, &p->src)
                      : kj__source_find_with(&cfg, req->kernel, req->source_text, &p->src);
    if (s == KJ_OK) {
        p->units[p->unit_count++] = p->src;
        if (p->src->kind != KJ__UNIT_CU)
            s = KJ_FAIL(KJ_ERR_USAGE, "'%.200s' is the program's first source, which must be a .cu file (its metadata "
                        "and entries speak for the program): give .ptx, .cubin and .ltoir files after it (sources)",
                        req->kernel);
        else if (req->source_count) s = find_more_sources(req, &cfg, p);
    }
    if (s == KJ_OK) s = prepare_source(rt, req, for_launch, &user, p);
    kj__user_options_free(&user);
    return s;
}

/* The rest of prepare, once the sources and their headers are read. */
static kj_status prepare_source(kj_runtime *rt, const kj_request *req, int for_launch, const kj__user_options *user,
                                prepared *p) {
    KJ_FORWARD(kj__spec_parse(p->src->file, p->src->text, p->src->len, &p->spec));
    KJ_FORWARD(choose_entry(p, req));
    KJ_FORWARD(scan_program(p, user->rdc, user));
    KJ_FORWARD(choose_text(p));
    KJ_FORWARD(kj__spec_resolve(p->spec, p->src->name, req->defines, req->define_count, &p->defines, &p->define_count));
    /* Not part of the key (they do not change the binary), but evaluated here so that kj_compile
     * reports a size the macros make impossible as early as kj_kernel_get does. */
    KJ_FORWARD(kj__spec_shared_dynamic(p->spec, p->src->name, p->entry, p->defines, p->define_count,
                                       &p->shared_dynamic));
    kj__spec_drop_launch(p->spec, p->defines, &p->define_count);
    p->carveout = kj__spec_carveout(p->spec, p->entry);
    KJ_FORWARD(choose_target(rt, p, req->arch, for_launch));
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

/* ---- getting the binary ---------------------------------------------------------------------- */

typedef struct binary {
    char *data;
    size_t size;
    int is_ptx;
    char *lowered_name;      /* the entry's, when it is a name expression */
    char **lowered;          /* each name expression's (prepared.expressions), in order */
    size_t lowered_count;
    char *log;
    kj__resources resources; /* each kernel's, from the compiler and linker or from the entry */
    kj_origin origin;
    int stored;
    double compile_ms, link_ms;
    char path[PATH_MAX];
} binary;

static void binary_free(binary *b) {
    free(b->data);
    free(b->lowered_name);
    kj__strings_free(b->lowered, b->lowered_count);
    free(b->log);
    kj__resources_free(&b->resources);
    memset(b, 0, sizeof *b);
}

/* The entry's description keeps what a disk hit needs besides the binary: the lowered name of a C++
 * entry (first, so that no long option list can push it past the description's bound), the kernels'
 * resources (bounded, next) and the compiler's warnings (last, capped), which a hit shows again as
 * ccache replays a compiler's output. */
#define MAX_STORED_WARNINGS (16u << 10)

/* The rest of the line after "tag" at a line's start in desc; "" when the tag is last; NULL when
 * absent. to_end: everything after the tag's line instead. */
static char *from_description(const char *desc, const char *tag, int to_end) {
    size_t n = strlen(tag);
    for (const char *line = desc; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, tag, n) != 0) continue;
        const char *v = line + n;
        return to_end ? kj__strdup(v) : kj__strndup(v, strcspn(v, "\n"));
    }
    return NULL;
}

static char *stored_description(const prepared *p, const binary *b) {
    kj__buf d = {0};
    kj__buf_puts(&d, ""); /* "" rather than NULL when there is nothing else */
    for (size_t i = 0; i < b->lowered_count; i++) kj__buf_printf(&d, "lowered: %s\n", b->lowered[i]);
    kj__resources_describe(&b->resources, &d);
    kj__buf_puts(&d, p->description);
    if (b->log && *b->log) {
        size_t n = strlen(b->log);
        kj__buf_printf(&d, "warnings:\n%.*s%s\n", (int)(n > MAX_STORED_WARNINGS ? MAX_STORED_WARNINGS : n), b->log,
                       n > MAX_STORED_WARNINGS ? "\n(cut short)" : "");
    }
    return d.data;
}

/* Moves -minimal to the end of the option list and returns the count without it. */
static size_t without_minimal(const prepared *p, const char **o) {
    for (size_t i = 0; i + 1 < p->option_count; i++)
        if (strcmp(o[i], "-minimal") == 0) {
            const char *m = o[i];
            memmove(o + i, o + i + 1, (p->option_count - i - 1) * sizeof *o);
            o[p->option_count - 1] = m;
            break;
        }
    return p->option_count - 1;
}

static void count(kj_runtime *rt, uint64_t *counter) {
    pthread_mutex_lock(&rt->lock);
    (*counter)++;
    pthread_mutex_unlock(&rt->lock);
}

/* NVRTC on unit u of the program, with kernjit's shortcuts where the program allows them (-minimal,
 * the entry alone), and as written when that compile fails (the result is still one function of the
 * key's inputs: the same inputs always take this way, so it is stored under the same key). The output
 * is the binary, or what kj_emit asks for: PTX, or LTO-IR with -dlto after the key's options. */
static kj_status compile_unit(kj_runtime *rt, const prepared *p, size_t u, kj_emit_format format, kj__compiled *c) {
    unit_option_list options; /* room for one option more than the key's */
    KJ_FORWARD(unit_options(p, u, &options));
    int ltoir = format == KJ_EMIT_LTOIR || p->lto, add_dlto = format == KJ_EMIT_LTOIR && !p->lto;
    const char *expressions[MAX_ENTRIES];
    size_t n = 0;
    for (size_t e = 0; e < p->expression_count; e++)
        if (p->lowers_here[u] & (1ull << e)) expressions[n++] = p->expressions[e];
    kj__compile_job job = {p->units[u], options.options, p->option_count, expressions, n,
                           p->target.ptx || format == KJ_EMIT_PTX, ltoir, u == 0 ? p->alone_text : NULL};
    if (add_dlto) options.options[job.option_count++] = "-dlto";
    kj_status s = kj__compile(&job, c);
    if (s == KJ_ERR_COMPILE && (p->minimal || job.text)) {
        kj__log(&rt->log, KJ_LOG_INFO, "%s: compiling %s%s%s failed; compiling it as written", p->units[u]->name,
                job.text ? p->entry : "it", job.text ? " alone" : "", p->minimal ? " with -minimal" : "");
        if (p->minimal) {
            job.option_count = without_minimal(p, options.options);
            if (add_dlto) options.options[job.option_count++] = "-dlto"; /* where -minimal went */
        }
        job.text = NULL;
        s = kj__compile(&job, c);
    }
    unit_options_free(&options);
    if (s == KJ_ERR_COMPILE) {
        char *said = kj__strdup(kj_last_error()); /* the note is appended to this very message */
        kj__arch_explain_failure(said);
        free(said);
    }
    pthread_mutex_lock(&rt->lock);
    if (s == KJ_OK) {
        rt->stats.compiles++;
        rt->stats.compile_ms += c->ms;
    } else {
        rt->stats.compile_errors++;
    }
    pthread_mutex_unlock(&rt->lock);
    return s;
}

/* What unit u's code is to nvJitLink. */
static kj__link_input link_input(const prepared *p, size_t u, const kj__compiled *c) {
    switch (p->units[u]->kind) {
    case KJ__UNIT_PTX: return KJ__LINK_PTX;
    case KJ__UNIT_CUBIN: return KJ__LINK_CUBIN;
    case KJ__UNIT_LTOIR: return KJ__LINK_LTOIR;
    default: return p->lto ? KJ__LINK_LTOIR : c->is_ptx ? KJ__LINK_PTX : KJ__LINK_CUBIN;
    }
}

/* A unit given as compiled code (a .ptx, .cubin or .ltoir source): its bytes, as they are (PTX with
 * the NUL after its text that nvJitLink reads it up to). */
static kj_status take_as_is(const kj__source *unit, kj__compiled *c) {
    memset(c, 0, sizeof *c);
    int ptx = unit->kind == KJ__UNIT_PTX;
    c->binary = malloc(unit->len + 1);
    c->log = kj__strdup("");
    if (!c->binary || !c->log) {
        kj__compiled_free(c);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    memcpy(c->binary, unit->text, unit->len);
    c->binary[unit->len] = '\0';
    c->size = unit->len + ptx;
    c->is_ptx = ptx;
    return KJ_OK;
}

/* nvJitLink over the units' relocatable code (and the device runtime when the program launches
 * kernels): out gets the linked binary, the kernels' resources after linking and the linker's
 * warnings. */
static kj_status link_program(kj_runtime *rt, const prepared *p, kj__compiled *c, binary *out, kj__buf *log) {
    kj__link_unit units[MAX_SOURCES];
    for (size_t u = 0; u < p->unit_count; u++)
        units[u] = (kj__link_unit){p->units[u]->origin, c[u].binary, c[u].size, link_input(p, u, &c[u])};
    kj__linked linked;
    KJ_FORWARD(kj__link(p->target.arch, units, p->unit_count, p->devrt, &linked));
    /* code that nvJitLink compiles itself (LTO-IR, PTX) has ptxas's report in the linker's */
    char *rest = kj__resources_from_ptxas(linked.info, &out->resources);
    char *warnings = kj__resources_from_linker(rest ? rest : linked.info, p->target.arch, &out->resources);
    free(rest);
    if (warnings && *warnings) kj__buf_printf(log, "%s%s", log->len ? "\n" : "", warnings);
    free(warnings);
    out->data = linked.binary;
    out->size = linked.size;
    out->is_ptx = p->target.ptx;
    out->link_ms = linked.ms;
    linked.binary = NULL;
    kj__linked_free(&linked);
    pthread_mutex_lock(&rt->lock);
    rt->stats.links++;
    rt->stats.link_ms += out->link_ms;
    pthread_mutex_unlock(&rt->lock);
    return KJ_OK;
}

/* The lowered names unit u's compile gave (in the order of the expressions it lowers) into out, for
 * the expressions that have none yet; out->lowered_name then is the entry's. -1 when out of memory. */
static int take_lowered(const prepared *p, size_t u, kj__compiled *c, binary *out) {
    if (!p->expression_count) return 0;
    if (!out->lowered && !(out->lowered = calloc(p->expression_count, sizeof *out->lowered))) return -1;
    out->lowered_count = p->expression_count;
    for (size_t e = 0, j = 0; e < p->expression_count; e++) {
        if (!(p->lowers_here[u] & (1ull << e))) continue;
        if (!out->lowered[e] && j < c->lowered_count && c->lowered_names[j]) {
            out->lowered[e] = c->lowered_names[j];
            c->lowered_names[j] = NULL;
        }
        j++;
    }
    for (size_t e = 0; e < p->expression_count; e++) /* the compiled inputs' kernels: their own names */
        if ((p->unplaced & (1ull << e)) && !out->lowered[e] && !(out->lowered[e] = kj__strdup(p->expressions[e])))
            return -1;
    size_t entry = p->listed_count ? p->listed_index : 0;
    if (!out->lowered_name && out->lowered[entry] && !(out->lowered_name = kj__strdup(out->lowered[entry]))) return -1;
    return 0;
}

/* The first name expression without a lowered name, or NULL when each has one. */
static const char *unlowered(const prepared *p, const binary *b) {
    for (size_t e = 0; e < p->expression_count; e++)
        if (e >= b->lowered_count || !b->lowered[e]) return p->expressions[e];
    return NULL;
}

/* A binary that lacks an entry asked for is refused, naming it, and freed. */
static kj_status refuse_unlowered(const prepared *p, binary *out) {
    const char *missing = unlowered(p, out);
    if (!missing) return KJ_OK;
    kj_status s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY, "no kernel '%.200s' in %s (for templates give the instance, e.g. "
                          "scale<float,256>)", missing, p->src->origin);
    binary_free(out);
    return s;
}

/* The program's binary, built now: each unit compiled by NVRTC (one source alone is the binary),
 * then linked when the program is relocatable. out also gets the lowered name of the entry, the
 * warnings of both tools and each kernel's resources. */
static kj_status compile_program(kj_runtime *rt, const prepared *p, binary *out) {
    /* nvJitLink links machine code (PTX only from LTO-IR, which the device runtime has none of) */
    if (p->rdc && p->target.ptx) {
        char *where = p->unit_count > 1 ? program_origins(p) : NULL;
        kj_status s = KJ_FAIL(KJ_ERR_UNSUPPORTED, "%s cannot be built as PTX (%s): %s, and kernjit links with nvJitLink, "
                              "which makes machine code; build it for an sm_XY target",
                              where ? where : p->src->embedded ? p->src->name : p->src->origin,
                              p->target.arch, p->devrt ? "it launches kernels, so the device runtime is linked in"
                                                       : "its sources are linked into one program");
        free(where);
        return s;
    }
    kj__compiled c[MAX_SOURCES];
    memset(c, 0, sizeof c);
    kj__buf log = {0};
    kj_status s = kj__buf_puts(&log, "") ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
    for (size_t u = 0; u < p->unit_count && s == KJ_OK; u++) {
        if (p->units[u]->kind != KJ__UNIT_CU) {
            s = take_as_is(p->units[u], &c[u]);
            continue;
        }
        if ((s = compile_unit(rt, p, u, KJ_EMIT_CUBIN, &c[u])) != KJ_OK) break;
        out->compile_ms += c[u].ms;
        if (*c[u].log) kj__buf_printf(&log, "%s%s", log.len ? "\n" : "", c[u].log);
        if (take_lowered(p, u, &c[u], out) != 0) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        if (kj__resources_add(&out->resources, &c[u].resources) != 0) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (s == KJ_OK && p->rdc) {
        s = link_program(rt, p, c, out, &log);
    } else if (s == KJ_OK) {
        out->data = c[0].binary;
        out->size = c[0].size;
        out->is_ptx = c[0].is_ptx;
        c[0].binary = NULL;
    }
    for (size_t u = 0; u < p->unit_count; u++) kj__compiled_free(&c[u]);
    if (s != KJ_OK || !log.data) {
        kj__buf_free(&log);
        binary_free(out);
        return s != KJ_OK ? s : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    out->log = log.data;
    return KJ_OK;
}

/* The "lowered: " lines of a stored description, one per name expression in order, into out. -1
 * when out of memory. */
static int lowered_from_description(const prepared *p, const char *desc, binary *out) {
    if (!(out->lowered = calloc(p->expression_count, sizeof *out->lowered))) return -1;
    out->lowered_count = p->expression_count;
    size_t e = 0;
    for (const char *line = desc; line && *line && e < p->expression_count;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "lowered: ", 9) != 0) continue;
        if (!(out->lowered[e++] = kj__strndup(line + 9, strcspn(line + 9, "\n")))) return -1;
    }
    size_t entry = p->listed_count ? p->listed_index : 0;
    if (out->lowered[entry] && !(out->lowered_name = kj__strdup(out->lowered[entry]))) return -1;
    return 0;
}

/* Fills out from a stored entry (on disk, or fetched from the remote): the PTX flag, and from its
 * description (taken) NVRTC's warnings when it compiled it (shown again), the kernels' resources and
 * the lowered name of a C++ entry. 0 when the entry lacks the lowered name the request needs: it is
 * compiled again; -1 when out of memory. */
static int use_stored(kj_runtime *rt, const prepared *p, uint32_t flags, char *desc, binary *out) {
    out->is_ptx = (flags & KJ_CACHE_FLAG_PTX) != 0;
    out->log = from_description(desc, "warnings:\n", 1);
    if (!out->log) out->log = kj__strdup("");
    int oom = !out->log || kj__resources_from_description(desc, &out->resources) != 0;
    if (!oom && p->expression_count) oom = lowered_from_description(p, desc, out) != 0;
    free(desc);
    if (oom) return -1;
    if (p->expression_count && (unlowered(p, out) || !out->lowered_name)) return 0;
    if (out->log && *out->log)
        kj__log(&rt->log, KJ_LOG_WARN, "%s: NVRTC's warnings when it compiled this kernel (now from the cache):\n%s",
                p->src->name, out->log);
    return 1;
}

/* ---- the remote tier (remote.h) ---------------------------------------------------------------- */

/* After a disk miss: a verified entry from the remote cache, stored on disk (when there is a disk
 * cache) and used as a disk entry would be. */
static int remote_hit(kj_runtime *rt, const prepared *p, binary *out, kj__remote_claim *claim) {
    kj__remote_entry e;
    if (!kj__remote_lookup(rt->remote, p->target.cache_arch, &p->key, &e, claim)) return 0;
    char *desc = kj__strndup(e.description, e.description_len);
    out->data = malloc(e.len ? e.len : 1);
    if (desc && out->data) {
        memcpy(out->data, e.payload, e.len);
        out->size = e.len;
        out->origin = KJ_ORIGIN_REMOTE;
        out->stored = rt->cache && kj__cache_store(rt->cache, p->target.cache_arch, &p->key, desc, e.payload, e.len, e.flags,
                                                   out->path) == 0;
    }
    free(e.data);
    if (!desc || !out->data || use_stored(rt, p, e.flags, desc, out) != 1) {
        if (!out->data) free(desc);
        binary_free(out);
        return 0;
    }
    if (!out->stored) out->path[0] = '\0';
    kj__log(&rt->log, KJ_LOG_INFO, "%s: remote hit%s%s", p->src->name, out->stored ? ", stored as " : "", out->path);
    return 1;
}

/* After a compile here: the entry is pushed in the background, and the key's lease, when this
 * process holds it, released once it is there; after a failed compile the lease is let go. */
static void remote_publish(kj_runtime *rt, const prepared *p, const binary *b, kj__remote_claim *claim, kj_status s) {
    if (!rt->remote) return;
    char *desc = s == KJ_OK ? stored_description(p, b) : NULL;
    size_t size = 0;
    uint8_t *entry = desc ? kj__cache_format_entry(&p->key, desc, b->data, b->size, b->is_ptx ? KJ_CACHE_FLAG_PTX : 0,
                                                   &size) : NULL;
    free(desc);
    if (entry) kj__remote_publish(rt->remote, p->target.cache_arch, &p->key, entry, size, claim);
    else kj__remote_abandon(rt->remote, claim);
}

static kj_status obtain_elsewhere(kj_runtime *rt, const prepared *p, binary *out);
static kj_status compile_binary(kj_runtime *rt, const prepared *p, binary *out);
static kj_status obtain_here(kj_runtime *rt, const prepared *p, binary *out);

/* A waiter's copy of the entry another runtime of this process obtained at the same moment, used as a
 * disk entry is (and stored in this runtime's disk cache when that is not the leader's). 0 when it
 * cannot be used. */
static int from_flight(kj_runtime *rt, const prepared *p, const kj__flight_entry *e, binary *out) {
    memset(out, 0, sizeof *out);
    char *desc = kj__strdup(e->description);
    out->data = malloc(e->size ? e->size : 1);
    if (!desc || !out->data) {
        free(desc);
        binary_free(out);
        return 0;
    }
    memcpy(out->data, e->data, e->size);
    out->size = e->size;
    out->origin = KJ_ORIGIN_MEMORY;
    if (rt->cache && strcmp(kj__cache_root(rt->cache), e->cache_root) != 0) {
        out->stored = kj__cache_store(rt->cache, p->target.cache_arch, &p->key, e->description, e->data, e->size,
                                      e->flags, out->path) == 0;
        if (!out->stored) count(rt, &rt->stats.store_failures);
    } else if (rt->cache && *e->path) {
        out->stored = 1;
        snprintf(out->path, sizeof out->path, "%s", e->path);
    }
    if (use_stored(rt, p, e->flags, desc, out) != 1) {
        binary_free(out);
        return 0;
    }
    if (!out->stored) out->path[0] = '\0';
    count(rt, &rt->stats.memory_hits);
    kj__log(&rt->log, KJ_LOG_INFO, "%s: from another runtime of this process (one compile per key)", p->src->name);
    return 1;
}

/* ---- the seed tier (seed.h) ------------------------------------------------------------------- */

/* A verified entry from a seed folder, used in place (nothing is stored in the disk cache). 0 when
 * no seed has one that can be used. */
static int seed_hit(kj_runtime *rt, const prepared *p, binary *out) {
    memset(out, 0, sizeof *out);
    if (!kj__seed_count(rt->seed)) return 0;
    char *payload, *desc;
    size_t len;
    uint32_t flags;
    if (kj__seed_load(rt->seed, p->target.cache_arch, &p->key, &payload, &len, &flags, &desc, out->path) != KJ__HIT)
        return 0;
    out->data = payload;
    out->size = len;
    out->origin = KJ_ORIGIN_SEED;
    out->stored = 1;
    if (use_stored(rt, p, flags, desc, out) != 1) { /* out of memory, or no lowered name: the other tiers */
        binary_free(out);
        return 0;
    }
    count(rt, &rt->stats.seed_hits);
    kj__log(&rt->log, KJ_LOG_INFO, "%s: seed hit %s", p->src->name, out->path);
    return 1;
}

/* The entry for p's key: from a seed, else one runtime of the process obtains it (flight.h), the others
 * that ask at the same moment take its bytes. Seeds are read-only: each runtime reads its own. */
static kj_status obtain_binary(kj_runtime *rt, const prepared *p, binary *out) {
    if (seed_hit(rt, p, out)) return KJ_OK;
    int leads = 0;
    kj__flight *f = kj__flight_join(p->key.bytes, &leads);
    if (!f) return obtain_here(rt, p, out);
    if (!leads) {
        const kj__flight_entry *e = kj__flight_result(f);
        int used = e && from_flight(rt, p, e, out);
        kj__flight_leave(f);
        return used ? KJ_OK : obtain_here(rt, p, out);
    }
    kj_status s = obtain_here(rt, p, out);
    int waited = kj__flight_close(f); /* no copy for a flight nobody joined: the usual case */
    char *desc = s == KJ_OK && waited ? stored_description(p, out) : NULL;
    kj__flight_entry e = {out->data, out->size, out->is_ptx ? KJ_CACHE_FLAG_PTX : 0, desc,
                          rt->cache ? kj__cache_root(rt->cache) : "", out->stored ? out->path : ""};
    kj__flight_land(f, desc ? &e : NULL);
    free(desc);
    return s;
}

/* Memory missed: the disk cache, else the remote tier or a compile. */
static kj_status obtain_here(kj_runtime *rt, const prepared *p, binary *out) {
    memset(out, 0, sizeof *out);
    if (rt->cache) {
        char *payload;
        size_t len;
        uint32_t flags;
        char *desc = NULL;
        kj__lookup r = kj__cache_load(rt->cache, p->target.cache_arch, &p->key, &payload, &len, &flags, &desc, out->path);
        if (r == KJ__HIT) {
            out->data = payload;
            out->size = len;
            out->origin = KJ_ORIGIN_DISK;
            out->stored = 1;
            int used = use_stored(rt, p, flags, desc, out);
            if (used < 0) {
                binary_free(out);
                return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            }
            if (used) {
                count(rt, &rt->stats.disk_hits);
                kj__log(&rt->log, KJ_LOG_INFO, "%s: disk hit %s", p->src->name, out->path);
                return KJ_OK;
            }
            binary_free(out); /* an entry without the lowered name cannot be used: compile again */
        }
        if (r == KJ__BAD) count(rt, &rt->stats.bad_entries);
    }
    return obtain_elsewhere(rt, p, out);
}

/* Not in memory, not on disk: the remote tier, else a compile here (pushed to the remote after). */
static kj_status obtain_elsewhere(kj_runtime *rt, const prepared *p, binary *out) {
    kj__remote_claim claim;
    if (remote_hit(rt, p, out, &claim)) return KJ_OK;
    kj_status s = compile_binary(rt, p, out);
    remote_publish(rt, p, out, &claim, s);
    return s;
}

static kj_status compile_binary(kj_runtime *rt, const prepared *p, binary *out) {
    count(rt, &rt->stats.misses);

    KJ_FORWARD(compile_program(rt, p, out));
    out->origin = KJ_ORIGIN_COMPILED;
    KJ_FORWARD(refuse_unlowered(p, out));
    if (out->log && *out->log) kj__log(&rt->log, KJ_LOG_WARN, "%s: NVRTC's warnings:\n%s", p->src->name, out->log);
    if (rt->cache) {
        char *desc = stored_description(p, out);
        if (desc && kj__cache_store(rt->cache, p->target.cache_arch, &p->key, desc, out->data, out->size,
                                    out->is_ptx ? KJ_CACHE_FLAG_PTX : 0, out->path) == 0)
            out->stored = 1;
        else
            count(rt, &rt->stats.store_failures);
        free(desc);
    }
    if (!out->stored) out->path[0] = '\0';
    kj__log(&rt->log, KJ_LOG_INFO, "%s: compiled for %s in %.1f ms%s%s", p->src->name, p->target.arch, out->compile_ms,
            out->stored ? ", stored as " : (rt->cache ? ", not stored" : ", no disk cache"), out->path);
    return KJ_OK;
}

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

static char *joined_defines(const prepared *p) {
    kj__buf b = {0};
    kj__buf_puts(&b, "");
    for (size_t i = 0; i < p->define_count; i++) kj__buf_printf(&b, "%s%s", i ? " " : "", p->defines[i]);
    return b.data;
}

/* A loaded module's lowered names, for another request of the same key (another of its entries). */
static kj_status lowered_from_module(const prepared *p, const kj__module *m, binary *bin) {
    size_t entry = p->listed_count ? p->listed_index : 0;
    if (!p->expression_count || entry >= m->lowered_count || !m->lowered[entry]) return KJ_OK;
    bin->lowered_name = kj__strdup(m->lowered[entry]);
    return bin->lowered_name ? KJ_OK : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
}

/* Loads the module for the key, or finds the one already loaded. */
static kj_status module_for(kj_runtime *rt, const prepared *p, binary *bin, CUmodule *out) {
    pthread_mutex_lock(&rt->lock);
    kj__module *known = kj__map_get(&rt->modules, p->key.bytes);
    pthread_mutex_unlock(&rt->lock);
    if (known) { /* modules live until the runtime does */
        bin->origin = KJ_ORIGIN_MEMORY;
        *out = known->module;
        return lowered_from_module(p, known, bin);
    }
    CUmodule m = NULL;
    KJ_FORWARD(obtain_binary(rt, p, bin));
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

static kj_status apply_metadata_attributes(kj_kernel *k);

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

static kj_status make_kernel(kj_runtime *rt, const kj_request *req, const prepared *p, binary *bin, CUmodule m,
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
    if (s == KJ_OK) s = apply_metadata_attributes(k);
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

    prepared p;
    binary bin = {0};
    CUmodule m = NULL;
    kj_status s = prepare(rt, req, 1, &p);
    if (s == KJ_OK) s = module_for(rt, &p, &bin, &m);
    if (s == KJ_OK) s = make_kernel(rt, req, &p, &bin, m, &k);
    kj_origin from = bin.origin;
    binary_free(&bin);
    prepared_free(&p);
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
static void keep_for_result(const prepared *p, binary *bin, const char *entry_symbol, kj_compile_result *result) {
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
static void fill_result(const prepared *p, binary *bin, kj_compile_result *caller) {
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
    prepared p;
    binary bin;
    kj_status s = prepare(rt, req, 0, &p);
    if (s == KJ_OK) s = obtain_binary(rt, &p, &bin);
    if (s == KJ_OK && result) fill_result(&p, &bin, result);
    if (s == KJ_OK) binary_free(&bin);
    prepared_free(&p);
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

/* PTX or LTO-IR of the program's one unit, compiled now (the cache keeps binaries only). */
static kj_status emit_unit(kj_runtime *rt, const prepared *p, kj_emit_format format, binary *out) {
    memset(out, 0, sizeof *out);
    KJ_RETURN_IF(p->unit_count > 1, KJ_ERR_USAGE, "%s of a program of %zu sources: PTX and LTO-IR are a single "
                 "source's output (a program of several is linked into one cubin: emit cubin)",
                 format == KJ_EMIT_PTX ? "PTX" : "LTO-IR", p->unit_count);
    KJ_RETURN_IF(format == KJ_EMIT_PTX && p->lto, KJ_ERR_USAGE, "PTX with -dlto: a -dlto compile makes LTO-IR (emit "
                 "ltoir), or the linked program (emit cubin)");
    count(rt, &rt->stats.misses);
    kj__compiled c;
    KJ_FORWARD(compile_unit(rt, p, 0, format, &c));
    /* PTX is text: its NUL stays after the data, uncounted */
    *out = (binary){.data = c.binary, .size = c.size - (format == KJ_EMIT_PTX && c.size && !c.binary[c.size - 1]),
                    .is_ptx = format == KJ_EMIT_PTX, .log = c.log, .resources = c.resources,
                    .origin = KJ_ORIGIN_COMPILED, .compile_ms = c.ms};
    int oom = take_lowered(p, 0, &c, out);
    kj__strings_free(c.lowered_names, c.lowered_count);
    if (oom) {
        binary_free(out);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    KJ_FORWARD(refuse_unlowered(p, out));
    return KJ_OK;
}

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
    prepared p;
    binary bin;
    kj_status s = prepare(rt, req, 0, &p);
    if (s == KJ_OK && format == KJ_EMIT_CUBIN && p.target.ptx)
        s = KJ_FAIL(KJ_ERR_UNSUPPORTED, "the target is %s: there is PTX for the driver to finish, no cubin; emit ptx, "
                    "or give an sm_XY target", p.target.arch);
    if (s == KJ_OK) s = format == KJ_EMIT_CUBIN ? obtain_binary(rt, &p, &bin) : emit_unit(rt, &p, format, &bin);
    if (s == KJ_OK) {
        if (result) fill_result(&p, &bin, result);
        *data = bin.data;
        *size = bin.size;
        bin.data = NULL;
        binary_free(&bin);
    }
    prepared_free(&p);
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
    binary bins[MAX_FATBIN_TARGETS];
    kj__fatbin_image images[MAX_FATBIN_TARGETS];
    memset(bins, 0, sizeof bins);
    kj_status s = KJ_OK;
    size_t got = 0;
    prepared p;
    memset(&p, 0, sizeof p);
    for (; got < arch_count && s == KJ_OK; got++) {
        count_request(rt);
        prepared_free(&p);
        one.arch = archs[got];
        s = prepare(rt, &one, 0, &p);
        if (s == KJ_OK) s = obtain_binary(rt, &p, &bins[got]);
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
    for (size_t i = 0; i < got && i < MAX_FATBIN_TARGETS; i++) binary_free(&bins[i]);
    prepared_free(&p);
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

kj_status kj_kernel_occupancy(const kj_kernel *k, unsigned block_threads, unsigned dynamic_shared, int *blocks_per_sm) {
    KJ_RETURN_IF(!k || !blocks_per_sm, KJ_ERR_USAGE, "kj_kernel_occupancy: NULL argument");
    KJ_RETURN_IF(block_threads == 0 || block_threads > (unsigned)k->max_threads, KJ_ERR_LIMIT,
                 "a block of %u threads: %s allows 1 to %d", block_threads, k->entry, k->max_threads);
    kj_runtime *rt = k->rt;
    kj_kernel *mk = (kj_kernel *)k; /* the cache is not part of the kernel's observable state */
    pthread_mutex_lock(&rt->lock);
    int cached = mk->occupancy_block == block_threads && mk->occupancy_shared == dynamic_shared ? mk->occupancy : -1;
    pthread_mutex_unlock(&rt->lock);
    if (cached >= 0) {
        *blocks_per_sm = cached;
        return KJ_OK;
    }
    KJ_FORWARD(kj__enter(rt));
    int n = 0;
    KJ_CU(rt->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k->function, (int)block_threads, dynamic_shared),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    pthread_mutex_lock(&rt->lock);
    mk->occupancy_block = block_threads;
    mk->occupancy_shared = dynamic_shared;
    mk->occupancy = n;
    pthread_mutex_unlock(&rt->lock);
    *blocks_per_sm = n;
    return KJ_OK;
}

/* ---- launching ------------------------------------------------------------------------------- */

static unsigned dim(unsigned v) { return v ? v : 1; }

static kj_status check_config(const kj_kernel *k, const kj_launch_config *c) {
    const kj_device_info *d = &k->rt->info;
    static const char axis[] = "xyz";
    uint64_t threads = 1;
    for (int i = 0; i < 3; i++) {
        KJ_RETURN_IF(dim(c->block[i]) > (unsigned)d->max_block_dim[i], KJ_ERR_LIMIT,
                     "block %c = %u exceeds the device's limit of %d", axis[i], c->block[i], d->max_block_dim[i]);
        KJ_RETURN_IF(dim(c->grid[i]) > (unsigned)d->max_grid_dim[i], KJ_ERR_LIMIT,
                     "grid %c = %u exceeds the device's limit of %d", axis[i], c->grid[i], d->max_grid_dim[i]);
        threads *= dim(c->block[i]);
    }
    KJ_RETURN_IF(threads > (uint64_t)k->max_threads, KJ_ERR_LIMIT,
                 "a block of %llu threads exceeds %s's limit of %d threads per block (device: %d)",
                 (unsigned long long)threads, k->entry, k->max_threads, d->max_threads_per_block);
    return KJ_OK;
}

/* Dynamic shared memory above the function's current limit must be opted in first; beyond the
 * device's opt-in maximum (less the static shared memory) it cannot run at all. */
static kj_status ensure_shared(kj_kernel *k, unsigned bytes) {
    kj_runtime *rt = k->rt;
    /* the fast path reads without the lock, which launches from other threads may be taking to raise
     * the limit: an atomic load, so that the read is defined (it can only be stale low, which the
     * locked path then corrects) */
    if (bytes <= __atomic_load_n(&k->dynamic_shared_allowed, __ATOMIC_ACQUIRE)) return KJ_OK;
    size_t optin = rt->info.shared_per_block_optin;
    size_t most = optin > (size_t)k->shared_static ? optin - (size_t)k->shared_static : 0;
    KJ_RETURN_IF(bytes > most, KJ_ERR_LIMIT,
                 "%s asks for %u bytes of dynamic shared memory; the device allows %zu per block (opt-in maximum %zu "
                 "less %d static)", k->entry, bytes, most, optin, k->shared_static);
    pthread_mutex_lock(&rt->lock);
    CUresult r = CUDA_SUCCESS;
    if (bytes > k->dynamic_shared_allowed) {
        r = rt->cu->cuFuncSetAttribute(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
        if (r == CUDA_SUCCESS) __atomic_store_n(&k->dynamic_shared_allowed, bytes, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&rt->lock);
    KJ_CU(r, "opting in to dynamic shared memory (cuFuncSetAttribute)");
    return KJ_OK;
}

/* The metadata's launch attributes, set once when the kernel is made (before any launch): the
 * dynamic shared memory it asks for is opted in above the function's default limit, and the carveout
 * preference is applied. A size the device cannot give fails here, naming both numbers, so that the
 * kernel is never handed out. */
static kj_status apply_metadata_attributes(kj_kernel *k) {
    kj_runtime *rt = k->rt;
    if (k->shared_dynamic) {
        size_t optin = rt->info.shared_per_block_optin;
        size_t most = optin > (size_t)k->shared_static ? optin - (size_t)k->shared_static : 0;
        KJ_RETURN_IF(k->shared_dynamic > most, KJ_ERR_LIMIT,
                     "%s (%s): its metadata asks for %u bytes of dynamic shared memory; the device allows %zu per "
                     "block (opt-in maximum %zu less %d static)", k->entry, k->defines, k->shared_dynamic, most,
                     optin, k->shared_static);
        KJ_FORWARD(ensure_shared(k, k->shared_dynamic));
    }
    if (k->carveout != KJ__CARVEOUT_UNSET)
        KJ_CU(rt->cu->cuFuncSetAttribute(k->function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, k->carveout),
              "setting the preferred shared-memory carveout (cuFuncSetAttribute)");
    return KJ_OK;
}

uint64_t kj__pending_launch_limit(kj_runtime *rt) {
    size_t v = 0;
    if (rt->cu->cuCtxGetLimit(&v, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) == CUDA_SUCCESS) return v;
    pthread_mutex_lock(&rt->lock);
    uint64_t known = rt->pending_launch_limit;
    pthread_mutex_unlock(&rt->lock);
    return known;
}

/* The device runtime keeps launches that are not yet running in a buffer sized by this limit; a
 * launch that does not fit fails on the device only, so it is raised before launching, and never
 * lowered: below what this runtime set, or what the context has (another runtime may share it). */
static kj_status ensure_pending_limit(kj_runtime *rt, uint64_t need) {
    if (!need) return KJ_OK;
    pthread_mutex_lock(&rt->lock);
    CUresult r = CUDA_SUCCESS;
    size_t now = 0;
    if (need > rt->pending_launch_limit &&
        rt->cu->cuCtxGetLimit(&now, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) == CUDA_SUCCESS && now > rt->pending_launch_limit)
        rt->pending_launch_limit = now;
    if (need > rt->pending_launch_limit) {
        r = rt->cu->cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, (size_t)need);
        if (r == CUDA_SUCCESS) rt->pending_launch_limit = need;
    }
    pthread_mutex_unlock(&rt->lock);
    KJ_CU(r, "setting CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT");
    return KJ_OK;
}

static uint64_t blocks_of(const unsigned v[3]) { return (uint64_t)dim(v[0]) * dim(v[1]) * dim(v[2]); }

/* Every block of a cooperative grid is resident at once: at most blocks-per-SM x SMs. */
static kj_status check_cooperative(kj_kernel *k, const kj_launch_config *c, unsigned shared) {
    int per_sm = 0;
    KJ_FORWARD(kj_kernel_occupancy(k, (unsigned)blocks_of(c->block), shared, &per_sm));
    uint64_t most = (uint64_t)per_sm * (uint64_t)k->rt->info.sm_count, want = blocks_of(c->grid);
    KJ_RETURN_IF(want > most, KJ_ERR_LIMIT,
                 "a cooperative grid of %llu blocks does not fit: %s runs at most %d blocks of %llu threads (%u bytes of "
                 "dynamic shared memory) per multiprocessor, so at most %llu blocks on the %d multiprocessors",
                 (unsigned long long)want, k->entry, per_sm, (unsigned long long)blocks_of(c->block), shared,
                 (unsigned long long)most, k->rt->info.sm_count);
    return KJ_OK;
}

/* Clusters: compute capability 9.0 and later, whole clusters in every grid dimension, and a cluster
 * the device can place (cuOccupancyMaxActiveClusters, where the driver has it). */
static kj_status check_cluster(kj_kernel *k, const kj_launch_config *c, unsigned shared) {
    kj_runtime *rt = k->rt;
    KJ_RETURN_IF(rt->info.cc_major < 9, KJ_ERR_UNSUPPORTED,
                 "thread-block clusters need compute capability 9.0 or later; this device is %d.%d",
                 rt->info.cc_major, rt->info.cc_minor);
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++)
        KJ_RETURN_IF(dim(c->grid[i]) % dim(c->cluster[i]), KJ_ERR_LIMIT,
                     "grid %c = %u is not a multiple of the cluster's %c = %u", axis[i], dim(c->grid[i]), axis[i],
                     dim(c->cluster[i]));
    if (!rt->cu->cuOccupancyMaxActiveClusters) return KJ_OK;
    CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
    attr.value.clusterDim.x = dim(c->cluster[0]);
    attr.value.clusterDim.y = dim(c->cluster[1]);
    attr.value.clusterDim.z = dim(c->cluster[2]);
    CUlaunchConfig lc = {.gridDimX = dim(c->grid[0]), .gridDimY = dim(c->grid[1]), .gridDimZ = dim(c->grid[2]),
                         .blockDimX = dim(c->block[0]), .blockDimY = dim(c->block[1]), .blockDimZ = dim(c->block[2]),
                         .sharedMemBytes = shared, .attrs = &attr, .numAttrs = 1};
    int clusters = 0;
    CUresult r = rt->cu->cuOccupancyMaxActiveClusters(&clusters, k->function, &lc);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_VALUE && r != CUDA_ERROR_INVALID_CLUSTER_SIZE)
        return kj__cuda_fail(r, __FILE__, __LINE__, "cuOccupancyMaxActiveClusters");
    KJ_RETURN_IF(r != CUDA_SUCCESS || clusters == 0, KJ_ERR_LIMIT,
                 "a cluster of %u x %u x %u blocks of %llu threads cannot be placed on this device (a cluster holds "
                 "at most 8 blocks portably, all resident on one GPC at once)", dim(c->cluster[0]), dim(c->cluster[1]),
                 dim(c->cluster[2]), (unsigned long long)blocks_of(c->block));
    return KJ_OK;
}

kj_status kj_kernel_launch(kj_kernel *k, const kj_launch_config *c, void **args) {
    KJ_RETURN_IF(!k || !c, KJ_ERR_USAGE, "kj_kernel_launch: kernel and config are required");
    kj_launch_config copy;
    KJ__SIZED_INPUT(c, copy, kj_launch_config, KJ_LAUNCH_CONFIG_INIT);
    KJ_FORWARD(kj__enter(k->rt));
    return kj__kernel_launch(k, c, args);
}

kj_status kj__kernel_launch(kj_kernel *k, const kj_launch_config *c, void **args) {
    kj_runtime *rt = k->rt;
    KJ_FORWARD(check_config(k, c));
    /* 0 means "what the kernel's metadata asks for" (shared-dynamic), itself 0 when it asks nothing. */
    unsigned shared = c->shared_bytes ? c->shared_bytes : k->shared_dynamic;
    KJ_FORWARD(ensure_shared(k, shared));
    if (k->linked) KJ_FORWARD(ensure_pending_limit(rt, c->pending_launches ? c->pending_launches : k->pending_launches));
    int clustered = c->cluster[0] || c->cluster[1] || c->cluster[2];
    if (c->cooperative) KJ_FORWARD(check_cooperative(k, c, shared));
    if (clustered) KJ_FORWARD(check_cluster(k, c, shared));
    if (k->pdl || c->cooperative || clustered) {
        CUlaunchAttribute attrs[3];
        unsigned n = 0;
        if (k->pdl) {
            /* programmatic stream serialization: the kernel may start while the one before it
             * finishes; it waits (griddepcontrol.wait) before touching memory, as its metadata promises */
            attrs[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
            attrs[n++].value.programmaticStreamSerializationAllowed = 1;
        }
        if (c->cooperative) {
            attrs[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
            attrs[n++].value.cooperative = 1;
        }
        if (clustered) {
            attrs[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
            attrs[n].value.clusterDim.x = dim(c->cluster[0]);
            attrs[n].value.clusterDim.y = dim(c->cluster[1]);
            attrs[n++].value.clusterDim.z = dim(c->cluster[2]);
        }
        KJ_RETURN_IF(!rt->cu->cuLaunchKernelEx, KJ_ERR_UNSUPPORTED,
                     "cooperative and cluster launches need cuLaunchKernelEx (a CUDA 12 driver or newer)");
        CUlaunchConfig lc = {.gridDimX = dim(c->grid[0]), .gridDimY = dim(c->grid[1]), .gridDimZ = dim(c->grid[2]),
                             .blockDimX = dim(c->block[0]), .blockDimY = dim(c->block[1]), .blockDimZ = dim(c->block[2]),
                             .sharedMemBytes = shared, .hStream = (CUstream)c->stream, .attrs = attrs, .numAttrs = n};
        KJ_CU(rt->cu->cuLaunchKernelEx(&lc, k->function, args, NULL), "kernel launch (cuLaunchKernelEx)");
        return KJ_OK;
    }
    KJ_CU(rt->cu->cuLaunchKernel(k->function, dim(c->grid[0]), dim(c->grid[1]), dim(c->grid[2]), dim(c->block[0]),
                                 dim(c->block[1]), dim(c->block[2]), shared, (CUstream)c->stream, args, NULL),
          "kernel launch (cuLaunchKernel)");
    return KJ_OK;
}
