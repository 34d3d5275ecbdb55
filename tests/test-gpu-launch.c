/* kernjit launch on the device: the CLI is run as a user would (popen), on seeded random inputs
 * written to files, and the buffers it saves are compared with a CPU computation; plus the parameter
 * API it relies on. The kernels are in tests/kernels/. Exits 77 (skipped) without a GPU.
 * Usage: test-gpu-launch path/to/kernjit path/to/tests/kernels */
#include "test_util.h"

#include <math.h>

static const char *kernjit, *kernels;
static uint64_t seed;
static int have_param_info; /* the driver has cuFuncGetParamInfo: sizes are checked too */

#define OUT_MAX (256 * 1024)
static char out[OUT_MAX];
static char cache[PATH_MAX]; /* kj_test_dir/cache */

/* `kernjit launch ARGS` in the test folder with a private cache: its exit code, its output in out. */
#define launch(...) kj_test_launch(kernjit, kj_test_dir, cache, out, sizeof out, __VA_ARGS__)

#define EXPECT(code, needle)                                                                                           \
    do {                                                                                                               \
        if (rc != (code)) fail_msg("exit %d, expected %d", rc, (code));                                                \
        if ((needle) && !strstr(out, (needle))) fail_msg("the output lacks '%s'", (const char *)(needle));             \
    } while (0)

static char *path_in(const char *name) {
    static char buf[4][1024];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 1024, "%s/%s", kj_test_dir, name);
    return p;
}

static void *read_all(const char *name, size_t expected_bytes) {
    FILE *f = fopen(path_in(name), "rb");
    if (!f) fail_msg("%s was not saved", name);
    void *buf = malloc(expected_bytes + 1);
    size_t n = fread(buf, 1, expected_bytes + 1, f);
    fclose(f);
    if (n != expected_bytes) fail_msg("%s has %zu bytes, expected %zu", name, n, expected_bytes);
    return buf;
}

static float *random_floats(size_t n) {
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)(kj_test_uniform(&seed) * 2 - 1);
    return v;
}

static int setup(void **state) {
    if (kj_test_setup_gpu(state) != 0) return -1;
    snprintf(cache, sizeof cache, "%s/cache", kj_test_dir);
    seed = kj_test_seed();
    /* does this driver tell parameter sizes? (cuFuncGetParamInfo, CUDA 12.4+) */
    kj_runtime *rt = kj_test_runtime(NULL, KJ_DEVICE_AUTO, NULL);
    char path[1024];
    snprintf(path, sizeof path, "%s/vadd.cu", kernels);
    kj_request req = {.size = sizeof(kj_request), .kernel = path};
    kj_kernel *k;
    size_t count;
    if (rt && kj_kernel_get(rt, &req, &k, NULL) == KJ_OK) have_param_info = kj_kernel_param_count(k, &count) == KJ_OK;
    if (!have_param_info) printf("note: the driver lacks cuFuncGetParamInfo; size checks are skipped\n");
    kj_runtime_destroy(rt);
    return 0;
}

