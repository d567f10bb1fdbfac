/* segments.c -- the axis machinery's entry points (NumPy's axis=, keepdims, where=, initial=, dtype=):
 *
 *   _core.describe(a)          a device array's (dtype code, shape, strides in elements), read from its
 *                              __cuda_array_interface__ without touching the device
 *   _core.segments(...)        one axis reduction or scan (gr_reduce_segments / gr_scan_segments)
 *   _core.copy_strided(...)    a strided copy with a cast, device to device (gr_copy_strided)
 *
 * gpureduce/_layout.py has already merged the axes (gr_segments in gpureduce.h) and checked every argument;
 * what is left here is memory: where the input, mask and result live, host uploads of the memory a view
 * spans, stream ordering, and the result object.
 *
 * Streams: the work runs on the stream the input named (CAI v3), else the one a device out= named, else the
 * device's own.  A new DeviceArray result lives on the work stream when that is a default stream (legacy or
 * per-thread, which cannot be destroyed), else on the device's own stream, ordered after the work.
 */
#include "ext.h"

#include <string.h>

/* ---------------------------------------------------------------- _core.describe */

PyObject *
gr_py_describe(PyObject *module, PyObject *obj)
{
    gr_buffer buf;
    if (gr_buffer_from_object(module, obj, &buf) < 0) return NULL;
    PyObject *shape = PyTuple_New(buf.ndim), *strides = PyTuple_New(buf.ndim), *result = NULL;
    if (!shape || !strides) goto done;
    for (int i = 0; i < buf.ndim; i++) {
        PyObject *d = PyLong_FromLongLong(buf.shape[i]), *s = PyLong_FromLongLong(buf.strides[i]);
        if (!d || !s) {
            Py_XDECREF(d);
            Py_XDECREF(s);
            goto done;
        }
        PyTuple_SET_ITEM(shape, i, d);
        PyTuple_SET_ITEM(strides, i, s);
    }
    result = Py_BuildValue("(iOOii)", (int)buf.dtype, shape, strides, buf.is_host, buf.readonly);
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    gr_buffer_release(&buf);
    return result;
}

/* ---------------------------------------------------------------- operands */

/* One array operand of a call: a host ndarray (uploaded: the bytes its view spans) or a device array. */
typedef struct {
    PyObject *owner;       /* a new reference */
    int is_host;
    int dtype;             /* gr_dtype, or -1 for a host dtype gpureduce does not know */
    const char *host_lo;   /* host: the lowest byte the view touches */
    size_t span_bytes;     /* host: bytes from host_lo to past the highest element */
    ptrdiff_t first_offset;/* host: element (0, ..., 0) - host_lo, in bytes */
    void *device_ptr;      /* device: element (0, ..., 0); host: filled in once uploaded */
    int has_stream;
    cudaStream_t stream;
    void *scratch;         /* host: the pool memory the span was uploaded to */
} operand;

static void
operand_release(operand *o)
{
    Py_CLEAR(o->owner);
}

/* A host operand: `arr` must be an aligned, native ndarray (gpureduce/_layout.py makes it one). */
static int
operand_from_host(PyArrayObject *arr, operand *o)
{
    memset(o, 0, sizeof(*o));
    const int nd = PyArray_NDIM(arr);
    const npy_intp itemsize = PyArray_ITEMSIZE(arr);
    npy_intp lo = 0, hi = 0;
    int empty = 0;
    for (int i = 0; i < nd; i++) {
        const npy_intp extent = (PyArray_DIM(arr, i) - 1) * PyArray_STRIDE(arr, i);
        if (PyArray_DIM(arr, i) == 0) empty = 1;
        if (extent < 0) lo += extent;
        else hi += extent;
    }
    Py_INCREF(arr);
    o->owner = (PyObject *)arr;
    o->is_host = 1;
    o->host_lo = (const char *)PyArray_DATA(arr) + lo;
    o->span_bytes = empty ? 0 : (size_t)(hi - lo + itemsize);
    o->first_offset = -lo;
    o->dtype = gr_dtype_from_descr(PyArray_DESCR(arr));
    return 0;
}

