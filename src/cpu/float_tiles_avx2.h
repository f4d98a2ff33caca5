/* cpu/float_tiles_avx2.h - the AVX2 kernels of float_tiles.c (included there, after the helpers they
 * share with the AVX-512 kernels: FOLD, the masks, the empty lanes, the element loads and stores).
 * Sums and products fold in doubles, four lines a vector: elements convert to double as they load,
 * outputs go back through 16-byte vectors, and the half types round on their own grid in doubles;
 * so that little moves between the 16-byte halves of a vector, which on AVX2 CPUs such as this
 * one's kind goes through a single unit (see load4_f64). */
#ifndef CUSCAN_CPU_FLOAT_TILES_AVX2_H
#define CUSCAN_CPU_FLOAT_TILES_AVX2_H

/* Four elements of a tile's storage type as doubles (exact), each converted as it loads where the
 * type allows: AVX2 on this CPU's kind has one unit for what moves data between the 16-byte halves of
 * a vector (a conversion between 4 floats and 4 doubles held in registers, an extract, an insert, a
 * permute), and a conversion from memory does not use it. */
typedef double elem_f64;
AVX2_INLINE __m256d load4_f64(const double *p) { return _mm256_loadu_pd(p); }
AVX2_INLINE __m256d load4_f32(const float *p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
AVX2_INLINE __m256d load4_f16(const uint16_t *p)
{
    return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p)));
}
AVX2_INLINE __m256d load4_bf16(const uint16_t *p)
{
    const __m128i w = _mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(w, 16)));
}

/* d rounded to nearest even at a half type's last place (float16: 10 fraction bits, exponents -14 to
 * 15; bfloat16: 7, -126 to 127): c = 1.5 * 2^(e + 52 - bits), e the exponent of d held within the
 * type's, is a multiple of that place whose sum with d keeps it as its last, so that d + c rounds
 * there (ties to even, as c / place is even) and the subtraction of c is exact. The sign goes back on
 * for a result that rounds to zero. The result is a float and a half value: converting it is exact,
 * and it is the double rounded once, as half.h rounds. */
AVX2_INLINE __m256d half_grid4(__m256d d, const int BF16)
{
    const __m256d expo = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7ff0000000000000LL));
    __m256d e = _mm256_max_pd(_mm256_and_pd(d, expo), _mm256_set1_pd(BF16 ? 0x1p-126 : 0x1p-14));
    e = _mm256_min_pd(e, _mm256_set1_pd(BF16 ? 0x1p127 : 0x1p15));
    const __m256d c = _mm256_mul_pd(e, _mm256_set1_pd(BF16 ? 0x1.8p45 : 0x1.8p42));
    const __m256d r = _mm256_sub_pd(_mm256_add_pd(d, c), c);
    return _mm256_or_pd(r, _mm256_and_pd(d, _mm256_set1_pd(-0.0)));
}

/* Eight outputs from two vectors of four doubles, stored as 16-byte halves so that the two halves
 * need not be joined in a register */
AVX2_INLINE void store8d_f64(double *p, __m256d a, __m256d b, const int STREAM)
{
    STORE_F64(STREAM, p, a);
    STORE_F64(STREAM, p + 4, b);
}

AVX2_INLINE void store8d_f32(float *p, __m256d a, __m256d b, const int STREAM)
{
    const __m128 lo = _mm256_cvtpd_ps(a), hi = _mm256_cvtpd_ps(b);
    if (STREAM) _mm_stream_ps(p, lo), _mm_stream_ps(p + 4, hi);
    else _mm_storeu_ps(p, lo), _mm_storeu_ps(p + 4, hi);
}

/* d rounded to a float by rounding to odd: its bits below float32's last place cleared, and that
 * place set where any of them was (the carry of their sum with all ones). The float so made is
 * exact, and float16's rounding to nearest of it (13 places fewer) is the double's own, as half.h
 * rounds (4 integer operations, where half_grid4 takes 8). Below float32's normal range (the
 * place there is higher) the result is below float16's least denormal by far, so it still rounds
 * to a zero of d's sign; NaN keeps its top payload bits. */
