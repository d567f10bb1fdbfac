/* device_array.c -- gpureduce.DeviceArray: a C-contiguous array in device memory that gpureduce owns.
 *
 * Its memory comes from the device's default stream-ordered pool (cudaMallocAsync on the stream the array
 * is produced on) and goes back there (cudaFreeAsync on that same stream) when the array dies, so a result
 * costs no cudaMalloc once the pool is warm.  The array exports that stream through
 * __cuda_array_interface__ v3 and orders a consumer's stream after it in __dlpack__; get() / __array__
 * bring the values home (DLPack export: dlpack_export.c).  The stream must outlive the array: it is the
 * caller's own stream (PyTorch's, whose streams are never destroyed, or CuPy's, whose Stream object the array
 * holds), the legacy default stream, or the device's own stream (exec.c), which lives as long as the module (kept
 * alive by every DeviceArray through its type), ordered after the work that produced the array.
 *
 * The free is ordered after every read enqueued on that stream.  A DLPack consumer on another stream may still
 * have reads enqueued when it lets go, on a stream it may since have destroyed: an array exported so is freed
 * only after the whole device is done (a synchronisation, the GIL let go; results handed back in the caller's
 * kind are exported to the stream they live on, and never pay it).  A __cuda_array_interface__ consumer is held,
 * as the interface says, to order its work after the exported stream and to keep the array while it reads.
 */
#include "ext.h"

typedef struct {
    PyObject_HEAD
    void *ptr;            /* device memory, owned; NULL only while being built */
    PyArray_Descr *descr; /* the NumPy dtype */
    gr_dtype dtype;
    int device;
    cudaStream_t stream; /* produced on, exported, and freed on */
    int ndim;
    int64_t size;
    int64_t shape[GR_MAX_NDIM];
    /* The stream object of the caller's library when the stream is one it may destroy (a CuPy Stream): held so
     * that the stream outlives the array, which is freed there. */
    PyObject *stream_owner;
    /* Exported through DLPack to a consumer on another stream (or one that named none): that consumer's reads
     * may still be enqueued when the array dies, so the free waits for the whole device first. */
    int foreign_consumer;
} DeviceArrayObject;

#define DA(op) ((DeviceArrayObject *)(op))

/* Arrays up to this many elements show their values in repr() (NumPy's own summarisation threshold);
 * bigger ones show their shape only, so repr() never downloads much. */
#define GR_REPR_MAX_ITEMS 1000

static size_t
nbytes_of(const DeviceArrayObject *self)
{
    return (size_t)self->size * (size_t)PyDataType_ELSIZE(self->descr);
}

/* ---------------------------------------------------------------- construction, destruction */

