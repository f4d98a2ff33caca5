// scan_common.cuh - what every scan kernel shares: the op functors (sum, prod; integers wrap),
// element conversion, vector loads, line offsets, and the look-back status that joins the pieces
// of one line scanned by different blocks.
//
// Determinism: a piece's inclusive prefix is defined as the chain P_i = P_{i-1} op A_i (A_i the
// piece's own total, P_{-1} the identity). A look-back that finds P_k further back folds
// P_k op A_{k+1} op ... op A_{i-1} left to right, which is bit-for-bit that chain whichever k the
// timing gives. So float results never depend on scheduling.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <cuda/atomic>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include "internal.h"

namespace cuscan {

constexpr int kWarp = 32;

template <int OP, typename T>
struct ScanOp {
    __device__ __forceinline__ static T identity() { return OP == CS_SCAN_SUM ? T(0) : T(1); }
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

// Input element -> accumulator; bool inputs are bytes (nonzero is true).
template <typename AccT, typename InT>
__device__ __forceinline__ AccT to_acc(InT v)
{
    if constexpr (std::is_same_v<InT, uint8_t>) return AccT(v != 0);
    else return AccT(v);
}

template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
    T v[N];
};

template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T *p)
{
    return *reinterpret_cast<const Vec<T, N> *>(p);
}

template <typename T, int N>
__device__ __forceinline__ void store_vec(T *p, const Vec<T, N> &v)
{
    *reinterpret_cast<Vec<T, N> *>(p) = v;
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
        static_assert(BYTES == 16 || BYTES == 8 || BYTES == 4 || BYTES == 2, "vector of 2 to 16 bytes");
        using Bits = std::conditional_t<BYTES == 16, int4, std::conditional_t<BYTES == 8, int2,
                     std::conditional_t<BYTES == 4, int, short>>>;
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

// Per-operand element offsets of line `idx` over the outer dims (x, mask, out).
struct LineOffsets {
    int ndim;
    int64_t shape[CS_MAX_DIMS];
    int64_t stride[3][CS_MAX_DIMS];

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
};

inline LineOffsets line_offsets_of(const cs_iter &it)
{
    LineOffsets l;
    l.ndim = it.ndim;
    for (int d = 0; d < CS_MAX_DIMS; d++) {
        l.shape[d] = d < it.ndim ? it.shape[d] : 1;
        for (int o = 0; o < 3; o++) l.stride[o][d] = d < it.ndim ? it.strides[o][d] : 0;
    }
    return l;
}

// ---- look-back status ----
// Flags carry the launch's epoch in their high bits, so flags left by earlier launches read as empty
// and the status words need no clearing between launches.
enum : unsigned { kEmpty = 0, kAggregate = 1, kInclusive = 2 };

template <typename AccT>
struct Lookback {
    unsigned *flag;      // per unit: epoch << 2 | state
    unsigned long long *word;  // per unit, for packed status: (epoch << 2 | state) << 32 | value bits
    AccT *aggregate;     // per unit x width
    AccT *inclusive;     // per unit x width
    int width;
    unsigned epoch;

    __device__ __forceinline__ void set_flag(int64_t unit, unsigned state) const
    {
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> f(flag[unit]);
        f.store(epoch << 2 | state, cuda::memory_order_release);
    }
    __device__ __forceinline__ unsigned get_flag(int64_t unit) const
    {
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> f(flag[unit]);
        unsigned v = f.load(cuda::memory_order_acquire);
        return (v >> 2) == epoch ? (v & 3u) : kEmpty;
    }
};

template <typename AccT>
inline Lookback<AccT> lookback_at(unsigned *flags, unsigned long long *words, void *values, int64_t units, int width,
                                  unsigned epoch)
{
    Lookback<AccT> lb;
    lb.flag = flags + 16;   // the first words are the work queue's
    lb.word = words;
    lb.aggregate = static_cast<AccT *>(values);
    lb.inclusive = lb.aggregate + (size_t)units * width;
    lb.width = width;
    lb.epoch = epoch;
    return lb;
}

// Blocks take units in id order from a counter, so every predecessor of a unit has been taken by a
// running block, and a block holding unit u only ever waits on units below u.
struct WorkQueue {
    unsigned *counter;   // next unit id
    unsigned *done;      // blocks done taking units; the last one resets both words for the next launch
    int64_t units;

    __device__ __forceinline__ int64_t take(int64_t *slot, int &parity) const
    {
        if (threadIdx.x == 0) slot[parity] = atomicAdd(counter, 1u);
        __syncthreads();
        const int64_t u = slot[parity];
        parity ^= 1;
        return u;
    }
    // Called by every block once it will take no more units (after its last take). No fence: thread
    // 0 issues this only after its last take returned, so when the count completes every take of the
    // launch has been performed and the reset cannot overtake one; nothing else is ordered by it.
    __device__ __forceinline__ void finish() const
    {
        if (threadIdx.x == 0) {
            if (atomicAdd(done, 1u) == gridDim.x - 1) {
                atomicExch(counter, 0u);
                atomicExch(done, 0u);
            }
        }
    }
};

inline WorkQueue work_queue_at(unsigned *flags, int64_t units)
{
    return WorkQueue{ flags, flags + 1, units };
}

}  // namespace cuscan
