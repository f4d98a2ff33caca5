// scan_slabs.cuh - the slab family: x, mask and out share one dense layout, so each holds `outer`
// slabs of `len` rows of `inner` contiguous elements, one stream. Whatever len and inner are (3,
// 999, 2, 7, ...), a tile is a run of whole rows (for wide rows, of a block of columns): it goes
// into shared memory with coalesced vector loads, each thread scans a segment of one column there,
// and the tile goes back out with coalesced vector stores. DRAM sees each byte once.
//
// Three modes (scan_launch.cuh picks one):
//   whole   a tile holds whole slabs (len rows); no tile depends on another;
//   walk    a slab is longer than a tile: a block takes a strip (one slab, one column block) and
//           walks its pieces in order, the carry of each column in shared memory;
//   lookback  few long strips: one piece per unit, the pieces of a strip joined by the look-back
//           with a vector of `width` carries (lookback.cuh).
// In a tile, the columns are cut into S segments of SR rows; a thread folds its segment, a block-wide
// segmented scan of the segment totals gives each segment its prefix, and the thread writes its
// outputs back in place. Head rows (a slab's first row in scan order) restart the fold. The order
// of every combine follows from the shape alone, so a scan gives the same bits on every run, and
// walking and looking back give the same bits too.
#pragma once
#include "lookback.cuh"
#include "scan_rows.cuh"   // SegPair, seg_combine, warp_seg_scan

namespace cuscan {

enum SlabMode { kSlabWhole = 0, kSlabWalk = 1, kSlabLookback = 2 };

struct SlabArgs {
    const void *x;
    const unsigned char *mask;
    void *out;
    int64_t outer, len, inner;
    int width;                // W: columns of a tile
    int64_t col_blocks;       // ceil(inner / W)
    int rows;                 // R: rows of a full tile
    int64_t slabs_per_tile;   // whole mode: slabs a tile holds (R = slabs_per_tile * len)
    int64_t pieces;           // walk and lookback: tiles along a strip, ceil(len / R)
    int64_t strips;           // walk and lookback: outer * col_blocks
    int segs;                 // S: segments per column (width <= threads), else 1
    int seg_rows;             // SR = ceil(R / S)
    int pad;                  // shared elements after every SR logical rows (keeps a warp's column walks apart)
    FastDiv div_inner, div_seg_rows, div_width_in, div_width_out;   // by inner, SR, W / VIN, W / VOUT
    int vec_in, vec_out;      // x (and mask) / out may move in 16-byte vectors
    int prefetch;             // whole and walk tiles: load the next tile while scanning this one
    int exclusive;
    int mode;
    int64_t units;
};

// Where one tile lies: rows [row0, row0 + nrows) of the stream (global row = slab * len + row) and
// columns [col0, col0 + ncols); `piece` along its strip; `first_slab_row` says whether the first
// logical row of the tile is a slab's first (scan order).
struct SlabTile {
    int64_t row0, col0;
    int nrows, ncols;
    int nblocks;              // segment blocks of SR logical rows: ceil(nrows / SR)
    int64_t piece, strip;
};

template <class S>
struct SlabScan {
    using P = typename S::P;
    using InT = typename S::InT;
    using AccT = typename S::AccT;
    using OutT = typename S::OutT;
    using Op = typename S::Op;
    static constexpr int THREADS = P::kSlabThreads;
    static constexpr int WARPS = THREADS / kWarp;
    // elements of a full tile (masked tiles are smaller: the prefetched mask needs registers too)
    static constexpr int TILE = P::kSlabStageBytes / (S::MASKED ? P::kSlabMaskedDivisor : 1) / (int)sizeof(OutT);
    static constexpr int STAGE = TILE + 4 * THREADS + 16;                   // plus the pads
    static constexpr int VIN = 16 / (int)sizeof(InT), VOUT = 16 / (int)sizeof(OutT);
    static constexpr int MAX_COLS = (P::kSlabMaxWidth + THREADS - 1) / THREADS;  // columns a thread owns (S = 1)

    struct Shared {
        OutT stage[STAGE];
        AccT carry[P::kSlabMaxWidth];
        SegPair<AccT> warp_total[WARPS];
        int64_t slot[2];
        int distance;
    };

