#include "jit/link.h"

#include <elf.h>
#include <nvJitLink.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "jit/arch.h"
#include "jit/key.h"
#include "jit/toolkit.h"
#include "base/util.h"

static pthread_once_t devrt_once = PTHREAD_ONCE_INIT;
static char *devrt_path;
static uint8_t devrt_hash[16];
static int devrt_found;
static char devrt_error[KJ__MESSAGE_MAX];
#define MAX_DEVRT_CODES 64
static int devrt_codes[MAX_DEVRT_CODES]; /* the architectures the library has machine code for (90) */
static int devrt_code_count = -1;        /* -1: its fat binaries could not be read */

static uint64_t le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The fat binaries the archive's objects carry (magic 0xBA55ED50, version 1, a 16-byte header, then
 * entries: kind 1 PTX or 2 ELF, their header's size and the payload's, the architecture at byte 28 of
 * the entry's header), found by their magic and kept only when their entries fill them exactly: the
 * architectures with ELF code into devrt_codes. The format is the toolkit's own and undocumented, so
 * what does not read so leaves the list unknown (-1), and messages say only what nvJitLink said. */
static void read_devrt_codes(const unsigned char *d, size_t len) {
    int n = 0, any = 0;
    for (size_t at = 0; at + 16 <= len; at++) {
        if (le(d + at, 4) != 0xBA55ED50u || le(d + at + 4, 2) != 1 || le(d + at + 6, 2) != 16) continue;
        uint64_t size = le(d + at + 8, 8);
        if (size > len - at - 16) continue;
        size_t p = at + 16, end = at + 16 + (size_t)size;
        int codes[MAX_DEVRT_CODES], c = 0, whole = 1;
        while (whole && p < end) {
            if (end - p < 32) whole = 0;
            uint64_t kind = whole ? le(d + p, 2) : 0, head = whole ? le(d + p + 4, 4) : 0,
                     body = whole ? le(d + p + 8, 8) : 0;
            if (!whole || (kind != 1 && kind != 2) || head < 32 || head > end - p || body > end - p - head) whole = 0;
            else {
                if (kind == 2 && c < MAX_DEVRT_CODES) codes[c++] = (int)le(d + p + 28, 4);
                p += (size_t)(head + body);
            }
        }
        if (!whole || p != end) continue;
        any = 1;
        for (int i = 0; i < c && n < MAX_DEVRT_CODES; i++) {
            int k = n++;
            for (; k > 0 && devrt_codes[k - 1] > codes[i]; k--) devrt_codes[k] = devrt_codes[k - 1];
            devrt_codes[k] = codes[i];
        }
        at = end - 1;
    }
    devrt_code_count = any ? n : -1;
}

static void find_devrt(void) {
    devrt_path = kj__asprintf("%s/lib64/libcudadevrt.a", kj__cuda_home());
    if (!devrt_path) return;
    char *data;
    size_t len;
    if (kj__read_file(devrt_path, 64u << 20, KJ_ERR_LINK, &data, &len) != KJ_OK) {
        kj_message_format(devrt_error, sizeof devrt_error,
                          "the device runtime library is missing: looked for %s (set KERNJIT_CUDA_HOME or CUDA_HOME "
                          "to the CUDA toolkit): %s",
                          devrt_path, kj_last_error());
        return;
    }
    kj__hash128(data, len, devrt_hash);
    read_devrt_codes((const unsigned char *)data, len);
    free(data);
    devrt_found = 1;
}

kj_status kj__devrt(const char **path, const uint8_t **hash) {
    pthread_once(&devrt_once, find_devrt);
    KJ_RETURN_IF(!devrt_path, KJ_ERR_HOST_MEMORY, "out of memory");
    KJ_RETURN_IF(!devrt_found, KJ_ERR_LINK, "%s", devrt_error);
    *path = devrt_path;
    *hash = devrt_hash;
    return KJ_OK;
}

int kj__nvjitlink_version(void) {
    unsigned major = 0, minor = 0;
    nvJitLinkVersion(&major, &minor);
    return (int)(major * 1000 + minor * 10);
}

static char *link_log(nvJitLinkHandle h, int info) {
    size_t n = 0;
    nvJitLinkResult r = info ? nvJitLinkGetInfoLogSize(h, &n) : nvJitLinkGetErrorLogSize(h, &n);
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (r == NVJITLINK_SUCCESS && n) r = info ? nvJitLinkGetInfoLog(h, log) : nvJitLinkGetErrorLog(h, log);
    log[r == NVJITLINK_SUCCESS ? n : 0] = '\0';
    return log;
}

/* nvJitLink reports some failures (a symbol defined twice) in its error log while nvJitLinkComplete
 * succeeds: an error line fails the link all the same. */
