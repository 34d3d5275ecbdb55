/* kernjit compile: compile a kernel (or, with --all, every variant of it) into the cache; no GPU
 * needed. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "compile_workers.h"
#include "nvcc_options.h"

#define MAX_DEFINES 64
#define MAX_OPTIONS 32
#define MAX_ARCHS 16
#define MAX_ENTRIES 64 /* kj_request.entries */

static void help(void) {
    printf("usage: kernjit compile KERNEL|FILE.cu[:ENTRY] [MORE.cu[:ENTRY]]... [--entry E]\n"
           "           [-D NAME[=VALUE]]... [--arch TARGET[,...]] [--option NVRTC_OPTION]...\n"
           "           [--push] [--json] [--emit cubin|ptx|ltoir -o FILE]\n"
           "       kernjit compile KERNEL --all [-D NAME=V1,V2,...]... [--arch TARGET]\n"
           "           [--threads J] [--shard K/N] [--push] [--json]\n"
           "\n"
           "Compiles the kernel (a built-in name, NAME.cu on KERNJIT_PATH, or a file) with\n"
           "NVRTC into the disk cache and says whether it was already there, and where.\n"
           "Macros are checked against the kernel's metadata first (`kernjit list`); -D NAME\n"
           "alone is NAME=1. --option passes an option to NVRTC (--option=-maxrregcount=32),\n"
           "and every option is in the cache key. Without --arch the target is the GPU's, or\n"
           "sm_90 when there is none; --arch sm_80,sm_90 (or --arch again) builds each\n"
           "target in turn. --json gives {\"kernel\": ..., \"targets\": [one object per\n"
           "target]}.\n"
           "\n"
           "A TARGET is any NVRTC has (`kernjit info` lists the architectures; a name NVRTC\n"
           "lacks is refused with every target it has): sm_XY, a cubin for compute\n"
           "capability X.Y to X.9; sm_XYa, for X.Y alone, with that architecture's own\n"
           "instructions (sm_90a: wgmma, setmaxnreg); sm_XYf, for X.Y's family (sm_100f:\n"
           "10.0 and 10.3); compute_XY (and compute_XYa, compute_XYf), PTX that the driver\n"
           "compiles for the device, also one newer than this toolkit. Each target is its\n"
           "own cache folder (<cache>/sm_90a/) and key.\n"
           "\n" CLI_NVCC_HELP "\n"
           "Several .cu files make one program: each is compiled as relocatable device code\n"
           "with the same macros and options, and nvJitLink links them (and the device\n"
           "runtime when the program launches kernels); the entry may be in any of them,\n"
           "named on one (b.cu:ENTRY) or with --entry. --entry given several times\n"
           "compiles those entries together (a template's instances: --entry\n"
           "'scale<float,256>' --entry 'scale<double,256>'): one NVRTC compile, one cache\n"
           "entry, each instance shown with its symbol.\n"
           "\n"
           "--emit FORMAT -o FILE (--output) writes the compiler's output to FILE (replaced\n"
           "whole, or left as it was), or to stdout with -o - (the report then goes to\n"
           "stderr):\n"
           "  cubin  the binary the driver loads, an ELF file as readelf, cuobjdump and\n"
           "         nvdisasm take it (through the cache: the disk entries <key>.cubin are\n"
           "         kernjit's containers, a header and a description before these bytes,\n"
           "         which those tools do not read); linked, for a program of several\n"
           "         sources\n"
           "  ptx    NVRTC's PTX for the target, compiled now (not cached)\n"
           "  ltoir  LTO-IR (NVRTC with -dlto) for nvJitLink's link-time optimization,\n"
           "         compiled now\n"
           "  fatbin a fat binary of the cubin (PTX for compute_XY) of every --arch, which\n"
           "         the driver picks from: --emit fatbin --arch sm_80,sm_90 (made by\n"
           "         nvFatbin when the toolkit has it, else by kernjit)\n"
           "PTX and LTO-IR are one source's output: not for a program of several sources.\n"
           "One target (but for fatbin), not --all.\n"
           "\n"
           "Shown for each kernel of the binary (the entry first), as the compiler reports\n"
           "it, no GPU needed: registers and spilled bytes (stored and loaded) per thread,\n"
           "its stack (local memory) per thread, and its static shared memory per block.\n"
           "\n"
           "--all compiles every combination of the kernel's tunables (`tune` in its\n"
           "metadata), the other macros at their defaults or as given, and counts how many\n"
           "were compiled and how many were already in the cache: to prepare a cache for a\n"
           "fleet of machines without a GPU. -D NAME=V1,V2 restricts a tunable, or builds a\n"
           "param for each value. Combinations that break a `require` line of the metadata\n"
           "are skipped. The variants compile in J worker processes (--threads J; default:\n"
           "the processors online, at most one a variant), which NVRTC lets scale where\n"
           "threads of one process do not; --threads 1 compiles them in this process.\n"
           "--shard K/N builds part K of N (the variants whose index is K modulo N; K from\n"
           "0): N machines with K = 0 to N - 1 build the whole space, each part once.\n"
           "\n"
           "With a remote cache (KERNJIT_REMOTE_CACHE=redis://HOST:PORT), entries come from\n"
           "it when the disk cache lacks them (\"origin\": \"remote\" in --json), and what is\n"
           "compiled is pushed in the background. --push (a builder) then sends every entry\n"
           "of the kernel in the disk cache that the remote lacks, or holds in a form this\n"
           "machine refuses (signed with a rotated secret, damaged), and waits until they\n"
           "are there; it exits 1 when the server cannot be reached.\n");
}

