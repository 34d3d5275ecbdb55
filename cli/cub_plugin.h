/* The CUB reference (cli/cub/cub_reference.cu, built by nvcc when it is there), loaded at run time
 * so that the CLI needs neither nvcc nor the CUDA runtime. */
#ifndef KJ_CUB_PLUGIN_H
#define KJ_CUB_PLUGIN_H

#include <stddef.h>

typedef struct cub_plugin {
    size_t (*temp_bytes)(int op, int type, size_t n);
    int (*reduce)(int op, int type, const void *in, size_t n, void *out, void *temp, size_t temp_bytes, void *stream);
    int (*version)(void);
    const char *(*error_name)(int error);
    char path[4096];
} cub_plugin;

/* Looks in $KERNJIT_CUB_PLUGIN, beside the kernjit executable, then where it is installed. Returns 0,
 * or -1 with the reason in why. */
int cub_plugin_load(cub_plugin *p, char *why, size_t why_size);

#endif
