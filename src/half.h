/* half.h - the 2-byte float dtypes: float16 (IEEE 754 binary16: 5 exponent bits, 10 fraction bits)
 * and bfloat16 (the top half of a float32: 8 exponent bits, 7 fraction bits). Their element types
 * and their conversions to and from double, shared by the CPU backend (C) and the CUDA kernels (C++).
 *
 * To double: exact. From double: one rounding to nearest, ties to even, straight from the double
 * (never through float32, whose own rounding could move a value onto a tie); a value beyond the
 * format's range becomes +-inf, NaN stays NaN (sign and top payload bits kept, made quiet), -0.0 stays
 * -0.0 and denormals are kept (no flush to zero). The host works on the bits; device code uses CUDA's
 * conversions (cvt.rn), which round the same way. */
#ifndef CUSCAN_HALF_H
#define CUSCAN_HALF_H
#include <stdint.h>
#include <string.h>

#ifndef CS_HD
#if defined(__CUDACC__)
#define CS_HD static __host__ __device__ __forceinline__
#else
#define CS_HD static inline
#endif
#endif

/* Element types: CUDA's in kernels, the bits (uint16_t) in C. */
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __half cs_float16_t;
typedef __nv_bfloat16 cs_bfloat16_t;
#else
typedef uint16_t cs_float16_t;
typedef uint16_t cs_bfloat16_t;
#endif

/* The value of the 16 bits of a float with `ebits` exponent and `mbits` fraction bits, as double. */
CS_HD double cs_half_bits_to_double(uint16_t h, int ebits, int mbits)
{
    const int bias = (1 << (ebits - 1)) - 1;
    const uint64_t sign = (uint64_t)(h >> 15) << 63;
    const int e = (h >> mbits) & ((1 << ebits) - 1);
    uint64_t m = h & ((1u << mbits) - 1u), d;
    if (e == (1 << ebits) - 1) {
        d = sign | 0x7ff0000000000000ULL | (m << (52 - mbits)); /* inf, or NaN with its payload */
    } else if (e == 0) {
        if (m == 0) {
            d = sign;
        } else { /* a denormal: normalise the fraction */
            int k = 0;
            while (!(m >> mbits)) {
                m <<= 1;
                k++;
            }
            d = sign | ((uint64_t)(1 - bias - k + 1023) << 52) | ((m & ((1u << mbits) - 1u)) << (52 - mbits));
        }
    } else {
        d = sign | ((uint64_t)(e - bias + 1023) << 52) | (m << (52 - mbits));
    }
    double v;
    memcpy(&v, &d, sizeof v);
    return v;
}

/* v rounded to a float with `ebits` exponent and `mbits` fraction bits (round to nearest even). */
CS_HD uint16_t cs_half_bits_from_double(double v, int ebits, int mbits)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    const uint32_t sign = (uint32_t)(u >> 48) & 0x8000u;
    const uint64_t a = u & 0x7fffffffffffffffULL;
    const int bias = (1 << (ebits - 1)) - 1;
    const uint32_t inf = ((1u << ebits) - 1u) << mbits;
    if (a >= ((uint64_t)(1023 + 1 - bias) << 52) && a < ((uint64_t)(1023 + bias + 1) << 52)) {
        /* the format's normal range, the common case: round the fraction at its last place by an
         * integer add (half a place less one, plus the place's own bit for ties to even), whose
         * carry may step into the exponent, then rebias the exponent */
        const int drop = 52 - mbits;
        const uint64_t r = a + ((1ULL << (drop - 1)) - 1) + ((a >> drop) & 1);
        const uint64_t bits = (r >> drop) - ((uint64_t)(1023 - bias) << mbits);
        return (uint16_t)(sign | (bits >= inf ? inf : (uint32_t)bits));
    }
    if (a >= 0x7ff0000000000000ULL) {
        if (a == 0x7ff0000000000000ULL) return (uint16_t)(sign | inf);
        return (uint16_t)(sign | inf | (1u << (mbits - 1)) | (uint32_t)((a >> (52 - mbits)) & ((1u << mbits) - 1u)));
    }
    /* the rest: beyond the range, or the format's denormals. a = m * 2^(e - 52), m with its implicit
     * bit (a double denormal has exponent -1022 and none) */
    const int field = (int)(a >> 52);
    const int e = field ? field - 1023 : -1022;
    const uint64_t m = (a & 0x000fffffffffffffULL) | (field ? 0x0010000000000000ULL : 0);
    if (e > bias) return (uint16_t)(sign | inf);
    /* the target's exponent at this magnitude (its least one for denormals), and the bits of m
     * below the target's last place */
    const int et = e < 1 - bias ? 1 - bias : e;
    const int shift = et - mbits - (e - 52);
    if (shift >= 64) return (uint16_t)sign; /* below half the least denormal */
    uint64_t q = m >> shift;
    const uint64_t rest = m & ((1ULL << shift) - 1), halfway = 1ULL << (shift - 1);
    if (rest > halfway || (rest == halfway && (q & 1))) q++;
    /* q counts last places from the bottom of exponent et (it may carry into the next one) */
    const uint64_t bits = ((uint64_t)(et + bias - 1) << mbits) + q;
    return (uint16_t)(sign | (bits >= inf ? inf : (uint32_t)bits));
}

