/* device_array.c -- gpureduce.DeviceArray: a C-contiguous array in device memory that gpureduce owns.
 *
 * Its memory comes from the device's default stream-ordered pool (cudaMallocAsync on the stream the array
 * is produced on) and goes back there (cudaFreeAsync on that same stream) when the array dies, so a result
 * costs no cudaMalloc once the pool is warm.  The array exports that stream through
 * __cuda_array_interface__ v3 and orders a consumer's stream after it in __dlpack__; get() / __array__
 * bring the values home.  The stream must outlive the array, so gpureduce only ever gives its results the
 * device's own stream (exec.c), which lives as long as the module (kept alive by every DeviceArray through
 * its type), and orders that stream after the work that produced them: a caller's temporary stream may
 * be destroyed before the result.
 */
#include "ext.h"

#include "dlpack.h"

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

/* ---------------------------------------------------------------- memory */

static unsigned char g_pool_ready[GR_MAX_DEVICES];

/* Keep freed blocks in the device's default pool instead of handing them back to the driver at every
 * synchronisation (the default threshold, 0, does that): results then cost no allocation once warm. */
static int
prepare_pool(PyObject *module, int device)
{
    if (g_pool_ready[device]) return 0;
    cudaMemPool_t pool;
    cudaError_t err = cudaDeviceGetDefaultMemPool(&pool, device);
    if (err == cudaSuccess) {
        uint64_t threshold = UINT64_MAX;
        err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    }
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "configuring the device's memory pool");
        return -1;
    }
    g_pool_ready[device] = 1;
    return 0;
}

int
gr_device_alloc(PyObject *module, int device, size_t bytes, cudaStream_t stream, void **ptr)
{
    *ptr = NULL;
    if (prepare_pool(module, device) < 0) return -1;
    /* At least one byte: an empty array still gets a valid, non-null pointer, which some consumers want. */
    cudaError_t err = cudaMallocAsync(ptr, bytes ? bytes : 1, stream);
    if (err != cudaSuccess) {
        *ptr = NULL;
        char what[96];
        PyOS_snprintf(what, sizeof(what), "allocating %zu bytes of device memory", bytes);
        gr_raise_cuda(module, err, what);
        return -1;
    }
    return 0;
}

/* Make `device` current for work on an array that need not live on the current device; *previous gets
 * the device to restore with leave_device (-1: nothing to restore).  0, or -1 with CudaError set. */
static int
enter_device(PyObject *module, int device, int *previous)
{
    *previous = -1;
    int current = 0;
    cudaError_t err = cudaGetDevice(&current);
    if (err == cudaSuccess && current != device) {
        err = cudaSetDevice(device);
        if (err == cudaSuccess) *previous = current;
    }
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "selecting the array's device");
        return -1;
    }
    return 0;
}

static void
leave_device(int previous)
{
    /* Going back to a device that was current a moment ago cannot fail short of a dead context, which
     * the next CUDA call reports anyway: clear it here so it is not reported twice. */
    if (previous >= 0 && cudaSetDevice(previous) != cudaSuccess) (void)cudaGetLastError();
}

/* ---------------------------------------------------------------- construction, destruction */

PyObject *
gr_device_array_empty(PyObject *module, int ndim, const int64_t *shape, gr_dtype dtype, int device,
                      cudaStream_t stream)
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
        if (err == cudaSuccess) err = cudaFreeAsync(self->ptr, self->stream);
        if (err != cudaSuccess) write_unraisable_cuda(err, "freeing the memory of a gpureduce.DeviceArray");
        if (current >= 0 && current != self->device && cudaSetDevice(current) != cudaSuccess)
            (void)cudaGetLastError();
        self->ptr = NULL;
    }
    Py_CLEAR(self->descr);
    type->tp_free(op);
    Py_DECREF(type); /* instances of a heap type own a reference to it */
}

static int
DeviceArray_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(DA(op)->descr);
    return 0;
}

/* ---------------------------------------------------------------- attributes */

static PyObject *
shape_tuple(const DeviceArrayObject *self)
{
    PyObject *t = PyTuple_New(self->ndim);
    if (!t) return NULL;
    for (int i = 0; i < self->ndim; i++) {
        PyObject *d = PyLong_FromLongLong(self->shape[i]);
        if (!d) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
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
    Py_INCREF(self->descr);
    PyArrayObject *host = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, self->descr, self->ndim, dims, NULL,
                                                                NULL, 0, NULL); /* steals the descr */
    if (!host) return NULL;

    gr_exec *ex = NULL;
    int previous = -1;
    if (enter_device(module, self->device, &previous) < 0) goto fail;
    ex = gr_exec_acquire(module, self->device);
    if (!ex) goto fail;
    const size_t bytes = nbytes_of(self);
    if (gr_exec_reserve_pinned(module, ex, gr_transfer_pinned_bytes(bytes)) < 0) goto fail;
    cudaError_t err;
    void *dst = PyArray_DATA(host);
    Py_BEGIN_ALLOW_THREADS
    err = gr_download_host(ex, dst, self->ptr, bytes, self->stream);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "copying a DeviceArray to the host");
        goto fail;
    }
    gr_exec_release(ex); /* only its pinned buffer was used, and that is idle again */
    leave_device(previous);
    return (PyObject *)host;

