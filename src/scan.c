/* scan.c - cs_scan: the checks C must own, layout analysis, backend dispatch.
 * A scan along `dim` is a set of independent lines. The plan says how they lie in memory:
 *   ROWS     each line is walked along the dim (contiguous when the dim's strides are 1);
 *   COLUMNS  lines sit side by side along an `inner` dim of unit stride, so a warp reading one
 *            element of 32 neighbouring lines reads one contiguous segment. */
#include <stdio.h>
#include <string.h>
#include "internal.h"

static int pair_supported(cs_scan_op op, cs_dtype in, cs_dtype out)
{
    switch (in) {
    case CS_FLOAT32: return out == CS_FLOAT32 || out == CS_FLOAT64;
    case CS_FLOAT64: return out == CS_FLOAT64;
    case CS_INT32: return out == CS_INT32 || out == CS_INT64;
    case CS_INT64: return out == CS_INT64;
    case CS_BOOL: return op == CS_SCAN_SUM && (out == CS_INT32 || out == CS_INT64);
    }
    return 0;
}

static int same_shape(const cs_tensor *a, const cs_tensor *b)
{
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

static void shape_str(const cs_tensor *t, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < t->ndim && used + 24 < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? "x%lld" : "%lld", (long long)t->shape[i]);
    if (t->ndim == 0) snprintf(buf, n, "scalar");
}

static cs_status check_scan_args(const cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op,
                                 const cs_tensor *mask)
{
    cs_status st;
    if ((st = cs_check_usable(x, "x"))) return st;
    if ((st = cs_check_usable(out, "out"))) return st;
    if (mask && (st = cs_check_usable(mask, "mask"))) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    char a[128], b[128];
    if (op != CS_SCAN_SUM && op != CS_SCAN_PROD) return cs_fail(CS_ERR_ARGUMENT, "op: unknown scan op %d", (int)op);
    if (dim < 0 || dim >= x->ndim)
        return cs_fail(CS_ERR_ARGUMENT, "dim: %d is out of range for a tensor of %d dims", dim, x->ndim);
    if (out->device != x->device) return cs_fail(CS_ERR_ARGUMENT, "out: expected a tensor on x's device");
    if (!same_shape(out, x)) {
        shape_str(x, a, sizeof a);
        shape_str(out, b, sizeof b);
        return cs_fail(CS_ERR_ARGUMENT, "out: expected shape %s (x's), got %s", a, b);
    }
    if (!pair_supported(op, x->dtype, out->dtype))
        return cs_fail(CS_ERR_UNSUPPORTED, "%s of %s into %s is not supported", op == CS_SCAN_SUM ? "cumsum" : "cumprod",
                       cs_dtype_name(x->dtype), cs_dtype_name(out->dtype));
    if (mask) {
        if (mask->dtype != CS_BOOL) return cs_fail(CS_ERR_ARGUMENT, "mask: expected a bool tensor, got %s", cs_dtype_name(mask->dtype));
        if (mask->device != x->device) return cs_fail(CS_ERR_ARGUMENT, "mask: expected a tensor on x's device");
        if (!same_shape(mask, x)) {
            shape_str(x, a, sizeof a);
            shape_str(mask, b, sizeof b);
            return cs_fail(CS_ERR_ARGUMENT, "mask: expected shape %s (x's), got %s", a, b);
        }
        if (cs_tensor_overlap(out, mask)) return cs_fail(CS_ERR_ARGUMENT, "out: must not overlap mask");
    }
    if (cs_tensor_overlap(out, x) == 2)
        return cs_fail(CS_ERR_ARGUMENT, "out: overlaps x partially (only out = x itself is allowed)");
    return CS_OK;
}

/* The dim whose unit strides let neighbouring lines be read together, or -1. */
static int pick_inner(const cs_tensor *const ops[3], int dim, int masked)
{
    const cs_tensor *x = ops[0], *m = ops[1], *o = ops[2];
    int best = -1, best_score = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d == dim || x->shape[d] <= 1) continue;
        int score = (x->strides[d] == 1) * 4 + (o->strides[d] == 1) * 2 + (masked && m->strides[d] == 1);
        if (score > best_score) { best = d; best_score = score; }
    }
    return best;
}

cs_status cs_scan(cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op, unsigned flags,
                  const cs_tensor *mask)
{
    cs_status st = check_scan_args(out, x, dim, op, mask);
    if (st) return st;
    if (cs_tensor_numel(x) == 0) return CS_OK;

    const cs_tensor *ops[3] = { x, mask ? mask : x, out };
    cs_scan_plan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.reverse = (flags & CS_SCAN_REVERSE) != 0;
    p.exclusive = (flags & CS_SCAN_EXCLUSIVE) != 0;
    p.in_dtype = x->dtype;
    p.out_dtype = out->dtype;
    p.x = cs_tensor_ptr(x);
    p.mask = mask ? (const unsigned char *)cs_tensor_ptr(mask) : NULL;
    p.out = cs_tensor_ptr(out);
    p.len = x->shape[dim];
    for (int o = 0; o < 3; o++) p.scan_stride[o] = p.len == 1 ? 1 : ops[o]->strides[dim];

    int unit_scan = p.scan_stride[0] == 1 && p.scan_stride[2] == 1 && (!mask || p.scan_stride[1] == 1);
    int inner = -1;
    if (!unit_scan) {
        inner = pick_inner(ops, dim, mask != NULL);
        /* a line of unit stride in x or out still reads better walked along than across */
        if (inner >= 0 && x->strides[inner] != 1 && out->strides[inner] != 1 &&
            (p.scan_stride[0] == 1 || p.scan_stride[2] == 1))
            inner = -1;
    }
    p.layout = inner >= 0 ? CS_LAYOUT_COLUMNS : CS_LAYOUT_ROWS;
    p.inner = 1;
    for (int o = 0; o < 3; o++) p.inner_stride[o] = 0;

    /* the outer dims: everything but dim (and inner, hidden as a size-1 dim) */
    cs_tensor shadow[3];
    const cs_tensor *sp[3];
    for (int o = 0; o < 3; o++) {
        shadow[o] = *ops[o];
        if (inner >= 0) {
            p.inner_stride[o] = ops[o]->strides[inner];
            shadow[o].shape[inner] = 1;
        }
        sp[o] = &shadow[o];
    }
    if (inner >= 0) p.inner = x->shape[inner];
    cs_iter_build(&p.outer, 3, sp, dim);
    p.nouter = cs_iter_numel(&p.outer);

    if (x->device == CS_CUDA) return cs_cuda_scan(&p);
    return cs_cpu_scan(&p);
}
