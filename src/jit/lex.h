/* Lexical views of CUDA C++ source text, for the scans kernjit makes before NVRTC sees it (includes:
 * includes.c; entry points, device-side launches, -minimal: prepare.c; the entry alone: trim.c): the
 * same text with comments, or also code under `#if 0`, turned into spaces. Newlines stay, so offsets
 * and line numbers are the original ones. */
#ifndef KJ_LEX_H
#define KJ_LEX_H

#include <stddef.h>

/* A copy of text[0..len) (NUL-terminated) with every comment blanked; string and character literals
 * are kept (a "//" inside a string is no comment). With skip_if0, lines between `#if 0` and its
 * `#else`/`#elif`/`#endif` are blanked too (nesting counted). NULL when out of memory. */
char *kj__lex_blank(const char *text, size_t len, int skip_if0);

/* Blanks, in place, the lines of s[0..len) (comments blanked already) between `#if 0` and its
 * `#else`/`#elif`/`#endif`: kj__lex_blank's skip_if0 on a copy made without it. */
void kj__lex_blank_if0(char *s, size_t len);

/* What the (blanked) text shows, from one pass over it:
 * - KJ__LEX_LAUNCHES: it launches kernels from the device: a `<<<` launch, or a device-runtime launch
 *   call (cudaLaunchDevice, cudaGetParameterBuffer, cudaStreamTailLaunch, cudaStreamFireAndForget).
 *   NVRTC compiles device code only, so any `<<<` is a device-side launch.
 * - KJ__LEX_NOT_MINIMAL: it may not compile under NVRTC's -minimal, which leaves out texture and
 *   surface functions, the device runtime's functions and launches, and the CUDA API's types
 *   (cudaError_t): an identifier starting with "cuda", a tex/surf call, or a launch. A guess that
 *   errs on the safe side only in speed: a -minimal compile that fails is compiled again without it.
 * A launch sets both. */
enum { KJ__LEX_LAUNCHES = 1, KJ__LEX_NOT_MINIMAL = 2 };
unsigned kj__lex_features(const char *blanked);

#endif
