// bench/tune/stream.cu - a stand-alone question, not part of the library: can one long line of
// float32 (folded in float64, each output rounded once) be scanned at a device copy's speed when a
// block's tiles arrive ahead of it? Persistent blocks keep STAGES tiles in shared memory, loaded
// by bulk copies (cp.async.bulk, an mbarrier a stage) ahead of the one they scan, and write each
// tile's outputs back by a bulk copy from its stage. The ways a tile gets its prefix, side by side:
// - stream_scan: MODE 0 takes tiles from a counter, 1 statically (tile b + k * grid), 2 skips the
//   prefix (timing only), 3 in rounds (a round's inclusive total and the aggregates before a tile
//   in its round); LBW picks lookback.cuh's line look-back (0), one that stops at the nearest
//   prefix in a window of 32 x LBW (> 0), or a tree fold of 32 (< 0; not deterministic);
// - stream_scan_ws: NLB warps look back while the compute warps reduce the next tiles, a tile
//   finished NLB iterations after its reduce; LB picks the line look-back (0), its tree fold (1),
//   groups of 32 tiles (2), back-off between polls (3) or none (4, timing only).
// Every variant but the timing-only ones is checked against a float64 prefix on the host.
// Build and run on the GPU host:
//   nvcc -O3 -std=c++17 -Isrc -Ikernels -gencode arch=compute_90,code=sm_90 bench/tune/stream.cu -o /tmp/stream
//   /tmp/stream [log2 n]
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>
#include <cub/device/device_scan.cuh>
#include "lookback.cuh"

using namespace cuscan;

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

struct AddD {
    __device__ __forceinline__ double identity() const { return 0.0; }
    __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
};

__device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n\t.reg .pred p;\n\tWAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WAIT_%=;\n\t}" ::"r"(smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk_load(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void bulk_store(void *dst, const void *src, unsigned bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__device__ __forceinline__ void bulk_wait_read_all() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// A thread's ITEMS consecutive floats of a stage, as doubles scanned in place; SWZ: its four-float
// chunks read rotated by (tid / 2) % 4, so that the eight threads of a shared-memory wavefront hit
// distinct banks (else 4-way conflicts).
template <int ITEMS, bool SWZ>
__device__ __forceinline__ void load_scan(const float *stage, int tid, double (&v)[ITEMS])
{
    constexpr int Q = ITEMS / 4;
    const float4 *s4 = reinterpret_cast<const float4 *>(stage) + tid * Q;
    float4 q[Q];
    if constexpr (SWZ && Q == 4) {
        const int rot = (tid >> 1) & 3;
        float4 r[4];
#pragma unroll
        for (int j = 0; j < 4; j++) r[j] = s4[(j + rot) & 3];
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int j = (c - rot) & 3;
            q[c] = j == 0 ? r[0] : j == 1 ? r[1] : j == 2 ? r[2] : r[3];
        }
    } else {
#pragma unroll
        for (int j = 0; j < Q; j++) q[j] = s4[j];
    }
#pragma unroll
    for (int j = 0; j < Q; j++) {
        v[4 * j] = q[j].x;
        v[4 * j + 1] = q[j].y;
        v[4 * j + 2] = q[j].z;
        v[4 * j + 3] = q[j].w;
    }
#pragma unroll
    for (int i = 1; i < ITEMS; i++) v[i] += v[i - 1];
}

// base + v, rounded to float, written back where load_scan read them.
template <int ITEMS, bool SWZ>
__device__ __forceinline__ void store_outputs(float *stage, int tid, double base, const double (&v)[ITEMS])
{
    constexpr int Q = ITEMS / 4;
    float4 *s4 = reinterpret_cast<float4 *>(stage) + tid * Q;
    float4 q[Q];
#pragma unroll
    for (int j = 0; j < Q; j++) {
        q[j].x = (float)(base + v[4 * j]);
        q[j].y = (float)(base + v[4 * j + 1]);
        q[j].z = (float)(base + v[4 * j + 2]);
        q[j].w = (float)(base + v[4 * j + 3]);
    }
    if constexpr (SWZ && Q == 4) {
        const int rot = (tid >> 1) & 3;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int c = (j + rot) & 3;
            s4[c] = c == 0 ? q[0] : c == 1 ? q[1] : c == 2 ? q[2] : q[3];
        }
    } else {
#pragma unroll
        for (int j = 0; j < Q; j++) s4[j] = q[j];
    }
}

