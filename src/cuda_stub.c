/* cuda_stub.c - the CUDA backend's entry points in a build without CUDA. No CUDA tensor can exist
 * there (cs_cuda_ready refuses first), so these only guard against a wrong call. */
#include "internal.h"

static cs_status no_cuda(void) { return cs_fail(CS_ERR_NO_DEVICE, "CUDA is not available: built without CUDA"); }

cs_status cs_cuda_scan(const cs_scan_plan *p) { (void)p; return no_cuda(); }
cs_status cs_cuda_elementwise(const cs_elementwise_plan *p) { (void)p; return no_cuda(); }
cs_status cs_cuda_reduce(const cs_reduce_plan *p) { (void)p; return no_cuda(); }
cs_status cs_cuda_compare(const cs_elementwise_plan *p, double rtol, double atol, int equal_nan,
                          double *max_abs, int64_t *n_far)
{
    (void)p; (void)rtol; (void)atol; (void)equal_nan; (void)max_abs; (void)n_far;
    return no_cuda();
}

cs_status cs_debug_inject_fault(void) { return no_cuda(); }
