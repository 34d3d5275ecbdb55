/* NCCL's functions for making communicators, taken from the library kernjit loaded (kj_nccl_library),
 * so that a test's communicators are that library's: for the tests of kj_reduce_nccl, with NCCL or
 * with tests/fake-nccl.c. */
#ifndef KJ_TEST_NCCL_UTIL_H
#define KJ_TEST_NCCL_UTIL_H

#include <dlfcn.h>
#include <stdio.h>

#include "kernjit/ops.h"

typedef struct kj_test_nccl_id {
    char internal[128]; /* ncclUniqueId */
} kj_test_nccl_id;

typedef struct kj_test_nccl {
    const char *path; /* the library kernjit loaded */
    int (*get_unique_id)(kj_test_nccl_id *id);
    int (*comm_init_rank)(void **comm, int ranks, kj_test_nccl_id id, int rank);
    int (*comm_init_all)(void **comms, int count, const int *devices);
    int (*comm_destroy)(void *comm);
} kj_test_nccl;

/* 0 with the functions, or -1 with why on stdout (no NCCL: kj_nccl_library's message). */
static inline int kj_test_nccl_open(kj_test_nccl *n) {
    if (kj_nccl_library(&n->path, NULL) != KJ_OK) {
        printf("%s\n", kj_last_error());
        return -1;
    }
    void *h = dlopen(n->path, RTLD_NOW | RTLD_LOCAL); /* the same library: already loaded */
    if (!h) {
        printf("dlopen %s: %s\n", n->path, dlerror());
        return -1;
    }
    n->get_unique_id = (int (*)(kj_test_nccl_id *))dlsym(h, "ncclGetUniqueId");
    n->comm_init_rank = (int (*)(void **, int, kj_test_nccl_id, int))dlsym(h, "ncclCommInitRank");
    n->comm_init_all = (int (*)(void **, int, const int *))dlsym(h, "ncclCommInitAll");
    n->comm_destroy = (int (*)(void *))dlsym(h, "ncclCommDestroy");
    return n->comm_init_all && n->comm_destroy ? 0 : -1;
}

#endif
