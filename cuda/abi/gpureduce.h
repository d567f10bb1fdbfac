/* gpureduce.h -- the pure C ABI between the CUDA kernels (cuda/) and the Python extension (src/).
 *
 * No C++ type crosses this line: the extension never sees a template, the kernels never see a PyObject.
 * Every entry point returns a gr_status; a CUDA failure is reported as GR_ERR_CUDA with the cudaError_t
 * in *cuda_error.  Nothing here allocates or synchronises: memory comes from the caller.
 */
#ifndef GPUREDUCE_H
#define GPUREDUCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_status {
    GR_OK = 0,
    GR_ERR_INVALID_ARGUMENT,   /* a null pointer where data is needed, n < 0, too little workspace, ... */
    GR_ERR_UNSUPPORTED_DTYPE,  /* this variant has no instantiation for this (input, output) dtype pair */
    GR_ERR_UNSUPPORTED_OP,     /* this variant does not implement this operator */
    GR_ERR_UNKNOWN_VARIANT,    /* variant index out of range or of the wrong kind */
    GR_ERR_CUDA,               /* a CUDA runtime call failed: see *cuda_error */
    GR_ERR_JIT                 /* a kernel compiled on first use could not be had (abi/jit.h: gr_jit_error) */
} gr_status;

typedef enum gr_kind { GR_KIND_REDUCE = 0, GR_KIND_SCAN = 1 } gr_kind;

/* The YES/NO columns of the .def lists, as code or nothing. */
#define GR_IF_YES(...) __VA_ARGS__
#define GR_IF_NO(...)

/* Operators, generated from the one list (abi/ops.def).  A scan with GR_OP_SUM is cumsum, with GR_OP_MAX
 * cummax, and so on.  Those whose `scans` column is NO exist for reductions only, and those whose `flat`
 * column is NO for the axis machinery only (gr_reduce_segments): no variant of the table lists them. */
typedef enum gr_op {
#define GR_OP(NAME, name, scans, flat, result, ...) GR_OP_##NAME,
#include "abi/ops.def"
#undef GR_OP
    GR_OP_COUNT
} gr_op;

/* NumPy's result-dtype rules with dtype=None, the `result` column of ops.def (see there). */
typedef enum gr_result_rule {
    GR_RESULT_SUM = 0, GR_RESULT_SAME, GR_RESULT_MEAN, GR_RESULT_INDEX, GR_RESULT_BOOL, GR_RESULT_COUNT, GR_RESULT_VAR,
    GR_RESULT_LOG, GR_RESULT_NORM
} gr_result_rule;

/* Element types: the full list NumPy reductions meet, from cuda/abi/dtypes.def.  Which ones a variant is
 * instantiated for is in its `dtypes` mask (cuda/abi/variants.def). */
typedef enum gr_dtype {
#define GR_DTYPE(NAME, ...) GR_##NAME,
#include "abi/dtypes.def"
#undef GR_DTYPE
    GR_DTYPE_COUNT
} gr_dtype;

#define GR_OPBIT(op) (1u << (op))
/* GR_OPS_ALL: the operators a whole-array variant may implement (the `flat` column of ops.def). */
enum {
    GR_OPS_ALL = 0u
#define GR_OP(NAME, name, scans, flat, result, ...) GR_IF_##flat(| GR_OPBIT(GR_OP_##NAME))
#include "abi/ops.def"
#undef GR_OP
};
#define GR_DTBIT(dt) (1u << (dt))
#define GR_DTYPES_CORE (GR_DTBIT(GR_FLOAT32) | GR_DTBIT(GR_FLOAT64) | GR_DTBIT(GR_INT32) | GR_DTBIT(GR_INT64))
/* The operators, and the dtypes, that variant "exact" rounds correctly with its own kernel
 * (cuda/variants/exact_sum_kernels.cuh: the operator is the kernel's template argument; Python reads the operators
 * as _core.OPS_EXACT_KERNEL); its integer sums and means, min and max run auto's kernels, exact in any order. */
#define GR_OPS_EXACT_KERNEL \
    (GR_OPBIT(GR_OP_SUM) | GR_OPBIT(GR_OP_MEAN) | GR_OPBIT(GR_OP_NANSUM) | GR_OPBIT(GR_OP_NANMEAN))
