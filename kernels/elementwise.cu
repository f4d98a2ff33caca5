// elementwise.cu - fill, rand, arange, copy, unary and binary ops, reductions and comparisons on
// CUDA. The per-element semantics come from src/scalar.h, shared with the CPU backend, so both
// devices compute the same values. These are the toolkit's ops, written for clarity: one pass each,
// each thread walking a short run of consecutive elements.
#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>
#include "internal.h"
#include "scalar.h"
#include "scan_common.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kRun = 4;  // consecutive elements per thread

// The same offset walker the scan kernels use for their outer dims.
using Walker = cuscan::LineOffsets;
Walker walker_of(const cs_iter &it) { return cuscan::line_offsets_of(it); }

// Offsets of linear index i, plus the multi-index so the next element is one increment away.
struct Cursor {
    int64_t idx[CS_MAX_DIMS];
    int64_t off[3];

    __device__ void seek(const Walker &w, int64_t i)
    {
        off[0] = off[1] = off[2] = 0;
        for (int d = w.ndim - 1; d >= 0; d--) {
            idx[d] = i % w.shape[d];
            i /= w.shape[d];
            for (int o = 0; o < 3; o++) off[o] += idx[d] * w.stride[o][d];
        }
    }
    __device__ void next(const Walker &w)
    {
        for (int d = w.ndim - 1; d >= 0; d--) {
            for (int o = 0; o < 3; o++) off[o] += w.stride[o][d];
            if (++idx[d] < w.shape[d]) return;
            for (int o = 0; o < 3; o++) off[o] -= w.shape[d] * w.stride[o][d];
            idx[d] = 0;
        }
    }
};

struct EwArgs {
    cs_elementwise_plan p;
    Walker w;
};

__device__ void ew_one(const cs_elementwise_plan &p, int64_t i, const int64_t *off)
{
    const int is_float = cs_is_float(p.compute);
    const cs_dtype od = p.dtype[0], ad = p.dtype[1], bd = p.dtype[2];
    switch (p.op) {
    case CS_EW_FILL:
        if (cs_is_float(od)) cs_store_double(p.ptr[0], od, off[0], p.scalar);
        else cs_store_int(p.ptr[0], od, off[0], p.iscalar);
        break;
    case CS_EW_RAND:
        cs_store_double(p.ptr[0], od, off[0], cs_uniform((uint64_t)i, p.seed, od));
        break;
    case CS_EW_RANDN:
        cs_store_double(p.ptr[0], od, off[0], cs_normal((uint64_t)i, p.seed));
        break;
    case CS_EW_WHERE:
        if (!((const uint8_t *)p.ptr[1])[off[1]]) break;
        if (is_float) cs_store_double(p.ptr[0], od, off[0], cs_load_double(p.ptr[2], bd, off[2]));
        else cs_store_int(p.ptr[0], od, off[0], cs_load_int(p.ptr[2], bd, off[2]));
        break;
    case CS_EW_ARANGE:
        if (is_float) cs_store_double(p.ptr[0], od, off[0], p.scalar + (double)i * p.scalar2);
        else cs_store_int(p.ptr[0], od, off[0], (int64_t)p.scalar + i * (int64_t)p.scalar2);
        break;
    case CS_EW_COPY:
        if (is_float) cs_store_double(p.ptr[0], od, off[0], cs_load_double(p.ptr[1], ad, off[1]));
        else cs_store_int(p.ptr[0], od, off[0], cs_load_int(p.ptr[1], ad, off[1]));
        break;
    default:
        if (p.nin == 1 && !p.has_scalar) {
            if (p.compute == CS_BOOL || !is_float)
                cs_store_int(p.ptr[0], od, off[0], cs_unary_int(p.op, cs_load_int(p.ptr[1], ad, off[1])));
            else
                cs_store_double(p.ptr[0], od, off[0], cs_unary_double(p.op, cs_load_double(p.ptr[1], ad, off[1])));
        } else if (is_float) {
            double a = cs_load_double(p.ptr[1], ad, off[1]);
            double b = p.has_scalar ? p.scalar : cs_load_double(p.ptr[2], bd, off[2]);
            cs_store_double(p.ptr[0], od, off[0], p.scalar_first ? cs_binary_double(p.op, b, a) : cs_binary_double(p.op, a, b));
        } else {
            int64_t a = cs_load_int(p.ptr[1], ad, off[1]);
            int64_t b = p.has_scalar ? (int64_t)p.scalar : cs_load_int(p.ptr[2], bd, off[2]);
            cs_store_int(p.ptr[0], od, off[0], p.scalar_first ? cs_binary_int(p.op, b, a) : cs_binary_int(p.op, a, b));
        }
    }
}