/* --push: the kernel's entries in the disk cache to the remote (a builder), waiting for each, and the
 * counts in the target's report. A server that cannot be reached fails the command (exit 1: a builder
 * that pushed nothing must not pass); faults of single entries are warnings and counted. */
static int push_entries(kj_runtime *rt, const char *kernel, int json, FILE *out) {
    char name[256];
    const char *base = strrchr(kernel, '/') ? strrchr(kernel, '/') + 1 : kernel;
    size_t n = strlen(base);
    if (n > 3 && strcmp(base + n - 3, ".cu") == 0) n -= 3;
    snprintf(name, sizeof name, "%.*s", (int)n, base);
    kj_remote_transfer t = KJ_REMOTE_TRANSFER_INIT;
    kj_status s = kj_remote_push(rt, name, &t);
    if (s != KJ_OK) return cli_fail("compile", s);
    if (json) {
        json_object_in("push");
        json_transfer_fields(&t);
        json_end_object();
    } else {
        fprintf(out, "  push  %llu of %llu entr%s of %s pushed to the remote cache, %llu already there%s\n",
                (unsigned long long)t.moved, (unsigned long long)t.entries, t.entries == 1 ? "y" : "ies", name,
                (unsigned long long)t.present, t.failed ? ", some FAILED (see the warnings)" : "");
    }
    return EXIT_OK;
}

static void all_progress(const kj_progress *p, void *user) {
    (void)user;
    char detail[512];
    snprintf(detail, sizeof detail, "%s: %s", p->variant, p->outcome);
    cli_progress("compile", "compile", p->done, p->total, detail);
}

/* What --all asks beyond the macros. */
typedef struct all_args {
    unsigned threads;       /* --threads: worker processes; 0: the processors online; 1: none, in this process */
    unsigned shard, shards; /* --shard K/N; 0 and 0: all */
    int worker;             /* --worker: a worker of another compile --all (compile_workers.h) */
} all_args;

/* The processes for the part's variants: as many as asked (or processors), at most one a variant. */
static unsigned process_count(const kj_space *space, const all_args *aa) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = aa->threads ? aa->threads : online < 1 ? 1 : online > 64 ? 64 : (size_t)online;
    size_t step = aa->shards ? aa->shards : 1, todo = 0;
    for (size_t i = aa->shard; i < kj_space_count(space) && todo < want; i += step) {
        kj_variant v = KJ_VARIANT_INIT;
        kj_space_variant(space, i, &v);
        todo += !v.skipped;
    }
    return todo > 1 ? (unsigned)todo : 1;
}

/* A worker: the part's variants in this process, reported to the parent. */
static int compile_all_worker(kj_runtime *rt, kj_compile_all_options *o, kj_space *space) {
    o->progress = worker_progress;
    o->progress_user = space;
    kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
    kj_status s = kj_compile_all(rt, o, &r);
    if (s != KJ_OK && !r.failed) return cli_fail("compile", s); /* not a variant's: the parent says it */
    worker_end(s);
    return kj_status_class(s);
}

