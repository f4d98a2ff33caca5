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
//
// The state a unit posts may be a number or a small struct (scan_ops.cuh). A line's units post
// one state each: packed with the status in one 16-byte word when it fits in 12 bytes (Wire says
// how), else kept apart from a status flag and ordered by release / acquire (FencedStatus), as
// CUB's tile states for large types are. A strip's units post a vector of states: a packed word
// per column when the state fits one (ColumnStatus), else one flag and two arrays (VectorStatus),
// which few narrow strips use for every state, their flags polled by a window
// (strip_window_lookback).
#pragma once
#include <cuda/atomic>
#include <cub/warp/warp_reduce.cuh>
#include "scan_ops.cuh"

namespace cuscan {

enum : unsigned { kEmpty = 0, kAggregate = 1, kInclusive = 2 };

// Blocks take units in id order from a counter, so every predecessor of a unit has been taken by a
// running block, and a block holding unit u only ever waits on units below u.
struct WorkQueue {
    unsigned *counter;   // next unit id
    unsigned *done;      // blocks done taking units; the last one resets both words for the next launch
    int64_t units;

    // The next id for the whole block (a block barrier). Block-wide.
    __device__ __forceinline__ int64_t take(int64_t *slot, int &parity) const
    {
        return receive(slot, parity, ask());
    }
    // take in two halves, so that the counter's round trip overlaps other work: thread 0 asks,
    // later the block receives what it got (a block barrier). A block that asks ahead holds two
    // ids, but asks in increasing order, so the holder of the lowest unfinished id is working on
    // it and never waits: the order argument above still holds.
    __device__ __forceinline__ unsigned ask() const { return threadIdx.x == 0 ? atomicAdd(counter, 1u) : 0u; }
    __device__ __forceinline__ int64_t receive(int64_t *slot, int &parity, unsigned asked) const
    {
        if (threadIdx.x == 0) slot[parity] = asked;
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

// ---- one value per unit: status and state in one 16-byte word ----
// How a state travels in a packed word: 12 bytes, as a 64-bit `lo` and a 32-bit `hi`.
template <typename T>
struct Wire {   // a number of up to 8 bytes
    static constexpr bool kFits = std::is_arithmetic_v<T> && sizeof(T) <= 8;
    __device__ __forceinline__ static void pack(const T &v, unsigned long long &lo, unsigned &hi)
    {
        lo = 0;
        memcpy(&lo, &v, sizeof v);
        hi = 0;
    }
    __device__ __forceinline__ static T unpack(unsigned long long lo, unsigned)
    {
        T v;
        memcpy(&v, &lo, sizeof v);
        return v;
    }
};
template <typename T>
struct Wire<SegPair<T>> {   // a segmented number: the flag in hi
    static constexpr bool kFits = Wire<T>::kFits;
    __device__ __forceinline__ static void pack(const SegPair<T> &v, unsigned long long &lo, unsigned &hi)
    {
        Wire<T>::pack(v.v, lo, hi);
        hi = (unsigned)v.f;
    }
    __device__ __forceinline__ static SegPair<T> unpack(unsigned long long lo, unsigned hi)
    {
        return SegPair<T>{ (int)hi, Wire<T>::unpack(lo, 0) };
    }
};
template <typename V>
struct Wire<SegPair<ArgState<V>>> {   // segmented cummax of a <= 4-byte type: index and flag in lo
    static constexpr bool kFits = sizeof(V) <= 4;
    static constexpr unsigned long long kFlag = 1ull << 63;   // indices stay below 2^63
    __device__ __forceinline__ static void pack(const SegPair<ArgState<V>> &v, unsigned long long &lo, unsigned &hi)
    {
        lo = (unsigned long long)v.v.i | (v.f ? kFlag : 0);
        hi = 0;
        memcpy(&hi, &v.v.v, sizeof(V));
    }
    __device__ __forceinline__ static SegPair<ArgState<V>> unpack(unsigned long long lo, unsigned hi)
    {
        SegPair<ArgState<V>> v;
        v.f = (lo & kFlag) != 0;
        v.v.i = (int64_t)(lo & ~kFlag);
        memcpy(&v.v.v, &hi, sizeof(V));
        return v;
    }
};

// A post is one aligned 16-byte store and a poll one 16-byte load, with no fences (as CUB's
// single-word tile status): the first 8 bytes hold epoch << 2 | state in their low half and the
// wire's `hi` in their high half, the second 8 bytes the wire's `lo`. Every launch uses this one
// format, so a word left by an earlier launch can never be misread.
template <typename AccT>
struct PackedStatus {
    static_assert(Wire<AccT>::kFits, "packed status holds states of up to 12 bytes");
    static constexpr int kWords = 2;   // 64-bit words per unit
    unsigned long long *word;
    unsigned epoch;

    __device__ __forceinline__ void post(int64_t unit, unsigned state, AccT v) const
    {
        unsigned long long b;
        unsigned hi;
        Wire<AccT>::pack(v, b, hi);
        const unsigned long long tag = (unsigned long long)hi << 32 | (epoch << 2 | state);
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(word + 2 * unit), "l"(tag), "l"(b) : "memory");
    }
    __device__ __forceinline__ unsigned poll(int64_t unit, AccT &v) const
    {
        unsigned long long tag, b;
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(tag), "=l"(b) : "l"(word + 2 * unit) : "memory");
        v = Wire<AccT>::unpack(b, (unsigned)(tag >> 32));
        const unsigned t = (unsigned)tag;
        return (t >> 2) == epoch ? (t & 3u) : kEmpty;
    }
};

// acc folded with v[0], v[stride], ... (count of them) in order; `fresh`: acc starts as v[0].
template <typename Op, typename AccT>
__device__ __forceinline__ void fold_in_order(const Op &op, const AccT *v, int stride, int count, bool fresh, AccT &acc)
{
    int r = 0;
    if (fresh && count > 0) {
        acc = v[0];
        r = 1;
    }
    for (; r + 8 <= count; r += 8) {   // eight reads in flight
        AccT x[8];
#pragma unroll
        for (int i = 0; i < 8; i++) x[i] = v[(r + i) * stride];
#pragma unroll
        for (int i = 0; i < 8; i++) acc = op(acc, x[i]);
    }
    for (; r < count; r++) acc = op(acc, v[r * stride]);
}

constexpr int kLookbackPerLane = 4;   // look-back window: 32 lanes x 4 predecessors

// Exclusive prefix of unit `unit` of a line whose first unit is `first`: run by one whole warp.
// Waits until every predecessor in a 128-wide window has posted, finds the nearest inclusive
// prefix there, and folds the aggregates after it in order.
template <typename Op, typename Status, typename AccT>
__device__ __noinline__ AccT lookback_line(Op op, const Status &st, int64_t unit, int64_t first, AccT *window)
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
                val[j] = op.identity();
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
        AccT acc = op.identity();
        if (lane == 0) fold_in_order(op, window + nearest, -1, nearest + 1, true, acc);
        return shfl_state(acc, 0);
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

// ---- one state per unit, too large to pack: a flag, then the state apart ----
// A post stores the state and then releases the flag; a poll acquires the flag and then loads the
// state, from the aggregates or the inclusive prefixes as the flag says.
template <typename AccT>
struct FencedStatus {
    VectorStatus<AccT> s;   // width 1

