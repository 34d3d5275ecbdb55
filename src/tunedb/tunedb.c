#include "tunedb/tunedb.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "cache/cache.h"
#include "jit/arch.h"

#define FIELDS 12
#define MAX_WARNINGS 5 /* damaged lines reported one by one; the rest are counted */
#define LOCK_WAIT_MS 10000
#define HEADER                                                                                                         \
    "# kernjit tuning database (format 1): one winner a line, fields separated by tabs:\n"                             \
    "# kernel entry fixed bucket device cc version values gbps us n time\n"                                            \
    "# bucket = floor(log2 n); cc is major.minor, /TARGET when built for another target than the\n"                    \
    "# device's own (9.0/sm_90a); fixed and values are NAME=VALUE lists (\"-\": none). Written by\n"                   \
    "# `kernjit tune`; remove lines with `kernjit tune --forget`.\n"

unsigned kj__tunedb_bucket(uint64_t n) {
    unsigned b = 0;
    while (n > 1) {
        n >>= 1;
        b++;
    }
    return b;
}

void kj__tunedb_device_name(const char *name, char out[256]) {
    size_t i = 0;
    for (; name && name[i] && i < 255; i++) {
        unsigned char c = (unsigned char)name[i];
        out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[i] = '\0';
}

/* ---- records --------------------------------------------------------------------------------- */

static void rec_free(kj__tuned_rec *r) {
    kj__free_all(r->kernel, r->entry, r->fixed, r->device, r->target, r->version, r->values);
    memset(r, 0, sizeof *r);
}

void kj__tunedb_clear(kj__tunedb *db) {
    for (size_t i = 0; i < db->count; i++) rec_free(&db->recs[i]);
    free(db->recs);
    memset(db, 0, sizeof *db);
}

static int same_key(const kj__tuned_rec *a, const kj__tuned_rec *b) {
    return strcmp(a->kernel, b->kernel) == 0 && strcmp(a->entry, b->entry) == 0 && strcmp(a->fixed, b->fixed) == 0 &&
           a->bucket == b->bucket && strcmp(a->device, b->device) == 0 && a->cc_major == b->cc_major &&
           a->cc_minor == b->cc_minor && strcmp(a->target, b->target) == 0 && strcmp(a->version, b->version) == 0;
}

/* ---- field checks (shared by the parser and kj__tunedb_put) ----------------------------------- */

static int is_word_char(char c) { return isalnum((unsigned char)c) || strchr("_.+-", c); }

/* A kernel name or path: letters, digits and _.+-/ ; an entry: a C identifier. */
static const char *check_kernel(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 256) return "the kernel name is empty or longer than 256 characters";
    for (; *s; s++)
        if (!is_word_char(*s) && *s != '/') return "the kernel name has a character other than letters, digits, _.+-/";
    return NULL;
}

static int is_identifier(const char *s, size_t n) {
    if (n == 0 || n > 512 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return 0;
    return 1;
}

/* "NAME=VALUE NAME=VALUE" with identifiers and metadata-style values; "" allowed when empty_ok. */
static const char *check_list(const char *s, int empty_ok, const char *what) {
    static _Thread_local char why[128];
    if (!*s) {
        if (empty_ok) return NULL;
        snprintf(why, sizeof why, "the %s list is empty", what);
        return why;
    }
    while (*s) {
        const char *eq = s;
        while (*eq && *eq != '=' && *eq != ' ') eq++;
        const char *end = eq;
        if (*eq == '=') {
            end = eq + 1;
            while (*end && *end != ' ') end++;
        }
        int ok = *eq == '=' && is_identifier(s, (size_t)(eq - s)) && end > eq + 1 && end - eq - 1 <= 64;
        for (const char *p = eq + 1; ok && p < end; p++) ok = is_word_char(*p);
        if (!ok) {
            snprintf(why, sizeof why, "the %s list has '%.*s', not NAME=VALUE", what,
                     (int)(end - s > 40 ? 40 : end - s), s);
            return why;
        }
        s = end;
        if (*s == ' ') {
            s++;
            if (!*s || *s == ' ') {
                snprintf(why, sizeof why, "the %s list has a stray space", what);
                return why;
            }
        }
    }
    return NULL;
}

static const char *check_device(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 255) return "the device name is empty or longer than 255 characters";
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return "the device name has a non-printable character";
    return NULL;
}

