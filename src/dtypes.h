/* dtypes.h - the one list of scan dtype pairs. Every place that depends on which (input, output)
 * pairs a scan supports expands this list: the C check (scan.c), the CPU dispatch (cpu/scan.c), the
 * CUDA dispatch (kernels/scan_dispatch.cu) and the CUDA compilation units that the Makefile
 * generates from the NAME and OPS columns, one per part the pair's ops allow (plain, masked and
 * segmented sums and products, logcumsumexp, cummax / cummin) and direction. Adding a pair is one
 * line here.
 *
 * X(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)
 *   NAME   short name, also in the compilation units' names (build/gen/PART_DIR_NAME.cu)
 *   IN/OUT the cs_dtype values; IN_T/OUT_T their element types (bool is unsigned char; float16 and
 *          bfloat16 are half.h's cs_float16_t and cs_bfloat16_t: CUDA's types in kernels, bits in C)
 *   ACC_T  the type the scan accumulates in: double for every float input, so each float output is
 *          the rounding of a float64 prefix; the output's own type for integers (they wrap)
 *   OPS    the scan ops the pair supports, a mask of CS_OPS_* bits */
#ifndef CUSCAN_DTYPES_H
#define CUSCAN_DTYPES_H
#include <stdint.h>
#include "half.h"

#define CS_OPS_SUM (1u << 0)       /* CS_SCAN_SUM */
#define CS_OPS_PROD (1u << 1)      /* CS_SCAN_PROD */
#define CS_OPS_MAXMIN (3u << 2)    /* CS_SCAN_MAX and CS_SCAN_MIN */
#define CS_OPS_LSE (1u << 4)       /* CS_SCAN_LOGSUMEXP */
#define CS_OPS_HAS(OPS, op) ((((unsigned)(OPS)) >> (unsigned)(op)) & 1u)

#define CS_SCAN_PAIRS(X)                                                                                               \
    X(f32_f32, CS_FLOAT32, CS_FLOAT32, float, double, float, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_MAXMIN | CS_OPS_LSE)    \
    X(f32_f64, CS_FLOAT32, CS_FLOAT64, float, double, double, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_LSE)                   \
    X(f64_f64, CS_FLOAT64, CS_FLOAT64, double, double, double, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_MAXMIN | CS_OPS_LSE)  \
    X(f16_f16, CS_FLOAT16, CS_FLOAT16, cs_float16_t, double, cs_float16_t, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_MAXMIN | CS_OPS_LSE) \
    X(f16_f32, CS_FLOAT16, CS_FLOAT32, cs_float16_t, double, float, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_LSE)             \
    X(f16_f64, CS_FLOAT16, CS_FLOAT64, cs_float16_t, double, double, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_LSE)            \
    X(bf16_bf16, CS_BFLOAT16, CS_BFLOAT16, cs_bfloat16_t, double, cs_bfloat16_t, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_MAXMIN | CS_OPS_LSE) \
    X(bf16_f32, CS_BFLOAT16, CS_FLOAT32, cs_bfloat16_t, double, float, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_LSE)          \
    X(bf16_f64, CS_BFLOAT16, CS_FLOAT64, cs_bfloat16_t, double, double, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_LSE)         \
    X(i32_i32, CS_INT32, CS_INT32, int32_t, int32_t, int32_t, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_MAXMIN)                \
    X(i32_i64, CS_INT32, CS_INT64, int32_t, int64_t, int64_t, CS_OPS_SUM | CS_OPS_PROD)                                \
    X(i64_i64, CS_INT64, CS_INT64, int64_t, int64_t, int64_t, CS_OPS_SUM | CS_OPS_PROD | CS_OPS_MAXMIN)                \
    X(b_i32, CS_BOOL, CS_INT32, unsigned char, int32_t, int32_t, CS_OPS_SUM)                                           \
    X(b_i64, CS_BOOL, CS_INT64, unsigned char, int64_t, int64_t, CS_OPS_SUM)                                           \
    X(b_b, CS_BOOL, CS_BOOL, unsigned char, int32_t, unsigned char, CS_OPS_MAXMIN)

#endif
