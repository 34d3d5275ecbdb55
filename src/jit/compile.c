#include "jit/compile.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "jit/includes.h"
#include "base/util.h"

void kj__compiled_free(kj__compiled *c) {
    if (!c) return;
    free(c->binary);
    kj__strings_free(c->lowered_names, c->lowered_count);
    free(c->log);
    kj__resources_free(&c->resources);
    memset(c, 0, sizeof *c);
}

/* The log with the names NVRTC knows files by (KJ__VROOT/...) turned back into what the user knows:
 * the source's origin, a header's real path, a built-in header's name. */
static char *readable_log(const kj__source *src, char *log) {
    if (!log || !strstr(log, KJ__VROOT)) return log;
    kj__buf out = {0};
    const char *p = log;
    for (const char *v; (v = strstr(p, KJ__VROOT));) {
        kj__buf_append(&out, p, (size_t)(v - p));
        size_t n = strcspn(v, "\"'() \n\t:");
        const char *shown = NULL;
        if (strlen(src->vfile) == n && strncmp(v, src->vfile, n) == 0) shown = src->origin;
        for (size_t i = 0; i < src->header_count && !shown; i++) {
            const kj__header *h = &src->headers[i];
            if (strlen(h->name) == n && strncmp(v, h->name, n) == 0)
                shown = h->path ? h->path : h->name + strlen(KJ__VROOT) + 1;
        }
        if (shown) kj__buf_puts(&out, shown);
        else kj__buf_append(&out, v, n);
        p = v + n;
    }
    kj__buf_puts(&out, p);
    if (!out.data) return log;
    free(log);
    return out.data;
}

static char *program_log(nvrtcProgram prog) {
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0) return kj__strdup("");
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = '\0';
    log[n] = '\0';
    /* trim the trailing new lines NVRTC leaves */
    size_t len = strlen(log);
    while (len && (log[len - 1] == '\n' || log[len - 1] == '\r')) log[--len] = '\0';
    return log;
}

/* CUDA 12 removed device-side cudaDeviceSynchronize() for compute capability 9.0 and newer ("CDP1");
 * classic dynamic-parallelism code hits this. Say what replaces it rather than leave the user with a
 * bare "undefined identifier". */
static int looks_like_cdp1(const kj__source *src, const char *log) {
    return strstr(src->text, "cudaDeviceSynchronize") && strstr(log, "cudaDeviceSynchronize");
}

/* An entry NVRTC cannot resolve (a misspelt name, a template without its arguments) fails the whole
 * compilation, with errors only in the name map NVRTC generates for the name expression: the caller
 * named a kernel that is not there, a usage error, not a broken source. */
static int only_name_map_errors(const char *log) {
    int errors = 0;
    for (const char *line = log; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *e = strstr(line, "): error");
        if (!e || (size_t)(e - line) >= len) continue;
        if (strncmp(line, "__nv_name_map(", 14) != 0) return 0;
        errors++;
    }
    return errors > 0;
}

/* What kernjit knows that NVRTC's log does not say: where it looked for a header NVRTC could not
 * open, and the usual ways out of the errors a user's first file meets. */
static void explain_failure(const kj__source *src, const char *log) {
    /* "cannot open source file" / "could not open source file", or an #include NAME that NVRTC could
     * not expand ("expected a file name") */
    if (strstr(log, "open source file") || strstr(log, "expected a file name")) {
        if (src->unresolved.data) {
            kj__error_append("kernjit gives NVRTC every header itself and found these nowhere:");
            kj__error_append(src->unresolved.data);
        }
        if (strstr(log, "\"stdio.h\"") || strstr(log, "\"cstdio\"") || strstr(log, "\"stdlib.h\"") ||
            strstr(log, "\"assert.h\""))
            kj__error_append("note: NVRTC ships no C library headers; device printf and assert need none (drop the "
                             "#include)");
    }
    /* <cub/cub.cuh> reaches CUB's device-wide algorithms, host code that includes the C++ library */
    int host_cccl = strstr(log, "/cub/device/") || strstr(log, "/thrust/") || strstr(log, "/cub/detail/launcher/");
    if (host_cccl)
        kj__error_append("note: <cub/cub.cuh>, CUB's device-wide algorithms (<cub/device/...>) and Thrust are host "
                         "code, which NVRTC does not compile: include the block- and warp-level headers the kernel "
                         "uses (<cub/block/block_reduce.cuh>, <cub/warp/warp_reduce.cuh>, ...)");
    else if (strstr(log, "calling a __host__ function") || strstr(log, "is not allowed in device code") ||
             strstr(log, "host functions are not allowed in JIT mode"))
        kj__error_append("note: a header of host declarations can be compiled for the device with "
                         "--option -default-device (functions without an execution space become __device__)");
    if (strstr(log, "device-side kernel launch could not be processed") || strstr(log, "requires separate compilation"))
        kj__error_append("note: kernels that launch kernels need the device runtime: kernjit links it when it sees a "
                         "launch (<<<...>>>); give --option -rdc=true where it cannot see one");
}

