/* The library's rows of docs/bad-input.md ("Library"): each call is refused with the status and a
 * message naming the bad value, writes no output, and leaves the cache folder as it was. Calls that
 * need a device run against the stub driver (argv[1], tests/stub-cuda.c): what is checked happens
 * before anything reaches the device. tests/test-bad-input.py checks that every row names a test
 * here and every test here is a row. */
#include "test_util.h"

#include "nccl_util.h"

#include "jit/arch.h"
#include "jit/link.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char *cache_dir;

/* Entries and files in the cache folder, recursively: must be the same before and after a row. */
static size_t count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        n++;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) n += count_files(path);
    }
    closedir(d);
    return n;
}

/* status, and a message that contains needle */
#define EXPECT(call, status, needle)                                                                                   \
    do {                                                                                                               \
        kj_status s_ = (call);                                                                                         \
        if (s_ != (status))                                                                                            \
            fail_msg("%s -> %s (%s), expected %s", #call, kj_status_name(s_), kj_last_error(), #status);               \
        if (!strstr(kj_last_error(), needle)) fail_msg("%s: message '%s' lacks '%s'", #call, kj_last_error(), needle); \
    } while (0)

static kj_runtime *device_runtime(void) {
    kj_runtime *rt = kj_test_runtime(cache_dir, 0, NULL);
    assert_non_null(rt);
    assert_true(kj_runtime_has_device(rt)); /* the stub's */
    return rt;
}

static kj_runtime *compile_runtime(void) {
    kj_runtime *rt = kj_test_runtime(cache_dir, KJ_DEVICE_NONE, NULL);
    assert_non_null(rt);
    return rt;
}

static const uint8_t POISON = 0xA5;

static void test_reduce_byte_count_overflows(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, 4096, SIZE_MAX / 2, result, NULL), KJ_ERR_USAGE,
           "the byte count overflows size_t");
    EXPECT(kj_reduce_async(rt, KJ_OP_SUM, KJ_TYPE_F64, 4096, SIZE_MAX / 8 + 1, 4096, NULL), KJ_ERR_USAGE,
           "n = 2305843009213693952 f64 elements");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

static void test_vector_add_byte_count_overflows(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    kj_vector_add_report report = KJ_VECTOR_ADD_REPORT_INIT;
    memset(&report, POISON, sizeof report);
    report.size = sizeof report;
    kj_vector_add_options o = {.size = sizeof(kj_vector_add_options), .report = &report};
    EXPECT(kj_vector_add(rt, KJ_TYPE_F64, 4096, 8192, 12288, SIZE_MAX / 4, &o), KJ_ERR_USAGE,
           "the byte count overflows size_t");
    assert_int_equal(((uint8_t *)&report)[sizeof report.size], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

static void test_nested_reduce_byte_count_overflows(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    EXPECT(kj_nested_reduce(rt, KJ_TYPE_I64, 4096, SIZE_MAX / 8 + 1, result, NULL), KJ_ERR_USAGE,
           "the byte count overflows size_t");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

/* A type the family's kernel lacks: 16-bit floats where the reduction works in place (the nested
 * ones) or the kernel adds whole IEEE values (vector add). Refused before anything is compiled. */
static void test_type_the_family_lacks(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    EXPECT(kj_nested_reduce(rt, KJ_TYPE_BF16, 4096, 16, result, NULL), KJ_ERR_USAGE,
           "kj_nested_reduce: type bf16: allowed are i32, u32, i64, f32, f64");
    EXPECT(kj_nested_reduce(rt, KJ_TYPE_F16, 4096, 16, result, NULL), KJ_ERR_USAGE, "type f16: allowed are");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    EXPECT(kj_vector_add(rt, KJ_TYPE_BF16, 4096, 8192, 12288, 16, NULL), KJ_ERR_USAGE,
           "kj_vector_add: type bf16: vector add takes f32 or f64");
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

static void test_transpose_side_too_large(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    EXPECT(kj_transpose(rt, KJ_TYPE_F64, 4096, 8192, (size_t)1 << 31, 2, NULL), KJ_ERR_USAGE,
           "rows and cols may be at most 2147483647");
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

static void test_alloc_beyond_device_memory(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    kj_devptr p = 0x1234;
    EXPECT(kj_mem_alloc(rt, SIZE_MAX, &p), KJ_ERR_DEVICE_MEMORY, "cannot allocate 18446744073709551615 bytes");
    assert_int_equal(p, 0x1234);
    EXPECT(kj_mem_alloc(rt, 0, &p), KJ_ERR_USAGE, "0 bytes");
    assert_int_equal(p, 0x1234);
    kj_runtime_destroy(rt);
}

static void test_unknown_op_and_type(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    EXPECT(kj_reduce(rt, (kj_op)9, KJ_TYPE_F32, 4096, 16, result, NULL), KJ_ERR_USAGE, "operator 9 is not a kj_op");
    EXPECT(kj_reduce(rt, KJ_OP_SUM, (kj_type)-1, 4096, 16, result, NULL), KJ_ERR_USAGE, "type -1 is not a kj_type");
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_COUNT_, 4096, 16, result, NULL), KJ_ERR_USAGE,
           "type 7 is not a kj_type (0 to 6)");
    kj_op op = KJ_OP_MAX;
    kj_type type = KJ_TYPE_F64;
    EXPECT(kj_op_parse("avg", &op), KJ_ERR_USAGE, "unknown operator 'avg': allowed are sum, max, min, prod");
    EXPECT(kj_type_parse(NULL, &type), KJ_ERR_USAGE, "unknown type '(null)'");
    assert_int_equal(op, KJ_OP_MAX);
    assert_int_equal(type, KJ_TYPE_F64);
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = "reduce_nope"};
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, 4096, 16, result, &o), KJ_ERR_USAGE,
           "unknown reduction entry 'reduce_nope'");
    kj_runtime_destroy(rt);
}

/* kj_reduce_devices: every argument, a compile-only runtime among them too, checked before any part
 * is launched (nothing is compiled). */
static void test_reduce_devices_malformed(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime(), *none = compile_runtime();
    size_t before = count_files(cache_dir);
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    kj_runtime *rts[2] = {rt, rt}, *with_null[2] = {rt, NULL}, *with_none[2] = {rt, none};
    kj_devptr parts[2] = {4096, 8192};
    size_t counts[2] = {16, 16};
    EXPECT(kj_reduce_devices(rts, parts, counts, 0, KJ_OP_SUM, KJ_TYPE_F32, result, NULL), KJ_ERR_USAGE,
           "kj_reduce_devices: no parts (n = 0)");
    EXPECT(kj_reduce_devices(rts, NULL, counts, 2, KJ_OP_SUM, KJ_TYPE_F32, result, NULL), KJ_ERR_USAGE,
           "kj_reduce_devices: parts is NULL with n = 2 parts");
    EXPECT(kj_reduce_devices(rts, parts, counts, 1, KJ_OP_SUM, KJ_TYPE_F32, NULL, NULL), KJ_ERR_USAGE,
           "kj_reduce_devices: result is NULL");
    EXPECT(kj_reduce_devices(rts, parts, counts, 1, (kj_op)7, KJ_TYPE_F32, result, NULL), KJ_ERR_USAGE,
           "kj_reduce_devices: operator 7 is not a kj_op");
    EXPECT(kj_reduce_devices(with_null, parts, counts, 2, KJ_OP_SUM, KJ_TYPE_F32, result, NULL), KJ_ERR_USAGE,
           "kj_reduce_devices: runtime 1 is NULL");
    EXPECT(kj_reduce_devices(rts, parts, counts, 2, KJ_OP_SUM, KJ_TYPE_F32, result, NULL), KJ_ERR_USAGE,
           "parts 0 and 1 have the same runtime and stream");
    EXPECT(kj_reduce_devices(with_none, parts, counts, 2, KJ_OP_SUM, KJ_TYPE_F32, result, NULL), KJ_ERR_NO_DEVICE,
           "kj_reduce_devices: runtime 1 is compile-only");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(none);
    kj_runtime_destroy(rt);
}

/* kj_reduce_devices whose part fails on its device once launched (the stub's KJ_STUB_FAULT_DEVICE: a
 * fault in a kernel): the part and its device are named, the result is not written, the other part is
 * waited for, and the runtimes work on. */
static void test_reduce_devices_part_fails(void **state) {
    (void)state;
    setenv("KJ_STUB_DEVICES", "2", 1);
    kj_runtime *rts[2] = {device_runtime(), kj_test_runtime(cache_dir, 1, NULL)};
    assert_non_null(rts[1]);
    kj_devptr parts[2];
    size_t counts[2] = {3, 4};
    for (int i = 0; i < 2; i++) KJ_ASSERT_OK(kj_mem_alloc(rts[i], 64, &parts[i]));
    uint8_t result[8];
    KJ_ASSERT_OK(kj_reduce_devices(rts, parts, counts, 2, KJ_OP_SUM, KJ_TYPE_U32, result, NULL)); /* compiled */
    size_t before = count_files(cache_dir);
    memset(result, POISON, sizeof result);
    setenv("KJ_STUB_FAULT_DEVICE", "1", 1);
    EXPECT(
        kj_reduce_devices(rts, parts, counts, 2, KJ_OP_SUM, KJ_TYPE_U32, result, NULL), KJ_ERR_CUDA,
        "kj_reduce_devices: part 1 (device 1): the part's reduction failed (cuEventQuery): CUDA_ERROR_LAUNCH_FAILED");
    unsetenv("KJ_STUB_FAULT_DEVICE");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    assert_int_equal(count_files(cache_dir), before);
    KJ_ASSERT_OK(kj_reduce_devices(rts, parts, counts, 2, KJ_OP_SUM, KJ_TYPE_U32, result, NULL));
    for (int i = 0; i < 2; i++) {
        kj_mem_free(rts[i], parts[i]);
        kj_runtime_destroy(rts[i]);
    }
    unsetenv("KJ_STUB_DEVICES");
}

/* kj_reduce_nccl's arguments, checked before NCCL is loaded; then, with NCCL missing (KERNJIT_NCCL
 * naming nothing, before this process loads any), the call is refused naming KERNJIT_NCCL. */
static void test_reduce_nccl_malformed(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    void *comm = &before; /* never read: the arguments are refused first */
    EXPECT(kj_reduce_nccl(rt, NULL, 4096, 16, KJ_OP_SUM, KJ_TYPE_F32, result, NULL), KJ_ERR_USAGE,
           "kj_reduce_nccl: the communicator is NULL");
    EXPECT(kj_reduce_nccl(rt, comm, 4096, 16, KJ_OP_SUM, KJ_TYPE_F32, NULL, NULL), KJ_ERR_USAGE,
           "kj_reduce_nccl: result is NULL");
    EXPECT(kj_reduce_nccl(rt, comm, 4096, 16, KJ_OP_SUM, (kj_type)9, result, NULL), KJ_ERR_USAGE,
           "kj_reduce_nccl: type 9 is not a kj_type");
    const char *path = NULL;
    EXPECT(kj_nccl_library(NULL, NULL), KJ_ERR_USAGE, "kj_nccl_library: path is NULL");
    setenv("KERNJIT_NCCL", "/nonexistent/libnccl.so.2", 1);
    EXPECT(kj_nccl_library(&path, NULL), KJ_ERR_UNSUPPORTED,
           "NCCL: cannot load KERNJIT_NCCL=/nonexistent/libnccl.so.2");
    EXPECT(kj_reduce_nccl(rt, comm, 4096, 16, KJ_OP_SUM, KJ_TYPE_F32, result, NULL), KJ_ERR_UNSUPPORTED,
           "KERNJIT_NCCL");
    unsetenv("KERNJIT_NCCL");
    assert_null(path);
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

/* kj_reduce_nccl through tests/fake-nccl.c ($FAKE_NCCL), in a child process (NCCL is loaded once per
 * process) with the fake's environment: expect status and needle, and no result written. */
static void nccl_refusal_in_child(const char *name, const char *value, kj_status status, const char *needle) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KERNJIT_NCCL", getenv("FAKE_NCCL"), 1);
        setenv(name, value, 1);
        kj_runtime *rt = kj_test_runtime(NULL, 0, NULL); /* no disk cache: the handshake's compile stays in memory */
        kj_test_nccl n;
        void *comm = NULL;
        kj_devptr part = 0;
        if (!rt || kj_test_nccl_open(&n) != 0 || n.comm_init_all(&comm, 1, NULL) != 0 ||
            kj_mem_alloc(rt, 64, &part) != KJ_OK)
            _exit(3);
        uint8_t result[8];
        memset(result, POISON, sizeof result);
        kj_status s = kj_reduce_nccl(rt, comm, part, 5, KJ_OP_SUM, KJ_TYPE_U32, result, NULL);
        int ok = s == status && strstr(kj_last_error(), needle) && result[0] == POISON;
        if (!ok)
            fprintf(stderr, "%s=%s: %s: %s (expected %s, '%s')\n", name, value, kj_status_name(s), kj_last_error(),
                    kj_status_name(status), needle);
        fflush(NULL);
        _exit(ok ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_reduce_nccl_refused(void **state) {
    (void)state;
    size_t before = count_files(cache_dir);
    nccl_refusal_in_child("FAKE_NCCL_DEVICE", "1", KJ_ERR_USAGE,
                          "the communicator is on device 1, the runtime on device 0");
    nccl_refusal_in_child("FAKE_NCCL_ASYNC_ERROR", "3", KJ_ERR_CUDA, "the communicator is in error: NCCL error 3");
    nccl_refusal_in_child("FAKE_NCCL_DISAGREE", "1", KJ_ERR_USAGE, "the ranks disagree: rank 0 of 3 reduces sum u32");
    assert_int_equal(count_files(cache_dir), before);
}

/* kj_compile: result is poisoned first and must stay so; nothing is stored. */
static void expect_compile(const kj_request *req, kj_status status, const char *needle) {
    kj_runtime *rt = compile_runtime();
    size_t before = count_files(cache_dir);
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    memset(&r, POISON, sizeof r);
    r.size = sizeof r;
    EXPECT(kj_compile(rt, req, &r), status, needle);
    assert_int_equal(((uint8_t *)&r)[sizeof r.size], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

static void test_request_without_kernel(void **state) {
    (void)state;
    kj_request req = KJ_REQUEST_INIT;
    expect_compile(&req, KJ_ERR_USAGE, "no kernel given");
}

static void test_define_without_name_or_value(void **state) {
    (void)state;
    kj_define no_name[] = {{NULL, "1"}};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .defines = no_name, .define_count = 1};
    expect_compile(&req, KJ_ERR_INVALID_DEFINE, "macro name '(null)' for reduce");
    kj_define no_value[] = {{"OP", NULL}};
    req.defines = no_value;
    expect_compile(&req, KJ_ERR_INVALID_DEFINE, "macro OP for reduce has no value");
    req.defines = NULL; /* a count without the array */
    expect_compile(&req, KJ_ERR_USAGE, "define_count is 1 but defines is NULL");
}

static void test_define_value_with_space(void **state) {
    (void)state;
    kj_define d[] = {{"OP", "sum -DEVIL=1"}};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .defines = d, .define_count = 1};
    expect_compile(&req, KJ_ERR_INVALID_DEFINE, "values are one word");
}

static void test_request_arch_malformed(void **state) {
    (void)state;
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .arch = "sm_9x"};
    expect_compile(&req, KJ_ERR_USAGE, "arch 'sm_9x' is not a target's name: give sm_XY");
    req.arch = "sm_10";
    expect_compile(&req, KJ_ERR_USAGE, "arch sm_10 is not a target of this NVRTC");
}

static void test_too_many_options(void **state) {
    (void)state;
    const char *opts[200];
    for (size_t i = 0; i < 200; i++) opts[i] = "-lineinfo";
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .options = opts, .option_count = 200};
    expect_compile(&req, KJ_ERR_USAGE, "200 NVRTC options: at most 128");
    const char *reserved[] = {"-DOP=max"};
    req.options = reserved;
    req.option_count = 1;
    expect_compile(&req, KJ_ERR_USAGE, "option '-DOP=max' is set by kernjit");
}

/* A malformed request is refused the same way before and after a valid one with the same fields has
 * been served from memory: the request is checked before the memory map is consulted. */
static void test_malformed_request_after_a_memory_hit(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    kj_define d[] = {{"OP", "sum"}, {"T", "f32"}, {"BLOCK_SIZE", "256"}};
    kj_request good = {.size = sizeof(kj_request), .kernel = "reduce", .defines = d, .define_count = 3};
    kj_request bad = {.size = sizeof(kj_request), .kernel = "reduce", .defines = NULL, .define_count = 3};
    kj_kernel *k = NULL;
    assert_int_equal(kj_kernel_get(rt, &bad, &k, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "define_count is 3 but defines is NULL"));
    KJ_ASSERT_OK(kj_kernel_get(rt, &good, &k, NULL));
    kj_kernel *again = NULL;
    assert_int_equal(kj_kernel_get(rt, &bad, &again, NULL), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "define_count is 3 but defines is NULL"));
    assert_null(again);
    kj_runtime_destroy(rt);
}

