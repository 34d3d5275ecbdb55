/* The remote cache's configuration (src/cache/remote_config.c): the URL forms and their defaults, the
 * options, credentials (and that no message shows the password), the mode, the secret's rule (an
 * absolute path is a file, a relative one is refused, anything else is the secret itself), TLS
 * (rediss://, its options and files, KERNJIT_REMOTE_TLS_CA), and every malformed value refused as a
 * usage error that names it. Nothing is contacted. */
#include "test_util.h"

#include <sys/stat.h>

#include "cache/remote_config.h"

static kj__logger quiet = {0};

static void clear_env(void) {
    unsetenv("KERNJIT_REMOTE_CACHE");
    unsetenv("KERNJIT_REMOTE_SECRET");
    unsetenv("KERNJIT_REMOTE_MODE");
    unsetenv("KERNJIT_REMOTE_TLS_CA");
}

static kj_runtime_options options(const char *url, const char *secret, kj_remote_mode mode) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.remote_cache = url;
    o.remote_secret = secret;
    o.remote_mode = mode;
    return o;
}

/* Reads the configuration of url (and secret, mode): must succeed. */
static kj__remote_config read_ok(const char *url, const char *secret, kj_remote_mode mode) {
    kj_runtime_options o = options(url, secret, mode);
    kj__remote_config c;
    int configured = 0;
    KJ_ASSERT_OK(kj__remote_config_read(&o, &quiet, &c, &configured));
    assert_true(configured);
    return c;
}

/* Must be refused as a usage error whose message holds needle. */
static void read_refused(const char *url, const char *secret, kj_remote_mode mode, const char *needle) {
    kj_runtime_options o = options(url, secret, mode);
    kj__remote_config c;
    int configured = 0;
    kj_status s = kj__remote_config_read(&o, &quiet, &c, &configured);
    if (s != KJ_ERR_USAGE || !strstr(kj_last_error(), needle))
        fail_msg("'%s': %s, '%s' (wanted KJ_ERR_USAGE with '%s')", url, kj_status_name(s), kj_last_error(), needle);
    assert_false(configured);
}

static void test_tcp_forms(void **state) {
    (void)state;
    clear_env();
    kj__remote_config c = read_ok("redis://cache.example", NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.host, "cache.example");
    assert_int_equal(c.port, 6379);
    assert_int_equal(c.db, 0);
    assert_null(c.socket_path);
    assert_null(c.password);
    assert_int_equal(c.connect_timeout_ms, 50);
    assert_int_equal(c.timeout_ms, 200);
    assert_int_equal(c.mode, KJ_REMOTE_READWRITE);
    assert_null(c.secret);
    kj__remote_config_free(&c);

    c = read_ok("redis://10.1.2.3:7001/5?connect_timeout=20&timeout=1000", NULL, KJ_REMOTE_READ);
    assert_string_equal(c.host, "10.1.2.3");
    assert_int_equal(c.port, 7001);
    assert_int_equal(c.db, 5);
    assert_int_equal(c.connect_timeout_ms, 20);
    assert_int_equal(c.timeout_ms, 1000);
    assert_int_equal(c.mode, KJ_REMOTE_READ);
    kj__remote_config_free(&c);

    c = read_ok("redis://[::1]:6390/", NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.host, "::1");
    assert_int_equal(c.port, 6390);
    kj__remote_config_free(&c);
}

