/* kernjit seed: kernels built ahead of time into a folder that an application or an install carries
 * (a seed: the disk cache's layout and a manifest), for each target it supports; no GPU needed. A
 * runtime that lists the folder (kj_runtime_options.seed_dirs, KERNJIT_SEED_PATH, or the install's
 * share/kernjit/seed) loads these binaries instead of compiling them. */
#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "compile_workers.h"

#define MAX_KERNELS 64
#define MAX_DEFINES 64
#define MAX_ARCHS 16
#define MANIFEST "manifest.json"
#define MANIFEST_SCHEMA 1

static void help(void) {
    printf("usage: kernjit seed DIR [KERNEL[:ENTRY] | FILE.cu[:ENTRY]]...\n"
           "                    --arch sm_XY[,...] [--all] [--tuned]\n"
           "                    [-D NAME=VALUE[,VALUE...]]... [--threads J] [--json]\n"
           "\n"
           "Compiles kernels ahead of time into DIR, a seed folder: the disk cache's layout\n"
           "(DIR/sm_XY/<key>.cubin) and DIR/manifest.json (each entry's kernel, entry,\n"
           "macros, target, key and size), for every target of --arch; no GPU needed. A\n"
           "program that lists DIR (kj_runtime_options.seed_dirs, or KERNJIT_SEED_PATH)\n"
           "loads these binaries instead of compiling them: the first call of a kernel in a\n"
           "new process is a load, not a compile. Lookups go memory, seed, disk, remote,\n"
           "compile, all by the same key, computed from every input of the compile: a\n"
           "target, a header, an option or a toolkit that the seed was not built with finds\n"
           "no entry there and compiles as usual. The installed library also reads\n"
           "<prefix>/share/kernjit/seed (meson setup -Dseed_archs=sm_80,sm_90 builds the\n"
           "built-ins' there).\n"
           "\n"
           "Without KERNEL: every built-in kernel. A KERNEL (a built-in name, NAME.cu on\n"
           "KERNJIT_PATH, or a file) without :ENTRY gives each entry of its metadata. Each\n"
           "entry gets its default variant: the metadata's defaults, or the -D values given\n"
           "(NAME=V1,V2 builds each value); --all gives every variant of the tunables\n"
           "instead (as compile --all); --tuned adds the winners of the tuning database\n"
           "(`kernjit tune --show`) of those kernels, for every target (a winner tuned for\n"
           "a target of its own, such as sm_90a, for that one). -D applies to every kernel\n"
           "named: a macro that one of them lacks is an error.\n"
           "\n"
           "DIR is created (0755) when missing; otherwise it must be empty or a seed this\n"
           "command made (it has its manifest.json): entries accumulate, and entries\n"
           "already there are not compiled again. The folder and its files are made\n"
           "readable by all and writable by their owner only, so that an install can ship\n"
           "it; programs refuse a seed folder that others may write to. With\n"
           "KERNJIT_SEED_SECRET (or KERNJIT_REMOTE_SECRET) set, every entry is signed\n"
           "(HMAC-SHA256), and programs that have the secret refuse entries that are not\n"
           "signed with it. The entries compile in J worker processes (--threads J;\n"
           "default: the processors online, at most one an entry; 1: in this process).\n");
}

/* One entry to build: a kernel's entry with its macros, for one target. */
typedef struct job {
    const char *arch, *kernel, *entry; /* entry NULL: the kernel's only one */
    const kj_define *defines;
    size_t define_count;
    char *label; /* "sm_90 reduce:reduce_fast BLOCK_SIZE=512" */
} job;

typedef struct args {
    char *dir;
    const char *kernels[MAX_KERNELS], *entries[MAX_KERNELS];
    size_t nkernels;
    const char *archs[MAX_ARCHS];
    size_t narch;
    kj_define defines[MAX_DEFINES];
    const char *define_text[MAX_DEFINES]; /* as given, for the workers' command lines */
    size_t ndef;
    int all, tuned, json, worker;
    uint64_t threads;
    unsigned shard, shards;
    const char *shard_text; /* --shard as given, read once every option is */
    char *arch_text;        /* --arch as given (the workers') */
} args;

