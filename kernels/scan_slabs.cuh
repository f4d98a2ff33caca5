// scan_slabs.cuh - the slab family: x, mask and out share one dense layout, so each holds `outer`
// slabs of `len` rows of `inner` contiguous elements, one stream. Whatever len and inner are (3,
// 999, 2, 7, ...), a tile is a run of whole rows (for wide rows, of a block of columns): it goes
// into shared memory with 16-byte vector copies, each thread scans a segment of one column there
// from registers, and the tile goes back out with 16-byte vector copies. DRAM sees each byte once.
//
// Three modes (scan_launch.cuh picks one):
//   whole     a tile holds whole slabs (len rows); no tile depends on another;
//   walk      a slab is longer than a tile: a block takes a strip (one slab, one column block) and
//             walks its pieces in order, the carry of each column in shared memory;
//   lookback  one piece per block, the pieces of a strip joined by the look-back with a vector of
//             `width` carries (lookback.cuh; a packed word per column where the state fits one),
//             or, for a single strip of such words, by a tree of the pieces' sums; pieces that
//             wait on a front (a window, a tree) take larger tiles of a class of their own
//             (SlabWindowSpec).
// In a tile, each column is cut into S segments of SR rows. Thread t scans segment t / ncols of
// column t % ncols, so the lanes of a warp read neighbouring columns, or the same column SR rows
// apart with SR odd: either way different banks. A thread folds its segment (pass 1), a block-wide
// segmented scan of the segment totals (transposed through a small table) gives each segment its
// prefix, and the thread writes its outputs in place (pass 2). Head rows (a slab's first row in
// scan order) restart the fold. Every combine's order follows from the shape alone, so a scan gives
// the same bits on every run; walking and a chain of look-backs give the same bits too (a tree
// folds the pieces in its own fixed order).
// Flagged scans (scan_ops.cuh) stage each element's kept and reset bits in a byte array beside the
// stage, and write cummax / cummin indices straight from the segments (the stage holds the values).
// Segmented sums and products whose slabs fit whole tiles take the plain loops instead
// (SlabResetSpec): a reset restarts the fold as a slab head does, so each reset byte, staged beside
// the tile, is one more bit of its segment's head word.
#pragma once
#include "lookback.cuh"
#include "scan_rows.cuh"   // warp_seg_scan

namespace cuscan {

enum SlabMode { kSlabWhole = 0, kSlabWalk = 1, kSlabLookback = 2 };

struct SlabArgs {
    const void *x;
    const unsigned char *mask;
    void *out;
    int64_t outer, len, inner;
    int64_t total;            // elements of the stream: no read may go past it
    int width;                // W: columns of a tile
    int64_t col_blocks;       // ceil(inner / W)
    int rows;                 // R: rows of a full tile
    int64_t slabs_per_tile;   // whole mode: slabs a tile holds (R = slabs_per_tile * len)
    int64_t pieces;           // walk and lookback: tiles along a strip, ceil(len / R)
    int64_t strips;           // walk and lookback: outer * col_blocks
    int segs;                 // S: segments per column (S * W <= threads), or 1 for wide tiles
    int seg_rows;             // SR: rows of the first seg_long segments of a column (odd when S > 1) ...
    int seg_long;             // ... the others hold SR - 2, so that a full tile's segments are all full
    FastDiv div_len;          // whole mode: by len
    uint64_t head_pattern;    // whole mode, len < 64: bits at the multiples of len
    int vec_in, vec_out;      // x (and mask) / out may move in 16-byte vectors
    int vec_reset;            // SlabResetSpec: reset is 16-byte aligned (its bytes move in 16-byte copies)
    FastDiv div_width;        // by W (a full block's columns)
    int exclusive;
    int mode;
    int tree;                 // lookback: pieces joined by a tree of sums, not a chain (lookback.cuh)
    int window;               // lookback: pieces joined by a window of flags (strip_window_lookback)
    int64_t units;
    // flagged scans (in x's layout, as every operand of a flat plan)
    const unsigned char *reset;
    int64_t *indices;
    OpArgs op;
    const void *initial;      // NULL, or each line's initial value, line (slab o, column i) at o * inner + i
    cs_dtype initial_dtype;
};

// Where one tile lies: rows [row0, row0 + nrows) of the stream (global row = slab * len + row) and
// columns [col0, col0 + ncols); `piece` along its strip.
struct SlabTile {
    int64_t row0, col0;
    int nrows, ncols;
    int64_t piece;
};

template <class S>
struct SlabScan {
    using P = typename S::P;
    using InT = typename S::InT;
    using AccT = typename S::AccT;
    using OutT = typename S::OutT;
    using Op = typename S::Op;
    static constexpr bool FLAGGED = S::FLAGGED;
    static constexpr bool RESETS = S::RESETS;   // SlabResetSpec: whole tiles, resets as heads
    static constexpr int THREADS = P::kSlabThreads;
    static constexpr int WARPS = THREADS / kWarp;
    // elements of a full tile (masked tiles are smaller: the mask's loads need registers too; the
    // flagged scans' larger states need shared memory)
    // the window's class: look-backs that wait on a front (a window of flags, a single strip's tree)
    static constexpr bool WINDOW = P::kSlabWindowClass;
    static constexpr int TILE_BYTES = WINDOW ? P::kSlabWindowTileBytes
                                    : FLAGGED ? (sizeof(OutT) >= 8 ? P::kSlabStageBytesFlaggedWide : P::kSlabStageBytesFlagged)
                                    : P::kSlabStageBytes / (S::MASKED && sizeof(OutT) > 4 ? P::kSlabMaskedDivisor : 1);
    // tile classes (tuning.cuh): unmasked 4-byte outputs, masked 4-byte outputs and unmasked 2-byte
    // outputs (and masked 2-byte ones where the policy says) take tiles of their own, so that a
    // tile's fixed costs (three block barriers, the table scan) are shared by more bytes
    static constexpr bool TILE4 = !WINDOW && !FLAGGED && !S::MASKED && sizeof(OutT) == 4;
    static constexpr bool TILEM4 = !WINDOW && !FLAGGED && S::MASKED && sizeof(OutT) == 4;
    static constexpr bool TILE2 = !WINDOW && !FLAGGED && !S::MASKED && sizeof(OutT) == 2;
    static constexpr bool TILEM2 = !WINDOW && !FLAGGED && S::MASKED && sizeof(OutT) == 2 && P::kSlabTileElementsMasked2 > 0;
    static constexpr int TILE_MAX = WINDOW ? THREADS * P::kSlabWindowSegRowsMax   // (the rows its segments hold)
                                  : TILE4 ? P::kSlabTileElements4 : TILEM4 ? P::kSlabTileElementsMasked4
                                  : TILE2 ? P::kSlabTileElements2 : TILEM2 ? P::kSlabTileElementsMasked2
                                  : P::kSlabTileElements;
    static constexpr int TILE = TILE_BYTES / (int)sizeof(OutT) < TILE_MAX ? TILE_BYTES / (int)sizeof(OutT) : TILE_MAX;
    static constexpr int BLOCKS_PER_SM = WINDOW ? P::kSlabWindowBlocksPerSm
                                       : FLAGGED ? P::kSlabBlocksPerSmFlagged
                                       : sizeof(OutT) > 4 ? P::kSlabBlocksPerSmWide
                                       : TILE4 ? P::kSlabBlocksPerSm4 : TILEM4 ? P::kSlabBlocksPerSmMasked4
                                       : TILE2 ? P::kSlabBlocksPerSm2 : TILEM2 ? P::kSlabBlocksPerSmMasked2
                                       : P::kSlabBlocksPerSm;
    static constexpr int VIN = 16 / (int)sizeof(InT), VOUT = 16 / (int)sizeof(OutT);
    static constexpr int SR_MAX = WINDOW ? P::kSlabWindowSegRowsMax
                                : FLAGGED ? P::kSlabSegRowsMaxFlagged
                                : TILE4 ? P::kSlabSegRowsMax4 : TILEM4 ? P::kSlabSegRowsMaxMasked4
                                : TILE2 ? P::kSlabSegRowsMax2 : TILEM2 ? P::kSlabSegRowsMaxMasked2
                                : P::kSlabSegRowsMax;   // rows a thread holds
    // whole and walking tiles keep a segment in registers between the passes unless its class
    // reads it from the stage twice (the registers of larger tiles)
    static constexpr bool HOLD = WINDOW ? false : TILE4 ? P::kSlabHold4 : TILEM4 ? P::kSlabHoldMasked4 : TILE2 ? P::kSlabHold2
                               : TILEM2 ? P::kSlabHoldMasked2 : FLAGGED ? P::kSlabHoldFlagged : true;
    // look-back pieces of flagged 8-byte outputs may read the stage twice as well (the registers
    // of their waits)
    static constexpr bool HOLD_LOOKBACK = FLAGGED && sizeof(OutT) >= 8 ? HOLD && P::kSlabHoldFlaggedWideLookback : HOLD;
    // the table holds a segment a thread, or a column of a wide tile (the window's class takes
    // tiles of at most THREADS columns)
    static constexpr int ITEMS = (!WINDOW && P::kSlabMaxWidth > THREADS ? P::kSlabMaxWidth : THREADS);
    static constexpr int NI = ITEMS / THREADS;                  // table items a thread owns
    static constexpr int CARRIES = WINDOW ? P::kSlabWindowFoldStates : P::kSlabMaxWidth;   // walk carries, window fold buffer
    static_assert(!WINDOW || !FLAGGED, "window tiles are unflagged");
    static constexpr int kResetAlign = 16;   // RESETS: reset bytes move in 16-byte copies

