/* cpu_ops.c - CPU element-wise ops, reductions and comparisons, OpenMP over elements. Values move
 * as double (float compute dtypes) or int64 (integer and bool ones); scalar.h holds the semantics
 * that the CUDA kernels share. */
#include <math.h>
#include "internal.h"
#include "scalar.h"

/* Element offsets of linear index i in each operand. */
static inline void iter_offsets(const cs_iter *it, int64_t i, int64_t off[3])
{
    if (it->ndim <= 1) { /* contiguous or evenly strided: no divisions */
        for (int o = 0; o < 3; o++) off[o] = it->ndim ? i * it->strides[o][0] : 0;
        return;
    }
    off[0] = off[1] = off[2] = 0;
    for (int d = it->ndim - 1; d >= 0; d--) {
        int64_t k = i % it->shape[d];
        i /= it->shape[d];
        off[0] += k * it->strides[0][d];
        off[1] += k * it->strides[1][d];
        off[2] += k * it->strides[2][d];
    }
}

enum { CHUNK = 4096 };

static void ew_range(const cs_elementwise_plan *p, int64_t begin, int64_t end)
{
    const int is_float = cs_dtype_is_float(p->compute);
    const cs_dtype od = p->dtype[0], ad = p->dtype[1], bd = p->dtype[2];
    for (int64_t i = begin; i < end; i++) {
        int64_t off[3];
        iter_offsets(&p->it, i, off);
        switch (p->op) {
        case CS_EW_FILL:
            if (cs_dtype_is_float(od)) cs_store_double(p->ptr[0], od, off[0], p->scalar);
            else cs_store_int(p->ptr[0], od, off[0], p->iscalar);
            break;
        case CS_EW_RAND:
            cs_store_double(p->ptr[0], od, off[0], cs_uniform((uint64_t)i, p->seed, od));
            break;
        case CS_EW_RANDN:
            cs_store_double(p->ptr[0], od, off[0], cs_normal((uint64_t)i, p->seed));
            break;
        case CS_EW_WHERE:
            if (!((const uint8_t *)p->ptr[1])[off[1]]) break;
            if (is_float) cs_store_double(p->ptr[0], od, off[0], cs_load_double(p->ptr[2], bd, off[2]));
            else cs_store_int(p->ptr[0], od, off[0], cs_load_int(p->ptr[2], bd, off[2]));
            break;
        case CS_EW_ARANGE:
            if (is_float) cs_store_double(p->ptr[0], od, off[0], p->scalar + (double)i * p->scalar2);
            else cs_store_int(p->ptr[0], od, off[0], (int64_t)p->scalar + i * (int64_t)p->scalar2);
            break;
        case CS_EW_COPY:
            if (is_float) cs_store_double(p->ptr[0], od, off[0], cs_load_double(p->ptr[1], ad, off[1]));
            else cs_store_int(p->ptr[0], od, off[0], cs_load_int(p->ptr[1], ad, off[1]));
            break;
        default:
            if (p->nin == 1 && !p->has_scalar) {
                if (p->compute == CS_BOOL || !is_float)
                    cs_store_int(p->ptr[0], od, off[0], cs_unary_int(p->op, cs_load_int(p->ptr[1], ad, off[1])));
                else
                    cs_store_double(p->ptr[0], od, off[0], cs_unary_double(p->op, cs_load_double(p->ptr[1], ad, off[1])));
            } else if (is_float) {
                double a = cs_load_double(p->ptr[1], ad, off[1]);
                double b = p->has_scalar ? p->scalar : cs_load_double(p->ptr[2], bd, off[2]);
                cs_store_double(p->ptr[0], od, off[0], p->scalar_first ? cs_binary_double(p->op, b, a) : cs_binary_double(p->op, a, b));
            } else {
                int64_t a = cs_load_int(p->ptr[1], ad, off[1]);
                int64_t b = p->has_scalar ? (int64_t)p->scalar : cs_load_int(p->ptr[2], bd, off[2]);
                cs_store_int(p->ptr[0], od, off[0], p->scalar_first ? cs_binary_int(p->op, b, a) : cs_binary_int(p->op, a, b));
            }
        }
    }
}

