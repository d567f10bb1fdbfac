/* run.c -- the one runner: _core.run(plan) does the device work of every call.
 *
 * gpureduce/_planning/plan.py has decided everything that can be decided once per call (variant, result dtype,
 * layout as segments, the casts and gathers it ran first); the operands come from the one intake
 * (operand.c).  What is left is memory and order:
 *
 *   prepare   read the plan; choose the launcher (the variant's flat kernel for one dense segment in the
 *             result dtype NumPy picks, else the axis kernels; classic variants do only the former); check
 *             where the memory is; lease the device resources; make the result object
 *   enqueue   (no GIL) order our stream after the operands' and the result's streams, upload host
 *             operands (the bytes a view spans), launch, order those streams after ours; a large host input
 *             that lies in rows along the reduced axis streams instead, chunk by chunk (stream_host.c)
 *   complete  (no GIL) bring a host result home, or wait, when host memory is involved
 *
 * Ctrl-C: a call that moves much host memory (copying gigabytes takes a good part of a second) looks for a
 * raised signal handler, the GIL taken back for a moment, every 256 MiB while it streams, after enqueueing and
 * again once the device is done;
 * if one raised (KeyboardInterrupt), it waits for what is already enqueued, skips bringing the result home,
 * frees everything and raises that exception.
 *   finish    the result: `out`, a NumPy scalar (0-d), a NumPy array (host input), or a DeviceArray
 *             (device input; gpureduce/_planning/results.py hands it back in the input's own kind)
 *
 * Streams: the work runs on the stream the input named (CUDA Array Interface v3, the current stream of a
 * PyTorch or CuPy caller, the stream= a caller gave, or the legacy default stream a DLPack producer was told),
 * else on the one a device out= named, else on the device's own stream.  A device input's result, 0-d ones
 * included, is a device array: nothing on that path waits for the device.  A new DeviceArray lives on the work
 * stream when that is the caller's own (PyTorch's or CuPy's current stream) or the legacy default stream, else
 * on the device's own stream, ordered after the work (make_result).  A call that touches host memory, or writes an out= whose
 * caller's stream is unknown, completes before it returns;
 * an asynchronous one keeps the operands that another allocator could free under its kernels (keepalive.c).
 *
 * CUDA graphs: work enqueued on a stream that is capturing (torch.cuda.graph, CuPy's Stream.begin_capture) is
 * recorded, not run, and replayed later, any number of times: the graph must own every buffer it uses.  So
 * a captured call allocates its workspace and any copy in the capture (stream-ordered pool memory, freed
 * there too), and never touches the exec's shared buffers or events, or host memory.  Its result goes into
 * out= (gpureduce/_planning/results.py allocates a CuPy or PyTorch result with that library, whose graph pools own it);
 * a DeviceArray made in a capture is the graph's allocation, which must be freed before the graph runs again
 * (the intermediate copies a plan makes are, in the capture itself).
 *
 * The plan: a _core.Plan (src/plan.c), read and verified once when gpureduce/_planning/plan.py built it; the
 * launcher is the planner's choice.
 *
 * A segmented reduction (the plan's ranges, issue 40) reads one more operand, the ranges' int64 bounds (device
 * stops may come as a second one, read in place as the starts are), which travels as where= does: a host one is
 * staged whole on the work stream (pool memory, freed after), a device one is checked for its device and waited
 * for on its stream, and kept alive with the others.
 */
#include "job.h"

#include <string.h>

/* ---------------------------------------------------------------- memory */

/* The bytes a view spans: [lo, lo + bytes), element (0, ..., 0) at lo + first. */
static void
span_of(const gr_operand *o, host_span *sp)
{
    memset(sp, 0, sizeof(*sp));
    if (o->size == 0) return;
    const int64_t itemsize = (int64_t)gr_dtype_itemsize(o->dtype);
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < o->ndim; i++) {
        const int64_t extent = (o->shape[i] - 1) * o->strides[i] * itemsize;
        if (extent < 0) lo += extent;
        else hi += extent;
    }
    sp->lo = (const char *)o->ptr + lo;
    sp->bytes = (size_t)(hi - lo + itemsize);
    sp->first = (ptrdiff_t)-lo;
}

