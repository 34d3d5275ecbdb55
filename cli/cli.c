#include "cli.h"
#include "devices.h"
#include "kjtest.h"
#include "nvcc_options.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char **cli_name_argv0(char **argv, const char *parent) {
    /* getopt names argv[0] in its messages ("kernjit compile: unrecognized option '--x'"); the
     * strings live as long as the process, as argv does */
    static char names[4][64];
    static int next;
    char *name = names[next++ % 4];
    snprintf(name, sizeof names[0], "%s %s", parent, argv[0]);
    argv[0] = name;
    return argv;
}

/* Messages carry names and paths the user typed or a file held: a terminal escape sequence in one
 * must reach the terminal as text, never as a command. Control bytes but newline and tab are shown as
 * \xNN. */
static void put_message(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) fprintf(stderr, "\\x%02x", *p);
        else fputc(*p, stderr);
}

static void json_error(const char *cmd, const char *status, int class_, const char *message);

static cli_diversion *diversion;

void cli_divert(cli_diversion *fn) {
    diversion = fn;
}

/* "kernjit CMD: message" on stderr, and the document's "error" under --json. */
static int report(const char *cmd, const char *status, int class_, const char *message) {
    if (diversion) {
        diversion(1, status, class_, message);
        return class_;
    }
    cli_progress_pause();
    fprintf(stderr, "kernjit%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    put_message(message);
    fputc('\n', stderr);
    json_error(cmd, status, class_, message);
    return class_;
}

/* Formatted as the library's messages are: a long path loses its middle, never the reason after it. */
static int report_formatted(const char *cmd, const char *status, int class_, const char *fmt, va_list ap) {
    char buf[CLI_MESSAGE_MAX];
    kj_message_vformat(buf, sizeof buf, fmt, ap);
    return report(cmd, status, class_, buf);
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report_formatted(cmd, kj_status_name(KJ_ERR_USAGE), EXIT_USAGE, fmt, ap);
    va_end(ap);
    if (!diversion) fprintf(stderr, "Try 'kernjit%s%s --help'.\n", cmd ? " " : "", cmd ? cmd : "");
    return EXIT_USAGE;
}

int cli_bad_option(const char *cmd, char **argv, const struct option *options, int answer) {
    const char *word = optind > 0 ? argv[optind - 1] : "";
    if (answer == ':')
        return optopt && word[0] == '-' && word[1] != '-' ? cli_usage(cmd, "option '-%c' needs a value", optopt)
                                                          : cli_usage(cmd, "option '%s' needs a value", word);
    if (optopt) /* a known long option given a value (--json=1), or a letter no option has */
        return strncmp(word, "--", 2) == 0 && strchr(word, '=')
                   ? cli_usage(cmd, "option '%.*s' takes no value", (int)(strchr(word, '=') - word), word)
                   : cli_usage(cmd, "unrecognized option '-%c'", optopt);
    /* a long option that none is, or the start of several */
    size_t len = strcspn(word + 2, "="), matches = 0;
    char names[512] = "";
    for (const struct option *o = options; o && o->name; o++)
        if (strncmp(o->name, word + 2, len) == 0 && strlen(names) + strlen(o->name) + 5 < sizeof names)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s--%s", matches++ ? ", " : "", o->name);
    if (strncmp(word, "--", 2) == 0 && matches > 1)
        return cli_usage(cmd, "option '%.*s' is ambiguous: %s", (int)len + 2, word, names);
    return cli_usage(cmd, "unrecognized option '%s'", word);
}

int cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report_formatted(cmd, NULL, EXIT_FAILURE_, fmt, ap);
    va_end(ap);
    return EXIT_FAILURE_;
}

int cli_error_as(const char *cmd, kj_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = report_formatted(cmd, kj_status_name(status), kj_status_class(status), fmt, ap);
    va_end(ap);
    return rc;
}

