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

/* Where a lookup found a file, in search order: #include_next and __has_include_next go on past the
 * folder the including header was found in. */
#define AT_BESIDE 0L              /* beside the includer, an absolute path, a pre-include */
#define AT_DIRS 1L                /* + i: the i-th include folder (-I) */
#define AT_SEARCH_PATH (1L << 20) /* + j: the j-th KERNJIT_PATH folder */
#define AT_EMBEDDED (2L << 20)
#define AT_TOOLKIT (3L << 20) /* + k: the toolkit's k-th include folder */

typedef struct found {
    found_kind kind;
    long at;        /* where (AT_*) */
    char *real;     /* FOUND_FILE: the real path (malloc'd) */
    int fd;         /* FOUND_FILE: the file, open to be read (-1 once closed) */
    struct stat st; /* FOUND_FILE: its fstat */
    const kj__embedded_file *embedded;
    char *toolkit_name; /* FOUND_TOOLKIT: the name NVRTC finds it by in the toolkit's folders */
} found;

/* The file whose includes are resolved. */
typedef struct includer {
    const char *name; /* for messages */
    const char *dir;  /* where its quoted includes look first; NULL: nowhere */
    int embedded;     /* a built-in file: its quoted includes are the built-in headers first */
    long at;          /* where it was found (AT_*); -1 for the source itself, where the _next forms are
                          the plain ones (as in GCC and NVRTC) */
} includer;

static void found_clear(found *f) {
    free(f->real);
    free(f->toolkit_name);
    if (f->kind == FOUND_FILE && f->fd >= 0) close(f->fd);
    memset(f, 0, sizeof *f);
}

/* Whether dir/name (name alone when dir is NULL) is a file to read: then *hit, with f's path, fd and
 * fstat. Not there, or a folder: no hit (C goes on looking). A special file, or one there that cannot
 * be opened: a failure naming it. A hit costs open, fstat and readlink, not stat and realpath's
 * readlink for every component (a new process's disk hit reads and hashes every header). */
static kj_status probe(const char *dir, const char *name, const char *who, found *f, int *hit) {
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
        return KJ_FAIL(KJ_ERR_SOURCE, "cannot open '%s' (included by %s): %s", path, who, kj__strerror(err));
    }
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return KJ_OK;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return KJ_FAIL(KJ_ERR_SOURCE, "'%s' (included by %s) is a special file, not a regular file", path, who);
    }
    char *real = kj__real_path_fd(fd, path);
    if (!real) {
        int err = errno;
        close(fd);
        return KJ_FAIL(KJ_ERR_SOURCE, "cannot open '%s' (included by %s): %s", path, who, strerror(err));
    }
    *f = (found){.kind = FOUND_FILE, .real = real, .fd = fd, .st = st};
    *hit = 1;
    return KJ_OK;
}

/* A file found at `at` is the toolkit's when its real path lies in the toolkit's include folders
 * (given again with -I, say): then NVRTC reads it, by the name it has there, so that one file has
 * one name and its include guards hold. Otherwise a user file. */
static kj_status file_found(found *f, long at) {
    f->at = at;
    char *name = kj__toolkit_name(f->real);
    if (!name) return errno == ENOMEM ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
    found_clear(f);
    *f = (found){.kind = FOUND_TOOLKIT, .at = at, .fd = -1, .toolkit_name = name};
    return KJ_OK;
}

/* Adds a folder tried to the message's list, when one is wanted (a lookup that found nothing). */
static void tried(kj__buf *looked, const char *where) {
    if (looked) kj__buf_printf(looked, "%s%s", looked->len ? ", " : "", where);
}