/* The list of jobs, and what its defines point into. */
typedef struct plan {
    job *jobs;
    size_t count, cap;
    kj_space *spaces[MAX_KERNELS];
    size_t nspaces;
    void **owned; /* the tuned jobs' macros */
    size_t nowned;
} plan;

static void plan_free(plan *p) {
    for (size_t i = 0; i < p->count; i++) free(p->jobs[i].label);
    for (size_t i = 0; i < p->nspaces; i++) kj_space_free(p->spaces[i]);
    for (size_t i = 0; i < p->nowned; i++) free(p->owned[i]);
    free(p->jobs);
    free(p->owned);
    memset(p, 0, sizeof *p);
}

static int own(plan *p, void *block) {
    void **grown = block ? realloc(p->owned, (p->nowned + 1) * sizeof *grown) : NULL;
    if (!grown) return free(block), -1;
    p->owned = grown;
    p->owned[p->nowned++] = block;
    return 0;
}

static int add_job(plan *p, const char *arch, const char *kernel, const char *entry, const kj_define *defines,
                   size_t count, const char *label) {
    if (p->count == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        job *grown = realloc(p->jobs, cap * sizeof *grown);
        if (!grown) return -1;
        p->jobs = grown;
        p->cap = cap;
    }
    char *text = cli_format("%s %s%s%s%s%s", arch, kernel, entry ? ":" : "", entry ? entry : "", *label ? " " : "",
                            label);
    if (!text) return -1;
    p->jobs[p->count++] = (job){arch, kernel, entry, defines, count, text};
    return 0;
}

/* The macros a kernel's space gets: the command line's, and unless --all each tunable it does not
 * name at its default, so that the space is the default variant (or the product of the lists given). */
static kj_status fixed_macros(const args *a, const kj_kernel_desc *d, kj_define *fixed, size_t *n) {
    *n = 0;
    for (size_t i = 0; i < a->ndef; i++) fixed[(*n)++] = a->defines[i];
    if (a->all) return KJ_OK;
    for (size_t i = 0; i < kj_desc_param_count(d); i++) {
        kj_param_info info = KJ_PARAM_INFO_INIT;
        kj_desc_param(d, i, &info);
        int given = 0;
        for (size_t k = 0; k < a->ndef && !given; k++) given = strcmp(a->defines[k].name, info.name) == 0;
        if (info.tunable && !info.launch && !given && *n < 2 * MAX_DEFINES)
            fixed[(*n)++] = (kj_define){info.name, info.default_value};
    }
    return KJ_OK;
}

/* The variants of one kernel (every entry, or the one named) for every target. */
static int plan_kernel(const args *a, plan *p, const char *kernel, const char *entry) {
    kj_kernel_desc *d;
    kj_status s = kj_describe(NULL, kernel, &d);
    if (s != KJ_OK) return cli_fail("seed", s);
    kj_define fixed[2 * MAX_DEFINES];
    size_t nfixed;
    fixed_macros(a, d, fixed, &nfixed);
    kj_space *space;
    s = kj_space_create(NULL, kernel, fixed, nfixed, &space);
    if (s != KJ_OK) {
        kj_desc_free(d);
        return cli_fail("seed", s);
    }
    p->spaces[p->nspaces++] = space;
    /* the entries: the one named, else the metadata's (copied: the description's strings are its own),
     * else none named (a file without metadata: its only kernel) */
    const char *names[256];
    size_t nentries = 0;
    int oom = 0;
    if (entry) names[nentries++] = entry;
    for (size_t e = 0; !entry && e < kj_desc_entry_count(d) && e < 256 && !oom; e++) {
        char *kept = cli_format("%s", kj_desc_entry(d, e));
        oom = !kept || own(p, kept) != 0;
        names[nentries++] = kept;
    }
    if (!nentries) names[nentries++] = NULL;
    kj_desc_free(d);
    for (size_t t = 0; t < a->narch && !oom; t++)
        for (size_t e = 0; e < nentries && !oom; e++)
            for (size_t i = 0; i < kj_space_count(space) && !oom; i++) {
                kj_variant v = KJ_VARIANT_INIT;
                kj_space_variant(space, i, &v);
                if (!v.skipped)
                    oom = add_job(p, a->archs[t], kernel, names[e], v.defines, v.define_count, v.label) != 0;
            }
    return oom ? cli_error_as("seed", KJ_ERR_HOST_MEMORY, "out of memory") : EXIT_OK;
}