static int
overlaps(const host_span *a, const host_span *b)
{
    return a->bytes && b->bytes && a->lo < b->lo + b->bytes && b->lo < a->lo + a->bytes;
}

/* out= sharing memory with the input: the kernels read a copy of the input, as NumPy does, except for the
 * one overlap the flat scans allow (exactly in place, element for element).  out= sharing memory with a device
 * array of ranges' bounds is refused. */
static int
plan_aside(PyObject *module, gr_job *j)
{
    if (j->out && j->bounds && !j->bounds->is_host) { /* the kernels would write over ranges they have yet to read */
        host_span bounds, stops, out;
        span_of(j->bounds, &bounds);
        span_of(j->out, &out);
        if (j->stops) span_of(j->stops, &stops);
        if (overlaps(&bounds, &out) || (j->stops && overlaps(&stops, &out))) {
            PyErr_SetString(PyExc_ValueError, "out= shares memory with the ranges' bounds: pass a copy of them");
            return -1;
        }
    }
    if (!j->out || j->in->is_host || j->in->size == 0) return 0;
    host_span in, out;
    span_of(j->in, &in);
    span_of(j->out, &out);
    if (!overlaps(&in, &out)) return 0;
    if (j->flat && j->kind == GR_KIND_SCAN && in.lo == out.lo && in.bytes == out.bytes &&
        gr_dtype_itemsize(j->in->dtype) == gr_dtype_itemsize(j->a.out_dtype))
        return 0;
    if (gr_device_alloc(module, j->device, in.bytes, j->stream, &j->aside) < 0) return -1;
    j->aside_src = in.lo;
    j->aside_bytes = in.bytes;
    j->a.in = (const char *)j->aside + in.first;
    return 0;
}

static int
workspace_size(PyObject *module, gr_job *j, size_t *bytes)
{
    *bytes = 0; /* a copy needs none */
    int cuda_error = 0;
    gr_status st = GR_OK;
    if (j->kind == GR_KIND_COPY) st = GR_OK;
    else if (j->flat) st = gr_workspace_size(&j->a, bytes, &cuda_error);
    else if (j->kind == GR_KIND_REDUCE) st = gr_reduce_segments_workspace(&j->a, &j->s, bytes, &cuda_error);
    else st = gr_scan_segments_workspace(&j->a, &j->s, bytes, &cuda_error);
    if (st != GR_OK) {
        gr_raise_status(module, st, cuda_error, j->info ? j->info->name : "copy");
        return -1;
    }
    return 0;
}

static int
reserve_workspace(PyObject *module, gr_job *j, size_t bytes)
{
    if (bytes == 0 && (j->captured || j->contained)) { /* a plan that reads none (a one-pass kernel, a copy) */
        j->a.workspace = NULL;
        j->a.workspace_bytes = 0;
        return 0;
    }
    if (j->captured) { /* the graph's own: allocated and freed in the capture, zeroed there (gr_job_enqueue) */
        if (bytes < GR_WORKSPACE_ZEROED_BYTES) bytes = GR_WORKSPACE_ZEROED_BYTES;
        if (gr_device_alloc(module, j->device, bytes, j->stream, &j->graph_workspace) < 0) return -1;
        j->a.workspace = j->graph_workspace;
        j->a.workspace_bytes = bytes;
        return 0;
    }
    if (gr_exec_reserve_workspace(module, j->ex, bytes) < 0) return -1;
    j->a.workspace = j->ex->workspace;
    j->a.workspace_bytes = j->ex->workspace_bytes;
    return 0;
}

/* Whether the work stream is capturing a CUDA graph (see the top of this file), and what a captured call cannot
 * do: read or write host memory (a copy the graph would replay from memory the caller may have freed, and a wait
 * capture forbids). */
