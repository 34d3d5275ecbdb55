/* nvJitLink: a relocatable object compiled with -rdc=true, linked with the device runtime
 * (libcudadevrt.a from the toolkit) into a loadable cubin. Only kernels whose metadata says `rdc`
 * come here: plain kernels are never linked with it. */
#ifndef KJ_LINK_H
#define KJ_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "compile.h"

/* The device runtime library: path and XXH3-128 of its bytes, found and hashed once per process.
 * KJ_ERR_LINK names the path looked at when it is missing. */
kj_status kj__devrt(const char **path, const uint8_t **hash);

/* nvJitLink's version, major * 1000 + minor * 10. */
int kj__nvjitlink_version(void);

/* Links c->binary (a relocatable cubin, or PTX when c->is_ptx) with the device runtime for arch
 * ("sm_90"), replacing c->binary with the linked cubin (or PTX for compute_XY targets). *ms gets the
 * link time. KJ_ERR_LINK with nvJitLink's log on failure. */
kj_status kj__link_devrt(const char *arch, kj__compiled *c, double *ms);

#endif
