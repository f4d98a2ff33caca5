/* runtime.c - the CUDA side's host runtime: the device context and the library's stream, error
 * mapping (a lost context stays lost), device memory from the stream-ordered pool (cudaMallocAsync,
 * kept cached with the release threshold at its maximum so the next op reuses it without a new
 * cudaMalloc), scan scratch and temporaries, device facts. src/no_cuda.c stands in for this file in a
 * build without CUDA. */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "internal.h"

static struct {
    pthread_once_t once;
    int available;
    char reason[512];
    int lost;                  /* a sticky fault happened: the context is unusable */
    char lost_msg[512];
    cudaStream_t stream;
} cuda = { .once = PTHREAD_ONCE_INIT };

static void cuda_probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    /* a machine without a GPU (no driver device node) reports a missing or old driver, or fails to
     * initialise: say what the user has; the driver's own words only where a device is there but
     * cannot be used */
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0) || (e != cudaSuccess && !cs_gpu_device_node())) {
        snprintf(cuda.reason, sizeof cuda.reason, "no CUDA device found");
        cudaGetLastError();
        return;
    }
    if (e != cudaSuccess) {
        snprintf(cuda.reason, sizeof cuda.reason, "no CUDA device usable (%s)", cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    e = cudaSetDevice(0);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&cuda.stream, cudaStreamNonBlocking);
    cudaMemPool_t pool;
    if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, 0);
    if (e == cudaSuccess) {
        uint64_t keep = UINT64_MAX;
        e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    if (e != cudaSuccess) {
        snprintf(cuda.reason, sizeof cuda.reason, "CUDA device unusable (%s)", cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    cuda.available = 1;
}

int cs_cuda_available(void)
{
    pthread_once(&cuda.once, cuda_probe);
    return cuda.available;
}

const char *cs_cuda_unavailable_reason(void)
{
    pthread_once(&cuda.once, cuda_probe);
    return cuda.available ? "" : cuda.reason;
}

cs_status cs_cuda_ready(void)
{
    if (!cs_cuda_available())
        return cs_fail(CS_ERR_NO_DEVICE, "CUDA is not available: %s", cuda.reason);
    if (cuda.lost)
        return cs_fail(CS_ERR_CUDA, "the CUDA context was lost earlier (%s); restart the process", cuda.lost_msg);
    return CS_OK;
}

void *cs_cuda_stream_handle(void) { return (void *)cuda.stream; }

cs_status cs_cuda_check(int err, const char *what)
{
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess) return CS_OK;
    const char *msg = cudaGetErrorString(e);
    switch (e) {
    case cudaErrorMemoryAllocation:
        cudaGetLastError();
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "%s: CUDA out of memory (%s)", what, msg);
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress: case cudaErrorHardwareStackError: case cudaErrorInvalidPc:
    case cudaErrorAssert: case cudaErrorECCUncorrectable: case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed: case cudaErrorDevicesUnavailable: case cudaErrorUnknown:
        if (!cuda.lost) {
            cuda.lost = 1;
            snprintf(cuda.lost_msg, sizeof cuda.lost_msg, "%s: %s", what, msg);
        }
        return cs_fail(CS_ERR_CUDA, "%s failed: %s; the CUDA context is lost, restart the process", what, msg);
    default:
        cudaGetLastError();
        return cs_fail(CS_ERR_CUDA, "%s failed: %s", what, msg);
    }
}

cs_status cs_synchronize(void)
{
    if (!cs_cuda_available()) return CS_OK;
    cs_status st = cs_cuda_ready();
    if (st) return st;
    return cs_cuda_check(cudaStreamSynchronize(cuda.stream), "synchronize");
}

cs_status cs_device_info(cs_device_properties *p)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    struct cudaDeviceProp prop;
    st = cs_cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    if (st) return st;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", prop.name);
    p->total_memory = (int64_t)prop.totalGlobalMem;
    p->major = prop.major;
    p->minor = prop.minor;
    p->multiprocessors = prop.multiProcessorCount;
    p->l2_cache_bytes = prop.l2CacheSize;
    cudaDriverGetVersion(&p->driver_version);
    cudaRuntimeGetVersion(&p->runtime_version);
    return CS_OK;
}

cs_status cs_cuda_memory_info(int64_t *free_bytes, int64_t *total_bytes)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    size_t f = 0, t = 0;
    st = cs_cuda_check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    *free_bytes = (int64_t)f;
    *total_bytes = (int64_t)t;
    return st;
}

cs_status cs_cuda_trim(void)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    cudaMemPool_t pool;
    if ((st = cs_cuda_check(cudaStreamSynchronize(cuda.stream), "synchronize"))) return st;
    if ((st = cs_cuda_check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool"))) return st;
    return cs_cuda_check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
}

cs_status cs_cuda_malloc(void **data, size_t bytes)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    cudaError_t e = cudaMallocAsync(data, bytes, cuda.stream);
    if (e == cudaErrorMemoryAllocation) {
        /* the pool may be holding freed blocks of other sizes: hand them back and retry */
        cudaGetLastError();
        if (cs_cuda_trim() == CS_OK) e = cudaMallocAsync(data, bytes, cuda.stream);
    }
    if (e == cudaSuccess) return CS_OK;
    size_t f = 0, t = 0;
    cudaGetLastError();
    cudaMemGetInfo(&f, &t);
    *data = NULL;
    if (e == cudaErrorMemoryAllocation)
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "CUDA out of memory: asked for %zu bytes, %zu free of %zu", bytes, f, t);
    return cs_cuda_check(e, "cudaMallocAsync");
}