// The warp's inclusive scan of its threads' totals; *exclusive gets the thread's exclusive one.
__device__ __forceinline__ double warp_scan(double total, double *exclusive)
{
    const int lane = threadIdx.x & 31;
    double inc = total;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const double o = __shfl_up_sync(0xffffffffu, inc, d);
        if (lane >= d) inc += o;
    }
    const double ex = __shfl_up_sync(0xffffffffu, inc, 1);
    *exclusive = lane == 0 ? 0.0 : ex;
    return inc;
}

// The prefix a look-back found: the values of distances 0..nearest (lane + 32 j holds val[j]),
// folded from the nearest prefix forward as lookback_line folds them.
template <int PER, typename Op>
__device__ __forceinline__ double fold_window(Op op, const double (&val)[PER], int nearest, double *window)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        const int dist = lane + 32 * j;
        if (dist <= nearest) window[dist] = val[j];
    }
    __syncwarp();
    double acc = op.identity();
    if (lane == 0) fold_in_order(op, window + nearest, -1, nearest + 1, true, acc);
    return shfl_state(acc, 0);
}

// A line look-back that stops at the nearest inclusive prefix once every unit after it has posted
// (lookback_line waits until all 128 units of its window have posted), in a window of 32 x PER
// units; folds as lookback_line does (so the same bits whichever prefix it finds).
template <int PER, typename Op, typename Status>
__device__ __noinline__ double lookback_near(Op op, const Status &st, int64_t unit, double *window)
{
    const int lane = threadIdx.x & 31;
    double val[PER];
    for (;;) {
        unsigned near_incl = ~0u, near_empty = ~0u;
#pragma unroll
        for (int j = 0; j < PER; j++) {
            const int64_t u = unit - 1 - lane - 32 * j;
            val[j] = op.identity();
            const unsigned f = u >= 0 ? st.poll(u, val[j]) : kInclusive;
            const unsigned mi = __ballot_sync(0xffffffffu, f == kInclusive);
            const unsigned me = __ballot_sync(0xffffffffu, f == kEmpty);
            if (near_incl == ~0u && mi) near_incl = 32 * j + __ffs(mi) - 1;
            if (near_empty == ~0u && me) near_empty = 32 * j + __ffs(me) - 1;
        }
        if (near_incl == ~0u || near_empty < near_incl) continue;
        return fold_window<PER>(op, val, (int)near_incl, window);
    }
}

// The bound without determinism: CUB's way, a window of 32 reduced by a warp tree whose shape
// depends on where the nearest inclusive prefix was found.
template <typename Status>
__device__ __noinline__ double lookback_tree(const Status &st, int64_t unit)
{
    const int lane = threadIdx.x & 31;
    double acc = 0.0;
    int64_t end = unit;   // units below end are still to fold
    for (;;) {
        const int64_t u = end - 1 - lane;
        double v = 0.0;
        unsigned f;
        do {
            v = 0.0;
            f = u >= 0 ? st.poll(u, v) : kInclusive;
        } while (__any_sync(0xffffffffu, f == kEmpty));
        const unsigned mi = __ballot_sync(0xffffffffu, f == kInclusive);
        const int k = mi ? __ffs(mi) - 1 : 31;
        double x = lane <= k ? v : 0.0;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(0xffffffffu, x, d);
        acc += x;
        if (mi) return acc;
        end -= 32;
    }
}

template <int THREADS, int ITEMS, int STAGES>
struct StreamShared {
    static constexpr int TILE = THREADS * ITEMS;
    alignas(128) float stage[STAGES][TILE];
    uint64_t bar[STAGES];
    int64_t tile_id[STAGES];
    double warp_total[THREADS / 32];
    double prefix;
    double window[32 * 16];
};

