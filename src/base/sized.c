/* Reading and writing the callers' sized structs (see sized.h). */
#include "base/sized.h"

#include <string.h>

static kj_status check_size(size_t size, size_t ours, const char *type, const char *init) {
    KJ_RETURN_IF(size == 0, KJ_ERR_USAGE,
                 "%s.size is 0: initialize the struct with %s (or set size to sizeof(%s)) before passing it", type,
                 init, type);
    KJ_RETURN_IF(size < sizeof(size_t) || size > ours + KJ__SIZED_MAX_GROWTH, KJ_ERR_USAGE,
                 "%s.size is %zu, not the size of a %s (this library's is %zu): initialize the struct with %s", type,
                 size, type, ours, init);
    KJ_RETURN_IF(size % KJ__SIZED_UNIT != 0, KJ_ERR_USAGE,
                 "%s.size is %zu, which ends inside a field: the sizes of a %s are multiples of %u (this library's "
                 "is %zu): initialize the struct with %s",
                 type, size, type, KJ__SIZED_UNIT, ours, init);
    return KJ_OK;
}

kj_status kj__sized_read(void *copy, size_t ours, const void *caller, const void *defaults, const char *type,
                         const char *init) {
    size_t size;
    memcpy(&size, caller, sizeof size);
    KJ_FORWARD(check_size(size, ours, type, init));
    const unsigned char *bytes = caller;
    for (size_t i = ours; i < size; i++)
        KJ_RETURN_IF(bytes[i] != 0, KJ_ERR_USAGE,
                     "%s has a non-zero byte at offset %zu, past the %zu bytes this library knows: a field of newer "
                     "headers (kernjit %s) that this library cannot honour; leave it 0 or use a newer library",
                     type, i, ours, KJ_VERSION_STRING);
    if (defaults) memcpy(copy, defaults, ours);
    else memset(copy, 0, ours);
    memcpy(copy, caller, size < ours ? size : ours);
    memcpy(copy, &ours, sizeof ours);
    return KJ_OK;
}

kj_status kj__sized_view(const void *caller, const void **view, void *copy, size_t ours, const void *defaults,
                         const char *type, const char *init) {
    size_t size;
    memcpy(&size, caller, sizeof size);
    if (size == ours) {
        *view = caller;
        return KJ_OK;
    }
    KJ_FORWARD(kj__sized_read(copy, ours, caller, defaults, type, init));
    *view = copy;
    return KJ_OK;
}

kj_status kj__sized_check(const void *caller, size_t ours, const char *type, const char *init) {
    size_t size;
    memcpy(&size, caller, sizeof size);
    return check_size(size, ours, type, init);
}

kj_status kj__sized_init(void *caller, size_t size, const void *defaults, size_t ours, const char *type,
                         const char *init) {
    KJ_FORWARD(check_size(size, ours, type, init));
    memcpy(caller, &size, sizeof size);
    kj__sized_write(caller, defaults, ours);
    return KJ_OK;
}

void kj__sized_write(void *caller, const void *full, size_t ours) {
    size_t size;
    memcpy(&size, caller, sizeof size);
    unsigned char *bytes = caller;
    size_t n = size < ours ? size : ours;
    memcpy(bytes + sizeof size, (const unsigned char *)full + sizeof size, n - sizeof size);
    if (size > ours) memset(bytes + ours, 0, size - ours);
}
