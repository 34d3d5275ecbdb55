/* The CUDA toolkit kernjit compiles with: its folder, the include folders NVRTC searches, and its
 * headers as a cache-key input. When NVRTC may read them (a source includes <cooperative_groups.h>,
 * <cub/block/block_reduce.cuh>, ...), the key holds this fingerprint: XXH3-128 over the toolkit's
 * include folder's real path and, for every file and folder under it in name order, its
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

/* The CUDA toolkit's include folders NVRTC is given when src->toolkit is set: "<cuda>/include" and,
 * where it exists, "<cuda>/include/cccl" (CCCL: cuda/std, cub, thrust). count is 1 or 2. */
void kj__toolkit_include_dirs(const char *dirs[2], size_t *count);

/* Whether the file at real path `real` (a real path: no symbolic link, no "." or "..") is one of the
 * toolkit's headers, reached through another folder (an -I of the toolkit's include folder, say):
 * then the name NVRTC finds that very file by when it searches the toolkit's include folders (its
 * path below include/cccl/ when that is what NVRTC meets first, else below include/), malloc'd; else
 * NULL (errno ENOMEM when out of memory, else 0). So one file has one name, whatever folder led to
 * it, and include guards and #pragma once hold. Thread-safe. */
char *kj__toolkit_name(const char *real);

/* The CUDA toolkit folder: $KERNJIT_CUDA_HOME, $CUDA_HOME, else the one kernjit was built with. */
const char *kj__cuda_home(void);

#endif