    __device__ __forceinline__ void post(int64_t unit, unsigned state, AccT v) const
    {
        (state == kInclusive ? s.inclusive : s.aggregate)[unit] = v;
        s.set_flag(unit, state);
    }
    __device__ __forceinline__ unsigned poll(int64_t unit, AccT &v) const
    {
        const unsigned f = s.get_flag(unit);
        if (f != kEmpty) v = load_cg((f == kInclusive ? s.inclusive : s.aggregate) + unit);
        return f;
    }
};

// The status of a line's units for a state type.
template <typename AccT>
using LineStatus = std::conditional_t<Wire<AccT>::kFits, PackedStatus<AccT>, FencedStatus<AccT>>;

// The block's prefix for `unit` of a strip whose units are `step` ids apart (unit - step is the one
// before it). Each thread passes N columns (cols[j]; n of them valid) with their unit totals and
// gets their exclusive prefixes; `owner` threads post the columns' values (one owner per column).
// A first unit (`first`) starts from the prefix it passes in (the identity, or its lines' initial
// values) and posts its inclusive prefix at once. Block-wide: every thread calls it.
template <int N, typename Op, typename AccT>
__device__ __forceinline__ void strip_lookback(const Op &op, const VectorStatus<AccT> &st, int64_t unit, int64_t step,
                                               bool first, bool owner, const int (&cols)[N], int n,
                                               const AccT (&total)[N], AccT (&prefix)[N], int *sh_distance)
{
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
            AccT p = load_cg(st.slot(st.inclusive, unit - d * step, cols[j]));
            int k = d - 1;
            for (; k >= 4; k -= 4) {   // four loads in flight, folded in order
                AccT v[4];
#pragma unroll
                for (int i = 0; i < 4; i++) v[i] = load_cg(st.slot(st.aggregate, unit - (k - i) * step, cols[j]));
#pragma unroll
                for (int i = 0; i < 4; i++) p = op(p, v[i]);
            }
            for (; k >= 1; k--) p = op(p, load_cg(st.slot(st.aggregate, unit - k * step, cols[j])));
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

#ifdef CUSCAN_TRACE_JOIN   // bench/tune only: when each piece's phases end (globaltimer ns)
__device__ unsigned long long cs_join_trace[1 << 17][5];   // per slot: table done, prefix found, posted, distance, start
__device__ __forceinline__ void cs_trace(int64_t slot, int i, unsigned long long v)
{
    if (threadIdx.x == 0 && slot < (1 << 17)) cs_join_trace[slot][i] = v;
}
__device__ __forceinline__ unsigned long long cs_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
#define CS_TRACE(slot, i, v) cs_trace(slot, i, v)
#else
#define CS_TRACE(slot, i, v) ((void)0)
#endif

// ---- a strip's pieces joined by a window of flags ----
// One flag a piece, a strip's flags side by side (slot = strip * pieces + piece), so that one warp
// polls many predecessors with a few coalesced loads; values are read only once the flags say which
// to read, by the whole block into a shared buffer, and folded in order. (Column words polled this
// widely flood L2: a 16-byte word a column a predecessor; flags do not.) A flag is released by
// thread 0 after a block barrier, which orders every owner's values before it, as CUTLASS's block
// barriers do; a poll acquires.

// The distance k >= 1 to the nearest predecessor of `slot` (the unit `index` places after its chain's
// first, which posts an inclusive prefix at once) with an inclusive prefix, every one nearer having
// posted its aggregate; polls 128 predecessors a round and walks past aggregates. Warp-wide.
template <typename AccT>
__device__ __forceinline__ int nearest_inclusive(const VectorStatus<AccT> &st, int64_t slot, int64_t index)
{
    const int lane = threadIdx.x & 31;
    int64_t base = 0;   // predecessors 1..base are aggregates
    for (;;) {
        unsigned f[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int64_t k = base + 1 + lane + 32 * j;
            f[j] = k <= index ? st.get_flag(slot - k) : kInclusive;   // (the chain's first is nearer)
        }
        int pos = -1;
        unsigned fl = kEmpty;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const unsigned m = __ballot_sync(0xffffffffu, f[j] != kAggregate);
            if (pos < 0 && m) {
                pos = 32 * j + __ffs(m) - 1;
                fl = __shfl_sync(0xffffffffu, f[j], __ffs(m) - 1);
            }
        }
        if (pos < 0) base += 128;
        else if (fl == kInclusive) return (int)(base + 1 + pos);
        else base += pos;
    }
}

// acc folded with rows [0, nrows) of ncols values (row r at row_at(r)) in order, each thread its
// columns, `fresh`: acc starts as row 0; the rows pass through `buf` (buf_len states) a chunk at a
// time, read by the whole block. Block-wide.
template <int N, typename Op, typename AccT, typename RowAt>
__device__ __forceinline__ void fold_rows(const Op &op, RowAt row_at, int nrows, int ncols, const int (&cols)[N], int n,
                                          AccT *buf, int buf_len, AccT (&acc)[N])
{
    const int chunk = buf_len / ncols;
    for (int r0 = 0; r0 < nrows; r0 += chunk) {
        const int rows = min(chunk, nrows - r0);
        for (int i = threadIdx.x; i < rows * ncols; i += blockDim.x) {
            const int r = i / ncols, c = i - r * ncols;
            buf[i] = load_cg(row_at(r0 + r) + c);
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < N; j++)
            if (j < n) fold_in_order(op, buf + cols[j], ncols, rows, r0 == 0, acc[j]);
        __syncthreads();
    }
}

// Posts the owners' values of `slot` into `base` and then its flag. Block-wide.
template <int N, typename AccT>
__device__ __forceinline__ void post_values(const VectorStatus<AccT> &st, AccT *base, int64_t slot, unsigned state,
                                            bool owner, const int (&cols)[N], int n, const AccT (&v)[N])
{
    if (owner)
#pragma unroll
        for (int j = 0; j < N; j++)
            if (j < n) *st.slot(base, slot, cols[j]) = v[j];
    __syncthreads();
    if (threadIdx.x == 0) st.set_flag(slot, state);
}

// A window: each piece posts its aggregate, finds the nearest inclusive prefix (at any distance),
// folds the aggregates after it (the chain of the determinism note) and posts its own. Block-wide:
// every thread calls it; threads with columns (n > 0) get their prefixes, owners post.
template <int N, typename Op, typename AccT>
__device__ __forceinline__ void strip_window_lookback(const Op &op, const VectorStatus<AccT> &st, int64_t slot,
                                                      int64_t piece, int ncols, bool owner, const int (&cols)[N], int n,
                                                      const AccT (&total)[N], AccT (&prefix)[N], AccT *buf,
                                                      int buf_len, int *sh_distance)
{
    CS_TRACE(slot, 0, cs_now());
#pragma unroll
    for (int j = 0; j < N; j++) prefix[j] = op.identity();
    AccT post[N];
    if (piece == 0) {   // a strip's first piece starts from nothing: its inclusive prefix at once
#pragma unroll
        for (int j = 0; j < N; j++) post[j] = op(prefix[j], total[j]);
        post_values(st, st.inclusive, slot, kInclusive, owner, cols, n, post);
        return;
    }
    post_values(st, st.aggregate, slot, kAggregate, owner, cols, n, total);
    if (threadIdx.x < 32) {
        const int d = nearest_inclusive(st, slot, piece);
        if (threadIdx.x == 0) *sh_distance = d;
    }
    __syncthreads();
    const int d = *sh_distance;
    CS_TRACE(slot, 1, cs_now());
    CS_TRACE(slot, 3, d);
    // predecessor d's inclusive prefix, then the aggregates of d - 1, ..., 1
    fold_rows(op, [&](int r) { return st.slot(r == 0 ? st.inclusive : st.aggregate, slot - d + r, 0); }, d, ncols, cols,
              n, buf, buf_len, prefix);
#pragma unroll
    for (int j = 0; j < N; j++) post[j] = op(prefix[j], total[j]);
    post_values(st, st.inclusive, slot, kInclusive, owner, cols, n, post);
    CS_TRACE(slot, 2, cs_now());
}

// ---- a vector of `width` values per unit, a packed word per value ----
// Each (unit, column) posts its aggregate and its inclusive prefix in two packed words (status and
// value in one 16-byte store, as PackedStatus), so a column's look-back needs no flag, fence or
// block barrier: the threads of a column read their predecessors' words themselves, and a word
// read early (before the tile's loads land) is as good as one read late.
template <typename AccT>
struct ColumnStatus {
    using Words = PackedStatus<std::conditional_t<Wire<AccT>::kFits, AccT, double>>;   // (unused when AccT does not fit)
    Words aggregate, inclusive;
    int64_t width;