static void test_source_text_not_a_kernel(void **state) {
    (void)state;
    kj_request req = {.size = sizeof(kj_request), .kernel = "mine.cu", .source_text = ""};
    expect_compile(&req, KJ_ERR_SOURCE, "'mine.cu' is empty");
    req.source_text = "int main(void) { return 0; }";
    expect_compile(&req, KJ_ERR_SOURCE, "'mine.cu' is not a kernel file");
}

static void test_malformed_source_list(void **state) {
    (void)state;
    char vadd[PATH_MAX];
    snprintf(vadd, sizeof vadd, "%s/vadd.cu", KJ_TEST_KERNELS);
    kj_request req = {.size = sizeof(kj_request), .kernel = vadd, .source_count = 1};
    expect_compile(&req, KJ_ERR_USAGE, "source_count is 1 but sources is NULL");
    const char *null_source[] = {NULL};
    req.sources = null_source;
    expect_compile(&req, KJ_ERR_USAGE, "sources[0] is NULL: give paths to .cu files");
    const char *name[] = {"reduce"};
    req.sources = name;
    expect_compile(&req, KJ_ERR_USAGE, "source 'reduce' is not a path to a .cu file");
    const char *file[] = {vadd};
    req.sources = file;
    req.source_text = "extern \"C\" __global__ void k(int *o) {}";
    expect_compile(&req, KJ_ERR_USAGE, "source_text with sources: a program of several sources is read from files");
    req.source_text = NULL;
    req.source_count = 64;
    expect_compile(&req, KJ_ERR_USAGE, "64 more sources: a program links at most 64 sources in all");
}