    struct Shared {
        alignas(16) OutT stage[TILE + 2 * VIN];
        // flagged scans: kKeepBit | kResetBit; RESETS: the reset bytes, from reset_offset on
        unsigned char flags[FLAGGED ? TILE + 2 * VIN : RESETS ? TILE + 2 * kResetAlign : 1];
        AccT carry[CARRIES];
        // each segment's (head seen, fold since the last head), then the prefix it starts from in .v
        SegPair<AccT> table[ITEMS];
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
        } else {
            const int64_t strip = piece_in < 0 ? unit % a.strips : unit;
            t.piece = piece_in < 0 ? unit / a.strips : piece_in;
            const int64_t o = strip / a.col_blocks, cb = strip % a.col_blocks;
            const int64_t lo = t.piece * a.rows, hi = min(a.len, lo + a.rows);   // logical rows
            t.nrows = (int)(hi - lo);
            t.row0 = o * a.len + (S::REVERSE ? a.len - hi : lo);
            t.col0 = cb * a.width;
        }
        t.ncols = (int)min((int64_t)a.width, a.inner - t.col0);
        return t;
    }

    // ---- copies between memory and the stage ----
    // A tile of whole rows is one run of the stream from f0; it sits in the stage from `shift`
    // (f0 modulo the vector), so that aligned vectors of memory are aligned vectors of the stage.
    // A block of columns is a run a row, at stage rows of ncols.
    __device__ __forceinline__ static bool whole_rows(const SlabArgs &a, const SlabTile &t) { return t.ncols == a.inner; }
    __device__ __forceinline__ static int shift_of(const SlabArgs &a, const SlabTile &t)
    {
        return whole_rows(a, t) && a.vec_in ? (int)((t.row0 * a.inner) % VIN) : 0;
    }

    // (an input of the output's own type is staged as it is: through a float64 fold type and back
    // is the identity, at the cost of two of the slowest conversions an element; bool still goes
    // through, as nonzero bytes read as 1)
    __device__ __forceinline__ static OutT staged(InT v, bool keep)
    {
        if constexpr (std::is_same_v<InT, OutT> && !std::is_same_v<InT, unsigned char>)
            return keep ? v : OutT(to_acc<AccT>(S::in_zero()));
        else return keep ? OutT(to_acc<AccT>(v)) : OutT(to_acc<AccT>(S::in_zero()));
    }

    // Flagged scans: element e of the stage from stream position g (x's value as it is, its flags).
    static constexpr unsigned char kKeepBit = 1, kResetBit = 2;
    __device__ __forceinline__ static void stage_flagged(const SlabArgs &a, Shared &sh, int e, int64_t g)
    {
        const InT *x = static_cast<const InT *>(a.x);
        sh.stage[e] = S::stage(x[g]);
        sh.flags[e] = (!a.mask || a.mask[g] ? kKeepBit : 0) | (a.reset && a.reset[g] ? kResetBit : 0);
    }

    // Vector runs of a tile: all of a thread's loads are issued before the first is used (an
    // unrolled loop over at most NV of them), so they are in flight together.
    static constexpr int NV = (TILE + 2 * VIN) / (THREADS * VIN) + 1;

    // An input of the output's own type goes to the stage by asynchronous copies (cp_async16): no
    // register holds a vector in flight, so a masked tile keeps all its loads in flight too (only
    // the mask's few bytes a vector wait in registers), and masked-out elements are zeroed in the
    // stage by the thread that copied them.
    static constexpr bool ASYNC_STAGE = !FLAGGED && std::is_same_v<InT, OutT> && sizeof(InT) * VIN == 16;
    // Masked tiles of the window's class take their mask once the copies have landed, from L1, where
    // it was asked for while they flew: held in registers through the copies, a large tile's mask
    // spills.
    static constexpr bool LATE_MASK = WINDOW && S::MASKED;

