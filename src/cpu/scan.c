/* cpu/scan.c - the CPU scan backend: every core, at the speed of memory.
 * Fold rules shared with the CUDA kernels: a fold starts from the op's identity (-0.0 for float
 * sums, since -0.0 + x == x for every x, so a sum of -0.0 stays -0.0); float32 accumulates in double
 * and each output is rounded once; a masked-out element reads as MASKED (+0.0 or 1: the scan of
 * where(mask, x, 0)); an exclusive scan's first output, the empty prefix, is EMPTY (+0.0 or 1);
 * integers wrap.
 * Each line folds in order, as the plain-Lua oracle does, with one exception: when a scan has at
 * most LONG_LINES lines of at least LONG_LEN elements, each line is cut into blocks of FOLD_BLOCK
 * elements (counted in walk order) so that the cores share it. Each block's total is folded from the
 * identity (where the line's own elements are contiguous, in LANES lanes: element k of the block into
 * lane k % LANES, the lanes then folded in order), the totals are chained in line order into each
 * block's carry, and each block is scanned from its carry: the same bits whatever the number of
 * threads, since the cut depends on the shape alone.
 * Walks (all forward: a reverse scan starts at the line's end with negated strides):
 *   tiles     lines side by side along an `inner` dim, up to COLUMN_W at a time, one row of them per
 *             step, the inner loop over unit strides so that it vectorises; an operand whose unit
 *             stride runs along the scan instead (rows, a transposed input or output) passes through
 *             a buffer of TILE_ELEMS elements, transposed on the way in or out;
 *   segments  GROUP lines walked together, one element of each per step, so that their folds
 *             overlap: for other strides, and for fewer than NARROW_TILE lines side by side;
 *   narrow    the same for dense slabs of 2-7 and 9-NARROW_MAX lines (a few whole slabs a step, each
 *             line's accumulator in a register) and dense rows shorter than NARROW_ROW (eight a step);
 *   split     long lines in two passes over blocks: a line's blocks side by side as tiles (contiguous
 *             lines), a block of every line side by side (lines side by side), or as segments. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dtypes.h"
#include "internal.h"
#include "scalar.h"
#include "simd.h"

enum {
    GROUP = 8,          /* segments walked together */
    TILE_ELEMS = 16384, /* elements of a transposing buffer: lines x steps */
    ROWS_W = 8,         /* lines of a tile when every operand runs along the scan (long runs per line) */
    MIXED_W = 64,       /* lines of a tile when some operands run along the scan, others across */
    VIA_ROWS_W = 512,   /* the same, x's lines next to each other through a buffer for the rows tiles */
    VIA_PARTS = 8,      /* calls of the rows tiles a buffer, the next buffer's rows asked for between them */
    MIXED_REG_W = 1024, /* the same, through the mixed float tiles (no buffer) */
    COLUMN_W = 2048,    /* widest run of lines walked together through unit strides */
    PREFETCH_ROWS = 8,  /* rows of lines side by side walked at a time, the next ones prefetched */
    FOLD_BLOCK = 4096,  /* block of a split line */
    LONG_LINES = 16,
    LONG_LEN = 1 << 16,
    ROUND_BLOCKS = 512, /* blocks of a split scan's round, a thread's, all lines together */
    LANES = 8,          /* lanes of a block's total when a line's blocks lie side by side */
    INT32_ROW_MIN = 256, /* shortest int32 line summed one at a time in vectors */
    NARROW_TILE = 8,    /* fewest lines side by side walked as a tile (as segments below) */
    NARROW_MAX = 15,    /* most lines of a slab the narrow walk takes */
    NARROW_ROW = 8      /* shortest rows walked as tiles */
};

#define INLINE static inline __attribute__((always_inline))

/* Per-dtype conversion hooks, named by the dtype tokens of the pairs in src/dtypes.h: CPU_IN_<IN>(v)
 * is an input element as the accumulator takes it, CPU_OUT_<OUT>(a) the accumulator stored as an
 * output element (its one rounding). A new storage type adds its two lines here. Integers accumulate
 * unsigned, so that they wrap without undefined behaviour; bool reads as 0/1; float16 and bfloat16
 * elements are their bits here (half.h). */
#define CPU_IN_CS_FLOAT32(v) ((double)(v))
#define CPU_IN_CS_FLOAT16(v) cs_float16_to_double(v)
#define CPU_IN_CS_BFLOAT16(v) cs_bfloat16_to_double(v)
#define CPU_IN_CS_FLOAT64(v) (v)
#define CPU_IN_CS_INT32(v) (v)
#define CPU_IN_CS_INT64(v) (v)
#define CPU_IN_CS_BOOL(v) ((v) != 0)
#define CPU_OUT_CS_FLOAT32(a) ((float)(a))
#define CPU_OUT_CS_FLOAT64(a) (a)
#define CPU_OUT_CS_INT32(a) ((int32_t)(a))
#define CPU_OUT_CS_INT64(a) ((int64_t)(a))
#define CPU_OUT_CS_FLOAT16(a) cs_float16_from_double(a)
#define CPU_OUT_CS_BFLOAT16(a) cs_bfloat16_from_double(a)
#define CPU_OUT_CS_BOOL(a) ((unsigned char)((a) != 0))
#define CPU_ACC_double double
#define CPU_ACC_int32_t uint32_t
#define CPU_ACC_int64_t uint64_t
#define CPU_ACC(T) CPU_ACC_##T
/* a line's initial value (p->initial) at offset off, as the accumulator */
#define CPU_INITIAL_double(p, off) cs_initial_double((p)->initial, off, (p)->initial_dtype)
#define CPU_INITIAL_int32_t(p, off) ((uint32_t)cs_initial_int64((p)->initial, off, (p)->initial_dtype))
#define CPU_INITIAL_int64_t(p, off) ((uint64_t)cs_initial_int64((p)->initial, off, (p)->initial_dtype))

/* keep ? v : other without a branch (a random mask would mispredict one branch in two) */
INLINE double select_double(unsigned char keep, double v, double other)
{
    uint64_t a, b, k = 0 - (uint64_t)(keep != 0);
    memcpy(&a, &v, sizeof a);
    memcpy(&b, &other, sizeof b);
    a = b ^ ((a ^ b) & k);
    memcpy(&v, &a, sizeof v);
    return v;
}
#define CPU_SELECT_double(keep, v, other) select_double(keep, v, other)
#define CPU_SELECT_int32_t(keep, v, other) ((other) ^ (((v) ^ (other)) & (0u - (uint32_t)((keep) != 0))))
#define CPU_SELECT_int64_t(keep, v, other) ((other) ^ (((v) ^ (other)) & (0u - (uint64_t)((keep) != 0))))

#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))

/* How the blocks of a split scan are walked: a block of every line side by side (the lines' unit
 * strides run across them), the blocks of a line side by side (its unit strides run along it), or
 * as segments. */
enum split_walk { SPLIT_NONE, SPLIT_ACROSS, SPLIT_ALONG, SPLIT_SEGMENTS };

/* A scan as the walks see it: lines side by side along `inner` (stride ix) inside `outer`, each
 * walked forward `len` steps of stride sx from its first element in walk order. Operand order: x,
 * mask, out. */
typedef struct walk_layout {
    int64_t len, inner, nouter, nlines;
    int64_t sx[3], ix[3];
    int64_t start[3];           /* offset of the first walked element of line 0 */
    int64_t ii;                 /* stride of the initial values (p->initial) between neighbouring lines */
    cs_iter outer;              /* its strides of operand CS_OPND_INITIAL place the initial values */
    int masked, staged[3];      /* staged: the operand passes through a transposing buffer */
    int tiles;                  /* the tile walk applies (else segments) */
    int64_t tw, tk;             /* tiles: at most tw lines a task, tk steps a tile */
    int split;                  /* long lines cut into blocks, walked as split_walk says */
    int float_tiles;            /* tiles may take cs_cpu_float_tile, with dtype tile_dtype */
    int tile_dtype;
    int stream;                 /* the output is larger than the caches: streaming stores */
    int narrow;                 /* narrow walk: nslabs slabs of narrow (narrow_lines) lines each, every
                                 * operand's slabs dense and slab[o] apart: whole slabs of the
                                 * columns (inner lines, one outer stride apart), or short rows
                                 * (one line a slab, one line stride apart) */
    int64_t slab[3], nslabs;
    int narrow_split;           /* a split scan of one dense slab of 3-7 lines: a few blocks' lines a
                                 * step, each line's accumulator in a register (narrow walk; two lines
                                 * walked slower so than as segments) */
    int via_rows;               /* float tiles: x's lines lie next to each other (out's along the
                                 * scan) and go through a buffer of lines along it, for the rows tiles */
} walk_layout;

static inline void outer_offsets(const cs_iter *it, int64_t idx, int64_t off[3])
{
    off[0] = off[1] = off[2] = 0;
    for (int d = it->ndim - 1; d >= 0; d--) {
        int64_t i = it->ndim == 1 ? idx : idx % it->shape[d];
        idx /= it->shape[d];
        for (int o = 0; o < 3; o++) off[o] += i * it->strides[o][d];
    }
}

