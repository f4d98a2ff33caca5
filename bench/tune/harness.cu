// bench/tune/harness.cu - slab tile forms side by side in one library: TUNE_VARIANT=k sends
// float32 / float64 forward cumsums (masked or not) through launch_slabs with variant k's policy
// (other scans are refused), so one compile times several forms (bench/NOTES.md, "Slab look-back
// pieces by a tree"). After a CUDA build of the C core (`make`), bench/tune/build.sh links it into
// bench/tune/libtune.so; then, on the GPU:
//   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libtune.so luajit bench/cells.lua 1x2^20x64:2 ...
// (TUNE_SLAB_MODE=walk or lookback forces the slab mode where the plan allows it)
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"
using namespace cuscan;

// V0: tuning.cuh's values (unmasked 4-byte slab tiles of 8192 elements read twice, four blocks an
// SM); V1 the class before (held, three blocks); V2 6144 elements held, four blocks; V3 the same
// read twice
struct PHeldThree : TuningSm90 {
    static constexpr int kSlabBlocksPerSm4 = 3;
    static constexpr bool kSlabHold4 = true;
};
struct PSmallHeld : TuningSm90 {
    static constexpr int kSlabTileElements4 = 6144, kSlabSegRowsMax4 = 25;
    static constexpr bool kSlabHold4 = true;
};
struct PSmallTwice : TuningSm90 {
    static constexpr int kSlabTileElements4 = 6144, kSlabSegRowsMax4 = 25;
};

template <class P>
static cs_status run(const cs_scan_plan *p)
{
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    Report rep{};
    rep.p = p;
    const bool m = p->mask != nullptr;
    const char *mode = getenv("TUNE_SLAB_MODE");   // "walk" or "lookback" forces that mode
    if (p->op != CS_SCAN_SUM || p->reverse || p->reset || p->indices || !p->flat || p->in_dtype != p->out_dtype)
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: forward flat cumsums only");
    if (p->in_dtype == CS_FLOAT32)
        return m ? launch_slabs<ScanSpec<P, CS_SCAN_SUM, float, double, float, false, true>>(p, stream, rep, mode)
                 : launch_slabs<ScanSpec<P, CS_SCAN_SUM, float, double, float, false, false>>(p, stream, rep, mode);
    if (p->in_dtype == CS_FLOAT64)
        return m ? launch_slabs<ScanSpec<P, CS_SCAN_SUM, double, double, double, false, true>>(p, stream, rep, mode)
                 : launch_slabs<ScanSpec<P, CS_SCAN_SUM, double, double, double, false, false>>(p, stream, rep, mode);
    return cs_fail(CS_ERR_UNSUPPORTED, "tune: float32 or float64 only");
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run<PHeldThree>(p);
    case 2: return run<PSmallHeld>(p);
    case 3: return run<PSmallTwice>(p);
    default: return run<TuningSm90>(p);
    }
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
