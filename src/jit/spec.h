/* A kernel source's metadata block: `//@kernjit` lines that the service reads as data.
 *
 *   //@kernjit summary  Parallel reductions (PMPP chapter 10)
 *   //@kernjit entry    reduce_coarsened reduce_fast        entry points (extern "C")
 *   //@kernjit param    OP sum max min prod = sum           a macro that changes the result
 *   //@kernjit tune     BLOCK_SIZE pow2 32..1024 = 256      a performance knob the tuner varies
 *   //@kernjit tune     COARSE_FACTOR 1 2 4 8 16 32 = 8     (values: a list, `pow2 A..B` or `A..B`)
 *   //@kernjit launch   WAVES pow2 1..256 = 1               a knob of the launch alone (the grid), which
 *                                                           the tuner varies and the compiler never sees
 *   //@kernjit require  BLOCK_SIZE * COARSE_FACTOR <= 32768 a constraint between macro values
 *   //@kernjit rdc                                          needs the device runtime (-rdc, cudadevrt)
 *   //@kernjit limit    pending-launches 16384              context limits to set before launching
 *   //@kernjit shared-dynamic TILE * (TILE + 1) * 4         bytes of dynamic shared memory per block
 *   //@kernjit carveout max-shared                          preferred L1/shared split: PERCENT, max-shared,
 *                                                           max-l1 or default
 *   //@kernjit pdl      reduce_fast                         these entries (none listed: every entry) wait
 *                                                           for the work before them themselves
 *   //@kernjit whole-file                                   compile every entry together (by default a
 *                                                           request compiles its entry alone: trim.h)
 *
 * shared-dynamic and carveout apply to every entry, or to one entry when written `ENTRY: ...`
 * (`//@kernjit shared-dynamic transpose_padded: TILE_DIM * (TILE_DIM + 1) * ELEM_BYTES`); a scoped
 * line wins over an unscoped one. The expression is evaluated once the request's macros are known
 * (expr.h syntax); the kernel pipeline opts the function in to that much dynamic shared memory,
 * applies the carveout, and launches with that size when the launch asks for none.
 *
 * pdl (programmatic dependent launch) promises that the entry executes `griddepcontrol.wait` before
 * it touches global memory (common.cuh: kj_wait_for_prior_grids). On devices that have it (compute
 * capability 9.0 and later) kernjit then launches the entry with programmatic stream serialization:
 * it may be scheduled while the kernel before it in the stream is still finishing, which hides the
 * launch latency of back-to-back calls. A kernel without the wait must not be marked: it could read
 * memory that the kernel before it has not finished writing.
 *
 * A source without any such line (an ad-hoc kernel file) has an empty spec: any well-formed macro is
 * accepted and any entry may be asked for. */
#ifndef KJ_SPEC_H
#define KJ_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit.h"

#define KJ_MAX_VALUE_LEN 64
#define KJ_MAX_DEFINE_VALUE_LEN 256
#define KJ_MAX_VALUES 1024
/* Entries, macros, requirements and launch-attribute lines a block may declare, each: bounded so that
 * no source makes the metadata's lookups (linear) cost more than a few milliseconds. */
#define KJ_MAX_ITEMS 1024

typedef struct kj__param {
    char *name;
    char **values;
    size_t value_count;
    char *default_value;
    int tunable;
    int launch; /* `launch`: tunable, read by the host when it launches; not a macro of the compile */
} kj__param;

/* A launch attribute from the metadata: for one entry, or for every entry without its own line. */
typedef struct kj__launch_attr {
    char *entry; /* NULL: every entry without a line of its own */
    char *expr;  /* shared-dynamic: the byte-count expression; NULL for carveout */
    int value;   /* carveout: percent 0..100, or KJ__CARVEOUT_DEFAULT */
    int line;    /* where it is written, for messages */
} kj__launch_attr;

/* The values of CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT (CUshared_carveout): a percentage
 * of the largest shared-memory capacity, or -1 for the driver's choice. UNSET: no line applies, so
 * the attribute is left as it is. */
