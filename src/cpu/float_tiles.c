/* cpu/float_tiles.c - float sums and products over a tile of lines, in AVX2 or AVX-512 registers
 * (float32, float64, float16 and bfloat16 in and out alike; float32 into float64 for rows).
 * rows     eight lines whose elements lie next to each other: a block of steps of the eight lines is
 *          loaded, transposed so that one vector holds one step of every line, folded, transposed
 *          back and stored, without the buffers of the generic walk;
 * columns  lines next to each other: each step of every line is one run of vectors;
 * mixed    float32 lines along the scan on one side and next to each other on the other (a
 *          transposed input into a contiguous result, or the reverse): one transpose a block.
 * Every output is the in-order float64 prefix of its line rounded once, as in the other walks (the
 * half types through floats rounded to odd, see odd4_f16 and odd8_bits_avx512, but for bfloat16:
 * on AVX2 through the nearest float, see bf16_round8, on AVX-512 on the doubles' bits, see
 * bf16_near8_avx512, or with AVX512-BF16 through floats rounded to odd and its own conversion, see
 * fold8_bf16n).
 * Stores bypass the caches (streaming stores) when the caller says the output is larger than they
 * are and the stores can be aligned: the output is then written once instead of read, merged and
 * written back. Streaming stores are weakly ordered: each thread that may have made them calls
 * cs_cpu_stream_fence before its results are read elsewhere. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "half.h"
#include "simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>


/* lines [l0, l1) over steps [k0, k1), one element at a time (edges and peels) */
#define SCALAR_STEPS(T, TO, TO_DOUBLE, FROM_DOUBLE)                                                 \
    for (int64_t k = k0; k < k1; k++)                                                               \
        for (int64_t l = l0; l < l1; l++) {                                                         \
            double v = TO_DOUBLE(((const T *)a->x)[l * a->xl + k * a->xs]);                         \
            if (a->m && !a->m[l * a->ml + k * a->ms]) v = a->prod ? 1.0 : 0.0;                      \
            const double next = a->prod ? acc[l] * v : acc[l] + v;                                  \
            const double out = k == 0 && l < a->empty ? (a->prod ? 1.0 : 0.0) : a->excl ? acc[l] : next; \
            if (a->y) ((TO *)a->y)[l * a->yl + k * a->ys] = FROM_DOUBLE(out);                       \
            acc[l] = next;                                                                          \
        }

#define AS_DOUBLE(v) ((double)(v))
#define AS_FLOAT(v) ((float)(v))
static void scalar_f32(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, int64_t k0, int64_t k1)
{
    SCALAR_STEPS(float, float, AS_DOUBLE, AS_FLOAT)
}

static void scalar_f64(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, int64_t k0, int64_t k1)
{
    SCALAR_STEPS(double, double, AS_DOUBLE, AS_DOUBLE)
}

static void scalar_f16(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, int64_t k0, int64_t k1)
{
    SCALAR_STEPS(uint16_t, uint16_t, cs_float16_to_double, cs_float16_from_double)
}

static void scalar_bf16(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, int64_t k0, int64_t k1)
{
    SCALAR_STEPS(uint16_t, uint16_t, cs_bfloat16_to_double, cs_bfloat16_from_double)
}

static void scalar_f32_f64(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, int64_t k0, int64_t k1)
{
    SCALAR_STEPS(float, double, AS_DOUBLE, AS_DOUBLE)
}

/* rows r[0..7] of eight floats become columns: r[j] then holds element j of every row */
AVX2_INLINE void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* rows r[0..3] of four doubles become columns */
AVX2_INLINE void transpose4(__m256d r[4])
{
    const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

/* elements whose mask byte is 0 replaced by `masked` (the bytes of consecutive elements). The empty
 * asm keeps v loaded on its own: see mask_f64. */
AVX2_INLINE __m256 mask_f32(__m256 v, const unsigned char *m, __m256 masked)
{
    __asm__("" : "+x"(v));
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)m));
    return _mm256_blendv_ps(v, masked, _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, _mm256_setzero_si256())));
}

/* The empty asm keeps v loaded on its own: folded into a load under the mask (as the compiler does
 * on AVX-512 for the rows and columns, and for the column totals' converting loads), the load waits
 * for the mask bytes and the walk's streams from memory stall. */
AVX2_INLINE __m256d mask_f64(__m256d v, const unsigned char *m, __m256d masked)
{
    __asm__("" : "+x"(v));
    int32_t w;
    memcpy(&w, m, sizeof w);
    const __m256i b = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w));
    return _mm256_blendv_pd(v, masked, _mm256_castsi256_pd(_mm256_cmpeq_epi64(b, _mm256_setzero_si256())));
}

/* mask_f32 on AVX-512: the 8 mask bytes tested into a mask register, v kept where they are set */
AVX512_INLINE __m256 mask_f32_k(__m256 v, const unsigned char *m, __m256 masked)
{
    __asm__("" : "+v"(v)); /* (any of the 32 registers: "x" would tie v to the first 16) */
    const __m128i b = _mm_loadl_epi64((const __m128i *)m);
    return _mm256_mask_blend_ps((__mmask8)_mm_test_epi8_mask(b, b), masked, v);
}
#define mask8_avx2 mask_f32
#define mask8_avx512 mask_f32_k

/* lanes i with from + i < empty (the lines whose first output is an exclusive scan's empty prefix) */
AVX2_INLINE __m256i empty_lanes32(int64_t empty, int64_t from)
{
    const int64_t n = empty - from < 0 ? 0 : empty - from > 8 ? 8 : empty - from;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AVX2_INLINE __m256i empty_lanes64(int64_t empty, int64_t from)
{
    const int64_t n = empty - from < 0 ? 0 : empty - from > 4 ? 4 : empty - from;
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}

/* one step of a fold: acc = acc op v; its output is the old or the new accumulator */
#define FOLD(acc, v, PROD, EXCL)                                                                    \
    ({                                                                                              \
        const __m256d prev_ = (acc);                                                                \
        (acc) = PROD ? _mm256_mul_pd(prev_, (v)) : _mm256_add_pd(prev_, (v));                        \
        EXCL ? prev_ : (acc);                                                                       \
    })

/* AVX-512: eight float64 accumulators in one vector, and a step of 8 floats folded into them */
typedef __m512d acc8_avx512;

AVX512_INLINE acc8_avx512 load8_avx512(const double *p) { return _mm512_loadu_pd(p); }
AVX512_INLINE void store8_avx512(double *p, acc8_avx512 a) { _mm512_storeu_pd(p, a); }

/* Doubles to floats rounded to odd: truncated, and the last bit set where that was inexact. A float
 * so rounded, rounded again to nearest at 2 or more bits fewer (float16, bfloat16), gives the double
 * rounded once to nearest: the rule of half.h. NaN stays NaN with its top payload bits. */
AVX512_INLINE __m256 odd8_avx512(__m512d d)
{
    const __m256 t = _mm512_cvt_roundpd_ps(d, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), d, _CMP_NEQ_UQ);
    const __m256i b = _mm256_castps_si256(t);
    return _mm256_castsi256_ps(_mm256_mask_or_epi32(b, inexact, b, _mm256_set1_epi32(1)));
}

/* The same on the doubles' bits, for float16: where any bit below float's last place is set, those
 * bits cleared and that place set (one test and one masked ternary op), then converted exactly: two
 * integer operations where odd8_avx512 takes two conversions more, which are what these tiles wait
 * on. Exact within float's normal range and beyond it (too large: inf either way); below it the
 * conversion rounds again, to nearest, where float16's outputs are zeros all the same. */
AVX512_INLINE __m256 odd8_bits_avx512(__m512d d)
{
    const __m512i u = _mm512_castpd_si512(d), low = _mm512_set1_epi64((1LL << 29) - 1);
    /* 0xBA: (u & ~low) | place */
    const __m512i v = _mm512_mask_ternarylogic_epi64(u, _mm512_test_epi64_mask(u, low), low,
                                                     _mm512_set1_epi64(1LL << 29), 0xBA);
    return _mm512_cvtpd_ps(_mm512_castsi512_pd(v));
}

/* Floats rounded to odd, rounded to nearest even at bfloat16's last place by an integer add (the
 * carry stepping into the exponent); a NaN keeps its top bits, made quiet. Low 16 bits clear. */
AVX2_INLINE __m256 bf16_of_odd8(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v), one = _mm256_set1_epi32(1);
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
    const __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_blendv_epi8(r, q, nan), _mm256_set1_epi32((int)0xffff0000u)));
}

/* Doubles rounded to bfloat16 as floats (low 16 bits clear): to nearest even at bfloat16's last
 * place on the doubles' bits (the carry may step into the exponent; beyond float's range the
 * conversion gives inf), then converted exactly. Below 2^-135 that gives a float under bfloat16's
 * half least denormal, a zero of d's sign once its low half is dropped, as it should; NaN, and values
 * from there to float's normal range (where bfloat16's places are fixed, not the double's), are not
 * done so: where a lane has one, the eight go through odd8_avx512 and bf16_of_odd8. */
AVX512_INLINE __m256 bf16_near8_avx512(__m512d d)
{
    const __m512i u = _mm512_castpd_si512(d);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi64(u, 45), _mm512_set1_epi64(1));
    const __m512i r = _mm512_add_epi64(_mm512_add_epi64(u, _mm512_set1_epi64((1LL << 44) - 1)), lsb);
    const __m256 t = _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_andnot_si512(_mm512_set1_epi64((1LL << 45) - 1), r)));
    const __m512d a = _mm512_abs_pd(d);
    const __mmask8 other = _mm512_mask_cmp_pd_mask(_mm512_cmp_pd_mask(a, _mm512_set1_pd(0x1p-126), _CMP_NGE_UQ), a,
                                                   _mm512_set1_pd(0x1p-135), _CMP_NLT_UQ);
    return __builtin_expect(other != 0, 0) ? bf16_of_odd8(odd8_avx512(d)) : t;
}

/* how fold8_avx512 rounds its outputs: to the nearest float (float32), to odd (float16, whose
 * conversion then rounds), or to bfloat16 itself */
enum { ROUND_NEAR, ROUND_ODD, ROUND_BF16 };

/* AVX2, float32 rows only, into float32 or float64 (float_tiles_avx2.h has every other AVX2 tile):
 * eight float64 accumulators in two vectors, a step of 8 floats folded into them and rounded to
 * nearest. Kept for float32 rows because on the development machine's Zen 3 it streams a 4096 x
 * 4096 tensor in less time than block_avx2 (bench/NOTES.md, "CPU float tiles on AVX2" and "CPU
 * misses, round 2") */
