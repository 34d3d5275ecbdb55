#include "oracle.h"

#include <stdarg.h>

static _Thread_local char last[1024];

const char *kjtest_last_error(void) { return last; }

kj_status kjtest_fail(kj_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kj_message_vformat(last, sizeof last, fmt, ap);
    va_end(ap);
    return status;
}
