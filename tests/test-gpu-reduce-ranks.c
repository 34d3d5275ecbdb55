/* kj_reduce_nccl across processes: two ranks, one process per GPU (forked before either makes any
 * CUDA call), the ncclUniqueId handed from rank 0 to rank 1 through a pipe. Both ranks make the same
 * random data from one seed, each reduces its half (sizes 1, 31, 2^24+7 per rank; every op and type)
 * and must get the CPU reference of the whole, within the float bound, and both the same bits (they
 * send their results to the parent, which compares). Skips (77) with fewer than 2 GPUs or without
 * NCCL. NCCL_NVLS_ENABLE=0: NVLink multicast stays off. */
#include "test_util.h"

#include <math.h>
#include <sys/wait.h>

#include "nccl_util.h"

#define RANKS 2
#define CHECKS (KJ_OP_COUNT_ * KJ_TYPE_COUNT_ * 3)

static const size_t per_rank[3] = {1, 31, (1u << 24) + 7};

/* The GPUs there are, counted in a child process, so that this one makes no CUDA call before it
 * forks the ranks. */
static int count_devices(void) {
    int fd[2], count = 0;
    if (pipe(fd) != 0) return 0;
    pid_t pid = fork();
    if (pid == 0) {
        int n = 0;
        if (kj_device_count(&n) != KJ_OK) n = 0;
        ssize_t w = write(fd[1], &n, sizeof n);
        _exit(w == sizeof n ? 0 : 1);
    }
    close(fd[1]);
    if (read(fd[0], &count, sizeof count) != sizeof count) count = 0;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    return count;
}

#define RANK_CHECK(cond, ...)                                                                                          \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "rank %d: ", rank);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, " (%s)\n", kj_last_error());                                                               \
            _exit(1);                                                                                                  \
        }                                                                                                              \
    } while (0)

/* One rank: its device, a communicator from the id, then every check; its results to `out`. */
static void rank_main(int rank, int id_in, int id_out, int out, uint64_t seed) {
    close(rank == 0 ? id_in : id_out); /* rank 1 sees the end of the pipe, not a wait, when rank 0 dies */
    kj_runtime *rt = kj_test_runtime(NULL, rank, NULL);
    RANK_CHECK(rt, "no runtime on device %d", rank);
    size_t max = per_rank[2];
    void *host = malloc(RANKS * max * 8);
    kj_devptr part = 0;
    RANK_CHECK(host && kj_mem_alloc(rt, max * 8, &part) == KJ_OK, "memory"); /* makes the context current */
    kj_test_nccl nccl;
    RANK_CHECK(kj_test_nccl_open(&nccl) == 0 && nccl.get_unique_id && nccl.comm_init_rank, "NCCL");
    kj_test_nccl_id id;
    if (rank == 0) {
        RANK_CHECK(nccl.get_unique_id(&id) == 0, "ncclGetUniqueId");
        RANK_CHECK(write(id_out, &id, sizeof id) == sizeof id, "writing the id");
    } else {
        RANK_CHECK(read(id_in, &id, sizeof id) == sizeof id, "reading the id");
    }
    void *comm = NULL;
    RANK_CHECK(nccl.comm_init_rank(&comm, RANKS, id, rank) == 0, "ncclCommInitRank");
    uint64_t rng = seed;
    for (int op = 0; op < KJ_OP_COUNT_; op++)
        for (int t = 0; t < KJ_TYPE_COUNT_; t++)
            for (int s = 0; s < 3; s++) {
                size_t n = per_rank[s], es = kj_type_size((kj_type)t), rs = kj_result_size((kj_type)t);
                kj_test_fill_reduction(host, (kj_type)t, (kj_op)op, RANKS * n, 0, &rng); /* the same on both */
                RANK_CHECK(kj_memcpy_htod(rt, part, (char *)host + (size_t)rank * n * es, n * es) == KJ_OK, "upload");
                unsigned char want[8], got[8];
                double abs_sum;
                kjtest_reduce_reference((kj_op)op, (kj_type)t, host, RANKS * n, want, &abs_sum);
                memset(got, 0xA5, sizeof got);
                RANK_CHECK(kj_reduce_nccl(rt, comm, part, n, (kj_op)op, (kj_type)t, got, NULL) == KJ_OK, "%s %s n=%zu",
                           kj_op_name((kj_op)op), kj_type_name((kj_type)t), n);
                double w = kjtest_result_as_double((kj_type)t, want), g = kjtest_result_as_double((kj_type)t, got);
                double tol = kjtest_reduce_tolerance((kj_op)op, (kj_type)t, RANKS * n, w, abs_sum, NULL);
                RANK_CHECK(memcmp(want, got, rs) == 0 || fabs(g - w) <= tol,
                           "%s %s n=%zu per rank: GPU %.17g, CPU %.17g, "
                           "tolerance %.3g",
                           kj_op_name((kj_op)op), kj_type_name((kj_type)t), n, g, w, tol);
                RANK_CHECK(write(out, got, 8) == 8, "writing the result");
            }
    nccl.comm_destroy(comm);
    kj_mem_free(rt, part);
    kj_runtime_destroy(rt);
    free(host);
    _exit(0);
}

static void test_two_ranks(void **state) {
    (void)state;
    int devices = count_devices();
    if (devices < RANKS) {
        printf("needs 2 GPUs (found %d): skipping\n", devices);
        exit(KJ_TEST_SKIP);
    }
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    uint64_t seed = kj_test_seed();
    int id_pipe[2], out[RANKS][2];
    assert_int_equal(pipe(id_pipe), 0);
    pid_t pids[RANKS];
    fflush(NULL);
    for (int r = 0; r < RANKS; r++) {
        assert_int_equal(pipe(out[r]), 0);
        if ((pids[r] = fork()) == 0) {
            close(out[r][0]);
            rank_main(r, id_pipe[0], id_pipe[1], out[r][1], seed);
        }
        close(out[r][1]);
    }
    close(id_pipe[0]);
    close(id_pipe[1]);
    static unsigned char results[RANKS][CHECKS][8];
    for (int r = 0; r < RANKS; r++) {
        size_t got = 0;
        for (ssize_t n;
             got < sizeof results[r] && (n = read(out[r][0], (char *)results[r] + got, sizeof results[r] - got)) > 0;)
            got += (size_t)n;
        close(out[r][0]);
        int status;
        assert_int_equal(waitpid(pids[r], &status, 0), pids[r]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("rank %d failed (its message is above)", r);
        assert_int_equal(got, sizeof results[r]);
    }
    for (int i = 0; i < CHECKS; i++)
        if (memcmp(results[0][i], results[1][i], 8) != 0) fail_msg("check %d: the ranks' results differ", i);
    printf("%d reductions over 2 ranks checked against the CPU; both ranks got the same bits\n", CHECKS);
}

KJ_TEST_MAIN(kj_test_setup_dir, kj_test_teardown, cmocka_unit_test(test_two_ranks))
