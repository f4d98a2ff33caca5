/* external.c - tensors over memory cuscan does not own: a caller's buffer with a release callback
 * (what DLPack imports stand on) and files mapped into memory copy-on-write (.npy loads with mmap).
 * Their storages carry a release function that cs_storage_release calls instead of freeing. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

static void keep_memory(void *ctx) { (void)ctx; }

cs_status cs_from_blob(cs_tensor **out, void *data, size_t bytes, cs_device device, cs_dtype dtype, int ndim,
                       const int64_t *shape, const int64_t *strides, int64_t offset, void (*release)(void *ctx),
                       void *ctx)
{
    if ((unsigned)dtype >= CS_NUM_DTYPES) return cs_fail(CS_ERR_ARGUMENT, "dtype: unknown dtype %d", (int)dtype);
    if (device != CS_CPU && device != CS_CUDA) return cs_fail(CS_ERR_ARGUMENT, "device: unknown device %d", (int)device);
    if (device == CS_CUDA) {
        cs_status st = cs_cuda_ready();
        if (st) return st;
    }
    const size_t esize = cs_dtype_size(dtype);
    if (bytes > 0 && !data) return cs_fail(CS_ERR_ARGUMENT, "data: NULL for %zu bytes", bytes);
    if ((uintptr_t)data % esize)
        return cs_fail(CS_ERR_ARGUMENT, "data: address %p is not aligned to the %zu bytes of a %s", data, esize,
                       cs_dtype_name(dtype));
    cs_storage *s = calloc(1, sizeof *s);
    cs_tensor *base = calloc(1, sizeof *base);
    if (!s || !base) {
        free(s);
        free(base);
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (tensor handle)");
    }
    s->refcount = 1;
    s->device = device;
    s->device_index = device == CS_CUDA ? cs_cuda_get_device() : -1;
    s->data = data;
    s->bytes = bytes;
    s->release = keep_memory; /* until the view exists: a failed cs_as_strided must not release */
    /* a 1-d handle over all of the bytes, so that cs_as_strided checks the view against them */
    base->storage = s;
    base->dtype = dtype;
    base->device = device;
    base->device_index = s->device_index;
    base->ndim = 1;
    base->shape[0] = (int64_t)(bytes / esize);
    base->strides[0] = 1;
    cs_status st = cs_as_strided(out, base, ndim, shape, strides, offset);
    cs_tensor_free(base); /* the view, if made, holds the storage now */
    if (st) return st;
    s->release = release ? release : keep_memory;
    s->release_ctx = ctx;
    return CS_OK;
}

/* ---- files mapped copy-on-write ---- */
typedef struct file_map {
    void *base;
    size_t length;
} file_map;

static void unmap(void *ctx)
{
    file_map *m = ctx;
    munmap(m->base, m->length);
    free(m);
}

cs_status cs_map_file(cs_tensor **out, const char *path, int64_t offset, int64_t bytes, cs_dtype dtype, int ndim,
                      const int64_t *shape, const int64_t *strides)
{
    if (!path) return cs_fail(CS_ERR_ARGUMENT, "path: NULL");
    if ((unsigned)dtype >= CS_NUM_DTYPES) return cs_fail(CS_ERR_ARGUMENT, "dtype: unknown dtype %d", (int)dtype);
    if (offset < 0 || bytes < 0) return cs_fail(CS_ERR_ARGUMENT, "%s: negative offset or size", path);
    if (offset % (int64_t)cs_dtype_size(dtype))
        return cs_fail(CS_ERR_ARGUMENT, "%s: the data at byte %lld is not aligned to its %zu-byte elements", path,
                       (long long)offset, cs_dtype_size(dtype));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cs_fail(CS_ERR_ARGUMENT, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return cs_fail(CS_ERR_ARGUMENT, "%s: cannot read its size: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return cs_fail(CS_ERR_ARGUMENT, "%s: not a regular file%s", path, S_ISDIR(sb.st_mode) ? " (a directory)" : "");
    }
    if (offset > (int64_t)sb.st_size || bytes > (int64_t)sb.st_size - offset) {
        close(fd);
        return cs_fail(CS_ERR_ARGUMENT, "%s: truncated: %lld bytes of data expected from byte %lld, the file has %lld bytes",
                       path, (long long)bytes, (long long)offset, (long long)sb.st_size);
    }
    file_map *m = calloc(1, sizeof *m);
    if (!m) {
        close(fd);
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (file map)");
    }
    void *data = NULL;
    if (bytes > 0) {
        /* the map starts on a page boundary; data begins inside the first page */
        const int64_t page = sysconf(_SC_PAGESIZE);
        const int64_t start = offset - offset % page;
        m->length = (size_t)(bytes + (offset - start));
        /* private and writable, so that a write lands in this process's copy of the page instead of
         * faulting; no swap reserved for it, so a file larger than memory can be mapped */
        m->base = mmap(NULL, m->length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, (off_t)start);
        if (m->base == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(m);
            return cs_fail(e == ENOMEM ? CS_ERR_OUT_OF_MEMORY : CS_ERR_ARGUMENT, "%s: cannot map %lld bytes: %s", path,
                           (long long)bytes, strerror(e));
        }
        data = (char *)m->base + (offset - start);
    }
    close(fd); /* the map keeps the file */
    cs_status st = cs_from_blob(out, data, (size_t)bytes, CS_CPU, dtype, ndim, shape, strides, 0,
                                bytes > 0 ? unmap : free, m);
    if (st) {
        if (bytes > 0) unmap(m);
        else free(m);
    }
    return st;
}
