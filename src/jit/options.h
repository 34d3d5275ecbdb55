/* The NVRTC options a request brings (kj_request.options): what kernjit takes over itself (include
 * folders, pre-included headers, relocatable device code, the language standard), what it refuses,
 * and what goes to NVRTC as given. Every option NVRTC gets is in the cache key; one that would make
 * NVRTC read a file kernjit did not hash, write a file, or undo the validated macros is refused,
 * naming it. */
#ifndef KJ_OPTIONS_H
#define KJ_OPTIONS_H

#include <stddef.h>

#include "kernjit.h"

typedef struct kj__user_options {
    char **include_dirs; /* -I<dir>, --include-path=<dir>: searched by kernjit (includes.h) */
    size_t include_dir_count;
    char **pre_includes; /* --pre-include=<file>, -include=<file>: read and hashed by kernjit */
    size_t pre_include_count;
    int rdc;           /* -rdc=true: link with the device runtime */
    int no_minimal;    /* the caller gave -minimal itself (then it is passed as given) */
    const char *std;   /* -std=V or --std=V, the last given (a pointer to V in it): the
                                    language standard in place of kernjit's c++17; NULL: none given */
    int lto;           /* -dlto: the units compiled to LTO-IR and linked with -lto */
    const char **pass; /* the rest, to NVRTC in the request's order (pointers into it) */
    size_t pass_count;
} kj__user_options;

/* Errors: KJ_ERR_USAGE naming the option and why (malformed, set by kernjit, or unsupported),
 * KJ_ERR_HOST_MEMORY. On failure *out is left empty. */
kj_status kj__user_options_parse(const char *const *options, size_t count, kj__user_options *out);
void kj__user_options_free(kj__user_options *o);

#endif