/* Fill of a contiguous (or evenly strided) tensor: a typed loop the compiler vectorises. */
static int fill_fast(const cs_elementwise_plan *p, int64_t b, int64_t e)
{
    if (p->op != CS_EW_FILL || p->it.ndim > 1) return 0;
    const int64_t s = p->it.ndim ? p->it.strides[0][0] : 1;
#define FILL_LOOP(T, V) { T *d = p->ptr[0]; const T v = (T)(V); for (int64_t i = b; i < e; i++) d[i * s] = v; }
    switch (p->dtype[0]) {
    case CS_FLOAT32: FILL_LOOP(float, p->scalar) break;
    case CS_FLOAT64: FILL_LOOP(double, p->scalar) break;
    case CS_INT32: FILL_LOOP(int32_t, p->iscalar) break;
    case CS_INT64: FILL_LOOP(int64_t, p->iscalar) break;
    case CS_BOOL: FILL_LOOP(uint8_t, p->iscalar != 0) break;
    case CS_FLOAT16: FILL_LOOP(uint16_t, cs_float16_from_double(p->scalar)) break;
    case CS_BFLOAT16: FILL_LOOP(uint16_t, cs_bfloat16_from_double(p->scalar)) break;
    }
#undef FILL_LOOP
    return 1;
}

cs_status cs_cpu_elementwise(const cs_elementwise_plan *p)
{
    const int64_t nchunks = (p->numel + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static) if (nchunks > 4)
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t b = c * CHUNK, e = b + CHUNK < p->numel ? b + CHUNK : p->numel;
        if (!fill_fast(p, b, e)) ew_range(p, b, e);
    }
    return CS_OK;
}

cs_status cs_cpu_reduce(const cs_reduce_plan *p)
{
    const int is_float = cs_dtype_is_float(p->in_dtype) || p->op == CS_REDUCE_MEAN;
#pragma omp parallel for schedule(static) if (p->nouter > 1 && p->nouter * p->len > 32768)
    for (int64_t line = 0; line < p->nouter; line++) {
        int64_t off[3];
        iter_offsets(&p->outer, line, off);
        if (is_float) {
            double acc = p->op == CS_REDUCE_SUM || p->op == CS_REDUCE_MEAN ? 0.0 : cs_load_double(p->x, p->in_dtype, off[0]);
            for (int64_t i = 0; i < p->len; i++) {
                double v = cs_load_double(p->x, p->in_dtype, off[0] + i * p->stride);
                if (p->op == CS_REDUCE_SUM || p->op == CS_REDUCE_MEAN) acc += v;
                else acc = p->op == CS_REDUCE_MAX ? cs_binary_double(CS_MAX2, acc, v) : cs_binary_double(CS_MIN2, acc, v);
            }
            if (p->op == CS_REDUCE_MEAN) acc = p->len ? acc / (double)p->len : NAN;
            cs_store_double(p->out, p->out_dtype, off[1], acc);
        } else {
            int64_t acc = p->op == CS_REDUCE_SUM ? 0 : cs_load_int(p->x, p->in_dtype, off[0]);
            for (int64_t i = 0; i < p->len; i++) {
                int64_t v = cs_load_int(p->x, p->in_dtype, off[0] + i * p->stride);
                acc = cs_binary_int(p->op == CS_REDUCE_SUM ? CS_ADD : p->op == CS_REDUCE_MAX ? CS_MAX2 : CS_MIN2, acc, v);
            }
            cs_store_int(p->out, p->out_dtype, off[1], acc);
        }
    }
    return CS_OK;
}

cs_status cs_cpu_compare(const cs_elementwise_plan *p, double rtol, double atol, int equal_nan,
                         double *max_abs, int64_t *n_far)
{
    double worst = 0.0;
    int64_t far = 0;
    int nan_seen = 0;
#pragma omp parallel for schedule(static) reduction(max : worst) reduction(+ : far) reduction(| : nan_seen) if (p->numel > 65536)
    for (int64_t i = 0; i < p->numel; i++) {
        int64_t off[3];
        iter_offsets(&p->it, i, off);
        double a = cs_load_double(p->ptr[1], p->dtype[1], off[1]);
        double b = cs_load_double(p->ptr[2], p->dtype[2], off[2]);
        int an = a != a, bn = b != b;
        if (an || bn) {
            if (!(an && bn && equal_nan)) far++;
            if (an != bn) nan_seen = 1;
            continue;
        }
        if (a == b) continue; /* equal infinities too */
        double d = fabs(a - b);
        if (isinf(a) || isinf(b)) { /* never close to anything but itself (numpy) */
            worst = INFINITY;
            far++;
            continue;
        }
        if (d > worst) worst = d;
        if (!(d <= atol + rtol * fabs(b))) far++;
    }
    *max_abs = nan_seen ? NAN : worst;
    *n_far = far;
    return CS_OK;
}