/* The workers' label of variant i (workers_label_fn). */
static const char *variant_label(const void *space, size_t i, int *skipped) {
    kj_variant v = KJ_VARIANT_INIT;
    kj_space_variant(space, i, &v);
    *skipped = v.skipped != NULL;
    return v.label;
}

/* compile --all's variants in worker processes: kernjit compile --worker --all [-D N=V]... [--entry E]
 * --arch A --shard k/n --threads 1 -- KERNEL each. */
static void compile_in_workers(const char *kernel, const char *entry, const kj_define *defines, size_t ndef,
                               const char *arch, const all_args *aa, unsigned processes, const kj_space *space,
                               kj_compile_all_result *r, workers_failures *failures) {
    const char *args[20 + 2 * MAX_DEFINES];
    char *macros[MAX_DEFINES] = {0}, *what = cli_format("variants of %s", kernel);
    size_t n = 0;
    int ok = what != NULL;
    args[n++] = "compile", args[n++] = "--worker", args[n++] = "--all";
    for (size_t i = 0; i < ndef; i++) {
        ok = ok && (macros[i] = cli_format("%s=%s", defines[i].name, defines[i].value));
        args[n++] = "-D", args[n++] = macros[i];
    }
    if (entry) args[n++] = "--entry", args[n++] = entry;
    args[n++] = "--arch", args[n++] = arch, args[n++] = "--shard", args[n++] = WORKERS_SHARD;
    args[n++] = "--threads", args[n++] = "1", args[n++] = "--", args[n++] = kernel, args[n] = NULL;
    workers_plan plan = {.cmd = "compile",
                         .args = args,
                         .count = kj_space_count(space),
                         .label = variant_label,
                         .jobs = space,
                         .what = what,
                         .arch = arch,
                         .shard = aa->shard,
                         .shards = aa->shards,
                         .processes = processes};
    if (ok) workers_compile_all(&plan, r, failures);
    else cli_error_as("compile", KJ_ERR_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < ndef; i++) free(macros[i]);
    free(what);
}

/* A runtime that compiles for `arch`, or when it is NULL for the GPU's own sm_XY, without the GPU's
 * context: compiling needs only the compute capability, and retaining and then releasing the primary
 * context costs about 0.25 s on an H100, a third of compile --all's wall time. A device NVRTC cannot
 * target by name (one newer than the toolkit) is left to the runtime, which compiles PTX for it. */
static kj_status compile_runtime(const char *arch, kj_runtime **rt) {
    int count = 0;
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    kj_toolchain tc = KJ_TOOLCHAIN_INIT;
    if (!arch && kj_device_count(&count) == KJ_OK && count > 0 && kj_device_query(0, &d) == KJ_OK &&
        kj_toolchain_query(&tc) == KJ_OK)
        for (int i = 0; i < tc.arch_count && !arch; i++)
            if (tc.archs[i] == d.cc_major * 10 + d.cc_minor) arch = d.arch;
    return cli_runtime(rt, arch != NULL, arch, 0);
}

