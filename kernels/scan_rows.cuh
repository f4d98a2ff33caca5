// scan_rows.cuh - the row family: lines walked along their own dim (contiguous when the dim's
// strides are 1).
//
// A block of P::kRowWarps warps scans one tile. A warp's part of the tile is K chunks of 32 lanes x
// VEC elements; lane l of chunk k holds the VEC consecutive elements at k*32*VEC + l*VEC, so every
// load and store instruction of a warp covers one contiguous segment (16-byte vectors when VEC > 1).
// Per chunk: each lane folds its VEC elements, a warp scan (CUB) turns the lane totals into lane
// prefixes, and a running warp carry joins the chunks; warp totals meet in shared memory.
//
// Four ways to cut the work (scan_launch.cuh picks one):
//   segmented    short packed lines: a tile holds whole lines; a head flag restarts the scan at each
//                line start (segmented scan), so no tile depends on another;
//   single       a line per tile (lines no longer than a tile);
//   whole lines  many long lines: a block walks its line tile by tile with the carry in registers,
//                loading the next tile before scanning the current one; no block waits on another;
//   line pieces  few long lines: one large tile per block, the pieces of a line joined by the
//                look-back (lookback.cuh). The block holds half its tile in registers and reads the
//                other half twice: once to reduce it, and again, once its prefix is known, from L1.
//                DRAM still sees one read and one write, and twice the bytes a block could hold in
//                registers wait on each prefix.
// In every mode the order of the combines follows from the shape alone, never from timing, so a
// scan gives the same bits on every run. Tiles are held in the input type, folds run in AccT.
// Reverse walks tiles from the end and reverses each vector in registers: no flips in memory.
// Flagged scans (scan_ops.cuh) hold a flags word per chunk beside the tile: bit j says element j
// is kept, bit 16 + j that it starts a segment; in segmented mode line starts are segment starts.
#pragma once
#include <cstring>
#include <type_traits>
#include <cub/warp/warp_scan.cuh>
#include "lookback.cuh"

namespace cuscan {

// Input bytes a thread holds per tile: BYTES > kRowBytes (line pieces) may hold up to 32 chunks.
// WARP_TILES: the tile is one warp's (a warp walks a line alone).
template <class S, int VEC, int BYTES, bool WARP_TILES = false>
struct RowTile {
    using P = typename S::P;
    static constexpr int K_MAX = S::FLAGGED ? (BYTES > P::kRowBytesFlagged ? P::kPieceChunksFlagged : P::kRowChunksFlagged)
                                 : BYTES > P::kRowBytes ? 32 : 16;
    static constexpr int K_FIT = BYTES / (VEC * (int)sizeof(typename S::InT));
    static constexpr int K = K_FIT > K_MAX ? K_MAX : (K_FIT < 1 ? 1 : K_FIT);
    static constexpr int WARP_SPAN = kWarp * VEC * K;
    static constexpr int SIZE = (WARP_TILES ? 1 : P::kRowWarps) * WARP_SPAN;
};

// A 4- or 2-byte input folded in a wider type (float32, float16 and bfloat16 into float64, int32 into
// int64): each element held takes two or four times its bytes in registers once widened.
template <class S>
constexpr bool kWidens = sizeof(typename S::AccT) > sizeof(typename S::InT) &&
                        (sizeof(typename S::InT) == 4 || sizeof(typename S::InT) == 2);

// Input bytes a thread holds in the one-tile kernels: fewer when the fold's type is wider than the
// input's, so that the tile and its prefixes fit the registers of three blocks an SM.
template <class S>
constexpr int kOneTileBytes = S::FLAGGED ? S::P::kRowBytesFlagged : kWidens<S> ? S::P::kRowBytesWideAcc : S::P::kRowBytes;

template <class S>
constexpr int kPieceBytes = S::FLAGGED ? S::P::kPieceBytesFlagged
                            : S::P::kPieceScale * S::P::kRowBytes /
                                  (S::MASKED ? S::P::kMaskedPieceDivisor
                                             : kWidens<S> && sizeof(typename S::InT) == 2 ? S::P::kHalfPieceDivisor : 1);
// (2-byte floats into 2-byte outputs take the masked size unmasked too: the full tile's conversions
// cost bfloat16 twice the registers, one block an SM)
template <class S>
constexpr int kLineTileBytes = S::FLAGGED ? S::P::kLineBytesFlagged
                               : S::P::kRowBytes / (S::MASKED ? S::P::kMaskedLineDivisor
                                                    : sizeof(typename S::InT) == 2 && sizeof(typename S::OutT) == 2
                                                        ? S::P::kHalfLineDivisor
                                                        : 1);
// A warp's tile and the warp-lines kernel's launch bound, by the flagged op's state: cummax / cummin
// (a value and a 64-bit index) want the registers of fewer blocks, segmented sums and products (a
// number and a flag) more blocks of smaller tiles; logcumsumexp keeps the common values.
template <class S>
constexpr bool kSegmentedArith = S::FLAGGED && !S::INDEXED && !kIsLse<typename S::Op>;
template <class S>
constexpr int kWarpLineBytes = kSegmentedArith<S> ? S::P::kWarpLineBytesSegmented : S::P::kWarpLineBytesFlagged;
template <class S>
constexpr int kWarpLinesBlocks = S::INDEXED ? S::P::kWarpLinesBlocksPerSmIndexed
                                 : kSegmentedArith<S> ? S::P::kWarpLinesBlocksPerSmSegmented
                                                      : S::P::kWarpLinesBlocksPerSm;

struct RowsArgs {
    const void *x;
    const unsigned char *mask;
    void *out;
    int64_t len;            // elements per line
    int64_t sx, sm, so;     // strides along the line (1 in the vector path)
    int64_t nlines;
    ScanLineOffsets lines;
    int64_t tiles_per_line; // lines mode
    int64_t lines_per_tile; // segmented mode
    int exclusive;
    // flagged scans
    const unsigned char *reset;
    int64_t *indices;
    int64_t sr, si;         // their strides along the line
    OpArgs op;
    const void *initial;    // NULL, or each line's initial value (never in segmented mode)
    cs_dtype initial_dtype;
};

// The state line `line` starts from: its initial value, or the identity.
template <class S>
__device__ __forceinline__ typename S::AccT line_start_state(const RowsArgs &a, int64_t line)
{
    if (a.initial) return S::initial(a.initial, a.lines.at_initial(line), a.initial_dtype);
    return typename S::Op(a.op).identity();
}

// Inclusive segmented warp scan by shuffles; returns the lane's inclusive pair, *total the warp's.
template <typename Op, typename T>
__device__ __forceinline__ SegPair<T> warp_seg_scan(Op op, SegPair<T> p, SegPair<T> *total)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int fo = __shfl_up_sync(0xffffffffu, p.f, d);
        T vo = shfl_up_state(p.v, d);
        if (lane >= d) {
            if (!p.f) p.v = op(vo, p.v);
            p.f |= fo;
        }
    }
    total->f = __shfl_sync(0xffffffffu, p.f, 31);
    total->v = shfl_state(p.v, 31);
    return p;
}

