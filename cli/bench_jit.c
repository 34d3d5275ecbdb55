/* kernjit bench jit: what the cache buys. For one plain kernel: a cold compile through kernjit (empty
 * cache: compile, store, load) next to raw NVRTC on the same source and options; a disk hit and a
 * seed hit in a new process (timed from after its runtime, so context creation is excluded), next to
 * the driver alone, also a disk hit of a kernel file with five headers; and a memory hit. Then the
 * built-in reduction's compiles, compile --all and a new process's first kj_reduce, each next to the
 * same with the whole file compiled (a copy marked `whole-file` on KERNJIT_PATH), in the same run,
 * and that first kj_reduce with a seed that has its kernel; and `kernjit seed` of the built-ins for
 * three targets next to compiling them once each. */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <nvrtc.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "devices.h"
#include "cli.h"
#include "run.h"

extern char **environ;

/* The hit timings' goals: a disk hit of a kernel with five user headers in a new process, and a
 * memory hit. */
#define DISK_HIT_GOAL_MS 0.2
#define SMALL_DISK_HIT_GOAL_MS 0.1 /* a ~6 KB cubin, read, verified and loaded */
#define MEMORY_HIT_GOAL_US 0.5
/* Seeds: the first kj_reduce of a process from a seed, and against its compile; a seed hit over the
 * driver alone loading the same cubin; seeding the built-ins for three targets against compiling
 * each once (one target, one process). */
#define SEEDED_REDUCE_GOAL_MS 2.0
#define SEEDED_REDUCE_GOAL_SPEEDUP 40.0
#define SEED_HIT_OVER_DRIVER_GOAL_MS 0.03
#define SEED_THREE_TARGETS_GOAL_RATIO 2.0
#define SEED_THREE_TARGETS "sm_80,sm_90,sm_100"

static void help(void) {
    printf("usage: kernjit bench jit [--repeat R] [--goals] [--device N] [--json]\n\n"
           "Times, as medians of R samples (default 7):\n"
           "- raw NVRTC compiling a small kernel; kernjit's cold compile of the same\n"
           "  source (an empty cache: key, NVRTC, store), and its whole cold path to a\n"
           "  loaded kernel (the same plus loading the module);\n"
           "- the built-in reduction: raw NVRTC on the whole file against kernjit, which\n"
           "  compiles the entry asked for alone;\n"
           "- a dynamic-parallelism kernel's compile and link;\n"
           "- a user's first call: a new process that starts, compiles the reduction\n"
           "  into an empty cache and exits;\n"
           "- `compile reduce --all` from its start to its exit (its worker processes,\n"
           "  one per processor), with whole files (as kernjit did before it compiled\n"
           "  entries alone) and as now;\n"
           "- a new process's first kj_reduce (2^20 f32) to its result: with the whole\n"
           "  file, the entry alone, the entry prefetched before the input is made, and\n"
           "  with a seed that holds its kernel (against the entry's compile);\n"
           "- a disk hit in a new process (after its context exists) of the small\n"
           "  kernel, next to the driver alone loading the same cubin in a new process\n"
           "  (the floor under it), and of a kernel file with five headers of its own\n"
           "  (read and hashed again);\n"
           "- a seed hit of the small kernel in a new process (a seed folder holding\n"
           "  it, the cache empty);\n"
           "- with a device, `kernjit seed` of the built-ins' defaults for sm_80, sm_90\n"
           "  and sm_100 against compiling each once (one target, one process);\n"
           "- a memory hit (the same request again, in microseconds).\n"
           "Every compile is cold: NVRTC keeps compiled code in the driver's cache where\n"
           "there is a driver (comments do not tell sources apart there), so the\n"
           "benchmark runs itself with CUDA_CACHE_DISABLE=1, for both sides. Without a\n"
           "GPU, the disk hit stops before loading and the load and the memory hit are\n"
           "skipped.\n\n"
           "--goals   each figure that kernjit's developers hold a target for is\n"
           "          followed by it and whether it was met (scripts/gpu-check); the\n"
           "          --json document has its *_goal_* fields either way.\n" CLI_DEVICE_HELP);
}

/* Sample i gets its own text, so that every cold compile is really cold. */
static char *source_for(unsigned long run, int sample) {
    static const char *fmt =
        "// kernjit bench jit: run %lu sample %d\n"
        "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {\n"
        "    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
        "    if (i < n) y[i] = a * x[i] + y[i];\n"
        "}\n";
    return cli_format(fmt, run, sample);
}

/* One NVRTC compile to a cubin, timed from creating the program to having the binary. */
static int nvrtc_timed(const char *src, const char *name, int nheaders, const char *const *texts,
                       const char *const *names, const char *const *opts, int nopts, double *ms) {
    double t0 = cli_now_ms();
    nvrtcProgram p;
    if (nvrtcCreateProgram(&p, src, name, nheaders, texts, names) != NVRTC_SUCCESS) return -1;
    nvrtcResult r = nvrtcCompileProgram(p, nopts, opts);
    size_t size = 0;
    char *bin = NULL;
    if (r == NVRTC_SUCCESS) r = nvrtcGetCUBINSize(p, &size);
    if (r == NVRTC_SUCCESS && (bin = malloc(size))) r = nvrtcGetCUBIN(p, bin);
    nvrtcDestroyProgram(&p);
    free(bin);
    *ms = cli_now_ms() - t0;
    return r == NVRTC_SUCCESS ? 0 : -1;
}

static int raw_nvrtc_ms(const char *src, const char *arch, double *ms) {
    kj_toolchain tc = KJ_TOOLCHAIN_INIT;
    kj_toolchain_query(&tc);
    char a[32], inc[4200];
    snprintf(a, sizeof a, "-arch=%s", arch);
    snprintf(inc, sizeof inc, "--include-path=%s/include", tc.cuda_home);
    const char *opts[] = {a, "-std=c++17", inc};
    return nvrtc_timed(src, "bench.cu", 0, NULL, NULL, opts, 3, ms);
}

/* A kernel file that includes five headers of its own, as a user's project does: written under dir
 * for this run, so that its first compile is cold. Returns the kernel's path (static storage). */
