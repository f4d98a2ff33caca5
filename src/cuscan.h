/*
 * cuscan.h - the whole public C API of cuscan.
 *
 * SYNOPSIS
 *     #include "cuscan.h"      link with -lcuscan
 *
 * DESCRIPTION
 *     cuscan keeps n-dimensional tensors (up to CS_MAX_DIMS dims) in host or CUDA device memory and
 *     runs cumulative sums, products, maxima and minima (with indices) and log-sum-exps along any
 *     dim on either device, segmented too (cs_scan_with). A tensor handle (cs_tensor)
 *     is a view: dtype, device, shape, strides and a storage offset over a reference-counted storage.
 *     Several handles may share one storage; the storage goes away with its last handle.
 *
 *     Dims are 0-based in this C API (the Lua module turns its 1-based dims into these).
 *     Strides and offsets count elements, not bytes.
 *
 *     Every function that can fail returns a cs_status. On failure it sets a message for the calling
 *     thread that cs_last_error() returns, and leaves every tensor the caller holds unchanged. Nothing
 *     here prints, exits or aborts on a caller's mistake.
 *
 *     CUDA work is queued on the library's own stream and returns before it finishes (asynchronous);
 *     functions that hand data to the host (cs_copy into a CPU tensor, cs_compare) wait for it.
 *     cs_synchronize() waits for everything queued.
 *
 *     GPUs: cs_device is the kind of memory (CS_CPU, CS_CUDA); which GPU is an index from 0 to
 *     cs_device_count() - 1, as in CUDA. Each thread has a current GPU (cs_cuda_set_device; GPU 0
 *     at first): a CUDA tensor is made there and keeps that GPU (cs_tensor_device_index), and every
 *     operation on it runs on its GPU, on the library's stream of that GPU, whatever is current
 *     then. Operands of one operation must live on one GPU. cs_synchronize, cs_device_info,
 *     cs_memory_info, cs_memory_trim and new events act on the current GPU.
 *
 *     This header is also read by the LuaJIT module through ffi.cdef, after the build removes its
 *     preprocessor lines: keep declarations plain C without macros.
 */
#ifndef CUSCAN_H
#define CUSCAN_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* the shared library exports these declarations and nothing else */
#pragma GCC visibility push(default)

/* Status codes. */
typedef enum cs_status {
    CS_OK = 0,
    CS_ERR_ARGUMENT = 1,      /* a bad argument; the message names it and what was expected */
    CS_ERR_OUT_OF_MEMORY = 2, /* an allocation failed; the message gives the bytes asked for and free */
    CS_ERR_UNSUPPORTED = 3,   /* the dtype or op is not supported for this call */
    CS_ERR_NO_DEVICE = 4,     /* a CUDA tensor was asked for but no CUDA device is usable */
    CS_ERR_CUDA = 5,          /* the CUDA runtime failed; a lost context stays failed (sticky) */
    CS_ERR_RELEASED = 6       /* the tensor's storage was released with cs_tensor_release */
} cs_status;

/* float16 is IEEE 754 binary16; bfloat16 the top 16 bits of a float32. Both are stored as 2 bytes, and
 * every conversion into them (element-wise results, copies, scans) rounds once to nearest even from a
 * double: beyond the range to +-inf, NaN kept, denormals kept. */
typedef enum cs_dtype {
    CS_FLOAT32 = 0, CS_FLOAT64 = 1, CS_INT32 = 2, CS_INT64 = 3, CS_BOOL = 4, CS_FLOAT16 = 5, CS_BFLOAT16 = 6
} cs_dtype;
typedef enum cs_device { CS_CPU = 0, CS_CUDA = 1 } cs_device;
enum { CS_MAX_DIMS = 8 };

typedef struct cs_tensor cs_tensor;

/* ---- library ----------------------------------------------------------------------------------- */

/* Version string, e.g. "0.1.0". */
const char *cs_version(void);

/* The message of the last failed call on this thread ("" if none). Valid until the next call. */
const char *cs_last_error(void);

/* Bytes per element of a dtype (bool is 1, float16 and bfloat16 2). */
size_t cs_dtype_size(cs_dtype dtype);

/* 1 when the library was built with CUDA and a device is usable, else 0. The first call probes. */
int cs_cuda_available(void);

