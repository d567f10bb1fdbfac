/* ext.h -- what the files of the extension module gpureduce._core share. */
#ifndef GPUREDUCE_EXT_H
#define GPUREDUCE_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL gpureduce_ARRAY_API
#ifndef GR_DEFINE_NUMPY_API
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <cuda_runtime_api.h>

#include "gpureduce.h"

/* ---- module state (state.c: a leaf every file may call) ---- */
typedef struct {
    PyObject *CudaError;       /* gpureduce.CudaError, a RuntimeError */
    PyObject *OutOfMemoryError; /* gpureduce.OutOfMemoryError: CudaError and MemoryError */
    PyObject *DeviceArrayType; /* gpureduce.DeviceArray (device_array.c) */
    PyObject *OperandType;     /* gpureduce._core.Operand (operand.c) */
    PyObject *PlanType;        /* gpureduce._core.Plan (plan.c) */
    PyObject *whole_plans;     /* whole_calls.c: {key: the cached call}, and the input types it holds any for */
    PyObject *whole_kinds;
    int counted;               /* counted among the live instances that share the process's CUDA resources */
} gr_module_state;

gr_module_state *gr_state(PyObject *module);

/* ---- Python values from C arrays (py_values.c, a leaf) ---- */
typedef PyObject *(*gr_item_fn)(const void *items, Py_ssize_t i); /* a new reference to item i, or NULL */
PyObject *gr_tuple_of(const void *items, Py_ssize_t count, gr_item_fn item);
PyObject *gr_int64_tuple(const int64_t *v, int count);
PyObject *gr_names_tuple(const char *const *names, int count);
PyObject *gr_float_list(const double *v, int count);

/* ---- errors (errors.c) ---- */
/* Raise gpureduce.CudaError "<what>: <cudaErrorName>: <text>" and clear the runtime's last error.
 * Returns NULL for `return gr_raise_cuda(...)`. */
PyObject *gr_raise_cuda(PyObject *module, cudaError_t err, const char *what);
/* Raise gpureduce.CudaError "no CUDA device is available: <why>" for what cudaGetDeviceCount said (`err`,
 * cudaErrorNoDevice when it found none), worded for the cause: no driver, an old driver, no GPU visible. */
PyObject *gr_raise_no_device(PyObject *module, cudaError_t err);
/* Map a gr_status to the exception that fits; `context` names the call. */
PyObject *gr_raise_status(PyObject *module, gr_status st, int cuda_error, const char *context);

/* The outcome of a call's device work, gathered without the GIL: the first failure wins, a gr_status from
 * the kernels or a CUDA error with the stage it happened in (`stage` starts as what the work is). */
typedef struct gr_outcome {
    gr_status st;
    int cuda_error;
    cudaError_t err;
    const char *stage;
} gr_outcome;
int gr_outcome_ok(const gr_outcome *o);
void gr_outcome_keep(gr_outcome *o, cudaError_t err, const char *stage);
/* Raise the failure, if any (`context` names the call for a gr_status).  0 if none, else -1. */
int gr_outcome_raise(PyObject *module, const gr_outcome *o, const char *context);

/* ---- dtypes (dtypes.c) ---- */
/* At import: finds ml_dtypes' bfloat16 (none without ml_dtypes); -1 with an exception on other failures. */
int gr_dtypes_init(void);
/* 1, or 0 with a TypeError where `dt` is bfloat16 and ml_dtypes is missing. */
int gr_dtype_available(gr_dtype dt);
const char *gr_dtype_name(gr_dtype dt);
size_t gr_dtype_itemsize(gr_dtype dt);
int gr_dtype_to_typenum(gr_dtype dt);
/* The NumPy dtype of `dt` (a borrowed reference, alive as long as NumPy). */
PyArray_Descr *gr_dtype_descr(gr_dtype dt);
/* NumPy dtype -> gr_dtype; -1 if there is no such gr_dtype (object, str, datetime, ...). */
int gr_dtype_from_descr(PyArray_Descr *descr);
/* "float32, float64, int32, int64" for a GR_DTBIT mask, into buf. */
void gr_dtype_mask_names(unsigned mask, char *buf, size_t size);
/* What the kernels accumulate `dt` in (cuda/abi/dtypes.def: float16 and bfloat16 in float32). */
gr_dtype gr_dtype_accumulate_as(gr_dtype dt);
PyObject *gr_dtype_table(void); /* gpureduce._core.dtype_table: cuda/abi/dtypes.def's columns Python reads */
/* TypeError "unsupported dtype <dtype> (<kind>)<where>: gpureduce reduces <all dtypes><hint>": the cause
 * first, then what works (the same words as gpureduce/_planning/operands.py).  Returns -1. */
