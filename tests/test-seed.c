/* The seed tier (src/cache/seed.c): folders of entries built ahead of time, looked up after the memory
 * map and before the disk cache by the key of the request's inputs. Compile suite, on the stub driver
 * (KERNJIT_LIBCUDA): seeds are made as `kernjit seed` makes them (kj_compile into a runtime whose
 * cache is the seed folder, reading no seed), then read by runtimes with an empty cache of their own.
 * What a seed holds is a hit only for the very inputs it was built from: another header, option or
 * target finds nothing there (the NVRTC version is tests/test-seed.sh's, through a shim); a damaged,
 * renamed, foreign-format, unsigned or wrongly signed entry is refused with a warning; a folder
 * that the disk cache's rules would refuse is not used. */
#include "test_util.h"

#include <fcntl.h>

#include "cache/seed.h"

#define VADD                                                                                                           \
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n) {\n"                           \
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] = a[i] + b[i] + PART;\n}\n"
#define SECRET "a seed secret of the tests, 40 bytes long"

/* The kernel used throughout: a file including a header of its own, in the test's folder. */
static const char *write_kernel(const char *part) {
    kj_test_put(kj_test_dir, "src/part.h", part);
    kj_test_put(kj_test_dir, "src/vadd.cu", "#include \"part.h\"\n" VADD);
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/src/vadd.cu", kj_test_dir);
    return path;
}

static kj_request request(const char *kernel) {
    kj_request r = KJ_REQUEST_INIT;
    r.kernel = kernel;
    return r;
}

/* A runtime on the stub's device (sm_90) or compile-only for arch, whose cache is `cache` and whose
 * seeds are `seeds` (NULL: KERNJIT_SEED_PATH; "": none). */
static kj_runtime *runtime(const char *cache, const char *seeds, int device, kj_test_log *log) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = device;
    o.arch = device == KJ_DEVICE_NONE ? "sm_90" : NULL;
    o.cache_dir = cache;
    o.seed_dirs = seeds;
    memset(log, 0, sizeof *log);
    o.log = kj_test_log_fn;
    o.log_user = log;
    kj_runtime *rt = NULL;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    return rt;
}

/* Builds req into the seed folder seed/ of the test's folder (as kernjit seed does); its key. */
static void make_seed(const char *name, const kj_request *req, char key[33]) {
    kj_test_log log;
    kj_runtime *rt = runtime(kj_test_path(kj_test_dir, name), "", KJ_DEVICE_NONE, &log);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, req, &r));
    assert_int_equal(r.origin, KJ_ORIGIN_COMPILED);
    if (key) snprintf(key, 33, "%s", r.key);
    kj_runtime_destroy(rt);
}

/* kj_compile's origin for req on a fresh runtime whose cache is empty and whose seeds are `seeds`; the
 * runtime's warnings in *log. */
static kj_origin origin_of(const char *seeds, const kj_request *req, kj_test_log *log, kj_compile_result *out) {
    char *cache = kj_test_tmpdir();
    kj_runtime *rt = runtime(cache, seeds, KJ_DEVICE_NONE, log);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, req, &r));
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    /* a seed hit compiles nothing and copies nothing into the disk cache */
    if (r.origin == KJ_ORIGIN_SEED) {
        uint64_t entries = 1;
        KJ_ASSERT_OK(kj_cache_usage(rt, &entries, NULL, NULL));
        assert_int_equal(entries, 0);
        assert_int_equal(st.compiles, 0);
        assert_int_equal(st.seed_hits, 1);
        assert_true(r.cache_hit);
    } else {
        assert_int_equal(st.seed_hits, 0);
    }
    if (out) *out = r;
    kj_runtime_destroy(rt);
    kj_test_rmdir(cache);
    return r.origin;
}

static void test_hit_from_the_seed(void **state) {
    (void)state;
    kj_request req = request(write_kernel("#define PART 1.0f\n"));
    make_seed("seed", &req, NULL);
    kj_test_log log;
    kj_compile_result r;
    assert_int_equal(origin_of(kj_test_path(kj_test_dir, "seed"), &req, &log, &r), KJ_ORIGIN_SEED);
    assert_int_equal(log.warnings, 0);
    assert_non_null(strstr(r.cache_path, "/seed/sm_90/"));
    assert_string_equal(kj_origin_name(KJ_ORIGIN_SEED), "seed");
    /* a built-in too, and on the (stub) device: kj_kernel_get reports the seed, then memory */
    req = request("reduce");
    make_seed("seed", &req, NULL);
    char *cache = kj_test_tmpdir();
    kj_runtime *rt = runtime(cache, kj_test_path(kj_test_dir, "seed"), KJ_DEVICE_AUTO, &log);
    assert_true(kj_runtime_has_device(rt));
    kj_kernel *k;
    kj_origin o;
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, &o));
    assert_int_equal(o, KJ_ORIGIN_SEED);
    kj_kernel_info info = KJ_KERNEL_INFO_INIT;
    KJ_ASSERT_OK(kj_kernel_query(k, &info));
    assert_int_equal(info.origin, KJ_ORIGIN_SEED);
    KJ_ASSERT_OK(kj_kernel_get(rt, &req, &k, &o));
    assert_int_equal(o, KJ_ORIGIN_MEMORY);
    kj_stats st = KJ_STATS_INIT;
    KJ_ASSERT_OK(kj_runtime_stats(rt, &st));
    assert_int_equal(st.seed_hits, 1);
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.disk_hits, 0);
    kj_runtime_destroy(rt);
    kj_test_rmdir(cache);
}

