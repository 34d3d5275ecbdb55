/* NVRTC: source text plus options in, a cubin (or PTX, or a relocatable cubin for linking) out. */
#ifndef KJ_COMPILE_H
#define KJ_COMPILE_H

#include <stddef.h>

#include "jit/arch.h" /* kj__nvrtc_version */
#include "jit/resources.h"
#include "jit/unit.h"

typedef struct kj__compiled {
    char *binary;
    size_t size;
    int is_ptx;
    char **lowered_names; /* the mangled name of each name expression of the job, in its order (an
                             element NULL when NVRTC gave none) */
    size_t lowered_count;
    char *log;               /* warnings; "" when none (ptxas's resource lines are taken out into resources) */
    kj__resources resources; /* the kernels ptxas reports (resources.h); none for PTX */
    double ms;
} kj__compiled;

typedef struct kj__compile_job {
    const kj__source *source;
    const char *const *options; /* -arch=..., -D..., user options: exactly what the key covers */
    size_t option_count;
    const char *const *name_expressions; /* the C++ entries NVRTC lowers (none when the entries are
                                     extern "C" names) */
    size_t name_expression_count;
    int want_ptx;     /* the arch is compute_XY: keep PTX for the driver to finish (or PTX is
                                     asked for: kj_emit) */
    int want_ltoir;   /* keep LTO-IR (the options have -dlto): kj_emit */
    const char *text; /* the text to compile instead of source->text (the same length and
                                     lines: the entry alone, trim.h); NULL: source->text */
} kj__compile_job;

/* Compiles the source and its headers (from memory, under their KJ__VROOT names) with exactly the
 * job's options; on failure KJ_ERR_COMPILE with the NVRTC log (file(line): ..., real paths) in the
 * message, and what kernjit knows of headers NVRTC could not open. */
kj_status kj__compile(const kj__compile_job *job, kj__compiled *out);
void kj__compiled_free(kj__compiled *c);

#endif
