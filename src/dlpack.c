/* dlpack.c - handing tensors to other libraries and taking theirs, without a copy, through DLPack's
 * DLManagedTensor (declared in cuscan.h from the DLPack specification). */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* ---- export: a view of the tensor, kept alive by the managed tensor until its deleter runs ---- */
typedef struct exported {
    DLManagedTensor managed;
    cs_tensor *view;     /* holds a storage reference */
    int64_t shape[CS_MAX_DIMS];
    int64_t strides[CS_MAX_DIMS];
} exported;

static void delete_exported(DLManagedTensor *self)
{
    exported *e = self->manager_ctx;
    cs_tensor_free(e->view);
    free(e);
}

static const DLDataType DL_DTYPE[] = {
    [CS_FLOAT32] = { kDLFloat, 32, 1 }, [CS_FLOAT64] = { kDLFloat, 64, 1 }, [CS_INT32] = { kDLInt, 32, 1 },
    [CS_INT64] = { kDLInt, 64, 1 }, [CS_BOOL] = { kDLBool, 8, 1 }, [CS_FLOAT16] = { kDLFloat, 16, 1 },
    [CS_BFLOAT16] = { kDLBfloat, 16, 1 },
};

/* Waits for the work queued on GPU gpu. */
static cs_status synchronize_gpu(int gpu)
{
    int prev;
    cs_status st = cs_gpu_enter(gpu, &prev);
    if (st) return st;
    st = cs_synchronize();
    cs_gpu_leave(prev);
    return st;
}

cs_status cs_to_dlpack(DLManagedTensor **out, const cs_tensor *t)
{
    cs_status st = cs_check_usable(t, "x");
    if (st) return st;
    /* the consumer may read on another stream (or the host): queued writes must be done */
    if (t->device == CS_CUDA && (st = synchronize_gpu(t->device_index))) return st;
    exported *e = calloc(1, sizeof *e);
    if (!e) return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (DLPack tensor)");
    if ((st = cs_as_strided(&e->view, t, t->ndim, t->shape, t->strides, t->offset))) {
        free(e);
        return st;
    }
    memcpy(e->shape, t->shape, sizeof e->shape);
    memcpy(e->strides, t->strides, sizeof e->strides);
    DLTensor *d = &e->managed.dl_tensor;
    d->data = cs_tensor_ptr(t);
    d->device.device_type = t->device == CS_CUDA ? kDLCUDA : kDLCPU;
    d->device.device_id = t->device == CS_CUDA ? t->device_index : 0;
    d->ndim = t->ndim;
    d->dtype = DL_DTYPE[t->dtype];
    d->shape = e->shape;
    d->strides = e->strides;
    d->byte_offset = 0;
    e->managed.manager_ctx = e;
    e->managed.deleter = delete_exported;
    *out = &e->managed;
    return CS_OK;
}

/* ---- import: a storage whose release hands the managed tensor back to its deleter ---- */
typedef struct imported {
    DLManagedTensor *managed;
    cs_device device;
    int gpu;
} imported;

static void release_imported(void *ctx)
{
    imported *i = ctx;
    /* kernels queued on cuscan's stream may still read the memory */
    if (i->device == CS_CUDA) synchronize_gpu(i->gpu);
    if (i->managed->deleter) i->managed->deleter(i->managed);
    free(i);
}

static cs_status dtype_of(DLDataType t, cs_dtype *out)
{
    const int lanes = t.lanes;
    if (lanes == 1) {
        for (int d = 0; d < CS_NUM_DTYPES; d++)
            if (DL_DTYPE[d].code == t.code && DL_DTYPE[d].bits == t.bits) {
                *out = (cs_dtype)d;
                return CS_OK;
            }
    }
    static const char *const codes[] = { "int", "uint", "float", "opaque handle ", "bfloat", "complex", "bool" };
    if (t.code >= sizeof codes / sizeof codes[0])
        return cs_fail(CS_ERR_UNSUPPORTED, "dtype: DLPack type code %d of %d bits is not supported", (int)t.code,
                       (int)t.bits);
    return cs_fail(CS_ERR_UNSUPPORTED,
                   "dtype: %s%d%s is not supported (float16, bfloat16, float32, float64, int32, int64 and bool are)",
                   codes[t.code], (int)t.bits, lanes != 1 ? " with several lanes" : "");
}

