/* cpu/ops.c - CPU element-wise ops, reductions and comparisons, OpenMP over elements. Values move
 * as double (float compute dtypes) or int64 (integer and bool ones); scalar.h holds the semantics
 * that the CUDA kernels share. */
#include <math.h>
#include <omp.h>
#include <string.h>
#include <wchar.h>
#include "internal.h"
#include "scalar.h"
#include "simd.h"

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

/* ---- element-wise ops: runs of elements, a chunk at a time through typed buffers ----
 * A run is a stretch of the innermost iteration dim (every operand evenly strided along it). Each
 * chunk of a run is loaded into a double (float compute) or int64 buffer with a loop per dtype,
 * computed with a loop per op, and stored with a loop per dtype, so that no loop tests a dtype or
 * an op per element and unit-stride loops vectorise. Ops that number elements (rand, randn, arange)
 * and where() take the per-element path. */
enum { CHUNK = 16384, RUN = 1024, TILE = 64, TILE_ROWS = 512 };

/* buf[0..n) = elements off, off + s, ... of p (dtype d) as double / int64; and back */
#define LOAD_LOOP(T, EXPR) { const T *q = (const T *)p + off;                                        \
        if (s == 1) for (int64_t i = 0; i < n; i++) buf[i] = EXPR(q[i]);                           \
        else for (int64_t i = 0; i < n; i++) buf[i] = EXPR(q[i * s]); } break;
#define AS_DOUBLE(v) ((double)(v))
#define BOOL_01(v) ((v) != 0)
VECTOR_KERNEL static void load_double(const void *p, cs_dtype d, int64_t off, int64_t s, int64_t n, double *buf)
{
    switch (d) {
    case CS_FLOAT32: LOAD_LOOP(float, AS_DOUBLE)
    case CS_FLOAT64: LOAD_LOOP(double, AS_DOUBLE)
    case CS_INT32: LOAD_LOOP(int32_t, AS_DOUBLE)
    case CS_INT64: LOAD_LOOP(int64_t, AS_DOUBLE)
    case CS_BOOL: LOAD_LOOP(uint8_t, BOOL_01)
    default: for (int64_t i = 0; i < n; i++) buf[i] = cs_load_double(p, d, off + i * s);
    }
}

VECTOR_KERNEL static void load_int(const void *p, cs_dtype d, int64_t off, int64_t s, int64_t n, int64_t *buf)
{
    switch (d) {
    case CS_INT32: LOAD_LOOP(int32_t, (int64_t))
    case CS_INT64: LOAD_LOOP(int64_t, (int64_t))
    case CS_BOOL: LOAD_LOOP(uint8_t, BOOL_01)
    default: for (int64_t i = 0; i < n; i++) buf[i] = cs_load_int(p, d, off + i * s);
    }
}

/* the stores of scalar.h (its saturating conversions), with the dtype a constant in each loop */
#define STORE_LOOP(D, FN) { if (s == 1) for (int64_t i = 0; i < n; i++) FN(p, D, off + i, buf[i]);  \
        else for (int64_t i = 0; i < n; i++) FN(p, D, off + i * s, buf[i]); } break;
#define DEFINE_STORE(NAME, T, FN)                                                                  \
    VECTOR_KERNEL static void NAME(void *p, cs_dtype d, int64_t off, int64_t s, int64_t n, const T *buf) \
    {                                                                                              \
        switch (d) {                                                                               \
        case CS_FLOAT32: STORE_LOOP(CS_FLOAT32, FN)                                                \
        case CS_FLOAT64: STORE_LOOP(CS_FLOAT64, FN)                                                \
        case CS_INT32: STORE_LOOP(CS_INT32, FN)                                                    \
        case CS_INT64: STORE_LOOP(CS_INT64, FN)                                                    \
        case CS_BOOL: STORE_LOOP(CS_BOOL, FN)                                                      \
        default: STORE_LOOP(d, FN)                                                                 \
        }                                                                                          \
    }
DEFINE_STORE(store_double, double, cs_store_double)
DEFINE_STORE(store_int, int64_t, cs_store_int)