/* --tuned: the tuning database's winners of the kernels named (all when none is). */
typedef struct tuned_visit {
    const args *a;
    plan *p;
    size_t winners; /* the records taken */
    int failed;
} tuned_visit;

static int wanted(const args *a, const char *kernel, const char *entry) {
    if (!a->nkernels) return 1;
    for (size_t i = 0; i < a->nkernels; i++)
        if (strcmp(a->kernels[i], kernel) == 0 && (!a->entries[i] || strcmp(a->entries[i], entry) == 0)) return 1;
    return 0;
}

static void tuned_entry(const kj_tuned *t, void *user) {
    tuned_visit *v = user;
    if (v->failed || !wanted(v->a, t->kernel, t->entry)) return;
    v->winners++;
    /* its macros: the fixed ones and the winner's values, "NAME=VALUE" each */
    char *text = cli_format("%s %s %s", t->kernel, t->entry, *t->fixed ? t->fixed : "");
    char *macros = cli_format("%s %s", t->fixed, t->values);
    kj_define *defines = calloc(2 * MAX_DEFINES, sizeof *defines);
    if (!text || !macros || !defines || own(v->p, text) || own(v->p, macros) || own(v->p, defines)) {
        v->failed = 1;
        return;
    }
    size_t n = 0;
    for (char *tok = strtok(macros, " "); tok && n < 2 * MAX_DEFINES; tok = strtok(NULL, " ")) {
        char err[256];
        if (cli_parse_define(tok, &defines[n], err, sizeof err) == 0) n++;
    }
    char *kernel = text, *entry = strchr(text, ' ');
    *entry++ = '\0';
    *strchr(entry, ' ') = '\0';
    char label[512];
    snprintf(label, sizeof label, "%s (tuned on %s)", t->values, t->device);
    /* a winner tuned for a target of its own (sm_90a) serves only runtimes of that target */
    for (size_t i = 0; i < v->a->narch && !v->failed; i++)
        if ((!*t->target || strcmp(t->target, v->a->archs[i]) == 0) &&
            add_job(v->p, v->a->archs[i], kernel, entry, defines, n, label) != 0)
            v->failed = 1;
}

static int plan_tuned(const args *a, plan *p, size_t *found) {
    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 1, NULL, 0);
    if (s != KJ_OK) return cli_fail("seed", s);
    tuned_visit v = {a, p, 0, 0};
    s = kj_tune_db_list(rt, tuned_entry, &v);
    kj_runtime_destroy(rt);
    if (v.failed) return cli_error_as("seed", KJ_ERR_HOST_MEMORY, "out of memory");
    if (s != KJ_OK && s != KJ_ERR_NOT_FOUND) return cli_fail("seed", s);
    *found = v.winners;
    return EXIT_OK;
}

static int make_plan(const args *a, plan *p, size_t *tuned) {
    *tuned = 0;
    int rc = EXIT_OK;
    if (a->nkernels) {
        for (size_t i = 0; i < a->nkernels && rc == EXIT_OK; i++) rc = plan_kernel(a, p, a->kernels[i], a->entries[i]);
    } else {
        for (size_t i = 0; i < kj_builtin_count() && rc == EXIT_OK; i++)
            rc = plan_kernel(a, p, kj_builtin_name(i), NULL);
    }
    if (rc == EXIT_OK && a->tuned) rc = plan_tuned(a, p, tuned);
    return rc;
}

static const char *job_label(const void *jobs, size_t i, int *skipped) {
    *skipped = 0;
    return ((const job *)jobs)[i].label;
}

/* ---- the seed's runtime: compiling into DIR ----------------------------------------------------- */

/* A compile-only runtime whose disk cache is the seed folder: never evicting, reading no seed
 * (what it builds must land in the folder) and no remote. */
