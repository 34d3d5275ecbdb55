#include "jit/includes.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "jit/lex.h"
#include "base/util.h"
#include "jit/embedded.h"
#include "jit/toolkit.h"
#include "jit/unit.h"

/* ---- looking a file up ------------------------------------------------------------------------ */

typedef enum { FOUND_NONE, FOUND_FILE, FOUND_EMBEDDED, FOUND_TOOLKIT } found_kind;

typedef struct found {
    found_kind kind;
    char *real;                    /* FOUND_FILE: the real path (malloc'd) */
    int fd;                        /* FOUND_FILE: the file, open to be read (-1 once closed) */
    struct stat st;                /* FOUND_FILE: its fstat */
    const kj__embedded_file *embedded;
} found;

static void found_clear(found *f) {
    free(f->real);
    if (f->kind == FOUND_FILE && f->fd >= 0) close(f->fd);
    memset(f, 0, sizeof *f);
}

/* Whether dir/name (name alone when dir is NULL) is a file to read: then *hit, with f's path, fd and
 * fstat. Not there, or a folder: no hit (C goes on looking). A special file, or one there that cannot
 * be opened: a failure naming it. A hit costs open, fstat and readlink, not stat and realpath's
 * readlink for every component (a new process's disk hit reads and hashes every header). */
static kj_status probe(const char *dir, const char *name, const char *includer, found *f, int *hit) {
    *hit = 0;
    char path[PATH_MAX];
    int n = dir ? snprintf(path, sizeof path, "%s/%s", dir, name) : snprintf(path, sizeof path, "%s", name);
    if (n < 0 || (size_t)n >= sizeof path) return KJ_OK;
    /* O_NONBLOCK: a FIFO would otherwise wait for a writer (fstat turns it away) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0) {
        int err = errno;
        /* not there; or there, unreadable (a folder we may not search is "not there", as stat says) */
        if (err == ENOENT || err == ENOTDIR || stat(path, &st) != 0 || S_ISDIR(st.st_mode)) return KJ_OK;
        return KJ_FAIL(KJ_ERR_SOURCE, "cannot open '%s' (included by %s): %s", path, includer, kj__strerror(err));
    }
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return KJ_OK;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return KJ_FAIL(KJ_ERR_SOURCE, "'%s' (included by %s) is a special file, not a regular file", path, includer);
    }
    char *real = kj__real_path_fd(fd, path);
    if (!real) {
        int err = errno;
        close(fd);
        return KJ_FAIL(KJ_ERR_SOURCE, "cannot open '%s' (included by %s): %s", path, includer, strerror(err));
    }
    *f = (found){FOUND_FILE, real, fd, st, NULL};
    *hit = 1;
    return KJ_OK;
}

/* Adds a folder tried to the message's list, when one is wanted (a lookup that found nothing). */
static void tried(kj__buf *looked, const char *where) {
    if (looked) kj__buf_printf(looked, "%s%s", looked->len ? ", " : "", where);
}

/* Tries each colon-separated folder of list. */
static kj_status probe_list(const char *list, const char *name, const char *includer, found *f, int *hit,
                            kj__buf *looked) {
    *hit = 0;
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ":");
        if (n && n < PATH_MAX) {
            char dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%.*s", (int)n, p);
            tried(looked, dir);
            KJ_FORWARD(probe(dir, name, includer, f, hit));
            if (*hit) return KJ_OK;
        }
        p += n + (p[n] == ':');
    }
    return KJ_OK;
}

