/* Fuzz target: the tuning-database reader (src/tunedb/tunedb.c). The file lives in the cache folder where
 * other processes write it and a crash or a full disk can leave it in any state; reading it must
 * never crash, and what it keeps must be exactly what it can write back.
 *
 * Input: the file's bytes. Checks, for whatever parses: every record it kept is valid as a record to
 * store (kj__tunedb_put accepts it); formatting the database and parsing that text again gives the
 * same records, and formatting those gives the same text (a round trip loses nothing and adds
 * nothing); each record is found again by its own key and size. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tunedb/tunedb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kj__tunedb db = {0};
    if (kj__tunedb_parse((const char *)data, size, "fuzz", NULL, &db) != KJ_OK) return 0; /* out of memory */

    kj__tunedb copy = {0};
    for (size_t i = 0; i < db.count; i++)
        if (kj__tunedb_put(&copy, &db.recs[i]) != KJ_OK) abort(); /* kept a record it would refuse */
    kj__tunedb_sort(&copy);
    char *text = kj__tunedb_format(&copy);
    if (!text) abort();
    kj__tunedb again = {0};
    if (kj__tunedb_parse(text, strlen(text), "fuzz (formatted)", NULL, &again) != KJ_OK) abort();
    if (again.count != copy.count) abort();
    char *text2 = kj__tunedb_format(&again);
    if (!text2 || strcmp(text, text2) != 0) abort();

    for (size_t i = 0; i < copy.count; i++) {
        const kj__tuned_rec *r = &copy.recs[i];
        const kj__tuned_rec *found = kj__tunedb_find(&copy, r->kernel, r->entry, r->fixed, r->n, r->device, r->cc_major,
                                                     r->cc_minor, r->target, r->version);
        if (!found || strcmp(found->values, r->values) != 0) abort();
    }
    free(text);
    free(text2);
    kj__tunedb_clear(&again);
    kj__tunedb_clear(&copy);
    kj__tunedb_clear(&db);
    return 0;
}
