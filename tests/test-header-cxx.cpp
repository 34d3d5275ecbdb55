// The public headers (kernjit/kernjit.h, kernjit/ops.h, kernjit/tune.h; the shim kernjit.h) as a C++ program sees them: built as C++11 with -Wall -Wextra -Wpedantic -Werror
// (tests/meson.build). Checks that the declarations have C linkage (the program links against the C
// library), that the header's types behave in C++ (enums, opaque handles), and that the KJ_*_INIT
// macros, which C++ before C++20 gets as values rather than designated initializers, give the size
// and the defaults.
#include "kernjit/kernjit.h"
#include "kernjit/ops.h"
#include "kernjit/tune.h"
#include "kernjit.h"

#include <cstdio>
#include <cstring>

#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            std::printf("failed: %s\n", #cond);                                                                        \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main() {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    EXPECT(o.size == sizeof o && o.device == KJ_DEVICE_AUTO && o.cache_mode == KJ_CACHE_DISK);
    EXPECT(o.log_level == KJ_LOG_WARN && o.arch == NULL && o.log == NULL);
    kj_define d = {"T", "f32"};
    kj_request r = KJ_REQUEST_INIT;
    EXPECT(r.size == sizeof r && r.kernel == NULL && r.define_count == 0);
    r.kernel = "reduce";
    r.defines = &d;
    r.define_count = 1;
    kj_launch_config c = KJ_LAUNCH_CONFIG_INIT;
    EXPECT(c.size == sizeof c && c.grid[0] == 0 && c.stream == NULL);
    kj_compile_result cr = KJ_COMPILE_RESULT_INIT;
    EXPECT(cr.size == sizeof cr && cr.binary_bytes == 0);
    kj_reduce_options ro = KJ_REDUCE_OPTIONS_INIT;
    EXPECT(ro.size == sizeof ro && ro.report == NULL);
    kj_tune_options t = KJ_TUNE_OPTIONS_INIT;
    EXPECT(t.size == sizeof t && t.kernel == NULL);
    kj_tune_filter f = KJ_TUNE_FILTER_INIT;
    EXPECT(f.size == sizeof f && f.cc == -1 && f.bucket == -1 && f.kernel == NULL);
    // the function for languages without the macros gives the same bytes
    kj_runtime_options same;
    std::memset(&same, 0x5a, sizeof same);
    EXPECT(kj_runtime_options_init(&same, sizeof same) == KJ_OK);
    EXPECT(same.size == o.size && same.device == o.device && same.log_level == o.log_level && same.arch == NULL);
    kj_status s = KJ_ERR_USAGE;
    EXPECT(std::strcmp(kj_version_string(), KJ_VERSION_STRING) == 0 && kj_version_number() == KJ_VERSION_HEX);
    std::printf("kernjit %s from C++: %s, %s, request for %s\n", kj_version_string(), kj_status_name(s),
                kj_op_name(KJ_OP_SUM), r.kernel);
    EXPECT(kj_status_class(s) == 2);
    return 0;
}