cs_status cs_from_dlpack(cs_tensor **out, DLManagedTensor *m)
{
    if (!m) return cs_fail(CS_ERR_ARGUMENT, "ptr: NULL DLManagedTensor");
    const DLTensor *d = &m->dl_tensor;
    cs_device device;
    switch (d->device.device_type) {
    case kDLCPU: case kDLCUDAHost: device = CS_CPU; break;
    case kDLCUDA:
        if (d->device.device_id < 0 || (cs_cuda_available() && d->device.device_id >= cs_device_count()))
            return cs_fail(CS_ERR_UNSUPPORTED, "device: CUDA device %d is not one of this process's %d GPUs",
                           (int)d->device.device_id, cs_device_count());
        device = CS_CUDA;
        break;
    default:
        return cs_fail(CS_ERR_UNSUPPORTED, "device: DLPack device type %d is not supported (CPU, CUDA host and CUDA "
                                           "memory are)", (int)d->device.device_type);
    }
    cs_dtype dtype = CS_FLOAT32;
    cs_status st = dtype_of(d->dtype, &dtype);
    if (st) return st;
    if (d->ndim < 0 || d->ndim > CS_MAX_DIMS)
        return cs_fail(CS_ERR_UNSUPPORTED, "ndim: %d dims (at most %d are supported)", (int)d->ndim, CS_MAX_DIMS);
    if (d->ndim > 0 && !d->shape) return cs_fail(CS_ERR_ARGUMENT, "shape: NULL for %d dims", (int)d->ndim);
    int64_t strides[CS_MAX_DIMS];
    int64_t numel = 1, extent = 1; /* elements, and one past the last one addressed */
    for (int k = d->ndim - 1; k >= 0; k--) {
        const int64_t n = d->shape[k];
        if (n < 0) return cs_fail(CS_ERR_ARGUMENT, "shape: size %lld of dim %d is negative", (long long)n, k + 1);
        strides[k] = d->strides ? d->strides[k] : (k == d->ndim - 1 ? 1 : strides[k + 1] * d->shape[k + 1]);
        if (strides[k] < 0)
            return cs_fail(CS_ERR_UNSUPPORTED, "strides: dim %d has a negative stride (cuscan views need strides >= 0)",
                           k + 1);
        if (n > 0 && numel > INT64_MAX / n) return cs_fail(CS_ERR_ARGUMENT, "shape: the element count overflows int64");
        numel *= n;
    }
    if (numel == 0) extent = 0;
    for (int k = 0; k < d->ndim && numel > 0; k++) {
        if (strides[k] > 0 && d->shape[k] - 1 > (INT64_MAX - extent) / strides[k])
            return cs_fail(CS_ERR_ARGUMENT, "strides: the span of the tensor overflows int64");
        extent += (d->shape[k] - 1) * strides[k];
    }
    const size_t esize = cs_dtype_size(dtype);
    if ((uint64_t)extent > SIZE_MAX / esize) return cs_fail(CS_ERR_ARGUMENT, "shape: the tensor is too large");
    imported *i = calloc(1, sizeof *i);
    if (!i) return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (DLPack tensor)");
    i->managed = m;
    i->device = device;
    i->gpu = device == CS_CUDA ? (int)d->device.device_id : -1;
    void *data = d->data ? (char *)d->data + d->byte_offset : NULL;
    int prev; /* the tensor belongs to the GPU that holds the memory */
    if ((st = cs_gpu_enter(i->gpu, &prev))) {
        free(i);
        return st;
    }
    st = cs_from_blob(out, data, (size_t)extent * esize, device, dtype, (int)d->ndim, d->shape, strides, 0,
                      release_imported, i);
    cs_gpu_leave(prev);
    if (st) free(i);
    return st;
}