/* offsets of line `line`'s first walked element */
static inline void line_start(const walk_layout *w, int64_t line, int64_t off[3])
{
    int64_t o = line / w->inner, c = line % w->inner;
    outer_offsets(&w->outer, o, off);
    for (int k = 0; k < 3; k++) off[k] += w->start[k] + c * w->ix[k];
}

/* offset of line `line`'s initial value */
static inline int64_t initial_offset(const walk_layout *w, int64_t line)
{
    int64_t idx = line / w->inner, off = line % w->inner * w->ii;
    for (int d = w->outer.ndim - 1; d >= 0; d--) {
        off += idx % w->outer.shape[d] * w->outer.strides[CS_OPND_INITIAL][d];
        idx /= w->outer.shape[d];
    }
    return off;
}

/* a pair of float dtypes as cs_cpu_float_tile names it (-1: none) */
static int tile_dtype(cs_dtype in, cs_dtype out)
{
    if (in == CS_FLOAT32 && out == CS_FLOAT64) return CS_TILE_F32_F64;
    if (in != out) return -1;
    return in == CS_FLOAT32 ? CS_TILE_F32 : in == CS_FLOAT64 ? CS_TILE_F64 : in == CS_FLOAT16 ? CS_TILE_F16
         : in == CS_BFLOAT16 ? CS_TILE_BF16 : -1;
}

/* The last-level cache a core sees (an output beyond it is streamed to memory): the reported size,
 * at most 32 MiB, since virtual machines and multi-die parts report the sum over dies that no one
 * core can fill. */
int64_t cs_cpu_cache_bytes(void)
{
    static int64_t bytes;
    if (!bytes) {
        const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
        bytes = l3 > 0 && l3 < (32 << 20) ? l3 : 32 << 20;
    }
    return bytes;
}

/* slabs of this many lines take the narrow walk where dense (eight fill a tile's vector) */
static inline int narrow_lines(int64_t n) { return n > 1 && n <= NARROW_MAX && n != 8; }

static void plan_walk(const cs_scan_plan *p, walk_layout *w)
{
    memset(w, 0, sizeof *w);
    w->len = p->len;
    w->masked = p->mask != NULL;
    w->outer = p->outer;
    for (int o = 0; o < 3; o++) {
        w->sx[o] = p->reverse ? -p->scan_stride[o] : p->scan_stride[o];
        w->start[o] = p->reverse ? (p->len - 1) * p->scan_stride[o] : 0;
    }
    if (p->layout == CS_LAYOUT_COLUMNS) {
        w->inner = p->inner;
        for (int o = 0; o < 3; o++) w->ix[o] = p->inner_stride[o];
        w->ii = p->inner_stride[CS_OPND_INITIAL];
    } else if (w->outer.ndim > 0) {
        /* rows: the innermost outer dim holds the lines side by side */
        const int d = --w->outer.ndim;
        w->inner = w->outer.shape[d];
        for (int o = 0; o < 3; o++) w->ix[o] = w->outer.strides[o][d];
        w->ii = w->outer.strides[CS_OPND_INITIAL][d];
    } else {
        w->inner = 1;
    }
    w->nouter = cs_iter_numel(&w->outer);
    w->nlines = w->nouter * w->inner;
    w->tiles = w->inner > 1;
    int nstaged = 0;
    for (int o = 0; o < 3; o++) {
        if (o == 1 && !w->masked) continue;
        if (w->ix[o] == 1) continue;
        if (w->sx[o] == 1 || w->sx[o] == -1) w->staged[o] = 1, nstaged++;
        else w->tiles = 0;
    }
    /* a few lines side by side make short vectors whose folds wait on one another: walk them as
     * segments, GROUP lines of any slabs at a time, or (dense slabs of up to NARROW_MAX lines, but
     * for eight, a tile's vector) as whole slabs (narrow walk, below); long lines keep their split */
    int dense = !nstaged && w->outer.ndim <= 1;
    for (int o = 0; o < 3; o++)
        if ((o != 1 || w->masked) && (w->ix[o] != 1 || w->sx[o] != w->sx[0] || (w->sx[o] != w->inner && w->sx[o] != -w->inner)))
            dense = 0;
    const int long_split = w->nlines <= LONG_LINES && w->len >= LONG_LEN;
    if (!nstaged && (w->inner < NARROW_TILE || (dense && !long_split && narrow_lines(w->inner)))) w->tiles = 0;
    w->tw = !nstaged ? COLUMN_W : w->staged[0] && w->staged[2] ? ROWS_W : MIXED_W;
    w->tk = nstaged ? TILE_ELEMS / w->tw : PREFETCH_ROWS;
    w->tile_dtype = tile_dtype(p->in_dtype, p->out_dtype);
    w->float_tiles = w->tile_dtype >= 0 && (p->op == CS_SCAN_SUM || p->op == CS_SCAN_PROD);
    if (w->nlines <= LONG_LINES && w->len >= LONG_LEN) {
        int along = 1;
        for (int o = 0; o < 3; o++)
            if ((o != 1 || w->masked) && w->sx[o] != 1 && w->sx[o] != -1) along = 0;
        if (w->tiles && !nstaged && w->nouter == 1) w->split = SPLIT_ACROSS;
        else if (along) {
            w->split = SPLIT_ALONG;
            for (int o = 0; o < 3; o++) w->staged[o] = o != 1 || w->masked;
            w->tk = TILE_ELEMS / ROWS_W;
        } else w->split = SPLIT_SEGMENTS;
        w->tiles = 0;
    }
    /* float tiles take rows (every operand along the scan, all the same way) and columns (every
     * operand's lines next to each other) */
    int rows = 1, cols = 1;
    for (int o = 0; o < 3; o++) {
        if (o == 1 && !w->masked) continue;
        if (!w->staged[o] || w->sx[o] != w->sx[0]) rows = 0;
        if (w->staged[o] || w->ix[o] != 1) cols = 0;
    }
    /* mixed (float32, which the tiles say): x along the scan and out next to each other, or the
     * other way round */
    int mixed = w->staged[0] != w->staged[2] && w->ix[w->staged[0] ? 2 : 0] == 1;
    if (w->masked && (w->staged[1] != w->staged[0] || (!w->staged[1] && w->ix[1] != 1))) mixed = 0;
    if (w->split == SPLIT_SEGMENTS || (!w->split && !w->tiles)) rows = cols = 0;
    if (w->split || !w->tiles) mixed = 0;
    if (w->float_tiles) {
        rows = rows && cs_cpu_float_tiles_have(CS_TILES_ROWS, w->tile_dtype);
        cols = cols && cs_cpu_float_tiles_have(CS_TILES_COLS, w->tile_dtype);
        /* x's lines next to each other and out's along the scan: x through a buffer of lines along
         * the scan, for the rows tiles (4- and 8-byte elements, which the transposes move in
         * blocks); the other way round, the mixed tiles */
        w->via_rows = mixed && !w->staged[0] && cs_cpu_float_tiles_have(CS_TILES_ROWS, w->tile_dtype) &&
                      (w->tile_dtype == CS_TILE_F32 || w->tile_dtype == CS_TILE_F64 || w->tile_dtype == CS_TILE_F32_F64);
        mixed = mixed && w->staged[0] && cs_cpu_float_tiles_have(CS_TILES_MIXED, w->tile_dtype);
    }
    w->float_tiles = w->float_tiles && (rows || cols || mixed || w->via_rows);
    /* the mixed tiles transpose in registers, without a buffer: more lines a tile, so that each of
     * the rows on the other side is a longer run */
    if (w->float_tiles && mixed) w->tw = MIXED_REG_W;
    /* x through a buffer for the rows: wide tiles, so that each of x's rows brings a longer run of
     * lines side by side (a few cache lines of each row in turn are read far slower than memory runs).
     * A task takes the widest run of lines and walks each block of steps across all of them, a
     * buffer's worth (VIA_ROWS_W lines) at a time, so that x is read in runs of the whole task's
     * width, row after row */
    if (w->float_tiles && w->via_rows) {
        w->tw = COLUMN_W;
        w->tk = TILE_ELEMS / VIA_ROWS_W;
    }
    /* short rows: as many lines a tile as a buffer's worth, so that a tile's fixed costs spread
     * over more elements */
    if (w->float_tiles && rows && !w->split && w->len < TILE_ELEMS / ROWS_W) {
        const int64_t lines = TILE_ELEMS / w->len / ROWS_W * ROWS_W;
        w->tw = lines < COLUMN_W ? lines : COLUMN_W;
        w->tk = TILE_ELEMS / w->tw;
    }
    w->stream = w->nlines * w->len * (int64_t)cs_dtype_size(p->out_dtype) >= cs_cpu_cache_bytes();
    /* dense slabs of a few lines (the tiles left them above), and short rows: walked a few slabs at
     * a time through fixed offsets (narrow walk) */
    w->narrow_split = dense && w->split == SPLIT_SEGMENTS && w->nouter == 1 && w->inner > 2 && w->inner < NARROW_TILE;
    if (dense && !w->split && narrow_lines(w->inner)) {
        w->narrow = (int)w->inner;
        w->nslabs = w->nouter;
        for (int o = 0; o < 3; o++) w->slab[o] = w->outer.ndim ? w->outer.strides[o][0] : 0;
    } else if (!w->split && w->len < NARROW_ROW && w->outer.ndim == 0) {
        w->narrow = 1;   /* one line a slab */
        w->nslabs = w->nlines;
        for (int o = 0; o < 3; o++) {
            if (o == 1 && !w->masked) continue;
            w->slab[o] = w->ix[o];
            if ((w->sx[o] != 1 && w->sx[o] != -1) || w->sx[o] != w->sx[0] || w->ix[o] != w->ix[0]) w->narrow = 0;
        }
    }
}

