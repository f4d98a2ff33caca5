// scan_common.cuh - what every scan kernel shares: the op policies and their special values,
// element conversions, vector loads and stores, and line offsets over the outer dims.
//
// Three types ride through a scan: InT (the input's elements; tiles are held in it, which halves
// the registers of a promoted pair), AccT (the fold's state: double for float sums, so every float
// output is the rounding of a float64 prefix; a small struct for the flagged ops below) and OutT
// (the output's elements, rounded once). float16 and bfloat16 elements are CUDA's __half and
// __nv_bfloat16 (half.h).
//
// Two kinds of spec (the compile-time description of a scan) drive the same kernels:
//   ScanSpec     cumsum and cumprod: a masked-out element is replaced by 0 or 1 when it is loaded,
//                and the state is the accumulator itself (the kernels of engine v2, unchanged);
//   FlaggedSpec  segmented scans, logcumsumexp, cummax and cummin: each element travels with flags
//                (kept: present and not masked out; reset: starts a segment) and its index, since a
//                masked-out element of cummax cannot be written as a value of its type; the state is
//                the segmented pair (SegOp) of the op's own state, and the mask and reset are run-time
//                switches, so one instance serves masked and unmasked, segmented and plain scans.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include "half.h"
#include "internal.h"
#include "scalar.h"
#include "tuning.cuh"

namespace cuscan {

constexpr int kWarp = 32;

// The 2-byte float types: their special values are written as bits (CUDA's conversions from
// numbers are not constexpr); the sign bit is the top one in both.
template <typename T>
struct HalfFloat {
    static constexpr bool kIs = false;
};
template <>
struct HalfFloat<__half> {
    static constexpr bool kIs = true;
    static constexpr unsigned short kOne = 0x3c00;
    using Raw = __half_raw;
};
template <>
struct HalfFloat<__nv_bfloat16> {
    static constexpr bool kIs = true;
    static constexpr unsigned short kOne = 0x3f80;
    using Raw = __nv_bfloat16_raw;
};

// Run-time parameters of an op instance: which of the ops that share one instance runs.
struct OpArgs {
    int min;    // MaxMinOp: cummin rather than cummax
    int prod;   // ArithOp: cumprod rather than cumsum
};

// The fold of a scan. identity() starts every fold: -0.0 for float sums, since -0.0 + x == x for
// every x (a sum of -0.0 stays -0.0). zero() is what a masked-out element reads as and what an
// exclusive scan's empty prefix is: +0.0 (or 0) for sums, 1 for products. Integers wrap.
template <int OP, typename T>
struct ScanOp {
    using State = T;
    ScanOp() = default;
    __host__ __device__ explicit ScanOp(const OpArgs &) {}
    __host__ __device__ __forceinline__ static constexpr T identity()
    {
        if constexpr (HalfFloat<T>::kIs)
            return T(typename HalfFloat<T>::Raw{ OP == CS_SCAN_SUM ? (unsigned short)0x8000 : HalfFloat<T>::kOne });
        else if constexpr (OP == CS_SCAN_SUM && std::is_floating_point_v<T>) return T(-0.0);
        else return OP == CS_SCAN_SUM ? T(0) : T(1);
    }
    __host__ __device__ __forceinline__ static constexpr T zero()
    {
        if constexpr (HalfFloat<T>::kIs)
            return T(typename HalfFloat<T>::Raw{ OP == CS_SCAN_SUM ? (unsigned short)0 : HalfFloat<T>::kOne });
        else return OP == CS_SCAN_SUM ? T(0) : T(1);
    }
    __device__ __forceinline__ T operator()(T a, T b) const
    {
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return OP == CS_SCAN_SUM ? T(U(a) + U(b)) : T(U(a) * U(b));
        } else {
            return OP == CS_SCAN_SUM ? a + b : a * b;
        }
    }
};

// Input element -> accumulator; bool inputs are bytes (nonzero is true); 2-byte floats widen exactly.
template <typename AccT, typename InT>
__device__ __forceinline__ AccT to_acc(InT v)
{
    if constexpr (std::is_same_v<InT, unsigned char>) return AccT(v != 0);
    else if constexpr (std::is_same_v<InT, __half>) return AccT(__half2float(v));
    else if constexpr (std::is_same_v<InT, __nv_bfloat16>) return AccT(__bfloat162float(v));
    else return AccT(v);
}

// Accumulator -> output element: the one rounding of a float output (round to nearest even, from
// the double itself; a prefix beyond the output's range becomes +-inf).
template <typename OutT, typename AccT>
__device__ __forceinline__ OutT to_out(AccT v)
{
    if constexpr (std::is_same_v<OutT, __half>) return __double2half(double(v));
    else if constexpr (std::is_same_v<OutT, __nv_bfloat16>) return __double2bfloat16(double(v));
    else return OutT(v);
}