static int
check_capture(PyObject *module, gr_job *j)
{
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t err = cudaStreamIsCapturing(j->stream, &status);
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "asking whether the stream captures a CUDA graph");
        return -1;
    }
    j->captured = status != cudaStreamCaptureStatusNone;
    if (j->captured && (j->in->is_host || (j->mask && j->mask->is_host) || (j->bounds && j->bounds->is_host))) {
        PyErr_SetString(PyExc_TypeError,
                        "a host (NumPy) array cannot be reduced under CUDA graph capture: its copy to the device and "
                        "the wait for the result cannot be replayed; capture calls on device arrays");
        return -1;
    }
    return 0;
}

static int operands_freed_in_order(const gr_job *j);

/* Which stream the caller reads out= on is unknown (no stream named, or a DLPack producer that was told the legacy
 * stream): the call completes before it returns, so every stream sees the values. */
static int
out_waits(const gr_job *j)
{
    return j->out && (j->out->origin == GR_STREAM_NONE || j->out->origin == GR_STREAM_HANDSHAKE);
}

/* Whether the job needs no workspace, touches no host memory and none of the exec's buffers, writes a device
 * result the caller reads on the work stream (no wait before returning) and needs nothing kept alive: then its
 * work is the same whether the stream captures a CUDA graph or not, so it asks no question of the stream and
 * records no event for the exec -- a small call on device data costs its launch (issue 38).  Decided before
 * make_result from what decides the result's kind: a device input's is an out= or a device array. */
static int
contained(const gr_job *j, size_t workspace_bytes)
{
    if (workspace_bytes || j->streamed.on || j->in->is_host || (j->mask && j->mask->is_host) ||
        (j->bounds && j->bounds->is_host) || gr_kept_count() > 0)
        return 0;
    return !out_waits(j) && operands_freed_in_order(j);
}

/* Where the kernel writes and what the call returns. */
static int
make_result(PyObject *module, gr_job *j)
{
    const size_t itemsize = gr_dtype_itemsize(j->a.out_dtype);
    j->out_bytes = (size_t)j->res_size * itemsize;
    if (j->out) {
        j->rk = RESULT_OUT;
        j->a.out = j->out->ptr;
        if (out_waits(j)) j->sync = 1;
        j->result = PyObject_GetAttrString(gr_plan_out(j->plan), "obj"); /* what the caller passed */
        return j->result ? 0 : -1;
    }
    if (j->res_ndim == 0 && j->kind != GR_KIND_COPY && j->in->is_host) { /* a device input's is a 0-d array */
        j->rk = RESULT_SCALAR;
        /* auto's flat kernels and the axis kernels store a result with plain stores: into pinned host memory
         * directly (mapped under unified addressing), which saves a copy after the kernel.  The classic flat
         * variants go through a device slot (the atomic ones accumulate into their result). */
        j->scalar_in_pinned = !j->flat || (j->info->properties & GR_PROP_DEFAULT);
        j->a.out = j->ex->result; /* or the pinned buffer, once plan_uploads has sized it (gr_job_prepare) */
        j->sync = 1;
        return 0;
    }
    if (j->in->is_host) {
        j->rk = RESULT_HOST;
        npy_intp dims[GR_MAX_NDIM];
        for (int i = 0; i < j->res_ndim; i++) dims[i] = (npy_intp)j->p->res_shape[i];
        j->result = gr_host_result_new(j->res_ndim, dims, gr_dtype_to_typenum(j->a.out_dtype), &j->host_dst_pinned);
        if (!j->result) return -1;
        j->host_dst = PyArray_DATA((PyArrayObject *)j->result);
        if (j->out_bytes && !j->streamed.downloads) { /* (streamed results go home chunk by chunk) */
            if (gr_check_device_memory_limit(module, j->out_bytes, "the result, held on the device") < 0 ||
                gr_device_alloc(module, j->device, j->out_bytes, j->stream, &j->device_result) < 0)
                return -1;
        }
        j->a.out = j->device_result;
        j->sync = 1;
        return 0;
    }
    j->rk = RESULT_DEVICE; /* in a capture: pool memory the graph allocates (a copy's is freed there too) */
    /* Where the array lives and is freed: the caller's own stream (PyTorch's or CuPy's current one, or a
     * DeviceArray's that lives on it), where the caller reads it next and where a free comes after those reads, its
     * stream object held where the library may destroy the stream (CuPy); else the legacy stream, which cannot be
     * destroyed; else the device's own stream, ordered after the work.  Never the per-thread default stream:
     * another thread that frees or exports the array would name its own. */
    cudaStream_t home = j->ex->stream;
    PyObject *stream_owner = NULL;
    if (j->stream == cudaStreamLegacy) home = j->stream;
    else if ((j->in->origin == GR_STREAM_CALLER || j->in->origin == GR_STREAM_OWN) && j->in->stream == j->stream &&
             j->stream != cudaStreamPerThread) {
        home = j->stream;
        stream_owner = gr_operand_stream_owner(gr_plan_input(j->plan));
    }
    j->result = gr_device_array_empty(module, j->res_ndim, j->p->res_shape, j->a.out_dtype, j->device, home,
                                      stream_owner);
    if (!j->result) return -1;
    j->a.out = gr_device_array_data(j->result);
    if (home != j->stream) { /* allocated on `home`: the work waits for that, and `home` for the work */
        j->waits[j->n_waits++] = home;
        j->releases[j->n_releases++] = home;
    }
    return 0;
}