static int has_error_line(const char *log) {
    for (const char *line = log; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, "error", 5) == 0) return 1;
    return 0;
}

/* A global symbol a unit defines. */
typedef struct definition {
    const char *name; /* into the unit's bytes */
    size_t unit;
} definition;

/* Appends the global symbols that a relocatable cubin (ELF64) defines; weak ones (templates, inline
 * functions) may be defined in every unit. An ELF that does not read as expected adds nothing (the
 * linker then judges alone). 0, or -1 out of memory. */
static int add_definitions(const kj__link_unit *unit, size_t index, definition **defs, size_t *n) {
    const unsigned char *d = (const unsigned char *)unit->data;
    size_t size = unit->size;
    if (unit->input != KJ__LINK_CUBIN || size < sizeof(Elf64_Ehdr) || memcmp(d, ELFMAG, SELFMAG) != 0 ||
        d[EI_CLASS] != ELFCLASS64)
        return 0;
    Elf64_Ehdr eh;
    memcpy(&eh, d, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
        eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
        return 0;
    for (size_t i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, strings;
        memcpy(&sh, d + eh.e_shoff + i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum || sh.sh_offset > size ||
            sh.sh_size > size - sh.sh_offset)
            continue;
        memcpy(&strings, d + eh.e_shoff + sh.sh_link * sizeof strings, sizeof strings);
        if (strings.sh_offset > size || strings.sh_size > size - strings.sh_offset || strings.sh_size == 0 ||
            d[strings.sh_offset + strings.sh_size - 1] != '\0')
            continue;
        for (size_t k = 0; k < sh.sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym sym;
            memcpy(&sym, d + sh.sh_offset + k * sizeof sym, sizeof sym);
            if (ELF64_ST_BIND(sym.st_info) != STB_GLOBAL || sym.st_shndx == SHN_UNDEF || sym.st_name >= strings.sh_size)
                continue;
            definition *grown = realloc(*defs, (*n + 1) * sizeof *grown);
            if (!grown) return -1;
            *defs = grown;
            (*defs)[(*n)++] = (definition){(const char *)d + strings.sh_offset + sym.st_name, index};
        }
    }
    return 0;
}

static int by_name(const void *a, const void *b) {
    const definition *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->unit > y->unit) - (x->unit < y->unit);
}

/* A symbol that two units define is an error nvJitLink 13 prints to stderr and then links anyway
 * (it keeps one definition): found here first, naming both sources. */
static kj_status check_definitions(const kj__link_unit *units, size_t count) {
    definition *defs = NULL;
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (add_definitions(&units[i], i, &defs, &n) != 0) {
            free(defs);
            return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
        }
    if (n > 1) qsort(defs, n, sizeof *defs, by_name); /* none for LTO-IR units: defs may be NULL */
    kj__buf twice = {0};
    size_t found = 0;
    for (size_t i = 1; i < n; i++)
        if (strcmp(defs[i].name, defs[i - 1].name) == 0 && defs[i].unit != defs[i - 1].unit && found++ < 16)
            kj__buf_printf(&twice, "  '%s' in %s and in %s\n", defs[i].name, units[defs[i - 1].unit].name,
                           units[defs[i].unit].name);
    free(defs);
    kj_status s = KJ_OK;
    if (found) {
        s = KJ_FAIL(KJ_ERR_LINK, "the sources define %zu symbol%s twice (a C++ name is shown mangled):", found,
                    found == 1 ? "" : "s");
        kj__error_append(twice.data);
        kj__error_append("note: every source of a program is linked with the others; a __device__ function or "
                         "variable must be defined in exactly one of them (declared extern in the rest)");
    }
    kj__buf_free(&twice);
    return s;
}

int kj__devrt_has_code(int number) {
    pthread_once(&devrt_once, find_devrt);
    if (!devrt_found || devrt_code_count < 0) return -1;
    for (int i = 0; i < devrt_code_count; i++)
        if (devrt_codes[i] == number) return 1;
    return 0;
}

