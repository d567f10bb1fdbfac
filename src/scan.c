/* scan.c -- _core.scan(variant, op, a, exclusive, out): the inclusive or exclusive scan (cumsum, cumprod,
 * cummin, cummax) of the flattened array `a`, with NumPy's result dtype.
 *
 * Where the result goes:
 *   host input,   out=None          a new NumPy array (computed in pool memory, then downloaded)
 *   device input, out=None          a new DeviceArray on the device's stream (ordered after the work stream):
 *                                   asynchronous
 *   any input,    out=NumPy array   written through pool memory, `out` returned
 *   any input,    out=device array  written in place, `out` returned: asynchronous for a device input
 * Every call that touches host memory completes before it returns.  The work stream is the one the input
 * named (CAI v3), else the one a device out= named, else the device's own stream.  out= is checked against
 * the result before any device work.
 */
#include "ext.h"

#include <string.h>

static const char kOutAccepted[] =
    "out= must be None, a NumPy array, or a device array exporting __cuda_array_interface__";

/* A scan flattens in C order.  gr_buffer_from_object also takes Fortran-ordered device arrays (a reduction
 * does not care about order): refuse those unless they have one non-trivial dimension. */
static int
check_c_order(PyObject *obj, size_t itemsize)
{
    PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (!cai) return -1;
    int c_order = 1;
    PyObject *shape = PyDict_Check(cai) ? PyDict_GetItemString(cai, "shape") : NULL; /* borrowed */
    PyObject *strides = PyDict_Check(cai) ? PyDict_GetItemString(cai, "strides") : NULL;
    if (shape && strides && PyTuple_Check(shape) && PyTuple_Check(strides) &&
        PyTuple_GET_SIZE(shape) == PyTuple_GET_SIZE(strides)) {
        long long expect = (long long)itemsize, size = 1;
        for (Py_ssize_t i = PyTuple_GET_SIZE(shape) - 1; i >= 0; i--) {
            const long long dim = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
            const long long stride = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
            if (PyErr_Occurred()) { /* gr_buffer_from_object read the same values a moment ago */
                Py_DECREF(cai);
                return -1;
            }
            if (dim != 1 && stride != expect) c_order = 0;
            expect *= dim;
            size *= dim;
        }
        if (size == 0) c_order = 1;
    }
    Py_DECREF(cai);
    if (!c_order) {
        PyErr_SetString(PyExc_ValueError,
                        "the device array is not C-contiguous; scans run over the array flattened in C order, so "
                        "pass a C-contiguous one (e.g. cupy.ascontiguousarray(a) or a.contiguous())");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- out= */

typedef enum { OUT_NONE, OUT_HOST, OUT_DEVICE } out_kind;

typedef struct {
    out_kind kind;
    PyArrayObject *host;  /* OUT_HOST: the array (borrowed) */
    void *ptr;            /* OUT_DEVICE: its device memory */
    int has_stream;       /* OUT_DEVICE: it named a stream (CAI v3) ... */
    cudaStream_t stream;  /* ... this one: its producer's work there must precede ours */
} scan_out;

static int
wrong_dtype(PyArray_Descr *got, PyArray_Descr *want, gr_dtype in)
{
    PyErr_Format(PyExc_TypeError,
                 "out= has dtype %S but the result has dtype %S (NumPy's result dtype for input of dtype %s); scans "
                 "do not cast, so pass an out= of dtype %S",
                 (PyObject *)got, (PyObject *)want, gr_dtype_name(in), (PyObject *)want);
    return -1;
}

static int
wrong_shape(PyObject *shape, int64_t n)
{
    PyErr_Format(PyExc_ValueError, "out= has shape %R but the result (the flattened input's scan) has shape (%lld,)",
                 shape, (long long)n);
    return -1;
}

static int
malformed(const char *what)
{
    PyErr_Format(PyExc_ValueError, "malformed __cuda_array_interface__ of out=: %s", what);
    return -1;
}

static int
parse_host_out(PyArrayObject *out, int64_t n, PyArray_Descr *want, gr_dtype in, scan_out *o)
{
    if (!PyArray_EquivTypes(PyArray_DESCR(out), want)) return wrong_dtype(PyArray_DESCR(out), want, in);
    if (PyArray_NDIM(out) != 1 || PyArray_DIM(out, 0) != n) {
        PyObject *shape = PyObject_GetAttrString((PyObject *)out, "shape");
        if (!shape) return -1;
        wrong_shape(shape, n);
        Py_DECREF(shape);
        return -1;
    }
    if (PyArray_FailUnlessWriteable(out, "out= array") < 0) return -1;
    o->kind = OUT_HOST;
    o->host = out;
    return 0;
}

/* Reads the CUDA Array Interface of a device out= without touching the device. */
static int
parse_cai_out(PyObject *cai, int64_t n, PyArray_Descr *want, gr_dtype in, scan_out *o)
{
    if (!PyDict_Check(cai)) {
        PyErr_Format(PyExc_TypeError, "__cuda_array_interface__ of out= must be a dict, not %.200s",
                     Py_TYPE(cai)->tp_name);
        return -1;
    }
    PyObject *version = PyDict_GetItemString(cai, "version"), *typestr = PyDict_GetItemString(cai, "typestr");
    PyObject *shape = PyDict_GetItemString(cai, "shape"), *data = PyDict_GetItemString(cai, "data");
    PyObject *strides = PyDict_GetItemString(cai, "strides"), *mask = PyDict_GetItemString(cai, "mask");
    PyObject *stream = PyDict_GetItemString(cai, "stream"); /* all borrowed */
    if (!version || !typestr || !shape || !data)
        return malformed("'shape', 'typestr', 'data' and 'version' are required");
    const long v = PyLong_AsLong(version);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return malformed("'version' must be an int");
    }
    if (v != 2 && v != 3) {
        PyErr_Format(PyExc_ValueError,
                     "unsupported __cuda_array_interface__ version %ld of out=: supported versions are 2 and 3", v);
        return -1;
    }
    if (mask && mask != Py_None) {
        PyErr_SetString(PyExc_ValueError, "out= is a masked device array; masks are not supported");
        return -1;
    }

    PyArray_Descr *descr = NULL;
    if (!PyUnicode_Check(typestr) || !PyArray_DescrConverter(typestr, &descr)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "out=.__cuda_array_interface__['typestr'] %R is not a valid type string",
                     typestr);
        return -1;
    }
    const int same = PyArray_EquivTypes(descr, want);
    if (!same) wrong_dtype(descr, want, in);
    Py_DECREF(descr);
    if (!same) return -1;
    const long long itemsize = (long long)PyDataType_ELSIZE(want);

    if (!PyTuple_Check(shape)) return malformed("'shape' must be a tuple of ints");
    if (PyTuple_GET_SIZE(shape) != 1) return wrong_shape(shape, n);
    const long long length = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, 0));
    if (length == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return malformed("'shape' must be a tuple of ints");
    }
    if (length != n) return wrong_shape(shape, n);

    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return malformed("'data' must be a tuple (pointer, readonly)");
    const unsigned long long ptr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (ptr == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return malformed("'data'[0] must be the device pointer as a non-negative int");
    }
    const int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (readonly < 0) return -1;
    if (readonly) {
        PyErr_SetString(PyExc_ValueError,
                        "out= is read-only (its __cuda_array_interface__ has data=(ptr, True)); pass a writable array");
        return -1;
    }
    if (ptr == 0 && n > 0) return malformed("'data' holds a null pointer for a non-empty array");
    if (ptr % (unsigned long long)itemsize) {
        PyErr_Format(PyExc_ValueError, "out= device pointer 0x%llx is not aligned to its %lld-byte element size", ptr,
                     itemsize);
        return -1;
    }

    if (strides && strides != Py_None) {
        if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != 1)
            return malformed("'strides' must be None or a tuple with one int per dimension");
        const long long s = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, 0));
        if (s == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return malformed("'strides' must hold ints");
        }
        if (n > 1 && s != itemsize) {
            PyErr_Format(PyExc_ValueError,
                         "out= is not contiguous (a stride of %lld bytes for %lld-byte elements); pass a contiguous "
                         "array",
                         s, itemsize);
            return -1;
        }
    }

    o->has_stream = 0;
    o->stream = NULL;
    if (v >= 3 && stream && stream != Py_None) {
        const unsigned long long s = PyLong_AsUnsignedLongLong(stream);
        if (s == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return malformed("'stream' must be None or a positive int");
        }
        if (s == 0) return malformed("'stream' is 0, which the protocol forbids");
        o->has_stream = 1;
        o->stream = s == 1 ? cudaStreamLegacy : s == 2 ? cudaStreamPerThread : (cudaStream_t)(uintptr_t)s;
    }
    o->kind = OUT_DEVICE;
    o->ptr = (void *)(uintptr_t)ptr;
    return 0;
}

