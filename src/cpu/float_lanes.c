/* cpu/float_lanes.c - the block totals of split float lines (scan.c's lane totals) in AVX2 or
 * AVX-512 registers, with the folds of scan.c's scalar form in the same order. */
#include <stdint.h>
#include <string.h>
#include "simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

/* eight float64 lanes on AVX2, in two vectors */
typedef struct acc8_avx2 {
    __m256d lo, hi;
} acc8_avx2;
AVX2_INLINE void store8_avx2(double *p, acc8_avx2 a) { _mm256_storeu_pd(p, a.lo), _mm256_storeu_pd(p + 4, a.hi); }

/* Split lines' block totals (scan.c's lane totals): of each block, element k of n from its first
 * (steps of dir = +-1, the mask's alike) into lane k % 8 of float64 lanes from the identity, the
 * lanes then folded in order: the same folds in the same order as scan.c's scalar form, 8 lanes a
 * vector, one block at a time (blocks side by side, their chains of folds overlapping, ran slower
 * here: their streams lie a power of two apart). */
#define LANE_TOTAL(NAME, TARGET, ACC, ACC_INIT, LOAD, STORE, OP)                                       \
    TARGET static inline __attribute__((always_inline)) double NAME##_g(const void *xv, const unsigned char *m, \
                                        int64_t n, int dir, const int PROD, const int MASKED, const int F64) \
    {                                                                                               \
        const double ident = PROD ? 1.0 : -0.0, masked = PROD ? 1.0 : 0.0;                          \
        ACC lane = ACC_INIT(ident);                                                                 \
        int64_t k = 0;                                                                              \
        for (; k + 8 <= n; k += 8) {                                                                \
            const int64_t at = dir > 0 ? k : -(k + 7); /* the eight's lowest element */             \
            uint64_t mb = 0;                                                                        \
            if (MASKED) {                                                                           \
                memcpy(&mb, m + at, 8);                                                             \
                if (dir < 0) mb = __builtin_bswap64(mb);                                            \
            }                                                                                       \
            lane = OP(lane, LOAD(xv, at, dir, mb, masked, MASKED, F64), PROD);                      \
        }                                                                                           \
        double l8[8], total = ident;                                                                \
        STORE(l8, lane);                                                                            \
        for (; k < n; k++) {                                                                        \
            double v = F64 ? ((const double *)xv)[k * dir] : (double)((const float *)xv)[k * dir];   \
            if (MASKED && !m[k * dir]) v = masked;                                                  \
            l8[k % 8] = PROD ? l8[k % 8] * v : l8[k % 8] + v;                                       \
        }                                                                                           \
        for (int j = 0; j < 8; j++) total = PROD ? total * l8[j] : total + l8[j];                   \
        return total;                                                                               \
    }                                                                                               \
    TARGET static inline __attribute__((always_inline)) void NAME##_f(const void *x, const unsigned char *m, \
        int64_t n, int64_t nb, int64_t gap, int dir, double *totals, const int PROD, const int MASKED, const int F64) \
    {                                                                                               \
        for (int64_t i = 0; i < nb; i++)                                                            \
            totals[i] = NAME##_g((const char *)x + i * gap * dir * (F64 ? 8 : 4), MASKED ? m + i * gap * dir : m, n, \
                                 dir, PROD, MASKED, F64);                                           \
    }                                                                                               \
    /* the flags as constants in each call, so that each form compiles without tests in its loop */ \
    TARGET static void NAME(const void *x, const unsigned char *m, int64_t n, int64_t nb, int64_t gap, int dir, \
                            double *totals, int prod, int f64)                                      \
    {                                                                                               \
        if (prod && m && f64) NAME##_f(x, m, n, nb, gap, dir, totals, 1, 1, 1);                     \
        else if (prod && m) NAME##_f(x, m, n, nb, gap, dir, totals, 1, 1, 0);                       \
        else if (prod && f64) NAME##_f(x, m, n, nb, gap, dir, totals, 1, 0, 1);                     \
        else if (prod) NAME##_f(x, m, n, nb, gap, dir, totals, 1, 0, 0);                            \
        else if (m && f64) NAME##_f(x, m, n, nb, gap, dir, totals, 0, 1, 1);                        \
        else if (m) NAME##_f(x, m, n, nb, gap, dir, totals, 0, 1, 0);                               \
        else if (f64) NAME##_f(x, m, n, nb, gap, dir, totals, 0, 0, 1);                             \
        else NAME##_f(x, m, n, nb, gap, dir, totals, 0, 0, 0);                                      \
    }