/* The seed is looked up by the key of the inputs now: other inputs than it was built from find
 * nothing there and compile. */
static void test_other_inputs_compile(void **state) {
    (void)state;
    kj_request req = request(write_kernel("#define PART 1.0f\n"));
    make_seed("seed", &req, NULL);
    const char *seed = kj_test_path(kj_test_dir, "seed");
    kj_test_log log;
    /* another header */
    write_kernel("#define PART 2.0f\n");
    assert_int_equal(origin_of(seed, &req, &log, NULL), KJ_ORIGIN_COMPILED);
    write_kernel("#define PART 1.0f\n");
    assert_int_equal(origin_of(seed, &req, &log, NULL), KJ_ORIGIN_SEED);
    /* another option */
    const char *lineinfo[] = {"-lineinfo"};
    kj_request with_option = req;
    with_option.options = lineinfo;
    with_option.option_count = 1;
    assert_int_equal(origin_of(seed, &with_option, &log, NULL), KJ_ORIGIN_COMPILED);
    /* another macro */
    kj_define d = {"PART", "3.0f"};
    kj_request with_macro = req;
    with_macro.defines = &d;
    with_macro.define_count = 1;
    assert_int_equal(origin_of(seed, &with_macro, &log, NULL), KJ_ORIGIN_COMPILED);
    /* another target: the seed has sm_90 only */
    kj_request for_80 = req;
    for_80.arch = "sm_80";
    kj_compile_result r;
    assert_int_equal(origin_of(seed, &for_80, &log, &r), KJ_ORIGIN_COMPILED);
    assert_string_equal(r.arch, "sm_80");
    assert_int_equal(log.warnings, 0); /* a miss is no fault */
}

/* The entry file of key in the seed folder for arch, in one of four buffers that the next calls reuse. */
static const char *entry_file(const char *seed, const char *arch, const char *key) {
    static char paths[4][PATH_MAX];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, PATH_MAX, "%s/%s/%s.cubin", kj_test_path(kj_test_dir, seed), arch, key);
    return path;
}

static void poke(const char *path, off_t at, unsigned char value) {
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &value, 1, at), 1);
    close(fd);
}

static void copy_file(const char *from, const char *to) {
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}

/* A refused entry: a warning naming it and why, a compile, and the seed file left as it was. */
static void expect_refused(const char *seed, const kj_request *req, const char *path, const char *why) {
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    kj_test_log log;
    assert_int_equal(origin_of(seed, req, &log, NULL), KJ_ORIGIN_COMPILED);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, path));
    if (!strstr(log.last, why)) fail_msg("expected '%s' in: %s", why, log.last);
    assert_int_equal(stat(path, &after), 0); /* a seed is read, never repaired */
    assert_int_equal(before.st_size, after.st_size);
}

static void test_bad_entries_are_refused(void **state) {
    (void)state;
    kj_request req = request(write_kernel("#define PART 1.0f\n")), other = request("vector_add");
    char key[33], other_key[33];
    make_seed("seed", &req, key);
    make_seed("scratch", &other, other_key);
    const char *seed = kj_test_path(kj_test_dir, "seed"), *path = entry_file("seed", "sm_90", key);
    /* an entry named for another key: its header names its own */
    copy_file(path, entry_file("seed", "sm_90", other_key));
    expect_refused(seed, &other, entry_file("seed", "sm_90", other_key), "not the entry of its name's key");
    /* damaged */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    poke(path, st.st_size - 1, 0x5a);
    expect_refused(seed, &req, path, "it is damaged");
    /* another format version (byte 8 of the header) */
    make_seed("seed2", &req, key);
    path = entry_file("seed2", "sm_90", key);
    poke(path, 8, 7);
    expect_refused(kj_test_path(kj_test_dir, "seed2"), &req, path, "format version 7");
    /* not an entry at all */
    make_seed("seed3", &req, key);
    path = entry_file("seed3", "sm_90", key);
    kj_test_write(path, "not an entry", 12);
    chmod(path, 0644);
    expect_refused(kj_test_path(kj_test_dir, "seed3"), &req, path, "not a kernjit entry");
}

