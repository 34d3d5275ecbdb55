/* kj_kernel_get, the door to the runtime's kernels: the request checked and hashed, then the memory
 * map (kernel.h), a prefetch of the same request waited for (prefetch.h), else the kernel obtained and
 * loaded now (kernel.c). A file of its own because the prefetch threads obtain kernels through
 * kernel.c too: in either file it would make the two use each other. */
#include <stdint.h>

#include "base/error.h"
#include "base/sized.h"
#include "jit/prepare.h"
#include "runtime/kernel.h"
#include "runtime/prefetch.h"
#include "runtime/runtime.h"

kj_status kj_kernel_get(kj_runtime *rt, const kj_request *req, kj_kernel **out, kj_origin *origin) {
    KJ_RETURN_IF(!rt || !req || !out, KJ_ERR_USAGE, "kj_kernel_get: runtime, request and out are required");
    kj_request copy;
    KJ__SIZED_INPUT(req, copy, kj_request, KJ_REQUEST_INIT);
    KJ_FORWARD(kj__check_request(req));
    uint8_t h[16];
    kj__request_hash(req, h);
    pthread_mutex_lock(&rt->lock);
    rt->stats.requests++;
    pthread_mutex_unlock(&rt->lock);
    kj_kernel *k = kj__memory_hit(rt, h, origin);
    if (!k && kj__prefetch_wait(rt, h)) k = kj__memory_hit(rt, h, origin);
    if (k) {
        *out = k;
        return KJ_OK;
    }
    return kj__kernel_get_now(rt, req, h, 0, out, origin);
}
