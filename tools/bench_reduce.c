/* kernjit bench reduce: op x type x size x entry -> median us, GB/s, % of a device-to-device copy of
 * the same bytes, and the ratio against CUB's DeviceReduce on the same buffers, interleaved in the
 * same process. Inputs that would fit in L2 rotate through a larger buffer, for kernjit and CUB alike,
 * so that neither is timed on cache-resident data. Each configuration's result is checked against
 * CUB's before its time counts. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cli.h"
#include "cub_plugin.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit bench reduce [--op LIST] [--type LIST] [--entry LIST] [--sizes LIST] [--samples S]\n"
           "                            [--block LIST] [--coarse LIST] [--json|--csv]\n\n"
           "Times kj_reduce for each operator, type, size and entry, next to a device-to-device copy of\n"
           "the same bytes and CUB's DeviceReduce, then checks the targets (2^28: >= 1.05x CUB for\n"
           "sum/max/min on i32/f32/f64; 2^20: <= 0.5x CUB's time; no size slower than CUB).\n"
           "LISTs are comma-separated. Defaults: every op and type, sizes 2^10 to 2^28 in powers of 4,\n"
           "entries reduce_fast, reduce_coarsened, reduce_segmented (plus the single-block entries at\n"
           "sizes they can take); S = 15. --block and --coarse sweep BLOCK_SIZE and COARSE_FACTOR (default:\n"
           "each entry's own configuration).\n");
}

#define MAX_LIST 32
#define ROTATE_BYTES (256ull << 20) /* inputs smaller than this rotate through it: well past L2 */

typedef struct {
    const char *items[MAX_LIST];
    int count;
} list;

static int split(char *text, list *l) {
    l->count = 0;
    for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ",")) {
        if (l->count == MAX_LIST) return -1;
        l->items[l->count++] = tok;
    }
    return l->count ? 0 : -1;
}

typedef struct {
    kj_runtime *rt;
    cub_plugin *cub;
    kj_op op;
    kj_type type;
    const char *entry;
    unsigned block, coarse; /* 0: the entry's default */
    kj_devptr base;   /* the big input buffer */
    size_t n, bytes;  /* elements and bytes of one input */
    unsigned slots;   /* rotation: inputs at base + i * bytes_aligned */
    size_t stride;
    kj_devptr out;
    kj_devptr cub_out, cub_temp;
    size_t cub_temp_bytes;
} job;

static kj_devptr input_at(const job *j, unsigned i) { return j->base + (kj_devptr)(i % j->slots) * j->stride; }

static kj_status run_kernjit(void *user, kj_stream stream, unsigned i) {
    job *j = user;
    kj_reduce_options o = {.entry = j->entry, .block_size = j->block, .coarse_factor = j->coarse, .stream = stream};
    return kj_reduce_async(j->rt, j->op, j->type, input_at(j, i), j->n, j->out, &o);
}

static kj_status run_cub(void *user, kj_stream stream, unsigned i) {
    job *j = user;
    int err = j->cub->reduce((int)j->op, (int)j->type, (const void *)(uintptr_t)input_at(j, i), j->n,
                             (void *)(uintptr_t)j->cub_out, (void *)(uintptr_t)j->cub_temp, j->cub_temp_bytes, stream);
    if (err) {
        fprintf(stderr, "kernjit bench reduce: CUB failed: %s\n", j->cub->error_name(err));
        return KJ_ERR_CUDA;
    }
    return KJ_OK;
}

static int is_single_block(const char *e) {
    return !strcmp(e, "reduce_simple") || !strcmp(e, "reduce_convergent") || !strcmp(e, "reduce_shared");
}

typedef struct {
    kj_op op;
    kj_type type;
    size_t n;
    char entry[32];
    kj_reduce_report rep;
    bench_result kj, cub, copy;
    int have_cub, agrees;
} row;

