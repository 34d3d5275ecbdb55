/* testing/'s own errors: the oracles cannot record a message where kj_last_error() reads it (the
 * library keeps that to itself), so they keep theirs for kjtest_last_error(). */
#ifndef KJTEST_ORACLE_H
#define KJTEST_ORACLE_H

#include "kjtest.h"

/* Records the message (printf format) as this thread's last oracle error and returns status. */
kj_status kjtest_fail(kj_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