typedef struct acc8_avx2 {
    __m256d lo, hi;
} acc8_avx2;
AVX2_INLINE acc8_avx2 load8_avx2(const double *p) { return (acc8_avx2){ _mm256_loadu_pd(p), _mm256_loadu_pd(p + 4) }; }
AVX2_INLINE void store8_avx2(double *p, acc8_avx2 a) { _mm256_storeu_pd(p, a.lo), _mm256_storeu_pd(p + 4, a.hi); }
AVX2_INLINE __m256 fold8_avx2(__m256 v, acc8_avx2 *acc, const int PROD, const int EXCL, const int ODD)
{
    (void)ODD; /* float32 outputs: never rounded to odd */
    const __m256d a = FOLD(acc->lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)), PROD, EXCL);
    const __m256d b = FOLD(acc->hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), PROD, EXCL);
    return _mm256_set_m128(_mm256_cvtpd_ps(b), _mm256_cvtpd_ps(a));
}

/* a step of float32 values folded; its outputs as floats rounded as ODD says (ROUND_*) */
AVX512_INLINE __m256 fold8_avx512(__m256 v, acc8_avx512 *acc, const int PROD, const int EXCL, const int ODD)
{
    const __m512d prev = *acc, w = _mm512_cvtps_pd(v);
    *acc = PROD ? _mm512_mul_pd(prev, w) : _mm512_add_pd(prev, w);
    const __m512d out = EXCL ? prev : *acc;
    return ODD == ROUND_BF16 ? bf16_near8_avx512(out) : ODD == ROUND_ODD ? odd8_bits_avx512(out) : _mm512_cvtpd_ps(out);
}

/* Eight elements of a tile's storage type as floats (exact), and back (float32 stored as it is,
 * float16 rounded to nearest from the odd-rounded floats, bfloat16 the top halves of its own) */
typedef float elem_f32;
typedef uint16_t elem_f16, elem_bf16;
enum { ODD_f32 = ROUND_NEAR, ODD_f16 = ROUND_ODD, ODD_bf16 = ROUND_BF16 };
AVX2_INLINE __m256 load8_f32(const float *p) { return _mm256_loadu_ps(p); }
AVX2_INLINE __m256 load8_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
AVX2_INLINE __m256 load8_bf16(const uint16_t *p)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

AVX2_INLINE void store8_f32(float *p, __m256 v, const int STREAM)
{
    if (STREAM) _mm256_stream_ps(p, v);
    else _mm256_storeu_ps(p, v);
}

AVX2_INLINE void store_halves(uint16_t *p, __m128i h, const int STREAM)
{
    if (STREAM) _mm_stream_si128((__m128i *)p, h);
    else _mm_storeu_si128((__m128i *)p, h);
}

AVX2_INLINE void store8_f16(uint16_t *p, __m256 v, const int STREAM)
{
    store_halves(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), STREAM);
}

/* bfloat16 as floats (fold8_avx512's, low 16 bits clear): their top halves */
AVX512_INLINE void store8_bf16(uint16_t *p, __m256 v, const int STREAM)
{
    store_halves(p, _mm256_cvtepi32_epi16(_mm256_srli_epi32(_mm256_castps_si256(v), 16)), STREAM);
}

#define STORE_F64(STREAM, p, v) (STREAM ? _mm256_stream_pd(p, v) : _mm256_storeu_pd(p, v))

/* transpose8 on named vectors: arrays of vectors end up on the stack, named ones in registers */
#define TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)                                                   \
    do {                                                                                            \
        __m256 t_[8] = { r0, r1, r2, r3, r4, r5, r6, r7 };                                          \
        transpose8(t_);                                                                             \
        r0 = t_[0], r1 = t_[1], r2 = t_[2], r3 = t_[3], r4 = t_[4], r5 = t_[5], r6 = t_[6], r7 = t_[7]; \
    } while (0)

/* rows of float64: the block of 4 steps from step k, lines 0-3 and 4-7 as two transposes */
AVX2_INLINE void row_block_f64(const cs_float_tile *a, __m256d *acc_lo, __m256d *acc_hi, int64_t k, const int PROD,
                               const int EXCL, const int BACK, const int MASKED, const int STREAM)
{
    __m256d acc[2] = { *acc_lo, *acc_hi };
    const double *x = a->x;
    double *y = a->y;
    const __m256d masked = _mm256_set1_pd(PROD ? 1.0 : 0.0);
    const int64_t at = BACK ? -(k + 3) : k;
    __m256d r[2][4];
    for (int h = 0; h < 2; h++) {
        for (int l = 0; l < 4; l++) {
            r[h][l] = _mm256_loadu_pd(x + (4 * h + l) * a->xl + at);
            if (MASKED) r[h][l] = mask_f64(r[h][l], a->m + (4 * h + l) * a->ml + at, masked);
        }
        transpose4(r[h]);
    }
    for (int s = 0; s < 4; s++) {
        const int j = BACK ? 3 - s : s;
        r[0][j] = FOLD(acc[0], r[0][j], PROD, EXCL);
        r[1][j] = FOLD(acc[1], r[1][j], PROD, EXCL);
    }
    if (EXCL && k == 0 && a->empty)
        for (int h = 0; h < 2; h++)
            r[h][BACK ? 3 : 0] = _mm256_blendv_pd(r[h][BACK ? 3 : 0], masked,
                                                  _mm256_castsi256_pd(empty_lanes64(a->empty, 4 * h)));
    for (int h = 0; h < 2; h++) {
        transpose4(r[h]);
        for (int l = 0; l < 4; l++) STORE_F64(STREAM, y + (4 * h + l) * a->yl + at, r[h][l]);
    }
    *acc_lo = acc[0], *acc_hi = acc[1];
}

/* Rows of float64, steps [k0, k1) in blocks of 4: two blocks an iteration, so that each line's 64
 * bytes are read and written at once */
AVX2_INLINE void rows_f64(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD, const int EXCL,
                          const int BACK, const int MASKED, const int STREAM)
{
    __m256d lo = _mm256_loadu_pd(acc), hi = _mm256_loadu_pd(acc + 4);
    int64_t k = k0;
    for (; k + 8 <= k1; k += 8) {
        row_block_f64(a, &lo, &hi, k, PROD, EXCL, BACK, MASKED, STREAM);
        row_block_f64(a, &lo, &hi, k + 4, PROD, EXCL, BACK, MASKED, STREAM);
    }
    if (k < k1) row_block_f64(a, &lo, &hi, k, PROD, EXCL, BACK, MASKED, STREAM);
    _mm256_storeu_pd(acc, lo);
    _mm256_storeu_pd(acc + 4, hi);
}

/* line l of a row block, its masked-out elements replaced */
#define ROW_LOAD_M(LOAD8, MASK8, l)                                                                 \
    (MASKED ? MASK8(LOAD8(x + (l) * a->xl + at), a->m + (l) * a->ml + at, masked)                    \
            : LOAD8(x + (l) * a->xl + at))
/* the eight steps of a transposed row block folded in walk order */
#define F32_STEPS(FOLD8, ODD, s0, s1, s2, s3, s4, s5, s6, s7)                                        \
    (s0 = FOLD8(s0, acc, PROD, EXCL, ODD), s1 = FOLD8(s1, acc, PROD, EXCL, ODD),                     \
     s2 = FOLD8(s2, acc, PROD, EXCL, ODD), s3 = FOLD8(s3, acc, PROD, EXCL, ODD),                     \
     s4 = FOLD8(s4, acc, PROD, EXCL, ODD), s5 = FOLD8(s5, acc, PROD, EXCL, ODD),                     \
     s6 = FOLD8(s6, acc, PROD, EXCL, ODD), s7 = FOLD8(s7, acc, PROD, EXCL, ODD))

/* The block of 8 steps from step k of 8 float32 rows (a cs_float_tile a), masked and transposed:
 * r0..r7 hold its steps in memory order, at is the block's lowest element */
#define F32_ROW_BLOCK(M)                                                                            \
    const float *x = a->x;                                                                          \
    const __m256 masked = _mm256_set1_ps(PROD ? 1.0f : 0.0f);                                       \
    const int64_t at = BACK ? -(k + 7) : k;                                                         \
    __m256 r0 = ROW_LOAD_M(load8_f32, M, 0), r1 = ROW_LOAD_M(load8_f32, M, 1);                        \
    __m256 r2 = ROW_LOAD_M(load8_f32, M, 2), r3 = ROW_LOAD_M(load8_f32, M, 3);                        \
    __m256 r4 = ROW_LOAD_M(load8_f32, M, 4), r5 = ROW_LOAD_M(load8_f32, M, 5);                        \
    __m256 r6 = ROW_LOAD_M(load8_f32, M, 6), r7 = ROW_LOAD_M(load8_f32, M, 7);                        \
    TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)

/* float32 rows into float64 on AVX2: fold8_avx2's block, each quad of steps of its doubles
 * transposed back 4 x 4, so that each line's 64 bytes of a block are stored at once */
AVX2_INLINE void row_block_f32_f64_avx2(const cs_float_tile *a, acc8_avx2 *acc, int64_t k, const int PROD,
                                        const int EXCL, const int BACK, const int MASKED, const int STREAM)
{
    double *y = a->y;
    F32_ROW_BLOCK(mask8_avx2);
    const __m256 r[8] = { r0, r1, r2, r3, r4, r5, r6, r7 }; /* memory order */
    for (int qw = 0; qw < 2; qw++) { /* four steps in walk order */
        __m256d d[8]; /* lines 0-3 by memory step of the quad, then lines 4-7 */
        for (int i = 0; i < 4; i++) {
            const int s = 4 * qw + i, j = BACK ? 7 - s : s;
            d[j & 3] = FOLD(acc->lo, _mm256_cvtps_pd(_mm256_castps256_ps128(r[j])), PROD, EXCL);
            d[4 + (j & 3)] = FOLD(acc->hi, _mm256_cvtps_pd(_mm256_extractf128_ps(r[j], 1)), PROD, EXCL);
        }
        if (EXCL && k == 0 && a->empty && qw == 0) {
            const __m256d identity = _mm256_set1_pd(PROD ? 1.0 : 0.0);
            const int j = BACK ? 3 : 0;
            d[j] = _mm256_blendv_pd(d[j], identity, _mm256_castsi256_pd(empty_lanes64(a->empty, 0)));
            d[4 + j] = _mm256_blendv_pd(d[4 + j], identity, _mm256_castsi256_pd(empty_lanes64(a->empty, 4)));
        }
        transpose4(d);
        transpose4(d + 4);
        const int q = BACK ? 1 - qw : qw; /* the quad's place in memory */
        for (int l = 0; l < 8; l++) STORE_F64(STREAM, y + l * a->yl + at + 4 * q, d[l]);
    }
}

