/* kj_emit (compile suite: NVRTC and nvJitLink, no GPU): the compiler's output in hand. A cubin is the
 * cache entry's binary, an ELF for NVIDIA's machine, and the same bytes the entry holds after its
 * header; PTX is NVRTC's text for the target; LTO-IR links with nvJitLink (-lto) into a cubin; a fat
 * binary holds each target's cubin, as the toolkit's fatbinary writes it. The CLI's --emit (files,
 * stdout, cuobjdump when the toolkit has it) is in tests/test-cli.sh. */
#include "test_util.h"

#include <nvJitLink.h>
#include <sys/stat.h>

#include "jit/fatbin.h"
#include "jit/toolkit.h"

#define EM_CUDA 190 /* e_machine of NVIDIA's ELF files */

/* An ELF file for NVIDIA's machine: the magic, 64-bit, and e_machine (2 bytes at 18, little-endian). */
static void assert_cuda_elf(const unsigned char *data, size_t size) {
    assert_true(size > 64);
    assert_memory_equal(data, "\177ELF", 4);
    assert_int_equal(data[4], 2); /* ELFCLASS64 */
    assert_int_equal(data[18] | data[19] << 8, EM_CUDA);
}

/* The whole file at path: malloc'd, its size in *size. */
static unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *data = malloc((size_t)n);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return data;
}

static void test_cubin_is_the_cache_entry_binary(void **state) {
    (void)state;
    kj_define d[] = {{"OP", "max"}, {"T", "f64"}};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .defines = d, .define_count = 2};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    void *data;
    size_t size;
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &req, KJ_EMIT_CUBIN, &data, &size, &r));
    assert_cuda_elf(data, size);
    assert_int_equal(r.origin, KJ_ORIGIN_COMPILED);
    assert_true(r.stored);
    assert_int_equal(r.binary_bytes, size);
    /* the entry on disk: kernjit's header and description, then these very bytes */
    size_t entry_size;
    unsigned char *entry = read_all(r.cache_path, &entry_size);
    assert_true(entry_size > size);
    assert_memory_not_equal(entry, "\177ELF", 4);
    assert_memory_equal(entry + entry_size - size, data, size);
    free(entry);
    kj_emit_free(data);
    /* again: a cache hit, the same bytes */
    void *again;
    size_t again_size;
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &req, KJ_EMIT_CUBIN, &again, &again_size, &r));
    assert_true(r.cache_hit);
    assert_int_equal(again_size, size);
    kj_emit_free(again);
    kj_emit_free(NULL);
}

static void test_ptx_is_text_for_the_target(void **state) {
    (void)state;
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    void *data;
    size_t size;
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &req, KJ_EMIT_PTX, &data, &size, &r));
    const char *ptx = data;
    assert_int_equal(strlen(ptx), size); /* NUL-terminated, the NUL not counted */
    assert_non_null(strstr(ptx, ".target sm_90"));
    assert_non_null(strstr(ptx, ".entry reduce_fast("));
    /* compiled now, not taken from the cache nor put there */
    assert_int_equal(r.origin, KJ_ORIGIN_COMPILED);
    assert_false(r.cache_hit);
    assert_false(r.stored);
    assert_string_equal(r.cache_path, "");
    assert_true(r.is_ptx);
    kj_emit_free(data);
    /* a C++ entry: the PTX names its lowered symbol */
    char vadd[PATH_MAX];
    snprintf(vadd, sizeof vadd, "%s/vadd.cu", KJ_TEST_KERNELS);
    kj_request cpp = {.size = sizeof(kj_request), .kernel = vadd};
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &cpp, KJ_EMIT_PTX, &data, &size, &r));
    assert_non_null(strstr(data, ".entry _Z4vaddPKfS0_Pfi("));
    kj_emit_free(data);
}

