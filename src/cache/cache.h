/* The disk cache: <dir>/sm_XY/<key>.cubin, one folder per compute capability.
 *
 * An entry is a 64-byte header (magic, format version, flags, lengths, key, XXH3-128 checksum of the
 * rest), a description (what was compiled, for `kernjit cache list`) and the binary. Entries are
 * written to a temporary file in the same folder and renamed into place, so a reader sees a whole
 * entry or none; readers verify everything and treat a bad entry as a miss. The folders are created
 * 0700, and a folder that another user owns or others may write to is refused: cubins are code that
 * will run. Symbolic links are never followed below the cache root. Least-recently-used entries are
 * evicted (by modification time, which a hit refreshes) to keep the total under a bound. */
#ifndef KJ_CACHE_H
#define KJ_CACHE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "jit/key.h"
#include "base/log.h"

#define KJ_CACHE_HEADER_BYTES 64
#define KJ_CACHE_FLAG_PTX 1u
#define KJ_CACHE_DEFAULT_MAX (1ull << 30)

typedef struct kj__cache kj__cache;

/* The folder to use when none is given: $KERNJIT_CACHE_DIR, $XDG_CACHE_HOME/kernjit,
 * $HOME/.cache/kernjit. NULL when none can be found (no HOME). malloc'd. */
char *kj__cache_default_dir(void);

/* A folder of kernjit's own files (the cache, a seed, the tuning database's), as the messages that
 * refuse it name it and say what to do about it. */
typedef struct kj__private_dir {
    const char *what;  /* "cache folder" */
    const char *stake; /* why it matters: "cached binaries are code that will run" */
    const char *moves; /* what a link in its place would redirect: "writes", "reads" */
    const char *fix_link, *fix_parent, *fix_owner, *fix_mode, *fix_other; /* the fix for each refusal */
    int root_may_own; /* read-only folders an install ships: root's are trusted too */
} kj__private_dir;
/* Checks dir as the cache folder is checked (see kj__cache_open), creating it and its missing parents
 * 0700 when create is set (a folder that does not exist is otherwise refused). 0 when it can be used;
 * else -1 with why (a sentence naming the folder and the fix). */
int kj__private_dir_check(const kj__private_dir *k, const char *dir, int create, char *why, size_t size);

/* Opens (creating) the cache at dir. Returns NULL after a warning when the folder cannot be created
 * or is not safe to use; the caller then compiles in memory. */
kj__cache *kj__cache_open(const char *dir, uint64_t max_bytes, const kj__logger *log);
void kj__cache_close(kj__cache *cache);
const char *kj__cache_root(const kj__cache *cache);
uint64_t kj__cache_max_bytes(const kj__cache *cache);

typedef enum kj__lookup { KJ__MISS = 0, KJ__HIT = 1, KJ__BAD = 2 } kj__lookup;

/* Reads and verifies the entry for key. On KJ__HIT, *payload (malloc'd), *len and *flags are set and
 * the entry's time is refreshed; *description (malloc'd) when description is not NULL. KJ__BAD: the entry was damaged, not a regular file of ours, or a
 * symbolic link; it has been removed and a warning logged. path receives the entry's path. */
kj__lookup kj__cache_load(kj__cache *cache, const char *arch, const kj__key *key, char **payload, size_t *len,
                          uint32_t *flags, char **description, char path[PATH_MAX]);

/* A seed folder (seed.h): read, never written; root may own it and its entries (an install's), and
 * the folder rules above apply, read-side. NULL when it cannot be used (a warning names why) or, with
 * *missing set and no warning, when there is no such folder. */
kj__cache *kj__cache_open_seed(const char *dir, const kj__logger *log, int *missing);
/* The entry file for key as it is (*data malloc'd, *size): no check of its content, no removal, no
 * time refreshed. KJ__MISS when there is none; KJ__BAD after a warning when it is a link, not a
 * regular file of a trusted owner, or one that others may write (a seed's). */
kj__lookup kj__cache_read(kj__cache *cache, const char *arch, const kj__key *key, uint8_t **data, size_t *size,
                          char path[PATH_MAX]);

/* Writes the entry atomically, then evicts old entries if the bound is passed. Returns 0, or -1 after
 * a warning (no space, read-only, ...) leaving nothing behind. */
int kj__cache_store(kj__cache *cache, const char *arch, const kj__key *key, const char *description,
                    const void *payload, size_t len, uint32_t flags, char path[PATH_MAX]);

/* The same for bytes already formatted as an entry (a signed one: sign.h), as they are. Not for a
 * seed folder, which is never written (-1). */
int kj__cache_store_raw(kj__cache *cache, const char *arch, const kj__key *key, const uint8_t *data, size_t size,
                        char path[PATH_MAX]);

/* Entries, most recently used first. */
typedef struct kj__cache_item {
    char path[PATH_MAX];
    char arch[16];
    char key[33];
    char *description; /* malloc'd, "" when unreadable */
    uint64_t bytes;
    int64_t mtime;
    int valid;
} kj__cache_item;
kj_status kj__cache_items(kj__cache *cache, int verify, kj__cache_item **items, size_t *count);
void kj__cache_items_free(kj__cache_item *items, size_t count);

/* Removes every entry, and the temporary files of writers that stopped more than an hour ago (a newer
 * one belongs to a write in progress: removing it would fail that store). */
kj_status kj__cache_clear(kj__cache *cache, uint64_t *entries, uint64_t *bytes);

/* Parses an entry held in memory: 0 when header and checksum verify and the key matches (key may be
 * NULL to skip that check). An entry followed by a signature trailer (sign.h) parses too: whoever
 * requires signatures checks it first. The outputs point into data. */
int kj__cache_parse_entry(const uint8_t *data, size_t size, const kj__key *key, const char **description,
                          size_t *description_len, const uint8_t **payload, size_t *payload_len, uint32_t *flags);

/* What a lookup hands out of an entry parsed in data (malloc'd; desc and payload_in point into it, as
 * kj__cache_parse_entry set them): *payload, data itself with the binary (len bytes) moved to its
 * front, and *description (malloc'd) when description is not NULL. data is the caller's no more,
 * either way: -1 when out of memory (data freed). */
int kj__cache_entry_take(uint8_t *data, const char *desc, size_t desc_len, const uint8_t *payload_in, size_t len,
                         char **payload, char **description);

/* The entry's bytes, as a store writes them (and the remote cache holds them): malloc'd, *size set.
 * NULL when out of memory or the payload is too large. */
uint8_t *kj__cache_format_entry(const kj__key *key, const char *description, const void *payload, size_t len,
                                uint32_t flags, size_t *size);
/* The kernel's name in an entry's description (its "kernel: NAME (...)" line), into out; "" when it
 * has none. */
void kj__cache_description_kernel(const char *description, char *out, size_t size);
/* The key an entry's header names, into *key: 0 when data is a whole, verified entry, else -1. */
int kj__cache_entry_key(const uint8_t *data, size_t size, kj__key *key);
/* The format version an entry's header declares; -1 when the data does not start as an entry does. */
int kj__cache_entry_version(const uint8_t *data, size_t size);

#endif
