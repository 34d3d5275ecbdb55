// The public headers (kernjit.h, kernjit/ops.h, kernjit/tune.h) as a C++ program sees them: built as C++11 with -Wall -Wextra -Wpedantic -Werror
// (tests/meson.build). Checks that the declarations have C linkage (the program links against the C
// library) and that the header's types behave in C++ (enums, opaque handles, designated-free init).
#include "kernjit.h"
#include "kernjit/ops.h"
#include "kernjit/tune.h"

#include <cstdio>
#include <cstring>

int main() {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    kj_define d = {"T", "f32"};
    kj_request r = KJ_REQUEST_INIT;
    r.kernel = "reduce";
    r.defines = &d;
    r.define_count = 1;
    kj_tune_options t = KJ_TUNE_OPTIONS_INIT;
    kj_status s = KJ_ERR_USAGE;
    if (std::strcmp(kj_version_string(), KJ_VERSION_STRING) != 0 || kj_version_number() != KJ_VERSION_HEX) return 1;
    std::printf("kernjit %s from C++: %s, %s, request for %s\n", kj_version_string(), kj_status_name(s),
                kj_op_name(KJ_OP_SUM), r.kernel);
    return kj_status_class(s) == 2 && o.device == KJ_DEVICE_AUTO && t.kernel == NULL ? 0 : 1;
}