// The exclusive prefix of each lane's value within the warp and the warp's total: a CUB inclusive
// warp scan shifted up by one lane (fixed tree, so fixed bits).
template <typename Op, typename T>
__device__ __forceinline__ T warp_exclusive(Op op, T v, T &total)
{
    using WarpScan = cub::WarpScan<T>;
    typename WarpScan::TempStorage unused;
    T incl;
    WarpScan(unused).InclusiveScan(v, incl, op, total);
    T ex = shfl_up_state(incl, 1);
    return (threadIdx.x & 31) == 0 ? op.identity() : ex;
}

// Where one tile lies: `count` elements from physical position `pbase` of a line at offsets ox/om/oo
// (and, for flagged scans, orst/oidx of reset and indices).
struct RowSpan {
    int64_t ox, om, oo, pbase, piece, line;
    int count;
    int64_t orst, oidx;
};

template <bool REVERSE, bool SEG, int SIZE, bool FLAGGED = false>
__device__ __forceinline__ RowSpan row_span(const RowsArgs &a, int64_t unit)
{
    RowSpan s;
    if constexpr (SEG) {
        const int64_t first_line = unit * a.lines_per_tile;
        const int64_t nl = min(a.lines_per_tile, a.nlines - first_line);
        s.ox = s.om = s.oo = 0;
        s.orst = s.oidx = 0;
        s.count = (int)(nl * a.len);
        s.pbase = first_line * a.len;
        s.piece = 0;
        s.line = first_line;
    } else {
        const int64_t line = unit / a.tiles_per_line;
        s.piece = unit - line * a.tiles_per_line;
        s.line = line;
        a.lines.at(line, s.ox, s.om, s.oo);
        if constexpr (FLAGGED) a.lines.at_flags(line, s.orst, s.oidx);
        const int64_t start = s.piece * SIZE;
        s.count = (int)min((int64_t)SIZE, a.len - start);
        s.pbase = REVERSE ? a.len - start - s.count : start;
    }
    return s;
}

// One tile's scan: load (issued early, so a block walking a line loads its next tile while it scans
// the current one), then scan_and_store; the line-piece kernel uses the chunk-wise parts.
// FLAT_MASKED_LOADS: a masked tile's loads are issued with no branch around them (see load_chunk):
// the one-tile kernel, and blocks walking lines of 2-byte inputs; the other line walks and the line
// pieces keep the guarded loads, which ran faster there (bench/NOTES.md).
template <class S, int VEC, bool SEG, int BYTES, bool WARP_TILES = false, bool FLAT_MASKED_LOADS = false>
struct RowTileScan {
    using InT = typename S::InT;
    using AccT = typename S::AccT;
    using OutT = typename S::OutT;
    // segmented tiles fold many short lines, each thread its own: cummax joins there in the
    // short-circuit form (scan_ops.cuh)
    using Op = std::conditional_t<SEG, typename ShortCircuitJoin<typename S::Op>::type, typename S::Op>;
    using Tile = RowTile<S, VEC, BYTES, WARP_TILES>;
    static constexpr int K = Tile::K;
    static constexpr int WARPS = S::P::kRowWarps;
    static constexpr bool REVERSE = S::REVERSE, MASKED = S::MASKED, FLAGGED = S::FLAGGED;

    // the warp's place in the tile (0 for warp tiles)
    __device__ __forceinline__ static int tile_warp() { return WARP_TILES ? 0 : (int)(threadIdx.x >> 5); }

    struct Regs {
        InT v[K][VEC];   // v[k][j]: logical element warp*WARP_SPAN + k*32*VEC + lane*VEC + j of the tile
        unsigned fl[K];  // flagged scans: chunk k's flags
    };

    __device__ __forceinline__ static RowSpan span(const RowsArgs &a, int64_t unit)
    {
        return row_span<REVERSE, SEG, Tile::SIZE, FLAGGED>(a, unit);
    }

    struct Shared {
        AccT warp_total[WARPS];
        int warp_flag[WARPS];
        AccT prefix;
        AccT window[32 * kLookbackPerLane];
    };

