// scan_columns.cuh - the column family: the scanned dim has a large stride and another dim
// (`inner`) holds neighbouring lines, so lane l of a warp takes line (column) l and a warp's load of
// one row is one contiguous segment.
//
// A block of 8 warps scans a unit of R rows x W columns: WC warps side by side cover W = 32*WC*CV
// columns, WR = 8/WC warps one above the other cover R = WR * rows_per_warp rows. Each thread
// loads its rows_per_warp elements first (all loads in flight), folds them, the warps of a column
// meet in shared memory, and the units of one column strip are joined by the look-back
// (lookback.cuh). Units are numbered column-block fastest, so the unit above a unit was started long
// before and its prefix is usually waiting: the look-back is one read. When there are too few strips
// for that (the unit above is still running) but enough to fill the device, a block walks a whole
// strip instead. Flagged scans (scan_ops.cuh) hold the kept and reset bits of a thread's elements
// in two words beside its rows.
#pragma once
#include "lookback.cuh"

namespace cuscan {

// Rows a thread holds: fewer when a lane's columns accumulate in a wider type (registers), as many
// input bytes as two 4-byte columns' rows for narrower inputs (halves, bool: the bytes in flight),
// and for the flagged scans' larger states.
template <class S, int CV>
constexpr int col_max_rows()
{
    if constexpr (S::FLAGGED) return S::P::kColMaxRowsFlagged;
    constexpr int in_size = sizeof(typename S::InT);
    if constexpr (CV > 1 && sizeof(typename S::AccT) > in_size) {
        constexpr int rows = S::P::kColMaxRowsWideAcc * 4 / (in_size < 4 ? in_size : 4);
        return rows < S::P::kColMaxRows ? rows : S::P::kColMaxRows;
    }
    return S::P::kColMaxRows;
}

struct ColumnsArgs {
    const void *x;
    const unsigned char *mask;
    void *out;
    int64_t len;                 // rows (the scanned dim)
    int64_t sx, sm, so;          // row strides
    int64_t inner;               // columns
    int64_t ix, im, io;          // column strides (1 when coalesced)
    int64_t nouter;
    ScanLineOffsets outer;
    int warps_across;            // WC
    int rows_per_warp;           // <= kColMaxRows
    int64_t col_blocks;          // ceil(inner / (32*WC*CV))
    int64_t chunks;              // ceil(len / R)
    int exclusive;
    int use_lookback;            // units of a strip joined by look-back
    int walk;                    // or a block walks a whole strip, the carry in registers
    // flagged scans
    const unsigned char *reset;
    int64_t *indices;
    int64_t sr, ir;              // reset: row and column strides
    int64_t sI, iI;              // indices: row and column strides
    OpArgs op;
    const void *initial;         // NULL, or each column's initial value
    cs_dtype initial_dtype;
    int64_t iinit;               // its column stride
};

// CV: neighbouring columns per lane (2 for 4-byte inputs when aligned), so a warp's row is 256
// bytes rather than 128.
template <class S, int CV>
struct ColumnUnitScan {
    using InT = typename S::InT;
    using AccT = typename S::AccT;
    using OutT = typename S::OutT;
    using Op = typename S::Op;
    static constexpr int WARPS = S::P::kColWarps;
    static constexpr int MAX_ROWS = col_max_rows<S, CV>();
    static constexpr int THREADS = WARPS * kWarp;
    static constexpr bool FLAGGED = S::FLAGGED;
    static_assert(!FLAGGED || MAX_ROWS * CV <= 64, "a thread's flags fit a 64-bit word");

    struct Regs {
        Vec<InT, CV> v[MAX_ROWS];   // rows of this thread's columns, masked-out ones zero
        unsigned long long keep, reset;   // flagged scans: bit i * CV + j for row i, column j
    };

    static constexpr int MASK_ROW_VECS = 2 * CV;   // 16-byte vectors of a warp's mask row (32 * CV bytes)

