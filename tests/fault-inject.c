/* A fault-injection shim for the tests (LD_PRELOAD): makes file-system calls on paths under one
 * folder fail as a read-only, full or forbidden file system would, so that the cache's fault handling
 * can be tested end to end, as root (who ignores permission bits) and without a real full disk. The
 * library has no test hooks: these are the libc calls it makes anyway.
 *
 *   KJ_FAULT_DIR    the folder (an absolute path without symbolic links); calls elsewhere pass through
 *   KJ_FAULT        comma-separated OP=ERRNO, ERRNO one of EROFS ENOSPC EACCES EIO EDQUOT:
 *                   mkdir   mkdir, mkdirat
 *                   create  open/openat with O_CREAT, O_WRONLY or O_RDWR
 *                   read    read on a descriptor of a file under the folder
 *                   write   write on a descriptor of a file under the folder (after KJ_FAULT_WRITE_BYTES)
 *                   close   close of such a descriptor (the descriptor is closed; the error is reported)
 *                   rename  rename, renameat, renameat2 (either name under the folder)
 *                   unlink  unlink, unlinkat
 *                   utime   futimens, utimensat
 *   KJ_FAULT_WRITE_BYTES   bytes each process may write under the folder before `write` fails (default
 *                   4096: a partial file is left for the caller to clean up, as on a disk that fills)
 *   KJ_FAULT_LOG    when set, each injected failure is reported on stderr
 *   KJ_FAULT_PID    the process id getpid() returns (a container's 1), wherever the call is made
 *   KJ_FAULT_NO_LIBRARY  dlopen of a library whose name starts with it (libssl) fails, as where it is
 *                   not installed */
/* Both the plain and the 64-bit names are defined below (the library, built with 64-bit file offsets,
 * calls open64 and openat64), so the headers must not rename one into the other. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

/* The real function, looked up once. */
#define REAL(name)                                                                                                     \
    static __typeof__(&name) real_##name;                                                                              \
    if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

static long written; /* bytes written under the folder by this process */

static int fault_errno(const char *op) {
    const char *spec = getenv("KJ_FAULT");
    if (!spec) return 0;
    size_t n = strlen(op);
    for (const char *p = spec; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, op, n) != 0 || p[n] != '=') continue;
        const char *e = p + n + 1;
        static const struct {
            const char *name;
            int value;
        } codes[] = {{"EROFS", EROFS}, {"ENOSPC", ENOSPC}, {"EACCES", EACCES}, {"EIO", EIO}, {"EDQUOT", EDQUOT}};
        for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
            size_t len = strlen(codes[i].name);
            if (strncmp(e, codes[i].name, len) == 0 && (e[len] == ',' || e[len] == '\0')) return codes[i].value;
        }
    }
    return 0;
}

static int under_dir(const char *path) {
    const char *dir = getenv("KJ_FAULT_DIR");
    if (!dir || !*dir || !path) return 0;
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The absolute path that (dirfd, path) names, without resolving links: enough to compare prefixes. */
static void full_path(int dirfd, const char *path, char *out, size_t size) {
    out[0] = '\0';
    if (!path) return;
    if (path[0] == '/') {
        snprintf(out, size, "%s", path);
        return;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) return;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t len = readlink(link, base, sizeof base - 1);
        if (len < 0) return;
        base[len] = '\0';
    }
    snprintf(out, size, "%s/%s", base, path);
}

static int fd_under_dir(int fd) {
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len < 0) return 0;
    target[len] = '\0';
    return under_dir(target);
}

/* 0: go on; -1 with errno set: fail the call. */
static int inject(const char *op, int dirfd, const char *path) {
    int e = fault_errno(op);
    if (!e) return 0;
    char full[PATH_MAX * 2];
    full_path(dirfd, path, full, sizeof full);
    if (!under_dir(full)) return 0;
    if (getenv("KJ_FAULT_LOG")) fprintf(stderr, "fault-inject: %s %s: %s\n", op, full, strerror(e));
    errno = e;
    return -1;
}

static int inject_fd(const char *op, int fd) {
    int e = fault_errno(op);
    if (!e || !fd_under_dir(fd)) return 0;
    if (getenv("KJ_FAULT_LOG")) fprintf(stderr, "fault-inject: %s on fd %d: %s\n", op, fd, strerror(e));
    errno = e;
    return -1;
}

static int creates(int flags) { return (flags & (O_CREAT | O_WRONLY | O_RDWR)) != 0; }

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

