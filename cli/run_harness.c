#include "run_harness.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "devices.h"
#include "nvcc_options.h"

void *run_host(run_ctx *c, size_t bytes) {
    assert(c->hosts < RUN_MAX_BUFFERS);
    void *p = malloc(bytes ? bytes : 1);
    if (!p) cli_error_as(c->cmd, KJ_ERR_HOST_MEMORY, "out of host memory for %zu bytes", bytes);
    return c->host[c->hosts++] = p;
}

void *run_random(run_ctx *c, kj_type type, uint64_t n, uint64_t seed) {
    void *p = run_host(c, (size_t)n * kj_type_size(type));
    if (p) cli_random_fill(type, p, (size_t)n, seed, 0);
    return p;
}

kj_status run_device(run_ctx *c, size_t bytes, kj_devptr *out) {
    assert(c->devices < RUN_MAX_BUFFERS);
    kj_status s = kj_mem_alloc(c->rt, bytes ? bytes : 1, out);
    c->device[c->devices++] = s == KJ_OK ? *out : 0;
    return s;
}

static double gbps(const run_ctx *c) { return c->median_ms > 0 ? c->bytes / (c->median_ms * 1e-3) / 1e9 : 0; }

void run_json_time(const run_ctx *c) {
    json_uint("repeat", c->repeat);
    json_double("median_us", c->median_ms * 1e3);
    if (c->family->reports_gbps) json_double("gbps", gbps(c));
}

void run_text_time(const run_ctx *c, const char *note) {
    printf("  time        %.2f us median of %llu runs", c->median_ms * 1e3, (unsigned long long)c->repeat);
    if (c->family->reports_gbps) printf(", %.1f GB/s", gbps(c));
    if (note) printf(" (%s)", note);
    putchar('\n');
}

void run_text_checked(const run_ctx *c, kj_origin origin, int ok, const char *how, const char *note) {
    printf("  kernel      %s\n", cli_origin_text(origin));
    printf("  check       %s (%s)\n", ok ? "ok" : "WRONG", how);
    run_text_time(c, note);
}

static int takes_repeat(const run_family *f) { return f->launch || f->timed; }

typedef struct parse_state {
    const run_family *f;
    run_ctx *c;
    int seed_given;
} parse_state;

static int parse_macro(run_ctx *c, const run_macros *m, char *text) {
    kj_define d;
    char err[256];
    uint64_t v;
    if (cli_parse_define(text, &d, err, sizeof err) != 0) return cli_usage(c->cmd, "%s", err);
    int which = -1, count = 0;
    char names[128] = "";
    for (; count < RUN_MACROS && m->names[count]; count++) {
        if (strcmp(d.name, m->names[count]) == 0) which = count;
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s-D %s",
                 count ? (count + 1 < RUN_MACROS && m->names[count + 1] ? ", " : " and ") : "", m->names[count]);
    }
    if (which < 0) return cli_usage(c->cmd, "-D %s: %s takes %s (%s)", d.name, c->cmd, names, m->instead);
    if (cli_parse_uint(d.value, m->max, &v) != 0 || v == 0)
        return cli_usage(c->cmd, "-D %s=%s: the value must be %s", d.name, d.value, m->allowed);
    *(unsigned *)((char *)c + m->at[which]) = (unsigned)v;
    return EXIT_OK;
}

static int harness_option(void *user, int opt, char *arg) {
    parse_state *p = user;
    run_ctx *c = p->c;
    switch (opt) {
    case 'h':
        p->f->help();
        printf(CLI_DEVICE_HELP);
        printf("--arch TARGET builds the kernels for TARGET rather than the device's own sm_XY:\n"
               "one whose code the device runs (sm_90a on 9.0; compute_90, PTX). nvcc's\n"
               "-arch=TARGET, -arch TARGET and --gpu-architecture are taken too%s.\n",
               p->f->macros ? ", as are -DNAME=V\nand --define-macro NAME=V (-D NAME alone is NAME=1)" : "");
        return CLI_DONE;
    case 'G': return cli_device_arg(c->cmd, arg);
    case 'A': cli_arch = arg; break;
    case 's':
        if (cli_parse_uint(arg, UINT64_MAX, &c->seed) != 0)
            return cli_usage(c->cmd, "--seed '%s' is not a non-negative integer", arg);
        p->seed_given = 1;
        break;
    case 'r': return cli_count_arg(c->cmd, "--repeat", arg, 1, p->f->max_repeat, &c->repeat);
    case 'j': c->json = 1; break;
    case 'D': return parse_macro(c, p->f->macros, arg);
    }
    return EXIT_OK;
}

