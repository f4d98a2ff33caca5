// scan_launch.cuh - picks the kernel, tile shape and template parameters for a scan plan and
// launches it. One instance per (input, accumulator) dtype pair lives in scan_<dtype>.cu, so the
// pairs compile in parallel.
#pragma once
#include <cuda_runtime.h>
#include "scan_columns.cuh"
#include "scan_rows.cuh"

namespace cuscan {

template <typename InT, typename AccT>
cs_status launch_scan(const cs_scan_plan *p);

// Calls f(bool_constant<b>) so that a run-time flag selects a template instance.
template <typename F>
inline cs_status with_bool(bool b, F &&f)
{
    return b ? f(std::true_type{}) : f(std::false_type{});
}

inline bool aligned(const void *ptr, size_t bytes) { return ((uintptr_t)ptr % bytes) == 0; }

// Scratch for one launch: the work queue always, look-back status when pieces depend on each other:
// packed 64-bit state words, or flags and a values buffer.
template <typename AccT>
inline cs_status scan_scratch(Lookback<AccT> *lb, WorkQueue *q, int64_t units, int width, bool lookback,
                              bool packed = false)
{
    unsigned *flags;
    unsigned long long *words;
    void *values;
    unsigned epoch;
    const bool split = lookback && !packed;
    cs_status st = cs_cuda_lookback_scratch(&flags, split ? (size_t)units : 0, &words,
                                            lookback && packed ? (size_t)units : 0, &values,
                                            split ? 2 * (size_t)units * width * sizeof(AccT) : 0, &epoch);
    if (st) return st;
    *lb = lookback_at<AccT>(flags, words, values, units, width, epoch);
    *q = work_queue_at(flags, units);
    return CS_OK;
}

// Persistent grid: as many blocks as fit on the device at once, never more than there are units.
template <typename Kernel>
inline unsigned persistent_grid(Kernel kernel, int threads, int64_t units, int *cached)
{
    if (*cached == 0) {
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess || per_sm < 1) {
            cudaGetLastError();
            per_sm = 1;
        }
        *cached = per_sm * cs_cuda_multiprocessors();
    }
    return (unsigned)(units < *cached ? units : *cached);
}

inline cs_status grid_check(int64_t units)
{
    if (units > 0x7fffffff)
        return cs_fail(CS_ERR_UNSUPPORTED, "scan: %lld tiles exceed the launch limit", (long long)units);
    return CS_OK;
}

