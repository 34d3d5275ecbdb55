/* The disk cache (src/cache/cache.c): store and load, damage, atomic replacement, unsafe folders,
 * symbolic links and eviction. */
#include "test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <utime.h>

#include "cache/cache.h"
#include "jit/arch.h"

static kj__key make_key(int i) {
    kj__key k;
    memset(k.bytes, 0, 16);
    k.bytes[0] = (uint8_t)i;
    k.bytes[15] = 0x5a;
    for (int j = 0; j < 16; j++) snprintf(k.hex + 2 * j, 3, "%02x", k.bytes[j]);
    return k;
}

static kj__cache *open_cache(const char *dir, uint64_t max, kj_test_log *log) {
    kj__logger l = {kj_test_log_fn, log, KJ_LOG_INFO};
    memset(log, 0, sizeof *log);
    return kj__cache_open(dir, max, &l);
}

/* Files in dir whose names start with prefix; with no prefix, every name not starting with '.'. */
static size_t count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += prefix ? strncmp(e->d_name, prefix, strlen(prefix)) == 0 : e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_store_load(void **state) {
    (void)state;
    kj_test_log log;
    kj__cache *c = open_cache(kj_test_dir, 0, &log);
    assert_non_null(c);
    kj__key k = make_key(1);
    char path[PATH_MAX], *payload;
    size_t len;
    uint32_t flags;
    char *desc = NULL;
    assert_int_equal(kj__cache_load(c, "sm_90", &k, &payload, &len, &flags, NULL, path), KJ__MISS);
    const char bin[] = "\x7f"
                       "ELF pretend cubin";
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "kernel: t", bin, sizeof bin, KJ_CACHE_FLAG_PTX, path), 0);
    assert_int_equal(kj__cache_load(c, "sm_90", &k, &payload, &len, &flags, &desc, path), KJ__HIT);
    assert_int_equal(len, sizeof bin);
    assert_memory_equal(payload, bin, len);
    assert_int_equal(flags, KJ_CACHE_FLAG_PTX);
    assert_string_equal(desc, "kernel: t");
    free(payload);
    free(desc);
    /* one folder per arch, created 0700, and no temporary file left behind */
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm_90", kj_test_dir);
    struct stat st;
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(count_files(sub, ".tmp-"), 0);
    assert_int_equal(count_files(sub, NULL), 1);
    /* another arch is another folder: a miss */
    assert_int_equal(kj__cache_load(c, "sm_80", &k, &payload, &len, &flags, NULL, path), KJ__MISS);
    /* replacing an entry is atomic: the new bytes, still one file */
    const char bin2[] = "second version";
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "kernel: t2", bin2, sizeof bin2, 0, path), 0);
    assert_int_equal(kj__cache_load(c, "sm_90", &k, &payload, &len, &flags, NULL, path), KJ__HIT);
    assert_memory_equal(payload, bin2, sizeof bin2);
    free(payload);
    assert_int_equal(count_files(sub, NULL), 1);
    assert_int_equal(log.warnings, 0);
    kj__cache_close(c);
}

/* Damages the entry with fn, then expects a verified miss that removes it, with a warning. */
static void expect_bad(void (*damage)(const char *path)) {
    char *dir = kj_test_tmpdir();
    kj_test_log log;
    kj__cache *c = open_cache(dir, 0, &log);
    kj__key k = make_key(2);
    char path[PATH_MAX], *payload = NULL;
    size_t len;
    uint32_t flags;
    char bin[4096];
    for (size_t i = 0; i < sizeof bin; i++) bin[i] = (char)(i * 7);
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "d", bin, sizeof bin, 0, path), 0);
    damage(path);
    assert_int_equal(kj__cache_load(c, "sm_90", &k, &payload, &len, &flags, NULL, path), KJ__BAD);
    assert_null(payload);
    assert_true(log.warnings >= 1);
    struct stat st;
    assert_int_not_equal(lstat(path, &st), 0); /* removed: the next store starts clean */
    assert_int_equal(kj__cache_load(c, "sm_90", &k, &payload, &len, &flags, NULL, path), KJ__MISS);
    kj__cache_close(c);
    kj_test_rmdir(dir);
}

