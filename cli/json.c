/* The JSON writer of --json (docs/json.md): one document on stdout, its "error" after whatever the
 * command wrote, strings always valid UTF-8; and the capture that keeps device printf out of it. */
#include "cli.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_json;

#define JSON_MAX_DEPTH 64

static struct {
    char command[128];
    int depth;                   /* open objects and arrays; 1: inside the document */
    char closer[JSON_MAX_DEPTH]; /* '}' or ']' for each */
    int need_comma[JSON_MAX_DEPTH];
    int began; /* the document was begun */
} json;

void json_command(const char *name) { snprintf(json.command, sizeof json.command, "%s", name); }

static void json_escaped(const char *s);

static void json_key(const char *key) {
    if (json.need_comma[json.depth]) fputc(',', stdout);
    json.need_comma[json.depth] = 1;
    if (key) {
        json_escaped(key);
        fputc(':', stdout);
    }
}

/* The length of the valid UTF-8 sequence at p (1 to 4), 0 when it is not one (a stray byte, an
 * overlong form, a surrogate, beyond U+10FFFF). */
static int utf8_length(const unsigned char *p) {
    if (p[0] < 0x80) return 1;
    int n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))) return 0;
    if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))) return 0;
    return n;
}

/* A JSON string, always valid UTF-8: a byte that is not part of a valid sequence (a path in another
 * encoding) is written as the code point of the same value, \u00NN, so nothing is lost or invalid. */
void json_escape_to(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p >= 0x80) {
            int n = utf8_length(p);
            if (n) {
                fwrite(p, 1, (size_t)n, f);
                p += n - 1;
            } else {
                fprintf(f, "\\u%04x", *p);
            }
            continue;
        }
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void json_escaped(const char *s) { json_escape_to(stdout, s); }

/* An object or array under key (NULL: at the top or in an array). */
static void json_open(const char *key, char bracket) {
    assert(json.depth + 1 < JSON_MAX_DEPTH);
    json_key(key);
    fputc(bracket, stdout);
    json.depth++;
    json.closer[json.depth] = bracket == '{' ? '}' : ']';
    json.need_comma[json.depth] = 0;
}
static void json_close(void) {
    fputc(json.closer[json.depth], stdout);
    json.depth--;
}

/* The document's start: {"schema":1,"command":"..."} (the command null when none was recognized). */
static void json_begin_document(void) {
    assert(!json.began); /* one document per run */
    json.began = 1;
    json_open(NULL, '{');
    json_int("schema", CLI_JSON_SCHEMA);
    if (*json.command) json_string("command", json.command);
    else json_null("command");
}

void json_begin_object(void) {
    if (json.depth == 0) json_begin_document();
    else json_open(NULL, '{');
}
void json_object_in(const char *key) { json_open(key, '{'); }
void json_end_object(void) {
    assert(json.depth > 0 && json.closer[json.depth] == '}');
    if (json.depth > 1) json_close(); /* the document itself: json_finish */
}
void json_begin_array(const char *key) {
    assert(json.depth > 0); /* there are no documents but objects: they can gain fields */
    json_open(key, '[');
}
void json_end_array(void) {
    assert(json.depth > 1 && json.closer[json.depth] == ']');
    json_close();
}
void json_string(const char *key, const char *value) {
    json_key(key);
    if (value) json_escaped(value);
    else fputs("null", stdout);
}
void json_int(const char *key, long long v) {
    json_key(key);
    printf("%lld", v);
}
void json_uint(const char *key, unsigned long long v) {
    json_key(key);
    printf("%llu", v);
}
void json_double(const char *key, double v) {
    json_key(key);
    if (!isfinite(v)) {
        fputs("null", stdout);
        return;
    }
    /* the shortest form that reads back as the same double */
    char buf[32];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, stdout);
}
void json_bool(const char *key, int v) {
    json_key(key);
    fputs(v ? "true" : "false", stdout);
}
void json_null(const char *key) {
    json_key(key);
    fputs("null", stdout);
}
void json_raw(const char *key, const char *literal) {
    json_key(key);
    fputs(literal, stdout);
}
void json_fields(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    for (const char *p = format; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        const char *eq = strchr(p, '='), *conv = eq + 2;
        assert(eq && eq[1] == '%');
        char key[64];
        int is_bool = eq[-1] == '?';
        snprintf(key, sizeof key, "%.*s", (int)(eq - p - is_bool), p);
        int longs = 0, size = 0;
        for (; *conv == 'l' || *conv == 'h' || *conv == 'z'; conv++) {
            longs += *conv == 'l';
            size |= *conv == 'z';
        }
        switch (*conv) {
        case 's': json_string(key, va_arg(ap, const char *)); break;
        case 'g': json_double(key, va_arg(ap, double)); break;
        case 'd': {
            long long v = size         ? (long long)va_arg(ap, ptrdiff_t)
                          : longs == 2 ? va_arg(ap, long long)
                          : longs == 1 ? va_arg(ap, long)
                                       : va_arg(ap, int);
            if (is_bool) json_bool(key, v != 0);
            else json_int(key, v);
            break;
        }
        case 'u':
            json_uint(key, size         ? va_arg(ap, size_t)
                           : longs == 2 ? va_arg(ap, unsigned long long)
                           : longs == 1 ? va_arg(ap, unsigned long)
                                        : va_arg(ap, unsigned));
            break;
        default: assert(!"json_fields: a conversion it does not take");
        }
        p = conv + 1;
    }
    va_end(ap);
}

