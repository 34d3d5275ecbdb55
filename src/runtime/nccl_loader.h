/* NCCL, loaded at run time (dlopen) into a table of function pointers, as the CUDA driver is
 * (cuda_loader.h): kernjit builds and runs without it, and only kj_reduce_nccl needs it.
 *
 * Where it is looked for, first found wins: an NCCL the process has loaded already (the host
 * program's communicators are that library's); KERNJIT_NCCL (a path, and only it when set: a path
 * that fails is an error, not a fallback); "libnccl.so.2" on the dynamic loader's path; then the
 * nvidia-nccl Python package's copy, nvidia/nccl/lib/libnccl.so.2, under the site-packages and
 * dist-packages folders of the Python environments one can name without running Python (the lib
 * folders beside each python3 on PATH, $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local, /usr,
 * /opt/conda) and each PYTHONPATH folder. A failure says where it looked and names KERNJIT_NCCL.
 *
 * The declarations are the few of nccl.h that kernjit uses, written out here (NCCL's ABI, stable
 * since 2.x), so that no NCCL header is needed to build. */
#ifndef KJ_NCCL_LOADER_H
#define KJ_NCCL_LOADER_H

#include <stddef.h>

#include "kernjit.h"

typedef struct kj__nccl_comm *kj__nccl_comm_t; /* ncclComm_t */
typedef int kj__nccl_result;                   /* ncclResult_t: 0 success, 7 in progress */
#define KJ__NCCL_SUCCESS 0
#define KJ__NCCL_IN_PROGRESS 7
/* ncclRedOp_t and ncclDataType_t values */
enum { KJ__NCCL_SUM = 0, KJ__NCCL_PROD = 1, KJ__NCCL_MAX = 2, KJ__NCCL_MIN = 3 };
enum {
    KJ__NCCL_INT32 = 2,
    KJ__NCCL_UINT32 = 3,
    KJ__NCCL_INT64 = 4,
    KJ__NCCL_UINT64 = 5,
    KJ__NCCL_FLOAT32 = 7,
    KJ__NCCL_FLOAT64 = 8
};

#define KJ_NCCL_SYMBOLS(X)                                                                                             \
    X(ncclGetVersion, kj__nccl_result, (int *version))                                                                 \
    X(ncclGetErrorString, const char *, (kj__nccl_result result))                                                      \
    X(ncclCommCuDevice, kj__nccl_result, (kj__nccl_comm_t comm, int *device))                                          \
    X(ncclCommCount, kj__nccl_result, (kj__nccl_comm_t comm, int *count))                                              \
    X(ncclCommUserRank, kj__nccl_result, (kj__nccl_comm_t comm, int *rank))                                            \
    X(ncclCommGetAsyncError, kj__nccl_result, (kj__nccl_comm_t comm, kj__nccl_result * async_error))                   \
    X(ncclAllReduce, kj__nccl_result,                                                                                  \
      (const void *send, void *recv, size_t count, int type, int op, kj__nccl_comm_t comm, void *stream))

typedef struct kj__nccl_api {
#define KJ_NCCL_FIELD_(name, ret, params) ret(*name) params;
    KJ_NCCL_SYMBOLS(KJ_NCCL_FIELD_)
#undef KJ_NCCL_FIELD_
    int version;        /* ncclGetVersion's (22703 for 2.27.3); 0 when it fails */
    char library[4096]; /* the file loaded */
} kj__nccl_api;

/* The nvidia-nccl package's copy in the Python environments above: 0 with its path in path, else -1
 * with where it looked in looked (comma-separated). Reads the environment; no dlopen. */
int kj__nccl_find_in_packages(char *path, size_t size, char *looked, size_t looked_size);

/* The table, loaded once per process (thread-safe). KJ_ERR_UNSUPPORTED with where it looked when no
 * NCCL loads, or when the one found lacks a function kernjit calls. */
kj_status kj__nccl_load(const kj__nccl_api **out);

#endif
