/* main() for a fuzz target outside libFuzzer: runs the target once on every file named on the command
 * line, or in the folders named (not recursively), so that the committed corpus is replayed by an
 * ordinary test. A crash, a sanitizer report or a leak fails the test as it would fail the fuzzer.
 * Usage: fuzz-TARGET-replay PATH... */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *grown = realloc(data, cap *= 2);
            if (!grown) free(data);
            data = grown;
        }
    }
    fclose(f);
    if (!data) {
        fprintf(stderr, "out of memory reading %s\n", path);
        return -1;
    }
    /* an exact-size copy, so that a read past the end shows under AddressSanitizer */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact) memcpy(exact, data, len);
    free(data);
    if (!exact) return -1;
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    size_t files = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "no such file or folder: %s\n", argv[i]);
            failed = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= replay_file(argv[i]) != 0;
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "cannot read the folder %s\n", argv[i]);
            failed = 1;
            continue;
        }
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char **grown = realloc(names, (n + 1) * sizeof *names);
            if (!grown) break;
            names = grown;
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            if (!(names[n] = malloc(len))) break;
            snprintf(names[n++], len, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        if (n) qsort(names, n, sizeof *names, by_name); /* a fixed order: a failure replays the same way */
        for (size_t j = 0; j < n; j++) {
            failed |= replay_file(names[j]) != 0;
            files++;
            free(names[j]);
        }
        free(names);
    }
    printf("replayed %zu input%s\n", files, files == 1 ? "" : "s");
    if (files == 0) {
        fprintf(stderr, "no inputs: give corpus files or folders\n");
        return 1;
    }
    return failed;
}