static kj_status seed_runtime(const char *dir, kj_runtime **rt) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    cli_runtime_options(&o, 1, NULL, 0);
    o.cache_dir = dir;
    o.cache_max_bytes = UINT64_MAX;
    o.seed_dirs = "";
    o.remote_mode = KJ_REMOTE_OFF;
    return kj_runtime_create(&o, rt);
}

/* Job i compiled into the seed: its outcome, "compiled" or "cached"; NULL with the failure recorded. */
static const char *compile_job(kj_runtime *rt, const job *j, kj_status *status) {
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = j->kernel,
                      .entry = j->entry,
                      .defines = j->defines,
                      .define_count = j->define_count,
                      .arch = j->arch};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    *status = kj_compile(rt, &req, &r);
    if (*status != KJ_OK) return NULL;
    return r.cache_hit ? "cached" : "compiled";
}

/* The jobs of this process's part (shard of shards; 0 and 0: all), reported to a parent (worker) or
 * shown as progress. The first failure's status and message in *first. */
static kj_compile_all_result compile_here(kj_runtime *rt, const plan *p, const args *a, kj_status *first,
                                          char **first_message) {
    kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
    double t0 = cli_now_ms();
    size_t step = a->shards ? a->shards : 1, total = 0;
    for (size_t i = a->shard; i < p->count; i += step) total++;
    *first = KJ_OK;
    *first_message = NULL;
    for (size_t i = a->shard; i < p->count; i += step) {
        kj_status s;
        const char *outcome = compile_job(rt, &p->jobs[i], &s);
        r.variants++;
        if (outcome && strcmp(outcome, "cached") == 0) r.cached++;
        else if (outcome) r.compiled++;
        else r.failed++;
        if (!outcome && *first == KJ_OK) {
            *first = s;
            *first_message = cli_format("%s: %s", p->jobs[i].label, kj_last_error());
        }
        if (a->worker) {
            worker_done((long long)i, outcome ? outcome : "failed", outcome ? NULL : kj_last_error());
        } else {
            char detail[600];
            snprintf(detail, sizeof detail, "%s: %s", p->jobs[i].label, outcome ? outcome : "FAILED");
            cli_progress("seed", "compile", r.variants, total, detail);
        }
    }
    r.threads = 1;
    r.wall_ms = cli_now_ms() - t0;
    return r;
}

/* J workers: kernjit seed --worker --shard k/J --arch A [--all] [--tuned] [-D N=V]... -- DIR KERNEL... */
static void compile_in_workers(const args *a, const plan *p, unsigned processes, kj_compile_all_result *r,
                               workers_failures *failures) {
    const char *argv[16 + 2 * MAX_DEFINES + MAX_KERNELS];
    char *named[MAX_KERNELS] = {0};
    size_t n = 0;
    argv[n++] = "seed", argv[n++] = "--worker", argv[n++] = "--shard", argv[n++] = WORKERS_SHARD;
    argv[n++] = "--arch", argv[n++] = a->arch_text;
    if (a->all) argv[n++] = "--all";
    if (a->tuned) argv[n++] = "--tuned";
    for (size_t i = 0; i < a->ndef; i++) argv[n++] = "-D", argv[n++] = a->define_text[i];
    argv[n++] = "--", argv[n++] = a->dir;
    int ok = 1;
    for (size_t i = 0; i < a->nkernels; i++) {
        named[i] = a->entries[i] ? cli_format("%s:%s", a->kernels[i], a->entries[i]) : cli_format("%s", a->kernels[i]);
        ok = ok && named[i];
        argv[n++] = named[i];
    }
    argv[n] = NULL;
    workers_plan wp = {.cmd = "seed",
                       .args = argv,
                       .count = p->count,
                       .label = job_label,
                       .jobs = p->jobs,
                       .what = "seed entries",
                       .processes = processes};
    if (ok) workers_compile_all(&wp, r, failures);
    else cli_error_as("seed", KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < a->nkernels; i++) free(named[i]);
}

/* ---- the folder --------------------------------------------------------------------------------- */

