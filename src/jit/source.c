#include "jit/source.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/util.h"
#include "jit/embedded.h"

/* ---- checks on names and text ---------------------------------------------------------------- */

static int is_path(const char *kernel) { return strchr(kernel, '/') || kj__ends_with(kernel, ".cu"); }

static kj_status check_name(const char *kernel) {
    size_t n = strlen(kernel);
    KJ_RETURN_IF(n == 0, KJ_ERR_USAGE,
                 "empty kernel name: give a built-in name (see `kernjit list`) or a path to a .cu file");
    KJ_RETURN_IF(n > KJ_MAX_NAME_LEN, KJ_ERR_USAGE, "kernel name of %zu characters: at most %d are allowed", n,
                 KJ_MAX_NAME_LEN);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)kernel[i];
        KJ_RETURN_IF(!isalnum(c) && c != '_' && c != '-', KJ_ERR_USAGE,
                     "kernel name '%.64s' has the character '%c': names use letters, digits, '_' and '-' "
                     "(or give a path to a .cu file)",
                     kernel, isprint(c) ? c : '?');
    }
    return KJ_OK;
}

/* A source must be text: rejects empty files and binaries before NVRTC produces a confusing log. */
static kj_status check_text(const char *origin, const char *text, size_t len) {
    KJ_RETURN_IF(len == 0, KJ_ERR_SOURCE, "'%s' is empty: a kernel source needs a __global__ function", origin);
    KJ_RETURN_IF(memchr(text, '\0', len) != NULL, KJ_ERR_SOURCE,
                 "'%s' is not text (it contains NUL bytes): a kernel source is CUDA C++ text", origin);
    return KJ_OK;
}

/* ...and must reach a kernel: a __global__ function in it or in a header it includes (a file that
 * only includes kernel files is a program too). Checked once the includes are resolved. */
int kj__source_has_kernel(const kj__source *src) {
    if (src->kind != KJ__UNIT_CU) return 1; /* compiled code: nvJitLink has the final word */
    if (strstr(src->text, "__global__")) return 1;
    for (size_t i = 0; i < src->header_count; i++)
        if (src->headers[i].path && strstr(src->headers[i].text, "__global__")) return 1;
    return 0;
}

static kj_status check_has_kernel(const kj__source *src) {
    if (kj__source_has_kernel(src)) return KJ_OK;
    return KJ_FAIL(KJ_ERR_SOURCE,
                   "'%s' is not a kernel file: it has no __global__ function, nor do the files it "
                   "includes",
                   src->origin);
}

/* ---- finding the source ---------------------------------------------------------------------- */

static kj_status find_on_search_path(const char *search_path, const char *name, char **path_out) {
    *path_out = NULL;
    if (!search_path) return KJ_OK;
    const char *p = search_path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n) {
            KJ_RETURN_IF(n >= PATH_MAX, KJ_ERR_USAGE, "a KERNJIT_PATH entry is %zu characters long: at most %d", n,
                         PATH_MAX - 1);
            char *dir = kj__strndup(p, n);
            if (!dir) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            struct stat st;
            if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
                kj_status s = KJ_FAIL(KJ_ERR_USAGE,
                                      "KERNJIT_PATH entry '%s' is not a folder: the search path lists folders "
                                      "that hold NAME.cu files",
                                      dir);
                free(dir);
                return s;
            }
            char *path = kj__asprintf("%s/%s.cu", dir, name);
            free(dir);
            if (!path) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            if (stat(path, &st) == 0) {
                *path_out = path;
                return KJ_OK;
            }
            /* there, but not to be opened (a dangling or looping link): say so, rather than that the
             * kernel is unknown */
            int err = errno;
            if (lstat(path, &st) == 0) {
                kj_status s = KJ_FAIL(KJ_ERR_SOURCE, "cannot open '%s': %s", path, strerror(err));
                free(path);
                return s;
            }
            free(path);
        }
        p += n + (colon ? 1 : 0);
    }
    return KJ_OK;
}