#define BENCH_HEADERS 5
static const char *write_header_program(const char *dir, unsigned long run) {
    static char path[4200];
    char file[4200];
    for (int h = 1; h <= BENCH_HEADERS; h++) {
        snprintf(file, sizeof file, "%s/headers/part%d.cuh", dir, h);
        FILE *f = fopen(file, "w");
        if (!f) return NULL;
        fprintf(f,
                "// kernjit bench jit: header %d of run %lu\n#pragma once\n%s"
                "__device__ inline float part%d(float v) { return v * %d.0f + %d.5f; }\n",
                h, run, h > 1 ? "" : "#define BENCH_SCALE 2.0f\n", h, h, h);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/headers/kernel.cu", dir);
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    for (int h = 1; h <= BENCH_HEADERS; h++) fprintf(f, "#include \"part%d.cuh\"\n", h);
    fprintf(f, "extern \"C\" __global__ void parts(float *v, unsigned n) {\n"
               "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
               "    if (i < n) v[i] = part1(part2(part3(part4(part5(v[i]))))) * BENCH_SCALE;\n}\n");
    fclose(f);
    return path;
}

/* kernjit's path for one request: kj_kernel_get (to a loaded kernel) when there is a device and
 * load is set, else kj_compile (to a stored entry). */
static kj_status kernjit_get_request(kj_runtime *rt, const kj_request *request, int load, double *ms,
                                     kj_origin *origin) {
    kj_request req = *request;
    double t0 = cli_now_ms();
    kj_status s;
    if (load && kj_runtime_has_device(rt)) {
        kj_kernel *k;
        s = kj_kernel_get(rt, &req, &k, origin);
    } else {
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        s = kj_compile(rt, &req, &r);
        *origin = r.origin;
    }
    *ms = cli_now_ms() - t0;
    return s;
}

static kj_status kernjit_get(kj_runtime *rt, const char *src, int load, double *ms, kj_origin *origin) {
    kj_request req = {.size = sizeof(kj_request), .kernel = "bench.cu", .source_text = src, .entry = "saxpy"};
    return kernjit_get_request(rt, &req, load, ms, origin);
}

/* A runtime on the benchmark's device, its cache in dir, its seeds `seeds` (NULL: the usual ones). */
static kj_status open_runtime(const char *dir, const char *seeds, kj_runtime **rt) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = cli_device;
    o.cache_dir = dir;
    o.seed_dirs = seeds;
    return kj_runtime_create(&o, rt);
}

/* The child: `kernjit bench jit --child DIR RUN [KERNEL.cu] [--seed SEED]`: one disk hit (a seed hit
 * with --seed), timed after the runtime exists: of the small in-memory kernel, or of the kernel file
 * (with its headers to read and hash). */
static int child(const char *dir, const char *run, const char *file, const char *seeds) {
    kj_runtime *rt;
    if (open_runtime(dir, seeds, &rt) != KJ_OK) return cli_fail("bench jit", KJ_ERR_CUDA);
    char *src = file ? NULL : source_for(strtoul(run, NULL, 10), 0);
    double ms;
    kj_origin origin;
    kj_request req = {.size = sizeof(kj_request), .kernel = file};
    kj_status s = file ? kernjit_get_request(rt, &req, 1, &ms, &origin) : kernjit_get(rt, src, 1, &ms, &origin);
    free(src);
    kj_runtime_destroy(rt);
    if (s != KJ_OK) return cli_fail("bench jit", s);
    printf("%.6f %d\n", ms, (int)origin);
    return EXIT_OK;
}

/* The floor under a disk hit: `kernjit bench jit --child-driver FILE ENTRY` loads a plain cubin with
 * the driver alone, as a host program without kernjit would: the file read (open, fstat, read),
 * cuModuleLoadData, cuModuleGetFunction and the five attributes kernjit reads, timed after the
 * context exists, as the disk hit is. The driver is the one kernjit would use (KERNJIT_LIBCUDA). */
static int child_driver(const char *file, const char *entry) {
    const char *lib = getenv("KERNJIT_LIBCUDA");
    void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return cli_error("bench jit", "cannot load the driver: %s", dlerror());
/* the names as the driver exports them: cuda.h maps some to versions (cuDevicePrimaryCtxRelease_v2) */
#define NAME_(x) #x
#define NAME(x) NAME_(x)
#define SYMBOL(name) (__typeof__(name) *)dlsym(h, NAME(name))
    __typeof__(cuInit) *init = SYMBOL(cuInit);
    __typeof__(cuDeviceGet) *device_get = SYMBOL(cuDeviceGet);
    __typeof__(cuDevicePrimaryCtxRetain) *retain = SYMBOL(cuDevicePrimaryCtxRetain);
    __typeof__(cuDevicePrimaryCtxRelease) *release = SYMBOL(cuDevicePrimaryCtxRelease);
    __typeof__(cuCtxSetCurrent) *set_current = SYMBOL(cuCtxSetCurrent);
    __typeof__(cuModuleLoadData) *load = SYMBOL(cuModuleLoadData);
    __typeof__(cuModuleUnload) *unload = SYMBOL(cuModuleUnload);
    __typeof__(cuModuleGetFunction) *function = SYMBOL(cuModuleGetFunction);
    __typeof__(cuFuncGetAttribute) *attribute = SYMBOL(cuFuncGetAttribute);
#undef SYMBOL
#undef NAME
#undef NAME_
    CUdevice dev;
    CUcontext ctx;
    if (!init || !device_get || !retain || !set_current || !load || !function || !attribute || !unload || !release ||
        init(0) || device_get(&dev, cli_device == KJ_DEVICE_AUTO ? 0 : cli_device) || retain(&ctx, dev) ||
        set_current(ctx))
        return cli_error("bench jit", "the driver alone: cannot make a context");
    double t0 = cli_now_ms();
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    void *bin = fd >= 0 && fstat(fd, &st) == 0 ? malloc((size_t)st.st_size) : NULL;
    int whole = bin && read(fd, bin, (size_t)st.st_size) == st.st_size;
    if (fd >= 0) close(fd);
    CUmodule m = NULL;
    CUfunction f;
    static const CUfunction_attribute attrs[] = {
        CU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES};
    int ok = whole && load(&m, bin) == CUDA_SUCCESS && function(&f, m, entry) == CUDA_SUCCESS;
    for (size_t i = 0; ok && i < sizeof attrs / sizeof attrs[0]; i++) {
        int v;
        ok = attribute(&v, attrs[i], f) == CUDA_SUCCESS;
    }
    double ms = cli_now_ms() - t0;
    free(bin);
    if (m) unload(m);
    release(dev);
    dlclose(h);
    if (!ok) return cli_error("bench jit", "the driver alone could not load %s (entry %s)", file, entry);
    printf("%.6f %d\n", ms, (int)KJ_ORIGIN_DISK);
    return EXIT_OK;
}