/* The scans the exact scan's kernels run (cumsum, nancumsum: axis/scan_segments_exact.cu) of those dtypes. */
#define GR_OPS_EXACT_SCAN_KERNEL (GR_OPBIT(GR_OP_SUM) | GR_OPBIT(GR_OP_NANSUM))
#define GR_DTYPES_EXACT_SUM \
    (GR_DTBIT(GR_FLOAT16) | GR_DTBIT(GR_BFLOAT16) | GR_DTBIT(GR_FLOAT32) | GR_DTBIT(GR_FLOAT64))

/* Variant properties. */
#define GR_PROP_DETERMINISTIC 1u  /* same input -> bitwise the same result, run after run */
#define GR_PROP_BASELINE      2u  /* the reference implementation (CUB) */
#define GR_PROP_DEFAULT       4u  /* what variant="auto" means */
#define GR_PROP_BLOCK_LOCAL   8u  /* a block-level algorithm run over any length by the multi-block driver */
#define GR_PROP_AXES         16u  /* also runs the axis machinery (gr_reduce_segments / gr_scan_segments) */
#define GR_PROP_EXACT        32u  /* the correctly rounded result of the exact real sum: the same bits for every
                                    launch, order and split of the elements */

/* Variant indices, generated from the one list. */
typedef enum gr_variant {
#define GR_VARIANT(kind, name, props, ops, dtypes, seed, doc) GR_VARIANT_##kind##_##name,
#include "abi/variants.def"
#undef GR_VARIANT
    GR_VARIANT_COUNT
} gr_variant;

typedef struct gr_variant_info {
    gr_kind kind;
    const char *name;
    unsigned properties;  /* GR_PROP_* */
    unsigned ops;         /* GR_OPBIT mask */
    unsigned dtypes;      /* GR_DTBIT mask of input dtypes */
    const char *seed;
    const char *doc;
} gr_variant_info;

/* The table of all variants, in declaration order; *count receives GR_VARIANT_COUNT. */
const gr_variant_info *gr_variant_table(int *count);

/* The result dtype NumPy gives for `op` over `in` with dtype=None and out=None
 * (sum/prod promote ints narrower than int64 to int64/uint64 and bool to int64; min/max keep the dtype;
 * mean gives float64 for bool and integers; argmin/argmax int64).
 * Returns GR_DTYPE_COUNT for an invalid operator or dtype. */
gr_dtype gr_default_result_dtype(gr_kind kind, gr_op op, gr_dtype in);

/* Workspace: every call takes a device buffer from the caller.  Its first GR_WORKSPACE_ZEROED_BYTES bytes
 * hold counters and flags: they must be zero on entry, and every successful call leaves them zero again
 * (after a failed call the caller re-zeroes them).  The rest is scratch and may hold anything on entry (the
 * look-back scans tell their own status words from stale ones by a tag of the launch). */
#define GR_WORKSPACE_ZEROED_BYTES 256
#define GR_WORKSPACE_ALIGN 256

typedef struct gr_args {
    gr_variant variant;
    gr_op op;
    gr_dtype in_dtype;
    gr_dtype out_dtype;     /* must be the one the variant is instantiated for (gr_default_result_dtype) */
    const void *in;         /* device pointer, any alignment of the element type */
    void *out;              /* reduce: one element; scan: n elements; device memory */
    int64_t n;              /* number of elements, >= 0 (n == 0: a reduction writes the identity) */
    int exclusive;          /* scans: 1 = exclusive (first output is the identity) */
    void *workspace;        /* device memory of at least gr_workspace_size() bytes (NULL if 0), GR_WORKSPACE_ALIGN-aligned */
    size_t workspace_bytes;
    void *stream;           /* cudaStream_t the work is enqueued on */
    int sm_count;           /* multiprocessors of the current device (grids are sized from it) */
} gr_args;

/* Bytes of workspace the call described by `a` needs (in/out/workspace fields are ignored).  May query the
 * current device (CUB sizes its temporary storage from it), hence the cuda_error out-parameter. */
gr_status gr_workspace_size(const gr_args *a, size_t *bytes, int *cuda_error);

/* Enqueue the reduction / scan on a->stream.  Asynchronous: no host synchronisation, no allocation. */
gr_status gr_reduce(const gr_args *a, int *cuda_error);
gr_status gr_scan(const gr_args *a, int *cuda_error);

