#include "cache/redis_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

#ifdef KJ_HAVE_HIREDIS

#define KJ_STR_(x) #x
#define KJ_STR(x) KJ_STR_(x)
#ifdef HIREDIS_SONAME
#define SONAME "libhiredis.so." KJ_STR(HIREDIS_SONAME)
#else
#define SONAME "libhiredis.so." KJ_STR(HIREDIS_MAJOR) "." KJ_STR(HIREDIS_MINOR)
#endif

static kj__redis_api api;
static int loaded;
static char load_message[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* The reply layout the header promises, checked on the library itself: an array of an integer and
 * a string, parsed by the library's reader, must read back field by field. A library of another
 * release (another layout) fails here rather than being misread later. */
static int layout_matches(void) {
    static const char wire[] = "*2\r\n:1234567\r\n$7\r\nkernjit\r\n";
    void *reader = api.redisReaderCreate();
    void *reply = NULL;
    int ok = reader && api.redisReaderFeed(reader, wire, sizeof wire - 1) == REDIS_OK &&
             api.redisReaderGetReply(reader, &reply) == REDIS_OK && reply;
    if (ok) {
        const redisReply *r = reply;
        ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_INTEGER &&
             r->element[0]->integer == 1234567 && r->element[1]->type == REDIS_REPLY_STRING &&
             r->element[1]->len == 7 && memcmp(r->element[1]->str, "kernjit", 7) == 0;
    }
    if (reply) api.freeReplyObject(reply);
    if (reader) api.redisReaderFree(reader);
    return ok;
}

/* The library stays loaded for the life of the process: connections may outlive any one runtime's
 * use of it only by a moment, but unloading while another runtime connects would be unsafe. */
static void load(void) {
    const char *lib = getenv("KERNJIT_LIBHIREDIS");
    if (!lib || !*lib) lib = SONAME;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_message, sizeof load_message, "cannot load %s (%s); install libhiredis (Debian: libhiredis0.14)",
                 lib, dlerror());
        return;
    }
#define KJ_REDIS_LOOKUP_(name)                                                                      \
    api.name = (__typeof__(name) *)dlsym(h, #name);                                                 \
    if (!api.name) {                                                                                \
        snprintf(load_message, sizeof load_message, "%s lacks %s: not a hiredis library", lib, #name); \
        return;                                                                                     \
    }
    KJ_REDIS_SYMBOLS(KJ_REDIS_LOOKUP_)
#undef KJ_REDIS_LOOKUP_
    if (!layout_matches()) {
        snprintf(load_message, sizeof load_message, "%s is not the hiredis release kernjit was built for (%s, "
                 "hiredis %d.%d): its replies are laid out differently", lib, SONAME, HIREDIS_MAJOR, HIREDIS_MINOR);
        return;
    }
    api.library = lib;
    loaded = 1;
}

kj_status kj__redis_load(const kj__redis_api **out) {
    pthread_once(&load_once, load);
    KJ_RETURN_IF(!loaded, KJ_ERR_UNSUPPORTED, "%s", load_message);
    *out = &api;
    return KJ_OK;
}

#else

kj_status kj__redis_load(const kj__redis_api **out) {
    (void)out;
    return KJ_FAIL(KJ_ERR_UNSUPPORTED, "this kernjit was built without hiredis's header (Debian: libhiredis-dev), so it "
                   "has no Redis client: rebuild with it to use a remote cache");
}

#endif
