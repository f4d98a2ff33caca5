// bench/tune/harness.cu - slab tile tunings side by side in one library: TUNE_VARIANT=k sends
// float16 / bfloat16 / masked float32 forward cumsums through launch_slabs with variant k's policy
// (other scans are refused), so one compile times several tunings (bench/NOTES.md, "Slab tile
// classes"). After a CUDA build (`make`), bench/tune/build.sh links it with the C core into
// bench/tune/libtune.so; then, on the GPU:
//   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libtune.so luajit bench/cells.lua 1048576x32x2:2:float16 ...
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"
using namespace cuscan;

template <int E2, int SR2, int B2, bool H2, int EM, int SRM, int BM, bool HM>
struct Tune : TuningSm90 {
    static constexpr int kSlabTileElements2 = E2, kSlabSegRowsMax2 = SR2, kSlabBlocksPerSm2 = B2;
    static constexpr bool kSlabHold2 = H2;
    static constexpr int kSlabTileElementsMasked4 = EM, kSlabSegRowsMaxMasked4 = SRM, kSlabBlocksPerSmMasked4 = BM;
    static constexpr bool kSlabHoldMasked4 = HM;
};
// V0: tuning.cuh's values; V1-V3: other masked 4-byte tiles for the asynchronous stage (its
// vectors need no registers in flight), V4 the masked class before it; 2-byte tiles as in V0
using V0 = Tune<8192, 33, 4, false, 6144, 25, 4, true>;
using V1 = Tune<8192, 33, 4, false, 8192, 33, 3, true>;
using V2 = Tune<8192, 33, 4, false, 8192, 33, 3, false>;
using V3 = Tune<8192, 33, 4, false, 8192, 33, 4, false>;
using V4 = Tune<8192, 33, 4, false, 4096, 17, 4, true>;

template <class P>
static cs_status run(const cs_scan_plan *p)
{
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    Report rep{};
    rep.p = p;
    const bool m = p->mask != nullptr;
    if (p->op != CS_SCAN_SUM || p->reverse || p->reset || p->indices || !p->flat)
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: forward flat cumsums only");
    if (p->in_dtype == CS_FLOAT16 && p->out_dtype == CS_FLOAT16 && !m)
        return launch_slabs<ScanSpec<P, CS_SCAN_SUM, cs_float16_t, double, cs_float16_t, false, false>>(p, stream, rep, nullptr);
    if (p->in_dtype == CS_BFLOAT16 && p->out_dtype == CS_BFLOAT16 && !m)
        return launch_slabs<ScanSpec<P, CS_SCAN_SUM, cs_bfloat16_t, double, cs_bfloat16_t, false, false>>(p, stream, rep, nullptr);
    if (p->in_dtype == CS_FLOAT32 && p->out_dtype == CS_FLOAT32 && m)
        return launch_slabs<ScanSpec<P, CS_SCAN_SUM, float, double, float, false, true>>(p, stream, rep, nullptr);
    return cs_fail(CS_ERR_UNSUPPORTED, "tune: float16, bfloat16 or masked float32 only");
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run<V1>(p);
    case 2: return run<V2>(p);
    case 3: return run<V3>(p);
    case 4: return run<V4>(p);
    default: return run<V0>(p);
    }
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