static kj_status unknown_kernel(const char *kernel) {
    kj__buf names = {0};
    for (size_t i = 0; kj_builtin_name(i); i++) {
        kj__buf_puts(&names, i ? ", " : "");
        kj__buf_puts(&names, kj_builtin_name(i));
    }
    kj_status s = KJ_FAIL(KJ_ERR_UNKNOWN_KERNEL,
                          "unknown kernel '%s': the built-in kernels are %s; or put %s.cu on KERNJIT_PATH, "
                          "or give a path to a .cu file",
                          kernel, names.data ? names.data : "(none)", kernel);
    kj__buf_free(&names);
    return s;
}

static char *base_name_without_cu(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    if (kj__ends_with(base, ".cu")) n -= 3;
    return kj__strndup(base, n);
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return kj__strdup(".");
    if (slash == path) return kj__strdup("/");
    return kj__strndup(path, (size_t)(slash - path));
}

kj_status kj__source_find(const char *search_path, const char *kernel, const char *source_text, kj__source **out) {
    kj__include_config cfg = {.search_path = search_path};
    return kj__source_find_with(&cfg, kernel, source_text, out);
}

static kj_status find(const kj__include_config *cfg, const char *kernel, const char *source_text, int need_kernel,
                      kj__source **out);

kj_status kj__source_find_with(const kj__include_config *cfg, const char *kernel, const char *source_text,
                               kj__source **out) {
    return find(cfg, kernel, source_text, 1, out);
}

/* A unit nvJitLink takes as it is: its bytes, named by the file. */
static kj_status find_link_input(const char *path, kj__unit_kind kind, kj__source **out) {
    KJ_RETURN_IF(strlen(path) >= PATH_MAX, KJ_ERR_USAGE, "source path of %zu characters: at most %d are allowed",
                 strlen(path), PATH_MAX - 1);
    kj__source *src = calloc(1, sizeof *src);
    if (!src) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    src->kind = kind;
    const char *slash = strrchr(path, '/');
    src->file = kj__strdup(slash ? slash + 1 : path);
    src->name = kj__strdup(src->file ? src->file : "");
    src->vfile = kj__strdup(src->file ? src->file : "");
    src->origin = kj__strdup(path);
    kj_status s = !src->file || !src->name || !src->vfile || !src->origin ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory")
                                                                          : KJ_OK;
    if (s == KJ_OK) s = kj__read_file(path, KJ_MAX_SOURCE_BYTES, KJ_ERR_SOURCE, &src->text, &src->len);
    if (s == KJ_OK && src->len == 0) s = KJ_FAIL(KJ_ERR_SOURCE, "'%s' is empty: nothing to link", path);
    if (s == KJ_OK && kind == KJ__UNIT_PTX && memchr(src->text, '\0', src->len))
        s = KJ_FAIL(KJ_ERR_SOURCE, "'%s' is not PTX (it contains NUL bytes): PTX is text", path);
    if (s == KJ_OK) *out = src;
    else kj__source_free(src);
    return s;
}

kj_status kj__source_find_unit(const kj__include_config *cfg, const char *path, kj__source **out) {
    KJ_RETURN_IF(!path, KJ_ERR_USAGE, "a source of the program is NULL: give paths to .cu files");
    if (kj__ends_with(path, ".ptx")) return find_link_input(path, KJ__UNIT_PTX, out);
    if (kj__ends_with(path, ".cubin")) return find_link_input(path, KJ__UNIT_CUBIN, out);
    if (kj__ends_with(path, ".ltoir")) return find_link_input(path, KJ__UNIT_LTOIR, out);
    KJ_RETURN_IF(!is_path(path), KJ_ERR_USAGE,
                 "source '%.100s' is not a path to a .cu file: the sources linked into a program are files (a "
                 "'/' or \".cu\" in the name)",
                 path);
    return find(cfg, path, NULL, 0, out);
}

