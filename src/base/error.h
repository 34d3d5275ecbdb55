/* Internal error reporting: every failure goes through kj__fail, which records a message for
 * kj_last_error() (per thread) together with the file and line that raised it. */
#ifndef KJ_ERROR_H
#define KJ_ERROR_H

#include "kernjit.h"

#if defined(__GNUC__)
#define KJ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KJ_PRINTF(f, a)
#endif

/* The bound of a message (kj_last_error's before the compiler log, a log line), NUL included: longer
 * ones are shortened in their longest words (kj_message_vformat), so the reason stays. */
#define KJ__MESSAGE_MAX 2048

/* Records the message (printf format) as this thread's last error and returns status. */
kj_status kj__fail(kj_status status, const char *file, int line, const char *fmt, ...) KJ_PRINTF(4, 5);
/* Appends text (a compiler log) to this thread's last error, on a new line. */
void kj__error_append(const char *text);
/* Where the last error was raised ("src/cache/cache.c:120"), for debug logs. */
const char *kj__error_where(void);

#define KJ_FAIL(status, ...) kj__fail((status), __FILE__, __LINE__, __VA_ARGS__)
#define KJ_RETURN_IF(cond, status, ...)                                                                                \
    do {                                                                                                               \
        if (cond) return KJ_FAIL((status), __VA_ARGS__);                                                               \
    } while (0)
/* Passes a failure up unchanged: its message already names what went wrong. */
#define KJ_FORWARD(expr)                                                                                               \
    do {                                                                                                               \
        kj_status kj__forwarded = (expr);                                                                              \
        if (kj__forwarded != KJ_OK) return kj__forwarded;                                                              \
    } while (0)

#endif
