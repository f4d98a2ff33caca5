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
#include "lse_math.cuh"
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
    using Number = T;
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
    __device__ __forceinline__ static T value(T v) { return v; }
    template <typename N>
    __device__ __forceinline__ static T from_number(N x) { return T(x); }
};

// ---- logcumsumexp: a running sum of exp in float64, its exponent apart ----
__device__ __forceinline__ double minus_inf() { return __longlong_as_double(0xfff0000000000000ll); }

static __device__ const LseTables kLseTables = CS_LSE_TABLES;

// The fold's exp as s * 2^k with k a whole number (an int64), so that every input has a state
// (exp(3e38) included) and joining two states scales the smaller one's s by a power of two built
// from bits: no exp or log there, and the exponents' arithmetic is integer work beside the FP64
// pipe. An element costs one exp (lse_math.cuh), an output one log. Beyond 2^60 in magnitude an
// element is its own log-sum (the log of any count is below half its last bit), so such a state's k
// holds the element itself: past every other k (+-2^61 on), ordered as the elements are (a
// positive double's bits order as its value), decoded exactly for the output. -inf elements are the
// empty fold (k below every other, s = 0); NaN ones have s = NaN, which every later join keeps.
struct LseState {
    int64_t k;
    double s;
};

struct LseOp {
    using State = LseState;
    using Number = double;
    static constexpr bool kIndexed = false;
    static constexpr int64_t kEmptyK = INT64_MIN + 2048;     // (room below for k - 1024)
    static constexpr int64_t kHugeK = int64_t(1) << 61;
    static constexpr int64_t kBits2p60 = 0x43b0000000000000ll;   // the bits of 2^60
    LseOp() = default;
    __host__ __device__ explicit LseOp(const OpArgs &) {}
    __device__ __forceinline__ State identity() const { return State{ kEmptyK, 0.0 }; }
    __device__ __forceinline__ State empty() const { return identity(); }
    __device__ __forceinline__ State operator()(State a, State b) const
    {
        const bool a_hi = a.k >= b.k;
        const int64_t kh = a_hi ? a.k : b.k, kl = a_hi ? b.k : a.k;
        const double sh = a_hi ? a.s : b.s, sl = a_hi ? b.s : a.s;
        const int64_t d = max(kl, kh - 1024) - kh;   // in [-1024, 0]
        const double f = d >= -1022 ? __longlong_as_double((1023 + d) << 52) : 0.0;   // 2^d, or 0 far below
        return State{ kh, fma(sl, f, sh) };
    }
    // (the common case without a branch around it: lse_exp_near's bits for any x, replaced for the
    // few elements beyond its range)
    __device__ __forceinline__ static State from_number(double x)
    {
        State st;
        lse_exp_near(x, kLseTables, st.k, st.s);
        if (!(fabs(x) < 0x1p44)) st = from_far(x);
        return st;
    }
    __device__ __noinline__ static State from_far(double x)
    {
        if (fabs(x) < 0x1p60) {
            State st;
            lse_exp(x, kLseTables, st.k, st.s);
            return st;
        }
        if (x != x) return State{ 0, x };
        if (x == minus_inf()) return State{ kEmptyK, 0.0 };
        const int64_t off = kHugeK + (__double_as_longlong(fabs(x)) - kBits2p60);   // +inf included
        return State{ x > 0 ? off : -off, 1.0 };
    }
    // the state's log: -inf for the empty fold, NaN after a NaN, the element itself for a huge k
    // (the log first, whatever the state: the tests after it are selects, not branches around it)
    __device__ __forceinline__ static double value(State v)
    {
        const double l = lse_log(v.k, v.s, kLseTables);
        if (!(v.s > 0.0)) return v.s == 0.0 ? minus_inf() : v.s;
        if (v.k >= kHugeK) return __longlong_as_double(v.k - kHugeK + kBits2p60);
        if (v.k <= -kHugeK) return -__longlong_as_double(-v.k - kHugeK + kBits2p60);
        return l;
    }
    template <typename E>
    __device__ __forceinline__ State lift(E e, int64_t) const { return from_number(to_acc<double>(e)); }
};

