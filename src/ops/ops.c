/* The families' common rules: value names, and "explicit, else tuned, else default" with its plans. */
#include "ops/ops.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb/tunedb.h"

#define MAX_TUNED 1024 /* the largest tuned value taken: no tunable of a family goes beyond */

int kj__name_find(const char *const *names, int count, const char *text) {
    for (int i = 0; text && i < count; i++)
        if (strcmp(text, names[i]) == 0) return i;
    return -1;
}

const char *kj_config_from_name(kj_config_from from) {
    static const char *const names[] = {"default", "tuned", "explicit"};
    return (unsigned)from < sizeof names / sizeof names[0] ? names[from] : "unknown";
}

/* "NAME=VALUE NAME=VALUE" of count defines into out. */
static void join(const kj_define *d, size_t count, char *out, size_t size) {
    out[0] = '\0';
    for (size_t i = 0, len = 0; i < count && len < size; i++, len = strlen(out))
        snprintf(out + len, size - len, "%s%s=%s", i ? " " : "", d[i].name, d[i].value);
}

/* The tuning database's values for the call, into values when each is usable (see ops.h). */
static int tuned(kj_runtime *rt, const kj__config_call *c, unsigned *values) {
    if (!c->count || !c->n) return 0;
    char fixed[256], list[KJ_TUNEDB_MAX_LINE];
    join(c->fixed, c->fixed_count, fixed, sizeof fixed);
    if (kj__tuned_find(rt, c->kernel, c->entry, fixed, c->n, list, sizeof list) != 0) return 0;
    /* a record from before a tunable existed (WAVES, say) gives what it has, the rest its default; a
     * value that is there but not a plain number from 1 to MAX_TUNED makes the whole record unused */
    unsigned v[KJ__CONFIG_MAX];
    size_t found = 0;
    for (size_t i = 0; i < c->count; i++) {
        char text[32];
        if (kj__tunedb_value(list, c->names[i], text, sizeof text) != 0) {
            v[i] = c->defaults[i];
            continue;
        }
        if (kj__tunedb_uint(list, c->names[i], MAX_TUNED, &v[i]) != 0) return 0;
        found++;
    }
    if (!found) return 0;
    if (c->suits && !c->suits(c->user, v)) return 0;
    memcpy(values, v, c->count * sizeof *v);
    return 1;
}

/* The call's tunables at values, as defines (their text in text). */
static void tunables(const kj__config_call *c, const unsigned *values, char (*text)[16], kj_define *out) {
    for (size_t i = 0; i < c->count; i++) {
        snprintf(text[i], sizeof text[i], "%u", values[i]);
        out[i] = (kj_define){c->names[i], text[i]};
    }
}

const kj_request *kj__config_request_of(const kj__config_call *c, const unsigned *values, kj__config_request *r) {
    size_t n = 0;
    for (size_t i = 0; i < c->fixed_count; i++) r->defines[n++] = c->fixed[i];
    for (size_t i = 0; i < c->pinned_count; i++) r->defines[n++] = c->pinned[i];
    tunables(c, values, r->text, r->defines + n);
    r->req = (kj_request){.size = sizeof(kj_request),
                          .kernel = c->kernel,
                          .entry = c->entry,
                          .defines = r->defines,
                          .define_count = n + c->count};
    return &r->req;
}

/* The kernel of the call's entry at out->values, and of its helper. */
static kj_status get(kj_runtime *rt, const kj__config_call *c, kj__config *out) {
    kj__config_request r;
    const kj_request *req = kj__config_request_of(c, out->values, &r);
    KJ_FORWARD(kj_kernel_get(rt, req, &out->kernel, &out->origin));
    if (!c->helper) return KJ_OK;
    r.req.entry = c->helper;
    return kj_kernel_get(rt, &r.req, &out->helper, NULL);
}

void kj__config_choose(kj_runtime *rt, const kj__config_call *c, kj__config *out) {
    memset(out, 0, sizeof *out);
    int given = 0;
    for (size_t i = 0; i < c->count; i++) {
        out->values[i] = c->given[i] ? c->given[i] : c->defaults[i];
        given |= c->given[i] != 0;
    }
    out->from = given ? KJ_CONFIG_EXPLICIT : tuned(rt, c, out->values) ? KJ_CONFIG_TUNED : KJ_CONFIG_DEFAULT;
}

static kj_status resolve_now(kj_runtime *rt, const kj__config_call *c, kj__config *out) {
    kj__config_choose(rt, c, out);
    kj_status s = get(rt, c, out);
    if (s == KJ_OK || out->from != KJ_CONFIG_TUNED || (s != KJ_ERR_INVALID_DEFINE && s != KJ_ERR_LIMIT)) return s;
    kj_define tried[KJ__CONFIG_MAX];
    char text[KJ__CONFIG_MAX][16], list[256];
    tunables(c, out->values, text, tried);
    join(tried, c->count, list, sizeof list);
    kj__log(kj__runtime_log(rt), KJ_LOG_WARN, "the tuning database's %s for %s cannot be used (%s); using the defaults",
            list, c->entry, kj_last_error());
    memcpy(out->values, c->defaults, c->count * sizeof *out->values);
    out->from = KJ_CONFIG_DEFAULT;
    return get(rt, c, out);
}

/* ---- plans ----------------------------------------------------------------------------------- */

/* What kj__config_resolve made of a call, kept per runtime under everything it was derived from:
 * the call's key (key_of: kernel, entry, helper, every macro's name and value, the tunables' names,
 * given values and defaults, and the size's bucket, or the size itself where suits() judges it), the
 * runtime (its device and target: the table is the runtime's) and the tuning database's copy
 * (kj__tuned_generation, where the call looks it up). Its kernels live as long as the runtime. */
