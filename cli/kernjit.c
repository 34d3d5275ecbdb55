/* kernjit: the command-line tool, and its tree of commands. `kernjit COMMAND --help` describes each
 * command; the families' runners (run_<family>.c) and benchmarks (bench_<name>.c) are listed here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dispatch.h"
#include "run.h"

static const cli_subcommand runners[] = {
    {"reduce", run_reduce, "a reduction (sum/max/min/prod over i32 u32 i64 f16 bf16 f32 f64)"},
    {"transpose", run_transpose, "a matrix transpose, any rows x cols (variants: access orders, tiles, L1, vectors)"},
    {"vector-add", run_vector_add, "c = a + b over f32 or f64"},
    {"nested-reduce", run_nested_reduce, "a recursive reduction launching kernels from the GPU (CDP2)"},
    {"nested-hello", run_nested_hello, "the nested hello world (dynamic parallelism)"},
    {"mandelbrot", run_mandelbrot, "a Mandelbrot image: escape time or Mariani-Silver (CDP2)"},
};
static const cli_dispatch run = {"kernjit run", "kernel",
                                 "usage: kernjit run KERNEL [ARGS...]   (kernjit run KERNEL --help for its "
                                 "arguments)\n\nkernels:\n",
                                 NULL, CLI_DISPATCH_LIST(runners)};

static const cli_subcommand benches[] = {
    {"jit", bench_jit, "cold compile next to raw NVRTC, disk hit in a new process, memory hit"},
    {"reduce", bench_reduce, "op x type x size x entry: median us, GB/s, % of a device copy, ratio to CUB"},
    {"transpose", bench_transpose, "variants and tile shapes x sizes: median us, GB/s, % of a device copy"},
    {"vector-add", bench_vector_add, "types x sizes and block/unroll shapes: median us, GB/s, % of a device copy"},
    {"nested", bench_nested, "nested reductions next to the flat one; Mandelbrot escape time vs Mariani-Silver"},    {"cache", bench_cache, "memory, disk and remote (Redis) hits of a 6 KB cubin against a cold compile"},
};
static const cli_dispatch bench = {"kernjit bench", "benchmark",
                                   "usage: kernjit bench NAME [ARGS...]   (kernjit bench NAME --help)\n\nbenchmarks:\n",
                                   NULL, CLI_DISPATCH_LIST(benches)};

static int cmd_run(int argc, char **argv) { return cli_dispatch_run(&run, argc, argv); }
static int cmd_bench(int argc, char **argv) { return cli_dispatch_run(&bench, argc, argv); }

static const cli_subcommand commands[] = {
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

static const cli_dispatch kernjit = {
    "kernjit", "command",
    "usage: kernjit [--version] [--help] [-v|-q] [--no-cache] COMMAND [ARGS...]\n"
    "\n"
    "kernjit compiles CUDA kernels at run time with NVRTC, caches them by compute capability and\n"
    "launches them through the driver API.\n\ncommands:\n",
    "\nEvery command takes --help and --json. Exit codes: 0 success, 1 failure, 2 usage error.\n"
    "Anywhere on the line: -v/--verbose shows the library's notes (cache hits, compiles, evictions),\n"
    "-q/--quiet only its errors; --no-cache compiles everything (KERNJIT_CACHE_DISABLE=1).\n"
    "Sizes and counts (--n, --rows, --repeat, --sizes, KERNJIT_CACHE_MAX, ...) are digits with an\n"
    "optional K, M, G or T (x1024 each: 64M), or a power (2^28).\n"
    "Environment: KERNJIT_CACHE_DIR, KERNJIT_CACHE_MAX, KERNJIT_CACHE_DISABLE, KERNJIT_PATH,\n"
    "KERNJIT_CUDA_HOME; the remote cache: KERNJIT_REMOTE_CACHE (redis://HOST:PORT[/DB] or\n"
    "unix:///PATH), KERNJIT_REMOTE_SECRET, KERNJIT_REMOTE_MODE (read or readwrite).\n",
    CLI_DISPATCH_LIST(commands)};

/* The versions of everything that makes a binary, and where binaries go: what a bug report needs. */
static int print_version(void) {
    kj_toolchain tc = KJ_TOOLCHAIN_INIT;
    kj_toolchain_query(&tc);
    int count = 0;
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    char driver[1024];
    kj_status ds = kj_device_count(&count);
    int have_driver_version = ds == KJ_OK && count > 0 && kj_device_query(0, &d) == KJ_OK;
    if (ds != KJ_OK) snprintf(driver, sizeof driver, "none (%s)", kj_last_error());
    else if (!have_driver_version) snprintf(driver, sizeof driver, "loaded, no device");
    else snprintf(driver, sizeof driver, "CUDA %d.%d, %d device%s", d.driver_version / 1000,
                  d.driver_version % 1000 / 10, count, count == 1 ? "" : "s");
    kj_runtime *rt;
    char cache[1024]; /* the folder, or why there is none */
    int have_cache = 0;
    if (cli_runtime(&rt, 1, NULL, 0) == KJ_OK) {
        have_cache = kj_cache_dir(rt) != NULL;
        snprintf(cache, sizeof cache, "%s", have_cache ? kj_cache_dir(rt) : "(none: compiling in memory)");
        kj_runtime_destroy(rt);
    } else {
        snprintf(cache, sizeof cache, "(%s)", kj_last_error());
    }
    if (cli_json) {
        json_command("--version");
        json_begin_object();
        json_string("kernjit_version", kj_version_string());
        json_cuda_version("nvrtc_version", tc.nvrtc_version);
        json_cuda_version("nvjitlink_version", tc.nvjitlink_version);
        json_string("toolkit_dir", tc.cuda_home);
        if (have_driver_version) json_cuda_version("driver_version", d.driver_version);
        else json_null("driver_version");
        json_fields("driver=%s device_count=%d cache_dir=%s", driver, count, have_cache ? cache : NULL);
        json_end_object();
        return EXIT_OK;
    }
    printf("kernjit %s\n", kj_version_string());
    printf("NVRTC %d.%d, nvJitLink %d.%d, CUDA toolkit at %s\n", tc.nvrtc_version / 1000,
           tc.nvrtc_version % 1000 / 10, tc.nvjitlink_version / 1000, tc.nvjitlink_version % 1000 / 10, tc.cuda_home);
    printf("driver: %s\n", driver);
    printf("cache: %s\n", cache);
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
        else {
            /* left for the command to parse, but known now: its usage errors are JSON too */
            if (strcmp(a, "--json") == 0) cli_json = 1;
            argv[out++] = argv[i];
        }
    }
    argv[out] = NULL;
    return out;
}

int main(int argc, char **argv) {
    argc = global_flags(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "help") == 0) {
        cli_dispatch_help(&kernjit, stdout);
        return EXIT_OK;
    }
    int rc = argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
                 ? print_version()
                 : cli_dispatch_run(&kernjit, argc, argv);
    json_finish(rc);
    return rc;
}
