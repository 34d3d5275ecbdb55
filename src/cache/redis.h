/* Connections to one Redis server, for the remote cache (remote.h): plain, or TLS for rediss://
 * (tls.h); a few kept open and shared by the threads of a runtime (one thread uses a connection at a
 * time); every call bounded in time (a bounded name lookup, the connect timeout, and the operation
 * timeout for TLS's handshake and for the whole exchange of commands and replies, however the server
 * paces its bytes) and in memory (each reply may allocate at most its command's bound, checked at
 * each header: resp.h); writes that raise no SIGPIPE; and a circuit breaker: after 3 failures in a
 * row the server is not tried for 30 s (60, 120, up to 300 s while it keeps failing). Callers run
 * commands in one round trip and read the replies through resp.h's accessors. */
#ifndef KJ_REDIS_H
#define KJ_REDIS_H

#include <stddef.h>

#include "kernjit.h"
#include "base/log.h"
#include "cache/remote_config.h"
#include "cache/resp.h"

typedef struct kj__redis kj__redis;

/* What a reply may allocate (resp.h), unless its command says less: the largest value a lookup
 * fetches (4 MiB and a byte, remote.h) with room for what wraps it. */
#define KJ__REDIS_REPLY_MOST ((4u << 20) + (64u << 10))
#define KJ__REDIS_REPLY_SMALL (4u << 10) /* a status, a count, a lease holder */

/* One command: argc arguments, binary-safe. */
typedef struct kj__redis_cmd {
    int argc;
    const char *const *argv;
    const size_t *len; /* NULL: every argument is a NUL-terminated string */
    size_t most;       /* what its reply may allocate; 0: KJ__REDIS_REPLY_MOST */
} kj__redis_cmd;

/* Keeps cfg's connection settings (cfg must outlive the result). Connects nothing yet. For rediss://,
 * sets up TLS (tls.h): its failure (no libssl, a certificate or key OpenSSL cannot use) is returned. */
kj_status kj__redis_create(const kj__remote_config *cfg, const kj__logger *log, kj__redis **out);
void kj__redis_destroy(kj__redis *r);

typedef enum kj__redis_result {
    KJ__REDIS_OK = 0,      /* every command has its reply (an error reply is a reply) */
    KJ__REDIS_FAILED = -1, /* no connection, no whole answer in time, or an answer refused (malformed,
                              larger than its bound): counted by the breaker */
    KJ__REDIS_SKIPPED = -2 /* the breaker is open, or the cut-off has passed: nothing was sent */
} kj__redis_result;

/* Sends the n commands at once and reads their n replies into replies[] (each freed with
 * kj__reply_free), all within the operation timeout. On failure nothing is in replies and why
 * (why_size bytes) says what happened ("connection refused", "no answer within 200 ms (the
 * operation timeout)"). Thread-safe. */
kj__redis_result kj__redis_exec(kj__redis *r, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, char *why,
                                size_t why_size);

/* From when_ms (kj__now_ms) on, calls end: one in progress fails then, saying why, and later ones are
 * skipped (neither counts as the server's failure). For a runtime that closes. Thread-safe. */
void kj__redis_cut_off(kj__redis *r, double when_ms, const char *why);

/* 1 while the last call failed (or the breaker is open): bookkeeping waits for a working server. */
int kj__redis_failing(kj__redis *r);

#endif
