/* kj_reduce_nccl: one reduction across the ranks of the host program's NCCL communicator. Each rank
 * reduces its part with kj_reduce; one all-reduce of the single partial combines the ranks. Before
 * it, a small all-reduce checks that every rank reduces with the same op and type (NCCL would
 * otherwise exchange mismatched bytes, or wait forever), and every wait watches the communicator's
 * errors and a time limit, so that a rank that never comes is an error, not a hang. */
#include <string.h>
#include <time.h>

#include "ops/ops.h"
#include "ops/reduce/reduce.h"
#include "ops/reduce/reduce_cpu.h"

static const kj__state_key lanes = KJ__LANES;
#define LANE_BYTES 32 /* the handshake's two words, then the partial */
#define PARTIAL_AT 16

/* ---- the partial as NCCL combines it ----------------------------------------------------------- */

/* The partial's bytes, with the NCCL type and operator that combine them as kj_reduce would. */
typedef struct wire {
    unsigned char bytes[8];
    size_t size;
    int type, op;
} wire;

/* Float max and min must return NaN when any rank's partial is NaN, which NCCL's (fmax) does not:
 * they travel as integers ordered as the floats are (the sign bit kept, the others of a negative
 * value flipped), a NaN made the largest for max and the smallest for min. The mapping is its own
 * inverse. */
static uint64_t ordered(uint64_t bits, unsigned width) {
    uint64_t sign = 1ull << (width - 1), rest = sign - 1;
    return bits & sign ? bits ^ rest : bits;
}

static int is_nan(uint64_t bits, unsigned width) {
    uint64_t exp = width == 32 ? 0x7f800000ull : 0x7ff0000000000000ull,
             mant = width == 32 ? 0x7fffffull : (1ull << 52) - 1;
    return (bits & exp) == exp && (bits & mant);
}

static const int nccl_ops[KJ_OP_COUNT_] = {
    [KJ_OP_SUM] = KJ__NCCL_SUM, [KJ_OP_MAX] = KJ__NCCL_MAX, [KJ_OP_MIN] = KJ__NCCL_MIN, [KJ_OP_PROD] = KJ__NCCL_PROD};

static void to_wire(kj_op op, kj_type type, const unsigned char *partial, wire *w) {
    int wraps = op == KJ_OP_SUM || op == KJ_OP_PROD; /* integer sums and products: unsigned arithmetic */
    w->size = kj_result_size(type);
    w->op = nccl_ops[op];
    memcpy(w->bytes, partial, w->size);
    switch (type) {
    case KJ_TYPE_I32: w->type = wraps ? KJ__NCCL_UINT32 : KJ__NCCL_INT32; return;
    case KJ_TYPE_U32: w->type = KJ__NCCL_UINT32; return;
    case KJ_TYPE_I64: w->type = wraps ? KJ__NCCL_UINT64 : KJ__NCCL_INT64; return;
    default: break;
    }
    unsigned width = (unsigned)w->size * 8; /* f16's and bf16's partial is its f32 result */
    w->type = width == 32 ? KJ__NCCL_FLOAT32 : KJ__NCCL_FLOAT64;
    if (wraps) return;
    uint64_t bits = 0;
    memcpy(&bits, partial, w->size);
    if (is_nan(bits, width)) /* the largest for max, the smallest for min, once ordered */
        bits = (op == KJ_OP_MAX ? 0 : 1ull << (width - 1)) | (width == 32 ? 0x7fc00000ull : 0x7ff8000000000000ull);
    bits = ordered(bits, width);
    memcpy(w->bytes, &bits, w->size);
    w->type = width == 32 ? KJ__NCCL_INT32 : KJ__NCCL_INT64;
}

static void from_wire(kj_op op, kj_type type, wire *w, void *result) {
    int ordered_float = kj__type_is_float(type) && (op == KJ_OP_MAX || op == KJ_OP_MIN);
    if (ordered_float) {
        uint64_t bits = 0;
        memcpy(&bits, w->bytes, w->size);
        bits = ordered(bits, (unsigned)w->size * 8);
        memcpy(w->bytes, &bits, w->size);
    }
    memcpy(result, w->bytes, w->size);
}