    // Column totals of each warp row, packed as [warp row * unit width + column] (warps_down * width
    // is THREADS * CV).
    struct Shared {
        // the totals are free while a unit loads: the warps' mask rows are staged there (load ends
        // with a block barrier before any warp writes its totals)
        union {
            AccT total[THREADS * CV];
            uint4 mask_rows[FLAGGED ? 1 : WARPS][FLAGGED ? 1 : MAX_ROWS * MASK_ROW_VECS];
        };
        AccT prefix[THREADS * CV];   // column words: the prefixes the top warps found, for the rest
        int distance;
    };
    __device__ __forceinline__ static AccT &total_at(Shared &sh, int w, int c, int width)
    {
        return sh.total[w * width + c];
    }

    // Where this thread's part of a unit lies.
    struct Place {
        int64_t chunk, first, xoff, moff, ooff;
        int nrows, c, wr;   // c: first column of this thread within the unit
        int64_t roff, ioff; // flagged scans: reset and indices
        int64_t col, init;  // the thread's first column in the strip, and its initial value's offset
    };

    __device__ __forceinline__ static int unit_width(const ColumnsArgs &a) { return 32 * a.warps_across * CV; }

    // f(i) for this thread's rows i in order: a whole unit's rows without a test a row (a test
    // and a select a row cost about as much as the fold itself), others up to the last one. Of
    // the flagged scans only cummax and cummin do so (the policy's choice; the others measured
    // slower), the rest keep a test a row (STOP: a branch out of the loop at the last row rather
    // than a select a row).
    static constexpr bool kWholeUnits = !FLAGGED || (S::INDEXED && S::P::kColWholeUnitsIndexed);
    // narrow inputs ask L2 for a unit's rows a unit ahead (prefetch), in the whole-unit form
    static constexpr bool kPrefetch = kWholeUnits && sizeof(InT) <= S::P::kColPrefetchMaxBytes;
    template <bool STOP, typename F>
    __device__ __forceinline__ static void each_row(const Place &pl, F &&f)
    {
        if (kWholeUnits && pl.nrows == MAX_ROWS) {
#pragma unroll
            for (int i = 0; i < MAX_ROWS; i++) f(i);
        } else if (STOP || kWholeUnits) {
#pragma unroll
            for (int i = 0; i < MAX_ROWS; i++) {
                if (i >= pl.nrows) break;
                f(i);
            }
        } else {
#pragma unroll
            for (int i = 0; i < MAX_ROWS; i++)
                if (i < pl.nrows) f(i);
        }
    }

    __device__ __forceinline__ static Place place(const ColumnsArgs &a, int64_t unit)
    {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const int wc = warp % a.warps_across;
        const int warps_down = WARPS / a.warps_across;
        const int64_t cb = unit % a.col_blocks;
        const int64_t rest = unit / a.col_blocks;
        Place pl;
        pl.chunk = rest / a.nouter;
        int64_t ox, om, oo, orst = 0, oidx = 0;
        a.outer.at(rest - pl.chunk * a.nouter, ox, om, oo);
        if constexpr (FLAGGED) a.outer.at_flags(rest - pl.chunk * a.nouter, orst, oidx);
        pl.wr = warp / a.warps_across;
        pl.c = (wc * 32 + lane) * CV;
        const int64_t col = cb * unit_width(a) + pl.c;
        pl.col = col;
        pl.init = a.initial ? a.outer.at_initial(rest - pl.chunk * a.nouter) + col * a.iinit : 0;
        const int64_t row0 = pl.chunk * (int64_t)warps_down * a.rows_per_warp + (int64_t)pl.wr * a.rows_per_warp;
        pl.nrows = col < a.inner ? (int)min((int64_t)a.rows_per_warp, max(a.len - row0, (int64_t)0)) : 0;
        pl.first = S::REVERSE ? a.len - 1 - row0 : row0;
        pl.xoff = ox + col * a.ix + pl.first * a.sx;
        pl.moff = om + col * a.im + pl.first * a.sm;
        pl.ooff = oo + col * a.io + pl.first * a.so;
        if constexpr (FLAGGED) {
            pl.roff = orst + col * a.ir + pl.first * a.sr;
            pl.ioff = oidx + col * a.iI + pl.first * a.sI;
        }
        return pl;
    }