/* r = op(a) or op(a, b) over n elements, the op a constant in each loop */
#define UNARY_CASE(OP, FN) case OP: for (int64_t i = 0; i < n; i++) r[i] = FN(OP, a[i]); break;
#define BINARY_CASE(OP, FN) case OP: for (int64_t i = 0; i < n; i++) r[i] = FN(OP, a[i], b[i]); break;
#define UNARY_OPS(FN) UNARY_CASE(CS_NEG, FN) UNARY_CASE(CS_EXP, FN) UNARY_CASE(CS_LOG, FN)           \
    UNARY_CASE(CS_ABS, FN) UNARY_CASE(CS_SQRT, FN) UNARY_CASE(CS_LOGICAL_NOT, FN)
#define BINARY_OPS(FN) BINARY_CASE(CS_ADD, FN) BINARY_CASE(CS_SUB, FN) BINARY_CASE(CS_MUL, FN)      \
    BINARY_CASE(CS_DIV, FN) BINARY_CASE(CS_POW, FN) BINARY_CASE(CS_LT, FN) BINARY_CASE(CS_LE, FN)  \
    BINARY_CASE(CS_GT, FN) BINARY_CASE(CS_GE, FN) BINARY_CASE(CS_EQ, FN) BINARY_CASE(CS_NE, FN)    \
    BINARY_CASE(CS_LOGICAL_AND, FN) BINARY_CASE(CS_LOGICAL_OR, FN) BINARY_CASE(CS_MAX2, FN)        \
    BINARY_CASE(CS_MIN2, FN)

VECTOR_KERNEL static void unary_double(int op, const double *a, double *r, int64_t n) { switch (op) { UNARY_OPS(cs_unary_double) } }
VECTOR_KERNEL static void unary_int(int op, const int64_t *a, int64_t *r, int64_t n) { switch (op) { UNARY_OPS(cs_unary_int) } }
VECTOR_KERNEL static void binary_double(int op, const double *a, const double *b, double *r, int64_t n) { switch (op) { BINARY_OPS(cs_binary_double) } }
VECTOR_KERNEL static void binary_int(int op, const int64_t *a, const int64_t *b, int64_t *r, int64_t n) { switch (op) { BINARY_OPS(cs_binary_int) } }

/* The common case in one pass: out, a (and b) of one float dtype, unit strides. mode 0: op(a, b);
 * 1: op(a, s); 2: op(s, a). */
#define FUSED_CASE(OP, T)                                                                          \
    case OP:                                                                                       \
        if (mode == 0) for (int64_t i = 0; i < n; i++) r[i] = (T)cs_binary_double(OP, a[i], b[i]); \
        else if (mode == 1) for (int64_t i = 0; i < n; i++) r[i] = (T)cs_binary_double(OP, a[i], s); \
        else for (int64_t i = 0; i < n; i++) r[i] = (T)cs_binary_double(OP, s, a[i]);            \
        break;
#define FUSED_UNARY_CASE(OP, T) case OP: for (int64_t i = 0; i < n; i++) r[i] = (T)cs_unary_double(OP, a[i]); break;
#define DEFINE_FUSED(T)                                                                            \
    VECTOR_KERNEL static void fused_binary_##T(int op, const T *a, const T *b, double s, int mode, T *r, int64_t n) \
    {                                                                                              \
        switch (op) {                                                                              \
            FUSED_CASE(CS_ADD, T) FUSED_CASE(CS_SUB, T) FUSED_CASE(CS_MUL, T) FUSED_CASE(CS_DIV, T)   \
            FUSED_CASE(CS_POW, T) FUSED_CASE(CS_MAX2, T) FUSED_CASE(CS_MIN2, T)                     \
        }                                                                                          \
    }                                                                                              \
    VECTOR_KERNEL static void fused_unary_##T(int op, const T *a, T *r, int64_t n)                 \
    {                                                                                              \
        switch (op) {                                                                              \
            FUSED_UNARY_CASE(CS_NEG, T) FUSED_UNARY_CASE(CS_EXP, T) FUSED_UNARY_CASE(CS_LOG, T)     \
            FUSED_UNARY_CASE(CS_ABS, T) FUSED_UNARY_CASE(CS_SQRT, T)                               \
        }                                                                                          \
    }
DEFINE_FUSED(float)
DEFINE_FUSED(double)

