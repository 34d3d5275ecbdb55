/* kernjit launch: run any kernel file once, with its buffers and scalars described on the command
 * line (launch_args.h has the language), print or save buffers afterwards, and time repeats.
 *
 * Order of work, so that every mistake in the command line is reported before the GPU is touched and
 * every mismatch with the kernel before a byte is allocated:
 *   1. parse all options and specs; check --print/--save against the --arg list; stat @FILE inputs
 *   2. runtime and kernel (compile or cache); parameter count and sizes against the compiled function
 *   3. grid, block, shared memory and the buffers' bytes against the device
 *   4. allocate, fill, launch once, copy back what --print/--save ask for
 *   5. time --repeat more launches */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "cli.h"
#include "devices.h"
#include "launch_args.h"
#include "launch_data.h"
#include "launch_signature.h"
#include "nvcc_options.h"

#define CMD "launch"
#define MAX_ARGS 256
#define MAX_PRINTS 32
#define MAX_SAVES 32
#define MAX_DEFINES 64
#define MAX_OPTIONS 32
#define MAX_SOURCE (16u << 20)
#define DEFAULT_REPEAT 10

typedef struct printed {
    void *host; /* elements [from, to) of the buffer after the first launch */
} printed;

typedef struct launch_cmd {
    const char *kernel;
    const char *entry;
    cli_program program; /* kernel, and the other sources linked with it */
    kj_define defines[MAX_DEFINES];
    size_t ndef;
    const char *options[MAX_OPTIONS];
    size_t nopt;
    const char *arch; /* --arch: NULL, the device's own target */
    unsigned grid[3], block[3];
    int have_grid, have_block;
    uint64_t shared;
    launch_arg args[MAX_ARGS];
    const char *arg_text[MAX_ARGS];
    size_t nargs;
    launch_print prints[MAX_PRINTS];
    size_t nprints;
    launch_save saves[MAX_SAVES];
    size_t nsaves;
    uint64_t repeat, seed, pending;
    int json, cooperative;
    unsigned cluster[3];

    /* filled as it runs */
    char *source; /* the kernel file's text, to name parameters in messages (NULL if unreadable) */
    size_t source_len;
    launch_signature sig;
    int have_sig;
    const char *checked_by; /* "driver", "source" or "none" */
    size_t param_count;
    kj_runtime *rt;
    kj_kernel *k;
    kj_kernel_info info;
    kj_origin origin;
    kj_devptr dev[MAX_ARGS];
    void *params[MAX_ARGS];
    unsigned char *bytes[MAX_ARGS]; /* bytes[N]=...: the struct passed by value */
    kj_devptr ref[MAX_ARGS];        /* &I+OFF: the pointer passed */
    printed out[MAX_PRINTS];
    bench_result timing;
    cli_capture printed_by_device; /* under --json: the kernel's printf, for the document */
} launch_cmd;

