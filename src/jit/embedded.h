/* The kernel sources compiled into the library: kernels_src/'s files, which scripts/embed-sources.py
 * writes into a generated C file at build time (the built-in kernels and the headers they include). */
#ifndef KJ_EMBEDDED_H
#define KJ_EMBEDDED_H

#include <stddef.h>

typedef struct kj__embedded_file {
    const char *name; /* "reduce.cu", "common.cuh" */
    const char *data;
    size_t len;
} kj__embedded_file;

extern const kj__embedded_file kj__embedded_files[];
extern const size_t kj__embedded_count;
extern const char *const kj__builtin_names[]; /* the .cu files, without ".cu", sorted */
extern const size_t kj__builtin_count;

/* The embedded file of that name ("common.cuh"), or NULL. */
const kj__embedded_file *kj__embedded_find(const char *file);

#endif