/* The next folder is tried after a refused entry, in the order listed. */
static void test_folders_in_order(void **state) {
    (void)state;
    kj_request req = request(write_kernel("#define PART 1.0f\n"));
    char key[33];
    make_seed("a", &req, key);
    make_seed("b", &req, key);
    poke(entry_file("a", "sm_90", key), 8, 7);
    char list[2 * PATH_MAX + 2];
    snprintf(list, sizeof list, "%s:%s", kj_test_path(kj_test_dir, "a"), kj_test_path(kj_test_dir, "b"));
    kj_test_log log;
    kj_compile_result r;
    assert_int_equal(origin_of(list, &req, &log, &r), KJ_ORIGIN_SEED);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(r.cache_path, "/b/sm_90/"));
}

static void test_signed_seeds(void **state) {
    (void)state;
    kj_request req = request(write_kernel("#define PART 1.0f\n"));
    char key[33];
    make_seed("seed", &req, key);
    const char *seed = kj_test_path(kj_test_dir, "seed"), *path = entry_file("seed", "sm_90", key);
    kj_test_log log;
    /* with a secret, an unsigned entry is refused */
    setenv("KERNJIT_SEED_SECRET", SECRET, 1);
    expect_refused(seed, &req, path, "not signed, and this process requires signatures");
    /* kj_seed_sign on the seed's own runtime signs it, once */
    kj_runtime *maker = runtime(seed, "", KJ_DEVICE_NONE, &log);
    uint64_t n = 0;
    KJ_ASSERT_OK(kj_seed_sign(maker, &n));
    assert_int_equal(n, 1);
    KJ_ASSERT_OK(kj_seed_sign(maker, &n));
    assert_int_equal(n, 0);
    /* ... and the seed's runtime still reads its folder as a disk cache */
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(maker, &req, &r));
    assert_int_equal(r.origin, KJ_ORIGIN_DISK);
    assert_int_equal(log.warnings, 0);
    kj_runtime_destroy(maker);
    assert_int_equal(origin_of(seed, &req, &log, NULL), KJ_ORIGIN_SEED);
    assert_int_equal(log.warnings, 0);
    /* another secret refuses it */
    setenv("KERNJIT_SEED_SECRET", "another secret of the tests, also long", 1);
    expect_refused(seed, &req, path, "signed with another secret");
    /* the remote cache's secret counts when the seed has none of its own */
    unsetenv("KERNJIT_SEED_SECRET");
    setenv("KERNJIT_REMOTE_SECRET", SECRET, 1);
    assert_int_equal(origin_of(seed, &req, &log, NULL), KJ_ORIGIN_SEED);
    setenv("KERNJIT_REMOTE_SECRET", "another secret of the tests, also long", 1);
    expect_refused(seed, &req, path, "signed with another secret");
    unsetenv("KERNJIT_REMOTE_SECRET");
    /* without a secret, a signed entry serves as any other */
    assert_int_equal(origin_of(seed, &req, &log, NULL), KJ_ORIGIN_SEED);
    assert_int_equal(log.warnings, 0);
}

/* A folder the disk cache's rules would refuse is not used: a warning when the runtime is made, and
 * the kernel compiles. */
static void expect_folder_refused(const char *seeds, const kj_request *req, const char *why) {
    kj_test_log log;
    char *cache = kj_test_tmpdir();
    kj_runtime *rt = runtime(cache, seeds, KJ_DEVICE_NONE, &log);
    assert_null(kj_seed_dir(rt, 0));
    assert_int_equal(log.warnings, 1);
    if (!strstr(log.last, why)) fail_msg("expected '%s' in: %s", why, log.last);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rt, req, &r));
    assert_int_equal(r.origin, KJ_ORIGIN_COMPILED);
    kj_runtime_destroy(rt);
    kj_test_rmdir(cache);
}

