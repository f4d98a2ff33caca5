// bench/tune/columns.cu - column-family forms side by side in one library: TUNE_VARIANT=k sends
// the forward scans that the planner gives the column family through launch_columns with variant
// k's policy: cumsums of float32 / float16 / bfloat16 (masked or not), and of float32 / float64 the
// flagged ones (cumsum with resets, logcumsumexp, cummax); other scans are refused. Built as
// harness.cu is (bench/tune/build.sh columns); on the GPU:
//   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libcolumns.so luajit bench/cells.lua 32768x32768:1:float16
#include <cstdlib>
#include <cuda_runtime.h>
#include "scan_launch.cuh"
using namespace cuscan;

// V0: tuning.cuh's values; V1: cummax folds units with a test a row; V2: no input asked of L2 ahead
struct PIndexedTested : TuningSm90 {
    static constexpr bool kColWholeUnitsIndexed = false;
};
struct PNoPrefetch : TuningSm90 {
    static constexpr int kColPrefetchMaxBytes = 0;
};

template <class S>
static cs_status columns(const cs_scan_plan *p, const char *mode)
{
    Report rep{};
    rep.p = p;
    const cs_scan_plan c = p->flat ? as_columns(p) : *p;
    return launch_columns<S>(&c, (cudaStream_t)cs_cuda_stream_handle(), rep, mode);
}

template <class P, typename T>
static cs_status plain(const cs_scan_plan *p, const char *mode)
{
    using S0 = ScanSpec<P, CS_SCAN_SUM, T, double, T, false, false>;
    using S1 = ScanSpec<P, CS_SCAN_SUM, T, double, T, false, true>;
    return p->mask ? columns<S1>(p, mode) : columns<S0>(p, mode);
}

template <class P, typename T>
static cs_status flagged(const cs_scan_plan *p, const char *mode)
{
    if (p->op == CS_SCAN_SUM) return columns<FlaggedSpec<P, ArithOp<double>, T, T, false>>(p, mode);
    if (p->op == CS_SCAN_LOGSUMEXP) return columns<FlaggedSpec<P, LseOp, T, T, false>>(p, mode);
    if (p->op == CS_SCAN_MAX) return columns<FlaggedSpec<P, MaxMinOp<T>, T, T, false>>(p, mode);
    return cs_fail(CS_ERR_UNSUPPORTED, "tune: cumsum, logcumsumexp or cummax only");
}

template <class P>
static cs_status run(const cs_scan_plan *p)
{
    if (p->reverse || p->in_dtype != p->out_dtype) return cs_fail(CS_ERR_UNSUPPORTED, "tune: forward scans only");
    const bool is_plain = p->op == CS_SCAN_SUM && !p->reset && !p->indices;
    const size_t size = p->in_dtype == CS_FLOAT64 ? 8 : p->in_dtype == CS_FLOAT32 ? 4 : 2;
    const char *mode;
    if (choose_family<P>(p, size, size, !is_plain, &mode) != kColumnsFamily)
        return cs_fail(CS_ERR_UNSUPPORTED, "tune: column-family scans only");
    if (is_plain) {
        if (p->in_dtype == CS_FLOAT32) return plain<P, float>(p, mode);
        if (p->in_dtype == CS_FLOAT16) return plain<P, cs_float16_t>(p, mode);
        if (p->in_dtype == CS_BFLOAT16) return plain<P, cs_bfloat16_t>(p, mode);
    } else {
        if (p->in_dtype == CS_FLOAT32) return flagged<P, float>(p, mode);
        if (p->in_dtype == CS_FLOAT64) return flagged<P, double>(p, mode);
    }
    return cs_fail(CS_ERR_UNSUPPORTED, "tune: not one of this harness's dtypes");
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run<PIndexedTested>(p);
    case 2: return run<PNoPrefetch>(p);
    default: return run<TuningSm90>(p);
    }
}

extern "C" cs_status cs_debug_inject_fault(void) { return cs_fail(CS_ERR_UNSUPPORTED, "tune: no fault injection"); }