#define KJ__CARVEOUT_DEFAULT (-1)
#define KJ__CARVEOUT_UNSET (-2)
/* The most dynamic shared memory a line may ask for: cuFuncSetAttribute takes an int. */
#define KJ__SHARED_DYNAMIC_MAX 2147483647LL

typedef struct kj__spec {
    int present; /* the source has a metadata block */
    char *summary;
    char **entries;
    size_t entry_count;
    kj__param *params;
    size_t param_count;
    char **requires;
    size_t require_count;
    int rdc;
    uint64_t pending_launches;       /* 0: not set */
    kj__launch_attr *shared_dynamic; /* `shared-dynamic` lines */
    size_t shared_dynamic_count;
    kj__launch_attr *carveouts; /* `carveout` lines */
    size_t carveout_count;
    int pdl_all;        /* `pdl` without entries */
    char **pdl_entries; /* `pdl ENTRY...` */
    size_t pdl_count;
    int pdl_line;   /* the first `pdl` line, for messages */
    int whole_file; /* `whole-file`: never compile an entry alone */
} kj__spec;

/* Parses the metadata of text; origin names the file in messages ("reduce.cu:4: ...").
 * KJ_ERR_SPEC on a malformed line. */
kj_status kj__spec_parse(const char *origin, const char *text, size_t len, kj__spec **out);
void kj__spec_free(kj__spec *spec);

const kj__param *kj__spec_find_param(const kj__spec *spec, const char *name);
int kj__spec_has_entry(const kj__spec *spec, const char *entry);
/* The declared entries as "a, b, c", for messages; the caller frees it. NULL when out of memory or
 * there are none. */
char *kj__spec_entry_list(const kj__spec *spec);

/* Validates the request's macros against the spec and returns the canonical list: every declared
 * parameter (the default where none was given) and, for a source without metadata, the given ones,
 * sorted by name, as "NAME=VALUE" strings. kernel names the kernel in messages.
 * KJ_ERR_INVALID_DEFINE names the macro and the allowed values. Free with kj__strings_free. */
kj_status kj__spec_resolve(const kj__spec *spec, const char *kernel, const kj_define *defines, size_t count,
                           char ***canonical, size_t *canonical_count);

/* Takes the `launch` parameters out of a canonical NAME=VALUE list (after the requirements and the
 * shared-dynamic expressions have seen them): what is left is what the compiler gets and the cache key
 * holds, so the variants that differ only in how they are launched share one binary. */
void kj__spec_drop_launch(const kj__spec *spec, char **canonical, size_t *count);

/* The dynamic shared memory (bytes) the metadata asks for `entry`, evaluated over the canonical
 * NAME=VALUE list of kj__spec_resolve; 0 when no line applies. kernel names the kernel in messages.
 * KJ_ERR_INVALID_DEFINE when these macro values make the expression fail (division by zero) or give
 * a size outside 0..2^31-1, naming the expression, the values and the result. */
kj_status kj__spec_shared_dynamic(const kj__spec *spec, const char *kernel, const char *entry, char *const *canonical,
                                  size_t count, uint32_t *bytes);
/* The `shared-dynamic` expression that applies to `entry` (its own line, else the unscoped one), as
 * written; NULL when none does. */
const char *kj__spec_shared_dynamic_expr(const kj__spec *spec, const char *entry);
/* The carveout for `entry`: 0..100, KJ__CARVEOUT_DEFAULT, or KJ__CARVEOUT_UNSET when no line applies. */
int kj__spec_carveout(const kj__spec *spec, const char *entry);
/* Whether `entry` is marked `pdl`: it waits for the grids before it (griddepcontrol.wait). */
int kj__spec_pdl(const kj__spec *spec, const char *entry);
/* Finds the first `require` that the canonical NAME=VALUE list breaks, without recording an error:
 * returns its index, -1 when all hold, or -2 when an expression cannot be evaluated, with err
 * naming it and why ("`10 / A > 0` cannot be evaluated with these values (division by zero ...)"). The tuner uses it to leave such variants out of a search space. */
long kj__spec_broken_requirement(const kj__spec *spec, char **canonical, size_t count, char *err, size_t err_size);

/* Checks a name as a C identifier of at most 64 characters. */
int kj__is_identifier(const char *name);

#endif