static int compile_all(const char *kernel, const char *entry, const kj_define *defines, size_t ndef, const char *arch,
                       const all_args *aa, int push, int json) {
    if (aa->worker) worker_begin();
    kj_space *space;
    kj_status s = kj_space_create(NULL, kernel, defines, ndef, &space);
    if (s != KJ_OK) return cli_fail("compile", s);
    kj_runtime *rt;
    s = compile_runtime(arch, &rt);
    if (s != KJ_OK) {
        kj_space_free(space);
        return cli_fail("compile", s);
    }
    kj_compile_all_options o = {.size = sizeof(kj_compile_all_options),
                                .kernel = kernel,
                                .entry = entry,
                                .fixed = defines,
                                .fixed_count = ndef,
                                .arch = arch,
                                .threads = aa->threads,
                                .progress = all_progress,
                                .shard = aa->shard,
                                .shards = aa->shards};
    kj_compile_all_result r = KJ_COMPILE_ALL_RESULT_INIT;
    if (aa->worker) {
        int rc = compile_all_worker(rt, &o, space);
        kj_space_free(space);
        kj_runtime_destroy(rt);
        return rc;
    }
    workers_failures failures = {0};
    int pushed = EXIT_OK;
    unsigned processes = process_count(space, aa);
    if (processes == 1) {
        s = kj_compile_all(rt, &o, &r);
    } else {
        compile_in_workers(kernel, entry, defines, ndef, arch ? arch : kj_runtime_arch(rt), aa, processes, space, &r,
                           &failures);
    }
    cli_progress_end();
    if (json) {
        json_begin_object();
        json_string("arch", r.arch);
        json_begin_array("dims");
        for (size_t d = 0; d < kj_space_dim_count(space); d++) json_string(NULL, kj_space_dim_name(space, d));
        json_end_array();
        if (aa->shards) json_fields("shard=%u shards=%u", aa->shard, aa->shards);
        json_fields("variants=%zu compiled=%zu cached=%zu skipped=%zu failed=%zu threads=%u processes=%u wall_ms=%g "
                    "cache_dir=%s",
                    r.variants, r.compiled, r.cached, r.skipped, r.failed, r.threads, processes, r.wall_ms,
                    kj_cache_dir(rt));
        if (push) pushed = push_entries(rt, kernel, 1, stdout);
        json_end_object();
    } else if (processes > 1 || s == KJ_OK || r.failed) { /* else there is no result, only the failure */
        printf("%s for %s", kernel, r.arch);
        if (aa->shards) printf(", shard %u of %u", aa->shard, aa->shards);
        printf(": %zu variant%s", r.variants, r.variants == 1 ? "" : "s");
        for (size_t d = 0; d < kj_space_dim_count(space); d++)
            printf("%s%s", d ? " x " : " (", kj_space_dim_name(space, d));
        printf("%s: %zu compiled, %zu already in the cache", kj_space_dim_count(space) ? ")" : "", r.compiled,
               r.cached);
        if (r.skipped) printf(", %zu skipped by the metadata's requirements", r.skipped);
        if (r.failed) printf(", %zu FAILED", r.failed);
        if (processes > 1) printf("; %.2f s in %u processes\n", r.wall_ms / 1e3, processes);
        else printf("; %.2f s on %u thread%s\n", r.wall_ms / 1e3, r.threads, r.threads == 1 ? "" : "s");
        printf("  cache %s\n", kj_cache_dir(rt) ? kj_cache_dir(rt) : "(none: compiled in memory only)");
        if (push) pushed = push_entries(rt, kernel, 0, stdout);
    }
    int rc = EXIT_OK;
    if (processes > 1) rc = workers_report("compile", &failures);
    else if (s != KJ_OK) rc = cli_fail("compile", s);
    if (rc == EXIT_OK) rc = pushed;
    kj_space_free(space);
    kj_runtime_destroy(rt);
    return rc;
}

/* Whether u is one of the entries compiled (the listed instances, or the one entry). */
static int is_entry(const kj_compile_result *r, const kj_resource_usage *u) {
    if (u == r->entry_resources) return 1;
    for (size_t i = 0; i < r->entry_symbol_count; i++)
        if (strcmp(u->symbol, r->entry_symbols[i]) == 0) return 1;
    return 0;
}

static void print_resources(const kj_compile_result *r, FILE *out) {
    if (!r->resource_count) {
        fprintf(out, "  resources  not known: %s\n",
                r->is_ptx ? "PTX, which the driver compiles" : "the compiler did not say");
        return;
    }
    const kj_resource_usage *e = r->entry_resources;
    for (size_t i = 0; i < r->resource_count + (e != NULL); i++) {
        /* the entry first, then the others */
        const kj_resource_usage *u = i == 0 && e ? e : kj_compile_result_resource(r, i - (e != NULL));
        if (i && u == e) continue;
        fprintf(out, "  %-6s %s: %d registers, %d B stack, %d B static shared, ", is_entry(r, u) ? "entry" : "kernel",
                u->symbol, u->registers, u->stack_bytes, u->shared_static_bytes);
        if (u->spill_store_bytes || u->spill_load_bytes)
            fprintf(out, "SPILLS %d B stored, %d B loaded\n", u->spill_store_bytes, u->spill_load_bytes);
        else fprintf(out, "no spills\n");
    }
}