__global__ void __launch_bounds__(kThreads) elementwise_kernel(const EwArgs a)
{
    const int64_t first = ((int64_t)blockIdx.x * kThreads + threadIdx.x) * kRun;
    if (first >= a.p.numel) return;
    Cursor c;
    c.seek(a.w, first);
    for (int r = 0; r < kRun && first + r < a.p.numel; r++) {
        ew_one(a.p, first + r, c.off);
        c.next(a.w);
    }
}

// Operands that are all dense runs in one order: element i of each at offset i, a warp's lanes on
// neighbouring elements (coalesced), no walker to seek.
__global__ void __launch_bounds__(kThreads) elementwise_dense_kernel(const cs_elementwise_plan p)
{
    const int64_t step = (int64_t)gridDim.x * kThreads;
    for (int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x; i < p.numel; i += step) {
        const int64_t off[3] = { i, i, i };
        ew_one(p, i, off);
    }
}

// ---- reductions: a block folds one piece of one line; a second pass folds the pieces in order ----
constexpr int64_t kReducePiece = 1 << 16;

struct ReduceArgs {
    cs_reduce_plan p;
    Walker w;            // outer dims: operand 0 x, operand 1 out
    int64_t pieces;      // per line
    void *partial;       // pieces x lines values (double or int64), NULL when pieces == 1
};

template <typename T>
__device__ T reduce_combine(int op, T a, T b);
template <>
__device__ double reduce_combine<double>(int op, double a, double b)
{
    return op == CS_REDUCE_MAX ? cs_binary_double(CS_MAX2, a, b)
         : op == CS_REDUCE_MIN ? cs_binary_double(CS_MIN2, a, b) : a + b;
}
template <>
__device__ int64_t reduce_combine<int64_t>(int op, int64_t a, int64_t b)
{
    return cs_binary_int(op == CS_REDUCE_MAX ? CS_MAX2 : op == CS_REDUCE_MIN ? CS_MIN2 : CS_ADD, a, b);
}

template <typename T>
__device__ T reduce_load(const cs_reduce_plan &p, int64_t i)
{
    if constexpr (std::is_same_v<T, double>) return cs_load_double(p.x, p.in_dtype, i);
    else return cs_load_int(p.x, p.in_dtype, i);
}

template <typename T>
__device__ void reduce_store(const cs_reduce_plan &p, int64_t i, T v)
{
    if constexpr (std::is_same_v<T, double>) {
        if (p.op == CS_REDUCE_MEAN) v = v / (double)p.len;
        cs_store_double(p.out, p.out_dtype, i, v);
    } else {
        cs_store_int(p.out, p.out_dtype, i, v);
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) reduce_pieces_kernel(const ReduceArgs a)
{
    using BlockReduce = cub::BlockReduce<T, kThreads>;
    __shared__ typename BlockReduce::TempStorage tmp;
    const int64_t line = blockIdx.x / a.pieces, piece = blockIdx.x % a.pieces;
    Cursor c;
    c.seek(a.w, line);
    const int64_t begin = piece * kReducePiece;
    const int64_t end = min(a.p.len, begin + kReducePiece);
    const int op = a.p.op;
    const bool sum = op == CS_REDUCE_SUM || op == CS_REDUCE_MEAN;
    T acc = sum ? T(0) : reduce_load<T>(a.p, c.off[0] + begin * a.p.stride);
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads)
        acc = reduce_combine<T>(op, acc, reduce_load<T>(a.p, c.off[0] + i * a.p.stride));
    T total = BlockReduce(tmp).Reduce(acc, [op](T x, T y) { return reduce_combine<T>(op, x, y); });
    if (threadIdx.x != 0) return;
    if (a.pieces == 1) reduce_store<T>(a.p, c.off[1], total);
    else static_cast<T *>(a.partial)[line * a.pieces + piece] = total;
}