// ---- logcumsumexp as a plain float64 sum of exp(x - R) from one reference R ----
// Where every kept element and the carry lie within kLsePlainSpan below R, no term can underflow
// ahead of its own prefix's maximum, so that sum is as exact as the joined states, at an exp, an
// add and a log an element (no joins, no 64-bit selects). Kernels check this and fall back to the
// joined states (NaN, infinities, elements beyond 2^60, resets, wide spans).
constexpr double kLsePlainSpan = 600.0;

// exp(d) for -kLsePlainSpan - 1 <= d <= 0 (lse_exp's k then builds a normal power of two; no
// branch on d's size)
__device__ __forceinline__ double lse_exp_rel(double d)
{
    int64_t k;
    double s;
    lse_exp_near(d, kLseTables, k, s);
    return s * __longlong_as_double((1023 + k) << 52);
}

// A carry (a state) as the plain path sees it.
struct LsePlainCarry {
    bool has;     // not the empty fold
    bool odd;     // NaN or huge: only the joined states keep it
    double log;   // its log to within log(s): enough to choose R
};
__device__ __forceinline__ LsePlainCarry lse_plain_carry(const LseState &c)
{
    LsePlainCarry p;
    p.has = c.s > 0.0;
    p.odd = !(c.s >= 0.0) || (p.has && (c.k >= LseOp::kHugeK || c.k <= -LseOp::kHugeK));   // (the empty fold is not)
    p.log = p.has ? (double)c.k * lse_constants().ln2_hi : minus_inf();
    return p;
}

// The carry's value in R's scale, s 2^k e^-R (R no lower than its log, within kLsePlainSpan of it).
__device__ __forceinline__ double lse_carry_in_scale(const LseState &c, double R)
{
    const double kc = (double)c.k;
    return c.s > 0.0 ? c.s * lse_exp_rel(fma(kc, lse_constants().ln2_hi, -R) + kc * lse_constants().ln2_lo) : 0.0;
}

// e^R P as a state (R finite, P > 0).
__device__ __forceinline__ LseState lse_state_at(double R, double P)
{
    int64_t k;
    double s;
    lse_exp(R, kLseTables, k, s);
    return LseState{ k, s * P };
}

// The output for a plain sum P in R's scale: R + log P, or -inf for an empty one.
__device__ __forceinline__ double lse_plain_value(double R, double P)
{
    const double v = R + lse_log(0, P, kLseTables);   // (finite for P = 0 too: then not used, and no branch)
    return P > 0.0 ? v : minus_inf();
}

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

// SHORT_CIRCUIT: the join as a branch around the tests, b or a taken whole. The tests joined bitwise
// (the default) suit kernels whose joins wait on one another; the short-circuit form suits the
// one-tile segmented rows, whose threads fold independent lines and whose joins mostly keep a.
template <typename V, bool SHORT_CIRCUIT = false>
struct MaxMinOp {
    using State = ArgState<V>;
    static constexpr bool kIndexed = true, kShortCircuit = SHORT_CIRCUIT;
    int min = 0;
    MaxMinOp() = default;
    __host__ __device__ explicit MaxMinOp(const OpArgs &o) : min(o.min) {}
    __device__ __forceinline__ State identity() const
    {
        return State{ min ? Extremes<V>::highest() : Extremes<V>::lowest(), 0 };
    }
    __device__ __forceinline__ State empty() const { return identity(); }
    // Does the earlier element a beat the later b? Only strictly: ties (-0.0 and +0.0 included) go to
    // the later one; a NaN beats every number, and a later NaN beats an earlier one. (The tests are
    // joined bitwise: short-circuit forms compile to branches around every join, which cost the
    // flagged kernels more in latency than the tests themselves.)
    __device__ __forceinline__ bool beats(V a, V b) const
    {
        const auto x = order_key(a), y = order_key(b);
        const bool ahead = min ? x < y : x > y;
        if constexpr (!std::is_floating_point_v<decltype(x)>) return ahead;
        else if constexpr (SHORT_CIRCUIT) return ahead || (x != x && y == y);
        else return ahead | ((x != x) & (y == y));
    }
    // b takes over unless it is nothing (index 0: the identity, a masked-out element) or a beats it
    __device__ __forceinline__ bool takes(const State &a, const State &b) const
    {
        if constexpr (SHORT_CIRCUIT) return b.i != 0 && !beats(a.v, b.v);
        else return (b.i != 0) & !beats(a.v, b.v);
    }
    __device__ __forceinline__ static State pick(bool second, const State &a, const State &b)
    {
        if constexpr (SHORT_CIRCUIT) return second ? b : a;
        else return State{ second ? b.v : a.v, second ? b.i : a.i };
    }
    __device__ __forceinline__ State operator()(State a, State b) const { return pick(takes(a, b), a, b); }
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
    __device__ __forceinline__ State operator()(State a, State b) const
    {
        // cummax / cummin: one choice of b or a, member by member, with no branch around the test
        if constexpr (Base::kIndexed) {
            if constexpr (!Base::kShortCircuit)
                return State{ a.f | b.f, Base::pick(b.f | base.takes(a.v, b.v), a.v, b.v) };
            else return seg_combine(base, a, b);
        } else {
            return seg_combine(base, a, b);
        }
    }
    // An element with its flags: a masked-out one is the op's empty state, and still starts its
    // segment when reset says so.
    template <typename E>
    __device__ __forceinline__ State lift(E e, bool keep, bool reset, int64_t index) const
    {
        return State{ reset ? 1 : 0, keep ? base.lift(e, index) : base.empty() };
    }
};