/* kj_request.entries: refused before anything compiles (expect_compile checks the result and the
 * cache are left as they were). */
static void test_malformed_entry_list(void **state) {
    (void)state;
    const char *src = "template <typename T> __global__ void k(T *x) { *x = 1; }\n";
    kj_request req = {.size = sizeof(kj_request), .kernel = "k.cu", .source_text = src, .entry_count = 2};
    expect_compile(&req, KJ_ERR_USAGE, "entry_count is 2 but entries is NULL");
    const char *with_null[] = {"k<float>", NULL};
    req.entries = with_null;
    expect_compile(&req, KJ_ERR_USAGE, "entries[1] is NULL: give the entries' names");
    const char *empty[] = {"k<float>", ""};
    req.entries = empty;
    expect_compile(&req, KJ_ERR_USAGE, "entries[1] name of 0 characters: 1 to 512 are allowed");
    const char *twice[] = {"k<float>", "k<int>", "k<float>"};
    req.entries = twice;
    req.entry_count = 3;
    expect_compile(&req, KJ_ERR_USAGE, "entry 'k<float>' is listed twice in entries (0 and 2): list each once");
    req.entry_count = 2;
    req.entry = "k<double>";
    expect_compile(&req, KJ_ERR_USAGE,
                   "entry 'k<double>' is not one of the request's 2 entries (the first is "
                   "'k<float>'): give one of them, or NULL for the first");
    req.entry = NULL;
    const char *many[65];
    for (int i = 0; i < 65; i++) many[i] = "k<float>";
    req.entries = many;
    req.entry_count = 65;
    expect_compile(&req, KJ_ERR_USAGE, "65 entries: one compile takes at most 64");
}

