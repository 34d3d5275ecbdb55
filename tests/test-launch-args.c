/* The argument language of `kernjit launch` (cli/launch_args.c), its host data (launch_data.c) and
 * the source-signature scan (launch_signature.c): pure units, linked here without the library. Each
 * error case checks that the message names the offending text. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launch_args.h"
#include "launch_data.h"
#include "launch_signature.h"

static launch_arg parse_ok(const char *text) {
    launch_arg a;
    char err[512] = "";
    if (launch_parse_arg(text, &a, err, sizeof err) != 0) fail_msg("'%s' refused: %s", text, err);
    return a;
}

/* Refused, with a message that contains needle. */
static void parse_fails(const char *text, const char *needle) {
    launch_arg a;
    memset(&a, 0x5a, sizeof a);
    launch_arg before = a;
    char err[512] = "";
    if (launch_parse_arg(text, &a, err, sizeof err) == 0) fail_msg("'%s' accepted", text);
    if (!strstr(err, needle)) fail_msg("'%s': message '%s' lacks '%s'", text, err, needle);
    assert_memory_equal(&a, &before, sizeof a); /* out is written only on success */
}

static void assert_bytes(const launch_arg *a, const void *expected, size_t n) {
    assert_memory_equal(a->value, expected, n);
}

static void test_scalars(void **state) {
    (void)state;
    launch_arg a = parse_ok("i32=5");
    assert_false(a.is_buffer);
    assert_int_equal(a.type, LAUNCH_I32);
    int32_t i32 = 5;
    assert_bytes(&a, &i32, 4);
    i32 = -1;
    a = parse_ok("i32=-1");
    assert_bytes(&a, &i32, 4);
    i32 = INT32_MIN;
    a = parse_ok("i32=-2147483648");
    assert_bytes(&a, &i32, 4);
    i32 = 1 << 20;
    a = parse_ok("i32=1M");
    assert_bytes(&a, &i32, 4);
    a = parse_ok("i32=2^20");
    assert_bytes(&a, &i32, 4);
    uint64_t u64 = 1048576;
    a = parse_ok("u64=1048576");
    assert_bytes(&a, &u64, 8);
    u64 = UINT64_MAX;
    a = parse_ok("u64=18446744073709551615");
    assert_bytes(&a, &u64, 8);
    int64_t i64 = INT64_MIN;
    a = parse_ok("i64=-9223372036854775808");
    assert_bytes(&a, &i64, 8);
    uint32_t u32 = 255;
    a = parse_ok("u32=0xff");
    assert_bytes(&a, &u32, 4);
    int8_t i8 = -128;
    a = parse_ok("i8=-128");
    assert_bytes(&a, &i8, 1);
    uint8_t u8 = 255;
    a = parse_ok("u8=255");
    assert_bytes(&a, &u8, 1);
    int16_t i16 = -32768;
    a = parse_ok("i16=-32768");
    assert_bytes(&a, &i16, 2);
    uint16_t u16 = 65535;
    a = parse_ok("u16=65535");
    assert_bytes(&a, &u16, 2);
    float f32 = 0.5f;
    a = parse_ok("f32=0.5");
    assert_int_equal(a.type, LAUNCH_F32);
    assert_bytes(&a, &f32, 4);
    double f64 = -1e-3;
    a = parse_ok("f64=-1e-3");
    assert_bytes(&a, &f64, 8);
    u16 = 0x3c00; /* 1.0 */
    a = parse_ok("f16=1");
    assert_bytes(&a, &u16, 2);
    u16 = 0x7bff; /* 65504, the largest */
    a = parse_ok("f16=65504");
    assert_bytes(&a, &u16, 2);
    u16 = 0xfc00;
    a = parse_ok("f16=-inf");
    assert_bytes(&a, &u16, 2);
    u16 = 0x3f80; /* bf16 1.0: the high half of f32's 0x3f800000 */
    a = parse_ok("bf16=1");
    assert_int_equal(a.type, LAUNCH_BF16);
    assert_bytes(&a, &u16, 2);
    u16 = 0xc0a0; /* -5 */
    a = parse_ok("bf16=-5");
    assert_bytes(&a, &u16, 2);
    u16 = 0x7f7f; /* the largest finite bf16, about 3.3895e38 */
    a = parse_ok("bf16=3.3895e38");
    assert_bytes(&a, &u16, 2);
    a = parse_ok("f32=nan");
    memcpy(&f32, a.value, 4);
    assert_true(isnan(f32));
    a = parse_ok("f32=1e-50"); /* underflow rounds to 0: allowed */
    memcpy(&f32, a.value, 4);
    assert_true(f32 == 0.0f);
    /* the bytes past the type's size are zero */
    a = parse_ok("u8=7");
    static const unsigned char rest[7] = {0};
    assert_memory_equal(a.value + 1, rest, 7);
}

