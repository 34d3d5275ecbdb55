/* The includes of a kernel source, found by kernjit itself so that what NVRTC compiles is exactly
 * what the cache key hashed ("hermetic": NVRTC gets every user header from memory and searches no
 * folder of its own but the toolkit's). Resolution follows C:
 *   #include "x.h"  beside the including file, then the include folders (-I) in order, then the
 *                   search path (KERNJIT_PATH), then the embedded built-in headers, then the toolkit;
 *   #include <x.h>  the include folders, then the toolkit (include/, include/cccl/);
 *   #include NAME   as above when NAME is #defined (in a scanned file, or with -D) as "x.h" or <x.h>;
 *   #include_next   as above, past the folder the including header was found in;
 * never the process's working directory unless the including file lies there. A built-in file's
 * quoted includes are the built-in headers first: no folder of the user's replaces them. Every
 * #include line counts, whatever #if guards it (hashing more than is used is safe). Each user header
 * found gets a canonical name (its path relative to the source's folder, else its absolute path),
 * and the include lines are rewritten to it, so that two files both named "b.h" stay apart. Headers
 * that resolve into the toolkit, also through another folder (an -I of the toolkit's own), are left
 * to NVRTC by the name it finds them by in the toolkit's folders, which it then searches: the
 * toolkit's state then joins the key (see toolkit.h).
 *
 * __has_include(X) and __has_include_next(X), and the calls of macros that wrap them, answer as the
 * #include of X would: the operand is rewritten to the header's canonical name (the header joins the
 * source), to the toolkit's name, or, found nowhere, to a name no file can have (false for NVRTC). So
 * the answer is in the text the key hashes. An operand that is not a header name nor a NAME
 * #defined as one is refused; a NAME #defined nowhere is left to NVRTC, which refuses it where it is
 * evaluated.
 *
 * NVRTC looks for an include it is not handed beside the including file and beside each input
 * source, whatever folder the program names them in; so the source and every header are named
 * inside KJ__VROOT, a folder no one can create (a file under /proc/self/fdinfo): there, NVRTC finds
 * nothing of its own but the toolkit's headers, which look beside themselves as usual. Messages map
 * the names back to the real paths. */
#define KJ__VROOT "/proc/self/fdinfo/kernjit"
#ifndef KJ_INCLUDES_H
#define KJ_INCLUDES_H

#include <stddef.h>

#include "kernjit.h"

struct kj__source;

typedef struct kj__include_config {
    const char *search_path; /* colon-separated folders (KERNJIT_PATH); NULL: none */
    char *const *dirs;       /* the include folders (-I), in order */
    size_t dir_count;
    const kj_define *defines; /* the request's macros, for #include NAME */
    size_t define_count;
    char *const *pre_includes; /* files to include before the source (--pre-include), from the working
                                    folder or absolute */
    size_t pre_include_count;
} kj__include_config;

/* Resolves the includes of src (its text and, recursively, every user header it reaches), adding
 * the headers to src and rewriting the include lines to their canonical names. Sets src->toolkit
 * when NVRTC needs the toolkit's folders. Includes found nowhere are left as written and listed in
 * src->unresolved, for the message NVRTC's "could not open" gets.
 * Errors: KJ_ERR_SOURCE (a header that cannot be read, is a special file, or one too many; a
 * __has_include operand that cannot be resolved), KJ_ERR_HOST_MEMORY. */
kj_status kj__includes_resolve(struct kj__source *src, const kj__include_config *cfg);

/* Adds the file at path (relative to the working directory: a --pre-include the caller named) as
 * a header of src and gives its canonical name (owned by src). Call before kj__includes_resolve,
 * which then scans it too. Errors: KJ_ERR_USAGE (no such file), KJ_ERR_SOURCE, KJ_ERR_HOST_MEMORY. */
kj_status kj__includes_add_file(struct kj__source *src, const char *path, const char **name);

#endif