/* LTO-IR is what nvJitLink takes for link-time optimization: linked here into a cubin. */
static void test_ltoir_links_with_nvjitlink(void **state) {
    (void)state;
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    void *data;
    size_t size;
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &req, KJ_EMIT_LTOIR, &data, &size, NULL));
    assert_true(size > 0);
    nvJitLinkHandle h;
    const char *opts[] = {"-arch=sm_90", "-lto"};
    assert_int_equal(nvJitLinkCreate(&h, 2, opts), NVJITLINK_SUCCESS);
    assert_int_equal(nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, data, size, "reduce"), NVJITLINK_SUCCESS);
    assert_int_equal(nvJitLinkComplete(h), NVJITLINK_SUCCESS);
    size_t cubin_size = 0;
    assert_int_equal(nvJitLinkGetLinkedCubinSize(h, &cubin_size), NVJITLINK_SUCCESS);
    unsigned char *cubin = malloc(cubin_size);
    assert_non_null(cubin);
    assert_int_equal(nvJitLinkGetLinkedCubin(h, cubin), NVJITLINK_SUCCESS);
    assert_cuda_elf(cubin, cubin_size);
    free(cubin);
    nvJitLinkDestroy(&h);
    kj_emit_free(data);
}

/* A program of several sources gives its linked cubin; one that launches kernels, too (with the
 * device runtime). */
static void test_linked_programs(void **state) {
    (void)state;
    kj_request program = kj_test_two_sources("blend");
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    void *data;
    size_t size;
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &program, KJ_EMIT_CUBIN, &data, &size, &r));
    assert_cuda_elf(data, size);
    assert_int_equal(r.source_count, 2);
    kj_emit_free(data);
    kj_request nested = {.size = sizeof(kj_request), .kernel = "nested"};
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &nested, KJ_EMIT_CUBIN, &data, &size, &r));
    assert_cuda_elf(data, size);
    assert_true(r.linked);
    kj_emit_free(data);
    /* its PTX is the source's own, before the link */
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &nested, KJ_EMIT_PTX, &data, &size, &r));
    assert_non_null(strstr(data, ".entry nested_reduce("));
    kj_emit_free(data);
}

/* What goes wrong is the request's fault as for kj_compile, and nothing is given. */
static void write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

/* A fat binary of sm_80 and sm_90: each image is that target's cubin, as kj_emit gives it; where
 * kernjit packs it (no nvFatbin), byte for byte what the toolkit's fatbinary makes of the cubins. */
