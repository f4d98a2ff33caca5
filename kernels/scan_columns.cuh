// scan_columns.cuh - scans of lines that lie side by side: the scanned dim has a large stride and
// another dim (`inner`) holds neighbouring lines, so lane l of a warp takes line (column) l and a
// warp's load of one row is one contiguous segment.
//
// A block of 8 warps scans a unit of R rows x W columns: WC warps side by side cover W = 32*WC
// columns, WR = 8/WC warps one above the other cover R = WR * rows_per_warp rows. Each thread
// loads its rows_per_warp elements first (all loads in flight), folds them, the warps of a column
// meet in shared memory, and the units of one column strip are joined by look-back. Units are
// numbered column-block fastest, so the unit above a unit was started long before and its prefix is
// usually waiting: the look-back is one read.
#pragma once
#include "scan_common.cuh"

namespace cuscan {

constexpr int kColWarps = 8;
constexpr int kColThreads = kColWarps * kWarp;
constexpr int kColMaxRows = 32;  // rows a thread holds

struct ColumnsArgs {
    const void *x;
    const unsigned char *mask;
    void *out;
    int64_t len;                 // rows (the scanned dim)
    int64_t sx, sm, so;          // row strides
    int64_t inner;               // columns
    int64_t ix, im, io;          // column strides (1 when coalesced)
    int64_t nouter;
    LineOffsets outer;
    int warps_across;            // WC
    int rows_per_warp;           // <= kColMaxRows
    int64_t col_blocks;          // ceil(inner / (32*WC))
    int64_t chunks;              // ceil(len / R)
    int exclusive;
    int use_lookback;
};

template <int OP, typename InT, typename AccT, bool REVERSE, bool MASKED>
struct ColumnUnitScan {
    using Op = ScanOp<OP, AccT>;

    struct Regs {
        InT v[kColMaxRows];   // rows of this thread's column, masked-out ones already the identity
    };

    struct Shared {
        AccT total[kColWarps][kColThreads];
        int distance;
    };

    // Where this thread's part of a unit lies.
    struct Place {
        int64_t chunk, first, xoff, moff, ooff;
        int nrows, c, wr;
    };

    __device__ __forceinline__ static Place place(const ColumnsArgs &a, int64_t unit)
    {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const int wc = warp % a.warps_across;
        const int warps_down = kColWarps / a.warps_across;
        const int64_t cb = unit % a.col_blocks;
        const int64_t rest = unit / a.col_blocks;
        Place pl;
        pl.chunk = rest / a.nouter;
        int64_t ox, om, oo;
        a.outer.at(rest - pl.chunk * a.nouter, ox, om, oo);
        pl.wr = warp / a.warps_across;
        pl.c = wc * 32 + lane;
        const int64_t col = cb * 32 * a.warps_across + pl.c;
        const int64_t row0 = pl.chunk * (int64_t)warps_down * a.rows_per_warp + (int64_t)pl.wr * a.rows_per_warp;
        pl.nrows = col < a.inner ? (int)min((int64_t)a.rows_per_warp, max(a.len - row0, (int64_t)0)) : 0;
        pl.first = REVERSE ? a.len - 1 - row0 : row0;
        pl.xoff = ox + col * a.ix + pl.first * a.sx;
        pl.moff = om + col * a.im + pl.first * a.sm;
        pl.ooff = oo + col * a.io + pl.first * a.so;
        return pl;
    }

    // One moving pointer per operand, so the loads need no address registers. A masked-out element
    // becomes the identity as it arrives (a select: a NaN under a false mask never reaches the sums).
    __device__ __forceinline__ static void load(const ColumnsArgs &a, int64_t unit, Regs &r)
    {
        const Place pl = place(a, unit);
        const InT in_identity = OP == CS_SCAN_SUM ? InT(0) : InT(1);
        const InT *px = static_cast<const InT *>(a.x) + pl.xoff;
        const unsigned char *pm = a.mask + pl.moff;
        const int64_t step_x = REVERSE ? -a.sx : a.sx, step_m = REVERSE ? -a.sm : a.sm;
#pragma unroll
        for (int i = 0; i < kColMaxRows; i++) {
            const bool ok = i < pl.nrows;
            const InT xv = ok ? *px : in_identity;
            if constexpr (MASKED) r.v[i] = (ok && *pm != 0) ? xv : in_identity;
            else r.v[i] = xv;
            px += step_x;
            if constexpr (MASKED) pm += step_m;
        }
    }