AVX2_INLINE void rows_f32_f64_avx2(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD,
                                   const int EXCL, const int BACK, const int MASKED, const int STREAM)
{
    acc8_avx2 s8 = load8_avx2(acc);
    for (int64_t k = k0; k < k1; k += 8) row_block_f32_f64_avx2(a, &s8, k, PROD, EXCL, BACK, MASKED, STREAM);
    store8_avx2(acc, s8);
}

/* Streaming stores of part of a 64-byte line whose rest follows later (the half types' 16 bytes a
 * line of a block) leave the line to go out piecemeal, which on Zen 3 makes the walk far slower
 * than plain stores would: the half types' kernels gather whole lines in a buffer and stream those.
 * One line of 32 halves from buf to y (64-byte aligned); rows: 8 lines, 32 halves apart in buf. */
AVX2_INLINE void stream_line(uint16_t *y, const uint16_t *buf)
{
    _mm256_stream_si256((__m256i *)(void *)y, _mm256_load_si256((const __m256i *)(const void *)buf));
    _mm256_stream_si256((__m256i *)(void *)(y + 16), _mm256_load_si256((const __m256i *)(const void *)(buf + 16)));
}

AVX2_INLINE void stream_lines(uint16_t *y, int64_t yl, const uint16_t *buf)
{
    for (int l = 0; l < 8; l++) stream_line(y + l * yl, buf + 32 * l);
}

/* Rows of a half type, unmasked, on AVX-512: blocks of 32 steps from k0 (as many as [k0, k1) holds;
 * returns where they end), each line's 64 bytes loaded and stored whole. The 8 lines go through an
 * 8 x 8 transpose of 16-bit lanes within each 16-byte quarter of a vector (transpose16x8), so that
 * t[s]'s quarter q holds memory step 8q + s of the 8 lines: a transpose of 2 bytes an element
 * instead of the floats' 4 and 8 in transpose8. The steps are then read back from a buffer one at
 * a time (fewer shuffles, fewer registers held); the outputs go back through the transpose, two
 * steps a conversion. */
AVX512_INLINE void transpose16x8(__m512i r[8])
{
    __m512i a[8], b[8];
    for (int i = 0; i < 4; i++) { /* lines 2i, 2i + 1 interleaved: steps 0-3, then 4-7 */
        a[2 * i] = _mm512_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 8; h += 4) /* lines h to h + 3: steps 0-1, 2-3, 4-5, 6-7 */
        for (int p = 0; p < 2; p++) {
            b[h + 2 * p] = _mm512_unpacklo_epi32(a[h + p], a[h + 2 + p]);
            b[h + 2 * p + 1] = _mm512_unpackhi_epi32(a[h + p], a[h + 2 + p]);
        }
    for (int i = 0; i < 4; i++) { /* steps 2i, 2i + 1 of the 8 lines */
        r[2 * i] = _mm512_unpacklo_epi64(b[i], b[4 + i]);
        r[2 * i + 1] = _mm512_unpackhi_epi64(b[i], b[4 + i]);
    }
}

/* A step of rows32's 8 lines folded (step8), its lines [0, empty) given the identity instead
 * (empty8), and two steps' outputs as 16 halves (unhalf16): fold8_avx512's floats, rounded by it
 * and converted two steps at once; for bfloat16 on AVX512-BF16 (the _bf16n forms below) the 8
 * halves of fold8_bf16n, joined, and the block folded again in its exact form where that says. */
#define step8_f16(v, acc, PROD, EXCL, BACK, STREAM, EXACT, odd) fold8_avx512(v, acc, PROD, EXCL, ROUND_ODD)
#define step8_bf16(v, acc, PROD, EXCL, BACK, STREAM, EXACT, odd) fold8_avx512(v, acc, PROD, EXCL, ROUND_BF16)
AVX512_INLINE __m256 empty8_float(__m256 o, const int PROD, int64_t empty)
{
    return _mm256_blendv_ps(o, _mm256_set1_ps(PROD ? 1.0f : 0.0f), _mm256_castsi256_ps(empty_lanes32(empty, 0)));
}
#define empty8_f16 empty8_float
#define empty8_bf16 empty8_float
#define UNROLL_f16
#define UNROLL_bf16
/* rows32's buffer of the transposed steps (in), as the halves themselves */
typedef uint16_t in_f16, in_bf16;
AVX512_INLINE void store_in_halves(uint16_t *p, __m512i t) { _mm512_store_si512((void *)p, t); }
#define store_in_f16 store_in_halves
#define store_in_bf16 store_in_halves
#define load_in_f16 load8_f16
#define load_in_bf16 load8_bf16
AVX512_INLINE __m512 join16(__m256 a, __m256 b)
{
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(a)), _mm256_castps_pd(b), 1));
}
AVX512_INLINE __m256i unhalf16_f16(__m256 a, __m256 b)
{
    return _mm512_cvtps_ph(join16(a, b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
AVX512_INLINE __m256i unhalf16_bf16(__m256 a, __m256 b)
{
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(join16(a, b)), 16));
}

/* rows32's block folded from *acc, its outputs into t (EXACT: step8's exact form) */
#define ROWS32_FOLD(IO, EXACT)                                                                      \
    for (int w = 0; w < 2; w++) { /* the halves of the block in walk order */                      \
        const int hq = BACK ? 1 - w : w; /* quarters 2hq, 2hq + 1: steps 16hq to 16hq + 15 */       \
        __m256 o[2][8];                                                                             \
        UNROLL##IO                                                                                  \
        for (int i = 0; i < 16; i++) { /* walk steps */                                             \
            const int j = BACK ? 15 - i : i, s = j & 7, q = j >> 3; /* memory step 16hq + 8q + s */ \
            const __m256 v = load_in##IO(in + 32 * s + 8 * (2 * hq + q));                           \
            o[q][s] = step8##IO(v, acc, PROD, EXCL, BACK, STREAM, EXACT, &odd);                     \
            if (EXCL && k == 0 && empty && w == 0 && i == 0) o[q][s] = empty8##IO(o[q][s], PROD, empty); \
        }                                                                                           \
        for (int s2 = 0; s2 < 8; s2++) {                                                            \
            const __m256i h = unhalf16##IO(o[0][s2], o[1][s2]);                                     \
            t[s2] = hq ? _mm512_inserti64x4(t[s2], h, 1) : _mm512_inserti64x4(t[s2], h, 0);         \
        }                                                                                           \
    }
#define ROWS32(IO, INLINE)                                                                          \
    INLINE int64_t rows32##IO(const cs_float_tile *a, __m512d *acc, int64_t k0, int64_t k1, const int PROD, \
                              const int EXCL, const int BACK, const int STREAM)                     \
    {                                                                                               \
        const elem##IO *const x = a->x;                                                             \
        elem##IO *const y = a->y;                                                                   \
        const int64_t xl = a->xl, yl = a->yl, empty = a->empty;                                     \
        int64_t k = k0;                                                                             \
        for (; k + 32 <= k1; k += 32) {                                                             \
            const int64_t at = BACK ? -(k + 31) : k; /* the block's lowest element */               \
            __m512i t[8];                                                                           \
            for (int l = 0; l < 8; l++) t[l] = _mm512_loadu_si512((const void *)(x + l * xl + at)); \
            transpose16x8(t);                                                                       \
            /* the steps read back one at a time from memory: conversions of 8 and no extracts */  \
            in##IO in[8 * 32] __attribute__((aligned(64)));                                         \
            for (int l = 0; l < 8; l++) store_in##IO(in + 32 * l, t[l]);                            \
            /* odd: lanes whose outputs step8 left to the exact form (folded again from `from`) */ \
            __mmask8 odd = 0;                                                                       \
            const __m512d from = *acc;                                                              \
            ROWS32_FOLD(IO, 0);                                                                     \
            if (odd) {                                                                              \
                *acc = from;                                                                        \
                ROWS32_FOLD(IO, 1);                                                                 \
            }                                                                                       \
            transpose16x8(t);                                                                       \
            for (int l = 0; l < 8; l++) {                                                           \
                if (STREAM) _mm512_stream_si512((void *)(y + l * yl + at), t[l]);                   \
                else _mm512_storeu_si512((void *)(y + l * yl + at), t[l]);                          \
            }                                                                                       \
        }                                                                                           \
        return k;                                                                                   \
    }
ROWS32(_f16, AVX512_INLINE)
ROWS32(_bf16, AVX512_INLINE)
/* float32 rows have no such blocks */
#define rows32_f32(a, acc, k0, ...) (k0)

/* A columns kernel's tile in locals (the stores may alias the tile as far as the compiler knows); the
 * half types streamed: 32 lines (l1 - l0 a multiple of them) into buf a step, each step's 64 bytes
 * then streamed at once (see stream_lines) */
