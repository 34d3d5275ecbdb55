/* A stand-in for libnccl.so.2 (loaded through KERNJIT_NCCL or found as the nvidia-nccl package's
 * copy), for kj_reduce_nccl's plumbing on the stub driver, whose device memory is host memory. A
 * communicator stands for FAKE_NCCL_RANKS ranks (default 3) that all hold what this rank holds: an
 * all-reduce of x gives N * x for a sum, x^N for a product, x for max and min.
 *
 *   FAKE_NCCL_DEVICE       the device ncclCommCuDevice reports (default 0)
 *   FAKE_NCCL_ASYNC_ERROR  the result ncclCommGetAsyncError reports (default 0, success)
 *   FAKE_NCCL_DISAGREE     set: another rank reduces with another op or type (the handshake, an
 *                          all-reduce of two u64 words by max, sees a smaller signature there)
 * Built twice: whole, and without ncclCommGetAsyncError (-DFAKE_NCCL_OLD) as a library kernjit must
 * refuse. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef struct fake_comm {
    int device;
} fake_comm;

static int env_int(const char *name, int otherwise) {
    const char *v = getenv(name);
    return v ? atoi(v) : otherwise;
}

API int ncclGetVersion(int *version) {
    *version = 22703;
    return 0;
}
API const char *ncclGetErrorString(int result) { return result == 3 ? "internal error (fake)" : "fake NCCL error"; }

/* Communicators of this process's devices (the tests' one-rank and stub programs). */
API int ncclCommInitAll(fake_comm **comms, int ndev, const int *devlist) {
    for (int i = 0; i < ndev; i++) {
        if (!(comms[i] = malloc(sizeof **comms))) return 2;
        comms[i]->device = devlist ? devlist[i] : i;
    }
    return 0;
}
/* Ranks of one process each (the two-process test's plumbing): the id is 128 bytes of anything. */
typedef struct fake_id {
    char internal[128];
} fake_id;
API int ncclGetUniqueId(fake_id *id) {
    memset(id, 0x6b, sizeof *id);
    return 0;
}
API int ncclCommInitRank(fake_comm **comm, int ranks, fake_id id, int rank) {
    (void)ranks, (void)id;
    if (!(*comm = malloc(sizeof **comm))) return 2;
    (*comm)->device = rank;
    return 0;
}
API int ncclCommDestroy(fake_comm *comm) {
    free(comm);
    return 0;
}
API int ncclCommCuDevice(const fake_comm *comm, int *device) {
    *device = env_int("FAKE_NCCL_DEVICE", comm->device);
    return 0;
}
API int ncclCommCount(const fake_comm *comm, int *count) {
    (void)comm;
    *count = env_int("FAKE_NCCL_RANKS", 3);
    return 0;
}
API int ncclCommUserRank(const fake_comm *comm, int *rank) {
    (void)comm;
    *rank = 0;
    return 0;
}
#ifndef FAKE_NCCL_OLD
API int ncclCommGetAsyncError(const fake_comm *comm, int *error) {
    (void)comm;
    *error = env_int("FAKE_NCCL_ASYNC_ERROR", 0);
    return 0;
}
#endif

API int ncclGroupStart(void) { return 0; }
API int ncclGroupEnd(void) { return 0; }

/* N equal ranks: x combined with itself N times. */
#define COMBINE(T, v, op, n)                                                                                           \
    do {                                                                                                               \
        T x_ = *(T *)(v), r_ = x_;                                                                                     \
        for (int i_ = 1; i_ < (n); i_++) r_ = (op) == 0 ? (T)(r_ + x_) : (op) == 1 ? (T)(r_ * x_) : r_;                \
        *(T *)(v) = r_;                                                                                                \
    } while (0)

API int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, fake_comm *comm, void *stream) {
    (void)comm, (void)stream;
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8};
    if (type < 2 || type > 8 || type == 6 || op < 0 || op > 3) return 4; /* ncclInvalidArgument */
    memmove(recv, send, count * sizes[type]);
    int n = env_int("FAKE_NCCL_RANKS", 3);
    for (size_t i = 0; i < count; i++) {
        char *v = (char *)recv + i * sizes[type];
        switch (type) {
        case 2: COMBINE(int32_t, v, op, n); break;
        case 3: COMBINE(uint32_t, v, op, n); break;
        case 4: COMBINE(int64_t, v, op, n); break;
        case 5: COMBINE(uint64_t, v, op, n); break;
        case 7: COMBINE(float, v, op, n); break;
        default: COMBINE(double, v, op, n); break;
        }
    }
    if (getenv("FAKE_NCCL_DISAGREE") && type == 5 && op == 2 && count == 2) { /* the handshake: max of [sig, ~sig] */
        uint64_t *w = recv, other = w[0] - 1; /* smaller: only the complements show it */
        if (other > w[0]) w[0] = other;
        if (~other > w[1]) w[1] = ~other;
    }
    return 0;
}