    __device__ __forceinline__ static void scan_and_store(const ColumnsArgs &a, const Lookback<AccT> &lb, int64_t unit,
                                                          const Regs &r, Shared &sh)
    {
        const Op op;
        const Place pl = place(a, unit);
        const int warps_down = kColWarps / a.warps_across;
        const int width = 32 * a.warps_across;

        AccT total = Op::identity();
#pragma unroll
        for (int i = 0; i < kColMaxRows; i++)
            if (i < pl.nrows) total = op(total, to_acc<AccT>(r.v[i]));
        sh.total[pl.wr][pl.c] = total;
        __syncthreads();

        AccT warp_prefix = Op::identity(), unit_total = Op::identity();
        for (int w = 0; w < warps_down; w++) {
            if (w == pl.wr) warp_prefix = unit_total;
            unit_total = op(unit_total, sh.total[w][pl.c]);
        }

        AccT prefix = Op::identity();
        if (a.use_lookback) {
            const int64_t above = a.col_blocks * a.nouter;  // id distance to the unit above
            const size_t slot = (size_t)unit * width + pl.c;
            if (pl.chunk == 0) {
                if (pl.wr == 0) lb.inclusive[slot] = op(prefix, unit_total);
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0) lb.set_flag(unit, kInclusive);
            } else {
                if (pl.wr == 0) lb.aggregate[slot] = unit_total;
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0) {
                    lb.set_flag(unit, kAggregate);
                    int d = 1;
                    for (;;) {
                        const unsigned f = lb.get_flag(unit - d * above);
                        if (f == kInclusive) break;
                        if (f == kAggregate) d++;
                    }
                    sh.distance = d;
                }
                __syncthreads();
                const int d = sh.distance;
                __threadfence();
                prefix = __ldcg(lb.inclusive + (size_t)(unit - d * above) * width + pl.c);
                for (int k = d - 1; k >= 1; k--)
                    prefix = op(prefix, __ldcg(lb.aggregate + (size_t)(unit - k * above) * width + pl.c));
                if (pl.wr == 0) lb.inclusive[slot] = op(prefix, unit_total);
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0) lb.set_flag(unit, kInclusive);
            }
        }

        AccT b = op(prefix, warp_prefix);
        const int64_t step_y = REVERSE ? -a.so : a.so;
        AccT *py = static_cast<AccT *>(a.out) + pl.ooff;
#pragma unroll
        for (int i = 0; i < kColMaxRows; i++) {
            if (i >= pl.nrows) break;
            const AccT nb = op(b, to_acc<AccT>(r.v[i]));
            *py = a.exclusive ? b : nb;
            py += step_y;
            b = nb;
        }
        (void)warps_down;
    }
};

// Persistent blocks taking units in order; with PREFETCH a block loads its next unit before scanning
// the current one (two units of registers: for inputs of up to 4 bytes).
template <int OP, typename InT, typename AccT, bool REVERSE, bool MASKED, bool PREFETCH>
__global__ void __launch_bounds__(kColThreads, 2)
scan_columns_kernel(const ColumnsArgs a, const Lookback<AccT> lb, const WorkQueue q)
{
    using T = ColumnUnitScan<OP, InT, AccT, REVERSE, MASKED>;
    __shared__ typename T::Shared sh;
    __shared__ int64_t slot[2];
    int parity = 0;
    typename T::Regs ra;
    int64_t u = q.take(slot, parity);
    if constexpr (PREFETCH) {
        typename T::Regs rb;
        if (u < q.units) T::load(a, u, ra);
        while (u < q.units) {
            const int64_t n = q.take(slot, parity);
            if (n < q.units) T::load(a, n, rb);
            T::scan_and_store(a, lb, u, ra, sh);
            if (n >= q.units) break;
            u = q.take(slot, parity);
            if (u < q.units) T::load(a, u, ra);
            T::scan_and_store(a, lb, n, rb, sh);
        }
    } else {
        while (u < q.units) {
            T::load(a, u, ra);
            T::scan_and_store(a, lb, u, ra, sh);
            u = q.take(slot, parity);
        }
    }
    q.finish();
}

}  // namespace cuscan
