// api.cu - the extern "C" entry points of the CUDA backend that src/ calls: dtype dispatch for scans.
#include "scan_launch.cuh"

namespace cuscan {
extern template cs_status launch_scan<float, float>(const cs_scan_plan *);
extern template cs_status launch_scan<float, double>(const cs_scan_plan *);
extern template cs_status launch_scan<double, double>(const cs_scan_plan *);
extern template cs_status launch_scan<int32_t, int32_t>(const cs_scan_plan *);
extern template cs_status launch_scan<int32_t, int64_t>(const cs_scan_plan *);
extern template cs_status launch_scan<int64_t, int64_t>(const cs_scan_plan *);
extern template cs_status launch_scan<uint8_t, int32_t>(const cs_scan_plan *);
extern template cs_status launch_scan<uint8_t, int64_t>(const cs_scan_plan *);
}  // namespace cuscan

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    using namespace cuscan;
    const cs_dtype in = p->in_dtype, out = p->out_dtype;
    if (in == CS_FLOAT32 && out == CS_FLOAT32) return launch_scan<float, float>(p);
    if (in == CS_FLOAT32 && out == CS_FLOAT64) return launch_scan<float, double>(p);
    if (in == CS_FLOAT64 && out == CS_FLOAT64) return launch_scan<double, double>(p);
    if (in == CS_INT32 && out == CS_INT32) return launch_scan<int32_t, int32_t>(p);
    if (in == CS_INT32 && out == CS_INT64) return launch_scan<int32_t, int64_t>(p);
    if (in == CS_INT64 && out == CS_INT64) return launch_scan<int64_t, int64_t>(p);
    if (in == CS_BOOL && out == CS_INT32) return launch_scan<uint8_t, int32_t>(p);
    if (in == CS_BOOL && out == CS_INT64) return launch_scan<uint8_t, int64_t>(p);
    return cs_fail(CS_ERR_UNSUPPORTED, "scan of %s into %s is not supported", cs_dtype_name(in), cs_dtype_name(out));
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