static kj_status find(const kj__include_config *cfg, const char *kernel, const char *source_text, int need_kernel,
                      kj__source **out) {
    const char *search_path = cfg ? cfg->search_path : NULL;
    KJ_RETURN_IF(!kernel && !source_text, KJ_ERR_USAGE, "no kernel given: name a built-in kernel or a .cu file");
    if (kernel)
        KJ_RETURN_IF(strlen(kernel) >= PATH_MAX, KJ_ERR_USAGE, "kernel path of %zu characters: at most %d are allowed",
                     strlen(kernel), PATH_MAX - 1);
    kj__source *src = calloc(1, sizeof *src);
    if (!src) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj_status s = KJ_OK;
    char *path = NULL;

    if (source_text) {
        const char *label = kernel ? kernel : "source";
        src->name = base_name_without_cu(label);
        src->origin = kj__strdup(kernel ? kernel : "(in memory)");
        src->dir = kernel && strchr(kernel, '/') ? dir_of(kernel) : NULL;
        src->len = strlen(source_text);
        src->text = kj__strndup(source_text, src->len);
        if (!src->name || !src->origin || !src->text || (kernel && strchr(kernel, '/') && !src->dir)) {
            s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            goto done;
        }
    } else if (is_path(kernel)) {
        path = kj__strdup(kernel);
    } else {
        if ((s = check_name(kernel)) != KJ_OK) goto done;
        if ((s = find_on_search_path(search_path, kernel, &path)) != KJ_OK) goto done;
        if (!path) {
            char file[KJ_MAX_NAME_LEN + 4];
            snprintf(file, sizeof file, "%s.cu", kernel);
            const kj__embedded_file *e = kj__embedded_find(file);
            if (!e) {
                s = unknown_kernel(kernel);
                goto done;
            }
            src->name = kj__strdup(kernel);
            src->origin = kj__asprintf("built-in %s.cu", kernel); /* messages name the kernel */
            src->text = kj__strndup(e->data, e->len);
            src->len = e->len;
            src->embedded = 1;
            if (!src->name || !src->origin || !src->text) {
                s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
                goto done;
            }
        }
    }
    if (path) {
        src->name = base_name_without_cu(path);
        src->origin = path;
        path = NULL;
        src->dir = dir_of(src->origin);
        if (!src->name || !src->dir) {
            s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            goto done;
        }
        if ((s = kj__read_file(src->origin, KJ_MAX_SOURCE_BYTES, KJ_ERR_SOURCE, &src->text, &src->len)) != KJ_OK)
            goto done;
    }
    src->file = kj__asprintf("%s.cu", src->name);
    src->vfile = kj__asprintf("%s/%s.cu", KJ__VROOT, src->name);
    if (!src->file || !src->vfile) {
        s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        goto done;
    }
    if ((s = check_text(src->origin, src->text, src->len)) != KJ_OK) goto done;
    if (src->dir && !(src->root = kj__real_path(src->dir))) {
        s = KJ_FAIL(KJ_ERR_SOURCE, "cannot resolve the folder of '%s': %s", src->origin, strerror(errno));
        goto done;
    }
    for (size_t i = 0; cfg && i < cfg->pre_include_count && s == KJ_OK; i++) {
        if (i == sizeof src->pre_include_names / sizeof src->pre_include_names[0]) {
            s = KJ_FAIL(KJ_ERR_USAGE, "%zu pre-includes: at most %zu", cfg->pre_include_count, i);
            break;
        }
        s = kj__includes_add_file(src, cfg->pre_includes[i], &src->pre_include_names[i]);
        src->pre_include_count += s == KJ_OK;
    }
    if (s != KJ_OK) goto done;
    if ((s = kj__includes_resolve(src, cfg)) != KJ_OK) goto done;
    if (need_kernel) s = check_has_kernel(src);
done:
    free(path);
    if (s == KJ_OK) *out = src;
    else kj__source_free(src);
    return s;
}

void kj__source_free(kj__source *src) {
    if (!src) return;
    for (size_t i = 0; i < src->header_count; i++)
        kj__free_all(src->headers[i].name, src->headers[i].text, src->headers[i].code, src->headers[i].path,
                     src->headers[i].dir);
    kj__buf_free(&src->unresolved);
    kj__free_all(src->headers, src->root, src->name, src->file, src->vfile, src->origin, src->dir, src->text, src->code,
                 src);
}