static const char *check_version(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 32) return "the version is empty or longer than 32 characters";
    for (; *s; s++)
        if (!is_word_char(*s)) return "the version has a character other than letters, digits, _.+-";
    return NULL;
}

static const char *check_rec(const kj__tuned_rec *r) {
    const char *why;
    if (!r->kernel || !r->entry || !r->fixed || !r->device || !r->version || !r->values) return "a field is missing";
    if ((why = check_kernel(r->kernel))) return why;
    if (!is_identifier(r->entry, strlen(r->entry))) return "the entry is not a C identifier";
    if ((why = check_list(r->fixed, 1, "fixed"))) return why;
    if (r->bucket > 63) return "the bucket is above 63";
    if ((why = check_device(r->device))) return why;
    if (r->cc_major < 1 || r->cc_major > 99 || r->cc_minor < 0 || r->cc_minor > 9)
        return "the compute capability is not major.minor (1.0 to 99.9)";
    if (r->target && *r->target && !kj__arch_folder_valid(r->target))
        return "the target is not a target's name (sm_90a)";
    if ((why = check_version(r->version))) return why;
    if ((why = check_list(r->values, 0, "values"))) return why;
    if (!isfinite(r->gbps) || r->gbps < 0 || !isfinite(r->us) || r->us < 0) return "a speed is negative or not finite";
    if (r->time < 0) return "the time is negative";
    return NULL;
}

static kj_status copy_rec(kj__tuned_rec *dst, const kj__tuned_rec *src) {
    *dst = *src;
    dst->kernel = kj__strdup(src->kernel);
    dst->entry = kj__strdup(src->entry);
    dst->fixed = kj__strdup(src->fixed);
    dst->device = kj__strdup(src->device);
    dst->target = kj__strdup(src->target ? src->target : "");
    dst->version = kj__strdup(src->version);
    dst->values = kj__strdup(src->values);
    if (!dst->kernel || !dst->entry || !dst->fixed || !dst->device || !dst->target || !dst->version || !dst->values) {
        rec_free(dst);
        return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    }
    return KJ_OK;
}

int kj__tunedb_better(const kj__tuned_rec *a, const kj__tuned_rec *b) {
    return !(b->gbps > a->gbps || (b->gbps == a->gbps && b->us < a->us));
}

int kj__tunedb_unreproduced(const kj__tuned_rec *b, const kj__tunedb_measured *measured, double *got) {
    double here = measured && measured->gbps ? measured->gbps(b->values, measured->user) : -1;
    if (got) *got = here;
    return here >= 0 && b->gbps > KJ_TUNEDB_UNREPRODUCED * here;
}

int kj__tunedb_replaces(const kj__tuned_rec *a, const kj__tuned_rec *b, const kj__tunedb_measured *measured) {
    return kj__tunedb_better(a, b) || kj__tunedb_unreproduced(b, measured, NULL);
}

/* Takes ownership of rec's strings on success (also when the record there wins and rec is dropped). */
static kj_status put_owned(kj__tunedb *db, kj__tuned_rec *rec, const kj__tunedb_measured *measured) {
    for (size_t i = 0; i < db->count; i++)
        if (same_key(&db->recs[i], rec)) {
            if (kj__tunedb_replaces(rec, &db->recs[i], measured)) {
                rec_free(&db->recs[i]);
                db->recs[i] = *rec;
            } else {
                rec_free(rec);
            }
            return KJ_OK;
        }
    if (db->count == db->cap) {
        size_t cap = db->cap ? db->cap * 2 : 16;
        kj__tuned_rec *p = realloc(db->recs, cap * sizeof *p);
        if (!p) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        db->recs = p;
        db->cap = cap;
    }
    db->recs[db->count++] = *rec;
    return KJ_OK;
}

