/* tensor.c - tensor handles: shapes, strides, views over refcounted storage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

int64_t cs_numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

/* Sizes must be >= 0 and the sizes other than 0 must multiply within int64 (a contiguous stride is
 * such a product, whether or not another dim is empty). */
static cs_status check_shape(int ndim, const int64_t *shape, int64_t *numel)
{
    if (ndim < 0 || ndim > CS_MAX_DIMS)
        return cs_fail(CS_ERR_ARGUMENT, "shape: expected at most %d dims, got %d", CS_MAX_DIMS, ndim);
    int64_t n = 1;
    int empty = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return cs_fail(CS_ERR_ARGUMENT, "shape: size %lld of dim %d is negative", (long long)shape[i], i + 1);
        if (shape[i] == 0) {
            empty = 1;
            continue;
        }
        if (n > INT64_MAX / shape[i])
            return cs_fail(CS_ERR_ARGUMENT, "shape: the element count overflows int64");
        n *= shape[i];
    }
    *numel = empty ? 0 : n;
    return CS_OK;
}

static cs_tensor *handle_new(cs_storage *s, cs_dtype dtype, cs_device device, int ndim)
{
    cs_tensor *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->storage = s;
    t->dtype = dtype;
    t->device = device;
    t->device_index = s->device_index;
    t->ndim = ndim;
    return t;
}

static cs_status alloc_with_strides(cs_tensor **out, int ndim, const int64_t *shape, const int64_t *strides,
                                    cs_dtype dtype, cs_device device)
{
    int64_t n = 0;
    cs_status st = check_shape(ndim, shape, &n);
    if (st) return st;
    if ((unsigned)dtype >= CS_NUM_DTYPES) return cs_fail(CS_ERR_ARGUMENT, "dtype: unknown dtype %d", (int)dtype);
    if (device != CS_CPU && device != CS_CUDA) return cs_fail(CS_ERR_ARGUMENT, "device: unknown device %d", (int)device);
    size_t esize = cs_dtype_size(dtype);
    if (n > 0 && (uint64_t)n > (UINT64_MAX / 2) / esize)
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "tensor of %lld elements is too large", (long long)n);
    cs_storage *s;
    st = cs_storage_new(&s, device, (size_t)n * esize);
    if (st) return st;
    cs_tensor *t = handle_new(s, dtype, device, ndim);
    if (!t) {
        cs_storage_release(s);
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (tensor handle)");
    }
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    *out = t;
    return CS_OK;
}

cs_status cs_empty(cs_tensor **out, int ndim, const int64_t *shape, cs_dtype dtype, cs_device device)
{
    int64_t strides[CS_MAX_DIMS];
    if (ndim < 0 || ndim > CS_MAX_DIMS)
        return cs_fail(CS_ERR_ARGUMENT, "shape: expected at most %d dims, got %d", CS_MAX_DIMS, ndim);
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        if (shape[i] > 0 && s <= INT64_MAX / shape[i]) s *= shape[i];
    }
    return alloc_with_strides(out, ndim, shape, strides, dtype, device);
}

int cs_like_strides(const cs_tensor *like, int64_t *strides)
{
    int nd = like->ndim;
    int order[CS_MAX_DIMS];
    for (int i = 0; i < nd; i++) order[i] = i;
    /* order dims by like's strides, largest first (stable, so ties keep row-major order) */
    for (int i = 1; i < nd; i++) {
        int k = order[i], j = i - 1;
        while (j >= 0 && like->strides[order[j]] < like->strides[k]) { order[j + 1] = order[j]; j--; }
        order[j + 1] = k;
    }
    /* dense when strides are exactly the packed strides of that order (size-1 dims don't matter) */
    int dense = 1;
    int64_t expect = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int d = order[i];
        if (like->shape[d] != 1 && like->strides[d] != expect) dense = 0;
        expect *= like->shape[d];
    }
    if (!dense)
        for (int i = 0; i < nd; i++) order[i] = i;
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        strides[order[i]] = s;
        if (like->shape[order[i]] > 0 && s <= INT64_MAX / like->shape[order[i]]) s *= like->shape[order[i]];
    }
    return dense;
}

cs_status cs_empty_like(cs_tensor **out, const cs_tensor *like, cs_dtype dtype, cs_device device)
{
    int64_t strides[CS_MAX_DIMS];
    cs_like_strides(like, strides);
    return alloc_with_strides(out, like->ndim, like->shape, strides, dtype, device);
}

cs_status cs_check_usable(const cs_tensor *t, const char *what)
{
    if (!t) return cs_fail(CS_ERR_ARGUMENT, "%s: expected a tensor, got NULL", what);
    if (t->released) return cs_fail(CS_ERR_RELEASED, "%s: the tensor was freed", what);
    if (t->device == CS_CUDA) return cs_cuda_ready();
    return CS_OK;
}