static void test_scalar_errors(void **state) {
    (void)state;
    parse_fails("f33=1", "unknown type 'f33'");
    parse_fails("f33=1", "i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64");
    parse_fails("float=1", "unknown type 'float'");
    parse_fails("i32=abc", "'abc' is not an i32 value");
    parse_fails("u8=abc", "'abc' is not a u8 value");
    parse_fails("i32=5x", "'5x'");
    parse_fails("i32=0x", "'0x'");
    parse_fails("i32=1M5", "'1M5'");
    parse_fails("i32=--1", "'--1'");
    parse_fails("i32=+1", "'+1'");
    parse_fails("i32= 5", "' 5'");
    parse_fails("f32= 5", "' 5'");
    parse_fails("f32=1.5.2", "'1.5.2'");
    parse_fails("u8=256", "'256' is out of range for u8 (0 to 255)");
    parse_fails("u8=-1", "'-1' is negative");
    parse_fails("i8=128", "-128 to 127");
    parse_fails("i32=2147483648", "out of range for i32");
    parse_fails("i32=-2147483649", "out of range for i32");
    parse_fails("i64=9223372036854775808", "out of range for i64");
    parse_fails("u64=18446744073709551616", "'18446744073709551616'");
    parse_fails("i32=2^64", "'2^64'");
    parse_fails("f32=1e39", "'1e39' is out of range for f32");
    parse_fails("f64=1e999", "'1e999' is out of range for f64");
    parse_fails("f16=65520", "'65520' is out of range for f16");
    parse_fails("bf16=3.4e38", "'3.4e38' is out of range for bf16 (at most 3.3895e38)");
    parse_fails("bf16=x", "'x' is not a bf16 value");
    parse_fails("i32=", "empty i32 value");
    parse_fails("f32", "'f32' has no '='");
    parse_fails("", "empty spec");
    parse_fails("=5", "no type before '='");
    parse_fails("[4]=zeros", "no type before '['");
    parse_fails("i32=random", "'random' is not an i32 value");
}

static void test_buffers(void **state) {
    (void)state;
    launch_arg a = parse_ok("f32[1M]=random");
    assert_true(a.is_buffer);
    assert_int_equal(a.type, LAUNCH_F32);
    assert_int_equal(a.count, 1 << 20);
    assert_int_equal(a.fill, LAUNCH_FILL_RANDOM);
    a = parse_ok("i32[2^20]=iota");
    assert_int_equal(a.count, 1 << 20);
    assert_int_equal(a.fill, LAUNCH_FILL_IOTA);
    a = parse_ok("u8[64]=zeros");
    assert_int_equal(a.count, 64);
    assert_int_equal(a.fill, LAUNCH_FILL_ZEROS);
    a = parse_ok("f64[100]=0.25");
    assert_int_equal(a.fill, LAUNCH_FILL_VALUE);
    double d = 0.25;
    assert_bytes(&a, &d, 8);
    a = parse_ok("i8[3]=-7");
    int8_t i8 = -7;
    assert_bytes(&a, &i8, 1);
    const char *text = "f32[1000]=@in dir/x=1.bin";
    a = parse_ok(text);
    assert_int_equal(a.fill, LAUNCH_FILL_FILE);
    assert_string_equal(a.path, "in dir/x=1.bin");
    assert_ptr_equal(a.path, text + 11); /* points into the text: no copy, no allocation */
    a = parse_ok("f16[]=@x.bin");
    assert_int_equal(a.count, 0);
    assert_int_equal(a.type, LAUNCH_F16);
    a = parse_ok("u64[2^40]=zeros");
    assert_int_equal(a.count, 1ull << 40);
    a = parse_ok("f32[16Ki]=zeros");
    assert_int_equal(a.count, 16384);
}

