/* ops.c - fill, rand, arange, copy (within and across devices), element-wise ops, reductions and
 * comparisons: argument checks, plans, backend dispatch. */
#include <math.h>
#include <string.h>
#include "half.h"
#include "internal.h"

static cs_status ew_plan(cs_elementwise_plan *p, int nin, cs_tensor *out, const cs_tensor *a, const cs_tensor *b)
{
    const cs_tensor *ts[3] = { out, a ? a : out, b ? b : out };
    memset(p, 0, sizeof *p);
    p->nin = nin;
    for (int o = 0; o < 3; o++) {
        p->dtype[o] = ts[o]->dtype;
        p->ptr[o] = cs_tensor_ptr(ts[o]);
    }
    cs_iter_build(&p->it, 3, ts, -1);
    p->numel = cs_iter_numel(&p->it);
    p->compute = out->dtype;
    return CS_OK;
}

/* Runs on t's device: a CUDA tensor's GPU is made current for the call (its stream, its pool). */
static cs_status run_ew(const cs_elementwise_plan *p, const cs_tensor *t)
{
    if (p->numel == 0) return CS_OK;
    if (t->device != CS_CUDA) return cs_cpu_elementwise(p);
    int prev;
    cs_status st = cs_gpu_enter(t->device_index, &prev);
    if (st) return st;
    st = cs_cuda_elementwise(p);
    cs_gpu_leave(prev);
    return st;
}

static int same_device(const cs_tensor *a, const cs_tensor *b)
{
    return a->device == b->device && cs_tensor_device_index(a) == cs_tensor_device_index(b);
}

static int same_shape(const cs_tensor *a, const cs_tensor *b)
{
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

static cs_status check_pair(const cs_tensor *out, const cs_tensor *a, const char *an)
{
    cs_status st = cs_check_usable(a, an);
    if (st) return st;
    if (!same_device(a, out)) {
        char da[32], dout[32];
        return cs_fail(CS_ERR_ARGUMENT, "%s: expected a tensor on the same device (%s is on %s, the output on %s)", an,
                       an, cs_device_name(a, da, sizeof da), cs_device_name(out, dout, sizeof dout));
    }
    if (!same_shape(a, out)) return cs_fail(CS_ERR_ARGUMENT, "%s: expected the output's shape", an);
    return CS_OK;
}

/* A double that becomes an element of an integer dtype: truncated toward zero, and only when it is
 * finite and in range (the conversion is undefined in C otherwise, and wrapping would be silent).
 * Float dtypes and bool take any value. */
static cs_status check_element(double v, cs_dtype dtype, const char *what)
{
    if (dtype != CS_INT32 && dtype != CS_INT64) return CS_OK;
    const double lo = dtype == CS_INT32 ? -2147483648.0 : -9223372036854775808.0;
    const double end = dtype == CS_INT32 ? 2147483648.0 : 9223372036854775808.0;
    const double w = trunc(v);
    if (!(w >= lo && w < end))
        return cs_fail(CS_ERR_ARGUMENT, "%s: %.17g is out of range for %s", what, v, cs_dtype_name(dtype));
    return CS_OK;
}

cs_status cs_fill(cs_tensor *t, double value)
{
    cs_status st = cs_check_usable(t, "fill");
    if (st) return st;
    if ((st = cs_check_writable(t, "x"))) return st;
    if ((st = check_element(value, t->dtype, "value"))) return st;
    cs_elementwise_plan p;
    ew_plan(&p, 0, t, NULL, NULL);
    p.op = CS_EW_FILL;
    p.scalar = value;
    p.iscalar = t->dtype == CS_BOOL ? value != 0.0 : (t->dtype == CS_INT32 || t->dtype == CS_INT64) ? (int64_t)value : 0;
    return run_ew(&p, t);
}

cs_status cs_fill_int64(cs_tensor *t, int64_t value)
{
    cs_status st = cs_check_usable(t, "fill");
    if (st) return st;
    if ((st = cs_check_writable(t, "x"))) return st;
    if (t->dtype == CS_INT32 && (value < INT32_MIN || value > INT32_MAX))
        return cs_fail(CS_ERR_ARGUMENT, "value: %lld is out of range for int32", (long long)value);
    cs_elementwise_plan p;
    ew_plan(&p, 0, t, NULL, NULL);
    p.op = CS_EW_FILL;
    p.scalar = (double)value;
    p.iscalar = t->dtype == CS_BOOL ? value != 0 : value;
    return run_ew(&p, t);
}

/* Ops that number elements in row-major order need the iteration in the tensor's own dim order,
 * not the stride order cs_iter_build picks; they get an unsorted, unmerged iteration. */
static void row_major_iter(cs_iter *it, const cs_tensor *t)
{
    it->ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        it->shape[d] = t->shape[d];
        for (int o = 0; o < CS_MAX_OPERANDS; o++) it->strides[o][d] = t->strides[d];
    }
    if (t->ndim == 0) {
        it->ndim = 1;
        it->shape[0] = 1;
        for (int o = 0; o < CS_MAX_OPERANDS; o++) it->strides[o][0] = 1;
    }
}

