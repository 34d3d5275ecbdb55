/* The CUDA toolkit's headers as a cache-key input. When NVRTC may read them (a source includes
 * <cooperative_groups.h>, <cub/cub.cuh>, ...), the key holds this fingerprint: XXH3-128 over the
 * toolkit's include folder's real path and, for every file and folder under it in name order, its
 * relative path, type, size and modification time (ns). Editing, adding, removing or replacing any
 * toolkit header changes it. It is computed once per process (about 2000 files: a few ms) on first
 * use, so a long-running process notices a toolkit change only when it starts again. */
#ifndef KJ_TOOLKIT_H
#define KJ_TOOLKIT_H

#include <stdint.h>

#include "kernjit.h"

/* The fingerprint (16 bytes, valid for the process's life), computed on first call; thread-safe.
 * Errors: KJ_ERR_SOURCE (the include folder cannot be read), KJ_ERR_HOST_MEMORY. */
kj_status kj__toolkit_fingerprint(const uint8_t **fingerprint);

#endif
