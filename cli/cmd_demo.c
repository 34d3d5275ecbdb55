/* kernjit demo: the main job. With a GPU: JIT-compile the reduction and run it on 64M random values,
 * checked against the CPU. Without: compile and cache every built-in kernel for sm_90 and say that
 * nothing was launched. */
#include <string.h>

#include "cli.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit demo [--n N] [--json]\n"
           "\n"
           "With a GPU: JIT-compiles the reduction (or takes it from the cache), sums N\n"
           "random f32 values (default 64M) on the GPU, checks the sum against the CPU and\n"
           "prints the time, GB/s and where the kernel came from. Without a GPU: compiles\n"
           "every built-in kernel for sm_90 into the cache and says that nothing was\n"
           "launched.\n");
}

static int compile_all(int json) {
    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 1, "sm_90", 0);
    if (s != KJ_OK) return cli_fail("demo", s);
    int rc = EXIT_OK;
    if (json) {
        json_begin_object();
        json_null("device");
        json_string("arch", "sm_90");
        json_begin_array("kernels");
    } else {
        printf("no CUDA device: compiling the built-in kernels for sm_90 (nothing will be launched)\n");
    }
    for (size_t i = 0; kj_builtin_name(i); i++) {
        kj_request req = {.size = sizeof(kj_request), .kernel = kj_builtin_name(i)};
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        s = kj_compile(rt, &req, &r);
        if (s != KJ_OK) {
            rc = cli_fail("demo", s);
            break;
        }
        if (json) {
            json_begin_object();
            json_fields("kernel=%s cache_hit?=%d origin=%s compile_ms=%g entry_path=%s", req.kernel, r.cache_hit,
                        kj_origin_name(r.origin), r.compile_ms + r.link_ms, r.stored ? r.cache_path : NULL);
            json_end_object();
        } else {
            char how[48];
            if (r.origin == KJ_ORIGIN_SEED) snprintf(how, sizeof how, "seed hit");
            else if (r.cache_hit) snprintf(how, sizeof how, "cache hit");
            else snprintf(how, sizeof how, "compiled in %.0f ms", r.compile_ms + r.link_ms);
            printf("  %-12s %-20s %s\n", req.kernel, how, r.stored ? r.cache_path : "(memory only)");
        }
    }
    if (json) {
        json_end_array();
        json_string("note", "no CUDA device: nothing was launched");
        json_end_object();
    } else if (rc == EXIT_OK) {
        printf("nothing was launched: there is no CUDA device here. Run `kernjit demo` on a machine with a GPU.\n");
    }
    kj_runtime_destroy(rt);
    return rc;
}

typedef struct line {
    int json;
    char *n;
} line;

static int option(void *user, int opt, char *arg) {
    line *l = user;
    if (opt == 'h') return help(), CLI_DONE;
    if (opt == 'j') l->json = 1;
    else l->n = arg;
    return EXIT_OK;
}

int cmd_demo(int argc, char **argv) {
    static const cli_option_set set = {"n=n: json=j help=h", option};
    line l = {0, "64M"};
    int rc = cli_getopt("demo", argc, argv, &set, 1, &l), json = l.json;
    char *n = l.n;
    if (rc != EXIT_OK) return rc == CLI_DONE ? EXIT_OK : rc;
    /* checked here too: without a device the count is not used, but a typo is still a typo */
    uint64_t count_check;
    rc = cli_count_arg("demo", "--n", n, 0, 1ull << 40, &count_check);
    if (rc != EXIT_OK) return rc;
    int count = 0;
    if (kj_device_count(&count) != KJ_OK || count == 0) return compile_all(json);
    /* run_reduce names argv[0] in its messages: this is the demo */
    char *args[] = {"kernjit demo",         "--op", "sum", "--type", "f32", "--n", n, "--repeat", "20",
                    json ? "--json" : NULL, NULL};
    return run_reduce(json ? 10 : 9, args);
}