static int print_row(const row *r, int format, int first) {
    double bytes = (double)r->n * kj_type_size(r->type);
    double gbs = bytes / (r->kj.median_us * 1e3);
    double copy_gbs = 2 * bytes / (r->copy.median_us * 1e3);
    double cub_gbs = r->have_cub ? bytes / (r->cub.median_us * 1e3) : NAN;
    double ratio = r->have_cub ? r->cub.median_us / r->kj.median_us : NAN;
    char size[32];
    bench_pow2_label(r->n, size, sizeof size);
    if (format == 'j') {
        json_begin_object();
        json_string("op", kj_op_name(r->op));
        json_string("type", kj_type_name(r->type));
        json_uint("n", r->n);
        json_string("entry", r->entry);
        json_uint("block_size", r->rep.block_size);
        json_uint("coarse_factor", r->rep.coarse_factor);
        json_uint("grid", r->rep.grid);
        json_double("median_us", r->kj.median_us);
        json_double("gbps", gbs);
        json_double("copy_gbps", copy_gbs);
        json_double("pct_of_copy", 100 * gbs / copy_gbs);
        if (r->have_cub) {
            json_double("cub_median_us", r->cub.median_us);
            json_double("cub_gbps", cub_gbs);
            json_double("x_cub", ratio);
            json_bool("agrees_with_cub", r->agrees);
        }
        json_end_object();
    } else if (format == 'c') {
        if (first) printf("op,type,n,entry,block,coarse,grid,median_us,gbps,copy_gbps,pct_of_copy,cub_us,cub_gbps,x_cub,agrees\n");
        printf("%s,%s,%zu,%s,%u,%u,%u,%.3f,%.1f,%.1f,%.1f,%.3f,%.1f,%.3f,%d\n", kj_op_name(r->op), kj_type_name(r->type),
               r->n, r->entry, r->rep.block_size, r->rep.coarse_factor, r->rep.grid, r->kj.median_us, gbs, copy_gbs,
               100 * gbs / copy_gbs, r->have_cub ? r->cub.median_us : NAN, cub_gbs, ratio, r->agrees);
    } else {
        if (first)
            printf("%-4s %-4s %-6s %-18s %5s %3s %5s %10s %8s %7s %10s %8s %7s\n", "op", "type", "n", "entry", "block",
                   "cf", "grid", "us", "GB/s", "%copy", "CUB us", "CUB GB/s", "x CUB");
        printf("%-4s %-4s %-6s %-18s %5u %3u %5u %10.2f %8.1f %6.1f%% ", kj_op_name(r->op), kj_type_name(r->type), size,
               r->entry, r->rep.block_size, r->rep.coarse_factor, r->rep.grid, r->kj.median_us, gbs, 100 * gbs / copy_gbs);
        if (r->have_cub) printf("%10.2f %8.1f %6.2fx%s\n", r->cub.median_us, cub_gbs, ratio, r->agrees ? "" : "  RESULT DIFFERS");
        else printf("%10s %8s %7s\n", "-", "-", "-");
    }
    return 0;
}

/* Results of kernjit and CUB agree: exactly for integers and max/min, within the sum of both
 * configurations' error bounds for float sums and products. */
static int agree(const job *j, const kj_reduce_report *rep, unsigned char *a, unsigned char *b) {
    if (memcmp(a, b, kj_result_size(j->type)) == 0) return 1;
    double x = kj_result_as_double(j->type, a), y = kj_result_as_double(j->type, b);
    if (isnan(x) && isnan(y)) return 1;
    double mag = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    /* abs_sum is unknown here; the data are uniform in [-1, 1): sum |x| <= n */
    double tol = kj_reduce_tolerance(j->op, j->type, j->n, mag, (double)j->n, rep) + kj_reduce_tolerance(j->op, j->type, j->n, mag, (double)j->n, NULL);
    return fabs(x - y) <= tol;
}

