/* The layout rule of the callers' sized structs (base/sized.h), checked when the library is built:
 * each ends with its last field, not with padding, and is a whole number of KJ__SIZED_UNIT. A struct
 * that fails here needs a field named `reserved` where the padding was. Every sized struct of the
 * public headers is listed (tests/test-symbols.py checks the list against the headers). */
#include <stddef.h>

#include "base/sized.h"
#include "kernjit.h"
#include "kernjit/ops.h"
#include "kernjit/tune.h"

#define KJ__NO_TAIL_PADDING(type, last)                                                                                \
    _Static_assert(sizeof(type) == offsetof(type, last) + sizeof(((type *)0)->last) &&                                 \
                       sizeof(type) % KJ__SIZED_UNIT == 0,                                                             \
                   #type " ends in padding: name it (a `reserved` field), and grow in units of 8 bytes")

KJ__NO_TAIL_PADDING(kj_runtime_options, seed_dirs);
KJ__NO_TAIL_PADDING(kj_device_info, max_nesting_depth);
KJ__NO_TAIL_PADDING(kj_stats, seed_hits);
KJ__NO_TAIL_PADDING(kj_request, entry_count);
KJ__NO_TAIL_PADDING(kj_compile_result, entry_symbol_count);
KJ__NO_TAIL_PADDING(kj_kernel_info, reserved);
KJ__NO_TAIL_PADDING(kj_launch_config, cluster);
KJ__NO_TAIL_PADDING(kj_toolchain, archs);
KJ__NO_TAIL_PADDING(kj_param_info, launch);
KJ__NO_TAIL_PADDING(kj_remote_info, bytes_pushed);
KJ__NO_TAIL_PADDING(kj_remote_transfer, bytes);
KJ__NO_TAIL_PADDING(kj_reduce_report, waves);
KJ__NO_TAIL_PADDING(kj_reduce_options, reserved);
KJ__NO_TAIL_PADDING(kj_vector_add_report, waves);
KJ__NO_TAIL_PADDING(kj_vector_add_options, reserved);
KJ__NO_TAIL_PADDING(kj_transpose_report, reserved);
KJ__NO_TAIL_PADDING(kj_transpose_options, reserved);
KJ__NO_TAIL_PADDING(kj_dp_report, reserved);
KJ__NO_TAIL_PADDING(kj_nested_options, report);
KJ__NO_TAIL_PADDING(kj_mandelbrot_options, report);
KJ__NO_TAIL_PADDING(kj_variant, skipped);
KJ__NO_TAIL_PADDING(kj_compile_all_options, shards);
KJ__NO_TAIL_PADDING(kj_compile_all_result, arch);
KJ__NO_TAIL_PADDING(kj_tune_options, progress_user);
KJ__NO_TAIL_PADDING(kj_tuned, target);
KJ__NO_TAIL_PADDING(kj_tune_filter, bucket);
