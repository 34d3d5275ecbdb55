/* kernjit tune: time every variant of a kernel (or a budgeted part of them) on this device, keep the
 * fastest correct one in the tuning database; --show and --forget manage that database. */
#include <inttypes.h>
#include <sys/stat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "devices.h"
#include "plot.h"

#define MAX_DEFINES 64

static void help(void) {
    printf("usage: kernjit tune KERNEL [--entry E] [-D NAME=VALUE[,VALUE...]]... [--op OP]\n"
           "           [--type T] [--n N] [--budget K] [--samples S] [--threads J]\n"
           "           [--seed S] [--dry-run] [--plot FILE.png] [--device N] [--json|--csv]\n"
           "       kernjit tune --show [KERNEL] [--json|--csv]\n"
           "       kernjit tune --forget [KERNEL] [--entry E] [-D NAME=VALUE]... [--n N]\n"
           "           [--device NAME] [--cc X.Y]\n"
           "\n"
           "Compiles the variants of KERNEL (every combination of the tunables in its\n"
           "metadata, the other macros as given by -D, --op and --type or at their defaults)\n"
           "in parallel through the cache, then times each on the GPU (CUDA events after a\n"
           "warm-up; the median of S samples, default 10, at least 10; inputs that fit in L2\n"
           "rotate through copies) and checks it against the CPU reference. The fastest\n"
           "correct variant is timed again and stored in the tuning database (--show\n"
           "names it) for this device, the macros held fixed and the size bucket\n"
           "floor(log2 N); `kernjit run`, kj_reduce, kj_transpose and kj_vector_add then use\n"
           "it when no configuration is given. N counts elements (it takes 64M, 2^28); it\n"
           "defaults to 2^24 for reduce and 2^26 for transpose and vector_add. transpose\n"
           "tunes transpose_padded (TILE_DIM x BLOCK_ROWS x GROUP) on a rows x cols = N\n"
           "matrix, rows the largest divisor of N not above its square root (2^26: 8192 x\n"
           "8192; 2^25: 4096 x 8192); its --type sets ELEM_BYTES (f16 2, f32 4, f64 8), the\n"
           "other kernels' sets T. -D NAME=V1,V2 restricts a tunable to those values; NAME=V\n"
           "pins it (and keys the result by it). --budget K touches at most K variants:\n"
           "greedy coordinate descent from the defaults, then from random starting points.\n"
           "--dry-run stores nothing. --plot draws the sweep as a heat map (the first two\n"
           "tunables as rows and columns, GB/s in colour, the winner outlined; PNG, or PPM\n"
           "without libpng).\n"
           "\n"
           "--show lists the database; --forget removes the entries that match every filter\n"
           "given (all of them without filters; --device NAME there is a device's name), and\n"
           "with a remote cache in readwrite mode the matching shared results there too\n"
           "(else the next run would merge them back; a read-only node says so). Both work\n"
           "without a GPU. A stored result whose variant a tuning run here measures at less\n"
           "than 1/1.5 of its claim gives way to the run's result, here and on the server.\n"
           "Exit 1 without a CUDA device. --device N tunes on device N (default 0; `kernjit\n"
           "info` lists them). Kernels that can be tuned: reduce, transpose, vector_add.\n");
}

typedef struct args {
    const char *kernel, *entry, *device, *type, *plot;
    char elem_bytes[8]; /* --type for transpose: ELEM_BYTES */
    kj_define defines[MAX_DEFINES];
    size_t ndef;
    uint64_t n, budget, samples, threads, seed;
    int n_given, cc, dry_run, show, forget, format;
} args;

/* ---- progress -------------------------------------------------------------------------------- */

static void on_progress(const kj_progress *p, void *user) {
    (void)user;
    static const char *phase[] = {"compile", "measure", "re-measure"};
    char detail[512];
    snprintf(detail, sizeof detail, "%s: %s", p->variant, p->outcome);
    if (p->best_gbps > 0)
        snprintf(detail + strlen(detail), sizeof detail - strlen(detail), "  best %.1f GB/s", p->best_gbps);
    cli_progress("tune", phase[p->phase], p->done, p->total, detail);
}