// Lines side by side (the reduced dim is not the contiguous one, e.g. a sum over rows): a thread
// folds one piece of one line, neighbouring threads neighbouring lines, so a warp's loads of one
// row are one coalesced access; a block per line would read one element per 32-byte sector.
constexpr int kReduceUnroll = 8;
template <typename T>
__global__ void __launch_bounds__(kThreads) reduce_across_kernel(const ReduceArgs a, int64_t piece_len)
{
    const int64_t line = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    if (line >= a.p.nouter) return;
    Cursor c;
    c.seek(a.w, line);
    const int64_t piece = blockIdx.y, begin = piece * piece_len, end = min(a.p.len, begin + piece_len);
    const int op = a.p.op;
    const bool sum = op == CS_REDUCE_SUM || op == CS_REDUCE_MEAN;
    T acc = sum ? T(0) : reduce_load<T>(a.p, c.off[0] + begin * a.p.stride);
    int64_t i = begin;
    for (; i + kReduceUnroll <= end; i += kReduceUnroll) {
        T v[kReduceUnroll];   // loads first, so that they are in flight together
#pragma unroll
        for (int k = 0; k < kReduceUnroll; k++) v[k] = reduce_load<T>(a.p, c.off[0] + (i + k) * a.p.stride);
#pragma unroll
        for (int k = 0; k < kReduceUnroll; k++) acc = reduce_combine<T>(op, acc, v[k]);
    }
    for (; i < end; i++) acc = reduce_combine<T>(op, acc, reduce_load<T>(a.p, c.off[0] + i * a.p.stride));
    if (a.pieces == 1) reduce_store<T>(a.p, c.off[1], acc);
    else static_cast<T *>(a.partial)[line * a.pieces + piece] = acc;
}

// The same for float32 lines of unit stride: a thread folds four neighbouring lines from one 16-byte
// load a row (a warp moves 512 bytes a request instead of 128).
__global__ void __launch_bounds__(kThreads) reduce_across4_kernel(const ReduceArgs a, int64_t piece_len)
{
    const int64_t line = ((int64_t)blockIdx.x * kThreads + threadIdx.x) * 4;
    if (line >= a.p.nouter) return;
    const int64_t piece = blockIdx.y, begin = piece * piece_len, end = min(a.p.len, begin + piece_len);
    const float *x = static_cast<const float *>(a.p.x) + line;
    const int op = a.p.op;
    const bool sum = op == CS_REDUCE_SUM || op == CS_REDUCE_MEAN;
    const int64_t stride = a.p.stride;
    double acc[4];
    {
        const float4 v = *reinterpret_cast<const float4 *>(x + begin * stride);
        acc[0] = sum ? 0.0 : v.x;
        acc[1] = sum ? 0.0 : v.y;
        acc[2] = sum ? 0.0 : v.z;
        acc[3] = sum ? 0.0 : v.w;
    }
    int64_t i = begin;
    for (; i + kReduceUnroll <= end; i += kReduceUnroll) {
        float4 v[kReduceUnroll];
#pragma unroll
        for (int k = 0; k < kReduceUnroll; k++) v[k] = *reinterpret_cast<const float4 *>(x + (i + k) * stride);
#pragma unroll
        for (int k = 0; k < kReduceUnroll; k++) {
            acc[0] = reduce_combine<double>(op, acc[0], v[k].x);
            acc[1] = reduce_combine<double>(op, acc[1], v[k].y);
            acc[2] = reduce_combine<double>(op, acc[2], v[k].z);
            acc[3] = reduce_combine<double>(op, acc[3], v[k].w);
        }
    }
    for (; i < end; i++) {
        const float4 v = *reinterpret_cast<const float4 *>(x + i * stride);
        acc[0] = reduce_combine<double>(op, acc[0], v.x);
        acc[1] = reduce_combine<double>(op, acc[1], v.y);
        acc[2] = reduce_combine<double>(op, acc[2], v.z);
        acc[3] = reduce_combine<double>(op, acc[3], v.w);
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if (a.pieces == 1) reduce_store<double>(a.p, (line + j) * a.w.stride[1][0], acc[j]);
        else static_cast<double *>(a.partial)[(line + j) * a.pieces + piece] = acc[j];
    }
}