void json_macros(const char *key, const char *macros) {
    json_object_in(key);
    for (const char *m = macros; m && *m;) {
        size_t n = strcspn(m, " ");
        const char *eq = memchr(m, '=', n);
        if (eq) {
            char name[256], value[1100];
            snprintf(name, sizeof name, "%.*s", (int)(eq - m), m);
            snprintf(value, sizeof value, "%.*s", (int)(n - (size_t)(eq - m) - 1), eq + 1);
            json_string(name, value);
        }
        m += n + (m[n] == ' ');
    }
    json_end_object();
}

void json_arch(const char *key, int cc_major, int cc_minor) {
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d", cc_major, cc_minor);
    json_string(key, arch);
}

void json_cuda_version(const char *key, int version) {
    char text[32];
    snprintf(text, sizeof text, "%d.%d", version / 1000, version % 1000 / 10);
    json_string(key, text);
}

/* A failure under --json, kept for json_finish (the first one only: later ones follow from it). */
static struct {
    const char *status;
    int class_;
    char *message;
} json_failure;

void json_error(const char *cmd, const char *status, int class_, const char *message) {
    if (!cli_json || json_failure.class_) return;
    if (!*json.command && cmd) json_command(cmd);
    json_failure.status = status;
    json_failure.class_ = class_;
    json_failure.message = strdup(message);
}

void json_finish(int exit_code) {
    if (exit_code != EXIT_OK && cli_json && !json_failure.class_)
        json_error(NULL, NULL, exit_code, "the command failed: its messages are on stderr");
    if (json_failure.class_ && !json.began) json_begin_document();
    if (!json.began) return;
    while (json.depth > 1) json_close(); /* what the command was writing when it failed */
    if (json_failure.class_) {
        json_object_in("error");
        json_string("status", json_failure.status);
        json_int("class", json_failure.class_);
        json_string("message", json_failure.message ? json_failure.message : "out of host memory");
        json_close();
        free(json_failure.message);
    }
    json_close();
    fputc('\n', stdout);
    fflush(stdout);
}

void cli_capture_begin(cli_capture *c) {
    c->saved_fd = -1;
    c->file = NULL;
    if (!cli_json) return;
    fflush(stdout);
    c->file = tmpfile();
    if (!c->file) return; /* the device's lines then go to stdout, as without --json */
    c->saved_fd = dup(STDOUT_FILENO);
    if (c->saved_fd < 0 || dup2(fileno(c->file), STDOUT_FILENO) < 0) {
        if (c->saved_fd >= 0) close(c->saved_fd);
        c->saved_fd = -1;
        fclose(c->file);
        c->file = NULL;
    }
}

void cli_capture_end(cli_capture *c) {
    if (c->saved_fd < 0) return;
    fflush(stdout);
    dup2(c->saved_fd, STDOUT_FILENO);
    close(c->saved_fd);
    c->saved_fd = -1;
}

void json_captured(const char *key, const cli_capture *c) {
    json_begin_array(key);
    char line[4096];
    if (c->file) rewind(c->file);
    while (c->file && fgets(line, sizeof line, c->file)) {
        line[strcspn(line, "\n")] = '\0';
        json_string(NULL, line);
    }
    json_end_array();
}

void cli_capture_free(cli_capture *c) {
    cli_capture_end(c);
    if (c->file) fclose(c->file);
    c->file = NULL;
}