#define COLS_LOCALS(IO)                                                                             \
    const elem##IO *const x = a->x;                                                                 \
    elem##IO *const y = a->y;                                                                       \
    const unsigned char *const m = a->m;                                                            \
    const int64_t xs = a->xs, ys = a->ys, ms = a->ms, n = a->n, empty = a->empty;                   \
    const int gather = sizeof(elem##IO) == 2 && STREAM, gl = gather ? 32 : 8;                       \
    uint16_t buf[4 * 32] __attribute__((aligned(64)))

/* The kernels of float32 and the half types (through floats), for each of the two accumulator forms */
#define FLOAT_KERNELS(ISA, INLINE, IO)                                                                         \
/* Rows: the block of 8 steps from step k. BACK: the lines run towards lower addresses, so that a              \
 * block's lanes hold its steps last first. */                                                                 \
INLINE void row_block##IO##ISA(const cs_float_tile *a, acc8##ISA *acc, int64_t k, const int PROD, const int EXCL, \
                                   const int BACK, const int MASKED, const int STREAM)                         \
{                                                                                                              \
    const elem##IO *x = a->x;                                                                                  \
    elem##IO *y = a->y;                                                                                        \
    const __m256 masked = _mm256_set1_ps(PROD ? 1.0f : 0.0f);                                                  \
    const int64_t at = BACK ? -(k + 7) : k; /* the block's lowest element */                                   \
    __m256 r0 = ROW_LOAD_M(load8##IO, mask8##ISA, 0), r1 = ROW_LOAD_M(load8##IO, mask8##ISA, 1);                \
    __m256 r2 = ROW_LOAD_M(load8##IO, mask8##ISA, 2), r3 = ROW_LOAD_M(load8##IO, mask8##ISA, 3);                \
    __m256 r4 = ROW_LOAD_M(load8##IO, mask8##ISA, 4), r5 = ROW_LOAD_M(load8##IO, mask8##ISA, 5);                \
    __m256 r6 = ROW_LOAD_M(load8##IO, mask8##ISA, 6), r7 = ROW_LOAD_M(load8##IO, mask8##ISA, 7);                \
    TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7);                                                                \
    if (BACK) {                                                                                                \
        F32_STEPS(fold8##ISA, ODD##IO, r7, r6, r5, r4, r3, r2, r1, r0);                                        \
    } else {                                                                                                   \
        F32_STEPS(fold8##ISA, ODD##IO, r0, r1, r2, r3, r4, r5, r6, r7);                                        \
    }                                                                                                          \
    if (EXCL && k == 0 && a->empty) {                                                                          \
        const __m256 first = _mm256_castsi256_ps(empty_lanes32(a->empty, 0));                                  \
        if (BACK) r7 = _mm256_blendv_ps(r7, masked, first);                                                    \
        else r0 = _mm256_blendv_ps(r0, masked, first);                                                         \
    }                                                                                                          \
    TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7);                                                                \
    store8##IO(y + 0 * a->yl + at, r0, STREAM);                                                                \
    store8##IO(y + 1 * a->yl + at, r1, STREAM);                                                                \
    store8##IO(y + 2 * a->yl + at, r2, STREAM);                                                                \
    store8##IO(y + 3 * a->yl + at, r3, STREAM);                                                                \
    store8##IO(y + 4 * a->yl + at, r4, STREAM);                                                                \
    store8##IO(y + 5 * a->yl + at, r5, STREAM);                                                                \
    store8##IO(y + 6 * a->yl + at, r6, STREAM);                                                                \
    store8##IO(y + 7 * a->yl + at, r7, STREAM);                                                                \
}                                                                                                              \
                                                                                                               \
/* Rows, steps [k0, k1) in blocks of 8: two blocks an iteration, so that each line's 64 bytes are              \
 * read and written at once */                                                                                 \
INLINE void rows##IO##ISA(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD, const int EXCL, \
                          const int BACK, const int MASKED, const int STREAM)                                  \
{                                                                                                              \
    acc8##ISA s8 = load8##ISA(acc);                                                                            \
    int64_t k = k0;                                                                                            \
    if (sizeof(elem##IO) == 2 && !MASKED) k = rows32##IO(a, &s8, k0, k1, PROD, EXCL, BACK, STREAM);           \
    else if (sizeof(elem##IO) == 2 && STREAM) /* k1 - k0 a multiple of 32: see stream_lines */                \
        for (; k < k1; k += 32) {                                                                              \
            uint16_t buf[8 * 32] __attribute__((aligned(64)));                                                 \
            const int64_t sh = BACK ? -k : k; /* the blocks' steps counted from k */                           \
            cs_float_tile b = *a;                                                                              \
            b.x = (const elem##IO *)a->x + sh;                                                                 \
            b.m = MASKED ? a->m + sh : a->m;                                                                   \
            b.y = buf + (BACK ? 31 : 0);                                                                       \
            b.yl = 32;                                                                                         \
            b.empty = k == 0 ? a->empty : 0;                                                                   \
            for (int j = 0; j < 32; j += 8) row_block##IO##ISA(&b, &s8, j, PROD, EXCL, BACK, MASKED, 0);       \
            stream_lines((uint16_t *)a->y + (BACK ? -(k + 31) : k), a->yl, buf);                               \
        }                                                                                                      \
    for (; k + 16 <= k1; k += 16) {                                                                            \
        row_block##IO##ISA(a, &s8, k, PROD, EXCL, BACK, MASKED, STREAM);                                       \
        row_block##IO##ISA(a, &s8, k + 8, PROD, EXCL, BACK, MASKED, STREAM);                                   \
    }                                                                                                          \
    if (k < k1) row_block##IO##ISA(a, &s8, k, PROD, EXCL, BACK, MASKED, STREAM);                               \
    store8##ISA(acc, s8);                                                                                      \
}                                                                                                              \
                                                                                                               \
/* Columns: lines [l0, l1) (a multiple of 8 of them) over every step, their accumulators in acc[];             \
 * up to 4 steps a pass, so that an accumulator is loaded and stored once for them; the half types,            \
 * when streamed, 32 lines (l1 - l0 a multiple of them) into a buffer a step, each step's 64 bytes             \
 * then streamed at once (see stream_lines) */                                                                 \
INLINE void cols##IO##ISA(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, const int PROD,         \
                              const int EXCL, const int BACK, const int MASKED, const int STREAM)              \
{                                                                                                              \
    (void)BACK;                                                                                                \
    const __m256 masked = _mm256_set1_ps(PROD ? 1.0f : 0.0f);                                                  \
    COLS_LOCALS(IO);                                                                                           \
    for (int64_t k0 = 0; k0 < n; k0 += 4) {                                                                    \
        const int ns = n - k0 < 4 ? (int)(n - k0) : 4;                                                         \
        for (int64_t lg = l0; lg < l1; lg += gl) {                                                             \
            for (int64_t l = lg; l < lg + gl; l += 8) {                                                        \
                acc8##ISA s8 = load8##ISA(acc + l);                                                            \
                __m256 in[4]; /* the pass's loads first, in flight together (see COLS_N_PASS) */               \
                for (int s = 0; s < 4; s++) {                                                                  \
                    in[s] = _mm256_setzero_ps();                                                               \
                    if (s >= ns) continue;                                                                     \
                    in[s] = load8##IO(x + (k0 + s) * xs + l);                                                  \
                    if (MASKED) in[s] = mask8##ISA(in[s], m + (k0 + s) * ms + l, masked);                        \
                }                                                                                              \
                for (int s = 0; s < ns; s++) {                                                                 \
                    const int64_t k = k0 + s;                                                                  \
                    __m256 v = fold8##ISA(in[s], &s8, PROD, EXCL, ODD##IO);                                    \
                    if (EXCL && k == 0 && empty)                                                               \
                        v = _mm256_blendv_ps(v, masked, _mm256_castsi256_ps(empty_lanes32(empty, l)));         \
                    if (gather) store8##IO((elem##IO *)(void *)(buf + 32 * s + (l - lg)), v, 0);               \
                    else store8##IO(y + k * ys + l, v, STREAM);                                                \
                }                                                                                              \
                store8##ISA(acc + l, s8);                                                                      \
            }                                                                                                  \
            for (int s = 0; s < ns && gather; s++)                                                             \
                stream_line((uint16_t *)(void *)(y + (k0 + s) * ys + lg), buf + 32 * s);                       \
        }                                                                                                      \
    }                                                                                                          \
}                                                                                                              \
                                                                                                               \
/* Mixed tiles: one side's lines along the scan, the other's next to each other (a transposed input            \
 * into a contiguous result, or the other way round), so that one transpose suffices. The block of 8           \
 * steps from step k of lines [l, l + 8); XROWS: x's lines along the scan (y's next to each other),            \
 * else the other way round. w0..w7 hold the block's steps in walk order. */                                   \
INLINE void mixed_block##IO##ISA(const cs_float_tile *a, acc8##ISA *acc, int64_t k, int64_t l, const int PROD, \
                                 const int EXCL, const int BACK, const int MASKED, const int STREAM, const int XROWS) \
{                                                                                                              \
    const __m256 masked = _mm256_set1_ps(PROD ? 1.0f : 0.0f);                                                  \
    const int64_t at = BACK ? -(k + 7) : k; /* a line's lowest element of the block */                         \
    __m256 w0, w1, w2, w3, w4, w5, w6, w7;                                                                     \
    if (XROWS) {                                                                                               \
        const elem##IO *x = (const elem##IO *)a->x + l * a->xl;                                                \
        const unsigned char *m = MASKED ? a->m + l * a->ml : NULL;                                             \
        __m256 r[8];                                                                                           \
        for (int i = 0; i < 8; i++) {                                                                          \
            r[i] = load8##IO(x + i * a->xl + at);                                                              \
            if (MASKED) r[i] = mask8##ISA(r[i], m + i * a->ml + at, masked);                                     \
        }                                                                                                      \
        __m256 r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3], r4 = r[4], r5 = r[5], r6 = r[6], r7 = r[7];         \
        TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7);                                                            \
        w0 = BACK ? r7 : r0, w1 = BACK ? r6 : r1, w2 = BACK ? r5 : r2, w3 = BACK ? r4 : r3;                    \
        w4 = BACK ? r3 : r4, w5 = BACK ? r2 : r5, w6 = BACK ? r1 : r6, w7 = BACK ? r0 : r7;                    \
    } else {                                                                                                   \
        __m256 v[8];                                                                                           \
        for (int s = 0; s < 8; s++) {                                                                          \
            v[s] = load8##IO((const elem##IO *)a->x + (k + s) * a->xs + l);                                    \
            if (MASKED) v[s] = mask8##ISA(v[s], a->m + (k + s) * a->ms + l, masked);                             \
        }                                                                                                      \
        w0 = v[0], w1 = v[1], w2 = v[2], w3 = v[3], w4 = v[4], w5 = v[5], w6 = v[6], w7 = v[7];                \
    }                                                                                                          \
    F32_STEPS(fold8##ISA, ODD##IO, w0, w1, w2, w3, w4, w5, w6, w7);                                            \
    if (EXCL && k == 0 && a->empty)                                                                            \
        w0 = _mm256_blendv_ps(w0, masked, _mm256_castsi256_ps(empty_lanes32(a->empty, l)));                    \
    if (XROWS) {                                                                                               \
        elem##IO *y = (elem##IO *)a->y + l;                                                                    \
        store8##IO(y + (k + 0) * a->ys, w0, STREAM), store8##IO(y + (k + 1) * a->ys, w1, STREAM);              \
        store8##IO(y + (k + 2) * a->ys, w2, STREAM), store8##IO(y + (k + 3) * a->ys, w3, STREAM);              \
        store8##IO(y + (k + 4) * a->ys, w4, STREAM), store8##IO(y + (k + 5) * a->ys, w5, STREAM);              \
        store8##IO(y + (k + 6) * a->ys, w6, STREAM), store8##IO(y + (k + 7) * a->ys, w7, STREAM);              \
    } else {                                                                                                   \
        elem##IO *y = (elem##IO *)a->y + l * a->yl + at;                                                       \
        __m256 q0 = BACK ? w7 : w0, q1 = BACK ? w6 : w1, q2 = BACK ? w5 : w2, q3 = BACK ? w4 : w3;             \
        __m256 q4 = BACK ? w3 : w4, q5 = BACK ? w2 : w5, q6 = BACK ? w1 : w6, q7 = BACK ? w0 : w7;             \
        TRANSPOSE8(q0, q1, q2, q3, q4, q5, q6, q7);                                                            \
        store8##IO(y + 0 * a->yl, q0, STREAM), store8##IO(y + 1 * a->yl, q1, STREAM);                          \
        store8##IO(y + 2 * a->yl, q2, STREAM), store8##IO(y + 3 * a->yl, q3, STREAM);                          \
        store8##IO(y + 4 * a->yl, q4, STREAM), store8##IO(y + 5 * a->yl, q5, STREAM);                          \
        store8##IO(y + 6 * a->yl, q6, STREAM), store8##IO(y + 7 * a->yl, q7, STREAM);                          \
    }                                                                                                          \
}                                                                                                              \
                                                                                                               \
/* mixed tiles: steps [k0, k1) (a multiple of 8 of them) of every whole group of 8 lines, two groups           \
 * side by side and, where the other side's lines run along the scan, two blocks of steps each, so             \
 * that every 64-byte line is read or written whole at once (a half line read now and half later               \
 * comes from memory twice; streaming stores of half lines go out half empty) */                               \
INLINE void mixed##IO##ISA(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD,        \
                           const int EXCL, const int BACK, const int MASKED, const int STREAM, const int XROWS) \
{                                                                                                              \
    int64_t l0 = 0;                                                                                            \
    for (; l0 + 16 <= a->lines; l0 += 16) {                                                                    \
        acc8##ISA s0 = load8##ISA(acc + l0), s1 = load8##ISA(acc + l0 + 8);                                    \
        int64_t k = k0;                                                                                        \
        if (!XROWS)                                                                                            \
            for (; k + 16 <= k1; k += 16) {                                                                    \
                mixed_block##IO##ISA(a, &s0, k, l0, PROD, EXCL, BACK, MASKED, STREAM, XROWS);                  \
                mixed_block##IO##ISA(a, &s1, k, l0 + 8, PROD, EXCL, BACK, MASKED, STREAM, XROWS);              \
                mixed_block##IO##ISA(a, &s0, k + 8, l0, PROD, EXCL, BACK, MASKED, STREAM, XROWS);              \
                mixed_block##IO##ISA(a, &s1, k + 8, l0 + 8, PROD, EXCL, BACK, MASKED, STREAM, XROWS);          \
            }                                                                                                  \
        for (; k < k1; k += 8) {                                                                               \
            mixed_block##IO##ISA(a, &s0, k, l0, PROD, EXCL, BACK, MASKED, STREAM, XROWS);                      \
            mixed_block##IO##ISA(a, &s1, k, l0 + 8, PROD, EXCL, BACK, MASKED, STREAM, XROWS);                  \
        }                                                                                                      \
        store8##ISA(acc + l0, s0);                                                                             \
        store8##ISA(acc + l0 + 8, s1);                                                                         \
    }                                                                                                          \
    for (int64_t l = l0; l + 8 <= a->lines; l += 8) {                                                          \
        acc8##ISA s8 = load8##ISA(acc + l);                                                                    \
        for (int64_t k = k0; k < k1; k += 8)                                                                   \
            mixed_block##IO##ISA(a, &s8, k, l, PROD, EXCL, BACK, MASKED, STREAM, XROWS);                       \
        store8##ISA(acc + l, s8);                                                                              \
    }                                                                                                          \
}                                                                                                              \


FLOAT_KERNELS(_avx512, AVX512_INLINE, _f32)
FLOAT_KERNELS(_avx2, AVX2_INLINE, _f32) /* only its rows are used */
FLOAT_KERNELS(_avx512, AVX512_INLINE, _f16)
FLOAT_KERNELS(_avx512, AVX512_INLINE, _bf16)

/* Half tiles (columns masked or not, rows unmasked) with each step's 8 outputs converted on their own
 * (_f16n: float16 columns; _bf16n: bfloat16 rows' blocks of 32 steps and columns, on AVX512-BF16);
 * their entries further on */
enum { ONE_f16n = 0x3c00, ONE_bf16n = 0x3f80 }; /* 1.0, the products' identity */

/* acc op w with acc as the first operand (ACC_FIRST) or the second. Where both are NaN, x86 keeps the
 * first one's payload, so the order decides which NaN an output carries: fixed here, as each tile's
 * outputs have it, instead of left to the compiler's choice of registers. */
AVX512_INLINE __m512d fold_ordered(__m512d acc, __m512d w, const int PROD, const int ACC_FIRST)
{
    const __m512d p = ACC_FIRST ? acc : w, q = ACC_FIRST ? w : acc;
    __m512d r;
    if (PROD) __asm__("vmulpd %2, %1, %0" : "=v"(r) : "v"(p), "v"(q));
    else __asm__("vaddpd %2, %1, %0" : "=v"(r) : "v"(p), "v"(q));
    return r;
}

/* A step of 8 bfloat16 lines folded; its 8 outputs as bfloat16, by vcvtneps2bf16 (to nearest even; a
 * NaN keeps its top bits, made quiet) of the doubles rounded to odd as floats (odd8_bits_avx512,
 * exact from float's normal range up). That instruction takes float denormals for zeros: lanes
 * whose float is one (outputs from about 2^-149 to float's normal range) are added to *odd, and
 * their caller folds those steps again with EXACT set, the way of bf16_near8_avx512's NaN and
 * denormal lanes (no branch a step, so that the steps' loops unroll). */
AVX512BF16_INLINE __m128i fold8_bf16n(__m256 v, __m512d *acc, const int PROD, const int EXCL, const int ACC_FIRST,
                                      const int EXACT, __mmask8 *odd)
{
    const __m512d prev = *acc;
    *acc = fold_ordered(prev, _mm512_cvtps_pd(v), PROD, ACC_FIRST);
    const __m512d out = EXCL ? prev : *acc;
    if (EXACT) return _mm256_cvtepi32_epi16(_mm256_srli_epi32(_mm256_castps_si256(bf16_of_odd8(odd8_avx512(out))), 16));
    const __m256 t = odd8_bits_avx512(out);
    *odd = _kor_mask8(*odd, _mm256_fpclass_ps_mask(t, 0x20 /* denormal */));
    return (__m128i)_mm256_cvtneps_pbh(t);
}

/* 8 halves, lanes [0, n) given the identity's bits instead (an exclusive scan's empty prefix) */
AVX512_INLINE __m128i empty8_packed(__m128i h, int identity, int64_t n)
{
    const int c = n < 0 ? 0 : n > 8 ? 8 : (int)n;
    return _mm_mask_blend_epi16((__mmask8)((1u << c) - 1u), h, _mm_set1_epi16((short)identity));
}

/* rows32's forms: the outputs of a step are its 8 halves, in the low half of a __m256; the fold's
 * operands in the order of these tiles' outputs (acc first but in some reverse exclusive forms) */
typedef uint16_t elem_bf16n;
#define load8_bf16n load8_bf16
#define UNROLL_bf16n _Pragma("GCC unroll 16") /* see tile_rows_bf16n */
/* rows32's buffer as floats, widened 16 at a time (half the operations of load8_bf16's) */
typedef float in_bf16n;
AVX512_INLINE void store_in_bf16n(float *p, __m512i t)
{
    _mm512_store_si512((void *)p, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(t)), 16));
    _mm512_store_si512((void *)(p + 16), _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(t, 1)), 16));
}
#define load_in_bf16n _mm256_load_ps
#define step8_bf16n(v, acc, PROD, EXCL, BACK, STREAM, EXACT, odd)                                   \
    _mm256_castsi256_ps(_mm256_castsi128_si256(                                                     \
        fold8_bf16n(v, acc, PROD, EXCL, !(BACK && EXCL && (STREAM || !PROD)), EXACT, odd)))
