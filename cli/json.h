/* The JSON writer of --json and the capture of device printf (json.c). Part of cli.h, which
 * includes it (and defines CLI_PRINTF). */
#ifndef KJ_CLI_JSON_H
#define KJ_CLI_JSON_H

#include <stdio.h>

/* ---- JSON (docs/json.md) --------------------------------------------------------------------
 * Under --json, stdout holds exactly one document, an object: {"schema": CLI_JSON_SCHEMA, "command":
 * "cache list", ...the command's fields}. A failure is in it too, last, as "error": {"status":
 * "KJ_ERR_...", "class": 2, "message": "..."} after whatever the command had written, with the same
 * exit code; the message also goes to stderr as text, as without --json. */
#define CLI_JSON_SCHEMA 1

/* Set by main when --json is on the command line, before any command parses it: from then on every
 * error (a usage error too, even one about the command's name) is written as a JSON document. */
extern int cli_json;
/* The command the document names ("run reduce"): the dispatcher sets it as it descends; a command
 * whose first argument is an action (cache list) or whose options pick another document (tune
 * --show) sets it itself, before the document begins. */
void json_command(const char *name);

/* The writer, to stdout, with commas handled. A key is NULL inside arrays. json_begin_object() at the
 * top begins the document (with "schema" and "command"); json_end_object() there leaves it open:
 * json_finish() ends it, after the command, so that a failure found after the output (a wrong result)
 * still lands in it. There are no documents but objects. */
void json_begin_object(void);
void json_end_object(void);
void json_begin_array(const char *key);
void json_end_array(void);
void json_object_in(const char *key);                 /* begins a nested object under key (key NULL inside arrays) */
void json_string(const char *key, const char *value); /* always valid UTF-8 (see json_escaped) */
void json_int(const char *key, long long value);
void json_uint(const char *key, unsigned long long value);
void json_double(const char *key, double value); /* the shortest form that reads back the same; null
                                                         when not finite */
void json_bool(const char *key, int value);
void json_null(const char *key);
void json_raw(const char *key, const char *literal); /* a value the caller formatted (a number) */
/* Several fields at once, keys and values from one printf format (checked by the compiler): "KEY=%CONV"
 * separated by spaces, one argument each. %s a string (NULL: null); %d %ld %lld %zd and %u %lu %llu
 * %zu integers; %g a double (json_double); a key ending in '?' is a bool from an int ("ok?=%d").
 * json_fields("n=%zu type=%s ok?=%d", n, "f32", 1) writes "n":N,"type":"f32","ok":true. */
void json_fields(const char *format, ...) CLI_PRINTF(1, 2);
/* A string as the writer writes it (quoted, escaped, valid UTF-8), to another file (a manifest). */
void json_escape_to(FILE *f, const char *s);
/* "NAME=VALUE NAME=VALUE" as an object {"NAME":"VALUE",...} under key: macro sets are objects. */
void json_macros(const char *key, const char *macros);
/* "sm_90" from a compute capability: every compute capability in the documents is written so. */
void json_arch(const char *key, int cc_major, int cc_minor);
/* A version as "MAJOR.MINOR" from CUDA's encoding (1000 * major + 10 * minor: 13000 -> "13.0"). */
void json_cuda_version(const char *key, int version);
/* After the command: closes what is open, adds the first failure as "error", and ends the document
 * with a newline. A command that failed (exit_code not 0) without saying why through cli_usage,
 * cli_fail or cli_error still gets an "error", pointing to stderr. Nothing is written without
 * --json, nor for --help. */
void json_finish(int exit_code);
/* A failure for the document's "error" (the first one only, kept for json_finish): the messages of
 * cli.c hand each one here. Nothing without --json. */
void json_error(const char *cmd, const char *status, int class_, const char *message);

/* Device printf writes to the process's stdout, which under --json holds the document: between
 * cli_capture_begin and cli_capture_end it goes to a temporary file instead, whose lines
 * json_captured writes as an array of strings under key (an empty one without --json);
 * cli_capture_free ends the capture if still on and frees it. */
typedef struct cli_capture {
    int saved_fd; /* stdout while captured; -1 when not capturing */
    FILE *file;
} cli_capture;
void cli_capture_begin(cli_capture *c);
void cli_capture_end(cli_capture *c);
void json_captured(const char *key, const cli_capture *c);
void cli_capture_free(cli_capture *c);

#endif
