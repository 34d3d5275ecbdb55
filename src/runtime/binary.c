/* The binary for a prepared request (binary.h): the tiers in front of the compiler, the compile and
 * link, and what an entry's description keeps for a later hit. The remote and seed tiers are the few
 * lines that ask their store (cache/remote.h, cache/seed.h) and use an entry as a disk hit would: they
 * share this file's helpers and would otherwise call back into it. */
#include "runtime/binary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "jit/compile.h"
#include "jit/link.h"
#include "runtime/flight.h"
#include "runtime/runtime.h"

void kj__binary_free(kj__binary *b) {
    free(b->data);
    free(b->lowered_name);
    kj__strings_free(b->lowered, b->lowered_count);
    free(b->log);
    kj__resources_free(&b->resources);
    memset(b, 0, sizeof *b);
}

/* The entry's description keeps what a disk hit needs besides the binary: the lowered name of a C++
 * entry (first, so that no long option list can push it past the description's bound), the kernels'
 * resources (bounded, next) and the compiler's warnings (last, capped), which a hit shows again as
 * ccache replays a compiler's output. */
#define MAX_STORED_WARNINGS (16u << 10)

/* The rest of the line after "tag" at a line's start in desc; "" when the tag is last; NULL when
 * absent. to_end: everything after the tag's line instead. */
static char *from_description(const char *desc, const char *tag, int to_end) {
    size_t n = strlen(tag);
    for (const char *line = desc; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, tag, n) != 0) continue;
        const char *v = line + n;
        return to_end ? kj__strdup(v) : kj__strndup(v, strcspn(v, "\n"));
    }
    return NULL;
}

static char *stored_description(const kj__prepared *p, const kj__binary *b) {
    kj__buf d = {0};
    kj__buf_puts(&d, ""); /* "" rather than NULL when there is nothing else */
    for (size_t i = 0; i < b->lowered_count; i++) kj__buf_printf(&d, "lowered: %s\n", b->lowered[i]);
    kj__resources_describe(&b->resources, &d);
    kj__buf_puts(&d, p->description);
    if (b->log && *b->log) {
        size_t n = strlen(b->log);
        kj__buf_printf(&d, "warnings:\n%.*s%s\n", (int)(n > MAX_STORED_WARNINGS ? MAX_STORED_WARNINGS : n), b->log,
                       n > MAX_STORED_WARNINGS ? "\n(cut short)" : "");
    }
    return d.data;
}

/* Moves -minimal to the end of the option list and returns the count without it. */
static size_t without_minimal(const kj__prepared *p, const char **o) {
    for (size_t i = 0; i + 1 < p->option_count; i++)
        if (strcmp(o[i], "-minimal") == 0) {
            const char *m = o[i];
            memmove(o + i, o + i + 1, (p->option_count - i - 1) * sizeof *o);
            o[p->option_count - 1] = m;
            break;
        }
    return p->option_count - 1;
}

static void count(kj_runtime *rt, uint64_t *counter) {
    pthread_mutex_lock(&rt->lock);
    (*counter)++;
    pthread_mutex_unlock(&rt->lock);
}

/* NVRTC on unit u of the program, with kernjit's shortcuts where the program allows them (-minimal,
 * the entry alone), and as written when that compile fails (the result is still one function of the
 * key's inputs: the same inputs always take this way, so it is stored under the same key). The output
 * is the binary, or what kj_emit asks for: PTX, or LTO-IR with -dlto after the key's options. */
