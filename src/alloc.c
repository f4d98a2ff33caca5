/* alloc.c - storage on the host and on the CUDA device, the library's CUDA stream, and the
 * bookkeeping of bytes held. Device memory comes from the stream-ordered pool (cudaMallocAsync),
 * kept cached (release threshold at its maximum) so that the next op reuses it without a new
 * cudaMalloc. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h"
#if CS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static _Atomic int64_t held_bytes[2];

/* ---- large host blocks kept for reuse ----
 * A fresh page costs a fault and a clear by the kernel: x:cpu() of 1 GiB into new pages ran at about
 * half the host link's speed, bound by the host's memory bandwidth, and at the link's speed into
 * pages already mapped (bench/NOTES.md). So freed host blocks of 8 MiB and more are kept and handed
 * to the next request of nearly the same size, and a loop that makes host tensors of one size keeps
 * reusing its pages. At most HOST_CACHE_SLOTS blocks and 1/16 of physical memory are kept;
 * cs_memory_trim(CS_CPU) and a failed allocation give them back. Off under AddressSanitizer, so
 * that every use after free is still caught. */
enum { HOST_CACHE_SLOTS = 8 };
#define HUGE_BYTES ((size_t)2 << 20)
#define HOST_CACHE_MIN (4 * HUGE_BYTES)
#if defined(__SANITIZE_ADDRESS__)
#define HOST_CACHE_ON 0
#else
#define HOST_CACHE_ON 1
#endif
static struct {
    void *data;
    size_t bytes;
} host_cache[HOST_CACHE_SLOTS];
static size_t host_cached;
static pthread_mutex_t host_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Bytes a host storage of `bytes` really takes (see cs_storage_new). */
static size_t host_rounded(size_t bytes)
{
    size_t rounded = (bytes + 255) & ~(size_t)255;
    return rounded >= HOST_CACHE_MIN ? (rounded + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1) : rounded;
}

/* The smallest kept block of `rounded` to `rounded` + 1/4 bytes (its size in *got), or NULL. */
static void *host_cache_take(size_t rounded, size_t *got)
{
    void *data = NULL;
    pthread_mutex_lock(&host_cache_lock);
    int best = -1;
    for (int i = 0; i < HOST_CACHE_SLOTS; i++)
        if (host_cache[i].data && host_cache[i].bytes >= rounded && host_cache[i].bytes <= rounded + rounded / 4 &&
            (best < 0 || host_cache[i].bytes < host_cache[best].bytes))
            best = i;
    if (best >= 0) {
        data = host_cache[best].data;
        *got = host_cache[best].bytes;
        host_cached -= host_cache[best].bytes;
        host_cache[best].data = NULL;
    }
    pthread_mutex_unlock(&host_cache_lock);
    return data;
}

/* Keeps a freed block of `rounded` bytes if there is room; returns 0 when the caller must free it. */
static int host_cache_put(void *data, size_t rounded)
{
    if (!HOST_CACHE_ON || rounded < HOST_CACHE_MIN) return 0;
    static size_t cap;
    if (!cap) cap = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE) / 16;
    int kept = 0;
    pthread_mutex_lock(&host_cache_lock);
    if (host_cached + rounded <= cap)
        for (int i = 0; i < HOST_CACHE_SLOTS && !kept; i++)
            if (!host_cache[i].data) {
                host_cache[i].data = data;
                host_cache[i].bytes = rounded;
                host_cached += rounded;
                kept = 1;
            }
    pthread_mutex_unlock(&host_cache_lock);
    return kept;
}

static void host_cache_drain(void)
{
    pthread_mutex_lock(&host_cache_lock);
    for (int i = 0; i < HOST_CACHE_SLOTS; i++) {
        free(host_cache[i].data);
        host_cache[i].data = NULL;
    }
    host_cached = 0;
    pthread_mutex_unlock(&host_cache_lock);
}

/* ---- CUDA context ---- */
static struct {
    pthread_once_t once;
    int available;
    char reason[512];
    int lost;                  /* a sticky fault happened: the context is unusable */
    char lost_msg[512];
#if CS_WITH_CUDA
    cudaStream_t stream;
#endif
} cuda = { .once = PTHREAD_ONCE_INIT };

