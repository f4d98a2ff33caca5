// bench/tune/slab_cumsum.h - what the slab harnesses share: float32 / float64 / float16 forward cumsums
// (masked or not) through launch_slabs under policy P (other scans are refused), and the fault
// injection the library exports. TUNE_SLAB_MODE=walk or lookback forces that mode where the plan
// allows it.
#pragma once
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"

template <class P>
static cs_status run_slab_cumsum(const cs_scan_plan *p)
{
    using namespace cuscan;
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    Report rep{};
    rep.p = p;
    const bool m = p->mask != nullptr;
    const char *mode = getenv("TUNE_SLAB_MODE");
    if (p->op != CS_SCAN_SUM || p->reverse || p->reset || p->indices || !p->flat || p->in_dtype != p->out_dtype)
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: forward flat cumsums only");
    if (p->in_dtype == CS_FLOAT32)
        return m ? launch_slabs<ScanSpec<P, CS_SCAN_SUM, float, double, float, false, true>>(p, stream, rep, mode)
                 : launch_slabs<ScanSpec<P, CS_SCAN_SUM, float, double, float, false, false>>(p, stream, rep, mode);
    if (p->in_dtype == CS_FLOAT64)
        return m ? launch_slabs<ScanSpec<P, CS_SCAN_SUM, double, double, double, false, true>>(p, stream, rep, mode)
                 : launch_slabs<ScanSpec<P, CS_SCAN_SUM, double, double, double, false, false>>(p, stream, rep, mode);
    if (p->in_dtype == CS_FLOAT16)
        return m ? launch_slabs<ScanSpec<P, CS_SCAN_SUM, __half, double, __half, false, true>>(p, stream, rep, mode)
                 : launch_slabs<ScanSpec<P, CS_SCAN_SUM, __half, double, __half, false, false>>(p, stream, rep, mode);
    return cs_fail(CS_ERR_UNSUPPORTED, "tune: float32, float64 or float16 only");
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