static kj_status compile_unit(kj_runtime *rt, const kj__prepared *p, size_t u, kj_emit_format format, kj__compiled *c) {
    kj__unit_options options; /* room for one option more than the key's */
    KJ_FORWARD(kj__unit_options_make(p, u, &options));
    int ltoir = format == KJ_EMIT_LTOIR || p->lto, add_dlto = format == KJ_EMIT_LTOIR && !p->lto;
    const char *expressions[KJ_MAX_ENTRIES];
    size_t n = 0;
    for (size_t e = 0; e < p->expression_count; e++)
        if (p->lowers_here[u] & (1ull << e)) expressions[n++] = p->expressions[e];
    kj__compile_job job = {p->units[u],
                           options.options,
                           p->option_count,
                           expressions,
                           n,
                           p->target.ptx || format == KJ_EMIT_PTX,
                           ltoir,
                           u == 0 ? p->alone_text : NULL};
    if (add_dlto) options.options[job.option_count++] = "-dlto";
    kj_status s = kj__compile(&job, c);
    if (s == KJ_ERR_COMPILE && (p->minimal || job.text)) {
        kj__log(&rt->log, KJ_LOG_INFO, "%s: compiling %s%s%s failed; compiling it as written", p->units[u]->name,
                job.text ? p->entry : "it", job.text ? " alone" : "", p->minimal ? " with -minimal" : "");
        if (p->minimal) {
            job.option_count = without_minimal(p, options.options);
            if (add_dlto) options.options[job.option_count++] = "-dlto"; /* where -minimal went */
        }
        job.text = NULL;
        s = kj__compile(&job, c);
    }
    kj__unit_options_free(&options);
    if (s == KJ_ERR_COMPILE) {
        char *said = kj__strdup(kj_last_error()); /* the note is appended to this very message */
        kj__arch_explain_failure(said);
        free(said);
    }
    pthread_mutex_lock(&rt->lock);
    if (s == KJ_OK) {
        rt->stats.compiles++;
        rt->stats.compile_ms += c->ms;
    } else {
        rt->stats.compile_errors++;
    }
    pthread_mutex_unlock(&rt->lock);
    return s;
}

/* What unit u's code is to nvJitLink. */
static kj__link_input link_input(const kj__prepared *p, size_t u, const kj__compiled *c) {
    switch (p->units[u]->kind) {
    case KJ__UNIT_PTX: return KJ__LINK_PTX;
    case KJ__UNIT_CUBIN: return KJ__LINK_CUBIN;
    case KJ__UNIT_LTOIR: return KJ__LINK_LTOIR;
    default: return p->lto ? KJ__LINK_LTOIR : c->is_ptx ? KJ__LINK_PTX : KJ__LINK_CUBIN;
    }
}

/* A unit given as compiled code (a .ptx, .cubin or .ltoir source): its bytes, as they are (PTX with
 * the NUL after its text that nvJitLink reads it up to). */
static kj_status take_as_is(const kj__source *unit, kj__compiled *c) {
    memset(c, 0, sizeof *c);
    int ptx = unit->kind == KJ__UNIT_PTX;
    c->binary = malloc(unit->len + 1);
    c->log = kj__strdup("");
    if (!c->binary || !c->log) {
        kj__compiled_free(c);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    memcpy(c->binary, unit->text, unit->len);
    c->binary[unit->len] = '\0';
    c->size = unit->len + ptx;
    c->is_ptx = ptx;
    return KJ_OK;
}

/* nvJitLink over the units' relocatable code (and the device runtime when the program launches
 * kernels): out gets the linked binary, the kernels' resources after linking and the linker's
 * warnings. */
static kj_status link_program(kj_runtime *rt, const kj__prepared *p, kj__compiled *c, kj__binary *out, kj__buf *log) {
    kj__link_unit units[KJ_MAX_SOURCES];
    for (size_t u = 0; u < p->unit_count; u++)
        units[u] = (kj__link_unit){p->units[u]->origin, c[u].binary, c[u].size, link_input(p, u, &c[u])};
    kj__linked linked;
    KJ_FORWARD(kj__link(p->target.arch, units, p->unit_count, p->devrt, &linked));
    /* code that nvJitLink compiles itself (LTO-IR, PTX) has ptxas's report in the linker's */
    char *rest = kj__resources_from_ptxas(linked.info, &out->resources);
    char *warnings = kj__resources_from_linker(rest ? rest : linked.info, p->target.arch, &out->resources);
    free(rest);
    if (warnings && *warnings) kj__buf_printf(log, "%s%s", log->len ? "\n" : "", warnings);
    free(warnings);
    out->data = linked.binary;
    out->size = linked.size;
    out->is_ptx = p->target.ptx;
    out->link_ms = linked.ms;
    linked.binary = NULL;
    kj__linked_free(&linked);
    pthread_mutex_lock(&rt->lock);
    rt->stats.links++;
    rt->stats.link_ms += out->link_ms;
    pthread_mutex_unlock(&rt->lock);
    return KJ_OK;
}

/* The lowered names unit u's compile gave (in the order of the expressions it lowers) into out, for
 * the expressions that have none yet; out->lowered_name then is the entry's. -1 when out of memory. */
static int take_lowered(const kj__prepared *p, size_t u, kj__compiled *c, kj__binary *out) {
    if (!p->expression_count) return 0;
    if (!out->lowered && !(out->lowered = calloc(p->expression_count, sizeof *out->lowered))) return -1;
    out->lowered_count = p->expression_count;
    for (size_t e = 0, j = 0; e < p->expression_count; e++) {
        if (!(p->lowers_here[u] & (1ull << e))) continue;
        if (!out->lowered[e] && j < c->lowered_count && c->lowered_names[j]) {
            out->lowered[e] = c->lowered_names[j];
            c->lowered_names[j] = NULL;
        }
        j++;
    }
    for (size_t e = 0; e < p->expression_count; e++) /* the compiled inputs' kernels: their own names */
        if ((p->unplaced & (1ull << e)) && !out->lowered[e] && !(out->lowered[e] = kj__strdup(p->expressions[e])))
            return -1;
    size_t entry = p->listed_count ? p->listed_index : 0;
    if (!out->lowered_name && out->lowered[entry] && !(out->lowered_name = kj__strdup(out->lowered[entry]))) return -1;
    return 0;
}

/* The first name expression without a lowered name, or NULL when each has one. */
static const char *unlowered(const kj__prepared *p, const kj__binary *b) {
    for (size_t e = 0; e < p->expression_count; e++)
        if (e >= b->lowered_count || !b->lowered[e]) return p->expressions[e];
    return NULL;
}

/* A binary that lacks an entry asked for is refused, naming it, and freed. */
static kj_status refuse_unlowered(const kj__prepared *p, kj__binary *out) {
    const char *missing = unlowered(p, out);
    if (!missing) return KJ_OK;
    kj_status s = KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY,
                          "no kernel '%.200s' in %s (for templates give the instance, e.g. "
                          "scale<float,256>)",
                          missing, p->src->origin);
    kj__binary_free(out);
    return s;
}

