/* kernjit cache: path, list, stats, clear, push, pull. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void help(void) {
    printf("usage: kernjit cache path|list|stats|clear [--json]\n"
           "       kernjit cache push|pull [KERNEL] [--json]\n"
           "\n"
           "  path   the cache folder ($KERNJIT_CACHE_DIR, $XDG_CACHE_HOME/kernjit or\n"
           "         ~/.cache/kernjit)\n"
           "  list   every entry, most recently used first, verified (header and checksum)\n"
           "  stats  entries, bytes, and the bound that least-recently-used eviction keeps\n"
           "         ($KERNJIT_CACHE_MAX); the seed folders read before the cache\n"
           "         ($KERNJIT_SEED_PATH, the install's; see kernjit seed); with a remote\n"
           "         cache ($KERNJIT_REMOTE_CACHE), its state, the server, the round\n"
           "         trip, and the fleet's counters: hits, misses, waits, pushes,\n"
           "         refusals, errors, lookup latency, traffic\n"
           "  clear  remove every entry (of the disk cache; the remote's entries expire or\n"
           "         are evicted)\n"
           "  push   send the disk cache's entries (all, or KERNEL's) to the remote cache,\n"
           "         skipping those it has (the same bytes, or a value that verifies: one\n"
           "         signed with a rotated secret is replaced)\n"
           "  pull   fetch the remote cache's entries (all, or KERNEL's) that the disk cache\n"
           "         lacks, verified\n"
           "push and pull exit 1 when the server cannot be reached.\n");
}

typedef struct {
    int json;
    unsigned long long count;
} list_state;

static void visit(const kj_cache_entry *e, void *user) {
    list_state *st = user;
    st->count++;
    if (st->json) {
        json_begin_object();
        json_fields("entry_path=%s arch=%s key=%s size_bytes=%" PRIu64 " modified_unix_s=%" PRId64
                    " valid?=%d description=%s kernel=%s entry=%s",
                    e->path, e->arch, e->key, e->bytes, e->mtime, e->valid, e->description, e->kernel, e->entry);
        json_macros("macros", e->macros);
        json_begin_array("options");
        for (const char *o = e->options; *o;) {
            size_t n = strcspn(o, " ");
            char one[1100];
            snprintf(one, sizeof one, "%.*s", (int)n, o);
            json_string(NULL, one);
            o += n + (o[n] == ' ');
        }
        json_end_array();
        json_end_object();
    } else {
        char when[32];
        time_t t = (time_t)e->mtime;
        strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&t));
        printf("%s  %s  %s %9llu B  %s  %s%s%s%s%s%s%s\n", e->arch, e->key, when, (unsigned long long)e->bytes,
               e->valid ? "ok     " : "DAMAGED", *e->kernel ? e->kernel : "?", *e->entry ? ":" : "", e->entry,
               *e->macros ? "  " : "", e->macros, *e->options ? "  " : "", e->options);
    }
}

static int transfer(kj_runtime *rt, const char *action, const char *kernel, int json) {
    kj_remote_transfer t = KJ_REMOTE_TRANSFER_INIT;
    int push = strcmp(action, "push") == 0;
    kj_status s = push ? kj_remote_push(rt, kernel, &t) : kj_remote_pull(rt, kernel, &t);
    if (s != KJ_OK) return cli_fail("cache", s);
    if (json) {
        json_begin_object();
        json_string("kernel", kernel);
        json_transfer_fields(&t);
        json_end_object();
    } else {
        printf("%s %llu of %llu entr%s%s%s (%llu bytes); %llu already there", push ? "pushed" : "pulled",
               (unsigned long long)t.moved, (unsigned long long)t.entries, t.entries == 1 ? "y" : "ies",
               kernel ? " of " : "", kernel ? kernel : "", (unsigned long long)t.bytes, (unsigned long long)t.present);
        if (t.refused) printf(", %llu refused", (unsigned long long)t.refused);
        if (t.failed) printf(", %llu failed (see the warnings)", (unsigned long long)t.failed);
        printf("\n");
    }
    return EXIT_OK;
}

/* The seed folders the runtime reads (kj_seed_dir), as "seed_dirs" under --json, else a line each. */
static void seeds(const kj_runtime *rt, int json) {
    if (json) {
        json_begin_array("seed_dirs");
        for (size_t i = 0; kj_seed_dir(rt, i); i++) json_string(NULL, kj_seed_dir(rt, i));
        json_end_array();
        return;
    }
    for (size_t i = 0; kj_seed_dir(rt, i); i++)
        printf("  seed    %s (read only, searched before the cache)\n", kj_seed_dir(rt, i));
}

