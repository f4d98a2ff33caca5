// bench/tune/harness.cu - slab tile forms side by side in one library: TUNE_VARIANT=k sends
// float32 / float64 forward cumsums (masked or not) through launch_slabs with variant k's policy
// (other scans are refused), so one compile times several forms (bench/NOTES.md, "Slab look-back
// pieces by a tree"). After a CUDA build of the C core (`make`), bench/tune/build.sh links it into
// bench/tune/libtune.so; then, on the GPU:
//   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libtune.so luajit bench/cells.lua 1x2^20x64:2 ...
// (TUNE_SLAB_MODE=walk or lookback forces the slab mode where the plan allows it)
#include "slab_cumsum.h"
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

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run_slab_cumsum<PHeldThree>(p);
    case 2: return run_slab_cumsum<PSmallHeld>(p);
    case 3: return run_slab_cumsum<PSmallTwice>(p);
    default: return run_slab_cumsum<TuningSm90>(p);
    }
}