/* Whether a toolkit folder has the header (NVRTC reads it: kernjit only needs to know it is there). */
static int in_toolkit(const char *dir, const char *name) {
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Where `name` (quoted when !angle) included from a file in includer_dir resolves, by includes.h's
 * rules; `looked` (NULL: not wanted) gets the folders tried, for the message of an include found
 * nowhere. */
static kj_status lookup(const kj__include_config *cfg, const char *includer, const char *includer_dir,
                        const char *name, int angle, found *f, kj__buf *looked) {
    memset(f, 0, sizeof *f);
    int hit = 0;
    if (name[0] == '/') {
        tried(looked, "(an absolute path)");
        return probe(NULL, name, includer, f, &hit);
    }
    if (!angle && includer_dir) {
        tried(looked, includer_dir);
        KJ_FORWARD(probe(includer_dir, name, includer, f, &hit));
        if (hit) return KJ_OK;
    }
    for (size_t i = 0; i < cfg->dir_count; i++) {
        tried(looked, cfg->dirs[i]);
        KJ_FORWARD(probe(cfg->dirs[i], name, includer, f, &hit));
        if (hit) return KJ_OK;
    }
    if (!angle) {
        KJ_FORWARD(probe_list(cfg->search_path, name, includer, f, &hit, looked));
        if (hit) return KJ_OK;
        if ((f->embedded = kj__embedded_find(name))) return f->kind = FOUND_EMBEDDED, KJ_OK;
        tried(looked, "the built-in headers");
    }
    const char *tk[2];
    size_t ntk;
    kj__toolkit_include_dirs(tk, &ntk);
    for (size_t i = 0; i < ntk; i++) {
        tried(looked, tk[i]);
        if (in_toolkit(tk[i], name)) return f->kind = FOUND_TOOLKIT, KJ_OK;
    }
    return KJ_OK;
}

/* ---- the headers of a source ------------------------------------------------------------------ */

static char *dir_of_real(const char *real) {
    const char *slash = strrchr(real, '/');
    return slash == real ? kj__strdup("/") : kj__strndup(real, (size_t)(slash - real));
}

static int name_taken(const kj__source *src, const char *name) {
    for (size_t i = 0; i < src->header_count; i++)
        if (strcmp(src->headers[i].name, name) == 0) return 1;
    return 0;
}

/* The name NVRTC knows a file by: KJ__VROOT followed by its canonical name. */
static char *vname(const char *canonical) {
    return kj__asprintf("%s%s%s", KJ__VROOT, canonical[0] == '/' ? "" : "/", canonical);
}

/* The header for a resolved file: the one already there, or a new one read now. */
static kj_status header_for(kj__source *src, const found *f, const char *includer, size_t *index) {
    char *embedded_name = f->kind == FOUND_EMBEDDED ? vname(f->embedded->name) : NULL;
    if (f->kind == FOUND_EMBEDDED && !embedded_name) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < src->header_count; i++) {
        const kj__header *h = &src->headers[i];
        if (f->kind == FOUND_FILE ? h->path && strcmp(h->path, f->real) == 0
                                  : !h->path && strcmp(h->name, embedded_name) == 0) {
            free(embedded_name);
            *index = i;
            return KJ_OK;
        }
    }
    if (src->header_count == KJ_MAX_HEADERS) {
        free(embedded_name);
        return KJ_FAIL(KJ_ERR_SOURCE, "'%s' reaches more than %d headers", src->origin, KJ_MAX_HEADERS);
    }
    if (src->header_count == src->header_cap) {
        size_t cap = src->header_cap ? 2 * src->header_cap : 8;
        kj__header *grown = realloc(src->headers, cap * sizeof *grown);
        if (!grown) {
            free(embedded_name);
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        }
        src->headers = grown;
        src->header_cap = cap;
    }
    kj__header h = {0};
    if (f->kind == FOUND_EMBEDDED) {
        h.name = embedded_name;
        h.text = kj__strndup(f->embedded->data, f->embedded->len);
        h.len = f->embedded->len;
        if (!h.name || !h.text) goto oom;
    } else {
        (void)includer; /* kj__read_fd's message names the file */
        KJ_FORWARD(kj__read_fd(f->fd, &f->st, f->real, KJ_MAX_SOURCE_BYTES, KJ_ERR_SOURCE, &h.text, &h.len));
        size_t root_len = src->root ? strlen(src->root) : 0;
        int inside = root_len && strncmp(f->real, src->root, root_len) == 0 && f->real[root_len] == '/';
        /* a name another file holds already (an embedded header, say) gives way to the full path */
        h.name = vname(inside ? f->real + root_len + 1 : f->real);
        if (h.name && name_taken(src, h.name)) {
            free(h.name);
            h.name = vname(f->real);
        }
        h.path = kj__strdup(f->real);
        h.dir = dir_of_real(f->real);
        if (!h.name || !h.path || !h.dir) goto oom;
    }
    *index = src->header_count;
    src->headers[src->header_count++] = h;
    return KJ_OK;
oom:
    free(h.name), free(h.text), free(h.path), free(h.dir);
    return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
}

kj_status kj__includes_add_file(kj__source *src, const char *path, const char **name) {
    struct stat st;
    KJ_RETURN_IF(stat(path, &st) != 0, KJ_ERR_USAGE, "pre-include '%s': %s (a path from the working directory, or "
                 "absolute)", path, strerror(errno));
    KJ_RETURN_IF(!S_ISREG(st.st_mode), KJ_ERR_SOURCE, "pre-include '%s' is %s, not a regular file", path,
                 S_ISDIR(st.st_mode) ? "a folder" : "a special file");
    found f;
    int hit;
    char pre[PATH_MAX + 16];
    snprintf(pre, sizeof pre, "--pre-include %s", path);
    KJ_FORWARD(probe(NULL, path, pre, &f, &hit));
    KJ_RETURN_IF(!hit, KJ_ERR_SOURCE, "cannot open pre-include '%s'", path);
    size_t i;
    kj_status s = header_for(src, &f, NULL, &i);
    found_clear(&f);
    KJ_FORWARD(s);
    *name = src->headers[i].name;
    return KJ_OK;
}

