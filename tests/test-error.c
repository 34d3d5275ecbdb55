/* The status list and the per-thread last error (src/error.c), and the in-memory map. */
#include "test_util.h"

#include <pthread.h>

#include "error.h"
#include "kernel_map.h"

static void test_status_table(void **state) {
    (void)state;
    assert_string_equal(kj_status_name(KJ_OK), "KJ_OK");
    assert_string_equal(kj_status_name(KJ_ERR_UNKNOWN_KERNEL), "KJ_ERR_UNKNOWN_KERNEL");
    assert_string_equal(kj_strerror(KJ_ERR_COMPILE), "NVRTC compilation failed");
    assert_int_equal(kj_status_class(KJ_OK), 0);
    assert_int_equal(kj_status_class(KJ_ERR_INVALID_DEFINE), 2);
    assert_int_equal(kj_status_class(KJ_ERR_USAGE), 2);
    assert_int_equal(kj_status_class(KJ_ERR_COMPILE), 1);
    assert_int_equal(kj_status_class(KJ_ERR_NO_DEVICE), 1);
    assert_string_equal(kj_status_name((kj_status)9999), "KJ_UNKNOWN");
    assert_int_equal(kj_status_class((kj_status)-1), 1);
    for (int s = 0; s < KJ_STATUS_COUNT_; s++) assert_true(strlen(kj_strerror((kj_status)s)) > 0);
}

static void *other_thread(void *arg) {
    (void)arg;
    KJ_FAIL(KJ_ERR_IO, "from the other thread");
    return strcmp(kj_last_error(), "from the other thread") == 0 ? (void *)1 : NULL;
}

static void test_last_error_per_thread(void **state) {
    (void)state;
    assert_int_equal(KJ_FAIL(KJ_ERR_USAGE, "bad %s %d", "value", 7), KJ_ERR_USAGE);
    assert_string_equal(kj_last_error(), "bad value 7");
    kj__error_append("log line 1\nlog line 2\n\n");
    assert_string_equal(kj_last_error(), "bad value 7\nlog line 1\nlog line 2");
    assert_non_null(strstr(kj__error_where(), "test-error.c"));
    pthread_t t;
    void *ok;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, &ok);
    assert_non_null(ok);
    assert_string_equal(kj_last_error(), "bad value 7\nlog line 1\nlog line 2"); /* untouched by the other thread */
}

static void test_map(void **state) {
    (void)state;
    kj__map m = {0};
    uint8_t key[16];
    int values[5000];
    for (int i = 0; i < 5000; i++) {
        memset(key, 0, 16);
        memcpy(key, &i, sizeof i);
        key[15] = (uint8_t)(i * 31);
        values[i] = i;
        assert_int_equal(kj__map_put(&m, key, &values[i]), 0);
    }
    assert_int_equal(m.count, 5000);
    for (int i = 0; i < 5000; i++) {
        memset(key, 0, 16);
        memcpy(key, &i, sizeof i);
        key[15] = (uint8_t)(i * 31);
        int *v = kj__map_get(&m, key);
        assert_non_null(v);
        assert_int_equal(*v, i);
    }
    memset(key, 0xee, 16);
    assert_null(kj__map_get(&m, key));
    /* replacing keeps the count */
    memset(key, 0, 16);
    assert_int_equal(kj__map_put(&m, key, &values[7]), 0);
    assert_int_equal(m.count, 5000);
    assert_ptr_equal(kj__map_get(&m, key), &values[7]);
    kj__map_clear(&m, NULL, NULL);
    assert_null(kj__map_get(&m, key));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_status_table), cmocka_unit_test(test_last_error_per_thread),
                                       cmocka_unit_test(test_map)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
