/* The runners of `kernjit run` (run_<family>.c) and the benchmarks of `kernjit bench` (bench_<name>.c). */
#ifndef KJ_RUN_H
#define KJ_RUN_H

#include "cli.h"

cli_command run_reduce, run_transpose, run_vector_add, run_nested_reduce, run_nested_hello, run_mandelbrot;
cli_command bench_jit, bench_cache, bench_reduce, bench_transpose, bench_vector_add, bench_nested;

#endif