static void truncate_entry(const char *path) { assert_int_equal(truncate(path, 100), 0); }
static void truncate_header(const char *path) { assert_int_equal(truncate(path, 10), 0); }
static void empty_entry(const char *path) { assert_int_equal(truncate(path, 0), 0); }
static void flip_payload_bit(const char *path) {
    /* the last byte of the file: always payload */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    int fd = open(path, O_RDWR);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, st.st_size - 1), 1);
    b ^= 0x10;
    assert_int_equal(pwrite(fd, &b, 1, st.st_size - 1), 1);
    close(fd);
}
static void flip_header_bit(const char *path) {
    int fd = open(path, O_RDWR);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, 9), 1); /* the format version */
    b ^= 0x01;
    assert_int_equal(pwrite(fd, &b, 1, 9), 1);
    close(fd);
}
static void append_garbage(const char *path) {
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_int_equal(write(fd, "xx", 2), 2);
    close(fd);
}
static void swap_in_other_key(const char *path) {
    /* a valid entry of another key renamed into place must not be taken */
    int fd = open(path, O_RDWR);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, 32), 1);
    b ^= 0xff;
    assert_int_equal(pwrite(fd, &b, 1, 32), 1);
    close(fd);
}

static void test_truncated(void **state) {
    (void)state;
    expect_bad(truncate_entry);
    expect_bad(truncate_header);
    expect_bad(empty_entry);
}
static void test_bit_flips(void **state) {
    (void)state;
    expect_bad(flip_payload_bit);
    expect_bad(flip_header_bit);
}
static void test_wrong_length_or_key(void **state) {
    (void)state;
    expect_bad(append_garbage);
    expect_bad(swap_in_other_key);
}

static void test_symlink_never_followed(void **state) {
    (void)state;
    kj_test_log log;
    kj__cache *c = open_cache(kj_test_dir, 0, &log);
    kj__key k = make_key(3);
    char path[PATH_MAX], target[PATH_MAX], *payload = NULL;
    size_t len;
    uint32_t flags;
    /* a valid entry elsewhere, linked into the entry's place */
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "d", "abc", 3, 0, path), 0);
    snprintf(target, sizeof target, "%s/elsewhere", kj_test_dir);
    assert_int_equal(rename(path, target), 0);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(kj__cache_load(c, "sm_90", &k, &payload, &len, &flags, NULL, path), KJ__BAD);
    struct stat st;
    assert_int_not_equal(lstat(path, &st), 0); /* the link is gone */
    assert_int_equal(stat(target, &st), 0);    /* its target untouched */
    /* a store over a link replaces the link, never writes through it */
    assert_int_equal(symlink(target, path), 0);
    off_t before = st.st_size;
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "d", "new bytes", 9, 0, path), 0);
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_size, before);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    /* an arch folder that is a link is refused */
    char linkdir[PATH_MAX], realdir[PATH_MAX];
    snprintf(realdir, sizeof realdir, "%s/real", kj_test_dir);
    snprintf(linkdir, sizeof linkdir, "%s/sm_80", kj_test_dir);
    assert_int_equal(mkdir(realdir, 0700), 0);
    assert_int_equal(symlink(realdir, linkdir), 0);
    assert_int_equal(kj__cache_store(c, "sm_80", &k, "d", "x", 1, 0, path), -1);
    assert_int_equal(count_files(realdir, NULL), 0);
    kj__cache_close(c);
}

/* A load or a store names nothing outside the cache's folders, whoever gave the folder and the key (a
 * remote server names both): a folder name kernjit does not write, or a key that is not 32 lower-case
 * hex digits, is a warning and a miss, and nothing is made anywhere. */
