/* Connections to one Redis server, for the remote cache (remote.h): a few kept open and shared by
 * the threads of a runtime (one thread uses a connection at a time), each bounded in time (connect
 * and operation timeouts, a bounded name lookup), SIGPIPE kept from the host program, and a circuit
 * breaker: after 3 failures in a row the server is not tried for 30 s (60, 120, up to 300 s while
 * it keeps failing). Callers run commands in one round trip and read the replies through accessors,
 * so that only redis.c sees hiredis's types. */
#ifndef KJ_REDIS_H
#define KJ_REDIS_H

#include <stddef.h>

#include "kernjit.h"
#include "base/log.h"
#include "cache/remote_config.h"

typedef struct kj__redis kj__redis;
typedef struct kj__reply kj__reply; /* one reply (a hiredis redisReply) */

/* One command: argc arguments, binary-safe. */
typedef struct kj__redis_cmd {
    int argc;
    const char *const *argv;
    const size_t *len; /* NULL: every argument is a NUL-terminated string */
} kj__redis_cmd;

/* Loads hiredis (KJ_ERR_UNSUPPORTED saying what is missing) and keeps cfg's connection settings
 * (cfg must outlive the result). Connects nothing yet. */
kj_status kj__redis_create(const kj__remote_config *cfg, const kj__logger *log, kj__redis **out);
void kj__redis_destroy(kj__redis *r);

typedef enum kj__redis_result {
    KJ__REDIS_OK = 0,      /* every command has its reply (an error reply is a reply) */
    KJ__REDIS_FAILED = -1, /* no connection, or no (whole) answer in time: counted by the breaker */
    KJ__REDIS_SKIPPED = -2 /* the breaker is open: nothing was sent */
} kj__redis_result;

/* Sends the n commands at once and reads their n replies into replies[] (each freed with
 * kj__reply_free). On failure nothing is in replies and why (why_size bytes) says what happened
 * ("connection refused", "no answer within 200 ms"). Thread-safe. */
kj__redis_result kj__redis_exec(kj__redis *r, size_t n, const kj__redis_cmd *cmds, kj__reply **replies, char *why,
                                size_t why_size);

/* 1 while the last call failed (or the breaker is open): bookkeeping waits for a working server. */
int kj__redis_failing(kj__redis *r);

/* Reply accessors. A NULL reply reads as nil. */
typedef enum kj__reply_type {
    KJ__REPLY_NIL,
    KJ__REPLY_STRING,
    KJ__REPLY_INTEGER,
    KJ__REPLY_STATUS,
    KJ__REPLY_ERROR,
    KJ__REPLY_ARRAY
} kj__reply_type;
kj__reply_type kj__reply_kind(const kj__reply *reply);
/* The bytes of a string, status or error reply; NULL (and *len 0) otherwise. */
const char *kj__reply_str(const kj__reply *reply, size_t *len);
long long kj__reply_int(const kj__reply *reply);
size_t kj__reply_count(const kj__reply *reply);
const kj__reply *kj__reply_at(const kj__reply *reply, size_t index); /* NULL past the end */
void kj__reply_free(kj__reply *reply);

#endif