    // One moving pointer per operand, so the loads need no address registers. Unmasked, each row
    // is loaded under its own guard. Masked, the mask's rows of a warp's columns are read one row a
    // lane in 16-byte vectors and turned into a bit a row through shared memory where their layout
    // allows (mask_bits), then x is loaded as unmasked: a byte load a row would hold a register a
    // row while in flight, and those registers are x's rows in flight. Elsewhere every row is loaded
    // unconditionally (rows past the end read the line's first element again) and a select puts
    // zero where the mask is false and the identity where a row does not exist (so a NaN under a
    // false mask never reaches the sums): guarded byte loads of the mask serialise behind branches
    // (bench/NOTES.md, v4 and v5).
    __device__ __forceinline__ static void load(const ColumnsArgs &a, int64_t unit, Regs &r, Shared &sh)
    {
        const Place pl = place(a, unit);
        if constexpr (FLAGGED) load_flags(a, pl, r);
        if constexpr (!S::MASKED) {
            load_rows(a, pl, r);
        } else if (!FLAGGED && mask_rows_in_vectors(a, pl)) {
            load_rows(a, pl, r);   // (first: the stage's warp barrier would hold x's loads back)
            unsigned bits[CV];
            mask_bits(a, pl, bits, sh);
#pragma unroll
            for (int i = 0; i < MAX_ROWS; i++)
#pragma unroll
                for (int j = 0; j < CV; j++)
                    if (i < pl.nrows && !((bits[j] >> i) & 1u)) r.v[i].v[j] = S::in_zero();
        } else if (a.rows_per_warp <= MAX_ROWS / 2) {
            load_masked<MAX_ROWS / 2>(a, pl, r);   // short columns: no loads wasted
        } else {
            load_masked<MAX_ROWS>(a, pl, r);
        }
        if constexpr (S::MASKED && !FLAGGED) __syncthreads();   // every stage read before the totals reuse it
    }

    // Asks L2 for x's rows of a unit that some block loads next (lane l of a warp: the warp's row
    // l), so that its loads find them there: a block holds one unit, and while it scans and stores
    // no loads of its own are in flight.
    __device__ __forceinline__ static void prefetch(const ColumnsArgs &a, int64_t unit)
    {
        const Place pl = place(a, unit);
        const int lane = threadIdx.x & 31;
        if (lane >= pl.nrows || pl.col - lane * CV >= a.inner) return;
        constexpr int kRowBytes = 32 * CV * (int)sizeof(InT);
        const char *row = reinterpret_cast<const char *>(static_cast<const InT *>(a.x) + (pl.xoff - lane * CV * a.ix) +
                                                         (S::REVERSE ? -a.sx : a.sx) * lane);
#pragma unroll
        for (int k = 0; k < (kRowBytes + 127) / 128; k++) prefetch_l2(row + 128 * k);
    }

    // x's rows, each under its own guard; rows that do not exist are the identity.
    __device__ __forceinline__ static void load_rows(const ColumnsArgs &a, const Place &pl, Regs &r)
    {
        const int64_t step_x = S::REVERSE ? -a.sx : a.sx;
        const InT *px = static_cast<const InT *>(a.x) + pl.xoff;
        if (kWholeUnits && pl.nrows == MAX_ROWS) {
#pragma unroll
            for (int i = 0; i < MAX_ROWS; i++) {
                r.v[i] = load_vec<InT, CV>(px);
                px += step_x;
            }
            return;
        }
#pragma unroll
        for (int i = 0; i < MAX_ROWS; i++) {
            if (i < pl.nrows) {
                r.v[i] = load_vec<InT, CV>(px);
            } else {
#pragma unroll
                for (int j = 0; j < CV; j++) r.v[i].v[j] = S::in_identity();
            }
            px += step_x;
        }
    }

    // Whether the warp's mask rows can be read in 16-byte vectors: its columns are contiguous in the
    // mask and all inside the strip, and every row starts 16-byte aligned. The same for every lane of
    // a warp (its first column, its rows and the mask's strides are), as its shared stage needs.
    __device__ __forceinline__ static bool mask_rows_in_vectors(const ColumnsArgs &a, const Place &pl)
    {
        const int lane = threadIdx.x & 31;
        const unsigned char *row = a.mask + (pl.moff - lane * CV);
        return a.im == 1 && a.sm % 16 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0 &&
               pl.col - lane * CV + 32 * CV <= a.inner;
    }