static kj_status put_measured(kj__tunedb *db, const kj__tuned_rec *rec, const kj__tunedb_measured *measured) {
    const char *why = check_rec(rec);
    KJ_RETURN_IF(why, KJ_ERR_USAGE, "tuning database entry for %.100s: %s", rec->kernel ? rec->kernel : "(null)", why);
    kj__tuned_rec copy;
    KJ_FORWARD(copy_rec(&copy, rec));
    kj_status s = put_owned(db, &copy, measured);
    if (s != KJ_OK) rec_free(&copy);
    return s;
}

kj_status kj__tunedb_put(kj__tunedb *db, const kj__tuned_rec *rec) { return put_measured(db, rec, NULL); }

/* ---- matching -------------------------------------------------------------------------------- */

/* Every NAME=VALUE of want appears in have (both space-separated lists). */
static int list_contains_all(const char *have, const char *want) {
    while (*want) {
        while (*want == ' ') want++;
        size_t n = 0;
        while (want[n] && want[n] != ' ') n++;
        if (!n) break;
        int found = 0;
        for (const char *h = have; *h && !found;) {
            size_t m = 0;
            while (h[m] && h[m] != ' ') m++;
            found = m == n && strncmp(h, want, n) == 0;
            h += m;
            while (*h == ' ') h++;
        }
        if (!found) return 0;
        want += n;
    }
    return 1;
}

int kj__tunedb_matches(const kj__tuned_rec *r, const kj_tune_filter *f) {
    if (!f) return 1;
    if (f->kernel && strcmp(f->kernel, r->kernel) != 0) return 0;
    if (f->entry && strcmp(f->entry, r->entry) != 0) return 0;
    if (f->fixed && !list_contains_all(r->fixed, f->fixed)) return 0;
    if (f->device && strcmp(f->device, r->device) != 0) return 0;
    if (f->cc >= 0 && f->cc != r->cc_major * 10 + r->cc_minor) return 0;
    if (f->bucket >= 0 && (unsigned)f->bucket != r->bucket) return 0;
    return 1;
}

size_t kj__tunedb_remove(kj__tunedb *db, const kj_tune_filter *f) {
    size_t kept = 0, removed = 0;
    for (size_t i = 0; i < db->count; i++) {
        if (kj__tunedb_matches(&db->recs[i], f)) {
            rec_free(&db->recs[i]);
            removed++;
        } else {
            db->recs[kept++] = db->recs[i];
        }
    }
    db->count = kept;
    return removed;
}

const kj__tuned_rec *kj__tunedb_find(const kj__tunedb *db, const char *kernel, const char *entry, const char *fixed,
                                     uint64_t n, const char *device, int cc_major, int cc_minor, const char *target,
                                     const char *version) {
    unsigned b = kj__tunedb_bucket(n);
    const kj__tuned_rec *below = NULL, *above = NULL;
    for (size_t i = 0; i < db->count; i++) {
        const kj__tuned_rec *r = &db->recs[i];
        if (r->bucket + 1 < b || r->bucket > b + 1) continue;
        if (r->cc_major != cc_major || r->cc_minor != cc_minor || strcmp(r->kernel, kernel) != 0 ||
            strcmp(r->entry, entry) != 0 || strcmp(r->fixed, fixed) != 0 || strcmp(r->device, device) != 0 ||
            strcmp(r->target, target) != 0 || strcmp(r->version, version) != 0)
            continue;
        if (r->bucket == b) return r;
        if (r->bucket + 1 == b) below = r;
        else above = r;
    }
    return below ? below : above;
}

int kj__tunedb_value(const char *list, const char *name, char *out, size_t size) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t m = 0;
        while (p[m] && p[m] != ' ') m++;
        if (m > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            size_t v = m - n - 1;
            if (v >= size) return -1;
            memcpy(out, p + n + 1, v);
            out[v] = '\0';
            return 0;
        }
        p += m;
        while (*p == ' ') p++;
    }
    return -1;
}

int kj__tunedb_uint(const char *list, const char *name, unsigned max, unsigned *out) {
    char text[32], *end;
    if (kj__tunedb_value(list, name, text, sizeof text) != 0 || text[0] < '0' || text[0] > '9') return -1;
    unsigned long v = strtoul(text, &end, 10);
    if (*end || v == 0 || v > max) return -1;
    *out = (unsigned)v;
    return 0;
}

