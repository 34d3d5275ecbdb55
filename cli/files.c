/* Files the commands read and write: regular files only, written whole or not at all, and the
 * checks of a path the command will write before it does any work. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

FILE *cli_open_regular(const char *path, const char **why) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        *why = strerror(errno);
        if (fd >= 0) close(fd);
        return NULL;
    }
    FILE *f = S_ISREG(st.st_mode) && fcntl(fd, F_SETFL, 0) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        *why = S_ISREG(st.st_mode)   ? strerror(errno)
               : S_ISDIR(st.st_mode) ? "a folder, not a regular file"
                                     : "a special file, not a regular file";
        close(fd);
    }
    return f;
}

int cli_create_beside(const char *path, char *tmp, size_t size) {
    static unsigned counter;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if ((size_t)snprintf(tmp, size, "%.*s.kernjit-%ld-%u-%ld.tmp", dir_len, path, (long)getpid(), counter++,
                             (long)ts.tv_nsec) >= size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

int cli_write_file(const char *cmd, const char *path, const void *data, size_t size) {
    char tmp[PATH_MAX + 64];
    int fd = cli_create_beside(path, tmp, sizeof tmp);
    if (fd < 0) return cli_error_as(cmd, KJ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    const char *p = data;
    size_t left = size;
    int err = 0;
    while (left && !err) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) err = w < 0 ? errno : EIO;
        else p += w, left -= (size_t)w;
    }
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return cli_error_as(cmd, KJ_ERR_IO, "writing '%s' failed: %s (the file is as it was)", path, strerror(err));
    }
    return EXIT_OK;
}

int cli_check_output_folder(const char *cmd, const char *what, const char *path) {
    size_t n = strlen(path);
    if (n >= PATH_MAX) return cli_usage(cmd, "%s: the path has %zu characters: at most %d", what, n, PATH_MAX - 1);
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (strlen(name) > NAME_MAX)
        return cli_usage(cmd, "%s: the file name has %zu characters: at most %d", what, strlen(name), NAME_MAX);
    /* the file is replaced by a rename (--save) or opened for writing (pictures): a device would be
     * replaced for the whole system (--save 2=/dev/null, as root), a FIFO would wait for a reader */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return cli_usage(cmd, "%s: '%s' is %s, not a regular file: the command writes a file there", what, path,
                         S_ISDIR(st.st_mode)                          ? "a folder"
                         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                      : "a special file");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? cli_usage(cmd, "%s: the folder '%s' does not exist", what, dir)
                               : cli_usage(cmd, "%s: the folder '%s' cannot be used: %s", what, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return cli_usage(cmd, "%s: '%s' is not a folder", what, dir);
    if (access(dir, W_OK) != 0) return cli_usage(cmd, "%s: the folder '%s' is not writable", what, dir);
    return EXIT_OK;
}
