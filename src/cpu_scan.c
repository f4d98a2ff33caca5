/* cpu_scan.c - the CPU scan backend: OpenMP over independent lines; float32 accumulates in double.
 * ROWS plans walk each line in turn; COLUMNS plans walk a block of neighbouring lines together, one
 * row at a time, so that the inner loop runs over unit strides and vectorises.
 * Fold rules shared with the CUDA kernels: a fold starts from the op's identity (-0.0 for float
 * sums, since -0.0 + x == x for every x, so a sum of -0.0 stays -0.0); a masked-out element reads as
 * MASKED (+0.0 or 1: the scan of where(mask, x, 0)); an exclusive scan's first output, the empty
 * prefix, is EMPTY (+0.0 or 1). */
#include <stdint.h>
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

/* One scan kernel per (input, accumulator, output, op). TO_ACC converts an input element. */
#define DEFINE_CPU_SCAN(NAME, IN_T, ACC_T, OUT_T, TO_ACC, IDENT, MASKED, EMPTY, OP)                                \
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
                ACC_T v = (!ml || ml[i * sm]) ? TO_ACC(xl[i * sx]) : (ACC_T)(MASKED);                 \
                ACC_T next = OP(acc, v);                                                              \
                yl[i * so] = (OUT_T)(excl ? (k ? acc : (ACC_T)(EMPTY)) : next);                       \
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
                        ACC_T next = OP(acc[c], TO_ACC(xr[c]));                                       \
                        yr[c] = (OUT_T)(excl ? (k ? acc[c] : (ACC_T)(EMPTY)) : next);                 \
                        acc[c] = next;                                                                \
                    }                                                                                 \
                } else if (unit) {                                                                    \
                    for (int64_t c = 0; c < nc; c++) {                                                \
                        ACC_T next = OP(acc[c], mr[c] ? TO_ACC(xr[c]) : (ACC_T)(MASKED));             \
                        yr[c] = (OUT_T)(excl ? (k ? acc[c] : (ACC_T)(EMPTY)) : next);                 \
                        acc[c] = next;                                                                \
                    }                                                                                 \
                } else {                                                                              \
                    for (int64_t c = 0; c < nc; c++) {                                                \
                        ACC_T next = OP(acc[c], (!mr || mr[c * im]) ? TO_ACC(xr[c * ix]) : (ACC_T)(MASKED)); \
                        yr[c * io] = (OUT_T)(excl ? (k ? acc[c] : (ACC_T)(EMPTY)) : next);            \
                        acc[c] = next;                                                                \
                    }                                                                                 \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }

#define AS_DOUBLE(v) ((double)(v))
#define AS_U32(v) ((uint32_t)(v))
#define AS_U64(v) ((uint64_t)(int64_t)(v))

DEFINE_CPU_SCAN(sum_f32_f32, float, double, float, AS_DOUBLE, -0.0, 0.0, 0.0, SUM)
DEFINE_CPU_SCAN(sum_f32_f64, float, double, double, AS_DOUBLE, -0.0, 0.0, 0.0, SUM)
DEFINE_CPU_SCAN(sum_f64_f64, double, double, double, AS_DOUBLE, -0.0, 0.0, 0.0, SUM)
DEFINE_CPU_SCAN(sum_i32_i32, int32_t, uint32_t, int32_t, AS_U32, 0u, 0u, 0u, SUM)
DEFINE_CPU_SCAN(sum_i32_i64, int32_t, uint64_t, int64_t, AS_U64, 0u, 0u, 0u, SUM)
DEFINE_CPU_SCAN(sum_i64_i64, int64_t, uint64_t, int64_t, AS_U64, 0u, 0u, 0u, SUM)
DEFINE_CPU_SCAN(sum_b_i32, unsigned char, uint32_t, int32_t, AS_U32, 0u, 0u, 0u, SUM)
DEFINE_CPU_SCAN(sum_b_i64, unsigned char, uint64_t, int64_t, AS_U64, 0u, 0u, 0u, SUM)
DEFINE_CPU_SCAN(prod_f32_f32, float, double, float, AS_DOUBLE, 1.0, 1.0, 1.0, PROD)
DEFINE_CPU_SCAN(prod_f32_f64, float, double, double, AS_DOUBLE, 1.0, 1.0, 1.0, PROD)
DEFINE_CPU_SCAN(prod_f64_f64, double, double, double, AS_DOUBLE, 1.0, 1.0, 1.0, PROD)
DEFINE_CPU_SCAN(prod_i32_i32, int32_t, uint32_t, int32_t, AS_U32, 1u, 1u, 1u, PROD)
DEFINE_CPU_SCAN(prod_i32_i64, int32_t, uint64_t, int64_t, AS_U64, 1u, 1u, 1u, PROD)
DEFINE_CPU_SCAN(prod_i64_i64, int64_t, uint64_t, int64_t, AS_U64, 1u, 1u, 1u, PROD)

typedef void (*scan_fn)(const cs_scan_plan *);

cs_status cs_cpu_scan(const cs_scan_plan *p)
{
#define PICK(IN, OUT, NAME) if (p->in_dtype == IN && p->out_dtype == OUT) { rows = NAME##_rows; cols = NAME##_columns; }
    scan_fn rows = 0, cols = 0;
    if (p->op == CS_SCAN_SUM) {
        PICK(CS_FLOAT32, CS_FLOAT32, sum_f32_f32) PICK(CS_FLOAT32, CS_FLOAT64, sum_f32_f64)
        PICK(CS_FLOAT64, CS_FLOAT64, sum_f64_f64) PICK(CS_INT32, CS_INT32, sum_i32_i32)
        PICK(CS_INT32, CS_INT64, sum_i32_i64) PICK(CS_INT64, CS_INT64, sum_i64_i64)
        PICK(CS_BOOL, CS_INT32, sum_b_i32) PICK(CS_BOOL, CS_INT64, sum_b_i64)
    } else {
        PICK(CS_FLOAT32, CS_FLOAT32, prod_f32_f32) PICK(CS_FLOAT32, CS_FLOAT64, prod_f32_f64)
        PICK(CS_FLOAT64, CS_FLOAT64, prod_f64_f64) PICK(CS_INT32, CS_INT32, prod_i32_i32)
        PICK(CS_INT32, CS_INT64, prod_i32_i64) PICK(CS_INT64, CS_INT64, prod_i64_i64)
    }
#undef PICK
    if (!rows) return cs_fail(CS_ERR_UNSUPPORTED, "scan of %s into %s is not supported",
                              cs_dtype_name(p->in_dtype), cs_dtype_name(p->out_dtype));
    if (p->layout == CS_LAYOUT_COLUMNS) cols(p); else rows(p);
    return CS_OK;
}
