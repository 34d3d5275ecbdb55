/* The runners of `kernjit run` and the benchmarks of `kernjit bench`, one file each. */
#ifndef KJ_RUN_H
#define KJ_RUN_H

int run_reduce(int argc, char **argv);
int run_nested_reduce(int argc, char **argv);
int run_nested_hello(int argc, char **argv);
int run_mandelbrot(int argc, char **argv);
int bench_jit(int argc, char **argv);
int bench_cache(int argc, char **argv);
int bench_reduce(int argc, char **argv);
int run_transpose(int argc, char **argv);
int run_vector_add(int argc, char **argv);
int bench_transpose(int argc, char **argv);
int bench_vector_add(int argc, char **argv);
int bench_nested(int argc, char **argv);

#endif