typedef struct plan {
    struct plan *next;
    uint64_t hash, generation;
    kj__config config;
    size_t key_len;
    unsigned char key[];
} plan;

#define PLAN_CHAINS 256
#define PLAN_KEY_MAX 1024 /* a longer key (long macro values) is not kept: the call resolves each time */

/* Readers walk a chain without a lock; writers (under the lock) only put a complete plan at a chain's
 * head with a release store, and a plan is never changed or freed until the runtime is destroyed,
 * when no call can be running on it. A reader's acquire load of the head therefore sees every field of
 * every plan it reaches. A plan made stale (the database changed) stays where it is, behind the newer
 * plan of its key, which a reader finds first: plans grow with the distinct calls and the database's
 * changes, as the runtime's kernels grow with the distinct requests. */
typedef struct plans {
    pthread_mutex_t lock;
    plan *chains[PLAN_CHAINS];
} plans;

static kj_status plans_create(kj_runtime *rt, void **out) {
    (void)rt;
    plans *t = calloc(1, sizeof *t);
    if (!t) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return KJ_OK;
}

static void plans_destroy(kj_runtime *rt, void *p) {
    (void)rt;
    plans *t = p;
    for (size_t i = 0; i < PLAN_CHAINS; i++)
        for (plan *q = t->chains[i], *next; q; q = next) {
            next = q->next;
            free(q);
        }
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static const kj__state_key plans_key = {plans_create, plans_destroy};

typedef struct key_buf {
    unsigned char bytes[PLAN_KEY_MAX];
    size_t len;
    int full;
} key_buf;

static void put(key_buf *k, const void *p, size_t n) {
    if (k->full || n > sizeof k->bytes - k->len) {
        k->full = 1;
        return;
    }
    memcpy(k->bytes + k->len, p, n);
    k->len += n;
}

static void put_text(key_buf *k, const char *text) { put(k, text ? text : "", strlen(text ? text : "") + 1); }

static void put_defines(key_buf *k, const kj_define *d, size_t count) {
    put(k, &count, sizeof count);
    for (size_t i = 0; i < count; i++) {
        put_text(k, d[i].name);
        put_text(k, d[i].value);
    }
}

/* Every input of the call's outcome, as bytes (0 when they do not fit). The size enters as the
 * database's bucket (what the lookup uses) and whether it is looked up at all, or whole where suits()
 * judges the tuned values against it. */
static size_t key_of(const kj__config_call *c, key_buf *k) {
    k->len = 0;
    k->full = 0;
    uint64_t size = c->suits ? c->n : c->n ? (uint64_t)kj__tunedb_bucket(c->n) + 1 : 0;
    put(k, &size, sizeof size);
    put(k, &c->suits, sizeof c->suits);
    put_text(k, c->kernel);
    put_text(k, c->entry);
    put_text(k, c->helper);
    put_defines(k, c->fixed, c->fixed_count);
    put_defines(k, c->pinned, c->pinned_count);
    put(k, &c->count, sizeof c->count);
    for (size_t i = 0; i < c->count; i++) put_text(k, c->names[i]);
    put(k, c->given, c->count * sizeof c->given[0]);
    put(k, c->defaults, c->count * sizeof c->defaults[0]);
    return k->full ? 0 : k->len;
}

/* A hash of the key, eight bytes a step (it only spreads the plans over the chains: a plan is taken
 * when its whole key matches). */
static uint64_t hash_of(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull ^ n;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i < 8 ? n - i : 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h;
}

/* Whether the call's outcome depends on the tuning database: only then is its copy's number asked
 * (which makes the copy on first use, as the lookup would). */
static int looks_up(const kj__config_call *c) {
    if (!c->count || !c->n) return 0;
    for (size_t i = 0; i < c->count; i++)
        if (c->given[i]) return 0;
    return 1;
}

static const plan *plan_find(plans *t, uint64_t hash, const key_buf *k, uint64_t generation) {
    for (const plan *q = __atomic_load_n(&t->chains[hash % PLAN_CHAINS], __ATOMIC_ACQUIRE); q; q = q->next)
        if (q->hash == hash && q->key_len == k->len && memcmp(q->key, k->bytes, k->len) == 0)
            return q->generation == generation ? q : NULL; /* the newest of its key decides */
    return NULL;
}

static void plan_keep(plans *t, uint64_t hash, const key_buf *k, uint64_t generation, const kj__config *config) {
    plan *q = malloc(sizeof *q + k->len);
    if (!q) return; /* not kept: the next call resolves again */
    q->hash = hash;
    q->generation = generation;
    q->config = *config;
    q->key_len = k->len;
    memcpy(q->key, k->bytes, k->len);
    pthread_mutex_lock(&t->lock);
    plan **head = &t->chains[hash % PLAN_CHAINS];
    q->next = *head;
    __atomic_store_n(head, q, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&t->lock);
}

kj_status kj__config_resolve(kj_runtime *rt, const kj__config_call *c, kj__config *out) {
    void *state;
    KJ_FORWARD(kj__state(rt, &plans_key, &state));
    key_buf k;
    size_t len = key_of(c, &k);
    /* asked before the lookup: a copy installed after it gives a newer number, never an older one */
    uint64_t generation = looks_up(c) ? kj__tuned_generation(rt) : 0;
    uint64_t hash = len ? hash_of(k.bytes, len) : 0;
    const plan *q = len ? plan_find(state, hash, &k, generation) : NULL;
    if (q) {
        *out = q->config;
        out->origin = KJ_ORIGIN_MEMORY;
        return KJ_OK;
    }
    KJ_FORWARD(resolve_now(rt, c, out));
    if (len) plan_keep(state, hash, &k, generation, out);
    return KJ_OK;
}