/* Why CUDA is not available ("" when it is): "no CUDA device found" on a machine without a GPU (with
 * " (built without CUDA)" in a build without CUDA), the runtime's message where a GPU cannot be used,
 * "built without CUDA ..." where a GPU is there but this build has no CUDA side. */
const char *cs_cuda_unavailable_reason(void);

/* GPUs this process can use (CUDA_VISIBLE_DEVICES applied): 0 without CUDA or without a GPU. */
int cs_device_count(void);

/* Makes GPU index (0 .. cs_device_count() - 1) the calling thread's current GPU: CUDA tensors and
 * events made afterwards by this thread live there. CS_ERR_NO_DEVICE without CUDA, CS_ERR_ARGUMENT
 * for an index out of range. */
cs_status cs_cuda_set_device(int index);

/* The calling thread's current GPU, or -1 when CUDA is not available. */
int cs_cuda_get_device(void);

typedef struct cs_device_properties {
    char name[256];
    int64_t total_memory;          /* bytes */
    int major, minor;              /* compute capability */
    int multiprocessors;
    int64_t l2_cache_bytes;
    int driver_version, runtime_version;
} cs_device_properties;

/* Fills *props for the current GPU. CS_ERR_NO_DEVICE without one. */
cs_status cs_device_info(cs_device_properties *props);

/* Waits until all CUDA work queued on the current GPU is done; reports an asynchronous kernel fault
 * here. */
cs_status cs_synchronize(void);

/* Memory on a device (CS_CUDA: the current GPU): bytes cuscan holds in live storages there, and the
 * device's free and total bytes (for CS_CPU: the host's available and total physical memory). */
cs_status cs_memory_info(cs_device device, int64_t *in_use, int64_t *free_bytes, int64_t *total_bytes);

/* Bytes cuscan holds in live storages on a device (CS_CUDA: the current GPU): a counter read, no
 * device call (cheap enough to call after every allocation). */
int64_t cs_memory_in_use(cs_device device);

/* Hands memory that cuscan keeps cached for reuse back: on CS_CUDA the current GPU's pool's free blocks
 * (after waiting for queued work), so that other processes can have them; on CS_CPU the freed host
 * blocks of 8 MiB and more kept for the next host tensor of about the same size (at most 8 blocks
 * and 1/16 of physical memory; fresh pages cost the kernel a fault and a clear each). */
cs_status cs_memory_trim(cs_device device);

/* The host link's own speed, for comparison with cs_copy between devices: copies `bytes` between a
 * pinned host buffer and the device (median of 5 timed copies each way) and reports GB/s. */
cs_status cs_host_link_bandwidth(int64_t bytes, double *host_to_device_gbs, double *device_to_host_gbs);

/* For tests of fault handling only: queues a kernel that writes to an invalid device address. The
 * fault is reported by a later call (cs_synchronize, say), after which the CUDA context is lost and
 * every CUDA call fails with CS_ERR_CUDA; CPU tensors keep working. Never call it otherwise. */
cs_status cs_debug_inject_fault(void);

/* ---- tensors ----------------------------------------------------------------------------------- */

/* A new tensor with fresh, uninitialised storage, contiguous (row-major). ndim 0 is a scalar. A CUDA
 * tensor is made on the current GPU. */
cs_status cs_empty(cs_tensor **out, int ndim, const int64_t *shape, cs_dtype dtype, cs_device device);

/* A new tensor shaped like `like` whose strides follow like's dim order (densely packed), so that an
 * element-wise op between them walks both in the same order. Falls back to row-major when like's
 * strides are not a permutation of a dense layout. */
cs_status cs_empty_like(cs_tensor **out, const cs_tensor *like, cs_dtype dtype, cs_device device);

/* A view of base's storage with the given shape, strides (>= 0) and offset; every element it can
 * address must lie inside the storage. */
cs_status cs_as_strided(cs_tensor **out, const cs_tensor *base, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t offset);

/* Drops the handle (and its storage reference). For garbage collectors; NULL is ignored. */
void cs_tensor_free(cs_tensor *t);

/* Releases the handle's storage reference now; the handle stays valid but every later use of it
 * fails with CS_ERR_RELEASED. Storage shared with other views lives on until they go too. */
cs_status cs_tensor_release(cs_tensor *t);