static int family_option(void *user, int opt, char *arg) {
    parse_state *p = user;
    return p->f->option(p->c, opt, arg);
}

/* The family's options, and those of the harness that it takes. */
static int parse(parse_state *p, int argc, char **argv) {
    const run_family *f = p->f;
    char harness[96];
    snprintf(harness, sizeof harness, "help=h json=j device=G: arch=A:%s%s%s", f->seeded ? " seed=s:" : "",
             takes_repeat(f) ? " repeat=r:" : "", f->macros ? " define=D:" : "");
    const cli_option_set sets[] = {
        {f->options, family_option, 0},
        {harness, harness_option, CLI_NVCC_ARCH | CLI_NVCC_NO_COMPILER | (f->macros ? CLI_NVCC_DEFINES : 0)}};
    return cli_getopt(p->c->cmd, argc, argv, sets, 2, p);
}

static kj_status time_launch(run_ctx *c, const run_family *f, double *ms) {
    float elapsed = 0;
    kj_status s = kj_event_record(c->start, NULL);
    if (s == KJ_OK) s = f->launch(c);
    if (s == KJ_OK) s = kj_event_record(c->stop, NULL);
    if (s == KJ_OK) s = kj_event_elapsed_ms(c->start, c->stop, &elapsed);
    *ms = elapsed;
    return s;
}

/* After the first run: the timed ones, and their median. */
static int time_runs(const run_family *f, run_ctx *c) {
    for (uint64_t i = 0; i < c->repeat; i++) {
        kj_status s = f->launch ? time_launch(c, f, &c->times[i]) : f->timed(c, &c->times[i]);
        if (s != KJ_OK) return cli_fail(c->cmd, s);
    }
    c->median_ms = cli_median(c->times, c->repeat);
    return EXIT_OK;
}

/* Everything on the device, with the runtime open. */
static int run_on_device(const run_family *f, run_ctx *c) {
    if (c->device_bytes) {
        int rc = cli_check_device_memory(c->rt, c->cmd, c->what, c->device_bytes);
        if (rc != EXIT_OK) return rc;
    }
    if (!(c->times = run_host(c, c->repeat * sizeof *c->times))) return EXIT_FAILURE_;
    if (f->launch) {
        RUN_TRY(c, kj_event_create(c->rt, &c->start));
        RUN_TRY(c, kj_event_create(c->rt, &c->stop));
    }
    int rc = f->setup(c);
    if (rc == EXIT_OK) rc = time_runs(f, c);
    if (rc == EXIT_OK && f->check) rc = f->check(c);
    if (rc != EXIT_OK) return rc;
    if (c->json) {
        kj_device_info d = KJ_DEVICE_INFO_INIT;
        kj_runtime_device(c->rt, &d);
        json_begin_object();
        json_fields("kernel=%s device=%s", f->kernel, d.name);
        json_arch("arch", d.cc_major, d.cc_minor);
        f->json(c);
        json_end_object();
    } else {
        f->text(c);
    }
    return c->wrong[0] ? cli_error_as(c->cmd, KJ_ERR_WRONG_RESULT, "%s", c->wrong) : EXIT_OK;
}

int run_main(const run_family *f, run_ctx *c, int argc, char **argv) {
    /* argv[0] is "kernjit run NAME" (or "kernjit demo"): messages name what was typed */
    c->cmd = strncmp(argv[0], "kernjit ", 8) == 0 ? argv[0] + 8 : argv[0];
    c->family = f;
    if (!takes_repeat(f)) c->repeat = 0;
    parse_state p = {f, c, 0};
    int rc = parse(&p, argc, argv);
    if (rc == CLI_DONE) return EXIT_OK;
    if (rc == EXIT_OK && f->prepare) rc = f->prepare(c);
    if (rc != EXIT_OK) return rc;
    if (!p.seed_given) c->seed = check_fresh_seed();

    kj_status s = cli_runtime(&c->rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(c->cmd, s);
    if (kj_runtime_has_device(c->rt)) rc = run_on_device(f, c);
    else
        rc = cli_error_as(c->cmd, KJ_ERR_NO_DEVICE,
                          "no CUDA device: nothing can run here (`kernjit compile %s` works without one)", f->kernel);
    if (f->teardown) f->teardown(c);
    kj_event_destroy(c->start);
    kj_event_destroy(c->stop);
    for (unsigned i = 0; i < c->devices; i++) kj_mem_free(c->rt, c->device[i]);
    for (unsigned i = 0; i < c->hosts; i++) free(c->host[i]);
    kj_runtime_destroy(c->rt);
    return rc;
}