// One block scans its tiles in order, each waiting on its prefix before its outputs are written.
template <int THREADS, int ITEMS, int STAGES, int SWZ, int MINB, int MODE, int LBW>
__global__ void __launch_bounds__(THREADS, MINB) stream_scan(const float *__restrict__ x, float *__restrict__ y, int64_t ntiles,
                                                        PackedStatus<double> st, PackedStatus<double> rs,
                                                        unsigned *counter)
{
    using Sh = StreamShared<THREADS, ITEMS, STAGES>;
    constexpr int TILE = Sh::TILE, WARPS = THREADS / 32;
    constexpr unsigned BYTES = TILE * sizeof(float);
    extern __shared__ __align__(128) unsigned char raw[];
    Sh &sh = *reinterpret_cast<Sh *>(raw);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    AddD op;

    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) mbar_init(&sh.bar[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int s = 0; s < STAGES; s++) {
            const int64_t t = MODE ? blockIdx.x + (int64_t)s * gridDim.x : atomicAdd(counter, 1u);
            sh.tile_id[s] = t;
            if (t < ntiles) {
                mbar_expect_tx(&sh.bar[s], BYTES);
                bulk_load(sh.stage[s], x + t * TILE, BYTES, &sh.bar[s]);
            }
        }
    }
    __syncthreads();

    for (int iter = 0;; iter++) {
        const int s = iter % STAGES;
        const unsigned parity = (iter / STAGES) & 1;
        const int64_t t = sh.tile_id[s];
        if (t >= ntiles) break;
        mbar_wait(&sh.bar[s], parity);

        double v[ITEMS];
        load_scan<ITEMS, SWZ>(sh.stage[s], tid, v);
        double tex;
        const double inc = warp_scan(v[ITEMS - 1], &tex);
        if (lane == 31) sh.warp_total[warp] = inc;
        __syncthreads();
        double wpre = 0.0, total = 0.0;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            const double wt = sh.warp_total[w];
            if (w < warp) wpre += wt;
            total += wt;
        }
        // refill the stage of the iteration before (its outputs' bulk store was issued then)
        if (tid == 0 && iter > 0) {
            const int ps = (iter - 1) % STAGES;
            const int64_t nt = MODE ? blockIdx.x + (int64_t)(iter - 1 + STAGES) * gridDim.x : atomicAdd(counter, 1u);
            bulk_wait_read_all();
            sh.tile_id[ps] = nt;
            if (nt < ntiles) {
                mbar_expect_tx(&sh.bar[ps], BYTES);
                bulk_load(sh.stage[ps], x + nt * TILE, BYTES, &sh.bar[ps]);
            }
        }
        if (warp == 0 && MODE < 2) {
            double ex = 0.0;
            if (t == 0) {
                if (lane == 0) st.post(0, kInclusive, total);
            } else {
                if (lane == 0) st.post(t, kAggregate, total);
                if constexpr (LBW == 0) ex = lookback_line(op, st, t, 0, sh.window);
                else if constexpr (LBW < 0) ex = lookback_tree(st, t);
                else ex = lookback_near<LBW>(op, st, t, sh.window);
                if (lane == 0) st.post(t, kInclusive, ex + total);
            }
            if (lane == 0) sh.prefix = ex;
        }
        if (MODE == 3 && warp == 0) {
            // rounds: tile t = k * G + b; its prefix is round k-1's inclusive total R plus the
            // aggregates of blocks 0..b-1 of round k, folded in a fixed order (lane by lane, then
            // lane 0's butterfly); block G-1 posts R for round k
            const int G = gridDim.x, b = blockIdx.x;
            const int64_t k = t / G;
            if (lane == 0) st.post(t, kAggregate, total);
            constexpr int NJ = 20;
            double a[NJ];
            unsigned want = 0, have = 0;
#pragma unroll
            for (int i = 0; i < NJ; i++)
                if (lane + 32 * i < b) want |= 1u << i;
            for (;;) {
#pragma unroll
                for (int i = 0; i < NJ; i++) {
                    if ((want & ~have) >> i & 1) {
                        double v;
                        if (st.poll(k * G + lane + 32 * i, v) != kEmpty) {
                            a[i] = v;
                            have |= 1u << i;
                        }
                    }
                }
                if (__all_sync(0xffffffffu, have == want)) break;
            }
            double part = 0.0;
#pragma unroll
            for (int i = 0; i < NJ; i++)
                if (want >> i & 1) part += a[i];
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) part += __shfl_xor_sync(0xffffffffu, part, d);
            if (lane == 0) {
                double r = 0.0;
                if (k > 0)
                    while (rs.poll(k - 1, r) == kEmpty) {
                    }
                const double e = r + part;
                if (b == G - 1) rs.post(k, kInclusive, e + total);
                sh.prefix = e;
            }
        }
        if (MODE == 2 && tid == 0) sh.prefix = 0.0;
        __syncthreads();
        store_outputs<ITEMS, SWZ>(sh.stage[s], tid, sh.prefix + (wpre + tex), v);
        fence_proxy_async();
        __syncthreads();
        if (tid == 0) bulk_store(y + t * TILE, sh.stage[s], BYTES);
    }
    if (tid == 0) bulk_wait_all();
}


