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

/* The op's name as the Lua module calls it. */
static const char *op_name(cs_scan_op op)
{
    static const char *const names[] = { "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp" };
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "scan";
}

/* t, an operand that goes with x (mask, reset, indices): of dtype, on x's device, of x's shape. */
static cs_status check_like_x(const cs_tensor *t, const cs_tensor *x, cs_dtype dtype, const char *what)
{
    char a[128], b[128];
    if (t->dtype != dtype)
        return cs_fail(CS_ERR_ARGUMENT, "%s: expected a %s tensor, got %s", what, cs_dtype_name(dtype), cs_dtype_name(t->dtype));
    cs_status st = cs_check_same_device(t, what, x, "x");
    if (st) return st;
    if (!same_shape(t, x)) {
        shape_str(x, a, sizeof a);
        shape_str(t, b, sizeof b);
        return cs_fail(CS_ERR_ARGUMENT, "%s: expected shape %s (x's), got %s", what, a, b);
    }
    return CS_OK;
}

/* The initial values of a scan (cs_scan_args.initial) as an operand of x's shape: x's shape with
 * dim's size 1 or with dim removed, given stride 0 along dim. */
static cs_status initial_operand(cs_tensor *view, const cs_tensor *init, const cs_tensor *x, int dim, cs_scan_op op)
{
    cs_status st;
    if ((st = cs_check_usable(init, "initial"))) return st;
    if (op == CS_SCAN_MAX || op == CS_SCAN_MIN)
        return cs_fail(CS_ERR_ARGUMENT, "initial: not supported for cummax / cummin (they have no index to give a "
                       "carried value)");
    if ((st = cs_check_same_device(init, "initial", x, "x"))) return st;
    int takes = 0;
    for (int d = 0; d < CS_NUM_DTYPES; d++) takes |= cs_scan_supported(op, init->dtype, (cs_dtype)d);
    if (!takes)
        return cs_fail(CS_ERR_ARGUMENT, "initial: %s does not take %s values", op_name(op), cs_dtype_name(init->dtype));
    if (cs_dtype_is_float(init->dtype) && !cs_dtype_is_float(x->dtype))
        return cs_fail(CS_ERR_ARGUMENT, "initial: scans of %s start from integer or bool values, not %s",
                       cs_dtype_name(x->dtype), cs_dtype_name(init->dtype));
    *view = *x;
    view->storage = init->storage;
    view->dtype = init->dtype;
    view->offset = init->offset;
    int keepdim = init->ndim == x->ndim, fits = keepdim || init->ndim == x->ndim - 1;
    for (int d = 0, k = 0; fits && d < x->ndim; d++) {
        if (d == dim) {
            if (keepdim && init->shape[k] != 1) fits = 0;
            view->strides[d] = 0;
            k += keepdim;
            continue;
        }
        if (init->shape[k] != x->shape[d]) fits = 0;
        view->strides[d] = init->strides[k++];
    }
    if (!fits) {
        char a[128], b[128], c[128], xs[128];
        cs_tensor line = *x;
        line.shape[dim] = 1;
        shape_str(&line, a, sizeof a);
        for (int d = dim; d + 1 < line.ndim; d++) line.shape[d] = line.shape[d + 1];
        line.ndim--;
        shape_str(&line, b, sizeof b);
        shape_str(init, c, sizeof c);
        shape_str(x, xs, sizeof xs);
        return cs_fail(CS_ERR_ARGUMENT, "initial: expected shape %s or %s (one value per line of x, %s), got %s", a, b,
                       xs, c);
    }
    return CS_OK;
}