    // bits[j]: bit i set where the mask of this thread's row i, column j is true. Lane i reads row i
    // of the warp's 32 * CV mask bytes into the warp's stage; each lane then reads its CV bytes of
    // every row there (a row's lanes read one 32 * CV-byte run: no bank conflicts).
    __device__ __forceinline__ static void mask_bits(const ColumnsArgs &a, const Place &pl, unsigned (&bits)[CV],
                                                     Shared &sh)
    {
        static_assert(MAX_ROWS <= 32, "a lane reads one row");
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const int64_t step_m = S::REVERSE ? -a.sm : a.sm;
        uint4 *stage = sh.mask_rows[warp];
        if (lane < pl.nrows) {
            const uint4 *row = reinterpret_cast<const uint4 *>(a.mask + (pl.moff - lane * CV) + lane * step_m);
#pragma unroll
            for (int k = 0; k < MASK_ROW_VECS; k++) stage[lane * MASK_ROW_VECS + k] = row[k];
        }
        __syncwarp();
        const unsigned char *bytes = reinterpret_cast<const unsigned char *>(stage) + lane * CV;
#pragma unroll
        for (int j = 0; j < CV; j++) bits[j] = 0;
#pragma unroll
        for (int i = 0; i < MAX_ROWS; i++) {
            if (i < pl.nrows) {
                const Vec<unsigned char, CV> m = load_vec<unsigned char, CV>(bytes + i * 16 * MASK_ROW_VECS);
#pragma unroll
                for (int j = 0; j < CV; j++) bits[j] |= (m.v[j] != 0 ? 1u : 0u) << i;
            }
        }
    }

    // Masked rows 0..N-1 (N >= rows_per_warp), each loaded unconditionally (see load); the rows
    // from N on are the identity without a load.
    template <int N>
    __device__ __forceinline__ static void load_masked(const ColumnsArgs &a, const Place &pl, Regs &r)
    {
        const int64_t step_x = S::REVERSE ? -a.sx : a.sx, step_m = S::REVERSE ? -a.sm : a.sm;
        const InT *x0 = pl.nrows > 0 ? static_cast<const InT *>(a.x) + pl.xoff : static_cast<const InT *>(a.x);
        const unsigned char *m0 = pl.nrows > 0 ? a.mask + pl.moff : a.mask;
        const InT *px = x0;
        const unsigned char *pm = m0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const bool ok = i < pl.nrows;
            const Vec<InT, CV> xv = load_vec<InT, CV>(ok ? px : x0);
            const Vec<unsigned char, CV> mv = load_vec<unsigned char, CV>(ok ? pm : m0);
#pragma unroll
            for (int j = 0; j < CV; j++) r.v[i].v[j] = !ok ? S::in_identity() : (mv.v[j] != 0 ? xv.v[j] : S::in_zero());
            px += step_x;
            pm += step_m;
        }
#pragma unroll
        for (int i = N; i < MAX_ROWS; i++)
#pragma unroll
            for (int j = 0; j < CV; j++) r.v[i].v[j] = S::in_identity();
    }

    // Flagged scans: the kept bits (every present row, less the masked-out elements) and the reset
    // bits, each row's bytes loaded under its own guard.
    __device__ __forceinline__ static void load_flags(const ColumnsArgs &a, const Place &pl, Regs &r)
    {
        const int present = pl.nrows * CV;
        r.keep = present >= 64 ? ~0ull : (1ull << present) - 1;
        if (a.mask) r.keep &= byte_bits(a.mask + pl.moff, S::REVERSE ? -a.sm : a.sm, pl.nrows);
        r.reset = a.reset ? byte_bits(a.reset + pl.roff, S::REVERSE ? -a.sr : a.sr, pl.nrows) : 0;
    }

    // Bit i * CV + j: the byte of row i, column j is nonzero (rows `step` apart from p, nrows of them).
    __device__ __forceinline__ static unsigned long long byte_bits(const unsigned char *p, int64_t step, int nrows)
    {
        unsigned long long bits = 0;
#pragma unroll
        for (int i = 0; i < MAX_ROWS; i++) {
            if (i < nrows) {
                const Vec<unsigned char, CV> bv = load_vec<unsigned char, CV>(p);
#pragma unroll
                for (int j = 0; j < CV; j++)
                    if (bv.v[j]) bits |= 1ull << (i * CV + j);
            }
            p += step;
        }
        return bits;
    }