static void test_buffer_errors(void **state) {
    (void)state;
    parse_fails("f32[0]=zeros", "'0' is not an element count");
    parse_fails("f32[x]=zeros", "'x' is not an element count");
    parse_fails("f32[-4]=zeros", "'-4' is not an element count");
    parse_fails("f32[2^41]=zeros", "'2^41'");
    parse_fails("f32[10=zeros", "'f32[10=zeros' has '[' without ']'");
    parse_fails("f32[10]", "expected '=' after ']'");
    parse_fails("f32[10]x=zeros", "expected '=' after ']'");
    parse_fails("f32[10]=", "nothing after '='");
    parse_fails("f32[10]=@", "'@' needs a file name");
    parse_fails("f32[]=zeros", "goes only with @FILE");
    parse_fails("f32[4]=random(1,2)", "'random(1,2)' is not an f32 value");
    parse_fails("u8[4]=300", "'300' is out of range for u8");
    parse_fails("q[4]=zeros", "unknown type 'q'");
}

/* Whatever the input, messages stay bounded and quote at most a prefix of it. */
static void test_long_text(void **state) {
    (void)state;
    size_t n = LAUNCH_MAX_TEXT + 100;
    char *text = malloc(n + 1);
    memset(text, 'a', n);
    text[n] = '\0';
    parse_fails(text, "longer than 4096 characters");
    text[3000] = '\0';
    char err[256];
    launch_arg a;
    assert_int_equal(launch_parse_arg(text, &a, err, sizeof err), -1);
    assert_true(strlen(err) < sizeof err);
    memcpy(text, "i32=", 4);
    assert_int_equal(launch_parse_arg(text, &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "not an i32 value"));
    /* a one-byte message buffer still gets a terminated string */
    char tiny[1] = {'x'};
    assert_int_equal(launch_parse_arg("nope", &a, tiny, sizeof tiny), -1);
    assert_int_equal(tiny[0], '\0');
    free(text);
}

