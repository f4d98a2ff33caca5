/* cpu/scan_general.c - the CPU's general scan walk: every op (sum, prod, max, min, logsumexp) with
 * any mask, reset and indices, OpenMP over independent lines; floats accumulate in double. scan.c's
 * fast walks take the plain sums and products and hand everything else here.
 * ROWS plans walk each line in turn; COLUMNS plans walk a block of neighbouring lines together, one
 * row at a time, so that the inner loop runs over unit strides and vectorises. Each walk is written
 * once and specialised by the compiler for the operands present (mask, reset, indices), so a plain
 * scan pays for none of them.
 * An op is the set of macros below named by its suffix (sum, prod, max, min, lse). Fold rules shared
 * with the CUDA kernels (cuscan.h says them for users):
 *   - a fold starts from the op's identity: -0.0 for float sums (-0.0 + x == x for every x, so a sum
 *     of -0.0 stays -0.0), 1, the lowest / highest value for max / min, -inf for logsumexp;
 *   - a masked-out element reads as +0.0 or 1 for sums and products (the scan of where(mask, x, 0));
 *     max, min and logsumexp skip it;
 *   - at an element whose reset is true the fold starts again from the identity, before taking it in;
 *   - an exclusive scan's first output of a segment is the empty prefix: +0.0 or 1, the identity of
 *     the others, with index 0. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include "dtypes.h"
#include "internal.h"
#include "scalar.h"
#include "simd.h"

enum { COLUMN_BLOCK = 512 };
/* Segmented lines at least this long, fewer than the threads, are cut into a span a thread (see
 * OPN_NAME_split_line); at most this many spans. */
enum { SPLIT_MIN_LEN = 1 << 16, SPLIT_MAX_SPANS = 256 };
/* span j of n of a line of len steps starts on a chunk's step (LSE_CHUNK, below) */
#define SPAN_START(len, j, n) ((j) == (n) ? (len) : (len) * (j) / (n) / LSE_CHUNK * LSE_CHUNK)

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static inline void line_offsets(const cs_iter *it, int64_t idx, int64_t off[CS_MAX_OPERANDS])
{
    if (it->ndim == 1) { /* the common case: no divisions */
        for (int o = 0; o < CS_MAX_OPERANDS; o++) off[o] = idx * it->strides[o][0];
        return;
    }
    for (int o = 0; o < CS_MAX_OPERANDS; o++) off[o] = 0;
    for (int d = it->ndim - 1; d >= 0; d--) {
        int64_t i = idx % it->shape[d];
        idx /= it->shape[d];
        for (int o = 0; o < CS_MAX_OPERANDS; o++) off[o] += i * it->strides[o][d];
    }
}

/* Integers accumulate unsigned in sums and products, so that they wrap without undefined behaviour;
 * bool reads as 0/1; float16 and bfloat16 elements are their bits here (half.h), converted on the
 * way in and out. */
#define CPU_ACC_double double
#define CPU_ACC_int32_t uint32_t
#define CPU_ACC_int64_t uint64_t
#define CPU_ACC(T) CPU_ACC_##T
/* a line's initial value (p->initial) at offset off, as the accumulator A (never max's or min's) */
#define INITIAL_OF(A, p, off)                                                                                   \
    _Generic((A)0, double: cs_initial_double((p)->initial, off, (p)->initial_dtype),                            \
             default: (A)cs_initial_int64((p)->initial, off, (p)->initial_dtype))
#define TO_ACC(IN, ACC, v)                                                                                      \
    ((IN) == CS_BOOL ? (ACC)((v) != 0) : (IN) == CS_FLOAT16 ? (ACC)cs_float16_to_double(v)                      \
     : (IN) == CS_BFLOAT16 ? (ACC)cs_bfloat16_to_double(v) : (ACC)(v))
/* the one rounding of an output */
#define TO_OUT(OUT, OUT_T, v)                                                                                   \
    ((OUT) == CS_FLOAT16 ? (OUT_T)cs_float16_from_double(v)                                                     \
     : (OUT) == CS_BFLOAT16 ? (OUT_T)cs_bfloat16_from_double(v) : (OUT_T)(v))
/* The 2-byte floats convert a run at a time (half_lanes.c: loops that vectorise), as doubles: v[j] of
 * x[j * s] and y[j * s] of v[j], for j < n; other types element by element as above. A pair with a
 * 2-byte float side walks its steps on such runs (HALF_IO). */
#define IS_HALF(T) ((T) == CS_FLOAT16 || (T) == CS_BFLOAT16)
#define HALF_IO(IN, OUT) (IS_HALF(IN) || IS_HALF(OUT))
#define LOAD_RUN(IN, v, x, s, n)                                                                                \
    do {                                                                                                        \
        if (IS_HALF(IN)) cs_cpu_halves_to_double(IN, (const uint16_t *)(x), s, v, n);                           \
        else for (int64_t j_ = 0; j_ < (n); j_++) (v)[j_] = TO_ACC(IN, double, (x)[j_ * (s)]);                  \
    } while (0)
#define STORE_RUN(OUT, OUT_T, y, s, v, n)                                                                       \
    do {                                                                                                        \
        if (IS_HALF(OUT)) cs_cpu_halves_from_double(OUT, v, (uint16_t *)(y), s, n);                             \
        else for (int64_t j_ = 0; j_ < (n); j_++) (y)[j_ * (s)] = (OUT_T)(v)[j_];                               \
    } while (0)
enum { HALF_CHUNK = 256 };

/* c ? a : b of an accumulator (double, uint32_t, or another integer by half.h's 64-bit form) by its
 * bits: a choice the compiler keeps as a blend (as a conditional, GCC turns "add x or 0" into a jump
 * over the add, which a random mask mispredicts). Not for max / min of doubles, whose scalar walks
 * it slows (their FP registers to integer ones and back on the running value's chain). */