    // Element (row i, column j) of this thread as a state.
    __device__ __forceinline__ static AccT elem(const Op &op, const Place &pl, const Regs &r, int i, int j)
    {
        if constexpr (FLAGGED) {
            const int bit = i * CV + j;
            const int64_t index = S::REVERSE ? pl.first - i + 1 : pl.first + i + 1;
            return op.lift(r.v[i].v[j], (r.keep >> bit) & 1, (r.reset >> bit) & 1, S::INDEXED ? index : 0);
        } else {
            return to_acc<AccT>(r.v[i].v[j]);
        }
    }

    // The states this thread's columns start from: their initial values (columns past the strip's
    // end get the identity), or the identity.
    __device__ __forceinline__ static void start_states(const ColumnsArgs &a, const Op &op, const Place &pl,
                                                        AccT (&s)[CV])
    {
#pragma unroll
        for (int j = 0; j < CV; j++)
            s[j] = a.initial && pl.col + j < a.inner ? S::initial(a.initial, pl.init + j * a.iinit, a.initial_dtype)
                                                     : op.identity();
    }

    // The unit above has usually finished long before: read its prefix while this unit's loads are
    // still in flight, so the look-back costs no extra round trip. With packed column words (states
    // that fit one) each column reads its own word; otherwise a flag, then the prefixes.
    static constexpr bool kColumnWords = Wire<AccT>::kFits;
    struct Above {
        bool ready[CV];
        AccT prefix[CV];
    };

    __device__ __forceinline__ static Above peek_above(const ColumnsArgs &a, const VectorStatus<AccT> &st,
                                                       const ColumnStatus<AccT> &cst, int64_t unit)
    {
        Above ab;
#pragma unroll
        for (int j = 0; j < CV; j++) ab.ready[j] = false;
        const int64_t above = a.col_blocks * a.nouter;
        if (a.use_lookback && unit >= above) {
            const int c = ((threadIdx.x >> 5) % a.warps_across * 32 + (threadIdx.x & 31)) * CV;
            if constexpr (kColumnWords) {
#pragma unroll
                for (int j = 0; j < CV; j++) ab.ready[j] = cst.peek(unit - above, c + j, ab.prefix[j]);
            } else if (st.get_flag(unit - above) == kInclusive) {
#pragma unroll
                for (int j = 0; j < CV; j++) {
                    ab.ready[j] = true;
                    ab.prefix[j] = load_cg(st.slot(st.inclusive, unit - above, c + j));
                }
            }
        }
        return ab;
    }

