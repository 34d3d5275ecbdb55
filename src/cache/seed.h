/* The seed tier: read-only folders of cache entries built ahead of time (`kernjit seed`, or an
 * install's share/kernjit/seed), which an application or an install carries so that the first call
 * of a kernel in a new process loads a binary instead of compiling it. Looked up after the memory
 * map and before the disk cache, by the key computed from the request's inputs now: a seed never
 * serves a binary for other inputs (headers, options, toolkit, target), it simply has no entry of
 * that key. A folder holds entries in the disk cache's layout (<folder>/<cache_arch>/<key>.cubin),
 * each verified as the disk cache verifies its own (header, length, checksum, key), and, when a
 * secret is set, signed as a remote value is (sign.h: the name is the remote's for the entry). A hit
 * is read from the seed's file and nothing is copied into the disk cache. */
#ifndef KJ_SEED_H
#define KJ_SEED_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "kernjit.h"
#include "base/log.h"

typedef struct kj__seed kj__seed;

/* The folders, in the order they are searched: options->seed_dirs (colon-separated; NULL: the
 * variable KERNJIT_SEED_PATH), then the installed seed (kj__seed_installed_dir). An empty value ("")
 * turns the tier off, the installed seed too. A listed folder that does not exist, or that the folder
 * rules refuse (cache.h), is a warning and is left out; the installed one is left out silently when it
 * is not there. The secret: KERNJIT_SEED_SECRET, else the remote tier's (remote_secret: that of a
 * configured remote, NULL when it has none), else with no remote configured options->remote_secret or
 * KERNJIT_REMOTE_SECRET; with one, every seed entry must be signed. *out is set even with no folder
 * (it keeps the secret, for kj__seed_sign). KJ_ERR_USAGE: a secret that is not allowed (named). */
kj_status kj__seed_open(const kj_runtime_options *options, int remote_configured, const uint8_t *remote_secret,
                        size_t remote_secret_len, const kj__logger *log, kj__seed **out);
void kj__seed_close(kj__seed *seed);

/* The folders in use: their count, and folder i (NULL past the end). */
size_t kj__seed_count(const kj__seed *seed);
const char *kj__seed_dir(const kj__seed *seed, size_t i);
/* 1 when entries must be signed (a secret is set). */
int kj__seed_signed(const kj__seed *seed);

/* The installed seed folder: <datadir>/kernjit/seed of the install this library belongs to, found
 * from the library's own file (the program's, when libkernjit.a is linked into it), as an rpath's
 * $ORIGIN is. malloc'd; NULL when it cannot be told. */
char *kj__seed_installed_dir(void);

/* The entry for key in the first folder that has a valid one: as kj__cache_load (payload,
 * description, flags; path the seed file's). A refused entry (damaged, of another key or format,
 * unsigned or wrongly signed under a secret) is a warning and the next folder is tried. KJ__MISS
 * when no folder has it; KJ__BAD when none has a valid one and some were refused. */
kj__lookup kj__seed_load(kj__seed *seed, const char *arch, const kj__key *key, char **payload, size_t *len,
                         uint32_t *flags, char **description, char path[PATH_MAX]);

/* Signs every entry of the cache folder that is not signed under the seed's secret yet (making it a
 * seed that runtimes with the secret accept), in place and atomically; *count the entries signed
 * now. KJ_ERR_USAGE when no secret is set; KJ_ERR_UNSUPPORTED without libcrypto; KJ_ERR_IO when an
 * entry cannot be rewritten (named). */
kj_status kj__seed_sign(const kj__seed *seed, kj__cache *cache, uint64_t *count);

#endif