/* ---- scanning and rewriting -------------------------------------------------------------------- */

typedef struct macro {
    char name[65];
    char value[PATH_MAX];  /* "x.h" or <x.h>, with its delimiters */
} macro;

typedef struct scan {
    macro *macros;
    size_t macro_count, macro_cap;
} scan;

static void remember_macro(scan *sc, const char *name, size_t name_len, const char *value, size_t value_len) {
    if (name_len >= sizeof sc->macros[0].name || value_len >= sizeof sc->macros[0].value) return;
    if (sc->macro_count == sc->macro_cap) {
        size_t cap = sc->macro_cap ? 2 * sc->macro_cap : 16;
        macro *grown = realloc(sc->macros, cap * sizeof *grown);
        if (!grown) return; /* then NAME stays unresolved: a clear error later, never a wrong binary */
        sc->macros = grown;
        sc->macro_cap = cap;
    }
    macro *m = &sc->macros[sc->macro_count++];
    snprintf(m->name, sizeof m->name, "%.*s", (int)name_len, name);
    snprintf(m->value, sizeof m->value, "%.*s", (int)value_len, value);
}

/* "x.h" or <x.h> that NAME stands for: the request's -D first, then the last #define seen. */
static const char *macro_value(const scan *sc, const kj__include_config *cfg, const char *name, size_t len) {
    for (size_t i = 0; i < cfg->define_count; i++)
        if (strlen(cfg->defines[i].name) == len && strncmp(cfg->defines[i].name, name, len) == 0)
            return cfg->defines[i].value;
    for (size_t i = sc->macro_count; i-- > 0;)
        if (strlen(sc->macros[i].name) == len && strncmp(sc->macros[i].name, name, len) == 0) return sc->macros[i].value;
    return NULL;
}

typedef struct edit {
    size_t start, end;   /* the bytes replaced: the header name with its delimiters, or NAME */
    size_t header;       /* by "canonical name" of this header */
} edit;