    // WALK: a walking block's unit, which starts from `carry` (its strip's running prefix, advanced
    // here) instead of looking back.
    template <bool WALK>
    __device__ __forceinline__ static void scan_and_store(const ColumnsArgs &a, const VectorStatus<AccT> &st,
                                                          const ColumnStatus<AccT> &cst, int64_t unit, const Regs &r,
                                                          Shared &sh, const Above &ab, AccT (&carry)[CV])
    {
        const Op op(a.op);
        const Place pl = place(a, unit);
        const int warps_down = WARPS / a.warps_across;
        const int width = unit_width(a);

        // a unit alone in its strip and one warp row high joins no totals: it folds none
        const bool totals = WALK || a.use_lookback || warps_down > 1;
        AccT total[CV];
#pragma unroll
        for (int j = 0; j < CV; j++) total[j] = op.identity();
        LseColumns lse;
        if (lse_columns(a, pl, r, lse)) {
            if (totals) lse_totals(pl, r, lse, total);
        } else if (totals) {
            each_row<false>(pl, [&](int i) {
#pragma unroll
                for (int j = 0; j < CV; j++) total[j] = op(total[j], elem(op, pl, r, i, j));
            });
        }
#pragma unroll
        for (int j = 0; j < CV; j++) total_at(sh, pl.wr, pl.c + j, width) = total[j];
        bool above_ready = true;
#pragma unroll
        for (int j = 0; j < CV; j++) above_ready &= ab.ready[j];
        above_ready = __syncthreads_and(above_ready);

        AccT warp_prefix[CV], unit_total[CV], prefix[CV];
#pragma unroll
        for (int j = 0; j < CV; j++) {
            warp_prefix[j] = unit_total[j] = prefix[j] = op.identity();
            for (int w = 0; w < warps_down; w++) {
                if (w == pl.wr) warp_prefix[j] = unit_total[j];
                unit_total[j] = op(unit_total[j], total_at(sh, w, pl.c + j, width));
            }
        }

        if constexpr (WALK) {
#pragma unroll
            for (int j = 0; j < CV; j++) {
                prefix[j] = carry[j];
                carry[j] = op(carry[j], unit_total[j]);
            }
        } else {
            // a strip's first unit starts from the initial values (as the look-back's first prefix)
            if (a.initial && pl.chunk == 0) start_states(a, op, pl, prefix);
        }
        if (!WALK && a.use_lookback) {
            const int64_t step = a.col_blocks * a.nouter;   // from a unit to the one below it
            if constexpr (kColumnWords) {
                // each column on its own, no flag or fence (lookback.cuh); when a column's prefix was
                // not posted early, the top warp row alone looks back and hands it to the rows below
                const bool owner = pl.wr == 0;
                if (pl.chunk > 0 && above_ready) {
#pragma unroll
                    for (int j = 0; j < CV; j++) prefix[j] = ab.prefix[j];
                } else if (pl.chunk > 0) {
                    if (owner)
#pragma unroll
                        for (int j = 0; j < CV; j++)
                            sh.prefix[pl.c + j] = ab.ready[j] ? ab.prefix[j]
                                                              : column_lookback(op, cst, unit, step, pl.c + j, true,
                                                                                unit_total[j]);
                    __syncthreads();
#pragma unroll
                    for (int j = 0; j < CV; j++) prefix[j] = sh.prefix[pl.c + j];
                }
                if (owner)
#pragma unroll
                    for (int j = 0; j < CV; j++) cst.inclusive.post(cst.at(unit, pl.c + j), kInclusive, op(prefix[j], unit_total[j]));
            } else if (above_ready && pl.chunk > 0) {
                // the unit above had its prefix posted: post this unit's at once
#pragma unroll
                for (int j = 0; j < CV; j++) prefix[j] = ab.prefix[j];
                if (pl.wr == 0)
#pragma unroll
                    for (int j = 0; j < CV; j++) *st.slot(st.inclusive, unit, pl.c + j) = op(prefix[j], unit_total[j]);
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0) st.set_flag(unit, kInclusive);
            } else {
                int cols[CV];
#pragma unroll
                for (int j = 0; j < CV; j++) cols[j] = pl.c + j;
                strip_lookback<CV>(op, st, unit, step, pl.chunk == 0, pl.wr == 0, cols, CV, unit_total, prefix,
                                   &sh.distance);
            }
        }

