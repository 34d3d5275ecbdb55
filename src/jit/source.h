/* Finding a kernel's source text: an explicit path, NAME.cu on the search path, or the copy embedded
 * in the library at build time; and the quoted headers it includes, so that the cache key covers them
 * and NVRTC gets them from memory. */
#ifndef KJ_SOURCE_H
#define KJ_SOURCE_H

#include <stddef.h>

#include "kernjit.h"

#include "jit/includes.h"
#include "jit/unit.h"

/* Finds and reads the source of `kernel` (see kj_request.kernel), or wraps source_text when given,
 * then resolves its includes (includes.h) with cfg's folders and macros; cfg NULL: the search path
 * alone. */
kj_status kj__source_find_with(const kj__include_config *cfg, const char *kernel, const char *source_text,
                               kj__source **out);
/* A source of a linked program after the first (kj_request.sources): a path to a file, found and
 * resolved as above, that need not hold a kernel itself (its __device__ functions may serve the
 * others); or, named NAME.ptx, NAME.cubin or NAME.ltoir, code for nvJitLink read as it is (kind).
 * Errors as kj__source_find_with; KJ_ERR_USAGE for a name that is not a path. */
kj_status kj__source_find_unit(const kj__include_config *cfg, const char *path, kj__source **out);
/* Whether the source or a header of its own has a __global__ function (lexically). */
int kj__source_has_kernel(const kj__source *src);
/* The same with no include folders. search_path may be NULL (no folders).
 * Errors: KJ_ERR_UNKNOWN_KERNEL (listing the built-in kernels), KJ_ERR_USAGE (a malformed name or a
 * search-path entry that is not a folder), KJ_ERR_SOURCE (missing, empty, binary or unreadable file,
 * or not a kernel file). */
kj_status kj__source_find(const char *search_path, const char *kernel, const char *source_text, kj__source **out);
void kj__source_free(kj__source *src);

#endif