AVX512_INLINE __m256 empty8_bf16n(__m256 o, const int PROD, int64_t empty)
{
    return _mm256_castsi256_ps(_mm256_castsi128_si256(empty8_packed(_mm256_castsi256_si128(_mm256_castps_si256(o)), PROD ? ONE_bf16n : 0, empty)));
}
AVX512_INLINE __m256i unhalf16_bf16n(__m256 a, __m256 b)
{
    return _mm256_inserti128_si256(_mm256_castps_si256(a), _mm256_castsi256_si128(_mm256_castps_si256(b)), 1);
}
ROWS32(_bf16n, AVX512BF16_INLINE)

/* rows: steps [k0, k1) (a multiple of 32 of them, unmasked) by rows32_bf16n */
AVX512BF16_INLINE void rows_bf16n(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD,
                                  const int EXCL, const int BACK, const int MASKED, const int STREAM)
{
    if (MASKED) return; /* never called so: see tile_rows_bf16n */
    __m512d s8 = _mm512_loadu_pd(acc);
    rows32_bf16n(a, &s8, k0, k1, PROD, EXCL, BACK, STREAM);
    _mm512_storeu_pd(acc, s8);
}

/* float16's columns the same way (_f16n): fold8_avx512's rounding to odd is exact for every float16
 * output, so no step is folded again */
