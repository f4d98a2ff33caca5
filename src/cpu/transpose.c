/* cpu/transpose.c - the transposition of a block of elements, for the CPU scans and copies that
 * read along one dim and write along another. */
#include <stdint.h>
#include <string.h>
#include "simd.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define HAVE_AVX512_BLOCKS 1
#endif

#define INLINE static inline __attribute__((always_inline))

/* dst[c * ds + r] = src[r * ss + c] for r < nr, c < nc, elements of `size` bytes: rows of src become
 * columns of dst. 8x8 blocks of 4-byte and 4x4 blocks of 8-byte elements move through vector
 * shuffles; edges and other sizes one element at a time. */
#if defined(__GNUC__) && !defined(__clang__)
/* unaligned, and allowed to alias the elements they are loaded from */
typedef uint32_t v8u32 __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint64_t v4u64 __attribute__((vector_size(32), aligned(8), may_alias));
#define SHUFFLE2(a, b, ...) __builtin_shuffle(a, b, (__typeof__(a)){ __VA_ARGS__ })

/* a 32-byte row stored past the caches (16-byte aligned), as two 16-byte streaming stores: the
 * baseline's instruction, so that every clone has it */
#if defined(__SSE2__)
#define STREAM_ROW(p, v)                                                                            \
    do {                                                                                        \
        __m128i h_[2];                                                                          \
        memcpy(h_, &(v), sizeof h_);                                                            \
        _mm_stream_si128((__m128i *)(void *)(p), h_[0]);                                        \
        _mm_stream_si128((__m128i *)(void *)(p) + 1, h_[1]);                                    \
    } while (0)
#else
#define STREAM_ROW(p, v) memcpy((p), &(v), sizeof(v))
#endif
#define STORE_ROW(V, p, v, STREAM)                                                                  \
    do {                                                                                        \
        if (STREAM) STREAM_ROW(p, v);                                                           \
        else *(V *)(p) = (v);                                                                   \
    } while (0)

/* rows r[0..7] of 8 lanes transposed in three rounds of pair-wise shuffles. FAR: both src's and
 * dst's rows lie pages apart; the rows are then read in halves through memcpy, the faster form for
 * that pattern (and the slower one into or out of a buffer). STREAM: dst's rows are stored past
 * the caches. */
#define TRANSPOSE_8x8(V, src, ss, dst, ds, FAR, STREAM)                                             \
    do {                                                                                        \
        V r[8], t[8], u[8];                                                                     \
        for (int i = 0; i < 8; i++) {                                                           \
            if (FAR) memcpy(&r[i], src + i * ss, sizeof r[i]);                                  \
            else r[i] = *(const V *)(src + i * ss);                                             \
        }                                                                                       \
        for (int i = 0; i < 8; i += 2) {                                                        \
            t[i] = SHUFFLE2(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);                          \
            t[i + 1] = SHUFFLE2(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);                    \
        }                                                                                       \
        for (int i = 0; i < 8; i += 4)                                                          \
            for (int h = 0; h < 2; h++) {                                                       \
                u[i + 2 * h] = SHUFFLE2(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);      \
                u[i + 2 * h + 1] = SHUFFLE2(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15); \
            }                                                                                   \
        for (int i = 0; i < 4; i++) {                                                           \
            V lo = SHUFFLE2(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);                          \
            V hi = SHUFFLE2(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);                        \
            STORE_ROW(V, dst + i * ds, lo, STREAM);                                             \
            STORE_ROW(V, dst + (i + 4) * ds, hi, STREAM);                                       \
        }                                                                                       \
    } while (0)

typedef uint8_t v8u8 __attribute__((vector_size(8), aligned(1), may_alias));
INLINE void transpose_8x8_u8(const uint8_t *src, int64_t ss, uint8_t *dst, int64_t ds)
{
    TRANSPOSE_8x8(v8u8, src, ss, dst, ds, 0, 0);
}

INLINE void transpose_8x8_u32(const uint32_t *src, int64_t ss, uint32_t *dst, int64_t ds)
{
    TRANSPOSE_8x8(v8u32, src, ss, dst, ds, 0, 0);
}

INLINE void transpose_8x8_u32_far(const uint32_t *src, int64_t ss, uint32_t *dst, int64_t ds)
{
    TRANSPOSE_8x8(v8u32, src, ss, dst, ds, 1, 0);
}

INLINE void transpose_8x8_u32_stream(const uint32_t *src, int64_t ss, uint32_t *dst, int64_t ds)
{
    TRANSPOSE_8x8(v8u32, src, ss, dst, ds, 0, 1);
}

