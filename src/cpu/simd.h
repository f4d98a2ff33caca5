/* cpu/simd.h - hot CPU loops compiled twice: for CPUs with AVX2 (four doubles a vector instead of the
 * baseline SSE2's two) and for any x86-64, the copy picked when the library loads (GCC's
 * target_clones). Elsewhere, or under another compiler, one plain copy. */
#ifndef CUSCAN_CPU_SIMD_H
#define CUSCAN_CPU_SIMD_H
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define VECTOR_KERNEL
#endif

#include <stddef.h>
#include <stdint.h>
/* dst[c * ds + r] = src[r * ss + c] for r < nr, c < nc: rows of src become columns of dst; elements
 * of `size` bytes (strides in elements, either may be negative). */
void cs_cpu_transpose(const void *src, int64_t ss, void *dst, int64_t ds, int64_t nr, int64_t nc, size_t size);

/* r = exp(a), log(a) of float32 elements, computed in float64 (vmath.c) */
void cs_cpu_exp_f32(const float *a, float *r, int64_t n);
void cs_cpu_log_f32(const float *a, float *r, int64_t n);
#endif