template <int OP, typename InT, typename AccT>
cs_status launch_rows(const cs_scan_plan *p, cudaStream_t stream)
{
    constexpr int VEC = RowShape<InT, AccT>::VEC_MAX;
    const bool masked = p->mask != nullptr;
    const bool unit_stride = p->scan_stride[0] == 1 && p->scan_stride[2] == 1 && (!masked || p->scan_stride[1] == 1);
    bool vec = unit_stride && p->len % VEC == 0 && aligned(p->x, VEC * sizeof(InT)) &&
               aligned(p->out, VEC * sizeof(AccT)) && (!masked || aligned(p->mask, VEC));
    for (int d = 0; d < p->outer.ndim; d++)
        for (int o = 0; o < 3; o++)
            if ((o != 1 || masked) && p->outer.strides[o][d] % VEC != 0) vec = false;
    const int64_t tile = vec ? RowTile<InT, VEC>::SIZE : RowTile<InT, 1>::SIZE;
    const int64_t big_tile = masked ? (vec ? RowTile<InT, VEC, kPieceTileBytes<true>>::SIZE : RowTile<InT, 1, kPieceTileBytes<true>>::SIZE)
                                    : (vec ? RowTile<InT, VEC, kPieceBytes>::SIZE : RowTile<InT, 1, kPieceBytes>::SIZE);
    const int64_t line_tile = masked ? (vec ? RowTile<InT, VEC, kLineTileBytes<true>>::SIZE : RowTile<InT, 1, kLineTileBytes<true>>::SIZE)
                                     : tile;
    bool packed = unit_stride && p->outer.ndim <= 1;
    if (p->outer.ndim == 1)
        for (int o = 0; o < 3; o++)
            if ((o != 1 || masked) && p->outer.strides[o][0] != p->len) packed = false;
    const int sms = cs_cuda_multiprocessors();
    // segmented: short packed lines, several per tile, unless that leaves the device half idle;
    // single: a line per tile; whole lines: many long lines, a block walks each (no block waits on
    // another); look-back: few long lines in big tiles joined by look-back
    enum { SEGMENTED, SINGLE, WHOLE_LINES, LOOKBACK } mode;
    if (packed && p->len * 2 <= tile && p->nouter / (tile / p->len) >= 2 * sms) mode = SEGMENTED;
    else if (p->len <= tile) mode = SINGLE;
    else if (p->nouter >= 4 * sms) mode = WHOLE_LINES;
    else mode = LOOKBACK;

    RowsArgs a;
    a.x = p->x;
    a.mask = p->mask;
    a.out = p->out;
    a.len = p->len;
    a.sx = p->scan_stride[0];
    a.sm = p->scan_stride[1];
    a.so = p->scan_stride[2];
    a.nlines = p->nouter;
    a.lines = line_offsets_of(p->outer);
    a.exclusive = p->exclusive;
    a.lines_per_tile = mode == SEGMENTED ? tile / p->len : 1;
    const int64_t piece = mode == LOOKBACK ? big_tile : mode == WHOLE_LINES ? line_tile : tile;
    a.tiles_per_line = mode == SEGMENTED ? 1 : (p->len + piece - 1) / piece;
    const int64_t units = mode == SEGMENTED ? (p->nouter + a.lines_per_tile - 1) / a.lines_per_tile
                        : mode == WHOLE_LINES ? p->nouter : p->nouter * a.tiles_per_line;
    cs_status st = grid_check(units);
    if (st) return st;
    Lookback<AccT> lb{};
    WorkQueue q{};
    if (mode == LOOKBACK && (st = scan_scratch(&lb, &q, units, 1, true, kLinePacked<AccT>))) return st;

    return with_bool(p->reverse, [&](auto rev) {
        return with_bool(masked, [&](auto msk) {
            return with_bool(vec, [&](auto v) {
                constexpr int V = decltype(v)::value ? VEC : 1;
                constexpr bool R = decltype(rev)::value, M = decltype(msk)::value;
                const unsigned grid = (unsigned)units;
                switch (mode) {
                case WHOLE_LINES: scan_lines_kernel<OP, InT, AccT, R, M, V><<<grid, kRowThreads, 0, stream>>>(a); break;
                case SEGMENTED: scan_rows_kernel<OP, InT, AccT, R, M, V, true><<<grid, kRowThreads, 0, stream>>>(a); break;
                case SINGLE: scan_rows_kernel<OP, InT, AccT, R, M, V, false><<<grid, kRowThreads, 0, stream>>>(a); break;
                case LOOKBACK: scan_line_pieces_kernel<OP, InT, AccT, R, M, V><<<grid, kRowThreads, 0, stream>>>(a, lb, q); break;
                }
                return cs_cuda_check(cudaGetLastError(), "scan kernel launch");
            });
        });
    });
}

