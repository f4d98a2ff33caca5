/* scan.c - cs_scan: the checks C must own, the plan (internal.h says what it holds), and dispatch
 * to a backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dtypes.h"
#include "internal.h"

int cs_scan_supported(cs_scan_op op, cs_dtype in, cs_dtype out)
{
#define PAIR(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS) \
    if (in == IN && out == OUT) return (unsigned)op < 32 && CS_OPS_HAS(OPS, op);
    CS_SCAN_PAIRS(PAIR)
#undef PAIR
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
    if (!cs_scan_supported(op, x->dtype, out->dtype))
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

/* The flat form (internal.h): x, mask and out have the same strides over their dims of size > 1,
 * and x covers its elements densely in some dim order. Then the dims whose strides are smaller than
 * the scanned dim's make up `inner` and the larger ones `outer`. */
static int flat_form(const cs_tensor *const ops[3], int nops, int dim, int64_t *outer, int64_t *inner)
{
    const cs_tensor *x = ops[0];
    int dims[CS_MAX_DIMS], nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) continue;
        for (int o = 1; o < nops; o++)
            if (ops[o]->strides[d] != x->strides[d]) return 0;
        dims[nd++] = d;
    }
    /* dense: sorted by stride, each stride is the product of the sizes inside it */
    for (int i = 1; i < nd; i++) {
        int k = dims[i], j = i - 1;
        while (j >= 0 && x->strides[dims[j]] > x->strides[k]) { dims[j + 1] = dims[j]; j--; }
        dims[j + 1] = k;
    }
    int64_t expect = 1;
    for (int i = 0; i < nd; i++) {
        if (x->strides[dims[i]] != expect) return 0;
        expect *= x->shape[dims[i]];
    }
    const int64_t len = x->shape[dim], numel = cs_tensor_numel(x);
    if (numel == 0) return 0;
    *inner = len == 1 ? 1 : x->strides[dim];
    *outer = numel / (len * *inner);
    return 1;
}

/* The kernel families and modes a scan can be forced to (the CUDA side's names: kernels/). */
static const char *const family_names[] = {
    "rows", "rows/segmented", "rows/single", "rows/lines", "rows/pieces",
    "columns", "columns/lookback", "columns/walk",
    "slabs", "slabs/whole", "slabs/walk", "slabs/lookback",
};

static int known_family(const char *name)
{
    for (size_t i = 0; i < sizeof family_names / sizeof family_names[0]; i++)
        if (!strcmp(name, family_names[i])) return 1;
    return 0;
}

/* The forced family: CUSCAN_FORCE_FAMILY until cs_scan_force_family says otherwise. */
static char forced[32];
static int forced_set;

static const char *env_force(void)
{
    if (!forced_set) {
        const char *v = getenv("CUSCAN_FORCE_FAMILY");
        if (v && *v) {
            if (known_family(v)) snprintf(forced, sizeof forced, "%s", v);
            else fprintf(stderr, "cuscan: CUSCAN_FORCE_FAMILY=%s is not a kernel family; ignored\n", v);
        }
        forced_set = 1;
    }
    return forced[0] ? forced : NULL;
}

cs_status cs_scan_force_family(const char *name)
{
    if (name && *name && !known_family(name)) {
        char list[256] = "";
        for (size_t i = 0; i < sizeof family_names / sizeof family_names[0]; i++) {
            if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
            strncat(list, family_names[i], sizeof list - strlen(list) - 1);
        }
        return cs_fail(CS_ERR_ARGUMENT, "name: unknown kernel family '%s' (expected one of %s)", name, list);
    }
    snprintf(forced, sizeof forced, "%s", name ? name : "");
    forced_set = 1;
    return CS_OK;
}

static int env_log(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("CUSCAN_LOG");
        v = e && strstr(e, "plan") != NULL;
    }
    return v;
}