/* comparisons of one float dtype into bool: a op b, or a op s (b NULL); in the dtype itself, so
 * that float32 compares eight a vector */
#define PREDICATE_CASE(OP, CMP)                                                                    \
    case OP:                                                                                       \
        if (b) for (int64_t i = 0; i < n; i++) r[i] = a[i] CMP b[i];                               \
        else for (int64_t i = 0; i < n; i++) r[i] = a[i] CMP s;                                    \
        break;
#define DEFINE_PREDICATE(T)                                                                        \
    VECTOR_KERNEL static void fused_predicate_##T(int op, const T *a, const T *b, T s, uint8_t *r, int64_t n) \
    {                                                                                              \
        switch (op) {                                                                              \
            PREDICATE_CASE(CS_LT, <) PREDICATE_CASE(CS_LE, <=) PREDICATE_CASE(CS_GT, >)              \
            PREDICATE_CASE(CS_GE, >=) PREDICATE_CASE(CS_EQ, ==) PREDICATE_CASE(CS_NE, !=)           \
        }                                                                                          \
    }
DEFINE_PREDICATE(float)
DEFINE_PREDICATE(double)

/* s op a as a op' s */
static int swapped(int op)
{
    return op == CS_LT ? CS_GT : op == CS_GT ? CS_LT : op == CS_LE ? CS_GE : op == CS_GE ? CS_LE : op;
}

/* a op s for every float32 a and a double s, as a op t for the float t next to s on the side that
 * keeps each answer: no float lies strictly between s and t. == and != take s itself when a float
 * equals it, else NaN (never equal, always unequal), as a NaN s takes NaN for every op. */
static float f32_threshold(int op, double s)
{
    const float f = (float)s;
    if (op == CS_LT || op == CS_GE) return (double)f < s ? nextafterf(f, INFINITY) : f;
    if (op == CS_LE || op == CS_GT) return (double)f > s ? nextafterf(f, -INFINITY) : f;
    return (double)f == s ? f : NAN;
}

/* a comparison of float tensors of one dtype (or one and a number) into bool: done when it is */
static int ew_fused_predicate(const cs_elementwise_plan *p, const int64_t off[3], const int64_t s[3], int64_t n)
{
    const cs_dtype d = p->dtype[1];
    if (p->dtype[0] != CS_BOOL || p->op < CS_LT || p->op > CS_NE || (d != CS_FLOAT32 && d != CS_FLOAT64) ||
        !cs_dtype_is_float(p->compute) || s[0] != 1 || s[1] != 1 || p->nin == 0)
        return 0;
    if (!p->has_scalar && (p->dtype[2] != d || s[2] != 1)) return 0;
    const int op = p->has_scalar && p->scalar_first ? swapped(p->op) : p->op;
    uint8_t *r = (uint8_t *)p->ptr[0] + off[0];
    const char *b = p->has_scalar ? NULL : (const char *)p->ptr[2] + off[2] * (int64_t)cs_dtype_size(d);
    if (d == CS_FLOAT32)
        fused_predicate_float(op, (const float *)p->ptr[1] + off[1], (const float *)b,
                              p->has_scalar ? f32_threshold(op, p->scalar) : 0.0f, r, n);
    else
        fused_predicate_double(op, (const double *)p->ptr[1] + off[1], (const double *)b, p->scalar, r, n);
    return 1;
}

