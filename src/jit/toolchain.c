/* kj_toolchain_query: what compiles kernels here (for `kernjit info`). */
#include <string.h>

#include "base/sized.h"
#include "jit/arch.h"
#include "jit/compile.h"
#include "jit/link.h"
#include "jit/toolkit.h"

kj_status kj_toolchain_query(kj_toolchain *info) {
    KJ_RETURN_IF(!info, KJ_ERR_USAGE, "kj_toolchain_query: info is NULL");
    KJ_FORWARD(KJ__SIZED_CHECK(info, kj_toolchain, KJ_TOOLCHAIN_INIT));
    kj_toolchain full, *t = &full;
    memset(t, 0, sizeof *t);
    t->nvrtc_version = kj__nvrtc_version();
    t->nvjitlink_version = kj__nvjitlink_version();
    t->cuda_home = kj__cuda_home();
    const char *path;
    const uint8_t *hash;
    if (kj__devrt(&path, &hash) == KJ_OK) t->devrt_path = path;
    t->arch_count = kj__arch_list(&t->archs);
    KJ__SIZED_WRITE(info, full);
    return KJ_OK;
}
