/* Request preparation: everything known about a request before any binary exists. The sources are
 * found and read (with their headers), the entry chosen (found lexically in a source without
 * metadata), the macros checked against the metadata, the program scanned for what changes how it is
 * compiled (lex.h), the option list built and the cache key computed over all of it. It needs of the
 * runtime only what kj__prepare_env holds, so that it sits with the compiler and the key it feeds;
 * the runtime obtains the binary for it (runtime/binary.c). */
#ifndef KJ_PREPARE_H
#define KJ_PREPARE_H

#include <stddef.h>
#include <stdint.h>

#include "jit/arch.h"
#include "jit/key.h"
#include "jit/source.h"
#include "jit/spec.h"
#include "kernjit.h"

#define KJ_MAX_SOURCES 64 /* translation units of one program: kj_request.sources and the kernel */
#define KJ_MAX_ENTRIES 64 /* kj_request.entries: a bit each in kj__prepared.lowers_here */

/* What preparing a request needs of the runtime that makes it, and no more. */
typedef struct kj__prepare_env {
    const char *search_path; /* where kernel sources are looked for (KERNJIT_PATH's form); NULL: none */
    kj__target target;       /* the runtime's own: a request that names no target, or this one, gets it */
    int has_device;          /* the target is the device's own, whose cache_arch a request may name too */
    /* For a kernel to launch, the device it is to run on: a target whose code that device does not
     * run is refused here (kj__arch_check_device), not by the driver. NULL when only compiled. */
    const char *device; /* as messages name it: "device 0 (NAME)" */
    int device_cc;      /* its compute capability: 90 for 9.0 */
} kj__prepare_env;

/* Everything known about a request before any binary exists. */
typedef struct kj__prepared {
    kj__source *src;                   /* the program's first source; units[0] */
    kj__source *units[KJ_MAX_SOURCES]; /* every translation unit, in order */
    size_t unit_count;
    uint64_t lowers_here[KJ_MAX_SOURCES]; /* per unit, a bit for each expression it lowers (place_entries) */
    kj__spec *spec;
    char **defines; /* canonical NAME=VALUE, sorted */
    size_t define_count;
    char **options; /* the NVRTC option list the key covers */
    size_t option_count;
    char *entry;
    char *name_expression; /* set for sources without metadata: the entry is lowered by NVRTC */
    char **listed;         /* kj_request.entries, in order: compiled together (0: the entry alone) */
    size_t listed_count;
    size_t listed_index; /* the entry's place among them */
    char **expressions;  /* what NVRTC lowers (sources without metadata): the listed entries, else
                              the entry; none for metadata entries, which are extern "C" names */
    size_t expression_count;
    kj__target target;
    kj__key key;
    char *description;
    uint32_t shared_dynamic; /* launch attributes from the metadata, for the entry and these macros */
    int carveout;
    int pdl;
    int rdc;           /* compiled as relocatable code and linked by nvJitLink (see scan_program) */
    int devrt;         /* linked with the device runtime: the program launches kernels */
    int minimal;       /* compiled with -minimal (see scan_program) */
    int lto;           /* -dlto: each .cu unit compiled to LTO-IR, linked with -lto */
    uint64_t unplaced; /* name expressions no .cu unit declares: taken as the names of kernels in
                                the program's compiled inputs (extern "C"), lowered nowhere */
    char *alone_text;  /* the first source with the other entries left out (trim.h), or NULL */
} kj__prepared;

/* What makes a request malformed whatever its kernel: KJ_ERR_USAGE naming it. */
kj_status kj__check_request(const kj_request *req);

/* Prepares req (checked by kj__check_request first) into *p, which kj__prepared_free releases
 * whatever the result. Errors: kj_compile's (kernjit.h) that come before a compile, each naming what
 * was wrong. */
kj_status kj__prepare(const kj__prepare_env *env, const kj_request *req, kj__prepared *p);
void kj__prepared_free(kj__prepared *p);

/* The program's sources for messages: "a.cu", or "a.cu, b.cu" (malloc'd; NULL when out of memory). */
char *kj__prepared_origins(const kj__prepared *p);

/* The option list of unit u: the program's, with the unit's own names for the pre-included headers
 * (the same files, in the same order; the key has each unit's names). */
typedef struct kj__unit_options {
    const char **options; /* into p->options, but for the names below; room for one option more */
    char *owned[16];      /* "--pre-include=NAME" of this unit (kj__source.pre_include_names' bound) */
    size_t owned_count;
} kj__unit_options;

kj_status kj__unit_options_make(const kj__prepared *p, size_t u, kj__unit_options *l);
void kj__unit_options_free(kj__unit_options *l);

#endif