    __device__ __forceinline__ static SlabTile tile_of(const SlabArgs &a, int64_t unit, int64_t piece_in = -1)
    {
        SlabTile t;
        if (a.mode == kSlabWhole) {
            const int64_t cb = unit % a.col_blocks, g = unit / a.col_blocks;
            const int64_t slab0 = g * a.slabs_per_tile;
            t.row0 = slab0 * a.len;
            t.nrows = (int)(min(a.slabs_per_tile, a.outer - slab0) * a.len);
            t.col0 = cb * a.width;
            t.piece = 0;
            t.strip = 0;
        } else {
            t.strip = piece_in < 0 ? unit % a.strips : unit;
            t.piece = piece_in < 0 ? unit / a.strips : piece_in;
            const int64_t o = t.strip / a.col_blocks, cb = t.strip % a.col_blocks;
            const int64_t lo = t.piece * a.rows, hi = min(a.len, lo + a.rows);   // logical rows
            t.nrows = (int)(hi - lo);
            t.row0 = o * a.len + (S::REVERSE ? a.len - hi : lo);
            t.col0 = cb * a.width;
        }
        t.ncols = (int)min((int64_t)a.width, a.inner - t.col0);
        t.nblocks = (int)a.div_seg_rows.div((unsigned)(t.nrows + a.seg_rows - 1));
        return t;
    }

    // Shared index of tile element (r, c) whose logical row (scan order) lies in segment block `blk`
    // (rho / SR): rows of ncols elements, `pad` spare elements between segment blocks, which are
    // counted in physical order (from the end when reversed) so the index grows with (r, c).
    __device__ __forceinline__ static int sidx(const SlabArgs &a, const SlabTile &t, int r, int c, int blk)
    {
        return r * t.ncols + c + (S::REVERSE ? t.nblocks - 1 - blk : blk) * a.pad;
    }

    __device__ __forceinline__ static OutT staged(InT v, bool keep)
    {
        return keep ? OutT(to_acc<AccT>(v)) : OutT(to_acc<AccT>(S::in_zero()));
    }

    // A position in the tile's flat order (row-major over nrows x ncols) that can step forward.
    struct Cursor {
        int r, c, rho, blk;
        __device__ __forceinline__ Cursor(const SlabArgs &a, const SlabTile &t, int r0, int c0) : r(r0), c(c0)
        {
            rho = S::REVERSE ? t.nrows - 1 - r : r;
            blk = (int)a.div_seg_rows.div((unsigned)rho);
        }
        __device__ __forceinline__ int index(const SlabArgs &a, const SlabTile &t) const { return sidx(a, t, r, c, blk); }
        __device__ __forceinline__ void next(const SlabArgs &a, const SlabTile &t)
        {
            if (++c == t.ncols) {
                c = 0;
                r++;
                rho += S::REVERSE ? -1 : 1;
                blk = (int)a.div_seg_rows.div((unsigned)rho);
            }
        }
    };

    // How a tile's elements are cut into runs of the stream: a contiguous tile (whole rows) into
    // aligned vectors of V in the middle and single elements at its two ends; a block of columns
    // into one run per row and vector (a full block with aligned rows), or single elements.
    template <int V>
    struct Runs {
        int64_t f0;             // contiguous: stream index of the tile's first element
        int n, head, nvec, tail0;
        int per_row, step;      // a block of columns: runs per row, elements per run
        bool contiguous, vec;

        __device__ __forceinline__ Runs(const SlabArgs &a, const SlabTile &t, bool vec_ok)
        {
            n = t.nrows * t.ncols;
            contiguous = t.ncols == a.inner;
            f0 = t.row0 * a.inner;
            if (contiguous) {
                head = n;
                nvec = 0;
                if (vec_ok) {
                    head = (int)((V - f0 % V) % V);
                    if (head > n) head = n;
                    nvec = (n - head) / V;
                }
                tail0 = head + nvec * V;
                vec = vec_ok;
                per_row = step = 0;
            } else {
                vec = vec_ok && t.ncols == a.width;   // the last, narrower block goes element by element
                per_row = vec ? t.ncols / V : t.ncols;
                step = vec ? V : 1;
                nvec = vec ? t.nrows * per_row : 0;
                head = tail0 = 0;
            }
        }
        // single elements (contiguous tiles: the two ends; blocks of columns without vectors: all)
        __device__ __forceinline__ int singles() const { return contiguous ? head + (n - tail0) : (vec ? 0 : n); }
        __device__ __forceinline__ int64_t single(const SlabArgs &a, const SlabTile &t, int e, int &r, int &c) const
        {
            if (contiguous) {
                const int ee = e < head ? e : tail0 + (e - head);
                r = (int)a.div_inner.div((unsigned)ee);
                c = ee - r * t.ncols;
                return f0 + ee;
            }
            r = e / t.ncols;
            c = e - r * t.ncols;
            return (t.row0 + r) * a.inner + t.col0 + c;
        }
        __device__ __forceinline__ int64_t vector(const SlabArgs &a, const SlabTile &t, const FastDiv &div_per_row,
                                                  int i, int &r, int &c) const
        {
            if (contiguous) {
                const int ee = head + i * V;
                r = (int)a.div_inner.div((unsigned)ee);
                c = ee - r * t.ncols;
                return f0 + ee;
            }
            r = (int)div_per_row.div((unsigned)i);
            c = (i - r * per_row) * V;
            return (t.row0 + r) * a.inner + t.col0 + c;
        }
    };