/* The API the command relies on: count, offsets and sizes as the compiled function has them. */
static void test_param_api(void **state) {
    (void)state;
    if (!have_param_info) skip();
    kj_runtime *rt = kj_test_runtime(NULL, KJ_DEVICE_AUTO, NULL);
    char path[1024];
    kj_kernel *k;
    size_t count, off, size;

    snprintf(path, sizeof path, "%s/vadd.cu", kernels);
    kj_request vadd = {.size = sizeof(kj_request), .kernel = path};
    KJ_ASSERT_OK(kj_kernel_get(rt, &vadd, &k, NULL));
    KJ_ASSERT_OK(kj_kernel_param_count(k, &count));
    assert_int_equal(count, 4);
    static const size_t vadd_off[] = {0, 8, 16, 24}, vadd_size[] = {8, 8, 8, 4};
    for (size_t i = 0; i < 4; i++) {
        KJ_ASSERT_OK(kj_kernel_param_info(k, i, &off, &size));
        assert_int_equal(off, vadd_off[i]);
        assert_int_equal(size, vadd_size[i]);
    }
    KJ_ASSERT_OK(kj_kernel_param_info(k, 2, NULL, NULL));
    assert_int_equal(kj_kernel_param_info(k, 4, &off, &size), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "it takes 4"));

    snprintf(path, sizeof path, "%s/scalars.cu", kernels);
    kj_request scalars = {.size = sizeof(kj_request), .kernel = path};
    KJ_ASSERT_OK(kj_kernel_get(rt, &scalars, &k, NULL));
    KJ_ASSERT_OK(kj_kernel_param_count(k, &count));
    assert_int_equal(count, 4);
    static const size_t sc_off[] = {0, 2, 8, 16}, sc_size[] = {1, 2, 8, 8};
    for (size_t i = 0; i < 4; i++) {
        KJ_ASSERT_OK(kj_kernel_param_info(k, i, &off, &size));
        assert_int_equal(off, sc_off[i]);
        assert_int_equal(size, sc_size[i]);
    }

    kj_request none = {.size = sizeof(kj_request), .kernel = "none.cu", .source_text = "__global__ void none() {}\n"};
    KJ_ASSERT_OK(kj_kernel_get(rt, &none, &k, NULL));
    KJ_ASSERT_OK(kj_kernel_param_count(k, &count));
    assert_int_equal(count, 0);
    kj_runtime_destroy(rt);
}

/* A kernel without extern "C", found by its source name; the saved output is a + b exactly. */
static void test_vadd(void **state) {
    (void)state;
    const size_t n = kj_test_cap(1000003);
    float *a = random_floats(n), *b = random_floats(n);
    kj_test_write(path_in("a.bin"), a, n * 4);
    kj_test_write(path_in("b.bin"), b, n * 4);
    /* the output is poisoned (NaN): an element the kernel does not write shows */
    int rc = launch("'%s/vadd.cu' --grid %zu --block 256 --arg 'f32[]=@a.bin' --arg 'f32[]=@b.bin' "
                    "--arg 'f32[%zu]=nan' --arg i32=%zu --save 2=c.bin --print 2:0..4 --repeat 3",
                    kernels, (n + 255) / 256, n, n);
    EXPECT(0, "_Z4vadd");
    assert_non_null(strstr(out, ", compiled"));
    assert_non_null(strstr(out, "median of 3 launches"));
    float *c = read_all("c.bin", n * 4);
    for (size_t i = 0; i < n; i++) {
        float want = a[i] + b[i];
        if (memcmp(&c[i], &want, 4) != 0)
            fail_msg("c[%zu] = %.9g, expected %.9g + %.9g = %.9g", i, c[i], a[i], b[i], want);
    }
    char line[64];
    snprintf(line, sizeof line, "[3] %.9g\n", (double)(a[3] + b[3]));
    if (!strstr(out, line)) fail_msg("the output lacks '%s'", line);

    /* a second process finds the kernel in the disk cache; --json carries the printed values */
    rc = launch("'%s/vadd.cu' --grid %zu --block 256 --arg 'f32[]=@a.bin' --arg 'f32[]=@b.bin' "
                "--arg 'f32[%zu]=nan' --arg i32=%zu --print 2:0..2 --json",
                kernels, (n + 255) / 256, n, n);
    EXPECT(0, "\"origin\":\"disk\"");
    char values[128];
    snprintf(values, sizeof values, "\"values\":[%.9g,%.9g]", (double)(a[0] + b[0]), (double)(a[1] + b[1]));
    if (!strstr(out, values)) fail_msg("the output lacks '%s'", values);
    assert_non_null(
        strstr(out, have_param_info ? "\"params_checked_by\":\"driver\"" : "\"params_checked_by\":\"source\""));
    free(a);
    free(b);
    free(c);
}

/* Templates: instances named with a C++ name expression, and the file's only explicit instance
 * taken when no entry is given. */
