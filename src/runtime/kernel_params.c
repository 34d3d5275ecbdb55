/* A loaded kernel's parameters as the compiled function has them: how many, and each one's offset and
 * size in the parameter buffer, from the driver's cuFuncGetParamInfo (CUDA 12.4 and newer; optional in
 * the loader's table). The driver has no call for the count in the drivers kernjit supports
 * (cuFuncGetParamCount came with 13.2), but cuFuncGetParamInfo accepts exactly the indices below the
 * count and answers CUDA_ERROR_INVALID_VALUE above: the count is the first index it refuses. */
#include "base/error.h"
#include "runtime/runtime.h"

/* The parameter buffer holds at most 32764 bytes and a parameter takes at least one. */
#define MAX_PARAMS 32768

/* 1: index exists, 0: past the end; anything else from the driver (a sticky error of an earlier
 * launch, a destroyed context) is a failure. */
static kj_status probe(const kj_kernel *k, size_t index, int *exists, size_t *offset, size_t *size) {
    CUresult r = k->rt->cu->cuFuncGetParamInfo(k->function, index, offset, size);
    if (r == CUDA_ERROR_INVALID_VALUE) {
        *exists = 0;
        return KJ_OK;
    }
    KJ_CU(r, "reading a kernel parameter (cuFuncGetParamInfo)");
    *exists = 1;
    return KJ_OK;
}

static kj_status usable(const kj_kernel *k) {
    KJ_RETURN_IF(!k, KJ_ERR_USAGE, "kernel is NULL");
    KJ_FORWARD(kj__enter(k->rt));
    KJ_RETURN_IF(!k->rt->cu->cuFuncGetParamInfo, KJ_ERR_UNSUPPORTED,
                 "the CUDA driver (%d.%d) lacks cuFuncGetParamInfo, needed to read %s's parameters: CUDA 12.4 or newer "
                 "has it",
                 k->rt->cu->driver_version / 1000, k->rt->cu->driver_version % 1000 / 10, k->entry);
    return KJ_OK;
}

/* Binary search for the first index the driver refuses: a few calls whatever the count. */
static kj_status count_params(const kj_kernel *k, size_t *count) {
    size_t lo = 0, hi = MAX_PARAMS; /* index lo-1 exists (or lo is 0); index hi does not */
    int exists;
    size_t off, sz;
    KJ_FORWARD(probe(k, MAX_PARAMS, &exists, &off, &sz));
    KJ_RETURN_IF(exists, KJ_ERR_CUDA, "the driver reports more than %d parameters for %s", MAX_PARAMS, k->entry);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        KJ_FORWARD(probe(k, mid, &exists, &off, &sz));
        if (exists) lo = mid + 1;
        else hi = mid;
    }
    *count = lo;
    return KJ_OK;
}

kj_status kj_kernel_param_count(const kj_kernel *k, size_t *count) {
    KJ_RETURN_IF(!count, KJ_ERR_USAGE, "kj_kernel_param_count: count is NULL");
    KJ_FORWARD(usable(k));
    return count_params(k, count);
}

kj_status kj_kernel_param_info(const kj_kernel *k, size_t index, size_t *offset, size_t *size) {
    KJ_FORWARD(usable(k));
    int exists;
    size_t off = 0, sz = 0;
    KJ_FORWARD(probe(k, index, &exists, &off, &sz));
    if (!exists) {
        size_t n = 0;
        KJ_FORWARD(count_params(k, &n));
        return KJ_FAIL(KJ_ERR_USAGE, "%s has no parameter %zu: it takes %zu (indices from 0)", k->entry, index, n);
    }
    if (offset) *offset = off;
    if (size) *size = sz;
    return KJ_OK;
}
