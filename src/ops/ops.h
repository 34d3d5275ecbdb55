/* What a kernel family (src/ops/<family>/) gets of the layers below: its one internal header. A family
 * gets kernels from the pipeline (kj_kernel_get) and launches them (kj_kernel_launch) through the
 * public API, and through this header: the context and the device, state kept per runtime under a
 * key of its own, copies and clears ordered on a stream, the pending-launch limit, the rule that
 * picks a configuration (kj__config_resolve), names of values, and what a tuning target is. It never
 * sees the runtime's struct, its lock or the driver. */
#ifndef KJ_OPS_H
#define KJ_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/util.h"
#include "kernjit.h"
#include "kernjit/ops.h"
#include "runtime/context.h"
#include "runtime/launch.h"

/* ---- per-stream work buffers ---------------------------------------------------------------- */

/* A family's device buffer for one stream: work on one stream runs in order, so one buffer a stream
 * is enough. Kept until the runtime is destroyed; a stream is known by its handle value. */
typedef struct kj__lane {
    kj_stream stream;
    kj_devptr buffer;
    size_t bytes;
    kj_event *start, *stop; /* for timing work on the stream */
} kj__lane;

/* A family's table of lanes is its state under a key of its own:
 *   static const kj__state_key lanes = KJ__LANES; */
kj_status kj__lanes_create(kj_runtime *rt, void **state);
void kj__lanes_destroy(kj_runtime *rt, void *state);
#define KJ__LANES {kj__lanes_create, kj__lanes_destroy}

/* The lane of `stream` in the table under `lanes`, with a buffer of at least `bytes`. A new buffer is
 * cleared to zero, in order on its stream; a buffer too small is replaced by one of `bytes`, or
 * twice its size when that is more (the stream is drained first). The lane stays where it is. */
kj_status kj__lane_get(kj_runtime *rt, const kj__state_key *lanes, kj_stream stream, size_t bytes, kj__lane **out);

/* ---- names ---------------------------------------------------------------------------------- */

/* The index of text in names[0 .. count), or -1 (text NULL included). */
int kj__name_find(const char *const *names, int count, const char *text);

/* ---- "explicit, else tuned, else default" ----------------------------------------------------- */

/* Where a call's configuration came from (reports say it by kj__config_name). */
typedef enum kj__config_from { KJ__CONFIG_DEFAULT, KJ__CONFIG_TUNED, KJ__CONFIG_EXPLICIT } kj__config_from;

/* "default", "tuned", "explicit". */
const char *kj__config_name(kj__config_from from);

#define KJ__CONFIG_MAX 4 /* tunables of one call */

/* A call of a family that has tunables: its kernel and the macros of its request. */
typedef struct kj__config_call {
    const char *kernel, *entry;
    const kj_define *fixed;      /* the params, sorted by name: in the request, and (as "NAME=VALUE ...")
                                    the tuning database's key, as the tuner writes it */
    size_t fixed_count;
    const kj_define *pinned;     /* macros held at a value whatever the configuration (an entry that
                                    does not use a tunable): in the request only */
    size_t pinned_count;
    uint64_t n;                  /* the problem's size, whose bucket the database keys; 0: none is looked up */
    size_t count;                /* the tunables, at most KJ__CONFIG_MAX */
    const char *names[KJ__CONFIG_MAX];
    unsigned given[KJ__CONFIG_MAX];    /* the caller's values; 0: not given */
    unsigned defaults[KJ__CONFIG_MAX];
    /* Whether tuned values can run this call (a single-block entry and its n); NULL: any can. */
    int (*suits)(const void *user, const unsigned *values);
    const void *user;
} kj__config_call;

/* What kj__config_resolve chose and got. */
typedef struct kj__config {
    unsigned values[KJ__CONFIG_MAX];
    kj__config_from from;
    kj_kernel *kernel;
    kj_origin origin;
} kj__config;

/* The rule every family follows: the values the caller gives (any given one makes the call explicit;
 * the others stay at the defaults); else the tuning database's for this device, kernel, entry, params
 * and size bucket (from the runtime's copy: no file access), used whole when each is a plain number
 * from 1 to 1024 and suits() accepts them; else the defaults. Then the kernel of those values. Tuned
 * values whose kernel cannot be had as a usage of the metadata (KJ_ERR_INVALID_DEFINE: a hand-edited
 * database, or metadata changed since) or of the device (KJ_ERR_LIMIT) give a warning, and the
 * defaults are used instead. Errors: those of kj_kernel_get for the values used. */
kj_status kj__config_resolve(kj_runtime *rt, const kj__config_call *call, kj__config *out);

#endif
