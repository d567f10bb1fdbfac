/* dlpack_export.c -- DeviceArray.__dlpack__ / __dlpack_device__: gpureduce's results handed to any DLPack
 * consumer (PyTorch, JAX, CuPy, NumPy refuses device memory) without a copy, the consumer's stream ordered
 * after the array's. */
#include "ext.h"

#include "dlpack.h"

/* What the export reads of a DeviceArray. */
typedef struct {
    void *ptr;
    gr_dtype dtype;
    int ndim;
    const int64_t *shape;
    int device;
    cudaStream_t stream;
} da_info;

static da_info
describe(PyObject *array)
{
    da_info d;
    gr_device_array_describe(array, &d.dtype, &d.ndim, &d.shape, &d.device, &d.stream);
    d.ptr = gr_device_array_data(array);
    return d;
}

static size_t
nbytes(const da_info *d)
{
    size_t n = gr_dtype_itemsize(d->dtype);
    for (int i = 0; i < d->ndim; i++) n *= (size_t)d->shape[i];
    return n;
}

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
dlpack_capsule(PyObject *array, int versioned, int copied)
{
    const da_info d = describe(array), *self = &d;
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
        .dtype = dlpack_dtype(self->dtype, gr_dtype_itemsize(self->dtype)),
        .shape = shape,
        .strides = strides,
        .byte_offset = 0,
    };
    Py_INCREF(array);
    ctx->array = array;
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
device_array_copy(PyObject *module, PyObject *array)
{
    const da_info d = describe(array), *self = &d;
    int previous;
    if (gr_enter_device(module, self->device, &previous) < 0) return NULL;
    PyObject *copy = gr_device_array_empty(module, self->ndim, self->shape, self->dtype, self->device, self->stream);
    if (copy) {
        cudaError_t err = cudaMemcpyAsync(gr_device_array_data(copy), self->ptr, nbytes(self), cudaMemcpyDeviceToDevice,
                                          self->stream);
        if (err != cudaSuccess) {
            Py_CLEAR(copy);
            gr_raise_cuda(module, err, "copying a DeviceArray for __dlpack__(copy=True)");
        }
    }
    gr_leave_device(previous);
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

PyObject *
gr_device_array_dlpack(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                     &copy))
        return NULL;
    const da_info d = describe(op), *self = &d;
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

    PyObject *exported = op;
    if (copied) {
        exported = device_array_copy(module, op);
        if (!exported) return NULL;
    }
    else Py_INCREF(exported);
    PyObject *capsule = NULL;
    if (sync && consumer != self->stream) {
        int previous;
        if (gr_enter_device(module, self->device, &previous) < 0) goto done;
        gr_exec *ex = gr_exec_acquire(module, self->device);
        cudaError_t err = ex ? gr_stream_wait(ex, consumer, self->stream) : cudaSuccess;
        gr_exec_release(ex);
        gr_leave_device(previous);
        if (!ex) goto done;
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

PyObject *
gr_device_array_dlpack_device(PyObject *op, PyObject *unused)
{
    return Py_BuildValue("(ii)", (int)kDLCUDA, describe(op).device);
}