// Two levels, deterministic: tiles in groups of 32. A tile's exclusive prefix is Q (the group's,
// the chain of group totals before it, found by a line look-back over groups) folded with the
// aggregates of the tiles before it in its group (left to right); the group's last tile posts the
// group's total (the left fold of its 32) and, once it has Q, Q plus that total. Folds are at most
// 31 tiles long and the front of group prefixes moves 32 tiles a group.
template <typename Op, typename Status>
__device__ __noinline__ double lookback_groups(Op op, const Status &st, const Status &gs, int64_t t, double total,
                                               double *window)
{
    const int lane = threadIdx.x & 31;
    const int64_t gr = t >> 5;
    const int j = (int)(t & 31);
    // the group's tiles before t
    double v = 0.0;
    if (lane < j) {
        while (st.poll((gr << 5) + lane, v) == kEmpty) {
        }
    }
    __syncwarp();
    if (lane < j) window[lane] = v;
    __syncwarp();
    double local = 0.0;   // left fold of A(group start .. t-1)
    if (lane == 0 && j > 0) fold_in_order(op, window, 1, j, true, local);
    local = __shfl_sync(0xffffffffu, local, 0);
    const double group_total = local + total;
    if (j == 31 && lane == 0) gs.post(gr, gr == 0 ? kInclusive : kAggregate, group_total);
    __syncwarp();
    double q = 0.0;
    if (gr > 0) q = lookback_line(op, gs, gr, 0, window + 32);
    if (j == 31 && gr > 0 && lane == 0) gs.post(gr, kInclusive, q + group_total);
    return j > 0 ? q + local : q;
}

// lookback_line, changed one way at a time: TREE folds by a tree (each lane's four values, then a
// butterfly; not deterministic: the tree's shape follows the nearest prefix found), only to see
// what the serial fold costs; SLEEP backs off between polls (a spinning warp takes its
// scheduler's issue slots and the status lines' L2 bandwidth).
template <bool TREE, bool SLEEP, typename Op, typename Status>
__device__ __noinline__ double lookback_line_as(Op op, const Status &st, int64_t unit, double *window)
{
    const int lane = threadIdx.x & 31;
    unsigned flag[kLookbackPerLane];
    double val[kLookbackPerLane];
    for (;;) {
        for (;;) {
            bool waiting = false;
#pragma unroll
            for (int j = 0; j < kLookbackPerLane; j++) {
                const int64_t u = unit - 1 - lane - 32 * j;
                val[j] = op.identity();
                flag[j] = u >= 0 ? st.poll(u, val[j]) : kInclusive;
                waiting |= flag[j] == kEmpty;
            }
            if (!__any_sync(0xffffffffu, waiting)) break;
            if (SLEEP) __nanosleep(200);
        }
        int nearest = -1;
#pragma unroll
        for (int j = kLookbackPerLane - 1; j >= 0; j--) {
            const unsigned m = __ballot_sync(0xffffffffu, flag[j] == kInclusive);
            if (m) nearest = 32 * j + __ffs(m) - 1;
        }
        if (nearest < 0) {
            if (SLEEP) __nanosleep(200);
            continue;
        }
        if constexpr (TREE) {
            double x = 0.0;
#pragma unroll
            for (int j = 0; j < kLookbackPerLane; j++)
                if (lane + 32 * j <= nearest) x += val[j];
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(0xffffffffu, x, d);
            return __shfl_sync(0xffffffffu, x, 0);
        } else {
            return fold_window<kLookbackPerLane>(op, val, nearest, window);
        }
    }
}