/* ---- parsing and formatting ------------------------------------------------------------------ */

static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
    if (!isdigit((unsigned char)*s)) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    if (!isdigit((unsigned char)*s)) return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* One line (without its new line, NUL-free) into rec, pointing into line (which is split in place).
 * Returns NULL, or why the line is damaged. */
static const char *parse_line(char *line, kj__tuned_rec *rec) {
    static _Thread_local char why[96];
    char *f[FIELDS + 1];
    size_t n = 0;
    for (char *p = line; n <= FIELDS;) {
        f[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    if (n != FIELDS) {
        if (n > FIELDS) snprintf(why, sizeof why, "more than %d fields", FIELDS);
        else snprintf(why, sizeof why, "%zu fields where %d are expected", n, FIELDS);
        return why;
    }
    for (size_t i = 0; i < FIELDS; i++)
        for (const char *p = f[i]; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) return "a control or non-ASCII character";
    memset(rec, 0, sizeof *rec);
    rec->kernel = f[0];
    rec->entry = f[1];
    rec->fixed = strcmp(f[2], "-") == 0 ? f[2] + 1 : f[2];
    uint64_t v;
    if (parse_u64(f[3], 63, &v) != 0) return "the bucket is not a number from 0 to 63";
    rec->bucket = (unsigned)v;
    rec->device = f[4];
    char *slash = strchr(f[5], '/');
    rec->target = slash ? slash + 1 : f[5] + strlen(f[5]);
    if (slash) *slash = '\0';
    if (slash && !kj__arch_folder_valid(rec->target))
        return "the target after the compute capability is not a target's name";
    const char *dot = strchr(f[5], '.');
    uint64_t major, minor;
    char cc[8];
    if (!dot || dot - f[5] > 2 || strlen(f[5]) > 5) return "the compute capability is not major.minor";
    memcpy(cc, f[5], (size_t)(dot - f[5]));
    cc[dot - f[5]] = '\0';
    if (parse_u64(cc, 99, &major) != 0 || parse_u64(dot + 1, 9, &minor) != 0)
        return "the compute capability is not major.minor";
    rec->cc_major = (int)major;
    rec->cc_minor = (int)minor;
    rec->version = f[6];
    rec->values = strcmp(f[7], "-") == 0 ? f[7] + 1 : f[7];
    if (parse_double(f[8], &rec->gbps) != 0) return "GB/s is not a number";
    if (parse_double(f[9], &rec->us) != 0) return "the time per run is not a number";
    if (parse_u64(f[10], UINT64_MAX, &rec->n) != 0) return "n is not a count";
    if (parse_u64(f[11], INT64_MAX, &v) != 0) return "the time stored is not a count of seconds";
    rec->time = (int64_t)v;
    if (kj__tunedb_bucket(rec->n) != rec->bucket) return "n is not in the bucket";
    return check_rec(rec);
}

kj_status kj__tunedb_parse(const char *text, size_t len, const char *origin, const kj__logger *log, kj__tunedb *db) {
    size_t damaged = 0, line_no = 0;
    char *line = malloc(KJ_TUNEDB_MAX_LINE + 1);
    if (!line) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    kj_status s = KJ_OK;
    for (size_t i = 0; i < len && s == KJ_OK;) {
        size_t end = i;
        while (end < len && text[end] != '\n') end++;
        line_no++;
        size_t n = end - i;
        const char *why = NULL;
        kj__tuned_rec rec;
        if (end == len) why = "no new line at its end (a truncated file)";
        else if (n > KJ_TUNEDB_MAX_LINE) why = "longer than 4096 characters";
        else if (memchr(text + i, '\0', n)) why = "binary data";
        if (!why && (n == 0 || text[i] == '#')) {
            i = end + 1;
            continue;
        }
        if (!why) {
            memcpy(line, text + i, n);
            line[n] = '\0';
            why = parse_line(line, &rec);
        }
        if (why) {
            if (++damaged <= MAX_WARNINGS)
                kj__log(log, KJ_LOG_WARN, "tuning database %s, line %zu: %s; ignored (the next store drops it)", origin,
                        line_no, why);
        } else {
            s = kj__tunedb_put(db, &rec);
        }
        i = end + 1;
    }
    if (damaged > MAX_WARNINGS)
        kj__log(log, KJ_LOG_WARN, "tuning database %s: %zu more damaged lines ignored", origin, damaged - MAX_WARNINGS);
    free(line);
    return s;
}

static int rec_order(const void *a, const void *b) {
    const kj__tuned_rec *x = a, *y = b;
    int c;
    if ((c = strcmp(x->kernel, y->kernel))) return c;
    if ((c = strcmp(x->entry, y->entry))) return c;
    if ((c = strcmp(x->fixed, y->fixed))) return c;
    if ((c = strcmp(x->device, y->device))) return c;
    if (x->cc_major != y->cc_major) return x->cc_major < y->cc_major ? -1 : 1;
    if (x->cc_minor != y->cc_minor) return x->cc_minor < y->cc_minor ? -1 : 1;
    if ((c = strcmp(x->target, y->target))) return c;
    if ((c = strcmp(x->version, y->version))) return c;
    return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

void kj__tunedb_sort(kj__tunedb *db) {
    if (db->count) qsort(db->recs, db->count, sizeof *db->recs, rec_order);
}

static int put_line(kj__buf *b, const kj__tuned_rec *r) {
    return kj__buf_printf(b, "%s\t%s\t%s\t%u\t%s\t%d.%d%s%s\t%s\t%s\t%.1f\t%.3f\t%llu\t%lld\n", r->kernel, r->entry,
                          *r->fixed ? r->fixed : "-", r->bucket, r->device, r->cc_major, r->cc_minor,
                          r->target && *r->target ? "/" : "", r->target ? r->target : "", r->version,
                          *r->values ? r->values : "-", r->gbps, r->us, (unsigned long long)r->n, (long long)r->time);
}

char *kj__tunedb_format_record(const kj__tuned_rec *r) {
    kj__buf b = {0};
    if (put_line(&b, r) != 0) {
        kj__buf_free(&b);
        return NULL;
    }
    return b.data;
}

char *kj__tunedb_format(const kj__tunedb *db) {
    kj__tuned_rec *sorted = malloc((db->count ? db->count : 1) * sizeof *sorted);
    if (!sorted) return NULL;
    if (db->count) memcpy(sorted, db->recs, db->count * sizeof *sorted);
    qsort(sorted, db->count, sizeof *sorted, rec_order);
    kj__buf b = {0};
    int bad = kj__buf_puts(&b, HEADER);
    for (size_t i = 0; i < db->count && !bad; i++) bad = put_line(&b, &sorted[i]);
    free(sorted);
    if (bad) {
        kj__buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* ---- the folder ------------------------------------------------------------------------------ */

static const kj__private_dir STATE_FOLDER = {"tuning database's folder",
                                             "tuned configurations decide how kernels are launched",
                                             "writes",
                                             "set KERNJIT_STATE_DIR to a folder of your own, not a link",
                                             "set KERNJIT_STATE_DIR to a folder in a parent of your own",
                                             "it is another user's folder: set KERNJIT_STATE_DIR to one of your own",
                                             "chmod 700 the folder, or set KERNJIT_STATE_DIR",
                                             "set KERNJIT_STATE_DIR to a folder of your own",
                                             0};

char *kj__tunedb_dir(const char *cache_root, int cache_given) {
    const char *env = kj__getenv_path("KERNJIT_STATE_DIR");
    if (env) return kj__strdup(env);
    if (cache_given) return kj__strdup(cache_root);
    env = kj__getenv_path("XDG_STATE_HOME");
    if (env && env[0] == '/') return kj__asprintf("%s/kernjit", env);
    env = kj__getenv_path("HOME");
    if (env && env[0] == '/') return kj__asprintf("%s/.local/state/kernjit", env);
    return kj__strdup(cache_root);
}

/* The database's folder, checked as the cache's is (ours, not a link, nobody else may write it) and,
 * for a write, created: 0, or -1 with why. A folder that is not there yet holds an empty database
 * (*absent) for a read. */
static int check_dir(const char *dir, int create, int *absent, char why[KJ__MESSAGE_MAX]) {
    struct stat st;
    *absent = !create && lstat(dir, &st) != 0 && errno == ENOENT;
    return *absent ? 0 : kj__private_dir_check(&STATE_FOLDER, dir, create, why, KJ__MESSAGE_MAX);
}

/* ---- the file -------------------------------------------------------------------------------- */

/* Reads path whole through a descriptor that refuses links; *text NULL when there is no file. A file
 * that is there but cannot be read (forbidden, a link, too large, not a regular file, a read that
 * failed part way) is a warning for lookups, which then use no tuned values; for an update (strict) it
 * is a failure, since writing the database back would replace what could not be read. */
static kj_status read_db_file(const char *path, const kj__logger *log, int strict, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) return KJ_OK;
    struct stat st;
    char why[96] = "";
    if (fd < 0 || fstat(fd, &st) != 0)
        snprintf(why, sizeof why, "%s", errno == ELOOP ? "it is a symbolic link" : kj__strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, sizeof why, "it is %s, not a regular file", S_ISDIR(st.st_mode) ? "a folder" : "a special file");
    else if ((uint64_t)st.st_size > KJ_TUNEDB_MAX_BYTES)
        snprintf(why, sizeof why, "it is %lld bytes, more than the %u a database may have", (long long)st.st_size,
                 KJ_TUNEDB_MAX_BYTES);
    char *buf = NULL;
    size_t got = 0;
    if (!why[0]) {
        buf = malloc((size_t)st.st_size + 1);
        if (!buf) {
            close(fd);
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        }
        int err;
        got = kj__read_all(fd, buf, (size_t)st.st_size, &err);
        if (err) snprintf(why, sizeof why, "%s", kj__strerror(err)); /* a part is not the database */
    }
    if (fd >= 0) close(fd);
    if (why[0]) {
        free(buf);
        KJ_RETURN_IF(strict, KJ_ERR_IO,
                     "the tuning database %s cannot be read (%s): it is left as it is, and nothing "
                     "is stored until it can be read, or is moved away",
                     path, why);
        kj__log(log, KJ_LOG_WARN, "cannot read the tuning database %s (%s); tuned configurations are not used", path,
                why);
        return KJ_OK;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return KJ_OK;
}

static kj_status read_db(const char *dir, const kj__logger *log, int strict, kj__tunedb *db) {
    int absent;
    char why[KJ__MESSAGE_MAX];
    if (check_dir(dir, 0, &absent, why) != 0) {
        KJ_RETURN_IF(strict, KJ_ERR_IO, "%s", why);
        kj__log(log, KJ_LOG_WARN, "%s; tuned configurations are not used", why);
        return KJ_OK;
    }
    if (absent) return KJ_OK;
    char *path = kj__asprintf("%s/%s", dir, KJ_TUNEDB_FILE);
    if (!path) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    char *text;
    size_t len;
    kj_status s = read_db_file(path, log, strict, &text, &len);
    if (s == KJ_OK && text) s = kj__tunedb_parse(text, len, path, log, db);
    free(text);
    free(path);
    return s;
}

kj_status kj__tunedb_read(const char *dir, const kj__logger *log, kj__tunedb *db) { return read_db(dir, log, 0, db); }

/* An exclusive flock on <dir>/tuning.db.lock, waiting at most LOCK_WAIT_MS: a lock file of its own,
 * because the database itself is replaced by rename (a lock on it would be on the old inode). */
static int take_lock(const char *dir, char **why) {
    char *path = kj__asprintf("%s/%s.lock", dir, KJ_TUNEDB_FILE);
    if (!path) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        *why = kj__asprintf("cannot open %s: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    double until = kj__now_ms() + LOCK_WAIT_MS;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || kj__now_ms() > until) {
            *why = errno == EWOULDBLOCK
                       ? kj__asprintf("%s is held by another process for more than %d s", path, LOCK_WAIT_MS / 1000)
                       : kj__asprintf("cannot lock %s: %s", path, strerror(errno));
            close(fd);
            free(path);
            return -1;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    free(path);
    return fd;
}

/* Removes the temporary files writers left: called under the lock, when no writer is at work, so
 * every one there is a leftover (of a writer that was killed). */
static void remove_leftovers(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char prefix[64];
    snprintf(prefix, sizeof prefix, ".%s.tmp-", KJ_TUNEDB_FILE);
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        char *path = kj__asprintf("%s/%s", dir, e->d_name);
        if (path) unlink(path);
        free(path);
    }
    closedir(d);
}

/* Writes text to a temporary file beside the database and renames it over the database. The
 * temporary name holds the process, the time and a counter: a name a killed writer left (containers
 * reuse process ids) is taken by another try, never an error. */
static int replace_file(const char *dir, const char *text, char **why) {
    static unsigned counter;
    char *path = kj__asprintf("%s/%s", dir, KJ_TUNEDB_FILE);
    char *tmp = NULL;
    int rc = -1, fd = -1;
    if (!path) goto out;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        free(tmp);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        tmp = kj__asprintf("%s/.%s.tmp-%ld-%lld%09ld-%u", dir, KJ_TUNEDB_FILE, (long)getpid(), (long long)now.tv_sec,
                           now.tv_nsec, __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        if (!tmp) goto out;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        *why = kj__asprintf("cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    int ok = kj__write_all(fd, text, strlen(text)) == 0 && fsync(fd) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        *why = kj__asprintf("cannot write %s: %s", path, strerror(err));
        goto out;
    }
    rc = 0;
out:
    free(path);
    free(tmp);
    return rc;
}

/* Puts add's records into db, warning of each record there that gives way because this machine did
 * not reproduce it. */
static kj_status put_all(kj__tunedb *db, const kj__tunedb_change *change, const kj__logger *log) {
    for (size_t i = 0; i < change->add->count; i++) {
        kj__tuned_rec key = change->add->recs[i]; /* a NULL target is the device's own, "" */
        const kj__tuned_rec *rec = &key;
        if (!key.target) key.target = (char *)"";
        for (size_t j = 0; j < db->count && change->measured; j++) {
            const kj__tuned_rec *old = &db->recs[j];
            double got;
            if (same_key(old, rec) && !kj__tunedb_better(rec, old) &&
                kj__tunedb_unreproduced(old, change->measured, &got))
                kj__log(log, KJ_LOG_WARN,
                        "the tuning database's result for %s %s %s (bucket %u), %s at %.1f GB/s, "
                        "was not reproduced here (this run measured %.1f GB/s of it): replaced by %s at %.1f GB/s",
                        rec->kernel, rec->entry, rec->fixed, rec->bucket, old->values, old->gbps, got, rec->values,
                        rec->gbps);
        }
        KJ_FORWARD(put_measured(db, rec, change->measured));
    }
    return KJ_OK;
}

kj_status kj__tunedb_update(const char *dir, const kj__logger *log, const kj__tunedb_change *change, size_t *removed,
                            kj__tunedb *merged) {
    char *why = NULL, folder[KJ__MESSAGE_MAX];
    int absent;
    KJ_RETURN_IF(check_dir(dir, 1, &absent, folder) != 0, KJ_ERR_IO, "%s", folder);
    int lock = take_lock(dir, &why);
    if (lock < 0) {
        kj_status s = why ? KJ_FAIL(KJ_ERR_IO, "tuning database: %s", why)
                          : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        free(why);
        return s;
    }
    remove_leftovers(dir);
    kj__tunedb db = {0};
    kj_status s = read_db(dir, log, 1, &db);
    size_t gone = 0;
    if (s == KJ_OK && change->forget) gone = kj__tunedb_remove(&db, change->forget);
    if (s == KJ_OK && change->add) s = put_all(&db, change, log);
    char *text = NULL;
    /* nothing to forget and nothing to add: the file stays as it is (or absent) */
    int changed = (change->add && change->add->count) || gone;
    if (s == KJ_OK && changed && !(text = kj__tunedb_format(&db))) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (s == KJ_OK && changed && replace_file(dir, text, &why) != 0) {
        s = why ? KJ_FAIL(KJ_ERR_IO, "tuning database: %s", why) : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        free(why);
    }
    free(text);
    flock(lock, LOCK_UN);
    close(lock);
    if (s == KJ_OK && removed) *removed = gone;
    if (s == KJ_OK && merged) *merged = db;
    else kj__tunedb_clear(&db);
    return s;
}

/* Whether db holds rec's result, or one its key keeps in its place by the conflict rule. */
static int kept(const kj__tunedb *db, const kj__tuned_rec *rec) {
    for (size_t i = 0; i < db->count; i++)
        if (same_key(&db->recs[i], rec))
            return strcmp(db->recs[i].values, rec->values) == 0 || !kj__tunedb_better(rec, &db->recs[i]);
    return 0;
}

kj_status kj__tunedb_move(const char *from, const char *to, const kj__logger *log, size_t *moved) {
    *moved = 0;
    char *old = kj__asprintf("%s/%s", from, KJ_TUNEDB_FILE), *now = kj__asprintf("%s/%s", to, KJ_TUNEDB_FILE);
    char *why = NULL, folder[KJ__MESSAGE_MAX];
    int from_lock = -1, to_lock = -1, absent;
    kj__tunedb theirs = {0}, mine = {0}, check = {0};
    char *text = NULL;
    struct stat st;
    kj_status s = KJ_OK;
    if (!old || !now) {
        s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        goto out;
    }
    if (lstat(old, &st) != 0 && errno == ENOENT) goto out; /* nothing to move: the usual case */
    if (check_dir(to, 1, &absent, folder) != 0) {
        s = KJ_FAIL(KJ_ERR_IO, "%s", folder);
        goto out;
    }
    /* the old folder's lock keeps an older kernjit from writing there meanwhile */
    if ((from_lock = take_lock(from, &why)) < 0 || (to_lock = take_lock(to, &why)) < 0) {
        s = why ? KJ_FAIL(KJ_ERR_IO, "%s", why) : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        goto out;
    }
    if ((s = read_db(from, log, 1, &theirs)) != KJ_OK) goto out;
    if (lstat(old, &st) != 0 && errno == ENOENT) goto out; /* another process moved it meanwhile */
    if (lstat(now, &st) != 0 && errno == ENOENT) {
        /* the new place has none yet: the file itself, byte for byte, in one step */
        if (rename(old, now) == 0) {
            *moved = theirs.count;
            goto out;
        }
        if (errno != EXDEV) {
            s = KJ_FAIL(KJ_ERR_IO, "cannot move %s to %s: %s", old, now, strerror(errno));
            goto out;
        }
    }
    /* both exist (or two file systems): merged by the conflict rule, written, read back and checked
     * before the old file goes */
    if ((s = read_db(to, log, 1, &mine)) != KJ_OK) goto out;
    for (size_t i = 0; i < theirs.count && s == KJ_OK; i++) s = put_measured(&mine, &theirs.recs[i], NULL);
    if (s == KJ_OK && !(text = kj__tunedb_format(&mine))) s = KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (s == KJ_OK && replace_file(to, text, &why) != 0)
        s = why ? KJ_FAIL(KJ_ERR_IO, "%s", why) : KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    if (s == KJ_OK) s = read_db(to, log, 1, &check);
    for (size_t i = 0; i < theirs.count && s == KJ_OK; i++)
        if (!kept(&check, &theirs.recs[i]))
            s = KJ_FAIL(KJ_ERR_IO,
                        "%s, once written, lacks the result for %s %s %s (bucket %u) that %s holds: %s is "
                        "kept",
                        now, theirs.recs[i].kernel, theirs.recs[i].entry, theirs.recs[i].fixed, theirs.recs[i].bucket,
                        old, old);
    if (s == KJ_OK && unlink(old) != 0)
        s = KJ_FAIL(KJ_ERR_IO, "%s holds the results of %s, which cannot be removed: %s", now, old, strerror(errno));
    if (s == KJ_OK) *moved = theirs.count;
out:
    if (to_lock >= 0) close(to_lock);
    if (from_lock >= 0) close(from_lock);
    kj__tunedb_clear(&theirs);
    kj__tunedb_clear(&mine);
    kj__tunedb_clear(&check);
    free(text);
    free(why);
    free(old);
    free(now);
    return s;
}
