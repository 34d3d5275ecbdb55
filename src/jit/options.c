#include "jit/options.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"

#define MAX_USER_OPTIONS 128

/* Options by prefix: "x" matches "x" and "x=..."; a prefix ending in '*' matches anything after it. */
static int matches(const char *o, const char *pattern) {
    size_t n = strlen(pattern);
    if (pattern[n - 1] == '*') return strncmp(o, pattern, n - 1) == 0;
    return strncmp(o, pattern, n) == 0 && (o[n] == '\0' || o[n] == '=');
}

static const struct refusal {
    const char *patterns[6];
    const char *why;
} refused[] = {
    {{"-arch", "--gpu-architecture", "-D*", "--define-macro"},
     "is set by kernjit: give macros as defines and the target as the arch"},
    {{"-U*", "--undefine-macro"}, "would undo macros kernjit validated and keyed"},
    {{"--no-source-include", "-no-source-include"}, "is set by kernjit, which finds every header itself"},
    {{"--time", "-time", "--fdevice-time-trace", "-fdevice-time-trace"}, "writes a file: not supported by kernjit"},
    {{"--create-pch", "-create-pch", "--use-pch", "-use-pch", "--pch-dir", "-pch-dir"},
     "reads or writes precompiled headers kernjit does not hash: not supported by kernjit"},
    {{"--pch", "-pch", "--pch-messages", "-pch-messages", "--pch-verbose", "-pch-verbose"},
     "uses precompiled headers kernjit does not hash: not supported by kernjit"},
    {{"--device-c", "-dc", "-device-c"},
     "makes an object to link, not a program: not supported by kernjit (it links what it needs itself)"},
    {{"--optix-ir", "-optix-ir", "--split-compile", "-split-compile*"}, "is not supported by kernjit"},
    {{"-M*", "--dependency*"}, "writes a dependency file: not supported by kernjit"},
    {{"--resource-usage", "-res-usage", "-resource-usage"},
     "is not an NVRTC option: kernjit reports each kernel's resources itself (kernjit compile, "
     "kj_compile_result.resources)"},
};

static int push(char ***list, size_t *n, const char *s) { return kj__strings_push(list, n, kj__strdup(s)); }

static kj_status one(const char *o, kj__user_options *out) {
    KJ_RETURN_IF(!o || o[0] != '-', KJ_ERR_USAGE, "NVRTC option '%.80s' does not start with '-'", o ? o : "(null)");
    KJ_RETURN_IF(strlen(o) > 1024, KJ_ERR_USAGE, "NVRTC option longer than 1024 characters");
    for (const char *c = o; *c; c++)
        KJ_RETURN_IF(iscntrl((unsigned char)*c), KJ_ERR_USAGE, "NVRTC option '%.80s' has a control character", o);
    const char *value = NULL;
    if (strncmp(o, "--include-path=", 15) == 0) value = o + 15;
    else if (strncmp(o, "-I", 2) == 0) value = o[2] == '=' ? o + 3 : o + 2;
    if (value) {
        KJ_RETURN_IF(!*value, KJ_ERR_USAGE,
                     "option '%s' names no folder: write -I<folder> (or --include-path=<folder>)", o);
        return push(&out->include_dirs, &out->include_dir_count, value) ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory")
                                                                        : KJ_OK;
    }
    if (strncmp(o, "--pre-include=", 14) == 0) value = o + 14;
    else if (strncmp(o, "-include=", 9) == 0) value = o + 9;
    if (value || strcmp(o, "--pre-include") == 0 || strcmp(o, "-include") == 0) {
        KJ_RETURN_IF(!value || !*value, KJ_ERR_USAGE, "option '%s' names no file: write --pre-include=<file>", o);
        return push(&out->pre_includes, &out->pre_include_count, value) ? KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory")
                                                                        : KJ_OK;
    }
    if (matches(o, "-rdc") || matches(o, "--relocatable-device-code")) {
        const char *eq = strchr(o, '=');
        KJ_RETURN_IF(!eq || (strcmp(eq, "=true") != 0 && strcmp(eq, "=false") != 0), KJ_ERR_USAGE,
                     "option '%s': write -rdc=true (link with the device runtime) or -rdc=false", o);
        out->rdc |= strcmp(eq, "=true") == 0;
        return KJ_OK;
    }
    if (strncmp(o, "-std=", 5) == 0 || strncmp(o, "--std=", 6) == 0) {
        /* one spelling in the list NVRTC gets, where kernjit's own would be: -std=c++17 given or not is
         * one key */
        out->std = strchr(o, '=') + 1; /* NVRTC judges the value */
        return KJ_OK;
    }
    if (strcmp(o, "-minimal") == 0 || strcmp(o, "--minimal") == 0) out->no_minimal = 1; /* kernjit adds none */
    if (strcmp(o, "-dlto") == 0 || strcmp(o, "--dlink-time-opt") == 0 || strcmp(o, "-dlink-time-opt") == 0) {
        out->lto = 1; /* kernjit compiles each unit so and links them (the key has "-dlto" among its options) */
        return KJ_OK;
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        for (size_t j = 0; j < 6 && refused[i].patterns[j]; j++)
            KJ_RETURN_IF(matches(o, refused[i].patterns[j]), KJ_ERR_USAGE, "option '%.80s' %s", o, refused[i].why);
    const char **grown = realloc(out->pass, (out->pass_count + 1) * sizeof *grown);
    if (!grown) return KJ_FAIL(KJ_ERR_HOST_MEMORY, "out of memory");
    grown[out->pass_count++] = o;
    out->pass = grown;
    return KJ_OK;
}

kj_status kj__user_options_parse(const char *const *options, size_t count, kj__user_options *out) {
    memset(out, 0, sizeof *out);
    KJ_RETURN_IF(count && !options, KJ_ERR_USAGE, "option_count is %zu but options is NULL", count);
    KJ_RETURN_IF(count > MAX_USER_OPTIONS, KJ_ERR_USAGE, "%zu NVRTC options: at most %d", count, MAX_USER_OPTIONS);
    for (size_t i = 0; i < count; i++) {
        kj_status s = one(options[i], out);
        if (s != KJ_OK) {
            kj__user_options_free(out);
            return s;
        }
    }
    return KJ_OK;
}

void kj__user_options_free(kj__user_options *o) {
    for (size_t i = 0; i < o->include_dir_count; i++) free(o->include_dirs[i]);
    for (size_t i = 0; i < o->pre_include_count; i++) free(o->pre_includes[i]);
    free(o->include_dirs);
    free(o->pre_includes);
    free(o->pass);
    memset(o, 0, sizeof *o);
}