/* lines [*l0, *l1) of this thread's even share of n */
static inline void thread_share(int64_t n, int64_t *l0, int64_t *l1)
{
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    *l0 = n * t / nt;
    *l1 = n * (t + 1) / nt;
}

/* lines walked together by one tile task: as wide as allowed, narrower when that leaves cores idle */
static int64_t tile_width(const walk_layout *w, int64_t widest)
{
    const int64_t want = omp_get_max_threads();
    int64_t width = widest;
    if (w->nouter < want) {
        const int64_t per = (w->inner * w->nouter + want - 1) / want;
        width = (per + 15) / 16 * 16;
        if (width > widest) width = widest;
    }
    return width;
}

/* A tile of nc lines (stride ix apart) by kn steps (stride step = +-1) into a buffer of nc-wide
 * rows, one per step; and a buffer back out. */
static inline void stage_in(const void *src, int64_t ix, int64_t step, void *buf, int64_t nc, int64_t kn, size_t size)
{
    if (step == 1) cs_cpu_transpose(src, ix, buf, nc, nc, kn, size);
    else cs_cpu_transpose((const char *)src - (kn - 1) * (int64_t)size, ix, (char *)buf + (kn - 1) * nc * (int64_t)size,
                   -nc, nc, kn, size);
}

static inline void stage_out(const void *buf, void *dst, int64_t ix, int64_t step, int64_t nc, int64_t kn, size_t size)
{
    if (step == 1) cs_cpu_transpose(buf, nc, dst, ix, kn, nc, size);
    else cs_cpu_transpose((const char *)buf + (kn - 1) * nc * (int64_t)size, -nc, (char *)dst - (kn - 1) * (int64_t)size,
                   ix, kn, nc, size);
}

/* A tile of nc lines next to each other (kn steps, `step` apart) into a buffer of lines of kn
 * elements along the scan, running the way dir (+-1) says; returns line 0's first walked element
 * there. */
static inline const void *lines_in(const void *src, int64_t step, void *buf, int64_t nc, int64_t kn, int64_t dir,
                                   size_t size)
{
    if (dir > 0) {
        cs_cpu_transpose(src, step, buf, kn, kn, nc, size);
        return buf;
    }
    cs_cpu_transpose((const char *)src + (kn - 1) * step * (int64_t)size, -step, buf, kn, kn, nc, size);
    return (const char *)buf + (kn - 1) * (int64_t)size;
}

/* Rows [r0, r1) of `bytes` bytes each from base, row_bytes apart, asked of the caches (L2 only:
 * rows read after other work, not next). Addresses as integers: the rows may lie past the tensor,
 * where a prefetch is harmless. */
static inline void prefetch_span(const void *base, int64_t row_bytes, int64_t r0, int64_t r1, int64_t bytes, int write,
                                 int l2_only)
{
    for (int64_t r = r0; r < r1; r++)
        for (int64_t b = 0; b < bytes; b += 64) {
            const void *at = (const void *)((uintptr_t)base + (uintptr_t)(r * row_bytes + b));
            if (l2_only) __builtin_prefetch(at, 0, 2);
            else if (write) __builtin_prefetch(at, 1);
            else __builtin_prefetch(at, 0);
        }
}

/* The nrows rows after the nrows from `now`, so that each row's first lines are on their way before
 * it is walked (a row of a few KiB and the jump to the next defeat the hardware's stream detection) */
static inline void prefetch_rows(const void *now, int64_t row_bytes, int64_t nrows, int64_t bytes, int write)
{
    prefetch_span(now, row_bytes, nrows, 2 * nrows, bytes, write, 0);
}

/* A segment of a line: its first walked element (x, mask, out) and whether that starts the line. */
typedef struct segment {
    int64_t off[3];
    int first;
} segment;

/* n steps of nc lines side by side (rows of stride xr, mr, yr), the loop of tile_g and tile_a: two
 * rows a pass, so that each line's accumulator is loaded and stored once for both */
#define TILE_STEP_VALUE(NAME, IN, ACC_T, MASKED, V, ROW)                                                \
    NAME##_acc V = (NAME##_acc)CPU_IN_##IN(x[(ROW) * xr + c]);                                          \
    if (masked) V = CPU_SELECT_##ACC_T(m[(ROW) * mr + c], V, (NAME##_acc)(MASKED));
#define TILE_STEPS(NAME, IN, OUT, ACC_T, MASKED, OP)                                                    \
    int64_t k = 0;                                                                                      \
    for (; k + 1 < n; k += 2)                                                                           \
        for (int64_t c = 0; c < nc; c++) {                                                              \
            TILE_STEP_VALUE(NAME, IN, ACC_T, MASKED, v0, k)                                             \
            TILE_STEP_VALUE(NAME, IN, ACC_T, MASKED, v1, k + 1)                                         \
            NAME##_acc n0 = OP(acc[c], v0), n1 = OP(n0, v1);                                            \
            y[k * yr + c] = CPU_OUT_##OUT(excl ? acc[c] : n0);                                          \
            y[(k + 1) * yr + c] = CPU_OUT_##OUT(excl ? n0 : n1);                                        \
            acc[c] = n1;                                                                                \
        }                                                                                               \
    for (; k < n; k++)                                                                                  \
        for (int64_t c = 0; c < nc; c++) {                                                              \
            TILE_STEP_VALUE(NAME, IN, ACC_T, MASKED, v0, k)                                             \
            NAME##_acc next = OP(acc[c], v0);                                                           \
            y[k * yr + c] = CPU_OUT_##OUT(excl ? acc[c] : next);                                        \
            acc[c] = next;                                                                              \
        }

/* One kernel set per (input, accumulator, output, op):
 *   walk_g, walk  g segments of n steps together from acc[] (write = 0: totals only);
 *   tile_g, tiles nc lines side by side through unit strides (rows of stride xr, mr, yr);
 *   blocks        the blocks [b0, b1) of every line of a split scan: totals, or scans from carries;
 *   split, run    a split scan; the whole scan. */
