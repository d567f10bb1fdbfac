/* make_array.c -- _core.to_device() and _core.empty(): DeviceArrays made on request (the benchmark's inputs,
 * a caller's out= buffers), so nothing of gpureduce needs another library to hold data on the device.
 *
 * Both allocate through gr_device_array_empty on the device's own stream, like gpureduce's results.
 */
#include "ext.h"

PyObject *
gr_py_to_device(PyObject *module, PyObject *obj)
{
    gr_exec *ex = NULL;
    PyObject *array = NULL;
    PyObject *operand = gr_intake(module, obj, "the input");
    if (!operand) return NULL;
    const gr_operand *in = gr_operand_of(module, operand, "the input");
    PyObject *contiguous = NULL; /* the host values in C order, as the new array holds them */
    if (!in->is_host) {
        PyErr_Format(PyExc_TypeError, "to_device() copies host arrays to the device; %.200s is a device array already",
                     Py_TYPE(obj)->tp_name);
        goto fail;
    }
    const int device = gr_current_device(module);
    if (device < 0) goto fail;
    ex = gr_exec_acquire(module, device);
    if (!ex) goto fail;
    PyArray_Descr *descr = gr_dtype_descr(in->dtype);
    /* The values the intake read, not `obj` converted again: a second conversion may give another array (an
     * __array__ that answers differently each time), and the byte count below is the intake's. */
    PyObject *read = gr_operand_host_array(operand);
    if (!read) goto fail;
    Py_INCREF(descr); /* PyArray_FromAny steals it */
    contiguous = PyArray_FromAny(read, descr, 0, 0, NPY_ARRAY_CARRAY_RO, NULL);
    Py_DECREF(read);
    if (!contiguous) goto fail;
    const void *src = PyArray_DATA((PyArrayObject *)contiguous);
    const size_t bytes = (size_t)in->size * gr_dtype_itemsize(in->dtype);
    if (gr_exec_reserve_transfer(module, ex, bytes) < 0) goto fail;
    array = gr_device_array_empty(module, in->ndim, in->shape, in->dtype, device, ex->stream, NULL);
    if (!array) goto fail;
    void *dst = gr_device_array_data(array);
    cudaError_t err, done;
    Py_BEGIN_ALLOW_THREADS
    err = gr_upload_host(ex, dst, src, bytes, ex->stream);
    /* The exec's pinned memory must be idle before the exec goes back to the pool (transfer.c). */
    done = cudaStreamSynchronize(ex->stream);
    Py_END_ALLOW_THREADS
    if (err == cudaSuccess) err = done;
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "copying a host array to the device");
        goto fail;
    }
    gr_exec_release(ex);
    Py_DECREF(contiguous);
    Py_DECREF(operand);
    return array;

fail:
    Py_XDECREF(array);
    gr_exec_release(ex);
    Py_XDECREF(contiguous);
    Py_DECREF(operand);
    return NULL;
}

PyObject *
gr_py_empty(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "fill_byte", NULL};
    PyArray_Dims dims = {NULL, 0};
    PyArray_Descr *descr = NULL;
    PyObject *fill = Py_None, *array = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|O:empty", kwlist, PyArray_IntpConverter, &dims,
                                     PyArray_DescrConverter, &descr, &fill))
        goto done;
    long byte = -1;
    if (fill != Py_None) {
        byte = PyLong_AsLong(fill);
        if (byte == -1 && PyErr_Occurred()) goto done;
        if (byte < 0 || byte > 0xff) {
            PyErr_Format(PyExc_ValueError, "empty(): fill_byte must be None or 0..255, not %ld", byte);
            goto done;
        }
    }
    const int dt = PyDataType_HASFIELDS(descr) ? -1 : gr_dtype_from_descr(descr);
    if (dt < 0) {
        char names[512];
        gr_dtype_mask_names((1u << GR_DTYPE_COUNT) - 1, names, sizeof(names));
        PyErr_Format(PyExc_TypeError, "unsupported dtype %S: a DeviceArray holds %s", (PyObject *)descr, names);
        goto done;
    }
    if (dims.len > GR_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "a DeviceArray has at most %d dimensions, not %d", GR_MAX_NDIM, dims.len);
        goto done;
    }
    int64_t shape[GR_MAX_NDIM];
    size_t bytes = gr_dtype_itemsize((gr_dtype)dt);
    for (int i = 0; i < dims.len; i++) {
        shape[i] = (int64_t)dims.ptr[i];
        bytes *= (size_t)dims.ptr[i]; /* meaningful once gr_device_array_empty accepted the shape */
    }
    const int device = gr_current_device(module);
    if (device < 0) goto done;
    const cudaStream_t stream = gr_device_stream(module, device);
    if (!stream) goto done;
    array = gr_device_array_empty(module, dims.len, shape, (gr_dtype)dt, device, stream, NULL);
    if (array && byte >= 0) {
        /* Enqueued on the array's stream, which every consumer orders after (CAI v3, DLPack, get()). */
        cudaError_t err = cudaMemsetAsync(gr_device_array_data(array), (int)byte, bytes, stream);
        if (err != cudaSuccess) {
            gr_raise_cuda(module, err, "filling a new DeviceArray");
            Py_CLEAR(array);
        }
    }
done:
    PyDimMem_FREE(dims.ptr); /* PyArray_IntpConverter allocated it */
    Py_XDECREF(descr);
    return array;
}
