/* jit/arch.c: the target names kernjit reads (sm_XY, sm_XYa, sm_XYf, compute_XY...), the cache
 * folders they name, which devices each target's code runs on, and the rule for which 'a' and 'f'
 * targets exist, checked against what this NVRTC itself accepts for every architecture it lists. */
#include "test_util.h"

#include <nvrtc.h>

#include "jit/arch.h"

static void test_names(void **state) {
    (void)state;
    const struct {
        const char *name;
        int number;
        char suffix;
        int ptx;
    } good[] = {{"sm_75", 75, 0, 0},      {"sm_90a", 90, 'a', 0},        {"sm_100f", 100, 'f', 0},
                {"compute_90", 90, 0, 1}, {"compute_120a", 120, 'a', 1}, {"compute_1234f", 1234, 'f', 1},
                {"sm_10", 10, 0, 0}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        kj__arch_name a;
        assert_int_equal(kj__arch_parse(good[i].name, &a), 0);
        assert_int_equal(a.number, good[i].number);
        assert_int_equal(a.suffix, good[i].suffix);
        assert_int_equal(a.ptx, good[i].ptx);
        assert_true(kj__arch_folder_valid(good[i].name));
    }
    /* a cache folder is one of these names and nothing else: no path, no stray letter */
    const char *bad[] = {NULL,     "",       "sm_",    "sm_9",   "sm_090",   "sm_12345",  "sm_90b",   "sm_90af",
                         "sm_90A", "SM_90",  "sm90",   "90",     "compute_", "compute_9", "../sm_90", "sm_90/..",
                         "sm_90 ", " sm_90", "sm_-90", "sm_+90", "lto_90",   "sm_9O",     ".",        ".."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kj__arch_name a;
        if (kj__arch_parse(bad[i], &a) == 0 || kj__arch_folder_valid(bad[i]))
            fail_msg("'%s' was taken for a target's name", bad[i] ? bad[i] : "(null)");
    }
}

static void test_runs_on(void **state) {
    (void)state;
    const struct {
        const char *arch;
        int cc;
        int runs;
    } cases[] = {
        {"sm_90", 90, 1},        {"sm_80", 86, 1},         {"sm_80", 90, 0},         {"sm_86", 80, 0},
        {"sm_90a", 90, 1},       {"sm_90a", 100, 0},       {"sm_100a", 103, 0},      {"sm_100f", 100, 1},
        {"sm_100f", 103, 1},     {"sm_103f", 100, 0},      {"sm_100f", 110, 0},      {"sm_120f", 121, 1},
        {"compute_75", 90, 1},   {"compute_75", 121, 1},   {"compute_90", 80, 0},    {"compute_90a", 90, 1},
        {"compute_90a", 100, 0}, {"compute_100f", 103, 1}, {"compute_100f", 120, 0}, {"sm_9x", 90, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (kj__arch_runs_on(cases[i].arch, cases[i].cc) != cases[i].runs)
            fail_msg("%s on %d.%d: expected %s", cases[i].arch, cases[i].cc / 10, cases[i].cc % 10,
                     cases[i].runs ? "runs" : "does not run");
    assert_int_equal(kj__arch_check_device("sm_90a", 90, "device 0 (H100)"), KJ_OK);
    assert_int_equal(kj__arch_check_device("sm_90a", 80, "device 0 (A100)"), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "arch sm_90a: its code runs only on compute capability 9.0, and device 0 "
                                            "(A100) is 8.0 (sm_80): build for sm_80"));
}

/* Whether NVRTC takes -arch=name: an invalid target fails on the command line, before the front end
 * reads the program (whose #error then never shows). */
static int nvrtc_takes(const char *name) {
    nvrtcProgram p;
    assert_int_equal(nvrtcCreateProgram(&p, "#error kj_arch_probe\n", "probe.cu", 0, NULL, NULL), NVRTC_SUCCESS);
    char opt[64];
    snprintf(opt, sizeof opt, "-arch=%s", name);
    const char *opts[] = {opt};
    nvrtcCompileProgram(p, 1, opts);
    size_t n = 0;
    nvrtcGetProgramLogSize(p, &n);
    char *log = calloc(1, n + 1);
    assert_non_null(log);
    nvrtcGetProgramLog(p, log);
    int took = strstr(log, "kj_arch_probe") != NULL;
    free(log);
    nvrtcDestroyProgram(&p);
    return took;
}

static void test_suffix_rule_is_nvrtcs(void **state) {
    (void)state;
    const int *archs;
    int n = kj__arch_list(&archs);
    assert_true(n > 0);
    int checked = 0;
    for (int i = 0; i < n; i++)
        for (int s = 0; s < 3; s++)
            for (int ptx = 0; ptx < 2; ptx++) {
                char suffix = "\0af"[s], name[32];
                snprintf(name, sizeof name, "%s_%d%.*s", ptx ? "compute" : "sm", archs[i], suffix ? 1 : 0, &suffix);
                kj__target t;
                int ours = kj__arch_for_user(name, &t) == KJ_OK, nvrtcs = nvrtc_takes(name);
                if (ours != nvrtcs)
                    fail_msg("%s: kernjit %s it, NVRTC %s it", name, ours ? "takes" : "refuses",
                             nvrtcs ? "takes" : "refuses");
                if (ours) {
                    assert_string_equal(t.arch, name);
                    assert_string_equal(t.cache_arch, name);
                    assert_int_equal(t.ptx, ptx);
                }
                checked++;
            }
    printf("%d target names checked against NVRTC\n", checked);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_runs_on),
        cmocka_unit_test(test_suffix_rule_is_nvrtcs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
