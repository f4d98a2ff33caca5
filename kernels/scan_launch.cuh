// scan_launch.cuh - the CUDA side's half of the plan: picks the kernel family for a scan plan
// (rows, columns or slabs; tuning.cuh holds the thresholds), then the family's mode, tile and grid,
// and launches it. Each dtype pair's instances live in generated units, a part and a direction
// each (see launch_unit and the Makefile), so that they compile in parallel. CUSCAN_FORCE_FAMILY overrides the family (and mode) where it applies;
// CUSCAN_LOG=plan and cs_scan_explain print the choice.
//
// Instances per pair (what the build pays for): cumsum and cumprod as ScanSpec, by direction and
// mask; and, only where the pair's OPS bits allow, three flagged ops (scan_ops.cuh) by direction
// alone (mask and reset are run-time switches there): segmented cumsum / cumprod (chosen at run
// time), logcumsumexp, and cummax / cummin (chosen at run time). Each of these, by direction, is a
// unit of its own (launch_unit). The segmented sums' unit also holds the plain whole-slab kernels
// with resets as heads (SlabResetSpec: cumsum and cumprod, masked or not).
#pragma once
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include "dtypes.h"
#include "scan_columns.cuh"
#include "scan_rows.cuh"
#include "scan_slabs.cuh"
#include "tuning.cuh"

