#include "tunedb/remote_tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/compile.h"
#include "base/util.h"

#define TRIES 5
#define MAX_RESULTS 4096 /* per device: kernels x entries x fixed macros x size buckets */

/* Replace a field only if it still holds what was read (HGET gives false, '' here, when absent). */
static const char CAS_SCRIPT[] = "if (redis.call('HGET', KEYS[1], ARGV[1]) or '') ~= ARGV[2] then return 0 end "
                                 "redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) return 1";
/* Remove a field only if it still holds what was read. */
static const char FORGET_SCRIPT[] = "if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end "
                                    "return redis.call('HDEL', KEYS[1], ARGV[1])";
#define HASH_PREFIX "kernjit:tune:v1:"

static void hash_name(const char *device, int cc_major, int cc_minor, const char *target, const char *version,
                      char *out, size_t size) {
    int other = target && *target;
    snprintf(out, size, HASH_PREFIX "%s|%d.%d%s%s|%s|nvrtc%d", device, cc_major, cc_minor, other ? "/" : "",
             other ? target : "", version, kj__nvrtc_version());
}

static void field_name(const kj__tuned_rec *rec, char *out, size_t size) {
    snprintf(out, size, "%s\t%s\t%s\t%u", rec->kernel, rec->entry, *rec->fixed ? rec->fixed : "-", rec->bucket);
}

/* A value into its record, checking the signature (signed over the hash's and the field's names and
 * the line). 0 and *db holding the one record; -1 with why. */
static int open_record(kj__remote *r, const char *hash, const char *field, const char *value, size_t len,
                       kj__tunedb *db, char *why, size_t why_size) {
    char *text = kj__strndup(value, len);
    char *nl = text ? strchr(text, '\n') : NULL;
    if (!nl) {
        snprintf(why, why_size, "not a tuning record");
        free(text);
        return -1;
    }
    *nl = '\0';
    const char *signature = nl + 1;
    char *signed_name = kj__asprintf("%s\t%s", hash, field);
    int ok = signed_name && kj__remote_text_signed(r, signed_name, text, signature);
    free(signed_name);
    if (!ok) {
        snprintf(why, why_size,
                 *signature ? "signed with another secret, or changed after it was signed"
                            : "not signed, and this process requires signatures (a secret is set)");
        free(text);
        return -1;
    }
    kj__logger quiet = {0};
    *nl = '\n'; /* the parser takes whole lines */
    nl[1] = '\0';
    kj__tunedb_parse(text, strlen(text), hash, &quiet, db);
    free(text);
    if (db->count != 1) {
        snprintf(why, why_size, "a malformed tuning record");
        return -1;
    }
    return 0;
}

void kj__remote_tune_publish(kj__remote *r, const kj__tuned_rec *rec, const kj__tunedb_measured *measured) {
    if (!r || !kj__remote_redis(r) || kj__remote_settings(r)->mode != KJ_REMOTE_READWRITE) return;
    char hash[512], field[512], why[512], sig[65];
    hash_name(rec->device, rec->cc_major, rec->cc_minor, rec->target, rec->version, hash, sizeof hash);
    field_name(rec, field, sizeof field);
    char *line = kj__tunedb_format_record(rec), *signed_name = kj__asprintf("%s\t%s", hash, field), *value = NULL;
    if (line) line[strlen(line) - 1] = '\0';
    if (!line || !signed_name || kj__remote_sign_text(r, signed_name, line, sig) != 0 ||
        !(value = kj__asprintf("%s\n%s", line, sig))) {
        kj__remote_warn(r, "cannot sign or format the tuning result of %s; not published", rec->kernel);
        free(line), free(signed_name);
        return;
    }
    static const char *const lost = "it is kept in the local tuning database only";
    for (int attempt = 0; attempt < TRIES; attempt++) {
        const char *get[] = {"HGET", hash, field};
        kj__reply *reply = kj__remote_call(r, 3, get, NULL, "publishing a tuning result", lost);
        if (!reply) break;
        size_t len = 0;
        const char *old = kj__reply_str(reply, &len);
        char *old_copy = kj__strndup(old ? old : "", len);
        kj__reply_free(reply);
        kj__tunedb there = {0};
        int theirs = old && old_copy && open_record(r, hash, field, old_copy, len, &there, why, sizeof why) == 0;
        int keep_theirs = theirs && !kj__tunedb_replaces(rec, &there.recs[0], measured);
        double got;
        if (theirs && !keep_theirs && !kj__tunedb_better(rec, &there.recs[0]) &&
            kj__tunedb_unreproduced(&there.recs[0], measured, &got))
            kj__remote_note(r,
                            "the shared tuning result %s of %s, %s at %.1f GB/s, was not reproduced here (%.1f "
                            "GB/s): replaced by %s at %.1f GB/s",
                            field, hash, there.recs[0].values, there.recs[0].gbps, got, rec->values, rec->gbps);
        kj__tunedb_clear(&there);
        if (keep_theirs) {
            free(old_copy);
            break; /* the server's is faster: it stays, and this runtime merges it on its next first use */
        }
        const char *cas[] = {"EVAL", CAS_SCRIPT, "1", hash, field, old_copy ? old_copy : "", value};
        size_t lens[] = {4, strlen(CAS_SCRIPT), 1, strlen(hash), strlen(field), len, strlen(value)};
        reply = kj__remote_call(r, 7, cas, lens, "publishing a tuning result", lost);
        free(old_copy);
        if (!reply) break;
        long long swapped = kj__reply_int(reply);
        int refused = kj__reply_kind(reply) == KJ__REPLY_ERROR;
        kj__reply_free(reply);
        if (refused) {
            kj__remote_fault(r, KJ__REDIS_FAILED, "publishing a tuning result", "the server refused it", lost);
            break;
        }
        if (swapped) {
            kj__remote_count(r, KJ__RC_PUSHES, 1);
            break;
        }
        /* another machine changed it meanwhile: compare again with theirs */
    }
    free(line);
    free(signed_name);
    free(value);
}