int gr_unsupported_dtype(const char *dtype, const PyArray_Descr *descr, const char *where, const char *hint);

/* ---- the variant registry's C face (variants.c) ---- */
/* The table entry of variant index `variant` if it is of `kind` and implements `op`, else NULL with a
 * ValueError. */
const gr_variant_info *gr_checked_variant(long variant, long op, gr_kind kind);
const char *gr_op_name(gr_op op);     /* the operator's Python name (cuda/abi/ops.def) */
/* How many arrays an operator reads (cuda/abi/ops.def's operands column): the second is a plan's `second`. */
typedef enum { GR_OPERANDS_ONE, GR_OPERANDS_TWO, GR_OPERANDS_ONE_OR_TWO } gr_operands;
gr_operands gr_op_operands(gr_op op);
/* Whether the operator has a parameter (ops.def's param column: ddof, ord, ...), which rides where initial= would. */
int gr_op_has_parameter(gr_op op);
PyObject *gr_operator_table(void);    /* gpureduce._core.op_table */
PyObject *gr_py_variant_table(PyObject *module, PyObject *unused);
PyObject *gr_py_result_dtype(PyObject *module, PyObject *args);
PyObject *gr_py_segments_supported(PyObject *module, PyObject *args);
PyObject *gr_py_groups_scatter_runs(PyObject *module, PyObject *args);

/* ---- devices and execution resources (exec.c) ---- */
#define GR_MAX_DEVICES 64 /* device ordinals gpureduce handles: 0 .. GR_MAX_DEVICES - 1 */
/* The current device, checking that one exists: raises CudaError and returns -1 if not. */
int gr_current_device(PyObject *module);
int gr_device_sm_count(int device);
/* The device's own stream (created on first use, never destroyed while the module lives).  NULL with
 * CudaError set on failure. */
cudaStream_t gr_device_stream(PyObject *module, int device);
/* Stream-ordered memory from the default pool of `device` (the current device), which is set on first use
 * to keep freed blocks for reuse.  Free with cudaFreeAsync on a stream ordered after the last use.
 * 0, or -1 with CudaError set. */
int gr_device_alloc(PyObject *module, int device, size_t bytes, cudaStream_t stream, void **ptr);
/* Make `device` current; *previous gets the device to restore with gr_leave_device (-1: nothing to
 * restore).  0, or -1 with CudaError set. */
int gr_enter_device(PyObject *module, int device, int *previous);
void gr_leave_device(int previous);

/* What one call borrows for its device work: a stream of ours, a workspace whose first
 * GR_WORKSPACE_ZEROED_BYTES are zero, a device staging buffer for host inputs, pinned host memory for
 * small transfers and results, a device slot for a scalar result, and an event to order streams.  Leased
 * whole while the GIL is released, so two threads never share one. */
#define GR_RING_CHUNKS 4
#define GR_RING_CHUNK_BYTES ((size_t)8 << 20)
#define GR_STREAM_TAIL_PIECES 4 /* a streamed row's last chunk, cut in halves down to 1/8 (stream_host.c) */