namespace cuscan {

// Calls f(bool_constant<b>) so that a run-time flag selects a template instance.
template <typename F>
inline cs_status with_bool(bool b, F &&f)
{
    return b ? f(std::true_type{}) : f(std::false_type{});
}

inline bool aligned(const void *ptr, size_t bytes) { return ((uintptr_t)ptr % bytes) == 0; }

// Persistent grid: as many blocks as fit on the device at once, never more than there are units.
template <typename Kernel>
inline unsigned persistent_grid(Kernel kernel, int threads, int64_t units, int *cached, size_t smem = 0)
{
    if (*cached == 0) {
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess || per_sm < 1) {
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

// What a launch reports for CUSCAN_LOG=plan and cs_scan_explain.
struct Report {
    const cs_scan_plan *p;
    char family[64];
    char detail[320];

    // Writes the line (explain) or prints it (log); true when the plan is only to be explained.
    bool emit() const
    {
        if (!p->explain && !p->log) return false;
        char line[512];
        snprintf(line, sizeof line, "cuda %s: %s%s%s%s%s%s; %s -> %s", family, detail, p->mask ? ", masked" : "",
                 p->reset ? ", reset" : "", p->reverse ? ", reverse" : "", p->exclusive ? ", exclusive" : "",
                 p->initial ? ", initial" : "", cs_dtype_name(p->in_dtype), cs_dtype_name(p->out_dtype));
        if (p->explain) {
            snprintf(p->explain, p->explain_len, "%s", line);
            return true;
        }
        fprintf(stderr, "cuscan plan: %s\n", line);
        return false;
    }
};

// ---- the family ----
enum Family { kRowsFamily, kColumnsFamily, kSlabsFamily };

// The family and mode CUSCAN_FORCE_FAMILY names ("slabs", "rows/lines", ...), or -1.
inline int forced_family(const char *force, const char **mode)
{
    *mode = nullptr;
    if (!force) return -1;
    static const char *names[] = { "rows", "columns", "slabs" };
    for (int f = 0; f < 3; f++) {
        const size_t n = strlen(names[f]);
        if (strncmp(force, names[f], n) == 0 && (force[n] == 0 || force[n] == '/')) {
            if (force[n] == '/') *mode = force + n + 1;
            return f;
        }
    }
    return -1;
}

inline bool mode_is(const char *mode, const char *name) { return mode && strcmp(mode, name) == 0; }

// The plan walked as rows: a columns plan's inner dim becomes one more outer dim.
inline cs_scan_plan as_rows(const cs_scan_plan *p)
{
    cs_scan_plan r = *p;
    if (p->layout != CS_LAYOUT_COLUMNS || p->outer.ndim >= CS_MAX_DIMS) return r;
    r.layout = CS_LAYOUT_ROWS;
    const int d = r.outer.ndim++;
    r.outer.shape[d] = p->inner;
    for (int o = 0; o < CS_MAX_OPERANDS; o++) r.outer.strides[o][d] = p->inner_stride[o];
    r.nouter = p->nouter * p->inner;
    r.inner = 1;
    return r;
}

// A flat plan walked as columns: inner elements side by side, slabs one after another.
inline cs_scan_plan as_columns(const cs_scan_plan *p)
{
    cs_scan_plan c = *p;
    c.layout = CS_LAYOUT_COLUMNS;
    c.inner = p->flat_inner;
    c.outer.ndim = 1;
    c.outer.shape[0] = p->flat_outer;
    c.nouter = p->flat_outer;
    for (int o = 0; o < CS_MAX_OPERANDS; o++) {
        c.scan_stride[o] = p->flat_inner;
        c.inner_stride[o] = 1;
        c.outer.strides[o][0] = p->len * p->flat_inner;
    }
    // the initial values lie as the lines do (scan.c's flat form): slab o's at o * flat_inner
    c.scan_stride[CS_OPND_INITIAL] = 0;
    c.outer.strides[CS_OPND_INITIAL][0] = p->flat_inner;
    return c;
}

// Elements a lane of the row family moves at once: a 16-byte vector of the wider type, and for the
// flagged scans (a state and an index an element) at most kRowVecFlagged.
template <class P>
constexpr int row_vec(size_t in_size, size_t out_size, bool flagged)
{
    const int v = 16 / (int)(in_size > out_size ? in_size : out_size);
    return flagged && v > P::kRowVecFlagged ? P::kRowVecFlagged : v;
}

template <class P>
inline Family choose_family(const cs_scan_plan *p, size_t in_size, size_t out_size, bool flagged, int64_t slab_tile,
                            const char **mode)
{
    const int forced = forced_family(p->force, mode);
    if (forced == kSlabsFamily && p->flat) return kSlabsFamily;
    if (forced == kColumnsFamily && (p->layout == CS_LAYOUT_COLUMNS || (p->flat && p->flat_inner > 1))) return kColumnsFamily;
    if (forced == kRowsFamily) return kRowsFamily;
    *mode = nullptr;
    if (!p->flat) return p->layout == CS_LAYOUT_COLUMNS ? kColumnsFamily : kRowsFamily;
    const int64_t vec = row_vec<P>(in_size, out_size, flagged);
    if (p->flat_inner == 1) {
        const bool packed_vectors = p->len % vec == 0 && aligned(p->x, 16) && aligned(p->out, 16) &&
                                    (!p->mask || aligned(p->mask, vec)) && (!p->reset || aligned(p->reset, vec)) &&
                                    (!p->indices || aligned(p->indices, 16));
        // one long line that vectors cannot cover (its length): the row family's line pieces, element
        // by element, join up faster than the pieces of a strip one column wide
        if (!flagged && !packed_vectors && p->flat_outer == 1 && !p->mask && p->len >= P::kRowsMinUnalignedLine)
            return kRowsFamily;
        if (!flagged && p->mask && P::kSlabsMaskedLinesMinOutBytes > 0 &&
            (int64_t)out_size >= P::kSlabsMaskedLinesMinOutBytes && p->len <= slab_tile)
            return kSlabsFamily;
        if (!flagged && out_size == 4 && p->len <= P::kSlabsLinesMaxLen4 && p->len <= slab_tile) return kSlabsFamily;
        return packed_vectors && p->len >= P::kRowsMinLen ? kRowsFamily : kSlabsFamily;
    }
    const int64_t inner_bytes = (int64_t)in_size * p->flat_inner;
    if (inner_bytes >= P::kColumnsMinInnerBytes && p->len >= (flagged ? P::kColumnsMinLenFlagged : P::kColumnsMinLen))
        return kColumnsFamily;
    if (p->op == CS_SCAN_LOGSUMEXP && inner_bytes >= P::kColumnsMinInnerBytesLse && p->len >= P::kColumnsMinLenLse)
        return kColumnsFamily;
    return kSlabsFamily;
}

// The run-time choice of an op instance that serves two ops.
inline OpArgs op_args(const cs_scan_plan *p)
{
    OpArgs o;
    o.min = p->op == CS_SCAN_MIN;
    o.prod = p->op == CS_SCAN_PROD;
    return o;
}

// ---- rows ----
template <class S>
cs_status launch_rows(const cs_scan_plan *p, cudaStream_t stream, Report &rep, const char *force_mode)
{
    using P = typename S::P;
    using InT = typename S::InT;
    using OutT = typename S::OutT;
    constexpr int VEC = row_vec<P>(sizeof(InT), sizeof(OutT), S::FLAGGED);
    const bool masked = p->mask != nullptr;
    // the operands present: x and out always, mask, reset and indices when given
    bool present[CS_MAX_OPERANDS] = { true, masked, true, p->reset != nullptr, p->indices != nullptr };
    bool unit_stride = true;
    for (int o = 0; o < CS_MAX_OPERANDS; o++)
        if (present[o] && p->scan_stride[o] != 1) unit_stride = false;
    bool vec = unit_stride && p->len % VEC == 0 && aligned(p->x, VEC * sizeof(InT)) &&
               aligned(p->out, VEC * sizeof(OutT)) && (!masked || aligned(p->mask, VEC)) &&
               (!p->reset || aligned(p->reset, VEC)) && (!p->indices || aligned(p->indices, 16));
    for (int d = 0; d < p->outer.ndim; d++)
        for (int o = 0; o < CS_MAX_OPERANDS; o++)
            if (present[o] && p->outer.strides[o][d] % VEC != 0) vec = false;
    const int64_t tile = vec ? RowTile<S, VEC, kOneTileBytes<S>>::SIZE : RowTile<S, 1, kOneTileBytes<S>>::SIZE;
    const int64_t big_tile = vec ? RowTile<S, VEC, kPieceBytes<S>>::SIZE : RowTile<S, 1, kPieceBytes<S>>::SIZE;
    const int64_t line_tile = vec ? RowTile<S, VEC, kLineTileBytes<S>>::SIZE : RowTile<S, 1, kLineTileBytes<S>>::SIZE;
    const int64_t warp_tile = vec ? RowTile<S, VEC, kWarpLineBytes<S>, true>::SIZE
                                  : RowTile<S, 1, kWarpLineBytes<S>, true>::SIZE;
    bool packed = unit_stride && p->outer.ndim <= 1;
    if (p->outer.ndim == 1)
        for (int o = 0; o < CS_MAX_OPERANDS; o++)
            if (present[o] && p->outer.strides[o][0] != p->len) packed = false;
    const int sms = cs_cuda_multiprocessors();
    // segmented: short packed lines, several per tile, unless that leaves the device half idle;
    // single: a line per tile; whole lines: many long lines, a block walks each (no block waits on
    // another; flagged scans of very many lines: a warp walks each); line pieces: few long lines in
    // big tiles joined by look-back
    enum { SEGMENTED, SINGLE, WHOLE_LINES, PIECES, WARP_LINES } mode;
    // (segmented tiles hold several lines, which do not start from initial values)
    if (!p->initial && packed && p->len * 2 <= tile && p->nouter / (tile / p->len) >= P::kSegmentedMinTilesPerSm * sms)
        mode = SEGMENTED;
    else if (p->len <= tile) mode = SINGLE;
    else if (S::FLAGGED &&
             p->nouter >= (kIsLse<typename S::Op> ? P::kWarpLinesMinLinesPerSmLse : P::kWarpLinesMinLinesPerSm) * sms)
        mode = WARP_LINES;
    else if (p->nouter >= P::kWholeLinesMinLinesPerSm * sms) mode = WHOLE_LINES;
    else mode = PIECES;
    if (mode_is(force_mode, "segmented") && packed && p->len <= tile && !p->initial) mode = SEGMENTED;
    if (mode_is(force_mode, "single") && p->len <= tile) mode = SINGLE;
    if (mode_is(force_mode, "lines")) mode = WHOLE_LINES;
    if (mode_is(force_mode, "pieces")) mode = PIECES;
    if (mode_is(force_mode, "warps")) mode = S::FLAGGED ? WARP_LINES : WHOLE_LINES;

    RowsArgs a;
    a.x = p->x;
    a.mask = p->mask;
    a.out = p->out;
    a.len = p->len;
    a.sx = p->scan_stride[0];
    a.sm = p->scan_stride[1];
    a.so = p->scan_stride[2];
    a.nlines = p->nouter;
    a.lines = line_offsets_of<CS_MAX_OPERANDS>(p->outer);
    a.exclusive = p->exclusive;
    a.lines_per_tile = mode == SEGMENTED ? tile / p->len : 1;
    a.reset = p->reset;
    a.indices = p->indices;
    a.sr = p->scan_stride[CS_OPND_RESET];
    a.si = p->scan_stride[CS_OPND_INDICES];
    a.op = op_args(p);
    a.initial = p->initial;
    a.initial_dtype = p->initial_dtype;
    const int64_t piece = mode == PIECES ? big_tile : mode == WHOLE_LINES ? line_tile : mode == WARP_LINES ? warp_tile : tile;
    a.tiles_per_line = mode == SEGMENTED ? 1 : (p->len + piece - 1) / piece;
    const int64_t units = mode == SEGMENTED ? (p->nouter + a.lines_per_tile - 1) / a.lines_per_tile
                        : mode == WHOLE_LINES ? p->nouter
                        : mode == WARP_LINES ? (p->nouter + P::kRowWarps - 1) / P::kRowWarps
                                             : p->nouter * a.tiles_per_line;
    static const char *mode_names[] = { "segmented", "single", "lines", "pieces", "warps" };
    snprintf(rep.family, sizeof rep.family, "rows/%s", mode_names[mode]);
    snprintf(rep.detail, sizeof rep.detail, "%lld lines of %lld; tile %lld elements (%s), %lld blocks",
             (long long)p->nouter, (long long)p->len, (long long)piece, vec ? "vectors" : "single elements",
             (long long)units);
    if (rep.emit()) return CS_OK;
    cs_status st = grid_check(units);
    if (st) return st;
    LaunchScratch<typename S::AccT> sc{};
    if (mode == PIECES && (st = launch_scratch(&sc, units, true, 0))) return st;

    return with_bool(vec, [&](auto v) {
        constexpr int V = decltype(v)::value ? VEC : 1;
        const unsigned grid = (unsigned)units;
        const int threads = P::kRowWarps * kWarp;
        switch (mode) {
        case WHOLE_LINES:
            if constexpr (S::FLAGGED) scan_lines_flagged_kernel<S, V><<<grid, threads, 0, stream>>>(a);
            else if constexpr (kByteInputLines<S>) scan_lines_byte_input_kernel<S, V><<<grid, threads, 0, stream>>>(a);
            else scan_lines_kernel<S, V><<<grid, threads, 0, stream>>>(a);
            break;
        case SEGMENTED: scan_rows_kernel<S, V, true><<<grid, threads, 0, stream>>>(a); break;
        case SINGLE: scan_rows_kernel<S, V, false><<<grid, threads, 0, stream>>>(a); break;
        case PIECES: scan_line_pieces_kernel<S, V><<<grid, threads, 0, stream>>>(a, sc.line, sc.queue); break;
        case WARP_LINES:
            if constexpr (S::FLAGGED) scan_warp_lines_kernel<S, V><<<grid, threads, 0, stream>>>(a);
            break;
        }
        return cs_cuda_check(cudaGetLastError(), "scan kernel launch");
    });
}

// ---- columns ----
// Two neighbouring columns per lane where the dtypes allow 2-element vectors along inner.
template <class S>
constexpr int kColumnPair = sizeof(typename S::InT) <= 4 && sizeof(typename S::OutT) <= 8 ? 2 : 1;

// A column unit's shape: columns a lane moves at once (cv: 2 when every operand allows 2-element
// vectors along inner), warps down and across, rows a warp holds. Tall units for long columns,
// wide ones for short columns.
struct ColumnUnit {
    int cv, warps_down, warps_across, rows_per_warp;
};

template <class S>
ColumnUnit column_unit(const cs_scan_plan *p)
{
    using P = typename S::P;
    using InT = typename S::InT;
    using OutT = typename S::OutT;
    constexpr int CV = kColumnPair<S>;
    const bool masked = p->mask != nullptr;
    const bool present[CS_MAX_OPERANDS] = { true, masked, true, p->reset != nullptr, p->indices != nullptr };
    bool vec = CV > 1 && p->inner % CV == 0 && aligned(p->x, CV * sizeof(InT)) && aligned(p->out, CV * sizeof(OutT)) &&
               (!masked || aligned(p->mask, CV)) && (!p->reset || aligned(p->reset, CV)) &&
               (!p->indices || aligned(p->indices, CV * sizeof(int64_t)));
    for (int o = 0; o < CS_MAX_OPERANDS; o++) {
        if (!present[o]) continue;
        if (p->inner_stride[o] != 1 || p->scan_stride[o] % CV != 0) vec = false;
        for (int d = 0; d < p->outer.ndim; d++)
            if (p->outer.strides[o][d] % CV != 0) vec = false;
    }
    ColumnUnit u;
    u.cv = vec ? CV : 1;
    const int max_rows = vec ? col_max_rows<S, CV>() : col_max_rows<S, 1>();
    u.warps_down = 1;
    while (u.warps_down < P::kColWarps && (int64_t)u.warps_down * max_rows < p->len) u.warps_down *= 2;
    u.warps_across = P::kColWarps / u.warps_down;
    while (u.warps_across > 1 && 32 * u.cv * (u.warps_across / 2) >= p->inner) {
        u.warps_across /= 2;
        u.warps_down *= 2;
    }
    const int64_t rpw64 = (p->len + u.warps_down - 1) / u.warps_down;
    u.rows_per_warp = (int)(rpw64 < max_rows ? rpw64 : max_rows);
    return u;
}

template <class S>
cs_status launch_columns(const cs_scan_plan *p, cudaStream_t stream, Report &rep, const char *force_mode)
{
    using P = typename S::P;
    const bool masked = p->mask != nullptr;
    const ColumnUnit u = column_unit<S>(p);
    const bool vec = u.cv > 1;
    constexpr int CV = kColumnPair<S>;
    const int warps_down = u.warps_down, warps_across = u.warps_across, rpw = u.rows_per_warp, cv = u.cv;

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
    a.outer = line_offsets_of<CS_MAX_OPERANDS>(p->outer);
    a.warps_across = warps_across;
    a.rows_per_warp = rpw;
    const int width = 32 * warps_across * cv;
    a.col_blocks = (p->inner + width - 1) / width;
    a.chunks = (p->len + (int64_t)warps_down * rpw - 1) / ((int64_t)warps_down * rpw);
    a.exclusive = p->exclusive;
    a.use_lookback = a.chunks > 1;
    a.walk = 0;
    a.reset = p->reset;
    a.indices = p->indices;
    a.sr = p->scan_stride[CS_OPND_RESET];
    a.ir = p->inner_stride[CS_OPND_RESET];
    a.sI = p->scan_stride[CS_OPND_INDICES];
    a.iI = p->inner_stride[CS_OPND_INDICES];
    a.op = op_args(p);
    a.initial = p->initial;
    a.initial_dtype = p->initial_dtype;
    a.iinit = p->inner_stride[CS_OPND_INITIAL];
    const int64_t units = a.col_blocks * a.nouter * a.chunks;
    cs_status st = grid_check(units);
    if (st) return st;

    return with_bool(vec, [&](auto v) {
        auto kernel = scan_columns_kernel<S, decltype(v)::value ? CV : 1>;
        static int resident;
        unsigned grid = persistent_grid(kernel, P::kColWarps * kWarp, units, &resident);
        // Walk whole strips when the look-back would wait (the unit above a unit is fewer than a few
        // rounds of resident blocks back) and the strips fill the block slots evenly (at least nine
        // tenths busy through the last round). Masked scans measured no faster walking.
        const int64_t strips = a.col_blocks * a.nouter;
        const int64_t rounds = (strips + resident - 1) / resident;
        bool walk = !masked && a.chunks > 1 && strips < P::kColWalkMaxRounds * (int64_t)resident &&
                    strips * 10 >= rounds * resident * 9;
        if (mode_is(force_mode, "walk") && !masked && a.chunks > 1) walk = true;
        if (mode_is(force_mode, "lookback")) walk = false;
        ColumnsArgs aa = a;
        if (walk) {
            aa.walk = 1;
            aa.use_lookback = 0;
            grid = (unsigned)(strips < resident ? strips : resident);
        }
        snprintf(rep.family, sizeof rep.family, "columns/%s", walk ? "walk" : (a.use_lookback ? "lookback" : "single"));
        snprintf(rep.detail, sizeof rep.detail,
                 "%lld x %lld columns of %lld; unit %d rows x %d columns, %lld units, grid %u",
                 (long long)p->nouter, (long long)p->inner, (long long)p->len, (P::kColWarps / warps_across) * rpw,
                 width, (long long)units, grid);
        if (rep.emit()) return CS_OK;
        LaunchScratch<typename S::AccT> sc{};
        cs_status st2 = launch_scratch(&sc, walk ? strips : units, false, aa.use_lookback ? width : 0,
                                       aa.use_lookback && Wire<typename S::AccT>::kFits);
        if (st2) return st2;
        kernel<<<grid, P::kColWarps * kWarp, 0, stream>>>(aa, sc.vector, sc.column, sc.queue);
        return cs_cuda_check(cudaGetLastError(), "scan kernel launch");
    });
}

// ---- slabs ----
// One slab kernel launch; storage beyond the 48 KB a kernel may declare comes as dynamic shared
// memory, whose limit is raised once a device.
template <class S, int MODE, bool I>
inline cs_status launch_slab_kernel(unsigned grid, cudaStream_t stream, const SlabArgs &a,
                                    const LaunchScratch<typename S::AccT> &sc)
{
    constexpr size_t smem = shared_bytes<typename SlabScan<S>::Shared>();
    if constexpr (smem > 0) {
        static unsigned long long raised;   // a bit a device (a race only sets the attribute twice)
        int dev = 0;
        cudaGetDevice(&dev);
        const unsigned long long bit = 1ull << (dev & 63);
        if (!(raised & bit)) {
            const cs_status st = cs_cuda_check(
                cudaFuncSetAttribute(scan_slabs_kernel<S, MODE, I>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                "shared memory limit");
            if (st) return st;
            raised |= bit;
        }
    }
    scan_slabs_kernel<S, MODE, I><<<grid, SlabScan<S>::THREADS, smem, stream>>>(a, sc.vector, sc.column, sc.queue);
    return CS_OK;
}

// The slab plan of p under spec S: the tile's shape, the mode, the tiles or strips (a.units).
template <class S>
SlabArgs plan_slabs(const cs_scan_plan *p, const char *force_mode)
{
    using P = typename S::P;
    using T = SlabScan<S>;
    using InT = typename S::InT;
    using OutT = typename S::OutT;
    const int sms = cs_cuda_multiprocessors();
    const int64_t L = p->len, inner = p->flat_inner, outer = p->flat_outer;
    const int64_t tile = T::TILE, threads = T::THREADS, sr_max = T::SR_MAX;

    SlabArgs a;
    memset(&a, 0, sizeof a);
    a.x = p->x;
    a.mask = p->mask;
    a.out = p->out;
    a.outer = outer;
    a.len = L;
    a.inner = inner;
    a.total = outer * L * inner;
    a.exclusive = p->exclusive;
    a.reset = p->reset;
    a.indices = p->indices;
    a.op = op_args(p);
    a.initial = p->initial;
    a.initial_dtype = p->initial_dtype;
    // tile shape: whole rows of at most kSlabMaxWidth columns (wider rows in column blocks), whole
    // slabs when they fit; short wide slabs take wider column blocks
    const bool pieces_forced = mode_is(force_mode, "walk") || mode_is(force_mode, "lookback");
    int64_t width = inner <= P::kSlabMaxWidth ? inner : P::kSlabMaxWidth;
    // (and slabs too large for a tile at that width take narrower blocks where whole slabs then fit:
    // independent tiles rather than pieces that wait on one another)
    const bool narrower = L * width > tile && L * 32 <= tile;
    if ((narrower || (inner > P::kSlabMaxWidth && L * (int64_t)P::kSlabMaxWidth <= tile)) && L <= sr_max &&
        !pieces_forced) {
        width = (tile / L) / 32 * 32;
        if (width > inner) {
            width = inner;
        } else {   // blocks of even width: no narrow last block
            const int64_t nb = (inner + width - 1) / width;
            width = ((inner + nb - 1) / nb + 31) / 32 * 32;
        }
    }
    // segments: S of a column when S columns' worth fit the threads, each of at most SR_MAX rows
    // (odd, so that the lanes of a warp walking one column SR rows apart hit different banks; SR_MAX
    // is odd, so an even row count per segment rounds up within it); a whole wide tile scans one
    // column a thread at a time, a piece holds all its columns at once
    static_assert(T::SR_MAX % 2 == 1, "segments hold an odd number of rows");
    auto segs_of = [&](int64_t w) { return w <= threads ? (int)(threads / w) : 1; };
    auto row_cap = [&](int64_t w, bool whole_tile) -> int64_t {
        const int sg = segs_of(w);
        if (sg > 1) return (int64_t)sg * sr_max;
        return whole_tile ? sr_max : sr_max / ((w + threads - 1) / threads);
    };
    const bool whole = L * width <= tile && L <= row_cap(width, true) && !pieces_forced;
    if (!whole && width > P::kSlabMaxWidth) width = P::kSlabMaxWidth;
    a.width = (int)width;
    a.col_blocks = (inner + width - 1) / width;
    a.segs = segs_of(width);
    int64_t units;
    if (whole) {
        a.mode = kSlabWhole;
        int64_t k = tile / (L * width);
        if (k * L > row_cap(width, true)) k = row_cap(width, true) / L;
        // keep enough tiles for every multiprocessor to have a few
        const int64_t want = (outer * a.col_blocks + 4 * (int64_t)sms - 1) / (4 * (int64_t)sms);
        if (k > want) k = want < 1 ? 1 : want;
        a.slabs_per_tile = k;
        a.rows = (int)(k * L);
        units = a.col_blocks * ((outer + k - 1) / k);
    } else {
        int64_t rows = tile / width;
        if (rows > row_cap(width, false)) rows = row_cap(width, false);
        a.rows = (int)(rows < 1 ? 1 : rows);
        a.pieces = (L + a.rows - 1) / a.rows;
        a.strips = outer * a.col_blocks;
        // look back: units go piece-major, so with many strips a piece's predecessor was taken long
        // before and has posted; a walk keeps a block's pieces in order, one tile in flight
        a.mode = a.strips < (int64_t)P::kSlabWalkMaxStripsPerSm * sms ? kSlabWalk : kSlabLookback;
        if (mode_is(force_mode, "walk")) a.mode = kSlabWalk;
        if (mode_is(force_mode, "lookback")) a.mode = kSlabLookback;
        units = a.mode == kSlabWalk ? a.strips : a.strips * a.pieces;
        a.window = a.mode == kSlabLookback && a.strips <= P::kSlabWindowMaxStrips && width <= P::kSlabWindowMaxWidth;
        a.tree = a.mode == kSlabLookback && !a.window && a.strips <= P::kSlabTreeMaxStrips;
    }
    a.units = units;
    if (a.segs > 1) {
        int sr = (a.rows + a.segs - 1) / a.segs;
        if (sr % 2 == 0) sr++;
        a.seg_rows = sr;
        // segments of sr and sr - 2 rows (both odd) that just cover the tile's rows
        a.seg_long = sr < 3 ? a.segs : std::min(a.segs, (a.rows - a.segs * (sr - 2) + 1) / 2);
    } else {
        a.seg_rows = a.rows;
        a.seg_long = 1;
    }
    if (a.mode == kSlabWhole) {
        a.div_len = FastDiv((unsigned)L);
        for (int64_t h = 0; h < 64; h += L) a.head_pattern |= 1ull << h;
    }
    a.div_width = FastDiv((unsigned)width);
    const bool blocked = a.col_blocks > 1;
    constexpr int VIN = T::VIN, VOUT = T::VOUT;
    a.vec_in = aligned(p->x, 16) && (!p->mask || aligned(p->mask, VIN)) && (!p->reset || aligned(p->reset, VIN)) &&
               (!blocked || (inner % VIN == 0 && width % VIN == 0));
    // out moves in vectors only where the stage was laid out for them (x in vectors)
    a.vec_out = a.vec_in && aligned(p->out, 16) && (!blocked || (inner % VOUT == 0 && width % VOUT == 0));
    a.vec_reset = S::RESETS && aligned(p->reset, 16);
    return a;
}

// The launch of a slab plan (ONLY >= 0: the spec of a class planned in that mode alone).
template <class S, int ONLY = -1>
cs_status run_slabs(cudaStream_t stream, Report &rep, const SlabArgs &a)
{
    using T = SlabScan<S>;
    const int64_t units = a.units;
    static const char *mode_names[] = { "whole", "walk", "lookback" };
    snprintf(rep.family, sizeof rep.family, "slabs/%s", mode_names[a.mode]);
    const int64_t outer = a.outer, L = a.len, inner = a.inner;
    unsigned grid = (unsigned)units;
    if constexpr (ONLY < 0 && !S::RESETS) {
        static int resident;
        if (a.mode == kSlabWalk)
            grid = persistent_grid(scan_slabs_kernel<S, kSlabWalk, false>, T::THREADS, units, &resident,
                                   shared_bytes<typename T::Shared>());
    }
    snprintf(rep.detail, sizeof rep.detail,
             "outer %lld, len %lld, inner %lld; tile %d rows x %d columns, %d segments of %d rows, %lld %s, grid %u%s%s%s",
             (long long)outer, (long long)L, (long long)inner, a.rows, a.width, a.segs, a.seg_rows, (long long)units,
             a.mode == kSlabWalk ? "strips" : "tiles", grid, a.vec_in ? ", vectors" : "",
             a.window ? ", pieces joined by a window of flags"
             : a.tree && Wire<typename S::AccT>::kFits ? ", pieces joined by a tree" : "",
             T::WINDOW ? ", in window tiles" : S::P::kSlabLargeClass ? ", in large tiles" : S::RESETS ? ", resets as heads" : "");
    if (rep.emit()) return CS_OK;
    cs_status st = grid_check(units);
    if (st) return st;
    LaunchScratch<typename S::AccT> sc{};
    if ((st = launch_scratch(&sc, units, false, a.mode == kSlabLookback ? a.width : 0,
                             a.mode == kSlabLookback && !a.window && Wire<typename S::AccT>::kFits)))
        return st;
    // cummax and cummin take no initial values (scan.c refuses them); resets as heads are planned
    // only for whole tiles without them
    with_bool(a.initial != nullptr && !S::INDEXED && !S::RESETS, [&](auto init) {
        constexpr bool I = decltype(init)::value && !S::INDEXED && !S::RESETS;
        if constexpr (ONLY >= 0) {
            st = launch_slab_kernel<S, ONLY, I>(grid, stream, a, sc);
        } else if constexpr (S::RESETS) {
            st = launch_slab_kernel<S, kSlabWhole, I>(grid, stream, a, sc);
        } else {
            switch (a.mode) {
            case kSlabWhole: st = launch_slab_kernel<S, kSlabWhole, I>(grid, stream, a, sc); break;
            case kSlabWalk: st = launch_slab_kernel<S, kSlabWalk, I>(grid, stream, a, sc); break;
            default: st = launch_slab_kernel<S, kSlabLookback, I>(grid, stream, a, sc); break;
            }
        }
        return CS_OK;
    });
    if (st) return st;
    return cs_cuda_check(cudaGetLastError(), "scan kernel launch");
}

template <class S>
cs_status launch_slabs(const cs_scan_plan *p, cudaStream_t stream, Report &rep, const char *force_mode)
{
    using P = typename S::P;
    const SlabArgs a = plan_slabs<S>(p, force_mode);
    if constexpr (!S::FLAGGED && sizeof(typename S::OutT) == 4 &&
                  (S::MASKED ? P::kSlabLargeTileElementsMasked4 : P::kSlabLargeTileElements4) > 0) {
        // whole tiles that hold enough more elements in the larger class (masked: or whole slabs the
        // smaller class cuts into pieces) take it; unmasked pieces are not asked (no second plan)
        if (S::MASKED || a.mode == kSlabWhole) {
            const SlabArgs b = plan_slabs<SlabLargeSpec<S>>(p, force_mode);
            const int64_t held_a = (int64_t)a.rows * a.width, held_b = (int64_t)b.rows * b.width;
            const int gain = S::MASKED ? P::kSlabLargeMinGainPctMasked4 : P::kSlabLargeMinGainPct4;
            const bool grows = a.mode == kSlabWhole && held_b * 100 >= held_a * gain && (S::MASKED || a.segs > 1);
            if (b.mode == kSlabWhole && (grows || (S::MASKED && a.mode != kSlabWhole)))
                return run_slabs<SlabLargeSpec<S>, kSlabWhole>(stream, rep, b);
        }
    }
    if constexpr (!S::FLAGGED && sizeof(typename S::OutT) >= 4 && P::kSlabWindowTileBytes > 0) {
        using W = SlabScan<SlabWindowSpec<S>>;
        if constexpr (!S::MASKED || W::ASYNC_STAGE) {
            // look-backs whose pieces wait on a front (a window of flags unmasked, the tree of a
            // single strip narrow enough for the class's table) take their own tile class where its
            // larger tiles still make such pieces, enough to fill the SMs a few times
            auto fronted = [&](const SlabArgs &s) {
                return s.mode == kSlabLookback &&
                       ((s.window && !S::MASKED) || (P::kSlabWindowTree && s.tree && s.width <= W::THREADS));
            };
            if (fronted(a)) {
                const SlabArgs b = plan_slabs<SlabWindowSpec<S>>(p, force_mode);
                const int64_t resident = (int64_t)P::kSlabWindowBlocksPerSm * cs_cuda_multiprocessors();
                if (fronted(b) && b.units >= P::kSlabWindowMinWaves * resident)
                    return run_slabs<SlabWindowSpec<S>, kSlabLookback>(stream, rep, b);
            }
        }
    }
    return run_slabs<S>(stream, rep, a);
}

// ---- one dtype pair ----
// One spec through the family chosen for the plan.
template <class S>
cs_status launch_spec(const cs_scan_plan *p, cudaStream_t stream, Family family, const char *mode)
{
    Report rep{};
    rep.p = p;
    switch (family) {
    case kSlabsFamily: return launch_slabs<S>(p, stream, rep, mode);
    case kColumnsFamily: {
        // a flat plan merges every dim inside the scanned one into one run of columns
        const cs_scan_plan c = p->flat ? as_columns(p) : *p;
        return launch_columns<S>(&c, stream, rep, mode);
    }
    default: {
        const cs_scan_plan r = as_rows(p);
        return launch_rows<S>(&r, stream, rep, mode);
    }
    }
}

// Between columns and slabs, where a plain scan's unit shapes decide (choose_family has only the
// sizes): a column unit whose threads would hold few rows scans short slabs slower than the slab
// tiles that hold many slabs whole; masked column units lose more where a lane takes one column
// (odd widths) and on short columns; and where slabs could not be whole, narrow columns still beat
// slab pieces joined by look-back from fewer bytes of a row than choose_family's bound.
template <class S>
Family columns_or_slabs(const cs_scan_plan *p, Family family)
{
    using P = typename S::P;
    const int64_t inner_bytes = (int64_t)sizeof(typename S::InT) * p->flat_inner;
    auto columns_fit = [&] {
        const cs_scan_plan c = as_columns(p);
        const ColumnUnit u = column_unit<S>(&c);
        if (u.rows_per_warp < P::kColumnsMinRowsPerWarp) return false;
        if (!S::MASKED || P::kColumnsMaskedMinLen == 0) return true;
        return p->len >= P::kColumnsMaskedMinLen && (u.cv > 1 || sizeof(typename S::InT) != 4) &&
               inner_bytes >= (sizeof(typename S::InT) == 8 ? P::kColumnsMaskedMinInnerBytes8 : 0);
    };
    if (family == kColumnsFamily) return columns_fit() ? kColumnsFamily : kSlabsFamily;
    const int64_t bound = sizeof(typename S::InT) == 4   ? P::kColumnsOverPiecesMinInnerBytes4
                          : sizeof(typename S::InT) == 8 ? P::kColumnsOverPiecesMinInnerBytes8
                                                         : 0;
    if (family != kSlabsFamily || S::MASKED || bound == 0 || inner_bytes < bound || p->len < P::kColumnsMinLen)
        return family;
    // (few narrow strips whose pieces join by a window of flags keep it: columns lost there)
    const SlabArgs slabs = plan_slabs<S>(p, nullptr);
    if (slabs.mode == kSlabWhole || slabs.window) return family;
    return columns_fit() ? kColumnsFamily : family;
}

// cumsum and cumprod: one instance of a direction and mask (a unit holds one).
template <class P, int OP, typename InT, typename AccT, typename OutT, bool REV, bool MSK>
cs_status launch_op_as(const cs_scan_plan *p, cudaStream_t stream)
{
    using S = ScanSpec<P, OP, InT, AccT, OutT, REV, MSK>;
    const char *mode;
    Family family = choose_family<P>(p, sizeof(InT), sizeof(OutT), false, SlabScan<S>::TILE, &mode);
    if (!p->force && p->flat && p->flat_inner > 1) family = columns_or_slabs<S>(p, family);
    return launch_spec<S>(p, stream, family, mode);
}

// Segmented cumsum / cumprod in the slab family, where the plain spec's tiles hold the slabs whole
// with a column's segments a thread each and no initial values: the plain kernel, each reset one
// more head (SlabResetSpec), at the plain loops' cost an element rather than the flagged pairs'.
// False (nothing launched) where the plan is otherwise.
template <class P, int OP, typename InT, typename AccT, typename OutT, bool REV>
bool launch_resets_as_heads_of(const cs_scan_plan *p, cudaStream_t stream, const char *mode, cs_status *st)
{
    bool taken = false;
    with_bool(p->mask != nullptr, [&](auto masked) {
        using S = SlabResetSpec<ScanSpec<P, OP, InT, AccT, OutT, REV, decltype(masked)::value>>;
        const SlabArgs a = plan_slabs<S>(p, mode);
        if (a.mode != kSlabWhole || a.segs < 2) return CS_OK;
        Report rep{};
        rep.p = p;
        *st = run_slabs<S>(stream, rep, a);
        taken = true;
        return CS_OK;
    });
    return taken;
}
template <class P, unsigned OPS, typename InT, typename AccT, typename OutT, bool REV>
bool launch_resets_as_heads(const cs_scan_plan *p, cudaStream_t stream, cs_status *st)
{
    if constexpr (!P::kSlabResetsAsHeads) return false;
    const char *mode;
    if (choose_family<P>(p, sizeof(InT), sizeof(OutT), true, 0, &mode) != kSlabsFamily || p->initial) return false;
    if (p->op == CS_SCAN_PROD) {
        if constexpr (CS_OPS_HAS(OPS, CS_SCAN_PROD))
            return launch_resets_as_heads_of<P, CS_SCAN_PROD, InT, AccT, OutT, REV>(p, stream, mode, st);
    } else if constexpr (CS_OPS_HAS(OPS, CS_SCAN_SUM)) {
        return launch_resets_as_heads_of<P, CS_SCAN_SUM, InT, AccT, OutT, REV>(p, stream, mode, st);
    }
    return false;
}

// The flagged ops: one instance of a direction (mask and reset are run-time switches there).
template <class P, class Base, typename InT, typename OutT, bool REV>
cs_status launch_flagged_as(const cs_scan_plan *p, cudaStream_t stream)
{
    const char *mode;
    const Family family = choose_family<P>(p, sizeof(InT), sizeof(OutT), true, 0, &mode);
    using S = FlaggedSpec<P, Base, InT, OutT, REV>;
    return launch_spec<S>(p, stream, family, mode);
}

// Both directions (the tuning harnesses of bench/tune call the flagged ops this way).
template <class P, class Base, typename InT, typename OutT>
cs_status launch_flagged(const cs_scan_plan *p, cudaStream_t stream)
{
    return with_bool(p->reverse, [&](auto rev) {
        return launch_flagged_as<P, Base, InT, OutT, decltype(rev)::value>(p, stream);
    });
}

// A pair's scans come in ten compilation units, a part and a direction each, so that the build's
// longest step is a tenth of a pair rather than half of one: the plain cumsum and cumprod unmasked
// and masked, and the flagged scans (segmented cumsum / cumprod, logcumsumexp, cummax / cummin).
// A part the pair's OPS bits leave out has no unit (the Makefile lists them; scan_dispatch.cu
// calls only those). scan_part says which part a plan goes to; p->reverse the direction.
enum class ScanPart { plain, masked, reset, lse, maxmin };
inline ScanPart scan_part(const cs_scan_plan *p)
{
    if (p->op == CS_SCAN_SUM || p->op == CS_SCAN_PROD) return p->reset ? ScanPart::reset : p->mask ? ScanPart::masked : ScanPart::plain;
    return p->op == CS_SCAN_LOGSUMEXP ? ScanPart::lse : ScanPart::maxmin;
}

inline cs_status unsupported_scan(const cs_scan_plan *p)
{
    return cs_fail(CS_ERR_UNSUPPORTED, "scan op %d of %s into %s%s is not supported on CUDA", (int)p->op,
                   cs_dtype_name(p->in_dtype), cs_dtype_name(p->out_dtype), p->indices ? " with indices" : "");
}

template <typename InT, typename AccT, typename OutT, unsigned OPS, ScanPart PART, bool REV>
cs_status launch_unit(const cs_scan_plan *p, int compute_capability)
{
    cudaStream_t stream = (cudaStream_t)cs_cuda_stream_handle();
    return with_tuning(compute_capability, [&](auto policy) {
        using P = decltype(policy);
        const bool maxmin = p->op == CS_SCAN_MAX || p->op == CS_SCAN_MIN;
        if ((unsigned)p->op < 32 && CS_OPS_HAS(OPS, p->op) && (!p->indices || maxmin) && scan_part(p) == PART &&
            p->reverse == REV) {
            if constexpr (PART == ScanPart::plain || PART == ScanPart::masked) {
                constexpr bool MSK = PART == ScanPart::masked;
                if (p->op == CS_SCAN_PROD) {
                    if constexpr (CS_OPS_HAS(OPS, CS_SCAN_PROD)) return launch_op_as<P, CS_SCAN_PROD, InT, AccT, OutT, REV, MSK>(p, stream);
                } else {
                    if constexpr (CS_OPS_HAS(OPS, CS_SCAN_SUM)) return launch_op_as<P, CS_SCAN_SUM, InT, AccT, OutT, REV, MSK>(p, stream);
                }
            } else if constexpr (PART == ScanPart::reset) {
                if constexpr ((OPS & (CS_OPS_SUM | CS_OPS_PROD)) != 0) {
                    cs_status st = CS_OK;
                    if (launch_resets_as_heads<P, OPS, InT, AccT, OutT, REV>(p, stream, &st)) return st;
                    return launch_flagged_as<P, ArithOp<AccT>, InT, OutT, REV>(p, stream);
                }
            } else if constexpr (PART == ScanPart::lse) {
                if constexpr ((OPS & CS_OPS_LSE) != 0) return launch_flagged_as<P, LseOp, InT, OutT, REV>(p, stream);
            } else if constexpr ((OPS & CS_OPS_MAXMIN) != 0) {
                static_assert(std::is_same_v<InT, OutT>, "cummax and cummin keep the input's dtype");
                return launch_flagged_as<P, MaxMinOp<InT>, InT, OutT, REV>(p, stream);
            }
        }
        return unsupported_scan(p);
    });
}

// The entry points of one pair's units, declared for scan_dispatch.cu (which calls only those the
// pair's OPS bits give a unit).
#define CUSCAN_DECLARE_UNIT(PART, NAME)                                               \
    cs_status scan_##PART##_fwd_##NAME(const cs_scan_plan *p, int compute_capability); \
    cs_status scan_##PART##_rev_##NAME(const cs_scan_plan *p, int compute_capability);
#define CUSCAN_DECLARE_PAIR(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS) \
    CUSCAN_DECLARE_UNIT(plain, NAME)                                \
    CUSCAN_DECLARE_UNIT(masked, NAME)                               \
    CUSCAN_DECLARE_UNIT(reset, NAME)                                \
    CUSCAN_DECLARE_UNIT(lse, NAME)                                  \
    CUSCAN_DECLARE_UNIT(maxmin, NAME)
CS_SCAN_PAIRS(CUSCAN_DECLARE_PAIR)

}  // namespace cuscan

// Defines one unit's entry point (PART: plain, masked, reset, lse or maxmin; DIR: fwd or rev) from
// its pair's row of src/dtypes.h (a generated unit holds one).
#define CUSCAN_DIR_fwd false
#define CUSCAN_DIR_rev true
#define CUSCAN_DEFINE_UNIT(PART, DIR, NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                          \
    cs_status cuscan::scan_##PART##_##DIR##_##NAME(const cs_scan_plan *p, int compute_capability)     \
    {                                                                                                 \
        return launch_unit<IN_T, ACC_T, OUT_T, OPS, ScanPart::PART, CUSCAN_DIR_##DIR>(p, compute_capability); \
    }