static void test_templates(void **state) {
    (void)state;
    const size_t n = 100003;
    float *x = random_floats(n);
    kj_test_write(path_in("x.bin"), x, n * 4);
    int rc = launch("'%s/scale.cu:scale<float,256>' --grid %zu --block 256 --arg 'f32[]=@x.bin' --arg f32=0.5 "
                    "--arg i32=%zu --save 0=xs.bin --repeat 2",
                    kernels, (n + 255) / 256, n);
    EXPECT(0, "scale<float,256>");
    float *xs = read_all("xs.bin", n * 4);
    for (size_t i = 0; i < n; i++)
        if (xs[i] != x[i] * 0.5f) fail_msg("x[%zu] = %.9g, expected %.9g", i, xs[i], x[i] * 0.5f);

    double *xd = malloc(n * sizeof *xd);
    for (size_t i = 0; i < n; i++) xd[i] = x[i] * 1.25;
    kj_test_write(path_in("xd.bin"), xd, n * 8);
    rc = launch("'%s/scale.cu:scale<double, 128>' --grid %zu --block 128 --arg 'f64[]=@xd.bin' --arg f64=-3 "
                "--arg i32=%zu --save 0=xds.bin --repeat 0",
                kernels, (n + 127) / 128, n);
    EXPECT(0, "scale<double, 128>");
    double *xds = read_all("xds.bin", n * 8);
    for (size_t i = 0; i < n; i++)
        if (xds[i] != xd[i] * -3.0) fail_msg("x[%zu] = %.17g, expected %.17g", i, xds[i], xd[i] * -3.0);

    /* y = 2 * i + y: the product is exact, so a fused multiply-add and a plain one agree */
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    kj_test_write(path_in("y.bin"), y, n * 8);
    rc = launch("'%s/axpy_instance.cu' --grid %zu --block 256 --arg 'f64[]=@y.bin' --arg 'f64[%zu]=iota' --arg f64=2 "
                "--arg i32=%zu --save 0=ys.bin --repeat 0",
                kernels, (n + 255) / 256, n, n);
    EXPECT(0, "axpy<double>");
    double *ys = read_all("ys.bin", n * 8);
    for (size_t i = 0; i < n; i++)
        if (ys[i] != 2.0 * (double)i + y[i])
            fail_msg("y[%zu] = %.17g, expected %.17g", i, ys[i], 2.0 * (double)i + y[i]);
    free(x);
    free(xs);
    free(xd);
    free(xds);
    free(y);
    free(ys);
}

/* A 2-D grid: out is the transpose of in, every element where it belongs. */
static void test_grid_2d(void **state) {
    (void)state;
    const size_t w = 1000, h = 777;
    float *in = random_floats(w * h);
    kj_test_write(path_in("in.bin"), in, w * h * 4);
    int rc = launch("'%s/transpose.cu' --grid %zu,%zu --block 16,16 --arg 'f32[]=@in.bin' --arg 'f32[%zu]=nan' "
                    "--arg i32=%zu --arg i32=%zu --save 1=t.bin --print 1:0..2 --repeat 2",
                    kernels, (w + 15) / 16, (h + 15) / 16, w * h, w, h);
    EXPECT(0, "grid 63,49,1  block 16,16,1");
    float *t = read_all("t.bin", w * h * 4);
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++)
            if (memcmp(&t[x * h + y], &in[y * w + x], 4) != 0)
                fail_msg("out[%zu][%zu] = %.9g, expected in[%zu][%zu] = %.9g", x, y, t[x * h + y], y, x, in[y * w + x]);
    free(in);
    free(t);
}

/* y += x under --repeat: printed and saved values are those of the first launch alone. */
static void test_first_launch_only(void **state) {
    (void)state;
    const size_t n = kj_test_cap(1000003);
    int rc = launch("'%s/accumulate.cu' --grid %zu --block 256 --arg 'f32[%zu]=iota' --arg 'f32[%zu]=1' --arg i32=%zu "
                    "--print 0:5 --save 0=acc.bin --repeat 20",
                    kernels, (n + 255) / 256, n, n, n);
    EXPECT(0, "[5] 6\n");
    assert_non_null(strstr(out, "median of 20 launches"));
    float *y = read_all("acc.bin", n * 4);
    for (size_t i = 0; i < n; i++)
        if (y[i] != (float)i + 1.0f) fail_msg("y[%zu] = %.9g, expected %zu", i, y[i], i + 1);
    free(y);
}

