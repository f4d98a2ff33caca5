// bench/tune/window.cu - slab tile classes side by side in one library (bench/NOTES.md, "Slab
// look-backs in tiles of their own"): TUNE_VARIANT=0 tuning.cuh's classes, 1 the window's class for
// window look-backs alone, 2 none (window look-backs in their type's class).
// Built by `bench/tune/build.sh window`; on the GPU:
//   TUNE_VARIANT=1 CUSCAN_LIB=bench/tune/libwindow.so luajit bench/cells.lua 13000000x5:1 ...
// TUNE_TRACE=k prints the phases of the k-th scan's window look-back (lookback.cuh's CS_TRACE).
#define CUSCAN_TRACE_JOIN 1
#include <algorithm>
#include <cstdio>
#include <vector>
#include "slab_cumsum.h"
using namespace cuscan;

struct PWindowOnly : TuningSm90 {   // the class for window look-backs alone
    static constexpr bool kSlabWindowTree = false;
};
struct PNoWindowTiles : TuningSm90 {   // window look-backs in the tiles of their type's class
    static constexpr int kSlabWindowTileBytes = 0;
};

static cs_status dispatch(const cs_scan_plan *p)
{
    static const int v = getenv("TUNE_VARIANT") ? atoi(getenv("TUNE_VARIANT")) : 0;
    switch (v) {
    case 1: return run_slab_cumsum<PWindowOnly>(p);
    case 2: return run_slab_cumsum<PNoWindowTiles>(p);
    default: return run_slab_cumsum<TuningSm90>(p);
    }
}

// TUNE_TRACE=k: after the k-th scan, the phases of its window look-back (us, percentiles)
static void report_trace()
{
    static std::vector<unsigned long long> h((size_t)5 << 17);
    cudaDeviceSynchronize();
    cudaMemcpyFromSymbol(h.data(), cs_join_trace, h.size() * sizeof(unsigned long long));
    std::vector<double> load, wait, fold, dist, life;
    unsigned long long t_min = ~0ull, t_max = 0;
    for (size_t s = 0; s < ((size_t)1 << 17); s++) {
        const unsigned long long *e = &h[5 * s];
        if (!e[4] || !e[0] || e[1] < e[0] || e[2] < e[1] || e[0] < e[4] || e[2] - e[4] > 100000000ull) continue;
        load.push_back((e[0] - e[4]) * 1e-3);
        wait.push_back((e[1] - e[0]) * 1e-3);
        fold.push_back((e[2] - e[1]) * 1e-3);
        dist.push_back((double)e[3]);
        life.push_back((e[2] - e[4]) * 1e-3);
        t_min = std::min(t_min, e[4]);
        t_max = std::max(t_max, e[2]);
    }
    auto pct = [](std::vector<double> v, double q) {
        if (v.empty()) return 0.0;
        std::sort(v.begin(), v.end());
        return v[(size_t)(q * (v.size() - 1))];
    };
    fprintf(stderr, "trace: %zu pieces over %.1f us; median / p90: start->table %.2f / %.2f, wait %.2f / %.2f, fold+post %.2f / %.2f, distance %.0f / %.0f, start->posted %.2f / %.2f\n",
            load.size(), (t_max - t_min) * 1e-3, pct(load, .5), pct(load, .9), pct(wait, .5), pct(wait, .9),
            pct(fold, .5), pct(fold, .9), pct(dist, .5), pct(dist, .9), pct(life, .5), pct(life, .9));
}

extern "C" cs_status cs_cuda_scan(const cs_scan_plan *p)
{
    static int calls = 0;
    static const int at = getenv("TUNE_TRACE") ? atoi(getenv("TUNE_TRACE")) : 0;
    const cs_status st = dispatch(p);
    if (at && ++calls == at) report_trace();
    return st;
}
