/* kj_op and kj_type: the operators and element types every family takes, by name and size. */
#include "ops/ops.h"

static const char *const op_names[KJ_OP_COUNT_] = {"sum", "max", "min", "prod"};
static const char *const type_names[KJ_TYPE_COUNT_] = {"i32", "u32", "i64", "f16", "f32", "f64", "bf16"};
static const size_t type_sizes[KJ_TYPE_COUNT_] = {4, 4, 8, 2, 4, 8, 2};
static const size_t result_sizes[KJ_TYPE_COUNT_] = {4, 4, 8, 4, 4, 8, 4};

const char *kj_op_name(kj_op op) { return (unsigned)op < KJ_OP_COUNT_ ? op_names[op] : "?"; }
const char *kj_type_name(kj_type t) { return (unsigned)t < KJ_TYPE_COUNT_ ? type_names[t] : "?"; }
size_t kj_type_size(kj_type t) { return (unsigned)t < KJ_TYPE_COUNT_ ? type_sizes[t] : 0; }
size_t kj_result_size(kj_type t) { return (unsigned)t < KJ_TYPE_COUNT_ ? result_sizes[t] : 0; }

kj_status kj_op_parse(const char *text, kj_op *op) {
    int i = kj__name_find(op_names, KJ_OP_COUNT_, text);
    KJ_RETURN_IF(i < 0, KJ_ERR_USAGE, "unknown operator '%.40s': allowed are sum, max, min, prod",
                 text ? text : "(null)");
    *op = (kj_op)i;
    return KJ_OK;
}

kj_status kj_type_parse(const char *text, kj_type *type) {
    int i = kj__name_find(type_names, KJ_TYPE_COUNT_, text);
    KJ_RETURN_IF(i < 0, KJ_ERR_USAGE, "unknown type '%.40s': allowed are i32, u32, i64, f16, bf16, f32, f64",
                 text ? text : "(null)");
    *type = (kj_type)i;
    return KJ_OK;
}
