/* The ABI rule of every struct that the caller allocates and the library reads or fills (options,
 * requests, configs, filters; info, stats, results, reports): it starts with `size_t size`, which the
 * caller sets to the sizeof it was compiled with (the public KJ_*_INIT macros do). A struct only ever
 * grows at its end, and 0 means "the default" for every field added after 0.2.0, so that:
 * - a caller built against older headers (a smaller struct) gets the defaults for what it lacks, and
 *   its outputs are not written past its size;
 * - a caller built against newer headers (a larger struct) works as long as it leaves the fields this
 *   library does not know at 0; if it set one, the call is refused rather than the field ignored.
 * As Linux's copy_struct_from_user / copy_struct_to_user. One pair of helpers does it for all.
 *
 * Growing a struct: in units of 8 bytes, never into padding. Every sized struct is a multiple of 8
 * bytes with no implicit padding at its end (src/base/layout.c asserts it for each): 4 bytes that
 * would be padding are a field named `reserved`, which a later 4-byte field replaces. Otherwise a
 * field added into the old tail padding would lie inside an old caller's size, and the library would
 * read the padding that caller never set (a binding that sets fields one by one leaves it as it was)
 * as the new field. A caller's size must be a multiple of 8, so that it never ends inside a field. */
#ifndef KJ_SIZED_H
#define KJ_SIZED_H

#include <stddef.h>

#include "base/error.h"

/* How much larger than ours a caller's struct may be: a bound on what is read past our end, so that
 * a garbage size (a struct not initialized) is refused instead of read far beyond. */
#define KJ__SIZED_MAX_GROWTH 4096u
/* Every size a sized struct has or will have is a multiple of this: a caller's size that is not ends
 * inside a field (half a pointer, say). */
#define KJ__SIZED_UNIT 8u

/* Copies the caller's input struct into *copy (ours bytes, our layout): copy starts as *defaults
 * (NULL: zeros), then min(caller's size, ours) bytes are copied over it (the size field becomes
 * ours), so the fields an older caller's struct lacks take their defaults. caller must not be NULL.
 * Errors: KJ_ERR_USAGE for a size of 0 (or too small to hold the size field, implausibly large, or
 * not a multiple of KJ__SIZED_UNIT), naming `init` ("KJ_REQUEST_INIT"), and for a non-zero byte past
 * ours in a larger caller struct. */
kj_status kj__sized_read(void *copy, size_t ours, const void *caller, const void *defaults, const char *type,
                         const char *init);
/* Checks the size field of an output struct before the work that fills it: the errors of
 * kj__sized_read but for the bytes past ours, which are the library's to clear. */
kj_status kj__sized_check(const void *caller, size_t ours, const char *type, const char *init);
/* Writes *full (ours bytes) to a caller's output struct checked by kj__sized_check: min(size, ours)
 * bytes, the caller's size field kept, and zeros in the caller's bytes past ours (fields this library
 * does not know read as 0). */
void kj__sized_write(void *caller, const void *full, size_t ours);

/* Fills the first `size` bytes of a caller's struct (size: the caller's sizeof) with *defaults (ours
 * bytes, our layout), the size field set to size and bytes past ours zeroed: the public *_init
 * functions, which must not write past a smaller struct of older headers. Errors: those of
 * kj__sized_check for size. */
kj_status kj__sized_init(void *caller, size_t size, const void *defaults, size_t ours, const char *type,
                         const char *init);

/* As kj__sized_read, but when the caller's size is ours (a program built against these headers: the
 * common case, and the hot paths' kj_kernel_get and kj_kernel_launch) nothing is copied and *view is
 * the caller's struct; otherwise *view is copy. */
kj_status kj__sized_view(const void *caller, const void **view, void *copy, size_t ours, const void *defaults,
                         const char *type, const char *init);

/* Points `ptr` (a const pointer to a caller's input struct, not NULL) at a struct of our layout: the
 * caller's own or a copy in `copy` (a local of the type), the fields a smaller struct lacks taking
 * the values of INIT (the struct's KJ_*_INIT: its documented defaults); returns the error from the
 * calling function when the size is refused. */
#define KJ__SIZED_INPUT(ptr, copy, type, INIT)                                                                         \
    do {                                                                                                               \
        static const type defaults_ = INIT;                                                                            \
        const void *view_;                                                                                             \
        kj_status sized_status_ = kj__sized_view((ptr), &view_, &(copy), sizeof(copy), &defaults_, #type, #INIT);      \
        if (sized_status_ != KJ_OK) return sized_status_;                                                              \
        (ptr) = view_;                                                                                                 \
    } while (0)
/* kj__sized_check of an output struct of `type`. */
#define KJ__SIZED_CHECK(caller, type, INIT) kj__sized_check((caller), sizeof(type), #type, #INIT)
/* kj__sized_write of a local struct of our layout. */
#define KJ__SIZED_WRITE(caller, full) kj__sized_write((caller), &(full), sizeof(full))

#endif /* KJ_SIZED_H */
