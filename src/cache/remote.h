/* The remote cache tier: a Redis server that machines share, behind each one's disk cache.
 *
 *   kernjit:entry:v<format>:<sm_XY>:<key>   an entry exactly as the disk holds it (cache.h), followed,
 *                                           when a secret is set, by "KJSIG256" and the HMAC-SHA256 of
 *                                           the name, a NUL and the entry (sign.h); 30 days to live
 *   kernjit:lease:<sm_XY>:<key>             "host:pid:n" of the process compiling the key (2 s to live,
 *                                           renewed every 0.5 s while it compiles); after a compile or
 *                                           push that failed, "nopush: why" for 10 s
 *   kernjit:tune:v1:<device>|<cc>|<version>|<nvrtc>   a hash of tuning results (remote_tune.c)
 *   kernjit:stats                           the fleet's counters (a hash; read-write processes add
 *                                           theirs)
 *
 * A lookup (kj__remote_lookup, after a disk miss) fetches and verifies the entry; when it is not
 * there, a read-write process takes the key's lease (SET NX, atomically with the fetch, in a script)
 * and compiles, or, when another process holds it, waits for that one's push. Pushes go through a
 * queue that one thread per runtime works off: the caller never waits for the server. Every fault is
 * a warning through the log and the local path goes on. */
#ifndef KJ_REMOTE_H
#define KJ_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "kernjit.h"
#include "jit/key.h"
#include "base/log.h"
#include "cache/redis.h"
#include "cache/remote_config.h"

typedef struct kj__remote kj__remote;

/* Opens the tier that the options (or the environment) ask for; *out = NULL when none is. KJ_ERR_USAGE
 * for a configuration that is not allowed. A tier that cannot work here (no libcrypto for a secret)
 * is a warning and a tier that only reports why (kj__remote_unavailable). */
kj_status kj__remote_open(const kj_runtime_options *options, const kj__logger *log, kj__remote **out);
/* Finishes the queued pushes and adds a read-write runtime's counters to the server's, all within
 * 2 s (a call in progress then ends, and the pushes left are dropped with a warning), and frees the
 * tier. Accepts NULL. */
void kj__remote_close(kj__remote *r);

/* Why the tier does nothing ("cannot load libcrypto.so.3 ..."), or NULL when it works. */
const char *kj__remote_unavailable(const kj__remote *r);
const kj__remote_config *kj__remote_settings(const kj__remote *r);
kj__redis *kj__remote_redis(const kj__remote *r); /* NULL when unavailable */

/* A key's lease, held by this process while it compiles the key. */
typedef struct kj__remote_claim {
    int held;
    int reached; /* the lookup had an answer: a push may follow (after none, it would fail the same way) */
    char lease[160];
    char token[96];
} kj__remote_claim;

/* A verified entry: its bytes (malloc'd, owned), and the parts pointing into them. */
typedef struct kj__remote_entry {
    uint8_t *data;
    const char *description;
    size_t description_len;
    const uint8_t *payload;
    size_t len;
    uint32_t flags;
} kj__remote_entry;

/* After a disk miss. 1: *entry holds the key's verified entry (free entry->data). 0: compile here;
 * when claim->held, this process holds the key's lease and must end it with kj__remote_publish or
 * kj__remote_abandon. Waits while another process compiles the key (see DESIGN.md for the bound).
 * Thread-safe. */
int kj__remote_lookup(kj__remote *r, const char *arch, const kj__key *key, kj__remote_entry *entry,
                      kj__remote_claim *claim);
/* Queues the push of an entry compiled here (data as kj__cache_format_entry made it; taken) and then
 * the release of the claim; returns at once. A read-only tier frees data. Thread-safe. */
void kj__remote_publish(kj__remote *r, const char *arch, const kj__key *key, uint8_t *data, size_t size,
                        kj__remote_claim *claim);
/* The compile under the claim failed: the lease is left with "nopush" so that waiters compile at
 * once. Thread-safe. */
void kj__remote_abandon(kj__remote *r, kj__remote_claim *claim);