/* ---- the tuning table ------------------------------------------------------------------------ */

static const char *status_word(kj_variant_status s) {
    switch (s) {
    case KJ_VARIANT_MEASURED: return "measured";
    case KJ_VARIANT_NOT_TRIED: return "not tried";
    case KJ_VARIANT_SKIPPED: return "skipped";
    case KJ_VARIANT_FAILED: return "failed";
    default: return "wrong";
    }
}

/* A cell of the grid: GB/s, or why there is none. */
static void cell(const kj_tune_result *r, size_t i, char *buf, size_t size) {
    const kj_tune_variant *v = kj_tune_result_variant(r, i);
    switch (v->status) {
    case KJ_VARIANT_MEASURED: snprintf(buf, size, "%.1f%s", v->gbps, i == r->best ? "*" : ""); break;
    case KJ_VARIANT_NOT_TRIED: snprintf(buf, size, "."); break;
    case KJ_VARIANT_SKIPPED: snprintf(buf, size, "skip"); break;
    case KJ_VARIANT_FAILED: snprintf(buf, size, "FAIL"); break;
    default: snprintf(buf, size, "WRONG"); break;
    }
}

static void print_grid(const kj_tune_result *r) {
    const kj_space *s = r->space;
    size_t rows = kj_space_dim_size(s, 0), cols = kj_space_dim_size(s, 1);
    printf("GB/s (* the best)   %s across, %s down\n", kj_space_dim_name(s, 1), kj_space_dim_name(s, 0));
    printf("%12s", "");
    for (size_t c = 0; c < cols; c++) printf(" %9s", kj_space_dim_value(s, 1, c));
    printf("\n");
    for (size_t row = 0; row < rows; row++) {
        printf("%12s", kj_space_dim_value(s, 0, row));
        for (size_t c = 0; c < cols; c++) {
            char buf[32];
            cell(r, row * cols + c, buf, sizeof buf);
            printf(" %9s", buf);
        }
        printf("\n");
    }
}

static void print_list(const kj_tune_result *r) {
    printf("%-40s %10s %9s  %s\n", "variant", "us", "GB/s", "");
    for (size_t i = 0; i < r->variant_count; i++) {
        const kj_tune_variant *v = kj_tune_result_variant(r, i);
        if (v->status == KJ_VARIANT_MEASURED)
            printf("%-40s %10.2f %9.1f  %s\n", *v->label ? v->label : "(no tunables)", v->median_us, v->gbps,
                   i == r->best ? "* best" : "");
        else printf("%-40s %10s %9s  %s\n", v->label, "-", "-", status_word(v->status));
    }
}

/* Why variants were not measured: per kind, the first few reasons (the grid only says "skip"). */
static void print_notes(const kj_tune_result *r) {
    static const kj_variant_status kinds[] = {KJ_VARIANT_SKIPPED, KJ_VARIANT_FAILED, KJ_VARIANT_WRONG};
    for (size_t k = 0; k < 3; k++) {
        size_t shown = 0, total = 0;
        for (size_t i = 0; i < r->variant_count; i++) {
            const kj_tune_variant *v = kj_tune_result_variant(r, i);
            if (v->status != kinds[k]) continue;
            total++;
            if (shown == 3) continue;
            const char *nl = strchr(v->note, '\n');
            printf("  %s %s: %.*s\n", status_word(v->status), v->label, nl ? (int)(nl - v->note) : (int)strlen(v->note),
                   v->note);
            shown++;
        }
        if (total > shown) printf("  ... and %zu more %s\n", total - shown, status_word(kinds[k]));
    }
}