kj_status kj__compile(const kj__compile_job *job, kj__compiled *out) {
    memset(out, 0, sizeof *out);
    const kj__source *src = job->source;
    static _Thread_local const char *names[KJ_MAX_HEADERS], *texts[KJ_MAX_HEADERS];
    for (size_t i = 0; i < src->header_count; i++) {
        names[i] = src->headers[i].name;
        texts[i] = src->headers[i].text;
    }
    double t0 = kj__now_ms();
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, job->text ? job->text : src->text, src->vfile, (int)src->header_count,
                                       texts, names);
    if (r != NVRTC_SUCCESS)
        return KJ_FAIL(KJ_ERR_COMPILE, "NVRTC cannot create a program for %s: %s", src->origin, nvrtcGetErrorString(r));
    /* exactly the job's options: the key covers them (the include folders NVRTC may search among them) */
    const char **opts = (const char **)job->options;
    size_t nopt = job->option_count;
    for (size_t i = 0; i < job->name_expression_count; i++) nvrtcAddNameExpression(prog, job->name_expressions[i]);
    r = nvrtcCompileProgram(prog, (int)nopt, opts);
    out->log = readable_log(src, program_log(prog));
    char *warnings = kj__resources_from_ptxas(out->log, &out->resources);
    if (warnings) {
        free(out->log);
        out->log = warnings;
    }
    if (r != NVRTC_SUCCESS) {
        /* out of file descriptors, NVRTC blames its installation (it opens its builtins library in a
         * process's first compile) or a header: the cause comes first */
        int no_fd = kj__descriptors_exhausted();
        kj_status s = no_fd ? KJ_FAIL(KJ_ERR_IO,
                                      "compiling %s failed: NVRTC cannot open the files it needs: %s; "
                                      "NVRTC says:",
                                      src->origin, kj__strerror(no_fd))
                      : job->name_expression_count && out->log && only_name_map_errors(out->log)
                          ? KJ_FAIL(KJ_ERR_UNKNOWN_ENTRY,
                                    "no kernel '%.200s'%s in %s (for a template give the instance, "
                                    "e.g. scale<float,256>); NVRTC says:",
                                    job->name_expressions[0],
                                    job->name_expression_count > 1 ? " or another of the entries" : "", src->origin)
                          : KJ_FAIL(KJ_ERR_COMPILE, "compiling %s failed (%s)", src->origin, nvrtcGetErrorString(r));
        kj__error_append(out->log);
        if (out->log) explain_failure(src, out->log);
        if (out->log && looks_like_cdp1(src, out->log))
            kj__error_append("note: device-side cudaDeviceSynchronize() (\"CDP1\" dynamic parallelism) does not exist "
                             "on compute capability 9.0 and newer (CUDA 12+). Launch the work that must follow the "
                             "children into cudaStreamTailLaunch (it runs after the parent grid and all its "
                             "children finish), or use cudaStreamFireAndForget when nothing waits.");
        kj__compiled_free(out);
        nvrtcDestroyProgram(&prog);
        return s;
    }
    if (job->name_expression_count) {
        out->lowered_names = calloc(job->name_expression_count, sizeof *out->lowered_names);
        out->lowered_count = out->lowered_names ? job->name_expression_count : 0;
        for (size_t i = 0; i < out->lowered_count; i++) {
            const char *lowered = NULL;
            if (nvrtcGetLoweredName(prog, job->name_expressions[i], &lowered) == NVRTC_SUCCESS && lowered)
                out->lowered_names[i] = kj__strdup(lowered);
        }
    }
    size_t size = 0;
    r = job->want_ltoir ? nvrtcGetLTOIRSize(prog, &size)
        : job->want_ptx ? nvrtcGetPTXSize(prog, &size)
                        : nvrtcGetCUBINSize(prog, &size);
    if (r == NVRTC_SUCCESS && size > 0 && (out->binary = malloc(size))) {
        r = job->want_ltoir ? nvrtcGetLTOIR(prog, out->binary)
            : job->want_ptx ? nvrtcGetPTX(prog, out->binary)
                            : nvrtcGetCUBIN(prog, out->binary);
        out->size = size;
    } else if (r == NVRTC_SUCCESS) {
        r = NVRTC_ERROR_OUT_OF_MEMORY;
    }
    nvrtcDestroyProgram(&prog);
    if (r != NVRTC_SUCCESS) {
        kj__compiled_free(out);
        return KJ_FAIL(KJ_ERR_COMPILE, "NVRTC produced no binary for %s: %s", src->origin, nvrtcGetErrorString(r));
    }
    out->is_ptx = job->want_ptx;
    out->ms = kj__now_ms() - t0;
    return KJ_OK;
}