template <typename T>
__global__ void reduce_lines_kernel(const ReduceArgs a)
{
    const int64_t line = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    if (line >= a.p.nouter) return;
    const T *part = static_cast<const T *>(a.partial) + line * a.pieces;
    T acc = part[0];
    for (int64_t k = 1; k < a.pieces; k++) acc = reduce_combine<T>(a.p.op, acc, part[k]);
    Cursor c;
    c.seek(a.w, line);
    reduce_store<T>(a.p, c.off[1], acc);
}

template <typename T>
cs_status reduce_with(const cs_reduce_plan *p, cudaStream_t s)
{
    ReduceArgs a;
    a.p = *p;
    a.w = walker_of(p->outer);
    a.pieces = p->len == 0 ? 1 : (p->len + kReducePiece - 1) / kReducePiece;
    a.partial = nullptr;
    // lines side by side in memory: a thread a line (a piece of one), pieces enough to fill the GPU
    const bool across = p->len > 0 && p->stride != 1 && p->nouter >= 32 && p->outer.ndim > 0 &&
                        llabs(p->outer.strides[0][p->outer.ndim - 1]) == 1;
    int64_t piece_len = p->len;
    // float32 lines of one outer dim, 16-byte aligned: four lines a thread
    const bool four = across && std::is_same_v<T, double> && p->in_dtype == CS_FLOAT32 && p->outer.ndim == 1 &&
                      p->outer.strides[0][0] == 1 && p->nouter % 4 == 0 && p->stride % 4 == 0 &&
                      (uintptr_t)p->x % 16 == 0;
    if (across) {
        const int64_t threads = four ? p->nouter / 4 : p->nouter;
        const int64_t want = ((int64_t)cs_cuda_multiprocessors() * 2048 + threads - 1) / threads;
        int64_t pieces = want < 1 ? 1 : want;
        if (pieces > (p->len + 63) / 64) pieces = (p->len + 63) / 64;
        if (pieces > 65535) pieces = 65535;
        piece_len = (p->len + pieces - 1) / pieces;
        a.pieces = (p->len + piece_len - 1) / piece_len;
    }
    if (p->len == 0) {
        // empty sums and means: one thread per line writes 0 (or NaN for the mean)
        a.pieces = 1;
    }
    if (a.pieces > 1) {
        cs_status st = cs_cuda_temp(&a.partial, (size_t)(a.pieces * p->nouter) * sizeof(T));
        if (st) return st;
    }
    const int64_t blocks = across ? ((four ? p->nouter / 4 : p->nouter) + kThreads - 1) / kThreads : p->nouter * a.pieces;
    if (blocks > 0x7fffffff) {
        cs_cuda_temp_free(a.partial);
        return cs_fail(CS_ERR_UNSUPPORTED, "reduction too large");
    }
    if (four) {
        if constexpr (std::is_same_v<T, double>)
            reduce_across4_kernel<<<dim3((unsigned)blocks, (unsigned)a.pieces), kThreads, 0, s>>>(a, piece_len);
    } else if (across) {
        reduce_across_kernel<T><<<dim3((unsigned)blocks, (unsigned)a.pieces), kThreads, 0, s>>>(a, piece_len);
    }
    else reduce_pieces_kernel<T><<<(unsigned)blocks, kThreads, 0, s>>>(a);
    cs_status st = cs_cuda_check(cudaGetLastError(), "reduce kernel launch");
    if (!st && a.pieces > 1) {
        reduce_lines_kernel<T><<<(unsigned)((p->nouter + kThreads - 1) / kThreads), kThreads, 0, s>>>(a);
        st = cs_cuda_check(cudaGetLastError(), "reduce kernel launch");
    }
    cs_cuda_temp_free(a.partial);
    return st;
}

// ---- comparison: max |a - b| and the count of elements outside tolerance ----
struct CompareResult {
    unsigned long long max_bits;  // bits of a non-negative double: integer order is value order
    unsigned long long far;
    int nan_mismatch;
};

