/* internal.h - what the C core and the CUDA kernels share: tensor layout, iteration and scan plans,
 * error reporting and the backend entry points. Plain C so that kernels/ (C++) can include it. */
#ifndef CUSCAN_INTERNAL_H
#define CUSCAN_INTERNAL_H
#include "cuscan.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct cs_storage {
    int refcount;
    cs_device device;
    int device_index;          /* CUDA: the GPU the bytes live on; -1 on the CPU */
    void *data;
    size_t bytes;
    size_t block_bytes;        /* host: the size of the block behind data (a reused block may be larger) */
    void (*release)(void *ctx); /* memory cuscan does not own (external.c): called instead of freeing */
    void *release_ctx;
} cs_storage;

struct cs_tensor {
    cs_storage *storage;       /* NULL once released */
    cs_dtype dtype;
    cs_device device;
    int device_index;          /* the storage's, kept after a release; -1 on the CPU */
    int ndim;
    int released;
    int64_t offset;
    int64_t shape[CS_MAX_DIMS];
    int64_t strides[CS_MAX_DIMS];
};

/* ---- errors (error.c) ---- */
cs_status cs_fail(cs_status status, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *cs_dtype_name(cs_dtype dtype);
enum { CS_NUM_DTYPES = CS_BFLOAT16 + 1 };  /* dtypes are 0 .. CS_NUM_DTYPES - 1 */

/* ---- storage (storage.c) ---- */
cs_status cs_storage_new(cs_storage **out, cs_device device, size_t bytes);
void cs_storage_release(cs_storage *s);
void *cs_tensor_ptr(const cs_tensor *t); /* address of element 0 (storage + offset) */
cs_status cs_check_usable(const cs_tensor *t, const char *what);
cs_status cs_check_writable(const cs_tensor *t, const char *what); /* no two elements share memory */
/* CS_OK when t lives where ref does (the same kind and GPU), else an error naming both:
 * "what: expected a tensor on ref_name's device: what is on cuda:1, ref_name on cuda:0" */
cs_status cs_check_same_device(const cs_tensor *t, const char *what, const cs_tensor *ref, const char *ref_name);
const char *cs_device_name(const cs_tensor *t, char *buf, size_t n); /* "cpu" or "cuda:N" */
/* The strides cs_empty_like gives a tensor like `like` (its dim order when dense, else row-major);
 * returns whether like is dense. */
int cs_like_strides(const cs_tensor *like, int64_t *strides);

/* ---- the CUDA side's host runtime (src/cuda/; src/no_cuda.c stands in without CUDA) ----
 * Every GPU has a context of its own (stream, pool, scratch, staging), made on first use. Functions
 * below without a GPU argument act on the calling thread's current GPU: an entry point that touches
 * a tensor makes the tensor's GPU current first (cs_gpu_enter) and restores the caller's after. */
enum { CS_QUEUE_WORDS = 16 };             /* words at the start of the scan flags scratch: the work queue's */
enum { CS_MAX_GPUS = 64 };
cs_status cs_cuda_ready(void);            /* CS_OK when CUDA can be used now (on the current GPU) */
/* Makes GPU `index` current (its context ready) and stores the one current before in *prev; index
 * -1 (a CPU tensor) changes nothing. cs_gpu_leave(prev) makes *prev current again. */
cs_status cs_gpu_enter(int index, int *prev);
void cs_gpu_leave(int prev);
int cs_gpu_device_node(void);             /* an NVIDIA device node exists (layout.c): a GPU is there */
void *cs_cuda_stream_handle(void);        /* the current GPU's cudaStream_t */
cs_status cs_cuda_check(int cuda_error, const char *what); /* maps a cudaError_t to a status */
cs_status cs_cuda_malloc(void **data, size_t bytes);       /* device memory from the current GPU's pool */
void cs_cuda_free(void *data, int gpu);   /* back to the pool of the GPU it came from */
cs_status cs_cuda_memory_info(int64_t *free_bytes, int64_t *total_bytes);
cs_status cs_cuda_trim(void);             /* hands the pool's free blocks back */
/* bytes from src on GPU src_gpu to dst on GPU dst_gpu, ordered after the work queued on both GPUs
 * and before the work queued on either later; peer to peer where the GPUs allow it */
cs_status cs_cuda_copy_peer(void *dst, int dst_gpu, const void *src, int src_gpu, size_t bytes);
/* scan scratch: flags (work queue words first), 64-bit state words, 128-bit state words and values,
 * plus a fresh epoch (runtime.c says more) */
cs_status cs_cuda_lookback_scratch(unsigned **flags, size_t nflags, unsigned long long **words, size_t nwords,
                                   void **values, size_t value_bytes, unsigned *epoch);
cs_status cs_cuda_temp(void **ptr, size_t bytes);  /* stream-ordered temporary */
void cs_cuda_temp_free(void *ptr);
int cs_cuda_multiprocessors(void);
cs_status cs_cuda_copy_device(void *dst, const void *src, size_t bytes);
cs_status cs_transfer_contiguous(cs_tensor *dst, const cs_tensor *src); /* between host and device */
cs_status cs_cuda_event_create(void **ev);
void cs_cuda_event_free(void *ev);
cs_status cs_cuda_event_record(void *ev);
cs_status cs_cuda_event_elapsed(void *start, void *end, double *ms);

/* ---- layout helpers (layout.c) ---- */
enum { CS_MAX_OPERANDS = 6 };

/* Dims shared by up to CS_MAX_OPERANDS operands, with per-operand strides, after size-1 dims are
 * dropped and neighbours that are contiguous in every operand are merged. Dim order is outermost
 * first. */
typedef struct cs_iter {
    int ndim;
    int64_t shape[CS_MAX_DIMS];
    int64_t strides[CS_MAX_OPERANDS][CS_MAX_DIMS];
} cs_iter;

/* Builds an iteration over tensors[0..n) (same shape), skipping dim `skip` (-1: none). Dims are
 * ordered by operand 0's strides (largest outermost) so that its walk is as linear as possible. */
void cs_iter_build(cs_iter *it, int n, const cs_tensor *const *tensors, int skip);
int64_t cs_iter_numel(const cs_iter *it);
int cs_dtype_is_float(cs_dtype d);
int64_t cs_numel_of(int ndim, const int64_t *shape);

/* ---- scan plan (scan.c) ----
 * A scan is a set of independent lines along the scanned dim. The plan describes them twice:
 *   strided  ROWS: each line is walked along the dim (unit stride: contiguous rows); COLUMNS: lines
 *            sit side by side along an `inner` dim, so one row of many lines is one segment;
 *   flat     when every operand present shares one dense layout (any dim order), memory holds `flat_outer`
 *            slabs of `len` rows of `flat_inner` elements, one contiguous stream per operand.
 * The CPU walks the strided form; the CUDA side picks a kernel family from either (tuning.cuh). */
typedef enum cs_scan_layout {
    CS_LAYOUT_ROWS = 0,
    CS_LAYOUT_COLUMNS = 1
} cs_scan_layout;

/* INITIAL holds one value per line: its stride along the scanned dim is 0, so that the offsets of a
 * line's first element find the line's initial value like any other operand's. */
enum cs_scan_operand { CS_OPND_X = 0, CS_OPND_MASK = 1, CS_OPND_OUT = 2, CS_OPND_RESET = 3, CS_OPND_INDICES = 4,
                       CS_OPND_INITIAL = 5 };

typedef struct cs_scan_plan {
    cs_scan_op op;
    int reverse, exclusive;
    cs_dtype in_dtype, out_dtype;
    cs_scan_layout layout;
    const void *x;
    const unsigned char *mask;  /* NULL when unmasked */
    void *out;
    const unsigned char *reset; /* NULL unless segmented (cs_scan_with says how it restarts) */
    int64_t *indices;           /* MAX/MIN: the 1-based int64 indices, or NULL */
    const void *initial;        /* NULL, or each line's initial value (cs_initial_double / _int64 read it) */
    cs_dtype initial_dtype;
    int64_t len;                               /* length of the scanned dim */
    /* per operand, in the order of enum cs_scan_operand; an absent operand has x's strides */
    int64_t scan_stride[CS_MAX_OPERANDS];
    int64_t inner;                             /* COLUMNS: lines side by side; ROWS: 1 */
    int64_t inner_stride[CS_MAX_OPERANDS];
    cs_iter outer;                             /* the remaining dims, the same operands */
    int64_t nouter;
    int flat;                                  /* the flat form holds (with initial: line (o, i)'s
                                                * value at initial offset o * flat_inner + i) */
    int64_t flat_outer, flat_inner;
    const char *force;         /* CUSCAN_FORCE_FAMILY: a family (and mode) to use where it applies */
    int log;                   /* CUSCAN_LOG=plan: print the choice to stderr */
    char *explain;             /* non-NULL: write the choice here (explain_len bytes) and run nothing */
    size_t explain_len;
} cs_scan_plan;

/* ---- element-wise plans (ops.c) ---- */
typedef struct cs_elementwise_plan {
    int nin;                    /* 0, 1 or 2 inputs; operand 0 is the output */
    cs_dtype dtype[CS_MAX_OPERANDS];
    void *ptr[CS_MAX_OPERANDS];
    cs_iter it;
    int64_t numel;
    int op;                     /* cs_unary_op, cs_binary_op, or a fill/rand/arange code below */
    cs_dtype compute;           /* dtype the op is computed in */
    double scalar;              /* fill value, binary scalar, arange start, ... */
    double scalar2;             /* arange step */
    int64_t iscalar;            /* exact int64 fill value */
    uint64_t seed;
    int scalar_first;           /* binary scalar: op(s, a) */
    int has_scalar;             /* binary with a scalar instead of operand 2 */
} cs_elementwise_plan;

enum { CS_EW_FILL = 100, CS_EW_RAND = 101, CS_EW_ARANGE = 102, CS_EW_COPY = 103, CS_EW_RANDN = 104,
       CS_EW_WHERE = 105 /* out = operand 2 where the bool operand 1 is true; out kept elsewhere */ };

typedef struct cs_reduce_plan {
    cs_reduce_op op;
    cs_dtype in_dtype, out_dtype;
    const void *x;
    void *out;
    int64_t len, stride;        /* the reduced dim (all elements: len = numel) */
    cs_iter outer;              /* x strides in operand 0, out strides in operand 1 */
    int64_t nouter;
} cs_reduce_plan;

/* ---- backends: the CPU (src/cpu/) and CUDA (kernels/; src/no_cuda.c without CUDA) ---- */
cs_status cs_cpu_scan(const cs_scan_plan *p);
cs_status cs_cpu_scan_general(const cs_scan_plan *p); /* every op, reset and indices: cpu/scan_general.c */
cs_status cs_cpu_elementwise(const cs_elementwise_plan *p);
void cs_cpu_copy_bytes(void *dst, const void *src, size_t bytes); /* memcpy on every core */
cs_status cs_cpu_reduce(const cs_reduce_plan *p);
cs_status cs_cpu_compare(const cs_elementwise_plan *p, double rtol, double atol, int equal_nan,
                         double *max_abs, int64_t *n_far);

cs_status cs_cuda_scan(const cs_scan_plan *p);
cs_status cs_cuda_elementwise(const cs_elementwise_plan *p);
cs_status cs_cuda_reduce(const cs_reduce_plan *p);
cs_status cs_cuda_compare(const cs_elementwise_plan *p, double rtol, double atol, int equal_nan,
                          double *max_abs, int64_t *n_far);

#ifdef __cplusplus
}
#endif
#endif