template <int OP, typename InT, typename AccT>
cs_status launch_columns(const cs_scan_plan *p, cudaStream_t stream)
{
    const bool masked = p->mask != nullptr;
    // two neighbouring columns per lane when every operand allows 2-element vectors along inner
    constexpr int CV = sizeof(InT) <= 4 ? 2 : 1;
    bool vec = CV > 1 && p->inner % CV == 0 && p->inner_stride[0] == 1 && p->inner_stride[2] == 1 &&
               (!masked || p->inner_stride[1] == 1) && aligned(p->x, CV * sizeof(InT)) &&
               aligned(p->out, CV * sizeof(AccT)) && (!masked || aligned(p->mask, CV));
    for (int o = 0; o < 3; o++) {
        if (o == 1 && !masked) continue;
        if (p->scan_stride[o] % CV != 0) vec = false;
        for (int d = 0; d < p->outer.ndim; d++)
            if (p->outer.strides[o][d] % CV != 0) vec = false;
    }
    const int cv = vec ? CV : 1;
    // rows per warp and warps across: tall units for long columns, wide ones for short columns
    int warps_down = 1;
    while (warps_down < kColWarps && (int64_t)warps_down * kColMaxRows < p->len) warps_down *= 2;
    int warps_across = kColWarps / warps_down;
    while (warps_across > 1 && 32 * cv * (warps_across / 2) >= p->inner) {
        warps_across /= 2;
        warps_down *= 2;
    }
    const int64_t rpw64 = (p->len + warps_down - 1) / warps_down;
    const int rpw = (int)(rpw64 < kColMaxRows ? rpw64 : kColMaxRows);

    ColumnsArgs a;
    a.x = p->x;
    a.mask = p->mask;
    a.out = p->out;
    a.len = p->len;
    a.sx = p->scan_stride[0];
    a.sm = p->scan_stride[1];
    a.so = p->scan_stride[2];
    a.inner = p->inner;
    a.ix = p->inner_stride[0];
    a.im = p->inner_stride[1];
    a.io = p->inner_stride[2];
    a.nouter = p->nouter;
    a.outer = line_offsets_of(p->outer);
    a.warps_across = warps_across;
    a.rows_per_warp = rpw;
    const int width = 32 * warps_across * cv;
    a.col_blocks = (p->inner + width - 1) / width;
    a.chunks = (p->len + (int64_t)warps_down * rpw - 1) / ((int64_t)warps_down * rpw);
    a.exclusive = p->exclusive;
    a.use_lookback = a.chunks > 1;
    a.walk = 0;
    const int64_t units = a.col_blocks * a.nouter * a.chunks;
    cs_status st = grid_check(units);
    if (st) return st;

    return with_bool(p->reverse, [&](auto rev) {
        return with_bool(masked, [&](auto msk) {
            return with_bool(vec, [&](auto v) {
                auto kernel = scan_columns_kernel<OP, InT, AccT, decltype(rev)::value, decltype(msk)::value,
                                                  decltype(v)::value ? CV : 1>;
                static int resident;
                unsigned grid = persistent_grid(kernel, kColThreads, units, &resident);
                // Walk whole strips when the look-back would wait (the unit above a unit is fewer than
                // 3 rounds of resident blocks back) and the strips fill the block slots evenly (at
                // least 90% busy through the last round). Masked scans measured no faster walking
                // (bench/NOTES.md, v15).
                const int64_t strips = a.col_blocks * a.nouter;
                const int64_t rounds = (strips + resident - 1) / resident;
                const bool walk = !masked && a.chunks > 1 && strips < 3 * (int64_t)resident &&
                                  strips * 10 >= rounds * resident * 9;
                ColumnsArgs aa = a;
                if (walk) {
                    aa.walk = 1;
                    aa.use_lookback = 0;
                    grid = (unsigned)(strips < resident ? strips : resident);
                }
                Lookback<AccT> lb;
                WorkQueue q;
                cs_status st2 = scan_scratch(&lb, &q, walk ? strips : units, width, aa.use_lookback);
                if (st2) return st2;
                kernel<<<grid, kColThreads, 0, stream>>>(aa, lb, q);
                return cs_cuda_check(cudaGetLastError(), "scan kernel launch");
            });
        });
    });
}

template <typename InT, typename AccT>
cs_status launch_scan(const cs_scan_plan *p)
{
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    const bool rows = p->layout == CS_LAYOUT_ROWS;
    if (p->op == CS_SCAN_PROD) {
        if constexpr (std::is_same_v<InT, uint8_t>) {
            return cs_fail(CS_ERR_UNSUPPORTED, "cumprod of bool is not supported");
        } else {
            return rows ? launch_rows<CS_SCAN_PROD, InT, AccT>(p, stream) : launch_columns<CS_SCAN_PROD, InT, AccT>(p, stream);
        }
    }
    return rows ? launch_rows<CS_SCAN_SUM, InT, AccT>(p, stream) : launch_columns<CS_SCAN_SUM, InT, AccT>(p, stream);
}

}  // namespace cuscan

#define CUSCAN_INSTANTIATE_SCAN(InT, AccT) \
    template cs_status cuscan::launch_scan<InT, AccT>(const cs_scan_plan *p);
