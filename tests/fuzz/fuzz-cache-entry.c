/* Fuzz target: the cache-entry reader (src/cache/cache.c). Entries are files that other processes (or a
 * disk fault) may have left in any state; reading one must never crash, read out of bounds or take
 * a wrong entry for a good one.
 *
 * Input: one mode byte, then the entry's bytes.
 *   mode bit 0  the harness writes the right checksum into the header first, so that mutations of the
 *               lengths, flags and key reach the checks behind the checksum
 *   mode bit 1  the entry is also written as a file into a private cache folder, named by the key in
 *               its header, and read back through kj__cache_load (open, fstat, read, verify, remove
 *               when bad)
 * A parse that succeeds must describe a region inside the input; a load that hits must return
 * exactly the payload that the parse found. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/sign.h"
#include "fuzz.h"
#include "base/util.h"

static char cache_dir[64];
static kj__cache *cache;

static void remove_cache(void) {
    kj__cache_close(cache);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cache_dir);
}

static kj__cache *the_cache(void) {
    if (!cache) {
        snprintf(cache_dir, sizeof cache_dir, "/tmp/kernjit-fuzz-XXXXXX");
        if (!mkdtemp(cache_dir)) abort();
        cache = kj__cache_open(cache_dir, 0, NULL);
        if (!cache) abort();
        atexit(remove_cache);
    }
    return cache;
}

static void check_parse(const uint8_t *entry, size_t size, const kj__key *key, int must_hit) {
    const char *desc;
    size_t dlen, plen;
    const uint8_t *payload;
    uint32_t flags;
    if (kj__cache_parse_entry(entry, size, key, &desc, &dlen, &payload, &plen, &flags) != 0) {
        if (must_hit) abort();
        return;
    }
    /* the regions it returns lie inside the input, one after the other, up to its end or to a
     * signature's trailer (a seed's or a remote value's, sign.h) */
    size_t whole = KJ_CACHE_HEADER_BYTES + dlen + plen;
    if ((const uint8_t *)desc != entry + KJ_CACHE_HEADER_BYTES || payload != entry + KJ_CACHE_HEADER_BYTES + dlen ||
        (whole != size && !(size == whole + KJ_SIGNED_TRAILER_BYTES && kj__sign_unsealed_size(entry, size) == whole)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    unsigned mode = data[0];
    size--;
    uint8_t *entry = malloc(size ? size : 1);
    if (!entry) return 0;
    memcpy(entry, data + 1, size);
    if ((mode & 1) && size >= KJ_CACHE_HEADER_BYTES)
        kj__hash128(entry + KJ_CACHE_HEADER_BYTES, size - KJ_CACHE_HEADER_BYTES, entry + 48);

    check_parse(entry, size, NULL, 0);
    kj__key key;
    memset(&key, 0, sizeof key);
    if (size >= 48) memcpy(key.bytes, entry + 32, 16);
    kj__hex(key.bytes, 16, key.hex);
    check_parse(entry, size, &key, 0);

    if (mode & 2) {
        kj__cache *c = the_cache();
        char path[PATH_MAX], name[PATH_MAX];
        snprintf(name, sizeof name, "%s/sm_90", cache_dir);
        mkdir(name, 0700);
        snprintf(name, sizeof name, "%s/sm_90/%s.cubin", cache_dir, key.hex);
        int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            int ok = write(fd, entry, size) == (ssize_t)size;
            close(fd);
            char *payload = NULL, *desc = NULL;
            size_t len = 0;
            uint32_t flags;
            kj__lookup r = ok ? kj__cache_load(c, "sm_90", &key, &payload, &len, &flags, &desc, path) : KJ__MISS;
            if (r == KJ__HIT) {
                /* what a hit returns is what the parse of the same bytes finds */
                const char *d;
                size_t dlen, plen;
                const uint8_t *p;
                uint32_t f;
                if (kj__cache_parse_entry(entry, size, &key, &d, &dlen, &p, &plen, &f) != 0 || plen != len ||
                    (len && memcmp(p, payload, len) != 0) || f != flags)
                    abort();
            }
            free(payload);
            free(desc);
            unlink(name);
        }
    }
    free(entry);
    return 0;
}