/* Runs `kernjit bench jit ARGS...` in a new process and reads the line it prints into buf. */
static int spawn_reading(char *const *args, char *buf, size_t size) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    char device[16];
    snprintf(device, sizeof device, "%d", cli_device);
    char *argv[16] = {exe, "bench", "jit", "--device", device}; /* the child on the same device */
    size_t k = cli_device == KJ_DEVICE_AUTO ? 3 : 5, first = k;
    for (; args[k - first] && k < 15; k++) argv[k] = args[k - first];
    argv[k] = NULL;
    int fds[2];
    if (pipe(fds) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    int r = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (r != 0) {
        close(fds[0]);
        return -1;
    }
    ssize_t got = read(fds[0], buf, size - 1);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    buf[got] = '\0';
    return 0;
}

/* A child that prints "MS ORIGIN": its time and where its binary came from. */
static int spawn_reporting(char *const *args, double *ms, int *origin) {
    char buf[128];
    if (spawn_reading(args, buf, sizeof buf) != 0) return -1;
    return sscanf(buf, "%lf %d", ms, origin) == 2 ? 0 : -1;
}

static int spawn_child(const char *dir, unsigned long run, const char *file, const char *seeds, double *ms,
                       int *origin) {
    char runs[32];
    snprintf(runs, sizeof runs, "%lu", run);
    char *args[8] = {"--child", (char *)dir, runs};
    size_t n = 3;
    if (seeds) args[n++] = "--seed", args[n++] = (char *)seeds;
    args[n++] = (char *)file;
    args[n] = NULL;
    return spawn_reporting(args, ms, origin);
}

static int spawn_driver_child(const char *file, double *ms) {
    int origin;
    char *args[] = {"--child-driver", (char *)file, "saxpy", NULL};
    return spawn_reporting(args, ms, &origin);
}

/* The child of the first-kj_reduce rows: `kernjit bench jit --child-reduce DIR MODE [--seed SEED]`,
 * MODE plain or prefetch: a runtime on the empty cache DIR (and the seed SEED), then what a host
 * program does (make a 2^20-element input, upload it) and its first kj_reduce; with prefetch,
 * kj_reduce_prefetch before the input. Prints the time from the kj_reduce call to its result, and
 * from the start of the input to it. */
#define FIRST_REDUCE_N (1u << 20)
static int child_reduce(const char *dir, const char *mode, const char *seeds) {
    kj_runtime *rt;
    kj_status s = open_runtime(dir, seeds, &rt);
    if (s != KJ_OK) return cli_fail("bench jit", s);
    double t0 = cli_now_ms();
    if (strcmp(mode, "prefetch") == 0 && (s = kj_reduce_prefetch(rt, KJ_OP_SUM, KJ_TYPE_F32, FIRST_REDUCE_N, NULL)))
        return kj_runtime_destroy(rt), cli_fail("bench jit", s);
    float *host = malloc(FIRST_REDUCE_N * sizeof *host);
    kj_devptr in = 0;
    if (!host) s = KJ_ERR_HOST_MEMORY;
    if (s == KJ_OK) {
        cli_random_fill(KJ_TYPE_F32, host, FIRST_REDUCE_N, 1, 0);
        s = kj_mem_alloc(rt, FIRST_REDUCE_N * sizeof *host, &in);
    }
    if (s == KJ_OK) s = kj_memcpy_htod(rt, in, host, FIRST_REDUCE_N * sizeof *host);
    double t1 = cli_now_ms();
    float result;
    kj_reduce_report rep = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &rep};
    if (s == KJ_OK) s = kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, in, FIRST_REDUCE_N, &result, &o);
    double t2 = cli_now_ms();
    free(host);
    kj_mem_free(rt, in);
    kj_runtime_destroy(rt);
    if (s != KJ_OK) return cli_fail("bench jit", s);
    printf("%.6f %.6f %d\n", t2 - t1, t2 - t0, (int)rep.origin);
    return EXIT_OK;
}

/* Runs `kernjit ARGS...` in a new process with KERNJIT_CACHE_DIR=dir, output discarded; its wall
 * time from spawn to exit into *ms. */
static int spawn_timed(const char *dir, char *const *args, double *ms) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    char *argv[16] = {exe};
    size_t k = 1;
    for (; args[k - 1] && k < 15; k++) argv[k] = args[k - 1];
    argv[k] = NULL;
    const char *old = getenv("KERNJIT_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("KERNJIT_CACHE_DIR", dir, 1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    double t0 = cli_now_ms();
    pid_t pid;
    int r = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    int status = 0;
    if (r == 0) waitpid(pid, &status, 0);
    *ms = cli_now_ms() - t0;
    posix_spawn_file_actions_destroy(&fa);
    if (saved) setenv("KERNJIT_CACHE_DIR", saved, 1);
    else unsetenv("KERNJIT_CACHE_DIR");
    free(saved);
    return r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The built-in reduction's source and header, read from the kernel folder kernjit was built from (raw
 * NVRTC needs the text; the library keeps its copy embedded). NULL when it is not there. */
static char *read_kernel_file(const char *name) {
#ifdef KJ_KERNELS_SOURCE_DIR
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", KJ_KERNELS_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    if (buf && fread(buf, 1, (1 << 20) - 1, f) == 0) buf[0] = '\0';
    fclose(f);
    return buf;
#else
    (void)name;
    return NULL;
#endif
}

/* Raw NVRTC on the built-in reduction, its default macros, common.cuh handed over as kernjit does. */
static int raw_nvrtc_reduce_ms(const char *src, const char *common, const char *arch, double *ms) {
    char a[32];
    snprintf(a, sizeof a, "-arch=%s", arch);
    const char *opts[] = {a, "-std=c++17", "-DBLOCK_SIZE=256", "-DCOARSE_FACTOR=8", "-DOP=sum", "-DT=f32"};
    const char *names[] = {"common.cuh"}, *texts[] = {common};
    return nvrtc_timed(src, "reduce.cu", 1, texts, names, opts, 6, ms);
}

/* A kernel that launches a kernel: compiled and linked with the device runtime (no metadata). */
static char *dp_source(unsigned long run, int sample) {
    static const char *fmt = "// kernjit bench jit: dynamic parallelism, run %lu sample %d\n"
                             "__global__ void child(int *v) { v[threadIdx.x] += 1; }\n"
                             "extern \"C\" __global__ void parent(int *v) {\n"
                             "    if (threadIdx.x == 0) child<<<1, 32, 0, cudaStreamFireAndForget>>>(v);\n"
                             "}\n";
    return cli_format(fmt, run, sample);
}

