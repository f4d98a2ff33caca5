/* cpu/scan.c - the CPU scan backend: OpenMP over independent lines; floats accumulate in double.
 * ROWS plans walk each line in turn; COLUMNS plans walk a block of neighbouring lines together, one
 * row at a time, so that the inner loop runs over unit strides and vectorises.
 * Fold rules shared with the CUDA kernels: a fold starts from the op's identity (-0.0 for float
 * sums, since -0.0 + x == x for every x, so a sum of -0.0 stays -0.0); a masked-out element reads as
 * MASKED (+0.0 or 1: the scan of where(mask, x, 0)); an exclusive scan's first output, the empty
 * prefix, is EMPTY (+0.0 or 1). */
#include <stdint.h>
#include <stdio.h>
#include "dtypes.h"
#include "internal.h"

enum { COLUMN_BLOCK = 512 };

static inline void line_offsets(const cs_iter *it, int64_t idx, int64_t off[3])
{
    if (it->ndim == 1) { /* the common case: no divisions */
        for (int o = 0; o < 3; o++) off[o] = idx * it->strides[o][0];
        return;
    }
    off[0] = off[1] = off[2] = 0;
    for (int d = it->ndim - 1; d >= 0; d--) {
        int64_t i = idx % it->shape[d];
        idx /= it->shape[d];
        for (int o = 0; o < 3; o++) off[o] += i * it->strides[o][d];
    }
}

#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))

