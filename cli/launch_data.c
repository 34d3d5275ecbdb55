#include "launch_data.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* splitmix64: one state word, so that element i of a buffer does not depend on anything but
 * (seed, index, i) and a fill could be split among threads later without changing the data. */
static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Integers wrap to the type's width (two's complement), as a C cast to the unsigned type does. */
static void store_int(launch_type t, void *buf, uint64_t i, uint64_t v) {
    switch (t) {
    case LAUNCH_I8:
    case LAUNCH_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case LAUNCH_I16:
    case LAUNCH_U16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case LAUNCH_I32:
    case LAUNCH_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case LAUNCH_I64:
    case LAUNCH_U64: ((uint64_t *)buf)[i] = v; break;
    default: break;
    }
}

static void store_float(launch_type t, void *buf, uint64_t i, double v) {
    switch (t) {
    case LAUNCH_F16: ((uint16_t *)buf)[i] = launch_f16_from_double(v); break;
    case LAUNCH_BF16: ((uint16_t *)buf)[i] = launch_bf16_from_double(v); break;
    case LAUNCH_F32: ((float *)buf)[i] = (float)v; break;
    case LAUNCH_F64: ((double *)buf)[i] = v; break;
    default: break;
    }
}

void launch_fill_host(const launch_arg *a, void *buf, uint64_t count, uint64_t seed, unsigned index) {
    size_t es = launch_type_size(a->type);
    switch (a->fill) {
    case LAUNCH_FILL_ZEROS: memset(buf, 0, (size_t)count * es); break;
    case LAUNCH_FILL_VALUE:
        for (uint64_t i = 0; i < count; i++) memcpy((unsigned char *)buf + i * es, a->value, es);
        break;
    case LAUNCH_FILL_IOTA:
        for (uint64_t i = 0; i < count; i++) {
            if (launch_type_is_float(a->type)) store_float(a->type, buf, i, (double)i);
            else store_int(a->type, buf, i, i);
        }
        break;
    case LAUNCH_FILL_RANDOM: {
        uint64_t base = mix(seed ^ mix(index + 1));
        for (uint64_t i = 0; i < count; i++) {
            uint64_t r = mix(base + i);
            if (launch_type_is_float(a->type)) store_float(a->type, buf, i, (double)(r >> 11) * 0x1p-52 - 1.0);
            else if (launch_type_is_signed(a->type)) store_int(a->type, buf, i, (uint64_t)((int64_t)(r % 201) - 100));
            else store_int(a->type, buf, i, r % 101);
        }
        break;
    }
    case LAUNCH_FILL_FILE: break;
    }
}

static int format_double(double v, int digits, char *buf, size_t size) {
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return 0;
    }
    if (isinf(v)) {
        snprintf(buf, size, v < 0 ? "-inf" : "inf");
        return 0;
    }
    snprintf(buf, size, "%.*g", digits, v);
    return 1;
}

int launch_format(launch_type t, const void *e, char *buf, size_t size) {
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    switch (t) {
    case LAUNCH_I8:
        memcpy(&i8, e, 1);
        snprintf(buf, size, "%d", i8);
        return 1;
    case LAUNCH_U8:
        memcpy(&u8, e, 1);
        snprintf(buf, size, "%u", u8);
        return 1;
    case LAUNCH_I16:
        memcpy(&i16, e, 2);
        snprintf(buf, size, "%d", i16);
        return 1;
    case LAUNCH_U16:
        memcpy(&u16, e, 2);
        snprintf(buf, size, "%u", u16);
        return 1;
    case LAUNCH_I32:
        memcpy(&i32, e, 4);
        snprintf(buf, size, "%d", i32);
        return 1;
    case LAUNCH_U32:
        memcpy(&u32, e, 4);
        snprintf(buf, size, "%u", u32);
        return 1;
    case LAUNCH_I64:
        memcpy(&i64, e, 8);
        snprintf(buf, size, "%lld", (long long)i64);
        return 1;
    case LAUNCH_U64:
        memcpy(&u64, e, 8);
        snprintf(buf, size, "%llu", (unsigned long long)u64);
        return 1;
    case LAUNCH_F16: memcpy(&u16, e, 2); return format_double(launch_f16_to_double(u16), 5, buf, size);
    case LAUNCH_BF16: memcpy(&u16, e, 2); return format_double(launch_bf16_to_double(u16), 4, buf, size);
    case LAUNCH_F32: memcpy(&f32, e, 4); return format_double(f32, 9, buf, size);
    case LAUNCH_F64: memcpy(&f64, e, 8); return format_double(f64, 17, buf, size);
    default: snprintf(buf, size, "?"); return 0;
    }
}
