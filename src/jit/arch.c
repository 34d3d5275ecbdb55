#include "jit/arch.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

#define MAX_ARCHS 256

int kj__nvrtc_version(void) {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return major * 1000 + minor * 10;
}

int kj__arch_parse(const char *name, kj__arch_name *out) {
    kj__arch_name a = {0, '\0', 0};
    const char *p = NULL;
    if (name && strncmp(name, "sm_", 3) == 0) p = name + 3;
    else if (name && strncmp(name, "compute_", 8) == 0) p = name + 8, a.ptx = 1;
    /* 2 to 4 digits, no leading zero: sm_090 would pass NVRTC's list and fail its compile */
    size_t digits = p ? strspn(p, "0123456789") : 0;
    if (digits < 2 || digits > 4 || p[0] == '0') return -1;
    for (size_t i = 0; i < digits; i++) a.number = a.number * 10 + (p[i] - '0');
    p += digits;
    if (*p == 'a' || *p == 'f') a.suffix = *p++;
    if (*p) return -1;
    *out = a;
    return 0;
}

int kj__arch_folder_valid(const char *name) {
    kj__arch_name a;
    return kj__arch_parse(name, &a) == 0;
}

int kj__arch_number(const char *arch) {
    const char *u = arch ? strchr(arch, '_') : NULL;
    if (!u || u[1] < '1' || u[1] > '9') return 0;
    int v = 0;
    for (const char *p = u + 1; *p >= '0' && *p <= '9' && v < 100000; p++) v = v * 10 + (*p - '0');
    return v;
}

int kj__arch_supported(int *archs, int max) {
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > MAX_ARCHS) return 0;
    int all[MAX_ARCHS];
    if (nvrtcGetSupportedArchs(all) != NVRTC_SUCCESS) return 0;
    if (n > max) n = max;
    memcpy(archs, all, (size_t)n * sizeof *archs);
    return n;
}

static int listed[MAX_ARCHS], listed_count;
static pthread_once_t listed_once = PTHREAD_ONCE_INIT;
static void list_archs(void) { listed_count = kj__arch_supported(listed, MAX_ARCHS); }

int kj__arch_list(const int **archs) {
    pthread_once(&listed_once, list_archs);
    *archs = listed;
    return listed_count;
}

static kj_status supported(const int **archs, int *n) {
    *n = kj__arch_list(archs);
    KJ_RETURN_IF(*n == 0, KJ_ERR_COMPILE, "NVRTC cannot list the architectures it supports");
    return KJ_OK;
}

int kj__arch_suffix_supported(int number, char suffix) {
    if (suffix == 'a') return number >= 90 && kj__nvrtc_version() >= 12000;
    if (suffix == 'f') return number >= 100 && kj__nvrtc_version() >= 12090;
    return suffix == '\0';
}

kj_status kj__arch_for_device(int cc, kj__target *out) {
    const int *archs;
    int n, best = -1;
    KJ_FORWARD(supported(&archs, &n));
    for (int i = 0; i < n && best != cc; i++)
        if (archs[i] <= cc && archs[i] > best) best = archs[i];
    KJ_RETURN_IF(best < 0, KJ_ERR_UNSUPPORTED,
                 "compute capability %d.%d is older than any architecture this NVRTC supports (oldest: sm_%d)", cc / 10,
                 cc % 10, archs[0]);
    out->ptx = best != cc;
    snprintf(out->arch, sizeof out->arch, "%s_%d", out->ptx ? "compute" : "sm", best);
    snprintf(out->cache_arch, sizeof out->cache_arch, "sm_%d", cc);
    return KJ_OK;
}

/* "sm_90a sm_100a ...": the targets of this NVRTC with the prefix and suffix given. */
static void list_targets(const int *archs, int n, const char *prefix, char suffix, char *out, size_t size) {
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (!kj__arch_suffix_supported(archs[i], suffix)) continue;
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s_%d%.*s", len ? " " : "", prefix, archs[i], suffix ? 1 : 0, &suffix);
    }
}

