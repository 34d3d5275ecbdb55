/* kernjit compile: compile a kernel into the cache; no GPU needed. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_DEFINES 64
#define MAX_OPTIONS 32

static void help(void) {
    printf("usage: kernjit compile KERNEL|FILE.cu[:ENTRY] [--entry E] [-D NAME=VALUE]... [--arch sm_XY]\n"
           "                      [--option NVRTC_OPTION]... [--json]\n\n"
           "Compiles the kernel (a built-in name, NAME.cu on KERNJIT_PATH, or a file) with NVRTC into the\n"
           "disk cache and says whether it was already there, and where. Macros are checked against the\n"
           "kernel's metadata first (`kernjit list`). Without --arch the target is the GPU's, or sm_90 when\n"
           "there is none.\n");
}

int cmd_compile(int argc, char **argv) {
    static const struct option opts[] = {{"entry", required_argument, 0, 'e'}, {"define", required_argument, 0, 'D'},
                                         {"arch", required_argument, 0, 'a'},  {"option", required_argument, 0, 'o'},
                                         {"json", no_argument, 0, 'j'},        {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    kj_define defines[MAX_DEFINES];
    const char *options[MAX_OPTIONS];
    size_t ndef = 0, nopt = 0;
    const char *entry = NULL, *arch = NULL;
    int json = 0, c;
    char err[256];
    while ((c = getopt_long(argc, argv, "hje:D:a:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'e': entry = optarg; break;
        case 'a':
            /* the library takes "" as "no arch given"; on the command line it is a mistake */
            if (!*optarg) return cli_usage("compile", "--arch '' is not sm_<digits> (for example sm_90)");
            arch = optarg;
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
    /* FILE.cu:ENTRY */
    char *colon = strstr(kernel, ".cu:");
    if (colon) {
        if (entry) return cli_usage("compile", "give the entry either as FILE.cu:ENTRY or with --entry, not both");
        colon[3] = '\0';
        entry = colon + 4;
    }

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
        json_string("kernel", kernel);
        json_string("arch", r.arch);
        json_string("key", r.key);
        json_bool("cache_hit", r.cache_hit);
        json_bool("stored", r.stored);
        json_bool("linked", r.linked);
        json_bool("ptx", r.is_ptx);
        json_string("cache_path", r.cache_path);
        json_double("compile_ms", r.compile_ms);
        json_double("link_ms", r.link_ms);
        json_uint("binary_bytes", r.binary_bytes);
        json_end_object();
        json_done();
    } else {
        if (r.cache_hit) printf("%s for %s: cache hit\n", kernel, r.arch);
        else printf("%s for %s: compiled in %.1f ms%s\n", kernel, r.arch, r.compile_ms + r.link_ms,
                    r.linked ? " (linked with the device runtime)" : "");
        printf("  key   %s\n  cache %s\n", r.key, r.stored ? r.cache_path : "(not stored: compiled in memory only)");
    }
    kj_runtime_destroy(rt);
    return EXIT_OK;
}
