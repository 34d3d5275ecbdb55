/* The binary for a prepared request (jit/prepare.h): from a seed, from another runtime of the process
 * obtaining the same key at the same moment (flight.h), from the disk cache, from the remote tier,
 * else compiled (and linked) here, stored and pushed. Also the uncached output kj_emit asks for. */
#ifndef KJ_BINARY_H
#define KJ_BINARY_H

#include <limits.h>
#include <stddef.h>

#include "jit/prepare.h"
#include "jit/resources.h"
#include "kernjit.h"

/* A binary and what came with it. */
typedef struct kj__binary {
    char *data;
    size_t size;
    int is_ptx;
    char *lowered_name; /* the entry's, when it is a name expression */
    char **lowered;     /* each name expression's (kj__prepared.expressions), in order */
    size_t lowered_count;
    char *log;
    kj__resources resources; /* each kernel's, from the compiler and linker or from the entry */
    kj_origin origin;
    int stored;
    double compile_ms, link_ms;
    char path[PATH_MAX];
} kj__binary;

void kj__binary_free(kj__binary *b);

/* The binary for p's key, into *out (freed on failure). */
kj_status kj__obtain_binary(kj_runtime *rt, const kj__prepared *p, kj__binary *out);

/* PTX or LTO-IR of the program's one unit, compiled now (the cache keeps binaries only), into *out. */
kj_status kj__emit_unit(kj_runtime *rt, const kj__prepared *p, kj_emit_format format, kj__binary *out);

#endif
