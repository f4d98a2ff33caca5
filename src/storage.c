/* storage.c - refcounted storage on the host and on a GPU (the current one when made, through the
 * CUDA side's allocator, src/cuda/runtime.c), kept large host blocks, and the bookkeeping of bytes held. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h"

/* bytes held: [0] on the host, [1 + i] on GPU i */
static _Atomic int64_t held_bytes[1 + CS_MAX_GPUS];

static int held_slot(cs_device device, int gpu)
{
    return device == CS_CPU || gpu < 0 || gpu >= CS_MAX_GPUS ? 0 : 1 + gpu;
}

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

cs_status cs_memory_info(cs_device device, int64_t *in_use, int64_t *free_bytes, int64_t *total_bytes)
{
    if (device != CS_CPU && device != CS_CUDA) return cs_fail(CS_ERR_ARGUMENT, "unknown device %d", (int)device);
    *in_use = cs_memory_in_use(device);
    if (device == CS_CPU) {
        long page = sysconf(_SC_PAGESIZE);
        *free_bytes = (int64_t)sysconf(_SC_AVPHYS_PAGES) * page;
        *total_bytes = (int64_t)sysconf(_SC_PHYS_PAGES) * page;
        return CS_OK;
    }
    return cs_cuda_memory_info(free_bytes, total_bytes);
}

int64_t cs_memory_in_use(cs_device device)
{
    if (device == CS_CPU) return atomic_load(&held_bytes[0]);
    if (device != CS_CUDA) return 0;
    const int gpu = cs_cuda_get_device();
    return gpu < 0 ? 0 : atomic_load(&held_bytes[held_slot(CS_CUDA, gpu)]);
}

cs_status cs_memory_trim(cs_device device)
{
    if (device == CS_CPU) host_cache_drain();
    if (device != CS_CUDA) return CS_OK;
    return cs_cuda_trim();
}

/* ---- storage ---- */
cs_status cs_storage_new(cs_storage **out, cs_device device, size_t bytes)
{
    void *data = NULL;
    size_t block = 0;
    int gpu = -1;
    if (device == CS_CUDA) {
        cs_status st = cs_cuda_ready();
        if (st) return st;
        gpu = cs_cuda_get_device();
    }
    if (bytes > 0) {
        size_t rounded = (bytes + 255) & ~(size_t)255; /* kernels may read whole 16-byte vectors */
        if (device == CS_CPU) {
            /* large buffers on 2 MiB boundaries with transparent huge pages: the first touch then
             * faults once per 2 MiB rather than per 4 KiB (page faults bound x:cpu() otherwise); and
             * reused when they come back (see above), their pages already mapped */
            rounded = block = host_rounded(bytes);
            const int big = rounded >= HOST_CACHE_MIN;
            if (big) data = host_cache_take(rounded, &block);
            const int fresh = data == NULL;
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
            if (big && fresh) madvise(data, block, MADV_HUGEPAGE);
#endif
        } else {
            cs_status st = cs_cuda_malloc(&data, rounded);
            if (st) return st;
        }
    }
    cs_storage *s = calloc(1, sizeof *s);
    if (!s) {
        if (device == CS_CPU) free(data);
        else cs_cuda_free(data, gpu);
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (tensor handle)");
    }
    s->refcount = 1;
    s->device = device;
    s->device_index = gpu;
    s->data = data;
    s->bytes = bytes;
    s->block_bytes = block;
    atomic_fetch_add(&held_bytes[held_slot(device, gpu)], (int64_t)bytes);
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
        cs_cuda_free(s->data, s->device_index);
    }
    atomic_fetch_sub(&held_bytes[held_slot(s->device, s->device_index)], (int64_t)s->bytes);
    free(s);
}