#if CS_WITH_CUDA
static void cuda_probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(cuda.reason, sizeof cuda.reason, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
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
#else
static void cuda_probe(void)
{
    snprintf(cuda.reason, sizeof cuda.reason, "built without CUDA");
}
#endif

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

void *cs_cuda_stream_handle(void)
{
#if CS_WITH_CUDA
    return (void *)cuda.stream;
#else
    return NULL;
#endif
}

cs_status cs_cuda_check(int err, const char *what)
{
#if CS_WITH_CUDA
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess) return CS_OK;
    const char *msg = cudaGetErrorString(e);
    switch (e) {
    case cudaErrorMemoryAllocation: {
        cudaGetLastError();
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "%s: CUDA out of memory (%s)", what, msg);
    }
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
#else
    (void)err;
    return cs_fail(CS_ERR_NO_DEVICE, "%s: built without CUDA", what);
#endif
}

cs_status cs_synchronize(void)
{
#if CS_WITH_CUDA
    if (!cs_cuda_available()) return CS_OK;
    cs_status st = cs_cuda_ready();
    if (st) return st;
    return cs_cuda_check(cudaStreamSynchronize(cuda.stream), "synchronize");
#else
    return CS_OK;
#endif
}

cs_status cs_device_info(cs_device_properties *p)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
#if CS_WITH_CUDA
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
#else
    (void)p;
#endif
    return CS_OK;
}

cs_status cs_memory_info(cs_device device, int64_t *in_use, int64_t *free_bytes, int64_t *total_bytes)
{
    if (device != CS_CPU && device != CS_CUDA) return cs_fail(CS_ERR_ARGUMENT, "unknown device %d", (int)device);
    *in_use = atomic_load(&held_bytes[device]);
    if (device == CS_CPU) {
        long page = sysconf(_SC_PAGESIZE);
        *free_bytes = (int64_t)sysconf(_SC_AVPHYS_PAGES) * page;
        *total_bytes = (int64_t)sysconf(_SC_PHYS_PAGES) * page;
        return CS_OK;
    }
    cs_status st = cs_cuda_ready();
    if (st) return st;
#if CS_WITH_CUDA
    size_t f = 0, t = 0;
    st = cs_cuda_check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    *free_bytes = (int64_t)f;
    *total_bytes = (int64_t)t;
#endif
    return st;
}

int64_t cs_memory_in_use(cs_device device)
{
    return (device == CS_CPU || device == CS_CUDA) ? atomic_load(&held_bytes[device]) : 0;
}

