/* Fuzz target: the metadata parser and the validation of a request's macros against it
 * (src/jit/spec.c, and the expressions of src/base/expr.c that `require` and `shared-dynamic` use).
 *
 * Input: kernel source text; after the first NUL byte, if any, the request's macros, one NAME=VALUE
 * a line (at most 16). Every successfully parsed spec is also resolved with those macros, and its
 * shared-memory size, carveout and pdl mark are evaluated for each entry, as the kernel pipeline does. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/util.h"
#include "jit/spec.h"

#define MAX_DEFINES 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t text_len = nul ? (size_t)(nul - data) : size;

    /* the macros: a private NUL-terminated copy, split in place */
    size_t rest_len = nul ? size - text_len - 1 : 0;
    char *rest = malloc(rest_len + 1);
    if (!rest) return 0;
    if (rest_len) memcpy(rest, nul + 1, rest_len);
    rest[rest_len] = '\0';
    kj_define defines[MAX_DEFINES];
    size_t ndef = 0;
    for (char *line = rest; line && *line && ndef < MAX_DEFINES;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            defines[ndef++] = (kj_define){line, eq + 1};
        } else {
            defines[ndef++] = (kj_define){line, NULL}; /* a macro without a value is refused, not a crash */
        }
        line = next;
    }

    kj__spec *spec = NULL;
    if (kj__spec_parse("fuzz.cu", text, text_len, &spec) == KJ_OK) {
        char **canonical = NULL;
        size_t count = 0;
        if (kj__spec_resolve(spec, "fuzz", defines, ndef, &canonical, &count) == KJ_OK) {
            uint32_t bytes;
            kj__spec_shared_dynamic(spec, "fuzz", NULL, canonical, count, &bytes);
            kj__spec_carveout(spec, NULL);
            kj__spec_pdl(spec, NULL);
            for (size_t i = 0; i < spec->entry_count; i++) {
                kj__spec_shared_dynamic(spec, "fuzz", spec->entries[i], canonical, count, &bytes);
                kj__spec_carveout(spec, spec->entries[i]);
                kj__spec_pdl(spec, spec->entries[i]);
            }
            kj__strings_free(canonical, count);
        }
        for (size_t i = 0; i < ndef; i++) kj__spec_find_param(spec, defines[i].name ? defines[i].name : "");
        kj__spec_free(spec);
    }
    free(rest);
    return 0;
}
