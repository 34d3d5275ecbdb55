#include "cub_plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

#ifndef KJ_CUB_PLUGIN_INSTALLED
#define KJ_CUB_PLUGIN_INSTALLED ""
#endif
/* the source, installed (share/kernjit/cub) and in the checkout the program was built from */
#ifndef KJ_CUB_SOURCE_INSTALLED
#define KJ_CUB_SOURCE_INSTALLED ""
#endif
#ifndef KJ_CUB_SOURCE
#define KJ_CUB_SOURCE ""
#endif
/* nvcc's options but the architecture: the same list builds the plugin in meson (-Dcub=enabled) */
#ifndef KJ_CUB_NVCC_FLAGS
#define KJ_CUB_NVCC_FLAGS "-O3", "-std=c++17", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-shared"
#endif

static const char *const nvcc_flags[] = {KJ_CUB_NVCC_FLAGS};
#define NVCC_FLAG_COUNT (sizeof nvcc_flags / sizeof nvcc_flags[0])

static int try_load(cub_plugin *p, const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
    p->temp_bytes = (size_t(*)(int, int, size_t))dlsym(h, "kj_cub_temp_bytes");
    p->reduce = (int (*)(int, int, const void *, size_t, void *, void *, size_t, void *))dlsym(h, "kj_cub_reduce");
    p->version = (int (*)(void))dlsym(h, "kj_cub_version");
    p->error_name = (const char *(*)(int))dlsym(h, "kj_cub_error_name");
    if (!p->temp_bytes || !p->reduce || !p->version || !p->error_name) {
        dlclose(h);
        return -1;
    }
    snprintf(p->path, sizeof p->path, "%s", path);
    return 0;
}

/* ---- building it on first use ---------------------------------------------------------------- */

typedef struct build {
    const char *cmd; /* for progress and messages */
    char arch[16];   /* the device's: sm_90 */
    char nvcc[4096];
    char *source; /* cub_reference.cu */
    size_t source_len;
    char dir[4096]; /* where built plugins stay: <cache>/cub; "" without a disk cache */
    char name[96];  /* libkernjit-cub-<arch>-<16 hex>.so */
    char tmp[4200]; /* the build's own folder */
} build;

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    for (const unsigned char *p = data; n--; p++) h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* A whole regular file, NUL-terminated; NULL when it cannot be read. */
static char *read_all(const char *path, size_t *len) {
    const char *why;
    FILE *f = *path ? cli_open_regular(path, &why) : NULL;
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        char *grown = n + 1 == cap ? realloc(text, cap *= 2) : text;
        if (!grown) free(text);
        text = grown;
    }
    fclose(f);
    if (text) text[n] = '\0';
    *len = n;
    return text;
}

/* The toolkit's nvcc (kj_toolchain_query's folder), else the first on PATH. */
static int find_nvcc(char *out, size_t size) {
    kj_toolchain tc = KJ_TOOLCHAIN_INIT;
    kj_toolchain_query(&tc);
    snprintf(out, size, "%s/bin/nvcc", tc.cuda_home);
    if (access(out, X_OK) == 0) return 0;
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, size, "%.*s/nvcc", (int)n, p);
        if (n && access(out, X_OK) == 0) return 0;
        p += n + (p[n] == ':');
    }
    snprintf(out, size, "%s/bin/nvcc", tc.cuda_home); /* for the message */
    return -1;
}

/* Runs argv with stdout and stderr into log (a file created); while it runs, progress every 0.2 s
 * when label is given. Its exit status, or -1 when it could not run. */