/* The program's binary, built now: each unit compiled by NVRTC (one source alone is the binary),
 * then linked when the program is relocatable. out also gets the lowered name of the entry, the
 * warnings of both tools and each kernel's resources. */
static kj_status compile_program(kj_runtime *rt, const kj__prepared *p, kj__binary *out) {
    /* nvJitLink links machine code (PTX only from LTO-IR, which the device runtime has none of) */
    if (p->rdc && p->target.ptx) {
        char *where = p->unit_count > 1 ? kj__prepared_origins(p) : NULL;
        kj_status s = KJ_FAIL(KJ_ERR_UNSUPPORTED,
                              "%s cannot be built as PTX (%s): %s, and kernjit links with nvJitLink, "
                              "which makes machine code; build it for an sm_XY target",
                              where              ? where
                              : p->src->embedded ? p->src->name
                                                 : p->src->origin,
                              p->target.arch,
                              p->devrt ? "it launches kernels, so the device runtime is linked in"
                                       : "its sources are linked into one program");
        free(where);
        return s;
    }
    kj__compiled c[KJ_MAX_SOURCES];
    memset(c, 0, sizeof c);
    kj__buf log = {0};
    kj_status s = kj__buf_puts(&log, "") ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory") : KJ_OK;
    for (size_t u = 0; u < p->unit_count && s == KJ_OK; u++) {
        if (p->units[u]->kind != KJ__UNIT_CU) {
            s = take_as_is(p->units[u], &c[u]);
            continue;
        }
        if ((s = compile_unit(rt, p, u, KJ_EMIT_CUBIN, &c[u])) != KJ_OK) break;
        out->compile_ms += c[u].ms;
        if (*c[u].log) kj__buf_printf(&log, "%s%s", log.len ? "\n" : "", c[u].log);
        if (take_lowered(p, u, &c[u], out) != 0) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        if (kj__resources_add(&out->resources, &c[u].resources) != 0) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    if (s == KJ_OK && p->rdc) {
        s = link_program(rt, p, c, out, &log);
    } else if (s == KJ_OK) {
        out->data = c[0].binary;
        out->size = c[0].size;
        out->is_ptx = c[0].is_ptx;
        c[0].binary = NULL;
    }
    for (size_t u = 0; u < p->unit_count; u++) kj__compiled_free(&c[u]);
    if (s != KJ_OK || !log.data) {
        kj__buf_free(&log);
        kj__binary_free(out);
        return s != KJ_OK ? s : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    out->log = log.data;
    return KJ_OK;
}

/* The "lowered: " lines of a stored description, one per name expression in order, into out. -1
 * when out of memory. */
static int lowered_from_description(const kj__prepared *p, const char *desc, kj__binary *out) {
    if (!(out->lowered = calloc(p->expression_count, sizeof *out->lowered))) return -1;
    out->lowered_count = p->expression_count;
    size_t e = 0;
    for (const char *line = desc; line && *line && e < p->expression_count;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "lowered: ", 9) != 0) continue;
        if (!(out->lowered[e++] = kj__strndup(line + 9, strcspn(line + 9, "\n")))) return -1;
    }
    size_t entry = p->listed_count ? p->listed_index : 0;
    if (out->lowered[entry] && !(out->lowered_name = kj__strdup(out->lowered[entry]))) return -1;
    return 0;
}