    // Walks the tile's runs: f(global element index, cursor at its first element, count).
    template <int V, typename F>
    __device__ __forceinline__ static void for_each_run(const SlabArgs &a, const SlabTile &t, bool vec,
                                                        const FastDiv &div_per_row, F &&f)
    {
        const Runs<V> g(a, t, vec);
        int r, c;
        for (int e = threadIdx.x; e < g.singles(); e += THREADS) {
            const int64_t gi = g.single(a, t, e, r, c);
            f(gi, Cursor(a, t, r, c), 1);
        }
        for (int i = threadIdx.x; i < g.nvec; i += THREADS) {
            const int64_t gi = g.vector(a, t, div_per_row, i, r, c);
            f(gi, Cursor(a, t, r, c), V);
        }
    }

    __device__ __forceinline__ static void load_tile(const SlabArgs &a, const SlabTile &t, Shared &sh)
    {
        const InT *x = static_cast<const InT *>(a.x);
        for_each_run<VIN>(a, t, a.vec_in, a.div_width_in, [&](int64_t g, Cursor cur, int count) {
            if (count == VIN) {
                const Vec<InT, VIN> xv = load_vec<InT, VIN>(x + g);
                Vec<unsigned char, VIN> mv;
                if constexpr (S::MASKED) mv = load_vec<unsigned char, VIN>(a.mask + g);
#pragma unroll
                for (int j = 0; j < VIN; j++) {
                    sh.stage[cur.index(a, t)] = staged(xv.v[j], !S::MASKED || mv.v[j]);
                    cur.next(a, t);
                }
            } else {
                sh.stage[cur.index(a, t)] = staged(x[g], !S::MASKED || a.mask[g]);
            }
        });
    }

    // A tile's loads held in registers, issued before the previous tile is scanned so that they are
    // in flight meanwhile (vector tiles only: at most NV vectors and one single element a thread).
    static constexpr int NV = TILE / (THREADS * VIN) > 0 ? TILE / (THREADS * VIN) : 1;
    struct Fetched {
        Vec<InT, VIN> v[NV];
        Vec<unsigned char, VIN> m[NV];
        InT e;
        unsigned char em;
    };

    __device__ __forceinline__ static void fetch(const SlabArgs &a, const SlabTile &t, Fetched &f)
    {
        const InT *x = static_cast<const InT *>(a.x);
        const Runs<VIN> g(a, t, true);
        int r, c;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int i = threadIdx.x + j * THREADS;
            if (i < g.nvec) {
                const int64_t gi = g.vector(a, t, a.div_width_in, i, r, c);
                f.v[j] = load_vec<InT, VIN>(x + gi);
                if constexpr (S::MASKED) f.m[j] = load_vec<unsigned char, VIN>(a.mask + gi);
            }
        }
        if ((int)threadIdx.x < g.singles()) {
            const int64_t gi = g.single(a, t, threadIdx.x, r, c);
            f.e = x[gi];
            if constexpr (S::MASKED) f.em = a.mask[gi];
        }
    }