int bench_reduce(int argc, char **argv) {
    static const struct option opts[] = {
        {"op", required_argument, 0, 'o'},      {"type", required_argument, 0, 't'},
        {"entry", required_argument, 0, 'e'},   {"sizes", required_argument, 0, 'n'},
        {"samples", required_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
        {"csv", no_argument, 0, 'c'},           {"help", no_argument, 0, 'h'},
        {"block", required_argument, 0, 'b'},   {"coarse", required_argument, 0, 'f'},
        {0, 0, 0, 0}};
    char all_ops[] = "sum,max,min,prod", all_types[] = "i32,u32,i64,f16,f32,f64";
    char default_entries[] = "reduce_fast,reduce_coarsened,reduce_segmented,reduce_shared,reduce_convergent,reduce_simple";
    char default_sizes[] = "2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28";
    char zero_b[] = "0", zero_c[] = "0";
    char *ops_text = all_ops, *types_text = all_types, *entries_text = default_entries, *sizes_text = default_sizes;
    char *blocks_text = zero_b, *coarse_text = zero_c;
    uint64_t samples = 15;
    int format = 't', c;
    while ((c = getopt_long(argc, argv, "ho:t:e:n:s:jcb:f:", opts, NULL)) != -1) {
        switch (c) {
        case 'b': blocks_text = optarg; break;
        case 'f': coarse_text = optarg; break;
        case 'o': ops_text = optarg; break;
        case 't': types_text = optarg; break;
        case 'e': entries_text = optarg; break;
        case 'n': sizes_text = optarg; break;
        case 's':
            if (cli_parse_uint(optarg, 1000, &samples) != 0 || samples == 0)
                return cli_usage("bench reduce", "--samples '%s' is not a count from 1 to 1000", optarg);
            break;
        case 'j': format = 'j'; break;
        case 'c': format = 'c'; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage("bench reduce", "unknown option");
        }
    }
    if (optind < argc) return cli_usage("bench reduce", "unexpected argument '%s'", argv[optind]);
    list ops, types, entries, sizes, blocks, coarses;
    if (split(ops_text, &ops) || split(types_text, &types) || split(entries_text, &entries) || split(sizes_text, &sizes) ||
        split(blocks_text, &blocks) || split(coarse_text, &coarses))
        return cli_usage("bench reduce", "empty or overlong list");
    uint64_t block_v[MAX_LIST], coarse_v[MAX_LIST];
    for (int i = 0; i < blocks.count; i++)
        if (cli_parse_uint(blocks.items[i], 1024, &block_v[i]) != 0)
            return cli_usage("bench reduce", "--block '%s' is not a block size (0 for the default)", blocks.items[i]);
    for (int i = 0; i < coarses.count; i++)
        if (cli_parse_uint(coarses.items[i], 64, &coarse_v[i]) != 0)
            return cli_usage("bench reduce", "--coarse '%s' is not a coarsening factor (0 for the default)", coarses.items[i]);
    kj_op op_v[MAX_LIST];
    kj_type type_v[MAX_LIST];
    uint64_t size_v[MAX_LIST], max_n = 0;
    for (int i = 0; i < ops.count; i++)
        if (kj_op_parse(ops.items[i], &op_v[i]) != KJ_OK) return cli_usage("bench reduce", "%s", kj_last_error());
    size_t max_esize = 0;
    for (int i = 0; i < types.count; i++) {
        if (kj_type_parse(types.items[i], &type_v[i]) != KJ_OK) return cli_usage("bench reduce", "%s", kj_last_error());
        if (kj_type_size(type_v[i]) > max_esize) max_esize = kj_type_size(type_v[i]);
    }
    for (int i = 0; i < sizes.count; i++) {
        if (cli_parse_count(sizes.items[i], 1ull << 34, &size_v[i]) != 0 || size_v[i] == 0)
            return cli_usage("bench reduce", "size '%s' is not a count (examples: 1000003, 64M, 2^28)", sizes.items[i]);
        if (size_v[i] > max_n) max_n = size_v[i];
    }

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail("bench reduce", s);
    if (!kj_runtime_has_device(rt)) {
        kj_runtime_destroy(rt);
        return cli_error("bench reduce", "no CUDA device: nothing can be timed here");
    }
    cub_plugin cub;
    char why[512];
    int have_cub = cub_plugin_load(&cub, why, sizeof why) == 0;
    kj_device_info dev;
    kj_runtime_device(rt, &dev);

    /* one big input buffer, filled once with random bits shaped per type at each type switch */
    size_t big = (size_t)max_n * max_esize;
    if (big < ROTATE_BYTES) big = ROTATE_BYTES;
    size_t free_b = 0;
    kj_mem_info(rt, &free_b, NULL);
    int rc = EXIT_OK;
    job j = {.rt = rt, .cub = &cub};
    void *host = NULL;
    if (big + (64u << 20) > free_b) {
        rc = cli_usage("bench reduce", "the largest size needs %zu bytes of device memory; %zu are free", big, free_b);
        goto done;
    }
    if ((s = kj_mem_alloc(rt, big, &j.base)) != KJ_OK || (s = kj_mem_alloc(rt, 64, &j.out)) != KJ_OK ||
        (s = kj_mem_alloc(rt, 64, &j.cub_out)) != KJ_OK) {
        rc = cli_fail("bench reduce", s);
        goto done;
    }
    host = malloc(big);
    if (!host) {
        rc = cli_error("bench reduce", "out of host memory (%zu bytes)", big);
        goto done;
    }
    if (format == 't') {
        printf("bench reduce: %s (%s, %d SMs), CUB: %s\n", dev.name, dev.arch, dev.sm_count,
               have_cub ? cub.path : why);
        if (have_cub) printf("CUB %d.%d.%d; medians of %llu samples, interleaved with CUB; GB/s counts bytes read\n",
                             cub.version() / 100000, cub.version() / 100 % 1000, cub.version() % 100,
                             (unsigned long long)samples);
    }
    if (format == 'j') json_begin_array(NULL);

    int first = 1, rows = 0, slower = 0, differ = 0;
    /* targets: x CUB at 2^28 for sum/max/min x i32/f32/f64, and time ratio at 2^20, default entry */
    double at28[3][3], at20[KJ_OP_COUNT_][KJ_TYPE_COUNT_];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) at28[a][b] = NAN;
    for (int a = 0; a < KJ_OP_COUNT_; a++)
        for (int b = 0; b < KJ_TYPE_COUNT_; b++) at20[a][b] = NAN;

    for (int ti = 0; ti < types.count && rc == EXIT_OK; ti++) {
        j.type = type_v[ti];
        size_t es = kj_type_size(j.type);
        cli_random_fill(j.type, host, big / es, 12345 + ti, 0);
        if ((s = kj_memcpy_htod(rt, j.base, host, big / es * es)) != KJ_OK) {
            rc = cli_fail("bench reduce", s);
            break;
        }
        for (int si = 0; si < sizes.count && rc == EXIT_OK; si++) {
            j.n = (size_t)size_v[si];
            j.bytes = j.n * es;
            j.stride = (j.bytes + 255) & ~(size_t)255;
            j.slots = j.bytes >= ROTATE_BYTES ? 1 : (unsigned)(big / j.stride);
            if (j.slots > 64) j.slots = 64;
            if (j.slots == 0) j.slots = 1;
            bench_result copy;
            if ((s = bench_copy(rt, j.bytes, (unsigned)samples, &copy)) != KJ_OK) {
                rc = cli_fail("bench reduce", s);
                break;
            }
            for (int oi = 0; oi < ops.count && rc == EXIT_OK; oi++) {
                j.op = op_v[oi];
                if (have_cub) {
                    size_t need = cub.temp_bytes((int)j.op, (int)j.type, j.n);
                    if (need > j.cub_temp_bytes) {
                        kj_mem_free(rt, j.cub_temp);
                        j.cub_temp = 0;
                        j.cub_temp_bytes = 0;
                        if ((s = kj_mem_alloc(rt, need, &j.cub_temp)) != KJ_OK) {
                            rc = cli_fail("bench reduce", s);
                            break;
                        }
                        j.cub_temp_bytes = need;
                    }
                }
                for (int ei = 0; ei < entries.count * blocks.count * coarses.count && rc == EXIT_OK; ei++) {
                    j.entry = entries.items[ei % entries.count];
                    j.block = (unsigned)block_v[ei / entries.count % blocks.count];
                    j.coarse = (unsigned)coarse_v[ei / entries.count / blocks.count];
                    if (is_single_block(j.entry) && j.n > 2048) continue;
                    int coarsens = !strcmp(j.entry, "reduce_fast") || !strcmp(j.entry, "reduce_coarsened");
                    if (!coarsens && j.coarse && ei / entries.count / blocks.count > 0) continue; /* once is enough */
                    if (!coarsens) j.coarse = 0;
                    row r = {.op = j.op, .type = j.type, .n = j.n, .copy = copy, .have_cub = have_cub};
                    snprintf(r.entry, sizeof r.entry, "%s", j.entry);
                    /* the first run compiles or loads the kernel and is checked against CUB */
                    kj_reduce_options o = {.entry = j.entry, .block_size = j.block, .coarse_factor = j.coarse, .report = &r.rep};
                    unsigned char mine[8], theirs[8];
                    s = kj_reduce_async(rt, j.op, j.type, j.base, j.n, j.out, &o);
                    if (s == KJ_OK) s = kj_memcpy_dtoh(rt, mine, j.out, 8);
                    if (s == KJ_OK && have_cub) s = run_cub(&j, NULL, 0);
                    if (s == KJ_OK && have_cub) s = kj_memcpy_dtoh(rt, theirs, j.cub_out, 8);
                    if (s == KJ_OK)
                        s = bench_time_pair(rt, NULL, run_kernjit, &j, have_cub ? run_cub : NULL, &j, 3,
                                            (unsigned)samples, &r.kj, &r.cub);
                    if (s != KJ_OK) {
                        rc = cli_fail("bench reduce", s);
                        break;
                    }
                    r.agrees = !have_cub || agree(&j, &r.rep, mine, theirs);
                    differ += !r.agrees;
                    print_row(&r, format, first);
                    first = 0;
                    rows++;
                    if (have_cub && !strcmp(j.entry, "reduce_fast")) {
                        double x = r.cub.median_us / r.kj.median_us;
                        slower += x < 1;
                        int oi3 = j.op == KJ_OP_SUM ? 0 : j.op == KJ_OP_MAX ? 1 : j.op == KJ_OP_MIN ? 2 : -1;
                        int ti3 = j.type == KJ_TYPE_I32 ? 0 : j.type == KJ_TYPE_F32 ? 1 : j.type == KJ_TYPE_F64 ? 2 : -1;
                        if (j.n == (1u << 28) && oi3 >= 0 && ti3 >= 0) at28[oi3][ti3] = x;
                        if (j.n == (1u << 20)) at20[j.op][j.type] = r.kj.median_us / r.cub.median_us;
                    }
                }
            }
        }
    }
    if (format == 'j') {
        json_end_array();
        json_done();
    }
    if (format == 't' && rc == EXIT_OK && have_cub) {
        printf("\ntargets (reduce_fast):\n  2^28, x CUB throughput (>= 1.05):");
        static const char *o3[] = {"sum", "max", "min"}, *t3[] = {"i32", "f32", "f64"};
        int miss = 0, seen = 0;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                if (!isnan(at28[a][b])) {
                    printf(" %s/%s %.2f", o3[a], t3[b], at28[a][b]);
                    miss += at28[a][b] < 1.05;
                    seen++;
                }
        printf("%s\n", seen ? (miss ? "  -> MISSED" : "  -> met") : " (not measured)");
        printf("  2^20, time / CUB time (<= 0.5):");
        double worst = 0;
        seen = 0;
        for (int a = 0; a < KJ_OP_COUNT_; a++)
            for (int b = 0; b < KJ_TYPE_COUNT_; b++)
                if (!isnan(at20[a][b])) {
                    worst = at20[a][b] > worst ? at20[a][b] : worst;
                    seen++;
                }
        if (seen) printf(" worst %.2f over %d op/type pairs%s\n", worst, seen, worst <= 0.5 ? "  -> met" : "  -> MISSED");
        else printf(" (not measured)\n");
        printf("  configurations slower than CUB: %d of the reduce_fast rows\n", slower);
        if (differ) printf("  %d configuration(s) whose result differs from CUB's: see RESULT DIFFERS\n", differ);
    }
    if (differ) rc = EXIT_FAILURE_;
done:
    free(host);
    kj_mem_free(rt, j.base);
    kj_mem_free(rt, j.out);
    kj_mem_free(rt, j.cub_out);
    kj_mem_free(rt, j.cub_temp);
    kj_runtime_destroy(rt);
    (void)rows;
    return rc;
}
