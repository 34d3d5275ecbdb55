/* The registry of tuning targets: the one file of the tuner that names the families. A family that
 * can be tuned adds its line (its <family>_tune.c defines kj__tune_target_<family>). */
#include "tune/targets.h"

#define KJ__TUNE_TARGETS(X)                                                                                            \
    X(reduce)                                                                                                          \
    X(transpose)                                                                                                       \
    X(vector_add)

#define KJ__TUNE_TARGET_DECLARE(name) extern const kj__tune_target kj__tune_target_##name;
KJ__TUNE_TARGETS(KJ__TUNE_TARGET_DECLARE)

#define KJ__TUNE_TARGET_ENTRY(name) &kj__tune_target_##name,
const kj__tune_target *const kj__tune_targets[] = {KJ__TUNE_TARGETS(KJ__TUNE_TARGET_ENTRY) NULL};