/* Credentials are taken apart and %-decoded, and never shown in messages. */
static void test_credentials(void **state) {
    (void)state;
    clear_env();
    kj__remote_config c = read_ok("redis://builder:s3cr%40t@h:1/2", NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.user, "builder");
    assert_string_equal(c.password, "s3cr@t");
    assert_string_equal(c.url, "redis://builder:***@h:1/2");
    kj__remote_config_free(&c);
    c = read_ok("redis://:only-a-password@h", NULL, KJ_REMOTE_DEFAULT);
    assert_null(c.user);
    assert_string_equal(c.password, "only-a-password");
    assert_string_equal(c.url, "redis://:***@h");
    kj__remote_config_free(&c);
    read_refused("redis://user:pw@h:99999", NULL, KJ_REMOTE_DEFAULT, "redis://user:***@h:99999");
    /* the last '@' ends the credentials: a password may hold '@', '?' and '/' */
    c = read_ok("redis://u:p@ss@h:7", NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.user, "u");
    assert_string_equal(c.password, "p@ss");
    assert_string_equal(c.host, "h");
    assert_int_equal(c.port, 7);
    assert_string_equal(c.url, "redis://u:***@h:7");
    kj__remote_config_free(&c);
    c = read_ok("redis://:pa?s/s@h/3?timeout=9", NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.password, "pa?s/s");
    assert_int_equal(c.db, 3);
    assert_int_equal(c.timeout_ms, 9);
    assert_string_equal(c.url, "redis://:***@h/3?timeout=9");
    kj__remote_config_free(&c);
    /* no message shows the password, in any refused form: each shows *** where the credentials were */
    static const struct {
        const char *url, *shown, *why;
    } hidden[] = {
        {"redis://:hun%zzter2@h", "redis://:***@h", "the password has a malformed %XX escape"},
        {"redis://hunter2@h", "redis://***@h", "USER:PASSWORD@ or :PASSWORD@"},
        {"redis://:hun?ter2@h:0", "redis://:***@h:0", "port '0' is not a number"},
        {"redis://:hun?ter2@h?colour=1", "redis://:***@h?colour=1", "unknown option 'colour'"},
        {"redis://user:hun@ter2@h:0", "redis://user:***@h:0", "port '0' is not a number"},
        {"redis://user:hunter2@", "redis://user:***@", "no host"},
        {"rediss://user:hunter2@h?tls_verify=maybe", "rediss://user:***@h?tls_verify=maybe", "tls_verify is yes"},
        {"rediss://user:hunter2@h?tls_ca=/nonexistent/ca.pem", "rediss://user:***@h?tls_ca=/nonexistent/ca.pem",
         "tls_ca names a file that cannot be read"},
        {"redis://user:hunter2@h?tls_ca=/x", "redis://user:***@h?tls_ca=/x", "tls_ca is an option of TLS"},
        {"http://user:hunter2@h", "http://user:***@h", "is not a Redis URL"},
        {"redis:/user:hunter2@h", "redis:***@h", "is not a Redis URL"},
        {"unix://user:hunter2@h", "unix://user:***@h", "a socket is unix:///PATH"},
    };
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++) {
        read_refused(hidden[i].url, NULL, KJ_REMOTE_DEFAULT, hidden[i].why);
        if (!strstr(kj_last_error(), hidden[i].shown) || strstr(kj_last_error(), "ter2"))
            fail_msg("'%s': the message '%s' shows the password, or not '%s'", hidden[i].url, kj_last_error(),
                     hidden[i].shown);
    }
    kj_runtime_options o = options("redis://user:hunter2@h:0", NULL, KJ_REMOTE_DEFAULT);
    kj_runtime *rt = NULL;
    assert_int_equal(kj_runtime_create(&o, &rt), KJ_ERR_USAGE);
    assert_null(strstr(kj_last_error(), "hunter2"));
    assert_null(rt);
}

static void test_unix_socket(void **state) {
    (void)state;
    clear_env();
    kj__remote_config c = read_ok("unix:///run/redis/redis.sock?db=3", NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.socket_path, "/run/redis/redis.sock");
    assert_null(c.host);
    assert_int_equal(c.db, 3);
    kj__remote_config_free(&c);
}

static void test_malformed_urls(void **state) {
    (void)state;
    clear_env();
    read_refused("http://h:6379", NULL, KJ_REMOTE_DEFAULT, "'http://h:6379' is not a Redis URL: the forms are");
    read_refused("redis://", NULL, KJ_REMOTE_DEFAULT, "no host");
    read_refused("redis://h:", NULL, KJ_REMOTE_DEFAULT, "port '' is not a number from 1 to 65535");
    read_refused("redis://h:65536", NULL, KJ_REMOTE_DEFAULT, "port '65536' is not a number from 1 to 65535");
    read_refused("redis://h:12ab", NULL, KJ_REMOTE_DEFAULT, "port '12ab'");
    read_refused("redis://h/x", NULL, KJ_REMOTE_DEFAULT, "database 'x' is not a number");
    read_refused("redis://h?db=2", NULL, KJ_REMOTE_DEFAULT, "give the database in the path");
    read_refused("redis://h?colour=blue", NULL, KJ_REMOTE_DEFAULT, "unknown option 'colour'");
    read_refused("redis://h?timeout", NULL, KJ_REMOTE_DEFAULT, "option 'timeout' has no value");
    read_refused("redis://h?timeout=0", NULL, KJ_REMOTE_DEFAULT, "timeout is milliseconds from 1 to 600000");
    read_refused("redis://h?connect_timeout=99999999", NULL, KJ_REMOTE_DEFAULT, "connect_timeout is milliseconds");
    read_refused("redis://h h", NULL, KJ_REMOTE_DEFAULT, "a space, control or non-ASCII character");
    read_refused("redis://user@h", NULL, KJ_REMOTE_DEFAULT, "USER:PASSWORD@ or :PASSWORD@");
    read_refused("redis://:%zz@h", NULL, KJ_REMOTE_DEFAULT, "the password has a malformed %XX escape");
    read_refused("redis://[fe80::1", NULL, KJ_REMOTE_DEFAULT, "an IPv6 address is written [ADDRESS]");
    read_refused("unix://relative.sock", NULL, KJ_REMOTE_DEFAULT, "a socket is unix:///PATH");
    read_refused("unix:///s?db=1&db=2", NULL, KJ_REMOTE_DEFAULT, "db is given twice");
}