/* Checks out= against the result (n elements of `dt`, from an input of dtype `in`): no device work. */
static int
parse_out(PyObject *out, int64_t n, gr_dtype dt, gr_dtype in, scan_out *o)
{
    memset(o, 0, sizeof(*o));
    o->kind = OUT_NONE;
    if (out == Py_None) return 0;
    PyArray_Descr *want = PyArray_DescrFromType(gr_dtype_to_typenum(dt));
    if (!want) return -1;
    int rc;
    if (PyArray_Check(out)) {
        rc = parse_host_out((PyArrayObject *)out, n, want, in, o);
    }
    else {
        PyObject *cai = PyObject_GetAttrString(out, "__cuda_array_interface__");
        if (cai) {
            rc = parse_cai_out(cai, n, want, in, o);
            Py_DECREF(cai);
        }
        else {
            if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s; got %.200s", kOutAccepted, Py_TYPE(out)->tp_name);
            }
            rc = -1;
        }
    }
    Py_DECREF(want);
    return rc;
}

/* A device out= must be device memory of the device the scan runs on. */
static int
check_out_device(PyObject *module, const scan_out *o, int device, int64_t n)
{
    if (o->kind != OUT_DEVICE || n == 0) return 0;
    return gr_check_device_pointer(module, o->ptr, device, "out=");
}

