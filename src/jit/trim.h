/* Compiling only the entry asked for. A kernel file with several entries costs NVRTC the sum of
 * them (the built-in reduction: 8 entries, about twice the time of reduce_fast alone), while a
 * request needs one. So kernjit hands NVRTC the file with the definitions of the other entries
 * blanked (spaces; new lines and everything else kept, so line numbers and the preprocessor's state
 * are the file's own). The rule, lexical, on the text outside comments and `#if 0`:
 * - an entry's definition runs from the start of its declaration (after the last `;`, `{`, `}` or
 *   preprocessor line before its name) to the brace that closes its body; only a declaration with
 *   `__global__` before the name counts, and only when the body holds no preprocessor line other
 *   than `#pragma unroll` / `#pragma nounroll` (which belong to the loops removed with it);
 * - an entry stays when its name appears anywhere in what stays, in the file or any header it
 *   includes (a device-side launch, a pointer to it, a prototype, a macro), repeated until nothing
 *   changes: what stays never names what went.
 * A name made by the preprocessor (token pasting) is not seen: the compile then fails for want of
 * a declaration, and kernjit compiles the whole file instead (runtime/binary.c). */
#ifndef KJ_TRIM_H
#define KJ_TRIM_H

#include <stddef.h>

/* The rule's version, part of the cache key whenever an entry is compiled alone: a new rule must
 * not meet binaries of the old one. */
#define KJ_TRIM_RULE 1

/* text[0..len) with the definitions of entries[] other than keep blanked, by the rule above; code is
 * the same text with comments and `#if 0` blanked (kj__lex_blank with skip_if0), and header_codes
 * the headers' texts blanked so, searched for names too. Returns 1 with *out a malloc'd copy
 * (NUL-terminated, len bytes) when at least one definition was blanked; 0 with *out NULL when
 * nothing can be left out; -1 when out of memory. */
int kj__trim_to_entry(const char *text, const char *code, size_t len, const char *const *entries, size_t entry_count,
                      const char *keep, const char *const *header_codes, size_t header_count, char **out);

#endif