/* The environment is read when the options say nothing; KJ_REMOTE_OFF reads nothing at all. */
static void test_environment_and_off(void **state) {
    (void)state;
    clear_env();
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    kj__remote_config c;
    int configured = 1;
    KJ_ASSERT_OK(kj__remote_config_read(&o, &quiet, &c, &configured));
    assert_false(configured);
    setenv("KERNJIT_REMOTE_CACHE", "redis://envhost:7000", 1);
    setenv("KERNJIT_REMOTE_MODE", "READ", 1);
    KJ_ASSERT_OK(kj__remote_config_read(&o, &quiet, &c, &configured));
    assert_true(configured);
    assert_string_equal(c.host, "envhost");
    assert_int_equal(c.mode, KJ_REMOTE_READ);
    kj__remote_config_free(&c);
    setenv("KERNJIT_REMOTE_MODE", "write", 1);
    kj_status s = kj__remote_config_read(&o, &quiet, &c, &configured);
    assert_int_equal(s, KJ_ERR_USAGE);
    assert_non_null(
        strstr(kj_last_error(), "KERNJIT_REMOTE_MODE='write' is not a mode: read (fetch only) or readwrite"));
    o.remote_mode = KJ_REMOTE_OFF;
    setenv("KERNJIT_REMOTE_CACHE", "http://not-even-a-url", 1);
    KJ_ASSERT_OK(kj__remote_config_read(&o, &quiet, &c, &configured));
    assert_false(configured);
    o.remote_mode = (kj_remote_mode)42;
    read_refused("redis://h", NULL, (kj_remote_mode)42, "remote_mode 42 is not KJ_REMOTE_DEFAULT");
    clear_env();
}

/* An absolute path names a file holding the secret (less a final new line); a relative path is
 * refused; anything else is the secret. Both must be 16 to 4096 bytes; a file that cannot be read is
 * a usage error. */
static void test_secret(void **state) {
    (void)state;
    clear_env();
    kj__remote_config c = read_ok("redis://h", "a secret value of 32 bytes......", KJ_REMOTE_DEFAULT);
    assert_int_equal(c.secret_len, 32);
    assert_memory_equal(c.secret, "a secret value of 32 bytes......", 32);
    kj__remote_config_free(&c);
    char path[512];
    snprintf(path, sizeof path, "%s/secret", kj_test_dir);
    kj_test_write(path, "0123456789abcdef0123\r\n", 22);
    chmod(path, 0600);
    c = read_ok("redis://h", path, KJ_REMOTE_DEFAULT);
    assert_int_equal(c.secret_len, 20);
    assert_memory_equal(c.secret, "0123456789abcdef0123", 20);
    kj__remote_config_free(&c);
    /* a file others may read still works, with a warning */
    chmod(path, 0644);
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_DEBUG};
    kj_runtime_options o = options("redis://h", path, KJ_REMOTE_DEFAULT);
    int configured;
    KJ_ASSERT_OK(kj__remote_config_read(&o, &lg, &c, &configured));
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "may be read by others (mode 0644): chmod 600"));
    kj__remote_config_free(&c);
    read_refused("redis://h", "short", KJ_REMOTE_DEFAULT,
                 "remote_secret: the secret is 5 bytes; 16 to 4096 are allowed");
    kj_test_write(path, "tiny\n", 5);
    read_refused("redis://h", path, KJ_REMOTE_DEFAULT, "the secret in the file is 4 bytes");
    char missing[600];
    snprintf(missing, sizeof missing, "%s/nothere", kj_test_dir);
    read_refused("redis://h", missing, KJ_REMOTE_DEFAULT, "No such file or directory");
    read_refused("redis://h", kj_test_dir, KJ_REMOTE_DEFAULT, "is a folder, not a regular file");
    setenv("KERNJIT_REMOTE_SECRET", missing, 1);
    read_refused("redis://h", NULL, KJ_REMOTE_DEFAULT, "KERNJIT_REMOTE_SECRET names the file");
    /* a relative path, ~ or a dot first: neither read nor taken as the secret (it would be a guessable
     * key); the message names the form, never the value (which may be a secret) */
    const char *paths[] = {"secrets/fleet-secret.key", "~/.kernjit/remote-secret", "./remote-secret-file",
                           "../remote-secret-file", ".remote-secret-file-name"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        setenv("KERNJIT_REMOTE_SECRET", paths[i], 1);
        read_refused("redis://h", NULL, KJ_REMOTE_DEFAULT, "KERNJIT_REMOTE_SECRET looks like a relative path");
        assert_non_null(strstr(kj_last_error(), "name the file by its absolute path"));
        assert_null(strstr(kj_last_error(), paths[i]));
    }
    read_refused("redis://h", "a/secret/of/many/bytes", KJ_REMOTE_DEFAULT, "remote_secret looks like a relative path");
    clear_env();
}