/* Host operands: their spans go to device memory (the input into the exec's staging buffer). */
static int
plan_uploads(PyObject *module, gr_job *j)
{
    if (j->streamed.on) { /* chunk by chunk (stream_host.c): nothing staged whole */
        span_of(j->in, &j->up_in);
        j->sync = 1;
        if (gr_stream_reserve(module, j) < 0) return -1;
        return gr_exec_reserve_transfer(module, j->ex, j->rk == RESULT_HOST ? j->out_bytes : 0);
    }
    if (j->in->is_host) {
        span_of(j->in, &j->up_in);
        if (gr_check_device_memory_limit(module, j->up_in.bytes, "the host input, staged whole") < 0) return -1;
        if (j->up_in.bytes <= GR_STAGING_KEPT) { /* the exec keeps a buffer this big: no allocation once warm */
            if (gr_exec_reserve_staging(module, j->ex, j->up_in.bytes) < 0) return -1;
            j->up_in.device = j->ex->staging;
        }
        else { /* bigger ones borrow pool memory for the call only, so no exec holds gigabytes */
            if (gr_device_alloc(module, j->device, j->up_in.bytes, j->stream, &j->up_in.device) < 0) return -1;
            j->up_in.pooled = 1;
        }
        j->a.in = (const char *)j->up_in.device + j->up_in.first;
        j->sync = 1;
    }
    else if (!j->aside) {
        j->a.in = j->in->ptr;
    }
    if (j->mask) {
        if (j->mask->is_host) {
            span_of(j->mask, &j->up_mask);
            if (gr_check_device_memory_limit(module, j->up_mask.bytes,
                                             j->p->second ? "the host second operand, staged whole"
                                                 : "the host where= mask, staged whole") < 0)
                return -1;
            if (j->up_mask.bytes &&
                gr_device_alloc(module, j->device, j->up_mask.bytes, j->stream, &j->up_mask.device) < 0)
                return -1;
            j->up_mask.pooled = 1;
            j->s.mask = (const unsigned char *)j->up_mask.device + j->up_mask.first;
            j->sync = 1;
        }
        else {
            j->s.mask = j->mask->ptr;
            if (j->mask->has_stream && j->mask->stream != j->stream) j->waits[j->n_waits++] = j->mask->stream;
        }
        if (j->p->second) { /* a second operand (dot's b, logsumexp's weights), read at the mask's strides */
            j->s.second = j->s.mask;
            j->s.mask = NULL;
        }
    }
    if (j->bounds) { /* the ranges' bounds: 1-d and contiguous (plan.c), so the span is the array */
        if (j->bounds->is_host) {
            span_of(j->bounds, &j->up_bounds);
            if (gr_check_device_memory_limit(module, j->up_bounds.bytes, "the host ranges' bounds, staged whole") < 0)
                return -1;
            if (j->up_bounds.bytes &&
                gr_device_alloc(module, j->device, j->up_bounds.bytes, j->stream, &j->up_bounds.device) < 0)
                return -1;
            j->up_bounds.pooled = 1;
            j->ranges.bounds = j->up_bounds.device
                                   ? (const int64_t *)((const char *)j->up_bounds.device + j->up_bounds.first)
                                   : NULL; /* no range: nothing is read */
            j->sync = 1;
        }
        else {
            j->ranges.bounds = j->bounds->ptr;
            if (j->bounds->has_stream && j->bounds->stream != j->stream) j->waits[j->n_waits++] = j->bounds->stream;
        }
        if (j->stops) { /* device stops apart from the starts (plan.c): read in place as well; for group ids
                           the two notes of the ids out of range, written */
            if (j->ranges.form == GR_RANGES_GROUP_IDS) j->ranges.id_notes = j->stops->ptr;
            else j->ranges.stops = j->stops->ptr;
            if (j->stops->has_stream && j->stops->stream != j->stream) j->waits[j->n_waits++] = j->stops->stream;
        }
    }
    /* Each transfer wants its own pinned memory: the small ones the exec's buffer, sized for the larger of the
     * two; the large ones its ring of staging chunks (transfer.c). */
    if (gr_exec_reserve_transfer(module, j->ex, j->in->is_host ? j->up_in.bytes : 0) < 0) return -1;
    return gr_exec_reserve_transfer(module, j->ex, j->rk == RESULT_HOST ? j->out_bytes : 0);
}

