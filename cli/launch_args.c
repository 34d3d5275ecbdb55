/* Parsing of `kernjit launch` argument specs (see launch_args.h for the language). Everything here is
 * a pure function of its text: no allocation, no globals, no locale changes, so that a fuzzer can
 * call it millions of times and a failure replays from the input alone. */
#include "launch_args.h"

#include "kernjit.h" /* kj_size_parse */

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The offending text is quoted in messages, cut to this many characters so that a message stays
 * readable (and bounded) whatever the input. */
#define QUOTE 80
#define DEFAULT_PRINT 16

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(char *err, size_t size, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const struct {
    const char *name;
    unsigned char size, is_float, is_signed;
} types[LAUNCH_TYPE_COUNT] = {
    [LAUNCH_I8] = {"i8", 1, 0, 1},     [LAUNCH_U8] = {"u8", 1, 0, 0},   [LAUNCH_I16] = {"i16", 2, 0, 1},
    [LAUNCH_U16] = {"u16", 2, 0, 0},   [LAUNCH_I32] = {"i32", 4, 0, 1}, [LAUNCH_U32] = {"u32", 4, 0, 0},
    [LAUNCH_I64] = {"i64", 8, 0, 1},   [LAUNCH_U64] = {"u64", 8, 0, 0}, [LAUNCH_F16] = {"f16", 2, 1, 1},
    [LAUNCH_BF16] = {"bf16", 2, 1, 1}, [LAUNCH_F32] = {"f32", 4, 1, 1}, [LAUNCH_F64] = {"f64", 8, 1, 1},
};

const char *launch_type_name(launch_type t) { return (unsigned)t < LAUNCH_TYPE_COUNT ? types[t].name : "?"; }
size_t launch_type_size(launch_type t) { return (unsigned)t < LAUNCH_TYPE_COUNT ? types[t].size : 0; }
int launch_type_is_float(launch_type t) { return (unsigned)t < LAUNCH_TYPE_COUNT && types[t].is_float; }
int launch_type_is_signed(launch_type t) { return (unsigned)t < LAUNCH_TYPE_COUNT && types[t].is_signed; }
const char *launch_type_list(void) { return "i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64"; }

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* "an i32", "an f16", but "a u8", "a bf16" */
static const char *an(launch_type t) { return types[t].name[0] == 'i' || types[t].name[0] == 'f' ? "an" : "a"; }

/* ---- numbers --------------------------------------------------------------------------------- */

/* Unsigned integer text [s, end): 0x hex, or a count in kernjit's one grammar of sizes
 * (kj_size_parse: digits with K, M, G or T, or BASE^POWER). Digits are read here rather than with
 * strtoull, which would accept leading blanks and signs. */
static int parse_unsigned(const char *s, const char *end, uint64_t *out) {
    uint64_t v = 0;
    const char *p = s;
    if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        const char *digits = p;
        for (; p < end; p++) {
            int d;
            if (is_digit(*p)) d = *p - '0';
            else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
            else if (*p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
            else break;
            if (v > (UINT64_MAX >> 4)) return -1;
            v = v << 4 | (uint64_t)d;
        }
        if (p == digits || p != end) return -1; /* no suffixes after hex: 0x1M would be confusing */
        *out = v;
        return 0;
    }
    char text[64]; /* a count is shorter: 20 digits, or a power */
    if (end - s >= (ptrdiff_t)sizeof text) return -1;
    memcpy(text, s, (size_t)(end - s));
    text[end - s] = '\0';
    return kj_size_parse(text, 0, UINT64_MAX, out) == KJ_OK ? 0 : -1;
}

uint16_t launch_f16_from_double(double d) {
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    if (isnan(d)) return (uint16_t)(sign | 0x7e00);
    double a = fabs(d);
    if (a >= 65520.0) return (uint16_t)(sign | 0x7c00); /* 65520 is halfway to 2^16: rounds to inf */
    if (a < 0x1p-14) {
        /* subnormal: units of 2^-24; 1024 units is the smallest normal, which encodes the same way */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    }
    int e;
    double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int exp = e - 1;         /* a = m * 2^exp, m in [1, 2) */
    double m = nearbyint((f * 2.0 - 1.0) * 1024.0);
    if (m >= 1024.0) {
        m = 0;
        exp++;
    }
    if (exp > 15) return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | (uint16_t)((exp + 15) << 10) | (uint16_t)m);
}

