#include "jit/arch.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "jit/compile.h"

#define MAX_ARCHS 256

int kj__arch_number(const char *arch) {
    const char *u = arch ? strchr(arch, '_') : NULL;
    if (!u || u[1] < '1' || u[1] > '9') return 0;
    int v = 0;
    for (const char *p = u + 1; *p >= '0' && *p <= '9' && v < 100000; p++) v = v * 10 + (*p - '0');
    return v;
}

int kj__arch_folder_valid(const char *name) {
    size_t digits = name && strncmp(name, "sm_", 3) == 0 ? strspn(name + 3, "0123456789") : 0;
    return digits >= 2 && digits <= 4 && name[3] != '0' && name[3 + digits] == '\0';
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

static kj_status supported(int *archs, int *n) {
    *n = kj__arch_supported(archs, MAX_ARCHS);
    KJ_RETURN_IF(*n == 0, KJ_ERR_COMPILE, "NVRTC cannot list the architectures it supports");
    return KJ_OK;
}

kj_status kj__arch_for_device(int cc, kj__target *out) {
    int archs[MAX_ARCHS], n, best = -1;
    KJ_FORWARD(supported(archs, &n));
    for (int i = 0; i < n && best != cc; i++)
        if (archs[i] <= cc && archs[i] > best) best = archs[i];
    KJ_RETURN_IF(best < 0, KJ_ERR_UNSUPPORTED,
                 "compute capability %d.%d is older than any architecture this NVRTC supports (oldest: sm_%d)",
                 cc / 10, cc % 10, archs[0]);
    out->ptx = best != cc;
    snprintf(out->arch, sizeof out->arch, "%s_%d", out->ptx ? "compute" : "sm", best);
    snprintf(out->cache_arch, sizeof out->cache_arch, "sm_%d", cc);
    return KJ_OK;
}

kj_status kj__arch_for_user(const char *arch, kj__target *out) {
    /* sm_ and 2 to 4 digits, no leading zero: sm_090 would pass NVRTC's list and fail its compile */
    size_t digits = arch && strncmp(arch, "sm_", 3) == 0 ? strspn(arch + 3, "0123456789") : 0;
    int cc = digits >= 2 && digits <= 4 && arch[3 + digits] == '\0' ? kj__arch_number(arch) : 0;
    KJ_RETURN_IF(cc == 0, KJ_ERR_USAGE, "arch '%.40s' is not sm_<digits> (for example sm_90)", arch ? arch : "(null)");
    int archs[MAX_ARCHS], n;
    KJ_FORWARD(supported(archs, &n));
    char list[512] = "";
    for (int i = 0; i < n; i++) {
        if (archs[i] == cc) {
            snprintf(out->arch, sizeof out->arch, "%s", arch);
            snprintf(out->cache_arch, sizeof out->cache_arch, "%s", arch);
            out->ptx = 0;
            return KJ_OK;
        }
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%ssm_%d", i ? " " : "", archs[i]);
    }
    return KJ_FAIL(KJ_ERR_USAGE, "arch %s is not a target of this NVRTC (%d.%d); it targets %s", arch,
                   kj__nvrtc_version() / 1000, kj__nvrtc_version() % 1000 / 10, list);
}