    __device__ __forceinline__ int64_t at(int64_t unit, int col) const { return unit * width + col; }
    // the prefix of (unit, col) if it has been posted
    __device__ __forceinline__ bool peek(int64_t unit, int col, AccT &v) const
    {
        return inclusive.poll(at(unit, col), v) == kInclusive;
    }
};

// The exclusive prefix of column `col` of `unit` (not a strip's first), its predecessors `step`
// ids apart: the nearest predecessor with a posted prefix, then the aggregates after it folded in
// order (the chain of lookback.cuh's determinism note). `owner` posts the unit's aggregate first,
// then its inclusive prefix. Per thread; polls four predecessors at a time.
template <typename Op, typename AccT>
__device__ __forceinline__ AccT column_lookback(const Op &op, const ColumnStatus<AccT> &cs, int64_t unit, int64_t step,
                                                int col, bool owner, AccT total)
{
    if (owner) cs.aggregate.post(cs.at(unit, col), kAggregate, total);
    int64_t done = 0;   // predecessors 1..done have posted their aggregates
    AccT p;
    int64_t d;
    for (;;) {
        unsigned fi[4], fa[4];
        AccT vi[4], va[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int64_t u = unit - (done + 1 + i) * step;
            fi[i] = fa[i] = kEmpty;
            if (u >= 0) {
                fi[i] = cs.inclusive.poll(cs.at(u, col), vi[i]);
                fa[i] = cs.aggregate.poll(cs.at(u, col), va[i]);
            }
        }
        int found = -1, posted = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            if (found >= 0 || posted < i) continue;
            if (fi[i] == kInclusive) found = i;
            else if (fa[i] == kAggregate) posted = i + 1;
        }
        if (found >= 0) {
            d = done + 1 + found;
            p = vi[0];
#pragma unroll
            for (int i = 1; i < 4; i++)
                if (i == found) p = vi[i];
            break;
        }
        done += posted;
    }
    for (int64_t k = d - 1; k >= 1; k--) {   // aggregates, once posted, never change
        AccT v;
        cs.aggregate.poll(cs.at(unit - k * step, col), v);
        p = op(p, v);
    }
    return p;
}

