// bench/tune/lse.cu - float32 forward logcumsumexp through the planner's family, in a library of
// its own (TUNE_VARIANT=k picks variant k's policy), for profiling and side-by-side forms of its
// arithmetic (bench/NOTES.md). Built and used as bench/tune/columns.cu is:
//   bash bench/tune/build.sh lse; CUSCAN_LIB=bench/tune/liblse.so luajit bench/scan_once.lua ...
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"
using namespace cuscan;

// V1, V2, V3: a warp walks each line from 16, 8 and 4 lines an SM (bench/NOTES.md, "logcumsumexp
// without branches")
struct PWarps16 : TuningSm90 { static constexpr int kWarpLinesMinLinesPerSmLse = 16; };
struct PWarps8 : TuningSm90 { static constexpr int kWarpLinesMinLinesPerSmLse = 8; };
struct PWarps4 : TuningSm90 { static constexpr int kWarpLinesMinLinesPerSmLse = 4; };

template <class P>
static cs_status run(const cs_scan_plan *p)
{
    if (p->op != CS_SCAN_LOGSUMEXP || p->reverse || p->reset || p->in_dtype != CS_FLOAT32 || p->out_dtype != CS_FLOAT32)
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: forward float32 logcumsumexp only");
    return launch_flagged<P, LseOp, float, float>(p, (cudaStream_t)cs_cuda_stream_handle());
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run<PWarps16>(p);
    case 2: return run<PWarps8>(p);
    case 3: return run<PWarps4>(p);
    default: return run<TuningSm90>(p);
    }
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