static void help(void) {
    printf("usage: kernjit launch FILE.cu[:ENTRY] [MORE.cu[:ENTRY]]... --grid X[,Y[,Z]]\n"
           "           --block X[,Y[,Z]] --arg SPEC... [-D NAME[=VALUE]]... [--shared BYTES]\n"
           "           [--repeat R] [--seed S] [--print I[:A..B]]... [--save I=FILE]...\n"
           "           [--option NVRTC_OPTION]... [--cooperative] [--cluster X[,Y[,Z]]]\n"
           "           [--pending P] [--device N] [--arch TARGET] [--json]\n"
           "\n"
           "Compiles FILE.cu (through the cache), allocates and fills the buffers, launches\n"
           "the kernel once, prints or saves buffers, then times R more launches. No host\n"
           "code needed.\n"
           "\n"
           "ENTRY      the kernel: a plain or extern \"C\" name, or a C++ name expression\n"
           "           such as 'scale<float,256>' (quote it for the shell). Without it, the\n"
           "           file's only __global__ function (for a template, its only explicit\n"
           "           instance).\n"
           "MORE.cu    more sources of the same program: each is compiled apart with the\n"
           "           same -D and --option values and nvJitLink links them all; the entry\n"
           "           may be in any of them.\n"
           "--arg SPEC one per kernel parameter, in order (indices from 0):\n"
           "             scalar  TYPE=VALUE    i32=5  u64=1M  u32=0xff  f32=0.5  f64=-1e-3\n"
           "             buffer  TYPE[N]=FILL  f32[1M]=random  i32[2^20]=iota\n"
           "                                   u8[64]=zeros  f64[100]=0.25\n"
           "                                   f32[1000]=@in.bin\n"
           "                                   f32[]=@in.bin (N from the file's size)\n"
           "             struct  bytes[N]=FILL N raw bytes by value: zeros, @FILE (N bytes)\n"
           "                                   or 0x and 2N hex digits\n"
           "             pointer &I  &I+OFF    the address of buffer --arg I, plus OFF\n"
           "                                   bytes (below its size)\n"
           "             null    null          a null pointer (the same as u64=0)\n"
           "           TYPE: i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64. N: 1000, 64K,\n"
           "           1M, 1G, 2^20. FILL: zeros; random (seeded by --seed, default 1:\n"
           "           floats in [-1,1], signed integers in [-100,100], unsigned in\n"
           "           [0,100]); iota (0, 1, 2, ...); a VALUE for every element; @FILE (raw\n"
           "           little-endian bytes, exactly N elements).\n"
           "           The count and the sizes are checked against the compiled kernel (a\n"
           "           buffer is an 8-byte pointer, a scalar its type's size); a mismatch\n"
           "           is a usage error naming the parameter.\n"
           "--print I[:A..B]   after the launch, elements A to B-1 of buffer --arg I\n"
           "                   (default the first 16); also I:A (one element), I:A.. (to\n"
           "                   the end)\n"
           "--save I=FILE      after the launch, buffer --arg I as raw bytes\n"
           "--cooperative      a cooperative launch (cooperative groups' grid.sync()): the\n"
           "                   grid must fit the device all at once (the message gives the\n"
           "                   largest that does)\n"
           "--cluster X[,Y[,Z]]  thread-block clusters of X x Y x Z blocks (compute\n"
           "                   capability 9.0 and later)\n"
           "--pending P        device-side launches the kernel may have pending (dynamic\n"
           "                   parallelism)\n"
           "--device N         the device to run on (default 0; `kernjit info` lists them)\n"
           "--arch TARGET      build for TARGET rather than the device's own sm_XY: one\n"
           "                   whose code the device runs, such as sm_90a on a 9.0 device\n"
           "                   (its own instructions: wgmma, setmaxnreg), or compute_75\n"
           "                   (PTX the driver compiles); another is refused before\n"
           "                   anything is loaded\n"
           "--repeat R         launches timed after the first, one per pair of CUDA events;\n"
           "                   the median is shown (default %d; 0: launch once, no\n"
           "                   timing)\n"
           "-D NAME[=VALUE]    a macro (-D NAME alone is NAME=1); --option NVRTC_OPTION\n"
           "                   passes an option to NVRTC; both are in the cache key\n"
           "\n" CLI_NVCC_HELP "\n"
           "What is printed and saved is the result of the first launch alone, on the\n"
           "buffers as described: it is copied back before the timed launches, which then\n"
           "run on whatever the buffers hold (a kernel such as y += x keeps accumulating:\n"
           "that changes no printed value, and the timing of few kernels).\n"
           "Exit codes: 0 success, 1 failure (a compile error prints the NVRTC log; a\n"
           "kernel fault), 2 usage error.\n",
           DEFAULT_REPEAT);
}

/* ---- 1. the command line --------------------------------------------------------------------- */

/* One option of the command line (cli_getopt): user is the launch_cmd. */
static int option(void *user, int o, char *arg) {
    launch_cmd *c = user;
    char err[512];
    switch (o) {
    case 'h': help(); return CLI_DONE;
    case 'j': c->json = 1; break;
    case 'A': c->arch = arg; break;
    case 'G': return cli_device_arg(CMD, arg);
    case 'D':
        if (c->ndef == MAX_DEFINES) return cli_usage(CMD, "at most %d -D macros", MAX_DEFINES);
        if (cli_parse_define(arg, &c->defines[c->ndef], err, sizeof err) != 0) return cli_usage(CMD, "%s", err);
        c->ndef++;
        break;
    case 'O':
        if (c->nopt == MAX_OPTIONS) return cli_usage(CMD, "at most %d --option values", MAX_OPTIONS);
        c->options[c->nopt++] = arg;
        break;
    case 'g':
    case 'b':
        if (launch_parse_dims(arg, o == 'g' ? c->grid : c->block, err, sizeof err) != 0)
            return cli_usage(CMD, "--%s %s", o == 'g' ? "grid" : "block", err);
        if (o == 'g') c->have_grid = 1;
        else c->have_block = 1;
        break;
    case 'C': c->cooperative = 1; break;
    case 'K':
        if (launch_parse_dims(arg, c->cluster, err, sizeof err) != 0) return cli_usage(CMD, "--cluster %s", err);
        break;
    case 'P':
    case 'S':
    case 'r': {
        uint64_t *at = o == 'P' ? &c->pending : o == 'S' ? &c->shared : &c->repeat;
        return cli_count_arg(CMD,
                             o == 'P'   ? "--pending"
                             : o == 'S' ? "--shared"
                                        : "--repeat",
                             arg, o == 'P',
                             o == 'P'   ? 1u << 24
                             : o == 'S' ? UINT32_MAX
                                        : 1000000,
                             at);
    }
    case 'a':
        if (c->nargs == MAX_ARGS) return cli_usage(CMD, "at most %d --arg values", MAX_ARGS);
        if (launch_parse_arg(arg, &c->args[c->nargs], err, sizeof err) != 0)
            return cli_usage(CMD, "--arg %zu %s", c->nargs, err);
        c->arg_text[c->nargs++] = arg;
        break;
    case 'p':
        if (c->nprints == MAX_PRINTS) return cli_usage(CMD, "at most %d --print values", MAX_PRINTS);
        if (launch_parse_print(arg, &c->prints[c->nprints], err, sizeof err) != 0)
            return cli_usage(CMD, "--print %s", err);
        c->nprints++;
        break;
    case 'o':
        if (c->nsaves == MAX_SAVES) return cli_usage(CMD, "at most %d --save values", MAX_SAVES);
        if (launch_parse_save(arg, &c->saves[c->nsaves], err, sizeof err) != 0) return cli_usage(CMD, "--save %s", err);
        c->nsaves++;
        break;
    case 's':
        if (cli_parse_uint(arg, UINT64_MAX, &c->seed) != 0)
            return cli_usage(CMD, "--seed '%s' is not a non-negative integer", arg);
        break;
    }
    return EXIT_OK;
}

