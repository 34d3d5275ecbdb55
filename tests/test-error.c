/* The status list and the per-thread last error (src/base/error.c), the in-memory map, and the
 * formatting helpers of src/base/util.c. */
#include "test_util.h"

#include <pthread.h>

#include "base/error.h"
#include "base/map.h"
#include "base/log.h"
#include "base/util.h"

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

/* The numbers are ABI: a program compiled against 0.2.0 compares with them. Reordering the list,
 * or inserting a status anywhere but at the end, must fail here. */
static void test_status_values_pinned(void **state) {
    (void)state;
    static const struct {
        kj_status status;
        int value;
        const char *name;
    } pinned[] = {
        {KJ_OK, 0, "KJ_OK"},
        {KJ_ERR_USAGE, 1, "KJ_ERR_USAGE"},
        {KJ_ERR_UNKNOWN_KERNEL, 2, "KJ_ERR_UNKNOWN_KERNEL"},
        {KJ_ERR_UNKNOWN_ENTRY, 3, "KJ_ERR_UNKNOWN_ENTRY"},
        {KJ_ERR_INVALID_DEFINE, 4, "KJ_ERR_INVALID_DEFINE"},
        {KJ_ERR_LIMIT, 5, "KJ_ERR_LIMIT"},
        {KJ_ERR_SOURCE, 6, "KJ_ERR_SOURCE"},
        {KJ_ERR_SPEC, 7, "KJ_ERR_SPEC"},
        {KJ_ERR_COMPILE, 8, "KJ_ERR_COMPILE"},
        {KJ_ERR_LINK, 9, "KJ_ERR_LINK"},
        {KJ_ERR_NO_DRIVER, 10, "KJ_ERR_NO_DRIVER"},
        {KJ_ERR_NO_DEVICE, 11, "KJ_ERR_NO_DEVICE"},
        {KJ_ERR_CUDA, 12, "KJ_ERR_CUDA"},
        {KJ_ERR_HOST_MEMORY, 13, "KJ_ERR_HOST_MEMORY"},
        {KJ_ERR_DEVICE_MEMORY, 14, "KJ_ERR_DEVICE_MEMORY"},
        {KJ_ERR_DEVICE_LAUNCH, 15, "KJ_ERR_DEVICE_LAUNCH"},
        {KJ_ERR_IO, 16, "KJ_ERR_IO"},
        {KJ_ERR_UNSUPPORTED, 17, "KJ_ERR_UNSUPPORTED"},
        {KJ_ERR_NOT_FOUND, 18, "KJ_ERR_NOT_FOUND"},
        {KJ_ERR_WRONG_RESULT, 19, "KJ_ERR_WRONG_RESULT"},
    };
    size_t n = sizeof pinned / sizeof pinned[0];
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((int)pinned[i].status, pinned[i].value);
        assert_string_equal(kj_status_name((kj_status)pinned[i].value), pinned[i].name);
    }
    /* a status added later extends the list: pin it above */
    assert_int_equal(KJ_STATUS_COUNT_, (int)n);
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

/* Whether s is valid UTF-8: a shortened message must not split a character. */
static int valid_utf8(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
        if (!n) return 0;
        for (int i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80) return 0;
        p += n;
    }
    return 1;
}

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* A path of n bytes: /work/<folders of 200 x>/the/file.cu */
static char *long_path(size_t n, const char *letter) {
    char *p = malloc(n + 8);
    strcpy(p, "/work");
    while (strlen(p) + 201 + strlen("/the/file.cu") < n) {
        strcat(p, "/");
        for (int i = 0; i < 200; i += (int)strlen(letter)) strcat(p, letter);
    }
    strcat(p, "/the/file.cu");
    return p;
}