/* ---------------------------------------------------------------- the stages */

static void
job_free(gr_job *j)
{
    if (!j) return;
    /* Pool memory is freed stream-ordered, after the work that uses it (or at once when nothing ran). */
    if (j->aside) (void)cudaFreeAsync(j->aside, j->stream);
    if (j->graph_workspace) (void)cudaFreeAsync(j->graph_workspace, j->stream);
    if (j->up_in.pooled && j->up_in.device) (void)cudaFreeAsync(j->up_in.device, j->stream);
    if (j->up_mask.pooled && j->up_mask.device) (void)cudaFreeAsync(j->up_mask.device, j->stream);
    if (j->up_bounds.pooled && j->up_bounds.device) (void)cudaFreeAsync(j->up_bounds.device, j->stream);
    if (j->device_result) (void)cudaFreeAsync(j->device_result, j->stream);
    if (j->aside || j->graph_workspace || j->up_mask.pooled || j->up_bounds.pooled || j->up_in.pooled ||
        j->device_result)
        (void)cudaGetLastError();
    if (j->ex) {
        if (!gr_outcome_ok(&j->outcome) || PyErr_Occurred()) j->ex->dirty = 1;
        gr_exec_release(j->ex);
    }
    Py_XDECREF(j->result);
    Py_XDECREF(j->plan);
    PyMem_Free(j);
}