template <int THREADS, int ITEMS, int STAGES>
struct WsShared {
    static constexpr int TILE = THREADS * ITEMS;
    alignas(128) float stage[STAGES][TILE];
    uint64_t bar[STAGES];
    double warp_total[STAGES][THREADS / 32];
    double agg[STAGES], prefix[STAGES];
    int agg_seq[STAGES], pre_seq[STAGES];
    double window[4][32 + 32 * kLookbackPerLane];
};

__device__ __forceinline__ void compute_sync(int n) { asm volatile("bar.sync 1, %0;" ::"r"(n) : "memory"); }

// Warp-specialised: THREADS compute threads and NLB more warps that post and look back (tile i by
// warp i % NLB), so that a block's look-backs run while its compute warps reduce the next tiles.
// Iteration i reduces tile i (posting its total to the look-back warps through shared memory) and
// then finishes tile i-NLB once its prefix is there: its elements are scanned again from the stage
// (the same operations as the reduce, so the same bits), written back and stored by a bulk copy.
// Tiles are static (b + i * grid); all blocks resident.
template <int THREADS, int ITEMS, int STAGES, int MINB, int LB, int NLB>
__global__ void __launch_bounds__(THREADS + 32 * NLB, MINB) stream_scan_ws(const float *__restrict__ x, float *__restrict__ y,
                                                                      int64_t ntiles, PackedStatus<double> st,
                                                                      PackedStatus<double> gs)
{
    using Sh = WsShared<THREADS, ITEMS, STAGES>;
    constexpr int TILE = Sh::TILE, WARPS = THREADS / 32;
    constexpr unsigned BYTES = TILE * sizeof(float);
    extern __shared__ __align__(128) unsigned char raw[];
    Sh &sh = *reinterpret_cast<Sh *>(raw);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t b = blockIdx.x, G = gridDim.x;
    auto tile_of = [&](int64_t i) { return b + i * G; };
    auto exists = [&](int64_t i) { return i >= 0 && tile_of(i) < ntiles; };
    AddD op;

    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&sh.bar[s], 1);
            sh.agg_seq[s] = 0;
            sh.pre_seq[s] = 0;
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int s = 0; s < STAGES; s++)
            if (exists(s)) {
                mbar_expect_tx(&sh.bar[s], BYTES);
                bulk_load(sh.stage[s], x + tile_of(s) * TILE, BYTES, &sh.bar[s]);
            }
    }
    __syncthreads();

    static_assert(STAGES >= NLB + 2 && NLB <= 4, "stages for NLB tiles in look-back");
    if (warp >= WARPS) {   // the look-back warps, tile i by warp i % NLB
        double *window = sh.window[warp - WARPS];
        for (int64_t i = warp - WARPS; exists(i); i += NLB) {
            const int s = (int)(i % STAGES);
            const int64_t t = tile_of(i);
            if (lane == 0)
                while (*(volatile int *)&sh.agg_seq[s] != (int)(i + 1)) {
                    if (LB == 3) __nanosleep(100);
                }
            __syncwarp();
            __threadfence_block();
            const double total = *(volatile double *)&sh.agg[s];
            double ex = 0.0;
            if constexpr (LB == 4) {
                // no look-back: the handshakes and the second scan alone (timing only)
            } else if constexpr (LB == 2) {
                if (lane == 0) st.post(t, kAggregate, total);
                ex = lookback_groups(op, st, gs, t, total, window);
            } else if (t == 0) {
                if (lane == 0) st.post(0, kInclusive, total);
            } else {
                if (lane == 0) st.post(t, kAggregate, total);
                if constexpr (LB == 1) ex = lookback_line_as<true, false>(op, st, t, window);
                else if constexpr (LB == 3) ex = lookback_line_as<false, true>(op, st, t, window);
                else ex = lookback_line(op, st, t, 0, window);
                if (lane == 0) st.post(t, kInclusive, ex + total);
            }
            if (lane == 0) {
                *(volatile double *)&sh.prefix[s] = ex;
                __threadfence_block();
                *(volatile int *)&sh.pre_seq[s] = (int)(i + 1);
            }
        }
        return;
    }

    for (int64_t i = 0; exists(i) || exists(i - NLB); i++) {
        if (exists(i)) {   // reduce tile i
            const int s = (int)(i % STAGES);
            mbar_wait(&sh.bar[s], (unsigned)(i / STAGES) & 1);
            double v[ITEMS];
            load_scan<ITEMS, true>(sh.stage[s], tid, v);
            double tex;
            const double inc = warp_scan(v[ITEMS - 1], &tex);
            if (lane == 31) sh.warp_total[s][warp] = inc;
            compute_sync(THREADS);
            if (tid == 0) {
                double total = 0.0;
#pragma unroll
                for (int w = 0; w < WARPS; w++) total += sh.warp_total[s][w];
                *(volatile double *)&sh.agg[s] = total;
                __threadfence_block();
                *(volatile int *)&sh.agg_seq[s] = (int)(i + 1);
            }
        }
        if (exists(i - NLB)) {   // finish tile i-NLB
            const int s = (int)((i - NLB) % STAGES);
            if (tid == 0) {
                while (*(volatile int *)&sh.pre_seq[s] != (int)(i - NLB + 1)) {
                    if (LB == 3) __nanosleep(100);
                }
                __threadfence_block();
            }
            compute_sync(THREADS);
            double v[ITEMS];
            load_scan<ITEMS, true>(sh.stage[s], tid, v);
            double tex;
            warp_scan(v[ITEMS - 1], &tex);
            double wpre = 0.0;
#pragma unroll
            for (int w = 0; w < WARPS; w++)
                if (w < warp) wpre += sh.warp_total[s][w];
            store_outputs<ITEMS, true>(sh.stage[s], tid, *(volatile double *)&sh.prefix[s] + (wpre + tex), v);
            fence_proxy_async();
            compute_sync(THREADS);
            if (tid == 0) {
                bulk_store(y + tile_of(i - NLB) * TILE, sh.stage[s], BYTES);
                // refill the stage of tile i-NLB-1 (stored one iteration ago) with the tile STAGES on
                const int64_t done = i - NLB - 1;
                if (done >= 0 && exists(done + STAGES)) {
                    const int ps = (int)(done % STAGES);
                    asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
                    mbar_expect_tx(&sh.bar[ps], BYTES);
                    bulk_load(sh.stage[ps], x + tile_of(done + STAGES) * TILE, BYTES, &sh.bar[ps]);
                }
            }
        }
    }
    if (tid == 0) bulk_wait_all();
}