AVX2_INLINE __m128 odd4_f16(__m256d d)
{
    const __m256i low = _mm256_set1_epi64x((1LL << 29) - 1), u = _mm256_castpd_si256(d);
    const __m256i sticky = _mm256_add_epi64(_mm256_and_si256(u, low), low);
    return _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_andnot_si256(low, _mm256_or_si256(u, sticky))));
}

AVX2_INLINE void store8d_f16(uint16_t *p, __m256d a, __m256d b, const int STREAM)
{
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m128i lo = _mm_cvtps_ph(odd4_f16(a), rn), hi = _mm_cvtps_ph(odd4_f16(b), rn);
    store_halves(p, _mm_unpacklo_epi64(lo, hi), STREAM);
}

/* Eight doubles (a: lanes 0-3, b: 4-7) as bfloat16, in each lane's top half. The floats nearest
 * them, then bfloat16 by an integer add (ties to even, the carry stepping into the exponent): the
 * double's own rounding unless the float lies on a bfloat16 tie (the float's rounding may have moved
 * it there) or is NaN; such lanes are set in *redo, whose caller checks them (bf16_moved). */
AVX2_INLINE __m256i bf16_near8(__m256d a, __m256d b, __m256i *redo)
{
    const __m256 t = _mm256_set_m128(_mm256_cvtpd_ps(b), _mm256_cvtpd_ps(a));
    const __m256i u = _mm256_castps_si256(t);
    const __m256i tie = _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0xffff)), _mm256_set1_epi32(0x8000));
    *redo = _mm256_or_si256(*redo, _mm256_or_si256(tie, _mm256_castps_si256(_mm256_cmp_ps(t, t, _CMP_UNORD_Q))));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
}

/* whether a lane of `lanes` (bf16_near8's redo) needs bf16_grid8: a NaN, or a tie that the float's
 * rounding moved the double onto (a double on the tie itself rounds there as the float does) */
AVX2_INLINE int bf16_moved(__m256d a, __m256d b, __m256i lanes)
{
    const int moved = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_cvtps_pd(_mm256_cvtpd_ps(a)), a, _CMP_NEQ_UQ)) |
                      _mm256_movemask_pd(_mm256_cmp_pd(_mm256_cvtps_pd(_mm256_cvtpd_ps(b)), b, _CMP_NEQ_UQ)) << 4;
    return (moved & _mm256_movemask_ps(_mm256_castsi256_ps(lanes))) != 0;
}

/* the same on the double grid (half_grid4): exact floats, NaN keeping its top payload bits */
AVX2_INLINE __m256i bf16_grid8(__m256d a, __m256d b)
{
    return _mm256_castps_si256(_mm256_set_m128(_mm256_cvtpd_ps(half_grid4(b, 1)), _mm256_cvtpd_ps(half_grid4(a, 1))));
}

/* Eight doubles as bfloat16 (in each lane's top half), each rounded once */
AVX2_INLINE __m256i bf16_round8(__m256d a, __m256d b)
{
    __m256i redo = _mm256_setzero_si256(), u = bf16_near8(a, b, &redo);
    return !_mm256_testz_si256(redo, redo) && bf16_moved(a, b, redo) ? bf16_grid8(a, b) : u;
}

AVX2_INLINE void store8d_bf16(uint16_t *p, __m256d a, __m256d b, const int STREAM)
{
    const __m256i u = bf16_round8(a, b);
    const __m256i h = _mm256_srli_epi32(u, 16);
    store_halves(p, _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)), STREAM);
}

/* A row block's bfloat16 outputs, u[j] the 8 lines' step j (memory order) in the lanes' top halves,
 * stored as 16 bytes a line: steps paired in 32-bit lanes, then each 128-bit half of the four
 * pairs transposed 4 x 4 (lines 0-3 below, 4-7 above), so that nothing crosses the halves of a
 * vector but the extracts of lines 4-7 */