int cli_getopt(const char *cmd, int argc, char **argv, const cli_option_set *sets, size_t count, void *user) {
    unsigned nvcc = 0;
    struct option all[CLI_MAX_OPTIONS + 1];
    char names[1024], letters[2 * CLI_MAX_OPTIONS + 2] = ":"; /* at most "L:" an option; ':' see cli_bad_option */
    unsigned char set_of[256] = {0};                           /* the set each letter belongs to */
    size_t n = 0, used = 0;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(sets[i].options);
        assert(used + len < sizeof names);
        char *spec = memcpy(names + used, sets[i].options, len + 1), *save;
        used += len + 1;
        for (char *p = strtok_r(spec, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(p, '=');
            assert(eq && n < CLI_MAX_OPTIONS);
            *eq = '\0'; /* the name ends here */
            all[n++] = (struct option){p, eq[2] == ':' ? required_argument : no_argument, NULL, eq[1]};
            set_of[(unsigned char)eq[1]] = (unsigned char)i;
            strncat(letters, eq + 1, 2);
        }
        nvcc |= sets[i].nvcc;
    }
    all[n] = (struct option){0, 0, 0, 0};
    int opt, rc = nvcc ? cli_nvcc_options(cmd, &argc, argv, all, letters, nvcc) : EXIT_OK;
    if (rc != EXIT_OK) return rc;
    optind = 0; /* getopt starts over: the demo has parsed its own line before it runs reduce */
    while (rc == EXIT_OK && (opt = getopt_long(argc, argv, letters, all, NULL)) != -1) {
        if (opt == '?' || opt == ':') return cli_bad_option(cmd, argv, all, opt);
        rc = sets[set_of[(unsigned char)opt]].fn(user, opt, optarg);
    }
    if (rc == EXIT_OK && optind < argc) rc = cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
    return rc;
}

int cli_fail(const char *cmd, kj_status s) {
    const char *msg = kj_last_error();
    return report(cmd, kj_status_name(s), kj_status_class(s), *msg ? msg : kj_strerror(s));
}

int cli_relay_failure(const char *cmd, const char *status, int class_, const char *message) {
    return report(cmd, status, class_, message);
}

/* The warnings and errors said, so that one relayed from another process is not said again: every
 * worker's runtime warns of the same environment as this process's. The library logs from its pool's
 * threads at once (kj_compile_all, prefetch), so the list and the lines written are under one lock. */
#define SAID_MAX 64
static char *said[SAID_MAX];
static size_t said_count;
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;

static int said_before(const char *message) {
    for (size_t i = 0; i < said_count; i++)
        if (strcmp(said[i], message) == 0) return 1;
    if (said_count < SAID_MAX && (said[said_count] = strdup(message))) said_count++;
    return 0;
}

static void log_to_stderr(kj_log_level level, const char *message, void *user) {
    (void)user;
    if (diversion) {
        diversion(0, NULL, (int)level, message);
        return;
    }
    pthread_mutex_lock(&said_lock);
    if (level <= KJ_LOG_WARN) said_before(message);
    cli_progress_pause();
    fprintf(stderr, "kernjit: %s: ", level == KJ_LOG_ERROR ? "error" : level == KJ_LOG_WARN ? "warning" : "note");
    put_message(message);
    fputc('\n', stderr);
    pthread_mutex_unlock(&said_lock);
}

void cli_relay_log(kj_log_level level, const char *message) {
    pthread_mutex_lock(&said_lock);
    int new_message = level > KJ_LOG_WARN || !said_before(message);
    pthread_mutex_unlock(&said_lock);
    if (new_message) log_to_stderr(level, message, NULL);
}

