/* The cache key: the same inputs give the same key; changing any input gives another. */
#include "test_util.h"

#include "jit/key.h"

typedef struct {
    kj__source src, second;
    const kj__source *units[2];
    const char *options[4];
    uint8_t devrt[16];
    kj__key_input in;
} fixture;

static void setup_fixture(fixture *f) {
    memset(f, 0, sizeof *f);
    f->src.text = strdup("__global__ void k() {}");
    f->src.len = strlen(f->src.text);
    f->src.file = strdup("k.cu");
    f->src.header_count = 2;
    f->src.headers = calloc(2, sizeof *f->src.headers);
    f->src.headers[0] = (kj__header){strdup("a.cuh"), strdup("A"), 1};
    f->src.headers[1] = (kj__header){strdup("b.cuh"), strdup("B"), 1};
    f->second.text = strdup("__device__ int g;");
    f->second.len = strlen(f->second.text);
    f->second.file = strdup("g.cu");
    f->units[0] = &f->src;
    f->units[1] = &f->second;
    f->options[0] = "-arch=sm_90";
    f->options[1] = "-DX=1";
    f->options[2] = "-DY=2";
    memset(f->devrt, 7, 16);
    f->in = (kj__key_input){13000, 0, 13000, NULL, "sm_90", f->options, 3, NULL, f->units, 1, NULL};
}

static void teardown_fixture(fixture *f) {
    free(f->src.text);
    free(f->src.file);
    free(f->second.text);
    free(f->second.file);
    for (size_t i = 0; i < f->src.header_count; i++) {
        free(f->src.headers[i].name);
        free(f->src.headers[i].text);
    }
    free(f->src.headers);
}

static kj__key key_of(const fixture *f) {
    kj__key k;
    kj__key_compute(&f->in, &k);
    return k;
}

static void expect_differs(const kj__key *base, const fixture *f, const char *what) {
    kj__key k = key_of(f);
    if (memcmp(k.bytes, base->bytes, 16) == 0) fail_msg("changing %s left the key unchanged", what);
}

static void test_stable(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f);
    kj__key a = key_of(&f), b = key_of(&f);
    assert_memory_equal(a.bytes, b.bytes, 16);
    assert_int_equal(strlen(a.hex), 32);
    /* the order in which headers were found does not matter */
    kj__header h = f.src.headers[0];
    f.src.headers[0] = f.src.headers[1];
    f.src.headers[1] = h;
    kj__key c = key_of(&f);
    assert_memory_equal(a.bytes, c.bytes, 16);
    /* nvJitLink's version does not count when nothing is linked */
    f.in.nvjitlink_version = 12050;
    kj__key d = key_of(&f);
    assert_memory_equal(a.bytes, d.bytes, 16);
    teardown_fixture(&f);
}

static void test_each_input_counts(void **state) {
    (void)state;
    fixture f;
    setup_fixture(&f);
    kj__key base = key_of(&f);

    f.in.nvrtc_version = 13010;
    expect_differs(&base, &f, "the NVRTC version");
    f.in.nvrtc_version = 13000;

    f.in.arch = "sm_80";
    expect_differs(&base, &f, "the arch");
    f.in.arch = "sm_90";

    f.options[1] = "-DX=2";
    expect_differs(&base, &f, "a define's value");
    f.options[1] = "-DX=1";

    f.in.option_count = 2;
    expect_differs(&base, &f, "the option list");
    f.in.option_count = 3;

    f.src.text[0] = '_' + 1;
    expect_differs(&base, &f, "a source byte");
    f.src.text[0] = '_';

    f.src.headers[1].text[0] = 'C';
    expect_differs(&base, &f, "a header's bytes");
    f.src.headers[1].text[0] = 'B';

    f.src.headers[1].name[0] = 'c';
    expect_differs(&base, &f, "a header's name");
    f.src.headers[1].name[0] = 'b';

    f.src.header_count = 1;
    expect_differs(&base, &f, "the set of headers");
    f.src.header_count = 2;

    f.src.file[0] = 'j';
    expect_differs(&base, &f, "the file name NVRTC reports");
    f.src.file[0] = 'k';

    f.in.name_expression = "k";
    expect_differs(&base, &f, "the name expression");
    f.in.name_expression = NULL;

    /* the entry compiled alone: another text reaches NVRTC, so another key, one per entry */
    f.in.alone_entry = "k";
    expect_differs(&base, &f, "compiling an entry alone");
    kj__key alone_k = key_of(&f);
    f.in.alone_entry = "j";
    expect_differs(&alone_k, &f, "the entry compiled alone");
    f.in.alone_entry = NULL;

    f.in.linked = 1;
    expect_differs(&base, &f, "linking with nvJitLink");
    kj__key linked = key_of(&f);
    f.in.nvjitlink_version = 13010;
    expect_differs(&linked, &f, "the nvJitLink version");
    f.in.nvjitlink_version = 13000;
    f.in.devrt_hash = f.devrt;
    expect_differs(&linked, &f, "linking the device runtime");
    kj__key with_devrt = key_of(&f);
    f.devrt[5] ^= 1;
    expect_differs(&with_devrt, &f, "the device runtime's bytes");
    f.devrt[5] ^= 1;
    f.in.devrt_hash = NULL;
    f.in.linked = 0;

    /* a program of two sources: the second's bytes, the set, the order, its pre-includes */
    f.in.source_count = 2;
    expect_differs(&base, &f, "a second source");
    kj__key two = key_of(&f);
    f.second.text[0] = '#';
    expect_differs(&two, &f, "the second source's bytes");
    f.second.text[0] = '_';
    f.units[0] = &f.second, f.units[1] = &f.src;
    expect_differs(&two, &f, "the order of the sources");
    f.units[0] = &f.src, f.units[1] = &f.second;
    f.second.pre_include_names[0] = "b.cuh";
    f.second.pre_include_count = 1;
    expect_differs(&two, &f, "a source's pre-included headers");
    f.second.pre_include_count = 0;
    f.in.source_count = 1;

    /* moving bytes between fields must not collide: "ab"+"c" vs "a"+"bc" */
    const char *split_a[] = {"-arch=sm_90", "-DXY", "=1"};
    const char *split_b[] = {"-arch=sm_90", "-DX", "Y=1"};
    f.in.options = split_a;
    kj__key ka = key_of(&f);
    f.in.options = split_b;
    kj__key kb = key_of(&f);
    assert_memory_not_equal(ka.bytes, kb.bytes, 16);

    f.in.options = f.options;
    kj__key again = key_of(&f);
    assert_memory_equal(again.bytes, base.bytes, 16);
    teardown_fixture(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stable), cmocka_unit_test(test_each_input_counts)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