gr_job *
gr_job_prepare(PyObject *module, PyObject *plan)
{
    const gr_plan *p = gr_plan_of(module, plan);
    if (!p) return NULL;
    gr_job *j = PyMem_Calloc(1, sizeof(*j));
    if (!j) return (gr_job *)PyErr_NoMemory();
    j->plan = Py_NewRef(plan);
    j->p = p;
    j->outcome.stage = "running the work";
    j->kind = p->kind;
    j->info = p->info;
    j->flat = p->launcher == GR_LAUNCH_FLAT;
    j->in = p->in;
    j->mask = p->second ? p->second : p->mask; /* the second operand travels as the mask does */
    j->out = p->out;
    j->res_ndim = p->res_ndim;
    j->res_size = p->res_size;
    j->a = (gr_args){.variant = p->variant, .op = p->op, .in_dtype = p->in->dtype, .out_dtype = p->out_dtype,
                     .exclusive = p->exclusive};
    const char *second_role = p->second ? "the second operand" : "where=";
    if (j->kind != GR_KIND_COPY) {
        j->s = p->s;
        if (p->has_value) j->s.initial = p->value;
        if (p->has_ranges) { /* set before the workspace is sized (by count, algorithm, mean length) and before
                                streaming is planned (it refuses ranges); the bounds' address once it is known */
            j->bounds = p->bounds;
            j->stops = p->stops;
            j->ranges = p->ranges;
            j->ranges.bounds = j->ranges.stops = NULL;
            j->ranges.id_notes = NULL;
            j->s.ranges = &j->ranges;
        }
        gr_stream_plan(j);
        j->a.n = j->s.count[0] * j->s.count[1] != 0 ? j->s.reduce_count : 0; /* an empty scan plans no segment */
    }

    /* The device from here on. */
    if ((j->device = gr_current_device(module)) < 0) goto fail;
    const int reads = j->kind == GR_KIND_COPY ? j->res_size > 0 || j->in->size > 0
                                              : j->s.count[0] * j->s.count[1] * j->s.reduce_count > 0;
    if (reads && gr_check_operand_device(module, j->in, j->device, "the input") < 0) goto fail;
    if (j->mask && reads && gr_check_operand_device(module, j->mask, j->device, second_role) < 0) goto fail;
    if (j->bounds && j->s.count[0] * j->s.count[1] > 0 &&
        gr_check_operand_device(module, j->bounds, j->device, "the ranges' bounds") < 0)
        goto fail;
    if (j->stops && j->s.count[0] * j->s.count[1] > 0 &&
        gr_check_operand_device(module, j->stops, j->device, "the ranges' stops") < 0)
        goto fail;
    if (j->out && j->res_size > 0 && gr_check_operand_device(module, j->out, j->device, "out=") < 0) goto fail;
    if (!(j->ex = gr_exec_acquire(module, j->device))) goto fail;
    j->a.sm_count = gr_device_sm_count(j->device);
    j->stream = j->in->has_stream && (!j->in->is_host || j->in->origin == GR_STREAM_EXPLICIT) ? j->in->stream
                : j->out && j->out->has_stream         ? j->out->stream
                                                       : j->ex->stream;
    if (j->out && j->out->has_stream && j->out->stream != j->stream) {
        j->waits[j->n_waits++] = j->out->stream;
        j->releases[j->n_releases++] = j->out->stream;
    }
    /* stream=: after the streams the operands were made on, and an out='s own stream after the work */
    if (j->in->has_after && j->in->after != j->stream) j->waits[j->n_waits++] = j->in->after;
    if (j->mask && j->mask->has_after && j->mask->after != j->stream) j->waits[j->n_waits++] = j->mask->after;
    if (j->bounds && j->bounds->has_after && j->bounds->after != j->stream) j->waits[j->n_waits++] = j->bounds->after;
    if (j->stops && j->stops->has_after && j->stops->after != j->stream) j->waits[j->n_waits++] = j->stops->after;
    if (j->out && j->out->has_after && j->out->after != j->stream) {
        j->waits[j->n_waits++] = j->out->after;
        j->releases[j->n_releases++] = j->out->after;
    }
    size_t workspace_bytes = 0; /* a streamed job sizes its own */
    if (!j->streamed.on && workspace_size(module, j, &workspace_bytes) < 0) goto fail;
    j->contained = contained(j, workspace_bytes);
    if (!j->contained && check_capture(module, j) < 0) goto fail;
    if (!j->streamed.on && reserve_workspace(module, j, workspace_bytes) < 0) goto fail;
    if (make_result(module, j) < 0) goto fail;
    if (plan_aside(module, j) < 0) goto fail;
    if (plan_uploads(module, j) < 0) goto fail;
    if (j->rk == RESULT_SCALAR && j->scalar_in_pinned) j->a.out = j->ex->pinned; /* where it is now */
    if (j->streamed.on) {
        j->a.workspace = j->ex->workspace;
        j->a.workspace_bytes = j->ex->workspace_bytes;
    }
    j->a.stream = j->stream;
    if (!j->captured && !j->contained && gr_exec_begin(module, j->ex, j->stream) < 0) goto fail;
    return j;

fail:
    job_free(j);
    return NULL;
}

static void
upload(gr_job *j, host_span *sp, const char *stage)
{
    gr_outcome *o = &j->outcome;
    if (!sp->bytes || !gr_outcome_ok(o)) return;
    if (sp == &j->up_in) /* through the exec's pinned buffer when small; the call synchronises before returning */
        gr_outcome_keep(o, gr_upload_host(j->ex, sp->device, sp->lo, sp->bytes, j->stream), stage);
    else /* pageable: the source is copied out before cudaMemcpyAsync returns */
        gr_outcome_keep(o, cudaMemcpyAsync(sp->device, sp->lo, sp->bytes, cudaMemcpyHostToDevice, j->stream), stage);
}