static void test_names_outside_the_folders_refused(void **state) {
    (void)state;
    kj_test_log log;
    char root[PATH_MAX], above[PATH_MAX], path[PATH_MAX], *payload;
    snprintf(above, sizeof above, "%s/a", kj_test_dir);
    snprintf(root, sizeof root, "%s/a/b/cache", kj_test_dir);
    kj__cache *c = open_cache(root, 0, &log);
    assert_non_null(c);
    size_t len;
    uint32_t flags;
    kj__key k = make_key(9);
    const char *folders[] = {"../../x",        "..",     ".",        "",         "sm_",
                             "sm_9",           "sm_090", "sm_12345", "sm_90/..", "x/sm_90",
                             "sm_90/../../..", "SM_90",  "sm_-90"};
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
        assert_false(kj__arch_folder_valid(folders[i]));
        int warnings = log.warnings;
        assert_int_equal(kj__cache_store(c, folders[i], &k, "d", "x", 1, 0, path), -1);
        assert_int_equal(log.warnings, warnings + 1);
        assert_non_null(strstr(log.last, "is not one kernjit writes (a target's name"));
        assert_int_equal(kj__cache_load(c, folders[i], &k, &payload, &len, &flags, NULL, path), KJ__MISS);
    }
    assert_false(kj__arch_folder_valid(NULL));
    const char *good[] = {"sm_50", "sm_90", "sm_100", "sm_1000", "sm_90a", "sm_100f", "compute_90"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) assert_true(kj__arch_folder_valid(good[i]));
    /* keys: upper-case, short, not hex, or a name that disagrees with the bytes */
    const char *hex[] = {"0900000000000000000000000000005A", "09000000000000000000000000005a",
                         "../../../../../../tmp/x", "0900000000000000000000000000005g",
                         "0a00000000000000000000000000005a"};
    for (size_t i = 0; i < sizeof hex / sizeof hex[0]; i++) {
        kj__key bad = k;
        snprintf(bad.hex, sizeof bad.hex, "%s", hex[i]);
        assert_int_equal(kj__cache_store(c, "sm_90", &bad, "d", "x", 1, 0, path), -1);
        assert_non_null(strstr(log.last, "is not 32 lower-case hex digits"));
        assert_int_equal(kj__cache_load(c, "sm_90", &bad, &payload, &len, &flags, NULL, path), KJ__MISS);
    }
    assert_int_equal(count_files(root, NULL), 0);
    assert_int_equal(count_files(above, NULL), 1); /* b, and no x beside it */
    assert_int_equal(count_files(kj_test_dir, NULL), 1);
    kj__cache_close(c);
}

static void test_unsafe_folders_refused(void **state) {
    (void)state;
    kj_test_log log;
    assert_int_equal(chmod(kj_test_dir, 0777), 0);
    assert_null(open_cache(kj_test_dir, 0, &log));
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "others may write to it"));
    assert_non_null(strstr(log.last, "chmod 700 the folder"));
    assert_int_equal(chmod(kj_test_dir, 0755), 0); /* readable by others is fine; writable is not */
    kj__cache *c = open_cache(kj_test_dir, 0, &log);
    assert_non_null(c);
    kj__cache_close(c);
    if (geteuid() == 0) {
        assert_int_equal(chown(kj_test_dir, 65534, 65534), 0);
        assert_null(open_cache(kj_test_dir, 0, &log));
        assert_non_null(strstr(log.last, "owned by uid 65534"));
        /* chmod would not do for a folder another user owns */
        assert_null(strstr(log.last, "chmod"));
        assert_non_null(strstr(log.last, "set KERNJIT_CACHE_DIR to one of your own"));
        assert_int_equal(chown(kj_test_dir, 0, 0), 0);
    }
    /* a subfolder that others may write to is not used either */
    c = open_cache(kj_test_dir, 0, &log);
    char sub[PATH_MAX], path[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm_90", kj_test_dir);
    assert_int_equal(mkdir(sub, 0777), 0);
    assert_int_equal(chmod(sub, 0777), 0);
    kj__key k = make_key(4);
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "d", "x", 1, 0, path), -1);
    assert_true(log.warnings >= 1);
    kj__cache_close(c);
    /* a folder that cannot be created: a file is in the way */
    char blocked[PATH_MAX];
    snprintf(blocked, sizeof blocked, "%s/file", kj_test_dir);
    kj_test_write(blocked, "x", 1);
    snprintf(path, sizeof path, "%s/file/cache", kj_test_dir);
    assert_null(open_cache(path, 0, &log));
    assert_non_null(strstr(log.last, "cannot create"));
}

/* A cache folder path that cannot work is refused before anything is made: once a path of 5000
 * characters made some 20 nested folders before it failed. */