struct CompareArgs {
    cs_elementwise_plan p;
    Walker w;
    double rtol, atol;
    int equal_nan;
    CompareResult *result;
};

__global__ void __launch_bounds__(kThreads) compare_kernel(const CompareArgs a)
{
    using Max = cub::BlockReduce<double, kThreads>;
    using Sum = cub::BlockReduce<unsigned long long, kThreads>;
    __shared__ union {
        typename Max::TempStorage m;
        typename Sum::TempStorage s;
    } tmp;
    double worst = 0.0;
    unsigned long long far = 0;
    int nan_mismatch = 0;
    const int64_t first = ((int64_t)blockIdx.x * kThreads + threadIdx.x) * kRun;
    if (first < a.p.numel) {
        Cursor c;
        c.seek(a.w, first);
        for (int r = 0; r < kRun && first + r < a.p.numel; r++) {
            double x = cs_load_double(a.p.ptr[1], a.p.dtype[1], c.off[1]);
            double y = cs_load_double(a.p.ptr[2], a.p.dtype[2], c.off[2]);
            c.next(a.w);
            bool xn = x != x, yn = y != y;
            if (xn || yn) {
                if (!(xn && yn && a.equal_nan)) far++;
                if (xn != yn) nan_mismatch = 1;
                continue;
            }
            if (x == y) continue;
            double d = fabs(x - y);
            worst = d > worst ? d : worst;
            if (isinf(x) || isinf(y) || !(d <= a.atol + a.rtol * fabs(y))) far++;  // inf: close only to itself
        }
    }
    double bw = Max(tmp.m).Reduce(worst, [](double u, double v) { return u > v ? u : v; });
    __syncthreads();
    unsigned long long bf = Sum(tmp.s).Sum(far);
    int any_nan = __syncthreads_or(nan_mismatch);
    if (threadIdx.x == 0) {
        atomicMax(&a.result->max_bits, (unsigned long long)__double_as_longlong(bw));
        atomicAdd(&a.result->far, bf);
        if (any_nan) atomicOr(&a.result->nan_mismatch, 1);
    }
}

int64_t blocks_for(int64_t numel) { return (numel + (int64_t)kThreads * kRun - 1) / ((int64_t)kThreads * kRun); }

// Blocks of a grid-stride loop over n items: enough to fill the GPU, no more than the items need.
unsigned stride_blocks(int64_t n)
{
    const int64_t most = 16 * (int64_t)cs_cuda_multiprocessors();
    return (unsigned)std::max<int64_t>(1, std::min((n + kThreads - 1) / kThreads, most));
}

// Whether operand o walks memory element after element (a dense run in row-major order).
bool dense_run(const Walker &w, int o)
{
    int64_t expect = 1;
    for (int d = w.ndim - 1; d >= 0; d--) {
        if (w.shape[d] != 1 && w.stride[o][d] != expect) return false;
        expect *= w.shape[d];
    }
    return true;
}

// A fill of a dense run: the value's bits (as ew_one stores them) repeated, in 16-byte stores, and
// the run's ragged ends byte by byte from the same pattern. An element's size divides 16 and the run
// starts on an element, so the pattern has one phase at every 16-byte boundary of the run. (The
// walker's kernel stores an element a thread at a time and converts the value for each: a tenth of
// the memory's speed.)
__global__ void __launch_bounds__(kThreads) fill_dense_kernel(unsigned char *dst, int64_t bytes, uint4 pattern)
{
    const int64_t head = min((int64_t)((16 - ((uintptr_t)dst & 15)) & 15), bytes);
    const int64_t nvec = (bytes - head) / 16, tail = head + nvec * 16;
    uint4 *v = reinterpret_cast<uint4 *>(dst + head);
    for (int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x; i < nvec; i += (int64_t)gridDim.x * kThreads)
        v[i] = pattern;
    if (blockIdx.x == 0 && threadIdx.x < 32) {
        const unsigned char *pb = reinterpret_cast<const unsigned char *>(&pattern);
        const int t = threadIdx.x & 15;
        if (threadIdx.x < 16 && t < head) dst[t] = pb[t];
        if (threadIdx.x >= 16 && tail + t < bytes) dst[tail + t] = pb[t];
    }
}