int cs_tensor_ndim(const cs_tensor *t);
int64_t cs_tensor_size(const cs_tensor *t, int dim);
int64_t cs_tensor_stride(const cs_tensor *t, int dim);
int64_t cs_tensor_offset(const cs_tensor *t);
int64_t cs_tensor_numel(const cs_tensor *t);
cs_dtype cs_tensor_dtype(const cs_tensor *t);
cs_device cs_tensor_device(const cs_tensor *t);
/* The GPU a CUDA tensor lives on (0-based), -1 for a CPU tensor. */
int cs_tensor_device_index(const cs_tensor *t);
int cs_tensor_is_contiguous(const cs_tensor *t);
int cs_tensor_is_released(const cs_tensor *t);

/* Storage base pointer of a CPU tensor (element i lives at base[offset + sum(idx*stride)]);
 * NULL for CUDA tensors and released ones. */
void *cs_tensor_host_data(const cs_tensor *t);

/* Address of the view's element 0 on its device (a device pointer for CUDA tensors): valid while a
 * view of the storage lives. NULL for released tensors and for storages of no bytes. */
void *cs_tensor_data(const cs_tensor *t);

/* How two tensors' elements relate: 0 no byte in common (views that interleave, such as two columns
 * of one matrix, included), 1 the very same view (same storage, offset, shape and strides), 2 sharing
 * bytes some other way (or possibly so, for views too intricate to settle in a bounded search). */
int cs_tensor_overlap(const cs_tensor *a, const cs_tensor *b);

/* ---- filling and moving data ------------------------------------------------------------------- */

/* Every element of t set to value. An integer dtype takes the value truncated toward zero and
 * refuses (CS_ERR_ARGUMENT) NaN, the infinities and values outside its range. */
cs_status cs_fill(cs_tensor *t, double value);
cs_status cs_fill_int64(cs_tensor *t, int64_t value);

/* Uniform numbers in [0, 1) from Philox4x32-10 keyed by seed, counting elements in row-major order:
 * the same seed gives the same values on either device and any layout. float dtypes only. */
cs_status cs_rand(cs_tensor *t, uint64_t seed);

/* Standard normal numbers by the Box-Muller transform of two Philox4x32-10 uniforms per element,
 * keyed by seed and counted in row-major order like cs_rand (a stream of its own, so rand and randn
 * of one seed are independent). float dtypes only. Both devices compute the same values, up to the
 * rounding of their log and cos. */
cs_status cs_randn(cs_tensor *t, uint64_t seed);

/* t[i] = start + i * step in row-major order (computed in int64 for integer dtypes, where start,
 * step and every element must fit: CS_ERR_ARGUMENT otherwise). */
cs_status cs_arange(cs_tensor *t, double start, double step);

/* dst = src element by element: same shape, any dtypes, any strides, any devices (between two GPUs
 * peer to peer where they allow it, else through the host by the driver). Conversions to an
 * integer dtype truncate toward zero and saturate: values beyond its range become its lowest or
 * highest value and NaN becomes 0; bool is v != 0. Waits when dst is on the CPU and src on CUDA. */
cs_status cs_copy(cs_tensor *dst, const cs_tensor *src);

/* out = x with the order of elements reversed along every dim d whose bit (1u << d) is set in dims:
 * same shape and device, any dtypes (converted as cs_copy does); out must not overlap x. */
cs_status cs_flip(cs_tensor *out, const cs_tensor *x, unsigned dims);

/* ---- timing ------------------------------------------------------------------------------------ */

/* Events mark points in the queued work: on CUDA they are CUDA events on the library's stream of
 * the GPU current when the event was made (so the time between two is device time; both must be of
 * one GPU); on the CPU they read a monotonic clock. */
typedef struct cs_event cs_event;
cs_status cs_event_create(cs_event **out, cs_device device);
void cs_event_free(cs_event *e);
cs_status cs_event_record(cs_event *e);
/* Milliseconds from start to end; waits for end to complete. Both must have been recorded
 * (CS_ERR_ARGUMENT otherwise). */
cs_status cs_event_elapsed(cs_event *start, cs_event *end, double *ms);

/* ---- scans ------------------------------------------------------------------------------------- */

