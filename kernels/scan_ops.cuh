// scan_ops.cuh - the ops beyond plain cumsum and cumprod, and the spec that carries them through
// the same kernels: segmented sums and products, logcumsumexp, cummax and cummin with indices.
//
// An op is a policy:
//   State             what the fold carries (a number, or a small struct)
//   identity()        starts every fold; op(identity(), x) == x
//   empty()           an exclusive scan's empty prefix and a masked-out element's state
//   op(a, b)          every element of a comes before every element of b in scan order (the ops need
//                     not commute: cummax keeps the later of two equal elements)
//   lift(e, index)    one element (with its 1-based index along the line) as a state
// SegOp turns any of them into the segmented op on (flag, state) pairs: a set flag starts a new
// segment, op((f, a), (g, b)) = (f | g, g ? b : op(a, b)), which is associative, so tiles, warps
// and the look-back combine segments exactly as they combine plain states.
#pragma once
#include <cstdint>
#include <type_traits>
#include "scan_common.cuh"

namespace cuscan {

// (flag, value) pairs of a segmented scan: a set flag starts a new segment.
template <typename T>
struct SegPair {
    int f;
    T v;
};

template <typename Op, typename T>
__device__ __forceinline__ SegPair<T> seg_combine(Op op, SegPair<T> a, SegPair<T> b)
{
    return SegPair<T>{ a.f | b.f, b.f ? b.v : op(a.v, b.v) };
}

// cummax / cummin state: the element's own bits and its 1-based index (0: nothing taken yet).
template <typename V>
struct ArgState {
    V v;
    int64_t i;
};

// ---- segmented cumsum / cumprod: one instance for both, chosen at run time ----
template <typename T>
struct ArithOp {
    using State = T;
    static constexpr bool kIndexed = false;
    int prod = 0;
    ArithOp() = default;
    __host__ __device__ explicit ArithOp(const OpArgs &o) : prod(o.prod) {}
    __device__ __forceinline__ T identity() const { return prod ? T(1) : ScanOp<CS_SCAN_SUM, T>::identity(); }
    __device__ __forceinline__ T empty() const { return prod ? T(1) : T(0); }
    __device__ __forceinline__ T operator()(T a, T b) const
    {
        return prod ? ScanOp<CS_SCAN_PROD, T>()(a, b) : ScanOp<CS_SCAN_SUM, T>()(a, b);
    }
    template <typename E>
    __device__ __forceinline__ T lift(E e, int64_t) const { return to_acc<T>(e); }
};

// ---- logcumsumexp: a running log-sum-exp in float64 ----
__device__ __forceinline__ double minus_inf() { return __longlong_as_double(0xfff0000000000000ll); }

struct LseOp {
    using State = double;
    static constexpr bool kIndexed = false;
    LseOp() = default;
    __host__ __device__ explicit LseOp(const OpArgs &) {}
    __device__ __forceinline__ double identity() const { return minus_inf(); }
    __device__ __forceinline__ double empty() const { return minus_inf(); }
    // max + log1p(exp(min - max)): no overflow whatever the magnitudes. Where min is -inf (the
    // identity: exact) or max is +inf the result is max, which also keeps inf - inf out; NaN wins.
    __device__ __forceinline__ double operator()(double a, double b) const
    {
        const double hi = fmax(a, b), lo = fmin(a, b);
        const double r = (lo == minus_inf() || hi == -minus_inf()) ? hi : hi + log1p(exp(lo - hi));
        return (a != a || b != b) ? a + b : r;
    }
    template <typename E>
    __device__ __forceinline__ double lift(E e, int64_t) const { return to_acc<double>(e); }
};

// ---- cummax / cummin with indices: one instance for both, chosen at run time ----
// The smallest and largest value of each element type (the identities of max and min).
template <typename V>
struct Extremes;
template <>
struct Extremes<int32_t> {
    __device__ __forceinline__ static int32_t lowest() { return INT32_MIN; }
    __device__ __forceinline__ static int32_t highest() { return INT32_MAX; }
};
template <>
struct Extremes<int64_t> {
    __device__ __forceinline__ static int64_t lowest() { return INT64_MIN; }
    __device__ __forceinline__ static int64_t highest() { return INT64_MAX; }
};
template <>
struct Extremes<float> {
    __device__ __forceinline__ static float lowest() { return __int_as_float(0xff800000u); }
    __device__ __forceinline__ static float highest() { return __int_as_float(0x7f800000); }
};
template <>
struct Extremes<double> {
    __device__ __forceinline__ static double lowest() { return minus_inf(); }
    __device__ __forceinline__ static double highest() { return -minus_inf(); }
};
template <>
struct Extremes<__half> {
    __device__ __forceinline__ static __half lowest() { return __half(__half_raw{ (unsigned short)0xfc00 }); }
    __device__ __forceinline__ static __half highest() { return __half(__half_raw{ (unsigned short)0x7c00 }); }
};
template <>
struct Extremes<__nv_bfloat16> {
    __device__ __forceinline__ static __nv_bfloat16 lowest() { return __nv_bfloat16(__nv_bfloat16_raw{ (unsigned short)0xff80 }); }
    __device__ __forceinline__ static __nv_bfloat16 highest() { return __nv_bfloat16(__nv_bfloat16_raw{ (unsigned short)0x7f80 }); }
};
template <>
struct Extremes<unsigned char> {   // bool
    __device__ __forceinline__ static unsigned char lowest() { return 0; }
    __device__ __forceinline__ static unsigned char highest() { return 1; }
};

// An element as a number that orders as the element does (the 2-byte floats widen exactly).
template <typename V>
__device__ __forceinline__ auto order_key(V v)
{
    if constexpr (std::is_same_v<V, __half>) return __half2float(v);
    else if constexpr (std::is_same_v<V, __nv_bfloat16>) return __bfloat162float(v);
    else return v;
}

template <typename V>
struct MaxMinOp {
    using State = ArgState<V>;
    static constexpr bool kIndexed = true;
    int min = 0;
    MaxMinOp() = default;
    __host__ __device__ explicit MaxMinOp(const OpArgs &o) : min(o.min) {}
    __device__ __forceinline__ State identity() const
    {
        return State{ min ? Extremes<V>::highest() : Extremes<V>::lowest(), 0 };
    }
    __device__ __forceinline__ State empty() const { return identity(); }
    // Does the earlier element a beat the later b? Only strictly: ties (-0.0 and +0.0 included) go to
    // the later one; a NaN beats every number, and a later NaN beats an earlier one.
    __device__ __forceinline__ bool beats(V a, V b) const
    {
        const auto x = order_key(a), y = order_key(b);
        if constexpr (std::is_floating_point_v<decltype(x)>) return (min ? x < y : x > y) || (x != x && y == y);
        else return min ? x < y : x > y;
    }
    // b takes over unless it is nothing (index 0: the identity, a masked-out element) or a beats it
    __device__ __forceinline__ State operator()(State a, State b) const { return b.i != 0 && !beats(a.v, b.v) ? b : a; }
    // the element's own bits (bool as 0 / 1), so that -0.0 and NaN payloads come out as they went in
    template <typename E>
    __device__ __forceinline__ State lift(E e, int64_t index) const
    {
        if constexpr (std::is_same_v<V, unsigned char>) return State{ (unsigned char)(e != 0), index };
        else return State{ e, index };
    }
};

// The segmented form of an op: what the flagged kernels fold.
template <class Base>
struct SegOp {
    using BaseState = typename Base::State;
    using State = SegPair<BaseState>;
    Base base;
    SegOp() = default;
    __host__ __device__ explicit SegOp(const OpArgs &o) : base(o) {}
    __device__ __forceinline__ State identity() const { return State{ 0, base.identity() }; }
    __device__ __forceinline__ State empty() const { return State{ 0, base.empty() }; }
    __device__ __forceinline__ State operator()(State a, State b) const { return seg_combine(base, a, b); }
    // An element with its flags: a masked-out one is the op's empty state, and still starts its
    // segment when reset says so.
    template <typename E>
    __device__ __forceinline__ State lift(E e, bool keep, bool reset, int64_t index) const
    {
        return State{ reset ? 1 : 0, keep ? base.lift(e, index) : base.empty() };
    }
};

// The spec of a flagged scan (scan_common.cuh says why): Base is ArithOp, LseOp or MaxMinOp. The
// mask is a run-time switch here, so MASKED is false and the kernels take the flagged paths.
template <class Policy, class Base, typename InT_, typename OutT_, bool REVERSE_>
struct FlaggedSpec {
    using P = Policy;
    using InT = InT_;
    using OutT = OutT_;
    using Op = SegOp<Base>;
    using AccT = typename Op::State;
    static constexpr bool REVERSE = REVERSE_, MASKED = false, FLAGGED = true;
    static constexpr bool INDEXED = Base::kIndexed;
    // what pads a tile past a line's end (it is flagged as not kept, so its value never counts)
    __device__ __forceinline__ static InT in_identity() { return InT(); }
    // an output element: the rounding of the accumulator, or for cummax / cummin the element itself
    __device__ __forceinline__ static OutT out(const AccT &s)
    {
        if constexpr (INDEXED) return s.v.v;
        else return to_out<OutT>(s.v);
    }
    // a line's initial value (cs_scan_args.initial) as the state: it starts no segment, so a reset
    // at the line's first element drops it (cummax / cummin refuse initial values: scan.c)
    __device__ __forceinline__ static AccT initial(const void *base, int64_t off, cs_dtype dtype)
    {
        using B = typename Base::State;
        if constexpr (INDEXED) return Op().identity();
        else if constexpr (std::is_floating_point_v<B>) return AccT{ 0, B(cs_initial_double(base, off, dtype)) };
        else return AccT{ 0, B(cs_initial_int64(base, off, dtype)) };
    }
    __device__ __forceinline__ static int64_t index(const AccT &s)
    {
        if constexpr (INDEXED) return s.v.i;
        else return 0;
    }
    // the slab family's stage holds elements in OutT: exact widenings, and cummax / cummin's own bits
    __device__ __forceinline__ static OutT stage(InT v)
    {
        if constexpr (INDEXED && std::is_same_v<InT, unsigned char>) return (unsigned char)(v != 0);
        else if constexpr (INDEXED) return v;
        else return OutT(to_acc<typename Base::State>(v));
    }
};

// ---- moving states between lanes and through memory, member by member ----
// move (a shuffle of one number) applied to each member of a state; 1- to 4-byte elements that
// are not numbers (the 2-byte floats) travel as their bits.
template <typename T, typename Move>
__device__ __forceinline__ T shuffle_members(T v, Move &&move)
{
    if constexpr (std::is_arithmetic_v<T>) {
        return move(v);
    } else {
        static_assert(sizeof(T) <= 4, "a 1- to 4-byte element");
        unsigned b = 0;
        memcpy(&b, &v, sizeof v);
        b = move(b);
        memcpy(&v, &b, sizeof v);
        return v;
    }
}
template <typename T, typename Move>
__device__ __forceinline__ SegPair<T> shuffle_members(SegPair<T> p, Move &&move)
{
    return SegPair<T>{ shuffle_members(p.f, move), shuffle_members(p.v, move) };
}
template <typename V, typename Move>
__device__ __forceinline__ ArgState<V> shuffle_members(ArgState<V> s, Move &&move)
{
    return ArgState<V>{ shuffle_members(s.v, move), shuffle_members(s.i, move) };
}

template <typename T>
__device__ __forceinline__ T shfl_up_state(T v, int d)
{
    return shuffle_members(v, [d](auto w) { return __shfl_up_sync(0xffffffffu, w, d); });
}
template <typename T>
__device__ __forceinline__ T shfl_state(T v, int src)
{
    return shuffle_members(v, [src](auto w) { return __shfl_sync(0xffffffffu, w, src); });
}

// A load that bypasses L1 (ld.global.cg): another block's posted values.
template <typename T>
__device__ __forceinline__ T load_cg(const T *p)
{
    return __ldcg(p);
}
template <typename T>
__device__ __forceinline__ SegPair<T> load_cg(const SegPair<T> *p)
{
    return SegPair<T>{ __ldcg(&p->f), load_cg(&p->v) };
}
template <typename V>
__device__ __forceinline__ ArgState<V> load_cg(const ArgState<V> *p)
{
    return ArgState<V>{ __ldcg(&p->v), __ldcg(&p->i) };
}

}  // namespace cuscan