fail:
    gr_exec_release(ex);
    leave_device(previous);
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

/* What a capsule owns: a reference to the exported array (which keeps the memory alive) and the managed
 * tensor with its shape and strides.  Freed by the tensor's deleter, which a consumer may call from any
 * thread, with or without the GIL: hence the raw allocator and PyGILState. */
typedef struct {
    PyObject *array;
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } managed;
    int64_t dims[]; /* shape, then strides (in elements) */
} dlpack_ctx;

static void
dlpack_ctx_free(dlpack_ctx *ctx)
{
    if (Py_IsInitialized()) { /* at exit, after finalisation, the reference is simply dropped */
        PyGILState_STATE gil = PyGILState_Ensure();
        Py_DECREF(ctx->array);
        PyGILState_Release(gil);
    }
    PyMem_RawFree(ctx);
}

static void
legacy_deleter(DLManagedTensor *self)
{
    dlpack_ctx_free((dlpack_ctx *)self->manager_ctx);
}

static void
versioned_deleter(DLManagedTensorVersioned *self)
{
    dlpack_ctx_free((dlpack_ctx *)self->manager_ctx);
}

/* A capsule nobody consumed still owns its tensor; a consumer renames the capsule to "used_..." when it
 * takes the tensor over, and then calls the deleter itself.  PyCapsule_IsValid never raises. */
static void
legacy_capsule_destructor(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, GR_DLPACK_CAPSULE)) return;
    DLManagedTensor *t = PyCapsule_GetPointer(capsule, GR_DLPACK_CAPSULE);
    if (t->deleter) t->deleter(t);
}

static void
versioned_capsule_destructor(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, GR_DLPACK_VERSIONED_CAPSULE)) return;
    DLManagedTensorVersioned *t = PyCapsule_GetPointer(capsule, GR_DLPACK_VERSIONED_CAPSULE);
    if (t->deleter) t->deleter(t);
}

static DLDataType
dlpack_dtype(gr_dtype dt, size_t itemsize)
{
    uint8_t code;
    switch (dt) {
    case GR_BOOL: code = kDLBool; break;
    case GR_INT8: case GR_INT16: case GR_INT32: case GR_INT64: code = kDLInt; break;
    case GR_UINT8: case GR_UINT16: case GR_UINT32: case GR_UINT64: code = kDLUInt; break;
    case GR_FLOAT16: case GR_FLOAT32: case GR_FLOAT64: code = kDLFloat; break;
    case GR_COMPLEX64: case GR_COMPLEX128: code = kDLComplex; break;
    default: code = kDLOpaqueHandle; break; /* unreachable: every gr_dtype is listed */
    }
    return (DLDataType){.code = code, .bits = (uint8_t)(8 * itemsize), .lanes = 1};
}

static PyObject *
dlpack_capsule(DeviceArrayObject *self, int versioned, int copied)
{
    dlpack_ctx *ctx = PyMem_RawCalloc(1, sizeof(dlpack_ctx) + 2 * (size_t)self->ndim * sizeof(int64_t));
    if (!ctx) return PyErr_NoMemory();
    int64_t *shape = ctx->dims, *strides = ctx->dims + self->ndim, stride = 1;
    for (int i = self->ndim - 1; i >= 0; i--) {
        shape[i] = self->shape[i];
        strides[i] = stride;
        stride *= self->shape[i];
    }
    const DLTensor tensor = {
        .data = self->ptr,
        .device = {.device_type = kDLCUDA, .device_id = self->device},
        .ndim = self->ndim,
        .dtype = dlpack_dtype(self->dtype, (size_t)PyDataType_ELSIZE(self->descr)),
        .shape = shape,
        .strides = strides,
        .byte_offset = 0,
    };
    Py_INCREF(self);
    ctx->array = (PyObject *)self;
    PyObject *capsule;
    if (versioned) {
        DLManagedTensorVersioned *m = &ctx->managed.versioned;
        m->version = (DLPackVersion){.major = GR_DLPACK_MAJOR, .minor = GR_DLPACK_MINOR};
        m->manager_ctx = ctx;
        m->deleter = versioned_deleter;
        m->flags = copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
        m->dl_tensor = tensor;
        capsule = PyCapsule_New(m, GR_DLPACK_VERSIONED_CAPSULE, versioned_capsule_destructor);
    }
    else {
        DLManagedTensor *m = &ctx->managed.legacy;
        m->dl_tensor = tensor;
        m->manager_ctx = ctx;
        m->deleter = legacy_deleter;
        capsule = PyCapsule_New(m, GR_DLPACK_CAPSULE, legacy_capsule_destructor);
    }
    if (!capsule) dlpack_ctx_free(ctx);
    return capsule;
}

