/* Finding a kernel's source text: an explicit path, NAME.cu on the search path, or the copy embedded
 * in the library at build time; and the quoted headers it includes, so that the cache key covers them
 * and NVRTC gets them from memory. */
#ifndef KJ_SOURCE_H
#define KJ_SOURCE_H

#include <stddef.h>

#include "kernjit.h"

#define KJ_MAX_SOURCE_BYTES (16u << 20)
#define KJ_MAX_NAME_LEN 64
#define KJ_MAX_HEADERS 64

typedef struct kj__header {
    char *name;  /* as written in the #include */
    char *text;
    size_t len;
} kj__header;

typedef struct kj__source {
    char *name;     /* the kernel's name: "reduce", or the file name without folder and ".cu" */
    char *file;     /* the file name NVRTC reports in its log: "reduce.cu" */
    char *origin;   /* "built-in", or the path read */
    char *dir;      /* folder of the file, for quoted includes; NULL when embedded or in memory */
    char *text;
    size_t len;
    int embedded;
    kj__header headers[KJ_MAX_HEADERS];
    size_t header_count;
} kj__source;

/* Finds and reads the source of `kernel` (see kj_request.kernel), or wraps source_text when given,
 * then resolves its quoted includes. search_path may be NULL (no folders).
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
extern const size_t kj__builtin_count;

#endif