static int run_logged(const build *b, char *const argv[], const char *log, const char *label) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    pid_t pid;
    int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    if (r != 0) return -1;
    struct timespec start, now, tick = {0, 200 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    int status;
    pid_t w;
    while ((w = waitpid(pid, &status, label ? WNOHANG : 0)) == 0 || (w < 0 && errno == EINTR)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (label) cli_progress_waiting(b->cmd, label, (double)(now.tv_sec - start.tv_sec));
        nanosleep(&tick, NULL);
    }
    if (label) cli_progress_end();
    return w == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The plugin's name: the source, nvcc's own account of its version, the flags and the architecture,
 * hashed, so that a changed one is built again and never taken for another's. */
static int name_plugin(build *b) {
    char log[4300];
    snprintf(log, sizeof log, "%s/nvcc-version.txt", b->tmp);
    char *argv[] = {b->nvcc, "--version", NULL};
    size_t len = 0;
    char *version = run_logged(b, argv, log, NULL) == 0 ? read_all(log, &len) : NULL;
    unlink(log);
    if (!version) return -1;
    uint64_t h = fnv1a(0xcbf29ce484222325ull, b->source, b->source_len + 1);
    h = fnv1a(h, version, len + 1);
    for (size_t i = 0; i < NVCC_FLAG_COUNT; i++) h = fnv1a(h, nvcc_flags[i], strlen(nvcc_flags[i]) + 1);
    h = fnv1a(h, b->arch, strlen(b->arch) + 1);
    free(version);
    snprintf(b->name, sizeof b->name, "libkernjit-cub-%s-%016" PRIx64 ".so", b->arch, h);
    return 0;
}

/* The last line of nvcc's log that says something, for the message. */
static void last_line(const char *log, char *out, size_t size) {
    size_t len = 0;
    char *text = read_all(log, &len);
    out[0] = '\0';
    while (text && len && (text[len - 1] == '\n' || text[len - 1] == ' ')) text[--len] = '\0';
    if (text) snprintf(out, size, "%s", strrchr(text, '\n') ? strrchr(text, '\n') + 1 : text);
    free(text);
}

/* nvcc on the source, in the build's folder: 0 with the plugin at <tmp>/libkernjit-cub.so. */
static int compile_plugin(build *b, char *why, size_t why_size) {
    char src[4300], out[4300], log[4300], gencode[64], label[128];
    snprintf(src, sizeof src, "%s/cub_reference.cu", b->tmp);
    snprintf(out, sizeof out, "%s/libkernjit-cub.so", b->tmp);
    snprintf(log, sizeof log, "%s/nvcc.log", b->tmp);
    snprintf(gencode, sizeof gencode, "arch=compute_%s,code=%s", b->arch + 3, b->arch);
    FILE *f = fopen(src, "wbx");
    int written = f && fwrite(b->source, 1, b->source_len, f) == b->source_len;
    if (f && fclose(f) != 0) written = 0;
    if (!written) {
        kj_message_format(why, why_size, "the CUB reference could not be built: writing %s failed: %s", src,
                          strerror(errno));
        unlink(src);
        return -1;
    }
    char *argv[NVCC_FLAG_COUNT + 8];
    size_t n = 0;
    argv[n++] = b->nvcc;
    for (size_t i = 0; i < NVCC_FLAG_COUNT; i++) argv[n++] = (char *)nvcc_flags[i];
    argv[n++] = "-gencode";
    argv[n++] = gencode;
    argv[n++] = "-o";
    argv[n++] = out;
    argv[n++] = src;
    argv[n] = NULL;
    snprintf(label, sizeof label, "building the CUB reference with nvcc for %s (once)", b->arch);
    int rc = run_logged(b, argv, log, label);
    char said[512];
    last_line(log, said, sizeof said);
    unlink(src);
    unlink(log);
    if (rc == 0) return 0;
    kj_message_format(why, why_size, "building the CUB reference with %s failed (%s %d): %s", b->nvcc,
                      rc < 0 ? "it could not run, status" : "exit", rc, *said ? said : "it said nothing");
    unlink(out);
    return -1;
}

/* What the build needs: the device's architecture, the source, nvcc, and a folder. */
static int prepare_build(build *b, kj_runtime *rt, char *why, size_t why_size) {
    kj_device_info d = KJ_DEVICE_INFO_INIT;
    if (kj_runtime_device(rt, &d) != KJ_OK) {
        snprintf(why, why_size, "the CUB reference is absent (no device to build it for)");
        return -1;
    }
    snprintf(b->arch, sizeof b->arch, "sm_%d%d", d.cc_major, d.cc_minor);
    if (!(b->source = read_all(KJ_CUB_SOURCE_INSTALLED, &b->source_len)) &&
        !(b->source = read_all(KJ_CUB_SOURCE, &b->source_len))) {
        snprintf(why, why_size,
                 "the CUB reference is absent, and so is its source (cub_reference.cu) to build it; "
                 "set KERNJIT_CUB_PLUGIN to a built libkernjit-cub.so");
        return -1;
    }
    if (find_nvcc(b->nvcc, sizeof b->nvcc) != 0) {
        kj_message_format(why, why_size,
                          "the CUB reference is absent, and there is no nvcc to build it (not at %s, "
                          "nor on PATH): install the toolkit's nvcc, or set KERNJIT_CUB_PLUGIN to a built "
                          "libkernjit-cub.so (meson -Dcub=enabled builds one)",
                          b->nvcc);
        return -1;
    }
    const char *cache = kj_cache_dir(rt);
    if (cache) snprintf(b->dir, sizeof b->dir, "%s/cub", cache);
    if (cache && mkdir(b->dir, 0700) != 0 && errno != EEXIST) b->dir[0] = '\0';
    const char *tmpdir = getenv("TMPDIR");
    snprintf(b->tmp, sizeof b->tmp, "%s/%skernjit-cub-XXXXXX",
             *b->dir             ? b->dir
             : tmpdir && *tmpdir ? tmpdir
                                 : "/tmp",
             *b->dir ? "." : "");
    if (!mkdtemp(b->tmp)) {
        kj_message_format(why, why_size, "the CUB reference could not be built: no folder for it (%s: %s)", b->tmp,
                          strerror(errno));
        return -1;
    }
    if (name_plugin(b) != 0) {
        kj_message_format(why, why_size, "the CUB reference could not be built: %s --version failed", b->nvcc);
        rmdir(b->tmp);
        return -1;
    }
    return 0;
}

/* A plugin built before for this device, or built now (kept in the cache; without one, built into a
 * temporary folder and removed once loaded). */
static int load_or_build(cub_plugin *p, kj_runtime *rt, const char *cmd, char *why, size_t why_size) {
    build b = {.cmd = cmd};
    if (prepare_build(&b, rt, why, why_size) != 0) {
        free(b.source);
        return -1;
    }
    char kept[4300], built[4300];
    snprintf(kept, sizeof kept, "%s/%s", b.dir, b.name);
    snprintf(built, sizeof built, "%s/libkernjit-cub.so", b.tmp);
    int rc = -1;
    if (*b.dir && try_load(p, kept) == 0) rc = 0;
    else if (compile_plugin(&b, why, why_size) != 0) rc = -1;
    else if (*b.dir && rename(built, kept) == 0) rc = try_load(p, kept);
    else rc = try_load(p, built); /* loaded, it no longer needs its file */
    if (rc != 0 && !*why)
        kj_message_format(why, why_size, "the CUB reference built by %s cannot be loaded (%s)", b.nvcc, dlerror());
    unlink(built);
    rmdir(b.tmp);
    free(b.source);
    return rc;
}

int cub_plugin_load(cub_plugin *p, kj_runtime *rt, const char *cmd, char *why, size_t why_size) {
    memset(p, 0, sizeof *p);
    why[0] = '\0';
    const char *env = getenv("KERNJIT_CUB_PLUGIN");
    if (env && strcmp(env, "off") == 0) {
        snprintf(why, why_size, "none (KERNJIT_CUB_PLUGIN=off)");
        return -1;
    }
    if (env && *env) {
        /* dlopen reads a FIFO, waiting for a writer forever: a path must be a regular file */
        struct stat st;
        if (stat(env, &st) == 0 && !S_ISREG(st.st_mode)) {
            kj_message_format(why, why_size, "KERNJIT_CUB_PLUGIN=%s cannot be loaded (it is %s, not a library file)",
                              env, S_ISDIR(st.st_mode) ? "a folder" : "a special file");
            return -1;
        }
        if (try_load(p, env) == 0) return 0;
        kj_message_format(why, why_size, "KERNJIT_CUB_PLUGIN=%s cannot be loaded (%s)", env, dlerror());
        return -1;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            strcpy(slash + 1, "libkernjit-cub.so");
            if (try_load(p, exe) == 0) return 0;
        }
    }
    if (*KJ_CUB_PLUGIN_INSTALLED && try_load(p, KJ_CUB_PLUGIN_INSTALLED) == 0) return 0;
    return load_or_build(p, rt, cmd, why, why_size);
}