    // Issues f(k, i, g) for each of this thread's vectors i (the k-th; at stream position g) that
    // lies whole in the stream, all before anything waits on them; full[k] says which did.
    template <typename At, typename F>
    __device__ __forceinline__ static void each_full_vector(const SlabArgs &a, int nv, At &&at, bool (&full)[NV], F &&f)
    {
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int i = threadIdx.x + k * THREADS;
            const int64_t g = at(i);
            full[k] = i < nv && g + VIN <= a.total;
            if (full[k]) f(k, i, g);
        }
    }

    template <typename At>
    __device__ __forceinline__ static void load_vectors_async(const SlabArgs &a, int nv, At &&at, Shared &sh)
    {
        const InT *x = static_cast<const InT *>(a.x);
        Vec<unsigned char, VIN> mv[S::MASKED ? NV : 1];
        bool full[NV];
        each_full_vector(a, nv, at, full, [&](int k, int i, int64_t g) {
            cp_async16(sh.stage + i * VIN, x + g);
            if constexpr (LATE_MASK) prefetch_l1(a.mask + g);
            else if constexpr (S::MASKED) mv[k] = load_vec<unsigned char, VIN>(a.mask + g);
        });
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int i = threadIdx.x + k * THREADS;
            if (!full[k] && i < nv) {
                // a vector past the stream's end goes element by element (the rest belongs to nobody)
                const int64_t g = at(i);
                for (int j = 0; j < VIN && g + j < a.total; j++)
                    sh.stage[i * VIN + j] = staged(x[g + j], !S::MASKED || a.mask[g + j]);
            }
        }
        cp_async_wait_all();
        if constexpr (S::MASKED) {
#pragma unroll
            for (int k = 0; k < NV; k++) {
                const int i = threadIdx.x + k * THREADS;
                OutT *dst = sh.stage + i * VIN;
                if (full[k]) {
                    const Vec<unsigned char, VIN> m =
                        LATE_MASK ? load_vec_hinted<unsigned char, VIN, kL1>(a.mask + at(i)) : mv[k];
#pragma unroll
                    for (int j = 0; j < VIN; j++)
                        if (!m.v[j]) dst[j] = staged(dst[j], false);
                }
            }
        }
    }

    template <typename At>
    __device__ __forceinline__ static void load_vectors(const SlabArgs &a, int nv, At &&at, Shared &sh)
    {
        if constexpr (ASYNC_STAGE) {
            load_vectors_async(a, nv, at, sh);
            return;
        }
        const InT *x = static_cast<const InT *>(a.x);
        Vec<InT, VIN> xv[NV];
        Vec<unsigned char, VIN> mv[NV], rv[FLAGGED ? NV : 1];
        bool full[NV];
        each_full_vector(a, nv, at, full, [&](int k, int, int64_t g) {
            xv[k] = load_vec<InT, VIN>(x + g);
            if constexpr (S::MASKED) mv[k] = load_vec<unsigned char, VIN>(a.mask + g);
            if constexpr (FLAGGED) {
                if (a.mask) mv[k] = load_vec<unsigned char, VIN>(a.mask + g);
                if (a.reset) rv[k] = load_vec<unsigned char, VIN>(a.reset + g);
            }
        });
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int i = threadIdx.x + k * THREADS;
            OutT *dst = sh.stage + i * VIN;
            if (full[k]) {
#pragma unroll
                for (int j = 0; j < VIN; j++) {
                    if constexpr (FLAGGED) {
                        dst[j] = S::stage(xv[k].v[j]);
                        sh.flags[i * VIN + j] = (!a.mask || mv[k].v[j] ? kKeepBit : 0) | (a.reset && rv[k].v[j] ? kResetBit : 0);
                    } else {
                        dst[j] = staged(xv[k].v[j], !S::MASKED || mv[k].v[j]);
                    }
                }
            } else if (i < nv) {
                // a vector past the stream's end goes element by element (the rest belongs to nobody)
                const int64_t g = at(i);
                for (int j = 0; j < VIN && g + j < a.total; j++) {
                    if constexpr (FLAGGED) stage_flagged(a, sh, i * VIN + j, g + j);
                    else dst[j] = staged(x[g + j], !S::MASKED || a.mask[g + j]);
                }
            }
        }
    }

    // RESETS: the tile's reset bytes beside the stage, stage index e's at flags[e + reset_offset]:
    // where reset is 16-byte aligned, the aligned runs covering a tile of whole rows by asynchronous
    // copies (so the offset is the run's start modulo 16 less the stage's shift), else byte by byte.
    __device__ __forceinline__ static int reset_offset(const SlabArgs &a, const SlabTile &t)
    {
        return a.vec_reset && whole_rows(a, t) ? (int)((t.row0 * a.inner) % kResetAlign) - shift_of(a, t) : 0;
    }
    __device__ __forceinline__ static void stage_resets(const SlabArgs &a, const SlabTile &t, Shared &sh)
    {
        const int n = t.nrows * t.ncols;
        if (whole_rows(a, t)) {
            const int64_t f0 = t.row0 * a.inner;
            if (a.vec_reset) {
                const int fs = (int)(f0 % kResetAlign);
                const int64_t base = f0 - fs;
                for (int i = threadIdx.x; i < (fs + n + kResetAlign - 1) / kResetAlign; i += THREADS) {
                    const int64_t g = base + (int64_t)i * kResetAlign;
                    if (g + kResetAlign <= a.total) cp_async16(sh.flags + i * kResetAlign, a.reset + g);
                    else
                        for (int j = 0; j < kResetAlign && g + j < a.total; j++) sh.flags[i * kResetAlign + j] = a.reset[g + j];
                }
            } else {
                const int shift = shift_of(a, t);
                for (int e = threadIdx.x; e < n; e += THREADS) sh.flags[shift + e] = a.reset[f0 + e];
            }
            return;
        }
        for (int e = threadIdx.x; e < n; e += THREADS) {
            const int r = t.ncols == a.width ? (int)a.div_width.div((unsigned)e) : e / t.ncols, c = e - r * t.ncols;
            sh.flags[e] = a.reset[(t.row0 + r) * a.inner + t.col0 + c];
        }
    }

    __device__ __forceinline__ static void load_tile(const SlabArgs &a, const SlabTile &t, Shared &sh)
    {
        if constexpr (RESETS) stage_resets(a, t, sh);   // (in flight beside the tile's own copies)
        load_values(a, t, sh);
        if constexpr (RESETS) cp_async_wait_all();
    }

    __device__ __forceinline__ static void load_values(const SlabArgs &a, const SlabTile &t, Shared &sh)
    {
        [[maybe_unused]] const InT *x = static_cast<const InT *>(a.x);
        [[maybe_unused]] const unsigned char *m = a.mask;
        const int n = t.nrows * t.ncols;
        if (whole_rows(a, t)) {
            const int64_t f0 = t.row0 * a.inner;
            if (a.vec_in) {
                // the aligned vectors covering [f0, f0 + n)
                const int shift = (int)(f0 % VIN);
                const int64_t base = f0 - shift;
                load_vectors(a, (shift + n + VIN - 1) / VIN, [&](int i) { return base + (int64_t)i * VIN; }, sh);
            } else if constexpr (FLAGGED) {
                for (int e = threadIdx.x; e < n; e += THREADS) stage_flagged(a, sh, e, f0 + e);
            } else {
                for (int e = threadIdx.x; e < n; e += THREADS) sh.stage[e] = staged(x[f0 + e], !S::MASKED || m[f0 + e]);
            }
            return;
        }
        if (a.vec_in && t.ncols == a.width) {
            const int per_row = t.ncols / VIN;
            load_vectors(a, t.nrows * per_row, [&](int i) {
                const int r = (int)a.div_width.div((unsigned)(i * VIN)), c = i * VIN - r * t.ncols;
                return (t.row0 + r) * a.inner + t.col0 + c;
            }, sh);
            return;
        }
        for (int e = threadIdx.x; e < n; e += THREADS) {
            const int r = e / t.ncols, c = e - r * t.ncols;
            const int64_t g = (t.row0 + r) * a.inner + t.col0 + c;
            if constexpr (FLAGGED) stage_flagged(a, sh, e, g);
            else sh.stage[e] = staged(x[g], !S::MASKED || m[g]);
        }
    }

    __device__ __forceinline__ static void store_tile(const SlabArgs &a, const SlabTile &t, const Shared &sh)
    {
        OutT *y = static_cast<OutT *>(a.out);
        const int n = t.nrows * t.ncols;
        if (whole_rows(a, t)) {
            const int64_t f0 = t.row0 * a.inner;
            const int shift = shift_of(a, t);
            if (a.vec_out) {
                // the vectors inside [f0, f0 + n) whole (one vector store each); the partial ones at
                // either end element by element by two threads, so nothing outside the tile is written
                const int64_t base = f0 - shift;
                const int first = (shift + VOUT - 1) / VOUT, end = (shift + n) / VOUT;   // full vectors
                for (int i = first + threadIdx.x; i < end; i += THREADS)
                    store_vec<OutT, VOUT>(y + base + (int64_t)i * VOUT, load_vec<OutT, VOUT>(sh.stage + i * VOUT));
                // the elements before the first full vector, and after the last
                if (threadIdx.x == 0)
                    for (int k = shift; k < min(first * VOUT, shift + n); k++) y[base + k] = sh.stage[k];
                if (threadIdx.x == 1)
                    for (int k = max(end, first) * VOUT; k < shift + n; k++) y[base + k] = sh.stage[k];
            } else {
                for (int e = threadIdx.x; e < n; e += THREADS) y[f0 + e] = sh.stage[shift + e];
            }
            return;
        }
        if (a.vec_out && t.ncols == a.width) {
            const int per_row = t.ncols / VOUT;
            for (int i = threadIdx.x; i < t.nrows * per_row; i += THREADS) {
                const int r = (int)a.div_width.div((unsigned)(i * VOUT)), c = i * VOUT - r * t.ncols;
                Vec<OutT, VOUT> ov;
#pragma unroll
                for (int j = 0; j < VOUT; j++) ov.v[j] = sh.stage[i * VOUT + j];
                store_vec<OutT, VOUT>(y + (t.row0 + r) * a.inner + t.col0 + c, ov);
            }
            return;
        }
        for (int e = threadIdx.x; e < n; e += THREADS) {
            const int r = e / t.ncols, c = e - r * t.ncols;
            y[(t.row0 + r) * a.inner + t.col0 + c] = sh.stage[e];
        }
    }

    // ---- the scan of a staged tile ----
    // Heads are the logical rows (scan order) that start a slab: every len-th row of a tile of whole
    // slabs, the first row of a strip's first piece. slab_row counts to the next head (0: a head).
    __device__ __forceinline__ static int first_slab_row(const SlabArgs &a, const SlabTile &t, int rho)
    {
        if (a.mode == kSlabWhole) return rho % (int)a.len;
        return t.piece == 0 ? rho : 1;
    }
    __device__ __forceinline__ static int next_slab_row(const SlabArgs &a, int slab_row)
    {
        return ++slab_row == (int)a.len && a.mode == kSlabWhole ? 0 : slab_row;
    }

    // Headed segments: a plain scan without initial values marks a segment's slab heads in a bit
    // mask (bit i: element i starts a slab) instead of counting rows, and when every segment of the
    // warp holds at least SR_MAX - kTailRows rows (a full tile's do when its rows fill the segments:
    // SlabArgs::seg_long) folds them with no test a row, so an element costs its load, conversions
    // and fold.
    // (kTailRows: a full tile's segments hold SR_MAX or SR_MAX - 2 rows, its last one a row fewer
    // when the rows do not pair up)
    static constexpr bool HEADED = P::kSlabHeadedSegments && !FLAGGED;
    // Flagged scans take head bits too where the policy says: a slab head restarts the fold as a
    // reset does, and cummax / cummin's index steps by one from the segment's first.
    static constexpr bool HEADED_FLAGGED = P::kSlabHeadedFlagged && FLAGGED;
    static constexpr bool HEADS = HEADED || HEADED_FLAGGED;
    static constexpr int kTailRows = 3;
    static_assert(!HEADS || SR_MAX < 64, "a segment's heads are bits of a 64-bit word");

    // One thread's segment of one column: up to SR_MAX rows held in registers between the passes.
    struct Segment {
        OutT v[SR_MAX];
        int idx0, step, count, lo;   // stage index of its first element, the step to the next one
        int r0, c;                   // the tile row of its first element, its column
        uint64_t heads;              // HEADED: bit i set where element i starts a slab
    };

    // The heads of the segment from tile row lo: a piece's only head is its strip's first row; a
    // whole tile's are every len-th row (for len < 64 the host's pattern of them, shifted).
    __device__ __forceinline__ static uint64_t head_bits(const SlabArgs &a, const SlabTile &t, int lo)
    {
        if (a.mode != kSlabWhole) return t.piece == 0 && lo == 0 ? 1 : 0;
        const int row = lo - (int)a.div_len.div((unsigned)lo) * (int)a.len;   // lo's row in its slab
        const int h = row ? (int)a.len - row : 0;                               // the first head
        return a.len < 64 ? a.head_pattern << h : h < 64 ? 1ull << h : 0;
    }

    __device__ __forceinline__ static void segment_at(const SlabArgs &a, const SlabTile &t, int shift, int s, int c,
                                                      Segment &g)
    {
        // the first seg_long segments hold seg_rows rows, the others two fewer (both odd); a
        // column's first segment (s = 0: a wide tile's column) is spelt out, row 0 and seg_rows
        // rows, so that it is known at compile time and its slab row needs no division
        g.lo = s == 0 ? 0 : s * a.seg_rows - 2 * max(0, s - a.seg_long);
        g.count = max(0, min(t.nrows - g.lo, s == 0 || s < a.seg_long ? a.seg_rows : a.seg_rows - 2));
        // (a wide whole tile's short columns take the loops that count rows: see SHORT)
        if constexpr (HEADS) g.heads = a.segs > 1 || a.mode != kSlabWhole ? head_bits(a, t, g.lo) : 0;
        const int r0 = S::REVERSE ? t.nrows - 1 - g.lo : g.lo;
        g.idx0 = shift + r0 * t.ncols + c;
        g.step = S::REVERSE ? -t.ncols : t.ncols;
        g.r0 = r0;
        g.c = c;
    }
    // The loop a segment takes: with a test a row, or (whole) without. The threads that scan
    // segments together take the same loop.
    __device__ __forceinline__ static bool whole_warp(const Segment &g)
    {
        return __all_sync(__activemask(), g.count >= SR_MAX - kTailRows);
    }

    // Flagged scans: the 1-based index along the line of the segment's element i (logical row
    // `slab_row` of its slab in whole mode), for cummax / cummin.
    __device__ __forceinline__ static int64_t index_in_slab(const SlabArgs &a, const SlabTile &t, const Segment &g,
                                                            int i, int slab_row)
    {
        const int64_t row = a.mode == kSlabWhole ? slab_row : t.piece * a.rows + g.lo + i;
        return S::REVERSE ? a.len - row : row + 1;
    }

    // Headed flagged segments: the index of the element before the segment's first (cummax /
    // cummin), so that each element's is a step from it or, at a head, the line's first.
    static constexpr int kIndexStep = S::REVERSE ? -1 : 1;
    __device__ __forceinline__ static int64_t index_before(const SlabArgs &a, const SlabTile &t, const Segment &g)
    {
        return index_in_slab(a, t, g, 0, first_slab_row(a, t, g.lo)) - kIndexStep;
    }
    __device__ __forceinline__ static int64_t next_index(const SlabArgs &a, bool head, int64_t index)
    {
        return head ? (S::REVERSE ? a.len : 1) : index + kIndexStep;
    }
    // The staged element e as a state (its flags; its index), and the segment's element i as one
    // (the loops that count rows)
    __device__ __forceinline__ static AccT lift_staged(const Op &op, const Shared &sh, int e, OutT x, int64_t index)
    {
        const unsigned char f = sh.flags[e];
        return op.lift(x, (f & kKeepBit) != 0, (f & kResetBit) != 0, index);
    }
    __device__ __forceinline__ static AccT elem_flagged(const Op &op, const SlabArgs &a, const SlabTile &t,
                                                        const Shared &sh, const Segment &g, int i, OutT e, int slab_row)
    {
        return lift_staged(op, sh, g.idx0 + i * g.step, e, S::INDEXED ? index_in_slab(a, t, g, i, slab_row) : 0);
    }

    template <bool HOLD, bool WHOLE>
    __device__ __forceinline__ static SegPair<AccT> headed_flagged_fold(const Op &op, const SlabArgs &a, const SlabTile &t,
                                                                        const Shared &sh, Segment &g)
    {
        AccT acc = op.identity();
        int64_t index = S::INDEXED ? index_before(a, t, g) : 0;
#pragma unroll
        for (int i = 0; i < SR_MAX; i++) {
            if ((!WHOLE || i >= SR_MAX - kTailRows) && i >= g.count) break;
            const int e = g.idx0 + i * g.step;
            const OutT x = sh.stage[e];
            if constexpr (HOLD) g.v[i] = x;
            const bool head = (g.heads >> i) & 1;
            if constexpr (S::INDEXED) index = next_index(a, head, index);
            const AccT v = lift_staged(op, sh, e, x, index);
            acc = head ? v : op(acc, v);
        }
        return SegPair<AccT>{ (g.heads & ~(~0ull << g.count)) != 0, acc };
    }
    // (cummax / cummin's indices go straight to memory, a row of x's layout apart)
    template <bool HOLD, bool WHOLE, bool EXCLUSIVE>
    __device__ __forceinline__ static void headed_flagged_write(const Op &op, const SlabArgs &a, const SlabTile &t,
                                                                Shared &sh, const Segment &g, AccT acc)
    {
        int64_t index = S::INDEXED ? index_before(a, t, g) : 0;
        int64_t at = (t.row0 + g.r0) * a.inner + t.col0 + g.c;
        const int64_t step = S::REVERSE ? -a.inner : a.inner;
#pragma unroll
        for (int i = 0; i < SR_MAX; i++) {
            if ((!WHOLE || i >= SR_MAX - kTailRows) && i >= g.count) break;
            const int e = g.idx0 + i * g.step;
            const OutT x = HOLD ? g.v[i] : sh.stage[e];
            const bool head = (g.heads >> i) & 1;
            if constexpr (S::INDEXED) index = next_index(a, head, index);
            const AccT v = lift_staged(op, sh, e, x, index);
            const AccT before = acc;
            acc = head ? v : op(acc, v);
            const AccT o = EXCLUSIVE ? (head || v.f ? op.empty() : before) : acc;
            sh.stage[e] = S::out(o);
            if constexpr (S::INDEXED) {
                if (a.indices) a.indices[at] = S::index(o);
                at += step;
            }
        }
    }

    // The initial value of the line whose head is the segment's element i (a.initial set).
    __device__ __forceinline__ static AccT head_initial(const SlabArgs &a, const SlabTile &t, const Segment &g, int i)
    {
        const int64_t row = t.row0 + (S::REVERSE ? g.r0 - i : g.r0 + i);
        return S::initial(a.initial, row / a.len * a.inner + t.col0 + g.c, a.initial_dtype);
    }

    template <bool HOLD, bool WHOLE>
    __device__ __forceinline__ static SegPair<AccT> headed_segment_fold(const Op &op, const Shared &sh, Segment &g)
    {
        AccT acc = op.identity();
#pragma unroll
        for (int i = 0; i < SR_MAX; i++) {
            if ((!WHOLE || i >= SR_MAX - kTailRows) && i >= g.count) break;
            const OutT e = sh.stage[g.idx0 + i * g.step];
            if constexpr (HOLD) g.v[i] = e;
            const AccT v = to_acc<AccT>(e);
            acc = (g.heads >> i) & 1 ? v : op(acc, v);
        }
        return SegPair<AccT>{ (g.heads & ~(~0ull << g.count)) != 0, acc };
    }
    template <bool HOLD, bool WHOLE, bool EXCLUSIVE>
    __device__ __forceinline__ static void headed_segment_write(const Op &op, Shared &sh, const Segment &g, AccT acc)
    {
#pragma unroll
        for (int i = 0; i < SR_MAX; i++) {
            if ((!WHOLE || i >= SR_MAX - kTailRows) && i >= g.count) break;
            const int e = g.idx0 + i * g.step;
            const AccT v = to_acc<AccT>(HOLD ? g.v[i] : sh.stage[e]);
            const bool head = (g.heads >> i) & 1;
            if constexpr (EXCLUSIVE) {
                const AccT before = head ? Op::zero() : acc;
                acc = head ? v : op(acc, v);
                sh.stage[e] = to_out<OutT>(before);
            } else {
                acc = head ? v : op(acc, v);
                sh.stage[e] = to_out<OutT>(acc);
            }
        }
    }

    // Runs row(i) for the segment's rows in order. The loop unrolls whole where the segment is held
    // in registers (v[i] needs a constant i); a wide tile's column read from the stage takes a few
    // rows an iteration, since its 63 rows unrolled whole spill at the class's 64 registers.
    template <bool HOLD, bool SHORT, typename Row>
    __device__ __forceinline__ static void for_rows(int count, Row &&row)
    {
        if constexpr (SHORT && !HOLD) {
#pragma unroll 4
            for (int i = 0; i < count; i++) row(i);
        } else {
#pragma unroll
            for (int i = 0; i < SR_MAX; i++) {
                if (i >= count) break;
                row(i);
            }
        }
    }

    // RESETS: the segment's resets as head bits (bit i: element i starts a segment).
    __device__ __forceinline__ static uint64_t reset_bits(const SlabArgs &a, const SlabTile &t, const Shared &sh,
                                                          const Segment &g)
    {
        const unsigned char *f = sh.flags + g.idx0 + reset_offset(a, t);
        uint64_t bits = 0;
#pragma unroll
        for (int i = 0; i < SR_MAX; i++) {
            if (i >= g.count) break;
            bits |= (uint64_t)(f[i * g.step] != 0) << i;
        }
        return bits;
    }
    static_assert(!RESETS || (HEADED && !S::INDEXED), "resets as heads take the plain headed loops");

    // Pass 1: read the segment (into registers with HOLD), and its (head seen, fold since the last
    // head); with INIT (a.initial set) a head starts from its line's initial value. INIT is a
    // template switch so that scans without initial values keep the lean loop. SHORT: the segment
    // is one short column of a wide tile, whose few rows do not repay the headed loops' setup.
    template <bool INIT, bool HOLD = true, bool SHORT = false>
    __device__ __forceinline__ static SegPair<AccT> segment_fold(const SlabArgs &a, const SlabTile &t, const Shared &sh,
                                                                 Segment &g)
    {
        const Op op(a.op);
        // (RESETS: tiles of whole slabs, a column's segments a thread each, no initial values:
        // launch_slabs plans no other)
        if constexpr (RESETS) g.heads |= reset_bits(a, t, sh, g);
        if constexpr (HEADED && !INIT && !SHORT) {
            if (whole_warp(g)) return headed_segment_fold<HOLD, true>(op, sh, g);
            return headed_segment_fold<HOLD, false>(op, sh, g);
        }
        if constexpr (HEADED_FLAGGED && !INIT && !SHORT) {
            if (whole_warp(g)) return headed_flagged_fold<HOLD, true>(op, a, t, sh, g);
            return headed_flagged_fold<HOLD, false>(op, a, t, sh, g);
        }
        SegPair<AccT> acc{ 0, op.identity() };
        int slab_row = first_slab_row(a, t, g.lo);
        for_rows<HOLD, SHORT>(g.count, [&](int i) {
            const OutT e = sh.stage[g.idx0 + i * g.step];
            if constexpr (HOLD) g.v[i] = e;
            AccT v;
            if constexpr (FLAGGED) v = elem_flagged(op, a, t, sh, g, i, e, slab_row);
            else v = to_acc<AccT>(e);
            if (slab_row == 0) acc = SegPair<AccT>{ 1, INIT ? op(head_initial(a, t, g, i), v) : v };
            else acc.v = op(acc.v, v);
            slab_row = next_slab_row(a, slab_row);
        });
        return acc;
    }

    // Pass 2: the segment's outputs from `prefix` (the fold of everything before it), in place
    // (reading the stage again without HOLD).
    template <bool INIT, bool HOLD = true, bool SHORT = false>
    __device__ __forceinline__ static void segment_write(const SlabArgs &a, const SlabTile &t, Shared &sh,
                                                         const Segment &g, AccT prefix)
    {
        const Op op(a.op);
        if constexpr (HEADED_FLAGGED && !INIT && !SHORT) {
            const bool whole = whole_warp(g);
            if (whole && a.exclusive) headed_flagged_write<HOLD, true, true>(op, a, t, sh, g, prefix);
            else if (whole) headed_flagged_write<HOLD, true, false>(op, a, t, sh, g, prefix);
            else if (a.exclusive) headed_flagged_write<HOLD, false, true>(op, a, t, sh, g, prefix);
            else headed_flagged_write<HOLD, false, false>(op, a, t, sh, g, prefix);
        } else if constexpr (FLAGGED) {
            segment_write_flagged<INIT, HOLD>(op, a, t, sh, g, prefix);
        } else if (HEADED && !INIT && !SHORT) {
            const bool whole = whole_warp(g);
            if (whole && a.exclusive) headed_segment_write<HOLD, true, true>(op, sh, g, prefix);
            else if (whole) headed_segment_write<HOLD, true, false>(op, sh, g, prefix);
            else if (a.exclusive) headed_segment_write<HOLD, false, true>(op, sh, g, prefix);
            else headed_segment_write<HOLD, false, false>(op, sh, g, prefix);
        } else {
            AccT acc = prefix;
            int slab_row = first_slab_row(a, t, g.lo);
            for_rows<HOLD, SHORT>(g.count, [&](int i) {
                const AccT v = to_acc<AccT>(HOLD ? g.v[i] : sh.stage[g.idx0 + i * g.step]);
                const bool head = slab_row == 0;
                AccT before = acc;
                if (head) before = INIT ? head_initial(a, t, g, i) : Op::zero();
                acc = head && !INIT ? v : op(before, v);
                sh.stage[g.idx0 + i * g.step] = to_out<OutT>(a.exclusive ? before : acc);
                slab_row = next_slab_row(a, slab_row);
            });
        }
    }

    // segment_write for flagged scans: a segment start (reset) empties an exclusive output as a
    // slab's head does; indices go straight to memory.
    template <bool INIT, bool HOLD>
    __device__ __forceinline__ static void segment_write_flagged(const Op &op, const SlabArgs &a, const SlabTile &t,
                                                                 Shared &sh, const Segment &g, AccT prefix)
    {
        AccT acc = prefix;
        int slab_row = first_slab_row(a, t, g.lo);
#pragma unroll
        for (int i = 0; i < SR_MAX; i++) {
            if (i >= g.count) break;
            {
                const int e = g.idx0 + i * g.step;
                const AccT v = elem_flagged(op, a, t, sh, g, i, HOLD ? g.v[i] : sh.stage[e], slab_row);
                const bool head = slab_row == 0;
                AccT before = acc;
                if (head && INIT) before = head_initial(a, t, g, i);
                acc = head && !INIT ? v : op(before, v);
                const AccT o = a.exclusive ? ((head && !INIT) || v.f ? op.empty() : before) : acc;
                sh.stage[e] = S::out(o);
                if constexpr (S::INDEXED) {
                    if (a.indices) {
                        const int r = S::REVERSE ? g.r0 - i : g.r0 + i;
                        a.indices[(t.row0 + r) * a.inner + t.col0 + g.c] = S::index(o);
                    }
                }
                slab_row = next_slab_row(a, slab_row);
            }
        }
    }

    // The block-wide exclusive segmented scan of one pair per thread (threads in order).
    __device__ __forceinline__ static SegPair<AccT> block_seg_exclusive(const Op &op, SegPair<AccT> p, Shared &sh)
    {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        SegPair<AccT> total;
        const SegPair<AccT> incl = warp_seg_scan(op, p, &total);
        if (lane == 0) sh.warp_total[warp] = total;
        __syncthreads();
        SegPair<AccT> before{ 0, op.identity() };
        for (int w = 0; w < warp; w++) before = seg_combine(op, before, sh.warp_total[w]);
        SegPair<AccT> ex{ __shfl_up_sync(0xffffffffu, incl.f, 1), shfl_up_state(incl.v, 1) };
        if (lane == 0) ex = SegPair<AccT>{ 0, op.identity() };
        return seg_combine(op, before, ex);
    }
};

