/* The families' tuning targets (ops/ops.h: kj__tune_target), for the tuner. */
#ifndef KJ_TARGETS_H
#define KJ_TARGETS_H

#include "ops/ops.h"

/* Every family that has a tuning target, NULL-terminated. */
extern const kj__tune_target *const kj__tune_targets[];

#endif
