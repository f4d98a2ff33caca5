// bench/tune/flagslabs.cu - forward float32 / float64 cummax / cummin (with indices), segmented
// cumsum and logcumsumexp through the slab family alone, in several forms side by side
// (bench/NOTES.md, "Flagged slab tiles: head bits, and float64 tiles of 2048 elements"):
//   TUNE_VARIANT=0  tuning.cuh's values
//                1  the loops that count slab rows (kSlabHeadedFlagged off)
//                2  16 KB tiles for 4-byte outputs too, segments of 17 rows read twice from the stage
//                3  8-byte outputs in 8 KB tiles (the library before)
//                4  8-byte outputs' look-back pieces holding their segments in registers
// Scans that are not flat are refused; -DTUNE_WIDE_ONLY builds variants 0, 3 and 4 for float64
// alone. Built by `bench/tune/build.sh flagslabs`; on the GPU:
//   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libflagslabs.so luajit bench/tune/flagslabs_cells.lua
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"
using namespace cuscan;

struct PCounted : TuningSm90 {
    static constexpr bool kSlabHeadedFlagged = false;
};
struct PLarge : TuningSm90 {
    static constexpr int kSlabStageBytesFlagged = 16 * 1024;
    static constexpr int kSlabSegRowsMaxFlagged = 17;
    static constexpr bool kSlabHoldFlagged = false;
};
struct PWideSmall : TuningSm90 {
    static constexpr int kSlabStageBytesFlaggedWide = 8 * 1024;
    static constexpr bool kSlabHoldFlaggedWideLookback = true;
};
struct PWideHeldLookback : TuningSm90 {
    static constexpr bool kSlabHoldFlaggedWideLookback = true;
};

template <class P, class Base, typename T>
static cs_status go(const cs_scan_plan *p, cudaStream_t stream)
{
    Report rep{};
    rep.p = p;
    return launch_slabs<FlaggedSpec<P, Base, T, T, false>>(p, stream, rep, getenv("TUNE_SLAB_MODE"));
}

template <class P, typename T>
static cs_status run_type(const cs_scan_plan *p, cudaStream_t stream)
{
    if (p->op == CS_SCAN_MAX || p->op == CS_SCAN_MIN) return go<P, MaxMinOp<T>, T>(p, stream);
    if (p->op == CS_SCAN_SUM && p->reset) return go<P, ArithOp<double>, T>(p, stream);
    if (p->op == CS_SCAN_LOGSUMEXP) return go<P, LseOp, T>(p, stream);
    return cs_fail(CS_ERR_UNSUPPORTED, "tune: cummax, cummin, segmented cumsum or logcumsumexp only");
}

template <class P>
static cs_status run(const cs_scan_plan *p)
{
    if (p->reverse || !p->flat || p->initial || p->in_dtype != p->out_dtype ||
        (p->in_dtype != CS_FLOAT32 && p->in_dtype != CS_FLOAT64))
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: forward flat float32 / float64 scans only");
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
#ifdef TUNE_WIDE_ONLY
    if (p->in_dtype == CS_FLOAT32) return cs_fail(CS_ERR_UNSUPPORTED, "tune: float64 only in this build");
    return run_type<P, double>(p, stream);
#else
    return p->in_dtype == CS_FLOAT32 ? run_type<P, float>(p, stream) : run_type<P, double>(p, stream);
#endif
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
#ifndef TUNE_WIDE_ONLY
    case 1: return run<PCounted>(p);
    case 2: return run<PLarge>(p);
#endif
    case 3: return run<PWideSmall>(p);
    case 4: return run<PWideHeldLookback>(p);
    default: return run<TuningSm90>(p);
    }
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
