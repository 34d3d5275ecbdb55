/* kernjit cache: path, list, stats, clear. */
#include <getopt.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void help(void) {
    printf("usage: kernjit cache path|list|stats|clear [--json]\n\n"
           "  path   the cache folder ($KERNJIT_CACHE_DIR, $XDG_CACHE_HOME/kernjit or ~/.cache/kernjit)\n"
           "  list   every entry, most recently used first, verified (header and checksum)\n"
           "  stats  entries, bytes, and the bound that least-recently-used eviction keeps ($KERNJIT_CACHE_MAX)\n"
           "  clear  remove every entry\n");
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
        json_string("path", e->path);
        json_string("arch", e->arch);
        json_string("key", e->key);
        json_uint("bytes", e->bytes);
        json_int("mtime", e->mtime);
        json_bool("valid", e->valid);
        json_string("description", e->description);
        json_string("kernel", e->kernel);
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
        printf("%s  %s  %s %9llu B  %s  %s%s%s%s%s\n", e->arch, e->key, when, (unsigned long long)e->bytes,
               e->valid ? "ok     " : "DAMAGED", *e->kernel ? e->kernel : "?", *e->macros ? "  " : "", e->macros,
               *e->options ? "  " : "", e->options);
    }
}

int cmd_cache(int argc, char **argv) {
    static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, c;
    while ((c = getopt_long(argc, argv, "hj", opts, NULL)) != -1) {
        if (c == 'j') json = 1;
        else if (c == 'h') return help(), EXIT_OK;
        else return cli_usage("cache", "unknown option");
    }
    if (optind != argc - 1) return cli_usage("cache", "give one action: path, list, stats or clear");
    const char *action = argv[optind];
    if (strcmp(action, "path") && strcmp(action, "list") && strcmp(action, "stats") && strcmp(action, "clear"))
        return cli_usage("cache", "unknown action '%s': the actions are path, list, stats, clear", action);

    kj_runtime *rt;
    kj_status s = cli_runtime(&rt, 1, NULL, 0); /* the cache needs no device */
    if (s != KJ_OK) return cli_fail("cache", s);
    const char *dir = kj_cache_dir(rt);
    int rc = EXIT_OK;
    if (!dir) {
        rc = cli_error("cache", "no usable cache folder (see the warning above)");
    } else if (strcmp(action, "path") == 0) {
        if (json) {
            json_begin_object();
            json_string("path", dir);
            json_end_object();
            json_done();
        } else {
            printf("%s\n", dir);
        }
    } else if (strcmp(action, "list") == 0) {
        list_state st = {json, 0};
        if (json) json_begin_array(NULL);
        s = kj_cache_list(rt, visit, &st);
        if (json) {
            json_end_array();
            json_done();
        } else if (s == KJ_OK) {
            printf("%llu entr%s in %s\n", st.count, st.count == 1 ? "y" : "ies", dir);
        }
        if (s != KJ_OK) rc = cli_fail("cache", s);
    } else if (strcmp(action, "stats") == 0) {
        uint64_t entries, bytes, max;
        s = kj_cache_usage(rt, &entries, &bytes, &max);
        if (s != KJ_OK) {
            rc = cli_fail("cache", s);
        } else if (json) {
            json_begin_object();
            json_string("path", dir);
            json_uint("entries", entries);
            json_uint("bytes", bytes);
            json_uint("max_bytes", max);
            json_end_object();
            json_done();
        } else {
            printf("%s\n  entries %llu\n  bytes   %llu (%.1f MiB)\n  bound   %llu (%.1f MiB; least recently used "
                   "entries are evicted beyond it)\n", dir, (unsigned long long)entries, (unsigned long long)bytes,
                   bytes / 1048576.0, (unsigned long long)max, max / 1048576.0);
        }
    } else {
        uint64_t entries, bytes;
        s = kj_cache_clear(rt, &entries, &bytes);
        if (s != KJ_OK) {
            rc = cli_fail("cache", s);
        } else if (json) {
            json_begin_object();
            json_uint("removed_entries", entries);
            json_uint("removed_bytes", bytes);
            json_end_object();
            json_done();
        } else {
            printf("removed %llu entr%s (%llu bytes) from %s\n", (unsigned long long)entries, entries == 1 ? "y" : "ies",
                   (unsigned long long)bytes, dir);
        }
    }
    kj_runtime_destroy(rt);
    return rc;
}
