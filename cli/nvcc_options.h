/* nvcc's spellings of the compiler's options, taken by the commands that compile (compile, launch,
 * and run for the target). A user's hands type what nvcc takes: `-arch=sm_90`, `-I dir`, `-G`,
 * `-Xptxas -v`; getopt alone would read `-arch=sm_90` as `-a rch=sm_90` and refuse the rest. Before
 * getopt reads the line, each such word (with the next one when it is its value) becomes the
 * command's own option, so that every spelling has one meaning, one message and one cache key:
 *
 *   -arch V, -arch=V, --gpu-architecture[=]V      --arch=V                         (CLI_NVCC_ARCH)
 *   --define-macro[=]NAME[=V]                      --define=NAME[=V]             (CLI_NVCC_DEFINES)
 *   -I DIR, -IDIR, --include-path[=]DIR            --option=--include-path=DIR   (CLI_NVCC_COMPILER)
 *   -std V, -std=V, --std[=]V                      --option=-std=V
 *   -use_fast_math, --use_fast_math                --option=--use_fast_math
 *   -G, --device-debug                             --option=--device-debug
 *   -lineinfo, --generate-line-info                --option=--generate-line-info
 *   -Xptxas ARG, -Xptxas=ARG, --ptxas-options[=]ARG   --option=--ptxas-options=ARG
 *
 * (-DNAME and -D NAME are getopt's own -D; NAME alone is NAME=1, as nvcc has it: cli_parse_define.)
 * A word that is the value of the option before it, and every word after "--", is left as it is; so
 * is -I or -G where the command has that letter (run mandelbrot's -I, the harness's -G). */
#ifndef KJ_NVCC_OPTIONS_H
#define KJ_NVCC_OPTIONS_H

#include <getopt.h>

/* CLI_NVCC_NO_COMPILER: the compiler's spellings are refused, naming the commands that take them (run
 * builds its kernels as they are; getopt would read `-std=c++20` as `-s td=c++20`). */
enum { CLI_NVCC_ARCH = 1, CLI_NVCC_DEFINES = 2, CLI_NVCC_COMPILER = 4, CLI_NVCC_NO_COMPILER = 8 };

/* The spellings for --help (compile and launch take them all). */
#define CLI_NVCC_HELP                                                                                                  \
    "nvcc's spellings are taken too, each the same compile and key as the option\n"                                    \
    "on its right:\n"                                                                                                  \
    "  -arch=T, -arch T, --gpu-architecture[=]T         --arch T\n"                                                    \
    "  -DNAME[=V], -D NAME, --define-macro[=]NAME[=V]   -D NAME=V (NAME alone: =1)\n"                                  \
    "  -I DIR, -IDIR, --include-path[=]DIR              --option=--include-path=DIR\n"                                 \
    "  -std=STD, -std STD, --std=STD                    --option=-std=STD\n"                                           \
    "  -use_fast_math, --use_fast_math                  --option=--use_fast_math\n"                                    \
    "  -G, --device-debug                               --option=--device-debug\n"                                     \
    "  -lineinfo, --generate-line-info                  --option=--generate-line-info\n"                               \
    "  -Xptxas OPT, -Xptxas=OPT, --ptxas-options[=]OPT  --option=--ptxas-options=OPT\n"                                \
    "A -std (c++20, ...) takes the place of kernjit's own -std=c++17.\n"

/* Rewrites argv[1 .. *argc - 1] in place (*argc may shrink: "-arch sm_90" is one word after), for the
 * kinds in `take`, given the command's getopt table (options, and letters as getopt_long takes them).
 * The new words live as long as the process. Returns EXIT_OK, or EXIT_USAGE after saying why (an
 * nvcc option that needs a value and has none; a compiler's option under CLI_NVCC_NO_COMPILER). */
int cli_nvcc_options(const char *cmd, int *argc, char **argv, const struct option *options, const char *letters,
                     unsigned take);

#endif