__global__ void fill(float *x, int64_t n, unsigned seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 16;
        h *= 2246822519u;
        h ^= h >> 13;
        h *= 3266489917u;
        h ^= h >> 16;
        x[i] = (float)((h >> 8) * (1.0 / 16777216.0)) - 0.25f;
    }
}

static float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename F>
static float time_ms(F &&f, int reps = 25)
{
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 5; i++) f();
    std::vector<float> ts;
    for (int i = 0; i < reps; i++) {
        CHECK(cudaEventRecord(a));
        f();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        ts.push_back(ms);
    }
    CHECK(cudaGetLastError());
    return median(ts);
}

struct Ctx {
    float *x, *y;
    int64_t n;
    unsigned long long *status, *rstatus;
    unsigned *counter;
    unsigned epoch = 0;
    int sms;
    std::vector<double> ref;   // float64 prefix of x
    std::vector<float> xh;
};

static void check_result(Ctx &c, const char *name)
{
    std::vector<float> yh(c.n);
    CHECK(cudaMemcpy(yh.data(), c.y, c.n * sizeof(float), cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < c.n; i++) {
        const double r = c.ref[i];
        const float rf = (float)r;
        const double ulp = std::max(std::fabs((double)std::nextafter(rf, INFINITY) - rf), 1e-30);
        const double e = std::fabs((double)yh[i] - r) / ulp;
        if (!(e <= 1.0)) bad++;
        if (e > worst || std::isnan(e)) worst = e;
    }
    printf("  %-60s max error %.3f ulp, %lld outputs beyond 1 ulp\n", name, worst, (long long)bad);
}

// Checks one launch against the float64 prefix (when verify), then times two rounds.
template <typename L>
static void measure(Ctx &c, const char *name, float copy_ms, bool verify, L &&launch)
{
    if (verify) {
        CHECK(cudaMemset(c.y, 0xff, c.n * sizeof(float)));
        launch();
        CHECK(cudaDeviceSynchronize());
        check_result(c, name);
    }
    const float ms = time_ms(launch);
    const float ms2 = time_ms(launch);
    printf("  %-60s %.4f / %.4f ms  %5.1f%% / %5.1f%% of copy\n", name, ms, ms2, 100 * copy_ms / ms, 100 * copy_ms / ms2);
}

template <int THREADS, int ITEMS, int STAGES, int SWZ, int MINB = 1, int MODE = 0, int LBW = 0>
static void run_variant(Ctx &c, float copy_ms, bool verify)
{
    using Sh = StreamShared<THREADS, ITEMS, STAGES>;
    constexpr int TILE = THREADS * ITEMS;
    auto kern = stream_scan<THREADS, ITEMS, STAGES, SWZ, MINB, MODE, LBW>;
    const size_t smem = sizeof(Sh);
    CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int bps = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kern, THREADS, smem));
    const int64_t ntiles = c.n / TILE;
    if (ntiles * TILE != c.n) {
        printf("  n not a multiple of %d\n", TILE);
        return;
    }
    const int grid = bps * c.sms;
    auto launch = [&] {
        CHECK(cudaMemsetAsync(c.counter, 0, sizeof(unsigned)));
        PackedStatus<double> st{ c.status, ++c.epoch };
        PackedStatus<double> rs{ c.rstatus, c.epoch };
        kern<<<grid, THREADS, smem>>>(c.x, c.y, ntiles, st, rs, c.counter);
    };
    char name[128];
    static const char *modes[] = { "queue", "static", "no look-back", "rounds" };
    snprintf(name, sizeof name, "%s, window %d%s: tile %5d x %d stages%s, %d/SM", modes[MODE], LBW > 0 ? 32 * LBW : LBW < 0 ? 32 : 128,
             LBW > 0 ? " near" : LBW < 0 ? " tree" : "", TILE, STAGES, SWZ ? " swz" : "", bps);
    if (MODE == 3 && grid > 640) {
        printf("  %s: grid %d over 640\n", name, grid);
        return;
    }
    measure(c, name, copy_ms, verify && MODE != 2, launch);
}

