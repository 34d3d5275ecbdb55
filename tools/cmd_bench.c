/* kernjit bench: benchmarks, one file each (bench_<name>.c), listed in the table below. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "run.h"

static const struct {
    const char *name;
    cli_command_fn fn;
    const char *summary;
} benches[] = {
    {"jit", bench_jit, "cold compile next to raw NVRTC, disk hit in a new process, memory hit"},
    {"reduce", bench_reduce, "op x type x size x entry: median us, GB/s, % of a device copy, ratio to CUB"},
    {"transpose", bench_transpose, "variants and tile shapes x sizes: median us, GB/s, % of a device copy"},
    {"vector-add", bench_vector_add, "types x sizes and block/unroll shapes: median us, GB/s, % of a device copy"},
    {"nested", bench_nested, "nested reductions next to the flat one; Mandelbrot escape time vs Mariani-Silver"},
    {"cache", bench_cache, "memory, disk and remote (Redis) hits of a 6 KB cubin against a cold compile"},
};
#define BENCH_COUNT (sizeof benches / sizeof benches[0])

static void help(FILE *out) {
    fprintf(out, "usage: kernjit bench NAME [ARGS...]   (kernjit bench NAME --help)\n\nbenchmarks:\n");
    for (size_t i = 0; i < BENCH_COUNT; i++) fprintf(out, "  %-11s %s\n", benches[i].name, benches[i].summary);
}

int cmd_bench(int argc, char **argv) {
    if (argc < 2) {
        help(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < BENCH_COUNT; i++)
        if (strcmp(argv[1], benches[i].name) == 0) return benches[i].fn(argc - 1, cli_name_argv0(argv + 1, "kernjit bench"));
    char names[256] = "";
    for (size_t i = 0; i < BENCH_COUNT; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", benches[i].name);
    return cli_usage("bench", "unknown benchmark '%s': the benchmarks are %s", argv[1], names);
}