/* Compiled code among a program's sources (.ptx, .cubin, .ltoir): the first source is the .cu file
 * whose metadata speaks for the program; an empty file or PTX with NUL bytes is not code. */
static void test_link_input_refused(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir(), ptx[PATH_MAX], ltoir[PATH_MAX];
    assert_non_null(dir);
    snprintf(ptx, sizeof ptx, "%s/nul.ptx", dir);
    snprintf(ltoir, sizeof ltoir, "%s/empty.ltoir", dir);
    FILE *f = fopen(ptx, "wb");
    assert_non_null(f);
    fwrite(".version 8.0\0\n", 1, 14, f);
    fclose(f);
    f = fopen(ltoir, "wb");
    assert_non_null(f);
    fclose(f);
    const char *vadd[] = {KJ_TEST_KERNELS "/vadd.cu"};
    kj_request first = {.size = sizeof(kj_request), .kernel = ltoir, .sources = vadd, .source_count = 1};
    expect_compile(&first, KJ_ERR_SOURCE, "empty.ltoir' is empty: nothing to link");
    const char *inputs[] = {ptx};
    kj_request with_nul = {.size = sizeof(kj_request), .kernel = vadd[0], .sources = inputs, .source_count = 1};
    expect_compile(&with_nul, KJ_ERR_SOURCE, "nul.ptx' is not PTX (it contains NUL bytes): PTX is text");
    f = fopen(ptx, "wb");
    assert_non_null(f);
    fputs(".version 8.0\n", f);
    fclose(f);
    first.kernel = ptx;
    expect_compile(&first, KJ_ERR_USAGE, "nul.ptx' is the program's first source, which must be a .cu file");
    unlink(ptx);
    unlink(ltoir);
    rmdir(dir);
    free(dir);
}

/* A prefetch that cannot start: refused at once, nothing queued (no compile happens, nothing stored). */
static void test_prefetch_malformed(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    kj_request good = {.size = sizeof(kj_request), .kernel = "vector_add"};
    EXPECT(kj_kernel_prefetch(NULL, &good, 1), KJ_ERR_USAGE, "kj_kernel_prefetch: runtime is NULL");
    EXPECT(kj_kernel_prefetch(rt, NULL, 2), KJ_ERR_USAGE, "kj_kernel_prefetch: 2 requests but requests is NULL");
    kj_request two[2] = {good, {.size = sizeof(kj_request), .kernel = "reduce", .option_count = 1}};
    EXPECT(kj_kernel_prefetch(rt, two, 2), KJ_ERR_USAGE, "option_count is 1 but options is NULL");
    kj_runtime_destroy(rt); /* waits for anything queued: there must be nothing */
    assert_int_equal(count_files(cache_dir), before);
}

/* A caller struct whose size was never set (0), or is no struct's size: an input, an output, an
 * option struct's report, and the options of a runtime. */
static void test_struct_size_not_set(void **state) {
    (void)state;
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    req.size = 0;
    expect_compile(&req, KJ_ERR_USAGE, "kj_request.size is 0: initialize the struct with KJ_REQUEST_INIT");
    req.size = 3;
    expect_compile(&req, KJ_ERR_USAGE, "kj_request.size is 3, not the size of a kj_request");
    req.size = (size_t)-1;
    expect_compile(&req, KJ_ERR_USAGE, "kj_request.size is 18446744073709551615");

    kj_runtime *rt = compile_runtime();
    size_t before = count_files(cache_dir);
    kj_compile_result r;
    memset(&r, POISON, sizeof r);
    r.size = 0;
    req.size = sizeof req;
    EXPECT(kj_compile(rt, &req, &r), KJ_ERR_USAGE,
           "kj_compile_result.size is 0: initialize the struct with KJ_COMPILE_RESULT_INIT");
    assert_int_equal(((uint8_t *)&r)[sizeof r.size], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);

    rt = device_runtime();
    kj_reduce_report report;
    memset(&report, POISON, sizeof report);
    report.size = 0;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &report};
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, 4096, 16, result, &o), KJ_ERR_USAGE, "kj_reduce_report.size is 0");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    assert_int_equal(((uint8_t *)&report)[sizeof report.size], POISON);
    kj_runtime_destroy(rt);

    kj_runtime_options ro;
    memset(&ro, 0, sizeof ro);
    kj_runtime *made = (kj_runtime *)0x1;
    EXPECT(kj_runtime_create(&ro, &made), KJ_ERR_USAGE, "initialize the struct with KJ_RUNTIME_OPTIONS_INIT");
    assert_ptr_equal(made, (kj_runtime *)0x1);
    EXPECT(kj_runtime_options_init(&ro, 0), KJ_ERR_USAGE, "kj_runtime_options.size is 0");
    assert_int_equal(ro.size, 0);
}