static void test_unusable_paths_create_nothing(void **state) {
    (void)state;
    kj_test_log log;
    char path[6000];
    int n = snprintf(path, sizeof path, "%s", kj_test_dir);
    while (n < 5000) n += snprintf(path + n, sizeof path - (size_t)n, "/%0200d", 0);
    assert_null(open_cache(path, 0, &log));
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "characters, at most 4031"));
    assert_int_equal(count_files(kj_test_dir, NULL), 0);
    /* one name longer than the file system takes, below folders that do not exist yet */
    snprintf(path, sizeof path, "%s/a/b/%0300d/cache", kj_test_dir, 0);
    assert_null(open_cache(path, 0, &log));
    assert_non_null(strstr(log.last, "it has a name of 300 characters"));
    assert_int_equal(count_files(kj_test_dir, NULL), 0);
    /* a parent that anyone may write: refused before the folder is made in it */
    snprintf(path, sizeof path, "%s/open", kj_test_dir);
    assert_int_equal(mkdir(path, 0777), 0);
    assert_int_equal(chmod(path, 0777), 0);
    snprintf(path, sizeof path, "%s/open/cache", kj_test_dir);
    assert_null(open_cache(path, 0, &log));
    assert_non_null(strstr(log.last, "may be written by anyone without the sticky bit"));
    snprintf(path, sizeof path, "%s/open", kj_test_dir);
    assert_int_equal(count_files(path, NULL), 0);
}

/* No descriptor is held between uses, so the folder is found again at each one: a cache folder
 * swapped for a link after it was opened is not written through, and one removed is made again. */
static void test_folder_checked_at_each_use(void **state) {
    (void)state;
    char root[PATH_MAX], elsewhere[PATH_MAX], path[PATH_MAX], *payload = NULL, *moved;
    snprintf(root, sizeof root, "%s/cache", kj_test_dir);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", kj_test_dir);
    kj_test_log log;
    kj__cache *c = open_cache(root, 0, &log);
    assert_non_null(c);
    kj__key k = make_key(7);
    size_t len;
    uint32_t flags;
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "d", "abc", 3, 0, path), 0);
    /* swapped for a link to a folder of the same owner */
    assert_int_equal(mkdir(elsewhere, 0700), 0);
    assert_non_null(moved = kj__asprintf("%s/moved", kj_test_dir));
    assert_int_equal(rename(root, moved), 0);
    assert_int_equal(symlink(elsewhere, root), 0);
    kj__key k2 = make_key(8);
    assert_int_equal(kj__cache_store(c, "sm_90", &k2, "d", "def", 3, 0, path), -1);
    assert_non_null(strstr(log.last, "it is a symbolic link"));
    assert_int_equal(kj__cache_load(c, "sm_90", &k, &payload, &len, &flags, NULL, path), KJ__MISS);
    assert_int_equal(count_files(elsewhere, NULL), 0);
    /* removed: the next store makes it again */
    assert_int_equal(unlink(root), 0);
    assert_int_equal(kj__cache_store(c, "sm_90", &k2, "d", "def", 3, 0, path), 0);
    assert_int_equal(kj__cache_load(c, "sm_90", &k2, &payload, &len, &flags, NULL, path), KJ__HIT);
    assert_memory_equal(payload, "def", 3);
    free(payload);
    free(moved);
    kj__cache_close(c);
}

/* The payload of key's entry in c ("" after a miss or a refusal): what a load hands out. */
static kj__lookup load_text(kj__cache *c, const char *arch, const kj__key *k, char *text, size_t size) {
    char path[PATH_MAX], *payload = NULL;
    size_t len = 0;
    uint32_t flags;
    kj__lookup r = kj__cache_load(c, arch, k, &payload, &len, &flags, NULL, path);
    snprintf(text, size, "%.*s", r == KJ__HIT ? (int)len : 0, r == KJ__HIT ? payload : "");
    free(payload);
    return r;
}

/* A folder checked once is known by its identity: a later use takes <root>/<arch> only when it is the
 * very folder verified (or, for an arch folder not used yet, one whose parent is the verified root),
 * still this user's and private; anything else is checked from the root again, with the refusals and
 * warnings of the first use. Here each swap puts a folder of this user, holding a valid entry for the
 * key, where it would be served if the identity were not checked. */
