/* kernjit bench reduce: op x type x size x entry -> median us, GB/s, % of a device-to-device copy of
 * the same bytes, % of a plain streaming read of the same bytes (the ceiling a reduction can reach),
 * and the ratio against CUB's DeviceReduce on the same buffers: timed interleaved with kernjit in the
 * same process, and alone, back to back on one stream (GPU time per call, as nvbench measures it).
 * Inputs that would fit in L2 rotate through a larger buffer, for every side alike, so that none is
 * timed on cache-resident data. Each configuration's first result is checked before its time counts:
 * against CUB's, or, without CUB, against the CPU reference; its output holds a poison first, so
 * that a kernel that never writes it fails either way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_reduce_devices.h"
#include "bench_reduce_host.h"
#include "bench_util.h"
#include "cub_plugin.h"
#include "kjtest.h"
#include "run.h"

static void help(void) {
    printf("usage: kernjit bench reduce [--op LIST] [--type LIST] [--entry LIST]\n"
           "           [--sizes LIST] [--samples S] [--block LIST] [--coarse LIST]\n"
           "           [--waves LIST] [--devices all|I,J,...] [--host] [--json|--csv]\n"
           "\n"
           "Times kj_reduce for each operator, type, size and entry, next to a\n"
           "device-to-device copy of the same bytes, a plain streaming read of them (the\n"
           "ceiling: the best of several ways of reading, each timed in the run and listed\n"
           "at the end) and CUB's DeviceReduce (timed interleaved with kernjit, and alone\n"
           "back to back), then checks reduce_fast's targets: at 2^28, >= 0.99x the read\n"
           "ceiling and >= 1.00x CUB (its default; tuned, `kernjit tune`: >= 1.02x); no row\n"
           "slower than CUB from 2^24; at 2^20, <= 0.55x CUB's time for 1-4 byte types and\n"
           "<= 0.65x for 8-byte types (what the launch floor allows). Beside each CUB target\n"
           "it prints, for context, the plain read against CUB in the same rows: at 2^28\n"
           "CUB's time over the read's, at 2^20 the read's time over CUB's.\n"
           "\n"
           "LISTs are comma-separated. Defaults: every op and type, sizes 2^10 to 2^28 in\n"
           "powers of 4, entries reduce_fast, reduce_coarsened, reduce_segmented (plus the\n"
           "single-block entries at sizes they can take); S = 15. --block, --coarse and\n"
           "--waves sweep BLOCK_SIZE, COARSE_FACTOR and reduce_fast's WAVES (its grid, in\n"
           "waves of the blocks the device holds at once; default: each entry's own\n"
           "configuration).\n"
           "\n"
           "CUB is a plugin built by nvcc: beside kernjit (meson -Dcub=enabled), or on first\n"
           "use into <cache>/cub for the device (about half a minute, once);\n"
           "KERNJIT_CUB_PLUGIN names another, or =off for none.\n"
           "\n"
           "With --devices, times kj_reduce_devices over those devices, --sizes elements on\n"
           "each (default 1,2^10,2^20,2^24,2^28, --op sum, --type f32), against kj_reduce of\n"
           "the same size on the first device alone, both from the call to the result on the\n"
           "host, what each device past the first adds ((multi - local) / (devices - 1)),\n"
           "the same parts collected one device after the other (the earlier design), and,\n"
           "where kernjit finds NCCL (kj_nccl_library), an NCCL all-reduce of the whole data\n"
           "over the same devices; first, the first launch on every device from an empty\n"
           "cache (one compile, the others loading it) against a compile on each. Targets:\n"
           "within 10 us of the local call at every size, >= 10x faster than the NCCL\n"
           "all-reduce at 1 GiB a device. --entry, --block, --coarse and --waves do not go\n"
           "with it.\n"
           "\n"
           "With --host, times what kj_reduce costs the host, call after call: the host's\n"
           "us per kj_reduce_async (batches the launch queue takes without waiting) and per\n"
           "kj_reduce (to the result; on a GPU the kernel's time too), for the first of\n"
           "--entry, --block, --coarse and --waves (default sizes 2^10 to 2^20, --op sum,\n"
           "--type f32).\n" CLI_DEVICES_HELP);
}

#define MAX_LIST 32
#define ROTATE_BYTES (256ull << 20) /* inputs smaller than this rotate through it: well past L2 */
#define READERS 8

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
    unsigned block, coarse, waves; /* 0: the entry's default */
    kj_devptr base;                /* the big input buffer */
    const void *host;              /* its first elements on the host */
    size_t n, bytes;               /* elements and bytes of one input */
    unsigned slots;                /* rotation: inputs at base + i * bytes_aligned */
    size_t stride;
    kj_devptr out;
    kj_devptr cub_out, cub_temp;
    size_t cub_temp_bytes;
    kj_kernel *readers[READERS]; /* the streaming reads whose best is the ceiling */
    unsigned reader;             /* the one timed now */
    unsigned sms;
} job;

/* The ceiling: every 16 bytes of the input read once and nothing written (the check can never be true
 * for the data, and the compiler cannot know that), the best of several ways of reading, each timed
 * in the same run: which is fastest differs between cards (on the H200 the L2::256B prefetch hint
 * that was best on the H100 lost 6%, and a grid of one wave lost up to 1% to one block per tile). */
