#include "base/util.h"

#include <ctype.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int kj__buf_append(kj__buf *b, const void *data, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) return -1;
        b->data = p;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int kj__buf_puts(kj__buf *b, const char *s) { return kj__buf_append(b, s, strlen(s)); }

int kj__buf_printf(kj__buf *b, const char *fmt, ...) {
    if (kj__buf_append(b, "", 0) != 0) return -1; /* ensures data exists */
    /* formatted once where it fits in the room left (the usual case), twice where it must grow */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->data[b->len] = '\0';
        return -1;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->data[b->len] = '\0';
            return -1;
        }
        b->data = p;
        b->cap = cap;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
    return 0;
}

void kj__buf_free(kj__buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *kj__strdup(const char *s) { return s ? kj__strndup(s, strlen(s)) : NULL; }

/* Never freed: a list reachable from here until the process ends. */
typedef struct interned {
    struct interned *next;
    char text[];
} interned;
static interned *interned_strings;
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;

const char *kj__intern(const char *s) {
    pthread_mutex_lock(&intern_lock);
    interned *i = interned_strings;
    while (i && strcmp(i->text, s) != 0) i = i->next;
    if (!i && (i = malloc(sizeof *i + strlen(s) + 1))) {
        strcpy(i->text, s);
        i->next = interned_strings;
        interned_strings = i;
    }
    pthread_mutex_unlock(&intern_lock);
    return i ? i->text : NULL;
}

char *kj__strndup(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *kj__asprintf(const char *fmt, ...) {
    /* formatted once where the text fits in a small buffer (names, paths of a request), twice else */
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p) return NULL;
    if ((size_t)n < sizeof small) return memcpy(p, small, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

int kj__ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

double kj__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Trimmed values, one copy each, for the life of the process. */
static pthread_mutex_t trimmed_lock = PTHREAD_MUTEX_INITIALIZER;
static char **trimmed;
static size_t trimmed_count;

static size_t leading_space(const char *s) {
    size_t n = 0;
    while (s[n] && isspace((unsigned char)s[n])) n++;
    return n;
}

static size_t trimmed_length(const char *s) {
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    return n;
}

const char *kj__getenv_path(const char *name) {
    const char *env = getenv(name);
    if (!env) return NULL;
    size_t from = leading_space(env), len = trimmed_length(env);
    if (from >= len) return NULL;
    if (from == 0 && len == strlen(env)) return env;
    const char *found = NULL;
    pthread_mutex_lock(&trimmed_lock);
    for (size_t i = 0; i < trimmed_count && !found; i++)
        if (strlen(trimmed[i]) == len - from && strncmp(trimmed[i], env + from, len - from) == 0) found = trimmed[i];
    char **grown = found ? NULL : realloc(trimmed, (trimmed_count + 1) * sizeof *trimmed);
    if (grown) {
        trimmed = grown;
        if ((trimmed[trimmed_count] = kj__strndup(env + from, len - from))) found = trimmed[trimmed_count++];
    }
    pthread_mutex_unlock(&trimmed_lock);
    return found;
}

void kj__warn_path_variables(const kj__logger *log) {
    static const char *names[] = KJ__PATH_VARIABLES;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *env = getenv(names[i]);
        if (!env || !*env || (leading_space(env) == 0 && trimmed_length(env) == strlen(env))) continue;
        const char *used = kj__getenv_path(names[i]);
        kj__buf shown = {0};
        for (const char *p = env; *p; p++) /* the white space made visible */
            kj__buf_printf(&shown, *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\r' ? "\\r" : "%c", *p);
        kj__log(log, KJ_LOG_WARN, "%s='%s' has white space at an end: kernjit uses %s%s%s", names[i],
                shown.data ? shown.data : env, used ? "'" : "", used ? used : "nothing (it is empty)", used ? "'" : "");
        kj__buf_free(&shown);
    }
}

const char *kj__strerror(int err) {
    static _Thread_local char text[256];
    struct rlimit rl;
    if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        snprintf(text, sizeof text,
                 "%s: this process has all the %llu file descriptors it may open in use "
                 "(EMFILE; ulimit -n raises the limit)",
                 strerror(err), (unsigned long long)rl.rlim_cur);
        return text;
    }
    if (err == EMFILE || err == ENFILE) {
        snprintf(text, sizeof text, "%s: %s (%s)", strerror(err),
                 err == EMFILE ? "this process has all the file descriptors it may open in use"
                               : "the system's table of open files is full",
                 err == EMFILE ? "EMFILE" : "ENFILE");
        return text;
    }
    return strerror(err);
}

int kj__descriptors_exhausted(void) {
    int fd = open("/", O_PATH | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno == EMFILE || errno == ENFILE ? errno : 0;
}

kj_status kj__read_fd(int fd, const struct stat *known, const char *path, size_t max_bytes, kj_status status,
                      char **data, size_t *len) {
    struct stat st;
    if (known) st = *known;
    else if (fstat(fd, &st) != 0) return KJ_FAIL(status, "cannot read '%s': %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return KJ_FAIL(status, "'%s' is %s, not a regular file", path,
                       S_ISDIR(st.st_mode) ? "a folder" : "a special file");
    if ((uint64_t)st.st_size > max_bytes)
        return KJ_FAIL(status, "'%s' is %lld bytes; at most %zu are allowed", path, (long long)st.st_size, max_bytes);
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    if (!buf) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory reading '%s' (%zu bytes)", path, size);
    int err;
    size_t got = kj__read_all(fd, buf, size, &err);
    if (err) {
        free(buf);
        return KJ_FAIL(status, "cannot read '%s': %s", path, strerror(err));
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return KJ_OK;
}

char *kj__real_path_fd(int fd, const char *path) {
    char link[64], buf[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n > 0 && n < (ssize_t)sizeof buf - 1 && buf[0] == '/') {
        buf[n] = '\0';
        return kj__strdup(buf);
    }
    return realpath(path, NULL);
}

char *kj__real_path(const char *path) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return NULL;
    char *real = kj__real_path_fd(fd, path);
    int err = errno;
    close(fd);
    errno = err;
    return real;
}

kj_status kj__read_file(const char *path, size_t max_bytes, kj_status status, char **data, size_t *len) {
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever; fstat then
     * turns away everything but a regular file, for which the flag changes nothing */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return KJ_FAIL(status, "cannot open '%s': %s", path, kj__strerror(errno));
    kj_status s = kj__read_fd(fd, NULL, path, max_bytes, status, data, len);
    close(fd);
    return s;
}

void kj__hex(const uint8_t *bytes, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

void kj__format_count(uint64_t v, char *out, size_t size) {
    int k = 0;
    while (k < 63 && ((uint64_t)1 << k) < v) k++;
    /* 2^20 reads better than 1048576; 8192 better than 2^13 */
    if (k >= 16 && ((uint64_t)1 << k) == v) snprintf(out, size, "2^%d", k);
    else if (v >= 65535 && (v & (v + 1)) == 0) snprintf(out, size, "2^%d-1", v == UINT64_MAX ? 64 : k);
    else snprintf(out, size, "%llu", (unsigned long long)v);
}

/* Digits from *p (no sign, no space): 0 with the value, -1 when there are none or it passes 2^64 - 1. */
static int digits(const char **p, uint64_t *out) {
    const char *s = *p;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (s == *p) return -1;
    *p = s;
    *out = v;
    return 0;
}

void kj__free_each(void *const *pointers, size_t count) {
    for (size_t i = 0; i < count; i++) free(pointers[i]);
}

int kj__strings_push(char ***strings, size_t *count, char *s) {
    char **grown = s ? realloc(*strings, (*count + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(s);
        return -1;
    }
    grown[(*count)++] = s;
    *strings = grown;
    return 0;
}

void kj__strings_free(char **strings, size_t count) {
    if (!strings) return;
    for (size_t i = 0; i < count; i++) free(strings[i]);
    free(strings);
}

int kj__is_pow2(long long v) { return v > 0 && (v & (v - 1)) == 0; }

size_t kj__read_all(int fd, void *data, size_t n, int *error) {
    char *p = data;
    size_t got = 0;
    *error = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) *error = errno;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

int kj__write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The grammar of kj_size_parse: 0 with the value, -1 when text is not one. */
static int parse_size(const char *text, uint64_t *out) {
    const char *p = text;
    uint64_t v;
    if (!p || digits(&p, &v) != 0) return -1;
    if (*p == '^') { /* BASE^EXP */
        uint64_t e, r = 1;
        p++;
        if (digits(&p, &e) != 0 || *p || v < 2 || e > 63) return -1;
        for (uint64_t i = 0; i < e; i++) {
            if (r > UINT64_MAX / v) return -1;
            r *= v;
        }
        *out = r;
        return 0;
    }
    static const char units[] = "KMGT";
    const char *unit = *p ? strchr(units, toupper((unsigned char)*p)) : NULL;
    if (*p && !unit) return -1;
    if (unit) {
        unsigned shift = 10 * (unsigned)(unit - units + 1);
        p++;
        if (*p == 'i') p++;
        if (*p == 'B') p++;
        if (*p || v > (UINT64_MAX >> shift)) return -1;
        v <<= shift;
    }
    *out = v;
    return 0;
}

int kj__size_parse(const char *text, uint64_t min, uint64_t max, uint64_t *out, char *why, size_t why_size) {
    uint64_t v;
    if (parse_size(text, &v) == 0 && v >= min && v <= max) {
        if (out) *out = v;
        return 0;
    }
    char lo[32], hi[32];
    kj__format_count(min, lo, sizeof lo);
    kj__format_count(max, hi, sizeof hi);
    kj_message_format(why, why_size,
                      "'%.40s' is not a number from %s to %s (digits, with K, M, G or T for x1024 each, "
                      "or a power such as 2^28)",
                      text ? text : "(null)", lo, hi);
    return -1;
}

kj_status kj_size_parse(const char *text, uint64_t min, uint64_t max, uint64_t *out) {
    char why[256];
    return kj__size_parse(text, min, max, out, why, sizeof why) == 0 ? KJ_OK : KJ_FAIL(KJ_ERR_USAGE, "%s", why);
}
