// common.cuh: element types and operators for kernjit's kernels, selected by macros.
//
//   T  = i32 u32 i64 f16 bf16 f32 f64   the element type (kj_elem) and the accumulator (kj_acc):
//                                   the same type, except f16 and bf16, which accumulate in f32
//   OP = sum max min prod           kj_combine(a, b) and KJ_IDENTITY
//
// Semantics, the same on every path: integer sum and product wrap as C unsigned arithmetic does
// (two's complement for i32/i64, computed through the unsigned type so that the compiler may not
// assume signed overflow away); max and min return NaN as soon as either operand is NaN; the identity
// is 0 (sum), 1 (prod), the type's lowest value (max) and highest value (min), -inf/+inf for floats.
//
// No CUDA header is needed: half precision is converted with the PTX cvt instruction, and a bfloat16
// is the high half of an f32 (a shift: exact, and the same instructions on every target from sm_75).
#pragma once

#define KJ_CAT_(a, b) a##b
#define KJ_CAT(a, b) KJ_CAT_(a, b)

#define KJ_T_i32 1
#define KJ_T_u32 2
#define KJ_T_i64 3
#define KJ_T_f16 4
#define KJ_T_f32 5
#define KJ_T_f64 6
#define KJ_T_bf16 7
#define KJ_OP_sum 1
#define KJ_OP_max 2
#define KJ_OP_min 3
#define KJ_OP_prod 4

#ifdef T
#define KJ_TYPE KJ_CAT(KJ_T_, T)
#else
#define KJ_TYPE KJ_T_f32
#endif
#ifdef OP
#define KJ_OPER KJ_CAT(KJ_OP_, OP)
#else
#define KJ_OPER KJ_OP_sum
#endif

#if KJ_TYPE == KJ_T_i32
typedef int kj_elem;
typedef int kj_acc;
typedef unsigned int kj_uacc;
#define KJ_ACC_MAX 2147483647
#define KJ_ACC_LOWEST (-2147483647 - 1)
#elif KJ_TYPE == KJ_T_u32
typedef unsigned int kj_elem;
typedef unsigned int kj_acc;
typedef unsigned int kj_uacc;
#define KJ_ACC_MAX 4294967295u
#define KJ_ACC_LOWEST 0u
#elif KJ_TYPE == KJ_T_i64
typedef long long kj_elem;
typedef long long kj_acc;
typedef unsigned long long kj_uacc;
#define KJ_ACC_MAX 9223372036854775807LL
#define KJ_ACC_LOWEST (-9223372036854775807LL - 1)
#elif KJ_TYPE == KJ_T_f16
typedef unsigned short kj_elem; // IEEE binary16 bits
typedef float kj_acc;
#define KJ_FLOAT 1
#elif KJ_TYPE == KJ_T_bf16
typedef unsigned short kj_elem; // bfloat16 bits: the high half of an f32
typedef float kj_acc;
#define KJ_FLOAT 1
#elif KJ_TYPE == KJ_T_f32
typedef float kj_elem;
typedef float kj_acc;
#define KJ_FLOAT 1
#elif KJ_TYPE == KJ_T_f64
typedef double kj_elem;
typedef double kj_acc;
#define KJ_FLOAT 1
#else
#error "T must be one of i32 u32 i64 f16 bf16 f32 f64"
#endif

#if !(KJ_OPER >= 1 && KJ_OPER <= 4)
#error "OP must be one of sum max min prod"
#endif

// 64-bit accumulators and the bits used for compare-and-swap.
#if KJ_TYPE == KJ_T_i64 || KJ_TYPE == KJ_T_f64
typedef unsigned long long kj_bits;
#else
typedef unsigned int kj_bits;
#endif