template <int THREADS, int ITEMS, int STAGES, int MINB = 1, int LB = 0, int NLB = 1>
static void run_ws(Ctx &c, float copy_ms, bool verify)
{
    using Sh = WsShared<THREADS, ITEMS, STAGES>;
    constexpr int TILE = THREADS * ITEMS;
    auto kern = stream_scan_ws<THREADS, ITEMS, STAGES, MINB, LB, NLB>;
    const size_t smem = sizeof(Sh);
    CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int bps = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kern, THREADS + 32 * NLB, smem));
    const int64_t ntiles = c.n / TILE;
    const int grid = bps * c.sms;
    auto launch = [&] {
        PackedStatus<double> st{ c.status, ++c.epoch };
        PackedStatus<double> gs{ c.rstatus, c.epoch };
        kern<<<grid, THREADS + 32 * NLB, smem>>>(c.x, c.y, ntiles, st, gs);
    };
    char name[128];
    static const char *lbs[] = { "", ", tree fold", ", groups of 32", ", back-off", ", no look-back" };
    snprintf(name, sizeof name, "%d look-back warps%s: tile %5d x %d stages, %d/SM", NLB, lbs[LB], TILE, STAGES, bps);
    measure(c, name, copy_ms, verify && LB != 4, launch);
}

int main(int argc, char **argv)
{
    const int lg = argc > 1 ? atoi(argv[1]) : 28;
    Ctx c;
    c.n = (int64_t)1 << lg;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    c.sms = prop.multiProcessorCount;
    CHECK(cudaMalloc(&c.x, c.n * sizeof(float)));
    CHECK(cudaMalloc(&c.y, c.n * sizeof(float)));
    CHECK(cudaMalloc(&c.status, (c.n / 1024 + 64) * 16));
    CHECK(cudaMemset(c.status, 0, (c.n / 1024 + 64) * 16));
    CHECK(cudaMalloc(&c.counter, 16));
    CHECK(cudaMalloc(&c.rstatus, (c.n / 1024 + 64) * 16));
    CHECK(cudaMemset(c.rstatus, 0, (c.n / 1024 + 64) * 16));
    fill<<<4096, 256>>>(c.x, c.n, 12345u);
    CHECK(cudaDeviceSynchronize());
    c.xh.resize(c.n);
    c.ref.resize(c.n);
    CHECK(cudaMemcpy(c.xh.data(), c.x, c.n * sizeof(float), cudaMemcpyDeviceToHost));
    double acc = 0;
    for (int64_t i = 0; i < c.n; i++) c.ref[i] = acc += c.xh[i];

    auto copy = [&] { CHECK(cudaMemcpyAsync(c.y, c.x, c.n * sizeof(float), cudaMemcpyDeviceToDevice)); };
    const float copy_ms = time_ms(copy);
    printf("%s, %d SMs, 1 x 2^%d float32 -> float32 (float64 fold)\n", prop.name, c.sms, lg);
    printf("  device copy %.4f ms (%.0f GB/s)\n", copy_ms, 2.0 * c.n * 4 / copy_ms / 1e6);

    size_t temp = 0;
    CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp, c.x, c.y, (int)std::min<int64_t>(c.n, INT32_MAX)));
    void *d_temp;
    CHECK(cudaMalloc(&d_temp, temp));
    auto cub_run = [&] { CHECK(cub::DeviceScan::InclusiveSum(d_temp, temp, c.x, c.y, (int)c.n)); };
    const float cub_ms = time_ms(cub_run);
    printf("  CUB InclusiveSum (float32 fold)         %.4f ms  %5.1f%% of copy\n", cub_ms, 100 * copy_ms / cub_ms);

    // the round's last measurements (bench/RESULTS.md), then the next questions: tiles of 8192 in
    // conflict-free reads (512 compute threads), two-level groups with two look-back warps
    run_variant<256, 16, 3, 1, 3, 2, 0>(c, copy_ms, false);
    run_ws<256, 16, 4, 3, 4>(c, copy_ms, false);
    run_ws<256, 16, 4, 3>(c, copy_ms, false);
    run_ws<256, 16, 4, 3, 2>(c, copy_ms, false);
    run_ws<512, 16, 3, 1, 4>(c, copy_ms, false);
    run_ws<512, 16, 3, 1>(c, copy_ms, true);
    run_ws<512, 16, 3, 1, 2>(c, copy_ms, true);
    run_ws<512, 16, 4, 1, 2, 2>(c, copy_ms, true);
    run_ws<256, 16, 5, 2, 2, 2>(c, copy_ms, false);
    printf("  device copy again %.4f ms\n", time_ms(copy));
    return 0;
}
