/* kernjit compile: compile a kernel (or, with --all, every variant of it) into the cache; no GPU
 * needed. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define MAX_DEFINES 64
#define MAX_OPTIONS 32
#define MAX_ARCHS 16

static void help(void) {
    printf("usage: kernjit compile KERNEL|FILE.cu[:ENTRY] [--entry E] [-D NAME=VALUE]... [--arch sm_XY[,...]]\n"
           "                      [--option NVRTC_OPTION]... [--push] [--json]\n"
           "       kernjit compile KERNEL --all [-D NAME=V1,V2,...]... [--arch sm_XY] [--threads J] [--push] [--json]\n\n"
           "Compiles the kernel (a built-in name, NAME.cu on KERNJIT_PATH, or a file) with NVRTC into the\n"
           "disk cache and says whether it was already there, and where. Macros are checked against the\n"
           "kernel's metadata first (`kernjit list`). Without --arch the target is the GPU's, or sm_90 when\n"
           "there is none; --arch sm_80,sm_90 (or --arch again) builds each target in turn. --json gives\n"
           "{\"kernel\": ..., \"targets\": [one object per target]}.\n\n"
           "--all compiles every combination of the kernel's tunables (`tune` in its metadata), the other\n"
           "macros at their defaults or as given, J at a time (default: the processors online), and counts\n"
           "how many were compiled and how many were already in the cache: to prepare a cache for a fleet\n"
           "of machines without a GPU. -D NAME=V1,V2 restricts a tunable, or builds a param for each value.\n"
           "Combinations that break a `require` line of the metadata are skipped.\n\n"
           "With a remote cache (KERNJIT_REMOTE_CACHE=redis://HOST:PORT), entries come from it when the disk\n"
           "cache lacks them (\"from\": \"remote\" in --json), and what is compiled is pushed in the\n"
           "background. --push (a builder) then sends every entry of the kernel in the disk cache that the\n"
           "remote lacks, and waits until they are there.\n");
}

/* --push: the kernel's entries in the disk cache to the remote (a builder), waiting for each, and the
 * counts in the target's report. Faults are warnings (the compile itself succeeded). */
static void push_entries(kj_runtime *rt, const char *kernel, int json) {
    char name[256];
    const char *base = strrchr(kernel, '/') ? strrchr(kernel, '/') + 1 : kernel;
    size_t n = strlen(base);
    if (n > 3 && strcmp(base + n - 3, ".cu") == 0) n -= 3;
    snprintf(name, sizeof name, "%.*s", (int)n, base);
    kj_remote_transfer t;
    memset(&t, 0, sizeof t);
    if (kj_remote_push(rt, name, &t) != KJ_OK) fprintf(stderr, "kernjit: warning: %s\n", kj_last_error());
    if (json) {
        json_object_in("push");
        json_uint("entries", t.entries);
        json_uint("pushed", t.moved);
        json_uint("present", t.present);
        json_uint("failed", t.failed);
        json_end_object();
    } else {
        printf("  push  %llu of %llu entr%s of %s pushed to the remote cache, %llu already there%s\n",
               (unsigned long long)t.moved, (unsigned long long)t.entries, t.entries == 1 ? "y" : "ies", name,
               (unsigned long long)t.present, t.failed ? ", some FAILED (see the warnings)" : "");
    }
}

static void all_progress(const kj_progress *p, void *user) {
    (void)user;
    char detail[512];
    snprintf(detail, sizeof detail, "%s: %s", p->variant, p->outcome);
    cli_progress("compile", "compile", p->done, p->total, detail);
}

