/* The public face of the remote cache: kj_remote_query (state and the fleet's counters),
 * kj_remote_push and kj_remote_pull (entries between the disk cache and the server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "base/error.h"
#include "base/sized.h"
#include "cache/remote.h"
#include "jit/arch.h"
#include "runtime/runtime.h"
#include "base/util.h"

#define PINGS 5
#define DRAIN_BEFORE_PUSH_MS 10000

/* ---- kj_remote_query -------------------------------------------------------------------------- */

/* The value of "name:" in an INFO reply, into out; "" when absent. */
static void info_field(const char *text, const char *name, char *out, size_t size) {
    out[0] = '\0';
    size_t n = strlen(name);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            snprintf(out, size, "%.*s", (int)strcspn(line + n + 1, "\r\n"), line + n + 1);
            return;
        }
}

static uint64_t info_u64(const char *text, const char *name) {
    char v[32];
    info_field(text, name, v, sizeof v);
    return strtoull(v, NULL, 10);
}

static void read_counters(const kj__reply *hash, kj_remote_info *info) {
    for (size_t i = 0; i + 1 < kj__reply_count(hash); i += 2) {
        size_t n;
        const char *name = kj__reply_str(kj__reply_at(hash, i), &n);
        char field[32], value[32];
        size_t vn;
        const char *v = kj__reply_str(kj__reply_at(hash, i + 1), &vn);
        if (!name || !v || n >= sizeof field || vn >= sizeof value) continue;
        snprintf(field, sizeof field, "%.*s", (int)n, name);
        snprintf(value, sizeof value, "%.*s", (int)vn, v);
        uint64_t x = strtoull(value, NULL, 10);
        struct {
            const char *name;
            uint64_t *to;
        } map[] = {{"hits", &info->hits},
                   {"misses", &info->misses},
                   {"waits", &info->waits},
                   {"pushes", &info->pushes},
                   {"refusals", &info->refusals},
                   {"errors", &info->errors},
                   {"fetches", &info->fetches},
                   {"bytes_fetched", &info->bytes_fetched},
                   {"bytes_pushed", &info->bytes_pushed}};
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
            if (strcmp(field, map[k].name) == 0) *map[k].to = x;
        if (strcmp(field, "fetch_us") == 0) info->fetch_ms_total = x / 1e3;
        if (strcmp(field, "fetch_us_max") == 0) info->fetch_ms_max = x / 1e3;
    }
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One PING: 0 and its round trip in *ms, or -1 with why (no answer, or a refusal). */
static int ping(kj__redis *redis, double *ms, char *why, size_t size) {
    const char *argv[] = {"PING"};
    kj__redis_cmd cmd = {1, argv, NULL};
    kj__reply *reply = NULL;
    double t0 = kj__now_ms();
    kj__redis_result res = kj__redis_exec(redis, 1, &cmd, &reply, why, size);
    *ms = kj__now_ms() - t0;
    int refused = res == KJ__REDIS_OK && kj__reply_kind(reply) == KJ__REPLY_ERROR;
    if (refused) snprintf(why, size, "PING: %s", kj__reply_str(reply, NULL));
    kj__reply_free(reply);
    return res == KJ__REDIS_OK && !refused ? 0 : -1;
}

static kj_status query(kj_runtime *rt, kj_remote_info *info) {
    memset(info, 0, sizeof *info);
    info->url = info->state = info->server_version = info->eviction_policy = "";
    kj__remote *r = rt->remote;
    if (!r) {
        info->state = "not configured (KERNJIT_REMOTE_CACHE is not set)";
        return KJ_OK;
    }
    const kj__remote_config *cfg = kj__remote_settings(r);
    kj__remote_report *rep = kj__remote_report_of(r);
    info->configured = 1;
    info->url = cfg->url;
    info->mode = cfg->mode;
    info->signed_entries = cfg->secret != NULL;
    info->state = rep->state;
    info->server_version = rep->version;
    info->eviction_policy = rep->policy;
    rep->version[0] = rep->policy[0] = '\0';
    kj__redis *redis = kj__remote_redis(r);
    if (!redis) {
        snprintf(rep->state, sizeof rep->state, "not used: %s", kj__remote_unavailable(r));
        return KJ_OK;
    }
    char why[512];
    double rtt[PINGS];
    for (int i = 0; i < PINGS; i++)
        if (ping(redis, &rtt[i], why, sizeof why) != 0) {
            snprintf(rep->state, sizeof rep->state, "unreachable: %s", why);
            return KJ_OK;
        }
    qsort(rtt, PINGS, sizeof rtt[0], by_value);
    info->round_trip_ms = rtt[PINGS / 2];
    info->reachable = 1;
    const char *server[] = {"INFO", "server"}, *memory[] = {"INFO", "memory"}, *dbsize[] = {"DBSIZE"},
               *stats[] = {"HGETALL", KJ_REMOTE_STATS_KEY};
    /* INFO's sections are a few KiB; the fleet's counters, a dozen fields */
    kj__redis_cmd cmds[4] = {{2, server, NULL, 64u << 10},
                             {2, memory, NULL, 64u << 10},
                             {1, dbsize, NULL, KJ__REDIS_REPLY_SMALL},
                             {2, stats, NULL, 64u << 10}};
    kj__reply *replies[4] = {NULL};
    kj__redis_result res = kj__redis_exec(redis, 4, cmds, replies, why, sizeof why);
    if (res != KJ__REDIS_OK) {
        snprintf(rep->state, sizeof rep->state, "answers PING, but not INFO: %s", why);
        return KJ_OK;
    }
    const char *text = kj__reply_str(replies[0], NULL);
    if (text) info_field(text, "redis_version", rep->version, sizeof rep->version);
    text = kj__reply_str(replies[1], NULL);
    if (text) {
        info_field(text, "maxmemory_policy", rep->policy, sizeof rep->policy);
        info->used_memory = info_u64(text, "used_memory");
        info->max_memory = info_u64(text, "maxmemory");
    }
    info->keys = (uint64_t)kj__reply_int(replies[2]);
    read_counters(replies[3], info);
    for (int i = 0; i < 4; i++) kj__reply_free(replies[i]);
    snprintf(rep->state, sizeof rep->state, "ok");
    return KJ_OK;
}

kj_status kj_remote_query(kj_runtime *rt, kj_remote_info *info) {
    KJ_RETURN_IF(!rt || !info, KJ_ERR_USAGE, "kj_remote_query: runtime and info are required");
    KJ_FORWARD(KJ__SIZED_CHECK(info, kj_remote_info, KJ_REMOTE_INFO_INIT));
    kj_remote_info full;
    KJ_FORWARD(query(rt, &full));
    KJ__SIZED_WRITE(info, full);
    return KJ_OK;
}

/* ---- push and pull ---------------------------------------------------------------------------- */

static kj_status need_tier(kj_runtime *rt, kj_remote_transfer *result) {
    KJ_RETURN_IF(!rt, KJ_ERR_USAGE, "runtime is NULL");
    if (result) {
        KJ_FORWARD(KJ__SIZED_CHECK(result, kj_remote_transfer, KJ_REMOTE_TRANSFER_INIT));
        kj_remote_transfer none = {0};
        KJ__SIZED_WRITE(result, none);
    }
    KJ_RETURN_IF(!rt->remote, KJ_ERR_NOT_FOUND,
                 "no remote cache: set KERNJIT_REMOTE_CACHE=redis://HOST:PORT (or "
                 "unix:///PATH), or kj_runtime_options.remote_cache");
    KJ_RETURN_IF(!rt->cache, KJ_ERR_NOT_FOUND,
                 "this runtime has no disk cache (memory only): nothing to move entries "
                 "from or to");
    return KJ_OK;
}

static int kernel_matches(const char *description, const char *kernel) {
    if (!kernel) return 1;
    char name[4096];
    kj__cache_description_kernel(description, name, sizeof name);
    return strcmp(name, kernel) == 0;
}

/* Before a push or a pull: KJ_ERR_UNSUPPORTED when the tier cannot work here (a secret and no
 * libcrypto, rediss:// and no libssl, a certificate or key that cannot be used), KJ_ERR_IO when the
 * server does not answer a PING, each naming the server, why, and what follows (nothing
 * moved): a command that moves nothing must not look like one that had nothing to move. */
static kj_status reach(kj__remote *r, const char *consequence) {
    const char *url = kj__remote_settings(r)->url;
    KJ_RETURN_IF(!kj__remote_redis(r), KJ_ERR_UNSUPPORTED, "the remote cache %s cannot be used here: %s; %s", url,
                 kj__remote_unavailable(r), consequence);
    char why[512];
    double ms;
    KJ_RETURN_IF(ping(kj__remote_redis(r), &ms, why, sizeof why) != 0, KJ_ERR_IO,
                 "the remote cache %s could not be reached: %s; %s", url, why, consequence);
    return KJ_OK;
}

/* Whether the server holds under name a value this process would use: 1 for the very bytes of value,
 * or another value that verifies (another builder's); 0 for none, or one that does not verify (signed
 * with a secret since rotated, damaged in place, unsigned where a secret is set), which the push
 * replaces; -1 after a warning (a fault). A length alone proves nothing: a rotated secret's
 * signatures are as long as the new one's. */
static int held_there(kj__remote *r, const char *name, const kj__key *key, const uint8_t *value, size_t size) {
    char most[32], why[512];
    snprintf(most, sizeof most, "%u", KJ_REMOTE_MAX_VALUE); /* at most one byte past the bound */
    const char *argv[] = {"GETRANGE", name, "0", most};
    kj__reply *reply = kj__remote_call(r, 4, argv, NULL, "a push", "not pushed");
    if (!reply) return -1;
    size_t n;
    const char *v = kj__reply_kind(reply) == KJ__REPLY_STRING ? kj__reply_str(reply, &n) : NULL;
    int held = v && n == size && memcmp(v, value, n) == 0;
    kj__remote_entry e;
    if (!held && v && n) {
        held = kj__remote_open_value(r, name, key, (const uint8_t *)v, n, &e, why, sizeof why) == 0;
        if (held) free(e.data);
        else kj__remote_note(r, "pushing over %s: %s", name, why);
    }
    kj__reply_free(reply);
    return held;
}

/* Pushes one local entry unless the server holds a value this process would use. */
static void push_one(kj_runtime *rt, const kj__cache_item *it, const char *kernel, kj_remote_transfer *t) {
    kj__remote *r = rt->remote;
    kj__key key;
    if (kj__key_from_hex(it->key, &key) != 0) return;
    char *payload, *desc = NULL, path[PATH_MAX];
    size_t len;
    uint32_t flags;
    if (kj__cache_load(rt->cache, it->arch, &key, &payload, &len, &flags, &desc, path) != KJ__HIT) return;
    size_t size = 0, sealed = 0;
    uint8_t *value = NULL;
    char name[160];
    kj__remote_entry_name(it->arch, &key, name, sizeof name);
    if (kernel_matches(desc, kernel)) {
        t->entries++;
        value = kj__cache_format_entry(&key, desc, payload, len, flags, &size);
        if (value) value = kj__remote_seal(r, name, value, size, &sealed);
        int held = value ? held_there(r, name, &key, value, sealed) : -1;
        if (held < 0) t->failed++;
        else if (held) t->present++;
        else if (sealed > KJ_REMOTE_MAX_VALUE) {
            kj__remote_warn(r, "%s is %zu bytes, above the %u MiB bound for values: not pushed", name, sealed,
                            KJ_REMOTE_MAX_VALUE >> 20);
            t->failed++;
        } else if (kj__remote_store_value(r, name, value, sealed)) {
            t->moved++;
            t->bytes += sealed;
        } else {
            t->failed++;
        }
    }
    free(value);
    free(payload);
    free(desc);
}

kj_status kj_remote_push(kj_runtime *rt, const char *kernel, kj_remote_transfer *result) {
    kj_remote_transfer t = {0};
    KJ_FORWARD(need_tier(rt, result));
    kj__remote *r = rt->remote;
    if (kj__remote_settings(r)->mode != KJ_REMOTE_READWRITE) {
        kj__remote_warn(r, "nothing pushed: this process only reads the remote cache (KERNJIT_REMOTE_MODE=read); a "
                           "builder pushes with KERNJIT_REMOTE_MODE=readwrite");
        return KJ_OK;
    }
    KJ_FORWARD(reach(r, "nothing pushed (the entries stay in the disk cache)"));
    size_t left = kj__remote_drain(r, DRAIN_BEFORE_PUSH_MS);
    if (left) kj__remote_warn(r, "%zu background pushes still waiting after %d s", left, DRAIN_BEFORE_PUSH_MS / 1000);
    kj__cache_item *items;
    size_t n;
    KJ_FORWARD(kj__cache_items(rt->cache, 0, &items, &n));
    for (size_t i = 0; i < n; i++) push_one(rt, &items[i], kernel, &t);
    kj__cache_items_free(items, n);
    if (result) KJ__SIZED_WRITE(result, t);
    return KJ_OK;
}

/* "kernjit:entry:v<format>:<arch>:<hex>" (NUL-terminated) into arch and key: NULL, or why the name is
 * not one kernjit writes. The folder is the disk cache's own test (a name such as
 * "kernjit:entry:v1:../../x:<hex>" would write outside the cache), and the key its file name. */
static const char *parse_entry_name(const char *name, char arch[16], kj__key *key) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, KJ_REMOTE_ENTRY_PREFIX "%d:", KJ_CACHE_FORMAT_VERSION);
    size_t p = strlen(prefix);
    const char *colon = strncmp(name, prefix, p) == 0 ? strrchr(name + p, ':') : NULL;
    if (!colon) return "not " KJ_REMOTE_ENTRY_PREFIX "<format>:<folder>:<key>";
    size_t folder = (size_t)(colon - (name + p));
    if (folder < 16) {
        memcpy(arch, name + p, folder);
        arch[folder] = '\0';
    }
    if (folder >= 16 || !kj__arch_folder_valid(arch))
        return "its folder is not one kernjit writes (" KJ_ARCH_FOLDER_FORM ")";
    if (kj__key_from_hex(colon + 1, key) != 0) return "its key is not 32 lower-case hex digits";
    return NULL;
}

