/* RESP2, the protocol of Redis, as kernjit's client speaks it (redis.c does the I/O): commands as
 * arrays of bulk strings, and replies read under a bound on what they may allocate. A server
 * announces sizes in its headers ("*2147483647", "$536870912"); each header is checked against the
 * bound before anything is allocated or more is read, so whatever a server sends costs at most the
 * bound in memory. No I/O here: the reader takes the bytes received so far. */
#ifndef KJ_RESP_H
#define KJ_RESP_H

#include <stddef.h>

#include "base/util.h"

typedef struct kj__reply kj__reply; /* one reply, a tree of them for an array */

typedef enum kj__reply_type {
    KJ__REPLY_NIL,
    KJ__REPLY_STRING,
    KJ__REPLY_INTEGER,
    KJ__REPLY_STATUS,
    KJ__REPLY_ERROR,
    KJ__REPLY_ARRAY
} kj__reply_type;

/* Appends one command (argc arguments; lens NULL: NUL-terminated strings) to out. -1 when out of
 * memory. */
int kj__resp_command(kj__buf *out, int argc, const char *const *argv, const size_t *lens);

#define KJ__RESP_DEPTH 8 /* arrays nested deeper are refused (kernjit's replies nest 2 deep) */

typedef enum kj__resp_result {
    KJ__RESP_DONE = 1, /* a whole reply: *out, and *used the bytes it took */
    KJ__RESP_MORE = 0, /* only its beginning is there, within the bound so far: read more */
    KJ__RESP_BAD = -1  /* malformed, nested too deep, larger than the bound, or out of memory: why */
} kj__resp_result;

/* Reads the reply at the start of data[0, len) if it is whole. It may allocate at most most bytes
 * (its nodes, pointers and strings, as allocated); a header announcing more is refused at once,
 * whatever follows it. to names the command in the messages ("an array of 2147483647 elements: more
 * than the answer to EVAL may take (4.1 MiB)"). */
kj__resp_result kj__resp_parse(const char *data, size_t len, size_t most, const char *to, kj__reply **out, size_t *used,
                               char *why, size_t why_size);

/* Reply accessors. A NULL reply reads as nil. */
kj__reply_type kj__reply_kind(const kj__reply *reply);
/* The bytes of a string, status or error reply (NUL-terminated); NULL (and *len 0) otherwise. */
const char *kj__reply_str(const kj__reply *reply, size_t *len);
long long kj__reply_int(const kj__reply *reply);
size_t kj__reply_count(const kj__reply *reply);
const kj__reply *kj__reply_at(const kj__reply *reply, size_t index); /* NULL past the end */
void kj__reply_free(kj__reply *reply);
/* The reply as a short text for a message: {1, 42}, {1, []}, "text", (nil), 5; strings cut at 40
 * bytes, bytes that are not printable as \xNN; the whole cut to size. */
void kj__reply_describe(const kj__reply *reply, char *out, size_t size);

#endif