static int
operand_from_object(PyObject *module, PyObject *obj, operand *o, const char *what)
{
    if (PyArray_Check(obj)) {
        PyArrayObject *arr = (PyArrayObject *)obj;
        if (!PyArray_ISALIGNED(arr) || !PyArray_ISNOTSWAPPED(arr)) {
            PyErr_Format(PyExc_ValueError, "%s: the host array must be aligned and in native byte order", what);
            return -1;
        }
        return operand_from_host(arr, o);
    }
    gr_buffer buf;
    if (gr_buffer_from_object(module, obj, &buf) < 0) return -1;
    if (buf.is_host) {
        gr_buffer_release(&buf);
        PyErr_Format(PyExc_TypeError, "%s must be a NumPy array or a device array", what);
        return -1;
    }
    memset(o, 0, sizeof(*o));
    o->owner = buf.owner; /* the reference moves */
    o->dtype = buf.dtype;
    o->device_ptr = buf.ptr;
    o->has_stream = buf.has_stream;
    o->stream = buf.stream;
    return 0;
}

/* ---------------------------------------------------------------- the device work (no GIL) */

typedef struct {
    gr_exec *ex;
    int kind; /* GR_KIND_REDUCE or GR_KIND_SCAN */
    gr_args a;
    gr_segments s;
    cudaStream_t stream;
    operand *in, *mask;
    cudaStream_t wait_for[3]; /* streams whose work must precede ours (out=, mask, result's allocation) */
    int n_wait;
    cudaStream_t then_release[2]; /* streams to order after ours (out='s, the result's) */
    int n_release;
    void *host_dst;           /* download the result here (out_bytes), then synchronise */
    void *device_result;      /* ... from here */
    size_t out_bytes;
    int sync;
    gr_outcome outcome;
} seg_job;

/* Host operands: copy the bytes their views span to pool memory (pageable copies; the call synchronises
 * before it returns, so the host memory outlives them). */
static void
upload(seg_job *j, operand *x, const char *stage)
{
    if (!x || !x->is_host || !gr_outcome_ok(&j->outcome)) return;
    if (x->span_bytes)
        gr_outcome_keep(&j->outcome, cudaMemcpyAsync(x->scratch, x->host_lo, x->span_bytes, cudaMemcpyHostToDevice,
                                                     j->stream),
                        stage);
    x->device_ptr = (char *)x->scratch + x->first_offset;
}

static void
run_job(seg_job *j)
{
    gr_outcome *o = &j->outcome;
    for (int i = 0; i < j->n_wait; i++)
        gr_outcome_keep(o, gr_stream_wait(j->stream, j->wait_for[i]), "ordering the work after its operands' streams");
    upload(j, j->in, "copying the input to the device");
    upload(j, j->mask, "copying where= to the device");
    if (gr_outcome_ok(o)) {
        j->a.in = j->in->device_ptr;
        if (j->mask) j->s.mask = j->mask->device_ptr;
        o->st = j->kind == GR_KIND_REDUCE ? gr_reduce_segments(&j->a, &j->s, &o->cuda_error)
                                          : gr_scan_segments(&j->a, &j->s, &o->cuda_error);
    }
    gr_outcome_keep(o, gr_exec_end(j->ex, j->stream), "recording the end of the work");
    for (int i = 0; i < j->n_release; i++)
        gr_outcome_keep(o, gr_stream_wait(j->then_release[i], j->stream),
                        "ordering the result's stream after the work");
    if (gr_outcome_ok(o) && j->host_dst)
        gr_outcome_keep(o, gr_download_host(j->ex, j->host_dst, j->device_result, j->out_bytes, j->stream),
                        "copying the result to the host");
    else if (j->sync)
        gr_outcome_keep(o, cudaStreamSynchronize(j->stream), "running the work");
}

/* ---------------------------------------------------------------- _core.segments */