static void pull_one(kj_runtime *rt, const char *name, size_t n, const char *kernel, kj_remote_transfer *t) {
    kj__remote *r = rt->remote;
    char arch[16], full[160], path[PATH_MAX], why[512], most[32];
    kj__key key;
    const char *bad = n < sizeof full && !memchr(name, '\0', n) ? NULL : "longer than any name kernjit writes";
    snprintf(full, sizeof full, "%.*s", (int)(n < sizeof full ? n : sizeof full - 1), name);
    if (!bad) bad = parse_entry_name(full, arch, &key);
    if (bad) {
        t->entries++, t->refused++;
        kj__remote_count(r, KJ__RC_REFUSALS, 1);
        kj__remote_warn(r, "refused the name %.100s%s: %s; not pulled", full, n > 100 ? "..." : "", bad);
        return;
    }
    char *payload, *desc = NULL;
    size_t len;
    uint32_t flags;
    if (kj__cache_load(rt->cache, arch, &key, &payload, &len, &flags, &desc, path) == KJ__HIT) {
        if (kernel_matches(desc, kernel)) t->entries++, t->present++;
        free(payload);
        free(desc);
        return;
    }
    snprintf(most, sizeof most, "%u", KJ_REMOTE_MAX_VALUE);
    const char *argv[] = {"GETRANGE", full, "0", most}; /* at most one byte past the bound */
    kj__reply *reply = kj__remote_call(r, 4, argv, NULL, "a pull", "not pulled");
    if (!reply) {
        t->entries++, t->failed++;
        return;
    }
    size_t vlen;
    const char *v = kj__reply_str(reply, &vlen);
    kj__remote_entry e;
    if (!v || !vlen) {
        /* expired or evicted since the scan */
    } else if (kj__remote_open_value(r, full, &key, (const uint8_t *)v, vlen, &e, why, sizeof why) != 0) {
        t->entries++, t->refused++;
        kj__remote_count(r, KJ__RC_REFUSALS, 1);
        kj__remote_warn(r, "refused %s: %s; not pulled", full, why);
    } else {
        char *d = kj__strndup(e.description, e.description_len);
        if (d && kernel_matches(d, kernel)) {
            t->entries++;
            if (kj__cache_store(rt->cache, arch, &key, d, e.payload, e.len, e.flags, path) == 0) {
                t->moved++;
                t->bytes += vlen;
            } else {
                t->failed++;
            }
        }
        free(d);
        free(e.data);
    }
    kj__reply_free(reply);
}