// ---- a strip's pieces joined by a tree of sums ----
// The prefix of piece q of a strip is not a chain through every piece before it but the fold of
// at most log2(q) block sums, the blocks that binary q cuts [0, q) into (largest first). Each
// block sum is a fixed tree of its halves: piece q posts its own total (level 0) and, for every k
// with 2^k dividing q + 1, the sum of the 2^k pieces ending at q, the previous level's block before
// it folded with its own. The bits follow from q alone (no timing), and a piece waits for the
// pieces just before it only as long as their few tree levels take, where a chain of look-backs
// through a few long strips advances a window of pieces a round trip. Words are packed (status and
// value), one per (level, block, strip, column); level k holds pieces >> k blocks.
template <typename AccT>
struct PieceTree {
    PackedStatus<std::conditional_t<Wire<AccT>::kFits, AccT, double>> words;   // (unused when AccT does not fit)
    int64_t pieces, strips;
    int64_t width;

    // the word of the level-k block that ends at piece `end`
    __device__ __forceinline__ int64_t at(int k, int64_t end, int64_t strip, int col) const
    {
        int64_t base = 0;
        for (int j = 0; j < k; j++) base += pieces >> j;
        return ((base + ((end + 1) >> k) - 1) * strips + strip) * width + col;
    }
    __device__ __forceinline__ AccT wait(int64_t w) const
    {
        AccT v;
        while (words.poll(w, v) != kInclusive) {}
        return v;
    }
    // The highest block of piece q's prefix (q > 0), the oldest: read early, it is often there.
    __device__ __forceinline__ bool peek_first(int64_t q, int64_t strip, int col, AccT &v) const
    {
        const int b = 63 - __clzll(q);
        return words.poll(at(b, (1ll << b) - 1, strip, col), v) == kInclusive;
    }
    // Posts piece q's total and the blocks it ends; the last piece of a strip posts nothing (no
    // piece reads it). Per thread, one thread a column.
    template <typename Op>
    __device__ __forceinline__ void post(const Op &op, int64_t q, int64_t strip, int col, AccT total) const
    {
        if (q + 1 >= pieces) return;
        AccT s = total;
        words.post(at(0, q, strip, col), kInclusive, s);
        for (int k = 1; ((q + 1) & ((1ll << k) - 1)) == 0; k++) {
            s = op(wait(at(k - 1, q - (1ll << (k - 1)), strip, col)), s);
            words.post(at(k, q, strip, col), kInclusive, s);
        }
    }
    // The exclusive prefix of piece q > 0: its blocks folded from the first (`first` its sum when
    // peek_first found it). Four blocks in flight at a time.
    template <typename Op>
    __device__ __forceinline__ AccT prefix(const Op &op, int64_t q, int64_t strip, int col, bool have_first,
                                           AccT first) const
    {
        int b = 63 - __clzll(q);
        AccT p = have_first ? first : wait(at(b, (1ll << b) - 1, strip, col));
        int64_t start = 1ll << b, rest = q - start;
        while (rest) {
            int64_t w[4];
            AccT v[4];
            unsigned f[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                w[i] = -1;
                if (!rest) continue;
                const int c = 63 - __clzll(rest);
                start += 1ll << c;
                rest -= 1ll << c;
                w[i] = at(c, start - 1, strip, col);
                f[i] = words.poll(w[i], v[i]);
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
                if (w[i] < 0) continue;
                if (f[i] != kInclusive) v[i] = wait(w[i]);
                p = op(p, v[i]);
            }
        }
        return p;
    }
};