void cs_cuda_free(void *data)
{
    if (!data || cuda.lost) return;
    cudaError_t e = cudaFreeAsync(data, cuda.stream);
    if (e != cudaSuccess) cs_cuda_check(e, "cudaFreeAsync");
}

/* Scratch for the scan kernels, owned by the library and grown on demand: a flags buffer (the work
 * queue's words, then one flag per unit) that only ever holds flags, a words buffer (per unit one
 * 64-bit word holding a state and a 4-byte value together) and a values buffer. States carry an
 * epoch that changes with every launch, so states of earlier launches read as empty and nothing is
 * cleared between launches; flags and words are zeroed when made and when the epoch wraps. They
 * are apart because half of a word is a value: read as a flag by a later launch, a value could pass
 * for that launch's epoch. The stream orders every reuse. */
static cs_status scratch_grow(void **buf, size_t *have, size_t need, size_t least)
{
    if (need <= *have) return CS_OK;
    cudaStream_t s = cuda.stream;
    if (*buf) cudaFreeAsync(*buf, s);
    *buf = NULL;
    *have = 0;
    size_t want = need < least ? least : need + need / 2;
    cs_status st = cs_cuda_check(cudaMallocAsync(buf, want, s), "scan scratch");
    if (st) return st;
    *have = want;
    return CS_OK;
}

cs_status cs_cuda_lookback_scratch(unsigned **flags, size_t nflags, unsigned long long **words, size_t nwords,
                                   void **values, size_t value_bytes, unsigned *epoch)
{
    static void *flag_buf, *word_buf, *value_buf;
    static size_t flag_have, word_have, value_have;
    static unsigned next_epoch = 1;
    const size_t flag_had = flag_have, word_had = word_have;
    cs_status st = scratch_grow(&flag_buf, &flag_have, (nflags + CS_QUEUE_WORDS) * sizeof(unsigned), 4096);
    if (!st && nwords) st = scratch_grow(&word_buf, &word_have, nwords * sizeof(unsigned long long), 4096);
    if (!st) st = scratch_grow(&value_buf, &value_have, value_bytes, 0);
    if (st) {
        next_epoch = 1u << 30; /* a buffer may have been remade uncleared: clear all on the next call */
        return st;
    }
    /* epochs start again with a new flags buffer or when they would overflow: every state is cleared;
     * a new words buffer alone is cleared and the epochs go on */
    cudaStream_t s = cuda.stream;
    const int restart = flag_have != flag_had || next_epoch >= (1u << 30);
    if (restart) st = cs_cuda_check(cudaMemsetAsync(flag_buf, 0, flag_have, s), "scan scratch reset");
    if (!st && word_buf && (restart || word_have != word_had))
        st = cs_cuda_check(cudaMemsetAsync(word_buf, 0, word_have, s), "scan scratch reset");
    if (st) return st;
    if (restart) next_epoch = 1;
    *flags = flag_buf;
    *words = word_buf;
    *values = value_buf;
    *epoch = next_epoch++;
    return CS_OK;
}

/* Temporary device memory for one op (stream-ordered: free it right after the launches using it). */
cs_status cs_cuda_temp(void **ptr, size_t bytes)
{
    return cs_cuda_check(cudaMallocAsync(ptr, bytes ? bytes : 1, cuda.stream), "temporary allocation");
}

void cs_cuda_temp_free(void *ptr)
{
    if (ptr && !cuda.lost) cudaFreeAsync(ptr, cuda.stream);
}

int cs_cuda_multiprocessors(void)
{
    static int n;
    if (!n && cs_cuda_available() && cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
        cudaGetLastError();
        n = 0;
    }
    return n > 0 ? n : 1;
}

/* ---- events: CUDA events on the library's stream ---- */
cs_status cs_cuda_event_create(void **ev)
{
    cudaEvent_t e = NULL;
    cs_status st = cs_cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    *ev = e;
    return st;
}

void cs_cuda_event_free(void *ev)
{
    if (ev) cudaEventDestroy((cudaEvent_t)ev);
}

cs_status cs_cuda_event_record(void *ev)
{
    return cs_cuda_check(cudaEventRecord((cudaEvent_t)ev, cuda.stream), "cudaEventRecord");
}

cs_status cs_cuda_event_elapsed(void *start, void *end, double *ms)
{
    float f = 0.0f;
    cs_status st = cs_cuda_check(cudaEventSynchronize((cudaEvent_t)end), "cudaEventSynchronize");
    if (!st) st = cs_cuda_check(cudaEventElapsedTime(&f, (cudaEvent_t)start, (cudaEvent_t)end), "cudaEventElapsedTime");
    *ms = f;
    return st;
}
