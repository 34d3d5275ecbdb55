/* examples/seeded: a host program that carries its kernel built ahead of time.
 *
 * Beside the program lie the kernel's source (saxpy.cu) and a seed folder (seed/, made by `kernjit
 * seed` when the program is built, for the GPUs it supports). The program lists that folder in
 * kj_runtime_options.seed_dirs, so its first kj_kernel_get in a new process loads the binary from the
 * seed (KJ_ORIGIN_SEED) instead of compiling it: nothing is compiled, and nothing is copied into the
 * user's cache. On a GPU that the seed does not list, the same call compiles the kernel, as always.
 * Then it runs saxpy and checks it against the CPU.
 *
 * usage: seeded [--unlisted ARCH] [--no-launch] [--test]
 *   --unlisted ARCH  also prepare the kernel for ARCH, a target the seed does not list (kj_compile):
 *                    the other path, a JIT compile
 *   --no-launch      get the kernel, do not run it (a stand-in driver, with no GPU to run on)
 *   --test           exit 1 unless the first kernel came from the seed and the --unlisted one did not
 * Without a GPU it prepares the kernel for the default target (sm_90) through the same tiers. */
#include <kernjit.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N (1u << 20)

#define KJ_CHECK(call)                                                                                                 \
    do {                                                                                                               \
        kj_status s_ = (call);                                                                                         \
        if (s_ != KJ_OK) {                                                                                             \
            fprintf(stderr, "seeded: %s: %s\n%s\n", #call, kj_status_name(s_), kj_last_error());                       \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* NAME in the program's own folder (malloc'd): where the program's files lie, wherever it is run from. */
static char *beside_program(const char *name) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    size_t size = (size_t)(slash - exe) + strlen(name) + 2;
    char *path = malloc(size);
    if (path) snprintf(path, size, "%.*s/%s", (int)(slash - exe), exe, name);
    return path;
}

static const char *origin_text(kj_origin o) {
    switch (o) {
    case KJ_ORIGIN_SEED: return "from the seed, built ahead of time (no compile)";
    case KJ_ORIGIN_COMPILED: return "compiled now (a target the seed does not list)";
    case KJ_ORIGIN_DISK: return "from the disk cache (compiled by an earlier run)";
    case KJ_ORIGIN_REMOTE: return "from the remote cache";
    default: return "already loaded";
    }
}

/* y = a x + y on the device, checked against the CPU: 0 when right. */
static int run_saxpy(kj_runtime *rt, kj_kernel *k) {
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *got = malloc(N * sizeof *got);
    if (!x || !y || !got) return fprintf(stderr, "seeded: out of memory\n"), 1;
    for (unsigned i = 0; i < N; i++) x[i] = (float)(i % 1000) * 0.5f, y[i] = (float)(i % 7);
    kj_devptr dx, dy;
    KJ_CHECK(kj_mem_alloc(rt, N * sizeof *x, &dx));
    KJ_CHECK(kj_mem_alloc(rt, N * sizeof *y, &dy));
    KJ_CHECK(kj_memcpy_htod(rt, dx, x, N * sizeof *x));
    KJ_CHECK(kj_memcpy_htod(rt, dy, y, N * sizeof *y));
    float a = 2.0f;
    unsigned long long n = N;
    void *args[] = {&a, &dx, &dy, &n};
    kj_launch_config c = KJ_LAUNCH_CONFIG_INIT;
    c.grid[0] = (N + 255) / 256;
    c.block[0] = 256;
    KJ_CHECK(kj_kernel_launch(k, &c, args));
    KJ_CHECK(kj_memcpy_dtoh(rt, got, dy, N * sizeof *got));
    unsigned wrong = 0;
    for (unsigned i = 0; i < N; i++) wrong += got[i] != a * x[i] + y[i];
    printf("saxpy of %u elements: %s\n", N, wrong ? "WRONG" : "matches the CPU");
    kj_mem_free(rt, dx);
    kj_mem_free(rt, dy);
    free(x), free(y), free(got);
    return wrong != 0;
}

int main(int argc, char **argv) {
    const char *unlisted = NULL;
    int test = 0, launch = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--test") == 0) test = 1;
        else if (strcmp(argv[i], "--no-launch") == 0) launch = 0;
        else if (strcmp(argv[i], "--unlisted") == 0 && i + 1 < argc) unlisted = argv[++i];
        else return fprintf(stderr, "usage: seeded [--unlisted ARCH] [--no-launch] [--test]\n"), 2;
    }
    char *seed = beside_program("seed"), *kernel = beside_program("saxpy.cu");
    if (!seed || !kernel) return fprintf(stderr, "seeded: cannot tell where the program lies\n"), 1;

    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.seed_dirs = seed; /* the program's own seed; the install's is searched after it */
    kj_runtime *rt;
    KJ_CHECK(kj_runtime_create(&o, &rt));
    kj_request req = KJ_REQUEST_INIT;
    req.kernel = kernel;
    req.entry = "saxpy";

    /* the first kernel of the process: from the seed when it lists this GPU */
    kj_origin first;
    kj_kernel *k = NULL;
    if (kj_runtime_has_device(rt)) {
        KJ_CHECK(kj_kernel_get(rt, &req, &k, &first));
    } else {
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        KJ_CHECK(kj_compile(rt, &req, &r));
        first = r.origin;
    }
    kj_stats st = KJ_STATS_INIT;
    KJ_CHECK(kj_runtime_stats(rt, &st));
    printf("saxpy for %s%s: %s; %llu compiles, %llu seed hits\n", kj_runtime_arch(rt),
           kj_runtime_has_device(rt) ? "" : " (no GPU: prepared, not loaded)", origin_text(first),
           (unsigned long long)st.compiles, (unsigned long long)st.seed_hits);
    int failed = test && first != KJ_ORIGIN_SEED;
    if (failed) fprintf(stderr, "seeded: the first kernel did not come from the seed %s\n", seed);
    if (k && launch) failed |= run_saxpy(rt, k);

    /* a GPU the seed does not list: the same request compiles (or finds an earlier run's compile) */
    if (unlisted) {
        kj_compile_result r = KJ_COMPILE_RESULT_INIT;
        req.arch = unlisted;
        KJ_CHECK(kj_compile(rt, &req, &r));
        printf("saxpy for %s: %s\n", unlisted, origin_text(r.origin));
        if (test && r.origin == KJ_ORIGIN_SEED) {
            fprintf(stderr, "seeded: %s is not among the seed's targets, yet it came from the seed\n", unlisted);
            failed = 1;
        }
    }
    kj_runtime_destroy(rt);
    free(seed);
    free(kernel);
    return failed;
}
