/* comm.c - NCCL communicators and the all-gather, for tensors spread over GPUs and processes. NCCL
 * is loaded when first used (dlopen of libnccl.so.2), so that the library builds and loads without
 * it; the few types and functions used are declared here rather than taken from nccl.h. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* NCCL's ABI (nccl.h, version 2) for what this file calls */
typedef struct nccl_comm *nccl_comm_t;
typedef struct { char internal[CS_COMM_ID_BYTES]; } nccl_unique_id;
typedef int nccl_result;  /* ncclResult_t: 0 is ncclSuccess */
enum { NCCL_INT8 = 0, NCCL_UINT8 = 1, NCCL_INT32 = 2, NCCL_INT64 = 4, NCCL_FLOAT16 = 6, NCCL_FLOAT32 = 7,
       NCCL_FLOAT64 = 8, NCCL_BFLOAT16 = 9 };

static struct {
    pthread_once_t once;
    void *lib;
    char why[512];
    nccl_result (*get_unique_id)(nccl_unique_id *id);
    nccl_result (*comm_init_rank)(nccl_comm_t *comm, int nranks, nccl_unique_id id, int rank);
    nccl_result (*comm_init_all)(nccl_comm_t *comms, int n, const int *devices);
    nccl_result (*all_gather)(const void *send, void *recv, size_t count, int dtype, nccl_comm_t comm, void *stream);
    nccl_result (*group_start)(void);
    nccl_result (*group_end)(void);
    nccl_result (*comm_destroy)(nccl_comm_t comm);
    const char *(*error_string)(nccl_result r);
} nccl = { .once = PTHREAD_ONCE_INIT };

struct cs_comm {
    nccl_comm_t comm;
    int rank, size, device;
};

static void nccl_load(void)
{
    /* NVLink multicast (NVLS) stays off unless the user asks for it */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    nccl.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!nccl.lib) {
        const char *e = dlerror();
        snprintf(nccl.why, sizeof nccl.why, "%s", e ? e : "libnccl.so.2 not found");
        return;
    }
    struct { void **fn; const char *name; } syms[] = {
        { (void **)&nccl.get_unique_id, "ncclGetUniqueId" }, { (void **)&nccl.comm_init_rank, "ncclCommInitRank" },
        { (void **)&nccl.comm_init_all, "ncclCommInitAll" }, { (void **)&nccl.all_gather, "ncclAllGather" },
        { (void **)&nccl.group_start, "ncclGroupStart" },   { (void **)&nccl.group_end, "ncclGroupEnd" },
        { (void **)&nccl.comm_destroy, "ncclCommDestroy" }, { (void **)&nccl.error_string, "ncclGetErrorString" },
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].fn = dlsym(nccl.lib, syms[i].name);
        if (!*syms[i].fn) {
            snprintf(nccl.why, sizeof nccl.why, "libnccl.so.2 lacks %s", syms[i].name);
            dlclose(nccl.lib);
            nccl.lib = NULL;
            return;
        }
    }
}

static cs_status nccl_ready(void)
{
    if (!cs_cuda_available()) return cs_fail(CS_ERR_UNSUPPORTED, "NCCL is not available: %s", cs_cuda_unavailable_reason());
    cs_status st = cs_cuda_ready();
    if (st) return st;
    pthread_once(&nccl.once, nccl_load);
    if (!nccl.lib) return cs_fail(CS_ERR_UNSUPPORTED, "NCCL is not available: %s", nccl.why);
    return CS_OK;
}

static cs_status nccl_check(nccl_result r, const char *what)
{
    if (r == 0) return CS_OK;
    return cs_fail(CS_ERR_CUDA, "%s failed: %s (NCCL error %d)", what, nccl.error_string(r), r);
}

static cs_status check_device(int device, const char *what)
{
    if (device < 0 || device >= cs_device_count())
        return cs_fail(CS_ERR_ARGUMENT, "%s: cuda:%d does not exist (%d GPUs)", what, device, cs_device_count());
    return CS_OK;
}

cs_status cs_comm_unique_id(unsigned char id[CS_COMM_ID_BYTES])
{
    if (!id) return cs_fail(CS_ERR_ARGUMENT, "id: expected a buffer of %d bytes, got NULL", CS_COMM_ID_BYTES);
    cs_status st = nccl_ready();
    if (st) return st;
    nccl_unique_id u;
    if ((st = nccl_check(nccl.get_unique_id(&u), "ncclGetUniqueId"))) return st;
    memcpy(id, u.internal, CS_COMM_ID_BYTES);
    return CS_OK;
}

static cs_comm *comm_new(nccl_comm_t c, int rank, int size, int device)
{
    cs_comm *out = calloc(1, sizeof *out);
    if (!out) return NULL;
    *out = (cs_comm){ .comm = c, .rank = rank, .size = size, .device = device };
    return out;
}

cs_status cs_comm_init_all(cs_comm **comms, int n, const int *devices)
{
    if (!comms || !devices) return cs_fail(CS_ERR_ARGUMENT, "comms, devices: expected arrays, got NULL");
    if (n < 1) return cs_fail(CS_ERR_ARGUMENT, "n: expected at least 1 device, got %d", n);
    cs_status st = nccl_ready();
    if (st) return st;
    for (int k = 0; k < n; k++) {
        if ((st = check_device(devices[k], "devices"))) return st;
        for (int j = 0; j < k; j++)
            if (devices[j] == devices[k])
                return cs_fail(CS_ERR_ARGUMENT, "devices: cuda:%d is named twice (one communicator per GPU)", devices[k]);
    }
    nccl_comm_t *raw = calloc((size_t)n, sizeof *raw);
    if (!raw) return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (communicators)");
    int prev;
    if ((st = cs_gpu_enter(devices[0], &prev))) { /* NCCL sets each GPU itself; the caller's comes back */
        free(raw);
        return st;
    }
    st = nccl_check(nccl.comm_init_all(raw, n, devices), "ncclCommInitAll");
    cs_gpu_leave(prev);
    for (int k = 0; k < n && !st; k++) {
        comms[k] = comm_new(raw[k], k, n, devices[k]);
        if (!comms[k]) st = cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (communicator)");
    }
    if (st) {
        for (int k = 0; k < n; k++) {
            if (comms[k]) free(comms[k]);
            else if (raw[k]) nccl.comm_destroy(raw[k]);
            comms[k] = NULL;
        }
    }
    free(raw);
    return st;
}

