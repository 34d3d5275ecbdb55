/* Files the commands read and write (files.c). Part of cli.h, which includes it. */
#ifndef KJ_CLI_FILES_H
#define KJ_CLI_FILES_H

#include <stddef.h>
#include <stdio.h>

/* Opens path for reading, a regular file only: with O_NONBLOCK, so that a FIFO (whose open waits for
 * a writer, forever) is refused by fstat rather than waited on. NULL with *why ("not a regular
 * file", or strerror) when it cannot. */
FILE *cli_open_regular(const char *path, const char **why);

/* Creates a temporary file beside path (in its folder, so that a rename puts it in place), under a
 * name no other process uses: a fixed name (pid) that a killed writer left would block every later
 * one where process ids repeat, as in containers. Returns the descriptor, its name in tmp; -1 with
 * errno. */
int cli_create_beside(const char *path, char *tmp, size_t size);

/* Writes a file the user named (--save, -o): to a temporary file beside it, renamed over it, so that a
 * write that fails (a full disk) leaves the previous file whole and no partial one. EXIT_OK, or the
 * failure said (KJ_ERR_IO). */
int cli_write_file(const char *cmd, const char *path, const void *data, size_t size);

/* A file the command will write at the end (what: "--plot FILE", "--save 2=FILE"), checked before it
 * does any work: its path must fit PATH_MAX and its name NAME_MAX, it must be a regular file if it
 * exists (never a device, a FIFO or a folder), and its folder must exist and be writable, else a
 * usage error naming it (EXIT_USAGE). */
int cli_check_output_folder(const char *cmd, const char *what, const char *path);

#endif
