/* The CUB reference (cli/cub/cub_reference.cu, built by nvcc), loaded at run time so that the CLI
 * needs neither nvcc nor the CUDA runtime. */
#ifndef KJ_CUB_PLUGIN_H
#define KJ_CUB_PLUGIN_H

#include <stddef.h>

#include "kernjit.h"

typedef struct cub_plugin {
    size_t (*temp_bytes)(int op, int type, size_t n);
    int (*reduce)(int op, int type, const void *in, size_t n, void *out, void *temp, size_t temp_bytes, void *stream);
    int (*version)(void);
    const char *(*error_name)(int error);
    char path[4096];
} cub_plugin;

/* Finds the plugin for rt's device: $KERNJIT_CUB_PLUGIN (a path; "off": none), beside the kernjit
 * executable, where it is installed, then one built before in <cache>/cub/. Without any, builds it
 * there now with the toolkit's nvcc for the device's architecture (about half a minute, once: its
 * name is keyed by the source, nvcc's version, the flags and the architecture), showing progress as
 * cmd. Returns 0, or -1 with the reason in why (the benchmark then runs without CUB). */
int cub_plugin_load(cub_plugin *p, kj_runtime *rt, const char *cmd, char *why, size_t why_size);

#endif