/* whether ew_run's chunk could be done by a fused loop (then done) */
static int ew_fused(const cs_elementwise_plan *p, const int64_t off[3], const int64_t s[3], int64_t n)
{
    const cs_dtype d = p->dtype[0];
    const int unary = p->nin == 1 && !p->has_scalar;
    if (ew_fused_predicate(p, off, s, n)) return 1;
    if ((d != CS_FLOAT32 && d != CS_FLOAT64) || p->compute != d || p->op > CS_MIN2 || s[0] != 1 || s[1] != 1 ||
        p->dtype[1] != d || (p->op >= CS_LT && p->op <= CS_LOGICAL_OR) || (unary && p->op == CS_LOGICAL_NOT))
        return 0;
    if (!unary && !p->has_scalar && (p->dtype[2] != d || s[2] != 1)) return 0;
    const int mode = p->has_scalar ? (p->scalar_first ? 2 : 1) : 0;
    if (d == CS_FLOAT32) {
        float *r = (float *)p->ptr[0] + off[0];
        const float *a = (const float *)p->ptr[1] + off[1], *b = (const float *)p->ptr[2] + off[2];
        if (unary && p->op == CS_EXP) cs_cpu_exp_f32(a, r, n);
        else if (unary && p->op == CS_LOG) cs_cpu_log_f32(a, r, n);
        else if (unary) fused_unary_float(p->op, a, r, n);
        else fused_binary_float(p->op, a, b, p->scalar, mode, r, n);
    } else {
        double *r = (double *)p->ptr[0] + off[0];
        const double *a = (const double *)p->ptr[1] + off[1], *b = (const double *)p->ptr[2] + off[2];
        if (unary) fused_unary_double(p->op, a, r, n);
        else fused_binary_double(p->op, a, b, p->scalar, mode, r, n);
    }
    return 1;
}

/* float32 <-> float64 copies of unit strides in one loop (a conversion a vector), as store_double
 * would round them; else 0 */
VECTOR_KERNEL static void widen_f32(const float *a, double *r, int64_t n) { for (int64_t i = 0; i < n; i++) r[i] = a[i]; }
VECTOR_KERNEL static void narrow_f64(const double *a, float *r, int64_t n) { for (int64_t i = 0; i < n; i++) r[i] = (float)a[i]; }
static int convert_run(const cs_elementwise_plan *p, const int64_t off[3], const int64_t s[3], int64_t n)
{
    if (s[0] != 1 || s[1] != 1) return 0;
    if (p->dtype[0] == CS_FLOAT64 && p->dtype[1] == CS_FLOAT32)
        widen_f32((const float *)p->ptr[1] + off[1], (double *)p->ptr[0] + off[0], n);
    else if (p->dtype[0] == CS_FLOAT32 && p->dtype[1] == CS_FLOAT64)
        narrow_f64((const double *)p->ptr[1] + off[1], (float *)p->ptr[0] + off[0], n);
    else
        return 0;
    return 1;
}

/* A contiguous run of a fill: the value's bits, as one element holds them, stored by the C library's
 * memset and wmemset (the widest stores the CPU has, streaming past the cache for long runs) where
 * they repeat in bytes or in 4-byte words, else by a plain loop of whole elements (the compiler's
 * vector stores); never a conversion an element. */
static int fill_run(const cs_elementwise_plan *p, int64_t off, int64_t n)
{
    const cs_dtype d = p->dtype[0];
    const size_t size = cs_dtype_size(d);
    union { double f; int64_t i; uint8_t b[8]; uint16_t h[4]; uint32_t w[2]; } e = { 0 };
    if (cs_dtype_is_float(d)) cs_store_double(e.b, d, 0, p->scalar);
    else cs_store_int(e.b, d, 0, p->iscalar);
    uint8_t *y = (uint8_t *)p->ptr[0] + (size_t)off * size;
    if (size == 1 || (size == 2 && e.b[0] == e.b[1])) {
        memset(y, e.b[0], (size_t)n * size);
        return 1;
    }
    if (size == 2) {
        /* pairs of elements as 4-byte words, from a 4-byte boundary */
        uint16_t *h = (uint16_t *)y;
        if ((uintptr_t)h % 4 && n > 0) *h++ = e.h[0], n--;
        if (sizeof(wchar_t) == 4 && n > 1) {
            union { uint16_t h[2]; wchar_t w; } pair = { { e.h[0], e.h[0] } };
            wmemset((wchar_t *)h, pair.w, (size_t)(n / 2));
            h += n / 2 * 2;
            n %= 2;
        }
        for (int64_t i = 0; i < n; i++) h[i] = e.h[0];
        return 1;
    }
    if (size == 4 || (size == 8 && e.w[0] == e.w[1])) {
        if (sizeof(wchar_t) != 4) return 0;
        union { uint32_t u; wchar_t w; } word = { e.w[0] };
        wmemset((wchar_t *)y, word.w, (size_t)n * size / 4);
        return 1;
    }
    uint64_t *q = (uint64_t *)y;
    for (int64_t i = 0; i < n; i++) q[i] = (uint64_t)e.i;
    return 1;
}