/* DIR before any work: missing (it is created), a folder that is empty, or a seed (its manifest). */
static int check_dir(const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT) return EXIT_OK;
        return cli_usage("seed", "cannot use '%s' as the seed folder: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return cli_usage("seed",
                         "'%s' is not a folder: give a folder for the seed (one that "
                         "does not exist yet is created)",
                         dir);
    DIR *d = opendir(dir);
    if (!d) return cli_usage("seed", "cannot read the folder '%s': %s", dir, strerror(errno));
    int others = 0, manifest = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (strcmp(e->d_name, MANIFEST) == 0) manifest = 1;
        else others = 1;
    }
    closedir(d);
    if (others && !manifest)
        return cli_usage("seed",
                         "'%s' holds files and no " MANIFEST ": kernjit seed writes into a new or empty "
                         "folder, or a seed it made (a disk cache is not a seed: give another folder)",
                         dir);
    return EXIT_OK;
}

/* What the manifest says of each entry of the folder. */
typedef struct manifest_item {
    char *arch, *kernel, *entry, *macros, *key, *path;
    uint64_t bytes;
    int valid;
} manifest_item;

typedef struct manifest_state {
    manifest_item *items;
    size_t entries, cap;
    uint64_t bytes;
    int oom;
} manifest_state;

/* Readable by all, writable by the owner alone: what an install ships, and what programs accept. */
static void chmod_entry(const char *path) {
    chmod(path, 0644);
    char folder[4200];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (slash) *slash = '\0', chmod(folder, 0755);
}

static void take_entry(const kj_cache_entry *e, void *user) {
    manifest_state *m = user;
    chmod_entry(e->path);
    if (m->entries == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        manifest_item *grown = realloc(m->items, cap * sizeof *grown);
        if (!grown) {
            m->oom = 1;
            return;
        }
        m->items = grown;
        m->cap = cap;
    }
    manifest_item *it = &m->items[m->entries++];
    *it = (manifest_item){strdup(e->arch), strdup(e->kernel), strdup(e->entry), strdup(e->macros),
                          strdup(e->key),  strdup(e->path),   e->bytes,         e->valid};
    m->oom |= !it->arch || !it->kernel || !it->entry || !it->macros || !it->key || !it->path;
    m->bytes += e->bytes;
}

/* The manifest's order, the same whatever the folder's: target, kernel, entry, macros, key. */
static int by_name(const void *x, const void *y) {
    const manifest_item *a = x, *b = y;
    int c = strcmp(a->arch, b->arch);
    if (!c) c = strcmp(a->kernel, b->kernel);
    if (!c) c = strcmp(a->entry, b->entry);
    if (!c) c = strcmp(a->macros, b->macros);
    return c ? c : strcmp(a->key, b->key);
}

static void write_item(FILE *f, const manifest_item *e, const char *dir) {
    fprintf(f, "    {\"kernel\": ");
    json_escape_to(f, e->kernel);
    fprintf(f, ", \"entry\": ");
    if (*e->entry) json_escape_to(f, e->entry);
    else fprintf(f, "null");
    fprintf(f, ", \"arch\": ");
    json_escape_to(f, e->arch);
    fprintf(f, ", \"key\": ");
    json_escape_to(f, e->key);
    fprintf(f, ", \"size_bytes\": %" PRIu64 ", \"valid\": %s, \"macros\": {", e->bytes, e->valid ? "true" : "false");
    int first = 1;
    for (const char *s = e->macros; *s;) {
        size_t len = strcspn(s, " "), eq = strcspn(s, "=");
        if (eq < len) {
            char name[512], value[1100];
            snprintf(name, sizeof name, "%.*s", (int)eq, s);
            snprintf(value, sizeof value, "%.*s", (int)(len - eq - 1), s + eq + 1);
            fprintf(f, "%s", first ? "" : ", ");
            json_escape_to(f, name);
            fprintf(f, ": ");
            json_escape_to(f, value);
            first = 0;
        }
        s += len + (s[len] == ' ');
    }
    /* the file's path within the seed, which moves with it */
    size_t dl = strlen(dir);
    fprintf(f, "}, \"entry_path\": ");
    json_escape_to(f, strncmp(e->path, dir, dl) == 0 && e->path[dl] == '/' ? e->path + dl + 1 : e->path);
    fprintf(f, "}");
}

