// lookback.cuh - the one look-back module: how the units (tiles) of one line, or of one strip of
// lines, post their totals and find their prefixes (decoupled look-back, Merrill & Garland 2016);
// the work queue that hands units out in order; the scratch a launch needs.
//
// Determinism: a unit's inclusive prefix is defined as the chain P_i = P_{i-1} op A_i (A_i the
// unit's own total, P_{-1} the identity). A look-back that finds P_k further back folds
// P_k op A_{k+1} op ... op A_{i-1} left to right, which is bit for bit that chain whichever k the
// timing gives; a block that walks its units in order with a carry computes the same chain. So
// results never depend on scheduling.
//
// Status words carry the launch's epoch in their high bits, so words left by earlier launches read
// as empty and nothing is cleared between launches (src/cuda/runtime.c owns the buffers).
#pragma once
#include <cuda/atomic>
#include <cub/warp/warp_reduce.cuh>
#include "scan_common.cuh"

namespace cuscan {

enum : unsigned { kEmpty = 0, kAggregate = 1, kInclusive = 2 };

// Blocks take units in id order from a counter, so every predecessor of a unit has been taken by a
// running block, and a block holding unit u only ever waits on units below u.
struct WorkQueue {
    unsigned *counter;   // next unit id
    unsigned *done;      // blocks done taking units; the last one resets both words for the next launch
    int64_t units;

    __device__ __forceinline__ int64_t take(int64_t *slot, int &parity) const
    {
        if (threadIdx.x == 0) slot[parity] = atomicAdd(counter, 1u);
        __syncthreads();
        const int64_t u = slot[parity];
        parity ^= 1;
        return u;
    }
    // Called by every block once it will take no more units (after its last take). No fence: thread
    // 0 issues this only after its last take returned, so when the count completes every take of the
    // launch has been performed and the reset cannot overtake one; nothing else is ordered by it.
    __device__ __forceinline__ void finish() const
    {
        if (threadIdx.x == 0) {
            if (atomicAdd(done, 1u) == gridDim.x - 1) {
                atomicExch(counter, 0u);
                atomicExch(done, 0u);
            }
        }
    }
};

// ---- one value per unit: state and value in one 16-byte word ----
// A post is one aligned 16-byte store and a poll one 16-byte load, with no fences (as CUB's
// single-word tile status): the first half holds epoch << 2 | state, the second the value's bits.
// Every launch uses this one format, so a word left by an earlier launch can never be misread.
template <typename AccT>
struct PackedStatus {
    static_assert(sizeof(AccT) <= 8, "packed status holds values of up to 8 bytes");
    static constexpr int kWords = 2;   // 64-bit words per unit
    unsigned long long *word;
    unsigned epoch;

    __device__ __forceinline__ void post(int64_t unit, unsigned state, AccT v) const
    {
        const unsigned long long tag = epoch << 2 | state;
        unsigned long long b = 0;
        memcpy(&b, &v, sizeof v);
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(word + 2 * unit), "l"(tag), "l"(b) : "memory");
    }
    __device__ __forceinline__ unsigned poll(int64_t unit, AccT &v) const
    {
        unsigned long long tag, b;
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(tag), "=l"(b) : "l"(word + 2 * unit) : "memory");
        memcpy(&v, &b, sizeof v);
        return (tag >> 2) == epoch ? (unsigned)(tag & 3u) : kEmpty;
    }
};

constexpr int kLookbackPerLane = 4;   // look-back window: 32 lanes x 4 predecessors

// Exclusive prefix of unit `unit` of a line whose first unit is `first`: run by one whole warp.
// Waits until every predecessor in a 128-wide window has posted, finds the nearest inclusive
// prefix there, and folds the aggregates after it in order.
template <typename Op, typename AccT>
__device__ __noinline__ AccT lookback_line(Op op, const PackedStatus<AccT> &st, int64_t unit, int64_t first, AccT *window)
{
    const int lane = threadIdx.x & 31;
    unsigned flag[kLookbackPerLane];
    AccT val[kLookbackPerLane];
    for (;;) {
        bool waiting;
        do {
            waiting = false;
#pragma unroll
            for (int j = 0; j < kLookbackPerLane; j++) {
                int64_t u = unit - 1 - lane - 32 * j;
                val[j] = Op::identity();
                flag[j] = u >= first ? st.poll(u, val[j]) : kInclusive;
                waiting |= flag[j] == kEmpty;
            }
        } while (__any_sync(0xffffffffu, waiting));
        int nearest = -1;
#pragma unroll
        for (int j = kLookbackPerLane - 1; j >= 0; j--) {
            unsigned m = __ballot_sync(0xffffffffu, flag[j] == kInclusive);
            if (m) nearest = 32 * j + __ffs(m) - 1;
        }
        if (nearest < 0) continue;  // only aggregates in the window: poll again until a prefix lands
#pragma unroll
        for (int j = 0; j < kLookbackPerLane; j++) {
            int dist = lane + 32 * j;
            if (dist <= nearest) window[dist] = val[j];
        }
        __syncwarp();
        AccT acc = Op::identity();
        if (lane == 0) {
            acc = window[nearest];
            for (int d = nearest - 1; d >= 0; d--) acc = op(acc, window[d]);
        }
        return __shfl_sync(0xffffffffu, acc, 0);
    }
}