/* Fills out from a stored entry (on disk, or fetched from the remote): the PTX flag, and from its
 * description (taken) NVRTC's warnings when it compiled it (shown again), the kernels' resources and
 * the lowered name of a C++ entry. 0 when the entry lacks the lowered name the request needs: it is
 * compiled again; -1 when out of memory. */
static int use_stored(kj_runtime *rt, const kj__prepared *p, uint32_t flags, char *desc, kj__binary *out) {
    out->is_ptx = (flags & KJ_CACHE_FLAG_PTX) != 0;
    out->log = from_description(desc, "warnings:\n", 1);
    if (!out->log) out->log = kj__strdup("");
    int oom = !out->log || kj__resources_from_description(desc, &out->resources) != 0;
    if (!oom && p->expression_count) oom = lowered_from_description(p, desc, out) != 0;
    free(desc);
    if (oom) return -1;
    if (p->expression_count && (unlowered(p, out) || !out->lowered_name)) return 0;
    if (out->log && *out->log)
        kj__log(&rt->log, KJ_LOG_WARN, "%s: NVRTC's warnings when it compiled this kernel (now from the cache):\n%s",
                p->src->name, out->log);
    return 1;
}

/* ---- the remote tier (remote.h) ---------------------------------------------------------------- */

/* After a disk miss: a verified entry from the remote cache, stored on disk (when there is a disk
 * cache) and used as a disk entry would be. */
static int remote_hit(kj_runtime *rt, const kj__prepared *p, kj__binary *out, kj__remote_claim *claim) {
    kj__remote_entry e;
    if (!kj__remote_lookup(rt->remote, p->target.cache_arch, &p->key, &e, claim)) return 0;
    char *desc = kj__strndup(e.description, e.description_len);
    out->data = malloc(e.len ? e.len : 1);
    if (desc && out->data) {
        memcpy(out->data, e.payload, e.len);
        out->size = e.len;
        out->origin = KJ_ORIGIN_REMOTE;
        out->stored = rt->cache && kj__cache_store(rt->cache, p->target.cache_arch, &p->key, desc, e.payload, e.len,
                                                   e.flags, out->path) == 0;
    }
    free(e.data);
    if (!desc || !out->data || use_stored(rt, p, e.flags, desc, out) != 1) {
        if (!out->data) free(desc);
        kj__binary_free(out);
        return 0;
    }
    if (!out->stored) out->path[0] = '\0';
    kj__log(&rt->log, KJ_LOG_INFO, "%s: remote hit%s%s", p->src->name, out->stored ? ", stored as " : "", out->path);
    return 1;
}

/* After a compile here: the entry is pushed in the background, and the key's lease, when this
 * process holds it, released once it is there; after a failed compile the lease is let go. */
static void remote_publish(kj_runtime *rt, const kj__prepared *p, const kj__binary *b, kj__remote_claim *claim,
                           kj_status s) {
    if (!rt->remote) return;
    char *desc = s == KJ_OK ? stored_description(p, b) : NULL;
    size_t size = 0;
    uint8_t *entry = desc ? kj__cache_format_entry(&p->key, desc, b->data, b->size, b->is_ptx ? KJ_CACHE_FLAG_PTX : 0,
                                                   &size)
                          : NULL;
    free(desc);
    if (entry) kj__remote_publish(rt->remote, p->target.cache_arch, &p->key, entry, size, claim);
    else kj__remote_abandon(rt->remote, claim);
}