static const char *skip_blank(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* A header name with its delimiters at p ("x.h" or <x.h>): its length, 0 when there is none. */
static size_t header_name(const char *p, const char *end) {
    char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
    if (!close) return 0;
    const char *q = memchr(p + 1, close, (size_t)(end - p - 1));
    return q && q > p + 1 ? (size_t)(q - p) + 1 : 0;
}

static kj_status resolve_one(kj__source *src, const kj__include_config *cfg, const char *includer,
                             const char *includer_dir, const char *spelled, size_t len, size_t at, size_t until,
                             edit **edits, size_t *nedits) {
    char name[PATH_MAX];
    if (len - 2 >= sizeof name) return KJ_OK;
    snprintf(name, sizeof name, "%.*s", (int)(len - 2), spelled + 1);
    found f;
    kj_status s = lookup(cfg, includer, includer_dir, name, spelled[0] == '<', &f, NULL);
    if (s == KJ_OK && f.kind == FOUND_NONE) { /* the message's list of folders, only now */
        kj__buf looked = {0};
        s = lookup(cfg, includer, includer_dir, name, spelled[0] == '<', &f, &looked);
        kj__buf_printf(&src->unresolved, "  %.*s in %s: kernjit looked in %s\n", (int)len, spelled, includer,
                       looked.data ? looked.data : "(no folder)");
        kj__buf_free(&looked);
    }
    if (s == KJ_OK && f.kind == FOUND_TOOLKIT) src->toolkit = 1;
    if (s == KJ_OK && (f.kind == FOUND_FILE || f.kind == FOUND_EMBEDDED)) {
        size_t index;
        s = header_for(src, &f, includer, &index);
        edit *grown = s == KJ_OK ? realloc(*edits, (*nedits + 1) * sizeof *grown) : NULL;
        if (s == KJ_OK && !grown) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        if (s == KJ_OK) {
            *edits = grown;
            (*edits)[(*nedits)++] = (edit){at, until, index};
        }
    }
    found_clear(&f);
    return s;
}

/* The include lines of one text: resolved, and the edits that rewrite them. */
static kj_status scan_text(kj__source *src, const kj__include_config *cfg, scan *sc, const char *includer,
                           const char *includer_dir, const char *text, size_t len, edit **edits, size_t *nedits) {
    char *b = kj__lex_blank(text, len, 0);
    if (!b) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj_status s = KJ_OK;
    for (size_t i = 0; i < len && s == KJ_OK;) {
        const char *line = b + i, *end = memchr(line, '\n', len - i);
        if (!end) end = b + len;
        const char *p = skip_blank(line, end);
        if (p < end && *p == '#') {
            p = skip_blank(p + 1, end);
            if (end - p > 7 && strncmp(p, "include", 7) == 0 && !isalnum((unsigned char)p[7])) {
                p = skip_blank(p + 7, end);
                size_t n = header_name(p, end);
                if (n) {
                    s = resolve_one(src, cfg, includer, includer_dir, p, n, (size_t)(p - b), (size_t)(p - b) + n,
                                    edits, nedits);
                } else if (p < end && (isalpha((unsigned char)*p) || *p == '_')) {
                    size_t m = 0;
                    while (p + m < end && (isalnum((unsigned char)p[m]) || p[m] == '_')) m++;
                    const char *v = macro_value(sc, cfg, p, m);
                    if (v && header_name(v, v + strlen(v)) == strlen(v)) {
                        s = resolve_one(src, cfg, includer, includer_dir, v, strlen(v), (size_t)(p - b),
                                        (size_t)(p - b) + m, edits, nedits);
                    } else {
                        /* NVRTC may still find it in the toolkit; a user file it cannot find (it sees none) */
                        src->toolkit = 1;
                        kj__buf_printf(&src->unresolved, "  #include %.*s in %s: kernjit follows #include NAME only "
                                       "when NAME is #defined as \"file\" or <file> (in the sources or with -D)\n",
                                       (int)m, p, includer);
                    }
                }
            } else if (end - p > 6 && strncmp(p, "define", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
                const char *name = skip_blank(p + 6, end);
                size_t m = 0;
                while (name + m < end && (isalnum((unsigned char)name[m]) || name[m] == '_')) m++;
                const char *v = skip_blank(name + m, end);
                size_t n = m ? header_name(v, end) : 0;
                if (n && skip_blank(v + n, end) == end) remember_macro(sc, name, m, v, n);
            }
        }
        i = (size_t)(end - b) + 1;
    }
    free(b);
    return s;
}

static int by_start(const void *a, const void *b) {
    const edit *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Applies the edits to *text: each spelled name becomes "canonical". */
static kj_status rewrite(const kj__source *src, char **text, size_t *len, edit *edits, size_t nedits) {
    if (!nedits) return KJ_OK;
    qsort(edits, nedits, sizeof *edits, by_start);
    kj__buf out = {0};
    size_t at = 0;
    for (size_t i = 0; i < nedits; i++) {
        kj__buf_append(&out, *text + at, edits[i].start - at);
        kj__buf_puts(&out, "\"");
        kj__buf_puts(&out, src->headers[edits[i].header].name);
        kj__buf_puts(&out, "\"");
        at = edits[i].end;
    }
    kj__buf_append(&out, *text + at, *len - at);
    if (!out.data) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    free(*text);
    *text = out.data;
    *len = out.len;
    return KJ_OK;
}

kj_status kj__includes_resolve(kj__source *src, const kj__include_config *cfg) {
    kj__include_config none = {0};
    if (!cfg) cfg = &none;
    scan sc = {0};
    kj_status s = KJ_OK;
    /* index 0 is the source itself, then each header as it is found (the list grows as we go) */
    for (size_t item = 0; item <= src->header_count && s == KJ_OK; item++) {
        int is_src = item == 0;
        const kj__header *h = is_src ? NULL : &src->headers[item - 1];
        const char *includer = is_src ? src->origin : h->path ? h->path : h->name;
        const char *dir = is_src ? (src->root ? src->root : src->dir) : h->dir;
        edit *edits = NULL;
        size_t nedits = 0;
        s = scan_text(src, cfg, &sc, includer, dir, is_src ? src->text : h->text, is_src ? src->len : h->len, &edits,
                      &nedits);
        /* the headers found meanwhile may have moved the array: the header is taken again */
        kj__header *now = is_src ? NULL : &src->headers[item - 1];
        if (s == KJ_OK) s = is_src ? rewrite(src, &src->text, &src->len, edits, nedits)
                                   : rewrite(src, &now->text, &now->len, edits, nedits);
        free(edits);
    }
    free(sc.macros);
    return s;
}
