/* Fuzz target: the reader of Redis replies (src/cache/resp.c). Its input is whatever a server sends,
 * and a server may be hostile: reading must never crash nor allocate past its bound, and must agree
 * with itself on where a reply ends.
 *
 * Input: the bytes a server sent. Checks, under a small bound (64 KiB, so that headers announcing
 * more are exercised): a reply read whole takes no more than the input, and without its last byte
 * (or its second half) it is incomplete, never malformed; the replies that follow it are read in
 * turn; every reply can be described. */
#include <stdlib.h>
#include <string.h>

#include "cache/resp.h"
#include "fuzz.h"

#define MOST (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data;
    size_t left = size;
    for (int replies = 0; replies < 16; replies++) {
        kj__reply *r = NULL;
        size_t used = 0;
        char why[256];
        kj__resp_result res = kj__resp_parse(p, left, MOST, "FUZZ", &r, &used, why, sizeof why);
        if (res != KJ__RESP_DONE) {
            if (r) abort(); /* nothing is handed out with an incomplete or refused reply */
            return 0;
        }
        if (!r || used == 0 || used > left) abort();
        char text[512];
        kj__reply_describe(r, text, sizeof text);
        kj__reply_free(r);
        size_t cuts[] = {used - 1, used / 2};
        for (int i = 0; i < 2; i++) {
            kj__reply *part = NULL;
            size_t n = 0;
            if (kj__resp_parse(p, cuts[i], MOST, "FUZZ", &part, &n, why, sizeof why) != KJ__RESP_MORE || part) abort();
        }
        p += used;
        left -= used;
    }
    return 0;
}
