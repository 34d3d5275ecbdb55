/* The public headers (kernjit/kernjit.h, kernjit/ops.h, kernjit/tune.h, and the shims kernjit.h and
 * kernjit-version.h that older programs include) as a C99 program sees them: built with -std=c99
 * -Wall -Wextra -Wpedantic -Werror (tests/meson.build), so that any construct newer than C99 or any
 * warning in them fails the build. Running it checks that the header's version macros and the
 * library agree. */
#include "kernjit/kernjit.h"
#include "kernjit/ops.h"
#include "kernjit/tune.h"
#include "kernjit.h"
#include "kernjit-version.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    kj_tune_options t = KJ_TUNE_OPTIONS_INIT;
    if (strcmp(kj_version_string(), KJ_VERSION_STRING) != 0 || kj_version_number() != KJ_VERSION_HEX) {
        printf("header %s (0x%06x), library %s (0x%06x)\n", KJ_VERSION_STRING, (unsigned)KJ_VERSION_HEX,
               kj_version_string(), kj_version_number());
        return 1;
    }
    if (KJ_VERSION_HEX != ((KJ_VERSION_MAJOR << 16) | (KJ_VERSION_MINOR << 8) | KJ_VERSION_PATCH)) {
        printf("KJ_VERSION_HEX 0x%06x does not encode %d.%d.%d\n", (unsigned)KJ_VERSION_HEX, KJ_VERSION_MAJOR,
               KJ_VERSION_MINOR, KJ_VERSION_PATCH);
        return 1;
    }
    printf("kernjit %s from C99: %s, %s\n", kj_version_string(), kj_strerror(KJ_ERR_UNKNOWN_KERNEL),
           kj_op_name(KJ_OP_SUM));
    return o.device == KJ_DEVICE_AUTO && t.kernel == NULL ? 0 : 1;
}