static void test_verified_folders_swapped(void **state) {
    (void)state;
    char root[1024], other[1024], moved[1024], arch[1100], kept[1024], path[PATH_MAX], text[64];
    snprintf(root, sizeof root, "%s/cache", kj_test_dir);
    snprintf(other, sizeof other, "%s/other", kj_test_dir);
    snprintf(moved, sizeof moved, "%s/moved", kj_test_dir);
    snprintf(arch, sizeof arch, "%s/sm_90", root);
    kj_test_log log, other_log;
    kj__key k = make_key(20), k2 = make_key(21);
    kj__cache *o = open_cache(other, 0, &other_log);
    assert_int_equal(kj__cache_store(o, "sm_90", &k, "d", "planted", 7, 0, path), 0);
    assert_int_equal(kj__cache_store(o, "sm_90", &k2, "d", "planted", 7, 0, path), 0);
    kj__cache_close(o);

    /* the arch folder used (verified), then the root swapped for a link to the other folder */
    kj__cache *c = open_cache(root, 0, &log);
    assert_int_equal(kj__cache_store(c, "sm_90", &k, "d", "mine", 4, 0, path), 0);
    assert_int_equal(kj__cache_store(c, "sm_80", &k, "d", "mine", 4, 0, path), 0);
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__HIT);
    assert_string_equal(text, "mine");
    /* a link to the folder verified leads to that folder: it is the one used */
    assert_int_equal(rename(root, moved), 0);
    assert_int_equal(symlink(moved, root), 0);
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__HIT);
    assert_string_equal(text, "mine");
    assert_int_equal(log.warnings, 0);
    assert_int_equal(unlink(root), 0);
    assert_int_equal(symlink(other, root), 0);
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__MISS);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "it is a symbolic link"));
    assert_int_equal(kj__cache_store(c, "sm_90", &k2, "d", "mine", 4, 0, path), -1);
    assert_int_equal(count_files(other, NULL), 1); /* sm_90 alone */
    snprintf(path, sizeof path, "%s/sm_90", other);
    assert_int_equal(count_files(path, NULL), 2);
    /* once refused, the root is checked from its parent again: a link to the folder verified is no
     * longer taken for it, for any target */
    assert_int_equal(unlink(root), 0);
    assert_int_equal(symlink(moved, root), 0);
    assert_int_equal(load_text(c, "sm_80", &k, text, sizeof text), KJ__MISS);
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__MISS);
    assert_int_equal(log.warnings, 4);
    assert_non_null(strstr(log.last, "it is a symbolic link"));
    kj__cache_close(c);

    /* an arch folder not used yet, below a root swapped for a link since the open: its parent is not
     * the root verified at the open */
    assert_int_equal(unlink(root), 0);
    assert_int_equal(rename(moved, root), 0);
    c = open_cache(root, 0, &log);
    assert_int_equal(rename(root, moved), 0);
    assert_int_equal(symlink(other, root), 0);
    assert_int_equal(load_text(c, "sm_90", &k2, text, sizeof text), KJ__MISS);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "it is a symbolic link"));
    assert_int_equal(unlink(root), 0);
    assert_int_equal(rename(moved, root), 0);
    /* the root back in its place: verified again, and used */
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__HIT);
    assert_string_equal(text, "mine");

    /* the arch folder (verified) swapped for a link to the other's */
    snprintf(kept, sizeof kept, "%s/kept", kj_test_dir);
    snprintf(path, sizeof path, "%s/sm_90", other);
    assert_int_equal(rename(arch, kept), 0);
    assert_int_equal(symlink(path, arch), 0);
    int warnings = log.warnings;
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__MISS);
    assert_int_equal(log.warnings, warnings + 1);
    assert_non_null(strstr(log.last, "a symbolic link or not a folder"));
    assert_int_equal(kj__cache_store(c, "sm_90", &k2, "d", "mine", 4, 0, path), -1);
    snprintf(path, sizeof path, "%s/sm_90", other);
    assert_int_equal(count_files(path, NULL), 2);
    /* ... for another folder of this user's, private: checked from the root, and used */
    assert_int_equal(unlink(arch), 0);
    assert_int_equal(mkdir(arch, 0700), 0);
    char from[1100], to[1200];
    snprintf(from, sizeof from, "%s/sm_90/%s.cubin", other, k.hex);
    snprintf(to, sizeof to, "%s/%s.cubin", arch, k.hex);
    assert_int_equal(rename(from, to), 0);
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__HIT);
    assert_string_equal(text, "planted");
    /* ... and the folder in use made writable by others: refused from then on */
    assert_int_equal(chmod(arch, 0777), 0);
    warnings = log.warnings;
    assert_int_equal(load_text(c, "sm_90", &k, text, sizeof text), KJ__MISS);
    assert_int_equal(log.warnings, warnings + 1);
    assert_non_null(strstr(log.last, "others may write to it"));
    assert_int_equal(kj__cache_store(c, "sm_90", &k2, "d", "mine", 4, 0, path), -1);
    assert_int_equal(count_files(arch, NULL), 1);
    kj__cache_close(c);

    /* a seed folder (read-only, checked as a cache folder) swapped for a link after its first use */
    assert_int_equal(chmod(arch, 0700), 0);
    int missing;
    kj__logger l = {kj_test_log_fn, &log, KJ_LOG_INFO};
    memset(&log, 0, sizeof log);
    kj__cache *seed = kj__cache_open_seed(root, &l, &missing);
    assert_non_null(seed);
    uint8_t *data = NULL;
    size_t size;
    assert_int_equal(kj__cache_read(seed, "sm_90", &k, &data, &size, path), KJ__HIT);
    free(data);
    data = NULL;
    assert_int_equal(rename(root, moved), 0);
    assert_int_equal(symlink(other, root), 0);
    assert_int_equal(kj__cache_read(seed, "sm_90", &k2, &data, &size, path), KJ__MISS);
    assert_null(data);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "it is a symbolic link"));
    kj__cache_close(seed);
}