kj_status kj_remote_pull(kj_runtime *rt, const char *kernel, kj_remote_transfer *result) {
    kj_remote_transfer t = {0};
    KJ_FORWARD(need_tier(rt, result));
    kj__remote *r = rt->remote;
    KJ_FORWARD(reach(r, "nothing pulled"));
    char match[64], cursor[32] = "0";
    snprintf(match, sizeof match, KJ_REMOTE_ENTRY_PREFIX "%d:*", KJ_CACHE_FORMAT_VERSION);
    do {
        const char *argv[] = {"SCAN", cursor, "MATCH", match, "COUNT", "1000"};
        kj__reply *reply = kj__remote_call(r, 6, argv, NULL, "listing the remote entries", "the pull stops here");
        if (!reply) break;
        size_t n;
        const char *next = kj__reply_str(kj__reply_at(reply, 0), &n);
        snprintf(cursor, sizeof cursor, "%.*s", next && n < sizeof cursor ? (int)n : 1, next ? next : "0");
        const kj__reply *names = kj__reply_at(reply, 1);
        for (size_t i = 0; i < kj__reply_count(names); i++) {
            const char *name = kj__reply_str(kj__reply_at(names, i), &n);
            if (name) pull_one(rt, name, n, kernel, &t);
        }
        kj__reply_free(reply);
    } while (strcmp(cursor, "0") != 0);
    if (result) KJ__SIZED_WRITE(result, t);
    return KJ_OK;
}