static const char *READER =
    "__device__ __forceinline__ uint4 load(const uint4 *p) {\n"
    "    uint4 v;\n"
    "#if LOAD == 1\n"
    "    asm volatile(\"ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\"\n"
    "#elif LOAD == 2\n"
    "    asm volatile(\"ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\"\n"
    "#else\n"
    "    asm volatile(\"ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\"\n"
    "#endif\n"
    "                 : \"=r\"(v.x), \"=r\"(v.y), \"=r\"(v.z), \"=r\"(v.w) : \"l\"(p));\n"
    "    return v;\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(BLOCK) read_all(const uint4 *in, unsigned long long nvec, unsigned "
    "*out) {\n"
    "    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;\n"
    "    unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;\n"
    "    unsigned acc = 0;\n"
    "    for (; i + (LOADS - 1) * stride < nvec; i += LOADS * stride) {\n"
    "        uint4 v[LOADS];\n"
    "#pragma unroll\n"
    "        for (int u = 0; u < LOADS; u++) v[u] = load(in + i + u * stride);\n"
    "#pragma unroll\n"
    "        for (int u = 0; u < LOADS; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;\n"
    "    }\n"
    "    for (; i < nvec; i += stride) {\n"
    "        const uint4 a = load(in + i);\n"
    "        acc ^= a.x ^ a.y ^ a.z ^ a.w;\n"
    "    }\n"
    "    if (acc == 0x9e3779b9u && nvec == 1) *out = acc;\n"
    "}\n";

/* The ways of reading: the load (0: ld.global.nc, 1: with the L2::256B prefetch hint, 2: ld.global.cs),
 * threads a block, loads in flight a thread, and the grid in waves of the blocks the device holds at
 * once (0: one block per BLOCK x LOADS vectors, every block one pass). */
static const struct reader_way {
    const char *load;
    unsigned load_kind, block, loads, waves;
} ways[READERS] = {
    {"nc", 0, 1024, 4, 1}, {"nc", 0, 1024, 4, 8},       {"nc", 0, 1024, 4, 0}, {"nc", 0, 512, 2, 0},
    {"nc", 0, 256, 8, 0},  {"L2::256B", 1, 1024, 4, 1}, {"cs", 2, 1024, 4, 0}, {"cs", 2, 512, 4, 16},
};

static const char *way_label(unsigned w, char *out, size_t size) {
    if (ways[w].waves)
        snprintf(out, size, "%s %ux%u, %u wave%s", ways[w].load, ways[w].block, ways[w].loads, ways[w].waves,
                 ways[w].waves == 1 ? "" : "s");
    else snprintf(out, size, "%s %ux%u, a block per tile", ways[w].load, ways[w].block, ways[w].loads);
    return out;
}

static kj_devptr input_at(const job *j, unsigned i) { return j->base + (kj_devptr)(i % j->slots) * j->stride; }

static kj_status run_reader(void *user, kj_stream stream, unsigned i) {
    job *j = user;
    const struct reader_way *w = &ways[j->reader];
    kj_devptr in = input_at(j, i);
    unsigned long long nvec = j->bytes / 16;
    int per_sm = 0;
    kj_status s = kj_kernel_occupancy(j->readers[j->reader], w->block, 0, &per_sm);
    if (s != KJ_OK) return s;
    uint64_t grid = w->waves ? (uint64_t)(per_sm > 0 ? per_sm : 1) * j->sms * w->waves
                             : (nvec + (uint64_t)w->block * w->loads - 1) / ((uint64_t)w->block * w->loads);
    if (grid > 0x7fffffffu) grid = 0x7fffffffu;
    void *args[] = {&in, &nvec, &j->out};
    kj_launch_config c = {
        sizeof(kj_launch_config), {(unsigned)(grid ? grid : 1), 1, 1}, {w->block, 1, 1}, 0, stream, 0};
    return kj_kernel_launch(j->readers[j->reader], &c, args);
}

/* The reading kernels, compiled once each. */
static kj_status load_readers(job *j, const kj_device_info *dev) {
    j->sms = (unsigned)dev->sm_count;
    for (unsigned w = 0; w < READERS; w++) {
        char load[8], block[8], loads[8];
        snprintf(load, sizeof load, "%u", ways[w].load_kind);
        snprintf(block, sizeof block, "%u", ways[w].block);
        snprintf(loads, sizeof loads, "%u", ways[w].loads);
        kj_define d[] = {{"LOAD", load}, {"BLOCK", block}, {"LOADS", loads}};
        kj_request req = {.size = sizeof(kj_request),
                          .kernel = "bench_read_ceiling.cu",
                          .source_text = READER,
                          .entry = "read_all",
                          .defines = d,
                          .define_count = 3};
        kj_status s = kj_kernel_get(j->rt, &req, &j->readers[w], NULL);
        if (s != KJ_OK) return s;
    }
    return KJ_OK;
}

/* Every way of reading the job's input, each one's time into per_way; the fastest's into *best and
 * its index into *best_way. */