/* An expanded view (a dim of size > 1 and stride 0) reads one element in many places; writing
 * through it would write one address many times, racing between threads (PyTorch refuses it too). */
cs_status cs_check_writable(const cs_tensor *t, const char *what)
{
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1 && t->strides[d] == 0)
            return cs_fail(CS_ERR_ARGUMENT,
                           "%s: cannot write into an expanded view (dim %d of size %lld has stride 0, so its elements "
                           "share memory); write into a copy (clone()) instead", what, d + 1, (long long)t->shape[d]);
    return CS_OK;
}

cs_status cs_as_strided(cs_tensor **out, const cs_tensor *base, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t offset)
{
    cs_status st = cs_check_usable(base, "view");
    if (st) return st;
    int64_t n = 0;
    st = check_shape(ndim, shape, &n);
    if (st) return st;
    if (offset < 0) return cs_fail(CS_ERR_ARGUMENT, "view: negative offset %lld", (long long)offset);
    int64_t last = offset;
    for (int i = 0; i < ndim; i++) {
        if (strides[i] < 0) return cs_fail(CS_ERR_ARGUMENT, "view: negative stride in dim %d", i + 1);
        int64_t span;
        if (n > 0 && (__builtin_mul_overflow(shape[i] - 1, strides[i], &span) || __builtin_add_overflow(last, span, &last)))
            return cs_fail(CS_ERR_ARGUMENT, "view: the strides in dim %d reach past int64", i + 1);
    }
    int64_t capacity = (int64_t)(base->storage->bytes / cs_dtype_size(base->dtype));
    if (n > 0 && last >= capacity)
        return cs_fail(CS_ERR_ARGUMENT, "view: elements up to %lld lie outside the storage of %lld elements",
                       (long long)last, (long long)capacity);
    cs_tensor *t = handle_new(base->storage, base->dtype, base->device, ndim);
    if (!t) return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (tensor handle)");
    base->storage->refcount++;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    t->offset = offset;
    *out = t;
    return CS_OK;
}

void cs_tensor_free(cs_tensor *t)
{
    if (!t) return;
    cs_storage_release(t->storage);
    free(t);
}

cs_status cs_tensor_release(cs_tensor *t)
{
    if (!t) return cs_fail(CS_ERR_ARGUMENT, "free: expected a tensor, got NULL");
    if (!t->released) {
        cs_storage_release(t->storage);
        t->storage = NULL;
        t->released = 1;
    }
    return CS_OK;
}

int cs_tensor_ndim(const cs_tensor *t) { return t->ndim; }
int64_t cs_tensor_size(const cs_tensor *t, int d) { return d >= 0 && d < t->ndim ? t->shape[d] : -1; }
int64_t cs_tensor_stride(const cs_tensor *t, int d) { return d >= 0 && d < t->ndim ? t->strides[d] : -1; }
int64_t cs_tensor_offset(const cs_tensor *t) { return t->offset; }
int64_t cs_tensor_numel(const cs_tensor *t) { return cs_numel_of(t->ndim, t->shape); }
cs_dtype cs_tensor_dtype(const cs_tensor *t) { return t->dtype; }
cs_device cs_tensor_device(const cs_tensor *t) { return t->device; }
int cs_tensor_device_index(const cs_tensor *t) { return t->device == CS_CUDA ? t->device_index : -1; }

const char *cs_device_name(const cs_tensor *t, char *buf, size_t n)
{
    if (t->device == CS_CPU) snprintf(buf, n, "cpu");
    else snprintf(buf, n, "cuda:%d", t->device_index);
    return buf;
}

cs_status cs_check_same_device(const cs_tensor *t, const char *what, const cs_tensor *ref, const char *ref_name)
{
    if (t->device == ref->device && cs_tensor_device_index(t) == cs_tensor_device_index(ref)) return CS_OK;
    char a[32], b[32];
    return cs_fail(CS_ERR_ARGUMENT, "%s: expected a tensor on %s's device: %s is on %s, %s on %s", what, ref_name, what,
                   cs_device_name(t, a, sizeof a), ref_name, cs_device_name(ref, b, sizeof b));
}
int cs_tensor_is_released(const cs_tensor *t) { return t->released; }

int cs_tensor_is_contiguous(const cs_tensor *t)
{
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != expect) return 0;
        expect *= t->shape[i];
    }
    return 1;
}

void *cs_tensor_host_data(const cs_tensor *t)
{
    if (t->released || t->device != CS_CPU) return NULL;
    return t->storage->data;
}

void *cs_tensor_data(const cs_tensor *t)
{
    if (t->released) return NULL;
    return cs_tensor_ptr(t);
}

void *cs_tensor_ptr(const cs_tensor *t)
{
    if (!t->storage->data) return NULL;
    return (char *)t->storage->data + (size_t)t->offset * cs_dtype_size(t->dtype);
}

