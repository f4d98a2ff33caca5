// bench/tune/slabs.cu - plain slab scans in several forms side by side in one library: TUNE_VARIANT=1
// gives masked 2-byte outputs a tile class of 8192 elements (segments of up to 33 rows), 2 one of
// 16384 (63 rows), 0 tuning.cuh's values (the general class of 4096).
// float16 / bfloat16 / float32 cumsums (forward or reverse, inclusive or exclusive; masked ones
// forward) go through launch_slabs; other scans are refused. Built by `bench/tune/build.sh slabs`; on the GPU:
//   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libslabs.so luajit bench/cells.lua 2^25x2:2:float16:masked ...
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"
using namespace cuscan;

struct PMasked2x8k : TuningSm90 {
    static constexpr int kSlabTileElementsMasked2 = 8192, kSlabSegRowsMaxMasked2 = 33;
};
struct PMasked2x16k : TuningSm90 {
    static constexpr int kSlabTileElementsMasked2 = 16384, kSlabSegRowsMaxMasked2 = 63;
};

template <class P, typename T>
static cs_status go(const cs_scan_plan *p, cudaStream_t stream, Report &rep)
{
    const char *mode = getenv("TUNE_SLAB_MODE");
    if (p->mask) return launch_slabs<ScanSpec<P, CS_SCAN_SUM, T, double, T, false, true>>(p, stream, rep, mode);
    return p->reverse ? launch_slabs<ScanSpec<P, CS_SCAN_SUM, T, double, T, true, false>>(p, stream, rep, mode)
                      : launch_slabs<ScanSpec<P, CS_SCAN_SUM, T, double, T, false, false>>(p, stream, rep, mode);
}

template <class P>
static cs_status run(const cs_scan_plan *p)
{
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    Report rep{};
    rep.p = p;
    if (p->op != CS_SCAN_SUM || (p->mask && p->reverse) || p->reset || p->indices || p->initial || !p->flat ||
        p->in_dtype != p->out_dtype)
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: flat cumsums of one dtype only (masked ones forward)");
    switch (p->in_dtype) {
    case CS_FLOAT16: return go<P, __half>(p, stream, rep);
    case CS_BFLOAT16: return go<P, __nv_bfloat16>(p, stream, rep);
    case CS_FLOAT32: return go<P, float>(p, stream, rep);
    default: return cs_fail(CS_ERR_UNSUPPORTED, "tune: float16, bfloat16 or float32 only");
    }
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run<PMasked2x8k>(p);
    case 2: return run<PMasked2x16k>(p);
    default: return run<TuningSm90>(p);
    }
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