static int
parse_segments(PyObject *t, gr_segments *s)
{
    int64_t v[12];
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 12) {
        PyErr_SetString(PyExc_TypeError, "segments must be a tuple of 12 ints "
                                         "(c0, c1, is0, is1, ir, os0, os1, or, ms0, ms1, mr, R)");
        return -1;
    }
    for (int i = 0; i < 12; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    memset(s, 0, sizeof(*s));
    s->count[0] = v[0];
    s->count[1] = v[1];
    s->in_stride[0] = v[2];
    s->in_stride[1] = v[3];
    s->reduce_in_stride = v[4];
    s->out_stride[0] = v[5];
    s->out_stride[1] = v[6];
    s->reduce_out_stride = v[7];
    s->mask_stride[0] = v[8];
    s->mask_stride[1] = v[9];
    s->reduce_mask_stride = v[10];
    s->reduce_count = v[11];
    if (v[0] < 0 || v[1] < 0 || v[11] < 0) {
        PyErr_SetString(PyExc_ValueError, "segment counts must be non-negative");
        return -1;
    }
    return 0;
}

static int
parse_shape(PyObject *t, int *ndim, int64_t *shape, int64_t *size)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) > GR_MAX_NDIM) {
        PyErr_SetString(PyExc_TypeError, "result shape must be a tuple of at most 64 ints");
        return -1;
    }
    *ndim = (int)PyTuple_GET_SIZE(t);
    *size = 1;
    for (int i = 0; i < *ndim; i++) {
        shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (shape[i] == -1 && PyErr_Occurred()) return -1;
        *size *= shape[i];
    }
    return 0;
}

/* segments(kind, variant, op, a, out_dtype, segments, result_shape, out, where, initial, exclusive)
 *   a, where: aligned native ndarrays or device arrays; where may be None
 *   out: None (a new result of result_shape, C order: the segment strides must say so) or a device array
 *        written in place through the segment's out strides
 *   initial: None or the bytes of one out_dtype value */
