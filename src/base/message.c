/* Messages in a bounded buffer: every message kernjit builds (errors, log lines, the CLI's own) is
 * formatted here. One that does not fit is not cut at its end, where the reason is ("...: File name
 * too long"): its longest words (paths, names, values) lose their middle instead, marked with an
 * ellipsis, so that each keeps its start and its end and every other word stays whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernjit.h"

#define MARK "\xe2\x80\xa6" /* U+2026, in UTF-8 */
#define MARK_LEN 3
/* A shortened word keeps at least this many bytes, the mark included: enough to recognise it. */
#define MIN_WORD 24

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }
static int is_continuation(char c) { return ((unsigned char)c & 0xc0) == 0x80; }

/* The length of text once every word longer than `level` bytes is shortened to `level`. */
static size_t length_at(const char *text, size_t len, size_t level) {
    size_t total = len;
    for (size_t i = 0; i < len;) {
        size_t n = 0;
        while (i + n < len && !is_space(text[i + n])) n++;
        if (n > level) total -= n - level;
        i += n ? n : 1;
    }
    return total;
}

static size_t longest_word(const char *text, size_t len) {
    size_t best = 0;
    for (size_t i = 0; i < len;) {
        size_t n = 0;
        while (i + n < len && !is_space(text[i + n])) n++;
        if (n > best) best = n;
        i += n ? n : 1;
    }
    return best;
}

/* Appends text[0..n) to out, as its first `keep` bytes, the mark and its last bytes, never splitting
 * a UTF-8 sequence; returns the new end of out. keep is at least MARK_LEN. */
static char *put_middle_cut(char *out, const char *text, size_t n, size_t keep) {
    size_t head = (keep - MARK_LEN) / 2, tail = keep - MARK_LEN - head;
    while (head && is_continuation(text[head])) head--;
    size_t from = n - tail;
    while (from < n && is_continuation(text[from])) from++;
    memcpy(out, text, head);
    memcpy(out + head, MARK, MARK_LEN);
    memcpy(out + head + MARK_LEN, text + from, n - from);
    return out + head + MARK_LEN + (n - from);
}

/* Writes text (len bytes, longer than size - 1) into dst shortened to fit. */
static size_t shorten(char *dst, size_t size, const char *text, size_t len) {
    size_t room = size - 1;
    char *out = dst;
    if (room < MIN_WORD || length_at(text, len, MIN_WORD) > room) {
        /* too many long words (or a tiny buffer): the message as one word, its start and its end */
        if (room < MARK_LEN) {
            while (room && is_continuation(text[room])) room--;
            memcpy(dst, text, room);
            dst[room] = '\0';
            return room;
        }
        out = put_middle_cut(out, text, len, room);
        *out = '\0';
        return (size_t)(out - dst);
    }
    /* the highest level (bytes per long word) at which the whole fits: long words end up alike */
    size_t lo = MIN_WORD, hi = longest_word(text, len);
    while (lo + 1 < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (length_at(text, len, mid) <= room) lo = mid;
        else hi = mid;
    }
    for (size_t i = 0; i < len;) {
        size_t n = 0;
        while (i + n < len && !is_space(text[i + n])) n++;
        if (n > lo) {
            out = put_middle_cut(out, text + i, n, lo);
        } else {
            memcpy(out, text + i, n ? n : 1);
            out += n ? n : 1;
        }
        i += n ? n : 1;
    }
    *out = '\0';
    return (size_t)(out - dst);
}

size_t kj_message_vformat(char *dst, size_t size, const char *fmt, va_list ap) {
    if (!dst || !size) return 0;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(dst, size, fmt ? fmt : "", ap);
    size_t written = n < 0 ? 0 : (size_t)n;
    if (n < 0) dst[0] = '\0';
    if (written >= size) {
        char *full = malloc(written + 1);
        if (full && vsnprintf(full, written + 1, fmt, again) == n) {
            written = shorten(dst, size, full, written);
        } else {
            /* no memory for the whole text: its start is what there is, without a broken last character */
            written = size - 1;
            while (written && is_continuation(dst[written - 1])) written--;
            if (written && (unsigned char)dst[written - 1] >= 0xc0) written--;
            dst[written] = '\0';
        }
        free(full);
    }
    va_end(again);
    return written;
}

size_t kj_message_format(char *dst, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t n = kj_message_vformat(dst, size, fmt, ap);
    va_end(ap);
    return n;
}