static void print_text(const kj_tune_result *r) {
    char size[32];
    int k = 0;
    while (k < 63 && (1ull << k) < r->n) k++;
    if ((1ull << k) == r->n) snprintf(size, sizeof size, "2^%d", k);
    else snprintf(size, sizeof size, "%llu", (unsigned long long)r->n);
    printf("tune %s %s %s, n = %s on %s (sm_%d%d)\n", r->kernel, r->entry, r->fixed, size, r->device, r->cc_major,
           r->cc_minor);
    printf("%zu variants, %s: %zu measured, %zu skipped, %zu failed, %zu wrong, %zu not tried\n", r->variant_count,
           r->strategy, r->measured, r->skipped, r->failed, r->wrong, r->not_tried);
    printf("compile %.2f s (%zu compiled, %zu from the cache, %u threads), measure %.2f s, total %.2f s\n\n",
           r->compile_ms / 1e3, r->compiled, r->cached, r->threads, r->measure_ms / 1e3, r->total_ms / 1e3);
    if (kj_space_dim_count(r->space) == 2) print_grid(r);
    else print_list(r);
    print_notes(r);
    const kj_tune_variant *b = kj_tune_result_variant(r, r->best);
    double diff = r->best_us > 0 ? 100 * (r->remeasured_us - r->best_us) / r->best_us : 0;
    printf("\nwinner      %s\n", *b->label ? b->label : "(no tunables)");
    printf("  sweep     %.2f us, %.1f GB/s (median of %u x %u runs, %d registers)\n", r->best_us, r->best_gbps,
           b->samples, b->batch, b->registers);
    printf("  again     %.2f us, %.1f GB/s (median of %u samples, %+.1f%% from the sweep)\n", r->remeasured_us,
           r->remeasured_gbps, r->remeasured_samples, diff);
    if (r->stored) printf("  stored in %s (bucket 2^%u)\n", r->db_path, r->bucket);
    else printf("  not stored (%s)\n", r->db_path ? "dry run, or see the warning above" : "no disk cache");
}

static void print_json(const kj_tune_result *r) {
    json_begin_object();
    json_fields("kernel=%s entry=%s", r->kernel, r->entry);
    json_macros("fixed", r->fixed);
    json_fields("n=%" PRIu64 " bucket=%u device=%s", r->n, r->bucket, r->device);
    json_arch("arch", r->cc_major, r->cc_minor);
    json_string("strategy", r->strategy);
    json_begin_array("dims");
    for (size_t d = 0; d < kj_space_dim_count(r->space); d++) {
        json_begin_object();
        json_string("name", kj_space_dim_name(r->space, d));
        json_begin_array("values");
        for (size_t v = 0; v < kj_space_dim_size(r->space, d); v++)
            json_string(NULL, kj_space_dim_value(r->space, d, v));
        json_end_array();
        json_end_object();
    }
    json_end_array();
    json_begin_array("variants");
    for (size_t i = 0; i < r->variant_count; i++) {
        const kj_tune_variant *v = kj_tune_result_variant(r, i);
        json_begin_object();
        json_macros("macros", v->label);
        json_string("status", status_word(v->status));
        if (v->status == KJ_VARIANT_MEASURED)
            json_fields("median_us=%g min_us=%g max_us=%g gbps=%g samples=%u batch=%u", v->median_us, v->min_us,
                        v->max_us, v->gbps, v->samples, v->batch);
        if (v->registers) json_int("registers", v->registers);
        if (*v->note) json_string("note", v->note);
        json_end_object();
    }
    json_end_array();
    json_object_in("winner");
    json_macros("macros", kj_tune_result_variant(r, r->best)[0].label);
    json_fields("sweep_median_us=%g sweep_gbps=%g remeasured_median_us=%g remeasured_gbps=%g remeasured_samples=%u",
                r->best_us, r->best_gbps, r->remeasured_us, r->remeasured_gbps, r->remeasured_samples);
    json_end_object();
    json_fields("compile_ms=%g measure_ms=%g total_ms=%g compiled=%zu cached=%zu threads=%u stored?=%d "
                "tuning_db_path=%s",
                r->compile_ms, r->measure_ms, r->total_ms, r->compiled, r->cached, r->threads, r->stored, r->db_path);
    json_end_object();
}

