#include "log.h"

#include <stdarg.h>
#include <stdio.h>

void kj__log(const kj__logger *log, kj_log_level level, const char *fmt, ...) {
    if (!log || !log->fn || level > log->level) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log->fn(level, msg, log->user);
}