// Everything a scan kernel is compiled for: the tuning policy, the op, the three types and the
// direction and mask switches. Kernels take one of these instead of seven parameters.
template <class Policy, int OP_, typename InT_, typename AccT_, typename OutT_, bool REVERSE_, bool MASKED_>
struct ScanSpec {
    using P = Policy;
    using InT = InT_;
    using AccT = AccT_;
    using OutT = OutT_;
    using Op = ScanOp<OP_, AccT_>;
    static constexpr int OP = OP_;
    static constexpr bool REVERSE = REVERSE_, MASKED = MASKED_, FLAGGED = false, INDEXED = false;
    static constexpr bool RESETS = false;   // (the slab family's SlabResetSpec sets it)
    // the identity and the masked-out value as input elements (exact in every input type)
    __device__ __forceinline__ static InT in_identity() { return ScanOp<OP_, InT_>::identity(); }
    __device__ __forceinline__ static InT in_zero() { return ScanOp<OP_, InT_>::zero(); }
    // a line's initial value (cs_scan_args.initial) at element off of base, as the state
    __device__ __forceinline__ static AccT initial(const void *base, int64_t off, cs_dtype dtype)
    {
        if constexpr (std::is_floating_point_v<AccT>) return AccT(cs_initial_double(base, off, dtype));
        else return AccT(cs_initial_int64(base, off, dtype));
    }
};

template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
    T v[N];
};

// The machine word of a vector of `B` bytes: vector loads and stores go through it, so that the
// compiler emits one 16-byte (or 8-, 4-byte) access even where it cannot prove the alignment that
// Vec's type promises.
template <int B>
using VecBits = std::conditional_t<B == 16, int4, std::conditional_t<B == 8, int2,
                std::conditional_t<B == 4, int, std::conditional_t<B == 2, short, char>>>>;

template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T *p)
{
    using Bits = VecBits<(int)sizeof(T) * N>;
    const Bits b = *reinterpret_cast<const Bits *>(p);
    Vec<T, N> v;
    memcpy(&v, &b, sizeof v);
    return v;
}

// One vector store to global memory, by instruction: the compiler splits a plain vector store into
// 4-byte ones wherever it cannot prove the alignment the type promises.
template <typename T, int N>
__device__ __forceinline__ void store_vec(T *p, const Vec<T, N> &v)
{
    constexpr int B = (int)sizeof(T) * N;
    using Bits = VecBits<B>;
    Bits b;
    memcpy(&b, &v, sizeof b);
    if constexpr (B == 16) {
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w)
                     : "memory");
    } else if constexpr (B == 8) {
        asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(b.x), "r"(b.y) : "memory");
    } else {
        *reinterpret_cast<Bits *>(p) = b;
    }
}

// A block's shared storage of type Sh: static up to the 48 KB a kernel may declare, dynamic beyond
// (its launch passes shared_bytes<Sh>() and raises the kernel's limit, as launch_slab_kernel does).
constexpr size_t kStaticSharedMax = 48 * 1024;
template <typename Sh>
constexpr size_t shared_bytes() { return sizeof(Sh) > kStaticSharedMax ? sizeof(Sh) : 0; }
template <typename Sh>
__device__ __forceinline__ Sh &block_shared()
{
    if constexpr (sizeof(Sh) <= kStaticSharedMax) {
        __shared__ Sh sh;
        return sh;
    } else {
        extern __shared__ __align__(16) unsigned char cs_dynamic_shared[];
        return *reinterpret_cast<Sh *>(cs_dynamic_shared);
    }
}

// 16 bytes from global memory straight into shared memory (cp.async, Ampere and later): the copy
// holds no register while it flies, so a tile's loads are all in flight however large the tile.
// Visible to the issuing thread after cp_async_wait_all, to the block after a barrier as well.
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
#else
    *static_cast<int4 *>(smem) = *static_cast<const int4 *>(gmem);
#endif
}
__device__ __forceinline__ void cp_async_wait_all()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// Cache hints for loads: PLAIN as the compiler likes; L1 (ld.global.ca) allocates in L1, for data
// the same block reads again soon; LAST (ld.global.lu) marks the last read, so the lines go first.
enum LoadHint { kPlain, kL1, kLast };

template <LoadHint H, typename T>
__device__ __forceinline__ T load_hinted(const T *p)
{
    if constexpr (H == kL1) return __ldca(p);
    else if constexpr (H == kLast) return __ldlu(p);
    else return *p;
}