static void print_csv(const kj_tune_result *r) {
    printf("variant,status,median_us,gbps,best,note\n");
    for (size_t i = 0; i < r->variant_count; i++) {
        const kj_tune_variant *v = kj_tune_result_variant(r, i);
        printf("\"%s\",%s,", v->label, status_word(v->status));
        if (v->status == KJ_VARIANT_MEASURED) printf("%.3f,%.1f,", v->median_us, v->gbps);
        else printf(",,");
        printf("%d,\"", i == r->best);
        for (const char *c = v->note; *c && *c != '\n'; c++) fputs(*c == '"' ? "\"\"" : (char[]){*c, 0}, stdout);
        printf("\"\n");
    }
}

/* ---- the sweep as a picture ------------------------------------------------------------------ */

/* The first two varied macros as rows and columns (one row when only one varies), each cell the best
 * verified GB/s over the other macros' values, the winner outlined. */
static int plot_result(const kj_tune_result *r, const char *path) {
    size_t dims = kj_space_dim_count(r->space);
    if (dims == 0) return cli_error("tune", "--plot: %s varies no macro, so there is nothing to draw", r->kernel);
    size_t ny = dims >= 2 ? kj_space_dim_size(r->space, 0) : 1;
    size_t nx = kj_space_dim_size(r->space, dims >= 2 ? 1 : 0);
    const char **xv = calloc(nx, sizeof *xv), **yv = calloc(ny, sizeof *yv);
    double *cells = malloc(nx * ny * sizeof *cells);
    if (!xv || !yv || !cells) {
        free(xv), free(yv), free(cells);
        return cli_error("tune", "out of host memory for the plot");
    }
    for (size_t i = 0; i < nx * ny; i++) cells[i] = NAN;
    for (size_t i = 0; i < nx; i++) xv[i] = kj_space_dim_value(r->space, dims >= 2 ? 1 : 0, i);
    for (size_t i = 0; i < ny; i++) yv[i] = dims >= 2 ? kj_space_dim_value(r->space, 0, i) : "";
    size_t best = (size_t)-1;
    for (size_t i = 0; i < r->variant_count; i++) {
        kj_variant v = KJ_VARIANT_INIT;
        if (kj_space_variant(r->space, i, &v) != KJ_OK) continue;
        size_t cell = dims >= 2 ? v.coords[0] * nx + v.coords[1] : v.coords[0];
        if (i == r->best) best = cell;
        double g = kj_tune_result_variant(r, i)[0].status == KJ_VARIANT_MEASURED ? kj_tune_result_variant(r, i)[0].gbps
                                                                                 : NAN;
        if (!isnan(g) && (isnan(cells[cell]) || g > cells[cell])) cells[cell] = g;
    }
    plot_axis x = {kj_space_dim_name(r->space, dims >= 2 ? 1 : 0), nx, xv};
    plot_axis y = {dims >= 2 ? kj_space_dim_name(r->space, 0) : "", ny, yv};
    char title[512], written[4096], err[4300];
    snprintf(title, sizeof title, "kernjit tune %s %s, n = %llu, %s (sm_%d%d): GB/s", r->kernel, r->fixed,
             (unsigned long long)r->n, r->device, r->cc_major, r->cc_minor);
    int rc = plot_heatmap(path, title, "GB/s", &x, &y, cells, best, written, sizeof written, err, sizeof err);
    free(xv), free(yv), free(cells);
    if (rc != 0) return cli_error("tune", "%s", err);
    fprintf(stderr, "kernjit tune: the sweep is drawn in %s\n", written);
    return EXIT_OK;
}

/* ---- tuning ---------------------------------------------------------------------------------- */

