/* kernjit bench: benchmarks, one file each (bench_<name>.c). */
#include <string.h>

#include "cli.h"
#include "run.h"

static void help(FILE *out) {
    fprintf(out, "usage: kernjit bench jit|reduce|nested [ARGS...]   (kernjit bench NAME --help)\n\n"
                 "  jit     cold compile next to raw NVRTC, disk hit in a new process, memory hit\n"
                 "  reduce  op x type x size x entry: median us, GB/s, %% of a device copy, ratio to CUB\n"
                 "  nested  nested reductions next to the flat one; Mandelbrot escape time vs Mariani-Silver\n");
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
    if (strcmp(argv[1], "jit") == 0) return bench_jit(argc - 1, argv + 1);
    if (strcmp(argv[1], "reduce") == 0) return bench_reduce(argc - 1, argv + 1);
    if (strcmp(argv[1], "nested") == 0) return bench_nested(argc - 1, argv + 1);
    return cli_usage("bench", "unknown benchmark '%s': the benchmarks are jit, reduce, nested", argv[1]);
}
