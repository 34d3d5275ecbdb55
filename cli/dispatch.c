#include "dispatch.h"

#include <string.h>

void cli_dispatch_help(const cli_dispatch *d, FILE *out) {
    int width = 0;
    for (size_t i = 0; i < d->count; i++)
        if ((int)strlen(d->list[i].name) > width) width = (int)strlen(d->list[i].name);
    fputs(d->usage, out);
    for (size_t i = 0; i < d->count; i++) fprintf(out, "  %-*s  %s\n", width, d->list[i].name, d->list[i].summary);
    if (d->notes) fputs(d->notes, out);
}

int cli_dispatch_run(const cli_dispatch *d, int argc, char **argv) {
    if (argc < 2) {
        cli_dispatch_help(d, stderr);
        if (cli_json) { /* the help says it to people; the document, to a program */
            const char *cmd = strchr(d->parent, ' ');
            return cli_usage(cmd ? cmd + 1 : NULL, "which %s? the help above lists them", d->noun);
        }
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_dispatch_help(d, stdout);
        return EXIT_OK;
    }
    const char *cmd = strchr(d->parent, ' '); /* "kernjit run" -> "run"; the top level has none */
    for (size_t i = 0; i < d->count; i++)
        if (cli_same_name(argv[1], d->list[i].name)) {
            char name[128]; /* the JSON document's "command": "run reduce" */
            snprintf(name, sizeof name, "%s%s%s", cmd ? cmd + 1 : "", cmd ? " " : "", d->list[i].name);
            json_command(name);
            return d->list[i].fn(argc - 1, cli_name_argv0(argv + 1, d->parent));
        }
    char names[512] = "";
    for (size_t i = 0; i < d->count; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", d->list[i].name);
    if (argv[1][0] == '-') /* an option where the name belongs: "kernjit run --json" */
        return cli_usage(cmd ? cmd + 1 : NULL, "'%s' comes after the %s: %s NAME %s (the %ss are %s)", argv[1], d->noun,
                         d->parent, argv[1], d->noun, names);
    return cli_usage(cmd ? cmd + 1 : NULL, "unknown %s '%s': the %ss are %s", d->noun, argv[1], d->noun, names);
}