typedef struct gr_exec {
    int device;
    cudaStream_t stream; /* the device's stream (gr_device_stream), not owned */
    void *workspace;
    size_t workspace_bytes;
    void *staging;
    size_t staging_bytes;
    void *pinned;
    size_t pinned_bytes;
    void *result; /* device, GR_RESULT_BYTES */
    void *ring[GR_RING_CHUNKS];             /* pinned staging chunks of large host transfers (transfer.c) ... */
    cudaEvent_t ring_done[GR_RING_CHUNKS];  /* ... each free again once its event has passed */
    int dirty;    /* a call failed: re-zero the workspace counters before reuse */
    size_t zero_bytes; /* the workspace's first bytes to zero before its next use, on that use's stream */
    cudaEvent_t hop;           /* orders one stream after another (gr_stream_wait) */
    cudaEvent_t done;          /* recorded after the last work that used these buffers ... */
    cudaStream_t last_stream;  /* ... on this stream (NULL: idle, nothing to wait for) */
} gr_exec;

#define GR_RESULT_BYTES 256
#define GR_PINNED_SMALL (4u << 20) /* host inputs up to this size go through the pinned buffer ... */
#define GR_SMALL_PIECE_BYTES ((size_t)1 << 20) /* ... in pieces of this size, copy and DMA overlapped */
#define GR_STAGING_KEPT ((size_t)256 << 20) /* host inputs up to this size are staged in the exec's own buffer */

gr_exec *gr_exec_acquire(PyObject *module, int device);
void gr_exec_release(gr_exec *ex);
/* Bracket the device work of a call that runs on `stream`: begin orders it after the buffers' previous
 * use if that was on another stream, and zeroes what of the workspace must be (0, or -1 with CudaError); end
 * records that use (no GIL needed), or notes that the buffers are idle when the call synchronised `stream`
 * (`synchronised`).  Every use of an exec's workspace lies between the two. */
int gr_exec_begin(PyObject *module, gr_exec *ex, cudaStream_t stream);
cudaError_t gr_exec_end(gr_exec *ex, cudaStream_t stream, int synchronised);
/* Grow a buffer of the exec to at least `bytes` (never per call once warm).  0 or -1 with CudaError set. */
int gr_exec_reserve_workspace(PyObject *module, gr_exec *ex, size_t bytes);
int gr_exec_reserve_staging(PyObject *module, gr_exec *ex, size_t bytes);
int gr_exec_reserve_pinned(PyObject *module, gr_exec *ex, size_t bytes);
/* The workspace the flat call described by `a` needs (gr_workspace_size), reserved.  0, or -1 with an
 * exception naming `context`. */
int gr_exec_reserve_for(PyObject *module, gr_exec *ex, const gr_args *a, const char *context);
/* Free the exec's ring of pinned staging chunks (safe on a partly made ring). */
void gr_exec_free_ring(gr_exec *ex);
/* Free every cached resource (module teardown). */
void gr_exec_release_all(void);

/* ---- host <-> device transfers and stream ordering (transfer.c); no GIL needed ---- */
/* Reserve what the exec needs to move `bytes` with the helpers below: its pinned buffer for small copies,
 * its ring of pinned staging chunks for large ones.  0, or -1 with CudaError set. */
int gr_exec_reserve_transfer(PyObject *module, gr_exec *ex, size_t bytes);
/* Reserve the ring alone (stream_host.c moves chunks through it itself).  0, or -1 with CudaError set. */
int gr_exec_reserve_ring(PyObject *module, gr_exec *ex);
/* Enqueue a copy of host `src` to device `dst` on `stream`, staged through the exec's pinned memory (the
 * caller's pages are never locked: another thread may be reading the same array).  `src` may be reused once
 * this returns; the exec's buffers are busy until `stream` is synchronised. */
cudaError_t gr_upload_host(gr_exec *ex, void *dst, const void *src, size_t bytes, cudaStream_t stream);
/* Slot `b` of the exec's ring of pinned chunks, the unit both helpers above and stream_host.c move host memory
 * in.  put: host `src` through the slot to device `dev` (once the slot's last DMA has passed; the slot is busy
 * until its event passes again).  fetch: enqueue device `dev` into the slot; take: once that has landed, copy it
 * out to host `dst`. */
cudaError_t gr_ring_put(gr_exec *ex, int b, void *dev, const void *src, size_t bytes, cudaStream_t stream);
/* put of `rows` rows of `row_bytes` bytes, `src_pitch` bytes apart on the host, packed one after another */
cudaError_t gr_ring_put_rows(gr_exec *ex, int b, void *dev, const void *src, size_t rows, size_t row_bytes,
                             size_t src_pitch, cudaStream_t stream);
