/* What kernjit.h promises about every call, checked where it needs no GPU: destroys accept NULL,
 * a NULL required argument is a usage error with a message (never a crash), accessors given NULL
 * answer "", 0 or NULL, outputs are left alone on failure, and a compile-only runtime refuses device
 * work with KJ_ERR_NO_DEVICE. */
#include "test_util.h"

static void test_destroys_accept_null(void **state) {
    (void)state;
    kj_runtime_destroy(NULL);
    kj_desc_free(NULL);
    kj_event_destroy(NULL);
    assert_int_equal(kj_stream_destroy(NULL, NULL), KJ_OK);
    assert_int_equal(kj_mem_free(NULL, 0), KJ_OK);
}

#define EXPECT_USAGE(call)                                                                                             \
    do {                                                                                                               \
        kj_status s_ = (call);                                                                                         \
        if (s_ != KJ_ERR_USAGE) fail_msg("%s -> %s, expected KJ_ERR_USAGE", #call, kj_status_name(s_));                \
        if (!*kj_last_error()) fail_msg("%s gave no message", #call);                                                  \
    } while (0)

static void test_null_arguments_are_usage_errors(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime(NULL, KJ_DEVICE_NONE, NULL);
    assert_non_null(rt);
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    kj_kernel_desc *desc;
    kj_kernel_info kinfo = KJ_KERNEL_INFO_INIT;
    kj_launch_config cfg = {.size = sizeof(kj_launch_config), .block = {1}};
    kj_param_info pinfo = KJ_PARAM_INFO_INIT;
    kj_device_info dinfo = KJ_DEVICE_INFO_INIT;
    kj_op op;
    kj_type type;
    int blocks;
    EXPECT_USAGE(kj_runtime_create(NULL, NULL));
    EXPECT_USAGE(kj_device_count(NULL));
    EXPECT_USAGE(kj_device_query(0, NULL));
    EXPECT_USAGE(kj_runtime_device(NULL, &dinfo));
    EXPECT_USAGE(kj_kernel_get(NULL, &req, NULL, NULL));
    EXPECT_USAGE(kj_kernel_get(rt, NULL, NULL, NULL));
    EXPECT_USAGE(kj_compile(NULL, &req, NULL));
    EXPECT_USAGE(kj_compile(rt, NULL, NULL));
    EXPECT_USAGE(kj_kernel_query(NULL, &kinfo));
    EXPECT_USAGE(kj_kernel_launch(NULL, &cfg, NULL));
    EXPECT_USAGE(kj_kernel_occupancy(NULL, 32, 0, &blocks));
    EXPECT_USAGE(kj_describe(NULL, NULL, &desc));
    EXPECT_USAGE(kj_describe(NULL, "reduce", NULL));
    EXPECT_USAGE(kj_desc_param(NULL, 0, &pinfo));
    EXPECT_USAGE(kj_cache_list(NULL, NULL, NULL));
    EXPECT_USAGE(kj_cache_clear(NULL, NULL, NULL));
    EXPECT_USAGE(kj_cache_usage(NULL, NULL, NULL, NULL));
    EXPECT_USAGE(kj_mem_alloc(rt, 16, NULL));
    EXPECT_USAGE(kj_stream_create(rt, NULL));
    EXPECT_USAGE(kj_event_create(rt, NULL));
    EXPECT_USAGE(kj_event_record(NULL, NULL));
    EXPECT_USAGE(kj_event_elapsed_ms(NULL, NULL, NULL));
    EXPECT_USAGE(kj_op_parse(NULL, &op));
    EXPECT_USAGE(kj_type_parse(NULL, &type));
    EXPECT_USAGE(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_I32, 0, 1, NULL, NULL));
    EXPECT_USAGE(kj_reduce_async(NULL, KJ_OP_SUM, KJ_TYPE_I32, 0, 0, 0, NULL));
    kj_runtime_destroy(rt);
}

static void test_accessors_accept_null(void **state) {
    (void)state;
    assert_int_equal(kj_runtime_has_device(NULL), 0);
    assert_string_equal(kj_runtime_arch(NULL), "");
    assert_null(kj_cache_dir(NULL));
    kj_stats st = KJ_STATS_INIT;
    memset(&st, 0x5a, sizeof st);
    EXPECT_USAGE(kj_runtime_stats(NULL, &st));
    assert_int_equal(st.requests, 0x5a5a5a5a5a5a5a5aull); /* untouched */
    EXPECT_USAGE(kj_toolchain_query(NULL));
    assert_string_equal(kj_desc_name(NULL), "");
    assert_string_equal(kj_desc_origin(NULL), "");
    assert_string_equal(kj_desc_summary(NULL), "");
    assert_int_equal(kj_desc_entry_count(NULL), 0);
    assert_null(kj_desc_entry(NULL, 0));
    assert_int_equal(kj_desc_param_count(NULL), 0);
    assert_int_equal(kj_desc_needs_device_runtime(NULL), 0);
    assert_int_equal(kj_desc_pending_launches(NULL), 0);
    assert_null(kj_builtin_name(kj_builtin_count()));
}

static void test_out_of_range_values(void **state) {
    (void)state;
    kj_status bogus = (kj_status)12345;
    assert_string_equal(kj_strerror(bogus), "unknown status");
    assert_string_equal(kj_status_name(bogus), "KJ_UNKNOWN");
    assert_int_equal(kj_status_class(bogus), 1);
    assert_string_equal(kj_op_name((kj_op)99), "?");
    assert_string_equal(kj_type_name((kj_type)99), "?");
    assert_int_equal(kj_type_size((kj_type)99), 0);
    assert_int_equal(kj_result_size((kj_type)99), 0);
}

static void test_outputs_untouched_on_failure(void **state) {
    (void)state;
    kj_op op = (kj_op)77;
    assert_int_equal(kj_op_parse("average", &op), KJ_ERR_USAGE);
    assert_int_equal(op, 77);
    assert_non_null(strstr(kj_last_error(), "sum, max, min, prod"));
    kj_runtime *rt = kj_test_runtime(NULL, KJ_DEVICE_NONE, NULL);
    kj_compile_result result = KJ_COMPILE_RESULT_INIT;
    memset(&result, 0x5a, sizeof result);
    result.size = sizeof result;
    kj_request req = {.size = sizeof(kj_request), .kernel = "no_such_kernel"};
    assert_int_equal(kj_compile(rt, &req, &result), KJ_ERR_UNKNOWN_KERNEL);
    assert_int_equal(result.cache_hit, 0x5a5a5a5a);
    /* the message stays until the next failure */
    char msg[256];
    snprintf(msg, sizeof msg, "%s", kj_last_error());
    assert_int_equal(kj_op_parse("sum", &op), KJ_OK);
    assert_string_equal(kj_last_error(), msg);
    kj_runtime_destroy(rt);
}

static void test_compile_only_runtime_refuses_device_work(void **state) {
    (void)state;
    kj_runtime *rt = kj_test_runtime(NULL, KJ_DEVICE_NONE, NULL);
    assert_non_null(rt);
    assert_int_equal(kj_runtime_has_device(rt), 0);
    assert_string_equal(kj_runtime_arch(rt), "sm_90");
    kj_devptr p = 0;
    kj_stream s = NULL;
    kj_event *e = NULL;
    kj_device_info info = KJ_DEVICE_INFO_INIT;
    int32_t r;
    assert_int_equal(kj_mem_alloc(rt, 16, &p), KJ_ERR_NO_DEVICE);
    assert_int_equal(p, 0);
    assert_int_equal(kj_stream_create(rt, &s), KJ_ERR_NO_DEVICE);
    assert_null(s);
    assert_int_equal(kj_event_create(rt, &e), KJ_ERR_NO_DEVICE);
    assert_null(e);
    assert_int_equal(kj_runtime_device(rt, &info), KJ_ERR_NO_DEVICE);
    assert_int_equal(kj_synchronize(rt), KJ_ERR_NO_DEVICE);
    assert_int_equal(kj_reduce(rt, KJ_OP_SUM, KJ_TYPE_I32, 0, 0, &r, NULL), KJ_ERR_NO_DEVICE);
    kj_request req = {.size = sizeof(kj_request), .kernel = "reduce"};
    kj_kernel *k = NULL;
    assert_int_equal(kj_kernel_get(rt, &req, &k, NULL), KJ_ERR_NO_DEVICE);
    assert_null(k);
    kj_runtime_destroy(rt);
}

/* kj_size_parse: the one grammar of sizes and counts (the CLI's counts, KERNJIT_CACHE_MAX). */
static void test_size_grammar(void **state) {
    (void)state;
    static const struct {
        const char *text;
        uint64_t value;
    } good[] = {{"0", 0},
                {"1000003", 1000003},
                {"64K", 65536},
                {"64k", 65536},
                {"1Mi", 1 << 20},
                {"1MiB", 1 << 20},
                {"1MB", 1 << 20},
                {"16G", 16ull << 30},
                {"2T", 2ull << 40},
                {"2^28", 1 << 28},
                {"3^3", 27},
                {"2^63", 1ull << 63},
                {"18446744073709551615", UINT64_MAX}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 7;
        if (kj_size_parse(good[i].text, 0, UINT64_MAX, &v) != KJ_OK)
            fail_msg("'%s': %s", good[i].text, kj_last_error());
        if (v != good[i].value) fail_msg("'%s' read as %llu", good[i].text, (unsigned long long)v);
    }
    const char *bad[] = {"-5",    "",    "1.5",          "99999999999999999999999",
                         "2^64",  "1^5", "2^",           "K",
                         "1KiBx", "1Q",  "17179869184T", " 1",
                         "1 ",    "+1",  "0x10",         "1e6"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        if (kj_size_parse(bad[i], 0, UINT64_MAX, &v) != KJ_ERR_USAGE) fail_msg("'%s' accepted as a size", bad[i]);
        assert_int_equal(v, 7);
    }
    uint64_t v;
    EXPECT_USAGE(kj_size_parse(NULL, 0, 1, &v));
    assert_int_equal(kj_size_parse("1025", 1, 1024, &v), KJ_ERR_USAGE);
    assert_string_equal(kj_last_error(), "'1025' is not a number from 1 to 1024 (digits, with K, M, G or T for x1024 "
                                         "each, or a power such as 2^28)");
    assert_int_equal(kj_size_parse("2^41", 1, 1ull << 40, &v), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "from 1 to 2^40"));
    assert_int_equal(kj_size_parse("0", 1, (1u << 31) - 1, &v), KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "from 1 to 2^31-1"));
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_destroys_accept_null), cmocka_unit_test(test_size_grammar),
             cmocka_unit_test(test_null_arguments_are_usage_errors), cmocka_unit_test(test_accessors_accept_null),
             cmocka_unit_test(test_out_of_range_values), cmocka_unit_test(test_outputs_untouched_on_failure),
             cmocka_unit_test(test_compile_only_runtime_refuses_device_work))