AVX512_INLINE __m128i fold8_f16n(__m256 v, __m512d *acc, const int PROD, const int EXCL, const int ACC_FIRST,
                                 const int EXACT, __mmask8 *odd)
{
    (void)EXACT, (void)odd;
    const __m512d prev = *acc;
    *acc = fold_ordered(prev, _mm512_cvtps_pd(v), PROD, ACC_FIRST);
    return _mm256_cvtps_ph(odd8_bits_avx512(EXCL ? prev : *acc), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
#define load8_f16n load8_f16

/* Columns: lines [l0, l1) over every step, 4 steps a pass, stored once the pass is folded
 * (again in its exact form where fold8 says); streamed, 32 lines a group (l1 - l0 a multiple of
 * them), whose 4 x 8 halves of a step are joined in registers into one 64-byte line (a line read
 * back from a buffer of 16-byte stores waits for them to reach the cache). The fold's operands in
 * the order of these tiles' outputs (acc first but in exclusive scans). A masked-out element is
 * replaced by the op's identity as it loads, as in the AVX-512 entries' columns. A pass issues all
 * its loads before its first fold: folded as they arrive, the masked and exclusive forms left the
 * loads one at a time behind their folds (memory-bound, where the plain form was not). */
#define COLS_N_PASS(IO, EXACT)                                                                      \
    do {                                                                                            \
        for (int g = 0; g < G; g++) s[g] = _mm512_loadu_pd(acc + l + 8 * g);                        \
        __m256 v[4][4]; /* the pass's loads first, all in flight together */                       \
        for (int i = 0; i < 4; i++)                                                                 \
            for (int g = 0; g < 4; g++) {                                                           \
                v[i][g] = _mm256_setzero_ps();                                                      \
                if (i >= ns || g >= G) continue;                                                    \
                const int64_t k = k0 + i;                                                           \
                v[i][g] = load8##IO(x + k * xs + l + 8 * g);                                        \
                if (MASKED) v[i][g] = mask8_avx512(v[i][g], m + k * ms + l + 8 * g, masked);        \
            }                                                                                       \
        for (int i = 0; i < 4; i++) {                                                               \
            if (i >= ns) break;                                                                     \
            const int64_t k = k0 + i;                                                               \
            for (int g = 0; g < G; g++) {                                                           \
                h[i][g] = fold8##IO(v[i][g], &s[g], PROD, EXCL, !EXCL, EXACT, &odd);                \
                if (EXCL && k == 0 && empty)                                                        \
                    h[i][g] = empty8_packed(h[i][g], PROD ? ONE##IO : 0, empty - l - 8 * g);        \
            }                                                                                       \
        }                                                                                           \
    } while (0)
#define COLS_N(IO, INLINE)                                                                          \
    INLINE void cols##IO(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, const int PROD, \
                         const int EXCL, const int BACK, const int MASKED, const int STREAM)        \
    {                                                                                               \
        (void)BACK;                                                                                 \
        const uint16_t *const x = a->x;                                                             \
        uint16_t *const y = a->y;                                                                   \
        const unsigned char *const m = a->m;                                                        \
        const __m256 masked = _mm256_set1_ps(PROD ? 1.0f : 0.0f);                                   \
        const int64_t xs = a->xs, ys = a->ys, ms = a->ms, n = a->n, empty = a->empty;               \
        const int G = STREAM ? 4 : 1; /* groups of 8 lines a pass */                                \
        for (int64_t k0 = 0; k0 < n; k0 += 4) {                                                     \
            const int ns = n - k0 < 4 ? (int)(n - k0) : 4;                                          \
            for (int64_t l = l0; l < l1; l += 8 * G) {                                              \
                __m512d s[4];                                                                       \
                __m128i h[4][4]; /* by step and group (all set: the compiler can't tell which a pass uses) */ \
                for (int i = 0; i < 16; i++) h[i / 4][i % 4] = _mm_setzero_si128();                \
                __mmask8 odd = 0;                                                                   \
                COLS_N_PASS(IO, 0);                                                                 \
                if (odd) COLS_N_PASS(IO, 1);                                                        \
                for (int i = 0; i < 4; i++) {                                                       \
                    if (i >= ns) break;                                                             \
                    uint16_t *const yk = y + (k0 + i) * ys + l;                                     \
                    if (STREAM) {                                                                   \
                        const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(h[i][0]), h[i][1], 1); \
                        const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(h[i][2]), h[i][3], 1); \
                        _mm512_stream_si512((void *)yk, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)); \
                    } else {                                                                        \
                        _mm_storeu_si128((__m128i *)(void *)yk, h[i][0]);                           \
                    }                                                                               \
                }                                                                                   \
                for (int g = 0; g < G; g++) _mm512_storeu_pd(acc + l + 8 * g, s[g]);                \
            }                                                                                       \
        }                                                                                           \
    }
COLS_N(_f16n, AVX512_INLINE)
COLS_N(_bf16n, AVX512BF16_INLINE)

#include "float_tiles_avx2.h"


/* Columns' totals alone (no output): lines [0, lines), G vectors of 4 at a time held in registers over
 * every step, so that their G chains of adds overlap and no sum goes through memory between steps */
#define COLS_TOTAL(NAME, T, LOAD)                                                                    \
    AVX2_INLINE void NAME##_g(const cs_float_tile *a, double *acc, int64_t l, const int G, const int PROD, \
                              const int MASKED)                                                     \
    {                                                                                               \
        const __m256d masked = _mm256_set1_pd(PROD ? 1.0 : 0.0);                                    \
        __m256d s[4];                                                                               \
        for (int i = 0; i < G; i++) s[i] = _mm256_loadu_pd(acc + l + 4 * i);                        \
        for (int64_t k = 0; k < a->n; k++)                                                          \
            for (int i = 0; i < G; i++) {                                                           \
                __m256d v = LOAD((const T *)a->x + k * a->xs + l + 4 * i);                          \
                if (MASKED) v = mask_f64(v, a->m + k * a->ms + l + 4 * i, masked);                  \
                s[i] = PROD ? _mm256_mul_pd(s[i], v) : _mm256_add_pd(s[i], v);                       \
            }                                                                                       \
        for (int i = 0; i < G; i++) _mm256_storeu_pd(acc + l + 4 * i, s[i]);                         \
    }                                                                                               \
    AVX2_INLINE void NAME(const cs_float_tile *a, double *acc, const int PROD, const int MASKED)     \
    {                                                                                               \
        const int64_t end = a->lines / 4 * 4;                                                       \
        int64_t l = 0;                                                                              \
        for (; l + 16 <= end; l += 16) NAME##_g(a, acc, l, 4, PROD, MASKED);                        \
        if (end - l == 12) NAME##_g(a, acc, l, 3, PROD, MASKED);                                    \
        else if (end - l == 8) NAME##_g(a, acc, l, 2, PROD, MASKED);                                \
        else if (end - l == 4) NAME##_g(a, acc, l, 1, PROD, MASKED);                                \
    }
#define LOAD_F32_AS_F64(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
COLS_TOTAL(cols_total_f32, float, LOAD_F32_AS_F64)
COLS_TOTAL(cols_total_f64, double, _mm256_loadu_pd)

/* The flags as constants: one loop per combination, each called from a case of its own (a loop over
 * the combinations that calls the kernel where they match is left a loop by the compiler, and the
 * flags variables tested inside the kernels) */
#define FLAGS5(v) (v) & 1, (v) >> 1 & 1, (v) >> 2 & 1, (v) >> 3 & 1, (v) >> 4 & 1
#define FLAGS6(v) FLAGS5(v), (v) >> 5 & 1
#define FLAG_CASE(F, K, a, acc, from, to, v) case v: K(a, acc, from, to, F(v)); break;
#define FLAG_CASES4(F, K, a, acc, from, to, v) FLAG_CASE(F, K, a, acc, from, to, v)                   \
    FLAG_CASE(F, K, a, acc, from, to, v + 1) FLAG_CASE(F, K, a, acc, from, to, v + 2)                   \
    FLAG_CASE(F, K, a, acc, from, to, v + 3)
#define FLAG_CASES16(F, K, a, acc, from, to, v) FLAG_CASES4(F, K, a, acc, from, to, v)                \
    FLAG_CASES4(F, K, a, acc, from, to, v + 4) FLAG_CASES4(F, K, a, acc, from, to, v + 8)               \
    FLAG_CASES4(F, K, a, acc, from, to, v + 12)
#define DISPATCH(KERNEL, a, acc, from, to, stream)                                                  \
    do {                                                                                            \
        const int flags_ = (a)->prod | (a)->excl << 1 | ((a)->xs < 0) << 2 | ((a)->m != NULL) << 3 | \
                           (stream) << 4;                                                           \
        switch (flags_) {                                                                           \
            FLAG_CASES16(FLAGS5, KERNEL, a, acc, from, to, 0)                                       \
            FLAG_CASES16(FLAGS5, KERNEL, a, acc, from, to, 16)                                      \
        }                                                                                           \
    } while (0)

/* The first of `width` elements from which stores of `width` elements are aligned to their own size
 * (as streaming stores need), on every line at stride `across` and every step at stride `along`
 * (-1: none). back: a store's lowest element
 * lies width - 1 before the element counted. */
static int64_t aligned_from(const void *y, int64_t size, int64_t width, int64_t across, int64_t along, int back)
{
    const int64_t align = size * width; /* the bytes of one store */
    if ((across * size) % align || (along * size) % align || (uintptr_t)y % (uintptr_t)size) return -1;
    for (int64_t p = 0; p < width; p++) {
        const int64_t low = back ? -(p + width - 1) : p;
        if (((uintptr_t)y + (uintptr_t)(low * size)) % (uintptr_t)align == 0) return p;
    }
    return -1;
}

/* SPAN: the steps (rows) or lines (columns) whose outputs a kernel streams together (the halves'
 * AVX2 kernels: whole 64-byte lines, WIDTH the elements of one): the streamed part of a tile is a
 * multiple of it, the whole groups after it go through the same kernel in plain stores */
#define ROWS_BODY(KERNEL, SCALAR, SIZE, WIDTH) ROWS_BODY_SPAN(KERNEL, SCALAR, SIZE, WIDTH, WIDTH)
#define ROWS_BODY_SPAN(KERNEL, SCALAR, SIZE, WIDTH, SPAN)                                           \
    int64_t peel = a->stream ? aligned_from(a->y, SIZE, (SPAN), a->yl, 0, a->ys < 0) : -1;           \
    const int stream = peel >= 0 && peel + (SPAN) <= a->n;                                            \
    if (!stream) peel = 0;                                                                          \
    const int64_t streamed = stream ? peel + (a->n - peel) / (SPAN) * (SPAN) : peel;                    \
    const int64_t end = streamed + (a->n - streamed) / (WIDTH) * (WIDTH);                                \
    SCALAR(a, acc, 0, 8, 0, peel);                                                                  \
    if (stream) DISPATCH(KERNEL, a, acc, peel, streamed, 1);                                        \
    if (end > streamed) DISPATCH(KERNEL, a, acc, streamed, end, 0);                                 \
    SCALAR(a, acc, 0, 8, end, a->n);