cudaError_t gr_ring_fetch(gr_exec *ex, int b, const void *dev, size_t bytes, cudaStream_t stream);
cudaError_t gr_ring_take(gr_exec *ex, int b, void *dst, size_t bytes);
/* take of `rows` rows of `row_bytes` bytes, packed in the slot, to host rows `dst_pitch` bytes apart */
cudaError_t gr_ring_take_rows(gr_exec *ex, int b, void *dst, size_t rows, size_t row_bytes, size_t dst_pitch);
/* Copy device `src` to host `dst` after the work enqueued on `stream`; complete on return.  `dst_pinned`: dst is
 * pinned memory, the DMA lands there directly. */
cudaError_t gr_download_host(gr_exec *ex, void *dst, const void *src, size_t bytes, int dst_pinned,
                             cudaStream_t stream);

/* ---- NumPy results in pinned host memory (pinned_results.c) ---- */
/* A new C-ordered NumPy array; its memory pinned (*pinned = 1) when the result is large, its size was asked
 * for before and the pool's limit allows, else an ordinary array.  NULL with an exception. */
PyObject *gr_host_result_new(int ndim, const npy_intp *dims, int typenum, int *pinned);
void gr_pinned_results_stats(unsigned long long *in_use, unsigned long long *idle);
void gr_pinned_results_release_idle(void); /* module teardown */

/* ---- settings from the environment (settings.c) ---- */
/* 0 if `bytes` of a host operand may be staged whole on the device under GPUREDUCE_DEVICE_MEMORY_LIMIT, else
 * -1 with OutOfMemoryError naming `what`, the limit and what streams instead (ValueError for a malformed limit). */
int gr_check_device_memory_limit(PyObject *module, size_t bytes, const char *what);
/* The byte count in environment variable `name` ("4294967296", "512M", "4G"; K, M, G, T are powers of 1024):
 * 1 and *bytes set, 0 when unset or empty, -1 with a ValueError naming the variable when malformed. */
int gr_env_bytes(const char *name, size_t *bytes);

/* ---- host memory copies on several CPU threads (host_copy.c); no GIL needed ---- */
void gr_host_copy(void *dst, const void *src, size_t bytes);
/* Order what is enqueued next on `waiter` after what is enqueued so far on `producer`, through the exec's
 * event (no event is created per call). */
cudaError_t gr_stream_wait(gr_exec *ex, cudaStream_t waiter, cudaStream_t producer);

/* ---- device arrays (device_array.c, dlpack_export.c) ---- */
#define GR_MAX_NDIM 64
/* The gpureduce.DeviceArray type, created for `module` (its exec slot stores it in the module state). */
PyObject *gr_device_array_type_new(PyObject *module);
/* A new DeviceArray owning uninitialised memory allocated on `stream`, where the work that fills it must be
 * enqueued; it exports `stream` and frees the memory there.  `stream_owner` (may be NULL): the object that keeps
 * `stream` alive (a CuPy Stream), held as long as the array.  `device` must be current.  NULL on error. */
PyObject *gr_device_array_empty(PyObject *module, int ndim, const int64_t *shape, gr_dtype dtype, int device,
                                cudaStream_t stream, PyObject *stream_owner);
PyObject *gr_device_array_stream_owner(PyObject *array); /* borrowed; NULL when none */
int gr_is_device_array(PyObject *module, PyObject *obj);
/* What a DeviceArray is: its memory, dtype, shape (C order), device and stream. */
void *gr_device_array_data(PyObject *array);
void gr_device_array_describe(PyObject *array, gr_dtype *dtype, int *ndim, const int64_t **shape, int *device,
                              cudaStream_t *stream);

