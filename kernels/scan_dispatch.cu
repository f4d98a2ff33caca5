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

// A part's case: its unit in the plan's direction, where the pair's OPS bits give it one.
#define CUSCAN_PART_CASE(PART, BITS)                                                             \
    case cuscan::ScanPart::PART:                                                                 \
        if constexpr ((OPS & (BITS)) != 0) return rev ? U::PART##_rev(p, cc) : U::PART##_fwd(p, cc); \
        break;

template <unsigned OPS, class U>
cs_status dispatch_pair(const cs_scan_plan *p, int cc)
{
    const bool rev = p->reverse;
    switch (cuscan::scan_part(p)) {
        CUSCAN_PART_CASE(plain, kPlainOps)
        CUSCAN_PART_CASE(masked, kPlainOps)
        CUSCAN_PART_CASE(reset, kPlainOps)
        CUSCAN_PART_CASE(lse, CS_OPS_LSE)
        CUSCAN_PART_CASE(maxmin, CS_OPS_MAXMIN)
    }
    return cuscan::unsupported_scan(p);
}
#undef CUSCAN_PART_CASE
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