static void test_message_keeps_the_reason(void **state) {
    (void)state;
    char out[KJ__MESSAGE_MAX];
    /* a message that fits is as printf makes it */
    assert_int_equal(kj_message_format(out, sizeof out, "cannot open '%s': %s", "/a/b.cu", "No such file"), 35);
    assert_string_equal(out, "cannot open '/a/b.cu': No such file");
    /* a path of 5000 bytes: its middle goes, its start, its end and the reason stay */
    char *path = long_path(5000, "x");
    size_t n = kj_message_format(out, sizeof out, "cannot open '%s': %s", path, "File name too long");
    assert_int_equal(n, strlen(out));
    assert_true(n < sizeof out && n > sizeof out - 40); /* the room is used, not wasted */
    assert_true(ends_with(out, "/the/file.cu': File name too long"));
    assert_memory_equal(out, "cannot open '/work/xxx", 22);
    assert_non_null(strstr(out, "\xe2\x80\xa6"));
    /* two paths share the room alike, and both keep their ends */
    n = kj_message_format(out, sizeof out, "cannot rename %s to %s.new: %s", path, path, "No space left on device");
    assert_true(n < sizeof out);
    assert_true(ends_with(out, "/the/file.cu.new: No space left on device"));
    assert_non_null(strstr(out, "/the/file.cu to /work/xxx"));
    const char *mark = strstr(out, "\xe2\x80\xa6"), *second = mark ? strstr(mark + 3, "\xe2\x80\xa6") : NULL;
    assert_non_null(second);
    free(path);
    /* characters of several bytes are never split */
    path = long_path(5000, "\xc3\xa9\xe2\x82\xac"); /* é€ */
    for (size_t size = 2; size < 300; size += 7) {
        char small[300];
        kj_message_format(small, size, "'%s': %s", path, "Permission denied");
        assert_true(strlen(small) < size);
        assert_true(valid_utf8(small));
    }
    kj_message_format(out, sizeof out, "'%s': %s", path, "Permission denied");
    assert_true(valid_utf8(out));
    assert_true(ends_with(out, "/the/file.cu': Permission denied"));
    free(path);
    /* one word that is the whole message: its start and its end */
    char blob[5000];
    memset(blob, 'b', sizeof blob - 4);
    memcpy(blob + sizeof blob - 4, "END", 4);
    kj_message_format(out, 100, "%s", blob);
    assert_int_equal(strlen(out), 99);
    assert_true(ends_with(out, "bEND"));
    /* a buffer of 1 byte holds the NUL; of none, nothing is written */
    assert_int_equal(kj_message_format(out, 1, "%s", blob), 0);
    assert_string_equal(out, "");
    out[0] = 'z';
    assert_int_equal(kj_message_format(out, 0, "%s", blob), 0);
    assert_int_equal(out[0], 'z');
}

static void remember(kj_log_level level, const char *message, void *user) {
    (void)level;
    snprintf(user, KJ__MESSAGE_MAX, "%s", message);
}

/* kj_last_error() and the log callback go through the same formatting */
static void test_errors_and_logs_keep_the_reason(void **state) {
    (void)state;
    char *path = long_path(5000, "y");
    assert_int_equal(KJ_FAIL(KJ_ERR_SOURCE, "cannot open '%s': %s", path, "File name too long"), KJ_ERR_SOURCE);
    assert_true(strlen(kj_last_error()) < KJ__MESSAGE_MAX);
    assert_true(ends_with(kj_last_error(), "/the/file.cu': File name too long"));
    char seen[KJ__MESSAGE_MAX] = "";
    kj__logger log = {remember, seen, KJ_LOG_INFO};
    kj__log(&log, KJ_LOG_WARN, "cannot create the cache folder %s (%s); compiling in memory only", path,
            "File name too long");
    assert_true(ends_with(seen, "/the/file.cu (File name too long); compiling in memory only"));
    free(path);
}

/* kj__asprintf and kj__buf_printf format once where the text fits (a small buffer, the room left)
 * and again where it does not: every length around those bounds comes out whole and exact. */
static void test_formatting(void **state) {
    (void)state;
    static const size_t lengths[] = {0, 1, 254, 255, 256, 257, 511, 512, 513, 5000};
    char *want = malloc(6000);
    assert_non_null(want);
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        size_t n = lengths[i];
        for (size_t k = 0; k < n; k++) want[k] = (char)('a' + k % 26);
        want[n] = '\0';
        char *got = kj__asprintf("%s", want);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
        got = kj__asprintf("<%.*s|%d>", (int)n, want, (int)n);
        assert_non_null(got);
        assert_int_equal(strlen(got), n + 3 + snprintf(NULL, 0, "%d", (int)n));
        assert_memory_equal(got + 1, want, n);
        free(got);
    }
    /* a buffer grown by appends of every length, against the same text built by hand */
    kj__buf b = {0};
    size_t expect_len = 0;
    char *expect = calloc(1, 40000);
    assert_non_null(expect);
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
            size_t n = lengths[i];
            assert_int_equal(kj__buf_printf(&b, "[%zu:%.*s]", n, (int)n, want), 0);
            expect_len += (size_t)sprintf(expect + expect_len, "[%zu:%.*s]", n, (int)n, want);
            assert_int_equal(b.len, expect_len);
            assert_true(b.cap > b.len);
            assert_string_equal(b.data, expect);
        }
    kj__buf_free(&b);
    free(expect);
    free(want);
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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_status_table),
                                       cmocka_unit_test(test_status_values_pinned),
                                       cmocka_unit_test(test_last_error_per_thread),
                                       cmocka_unit_test(test_message_keeps_the_reason),
                                       cmocka_unit_test(test_errors_and_logs_keep_the_reason),
                                       cmocka_unit_test(test_map),
                                       cmocka_unit_test(test_formatting)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
