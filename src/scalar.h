/* scalar.h - per-element semantics shared by the CPU backend (C) and the CUDA kernels (C++), so that
 * both devices compute the same values: the random number generator, element-wise ops, conversions.
 * Float ops are computed in double and rounded to the output dtype; integer ops wrap (two's
 * complement) through unsigned arithmetic. */
#ifndef CUSCAN_SCALAR_H
#define CUSCAN_SCALAR_H
#include <math.h>
#include <stdint.h>
#include "cuscan.h"
#include "half.h"

/* Philox4x32-10 (Salmon et al. 2011), the generator cuRAND and PyTorch use. */
CS_HD void cs_philox4x32(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1;
        c[3] = (uint32_t)p0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* Uniform in [0, 1) for element `index` under `seed`, in as many random bits as dtype's significand
 * holds (53 for float64, 24 for float32, 11 for float16, 8 for bfloat16), so that every value is exact
 * in dtype and none rounds up to 1 (as PyTorch draws them). */
CS_HD double cs_uniform(uint64_t index, uint64_t seed, cs_dtype dtype)
{
    uint32_t c[4] = { (uint32_t)index, (uint32_t)(index >> 32), 0u, 0u };
    cs_philox4x32(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    if (dtype == CS_FLOAT64) {
        uint64_t bits = (((uint64_t)c[0] << 32) | c[1]) >> 11;
        return (double)bits * (1.0 / 9007199254740992.0);
    }
    const int bits = dtype == CS_FLOAT16 ? 11 : dtype == CS_BFLOAT16 ? 8 : 24;
    return (double)(c[0] >> (32 - bits)) / (double)(1u << bits);
}

CS_HD int cs_is_float(cs_dtype d)
{
    return d == CS_FLOAT32 || d == CS_FLOAT64 || d == CS_FLOAT16 || d == CS_BFLOAT16;
}

/* A scan's initial value (cs_scan_args.initial): element off of base, of any dtype, in the type the
 * scan accumulates in. Integer scans take integer and bool initial values only (scan.c refuses
 * floats), so cs_initial_int64 never converts a float. */
CS_HD double cs_initial_double(const void *base, int64_t off, cs_dtype dtype)
{
    switch (dtype) {
    case CS_FLOAT32: return ((const float *)base)[off];
    case CS_FLOAT64: return ((const double *)base)[off];
    case CS_FLOAT16: return cs_float16_to_double(((const uint16_t *)base)[off]);
    case CS_BFLOAT16: return cs_bfloat16_to_double(((const uint16_t *)base)[off]);
    case CS_INT32: return ((const int32_t *)base)[off];
    case CS_INT64: return (double)((const int64_t *)base)[off];
    default: return ((const unsigned char *)base)[off] != 0;
    }
}

CS_HD int64_t cs_initial_int64(const void *base, int64_t off, cs_dtype dtype)
{
    switch (dtype) {
    case CS_INT32: return ((const int32_t *)base)[off];
    case CS_INT64: return ((const int64_t *)base)[off];
    case CS_BOOL: return ((const unsigned char *)base)[off] != 0;
    default: return 0; /* a float: refused before any scan runs */
    }
}

/* Standard normal for element `index` under `seed`: the Box-Muller transform of two 53-bit uniforms
 * from one Philox block whose counter differs from cs_uniform's (word 2 is 1), so that rand and randn
 * of one seed are independent. */
CS_HD double cs_normal(uint64_t index, uint64_t seed)
{
    uint32_t c[4] = { (uint32_t)index, (uint32_t)(index >> 32), 1u, 0u };
    cs_philox4x32(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    const uint64_t a = (((uint64_t)c[0] << 32) | c[1]) >> 11, b = (((uint64_t)c[2] << 32) | c[3]) >> 11;
    const double u1 = ((double)a + 1.0) * (1.0 / 9007199254740992.0); /* in (0, 1]: log(u1) is finite */
    const double u2 = (double)b * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

CS_HD double cs_unary_double(int op, double a)
{
    switch (op) {
    case CS_NEG: return -a;
    case CS_EXP: return exp(a);
    case CS_LOG: return log(a);
    case CS_ABS: return fabs(a);
    case CS_SQRT: return sqrt(a);
    case CS_LOGICAL_NOT: return a == 0.0;
    }
    return a;
}

CS_HD int64_t cs_unary_int(int op, int64_t a)
{
    switch (op) {
    case CS_NEG: return (int64_t)(0u - (uint64_t)a);
    case CS_ABS: return a < 0 ? (int64_t)(0u - (uint64_t)a) : a;
    case CS_LOGICAL_NOT: return a == 0;
    }
    return a;
}

CS_HD double cs_maxd(double a, double b) { return (a != a || a > b) ? a : b; }
CS_HD double cs_mind(double a, double b) { return (a != a || a < b) ? a : b; }

CS_HD double cs_binary_double(int op, double a, double b)
{
    switch (op) {
    case CS_ADD: return a + b;
    case CS_SUB: return a - b;
    case CS_MUL: return a * b;
    case CS_DIV: return a / b;
    case CS_POW: return pow(a, b);
    case CS_LT: return a < b;
    case CS_LE: return a <= b;
    case CS_GT: return a > b;
    case CS_GE: return a >= b;
    case CS_EQ: return a == b;
    case CS_NE: return a != b;
    case CS_LOGICAL_AND: return a != 0.0 && b != 0.0;
    case CS_LOGICAL_OR: return a != 0.0 || b != 0.0;
    case CS_MAX2: return (b != b) ? b : cs_maxd(a, b);
    case CS_MIN2: return (b != b) ? b : cs_mind(a, b);
    }
    return 0.0;
}

/* Integer power by squaring, wrapping; negative exponents give 0 except for bases 1 and -1. */
CS_HD int64_t cs_ipow(int64_t a, int64_t e)
{
    if (e < 0) return a == 1 ? 1 : (a == -1 ? ((e & 1) ? -1 : 1) : 0);
    uint64_t r = 1, b = (uint64_t)a;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

CS_HD int64_t cs_binary_int(int op, int64_t a, int64_t b)
{
    switch (op) {
    case CS_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case CS_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case CS_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case CS_DIV: return b == 0 ? 0 : (b == -1 ? (int64_t)(0u - (uint64_t)a) : a / b);
    case CS_POW: return cs_ipow(a, b);
    case CS_LT: return a < b;
    case CS_LE: return a <= b;
    case CS_GT: return a > b;
    case CS_GE: return a >= b;
    case CS_EQ: return a == b;
    case CS_NE: return a != b;
    case CS_LOGICAL_AND: return a != 0 && b != 0;
    case CS_LOGICAL_OR: return a != 0 || b != 0;
    case CS_MAX2: return a > b ? a : b;
    case CS_MIN2: return a < b ? a : b;
    }
    return 0;
}

/* Loads element i of an array of dtype d as double or as int64. */
CS_HD double cs_load_double(const void *p, cs_dtype d, int64_t i)
{
    switch (d) {
    case CS_FLOAT32: return ((const float *)p)[i];
    case CS_FLOAT64: return ((const double *)p)[i];
    case CS_INT32: return ((const int32_t *)p)[i];
    case CS_INT64: return (double)((const int64_t *)p)[i];
    case CS_BOOL: return ((const uint8_t *)p)[i] != 0;
    case CS_FLOAT16: return cs_float16_to_double(((const uint16_t *)p)[i]);
    case CS_BFLOAT16: return cs_bfloat16_to_double(((const uint16_t *)p)[i]);
    }
    return 0.0;
}

CS_HD int64_t cs_load_int(const void *p, cs_dtype d, int64_t i)
{
    switch (d) {
    case CS_FLOAT32: { float v = ((const float *)p)[i]; return v != v ? 0 : (v >= 9.2233720368547758e18f ? INT64_MAX : (v <= -9.2233720368547758e18f ? INT64_MIN : (int64_t)v)); }
    case CS_FLOAT64: case CS_FLOAT16: case CS_BFLOAT16: {
        double v = cs_load_double(p, d, i);
        return v != v ? 0 : (v >= 9.2233720368547758e18 ? INT64_MAX : (v <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)v));
    }
    case CS_INT32: return ((const int32_t *)p)[i];
    case CS_INT64: return ((const int64_t *)p)[i];
    case CS_BOOL: return ((const uint8_t *)p)[i] != 0;
    }
    return 0;
}

CS_HD void cs_store_double(void *p, cs_dtype d, int64_t i, double v)
{
    switch (d) {
    case CS_FLOAT32: ((float *)p)[i] = (float)v; break;
    case CS_FLOAT64: ((double *)p)[i] = v; break;
    case CS_INT32: ((int32_t *)p)[i] = (int32_t)(v != v ? 0 : (v >= 2147483647.0 ? 2147483647.0 : (v <= -2147483648.0 ? -2147483648.0 : v))); break;
    case CS_INT64: ((int64_t *)p)[i] = v != v ? 0 : (v >= 9.2233720368547758e18 ? INT64_MAX : (v <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)v)); break;
    case CS_BOOL: ((uint8_t *)p)[i] = v != 0.0; break;
    case CS_FLOAT16: ((uint16_t *)p)[i] = cs_float16_from_double(v); break;
    case CS_BFLOAT16: ((uint16_t *)p)[i] = cs_bfloat16_from_double(v); break;
    }
}

CS_HD void cs_store_int(void *p, cs_dtype d, int64_t i, int64_t v)
{
    switch (d) {
    case CS_FLOAT32: ((float *)p)[i] = (float)v; break;
    case CS_FLOAT64: ((double *)p)[i] = (double)v; break;
    case CS_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case CS_INT64: ((int64_t *)p)[i] = v; break;
    case CS_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case CS_FLOAT16: case CS_BFLOAT16: cs_store_double(p, d, i, (double)v); break;
    }
}

#endif