static kj_status obtain_elsewhere(kj_runtime *rt, const kj__prepared *p, kj__binary *out);
static kj_status compile_binary(kj_runtime *rt, const kj__prepared *p, kj__binary *out);
static kj_status obtain_here(kj_runtime *rt, const kj__prepared *p, kj__binary *out);

/* A waiter's copy of the entry another runtime of this process obtained at the same moment, used as a
 * disk entry is (and stored in this runtime's disk cache when that is not the leader's). 0 when it
 * cannot be used. */
static int from_flight(kj_runtime *rt, const kj__prepared *p, const kj__flight_entry *e, kj__binary *out) {
    memset(out, 0, sizeof *out);
    char *desc = kj__strdup(e->description);
    out->data = malloc(e->size ? e->size : 1);
    if (!desc || !out->data) {
        free(desc);
        kj__binary_free(out);
        return 0;
    }
    memcpy(out->data, e->data, e->size);
    out->size = e->size;
    out->origin = KJ_ORIGIN_MEMORY;
    if (rt->cache && strcmp(kj__cache_root(rt->cache), e->cache_root) != 0) {
        out->stored = kj__cache_store(rt->cache, p->target.cache_arch, &p->key, e->description, e->data, e->size,
                                      e->flags, out->path) == 0;
        if (!out->stored) count(rt, &rt->stats.store_failures);
    } else if (rt->cache && *e->path) {
        out->stored = 1;
        snprintf(out->path, sizeof out->path, "%s", e->path);
    }
    if (use_stored(rt, p, e->flags, desc, out) != 1) {
        kj__binary_free(out);
        return 0;
    }
    if (!out->stored) out->path[0] = '\0';
    count(rt, &rt->stats.memory_hits);
    kj__log(&rt->log, KJ_LOG_INFO, "%s: from another runtime of this process (one compile per key)", p->src->name);
    return 1;
}

/* ---- the seed tier (seed.h) ------------------------------------------------------------------- */

/* A verified entry from a seed folder, used in place (nothing is stored in the disk cache). 0 when
 * no seed has one that can be used. */
static int seed_hit(kj_runtime *rt, const kj__prepared *p, kj__binary *out) {
    memset(out, 0, sizeof *out);
    if (!kj__seed_count(rt->seed)) return 0;
    char *payload, *desc;
    size_t len;
    uint32_t flags;
    if (kj__seed_load(rt->seed, p->target.cache_arch, &p->key, &payload, &len, &flags, &desc, out->path) != KJ__HIT)
        return 0;
    out->data = payload;
    out->size = len;
    out->origin = KJ_ORIGIN_SEED;
    out->stored = 1;
    if (use_stored(rt, p, flags, desc, out) != 1) { /* out of memory, or no lowered name: the other tiers */
        kj__binary_free(out);
        return 0;
    }
    count(rt, &rt->stats.seed_hits);
    kj__log(&rt->log, KJ_LOG_INFO, "%s: seed hit %s", p->src->name, out->path);
    return 1;
}

/* From a seed, else one runtime of the process obtains it (flight.h), the others that ask at the same
 * moment take its bytes. Seeds are read-only: each runtime reads its own. */
kj_status kj__obtain_binary(kj_runtime *rt, const kj__prepared *p, kj__binary *out) {
    if (seed_hit(rt, p, out)) return KJ_OK;
    int leads = 0;
    kj__flight *f = kj__flight_join(p->key.bytes, &leads);
    if (!f) return obtain_here(rt, p, out);
    if (!leads) {
        const kj__flight_entry *e = kj__flight_result(f);
        int used = e && from_flight(rt, p, e, out);
        kj__flight_leave(f);
        return used ? KJ_OK : obtain_here(rt, p, out);
    }
    kj_status s = obtain_here(rt, p, out);
    int waited = kj__flight_close(f); /* no copy for a flight nobody joined: the usual case */
    char *desc = s == KJ_OK && waited ? stored_description(p, out) : NULL;
    kj__flight_entry e = {out->data,
                          out->size,
                          out->is_ptx ? KJ_CACHE_FLAG_PTX : 0,
                          desc,
                          rt->cache ? kj__cache_root(rt->cache) : "",
                          out->stored ? out->path : ""};
    kj__flight_land(f, desc ? &e : NULL);
    free(desc);
    return s;
}