static int compile_all(const char *kernel, const char *entry, const kj_define *defines, size_t ndef, const char *arch,
                       unsigned threads, int push, int json) {
    kj_space *space;
    kj_status s = kj_space_create(NULL, kernel, defines, ndef, &space);
    if (s != KJ_OK) return cli_fail("compile", s);
    kj_runtime *rt;
    s = cli_runtime(&rt, arch != NULL, arch, 0);
    if (s != KJ_OK) {
        kj_space_free(space);
        return cli_fail("compile", s);
    }
    kj_compile_all_options o = {.kernel = kernel, .entry = entry, .fixed = defines, .fixed_count = ndef, .arch = arch,
                                .threads = threads, .progress = all_progress};
    kj_compile_all_result r;
    memset(&r, 0, sizeof r);
    s = kj_compile_all(rt, &o, &r);
    cli_progress_end();
    int rc = EXIT_OK;
    if (json) {
        json_begin_object();
        json_string("arch", r.arch);
        json_begin_array("dims");
        for (size_t d = 0; d < kj_space_dim_count(space); d++) json_string(NULL, kj_space_dim_name(space, d));
        json_end_array();
        json_uint("variants", r.variants);
        json_uint("compiled", r.compiled);
        json_uint("cached", r.cached);
        json_uint("skipped", r.skipped);
        json_uint("failed", r.failed);
        json_uint("threads", r.threads);
        json_double("wall_ms", r.wall_ms);
        json_string("cache", kj_cache_dir(rt) ? kj_cache_dir(rt) : "");
        if (push) push_entries(rt, kernel, 1);
        json_end_object();
    } else if (r.variants) {
        printf("%s for %s: %zu variant%s", kernel, r.arch, r.variants, r.variants == 1 ? "" : "s");
        for (size_t d = 0; d < kj_space_dim_count(space); d++)
            printf("%s%s", d ? " x " : " (", kj_space_dim_name(space, d));
        printf("%s: %zu compiled, %zu already in the cache", kj_space_dim_count(space) ? ")" : "", r.compiled, r.cached);
        if (r.skipped) printf(", %zu skipped by the metadata's requirements", r.skipped);
        if (r.failed) printf(", %zu FAILED", r.failed);
        printf("; %.2f s on %u thread%s\n", r.wall_ms / 1e3, r.threads, r.threads == 1 ? "" : "s");
        printf("  cache %s\n", kj_cache_dir(rt) ? kj_cache_dir(rt) : "(none: compiled in memory only)");
        if (push) push_entries(rt, kernel, 0);
    }
    if (s != KJ_OK) rc = cli_fail("compile", s);
    kj_space_free(space);
    kj_runtime_destroy(rt);
    return rc;
}

static int compile_one(const char *kernel, const char *entry, const kj_define *defines, size_t ndef,
                       const char *const *options, size_t nopt, const char *arch, int push, int json) {
    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, arch != NULL, arch, 0);
    if (s != KJ_OK) return cli_fail("compile", s);
    kj_request req = {.kernel = kernel, .entry = entry, .defines = defines, .define_count = ndef,
                      .options = options, .option_count = nopt, .arch = arch};
    kj_compile_result r;
    s = kj_compile(rt, &req, &r);
    if (s != KJ_OK) {
        int rc = cli_fail("compile", s);
        kj_runtime_destroy(rt);
        return rc;
    }
    if (json) {
        json_begin_object();
        json_string("arch", r.arch);
        json_string("key", r.key);
        json_bool("cache_hit", r.cache_hit);
        json_string("from", kj_origin_name(r.origin));
        json_bool("stored", r.stored);
        json_bool("linked", r.linked);
        json_bool("ptx", r.is_ptx);
        json_string("cache_path", r.cache_path);
        json_double("compile_ms", r.compile_ms);
        json_double("link_ms", r.link_ms);
        json_uint("binary_bytes", r.binary_bytes);
        json_string("warnings", r.log);
        if (push) push_entries(rt, kernel, 1);
        json_end_object();
    } else {
        if (r.cache_hit) printf("%s for %s: cache hit\n", kernel, r.arch);
        else if (r.origin == KJ_ORIGIN_REMOTE) printf("%s for %s: remote cache hit (verified, stored here)\n", kernel, r.arch);
        else printf("%s for %s: compiled in %.1f ms%s\n", kernel, r.arch, r.compile_ms + r.link_ms,
                    r.linked ? " (linked with the device runtime)" : "");
        printf("  key   %s\n  cache %s\n", r.key, r.stored ? r.cache_path : "(not stored: compiled in memory only)");
        if (push) push_entries(rt, kernel, 0);
    }
    kj_runtime_destroy(rt);
    return EXIT_OK;
}