typedef enum cs_scan_op {
    CS_SCAN_SUM = 0,       /* cumsum */
    CS_SCAN_PROD = 1,      /* cumprod */
    CS_SCAN_MAX = 2,       /* cummax: running maximum, with its index when asked (cs_scan_with) */
    CS_SCAN_MIN = 3,       /* cummin */
    CS_SCAN_LOGSUMEXP = 4  /* logcumsumexp: log of the running sum of exp, float dtypes only */
} cs_scan_op;
enum { CS_SCAN_REVERSE = 1, CS_SCAN_EXCLUSIVE = 2 };

/* Cumulative sum or product of x along dim, written to out.
 *   flags   CS_SCAN_REVERSE: from the end of the dim toward its start, in one pass.
 *           CS_SCAN_EXCLUSIVE: element i gets the scan of the elements strictly before it (after it
 *           when reversed); the first gets the empty prefix (+0.0 or 0 for sums, 1 for products).
 *   mask    NULL, or a bool tensor of x's shape and device: an element where it is false reads as 0
 *           (sums) or 1 (products), so a NaN or Inf under a false mask never reaches the result; the
 *           scan of where(mask, x, 0).
 *   out     x's shape and device; its dtype is the output type. Supported (x -> out):
 *           float16 -> float16|float32|float64, bfloat16 -> bfloat16|float32|float64,
 *           float32 -> float32|float64, float64 -> float64, int32 -> int32|int64, int64 -> int64,
 *           bool -> int32|int64 (sum only); cs_scan_supported says. out may be x itself (in place)
 *           but must not otherwise overlap x or mask.
 * Floats accumulate in float64 on both devices and each output is rounded once from the float64
 * prefix: float32, float16 and bfloat16 outputs are within 1 ulp of the correctly rounded true
 * prefix, +-inf exactly when that prefix is beyond the output's range, denormals kept. -0.0 is the
 * identity of sums (a sum of -0.0 is -0.0). Integer sums and products wrap around (two's complement). Results are deterministic: the
 * same bits on every run for a given device, shape, layout and dtype; float64 sums fold in a fixed
 * order (along the line on the CPU, in fixed tiles and trees on CUDA), so the two devices may differ
 * in the last bits of float64 results.
 *
 * Environment: CUSCAN_LOG=plan prints the plan of each scan to stderr (kernel family, mode, tile,
 * grid); CUSCAN_FORCE_FAMILY=name[/mode] makes CUDA scans use that family where it can (rows,
 * columns, slabs; for tests). */
cs_status cs_scan(cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op, unsigned flags,
                  const cs_tensor *mask);

/* Every scan's options; zero-initialise and set what is needed. */
typedef struct cs_scan_args {
    unsigned flags;           /* CS_SCAN_REVERSE, CS_SCAN_EXCLUSIVE */
    const cs_tensor *mask;    /* NULL, or bool of x's shape and device: false elements are skipped */
    const cs_tensor *reset;   /* NULL, or bool of x's shape and device: segmented scan (below) */
    cs_tensor *indices;       /* CS_SCAN_MAX and CS_SCAN_MIN: NULL, or int64 of x's shape and device
                               * that receives the 1-based index along dim of each output's element */
    const cs_tensor *initial; /* NULL, or one value per line that the scan starts from (below) */
} cs_scan_args;

