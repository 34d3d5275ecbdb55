/* The CPU side of the Mandelbrot family, no GPU needed: the dwell arithmetic, the configuration and
 * its messages, the Mariani-Silver emulation (its image equals the escape-time image for the
 * configurations the GPU tests use, at sizes small enough here), the launch bound, and that the
 * host's defaults agree with the kernel's metadata. */
#include "test_util.h"

#include "ops/mandelbrot/mandelbrot_cpu.h"

static void test_dwell_known_points(void **state) {
    (void)state;
    /* window [-2, 2]^2 on 4 x 4 pixels: dx = dy = 1, pixel (x, y) is c = (x - 2, 2 - y) */
    kj_mandelbrot_options o = {
        .size = sizeof(kj_mandelbrot_options), .x_min = -2, .x_max = 2, .y_min = -2, .y_max = 2, .max_dwell = 64};
    unsigned d;
    KJ_ASSERT_OK(kjtest_mandelbrot_dwell(4, 4, 2, 2, &o, &d)); /* c = 0: in the set */
    assert_int_equal(d, 64);
    KJ_ASSERT_OK(kjtest_mandelbrot_dwell(4, 4, 0, 0, &o, &d)); /* c = -2 + 2i: |c|^2 = 8 */
    assert_int_equal(d, 0);
    KJ_ASSERT_OK(kjtest_mandelbrot_dwell(4, 4, 3, 2, &o, &d)); /* c = 1: z = 1, 2, 5 */
    assert_int_equal(d, 2);
    KJ_ASSERT_OK(kjtest_mandelbrot_dwell(4, 4, 1, 2, &o, &d)); /* c = -1: the period-2 cycle 0, -1 */
    assert_int_equal(d, 64);
    assert_int_equal(kjtest_mandelbrot_dwell(4, 4, 4, 0, &o, &d), KJ_ERR_USAGE);
    assert_non_null(strstr(kjtest_last_error(), "outside the 4 x 4 image"));
    o.subdiv = 1; /* what the library refuses, the oracle refuses with its words */
    assert_int_equal(kjtest_mandelbrot_dwell(4, 4, 0, 0, &o, &d), KJ_ERR_USAGE);
    assert_non_null(strstr(kjtest_last_error(), "subdiv 1"));
}

/* The library's configuration, with a usage error's message. */
static int config(unsigned w, unsigned h, const kj_mandelbrot_options *o, kj__mb_config *c, char *why) {
    return kj__mb_config_make(w, h, o, c, why, 512);
}

static void test_config_messages(void **state) {
    (void)state;
    kj__mb_config c;
    char why[512];
    assert_int_equal(config(0, 10, NULL, &c, why), -1);
    assert_non_null(strstr(why, "0 x 10"));
    assert_int_equal(config(40000, 10, NULL, &c, why), -1);
    assert_non_null(strstr(why, "32768"));
    kj_mandelbrot_options o = {.size = sizeof(kj_mandelbrot_options), .x_min = 1, .x_max = 0, .y_min = -1, .y_max = 1};
    assert_int_equal(config(10, 10, &o, &c, why), -1);
    assert_non_null(strstr(why, "x_min < x_max"));
    kj_mandelbrot_options s = {.size = sizeof(kj_mandelbrot_options), .subdiv = 1};
    assert_int_equal(config(10, 10, &s, &c, why), -1);
    assert_non_null(strstr(why, "subdiv 1"));
    kj_mandelbrot_options a = {.size = sizeof(kj_mandelbrot_options), .algo = (kj_mandelbrot_algo)7};
    assert_int_equal(config(10, 10, &a, &c, why), -1);
    kj_mandelbrot_algo algo;
    assert_int_equal(kj_mandelbrot_algo_parse("fast", &algo), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "escape, ms"));
    KJ_ASSERT_OK(kj_mandelbrot_algo_parse("ms", &algo));
    assert_int_equal(algo, KJ_MANDELBROT_MS);
    assert_string_equal(kj_mandelbrot_algo_name(KJ_MANDELBROT_ESCAPE), "escape");
    /* the defaults */
    assert_int_equal(config(16384, 16384, NULL, &c, why), 0);
    assert_int_equal(c.max_dwell, 512);
    assert_true(c.view.x0 == -1.5f && c.view.y1 == 1.0f);
}