size_t kj__remote_tune_fetch(kj__remote *r, const char *device, int cc_major, int cc_minor, const char *target,
                             const char *version, kj__tunedb *into) {
    if (!r || !kj__remote_redis(r)) return 0;
    char hash[512], why[512];
    hash_name(device, cc_major, cc_minor, target, version, hash, sizeof hash);
    /* the count first: a hash filled beyond what kernjit writes is not read */
    static const char *const what = "reading the shared tuning results",
                             *lost = "only the local tuning database is used";
    const char *len[] = {"HLEN", hash}, *get[] = {"HGETALL", hash};
    kj__reply *reply = kj__remote_call(r, 2, len, NULL, what, lost);
    long long fields = kj__reply_int(reply);
    kj__reply_free(reply);
    if (fields > MAX_RESULTS) {
        kj__remote_warn(r, "%s holds %lld tuning results, more than the %d kernjit reads; none is used", hash, fields,
                        MAX_RESULTS);
        return 0;
    }
    if (fields <= 0 || !(reply = kj__remote_call(r, 2, get, NULL, what, lost))) return 0;
    if (kj__reply_count(reply) > 2 * MAX_RESULTS) { /* grown since HLEN, or a server that says one and sends another */
        kj__remote_warn(r, "%s holds %zu tuning results, more than the %d kernjit reads; none is used", hash,
                        kj__reply_count(reply) / 2, MAX_RESULTS);
        kj__reply_free(reply);
        return 0;
    }
    size_t got = 0;
    for (size_t i = 0; i + 1 < kj__reply_count(reply); i += 2) {
        size_t flen, vlen;
        const char *f = kj__reply_str(kj__reply_at(reply, i), &flen),
                   *v = kj__reply_str(kj__reply_at(reply, i + 1), &vlen);
        char *field = f ? kj__strndup(f, flen) : NULL;
        kj__tunedb one = {0};
        if (field && v && open_record(r, hash, field, v, vlen, &one, why, sizeof why) == 0) {
            const kj__tuned_rec *rec = &one.recs[0];
            /* the hash is this device's: a record that says otherwise was not written by kernjit */
            if (strcmp(rec->device, device) == 0 && rec->cc_major == cc_major && rec->cc_minor == cc_minor &&
                strcmp(rec->target, target) == 0 && strcmp(rec->version, version) == 0 &&
                kj__tunedb_put(into, rec) == KJ_OK)
                got++;
        } else if (field) {
            kj__remote_count(r, KJ__RC_REFUSALS, 1);
            kj__remote_warn(r, "refused the tuning result %s of %s: %s; not used", field, hash, why);
        }
        kj__tunedb_clear(&one);
        free(field);
    }
    kj__reply_free(reply);
    return got;
}

/* One hash's results that match filter, removed (readwrite) or counted (*matching). Returns how many
 * were removed; -1 when the server stopped answering (a warning said so). */