/* rand and randn: a counter-based generator numbering elements in row-major order */
static cs_status random_fill(cs_tensor *t, uint64_t seed, int op, const char *what)
{
    cs_status st = cs_check_usable(t, what);
    if (st) return st;
    if ((st = cs_check_writable(t, "out"))) return st;
    if (!cs_dtype_is_float(t->dtype))
        return cs_fail(CS_ERR_UNSUPPORTED, "%s: dtype %s is not a float dtype", what, cs_dtype_name(t->dtype));
    cs_elementwise_plan p;
    ew_plan(&p, 0, t, NULL, NULL);
    row_major_iter(&p.it, t);
    p.op = op;
    p.seed = seed;
    return run_ew(&p, t);
}

cs_status cs_rand(cs_tensor *t, uint64_t seed) { return random_fill(t, seed, CS_EW_RAND, "rand"); }
cs_status cs_randn(cs_tensor *t, uint64_t seed) { return random_fill(t, seed, CS_EW_RANDN, "randn"); }

cs_status cs_arange(cs_tensor *t, double start, double step)
{
    cs_status st = cs_check_usable(t, "arange");
    if (st) return st;
    if ((st = cs_check_writable(t, "out"))) return st;
    const int64_t n = cs_tensor_numel(t);
    if (!cs_dtype_is_float(t->dtype) && n > 0) {
        /* integer elements are start + i * step in int64: each piece and the last element must fit */
        int64_t last;
        if ((st = check_element(start, CS_INT64, "start")) || (st = check_element(step, CS_INT64, "step"))) return st;
        if (__builtin_mul_overflow(n - 1, (int64_t)step, &last) || __builtin_add_overflow(last, (int64_t)start, &last))
            return cs_fail(CS_ERR_ARGUMENT, "the last element overflows int64");
        if ((st = check_element((double)(int64_t)start, t->dtype, "start")) ||
            (st = check_element((double)last, t->dtype, "the last element")))
            return st;
    }
    cs_elementwise_plan p;
    ew_plan(&p, 0, t, NULL, NULL);
    row_major_iter(&p.it, t);
    p.op = CS_EW_ARANGE;
    p.scalar = start;
    p.scalar2 = step;
    p.compute = cs_dtype_is_float(t->dtype) ? CS_FLOAT64 : CS_INT64;
    return run_ew(&p, t);
}

/* A contiguous tensor of src's shape and the given dtype, on the device (and GPU) of `on`. */
static cs_status contiguous_temp(cs_tensor **tmp, const cs_tensor *src, cs_dtype dtype, const cs_tensor *on)
{
    int prev;
    cs_status st = cs_gpu_enter(cs_tensor_device_index(on), &prev);
    if (st) return st;
    st = cs_empty(tmp, src->ndim, src->shape, dtype, on->device);
    cs_gpu_leave(prev);
    return st;
}