static void test_unsafe_folders_are_not_used(void **state) {
    (void)state;
    kj_request req = request(write_kernel("#define PART 1.0f\n"));
    char key[33];
    make_seed("seed", &req, key);
    const char *seed = kj_test_path(kj_test_dir, "seed");
    chmod(seed, 0777);
    expect_folder_refused(seed, &req, "others may write to it (mode 0777)");
    chmod(seed, 0755);
    kj_test_log log;
    assert_int_equal(origin_of(seed, &req, &log, NULL), KJ_ORIGIN_SEED);
    /* a link where the folder is */
    const char *link = kj_test_path(kj_test_dir, "link");
    assert_int_equal(symlink(seed, link), 0);
    expect_folder_refused(link, &req, "it is a symbolic link");
    /* a parent anyone may write, without the sticky bit */
    make_seed("open/seed", &req, key);
    chmod(kj_test_path(kj_test_dir, "open"), 0777);
    expect_folder_refused(kj_test_path(kj_test_dir, "open/seed"), &req,
                          "may be written by anyone without the sticky bit");
    /* an entry others may write to */
    chmod(entry_file("seed", "sm_90", key), 0666);
    expect_refused(seed, &req, entry_file("seed", "sm_90", key), "that only its owner may write");
    chmod(entry_file("seed", "sm_90", key), 0644);
    /* another user's folder (root may make one; root's own are trusted, as an install's are) */
    if (geteuid() == 0 && chown(seed, 4242, 4242) == 0) {
        expect_folder_refused(seed, &req, "owned by uid 4242, not by this user (uid 0) or root");
        assert_int_equal(chown(seed, 0, 0), 0);
    }
}

static void test_where_the_seeds_are(void **state) {
    (void)state;
    kj_request req = request(write_kernel("#define PART 1.0f\n"));
    make_seed("a", &req, NULL);
    make_seed("b", &req, NULL);
    char list[3 * PATH_MAX];
    snprintf(list, sizeof list, "%s::%s:%s", kj_test_path(kj_test_dir, "a"), kj_test_path(kj_test_dir, "missing"),
             kj_test_path(kj_test_dir, "b"));
    kj_test_log log;
    char *cache = kj_test_tmpdir();
    /* KERNJIT_SEED_PATH, in order; an empty item is nothing, a missing folder a warning */
    setenv("KERNJIT_SEED_PATH", list, 1);
    kj_runtime *rt = runtime(cache, NULL, KJ_DEVICE_NONE, &log);
    assert_string_equal(kj_seed_dir(rt, 0), kj_test_path(kj_test_dir, "a"));
    assert_string_equal(kj_seed_dir(rt, 1), kj_test_path(kj_test_dir, "b"));
    assert_null(kj_seed_dir(rt, 2));
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "does not exist"));
    assert_non_null(strstr(log.last, "KERNJIT_SEED_PATH"));
    kj_runtime_destroy(rt);
    /* the option wins over the variable; "" is no seed at all, and so is KERNJIT_SEED_PATH="" */
    rt = runtime(cache, kj_test_path(kj_test_dir, "b"), KJ_DEVICE_NONE, &log);
    assert_string_equal(kj_seed_dir(rt, 0), kj_test_path(kj_test_dir, "b"));
    kj_runtime_destroy(rt);
    rt = runtime(cache, "", KJ_DEVICE_NONE, &log);
    assert_null(kj_seed_dir(rt, 0));
    kj_runtime_destroy(rt);
    setenv("KERNJIT_SEED_PATH", "", 1);
    assert_int_equal(origin_of(NULL, &req, &log, NULL), KJ_ORIGIN_COMPILED);
    /* the cache turned off turns the seeds off */
    setenv("KERNJIT_SEED_PATH", list, 1);
    setenv("KERNJIT_CACHE_DISABLE", "1", 1);
    rt = runtime(cache, NULL, KJ_DEVICE_NONE, &log);
    assert_null(kj_seed_dir(rt, 0));
    kj_runtime_destroy(rt);
    unsetenv("KERNJIT_CACHE_DISABLE");
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.cache_mode = KJ_CACHE_MEMORY_ONLY;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    assert_null(kj_seed_dir(rt, 0));
    kj_runtime_destroy(rt);
    setenv("KERNJIT_SEED_PATH", "", 1);
    kj_test_rmdir(cache);
    /* the installed seed: beside the library (here the test program, which links it in) */
    char *installed = kj__seed_installed_dir();
    assert_non_null(installed);
    assert_true(installed[0] == '/');
    assert_null(strstr(installed, "/../"));
    assert_non_null(strstr(installed, "/share/kernjit/seed"));
    free(installed);
}

KJ_TEST_MAIN(NULL, NULL, KJ_TEST_IN_DIR(test_hit_from_the_seed), KJ_TEST_IN_DIR(test_other_inputs_compile),
             KJ_TEST_IN_DIR(test_bad_entries_are_refused), KJ_TEST_IN_DIR(test_folders_in_order),
             KJ_TEST_IN_DIR(test_signed_seeds), KJ_TEST_IN_DIR(test_unsafe_folders_are_not_used),
             KJ_TEST_IN_DIR(test_where_the_seeds_are))
