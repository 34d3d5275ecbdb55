/* kernjit run: run a built-in kernel family on random input, checked against the CPU. Each family's
 * runner lives in its own run_<family>.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "run.h"

static const struct {
    const char *name;
    cli_command_fn fn;
    const char *summary;
} runners[] = {
    {"reduce", run_reduce, "a reduction (sum/max/min/prod over i32 u32 i64 f16 f32 f64)"},
    {"transpose", run_transpose, "a matrix transpose, any rows x cols (variants: access orders, tiles, L1, vectors)"},
    {"vector-add", run_vector_add, "c = a + b over f32 or f64"},
    {"nested-reduce", run_nested_reduce, "a recursive reduction launching kernels from the GPU (CDP2)"},
    {"nested-hello", run_nested_hello, "the nested hello world (dynamic parallelism)"},
    {"mandelbrot", run_mandelbrot, "a Mandelbrot image: escape time or Mariani-Silver (CDP2)"},
};
#define RUNNER_COUNT (sizeof runners / sizeof runners[0])

static void help(FILE *out) {
    fprintf(out, "usage: kernjit run KERNEL [ARGS...]   (kernjit run KERNEL --help for its arguments)\n\nkernels:\n");
    for (size_t i = 0; i < RUNNER_COUNT; i++) fprintf(out, "  %-14s %s\n", runners[i].name, runners[i].summary);
}

int cmd_run(int argc, char **argv) {
    if (argc < 2) {
        help(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < RUNNER_COUNT; i++)
        if (strcmp(argv[1], runners[i].name) == 0) return runners[i].fn(argc - 1, cli_name_argv0(argv + 1, "kernjit run"));
    char names[256] = "";
    for (size_t i = 0; i < RUNNER_COUNT; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", runners[i].name);
    return cli_usage("run", "unknown kernel '%s': the kernels are %s", argv[1], names);
}