/* ---- DLPack export (dlpack_export.c, a leaf) ---- */
/* What a capsule describes: a C-contiguous array in CUDA memory. */
typedef struct {
    void *ptr;
    gr_dtype dtype;
    int ndim;
    const int64_t *shape;
    int device;
} gr_dlpack_view;
/* What a consumer asked of __dlpack__(stream, max_version, dl_device, copy). */
typedef struct {
    int versioned;         /* max_version >= (1, 0): a versioned capsule */
    int copy;              /* copy=True */
    int sync;              /* order `consumer` after the array's stream (0 for stream=-1) */
    cudaStream_t consumer; /* the consumer's stream */
} gr_dlpack_request;
/* Read __dlpack__'s arguments for an array on CUDA device `device`; 0, or -1 with the protocol's exception. */
int gr_dlpack_parse_request(PyObject *args, PyObject *kwargs, int device, gr_dlpack_request *req);
/* A capsule of `view`, keeping `owner` alive until the consumer deletes the tensor.  NULL on error. */
PyObject *gr_dlpack_capsule(const gr_dlpack_view *view, PyObject *owner, int versioned, int copied);

/* ---- operands kept alive until the work that reads them is done (keepalive.c; with the GIL) ---- */
/* Hold a reference to `obj` until `stream` passes the point enqueued now.  0, or -1 with CudaError (then the
 * stream was waited for instead). */
int gr_keep_until_done(PyObject *module, PyObject *obj, cudaStream_t stream);
void gr_kept_collect(void);     /* let go of what the device is done with (every call does, first) */
int gr_kept_count(void);        /* how many are held (resource_stats) */
void gr_kept_release_all(void); /* module teardown: waits for the work, then lets go of everything */

/* ---- the one intake (operand.c) ---- */
/* Where an operand came from: decides how it is read and released. */
typedef enum { GR_FROM_NUMPY, GR_FROM_CAI, GR_FROM_DLPACK, GR_FROM_GPUREDUCE, GR_FROM_CUPY } gr_protocol;
/* What an operand's stream says about the caller, who reads and frees the memory afterwards:
 *   NONE       no stream named (host memory; a CUDA Array Interface without one): the caller's stream is unknown
 *   PRODUCER   the stream a CUDA Array Interface v3 producer named
 *   CALLER     the current stream of the caller's library (PyTorch, CuPy), asked for in the DLPack exchange:
 *              its allocator frees in order on that stream
 *   HANDSHAKE  the legacy stream a DLPack producer of unknown habits was told to order its work before
 *   OWN        a gpureduce.DeviceArray's own stream
 *   EXPLICIT   the stream= the caller gave (gpureduce/_streams.py); the stream the data was made on, where
 *              known and another, is `after` */
typedef enum {
    GR_STREAM_NONE, GR_STREAM_PRODUCER, GR_STREAM_CALLER, GR_STREAM_HANDSHAKE, GR_STREAM_OWN, GR_STREAM_EXPLICIT
} gr_stream_origin;

/* One array operand of a call (input, where= or out=), read without touching the device: a host ndarray
 * (aligned, native byte order) or device memory read in place. */
typedef struct gr_operand {
    void *ptr;            /* element (0, ..., 0): device pointer, or host pointer when is_host */
    gr_dtype dtype;
    int ndim;
    int64_t size;         /* number of elements */
    int64_t shape[GR_MAX_NDIM];
    int64_t strides[GR_MAX_NDIM]; /* in elements */
    int is_host;
    int readonly;
    int device;           /* the device the producer named (DLPack, DeviceArray); -1 when unknown or host */
    int has_stream;       /* the producer named a stream (CAI v3), or was told ours (DLPack) ... */
    cudaStream_t stream;  /* ... this one: our work is enqueued on it */
    int has_after;        /* EXPLICIT: the data was made on another stream, which the work waits for (and an */
    cudaStream_t after;   /* out= is read on: it waits for the work) */
    gr_stream_origin origin;
    gr_protocol protocol;
} gr_operand;

/* Read `obj` (`role` names it in errors: "the input", "where=", "out=") into a new _core.Operand object
 * holding a gr_operand and what keeps its memory alive, on the call's stream= where one is set
 * (_core.call_stream, a context variable).  NULL with an exception. */