/* n elements from offsets off (out, a, b) with strides s */
static void ew_run(const cs_elementwise_plan *p, const int64_t off[3], const int64_t s[3], int64_t n)
{
    const int is_float = cs_dtype_is_float(p->compute) && p->op != CS_EW_FILL;
    const int unary = p->nin == 1 && !p->has_scalar && p->op < CS_EW_FILL;
    union { double d[RUN]; int64_t i[RUN]; } a, b;
    if (p->op < CS_EW_FILL && ew_fused(p, off, s, n)) return;
    if (p->op == CS_EW_FILL && s[0] == 1 && fill_run(p, off[0], n)) return;
    if (p->op == CS_EW_COPY && convert_run(p, off, s, n)) return;
    for (int64_t k = 0; k < n; k += RUN) {
        const int64_t m = n - k < RUN ? n - k : RUN;
        const int64_t o0 = off[0] + k * s[0], o1 = off[1] + k * s[1], o2 = off[2] + k * s[2];
        if (p->op == CS_EW_FILL) {
            for (int64_t i = 0; i < m; i++) a.i[i] = p->iscalar, b.d[i] = p->scalar;
            if (cs_dtype_is_float(p->dtype[0])) store_double(p->ptr[0], p->dtype[0], o0, s[0], m, b.d);
            else store_int(p->ptr[0], p->dtype[0], o0, s[0], m, a.i);
            continue;
        }
        const int int_path = p->compute == CS_BOOL || !is_float;
        if (int_path) load_int(p->ptr[1], p->dtype[1], o1, s[1], m, a.i);
        else load_double(p->ptr[1], p->dtype[1], o1, s[1], m, a.d);
        if (p->op == CS_EW_COPY) {
            /* nothing to compute */
        } else if (unary) {
            if (int_path) unary_int(p->op, a.i, a.i, m);
            else unary_double(p->op, a.d, a.d, m);
        } else if (int_path) {
            if (p->has_scalar) for (int64_t i = 0; i < m; i++) b.i[i] = (int64_t)p->scalar;
            else load_int(p->ptr[2], p->dtype[2], o2, s[2], m, b.i);
            if (p->scalar_first) binary_int(p->op, b.i, a.i, a.i, m);
            else binary_int(p->op, a.i, b.i, a.i, m);
        } else {
            if (p->has_scalar) for (int64_t i = 0; i < m; i++) b.d[i] = p->scalar;
            else load_double(p->ptr[2], p->dtype[2], o2, s[2], m, b.d);
            if (p->scalar_first) binary_double(p->op, b.d, a.d, a.d, m);
            else binary_double(p->op, a.d, b.d, a.d, m);
        }
        if (int_path) store_int(p->ptr[0], p->dtype[0], o0, s[0], m, a.i);
        else store_double(p->ptr[0], p->dtype[0], o0, s[0], m, a.d);
    }
}

static int by_runs(const cs_elementwise_plan *p)
{
    return p->op == CS_EW_FILL || p->op == CS_EW_COPY || p->op < CS_EW_FILL;
}

/* elements [b, e) of the iteration, a run (or what of it lies in the range) at a time */
static void ew_range_runs(const cs_elementwise_plan *p, int64_t b, int64_t e)
{
    const cs_iter *it = &p->it;
    const int last = it->ndim - 1;
    const int64_t inner = it->ndim ? it->shape[last] : 1;
    int64_t s[3];
    for (int o = 0; o < 3; o++) s[o] = it->ndim ? it->strides[o][last] : 0;
    for (int64_t i = b; i < e;) {
        int64_t off[3];
        const int64_t r = i % inner, n = inner - r < e - i ? inner - r : e - i;
        iter_offsets(it, i, off);
        ew_run(p, off, s, n);
        i += n;
    }
}

/* An input whose unit stride runs along the second innermost dim while the innermost is strided
 * (a transposed input): the two dims are walked in TILE x TILE blocks so that the lines the input
 * brings into cache are used before they leave it, the blocks in the order of the input's rows (which
 * the hardware then streams); a plain transposition stores past the caches when its output
 * outgrows them. */