    // Chunk k of this thread's part of the tile, in scan order (reversed in registers for REVERSE);
    // masked-out elements read as zero, elements past the tile's end as the identity.
    template <LoadHint H = kPlain>
    __device__ __forceinline__ static void load_chunk(const RowsArgs &a, const RowSpan &sp, int k, InT (&v)[VEC])
    {
        const int lane = threadIdx.x & 31, warp = tile_warp();
        const InT *x = static_cast<const InT *>(a.x) + sp.ox;
        const unsigned char *m = a.mask + sp.om;
        const int e0 = warp * Tile::WARP_SPAN + k * 32 * VEC + lane * VEC;
        if constexpr (MASKED && FLAT_MASKED_LOADS) {
            // x and the mask are loaded whatever the mask says and wherever the chunk lies (past the
            // tile's end it reads the tile's first vector, a place every tile has, and drops it): with
            // no load under a branch, every chunk's loads are in flight together, as unmasked
            const bool in = e0 < sp.count;
            const int e = in ? e0 : 0;
            const int64_t p = sp.pbase + (REVERSE ? sp.count - e - VEC : e);
            if constexpr (VEC > 1) {
                const Vec<InT, VEC> xv = load_vec_hinted<InT, VEC, H>(x + p);
                const Vec<unsigned char, VEC> mv = load_vec_hinted<unsigned char, VEC, H>(m + p);
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const int s = REVERSE ? VEC - 1 - j : j;
                    v[j] = !in ? S::in_identity() : mv.v[s] ? xv.v[s] : S::in_zero();
                }
            } else {
                const InT xe = load_hinted<H>(x + p * a.sx);
                const unsigned char me = load_hinted<H>(m + p * a.sm);
                v[0] = !in ? S::in_identity() : me ? xe : S::in_zero();
            }
        } else if (e0 < sp.count) {
            const int64_t p = sp.pbase + (REVERSE ? sp.count - e0 - VEC : e0);
            if constexpr (VEC > 1) {
                Vec<InT, VEC> xv = load_vec_hinted<InT, VEC, H>(x + p);
                Vec<unsigned char, VEC> mv;
                if constexpr (MASKED) mv = load_vec_hinted<unsigned char, VEC, H>(m + p);
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const int s = REVERSE ? VEC - 1 - j : j;
                    v[j] = (!MASKED || mv.v[s]) ? xv.v[s] : S::in_zero();
                }
            } else {
                v[0] = (!MASKED || load_hinted<H>(m + p * a.sm)) ? load_hinted<H>(x + p * a.sx) : S::in_zero();
            }
        } else {
#pragma unroll
            for (int j = 0; j < VEC; j++) v[j] = S::in_identity();
        }
    }

    // Bit j: byte j (in scan order) of the VEC flag bytes at position p of a line is nonzero.
    template <LoadHint H>
    __device__ __forceinline__ static unsigned byte_bits(const unsigned char *b, int64_t p, int64_t stride)
    {
        if constexpr (VEC > 1) {
            const Vec<unsigned char, VEC> bv = load_vec_hinted<unsigned char, VEC, H>(b + p);
            unsigned bits = 0;
#pragma unroll
            for (int j = 0; j < VEC; j++) bits |= (bv.v[REVERSE ? VEC - 1 - j : j] != 0 ? 1u : 0u) << j;
            return bits;
        } else {
            return load_hinted<H>(b + p * stride) != 0;
        }
    }

    // Flagged scans: chunk k as load_chunk reads it, unmasked, and its flags (the mask and reset
    // bytes, when there are some; a line start in segmented mode; nothing past the tile's end).
    template <LoadHint H = kPlain>
    __device__ __forceinline__ static void load_chunk_flagged(const RowsArgs &a, const RowSpan &sp, int k, InT (&v)[VEC],
                                                              unsigned &fl)
    {
        const int lane = threadIdx.x & 31, warp = tile_warp();
        const InT *x = static_cast<const InT *>(a.x) + sp.ox;
        const int e0 = warp * Tile::WARP_SPAN + k * 32 * VEC + lane * VEC;
        fl = 0;
        if (e0 < sp.count) {
            const int64_t p = sp.pbase + (REVERSE ? sp.count - e0 - VEC : e0);
            if constexpr (VEC > 1) {
                const Vec<InT, VEC> xv = load_vec_hinted<InT, VEC, H>(x + p);
#pragma unroll
                for (int j = 0; j < VEC; j++) v[j] = xv.v[REVERSE ? VEC - 1 - j : j];
            } else {
                v[0] = load_hinted<H>(x + p * a.sx);
            }
            const unsigned keep = a.mask ? byte_bits<H>(a.mask + sp.om, p, a.sm) : (1u << VEC) - 1;
            unsigned reset = a.reset ? byte_bits<H>(a.reset + sp.orst, p, a.sr) : 0;
            // lines are whole multiples of VEC here, so only a vector's first element starts one
            if (SEG && e0 % (int)a.len == 0) reset |= 1u;
            fl = keep | reset << 16;
        } else {
#pragma unroll
            for (int j = 0; j < VEC; j++) v[j] = S::in_identity();
        }
    }

    template <LoadHint H = kPlain>
    __device__ __forceinline__ static void load_any(const RowsArgs &a, const RowSpan &sp, int k, InT (&v)[VEC],
                                                    unsigned &fl)
    {
        if constexpr (FLAGGED) {
            load_chunk_flagged<H>(a, sp, k, v, fl);
        } else {
            load_chunk<H>(a, sp, k, v);
            fl = 0;
        }
    }

    __device__ __forceinline__ static void load(const RowsArgs &a, int64_t unit, Regs &r)
    {
        const RowSpan sp = span(a, unit);
#pragma unroll
        for (int k = 0; k < K; k++) load_any(a, sp, k, r.v[k], r.fl[k]);
    }

    // Chunks K0..K1-1 of the tile, B loads in flight at a time; f(k, v, flags) takes each in order.
    template <int K0, int K1, int B, LoadHint H, typename F>
    __device__ __forceinline__ static void each_chunk(const RowsArgs &a, const RowSpan &sp, F &&f)
    {
        static_assert((K1 - K0) % B == 0, "whole batches");
#pragma unroll
        for (int k0 = K0; k0 < K1; k0 += B) {
            InT v[B][VEC];
            unsigned fl[B];
#pragma unroll
            for (int b = 0; b < B; b++) load_any<H>(a, sp, k0 + b, v[b], fl[b]);
#pragma unroll
            for (int b = 0; b < B; b++) f(k0 + b, v[b], fl[b]);
        }
    }

    // The 1-based index along its line of element j of chunk k (cummax / cummin).
    __device__ __forceinline__ static int64_t index_of(const RowsArgs &a, const RowSpan &sp, int k, int j)
    {
        const int lane = threadIdx.x & 31, warp = tile_warp();
        const int e0 = warp * Tile::WARP_SPAN + k * 32 * VEC + lane * VEC, e = e0 + j;
        if constexpr (SEG) {
            // lines are whole multiples of VEC here: one remainder serves the vector
            const int r = e0 % (int)a.len + j;
            return REVERSE ? a.len - r : r + 1;
        } else {
            const int64_t lp = sp.piece * Tile::SIZE + e;
            return REVERSE ? a.len - lp : lp + 1;
        }
    }

    // Element j of chunk k as a state.
    __device__ __forceinline__ static AccT elem(const Op &op, const RowsArgs &a, const RowSpan &sp, int k,
                                                const InT (&v)[VEC], unsigned fl, int j)
    {
        if constexpr (FLAGGED)
            return op.lift(v[j], (fl >> j) & 1u, (fl >> (16 + j)) & 1u, S::INDEXED ? index_of(a, sp, k, j) : 0);
        else
            return to_acc<AccT>(v[j]);
    }

    __device__ __forceinline__ static AccT lane_total(const InT (&v)[VEC])
    {
        const Op op;
        AccT t = to_acc<AccT>(v[0]);
#pragma unroll
        for (int j = 1; j < VEC; j++) t = op(t, to_acc<AccT>(v[j]));
        return t;
    }

    __device__ __forceinline__ static AccT lane_total(const Op &op, const RowsArgs &a, const RowSpan &sp, int k,
                                                      const InT (&v)[VEC], unsigned fl)
    {
        if constexpr (FLAGGED) {
            AccT t = elem(op, a, sp, k, v, fl, 0);
#pragma unroll
            for (int j = 1; j < VEC; j++) t = op(t, elem(op, a, sp, k, v, fl, j));
            return t;
        } else {
            return lane_total(v);
        }
    }

    // Stores chunk k, scanned from `b` (the prefix of its first element). `line_start`: its first
    // element starts a line, whose exclusive output is the empty prefix. STREAM marks the stores
    // evict-first, so they do not push out input that is still to be read again.
    template <bool STREAM = false>
    __device__ __forceinline__ static void store_chunk(const RowsArgs &a, const RowSpan &sp, int k, AccT b,
                                                       const InT (&v)[VEC], bool line_start)
    {
        const Op op;
        const int lane = threadIdx.x & 31, warp = tile_warp();
        const int e0 = warp * Tile::WARP_SPAN + k * 32 * VEC + lane * VEC;
        if (e0 >= sp.count) return;
        OutT *y = static_cast<OutT *>(a.out) + sp.oo;
        OutT out[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const AccT nb = op(b, to_acc<AccT>(v[j]));
            out[j] = to_out<OutT>(a.exclusive ? (j == 0 && line_start ? Op::zero() : b) : nb);
            b = nb;
        }
        store_out<STREAM>(a, y, sp.pbase + (REVERSE ? sp.count - e0 - VEC : e0), out);
    }

    // A chunk's outputs (in scan order) at position p of its line.
    template <bool STREAM>
    __device__ __forceinline__ static void store_out(const RowsArgs &a, OutT *y, int64_t p, const OutT (&out)[VEC])
    {
        if constexpr (VEC > 1) {
            Vec<OutT, VEC> ov;
#pragma unroll
            for (int j = 0; j < VEC; j++) ov.v[REVERSE ? VEC - 1 - j : j] = out[j];
            if constexpr (STREAM) store_vec_streaming<OutT, VEC>(y + p, ov);
            else store_vec<OutT, VEC>(y + p, ov);
        } else if constexpr (STREAM) {
            __stcs(y + p * a.so, out[0]);
        } else {
            y[p * a.so] = out[0];
        }
    }

    // Chunk k's elements as states (flagged scans).
    __device__ __forceinline__ static void lift_chunk(const Op &op, const RowsArgs &a, const RowSpan &sp, int k,
                                                      const InT (&v)[VEC], unsigned fl, AccT (&e)[VEC])
    {
#pragma unroll
        for (int j = 0; j < VEC; j++) e[j] = elem(op, a, sp, k, v, fl, j);
    }

    // Flagged scans: the outputs of chunk k (and their indices, when asked for). An element that
    // starts a segment (or the line) gets the empty prefix in an exclusive scan.
    template <bool STREAM = false>
    __device__ __forceinline__ static void store_chunk_flagged(const RowsArgs &a, const RowSpan &sp, int k, AccT b,
                                                               const InT (&v)[VEC], unsigned fl, bool line_start)
    {
        const Op op(a.op);
        AccT e[VEC];
        lift_chunk(op, a, sp, k, v, fl, e);
        store_lifted<STREAM>(a, sp, k, b, e, fl, line_start);
    }

    // The same from the chunk's states (lifted once for the lane's fold and its outputs).
    template <bool STREAM = false>
    __device__ __forceinline__ static void store_lifted(const RowsArgs &a, const RowSpan &sp, int k, AccT b,
                                                        const AccT (&e)[VEC], unsigned fl, bool line_start)
    {
        const Op op(a.op);
        const int lane = threadIdx.x & 31, warp = tile_warp();
        const int e0 = warp * Tile::WARP_SPAN + k * 32 * VEC + lane * VEC;
        if (e0 >= sp.count) return;
        OutT *y = static_cast<OutT *>(a.out) + sp.oo;
        OutT out[VEC];
        int64_t idx[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const AccT nb = op(b, e[j]);
            const bool first = ((fl >> (16 + j)) & 1u) || (j == 0 && line_start);
            const AccT o = a.exclusive ? (first ? op.empty() : b) : nb;
            out[j] = S::out(o);
            idx[j] = S::index(o);
            b = nb;
        }
        const int64_t p = sp.pbase + (REVERSE ? sp.count - e0 - VEC : e0);
        store_out<STREAM>(a, y, p, out);
        if constexpr (S::INDEXED) {
            if (a.indices) {
                int64_t *yi = a.indices + sp.oidx;
                if constexpr (VEC > 1) {
#pragma unroll
                    for (int h = 0; h < VEC; h += 2) {
                        Vec<int64_t, 2> iv;
                        iv.v[0] = idx[REVERSE ? VEC - 1 - h : h];
                        iv.v[1] = idx[REVERSE ? VEC - 2 - h : h + 1];
                        store_vec<int64_t, 2>(yi + p + h, iv);
                    }
                } else {
                    yi[p * a.si] = idx[0];
                }
            }
        }
    }

    template <bool STREAM = false>
    __device__ __forceinline__ static void store_any(const RowsArgs &a, const RowSpan &sp, int k, AccT b,
                                                     const InT (&v)[VEC], unsigned fl, bool line_start)
    {
        if constexpr (FLAGGED) store_chunk_flagged<STREAM>(a, sp, k, b, v, fl, line_start);
        else store_chunk<STREAM>(a, sp, k, b, v, line_start);
    }

    // Does chunk k of this lane start its line (for a tile that is not segmented), so that an
    // exclusive scan gives it the empty prefix? Not with initial values: it gets the line's own.
    __device__ __forceinline__ static bool starts_line(const RowsArgs &a, const RowSpan &sp, int k)
    {
        const int lane = threadIdx.x & 31, warp = tile_warp();
        return sp.piece == 0 && warp == 0 && k == 0 && lane == 0 && !a.initial;
    }

    // logcumsumexp over a warp tile as a plain float64 sum: when the tile has no reset, no NaN, no
    // infinity, and its kept values and the carry lie within kSpan of the largest of them, R, no
    // exp(x - R) can underflow before its own prefix's maximum, so the sum of exp(x - R) from one
    // reference is as exact as the joined states, at an exp, a few adds and a log an element (no
    // segmented pairs, no 64-bit selects). Returns false, having stored nothing, where it does not
    // apply; the generic walk then takes the tile.
    __device__ __forceinline__ static bool lse_warp_tile(const RowsArgs &a, const RowSpan &sp, const Regs &r,
                                                         AccT &carry)
    {
        constexpr double kSpan = kLsePlainSpan;
        const double ninf = minus_inf();
        double m = ninf;
        bool odd = false;
#pragma unroll
        for (int k = 0; k < K; k++) {
            odd |= (r.fl[k] >> 16) != 0;
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const double x = to_acc<double>(r.v[k][j]);
                if ((r.fl[k] >> j) & 1u) {
                    m = fmax(m, x);
                    odd |= !(fabs(x) < 0x1p60);
                }
            }
        }
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, d));
        const LseState c = carry.v;
        const LsePlainCarry pc = lse_plain_carry(c);
        const double R = fmax(m, pc.log);
        odd |= pc.odd || R == ninf || (pc.has && pc.log < R - kSpan);
