/* Small helpers shared by the library: growable buffers, strings, clocks and whole-file reads. */
#ifndef KJ_UTIL_H
#define KJ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/log.h"

typedef struct kj__buf {
    char *data;
    size_t len, cap;
} kj__buf;

/* Each returns 0 on success, -1 when out of memory (the buffer keeps what it had). The data is always
 * NUL-terminated after a successful append. */
int kj__buf_append(kj__buf *b, const void *data, size_t n);
int kj__buf_puts(kj__buf *b, const char *s);
int kj__buf_printf(kj__buf *b, const char *fmt, ...) KJ_PRINTF(2, 3);
void kj__buf_free(kj__buf *b);

char *kj__strdup(const char *s); /* NULL for NULL or out of memory */
/* A copy of s that lives as long as the process, the same one for equal strings: for the few names
 * the API hands out as static storage (device names, architectures). NULL when out of memory.
 * Thread-safe. */
const char *kj__intern(const char *s);
/* free() of each pointer given, NULL ones too: kj__free_all(a->name, a->path). */
void kj__free_each(void *const *pointers, size_t count);
#define kj__free_all(...)                                                                                              \
    kj__free_each((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))
/* Frees each of the count strings, then the array; NULL frees nothing. */
void kj__strings_free(char **strings, size_t count);
/* Appends s to the array of count strings: 0, or -1 when s is NULL or out of memory (s is then
 * freed and the array kept). */
int kj__strings_push(char ***strings, size_t *count, char *s);
char *kj__strndup(const char *s, size_t n);
char *kj__asprintf(const char *fmt, ...) KJ_PRINTF(1, 2);
int kj__ends_with(const char *s, const char *suffix);

double kj__now_ms(void); /* a monotonic clock */

/* An environment variable that names paths (KJ__PATH_VARIABLES), without white space at either end:
 * a value read with $(cat file) ends in a new line, and one pasted may start with a space; either
 * would name a folder nobody meant. NULL when unset or empty. The result lives as long as the
 * process (a trimmed value is kept once per distinct value), as getenv's does. Thread-safe. */
const char *kj__getenv_path(const char *name);
#define KJ__PATH_VARIABLES                                                                                             \
    {                                                                                                                  \
        "KERNJIT_CACHE_DIR", "XDG_CACHE_HOME", "KERNJIT_STATE_DIR", "XDG_STATE_HOME", "HOME", "KERNJIT_PATH",          \
            "KERNJIT_CUDA_HOME", "CUDA_HOME", "KERNJIT_LIBCUDA", "KERNJIT_NCCL", "KERNJIT_REMOTE_TLS_CA",              \
            "KERNJIT_SEED_PATH"                                                                                        \
    }
/* Warns (log) for each of KJ__PATH_VARIABLES with white space at an end, naming what is used. */
void kj__warn_path_variables(const kj__logger *log);

/* strerror(err), and for EMFILE and ENFILE what that means, with the limit: a process out of file
 * descriptors fails in ways that name something else (NVRTC blames its installation). Thread-safe
 * (the text lives in thread-local storage until this thread's next call). */
const char *kj__strerror(int err);
/* EMFILE or ENFILE when this process cannot open a file now, else 0. */
int kj__descriptors_exhausted(void);

/* Reads a regular file whole (at most max_bytes). Fails with KJ_ERR_SOURCE-style messages through
 * `status`: a missing file, a folder, an unreadable or oversized file each name the path. */
kj_status kj__read_file(const char *path, size_t max_bytes, kj_status status, char **data, size_t *len);
/* The real path of the file open as fd (opened as path): the kernel's through /proc in one system
 * call, rather than realpath's one for each component; realpath where /proc is not mounted. NULL with
 * errno when it cannot be had. kj__real_path opens path itself (O_PATH). Both malloc'd. */
char *kj__real_path_fd(int fd, const char *path);
char *kj__real_path(const char *path);
/* The same from an open file (left open) whose fstat is *known (NULL: taken here); path names it in
 * messages. */
struct stat;
kj_status kj__read_fd(int fd, const struct stat *known, const char *path, size_t max_bytes, kj_status status,
                      char **data, size_t *len);

/* Lower-case hex of n bytes into out (2n+1 bytes). */
void kj__hex(const uint8_t *bytes, size_t n, char *out);

/* A bound of a count as messages write it: 2^N and 2^N-1 from 2^16 on, else decimal. */
void kj__format_count(uint64_t v, char *out, size_t size);
/* kj_size_parse without touching the thread's last error: 0, or -1 with its message in why. */
int kj__size_parse(const char *text, uint64_t min, uint64_t max, uint64_t *out, char *why, size_t why_size);

/* Whether v is a power of two (1, 2, 4, ...). */
int kj__is_pow2(long long v);

/* Writes all n bytes to fd, again where a write is interrupted or short: 0, or -1 with errno (ENOSPC
 * when the file system takes nothing more). */
int kj__write_all(int fd, const void *data, size_t n);
/* Reads up to n bytes from fd, again where a read is interrupted or short, until n or the end of
 * the file (a file that shrank while it was read): the count read. *error gets the errno of a failed
 * read, which ends it, else 0. */
size_t kj__read_all(int fd, void *data, size_t n, int *error);

#endif