        AccT b[CV];
#pragma unroll
        for (int j = 0; j < CV; j++) b[j] = op(prefix[j], warp_prefix[j]);
        // (with initial values the line's first output is its own, not the empty prefix)
        const bool line_start = pl.chunk == 0 && pl.wr == 0 && !a.initial;
        if constexpr (FLAGGED) {
            if (!(lse.plain && lse_store(a, pl, r, lse, b, line_start))) store_flagged(a, op, pl, r, b, line_start);
        } else {
            store_rows(a, pl, [&](int i, int j) {
                const AccT nb = op(b[j], to_acc<AccT>(r.v[i].v[j]));
                const OutT o = to_out<OutT>(a.exclusive ? (i == 0 && line_start ? Op::zero() : b[j]) : nb);
                b[j] = nb;
                return o;
            });
        }
    }

    // This thread's rows of output, in scan order: out(i, j) gives row i, column j.
    template <typename F>
    __device__ __forceinline__ static void store_rows(const ColumnsArgs &a, const Place &pl, F &&out)
    {
        const int64_t step_y = S::REVERSE ? -a.so : a.so;
        OutT *py = static_cast<OutT *>(a.out) + pl.ooff;
        each_row<true>(pl, [&](int i) {
            Vec<OutT, CV> ov;
#pragma unroll
            for (int j = 0; j < CV; j++) ov.v[j] = out(i, j);
            if constexpr (CV > 1) store_vec<OutT, CV>(py, ov);
            else *py = ov.v[0];
            py += step_y;
        });
    }

    // logcumsumexp as plain float64 sums (scan_ops.cuh) where this thread's columns allow: each
    // column's kept extremes, and whether every kept element is finite and below 2^60 with no resets.
    static constexpr bool kLse = kIsLse<Op>;
    struct LseColumns {
        bool plain;
        double hi[CV], lo[CV];
    };

    __device__ __forceinline__ static bool lse_columns(const ColumnsArgs &a, const Place &pl, const Regs &r,
                                                       LseColumns &c)
    {
        c.plain = false;
        if constexpr (kLse) {
            if (a.reset) return false;
            bool ok = true;
#pragma unroll
            for (int j = 0; j < CV; j++) c.hi[j] = minus_inf(), c.lo[j] = -minus_inf();
#pragma unroll
            for (int i = 0; i < MAX_ROWS; i++)
                if (i < pl.nrows)
#pragma unroll
                    for (int j = 0; j < CV; j++)
                        if ((r.keep >> (i * CV + j)) & 1) {
                            const double x = to_acc<double>(r.v[i].v[j]);
                            ok &= fabs(x) < 0x1p60;
                            c.hi[j] = fmax(c.hi[j], x);
                            c.lo[j] = fmin(c.lo[j], x);
                        }
            c.plain = ok;
        }
        return c.plain;
    }

    // The column totals as states: e^hi times the sum of exp(x - hi) (terms far below hi are
    // clamped to e^-700, which no sum holding e^0 = 1 can notice).
    __device__ __forceinline__ static void lse_totals(const Place &pl, const Regs &r, const LseColumns &c,
                                                      AccT (&total)[CV])
    {
        if constexpr (kLse) {
#pragma unroll
            for (int j = 0; j < CV; j++) {
                double sum = 0.0;
#pragma unroll
                for (int i = 0; i < MAX_ROWS; i++)
                    if (i < pl.nrows && ((r.keep >> (i * CV + j)) & 1))
                        sum += lse_exp_rel(fmax(to_acc<double>(r.v[i].v[j]) - c.hi[j], -700.0));
                total[j] = sum > 0.0 ? AccT{ 0, lse_state_at(c.hi[j], sum) } : Op().identity();
            }
        }
    }

    // The outputs from the prefixes b as plain sums from R = the larger of a column's largest kept
    // element and its prefix; false (nothing stored) where some column's span is too wide for that.
    __device__ __forceinline__ static bool lse_store(const ColumnsArgs &a, const Place &pl, const Regs &r,
                                                     const LseColumns &c, const AccT (&b)[CV], bool line_start)
    {
        if constexpr (kLse) {
            double R[CV], P[CV];
            bool ok = true;
#pragma unroll
            for (int j = 0; j < CV; j++) {
                const LsePlainCarry pc = lse_plain_carry(b[j].v);
                R[j] = fmax(c.hi[j], pc.log);
                ok &= !pc.odd && R[j] != minus_inf() && c.lo[j] >= R[j] - kLsePlainSpan &&
                      !(pc.has && pc.log < R[j] - kLsePlainSpan);
            }
            if (!ok) return false;
#pragma unroll
            for (int j = 0; j < CV; j++) P[j] = lse_carry_in_scale(b[j].v, R[j]);
            store_rows(a, pl, [&](int i, int j) {
                const double t = (r.keep >> (i * CV + j)) & 1 ? lse_exp_rel(to_acc<double>(r.v[i].v[j]) - R[j]) : 0.0;
                const double after = P[j] + t;
                const double o = a.exclusive ? (i == 0 && line_start ? 0.0 : P[j]) : after;
                P[j] = after;
                return to_out<OutT>(lse_plain_value(R[j], o));
            });
            return true;
        }
        return false;
    }

    // Flagged scans: the outputs from the prefixes b (and the indices, when asked for); an element
    // that starts a segment (or the line) gets the empty prefix in an exclusive scan.
    __device__ __forceinline__ static void store_flagged(const ColumnsArgs &a, const Op &op, const Place &pl,
                                                         const Regs &r, AccT (&b)[CV], bool line_start)
    {
        const int64_t step_y = S::REVERSE ? -a.so : a.so, step_i = S::REVERSE ? -a.sI : a.sI;
        OutT *py = static_cast<OutT *>(a.out) + pl.ooff;
        int64_t *pi = a.indices + pl.ioff;
#pragma unroll
        for (int i = 0; i < MAX_ROWS; i++) {
            if (i >= pl.nrows) break;
            Vec<OutT, CV> ov;
            Vec<int64_t, CV> iv;
#pragma unroll
            for (int j = 0; j < CV; j++) {
                const AccT nb = op(b[j], elem(op, pl, r, i, j));
                const bool first = ((r.reset >> (i * CV + j)) & 1) || (i == 0 && line_start);
                const AccT o = a.exclusive ? (first ? op.empty() : b[j]) : nb;
                ov.v[j] = S::out(o);
                iv.v[j] = S::index(o);
                b[j] = nb;
            }
            if constexpr (CV > 1) store_vec<OutT, CV>(py, ov);
            else *py = ov.v[0];
            if constexpr (S::INDEXED) {
                if (a.indices) {
                    if constexpr (CV > 1) store_vec<int64_t, CV>(pi, iv);
                    else *pi = iv.v[0];
                }
            }
            py += step_y;
            pi += step_i;
        }
    }
};