#pragma unroll
        for (int k = 0; k < K; k++)
#pragma unroll
            for (int j = 0; j < VEC; j++)
                if ((r.fl[k] >> j) & 1u) odd |= to_acc<double>(r.v[k][j]) < R - kSpan;
        if (__any_sync(0xffffffffu, odd)) return false;

        double P = lse_carry_in_scale(c, R);
        const int lane = threadIdx.x & 31;
        OutT *y = static_cast<OutT *>(a.out) + sp.oo;
#pragma unroll
        for (int k = 0; k < K; k++) {
            double t[VEC], lane_sum = 0.0;
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                t[j] = (r.fl[k] >> j) & 1u ? lse_exp_rel(to_acc<double>(r.v[k][j]) - R) : 0.0;
                lane_sum += t[j];
            }
            double ex, chunk_total;
            typename cub::WarpScan<double>::TempStorage unused;
            cub::WarpScan<double>(unused).ExclusiveSum(lane_sum, ex, chunk_total);
            const int e0 = k * 32 * VEC + lane * VEC;
            if (e0 < sp.count) {
                double before = P + ex;
                const bool first = starts_line(a, sp, k);
                OutT out[VEC];
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const double after = before + t[j];
                    const double o = a.exclusive ? (j == 0 && first ? 0.0 : before) : after;
                    out[j] = to_out<OutT>(lse_plain_value(R, o));
                    before = after;
                }
                store_out<false>(a, y, sp.pbase + (REVERSE ? sp.count - e0 - VEC : e0), out);
            }
            P += chunk_total;
        }
        carry.v = lse_state_at(R, P);   // (P > 0: R is a kept element's or the carry's)
        return true;
    }

    // logcumsumexp chunk by chunk as plain sums (scan_ops.cuh), for tiles whose warps share one: the
    // chunk's largest kept element across the warp and this lane's smallest, and whether the chunk
    // has a reset or a kept element that is not finite or beyond 2^60 (then the joined states take it).
    static constexpr bool kLse = kIsLse<Op>;
    __device__ __forceinline__ static bool lse_chunk_odd(const InT (&v)[VEC], unsigned fl, double &hi, double &lo)
    {
        bool odd = (fl >> 16) != 0;
        hi = minus_inf();
        lo = -minus_inf();
#pragma unroll
        for (int j = 0; j < VEC; j++)
            if ((fl >> j) & 1u) {
                const double x = to_acc<double>(v[j]);
                odd |= !(fabs(x) < 0x1p60);
                hi = fmax(hi, x);
                lo = fmin(lo, x);
            }
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, d));
        return odd;
    }

    // The chunk's total as a state (every lane), or false where the joined states must fold it. The
    // butterfly leaves the same sum in every lane (each step adds the same two numbers).
    __device__ __forceinline__ static bool lse_chunk_total(const InT (&v)[VEC], unsigned fl, AccT &total)
    {
        double hi, lo;
        if (__any_sync(0xffffffffu, lse_chunk_odd(v, fl, hi, lo))) return false;
        double sum = 0.0;
#pragma unroll
        for (int j = 0; j < VEC; j++)
            if ((fl >> j) & 1u) sum += lse_exp_rel(fmax(to_acc<double>(v[j]) - hi, -700.0));   // (see lse_totals)
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
        total = sum > 0.0 ? AccT{ 0, lse_state_at(hi, sum) } : Op().identity();
        return true;
    }

    // Chunk k scanned from `carry` (advanced past it) as a plain sum from R, the larger of the
    // chunk's largest kept element and the carry, and stored; false, nothing stored, where it cannot.
    template <bool STREAM>
    __device__ __forceinline__ static bool lse_chunk_scan(const RowsArgs &a, const RowSpan &sp, int k,
                                                          const InT (&v)[VEC], unsigned fl, AccT &carry,
                                                          bool line_start)
    {
        double hi, lo;
        bool odd = lse_chunk_odd(v, fl, hi, lo);
        const LsePlainCarry pc = lse_plain_carry(carry.v);
        const double R = fmax(hi, pc.log);
        odd |= pc.odd || R == minus_inf() || lo < R - kLsePlainSpan || (pc.has && pc.log < R - kLsePlainSpan);
        if (__any_sync(0xffffffffu, odd)) return false;
        double t[VEC], lane_sum = 0.0;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            t[j] = (fl >> j) & 1u ? lse_exp_rel(to_acc<double>(v[j]) - R) : 0.0;
            lane_sum += t[j];
        }
        double ex, chunk_sum;
        typename cub::WarpScan<double>::TempStorage unused;
        cub::WarpScan<double>(unused).ExclusiveSum(lane_sum, ex, chunk_sum);
        const double P = lse_carry_in_scale(carry.v, R);
        const int e0 = tile_warp() * Tile::WARP_SPAN + k * 32 * VEC + (threadIdx.x & 31) * VEC;
        if (e0 < sp.count) {
            double before = P + ex;
            OutT out[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const double after = before + t[j];
                out[j] = to_out<OutT>(lse_plain_value(R, a.exclusive ? (j == 0 && line_start ? 0.0 : before) : after));
                before = after;
            }
            store_out<STREAM>(a, static_cast<OutT *>(a.out) + sp.oo, sp.pbase + (REVERSE ? sp.count - e0 - VEC : e0), out);
        }
        carry.v = lse_state_at(R, P + chunk_sum);   // (not empty: R is a kept element's or the carry's)
        return true;
    }

    // Chunk k's total for the tile's first pass, and its scan and store from `carry` for the second:
    // plain sums where they apply, the joined states otherwise.
    __device__ __forceinline__ static AccT chunk_total(const Op &op, const RowsArgs &a, const RowSpan &sp, int k,
                                                       const InT (&v)[VEC], unsigned fl)
    {
        if constexpr (kLse) {
            AccT total;
            if (lse_chunk_total(v, fl, total)) return total;
        }
        // a reduce, not a scan: no prefix is wanted here (lanes in order, so an op need not commute)
        typename cub::WarpReduce<AccT>::TempStorage unused;
        return cub::WarpReduce<AccT>(unused).Reduce(lane_total(op, a, sp, k, v, fl), op);
    }
    template <bool STREAM = false>
    __device__ __forceinline__ static void scan_chunk(const Op &op, const RowsArgs &a, const RowSpan &sp, int k,
                                                      const InT (&v)[VEC], unsigned fl, AccT &carry)
    {
        const bool line_start = starts_line(a, sp, k);
        if constexpr (kLse)
            if (lse_chunk_scan<STREAM>(a, sp, k, v, fl, carry, line_start)) return;
        AccT total;
        const AccT ex = warp_exclusive(op, lane_total(op, a, sp, k, v, fl), total);
        store_any<STREAM>(a, sp, k, op(carry, ex), v, fl, line_start);
        carry = op(carry, total);
    }

    // A tile's prefix (with_carry: a block walking its line; else its initial value or nothing) and
    // the carry after it, once the warp totals are in shared memory. The tile total joins the carry
    // in the same order the look-back chain uses.
    __device__ __forceinline__ static void tile_prefix(const RowsArgs &a, const RowSpan &sp, const Shared &sh,
                                                       bool with_carry, AccT carry_in, AccT &prefix, AccT &carry_out)
    {
        const Op op(a.op);
        prefix = carry_out = op.identity();
        if (with_carry) {
            AccT tile_total = sh.warp_total[0];
            for (int w = 1; w < WARPS; w++) tile_total = op(tile_total, sh.warp_total[w]);
            prefix = carry_in;
            carry_out = op(carry_in, tile_total);
        } else if (a.initial) {
            prefix = line_start_state<S>(a, sp.line);
        }
    }

    // logcumsumexp tiles of whole warps (one-tile and whole-lines kernels): the warp totals from the
    // chunk totals, then each warp's chunks in order from its prefix. Same contract as scan_and_store.
    __device__ __forceinline__ static AccT lse_scan_and_store(const RowsArgs &a, int64_t unit, const Regs &r,
                                                              Shared &sh, bool with_carry, AccT carry_in)
    {
        const Op op(a.op);
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const RowSpan sp = span(a, unit);
        AccT total = op.identity();
#pragma unroll
        for (int k = 0; k < K; k++) total = op(total, chunk_total(op, a, sp, k, r.v[k], r.fl[k]));
        if (lane == 0) sh.warp_total[warp] = total;
        __syncthreads();
        AccT prefix, carry_out;
        tile_prefix(a, sp, sh, with_carry, carry_in, prefix, carry_out);
        AccT carry = prefix;
        for (int w = 0; w < warp; w++) carry = op(carry, sh.warp_total[w]);
#pragma unroll
        for (int k = 0; k < K; k++) scan_chunk(op, a, sp, k, r.v[k], r.fl[k], carry);
        return carry_out;
    }

    // Warp tiles (flagged scans): the warp scans its tile chunk by chunk from `carry` and returns the
    // carry after it; each chunk's elements are lifted once, for the lane's fold and its outputs.
    __device__ __forceinline__ static AccT scan_warp_tile(const RowsArgs &a, int64_t unit, const Regs &r, AccT carry)
    {
        static_assert(WARP_TILES && FLAGGED, "a warp's own tile of a flagged scan");
        const Op op(a.op);
        const RowSpan sp = span(a, unit);
        if constexpr (kIsLse<Op>)
            if (lse_warp_tile(a, sp, r, carry)) return carry;
#pragma unroll
        for (int k = 0; k < K; k++) {
            AccT e[VEC];
            lift_chunk(op, a, sp, k, r.v[k], r.fl[k], e);
            AccT t = e[0];
#pragma unroll
            for (int j = 1; j < VEC; j++) t = op(t, e[j]);
            AccT chunk_total;
            const AccT ex = warp_exclusive(op, t, chunk_total);
            store_lifted(a, sp, k, op(carry, ex), e, r.fl[k], starts_line(a, sp, k));
            carry = op(carry, chunk_total);
        }
        return carry;
    }

    // Scans tile `unit` and stores it. With `with_carry` (a block walking a whole line) the tile
    // starts from `carry_in` and the new carry is returned; otherwise it starts a line (from its
    // initial value, when given).
    // Flagged scans fold a segmented tile as one stream: its line starts are segment starts.
    __device__ __forceinline__ static AccT scan_and_store(const RowsArgs &a, int64_t unit, const Regs &r, Shared &sh,
                                                          bool with_carry = false, AccT carry_in = Op().identity())
    {
        if constexpr (kLse && !SEG) return lse_scan_and_store(a, unit, r, sh, with_carry, carry_in);
        const Op op(a.op);
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const RowSpan sp = span(a, unit);

        // lane prefixes within the warp, warp totals
        AccT lane_prefix[K];
        int head[K];
        if constexpr (!SEG || FLAGGED) {
            AccT carry = op.identity();
#pragma unroll
            for (int k = 0; k < K; k++) {
                AccT total;
                const AccT ex = warp_exclusive(op, lane_total(op, a, sp, k, r.v[k], r.fl[k]), total);
                lane_prefix[k] = op(carry, ex);
                carry = op(carry, total);
                head[k] = 0;
            }
            if (lane == 0) sh.warp_total[warp] = carry;
        } else {
            SegPair<AccT> carry{ 0, op.identity() };
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int e0 = warp * Tile::WARP_SPAN + k * 32 * VEC + lane * VEC;
                head[k] = e0 < sp.count && (e0 % a.len) == 0;
                SegPair<AccT> total;
                SegPair<AccT> incl = warp_seg_scan(op, SegPair<AccT>{ head[k], lane_total(r.v[k]) }, &total);
                SegPair<AccT> ex{ __shfl_up_sync(0xffffffffu, incl.f, 1), __shfl_up_sync(0xffffffffu, incl.v, 1) };
                if (lane == 0) ex = SegPair<AccT>{ 0, op.identity() };
                SegPair<AccT> before = seg_combine(op, carry, ex);
                lane_prefix[k] = before.v;
                head[k] |= before.f << 1;        // bit 1: a line start lies before this lane in the warp
                carry = seg_combine(op, carry, total);
            }
            if (lane == 0) {
                sh.warp_total[warp] = carry.v;
                sh.warp_flag[warp] = carry.f;
            }
        }
        __syncthreads();

        // the warps before this one, and the carry from the tiles before this one
        AccT warp_prefix = op.identity();
        int warp_prefix_flag = 0;
        for (int w = 0; w < warp; w++) {
            if constexpr (SEG && !FLAGGED) {
                SegPair<AccT> s = seg_combine(op, SegPair<AccT>{ warp_prefix_flag, warp_prefix },
                                              SegPair<AccT>{ sh.warp_flag[w], sh.warp_total[w] });
                warp_prefix = s.v;
                warp_prefix_flag = s.f;
            } else {
                warp_prefix = op(warp_prefix, sh.warp_total[w]);
            }
        }
        AccT prefix = op.identity();
        AccT carry_out = op.identity();
        if constexpr (!SEG) tile_prefix(a, sp, sh, with_carry, carry_in, prefix, carry_out);