/* DIR/manifest.json, written whole (or left as it was), from what the folder holds now. */
static int write_manifest(kj_runtime *rt, int signed_, manifest_state *m) {
    memset(m, 0, sizeof *m);
    const char *dir = kj_cache_dir(rt);
    kj_status s = kj_cache_list(rt, take_entry, m);
    char *text = NULL;
    size_t size = 0;
    FILE *f = s == KJ_OK && !m->oom ? open_memstream(&text, &size) : NULL;
    int rc = s != KJ_OK ? cli_fail("seed", s)
             : !f       ? cli_error_as("seed", KJ_ERR_HOST_MEMORY, "out of memory")
                        : EXIT_OK;
    if (f) {
        qsort(m->items, m->entries, sizeof *m->items, by_name);
        kj_toolchain tc = KJ_TOOLCHAIN_INIT;
        kj_toolchain_query(&tc);
        fprintf(f,
                "{\"schema\": %d, \"kernjit_version\": \"%s\", \"nvrtc_version\": \"%d.%d\", \"signed\": %s,\n"
                "  \"entries\": [",
                MANIFEST_SCHEMA, kj_version_string(), tc.nvrtc_version / 1000, tc.nvrtc_version % 1000 / 10,
                signed_ ? "true" : "false");
        for (size_t i = 0; i < m->entries; i++) {
            fprintf(f, "%s\n", i ? "," : "");
            write_item(f, &m->items[i], dir);
        }
        fprintf(f, "%s]}\n", m->entries ? "\n  " : "");
        fclose(f);
        char path[4200];
        snprintf(path, sizeof path, "%s/" MANIFEST, dir);
        if ((rc = cli_write_file("seed", path, text, size)) == EXIT_OK) chmod(path, 0644);
    }
    chmod(dir, 0755);
    free(text);
    for (size_t i = 0; i < m->entries; i++) {
        manifest_item *e = &m->items[i];
        free(e->arch), free(e->kernel), free(e->entry), free(e->macros), free(e->key), free(e->path);
    }
    free(m->items);
    m->items = NULL;
    return rc;
}

/* The secret the library signs with: KERNJIT_SEED_SECRET, else KERNJIT_REMOTE_SECRET. */
static int secret_set(void) {
    const char *seed = getenv("KERNJIT_SEED_SECRET"), *remote = getenv("KERNJIT_REMOTE_SECRET");
    return (seed && *seed) || (remote && *remote);
}

/* ---- the command ---------------------------------------------------------------------------------- */

/* One option of the command line (cli_getopt): user is the args. */
static int option(void *user, int c, char *arg) {
    args *a = user;
    char err[256];
    switch (c) {
    case 'a': {
        /* as given, for the workers' command lines (cli_arch_list cuts arg at its commas) */
        char *joined = a->arch_text ? cli_format("%s,%s", a->arch_text, arg) : cli_format("%s", arg);
        free(a->arch_text);
        if (!(a->arch_text = joined)) return cli_error_as("seed", KJ_ERR_HOST_MEMORY, "out of memory");
        return cli_arch_list("seed", arg, a->archs, &a->narch, MAX_ARCHS);
    }
    case 'A': a->all = 1; break;
    case 'u': a->tuned = 1; break;
    case 'j': a->json = 1; break;
    case 'W': a->worker = 1; break;
    case 'S': a->shard_text = arg; break;
    case 'T': return cli_count_arg("seed", "--threads", arg, 1, 64, &a->threads);
    case 'D':
        if (a->ndef == MAX_DEFINES) return cli_usage("seed", "at most %d -D macros", MAX_DEFINES);
        a->define_text[a->ndef] = cli_format("%s", arg);
        if (!a->define_text[a->ndef]) return cli_error_as("seed", KJ_ERR_HOST_MEMORY, "out of memory");
        if (cli_parse_define(arg, &a->defines[a->ndef], err, sizeof err) != 0) return cli_usage("seed", "%s", err);
        a->ndef++;
        break;
    case 'h': help(); return CLI_DONE;
    }
    return EXIT_OK;
}