/* ---- axis reductions and scans (NumPy's axis=, keepdims, where=, initial=) ----
 *
 * The caller merges the array's axes into at most two kept dimensions (i0, i1) and one reduced dimension r.
 * Strides are in elements, may be zero (broadcast) or negative, and `in` / `mask` / `out` point at element
 * (0, 0, 0).  A reduction computes, for every i0 < count[0], i1 < count[1]:
 *     out[i0*out_stride[0] + i1*out_stride[1]] = op over r < reduce_count of in[i0*in_stride[0] + i1*in_stride[1]
 *                                                + r*reduce_in_stride]
 * leaving out the elements whose mask byte (same formula, mask strides) is zero.  A scan writes every prefix:
 *     out[i0*out_stride[0] + i1*out_stride[1] + r*reduce_out_stride] = op over r' <= r (r' < r if exclusive).
 * ARGMIN/ARGMAX give the position r of the first extreme element (NaN counts as extreme), as int64.
 * MEAN divides by the number of elements taken (NaN where none is).  Variants: auto (gpureduce's axis kernels)
 * and cub (CUB's segmented reduce / scan-by-key over the same strided layout). */
/* ---- segmented reductions (issue 40): ranges of the reduced dimension ----
 * With gr_segments.ranges set, a reduction gives one value per range k < count of r instead of one per (i0, i1):
 *     out[i0*out_stride[0] + i1*out_stride[1] + k*reduce_out_stride] = op over r in range k of in[...]
 * Range k is, by `form`:
 *   GR_RANGES_STARTS_STOPS  [starts[k], stops[k]) with slice rules (NumPy's segmented_reduce): a negative bound
 *                           counts from the end (+ reduce_count), then both are clipped to [0, reduce_count];
 *                           stop <= start is empty (the identity, initial= folded in, or mean's NaN)
 *   GR_RANGES_REDUCEAT      [starts[k], starts[k + 1]) (the last up to reduce_count), one element where
 *                           starts[k + 1] <= starts[k] (NumPy's reduceat); the caller checks
 *                           0 <= starts[k] < reduce_count (the kernels clip, so no read leaves the array anyway)
 * A scan over ranges (segmented scans) writes the input's shape instead: each range's positions get the scan of
 * that range alone (restarting at its start; `exclusive`: the identity there), and with `gaps` set every position
 * first gets the operator's identity, which the positions in no range keep.  The ranges must be disjoint (the
 * caller checks: two ranges writing one position would race); `gaps` 0 promises they cover every position.
 * Positions (argmin, argmax) count from the range's start.  No mask and no second operand.  The algorithm is one of
 * abi/ranges.def (GR_RANGES_AUTO chooses by mean_length); each is deterministic (the same bits run after run, the
 * order of the folds fixed by a range's length), but they fold in different orders, so floating sums may differ in
 * their last bits from one algorithm to another. */
/* A reduction may also group r by ids instead of ranges (grouped sums, any order of the ids):
 *   GR_RANGES_GROUP_IDS     bounds holds one id per r (reduce_count of them), each in [0, count); result k is the
 *                           reduction of the elements whose id is k (an id out of range is skipped, never
 *                           written: the caller checks the ids first, or has `id_notes` note them).  Sums and means
 *                           of the floating dtypes (exact: rounded once) and integer sums only, where
 *                           gr_groups_scatter_runs says so; no initial=. */
typedef enum gr_range_form { GR_RANGES_STARTS_STOPS = 0, GR_RANGES_REDUCEAT = 1, GR_RANGES_GROUP_IDS = 2 } gr_range_form;
typedef enum gr_range_algorithm {
#define GR_RANGE_ALGORITHM(NAME, name, doc, scan_doc) GR_RANGES_##NAME,
#include "abi/ranges.def"
#undef GR_RANGE_ALGORITHM
    GR_RANGE_ALGORITHM_COUNT
} gr_range_algorithm;
typedef struct gr_ranges {
    const int64_t *bounds; /* device int64: the starts (count), then for GR_RANGES_STARTS_STOPS the stops (count) */
    int64_t count;
    int form;              /* gr_range_form */
    int algorithm;         /* gr_range_algorithm */
    int64_t mean_length;   /* the caller's estimate of a range's mean length; 0: reduce_count / count */
    int gaps;              /* scans: some positions may lie in no range (they get the identity); 0 for reductions */
    int64_t max_length;    /* scans: the longest range's length where the caller knows it; 0: unknown */
    const int64_t *stops;  /* GR_RANGES_STARTS_STOPS: the stops (count) where they are apart from the starts (the
                              caller's own array, read in place); NULL: they follow the starts in `bounds` */
    int64_t *id_notes;     /* GR_RANGES_GROUP_IDS: two int64, zero before the call, where the kernels note the ids
                              out of range (the smallest id below 0; the largest at or above count, less
                              count - 1), so the caller needs no pass of its own over the ids; NULL: checked */
} gr_ranges;

