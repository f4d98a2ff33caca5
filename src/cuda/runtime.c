/* runtime.c - the CUDA side's host runtime: a context per GPU with the library's stream on it, error
 * mapping (a lost context stays lost), device memory from the stream-ordered pool (cudaMallocAsync,
 * kept cached with the release threshold at its maximum so the next op reuses it without a new
 * cudaMalloc), scan scratch and temporaries, device facts, copies between GPUs. src/no_cuda.c stands in for this file in a
 * build without CUDA. */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "internal.h"

/* One context per GPU, made on first use with that GPU current: the library's stream on it, its
 * pool kept cached, the scan scratch, the number of multiprocessors, and an event that orders copies
 * between GPUs. */
typedef struct gpu_ctx {
    int ready;
    cudaStream_t stream;
    cudaEvent_t order;         /* marks a point in stream for another GPU's stream to wait on */
    int multiprocessors;
    void *flag_buf, *word_buf, *value_buf;
    size_t flag_have, word_have, value_have;
    unsigned next_epoch;
} gpu_ctx;

static struct {
    pthread_once_t once;
    int available;
    int count;                 /* GPUs this process sees (CUDA_VISIBLE_DEVICES applied) */
    char reason[512];
    int lost;                  /* a sticky fault happened: the context is unusable */
    char lost_msg[512];
    pthread_mutex_t lock;      /* guards making contexts and enabling peer access */
    gpu_ctx gpu[CS_MAX_GPUS];
    signed char peer[CS_MAX_GPUS][CS_MAX_GPUS]; /* 0 not tried, 1 peer access on, -1 not possible */
} cuda = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static int current_gpu(void)
{
    int d = 0;
    if (cudaGetDevice(&d) != cudaSuccess) {
        cudaGetLastError();
        d = 0;
    }
    return d;
}

/* The context of GPU d, which must be current; made now when it is the first use. */
static cs_status ctx_ready(int d)
{
    gpu_ctx *c = &cuda.gpu[d];
    if (c->ready) return CS_OK;
    pthread_mutex_lock(&cuda.lock);
    cudaError_t e = cudaSuccess;
    if (!c->ready) {
        cudaMemPool_t pool;
        uint64_t keep = UINT64_MAX;
        e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->order, cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, d);
        if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        if (e == cudaSuccess) e = cudaDeviceGetAttribute(&c->multiprocessors, cudaDevAttrMultiProcessorCount, d);
        if (e == cudaSuccess) {
            c->next_epoch = 1;
            c->ready = 1;
        }
    }
    pthread_mutex_unlock(&cuda.lock);
    if (e == cudaSuccess) return CS_OK;
    cudaGetLastError();
    return cs_fail(CS_ERR_CUDA, "cuda:%d: setting up the device failed: %s", d, cudaGetErrorString(e));
}

