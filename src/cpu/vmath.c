/* cpu/vmath.c - exp and log of float32 elements, and the float64 exp and log of logcumsumexp's
 * chunks (scan_general.c), through glibc's vector math library (libmvec), four or two at a time
 * instead of one: the Makefile builds this file with -fno-math-errno and
 * -DCS_HAVE_MVEC when libmvec links, so that GCC calls the vector forms it declares below. They
 * compute in float64 within 4 ulps, far below the float32 rounding of the result; float64 outputs keep
 * the scalar functions (exact to the last bit as Lua's math).
 * float32 exp on AVX-512 computes inline instead (exp8_avx512), to the same bits: see there. */
#include <math.h>
#include <stdint.h>
#include "simd.h"

#ifdef CS_HAVE_MVEC
double exp(double) __attribute__((simd("notinbranch")));
double log(double) __attribute__((simd("notinbranch")));
#endif

/* (float)exp((double)a), as every CPU without the AVX-512 form below computes it */
VECTOR_KERNEL static void exp_f32_mvec(const float *a, float *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++) r[i] = (float)exp((double)a[i]);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define EXP_AVX512 __attribute__((target("avx2,fma,avx512f,avx512vl")))

/* The float32 exp of 8 lanes in float64 on AVX-512: x = k ln2/16 + r, |r| <= ln2/32 (k rounded to
 * an integer by the add of 1.5 * 2^52, which leaves k mod 16 in the low bits: the table's index), with
 * ln2/16 in two parts (the first exact times any k here); exp(r) by its Taylor series to r^5, times
 * 2^(k mod 16 / 16) from a table of the float64s nearest to them and 2^floor(k / 16). The float64
 * result is within ERR ulps of exp(x) (the series' remainder, bounded by e^|r| |r|^6 / 720, and a few
 * ulps of rounding), so that it rounds to the float that exp(x) rounds to, as libmvec's result does
 * (within 4 ulps), unless exp(x) lies that close to a midpoint between floats. Such lanes (the
 * float64's bits within GUARD of a midpoint), and those whose float is not normal or is out of
 * range (and NaN), are marked in *hard, for libmvec's own answer. */
enum { ERR = 1400, GUARD = 4096 }; /* float64 ulps: GUARD above ERR plus libmvec's 4 */
EXP_AVX512 static inline __attribute__((always_inline)) __m256 exp8_avx512(__m256 f, __mmask8 *hard)
{
    static const double table[16] = {
        0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
        0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
        0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
        0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0 };
    const __m512d shift = _mm512_set1_pd(0x1.8p52);
    const __m512d x = _mm512_cvtps_pd(f);
    const __m512d kt = _mm512_fmadd_pd(x, _mm512_set1_pd(0x1.71547652b82fep+4), shift); /* k + 1.5 * 2^52 */
    const __m512d k = _mm512_sub_pd(kt, shift);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(0x1.62e42fefa3000p-5), x);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(0x1.3de6af278ece6p-46), r);
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(0x1.1111111111111p-7), r, _mm512_set1_pd(0x1.5555555555555p-5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0x1.5555555555555p-3));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(0.5));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    const __m512d t = _mm512_permutex2var_pd(_mm512_loadu_pd(table), _mm512_castpd_si512(kt), _mm512_loadu_pd(table + 8));
    const __m512d y = _mm512_scalef_pd(_mm512_mul_pd(p, t), _mm512_mul_pd(k, _mm512_set1_pd(0.0625)));
    /* normal floats only, and not rounded past the largest */
    const __mmask8 in = _mm512_cmp_pd_mask(x, _mm512_set1_pd(-87.3), _CMP_GE_OQ) &
                        _mm512_cmp_pd_mask(x, _mm512_set1_pd(88.7), _CMP_LE_OQ);
    /* the low 29 bits (below float's last place) within GUARD of half that place */
    const __m512i low = _mm512_and_si512(_mm512_add_epi64(_mm512_castpd_si512(y), _mm512_set1_epi64(GUARD - (1LL << 28))),
                                         _mm512_set1_epi64((1LL << 29) - 1));
    *hard = (__mmask8)(~in | _mm512_cmplt_epu64_mask(low, _mm512_set1_epi64(2 * GUARD)));
    return _mm512_cvtpd_ps(y);
}

/* lanes of hard as libmvec computes them (the form GCC calls in exp_f32_mvec's AVX-512 copy) */
#ifdef CS_HAVE_MVEC
__m512d _ZGVeN8v_exp(__m512d);
#endif
EXP_AVX512 static __attribute__((noinline)) __m256 exp8_hard(__m256 f, __m256 y, __mmask8 hard)
{
#ifdef CS_HAVE_MVEC
    return _mm256_mask_mov_ps(y, hard, _mm512_cvtpd_ps(_ZGVeN8v_exp(_mm512_cvtps_pd(f))));
#else
    float a[8], b[8];
    _mm256_storeu_ps(a, f);
    _mm256_storeu_ps(b, y);
    for (int i = 0; i < 8; i++)
        if (hard >> i & 1) b[i] = (float)exp((double)a[i]);
    return _mm256_loadu_ps(b);
#endif
}

EXP_AVX512 static void exp_f32_avx512(const float *a, float *r, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __mmask8 hard;
        const __m256 f = _mm256_loadu_ps(a + i);
        __m256 y = exp8_avx512(f, &hard);
        if (__builtin_expect(hard != 0, 0)) y = exp8_hard(f, y, hard);
        _mm256_storeu_ps(r + i, y);
    }
    if (i < n) { /* the last lanes under a mask */
        const __mmask8 m = (__mmask8)((1u << (n - i)) - 1u);
        __mmask8 hard;
        const __m256 f = _mm256_maskz_loadu_ps(m, a + i);
        __m256 y = exp8_avx512(f, &hard);
        hard &= m;
        if (hard) y = exp8_hard(f, y, hard);
        _mm256_mask_storeu_ps(r + i, m, y);
    }
}

void cs_cpu_exp_f32(const float *a, float *r, int64_t n)
{
    if (cs_cpu_avx512()) exp_f32_avx512(a, r, n);
    else exp_f32_mvec(a, r, n);
}
#else
void cs_cpu_exp_f32(const float *a, float *r, int64_t n)
{
    exp_f32_mvec(a, r, n);
}
#endif

VECTOR_KERNEL void cs_cpu_log_f32(const float *a, float *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++) r[i] = (float)log((double)a[i]);
}

/* t[i] = exp(x[i] - r[i]) where keep[i], else 0 */
VECTOR_KERNEL void cs_cpu_exp_diff_f64(const double *x, const double *r, const unsigned char *keep, double *t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const double e = exp(x[i] - r[i]);
        t[i] = keep[i] ? e : 0.0;
    }
}

/* r[i] = log(a[i]) */
VECTOR_KERNEL void cs_cpu_log_f64(const double *a, double *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++) r[i] = log(a[i]);
}