static int tiled(const cs_elementwise_plan *p)
{
    const cs_iter *it = &p->it;
    if (it->ndim < 2 || !by_runs(p) || it->shape[it->ndim - 1] < TILE || it->shape[it->ndim - 2] < TILE) return 0;
    for (int o = 1; o <= p->nin && o < 3; o++)
        if (it->strides[o][it->ndim - 1] != 1 && (it->strides[o][it->ndim - 2] == 1 || it->strides[o][it->ndim - 2] == -1))
            return 1;
    return 0;
}

static void ew_tiles(const cs_elementwise_plan *p)
{
    const cs_iter *it = &p->it;
    const int d1 = it->ndim - 1, d2 = it->ndim - 2;
    const int64_t n1 = it->shape[d1], n2 = it->shape[d2];
    /* a copy into the same dtype, the input's unit stride along d2 and the output's along d1 */
    const size_t bytes = p->op == CS_EW_COPY && p->dtype[0] == p->dtype[1] && it->strides[1][d2] == 1 &&
                                 it->strides[0][d1] == 1 ? cs_dtype_size(p->dtype[0]) : 0;
    /* a plain transposition of 4-byte elements: tasks of more of the input's rows (TILE elements of
     * each), each output row then a longer run of whole cache lines */
    const int64_t tile1 = bytes == 4 ? TILE_ROWS : TILE;
    const int64_t t1 = (n1 + tile1 - 1) / tile1, t2 = (n2 + TILE - 1) / TILE;
    cs_iter outer = *it;
    outer.ndim = d2;
    const int64_t nouter = cs_iter_numel(&outer), ntasks = nouter * t1 * t2;
    int64_t s[3];
    for (int o = 0; o < 3; o++) s[o] = it->strides[o][d1];
    const int stream = bytes && p->numel * (int64_t)bytes >= cs_cpu_cache_bytes();
#pragma omp parallel if (ntasks > 1 && p->numel > 65536)
    {
#pragma omp for schedule(static) nowait
        for (int64_t task = 0; task < ntasks; task++) {
            int64_t off[3];
            iter_offsets(&outer, task / (t1 * t2), off);
            const int64_t j2 = task % t2 * TILE, j1 = task / t2 % t1 * tile1; /* along the input's rows */
            const int64_t e2 = j2 + TILE < n2 ? j2 + TILE : n2, m1 = n1 - j1 < tile1 ? n1 - j1 : tile1;
            if (bytes) { /* a plain transposition: the input's rows are the output's columns */
                const int64_t in = off[1] + j2 * it->strides[1][d2] + j1 * s[1];
                cs_cpu_transpose_stream((const char *)p->ptr[1] + in * bytes, s[1],
                                        (char *)p->ptr[0] + (off[0] + j2 * it->strides[0][d2] + j1) * bytes,
                                        it->strides[0][d2], m1, e2 - j2, bytes, stream);
                continue;
            }
            for (int64_t r = j2; r < e2; r++) {
                int64_t o[3];
                for (int k = 0; k < 3; k++) o[k] = off[k] + r * it->strides[k][d2] + j1 * s[k];
                ew_run(p, o, s, m1);
            }
        }
        if (stream) cs_cpu_stream_fence();
    }
}

/* element by element: ops that number elements, and where() */
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

cs_status cs_cpu_elementwise(const cs_elementwise_plan *p)
{
    if (tiled(p)) {
        ew_tiles(p);
        return CS_OK;
    }
    const int runs = by_runs(p);
    const int64_t nchunks = (p->numel + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static) if (nchunks > 4)
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t b = c * CHUNK, e = b + CHUNK < p->numel ? b + CHUNK : p->numel;
        if (runs) ew_range_runs(p, b, e);
        else ew_range(p, b, e);
    }
    return CS_OK;
}

/* A parallel memcpy: one contiguous slice a thread. */
void cs_cpu_copy_bytes(void *dst, const void *src, size_t bytes)
{
    const size_t piece = 1 << 20;
#pragma omp parallel if (bytes > 4 * piece)
    {
        const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        const size_t b = bytes / nt * t, e = t + 1 == nt ? bytes : bytes / nt * (t + 1);
        memcpy((char *)dst + b, (const char *)src + b, e - b);
    }
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
