/* kernjit list: the built-in kernels and their metadata. */
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: kernjit list [KERNEL|FILE.cu]... [--json]\n"
           "\n"
           "Shows each kernel's entries and macros with their allowed values and defaults;\n"
           "tunables (the knobs `kernjit tune` varies) are marked; and the rest of its\n"
           "metadata: requirements between values, each entry's dynamic shared memory,\n"
           "carveout and early launch (pdl). Without arguments, every built-in kernel; a\n"
           "name found as NAME.cu on KERNJIT_PATH is listed from there.\n");
}

/* The launch attributes the metadata gives each entry, one line per entry that has any. */
static void show_entry_attributes(const kj_kernel_desc *d) {
    for (size_t i = 0; i < kj_desc_entry_count(d); i++) {
        const char *e = kj_desc_entry(d, i), *shared = kj_desc_entry_shared_dynamic(d, e);
        int carveout = kj_desc_entry_carveout(d, e), pdl = kj_desc_entry_pdl(d, e);
        if (!shared && carveout == KJ_CARVEOUT_NONE && !pdl) continue;
        printf("  %s:", e);
        const char *sep = " ";
        if (shared) printf("%sdynamic shared memory %s bytes", sep, shared), sep = "; ";
        if (carveout == KJ_CARVEOUT_DRIVER) printf("%scarveout: the driver's choice", sep), sep = "; ";
        else if (carveout >= 0) printf("%scarveout %d%% shared", sep, carveout), sep = "; ";
        if (pdl) printf("%searly launch (pdl: waits for the kernel before it)", sep);
        printf("\n");
    }
}

static int show(const char *name, int json) {
    kj_kernel_desc *d;
    kj_status s = kj_describe(NULL, name, &d);
    if (s != KJ_OK) return cli_fail("list", s);
    if (json) {
        json_begin_object();
        json_fields("name=%s source=%s summary=%s uses_device_runtime?=%d", kj_desc_name(d), kj_desc_origin(d),
                    kj_desc_summary(d), kj_desc_needs_device_runtime(d));
        if (kj_desc_pending_launches(d)) json_uint("pending_launches", kj_desc_pending_launches(d));
        json_begin_array("entries");
        for (size_t i = 0; i < kj_desc_entry_count(d); i++) json_string(NULL, kj_desc_entry(d, i));
        json_end_array();
        json_begin_array("requires");
        for (size_t i = 0; i < kj_desc_require_count(d); i++) json_string(NULL, kj_desc_require(d, i));
        json_end_array();
        json_begin_array("entry_attributes");
        for (size_t i = 0; i < kj_desc_entry_count(d); i++) {
            const char *e = kj_desc_entry(d, i), *shared = kj_desc_entry_shared_dynamic(d, e);
            int carveout = kj_desc_entry_carveout(d, e);
            json_begin_object();
            json_string("entry", e);
            json_bool("pdl", kj_desc_entry_pdl(d, e));
            json_string("shared_dynamic_bytes_expression", shared);
            if (carveout >= 0) json_int("carveout_percent", carveout);
            else json_null("carveout_percent");
            json_bool("carveout_by_driver", carveout == KJ_CARVEOUT_DRIVER); /* a line saying "driver" */
            json_end_object();
        }
        json_end_array();
        json_begin_array("params");
        for (size_t i = 0; i < kj_desc_param_count(d); i++) {
            kj_param_info p = KJ_PARAM_INFO_INIT;
            kj_desc_param(d, i, &p);
            json_begin_object();
            json_string("name", p.name);
            json_string("default", p.default_value);
            json_bool("tunable", p.tunable);
            json_bool("launch", p.launch);
            json_begin_array("values");
            for (size_t v = 0; v < p.value_count; v++) json_string(NULL, p.values[v]);
            json_end_array();
            json_end_object();
        }
        json_end_array();
        json_end_object();
    } else {
        printf("%s  (%s)\n", kj_desc_name(d), kj_desc_origin(d));
        if (*kj_desc_summary(d)) printf("  %s\n", kj_desc_summary(d));
        printf("  entries:");
        for (size_t i = 0; i < kj_desc_entry_count(d); i++) printf(" %s", kj_desc_entry(d, i));
        printf("\n");
        for (size_t i = 0; i < kj_desc_require_count(d); i++) printf("  requires %s\n", kj_desc_require(d, i));
        show_entry_attributes(d);
        if (kj_desc_needs_device_runtime(d))
            printf("  uses dynamic parallelism (linked with the device runtime; pending launches %llu)\n",
                   (unsigned long long)kj_desc_pending_launches(d));
        for (size_t i = 0; i < kj_desc_param_count(d); i++) {
            kj_param_info p = KJ_PARAM_INFO_INIT;
            kj_desc_param(d, i, &p);
            printf("  -D %-14s", p.name);
            for (size_t v = 0; v < p.value_count; v++) printf(" %s", p.values[v]);
            printf("   (default %s%s)\n", p.default_value,
                   p.launch    ? ", tunable, of the launch alone"
                   : p.tunable ? ", tunable"
                               : "");
        }
        printf("\n");
    }
    kj_desc_free(d);
    return EXIT_OK;
}

typedef struct line {
    int json, count;
    char **names; /* the kernels named (none: every built-in) */
} line;

static int option(void *user, int opt, char *arg) {
    (void)arg;
    if (opt == 'h') return help(), CLI_DONE;
    ((line *)user)->json = 1;
    return EXIT_OK;
}

static int names(void *user, int count, char **args) {
    line *l = user;
    l->count = count;
    l->names = args;
    return EXIT_OK;
}

int cmd_list(int argc, char **argv) {
    static const cli_option_set set = {"json=j help=h", option, 0, names};
    line l = {0};
    int rc = cli_getopt("list", argc, argv, &set, 1, &l), json = l.json;
    if (rc != EXIT_OK) return rc == CLI_DONE ? EXIT_OK : rc;
    if (json) {
        json_begin_object();
        json_begin_array("kernels");
    }
    if (l.count) {
        for (int i = 0; i < l.count && rc == EXIT_OK; i++) rc = show(cli_kernel_name(l.names[i]), json);
    } else {
        for (size_t i = 0; kj_builtin_name(i) && rc == EXIT_OK; i++) rc = show(kj_builtin_name(i), json);
    }
    if (json) {
        json_end_array();
        json_end_object();
    }
    return rc;
}