static int stats(kj_runtime *rt, const char *dir, int json) {
    uint64_t entries, bytes, max;
    kj_status s = kj_cache_usage(rt, &entries, &bytes, &max);
    if (s != KJ_OK) return cli_fail("cache", s);
    kj_remote_info remote = KJ_REMOTE_INFO_INIT;
    kj_remote_query(rt, &remote);
    if (json) {
        json_begin_object();
        json_fields("cache_dir=%s entries=%" PRIu64 " size_bytes=%" PRIu64 " max_bytes=%" PRIu64, dir, entries, bytes,
                    max);
        seeds(rt, 1);
        cli_print_remote(&remote, 1);
        json_end_object();
    } else {
        printf("%s\n  entries %llu\n  bytes   %llu (%.1f MiB)\n  bound   %llu (%.1f MiB; least recently used "
               "entries are evicted beyond it)\n",
               dir, (unsigned long long)entries, (unsigned long long)bytes, bytes / 1048576.0, (unsigned long long)max,
               max / 1048576.0);
        seeds(rt, 0);
        cli_print_remote(&remote, 0);
    }
    return EXIT_OK;
}

typedef struct line {
    int json, count;
    char **args; /* the action, and push's or pull's kernel */
} line;

static int option(void *user, int opt, char *arg) {
    (void)arg;
    if (opt == 'h') return help(), CLI_DONE;
    ((line *)user)->json = 1;
    return EXIT_OK;
}

static int operands(void *user, int count, char **args) {
    line *l = user;
    l->count = count;
    l->args = args;
    return count ? EXIT_OK : cli_usage("cache", "give one action: path, list, stats, clear, push or pull");
}

int cmd_cache(int argc, char **argv) {
    static const cli_option_set set = {"json=j help=h", option, 0, operands};
    line l = {0};
    int c = cli_getopt("cache", argc, argv, &set, 1, &l), json = l.json;
    if (c != EXIT_OK) return c == CLI_DONE ? EXIT_OK : c;
    const char *action = l.args[0];
    static const char *actions[] = {"path", "list", "stats", "clear", "push", "pull"};
    int known = 0, moves = strcmp(action, "push") == 0 || strcmp(action, "pull") == 0;
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) known |= strcmp(action, actions[i]) == 0;
    if (!known)
        return cli_usage("cache", "unknown action '%s': the actions are path, list, stats, clear, push, pull", action);
    if (l.count > (moves ? 2 : 1))
        return cli_usage("cache",
                         moves ? "%s takes at most one kernel (got '%s' too)" : "%s takes no argument (got '%s')",
                         action, l.args[moves ? 2 : 1]);
    const char *kernel = moves && l.count > 1 ? cli_kernel_name(l.args[1]) : NULL;
    char command[32];
    snprintf(command, sizeof command, "cache %s", action);
    json_command(command);

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 1, NULL, 0); /* the cache needs no device */
    if (s != KJ_OK) return cli_fail("cache", s);
    const char *dir = kj_cache_dir(rt);
    int rc = EXIT_OK;
    if (!dir) {
        rc = cli_error_as("cache", KJ_ERR_NOT_FOUND, "no usable cache folder (see the warning above)");
    } else if (moves) {
        rc = transfer(rt, action, kernel, json);
    } else if (strcmp(action, "path") == 0) {
        if (json) {
            json_begin_object();
            json_string("cache_dir", dir);
            seeds(rt, 1);
            json_end_object();
        } else {
            printf("%s\n", dir);
        }
    } else if (strcmp(action, "list") == 0) {
        list_state st = {json, 0};
        if (json) {
            json_begin_object();
            json_string("cache_dir", dir);
            json_begin_array("entries");
        }
        s = kj_cache_list(rt, visit, &st);
        if (json) {
            json_end_array();
            json_end_object();
        } else if (s == KJ_OK) {
            printf("%llu entr%s in %s\n", st.count, st.count == 1 ? "y" : "ies", dir);
        }
        if (s != KJ_OK) rc = cli_fail("cache", s);
    } else if (strcmp(action, "stats") == 0) {
        rc = stats(rt, dir, json);
    } else {
        uint64_t entries, bytes;
        s = kj_cache_clear(rt, &entries, &bytes);
        if (s != KJ_OK) {
            rc = cli_fail("cache", s);
        } else if (json) {
            json_begin_object();
            json_fields("cache_dir=%s removed_entries=%" PRIu64 " removed_bytes=%" PRIu64, dir, entries, bytes);
            json_end_object();
        } else {
            printf("removed %llu entr%s (%llu bytes) from %s\n", (unsigned long long)entries,
                   entries == 1 ? "y" : "ies", (unsigned long long)bytes, dir);
        }
    }
    kj_runtime_destroy(rt);
    return rc;
}