/* 8 elements in walk order as doubles, those whose mask byte (mb, in walk order) is 0 replaced (the
 * empty asm as in float_tiles.c's mask_f64: a load under the mask would wait for the mask bytes) */
AVX512_INLINE __m512d lanes_load_avx512(const void *x, int64_t at, int dir, uint64_t mb, double masked,
                                        const int MASKED, const int F64)
{
    __m512d v;
    if (F64) {
        v = _mm512_loadu_pd((const double *)x + at);
        __asm__("" : "+v"(v));
        if (dir < 0) v = _mm512_permutexvar_pd(_mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0), v);
    } else {
        __m256 f = _mm256_loadu_ps((const float *)x + at);
        __asm__("" : "+x"(f));
        if (dir < 0) f = _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
        v = _mm512_cvtps_pd(f);
    }
    if (MASKED) {
        const __m128i b = _mm_cvtsi64_si128((long long)mb);
        v = _mm512_mask_blend_pd((__mmask8)_mm_test_epi8_mask(b, b), _mm512_set1_pd(masked), v);
    }
    return v;
}
#define LANES_OP_AVX512(acc, v, PROD) (PROD ? _mm512_mul_pd(acc, v) : _mm512_add_pd(acc, v))
LANE_TOTAL(lane_total_avx512, AVX512, __m512d, _mm512_set1_pd, lanes_load_avx512, _mm512_storeu_pd, LANES_OP_AVX512)

/* the same on AVX2, the lanes in two vectors */
AVX2_INLINE acc8_avx2 lanes_load_avx2(const void *x, int64_t at, int dir, uint64_t mb, double masked, const int MASKED,
                                      const int F64)
{
    __m256d lo, hi;
    if (F64) {
        const double *p = (const double *)x + at;
        lo = _mm256_loadu_pd(p), hi = _mm256_loadu_pd(p + 4);
        if (dir < 0) {
            const __m256d t = _mm256_permute4x64_pd(hi, 0x1B);
            hi = _mm256_permute4x64_pd(lo, 0x1B), lo = t;
        }
    } else {
        __m256 f = _mm256_loadu_ps((const float *)x + at);
        if (dir < 0) f = _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
        lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
    }
    if (MASKED) {
        const __m256i b = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)(uint32_t)mb));
        const __m256i c = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)(uint32_t)(mb >> 32)));
        const __m256d fill = _mm256_set1_pd(masked);
        lo = _mm256_blendv_pd(lo, fill, _mm256_castsi256_pd(_mm256_cmpeq_epi64(b, _mm256_setzero_si256())));
        hi = _mm256_blendv_pd(hi, fill, _mm256_castsi256_pd(_mm256_cmpeq_epi64(c, _mm256_setzero_si256())));
    }
    return (acc8_avx2){ lo, hi };
}
AVX2_INLINE acc8_avx2 lanes_op_avx2(acc8_avx2 a, acc8_avx2 v, const int PROD)
{
    return PROD ? (acc8_avx2){ _mm256_mul_pd(a.lo, v.lo), _mm256_mul_pd(a.hi, v.hi) }
                : (acc8_avx2){ _mm256_add_pd(a.lo, v.lo), _mm256_add_pd(a.hi, v.hi) };
}
AVX2_INLINE acc8_avx2 lanes_init_avx2(double v) { return (acc8_avx2){ _mm256_set1_pd(v), _mm256_set1_pd(v) }; }
LANE_TOTAL(lane_total_avx2, AVX2, acc8_avx2, lanes_init_avx2, lanes_load_avx2, store8_avx2, lanes_op_avx2)

int cs_cpu_float_lanes(int dtype, const void *x, const unsigned char *m, int64_t n, int64_t nb, int64_t gap, int dir,
                       int prod, double *totals)
{
    if (!cs_cpu_avx2() || (dtype != CS_TILE_F32 && dtype != CS_TILE_F64)) return 0;
    (cs_cpu_avx512() ? lane_total_avx512 : lane_total_avx2)(x, m, n, nb, gap, dir, totals, prod, dtype == CS_TILE_F64);
    return 1;
}
#else
int cs_cpu_float_lanes(int dtype, const void *x, const unsigned char *m, int64_t n, int64_t nb, int64_t gap, int dir,
                       int prod, double *totals)
{
    (void)dtype, (void)x, (void)m, (void)n, (void)nb, (void)gap, (void)dir, (void)prod, (void)totals;
    return 0;
}
#endif
