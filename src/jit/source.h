/* Finding a kernel's source text: an explicit path, NAME.cu on the search path, or the copy embedded
 * in the library at build time; and the quoted headers it includes, so that the cache key covers them
 * and NVRTC gets them from memory. */
#ifndef KJ_SOURCE_H
#define KJ_SOURCE_H

#include <stddef.h>

#include "kernjit.h"

#include "jit/includes.h"
#include "base/util.h"

#define KJ_MAX_SOURCE_BYTES (16u << 20)
#define KJ_MAX_NAME_LEN 64
#define KJ_MAX_HEADERS 1024

typedef struct kj__header {
    char *name;  /* the name NVRTC knows it by: KJ__VROOT and its canonical name (includes.h) */
    char *text;  /* with its include lines rewritten to canonical names */
    size_t len;
    char *path;  /* the real path read; NULL for an embedded header */
    char *dir;   /* its folder, for the quoted includes in it; NULL for an embedded header */
} kj__header;

typedef struct kj__source {
    char *name;     /* the kernel's name: "reduce", or the file name without folder and ".cu" */
    char *file;     /* the file's name: "reduce.cu" */
    char *vfile;    /* the name NVRTC knows it by: KJ__VROOT "/reduce.cu" (includes.h) */
    char *origin;   /* "built-in", or the path read */
    char *dir;      /* folder of the file, for quoted includes; NULL when embedded or in memory */
    char *root;     /* its real path: canonical names are relative to it; NULL likewise */
    char *text;     /* with its include lines rewritten to canonical names */
    size_t len;
    int embedded;
    int toolkit;    /* NVRTC searches the toolkit's folders: their state is part of the key */
    kj__buf unresolved; /* the includes found nowhere, one line each, for messages */
    const char *pre_include_names[16]; /* the canonical names of the config's pre-includes, in order */
    size_t pre_include_count;
    kj__header *headers;  /* grown as they are found, up to KJ_MAX_HEADERS */
    size_t header_count, header_cap;
} kj__source;

/* Finds and reads the source of `kernel` (see kj_request.kernel), or wraps source_text when given,
 * then resolves its includes (includes.h) with cfg's folders and macros; cfg NULL: the search path
 * alone. */
kj_status kj__source_find_with(const kj__include_config *cfg, const char *kernel, const char *source_text,
                               kj__source **out);
/* A source of a linked program after the first (kj_request.sources): a path to a file, found and
 * resolved as above, that need not hold a kernel itself (its __device__ functions may serve the
 * others). Errors as kj__source_find_with; KJ_ERR_USAGE for a name that is not a path. */
kj_status kj__source_find_unit(const kj__include_config *cfg, const char *path, kj__source **out);
/* Whether the source or a header of its own has a __global__ function (lexically). */
int kj__source_has_kernel(const kj__source *src);
/* The same with no include folders. search_path may be NULL (no folders).
 * Errors: KJ_ERR_UNKNOWN_KERNEL (listing the built-in kernels), KJ_ERR_USAGE (a malformed name or a
 * search-path entry that is not a folder), KJ_ERR_SOURCE (missing, empty, binary or unreadable file,
 * or not a kernel file). */
kj_status kj__source_find(const char *search_path, const char *kernel, const char *source_text, kj__source **out);
void kj__source_free(kj__source *src);

/* The embedded files (generated at build time from kernels_src/). */
typedef struct kj__embedded_file {
    const char *name; /* "reduce.cu", "common.cuh" */
    const char *data;
    size_t len;
} kj__embedded_file;
extern const kj__embedded_file kj__embedded_files[];
extern const size_t kj__embedded_count;
extern const char *const kj__builtin_names[]; /* the .cu files, without ".cu", sorted */
/* The embedded file of that name ("common.cuh"), or NULL. */
const kj__embedded_file *kj__embedded_find(const char *file);
extern const size_t kj__builtin_count;

#endif