template <typename T, int N, LoadHint H>
__device__ __forceinline__ Vec<T, N> load_vec_hinted(const T *p)
{
    if constexpr (H == kPlain) {
        return *reinterpret_cast<const Vec<T, N> *>(p);
    } else {
        constexpr int BYTES = (int)sizeof(T) * N;
        static_assert(BYTES == 16 || BYTES == 8 || BYTES == 4 || BYTES == 2 || BYTES == 1, "vector of 1 to 16 bytes");
        using Bits = std::conditional_t<BYTES == 16, int4, std::conditional_t<BYTES == 8, int2,
                     std::conditional_t<BYTES == 4, int, std::conditional_t<BYTES == 2, short, char>>>>;
        const Bits b = load_hinted<H>(reinterpret_cast<const Bits *>(p));
        Vec<T, N> v;
        memcpy(&v, &b, sizeof v);
        return v;
    }
}

// A store marked evict-first (st.global.cs): outputs that no kernel reads back soon.
template <typename T, int N>
__device__ __forceinline__ void store_vec_streaming(T *p, const Vec<T, N> &v)
{
    constexpr int BYTES = (int)sizeof(T) * N;
    static_assert(BYTES == 16 || BYTES == 8 || BYTES == 4, "vector of 4, 8 or 16 bytes");
    using Bits = std::conditional_t<BYTES == 16, int4, std::conditional_t<BYTES == 8, int2, int>>;
    __stcs(reinterpret_cast<Bits *>(p), *reinterpret_cast<const Bits *>(&v));
}

// Asks L1 for the 128-byte line holding p (no register waits for it).
__device__ __forceinline__ void prefetch_l1(const void *p)
{
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

// Asks L2 for the 128-byte line holding p (no register waits for it).
__device__ __forceinline__ void prefetch_l2(const void *p)
{
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// n / d for 0 <= n < 2^31 by a multiply and a shift (Granlund & Montgomery), d fixed per launch.
struct FastDiv {
    unsigned d, m, s;
    FastDiv() = default;
    __host__ explicit FastDiv(unsigned divisor) : d(divisor), m(0), s(0)
    {
        while ((1ull << s) < d) s++;
        m = (unsigned)(((1ull << 32) * ((1ull << s) - d)) / d + 1);
    }
    __device__ __forceinline__ unsigned div(unsigned n) const { return (__umulhi(n, m) + n) >> s; }
};

// Per-operand element offsets of line `idx` over the outer dims: x, mask, out (N = 3), and the
// flagged scans' reset and indices and the initial values (N = CS_MAX_OPERANDS), in the order of
// enum cs_scan_operand.
template <int N>
struct LineOffsetsOf {
    int ndim;
    int64_t shape[CS_MAX_DIMS];
    int64_t stride[N][CS_MAX_DIMS];

    __device__ __forceinline__ void at(int64_t idx, int64_t &ox, int64_t &om, int64_t &oo) const
    {
        ox = om = oo = 0;
        if (ndim == 1) {
            ox = idx * stride[0][0];
            om = idx * stride[1][0];
            oo = idx * stride[2][0];
            return;
        }
        for (int d = ndim - 1; d >= 0; d--) {
            int64_t i = idx % shape[d];
            idx /= shape[d];
            ox += i * stride[0][d];
            om += i * stride[1][d];
            oo += i * stride[2][d];
        }
    }
    // the offset of the line's initial value (N = CS_MAX_OPERANDS)
    __device__ __forceinline__ int64_t at_initial(int64_t idx) const
    {
        static_assert(N == CS_MAX_OPERANDS, "initial strides");
        int64_t off = 0;
        for (int d = ndim - 1; d >= 0; d--) {
            const int64_t i = d == 0 ? idx : idx % shape[d];
            idx /= shape[d];
            off += i * stride[CS_OPND_INITIAL][d];
        }
        return off;
    }
    // reset and indices (N = CS_MAX_OPERANDS)
    __device__ __forceinline__ void at_flags(int64_t idx, int64_t &orst, int64_t &oidx) const
    {
        static_assert(N == CS_MAX_OPERANDS, "reset and indices strides");
        orst = oidx = 0;
        for (int d = ndim - 1; d >= 0; d--) {
            const int64_t i = d == 0 ? idx : idx % shape[d];
            idx /= shape[d];
            orst += i * stride[CS_OPND_RESET][d];
            oidx += i * stride[CS_OPND_INDICES][d];
        }
    }
};
using LineOffsets = LineOffsetsOf<3>;
using ScanLineOffsets = LineOffsetsOf<CS_MAX_OPERANDS>;

template <int N = 3>
inline LineOffsetsOf<N> line_offsets_of(const cs_iter &it)
{
    LineOffsetsOf<N> l;
    l.ndim = it.ndim;
    for (int d = 0; d < CS_MAX_DIMS; d++) {
        l.shape[d] = d < it.ndim ? it.shape[d] : 1;
        for (int o = 0; o < N; o++) l.stride[o][d] = d < it.ndim ? it.strides[o][d] : 0;
    }
    return l;
}

}  // namespace cuscan
