/* Built by tests/test-install.sh against an installed kernjit, with nothing but what pkg-config gives
 * (the installed headers, and the shared or the static library): the header's version must be the
 * library's, the built-in kernels must be inside the library, and the library must compile one. The
 * headers in kernjit/ find each other whatever the include path; <kernjit.h>, the shim older
 * programs include, still works beside them. */
#include <kernjit/kernjit.h>
#include <kernjit/ops.h>
#include <kernjit/tune.h>
#include <kernjit.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    if (strcmp(kj_version_string(), KJ_VERSION_STRING) != 0 || kj_version_number() != KJ_VERSION_HEX) {
        printf("header %s, library %s\n", KJ_VERSION_STRING, kj_version_string());
        return 1;
    }
    if (kj_type_size(KJ_TYPE_F64) != 8 || kj_space_count(NULL) != 0) {
        printf("kernjit/ops.h or kernjit/tune.h does not agree with the library\n");
        return 1;
    }
    if (kj_builtin_count() == 0) {
        printf("the library holds no built-in kernel\n");
        return 1;
    }
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    o.device = KJ_DEVICE_NONE;
    o.cache_mode = KJ_CACHE_MEMORY_ONLY;
    kj_runtime *rt = NULL;
    kj_status s = kj_runtime_create(&o, &rt);
    kj_request req = KJ_REQUEST_INIT;
    req.kernel = kj_builtin_name(0);
    kj_compile_result result = KJ_COMPILE_RESULT_INIT;
    if (s == KJ_OK) s = kj_compile(rt, &req, &result);
    if (s != KJ_OK) {
        printf("%s: %s\n", kj_status_name(s), kj_last_error());
        kj_runtime_destroy(rt);
        return 1;
    }
    printf("kernjit %s: compiled %s for %s (%zu bytes)\n", kj_version_string(), req.kernel, result.arch,
           result.binary_bytes);
    kj_runtime_destroy(rt);
    return 0;
}