cs_status cs_memory_trim(cs_device device)
{
    if (device == CS_CPU) host_cache_drain();
    if (device != CS_CUDA) return CS_OK;
    cs_status st = cs_cuda_ready();
    if (st) return st;
#if CS_WITH_CUDA
    cudaMemPool_t pool;
    if ((st = cs_cuda_check(cudaStreamSynchronize(cuda.stream), "synchronize"))) return st;
    if ((st = cs_cuda_check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool"))) return st;
    return cs_cuda_check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
#endif
    return CS_OK;
}

/* ---- storage ---- */
cs_status cs_storage_new(cs_storage **out, cs_device device, size_t bytes)
{
    void *data = NULL;
    size_t block = 0;
    if (device == CS_CUDA) {
        cs_status st = cs_cuda_ready();
        if (st) return st;
    }
    if (bytes > 0) {
        size_t rounded = (bytes + 255) & ~(size_t)255; /* kernels may read whole 16-byte vectors */
        if (device == CS_CPU) {
            /* large buffers on 2 MiB boundaries with transparent huge pages: the first touch then
             * faults once per 2 MiB rather than per 4 KiB (x:cpu() of 1 GiB ran at 17% of the link
             * speed, bound by page faults, without); and reused when they come back (see above) */
            rounded = block = host_rounded(bytes);
            const int big = rounded >= HOST_CACHE_MIN;
            if (big) data = host_cache_take(rounded, &block);
            if (!data && posix_memalign(&data, big ? HUGE_BYTES : 64, rounded) != 0) {
                data = NULL;
                host_cache_drain();
                if (posix_memalign(&data, big ? HUGE_BYTES : 64, rounded) != 0) {
                    long page = sysconf(_SC_PAGESIZE);
                    return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory: asked for %zu bytes, %lld free of %lld",
                                   bytes, (long long)sysconf(_SC_AVPHYS_PAGES) * page,
                                   (long long)sysconf(_SC_PHYS_PAGES) * page);
                }
            }
#ifdef MADV_HUGEPAGE
            if (big) madvise(data, block, MADV_HUGEPAGE);
#endif
        } else {
#if CS_WITH_CUDA
            cudaError_t e = cudaMallocAsync(&data, rounded, cuda.stream);
            if (e == cudaErrorMemoryAllocation) {
                /* the pool may be holding freed blocks of other sizes: hand them back and retry */
                cudaGetLastError();
                if (cs_memory_trim(CS_CUDA) == CS_OK) e = cudaMallocAsync(&data, rounded, cuda.stream);
            }
            if (e != cudaSuccess) {
                size_t f = 0, t = 0;
                cudaGetLastError();
                cudaMemGetInfo(&f, &t);
                if (e == cudaErrorMemoryAllocation)
                    return cs_fail(CS_ERR_OUT_OF_MEMORY,
                                   "CUDA out of memory: asked for %zu bytes, %zu free of %zu", bytes, f, t);
                return cs_cuda_check(e, "cudaMallocAsync");
            }
#endif
        }
    }
    cs_storage *s = calloc(1, sizeof *s);
    if (!s) {
        if (device == CS_CPU) free(data);
#if CS_WITH_CUDA
        else if (data) cudaFreeAsync(data, cuda.stream);
#endif
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (tensor handle)");
    }
    s->refcount = 1;
    s->device = device;
    s->data = data;
    s->bytes = bytes;
    s->block_bytes = block;
    atomic_fetch_add(&held_bytes[device], (int64_t)bytes);
    *out = s;
    return CS_OK;
}

void cs_storage_release(cs_storage *s)
{
    if (!s || --s->refcount > 0) return;
    if (s->release) { /* memory owned elsewhere (external.c), never counted in held_bytes */
        s->release(s->release_ctx);
        free(s);
        return;
    }
    if (s->device == CS_CPU) {
        if (!host_cache_put(s->data, s->block_bytes)) free(s->data);
    } else {
#if CS_WITH_CUDA
        if (s->data && !cuda.lost) {
            cudaError_t e = cudaFreeAsync(s->data, cuda.stream);
            if (e != cudaSuccess) cs_cuda_check(e, "cudaFreeAsync");
        }
#endif
    }
    atomic_fetch_sub(&held_bytes[s->device], (int64_t)s->bytes);
    free(s);
}

/* Scratch for the scan kernels, owned by the library and grown on demand: a flags buffer (the work
 * queue's two words, then one flag per unit) that only ever holds flags, a words buffer (per unit
 * one 64-bit word holding a state and a 4-byte value together, for the long-line kernel), and a
 * values buffer. States carry an epoch that changes with every launch, so states of earlier
 * launches read as empty and nothing is cleared between launches; flags and words are zeroed when
 * made and when the epoch wraps. They are apart because half of a word is a value: read as a flag
 * by a later launch, a value could pass for that launch's epoch. The stream orders every reuse. */
#if CS_WITH_CUDA
/* Makes *buf hold at least `need` bytes (contents not kept; the caller clears what must be clear). */
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
#endif

cs_status cs_cuda_lookback_scratch(unsigned **flags, size_t nflags, unsigned long long **words, size_t nwords,
                                   void **values, size_t value_bytes, unsigned *epoch)
{
#if CS_WITH_CUDA
    static void *flag_buf, *word_buf, *value_buf;
    static size_t flag_have, word_have, value_have;
    static unsigned next_epoch = 1;
    const size_t flag_had = flag_have, word_had = word_have;
    cs_status st = scratch_grow(&flag_buf, &flag_have, (nflags + 16) * sizeof(unsigned), 4096);
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
#else
    (void)nflags; (void)nwords; (void)value_bytes;
    *flags = NULL;
    *words = NULL;
    *values = NULL;
    *epoch = 0;
    return cs_fail(CS_ERR_NO_DEVICE, "built without CUDA");
#endif
}

/* Temporary device memory for one op (stream-ordered: free it right after the launches using it). */
cs_status cs_cuda_temp(void **ptr, size_t bytes)
{
#if CS_WITH_CUDA
    return cs_cuda_check(cudaMallocAsync(ptr, bytes ? bytes : 1, cuda.stream), "temporary allocation");
#else
    (void)bytes;
    *ptr = NULL;
    return cs_fail(CS_ERR_NO_DEVICE, "built without CUDA");
#endif
}

void cs_cuda_temp_free(void *ptr)
{
#if CS_WITH_CUDA
    if (ptr && !cuda.lost) cudaFreeAsync(ptr, cuda.stream);
#else
    (void)ptr;
#endif
}

int cs_cuda_multiprocessors(void)
{
#if CS_WITH_CUDA
    static int n;
    if (!n && cs_cuda_available() && cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
        cudaGetLastError();
        n = 0;
    }
    return n > 0 ? n : 1;
#else
    return 1;
#endif
}