/* ---------------------------------------------------------------- device work (no GIL) */

typedef struct {
    gr_exec *ex;
    gr_args a;               /* a.in / a.out: where the kernel reads and writes */
    cudaStream_t stream;
    const void *host_src;    /* host input, uploaded into a.in; or NULL */
    const void *copy_src;    /* device input, copied into a.in first because out= overlaps it; or NULL */
    size_t in_bytes;
    void *host_dst;          /* host memory the result is downloaded into; or NULL */
    size_t out_bytes;
    int out_wait;            /* out= named another stream: order the scan after it, and it after the scan */
    cudaStream_t out_stream;
    cudaStream_t result_stream; /* a new DeviceArray lives on the device's stream: order it after the scan */
    int sync;                /* host memory is involved: complete before returning */
    void *scratch_in;        /* pool memory, freed on `stream` when done */
    void *scratch_out;
    gr_outcome outcome;
} scan_job;

/* Frees the scratch buffers: stream-ordered, so safe right after the work that uses them is enqueued. */
static void
free_scratch(scan_job *j)
{
    gr_outcome *o = &j->outcome;
    if (j->scratch_in) gr_outcome_keep(o, cudaFreeAsync(j->scratch_in, j->stream), "releasing scratch memory");
    if (j->scratch_out) gr_outcome_keep(o, cudaFreeAsync(j->scratch_out, j->stream), "releasing scratch memory");
    j->scratch_in = j->scratch_out = NULL;
}

