/* kj_reduce_nccl and the NCCL loader on the stub driver, with tests/fake-nccl.c for NCCL
 * ($FAKE_NCCL; $FAKE_NCCL_OLD lacks ncclCommGetAsyncError); its refusals (another device, ranks
 * that disagree, a communicator in error) are rows of docs/bad-input.md, in test-bad-input-api.c. NCCL is loaded once per process, so
 * each case runs in a child process of its own, with its environment. The stub's reduce_fast
 * "reduces" a part to its element count and the fake's communicator stands for three ranks that hold
 * the same: a u32 sum of 5 elements is 15 over the ranks, a product 125, a max 5. */
#include "test_util.h"

#include <dlfcn.h>

#include "nccl_util.h"
#include "runtime/nccl_loader.h"
#include <sys/wait.h>

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                                            \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, " (last error: %s)\n", kj_last_error());                                                   \
            _exit(1);                                                                                                  \
        }                                                                                                              \
    } while (0)

/* Runs fn in a child process with NAME=VALUE pairs set (a NULL value unsets): it must exit 0. */
static void in_child(void (*fn)(void), const char *const *env) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        for (; env && env[0]; env += 2)
            if (env[1]) setenv(env[0], env[1], 1);
            else unsetenv(env[0]);
        fn();
        fflush(NULL);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static const char *fake(void) { return getenv("FAKE_NCCL"); }

/* A communicator of the fake on device 0, through the library kernjit loaded. */
static void *comm_on_device0(void) {
    kj_test_nccl n;
    void *comm = NULL;
    CHECK(kj_test_nccl_open(&n) == 0 && n.comm_init_all(&comm, 1, NULL) == 0 && comm, "ncclCommInitAll");
    return comm;
}

typedef struct setup {
    kj_runtime *rt;
    kj_devptr part;
    void *comm;
} setup;

static setup open_all(void) {
    const char *path = NULL;
    int version = 0;
    CHECK(kj_nccl_library(&path, &version) == KJ_OK, "kj_nccl_library");
    CHECK(version == 22703, "version %d", version);
    setup s = {kj_test_runtime(kj_test_dir, 0, NULL), 0, comm_on_device0()};
    CHECK(s.rt, "a runtime on the stub device");
    CHECK(kj_mem_alloc(s.rt, 64, &s.part) == KJ_OK, "kj_mem_alloc");
    return s;
}

static uint64_t reduce(setup *s, kj_op op, kj_type type) {
    uint64_t got = 0;
    CHECK(kj_reduce_nccl(s->rt, s->comm, s->part, 5, op, type, &got, NULL) == KJ_OK, "kj_reduce_nccl %s %s",
          kj_op_name(op), kj_type_name(type));
    return type == KJ_TYPE_I64 ? got : (uint32_t)got;
}

static void every_op(void) {
    setup s = open_all();
    for (int t = KJ_TYPE_I32; t <= KJ_TYPE_I64; t++) {
        kj_type type = (kj_type)t;
        CHECK(reduce(&s, KJ_OP_SUM, type) == 15, "sum %s", kj_type_name(type));
        CHECK(reduce(&s, KJ_OP_PROD, type) == 125, "prod %s", kj_type_name(type));
        CHECK(reduce(&s, KJ_OP_MAX, type) == 5, "max %s", kj_type_name(type));
        CHECK(reduce(&s, KJ_OP_MIN, type) == 5, "min %s", kj_type_name(type));
    }
    /* floats' max and min travel as ordered integers and come back as the same bits */
    CHECK(reduce(&s, KJ_OP_MAX, KJ_TYPE_F32) == 5, "max f32 (as ordered integers)");
    CHECK(reduce(&s, KJ_OP_MIN, KJ_TYPE_F16) == 5, "min f16 (an f32 partial, as ordered integers)");
    CHECK(reduce(&s, KJ_OP_MIN, KJ_TYPE_BF16) == 5, "min bf16 (an f32 partial, as ordered integers)");
    CHECK(reduce(&s, KJ_OP_MAX, KJ_TYPE_BF16) == 5, "max bf16 (an f32 partial, as ordered integers)");
    kj_runtime_destroy(s.rt);
}

static void test_reduces_across_ranks(void **state) {
    (void)state;
    const char *env[] = {"KERNJIT_NCCL", fake(), NULL};
    in_child(every_op, env);
}

static void expect_load_failure(const char *needle) {
    const char *path = NULL;
    CHECK(kj_nccl_library(&path, NULL) == KJ_ERR_UNSUPPORTED, "kj_nccl_library loaded %s", path ? path : "?");
    CHECK(strstr(kj_last_error(), needle), "the message lacks '%s'", needle);
    kj_runtime *rt = kj_test_runtime(kj_test_dir, 0, NULL);
    uint64_t got;
    CHECK(kj_reduce_nccl(rt, (void *)rt, 0, 0, KJ_OP_SUM, KJ_TYPE_U32, &got, NULL) == KJ_ERR_UNSUPPORTED,
          "kj_reduce_nccl without NCCL");
    kj_runtime_destroy(rt);
}