/* A new DeviceArray holding a copy of `self`, produced on the same stream. */
static PyObject *
device_array_copy(PyObject *module, DeviceArrayObject *self)
{
    int previous;
    if (enter_device(module, self->device, &previous) < 0) return NULL;
    PyObject *copy = gr_device_array_empty(module, self->ndim, self->shape, self->dtype, self->device, self->stream);
    if (copy) {
        cudaError_t err = cudaMemcpyAsync(DA(copy)->ptr, self->ptr, nbytes_of(self), cudaMemcpyDeviceToDevice,
                                          self->stream);
        if (err != cudaSuccess) {
            Py_CLEAR(copy);
            gr_raise_cuda(module, err, "copying a DeviceArray for __dlpack__(copy=True)");
        }
    }
    leave_device(previous);
    return copy;
}

/* The consumer's stream argument of __dlpack__ (CUDA numbering): *sync = 0 for -1 (no ordering wanted). */
static int
parse_consumer_stream(PyObject *stream, cudaStream_t *out, int *sync)
{
    *sync = 1;
    if (stream == Py_None) { /* the protocol: None means the legacy default stream */
        *out = cudaStreamLegacy;
        return 0;
    }
    if (!PyLong_Check(stream)) {
        PyErr_Format(PyExc_TypeError, "__dlpack__: stream must be None or an int, not %.200s",
                     Py_TYPE(stream)->tp_name);
        return -1;
    }
    int overflow;
    const long long s = PyLong_AsLongLongAndOverflow(stream, &overflow);
    if (s == -1 && PyErr_Occurred()) return -1;
    if (overflow == 0 && s == -1) {
        *sync = 0;
        return 0;
    }
    if (overflow < 0 || s == 0 || s < -1) {
        PyErr_Format(PyExc_ValueError,
                     "__dlpack__: stream=%R is not a CUDA stream: pass None or 1 (legacy default stream), 2 "
                     "(per-thread default stream), a stream handle, or -1 for no synchronisation (0 is ambiguous)",
                     stream);
        return -1;
    }
    if (s == 1) *out = cudaStreamLegacy;
    else if (s == 2) *out = cudaStreamPerThread;
    else {
        const unsigned long long handle = PyLong_AsUnsignedLongLong(stream);
        if (handle == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        *out = (cudaStream_t)(uintptr_t)handle;
    }
    return 0;
}

static PyObject *
DeviceArray_dlpack(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                     &copy))
        return NULL;
    DeviceArrayObject *self = DA(op);
    PyObject *module = PyType_GetModule(Py_TYPE(op));
    if (!module) return NULL;

    int versioned = 0;
    if (max_version != Py_None) {
        if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2) {
            PyErr_SetString(PyExc_TypeError, "__dlpack__: max_version must be None or a tuple (major, minor)");
            return NULL;
        }
        const long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
        if (major == -1 && PyErr_Occurred()) return NULL;
        versioned = major >= GR_DLPACK_MAJOR;
    }
    if (dl_device != Py_None) {
        long type = -1, id = -1;
        if (PyTuple_Check(dl_device) && PyTuple_GET_SIZE(dl_device) == 2) {
            type = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 0));
            if (!(type == -1 && PyErr_Occurred())) id = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 1));
            if (PyErr_Occurred()) return NULL;
        }
        if (type != kDLCUDA || id != self->device) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: a DeviceArray on CUDA device %d can only be exported to dl_device=(%d, %d); "
                         "got %R (use .get() for a host copy)",
                         self->device, (int)kDLCUDA, self->device, dl_device);
            return NULL;
        }
    }
    int copied = 0;
    if (copy != Py_None) {
        copied = PyObject_IsTrue(copy);
        if (copied < 0) return NULL;
    }
    cudaStream_t consumer = NULL;
    int sync;
    if (parse_consumer_stream(stream, &consumer, &sync) < 0) return NULL;

    DeviceArrayObject *exported = self;
    if (copied) {
        exported = (DeviceArrayObject *)device_array_copy(module, self);
        if (!exported) return NULL;
    }
    else Py_INCREF(exported);
    PyObject *capsule = NULL;
    if (sync && consumer != self->stream) {
        int previous;
        if (enter_device(module, self->device, &previous) < 0) goto done;
        cudaError_t err = gr_stream_wait(consumer, self->stream);
        leave_device(previous);
        if (err != cudaSuccess) {
            gr_raise_cuda(module, err, "__dlpack__: ordering the consumer's stream after the array's");
            goto done;
        }
    }
    capsule = dlpack_capsule(exported, versioned, copied);
done:
    Py_DECREF(exported);
    return capsule;
}

static PyObject *
DeviceArray_dlpack_device(PyObject *op, PyObject *unused)
{
    return Py_BuildValue("(ii)", (int)kDLCUDA, DA(op)->device);
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
             "A C-contiguous array in device memory, owned by gpureduce (the result of a scan of a device array).\n\n"
             "It is produced asynchronously on a CUDA stream, which it exports: CuPy, PyTorch and Numba view it\n"
             "without a copy through __cuda_array_interface__ (v3) or DLPack; get() and numpy.asarray() copy it\n"
             "to the host.  DeviceArrays are made by gpureduce, not constructed directly.");

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