#pragma unroll
        for (int k = 0; k < K; k++) {
            AccT b;
            bool start;
            if constexpr (SEG && !FLAGGED) {
                // a line starting in this lane starts from the identity; otherwise it continues from
                // the nearest line start before it (in this warp, or in an earlier one)
                AccT within = lane_prefix[k];
                if (!(head[k] & 2)) within = op(warp_prefix, within);
                start = head[k] & 1;
                b = start ? op.identity() : op(op.identity(), within);
            } else {
                b = op(prefix, op(warp_prefix, lane_prefix[k]));
                start = starts_line(a, sp, k);
            }
            store_any(a, sp, k, b, r.v[k], r.fl[k], start);
        }
        return carry_out;
    }
};

// One tile per block, each tile whole lines (segmented) or the whole of one line (single).
template <class S, int VEC, bool SEG>
__global__ void __launch_bounds__(S::P::kRowWarps * kWarp, S::FLAGGED ? S::P::kRowTileBlocksPerSmFlagged : S::P::kRowBlocksPerSm)
scan_rows_kernel(const RowsArgs a)
{
    if constexpr (policy_active<typename S::P>()) {
        using T = RowTileScan<S, VEC, SEG, kOneTileBytes<S>, false, true>;
        __shared__ typename T::Shared sh;
        typename T::Regs r;
        T::load(a, blockIdx.x, r);
        T::scan_and_store(a, blockIdx.x, r, sh);
    }
}