    __device__ __forceinline__ static void stage_fetched(const SlabArgs &a, const SlabTile &t, const Fetched &f, Shared &sh)
    {
        const Runs<VIN> g(a, t, true);
        int r, c;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int i = threadIdx.x + j * THREADS;
            if (i < g.nvec) {
                g.vector(a, t, a.div_width_in, i, r, c);
                Cursor cur(a, t, r, c);
#pragma unroll
                for (int k = 0; k < VIN; k++) {
                    sh.stage[cur.index(a, t)] = staged(f.v[j].v[k], !S::MASKED || f.m[j].v[k]);
                    cur.next(a, t);
                }
            }
        }
        if ((int)threadIdx.x < g.singles()) {
            g.single(a, t, threadIdx.x, r, c);
            sh.stage[Cursor(a, t, r, c).index(a, t)] = staged(f.e, !S::MASKED || f.em);
        }
    }

    // Tiles a thread can prefetch: vector loads, and at most one single element a thread.
    __device__ __forceinline__ static bool can_fetch(const SlabArgs &a) { return a.vec_in && a.prefetch; }

    __device__ __forceinline__ static void store_tile(const SlabArgs &a, const SlabTile &t, const Shared &sh)
    {
        OutT *y = static_cast<OutT *>(a.out);
        for_each_run<VOUT>(a, t, a.vec_out, a.div_width_out, [&](int64_t g, Cursor cur, int count) {
            if (count == VOUT) {
                Vec<OutT, VOUT> ov;
#pragma unroll
                for (int j = 0; j < VOUT; j++) {
                    ov.v[j] = sh.stage[cur.index(a, t)];
                    cur.next(a, t);
                }
                store_vec<OutT, VOUT>(y + g, ov);
            } else {
                y[g] = sh.stage[cur.index(a, t)];
            }
        });
    }

    // The block-wide exclusive segmented scan of one pair per thread (threads in order).
    __device__ __forceinline__ static SegPair<AccT> block_seg_exclusive(SegPair<AccT> p, Shared &sh)
    {
        const Op op;
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        SegPair<AccT> total;
        const SegPair<AccT> incl = warp_seg_scan(op, p, &total);
        if (lane == 0) sh.warp_total[warp] = total;
        __syncthreads();
        SegPair<AccT> before{ 0, Op::identity() };
        for (int w = 0; w < warp; w++) before = seg_combine(op, before, sh.warp_total[w]);
        SegPair<AccT> ex{ __shfl_up_sync(0xffffffffu, incl.f, 1), __shfl_up_sync(0xffffffffu, incl.v, 1) };
        if (lane == 0) ex = SegPair<AccT>{ 0, Op::identity() };
        return seg_combine(op, before, ex);
    }

    // Scans the staged tile in place. carry(c) gives the prefix a column starts from (the identity
    // for a tile that starts its slabs); the column totals of the tile go to total[] of the threads
    // with owner set (one per column; cols[] names them). Block-wide.
    struct Walk {
        int c[MAX_COLS];     // columns this thread scans (segment s of each)
        int ncols;           // how many
        int s;               // its segment
        bool owner;          // it holds the last segment of its columns
    };

    __device__ __forceinline__ static Walk walk_of(const SlabArgs &a, const SlabTile &t)
    {
        Walk w;
        w.ncols = 0;
        if (a.segs > 1) {
            const int col = threadIdx.x / a.segs;
            w.s = threadIdx.x - col * a.segs;
            if (col < t.ncols) {
                w.c[0] = col;
                w.ncols = 1;
            }
#pragma unroll
            for (int j = 1; j < MAX_COLS; j++) w.c[j] = 0;
        } else {
            w.s = 0;
#pragma unroll
            for (int j = 0; j < MAX_COLS; j++) {
                w.c[j] = threadIdx.x + j * THREADS;
                if (w.c[j] < t.ncols) w.ncols = j + 1;
            }
        }
        w.owner = w.s == a.segs - 1;
        return w;
    }

    // Heads are the logical rows that start a slab (scan order): every len-th row of a tile of whole
    // slabs, the first row of a strip's first piece. slab_row counts up to the next head (0: head).
    __device__ __forceinline__ static int first_slab_row(const SlabArgs &a, const SlabTile &t, int rho)
    {
        if (a.mode == kSlabWhole) return rho % (int)a.len;
        return t.piece == 0 ? rho : 1;
    }
    __device__ __forceinline__ static void next_slab_row(const SlabArgs &a, int &slab_row)
    {
        if (++slab_row == (int)a.len && a.mode == kSlabWhole) slab_row = 0;
    }

    // Pass 1: this segment's (head seen, fold since the last head) for column c.
    __device__ __forceinline__ static SegPair<AccT> segment_total(const SlabArgs &a, const SlabTile &t, const Shared &sh,
                                                                  int s, int c)
    {
        const Op op;
        SegPair<AccT> acc{ 0, Op::identity() };
        const int lo = s * a.seg_rows, hi = min(t.nrows, lo + a.seg_rows);
        int slab_row = first_slab_row(a, t, lo);
        for (int rho = lo; rho < hi; rho++) {
            const int r = S::REVERSE ? t.nrows - 1 - rho : rho;
            const AccT v = to_acc<AccT>(sh.stage[sidx(a, t, r, c, s)]);
            if (slab_row == 0) acc = SegPair<AccT>{ 1, v };
            else acc.v = op(acc.v, v);
            next_slab_row(a, slab_row);
        }
        return acc;
    }

    // Pass 2: outputs of column c's segment s, from `prefix` (the fold of everything before it).
    __device__ __forceinline__ static void segment_outputs(const SlabArgs &a, const SlabTile &t, Shared &sh, int s,
                                                           int c, AccT prefix)
    {
        const Op op;
        const int lo = s * a.seg_rows, hi = min(t.nrows, lo + a.seg_rows);
        int slab_row = first_slab_row(a, t, lo);
        AccT acc = prefix;
        for (int rho = lo; rho < hi; rho++) {
            const int r = S::REVERSE ? t.nrows - 1 - rho : rho;
            const int k = sidx(a, t, r, c, s);
            const AccT v = to_acc<AccT>(sh.stage[k]);
            const bool head = slab_row == 0;
            const AccT before = acc;
            acc = head ? v : op(acc, v);
            sh.stage[k] = to_out<OutT>(a.exclusive ? (head ? Op::zero() : before) : acc);
            next_slab_row(a, slab_row);
        }
    }
};