static gpu_ctx *current_ctx(void)
{
    int d = current_gpu();
    if (d < 0 || d >= CS_MAX_GPUS) d = 0;
    if (!cuda.gpu[d].ready) ctx_ready(d);
    return &cuda.gpu[d];
}

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
    /* GPU 0 is set up here so that an unusable device says so at once */
    const int prev = current_gpu();
    e = cudaSetDevice(0);
    if (e == cudaSuccess && ctx_ready(0) != CS_OK) e = cudaErrorDevicesUnavailable;
    if (e != cudaSuccess) {
        snprintf(cuda.reason, sizeof cuda.reason, "CUDA device unusable (%s)",
                 e == cudaErrorDevicesUnavailable ? cs_last_error() : cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    if (prev != 0) cudaSetDevice(prev);
    cuda.count = n < CS_MAX_GPUS ? n : CS_MAX_GPUS;
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

int cs_device_count(void)
{
    return cs_cuda_available() ? cuda.count : 0;
}

static cs_status usable(void)
{
    if (!cs_cuda_available())
        return cs_fail(CS_ERR_NO_DEVICE, "CUDA is not available: %s", cuda.reason);
    if (cuda.lost)
        return cs_fail(CS_ERR_CUDA, "the CUDA context was lost earlier (%s); restart the process", cuda.lost_msg);
    return CS_OK;
}

cs_status cs_cuda_ready(void)
{
    cs_status st = usable();
    if (st) return st;
    const int d = current_gpu();
    if (d < 0 || d >= cuda.count) return cs_fail(CS_ERR_NO_DEVICE, "the current GPU %d is not one cuscan can use", d);
    return ctx_ready(d);
}

static cs_status check_index(int index)
{
    if (index >= 0 && index < cuda.count) return CS_OK;
    if (cuda.count == 1) return cs_fail(CS_ERR_ARGUMENT, "device: cuda:%d does not exist (1 GPU: cuda:0)", index);
    return cs_fail(CS_ERR_ARGUMENT, "device: cuda:%d does not exist (%d GPUs: cuda:0 to cuda:%d)", index, cuda.count,
                   cuda.count - 1);
}

cs_status cs_cuda_set_device(int index)
{
    cs_status st = usable();
    if (st || (st = check_index(index))) return st;
    if ((st = cs_cuda_check(cudaSetDevice(index), "cudaSetDevice"))) return st;
    return ctx_ready(index);
}

int cs_cuda_get_device(void)
{
    return cs_cuda_available() ? current_gpu() : -1;
}

cs_status cs_gpu_enter(int index, int *prev)
{
    *prev = -1;
    if (index < 0) return CS_OK;
    cs_status st = usable();
    if (st || (st = check_index(index))) return st;
    const int cur = current_gpu();
    if (cur != index && (st = cs_cuda_check(cudaSetDevice(index), "cudaSetDevice"))) return st;
    *prev = cur;
    return ctx_ready(index);
}

void cs_gpu_leave(int prev)
{
    if (prev >= 0 && current_gpu() != prev) cudaSetDevice(prev);
}

void *cs_cuda_stream_handle(void) { return (void *)current_ctx()->stream; }

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
    return cs_cuda_check(cudaStreamSynchronize(current_ctx()->stream), "synchronize");
}

cs_status cs_device_info(cs_device_properties *p)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    struct cudaDeviceProp prop;
    st = cs_cuda_check(cudaGetDeviceProperties(&prop, current_gpu()), "cudaGetDeviceProperties");
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
    if ((st = cs_cuda_check(cudaStreamSynchronize(current_ctx()->stream), "synchronize"))) return st;
    if ((st = cs_cuda_check(cudaDeviceGetDefaultMemPool(&pool, current_gpu()), "cudaDeviceGetDefaultMemPool"))) return st;
    return cs_cuda_check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
}

