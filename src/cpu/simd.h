/* cpu/simd.h - hot CPU loops compiled for several x86-64 levels, the copy for the CPU at hand picked
 * when the library loads (GCC's target_clones): AVX-512 (x86-64-v4: eight doubles a vector, and mask
 * registers for masked scans), AVX2 (x86-64-v3: four) and the baseline's SSE2 (two). The
 * transposition keeps to AVX2's shuffles of 32-byte rows (VECTOR_KERNEL_256), which it is written
 * for. Elsewhere, or under another compiler, one plain copy. */
#ifndef CUSCAN_CPU_SIMD_H
#define CUSCAN_CPU_SIMD_H
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_KERNEL __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define VECTOR_KERNEL_256 __attribute__((target_clones("arch=x86-64-v3", "default")))
/* Hand-written vector forms (float_tiles.c, float_lanes.c), called only where cs_cpu_avx2 (and for
 * the AVX-512 ones cs_cpu_avx512) says the CPU has them. */
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))
#define AVX512_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))
/* and with AVX512-BF16 (and DQ, which every CPU with it has): float to bfloat16 in one instruction */
#define AVX512BF16 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,avx512bf16")))
#define AVX512BF16_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,avx512bf16")))
#else
#define VECTOR_KERNEL
#define VECTOR_KERNEL_256
#endif

#include <stddef.h>
#include <stdint.h>
/* dst[c * ds + r] = src[r * ss + c] for r < nr, c < nc: rows of src become columns of dst; elements
 * of `size` bytes (strides in elements, either may be negative). */
void cs_cpu_transpose(const void *src, int64_t ss, void *dst, int64_t ds, int64_t nr, int64_t nc, size_t size);
/* the same, dst's rows stored past the caches where stream is set and they can be (the caller then
 * orders its streaming stores with cs_cpu_stream_fence) */
void cs_cpu_transpose_stream(const void *src, int64_t ss, void *dst, int64_t ds, int64_t nr, int64_t nc, size_t size,
                             int stream);

/* A tile of float lines for float_tiles.c: line l's step k at x[l * xl + k * xs] (mask and out
 * alike), a sum or a product folded in float64 from acc[l], which ends as the lines' carries. Rows
 * (8 lines, steps of +-1), columns (lines next to each other) and, for float32, mixed tiles are
 * taken; stream: the output is larger than the caches. Returns 0, with nothing done, for other
 * tiles and on a CPU without AVX2, FMA and F16C. */
enum { CS_TILE_F32, CS_TILE_F64, CS_TILE_F16, CS_TILE_BF16, CS_TILE_F32_F64 /* float32 in, float64 out */ };
enum { CS_TILES_TOTALS, CS_TILES_ROWS, CS_TILES_COLS, CS_TILES_MIXED, CS_TILES_KINDS };
typedef struct cs_float_tile {
    const void *x;
    const unsigned char *m; /* NULL: unmasked */
    void *y;                /* NULL: the lines' totals alone, into acc (columns) */
    int64_t xl, ml, yl, xs, ms, ys, lines, n;
    int64_t empty; /* lines [0, empty) start at step 0: an exclusive scan's first output there is empty */
    int dtype; /* CS_TILE_*: of x and out alike, or CS_TILE_F32_F64 */
    int prod, excl, stream;
} cs_float_tile;
int cs_cpu_float_tile(const cs_float_tile *a, double *acc);
/* Split lines' block totals from the identity, as scan.c's lane totals fold them (element k into
 * float64 lane k % 8, the lanes then in order), into totals[0, nb): blocks of n elements of x
 * (CS_TILE_F32 or CS_TILE_F64) and of the mask m (NULL: unmasked) from their first walked one, steps
 * of dir = +-1, block i gap * i elements after the first along the walk. Returns 0, with nothing
 * done, on a CPU without the tiles. */
int cs_cpu_float_lanes(int dtype, const void *x, const unsigned char *m, int64_t n, int64_t nb, int64_t gap, int dir,
                       int prod, double *totals);
/* whether the AVX-512 forms run (float_tiles.c, float_lanes.c, transpose.c, vmath.c): on a CPU with
 * AVX-512VL and BW, unless CUSCAN_CPU_AVX512=0 asks for the AVX2 ones */
int cs_cpu_avx512(void);
/* whether the AVX2 forms run: on a CPU with AVX2, FMA and F16C */
int cs_cpu_avx2(void);
/* whether this CPU has the tiles of a kind (CS_TILES_*) for a CS_TILE_* dtype */
int cs_cpu_float_tiles_have(int kind, int dtype);
/* orders a thread's streaming stores before what it does next (the end of a scan) */
void cs_cpu_stream_fence(void);
/* the last-level cache a core sees, in bytes: outputs larger than it are streamed (scan.c) */
int64_t cs_cpu_cache_bytes(void);

/* r = exp(a), log(a) of float32 elements, computed in float64; logcumsumexp's chunks: t = exp(x - r)
 * where kept (else 0), and r = log(a) of float64 elements (vmath.c) */
void cs_cpu_exp_f32(const float *a, float *r, int64_t n);
void cs_cpu_log_f32(const float *a, float *r, int64_t n);
void cs_cpu_exp_diff_f64(const double *x, const double *r, const unsigned char *keep, double *t, int64_t n);
void cs_cpu_log_f64(const double *a, double *r, int64_t n);

/* v[i] = x[i * stride] and y[i * stride] = v[i] rounded once, for i < n: float16 or bfloat16 (a
 * CS_FLOAT16 / CS_BFLOAT16 dtype) elements to and from double, as half.h converts them (half_lanes.c) */
void cs_cpu_halves_to_double(int dtype, const uint16_t *x, int64_t stride, double *v, int64_t n);
void cs_cpu_halves_from_double(int dtype, const double *v, uint16_t *y, int64_t stride, int64_t n);
#endif