static kj_status time_readers(job *j, unsigned samples, bench_result *per_way, bench_result *best, unsigned *best_way) {
    for (j->reader = 0; j->reader < READERS; j->reader++) {
        kj_status s = bench_time(j->rt, NULL, run_reader, j, 3, samples, 0, &per_way[j->reader]);
        if (s != KJ_OK) return s;
        if (j->reader == 0 || per_way[j->reader].median_us < best->median_us) {
            *best = per_way[j->reader];
            *best_way = j->reader;
        }
    }
    return KJ_OK;
}

static kj_status run_kernjit(void *user, kj_stream stream, unsigned i) {
    job *j = user;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options),
                           .entry = j->entry,
                           .block_size = j->block,
                           .coarse_factor = j->coarse,
                           .stream = stream,
                           .waves = j->waves};
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
    bench_result kj, cub, copy, read, cub_alone; /* cub: interleaved with kj; cub_alone: back to back */
    int have_cub, agrees, unwritten;             /* agrees: with CUB's result, or the CPU's without CUB */
} row;

static void print_row(const row *r, int format, int first) {
    double bytes = (double)r->n * kj_type_size(r->type);
    double gbs = bytes / (r->kj.median_us * 1e3);
    double copy_gbs = 2 * bytes / (r->copy.median_us * 1e3);
    double cub_gbs = r->have_cub ? bytes / (r->cub.median_us * 1e3) : NAN;
    double ratio = r->have_cub ? r->cub.median_us / r->kj.median_us : NAN;
    double alone = r->have_cub ? r->cub_alone.median_us / r->kj.median_us : NAN;
    double of_read = r->read.median_us / r->kj.median_us; /* kernjit's speed as a fraction of the read's */
    char size[32];
    bench_pow2_label(r->n, size, sizeof size);
    if (format == 'j') {
        json_begin_object();
        json_fields("op=%s type=%s n=%zu entry=%s block_size=%u coarse_factor=%u waves=%u grid=%u", kj_op_name(r->op),
                    kj_type_name(r->type), r->n, r->entry, r->rep.block_size, r->rep.coarse_factor, r->rep.waves,
                    r->rep.grid);
        bench_json_speed(r->kj.median_us, gbs, copy_gbs);
        json_fields("read_median_us=%g x_read=%g", r->read.median_us, of_read);
        if (r->have_cub)
            json_fields("cub_median_us=%g cub_gbps=%g x_cub=%g cub_alone_median_us=%g x_cub_alone=%g "
                        "agrees_with_cub?=%d",
                        r->cub.median_us, cub_gbs, ratio, r->cub_alone.median_us, alone, r->agrees);
        json_end_object();
    } else if (format == 'c') {
        if (first)
            printf(
                "op,type,n,entry,block,coarse,grid,median_us,gbps,copy_gbps,pct_of_copy,read_us,x_read,cub_us,cub_gbps,"
                "x_cub,cub_alone_us,x_cub_alone,agrees\n");
        printf("%s,%s,%zu,%s,%u,%u,%u", kj_op_name(r->op), kj_type_name(r->type), r->n, r->entry, r->rep.block_size,
               r->rep.coarse_factor, r->rep.grid);
        bench_csv_speed(r->kj.median_us, gbs, copy_gbs);
        printf(",%.3f,%.4f,%.3f,%.1f,%.3f,%.3f,%.3f,%d\n", r->read.median_us, of_read,
               r->have_cub ? r->cub.median_us : NAN, cub_gbs, ratio, r->have_cub ? r->cub_alone.median_us : NAN, alone,
               r->agrees);
    } else {
        if (first)
            printf("%-4s %-4s %-6s %-18s %5s %3s %5s %10s %8s %7s %6s %10s %8s %7s %10s %7s\n", "op", "type", "n",
                   "entry", "block", "cf", "grid", "us", "GB/s", "%copy", "x read", "CUB us", "CUB GB/s", "x CUB",
                   "CUB b2b us", "x b2b");
        printf("%-4s %-4s %-6s %-18s %5u %3u %5u %10.2f %8.1f %6.1f%% %6.3f ", kj_op_name(r->op), kj_type_name(r->type),
               size, r->entry, r->rep.block_size, r->rep.coarse_factor, r->rep.grid, r->kj.median_us, gbs,
               100 * gbs / copy_gbs, of_read);
        const char *wrong = r->unwritten  ? "  NEVER WRITTEN"
                            : r->agrees   ? ""
                            : r->have_cub ? "  RESULT DIFFERS"
                                          : "  WRONG";
        if (r->have_cub)
            printf("%10.2f %8.1f %6.2fx %10.2f %6.2fx%s\n", r->cub.median_us, cub_gbs, ratio, r->cub_alone.median_us,
                   alone, wrong);
        else printf("%10s %8s %7s %10s %7s%s\n", "-", "-", "-", "-", "-", wrong);
    }
}

/* Results of kernjit and CUB agree: exactly for integers and max/min, within the sum of both
 * configurations' error bounds for float sums and products. */