// S with the window's tile class (tuning.cuh: SlabWindowTiles), for look-backs that wait on a front.
template <class S>
struct SlabWindowSpec : S {
    using P = SlabWindowTiles<typename S::P>;
};

// S with the larger 4-byte tile class (tuning.cuh: SlabLargeTiles), for whole tiles that grow there.
template <class S>
struct SlabLargeSpec : S {
    using P = SlabLargeTiles<typename S::P>;
};

// A plain cumsum / cumprod spec S with reset bytes (a.reset): segmented sums and products whose
// slabs fit S's whole tiles, each reset one more head of the plain loops.
template <class S>
struct SlabResetSpec : S {
    static constexpr bool RESETS = true;
};

// The columns and segments of one tile's table: item u is segment u % S of column u / S (columns
// in order, a column's segments in order), held by thread u % THREADS.
struct SlabItems {
    int cols[2];
    int n;
    bool owner;
};

// This thread's columns of a tile's table (the join's SlabItems), known before the tile is read.
template <int THREADS>
__device__ __forceinline__ SlabItems slab_items(int segs, int ncols)
{
    SlabItems it;
    it.n = 0;
    it.owner = false;
    it.cols[0] = it.cols[1] = 0;
    if (segs > 1) {
        const int u = threadIdx.x;
        if (u < ncols * segs) {
            it.cols[0] = u / segs;
            it.n = 1;
            it.owner = u % segs == segs - 1;
        }
    } else {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int u = threadIdx.x + j * THREADS;
            if (u < ncols) {
                it.cols[j] = u;
                it.n = j + 1;
            }
        }
        it.owner = true;
    }
    return it;
}