AVX2_INLINE void bf16_rows_out(uint16_t *y, int64_t yl, const __m256i u[8], const int STREAM)
{
    __m256i v[4];
    for (int i = 0; i < 4; i++) v[i] = _mm256_blend_epi16(_mm256_srli_epi32(u[2 * i], 16), u[2 * i + 1], 0xAA);
    const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    const __m256i l[4] = { _mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                           _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3) };
    for (int i = 0; i < 4; i++) {
        store_halves(y + i * yl, _mm256_castsi256_si128(l[i]), STREAM);
        store_halves(y + (i + 4) * yl, _mm256_extracti128_si256(l[i], 1), STREAM);
    }
}

/* A row block's float16 outputs, h[j] the 8 lines' step j (memory order), stored as 16 bytes a
 * line after an 8 x 8 transpose of 16-bit lanes */
AVX2_INLINE void f16_rows_out(uint16_t *y, int64_t yl, const __m128i h[8], const int STREAM)
{
    __m128i a[8], b[8];
    for (int i = 0; i < 4; i++) { /* lines 0-3 (a[2i]) and 4-7 (a[2i + 1]) of steps 2i, 2i + 1 */
        a[2 * i] = _mm_unpacklo_epi16(h[2 * i], h[2 * i + 1]);
        a[2 * i + 1] = _mm_unpackhi_epi16(h[2 * i], h[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) /* steps 4i to 4i + 3 of two lines: b[4i + q] lines 2q, 2q + 1 */
        for (int p = 0; p < 2; p++) {
            b[4 * i + 2 * p] = _mm_unpacklo_epi32(a[4 * i + p], a[4 * i + 2 + p]);
            b[4 * i + 2 * p + 1] = _mm_unpackhi_epi32(a[4 * i + p], a[4 * i + 2 + p]);
        }
    for (int p = 0; p < 4; p++) {
        store_halves(y + 2 * p * yl, _mm_unpacklo_epi64(b[p], b[4 + p]), STREAM);
        store_halves(y + (2 * p + 1) * yl, _mm_unpackhi_epi64(b[p], b[4 + p]), STREAM);
    }
}

/* Columns on AVX2: lines [l0, l1) (a multiple of 8 of them) over every step, their accumulators in
 * acc[]; up to 4 steps a pass, so that an accumulator is loaded and stored once for them. A pass
 * loads its steps before it stores any: the next step's row may lie a multiple of 4 KiB from the
 * row just stored (x and out laid out alike, both starting on a page), and a load that follows such
 * a store waits for it. */
#define COLS_AVX2(IO)                                                                               \
    AVX2_INLINE void cols_pass_avx2##IO(const elem##IO *x, const unsigned char *m, elem##IO *yk, int64_t xs, \
                                        int64_t ms, int64_t ys, int64_t l, int64_t k0, const int ns, \
                                        int64_t empty, __m256d *s0, __m256d *s1, const int PROD,   \
                                        const int EXCL, const int MASKED, const int STREAM)         \
    {                                                                                               \
        const __m256d masked = _mm256_set1_pd(PROD ? 1.0 : 0.0);                                    \
        __m256d v[4][2];                                                                            \
        for (int s = 0; s < ns; s++) {                                                              \
            const int64_t k = k0 + s;                                                               \
            v[s][0] = load4##IO(x + k * xs + l), v[s][1] = load4##IO(x + k * xs + l + 4);           \
            if (MASKED) {                                                                           \
                v[s][0] = mask_f64(v[s][0], m + k * ms + l, masked);                                \
                v[s][1] = mask_f64(v[s][1], m + k * ms + l + 4, masked);                            \
            }                                                                                       \
        }                                                                                           \
        for (int s = 0; s < ns; s++) {                                                              \
            const int64_t k = k0 + s;                                                               \
            __m256d v0 = FOLD(*s0, v[s][0], PROD, EXCL), v1 = FOLD(*s1, v[s][1], PROD, EXCL);       \
            if (EXCL && k == 0 && empty) {                                                          \
                v0 = _mm256_blendv_pd(v0, masked, _mm256_castsi256_pd(empty_lanes64(empty, l)));    \
                v1 = _mm256_blendv_pd(v1, masked, _mm256_castsi256_pd(empty_lanes64(empty, l + 4))); \
            }                                                                                       \
            store8d##IO(yk + s * ys, v0, v1, STREAM);                                               \
        }                                                                                           \
    }                                                                                               \
    AVX2_INLINE void cols_avx2##IO(const cs_float_tile *a, double *acc, int64_t l0, int64_t l1, const int PROD, \
                                   const int EXCL, const int BACK, const int MASKED, const int STREAM) \
    {                                                                                               \
        (void)BACK;                                                                                 \
        COLS_LOCALS(IO);                                                                            \
        for (int64_t k0 = 0; k0 < n; k0 += 4) {                                                     \
            const int ns = n - k0 < 4 ? (int)(n - k0) : 4;                                          \
            for (int64_t lg = l0; lg < l1; lg += gl)                                                \
                for (int64_t l = lg; l < lg + gl; l += 8) {                                         \
                    __m256d s0 = _mm256_loadu_pd(acc + l), s1 = _mm256_loadu_pd(acc + l + 4);      \
                    elem##IO *yk = gather ? (elem##IO *)(void *)(buf + (l - lg)) : y + k0 * ys + l; \
                    const int64_t yks = gather ? 32 : ys, st = gather ? 0 : STREAM;                 \
                    if (ns == 4) /* the steps a constant, so that v[] stays in registers */         \
                        cols_pass_avx2##IO(x, m, yk, xs, ms, yks, l, k0, 4, empty, &s0, &s1, PROD, EXCL, MASKED, st); \
                    else                                                                            \
                        cols_pass_avx2##IO(x, m, yk, xs, ms, yks, l, k0, ns, empty, &s0, &s1, PROD, EXCL, MASKED, st); \
                    _mm256_storeu_pd(acc + l, s0);                                                  \
                    _mm256_storeu_pd(acc + l + 4, s1);                                              \
                    if (gather && l + 8 == lg + gl)                                                 \
                        for (int s = 0; s < ns; s++)                                                \
                            stream_line((uint16_t *)(void *)(y + (k0 + s) * ys + lg), buf + 32 * s); \
                }                                                                                   \
        }                                                                                           \
    }
