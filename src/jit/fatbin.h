/* A fat binary: several targets' code in one file that the driver loads (cuModuleLoadData picks the
 * image for the device), as nvcc embeds it in programs. Made by nvFatbin (libnvfatbin, loaded at run
 * time from the toolkit) when it is there, else written here in the format the toolkit's own
 * `fatbinary` writes for cubins. */
#ifndef KJ_FATBIN_H
#define KJ_FATBIN_H

#include <stddef.h>

#include "kernjit.h"

typedef struct kj__fatbin_image {
    const char *data;
    size_t size;        /* PTX: its text, without the NUL */
    int arch;           /* 90 for sm_90 or compute_90 */
    const char *target; /* the target's name: "sm_90", "sm_90a", "compute_90" */
    int is_ptx;
} kj__fatbin_image;

/* The fat binary of the images, malloc'd into *out (*size bytes); *maker says which made it
 * ("nvFatbin" or "kernjit": static storage). KERNJIT_NVFATBIN names the library (a path), or "off"
 * for kernjit's writer. Errors: KJ_ERR_UNSUPPORTED for a PTX image without nvFatbin (naming what to
 * give instead), KJ_ERR_USAGE for a cubin that is not an ELF file, KJ_ERR_LINK for nvFatbin's
 * refusal (its message), KJ_ERR_HOST_MEMORY. */
kj_status kj__fatbin_build(const kj__fatbin_image *images, size_t count, char **out, size_t *size, const char **maker);

/* Whether a fat binary can hold target's code here: KJ_ERR_UNSUPPORTED for PTX (compute_XY) and an
 * architecture-specific target (sm_90a, sm_100f) when nvFatbin cannot be loaded (kernjit's writer
 * has cubins for sm_XY alone), naming what to give instead; KJ_OK otherwise. */
kj_status kj__fatbin_check_target(const char *target);

/* The architectures of the ELF and PTX images of a fat binary as this format reads (sm numbers into
 * arch, up to max, *ptx set for a PTX image's); the count, or -1 when it does not read as one. */
int kj__fatbin_list(const void *data, size_t size, int *arch, int *ptx, int max);

#endif