// Shared by the three modes: scan one staged tile. After pass 1, join(tile, walk, total, carry)
// (block-wide) turns the tile's column totals (held by the owner threads) into the prefixes each
// thread's columns start from (the identity when nothing comes before). Returns after pass 2 (the
// stage holds the outputs).
template <class S, typename Join>
__device__ __forceinline__ void scan_staged_tile(const SlabArgs &a, const SlabTile &t, typename SlabScan<S>::Shared &sh,
                                                 Join &&join)
{
    using T = SlabScan<S>;
    using AccT = typename S::AccT;
    using Op = typename S::Op;
    const Op op;
    if (a.segs == 1 && a.mode == kSlabWhole) {
        // wide whole slabs: a thread scans every THREADS-th column, nothing carried in or out
        for (int c = threadIdx.x; c < t.ncols; c += T::THREADS) T::segment_outputs(a, t, sh, 0, c, Op::identity());
        return;
    }
    const typename T::Walk w = T::walk_of(a, t);
    AccT seg_prefix[T::MAX_COLS], total[T::MAX_COLS];
    if (a.segs > 1) {
        // one column per thread, S segments a column: a segmented scan across the segments
        const int c = w.c[0];
        SegPair<AccT> agg = w.ncols ? T::segment_total(a, t, sh, w.s, c) : SegPair<AccT>{ 0, Op::identity() };
        SegPair<AccT> in = agg;
        if (w.s == 0) in.f = 1;   // a column's first segment starts its fold
        const SegPair<AccT> ex = T::block_seg_exclusive(in, sh);
        seg_prefix[0] = w.s == 0 ? Op::identity() : ex.v;
        total[0] = agg.f ? agg.v : op(seg_prefix[0], agg.v);
#pragma unroll
        for (int j = 1; j < T::MAX_COLS; j++) seg_prefix[j] = total[j] = Op::identity();
    } else {
#pragma unroll
        for (int j = 0; j < T::MAX_COLS; j++) {
            seg_prefix[j] = Op::identity();
            total[j] = j < w.ncols ? T::segment_total(a, t, sh, 0, w.c[j]).v : Op::identity();
        }
    }
    AccT carry[T::MAX_COLS];
    join(t, w, total, carry);
#pragma unroll
    for (int j = 0; j < T::MAX_COLS; j++)
        if (j < w.ncols) T::segment_outputs(a, t, sh, w.s, w.c[j], op(carry[j], seg_prefix[j]));
}

