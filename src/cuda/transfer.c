/* transfer.c - copies on the device, between GPUs and between host and device. Host transfers go
 * through pinned staging buffers (a pair per GPU, made on its first transfer): the host copies one
 * chunk into a pinned buffer (with all cores) while the DMA engine moves the previous one, so large
 * transfers run at the link's speed without pinning the user's memory. */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "internal.h"

cs_status cs_cuda_copy_device(void *dst, const void *src, size_t bytes)
{
    return cs_cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)cs_cuda_stream_handle()),
                         "device copy");
}

enum { STAGE_BYTES = 32 << 20, NSTAGES = 2, SMALL_BYTES = 1 << 20 };

static void *stages[CS_MAX_GPUS][NSTAGES];
static cudaEvent_t stages_done[CS_MAX_GPUS][NSTAGES];

/* The staging buffers of GPU gpu, which is current. */
static cs_status stages_ready(int gpu, void ***stage_out, cudaEvent_t **done_out)
{
    void **stage = stages[gpu];
    cudaEvent_t *stage_done = stages_done[gpu];
    *stage_out = stage;
    *done_out = stage_done;
    if (stage[0]) return CS_OK;
    for (int i = 0; i < NSTAGES; i++) {
        cs_status st = cs_cuda_check(cudaHostAlloc(&stage[i], STAGE_BYTES, cudaHostAllocDefault), "pinned staging");
        if (!st) st = cs_cuda_check(cudaEventCreateWithFlags(&stage_done[i], cudaEventDisableTiming), "cudaEventCreate");
        if (st) {
            for (int j = 0; j <= i; j++) {
                if (stage[j]) cudaFreeHost(stage[j]);
                stage[j] = NULL;
            }
            return st;
        }
    }
    return CS_OK;
}

static void parallel_memcpy(void *dst, const void *src, size_t n)
{
    const size_t piece = 1 << 20;
    const int64_t pieces = (int64_t)((n + piece - 1) / piece);
#pragma omp parallel for schedule(static) if (pieces > 1)
    for (int64_t i = 0; i < pieces; i++) {
        size_t off = (size_t)i * piece;
        memcpy((char *)dst + off, (const char *)src + off, n - off < piece ? n - off : piece);
    }
}

static cs_status transfer_host(cs_tensor *dst, const cs_tensor *src, int gpu, size_t bytes);

cs_status cs_transfer_contiguous(cs_tensor *dst, const cs_tensor *src)
{
    size_t bytes = (size_t)cs_tensor_numel(src) * cs_dtype_size(src->dtype);
    if (dst->device == CS_CUDA && src->device == CS_CUDA)
        return cs_cuda_copy_peer(cs_tensor_ptr(dst), dst->device_index, cs_tensor_ptr(src), src->device_index, bytes);
    const int gpu = dst->device == CS_CUDA ? dst->device_index : src->device_index;
    int prev;
    cs_status st = cs_gpu_enter(gpu, &prev);
    if (st) return st;
    st = transfer_host(dst, src, gpu, bytes);
    cs_gpu_leave(prev);
    return st;
}

/* Between the host and GPU gpu, which is current. */
static cs_status transfer_host(cs_tensor *dst, const cs_tensor *src, int gpu, size_t bytes)
{
    cs_status st;
    cudaStream_t s = (cudaStream_t)cs_cuda_stream_handle();
    char *d = cs_tensor_ptr(dst);
    const char *h = cs_tensor_ptr(src);
    int to_device = dst->device == CS_CUDA;
    if (bytes <= SMALL_BYTES) {
        st = cs_cuda_check(cudaMemcpyAsync(d, h, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s),
                           "cudaMemcpyAsync");
        if (!st && !to_device) st = cs_cuda_check(cudaStreamSynchronize(s), "device to host copy");
        return st;
    }
    void **stage;
    cudaEvent_t *stage_done;
    if ((st = stages_ready(gpu, &stage, &stage_done))) return st;
    size_t nchunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
    if (to_device) {
        for (size_t i = 0; i < nchunks; i++) {
            int b = (int)(i % NSTAGES);
            size_t off = i * STAGE_BYTES, n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
            if ((st = cs_cuda_check(cudaEventSynchronize(stage_done[b]), "staging wait"))) return st;
            parallel_memcpy(stage[b], h + off, n);
            if ((st = cs_cuda_check(cudaMemcpyAsync(d + off, stage[b], n, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync")))
                return st;
            if ((st = cs_cuda_check(cudaEventRecord(stage_done[b], s), "cudaEventRecord"))) return st;
        }
        return CS_OK;
    }
    /* device to host: keep NSTAGES chunks in flight ahead of the host copy */
    char *hd = cs_tensor_ptr(dst);
    const char *ds = cs_tensor_ptr(src);
    for (size_t i = 0; i < nchunks + NSTAGES; i++) {
        if (i >= NSTAGES) {
            size_t j = i - NSTAGES;
            if (j >= nchunks) continue;
            int b = (int)(j % NSTAGES);
            size_t off = j * STAGE_BYTES, n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
            if ((st = cs_cuda_check(cudaEventSynchronize(stage_done[b]), "device to host copy"))) return st;
            parallel_memcpy(hd + off, stage[b], n);
        }
        if (i < nchunks) {
            int b = (int)(i % NSTAGES);
            size_t off = i * STAGE_BYTES, n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
            if ((st = cs_cuda_check(cudaMemcpyAsync(stage[b], ds + off, n, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync")))
                return st;
            if ((st = cs_cuda_check(cudaEventRecord(stage_done[b], s), "cudaEventRecord"))) return st;
        }
    }
    return CS_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

cs_status cs_host_link_bandwidth(int64_t bytes, double *h2d, double *d2h)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    if (bytes <= 0) return cs_fail(CS_ERR_ARGUMENT, "bytes: expected a positive count");
    cudaStream_t s = (cudaStream_t)cs_cuda_stream_handle();
    void *host = NULL, *dev = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if ((st = cs_cuda_check(cudaHostAlloc(&host, (size_t)bytes, cudaHostAllocDefault), "pinned buffer"))) return st;
    if ((st = cs_cuda_check(cudaMallocAsync(&dev, (size_t)bytes, s), "device buffer"))) goto done;
    if ((st = cs_cuda_check(cudaEventCreate(&e0), "cudaEventCreate"))) goto done;
    if ((st = cs_cuda_check(cudaEventCreate(&e1), "cudaEventCreate"))) goto done;
    memset(host, 1, (size_t)bytes);
    for (int dir = 0; dir < 2; dir++) {
        double t[5];
        for (int i = 0; i < 6; i++) {
            cudaEventRecord(e0, s);
            if (dir == 0) cudaMemcpyAsync(dev, host, (size_t)bytes, cudaMemcpyHostToDevice, s);
            else cudaMemcpyAsync(host, dev, (size_t)bytes, cudaMemcpyDeviceToHost, s);
            cudaEventRecord(e1, s);
            float ms = 0;
            if ((st = cs_cuda_check(cudaEventSynchronize(e1), "link copy"))) goto done;
            cudaEventElapsedTime(&ms, e0, e1);
            if (i > 0) t[i - 1] = ms;
        }
        qsort(t, 5, sizeof t[0], cmp_double);
        *(dir == 0 ? h2d : d2h) = (double)bytes / (t[2] * 1e6);
    }
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (dev) cudaFreeAsync(dev, s);
    cudaStreamSynchronize(s);
    cudaFreeHost(host);
    return st;
}