/* The rows beyond the small kernel: each a median of samples, or -1 when it could not be measured. */
typedef struct more_rows {
    double reduce_raw_ms, reduce_ms;  /* the built-in reduction: raw NVRTC, kernjit cold */
    double dp_compile_ms, dp_link_ms; /* compile and link of a kernel that launches kernels */
    double first_process_ms;          /* a new process compiling the reduction into an empty cache */
    double all_ms, all_whole_ms;      /* compile reduce --all in a new process, empty cache; whole files */
    /* a new process's first kj_reduce (time to result, and from the start of its input): the whole
     * file compiled (as kernjit did before compiling entries alone), the entry alone, and the entry
     * alone prefetched before the input is made */
    double first_whole_ms, first_alone_ms, first_prefetch_ms;
    double first_whole_total_ms, first_alone_total_ms, first_prefetch_total_ms;
    /* the same first kj_reduce with a seed holding its kernel (the entry alone's cache, as a seed) */
    double first_seeded_ms, first_seeded_total_ms;
    /* kernjit seed of the built-ins' defaults: three targets in worker processes, one target in one */
    double seed_three_ms, seed_once_ms;
} more_rows;

/* A folder with the built-in reduction's source marked `whole-file` (and its header), which wins
 * over the built-in on KERNJIT_PATH: the compiles kernjit made before it compiled entries alone, for
 * the rows that compare with them. 0, or -1 when the sources are not there. */
static int write_whole_reduce(const char *dir) {
    char *src = read_kernel_file("reduce.cu"), *common = read_kernel_file("common.cuh");
    int ok = src && common && (mkdir(dir, 0700) == 0 || errno == EEXIST);
    const char *names[] = {"reduce.cu", "common.cuh"};
    for (int i = 0; i < 2 && ok; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        ok = f && fprintf(f, "%s%s", i ? "" : "//@kernjit whole-file\n", i ? common : src) > 0;
        if (f && fclose(f) != 0) ok = 0;
    }
    free(src), free(common);
    return ok ? 0 : -1;
}

/* Sets KERNJIT_PATH to value (NULL: unset). */
static void set_search_path(const char *value) {
    if (value) setenv("KERNJIT_PATH", value, 1);
    else unsetenv("KERNJIT_PATH");
}

/* One first-kj_reduce child in a new process on an empty cache of its own (DIR/TAG-I), with the seed
 * `seeds` (NULL: none): its times from the call and from the start of its input. 0, or -1 when it
 * failed or its kernel came from elsewhere than `want` (compiled, or the seed). */
static int first_reduce(const char *dir, const char *tag, const char *mode, uint64_t i, const char *seeds,
                        kj_origin want, double *call_ms, double *total_ms) {
    char sub[4200], buf[128];
    int origin = -1;
    snprintf(sub, sizeof sub, "%s/%s-%llu", dir, tag, (unsigned long long)i);
    char *args[] = {"--child-reduce", sub, (char *)mode, seeds ? "--seed" : NULL, (char *)seeds, NULL};
    return spawn_reading(args, buf, sizeof buf) == 0 && sscanf(buf, "%lf %lf %d", call_ms, total_ms, &origin) == 3 &&
                   origin == (int)want
               ? 0
               : -1;
}

static double median_or_fail(double *v, size_t n, int ok) { return ok ? cli_median(v, n) : -1; }

/* Progress (cli_progress): sample i of n of one row. */
static void step(const char *row, uint64_t i, uint64_t n) {
    cli_progress("bench jit", row, (size_t)i + 1, (size_t)n, NULL);
}

/* `repeat` disk hits, each in a new process: of the small in-memory kernel (file NULL) or of the
 * kernel file with its headers. An exit code. */
static int disk_hits(const char *dir, unsigned long run, const char *file, uint64_t repeat, double *ms) {
    for (uint64_t i = 0; i < repeat; i++) {
        int origin = -1;
        step(file ? "disk hits, 5 headers" : "disk hits, new process", i, repeat);
        if (spawn_child(dir, run, file, NULL, &ms[i], &origin) != 0 || origin != KJ_ORIGIN_DISK)
            return cli_error("bench jit", "the disk-hit child process%s failed", file ? " (kernel with headers)" : "");
    }
    return EXIT_OK;
}

/* `repeat` seed hits of the small kernel, each in a new process whose cache (DIR/seed-hits) lacks it:
 * a seed folder (DIR/seed-small) holds it, built as kernjit seed builds one (kj_compile into a runtime
 * whose cache is the seed). An exit code. */
static int seed_hits(const char *dir, unsigned long run, const char *arch, uint64_t repeat, double *ms) {
    char seed[4200], empty[4200];
    snprintf(seed, sizeof seed, "%s/seed-small", dir);
    snprintf(empty, sizeof empty, "%s/seed-hits", dir);
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.arch = arch;
    o.cache_dir = seed;
    o.seed_dirs = "";
    kj_runtime *maker;
    kj_status s = kj_runtime_create(&o, &maker);
    if (s != KJ_OK) return cli_fail("bench jit", s);
    char *src = source_for(run, 0);
    double ignored;
    kj_origin origin;
    s = kernjit_get(maker, src, 0, &ignored, &origin);
    free(src);
    kj_runtime_destroy(maker);
    if (s != KJ_OK) return cli_fail("bench jit", s);
    for (uint64_t i = 0; i < repeat; i++) {
        int got = -1;
        step("seed hits, new process", i, repeat);
        if (spawn_child(empty, run, NULL, seed, &ms[i], &got) != 0 || got != KJ_ORIGIN_SEED)
            return cli_error("bench jit", "the seed-hit child process failed, or did not load from the seed");
    }
    return EXIT_OK;
}

/* Writes the disk-hit kernel's cubin (the very bytes of its cache entry, after kernjit's header) to
 * DIR/plain.cubin and loads it with the driver alone in `repeat` new processes. An exit code. */
static int driver_floor(kj_runtime *rt, const char *dir, unsigned long run, uint64_t repeat, double *ms) {
    char *src = source_for(run, 0), path[4200];
    kj_request req = {.size = sizeof(kj_request), .kernel = "bench.cu", .source_text = src, .entry = "saxpy"};
    void *bin = NULL;
    size_t size = 0;
    kj_status s = kj_emit(rt, &req, KJ_EMIT_CUBIN, &bin, &size, NULL);
    free(src);
    if (s != KJ_OK) return cli_fail("bench jit", s);
    snprintf(path, sizeof path, "%s/plain.cubin", dir);
    int rc = cli_write_file("bench jit", path, bin, size);
    kj_emit_free(bin);
    if (rc != EXIT_OK) return rc;
    for (uint64_t i = 0; i < repeat; i++) {
        step("the driver alone, new process", i, repeat);
        if (spawn_driver_child(path, &ms[i]) != 0)
            return cli_error("bench jit", "the driver-alone child process failed");
    }
    return EXIT_OK;
}