static void json_resources(const kj_compile_result *r) {
    json_begin_array("resources");
    for (size_t i = 0; i < r->resource_count; i++) {
        const kj_resource_usage *u = kj_compile_result_resource(r, i);
        json_object_in(NULL);
        json_fields("symbol=%s entry?=%d registers=%d spill_store_bytes=%d spill_load_bytes=%d stack_bytes=%d "
                    "shared_static_bytes=%d",
                    u->symbol, is_entry(r, u), u->registers, u->spill_store_bytes, u->spill_load_bytes, u->stack_bytes,
                    u->shared_static_bytes);
        json_end_object();
    }
    json_end_array();
}

/* What the command line asks of each target. */
typedef struct compile_args {
    kj_define defines[MAX_DEFINES];
    const char *options[MAX_OPTIONS];
    size_t ndef, nopt;
    const char *entry;
    const char *entries[MAX_ENTRIES]; /* --entry given several times: compiled together */
    size_t nentries;
    int push, json;
    int emit; /* --emit given: the format below goes to output */
    kj_emit_format format;
    const char *output; /* -o FILE, "-" for stdout */
} compile_args;

/* --emit: the compiler's output to -o FILE (replaced whole, or left as it was), or to stdout. */
static int write_output(const compile_args *a, kj_runtime *rt, const kj_request *req, kj_compile_result *r) {
    void *data;
    size_t size;
    kj_status s = kj_emit(rt, req, a->format, &data, &size, r);
    if (s != KJ_OK) return cli_fail("compile", s);
    int rc = EXIT_OK;
    if (strcmp(a->output, "-") == 0) {
        if (fwrite(data, 1, size, stdout) != size || fflush(stdout) != 0)
            rc = cli_error_as("compile", KJ_ERR_IO, "writing the %s to stdout failed: %s",
                              kj_emit_format_name(a->format), strerror(errno));
    } else {
        rc = cli_write_file("compile", a->output, data, size);
    }
    kj_emit_free(data);
    return rc;
}

/* --emit fatbin: every target's binary (each compiled and reported first) in one fat binary. */
static int write_fatbin(const compile_args *a, const cli_program *prog, const char *const *archs, size_t narch) {
    kj_runtime *rt;
    kj_status s = compile_runtime(NULL, &rt);
    if (s != KJ_OK) return cli_fail("compile", s);
    const char *own = kj_runtime_arch(rt);
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = prog->kernel,
                      .entry = prog->entry,
                      .defines = a->defines,
                      .define_count = a->ndef,
                      .options = a->options,
                      .option_count = a->nopt,
                      .sources = prog->sources,
                      .source_count = prog->source_count,
                      .entries = a->nentries > 1 ? a->entries : NULL,
                      .entry_count = a->nentries > 1 ? a->nentries : 0};
    void *data;
    size_t size;
    if ((s = kj_emit_fatbin(rt, &req, narch ? archs : &own, narch ? narch : 1, &data, &size, NULL)) != KJ_OK) {
        kj_runtime_destroy(rt);
        return cli_fail("compile", s);
    }
    int to_stdout = strcmp(a->output, "-") == 0, rc = EXIT_OK;
    if (to_stdout) {
        if (fwrite(data, 1, size, stdout) != size || fflush(stdout) != 0)
            rc = cli_error_as("compile", KJ_ERR_IO, "writing the fatbin to stdout failed: %s", strerror(errno));
    } else {
        rc = cli_write_file("compile", a->output, data, size);
    }
    kj_emit_free(data);
    if (rc == EXIT_OK && a->json) {
        json_object_in("emitted");
        json_fields("format=%s file_path=%s size_bytes=%zu", "fatbin", to_stdout ? NULL : a->output, size);
        json_end_object();
    } else if (rc == EXIT_OK) {
        fprintf(to_stdout ? stderr : stdout, "fatbin %zu bytes, %zu target%s, to %s\n", size, narch ? narch : 1,
                narch > 1 ? "s" : "", to_stdout ? "stdout" : a->output);
    }
    kj_runtime_destroy(rt);
    return rc;
}