double launch_f16_to_double(uint16_t h) {
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    int exp = (h >> 10) & 0x1f;
    int mant = h & 0x3ff;
    if (exp == 0) return sign * ldexp(mant, -24);
    if (exp == 31) return mant ? NAN : sign * INFINITY;
    return sign * ldexp(1024 + mant, exp - 25);
}

uint16_t launch_bf16_from_double(double d) {
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    if (isnan(d)) return (uint16_t)(sign | 0x7fc0);
    double a = fabs(d);
    if (isinf(a)) return (uint16_t)(sign | 0x7f80);
    if (a < 0x1p-126) {
        /* subnormal: units of 2^-133; 128 units is the smallest normal, which encodes the same way */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p133));
    }
    int e;
    double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int exp = e - 1;         /* a = m * 2^exp, m in [1, 2) */
    double m = nearbyint((f * 2.0 - 1.0) * 128.0);
    if (m >= 128.0) {
        m = 0;
        exp++;
    }
    if (exp > 127) return (uint16_t)(sign | 0x7f80);
    return (uint16_t)(sign | (uint16_t)((exp + 127) << 7) | (uint16_t)m);
}

double launch_bf16_to_double(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

int launch_parse_value(launch_type type, const char *text, unsigned char out[8], char *err, size_t size) {
    if ((unsigned)type >= LAUNCH_TYPE_COUNT) return fail(err, size, "unknown type %d", (int)type);
    if (!text || !*text) return fail(err, size, "empty %s value", types[type].name);
    size_t n = strnlen(text, LAUNCH_MAX_TEXT + 1);
    if (n > LAUNCH_MAX_TEXT)
        return fail(err, size, "%s value longer than %d characters", types[type].name, LAUNCH_MAX_TEXT);
    unsigned char bytes[8] = {0};
    if (types[type].is_float) {
        /* strtod skips leading blanks; a value with them is a typo, not a number */
        if (text[0] == ' ' || text[0] == '\t' || text[0] == '\n' || text[0] == '\r' || text[0] == '\f' ||
            text[0] == '\v')
            return fail(err, size, "'%.*s' is not %s %s value", QUOTE, text, an(type), types[type].name);
        errno = 0;
        char *end;
        double v = strtod(text, &end);
        if (end == text || *end)
            return fail(err, size, "'%.*s' is not %s %s value (examples: 0.5, -2e-3, inf, nan)", QUOTE, text, an(type),
                        types[type].name);
        /* ERANGE also marks underflow, which is fine (the value rounds towards 0); overflow is not */
        if (errno == ERANGE && isinf(v))
            return fail(err, size, "'%.*s' is out of range for %s", QUOTE, text, types[type].name);
        if (type == LAUNCH_F64) {
            memcpy(bytes, &v, 8);
        } else if (type == LAUNCH_F32) {
            float f = (float)v;
            if (isinf(f) && !isinf(v))
                return fail(err, size, "'%.*s' is out of range for f32 (at most %g)", QUOTE, text, (double)FLT_MAX);
            memcpy(bytes, &f, 4);
        } else if (type == LAUNCH_BF16) {
            uint16_t h = launch_bf16_from_double(v);
            if ((h & 0x7fff) == 0x7f80 && !isinf(v))
                return fail(err, size, "'%.*s' is out of range for bf16 (at most 3.3895e38)", QUOTE, text);
            memcpy(bytes, &h, 2);
        } else {
            uint16_t h = launch_f16_from_double(v);
            if ((h & 0x7fff) == 0x7c00 && !isinf(v))
                return fail(err, size, "'%.*s' is out of range for f16 (at most 65504)", QUOTE, text);
            memcpy(bytes, &h, 2);
        }
        memcpy(out, bytes, 8);
        return 0;
    }
    int neg = text[0] == '-';
    uint64_t mag;
    unsigned bits = types[type].size * 8u;
    if (parse_unsigned(text + neg, text + n, &mag) != 0)
        return fail(err, size, "'%.*s' is not %s %s value (integers: decimal or 0x hex, with K M G T or 2^k)", QUOTE,
                    text, an(type), types[type].name);
    uint64_t v;
    if (types[type].is_signed) {
        uint64_t max_pos = (UINT64_MAX >> (65 - bits)); /* 2^(bits-1) - 1 */
        if (neg ? mag > max_pos + 1 : mag > max_pos)
            return fail(err, size, "'%.*s' is out of range for %s (%lld to %llu)", QUOTE, text, types[type].name,
                        -(long long)max_pos - 1, (unsigned long long)max_pos);
        v = neg ? (uint64_t)0 - mag : mag;
    } else {
        uint64_t max = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
        if (neg && mag != 0)
            return fail(err, size, "'%.*s' is negative: %s holds 0 to %llu", QUOTE, text, types[type].name,
                        (unsigned long long)max);
        if (mag > max)
            return fail(err, size, "'%.*s' is out of range for %s (0 to %llu)", QUOTE, text, types[type].name,
                        (unsigned long long)max);
        v = mag;
    }
    /* little-endian, as the device reads it */
    for (unsigned i = 0; i < types[type].size; i++) bytes[i] = (unsigned char)(v >> (8 * i));
    memcpy(out, bytes, 8);
    return 0;
}

/* ---- specs ----------------------------------------------------------------------------------- */

static int lookup_type(const char *s, size_t n, launch_type *out) {
    for (int t = 0; t < LAUNCH_TYPE_COUNT; t++)
        if (strlen(types[t].name) == n && memcmp(types[t].name, s, n) == 0) {
            *out = (launch_type)t;
            return 0;
        }
    return -1;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

void launch_hex_bytes(const char *hex, unsigned char *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (unsigned char)(hex_digit(hex[2 * i]) << 4 | hex_digit(hex[2 * i + 1]));
}

/* bytes[N]=FILL: a struct by value. */
static int parse_bytes(const char *text, launch_arg *out, char *err, size_t size) {
    launch_arg a;
    memset(&a, 0, sizeof a);
    a.is_bytes = 1;
    a.type = LAUNCH_U8;
    const char *open = text + 5, *close = strchr(open, ']');
    if (!close || close[1] != '=')
        return fail(err, size,
                    "'%.*s': write bytes[N]=FILL (N bytes by value; FILL zeros, @FILE or 0x and 2N hex "
                    "digits)",
                    QUOTE, text);
    if (parse_unsigned(open + 1, close, &a.count) != 0 || a.count == 0 || a.count > LAUNCH_MAX_PARAM_BYTES)
        return fail(err, size, "'%.*s': a struct by value has 1 to %d bytes", QUOTE, text, LAUNCH_MAX_PARAM_BYTES);
    const char *fill = close + 2;
    if (strcmp(fill, "zeros") == 0) {
        a.fill = LAUNCH_FILL_ZEROS;
    } else if (fill[0] == '@' && fill[1]) {
        a.fill = LAUNCH_FILL_FILE;
        a.path = fill + 1;
    } else if (fill[0] == '0' && (fill[1] == 'x' || fill[1] == 'X')) {
        size_t digits = strlen(fill + 2);
        for (size_t i = 0; i < digits; i++)
            if (hex_digit(fill[2 + i]) < 0)
                return fail(err, size, "'%.*s': '%c' is not a hex digit", QUOTE, text, fill[2 + i]);
        if (digits != 2 * a.count)
            return fail(err, size, "'%.*s': %zu hex digits for %llu bytes: give exactly %llu", QUOTE, text, digits,
                        (unsigned long long)a.count, 2 * (unsigned long long)a.count);
        a.fill = LAUNCH_FILL_VALUE;
        a.hex = fill + 2;
    } else {
        return fail(err, size, "'%.*s': the bytes are zeros, @FILE or 0x followed by 2N hex digits", QUOTE, text);
    }
    *out = a;
    return 0;
}

/* &I or &I+OFF: a pointer into buffer I. */
static int parse_ref(const char *text, launch_arg *out, char *err, size_t size) {
    launch_arg a;
    memset(&a, 0, sizeof a);
    a.is_ref = 1;
    a.type = LAUNCH_U64;
    const char *plus = strchr(text, '+'), *end = plus ? plus : text + strlen(text);
    uint64_t i;
    if (parse_unsigned(text + 1, end, &i) != 0 || i >= 1024 ||
        (plus && parse_unsigned(plus + 1, text + strlen(text), &a.offset) != 0))
        return fail(err, size, "'%.*s': write &I or &I+OFF (the address of buffer --arg I, plus OFF bytes)", QUOTE,
                    text);
    a.ref = (unsigned)i;
    *out = a;
    return 0;
}

int launch_parse_arg(const char *text, launch_arg *out, char *err, size_t size) {
    if (!text || !*text) return fail(err, size, "empty spec: write TYPE=VALUE (a scalar) or TYPE[N]=FILL (a buffer)");
    size_t n = strnlen(text, LAUNCH_MAX_TEXT + 1);
    if (n > LAUNCH_MAX_TEXT)
        return fail(err, size, "'%.*s...' is longer than %d characters", QUOTE, text, LAUNCH_MAX_TEXT);
    if (strncmp(text, "bytes[", 6) == 0) return parse_bytes(text, out, err, size);
    if (text[0] == '&') return parse_ref(text, out, err, size);
    if (strcmp(text, "null") == 0) {
        memset(out, 0, sizeof *out);
        out->type = LAUNCH_U64; /* a null pointer: eight zero bytes */
        return 0;
    }
    size_t t = strcspn(text, "[=");
    if (text[t] == '\0')
        return fail(err, size,
                    "'%.*s' has no '=': write TYPE=VALUE (a scalar, i32=5) or TYPE[N]=FILL (a buffer, "
                    "f32[1M]=random)",
                    QUOTE, text);
    launch_arg a;
    memset(&a, 0, sizeof a);
    if (t == 0)
        return fail(err, size, "'%.*s' has no type before '%c' (types: %s)", QUOTE, text, text[t], launch_type_list());
    if (lookup_type(text, t, &a.type) != 0)
        return fail(err, size, "'%.*s': unknown type '%.*s' (types: %s)", QUOTE, text, (int)(t < QUOTE ? t : QUOTE),
                    text, launch_type_list());
    const char *p = text + t;
    if (*p == '[') {
        a.is_buffer = 1;
        const char *close = strchr(p, ']');
        if (!close)
            return fail(err, size, "'%.*s' has '[' without ']': write %s[N]=FILL", QUOTE, text, types[a.type].name);
        const char *cs = p + 1;
        if (close == cs) {
            a.count = 0; /* only with @FILE: checked below */
        } else if (parse_unsigned(cs, close, &a.count) != 0 || a.count == 0 || a.count > LAUNCH_MAX_COUNT) {
            return fail(err, size,
                        "'%.*s': '%.*s' is not an element count from 1 to 2^40 (examples: 1000, 64K, 1M, 2^20)", QUOTE,
                        text, (int)(close - cs < QUOTE ? close - cs : QUOTE), cs);
        }
        p = close + 1;
        if (*p != '=')
            return fail(err, size,
                        "'%.*s': expected '=' after ']', then the contents (zeros, random, iota, a value or "
                        "@FILE)",
                        QUOTE, text);
        const char *fill = p + 1;
        if (!*fill)
            return fail(err, size, "'%.*s' has nothing after '=': give zeros, random, iota, a value or @FILE", QUOTE,
                        text);
        if (strcmp(fill, "zeros") == 0) a.fill = LAUNCH_FILL_ZEROS;
        else if (strcmp(fill, "random") == 0) a.fill = LAUNCH_FILL_RANDOM;
        else if (strcmp(fill, "iota") == 0) a.fill = LAUNCH_FILL_IOTA;
        else if (fill[0] == '@') {
            if (!fill[1]) return fail(err, size, "'%.*s': '@' needs a file name (@in.bin)", QUOTE, text);
            a.fill = LAUNCH_FILL_FILE;
            a.path = fill + 1;
        } else {
            char inner[160];
            if (launch_parse_value(a.type, fill, a.value, inner, sizeof inner) != 0)
                return fail(err, size, "'%.*s': %s; or give zeros, random, iota or @FILE", QUOTE, text, inner);
            a.fill = LAUNCH_FILL_VALUE;
        }
        if (a.count == 0 && a.fill != LAUNCH_FILL_FILE)
            return fail(err, size, "'%.*s': [] (the count from the file) goes only with @FILE; give the count, %s[N]",
                        QUOTE, text, types[a.type].name);
    } else {
        char inner[160];
        if (launch_parse_value(a.type, p + 1, a.value, inner, sizeof inner) != 0)
            return fail(err, size, "'%.*s': %s", QUOTE, text, inner);
    }
    *out = a;
    return 0;
}

int launch_parse_dims(const char *text, unsigned dims[3], char *err, size_t size) {
    if (!text || !*text) return fail(err, size, "empty dimensions: write X, X,Y or X,Y,Z");
    /* ',' separates: 'x' (16x16) would clash with hex (0x10) */
    size_t n = strnlen(text, LAUNCH_MAX_TEXT + 1);
    if (n > LAUNCH_MAX_TEXT) return fail(err, size, "dimensions longer than %d characters", LAUNCH_MAX_TEXT);
    unsigned d[3] = {1, 1, 1};
    const char *p = text;
    for (int i = 0;; i++) {
        if (i == 3) return fail(err, size, "'%.*s' has more than 3 dimensions (X,Y,Z)", QUOTE, text);
        size_t len = strcspn(p, ",");
        uint64_t v;
        if (parse_unsigned(p, p + len, &v) != 0 || v == 0 || v > 0x7fffffffu)
            return fail(err, size, "'%.*s': '%.*s' is not a dimension from 1 to 2147483647", QUOTE, text,
                        (int)(len < QUOTE ? len : QUOTE), p);
        d[i] = (unsigned)v;
        if (!p[len]) break;
        p += len + 1;
    }
    memcpy(dims, d, sizeof d);
    return 0;
}

/* "I" before ':' or '=': the index of an --arg, from 0 */
static int parse_index(const char *s, const char *end, unsigned *out) {
    uint64_t v = 0;
    if (s == end || end - s > 6) return -1;
    for (const char *p = s; p < end; p++) {
        if (!is_digit(*p)) return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = (unsigned)v;
    return 0;
}

int launch_parse_print(const char *text, launch_print *out, char *err, size_t size) {
    if (!text || !*text) return fail(err, size, "empty --print: write I or I:A..B (the --arg index, from 0)");
    size_t n = strnlen(text, LAUNCH_MAX_TEXT + 1);
    if (n > LAUNCH_MAX_TEXT) return fail(err, size, "the value is longer than %d characters", LAUNCH_MAX_TEXT);
    launch_print pr = {0, 0, 0, 0, 1}; /* the whole buffer, until a range says otherwise */
    const char *colon = strchr(text, ':');
    const char *iend = colon ? colon : text + n;
    if (parse_index(text, iend, &pr.arg) != 0)
        return fail(err, size, "'%.*s': '%.*s' is not an --arg index (0, 1, ...): write I or I:A..B", QUOTE, text,
                    (int)(iend - text < QUOTE ? iend - text : QUOTE), text);
    if (colon) {
        const char *r = colon + 1, *end = text + n;
        const char *dots = strstr(r, "..");
        pr.has_range = 1;
        if (!*r) return fail(err, size, "'%.*s': nothing after ':': write A..B, A.., ..B or A", QUOTE, text);
        if (!dots) {
            if (parse_unsigned(r, end, &pr.from) != 0)
                return fail(err, size, "'%.*s': '%.*s' is not an element index or range A..B", QUOTE, text, QUOTE, r);
            if (pr.from == UINT64_MAX) return fail(err, size, "'%.*s': element index too large", QUOTE, text);
            pr.to = pr.from + 1;
            pr.to_end = 0;
        } else {
            if (dots > r && parse_unsigned(r, dots, &pr.from) != 0)
                return fail(err, size, "'%.*s': '%.*s' is not an element index", QUOTE, text,
                            (int)(dots - r < QUOTE ? dots - r : QUOTE), r);
            if (dots + 2 < end) {
                if (parse_unsigned(dots + 2, end, &pr.to) != 0)
                    return fail(err, size, "'%.*s': '%.*s' is not an element index", QUOTE, text, QUOTE, dots + 2);
                pr.to_end = 0;
                if (pr.to <= pr.from)
                    return fail(err, size, "'%.*s': the range is empty (A..B prints elements A to B-1)", QUOTE, text);
            }
        }
    }
    *out = pr;
    return 0;
}

int launch_parse_save(const char *text, launch_save *out, char *err, size_t size) {
    if (!text || !*text) return fail(err, size, "empty --save: write I=FILE (the --arg index, from 0)");
    size_t n = strnlen(text, LAUNCH_MAX_TEXT + 1);
    if (n > LAUNCH_MAX_TEXT) return fail(err, size, "the value is longer than %d characters", LAUNCH_MAX_TEXT);
    const char *eq = strchr(text, '=');
    if (!eq) return fail(err, size, "'%.*s' has no '=': write I=FILE", QUOTE, text);
    launch_save s;
    if (parse_index(text, eq, &s.arg) != 0)
        return fail(err, size, "'%.*s': '%.*s' is not an --arg index (0, 1, ...): write I=FILE", QUOTE, text,
                    (int)(eq - text < QUOTE ? eq - text : QUOTE), text);
    if (!eq[1]) return fail(err, size, "'%.*s' has no file name after '='", QUOTE, text);
    s.path = eq + 1;
    *out = s;
    return 0;
}

/* ---- cross-checks ---------------------------------------------------------------------------- */

static int check_buffer_index(const char *what, unsigned index, const launch_arg *args, size_t nargs, char *err,
                              size_t size) {
    if (index >= nargs)
        return fail(err, size, "%s %u: there %s %zu --arg%s (indices from 0)", what, index, nargs == 1 ? "is" : "are",
                    nargs, nargs == 1 ? "" : "s");
    if (!args[index].is_buffer)
        return fail(err, size, "%s %u: --arg %u is a scalar (%s); only buffers can be printed or saved", what, index,
                    index, launch_type_name(args[index].type));
    return 0;
}

int launch_check_print(launch_print *p, const launch_arg *args, size_t nargs, char *err, size_t size) {
    if (check_buffer_index("--print", p->arg, args, nargs, err, size) != 0) return -1;
    uint64_t count = args[p->arg].count;
    if (!p->has_range) {
        p->from = 0;
        p->to = count && count < DEFAULT_PRINT ? count : DEFAULT_PRINT;
        return 0;
    }
    if (count == 0) return 0; /* T[]=@FILE before its size is known */
    /* one rule for every range: it lies within the buffer, or it is refused naming the buffer's size */
    if (p->from >= count)
        return fail(err, size, "--print %u: element %llu is past the end of --arg %u (%llu elements)", p->arg,
                    (unsigned long long)p->from, p->arg, (unsigned long long)count);
    if (p->to_end) p->to = count;
    if (p->to > count)
        return fail(err, size, "--print %u: range %llu..%llu goes past the end of --arg %u (%llu elements)", p->arg,
                    (unsigned long long)p->from, (unsigned long long)p->to, p->arg, (unsigned long long)count);
    return 0;
}

int launch_check_save(const launch_save *s, const launch_arg *args, size_t nargs, char *err, size_t size) {
    return check_buffer_index("--save", s->arg, args, nargs, err, size);
}