COLS_AVX2(_f64)
COLS_AVX2(_f32)
COLS_AVX2(_f16)
COLS_AVX2(_bf16)

/* Four outputs of a block as floats, for float32 lines along the scan (the half types' go through
 * f16_rows_out and bf16_rows_out; their names keep the one body of block_avx2 compiling) */
enum { F16_f32 = 0, F16_f16 = 1, F16_bf16 = 0, BF16_f32 = 0, BF16_f16 = 0, BF16_bf16 = 1 };
AVX2_INLINE __m128 out4_f32(__m256d d) { return _mm256_cvtpd_ps(d); }
#define out4_f16 out4_f32
#define out4_bf16 out4_f32

/* A block on AVX2: 8 steps from walk step k of 8 lines. Each side's lines run along the scan (ALONG:
 * line l's block at p + l * pl + at, its lowest address, at = BACK ? -(k + 7) : k) or lie next to
 * each other (step k + s of the 8 lines from p + (k + s) * ps). Lines along the scan load as 8 floats
 * each and go through the part of an 8 x 8 transpose that stays within the 16-byte halves of a
 * vector into a buffer, whence each step's four lines convert to doubles as they load; lines next
 * to each other convert as they load. Float outputs along the scan go back through 4 x 4 transposes
 * of 16-byte vectors, four steps at a time; the half types' as 16-bit lanes once all 8 steps are in
 * (f16_rows_out, bf16_rows_out), so that each line's 16 bytes are stored at once. So little crosses
 * the halves of a vector besides the conversions to float (see load4_f64). */