// Scans one staged tile in place. join(tile, items, totals, carries) (block-wide) turns the column
// totals of the tile (held by the owner of each column's last segment) into the prefixes the
// columns start from (the identity when nothing comes before). INIT: a.initial is set. HOLD: a
// segment stays in registers between the passes (else pass 2 reads the stage again).
template <class S, bool INIT, bool HOLD = true, typename Join>
__device__ __forceinline__ void scan_staged_tile_as(const SlabArgs &a, const SlabTile &t,
                                                    typename SlabScan<S>::Shared &sh, Join &&join)
{
    using T = SlabScan<S>;
    using AccT = typename S::AccT;
    using Op = typename S::Op;
    const Op op(a.op);
    const int shift = T::shift_of(a, t);
    const int segs = a.segs;

    if (segs == 1 && a.mode == kSlabWhole) {
        // wide whole slabs: a thread scans every THREADS-th column, nothing carried in or out
        for (int c = threadIdx.x; c < t.ncols; c += T::THREADS) {
            typename T::Segment g;
            T::segment_at(a, t, shift, 0, c, g);
            T::template segment_fold<INIT, HOLD, true>(a, t, sh, g);
            T::template segment_write<INIT, HOLD, true>(a, t, sh, g, op.identity());
        }
        return;
    }

    // pass 1: with S > 1, thread t folds segment t / ncols of column t % ncols and keeps it in
    // registers; with S == 1, columns t and t + THREADS, read again in pass 2. Totals go to the table,
    // indexed by item (column-major: c * S + s).
    typename T::Segment g;
    int item[T::NI];
    if (segs > 1) {
        const int u = threadIdx.x, s = u / t.ncols, c = u - s * t.ncols;
        item[0] = s < segs ? c * segs + s : -1;
        T::segment_at(a, t, shift, s < segs ? s : 0, c, g);
        if (item[0] >= 0) sh.table[item[0]] = T::template segment_fold<INIT, HOLD>(a, t, sh, g);
#pragma unroll
        for (int j = 1; j < T::NI; j++) item[j] = -1;
    } else {
#pragma unroll
        for (int j = 0; j < T::NI; j++) {
            const int c = threadIdx.x + j * T::THREADS;
            item[j] = c < t.ncols ? c : -1;
            if (item[j] >= 0) {
                typename T::Segment h;
                T::segment_at(a, t, shift, 0, c, h);
                sh.table[c] = T::template segment_fold<INIT, false>(a, t, sh, h);
            }
        }
    }
    __syncthreads();

    // the table, column-major: each segment's exclusive prefix within the tile, each column's total
    const SlabItems it = slab_items<T::THREADS>(segs, t.ncols);
    AccT ex[2], total[2];
    const int nitems = t.ncols * segs;
#pragma unroll
    for (int j = 0; j < 2; j++) ex[j] = total[j] = op.identity();
    if (segs > 1) {
        const int u = threadIdx.x;
        SegPair<AccT> agg = u < nitems ? sh.table[u] : SegPair<AccT>{ 0, op.identity() };
        SegPair<AccT> in = agg;
        const int s = u % segs;
        if (s == 0) in.f = 1;   // a column's first segment starts its fold
        const SegPair<AccT> e = T::block_seg_exclusive(op, in, sh);
        ex[0] = s == 0 ? op.identity() : e.v;
        total[0] = agg.f ? agg.v : op(ex[0], agg.v);
    } else {
#pragma unroll
        for (int j = 0; j < 2; j++)
            if (j < it.n) total[j] = sh.table[threadIdx.x + j * T::THREADS].v;
    }
    AccT carry[2];
    join(t, it, total, carry);
    // each table entry is read and rewritten by one thread
#pragma unroll
    for (int j = 0; j < 2; j++)
        if (j < it.n) sh.table[segs > 1 ? (int)threadIdx.x : it.cols[j]].v = op(carry[j], ex[j]);
    __syncthreads();

    // pass 2
    if (segs > 1) {
        if (item[0] >= 0) T::template segment_write<INIT, HOLD>(a, t, sh, g, sh.table[item[0]].v);
    } else {
#pragma unroll
        for (int j = 0; j < T::NI; j++) {
            if (item[j] >= 0) {
                typename T::Segment h;
                T::segment_at(a, t, shift, 0, item[j], h);
                T::template segment_write<INIT, false>(a, t, sh, h, sh.table[item[j]].v);
            }
        }
    }
}

