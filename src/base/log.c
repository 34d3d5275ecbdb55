#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

void kj__log(const kj__logger *log, kj_log_level level, const char *fmt, ...) {
    if (!log || !log->fn || level > log->level) return;
    char msg[KJ__MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    kj_message_vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log->fn(level, msg, log->user);
}
