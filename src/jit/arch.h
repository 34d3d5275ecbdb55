/* Compile targets and the names of architectures: the one place that reads "sm_90", "sm_90a" and
 * "compute_90", and that asks NVRTC which targets it supports. */
#ifndef KJ_ARCH_H
#define KJ_ARCH_H

#include "kernjit.h"

/* What a compile is for. */
typedef struct kj__target {
    char arch[24];       /* the compile target: "sm_90", or "compute_90" (PTX, which the driver finishes) */
    char cache_arch[16]; /* the cache folder of its entries: "sm_90" */
    int ptx;             /* arch is compute_XY */
} kj__target;

/* The number of an architecture's name: 90 for "sm_90", "sm_90a" or "compute_90"; 0 when it has none. */
int kj__arch_number(const char *arch);

/* Whether name is a cache folder kernjit writes ("sm_90": sm_ and 2 to 4 digits, no leading zero):
 * the one test of it, which the disk cache applies to every path it makes and the remote cache to
 * every name a server hands out, so that nothing is written outside the cache's folders.
 * KJ_ARCH_FOLDER_FORM says the allowed form in messages. */
int kj__arch_folder_valid(const char *name);
#define KJ_ARCH_FOLDER_FORM "sm_<digits>"

/* The target for a device of compute capability cc (90 for 9.0): sm_XY when NVRTC knows it; else
 * PTX for the newest architecture NVRTC supports below it, cached in the device's sm_XY folder.
 * Errors: KJ_ERR_UNSUPPORTED (older than any architecture NVRTC supports), KJ_ERR_COMPILE (NVRTC
 * cannot list them). */
kj_status kj__arch_for_device(int cc, kj__target *out);

/* The target for an arch the user names ("sm_80"): sm_<digits> that this NVRTC can target.
 * Errors: KJ_ERR_USAGE naming the allowed form or the supported targets, KJ_ERR_COMPILE. */
kj_status kj__arch_for_user(const char *arch, kj__target *out);

/* The architectures this NVRTC compiles for, as numbers (90), at most max of them; returns how many
 * (0 when NVRTC cannot say). */
int kj__arch_supported(int *archs, int max);
/* The same list, asked of NVRTC once: *archs points to static storage. Thread-safe. */
int kj__arch_list(const int **archs);

#endif