/* Runtimes hold no descriptor for their caches: 1000 of them in a process that may open 64 files
 * all read and write theirs (each once held its folder open, and most then compiled in memory only). */
static void test_many_runtimes_keep_their_cache(void **state) {
    (void)state;
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    enum { RUNTIMES = 1000 };
    kj_runtime **rts = calloc(RUNTIMES, sizeof *rts);
    assert_non_null(rts);
    kj_test_log log;
    for (int i = 0; i < RUNTIMES; i++) {
        rts[i] = kj_test_runtime(kj_test_dir, KJ_DEVICE_NONE, &log);
        assert_non_null(rts[i]);
        assert_non_null(kj_cache_dir(rts[i]));
        assert_int_equal(log.warnings, 0);
    }
    kj_define d = {"N", "5"};
    kj_request req = {.size = sizeof(kj_request),
                      .kernel = "k.cu",
                      .source_text = "extern \"C\" __global__ void k(int *x) { *x = N; }\n",
                      .defines = &d,
                      .define_count = 1};
    kj_compile_result res = KJ_COMPILE_RESULT_INIT;
    KJ_ASSERT_OK(kj_compile(rts[0], &req, &res));
    assert_true(res.stored && !res.cache_hit);
    for (int i = 1; i < RUNTIMES; i++) {
        KJ_ASSERT_OK(kj_compile(rts[i], &req, &res));
        if (!res.cache_hit) fail_msg("runtime %d missed its disk cache: %s", i, log.last);
    }
    d.value = "6"; /* and the last one stores */
    KJ_ASSERT_OK(kj_compile(rts[RUNTIMES - 1], &req, &res));
    assert_true(res.stored);
    assert_int_equal(log.warnings, 0);
    for (int i = 0; i < RUNTIMES; i++) kj_runtime_destroy(rts[i]);
    free(rts);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void age(const char *dir, const kj__key *k, time_t when) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sm_90/%s.cubin", dir, k->hex);
    struct utimbuf t = {when, when};
    assert_int_equal(utime(path, &t), 0);
}

static void test_eviction_lru(void **state) {
    (void)state;
    kj_test_log log;
    char blob[1000];
    memset(blob, 1, sizeof blob);
    /* each entry is 64 + 1 + 1000 bytes; a bound of 3500 holds three */
    kj__cache *c = open_cache(kj_test_dir, 3500, &log);
    char path[PATH_MAX], *payload;
    size_t len;
    uint32_t flags;
    kj__key k[5];
    time_t now = time(NULL);
    for (int i = 0; i < 3; i++) {
        k[i] = make_key(10 + i);
        assert_int_equal(kj__cache_store(c, "sm_90", &k[i], "d", blob, sizeof blob, 0, path), 0);
        age(kj_test_dir, &k[i], now - 100 + i * 10); /* k0 oldest */
    }
    /* a hit makes k0 the most recent */
    assert_int_equal(kj__cache_load(c, "sm_90", &k[0], &payload, &len, &flags, NULL, path), KJ__HIT);
    free(payload);
    k[3] = make_key(13);
    assert_int_equal(kj__cache_store(c, "sm_90", &k[3], "d", blob, sizeof blob, 0, path), 0);
    /* over the bound: the least recently used (k1) went, the just-used k0 stayed */
    assert_int_equal(kj__cache_load(c, "sm_90", &k[1], &payload, &len, &flags, NULL, path), KJ__MISS);
    assert_int_equal(kj__cache_load(c, "sm_90", &k[0], &payload, &len, &flags, NULL, path), KJ__HIT);
    free(payload);
    assert_int_equal(kj__cache_load(c, "sm_90", &k[3], &payload, &len, &flags, NULL, path), KJ__HIT);
    free(payload);
    /* a hit on an entry used within the last minute leaves its time alone (no inode write per hit) */
    age(kj_test_dir, &k[3], now - 30);
    assert_int_equal(kj__cache_load(c, "sm_90", &k[3], &payload, &len, &flags, NULL, path), KJ__HIT);
    free(payload);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mtime, now - 30);
    kj__cache_item *items;
    size_t n;
    KJ_ASSERT_OK(kj__cache_items(c, 1, &items, &n));
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += items[i].bytes;
        assert_true(items[i].valid);
    }
    assert_true(total <= 3500);
    kj__cache_items_free(items, n);
    /* an entry larger than the bound is still stored (it is the one in use) */
    kj__cache_close(c);
}

