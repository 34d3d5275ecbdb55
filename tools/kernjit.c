/* kernjit: the command-line tool. `kernjit COMMAND --help` describes each command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    cli_command_fn fn;
    const char *summary;
} commands[] = {
    {"demo", cmd_demo, "JIT-compile the reduction and run it on 64M values (compile-only without a GPU)"},
    {"info", cmd_info, "devices, compute capabilities and the toolchain"},
    {"list", cmd_list, "built-in kernels: entries and parameters with allowed values"},
    {"compile", cmd_compile, "compile a kernel into the cache (no GPU needed)"},
    {"run", cmd_run, "run a built-in kernel on random input and check it against the CPU"},
    {"launch", cmd_launch, "run any .cu kernel once, with buffers and scalars given on the command line"},
    {"bench", cmd_bench, "benchmarks: jit (cache and compile times), reduce (against CUB)"},
    {"cache", cmd_cache, "the disk cache: path, list, stats, clear; the remote cache: push, pull"},
    {"tune", cmd_tune, "time a kernel's variants on the GPU and store the fastest for later runs"},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out,
            "usage: kernjit [--version] [--help] [-v|-q] [--no-cache] COMMAND [ARGS...]\n"
            "\n"
            "kernjit compiles CUDA kernels at run time with NVRTC, caches them by compute capability and\n"
            "launches them through the driver API.\n\ncommands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++) fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\nEvery command takes --help and --json. Exit codes: 0 success, 1 failure, 2 usage error.\n"
            "Anywhere on the line: -v/--verbose shows the library's notes (cache hits, compiles, evictions),\n"
            "-q/--quiet only its errors; --no-cache compiles everything (KERNJIT_CACHE_DISABLE=1).\n"
            "Environment: KERNJIT_CACHE_DIR, KERNJIT_CACHE_MAX, KERNJIT_CACHE_DISABLE, KERNJIT_PATH,\n"
            "KERNJIT_CUDA_HOME; the remote cache: KERNJIT_REMOTE_CACHE (redis://HOST:PORT[/DB] or\n"
            "unix:///PATH), KERNJIT_REMOTE_SECRET, KERNJIT_REMOTE_MODE (read or readwrite).\n");
}

/* The versions of everything that makes a binary, and where binaries go: what a bug report needs. */
static int print_version(void) {
    printf("kernjit %s\n", kj_version_string());
    kj_toolchain tc;
    kj_toolchain_query(&tc);
    printf("NVRTC %d.%d, nvJitLink %d.%d, CUDA toolkit at %s\n", tc.nvrtc_version / 1000,
           tc.nvrtc_version % 1000 / 10, tc.nvjitlink_version / 1000, tc.nvjitlink_version % 1000 / 10, tc.cuda_home);
    int count = 0;
    kj_device_info d;
    if (kj_device_count(&count) != KJ_OK)
        printf("driver: none (%s)\n", kj_last_error());
    else if (count == 0 || kj_device_query(0, &d) != KJ_OK)
        printf("driver: loaded, no device\n");
    else
        printf("driver: CUDA %d.%d, %d device%s\n", d.driver_version / 1000, d.driver_version % 1000 / 10, count,
               count == 1 ? "" : "s");
    kj_runtime *rt;
    if (cli_runtime(&rt, 1, NULL, 0) == KJ_OK) {
        printf("cache: %s\n", kj_cache_dir(rt) ? kj_cache_dir(rt) : "(none: compiling in memory)");
        kj_runtime_destroy(rt);
    } else {
        printf("cache: (%s)\n", kj_last_error());
    }
    return EXIT_OK;
}

/* The flags that apply to every command, anywhere on the line (before "--"): taken out of argv
 * before the command parses the rest. Returns the new argc. */
static int global_flags(int argc, char **argv) {
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (i < argc) argv[out++] = argv[i++];
            break;
        }
        if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) cli_verbosity = 2;
        else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) cli_verbosity = 0;
        else if (strcmp(a, "--no-cache") == 0) setenv("KERNJIT_CACHE_DISABLE", "1", 1);
        else argv[out++] = argv[i];
    }
    argv[out] = NULL;
    return out;
}

int main(int argc, char **argv) {
    argc = global_flags(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) return print_version();
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(cmd, commands[i].name) == 0) return commands[i].fn(argc - 1, cli_name_argv0(argv + 1, "kernjit"));
    fprintf(stderr, "kernjit: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