static int do_tune(kj_runtime *rt, const args *a) {
    kj_tune_options o = KJ_TUNE_OPTIONS_INIT;
    o.kernel = a->kernel;
    o.entry = a->entry;
    o.fixed = a->defines;
    o.fixed_count = a->ndef;
    o.n = a->n;
    o.budget = (size_t)a->budget;
    o.samples = (unsigned)a->samples;
    o.threads = (unsigned)a->threads;
    o.seed = a->seed;
    o.dry_run = a->dry_run;
    o.progress = on_progress;
    kj_tune_result *r;
    kj_status s = kj_tune(rt, &o, &r);
    cli_progress_end();
    int rc = EXIT_OK;
    if (s != KJ_OK) {
        rc = cli_fail("tune", s);
        if (s == KJ_ERR_NO_DEVICE) fprintf(stderr, "(--show and --forget work without one)\n");
    } else {
        if (a->format == 'j') print_json(r);
        else if (a->format == 'c') print_csv(r);
        else print_text(r);
        if (a->plot) rc = plot_result(r, a->plot);
        kj_tune_result_free(r);
    }
    return rc;
}

/* ---- the database ---------------------------------------------------------------------------- */

typedef struct show_state {
    int format;
    size_t count;
} show_state;

static const char *filter_kernel;

static void show_one(const kj_tuned *t, void *user) {
    show_state *st = user;
    if (filter_kernel && strcmp(filter_kernel, t->kernel) != 0) return;
    char when[32];
    time_t tt = (time_t)t->time;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&tt));
    if (st->format == 'j') {
        json_begin_object();
        json_fields("kernel=%s entry=%s", t->kernel, t->entry);
        json_macros("fixed", t->fixed);
        json_fields("bucket=%u device=%s", t->bucket, t->device);
        json_arch("arch", t->cc_major, t->cc_minor);
        if (t->target && *t->target) json_string("target", t->target);
        else json_null("target");
        json_string("kernjit_version", t->version);
        json_macros("macros", t->values);
        json_fields("gbps=%g median_us=%g n=%" PRIu64 " tuned_unix_s=%lld", t->gbps, t->us, t->n, (long long)t->time);
        json_end_object();
    } else if (st->format == 'c') {
        if (!st->count) printf("kernel,entry,fixed,bucket,device,cc,version,values,gbps,us,n,time,target\n");
        printf("%s,%s,\"%s\",%u,\"%s\",%d.%d,%s,\"%s\",%.1f,%.3f,%llu,%lld,%s\n", t->kernel, t->entry, t->fixed,
               t->bucket, t->device, t->cc_major, t->cc_minor, t->version, t->values, t->gbps, t->us,
               (unsigned long long)t->n, (long long)t->time, t->target ? t->target : "");
    } else {
        if (!st->count)
            printf("%-8s %-18s %-14s %-5s %-34s %9s %10s  %s\n", "kernel", "entry", "fixed", "n", "values", "GB/s",
                   "us", "device, when");
        printf("%-8s %-18s %-14s 2^%-3u %-34s %9.1f %10.2f  %s (sm_%d%d%s%s), %s, kernjit %s\n", t->kernel, t->entry,
               *t->fixed ? t->fixed : "-", t->bucket, t->values, t->gbps, t->us, t->device, t->cc_major, t->cc_minor,
               t->target && *t->target ? ", built for " : "", t->target ? t->target : "", when, t->version);
    }
    st->count++;
}

static int do_show(kj_runtime *rt, const args *a) {
    show_state st = {a->format, 0};
    filter_kernel = a->kernel;
    if (a->format == 'j') {
        json_begin_object();
        json_string("tuning_db_path", kj_tune_db_path(rt));
        json_begin_array("tuned");
    }
    kj_status s = kj_tune_db_list(rt, show_one, &st);
    if (a->format == 'j') {
        json_end_array();
        json_end_object();
    } else if (s == KJ_OK && a->format == 't') {
        printf("%zu entr%s in %s\n", st.count, st.count == 1 ? "y" : "ies", kj_tune_db_path(rt));
    }
    return s == KJ_OK ? EXIT_OK : cli_fail("tune", s);
}

