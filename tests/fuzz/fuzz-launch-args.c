/* Fuzz target: the argument language of `kernjit launch` (cli/launch_args.c): --arg specs, grid
 * and block dimensions, --print and --save, and their cross-checks.
 *
 * Input: one selector byte, one type byte, then text. The text is split on '\n' into fields (at most
 * 16). Selector % 7: 0 --arg specs, 1 dimensions, 2 --print, 3 --save, 4 element counts, 5 values
 * of the type byte's type, 6 a whole command line: every field but the last two an --arg, then a
 * --print and a --save checked against them. Every message must be a terminated string that fits
 * its buffer. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kernjit.h"
#include "launch_args.h"

#define MAX_FIELDS 16

static void check_message(const char *err, size_t size) {
    if (memchr(err, '\0', size) == NULL) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    unsigned selector = data[0] % 7;
    launch_type type = (launch_type)(data[1] % (LAUNCH_TYPE_COUNT + 1)); /* one past the end: refused */
    size_t len = size - 2;
    char *text = malloc(len + 1);
    if (!text) return 0;
    memcpy(text, data + 2, len);
    text[len] = '\0';
    char *fields[MAX_FIELDS];
    size_t n = 0;
    for (char *p = text; p && n < MAX_FIELDS;) {
        fields[n++] = p;
        p = strchr(p, '\n');
        if (p) *p++ = '\0';
    }

    char err[256];
    memset(err, 'x', sizeof err);
    err[sizeof err - 1] = '\0';
    launch_arg args[MAX_FIELDS];
    size_t nargs = 0;
    for (size_t i = 0; i < n; i++) {
        const char *f = fields[i];
        switch (selector) {
        case 0:
            if (launch_parse_arg(f, &args[nargs], err, sizeof err) == 0) nargs++;
            break;
        case 1: {
            unsigned dims[3];
            if (launch_parse_dims(f, dims, err, sizeof err) == 0 && (!dims[0] || !dims[1] || !dims[2])) abort();
            break;
        }
        case 2: {
            launch_print pr;
            launch_parse_print(f, &pr, err, sizeof err);
            break;
        }
        case 3: {
            launch_save sv;
            if (launch_parse_save(f, &sv, err, sizeof err) == 0 && !sv.path[0]) abort();
            break;
        }
        case 4: {
            uint64_t v;
            if (kj_size_parse(f, 0, LAUNCH_MAX_COUNT, &v) == KJ_OK && v > LAUNCH_MAX_COUNT) abort();
            break;
        }
        case 5: {
            unsigned char bytes[8];
            launch_parse_value(type, f, bytes, err, sizeof err);
            break;
        }
        default:
            if (i + 2 < n || n < 2) {
                if (launch_parse_arg(f, &args[nargs], err, sizeof err) == 0) nargs++;
            } else if (i + 2 == n) {
                launch_print pr;
                if (launch_parse_print(f, &pr, err, sizeof err) == 0 &&
                    launch_check_print(&pr, args, nargs, err, sizeof err) == 0 && pr.has_range && args[pr.arg].count &&
                    (pr.from >= pr.to || pr.to > args[pr.arg].count))
                    abort(); /* a checked range lies inside its buffer */
            } else {
                launch_save sv;
                if (launch_parse_save(f, &sv, err, sizeof err) == 0)
                    launch_check_save(&sv, args, nargs, err, sizeof err);
            }
        }
        check_message(err, sizeof err);
    }
    for (size_t i = 0; i < nargs; i++) {
        /* what the launch relies on: a known type, a buffer's count in range, a file name after '@' */
        if ((unsigned)args[i].type >= LAUNCH_TYPE_COUNT) abort();
        if (args[i].is_buffer && args[i].count > LAUNCH_MAX_COUNT) abort();
        if (args[i].is_buffer && args[i].fill == LAUNCH_FILL_FILE && (!args[i].path || !args[i].path[0])) abort();
    }
    free(text);
    return 0;
}
