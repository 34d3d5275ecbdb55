/* The CPU reference for reductions, and how far a GPU result may lie from it (reduce_cpu.h). */
#include "ops/reduce/reduce_cpu.h"

#include <float.h>
#include <math.h>
#include <string.h>

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

kj_type kj__reduce_acc_type(kj_type t) { return t == KJ_TYPE_F16 || t == KJ_TYPE_BF16 ? KJ_TYPE_F32 : t; }

int kj__type_is_float(kj_type t) {
    return t == KJ_TYPE_F16 || t == KJ_TYPE_BF16 || t == KJ_TYPE_F32 || t == KJ_TYPE_F64;
}

/* max/min with NaN propagation, as the kernels do */
static long double fmaxn(long double a, long double b) { return (a > b || a != a) ? a : b; }
static long double fminn(long double a, long double b) { return (a < b || a != a) ? a : b; }

static long double float_element(kj_type t, const void *data, size_t i) {
    switch (t) {
    case KJ_TYPE_F16: return f16_to_f32(((const uint16_t *)data)[i]);
    case KJ_TYPE_BF16: return bf16_to_f32(((const uint16_t *)data)[i]);
    case KJ_TYPE_F32: return ((const float *)data)[i];
    default: return ((const double *)data)[i];
    }
}

static void float_reference(kj_op op, kj_type t, const void *data, size_t n, void *result, double *abs_sum) {
    long double acc = op == KJ_OP_SUM ? 0.0L : op == KJ_OP_PROD ? 1.0L : op == KJ_OP_MAX ? -INFINITY : INFINITY;
    long double mag = 0;
    for (size_t i = 0; i < n; i++) {
        long double x = float_element(t, data, i);
        mag += fabsl(x);
        switch (op) {
        case KJ_OP_SUM: acc += x; break;
        case KJ_OP_PROD: acc *= x; break;
        case KJ_OP_MAX: acc = fmaxn(acc, x); break;
        default: acc = fminn(acc, x); break;
        }
    }
    if (abs_sum) *abs_sum = (double)mag;
    if (t == KJ_TYPE_F64) {
        double r = (double)acc;
        memcpy(result, &r, 8);
    } else {
        float r = (float)acc;
        memcpy(result, &r, 4);
    }
}

/* Integers: computed in uint64_t, which wraps exactly as the kernels' unsigned arithmetic does;
 * max/min compare as the signed or unsigned type. */
static void int_reference(kj_op op, kj_type t, const void *data, size_t n, void *result, double *abs_sum) {
    int is_signed = t != KJ_TYPE_U32;
    uint64_t acc_u = op == KJ_OP_SUM ? 0 : 1;
    int64_t best_s = op == KJ_OP_MAX ? (t == KJ_TYPE_I32 ? INT32_MIN : INT64_MIN)
                                     : (t == KJ_TYPE_I32 ? INT32_MAX : INT64_MAX);
    uint64_t best_u = op == KJ_OP_MAX ? 0 : UINT32_MAX;
    double mag = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = t == KJ_TYPE_I32 ? ((const int32_t *)data)[i] : t == KJ_TYPE_I64 ? ((const int64_t *)data)[i] : 0;
        uint64_t u = t == KJ_TYPE_U32 ? ((const uint32_t *)data)[i] : (uint64_t)s;
        mag += is_signed ? fabs((double)s) : (double)u;
        switch (op) {
        case KJ_OP_SUM: acc_u += u; break;
        case KJ_OP_PROD: acc_u *= u; break;
        case KJ_OP_MAX:
            if (is_signed ? s > best_s : u > best_u) best_s = s, best_u = u;
            break;
        default:
            if (is_signed ? s < best_s : u < best_u) best_s = s, best_u = u;
            break;
        }
    }
    if (abs_sum) *abs_sum = mag;
    uint64_t r = op == KJ_OP_SUM || op == KJ_OP_PROD ? acc_u : is_signed ? (uint64_t)best_s : best_u;
    if (t == KJ_TYPE_I64) {
        memcpy(result, &r, 8);
    } else {
        uint32_t r32 = (uint32_t)r; /* the low 32 bits: wrapping for sums and products */
        memcpy(result, &r32, 4);
    }
}

int kj__reduce_reference(kj_op op, kj_type t, const void *data, size_t n, void *result, double *abs_sum) {
    if ((unsigned)op >= KJ_OP_COUNT_ || (unsigned)t >= KJ_TYPE_COUNT_ || !result || (n && !data)) return -1;
    if (kj__type_is_float(t)) float_reference(op, t, data, n, result, abs_sum);
    else int_reference(op, t, data, n, result, abs_sum);
    return 0;
}

