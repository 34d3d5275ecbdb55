/* The argument language of `kernjit launch`: --arg specs (scalars and device buffers), --grid/--block
 * dimensions, --print and --save. Pure text -> struct parsing: no CUDA, no allocation, no global
 * state, bounded work (text longer than LAUNCH_MAX_TEXT is refused before it is looked at), so that
 * it can be unit-tested and fuzzed on its own. Errors are written to err, naming the offending text
 * and what is allowed.
 *
 * Specs:
 *   scalar   TYPE=VALUE          i32=5  u64=1048576  i32=1M  u32=0xff  f32=0.5  f64=-1e-3  f16=2  bf16=2
 *   buffer   TYPE[N]=FILL        f32[1M]=random  i32[2^20]=iota  u8[64]=zeros  f64[100]=0.25
 *                                f32[1000]=@in.bin  f32[]=@in.bin (N from the file's size)
 *   struct   bytes[N]=FILL       a parameter passed by value as N raw bytes (a struct): FILL is zeros,
 *                                @FILE (exactly N bytes) or 0x followed by 2N hex digits (memory order)
 *   pointer  &I  or  &I+OFF      the address of buffer --arg I plus OFF bytes (OFF as N; below its size)
 *   null     null                a null pointer (the same as u64=0)
 *   TYPE     i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64
 *   N        1000003  64K  1M  1G  2^20  (kernjit's sizes: kj_size_parse; K M G T are powers of 1024)
 *   FILL     zeros | random | iota | VALUE | @FILE (raw bytes, little-endian, exactly N elements)
 * Integer values: decimal or 0x hex, an optional leading '-', and the suffixes of N. Float values:
 * as strtod reads them (1.5, -2e-3, inf, nan); a finite value that overflows the type is refused.
 */
#ifndef KJ_LAUNCH_ARGS_H
#define KJ_LAUNCH_ARGS_H

#include <stddef.h>
#include <stdint.h>

#define LAUNCH_MAX_TEXT 4096          /* longest spec accepted */
#define LAUNCH_MAX_COUNT (1ull << 40) /* most elements in one buffer */
#define LAUNCH_MAX_PARAM_BYTES                                                                                         \
    32764 /* most bytes of one by-value parameter (the driver's whole
                                           parameter space is 32764 bytes from CUDA 12.1) */

typedef enum launch_type {
    LAUNCH_I8,
    LAUNCH_U8,
    LAUNCH_I16,
    LAUNCH_U16,
    LAUNCH_I32,
    LAUNCH_U32,
    LAUNCH_I64,
    LAUNCH_U64,
    LAUNCH_F16,
    LAUNCH_BF16,
    LAUNCH_F32,
    LAUNCH_F64,
    LAUNCH_TYPE_COUNT
} launch_type;

typedef enum launch_fill {
    LAUNCH_FILL_ZEROS,
    LAUNCH_FILL_RANDOM,
    LAUNCH_FILL_IOTA,
    LAUNCH_FILL_VALUE,
    LAUNCH_FILL_FILE
} launch_fill;

typedef struct launch_arg {
    int is_buffer;
    launch_type type;
    uint64_t count;                     /* buffers: elements; 0 when the file decides (T[]=@FILE) */
    launch_fill fill;                   /* buffers */
    _Alignas(8) unsigned char value[8]; /* a scalar, or the element of LAUNCH_FILL_VALUE: the bytes the
                                device sees (little-endian; f16 as IEEE binary16, bf16 as an
                                f32's high half); aligned, as the
                                launch passes a pointer to them */
    const char *path;                   /* LAUNCH_FILL_FILE: the file name, a suffix of the parsed text (so it is
                                NUL-terminated and lives as long as the text) */
    int is_bytes;                       /* bytes[N]=...: count bytes by value; fill ZEROS, FILE, or VALUE with hex */
    const char *hex;                    /* bytes[N]=0x...: the 2N digits, a suffix of the parsed text */
    int is_ref;                         /* &I+OFF: buffer ref's address plus offset bytes */
    unsigned ref;
    uint64_t offset;
} launch_arg;

/* The bytes of bytes[N]=0x... into out (N bytes). */
void launch_hex_bytes(const char *hex, unsigned char *out, size_t n);

/* --print I[:RANGE]: RANGE is A..B (elements A to B-1), A.. (to the end), ..B, or A (one element). */
typedef struct launch_print {
    unsigned arg;
    int has_range;
    uint64_t from;
    uint64_t to; /* exclusive */
    int to_end;  /* A.. (or no range): to the end of the buffer, whatever its size */
} launch_print;

/* --save I=FILE */
typedef struct launch_save {
    unsigned arg;
    const char *path; /* a suffix of the parsed text */
} launch_save;

/* "f32", "i8", ...; "?" when out of range. */
const char *launch_type_name(launch_type type);
/* Bytes of one element or scalar: 1, 2, 4 or 8. */
size_t launch_type_size(launch_type type);
int launch_type_is_float(launch_type type);
int launch_type_is_signed(launch_type type);
/* "i8 u8 i16 ... f64": for messages. */
const char *launch_type_list(void);

/* Each parser returns 0 on success, else -1 with a message in err (err_size >= 1; truncated to fit).
 * out is written only on success. */
int launch_parse_arg(const char *text, launch_arg *out, char *err, size_t err_size);
/* X[,Y[,Z]], each 1 to 2^31-1 (suffixes as for N); missing ones are 1. */
int launch_parse_dims(const char *text, unsigned dims[3], char *err, size_t err_size);
int launch_parse_print(const char *text, launch_print *out, char *err, size_t err_size);
int launch_parse_save(const char *text, launch_save *out, char *err, size_t err_size);
/* A value of the type into its bytes (as in a scalar spec). */
int launch_parse_value(launch_type type, const char *text, unsigned char out[8], char *err, size_t err_size);

/* Checks --print and --save against the parsed --arg list: the index names an --arg, that --arg is a
 * buffer, and a range lies within it (when its count is known, i.e. not T[]=@FILE). The print's
 * range is resolved in place (to = the end when it was open; no range: the first 16 elements). */
int launch_check_print(launch_print *print, const launch_arg *args, size_t nargs, char *err, size_t err_size);
int launch_check_save(const launch_save *save, const launch_arg *args, size_t nargs, char *err, size_t err_size);

/* IEEE binary16 conversions, round to nearest even (subnormals included). */
uint16_t launch_f16_from_double(double value);
double launch_f16_to_double(uint16_t bits);
/* The same for bfloat16 (8 exponent bits, 7 of mantissa: the high half of an f32). */
uint16_t launch_bf16_from_double(double value);
double launch_bf16_to_double(uint16_t bits);

#endif