cs_status cs_cuda_malloc(void **data, size_t bytes)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    cudaStream_t stream = current_ctx()->stream;
    cudaError_t e = cudaMallocAsync(data, bytes, stream);
    if (e == cudaErrorMemoryAllocation) {
        /* the pool may be holding freed blocks of other sizes: hand them back and retry */
        cudaGetLastError();
        if (cs_cuda_trim() == CS_OK) e = cudaMallocAsync(data, bytes, stream);
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

void cs_cuda_free(void *data, int gpu)
{
    int prev;
    if (!data || cuda.lost || cs_gpu_enter(gpu, &prev)) return;
    cudaError_t e = cudaFreeAsync(data, cuda.gpu[gpu].stream);
    if (e != cudaSuccess) cs_cuda_check(e, "cudaFreeAsync");
    cs_gpu_leave(prev);
}

/* Scratch for the scan kernels, owned by the library and grown on demand: a flags buffer (the work
 * queue's words, then one flag per unit) that only ever holds flags, a words buffer (per unit one
 * 64-bit word holding a state and a 4-byte value together) and a values buffer. States carry an
 * epoch that changes with every launch, so states of earlier launches read as empty and nothing is
 * cleared between launches; flags and words are zeroed when made and when the epoch wraps. They
 * are apart because half of a word is a value: read as a flag by a later launch, a value could pass
 * for that launch's epoch. The stream orders every reuse. */
static cs_status scratch_grow(cudaStream_t s, void **buf, size_t *have, size_t need, size_t least)
{
    if (need <= *have) return CS_OK;
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
    gpu_ctx *c = current_ctx();
    cudaStream_t s = c->stream;
    const size_t flag_had = c->flag_have, word_had = c->word_have;
    cs_status st = scratch_grow(s, &c->flag_buf, &c->flag_have, (nflags + CS_QUEUE_WORDS) * sizeof(unsigned), 4096);
    if (!st && nwords) st = scratch_grow(s, &c->word_buf, &c->word_have, nwords * sizeof(unsigned long long), 4096);
    if (!st) st = scratch_grow(s, &c->value_buf, &c->value_have, value_bytes, 0);
    if (st) {
        c->next_epoch = 1u << 30; /* a buffer may have been remade uncleared: clear all on the next call */
        return st;
    }
    /* epochs start again with a new flags buffer or when they would overflow: every state is cleared;
     * a new words buffer alone is cleared and the epochs go on */
    const int restart = c->flag_have != flag_had || c->next_epoch >= (1u << 30);
    if (restart) st = cs_cuda_check(cudaMemsetAsync(c->flag_buf, 0, c->flag_have, s), "scan scratch reset");
    if (!st && c->word_buf && (restart || c->word_have != word_had))
        st = cs_cuda_check(cudaMemsetAsync(c->word_buf, 0, c->word_have, s), "scan scratch reset");
    if (st) return st;
    if (restart) c->next_epoch = 1;
    *flags = c->flag_buf;
    *words = c->word_buf;
    *values = c->value_buf;
    *epoch = c->next_epoch++;
    return CS_OK;
}

/* Temporary device memory for one op (stream-ordered: free it right after the launches using it). */
cs_status cs_cuda_temp(void **ptr, size_t bytes)
{
    return cs_cuda_check(cudaMallocAsync(ptr, bytes ? bytes : 1, current_ctx()->stream), "temporary allocation");
}

void cs_cuda_temp_free(void *ptr)
{
    if (ptr && !cuda.lost) cudaFreeAsync(ptr, current_ctx()->stream);
}

int cs_cuda_multiprocessors(void)
{
    if (!cs_cuda_available()) return 1;
    const int n = current_ctx()->multiprocessors;
    return n > 0 ? n : 1;
}

/* ---- copies between GPUs ---- */

/* Peer access from GPU `from` to GPU `to`'s memory, turned on the first time it is asked for where
 * the GPUs allow it; from must be current. Without it cudaMemcpyPeerAsync goes through the host. */
static void peer_access(int from, int to)
{
    if (cuda.peer[from][to]) return;
    pthread_mutex_lock(&cuda.lock);
    if (!cuda.peer[from][to]) {
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess) can = 0;
        if (can) {
            cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
            can = e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled;
        }
        cudaGetLastError();
        cuda.peer[from][to] = can ? 1 : -1;
    }
    pthread_mutex_unlock(&cuda.lock);
}

cs_status cs_cuda_copy_peer(void *dst, int dst_gpu, const void *src, int src_gpu, size_t bytes)
{
    int prev, ignored;
    cs_status st = cs_gpu_enter(src_gpu, &prev);
    if (st) return st;
    gpu_ctx *sc = &cuda.gpu[src_gpu], *dc = &cuda.gpu[dst_gpu];
    /* the copy runs on dst's stream after the work queued on src's (which wrote src); then src's
     * stream waits for the copy, so that a later free or write of src on it comes after */
    peer_access(src_gpu, dst_gpu);
    st = cs_cuda_check(cudaEventRecord(sc->order, sc->stream), "cudaEventRecord");
    if (!st) st = cs_gpu_enter(dst_gpu, &ignored);
    if (!st) {
        peer_access(dst_gpu, src_gpu);
        st = cs_cuda_check(cudaStreamWaitEvent(dc->stream, sc->order, 0), "cudaStreamWaitEvent");
    }
    if (!st) st = cs_cuda_check(cudaMemcpyPeerAsync(dst, dst_gpu, src, src_gpu, bytes, dc->stream), "copy between GPUs");
    if (!st) st = cs_cuda_check(cudaEventRecord(dc->order, dc->stream), "cudaEventRecord");
    if (!st) st = cs_cuda_check(cudaStreamWaitEvent(sc->stream, dc->order, 0), "cudaStreamWaitEvent");
    cs_gpu_leave(prev);
    return st;
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
    return cs_cuda_check(cudaEventRecord((cudaEvent_t)ev, current_ctx()->stream), "cudaEventRecord");
}

cs_status cs_cuda_event_elapsed(void *start, void *end, double *ms)
{
    float f = 0.0f;
    cs_status st = cs_cuda_check(cudaEventSynchronize((cudaEvent_t)end), "cudaEventSynchronize");
    if (!st) st = cs_cuda_check(cudaEventElapsedTime(&f, (cudaEvent_t)start, (cudaEvent_t)end), "cudaEventElapsedTime");
    *ms = f;
    return st;
}