/* The checks of a scan's arguments; *init_view gets the initial operand (initial_operand) when given. */
static cs_status check_scan_args(const cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op,
                                 const cs_scan_args *args, cs_tensor *init_view)
{
    const cs_tensor *mask = args->mask, *reset = args->reset, *indices = args->indices;
    cs_status st;
    if ((st = cs_check_usable(x, "x"))) return st;
    if ((st = cs_check_usable(out, "out"))) return st;
    if (mask && (st = cs_check_usable(mask, "mask"))) return st;
    if (reset && (st = cs_check_usable(reset, "reset"))) return st;
    if (indices && (st = cs_check_usable(indices, "indices"))) return st;
    if ((st = cs_check_writable(out, "out"))) return st;
    if (indices && (st = cs_check_writable(indices, "indices"))) return st;
    char a[128], b[128];
    if ((unsigned)op > CS_SCAN_LOGSUMEXP) return cs_fail(CS_ERR_ARGUMENT, "op: unknown scan op %d", (int)op);
    if (args->flags & ~(unsigned)(CS_SCAN_REVERSE | CS_SCAN_EXCLUSIVE))
        return cs_fail(CS_ERR_ARGUMENT, "flags: unknown flags 0x%x", args->flags & ~(unsigned)(CS_SCAN_REVERSE | CS_SCAN_EXCLUSIVE));
    if (dim < 0 || dim >= x->ndim)
        return cs_fail(CS_ERR_ARGUMENT, "dim: %d is out of range for a tensor of %d dims", dim, x->ndim);
    if ((st = cs_check_same_device(out, "out", x, "x"))) return st;
    if (!same_shape(out, x)) {
        shape_str(x, a, sizeof a);
        shape_str(out, b, sizeof b);
        return cs_fail(CS_ERR_ARGUMENT, "out: expected shape %s (x's), got %s", a, b);
    }
    if (!cs_scan_supported(op, x->dtype, out->dtype))
        return cs_fail(CS_ERR_UNSUPPORTED, "%s of %s into %s is not supported", op_name(op), cs_dtype_name(x->dtype),
                       cs_dtype_name(out->dtype));
    if (mask) {
        if ((st = check_like_x(mask, x, CS_BOOL, "mask"))) return st;
        if (cs_tensor_overlap(out, mask)) return cs_fail(CS_ERR_ARGUMENT, "out: must not overlap mask");
    }
    if (reset) {
        if ((st = check_like_x(reset, x, CS_BOOL, "reset"))) return st;
        if (cs_tensor_overlap(out, reset)) return cs_fail(CS_ERR_ARGUMENT, "out: must not overlap reset");
    }
    if (indices) {
        if (op != CS_SCAN_MAX && op != CS_SCAN_MIN)
            return cs_fail(CS_ERR_ARGUMENT, "indices: only cummax and cummin give indices, not %s", op_name(op));
        if ((st = check_like_x(indices, x, CS_INT64, "indices"))) return st;
        const cs_tensor *others[] = { x, out, mask, reset };
        const char *names[] = { "x", "out", "mask", "reset" };
        for (int i = 0; i < 4; i++)
            if (others[i] && cs_tensor_overlap(indices, others[i]))
                return cs_fail(CS_ERR_ARGUMENT, "indices: must not overlap %s", names[i]);
    }
    if (args->initial) {
        if ((st = initial_operand(init_view, args->initial, x, dim, op))) return st;
        if (cs_tensor_overlap(out, args->initial)) return cs_fail(CS_ERR_ARGUMENT, "initial: must not overlap out");
    }
    if (cs_tensor_overlap(out, x) == 2)
        return cs_fail(CS_ERR_ARGUMENT, "out: overlaps x partially (only out = x itself is allowed)");
    return CS_OK;
}

/* The operands of a scan in the order of enum cs_scan_operand; an absent one stands in as x. */
typedef struct scan_operands {
    const cs_tensor *t[CS_MAX_OPERANDS];
    int present[CS_MAX_OPERANDS];
} scan_operands;

/* The dim whose unit strides let neighbouring lines be read together, or -1. Unit strides weigh by
 * what the operand costs: x's most, then the outputs', then the byte-sized mask's and reset's. */
static int pick_inner(const scan_operands *ops, int dim)
{
    static const int weight[CS_MAX_OPERANDS] = { 16, 2, 8, 1, 4, 0 };
    const cs_tensor *x = ops->t[CS_OPND_X];
    int best = -1, best_score = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d == dim || x->shape[d] <= 1) continue;
        int score = 0;
        for (int o = 0; o < CS_MAX_OPERANDS; o++)
            if (ops->present[o] && ops->t[o]->strides[d] == 1) score += weight[o];
        if (score > best_score) { best = d; best_score = score; }
    }
    return best;
}

/* The flat form (internal.h): every operand present has x's strides over the dims of size > 1,
 * and x covers its elements densely in some dim order. Then the dims whose strides are smaller than
 * the scanned dim's make up `inner` and the larger ones `outer`. The initial values, one a line,
 * must lie as the lines do: x's strides inside dim, x's divided by its length outside. */