PyObject *gr_intake(PyObject *module, PyObject *obj, const char *role);
/* _core.call_stream: the context variable gpureduce/_streams.py sets to a call's stream= (an int handle). */
PyObject *gr_call_stream_var(void);
/* What keeps an operand's stream alive (a CuPy Stream object, a DeviceArray's owner): borrowed, NULL when none. */
PyObject *gr_operand_stream_owner(PyObject *operand);
/* A host operand's values as the NumPy array it reads (a new reference; None for device memory). */
PyObject *gr_operand_host_array(PyObject *operand);
/* The gr_operand inside a _core.Operand (NULL with TypeError naming `role` if `obj` is not one). */
const gr_operand *gr_operand_of(PyObject *module, PyObject *obj, const char *role);
/* 0 if `ptr` is device (or managed) memory of `device`, else -1 with a ValueError naming `what`. */
int gr_check_device_pointer(PyObject *module, const void *ptr, int device, const char *what);
/* 0 if a device operand can be read on `device`: by the device its producer named, else by asking CUDA
 * (skipped for empty operands). */
int gr_check_operand_device(PyObject *module, const gr_operand *o, int device, const char *what);
/* The operand's layout as the planner's cache key (Operand.layout_key): dtype, host or device, shape, strides. */
PyObject *gr_operand_layout_key(const gr_operand *o);
/* Operand.view(shape, strides) for C callers (whole_calls.c). */
PyObject *gr_operand_view(PyObject *operand, PyObject *shape, PyObject *strides);
/* The out= operand of `obj`, a new C-ordered array of `dtype` and `shape` at device address `ptr` that the input
 * `operand`'s own library just allocated on its current stream: read from the input's stream record without a
 * handshake with the library where the input came on the caller's current stream (GR_STREAM_CALLER) and holds
 * elements, else by the intake. */
PyObject *gr_operand_result_like(PyObject *operand, PyObject *obj, void *ptr, gr_dtype dtype, int ndim,
                                 const int64_t *shape);
/* The gr_operand of an object known to be a _core.Operand (gr_intake's result). */
const gr_operand *gr_operand_read(PyObject *operand);
PyObject *gr_operand_type_new(PyObject *module);
/* What the intake keeps for the process (the cache of unversioned DLPack producers), made at module exec.  0, or
 * -1 with an exception. */
int gr_operand_init(void);

/* ---- the plan (plan.c): one call's device work, read once from a _core.Plan ---- */
/* Which kernels run it: the variant's whole-array kernel (gr_reduce / gr_scan), the axis kernels, a strided copy. */
typedef enum { GR_LAUNCH_FLAT, GR_LAUNCH_AXIS, GR_LAUNCH_COPY } gr_launcher;
typedef struct gr_plan {
    int kind;                   /* GR_KIND_REDUCE, GR_KIND_SCAN or GR_KIND_COPY */
    gr_launcher launcher;
    const gr_variant_info *info; /* NULL for a copy */
    gr_variant variant;
    gr_op op;
    gr_dtype out_dtype;
    const gr_operand *in, *second, *mask, *out; /* in the plan's Operand objects; in is NULL in a template */
    gr_segments s;              /* reduce, scan: the layout (its mask, second, initial and ranges pointers unset) */
    int has_ranges;             /* a segmented reduction (issue 40): one result per range of the reduced dimension */
    const gr_operand *bounds;   /* ... the ranges' int64 bounds (the Operand in the plan's `ranges` tuple) */
    const gr_operand *stops;    /* ... their stops, where device bounds give them apart from the starts; else NULL */
    gr_ranges ranges;           /* ... their count, form, algorithm and mean length; `bounds` unset (the runner's
                                   device address of element 0) */
    int copy_ndim;              /* copy: the layout */
    int64_t copy_shape[GR_COPY_MAX_NDIM], copy_in[GR_COPY_MAX_NDIM], copy_out[GR_COPY_MAX_NDIM];
    int res_ndim;
    int64_t res_shape[GR_MAX_NDIM];
    int64_t res_size;
    int has_value;              /* initial= or the operator's parameter, one result value (the kernels' initial) */
    char value[16];
    int exclusive;
} gr_plan;
PyObject *gr_plan_type_new(PyObject *module);
/* The names of a reduction's or scan's 12 layout ints, in the order a Plan takes them (_core.SEGMENT_FIELDS). */
const char *const *gr_plan_segment_fields(int *count);
/* The gr_plan of a _core.Plan with its operands; NULL with a TypeError for anything else or a template. */
const gr_plan *gr_plan_of(PyObject *module, PyObject *obj);
/* The gr_plan of a _core.Plan, a template (no operands) too: its result's shape and dtype; NULL with TypeError. */
const gr_plan *gr_plan_template_of(PyObject *module, PyObject *obj);
/* Plan.with_operands(a, None, None, out) of a template, verified as that method verifies it. */
PyObject *gr_plan_with_operands(PyObject *template, PyObject *a, PyObject *out);
PyObject *gr_plan_input(PyObject *plan); /* borrowed: the input Operand */
PyObject *gr_plan_out(PyObject *plan);   /* borrowed: the out= Operand or None */

