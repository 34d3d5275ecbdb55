/* Commands made of subcommands (kernjit, kernjit run, kernjit bench): a table of names, one dispatch. */
#ifndef KJ_DISPATCH_H
#define KJ_DISPATCH_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

typedef struct cli_subcommand {
    const char *name;
    cli_command *fn;
    const char *summary; /* one line of the help's list */
} cli_subcommand;

typedef struct cli_dispatch {
    const char *parent; /* "kernjit run": a subcommand's argv[0] becomes "kernjit run NAME" */
    const char *noun;   /* "kernel": "unknown kernel 'x': the kernels are a, b" */
    const char *usage;  /* the help's lines before the list, which starts right after */
    const char *notes;  /* the help's lines after the list, or NULL */
    const cli_subcommand *list;
    size_t count;
} cli_dispatch;

#define CLI_DISPATCH_LIST(table) (table), (sizeof(table) / sizeof((table)[0]))

/* The help: usage, then "  NAME  summary" a line (names in one column), then the notes. */
void cli_dispatch_help(const cli_dispatch *d, FILE *out);

/* argv[1] names the subcommand (with '-' or '_' alike: cli_same_name): runs it with argv + 1 (its argv[0] renamed), and returns its exit code.
 * No name: the help on stderr, EXIT_USAGE; --help or -h: the help on stdout, EXIT_OK; an unknown name:
 * a usage error listing the names. */
int cli_dispatch_run(const cli_dispatch *d, int argc, char **argv);

#endif
