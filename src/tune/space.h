/* The variants of a kernel: the product of its tunables' values (and of params given several values),
 * with the other macros held fixed, each checked against the metadata's `require` lines. Shared by
 * offline builds (kj_compile_all) and the tuner. */
#ifndef KJ_SPACE_H
#define KJ_SPACE_H

#include "kernjit/tune.h"
#include "jit/spec.h"

/* kj_space_create with three knobs for the tuner:
 * - pin: NULL-terminated names of tunables held at their defaults unless the caller gives them (a
 *   target's entry ignores them: timing them would time one binary several times);
 * - single_params: a param given several values is KJ_ERR_USAGE (tuning one problem at a time);
 * - vary_launch: the `launch` parameters vary over their values too (kj_space_create holds them at
 *   their defaults unless given: for offline builds, the variants that differ only in them are one
 *   binary). */
kj_status kj__space_create(kj_runtime *rt, const char *kernel, const kj_define *fixed, size_t fixed_count,
                           const char *const *pin, int single_params, int vary_launch, kj_space **out);

/* The macros held fixed, canonical "NAME=VALUE ..." sorted by name ("" when none): every param, and
 * the tunables the caller pinned to one value; tunables pinned by `pin` or with one allowed value
 * are left out. The tuning database's `fixed` key. */
const char *kj__space_fixed(const kj_space *space);
/* The kernel's metadata (entries, params). */
const kj__spec *kj__space_spec(const kj_space *space);
/* The index of the variant whose coordinates are coords. */
size_t kj__space_index(const kj_space *space, const size_t *coords);

#endif
