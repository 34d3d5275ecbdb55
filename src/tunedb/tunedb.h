/* The tuning database: <folder>/tuning.db (the folder: kj__tunedb_dir), a plain-text file with one
 * winner a line.
 *
 *   # comment lines and empty lines are ignored
 *   KERNEL <TAB> ENTRY <TAB> FIXED <TAB> BUCKET <TAB> DEVICE <TAB> CC <TAB> VERSION <TAB> VALUES
 *          <TAB> GBPS <TAB> US <TAB> N <TAB> TIME <NL>
 *
 *   reduce  reduce_fast  OP=sum T=f32  28  NVIDIA H100 80GB HBM3  9.0  0.1.0
 *           BLOCK_SIZE=1024 COARSE_FACTOR=4  3140.2  341.906  268435456  1735689600
 *
 * FIXED and VALUES are space-separated NAME=VALUE lists sorted by name ("-" when empty); BUCKET is
 * floor(log2 n) of the size tuned for; CC is "major.minor", followed by "/TARGET" when the kernels
 * were built for a target other than the device's own sm_XY (9.0/sm_90a: a runtime whose arch is
 * sm_90a); TIME is when it was stored (seconds since the epoch). The first seven fields are the key,
 * the target among them. Of two records with the same key, the faster one is kept
 * (kj__tunedb_better): in the file, in a runtime's copy, and in the remote cache's copy; unless a
 * tuning run here measured the kept one's variant at far less than it claims (kj__tunedb_replaces):
 * then the new measurement wins.
 * Lines are strictly checked (field count, characters, numbers, the final new line), so a damaged
 * file (garbage, a truncated last line, binary junk) loses only its damaged lines, each reported
 * once through the log; the next store rewrites the file without them.
 *
 * Writers hold an advisory lock (flock on <folder>/tuning.db.lock), read the file again, change it and
 * write a temporary file that is renamed over it: readers see the old file or the new one, and two
 * tuners in different processes keep each other's lines. */
#ifndef KJ_TUNEDB_H
#define KJ_TUNEDB_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit/tune.h"
#include "base/log.h"

#define KJ_TUNEDB_FILE "tuning.db"
#define KJ_TUNEDB_MAX_BYTES (16u << 20)
#define KJ_TUNEDB_MAX_LINE 4096

typedef struct kj__tuned_rec {
    char *kernel, *entry, *fixed; /* fixed: "" when none */
    unsigned bucket;
    char *device;
    int cc_major, cc_minor;
    char *target; /* NULL or "" for the device's own; else what the kernels were built for ("sm_90a");
                      a record in a kj__tunedb always has a string */
    char *version;
    char *values;
    double gbps, us;
    uint64_t n;
    int64_t time;
} kj__tuned_rec;

typedef struct kj__tunedb {
    kj__tuned_rec *recs;
    size_t count, cap;
} kj__tunedb;

/* floor(log2 n); 0 for n = 0 and 1. */
unsigned kj__tunedb_bucket(uint64_t n);

/* Device names go into the file as printable ASCII without tabs (anything else becomes '?'), at
 * most 255 characters: store and lookup both use this form. */
void kj__tunedb_device_name(const char *name, char out[256]);

/* Parses text (len bytes; it may hold NULs). Damaged lines are skipped with a warning naming origin
 * and the line number; at most a few are reported one by one, then a count. Fails only when out of
 * memory. The records are appended to db. */
kj_status kj__tunedb_parse(const char *text, size_t len, const char *origin, const kj__logger *log, kj__tunedb *db);
/* The file's text: a header comment, then the records sorted by key. NULL when out of memory. */
char *kj__tunedb_format(const kj__tunedb *db);
/* One record's line, with its new line. NULL when out of memory. */
char *kj__tunedb_format_record(const kj__tuned_rec *rec);

/* The conflict rule, the same everywhere: of two results for one key, a replaces b unless b is
 * faster: more GB/s re-measured, or as many in less time per run. A tie goes to a (the newer). */
int kj__tunedb_better(const kj__tuned_rec *a, const kj__tuned_rec *b);

/* What one tuning run measured on this machine, the evidence against the records of the key it
 * stores: gbps(values, user) gives the GB/s of that variant here (0 when it failed, was wrong or
 * could not run here), or a negative number when the run did not measure it. */
typedef struct kj__tunedb_measured {
    double (*gbps)(const char *values, void *user);
    void *user;
} kj__tunedb_measured;

/* A record that claims more than this many times what this machine measured of its variant was not
 * reproduced here: a bogus or mistaken record would otherwise win everywhere for good ("the faster
 * one is kept"), and noise between runs of one machine stays well within it. */
#define KJ_TUNEDB_UNREPRODUCED 1.5

/* Whether measured shows b not reproduced here (*got: what this machine measured of b's variant). */
int kj__tunedb_unreproduced(const kj__tuned_rec *b, const kj__tunedb_measured *measured, double *got);
/* The conflict rule with a run's evidence (measured may be NULL): a, a new result, replaces b, a
 * record of its key, when kj__tunedb_better(a, b) or when b was not reproduced here. */
int kj__tunedb_replaces(const kj__tuned_rec *a, const kj__tuned_rec *b, const kj__tunedb_measured *measured);