static void test_dims(void **state) {
    (void)state;
    unsigned d[3];
    char err[256];
    assert_int_equal(launch_parse_dims("256", d, err, sizeof err), 0);
    assert_int_equal(d[0], 256);
    assert_int_equal(d[1], 1);
    assert_int_equal(d[2], 1);
    assert_int_equal(launch_parse_dims("16,8", d, err, sizeof err), 0);
    assert_int_equal(d[1], 8);
    assert_int_equal(launch_parse_dims("4,4,2", d, err, sizeof err), 0);
    assert_int_equal(d[2], 2);
    assert_int_equal(launch_parse_dims("1K", d, err, sizeof err), 0);
    assert_int_equal(d[0], 1024);
    assert_int_equal(launch_parse_dims("2147483647", d, err, sizeof err), 0);
    static const struct {
        const char *text, *needle;
    } bad[] = {{"0", "'0' is not a dimension"},
               {"1,2,3,4", "more than 3 dimensions"},
               {"16,", "'' is not a dimension"},
               {",16", "'' is not a dimension"},
               {"16x16", "'16x16' is not a dimension"},
               {"2147483648", "'2147483648'"},
               {"", "empty dimensions"},
               {"-1", "'-1'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned keep[3] = {7, 7, 7};
        if (launch_parse_dims(bad[i].text, keep, err, sizeof err) == 0) fail_msg("'%s' accepted", bad[i].text);
        if (!strstr(err, bad[i].needle)) fail_msg("'%s': '%s' lacks '%s'", bad[i].text, err, bad[i].needle);
        assert_int_equal(keep[0], 7);
    }
}

static void test_print_and_save(void **state) {
    (void)state;
    char err[256];
    launch_print p;
    assert_int_equal(launch_parse_print("2", &p, err, sizeof err), 0);
    assert_int_equal(p.arg, 2);
    assert_false(p.has_range);
    assert_int_equal(launch_parse_print("2:0..16", &p, err, sizeof err), 0);
    assert_true(p.has_range);
    assert_int_equal(p.from, 0);
    assert_int_equal(p.to, 16);
    assert_int_equal(launch_parse_print("1:5", &p, err, sizeof err), 0);
    assert_int_equal(p.from, 5);
    assert_int_equal(p.to, 6);
    assert_int_equal(launch_parse_print("1:5..", &p, err, sizeof err), 0);
    assert_true(p.to_end);
    /* the largest index written out is a range like any other, not "to the end" */
    assert_int_equal(launch_parse_print("1:0..18446744073709551615", &p, err, sizeof err), 0);
    assert_false(p.to_end);
    assert_int_equal(launch_parse_print("1:18446744073709551615..", &p, err, sizeof err), 0);
    assert_true(p.to_end);
    assert_int_equal(launch_parse_print("1:..4", &p, err, sizeof err), 0);
    assert_int_equal(p.from, 0);
    assert_int_equal(p.to, 4);
    static const struct {
        const char *text, *needle;
    } bad[] = {{"", "empty --print"},
               {"x", "'x' is not an --arg index"},
               {"2:", "nothing after ':'"},
               {"2:5..5", "the range is empty"},
               {"2:3..1", "the range is empty"},
               {"2:a..b", "'a' is not an element"},
               {"2:1..b", "'b' is not an element"},
               {"-1", "'-1' is not an --arg index"},
               {"1234567:0", "'1234567' is not an --arg index"},
               {"2:x", "'x' is not an element index"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (launch_parse_print(bad[i].text, &p, err, sizeof err) == 0) fail_msg("'%s' accepted", bad[i].text);
        if (!strstr(err, bad[i].needle)) fail_msg("'%s': '%s' lacks '%s'", bad[i].text, err, bad[i].needle);
    }

    launch_save s;
    assert_int_equal(launch_parse_save("2=out.bin", &s, err, sizeof err), 0);
    assert_int_equal(s.arg, 2);
    assert_string_equal(s.path, "out.bin");
    assert_int_equal(launch_parse_save("0=a=b", &s, err, sizeof err), 0);
    assert_string_equal(s.path, "a=b");
    static const struct {
        const char *text, *needle;
    } bad_save[] = {{"2", "'2' has no '='"},
                    {"=x", "'' is not an --arg index"},
                    {"2=", "no file name"},
                    {"a=x", "'a' is not an --arg index"},
                    {"", "empty --save"}};
    for (size_t i = 0; i < sizeof bad_save / sizeof bad_save[0]; i++) {
        if (launch_parse_save(bad_save[i].text, &s, err, sizeof err) == 0) fail_msg("'%s' accepted", bad_save[i].text);
        if (!strstr(err, bad_save[i].needle))
            fail_msg("'%s': '%s' lacks '%s'", bad_save[i].text, err, bad_save[i].needle);
    }
}

static void test_checks_against_args(void **state) {
    (void)state;
    char err[256];
    launch_arg args[3] = {parse_ok("f32[100]=zeros"), parse_ok("i32=5"), parse_ok("u8[8]=iota")};
    launch_print p;
    /* one rule: a range past the end is refused naming the size, however large its end */
    launch_parse_print("2:0..18446744073709551615", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), -1);
    assert_non_null(strstr(err, "range 0..18446744073709551615 goes past the end of --arg 2 (8 elements)"));
    launch_parse_print("2:18446744073709551615..", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), -1);
    assert_non_null(strstr(err, "element 18446744073709551615 is past the end of --arg 2 (8 elements)"));
    launch_parse_print("0", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), 0);
    assert_int_equal(p.from, 0);
    assert_int_equal(p.to, 16); /* the default: the first 16 */
    launch_parse_print("2", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), 0);
    assert_int_equal(p.to, 8); /* or all, when fewer */
    launch_parse_print("0:90..", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), 0);
    assert_int_equal(p.to, 100);
    launch_parse_print("0:99", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), 0);
    launch_parse_print("0:100", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), -1);
    assert_non_null(strstr(err, "element 100 is past the end of --arg 0 (100 elements)"));
    launch_parse_print("0:90..101", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), -1);
    assert_non_null(strstr(err, "90..101"));
    launch_parse_print("1", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), -1);
    assert_non_null(strstr(err, "--arg 1 is a scalar (i32)"));
    launch_parse_print("3", &p, err, sizeof err);
    assert_int_equal(launch_check_print(&p, args, 3, err, sizeof err), -1);
    assert_non_null(strstr(err, "--print 3: there are 3 --args"));

    launch_save s;
    launch_parse_save("2=x", &s, err, sizeof err);
    assert_int_equal(launch_check_save(&s, args, 3, err, sizeof err), 0);
    launch_parse_save("1=x", &s, err, sizeof err);
    assert_int_equal(launch_check_save(&s, args, 3, err, sizeof err), -1);
    assert_non_null(strstr(err, "--save 1: --arg 1 is a scalar"));
    launch_parse_save("7=x", &s, err, sizeof err);
    assert_int_equal(launch_check_save(&s, args, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "there is 1 --arg "));
}