static int measure_more(kj_runtime *rt, const char *dir, const char *arch, unsigned long run, uint64_t repeat,
                        int device, const char *search_path, more_rows *m) {
    double *a = calloc(repeat, sizeof *a), *b = calloc(repeat, sizeof *b);
    if (!a || !b) return free(a), free(b), -1;
    /* the built-in reduction, raw and through kernjit (a memory-only runtime: every call compiles) */
    char *src = read_kernel_file("reduce.cu"), *common = read_kernel_file("common.cuh");
    int ok = src && common;
    kj_runtime *mem = NULL;
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.arch = arch;
    o.cache_mode = KJ_CACHE_MEMORY_ONLY;
    ok = ok && kj_runtime_create(&o, &mem) == KJ_OK;
    for (uint64_t i = 0; i < repeat && ok; i++) {
        step("reduce, cold and raw", i, repeat);
        kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        double t0 = cli_now_ms();
        ok = kj_compile(mem, &req, &r) == KJ_OK;
        b[i] = cli_now_ms() - t0;
        ok = ok && raw_nvrtc_reduce_ms(src, common, arch, &a[i]) == 0;
    }
    m->reduce_raw_ms = median_or_fail(a, repeat, ok);
    m->reduce_ms = median_or_fail(b, repeat, ok);
    kj_runtime_destroy(mem);
    free(src), free(common);
    /* dynamic parallelism: compile + link, each sample its own source */
    ok = 1;
    for (uint64_t i = 0; i < repeat && ok; i++) {
        step("dynamic parallelism", i, repeat);
        char *dp = dp_source(run, (int)i);
        kj_request req = {.size = sizeof(kj_request), .kernel = "dp.cu", .source_text = dp, .entry = "parent"};
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        ok = dp && kj_compile(rt, &req, &r) == KJ_OK && r.linked && !r.cache_hit;
        a[i] = r.compile_ms, b[i] = r.link_ms;
        free(dp);
    }
    m->dp_compile_ms = median_or_fail(a, repeat, ok);
    m->dp_link_ms = median_or_fail(b, repeat, ok);
    /* a user's first call, and an offline build: new processes on empty caches */
    char sub[4200];
    ok = 1;
    for (uint64_t i = 0; i < repeat && ok; i++) {
        step("first call, new process", i, repeat);
        snprintf(sub, sizeof sub, "%s/first-%llu", dir, (unsigned long long)i);
        char *args[] = {"compile", "reduce", "--arch", (char *)arch, NULL};
        ok = spawn_timed(sub, args, &a[i]) == 0;
    }
    m->first_process_ms = median_or_fail(a, repeat, ok);
    /* compile --all and the first kj_reduce, with the whole file (KERNJIT_PATH) and with entries alone.
     * Each sample runs every form in turn: this host's compile times drift by a third from one
     * minute to the next, and a drift then falls on all forms alike rather than on one block. */
    char whole[4200];
    snprintf(whole, sizeof whole, "%s/whole", dir);
    int have_whole = write_whole_reduce(whole) == 0;
    size_t all_samples = repeat < 3 ? repeat : 3;
    ok = 1;
    for (size_t i = 0; i < all_samples && ok; i++) {
        step("compile reduce --all, new process", i, all_samples);
        for (int w = have_whole ? 1 : 0; w >= 0 && ok; w--) {
            set_search_path(w ? whole : NULL);
            snprintf(sub, sizeof sub, "%s/all-%d-%zu", dir, w, i);
            char *args[] = {"compile", "reduce", "--all", "--arch", (char *)arch, NULL};
            ok = spawn_timed(sub, args, w ? &b[i] : &a[i]) == 0;
        }
    }
    m->all_ms = median_or_fail(a, all_samples, ok);
    m->all_whole_ms = have_whole ? median_or_fail(b, all_samples, ok) : -1;
    m->first_whole_ms = m->first_alone_ms = m->first_prefetch_ms = m->first_seeded_ms = -1;
    if (device) {
        struct {
            const char *tag, *mode, *path;
            double *call_ms, *total_ms;
        } forms[] = {{"first-whole", "plain", whole, &m->first_whole_ms, &m->first_whole_total_ms},
                     {"first-alone", "plain", NULL, &m->first_alone_ms, &m->first_alone_total_ms},
                     {"first-prefetch", "prefetch", NULL, &m->first_prefetch_ms, &m->first_prefetch_total_ms}};
        enum { FORMS = sizeof forms / sizeof forms[0] };
        double *call = calloc(FORMS * repeat, sizeof *call), *total = calloc(FORMS * repeat, sizeof *total);
        ok = call && total;
        for (uint64_t i = 0; i < repeat && ok; i++) {
            step("first kj_reduce, new process", i, repeat);
            for (size_t f = have_whole ? 0 : 1; f < FORMS && ok; f++) {
                set_search_path(forms[f].path);
                ok = first_reduce(dir, forms[f].tag, forms[f].mode, i, NULL, KJ_ORIGIN_COMPILED, &call[f * repeat + i],
                                  &total[f * repeat + i]) == 0;
            }
        }
        for (size_t f = have_whole ? 0 : 1; f < FORMS; f++) {
            *forms[f].call_ms = median_or_fail(call + f * repeat, repeat, ok);
            *forms[f].total_ms = median_or_fail(total + f * repeat, repeat, ok);
        }
        /* with a seed that has its kernel: the entry alone's first cache holds exactly what kj_reduce
         * compiled, in the layout of a seed */
        set_search_path(NULL); /* the built-in, as the entry alone compiled it */
        char seed[4200];
        snprintf(seed, sizeof seed, "%s/first-alone-0", dir);
        for (uint64_t i = 0; i < repeat && ok; i++) {
            step("first kj_reduce with a seed, new process", i, repeat);
            ok = first_reduce(dir, "first-seeded", "plain", i, seed, KJ_ORIGIN_SEED, &call[i], &total[i]) == 0;
        }
        m->first_seeded_ms = median_or_fail(call, repeat, ok);
        m->first_seeded_total_ms = median_or_fail(total, repeat, ok);
        free(call), free(total);
    }
    /* kernjit seed of the built-ins' defaults: for three targets (worker processes, as it runs by
     * default) against each compiled once (one target, in one process); new folders, one run each.
     * About a hundred compiles: on the machine with the device, where the other goals are measured
     * (without one, bench jit stays short enough for the tests that run it) */
    m->seed_three_ms = m->seed_once_ms = -1;
    if (device) {
        char three[4200], once[4200];
        snprintf(three, sizeof three, "%s/seed-three", dir);
        snprintf(once, sizeof once, "%s/seed-once", dir);
        char *three_args[] = {"seed", three, "--arch", SEED_THREE_TARGETS, NULL};
        char *once_args[] = {"seed", once, "--arch", (char *)arch, "--threads", "1", NULL};
        step("kernjit seed, built-ins", 0, 2);
        if (spawn_timed(dir, once_args, &m->seed_once_ms) != 0) m->seed_once_ms = -1;
        step("kernjit seed, built-ins", 1, 2);
        if (spawn_timed(dir, three_args, &m->seed_three_ms) != 0) m->seed_three_ms = -1;
    }
    set_search_path(search_path);
    free(a), free(b);
    return 0;
}