#define BLOCK_AVX2(IN, OUT)                                                                         \
    AVX2_INLINE void block_avx2##IN##OUT(const elem##IN *x, const unsigned char *m, elem##OUT *y, int64_t xl, \
                                         int64_t xs, int64_t ml, int64_t ms, int64_t yl, int64_t ys, int64_t k, \
                                         __m256d *lo, __m256d *hi, int64_t empty, __m256 *r, int loaded, \
                                         int next, const int PROD, const int EXCL, const int BACK,  \
                                         const int MASKED, const int STREAM, const int XALONG, const int YALONG) \
    {                                                                                               \
        const __m256d identity = _mm256_set1_pd(PROD ? 1.0 : 0.0);                                  \
        const __m256 masked = _mm256_set1_ps(PROD ? 1.0f : 0.0f);                                   \
        const int64_t at = BACK ? -(k + 7) : k;                                                     \
        /* XALONG: u[i] (lines 0-3) and u[4 + i] (lines 4-7) hold step i in the low half, i + 4     \
         * above, as buf[8 i...]. The lines' block in r[] unless loaded there already; the next      \
         * block's is loaded into r[] before this one's stores, since a load that follows a store to \
         * an address some multiple of 4 KiB away waits for it (x and out laid out alike, both        \
         * starting on a page) */                                                                   \
        float buf[64] __attribute__((aligned(32)));                                                 \
        if (XALONG) {                                                                               \
            for (int l = 0; l < 8 && !loaded; l++) {                                                \
                r[l] = load8##IN(x + l * xl + at);                                                  \
                if (MASKED) r[l] = mask_f32(r[l], m + l * ml + at, masked);                         \
            }                                                                                       \
            for (int h = 0; h < 8; h += 4) {                                                        \
                const __m256 t0 = _mm256_unpacklo_ps(r[h], r[h + 1]), t1 = _mm256_unpackhi_ps(r[h], r[h + 1]); \
                const __m256 t2 = _mm256_unpacklo_ps(r[h + 2], r[h + 3]), t3 = _mm256_unpackhi_ps(r[h + 2], r[h + 3]); \
                _mm256_store_ps(buf + 8 * h, _mm256_shuffle_ps(t0, t2, 0x44));                      \
                _mm256_store_ps(buf + 8 * h + 8, _mm256_shuffle_ps(t0, t2, 0xEE));                  \
                _mm256_store_ps(buf + 8 * h + 16, _mm256_shuffle_ps(t1, t3, 0x44));                 \
                _mm256_store_ps(buf + 8 * h + 24, _mm256_shuffle_ps(t1, t3, 0xEE));                 \
            }                                                                                       \
            __asm__("" : "+m"(buf)); /* read back from memory, not taken apart in registers */      \
            const int64_t nat = BACK ? at - 8 : at + 8;                                             \
            for (int l = 0; l < 8 && next; l++) {                                                   \
                r[l] = load8##IN(x + l * xl + nat);                                                 \
                if (MASKED) r[l] = mask_f32(r[l], m + l * ml + nat, masked);                        \
            }                                                                                       \
        }                                                                                           \
        __m256i u16[8], redo = _mm256_setzero_si256(); /* bfloat16 rows: see bf16_rows_out */       \
        __m128i h16[8]; /* float16 rows: see f16_rows_out */                                        \
        __m256d dd[8][2]; /* their doubles, for bf16_grid8 */                                       \
        for (int qw = 0; qw < 2; qw++) { /* four steps in walk order */                             \
            __m128 o[8];                                                                            \
            for (int i = 0; i < 4; i++) {                                                           \
                const int s = 4 * qw + i, j = BACK ? 7 - s : s; /* walk step, memory step */        \
                __m256d a, b;                                                                       \
                if (XALONG) {                                                                       \
                    const float *p = buf + 8 * (j & 3) + 4 * (j >> 2);                              \
                    a = _mm256_cvtps_pd(_mm_load_ps(p)), b = _mm256_cvtps_pd(_mm_load_ps(p + 32));  \
                } else {                                                                            \
                    a = load4##IN(x + (k + s) * xs), b = load4##IN(x + (k + s) * xs + 4);           \
                    if (MASKED) {                                                                   \
                        a = mask_f64(a, m + (k + s) * ms, identity);                                \
                        b = mask_f64(b, m + (k + s) * ms + 4, identity);                            \
                    }                                                                               \
                }                                                                                   \
                a = FOLD(*lo, a, PROD, EXCL);                                                       \
                b = FOLD(*hi, b, PROD, EXCL);                                                       \
                if (EXCL && s == 0 && empty) {                                                      \
                    a = _mm256_blendv_pd(a, identity, _mm256_castsi256_pd(empty_lanes64(empty, 0))); \
                    b = _mm256_blendv_pd(b, identity, _mm256_castsi256_pd(empty_lanes64(empty, 4))); \
                }                                                                                   \
                if (!YALONG) store8d##OUT(y + (k + s) * ys, a, b, STREAM);                          \
                else if (BF16##OUT) u16[j] = bf16_near8(a, b, &redo), dd[j][0] = a, dd[j][1] = b;     \
                else if (F16##OUT) h16[j] = _mm256_cvtps_ph(_mm256_set_m128(odd4_f16(b), odd4_f16(a)), \
                                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); \
                else o[j & 3] = out4##OUT(a), o[4 + (j & 3)] = out4##OUT(b);                        \
            }                                                                                       \
            if (!YALONG || BF16##OUT || F16##OUT) continue;                                         \
            const int q = BACK ? 1 - qw : qw; /* the quad's place in memory */                      \
            _MM_TRANSPOSE4_PS(o[0], o[1], o[2], o[3]);                                              \
            _MM_TRANSPOSE4_PS(o[4], o[5], o[6], o[7]);                                              \
            for (int l = 0; l < 8; l++) {                                                           \
                float *at_y = (float *)(void *)(y + l * yl + at + 4 * q);                           \
                if (STREAM) _mm_stream_ps(at_y, o[l]);                                              \
                else _mm_storeu_ps(at_y, o[l]);                                                     \
            }                                                                                       \
        }                                                                                           \
        if (YALONG && BF16##OUT) {                                                                  \
            if (!_mm256_testz_si256(redo, redo)) /* a step may need the double grid: each again */ \
                for (int j = 0; j < 8; j++) u16[j] = bf16_round8(dd[j][0], dd[j][1]);              \
            bf16_rows_out((uint16_t *)(void *)(y + at), yl, u16, STREAM);                           \
        } else if (YALONG && F16##OUT) {                                                            \
            f16_rows_out((uint16_t *)(void *)(y + at), yl, h16, STREAM);                            \
        }                                                                                           \
    }                                                                                               \
                                                                                                    \
    /* Rows: steps [k0, k1) in blocks of 8, one after the other (so that each line's 64 bytes are   \
     * read and written within two blocks; the half types' four blocks, when streamed, through a    \
     * buffer, so that each line's 64 bytes go out at once) */                                      \
    AVX2_INLINE void rows_avx2##IN##OUT(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD, \
                                        const int EXCL, const int BACK, const int MASKED, const int STREAM) \
    {                                                                                               \
        /* in locals: the stores may alias the tile as far as the compiler knows */                 \
        const elem##IN *const x = a->x;                                                             \
        elem##OUT *const y = a->y;                                                                  \
        const unsigned char *const m = a->m;                                                        \
        const int64_t xl = a->xl, ml = a->ml, yl = a->yl, empty = a->empty;                         \
        __m256d lo = _mm256_loadu_pd(acc), hi = _mm256_loadu_pd(acc + 4);                           \
        __m256 r[8];                                                                                \
        int64_t k = k0;                                                                             \
        if (sizeof(elem##OUT) == 2 && STREAM) /* k1 - k0 a multiple of 32: see stream_lines */     \
            for (; k < k1; k += 32) {                                                               \
                uint16_t buf[8 * 32] __attribute__((aligned(64)));                                  \
                const int64_t sh = BACK ? -k : k; /* the blocks' steps counted from k */            \
                for (int b = 0; b < 32; b += 8)                                                     \
                    block_avx2##IN##OUT(x + sh, MASKED ? m + sh : m, (elem##OUT *)(void *)(buf + (BACK ? 31 : 0)), \
                                        xl, 0, ml, 0, 32, 0, b, &lo, &hi, k + b == 0 ? empty : 0, r, \
                                        k + b > k0, k + b + 8 < k1, PROD, EXCL, BACK, MASKED, 0, 1, 1); \
                stream_lines((uint16_t *)(void *)y + (BACK ? -(k + 31) : k), yl, buf);             \
            }                                                                                       \
        for (; k < k1; k += 8)                                                                      \
            block_avx2##IN##OUT(x, m, y, xl, 0, ml, 0, yl, 0, k, &lo, &hi, k == 0 ? empty : 0, r, k > k0, \
                                k + 8 < k1, PROD, EXCL, BACK, MASKED, STREAM, 1, 1);                \
        _mm256_storeu_pd(acc, lo);                                                                  \
        _mm256_storeu_pd(acc + 4, hi);                                                              \
    }
BLOCK_AVX2(_f32, _f32)
BLOCK_AVX2(_f16, _f16)
BLOCK_AVX2(_bf16, _bf16)
#define rows_avx2_f16 rows_avx2_f16_f16
#define rows_avx2_bf16 rows_avx2_bf16_bf16

/* Mixed tiles on AVX2 (float32; see mixed##IO##ISA): steps [k0, k1) (a multiple of 8 of them) of
 * every whole group of 8 lines, two groups side by side; where out's lines run along the scan, each
 * group takes its two blocks of steps one after the other, so that an output line's 64 bytes are
 * stored together */
AVX2_INLINE void mixed_avx2_f32(const cs_float_tile *a, double *acc, int64_t k0, int64_t k1, const int PROD,
                                const int EXCL, const int BACK, const int MASKED, const int STREAM, const int XROWS)
{
    const float *const x = a->x;
    float *const y = a->y;
    const unsigned char *const m = a->m;
    const int64_t xl = a->xl, xs = a->xs, ml = a->ml, ms = a->ms, yl = a->yl, ys = a->ys, empty = a->empty;
    __m256 r[8]; /* a block of x's rows (XROWS) */
    /* the 8 lines from line l: along the scan at l * stride apart, else next to each other */
#define MIXED_BLOCK(l, k, lo, hi)                                                                   \
    block_avx2_f32_f32(x + (XROWS ? (l) * xl : (l)), MASKED ? m + (XROWS ? (l) * ml : (l)) : NULL,  \
                       y + (XROWS ? (l) : (l) * yl), xl, xs, ml, ms, yl, ys, k, lo, hi,             \
                       (k) == 0 && empty > (l) ? empty - (l) : 0, r, 0, 0, PROD, EXCL, BACK, MASKED, STREAM, \
                       XROWS, !XROWS)
    int64_t l0 = 0;
    for (; l0 + 16 <= a->lines; l0 += 16) {
        __m256d s0 = _mm256_loadu_pd(acc + l0), s1 = _mm256_loadu_pd(acc + l0 + 4);
        __m256d s2 = _mm256_loadu_pd(acc + l0 + 8), s3 = _mm256_loadu_pd(acc + l0 + 12);
        int64_t k = k0;
        if (!XROWS)
            for (; k + 16 <= k1; k += 16) {
                MIXED_BLOCK(l0, k, &s0, &s1);
                MIXED_BLOCK(l0, k + 8, &s0, &s1);
                MIXED_BLOCK(l0 + 8, k, &s2, &s3);
                MIXED_BLOCK(l0 + 8, k + 8, &s2, &s3);
            }
        for (; k < k1; k += 8) {
            MIXED_BLOCK(l0, k, &s0, &s1);
            MIXED_BLOCK(l0 + 8, k, &s2, &s3);
        }
        _mm256_storeu_pd(acc + l0, s0), _mm256_storeu_pd(acc + l0 + 4, s1);
        _mm256_storeu_pd(acc + l0 + 8, s2), _mm256_storeu_pd(acc + l0 + 12, s3);
    }
    for (int64_t l = l0; l + 8 <= a->lines; l += 8) {
        __m256d s0 = _mm256_loadu_pd(acc + l), s1 = _mm256_loadu_pd(acc + l + 4);
        for (int64_t k = k0; k < k1; k += 8) MIXED_BLOCK(l, k, &s0, &s1);
        _mm256_storeu_pd(acc + l, s0), _mm256_storeu_pd(acc + l + 4, s1);
    }
#undef MIXED_BLOCK
}
#endif