/* The program: FILE.cu[:ENTRY]... */
static int program(void *user, int count, char **args) {
    launch_cmd *c = user;
    if (!count) return cli_usage(CMD, "which kernel? give a .cu file (FILE.cu or FILE.cu:ENTRY)");
    return cli_parse_program(CMD, args, count, NULL, &c->program);
}

static int parse_command_line(launch_cmd *c, int argc, char **argv) {
    static const cli_option_set set = {
        "define=D: grid=g: block=b: --shared=S: arg=a: repeat=r: print=p: --save=o: --seed=s: --option=O: json=j "
        "help=h --cooperative=C --cluster=K: --pending=P: --device=G: --arch=A:",
        option, CLI_NVCC_ARCH | CLI_NVCC_DEFINES | CLI_NVCC_COMPILER, program};
    c->repeat = DEFAULT_REPEAT;
    c->seed = 1;
    int rc = cli_getopt(CMD, argc, argv, &set, 1, c);
    if (rc != EXIT_OK) return rc;
    c->kernel = c->program.kernel;
    c->entry = c->program.entry;
    for (size_t i = 0; i < c->nargs; i++) {
        const launch_arg *a = &c->args[i];
        if (a->is_ref && (a->ref >= c->nargs || !c->args[a->ref].is_buffer))
            return cli_usage(CMD, "--arg %zu '%s' points into --arg %u, which is not a buffer (buffers: TYPE[N]=FILL)",
                             i, c->arg_text[i], a->ref);
    }
    if (!c->have_grid) return cli_usage(CMD, "--grid is required (X, X,Y or X,Y,Z blocks)");
    if (!c->have_block) return cli_usage(CMD, "--block is required (X, X,Y or X,Y,Z threads)");
    return 0;
}

/* @FILE inputs: readable, and exactly N elements (or N taken from the size, for T[]=@FILE). */
static int check_input_files(launch_cmd *c) {
    for (size_t i = 0; i < c->nargs; i++) {
        launch_arg *a = &c->args[i];
        if (!(a->is_buffer || a->is_bytes) || a->fill != LAUNCH_FILL_FILE) continue;
        struct stat st;
        size_t es = launch_type_size(a->type);
        if (stat(a->path, &st) != 0)
            return cli_usage(CMD, "--arg %zu '%s': cannot read '%s': %s", i, c->arg_text[i], a->path, strerror(errno));
        if (!S_ISREG(st.st_mode))
            return cli_usage(CMD, "--arg %zu '%s': '%s' is not a regular file", i, c->arg_text[i], a->path);
        uint64_t bytes = (uint64_t)st.st_size;
        if (a->count == 0) {
            if (bytes == 0 || bytes % es || bytes / es > LAUNCH_MAX_COUNT)
                return cli_usage(CMD,
                                 "--arg %zu '%s': '%s' has %llu bytes, not a whole number (1 or more) of %zu-byte %s "
                                 "elements",
                                 i, c->arg_text[i], a->path, (unsigned long long)bytes, es, launch_type_name(a->type));
            a->count = bytes / es;
        } else if (bytes != a->count * es) {
            return cli_usage(CMD, "--arg %zu '%s': '%s' has %llu bytes; %llu %s elements are %llu bytes", i,
                             c->arg_text[i], a->path, (unsigned long long)bytes, (unsigned long long)a->count,
                             launch_type_name(a->type), (unsigned long long)(a->count * es));
        }
    }
    char err[512];
    for (size_t i = 0; i < c->nprints; i++)
        if (launch_check_print(&c->prints[i], c->args, c->nargs, err, sizeof err) != 0)
            return cli_usage(CMD, "%s", err);
    for (size_t i = 0; i < c->nsaves; i++)
        if (launch_check_save(&c->saves[i], c->args, c->nargs, err, sizeof err) != 0) return cli_usage(CMD, "%s", err);
    return 0;
}

