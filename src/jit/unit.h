/* A translation unit as the pipeline holds it: the source's text and every user header it reaches,
 * as source.c finds them and includes.c resolves them, and what they ask of the compile. */
#ifndef KJ_UNIT_H
#define KJ_UNIT_H

#include <stddef.h>

#include "base/util.h"

#define KJ_MAX_SOURCE_BYTES (16u << 20)
#define KJ_MAX_NAME_LEN 64
#define KJ_MAX_HEADERS 1024

struct kj__embedded_file;

typedef struct kj__header {
    char *name; /* the name NVRTC knows it by: KJ__VROOT and its canonical name (includes.h) */
    char *text; /* with its include lines rewritten to canonical names */
    size_t len;
    char *code; /* text with comments and `#if 0` blanked (lex.h) once a scan asked for it, else NULL */
    char *path; /* the real path read; NULL for an embedded header */
    char *dir;  /* its folder, for the quoted includes in it; NULL for an embedded header */
    const struct kj__embedded_file *embedded; /* the built-in header it is, else NULL */
    long at;                                  /* where in the search it was found, for #include_next (includes.c) */
} kj__header;

/* What a unit is: CUDA C++ that NVRTC compiles, or code a linked program takes as it is (a source of
 * kj_request.sources named NAME.ptx, NAME.cubin or NAME.ltoir), which goes to nvJitLink. */
typedef enum kj__unit_kind { KJ__UNIT_CU = 0, KJ__UNIT_PTX, KJ__UNIT_CUBIN, KJ__UNIT_LTOIR } kj__unit_kind;

typedef struct kj__source {
    char *name;   /* the kernel's name: "reduce", or the file name without folder and ".cu" */
    char *file;   /* the file's name: "reduce.cu" */
    char *vfile;  /* the name NVRTC knows it by: KJ__VROOT "/reduce.cu" (includes.h) */
    char *origin; /* the path read, or "built-in reduce.cu": what messages call it */
    char *dir;    /* folder of the file, for quoted includes; NULL when embedded or in memory */
    char *root;   /* its real path: canonical names are relative to it; NULL likewise */
    char *text;   /* with its include lines rewritten to canonical names */
    size_t len;
    char *code; /* text with comments and `#if 0` blanked (lex.h) once a scan asked for it, else NULL */
    int embedded;
    kj__unit_kind kind;                /* not KJ__UNIT_CU: text holds the file's bytes, and there are no headers */
    int toolkit;                       /* NVRTC searches the toolkit's folders: their state is part of the key */
    kj__buf unresolved;                /* the includes found nowhere, one line each, for messages */
    const char *pre_include_names[16]; /* the canonical names of the config's pre-includes, in order */
    size_t pre_include_count;
    kj__header *headers; /* grown as they are found, up to KJ_MAX_HEADERS */
    size_t header_count, header_cap;
} kj__source;

#endif