/* ---- NCCL calls, never waited on blindly ------------------------------------------------------ */

static kj_status nccl_fail(const kj__nccl_api *nccl, kj__nccl_result r, const char *what) {
    return KJ_FAIL(KJ_ERR_CUDA, "kj_reduce_nccl: %s failed: NCCL error %d (%s)", what, r, nccl->ncclGetErrorString(r));
}

static kj_status async_error(const kj__nccl_api *nccl, kj__nccl_comm_t comm) {
    kj__nccl_result e = KJ__NCCL_SUCCESS, r = nccl->ncclCommGetAsyncError(comm, &e);
    if (r != KJ__NCCL_SUCCESS) return nccl_fail(nccl, r, "ncclCommGetAsyncError");
    if (e != KJ__NCCL_SUCCESS && e != KJ__NCCL_IN_PROGRESS)
        return KJ_FAIL(KJ_ERR_CUDA,
                       "kj_reduce_nccl: the communicator is in error: NCCL error %d (%s); abort it "
                       "(ncclCommAbort) and make a new one",
                       e, nccl->ncclGetErrorString(e));
    return KJ_OK;
}

/* Waits for the stream, watching the communicator: its errors end the wait, and so does the time
 * limit (a rank that never calls). */
static kj_status wait_for(kj_runtime *rt, const kj__nccl_api *nccl, kj__nccl_comm_t comm, kj_stream stream,
                          const char *what) {
    double start = kj__now_ms();
    for (;;) {
        int done = 0;
        KJ_FORWARD(kj__stream_done(rt, stream, what, &done));
        if (done) return KJ_OK;
        KJ_FORWARD(async_error(nccl, comm));
        KJ_RETURN_IF(kj__now_ms() - start > KJ__REDUCE_WAIT_LIMIT_MS, KJ_ERR_CUDA,
                     "kj_reduce_nccl: %s has not completed after %.0f s: every rank of the communicator must call "
                     "kj_reduce_nccl; abort the communicator (ncclCommAbort) before using it again",
                     what, KJ__REDUCE_WAIT_LIMIT_MS / 1000);
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
    }
}

static kj_status all_reduce(kj_runtime *rt, const kj__nccl_api *nccl, kj__nccl_comm_t comm, kj_devptr at, size_t count,
                            int type, int op, kj_stream stream, const char *what) {
    void *p = (void *)(uintptr_t)at;
    kj__nccl_result r = nccl->ncclAllReduce(p, p, count, type, op, comm, stream);
    if (r != KJ__NCCL_SUCCESS && r != KJ__NCCL_IN_PROGRESS) return nccl_fail(nccl, r, what);
    return wait_for(rt, nccl, comm, stream, what);
}

/* Every rank reduces with the same op and type: the signatures' max and the max of their
 * complements (the complement of their min) agree only when all are equal. */
static kj_status same_on_every_rank(kj_runtime *rt, const kj__nccl_api *nccl, kj__nccl_comm_t comm, kj_op op,
                                    kj_type type, kj_devptr at, kj_stream stream) {
    uint64_t mine = 0x6b6a726564000000ull | (uint64_t)op << 8 | (uint64_t)type, words[2] = {mine, ~mine};
    KJ_FORWARD(kj__memcpy_htod_async(rt, at, words, sizeof words, stream, "writing the ranks' handshake"));
    KJ_FORWARD(all_reduce(rt, nccl, comm, at, 2, KJ__NCCL_UINT64, KJ__NCCL_MAX, stream, "the ranks' handshake"));
    KJ_FORWARD(kj__memcpy_dtoh_async(rt, words, at, sizeof words, stream, "reading the ranks' handshake"));
    KJ_FORWARD(kj__stream_wait(rt, stream, "reading the ranks' handshake"));
    if (words[0] == mine && ~words[1] == mine) return KJ_OK;
    int rank = -1, ranks = -1;
    nccl->ncclCommUserRank(comm, &rank);
    nccl->ncclCommCount(comm, &ranks);
    return KJ_FAIL(KJ_ERR_USAGE,
                   "kj_reduce_nccl: the ranks disagree: rank %d of %d reduces %s %s, another rank "
                   "another op or type; every rank must call with the same op and type",
                   rank, ranks, kj_op_name(op), kj_type_name(type));
}

