/* Warnings and information go to the host program's callback; the library itself never prints. */
#ifndef KJ_LOG_H
#define KJ_LOG_H

#include "base/error.h"
#include "kernjit.h"

typedef struct kj__logger {
    kj_log_fn fn;
    void *user;
    kj_log_level level;
} kj__logger;

void kj__log(const kj__logger *log, kj_log_level level, const char *fmt, ...) KJ_PRINTF(3, 4);

#endif