PyObject *
gr_device_array_empty(PyObject *module, int ndim, const int64_t *shape, gr_dtype dtype, int device,
                      cudaStream_t stream, PyObject *stream_owner)
{
    if (ndim < 0 || ndim > GR_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "a DeviceArray has at most %d dimensions, not %d", GR_MAX_NDIM, ndim);
        return NULL;
    }
    PyArray_Descr *descr = PyArray_DescrFromType(gr_dtype_to_typenum(dtype));
    if (!descr) return NULL;
    const int64_t itemsize = PyDataType_ELSIZE(descr);
    int64_t size = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && size > INT64_MAX / itemsize / shape[i])) {
            Py_DECREF(descr);
            PyErr_SetString(PyExc_ValueError, "DeviceArray shape is negative or too large");
            return NULL;
        }
        size *= shape[i];
    }
    PyTypeObject *type = (PyTypeObject *)gr_state(module)->DeviceArrayType;
    DeviceArrayObject *self = (DeviceArrayObject *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(descr);
        return NULL;
    }
    self->descr = descr;
    self->dtype = dtype;
    self->device = device;
    self->stream = stream;
    Py_XINCREF(stream_owner);
    self->stream_owner = stream_owner;
    self->ndim = ndim;
    self->size = size;
    for (int i = 0; i < ndim; i++) self->shape[i] = shape[i];
    if (gr_device_alloc(module, device, (size_t)(size * itemsize), stream, &self->ptr) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

void *
gr_device_array_data(PyObject *array)
{
    return DA(array)->ptr;
}

int
gr_is_device_array(PyObject *module, PyObject *obj)
{
    return Py_TYPE(obj) == (PyTypeObject *)gr_state(module)->DeviceArrayType;
}

PyObject *
gr_device_array_stream_owner(PyObject *array)
{
    return DA(array)->stream_owner;
}

void
gr_device_array_describe(PyObject *array, gr_dtype *dtype, int *ndim, const int64_t **shape, int *device,
                         cudaStream_t *stream)
{
    const DeviceArrayObject *self = DA(array);
    *dtype = self->dtype;
    *ndim = self->ndim;
    *shape = self->shape;
    *device = self->device;
    *stream = self->stream;
}

/* A destructor cannot raise: an unexpected CUDA failure is reported as an "unraisable" exception
 * (printed to stderr), keeping whatever exception is in flight. */
static void
write_unraisable_cuda(cudaError_t err, const char *what)
{
    (void)cudaGetLastError();
    if (err == cudaErrorCudartUnloading || err == cudaErrorContextIsDestroyed) return; /* process exit */
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *saved = PyErr_GetRaisedException();
#else
    PyObject *saved_type, *saved_value, *saved_tb;
    PyErr_Fetch(&saved_type, &saved_value, &saved_tb);
#endif
    PyErr_Format(PyExc_RuntimeError, "%s: %s: %s", what, cudaGetErrorName(err), cudaGetErrorString(err));
    PyErr_WriteUnraisable(NULL); /* not the half-destroyed object: its repr would touch the device */
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(saved);
#else
    PyErr_Restore(saved_type, saved_value, saved_tb);
#endif
}

static void
DeviceArray_dealloc(PyObject *op)
{
    DeviceArrayObject *self = DA(op);
    PyTypeObject *type = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    if (self->ptr) {
        /* The array's own device must be current: its stream may be a per-device default stream. */
        int current = -1;
        cudaError_t err = cudaGetDevice(&current);
        if (err == cudaSuccess && current != self->device) err = cudaSetDevice(self->device);
        /* A consumer on another stream names no stream of ours to wait for, nor can a handle it gave be trusted
         * now (it may have destroyed that stream): the device finishes everything first, the GIL let go. */
        if (err == cudaSuccess && self->foreign_consumer) {
            Py_BEGIN_ALLOW_THREADS
            err = cudaDeviceSynchronize();
            Py_END_ALLOW_THREADS
        }
        if (err == cudaSuccess) err = cudaFreeAsync(self->ptr, self->stream);
        if (err != cudaSuccess) write_unraisable_cuda(err, "freeing the memory of a gpureduce.DeviceArray");
        if (current >= 0 && current != self->device && cudaSetDevice(current) != cudaSuccess)
            (void)cudaGetLastError();
        self->ptr = NULL;
    }
    Py_CLEAR(self->descr);
    Py_CLEAR(self->stream_owner); /* after the free enqueued on its stream */
    type->tp_free(op);
    Py_DECREF(type); /* instances of a heap type own a reference to it */
}

static int
DeviceArray_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(DA(op)->descr);
    Py_VISIT(DA(op)->stream_owner);
    return 0;
}

/* ---------------------------------------------------------------- attributes */

static PyObject *
shape_tuple(const DeviceArrayObject *self)
{
    return gr_int64_tuple(self->shape, self->ndim);
}

static PyObject *
DeviceArray_shape(PyObject *op, void *closure)
{
    return shape_tuple(DA(op));
}

static PyObject *
DeviceArray_dtype(PyObject *op, void *closure)
{
    Py_INCREF(DA(op)->descr);
    return (PyObject *)DA(op)->descr;
}

static PyObject *
DeviceArray_size(PyObject *op, void *closure)
{
    return PyLong_FromLongLong(DA(op)->size);
}

static PyObject *
DeviceArray_ndim(PyObject *op, void *closure)
{
    return PyLong_FromLong(DA(op)->ndim);
}

static PyObject *
DeviceArray_nbytes(PyObject *op, void *closure)
{
    return PyLong_FromSize_t(nbytes_of(DA(op)));
}