static int agree(const job *j, const kj_reduce_report *rep, unsigned char *a, unsigned char *b) {
    if (memcmp(a, b, kj_result_size(j->type)) == 0) return 1;
    double x = kjtest_result_as_double(j->type, a), y = kjtest_result_as_double(j->type, b);
    if (isnan(x) && isnan(y)) return 1;
    double mag = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    /* abs_sum is unknown here; the data (kjtest_reduce_input's for a sum) lie in [-1, 1): sum |x| <= n */
    double tol = kjtest_reduce_tolerance(j->op, j->type, j->n, mag, (double)j->n, rep) +
                 kjtest_reduce_tolerance(j->op, j->type, j->n, mag, (double)j->n, NULL);
    return fabs(x - y) <= tol;
}

typedef struct reduce_bench {
    bench_ctx bench;
    char *ops_text, *types_text, *entries_text, *sizes_text, *blocks_text, *coarse_text, *waves_text; /* lists */
    list ops, types, entries, sizes, blocks, coarses, waves;
    kj_op op_v[MAX_LIST];
    kj_type type_v[MAX_LIST];
    uint64_t size_v[MAX_LIST], block_v[MAX_LIST], coarse_v[MAX_LIST], waves_v[MAX_LIST];
    size_t max_n, max_esize;
    cub_plugin cub;
    int have_cub;
    char why[512]; /* why there is no CUB */
    job j;
    unsigned char want[8]; /* without CUB: the CPU reference of the job's op, type and size */
    double want_abs;
    cli_devices devices;           /* --devices */
    int host;                      /* --host */
    int given_config, given_lists; /* --entry/--block/--coarse given; --op/--type/--sizes given (bits o t n) */
    size_t big;                    /* bytes of the input buffer (j.base), >= ROTATE_BYTES */
    int first, slower, differ;     /* rows printed so far; reduce_fast rows slower than CUB; rows that disagree */
    int unwritten;                 /* rows whose result was never written */
    bench_result ways[READERS];    /* each way of reading at the largest size measured */
    size_t ways_n;
    kj_type ways_type;
    /* reduce_fast at the targets' sizes, per op and type (NAN: not measured): at 2^28 its speed as a
     * multiple of the read's and of CUB's (interleaved, alone); at 2^20 its time over CUB's */
    double read28[KJ_OP_COUNT_][KJ_TYPE_COUNT_], cub28[2][KJ_OP_COUNT_][KJ_TYPE_COUNT_];
    double time20[2][KJ_OP_COUNT_][KJ_TYPE_COUNT_];
    /* the plain read against CUB in the same rows, as context for the CUB targets: at 2^28 CUB's time
     * over the read's (what a reduction exactly as fast as the read would get), at 2^20 the read's
     * time over CUB's */
    double read_cub28[2][KJ_OP_COUNT_][KJ_TYPE_COUNT_], read_cub20[2][KJ_OP_COUNT_][KJ_TYPE_COUNT_];
} reduce_bench;

static int option(bench_ctx *c, int opt, char *arg) {
    reduce_bench *b = (reduce_bench *)c;
    switch (opt) {
    case 'b': b->blocks_text = arg, b->given_config = 1; break;
    case 'f': b->coarse_text = arg, b->given_config = 1; break;
    case 'w': b->waves_text = arg, b->given_config = 1; break;
    case 'o': b->ops_text = arg, b->given_lists |= 1; break;
    case 't': b->types_text = arg, b->given_lists |= 2; break;
    case 'e': b->entries_text = arg, b->given_config = 1; break;
    case 'n': b->sizes_text = arg, b->given_lists |= 4; break;
    case 's': return bench_parse_samples(c, "--samples", arg);
    case 'd': return cli_devices_arg(c->cmd, arg, &b->devices);
    case 'H': b->host = 1; break;
    }
    return EXIT_OK;
}