/* A caller built against newer headers (a larger struct) that set a field this library does not
 * know: refused, not ignored. Left at 0, the same struct works. */
/* A size that ends inside a field (half of a pointer) would make the library read a pointer from one
 * half the caller's and one half its own defaults; and the padding a struct names must be 0. */
static void test_struct_size_inside_a_field(void **state) {
    (void)state;
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    req.size = 12;
    expect_compile(&req, KJ_ERR_USAGE,
                   "kj_request.size is 12, which ends inside a field: the sizes of a kj_request are multiples of 8");
    req.size = 68;
    expect_compile(&req, KJ_ERR_USAGE, "kj_request.size is 68, which ends inside a field");

    kj_runtime_options ro = KJ_RUNTIME_OPTIONS_INIT;
    ro.size = 20;
    kj_runtime *made = (kj_runtime *)0x1;
    EXPECT(kj_runtime_create(&ro, &made), KJ_ERR_USAGE, "kj_runtime_options.size is 20, which ends inside a field");
    assert_ptr_equal(made, (kj_runtime *)0x1);
    EXPECT(kj_runtime_options_init(&ro, 12), KJ_ERR_USAGE, "kj_runtime_options.size is 12, which ends inside a field");
    assert_int_equal(ro.size, 20);

    kj_runtime_options padded = KJ_RUNTIME_OPTIONS_INIT;
    padded.device = KJ_DEVICE_NONE;
    padded.reserved = 7;
    EXPECT(kj_runtime_create(&padded, &made), KJ_ERR_USAGE, "kj_runtime_options.reserved is 7: it must be 0");
    assert_ptr_equal(made, (kj_runtime *)0x1);

    kj_runtime *rt = device_runtime();
    kj_reduce_report report;
    memset(&report, POISON, sizeof report);
    report.size = 36;
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .report = &report};
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, 4096, 16, result, &o), KJ_ERR_USAGE,
           "kj_reduce_report.size is 36, which ends inside a field");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    assert_int_equal(((uint8_t *)&report)[sizeof report.size], POISON);
    kj_runtime_destroy(rt);
}

/* A grid bound (WAVES) the entry cannot honour, a value the metadata does not allow, and the named
 * padding of the options set: refused before anything runs. */
static void test_launch_waves_refused(void **state) {
    (void)state;
    kj_runtime *rt = device_runtime();
    size_t before = count_files(cache_dir);
    uint8_t result[8];
    memset(result, POISON, sizeof result);
    kj_reduce_options o = {.size = sizeof(kj_reduce_options), .entry = "reduce_segmented", .waves = 4};
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, 4096, 16, result, &o), KJ_ERR_USAGE,
           "reduce_segmented has a grid fixed by n: WAVES (waves) applies to reduce_fast alone");
    o = (kj_reduce_options){.size = sizeof(kj_reduce_options), .waves = 3};
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, 4096, 16, result, &o), KJ_ERR_INVALID_DEFINE, "WAVES=3");
    o = (kj_reduce_options){.size = sizeof(kj_reduce_options), .reserved = 1};
    EXPECT(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_F32, 4096, 16, result, &o), KJ_ERR_USAGE,
           "kj_reduce_options.reserved is 1: it must be 0");
    for (size_t i = 0; i < sizeof result; i++) assert_int_equal(result[i], POISON);
    kj_vector_add_options v = {.size = sizeof(kj_vector_add_options), .reserved = 2};
    EXPECT(kj_vector_add(rt, KJ_TYPE_F32, 4096, 8192, 12288, 16, &v), KJ_ERR_USAGE,
           "kj_vector_add_options.reserved is 2: it must be 0");
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

static void test_struct_with_unknown_fields_set(void **state) {
    (void)state;
    struct {
        kj_request req;
        uint64_t newer; /* a field of a later release */
    } big;
    memset(&big, 0, sizeof big);
    big.req.size = sizeof big;
    big.req.kernel = "empty.cu";
    big.req.source_text = "extern \"C\" __global__ void k(int *x) { *x = 1; }\n";
    big.newer = 1;
    expect_compile(&big.req, KJ_ERR_USAGE, "kj_request has a non-zero byte at offset");

    kj_runtime *rt = compile_runtime();
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    big.newer = 0;
    KJ_ASSERT_OK(kj_compile(rt, &big.req, &r));
    kj_reduce_options o = {.size = sizeof(kj_reduce_options)};
    struct {
        kj_reduce_options o;
        unsigned char newer[8];
    } big_o;
    memset(&big_o, 0, sizeof big_o);
    big_o.o = o;
    big_o.o.size = sizeof big_o;
    big_o.newer[7] = 1;
    EXPECT(kj_reduce_prefetch(rt, KJ_OP_SUM, KJ_TYPE_F32, 16, &big_o.o), KJ_ERR_USAGE,
           "kj_reduce_options has a non-zero byte at offset");
    kj_runtime_destroy(rt);
}

static void test_runtime_arch_malformed(void **state) {
    (void)state;
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.arch = "compute_9";
    kj_runtime *rt = (kj_runtime *)0x1;
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "arch 'compute_9' is not a target's name");
    assert_ptr_equal(rt, (kj_runtime *)0x1);
    o.arch = NULL;
    o.device = 7; /* the stub has one device */
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "device 7 does not exist: this machine has 1 device");
    o.device = -5;
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "device -5");
    assert_ptr_equal(rt, (kj_runtime *)0x1);
}

/* A target whose code the device does not run, for the runtime or for one request: refused before
 * the driver sees a binary (nothing compiled, nothing stored). The stub device is 9.0. */
static void test_arch_the_device_does_not_run(void **state) {
    (void)state;
    size_t before = count_files(cache_dir);
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = 0;
    o.cache_dir = cache_dir;
    o.arch = "sm_100a";
    kj_runtime *rt = (kj_runtime *)0x1;
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE,
           "arch sm_100a: its code runs only on compute capability 10.0, and device 0 (kernjit stub device) is 9.0 "
           "(sm_90): build for sm_90, or for a target that runs there");
    assert_ptr_equal(rt, (kj_runtime *)0x1);
    rt = device_runtime();
    kj_kernel *k = (kj_kernel *)0x1;
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .arch = "sm_80"};
    EXPECT(kj_kernel_get(rt, &req, &k, NULL), KJ_ERR_USAGE,
           "arch sm_80: its code runs on compute capability 8.0 to 8.9");
    req.arch = "compute_100";
    EXPECT(kj_kernel_get(rt, &req, &k, NULL), KJ_ERR_USAGE, "its code runs on compute capability 10.0 and newer");
    assert_ptr_equal(k, (kj_kernel *)0x1);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