/* The text of the kernel's files (several sources one after the other), for naming parameters;
 * NULL when none is a readable file (a built-in name: the library reports real problems when it
 * looks the kernel up). */
static void read_source(launch_cmd *c) {
    for (size_t i = 0; i <= c->program.source_count; i++) {
        const char *file = i ? c->program.sources[i - 1] : c->kernel;
        size_t n = strlen(file);
        if (!strchr(file, '/') && !(n > 3 && strcmp(file + n - 3, ".cu") == 0)) continue; /* as kj_request */
        const char *why;
        FILE *f = cli_open_regular(file, &why);
        if (!f) continue;
        if (!c->source && !(c->source = malloc(MAX_SOURCE + 1))) {
            fclose(f);
            return;
        }
        n = fread(c->source + c->source_len, 1, MAX_SOURCE - c->source_len, f);
        fclose(f);
        c->source_len += n;
        if (c->source_len < MAX_SOURCE) c->source[c->source_len++] = '\n';
        c->source[c->source_len] = '\0';
    }
    if (c->source_len >= MAX_SOURCE) { /* too long to scan whole: name no parameter rather than a wrong one */
        free(c->source);
        c->source = NULL;
        c->source_len = 0;
    }
}

/* ---- 2. the kernel's parameters -------------------------------------------------------------- */

/* " 'int n'" from the source, or "" */
static const char *param_name(const launch_cmd *c, size_t i, char *buf, size_t size) {
    buf[0] = '\0';
    if (!c->have_sig || i >= c->sig.count || i >= LAUNCH_SIG_MAX) return buf;
    char text[96];
    launch_signature_param(c->source, &c->sig, i, text, sizeof text);
    if (text[0]) snprintf(buf, size, " '%s'", text);
    return buf;
}

static const char *types_of_size(size_t size) {
    switch (size) {
    case 1: return "a scalar i8 or u8";
    case 2: return "a scalar i16, u16, f16 or bf16";
    case 4: return "a scalar i32, u32 or f32";
    case 8: return "a buffer TYPE[N]=..., or a scalar i64, u64 or f64";
    default: return NULL;
    }
}

static int check_params(launch_cmd *c) {
    const char *entry = c->info.entry;
    kj_status s = kj_kernel_param_count(c->k, &c->param_count);
    int sizes_known = s == KJ_OK;
    if (s == KJ_ERR_UNSUPPORTED) {
        /* Old driver: count the parameters in the source when one declaration says it unambiguously;
         * sizes cannot be known from text (typedefs, templates, structs), so only the count is checked. */
        fprintf(stderr, "kernjit launch: warning: %s\n", kj_last_error());
        if (c->source && launch_find_signature(c->source, c->source_len, entry, -1, &c->sig) == 0) {
            c->have_sig = 1;
            c->param_count = c->sig.count;
            c->checked_by = "source";
            fprintf(stderr,
                    "kernjit launch: warning: counting %s's parameters in the source instead (%zu); their sizes "
                    "are not checked\n",
                    entry, c->param_count);
        } else {
            c->checked_by = "none";
            fprintf(stderr,
                    "kernjit launch: warning: %s's declaration was not found in the source either: the --arg list "
                    "is not checked against it\n",
                    entry);
            return 0;
        }
    } else if (s != KJ_OK) {
        return cli_fail(CMD, s);
    } else {
        c->checked_by = "driver";
        if (c->source)
            c->have_sig = launch_find_signature(c->source, c->source_len, entry, (long)c->param_count, &c->sig) == 0;
    }

    char name[128];
    size_t n = c->param_count;
    if (c->nargs < n) {
        size_t sz = 0;
        char size_text[48] = "";
        if (sizes_known && kj_kernel_param_info(c->k, c->nargs, NULL, &sz) == KJ_OK)
            snprintf(size_text, sizeof size_text, " (%zu bytes)", sz);
        return cli_usage(CMD, "%s takes %zu parameter%s; %zu %s given with --arg: parameter %zu%s%s has none", entry, n,
                         n == 1 ? "" : "s", c->nargs, c->nargs == 1 ? "was" : "were", c->nargs,
                         param_name(c, c->nargs, name, sizeof name), size_text);
    }
    if (c->nargs > n)
        return cli_usage(CMD, "%s takes %zu parameter%s; %zu %s given with --arg: --arg %zu '%s' has no parameter",
                         entry, n, n == 1 ? "" : "s", c->nargs, c->nargs == 1 ? "was" : "were", n, c->arg_text[n]);
    if (!sizes_known) return 0;
    for (size_t i = 0; i < n; i++) {
        size_t sz = 0;
        if ((s = kj_kernel_param_info(c->k, i, NULL, &sz)) != KJ_OK) return cli_fail(CMD, s);
        const launch_arg *a = &c->args[i];
        size_t given = a->is_buffer || a->is_ref ? sizeof(kj_devptr)
                       : a->is_bytes             ? (size_t)a->count
                                                 : launch_type_size(a->type);
        if (given == sz) continue;
        const char *fits = types_of_size(sz);
        char what[64];
        if (a->is_buffer) snprintf(what, sizeof what, "a buffer (an 8-byte pointer)");
        else if (a->is_ref) snprintf(what, sizeof what, "a pointer into a buffer (8 bytes)");
        else if (a->is_bytes) snprintf(what, sizeof what, "%zu bytes", given);
        else
            snprintf(what, sizeof what, "%s %s (%zu bytes)", launch_type_name(a->type)[0] == 'u' ? "a" : "an",
                     launch_type_name(a->type), given);
        return cli_usage(CMD, "--arg %zu '%s' is %s but parameter %zu%s of %s takes %zu bytes: %s%s", i, c->arg_text[i],
                         what, i, param_name(c, i, name, sizeof name), entry, sz, fits ? "give " : "",
                         fits ? fits : "a struct by value: give bytes[N]=...");
    }
    return 0;
}

