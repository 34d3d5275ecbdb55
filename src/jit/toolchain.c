/* kj_toolchain_query: what compiles kernels here (for `kernjit info`). */
#include <string.h>

#include "jit/arch.h"
#include "jit/compile.h"
#include "jit/link.h"
#include "jit/toolkit.h"

void kj_toolchain_query(kj_toolchain *t) {
    if (!t) return;
    memset(t, 0, sizeof *t);
    t->nvrtc_version = kj__nvrtc_version();
    t->nvjitlink_version = kj__nvjitlink_version();
    t->cuda_home = kj__cuda_home();
    const char *path;
    const uint8_t *hash;
    if (kj__devrt(&path, &hash) == KJ_OK) t->devrt_path = path;
    t->arch_count = kj__arch_supported(t->archs, (int)(sizeof t->archs / sizeof t->archs[0]));
}