// Few long lines: a line-piece tile per block, the pieces of a line joined by look-back. Blocks take
// tile ids in order from a counter, so every predecessor of a tile is running or done. The block
// holds the first half of its tile in registers and reads the second half twice: once to reduce it
// (loads kept in L1), and again, after the look-back, to scan it from cache.
template <class S, int VEC>
__global__ void __launch_bounds__(S::P::kRowWarps * kWarp, 2)
scan_line_pieces_kernel(const RowsArgs a, const LineStatus<typename S::AccT> st, const WorkQueue q)
{
    if constexpr (policy_active<typename S::P>()) {
        using T = RowTileScan<S, VEC, false, kPieceBytes<S>>;
        using AccT = typename S::AccT;
        using InT = typename S::InT;
        using Op = typename S::Op;
        // chunks a warp has; those held in registers (fewer when the fold's type is wider)
        constexpr int K = T::K;
        constexpr int KEEP = K / (S::FLAGGED ? S::P::kPieceKeepDivisorFlagged
                                  : kWidens<S> ? S::P::kPieceKeepDivisorWideAcc : S::P::kPieceKeepDivisor);
        constexpr int WARPS = T::WARPS;
        const Op op(a.op);
        __shared__ typename T::Shared sh;
        __shared__ int64_t slot[2];
        int parity = 0;
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const int64_t unit = q.take(slot, parity);
        q.finish();  // one unit per block: it takes no more
        const RowSpan sp = T::span(a, unit);

        // read 1: the held half (streamed past L1) and the other half (kept in L1 for read 2), all
        // loads of a half in flight at once; the warp's total in a fixed order: lane folds, then CUB's
        // shuffle tree
        InT keep[KEEP][VEC];
        unsigned keep_fl[KEEP];
#pragma unroll
        for (int k = 0; k < KEEP; k++) T::template load_any<kLast>(a, sp, k, keep[k], keep_fl[k]);
        AccT total = op.identity();
        if constexpr (S::FLAGGED) {
            // these ops need not commute (a later tie wins, a reset cuts), and a lane's chunks are not
            // next to each other: fold chunk by chunk, each chunk's lanes in order
            auto fold_chunk = [&](int k, const InT (&v)[VEC], unsigned fl) {
                total = op(total, T::chunk_total(op, a, sp, k, v, fl));
            };
#pragma unroll
            for (int k = 0; k < KEEP; k++) fold_chunk(k, keep[k], keep_fl[k]);
            T::template each_chunk<KEEP, K, K - KEEP, kL1>(a, sp, fold_chunk);
        } else {
            T::template each_chunk<KEEP, K, K - KEEP, kL1>(a, sp, [&](int k, const InT (&v)[VEC], unsigned fl) {
#pragma unroll
                for (int j = 0; j < VEC; j++) total = op(total, T::elem(op, a, sp, k, v, fl, j));
            });
            AccT held = op.identity();
#pragma unroll
            for (int k = 0; k < KEEP; k++)
#pragma unroll
                for (int j = 0; j < VEC; j++) held = op(held, T::elem(op, a, sp, k, keep[k], keep_fl[k], j));
            total = op(held, total);
            typename cub::WarpReduce<AccT>::TempStorage unused;
            total = cub::WarpReduce<AccT>(unused).Reduce(total, op);
        }
        if (lane == 0) sh.warp_total[warp] = total;
        __syncthreads();

        // warp 0 posts the tile's total and looks back for its prefix
        if (warp == 0) {
            AccT tile_total = sh.warp_total[0];
            for (int w = 1; w < WARPS; w++) tile_total = op(tile_total, sh.warp_total[w]);
            AccT p = op.identity();
            if (sp.piece == 0) {
                // the line's first tile folds its initial value in as its exclusive prefix
                if (a.initial) p = line_start_state<S>(a, sp.line);
                if (lane == 0) st.post(unit, kInclusive, a.initial ? op(p, tile_total) : tile_total);
            } else {
                if (lane == 0) st.post(unit, kAggregate, tile_total);
                p = lookback_line(op, st, unit, unit - sp.piece, sh.window);
                if (lane == 0) st.post(unit, kInclusive, op(p, tile_total));
            }
            if (lane == 0) sh.prefix = p;
        }
        __syncthreads();

        // read 2: scan chunk by chunk with a running warp carry, from the tile's prefix and the
        // totals of the warps before this one
        AccT carry = sh.prefix;
        for (int w = 0; w < warp; w++) carry = op(carry, sh.warp_total[w]);
        auto scan_chunk = [&](int k, const InT (&v)[VEC], unsigned fl) { T::template scan_chunk<true>(op, a, sp, k, v, fl, carry); };
#pragma unroll
        for (int k = 0; k < KEEP; k++) scan_chunk(k, keep[k], keep_fl[k]);
        // up to 4 re-reads in flight at a time
        constexpr int B = (K - KEEP) % 4 == 0 ? 4 : ((K - KEEP) % 2 == 0 ? 2 : 1);
        T::template each_chunk<KEEP, K, B, kLast>(a, sp, scan_chunk);
    }
}