/* ---- 3. device limits ------------------------------------------------------------------------ */

static int check_device(launch_cmd *c) {
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    kj_status s = kj_runtime_device(c->rt, &d);
    if (s != KJ_OK) return cli_fail(CMD, s);
    static const char axis[] = "xyz";
    uint64_t threads = 1;
    for (int i = 0; i < 3; i++) {
        if (c->block[i] > (unsigned)d.max_block_dim[i])
            return cli_usage(CMD, "--block %c = %u exceeds the device's limit of %d", axis[i], c->block[i],
                             d.max_block_dim[i]);
        if (c->grid[i] > (unsigned)d.max_grid_dim[i])
            return cli_usage(CMD, "--grid %c = %u exceeds the device's limit of %d", axis[i], c->grid[i],
                             d.max_grid_dim[i]);
        threads *= c->block[i];
    }
    if (threads > (uint64_t)c->info.max_threads_per_block)
        return cli_usage(CMD, "--block %ux%ux%u is %llu threads; %s allows at most %d per block (the device %d)",
                         c->block[0], c->block[1], c->block[2], (unsigned long long)threads, c->info.entry,
                         c->info.max_threads_per_block, d.max_threads_per_block);
    size_t static_shared = (size_t)c->info.shared_static_bytes;
    size_t most = d.shared_per_block_optin > static_shared ? d.shared_per_block_optin - static_shared : 0;
    if (c->shared > most)
        return cli_usage(CMD,
                         "--shared %llu exceeds the %zu bytes of dynamic shared memory a block may have here (%zu less "
                         "%zu static)",
                         (unsigned long long)c->shared, most, d.shared_per_block_optin, static_shared);

    size_t free_b = 0, total_b = 0;
    if ((s = kj_mem_info(c->rt, &free_b, &total_b)) != KJ_OK) return cli_fail(CMD, s);
    uint64_t sum = 0;
    for (size_t i = 0; i < c->nargs; i++) {
        const launch_arg *a = &c->args[i];
        if (!a->is_buffer) continue;
        uint64_t bytes = a->count * launch_type_size(a->type);
        if (bytes > free_b) {
            char what[CLI_MESSAGE_MAX];
            kj_message_format(what, sizeof what, "--arg %zu '%s'", i, c->arg_text[i]);
            return cli_device_memory_short(CMD, what, bytes, free_b, total_b);
        }
        sum += bytes;
    }
    if (sum > free_b) return cli_device_memory_short(CMD, "the sum of the buffers", sum, free_b, total_b);
    return 0;
}

/* ---- 4. buffers and the first launch --------------------------------------------------------- */

static int read_file(const char *path, void *buf, size_t bytes) {
    const char *why;
    FILE *f = cli_open_regular(path, &why);
    if (!f) return cli_error_as(CMD, KJ_ERR_IO, "cannot read '%s': %s", path, why);
    size_t got = fread(buf, 1, bytes, f);
    fclose(f);
    if (got != bytes) return cli_error_as(CMD, KJ_ERR_IO, "'%s' ended after %zu of %zu bytes", path, got, bytes);
    return 0;
}