static inline double select_bits_double(int c, double a, double b)
{
    return cs_double_of_bits(cs_select_bits(c, cs_bits_of_double(a), cs_bits_of_double(b)));
}
static inline uint32_t select_bits_u32(int c, uint32_t a, uint32_t b)
{
    const uint32_t m = 0u - (uint32_t)(c != 0);
    return (a & m) | (b & ~m);
}
#define IS_FLOAT_ACC(a) _Generic((a), double: 1, default: 0)
#define SELECT_BITS(c, a, b)                                                                                    \
    _Generic((a), double: select_bits_double, uint32_t: select_bits_u32, default: cs_select_bits)(c, a, b)

static inline int nan_double(double v) { return v != v; }
static inline int nan_never(int64_t v) { (void)v; return 0; }
#define IS_NAN(v) _Generic((v), double: nan_double, default: nan_never)(v)

/* The lowest and highest value of an accumulator of max / min (bool: false and true). */
#define LOWEST(A, IN) _Generic((A)0, double: -INFINITY, int32_t: (IN) == CS_BOOL ? 0 : INT32_MIN,               \
                               int64_t: (IN) == CS_BOOL ? 0 : INT64_MIN, default: 0)
#define HIGHEST(A, IN) _Generic((A)0, double: INFINITY, int32_t: (IN) == CS_BOOL ? 1 : INT32_MAX,               \
                                int64_t: (IN) == CS_BOOL ? 1 : INT64_MAX, default: 1)

/* log(exp(a) + exp(b)) without overflow: the larger plus log1p of the smaller's share; -inf is the
 * identity, NaN propagates, +inf wins over every number. */