static kj_status link_failed(nvJitLinkHandle h, const char *arch, const kj__link_unit *units, size_t count,
                             int with_devrt, const char *lib, int code) {
    /* the toolkit's own gap, not the program's: nvJitLink says only "bad input" */
    if (with_devrt && kj__devrt_has_code(kj__arch_number(arch)) == 0) {
        kj__buf has = {0};
        for (int i = 0; i < devrt_code_count; i++) kj__buf_printf(&has, "%ssm_%d", i ? " " : "", devrt_codes[i]);
        kj_status s = KJ_FAIL(KJ_ERR_LINK,
                              "this toolkit's device runtime (%s) has no code for %s: kernels that launch "
                              "kernels cannot be built for it (it has code for %s)",
                              lib, arch, has.data ? has.data : "none");
        kj__buf_free(&has);
        return s;
    }
    kj__buf names = {0};
    for (size_t i = 0; i < count; i++) kj__buf_printf(&names, "%s%s", i ? ", " : "", units[i].name);
    if (with_devrt) kj__buf_printf(&names, "%sthe device runtime (%s)", count ? ", " : "", lib);
    kj_status s = code ? KJ_FAIL(KJ_ERR_LINK,
                                 "linking %s for %s failed (nvJitLink error %d):", names.data ? names.data : "", arch,
                                 code)
                       : KJ_FAIL(KJ_ERR_LINK, "linking %s for %s failed:", names.data ? names.data : "", arch);
    kj__buf_free(&names);
    char *log = link_log(h, 0);
    kj__error_append(log);
    if (log && strstr(log, "Undefined reference"))
        kj__error_append("note: a __device__ function or variable that a source uses must be defined in one of the "
                         "program's sources (a C++ name is shown mangled)");
    free(log);
    return s;
}

kj_status kj__link(const char *arch, const kj__link_unit *units, size_t count, int with_devrt, kj__linked *out) {
    memset(out, 0, sizeof *out);
    const char *lib = NULL;
    const uint8_t *hash;
    if (with_devrt) KJ_FORWARD(kj__devrt(&lib, &hash));
    if (count > 1) KJ_FORWARD(check_definitions(units, count));
    char opt_arch[32];
    snprintf(opt_arch, sizeof opt_arch, "-arch=%s", arch);
    kj__arch_name target;
    int want_ptx = kj__arch_parse(arch, &target) == 0 && target.ptx;
    int lto = 0;
    for (size_t i = 0; i < count; i++) lto |= units[i].input == KJ__LINK_LTOIR;
    /* -verbose: the resources of each kernel after linking (resources.h) */
    const char *opts[4] = {opt_arch, "-verbose"};
    uint32_t nopts = 2;
    if (want_ptx) opts[nopts++] = "-ptx";
    if (lto) opts[nopts++] = "-lto";
    double t0 = kj__now_ms();
    nvJitLinkHandle h;
    nvJitLinkResult r = nvJitLinkCreate(&h, nopts, opts);
    KJ_RETURN_IF(r != NVJITLINK_SUCCESS, KJ_ERR_LINK, "nvJitLink cannot start a link for %s (error %d)", arch, (int)r);
    for (size_t i = 0; i < count && r == NVJITLINK_SUCCESS; i++)
        r = nvJitLinkAddData(h,
                             units[i].input == KJ__LINK_PTX     ? NVJITLINK_INPUT_PTX
                             : units[i].input == KJ__LINK_LTOIR ? NVJITLINK_INPUT_LTOIR
                                                                : NVJITLINK_INPUT_CUBIN,
                             units[i].data, units[i].size, units[i].name);
    if (r == NVJITLINK_SUCCESS && with_devrt) r = nvJitLinkAddFile(h, NVJITLINK_INPUT_LIBRARY, lib);
    if (r == NVJITLINK_SUCCESS) r = nvJitLinkComplete(h);
    char *errors = r == NVJITLINK_SUCCESS ? link_log(h, 0) : NULL;
    int failed = r != NVJITLINK_SUCCESS || !errors || has_error_line(errors);
    free(errors);
    size_t size = 0;
    if (!failed) r = want_ptx ? nvJitLinkGetLinkedPtxSize(h, &size) : nvJitLinkGetLinkedCubinSize(h, &size);
    if (!failed && r == NVJITLINK_SUCCESS && !(out->binary = malloc(size ? size : 1))) r = NVJITLINK_ERROR_INTERNAL;
    if (!failed && r == NVJITLINK_SUCCESS)
        r = want_ptx ? nvJitLinkGetLinkedPtx(h, out->binary) : nvJitLinkGetLinkedCubin(h, out->binary);
    if (!failed && r == NVJITLINK_SUCCESS && !(out->info = link_log(h, 1))) r = NVJITLINK_ERROR_INTERNAL;
    if (failed || r != NVJITLINK_SUCCESS) {
        kj_status s = link_failed(h, arch, units, count, with_devrt, lib, (int)r);
        kj__linked_free(out);
        nvJitLinkDestroy(&h);
        return s;
    }
    nvJitLinkDestroy(&h);
    out->size = size;
    out->ms = kj__now_ms() - t0;
    return KJ_OK;
}

void kj__linked_free(kj__linked *l) {
    free(l->binary);
    free(l->info);
    memset(l, 0, sizeof *l);
}