/* First and one-past-last byte a view can touch. */
static void byte_range(const cs_tensor *t, uintptr_t *lo, uintptr_t *hi)
{
    int64_t last = t->offset;
    for (int i = 0; i < t->ndim; i++) last += (t->shape[i] - 1) * t->strides[i];
    size_t es = cs_dtype_size(t->dtype);
    *lo = (uintptr_t)t->storage->data + (size_t)t->offset * es;
    *hi = (uintptr_t)t->storage->data + (size_t)(last + 1) * es;
}

/* Two views of one storage touch a common byte when some index of each lands there:
 *     sum_k wa_k i_k - sum_k wb_k j_k + (u - v) = start(b) - start(a)
 * with 0 <= i_k < a's sizes, 0 <= j_k < b's sizes (w: strides in bytes) and u, v the bytes within
 * an element. Interleaved views (one column and another, even and odd rows) have overlapping address
 * ranges but no such solution. Terms of one weight merge into one range; the search takes the
 * heaviest first and keeps only the values that leave the rest of the sum able to reach the
 * target, so the strided views met in practice settle in a few steps. Past a budget of steps it
 * answers "may overlap", which is never wrong for the callers. (Strides are never negative: views
 * and DLPack imports refuse them, so every term's weight is positive.) */
typedef struct overlap_term { int64_t w, lo, hi; } overlap_term;

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* 1 when sum t[k].w * z_k == target has a solution with t[k].lo <= z_k <= t[k].hi (or the budget
 * ran out); rest_lo[k] and rest_hi[k] bound the sum of the terms after k. */
static int overlap_reach(const overlap_term *t, int n, int64_t target, const int64_t *rest_lo,
                         const int64_t *rest_hi, int64_t *budget)
{
    if (n == 0) return target == 0;
    if (--*budget < 0) return 1;
    int64_t lo = ceil_div(target - rest_hi[0], t[0].w), hi = floor_div(target - rest_lo[0], t[0].w);
    if (lo < t[0].lo) lo = t[0].lo;
    if (hi > t[0].hi) hi = t[0].hi;
    for (int64_t z = lo; z <= hi; z++)
        if (overlap_reach(t + 1, n - 1, target - t[0].w * z, rest_lo + 1, rest_hi + 1, budget)) return 1;
    return 0;
}

static int share_bytes(const cs_tensor *a, const cs_tensor *b)
{
    overlap_term t[2 * CS_MAX_DIMS + 1];
    int n = 0;
    const int64_t ea = (int64_t)cs_dtype_size(a->dtype), eb = (int64_t)cs_dtype_size(b->dtype);
    const cs_tensor *v[2] = { a, b };
    for (int s = 0; s < 2; s++)
        for (int d = 0; d < v[s]->ndim; d++) {
            const int64_t w = v[s]->strides[d] * (s ? eb : ea), span = v[s]->shape[d] - 1;
            if (w == 0 || span == 0) continue;
            int k = 0;
            while (k < n && t[k].w != w) k++;
            if (k == n) t[n++] = (overlap_term){ w, 0, 0 };
            if (s) t[k].lo -= span;
            else t[k].hi += span;
        }
    t[n++] = (overlap_term){ 1, -(eb - 1), ea - 1 };
    for (int i = 1; i < n; i++) {   /* heaviest first */
        overlap_term x = t[i];
        int j = i - 1;
        while (j >= 0 && t[j].w < x.w) { t[j + 1] = t[j]; j--; }
        t[j + 1] = x;
    }
    int64_t rest_lo[2 * CS_MAX_DIMS + 1], rest_hi[2 * CS_MAX_DIMS + 1];
    int64_t lo = 0, hi = 0;
    for (int k = n - 1; k >= 0; k--) {
        rest_lo[k] = lo;
        rest_hi[k] = hi;
        lo += t[k].w * t[k].lo;
        hi += t[k].w * t[k].hi;
    }
    int64_t budget = 1 << 16;
    return overlap_reach(t, n, b->offset * eb - a->offset * ea, rest_lo, rest_hi, &budget);
}

int cs_tensor_overlap(const cs_tensor *a, const cs_tensor *b)
{
    if (!a->storage || !b->storage || a->storage != b->storage) return 0;
    if (cs_tensor_numel(a) == 0 || cs_tensor_numel(b) == 0) return 0;
    if (a->dtype == b->dtype && a->offset == b->offset && a->ndim == b->ndim &&
        !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) &&
        !memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim))
        return 1;
    uintptr_t alo, ahi, blo, bhi;
    byte_range(a, &alo, &ahi);
    byte_range(b, &blo, &bhi);
    if (!(alo < bhi && blo < ahi)) return 0;
    return share_bytes(a, b) ? 2 : 0;
}