cs_status fill_dense(const cs_elementwise_plan *p, cudaStream_t s)
{
    const cs_dtype od = p->dtype[0];
    const int size = (int)cs_dtype_size(od);
    unsigned char elem[8] = { 0 }, pat[16];
    if (cs_is_float(od)) cs_store_double(elem, od, 0, p->scalar);
    else cs_store_int(elem, od, 0, p->iscalar);
    for (int k = 0; k < 16; k++) pat[k] = elem[k % size];
    uint4 pattern;
    memcpy(&pattern, pat, sizeof pattern);
    const int64_t bytes = p->numel * size;
    fill_dense_kernel<<<stride_blocks(bytes / 16), kThreads, 0, s>>>(static_cast<unsigned char *>(p->ptr[0]), bytes,
                                                                     pattern);
    return cs_cuda_check(cudaGetLastError(), "fill kernel launch");
}

}  // namespace

extern "C" cs_status cs_cuda_elementwise(const cs_elementwise_plan *p)
{
    cudaStream_t s = (cudaStream_t)cs_cuda_stream_handle();
    EwArgs a;
    a.p = *p;
    a.w = walker_of(p->it);
    bool dense = true;
    for (int o = 0; o <= p->nin && o < 3; o++) dense = dense && dense_run(a.w, o);
    if (dense && p->op == CS_EW_FILL) return fill_dense(p, s);
    if (dense) {
        elementwise_dense_kernel<<<stride_blocks(p->numel), kThreads, 0, s>>>(*p);
        return cs_cuda_check(cudaGetLastError(), "element-wise kernel launch");
    }
    int64_t blocks = blocks_for(p->numel);
    if (blocks > 0x7fffffff) return cs_fail(CS_ERR_UNSUPPORTED, "element-wise op too large");
    elementwise_kernel<<<(unsigned)blocks, kThreads, 0, s>>>(a);
    return cs_cuda_check(cudaGetLastError(), "element-wise kernel launch");
}

extern "C" cs_status cs_cuda_reduce(const cs_reduce_plan *p)
{
    cudaStream_t s = (cudaStream_t)cs_cuda_stream_handle();
    const bool as_double = cs_dtype_is_float(p->in_dtype) || p->op == CS_REDUCE_MEAN;
    return as_double ? reduce_with<double>(p, s) : reduce_with<int64_t>(p, s);
}

extern "C" cs_status cs_cuda_compare(const cs_elementwise_plan *p, double rtol, double atol, int equal_nan,
                                     double *max_abs, int64_t *n_far)
{
    cudaStream_t s = (cudaStream_t)cs_cuda_stream_handle();
    CompareArgs a;
    a.p = *p;
    a.w = walker_of(p->it);
    a.rtol = rtol;
    a.atol = atol;
    a.equal_nan = equal_nan;
    int64_t blocks = blocks_for(p->numel);
    if (blocks > 0x7fffffff) return cs_fail(CS_ERR_UNSUPPORTED, "comparison too large");
    void *scratch;
    cs_status st = cs_cuda_temp(&scratch, sizeof(CompareResult));
    if (st) return st;
    a.result = static_cast<CompareResult *>(scratch);
    CompareResult r;
    st = cs_cuda_check(cudaMemsetAsync(a.result, 0, sizeof(CompareResult), s), "compare reset");
    if (!st) {
        compare_kernel<<<(unsigned)blocks, kThreads, 0, s>>>(a);
        st = cs_cuda_check(cudaGetLastError(), "compare kernel launch");
    }
    if (!st) st = cs_cuda_check(cudaMemcpyAsync(&r, a.result, sizeof r, cudaMemcpyDeviceToHost, s), "compare result");
    cs_cuda_temp_free(scratch);
    if (!st) st = cs_cuda_check(cudaStreamSynchronize(s), "compare");
    if (st) return st;
    union { unsigned long long u; double d; } bits;
    bits.u = r.max_bits;
    *max_abs = r.nan_mismatch ? NAN : bits.d;
    *n_far = (int64_t)r.far;
    return CS_OK;
}