/* ---- the call ----------------------------------------------------------------------------------- */

static kj_status check_communicator(kj_runtime *rt, const kj__nccl_api *nccl, kj__nccl_comm_t comm) {
    int device = -1;
    kj__nccl_result r = nccl->ncclCommCuDevice(comm, &device);
    if (r != KJ__NCCL_SUCCESS) return nccl_fail(nccl, r, "ncclCommCuDevice");
    int mine = kj__device_info(rt)->ordinal;
    KJ_RETURN_IF(device != mine, KJ_ERR_USAGE,
                 "kj_reduce_nccl: the communicator is on device %d, the runtime on device %d: make the communicator "
                 "on the runtime's device (cudaSetDevice before ncclCommInitRank)",
                 device, mine);
    return async_error(nccl, comm);
}

kj_status kj_nccl_library(const char **path, int *version) {
    KJ_RETURN_IF(!path, KJ_ERR_USAGE, "kj_nccl_library: path is NULL");
    const kj__nccl_api *nccl;
    KJ_FORWARD(kj__nccl_load(&nccl));
    *path = nccl->library;
    if (version) *version = nccl->version;
    return KJ_OK;
}

kj_status kj_reduce_nccl(kj_runtime *rt, void *comm, kj_devptr part, size_t count, kj_op op, kj_type type, void *result,
                         kj_stream stream) {
    KJ_RETURN_IF(!rt || !comm || !result, KJ_ERR_USAGE, "kj_reduce_nccl: %s is NULL",
                 !rt     ? "the runtime"
                 : !comm ? "the communicator"
                         : "result");
    KJ_RETURN_IF((unsigned)op >= KJ_OP_COUNT_, KJ_ERR_USAGE, "kj_reduce_nccl: operator %d is not a kj_op (0 to 3)",
                 (int)op);
    KJ_RETURN_IF((unsigned)type >= KJ_TYPE_COUNT_, KJ_ERR_USAGE, "kj_reduce_nccl: type %d is not a kj_type (0 to %d)",
                 (int)type, KJ_TYPE_COUNT_ - 1);
    const kj__nccl_api *nccl;
    KJ_FORWARD(kj__nccl_load(&nccl));
    KJ_FORWARD(kj__enter(rt));
    kj__nccl_comm_t c = comm;
    KJ_FORWARD(check_communicator(rt, nccl, c));
    kj__lane *lane;
    KJ_FORWARD(kj__lane_get(rt, &lanes, stream, LANE_BYTES, &lane));
    unsigned char partial[8];
    kj_reduce_options o = {.size = sizeof o, .stream = stream};
    KJ_FORWARD(kj_reduce(rt, op, type, part, count, partial, &o));
    KJ_FORWARD(same_on_every_rank(rt, nccl, c, op, type, lane->buffer, stream));
    wire w;
    to_wire(op, type, partial, &w);
    kj_devptr at = lane->buffer + PARTIAL_AT;
    KJ_FORWARD(kj__memcpy_htod_async(rt, at, w.bytes, w.size, stream, "writing the partial"));
    KJ_FORWARD(all_reduce(rt, nccl, c, at, 1, w.type, w.op, stream, "the all-reduce of the partials"));
    KJ_FORWARD(kj__memcpy_dtoh_async(rt, w.bytes, at, w.size, stream, "reading the all-reduce's result"));
    KJ_FORWARD(kj__stream_wait(rt, stream, "reading the all-reduce's result"));
    from_wire(op, type, &w, result);
    return KJ_OK;
}