INLINE void transpose_4x4_u64_g(const uint64_t *src, int64_t ss, uint64_t *dst, int64_t ds, const int STREAM)
{
    v4u64 r[4], t[4];
    for (int i = 0; i < 4; i++) r[i] = *(const v4u64 *)(src + i * ss);
    for (int i = 0; i < 4; i += 2) {
        t[i] = SHUFFLE2(r[i], r[i + 1], 0, 4, 2, 6);
        t[i + 1] = SHUFFLE2(r[i], r[i + 1], 1, 5, 3, 7);
    }
    for (int i = 0; i < 2; i++) {
        v4u64 lo = SHUFFLE2(t[i], t[i + 2], 0, 1, 4, 5), hi = SHUFFLE2(t[i], t[i + 2], 2, 3, 6, 7);
        STORE_ROW(v4u64, dst + i * ds, lo, STREAM);
        STORE_ROW(v4u64, dst + (i + 2) * ds, hi, STREAM);
    }
}

INLINE void transpose_4x4_u64(const uint64_t *src, int64_t ss, uint64_t *dst, int64_t ds)
{
    transpose_4x4_u64_g(src, ss, dst, ds, 0);
}

INLINE void transpose_4x4_u64_stream(const uint64_t *src, int64_t ss, uint64_t *dst, int64_t ds)
{
    transpose_4x4_u64_g(src, ss, dst, ds, 1);
}
#define TRANSPOSE_BLOCKS(T, B, BLOCK)                                                              \
    for (; r + B <= nr; r += B) {                                                              \
        int64_t c = 0;                                                                         \
        for (; c + B <= nc; c += B) BLOCK((const T *)src + r * ss + c, ss, (T *)dst + c * ds + r, ds); \
        for (; c < nc; c++)                                                                    \
            for (int64_t i = r; i < r + B; i++) ((T *)dst)[c * ds + i] = ((const T *)src)[i * ss + c]; \
    }
/* the same blocks, each of dst's rows written whole before the next, so that streaming stores
 * fill whole cache lines */
#define TRANSPOSE_BLOCKS_BY_ROW(T, B, BLOCK)                                                       \
    {                                                                                          \
        const int64_t rn = nr / B * B;                                                         \
        int64_t c = 0;                                                                         \
        for (; c + B <= nc; c += B)                                                            \
            for (int64_t i = 0; i < rn; i += B) BLOCK((const T *)src + i * ss + c, ss, (T *)dst + c * ds + i, ds); \
        for (; c < nc; c++)                                                                    \
            for (int64_t i = 0; i < rn; i++) ((T *)dst)[c * ds + i] = ((const T *)src)[i * ss + c]; \
        r = rn;                                                                                \
    }
#endif

#ifdef HAVE_AVX512_BLOCKS
/* 4-byte elements on AVX-512: 16 x 16 blocks, so that every load and store is one 64-byte row of 16
 * elements (a whole cache line where aligned: streaming stores then fill lines whole and at once,
 * where two 32-byte halves from separate blocks drain the write-combining buffers slowly). */
#define AVX512_BLOCKS __attribute__((target("avx2,avx512f")))
AVX512_BLOCKS static inline __attribute__((always_inline)) void transpose_16x16_u32(const uint32_t *src, int64_t ss,
                                                                                uint32_t *dst, int64_t ds,
                                                                                const int STREAM)
{
    __m512i r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512((const void *)(src + i * ss));
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    /* r[4q + j]: element j of each 128-bit quarter of rows 4q to 4q + 3; then the quarters */
    for (int q = 0; q < 4; q += 2)
        for (int j = 0; j < 4; j++) {
            t[4 * q + j] = _mm512_shuffle_i32x4(r[4 * q + j], r[4 * q + 4 + j], 0x88);
            t[4 * q + 4 + j] = _mm512_shuffle_i32x4(r[4 * q + j], r[4 * q + 4 + j], 0xDD);
        }
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) {
            const __m512i lo = _mm512_shuffle_i32x4(t[j + 4 * h], t[8 + j + 4 * h], 0x88);
            const __m512i hi = _mm512_shuffle_i32x4(t[j + 4 * h], t[8 + j + 4 * h], 0xDD);
            uint32_t *d0 = dst + (j + 4 * h) * ds, *d1 = dst + (j + 8 + 4 * h) * ds;
            if (STREAM) {
                _mm512_stream_si512((void *)d0, lo);
                _mm512_stream_si512((void *)d1, hi);
            } else {
                _mm512_storeu_si512((void *)d0, lo);
                _mm512_storeu_si512((void *)d1, hi);
            }
        }
}