void
gr_job_launch(gr_job *j)
{
    gr_outcome *o = &j->outcome;
    if (!gr_outcome_ok(o)) return;
    if (j->kind == GR_KIND_COPY)
        o->st = gr_copy_strided(j->a.in_dtype, j->a.out_dtype, j->p->copy_ndim, j->p->copy_shape, j->p->copy_in,
                                j->p->copy_out, j->a.in, j->a.out, j->a.sm_count, j->stream, &o->cuda_error);
    else if (j->flat)
        o->st = j->kind == GR_KIND_REDUCE ? gr_reduce(&j->a, &o->cuda_error) : gr_scan(&j->a, &o->cuda_error);
    else
        o->st = j->kind == GR_KIND_REDUCE ? gr_reduce_segments(&j->a, &j->s, &o->cuda_error)
                                          : gr_scan_segments(&j->a, &j->s, &o->cuda_error);
}

void
gr_job_enqueue(gr_job *j)
{
    gr_outcome *o = &j->outcome;
    for (int i = 0; i < j->n_waits; i++)
        gr_outcome_keep(o, gr_stream_wait(j->ex, j->stream, j->waits[i]), "ordering the work after its operands");
    if (j->streamed.on) { /* uploads, kernels and a scan's downloads, chunk by chunk (stream_host.c) */
        gr_stream_enqueue(j);
        goto launched;
    }
    if (j->graph_workspace)
        gr_outcome_keep(o, cudaMemsetAsync(j->graph_workspace, 0, GR_WORKSPACE_ZEROED_BYTES, j->stream),
                        "zeroing the workspace");
    upload(j, &j->up_in, "copying the input to the device");
    upload(j, &j->up_mask, "copying where= to the device");
    upload(j, &j->up_bounds, "copying the ranges' bounds to the device");
    if (gr_outcome_ok(o) && j->aside)
        gr_outcome_keep(o, cudaMemcpyAsync(j->aside, j->aside_src, j->aside_bytes, cudaMemcpyDeviceToDevice, j->stream),
                        "copying the input aside (out= overlaps it)");
    gr_job_launch(j);
launched:
    for (int i = 0; i < j->n_releases; i++)
        gr_outcome_keep(o, gr_stream_wait(j->ex, j->releases[i], j->stream), "ordering the result's stream after the work");
    if (gr_outcome_ok(o) && j->rk == RESULT_SCALAR && !j->scalar_in_pinned)
        /* the result's own bytes: the slot's rest was never written (compute-sanitizer initcheck) */
        gr_outcome_keep(o, cudaMemcpyAsync(j->ex->pinned, j->ex->result, gr_dtype_itemsize(j->a.out_dtype),
                                           cudaMemcpyDeviceToHost, j->stream),
                        "copying the result to the host");
}

void
gr_job_complete(gr_job *j)
{
    gr_outcome *o = &j->outcome;
    if (gr_outcome_ok(o) && j->rk == RESULT_HOST && j->device_result && !j->interrupted)
        gr_outcome_keep(o, gr_download_host(j->ex, j->host_dst, j->device_result, j->out_bytes, j->host_dst_pinned,
                                            j->stream),
                        "copying the result to the host");
    else if ((j->sync || j->interrupted) && !j->captured) /* a capture runs nothing now: nothing to wait for */
        gr_outcome_keep(o, cudaStreamSynchronize(j->stream), "running the work");
    /* The exec's buffers were used on this stream, whatever happened; idle again if we waited for it.  (A captured
     * call used none of them.) */
    if (!j->captured && !j->contained)
        gr_outcome_keep(o, gr_exec_end(j->ex, j->stream, j->sync && gr_outcome_ok(o)), "recording the end of the work");
}

/* Whether the caller may free `o` as soon as the call returns without pulling memory from under the work still
 * running on `stream`: only where its allocator frees in order on that very stream. */