/* Whether a toolkit folder has the header (NVRTC reads it: kernjit only needs to know it is there). */
static int in_toolkit(const char *dir, const char *name) {
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static kj_status embedded_found(found *f, const kj__embedded_file *e) {
    f->kind = FOUND_EMBEDDED;
    f->embedded = e;
    f->at = AT_EMBEDDED;
    return KJ_OK;
}

/* Where `name` (quoted when !angle) included by inc resolves, by includes.h's rules; with next
 * (#include_next), only past the folder inc was found in. `looked` (NULL: not wanted) gets the
 * folders tried, for the message of an include found nowhere. */
static kj_status lookup(const kj__include_config *cfg, const includer *inc, const char *name, int angle, int next,
                        found *f, kj__buf *looked) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    int hit = 0;
    long after = next && inc->at >= 0 ? inc->at : -1;
    const kj__embedded_file *e;
    if (name[0] == '/') {
        tried(looked, "(an absolute path)");
        KJ_FORWARD(probe(NULL, name, inc->name, f, &hit));
        return hit ? file_found(f, AT_BESIDE) : KJ_OK;
    }
    /* a built-in file's own headers: no folder of the user's can replace them */
    if (!angle && inc->embedded && after < AT_EMBEDDED && (e = kj__embedded_find(name))) return embedded_found(f, e);
    if (!angle && inc->dir && after < 0) {
        tried(looked, inc->dir);
        KJ_FORWARD(probe(inc->dir, name, inc->name, f, &hit));
        if (hit) return file_found(f, AT_BESIDE);
    }
    for (size_t i = 0; i < cfg->dir_count; i++) {
        if (AT_DIRS + (long)i <= after) continue;
        tried(looked, cfg->dirs[i]);
        KJ_FORWARD(probe(cfg->dirs[i], name, inc->name, f, &hit));
        if (hit) return file_found(f, AT_DIRS + (long)i);
    }
    if (!angle) {
        long j = 0;
        for (const char *p = cfg->search_path; p && *p; j++) {
            size_t n = strcspn(p, ":");
            if (n && n < PATH_MAX && AT_SEARCH_PATH + j > after) {
                char dir[PATH_MAX];
                snprintf(dir, sizeof dir, "%.*s", (int)n, p);
                tried(looked, dir);
                KJ_FORWARD(probe(dir, name, inc->name, f, &hit));
                if (hit) return file_found(f, AT_SEARCH_PATH + j);
            }
            p += n + (p[n] == ':');
        }
        if (AT_EMBEDDED > after && (e = kj__embedded_find(name))) return embedded_found(f, e);
        tried(looked, "the built-in headers");
    }
    const char *tk[2];
    size_t ntk;
    kj__toolkit_include_dirs(tk, &ntk);
    for (size_t i = 0; i < ntk; i++) {
        if (AT_TOOLKIT + (long)i <= after) continue;
        tried(looked, tk[i]);
        if (in_toolkit(tk[i], name)) {
            if (!(f->toolkit_name = kj__strdup(name))) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            f->kind = FOUND_TOOLKIT;
            f->at = AT_TOOLKIT + (long)i;
            return KJ_OK;
        }
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

/* The name of a built-in header: KJ__VROOT/name, or, when a user file has that name already, a name
 * no user file can have (no real path holds a "." folder). */
static char *embedded_vname(const kj__source *src, const char *name) {
    char *v = vname(name);
    if (v && name_taken(src, v)) {
        free(v);
        v = kj__asprintf("%s/./built-in/%s", KJ__VROOT, name);
    }
    return v;
}

/* The header for a resolved file: the one already there, or a new one read now. */
static kj_status header_for(kj__source *src, const found *f, size_t *index) {
    for (size_t i = 0; i < src->header_count; i++) {
        const kj__header *h = &src->headers[i];
        if (f->kind == FOUND_FILE ? h->path && strcmp(h->path, f->real) == 0 : h->embedded == f->embedded) {
            *index = i;
            return KJ_OK;
        }
    }
    if (src->header_count == KJ_MAX_HEADERS)
        return KJ_FAIL(KJ_ERR_SOURCE, "'%s' reaches more than %d headers", src->origin, KJ_MAX_HEADERS);
    if (src->header_count == src->header_cap) {
        size_t cap = src->header_cap ? 2 * src->header_cap : 8;
        kj__header *grown = realloc(src->headers, cap * sizeof *grown);
        if (!grown) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        src->headers = grown;
        src->header_cap = cap;
    }
    kj__header h = {.at = f->at};
    if (f->kind == FOUND_EMBEDDED) {
        h.name = embedded_vname(src, f->embedded->name);
        h.text = kj__strndup(f->embedded->data, f->embedded->len);
        h.len = f->embedded->len;
        h.embedded = f->embedded;
        if (!h.name || !h.text) goto oom;
    } else {
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
    KJ_RETURN_IF(stat(path, &st) != 0, KJ_ERR_USAGE,
                 "pre-include '%s': %s (a path from the working directory, or "
                 "absolute)",
                 path, strerror(errno));
    KJ_RETURN_IF(!S_ISREG(st.st_mode), KJ_ERR_SOURCE, "pre-include '%s' is %s, not a regular file", path,
                 S_ISDIR(st.st_mode) ? "a folder" : "a special file");
    found f;
    int hit;
    char pre[PATH_MAX + 16];
    snprintf(pre, sizeof pre, "--pre-include %s", path);
    KJ_FORWARD(probe(NULL, path, pre, &f, &hit));
    KJ_RETURN_IF(!hit, KJ_ERR_SOURCE, "cannot open pre-include '%s'", path);
    size_t i;
    kj_status s = header_for(src, &f, &i);
    found_clear(&f);
    KJ_FORWARD(s);
    *name = src->headers[i].name;
    return KJ_OK;
}

/* ---- scanning and rewriting -------------------------------------------------------------------- */

typedef struct macro {
    char name[65];
    char *value; /* "x.h" or <x.h>, with its delimiters; NULL: defined as something else */
} macro;

/* A macro that stands for __has_include (or __has_include_next) of one of its arguments, as
 * `#define HAS_INCLUDE(x) __has_include(x)` or `#define HAS_INCLUDE __has_include`: a call of it is
 * resolved as __has_include is. */
typedef struct wrapper {
    char name[65];
    size_t param; /* the argument that is the operand */
    int next;
} wrapper;

typedef struct edit {
    size_t start, end; /* the bytes replaced */
    char *with;        /* by these */
} edit;

/* A file being scanned. */
typedef struct frame {
    size_t item; /* 0: the source, else its header item - 1 */
    includer inc;
    char *text;     /* its text, comments blanked: edits are offsets into it */
    size_t len, at; /* its length; where its next line starts */
    edit *edits;
    size_t edit_count;
} frame;

/* The files are scanned in the preprocessor's order, each header where it is first found, so that
 * what a header #defines (a header name, a wrapper) is known in the lines after its #include. */
typedef struct scan {
    kj__source *src;
    const kj__include_config *cfg;
    macro *macros;
    size_t macro_count, macro_cap;
    wrapper *wrappers;
    size_t wrapper_count, wrapper_cap;
    frame *frames; /* the files being scanned, the innermost last */
    size_t depth, frame_cap;
    size_t *found; /* the headers the line being scanned found first: scanned next */
    size_t found_count, found_cap;
} scan;

static frame *top(scan *sc) { return &sc->frames[sc->depth - 1]; }

/* The definition a directive line belongs to, when it is a #define: its name and parameters. */
typedef struct definition {
    const char *name;
    size_t name_len;
    const char *params[16];
    size_t param_lens[16];
    size_t param_count;
    int function_like;
} definition;

/* Remembers that NAME is #defined: as the header name value (value_len bytes), or as something else
 * (value NULL). */
static kj_status remember_macro(scan *sc, const char *name, size_t name_len, const char *value, size_t value_len) {
    if (name_len >= sizeof sc->macros[0].name) return KJ_OK; /* no such name is used: C's names are shorter */
    if (sc->macro_count == sc->macro_cap) {
        size_t cap = sc->macro_cap ? 2 * sc->macro_cap : 16;
        macro *grown = realloc(sc->macros, cap * sizeof *grown);
        if (!grown) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        sc->macros = grown;
        sc->macro_cap = cap;
    }
    macro *m = &sc->macros[sc->macro_count];
    snprintf(m->name, sizeof m->name, "%.*s", (int)name_len, name);
    if (value && !(m->value = kj__strndup(value, value_len))) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (!value) m->value = NULL;
    sc->macro_count++;
    return KJ_OK;
}

static kj_status remember_wrapper(scan *sc, const char *name, size_t len, size_t param, int next) {
    if (len >= sizeof sc->wrappers[0].name) return KJ_OK; /* no such name is called: C's names are shorter */
    if (sc->wrapper_count == sc->wrapper_cap) {
        size_t cap = sc->wrapper_cap ? 2 * sc->wrapper_cap : 8;
        wrapper *grown = realloc(sc->wrappers, cap * sizeof *grown);
        if (!grown) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        sc->wrappers = grown;
        sc->wrapper_cap = cap;
    }
    wrapper *w = &sc->wrappers[sc->wrapper_count++];
    snprintf(w->name, sizeof w->name, "%.*s", (int)len, name);
    w->param = param;
    w->next = next;
    return KJ_OK;
}

static const wrapper *find_wrapper(const scan *sc, const char *name, size_t len) {
    for (size_t i = sc->wrapper_count; i-- > 0;)
        if (strlen(sc->wrappers[i].name) == len && strncmp(sc->wrappers[i].name, name, len) == 0)
            return &sc->wrappers[i];
    return NULL;
}

/* What NAME stands for: the request's -D first, then the last #define seen; NULL when it is defined
 * as no header name (*defined then says whether it is defined at all). */
static const char *macro_value(const scan *sc, const char *name, size_t len, int *defined) {
    const kj__include_config *cfg = sc->cfg;
    *defined = 1;
    for (size_t i = 0; i < cfg->define_count; i++)
        if (strlen(cfg->defines[i].name) == len && strncmp(cfg->defines[i].name, name, len) == 0)
            return cfg->defines[i].value;
    for (size_t i = sc->macro_count; i-- > 0;)
        if (strlen(sc->macros[i].name) == len && strncmp(sc->macros[i].name, name, len) == 0)
            return sc->macros[i].value;
    *defined = 0;
    return NULL;
}

/* Records that the bytes [start, end) of the text become `with` (taken; NULL: out of memory). */
static kj_status add_edit(scan *sc, const char *start, const char *end, char *with) {
    frame *fr = top(sc);
    edit *grown = with ? realloc(fr->edits, (fr->edit_count + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(with);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    fr->edits = grown;
    fr->edits[fr->edit_count++] = (edit){(size_t)(start - fr->text), (size_t)(end - fr->text), with};
    return KJ_OK;
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static size_t ident_len(const char *p, const char *end) {
    if (p >= end || !(isalpha((unsigned char)*p) || *p == '_')) return 0;
    size_t n = 0;
    while (p + n < end && ident_char(p[n])) n++;
    return n;
}

static int word_is(const char *p, size_t n, const char *word) { return strlen(word) == n && strncmp(p, word, n) == 0; }

/* Past blanks and line continuations. */
static const char *skip_blank(const char *p, const char *end) {
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p + 1 < end && p[0] == '\\' && p[1] == '\n') p += 2;
        else if (p + 2 < end && p[0] == '\\' && p[1] == '\r' && p[2] == '\n') p += 3;
        else return p;
    }
}

/* The end of the logical line at p: its new line, past continued ones. */
static const char *line_end(const char *p, const char *end) {
    for (const char *q = p; q < end; q++)
        if (*q == '\n' && !(q > p && (q[-1] == '\\' || (q[-1] == '\r' && q - 1 > p && q[-2] == '\\')))) return q;
    return end;
}

/* Past a string or character literal starting at p. */
static const char *skip_literal(const char *p, const char *end) {
    char quote = *p;
    for (p++; p < end && *p != quote && *p != '\n'; p++)
        if (*p == '\\' && p + 1 < end) p++;
    return p < end ? p + 1 : end;
}

/* A header name with its delimiters at p ("x.h" or <x.h>): its length, 0 when there is none. */
static size_t header_name(const char *p, const char *end) {
    if (p >= end) return 0;
    char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
    if (!close) return 0;
    const char *q = memchr(p + 1, close, (size_t)(end - p - 1));
    return q && q > p + 1 ? (size_t)(q - p) + 1 : 0;
}

/* An operand NVRTC cannot find: no handed header has this name (no real path has a "." folder) and
 * nothing under KJ__VROOT exists, so __has_include of it is false, whatever folders NVRTC has. */
static char *absent_name(const char *name) {
    return strpbrk(name, "\"\\") ? kj__asprintf("\"%s/./absent\"", KJ__VROOT)
                                 : kj__asprintf("\"%s/./absent/%s\"", KJ__VROOT, name);
}

/* Resolves one operand, spelled "x.h" or <x.h> (len bytes with its delimiters), of an #include
 * (has = 0) or a __has_include (has = 1) in the text at [at, until), and rewrites it to what was
 * found: a user or built-in header to its canonical name (the header joins the source), a toolkit
 * header to <its name there> (NVRTC finds it in the toolkit's folders, which then join the key), and,
 * for __has_include, nothing to a name that cannot exist. An #include found nowhere stays as written
 * and is listed in src->unresolved. next: the _next form, whose "_next" at next_at (NULL: none) goes
 * once the operand is resolved, for the plain form of the name found. */
static kj_status resolve_operand(scan *sc, const includer *inc, const char *spelled, size_t len, int next, int has,
                                 const char *at, const char *until, const char *next_at) {
    kj__source *src = sc->src;
    char name[PATH_MAX];
    found f = {.fd = -1};
    kj_status s = KJ_OK;
    if (len - 2 < sizeof name) {
        snprintf(name, sizeof name, "%.*s", (int)(len - 2), spelled + 1);
        s = lookup(sc->cfg, inc, name, spelled[0] == '<', next, &f, NULL);
    } else if (!has) {
        return KJ_OK; /* no file has such a name: NVRTC says it cannot open it */
    } else {
        snprintf(name, sizeof name, "(a name of %zu bytes)", len);
    }
    if (s == KJ_OK && f.kind == FOUND_NONE && !has) { /* the message's list of folders, only now */
        kj__buf looked = {0};
        s = lookup(sc->cfg, inc, name, spelled[0] == '<', next, &f, &looked);
        kj__buf_printf(&src->unresolved, "  %.*s in %s: kernjit looked in %s\n", (int)len, spelled, inc->name,
                       looked.data ? looked.data : "(no folder)");
        kj__buf_free(&looked);
    }
    char *with = NULL; /* the operand's new spelling (NULL: as written) */
    int resolved = s == KJ_OK && f.kind != FOUND_NONE;
    if (s == KJ_OK && f.kind == FOUND_TOOLKIT) {
        src->toolkit = 1;
        with = kj__asprintf("<%s>", f.toolkit_name);
        if (!with) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        else if (spelled == at && strlen(with) == len && strncmp(with, spelled, len) == 0) free(with), with = NULL;
    } else if (s == KJ_OK && (f.kind == FOUND_FILE || f.kind == FOUND_EMBEDDED)) {
        size_t index, before = src->header_count;
        s = header_for(src, &f, &index);
        if (s == KJ_OK && src->header_count > before) {
            if (sc->found_count == sc->found_cap) {
                size_t cap = sc->found_cap ? 2 * sc->found_cap : 8;
                size_t *grown = realloc(sc->found, cap * sizeof *grown);
                if (grown) sc->found = grown, sc->found_cap = cap;
            }
            if (sc->found_count < sc->found_cap) sc->found[sc->found_count++] = index;
            else s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        }
        if (s == KJ_OK && !(with = kj__asprintf("\"%s\"", src->headers[index].name)))
            s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    } else if (s == KJ_OK && has) {
        resolved = 1;
        if (!(with = absent_name(name))) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (s == KJ_OK && with) s = add_edit(sc, at, until, with); /* add_edit takes it */
    if (s == KJ_OK && resolved && next_at) s = add_edit(sc, next_at, next_at + 5, kj__strdup(""));
    found_clear(&f);
    return s;
}

/* `#include X` or `#include_next X`, the directive's word at p (m bytes), the line ending at end. */
static kj_status include_line(scan *sc, const includer *inc, const char *p, size_t m, const char *end) {
    int next = m == 12;
    const char *next_at = next ? p + 7 : NULL;
    const char *q = skip_blank(p + m, end);
    size_t n = header_name(q, end);
    if (n) return resolve_operand(sc, inc, q, n, next, 0, q, q + n, next_at);
    size_t k = ident_len(q, end);
    if (!k) return KJ_OK; /* malformed: NVRTC says so */
    int defined;
    const char *v = macro_value(sc, q, k, &defined);
    if (v && header_name(v, v + strlen(v)) == strlen(v))
        return resolve_operand(sc, inc, v, strlen(v), next, 0, q, q + k, next_at);
    /* NVRTC may still find it in the toolkit; a user file it cannot find (it sees none) */
    sc->src->toolkit = 1;
    kj__buf_printf(&sc->src->unresolved,
                   "  #include %.*s in %s: kernjit follows #include NAME only when NAME is "
                   "#defined as \"file\" or <file> (in the sources or with -D)\n",
                   (int)k, q, inc->name);
    return KJ_OK;
}

/* The index-th argument of the call whose '(' is at open, blanks trimmed, and its ')'. 0 when there
 * is no such argument or no ')' on the line. */
static int argument(const char *open, const char *end, size_t index, const char **arg, const char **arg_end,
                    const char **close) {
    const char *start = open + 1;
    size_t k = 0;
    int depth = 0;
    for (const char *p = open + 1; p < end;) {
        if (*p == '"' || *p == '\'') {
            p = skip_literal(p, end);
            continue;
        }
        if (*p == '(') depth++;
        if ((*p == ',' || *p == ')') && depth == 0) {
            if (k == index) *arg = start, *arg_end = p;
            if (*p == ')') {
                *close = p;
                if (k < index) return 0;
                *arg = skip_blank(*arg, *arg_end);
                while (*arg_end > *arg && ((*arg_end)[-1] == ' ' || (*arg_end)[-1] == '\t')) (*arg_end)--;
                return 1;
            }
            k++;
            start = p + 1;
        } else if (*p == ')') {
            depth--;
        }
        p++;
    }
    return 0;
}

/* The operand [a, a_end) of a __has_include (or of a wrapper of it, `form`, form_len bytes, as
 * written): a header name, or a NAME #defined as one, is resolved; a parameter of the macro being
 * defined makes that macro a wrapper; anything else is refused, since NVRTC, which sees no user
 * folder, would answer false for a file kernjit would have found. */
static kj_status has_operand(scan *sc, const includer *inc, const definition *def, const char *form, size_t form_len,
                             int next, const char *next_at, const char *a, const char *a_end) {
    size_t n = header_name(a, a_end);
    if (n && a + n == a_end) return resolve_operand(sc, inc, a, n, next, 1, a, a_end, next_at);
    size_t k = ident_len(a, a_end);
    if (k && a + k == a_end) {
        for (size_t i = 0; def && i < def->param_count; i++)
            if (def->param_lens[i] == k && strncmp(def->params[i], a, k) == 0)
                return remember_wrapper(sc, def->name, def->name_len, i, next);
        int defined;
        const char *v = macro_value(sc, a, k, &defined);
        if (v && header_name(v, v + strlen(v)) == strlen(v))
            return resolve_operand(sc, inc, v, strlen(v), next, 1, a, a_end, next_at);
        if (!defined) { /* NVRTC says "expected a file name" where it is evaluated; a toolkit header may define it */
            sc->src->toolkit = 1;
            return KJ_OK;
        }
        return KJ_FAIL(KJ_ERR_SOURCE,
                       "%.*s(%.*s) in %s: kernjit follows __has_include(NAME) only when NAME is "
                       "#defined as \"file\" or <file> (in the sources or with -D)",
                       (int)form_len, form, (int)k, a, inc->name);
    }
    return KJ_FAIL(KJ_ERR_SOURCE,
                   "%.*s(%.*s) in %s: kernjit reads the operand of __has_include only as \"file\", "
                   "<file> or a NAME #defined as one",
                   (int)form_len, form, (int)(a_end - a > 80 ? 80 : a_end - a), a, inc->name);
}

/* Every __has_include, __has_include_next and call of a wrapper of them in [p, end) (an #if or #elif
 * line, or the body of a #define). */
static kj_status has_include_calls(scan *sc, const includer *inc, const definition *def, const char *p,
                                   const char *end) {
    while (p < end) {
        if (*p == '"' || *p == '\'') {
            p = skip_literal(p, end);
            continue;
        }
        size_t m = ident_len(p, end);
        if (!m || (p > top(sc)->text && ident_char(p[-1]))) {
            p += m ? m : 1;
            continue;
        }
        int direct = word_is(p, m, "__has_include") || word_is(p, m, "__has_include_next");
        const wrapper *w = direct ? NULL : find_wrapper(sc, p, m);
        const char *open = skip_blank(p + m, end);
        if ((!direct && !w) || open >= end || *open != '(') { /* defined(__has_include), or another name */
            p += m;
            continue;
        }
        int next = direct ? m == 18 : w->next;
        const char *a = NULL, *a_end = NULL, *close = NULL;
        if (!argument(open, end, direct ? 0 : w->param, &a, &a_end, &close))
            return KJ_FAIL(KJ_ERR_SOURCE, "%.*s in %s: kernjit reads %s only with its operand and ')' on the line",
                           (int)m, p, inc->name, direct ? "__has_include" : "a call of it");
        KJ_FORWARD(has_operand(sc, inc, def, p, m, next, direct && next ? p + 13 : NULL, a, a_end));
        p = close + 1;
    }
    return KJ_OK;
}

/* `#define NAME ...` (p past "define"): remembers NAME as a header name (for #include NAME) or as a
 * wrapper of __has_include, and resolves the __has_include calls of its body. */
static kj_status define_line(scan *sc, const includer *inc, const char *p, const char *end) {
    definition def = {0};
    def.name = skip_blank(p, end);
    def.name_len = ident_len(def.name, end);
    if (!def.name_len) return KJ_OK;
    const char *body = def.name + def.name_len;
    if (body < end && *body == '(') { /* function-like: its parameters */
        def.function_like = 1;
        const char *close = memchr(body, ')', (size_t)(end - body));
        if (!close) return KJ_OK; /* malformed: NVRTC says so */
        for (const char *q = body + 1; q < close;) {
            q = skip_blank(q, close);
            size_t k = ident_len(q, close);
            if (k && def.param_count < 16) def.params[def.param_count] = q, def.param_lens[def.param_count++] = k;
            const char *comma = memchr(q, ',', (size_t)(close - q));
            q = comma ? comma + 1 : close;
        }
        body = close + 1;
    }
    body = skip_blank(body, end);
    size_t n = def.function_like ? 0 : header_name(body, end);
    if (n && skip_blank(body + n, end) != end) n = 0;
    KJ_FORWARD(remember_macro(sc, def.name, def.name_len, n ? body : NULL, n));
    size_t k = ident_len(body, end);
    if (!def.function_like && k && skip_blank(body + k, end) == end &&
        (word_is(body, k, "__has_include") || word_is(body, k, "__has_include_next")))
        return remember_wrapper(sc, def.name, def.name_len, 0, k == 18);
    return has_include_calls(sc, inc, &def, body, end);
}

/* One directive line of the innermost file: #include lines resolved, #defines remembered,
 * __has_include resolved; the edits that rewrite them in its frame. */
static kj_status scan_line(scan *sc, const includer *inc, const char *line, const char *end) {
    const char *p = skip_blank(line, end);
    if (p >= end || *p != '#') return KJ_OK;
    p = skip_blank(p + 1, end);
    size_t m = ident_len(p, end);
    if (word_is(p, m, "include") || word_is(p, m, "include_next")) return include_line(sc, inc, p, m, end);
    if (word_is(p, m, "define")) return define_line(sc, inc, p + m, end);
    if (word_is(p, m, "if") || word_is(p, m, "elif")) return has_include_calls(sc, inc, NULL, p + m, end);
    return KJ_OK;
}

/* Starts scanning item (0: the source, else header item - 1). */
static kj_status frame_push(scan *sc, size_t item) {
    if (sc->depth == sc->frame_cap) {
        size_t cap = sc->frame_cap ? 2 * sc->frame_cap : 16;
        frame *grown = realloc(sc->frames, cap * sizeof *grown);
        if (!grown) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        sc->frames = grown;
        sc->frame_cap = cap;
    }
    kj__source *src = sc->src;
    const kj__header *h = item ? &src->headers[item - 1] : NULL;
    frame fr = {.item = item, .len = h ? h->len : src->len};
    fr.inc = h ? (includer){h->path ? h->path : h->name, h->dir, h->embedded != NULL, h->at}
               : (includer){src->origin, src->root ? src->root : src->dir, src->embedded, -1};
    if (!(fr.text = kj__lex_blank(h ? h->text : src->text, fr.len, 0)))
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    sc->frames[sc->depth++] = fr;
    return KJ_OK;
}

static int by_start(const void *a, const void *b) {
    const edit *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Applies the frame's edits to its file's text. */
static kj_status rewrite(const frame *fr, char **text, size_t *len) {
    if (!fr->edit_count) return KJ_OK;
    qsort(fr->edits, fr->edit_count, sizeof *fr->edits, by_start);
    kj__buf out = {0};
    size_t at = 0;
    for (size_t i = 0; i < fr->edit_count; i++) {
        kj__buf_append(&out, *text + at, fr->edits[i].start - at);
        kj__buf_puts(&out, fr->edits[i].with);
        at = fr->edits[i].end;
    }
    kj__buf_append(&out, *text + at, *len - at);
    if (!out.data) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    free(*text);
    *text = out.data;
    *len = out.len;
    return KJ_OK;
}

/* Ends the innermost file: its text rewritten (when all went well). A file left as it was keeps its
 * blanked copy, with `#if 0` blanked too, as the code the scans after this one read (unit.h). */
static kj_status frame_pop(scan *sc, kj_status s) {
    frame *fr = top(sc);
    if (s == KJ_OK) {
        kj__header *h = fr->item ? &sc->src->headers[fr->item - 1] : NULL;
        char **code = h ? &h->code : &sc->src->code;
        s = h ? rewrite(fr, &h->text, &h->len) : rewrite(fr, &sc->src->text, &sc->src->len);
        if (s == KJ_OK && !fr->edit_count && !*code) {
            kj__lex_blank_if0(fr->text, fr->len);
            *code = fr->text;
            fr->text = NULL;
        } else if (fr->edit_count) { /* the text changed: a copy made before is not its code */
            free(*code);
            *code = NULL;
        }
    }
    for (size_t i = 0; i < fr->edit_count; i++) free(fr->edits[i].with);
    free(fr->edits);
    free(fr->text);
    sc->depth--;
    return s;
}

kj_status kj__includes_resolve(kj__source *src, const kj__include_config *cfg) {
    kj__include_config none = {0};
    scan sc = {.src = src, .cfg = cfg ? cfg : &none};
    /* CCCL's own wrapper, which a source may call without kernjit seeing its definition */
    kj_status s = remember_wrapper(&sc, "_CCCL_HAS_INCLUDE", 17, 0, 0);
    /* the source, and above it the headers there already (the pre-includes), the first on top */
    for (size_t item = src->header_count + 1; item-- > 0 && s == KJ_OK;) s = frame_push(&sc, item);
    while (sc.depth && s == KJ_OK) {
        frame *fr = top(&sc);
        if (fr->at >= fr->len) {
            s = frame_pop(&sc, s);
            continue;
        }
        const char *line = fr->text + fr->at, *end = line_end(line, fr->text + fr->len);
        fr->at = (size_t)(end - fr->text) + 1;
        sc.found_count = 0;
        s = scan_line(&sc, &fr->inc, line, end);
        /* the headers it found first, each before the rest of this file, in their order */
        for (size_t i = sc.found_count; i-- > 0 && s == KJ_OK;) s = frame_push(&sc, sc.found[i] + 1);
    }
    while (sc.depth) frame_pop(&sc, KJ_ERR_SOURCE);
    free(sc.frames);
    free(sc.found);
    for (size_t i = 0; i < sc.macro_count; i++) free(sc.macros[i].value);
    free(sc.macros);
    free(sc.wrappers);
    return s;
}
