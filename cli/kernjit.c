/* kernjit: the command-line tool, and its tree of commands. `kernjit COMMAND --help` describes each
 * command; the families' runners (run_<family>.c) and benchmarks (bench_<name>.c) are listed here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dispatch.h"
#include "run.h"

static const cli_subcommand runners[] = {
    {"reduce", run_reduce, "a reduction: sum/max/min/prod over i32 u32 i64 f16 bf16 f32 f64"},
    {"transpose", run_transpose, "a matrix transpose, any rows x cols (access orders, tiles, ...)"},
    {"vector-add", run_vector_add, "c = a + b over f32 or f64"},
    {"nested-reduce", run_nested_reduce, "a recursive reduction launching kernels from the GPU (CDP2)"},
    {"nested-hello", run_nested_hello, "the nested hello world (dynamic parallelism)"},
    {"mandelbrot", run_mandelbrot, "a Mandelbrot image: escape time or Mariani-Silver (CDP2)"},
};
static const cli_dispatch run = {"kernjit run", "kernel",
                                 "usage: kernjit run KERNEL [ARGS...]   (kernjit run KERNEL --help: its "
                                 "arguments)\n\nkernels:\n",
                                 NULL, CLI_DISPATCH_LIST(runners)};

static const cli_subcommand benches[] = {
    {"jit", bench_jit, "cold compile next to raw NVRTC, disk hit, memory hit"},
    {"reduce", bench_reduce, "op x type x size x entry: us, GB/s, % of a copy, ratio to CUB"},
    {"transpose", bench_transpose, "variants and tile shapes x sizes: us, GB/s, % of a device copy"},
    {"vector-add", bench_vector_add, "types x sizes, block/unroll shapes: us, GB/s, % of a device copy"},
    {"nested", bench_nested, "nested reductions against the flat one; Mandelbrot's 2 algorithms"},
    {"cache", bench_cache, "memory, disk and remote (Redis) hits against a cold compile"},
};
static const cli_dispatch bench = {"kernjit bench", "benchmark",
                                   "usage: kernjit bench NAME [ARGS...]   (kernjit bench NAME --help)\n\nbenchmarks:\n",
                                   NULL, CLI_DISPATCH_LIST(benches)};

static int cmd_run(int argc, char **argv) { return cli_dispatch_run(&run, argc, argv); }
static int cmd_bench(int argc, char **argv) { return cli_dispatch_run(&bench, argc, argv); }

static const cli_subcommand commands[] = {
    {"demo", cmd_demo, "JIT-compile the reduction, run it on 64M values (no GPU: compile)"},
    {"info", cmd_info, "devices, compute capabilities and the toolchain"},
    {"list", cmd_list, "built-in kernels: entries and parameters with allowed values"},
    {"compile", cmd_compile, "compile a kernel into the cache (no GPU needed)"},
    {"seed", cmd_seed, "compile kernels ahead of time into a folder to ship (no GPU)"},
    {"run", cmd_run, "run a built-in kernel on random input and check it against the CPU"},
    {"launch", cmd_launch, "run any .cu kernel once, its buffers and scalars on the command line"},
    {"bench", cmd_bench, "benchmarks: jit (cache and compile times), reduce (against CUB)"},
    {"cache", cmd_cache, "the disk cache: path, list, stats, clear; the remote: push, pull"},
    {"tune", cmd_tune, "time a kernel's variants on the GPU, keep the fastest for later runs"},
};

/* The sections of `kernjit --help` that the man page has as its EXIT STATUS and ENVIRONMENT
 * (packaging/make-man.sh takes them from there), and the README lists too: every variable that
 * kernjit reads (tests/test-help.py checks the three against the sources). */
#define CLI_EXIT_STATUS_HELP                                                                                           \
    "exit status:\n"                                                                                                   \
    "  0  success\n"                                                                                                   \
    "  1  failure: a compile error, no device, more device memory than is free, a\n"                                   \
    "     wrong result\n"                                                                                              \
    "  2  usage error: an option or a value that is not allowed (the message names\n"                                  \
    "     it and what is)\n"
