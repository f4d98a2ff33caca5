/* dtypes.h - the one list of scan dtype pairs. Every place that depends on which (input, output)
 * pairs a scan supports expands this list: the C check (scan.c), the CPU dispatch (cpu/scan.c), the
 * CUDA dispatch (kernels/scan_dispatch.cu) and the CUDA compilation units, one per pair, that the
 * Makefile generates from the NAME column. Adding a pair is one line here.
 *
 * X(NAME, IN, OUT, IN_T, ACC_T, OUT_T, PROD)
 *   NAME   short name, also the compilation unit's name (kernels/gen/scan_NAME.cu)
 *   IN/OUT the cs_dtype values; IN_T/OUT_T their element types (bool is unsigned char; float16 and
 *          bfloat16 are half.h's cs_float16_t and cs_bfloat16_t: CUDA's types in kernels, bits in C)
 *   ACC_T  the type the scan accumulates in: double for every float input, so each float output is
 *          the rounding of a float64 prefix; the output's own type for integers (they wrap)
 *   PROD   1 when cumprod is supported too (sums are always) */
#ifndef CUSCAN_DTYPES_H
#define CUSCAN_DTYPES_H
#include <stdint.h>
#include "half.h"

#define CS_SCAN_PAIRS(X)                                                                 \
    X(f32_f32, CS_FLOAT32, CS_FLOAT32, float, double, float, 1)                          \
    X(f32_f64, CS_FLOAT32, CS_FLOAT64, float, double, double, 1)                         \
    X(f64_f64, CS_FLOAT64, CS_FLOAT64, double, double, double, 1)                        \
    X(f16_f16, CS_FLOAT16, CS_FLOAT16, cs_float16_t, double, cs_float16_t, 1)            \
    X(f16_f32, CS_FLOAT16, CS_FLOAT32, cs_float16_t, double, float, 1)                   \
    X(f16_f64, CS_FLOAT16, CS_FLOAT64, cs_float16_t, double, double, 1)                  \
    X(bf16_bf16, CS_BFLOAT16, CS_BFLOAT16, cs_bfloat16_t, double, cs_bfloat16_t, 1)      \
    X(bf16_f32, CS_BFLOAT16, CS_FLOAT32, cs_bfloat16_t, double, float, 1)                \
    X(bf16_f64, CS_BFLOAT16, CS_FLOAT64, cs_bfloat16_t, double, double, 1)               \
    X(i32_i32, CS_INT32, CS_INT32, int32_t, int32_t, int32_t, 1)                         \
    X(i32_i64, CS_INT32, CS_INT64, int32_t, int64_t, int64_t, 1)                         \
    X(i64_i64, CS_INT64, CS_INT64, int64_t, int64_t, int64_t, 1)                         \
    X(b_i32, CS_BOOL, CS_INT32, unsigned char, int32_t, int32_t, 0)                      \
    X(b_i64, CS_BOOL, CS_INT64, unsigned char, int64_t, int64_t, 0)

#endif