static void test_f16(void **state) {
    (void)state;
    /* every finite and infinite binary16 value converts to a double and back to itself */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN payloads */
        double d = launch_f16_to_double((uint16_t)h);
        uint16_t back = launch_f16_from_double(d);
        if (back != h) fail_msg("0x%04x -> %.17g -> 0x%04x", h, d, back);
    }
    assert_true(isnan(launch_f16_to_double(0x7e00)));
    assert_int_equal(launch_f16_from_double(NAN) & 0x7e00, 0x7e00);
    /* round to nearest, ties to even */
    assert_int_equal(launch_f16_from_double(1.0 + 0x1p-11), 0x3c00);
    assert_int_equal(launch_f16_from_double(1.0 + 3 * 0x1p-11), 0x3c02);
    assert_int_equal(launch_f16_from_double(0x1p-24), 0x0001);
    assert_int_equal(launch_f16_from_double(0x1p-25), 0x0000);
    assert_int_equal(launch_f16_from_double(3 * 0x1p-25), 0x0002);
    assert_int_equal(launch_f16_from_double(0x1p-14 - 0x1p-26), 0x0400); /* rounds up to the smallest normal */
    assert_int_equal(launch_f16_from_double(2047.0 + 0.5), 0x6800);      /* 2048, the even neighbour */
    assert_int_equal(launch_f16_from_double(65519.0), 0x7bff);
    assert_int_equal(launch_f16_from_double(65520.0), 0x7c00);
    assert_int_equal(launch_f16_from_double(-0.0), 0x8000);
}

static void test_bf16(void **state) {
    (void)state;
    char buf[64];
    /* every finite and infinite bfloat16 value converts to a double and back to itself, and so does
     * its printed text */
    for (uint32_t b = 0; b < 0x10000; b++) {
        if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) continue; /* NaN payloads */
        double d = launch_bf16_to_double((uint16_t)b);
        uint16_t back = launch_bf16_from_double(d);
        if (back != b) fail_msg("0x%04x -> %.17g -> 0x%04x", b, d, back);
        launch_format(LAUNCH_BF16, &b, buf, sizeof buf);
        back = launch_bf16_from_double(strtod(buf, NULL));
        if (back != b) fail_msg("0x%04x printed as %s reads back as 0x%04x", b, buf, back);
    }
    assert_true(isnan(launch_bf16_to_double(0x7fc0)));
    assert_int_equal(launch_bf16_from_double(NAN) & 0x7fc0, 0x7fc0);
    /* round to nearest, ties to even (1 + 2^-8 is halfway between 1 and 1 + 2^-7) */
    assert_int_equal(launch_bf16_from_double(1.0 + 0x1p-8), 0x3f80);
    assert_int_equal(launch_bf16_from_double(1.0 + 3 * 0x1p-8), 0x3f82);
    assert_int_equal(launch_bf16_from_double(1.0 + 0x1p-8 + 0x1p-30), 0x3f81);
    assert_int_equal(launch_bf16_from_double(257.0), 0x4380);               /* 256, the even neighbour */
    assert_int_equal(launch_bf16_from_double(0x1p-133), 0x0001);            /* the smallest subnormal */
    assert_int_equal(launch_bf16_from_double(0x1p-134), 0x0000);            /* halfway to it: even, 0 */
    assert_int_equal(launch_bf16_from_double(0x1p-126 - 0x1p-135), 0x0080); /* up to the smallest normal */
    assert_int_equal(launch_bf16_from_double(0x1.fep127), 0x7f7f);
    assert_int_equal(launch_bf16_from_double(0x1.ffp127), 0x7f80); /* halfway past the largest: inf */
    assert_int_equal(launch_bf16_from_double(-INFINITY), 0xff80);
    assert_int_equal(launch_bf16_from_double(-0.0), 0x8000);
    /* fills */
    launch_arg a = parse_ok("bf16[300]=iota");
    uint16_t v[300];
    launch_fill_host(&a, v, 300, 1, 0);
    assert_int_equal(v[1], 0x3f80);
    assert_true(launch_bf16_to_double(v[256]) == 256.0);
    assert_true(launch_bf16_to_double(v[257]) == 256.0); /* 8 bits of precision: exact to 256 only */
    a = parse_ok("bf16[300]=random");
    launch_fill_host(&a, v, 300, 7, 0);
    int neg = 0;
    for (int i = 0; i < 300; i++) {
        assert_true(fabs(launch_bf16_to_double(v[i])) <= 1.0);
        neg += launch_bf16_to_double(v[i]) < 0;
    }
    assert_true(neg > 50 && neg < 250);
    uint16_t b = 0x3fc0; /* 1.5 */
    assert_int_equal(launch_format(LAUNCH_BF16, &b, buf, sizeof buf), 1);
    assert_string_equal(buf, "1.5");
}