kj_status kj__arch_for_user(const char *arch, kj__target *out) {
    kj__arch_name a;
    KJ_RETURN_IF(kj__arch_parse(arch, &a) != 0, KJ_ERR_USAGE,
                 "arch '%.40s' is not a target's name: give sm_XY (a cubin, for example sm_90), sm_XYa (for that "
                 "architecture alone, sm_90a), sm_XYf (for its family, sm_100f), or compute_XY, compute_XYa or "
                 "compute_XYf (PTX that the driver compiles, compute_90)",
                 arch ? arch : "(null)");
    const int *archs;
    int n, known = 0;
    KJ_FORWARD(supported(&archs, &n));
    for (int i = 0; i < n && !known; i++) known = archs[i] == a.number;
    int nvrtc = kj__nvrtc_version();
    if (!known) {
        char plain[512], with_a[512], with_f[512];
        list_targets(archs, n, "sm", '\0', plain, sizeof plain);
        list_targets(archs, n, "sm", 'a', with_a, sizeof with_a);
        list_targets(archs, n, "sm", 'f', with_f, sizeof with_f);
        return KJ_FAIL(KJ_ERR_USAGE,
                       "arch %s is not a target of this NVRTC (%d.%d); it targets %s (each also as "
                       "compute_XY), %s (and compute_XYa), %s (and compute_XYf)",
                       arch, nvrtc / 1000, nvrtc % 1000 / 10, plain, *with_a ? with_a : "no sm_XYa",
                       *with_f ? with_f : "no sm_XYf");
    }
    if (!kj__arch_suffix_supported(a.number, a.suffix)) {
        char list[512];
        const char *prefix = a.ptx ? "compute" : "sm";
        list_targets(archs, n, prefix, a.suffix, list, sizeof list);
        return KJ_FAIL(KJ_ERR_USAGE, "arch %s is not a target of this NVRTC (%d.%d): its %s targets are %s", arch,
                       nvrtc / 1000, nvrtc % 1000 / 10, a.suffix == 'a' ? "architecture-specific" : "family-specific",
                       *list ? list : "none");
    }
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    snprintf(out->cache_arch, sizeof out->cache_arch, "%s", arch);
    out->ptx = a.ptx;
    return KJ_OK;
}

int kj__arch_runs_on(const char *arch, int cc) {
    kj__arch_name a;
    if (kj__arch_parse(arch, &a) != 0) return 0;
    if (a.suffix == 'a') return cc == a.number;
    if (a.ptx && !a.suffix) return cc >= a.number;
    return cc / 10 == a.number / 10 && cc >= a.number; /* a cubin, or the family's code: the same major */
}

kj_status kj__arch_check_device(const char *arch, int cc, const char *device) {
    if (kj__arch_runs_on(arch, cc)) return KJ_OK;
    kj__arch_name a;
    KJ_RETURN_IF(kj__arch_parse(arch, &a) != 0, KJ_ERR_USAGE, "arch '%.40s' is not a target's name", arch);
    int major = a.number / 10, minor = a.number % 10;
    char runs[96];
    if (a.suffix == 'a') snprintf(runs, sizeof runs, "only on compute capability %d.%d", major, minor);
    else if (a.ptx && !a.suffix) snprintf(runs, sizeof runs, "on compute capability %d.%d and newer", major, minor);
    else if (minor == 9) snprintf(runs, sizeof runs, "only on compute capability %d.9", major);
    else snprintf(runs, sizeof runs, "on compute capability %d.%d to %d.9", major, minor, major);
    return KJ_FAIL(KJ_ERR_USAGE,
                   "arch %s: its code runs %s, and %s is %d.%d (sm_%d): build for sm_%d, or for a "
                   "target that runs there",
                   arch, runs, device, cc / 10, cc % 10, cc, cc);
}

void kj__arch_explain_failure(const char *log) {
    static const char said[] = "not supported on .target '";
    const char *at = log ? strstr(log, said) : NULL;
    if (!at) return;
    at += sizeof said - 1;
    char name[24];
    size_t n = strcspn(at, "'");
    if (n >= sizeof name) return;
    memcpy(name, at, n);
    name[n] = '\0';
    kj__arch_name a;
    if (kj__arch_parse(name, &a) != 0 || a.suffix || !kj__arch_suffix_supported(a.number, 'a')) return;
    const char *prefix = a.ptx ? "compute" : "sm";
    char family[64] = "";
    if (kj__arch_suffix_supported(a.number, 'f'))
        snprintf(family, sizeof family, ", or to its family's: %s_%df", prefix, a.number);
    char note[512];
    kj_message_format(
        note, sizeof note,
        "note: some instructions (wgmma, setmaxnreg, tcgen05 ...) belong to a target's "
        "architecture-specific set, whose code runs on that compute capability alone: if this one belongs "
        "to %s_%da's%s, build for that target (--arch %s_%da, kj_request.arch)",
        prefix, a.number, family, prefix, a.number);
    kj__error_append(note);
}
