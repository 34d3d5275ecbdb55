/* The status list (generated from KJ_STATUS_MAP) and the per-thread last-error message. */
#include "base/error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int class_;
    const char *text;
} status_table[KJ_STATUS_COUNT_] = {
#define KJ_STATUS_ROW_(name, value, class_, text) [value] = {"KJ_" #name, class_, text},
    KJ_STATUS_MAP(KJ_STATUS_ROW_)
#undef KJ_STATUS_ROW_
};

/* A number the list skips has no name: a gap is not a status. */
static int status_valid(kj_status s) { return (int)s >= 0 && s < KJ_STATUS_COUNT_ && status_table[s].name; }

const char *kj_strerror(kj_status s) { return status_valid(s) ? status_table[s].text : "unknown status"; }
const char *kj_status_name(kj_status s) { return status_valid(s) ? status_table[s].name : "KJ_UNKNOWN"; }
int kj_status_class(kj_status s) { return status_valid(s) ? status_table[s].class_ : 1; }

/* One message per thread, freed with the thread (a pthread key rather than _Thread_local so that
 * threads that exit do not leak their message). */
typedef struct {
    char *text;
    size_t len, cap;
    char where[96];
} thread_error;

static pthread_key_t error_key;
static pthread_once_t error_once = PTHREAD_ONCE_INIT;

static void free_thread_error(void *p) {
    thread_error *e = p;
    if (e) free(e->text);
    free(e);
}

static void make_key(void) { (void)pthread_key_create(&error_key, free_thread_error); }

static thread_error *this_thread_error(void) {
    pthread_once(&error_once, make_key);
    thread_error *e = pthread_getspecific(error_key);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) return NULL;
        if (pthread_setspecific(error_key, e) != 0) {
            free(e);
            return NULL;
        }
    }
    return e;
}

static void append(thread_error *e, const char *text, size_t n) {
    if (e->len + n + 1 > e->cap) {
        size_t cap = (e->len + n + 1) * 2;
        char *p = realloc(e->text, cap);
        if (!p) return; /* keep the message we have rather than none */
        e->text = p;
        e->cap = cap;
    }
    memcpy(e->text + e->len, text, n);
    e->len += n;
    e->text[e->len] = '\0';
}

kj_status kj__fail(kj_status status, const char *file, int line, const char *fmt, ...) {
    thread_error *e = this_thread_error();
    if (!e) return status;
    char buf[KJ__MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    size_t n = kj_message_vformat(buf, sizeof buf, fmt, ap);
    va_end(ap);
    e->len = 0;
    append(e, buf, n);
    const char *base = strstr(file, "src/");
    snprintf(e->where, sizeof e->where, "%s:%d", base ? base : file, line);
    return status;
}

void kj__error_append(const char *text) {
    thread_error *e = this_thread_error();
    if (!e || !text || !*text) return;
    if (e->len) append(e, "\n", 1);
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r')) n--;
    append(e, text, n);
}

const char *kj_last_error(void) {
    thread_error *e = this_thread_error();
    return e && e->text ? e->text : "";
}

const char *kj__error_where(void) {
    thread_error *e = this_thread_error();
    return e ? e->where : "";
}