/* rediss://: the same forms as redis://, TLS on, the certificate checked unless tls_verify=no; the files
 * named (tls_ca, else KERNJIT_REMOTE_TLS_CA; tls_cert and tls_key) read now, a file that cannot be read
 * a usage error naming the option; TLS's options refused elsewhere, and malformed ones. */
static void test_tls(void **state) {
    (void)state;
    clear_env();
    kj__remote_config c = read_ok("rediss://cache.example", NULL, KJ_REMOTE_DEFAULT);
    assert_true(c.tls);
    assert_true(c.tls_verify);
    assert_string_equal(c.host, "cache.example");
    assert_int_equal(c.port, 6379);
    assert_null(c.tls_ca.path);
    assert_null(c.tls_cert.path);
    kj__remote_config_free(&c);
    c = read_ok("redis://cache.example", NULL, KJ_REMOTE_DEFAULT);
    assert_false(c.tls);
    kj__remote_config_free(&c);

    char ca[512], cert[512], key[512], spaced[512], url[2048];
    snprintf(ca, sizeof ca, "%s/ca.pem", kj_test_dir);
    snprintf(cert, sizeof cert, "%s/client.pem", kj_test_dir);
    snprintf(key, sizeof key, "%s/client.key", kj_test_dir);
    snprintf(spaced, sizeof spaced, "%s/the ca.pem", kj_test_dir);
    kj_test_write(ca, "the CA", 6);
    kj_test_write(cert, "the certificate", 15);
    kj_test_write(key, "the key", 7);
    kj_test_write(spaced, "another CA", 10);
    chmod(key, 0600);
    snprintf(url, sizeof url, "rediss://builder:hunter2@10.0.0.7:6380/3?tls_ca=%s&tls_cert=%s&tls_key=%s&timeout=500",
             ca, cert, key);
    c = read_ok(url, NULL, KJ_REMOTE_DEFAULT);
    assert_true(c.tls && c.tls_verify);
    assert_string_equal(c.host, "10.0.0.7");
    assert_int_equal(c.port, 6380);
    assert_int_equal(c.db, 3);
    assert_int_equal(c.timeout_ms, 500);
    assert_string_equal(c.password, "hunter2");
    assert_string_equal(c.tls_ca.path, ca);
    assert_int_equal(c.tls_ca.len, 6);
    assert_memory_equal(c.tls_ca.data, "the CA", 6);
    assert_memory_equal(c.tls_cert.data, "the certificate", 15);
    assert_memory_equal(c.tls_key.data, "the key", 7);
    assert_null(strstr(c.url, "hunter2"));
    kj__remote_config_free(&c);
    /* a path with a space, %-escaped; the certificate's key in the same file */
    snprintf(url, sizeof url, "rediss://[::1]?tls_ca=%s/the%%20ca.pem&tls_cert=%s&tls_key=%s&tls_verify=yes",
             kj_test_dir, cert, cert);
    c = read_ok(url, NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.host, "::1");
    assert_string_equal(c.tls_ca.path, spaced);
    assert_memory_equal(c.tls_ca.data, "another CA", 10);
    assert_memory_equal(c.tls_key.data, "the certificate", 15);
    kj__remote_config_free(&c);
    c = read_ok("rediss://h?tls_verify=no", NULL, KJ_REMOTE_DEFAULT);
    assert_false(c.tls_verify);
    kj__remote_config_free(&c);

    /* KERNJIT_REMOTE_TLS_CA, white space at its ends left out, where the URL names no CA */
    char padded[600];
    snprintf(padded, sizeof padded, " %s\n", ca);
    setenv("KERNJIT_REMOTE_TLS_CA", padded, 1);
    c = read_ok("rediss://h", NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.tls_ca.path, ca);
    assert_memory_equal(c.tls_ca.data, "the CA", 6);
    kj__remote_config_free(&c);
    snprintf(url, sizeof url, "rediss://h?tls_ca=%s/the%%20ca.pem", kj_test_dir);
    c = read_ok(url, NULL, KJ_REMOTE_DEFAULT);
    assert_string_equal(c.tls_ca.path, spaced);
    kj__remote_config_free(&c);
    c = read_ok("redis://h", NULL, KJ_REMOTE_DEFAULT); /* plain: not read */
    assert_null(c.tls_ca.path);
    kj__remote_config_free(&c);
    setenv("KERNJIT_REMOTE_TLS_CA", "/nonexistent/ca.pem", 1);
    read_refused("rediss://h", NULL, KJ_REMOTE_DEFAULT,
                 "remote_cache='rediss://h': KERNJIT_REMOTE_TLS_CA names a file "
                 "that cannot be read: cannot open '/nonexistent/ca.pem'");
    unsetenv("KERNJIT_REMOTE_TLS_CA");

    /* a key others may read still works, with a warning */
    chmod(key, 0644);
    kj_test_log log = {0};
    kj__logger lg = {kj_test_log_fn, &log, KJ_LOG_DEBUG};
    snprintf(url, sizeof url, "rediss://h?tls_cert=%s&tls_key=%s", cert, key);
    kj_runtime_options o = options(url, NULL, KJ_REMOTE_DEFAULT);
    int configured;
    KJ_ASSERT_OK(kj__remote_config_read(&o, &lg, &c, &configured));
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "TLS key file"));
    assert_non_null(strstr(log.last, "may be read by others (mode 0644): chmod 600"));
    kj__remote_config_free(&c);

    /* refused: each names the option and what is allowed */
    static const struct {
        const char *url, *why;
    } refused[] = {
        {"redis://h?tls_ca=/etc/ssl/ca.pem", "tls_ca is an option of TLS: give rediss://HOST[:PORT]"},
        {"redis://h?tls_verify=no", "tls_verify is an option of TLS"},
        {"unix:///run/redis.sock?tls_cert=/c", "tls_cert is an option of TLS"},
        {"rediss://h?tls_verify=off",
         "tls_verify is yes (the default: the server's certificate and name are checked) or no"},
        {"rediss://h?tls_verify=no&tls_verify=no", "tls_verify is given twice"},
        {"rediss://h?tls_ca=", "tls_ca names a file: tls_ca=FILE"},
        {"rediss://h?tls_ca=/a&tls_ca=/b", "tls_ca is given twice"},
        {"rediss://h?tls_key=/a%zz", "tls_key has a malformed %XX escape"},
        {"rediss://h?tls_cert=/a", "tls_cert without tls_key: a client certificate is tls_cert=FILE and tls_key=FILE"},
        {"rediss://h?tls_key=/a", "tls_key without tls_cert"},
        {"rediss://h?tls_ca=/nonexistent/ca.pem",
         "tls_ca names a file that cannot be read: cannot open '/nonexistent/ca.pem': No such file or directory"},
        {"rediss://h?tls_keys=/a", "unknown option 'tls_keys'; the options are connect_timeout=MS, timeout=MS, "
                                   "db=N (unix sockets), tls_ca=FILE, tls_cert=FILE, tls_key=FILE, tls_verify=no "
                                   "(rediss://)"},
        {"rediss://h?db=1", "give the database in the path, rediss://HOST:PORT/DB"},
        {"rediss://", "no host"},
        {"rediss://h:0", "port '0' is not a number from 1 to 65535"},
        {"redis2://h", "is not a Redis URL: the forms are redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?OPTIONS]"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        read_refused(refused[i].url, NULL, KJ_REMOTE_DEFAULT, refused[i].why);
    snprintf(url, sizeof url, "rediss://h?tls_cert=%s&tls_key=%s", cert, kj_test_dir);
    read_refused(url, NULL, KJ_REMOTE_DEFAULT, "tls_key names a file that cannot be read");
    assert_non_null(strstr(kj_last_error(), "is a folder, not a regular file"));
    clear_env();
}

KJ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_tcp_forms), cmocka_unit_test(test_credentials),
             cmocka_unit_test(test_unix_socket), cmocka_unit_test(test_malformed_urls),
             cmocka_unit_test(test_environment_and_off), KJ_TEST_IN_DIR(test_secret), KJ_TEST_IN_DIR(test_tls))
