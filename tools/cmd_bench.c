/* kernjit bench: benchmarks, one file each (bench_<name>.c), listed in the table below. */
#include "cli.h"
#include "dispatch.h"
#include "run.h"

static const cli_subcommand benches[] = {
    {"jit", bench_jit, "cold compile next to raw NVRTC, disk hit in a new process, memory hit"},
    {"reduce", bench_reduce, "op x type x size x entry: median us, GB/s, % of a device copy, ratio to CUB"},
    {"transpose", bench_transpose, "variants and tile shapes x sizes: median us, GB/s, % of a device copy"},
    {"vector-add", bench_vector_add, "types x sizes and block/unroll shapes: median us, GB/s, % of a device copy"},
    {"nested", bench_nested, "nested reductions next to the flat one; Mandelbrot escape time vs Mariani-Silver"},
};

static const cli_dispatch bench = {
    "kernjit bench", "benchmark",
    "usage: kernjit bench NAME [ARGS...]   (kernjit bench NAME --help)\n\nbenchmarks:\n",
    NULL, CLI_DISPATCH_LIST(benches)};

int cmd_bench(int argc, char **argv) { return cli_dispatch_run(&bench, argc, argv); }