static void test_fatbin_of_two_targets(void **state) {
    (void)state;
    kj_request req = {.size = sizeof(kj_request), .kernel = KJ_TEST_KERNELS "/vadd.cu"};
    const char *archs[] = {"sm_80", "sm_90"};
    void *fat, *cubin[2];
    size_t fat_size, cubin_size[2];
    kj_compile_result r = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_emit_fatbin(kj_test_rt, &req, archs, 2, &fat, &fat_size, &r));
    assert_int_equal(r.binary_bytes, fat_size);
    int arch[4], ptx[4];
    assert_int_equal(kj__fatbin_list(fat, fat_size, arch, ptx, 4), 2);
    assert_int_equal(arch[0], 80);
    assert_int_equal(arch[1], 90);
    assert_false(ptx[0] || ptx[1]);
    for (int i = 0; i < 2; i++) {
        kj_request one = req;
        one.arch = archs[i];
        KJ_ASSERT_OK(kj_emit(kj_test_rt, &one, KJ_EMIT_CUBIN, &cubin[i], &cubin_size[i], NULL));
        assert_non_null(memmem(fat, fat_size, cubin[i], cubin_size[i])); /* the cubin itself, whole */
    }
    int packed_here = kj_emit_fatbin_target("compute_90") != KJ_OK; /* no nvFatbin */
    char tool[PATH_MAX];
    snprintf(tool, sizeof tool, "%s/bin/fatbinary", kj__cuda_home());
    struct stat st;
    if (packed_here && stat(tool, &st) == 0) {
        char c80[PATH_MAX], c90[PATH_MAX], out[PATH_MAX], cmd[5 * PATH_MAX];
        snprintf(c80, sizeof c80, "%s/v80.cubin", kj_test_dir);
        snprintf(c90, sizeof c90, "%s/v90.cubin", kj_test_dir);
        snprintf(out, sizeof out, "%s/ref.fatbin", kj_test_dir);
        write_file(c80, cubin[0], cubin_size[0]);
        write_file(c90, cubin[1], cubin_size[1]);
        snprintf(cmd, sizeof cmd,
                 "'%s' --64 --create='%s' --image3=kind=elf,sm=80,file='%s' --image3=kind=elf,sm=90,file='%s'", tool,
                 out, c80, c90);
        assert_int_equal(system(cmd), 0);
        size_t ref_size;
        unsigned char *ref = read_all(out, &ref_size);
        assert_int_equal(ref_size, fat_size);
        assert_memory_equal(ref, fat, fat_size);
        free(ref);
    }
    /* one target through kj_emit */
    void *single;
    size_t single_size;
    kj_request at90 = req;
    at90.arch = "sm_90";
    KJ_ASSERT_OK(kj_emit(kj_test_rt, &at90, KJ_EMIT_FATBIN, &single, &single_size, NULL));
    assert_int_equal(kj__fatbin_list(single, single_size, arch, ptx, 4), 1);
    assert_int_equal(arch[0], 90);
    assert_int_equal(kj__fatbin_list("not a fat binary", 16, arch, ptx, 4), -1);
    kj_emit_free(single);
    kj_emit_free(cubin[0]);
    kj_emit_free(cubin[1]);
    kj_emit_free(fat);
    /* what kernjit's writer cannot hold is refused before anything compiles */
    if (packed_here) {
        const char *ptx_too[] = {"sm_80", "compute_90"};
        assert_int_equal(kj_emit_fatbin(kj_test_rt, &req, ptx_too, 2, &fat, &fat_size, NULL), KJ_ERR_UNSUPPORTED);
        assert_non_null(strstr(kj_last_error(), "a fat binary with compute_90 (PTX) needs nvFatbin"));
        assert_int_equal(kj_emit_fatbin_target("sm_90a"), KJ_ERR_UNSUPPORTED);
    }
    KJ_ASSERT_OK(kj_emit_fatbin_target("sm_90"));
}

static void test_failures_give_nothing(void **state) {
    (void)state;
    void *data = (void *)&data;
    size_t size = 7;
    kj_define bad[] = {{"OP", "avg"}};
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce", .defines = bad, .define_count = 1};
    assert_int_equal(kj_emit(kj_test_rt, &req, KJ_EMIT_PTX, &data, &size, NULL), KJ_ERR_INVALID_DEFINE);
    kj_request broken = {
        .size = sizeof(kj_request), .kernel = "broken.cu", .source_text = "extern \"C\" __global__ void k() { oops; }"};
    assert_int_equal(kj_emit(kj_test_rt, &broken, KJ_EMIT_LTOIR, &data, &size, NULL), KJ_ERR_COMPILE);
    assert_non_null(strstr(kj_last_error(), "oops"));
    assert_ptr_equal(data, (void *)&data);
    assert_int_equal(size, 7);
    kj_emit_format f;
    for (int i = 0; i < KJ_EMIT_FORMAT_COUNT_; i++) {
        KJ_ASSERT_OK(kj_emit_format_parse(kj_emit_format_name((kj_emit_format)i), &f));
        assert_int_equal(f, i);
    }
    assert_string_equal(kj_emit_format_name((kj_emit_format)9), "unknown");
}

KJ_TEST_MAIN(kj_test_setup_workspace, kj_test_teardown, cmocka_unit_test(test_cubin_is_the_cache_entry_binary),
             cmocka_unit_test(test_ptx_is_text_for_the_target), cmocka_unit_test(test_ltoir_links_with_nvjitlink),
             cmocka_unit_test(test_linked_programs), cmocka_unit_test(test_fatbin_of_two_targets),
             cmocka_unit_test(test_failures_give_nothing))