PyObject *
gr_py_segments(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "segments() takes 11 arguments");
        return NULL;
    }
    const long kind = PyLong_AsLong(args[0]), variant = PyLong_AsLong(args[1]), op = PyLong_AsLong(args[2]);
    const long out_dtype_l = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    const int exclusive = PyObject_IsTrue(args[10]);
    if (exclusive < 0) return NULL;
    if ((kind != GR_KIND_REDUCE && kind != GR_KIND_SCAN) || out_dtype_l < 0 || out_dtype_l >= GR_DTYPE_COUNT) {
        PyErr_SetString(PyExc_ValueError, "segments(): bad kind or result dtype code");
        return NULL;
    }
    const gr_dtype out_dtype = (gr_dtype)out_dtype_l;
    PyObject *const out_obj = args[7], *const where_obj = args[8], *const initial_obj = args[9];

    PyObject *result = NULL;
    gr_exec *ex = NULL;
    operand in = {0}, mask = {0}, out = {0};
    seg_job job;
    memset(&job, 0, sizeof(job));
    int res_ndim;
    int64_t res_shape[GR_MAX_NDIM], res_size;
    char initial_value[16];

    if (parse_segments(args[5], &job.s) < 0) return NULL;
    if (parse_shape(args[6], &res_ndim, res_shape, &res_size) < 0) return NULL;
    const size_t out_itemsize = gr_dtype_itemsize(out_dtype);
    if (initial_obj != Py_None) {
        char *bytes;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(initial_obj, &bytes, &len) < 0) return NULL;
        if ((size_t)len != out_itemsize) {
            PyErr_SetString(PyExc_ValueError, "initial must be the bytes of one value of the result dtype");
            return NULL;
        }
        memcpy(initial_value, bytes, (size_t)len);
        job.s.initial = initial_value;
    }

    if (operand_from_object(module, args[3], &in, "the input") < 0) goto fail;
    if (where_obj != Py_None && operand_from_object(module, where_obj, &mask, "where=") < 0) goto fail;
    if (out_obj != Py_None && operand_from_object(module, out_obj, &out, "out=") < 0) goto fail;
    if (out_obj != Py_None && out.is_host) {
        PyErr_SetString(PyExc_TypeError, "segments(): out must be a device array (host out= is copied into by Python)");
        goto fail;
    }
    if (in.dtype < 0) {
        PyErr_SetString(PyExc_TypeError, "segments(): unsupported input dtype");
        goto fail;
    }
    const gr_dtype in_dtype = (gr_dtype)in.dtype;
    if (!gr_segments_supported((gr_kind)kind, (gr_variant)variant, (gr_op)op, in_dtype, out_dtype)) {
        PyErr_Format(PyExc_TypeError, "no kernel for %s -> %s with this operator", gr_dtype_name(in_dtype),
                     gr_dtype_name(out_dtype));
        goto fail;
    }

    /* Device work from here on. */
    const int device = gr_current_device(module);
    if (device < 0) goto fail;
    const int64_t segments = job.s.count[0] * job.s.count[1];
    const int64_t reads = segments * job.s.reduce_count;
    if (!in.is_host && reads > 0 && gr_check_device_pointer(module, in.device_ptr, device, "the input") < 0) goto fail;
    if (mask.owner && !mask.is_host && reads > 0 &&
        gr_check_device_pointer(module, mask.device_ptr, device, "where=") < 0)
        goto fail;
    if (out.owner && res_size > 0 && gr_check_device_pointer(module, out.device_ptr, device, "out=") < 0) goto fail;
    ex = gr_exec_acquire(module, device);
    if (!ex) goto fail;

    gr_args a = {
        .variant = (gr_variant)variant,
        .op = (gr_op)op,
        .in_dtype = in_dtype,
        .out_dtype = out_dtype,
        .exclusive = exclusive,
        .sm_count = gr_device_sm_count(device),
    };
    size_t ws_bytes = 0;
    int cuda_error = 0;
    gr_status st = kind == GR_KIND_REDUCE ? gr_reduce_segments_workspace(&a, &job.s, &ws_bytes, &cuda_error)
                                          : gr_scan_segments_workspace(&a, &job.s, &ws_bytes, &cuda_error);
    if (st != GR_OK) {
        gr_raise_status(module, st, cuda_error, "the axis machinery");
        goto fail;
    }
    if (gr_exec_reserve_workspace(module, ex, ws_bytes) < 0) goto fail;
    const int host_result = out_obj == Py_None && in.is_host;
    job.out_bytes = (size_t)res_size * out_itemsize;
    if (host_result && gr_exec_reserve_pinned(module, ex, gr_transfer_pinned_bytes(job.out_bytes)) < 0) goto fail;

    const cudaStream_t stream = !in.is_host && in.has_stream ? in.stream : out.has_stream ? out.stream : ex->stream;
    job.stream = stream;
    if (mask.owner && !mask.is_host && mask.has_stream && mask.stream != stream)
        job.wait_for[job.n_wait++] = mask.stream;
    if (out.has_stream && out.stream != stream) {
        job.wait_for[job.n_wait++] = out.stream;
        job.then_release[job.n_release++] = out.stream;
    }

    /* Memory: uploads of host operands, the result. */
    if (in.is_host && in.span_bytes && gr_device_alloc(module, device, in.span_bytes, stream, &in.scratch) < 0)
        goto fail;
    if (mask.is_host && mask.span_bytes && gr_device_alloc(module, device, mask.span_bytes, stream, &mask.scratch) < 0)
        goto fail;
    if (out.owner) {
        a.out = out.device_ptr;
        Py_INCREF(out_obj);
        result = out_obj;
    }
    else if (host_result) {
        if (job.out_bytes && gr_device_alloc(module, device, job.out_bytes, stream, &job.device_result) < 0) goto fail;
        npy_intp dims[GR_MAX_NDIM];
        for (int i = 0; i < res_ndim; i++) dims[i] = (npy_intp)res_shape[i];
        result = PyArray_SimpleNew(res_ndim, dims, gr_dtype_to_typenum(out_dtype));
        if (!result) goto fail;
        a.out = job.device_result;
        job.host_dst = PyArray_DATA((PyArrayObject *)result);
    }
    else {
        /* The result lives on a stream nobody can destroy: the work stream when that is a default stream (no
         * cross-stream hop at all, the common case of CuPy's null stream), else the device's own stream,
         * ordered after the work. */
        const cudaStream_t home =
            (stream == cudaStreamLegacy || stream == cudaStreamPerThread) ? stream : ex->stream;
        result = gr_device_array_empty(module, res_ndim, res_shape, out_dtype, device, home);
        if (!result) goto fail;
        a.out = gr_device_array_data(result);
        if (home != stream) {
            job.wait_for[job.n_wait++] = home;
            job.then_release[job.n_release++] = home;
        }
    }
    a.workspace = ex->workspace;
    a.workspace_bytes = ex->workspace_bytes;
    a.stream = stream;
    job.ex = ex;
    job.kind = (int)kind;
    job.a = a;
    job.in = &in;
    job.mask = mask.owner ? &mask : NULL;
    job.sync = in.is_host || mask.is_host || host_result;
    job.outcome.stage = "running the work";
    if (gr_exec_begin(module, ex, stream) < 0) goto fail;

    Py_BEGIN_ALLOW_THREADS
    run_job(&job);
    Py_END_ALLOW_THREADS

    /* Scratch memory is freed stream-ordered, after the work that used it. */
    if (in.scratch) gr_outcome_keep(&job.outcome, cudaFreeAsync(in.scratch, stream), "releasing scratch memory");
    if (mask.scratch) gr_outcome_keep(&job.outcome, cudaFreeAsync(mask.scratch, stream), "releasing scratch memory");
    if (job.device_result)
        gr_outcome_keep(&job.outcome, cudaFreeAsync(job.device_result, stream), "releasing scratch memory");
    in.scratch = mask.scratch = job.device_result = NULL;
    if (gr_outcome_raise(module, &job.outcome, "the axis machinery") < 0) goto fail;
    gr_exec_release(ex);
    operand_release(&in);
    operand_release(&mask);
    operand_release(&out);
    return result;

