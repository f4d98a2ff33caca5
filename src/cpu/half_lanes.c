/* cpu/half_lanes.c - runs of float16 / bfloat16 elements to and from double, compiled for each x86-64
 * level (simd.h) with half.h's forms without a branch, so that a run's loop vectorises: the general
 * walk (scan_general.c) converts a chunk of a line, or a row of a block of lines, at a time through
 * these instead of one element at a time inside its steps. Bit for bit the conversions of half.h. */
#include <stdint.h>
#include "cuscan.h"
#include "half.h"
#include "simd.h"

VECTOR_KERNEL void cs_cpu_halves_to_double(int dtype, const uint16_t *x, int64_t stride, double *v, int64_t n)
{
    if (dtype == CS_FLOAT16) {
        if (stride == 1)
            for (int64_t i = 0; i < n; i++) v[i] = cs_float16_to_double_lanes(x[i]);
        else
            for (int64_t i = 0; i < n; i++) v[i] = cs_float16_to_double_lanes(x[i * stride]);
    } else {
        if (stride == 1)
            for (int64_t i = 0; i < n; i++) v[i] = cs_bfloat16_to_double(x[i]);
        else
            for (int64_t i = 0; i < n; i++) v[i] = cs_bfloat16_to_double(x[i * stride]);
    }
}

VECTOR_KERNEL void cs_cpu_halves_from_double(int dtype, const double *v, uint16_t *y, int64_t stride, int64_t n)
{
    if (dtype == CS_FLOAT16) {
        if (stride == 1)
            for (int64_t i = 0; i < n; i++) y[i] = cs_float16_from_double_lanes(v[i]);
        else
            for (int64_t i = 0; i < n; i++) y[i * stride] = cs_float16_from_double_lanes(v[i]);
    } else {
        if (stride == 1)
            for (int64_t i = 0; i < n; i++) y[i] = cs_bfloat16_from_double_lanes(v[i]);
        else
            for (int64_t i = 0; i < n; i++) y[i * stride] = cs_bfloat16_from_double_lanes(v[i]);
    }
}