#define CLI_ENVIRONMENT_HELP                                                                                           \
    "environment:\n"                                                                                                   \
    "  KERNJIT_CACHE_DIR      the disk cache's folder; else $XDG_CACHE_HOME/kernjit,\n"                                \
    "                         else ~/.cache/kernjit\n"                                                                 \
    "  KERNJIT_CACHE_MAX      the disk cache's bound (default 1G): the least recently\n"                               \
    "                         used entries go first\n"                                                                 \
    "  KERNJIT_CACHE_DISABLE  1: no disk cache, every kernel compiled (--no-cache)\n"                                  \
    "  KERNJIT_STATE_DIR      the tuning database's folder; else a cache folder that\n"                                \
    "                         is named, else $XDG_STATE_HOME/kernjit or\n"                                             \
    "                         ~/.local/state/kernjit\n"                                                                \
    "  KERNJIT_PATH           folders (A:B) searched for NAME.cu, before the built-in\n"                               \
    "                         kernels\n"                                                                               \
    "  KERNJIT_SEED_PATH      seed folders (A:B; kernjit seed) read before the cache,\n"                               \
    "                         then the install's share/kernjit/seed\n"                                                 \
    "  KERNJIT_SEED_SECRET    signs kernjit seed's entries, and programs refuse seed\n"                                \
    "                         entries not signed with it (else KERNJIT_REMOTE_SECRET)\n"                               \
    "  KERNJIT_CUDA_HOME      the CUDA toolkit (its headers, the device runtime);\n"                                   \
    "                         else $CUDA_HOME, else /usr/local/cuda\n"                                                 \
    "  KERNJIT_LIBCUDA        the driver library, in place of libcuda.so.1\n"                                          \
    "  KERNJIT_NVFATBIN       the nvFatbin library of --emit fatbin (a path), or off:\n"                               \
    "                         kernjit writes the fat binary (of sm_XY targets only)\n"                                 \
    "  KERNJIT_NCCL           the NCCL library (kj_reduce_nccl, bench reduce\n"                                        \
    "                         --devices), in place of libnccl.so.2\n"                                                  \
    "  KERNJIT_CUB_PLUGIN     bench reduce's CUB reference: a plugin's path, or off\n"                                 \
    "  KERNJIT_REMOTE_CACHE   the remote cache: redis://HOST:PORT[/DB], rediss://...\n"                                \
    "                         (TLS) or unix:///PATH\n"                                                                 \
    "  KERNJIT_REMOTE_SECRET  signs and checks the remote cache's entries: a file's\n"                                 \
    "                         absolute path, or the secret itself (16 to 4096 bytes)\n"                                \
    "  KERNJIT_REMOTE_MODE    read (fetch only), or readwrite (the default: push too)\n"                               \
    "  KERNJIT_REMOTE_TLS_CA  the CAs (a PEM file) a rediss:// server's certificate\n"                                 \
    "                         chains to, in place of the system's (or ?tls_ca=FILE)\n"                                 \
    "  CUDA_VISIBLE_DEVICES   the devices the driver shows, in its order: --device N\n"                                \
    "                         counts within them (--device 0 is the first listed)\n"

static const cli_dispatch kernjit = {"kernjit", "command",
                                     "usage: kernjit [--version] [--help] [-v|-q] [--no-cache] COMMAND [ARGS...]\n"
                                     "\n"
                                     "kernjit compiles CUDA kernels at run time with NVRTC, caches them by compute\n"
                                     "capability and launches them through the driver API.\n\ncommands:\n",
                                     "\nEvery command takes --help and --json. Anywhere on the line: -v/--verbose\n"
                                     "shows the library's notes (cache hits, compiles, evictions), -q/--quiet only\n"
                                     "its errors; --no-cache compiles everything (KERNJIT_CACHE_DISABLE=1). Sizes and\n"
                                     "counts (--n, --rows, --repeat, --sizes, KERNJIT_CACHE_MAX, ...) are digits with\n"
                                     "an optional K, M, G or T (x1024 each: 64M), or a power (2^28). Names take - and\n"
                                     "_ alike (run vector_add, compile vector-add).\n"
                                     "\n" CLI_EXIT_STATUS_HELP "\n" CLI_ENVIRONMENT_HELP,
                                     CLI_DISPATCH_LIST(commands)};

/* --version: the version alone, as help2man (the man page) reads it, touching nothing (`kernjit info`
 * has the toolchain and the devices, `kernjit cache path` the cache). The JSON document has what a bug
 * report needs: the versions of everything that makes a binary, and where binaries go. */
static int print_version(void) {
    if (!cli_json) {
        printf("kernjit %s\n", kj_version_string());
        return EXIT_OK;
    }
    kj_toolchain tc = KJ_TOOLCHAIN_INIT;
    kj_toolchain_query(&tc);
    int count = 0;
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    char driver[1024];
    kj_status ds = kj_device_count(&count);
    int have_driver_version = ds == KJ_OK && count > 0 && kj_device_query(0, &d) == KJ_OK;
    if (ds != KJ_OK) snprintf(driver, sizeof driver, "none (%s)", kj_last_error());
    else if (!have_driver_version) snprintf(driver, sizeof driver, "loaded, no device");
    else
        snprintf(driver, sizeof driver, "CUDA %d.%d, %d device%s", d.driver_version / 1000,
                 d.driver_version % 1000 / 10, count, count == 1 ? "" : "s");
    kj_runtime *rt;
    char cache[4200];
    int have_cache = 0;
    if (cli_runtime(&rt, 1, NULL, 0) == KJ_OK) {
        have_cache = kj_cache_dir(rt) != NULL;
        if (have_cache) snprintf(cache, sizeof cache, "%s", kj_cache_dir(rt));
        kj_runtime_destroy(rt);
    }
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
