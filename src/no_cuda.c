/* no_cuda.c - the CUDA side in a build without CUDA: every entry point of src/cuda/ and kernels/ that
 * the core calls. No CUDA tensor can exist here (cs_cuda_ready refuses first), so the rest only
 * guard against a wrong call. */
#include "internal.h"

/* Without a GPU the first thing to say is that there is none; with one, that this build cannot use it. */
const char *cs_cuda_unavailable_reason(void)
{
    return cs_gpu_device_node() ? "built without CUDA (rebuild with the CUDA toolkit's nvcc to use the GPU)"
                                : "no CUDA device found (built without CUDA)";
}

static cs_status no_cuda(void) { return cs_fail(CS_ERR_NO_DEVICE, "CUDA is not available: %s", cs_cuda_unavailable_reason()); }

int cs_cuda_available(void) { return 0; }
int cs_device_count(void) { return 0; }
int cs_cuda_get_device(void) { return -1; }
cs_status cs_cuda_set_device(int index) { (void)index; return no_cuda(); }
cs_status cs_cuda_ready(void) { return no_cuda(); }
cs_status cs_gpu_enter(int index, int *prev)
{
    *prev = -1;
    return index < 0 ? CS_OK : no_cuda();
}
void cs_gpu_leave(int prev) { (void)prev; }
void *cs_cuda_stream_handle(void) { return NULL; }
cs_status cs_synchronize(void) { return CS_OK; }
cs_status cs_device_info(cs_device_properties *p) { (void)p; return no_cuda(); }
cs_status cs_debug_inject_fault(void) { return no_cuda(); }

cs_status cs_cuda_check(int cuda_error, const char *what)
{
    (void)cuda_error;
    return cs_fail(CS_ERR_NO_DEVICE, "%s: %s", what, cs_cuda_unavailable_reason());
}

cs_status cs_cuda_malloc(void **data, size_t bytes) { (void)bytes; *data = NULL; return no_cuda(); }
void cs_cuda_free(void *data, int gpu) { (void)data; (void)gpu; }
cs_status cs_cuda_memory_info(int64_t *free_bytes, int64_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    return no_cuda();
}
cs_status cs_cuda_trim(void) { return no_cuda(); }

cs_status cs_cuda_lookback_scratch(unsigned **flags, size_t nflags, unsigned long long **words, size_t nwords,
                                   void **values, size_t value_bytes, unsigned *epoch)
{
    (void)nflags; (void)nwords; (void)value_bytes;
    *flags = NULL;
    *words = NULL;
    *values = NULL;
    *epoch = 0;
    return no_cuda();
}
cs_status cs_cuda_temp(void **ptr, size_t bytes) { (void)bytes; *ptr = NULL; return no_cuda(); }
void cs_cuda_temp_free(void *ptr) { (void)ptr; }
int cs_cuda_multiprocessors(void) { return 1; }

cs_status cs_cuda_copy_device(void *dst, const void *src, size_t bytes) { (void)dst; (void)src; (void)bytes; return no_cuda(); }
cs_status cs_cuda_copy_peer(void *dst, int dst_gpu, const void *src, int src_gpu, size_t bytes)
{
    (void)dst; (void)dst_gpu; (void)src; (void)src_gpu; (void)bytes;
    return no_cuda();
}
cs_status cs_transfer_contiguous(cs_tensor *dst, const cs_tensor *src) { (void)dst; (void)src; return no_cuda(); }
cs_status cs_host_link_bandwidth(int64_t bytes, double *h2d, double *d2h)
{
    (void)bytes;
    *h2d = *d2h = 0;
    return no_cuda();
}

cs_status cs_cuda_event_create(void **ev) { *ev = NULL; return no_cuda(); }
void cs_cuda_event_free(void *ev) { (void)ev; }
cs_status cs_cuda_event_record(void *ev) { (void)ev; return no_cuda(); }
cs_status cs_cuda_event_elapsed(void *start, void *end, double *ms) { (void)start; (void)end; *ms = 0; return no_cuda(); }

cs_status cs_cuda_scan(const cs_scan_plan *p) { (void)p; return no_cuda(); }
cs_status cs_cuda_elementwise(const cs_elementwise_plan *p) { (void)p; return no_cuda(); }
cs_status cs_cuda_reduce(const cs_reduce_plan *p) { (void)p; return no_cuda(); }
cs_status cs_cuda_compare(const cs_elementwise_plan *p, double rtol, double atol, int equal_nan,
                          double *max_abs, int64_t *n_far)
{
    (void)p; (void)rtol; (void)atol; (void)equal_nan; (void)max_abs; (void)n_far;
    return no_cuda();
}

/* NCCL needs the CUDA side */
static cs_status no_nccl(void)
{
    return cs_fail(CS_ERR_UNSUPPORTED, "NCCL is not available: %s", cs_cuda_unavailable_reason());
}
cs_status cs_comm_unique_id(unsigned char id[CS_COMM_ID_BYTES]) { (void)id; return no_nccl(); }
cs_status cs_comm_init_all(cs_comm **comms, int n, const int *devices)
{
    (void)comms; (void)n; (void)devices;
    return no_nccl();
}
cs_status cs_comm_init_rank(cs_comm **out, const unsigned char id[CS_COMM_ID_BYTES], int nranks, int rank, int device)
{
    (void)out; (void)id; (void)nranks; (void)rank; (void)device;
    return no_nccl();
}
int cs_comm_rank(const cs_comm *c) { (void)c; return -1; }
int cs_comm_size(const cs_comm *c) { (void)c; return -1; }
int cs_comm_device(const cs_comm *c) { (void)c; return -1; }
cs_status cs_all_gather(cs_comm *c, cs_tensor *recv, const cs_tensor *send) { (void)c; (void)recv; (void)send; return no_nccl(); }
cs_status cs_comm_group_start(void) { return no_nccl(); }
cs_status cs_comm_group_end(void) { return no_nccl(); }
cs_status cs_comm_release(cs_comm *c) { (void)c; return CS_OK; }