/* cs_scan with every option: the operators beyond sum and product, segmented scans and indices.
 *   CS_SCAN_MAX / CS_SCAN_MIN  out has x's dtype (every dtype, bool included). Ties take the element
 *           met last in the scan's order (the larger index forward, the smaller reversed), as
 *           PyTorch's cummax does; a NaN beats every number and each later NaN takes over, so
 *           values stay NaN from the first NaN on and the index is the latest NaN's. -0.0 and +0.0
 *           tie. Where no element has been taken yet (an exclusive scan's first element, masked-out
 *           elements before the first kept one) the value is the op's identity (-inf / +inf for
 *           floats, the dtype's minimum / maximum for integers, false / true for bool) and the
 *           index is 0.
 *   CS_SCAN_LOGSUMEXP  float inputs, float outputs as for sums; accumulated in float64 as a running
 *           log-sum-exp (stable for inputs near the dtype's maximum: a sum of exp(x - R) from a
 *           reference R no lower than the values it takes in; on CUDA partial sums join with their
 *           power of two apart). -inf is the identity: an
 *           all -inf prefix, a masked-out element and an exclusive scan's empty prefix give -inf;
 *           NaN propagates; +inf gives +inf.
 *   mask    a masked-out element is skipped: sums and products read it as +0.0 (0) or 1, as
 *           cs_scan does; max, min and logsumexp leave their running value and index as they were.
 *   reset   the scan restarts at every element where reset is true, in the scan's direction: the
 *           element is the first of a new segment, so a forward scan's segment runs from a true
 *           reset up to the element before the next true reset, and a reverse scan's runs from a
 *           true reset down to the element just above the next true reset below it (the next one
 *           met reading from the end). The first element met (index 0 forward, len - 1 reversed)
 *           starts a segment whatever reset says there. An exclusive scan gives the empty prefix
 *           (index 0 for max and min) at each segment's first element. A masked-out element still
 *           starts its segment. reset may be the same tensor as mask.
 *   indices only with CS_SCAN_MAX / CS_SCAN_MIN; must not overlap x, out, mask or reset.
 *   initial the value each line starts from (a carry-in, e.g. the total of the previous chunk of a
 *           stream), for CS_SCAN_SUM, CS_SCAN_PROD and CS_SCAN_LOGSUMEXP (cummax and cummin refuse
 *           it: they have no index to give a carried value). A tensor on x's device holding one
 *           value per line: x's shape with dim's size 1, or x's shape with dim removed (a 0-d
 *           tensor for a 1-D x); any strides. Its dtype is one the op takes as input, and an
 *           integer scan (int32, int64 or bool input) takes an integer or bool one; it is read in
 *           the scan's accumulation type, float64 for float scans (a float64 initial keeps its
 *           precision in a float32 scan) and int64 for integer ones. With (+) the op's combine:
 *           out[1] = initial (+) x[1], out[i] = out[i - 1] (+) x[i]; an exclusive scan gives
 *           initial at its first element; a reverse scan starts from the end of the line the same
 *           way; masked-out elements are skipped as usual. With reset, the initial value feeds the
 *           line's first segment only: every true reset, the first element's included, restarts
 *           from the identity, so that a line scanned in two pieces, the second from the first's
 *           last output, gives the whole line's scan. initial may share memory with x but must
 *           not overlap out. On CUDA every kernel family takes it but for the rows family's
 *           segmented mode (rows/single runs instead).
 * out may be x itself; reset, mask and initial must not overlap out. Deterministic as cs_scan. */
cs_status cs_scan_with(cs_tensor *out, const cs_tensor *x, int dim, cs_scan_op op, const cs_scan_args *args);

/* cs_scan_explain for cs_scan_with's arguments (args may be NULL). Without out, the plan is for the
 * fresh outputs a scan would be given: for CS_SCAN_MAX and CS_SCAN_MIN without args->indices, values
 * and int64 indices, both laid out as cs_empty_like(x) lays them out. */
cs_status cs_scan_explain_with(char *buf, size_t n, const cs_tensor *x, int dim, cs_scan_op op,
                               const cs_scan_args *args, const cs_tensor *out, cs_dtype out_dtype);

/* For tests and diagnosis: makes CUDA scans use the named kernel family, and mode, wherever it can
 * handle the call, as CUSCAN_FORCE_FAMILY does: "rows" (rows/segmented, rows/single, rows/lines,
 * rows/pieces, rows/warps), "columns" (columns/lookback, columns/walk) or "slabs" (slabs/whole,
 * slabs/walk, slabs/lookback). rows/warps (a warp walks each line) serves the flagged scans (cummax,
 * cummin, logcumsumexp, scans with a reset); plain cumsum and cumprod forced there run as
 * rows/lines. NULL or "" gives the choice back to the planner. Results are the same either way
 * (up to float64 rounding for float64 sums). */
cs_status cs_scan_force_family(const char *name);

/* 1 when cs_scan supports op from dtype `in` into dtype `out`, else 0. */
int cs_scan_supported(cs_scan_op op, cs_dtype in, cs_dtype out);

/* The plan cs_scan(out, x, dim, op, flags, mask) would run, as one line of text in buf (n bytes): the
 * device and kernel family with its mode, the layout, tile and grid. Runs nothing. out may be NULL:
 * then the plan is for a fresh output of out_dtype laid out as cs_empty_like(x) lays it out. */
cs_status cs_scan_explain(char *buf, size_t n, const cs_tensor *x, int dim, cs_scan_op op, unsigned flags,
                          const cs_tensor *mask, const cs_tensor *out, cs_dtype out_dtype);