API int open(const char *path, int flags, ...) {
    REAL(open);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (creates(flags) && inject("create", AT_FDCWD, path)) return -1;
    return real_open(path, flags, mode);
}
API int open64(const char *path, int flags, ...) {
    REAL(open64);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (creates(flags) && inject("create", AT_FDCWD, path)) return -1;
    return real_open64(path, flags, mode);
}
API int openat(int dirfd, const char *path, int flags, ...) {
    REAL(openat);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (creates(flags) && inject("create", dirfd, path)) return -1;
    return real_openat(dirfd, path, flags, mode);
}
API int openat64(int dirfd, const char *path, int flags, ...) {
    REAL(openat64);
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (creates(flags) && inject("create", dirfd, path)) return -1;
    return real_openat64(dirfd, path, flags, mode);
}
/* what _FORTIFY_SOURCE turns open and openat into */
API int __open_2(const char *path, int flags);
API int __openat_2(int dirfd, const char *path, int flags);
API int __open_2(const char *path, int flags) { return open(path, flags); }
API int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }

API int mkdir(const char *path, mode_t mode) {
    REAL(mkdir);
    if (inject("mkdir", AT_FDCWD, path)) return -1;
    return real_mkdir(path, mode);
}
API int mkdirat(int dirfd, const char *path, mode_t mode) {
    REAL(mkdirat);
    if (inject("mkdir", dirfd, path)) return -1;
    return real_mkdirat(dirfd, path, mode);
}

API ssize_t read(int fd, void *buf, size_t n) {
    REAL(read);
    if (fd > 2 && inject_fd("read", fd)) return -1;
    return real_read(fd, buf, n);
}

API ssize_t write(int fd, const void *buf, size_t n) {
    REAL(write);
    int e = fault_errno("write");
    if (e && fd > 2 && fd_under_dir(fd)) {
        const char *limit_text = getenv("KJ_FAULT_WRITE_BYTES");
        long limit = limit_text ? atol(limit_text) : 4096;
        if (written >= limit) {
            if (getenv("KJ_FAULT_LOG")) fprintf(stderr, "fault-inject: write on fd %d: %s\n", fd, strerror(e));
            errno = e;
            return -1;
        }
        if ((long)n > limit - written) n = (size_t)(limit - written); /* a short write, as a filling disk gives */
        ssize_t w = real_write(fd, buf, n);
        if (w > 0) written += w;
        return w;
    }
    return real_write(fd, buf, n);
}

API int close(int fd) {
    REAL(close);
    int fail = fd > 2 && inject_fd("close", fd) != 0;
    int e = errno;
    int r = real_close(fd); /* the descriptor is gone either way, as with a real close error */
    if (fail) {
        errno = e;
        return -1;
    }
    return r;
}

API int rename(const char *from, const char *to) {
    REAL(rename);
    if (inject("rename", AT_FDCWD, from) || inject("rename", AT_FDCWD, to)) return -1;
    return real_rename(from, to);
}
API int renameat(int fromfd, const char *from, int tofd, const char *to) {
    REAL(renameat);
    if (inject("rename", fromfd, from) || inject("rename", tofd, to)) return -1;
    return real_renameat(fromfd, from, tofd, to);
}
API int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags) {
    REAL(renameat2);
    if (inject("rename", fromfd, from) || inject("rename", tofd, to)) return -1;
    return real_renameat2(fromfd, from, tofd, to, flags);
}

API int unlink(const char *path) {
    REAL(unlink);
    if (inject("unlink", AT_FDCWD, path)) return -1;
    return real_unlink(path);
}
API int unlinkat(int dirfd, const char *path, int flags) {
    REAL(unlinkat);
    if (inject("unlink", dirfd, path)) return -1;
    return real_unlinkat(dirfd, path, flags);
}

API int futimens(int fd, const struct timespec times[2]) {
    REAL(futimens);
    if (inject_fd("utime", fd)) return -1;
    return real_futimens(fd, times);
}
API int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags) {
    REAL(utimensat);
    if (inject("utime", dirfd, path)) return -1;
    return real_utimensat(dirfd, path, times, flags);
}

/* KJ_FAULT_PID: the process id every getpid() returns, as in a container where each run is process
 * 1: a file named after the process id that a killed run left is then in the way of the next. */
API pid_t getpid(void) {
    REAL(getpid);
    const char *pid = getenv("KJ_FAULT_PID");
    return pid && *pid ? (pid_t)atol(pid) : real_getpid();
}

/* KJ_FAULT_NO_LIBRARY: dlopen of a library whose file name starts with it fails with the loader's own
 * message for a file that is not there. */
API void *dlopen(const char *name, int flags) {
    REAL(dlopen);
    const char *gone = getenv("KJ_FAULT_NO_LIBRARY");
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (gone && *gone && base && strncmp(base, gone, strlen(gone)) == 0) {
        char missing[PATH_MAX];
        snprintf(missing, sizeof missing, "/nonexistent-kj-fault/%s", base);
        return real_dlopen(missing, flags);
    }
    return real_dlopen(name, flags);
}