static int compile_one(const compile_args *a, const cli_program *prog, const char *arch) {
    kj_runtime *rt;
    kj_status s = compile_runtime(arch, &rt);
    if (s != KJ_OK) return cli_fail("compile", s);
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = prog->kernel,
                      .entry = prog->entry,
                      .defines = a->defines,
                      .define_count = a->ndef,
                      .options = a->options,
                      .option_count = a->nopt,
                      .arch = arch,
                      .sources = prog->sources,
                      .source_count = prog->source_count,
                      .entries = a->nentries > 1 ? a->entries : NULL,
                      .entry_count = a->nentries > 1 ? a->nentries : 0};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    int rc = EXIT_OK;
    if (a->emit) rc = write_output(a, rt, &req, &r);
    else if ((s = kj_compile(rt, &req, &r)) != KJ_OK) rc = cli_fail("compile", s);
    if (rc != EXIT_OK) {
        kj_runtime_destroy(rt);
        return rc;
    }
    /* the report goes where the output does not */
    FILE *out = a->output && strcmp(a->output, "-") == 0 ? stderr : stdout; /* -o: with --emit only */
    int compiled_now = a->emit && a->format != KJ_EMIT_CUBIN;               /* PTX and LTO-IR are not cached */
    if (a->json) {
        json_begin_object();
        json_fields("arch=%s key=%s cache_hit?=%d origin=%s stored?=%d linked?=%d source_count=%u ptx?=%d "
                    "entry_path=%s compile_ms=%g link_ms=%g binary_bytes=%zu warnings=%s",
                    r.arch, r.key, r.cache_hit, kj_origin_name(r.origin), r.stored, r.linked, r.source_count, r.is_ptx,
                    r.stored ? r.cache_path : NULL, r.compile_ms, r.link_ms, r.binary_bytes, r.log);
        json_resources(&r);
        if (a->nentries > 1) {
            json_begin_array("entries");
            for (size_t i = 0; i < a->nentries && i < r.entry_symbol_count; i++) {
                json_object_in(NULL);
                json_fields("entry=%s symbol=%s", a->entries[i], r.entry_symbols[i]);
                json_end_object();
            }
            json_end_array();
        }
        if (a->emit) {
            json_object_in("emitted");
            json_fields("format=%s file_path=%s size_bytes=%zu", kj_emit_format_name(a->format),
                        strcmp(a->output, "-") == 0 ? NULL : a->output, r.binary_bytes);
            json_end_object();
        }
        if (a->push) rc = push_entries(rt, prog->kernel, 1, stdout);
        json_end_object();
    } else {
        char linked[64] = "";
        if (r.source_count > 1)
            snprintf(linked, sizeof linked, " (%u sources linked%s)", r.source_count,
                     r.linked ? ", with the device runtime" : "");
        else if (r.linked) snprintf(linked, sizeof linked, " (linked with the device runtime)");
        if (compiled_now)
            fprintf(out, "%s for %s: %s compiled in %.1f ms%s\n", prog->kernel, r.arch, kj_emit_format_name(a->format),
                    r.compile_ms, r.linked ? " (before the link with the device runtime)" : "");
        else if (r.origin == KJ_ORIGIN_SEED)
            fprintf(out, "%s for %s: seed hit (built ahead of time; not copied to the cache)%s\n", prog->kernel, r.arch,
                    linked);
        else if (r.cache_hit) fprintf(out, "%s for %s: cache hit%s\n", prog->kernel, r.arch, linked);
        else if (r.origin == KJ_ORIGIN_REMOTE)
            fprintf(out, "%s for %s: remote cache hit (verified, stored here)%s\n", prog->kernel, r.arch, linked);
        else fprintf(out, "%s for %s: compiled in %.1f ms%s\n", prog->kernel, r.arch, r.compile_ms + r.link_ms, linked);
        fprintf(out, "  key   %s\n", r.key);
        if (!compiled_now)
            fprintf(out, "  %-5s %s\n", r.origin == KJ_ORIGIN_SEED ? "seed" : "cache",
                    r.stored ? r.cache_path : "(not stored: compiled in memory only)");
        if (a->emit)
            fprintf(out, "  %-5s %zu bytes to %s\n", kj_emit_format_name(a->format), r.binary_bytes,
                    strcmp(a->output, "-") == 0 ? "stdout" : a->output);
        for (size_t i = 0; a->nentries > 1 && i < a->nentries && i < r.entry_symbol_count; i++)
            fprintf(out, "  %-9s %s is %s\n", i ? "" : "instances", a->entries[i], r.entry_symbols[i]);
        print_resources(&r, out);
        if (a->push) rc = push_entries(rt, prog->kernel, 0, out);
    }
    kj_runtime_destroy(rt);
    return rc;
}