double kj__result_as_double(kj_type t, const void *r) {
    switch (t) {
    case KJ_TYPE_I32: {
        int32_t v;
        memcpy(&v, r, 4);
        return v;
    }
    case KJ_TYPE_U32: {
        uint32_t v;
        memcpy(&v, r, 4);
        return v;
    }
    case KJ_TYPE_I64: {
        int64_t v;
        memcpy(&v, r, 8);
        return (double)v;
    }
    case KJ_TYPE_F64: {
        double v;
        memcpy(&v, r, 8);
        return v;
    }
    default: {
        float v;
        memcpy(&v, r, 4);
        return v;
    }
    }
}

static unsigned log2_ceil(uint64_t v) {
    unsigned l = 0;
    while ((1ull << l) < v && l < 63) l++;
    return l;
}

static uint64_t next_random(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void kj__reduce_fill(kj_op op, kj_type t, void *data, size_t n, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_random(&s);
        double u = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
        if (op == KJ_OP_PROD) u = (r >> 7) & 1 ? 1.0 : -1.0;
        else if (op != KJ_OP_SUM) u = u * 2 - 1;
        uint64_t bits = op == KJ_OP_PROD ? r | 1 : r;
        switch (t) {
        case KJ_TYPE_I32:
        case KJ_TYPE_U32: ((uint32_t *)data)[i] = (uint32_t)bits; break;
        case KJ_TYPE_I64: ((uint64_t *)data)[i] = bits; break;
        case KJ_TYPE_F16: ((uint16_t *)data)[i] = kj__f16_bits((float)u); break;
        case KJ_TYPE_BF16: ((uint16_t *)data)[i] = kj__bf16_bits((float)u); break;
        case KJ_TYPE_F32: ((float *)data)[i] = (float)u; break;
        default: ((double *)data)[i] = u; break;
        }
    }
}

void kj__reduce_poison(kj_type t, const void *expected, void *poison) {
    size_t size = kj_result_size(t);
    if (t == KJ_TYPE_F64) {
        uint64_t snan = 0x7ff4a5a5a5a5a5a5ull, e;
        memcpy(&e, expected, 8);
        if (e == snan) snan ^= 1;
        memcpy(poison, &snan, 8);
    } else if (t == KJ_TYPE_F16 || t == KJ_TYPE_BF16 || t == KJ_TYPE_F32) {
        uint32_t snan = 0x7fa5a5a5u, e;
        memcpy(&e, expected, 4);
        if (e == snan) snan ^= 1;
        memcpy(poison, &snan, 4);
    } else {
        unsigned char *p = poison;
        const unsigned char *e = expected;
        for (size_t i = 0; i < size; i++) p[i] = (unsigned char)~e[i];
    }
}

double kj__reduce_tolerance(kj_op op, kj_type t, size_t n, double expected, double abs_sum,
                            const kj_reduce_report *report) {
    if (!kj__type_is_float(t)) return 0;
    if (op == KJ_OP_MAX || op == KJ_OP_MIN || n <= 1) return 0;
    double u = t == KJ_TYPE_F64 ? DBL_EPSILON / 2 : FLT_EPSILON / 2;
    double depth = (double)n; /* any order of n - 1 operations */
    if (report && report->grid && report->block_size) {
        uint64_t threads = (uint64_t)report->grid * report->block_size;
        uint64_t per_thread = (n + threads - 1) / threads;
        /* per-thread chain, the block's tree, then the blocks: combined atomically (a chain of grid
         * steps, in any order) or by a second tree (log2 grid) */
        int atomic = strcmp(report->entry, "reduce_segmented") == 0 || strcmp(report->entry, "reduce_coarsened") == 0;
        depth = (double)per_thread + log2_ceil(report->block_size) + (atomic ? report->grid : log2_ceil(report->grid)) +
                2;
        /* nested.cu: a pairwise tree per block, then nested_fold's 256 threads (FOLD_THREADS in
         * ops/nested/nested.c), each a chain of grid / 256 partial sums, and their tree */
        if (strncmp(report->entry, "nested_", 7) == 0)
            depth = (double)per_thread + log2_ceil(report->block_size) + (double)((report->grid + 255) / 256) + 8 + 2;
        if (depth > (double)n) depth = (double)n;
    }
    if (op == KJ_OP_SUM) return depth * u * abs_sum;
    return depth * u * fabs(expected) + (t == KJ_TYPE_F64 ? DBL_MIN : FLT_MIN);
}

uint16_t kj__f16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if (exp <= 0) return (uint16_t)sign;
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)h;
}

uint16_t kj__bf16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* NaN: keep it quiet */
    x += 0x7fffu + ((x >> 16) & 1); /* round to nearest even; too large carries into infinity */
    return (uint16_t)(x >> 16);
}
