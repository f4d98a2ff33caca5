// scan_dispatch.cu - the CUDA backend's scan entry point: dispatch to the unit of the dtype pair
// (src/dtypes.h lists them) and part (scan_launch.cuh), and the fault injection the specs use.
#include <cuda_runtime.h>
#include "scan_launch.cuh"

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static int compute_capability;
    if (!compute_capability) {
        int major = 0, minor = 0;
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
        cudaGetLastError();
        compute_capability = major * 10 + minor;
    }
    const bool plain = cuscan::scan_part(p) == cuscan::ScanPart::plain;
#define DISPATCH(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                    \
    if (p->in_dtype == IN && p->out_dtype == OUT)                                            \
        return plain ? cuscan::scan_plain_##NAME(p, compute_capability)                       \
                     : cuscan::scan_flagged_##NAME(p, compute_capability);
    CS_SCAN_PAIRS(DISPATCH)
#undef DISPATCH
    return cs_fail(CS_ERR_UNSUPPORTED, "scan of %s into %s is not supported", cs_dtype_name(p->in_dtype),
                   cs_dtype_name(p->out_dtype));
}

namespace {
__global__ void write_to_invalid_address(int *p) { p[threadIdx.x] = 1; }
}  // namespace

extern "C" cs_status cs_debug_inject_fault(void)
{
    cs_status st = cs_cuda_ready();
    if (st) return st;
    write_to_invalid_address<<<1, 32, 0, (cudaStream_t)cs_cuda_stream_handle()>>>(reinterpret_cast<int *>(16));
    return cs_cuda_check(cudaGetLastError(), "fault injection");
}