static void test_fills(void **state) {
    (void)state;
    launch_arg a = parse_ok("i8[300]=iota");
    int8_t i8[300];
    launch_fill_host(&a, i8, 300, 1, 0);
    assert_int_equal(i8[5], 5);
    assert_int_equal(i8[200], -56); /* wraps as the type does */
    a = parse_ok("f32[10]=iota");
    float f[10];
    launch_fill_host(&a, f, 10, 1, 0);
    assert_true(f[9] == 9.0f);
    a = parse_ok("f16[4]=iota");
    uint16_t h[4];
    launch_fill_host(&a, h, 4, 1, 0);
    assert_int_equal(h[1], 0x3c00);
    a = parse_ok("u16[5]=513");
    uint16_t u16[5];
    launch_fill_host(&a, u16, 5, 1, 0);
    for (int i = 0; i < 5; i++) assert_int_equal(u16[i], 513);
    a = parse_ok("i64[3]=zeros");
    int64_t i64[3] = {1, 2, 3};
    launch_fill_host(&a, i64, 3, 1, 0);
    assert_int_equal(i64[0] | i64[1] | i64[2], 0);

    /* random: deterministic per (seed, index), different across either, within the stated ranges */
    enum { N = 4096 };
    static float r1[N], r2[N], r3[N];
    a = parse_ok("f32[4096]=random");
    launch_fill_host(&a, r1, N, 42, 0);
    launch_fill_host(&a, r2, N, 42, 0);
    assert_memory_equal(r1, r2, sizeof r1);
    launch_fill_host(&a, r3, N, 42, 1);
    assert_memory_not_equal(r1, r3, sizeof r1);
    launch_fill_host(&a, r3, N, 43, 0);
    assert_memory_not_equal(r1, r3, sizeof r1);
    double lo = 1, hi = -1;
    for (int i = 0; i < N; i++) {
        assert_true(r1[i] >= -1.0f && r1[i] <= 1.0f);
        lo = r1[i] < lo ? r1[i] : lo;
        hi = r1[i] > hi ? r1[i] : hi;
    }
    assert_true(lo < -0.9 && hi > 0.9);
    static int32_t s[N];
    a = parse_ok("i32[4096]=random");
    launch_fill_host(&a, s, N, 7, 0);
    int neg = 0;
    for (int i = 0; i < N; i++) {
        assert_true(s[i] >= -100 && s[i] <= 100);
        neg += s[i] < 0;
    }
    assert_true(neg > N / 4);
    static uint8_t u[N];
    a = parse_ok("u8[4096]=random");
    launch_fill_host(&a, u, N, 7, 0);
    for (int i = 0; i < N; i++) assert_true(u[i] <= 100);
    static uint16_t hr[N];
    a = parse_ok("f16[4096]=random");
    launch_fill_host(&a, hr, N, 7, 0);
    for (int i = 0; i < N; i++) assert_true(fabs(launch_f16_to_double(hr[i])) <= 1.0);
}