static long forget_in(kj__remote *r, const char *hash, const kj_tune_filter *filter, int remove, size_t *matching) {
    static const char *const what = "forgetting shared tuning results",
                             *lost = "those that match come back at a runtime's next first use: run `kernjit tune "
                                     "--forget` again when the server answers";
    const char *len[] = {"HLEN", hash}, *get[] = {"HGETALL", hash};
    kj__reply *reply = kj__remote_call(r, 2, len, NULL, what, lost);
    if (!reply) return -1;
    long long fields = kj__reply_int(reply);
    kj__reply_free(reply);
    if (fields <= 0 || fields > MAX_RESULTS) return 0; /* none, or more than any runtime reads */
    if (!(reply = kj__remote_call(r, 2, get, NULL, what, lost))) return -1;
    long removed = 0;
    char why[512];
    for (size_t i = 0; i + 1 < kj__reply_count(reply) && removed >= 0; i += 2) {
        size_t flen, vlen;
        const char *f = kj__reply_str(kj__reply_at(reply, i), &flen),
                   *v = kj__reply_str(kj__reply_at(reply, i + 1), &vlen);
        char *field = f ? kj__strndup(f, flen) : NULL;
        kj__tunedb one = {0};
        /* a result this process would not use (another secret's, malformed) never comes back here */
        if (field && v && open_record(r, hash, field, v, vlen, &one, why, sizeof why) == 0 &&
            kj__tunedb_matches(&one.recs[0], filter)) {
            ++*matching;
            if (remove) {
                const char *argv[] = {"EVAL", FORGET_SCRIPT, "1", hash, field, v};
                size_t lens[] = {4, strlen(FORGET_SCRIPT), 1, strlen(hash), flen, vlen};
                kj__reply *done = kj__remote_call(r, 6, argv, lens, what, lost);
                if (!done) removed = -1;
                else removed += kj__reply_kind(done) == KJ__REPLY_INTEGER && kj__reply_int(done) == 1;
                kj__reply_free(done);
            }
        }
        kj__tunedb_clear(&one);
        free(field);
    }
    kj__reply_free(reply);
    return removed;
}

size_t kj__remote_tune_forget(kj__remote *r, const kj_tune_filter *filter) {
    if (!r) return 0;
    if (!kj__remote_redis(r)) {
        kj__remote_warn(r,
                        "the shared tuning results were not forgotten (%s): those that match come back at a "
                        "runtime's next first use",
                        kj__remote_unavailable(r));
        return 0;
    }
    int remove = kj__remote_settings(r)->mode == KJ_REMOTE_READWRITE;
    size_t removed = 0, matching = 0;
    int failed = 0;
    char cursor[32] = "0";
    do {
        const char *argv[] = {"SCAN", cursor, "MATCH", HASH_PREFIX "*", "COUNT", "1000"};
        kj__reply *reply = kj__remote_call(r, 6, argv, NULL, "listing the shared tuning results",
                                           "those that match come back at a runtime's next first use: run `kernjit "
                                           "tune --forget` again when the server answers");
        if (!reply) break;
        size_t n;
        const char *next = kj__reply_str(kj__reply_at(reply, 0), &n);
        snprintf(cursor, sizeof cursor, "%.*s", next && n < sizeof cursor ? (int)n : 1, next ? next : "0");
        const kj__reply *names = kj__reply_at(reply, 1);
        for (size_t i = 0; i < kj__reply_count(names) && !failed; i++) {
            const char *name = kj__reply_str(kj__reply_at(names, i), &n);
            char *hash = name ? kj__strndup(name, n) : NULL;
            long got = hash ? forget_in(r, hash, filter, remove, &matching) : 0;
            failed = got < 0;
            removed += got > 0 ? (size_t)got : 0;
            free(hash);
        }
        kj__reply_free(reply);
        if (failed) break;
    } while (strcmp(cursor, "0") != 0);
    if (!remove && matching)
        kj__remote_warn(r,
                        "%zu shared tuning result%s match%s, and stay%s on the server: this process only reads it "
                        "(KERNJIT_REMOTE_MODE=read), so %s back into the tuning database at a runtime's next first "
                        "use; remove %s with the same `kernjit tune --forget` where KERNJIT_REMOTE_MODE=readwrite",
                        matching, matching == 1 ? "" : "s", matching == 1 ? "es" : "", matching == 1 ? "s" : "",
                        matching == 1 ? "it comes" : "they come", matching == 1 ? "it" : "them");
    if (removed)
        kj__remote_note(r,
                        "removed %zu shared tuning result%s; machines that merged %s keep %s until they forget "
                        "%s too, or a tuning run there does not reproduce %s",
                        removed, removed == 1 ? "" : "s", removed == 1 ? "it" : "them", removed == 1 ? "it" : "them",
                        removed == 1 ? "it" : "them", removed == 1 ? "it" : "them");
    return removed;
}