/* The lists, parsed before any device is needed. */
static int prepare(bench_ctx *c) {
    reduce_bench *b = (reduce_bench *)c;
    int devices_rc = cli_devices_check(c->cmd, &b->devices);
    if (devices_rc != EXIT_OK) return devices_rc;
    if (b->devices.count && b->given_config)
        return cli_usage(c->cmd,
                         "--entry, --block, --coarse and --waves do not go with --devices: each device runs the "
                         "default entry with its tuned or default configuration");
    if (b->devices.count && b->host) return cli_usage(c->cmd, "--host does not go with --devices: it times one device");
    static char host_ops[] = BENCH_HOST_OPS, host_types[] = BENCH_HOST_TYPES, host_sizes[] = BENCH_HOST_SIZES;
    if (b->host && !(b->given_lists & 1)) b->ops_text = host_ops;
    if (b->host && !(b->given_lists & 2)) b->types_text = host_types;
    if (b->host && !(b->given_lists & 4)) b->sizes_text = host_sizes;
    static char ops[] = BENCH_DEVICES_OPS, types[] = BENCH_DEVICES_TYPES, sizes[] = BENCH_DEVICES_SIZES;
    if (b->devices.count && !(b->given_lists & 1)) b->ops_text = ops;
    if (b->devices.count && !(b->given_lists & 2)) b->types_text = types;
    if (b->devices.count && !(b->given_lists & 4)) b->sizes_text = sizes;
    if (split(b->ops_text, &b->ops) || split(b->types_text, &b->types) || split(b->entries_text, &b->entries) ||
        split(b->sizes_text, &b->sizes) || split(b->blocks_text, &b->blocks) || split(b->coarse_text, &b->coarses) ||
        split(b->waves_text, &b->waves))
        return cli_usage(c->cmd, "empty or overlong list");
    for (int i = 0; i < b->blocks.count; i++)
        if (cli_parse_uint(b->blocks.items[i], 1024, &b->block_v[i]) != 0)
            return cli_usage(c->cmd, "--block '%s' is not a block size (0 for the default)", b->blocks.items[i]);
    for (int i = 0; i < b->coarses.count; i++)
        if (cli_parse_uint(b->coarses.items[i], 64, &b->coarse_v[i]) != 0)
            return cli_usage(c->cmd, "--coarse '%s' is not a coarsening factor (0 for the default)",
                             b->coarses.items[i]);
    for (int i = 0; i < b->waves.count; i++)
        if (cli_parse_uint(b->waves.items[i], 64, &b->waves_v[i]) != 0)
            return cli_usage(c->cmd, "--waves '%s' is not a number of waves (0 for the default)", b->waves.items[i]);
    for (int i = 0; i < b->ops.count; i++)
        if (kj_op_parse(b->ops.items[i], &b->op_v[i]) != KJ_OK) return cli_usage(c->cmd, "%s", kj_last_error());
    for (int i = 0; i < b->types.count; i++) {
        if (kj_type_parse(b->types.items[i], &b->type_v[i]) != KJ_OK) return cli_usage(c->cmd, "%s", kj_last_error());
        if (kj_type_size(b->type_v[i]) > b->max_esize) b->max_esize = kj_type_size(b->type_v[i]);
    }
    for (int i = 0; i < b->sizes.count; i++) {
        int rc = cli_count_arg(c->cmd, "--sizes", b->sizes.items[i], 1, 1ull << 34, &b->size_v[i]);
        if (rc != EXIT_OK) return rc;
        if (b->size_v[i] > b->max_n) b->max_n = b->size_v[i];
    }
    return EXIT_OK;
}

/* One entry and configuration at the job's op, type and size: its first run (compiling or loading
 * the kernel) checked against CUB's, then timed interleaved with CUB; a row printed. */
static int measure_entry(reduce_bench *b, const char *entry, unsigned block, unsigned coarse, unsigned waves,
                         const bench_result *copy, const bench_result *read) {
    bench_ctx *c = &b->bench;
    job *j = &b->j;
    j->entry = entry;
    j->block = block;
    j->coarse = coarse;
    j->waves = waves;
    row r = {.op = j->op,
             .type = j->type,
             .n = j->n,
             .rep = KJ_REDUCE_REPORT_INIT,
             .copy = *copy,
             .read = *read,
             .have_cub = b->have_cub};
    snprintf(r.entry, sizeof r.entry, "%s", entry);
    kj_reduce_options o = {.size = sizeof(kj_reduce_options),
                           .entry = entry,
                           .block_size = block,
                           .coarse_factor = coarse,
                           .report = &r.rep,
                           .waves = waves};
    unsigned char mine[8], theirs[8], poison[8];
    size_t rs = kj_result_size(j->type);
    kj_status s = KJ_OK;
    if (b->have_cub) s = run_cub(j, NULL, 0);
    if (s == KJ_OK && b->have_cub) s = kj_memcpy_dtoh(c->rt, theirs, j->cub_out, rs);
    /* the output poisoned by the reference's result: what the run leaves there is never the poison */
    kjtest_reduce_poison(j->type, b->have_cub ? theirs : b->want, poison);
    if (s == KJ_OK) s = kj_memcpy_htod(c->rt, j->out, poison, rs);
    if (s == KJ_OK) s = kj_reduce_async(c->rt, j->op, j->type, j->base, j->n, j->out, &o);
    if (s == KJ_OK) s = kj_memcpy_dtoh(c->rt, mine, j->out, rs);
    if (s == KJ_OK)
        s = bench_time_pair(c->rt, NULL, run_kernjit, j, b->have_cub ? run_cub : NULL, j, 3, (unsigned)c->samples,
                            &r.kj, &r.cub);
    if (s == KJ_OK && b->have_cub) s = bench_time(c->rt, NULL, run_cub, j, 3, (unsigned)c->samples, 0, &r.cub_alone);
    if (s != KJ_OK) return cli_fail(c->cmd, s);
    r.unwritten = kjtest_reduce_unwritten(j->type, mine, poison);
    r.agrees = !r.unwritten &&
               (b->have_cub ? agree(j, &r.rep, mine, theirs)
                            : kjtest_reduce_right(j->op, j->type, j->n, mine, b->want, b->want_abs, &r.rep));
    b->differ += !r.agrees;
    b->unwritten += r.unwritten;
    cli_progress_pause();
    print_row(&r, c->format, b->first);
    b->first = 0;
    if (!strcmp(entry, "reduce_fast")) {
        if (j->n == (1u << 28)) b->read28[j->op][j->type] = r.read.median_us / r.kj.median_us;
        if (b->have_cub) {
            b->slower += j->n >= (1u << 24) && r.cub.median_us < r.kj.median_us;
            const bench_result *cub[2] = {&r.cub, &r.cub_alone};
            for (int k = 0; k < 2; k++) {
                if (j->n == (1u << 28)) {
                    b->cub28[k][j->op][j->type] = cub[k]->median_us / r.kj.median_us;
                    b->read_cub28[k][j->op][j->type] = cub[k]->median_us / r.read.median_us;
                }
                if (j->n == (1u << 20)) {
                    b->time20[k][j->op][j->type] = r.kj.median_us / cub[k]->median_us;
                    b->read_cub20[k][j->op][j->type] = r.read.median_us / cub[k]->median_us;
                }
            }
        }
    }
    return EXIT_OK;
}