fail:
    if (in.scratch) (void)cudaFreeAsync(in.scratch, job.stream);
    if (mask.scratch) (void)cudaFreeAsync(mask.scratch, job.stream);
    if (job.device_result) (void)cudaFreeAsync(job.device_result, job.stream);
    (void)cudaGetLastError();
    Py_XDECREF(result);
    if (ex) {
        ex->dirty = 1;
        gr_exec_release(ex);
    }
    operand_release(&in);
    operand_release(&mask);
    operand_release(&out);
    return NULL;
}

/* ---------------------------------------------------------------- _core.copy_strided */

/* copy_strided(a, out_dtype, shape, in_strides, out, out_strides): `a` is a device array or an aligned native
 * ndarray (uploaded first: the bytes its view spans).  out None: a new C-ordered DeviceArray of `shape`
 * (out_strides must be its C strides); else a device array written in place.  Shapes and strides in elements,
 * at most GR_COPY_MAX_NDIM dimensions. */
PyObject *
gr_py_copy_strided(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "copy_strided() takes 6 arguments");
        return NULL;
    }
    const long out_dtype_l = PyLong_AsLong(args[1]);
    if (out_dtype_l == -1 && PyErr_Occurred()) return NULL;
    if (out_dtype_l < 0 || out_dtype_l >= GR_DTYPE_COUNT) {
        PyErr_SetString(PyExc_ValueError, "copy_strided(): bad dtype code");
        return NULL;
    }
    int ndim, nd_in, nd_out;
    int64_t shape[GR_MAX_NDIM], in_strides[GR_MAX_NDIM], out_strides[GR_MAX_NDIM], size, unused;
    if (parse_shape(args[2], &ndim, shape, &size) < 0 || parse_shape(args[3], &nd_in, in_strides, &unused) < 0 ||
        parse_shape(args[5], &nd_out, out_strides, &unused) < 0)
        return NULL;
    if (nd_in != ndim || nd_out != ndim || ndim > GR_COPY_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "copy_strided(): shape and strides must agree, at most %d dimensions",
                     GR_COPY_MAX_NDIM);
        return NULL;
    }
    operand src = {0}, dst = {0};
    PyObject *result = NULL;
    cudaStream_t stream = NULL;
    if (operand_from_object(module, args[0], &src, "the source") < 0) return NULL;
    if (src.dtype < 0) {
        PyErr_SetString(PyExc_TypeError, "copy_strided(): unsupported source dtype");
        goto fail;
    }
    if (args[4] != Py_None) {
        if (operand_from_object(module, args[4], &dst, "out=") < 0) goto fail;
        if (dst.is_host || dst.dtype != (int)out_dtype_l) {
            PyErr_SetString(PyExc_ValueError, "copy_strided(): out must be a device array of the result dtype");
            goto fail;
        }
    }
    const int device = gr_current_device(module);
    if (device < 0) goto fail;
    if (size > 0 && !src.is_host && gr_check_device_pointer(module, src.device_ptr, device, "the input") < 0) goto fail;
    if (size > 0 && dst.owner && gr_check_device_pointer(module, dst.device_ptr, device, "out=") < 0) goto fail;
    cudaStream_t own = gr_device_stream(module, device);
    if (!own) goto fail;
    stream = !src.is_host && src.has_stream ? src.stream : dst.has_stream ? dst.stream : own;
    if (src.is_host && src.span_bytes && gr_device_alloc(module, device, src.span_bytes, stream, &src.scratch) < 0)
        goto fail;
    void *out_ptr;
    if (dst.owner) {
        out_ptr = dst.device_ptr;
        Py_INCREF(args[4]);
        result = args[4];
    }
    else {
        result = gr_device_array_empty(module, ndim, shape, (gr_dtype)out_dtype_l, device, own);
        if (!result) goto fail;
        out_ptr = gr_device_array_data(result);
    }
    int cuda_error = 0;
    gr_status st = GR_OK;
    cudaError_t err = cudaSuccess;
    Py_BEGIN_ALLOW_THREADS
    if (dst.owner && dst.has_stream) err = gr_stream_wait(stream, dst.stream);
    if (err == cudaSuccess && !dst.owner) err = gr_stream_wait(stream, own);
    if (err == cudaSuccess && src.is_host && src.span_bytes)
        err = cudaMemcpyAsync(src.scratch, src.host_lo, src.span_bytes, cudaMemcpyHostToDevice, stream);
    if (src.is_host) src.device_ptr = (char *)src.scratch + src.first_offset;
    if (err == cudaSuccess)
        st = gr_copy_strided((gr_dtype)src.dtype, (gr_dtype)out_dtype_l, ndim, shape, in_strides, out_strides,
                             src.device_ptr, out_ptr, gr_device_sm_count(device), stream, &cuda_error);
    if (err == cudaSuccess && st == GR_OK) {
        if (dst.owner && dst.has_stream) err = gr_stream_wait(dst.stream, stream);
        else if (!dst.owner) err = gr_stream_wait(own, stream);
    }
    if (src.scratch) { /* the host bytes must outlive the copy; the pool memory is freed after it */
        cudaError_t e2 = cudaStreamSynchronize(stream);
        if (err == cudaSuccess) err = e2;
        e2 = cudaFreeAsync(src.scratch, stream);
        if (err == cudaSuccess) err = e2;
        src.scratch = NULL;
    }
    Py_END_ALLOW_THREADS
    if (st != GR_OK) {
        gr_raise_status(module, st, cuda_error, "copy_strided");
        goto fail;
    }
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "a strided copy");
        goto fail;
    }
    operand_release(&src);
    operand_release(&dst);
    return result;
fail:
    if (src.scratch) (void)cudaFreeAsync(src.scratch, stream);
    (void)cudaGetLastError();
    Py_XDECREF(result);
    operand_release(&src);
    operand_release(&dst);
    return NULL;
}