/* The end of a report line: with --goals (scripts/gpu-check), the project's own target for the figure
 * and whether it was met; the developers' yardstick, which a user has nothing to do with. */
static void goal(int goals, double value, double target, const char *unit) {
    if (goals) printf("   (goal <= %g%s: %s)", target, unit, value <= target ? "met" : "MISSED");
    printf("\n");
}

/* The command line, as cli_getopt reads it. */
typedef struct line {
    uint64_t repeat;
    int json, is_child, is_reduce_child, is_driver_child, goals;
    const char *child_seeds; /* a child's seed folder (--seed) */
    int count;
    char **words; /* a child's arguments */
} line;

static int option(void *user, int c, char *arg) {
    line *l = user;
    switch (c) {
    case 'j': l->json = 1; break;
    case 'S': l->child_seeds = arg; break;
    case 'c': l->is_child = 1; break;
    case 'R': l->is_reduce_child = 1; break;
    case 'D': l->is_driver_child = 1; break;
    case 'g': l->goals = 1; break;
    case 'G': return cli_device_arg("bench jit", arg);
    case 'r': return cli_count_arg("bench jit", "--repeat", arg, 1, 1000, &l->repeat);
    case 'h': help(); return CLI_DONE;
    }
    return EXIT_OK;
}

static int words(void *user, int count, char **args) {
    line *l = user;
    l->count = count;
    l->words = args;
    return EXIT_OK;
}

