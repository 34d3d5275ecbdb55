/* kernjit run: run a built-in kernel family on random input, checked against the CPU. Each family's
 * runner lives in its own run_<family>.c. */
#include "cli.h"
#include "dispatch.h"
#include "run.h"

static const cli_subcommand runners[] = {
    {"reduce", run_reduce, "a reduction (sum/max/min/prod over i32 u32 i64 f16 f32 f64)"},
    {"transpose", run_transpose, "a matrix transpose, any rows x cols (variants: access orders, tiles, L1, vectors)"},
    {"vector-add", run_vector_add, "c = a + b over f32 or f64"},
    {"nested-reduce", run_nested_reduce, "a recursive reduction launching kernels from the GPU (CDP2)"},
    {"nested-hello", run_nested_hello, "the nested hello world (dynamic parallelism)"},
    {"mandelbrot", run_mandelbrot, "a Mandelbrot image: escape time or Mariani-Silver (CDP2)"},
};

static const cli_dispatch run = {
    "kernjit run", "kernel",
    "usage: kernjit run KERNEL [ARGS...]   (kernjit run KERNEL --help for its arguments)\n\nkernels:\n",
    NULL, CLI_DISPATCH_LIST(runners)};

int cmd_run(int argc, char **argv) { return cli_dispatch_run(&run, argc, argv); }