// One instance per mode, and per INIT (a.initial set), so that each has the registers of its own
// path: scans without initial values keep the lean loops.
template <class S, int MODE, bool INIT>
__global__ void __launch_bounds__(S::P::kSlabThreads, SlabScan<S>::BLOCKS_PER_SM)
scan_slabs_kernel(const SlabArgs a, const VectorStatus<typename S::AccT> st, const ColumnStatus<typename S::AccT> cst,
                  const WorkQueue q)
{
    static_assert(!(INIT && S::INDEXED), "cummax and cummin take no initial values");
    if constexpr (policy_active<typename S::P>()) {
        using T = SlabScan<S>;
        using AccT = typename S::AccT;
        const typename S::Op op(a.op);
        typename T::Shared &sh = block_shared<typename T::Shared>();
        int parity = 0;

        if constexpr (MODE == kSlabWhole) {
            // one tile a block, independent, nothing carried
            const SlabTile t = T::tile_of(a, blockIdx.x);
            T::load_tile(a, t, sh);
            __syncthreads();
            scan_staged_tile_as<S, INIT, T::HOLD>(a, t, sh, [&](const SlabTile &, const SlabItems &, const AccT (&)[2], AccT (&carry)[2]) {
                carry[0] = carry[1] = op.identity();
            });
            __syncthreads();
            T::store_tile(a, t, sh);
            return;
        }

        if constexpr (MODE == kSlabWalk) {
            // a strip at a time, its pieces in order; the column carries wait in shared memory
            for (int64_t strip = q.take(sh.slot, parity); strip < q.units; strip = q.take(sh.slot, parity)) {
                for (int64_t piece = 0; piece < a.pieces; piece++) {
                    const SlabTile t = T::tile_of(a, strip, piece);
                    T::load_tile(a, t, sh);
                    __syncthreads();
                    scan_staged_tile_as<S, INIT, T::HOLD>(a, t, sh, [&](const SlabTile &tt, const SlabItems &it, const AccT (&total)[2],
                                                      AccT (&carry)[2]) {
                        // a strip's first piece starts from nothing
#pragma unroll
                        for (int j = 0; j < 2; j++)
                            carry[j] = j < it.n && tt.piece > 0 ? sh.carry[it.cols[j]] : op.identity();
                        __syncthreads();   // every thread has read the carries before the owners move them on
                        if (it.owner)
#pragma unroll
                            for (int j = 0; j < 2; j++)
                                if (j < it.n) sh.carry[it.cols[j]] = op(carry[j], total[j]);
                    });
                    __syncthreads();
                    T::store_tile(a, t, sh);
                    __syncthreads();   // the stage and carries are reused by the next piece
                }
            }
            q.finish();
            return;
        }

        if constexpr (MODE != kSlabLookback) return;
        // look-back: one piece per block, ids taken in order, so a block only waits on pieces that
        // running blocks hold; a block that waits holds no loads back, and a new one starts as soon
        // as one retires
        const int64_t unit = q.take(sh.slot, parity);
        q.finish();
        const SlabTile t = T::tile_of(a, unit);
        CS_TRACE(a.window ? unit % a.strips * a.pieces + t.piece : 1 << 17, 4, cs_now());
        if constexpr (Wire<AccT>::kFits) {
            if (!a.window) {
                // packed column words: a chain of inclusive prefixes, each piece's read while the tile's
                // loads fly (with many strips it has long been posted), or for a single strip a tree
                // of the strip's piece sums (lookback.cuh), its oldest block read early
                const SlabItems mine = slab_items<T::THREADS>(a.segs, t.ncols);
                const int64_t strip = unit % a.strips;
                const PieceTree<AccT> tree{ cst.aggregate, a.pieces, a.strips, a.width };
                bool have[2] = { false, false };
                AccT early[2];
                if (t.piece > 0)
#pragma unroll
                    for (int j = 0; j < 2; j++)
                        if (j < mine.n)
                            have[j] = a.tree ? tree.peek_first(t.piece, strip, mine.cols[j], early[j])
                                             : cst.peek(unit - a.strips, mine.cols[j], early[j]);
                T::load_tile(a, t, sh);
                __syncthreads();
                // (segments are read from the stage twice: registers stay free for the look-back)
                scan_staged_tile_as<S, INIT, false>(
                    a, t, sh, [&](const SlabTile &tt, const SlabItems &it, const AccT (&total)[2], AccT (&carry)[2]) {
#pragma unroll
                        for (int j = 0; j < 2; j++) {
                            carry[j] = op.identity();   // a strip's first piece starts from nothing
                            if (j >= it.n) continue;
                            const int c = it.cols[j];
                            if (a.tree) {
                                if (it.owner) tree.post(op, tt.piece, strip, c, total[j]);
                                if (tt.piece > 0) carry[j] = tree.prefix(op, tt.piece, strip, c, have[j], early[j]);
                            } else {
                                if (tt.piece > 0)
                                    carry[j] = have[j] ? early[j]
                                                       : column_lookback(op, cst, unit, a.strips, c, it.owner, total[j]);
                                if (it.owner) cst.inclusive.post(cst.at(unit, c), kInclusive, op(carry[j], total[j]));
                            }
                        }
                    });
                __syncthreads();
                T::store_tile(a, t, sh);
                return;
            }
        }
        // a window of flags (few narrow strips), or flags and two arrays for states too large for a
        // packed word (their segments held as the other modes do)
        T::load_tile(a, t, sh);
        __syncthreads();
        constexpr bool kHold = Wire<AccT>::kFits ? false : T::HOLD_LOOKBACK;
        scan_staged_tile_as<S, INIT, kHold>(a, t, sh, [&](const SlabTile &tt, const SlabItems &it, const AccT (&total)[2],
                                                  AccT (&carry)[2]) {
            if (a.window) {
                const int64_t strip = unit % a.strips;
                strip_window_lookback<2>(op, st, strip * a.pieces + tt.piece, tt.piece, tt.ncols, it.owner, it.cols, it.n,
                                         total, carry, sh.carry, T::CARRIES, &sh.distance);
            } else {
                carry[0] = carry[1] = op.identity();   // a strip's first piece starts from nothing
                strip_lookback<2>(op, st, unit, a.strips, tt.piece == 0, it.owner, it.cols, it.n, total, carry,
                                  &sh.distance);
            }
        });
        __syncthreads();
        T::store_tile(a, t, sh);
    }
}

}  // namespace cuscan