/* "K/N" with K < N <= max (digits only); 0, or -1. */
static int parse_shard(const char *text, unsigned max, unsigned *shard, unsigned *shards) {
    const char *slash = strchr(text, '/');
    char k[16];
    uint64_t part, parts;
    if (!slash || (size_t)(slash - text) >= sizeof k) return -1;
    snprintf(k, sizeof k, "%.*s", (int)(slash - text), text);
    if (cli_parse_uint(k, max, &part) != 0 || cli_parse_uint(slash + 1, max, &parts) != 0 || parts == 0 ||
        part >= parts)
        return -1;
    *shard = (unsigned)part;
    *shards = (unsigned)parts;
    return 0;
}

/* --emit and -o, checked before anything compiles. */
static int check_emit(const compile_args *a, int emit_given, int all, size_t narch) {
    if (!a->output && !emit_given) return EXIT_OK;
    if (!a->output)
        return cli_usage("compile", "--emit %s needs -o FILE (or -o - for stdout)", kj_emit_format_name(a->format));
    if (!emit_given)
        return cli_usage("compile", "-o goes with --emit FORMAT, the output to write there: cubin, ptx or ltoir");
    if (all)
        return cli_usage("compile", "--emit writes one kernel's output: not with --all (the variants are in the "
                                    "cache; kernjit cache list shows them)");
    if (narch > 1 && a->format != KJ_EMIT_FATBIN)
        return cli_usage("compile",
                         "--emit %s writes one target's output: give one --arch, not %zu (or --emit fatbin "
                         "for several)",
                         kj_emit_format_name(a->format), narch);
    if (strcmp(a->output, "-") == 0)
        return a->json
                   ? cli_usage("compile", "-o - writes the %s to stdout, where --json puts its document: give -o FILE",
                               kj_emit_format_name(a->format))
                   : EXIT_OK;
    char what[CLI_MESSAGE_MAX];
    kj_message_format(what, sizeof what, "-o '%s'", a->output);
    return cli_check_output_folder("compile", what, a->output);
}

/* The command line, as cli_getopt reads it. */
typedef struct line {
    compile_args a;
    const char *archs[MAX_ARCHS];
    size_t narch;
    int all, emit_given;
    uint64_t threads;
    all_args aa;
    const char *shard;
    int count;
    char **sources; /* SOURCE[:ENTRY]... */
} line;

static int option(void *user, int opt, char *arg) {
    line *l = user;
    compile_args *a = &l->a;
    char err[256];
    switch (opt) {
    case 'A': l->all = 1; break;
    case 'S': l->shard = arg; break;
    case 'W': l->aa.worker = 1; break;
    case 'P': a->push = 1; break;
    case 'T': return cli_count_arg("compile", "--threads", arg, 1, 64, &l->threads);
    case 'e':
        if (a->nentries == MAX_ENTRIES) return cli_usage("compile", "at most %d --entry values", MAX_ENTRIES);
        for (size_t k = 0; k < a->nentries; k++)
            if (strcmp(a->entries[k], arg) == 0) return cli_usage("compile", "--entry '%s' is given twice", arg);
        a->entries[a->nentries++] = a->entry = arg;
        if (a->nentries > 1) a->entry = a->entries[0];
        break;
    case 'a': return cli_arch_list("compile", arg, l->archs, &l->narch, MAX_ARCHS);
    case 'j': a->json = 1; break;
    case 'h': help(); return CLI_DONE;
    case 'D':
        if (a->ndef == MAX_DEFINES) return cli_usage("compile", "at most %d -D macros", MAX_DEFINES);
        if (cli_parse_define(arg, &a->defines[a->ndef], err, sizeof err) != 0) return cli_usage("compile", "%s", err);
        a->ndef++;
        break;
    case 'p':
        if (a->nopt == MAX_OPTIONS) return cli_usage("compile", "at most %d --option values", MAX_OPTIONS);
        a->options[a->nopt++] = arg;
        break;
    case 'E': {
        int rc = cli_parsed("compile", kj_emit_format_parse(arg, &a->format));
        if (rc != EXIT_OK) return rc;
        if (l->emit_given) return cli_usage("compile", "--emit is given twice: one output a run");
        l->emit_given = a->emit = 1;
        break;
    }
    case 'o':
        if (a->output) return cli_usage("compile", "-o is given twice: one output a run");
        a->output = arg;
        break;
    }
    return EXIT_OK;
}