#if !defined(__CUDACC__)
/* The same conversions without a branch, bit for bit, for the CPU's loops over many elements: each
 * case is computed and one is selected, so that a loop of them vectorises (the forms above branch on
 * the rare cases, which keeps a loop scalar). */
static inline uint64_t cs_bits_of_double(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}
static inline double cs_double_of_bits(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* c ? a : b by masks (a conditional here would be a branch in the loops these serve) */
static inline uint64_t cs_select_bits(int c, uint64_t a, uint64_t b)
{
    const uint64_t m = (uint64_t)0 - (uint64_t)(c != 0);
    return (a & m) | (b & ~m);
}

static inline double cs_float16_to_double_lanes(uint16_t h)
{
    const uint64_t sign = (uint64_t)(h & 0x8000u) << 48, m = h & 0x3ffu;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint64_t normal = sign | ((uint64_t)(e + 1008) << 52) | (m << 42);
    const uint64_t special = sign | 0x7ff0000000000000ULL | (m << 42); /* inf, or NaN with its payload */
    const uint64_t denormal = sign | cs_bits_of_double((double)(int32_t)m * 0x1p-24);   /* exact */
    return cs_double_of_bits(cs_select_bits(e == 0x1f, special, cs_select_bits(e == 0, denormal, normal)));
}

/* v rounded to `ebits` / `mbits` as cs_half_bits_from_double: the normal range's integer add, the
 * denormals' rint of |v| scaled to count least denormals (by adding 2^52, which rounds to nearest
 * even in the default mode; a count of 2^mbits is the least normal, as it should be), NaN and the
 * range's ends, then one of them by a select */
static inline uint16_t cs_half_bits_from_double_lanes(double v, const int ebits, const int mbits)
{
    const uint64_t u = cs_bits_of_double(v), a = u & 0x7fffffffffffffffULL;
    const uint32_t sign = (uint32_t)(u >> 48) & 0x8000u;
    const int bias = (1 << (ebits - 1)) - 1, drop = 52 - mbits;
    const uint32_t inf = ((1u << ebits) - 1u) << mbits;
    const uint64_t r = a + ((1ULL << (drop - 1)) - 1) + ((a >> drop) & 1);
    const int64_t normal = (int64_t)(r >> drop) - ((int64_t)(1023 - bias) << mbits);
    const double scaled = cs_double_of_bits(a) * cs_double_of_bits((uint64_t)(1023 + bias - 1 + mbits) << 52);
    const uint32_t denormal = (uint32_t)(cs_bits_of_double(scaled + 0x1p52) & ((2u << mbits) - 1u));
    const uint32_t nan = inf | (1u << (mbits - 1)) | (uint32_t)((a >> drop) & ((1u << mbits) - 1u));
    const uint64_t finite = cs_select_bits(normal >= (int64_t)inf, inf, (uint64_t)normal);
    const uint64_t bits = cs_select_bits(a > 0x7ff0000000000000ULL, nan,
                                         cs_select_bits(a < ((uint64_t)(1023 + 1 - bias) << 52), denormal, finite));
    return (uint16_t)(sign | bits);
}
static inline uint16_t cs_float16_from_double_lanes(double v) { return cs_half_bits_from_double_lanes(v, 5, 10); }
static inline uint16_t cs_bfloat16_from_double_lanes(double v) { return cs_half_bits_from_double_lanes(v, 8, 7); }
#endif

CS_HD double cs_float16_to_double(uint16_t h)
{
#if defined(__CUDA_ARCH__)
    __half_raw r;
    r.x = h;
    return (double)__half2float(__half(r));
#else
    return cs_half_bits_to_double(h, 5, 10);
#endif
}

CS_HD uint16_t cs_float16_from_double(double v)
{
#if defined(__CUDA_ARCH__)
    return __half_raw(__double2half(v)).x;
#else
    return cs_half_bits_from_double(v, 5, 10);
#endif
}

CS_HD double cs_bfloat16_to_double(uint16_t h)
{
#if defined(__CUDA_ARCH__)
    __nv_bfloat16_raw r;
    r.x = h;
    return (double)__bfloat162float(__nv_bfloat16(r));
#else
    /* the top half of a float32 */
    const uint32_t w = (uint32_t)h << 16;
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
#endif
}

CS_HD uint16_t cs_bfloat16_from_double(double v)
{
#if defined(__CUDA_ARCH__)
    return __nv_bfloat16_raw(__double2bfloat16(v)).x;
#else
    return cs_half_bits_from_double(v, 8, 7);
#endif
}

#endif
