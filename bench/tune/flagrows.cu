// bench/tune/flagrows.cu - float32 / float64 forward cummax / cummin (with indices) and segmented
// cumsum through every family, in two forms side by side (TUNE_VARIANT=1: the library before), for
// profiling the flagged kernels (bench/NOTES.md, "cummax joins without branches, warp lines by op").
// Built and used as bench/tune/lse.cu is:
//   bash bench/tune/build.sh flagrows; CUSCAN_LIB=bench/tune/libflagrows.so luajit bench/scan_once.lua ...
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"
using namespace cuscan;

// The join of the library before: short-circuit tests, b or a chosen as a whole (the product's
// one-tile segmented rows still join this way).
template <typename V>
using MaxMinOpBranchy = MaxMinOp<V, true>;
template <typename V>
using MaxMinOpJoined = MaxMinOp<V>;

// V1: the library before (the branchy join, warp lines of every flagged op at three blocks an SM
// with 64-byte tiles, cummax's whole lines at two)
struct PBefore : TuningSm90 {
    static constexpr int kWarpLinesBlocksPerSmIndexed = 3;
    static constexpr int kWarpLineBytesSegmented = 64;
    static constexpr int kWarpLinesBlocksPerSmSegmented = 3;
    static constexpr int kRowBlocksPerSmIndexed = 2;
};

template <class P, template <typename> class MaxMin, typename T>
static cs_status run_type(const cs_scan_plan *p, cudaStream_t stream)
{
    if (p->op == CS_SCAN_MAX || p->op == CS_SCAN_MIN) return launch_flagged<P, MaxMin<T>, T, T>(p, stream);
    if (p->op == CS_SCAN_SUM && p->reset) return launch_flagged<P, ArithOp<double>, T, T>(p, stream);
    return cs_fail(CS_ERR_UNSUPPORTED, "tune: cummax, cummin or segmented cumsum only");
}

template <class P, template <typename> class MaxMin>
static cs_status run(const cs_scan_plan *p)
{
    if (p->reverse || p->in_dtype != p->out_dtype || (p->in_dtype != CS_FLOAT32 && p->in_dtype != CS_FLOAT64))
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: forward float32 / float64 only");
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    return p->in_dtype == CS_FLOAT32 ? run_type<P, MaxMin, float>(p, stream) : run_type<P, MaxMin, double>(p, stream);
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run<PBefore, MaxMinOpBranchy>(p);
    default: return run<TuningSm90, MaxMinOpJoined>(p);
    }
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