__device__ __forceinline__ float kj_f16_to_f32(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float kj_bf16_to_f32(unsigned short b) { return __uint_as_float((unsigned)b << 16); }

__device__ __forceinline__ kj_acc kj_to_acc(kj_elem v) {
#if KJ_TYPE == KJ_T_f16
    return kj_f16_to_f32(v);
#elif KJ_TYPE == KJ_T_bf16
    return kj_bf16_to_f32(v);
#else
    return v;
#endif
}

__device__ __forceinline__ kj_acc kj_identity() {
#if KJ_OPER == KJ_OP_sum
    return (kj_acc)0;
#elif KJ_OPER == KJ_OP_prod
    return (kj_acc)1;
#elif defined(KJ_FLOAT)
    return KJ_OPER == KJ_OP_max ? (kj_acc)-__int_as_float(0x7f800000) : (kj_acc)__int_as_float(0x7f800000);
#else
    return KJ_OPER == KJ_OP_max ? (kj_acc)KJ_ACC_LOWEST : (kj_acc)KJ_ACC_MAX;
#endif
}

__device__ __forceinline__ kj_acc kj_combine(kj_acc a, kj_acc b) {
#if KJ_OPER == KJ_OP_sum
#ifdef KJ_FLOAT
    return a + b;
#else
    return (kj_acc)((kj_uacc)a + (kj_uacc)b);
#endif
#elif KJ_OPER == KJ_OP_prod
#ifdef KJ_FLOAT
    return a * b;
#else
    return (kj_acc)((kj_uacc)a * (kj_uacc)b);
#endif
#elif KJ_OPER == KJ_OP_max
    return (a > b || a != a) ? a : b; // a != a: a is NaN; if b is NaN the comparison fails and b wins
#else
    return (a < b || a != a) ? a : b;
#endif
}

__device__ __forceinline__ kj_bits kj_to_bits(kj_acc v) {
#if KJ_TYPE == KJ_T_f64
    return (kj_bits)__double_as_longlong(v);
#elif defined(KJ_FLOAT)
    return __float_as_uint(v);
#else
    return (kj_bits)v;
#endif
}

__device__ __forceinline__ kj_acc kj_from_bits(kj_bits b) {
#if KJ_TYPE == KJ_T_f64
    return __longlong_as_double((long long)b);
#elif defined(KJ_FLOAT)
    return __uint_as_float(b);
#else
    return (kj_acc)b;
#endif
}

// *address = kj_combine(*address, v), atomically: the native atomic where there is one, otherwise
// a compare-and-swap loop (float max/min, every product). The loop compares bits, so a NaN already
// stored ends it (combining NaN with anything gives the same NaN bits back).
__device__ __forceinline__ void kj_atomic_combine(kj_acc *address, kj_acc v) {
#if KJ_OPER == KJ_OP_sum && KJ_TYPE == KJ_T_i64
    atomicAdd((unsigned long long *)address, (unsigned long long)v);
#elif KJ_OPER == KJ_OP_sum
    atomicAdd(address, v);
#elif (KJ_OPER == KJ_OP_max || KJ_OPER == KJ_OP_min) && !defined(KJ_FLOAT)
    if (KJ_OPER == KJ_OP_max) atomicMax(address, v);
    else atomicMin(address, v);
#else
    kj_bits *bits = (kj_bits *)address;
    kj_bits old = *bits, assumed;
    do {
        assumed = old;
        kj_bits desired = kj_to_bits(kj_combine(kj_from_bits(assumed), v));
        if (desired == assumed) break;
        old = atomicCAS(bits, assumed, desired);
    } while (old != assumed);
#endif
}

// Programmatic dependent launch (compute capability 9.0 and later; no-ops before, and when the kernel
// is launched without the attribute). An entry marked `//@kernjit pdl` calls kj_wait_for_prior_grids
// before it touches global memory: the grids before it in the stream have then finished and their
// writes are visible. kj_allow_dependent_launch lets the next kernel in the stream be scheduled now
// (it will wait in turn), so its launch overlaps this kernel's end.
__device__ __forceinline__ void kj_wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void kj_allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