static int sources(void *user, int count, char **args) {
    line *l = user;
    l->count = count;
    l->sources = args;
    return count ? EXIT_OK : cli_usage("compile", "which kernel? give a built-in name or a .cu file");
}

int cmd_compile(int argc, char **argv) {
    static const cli_option_set set = {"entry=e: define=D: arch=a: --option=p: json=j help=h --all=A --threads=T: "
                                       "--push=P --emit=E: output=o: --shard=S: --worker=W",
                                       option, CLI_NVCC_ARCH | CLI_NVCC_DEFINES | CLI_NVCC_COMPILER, sources};
    line l;
    memset(&l, 0, sizeof l);
    int rc = cli_getopt("compile", argc, argv, &set, 1, &l);
    if (rc != EXIT_OK) return rc == CLI_DONE ? EXIT_OK : rc;
    compile_args a = l.a;
    const char **archs = l.archs;
    size_t narch = l.narch;
    int all = l.all, emit_given = l.emit_given;
    uint64_t threads = l.threads;
    all_args aa = l.aa;
    const char *shard = l.shard;
    cli_program prog;
    rc = cli_parse_program("compile", l.sources, l.count, a.entry, &prog);
    if (rc != EXIT_OK) return rc;
    const char *kernel = prog.kernel;
    if (all && prog.source_count)
        return cli_usage("compile", "--all compiles the variants of one kernel file, not a program of several sources");
    if (all && a.nopt) return cli_usage("compile", "--option is not taken with --all");
    if (all && a.nentries > 1)
        return cli_usage("compile", "--all compiles the variants of one entry: give one --entry, not %zu", a.nentries);
    if (!all && threads) return cli_usage("compile", "--threads goes with --all");
    if (!all && shard) return cli_usage("compile", "--shard goes with --all");
    if (aa.worker && (!all || a.json || a.push))
        return cli_usage("compile", "--worker is for the processes compile --all starts: with --all, without --json "
                                    "and --push");
    /* a worker's part is its parent's split J ways: up to 64 times more parts */
    if (shard && parse_shard(shard, aa.worker ? 64u * KJ_SPACE_MAX : KJ_SPACE_MAX, &aa.shard, &aa.shards) != 0)
        return cli_usage("compile", "--shard '%s' is not K/N: N parts from 1 to %u, K from 0 to N - 1", shard,
                         KJ_SPACE_MAX);
    aa.threads = (unsigned)threads;
    if ((rc = check_emit(&a, emit_given, all, narch)) != EXIT_OK) return rc;
    const char *remote = getenv("KERNJIT_REMOTE_CACHE");
    if (a.push && (!remote || !*remote))
        return cli_usage("compile", "--push needs a remote cache: set KERNJIT_REMOTE_CACHE=redis://HOST:PORT[/DB] (or "
                                    "unix:///PATH)");

    if (a.json) {
        json_begin_object();
        json_string("kernel", kernel);
        if (prog.source_count) {
            json_begin_array("sources");
            json_string(NULL, kernel);
            for (size_t i = 0; i < prog.source_count; i++) json_string(NULL, prog.sources[i]);
            json_end_array();
        }
        json_begin_array("targets");
    }
    int fatbin = a.emit && a.format == KJ_EMIT_FATBIN;
    compile_args each = a; /* for a fatbin each target is compiled and reported first, then packed */
    if (fatbin) each.emit = 0;
    for (size_t i = 0; fatbin && i < narch && rc == EXIT_OK; i++) { /* before anything compiles */
        kj_status s = kj_emit_fatbin_target(archs[i]);
        if (s != KJ_OK) rc = cli_fail("compile", s);
    }
    for (size_t i = 0; i < (narch ? narch : 1) && rc == EXIT_OK; i++)
        rc = all ? compile_all(kernel, prog.entry, a.defines, a.ndef, narch ? archs[i] : NULL, &aa, a.push, a.json)
                 : compile_one(&each, &prog, narch ? archs[i] : NULL);
    if (a.json) json_end_array();
    if (fatbin && rc == EXIT_OK) rc = write_fatbin(&a, &prog, archs, narch);
    if (a.json) json_end_object(); /* after a failure too: the targets done so far, then the "error" */
    return rc;
}