/* Every entry x block x coarse x waves at the job's op, type and size. */
static int measure_entries(reduce_bench *b, const bench_result *copy, const bench_result *read) {
    int rc = EXIT_OK;
    int ne = b->entries.count, nb = b->blocks.count, nc = b->coarses.count;
    int configs = ne * nb * nc * b->waves.count;
    for (int ei = 0; ei < configs && rc == EXIT_OK; ei++) {
        const char *entry = b->entries.items[ei % ne];
        unsigned block = (unsigned)b->block_v[ei / ne % nb];
        int ci = ei / ne / nb % nc, wi = ei / ne / nb / nc;
        unsigned coarse = (unsigned)b->coarse_v[ci], waves = (unsigned)b->waves_v[wi];
        if (is_single_block(entry) && b->j.n > 2048) continue;
        int fast = !strcmp(entry, "reduce_fast"), coarsens = fast || !strcmp(entry, "reduce_coarsened");
        if ((!coarsens && ci > 0) || (!fast && wi > 0)) continue; /* once is enough */
        rc = measure_entry(b, entry, block, coarsens ? coarse : 0, fast ? waves : 0, copy, read);
    }
    return rc;
}

/* CUB's temporary storage for the job's op, type and size. */
static kj_status cub_temp(reduce_bench *b) {
    job *j = &b->j;
    size_t need = b->cub.temp_bytes((int)j->op, (int)j->type, j->n);
    if (need <= j->cub_temp_bytes) return KJ_OK;
    kj_mem_free(j->rt, j->cub_temp);
    j->cub_temp = 0;
    j->cub_temp_bytes = 0;
    kj_status s = kj_mem_alloc(j->rt, need, &j->cub_temp);
    if (s == KJ_OK) j->cub_temp_bytes = need;
    return s;
}

/* Every size, op and entry of one type: the input buffer filled with random values of the type. */
static int measure_type(reduce_bench *b, kj_type type, void *host, uint64_t seed) {
    bench_ctx *c = &b->bench;
    job *j = &b->j;
    j->type = type;
    size_t es = kj_type_size(type);
    /* same-signed for floats, so that a sum's error bound stays a small part of it */
    kjtest_reduce_input(KJ_OP_SUM, type, host, b->big / es, seed);
    j->host = host;
    kj_status s = kj_memcpy_htod(c->rt, j->base, host, b->big / es * es);
    if (s != KJ_OK) return cli_fail(c->cmd, s);
    int rc = EXIT_OK;
    for (int si = 0; si < b->sizes.count && rc == EXIT_OK; si++) {
        j->n = (size_t)b->size_v[si];
        j->bytes = j->n * es;
        j->stride = (j->bytes + 255) & ~(size_t)255;
        j->slots = j->bytes >= ROTATE_BYTES ? 1 : (unsigned)(b->big / j->stride);
        if (j->slots > 64) j->slots = 64;
        if (j->slots == 0) j->slots = 1;
        bench_result copy, read, per_way[READERS];
        unsigned best_way = 0;
        if ((s = bench_copy(c->rt, j->bytes, (unsigned)c->samples, &copy)) != KJ_OK ||
            (s = time_readers(j, (unsigned)c->samples, per_way, &read, &best_way)) != KJ_OK)
            return cli_fail(c->cmd, s);
        if (j->n >= b->ways_n) { /* the ceiling's ways at the largest size, for the summary */
            b->ways_n = j->n;
            b->ways_type = type;
            memcpy(b->ways, per_way, sizeof per_way);
        }
        for (int oi = 0; oi < b->ops.count && rc == EXIT_OK; oi++) {
            j->op = b->op_v[oi];
            char size[32];
            bench_step(c, "%s %s %s", kj_op_name(j->op), kj_type_name(type), bench_pow2_label(j->n, size, sizeof size));
            if (b->have_cub && (s = cub_temp(b)) != KJ_OK) return cli_fail(c->cmd, s);
            if (!b->have_cub) kjtest_reduce_reference(j->op, type, j->host, j->n, b->want, &b->want_abs);
            rc = measure_entries(b, &copy, &read);
        }
    }
    return rc;
}

/* The worst of a target's numbers over the op/type pairs measured (the least when higher is better),
 * with the pair, on one line; whether it meets the goal into *met, and whether any was measured into
 * *seen (both unchanged when none was). */
