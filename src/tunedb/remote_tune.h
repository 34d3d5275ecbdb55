/* Tuning results shared through the remote cache: one hash per device name, compute capability (and
 * target, when not the device's own), kernjit version and NVRTC version
 * ("kernjit:tune:v1:<device>|<cc>[/<target>]|<version>|nvrtc<N>"), a field per
 * kernel, entry, fixed macros and size bucket, and as its value the tuning database's line for the
 * result (tunedb.h) with, when a secret is set, its signature on a second line. The conflict rule is
 * the database's (kj__tunedb_replaces): a result replaces the server's only when it is faster, or when
 * the run that made it measured the server's variant at far less than it claims, by a
 * compare-and-swap, so that two machines publishing at once keep the faster. `kernjit tune --forget`
 * removes the matching results here too. */
#ifndef KJ_REMOTE_TUNE_H
#define KJ_REMOTE_TUNE_H

#include "cache/remote.h"
#include "tunedb/tunedb.h"

/* Publishes rec (a result kj_tune stored here) unless the server's result for its key wins by the
 * rule with that run's evidence (kj__tunedb_replaces; measured may be NULL): a faster one this machine
 * did not fail to reproduce. Faults are warnings. */
void kj__remote_tune_publish(kj__remote *r, const kj__tuned_rec *rec, const kj__tunedb_measured *measured);

/* Removes the server's results that match filter (those this process would use: verified; of every
 * device, version and NVRTC, as kj_tune_db_forget removes them from the file), each only while it
 * holds what was read, so that a result published meanwhile stays. A read-only process removes
 * nothing, and warns when some match: they come back at the next first use, and it says how to remove
 * them. Returns how many were removed. Faults are warnings. Accepts NULL. */
size_t kj__remote_tune_forget(kj__remote *r, const kj_tune_filter *filter);

/* The server's results for this device (name as the database writes it), compute capability, target
 * ("" for the device's own) and versions, verified, added to into by the conflict rule; returns how
 * many were read. Faults and refused values are warnings. */
size_t kj__remote_tune_fetch(kj__remote *r, const char *device, int cc_major, int cc_minor, const char *target,
                             const char *version, kj__tunedb *into);

#endif