static int make_buffers(launch_cmd *c) {
    kj_status s;
    for (size_t i = 0; i < c->nargs; i++) {
        launch_arg *a = &c->args[i];
        if (a->is_bytes) {
            if (!(c->bytes[i] = calloc(1, (size_t)a->count)))
                return cli_error_as(CMD, KJ_ERR_HOST_MEMORY, "out of host memory for the %llu bytes of --arg %zu",
                                    (unsigned long long)a->count, i);
            if (a->fill == LAUNCH_FILL_FILE && read_file(a->path, c->bytes[i], (size_t)a->count)) return EXIT_FAILURE_;
            if (a->hex) launch_hex_bytes(a->hex, c->bytes[i], (size_t)a->count);
            c->params[i] = c->bytes[i];
            continue;
        }
        if (a->is_ref) continue; /* once every buffer is there */
        if (!a->is_buffer) {
            c->params[i] = a->value;
            continue;
        }
        size_t bytes = (size_t)(a->count * launch_type_size(a->type));
        if ((s = kj_mem_alloc(c->rt, bytes, &c->dev[i])) != KJ_OK) return cli_fail(CMD, s);
        c->params[i] = &c->dev[i];
        if (a->fill == LAUNCH_FILL_ZEROS) {
            if ((s = kj_memset_u8(c->rt, c->dev[i], 0, bytes)) != KJ_OK) return cli_fail(CMD, s);
            continue;
        }
        void *host = malloc(bytes);
        if (!host)
            return cli_error_as(CMD, KJ_ERR_HOST_MEMORY, "out of host memory for the %zu bytes of --arg %zu", bytes, i);
        int rc = 0;
        if (a->fill == LAUNCH_FILL_FILE) rc = read_file(a->path, host, bytes);
        else launch_fill_host(a, host, a->count, c->seed, (unsigned)i);
        if (!rc && (s = kj_memcpy_htod(c->rt, c->dev[i], host, bytes)) != KJ_OK) rc = cli_fail(CMD, s);
        free(host);
        if (rc) return rc;
    }
    for (size_t i = 0; i < c->nargs; i++) {
        const launch_arg *a = &c->args[i];
        if (!a->is_ref) continue;
        const launch_arg *b = &c->args[a->ref];
        uint64_t bytes = b->count * launch_type_size(b->type);
        if (a->offset >= bytes)
            return cli_usage(CMD, "--arg %zu '%s': offset %llu is past buffer --arg %u, which has %llu bytes", i,
                             c->arg_text[i], (unsigned long long)a->offset, a->ref, (unsigned long long)bytes);
        c->ref[i] = c->dev[a->ref] + a->offset;
        c->params[i] = &c->ref[i];
    }
    return 0;
}

static kj_launch_config config(const launch_cmd *c, kj_stream stream) {
    kj_launch_config cfg = KJ_LAUNCH_CONFIG_INIT;
    memcpy(cfg.grid, c->grid, sizeof cfg.grid);
    memcpy(cfg.block, c->block, sizeof cfg.block);
    cfg.shared_bytes = (unsigned)c->shared;
    cfg.stream = stream;
    cfg.pending_launches = c->pending;
    cfg.cooperative = c->cooperative;
    memcpy(cfg.cluster, c->cluster, sizeof cfg.cluster);
    return cfg;
}

/* --save targets and @FILE inputs are checked before anything compiles or runs: a folder that is
 * missing or not writable is a usage error, as an unreadable input is. */
static int check_paths(launch_cmd *c) {
    for (size_t i = 0; i < c->nsaves; i++) {
        char what[CLI_MESSAGE_MAX];
        kj_message_format(what, sizeof what, "--save %u=%s", c->saves[i].arg, c->saves[i].path);
        int rc = cli_check_output_folder(CMD, what, c->saves[i].path);
        if (rc) return rc;
    }
    for (size_t i = 0; i < c->nargs; i++) {
        const launch_arg *a = &c->args[i];
        if (a->fill == LAUNCH_FILL_FILE && (a->is_buffer || a->is_bytes) && access(a->path, R_OK) != 0)
            return cli_usage(CMD, "--arg %zu '%s': cannot read '%s': %s", i, c->arg_text[i], a->path, strerror(errno));
    }
    return 0;
}