// Persistent blocks taking units in order (no block launch per unit; every predecessor of a unit
// has been taken by a running block). Walking, a block takes a whole strip (the units one above the
// other) and scans it top to bottom: no block ever waits on another. The carry is folded in the
// look-back's order, so both give the same bits.
template <class S, int CV>
__global__ void __launch_bounds__(S::P::kColWarps * kWarp, 2)
scan_columns_kernel(const ColumnsArgs a, const VectorStatus<typename S::AccT> st,
                    const ColumnStatus<typename S::AccT> cst, const WorkQueue q)
{
    if constexpr (policy_active<typename S::P>()) {
        using T = ColumnUnitScan<S, CV>;
        using AccT = typename S::AccT;
        const typename S::Op op(a.op);
        __shared__ typename T::Shared sh;
        __shared__ int64_t slot[2];
        int parity = 0;
        typename T::Regs r;
        AccT carry[CV];   // the walking carry (unused by look-back units)
#pragma unroll
        for (int j = 0; j < CV; j++) carry[j] = op.identity();
        if (!S::MASKED && a.walk) {   // masked scans measured no faster walking (bench/NOTES.md, v15)
            const typename T::Above none{};
            const int64_t step = a.col_blocks * a.nouter;   // from a unit to the one below it
            for (int64_t s = q.take(slot, parity); s < q.units; s = q.take(slot, parity)) {
                T::start_states(a, op, T::place(a, s), carry);
                for (int64_t u = s; u < s + a.chunks * step; u += step) {
                    T::load(a, u, r, sh);
                    if (T::kPrefetch && u + step < s + a.chunks * step) T::prefetch(a, u + step);
                    T::template scan_and_store<true>(a, st, cst, u, r, sh, none, carry);
                    __syncthreads();   // sh.total is rewritten by the next unit
                }
            }
            q.finish();
            return;
        }
        // the next unit's id is asked for while this one's rows load (WorkQueue::ask), but by the
        // flagged scans: the id held through the unit slowed their larger states (bench/NOTES.md)
        for (int64_t u = q.take(slot, parity); u < q.units;) {
            const unsigned next = T::FLAGGED ? 0u : q.ask();
            T::load(a, u, r, sh);
            if (T::kPrefetch && u + gridDim.x < q.units) T::prefetch(a, u + gridDim.x);
            const typename T::Above ab = T::peek_above(a, st, cst, u);
            T::template scan_and_store<false>(a, st, cst, u, r, sh, ab, carry);
            u = T::FLAGGED ? q.take(slot, parity) : q.receive(slot, parity, next);
        }
        q.finish();
    }
}

}  // namespace cuscan