#define DEFINE_CPU_SCAN(NAME, IN, OUT, IN_T, ACC_T, OUT_T, IDENT, MASKED, EMPTY, OP)                           \
    typedef CPU_ACC(ACC_T) NAME##_acc;                                                                     \
    INLINE void NAME##_walk_g(const IN_T *x, const unsigned char *m, OUT_T *y, const segment *s, const int g, \
                              int64_t n, const int64_t *st, NAME##_acc *acc, const int masked,              \
                              const int excl, const int write)                                             \
    {                                                                                                      \
        NAME##_acc a[GROUP];                                                                               \
        const int64_t sx = st[0], sm = st[1], so = st[2];                                                  \
        for (int j = 0; j < g; j++) a[j] = acc[j];                                                         \
        for (int64_t k = 0; k < n; k++) {                                                                  \
            for (int j = 0; j < g; j++) {                                                                  \
                NAME##_acc v = (NAME##_acc)CPU_IN_##IN(x[s[j].off[0] + k * sx]);                          \
                if (masked) v = CPU_SELECT_##ACC_T(m[s[j].off[1] + k * sm], v, (NAME##_acc)(MASKED));      \
                NAME##_acc next = OP(a[j], v);                                                             \
                if (write) y[s[j].off[2] + k * so] = CPU_OUT_##OUT(excl ? a[j] : next);                    \
                a[j] = next;                                                                               \
            }                                                                                              \
        }                                                                                                  \
        for (int j = 0; j < g; j++) acc[j] = a[j];                                                         \
    }                                                                                                      \
    VECTOR_KERNEL static void NAME##_walk(const cs_scan_plan *p, const segment *s, int g, int64_t n, const int64_t *st,   \
                            NAME##_acc *acc, int write)                                                    \
    {                                                                                                      \
        const IN_T *x = p->x;                                                                              \
        const unsigned char *m = p->mask;                                                                  \
        OUT_T *y = p->out;                                                                                 \
        const int excl = p->exclusive;                                                                     \
        if (g != GROUP) NAME##_walk_g(x, m, y, s, g, n, st, acc, m != 0, excl, write);                     \
        else if (!write && !m) NAME##_walk_g(x, m, y, s, GROUP, n, st, acc, 0, 0, 0);                      \
        else if (!write) NAME##_walk_g(x, m, y, s, GROUP, n, st, acc, 1, 0, 0);                            \
        else if (!m && !excl) NAME##_walk_g(x, m, y, s, GROUP, n, st, acc, 0, 0, 1);                       \
        else if (!m) NAME##_walk_g(x, m, y, s, GROUP, n, st, acc, 0, 1, 1);                                \
        else if (!excl) NAME##_walk_g(x, m, y, s, GROUP, n, st, acc, 1, 0, 1);                             \
        else NAME##_walk_g(x, m, y, s, GROUP, n, st, acc, 1, 1, 1);                                        \
        if (write && excl && !p->initial) /* with initial values the first output is the line's own */    \
            for (int j = 0; j < g; j++)                                                                    \
                if (s[j].first) y[s[j].off[2]] = CPU_OUT_##OUT((NAME##_acc)(EMPTY));                       \
    }                                                                                                      \
    INLINE void NAME##_tile_g(const IN_T *restrict x, int64_t xr, const unsigned char *m, int64_t mr,       \
                              OUT_T *restrict y,                                                           \
                              int64_t yr, int64_t nc, int64_t n, NAME##_acc *acc, const int masked,         \
                              const int excl)                                                              \
    {                                                                                                      \
        TILE_STEPS(NAME, IN, OUT, ACC_T, MASKED, OP);                                                      \
    }                                                                                                      \
    /* ROWS_W lines: loads, folds and stores in three loops, each of which vectorises whole */           \
    INLINE void NAME##_tile8(const IN_T *restrict x, int64_t xr, const unsigned char *m, int64_t mr,        \
                             OUT_T *restrict y, int64_t yr, int64_t n, NAME##_acc *acc, const int masked,   \
                             const int excl)                                                               \
    {                                                                                                      \
        NAME##_acc a[ROWS_W];                                                                              \
        for (int c = 0; c < ROWS_W; c++) a[c] = acc[c];                                                    \
        for (int64_t k = 0; k < n; k++) {                                                                  \
            NAME##_acc v[ROWS_W], o[ROWS_W];                                                               \
            for (int c = 0; c < ROWS_W; c++) {                                                             \
                v[c] = (NAME##_acc)CPU_IN_##IN(x[k * xr + c]);                                            \
                if (masked) v[c] = CPU_SELECT_##ACC_T(m[k * mr + c], v[c], (NAME##_acc)(MASKED));          \
            }                                                                                              \
            for (int c = 0; c < ROWS_W; c++) {                                                             \
                NAME##_acc next = OP(a[c], v[c]);                                                          \
                o[c] = excl ? a[c] : next;                                                                 \
                a[c] = next;                                                                               \
            }                                                                                              \
            for (int c = 0; c < ROWS_W; c++) y[k * yr + c] = CPU_OUT_##OUT(o[c]);                          \
        }                                                                                                  \
        for (int c = 0; c < ROWS_W; c++) acc[c] = a[c];                                                    \
    }                                                                                                      \
    /* x and out the same memory (in place): element c of a row is read before it is written */          \
    INLINE void NAME##_tile_a(const IN_T *x, int64_t xr, const unsigned char *m, int64_t mr, OUT_T *y,      \
                              int64_t yr, int64_t nc, int64_t n, NAME##_acc *acc, int masked, int excl)     \
    {                                                                                                      \
        TILE_STEPS(NAME, IN, OUT, ACC_T, MASKED, OP);                                                      \
    }                                                                                                      \
    /* the flags as constants, so that each variant compiles without tests in its loop */                \
    INLINE void NAME##_tile_w(const IN_T *x, int64_t xr, const unsigned char *m, int64_t mr, OUT_T *y,      \
                              int64_t yr, int64_t nc, int64_t n, NAME##_acc *acc, int masked, int excl)     \
    {                                                                                                      \
        if (!masked && !excl) NAME##_tile_g(x, xr, m, mr, y, yr, nc, n, acc, 0, 0);                        \
        else if (!masked) NAME##_tile_g(x, xr, m, mr, y, yr, nc, n, acc, 0, 1);                            \
        else if (!excl) NAME##_tile_g(x, xr, m, mr, y, yr, nc, n, acc, 1, 0);                              \
        else NAME##_tile_g(x, xr, m, mr, y, yr, nc, n, acc, 1, 1);                                         \
    }                                                                                                      \
    /* the lines' totals alone: no output */                                                             \
    INLINE void NAME##_fold_g(const IN_T *x, int64_t xr, const unsigned char *m, int64_t mr, int64_t nc,     \
                              int64_t n, NAME##_acc *acc, const int masked)                                \
    {                                                                                                      \
        for (int64_t k = 0; k < n; k++)                                                                    \
            for (int64_t c = 0; c < nc; c++) {                                                             \
                NAME##_acc v = (NAME##_acc)CPU_IN_##IN(x[k * xr + c]);                                    \
                if (masked) v = CPU_SELECT_##ACC_T(m[k * mr + c], v, (NAME##_acc)(MASKED));                \
                acc[c] = OP(acc[c], v);                                                                    \
            }                                                                                              \
    }                                                                                                      \
    INLINE void NAME##_fold8(const IN_T *x, int64_t xr, const unsigned char *m, int64_t mr, int64_t n,      \
                             NAME##_acc *acc, const int masked)                                            \
    {                                                                                                      \
        NAME##_acc a[ROWS_W];                                                                              \
        for (int c = 0; c < ROWS_W; c++) a[c] = acc[c];                                                    \
        for (int64_t k = 0; k < n; k++) {                                                                  \
            NAME##_acc v[ROWS_W];                                                                          \
            for (int c = 0; c < ROWS_W; c++) {                                                             \
                v[c] = (NAME##_acc)CPU_IN_##IN(x[k * xr + c]);                                            \
                if (masked) v[c] = CPU_SELECT_##ACC_T(m[k * mr + c], v[c], (NAME##_acc)(MASKED));          \
            }                                                                                              \
            for (int c = 0; c < ROWS_W; c++) a[c] = OP(a[c], v[c]);                                        \
        }                                                                                                  \
        for (int c = 0; c < ROWS_W; c++) acc[c] = a[c];                                                    \
    }                                                                                                      \
    INLINE void NAME##_fold_w(const IN_T *x, int64_t xr, const unsigned char *m, int64_t mr, int64_t nc,     \
                              int64_t n, NAME##_acc *acc, int masked)                                      \
    {                                                                                                      \
        if (nc == ROWS_W && masked) NAME##_fold8(x, xr, m, mr, n, acc, 1);                                 \
        else if (nc == ROWS_W) NAME##_fold8(x, xr, m, mr, n, acc, 0);                                      \
        else if (masked) NAME##_fold_g(x, xr, m, mr, nc, n, acc, 1);                                       \
        else NAME##_fold_g(x, xr, m, mr, nc, n, acc, 0);                                                   \
    }                                                                                                      \
    /* nc lines from line (o, c0), tk steps at a time. init: the lines' carries (NULL: the identity, or   \
     * the initial values when scanning);                                                                \
     * totals: fold only, into totals[]; first: lines [0, first) start here (an exclusive scan's empty prefix) */ \
    VECTOR_KERNEL static void NAME##_tiles(const cs_scan_plan *p, const walk_layout *w, int64_t o, int64_t c0, \
                                           int64_t nc, const NAME##_acc *init, NAME##_acc *totals, int64_t first) \
    {                                                                                                      \
        IN_T xb[TILE_ELEMS];                                                                               \
        unsigned char mb[TILE_ELEMS];                                                                      \
        OUT_T yb[TILE_ELEMS];                                                                              \
        NAME##_acc acc[COLUMN_W];                                                                          \
        int64_t base[3];                                                                                   \
        outer_offsets(&w->outer, o, base);                                                                 \
        for (int k = 0; k < 3; k++) base[k] += w->start[k] + c0 * w->ix[k];                                \
        const IN_T *x = (const IN_T *)p->x + base[0];                                                      \
        const unsigned char *m = w->masked ? p->mask + base[1] : 0;                                        \
        OUT_T *y = (OUT_T *)p->out + base[2];                                                              \
        const int masked = w->masked, excl = p->exclusive;                                                 \
        for (int64_t c = 0; c < nc; c++)                                                                   \
            acc[c] = init ? init[c] : p->initial && !totals                                                \
                ? CPU_INITIAL_##ACC_T(p, initial_offset(w, o * w->inner + c0 + c)) : (NAME##_acc)(IDENT);  \
        /* steps a pass: narrow lines side by side take as many rows as a buffer's worth, a run that   \
         * the hardware streams on its own */                                                          \
        const int64_t staged = w->staged[0] || w->staged[1] || w->staged[2];                               \
        const int64_t tk = !staged && nc * w->tk < TILE_ELEMS ? TILE_ELEMS / nc : w->tk;                  \
        for (int64_t k0 = 0; k0 < w->len; k0 += tk) {                                                      \
            const int64_t kn = w->len - k0 < tk ? w->len - k0 : tk;                                        \
            const IN_T *xt = x + k0 * w->sx[0];                                                            \
            const unsigned char *mt = m ? m + k0 * w->sx[1] : 0;                                           \
            OUT_T *yt = y + k0 * w->sx[2];                                                                 \
            int64_t xr = w->sx[0], mr = w->sx[1];                                                          \
            if (w->via_rows) { /* x's lines through a buffer, VIA_ROWS_W at a time; out's as they are */ \
                const int64_t dir = w->sx[2]; /* the way out's lines run */                                \
                for (int64_t c = 0; c < nc; c += VIA_ROWS_W) {                                             \
                    const int64_t cn = nc - c < VIA_ROWS_W ? nc - c : VIA_ROWS_W;                          \
                    const void *xl = lines_in(xt + c * w->ix[0], xr, xb, cn, kn, dir, sizeof *xb);         \
                    const unsigned char *ml = masked ? lines_in(mt + c * w->ix[1], mr, mb, cn, kn, dir, 1) : NULL; \
                    /* the next buffer's rows of x: these lines' next steps, or the next lines' (not    \
                     * where masked: those tiles are bound by their arithmetic, not by memory) */       \
                    int64_t nk = k0, nl = c + VIA_ROWS_W;                                                  \
                    if (nl >= nc) nk = k0 + tk, nl = 0;                                                    \
                    const int64_t nkn = nk < w->len && !masked ? (w->len - nk < tk ? w->len - nk : tk) : 0; \
                    const int64_t nln = nc - nl < VIA_ROWS_W ? nc - nl : VIA_ROWS_W;                       \
                    /* the rows tile in parts, each after a share of those rows is asked for, so that    \
                     * memory reads them while the tile computes and stores */                          \
                    const int64_t pl = (cn + VIA_PARTS * 8 - 1) / (VIA_PARTS * 8) * 8;                     \
                    for (int64_t l = 0, q = 0; l < cn; l += pl, q++) {                                     \
                        const int64_t ln = cn - l < pl ? cn - l : pl;                                      \
                        const int64_t r0 = nkn * q / VIA_PARTS, r1 = l + ln < cn ? nkn * (q + 1) / VIA_PARTS : nkn; \
                        prefetch_span(x + nl * w->ix[0], w->sx[0] * (int64_t)sizeof *x, nk + r0, nk + r1, nln * (int64_t)sizeof *x, 0, 1); \
                        const int64_t e = excl && k0 == 0 && !p->initial ? first - c - l : 0;              \
                        const cs_float_tile ft = { (const IN_T *)xl + l * kn, ml ? ml + l * kn : NULL,     \
                                                   yt + (c + l) * w->ix[2], kn, kn, w->ix[2], dir, dir, dir, ln, kn, \
                                                   e < 0 ? 0 : e < ln ? e : ln, w->tile_dtype,             \
                                                   p->op == CS_SCAN_PROD, excl, w->stream };               \
                        cs_cpu_float_tile(&ft, (double *)(void *)(acc + c + l));                           \
                    }                                                                                      \
                }                                                                                          \
                continue;                                                                                  \
            }                                                                                              \
            if (w->float_tiles) { /* in registers, where it can */                                         \
                const cs_float_tile ft = { xt, mt, totals ? NULL : yt, w->ix[0], w->ix[1], w->ix[2], xr, mr, w->sx[2], nc, kn, \
                                           excl && k0 == 0 && !p->initial ? (first < nc ? first : nc) : 0, \
                                           w->tile_dtype, p->op == CS_SCAN_PROD, excl, w->stream };                  \
                if (!w->staged[0]) prefetch_rows(xt, xr * (int64_t)sizeof *xt, kn, nc * (int64_t)sizeof *xt, 0); \
                if (cs_cpu_float_tile(&ft, (double *)(void *)acc)) continue;                               \
            }                                                                                              \
            if (w->staged[0]) {                                                                            \
                stage_in(xt, w->ix[0], xr, xb, nc, kn, sizeof *xb);                                        \
                xt = xb;                                                                                   \
                xr = nc;                                                                                   \
            }                                                                                              \
            if (masked && w->staged[1]) {                                                                  \
                stage_in(mt, w->ix[1], mr, mb, nc, kn, 1);                                                 \
                mt = mb;                                                                                   \
                mr = nc;                                                                                   \
            }                                                                                              \
            if (totals) {                                                                                  \
                NAME##_fold_w(xt, xr, mt, mr, nc, kn, acc, masked);                                        \
                continue;                                                                                  \
            }                                                                                              \
            OUT_T *yw = w->staged[2] ? yb : yt;                                                            \
            const int64_t yr = w->staged[2] ? nc : w->sx[2];                                               \
            if (!w->staged[0]) prefetch_rows(xt, xr * (int64_t)sizeof *xt, kn, nc * (int64_t)sizeof *xt, 0); \
            if (!w->staged[2]) prefetch_rows(yt, yr * (int64_t)sizeof *yt, kn, nc * (int64_t)sizeof *yt, 1); \
            if (w->staged[0] || w->staged[2] || p->x != p->out) { /* a buffer, or not in place */        \
                if (nc == ROWS_W && !masked && !excl) NAME##_tile8(xt, xr, mt, mr, yw, yr, kn, acc, 0, 0);   \
                else if (nc == ROWS_W && !masked) NAME##_tile8(xt, xr, mt, mr, yw, yr, kn, acc, 0, 1);      \
                else if (nc == ROWS_W && !excl) NAME##_tile8(xt, xr, mt, mr, yw, yr, kn, acc, 1, 0);        \
                else if (nc == ROWS_W) NAME##_tile8(xt, xr, mt, mr, yw, yr, kn, acc, 1, 1);                 \
                else if (nc == MIXED_W) NAME##_tile_w(xt, xr, mt, mr, yw, yr, MIXED_W, kn, acc, masked, excl); \
                else NAME##_tile_w(xt, xr, mt, mr, yw, yr, nc, kn, acc, masked, excl);                     \
            } else {                                                                                       \
                NAME##_tile_a(xt, xr, mt, mr, yw, yr, nc, kn, acc, masked, excl);                          \
            }                                                                                              \
            if (excl && k0 == 0 && !p->initial)                                                            \
                for (int64_t c = 0; c < first && c < nc; c++) yw[c] = CPU_OUT_##OUT((NAME##_acc)(EMPTY)); \
            if (w->staged[2]) stage_out(yb, yt, w->ix[2], w->sx[2], nc, kn, sizeof *yb);                   \
        }                                                                                                  \
        if (totals)                                                                                        \
            for (int64_t c = 0; c < nc; c++) totals[c] = acc[c];                                           \
    }                                                                                                      \
    /* The total of the n elements from o (x, mask) walked with steps st of +-1, in LANES lanes: element   \
     * k into lane k % LANES, the lanes then folded in order (so that the loads vectorise) */            \
    INLINE NAME##_acc NAME##_lanes(const IN_T *x, const unsigned char *m, int64_t n, const int64_t sx,        \
                                   const int64_t sm, const int masked)                                     \
    {                                                                                                      \
        NAME##_acc lane[LANES], total = (NAME##_acc)(IDENT);                                               \
        for (int j = 0; j < LANES; j++) lane[j] = (NAME##_acc)(IDENT);                                     \
        int64_t k = 0;                                                                                     \
        for (; k + LANES <= n; k += LANES)                                                                 \
            for (int j = 0; j < LANES; j++) {                                                              \
                NAME##_acc v = (NAME##_acc)CPU_IN_##IN(x[(k + j) * sx]);                                  \
                if (masked) v = CPU_SELECT_##ACC_T(m[(k + j) * sm], v, (NAME##_acc)(MASKED));              \
                lane[j] = OP(lane[j], v);                                                                  \
            }                                                                                              \
        for (; k < n; k++) {                                                                               \
            NAME##_acc v = (NAME##_acc)CPU_IN_##IN(x[k * sx]);                                            \
            if (masked) v = CPU_SELECT_##ACC_T(m[k * sm], v, (NAME##_acc)(MASKED));                        \
            lane[k % LANES] = OP(lane[k % LANES], v);                                                      \
        }                                                                                                  \
        for (int j = 0; j < LANES; j++) total = OP(total, lane[j]);                                        \
        return total;                                                                                      \
    }                                                                                                      \
    VECTOR_KERNEL static NAME##_acc NAME##_lane_total(const cs_scan_plan *p, const int64_t *o, const int64_t *st, \
                                                      int64_t n)                                           \
    {                                                                                                      \
        const IN_T *x = (const IN_T *)p->x + o[0];                                                         \
        const unsigned char *m = p->mask ? p->mask + o[1] : 0;                                             \
        if (st[0] == 1 && (!m || st[1] == 1)) return m ? NAME##_lanes(x, m, n, 1, 1, 1) : NAME##_lanes(x, m, n, 1, 1, 0); \
        if (st[0] == -1 && (!m || st[1] == -1))                                                            \
            return m ? NAME##_lanes(x, m, n, -1, -1, 1) : NAME##_lanes(x, m, n, -1, -1, 0);                \
        return m ? NAME##_lanes(x, m, n, st[0], st[1], 1) : NAME##_lanes(x, m, n, st[0], st[1], 0);        \
    }                                                                                                      \
    /* float inputs: nb blocks' totals, n elements each from o (steps st), in vectors with the same folds; \
     * 0 where not (a masked-out element reads as MASKED, 1 for products alone) */                         \
    INLINE int NAME##_float_lanes(const cs_scan_plan *p, const int64_t *o, const int64_t *st, int64_t n,   \
                                  int64_t nb, NAME##_acc *acc)                                             \
    {                                                                                                      \
        double t[GROUP];                                                                                   \
        if ((IN != CS_FLOAT32 && IN != CS_FLOAT64) || (st[0] != 1 && st[0] != -1) || (p->mask && st[1] != st[0]) || \
            !cs_cpu_float_lanes(IN == CS_FLOAT32 ? CS_TILE_F32 : CS_TILE_F64, (const IN_T *)p->x + o[0],   \
                                p->mask ? p->mask + o[1] : NULL, n, nb, FOLD_BLOCK, (int)st[0], (MASKED) == 1, t)) \
            return 0;                                                                                      \
        for (int64_t j = 0; j < nb; j++) acc[j] = (NAME##_acc)t[j];                                        \
        return 1;                                                                                          \
    }                                                                                                      \
    /* G runs of P neighbouring lines each, n steps of stride st from the offsets bx / bm / by, walked  \
     * together: each line in order from its accumulator in a (and left there), its outputs stored    \
     * when write (G and P constants where inlined, so that the G * P accumulators stay in registers) */ \
    INLINE void NAME##_narrow_run(const cs_scan_plan *p, const int64_t *bx, const int64_t *bm,            \
                                  const int64_t *by, int64_t st, int64_t n, const int G, const int P,     \
                                  NAME##_acc *a, int write)                                               \
    {                                                                                                      \
        const IN_T *x = p->x;                                                                              \
        const unsigned char *m = p->mask;                                                                  \
        OUT_T *y = p->out;                                                                                 \
        const int masked = m != 0, excl = p->exclusive;                                                    \
        for (int64_t k = 0; k < n; k++)                                                                    \
            for (int s = 0; s < G; s++)                                                                    \
                for (int c = 0; c < P; c++) {                                                              \
                    NAME##_acc v = (NAME##_acc)CPU_IN_##IN(x[bx[s] + k * st + c]);                        \
                    if (masked) v = CPU_SELECT_##ACC_T(m[bm[s] + k * st + c], v, (NAME##_acc)(MASKED));    \
                    const NAME##_acc next = OP(a[s * P + c], v);                                           \
                    if (write) y[by[s] + k * st + c] = CPU_OUT_##OUT(excl ? a[s * P + c] : next);          \
                    a[s * P + c] = next;                                                                   \
                }                                                                                          \
    }                                                                                                      \
    /* an exclusive scan without initial values: the first outputs of the G runs that start their      \
     * lines (at by) are the empty prefix */                                                           \
    INLINE void NAME##_narrow_first(const cs_scan_plan *p, const int64_t *by, const int G, const int P)  \
    {                                                                                                      \
        if (!p->exclusive || p->initial) return;                                                           \
        for (int s = 0; s < G; s++)                                                                        \
            for (int c = 0; c < P; c++) ((OUT_T *)p->out)[by[s] + c] = CPU_OUT_##OUT((NAME##_acc)(EMPTY));  \
    }                                                                                                      \
    /* G slabs from slab o of P lines each (narrow walk), walked together from their initial values */  \
    INLINE void NAME##_narrow_g(const cs_scan_plan *p, const walk_layout *w, int64_t o, const int G,     \
                                const int P)                                                              \
    {                                                                                                      \
        const int masked = p->mask != 0;                                                                   \
        NAME##_acc a[NARROW_MAX];                                                                          \
        int64_t bx[NARROW_MAX], bm[NARROW_MAX], by[NARROW_MAX];                                            \
        for (int s = 0; s < G; s++) {                                                                      \
            bx[s] = w->start[0] + (o + s) * w->slab[0];                                                    \
            bm[s] = masked ? w->start[1] + (o + s) * w->slab[1] : 0;                                       \
            by[s] = w->start[2] + (o + s) * w->slab[2];                                                    \
            for (int c = 0; c < P; c++)                                                                    \
                a[s * P + c] = p->initial ? CPU_INITIAL_##ACC_T(p, initial_offset(w, (o + s) * P + c))      \
                                          : (NAME##_acc)(IDENT);                                           \
        }                                                                                                  \
        NAME##_narrow_run(p, bx, bm, by, w->sx[0], w->len, G, P, a, 1);                                    \
        NAME##_narrow_first(p, by, G, P);                                                                  \
    }                                                                                                      \
    /* slabs [o0, o1): about eight lines a step (8 / P slabs), the last slabs one at a time */          \
    INLINE void NAME##_narrow_p(const cs_scan_plan *p, const walk_layout *w, int64_t o0, int64_t o1,      \
                                const int P)                                                              \
    {                                                                                                      \
        const int G = P < NARROW_TILE ? NARROW_TILE / P : 1;                                               \
        int64_t o = o0;                                                                                    \
        for (; o + G <= o1; o += G) NAME##_narrow_g(p, w, o, G, P);                                        \
        for (; o < o1; o++) NAME##_narrow_g(p, w, o, 1, P);                                                \
    }                                                                                                      \
    VECTOR_KERNEL static void NAME##_narrow(const cs_scan_plan *p, const walk_layout *w, int64_t o0,       \
                                            int64_t o1)                                                    \
    {                                                                                                      \
        switch (w->narrow) {                                                                               \
        case 1: NAME##_narrow_p(p, w, o0, o1, 1); break;                                                   \
        case 2: NAME##_narrow_p(p, w, o0, o1, 2); break;                                                   \
        case 3: NAME##_narrow_p(p, w, o0, o1, 3); break;                                                   \
        case 4: NAME##_narrow_p(p, w, o0, o1, 4); break;                                                   \
        case 5: NAME##_narrow_p(p, w, o0, o1, 5); break;                                                   \
        case 6: NAME##_narrow_p(p, w, o0, o1, 6); break;                                                   \
        case 7: NAME##_narrow_p(p, w, o0, o1, 7); break;                                                   \
        case 9: NAME##_narrow_p(p, w, o0, o1, 9); break;                                                   \
        case 10: NAME##_narrow_p(p, w, o0, o1, 10); break;                                                 \
        case 11: NAME##_narrow_p(p, w, o0, o1, 11); break;                                                 \
        case 12: NAME##_narrow_p(p, w, o0, o1, 12); break;                                                 \
        case 13: NAME##_narrow_p(p, w, o0, o1, 13); break;                                                 \
        case 14: NAME##_narrow_p(p, w, o0, o1, 14); break;                                                 \
        default: NAME##_narrow_p(p, w, o0, o1, 15); break;                                                 \
        }                                                                                                  \
    }                                                                                                      \
    /* blocks [b0, b1) of a split scan of one dense slab of P lines (narrow_split): totals (write = 0)  \
     * or scans from the carries in vals (line l's block b at l * per + b - b0), 8 / P blocks a step,  \
     * each block's lines in order from its carry, the same folds as the segments walk */              \
    INLINE void NAME##_narrow_blocks_p(const cs_scan_plan *p, const walk_layout *w, int64_t b0, int64_t b1, \
                                       int64_t per, NAME##_acc *vals, int write, const int P)             \
    {                                                                                                      \
        const int G = NARROW_TILE / P;                                                                     \
        const int64_t st = w->sx[0];                                                                       \
        for (int64_t b = b0; b < b1;) {                                                                    \
            const int64_t left = w->len - b * FOLD_BLOCK, n = left < FOLD_BLOCK ? left : FOLD_BLOCK;       \
            /* G whole blocks together; the rest, and the short last block, one at a time */              \
            const int g = b + G <= b1 && left >= (int64_t)G * FOLD_BLOCK ? G : 1;                          \
            NAME##_acc a[NARROW_TILE];                                                                     \
            int64_t bx[NARROW_TILE], bm[NARROW_TILE], by[NARROW_TILE];                                     \
            for (int s = 0; s < g; s++) {                                                                  \
                bx[s] = w->start[0] + (b + s) * FOLD_BLOCK * st;                                           \
                bm[s] = p->mask ? w->start[1] + (b + s) * FOLD_BLOCK * st : 0;                             \
                by[s] = w->start[2] + (b + s) * FOLD_BLOCK * st;                                           \
                for (int c = 0; c < P; c++) a[s * P + c] = write ? vals[c * per + b + s - b0] : (NAME##_acc)(IDENT); \
            }                                                                                              \
            if (g == G) NAME##_narrow_run(p, bx, bm, by, st, n, G, P, a, write);                           \
            else NAME##_narrow_run(p, bx, bm, by, st, n, 1, P, a, write);                                  \
            if (write && b == 0) NAME##_narrow_first(p, by, 1, P);                                         \
            if (!write)                                                                                    \
                for (int s = 0; s < g; s++)                                                                \
                    for (int c = 0; c < P; c++) vals[c * per + b + s - b0] = a[s * P + c];                \
            b += g;                                                                                        \
        }                                                                                                  \
    }                                                                                                      \
    VECTOR_KERNEL static void NAME##_narrow_blocks(const cs_scan_plan *p, const walk_layout *w, int64_t b0, \
                                                   int64_t b1, int64_t per, NAME##_acc *vals, int write)  \
    {                                                                                                      \
        switch (w->inner) {                                                                                \
        case 3: NAME##_narrow_blocks_p(p, w, b0, b1, per, vals, write, 3); break;                          \
        case 4: NAME##_narrow_blocks_p(p, w, b0, b1, per, vals, write, 4); break;                          \
        case 5: NAME##_narrow_blocks_p(p, w, b0, b1, per, vals, write, 5); break;                          \
        case 6: NAME##_narrow_blocks_p(p, w, b0, b1, per, vals, write, 6); break;                          \
        default: NAME##_narrow_blocks_p(p, w, b0, b1, per, vals, write, 7); break;                         \
        }                                                                                                  \
    }                                                                                                      \
    /* blocks [b0, b1) of every line of a split scan: totals (write = 0) or scans from the carries in     \
     * vals, which holds line l's block b at l * per + b - b0 */                                        \
    static void NAME##_blocks(const cs_scan_plan *p, const walk_layout *w, int64_t b0, int64_t b1,          \
                              int64_t per, NAME##_acc *vals, int write)                                    \
    {                                                                                                      \
        const int64_t L = w->nlines;                                                                       \
        if (w->narrow_split) {                                                                             \
            NAME##_narrow_blocks(p, w, b0, b1, per, vals, write);                                          \
            return;                                                                                        \
        }                                                                                                  \
        NAME##_acc acc[LONG_LINES > GROUP ? LONG_LINES : GROUP];                                           \
        walk_layout wb = *w;                                                                               \
        wb.outer.ndim = 0;                                                                                 \
        wb.nouter = 1;                                                                                     \
        if (w->split == SPLIT_ACROSS) { /* per block, the lines side by side */                           \
            for (int64_t b = b0; b < b1; b++) {                                                            \
                wb.len = w->len - b * FOLD_BLOCK < FOLD_BLOCK ? w->len - b * FOLD_BLOCK : FOLD_BLOCK;      \
                for (int k = 0; k < 3; k++) wb.start[k] = w->start[k] + b * FOLD_BLOCK * w->sx[k];         \
                for (int64_t l = 0; l < L; l++) acc[l] = vals[l * per + b - b0];                           \
                NAME##_tiles(p, &wb, 0, 0, L, write ? acc : NULL, write ? NULL : acc, b == 0 ? L : 0);            \
                if (!write)                                                                                \
                    for (int64_t l = 0; l < L; l++) vals[l * per + b - b0] = acc[l];                       \
            }                                                                                              \
            return;                                                                                        \
        }                                                                                                  \
        for (int64_t l = 0; l < L; l++) {                                                                  \
            int64_t off[3];                                                                                \
            line_start(w, l, off);                                                                         \
            for (int64_t b = b0; b < b1;) {                                                                \
                const int64_t left = w->len - b * FOLD_BLOCK;                                              \
                int64_t nb = left < FOLD_BLOCK ? 1 : (b1 - b) < GROUP ? (b1 - b) : GROUP;                 \
                if (left >= FOLD_BLOCK && b + nb == (w->len + FOLD_BLOCK - 1) / FOLD_BLOCK &&              \
                    w->len % FOLD_BLOCK) nb--; /* the short last block on its own */                      \
                NAME##_acc *v = vals + l * per + (b - b0);                                                 \
                if (w->split == SPLIT_ALONG && !write) { /* totals straight from memory, in lanes */       \
                    int64_t o0[3];                                                                         \
                    for (int k = 0; k < 3; k++) o0[k] = off[k] + b * FOLD_BLOCK * w->sx[k];                \
                    if (!NAME##_float_lanes(p, o0, w->sx, left < FOLD_BLOCK ? left : FOLD_BLOCK, nb, acc))  \
                        for (int64_t j = 0; j < nb; j++) {                                                 \
                            int64_t o[3];                                                                  \
                            for (int k = 0; k < 3; k++) o[k] = off[k] + (b + j) * FOLD_BLOCK * w->sx[k];    \
                            acc[j] = NAME##_lane_total(p, o, w->sx, left < FOLD_BLOCK ? left : FOLD_BLOCK); \
                        }                                                                                  \
                } else if (w->split == SPLIT_ALONG) { /* the line's blocks side by side */                \
                    wb.len = left < FOLD_BLOCK ? left : FOLD_BLOCK;                                        \
                    for (int k = 0; k < 3; k++) {                                                          \
                        wb.start[k] = off[k] + b * FOLD_BLOCK * w->sx[k];                                  \
                        wb.ix[k] = FOLD_BLOCK * w->sx[k];                                                  \
                    }                                                                                      \
                    for (int64_t j = 0; j < nb; j++) acc[j] = v[j];                                        \
                    NAME##_tiles(p, &wb, 0, 0, nb, write ? acc : NULL, write ? NULL : acc, b == 0); /* block 0 alone */       \
                } else {                                                                                   \
                    segment s[GROUP];                                                                      \
                    for (int64_t j = 0; j < nb; j++) {                                                     \
                        for (int k = 0; k < 3; k++) s[j].off[k] = off[k] + (b + j) * FOLD_BLOCK * w->sx[k]; \
                        s[j].first = b + j == 0;                                                           \
                        acc[j] = write ? v[j] : (NAME##_acc)(IDENT);                                       \
                    }                                                                                      \
                    NAME##_walk(p, s, (int)nb, left < FOLD_BLOCK ? left : FOLD_BLOCK, w->sx, acc, write);  \
                }                                                                                          \
                if (!write)                                                                                \
                    for (int64_t j = 0; j < nb; j++) v[j] = acc[j];                                        \
                b += nb;                                                                                   \
            }                                                                                              \
        }                                                                                                  \
    }                                                                                                      \
    /* rounds of `per` blocks of every line a thread (about 8 MiB of x: the round's second pass reads     \
     * from cache): their totals, then (every thread, the same folds in the same order) the carries      \
     * chained in line order, then the scans from the carries, last blocks first (the ones the first    \
     * pass left in cache). One barrier a round, so that a busy machine that pauses a thread costs few   \
     * waits: the rounds' totals alternate between two buffers, since a thread may chain a round's      \
     * while another writes the next's. -1: no memory. */                                              \
    static int NAME##_split(const cs_scan_plan *p, const walk_layout *w)                                    \
    {                                                                                                      \
        const int64_t L = w->nlines, nblk = (w->len + FOLD_BLOCK - 1) / FOLD_BLOCK;                        \
        const int64_t per = ROUND_BLOCKS / L, slots = L * per * omp_get_max_threads();                     \
        NAME##_acc *vals = malloc(sizeof *vals * (size_t)(2 * slots));                                     \
        if (!vals) return -1;                                                                              \
        _Pragma("omp parallel")                                                                            \
        {                                                                                                  \
            const int64_t T = omp_get_num_threads(), t = omp_get_thread_num();                             \
            NAME##_acc carry[LONG_LINES], mine[ROUND_BLOCKS];                                              \
            for (int64_t l = 0; l < L; l++)                                                                \
                carry[l] = p->initial ? CPU_INITIAL_##ACC_T(p, initial_offset(w, l)) : (NAME##_acc)(IDENT); \
            for (int64_t r0 = 0; r0 < nblk; r0 += T * per) {                                               \
                const int64_t b0 = r0 + t * per < nblk ? r0 + t * per : nblk;                              \
                const int64_t b1 = b0 + per < nblk ? b0 + per : nblk;                                      \
                NAME##_acc *totals = vals + r0 / (T * per) % 2 * slots;                                    \
                NAME##_blocks(p, w, b0, b1, per, totals + t * L * per, 0);                                 \
                _Pragma("omp barrier")                                                                     \
                for (int64_t l = 0; l < L; l++)                                                            \
                    for (int64_t i = 0; i < T * per && r0 + i < nblk; i++) {                               \
                        if (i / per == t) mine[l * per + i % per] = carry[l];                              \
                        carry[l] = OP(carry[l], totals[i / per * L * per + l * per + i % per]);            \
                    }                                                                                      \
                for (int64_t c = (b1 - b0 + GROUP - 1) / GROUP - 1; c >= 0; c--) {                         \
                    const int64_t c0 = b0 + c * GROUP, c1 = c0 + GROUP < b1 ? c0 + GROUP : b1;             \
                    NAME##_blocks(p, w, c0, c1, per, mine + c * GROUP, 1);                                 \
                }                                                                                          \
            }                                                                                              \
            if (w->stream) cs_cpu_stream_fence();                                                          \
        }                                                                                                  \
        free(vals);                                                                                        \
        return 0;                                                                                          \
    }                                                                                                      \
    static int NAME##_run(const cs_scan_plan *p, const walk_layout *w)                                      \
    {                                                                                                      \
        if (w->split) return NAME##_split(p, w);                                                           \
        if (w->narrow) {                                                                                   \
            _Pragma("omp parallel if(w->nslabs > 1 && w->nlines * w->len > 32768)")                        \
            {                                                                                              \
                int64_t o0, o1;                                                                            \
                thread_share(w->nslabs, &o0, &o1);                                                         \
                NAME##_narrow(p, w, o0, o1);                                                               \
            }                                                                                              \
            return 0;                                                                                      \
        }                                                                                                  \
        if (w->tiles) {                                                                                    \
            const int64_t width = tile_width(w, w->tw);                                                    \
            const int64_t nb = (w->inner + width - 1) / width;                                             \
            _Pragma("omp parallel if(w->nouter * nb > 1 && w->nlines * w->len > 32768)")                    \
            {                                                                                              \
                _Pragma("omp for schedule(static) nowait")                                                 \
                for (int64_t t = 0; t < w->nouter * nb; t++) {                                             \
                    const int64_t c0 = t % nb * width;                                                     \
                    NAME##_tiles(p, w, t / nb, c0, w->inner - c0 < width ? w->inner - c0 : width, NULL, NULL, width); \
                }                                                                                          \
                if (w->stream) cs_cpu_stream_fence();                                                      \
            }                                                                                              \
        } else {                                                                                           \
            _Pragma("omp parallel if(w->nlines > 1 && w->nlines * w->len > 32768)")                        \
            {                                                                                              \
                int64_t l0, l1;                                                                            \
                thread_share(w->nlines, &l0, &l1);                                                         \
                segment s[GROUP];                                                                          \
                NAME##_acc acc[GROUP];                                                                     \
                for (int64_t l = l0; l < l1; l += GROUP) {                                                 \
                    const int g = l1 - l < GROUP ? (int)(l1 - l) : GROUP;                                  \
                    for (int j = 0; j < g; j++) {                                                          \
                        line_start(w, l + j, s[j].off);                                                    \
                        s[j].first = 1;                                                                    \
                        acc[j] = p->initial ? CPU_INITIAL_##ACC_T(p, initial_offset(w, l + j))             \
                                            : (NAME##_acc)(IDENT);                                         \
                    }                                                                                      \
                    NAME##_walk(p, s, g, w->len, w->sx, acc, 1);                                           \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
        return 0;                                                                                          \
    }

/* a sum and, where the pair has one, a product for every pair of the list */
#define DEFINE_PAIR(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                             \
    DEFINE_CPU_SCAN(sum_##NAME, IN, OUT, IN_T, ACC_T, OUT_T, -0.0, 0, 0, SUM)                       \
    DEFINE_CPU_SCAN(prod_##NAME, IN, OUT, IN_T, ACC_T, OUT_T, 1, 1, 1, PROD)
CS_SCAN_PAIRS(DEFINE_PAIR)
#undef DEFINE_PAIR

/* int32 sums of lines that run forward at unit stride in x and out, unmasked, from the identity
 * and not split: each line eight steps a vector, the vector's prefix in three shifted adds and the
 * carry added after (integer sums wrap, so this order gives the same bits as the walks') */
static int int32_rows(const cs_scan_plan *p, const walk_layout *w)
{
    return p->op == CS_SCAN_SUM && p->in_dtype == CS_INT32 && p->out_dtype == CS_INT32 && !p->mask && !p->initial &&
           !w->split && w->sx[0] == 1 && w->sx[2] == 1 && w->len >= INT32_ROW_MIN;
}

#if defined(__GNUC__) && !defined(__clang__)
typedef uint32_t v8u32 __attribute__((vector_size(32), aligned(4), may_alias));
#define SHIFTED(v, ...) __builtin_shuffle(v, (v8u32){ 0 }, (v8u32){ __VA_ARGS__ })
VECTOR_KERNEL static void int32_row_sum(const int32_t *x, int32_t *y, int64_t n, int excl)
{
    v8u32 carry = { 0 };
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        const v8u32 v = *(const v8u32 *)(x + k);
        v8u32 s = v + SHIFTED(v, 8, 0, 1, 2, 3, 4, 5, 6);
        s += SHIFTED(s, 8, 8, 0, 1, 2, 3, 4, 5);
        s += SHIFTED(s, 8, 8, 8, 8, 0, 1, 2, 3);
        v8u32 o = carry + s;
        if (excl) o -= v;
        *(v8u32 *)(y + k) = o;
        carry += __builtin_shuffle(s, (v8u32){ 7, 7, 7, 7, 7, 7, 7, 7 });
    }
    for (uint32_t c = carry[0]; k < n; k++) {
        const uint32_t v = (uint32_t)x[k];
        c += v;
        y[k] = (int32_t)(excl ? c - v : c);
    }
}
#undef SHIFTED
#else
static void int32_row_sum(const int32_t *x, int32_t *y, int64_t n, int excl)
{
    uint32_t c = 0;
    for (int64_t k = 0; k < n; k++) {
        const uint32_t v = (uint32_t)x[k];
        c += v;
        y[k] = (int32_t)(excl ? c - v : c);
    }
}
#endif

static void int32_rows_sum(const cs_scan_plan *p, const walk_layout *w)
{
#pragma omp parallel for schedule(static) if (w->nlines > 1 && w->nlines * w->len > 32768)
    for (int64_t l = 0; l < w->nlines; l++) {
        int64_t off[3];
        line_start(w, l, off);
        int32_row_sum((const int32_t *)p->x + off[0], (int32_t *)p->out + off[2], w->len, p->exclusive);
    }
}

typedef int (*scan_fn)(const cs_scan_plan *, const walk_layout *);

static const char *walk_name(const walk_layout *w)
{
    if (w->split && w->narrow_split) return "long lines split across threads in blocks of 4096, a slab's lines walked together";
    if (w->split) return "long lines split across threads in blocks of 4096";
    if (w->narrow == 1) return "short lines walked eight together";
    if (w->narrow) return "whole slabs walked together";
    if (!w->tiles) return "8 lines walked together";
    if (w->staged[0] || w->staged[1] || w->staged[2]) return "lines side by side through transposing tiles";
    return "lines side by side, vectorised";
}

/* how a walk stores: through float tiles in registers (where they apply), streaming past the caches */
static const char *store_name(const walk_layout *w)
{
    if (!w->float_tiles || w->narrow) return "";
    return w->stream ? ", float tiles in registers, streaming stores" : ", float tiles in registers";
}

cs_status cs_cpu_scan(const cs_scan_plan *p)
{
    /* the other ops and segmented scans take the general walk (scan_general.c) */
    if ((p->op != CS_SCAN_SUM && p->op != CS_SCAN_PROD) || p->reset || p->indices) return cs_cpu_scan_general(p);
    scan_fn run = 0;
#define PICK(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                          \
    if (p->in_dtype == IN && p->out_dtype == OUT) {                                               \
        if (p->op == CS_SCAN_SUM && CS_OPS_HAS(OPS, CS_SCAN_SUM)) run = sum_##NAME##_run;         \
        else if (p->op == CS_SCAN_PROD && CS_OPS_HAS(OPS, CS_SCAN_PROD)) run = prod_##NAME##_run; \
    }
    CS_SCAN_PAIRS(PICK)
#undef PICK
    if (!run) return cs_fail(CS_ERR_UNSUPPORTED, "scan of %s into %s is not supported",
                             cs_dtype_name(p->in_dtype), cs_dtype_name(p->out_dtype));
    walk_layout w;
    plan_walk(p, &w);
    const int vec = int32_rows(p, &w);
    if (p->explain || p->log) {
        char line[256];
        snprintf(line, sizeof line, "cpu %s: %lld lines of %lld%s%s%s%s; %s%s",
                 p->layout == CS_LAYOUT_COLUMNS ? "columns" : "rows", (long long)(p->nouter * p->inner),
                 (long long)p->len, p->mask ? ", masked" : "", p->reverse ? ", reverse" : "",
                 p->exclusive ? ", exclusive" : "", p->initial ? ", initial" : "",
                 vec ? "lines one at a time, eight steps a vector" : walk_name(&w), store_name(&w));
        if (p->explain) {
            snprintf(p->explain, p->explain_len, "%s", line);
            return CS_OK;
        }
        fprintf(stderr, "cuscan plan: %s\n", line);
    }
    if (vec) {
        int32_rows_sum(p, &w);
        return CS_OK;
    }
    if (run(p, &w)) return cs_fail(CS_ERR_OUT_OF_MEMORY, "scan: no memory for the block totals of a long line");
    return CS_OK;
}
