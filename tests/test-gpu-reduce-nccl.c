/* kj_reduce_nccl on the GPU, one rank: a communicator of device 0 alone (ncclCommInitAll through the
 * NCCL that kernjit loaded), every op and type at sizes 1, 31, 1000003 and 2^24+7, fresh random
 * inputs, the result poisoned first: it must be the bits of kj_reduce of the same part (one rank's
 * all-reduce changes nothing) and match the CPU reference; float max and min with a NaN give NaN.
 * Exits 77 without a GPU or without NCCL (the message says where kernjit looked). */
#include "test_util.h"

#include <math.h>

#include "nccl_util.h"

#define MAX_N ((1u << 24) + 7)

static void *comm, *host;
static kj_devptr input;
static kj_test_nccl nccl;

static int setup(void **state) {
    if (kj_test_setup_gpu_runtime(state) != 0) return -1;
    setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off */
    if (kj_test_nccl_open(&nccl) != 0) {
        printf("no NCCL: skipping\n");
        exit(KJ_TEST_SKIP);
    }
    printf("NCCL: %s\n", nccl.path);
    int device = 0;
    if (nccl.comm_init_all(&comm, 1, &device) != 0) return -1;
    host = malloc((size_t)MAX_N * 8);
    return host && kj_mem_alloc(kj_test_rt, (size_t)MAX_N * 8, &input) == KJ_OK ? 0 : -1;
}

static int teardown(void **state) {
    if (comm) nccl.comm_destroy(comm);
    kj_mem_free(kj_test_rt, input);
    free(host);
    return kj_test_teardown(state);
}

static void check(kj_op op, kj_type t, size_t n, int with_nan) {
    size_t rs = kj_result_size(t);
    kj_test_fill_reduction(host, t, op, n, 0, &kj_test_rng);
    if (with_nan) {
        size_t at = kj_test_next(&kj_test_rng) % n;
        if (t == KJ_TYPE_F16) ((uint16_t *)host)[at] = 0x7e00;
        else if (t == KJ_TYPE_BF16) ((uint16_t *)host)[at] = 0x7fc0;
        else if (t == KJ_TYPE_F32) ((float *)host)[at] = NAN;
        else ((double *)host)[at] = NAN;
    }
    KJ_ASSERT_OK(kj_memcpy_htod(kj_test_rt, input, host, n * kj_type_size(t)));
    unsigned char want[8], local[8], got[8];
    double abs_sum;
    KJ_ASSERT_OK(kjtest_reduce_reference(op, t, host, n, want, &abs_sum));
    KJ_ASSERT_OK(kj_reduce(kj_test_rt, op, t, input, n, local, NULL));
    memset(got, 0xA5, sizeof got);
    kj_status s = kj_reduce_nccl(kj_test_rt, comm, input, n, op, t, got, NULL);
    const char *what = kj_op_name(op), *type = kj_type_name(t);
    if (s != KJ_OK) fail_msg("%s %s n=%zu: %s", what, type, n, kj_last_error());
    double w = kjtest_result_as_double(t, want), g = kjtest_result_as_double(t, got);
    if (with_nan) { /* a NaN, canonical: kj_reduce's keeps the payload the GPU's arithmetic gave it */
        uint64_t bits = 0, quiet = rs == 4 ? 0x7fc00000ull : 0x7ff8000000000000ull;
        memcpy(&bits, got, rs);
        if (op == KJ_OP_MIN) quiet |= 1ull << (rs * 8 - 1);
        if (!isnan(g) || !isnan(kjtest_result_as_double(t, local)) || bits != quiet)
            fail_msg("%s %s n=%zu with a NaN: %.17g (bits %#llx), kj_reduce's %.17g: not the canonical NaN %#llx", what,
                     type, n, g, (unsigned long long)bits, kjtest_result_as_double(t, local),
                     (unsigned long long)quiet);
        return;
    }
    if (memcmp(local, got, rs) != 0)
        fail_msg("%s %s n=%zu: one rank's result %.17g is not kj_reduce's %.17g", what, type, n, g,
                 kjtest_result_as_double(t, local));
    double tol = kjtest_reduce_tolerance(op, t, n, w, abs_sum, NULL);
    if (memcmp(want, got, rs) != 0 && !(fabs(g - w) <= tol))
        fail_msg("%s %s n=%zu: GPU %.17g, CPU %.17g, tolerance %.3g", what, type, n, g, w, tol);
}

static void test_one_rank(void **state) {
    (void)state;
    size_t sizes[4], n_sizes = kj_test_sizes(sizes), checks = 0;
    for (int op = 0; op < KJ_OP_COUNT_; op++)
        for (int t = 0; t < KJ_TYPE_COUNT_; t++)
            for (size_t s = 0; s < n_sizes; s++, checks++) {
                check((kj_op)op, (kj_type)t, sizes[s], 0);
                int is_float = t == KJ_TYPE_F16 || t == KJ_TYPE_BF16 || t == KJ_TYPE_F32 || t == KJ_TYPE_F64;
                if (is_float && (op == KJ_OP_MAX || op == KJ_OP_MIN)) check((kj_op)op, (kj_type)t, sizes[s], 1);
            }
    printf("%zu reductions through NCCL (one rank) checked against the CPU\n", checks);
}

KJ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_one_rank))