/* One scan kernel per (input, accumulator, output, op). */
#define DEFINE_CPU_SCAN(NAME, IN_T, ACC_T, OUT_T, IN, OUT, IDENT, MASKED, EMPTY, OP)                  \
    static void NAME##_rows(const cs_scan_plan *p)                                                    \
    {                                                                                                 \
        const IN_T *x = p->x;                                                                         \
        const unsigned char *m = p->mask;                                                             \
        OUT_T *y = p->out;                                                                            \
        const int64_t len = p->len, sx = p->scan_stride[0], sm = p->scan_stride[1], so = p->scan_stride[2]; \
        const int excl = p->exclusive, rev = p->reverse;                                              \
        _Pragma("omp parallel for schedule(static) if(p->nouter > 1 && p->nouter * len > 32768)")     \
        for (int64_t line = 0; line < p->nouter; line++) {                                            \
            int64_t off[3];                                                                           \
            line_offsets(&p->outer, line, off);                                                       \
            const IN_T *xl = x + off[0];                                                              \
            OUT_T *yl = y + off[2];                                                                   \
            const unsigned char *ml = m ? m + off[1] : 0;                                             \
            ACC_T acc = IDENT;                                                                        \
            for (int64_t k = 0; k < len; k++) {                                                       \
                int64_t i = rev ? len - 1 - k : k;                                                    \
                ACC_T v = (!ml || ml[i * sm]) ? TO_ACC(IN, ACC_T, xl[i * sx]) : (ACC_T)(MASKED);                 \
                ACC_T next = OP(acc, v);                                                              \
                yl[i * so] = TO_OUT(OUT, OUT_T, excl ? (k ? acc : (ACC_T)(EMPTY)) : next);                       \
                acc = next;                                                                           \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    static void NAME##_columns(const cs_scan_plan *p)                                                 \
    {                                                                                                 \
        const IN_T *x = p->x;                                                                         \
        const unsigned char *m = p->mask;                                                             \
        OUT_T *y = p->out;                                                                            \
        const int64_t len = p->len, inner = p->inner;                                                 \
        const int64_t sx = p->scan_stride[0], sm = p->scan_stride[1], so = p->scan_stride[2];         \
        const int64_t ix = p->inner_stride[0], im = p->inner_stride[1], io = p->inner_stride[2];      \
        const int excl = p->exclusive, rev = p->reverse;                                              \
        const int unit = ix == 1 && io == 1 && (!m || im == 1);                                       \
        const int64_t nblocks = (inner + COLUMN_BLOCK - 1) / COLUMN_BLOCK;                            \
        _Pragma("omp parallel for schedule(static) if(p->nouter * nblocks > 1 && p->nouter * inner * len > 32768)") \
        for (int64_t task = 0; task < p->nouter * nblocks; task++) {                                  \
            int64_t off[3];                                                                           \
            line_offsets(&p->outer, task / nblocks, off);                                             \
            const int64_t c0 = (task % nblocks) * COLUMN_BLOCK;                                       \
            const int64_t nc = inner - c0 < COLUMN_BLOCK ? inner - c0 : COLUMN_BLOCK;                 \
            ACC_T acc[COLUMN_BLOCK];                                                                  \
            for (int64_t c = 0; c < nc; c++) acc[c] = IDENT;                                          \
            for (int64_t k = 0; k < len; k++) {                                                       \
                int64_t i = rev ? len - 1 - k : k;                                                    \
                const IN_T *xr = x + off[0] + i * sx + c0 * ix;                                       \
                OUT_T *yr = y + off[2] + i * so + c0 * io;                                            \
                const unsigned char *mr = m ? m + off[1] + i * sm + c0 * im : 0;                      \
                if (unit && !mr) {                                                                    \
                    for (int64_t c = 0; c < nc; c++) {                                                \
                        ACC_T next = OP(acc[c], TO_ACC(IN, ACC_T, xr[c]));                                       \
                        yr[c] = TO_OUT(OUT, OUT_T, excl ? (k ? acc[c] : (ACC_T)(EMPTY)) : next);                 \
                        acc[c] = next;                                                                \
                    }                                                                                 \
                } else if (unit) {                                                                    \
                    for (int64_t c = 0; c < nc; c++) {                                                \
                        ACC_T next = OP(acc[c], mr[c] ? TO_ACC(IN, ACC_T, xr[c]) : (ACC_T)(MASKED));             \
                        yr[c] = TO_OUT(OUT, OUT_T, excl ? (k ? acc[c] : (ACC_T)(EMPTY)) : next);                 \
                        acc[c] = next;                                                                \
                    }                                                                                 \
                } else {                                                                              \
                    for (int64_t c = 0; c < nc; c++) {                                                \
                        ACC_T next = OP(acc[c], (!mr || mr[c * im]) ? TO_ACC(IN, ACC_T, xr[c * ix]) : (ACC_T)(MASKED)); \
                        yr[c * io] = TO_OUT(OUT, OUT_T, excl ? (k ? acc[c] : (ACC_T)(EMPTY)) : next);            \
                        acc[c] = next;                                                                \
                    }                                                                                 \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }

/* Integers accumulate unsigned, so that they wrap without undefined behaviour; bool reads as 0/1;
 * float16 and bfloat16 elements are their bits here (half.h), converted on the way in and out. */
#define CPU_ACC_double double
#define CPU_ACC_int32_t uint32_t
#define CPU_ACC_int64_t uint64_t
#define CPU_ACC(T) CPU_ACC_##T
#define TO_ACC(IN, ACC, v)                                                                  \
    ((IN) == CS_BOOL ? (ACC)((v) != 0) : (IN) == CS_FLOAT16 ? (ACC)cs_float16_to_double(v)    \
     : (IN) == CS_BFLOAT16 ? (ACC)cs_bfloat16_to_double(v) : (ACC)(v))
/* the one rounding of an output */
#define TO_OUT(OUT, OUT_T, v)                                                               \
    ((OUT) == CS_FLOAT16 ? (OUT_T)cs_float16_from_double(v)                                 \
     : (OUT) == CS_BFLOAT16 ? (OUT_T)cs_bfloat16_from_double(v) : (OUT_T)(v))

/* a sum and, where the pair has one, a product for every pair of the list */
#define DEFINE_PAIR(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                              \
    DEFINE_CPU_SCAN(sum_##NAME, IN_T, CPU_ACC(ACC_T), OUT_T, IN, OUT, (CPU_ACC(ACC_T))(-0.0), 0, 0, SUM) \
    DEFINE_CPU_SCAN(prod_##NAME, IN_T, CPU_ACC(ACC_T), OUT_T, IN, OUT, 1, 1, 1, PROD)
CS_SCAN_PAIRS(DEFINE_PAIR)
#undef DEFINE_PAIR

typedef void (*scan_fn)(const cs_scan_plan *);

cs_status cs_cpu_scan(const cs_scan_plan *p)
{
    scan_fn rows = 0, cols = 0;
#define PICK(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                              \
    if (p->in_dtype == IN && p->out_dtype == OUT) {                                                   \
        if (p->op == CS_SCAN_SUM && CS_OPS_HAS(OPS, CS_SCAN_SUM)) { rows = sum_##NAME##_rows; cols = sum_##NAME##_columns; } \
        else if (p->op == CS_SCAN_PROD && CS_OPS_HAS(OPS, CS_SCAN_PROD)) { rows = prod_##NAME##_rows; cols = prod_##NAME##_columns; } \
    }
    CS_SCAN_PAIRS(PICK)
#undef PICK
    if (!rows) return cs_fail(CS_ERR_UNSUPPORTED, "scan of %s into %s is not supported",
                              cs_dtype_name(p->in_dtype), cs_dtype_name(p->out_dtype));
    const int columns = p->layout == CS_LAYOUT_COLUMNS;
    if (p->explain || p->log) {
        char line[256];
        snprintf(line, sizeof line, "cpu %s: %lld lines of %lld%s%s%s", columns ? "columns" : "rows",
                 (long long)(p->nouter * p->inner), (long long)p->len, p->mask ? ", masked" : "",
                 p->reverse ? ", reverse" : "", p->exclusive ? ", exclusive" : "");
        if (p->explain) {
            snprintf(p->explain, p->explain_len, "%s", line);
            return CS_OK;
        }
        fprintf(stderr, "cuscan plan: %s\n", line);
    }
    if (columns) cols(p); else rows(p);
    return CS_OK;
}