typedef struct gr_segments {
    int64_t count[2];
    int64_t in_stride[2];
    int64_t out_stride[2];
    int64_t mask_stride[2];
    int64_t reduce_count;
    int64_t reduce_in_stride;
    int64_t reduce_out_stride; /* scans only */
    int64_t reduce_mask_stride;
    const unsigned char *mask; /* device bytes, nonzero = take the element; NULL = take all */
    const void *initial;       /* host pointer to one value of out_dtype folded into every result; NULL = none */
    const void *second;        /* an operator of two operands (ops.def: TWO, dot): the second's in_dtype elements at
                                  the mask strides (such an operator takes no mask); NULL otherwise */
    const gr_ranges *ranges;   /* the ranges of r to reduce or scan each (above); NULL: all of r */
} gr_segments;

/* Whether `variant` runs (op, in, out) along axes without a cast first.  auto: the result dtype above, `in`
 * itself for sum/prod/mean, or a widening float/complex pair (float16 or bfloat16 -> float32/float64,
 * float32 -> float64, complex64 -> complex128).  cub: out == in, and argmin/argmax of any input.  Anything else:
 * cast the input to the result dtype first (gr_copy_strided), then out == in runs on every axis variant. */
int gr_segments_supported(gr_kind kind, gr_variant variant, gr_op op, gr_dtype in, gr_dtype out);

/* Whether a reduction over GR_RANGES_GROUP_IDS runs (op, in, out) along an axis of `length` (reduce_count) with
 * `accumulators` = count[0] x count[1] x groups: a floating sum, mean or nan form into `in` itself, an integer or
 * bool sum into NumPy's sum dtype, or min, max and their nan forms into `in`, whose accumulators fit the workspace
 * this form allows and (sums) whose words cannot overflow over that length (axis/reduce_groups_scatter.cu). */
int gr_groups_scatter_runs(gr_op op, gr_dtype in, gr_dtype out, int64_t length, int64_t accumulators);

/* Workspace bytes, then the work, as gr_workspace_size / gr_reduce (a->n is ignored). */
gr_status gr_reduce_segments_workspace(const gr_args *a, const gr_segments *s, size_t *bytes, int *cuda_error);
gr_status gr_reduce_segments(const gr_args *a, const gr_segments *s, int *cuda_error);
gr_status gr_scan_segments_workspace(const gr_args *a, const gr_segments *s, size_t *bytes, int *cuda_error);
gr_status gr_scan_segments(const gr_args *a, const gr_segments *s, int *cuda_error);

/* Strided copy with NumPy's casting: for every index of `shape` (ndim <= GR_COPY_MAX_NDIM),
 * out[idx . out_strides] = (out_dtype) in[idx . in_strides], strides in elements.  Used to cast for
 * dtype=, to gather layouts the segment form cannot express, and to write into a strided out=. */
#define GR_COPY_MAX_NDIM 8
gr_status gr_copy_strided(gr_dtype in_dtype, gr_dtype out_dtype, int ndim, const int64_t *shape,
                          const int64_t *in_strides, const int64_t *out_strides, const void *in, void *out,
                          int sm_count, void *stream, int *cuda_error);

/* Benchmark support: read `bytes` bytes at `ptr` (16-byte aligned) with a plain vectorised kernel, the
 * ceiling a reduction is measured against.  `sink` is 16 bytes of device memory it may write. */
gr_status gr_read_ceiling(const void *ptr, size_t bytes, void *sink, int sm_count, void *stream, int *cuda_error);

#ifdef __cplusplus
}
#endif

#endif /* GPUREDUCE_H */