/* ---- element-wise ops and reductions (toolkit) ------------------------------------------------- */

typedef enum cs_unary_op {
    CS_NEG = 0, CS_EXP = 1, CS_LOG = 2, CS_ABS = 3, CS_SQRT = 4, CS_LOGICAL_NOT = 5
} cs_unary_op;

typedef enum cs_binary_op {
    CS_ADD = 0, CS_SUB = 1, CS_MUL = 2, CS_DIV = 3, CS_POW = 4,
    CS_LT = 5, CS_LE = 6, CS_GT = 7, CS_GE = 8, CS_EQ = 9, CS_NE = 10,
    CS_LOGICAL_AND = 11, CS_LOGICAL_OR = 12, CS_MAX2 = 13, CS_MIN2 = 14
} cs_binary_op;

typedef enum cs_reduce_op { CS_REDUCE_SUM = 0, CS_REDUCE_MEAN = 1, CS_REDUCE_MAX = 2, CS_REDUCE_MIN = 3 } cs_reduce_op;

/* out = op(x). Computed in out's dtype (x is converted first); out has x's shape and device. */
cs_status cs_unary(cs_tensor *out, const cs_tensor *x, cs_unary_op op);

/* out = op(a, b), element-wise over one shape (broadcast by passing stride-0 views). Arithmetic is
 * computed in out's dtype; comparisons and logical ops in the wider of a's and b's dtypes, with a
 * bool out. Integer division by zero gives 0; integer arithmetic wraps. */
cs_status cs_binary(cs_tensor *out, const cs_tensor *a, const cs_tensor *b, cs_binary_op op);

/* out = op(a, s) or, with scalar_first, op(s, a). Where the op computes in an integer dtype, s must
 * fit in it (CS_ERR_ARGUMENT otherwise). A comparison with a float32, float16 or bfloat16 a takes s
 * rounded to a's dtype (as PyTorch and NumPy do: float32 0.1 equals 0.1). */
cs_status cs_binary_scalar(cs_tensor *out, const cs_tensor *a, double s, cs_binary_op op, int scalar_first);

/* out = a where mask is true, b where it is false: mask (bool), a and b of out's shape (broadcast by
 * passing stride-0 views) on out's device, any dtypes (converted to out's as cs_copy does). out must
 * not overlap mask, a or b. */
cs_status cs_where(cs_tensor *out, const cs_tensor *mask, const cs_tensor *a, const cs_tensor *b);

/* Reduces x along dim into out (x's shape without dim, on x's device), or over all elements when
 * dim is -1 (out then holds one element). Sums of floats accumulate in float64 on the CPU and in a
 * fixed tree on CUDA; max and min propagate NaN. */
cs_status cs_reduce(cs_tensor *out, const cs_tensor *x, int dim, cs_reduce_op op);

/* Comparison of two tensors of one shape on any devices: *max_abs gets max |a - b| over elements
 * (NaN if a NaN sits where the other has none), *n_far the count of elements where
 * |a - b| > atol + rtol * |b| (numpy's allclose rule; NaNs count as equal when equal_nan). */
cs_status cs_compare(const cs_tensor *a, const cs_tensor *b, double rtol, double atol, int equal_nan,
                     double *max_abs, int64_t *n_far);

/* ---- memory cuscan does not own: caller's buffers, file maps, DLPack ------------------------------ */

/* A tensor over `bytes` bytes at `data` on `device` (CS_CUDA: memory of the current GPU) that cuscan
 * neither allocated nor frees: shape,
 * strides (>= 0, in elements) and offset as cs_as_strided, every element inside the bytes, data
 * aligned to the dtype's size. When the last view of it goes, release(ctx) is called (release may be
 * NULL when the caller keeps the memory alive longer than every view). Such memory is not counted in
 * cs_memory_info's in_use. On failure release is not called. */
cs_status cs_from_blob(cs_tensor **out, void *data, size_t bytes, cs_device device, cs_dtype dtype, int ndim,
                       const int64_t *shape, const int64_t *strides, int64_t offset, void (*release)(void *ctx),
                       void *ctx);