static inline double log_add_exp(double a, double b)
{
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    if (a != a || b != b) return a + b;
    if (a == INFINITY || b == INFINITY) return INFINITY;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* The ops. ACC_op(T): the accumulator, from the pair's ACC_T; IDENT_op / EMPTY_op: the identity and
 * the exclusive scan's empty prefix; TAKE_op: takes v in at 1-based position pos; MASKED_op: what a
 * masked-out element reads as, for the ops that do not skip it (SKIPS_MASKED_op); INDEXED_op: the op
 * gives indices. Ties in max / min go to the element met later (>=), a NaN takes over from anything. */
#define ACC_sum(T) CPU_ACC(T)
#define ACC_prod(T) CPU_ACC(T)
#define ACC_max(T) T
#define ACC_min(T) T
#define ACC_lse(T) double
#define IDENT_sum(A, IN) ((A)(-0.0))
#define IDENT_prod(A, IN) ((A)1)
#define IDENT_max(A, IN) ((A)LOWEST(A, IN))
#define IDENT_min(A, IN) ((A)HIGHEST(A, IN))
#define IDENT_lse(A, IN) ((A)(-INFINITY))
#define EMPTY_sum(A, IN) ((A)0)
#define EMPTY_prod(A, IN) ((A)1)
#define EMPTY_max IDENT_max
#define EMPTY_min IDENT_min
#define EMPTY_lse IDENT_lse
#define TAKE_sum(acc, at, v, pos) ((acc) = (acc) + (v))
#define TAKE_prod(acc, at, v, pos) ((acc) = (acc) * (v))
/* max / min: v beyond the running value, a tie aside (the span's masked steps) */
#define BEYOND_max(v, acc) ((v) > (acc))
#define BEYOND_min(v, acc) ((v) < (acc))
#define BEYOND_sum(v, acc) 0
#define BEYOND_prod(v, acc) 0
#define BEYOND_lse(v, acc) 0
#define TAKE_max(acc, at, v, pos)                                                                               \
    do { if (IS_NAN(v) || (v) >= (acc)) { (acc) = (v); (at) = (pos); } } while (0)
#define TAKE_min(acc, at, v, pos)                                                                               \
    do { if (IS_NAN(v) || (v) <= (acc)) { (acc) = (v); (at) = (pos); } } while (0)
#define TAKE_lse(acc, at, v, pos) ((acc) = log_add_exp((acc), (v)))
#define MASKED_sum(A) ((A)0)
#define MASKED_prod(A) ((A)1)
#define MASKED_max(A) ((A)0)
#define MASKED_min(A) ((A)0)
#define MASKED_lse(A) ((A)0)
#define SKIPS_MASKED_sum 0
#define SKIPS_MASKED_prod 0
#define SKIPS_MASKED_max 1
#define SKIPS_MASKED_min 1
#define SKIPS_MASKED_lse 1
#define INDEXED_sum 0
#define INDEXED_prod 0
#define INDEXED_max 1
#define INDEXED_min 1
#define INDEXED_lse 0
#define CHUNKED_sum 0
#define CHUNKED_prod 0
#define CHUNKED_max 0
#define CHUNKED_min 0
#define CHUNKED_lse 1

/* logcumsumexp along a line without resets, in chunks of LSE_CHUNK elements: as the GPU's plain
 * path (kernels/scan_ops.cuh), a chunk is a plain float64 sum of exp(x - R) from R, the larger of
 * its largest kept element and the running value, and its outputs R + log of the sum so far, with
 * the exps and logs of a chunk computed as vectors (vmath.c) instead of a log1p and an exp an
 * element. A chunk with a kept element that is not finite, or one more than LSE_SPAN below R (its
 * exp would lose bits to underflow), takes the step-by-step walk. A sum of exactly 1 gives R itself
 * (so that -0.0 stays -0.0, as one element's log-sum is the element). */
enum { LSE_CHUNK = 64, LSE_ROWS = 16 };
#define LSE_SPAN 600.0

/* F(..., masked, segmented, indexed) called with the three flags as constants, so that each
 * combination is compiled on its own. */
#define SPECIALISE(F, M, R, I, ...)                                                                             \
    ((M) ? ((R) ? ((I) ? F(__VA_ARGS__, 1, 1, 1) : F(__VA_ARGS__, 1, 1, 0))                                     \
                : ((I) ? F(__VA_ARGS__, 1, 0, 1) : F(__VA_ARGS__, 1, 0, 0)))                                    \
         : ((R) ? ((I) ? F(__VA_ARGS__, 0, 1, 1) : F(__VA_ARGS__, 0, 1, 0))                                     \
                : ((I) ? F(__VA_ARGS__, 0, 0, 1) : F(__VA_ARGS__, 0, 0, 0))))

/* One element of the walk, shared by rows and columns: restart on reset (from ident, the op's
 * identity), take the element in (or not, under a false mask), write the output and its index (the
 * caller's excl and indexed say how). */
#define SCAN_STEP(OPN, A, IN, OUT, OUT_T, ident, acc, at, xv, keep, restart, first, pos, yp, ip)                \
    do {                                                                                                        \
        int first_ = (first);                                                                                   \
        A a_ = (acc);                                                                                           \
        int64_t at_ = (at);                                                                                     \
        if (restart) { a_ = (ident); at_ = 0; first_ = 1; }                                                     \
        const A before_ = a_;                                                                                   \
        const int64_t before_at_ = at_;                                                                         \
        if (INDEXED_##OPN) {                                                                                    \
            /* max / min: the take of every element, kept by a select where the mask says (branches       \
             * under the mask keep the loop over lines from vectorising; integers' by their bits) */      \
            A t_ = a_;                                                                                          \
            int64_t tat_ = at_;                                                                                 \
            const A v_ = TO_ACC(IN, A, xv);                                                                     \
            TAKE_##OPN(t_, tat_, v_, pos);                                                                      \
            if (IS_FLOAT_ACC(a_)) {                                                                             \
                a_ = (keep) ? t_ : a_;                                                                          \
                at_ = (keep) ? tat_ : at_;                                                                      \
            } else {                                                                                            \
                a_ = (A)SELECT_BITS((keep), (uint64_t)t_, (uint64_t)a_);                                        \
                at_ = (int64_t)SELECT_BITS((keep), (uint64_t)tat_, (uint64_t)at_);                              \
            }                                                                                                   \
        } else if (!SKIPS_MASKED_##OPN) {                                                                       \
            /* sums and products: a masked-out element is the op's neutral value, taken by a select of   \
             * an element read whatever the mask says (a read under the mask would be a branch) */         \
            const A v_ = SELECT_BITS((keep), TO_ACC(IN, A, xv), MASKED_##OPN(A));                               \
            TAKE_##OPN(a_, at_, v_, pos);                                                                       \
        } else if (keep) { A v_ = TO_ACC(IN, A, xv); TAKE_##OPN(a_, at_, v_, pos); }                            \
        *(yp) = TO_OUT(OUT, OUT_T, excl ? (first_ ? EMPTY_##OPN(A, IN) : before_) : a_);                        \
        if (indexed) *(ip) = excl ? before_at_ : at_;                                                           \
        (acc) = a_;                                                                                             \
        (at) = at_;                                                                                             \
    } while (0)


/* Row k of a block of columns from column c0 (the column walks): its step i along the lines and
 * where each operand's row starts (the caller's len, rev, strides and flags) */
#define BLOCK_ROW(IN_T, k)                                                                                      \
    const int64_t i = rev ? len - 1 - (k) : (k);                                                                \
    const IN_T *xr = (const IN_T *)p->x + off[CS_OPND_X] + i * sx + c0 * ix;                                    \
    const unsigned char *mr = masked ? p->mask + off[CS_OPND_MASK] + i * sm + c0 * im : 0;                      \
    const unsigned char *rr = segmented ? p->reset + off[CS_OPND_RESET] + i * sr + c0 * ir : 0;                 \
    (void)xr, (void)mr, (void)rr

/* The walks of one op for one dtype pair (OPS: the ops the pair supports; the others compile to
 * nothing). */
#define DEFINE_CPU_SCAN(OPN, OP, NAME, IN_T, ACC_T, OUT_T, IN, OUT, OPS)                                        \
    typedef ACC_##OPN(ACC_T) OPN##_##NAME##_acc;                                                                \
    /* Steps [k0, k1) of a line from the state (*acc, *at), left there at the end. logcumsumexp goes in   \
     * chunks of LSE_CHUNK steps counted from the line's start (so a span's bits do not depend on where \
     * it starts); a chunk with a reset goes step by step, as do those from step steps_from on. */         \
    ALWAYS_INLINE void OPN##_##NAME##_span(const cs_scan_plan *p, const int64_t *off, int64_t k0, int64_t k1,  \
                                          OPN##_##NAME##_acc *acc_io, int64_t *at_io, int64_t steps_from,       \
                                          const int masked, const int segmented, const int indexed)             \
    {                                                                                                           \
        typedef OPN##_##NAME##_acc A;                                                                           \
        const IN_T *x = (const IN_T *)p->x + off[CS_OPND_X];                                                    \
        const unsigned char *m = masked ? p->mask + off[CS_OPND_MASK] : 0;                                      \
        OUT_T *y = (OUT_T *)p->out + off[CS_OPND_OUT];                                                          \
        const unsigned char *r = segmented ? p->reset + off[CS_OPND_RESET] : 0;                                 \
        int64_t *ix = indexed ? p->indices + off[CS_OPND_INDICES] : 0;                                          \
        const int64_t len = p->len, sx = p->scan_stride[CS_OPND_X], sm = p->scan_stride[CS_OPND_MASK];          \
        const int64_t so = p->scan_stride[CS_OPND_OUT], sr = p->scan_stride[CS_OPND_RESET];                     \
        const int64_t si = p->scan_stride[CS_OPND_INDICES];                                                     \
        const int excl = p->exclusive, rev = p->reverse;                                                        \
        const int init = p->initial != 0; /* then an exclusive scan's first output is the initial value */      \
        A acc = *acc_io;                                                                                        \
        int64_t at = *at_io;                                                                                    \
        if (CHUNKED_##OPN) {                                                                                    \
            for (int64_t c0 = k0, c1; c0 < k1; c0 = c1) {                                                       \
                c1 = (c0 / LSE_CHUNK + 1) * LSE_CHUNK;                                                          \
                if (c1 > k1) c1 = k1;                                                                           \
                const int n = c1 - c0 < LSE_CHUNK ? (int)(c1 - c0) : LSE_CHUNK; /* (at most: the compiler knows) */ \
                double xs[LSE_CHUNK], t[LSE_CHUNK], pre[LSE_CHUNK], lg[LSE_CHUNK];                              \
                unsigned char kp[LSE_CHUNK];                                                                    \
                double hi = -INFINITY, lo = INFINITY;                                                           \
                int odd = !(acc == -INFINITY || isfinite((double)acc)) || c0 >= steps_from;                     \
                const int64_t i0 = rev ? len - 1 - c0 : c0;                                                     \
                if (IS_HALF(IN)) LOAD_RUN(IN, xs, x + i0 * sx, rev ? -sx : sx, n);                              \
                for (int j = 0; j < n; j++) {                                                                   \
                    const int64_t i = rev ? len - 1 - (c0 + j) : c0 + j;                                        \
                    if (!IS_HALF(IN)) xs[j] = TO_ACC(IN, double, x[i * sx]);                                    \
                    kp[j] = !masked || m[i * sm];                                                               \
                    odd |= segmented && r[i * sr];                                                              \
                    if (kp[j]) {                                                                                \
                        odd |= !isfinite(xs[j]);                                                                \
                        hi = xs[j] > hi ? xs[j] : hi;                                                           \
                        lo = xs[j] < lo ? xs[j] : lo;                                                           \
                    }                                                                                           \
                }                                                                                               \
                const double R = hi > (double)acc ? hi : (double)acc;                                           \
                if (odd || R == -INFINITY || lo < R - LSE_SPAN || ((double)acc != -INFINITY && acc < R - LSE_SPAN)) { \
                    for (int j = 0; j < n; j++) {                                                               \
                        const int64_t k = c0 + j, i = rev ? len - 1 - k : k;                                    \
                        SCAN_STEP(OPN, A, IN, OUT, OUT_T, IDENT_##OPN(A, IN), acc, at, x[i * sx], kp[j],        \
                                  segmented && r[i * sr], k == 0 && !init, i + 1, &y[i * so], &ix[i * si]);     \
                    }                                                                                           \
                    continue;                                                                                   \
                }                                                                                               \
                double P = (double)acc == -INFINITY ? 0.0 : exp((double)acc - R);                               \
                for (int j = 0; j < n; j++) pre[j] = R; /* (R for the exps, then the prefixes) */               \
                cs_cpu_exp_diff_f64(xs, pre, kp, t, n);                                                         \
                for (int j = 0; j < n; j++) {                                                                   \
                    const double before = P;                                                                    \
                    P += t[j];                                                                                  \
                    pre[j] = excl ? before : P;                                                                 \
                }                                                                                               \
                cs_cpu_log_f64(pre, lg, n);                                                                     \
                if (IS_HALF(OUT)) {                                                                             \
                    for (int j = 0; j < n; j++) lg[j] = pre[j] == 1.0 ? R : R + lg[j];                          \
                    STORE_RUN(OUT, OUT_T, y + i0 * so, rev ? -so : so, lg, n);                                  \
                } else                                                                                          \
                    for (int j = 0; j < n; j++) {                                                               \
                        const int64_t i = rev ? len - 1 - (c0 + j) : c0 + j;                                    \
                        y[i * so] = TO_OUT(OUT, OUT_T, pre[j] == 1.0 ? R : R + lg[j]);                          \
                    }                                                                                           \
                acc = (A)(P == 1.0 ? R : R + log(P));                                                           \
            }                                                                                                   \
        } else if (INDEXED_##OPN && masked) {                                                                   \
            /* max / min under a mask: a chunk's masked-out elements become the identity first (selects    \
             * off the running value's chain), so that a step branches on a take, rare once the running  \
             * value has grown, and not on the mask; the identity ties the running value only where that \
             * is the identity too, and there the mask byte decides (the 2-byte floats as runs, HALF_IO) */ \
            for (int64_t c0 = k0, c1; c0 < k1; c0 = c1) {                                                       \
                c1 = k1 - c0 < HALF_CHUNK ? k1 : c0 + HALF_CHUNK;                                               \
                const int n = (int)(c1 - c0);                                                                   \
                const int64_t i0 = rev ? len - 1 - c0 : c0;                                                     \
                A vs[HALF_CHUNK];                                                                               \
                double xs[HALF_IO(IN, OUT) ? HALF_CHUNK : 1], ys[HALF_IO(IN, OUT) ? HALF_CHUNK : 1];            \
                if (HALF_IO(IN, OUT)) LOAD_RUN(IN, xs, x + i0 * sx, rev ? -sx : sx, n);                         \
                for (int j = 0; j < n; j++) {                                                                   \
                    const int64_t i = rev ? len - 1 - (c0 + j) : c0 + j;                                        \
                    const A v = HALF_IO(IN, OUT) ? (A)xs[j] : TO_ACC(IN, A, x[i * sx]);                         \
                    if (IS_FLOAT_ACC(acc)) vs[j] = (A)select_bits_double(m[i * sm], (double)v, (double)IDENT_##OPN(A, IN)); \
                    else vs[j] = (A)cs_select_bits(m[i * sm], (uint64_t)v, (uint64_t)IDENT_##OPN(A, IN));      \
                }                                                                                               \
                for (int j = 0; j < n; j++) {                                                                   \
                    const int64_t k = c0 + j, i = rev ? len - 1 - k : k;                                        \
                    int first = k == 0 && !init;                                                                \
                    if (segmented && r[i * sr]) { acc = IDENT_##OPN(A, IN); at = 0; first = 1; }                \
                    const A before = acc;                                                                       \
                    const int64_t before_at = at;                                                               \
                    const A v = vs[j];                                                                          \
                    if (IS_NAN(v) || BEYOND_##OPN(v, acc) || (v == acc && m[i * sm])) { acc = v; at = i + 1; }  \
                    const A out = excl ? (first ? EMPTY_##OPN(A, IN) : before) : acc;                          \
                    if (HALF_IO(IN, OUT)) ys[j] = (double)out;                                                  \
                    else y[i * so] = TO_OUT(OUT, OUT_T, out);                                                   \
                    if (indexed) ix[i * si] = excl ? before_at : at;                                            \
                }                                                                                               \
                if (HALF_IO(IN, OUT)) STORE_RUN(OUT, OUT_T, y + i0 * so, rev ? -so : so, ys, n);                \
            }                                                                                                   \
        } else if (HALF_IO(IN, OUT)) {                                                                          \
            /* a chunk's conversions as loops of their own, which vectorise, around its steps in doubles */    \
            for (int64_t c0 = k0, c1; c0 < k1; c0 = c1) {                                                       \
                c1 = k1 - c0 < HALF_CHUNK ? k1 : c0 + HALF_CHUNK;                                               \
                const int n = (int)(c1 - c0);                                                                   \
                const int64_t i0 = rev ? len - 1 - c0 : c0;                                                     \
                double xs[HALF_CHUNK], ys[HALF_CHUNK];                                                          \
                LOAD_RUN(IN, xs, x + i0 * sx, rev ? -sx : sx, n);                                               \
                for (int j = 0; j < n; j++) {                                                                   \
                    const int64_t k = c0 + j, i = rev ? len - 1 - k : k;                                        \
                    SCAN_STEP(OPN, A, CS_FLOAT64, CS_FLOAT64, double, IDENT_##OPN(A, IN), acc, at, xs[j],      \
                              !masked || m[i * sm], segmented && r[i * sr], k == 0 && !init, i + 1, &ys[j],     \
                              &ix[i * si]);                                                                     \
                }                                                                                               \
                STORE_RUN(OUT, OUT_T, y + i0 * so, rev ? -so : so, ys, n);                                      \
            }                                                                                                   \
        } else {                                                                                                \
            for (int64_t k = k0; k < k1; k++) {                                                                 \
                const int64_t i = rev ? len - 1 - k : k;                                                        \
                SCAN_STEP(OPN, A, IN, OUT, OUT_T, IDENT_##OPN(A, IN), acc, at, x[i * sx], !masked || m[i * sm], \
                          segmented && r[i * sr], k == 0 && !init, i + 1, &y[i * so], &ix[i * si]);             \
            }                                                                                                   \
        }                                                                                                       \
        *acc_io = acc;                                                                                          \
        *at_io = at;                                                                                            \
    }                                                                                                           \
    ALWAYS_INLINE void OPN##_##NAME##_line(const cs_scan_plan *p, const int64_t *off, const int masked,         \
                                          const int segmented, const int indexed)                               \
    {                                                                                                           \
        OPN##_##NAME##_acc acc = p->initial ? INITIAL_OF(OPN##_##NAME##_acc, p, off[CS_OPND_INITIAL])           \
                                            : IDENT_##OPN(OPN##_##NAME##_acc, IN);                              \
        int64_t at = 0;                                                                                         \
        OPN##_##NAME##_span(p, off, 0, p->len, &acc, &at, INT64_MAX, masked, segmented, indexed);               \
    }                                                                                                           \
    /* A long segmented line on several threads, with the bits of the walk of one: span j > 0 (each      \
     * starting on a chunk's step) is walked from its first reset on, from the identity (what comes    \
     * before a reset no longer counts), then, span after span, its steps before that reset from the   \
     * true state before it. A span without a reset is walked in that second pass alone. (Each step is \
     * read before it is written, once: out may be x.) */                                                \
    static void OPN##_##NAME##_split_line(const cs_scan_plan *p, const int64_t *off, int nspans, const int masked, \
                                          const int indexed)                                                    \
    {                                                                                                           \
        typedef OPN##_##NAME##_acc A;                                                                           \
        A end[SPLIT_MAX_SPANS];                                                                                 \
        int64_t end_at[SPLIT_MAX_SPANS], first_reset[SPLIT_MAX_SPANS];                                          \
        const int64_t len = p->len, sr = p->scan_stride[CS_OPND_RESET];                                         \
        const unsigned char *r = p->reset + off[CS_OPND_RESET];                                                 \
        _Pragma("omp parallel for schedule(static, 1)")                                                         \
        for (int j = 0; j < nspans; j++) {                                                                      \
            const int64_t k0 = SPAN_START(len, j, nspans), k1 = SPAN_START(len, j + 1, nspans);                 \
            int64_t k = k0;                                                                                     \
            if (j > 0)                                                                                          \
                while (k < k1 && !r[(p->reverse ? len - 1 - k : k) * sr]) k++;                                  \
            first_reset[j] = k;                                                                                 \
            end[j] = j == 0 && p->initial ? INITIAL_OF(A, p, off[CS_OPND_INITIAL]) : IDENT_##OPN(A, IN);        \
            end_at[j] = 0;                                                                                      \
            if (k < k1) SPECIALISE(OPN##_##NAME##_span, masked, 1, indexed, p, off, k, k1, &end[j], &end_at[j], INT64_MAX); \
        }                                                                                                       \
        A acc = end[0];                                                                                         \
        int64_t at = end_at[0];                                                                                 \
        for (int j = 1; j < nspans; j++) {                                                                      \
            const int64_t k0 = SPAN_START(len, j, nspans), k1 = SPAN_START(len, j + 1, nspans);                 \
            /* (the chunk of the first reset goes step by step, as in the walk of one) */                     \
            const int64_t steps_from = CHUNKED_##OPN && first_reset[j] < k1 ? first_reset[j] / LSE_CHUNK * LSE_CHUNK \
                                                                            : INT64_MAX;                        \
            SPECIALISE(OPN##_##NAME##_span, masked, 1, indexed, p, off, k0, first_reset[j], &acc, &at, steps_from); \
            if (first_reset[j] < k1) {                                                                          \
                acc = end[j];                                                                                   \
                at = end_at[j];                                                                                 \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    static void OPN##_##NAME##_rows(const cs_scan_plan *p)                                                      \
    {                                                                                                           \
        if (!CS_OPS_HAS(OPS, OP)) return;                                                                       \
        const int masked = p->mask != 0, segmented = p->reset != 0;                                             \
        const int indexed = INDEXED_##OPN && p->indices != 0;                                                  \
        const int threads = omp_get_max_threads();                                                              \
        if (segmented && p->nouter < threads && p->len >= SPLIT_MIN_LEN) {                                      \
            /* a span a thread, each line in turn (lines of at least two spans a thread's work each) */      \
            int nspans = threads < SPLIT_MAX_SPANS ? threads : SPLIT_MAX_SPANS;                                 \
            if (nspans > p->len / (SPLIT_MIN_LEN / 2)) nspans = (int)(p->len / (SPLIT_MIN_LEN / 2));            \
            for (int64_t line = 0; line < p->nouter; line++) {                                                  \
                int64_t off[CS_MAX_OPERANDS];                                                                   \
                line_offsets(&p->outer, line, off);                                                             \
                OPN##_##NAME##_split_line(p, off, nspans, masked, indexed);                                     \
            }                                                                                                   \
            return;                                                                                             \
        }                                                                                                       \
        _Pragma("omp parallel for schedule(static) if(p->nouter > 1 && p->nouter * p->len > 32768)")            \
        for (int64_t line = 0; line < p->nouter; line++) {                                                      \
            int64_t off[CS_MAX_OPERANDS];                                                                       \
            line_offsets(&p->outer, line, off);                                                                 \
            SPECIALISE(OPN##_##NAME##_line, masked, segmented, indexed, p, off);                                \
        }                                                                                                       \
    }                                                                                                           \
    /* logcumsumexp: rows [k0, k0 + nr) of a block of columns as plain sums, each column from R, the       \
     * larger of its largest kept element there and its running value (acc, advanced), but the columns  \
     * marked in odd: those with a kept element that is not finite or one more than LSE_SPAN below its \
     * R, or a reset there, which go step by step (the caller); returns how many, having written none  \
     * of their outputs (out may be x) */                                                               \
    ALWAYS_INLINE int64_t OPN##_##NAME##_block_chunk(const cs_scan_plan *p, const int64_t *off, int64_t c0,    \
                                                   int64_t nc, int64_t ix, int64_t im, int64_t io, int64_t ir,  \
                                                   int64_t k0, int64_t nr, const int masked, const int segmented, \
                                                   OPN##_##NAME##_acc *acc, unsigned char *odd)                 \
    {                                                                                                           \
        const int64_t len = p->len, sx = p->scan_stride[CS_OPND_X], sm = p->scan_stride[CS_OPND_MASK];          \
        const int64_t so = p->scan_stride[CS_OPND_OUT], sr = p->scan_stride[CS_OPND_RESET];                     \
        const int excl = p->exclusive, rev = p->reverse;                                                        \
        double R[COLUMN_BLOCK], P[COLUMN_BLOCK], xs[COLUMN_BLOCK], t[COLUMN_BLOCK], lg[COLUMN_BLOCK];           \
        double lo[COLUMN_BLOCK];                                                                                \
        unsigned char kp[COLUMN_BLOCK];                                                                         \
        int any = 0; /* (which columns, only when some) */                                                      \
        for (int64_t c = 0; c < nc; c++) {                                                                      \
            R[c] = -INFINITY;                                                                                   \
            lo[c] = INFINITY;                                                                                   \
            odd[c] = !((double)acc[c] == -INFINITY || isfinite((double)acc[c]));                                \
        }                                                                                                       \
        for (int64_t k = k0; k < k0 + nr; k++) {                                                                \
            BLOCK_ROW(IN_T, k);                                                                                 \
            if (IS_HALF(IN)) LOAD_RUN(IN, xs, xr, ix, nc);                                                      \
            for (int64_t c = 0; c < nc; c++) {                                                                  \
                const double v = IS_HALF(IN) ? xs[c] : TO_ACC(IN, double, xr[c * ix]);                          \
                if (segmented) any |= rr[c * ir] != 0;                                                          \
                if (!masked || mr[c * im]) {                                                                    \
                    any |= !isfinite(v);                                                                        \
                    R[c] = v > R[c] ? v : R[c];                                                                 \
                    lo[c] = v < lo[c] ? v : lo[c];                                                              \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
        if (any)                                                                                                \
            for (int64_t k = k0; k < k0 + nr; k++) {                                                            \
                BLOCK_ROW(IN_T, k);                                                                             \
                if (IS_HALF(IN)) LOAD_RUN(IN, xs, xr, ix, nc);                                                  \
                for (int64_t c = 0; c < nc; c++)                                                                \
                    odd[c] |= (segmented && rr[c * ir]) ||                                                      \
                              ((!masked || mr[c * im]) &&                                                       \
                               !isfinite(IS_HALF(IN) ? xs[c] : TO_ACC(IN, double, xr[c * ix])));                \
            }                                                                                                   \
        int64_t nodd = 0;                                                                                       \
        for (int64_t c = 0; c < nc; c++) {                                                                      \
            const double a = (double)acc[c];                                                                    \
            R[c] = a > R[c] ? a : R[c];                                                                         \
            if (R[c] == -INFINITY) R[c] = 0.0; /* nothing kept yet: its sums stay 0, its outputs -inf */        \
            odd[c] |= lo[c] < R[c] - LSE_SPAN || (a != -INFINITY && a < R[c] - LSE_SPAN);                       \
            nodd += odd[c];                                                                                     \
            xs[c] = a;                                                                                          \
            kp[c] = a != -INFINITY;                                                                             \
        }                                                                                                       \
        if (nodd == nc) return nodd;                                                                            \
        cs_cpu_exp_diff_f64(xs, R, kp, P, nc); /* the running values in their columns' scales */                \
        for (int64_t k = k0; k < k0 + nr; k++) {                                                                \
            BLOCK_ROW(IN_T, k);                                                                                 \
            OUT_T *yr = (OUT_T *)p->out + off[CS_OPND_OUT] + i * so + c0 * io;                                  \
            if (IS_HALF(IN)) LOAD_RUN(IN, xs, xr, ix, nc);                                                      \
            for (int64_t c = 0; c < nc; c++) {                                                                  \
                if (!IS_HALF(IN)) xs[c] = TO_ACC(IN, double, xr[c * ix]);                                       \
                kp[c] = !masked || mr[c * im];                                                                  \
            }                                                                                                   \
            cs_cpu_exp_diff_f64(xs, R, kp, t, nc);                                                              \
            for (int64_t c = 0; c < nc; c++) {                                                                  \
                const double before = P[c];                                                                     \
                P[c] += t[c];                                                                                   \
                xs[c] = excl ? before : P[c];                                                                   \
            }                                                                                                   \
            cs_cpu_log_f64(xs, lg, nc);                                                                         \
            if (nodd == 0 && IS_HALF(OUT)) {                                                                    \
                for (int64_t c = 0; c < nc; c++) lg[c] = xs[c] == 1.0 ? R[c] : R[c] + lg[c];                    \
                STORE_RUN(OUT, OUT_T, yr, io, lg, nc);                                                          \
            } else if (nodd == 0) /* (a loop without a test: it vectorises) */                                  \
                for (int64_t c = 0; c < nc; c++) yr[c * io] = TO_OUT(OUT, OUT_T, xs[c] == 1.0 ? R[c] : R[c] + lg[c]); \
            else                                                                                                \
                for (int64_t c = 0; c < nc; c++)                                                                \
                    if (!odd[c]) yr[c * io] = TO_OUT(OUT, OUT_T, xs[c] == 1.0 ? R[c] : R[c] + lg[c]);           \
        }                                                                                                       \
        cs_cpu_log_f64(P, lg, nc);                                                                              \
        for (int64_t c = 0; c < nc; c++)                                                                        \
            if (!odd[c]) acc[c] = (OPN##_##NAME##_acc)(P[c] == 1.0 ? R[c] : R[c] + lg[c]);                      \
        return nodd;                                                                                            \
    }                                                                                                           \
    /* a block of nc neighbouring lines from line c0, walked a row at a time; unit: every operand               \
     * steps by 1 along the block */                                                                            \
    ALWAYS_INLINE void OPN##_##NAME##_block(const cs_scan_plan *p, const int64_t *off, int64_t c0,              \
                                           int64_t nc, const int unit, const int masked,                        \
                                           const int segmented, const int indexed)                              \
    {                                                                                                           \
        typedef OPN##_##NAME##_acc A;                                                                           \
        const int64_t len = p->len, sx = p->scan_stride[CS_OPND_X], sm = p->scan_stride[CS_OPND_MASK];          \
        const int64_t so = p->scan_stride[CS_OPND_OUT], sr = p->scan_stride[CS_OPND_RESET];                     \
        const int64_t si = p->scan_stride[CS_OPND_INDICES];                                                     \
        const int64_t ix = unit ? 1 : p->inner_stride[CS_OPND_X];                                               \
        const int64_t im = unit ? 1 : p->inner_stride[CS_OPND_MASK];                                            \
        const int64_t io = unit ? 1 : p->inner_stride[CS_OPND_OUT];                                             \
        const int64_t ir = unit ? 1 : p->inner_stride[CS_OPND_RESET];                                           \
        const int64_t ii = unit ? 1 : p->inner_stride[CS_OPND_INDICES];                                         \
        const int excl = p->exclusive, rev = p->reverse;                                                        \
        A acc[COLUMN_BLOCK];                                                                                    \
        int64_t at[COLUMN_BLOCK];                                                                               \
        const int init = p->initial != 0;                                                                       \
        const int64_t iv = p->inner_stride[CS_OPND_INITIAL];                                                    \
        /* the identity read once through a volatile: a restart's identity + v, which the compiler       \
         * would fold to v, stays a sum, so the restart is a blend and the loop over lines vectorises */  \
        volatile A ident_v = IDENT_##OPN(A, IN);                                                                \
        const A ident = ident_v;                                                                                \
        for (int64_t c = 0; c < nc; c++) {                                                                      \
            acc[c] = init ? INITIAL_OF(A, p, off[CS_OPND_INITIAL] + (c0 + c) * iv) : IDENT_##OPN(A, IN);        \
            at[c] = 0;                                                                                          \
        }                                                                                                       \
        unsigned char odd[COLUMN_BLOCK]; /* logcumsumexp: the columns a chunk leaves to the steps */             \
        for (int64_t k0 = 0, ke = len; k0 < len; k0 = ke) {                                                     \
            /* logcumsumexp: LSE_ROWS rows at a time as plain sums, each column from its own R, where it   \
             * can (as the rows' chunks); rows [k0, ke) go step by step (logcumsumexp: its odd columns) */     \
            ke = len;                                                                                           \
            if (CHUNKED_##OPN) {                                                                                \
                ke = len - k0 < LSE_ROWS ? len : k0 + LSE_ROWS;                                                 \
                if (!OPN##_##NAME##_block_chunk(p, off, c0, nc, ix, im, io, ir, k0, ke - k0, masked, segmented, acc, \
                                                odd))                                                           \
                    continue;                                                                                   \
            }                                                                                                   \
            for (int64_t k = k0; k < ke; k++) {                                                                 \
                BLOCK_ROW(IN_T, k);                                                                             \
                OUT_T *yr = (OUT_T *)p->out + off[CS_OPND_OUT] + i * so + c0 * io;                              \
                int64_t *nr = indexed ? p->indices + off[CS_OPND_INDICES] + i * si + c0 * ii : 0;               \
                if (HALF_IO(IN, OUT)) {                                                                         \
                    /* the row's steps on doubles, converted as runs before and after */                        \
                    double xs[COLUMN_BLOCK], ys[COLUMN_BLOCK];                                                  \
                    LOAD_RUN(IN, xs, xr, ix, nc);                                                               \
                    for (int64_t c = 0; c < nc; c++)                                                            \
                        if (!CHUNKED_##OPN || odd[c])                                                           \
                            SCAN_STEP(OPN, A, CS_FLOAT64, CS_FLOAT64, double, ident, acc[c], at[c], xs[c],      \
                                      !masked || mr[c * im], segmented && rr[c * ir], k == 0 && !init, i + 1,   \
                                      &ys[c], &nr[c * ii]);                                                     \
                    if (!CHUNKED_##OPN) STORE_RUN(OUT, OUT_T, yr, io, ys, nc);                                  \
                    else                                                                                        \
                        for (int64_t c = 0; c < nc; c++)                                                        \
                            if (odd[c]) yr[c * io] = TO_OUT(OUT, OUT_T, ys[c]);                                 \
                    continue;                                                                                   \
                }                                                                                               \
                for (int64_t c = 0; c < nc; c++)                                                                \
                    if (!CHUNKED_##OPN || odd[c])                                                               \
                        SCAN_STEP(OPN, A, IN, OUT, OUT_T, ident, acc[c], at[c], xr[c * ix], !masked || mr[c * im], \
                                  segmented && rr[c * ir], k == 0 && !init, i + 1, &yr[c * io], &nr[c * ii]);   \
            }                                                                                                   \
        }                                                                                                       \
    }                                                                                                           \
    /* a block task of unit strides, compiled for each x86-64 level (simd.h): the block's loop over its     \
     * lines vectorises, four or eight lanes at a time where the CPU has them */                           \
    static VECTOR_KERNEL void OPN##_##NAME##_unit_block(const cs_scan_plan *p, const int64_t *off, int64_t c0, \
                                                          int64_t nc, const int masked, const int segmented,    \
                                                          const int indexed)                                    \
    {                                                                                                           \
        if (CS_OPS_HAS(OPS, OP)) SPECIALISE(OPN##_##NAME##_block, masked, segmented, indexed, p, off, c0, nc, 1); \
    }                                                                                                           \
    static void OPN##_##NAME##_columns(const cs_scan_plan *p)                                                   \
    {                                                                                                           \
        if (!CS_OPS_HAS(OPS, OP)) return;                                                                       \
        const int masked = p->mask != 0, segmented = p->reset != 0;                                             \
        const int indexed = INDEXED_##OPN && p->indices != 0;                                                   \
        const int64_t inner = p->inner, nblocks = (inner + COLUMN_BLOCK - 1) / COLUMN_BLOCK;                    \
        const int present[CS_MAX_OPERANDS] = { 1, masked, 1, segmented, indexed };                              \
        int unit = 1;                                                                                           \
        for (int o = 0; o < CS_MAX_OPERANDS; o++)                                                               \
            if (present[o] && p->inner_stride[o] != 1) unit = 0;                                                \
        _Pragma("omp parallel for schedule(static) if(p->nouter * nblocks > 1 && p->nouter * inner * p->len > 32768)") \
        for (int64_t task = 0; task < p->nouter * nblocks; task++) {                                            \
            int64_t off[CS_MAX_OPERANDS];                                                                       \
            line_offsets(&p->outer, task / nblocks, off);                                                       \
            const int64_t c0 = (task % nblocks) * COLUMN_BLOCK;                                                 \
            const int64_t nc = inner - c0 < COLUMN_BLOCK ? inner - c0 : COLUMN_BLOCK;                           \
            if (unit) OPN##_##NAME##_unit_block(p, off, c0, nc, masked, segmented, indexed);                    \
            else SPECIALISE(OPN##_##NAME##_block, masked, segmented, indexed, p, off, c0, nc, 0);               \
        }                                                                                                       \
    }

/* every op for every pair of the list (those a pair does not support compile to nothing) */
#define DEFINE_PAIR(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                                     \
    DEFINE_CPU_SCAN(sum, CS_SCAN_SUM, NAME, IN_T, ACC_T, OUT_T, IN, OUT, OPS)                                   \
    DEFINE_CPU_SCAN(prod, CS_SCAN_PROD, NAME, IN_T, ACC_T, OUT_T, IN, OUT, OPS)                                 \
    DEFINE_CPU_SCAN(max, CS_SCAN_MAX, NAME, IN_T, ACC_T, OUT_T, IN, OUT, OPS)                                   \
    DEFINE_CPU_SCAN(min, CS_SCAN_MIN, NAME, IN_T, ACC_T, OUT_T, IN, OUT, OPS)                                   \
    DEFINE_CPU_SCAN(lse, CS_SCAN_LOGSUMEXP, NAME, IN_T, ACC_T, OUT_T, IN, OUT, OPS)
CS_SCAN_PAIRS(DEFINE_PAIR)
#undef DEFINE_PAIR

typedef void (*scan_fn)(const cs_scan_plan *);

cs_status cs_cpu_scan_general(const cs_scan_plan *p)
{
    scan_fn rows = 0, cols = 0;
#define PICK(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                                            \
    if (p->in_dtype == IN && p->out_dtype == OUT && (unsigned)p->op < 32 && CS_OPS_HAS(OPS, p->op)) {           \
        const scan_fn r[] = { sum_##NAME##_rows, prod_##NAME##_rows, max_##NAME##_rows, min_##NAME##_rows,      \
                              lse_##NAME##_rows };                                                              \
        const scan_fn c[] = { sum_##NAME##_columns, prod_##NAME##_columns, max_##NAME##_columns,                \
                              min_##NAME##_columns, lse_##NAME##_columns };                                     \
        rows = r[p->op];                                                                                        \
        cols = c[p->op];                                                                                        \
    }
    CS_SCAN_PAIRS(PICK)
#undef PICK
    if (!rows) return cs_fail(CS_ERR_UNSUPPORTED, "scan op %d of %s into %s is not supported", (int)p->op,
                              cs_dtype_name(p->in_dtype), cs_dtype_name(p->out_dtype));
    const int columns = p->layout == CS_LAYOUT_COLUMNS;
    if (p->explain || p->log) {
        char line[256];
        snprintf(line, sizeof line, "cpu %s (general walk): %lld lines of %lld%s%s%s%s%s%s",
                 columns ? "columns" : "rows", (long long)(p->nouter * p->inner), (long long)p->len,
                 p->mask ? ", masked" : "", p->reset ? ", segmented" : "", p->indices ? ", indices" : "",
                 p->reverse ? ", reverse" : "", p->exclusive ? ", exclusive" : "", p->initial ? ", initial" : "");
        if (p->explain) {
            snprintf(p->explain, p->explain_len, "%s", line);
            return CS_OK;
        }
        fprintf(stderr, "cuscan plan: %s\n", line);
    }
    if (columns) cols(p); else rows(p);
    return CS_OK;
}