static void test_format(void **state) {
    (void)state;
    char buf[64];
    int8_t i8 = -5;
    assert_int_equal(launch_format(LAUNCH_I8, &i8, buf, sizeof buf), 1);
    assert_string_equal(buf, "-5");
    uint64_t u64 = UINT64_MAX;
    launch_format(LAUNCH_U64, &u64, buf, sizeof buf);
    assert_string_equal(buf, "18446744073709551615");
    float f = 0.1f;
    launch_format(LAUNCH_F32, &f, buf, sizeof buf);
    assert_true(strtof(buf, NULL) == f); /* reads back to the same float */
    double d = 0.1;
    launch_format(LAUNCH_F64, &d, buf, sizeof buf);
    assert_true(strtod(buf, NULL) == d);
    uint16_t h = 0x3e00; /* 1.5 */
    launch_format(LAUNCH_F16, &h, buf, sizeof buf);
    assert_string_equal(buf, "1.5");
    f = NAN;
    assert_int_equal(launch_format(LAUNCH_F32, &f, buf, sizeof buf), 0);
    assert_string_equal(buf, "nan");
    d = -INFINITY;
    assert_int_equal(launch_format(LAUNCH_F64, &d, buf, sizeof buf), 0);
    assert_string_equal(buf, "-inf");
}

/* ---- the signature scan ---- */

static size_t find(const char *src, const char *entry, long want) {
    launch_signature sig;
    if (launch_find_signature(src, strlen(src), entry, want, &sig) != 0) return (size_t)-1;
    return sig.count;
}

static void assert_param(const char *src, const char *entry, long want, size_t i, const char *text) {
    launch_signature sig;
    assert_int_equal(launch_find_signature(src, strlen(src), entry, want, &sig), 0);
    char buf[128];
    launch_signature_param(src, &sig, i, buf, sizeof buf);
    assert_string_equal(buf, text);
}

static void test_signature(void **state) {
    (void)state;
    const char *vadd = "__global__ void vadd(const float *a, const float *b, float *c, int n) {\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] = a[i] + b[i];\n}\n";
    assert_int_equal(find(vadd, "vadd", -1), 4);
    assert_int_equal(find(vadd, "vadd", 4), 4);
    assert_int_equal(find(vadd, "vadd", 3), (size_t)-1);
    assert_param(vadd, "vadd", 4, 3, "int n");
    assert_param(vadd, "vadd", 4, 0, "const float *a");
    assert_int_equal(find(vadd, "nosuch", -1), (size_t)-1);

    /* comments, strings and macro lines are not declarations; comments inside a list are dropped */
    const char *noisy = "/* __global__ void k(int x) */\n// __global__ void k(float y)\n"
                        "#define DECLARE __global__ void k(int a, int b, \\\n int c)\n"
                        "const char *s = \"__global__ void k(int q)\";\n"
                        "extern \"C\" __global__ void k(const float *a, /* the output */\n   float   *b) {}\n";
    assert_int_equal(find(noisy, "k", -1), 2);
    assert_param(noisy, "k", -1, 1, "float *b");

    /* templates, qualified names, attributes, template arguments with commas */
    const char *tmpl = "namespace ns {\ntemplate <typename T, int N>\n__global__ void __launch_bounds__(256)\n"
                       "scale(T *x, Pair<T, N> p, int n) { x[0] = p.a; }\n}\n"
                       "template __global__ void ns::scale<float, 256>(float *, Pair<float, 256>, int);\n";
    assert_int_equal(find(tmpl, "scale<float,256>", -1), 3);
    assert_int_equal(find(tmpl, "ns::scale<float, 256>", 3), 3);
    assert_param(tmpl, "scale<float,256>", 3, 1, "Pair<T, N> p");

    /* overloads: the count the caller knows picks one; without it they must agree */
    const char *over = "__global__ void k(int a);\n__global__ void k(int a, int b) {}\n__global__ void k(int a) {}\n";
    assert_int_equal(find(over, "k", 2), 2);
    assert_int_equal(find(over, "k", 1), 1);
    assert_int_equal(find(over, "k", 3), (size_t)-1);
    assert_int_equal(find(over, "k", -1), (size_t)-1);
    const char *decl_def = "__global__ void k(int *a, int n);\n__global__ void k(int *a, int n) { a[0] = n; }\n";
    assert_int_equal(find(decl_def, "k", -1), 2);

    /* no parameters; variadic; calls and __device__ functions are not kernels */
    assert_int_equal(find("__global__ void z() {}", "z", -1), 0);
    assert_int_equal(find("__global__ void z(void) {}", "z", -1), 0);
    assert_int_equal(find("template <typename... A> __global__ void v(A... a) {}", "v<int>", -1), (size_t)-1);
    assert_int_equal(find("#define ARGS int *x, int n\n__global__ void m(ARGS) {}", "m", -1), (size_t)-1);
    assert_int_equal(find("__global__ void m(int, float *) {}", "m", -1), 2); /* unnamed parameters are fine */
    const char *calls = "__device__ void inner(int *x, int a, int b) {}\n"
                        "__global__ void outer(int *x) { inner(x, 1, 2); }\n";
    assert_int_equal(find(calls, "inner", -1), (size_t)-1);
    assert_int_equal(find(calls, "outer", -1), 1);
    /* a quote after a digit is a digit separator, not a character literal that would hide the rest */
    assert_int_equal(find("const int big = 1'000'000;\n__global__ void k(int a, int b) {}", "k", -1), 2);
    /* an unterminated list is not a declaration */
    assert_int_equal(find("__global__ void k(int a, int b", "k", -1), (size_t)-1);

    /* long parameter text is cut, and says so */
    const char *longp = "__global__ void k(const unsigned long long int *__restrict__ a_very_long_parameter_name) {}";
    launch_signature sig;
    assert_int_equal(launch_find_signature(longp, strlen(longp), "k", 1, &sig), 0);
    char small[16];
    launch_signature_param(longp, &sig, 0, small, sizeof small);
    assert_int_equal(strlen(small), 15);
    assert_string_equal(small + 12, "...");
    launch_signature_param(longp, &sig, 5, small, sizeof small);
    assert_string_equal(small, "");
}