static PyObject *
DeviceArray_itemsize(PyObject *op, void *closure)
{
    return PyLong_FromSsize_t((Py_ssize_t)PyDataType_ELSIZE(DA(op)->descr));
}

static PyObject *
DeviceArray_device(PyObject *op, void *closure)
{
    return PyLong_FromLong(DA(op)->device);
}

/* A stream as the CUDA Array Interface numbers it: 1 legacy default, 2 per-thread default, else the handle. */
static PyObject *
stream_number(cudaStream_t stream)
{
    if (stream == cudaStreamLegacy) return PyLong_FromLong(1);
    if (stream == cudaStreamPerThread) return PyLong_FromLong(2);
    return PyLong_FromVoidPtr((void *)stream);
}

static PyObject *
DeviceArray_cai(PyObject *op, void *closure)
{
    DeviceArrayObject *self = DA(op);
    if (self->dtype == GR_BFLOAT16) {
        /* The interface has no type string for bfloat16 ('<V2' would read as raw bytes), as PyTorch's has none:
         * AttributeError, so that consumers that probe for it move on to __dlpack__. */
        PyErr_SetString(PyExc_AttributeError, "a bfloat16 DeviceArray has no __cuda_array_interface__ (the interface "
                        "has no bfloat16 type string): pass it through DLPack (__dlpack__)");
        return NULL;
    }
    PyObject *shape = shape_tuple(self);
    PyObject *typestr = PyObject_GetAttrString((PyObject *)self->descr, "str"); /* '<f4', '|b1', ... */
    PyObject *ptr = PyLong_FromVoidPtr(self->ptr);
    PyObject *stream = stream_number(self->stream);
    PyObject *result = NULL;
    if (shape && typestr && ptr && stream)
        result = Py_BuildValue("{s:O,s:O,s:[(s,O)],s:(O,O),s:O,s:i,s:O}", "shape", shape, "typestr", typestr, "descr",
                               "", typestr, "data", ptr, Py_False, "strides", Py_None, "version", 3, "stream", stream);
    Py_XDECREF(shape);
    Py_XDECREF(typestr);
    Py_XDECREF(ptr);
    Py_XDECREF(stream);
    return result;
}

static Py_ssize_t
DeviceArray_length(PyObject *op)
{
    if (DA(op)->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return (Py_ssize_t)DA(op)->shape[0];
}

/* ---------------------------------------------------------------- to the host */

static PyObject *
DeviceArray_get(PyObject *op, PyObject *unused)
{
    DeviceArrayObject *self = DA(op);
    PyObject *module = PyType_GetModule(Py_TYPE(op));
    if (!module) return NULL;
    npy_intp dims[GR_MAX_NDIM];
    for (int i = 0; i < self->ndim; i++) dims[i] = (npy_intp)self->shape[i];
    int pinned = 0;
    PyArrayObject *host = (PyArrayObject *)gr_host_result_new(self->ndim, dims, self->descr->type_num, &pinned);
    if (!host) return NULL;

    gr_exec *ex = NULL;
    int previous = -1;
    if (gr_enter_device(module, self->device, &previous) < 0) goto fail;
    ex = gr_exec_acquire(module, self->device);
    if (!ex) goto fail;
    const size_t bytes = nbytes_of(self);
    if (gr_exec_reserve_transfer(module, ex, bytes) < 0) goto fail;
    cudaError_t err;
    void *dst = PyArray_DATA(host);
    Py_BEGIN_ALLOW_THREADS
    err = gr_download_host(ex, dst, self->ptr, bytes, pinned, self->stream);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "copying a DeviceArray to the host");
        goto fail;
    }
    gr_exec_release(ex); /* only its pinned buffer was used, and that is idle again */
    gr_leave_device(previous);
    return (PyObject *)host;

fail:
    gr_exec_release(ex);
    gr_leave_device(previous);
    Py_DECREF(host);
    return NULL;
}