static void
run_scan(scan_job *j)
{
    gr_outcome *o = &j->outcome;
    int registered = 0;
    if (j->out_wait)
        gr_outcome_keep(o, gr_stream_wait(j->stream, j->out_stream), "ordering the scan after out='s stream");
    if (j->result_stream) /* the result's memory was allocated there */
        gr_outcome_keep(o, gr_stream_wait(j->stream, j->result_stream),
                        "ordering the scan after the result's allocation");
    if (gr_outcome_ok(o) && j->host_src)
        gr_outcome_keep(o, gr_upload_host(j->ex, (void *)j->a.in, j->host_src, j->in_bytes, j->stream, &registered),
                        "copying the input to the device");
    if (gr_outcome_ok(o) && j->copy_src)
        gr_outcome_keep(o,
                        cudaMemcpyAsync((void *)j->a.in, j->copy_src, j->in_bytes, cudaMemcpyDeviceToDevice, j->stream),
                        "copying the input aside (out= overlaps it)");
    if (gr_outcome_ok(o)) o->st = gr_scan(&j->a, &o->cuda_error);
    if (gr_outcome_ok(o) && j->out_wait)
        gr_outcome_keep(o, gr_stream_wait(j->out_stream, j->stream), "ordering out='s stream after the scan");
    /* The exec's workspace was used on this stream, whatever happened. */
    gr_outcome_keep(o, gr_exec_end(j->ex, j->stream), "recording the end of the scan");
    if (j->result_stream)
        gr_outcome_keep(o, gr_stream_wait(j->result_stream, j->stream), "ordering the result's stream after the scan");
    if (gr_outcome_ok(o) && j->host_dst)
        gr_outcome_keep(o, gr_download_host(j->ex, j->host_dst, j->a.out, j->out_bytes, j->stream),
                        "copying the result to the host");
    else if (j->sync)
        gr_outcome_keep(o, cudaStreamSynchronize(j->stream), "running the scan");
    gr_outcome_keep(o, gr_upload_release(j->host_src, registered, j->stream), "unlocking the input's pages");
    free_scratch(j);
}

/* ---------------------------------------------------------------- _core.scan */