#define COLS_BODY(KERNEL, SCALAR, SIZE, WIDTH) COLS_BODY_SPAN(KERNEL, SCALAR, SIZE, WIDTH, 8)
#define COLS_BODY_SPAN(KERNEL, SCALAR, SIZE, WIDTH, SPAN)                                           \
    int64_t peel = a->stream ? aligned_from(a->y, SIZE, (WIDTH), 0, a->ys, 0) : -1;                   \
    const int stream = peel >= 0 && peel + (SPAN) <= a->lines;                                        \
    if (!stream) peel = 0;                                                                          \
    const int64_t streamed = stream ? peel + (a->lines - peel) / (SPAN) * (SPAN) : peel;                \
    const int64_t end = streamed + (a->lines - streamed) / 8 * 8;                                    \
    SCALAR(a, acc, 0, peel, 0, a->n);                                                               \
    if (stream) DISPATCH(KERNEL, a, acc, peel, streamed, 1);                                        \
    if (end > streamed) DISPATCH(KERNEL, a, acc, streamed, end, 0);                                 \
    SCALAR(a, acc, end, a->lines, 0, a->n);

#define TOTAL_BODY(KERNEL, SCALAR)                                                                  \
    const int64_t end = a->lines / 4 * 4;                                                            \
    if (a->prod && a->m) KERNEL(a, acc, 1, 1);                                                       \
    else if (a->prod) KERNEL(a, acc, 1, 0);                                                          \
    else if (a->m) KERNEL(a, acc, 0, 1);                                                             \
    else KERNEL(a, acc, 0, 0);                                                                       \
    SCALAR(a, acc, end, a->lines, 0, a->n);

/* mixed tiles: streaming where y's stores are aligned for every group of 8 lines (y next to each
 * other) or after a peel of steps (y along the scan) */
#define MIXED_BODY(KERNEL, SCALAR)                                                                  \
    const int xrows = a->xs == 1 || a->xs == -1;                                                    \
    int64_t peel = -1;                                                                              \
    if (a->stream && xrows) peel = aligned_from(a->y, 4, 8, 0, a->ys, 0) == 0 ? 0 : -1;             \
    else if (a->stream) peel = aligned_from(a->y, 4, 8, a->yl, 0, a->ys < 0);                        \
    const int stream = peel >= 0 && peel + 8 <= a->n;                                               \
    if (!stream) peel = 0;                                                                          \
    const int64_t end = peel + (a->n - peel) / 8 * 8, groups = a->lines / 8 * 8;                     \
    SCALAR(a, acc, 0, groups, 0, peel);                                                             \
    const int flags_ = a->prod | a->excl << 1 | (a->xs < 0) << 2 | (a->m != NULL) << 3 | stream << 4 | xrows << 5; \
    switch (flags_) {                                                                               \
        FLAG_CASES16(FLAGS6, KERNEL, a, acc, peel, end, 0) FLAG_CASES16(FLAGS6, KERNEL, a, acc, peel, end, 16) \
        FLAG_CASES16(FLAGS6, KERNEL, a, acc, peel, end, 32) FLAG_CASES16(FLAGS6, KERNEL, a, acc, peel, end, 48) \
    }                                                                                               \
    SCALAR(a, acc, 0, groups, end, a->n);                                                           \
    SCALAR(a, acc, groups, a->lines, 0, a->n);

/* float32 rows into float64 (AVX-512 only): the block of 8 steps from step k, its float64 outputs
 * transposed back as 8 x 8 doubles, a 64-byte store a line */
#define TRANSPOSE8_PD(q0, q1, q2, q3, q4, q5, q6, q7)                                               \
    do {                                                                                            \
        const __m512d t0 = _mm512_unpacklo_pd(q0, q1), t1 = _mm512_unpackhi_pd(q0, q1);             \
        const __m512d t2 = _mm512_unpacklo_pd(q2, q3), t3 = _mm512_unpackhi_pd(q2, q3);             \
        const __m512d t4 = _mm512_unpacklo_pd(q4, q5), t5 = _mm512_unpackhi_pd(q4, q5);             \
        const __m512d t6 = _mm512_unpacklo_pd(q6, q7), t7 = _mm512_unpackhi_pd(q6, q7);             \
        const __m512d u0 = _mm512_shuffle_f64x2(t0, t2, 0x88), u1 = _mm512_shuffle_f64x2(t1, t3, 0x88); \
        const __m512d u2 = _mm512_shuffle_f64x2(t0, t2, 0xDD), u3 = _mm512_shuffle_f64x2(t1, t3, 0xDD); \
        const __m512d u4 = _mm512_shuffle_f64x2(t4, t6, 0x88), u5 = _mm512_shuffle_f64x2(t5, t7, 0x88); \
        const __m512d u6 = _mm512_shuffle_f64x2(t4, t6, 0xDD), u7 = _mm512_shuffle_f64x2(t5, t7, 0xDD); \
        q0 = _mm512_shuffle_f64x2(u0, u4, 0x88), q4 = _mm512_shuffle_f64x2(u0, u4, 0xDD);            \
        q1 = _mm512_shuffle_f64x2(u1, u5, 0x88), q5 = _mm512_shuffle_f64x2(u1, u5, 0xDD);            \
        q2 = _mm512_shuffle_f64x2(u2, u6, 0x88), q6 = _mm512_shuffle_f64x2(u2, u6, 0xDD);            \
        q3 = _mm512_shuffle_f64x2(u3, u7, 0x88), q7 = _mm512_shuffle_f64x2(u3, u7, 0xDD);            \
    } while (0)
#define F64_STEP(d, w)                                                                              \
    do {                                                                                            \
        const __m512d prev_ = *acc, v_ = _mm512_cvtps_pd(w);                                        \
        *acc = PROD ? _mm512_mul_pd(prev_, v_) : _mm512_add_pd(prev_, v_);                          \
        d = EXCL ? prev_ : *acc;                                                                    \
    } while (0)

AVX512_INLINE void row_block_f32_f64(const cs_float_tile *a, __m512d *acc, int64_t k, const int PROD, const int EXCL,
                                     const int BACK, const int MASKED, const int STREAM)
{
    double *y = a->y;
    F32_ROW_BLOCK(mask8_avx512);
    __m512d d0, d1, d2, d3, d4, d5, d6, d7; /* walk order */
    F64_STEP(d0, BACK ? r7 : r0);
    F64_STEP(d1, BACK ? r6 : r1);
    F64_STEP(d2, BACK ? r5 : r2);
    F64_STEP(d3, BACK ? r4 : r3);
    F64_STEP(d4, BACK ? r3 : r4);
    F64_STEP(d5, BACK ? r2 : r5);
    F64_STEP(d6, BACK ? r1 : r6);
    F64_STEP(d7, BACK ? r0 : r7);
    if (EXCL && k == 0 && a->empty) {
        const int n = a->empty < 8 ? (int)a->empty : 8;
        d0 = _mm512_mask_blend_pd((__mmask8)((1u << n) - 1u), d0, _mm512_set1_pd(PROD ? 1.0 : 0.0));
    }
    __m512d q0 = BACK ? d7 : d0, q1 = BACK ? d6 : d1, q2 = BACK ? d5 : d2, q3 = BACK ? d4 : d3; /* memory order */
    __m512d q4 = BACK ? d3 : d4, q5 = BACK ? d2 : d5, q6 = BACK ? d1 : d6, q7 = BACK ? d0 : d7;
    TRANSPOSE8_PD(q0, q1, q2, q3, q4, q5, q6, q7);
    const __m512d q[8] = { q0, q1, q2, q3, q4, q5, q6, q7 };
    for (int l = 0; l < 8; l++) {
        if (STREAM) _mm512_stream_pd(y + l * a->yl + at, q[l]);
        else _mm512_storeu_pd(y + l * a->yl + at, q[l]);
    }
}

AVX512_INLINE void rows_f32_f64(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD,
                                const int EXCL, const int BACK, const int MASKED, const int STREAM)
{
    __m512d s8 = _mm512_loadu_pd(acc);
    int64_t k = k0;
    for (; k + 16 <= k1; k += 16) {
        row_block_f32_f64(a, &s8, k, PROD, EXCL, BACK, MASKED, STREAM);
        row_block_f32_f64(a, &s8, k + 8, PROD, EXCL, BACK, MASKED, STREAM);
    }
    if (k < k1) row_block_f32_f64(a, &s8, k, PROD, EXCL, BACK, MASKED, STREAM);
    _mm512_storeu_pd(acc, s8);
}

AVX512 static void tile_rows_f32_f64(const cs_float_tile *a, double *acc) { ROWS_BODY(rows_f32_f64, scalar_f32_f64, 8, 8) }

/* The entry points, twice: for AVX2, and for AVX-512VL, whose 32 vector registers hold a block of
 * rows and its transposes without spilling them to the stack */