static PyObject *
DeviceArray_array(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype, &copy)) return NULL;
    if (copy != Py_None) {
        const int c = PyObject_IsTrue(copy);
        if (c < 0) return NULL;
        if (!c) {
            PyErr_SetString(PyExc_ValueError,
                            "a DeviceArray lives in device memory: a NumPy array of it is always a copy, so "
                            "copy=False cannot be honoured (use copy=None or True)");
            return NULL;
        }
    }
    PyArray_Descr *want = NULL;
    if (!PyArray_DescrConverter2(dtype, &want)) return NULL; /* None -> NULL */
    PyObject *host = DeviceArray_get(op, NULL);
    if (!host || !want || PyArray_EquivTypes(PyArray_DESCR((PyArrayObject *)host), want)) {
        Py_XDECREF(want);
        return host;
    }
    PyObject *cast = PyArray_CastToType((PyArrayObject *)host, want, 0); /* steals `want` */
    Py_DECREF(host);
    return cast;
}

static PyObject *
DeviceArray_repr(PyObject *op)
{
    DeviceArrayObject *self = DA(op);
    if (self->size > GR_REPR_MAX_ITEMS) {
        PyObject *shape = shape_tuple(self);
        if (!shape) return NULL;
        PyObject *r = PyUnicode_FromFormat("DeviceArray(shape=%S, dtype=%S, device=%d)", shape, (PyObject *)self->descr,
                                           self->device);
        Py_DECREF(shape);
        return r;
    }
    PyObject *host = NULL, *numpy = NULL, *array2string = NULL, *call_args = NULL, *kwargs = NULL, *body = NULL;
    PyObject *result = NULL;
    host = DeviceArray_get(op, NULL); /* a synchronisation: fine for a repr */
    if (!host) goto done;
    numpy = PyImport_ImportModule("numpy");
    if (!numpy) goto done;
    array2string = PyObject_GetAttrString(numpy, "array2string");
    call_args = PyTuple_Pack(1, host);
    kwargs = Py_BuildValue("{s:s,s:s}", "separator", ", ", "prefix", "DeviceArray(");
    if (!array2string || !call_args || !kwargs) goto done;
    body = PyObject_Call(array2string, call_args, kwargs);
    if (!body) goto done;
    result = PyUnicode_FromFormat("DeviceArray(%S, dtype=%S, device=%d)", body, (PyObject *)self->descr, self->device);
done:
    Py_XDECREF(host);
    Py_XDECREF(numpy);
    Py_XDECREF(array2string);
    Py_XDECREF(call_args);
    Py_XDECREF(kwargs);
    Py_XDECREF(body);
    return result;
}

/* ---------------------------------------------------------------- DLPack */

/* A new DeviceArray holding a copy of `self`, produced on the same stream. */
static PyObject *
device_array_copy(PyObject *module, DeviceArrayObject *self)
{
    int previous;
    if (gr_enter_device(module, self->device, &previous) < 0) return NULL;
    PyObject *copy = gr_device_array_empty(module, self->ndim, self->shape, self->dtype, self->device, self->stream,
                                           self->stream_owner);
    if (copy) {
        cudaError_t err = cudaMemcpyAsync(DA(copy)->ptr, self->ptr, nbytes_of(self), cudaMemcpyDeviceToDevice,
                                          self->stream);
        if (err != cudaSuccess) {
            Py_CLEAR(copy);
            gr_raise_cuda(module, err, "copying a DeviceArray for __dlpack__(copy=True)");
        }
    }
    gr_leave_device(previous);
    return copy;
}