int bench_jit(int argc, char **argv) {
    static const cli_option_set set = {"repeat=r: json=j --child=c help=h --child-reduce=R --device=G: "
                                       "--child-driver=D --seed=S: --goals=g",
                                       option, 0, words};
    line l = {.repeat = 7};
    int rc = cli_getopt("bench jit", argc, argv, &set, 1, &l);
    if (rc != EXIT_OK) return rc == CLI_DONE ? EXIT_OK : rc;
    uint64_t repeat = l.repeat;
    int json = l.json, goals = l.goals;
    const char *child_seeds = l.child_seeds;
    char **w = l.words;
    if (l.is_child) return l.count == 2 || l.count == 3 ? child(w[0], w[1], w[2], child_seeds) : EXIT_USAGE;
    if (l.is_reduce_child) return l.count == 2 ? child_reduce(w[0], w[1], child_seeds) : EXIT_USAGE;
    if (child_seeds) return cli_usage("bench jit", "--seed is for the benchmark's child processes");
    if (l.is_driver_child) return l.count == 2 ? child_driver(w[0], w[1]) : EXIT_USAGE;
    if (l.count) return cli_usage("bench jit", "unexpected argument '%s'", w[0]);

    /* NVRTC keeps compiled code in the driver's cache where there is a driver, keyed so that sources
     * differing in comments alone hit: every compile below must be cold, for both sides */
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    char dir[] = "/tmp/kernjit-bench-jit-XXXXXX";
    if (!mkdtemp(dir)) return cli_error("bench jit", "cannot create a temporary cache folder: %s", strerror(errno));
    kj_runtime *rt;
    kj_status s = open_runtime(dir, NULL, &rt);
    if (s != KJ_OK) {
        bench_remove_tree(dir);
        return cli_fail("bench jit", s);
    }
    int device = kj_runtime_has_device(rt);
    const char *arch = kj_runtime_arch(rt);
    unsigned long run = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
    double *raw = calloc(repeat, sizeof *raw), *cold = calloc(repeat, sizeof *cold),
           *disk = calloc(repeat, sizeof *disk);
    double *loaded = calloc(repeat, sizeof *loaded), *disk_headers = calloc(repeat, sizeof *disk_headers);
    double *driver = calloc(repeat, sizeof *driver), *seeded = calloc(repeat, sizeof *seeded);
    double mem[10];
    rc = EXIT_OK;
    if (!raw || !cold || !disk || !loaded || !disk_headers || !driver || !seeded) {
        rc = cli_error("bench jit", "out of memory");
        goto done;
    }

    /* warm NVRTC's own start-up (loading its builtins) so neither side pays it */
    char *warm = source_for(run, -1);
    double ignored;
    raw_nvrtc_ms(warm, arch, &ignored);
    free(warm);

    for (uint64_t i = 0; i < repeat; i++) {
        step("cold compiles", i, repeat);
        char *src = source_for(run, (int)i);
        kj_origin origin;
        /* alternate which goes first, so that neither gains from the other's warm caches */
        int raw_first = (i % 2) == 0;
        if (raw_first && raw_nvrtc_ms(src, arch, &raw[i]) != 0) rc = cli_error("bench jit", "raw NVRTC failed");
        if (rc == EXIT_OK && (s = kernjit_get(rt, src, 0, &cold[i], &origin)) != KJ_OK) rc = cli_fail("bench jit", s);
        if (rc == EXIT_OK && origin != KJ_ORIGIN_COMPILED) rc = cli_error("bench jit", "expected a cold compile");
        if (rc == EXIT_OK && !raw_first && raw_nvrtc_ms(src, arch, &raw[i]) != 0)
            rc = cli_error("bench jit", "raw NVRTC failed");
        free(src);
        /* the whole cold path to a loaded kernel, on a source of its own */
        src = source_for(run, 1000 + (int)i);
        if (rc == EXIT_OK && device && (s = kernjit_get(rt, src, 1, &loaded[i], &origin)) != KJ_OK)
            rc = cli_fail("bench jit", s);
        free(src);
        if (rc != EXIT_OK) goto done;
    }
    if ((rc = disk_hits(dir, run, NULL, repeat, disk)) != EXIT_OK) goto done;
    /* the floor under that hit: the same cubin, loaded by the driver alone in new processes */
    if (device && (rc = driver_floor(rt, dir, run, repeat, driver)) != EXIT_OK) goto done;
    /* the same kernel from a seed, the disk cache empty */
    if ((rc = seed_hits(dir, run, arch, repeat, seeded)) != EXIT_OK) goto done;
    /* a kernel file with five headers: compiled once here, then hit in new processes, which read the
     * file and every header again, hash them, and verify and load the entry */
    char headers_dir[4200];
    snprintf(headers_dir, sizeof headers_dir, "%s/headers", dir);
    const char *headers_kernel = mkdir(headers_dir, 0700) == 0 ? write_header_program(dir, run) : NULL;
    kj_request headers_req = {.size = sizeof(kj_request), .kernel = headers_kernel};
    double ignored_ms;
    kj_origin headers_origin;
    if (!headers_kernel || (s = kernjit_get_request(rt, &headers_req, 0, &ignored_ms, &headers_origin)) != KJ_OK) {
        rc = headers_kernel ? cli_fail("bench jit", s) : cli_error("bench jit", "cannot write the kernel with headers");
        goto done;
    }
    if ((rc = disk_hits(dir, run, headers_kernel, repeat, disk_headers)) != EXIT_OK) goto done;
    double mem_us = 0;
    if (device) {
        char *src = source_for(run, 0);
        kj_request req = {.size = sizeof(kj_request), .kernel = "bench.cu", .source_text = src, .entry = "saxpy"};
        enum { CALLS = 100000 };
        /* this source was compiled but never loaded: the first get loads it from the disk cache */
        kj_kernel *first;
        kj_origin first_origin;
        if ((s = kj_kernel_get(rt, &req, &first, &first_origin)) != KJ_OK) rc = cli_fail("bench jit", s);
        for (int b = 0; b < 10 && rc == EXIT_OK; b++) {
            double t0 = cli_now_ms();
            for (int i = 0; i < CALLS; i++) {
                kj_kernel *k;
                kj_origin o;
                if (kj_kernel_get(rt, &req, &k, &o) != KJ_OK || o != KJ_ORIGIN_MEMORY) {
                    rc = cli_error("bench jit", "expected a memory hit");
                    break;
                }
            }
            mem[b] = (cli_now_ms() - t0) * 1e3 / CALLS;
        }
        free(src);
        mem_us = cli_median(mem, 10);
        if (rc != EXIT_OK) goto done;
    }
    more_rows more;
    const char *path_env = getenv("KERNJIT_PATH");
    char *search_path = path_env ? strdup(path_env) : NULL;
    int failed = measure_more(rt, dir, arch, run, repeat, device, search_path, &more);
    free(search_path);
    if (failed) {
        rc = cli_error("bench jit", "out of memory");
        goto done;
    }
    cli_progress_end();
    double raw_ms = cli_median(raw, repeat), cold_ms = cli_median(cold, repeat), disk_ms = cli_median(disk, repeat);
    double disk_headers_ms = cli_median(disk_headers, repeat), seed_ms = cli_median(seeded, repeat);
    /* the goals that need a device; the seeding ratio needs both runs */
    double seeded_speedup = more.first_seeded_ms > 0 && more.first_alone_ms > 0
                                ? more.first_alone_ms / more.first_seeded_ms
                                : NAN;
    double seed_ratio = more.seed_three_ms > 0 && more.seed_once_ms > 0 ? more.seed_three_ms / more.seed_once_ms : NAN;
    double loaded_ms = device ? cli_median(loaded, repeat) : 0, driver_ms = device ? cli_median(driver, repeat) : NAN;
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    const char *device_name = device && kj_runtime_device(rt, &d) == KJ_OK ? d.name : NULL;
    if (json) {
        json_begin_object();
        /* what was not measured without a device is null (NAN) */
        json_string("device", device_name); /* null without a device: kept out of the checked format */
        json_fields("arch=%s samples=%" PRIu64 " raw_nvrtc_ms=%g cold_ms=%g cold_over_raw=%g cold_loaded_ms=%g "
                    "disk_hit_ms=%g driver_alone_load_ms=%g disk_hit_goal_ms=%g disk_hit_5_headers_ms=%g "
                    "disk_hit_5_headers_goal_ms=%g "
                    "memory_hit_us=%g memory_hit_goal_us=%g driver_cache_disabled?=%d",
                    arch, repeat, raw_ms, cold_ms, cold_ms / raw_ms, device ? loaded_ms : NAN, disk_ms, driver_ms,
                    SMALL_DISK_HIT_GOAL_MS, disk_headers_ms, DISK_HIT_GOAL_MS, device ? mem_us : NAN,
                    MEMORY_HIT_GOAL_US, 1);
        json_fields("reduce_raw_nvrtc_ms=%g reduce_cold_ms=%g dp_compile_ms=%g dp_link_ms=%g first_process_ms=%g "
                    "compile_all_reduce_ms=%g compile_all_reduce_whole_files_ms=%g",
                    more.reduce_raw_ms, more.reduce_ms, more.dp_compile_ms, more.dp_link_ms, more.first_process_ms,
                    more.all_ms, more.all_whole_ms);
        json_fields("first_reduce_whole_file_ms=%g first_reduce_entry_alone_ms=%g first_reduce_prefetched_ms=%g "
                    "first_reduce_whole_file_from_input_ms=%g first_reduce_entry_alone_from_input_ms=%g "
                    "first_reduce_prefetched_from_input_ms=%g",
                    device ? more.first_whole_ms : NAN, device ? more.first_alone_ms : NAN,
                    device ? more.first_prefetch_ms : NAN, device ? more.first_whole_total_ms : NAN,
                    device ? more.first_alone_total_ms : NAN, device ? more.first_prefetch_total_ms : NAN);
        json_fields("seed_hit_ms=%g seed_hit_over_driver_goal_ms=%g first_reduce_seeded_ms=%g "
                    "first_reduce_seeded_from_input_ms=%g first_reduce_seeded_goal_ms=%g seeded_speedup=%g "
                    "seeded_speedup_goal=%g seed_targets=%s seed_three_targets_ms=%g seed_once_each_ms=%g "
                    "seed_three_over_once=%g seed_three_over_once_goal=%g",
                    seed_ms, SEED_HIT_OVER_DRIVER_GOAL_MS, device ? more.first_seeded_ms : NAN,
                    device ? more.first_seeded_total_ms : NAN, SEEDED_REDUCE_GOAL_MS, device ? seeded_speedup : NAN,
                    SEEDED_REDUCE_GOAL_SPEEDUP, SEED_THREE_TARGETS, more.seed_three_ms > 0 ? more.seed_three_ms : NAN,
                    more.seed_once_ms > 0 ? more.seed_once_ms : NAN, seed_ratio, SEED_THREE_TARGETS_GOAL_RATIO);
        json_end_object();
    } else {
        printf("bench jit: %s, target %s, medians of %llu samples; every compile cold (CUDA_CACHE_DISABLE=1: the\n"
               "driver's compute cache is off for NVRTC and kernjit alike)\n",
               device_name ? device_name : "no CUDA device", arch, (unsigned long long)repeat);
        printf("  %-46s %10.2f ms\n", "raw NVRTC (create, compile, get cubin)", raw_ms);
        printf("  %-46s %10.2f ms   %.3fx raw NVRTC\n", "kernjit cold compile (key, compile, store)", cold_ms,
               cold_ms / raw_ms);
        if (device)
            printf("  %-46s %10.2f ms   %.3fx raw NVRTC\n", "kernjit cold, loaded (compile, store, load)", loaded_ms,
                   loaded_ms / raw_ms);
        printf("  %-46s %10.3f ms",
               device ? "kernjit disk hit, new process (read, load)" : "kernjit disk hit, new process (read)", disk_ms);
        goal(goals, disk_ms, SMALL_DISK_HIT_GOAL_MS, device ? " ms" : " ms with the load");
        if (device)
            printf("  %-46s %10.3f ms   (the floor under it: the same cubin, no kernjit)\n",
                   "the driver alone, new process (read, load)", driver_ms);
        if (device) {
            printf("  %-46s %10.3f ms", "kernjit seed hit, new process (read, load)", seed_ms);
            goal(goals, seed_ms, driver_ms + SEED_HIT_OVER_DRIVER_GOAL_MS, " ms (the driver alone + 0.03 ms)");
        } else {
            printf("  %-46s %10.3f ms\n", "kernjit seed hit, new process (read)", seed_ms);
        }
        printf("  %-46s %10.3f ms",
               device ? "disk hit, 5 user headers (read, hash, load)" : "disk hit, 5 user headers (read, hash)",
               disk_headers_ms);
        goal(goals, disk_headers_ms, DISK_HIT_GOAL_MS, " ms");
        if (device) {
            printf("  %-46s %10.3f us", "kernjit memory hit", mem_us);
            goal(goals, mem_us, MEMORY_HIT_GOAL_US, " us");
        } else {
            printf("  %-46s %10s\n", "kernjit memory hit", "(no device)");
        }
        if (more.reduce_ms >= 0) {
            printf("  %-46s %10.2f ms\n", "reduce (built-in): raw NVRTC, same source", more.reduce_raw_ms);
            printf("  %-46s %10.2f ms   %.3fx raw NVRTC", "reduce (built-in): kernjit, its entry", more.reduce_ms,
                   more.reduce_ms / more.reduce_raw_ms);
            goal(goals, more.reduce_ms / more.reduce_raw_ms, 0.8, "");
        } else {
            printf("  %-46s %10s\n", "reduce (built-in) against raw NVRTC", "(kernels_src not found)");
        }
        printf("  %-46s %10.2f ms + %.2f ms link\n", "dynamic parallelism: compile + link", more.dp_compile_ms,
               more.dp_link_ms);
        printf("  %-46s %10.1f ms\n", "first call: new process, compile reduce", more.first_process_ms);
        if (more.all_whole_ms > 0)
            printf("  %-46s %10.1f ms\n", "compile reduce --all, whole files (as before)", more.all_whole_ms);
        printf("  %-46s %10.1f ms", "compile reduce --all, new process, empty cache", more.all_ms);
        if (more.all_whole_ms > 0) {
            printf("   %.3fx whole files", more.all_ms / more.all_whole_ms);
            goal(goals, more.all_ms / more.all_whole_ms, 0.6, "");
        } else {
            printf("\n");
        }
        if (more.first_whole_ms > 0) {
            printf("  first kj_reduce (2^20 f32) in a new process, to its result (and from the start of its input):\n");
            printf("  %-46s %10.1f ms   (%.1f ms)\n", "  whole file compiled (as before)", more.first_whole_ms,
                   more.first_whole_total_ms);
            printf("  %-46s %10.1f ms   (%.1f ms)   %.3fx whole file\n", "  entry alone", more.first_alone_ms,
                   more.first_alone_total_ms, more.first_alone_ms / more.first_whole_ms);
            printf("  %-46s %10.1f ms   (%.1f ms)   %.3fx whole file", "  entry alone, prefetched before the input",
                   more.first_prefetch_ms, more.first_prefetch_total_ms, more.first_prefetch_ms / more.first_whole_ms);
            goal(goals, more.first_prefetch_ms / more.first_whole_ms, 0.5, "");
        }
        if (more.first_seeded_ms > 0) {
            printf("  %-46s %10.2f ms   (%.1f ms)   %.0fx faster than its compile", "  from a seed that has its kernel",
                   more.first_seeded_ms, more.first_seeded_total_ms, seeded_speedup);
            if (goals)
                printf("   (goal <= %.0f ms and >= %.0fx: %s)", SEEDED_REDUCE_GOAL_MS, SEEDED_REDUCE_GOAL_SPEEDUP,
                       more.first_seeded_ms <= SEEDED_REDUCE_GOAL_MS && seeded_speedup >= SEEDED_REDUCE_GOAL_SPEEDUP
                           ? "met"
                           : "MISSED");
            printf("\n");
        }
        if (more.seed_three_ms > 0 && more.seed_once_ms > 0) {
            printf("  %-46s %10.1f ms\n", "kernjit seed, built-ins once each (1 process)", more.seed_once_ms);
            printf("  %-46s %10.1f ms   %.2fx once each", "kernjit seed, built-ins for " SEED_THREE_TARGETS,
                   more.seed_three_ms, seed_ratio);
            goal(goals, seed_ratio, SEED_THREE_TARGETS_GOAL_RATIO, "");
        } else {
            printf("  %-46s %10s\n", "kernjit seed of the built-ins",
                   device ? "(FAILED: run it to see why)" : "(timed with a device)");
        }
    }
done:
    free(raw);
    free(cold);
    free(disk);
    free(loaded);
    free(disk_headers);
    free(driver);
    free(seeded);
    kj_runtime_destroy(rt);
    bench_remove_tree(dir);
    return rc;
}