cs_status cs_comm_init_rank(cs_comm **out, const unsigned char id[CS_COMM_ID_BYTES], int nranks, int rank, int device)
{
    if (!out || !id) return cs_fail(CS_ERR_ARGUMENT, "out, id: expected pointers, got NULL");
    if (nranks < 1) return cs_fail(CS_ERR_ARGUMENT, "nranks: expected at least 1, got %d", nranks);
    if (rank < 0 || rank >= nranks)
        return cs_fail(CS_ERR_ARGUMENT, "rank: expected 0 to %d (nranks - 1), got %d", nranks - 1, rank);
    cs_status st = nccl_ready();
    if (st || (st = check_device(device, "device"))) return st;
    nccl_unique_id u;
    memcpy(u.internal, id, CS_COMM_ID_BYTES);
    nccl_comm_t c = NULL;
    int prev;
    if ((st = cs_gpu_enter(device, &prev))) return st;
    st = nccl_check(nccl.comm_init_rank(&c, nranks, u, rank), "ncclCommInitRank");
    cs_gpu_leave(prev);
    if (st) return st;
    if (!(*out = comm_new(c, rank, nranks, device))) {
        nccl.comm_destroy(c);
        return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (communicator)");
    }
    return CS_OK;
}

int cs_comm_rank(const cs_comm *c) { return c ? c->rank : -1; }
int cs_comm_size(const cs_comm *c) { return c ? c->size : -1; }
int cs_comm_device(const cs_comm *c) { return c ? c->device : -1; }

static const int NCCL_DTYPE[CS_NUM_DTYPES] = {
    [CS_FLOAT32] = NCCL_FLOAT32, [CS_FLOAT64] = NCCL_FLOAT64, [CS_INT32] = NCCL_INT32, [CS_INT64] = NCCL_INT64,
    [CS_BOOL] = NCCL_UINT8, [CS_FLOAT16] = NCCL_FLOAT16, [CS_BFLOAT16] = NCCL_BFLOAT16,
};

cs_status cs_all_gather(cs_comm *c, cs_tensor *recv, const cs_tensor *send)
{
    if (!c) return cs_fail(CS_ERR_ARGUMENT, "comm: expected a communicator, got NULL");
    cs_status st = cs_check_usable(send, "send");
    if (st || (st = cs_check_usable(recv, "recv"))) return st;
    char a[32];
    if (send->device != CS_CUDA || send->device_index != c->device)
        return cs_fail(CS_ERR_ARGUMENT, "send: expected a tensor on the communicator's GPU cuda:%d, got one on %s",
                       c->device, cs_device_name(send, a, sizeof a));
    if ((st = cs_check_same_device(recv, "recv", send, "send"))) return st;
    if (recv->dtype != send->dtype)
        return cs_fail(CS_ERR_ARGUMENT, "recv: expected send's dtype %s, got %s", cs_dtype_name(send->dtype),
                       cs_dtype_name(recv->dtype));
    if (!cs_tensor_is_contiguous(send)) return cs_fail(CS_ERR_ARGUMENT, "send: expected a contiguous tensor");
    if (!cs_tensor_is_contiguous(recv)) return cs_fail(CS_ERR_ARGUMENT, "recv: expected a contiguous tensor");
    if ((st = cs_check_writable(recv, "recv"))) return st;
    const int64_t count = cs_tensor_numel(send);
    if (cs_tensor_numel(recv) != count * c->size)
        return cs_fail(CS_ERR_ARGUMENT, "recv: expected %lld elements (%d ranks x %lld), got %lld",
                       (long long)(count * c->size), c->size, (long long)count, (long long)cs_tensor_numel(recv));
    if (cs_tensor_overlap(recv, send)) return cs_fail(CS_ERR_ARGUMENT, "recv: must not overlap send");
    if ((st = nccl_ready())) return st;
    int prev;
    if ((st = cs_gpu_enter(c->device, &prev))) return st;
    st = nccl_check(nccl.all_gather(cs_tensor_ptr(send), cs_tensor_ptr(recv), (size_t)count, NCCL_DTYPE[send->dtype],
                                    c->comm, cs_cuda_stream_handle()),
                    "ncclAllGather");
    cs_gpu_leave(prev);
    return st;
}

cs_status cs_comm_group_start(void)
{
    cs_status st = nccl_ready();
    return st ? st : nccl_check(nccl.group_start(), "ncclGroupStart");
}

cs_status cs_comm_group_end(void)
{
    cs_status st = nccl_ready();
    return st ? st : nccl_check(nccl.group_end(), "ncclGroupEnd");
}

cs_status cs_comm_release(cs_comm *c)
{
    if (!c) return CS_OK;
    cs_status st = CS_OK;
    int prev;
    if (c->comm && nccl.lib && !(st = cs_gpu_enter(c->device, &prev))) {
        st = nccl_check(nccl.comm_destroy(c->comm), "ncclCommDestroy");
        cs_gpu_leave(prev);
    }
    free(c);
    return st;
}