// A block per line, walking its tiles in order with the carry in registers; it loads the next tile
// before scanning the current one, so its loads stay in flight. No block waits on another. The carry
// chain is the look-back chain's (P_t = P_{t-1} op A_t) over tiles of this size.
template <class S, int VEC>
__device__ __forceinline__ void scan_whole_lines(const RowsArgs &a)
{
    using T = RowTileScan<S, VEC, false, kLineTileBytes<S>, false, sizeof(typename S::InT) == 2>;
    using AccT = typename S::AccT;
    __shared__ typename T::Shared sh;
    const int64_t first = (int64_t)blockIdx.x * a.tiles_per_line;
    const int64_t end = first + a.tiles_per_line;
    typename T::Regs ra, rb;
    AccT carry = line_start_state<S>(a, blockIdx.x);
    T::load(a, first, ra);
    for (int64_t u = first; u < end; u += 2) {
        if (u + 1 < end) T::load(a, u + 1, rb);
        carry = T::scan_and_store(a, u, ra, sh, true, carry);
        __syncthreads();   // shared totals are reused by the next tile
        if (u + 1 >= end) break;
        if (u + 2 < end) T::load(a, u + 2, ra);
        carry = T::scan_and_store(a, u + 1, rb, sh, true, carry);
        __syncthreads();
    }
}