static void test_list_and_clear(void **state) {
    (void)state;
    kj_test_log log;
    kj__cache *c = open_cache(kj_test_dir, 0, &log);
    char path[PATH_MAX];
    kj__key a = make_key(20), b = make_key(21);
    assert_int_equal(kj__cache_store(c, "sm_90", &a, "kernel: a", "1", 1, 0, path), 0);
    assert_int_equal(kj__cache_store(c, "sm_80", &b, "kernel: b", "2", 1, 0, path), 0);
    flip_payload_bit(path); /* b is now damaged: listed as invalid */
    /* a stray temporary file from a writer that crashed two hours ago, and one of a write in progress */
    char tmp[PATH_MAX], busy[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/sm_90/.tmp-stray", kj_test_dir);
    kj_test_write(tmp, "x", 1);
    struct utimbuf old = {time(NULL) - 7200, time(NULL) - 7200};
    assert_int_equal(utime(tmp, &old), 0);
    snprintf(busy, sizeof busy, "%s/sm_90/.tmp-busy", kj_test_dir);
    kj_test_write(busy, "y", 1);
    kj__cache_item *items;
    size_t n;
    KJ_ASSERT_OK(kj__cache_items(c, 1, &items, &n));
    assert_int_equal(n, 2);
    int valid = 0;
    for (size_t i = 0; i < n; i++) valid += items[i].valid;
    assert_int_equal(valid, 1);
    kj__cache_items_free(items, n);
    uint64_t entries, bytes;
    KJ_ASSERT_OK(kj__cache_clear(c, &entries, &bytes));
    assert_int_equal(entries, 2);
    KJ_ASSERT_OK(kj__cache_items(c, 1, &items, &n));
    assert_int_equal(n, 0);
    kj__cache_items_free(items, n);
    struct stat st;
    assert_int_not_equal(stat(tmp, &st), 0);
    assert_int_equal(stat(busy, &st), 0); /* let finish */
    kj__cache_close(c);
}

static void test_parse_entry_rejects_short_input(void **state) {
    (void)state;
    uint8_t buf[64] = {0};
    const char *d;
    size_t dl, pl;
    const uint8_t *p;
    uint32_t f;
    for (size_t n = 0; n <= sizeof buf; n++)
        assert_int_equal(kj__cache_parse_entry(buf, n, NULL, &d, &dl, &p, &pl, &f), -1);
}

KJ_TEST_MAIN(NULL, NULL, KJ_TEST_IN_DIR(test_store_load), cmocka_unit_test(test_truncated),
             cmocka_unit_test(test_bit_flips), cmocka_unit_test(test_wrong_length_or_key),
             KJ_TEST_IN_DIR(test_symlink_never_followed), KJ_TEST_IN_DIR(test_names_outside_the_folders_refused),
             KJ_TEST_IN_DIR(test_unsafe_folders_refused), KJ_TEST_IN_DIR(test_unusable_paths_create_nothing),
             KJ_TEST_IN_DIR(test_folder_checked_at_each_use), KJ_TEST_IN_DIR(test_verified_folders_swapped),
             KJ_TEST_IN_DIR(test_many_runtimes_keep_their_cache), KJ_TEST_IN_DIR(test_eviction_lru),
             KJ_TEST_IN_DIR(test_list_and_clear), cmocka_unit_test(test_parse_entry_rejects_short_input))