static void worst(const char *label, const double (*v)[KJ_TYPE_COUNT_], int higher_is_better, double goal,
                  int (*counts)(kj_type), int *met, int *seen) {
    double w = NAN;
    int wo = 0, wt = 0;
    for (int o = 0; o < KJ_OP_COUNT_; o++)
        for (int t = 0; t < KJ_TYPE_COUNT_; t++) {
            if (isnan(v[o][t]) || (counts && !counts((kj_type)t))) continue;
            if (isnan(w) || (higher_is_better ? v[o][t] < w : v[o][t] > w)) w = v[o][t], wo = o, wt = t;
        }
    if (isnan(w)) {
        printf(" %s (not measured)", label);
        return;
    }
    printf(" %s %.3f (%s/%s)", label, w, kj_op_name((kj_op)wo), kj_type_name((kj_type)wt));
    if (higher_is_better ? w < goal : w > goal) *met = 0;
    *seen = 1;
}

static const char *verdict(int met, int seen) { return !seen ? "" : met ? "  -> met" : "  -> MISSED"; }

static int small_type(kj_type t) { return kj_type_size(t) <= 4; }
static int wide_type(kj_type t) { return kj_type_size(t) == 8; }

static void print_ceiling(const reduce_bench *b) {
    if (!b->ways_n) return;
    char size[32], label[64];
    double bytes = (double)b->ways_n * kj_type_size(b->ways_type);
    printf("\nthe read ceiling: each way of reading %s %s elements (the fastest is the ceiling of its size):\n",
           bench_pow2_label(b->ways_n, size, sizeof size), kj_type_name(b->ways_type));
    for (unsigned w = 0; w < READERS; w++)
        printf("  %-32s %10.2f us %8.1f GB/s\n", way_label(w, label, sizeof label), b->ways[w].median_us,
               bytes / (b->ways[w].median_us * 1e3));
}

static void print_targets(const reduce_bench *b) {
    print_ceiling(b);
    printf("\ntargets (reduce_fast; the worst over the op/type pairs measured; CUB interleaved and back to back):\n");
    int met = 1, seen = 0;
    printf("  2^28, x the read ceiling (>= 0.99):");
    worst("", b->read28, 1, 0.99, NULL, &met, &seen);
    printf("%s\n", verdict(met, seen));
    static const struct {
        const char *label;
        int (*counts)(kj_type);
        double goal;
    } at20[] = {{"2^20, time / CUB's time, 1-4 byte types (<= 0.55):", small_type, 0.55},
                {"2^20, time / CUB's time, 8-byte types (<= 0.65):", wide_type, 0.65}};
    if (b->have_cub) {
        met = 1, seen = 0;
        printf("  2^28, x CUB, the default configuration (>= 1.00):");
        worst("interleaved", b->cub28[0], 1, 1.00, NULL, &met, &seen);
        worst(", back to back", b->cub28[1], 1, 1.00, NULL, &met, &seen);
        printf("%s\n", verdict(met, seen));
        int context_met, context_seen; /* context, not targets */
        printf("    context, CUB's time over the plain read's (what a reduction as fast as the read gets):");
        worst("interleaved", b->read_cub28[0], 1, 1.02, NULL, &context_met, &context_seen);
        worst(", back to back", b->read_cub28[1], 1, 1.02, NULL, &context_met, &context_seen);
        printf("\n");
        for (int k = 0; k < 2; k++) {
            met = 1, seen = 0;
            printf("  %s", at20[k].label);
            worst("interleaved", b->time20[0], 0, at20[k].goal, at20[k].counts, &met, &seen);
            worst(", back to back", b->time20[1], 0, at20[k].goal, at20[k].counts, &met, &seen);
            printf("%s\n", verdict(met, seen));
            printf("    context, the plain read's time over CUB's (one kernel that combines nothing):");
            worst("interleaved", b->read_cub20[0], 0, at20[k].goal, at20[k].counts, &context_met, &context_seen);
            worst(", back to back", b->read_cub20[1], 0, at20[k].goal, at20[k].counts, &context_met, &context_seen);
            printf("\n");
        }
        printf("  reduce_fast rows slower than CUB (interleaved) from 2^24 (0): %d%s\n", b->slower,
               b->slower ? "  -> MISSED" : "  -> met");
    }
    printf("  CUB's single-pass non-deterministic reduce: not measured (this toolkit's CCCL has no "
           "cuda::execution::determinism::not_guaranteed)\n");
    if (b->differ)
        printf("  %d configuration(s) whose result is wrong: see %s\n", b->differ,
               b->have_cub ? "RESULT DIFFERS and NEVER WRITTEN" : "WRONG and NEVER WRITTEN");
}

