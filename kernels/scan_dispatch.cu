// scan_dispatch.cu - the CUDA backend's scan entry point: dispatch to the unit of the dtype pair
// (src/dtypes.h lists them), part and direction (scan_launch.cuh), and the fault injection the
// specs use.
#include <cuda_runtime.h>
#include "scan_launch.cuh"

namespace cuscan_units {
// A pair's units by part and direction. The static members are inline: only those named in a kept
// branch of dispatch_pair are emitted, so a part the pair has no unit for is never referenced (and,
// outside an anonymous namespace, the unused ones draw no warning).
#define CUSCAN_UNIT_CALLS(PART, NAME)                                                                              \
    static cs_status PART##_fwd(const cs_scan_plan *p, int cc) { return cuscan::scan_##PART##_fwd_##NAME(p, cc); } \
    static cs_status PART##_rev(const cs_scan_plan *p, int cc) { return cuscan::scan_##PART##_rev_##NAME(p, cc); }
#define CUSCAN_PAIR_UNITS(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS) \
    struct units_##NAME {                                         \
        CUSCAN_UNIT_CALLS(plain, NAME)                            \
        CUSCAN_UNIT_CALLS(masked, NAME)                           \
        CUSCAN_UNIT_CALLS(reset, NAME)                            \
        CUSCAN_UNIT_CALLS(lse, NAME)                              \
        CUSCAN_UNIT_CALLS(maxmin, NAME)                           \
    };
CS_SCAN_PAIRS(CUSCAN_PAIR_UNITS)
#undef CUSCAN_PAIR_UNITS
#undef CUSCAN_UNIT_CALLS
}  // namespace cuscan_units

namespace {
constexpr unsigned kPlainOps = CS_OPS_SUM | CS_OPS_PROD;

template <unsigned OPS, class U>
cs_status dispatch_pair(const cs_scan_plan *p, int cc)
{
    using cuscan::ScanPart;
    const bool rev = p->reverse;
    switch (cuscan::scan_part(p)) {
    case ScanPart::plain:
        if constexpr ((OPS & kPlainOps) != 0) return rev ? U::plain_rev(p, cc) : U::plain_fwd(p, cc);
        break;
    case ScanPart::masked:
        if constexpr ((OPS & kPlainOps) != 0) return rev ? U::masked_rev(p, cc) : U::masked_fwd(p, cc);
        break;
    case ScanPart::reset:
        if constexpr ((OPS & kPlainOps) != 0) return rev ? U::reset_rev(p, cc) : U::reset_fwd(p, cc);
        break;
    case ScanPart::lse:
        if constexpr ((OPS & CS_OPS_LSE) != 0) return rev ? U::lse_rev(p, cc) : U::lse_fwd(p, cc);
        break;
    case ScanPart::maxmin:
        if constexpr ((OPS & CS_OPS_MAXMIN) != 0) return rev ? U::maxmin_rev(p, cc) : U::maxmin_fwd(p, cc);
        break;
    }
    return cuscan::unsupported_scan(p);
}
}  // namespace

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
#define DISPATCH(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS) \
    if (p->in_dtype == IN && p->out_dtype == OUT) return dispatch_pair<OPS, cuscan_units::units_##NAME>(p, compute_capability);
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