template <class S, int VEC>
__global__ void __launch_bounds__(S::P::kRowWarps * kWarp)
scan_lines_kernel(const RowsArgs a)
{
    if constexpr (policy_active<typename S::P>()) scan_whole_lines<S, VEC>(a);
}

// The same for byte inputs (bool) into 8-byte outputs, built for more blocks an SM: their tiles bring
// few input bytes (the vector width is the output's), so more blocks in flight keep the loads coming.
// A kernel of its own: a bound on the kernel above, even of one block, changes its code for every
// other pair (and costs bool into 4-byte outputs more registers than it gains).
template <class S>
constexpr bool kByteInputLines = sizeof(typename S::InT) == 1 && sizeof(typename S::OutT) == 8 && !S::FLAGGED;

template <class S, int VEC>
__global__ void __launch_bounds__(S::P::kRowWarps * kWarp, S::P::kLineBlocksPerSmByteInput)
scan_lines_byte_input_kernel(const RowsArgs a)
{
    if constexpr (policy_active<typename S::P>()) scan_whole_lines<S, VEC>(a);
}

// The same for flagged scans, whose larger states get a bound of their own (blocks an SM).
template <class S, int VEC>
__global__ void __launch_bounds__(S::P::kRowWarps * kWarp,
                                  S::INDEXED ? S::P::kRowBlocksPerSmIndexed : S::P::kRowBlocksPerSmFlagged)
scan_lines_flagged_kernel(const RowsArgs a)
{
    if constexpr (policy_active<typename S::P>()) scan_whole_lines<S, VEC>(a);
}

// Many long lines, flagged scans: a warp per line, walking its tiles with the carry in registers and
// loading the next tile while it scans the current one. No barriers and no shared memory, so a
// warp never waits for the others of its block; the order of the combines is the line pieces'.
template <class S, int VEC>
__global__ void __launch_bounds__(S::P::kRowWarps * kWarp, kWarpLinesBlocks<S>)
scan_warp_lines_kernel(const RowsArgs a)
{
    if constexpr (policy_active<typename S::P>()) {
        using T = RowTileScan<S, VEC, false, kWarpLineBytes<S>, true>;
        const int64_t line = (int64_t)blockIdx.x * S::P::kRowWarps + (threadIdx.x >> 5);
        if (line >= a.nlines) return;
        const int64_t first = line * a.tiles_per_line, end = first + a.tiles_per_line;
        typename T::Regs ra, rb;
        typename S::AccT carry = line_start_state<S>(a, line);
        T::load(a, first, ra);
        for (int64_t u = first; u < end; u += 2) {
            if (u + 1 < end) T::load(a, u + 1, rb);
            carry = T::scan_warp_tile(a, u, ra, carry);
            if (u + 1 >= end) break;
            if (u + 2 < end) T::load(a, u + 2, ra);
            carry = T::scan_warp_tile(a, u + 1, rb, carry);
        }
    }
}

}  // namespace cuscan