/* Scalars of 1, 2 and 8 bytes reach the kernel as given. */
static void test_scalars(void **state) {
    (void)state;
    int rc = launch("'%s/scalars.cu' --grid 1 --block 32 --arg u8=200 --arg i16=-3 --arg f64=7.9 --arg 'i64[3]=-1' "
                    "--print 3 --json",
                    kernels);
    EXPECT(0, "\"values\":[200,-3,7]");
}

/* Every mismatch with the kernel or the device is a usage error naming what is wrong, found before
 * anything runs. */
static void test_mismatches(void **state) {
    (void)state;
    char vadd[1024];
    snprintf(vadd, sizeof vadd,
             "'%s/vadd.cu' --grid 4 --block 256 --arg 'f32[1000]=iota' --arg 'f32[1000]=1' "
             "--arg 'f32[1000]=zeros'",
             kernels);
    int rc = launch("%s", vadd);
    EXPECT(2, "parameter 3 'int n'");
    assert_non_null(strstr(out, "vadd takes 4 parameters; 3 were given with --arg"));
    rc = launch("%s --arg i32=1000 --arg i32=5", vadd);
    EXPECT(2, "--arg 4 'i32=5' has no parameter");
    if (have_param_info) {
        rc = launch("%s --arg i64=1000", vadd);
        EXPECT(2, "--arg 3 'i64=1000' is an i64 (8 bytes) but parameter 3 'int n' of vadd takes 4 bytes");
        rc = launch("%s --arg 'i32[4]=zeros'", vadd);
        EXPECT(2, "is a buffer (an 8-byte pointer) but parameter 3 'int n'");
        rc = launch("'%s/scale.cu:scale<double,128>' --grid 1 --block 128 --arg 'f64[8]=1' --arg f32=2 --arg i32=8",
                    kernels);
        EXPECT(2, "parameter 1 'T a' of scale<double,128> takes 8 bytes");
    }
    rc = launch("'%s/vadd.cu' --grid 1 --block 2048 --arg 'f32[8]=1' --arg 'f32[8]=1' --arg 'f32[8]=1' --arg i32=8",
                kernels);
    EXPECT(2, "--block x = 2048 exceeds the device's limit of 1024");
    rc = launch("'%s/vadd.cu' --grid 1,100000 --block 1 --arg 'f32[8]=1' --arg 'f32[8]=1' --arg 'f32[8]=1' --arg i32=8",
                kernels);
    EXPECT(2, "--grid y = 100000 exceeds the device's limit of 65535");
    rc = launch("'%s/vadd.cu' --grid 1 --block 1 --shared 1M --arg 'f32[8]=1' --arg 'f32[8]=1' --arg 'f32[8]=1' "
                "--arg i32=8",
                kernels);
    EXPECT(2, "--shared 1048576 exceeds");
    rc = launch("'%s/vadd.cu' --grid 1 --block 1 --arg 'f32[2^40]=zeros' --arg 'f32[8]=1' --arg 'f32[8]=1' --arg i32=8",
                kernels);
    EXPECT(1, "--arg 0 'f32[2^40]=zeros' needs 4398046511104 bytes of device memory, more than the");
    rc = launch("'%s/vadd.cu:nosuch' --grid 1 --block 1", kernels);
    EXPECT(2, "no kernel 'nosuch'");
    rc = launch("'%s/scale.cu' --grid 1 --block 1", kernels);
    EXPECT(2, "kernel scale is a template");
}

/* A compile error prints NVRTC's log with file(line); exit 1. */
static void test_compile_error(void **state) {
    (void)state;
    const char *bad = "__global__ void k(int *x) {\n  x[0] = oops;\n}\n";
    kj_test_write(path_in("bad.cu"), bad, strlen(bad));
    int rc = launch("bad.cu --grid 1 --block 1 --arg 'i32[1]=zeros'");
    EXPECT(1, "bad.cu(2): error");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s path/to/kernjit path/to/tests/kernels\n", argv[0]);
        return 1;
    }
    kernjit = argv[1];
    kernels = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_api),         cmocka_unit_test(test_vadd),
        cmocka_unit_test(test_templates),         cmocka_unit_test(test_grid_2d),
        cmocka_unit_test(test_first_launch_only), cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_mismatches),        cmocka_unit_test(test_compile_error),
    };
    return cmocka_run_group_tests(tests, setup, kj_test_teardown);
}