static int flat_form(const scan_operands *ops, int dim, int64_t *outer, int64_t *inner)
{
    const cs_tensor *x = ops->t[CS_OPND_X], *init = ops->t[CS_OPND_INITIAL];
    int dims[CS_MAX_DIMS], nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) continue;
        for (int o = 1; o < CS_OPND_INITIAL; o++)
            if (ops->present[o] && ops->t[o]->strides[d] != x->strides[d]) return 0;
        if (ops->present[CS_OPND_INITIAL] && d != dim &&
            init->strides[d] * (x->strides[d] > x->strides[dim] ? x->shape[dim] : 1) != x->strides[d])
            return 0;
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
    "rows", "rows/segmented", "rows/single", "rows/lines", "rows/pieces", "rows/warps",
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
                           const cs_scan_args *args)
{
    cs_tensor init_view;
    cs_status st = check_scan_args(out, x, dim, op, args, &init_view);
    if (st) return st;
    scan_operands ops = { .t = { x, args->mask, out, args->reset, args->indices,
                                 args->initial ? &init_view : NULL } };
    for (int o = 0; o < CS_MAX_OPERANDS; o++) {
        ops.present[o] = ops.t[o] != NULL;
        if (!ops.t[o]) ops.t[o] = x;
    }
    memset(p, 0, sizeof *p);
    p->op = op;
    p->reverse = (args->flags & CS_SCAN_REVERSE) != 0;
    p->exclusive = (args->flags & CS_SCAN_EXCLUSIVE) != 0;
    p->in_dtype = x->dtype;
    p->out_dtype = out->dtype;
    p->x = cs_tensor_ptr(x);
    p->mask = args->mask ? (const unsigned char *)cs_tensor_ptr(args->mask) : NULL;
    p->out = cs_tensor_ptr(out);
    p->reset = args->reset ? (const unsigned char *)cs_tensor_ptr(args->reset) : NULL;
    p->indices = args->indices ? (int64_t *)cs_tensor_ptr(args->indices) : NULL;
    p->initial = args->initial ? cs_tensor_ptr(args->initial) : NULL;
    p->initial_dtype = args->initial ? args->initial->dtype : CS_FLOAT64;
    p->len = x->shape[dim];
    p->force = env_force();
    p->log = env_log();
    for (int o = 0; o < CS_MAX_OPERANDS; o++) p->scan_stride[o] = p->len == 1 ? 1 : ops.t[o]->strides[dim];

    p->flat = flat_form(&ops, dim, &p->flat_outer, &p->flat_inner);

    int unit_scan = 1;
    for (int o = 0; o < CS_OPND_INITIAL; o++) /* the initial values do not run along the lines */
        if (ops.present[o] && p->scan_stride[o] != 1) unit_scan = 0;
    int inner = -1;
    if (!unit_scan) {
        inner = pick_inner(&ops, dim);
        /* a line of unit stride in x or out still reads better walked along than across */
        if (inner >= 0 && x->strides[inner] != 1 && out->strides[inner] != 1 &&
            (p->scan_stride[CS_OPND_X] == 1 || p->scan_stride[CS_OPND_OUT] == 1))
            inner = -1;
    }
    p->layout = inner >= 0 ? CS_LAYOUT_COLUMNS : CS_LAYOUT_ROWS;
    p->inner = 1;

    /* the outer dims: everything but dim (and inner, hidden as a size-1 dim) */
    cs_tensor shadow[CS_MAX_OPERANDS];
    const cs_tensor *sp[CS_MAX_OPERANDS];
    for (int o = 0; o < CS_MAX_OPERANDS; o++) {
        shadow[o] = *ops.t[o];
        if (inner >= 0) {
            p->inner_stride[o] = ops.t[o]->strides[inner];
            shadow[o].shape[inner] = 1;
        }
        sp[o] = &shadow[o];
    }
    if (inner >= 0) p->inner = x->shape[inner];
    cs_iter_build(&p->outer, CS_MAX_OPERANDS, sp, dim);
    p->nouter = cs_iter_numel(&p->outer);
    return CS_OK;
}

static cs_status run_plan(const cs_scan_plan *p, const cs_tensor *x)
{
    if (x->device != CS_CUDA) return cs_cpu_scan(p);
    int prev; /* on x's GPU, with its stream and scratch */
    cs_status st = cs_gpu_enter(x->device_index, &prev);
    if (st) return st;
    st = cs_cuda_scan(p);
    cs_gpu_leave(prev);
    return st;
}

static const cs_scan_args no_args;

/* Lines of one element: the inclusive cumsum, cumprod or logcumsumexp of one element is the
 * element, rounded once to out's dtype (log(exp(x)) is x for every x, infinities and NaN
 * included), and its cummax / cummin the element itself at index 1, so an unmasked scan of such
 * lines is a copy (and a fill of the indices), at the copy's speed. A reset changes nothing there:
 * a line's first element starts its segment whatever reset says, so a segmented scan of such lines
 * is the same copy and never reads reset. Not when a family is forced (the specs run the kernels on
 * such lines too). */