typedef void (*tile_fn)(const cs_float_tile *, double *);
static int avx512_state = -1, bf16n_state = -1; /* use_avx512's answers, once known */
static int use_avx512(void);
#define ENTRIES(SUFFIX, TARGET, ROWS_F32_F64, COLS, ROWS, MIXED)                                                                   \
    TARGET static void total_cols_f32##SUFFIX(const cs_float_tile *a, double *acc) { TOTAL_BODY(cols_total_f32, scalar_f32) } \
    TARGET static void total_cols_f64##SUFFIX(const cs_float_tile *a, double *acc) { TOTAL_BODY(cols_total_f64, scalar_f64) } \
    TARGET static void tile_rows_f32##SUFFIX(const cs_float_tile *a, double *acc) { ROWS_BODY(ROWS(_f32), scalar_f32, 4, 8) }  \
    TARGET static void tile_rows_f64##SUFFIX(const cs_float_tile *a, double *acc) { ROWS_BODY(rows_f64, scalar_f64, 8, 4) }  \
    TARGET static void tile_rows_f16##SUFFIX(const cs_float_tile *a, double *acc) { ROWS_BODY_SPAN(ROWS(_f16), scalar_f16, 2, 8, 32) }\
    TARGET static void tile_rows_bf16##SUFFIX(const cs_float_tile *a, double *acc) { ROWS_BODY_SPAN(ROWS(_bf16), scalar_bf16, 2, 8, 32) }\
    TARGET static void tile_cols_f32##SUFFIX(const cs_float_tile *a, double *acc) { COLS_BODY(COLS(_f32), scalar_f32, 4, 8) }  \
    TARGET static void tile_cols_f64##SUFFIX(const cs_float_tile *a, double *acc) { COLS_BODY(cols_avx2_f64, scalar_f64, 8, 4) }  \
    TARGET static void tile_cols_f16##SUFFIX(const cs_float_tile *a, double *acc) { COLS_BODY_SPAN(COLS(_f16), scalar_f16, 2, 32, 32) }\
    TARGET static void tile_cols_bf16##SUFFIX(const cs_float_tile *a, double *acc) { COLS_BODY_SPAN(COLS(_bf16), scalar_bf16, 2, 32, 32) }\
    TARGET static void tile_mixed_f32##SUFFIX(const cs_float_tile *a, double *acc) { MIXED_BODY(MIXED, scalar_f32) } \
    static const tile_fn entries##SUFFIX[CS_TILES_KINDS][5] = {                                                                  \
        { total_cols_f32##SUFFIX, total_cols_f64##SUFFIX, NULL, NULL, NULL },                                           \
        { tile_rows_f32##SUFFIX, tile_rows_f64##SUFFIX, tile_rows_f16##SUFFIX, tile_rows_bf16##SUFFIX, ROWS_F32_F64 }, \
        { tile_cols_f32##SUFFIX, tile_cols_f64##SUFFIX, tile_cols_f16##SUFFIX, tile_cols_bf16##SUFFIX, NULL },         \
        { tile_mixed_f32##SUFFIX, NULL, NULL, NULL, NULL } };
/* rows and columns: AVX2 folds them in doubles converted as they load (rows_avx2, cols_avx2),
 * but for float32 rows, into float32 or float64 (rows_f32_avx2 and rows_f32_f64_avx2, see
 * fold8_avx2); AVX-512 in its own vectors */
#define COLS_OF_AVX2(IO) cols_avx2##IO
#define COLS_OF_AVX512(IO) cols##IO##_avx512
#define ROWS_OF_AVX2(IO) ROWS_AVX2##IO
#define ROWS_AVX2_f32 rows_f32_avx2
#define ROWS_AVX2_f16 rows_avx2_f16
#define ROWS_AVX2_bf16 rows_avx2_bf16
#define ROWS_OF_AVX512(IO) rows##IO##_avx512
AVX2 static void tile_rows_f32_f64_avx2(const cs_float_tile *a, double *acc) { ROWS_BODY(rows_f32_f64_avx2, scalar_f32_f64, 8, 8) }
ENTRIES(_avx2, AVX2, tile_rows_f32_f64_avx2, COLS_OF_AVX2, ROWS_OF_AVX2, mixed_avx2_f32)
ENTRIES(_avx512, AVX512, tile_rows_f32_f64, COLS_OF_AVX512, ROWS_OF_AVX512, mixed_f32_avx512)

/* Half tiles through the _f16n and _bf16n kernels (float16 columns; bfloat16 rows and columns on
 * AVX512-BF16): the blocks of 32 steps of rows, the groups of 8 lines of columns. The steps or lines
 * after them (a tile of their own), masked rows and tiles whose streamed part comes after a peel
 * go to the AVX-512 entries, which do them in the same code as they would in the whole tile (the
 * same outputs, NaN payloads included). Rows: the kernel's 16 forms make a function large enough
 * that the compiler stops unrolling the steps unless told to (UNROLL_bf16n), and then keeps rows32's
 * outputs on the stack. */
AVX512BF16 static void tile_rows_bf16n(const cs_float_tile *a, double *acc)
{
    const int64_t peel = a->stream ? aligned_from(a->y, 2, 32, a->yl, 0, a->ys < 0) : -1;
    const int stream = peel >= 0 && peel + 32 <= a->n;
    const int64_t streamed = stream ? a->n / 32 * 32 : 0, blocks = streamed + (a->n - streamed) / 32 * 32;
    if (a->m || (stream && peel) || blocks == 0) {
        tile_rows_bf16_avx512(a, acc);
        return;
    }
    if (stream) DISPATCH(rows_bf16n, a, acc, 0, streamed, 1);
    if (blocks > streamed) DISPATCH(rows_bf16n, a, acc, streamed, blocks, 0);
    if (blocks < a->n) {
        cs_float_tile b = *a;
        b.x = (const uint16_t *)a->x + blocks * a->xs;
        b.y = (uint16_t *)a->y + blocks * a->ys;
        b.n = a->n - blocks;
        b.empty = 0;
        tile_rows_bf16_avx512(&b, acc);
    }
}

/* columns: lines after the last group of 8 a tile of their own */
#define TILE_COLS_N(IO, TARGET, REST)                                                               \
    TARGET static void tile_cols##IO(const cs_float_tile *a, double *acc)                           \
    {                                                                                               \
        const int64_t peel = a->stream ? aligned_from(a->y, 2, 32, 0, a->ys, 0) : -1;               \
        const int stream = peel >= 0 && peel + 32 <= a->lines;                                      \
        const int64_t streamed = stream ? a->lines / 32 * 32 : 0;                                   \
        const int64_t end = streamed + (a->lines - streamed) / 8 * 8;                               \
        if ((stream && peel) || end == 0) {                                                         \
            REST(a, acc);                                                                           \
            return;                                                                                 \
        }                                                                                           \
        if (stream) DISPATCH(cols##IO, a, acc, 0, streamed, 1);                                     \
        if (end > streamed) DISPATCH(cols##IO, a, acc, streamed, end, 0);                           \
        if (end < a->lines) {                                                                       \
            cs_float_tile b = *a;                                                                   \
            b.x = (const uint16_t *)a->x + end * a->xl;                                             \
            b.m = a->m ? a->m + end * a->ml : NULL;                                                 \
            b.y = (uint16_t *)a->y + end * a->yl;                                                   \
            b.lines = a->lines - end;                                                               \
            b.empty = a->empty > end ? a->empty - end : 0;                                          \
            REST(&b, acc + end);                                                                    \
        }                                                                                           \
    }
TILE_COLS_N(_f16n, AVX512, tile_cols_f16_avx512)
TILE_COLS_N(_bf16n, AVX512BF16, tile_cols_bf16_avx512)

/* the entry of a kind of tile for a dtype */
static tile_fn entry(int kind, int dtype)
{
    if (!use_avx512()) return entries_avx2[kind][dtype];
    if (dtype == CS_TILE_F16 && kind == CS_TILES_COLS) return tile_cols_f16n;
    if (dtype == CS_TILE_BF16 && (kind == CS_TILES_ROWS || kind == CS_TILES_COLS) &&
        __atomic_load_n(&bf16n_state, __ATOMIC_RELAXED) > 0)
        return kind == CS_TILES_ROWS ? tile_rows_bf16n : tile_cols_bf16n;
    return entries_avx512[kind][dtype];
}

void cs_cpu_stream_fence(void)
{
    _mm_sfence();
}

int cs_cpu_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

/* The AVX-512 entries where the CPU has AVX-512VL, unless CUSCAN_CPU_AVX512=0 asks for the AVX2 ones
 * (on parts where 512-bit work lowers the clock, and so that both can be tested on one machine);
 * and within them the _bf16n kernels where it also has AVX512-BF16 and DQ (bf16n_state, set first:
 * the tiles are only reached through use_avx512). */
static int use_avx512(void)
{
    int v = __atomic_load_n(&avx512_state, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("CUSCAN_CPU_AVX512");
        v = __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") && !(e && strcmp(e, "0") == 0);
        __atomic_store_n(&bf16n_state, v && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512dq"),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&avx512_state, v, __ATOMIC_RELAXED);
    }
    return v;
}

int cs_cpu_avx512(void)
{
    return use_avx512();
}

int cs_cpu_float_tiles_have(int kind, int dtype)
{
    return cs_cpu_avx2() && entry(kind, dtype) != NULL;
}

/* scalar edges of each CS_TILE_* dtype, and its element sizes in and out */
static void (*const scalar_of[])(const cs_float_tile *, double *, int64_t, int64_t, int64_t, int64_t) = {
    scalar_f32, scalar_f64, scalar_f16, scalar_bf16, scalar_f32_f64 };
static const int64_t in_size[] = { 4, 8, 2, 2, 4 }, out_size[] = { 4, 8, 2, 2, 8 };

/* Rows of other than 8 lines (short lines, many a tile; the last lines of a tile): each group of 8
 * through fn, the lines after the last whole group one element at a time */
static void row_groups(tile_fn fn, const cs_float_tile *a, double *acc)
{
    cs_float_tile g = *a;
    g.lines = 8;
    int64_t l = 0;
    for (; l + 8 <= a->lines; l += 8) {
        g.x = (const char *)a->x + l * a->xl * in_size[a->dtype];
        g.m = a->m ? a->m + l * a->ml : NULL;
        g.y = (char *)a->y + l * a->yl * out_size[a->dtype];
        g.empty = a->empty > l ? a->empty - l : 0;
        fn(&g, acc + l);
    }
    scalar_of[a->dtype](a, acc, l, a->lines, 0, a->n);
}

int cs_cpu_float_tile(const cs_float_tile *a, double *acc)
{
    if (!cs_cpu_avx2()) return 0;
    const int x_along = (a->xs == 1 || a->xs == -1) && (!a->m || a->ms == a->xs);
    const int along = x_along && a->ys == a->xs;
    const int across = a->xl == 1 && a->yl == 1 && (!a->m || a->ml == 1);
    int kind;
    if (!a->y) { /* totals alone: columns */
        if (!across || a->lines < 4) return 0;
        kind = CS_TILES_TOTALS;
    } else if (along) {
        kind = CS_TILES_ROWS;
    } else if (across && a->lines >= 8) {
        kind = CS_TILES_COLS;
    } else if (a->dtype == CS_TILE_F32 && a->lines >= 8 && ((x_along && a->yl == 1) ||
                                            (a->xl == 1 && (!a->m || a->ml == 1) && (a->ys == 1 || a->ys == -1)))) {
        kind = CS_TILES_MIXED;
    } else {
        return 0;
    }
    const tile_fn fn = entry(kind, a->dtype);
    if (!fn) return 0;
    if (kind == CS_TILES_ROWS && a->lines != 8) row_groups(fn, a, acc);
    else fn(a, acc);
    return 1;
}
#else
int cs_cpu_avx512(void)
{
    return 0;
}

int cs_cpu_float_tiles_have(int kind, int dtype)
{
    (void)kind, (void)dtype;
    return 0;
}

void cs_cpu_stream_fence(void) {}

int cs_cpu_float_tile(const cs_float_tile *a, double *acc)
{
    (void)a, (void)acc;
    return 0;
}
#endif
