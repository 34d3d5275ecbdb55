/* nvJitLink: relocatable objects compiled with -rdc=true (one per source of the program) linked into
 * a loadable cubin, with the device runtime (libcudadevrt.a from the toolkit) when the program
 * launches kernels. A program of one source that launches none is never linked. */
#ifndef KJ_LINK_H
#define KJ_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "jit/compile.h"

/* The device runtime library: path and XXH3-128 of its bytes, found and hashed once per process.
 * KJ_ERR_LINK names the path looked at when it is missing. */
kj_status kj__devrt(const char **path, const uint8_t **hash);

/* Whether the device runtime library has machine code for architecture `number` (90): 1 or 0, read
 * from its fat binaries; -1 when the library is missing or they cannot be read. A link for a target
 * it has no code for fails, and the message then says that the toolkit lacks it. */
int kj__devrt_has_code(int number);

/* nvJitLink's version, major * 1000 + minor * 10. */
int kj__nvjitlink_version(void);

/* What an input of a link is, as nvJitLink takes it. */
typedef enum kj__link_input { KJ__LINK_CUBIN = 0, KJ__LINK_PTX = 1, KJ__LINK_LTOIR = 2 } kj__link_input;

/* One input of a link: a relocatable cubin, PTX (for a compute_XY target, or a program's .ptx
 * source), or LTO-IR (a -dlto compile, or a program's .ltoir source); name is what messages call it
 * (the source's path). */
typedef struct kj__link_unit {
    const char *name;
    const char *data;
    size_t size;
    kj__link_input input;
} kj__link_unit;

typedef struct kj__linked {
    char *binary; /* the linked cubin (PTX for a compute_XY target) */
    size_t size;
    char *info; /* nvJitLink's -verbose report and warnings (resources.h reads it); "" when none */
    double ms;
} kj__linked;

/* Links the units, and the device runtime when with_devrt, for arch ("sm_90"), with link-time
 * optimisation (-lto) when any unit is LTO-IR. KJ_ERR_LINK with nvJitLink's log on failure (an
 * undefined or duplicate symbol names the sources involved). */
kj_status kj__link(const char *arch, const kj__link_unit *units, size_t count, int with_devrt, kj__linked *out);
void kj__linked_free(kj__linked *l);

#endif