static int
freed_in_order(const gr_operand *o, cudaStream_t stream)
{
    if (!o || o->is_host) return 1;
    return (o->origin == GR_STREAM_CALLER || o->origin == GR_STREAM_OWN) && o->stream == stream &&
           stream != cudaStreamPerThread;
}

/* Whether every operand may be freed by the caller as the call returns (freed_in_order): else the plan keeps them. */
static int
operands_freed_in_order(const gr_job *j)
{
    return freed_in_order(j->in, j->stream) && freed_in_order(j->mask, j->stream) &&
           freed_in_order(j->bounds, j->stream) && freed_in_order(j->stops, j->stream) &&
           freed_in_order(j->out, j->stream);
}

PyObject *
gr_job_finish(PyObject *module, gr_job *j)
{
    PyObject *result = NULL;
    if (j->interrupted) { /* the signal handler's exception (KeyboardInterrupt) is set: it wins */
        job_free(j);
        return NULL;
    }
    /* An asynchronous call whose operands another allocator could free under the kernels: the plan holds them
     * until the stream has passed the work (keepalive.c). */
    if (gr_outcome_ok(&j->outcome) && !j->sync && !j->captured && !operands_freed_in_order(j) &&
        gr_keep_until_done(module, j->plan, j->stream) < 0) {
        job_free(j);
        return NULL;
    }
    if (gr_outcome_raise(module, &j->outcome, j->info ? j->info->name : "a strided copy") == 0) {
        if (j->rk == RESULT_SCALAR)
            result = PyArray_Scalar(j->ex->pinned, gr_dtype_descr(j->a.out_dtype), NULL);
        else {
            result = j->result;
            j->result = NULL;
        }
    }
    job_free(j);
    return result;
}

/* ---------------------------------------------------------------- what time_device (timing.c) reads */

cudaStream_t
gr_job_stream(const gr_job *j)
{
    return j->stream;
}

int
gr_job_device(const gr_job *j)
{
    return j->device;
}

gr_outcome *
gr_job_outcome(gr_job *j)
{
    return &j->outcome;
}

int
gr_job_check_timeable(const gr_job *j)
{
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone; /* a contained job did not ask */
    if (j->captured || (j->contained && cudaStreamIsCapturing(j->stream, &status) == cudaSuccess &&
                        status != cudaStreamCaptureStatusNone)) {
        PyErr_SetString(PyExc_TypeError, "time_device cannot time a plan under CUDA graph capture");
        return -1;
    }
    return 0;
}

void
gr_job_discard(gr_job *j)
{
    job_free(j);
}

/* Host bytes from which a call checks for Ctrl-C between its stages: about 10 ms of copying and more. */
#define GR_INTERRUPTIBLE_BYTES ((size_t)256 << 20)

static int
interruptible(const gr_job *j)
{
    return j->up_in.bytes >= GR_INTERRUPTIBLE_BYTES || (j->rk == RESULT_HOST && j->out_bytes >= GR_INTERRUPTIBLE_BYTES);
}

/* run(plan) -> the result (see the top of this file). */
PyObject *
gr_py_run(PyObject *module, PyObject *plan)
{
    gr_job *j = gr_job_prepare(module, plan);
    if (!j) return NULL;
    if (!j->captured) gr_kept_collect(); /* the operands of earlier calls whose work is done (no query in capture) */
    PyThreadState *saved = PyEval_SaveThread();
    j->gil = &saved; /* a streamed job looks for Ctrl-C between chunks */
    gr_job_enqueue(j);
    if (interruptible(j) && gr_outcome_ok(&j->outcome) && !j->interrupted) {
        j->interrupted = gr_job_signal_raised(j);
        if (!j->interrupted) { /* the device's part done, the download next: the second chance to stop */
            gr_outcome_keep(&j->outcome, cudaStreamSynchronize(j->stream), "running the work");
            j->interrupted = gr_outcome_ok(&j->outcome) && gr_job_signal_raised(j);
        }
    }
    gr_job_complete(j);
    j->gil = NULL;
    PyEval_RestoreThread(saved);
    return gr_job_finish(module, j);
}