static int first_launch(launch_cmd *c) {
    kj_launch_config cfg = config(c, NULL);
    kj_status s = kj_kernel_launch(c->k, &cfg, c->nargs ? c->params : NULL);
    if (s == KJ_OK) s = kj_synchronize(c->rt);
    if (s != KJ_OK) return cli_fail(CMD, s);
    /* copied back now: what is printed and saved is this launch's result alone */
    for (size_t i = 0; i < c->nprints; i++) {
        const launch_print *p = &c->prints[i];
        size_t es = launch_type_size(c->args[p->arg].type);
        size_t bytes = (size_t)(p->to - p->from) * es;
        if (!(c->out[i].host = malloc(bytes)))
            return cli_error_as(CMD, KJ_ERR_HOST_MEMORY, "out of host memory for --print %u", p->arg);
        if ((s = kj_memcpy_dtoh(c->rt, c->out[i].host, c->dev[p->arg] + p->from * es, bytes)) != KJ_OK)
            return cli_fail(CMD, s);
    }
    for (size_t i = 0; i < c->nsaves; i++) {
        const launch_arg *a = &c->args[c->saves[i].arg];
        size_t bytes = (size_t)(a->count * launch_type_size(a->type));
        void *host = malloc(bytes);
        if (!host) return cli_error_as(CMD, KJ_ERR_HOST_MEMORY, "out of host memory for --save %u", c->saves[i].arg);
        s = kj_memcpy_dtoh(c->rt, host, c->dev[c->saves[i].arg], bytes);
        int rc = s != KJ_OK ? cli_fail(CMD, s) : cli_write_file(CMD, c->saves[i].path, host, bytes);
        free(host);
        if (rc) return rc;
    }
    return 0;
}

/* ---- 5. timing ------------------------------------------------------------------------------- */

static kj_status launch_once(void *user, kj_stream stream, unsigned i) {
    (void)i;
    launch_cmd *c = user;
    kj_launch_config cfg = config(c, stream);
    return kj_kernel_launch(c->k, &cfg, c->nargs ? c->params : NULL);
}

static int time_repeats(launch_cmd *c) {
    if (!c->repeat) return 0;
    /* the first launch was the warm-up (module loaded, caches touched): no other */
    kj_status s = bench_time(c->rt, NULL, launch_once, c, 0, (unsigned)c->repeat, 1, &c->timing);
    if (s == KJ_OK) s = kj_synchronize(c->rt);
    return s == KJ_OK ? 0 : cli_fail(CMD, s);
}

/* ---- output ---------------------------------------------------------------------------------- */

static void report_json(const launch_cmd *c) {
    char num[64];
    json_begin_object();
    json_string("kernel", c->kernel);
    json_string("entry", c->info.entry);
    json_string("symbol", c->info.lowered_name);
    json_string("origin", kj_origin_name(c->origin));
    json_string("arch", c->info.arch);
    json_begin_array("grid");
    for (int i = 0; i < 3; i++) json_uint(NULL, c->grid[i]);
    json_end_array();
    json_begin_array("block");
    for (int i = 0; i < 3; i++) json_uint(NULL, c->block[i]);
    json_end_array();
    json_uint("shared_bytes", c->shared);
    json_uint("arg_count", c->nargs);
    json_string("params_checked_by", c->checked_by);
    json_uint("seed", c->seed);
    json_uint("repeat", c->repeat);
    if (c->repeat) {
        json_double("median_us", c->timing.median_us);
        json_double("min_us", c->timing.min_us);
        json_double("max_us", c->timing.max_us);
    } else {
        json_null("median_us");
    }
    json_begin_array("printed");
    for (size_t i = 0; i < c->nprints; i++) {
        const launch_print *p = &c->prints[i];
        const launch_arg *a = &c->args[p->arg];
        size_t es = launch_type_size(a->type);
        json_object_in(NULL);
        json_uint("arg", p->arg);
        json_string("type", launch_type_name(a->type));
        json_uint("count", a->count);
        json_uint("from", p->from);
        json_uint("to", p->to);
        json_begin_array("values");
        for (uint64_t e = 0; e < p->to - p->from; e++) {
            /* NaN and infinities are no JSON numbers: written as the strings "nan", "inf", "-inf" */
            if (launch_format(a->type, (const char *)c->out[i].host + e * es, num, sizeof num)) json_raw(NULL, num);
            else json_string(NULL, num);
        }
        json_end_array();
        json_end_object();
    }
    json_end_array();
    json_begin_array("saved");
    for (size_t i = 0; i < c->nsaves; i++) {
        const launch_arg *a = &c->args[c->saves[i].arg];
        json_object_in(NULL);
        json_uint("arg", c->saves[i].arg);
        json_string("file_path", c->saves[i].path);
        json_uint("size_bytes", a->count * launch_type_size(a->type));
        json_end_object();
    }
    json_end_array();
    json_captured("device_output", &c->printed_by_device);
    json_end_object();
}