/* A target this toolkit's device runtime has no code for (CUDA 13.0's has none for sm_87 and
 * sm_88): a kernel that launches kernels cannot be linked for it, and the message says that the
 * toolkit lacks it rather than nvJitLink's "bad input". On a toolkit without such a gap, every
 * target NVRTC has must have the device runtime's code. */
static void test_device_runtime_without_code_for_the_target(void **state) {
    (void)state;
    const int *archs;
    int n = kj__arch_list(&archs), gap = 0;
    for (int i = 0; i < n && !gap; i++)
        if (kj__devrt_has_code(archs[i]) == 0) gap = archs[i];
    if (!gap) {
        for (int i = 0; i < n; i++) assert_int_equal(kj__devrt_has_code(archs[i]), 1);
        return;
    }
    kj_runtime *rt = compile_runtime();
    size_t before = count_files(cache_dir);
    char arch[16], want[128];
    snprintf(arch, sizeof arch, "sm_%d", gap);
    snprintf(want, sizeof want, "has no code for sm_%d: kernels that launch kernels cannot be built for it", gap);
    kj_request req = {.size = sizeof(kj_request), .kernel = "nested", .arch = arch};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    EXPECT(kj_compile(rt, &req, &r), KJ_ERR_LINK, want);
    assert_non_null(strstr(kj_last_error(), "this toolkit's device runtime ("));
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

/* A remote cache configured wrongly through the options: a usage error at creation, before anything
 * is contacted, naming the value; no runtime. */
static void test_remote_cache_options_malformed(void **state) {
    (void)state;
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.cache_dir = cache_dir;
    o.remote_cache = "memcached://cache:11211";
    kj_runtime *rt = (kj_runtime *)0x1;
    size_t before = count_files(cache_dir);
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "remote_cache='memcached://cache:11211' is not a Redis URL");
    o.remote_cache = "redis://cache:6379";
    o.remote_mode = (kj_remote_mode)9;
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "remote_mode 9 is not KJ_REMOTE_DEFAULT");
    o.remote_mode = KJ_REMOTE_DEFAULT;
    o.remote_secret = "too short";
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "the secret is 9 bytes; 16 to 4096 are allowed");
    o.remote_secret = "~/.kernjit/remote-secret";
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "remote_secret looks like a relative path");
    o.remote_secret = NULL;
    o.remote_cache = "redis://builder:hun?ter2@cache:0";
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE, "remote_cache='redis://builder:***@cache:0': port '0'");
    assert_ptr_equal(rt, (kj_runtime *)0x1);
    assert_int_equal(count_files(cache_dir), before);
}

/* Seeds: a seed secret that is not allowed is refused when the runtime is made, as the remote cache's
 * is; kj_seed_sign needs a secret and a disk cache. */
static void test_seed_refused(void **state) {
    (void)state;
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.cache_dir = cache_dir;
    kj_runtime *rt = (kj_runtime *)0x1;
    size_t before = count_files(cache_dir);
    setenv("KERNJIT_SEED_SECRET", "too short", 1);
    EXPECT(kj_runtime_create(&o, &rt), KJ_ERR_USAGE,
           "KERNJIT_SEED_SECRET: the secret is 9 bytes; 16 to 4096 are allowed");
    assert_ptr_equal(rt, (kj_runtime *)0x1);
    unsetenv("KERNJIT_SEED_SECRET");
    unsetenv("KERNJIT_REMOTE_SECRET");
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    uint64_t count = 77;
    EXPECT(kj_seed_sign(rt, &count), KJ_ERR_USAGE, "no secret to sign the seed with: set KERNJIT_SEED_SECRET");
    assert_int_equal(count, 77);
    kj_runtime_destroy(rt);
    o.cache_mode = KJ_CACHE_MEMORY_ONLY;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    EXPECT(kj_seed_sign(rt, &count), KJ_ERR_NOT_FOUND, "this runtime has no disk cache");
    EXPECT(kj_seed_sign(NULL, &count), KJ_ERR_USAGE, "runtime is NULL");
    assert_int_equal(count, 77);
    kj_runtime_destroy(rt);
    assert_int_equal(count_files(cache_dir), before);
}

static void test_search_path_entry_is_a_file(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/not-a-folder", dir);
    kj_test_write(file, "x", 1);
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.cache_dir = cache_dir;
    o.search_path = file;
    kj_runtime *rt;
    KJ_ASSERT_OK(kj_runtime_create(&o, &rt));
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    EXPECT(kj_compile(rt, &req, NULL), KJ_ERR_USAGE, "is not a folder: the search path lists folders");
    kj_kernel_desc *d = (kj_kernel_desc *)0x1;
    EXPECT(kj_describe(rt, "reduce", &d), KJ_ERR_USAGE, "is not a folder");
    assert_ptr_equal(d, (kj_kernel_desc *)0x1);
    kj_runtime_destroy(rt);
    kj_test_rmdir(dir);
}

