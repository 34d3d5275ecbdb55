/* Finding a kernel's parameter list in its source text, so that `kernjit launch` can name a parameter
 * ("parameter 3 'int n'") rather than only number it, and can count the parameters itself when the
 * driver cannot (cuFuncGetParamInfo needs CUDA 12.4). Best effort by design: a lexical scan (comments,
 * strings and preprocessor lines skipped), no macro expansion; the driver's count, when there is one,
 * always decides. Pure: no allocation, no global state. */
#ifndef KJ_LAUNCH_SIGNATURE_H
#define KJ_LAUNCH_SIGNATURE_H

#include <stddef.h>

#define LAUNCH_SIG_MAX 128 /* parameters whose text is kept; more are counted */

typedef struct launch_signature {
    size_t count;                 /* parameters declared */
    size_t start[LAUNCH_SIG_MAX]; /* each parameter's text: source[start, start + len) */
    size_t len[LAUNCH_SIG_MAX];
} launch_signature;

/* Looks for `__global__ ... NAME(` where NAME is entry's last name before any template arguments
 * ("scale<float,256>" -> scale, "ns::k" -> k). want >= 0: the first declaration with exactly that
 * many parameters (overloads, a declaration before the definition); want < 0: every declaration
 * found must have the same count. Returns 0 and fills out, or -1: not found, ambiguous, or a count
 * that text cannot give (a parameter pack, "...", or a parameter that looks like a macro, ARGS). */
int launch_find_signature(const char *source, size_t len, const char *entry, long want, launch_signature *out);

/* Parameter i's text on one line (comments dropped, blanks collapsed), cut with "..." to fit size. */
void launch_signature_param(const char *source, const launch_signature *sig, size_t i, char *buf, size_t size);

#endif