/* A CPU tensor over bytes [offset, offset + bytes) of the file at path, mapped copy-on-write: pages
 * are read from the file when first touched (so the file may be larger than memory) and writes stay
 * in this process, never reaching the file. offset must be a multiple of the dtype's size; shape and
 * strides (>= 0, elements from the start of the region) must stay inside the region. The map goes
 * with the last view. Fails, naming the path, when it cannot be opened or is shorter than the region.
 * Shrinking the file while it is mapped makes later reads of the lost pages fault (SIGBUS). */
cs_status cs_map_file(cs_tensor **out, const char *path, int64_t offset, int64_t bytes, cs_dtype dtype, int ndim,
                      const int64_t *shape, const int64_t *strides);

/* ---- communicators: NCCL across GPUs and processes --------------------------------------------- */

/* NCCL is loaded when first used (libnccl.so.2); without it every function here fails with
 * CS_ERR_UNSUPPORTED, "NCCL is not available: <why>". NCCL_NVLS_ENABLE is set to 0 before the first
 * NCCL call unless the environment already sets it. */
typedef struct cs_comm cs_comm;
enum { CS_COMM_ID_BYTES = 128 };

/* A fresh id (ncclGetUniqueId) that the processes of one communicator share to find each other. */
cs_status cs_comm_unique_id(unsigned char id[CS_COMM_ID_BYTES]);

/* n communicators, one per GPU of this process, rank k on devices[k] (distinct GPU indices). */
cs_status cs_comm_init_all(cs_comm **comms, int n, const int *devices);

/* This process's rank (0 .. nranks - 1) of a communicator over nranks processes (any hosts) sharing
 * id, on GPU `device`. Waits until every rank has joined. */
cs_status cs_comm_init_rank(cs_comm **out, const unsigned char id[CS_COMM_ID_BYTES], int nranks, int rank,
                            int device);

int cs_comm_rank(const cs_comm *c);   /* -1 for NULL */
int cs_comm_size(const cs_comm *c);
int cs_comm_device(const cs_comm *c); /* the GPU index */

/* recv: contiguous, cs_comm_size(c) x numel(send) elements of send's dtype on c's GPU, receives
 * every rank's send (contiguous, on c's GPU) in rank order; recv must not overlap send. Several
 * communicators of one process: call between cs_comm_group_start and cs_comm_group_end (one call
 * per communicator). Enqueued on the GPU's stream: later work on that GPU sees the result. */
cs_status cs_all_gather(cs_comm *c, cs_tensor *recv, const cs_tensor *send);
cs_status cs_comm_group_start(void);
cs_status cs_comm_group_end(void);

/* Destroys the communicator and frees c (NULL is ignored). */
cs_status cs_comm_release(cs_comm *c);

/* DLPack: the ABI of dlpack.h (version 0.8 and later) for handing tensors between libraries without
 * a copy (a CUDA tensor's device_id is its GPU index). Declared here so that LuaJIT reads them with
 * the rest of the API; a C file that includes dlpack.h before this header uses those declarations
 * (the same layout) instead. */
#ifndef DLPACK_DLPACK_H_
typedef enum {
    kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLOpenCL = 4, kDLVulkan = 7, kDLMetal = 8, kDLVPI = 9,
    kDLROCM = 10, kDLROCMHost = 11, kDLExtDev = 12, kDLCUDAManaged = 13, kDLOneAPI = 14, kDLWebGPU = 15,
    kDLHexagon = 16
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLOpaqueHandle = 3, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6
} DLDataTypeCode;

typedef struct {
    uint8_t code;   /* a DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;       /* in elements; NULL for a compact row-major tensor */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
#endif

/* A DLManagedTensor describing t: the same memory, shape, strides and dtype (bool as kDLBool, bfloat16
 * as kDLBfloat), kept alive until its deleter is called, which whoever receives it must do exactly
 * once. Waits for queued CUDA work first, so that a consumer on another stream sees t's values. */
cs_status cs_to_dlpack(DLManagedTensor **out, const cs_tensor *t);

/* A tensor over the memory of m (zero copy) that takes m over: m's deleter (when not NULL) is called
 * when the last view goes, after queued CUDA work that may read it. Supported: CPU, CUDA host and
 * CUDA device memory (device_id: the GPU's index); float16/32/64, bfloat16, int32/64 and bool with
 * one lane; strides >= 0, aligned data. On failure m is left to the caller, not deleted. */
cs_status cs_from_dlpack(cs_tensor **out, DLManagedTensor *m);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