static int measure(reduce_bench *b) {
    bench_ctx *c = &b->bench;
    job *j = &b->j;
    /* one big input buffer, filled with random values of each type in turn */
    b->big = (size_t)b->max_n * b->max_esize;
    if (b->big < ROTATE_BYTES) b->big = ROTATE_BYTES;
    size_t free_b = 0, total_b = 0;
    kj_mem_info(c->rt, &free_b, &total_b);
    if (b->big + (64u << 20) > free_b)
        return cli_device_memory_short(c->cmd, "the largest size, with 64 MiB to spare,", b->big + (64u << 20), free_b,
                                       total_b);
    /* after the checks: the first use builds CUB (nvcc, half a minute) */
    b->have_cub = cub_plugin_load(&b->cub, c->rt, c->cmd, b->why, sizeof b->why) == 0;
    kj_status s;
    if ((s = load_readers(j, &c->dev)) != KJ_OK || (s = kj_mem_alloc(c->rt, b->big, &j->base)) != KJ_OK ||
        (s = kj_mem_alloc(c->rt, 64, &j->out)) != KJ_OK || (s = kj_mem_alloc(c->rt, 64, &j->cub_out)) != KJ_OK)
        return cli_fail(c->cmd, s);
    void *host = malloc(b->big);
    if (!host) return cli_error(c->cmd, "out of host memory (%zu bytes)", b->big);
    if (c->format == 't') {
        printf("bench reduce: %s (%s, %d SMs), CUB: %s\n", c->dev.name, c->dev.arch, c->dev.sm_count,
               b->have_cub ? b->cub.path : b->why);
        if (b->have_cub)
            printf(
                "CUB %d.%d.%d; medians of %llu samples, interleaved with CUB; GB/s counts bytes read; x read: the\n"
                "speed as a multiple of a plain streaming read of the same bytes; CUB b2b: CUB alone, back to back\n",
                b->cub.version() / 100000, b->cub.version() / 100 % 1000, b->cub.version() % 100,
                (unsigned long long)c->samples);
    }
    if (c->format == 'j') json_begin_array("rows");
    int rc = EXIT_OK;
    c->steps = (size_t)b->types.count * (size_t)b->sizes.count * (size_t)b->ops.count;
    for (int ti = 0; ti < b->types.count && rc == EXIT_OK; ti++) rc = measure_type(b, b->type_v[ti], host, 12345 + ti);
    free(host);
    cli_progress_pause();
    if (c->format == 'j') json_end_array();
    if (c->format == 't' && rc == EXIT_OK) print_targets(b);
    if (b->differ)
        return cli_error_as(c->cmd, KJ_ERR_WRONG_RESULT,
                            "%d configuration%s gave a wrong result (checked against %s)%s%s", b->differ,
                            b->differ == 1 ? "" : "s", b->have_cub ? "CUB's" : "the CPU reference",
                            b->unwritten ? "; the GPU result was never written in " : "",
                            b->unwritten ? (b->unwritten == b->differ ? "all of them" : "some of them") : "");
    return rc;
}

static int run(bench_ctx *c) {
    reduce_bench *b = (reduce_bench *)c;
    if (b->devices.count)
        return bench_reduce_devices(c, &b->devices, b->op_v, b->ops.count, b->type_v, b->types.count, b->size_v,
                                    b->sizes.count);
    if (b->host) {
        kj_reduce_options o = {.size = sizeof o,
                               .entry = b->given_config ? b->entries.items[0] : NULL,
                               .block_size = (unsigned)b->block_v[0],
                               .coarse_factor = (unsigned)b->coarse_v[0],
                               .waves = (unsigned)b->waves_v[0]};
        return bench_reduce_host(c, &o, b->op_v, b->ops.count, b->type_v, b->types.count, b->size_v, b->sizes.count);
    }
    b->j = (job){.rt = c->rt, .cub = &b->cub};
    for (int x = 0; x < KJ_OP_COUNT_; x++)
        for (int y = 0; y < KJ_TYPE_COUNT_; y++) {
            b->read28[x][y] = NAN;
            for (int k = 0; k < 2; k++)
                b->cub28[k][x][y] = b->time20[k][x][y] = b->read_cub28[k][x][y] = b->read_cub20[k][x][y] = NAN;
        }
    int rc = measure(b);
    kj_mem_free(c->rt, b->j.base);
    kj_mem_free(c->rt, b->j.out);
    kj_mem_free(c->rt, b->j.cub_out);
    kj_mem_free(c->rt, b->j.cub_temp);
    return rc;
}

static const bench_family reduce = {
    .help = help,
    .csv = 1,
    .max_samples = 1000,
    .options = "op=o: type=t: entry=e: sizes=n: samples=s: block=b: coarse=f: waves=w: devices=d: host=H",
    .option = option,
    .prepare = prepare,
    .run = run};

int bench_reduce(int argc, char **argv) {
    char all_ops[] = "sum,max,min,prod", all_types[] = "i32,u32,i64,f16,bf16,f32,f64";
    char default_entries[] =
        "reduce_fast,reduce_coarsened,reduce_segmented,reduce_shared,reduce_convergent,reduce_simple";
    char default_sizes[] = "2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28";
    char zero_b[] = "0", zero_c[] = "0", zero_w[] = "0";
    reduce_bench b = {.bench.samples = 15,
                      .ops_text = all_ops,
                      .types_text = all_types,
                      .entries_text = default_entries,
                      .sizes_text = default_sizes,
                      .blocks_text = zero_b,
                      .coarse_text = zero_c,
                      .waves_text = zero_w,
                      .first = 1};
    return bench_main(&reduce, &b.bench, argc, argv);
}