static void test_kernel_names_too_long(void **state) {
    (void)state;
    char name[70], path[5000], entry[600];
    memset(name, 'k', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    kj_request req = {.size = sizeof(kj_request), .kernel = name};
    expect_compile(&req, KJ_ERR_USAGE, "kernel name of 69 characters: at most 64");
    memset(path, 'p', sizeof path - 4);
    memcpy(path + sizeof path - 4, ".cu", 4);
    req.kernel = path;
    expect_compile(&req, KJ_ERR_USAGE, "kernel path of 4999 characters: at most 4095");
    memset(entry, 'e', sizeof entry - 1);
    entry[sizeof entry - 1] = '\0';
    req.kernel = "reduce";
    req.entry = entry;
    expect_compile(&req, KJ_ERR_USAGE, "entry name of 599 characters: 1 to 512");
}

static void count_tuned(const kj_tuned *entry, void *user) {
    (void)entry;
    (*(int *)user)++;
}

/* A tuning database damaged by a crash, a full disk or a careless edit: each bad line is ignored with
 * a warning, the good ones are still used, and reading leaves the file as it was. */
static void test_damaged_tuning_database(void **state) {
    (void)state;
    char *dir = kj_test_tmpdir();
    kj_test_log log;
    kj_runtime *rt = kj_test_runtime(dir, KJ_DEVICE_NONE, &log);
    assert_non_null(rt);
    const char text[] = "reduce\treduce_fast\tOP=sum T=f32\t28\tNVIDIA H100 80GB HBM3\t9.0\t0.1.0\t"
                        "BLOCK_SIZE=1024 COARSE_FACTOR=4\t3140.2\t341.906\t268435456\t1735689600\n"
                        "garbage without tabs\n"
                        "\x01\x02\xff binary\tjunk\n"
                        "reduce\treduce_fast\tOP=max T=f32\t28\tNVIDIA H100"; /* truncated, no new line */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tuning.db", dir);
    kj_test_write(path, text, sizeof text - 1);
    int listed = 0;
    assert_int_equal(kj_tune_db_list(rt, count_tuned, &listed), KJ_OK);
    assert_int_equal(listed, 1);
    assert_int_equal(log.warnings, 3);
    assert_non_null(strstr(log.last, "ignored (the next store drops it)"));
    FILE *f = fopen(path, "rb");
    char back[sizeof text];
    assert_int_equal(fread(back, 1, sizeof back, f), sizeof text - 1);
    fclose(f);
    assert_memory_equal(back, text, sizeof text - 1);
    kj_runtime_destroy(rt);
    kj_test_rmdir(dir);
}

/* count macros M0=value, M1=value, ...; free with free_macros */
typedef struct macros {
    kj_define *d;
    char (*names)[16];
} macros;

static macros make_macros(int count, const char *value) {
    macros m = {calloc((size_t)count, sizeof *m.d), calloc((size_t)count, sizeof *m.names)};
    assert_true(m.d && m.names);
    for (int i = 0; i < count; i++) {
        snprintf(m.names[i], sizeof m.names[i], "M%d", i);
        m.d[i] = (kj_define){m.names[i], value};
    }
    return m;
}

static void free_macros(macros m) {
    free(m.d);
    free(m.names);
}

/* A C++ entry whose stored description passes the entry format's 64 KiB (1000 macros of 256
 * characters): once its lowered name was cut off, and every later process failed with "not a
 * kernel" until `cache clear`. A new runtime loads it from the disk. */
static void test_long_description_keeps_the_lowered_name(void **state) {
    (void)state;
    char value[257];
    memset(value, 'v', 256);
    value[256] = '\0';
    macros m = make_macros(1000, value);
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = "scale.cu",
                      .source_text = "template <int N> __global__ void scale(int *x) { *x = N; }\n",
                      .entry = "scale<3>",
                      .defines = m.d,
                      .define_count = 1000};
    kj_kernel *k = NULL;
    kj_origin origin;
    for (int run = 0; run < 2; run++) {
        kj_runtime *rt = device_runtime();
        kj_status s = kj_kernel_get(rt, &req, &k, &origin);
        if (s != KJ_OK) fail_msg("run %d: %s", run, kj_last_error());
        assert_int_equal(origin, run == 0 ? KJ_ORIGIN_COMPILED : KJ_ORIGIN_DISK);
        kj_runtime_destroy(rt);
    }
    free_macros(m);
}

/* More macros than a metadata block may declare: once "out of memory" (NVRTC's option list ran out) */
static void test_too_many_macros(void **state) {
    (void)state;
    macros m = make_macros(1025, "1");
    kj_runtime *rt = compile_runtime();
    size_t before = count_files(cache_dir);
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = "mine.cu",
                      .source_text = "extern \"C\" __global__ void k(int *x) { *x = 1; }\n",
                      .defines = m.d,
                      .define_count = 1025};
    EXPECT(kj_compile(rt, &req, NULL), KJ_ERR_USAGE, "1025 macros for mine: at most 1024 are allowed");
    req.define_count = 1024; /* the limit itself compiles */
    KJ_ASSERT_OK(kj_compile(rt, &req, NULL));
    assert_true(count_files(cache_dir) > before);
    kj_runtime_destroy(rt);
    free_macros(m);
}

/* The process out of file descriptors, in a new process (NVRTC opens its builtins library in a
 * process's first compile, and this one has compiled): a compile used to fail with NVRTC's "Make sure
 * that libnvrtc-builtins.so is installed correctly", after the cache had quietly been given up. */
static int compile_without_descriptors(const char *dir) {
    kj_runtime *rt = kj_test_runtime(dir, KJ_DEVICE_NONE, NULL);
    struct rlimit rl;
    if (!rt || getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
    rl.rlim_cur = 32;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
    int fds[64], n = 0;
    while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0) n++;
    kj_request req = {.size = sizeof(kj_request), .kernel = "vector_add"};
    kj_status s = kj_compile(rt, &req, NULL);
    while (n > 0) close(fds[--n]);
    printf("%s\n%s", kj_status_name(s), kj_last_error());
    kj_runtime_destroy(rt);
    return 0;
}