PyObject *
gr_py_scan(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "scan(variant: int, op: int, a, exclusive: bool, out) takes 5 arguments");
        return NULL;
    }
    const long variant = PyLong_AsLong(args[0]), op = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    const int exclusive = PyObject_IsTrue(args[3]);
    if (exclusive < 0) return NULL;
    const gr_variant_info *info = gr_checked_variant(variant, op, GR_KIND_SCAN);
    if (!info) return NULL;
    PyObject *const out_obj = args[4];

    PyObject *result = NULL;
    PyArrayObject *landing_tmp = NULL; /* contiguous stand-in for a strided NumPy out= */
    gr_exec *ex = NULL;
    scan_job job;
    memset(&job, 0, sizeof(job));
    gr_buffer buf;
    if (gr_buffer_from_object(module, args[2], &buf) < 0) return NULL;
    if (gr_check_variant_dtype(info, buf.dtype) < 0) goto fail;
    const gr_dtype out_dtype = gr_default_result_dtype(GR_KIND_SCAN, (gr_op)op, buf.dtype);
    if (out_dtype == GR_DTYPE_COUNT) {
        gr_raise_status(module, GR_ERR_UNSUPPORTED_DTYPE, 0, info->name);
        goto fail;
    }
    if (!buf.is_host && check_c_order(args[2], gr_dtype_itemsize(buf.dtype)) < 0) goto fail;
    const int64_t n = buf.n;
    scan_out out;
    if (parse_out(out_obj, n, out_dtype, buf.dtype, &out) < 0) goto fail;

    /* Device work from here on. */
    const int device = gr_buffer_device(module, &buf);
    if (device < 0) goto fail;
    if (check_out_device(module, &out, device, n) < 0) goto fail;
    ex = gr_exec_acquire(module, device);
    if (!ex) goto fail;

    const size_t in_bytes = (size_t)n * gr_dtype_itemsize(buf.dtype);
    const size_t out_bytes = (size_t)n * gr_dtype_itemsize(out_dtype);
    const int host_out = out.kind == OUT_HOST || (out.kind == OUT_NONE && buf.is_host);
    gr_args a = {
        .variant = (gr_variant)variant,
        .op = (gr_op)op,
        .in_dtype = buf.dtype,
        .out_dtype = out_dtype,
        .n = n,
        .exclusive = exclusive,
        .sm_count = gr_device_sm_count(device),
    };
    if (gr_exec_reserve_for(module, ex, &a, info->name) < 0) goto fail;
    if (buf.is_host && gr_exec_reserve_staging(module, ex, in_bytes) < 0) goto fail;
    if (buf.is_host || host_out) {
        const size_t pin_in = gr_transfer_pinned_bytes(buf.is_host ? in_bytes : 0);
        const size_t pin_out = gr_transfer_pinned_bytes(host_out ? out_bytes : 0);
        if (gr_exec_reserve_pinned(module, ex, pin_in > pin_out ? pin_in : pin_out) < 0) goto fail;
    }
    const cudaStream_t stream = buf.has_stream                            ? buf.stream
                                : out.kind == OUT_DEVICE && out.has_stream ? out.stream
                                                                           : ex->stream;
    job.stream = stream;

    /* Where the kernel writes (a.out), and what the call returns. */
    if (out.kind == OUT_DEVICE) {
        a.out = out.ptr;
        Py_INCREF(out_obj);
        result = out_obj;
    }
    else if (host_out) {
        if (gr_device_alloc(module, device, out_bytes, stream, &job.scratch_out) < 0) goto fail;
        a.out = job.scratch_out;
        PyArrayObject *landing;
        if (out.kind == OUT_HOST) {
            Py_INCREF(out_obj);
            result = out_obj;
            landing = out.host;
            if (!PyArray_IS_C_CONTIGUOUS(out.host)) {
                landing_tmp = (PyArrayObject *)PyArray_NewLikeArray(out.host, NPY_CORDER, NULL, 0);
                if (!landing_tmp) goto fail;
                landing = landing_tmp;
            }
        }
        else {
            npy_intp dims[1] = {(npy_intp)n};
            result = PyArray_SimpleNew(1, dims, gr_dtype_to_typenum(out_dtype));
            if (!result) goto fail;
            landing = (PyArrayObject *)result;
        }
        job.host_dst = PyArray_DATA(landing);
    }
    else {
        /* The result lives on the device's own stream, which outlives any producer's stream: it is
         * exported, and the memory is freed there when the array dies. */
        result = gr_device_array_empty(module, 1, &n, out_dtype, device, ex->stream);
        if (!result) goto fail;
        a.out = gr_device_array_data(result);
        job.result_stream = ex->stream;
    }

    /* The input, as the kernel reads it. */
    if (buf.is_host) {
        a.in = ex->staging;
        job.host_src = buf.ptr;
    }
    else {
        const char *in_lo = buf.ptr, *out_lo = a.out;
        const int in_place = in_lo == out_lo && in_bytes == out_bytes; /* the kernels allow exactly this */
        const int overlap = in_lo < out_lo + out_bytes && out_lo < in_lo + in_bytes;
        if (out.kind == OUT_DEVICE && n > 0 && overlap && !in_place) {
            /* Any other overlap: read a copy of the input instead (as NumPy does). */
            if (gr_device_alloc(module, device, in_bytes, stream, &job.scratch_in) < 0) goto fail;
            job.copy_src = buf.ptr;
            a.in = job.scratch_in;
        }
        else {
            a.in = buf.ptr;
        }
    }
    a.workspace = ex->workspace;
    a.workspace_bytes = ex->workspace_bytes;
    a.stream = stream;

    job.ex = ex;
    job.a = a;
    job.in_bytes = in_bytes;
    job.out_bytes = out_bytes;
    job.out_wait = out.kind == OUT_DEVICE && out.has_stream && out.stream != stream;
    job.out_stream = out.stream;
    job.sync = buf.is_host || host_out;
    job.outcome.stage = "running the scan";
    if (gr_exec_begin(module, ex, stream) < 0) goto fail;

    Py_BEGIN_ALLOW_THREADS
    run_scan(&job);
    Py_END_ALLOW_THREADS

    if (gr_outcome_raise(module, &job.outcome, info->name) < 0) goto fail;
    if (landing_tmp && PyArray_CopyInto(out.host, landing_tmp) < 0) goto fail;
    Py_XDECREF(landing_tmp);
    gr_exec_release(ex);
    gr_buffer_release(&buf);
    return result;

fail:
    if (job.scratch_in || job.scratch_out) {
        /* Failed before the device work: nothing uses them; a failure to free is moot next to the error. */
        if (job.scratch_in) (void)cudaFreeAsync(job.scratch_in, job.stream);
        if (job.scratch_out) (void)cudaFreeAsync(job.scratch_out, job.stream);
        (void)cudaGetLastError();
    }
    Py_XDECREF(landing_tmp);
    Py_XDECREF(result); /* a DeviceArray frees its memory on its stream, after the failed work */
    if (ex) {
        ex->dirty = 1;
        gr_exec_release(ex);
    }
    gr_buffer_release(&buf);
    return NULL;
}