/* the whole 16 x 16 blocks of nr x nc, in src's row order (the rows that src's lines bring into
 * cache are used up before they leave it) */
AVX512_BLOCKS static void transpose_u32_avx512(const uint32_t *src, int64_t ss, uint32_t *dst, int64_t ds, int64_t nr,
                                              int64_t nc, int stream)
{
    for (int64_t r = 0; r + 16 <= nr; r += 16)
        for (int64_t c = 0; c + 16 <= nc; c += 16) {
            if (stream) transpose_16x16_u32(src + r * ss + c, ss, dst + c * ds + r, ds, 1);
            else transpose_16x16_u32(src + r * ss + c, ss, dst + c * ds + r, ds, 0);
        }
}

#endif

static void transpose_rest(const void *src, int64_t ss, void *dst, int64_t ds, int64_t nr, int64_t nc, size_t size,
                           int stream);

void cs_cpu_transpose_stream(const void *src, int64_t ss, void *dst, int64_t ds, int64_t nr, int64_t nc, size_t size,
                             int stream)
{
#ifdef HAVE_AVX512_BLOCKS
    /* streaming only where every block's rows start 64 bytes aligned */
    if (size == 4 && nr >= 16 && nc >= 16 && cs_cpu_avx512() &&
        (!stream || ((uintptr_t)dst % 64 == 0 && (ds * 4) % 64 == 0))) {
        const int64_t r16 = nr / 16 * 16, c16 = nc / 16 * 16;
        transpose_u32_avx512(src, ss, dst, ds, nr, nc, stream);
        /* the columns right of the blocks, then the rows below them */
        if (c16 < nc)
            transpose_rest((const uint32_t *)src + c16, ss, (uint32_t *)dst + c16 * ds, ds, r16, nc - c16, size, stream);
        if (r16 < nr) transpose_rest((const uint32_t *)src + r16 * ss, ss, (uint32_t *)dst + r16, ds, nr - r16, nc, size, stream);
        return;
    }
#endif
    transpose_rest(src, ss, dst, ds, nr, nc, size, stream);
}

VECTOR_KERNEL_256 static void transpose_rest(const void *src, int64_t ss, void *dst, int64_t ds, int64_t nr, int64_t nc,
                                           size_t size, int stream)
{
    int64_t r = 0;
    (void)stream; /* without the vector blocks, unused */
#ifdef TRANSPOSE_BLOCKS
    /* streaming where every block's rows start 16 bytes aligned */
    stream = stream && (uintptr_t)dst % 16 == 0 && (ds * (int64_t)size) % 16 == 0;
    if (size == 1) TRANSPOSE_BLOCKS(uint8_t, 8, transpose_8x8_u8)
    else if (size == 4 && stream) TRANSPOSE_BLOCKS_BY_ROW(uint32_t, 8, transpose_8x8_u32_stream)
    else if (size == 8 && stream) TRANSPOSE_BLOCKS_BY_ROW(uint64_t, 4, transpose_4x4_u64_stream)
    else if (size == 4 && (ds > 1024 || ds < -1024) && (ss > 16 || ss < -16))
        TRANSPOSE_BLOCKS(uint32_t, 8, transpose_8x8_u32_far)
    else if (size == 4) TRANSPOSE_BLOCKS(uint32_t, 8, transpose_8x8_u32)
    else if (size == 8) TRANSPOSE_BLOCKS(uint64_t, 4, transpose_4x4_u64)
#endif
#define TRANSPOSE_REST(T)                                                              \
    for (; r < nr; r++)                                                                \
        for (int64_t c = 0; c < nc; c++) ((T *)dst)[c * ds + r] = ((const T *)src)[r * ss + c];
    switch (size) {
    case 1: TRANSPOSE_REST(uint8_t) break;
    case 2: TRANSPOSE_REST(uint16_t) break;
    case 4: TRANSPOSE_REST(uint32_t) break;
    default: TRANSPOSE_REST(uint64_t) break;
    }
#undef TRANSPOSE_REST
}

void cs_cpu_transpose(const void *src, int64_t ss, void *dst, int64_t ds, int64_t nr, int64_t nc, size_t size)
{
    cs_cpu_transpose_stream(src, ss, dst, ds, nr, nc, size, 0);
}
