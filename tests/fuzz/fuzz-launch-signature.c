/* Fuzz target: the source scanner `kernjit launch` uses to name and count a kernel's parameters
 * (cli/launch_signature.c) when the driver cannot tell.
 *
 * Input: one byte for the count wanted (255: any, else 0..254), then the entry's name up to the first
 * '\n', then the source text. Every signature found must lie within the text, and every parameter's
 * text must be a terminated string that fits its buffer. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launch_signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    long want = data[0] == 255 ? -1 : (long)data[0];
    const char *rest = (const char *)data + 1;
    size_t len = size - 1;
    const char *nl = memchr(rest, '\n', len);
    size_t elen = nl ? (size_t)(nl - rest) : len;
    char *entry = malloc(elen + 1), *source = malloc(len - elen + 1);
    if (!entry || !source) return free(entry), free(source), 0;
    memcpy(entry, rest, elen);
    entry[elen] = '\0';
    size_t slen = nl ? len - elen - 1 : 0;
    memcpy(source, nl ? nl + 1 : "", slen);
    source[slen] = '\0';
    static launch_signature sig;
    if (launch_find_signature(source, slen, entry, want, &sig) == 0) {
        if (want >= 0 && sig.count != (size_t)want) abort();
        for (size_t i = 0; i < sig.count && i < LAUNCH_SIG_MAX; i++) {
            if (sig.start[i] > slen || sig.len[i] > slen - sig.start[i]) abort();
            char buf[64];
            memset(buf, 'x', sizeof buf);
            launch_signature_param(source, &sig, i, buf, sizeof buf);
            if (!memchr(buf, '\0', sizeof buf)) abort();
        }
    }
    free(entry);
    free(source);
    return 0;
}