/* bytes[N]=..., &I+OFF and null: the by-value struct, the pointer into a buffer, the null pointer. */
static void test_structs_pointers_null(void **state) {
    (void)state;
    launch_arg a;
    char err[256];
    assert_int_equal(launch_parse_arg("bytes[4]=0x0102a0FF", &a, err, sizeof err), 0);
    assert_true(a.is_bytes);
    assert_false(a.is_buffer);
    assert_int_equal(a.count, 4);
    unsigned char b[4];
    launch_hex_bytes(a.hex, b, 4);
    assert_int_equal(b[0], 0x01);
    assert_int_equal(b[2], 0xa0);
    assert_int_equal(b[3], 0xff);
    assert_int_equal(launch_parse_arg("bytes[20]=@params.bin", &a, err, sizeof err), 0);
    assert_int_equal(a.fill, LAUNCH_FILL_FILE);
    assert_string_equal(a.path, "params.bin");
    assert_int_equal(launch_parse_arg("bytes[8]=zeros", &a, err, sizeof err), 0);
    assert_int_equal(a.fill, LAUNCH_FILL_ZEROS);
    assert_int_equal(launch_parse_arg("&2+4096", &a, err, sizeof err), 0);
    assert_true(a.is_ref);
    assert_int_equal(a.ref, 2);
    assert_int_equal(a.offset, 4096);
    assert_int_equal(launch_parse_arg("&0", &a, err, sizeof err), 0);
    assert_int_equal(a.offset, 0);
    assert_int_equal(launch_parse_arg("&1+4K", &a, err, sizeof err), 0);
    assert_int_equal(a.offset, 4096);
    assert_int_equal(launch_parse_arg("null", &a, err, sizeof err), 0);
    assert_false(a.is_buffer || a.is_ref || a.is_bytes);
    assert_int_equal(a.type, LAUNCH_U64);
    static const unsigned char zero[8];
    assert_memory_equal(a.value, zero, 8);
    static const char *bad[] = {"bytes[0]=zeros",
                                "bytes[40000]=zeros",
                                "bytes[2]=0x0",
                                "bytes[1]=0xgg",
                                "bytes[2]",
                                "bytes[2]=random",
                                "&",
                                "&x",
                                "&1+",
                                "&1+x",
                                "&5000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (launch_parse_arg(bad[i], &a, err, sizeof err) == 0) fail_msg("'%s' was accepted", bad[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structs_pointers_null),
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_scalar_errors),
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_buffer_errors),
        cmocka_unit_test(test_long_text),
        cmocka_unit_test(test_dims),
        cmocka_unit_test(test_print_and_save),
        cmocka_unit_test(test_checks_against_args),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_fills),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