int cmd_compile(int argc, char **argv) {
    static const struct option opts[] = {{"entry", required_argument, 0, 'e'}, {"define", required_argument, 0, 'D'},
                                         {"arch", required_argument, 0, 'a'},  {"option", required_argument, 0, 'o'},
                                         {"json", no_argument, 0, 'j'},        {"help", no_argument, 0, 'h'},
                                         {"all", no_argument, 0, 'A'},         {"threads", required_argument, 0, 'T'},
                                         {"push", no_argument, 0, 'P'},        {0, 0, 0, 0}};
    kj_define defines[MAX_DEFINES];
    const char *options[MAX_OPTIONS];
    size_t ndef = 0, nopt = 0;
    const char *entry = NULL, *archs[MAX_ARCHS];
    size_t narch = 0;
    int json = 0, all = 0, push = 0, c;
    uint64_t threads = 0;
    char err[256];
    while ((c = getopt_long(argc, argv, "hje:D:a:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'A': all = 1; break;
        case 'P': push = 1; break;
        case 'T':
            if (cli_parse_uint(optarg, 64, &threads) != 0 || threads == 0)
                return cli_usage("compile", "--threads '%s' is not a count from 1 to 64", optarg);
            break;
        case 'e': entry = optarg; break;
        case 'a':
            /* several targets: --arch sm_80,sm_90, or --arch given again; "" or an empty item is a mistake
             * (the library takes "" as "no arch given") */
            for (char *a = optarg;; a++) {
                char *comma = strchr(a, ',');
                if (comma) *comma = '\0';
                if (!*a) return cli_usage("compile", "--arch has an empty target: give sm_<digits>, or several "
                                          "separated by commas (sm_80,sm_90)");
                if (narch == MAX_ARCHS) return cli_usage("compile", "at most %d targets", MAX_ARCHS);
                for (size_t k = 0; k < narch; k++)
                    if (strcmp(archs[k], a) == 0) return cli_usage("compile", "target %s is given twice", a);
                archs[narch++] = a;
                if (!comma) break;
                a = comma;
            }
            break;
        case 'j': json = 1; break;
        case 'h': help(); return EXIT_OK;
        case 'D':
            if (ndef == MAX_DEFINES) return cli_usage("compile", "at most %d -D macros", MAX_DEFINES);
            if (cli_parse_define(optarg, &defines[ndef], err, sizeof err) != 0) return cli_usage("compile", "%s", err);
            ndef++;
            break;
        case 'o':
            if (nopt == MAX_OPTIONS) return cli_usage("compile", "at most %d --option values", MAX_OPTIONS);
            options[nopt++] = optarg;
            break;
        default: return cli_usage("compile", "unknown option");
        }
    }
    if (optind != argc - 1)
        return cli_usage("compile", optind >= argc ? "which kernel? give a built-in name or a .cu file"
                                                   : "one kernel at a time (got '%s' too)", argv[optind + 1 < argc ? optind + 1 : optind]);
    char *kernel = argv[optind];
    /* FILE.cu:ENTRY, or a built-in kernel as NAME:ENTRY (as kernjit launch takes them) */
    char *colon = strstr(kernel, ".cu:");
    if (colon) colon += 3;
    else if (!strchr(kernel, '/')) colon = strchr(kernel, ':');
    if (colon) {
        if (entry) return cli_usage("compile", "give the entry either as FILE.cu:ENTRY or with --entry, not both");
        *colon = '\0';
        entry = colon + 1;
        if (!*entry) return cli_usage("compile", "'%s:' names no entry after ':'", kernel);
    }
    if (all && nopt) return cli_usage("compile", "--option is not taken with --all");
    if (!all && threads) return cli_usage("compile", "--threads goes with --all");
    const char *remote = getenv("KERNJIT_REMOTE_CACHE");
    if (push && (!remote || !*remote))
        return cli_usage("compile", "--push needs a remote cache: set KERNJIT_REMOTE_CACHE=redis://HOST:PORT[/DB] (or "
                         "unix:///PATH)");

    if (json) {
        json_begin_object();
        json_string("kernel", kernel);
        json_begin_array("targets");
    }
    int rc = EXIT_OK;
    for (size_t i = 0; i < (narch ? narch : 1) && rc == EXIT_OK; i++)
        rc = all ? compile_all(kernel, entry, defines, ndef, narch ? archs[i] : NULL, (unsigned)threads, push, json)
                 : compile_one(kernel, entry, defines, ndef, options, nopt, narch ? archs[i] : NULL, push, json);
    if (json) { /* after a failure too: the targets done so far, as a whole document (the error is on stderr) */
        json_end_array();
        json_end_object();
        json_done();
    }
    return rc;
}