cs_status cs_copy(cs_tensor *dst, const cs_tensor *src)
{
    cs_status st = cs_check_usable(dst, "copy destination");
    if (st) return st;
    if ((st = cs_check_usable(src, "copy source"))) return st;
    if ((st = cs_check_writable(dst, "x"))) return st;
    if (!same_shape(dst, src)) return cs_fail(CS_ERR_ARGUMENT, "copy: source and destination shapes differ");
    if (cs_tensor_numel(dst) == 0) return CS_OK;
    if (same_device(dst, src)) {
        if (cs_tensor_overlap(dst, src) == 1) return CS_OK;
        if (cs_tensor_overlap(dst, src) == 2) {
            /* go through a temporary so that no element is read after being overwritten */
            cs_tensor *tmp;
            if ((st = contiguous_temp(&tmp, src, src->dtype, src))) return st;
            st = cs_copy(tmp, src);
            if (!st) st = cs_copy(dst, tmp);
            cs_tensor_free(tmp);
            return st;
        }
        if (dst->dtype == src->dtype && cs_tensor_is_contiguous(dst) && cs_tensor_is_contiguous(src)) {
            const size_t bytes = (size_t)cs_tensor_numel(src) * cs_dtype_size(src->dtype);
            if (dst->device == CS_CUDA) {
                int prev;
                if ((st = cs_gpu_enter(dst->device_index, &prev))) return st;
                st = cs_cuda_copy_device(cs_tensor_ptr(dst), cs_tensor_ptr(src), bytes);
                cs_gpu_leave(prev);
                return st;
            }
            cs_cpu_copy_bytes(cs_tensor_ptr(dst), cs_tensor_ptr(src), bytes);
            return CS_OK;
        }
        cs_elementwise_plan p;
        ew_plan(&p, 1, dst, src, NULL);
        p.op = CS_EW_COPY;
        /* Conversions saturate: a value beyond the target's range becomes its nearest end (NaN
         * becomes 0). int64 to int32 goes through double for that: every int64 outside int32's
         * range stays outside it when rounded, and the double store clamps. */
        p.compute = (cs_dtype_is_float(dst->dtype) || cs_dtype_is_float(src->dtype) ||
                     (dst->dtype == CS_INT32 && src->dtype == CS_INT64)) ? CS_FLOAT64 : CS_INT64;
        return run_ew(&p, dst);
    }
    /* across devices (host and GPU, or two GPUs): the bytes travel contiguous and in src's dtype;
     * the receiving side scatters */
    if (cs_tensor_is_contiguous(src) && cs_tensor_is_contiguous(dst) && src->dtype == dst->dtype)
        return cs_transfer_contiguous(dst, src);
    cs_tensor *staged_src = NULL, *staged_dst = NULL;
    const cs_tensor *from = src;
    if (!cs_tensor_is_contiguous(src)) {
        if ((st = contiguous_temp(&staged_src, src, src->dtype, src))) return st;
        if ((st = cs_copy(staged_src, src))) goto done;
        from = staged_src;
    }
    if ((st = contiguous_temp(&staged_dst, src, src->dtype, dst))) goto done;
    if ((st = cs_transfer_contiguous(staged_dst, from))) goto done;
    st = cs_copy(dst, staged_dst);
done:
    cs_tensor_free(staged_src);
    cs_tensor_free(staged_dst);
    return st;
}

cs_status cs_flip(cs_tensor *out, const cs_tensor *x, unsigned dims)
{
    cs_status st = cs_check_usable(out, "out");
    if (st) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    if ((st = check_pair(out, x, "x"))) return st;
    if (cs_tensor_overlap(out, x)) return cs_fail(CS_ERR_ARGUMENT, "out: must not overlap x");
    /* x read backwards: each flipped dim starts at its last element and steps by minus its stride
     * (a plan may hold negative strides; tensors may not) */
    cs_tensor back = *x;
    for (int d = 0; d < x->ndim; d++)
        if (dims >> d & 1u && x->shape[d] > 0) {
            back.offset += (x->shape[d] - 1) * x->strides[d];
            back.strides[d] = -x->strides[d];
        }
    cs_elementwise_plan p;
    ew_plan(&p, 1, out, &back, NULL);
    p.op = CS_EW_COPY;
    p.compute = (cs_dtype_is_float(out->dtype) || cs_dtype_is_float(x->dtype)) ? CS_FLOAT64 : CS_INT64;
    return run_ew(&p, out);
}

cs_status cs_where(cs_tensor *out, const cs_tensor *mask, const cs_tensor *a, const cs_tensor *b)
{
    cs_status st = cs_check_usable(out, "out");
    if (st) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    if ((st = check_pair(out, mask, "mask")) || (st = check_pair(out, a, "a")) || (st = check_pair(out, b, "b")))
        return st;
    if (mask->dtype != CS_BOOL) return cs_fail(CS_ERR_ARGUMENT, "mask: expected a bool tensor, got %s", cs_dtype_name(mask->dtype));
    if (cs_tensor_overlap(out, mask) || cs_tensor_overlap(out, a) || cs_tensor_overlap(out, b))
        return cs_fail(CS_ERR_ARGUMENT, "out: must not overlap mask, a or b");
    /* b everywhere, then a where the mask holds */
    if ((st = cs_copy(out, b))) return st;
    cs_elementwise_plan p;
    ew_plan(&p, 2, out, mask, a);
    p.op = CS_EW_WHERE;
    p.compute = (cs_dtype_is_float(out->dtype) || cs_dtype_is_float(a->dtype)) ? CS_FLOAT64 : CS_INT64;
    return run_ew(&p, out);
}