/* Waits until the queued pushes are done, at most timeout_ms; returns how many are left. */
size_t kj__remote_drain(kj__remote *r, unsigned timeout_ms);

/* kj_remote_query's strings, kept with the tier. */
typedef struct kj__remote_report {
    char state[640];
    char version[32];
    char policy[32];
} kj__remote_report;
kj__remote_report *kj__remote_report_of(kj__remote *r);

/* Adds this runtime's remote counters to *stats (the kj_stats remote_* fields). */
void kj__remote_counters(kj__remote *r, kj_stats *stats);

/* ---- for the push, pull and tuning paths (remote_api.c, remote_tune.c) ---------------------------- */

#define KJ_REMOTE_MAX_VALUE (4u << 20) /* larger entries are not pushed: Redis serves small values well */
#define KJ_REMOTE_TTL_S (30 * 24 * 3600)
#define KJ_REMOTE_ENTRY_PREFIX "kernjit:entry:v"
#define KJ_REMOTE_STATS_KEY "kernjit:stats"

/* SET name value with the entries' time to live: 1 when stored; a fault or a refusal (a full server,
 * a read-only replica) is a warning and 0. */
int kj__remote_store_value(kj__remote *r, const char *name, const uint8_t *value, size_t size);
/* "kernjit:entry:v<format>:<arch>:<hex>" */
void kj__remote_entry_name(const char *arch, const kj__key *key, char *out, size_t size);
/* The value to store under name: data itself, or data with its signature appended (data realloc'd).
 * NULL when signing fails (the warning names why); data is then freed. */
uint8_t *kj__remote_seal(kj__remote *r, const char *name, uint8_t *data, size_t size, size_t *sealed_size);
/* Checks a fetched value against its name and key (NULL: the key in the name's last part is not
 * checked) as a lookup does: 0 and *entry on success, else -1 and why (a refusal: damaged, unsigned,
 * wrongly signed, another format). */
int kj__remote_open_value(kj__remote *r, const char *name, const kj__key *key, const uint8_t *value, size_t size,
                          kj__remote_entry *entry, char *why, size_t why_size);
/* Signs text under the secret as hex (65 bytes), or "" without a secret. -1 when signing fails. */
int kj__remote_sign_text(kj__remote *r, const char *name, const char *text, char hex[65]);
/* 1 when hex is text's signature under the secret (always 1 without a secret). */
int kj__remote_text_signed(kj__remote *r, const char *name, const char *text, const char *hex);

typedef enum kj__remote_counter {
    KJ__RC_HITS,
    KJ__RC_MISSES,
    KJ__RC_WAITS,
    KJ__RC_PUSHES,
    KJ__RC_REFUSALS,
    KJ__RC_ERRORS,
    KJ__RC_FETCHES,
    KJ__RC_FETCH_US,
    KJ__RC_BYTES_FETCHED,
    KJ__RC_BYTES_PUSHED,
    KJ__RC_COUNT
} kj__remote_counter;
void kj__remote_count(kj__remote *r, kj__remote_counter which, uint64_t n);
/* The server's name for each counter in the stats hash ("hits", ...). */
const char *kj__remote_counter_name(kj__remote_counter which);

/* Runs one command (lens NULL: NUL-terminated arguments) and returns its reply (an error reply is a
 * reply), or NULL after kj__remote_fault(what, consequence). */
kj__reply *kj__remote_call(kj__remote *r, int argc, const char *const *argv, const size_t *lens, const char *what,
                           const char *consequence);
/* A warning that starts "remote cache URL: "; kj__remote_note, the same at info level. */
void kj__remote_warn(kj__remote *r, const char *fmt, ...) KJ_PRINTF(2, 3);
void kj__remote_note(kj__remote *r, const char *fmt, ...) KJ_PRINTF(2, 3);
/* Warns about a failed operation: "remote cache URL: WHAT failed: WHY; CONSEQUENCE" (an operation the
 * breaker skipped is counted, and only noted at info level). */
void kj__remote_fault(kj__remote *r, kj__redis_result result, const char *what, const char *why,
                      const char *consequence);

#endif