/* Memory missed: the disk cache, else the remote tier or a compile. */
static kj_status obtain_here(kj_runtime *rt, const kj__prepared *p, kj__binary *out) {
    memset(out, 0, sizeof *out);
    if (rt->cache) {
        char *payload;
        size_t len;
        uint32_t flags;
        char *desc = NULL;
        kj__lookup r = kj__cache_load(rt->cache, p->target.cache_arch, &p->key, &payload, &len, &flags, &desc,
                                      out->path);
        if (r == KJ__HIT) {
            out->data = payload;
            out->size = len;
            out->origin = KJ_ORIGIN_DISK;
            out->stored = 1;
            int used = use_stored(rt, p, flags, desc, out);
            if (used < 0) {
                kj__binary_free(out);
                return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
            }
            if (used) {
                count(rt, &rt->stats.disk_hits);
                kj__log(&rt->log, KJ_LOG_INFO, "%s: disk hit %s", p->src->name, out->path);
                return KJ_OK;
            }
            kj__binary_free(out); /* an entry without the lowered name cannot be used: compile again */
        }
        if (r == KJ__BAD) count(rt, &rt->stats.bad_entries);
    }
    return obtain_elsewhere(rt, p, out);
}

/* Not in memory, not on disk: the remote tier, else a compile here (pushed to the remote after). */
static kj_status obtain_elsewhere(kj_runtime *rt, const kj__prepared *p, kj__binary *out) {
    kj__remote_claim claim;
    if (remote_hit(rt, p, out, &claim)) return KJ_OK;
    kj_status s = compile_binary(rt, p, out);
    remote_publish(rt, p, out, &claim, s);
    return s;
}

static kj_status compile_binary(kj_runtime *rt, const kj__prepared *p, kj__binary *out) {
    count(rt, &rt->stats.misses);

    KJ_FORWARD(compile_program(rt, p, out));
    out->origin = KJ_ORIGIN_COMPILED;
    KJ_FORWARD(refuse_unlowered(p, out));
    if (out->log && *out->log) kj__log(&rt->log, KJ_LOG_WARN, "%s: NVRTC's warnings:\n%s", p->src->name, out->log);
    if (rt->cache) {
        char *desc = stored_description(p, out);
        if (desc && kj__cache_store(rt->cache, p->target.cache_arch, &p->key, desc, out->data, out->size,
                                    out->is_ptx ? KJ_CACHE_FLAG_PTX : 0, out->path) == 0)
            out->stored = 1;
        else count(rt, &rt->stats.store_failures);
        free(desc);
    }
    if (!out->stored) out->path[0] = '\0';
    kj__log(&rt->log, KJ_LOG_INFO, "%s: compiled for %s in %.1f ms%s%s", p->src->name, p->target.arch, out->compile_ms,
            out->stored ? ", stored as " : (rt->cache ? ", not stored" : ", no disk cache"), out->path);
    return KJ_OK;
}

kj_status kj__emit_unit(kj_runtime *rt, const kj__prepared *p, kj_emit_format format, kj__binary *out) {
    memset(out, 0, sizeof *out);
    KJ_RETURN_IF(p->unit_count > 1, KJ_ERR_USAGE,
                 "%s of a program of %zu sources: PTX and LTO-IR are a single "
                 "source's output (a program of several is linked into one cubin: emit cubin)",
                 format == KJ_EMIT_PTX ? "PTX" : "LTO-IR", p->unit_count);
    KJ_RETURN_IF(format == KJ_EMIT_PTX && p->lto, KJ_ERR_USAGE,
                 "PTX with -dlto: a -dlto compile makes LTO-IR (emit "
                 "ltoir), or the linked program (emit cubin)");
    count(rt, &rt->stats.misses);
    kj__compiled c;
    KJ_FORWARD(compile_unit(rt, p, 0, format, &c));
    /* PTX is text: its NUL stays after the data, uncounted */
    *out = (kj__binary){.data = c.binary,
                        .size = c.size - (format == KJ_EMIT_PTX && c.size && !c.binary[c.size - 1]),
                        .is_ptx = format == KJ_EMIT_PTX,
                        .log = c.log,
                        .resources = c.resources,
                        .origin = KJ_ORIGIN_COMPILED,
                        .compile_ms = c.ms};
    int oom = take_lowered(p, 0, &c, out);
    kj__strings_free(c.lowered_names, c.lowered_count);
    if (oom) {
        kj__binary_free(out);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    KJ_FORWARD(refuse_unlowered(p, out));
    return KJ_OK;
}
