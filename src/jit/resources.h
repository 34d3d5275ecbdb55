/* The resources each kernel of a binary uses (kj_resource_usage), known at compile time without a
 * GPU, from what the tools print when asked:
 * - NVRTC runs ptxas with --ptxas-options=-v (kernjit adds it to every cubin compile): per function,
 *   "Compiling entry function 'k'" marks a kernel, then its stack frame, spill stores and loads,
 *   registers, cumulative stack and static shared memory;
 * - nvJitLink with -verbose reports each kernel of the linked binary: registers, stack, shared and
 *   local memory after linking (a call into another unit can raise them), but not spills, which stay
 *   as ptxas gave them. The device runtime's kernels are listed too and are left out.
 * Those lines are information, not warnings: they are taken out of the logs that reach the user.
 * The numbers are stored in the cache entry's description, so that a disk hit reports them too. */
#ifndef KJ_RESOURCES_H
#define KJ_RESOURCES_H

#include <stddef.h>

#include "kernjit.h"
#include "base/util.h"

typedef struct kj__resources {
    kj_resource_usage *items; /* symbols malloc'd */
    size_t count;
} kj__resources;

/* Adds the kernels ptxas reports in an NVRTC log to res and returns the log without ptxas's info
 * lines (malloc'd; NULL when out of memory, res then unchanged). log may be NULL (returns ""). */
char *kj__resources_from_ptxas(const char *log, kj__resources *res);

/* Updates the kernels of res from nvJitLink's -verbose info log for a link targeting arch, and
 * returns the log's other lines (warnings; malloc'd, "" when none, NULL when out of memory). */
char *kj__resources_from_linker(const char *info, const char *arch, kj__resources *res);

/* Appends the kernels of res to a cache entry's description, one "resources: " line each. */
void kj__resources_describe(const kj__resources *res, kj__buf *description);
/* Reads them back from a description (an entry without them gives none). 0, or -1 out of memory. */
int kj__resources_from_description(const char *description, kj__resources *res);

/* Appends a copy of every kernel of from to to. 0, or -1 out of memory (to unchanged). */
int kj__resources_add(kj__resources *to, const kj__resources *from);
/* The kernel whose symbol is `symbol`, or NULL. */
const kj_resource_usage *kj__resources_find(const kj__resources *res, const char *symbol);
void kj__resources_free(kj__resources *res);

#endif