static void report_text(const launch_cmd *c) {
    char num[64];
    printf("%s %s (%s) for %s, %s\n", c->kernel, c->info.entry, c->info.lowered_name, c->info.arch,
           cli_origin_text(c->origin));
    printf("  launch      grid %u,%u,%u  block %u,%u,%u  shared %llu bytes\n", c->grid[0], c->grid[1], c->grid[2],
           c->block[0], c->block[1], c->block[2], (unsigned long long)c->shared);
    if (strcmp(c->checked_by, "none") == 0)
        printf("  parameters  %zu, not checked (see the warning above)\n", c->nargs);
    else
        printf("  parameters  %zu, checked against the %s\n", c->nargs,
               strcmp(c->checked_by, "driver") == 0 ? "compiled kernel (count and sizes)" : "source (count only)");
    if (c->repeat)
        printf("  time        %.2f us median of %llu launches (min %.2f, max %.2f)\n", c->timing.median_us,
               (unsigned long long)c->repeat, c->timing.min_us, c->timing.max_us);
    else printf("  time        not measured (--repeat 0)\n");
    for (size_t i = 0; i < c->nprints; i++) {
        const launch_print *p = &c->prints[i];
        const launch_arg *a = &c->args[p->arg];
        size_t es = launch_type_size(a->type);
        printf("--arg %u %s[%llu], elements %llu..%llu:\n", p->arg, launch_type_name(a->type),
               (unsigned long long)a->count, (unsigned long long)p->from, (unsigned long long)p->to);
        for (uint64_t e = 0; e < p->to - p->from; e++) {
            launch_format(a->type, (const char *)c->out[i].host + e * es, num, sizeof num);
            printf("  [%llu] %s\n", (unsigned long long)(p->from + e), num);
        }
    }
    for (size_t i = 0; i < c->nsaves; i++) {
        const launch_arg *a = &c->args[c->saves[i].arg];
        printf("saved --arg %u (%llu bytes) to %s\n", c->saves[i].arg,
               (unsigned long long)(a->count * launch_type_size(a->type)), c->saves[i].path);
    }
}

/* ---- the command ----------------------------------------------------------------------------- */

static int run(launch_cmd *c) {
    kj_status s = cli_runtime(&c->rt, 0, NULL, 0);
    if (s != KJ_OK) return cli_fail(CMD, s);
    if (!kj_runtime_has_device(c->rt))
        return cli_error_as(CMD, KJ_ERR_NO_DEVICE,
                            "no CUDA device: nothing can run here (`kernjit compile %s` works without one)", c->kernel);
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    if ((s = kj_runtime_device(c->rt, &d)) != KJ_OK) return cli_fail(CMD, s);
    /* before compiling anything: the library says the same at the launch */
    if ((c->cluster[0] || c->cluster[1] || c->cluster[2]) && d.cc_major < 9)
        return cli_error_as(CMD, KJ_ERR_UNSUPPORTED,
                            "thread-block clusters need compute capability 9.0 or later; this device is %d.%d",
                            d.cc_major, d.cc_minor);
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = c->kernel,
                      .entry = c->entry,
                      .defines = c->defines,
                      .define_count = c->ndef,
                      .options = c->options,
                      .option_count = c->nopt,
                      .arch = c->arch,
                      .sources = c->program.sources,
                      .source_count = c->program.source_count};
    if ((s = kj_kernel_get(c->rt, &req, &c->k, &c->origin)) != KJ_OK) return cli_fail(CMD, s);
    c->info = (kj_kernel_info)KJ_KERNEL_INFO_INIT;
    if ((s = kj_kernel_query(c->k, &c->info)) != KJ_OK) return cli_fail(CMD, s);
    int rc;
    if ((rc = check_params(c)) || (rc = check_device(c)) || (rc = make_buffers(c))) return rc;
    cli_capture_begin(&c->printed_by_device);
    if (!(rc = first_launch(c))) rc = time_repeats(c);
    cli_capture_end(&c->printed_by_device);
    if (rc) return rc;
    if (c->json) report_json(c);
    else report_text(c);
    return EXIT_OK;
}

int cmd_launch(int argc, char **argv) {
    launch_cmd *c = calloc(1, sizeof *c);
    if (!c) return cli_error_as(CMD, KJ_ERR_HOST_MEMORY, "out of memory");
    c->printed_by_device.saved_fd = -1;
    int rc = parse_command_line(c, argc, argv);
    if (rc == CLI_DONE) rc = EXIT_OK;
    else if (!rc && !(rc = check_input_files(c)) && !(rc = check_paths(c))) {
        read_source(c);
        rc = run(c);
    }
    for (size_t i = 0; i < c->nargs; i++)
        if (c->dev[i]) kj_mem_free(c->rt, c->dev[i]);
    for (size_t i = 0; i < c->nprints; i++) free(c->out[i].host);
    for (size_t i = 0; i < c->nargs; i++) free(c->bytes[i]);
    kj_runtime_destroy(c->rt);
    cli_capture_free(&c->printed_by_device);
    free(c->source);
    free(c);
    return rc;
}