// Whole and walk modes: persistent blocks, each scanning its tiles one after another with the next
// tile's loads in flight while the current one is scanned (no tile waits on another block). `next`
// gives the tile after `t` (false when none); `join` is scan_staged_tile's.
template <class S, typename Next, typename Join>
__device__ __forceinline__ void scan_tiles(const SlabArgs &a, typename SlabScan<S>::Shared &sh, SlabTile t, Next &&next,
                                           Join &&join)
{
    using T = SlabScan<S>;
    typename T::Fetched f;
    const bool fetching = T::can_fetch(a);
    if (fetching) T::fetch(a, t, f);
    for (bool more = true; more;) {
        if (fetching) T::stage_fetched(a, t, f, sh);
        else T::load_tile(a, t, sh);
        __syncthreads();
        SlabTile n;
        more = next(t, n);
        if (more && fetching) T::fetch(a, n, f);
        scan_staged_tile<S>(a, t, sh, join);
        __syncthreads();
        T::store_tile(a, t, sh);
        __syncthreads();   // the stage is refilled with the next tile
        t = n;
    }
}

template <class S>
__global__ void __launch_bounds__(S::P::kSlabThreads, S::P::kSlabBlocksPerSm)
scan_slabs_kernel(const SlabArgs a, const VectorStatus<typename S::AccT> st, const WorkQueue q)
{
    if constexpr (policy_active<typename S::P>()) {
        using T = SlabScan<S>;
        using AccT = typename S::AccT;
        using Op = typename S::Op;
        const Op op;
        __shared__ typename T::Shared sh;
        constexpr int NC = T::MAX_COLS;
        int parity = 0;

        if (a.mode == kSlabWhole) {
            // tiles blockIdx.x, + gridDim.x, ...: independent, nothing carried
            int64_t unit = blockIdx.x;
            if (unit >= a.units) return;
            scan_tiles<S>(a, sh, T::tile_of(a, unit),
                [&](const SlabTile &, SlabTile &n) {
                    unit += gridDim.x;
                    if (unit >= a.units) return false;
                    n = T::tile_of(a, unit);
                    return true;
                },
                [&](const SlabTile &, const typename T::Walk &, const AccT (&)[NC], AccT (&carry)[NC]) {
#pragma unroll
                    for (int j = 0; j < NC; j++) carry[j] = Op::identity();
                });
            return;
        }

        if (a.mode == kSlabWalk) {
            // a strip at a time, its pieces in order; the column carries wait in shared memory
            int64_t strip = q.take(sh.slot, parity);
            if (strip < q.units) {
                scan_tiles<S>(a, sh, T::tile_of(a, strip, 0),
                    [&](const SlabTile &t, SlabTile &n) {
                        if (t.piece + 1 < a.pieces) {
                            n = T::tile_of(a, strip, t.piece + 1);
                            return true;
                        }
                        const int64_t s = q.take(sh.slot, parity);
                        if (s >= q.units) return false;
                        n = T::tile_of(a, s, 0);
                        return true;
                    },
                    [&](const SlabTile &t, const typename T::Walk &w, const AccT (&total)[NC], AccT (&carry)[NC]) {
                        // a strip's first piece starts from nothing
#pragma unroll
                        for (int j = 0; j < NC; j++)
                            carry[j] = j < w.ncols && t.piece > 0 ? sh.carry[w.c[j]] : Op::identity();
                        __syncthreads();   // every thread has read the carries before the owners move them on
                        if (w.owner)
#pragma unroll
                            for (int j = 0; j < NC; j++)
                                if (j < w.ncols) sh.carry[w.c[j]] = op(carry[j], total[j]);
                    });
            }
            q.finish();
            return;
        }

        // look-back: one piece per block, ids taken in order, so a block only waits on pieces that
        // running blocks hold; a block that waits holds no loads back, and a new one starts as soon
        // as one retires
        const int64_t unit = q.take(sh.slot, parity);
        q.finish();
        const SlabTile t = T::tile_of(a, unit);
        T::load_tile(a, t, sh);
        __syncthreads();
        scan_staged_tile<S>(a, t, sh, [&](const SlabTile &, const typename T::Walk &w, const AccT (&total)[NC], AccT (&carry)[NC]) {
            strip_lookback<NC, Op>(st, unit, a.strips, t.piece == 0, w.owner, w.c, w.ncols, total, carry, &sh.distance);
        });
        __syncthreads();
        T::store_tile(a, t, sh);
    }
}

}  // namespace cuscan