/* DIR KERNEL[:ENTRY]... */
static int operands(void *user, int count, char **words) {
    args *a = user;
    if (!count) return cli_usage("seed", "which folder? give the seed folder to write (kernjit seed DIR ...)");
    a->dir = words[0];
    if (!*a->dir) return cli_usage("seed", "the seed folder is '': give a folder");
    for (int i = 1; i < count; i++) {
        if (a->nkernels == MAX_KERNELS) return cli_usage("seed", "at most %d kernels", MAX_KERNELS);
        cli_program prog;
        int rc = cli_parse_program("seed", words + i, 1, NULL, &prog);
        if (rc != EXIT_OK) return rc;
        a->kernels[a->nkernels] = prog.kernel;
        a->entries[a->nkernels++] = prog.entry;
    }
    return EXIT_OK;
}

static int parse(int argc, char **argv, args *a) {
    static const cli_option_set set = {"arch=a: --all=A --tuned=u define=D: --threads=T: json=j help=h --worker=W "
                                       "--shard=S:",
                                       option, 0, operands};
    int rc = cli_getopt("seed", argc, argv, &set, 1, a);
    if (rc != EXIT_OK) return rc;
    const char *shard = a->shard_text;
    if (!a->narch)
        return cli_usage("seed", "which targets? give --arch sm_XY[,sm_XY...]: a seed holds binaries for the GPUs "
                                 "it names (kernjit info lists those NVRTC can target)");
    if (shard) {
        /* "K/N", only as a worker's part */
        char *slash = strchr(shard, '/'), *end;
        unsigned long k = strtoul(shard, &end, 10), n = slash ? strtoul(slash + 1, NULL, 10) : 0;
        if (!a->worker || end != slash || !n || k >= n || n > 4096)
            return cli_usage("seed", "--shard '%s' is for the worker processes kernjit seed starts (with --worker)",
                             shard);
        a->shard = (unsigned)k;
        a->shards = (unsigned)n;
    } else if (a->worker) {
        return cli_usage("seed", "--worker is for the processes kernjit seed starts: with --shard K/N");
    }
    return EXIT_OK;
}

/* Every target can be built by this NVRTC, checked before any work: a usage error names the one that
 * cannot. */
static int check_archs(const args *a) {
    for (size_t i = 0; i < a->narch; i++) {
        kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
        cli_runtime_options(&o, 1, a->archs[i], 0);
        o.cache_mode = KJ_CACHE_MEMORY_ONLY;
        o.remote_mode = KJ_REMOTE_OFF;
        kj_runtime *rt;
        kj_status s = kj_runtime_create(&o, &rt);
        if (s != KJ_OK) return cli_fail("seed", s);
        kj_runtime_destroy(rt);
    }
    return EXIT_OK;
}

static unsigned process_count(const args *a, size_t jobs) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = a->threads ? a->threads : online < 1 ? 1 : online > 64 ? 64 : (size_t)online;
    return (unsigned)(jobs < want ? (jobs ? jobs : 1) : want);
}