/* __dlpack__: the consumer's stream is ordered after the array's, then the capsule (dlpack_export.c). */
static PyObject *
DeviceArray_dlpack(PyObject *op, PyObject *args, PyObject *kwargs)
{
    DeviceArrayObject *self = DA(op);
    PyObject *module = PyType_GetModule(Py_TYPE(op));
    if (!module) return NULL;
    gr_dlpack_request req;
    if (gr_dlpack_parse_request(args, kwargs, self->device, &req) < 0) return NULL;
    DeviceArrayObject *exported = self;
    if (req.copy) {
        exported = (DeviceArrayObject *)device_array_copy(module, self);
        if (!exported) return NULL;
    }
    else Py_INCREF(exported);
    PyObject *capsule = NULL;
    if (!req.sync || req.consumer != self->stream || req.consumer == cudaStreamPerThread)
        exported->foreign_consumer = 1;
    if (req.sync && (req.consumer != self->stream || req.consumer == cudaStreamPerThread)) {
        int previous;
        if (gr_enter_device(module, self->device, &previous) < 0) goto done;
        gr_exec *ex = gr_exec_acquire(module, self->device);
        const cudaError_t err = ex ? gr_stream_wait(ex, req.consumer, self->stream) : cudaSuccess;
        gr_exec_release(ex);
        gr_leave_device(previous);
        if (!ex) goto done;
        if (err != cudaSuccess) {
            gr_raise_cuda(module, err, "__dlpack__: ordering the consumer's stream after the array's");
            goto done;
        }
    }
    const gr_dlpack_view view = {exported->ptr, exported->dtype, exported->ndim, exported->shape, exported->device};
    capsule = gr_dlpack_capsule(&view, (PyObject *)exported, req.versioned, req.copy);
done:
    Py_DECREF(exported);
    return capsule;
}

/* ---------------------------------------------------------------- as a value (a 0-d result)

 * A reduction of a device array gives a 0-d DeviceArray (for an input whose library cannot take it back):
 * float(), int(), bool(), complex(), operator.index(), item() and comparisons read its value through the host
 * copy, as NumPy's 0-d arrays answer them -- each waits for the array's stream, and says so by being explicit. */
static PyObject *
host_value_call(PyObject *op, PyObject *(*convert)(PyObject *))
{
    PyObject *host = DeviceArray_get(op, NULL);
    if (!host) return NULL;
    PyObject *value = convert(host);
    Py_DECREF(host);
    return value;
}

static PyObject *
DeviceArray_float(PyObject *op)
{
    return host_value_call(op, PyNumber_Float);
}

static PyObject *
DeviceArray_int(PyObject *op)
{
    return host_value_call(op, PyNumber_Long);
}

static PyObject *
DeviceArray_index(PyObject *op)
{
    return host_value_call(op, PyNumber_Index);
}

static int
DeviceArray_bool(PyObject *op)
{
    PyObject *host = DeviceArray_get(op, NULL);
    if (!host) return -1;
    const int truth = PyObject_IsTrue(host);
    Py_DECREF(host);
    return truth;
}

static PyObject *
ndarray_item(PyObject *host)
{
    return PyObject_CallMethod(host, "item", NULL); /* NumPy's own checks and words */
}

static PyObject *
to_complex(PyObject *host)
{
    return PyObject_CallOneArg((PyObject *)&PyComplex_Type, host);
}

static PyObject *
DeviceArray_item(PyObject *op, PyObject *unused)
{
    return host_value_call(op, ndarray_item);
}

static PyObject *
DeviceArray_complex(PyObject *op, PyObject *unused)
{
    return host_value_call(op, to_complex);
}

static PyObject *
DeviceArray_richcompare(PyObject *op, PyObject *other, int cmp)
{
    PyObject *host = DeviceArray_get(op, NULL);
    if (!host) return NULL;
    PyObject *other_value = Py_TYPE(other) == Py_TYPE(op) ? DeviceArray_get(other, NULL) : Py_NewRef(other);
    PyObject *result = other_value ? PyObject_RichCompare(host, other_value, cmp) : NULL;
    Py_XDECREF(other_value);
    Py_DECREF(host);
    return result;
}

static PyObject *
DeviceArray_dlpack_device(PyObject *op, PyObject *unused)
{
    return Py_BuildValue("(ii)", 2 /* kDLCUDA */, DA(op)->device);
}

/* ---------------------------------------------------------------- the type */