/* Adds a copy of rec; of it and a record with the same key, the better one stays (kj__tunedb_better).
 * Checks every field as the parser does: KJ_ERR_USAGE naming the bad field. */
kj_status kj__tunedb_put(kj__tunedb *db, const kj__tuned_rec *rec);
/* Removes the records that match filter (NULL matches all); returns how many. */
size_t kj__tunedb_remove(kj__tunedb *db, const kj_tune_filter *filter);
int kj__tunedb_matches(const kj__tuned_rec *rec, const kj_tune_filter *filter);
void kj__tunedb_clear(kj__tunedb *db);
/* Sorts the records by key (kernel, entry, fixed, device, cc, target, version, bucket). */
void kj__tunedb_sort(kj__tunedb *db);

/* The record for this key and size: the size's bucket, else bucket - 1, else bucket + 1. NULL when
 * none. device is the kj__tunedb_device_name form; target "" for the device's own. */
const kj__tuned_rec *kj__tunedb_find(const kj__tunedb *db, const char *kernel, const char *entry, const char *fixed,
                                     uint64_t n, const char *device, int cc_major, int cc_minor, const char *target,
                                     const char *version);

/* Reads <dir>/tuning.db into db (a missing file is an empty database). A file that is not a regular
 * file, or too large, is ignored with a warning. Fails only when out of memory. */
kj_status kj__tunedb_read(const char *dir, const kj__logger *log, kj__tunedb *db);

/* One change of the file. */
typedef struct kj__tunedb_change {
    const kj__tunedb *add;               /* records put by the rule (kj__tunedb_replaces); NULL: none */
    const kj__tunedb_measured *measured; /* evidence of the run that made add's one record; NULL: none */
    const kj_tune_filter *forget;        /* records removed first; NULL: none */
} kj__tunedb_change;

/* Under the lock: reads the file, removes the records matching change->forget (*removed gets the
 * count), puts every record of change->add, and writes the file back atomically, once for all of
 * them (nothing changed: not at all). A record replaced because it was not reproduced is a warning.
 * On success *merged (when not NULL) receives the database as written. KJ_ERR_IO names the file and
 * the reason (the lock could not be had within 10 s, no space, read-only). */
kj_status kj__tunedb_update(const char *dir, const kj__logger *log, const kj__tunedb_change *change, size_t *removed,
                            kj__tunedb *merged);

/* The folder of a runtime's tuning database (malloc'd; NULL when out of memory): $KERNJIT_STATE_DIR;
 * else, when the cache folder was given (kj_runtime_options.cache_dir, $KERNJIT_CACHE_DIR:
 * cache_given), that folder, which then holds all that kernjit keeps; else $XDG_STATE_HOME/kernjit,
 * else ~/.local/state/kernjit (the results cost GPU time to measure again: not a cache to clear);
 * else the cache folder. */
char *kj__tunedb_dir(const char *cache_root, int cache_given);
/* Moves <from>/tuning.db into <to> (created 0700), losing nothing: renamed when <to> has none (the
 * same bytes, in one step), else merged into it by the conflict rule, written, read back and checked,
 * and only then removed. Under both folders' locks. *moved gets the number of results moved (0 when
 * <from> has no database). A failure (KJ_ERR_IO: a folder that cannot be used, a database that
 * cannot be read, a write that fails) leaves <from>'s database as it was. */
kj_status kj__tunedb_move(const char *from, const char *to, const kj__logger *log, size_t *moved);

/* The three lookups below give 0 when they found the value, -1 when not. */

/* The runtime's copy, for kj__config_resolve (src/tunedb/tunedb_api.c): the values ("NAME=VALUE ...")
 * tuned for kernel/entry/fixed at size n on this runtime's device, copied to values; -1 when there is
 * none (no device, no disk cache, no entry, or values longer than size). The file is read on the
 * first call only. */
int kj__tuned_find(kj_runtime *rt, const char *kernel, const char *entry, const char *fixed, uint64_t n, char *values,
                   size_t size);
/* The runtime's copy as a number that changes whenever the copy does (loaded, stored into, forgotten
 * from): what kj__tuned_find answers is the same while this number is. No lock once the copy is
 * loaded (it loads it on first use); 0 where kj__tuned_find finds nothing (no device, no disk cache). */
uint64_t kj__tuned_generation(kj_runtime *rt);
/* The target a runtime's tuning results are stored under: "" when it builds for its device's own
 * target, else that target ("sm_90a"), which a runtime for the plain sm_90 does not use. */
const char *kj__tuned_target(const kj_runtime *rt);
/* Stores rec, a result of kj_tune, by the conflict rule with that run's evidence (measured; NULL:
 * none) in the file (kj__tunedb_update) and on the remote server, and makes the merged file the
 * runtime's copy. */
kj_status kj__tuned_store(kj_runtime *rt, const kj__tuned_rec *rec, const kj__tunedb_measured *measured);

/* The value of NAME in a "NAME=VALUE ..." list, copied to out (not when longer than size). */
int kj__tunedb_value(const char *list, const char *name, char *out, size_t size);
/* The value of NAME in a VALUES list as a number from 1 to max: not found when it is missing, not a
 * plain decimal number, or out of that range (the caller then keeps its defaults). */
int kj__tunedb_uint(const char *list, const char *name, unsigned max, unsigned *out);

#endif
