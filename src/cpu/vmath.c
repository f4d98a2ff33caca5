/* cpu/vmath.c - exp and log of float32 elements, and the float64 exp and log of logcumsumexp's
 * chunks (scan_general.c), through glibc's vector math library (libmvec), four or two at a time
 * instead of one: the Makefile builds this file with -fno-math-errno and
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

/* t[i] = exp(x[i] - r[i]) where keep[i], else 0 */
VECTOR_KERNEL void cs_cpu_exp_diff_f64(const double *x, const double *r, const unsigned char *keep, double *t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const double e = exp(x[i] - r[i]);
        t[i] = keep[i] ? e : 0.0;
    }
}

/* r[i] = log(a[i]) */
VECTOR_KERNEL void cs_cpu_log_f64(const double *a, double *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++) r[i] = log(a[i]);
}
