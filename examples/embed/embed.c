/* examples/embed: a host program that embeds kernjit.
 *
 * The program owns its CUDA setup, through the CUDA runtime API as most CUDA programs do: it picks
 * the device, allocates the device memory and creates the stream. It asks kernjit for two things and
 * hands it that memory and that stream:
 *   1. a built-in kernel family: kj_reduce sums the program's array on the program's stream;
 *   2. its own kernel, scale.cu next to this file, compiled with -D macros (ELEM_TYPE, FACTOR,
 *      BLOCK_SIZE) and launched on the program's stream with kj_kernel_launch.
 * Both results are checked against the CPU.
 *
 * The CUDA runtime API works in the device's primary context, which is also what a kj_runtime uses
 * by default, so pointers and streams pass between the two as they are: a device pointer becomes a
 * kj_devptr through uintptr_t, a cudaStream_t is a kj_stream by a cast. (A program that creates its
 * own context with the driver API passes it as kj_runtime_options.cu_context instead.)
 *
 * usage: embed [--test] [path/to/scale.cu]
 * Without a GPU it says so and exits 0; with --test (how `meson test` runs it) it exits 77, the code
 * for "skipped". Compiled kernels land in kernjit's disk cache ($KERNJIT_CACHE_DIR, else
 * ~/.cache/kernjit), so a second run skips NVRTC. */
#include <kernjit/kernjit.h>
#include <kernjit/ops.h>

#include <cuda_runtime_api.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EMBED_KERNEL
#define EMBED_KERNEL "scale.cu"
#endif

#define FACTOR 3
#define BLOCK_SIZE 256

/* Every call is checked; a failure names the call and what the library said. */
#define CUDA_CHECK(call)                                                                                               \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "embed: %s: %s\n", #call, cudaGetErrorString(e_));                                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
#define KJ_CHECK(call)                                                                                                 \
    do {                                                                                                               \
        kj_status s_ = (call);                                                                                         \
        if (s_ != KJ_OK) {                                                                                             \
            fprintf(stderr, "embed: %s: %s\n%s\n", #call, kj_status_name(s_), kj_last_error());                        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static const char *origin_text(kj_origin o) {
    return o == KJ_ORIGIN_COMPILED ? "compiled now" : o == KJ_ORIGIN_DISK ? "from the disk cache" : "already loaded";
}

int main(int argc, char **argv) {
    int as_test = 0;
    const char *kernel_path = EMBED_KERNEL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--test") == 0) as_test = 1;
        else kernel_path = argv[i];
    }
    printf("embed: kernjit %s (built against headers %s)\n", kj_version_string(), KJ_VERSION_STRING);

    /* kernjit answers without a driver; the CUDA runtime API would only report an error code */
    int devices = 0;
    kj_status st = kj_device_count(&devices);
    if (st != KJ_OK || devices == 0) {
        printf("embed: no CUDA device here (%s): nothing to run\n",
               st != KJ_OK ? kj_last_error() : "the driver reports none");
        return as_test ? 77 : 0;
    }

    /* ---- the program's own CUDA setup -------------------------------------------------------- */
    const size_t n = 1000003;
    CUDA_CHECK(cudaSetDevice(0));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *x, *y;
    CUDA_CHECK(cudaMalloc((void **)&x, n * sizeof *x));
    CUDA_CHECK(cudaMalloc((void **)&y, n * sizeof *y));
    float *host = malloc(n * sizeof *host), *back = malloc(n * sizeof *back);
    if (!host || !back) return 1;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* multiples of 1/8 in [-1, 1): every partial sum of n < 2^20 of them is a multiple of 1/8 below
         * 2^20, which a float holds exactly, so the sum is exact in any order of additions */
        host[i] = (float)((int)(seed >> 60) - 8) / 8.0f;
    }
    CUDA_CHECK(cudaMemcpyAsync(x, host, n * sizeof *host, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemsetAsync(y, 0xff, n * sizeof *y, stream)); /* poison: NaN until written */

    /* ---- kernjit on the same device (its primary context, the one cudart uses) --------------- */
    kj_runtime_options options = KJ_RUNTIME_OPTIONS_INIT;
    options.device = 0;
    kj_runtime *rt;
    KJ_CHECK(kj_runtime_create(&options, &rt));
    kj_device_info dev = KJ_DEVICE_INFO_INIT;
    KJ_CHECK(kj_runtime_device(rt, &dev));
    printf("embed: %s (%s), kernels for %s, cache %s\n", dev.name, dev.arch, kj_runtime_arch(rt),
           kj_cache_dir(rt) ? kj_cache_dir(rt) : "(memory only)");

    /* 1. a built-in family: the sum of x, on our stream (ordered after our copy) */
    float sum = NAN;
    kj_reduce_report report = KJ_REDUCE_REPORT_INIT;
    kj_reduce_options ro = {.size = sizeof(kj_reduce_options), .stream = (kj_stream)stream, .report = &report};
    KJ_CHECK(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, (kj_devptr)(uintptr_t)x, n, &sum, &ro));
    double expected = 0;
    for (size_t i = 0; i < n; i++) expected += host[i];
    int ok_sum = (double)sum == expected;
    printf("embed: kj_reduce sum of %zu floats = %.6f (CPU %.6f, exact; %s, block %u) %s\n", n, sum, expected,
           report.entry, report.block_size, ok_sum ? "ok" : "WRONG");

    /* 2. the program's own kernel, with its macro values */
    char factor[16], block[16];
    snprintf(factor, sizeof factor, "%d", FACTOR);
    snprintf(block, sizeof block, "%d", BLOCK_SIZE);
    kj_define defines[] = {{"ELEM_TYPE", "float"}, {"FACTOR", factor}, {"BLOCK_SIZE", block}};
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = kernel_path,
                      .entry = "scale",
                      .defines = defines,
                      .define_count = sizeof defines / sizeof defines[0]};
    kj_kernel *scale;
    kj_origin origin;
    KJ_CHECK(kj_kernel_get(rt, &req, &scale, &origin));
    printf("embed: %s: scale %s\n", kernel_path, origin_text(origin));

    unsigned long long count = n;
    void *args[] = {&y, &x, &count}; /* pointers to each argument, as cuLaunchKernel takes them */
    kj_launch_config cfg = {.size = sizeof(kj_launch_config),
                            .grid = {(unsigned)((n + BLOCK_SIZE - 1) / BLOCK_SIZE)}, /* 0 in y, z: 1 */
                            .block = {BLOCK_SIZE},
                            .stream = (kj_stream)stream};
    KJ_CHECK(kj_kernel_launch(scale, &cfg, args));
    CUDA_CHECK(cudaMemcpyAsync(back, y, n * sizeof *back, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream)); /* also reports a failure of the kernel itself */
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        if (back[i] != host[i] * (float)FACTOR) { /* one rounding on both sides: exact */
            if (wrong++ < 5) fprintf(stderr, "embed: y[%zu] = %g, expected %g\n", i, back[i], host[i] * (float)FACTOR);
        }
    printf("embed: scale by %d of %zu floats: %s\n", FACTOR, n, wrong ? "WRONG" : "ok");

    /* kernjit first: it unloads its modules from the context that cudart still holds */
    kj_runtime_destroy(rt);
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
    CUDA_CHECK(cudaStreamDestroy(stream));
    free(host);
    free(back);
    return ok_sum && !wrong ? 0 : 1;
}