// Host side: the scratch of one launch. For a line's units (`line`: line pieces) packed words (2
// 64-bit words a unit) or a fenced status; for strips flags and two value arrays of `width` per
// unit (none when width is 0); the work queue always.
template <typename AccT>
struct LaunchScratch {
    WorkQueue queue;
    LineStatus<AccT> line;
    VectorStatus<AccT> vector;
    ColumnStatus<AccT> column;   // with `columns`: packed words of `width` columns a unit
};

template <typename AccT>
inline cs_status launch_scratch(LaunchScratch<AccT> *s, int64_t units, bool line, int width, bool columns = false)
{
    constexpr bool packed = Wire<AccT>::kFits;
    if (columns) {
        if constexpr (packed) {
            unsigned *flags;
            unsigned long long *words;
            void *values;
            unsigned epoch;
            const size_t n = (size_t)units * (size_t)width * PackedStatus<AccT>::kWords;
            cs_status st = cs_cuda_lookback_scratch(&flags, 0, &words, 2 * n, &values, 0, &epoch);
            if (st) return st;
            s->queue = WorkQueue{ flags, flags + 1, units };
            s->column = ColumnStatus<AccT>{ PackedStatus<AccT>{ words, epoch }, PackedStatus<AccT>{ words + n, epoch }, width };
            return CS_OK;
        }
    }
    if (line && !packed) width = 1;
    unsigned *flags;
    unsigned long long *words;
    void *values;
    unsigned epoch;
    const size_t nflags = (line && packed) || width == 0 ? 0 : (size_t)units;
    const size_t nwords = line && packed ? (size_t)units * PackedStatus<double>::kWords : 0;
    const size_t value_bytes = line && packed ? 0 : 2 * (size_t)units * (size_t)width * sizeof(AccT);
    cs_status st = cs_cuda_lookback_scratch(&flags, nflags, &words, nwords, &values, value_bytes, &epoch);
    if (st) return st;
    s->queue = WorkQueue{ flags, flags + 1, units };
    VectorStatus<AccT> v;
    v.flag = flags + CS_QUEUE_WORDS;
    v.aggregate = static_cast<AccT *>(values);
    v.inclusive = v.aggregate + (size_t)units * width;
    v.width = width;
    v.epoch = epoch;
    s->vector = v;
    if constexpr (packed) s->line = PackedStatus<AccT>{ words, epoch };
    else s->line = FencedStatus<AccT>{ v };
    return CS_OK;
}

}  // namespace cuscan
