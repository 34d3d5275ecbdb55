/* hiredis, the Redis client, loaded at run time (dlopen) into a table of function pointers, as the
 * CUDA driver is (cuda_loader.h): kernjit builds and runs without it, and only a configured remote
 * cache (remote.h) needs it.
 *
 * hiredis's structs changed between releases (0.14 and 1.x lay out redisReply and redisContext
 * differently), so the header the library was built with decides which library may be loaded: the
 * soname it names (HIREDIS_SONAME, "libhiredis.so.0.14" for Debian 12's). Loading checks the layout
 * too: the reader parses a known reply and the fields must read back as written. Without the header
 * at build time (no libhiredis-dev) there is no table, and kj__redis_load says so. */
#ifndef KJ_REDIS_LOADER_H
#define KJ_REDIS_LOADER_H

#include "kernjit.h"

#ifdef KJ_HAVE_HIREDIS
#include <hiredis.h>

#define KJ_REDIS_SYMBOLS(X)                                                                         \
    X(redisConnectWithTimeout)                                                                      \
    X(redisConnectUnixWithTimeout)                                                                  \
    X(redisSetTimeout)                                                                              \
    X(redisFree)                                                                                    \
    X(redisAppendCommandArgv)                                                                       \
    X(redisGetReply)                                                                                \
    X(freeReplyObject)                                                                              \
    X(redisReaderCreate)                                                                            \
    X(redisReaderFeed)                                                                              \
    X(redisReaderGetReply)                                                                          \
    X(redisReaderFree)

typedef struct kj__redis_api {
#define KJ_REDIS_FIELD_(name) __typeof__(name) *name;
    KJ_REDIS_SYMBOLS(KJ_REDIS_FIELD_)
#undef KJ_REDIS_FIELD_
    const char *library; /* the file loaded */
} kj__redis_api;
#else
typedef struct kj__redis_api kj__redis_api;
#endif

/* Loads hiredis once per process (thread-safe): $KERNJIT_LIBHIREDIS when set (a path or a soname),
 * else the soname of the header kernjit was built with. KJ_ERR_UNSUPPORTED names what is missing:
 * the header at build time, the library, a symbol, or a library whose layout is not the header's. */
kj_status kj__redis_load(const kj__redis_api **api);

#endif