char *cli_format(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

int cli_verbosity = 1;

void cli_runtime_options(kj_runtime_options *o, int compile_only, const char *arch, int verbose) {
    *o = (kj_runtime_options)KJ_RUNTIME_OPTIONS_INIT;
    o->device = compile_only ? KJ_DEVICE_NONE : cli_device;
    o->arch = arch || compile_only ? arch : cli_arch;
    o->log = log_to_stderr;
    o->log_level = cli_verbosity == 0 ? KJ_LOG_ERROR : verbose || cli_verbosity >= 2 ? KJ_LOG_INFO : KJ_LOG_WARN;
}

kj_status cli_runtime(kj_runtime **rt, int compile_only, const char *arch, int verbose) {
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    cli_runtime_options(&o, compile_only, arch, verbose);
    return kj_runtime_create(&o, rt);
}

const char *cli_origin_text(kj_origin o) {
    switch (o) {
    case KJ_ORIGIN_COMPILED: return "compiled now";
    case KJ_ORIGIN_DISK: return "disk cache";
    case KJ_ORIGIN_REMOTE: return "remote cache";
    case KJ_ORIGIN_SEED: return "seed (built ahead of time)";
    default: return "memory (already loaded)";
    }
}

static const char *mode_name(kj_remote_mode m) { return m == KJ_REMOTE_READ ? "read" : "readwrite"; }

void cli_print_remote(const kj_remote_info *r, int json) {
    double mean = r->fetches ? r->fetch_ms_total / (double)r->fetches : 0;
    if (json) {
        json_object_in("remote");
        json_fields("configured?=%d", r->configured);
        if (r->configured)
            json_fields("url=%s mode=%s signed?=%d reachable?=%d", r->url, mode_name(r->mode), r->signed_entries,
                        r->reachable);
        json_string("state", r->state);
        if (r->reachable) {
            json_fields("server_version=%s eviction_policy=%s used_memory_bytes=%" PRIu64 " max_memory_bytes=%" PRIu64
                        " keys=%" PRIu64 " round_trip_ms=%g",
                        r->server_version, r->eviction_policy, r->used_memory, r->max_memory, r->keys,
                        r->round_trip_ms);
            json_object_in("fleet");
            json_fields("hits=%" PRIu64 " misses=%" PRIu64 " waits=%" PRIu64 " pushes=%" PRIu64 " refusals=%" PRIu64
                        " errors=%" PRIu64 " fetches=%" PRIu64 " fetch_mean_ms=%g fetch_max_ms=%g"
                        " fetched_bytes=%" PRIu64 " pushed_bytes=%" PRIu64,
                        r->hits, r->misses, r->waits, r->pushes, r->refusals, r->errors, r->fetches, mean,
                        r->fetch_ms_max, r->bytes_fetched, r->bytes_pushed);
            json_end_object();
        }
        json_end_object();
        return;
    }
    if (!r->configured) {
        printf("remote cache: %s\n", r->state);
        return;
    }
    printf("remote cache: %s (%s%s): %s\n", r->url, mode_name(r->mode), r->signed_entries ? ", signed" : "", r->state);
    if (!r->reachable) return;
    printf("  server     Redis %s, %.1f MiB used of %s, maxmemory-policy %s%s, %llu keys\n", r->server_version,
           r->used_memory / 1048576.0, r->max_memory ? "a bound" : "no bound", r->eviction_policy,
           strcmp(r->eviction_policy, "allkeys-lru") == 0 ? "" : " (the documented setup is allkeys-lru)",
           (unsigned long long)r->keys);
    printf("  latency    %.3f ms round trip now; lookups %.3f ms mean, %.3f ms at most (%llu lookups)\n",
           r->round_trip_ms, mean, r->fetch_ms_max, (unsigned long long)r->fetches);
    printf("  fleet      %llu hits, %llu misses, %llu waits for another's compile, %llu pushes, %llu refusals, %llu "
           "errors\n", (unsigned long long)r->hits, (unsigned long long)r->misses, (unsigned long long)r->waits,
           (unsigned long long)r->pushes, (unsigned long long)r->refusals, (unsigned long long)r->errors);
    printf("  traffic    %.1f MiB fetched, %.1f MiB pushed\n", r->bytes_fetched / 1048576.0,
           r->bytes_pushed / 1048576.0);
}

void json_transfer_fields(const kj_remote_transfer *t) {
    json_fields("entries=%" PRIu64 " moved=%" PRIu64 " present=%" PRIu64 " refused=%" PRIu64 " failed=%" PRIu64
                " moved_bytes=%" PRIu64,
                t->entries, t->moved, t->present, t->refused, t->failed, t->bytes);
}

int cli_parse_define(char *text, kj_define *out, char *err, size_t err_size) {
    char *eq = strchr(text, '=');
    if (!eq) { /* -DNDEBUG: defined, as nvcc and NVRTC define it */
        out->name = text;
        out->value = "1";
        return 0;
    }
    if (eq == text) {
        kj_message_format(err, err_size, "-D '%s' has no macro name: write -D NAME=VALUE", text);
        return -1;
    }
    if (eq[1] == '\0') {
        kj_message_format(err, err_size, "-D '%s' has an empty value: write -D NAME=VALUE (-D NAME is NAME=1)", text);
        return -1;
    }
    *eq = '\0';
    out->name = text;
    out->value = eq + 1;
    return 0;
}

int cli_arch_list(const char *cmd, char *arg, const char **archs, size_t *n, size_t max) {
    for (char *t = arg;; t++) {
        char *comma = strchr(t, ',');
        if (comma) *comma = '\0';
        if (!*t) return cli_usage(cmd, "--arch has an empty target: give a target (sm_90, sm_90a, compute_90), or "
                                  "several separated by commas (sm_80,sm_90)");
        if (*n == max) return cli_usage(cmd, "at most %zu targets", max);
        for (size_t k = 0; k < *n; k++)
            if (strcmp(archs[k], t) == 0) return cli_usage(cmd, "target %s is given twice", t);
        archs[(*n)++] = t;
        if (!comma) return EXIT_OK;
        t = comma;
    }
}

int cli_same_name(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_'))) return 0;
    return *a == *b;
}

const char *cli_kernel_name(const char *name) {
    if (!name || !strchr(name, '-') || strchr(name, '/')) return name;
    for (size_t i = 0; kj_builtin_name(i); i++)
        if (cli_same_name(name, kj_builtin_name(i))) return kj_builtin_name(i);
    return name;
}

/* A .cu file, or compiled code to link (.ptx, .cubin, .ltoir), or a path. */
static int is_file_name(const char *s) {
    static const char *const ext[] = {".cu", ".ptx", ".cubin", ".ltoir"};
    size_t n = strlen(s);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (n > strlen(ext[i]) && strcmp(s + n - strlen(ext[i]), ext[i]) == 0) return 1;
    return strchr(s, '/') != NULL;
}

int cli_parse_program(const char *cmd, char **args, int count, const char *entry_option, cli_program *out) {
    memset(out, 0, sizeof *out);
    out->entry = entry_option;
    if (count > CLI_MAX_SOURCES)
        return cli_usage(cmd, "%d sources: a program links at most %d", count, CLI_MAX_SOURCES);
    for (int i = 0; i < count; i++) {
        char *source = args[i];
        /* FILE.cu:ENTRY, or a built-in kernel as NAME:ENTRY */
        char *colon = strstr(source, ".cu:");
        if (colon) colon += 3;
        else if (!strchr(source, '/')) colon = strchr(source, ':');
        if (colon) {
            *colon = '\0';
            if (!colon[1]) return cli_usage(cmd, "'%s:' names no entry after ':'", source);
            if (entry_option)
                return cli_usage(cmd, "give the entry either as FILE.cu:ENTRY or with --entry, not both");
            if (out->entry && out->entry != entry_option)
                return cli_usage(cmd, "two entries ('%s' and '%s'): a program is launched at one entry", out->entry,
                                 colon + 1);
            out->entry = colon + 1;
        }
        if (count > 1 && !is_file_name(source))
            return cli_usage(cmd, "'%s' is not a .cu file: several sources are linked into one program, so each is a "
                             "file (FILE.cu, or .ptx, .cubin, .ltoir code, or a path); a built-in kernel stands alone",
                             source);
        if (i == 0) out->kernel = count == 1 ? cli_kernel_name(source) : source;
        else out->sources[out->source_count++] = source;
    }
    return EXIT_OK;
}

/* The digits text starts with (no sign, no space) as *v, *end after them; -1 when there are none or
 * the number is above 2^64 - 1. */
static int leading_number(const char *text, unsigned long long *v, char **end) {
    if (!text || !isdigit((unsigned char)text[0])) return -1;
    errno = 0;
    *v = strtoull(text, end, 10);
    return errno ? -1 : 0;
}

int cli_parse_uint(const char *text, uint64_t max, uint64_t *out) {
    unsigned long long v;
    char *end;
    if (leading_number(text, &v, &end) != 0 || *end || v > max) return -1;
    *out = v;
    return 0;
}

int cli_parsed(const char *cmd, kj_status parse_status) {
    return parse_status == KJ_OK ? EXIT_OK : cli_usage(cmd, "%s", kj_last_error());
}

int cli_count_arg(const char *cmd, const char *option, const char *arg, uint64_t min, uint64_t max, uint64_t *out) {
    return kj_size_parse(arg, min, max, out) == KJ_OK ? EXIT_OK : cli_usage(cmd, "%s %s", option, kj_last_error());
}

int cli_pow2_arg(const char *cmd, const char *option, const char *arg, uint64_t min, uint64_t max, uint64_t *out) {
    uint64_t v;
    if (kj_size_parse(arg, min, max, &v) != KJ_OK || (v & (v - 1)))
        return cli_usage(cmd, "%s '%s': a power of two from %llu to %llu is allowed", option, arg,
                         (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return EXIT_OK;
}

int cli_device_memory_short(const char *cmd, const char *what, uint64_t bytes, size_t free_b, size_t total_b) {
    return cli_error_as(cmd, KJ_ERR_DEVICE_MEMORY, "%s needs %llu bytes of device memory, more than the %zu bytes free (of %zu)",
                        what, (unsigned long long)bytes, free_b, total_b);
}

int cli_check_device_memory(kj_runtime *rt, const char *cmd, const char *what, uint64_t bytes) {
    size_t free_b = 0, total_b = 0;
    if (kj_mem_info(rt, &free_b, &total_b) != KJ_OK) return EXIT_OK; /* the allocation will say what is wrong */
    return bytes <= free_b ? EXIT_OK : cli_device_memory_short(cmd, what, bytes, free_b, total_b);
}

double cli_median(double *v, size_t n) {
    if (!n) return 0;
    for (size_t i = 1; i < n; i++) /* insertion sort: the arrays are small */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

int cli_json;

#define JSON_MAX_DEPTH 64

static struct {
    char command[128];
    int depth;                        /* open objects and arrays; 1: inside the document */
    char closer[JSON_MAX_DEPTH];      /* '}' or ']' for each */
    int need_comma[JSON_MAX_DEPTH];
    int began;                        /* the document was begun */
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
            long long v = size ? (long long)va_arg(ap, ptrdiff_t) : longs == 2 ? va_arg(ap, long long)
                        : longs == 1 ? va_arg(ap, long) : va_arg(ap, int);
            if (is_bool) json_bool(key, v != 0);
            else json_int(key, v);
            break;
        }
        case 'u':
            json_uint(key, size ? va_arg(ap, size_t) : longs == 2 ? va_arg(ap, unsigned long long)
                         : longs == 1 ? va_arg(ap, unsigned long) : va_arg(ap, unsigned));
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

static void json_error(const char *cmd, const char *status, int class_, const char *message) {
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

/* ---- random data ----------------------------------------------------------------------------- */

static uint64_t next(uint64_t *s) {
    /* xorshift64*: fast, seeded, good enough for test data */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

void cli_random_fill(kj_type type, void *buf, size_t n, uint64_t seed, int small_ints) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    if (!s) s = 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next(&s);
        double u = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
        switch (type) {
        case KJ_TYPE_I32: ((int32_t *)buf)[i] = small_ints ? (int32_t)(r % 2001) - 1000 : (int32_t)(uint32_t)r; break;
        case KJ_TYPE_U32: ((uint32_t *)buf)[i] = small_ints ? (uint32_t)(r % 1000) : (uint32_t)r; break;
        case KJ_TYPE_I64: ((int64_t *)buf)[i] = small_ints ? (int64_t)(r % 2001) - 1000 : (int64_t)r; break;
        case KJ_TYPE_F16: ((uint16_t *)buf)[i] = kj_f16_bits((float)(u * 2 - 1)); break;
        case KJ_TYPE_BF16: ((uint16_t *)buf)[i] = kj_bf16_bits((float)(u * 2 - 1)); break;
        case KJ_TYPE_F32: ((float *)buf)[i] = (float)(u * 2 - 1); break;
        case KJ_TYPE_F64: ((double *)buf)[i] = u * 2 - 1; break;
        default: break;
        }
    }
}

double cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct {
    double start, last;
    int printed, tty, columns;
    char unsaid[1200]; /* in a log: the latest state, while it is not printed */
} progress;

/* A line in a log: after what stdout holds, so that a log of both streams keeps the rows before it
 * whole (a file's stdout is fully buffered). */
static void progress_line(const char *line) {
    fflush(stdout);
    fputs(line, stderr);
}

/* One state of long work: drawn on a terminal each time; in a log, once the work has lasted
 * CLI_PROGRESS_EVERY_S, that often, and its last state (final, or at cli_progress_end) when a line
 * was printed before or the work lasted that long. */
static void progress_show(const char *cmd, const char *live, const char *logged, int final) {
    double now = cli_now_ms() / 1e3;
    if (progress.start == 0) {
        progress.start = progress.last = now;
        progress.tty = isatty(2);
        struct winsize ws;
        progress.columns = progress.tty && ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    }
    if (progress.tty) {
        /* within one row of the terminal: a line that wrapped could not be rewritten in place */
        fprintf(stderr, "\r\033[K%.*s", progress.columns - 1, live);
        fflush(stderr);
        progress.printed = 1;
        return;
    }
    /* kept until printed: a last step that runs past the interval is said at cli_progress_end */
    snprintf(progress.unsaid, sizeof progress.unsaid, "kernjit %s: %s\n", cmd, logged);
    if ((now - progress.last >= CLI_PROGRESS_EVERY_S && now - progress.start >= CLI_PROGRESS_EVERY_S) ||
        (final && progress.printed)) {
        progress_line(progress.unsaid);
        progress.last = now;
        progress.printed = 1;
        progress.unsaid[0] = '\0';
    }
}

void cli_progress(const char *cmd, const char *phase, size_t done, size_t total, const char *detail) {
    char live[1024], logged[1024];
    snprintf(live, sizeof live, "[%s %zu/%zu] %s", phase, done, total, detail ? detail : "");
    snprintf(logged, sizeof logged, "%s %zu/%zu%s%s", phase, done, total, detail ? ": " : "", detail ? detail : "");
    progress_show(cmd, live, logged, done == total);
}

void cli_progress_waiting(const char *cmd, const char *what, double seconds) {
    char live[1024], logged[1024];
    snprintf(live, sizeof live, "[%s: %.0f s]", what, seconds);
    snprintf(logged, sizeof logged, "%s: %.0f s", what, seconds);
    progress_show(cmd, live, logged, 0);
}

void cli_progress_pause(void) {
    if (!progress.tty || !progress.printed) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress.printed = 0;
}

void cli_progress_end(void) {
    cli_progress_pause();
    if (progress.unsaid[0] && (progress.printed || cli_now_ms() / 1e3 - progress.start >= CLI_PROGRESS_EVERY_S))
        progress_line(progress.unsaid);
    memset(&progress, 0, sizeof progress);
}

FILE *cli_open_regular(const char *path, const char **why) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        *why = strerror(errno);
        if (fd >= 0) close(fd);
        return NULL;
    }
    FILE *f = S_ISREG(st.st_mode) && fcntl(fd, F_SETFL, 0) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        *why = S_ISREG(st.st_mode) ? strerror(errno) : S_ISDIR(st.st_mode) ? "a folder, not a regular file"
                                                                          : "a special file, not a regular file";
        close(fd);
    }
    return f;
}

int cli_create_beside(const char *path, char *tmp, size_t size) {
    static unsigned counter;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if ((size_t)snprintf(tmp, size, "%.*s.kernjit-%ld-%u-%ld.tmp", dir_len, path, (long)getpid(), counter++,
                             (long)ts.tv_nsec) >= size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

int cli_write_file(const char *cmd, const char *path, const void *data, size_t size) {
    char tmp[PATH_MAX + 64];
    int fd = cli_create_beside(path, tmp, sizeof tmp);
    if (fd < 0) return cli_error_as(cmd, KJ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    const char *p = data;
    size_t left = size;
    int err = 0;
    while (left && !err) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) err = w < 0 ? errno : EIO;
        else p += w, left -= (size_t)w;
    }
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return cli_error_as(cmd, KJ_ERR_IO, "writing '%s' failed: %s (the file is as it was)", path, strerror(err));
    }
    return EXIT_OK;
}

int cli_check_output_folder(const char *cmd, const char *what, const char *path) {
    size_t n = strlen(path);
    if (n >= PATH_MAX) return cli_usage(cmd, "%s: the path has %zu characters: at most %d", what, n, PATH_MAX - 1);
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (strlen(name) > NAME_MAX)
        return cli_usage(cmd, "%s: the file name has %zu characters: at most %d", what, strlen(name), NAME_MAX);
    /* the file is replaced by a rename (--save) or opened for writing (pictures): a device would be
     * replaced for the whole system (--save 2=/dev/null, as root), a FIFO would wait for a reader */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return cli_usage(cmd, "%s: '%s' is %s, not a regular file: the command writes a file there", what, path,
                         S_ISDIR(st.st_mode) ? "a folder" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                                                     : "a special file");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? cli_usage(cmd, "%s: the folder '%s' does not exist", what, dir)
                               : cli_usage(cmd, "%s: the folder '%s' cannot be used: %s", what, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return cli_usage(cmd, "%s: '%s' is not a folder", what, dir);
    if (access(dir, W_OK) != 0) return cli_usage(cmd, "%s: the folder '%s' is not writable", what, dir);
    return EXIT_OK;
}