static int do_forget(kj_runtime *rt, const args *a) {
    kj_tune_filter f = KJ_TUNE_FILTER_INIT;
    f.kernel = a->kernel;
    f.entry = a->entry;
    f.device = a->device;
    f.cc = a->cc;
    if (a->n_given) {
        unsigned b = 0;
        for (uint64_t n = a->n; n > 1; n >>= 1) b++;
        f.bucket = (int)b;
    }
    char fixed[2048] = "";
    for (size_t i = 0; i < a->ndef; i++) {
        size_t len = strlen(fixed);
        snprintf(fixed + len, sizeof fixed - len, "%s%s=%s", i ? " " : "", a->defines[i].name, a->defines[i].value);
    }
    if (a->ndef) f.fixed = fixed;
    size_t removed = 0;
    kj_status s = kj_tune_db_forget(rt, &f, &removed);
    if (s != KJ_OK) return cli_fail("tune", s);
    if (a->format == 'j') {
        json_begin_object();
        json_fields("removed_entries=%zu tuning_db_path=%s", removed, kj_tune_db_path(rt));
        json_end_object();
    } else {
        printf("removed %zu entr%s from %s\n", removed, removed == 1 ? "y" : "ies", kj_tune_db_path(rt));
    }
    return EXIT_OK;
}

/* ---- arguments ------------------------------------------------------------------------------- */

static int add_define(args *a, const char *name, const char *value) {
    for (size_t i = 0; i < a->ndef; i++)
        if (strcmp(a->defines[i].name, name) == 0)
            return cli_usage("tune", "%s is given twice (--op sets OP; --type sets T, or ELEM_BYTES for transpose)",
                             name);
    if (a->ndef == MAX_DEFINES) return cli_usage("tune", "at most %d -D macros", MAX_DEFINES);
    a->defines[a->ndef++] = (kj_define){name, value};
    return EXIT_OK;
}

/* --plot is checked before anything compiles or runs: a picture that cannot be written would
 * otherwise be found out only after the whole sweep. */
static int check_plot_path(const char *path) {
    size_t n = strlen(path);
    if (n < 5 || (strcmp(path + n - 4, ".png") != 0 && strcmp(path + n - 4, ".ppm") != 0))
        return cli_usage("tune", "--plot '%s': give a FILE.png (or FILE.ppm)", path);
    char what[CLI_MESSAGE_MAX];
    kj_message_format(what, sizeof what, "--plot '%s'", path);
    return cli_check_output_folder("tune", what, path);
}

/* One option of the command line (cli_getopt): user is the args. */
static int option(void *user, int opt, char *arg) {
    args *a = user;
    char err[256];
    int rc;
    switch (opt) {
    case 'h': help(); return CLI_DONE;
    case 'e': a->entry = arg; break;
    case 'D': {
        kj_define d;
        if (cli_parse_define(arg, &d, err, sizeof err) != 0) return cli_usage("tune", "%s", err);
        if ((rc = add_define(a, d.name, d.value)) != EXIT_OK) return rc;
        break;
    }
    case 'o': {
        kj_op op;
        if ((rc = cli_parsed("tune", kj_op_parse(arg, &op))) != EXIT_OK || (rc = add_define(a, "OP", arg)) != EXIT_OK)
            return rc;
        break;
    }
    case 't': {
        kj_type type;
        if ((rc = cli_parsed("tune", kj_type_parse(arg, &type))) != EXIT_OK) return rc;
        if (a->type) return cli_usage("tune", "--type is given twice");
        a->type = arg; /* its macro depends on the kernel, named after the options */
        snprintf(a->elem_bytes, sizeof a->elem_bytes, "%zu", kj_type_size(type));
        break;
    }
    case 'n':
        if ((rc = cli_count_arg("tune", "--n", arg, 1, 1ull << 40, &a->n)) != EXIT_OK) return rc;
        a->n_given = 1;
        break;
    case 'b':
        if ((rc = cli_count_arg("tune", "--budget", arg, 1, 1u << 20, &a->budget)) != EXIT_OK) return rc;
        break;
    case 's':
        if ((rc = cli_count_arg("tune", "--samples", arg, 10, 100000, &a->samples)) != EXIT_OK) return rc;
        break;
    case 'J':
        if ((rc = cli_count_arg("tune", "--threads", arg, 1, 64, &a->threads)) != EXIT_OK) return rc;
        break;
    case 'S':
        if (cli_parse_uint(arg, UINT64_MAX, &a->seed) != 0)
            return cli_usage("tune", "--seed '%s' is not a non-negative integer", arg);
        break;
    case 'd': a->dry_run = 1; break;
    case 'P':
        if ((rc = check_plot_path(arg)) != EXIT_OK) return rc;
        a->plot = arg;
        break;
    case 'j': a->format = 'j'; break;
    case 'c': a->format = 'c'; break;
    case 'w': a->show = 1; break;
    case 'f': a->forget = 1; break;
    case 'v': a->device = arg; break;
    case 'C': {
        unsigned major, minor;
        char extra;
        if (sscanf(arg, "%u.%u%c", &major, &minor, &extra) != 2 || major < 1 || major > 99 || minor > 9)
            return cli_usage("tune", "--cc '%s' is not a compute capability MAJOR.MINOR (for example 9.0)", arg);
        a->cc = (int)(major * 10 + minor);
        break;
    }
    }
    return EXIT_OK;
}