// ---- a vector of `width` values per unit (a strip of side-by-side lines) ----
// One flag per unit (release / acquire) and the values in two arrays; every thread of a block posts
// and reads the columns it owns.
template <typename AccT>
struct VectorStatus {
    unsigned *flag;      // per unit: epoch << 2 | state
    AccT *aggregate;     // per unit x width
    AccT *inclusive;     // per unit x width
    int width;
    unsigned epoch;

    __device__ __forceinline__ void set_flag(int64_t unit, unsigned state) const
    {
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> f(flag[unit]);
        f.store(epoch << 2 | state, cuda::memory_order_release);
    }
    __device__ __forceinline__ unsigned get_flag(int64_t unit) const
    {
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> f(flag[unit]);
        unsigned v = f.load(cuda::memory_order_acquire);
        return (v >> 2) == epoch ? (v & 3u) : kEmpty;
    }
    __device__ __forceinline__ AccT *slot(AccT *base, int64_t unit, int col) const
    {
        return base + (size_t)unit * width + col;
    }
};

// The block's prefix for `unit` of a strip whose units are `step` ids apart (unit - step is the one
// before it). Each thread passes N columns (cols[j]; n of them valid) with their unit totals and
// gets their exclusive prefixes; `owner` threads post the columns' values (one owner per column).
// A first unit (`first`) posts its inclusive prefix at once. Block-wide: every thread calls it.
template <int N, typename Op, typename AccT>
__device__ __forceinline__ void strip_lookback(const VectorStatus<AccT> &st, int64_t unit, int64_t step, bool first,
                                               bool owner, const int (&cols)[N], int n, const AccT (&total)[N],
                                               AccT (&prefix)[N], int *sh_distance)
{
    const Op op;
#pragma unroll
    for (int j = 0; j < N; j++) prefix[j] = Op::identity();
    if (!first) {
        if (owner)
#pragma unroll
            for (int j = 0; j < N; j++)
                if (j < n) *st.slot(st.aggregate, unit, cols[j]) = total[j];
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            st.set_flag(unit, kAggregate);
            int d = 1;
            for (;;) {
                const unsigned f = st.get_flag(unit - d * step);
                if (f == kInclusive) break;
                if (f == kAggregate) d++;
            }
            *sh_distance = d;
        }
        __syncthreads();
        const int d = *sh_distance;
        __threadfence();
#pragma unroll
        for (int j = 0; j < N; j++) {
            if (j >= n) continue;
            AccT p = __ldcg(st.slot(st.inclusive, unit - d * step, cols[j]));
            int k = d - 1;
            for (; k >= 4; k -= 4) {   // four loads in flight, folded in order
                AccT v[4];
#pragma unroll
                for (int i = 0; i < 4; i++) v[i] = __ldcg(st.slot(st.aggregate, unit - (k - i) * step, cols[j]));
#pragma unroll
                for (int i = 0; i < 4; i++) p = op(p, v[i]);
            }
            for (; k >= 1; k--) p = op(p, __ldcg(st.slot(st.aggregate, unit - k * step, cols[j])));
            prefix[j] = p;
        }
    }
    if (owner)
#pragma unroll
        for (int j = 0; j < N; j++)
            if (j < n) *st.slot(st.inclusive, unit, cols[j]) = op(prefix[j], total[j]);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) st.set_flag(unit, kInclusive);
}

// Host side: the scratch of one launch. Packed words for line pieces (per unit 1 or 2 64-bit
// words), or flags and two value arrays of `width` per unit for strips; the work queue always.
template <typename AccT>
struct LaunchScratch {
    WorkQueue queue;
    PackedStatus<AccT> packed;
    VectorStatus<AccT> vector;
};

template <typename AccT>
inline cs_status launch_scratch(LaunchScratch<AccT> *s, int64_t units, bool packed, int width)
{
    unsigned *flags;
    unsigned long long *words;
    void *values;
    unsigned epoch;
    const size_t nflags = packed || width == 0 ? 0 : (size_t)units;
    const size_t nwords = packed ? (size_t)units * PackedStatus<AccT>::kWords : 0;
    const size_t value_bytes = packed ? 0 : 2 * (size_t)units * (size_t)width * sizeof(AccT);
    cs_status st = cs_cuda_lookback_scratch(&flags, nflags, &words, nwords, &values, value_bytes, &epoch);
    if (st) return st;
    s->queue = WorkQueue{ flags, flags + 1, units };
    s->packed = PackedStatus<AccT>{ words, epoch };
    VectorStatus<AccT> v;
    v.flag = flags + CS_QUEUE_WORDS;
    v.aggregate = static_cast<AccT *>(values);
    v.inclusive = v.aggregate + (size_t)units * width;
    v.width = width;
    v.epoch = epoch;
    s->vector = v;
    return CS_OK;
}

}  // namespace cuscan