static void test_out_of_file_descriptors(void **state) {
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        execl("/proc/self/exe", "test-bad-input-api", "--out-of-descriptors", cache_dir, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char out[8192];
    size_t got = 0;
    for (ssize_t r; got < sizeof out - 1 && (r = read(p[0], out + got, sizeof out - 1 - got)) > 0;) got += (size_t)r;
    out[got] = '\0';
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *message = strchr(out, '\n');
    assert_non_null(message);
    *message++ = '\0';
    assert_string_equal(out, kj_status_name(KJ_ERR_IO));
    /* the cause leads; NVRTC's own words follow it */
    if (!strstr(message, "Too many open files: this process has all the"))
        fail_msg("the message does not name the cause: %s", message);
    assert_true(strstr(message, "Too many open files") < strchr(message, '\n'));
}

static void test_emit_misuse(void **state) {
    (void)state;
    kj_runtime *rt = compile_runtime();
    size_t before = count_files(cache_dir);
    void *data = (void *)&POISON;
    size_t size = 7;
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    EXPECT(kj_emit(rt, &req, (kj_emit_format)4, &data, &size, NULL), KJ_ERR_USAGE,
           "format 4 is not one of KJ_EMIT_CUBIN, KJ_EMIT_PTX, KJ_EMIT_LTOIR, KJ_EMIT_FATBIN");
    EXPECT(kj_emit(rt, &req, KJ_EMIT_PTX, NULL, &size, NULL), KJ_ERR_USAGE, "data and size are required");
    kj_emit_format format = KJ_EMIT_PTX;
    EXPECT(kj_emit_format_parse("sass", &format), KJ_ERR_USAGE,
           "unknown output format 'sass': allowed are cubin, ptx, ltoir, fatbin");
    const char *twice[] = {"sm_80", "sm_80"};
    EXPECT(kj_emit_fatbin(rt, &req, twice, 2, &data, &size, NULL), KJ_ERR_USAGE,
           "kj_emit_fatbin: target sm_80 is given twice: a fat binary holds one image a target");
    EXPECT(kj_emit_fatbin(rt, &req, twice, 0, &data, &size, NULL), KJ_ERR_USAGE,
           "kj_emit_fatbin: 0 targets: give 1 to 16");
    const char *none[] = {NULL};
    EXPECT(kj_emit_fatbin(rt, &req, none, 1, &data, &size, NULL), KJ_ERR_USAGE, "kj_emit_fatbin: target 0 is NULL");
    assert_int_equal(format, KJ_EMIT_PTX);
    const char *more[] = {KJ_TEST_KERNELS "/link_lib.cu"};
    kj_request program = {.size = sizeof(kj_request),
                          .kernel = KJ_TEST_KERNELS "/link_main.cu",
                          .entry = "blend",
                          .sources = more,
                          .source_count = 1};
    EXPECT(kj_emit(rt, &program, KJ_EMIT_LTOIR, &data, &size, NULL), KJ_ERR_USAGE, "LTO-IR of a program of 2 sources");
    /* a -dlto request makes LTO-IR, never PTX */
    const char *dlto[] = {"-dlto"};
    kj_request asked = {.size = sizeof(kj_request), .kernel = "reduce", .options = dlto, .option_count = 1};
    EXPECT(kj_emit(rt, &asked, KJ_EMIT_PTX, &data, &size, NULL), KJ_ERR_USAGE,
           "PTX with -dlto: a -dlto compile makes LTO-IR (emit ltoir), or the linked program (emit cubin)");
    assert_ptr_equal(data, &POISON);
    assert_int_equal(size, 7);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

static void test_compile_all_shard_out_of_range(void **state) {
    (void)state;
    kj_runtime *rt = compile_runtime();
    size_t before = count_files(cache_dir);
    kj_compile_all_result r;
    memset(&r, POISON, sizeof r);
    r.size = sizeof r;
    kj_compile_all_options o = {
        .size = sizeof(kj_compile_all_options), .kernel = "reduce", .arch = "sm_90", .shard = 3, .shards = 3};
    EXPECT(kj_compile_all(rt, &o, &r), KJ_ERR_USAGE, "shard 3 of 3 shards: the shard must be below shards");
    o.shards = 0; /* 0 shards is the whole space, shard 0 only */
    EXPECT(kj_compile_all(rt, &o, &r), KJ_ERR_USAGE, "shard 3 of 0 shards");
    for (size_t i = sizeof r.size; i < sizeof r; i++) assert_int_equal(((unsigned char *)&r)[i], POISON);
    assert_int_equal(count_files(cache_dir), before);
    kj_runtime_destroy(rt);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--out-of-descriptors") == 0) return compile_without_descriptors(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: test-bad-input-api path/to/libstub-cuda.so\n");
        return 2;
    }
    setenv("KERNJIT_LIBCUDA", argv[1], 1); /* before the first kj_ call loads a driver */
    unsetenv("KERNJIT_REMOTE_CACHE");
    cache_dir = kj_test_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_byte_count_overflows),
        cmocka_unit_test(test_vector_add_byte_count_overflows),
        cmocka_unit_test(test_nested_reduce_byte_count_overflows),
        cmocka_unit_test(test_type_the_family_lacks),
        cmocka_unit_test(test_transpose_side_too_large),
        cmocka_unit_test(test_alloc_beyond_device_memory),
        cmocka_unit_test(test_unknown_op_and_type),
        cmocka_unit_test(test_request_without_kernel),
        cmocka_unit_test(test_define_without_name_or_value),
        cmocka_unit_test(test_define_value_with_space),
        cmocka_unit_test(test_request_arch_malformed),
        cmocka_unit_test(test_too_many_options),
        cmocka_unit_test(test_too_many_macros),
        cmocka_unit_test(test_long_description_keeps_the_lowered_name),
        cmocka_unit_test(test_source_text_not_a_kernel),
        cmocka_unit_test(test_malformed_request_after_a_memory_hit),
        cmocka_unit_test(test_runtime_arch_malformed),
        cmocka_unit_test(test_arch_the_device_does_not_run),
        cmocka_unit_test(test_device_runtime_without_code_for_the_target),
        cmocka_unit_test(test_remote_cache_options_malformed),
        cmocka_unit_test(test_seed_refused),
        cmocka_unit_test(test_search_path_entry_is_a_file),
        cmocka_unit_test(test_kernel_names_too_long),
        cmocka_unit_test(test_damaged_tuning_database),
        cmocka_unit_test(test_out_of_file_descriptors),
        cmocka_unit_test(test_malformed_source_list),
        cmocka_unit_test(test_malformed_entry_list),
        cmocka_unit_test(test_link_input_refused),
        cmocka_unit_test(test_emit_misuse),
        cmocka_unit_test(test_prefetch_malformed),
        cmocka_unit_test(test_compile_all_shard_out_of_range),
        cmocka_unit_test(test_reduce_devices_malformed),
        cmocka_unit_test(test_reduce_devices_part_fails),
        cmocka_unit_test(test_reduce_nccl_refused), /* its children load NCCL: before this process fails to */
        cmocka_unit_test(test_reduce_nccl_malformed),
        cmocka_unit_test(test_struct_size_not_set),
        cmocka_unit_test(test_struct_with_unknown_fields_set),
        cmocka_unit_test(test_struct_size_inside_a_field),
        cmocka_unit_test(test_launch_waves_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kj_test_rmdir(cache_dir);
    return rc;
}