static void report(const args *a, const plan *p, const kj_compile_all_result *r, unsigned processes, size_t tuned,
                   uint64_t signed_now, int signed_, const manifest_state *m, const char *dir, const char *manifest) {
    if (a->json) {
        json_begin_object();
        json_string("seed_dir", dir);
        json_begin_array("archs");
        for (size_t i = 0; i < a->narch; i++) json_string(NULL, a->archs[i]);
        json_end_array();
        json_fields("jobs=%zu tuned=%zu compiled=%zu cached=%zu failed=%zu processes=%u wall_ms=%g signed?=%d "
                    "signed_now=%" PRIu64 " manifest_path=%s entries=%zu size_bytes=%" PRIu64,
                    p->count, tuned, r->compiled, r->cached, r->failed, processes, r->wall_ms, signed_, signed_now,
                    manifest, m->entries, m->bytes);
        json_end_object();
        return;
    }
    printf("seed %s: %zu entr%s for %zu target%s", dir, p->count, p->count == 1 ? "y" : "ies", a->narch,
           a->narch == 1 ? "" : "s");
    for (size_t i = 0; i < a->narch; i++) printf("%s%s", i ? ", " : " (", a->archs[i]);
    printf("): %zu compiled, %zu already there", r->compiled, r->cached);
    if (r->failed) printf(", %zu FAILED", r->failed);
    printf("; %.2f s in %u process%s\n", r->wall_ms / 1e3, processes, processes == 1 ? "" : "es");
    if (a->tuned)
        printf("  tuned   %zu winner%s of the tuning database, for each target\n", tuned, tuned == 1 ? "" : "s");
    printf("  signed  %s\n", signed_
                                 ? "yes (HMAC-SHA256 under the seed secret)"
                                 : "no (set KERNJIT_SEED_SECRET to sign: programs with the secret then require it)");
    printf("  manifest %s: %zu entr%s, %" PRIu64 " bytes in all\n", manifest ? manifest : "(not written)", m->entries,
           m->entries == 1 ? "y" : "ies", m->bytes);
}

int cmd_seed(int argc, char **argv) {
    args a;
    memset(&a, 0, sizeof a);
    int rc = parse(argc, argv, &a);
    if (rc == CLI_DONE) return EXIT_OK;
    if (rc == EXIT_OK && !a.worker) rc = check_dir(a.dir);
    if (rc == EXIT_OK && !a.worker) rc = check_archs(&a);
    plan p = {0};
    size_t tuned = 0;
    if (rc == EXIT_OK) {
        if (a.worker) worker_begin();
        rc = make_plan(&a, &p, &tuned);
    }
    kj_runtime *rt = NULL;
    if (rc == EXIT_OK) {
        kj_status s = seed_runtime(a.dir, &rt);
        if (s != KJ_OK) rc = cli_fail("seed", s);
        else if (!kj_cache_dir(rt))
            rc = cli_error_as("seed", KJ_ERR_IO, "cannot write the seed into '%s'%s", a.dir,
                              getenv("KERNJIT_CACHE_DISABLE") ? ": KERNJIT_CACHE_DISABLE is set (unset it)"
                                                              : " (the warning above says why)");
    }
    kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
    kj_status first = KJ_OK;
    char *first_message = NULL;
    workers_failures failures = {0};
    unsigned processes = rc == EXIT_OK && !a.worker ? process_count(&a, p.count) : 1;
    if (rc == EXIT_OK && a.worker) {
        compile_here(rt, &p, &a, &first, &first_message);
        worker_end(first);
        free(first_message);
        rc = kj_status_class(first);
    } else if (rc == EXIT_OK) {
        if (processes > 1) compile_in_workers(&a, &p, processes, &r, &failures);
        else r = compile_here(rt, &p, &a, &first, &first_message);
        cli_progress_end();
        int signed_ = secret_set();
        uint64_t signed_now = 0;
        kj_status s = signed_ ? kj_seed_sign(rt, &signed_now) : KJ_OK;
        manifest_state m;
        int mrc = write_manifest(rt, signed_ && s == KJ_OK, &m);
        char *manifest = mrc == EXIT_OK ? cli_format("%s/" MANIFEST, kj_cache_dir(rt)) : NULL;
        report(&a, &p, &r, processes, tuned, signed_now, signed_ && s == KJ_OK, &m, kj_cache_dir(rt), manifest);
        free(manifest);
        if (processes > 1) rc = workers_report("seed", &failures);
        else if (first != KJ_OK)
            rc = cli_error_as("seed", first, "%zu of %zu seed entries failed to compile; the first, %s", r.failed,
                              p.count, first_message ? first_message : "(no message)");
        if (rc == EXIT_OK && s != KJ_OK) rc = cli_fail("seed", s);
        if (rc == EXIT_OK) rc = mrc;
        free(first_message);
    }
    kj_runtime_destroy(rt);
    plan_free(&p);
    for (size_t i = 0; i < a.ndef; i++) free((char *)a.define_text[i]);
    free(a.arch_text);
    return rc;
}