/* ---- the one runner (run.c) ---- */
#define GR_KIND_COPY 2 /* a plan kind beside GR_KIND_REDUCE and GR_KIND_SCAN: a strided copy with a cast */
/* A call's device work, prepared with the GIL and run without it (timing.c times the stages). */
typedef struct gr_job gr_job;
gr_job *gr_job_prepare(PyObject *module, PyObject *plan);   /* NULL with an exception */
void gr_job_enqueue(gr_job *job);                           /* no GIL */
void gr_job_complete(gr_job *job);                          /* no GIL: waits when the result needs it */
PyObject *gr_job_finish(PyObject *module, gr_job *job);     /* the result, or NULL; frees the job */
void gr_job_discard(gr_job *job);                           /* frees a job that will not finish */
/* What time_device (timing.c) needs: the kernels alone, launched again after gr_job_enqueue (no GIL), the stream
 * and device they run on, the outcome they record into, and whether the job can be timed (not captured: 0, or
 * -1 with a TypeError). */
void gr_job_launch(gr_job *job);
cudaStream_t gr_job_stream(const gr_job *job);
int gr_job_device(const gr_job *job);
gr_outcome *gr_job_outcome(gr_job *job);
int gr_job_check_timeable(const gr_job *job);

/* ---- Python-visible functions ---- */
PyObject *gr_py_run(PyObject *module, PyObject *plan);               /* run.c */
PyObject *gr_py_call_whole(PyObject *module, PyObject *const *args, Py_ssize_t nargs);     /* whole_calls.c */
PyObject *gr_py_remember_whole(PyObject *module, PyObject *const *args, Py_ssize_t nargs); /* whole_calls.c */
PyObject *gr_py_intake(PyObject *module, PyObject *const *args, Py_ssize_t nargs); /* operand.c */
PyObject *gr_py_device_count(PyObject *module, PyObject *unused);      /* device.c */
PyObject *gr_py_device_properties(PyObject *module, PyObject *unused); /* device.c */
PyObject *gr_py_memory_info(PyObject *module, PyObject *unused);       /* device.c */
PyObject *gr_py_resource_stats(PyObject *module, PyObject *unused);    /* exec.c */
PyObject *gr_py_to_device(PyObject *module, PyObject *obj);            /* make_array.c */
PyObject *gr_py_empty(PyObject *module, PyObject *args, PyObject *kwargs); /* make_array.c */
PyObject *gr_py_time_device(PyObject *module, PyObject *args, PyObject *kwargs); /* timing.c */
PyObject *gr_py_time_ceiling(PyObject *module, PyObject *args, PyObject *kwargs); /* timing.c */
PyObject *gr_py_time_calls(PyObject *module, PyObject *args, PyObject *kwargs);  /* timing.c */
PyObject *gr_py_time_stages(PyObject *module, PyObject *args, PyObject *kwargs); /* timing.c */
PyObject *gr_py_jit_compile(PyObject *module, PyObject *args);         /* jit.c */
PyObject *gr_py_jit_kernels(PyObject *module, PyObject *unused);       /* jit.c */
PyObject *gr_py_jit_info(PyObject *module, PyObject *unused);          /* jit.c */

#endif /* GPUREDUCE_EXT_H */