/* KERNEL: one at most. */
static int kernel_name(void *user, int count, char **words) {
    args *a = user;
    if (count > 1) return cli_usage("tune", "one kernel at a time (got '%s' too)", words[1]);
    if (count) a->kernel = cli_kernel_name(words[0]);
    return EXIT_OK;
}

int cmd_tune(int argc, char **argv) {
    static const cli_option_set set = {"entry=e: define=D: --op=o: --type=t: n=n: --budget=b: --samples=s: "
                                       "--threads=J: --seed=S: --dry-run=d json=j csv=c --show=w --forget=f "
                                       "--device=v: --cc=C: --plot=P: help=h",
                                       option, 0, kernel_name};
    args a = {.cc = -1, .format = 't'};
    int rc = cli_getopt("tune", argc, argv, &set, 1, &a);
    if (rc != EXIT_OK) return rc == CLI_DONE ? EXIT_OK : rc;
    /* transpose moves bits: its element is ELEM_BYTES, not a type */
    if (a.type && (rc = a.kernel && strcmp(a.kernel, "transpose") == 0 ? add_define(&a, "ELEM_BYTES", a.elem_bytes)
                                                                       : add_define(&a, "T", a.type)) != EXIT_OK)
        return rc;
    if (a.show && a.forget) return cli_usage("tune", "--show or --forget, not both");
    if (a.show || a.forget) json_command(a.show ? "tune --show" : "tune --forget"); /* another document */
    if (a.show && (a.entry || a.ndef || a.n_given || a.device || a.cc >= 0))
        return cli_usage("tune", "--show takes only a kernel name (and --json or --csv)");
    if (a.forget && (a.budget || a.samples || a.threads || a.seed || a.dry_run))
        return cli_usage("tune", "--forget takes filters only: KERNEL, --entry, -D, --n, --device, --cc");
    if (!a.show && !a.forget && a.cc >= 0)
        return cli_usage("tune", "--cc and --device NAME are filters for --forget; tuning takes --device N, a device "
                                 "ordinal");
    if (!a.show && !a.forget && a.device) { /* the device to tune on, as every command that opens one */
        if ((rc = cli_device_arg("tune", a.device)) != EXIT_OK) return rc;
        a.device = NULL;
    }
    if (!a.show && !a.forget && !a.kernel)
        return cli_usage("tune", "which kernel? (kernels that can be tuned: reduce, transpose, vector_add)");
    /* the database is in the cache folder: --show and --forget need no device */
    kj_runtime *rt;
    /* --forget: its notes say what it removed from the remote cache */
    kj_status s = cli_runtime(&rt, a.show || a.forget, NULL, a.forget);
    if (s != KJ_OK) return cli_fail("tune", s);
    rc = a.show ? do_show(rt, &a) : a.forget ? do_forget(rt, &a) : do_tune(rt, &a);
    kj_runtime_destroy(rt);
    return rc;
}
