/* kernjit bench reduce: placeholder until the reductions issue lands its benchmark. */
#include "cli.h"
#include "run.h"

int bench_reduce(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bench reduce", "not built yet");
}