cs_status cs_unary(cs_tensor *out, const cs_tensor *x, cs_unary_op op)
{
    cs_status st = cs_check_usable(out, "out");
    if (st) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    if ((st = check_pair(out, x, "x"))) return st;
    if ((unsigned)op > CS_LOGICAL_NOT) return cs_fail(CS_ERR_ARGUMENT, "unknown unary op %d", (int)op);
    cs_elementwise_plan p;
    ew_plan(&p, 1, out, x, NULL);
    p.op = op;
    p.compute = op == CS_LOGICAL_NOT ? CS_BOOL : out->dtype;
    return run_ew(&p, out);
}

static cs_dtype wider(cs_dtype a, cs_dtype b)
{
    if (a == CS_FLOAT64 || b == CS_FLOAT64) return CS_FLOAT64;
    if (cs_dtype_is_float(a) || cs_dtype_is_float(b)) return CS_FLOAT32; /* floats compare in double */
    if (a == CS_INT64 || b == CS_INT64) return CS_INT64;
    if (a == CS_INT32 || b == CS_INT32) return CS_INT32;
    return CS_BOOL;
}

static int is_predicate(cs_binary_op op) { return op >= CS_LT && op <= CS_LOGICAL_OR; }

/* s as an element of a float dtype (a comparison takes the number in the tensor's own dtype, as
 * PyTorch and NumPy do: a float32 x:eq(0.1) holds where x holds float32's 0.1) */
static double as_element(double s, cs_dtype dtype)
{
    switch (dtype) {
    case CS_FLOAT32: return (double)(float)s;
    case CS_FLOAT16: return cs_float16_to_double(cs_float16_from_double(s));
    case CS_BFLOAT16: return cs_bfloat16_to_double(cs_bfloat16_from_double(s));
    default: return s;
    }
}

cs_status cs_binary(cs_tensor *out, const cs_tensor *a, const cs_tensor *b, cs_binary_op op)
{
    cs_status st = cs_check_usable(out, "out");
    if (st) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    if ((st = check_pair(out, a, "a"))) return st;
    if ((st = check_pair(out, b, "b"))) return st;
    if ((unsigned)op > CS_MIN2) return cs_fail(CS_ERR_ARGUMENT, "unknown binary op %d", (int)op);
    if ((cs_tensor_overlap(out, a) == 2) || (cs_tensor_overlap(out, b) == 2))
        return cs_fail(CS_ERR_ARGUMENT, "out: overlaps an input partially");
    cs_elementwise_plan p;
    ew_plan(&p, 2, out, a, b);
    p.op = op;
    p.compute = is_predicate(op) ? wider(a->dtype, b->dtype) : out->dtype;
    return run_ew(&p, out);
}

cs_status cs_binary_scalar(cs_tensor *out, const cs_tensor *a, double s, cs_binary_op op, int scalar_first)
{
    cs_status st = cs_check_usable(out, "out");
    if (st) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    if ((st = check_pair(out, a, "a"))) return st;
    if ((unsigned)op > CS_MIN2) return cs_fail(CS_ERR_ARGUMENT, "unknown binary op %d", (int)op);
    if (cs_tensor_overlap(out, a) == 2) return cs_fail(CS_ERR_ARGUMENT, "out: overlaps the input partially");
    cs_elementwise_plan p;
    ew_plan(&p, 1, out, a, NULL);
    p.op = op;
    p.has_scalar = 1;
    if (op >= CS_LT && op <= CS_NE) s = as_element(s, a->dtype);
    p.scalar = s;
    p.scalar_first = scalar_first;
    /* an integer comparison only for a scalar that is exactly an int64 (the test itself must not
     * convert a double out of int64's range) */
    int s_is_int = s >= -9223372036854775808.0 && s < 9223372036854775808.0 && s == (double)(int64_t)s;
    p.compute = is_predicate(op) ? (cs_dtype_is_float(a->dtype) || !s_is_int ? CS_FLOAT64 : CS_INT64) : out->dtype;
    if (!cs_dtype_is_float(p.compute) && (st = check_element(s, p.compute == CS_INT32 ? CS_INT32 : CS_INT64, "scalar")))
        return st;
    return run_ew(&p, out);
}