// The same flagged op with cummax / cummin's join in the short-circuit form (same states).
template <class Op>
struct ShortCircuitJoin { using type = Op; };
template <typename V>
struct ShortCircuitJoin<SegOp<MaxMinOp<V>>> { using type = SegOp<MaxMinOp<V, true>>; };

// Whether a flagged kernel's op is logcumsumexp's (its plain-sum paths; its kernels are bound by
// arithmetic, not by memory).
template <class Op>
inline constexpr bool kIsLse = std::is_same_v<Op, SegOp<LseOp>>;

// The spec of a flagged scan (scan_common.cuh says why): Base is ArithOp, LseOp or MaxMinOp. The
// mask is a run-time switch here, so MASKED is false and the kernels take the flagged paths.
template <class Policy, class Base, typename InT_, typename OutT_, bool REVERSE_>
struct FlaggedSpec {
    using P = Policy;
    using InT = InT_;
    using OutT = OutT_;
    using Op = SegOp<Base>;
    using AccT = typename Op::State;
    static constexpr bool REVERSE = REVERSE_, MASKED = false, FLAGGED = true, RESETS = false;
    static constexpr bool INDEXED = Base::kIndexed;
    // what pads a tile past a line's end (it is flagged as not kept, so its value never counts)
    __device__ __forceinline__ static InT in_identity() { return InT(); }
    // an output element: the rounding of the accumulator, or for cummax / cummin the element itself
    __device__ __forceinline__ static OutT out(const AccT &s)
    {
        if constexpr (INDEXED) return s.v.v;
        else return to_out<OutT>(Base::value(s.v));
    }
    // a line's initial value (cs_scan_args.initial) as the state: it starts no segment, so a reset
    // at the line's first element drops it (cummax / cummin refuse initial values: scan.c)
    __device__ __forceinline__ static AccT initial(const void *base, int64_t off, cs_dtype dtype)
    {
        if constexpr (INDEXED) return Op().identity();
        else if constexpr (std::is_floating_point_v<typename Base::Number>)
            return AccT{ 0, Base::from_number(cs_initial_double(base, off, dtype)) };
        else return AccT{ 0, Base::from_number(cs_initial_int64(base, off, dtype)) };
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
        else return OutT(to_acc<typename Base::Number>(v));
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

template <typename Move>
__device__ __forceinline__ LseState shuffle_members(LseState s, Move &&move)
{
    return LseState{ (int64_t)move((long long)s.k), move(s.s) };
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
__device__ __forceinline__ LseState load_cg(const LseState *p)
{
    return LseState{ (int64_t)__ldcg(reinterpret_cast<const long long *>(&p->k)), __ldcg(&p->s) };
}
template <typename V>
__device__ __forceinline__ ArgState<V> load_cg(const ArgState<V> *p)
{
    return ArgState<V>{ __ldcg(&p->v), __ldcg(&p->i) };
}

}  // namespace cuscan
