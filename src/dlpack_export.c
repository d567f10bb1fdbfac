/* dlpack_export.c -- DLPack export, a leaf: the arguments of __dlpack__ read as the protocol says, and a capsule
 * made for a C-contiguous device array (device_array.c's DeviceArray.__dlpack__ puts the two together), so
 * gpureduce's results go to any DLPack consumer (PyTorch, JAX, CuPy) without a copy. */
#include "ext.h"

#include "dlpack.h"

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
    switch (dt) { /* cuda/abi/dtypes.def's dlpack column */
#define GR_DTYPE(NAME, name, device_type, kind, bytes, numpy, dlpack, ...) \
    case GR_##NAME: code = kDL##dlpack; break;
#include "abi/dtypes.def"
#undef GR_DTYPE
    default: code = kDLOpaqueHandle; break; /* unreachable: every gr_dtype is listed */
    }
    return (DLDataType){.code = code, .bits = (uint8_t)(8 * itemsize), .lanes = 1};
}

PyObject *
gr_dlpack_capsule(const gr_dlpack_view *self, PyObject *owner, int versioned, int copied)
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
        .dtype = dlpack_dtype(self->dtype, gr_dtype_itemsize(self->dtype)),
        .shape = shape,
        .strides = strides,
        .byte_offset = 0,
    };
    Py_INCREF(owner);
    ctx->array = owner;
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

int
gr_dlpack_parse_request(PyObject *args, PyObject *kwargs, int device, gr_dlpack_request *req)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                     &copy))
        return -1;
    req->versioned = 0;
    if (max_version != Py_None) {
        if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2) {
            PyErr_SetString(PyExc_TypeError, "__dlpack__: max_version must be None or a tuple (major, minor)");
            return -1;
        }
        const long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
        if (major == -1 && PyErr_Occurred()) return -1;
        req->versioned = major >= GR_DLPACK_MAJOR;
    }
    if (dl_device != Py_None) {
        long type = -1, id = -1;
        if (PyTuple_Check(dl_device) && PyTuple_GET_SIZE(dl_device) == 2) {
            type = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 0));
            if (!(type == -1 && PyErr_Occurred())) id = PyLong_AsLong(PyTuple_GET_ITEM(dl_device, 1));
            if (PyErr_Occurred()) return -1;
        }
        if (type != kDLCUDA || id != device) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: a DeviceArray on CUDA device %d can only be exported to dl_device=(%d, %d); "
                         "got %R (use .get() for a host copy)",
                         device, (int)kDLCUDA, device, dl_device);
            return -1;
        }
    }
    req->copy = 0;
    if (copy != Py_None && (req->copy = PyObject_IsTrue(copy)) < 0) return -1;
    return parse_consumer_stream(stream, &req->consumer, &req->sync);
}
