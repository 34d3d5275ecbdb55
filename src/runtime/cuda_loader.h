/* The CUDA driver, loaded at run time (dlopen of libcuda.so.1) into a table of function pointers, so
 * that the library and every compile-only feature work where there is no driver and no GPU.
 *
 * Only the runtime's files call it, as rt->cu->cuMemAlloc(...): cuda.h maps names such as cuMemAlloc
 * to their current versioned symbol (cuMemAlloc_v2); the table's fields go through the same macros,
 * so the field, its type and the symbol looked up always agree. */
/* layers: private */
#ifndef KJ_CUDA_LOADER_H
#define KJ_CUDA_LOADER_H

#include <cuda.h>

#include "kernjit.h"

/* X(name, required): required symbols must exist for the driver to be used; optional ones may be
 * NULL (newer drivers only). */
#define KJ_CUDA_SYMBOLS(X)                                                                                             \
    X(cuInit, 1)                                                                                                       \
    X(cuDriverGetVersion, 1)                                                                                           \
    X(cuGetErrorName, 1)                                                                                               \
    X(cuGetErrorString, 1)                                                                                             \
    X(cuDeviceGetCount, 1)                                                                                             \
    X(cuDeviceGet, 1)                                                                                                  \
    X(cuDeviceGetName, 1)                                                                                              \
    X(cuDeviceGetAttribute, 1)                                                                                         \
    X(cuDeviceTotalMem, 1)                                                                                             \
    X(cuDevicePrimaryCtxRetain, 1)                                                                                     \
    X(cuDevicePrimaryCtxRelease, 1)                                                                                    \
    X(cuCtxGetCurrent, 1)                                                                                              \
    X(cuCtxSetCurrent, 1)                                                                                              \
    X(cuCtxGetDevice, 1)                                                                                               \
    X(cuCtxSynchronize, 1)                                                                                             \
    X(cuCtxSetLimit, 1)                                                                                                \
    X(cuCtxGetLimit, 1)                                                                                                \
    X(cuModuleLoadData, 1)                                                                                             \
    X(cuModuleLoadDataEx, 0)                                                                                           \
    X(cuModuleUnload, 1)                                                                                               \
    X(cuModuleGetFunction, 1)                                                                                          \
    X(cuModuleGetGlobal, 1)                                                                                            \
    X(cuFuncGetAttribute, 1)                                                                                           \
    X(cuFuncSetAttribute, 1)                                                                                           \
    X(cuLaunchKernel, 1)                                                                                               \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 1)                                                                  \
    X(cuMemAlloc, 1)                                                                                                   \
    X(cuMemFree, 1)                                                                                                    \
    X(cuMemGetInfo, 1)                                                                                                 \
    X(cuMemcpyHtoD, 1)                                                                                                 \
    X(cuMemcpyDtoH, 1)                                                                                                 \
    X(cuMemcpyDtoHAsync, 1)                                                                                            \
    X(cuMemcpyHtoDAsync, 1)                                                                                            \
    X(cuMemcpyDtoDAsync, 1)                                                                                            \
    X(cuMemsetD8, 1)                                                                                                   \
    X(cuMemsetD32, 1)                                                                                                  \
    X(cuMemsetD8Async, 1)                                                                                              \
    X(cuMemHostAlloc, 1)                                                                                               \
    X(cuMemHostGetDevicePointer, 1)                                                                                    \
    X(cuMemFreeHost, 1)                                                                                                \
    X(cuStreamCreate, 1)                                                                                               \
    X(cuStreamDestroy, 1)                                                                                              \
    X(cuStreamSynchronize, 1)                                                                                          \
    X(cuStreamQuery, 1)                                                                                                \
    X(cuEventCreate, 1)                                                                                                \
    X(cuEventDestroy, 1)                                                                                               \
    X(cuEventRecord, 1)                                                                                                \
    X(cuEventQuery, 1)                                                                                                 \
    X(cuEventSynchronize, 1)                                                                                           \
    X(cuEventElapsedTime, 1)                                                                                           \
    X(cuFuncGetParamInfo, 0)                                                                                           \
    X(cuLaunchKernelEx, 0)                                                                                             \
    X(cuOccupancyMaxActiveClusters, 0)

typedef struct kj__cuda_api {
#define KJ_CUDA_FIELD_(name, required) __typeof__(name) *name;
    KJ_CUDA_SYMBOLS(KJ_CUDA_FIELD_)
#undef KJ_CUDA_FIELD_
    int driver_version;
} kj__cuda_api;

/* The oldest driver kernjit accepts (CUDA 12.0): CDP2 and the versioned symbols above need it. */
#define KJ_MIN_DRIVER_VERSION 12000

/* Loads and initializes the driver once per process (thread-safe). On success *api points to the
 * table for the life of the process. KJ_ERR_NO_DRIVER names what was missing (the library, a symbol,
 * or a driver too old); KJ_ERR_CUDA when cuInit fails (for example no device: the message says so). */
kj_status kj__cuda_load(const kj__cuda_api **api);

/* Turns a failed CUresult into a kj_status with a message "what: CUDA_ERROR_X (text)". */
kj_status kj__cuda_fail(CUresult r, const char *file, int line, const char *what);
#define KJ_CU(api_call, what)                                                                                          \
    do {                                                                                                               \
        CUresult kj__r = (api_call);                                                                                   \
        if (kj__r != CUDA_SUCCESS) return kj__cuda_fail(kj__r, __FILE__, __LINE__, (what));                            \
    } while (0)

#endif