static void lacks_a_function(void) { expect_load_failure("lacks ncclCommGetAsyncError: NCCL 2.x is needed"); }
static void named_path_missing(void) {
    expect_load_failure("NCCL: cannot load KERNJIT_NCCL=/nonexistent/libnccl.so.2");
}
/* With no NCCL on the loader's path nor in any Python environment: where it looked, and the way out. */
static void nowhere(void) {
    const char *path = NULL;
    if (kj_nccl_library(&path, NULL) == KJ_OK) {
        printf("an NCCL is installed here (%s): the message of a missing one is not checked\n", path);
        return;
    }
    CHECK(strstr(kj_last_error(), "NCCL not found: set KERNJIT_NCCL to the path of libnccl.so.2"), "the way out");
    CHECK(strstr(kj_last_error(), "nvidia/nccl/lib/libnccl.so.2 under"), "where it looked");
}

static void test_load_failures(void **state) {
    (void)state;
    const char *old[] = {"KERNJIT_NCCL", getenv("FAKE_NCCL_OLD"), NULL};
    in_child(lacks_a_function, old);
    const char *missing[] = {"KERNJIT_NCCL", "/nonexistent/libnccl.so.2", NULL};
    in_child(named_path_missing, missing);
    const char *none[] = {"KERNJIT_NCCL", NULL, "PATH",       "/nonexistent", "VIRTUAL_ENV", NULL,
                          "CONDA_PREFIX", NULL, "PYTHONPATH", NULL,           NULL};
    in_child(nowhere, none);
}

/* The nvidia-nccl package's copy is found in a Python environment: one whose python3 is on PATH, and
 * one named by VIRTUAL_ENV (the search alone: a libnccl.so.2 on the loader's path would be loaded
 * before it, as on this machine maybe). */
static char env_root[1024];

static void found_in_package(void) {
    char path[4096], looked[1400];
    CHECK(kj__nccl_find_in_packages(path, sizeof path, looked, sizeof looked) == 0, "not found; looked in %s", looked);
    CHECK(strncmp(path, env_root, strlen(env_root)) == 0, "found %s, not the copy under %s", path, env_root);
    CHECK(strstr(path, "/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"), "found %s", path);
}

static void not_in_package(void) {
    char path[4096], looked[1400];
    CHECK(kj__nccl_find_in_packages(path, sizeof path, looked, sizeof looked) != 0, "found %s", path);
    CHECK(strstr(looked, "/nonexistent/lib/python3*/{site,dist}-packages"), "looked in %s", looked);
}

/* An NCCL the process loaded already is the one used, whatever else is installed. */
static void already_loaded_first(void) {
    char copy[1024];
    snprintf(copy, sizeof copy, "%.900s/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2", env_root);
    CHECK(dlopen(copy, RTLD_NOW | RTLD_LOCAL), "dlopen %s", copy);
    const char *path = NULL;
    CHECK(kj_nccl_library(&path, NULL) == KJ_OK && strcmp(path, copy) == 0, "loaded %s, not %s", path, copy);
}

/* A Python environment at root (a kj_test_dir folder: short) holding the package's copy: the fake. */
static void make_environment(const char *root) {
    char cmd[4096];
    const char *lib = "lib/python3.11/site-packages/nvidia/nccl/lib";
    int n = snprintf(cmd, sizeof cmd,
                     "mkdir -p '%s/%s' '%s/bin' && cp '%s' '%s/%s/libnccl.so.2' && touch '%s/bin/python3'", root, lib,
                     root, fake(), root, lib, root);
    assert_true(n > 0 && (size_t)n < sizeof cmd);
    assert_int_equal(system(cmd), 0);
}

static void test_found_in_python_environment(void **state) {
    (void)state;
    assert_true(strlen(kj_test_dir) < 512);
    snprintf(env_root, sizeof env_root, "%s/venv", kj_test_dir);
    make_environment(env_root);
    char bin[1100];
    snprintf(bin, sizeof bin, "%s/bin", env_root);
    const char *on_path[] = {"PATH", bin, "VIRTUAL_ENV", NULL, "CONDA_PREFIX", NULL, "PYTHONPATH", NULL, NULL};
    in_child(found_in_package, on_path);
    const char *virtual_env[] = {"PATH", "", "VIRTUAL_ENV", env_root, "CONDA_PREFIX", NULL, "PYTHONPATH", NULL, NULL};
    in_child(found_in_package, virtual_env);
    const char *elsewhere[] = {"PATH",       "",   "VIRTUAL_ENV", "/nonexistent", "CONDA_PREFIX", NULL,
                               "PYTHONPATH", NULL, NULL};
    in_child(not_in_package, elsewhere);
    const char *loaded[] = {"KERNJIT_NCCL", "/nonexistent/libnccl.so.2", NULL};
    in_child(already_loaded_first, loaded);
}

static int setup_dir(void **state) {
    if (!fake() || !getenv("FAKE_NCCL_OLD")) {
        fprintf(stderr, "FAKE_NCCL and FAKE_NCCL_OLD must name tests/fake-nccl.c's builds\n");
        return -1;
    }
    return kj_test_setup_dir(state);
}

KJ_TEST_MAIN(setup_dir, kj_test_teardown, cmocka_unit_test(test_reduces_across_ranks),
             cmocka_unit_test(test_load_failures), cmocka_unit_test(test_found_in_python_environment))