static cs_status plan_scan(cs_scan_plan *p, cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op,
                           unsigned flags, const cs_tensor *mask)
{
    cs_status st = check_scan_args(out, x, dim, op, mask);
    if (st) return st;
    const cs_tensor *ops[3] = { x, mask ? mask : x, out };
    memset(p, 0, sizeof *p);
    p->op = op;
    p->reverse = (flags & CS_SCAN_REVERSE) != 0;
    p->exclusive = (flags & CS_SCAN_EXCLUSIVE) != 0;
    p->in_dtype = x->dtype;
    p->out_dtype = out->dtype;
    p->x = cs_tensor_ptr(x);
    p->mask = mask ? (const unsigned char *)cs_tensor_ptr(mask) : NULL;
    p->out = cs_tensor_ptr(out);
    p->len = x->shape[dim];
    p->force = env_force();
    p->log = env_log();
    for (int o = 0; o < 3; o++) p->scan_stride[o] = p->len == 1 ? 1 : ops[o]->strides[dim];

    const cs_tensor *flat_ops[3] = { x, out, mask };
    p->flat = flat_form(flat_ops, mask ? 3 : 2, dim, &p->flat_outer, &p->flat_inner);

    int unit_scan = p->scan_stride[0] == 1 && p->scan_stride[2] == 1 && (!mask || p->scan_stride[1] == 1);
    int inner = -1;
    if (!unit_scan) {
        inner = pick_inner(ops, dim, mask != NULL);
        /* a line of unit stride in x or out still reads better walked along than across */
        if (inner >= 0 && x->strides[inner] != 1 && out->strides[inner] != 1 &&
            (p->scan_stride[0] == 1 || p->scan_stride[2] == 1))
            inner = -1;
    }
    p->layout = inner >= 0 ? CS_LAYOUT_COLUMNS : CS_LAYOUT_ROWS;
    p->inner = 1;

    /* the outer dims: everything but dim (and inner, hidden as a size-1 dim) */
    cs_tensor shadow[3];
    const cs_tensor *sp[3];
    for (int o = 0; o < 3; o++) {
        shadow[o] = *ops[o];
        if (inner >= 0) {
            p->inner_stride[o] = ops[o]->strides[inner];
            shadow[o].shape[inner] = 1;
        }
        sp[o] = &shadow[o];
    }
    if (inner >= 0) p->inner = x->shape[inner];
    cs_iter_build(&p->outer, 3, sp, dim);
    p->nouter = cs_iter_numel(&p->outer);
    return CS_OK;
}

static cs_status run_plan(const cs_scan_plan *p, cs_device device)
{
    return device == CS_CUDA ? cs_cuda_scan(p) : cs_cpu_scan(p);
}

cs_status cs_scan(cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op, unsigned flags,
                  const cs_tensor *mask)
{
    cs_scan_plan p;
    cs_status st = plan_scan(&p, out, x, dim, op, flags, mask);
    if (st) return st;
    if (cs_tensor_numel(x) == 0) return CS_OK;
    return run_plan(&p, x->device);
}

cs_status cs_scan_explain(char *buf, size_t n, const cs_tensor *x, int dim, cs_scan_op op, unsigned flags,
                          const cs_tensor *mask, const cs_tensor *out, cs_dtype out_dtype)
{
    if (!buf || n == 0) return cs_fail(CS_ERR_ARGUMENT, "buf: expected a buffer");
    buf[0] = 0;
    cs_status st = cs_check_usable(x, "x");
    if (st) return st;
    /* without out: the output cs_empty_like(x, out_dtype) would make, described without memory */
    cs_storage none = { .refcount = 1, .device = x->device, .data = (void *)(uintptr_t)4096 };
    cs_tensor fresh = *x;
    if (!out) {
        if ((unsigned)out_dtype >= CS_NUM_DTYPES)
            return cs_fail(CS_ERR_ARGUMENT, "out_dtype: unknown dtype %d", (int)out_dtype);
        fresh.storage = &none;
        fresh.dtype = out_dtype;
        fresh.offset = 0;
        cs_like_strides(x, fresh.strides);
        out = &fresh;
    }
    cs_scan_plan p;
    if ((st = plan_scan(&p, (cs_tensor *)out, x, dim, op, flags, mask))) return st;
    if (cs_tensor_numel(x) == 0) {
        snprintf(buf, n, "nothing to do (no elements)");
        return CS_OK;
    }
    p.explain = buf;
    p.explain_len = n;
    p.log = 0;
    return run_plan(&p, x->device);
}