cs_status cs_reduce(cs_tensor *out, const cs_tensor *x, int dim, cs_reduce_op op)
{
    cs_status st = cs_check_usable(out, "out");
    if (st) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    if ((st = cs_check_usable(x, "x"))) return st;
    if ((st = cs_check_same_device(out, "out", x, "x"))) return st;
    if ((unsigned)op > CS_REDUCE_MIN) return cs_fail(CS_ERR_ARGUMENT, "unknown reduction %d", (int)op);
    if (dim < -1 || dim >= x->ndim) return cs_fail(CS_ERR_ARGUMENT, "dim: %d is out of range for a tensor of %d dims", dim, x->ndim);
    int64_t len = dim < 0 ? cs_tensor_numel(x) : x->shape[dim];
    if (dim < 0 ? cs_tensor_numel(out) != 1 : cs_tensor_numel(out) * len != cs_tensor_numel(x))
        return cs_fail(CS_ERR_ARGUMENT, "out: wrong number of elements for the reduction");
    if (len == 0 && (op == CS_REDUCE_MAX || op == CS_REDUCE_MIN))
        return cs_fail(CS_ERR_ARGUMENT, "%s of an empty tensor (or dim) has no value", op == CS_REDUCE_MAX ? "max" : "min");
    if (cs_tensor_numel(out) == 0) return CS_OK;
    cs_tensor *tmp = NULL;
    if (dim < 0 && !cs_tensor_is_contiguous(x)) {
        if ((st = contiguous_temp(&tmp, x, x->dtype, x))) return st;
        if ((st = cs_copy(tmp, x))) { cs_tensor_free(tmp); return st; }
        x = tmp;
    }
    cs_reduce_plan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.in_dtype = x->dtype;
    p.out_dtype = out->dtype;
    p.x = cs_tensor_ptr(x);
    p.out = cs_tensor_ptr(out);
    if (dim < 0) {
        p.len = len;
        p.stride = 1;
        p.outer.ndim = 0;
        p.nouter = 1;
    } else {
        /* out viewed with x's shape and a zero stride along dim lines the two up */
        cs_tensor ox = *out;
        ox.ndim = x->ndim;
        int k = 0;
        for (int d = 0; d < x->ndim; d++) {
            ox.shape[d] = x->shape[d];
            ox.strides[d] = d == dim ? 0 : (out->ndim ? out->strides[k++] : 0);
        }
        const cs_tensor *ts[2] = { x, &ox };
        cs_iter_build(&p.outer, 2, ts, dim);
        p.nouter = cs_iter_numel(&p.outer);
        p.len = len;
        p.stride = x->strides[dim];
    }
    if (x->device == CS_CUDA) {
        int prev;
        if (!(st = cs_gpu_enter(x->device_index, &prev))) {
            st = cs_cuda_reduce(&p);
            cs_gpu_leave(prev);
        }
    } else {
        st = cs_cpu_reduce(&p);
    }
    cs_tensor_free(tmp);
    return st;
}

cs_status cs_compare(const cs_tensor *a, const cs_tensor *b, double rtol, double atol, int equal_nan,
                     double *max_abs, int64_t *n_far)
{
    cs_status st = cs_check_usable(a, "a");
    if (st) return st;
    if ((st = cs_check_usable(b, "b"))) return st;
    if (!same_shape(a, b)) return cs_fail(CS_ERR_ARGUMENT, "b: expected a's shape");
    *max_abs = 0.0;
    *n_far = 0;
    if (cs_tensor_numel(a) == 0) return CS_OK;
    cs_tensor *moved = NULL;
    if (!same_device(a, b)) {
        /* compare on the CPU, moving whichever lives on CUDA there; two GPUs: on a's, b moved */
        const cs_tensor *dev = a->device == CS_CUDA && b->device == CS_CUDA ? b : a->device == CS_CUDA ? a : b;
        if ((st = contiguous_temp(&moved, dev, dev->dtype, dev == b ? a : b))) return st;
        if ((st = cs_copy(moved, dev))) { cs_tensor_free(moved); return st; }
        if (dev == a) a = moved; else b = moved;
    }
    cs_elementwise_plan p;
    const cs_tensor *ts[3] = { a, a, b };
    memset(&p, 0, sizeof p);
    p.nin = 2;
    for (int o = 0; o < 3; o++) {
        p.dtype[o] = ts[o]->dtype;
        p.ptr[o] = cs_tensor_ptr(ts[o]);
    }
    cs_iter_build(&p.it, 3, ts, -1);
    p.numel = cs_iter_numel(&p.it);
    if (a->device == CS_CUDA) {
        int prev;
        if (!(st = cs_gpu_enter(a->device_index, &prev))) {
            st = cs_cuda_compare(&p, rtol, atol, equal_nan, max_abs, n_far);
            cs_gpu_leave(prev);
        }
    } else {
        st = cs_cpu_compare(&p, rtol, atol, equal_nan, max_abs, n_far);
    }
    cs_tensor_free(moved);
    return st;
}
