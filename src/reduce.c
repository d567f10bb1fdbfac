/* reduce.c -- _core.reduce(variant, op, a): one whole-array reduction, result as a NumPy scalar. */
#include "ext.h"

/* Validates the variant index and operator the Python layer resolved; the dtype check happens once the
 * input's dtype is known. */
const gr_variant_info *
gr_checked_variant(long variant, long op, gr_kind kind)
{
    int count;
    const gr_variant_info *table = gr_variant_table(&count);
    if (variant < 0 || variant >= count || table[variant].kind != kind) {
        PyErr_Format(PyExc_ValueError, "variant index %ld is not a %s variant", variant,
                     kind == GR_KIND_REDUCE ? "reduction" : "scan");
        return NULL;
    }
    if (op < 0 || op >= GR_OP_COUNT || !(table[variant].ops & GR_OPBIT(op))) {
        PyErr_Format(PyExc_ValueError, "variant '%s' does not implement operator %ld", table[variant].name, op);
        return NULL;
    }
    return &table[variant];
}

int
gr_check_variant_dtype(const gr_variant_info *v, gr_dtype dt)
{
    if (v->dtypes & GR_DTBIT(dt)) return 0;
    char names[256];
    gr_dtype_mask_names(v->dtypes, names, sizeof(names));
    PyErr_Format(PyExc_TypeError, "variant '%s' does not support dtype %s; it supports %s", v->name,
                 gr_dtype_name(dt), names);
    return -1;
}

PyObject *
gr_py_reduce(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "reduce(variant: int, op: int, a) takes 3 arguments");
        return NULL;
    }
    const long variant = PyLong_AsLong(args[0]), op = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    const gr_variant_info *info = gr_checked_variant(variant, op, GR_KIND_REDUCE);
    if (!info) return NULL;

    PyObject *result = NULL;
    gr_exec *ex = NULL;
    gr_buffer buf;
    if (gr_buffer_from_object(module, args[2], &buf) < 0) return NULL;
    if (gr_check_variant_dtype(info, buf.dtype) < 0) goto fail;
    if (!buf.dense) {
        PyErr_SetString(PyExc_ValueError,
                        "this entry point reads dense (C- or Fortran-contiguous) arrays only; gpureduce.sum/cumsum/... "
                        "route other layouts through the axis machinery");
        goto fail;
    }

    const gr_dtype out_dtype = gr_default_result_dtype(GR_KIND_REDUCE, (gr_op)op, buf.dtype);
    const int device = gr_buffer_device(module, &buf);
    if (device < 0) goto fail;
    ex = gr_exec_acquire(module, device);
    if (!ex) goto fail;

    const size_t in_bytes = (size_t)buf.n * gr_dtype_itemsize(buf.dtype);

    gr_args a = {
        .variant = (gr_variant)variant,
        .op = (gr_op)op,
        .in_dtype = buf.dtype,
        .out_dtype = out_dtype,
        .n = buf.n,
        .sm_count = gr_device_sm_count(device),
    };
    int cuda_error = 0;
    gr_status st = GR_OK;
    if (gr_exec_reserve_for(module, ex, &a, info->name) < 0) goto fail;
    if (gr_exec_reserve_pinned(module, ex, gr_transfer_pinned_bytes(buf.is_host ? in_bytes : 0)) < 0) goto fail;
    if (buf.is_host && gr_exec_reserve_staging(module, ex, in_bytes) < 0) goto fail;

    a.in = buf.is_host ? ex->staging : buf.ptr;
    a.out = ex->result;
    a.workspace = ex->workspace;
    a.workspace_bytes = ex->workspace_bytes;
    cudaStream_t stream = buf.has_stream ? buf.stream : ex->stream;
    a.stream = stream;
    if (gr_exec_begin(module, ex, stream) < 0) goto fail;

    cudaError_t err = cudaSuccess;
    const char *stage = "copying the input to the device";
    int registered = 0;
    Py_BEGIN_ALLOW_THREADS
    if (buf.is_host) err = gr_upload_host(ex, ex->staging, buf.ptr, in_bytes, stream, &registered);
    if (err == cudaSuccess) {
        st = gr_reduce(&a, &cuda_error);
        if (st == GR_OK) {
            stage = "copying the result to the host";
            err = cudaMemcpyAsync(ex->pinned, ex->result, 16 /* the widest scalar */, cudaMemcpyDeviceToHost, stream);
            if (err == cudaSuccess) err = gr_exec_end(ex, stream);
            if (err == cudaSuccess) {
                stage = "running the reduction";
                err = cudaStreamSynchronize(stream);
            }
        }
    }
    cudaError_t unpin = gr_upload_release(buf.ptr, registered, stream);
    if (err == cudaSuccess && unpin != cudaSuccess) {
        err = unpin;
        stage = "unlocking the input's pages";
    }
    Py_END_ALLOW_THREADS

    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, stage);
        goto fail;
    }
    if (st != GR_OK) {
        gr_raise_status(module, st, cuda_error, info->name);
        goto fail;
    }
    PyArray_Descr *out_descr = PyArray_DescrFromType(gr_dtype_to_typenum(out_dtype));
    result = PyArray_Scalar(ex->pinned, out_descr, NULL);
    Py_DECREF(out_descr);
    gr_exec_release(ex);
    gr_buffer_release(&buf);
    return result;

fail:
    if (ex) {
        ex->dirty = 1;
        gr_exec_release(ex);
    }
    gr_buffer_release(&buf);
    return NULL;
}