static int one_element_copy(const cs_scan_plan *p)
{
    return p->len == 1 && !p->exclusive && !p->mask && !p->initial && !p->force &&
           (p->op == CS_SCAN_SUM || p->op == CS_SCAN_PROD || p->op == CS_SCAN_LOGSUMEXP || p->op == CS_SCAN_MAX ||
            p->op == CS_SCAN_MIN);
}

static cs_status explain_copy(const cs_scan_plan *p, const cs_tensor *x)
{
    char line[160];
    snprintf(line, sizeof line, "%s copy: %lld lines of one element (each its own scan); %s -> %s",
             x->device == CS_CUDA ? "cuda" : "cpu", (long long)cs_tensor_numel(x), cs_dtype_name(p->in_dtype),
             cs_dtype_name(p->out_dtype));
    if (p->explain) snprintf(p->explain, p->explain_len, "%s", line);
    else if (p->log) fprintf(stderr, "cuscan plan: %s\n", line);
    return CS_OK;
}

cs_status cs_scan_with(cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op, const cs_scan_args *args)
{
    cs_scan_plan p;
    cs_status st = plan_scan(&p, out, x, dim, op, args ? args : &no_args);
    if (st) return st;
    if (cs_tensor_numel(x) == 0) return CS_OK;
    if (one_element_copy(&p)) {
        explain_copy(&p, x);
        st = cs_copy(out, x);
        if (!st && args && args->indices) st = cs_fill_int64(args->indices, 1);
        return st;
    }
    return run_plan(&p, x);
}

cs_status cs_scan(cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op, unsigned flags,
                  const cs_tensor *mask)
{
    const cs_scan_args args = { .flags = flags, .mask = mask };
    return cs_scan_with(out, x, dim, op, &args);
}

/* A tensor laid out as cs_empty_like(x, dtype) lays it out, over a storage that is never touched:
 * what explain describes in place of an output it was not given. */
static void fresh_like(cs_tensor *t, cs_storage *none, const cs_tensor *x, cs_dtype dtype)
{
    *none = (cs_storage){ .refcount = 1, .device = x->device, .device_index = x->device_index,
                         .data = (void *)(uintptr_t)4096 };
    *t = *x;
    t->storage = none;
    t->dtype = dtype;
    t->offset = 0;
    cs_like_strides(x, t->strides);
}

cs_status cs_scan_explain_with(char *buf, size_t n, const cs_tensor *x, int dim, cs_scan_op op,
                               const cs_scan_args *args, const cs_tensor *out, cs_dtype out_dtype)
{
    if (!buf || n == 0) return cs_fail(CS_ERR_ARGUMENT, "buf: expected a buffer");
    buf[0] = 0;
    cs_status st = cs_check_usable(x, "x");
    if (st) return st;
    cs_scan_args a = args ? *args : no_args;
    cs_storage none_out, none_indices;
    cs_tensor fresh_out, fresh_indices;
    if (!out) {
        if ((unsigned)out_dtype >= CS_NUM_DTYPES)
            return cs_fail(CS_ERR_ARGUMENT, "out_dtype: unknown dtype %d", (int)out_dtype);
        fresh_like(&fresh_out, &none_out, x, out_dtype);
        out = &fresh_out;
        /* the outputs cummax and cummin make: values and indices */
        if ((op == CS_SCAN_MAX || op == CS_SCAN_MIN) && !a.indices) {
            fresh_like(&fresh_indices, &none_indices, x, CS_INT64);
            a.indices = &fresh_indices;
        }
    }
    cs_scan_plan p;
    if ((st = plan_scan(&p, (cs_tensor *)out, x, dim, op, &a))) return st;
    if (cs_tensor_numel(x) == 0) {
        snprintf(buf, n, "nothing to do (no elements)");
        return CS_OK;
    }
    p.explain = buf;
    p.explain_len = n;
    p.log = 0;
    if (one_element_copy(&p)) return explain_copy(&p, x);
    return run_plan(&p, x);
}

cs_status cs_scan_explain(char *buf, size_t n, const cs_tensor *x, int dim, cs_scan_op op, unsigned flags,
                          const cs_tensor *mask, const cs_tensor *out, cs_dtype out_dtype)
{
    const cs_scan_args args = { .flags = flags, .mask = mask };
    return cs_scan_explain_with(buf, n, x, dim, op, &args, out, out_dtype);
}
