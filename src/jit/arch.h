/* Compile targets and the names of architectures: the one place that reads "sm_90", "sm_90a",
 * "sm_100f" and "compute_90", that asks NVRTC which targets it supports, and that says which devices
 * a target's binary runs on. */
#ifndef KJ_ARCH_H
#define KJ_ARCH_H

#include "kernjit.h"

/* What a compile is for. */
typedef struct kj__target {
    char arch[24];       /* the compile target: "sm_90", "sm_90a", "sm_100f", or "compute_90" (PTX, which the
                            driver finishes) */
    char cache_arch[16]; /* the cache folder of its entries: the target's own name, or for a device's
                            own target the device's "sm_XY" */
    int ptx;             /* arch is compute_... */
} kj__target;

/* NVRTC's version as major * 1000 + minor * 10: what it supports depends on it. arch.c uses no other
 * module of jit/, so that any of them may ask it about targets. */
int kj__nvrtc_version(void);

/* A target's name read: sm_ or compute_, the architecture's number (2 to 4 digits, no leading zero),
 * then 'a' (that architecture only), 'f' (its family) or nothing. */
typedef struct kj__arch_name {
    int number;  /* 90 for sm_90a */
    char suffix; /* 'a', 'f' or '\0' */
    int ptx;     /* compute_ */
} kj__arch_name;

/* 0 and *out when name is of that form, else -1 (NULL too). */
int kj__arch_parse(const char *name, kj__arch_name *out);

/* Whether name is one kernjit gives a cache folder: a target's name of the form above (the device's
 * own folders, "sm_90", are of it too). Nothing else is ever a folder of the cache: a name from a
 * server or a listing that is not (a "../" among them) is refused. */
int kj__arch_folder_valid(const char *name);
/* The folders kj__arch_folder_valid accepts, for messages. */
#define KJ_ARCH_FOLDER_FORM "a target's name: sm_XY, sm_XYa, sm_XYf, compute_XY..."

/* The number of an architecture's name: 90 for "sm_90", "sm_90a" or "compute_90"; 0 when it has none. */
int kj__arch_number(const char *arch);

/* The target for a device of compute capability cc (90 for 9.0): sm_XY when NVRTC knows it; else
 * PTX for the newest architecture NVRTC supports below it, cached in the device's sm_XY folder.
 * Errors: KJ_ERR_UNSUPPORTED (older than any architecture NVRTC supports), KJ_ERR_COMPILE (NVRTC
 * cannot list them). */
kj_status kj__arch_for_device(int cc, kj__target *out);

/* The target for an arch the user names: sm_XY, sm_XYa, sm_XYf, compute_XY, compute_XYa or
 * compute_XYf that this NVRTC can target, cached in the folder of that name.
 * Errors: KJ_ERR_USAGE naming every accepted form, or the targets this NVRTC has; KJ_ERR_COMPILE. */
kj_status kj__arch_for_user(const char *arch, kj__target *out);

/* Whether a binary for target arch (a name of the form above) runs on a device of compute capability
 * cc: a cubin for sm_XY on X.Y to X.9; sm_XYa on X.Y alone; sm_XYf on X.Y to X.9 (its family); PTX for
 * compute_XY on X.Y and every newer device (the driver compiles it), compute_XYa and compute_XYf as
 * their cubins. */
int kj__arch_runs_on(const char *arch, int cc);

/* KJ_ERR_USAGE, before the driver sees the binary, when a binary for arch does not run on the device
 * (compute capability cc, named device): the message says which devices it runs on. KJ_OK when it does. */
kj_status kj__arch_check_device(const char *arch, int cc, const char *device);

/* The architectures this NVRTC compiles for, as numbers (90), at most max of them; returns how many
 * (0 when NVRTC cannot say). */
int kj__arch_supported(int *archs, int max);
/* The same list, asked of NVRTC once: *archs points to static storage. Thread-safe. */
int kj__arch_list(const int **archs);

/* After a failed compile whose log (the message) says an instruction is "not supported on .target
 * 'sm_XY'", a note pointing at the architecture-specific target sm_XYa (and the family's) where
 * there is one: instructions such as wgmma and setmaxnreg exist only there. Appended to the message. */
void kj__arch_explain_failure(const char *log);

/* Whether this NVRTC has the 'a' or 'f' form of architecture number (which must be in its list):
 * 'a' from 9.0 on (NVRTC 12.0), 'f' from 10.0 on (NVRTC 12.9). test-arch checks the rule against
 * what NVRTC accepts for every architecture it lists. */
int kj__arch_suffix_supported(int number, char suffix);

#endif