static PyMethodDef DeviceArray_methods[] = {
    {"get", DeviceArray_get, METH_NOARGS,
     "get() -> numpy.ndarray\n\nCopy the values to the host, after the work enqueued on the array's stream."},
    {"__array__", (PyCFunction)(void (*)(void))DeviceArray_array, METH_VARARGS | METH_KEYWORDS,
     "__array__(dtype=None, copy=None) -> numpy.ndarray\n\nA host copy (NumPy protocol); copy=False raises "
     "ValueError since the values must be copied."},
    {"__dlpack__", (PyCFunction)(void (*)(void))DeviceArray_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> PyCapsule\n\nExport without a copy "
     "(unless copy=True) as a DLPack capsule, versioned when max_version >= (1, 0); `stream` (the consumer's) is "
     "ordered after the array's stream."},
    {"__dlpack_device__", DeviceArray_dlpack_device, METH_NOARGS, "__dlpack_device__() -> (2, device): kDLCUDA."},
    {"item", DeviceArray_item, METH_NOARGS,
     "item() -> a Python scalar\n\nThe one element as numpy.ndarray.item() gives it, after the work enqueued on the "
     "array's stream (a 0-d result's value on the host)."},
    {"__complex__", DeviceArray_complex, METH_NOARGS, "complex(a): the value of a one-element array, on the host."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef DeviceArray_getset[] = {
    {"shape", DeviceArray_shape, NULL, "Tuple of array dimensions.", NULL},
    {"dtype", DeviceArray_dtype, NULL, "The numpy.dtype of the elements.", NULL},
    {"size", DeviceArray_size, NULL, "Number of elements.", NULL},
    {"ndim", DeviceArray_ndim, NULL, "Number of dimensions.", NULL},
    {"nbytes", DeviceArray_nbytes, NULL, "Bytes of device memory the elements take.", NULL},
    {"itemsize", DeviceArray_itemsize, NULL, "Bytes per element.", NULL},
    {"device", DeviceArray_device, NULL, "The CUDA device ordinal.", NULL},
    {"__cuda_array_interface__", DeviceArray_cai, NULL,
     "CUDA Array Interface, version 3 (C-contiguous, writable, with the stream the array was produced on).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(DeviceArray_doc,
             "A C-contiguous array in device memory, owned by gpureduce (the result of a reduction or scan of a\n"
             "device array whose library cannot take it back; 0-d for a whole-array reduction).\n\n"
             "It is produced asynchronously on a CUDA stream, which it exports: CuPy, PyTorch and Numba view it\n"
             "without a copy through __cuda_array_interface__ (v3) or DLPack; get() and numpy.asarray() copy it\n"
             "to the host; float(), int(), bool(), item() and comparisons read a one-element array's value there.\n"
             "DeviceArrays are made by gpureduce, not constructed directly.");

#ifndef Py_TPFLAGS_DISALLOW_INSTANTIATION
/* Python < 3.10 lacks the flag, and object's tp_new would be inherited: refuse construction by hand. */
static PyObject *
DeviceArray_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyErr_SetString(PyExc_TypeError, "cannot create 'gpureduce.DeviceArray' instances: gpureduce makes them");
    return NULL;
}
#define Py_TPFLAGS_DISALLOW_INSTANTIATION 0
#define GR_DEVICE_ARRAY_NEW_SLOT {Py_tp_new, DeviceArray_new},
#else
#define GR_DEVICE_ARRAY_NEW_SLOT
#endif
#ifndef Py_TPFLAGS_IMMUTABLETYPE
#define Py_TPFLAGS_IMMUTABLETYPE 0
#endif

static PyType_Slot DeviceArray_slots[] = {
    GR_DEVICE_ARRAY_NEW_SLOT
    {Py_tp_doc, (void *)DeviceArray_doc},
    {Py_tp_dealloc, DeviceArray_dealloc},
    {Py_tp_traverse, DeviceArray_traverse},
    {Py_tp_repr, DeviceArray_repr},
    {Py_tp_methods, DeviceArray_methods},
    {Py_tp_getset, DeviceArray_getset},
    {Py_mp_length, DeviceArray_length},
    {Py_nb_float, DeviceArray_float},
    {Py_nb_int, DeviceArray_int},
    {Py_nb_index, DeviceArray_index},
    {Py_nb_bool, DeviceArray_bool},
    {Py_tp_richcompare, DeviceArray_richcompare},
    {0, NULL},
};

static PyType_Spec DeviceArray_spec = {
    .name = "gpureduce.DeviceArray",
    .basicsize = sizeof(DeviceArrayObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = DeviceArray_slots,
};

PyObject *
gr_device_array_type_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &DeviceArray_spec, NULL);
}
