/* The built-in kernels: kj_builtin_count, kj_builtin_name, and the embedded files by name. */
#include "jit/embedded.h"

#include <string.h>

#include "kernjit.h"

size_t kj_builtin_count(void) { return kj__builtin_count; }

const char *kj_builtin_name(size_t index) { return index < kj__builtin_count ? kj__builtin_names[index] : NULL; }

const kj__embedded_file *kj__embedded_find(const char *file) {
    for (size_t i = 0; i < kj__embedded_count; i++)
        if (strcmp(kj__embedded_files[i].name, file) == 0) return &kj__embedded_files[i];
    return NULL;
}
