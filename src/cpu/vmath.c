/* cpu/vmath.c - exp and log of float32 elements through glibc's vector math library (libmvec), four
 * or two at a time instead of one: the Makefile builds this file with -fno-math-errno and
 * -DCS_HAVE_MVEC when libmvec links, so that GCC calls the vector forms it declares below. They
 * compute in float64 within 4 ulps, far below the float32 rounding of the result; float64 outputs keep
 * the scalar functions (exact to the last bit as Lua's math). */
#include <math.h>
#include <stdint.h>
#include "simd.h"

#ifdef CS_HAVE_MVEC
double exp(double) __attribute__((simd("notinbranch")));
double log(double) __attribute__((simd("notinbranch")));
#endif

VECTOR_KERNEL void cs_cpu_exp_f32(const float *a, float *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++) r[i] = (float)exp((double)a[i]);
}

VECTOR_KERNEL void cs_cpu_log_f32(const float *a, float *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++) r[i] = (float)log((double)a[i]);
}