/* The host's defaults are the metadata's: the CPU reference must emulate the kernel as built. */
static void test_defaults_match_metadata(void **state) {
    (void)state;
    kj_kernel_desc *d;
    KJ_ASSERT_OK(kj_describe(NULL, "mandelbrot", &d));
    assert_true(kj_desc_needs_device_runtime(d));
    struct {
        const char *name;
        unsigned value;
    } want[] = {{"MAX_DWELL", KJ__MB_MAX_DWELL}, {"INIT_SUBDIV", KJ__MB_INIT_SUBDIV}, {"SUBDIV", KJ__MB_SUBDIV},
                {"MAX_DEPTH", KJ__MB_MAX_DEPTH}, {"MIN_SIZE", KJ__MB_MIN_SIZE},       {"COUNT_LAUNCHES", 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = 0;
        for (size_t p = 0; p < kj_desc_param_count(d); p++) {
            kj_param_info info = KJ_PARAM_INFO_INIT;
            KJ_ASSERT_OK(kj_desc_param(d, p, &info));
            if (strcmp(info.name, want[i].name) != 0) continue;
            found = 1;
            if ((unsigned)atoi(info.default_value) != want[i].value)
                fail_msg("%s: metadata default %s, host default %u", info.name, info.default_value, want[i].value);
        }
        if (!found) fail_msg("mandelbrot.cu has no parameter %s", want[i].name);
    }
    kj_desc_free(d);
    KJ_ASSERT_OK(kj_describe(NULL, "nested", &d));
    assert_true(kj_desc_needs_device_runtime(d));
    kj_desc_free(d);
}

static void test_launch_bound(void **state) {
    (void)state;
    kj__mb_config c;
    char why[512];
    unsigned levels;
    /* 16384 / 32 = 512 -> 128 -> 32: the 1024 top squares and their 16384 children may split */
    assert_int_equal(config(16384, 16384, NULL, &c, why), 0);
    assert_int_equal(kj__mb_launch_bound(&c, &levels), 1024 + 16384);
    assert_int_equal(levels, 3);
    /* max_depth 1: nothing is launched from the device */
    kj_mandelbrot_options o = {.size = sizeof(kj_mandelbrot_options), .max_depth = 1};
    assert_int_equal(config(16384, 16384, &o, &c, why), 0);
    assert_int_equal(kj__mb_launch_bound(&c, &levels), 0);
    assert_int_equal(levels, 1);
}

/* Renders with both algorithms on the CPU and compares; the emulation also counts fills that the
 * escape-time image contradicts. */
static void same_image(unsigned w, unsigned h, kj_mandelbrot_options o, uint64_t *launches) {
    size_t n = (size_t)w * h;
    uint16_t *ms = malloc(n * 2), *esc = malloc(n * 2);
    assert_non_null(ms);
    assert_non_null(esc);
    memset(ms, 0xff, n * 2);
    uint64_t wrong = 1;
    KJ_ASSERT_OK(kjtest_mandelbrot_reference_ms(w, h, &o, ms, launches, &wrong));
    o.algo = KJ_MANDELBROT_ESCAPE;
    KJ_ASSERT_OK(kjtest_mandelbrot_reference(w, h, &o, esc, NULL));
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) differ += ms[i] != esc[i];
    if (differ || wrong)
        fail_msg("%u x %u dwell %u (init %u subdiv %u depth %u min %u): %zu pixels differ, %llu filled wrongly", w, h,
                 o.max_dwell, o.init_subdiv, o.subdiv, o.max_depth, o.min_size, differ, (unsigned long long)wrong);
    /* the public reference gives the emulation's image and launches */
    o.algo = KJ_MANDELBROT_MS;
    uint64_t again = 0;
    KJ_ASSERT_OK(kjtest_mandelbrot_reference(w, h, &o, esc, &again));
    assert_int_equal(again, *launches);
    assert_memory_equal(ms, esc, n * 2);
    free(ms);
    free(esc);
}

static void test_ms_emulation_exact(void **state) {
    (void)state;
    uint64_t launches;
    /* deep and clipped: odd sizes, small squares */
    kj_mandelbrot_options deep = {.size = sizeof(kj_mandelbrot_options),
                                  .algo = KJ_MANDELBROT_MS,
                                  .max_dwell = 256,
                                  .init_subdiv = 8,
                                  .subdiv = 2,
                                  .max_depth = 6,
                                  .min_size = 8};
    same_image(601, 397, deep, &launches);
    assert_true(launches > 10);
    /* the GPU test's subdividing configuration, on a quarter of its size */
    kj_mandelbrot_options quad = {.size = sizeof(kj_mandelbrot_options),
                                  .algo = KJ_MANDELBROT_MS,
                                  .max_dwell = 512,
                                  .init_subdiv = 8,
                                  .subdiv = 4,
                                  .max_depth = 4,
                                  .min_size = 16};
    same_image(1024, 1024, quad, &launches);
    assert_true(launches > 10);
    /* a zoomed window with long dwells */
    kj_mandelbrot_options zoom = {.size = sizeof(kj_mandelbrot_options),
                                  .algo = KJ_MANDELBROT_MS,
                                  .max_dwell = 2048,
                                  .x_min = -0.8,
                                  .x_max = -0.7,
                                  .y_min = 0.05,
                                  .y_max = 0.15,
                                  .init_subdiv = 8,
                                  .subdiv = 4,
                                  .max_depth = 4,
                                  .min_size = 8};
    same_image(512, 512, zoom, &launches);
    /* the GPU test's zoomed window (test-gpu-mandelbrot: test_escape_matches_cpu) */
    kj_mandelbrot_options seahorse = {.size = sizeof(kj_mandelbrot_options),
                                      .algo = KJ_MANDELBROT_MS,
                                      .max_dwell = 1024,
                                      .x_min = -0.75,
                                      .x_max = -0.73,
                                      .y_min = 0.1,
                                      .y_max = 0.115,
                                      .init_subdiv = 4,
                                      .min_size = 8};
    same_image(640, 480, seahorse, &launches);
    /* tiny images: squares of one or two pixels */
    kj_mandelbrot_options tiny = {.size = sizeof(kj_mandelbrot_options),
                                  .algo = KJ_MANDELBROT_MS,
                                  .max_dwell = 64,
                                  .init_subdiv = 4,
                                  .subdiv = 2,
                                  .max_depth = 8,
                                  .min_size = 4};
    for (unsigned w = 1; w <= 9; w += 2) same_image(w, 10 - w, tiny, &launches);
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_dwell_known_points), cmocka_unit_test(test_config_messages),
             cmocka_unit_test(test_defaults_match_metadata), cmocka_unit_test(test_launch_bound),
             cmocka_unit_test(test_ms_emulation_exact))
