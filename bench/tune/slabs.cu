// bench/tune/slabs.cu - plain slab scans in several forms side by side in one library: TUNE_VARIANT=1
// gives masked 2-byte outputs a tile class of 8192 elements (segments of up to 33 rows), 2 one of
// 16384 (63 rows), 0 tuning.cuh's values (the general class of 4096); 3-5 give unmasked 4-byte
// outputs tiles of 16128 elements (63 rows, 3 blocks an SM), 10240 (39 rows, 4 blocks) and 12288
// (47 rows, 3 blocks); 6 and 7 masked 4-byte outputs 8192 (33 rows, 4 blocks) read twice from the
// stage or held in registers.
// float16 / bfloat16 / float32 cumsums (forward or reverse, inclusive or exclusive; masked ones
// forward) go through launch_slabs; other scans are refused. Built by `bench/tune/build.sh slabs`
// (TUNE_ONLY=N bench/tune/build.sh slabs: a library of variant N alone, float32 only); on the GPU:
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

struct P4x16k : TuningSm90 {
    static constexpr int kSlabStageBytes = 16128 * 4;
    static constexpr int kSlabTileElements4 = 16128, kSlabSegRowsMax4 = 63, kSlabBlocksPerSm4 = 3;
};
struct P4x10k : TuningSm90 {
    static constexpr int kSlabStageBytes = 10240 * 4;
    static constexpr int kSlabTileElements4 = 10240, kSlabSegRowsMax4 = 39, kSlabBlocksPerSm4 = 4;
};
struct P4x12k : TuningSm90 {
    static constexpr int kSlabStageBytes = 12288 * 4;
    static constexpr int kSlabTileElements4 = 12288, kSlabSegRowsMax4 = 47, kSlabBlocksPerSm4 = 3;
};
struct PMasked4x8k : TuningSm90 {
    static constexpr int kSlabTileElementsMasked4 = 8192, kSlabSegRowsMaxMasked4 = 33;
    static constexpr bool kSlabHoldMasked4 = false;
};
struct PMasked4x8kHold : TuningSm90 {
    static constexpr int kSlabTileElementsMasked4 = 8192, kSlabSegRowsMaxMasked4 = 33;
};

template <class P, typename T>
static cs_status go(const cs_scan_plan *p, cudaStream_t stream, Report &rep)
{
    const char *mode = getenv("TUNE_SLAB_MODE");
    if (p->mask) return launch_slabs<ScanSpec<P, CS_SCAN_SUM, T, double, T, false, true>>(p, stream, rep, mode);
    return p->reverse ? launch_slabs<ScanSpec<P, CS_SCAN_SUM, T, double, T, true, false>>(p, stream, rep, mode)
                      : launch_slabs<ScanSpec<P, CS_SCAN_SUM, T, double, T, false, false>>(p, stream, rep, mode);
}

// TUNE_VARIANT's policies of the 4-byte classes (0: tuning.cuh's)
template <int N> struct Variant { using P = TuningSm90; };
template <> struct Variant<3> { using P = P4x16k; };
template <> struct Variant<4> { using P = P4x10k; };
template <> struct Variant<5> { using P = P4x12k; };
template <> struct Variant<6> { using P = PMasked4x8k; };
template <> struct Variant<7> { using P = PMasked4x8kHold; };

// (F32: float32 alone, for the 4-byte classes' variants)
template <class P, bool F32 = false>
static cs_status run(const cs_scan_plan *p)
{
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    Report rep{};
    rep.p = p;
    if (p->op != CS_SCAN_SUM || (p->mask && p->reverse) || p->reset || p->indices || p->initial || !p->flat ||
        p->in_dtype != p->out_dtype)
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: flat cumsums of one dtype only (masked ones forward)");
    if (p->in_dtype == CS_FLOAT32) return go<P, float>(p, stream, rep);
    if constexpr (!F32) {
        if (p->in_dtype == CS_FLOAT16) return go<P, __half>(p, stream, rep);
        if (p->in_dtype == CS_BFLOAT16) return go<P, __nv_bfloat16>(p, stream, rep);
    }
    return cs_fail(CS_ERR_UNSUPPORTED, F32 ? "tune: float32 only in this variant" : "tune: float16, bfloat16 or float32 only");
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
#ifdef TUNE_ONLY
    // a library of one variant, float32 alone (-DTUNE_ONLY=N: the variants compile side by side)
    if (v != TUNE_ONLY) return cs_fail(CS_ERR_UNSUPPORTED, "tune: this library holds variant %d only", TUNE_ONLY);
    return run<typename Variant<TUNE_ONLY>::P, true>(p);
#else
    switch (v) {
    case 1: return run<PMasked2x8k>(p);
    case 2: return run<PMasked2x16k>(p);
    case 3: return run<P4x16k, true>(p);
    case 4: return run<P4x10k, true>(p);
    case 5: return run<P4x12k, true>(p);
    case 6: return run<PMasked4x8k, true>(p);
    case 7: return run<PMasked4x8kHold, true>(p);
    default: return run<TuningSm90>(p);
    }
#endif
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
