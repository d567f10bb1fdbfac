/* operand.c -- the one intake: any array a call is given (the input, where=, out=) becomes a gr_operand,
 * held by a _core.Operand object that keeps its memory alive.  Nothing here touches the device, so argument
 * errors come first, also on a machine without a GPU.
 *
 * What is accepted, first match wins:
 *   a gpureduce.DeviceArray                      read directly (its dtype, shape, device and stream)
 *   a NumPy array                                host; made aligned and native-endian (a copy only then)
 *   DLPack (__dlpack__ + __dlpack_device__)      CUDA or managed memory read in place; a CPU tensor is read as a
 *                                                host array through numpy.from_dlpack
 *   __cuda_array_interface__ v2 / v3             device memory read in place, on the stream it names
 *   anything numpy.asarray takes                 host
 *
 * DLPack is preferred over the CUDA Array Interface when an object has both: it says which device the memory
 * is on, and its stream handshake lets the producer order its work before ours.  We pass stream=1 (the legacy
 * default stream) and run there.  PyTorch tensors take a faster way to the same DLPack tensor (intake_torch) and
 * run on PyTorch's current stream; CuPy arrays are read from their own attributes (intake_cupy: what DLPack would
 * say, without its calls into CuPy) and run on CuPy's current stream.
 */
#include "ext.h"

#include "dlpack.h"

#include <string.h>

static const char kAccepted[] = "expected a NumPy array, a sequence of numbers, or a device array exporting "
                                "__cuda_array_interface__ or DLPack";

/* ---------------------------------------------------------------- the Operand object */

typedef struct {
    PyObject_HEAD
    gr_operand op;
    PyObject *obj;        /* what the caller passed */
    PyObject *keep;       /* keeps the memory alive: the host ndarray, the device object, or the base Operand */
    PyObject *stream_owner; /* keeps op.stream alive where its library may destroy it (a CuPy Stream) */
    void *dl_managed;     /* a consumed DLPack tensor, deleted with the operand */
    int dl_versioned;
    PyObject *shape_t, *strides_t; /* built on first access */
} OperandObject;

#define OP(o) ((OperandObject *)(o))

static void
delete_dlpack(void *managed, int versioned)
{
    if (!managed) return;
    if (versioned) {
        DLManagedTensorVersioned *m = managed;
        if (m->deleter) m->deleter(m);
    }
    else {
        DLManagedTensor *m = managed;
        if (m->deleter) m->deleter(m);
    }
}

static void
Operand_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    delete_dlpack(OP(self)->dl_managed, OP(self)->dl_versioned);
    OP(self)->dl_managed = NULL;
    Py_CLEAR(OP(self)->obj);
    Py_CLEAR(OP(self)->keep);
    Py_CLEAR(OP(self)->stream_owner);
    Py_CLEAR(OP(self)->shape_t);
    Py_CLEAR(OP(self)->strides_t);
    type->tp_free(self);
    Py_DECREF(type);
}

static int
Operand_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(OP(self)->obj);
    Py_VISIT(OP(self)->keep);
    Py_VISIT(OP(self)->stream_owner);
    return 0;
}

static OperandObject *
operand_new(PyObject *module, PyObject *obj)
{
    PyTypeObject *type = (PyTypeObject *)gr_state(module)->OperandType;
    OperandObject *self = (OperandObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    Py_INCREF(obj);
    self->obj = obj;
    self->op.device = -1;
    return self;
}

static PyObject *
Operand_shape(PyObject *self, void *closure)
{
    if (!OP(self)->shape_t) OP(self)->shape_t = gr_int64_tuple(OP(self)->op.shape, OP(self)->op.ndim);
    Py_XINCREF(OP(self)->shape_t);
    return OP(self)->shape_t;
}

static PyObject *
Operand_strides(PyObject *self, void *closure)
{
    if (!OP(self)->strides_t) OP(self)->strides_t = gr_int64_tuple(OP(self)->op.strides, OP(self)->op.ndim);
    Py_XINCREF(OP(self)->strides_t);
    return OP(self)->strides_t;
}

static PyObject *
Operand_dtype(PyObject *self, void *closure)
{
    PyArray_Descr *d = gr_dtype_descr(OP(self)->op.dtype);
    Py_XINCREF(d);
    return (PyObject *)d;
}

static PyObject *
Operand_code(PyObject *self, void *closure)
{
    return PyLong_FromLong((long)OP(self)->op.dtype);
}

static PyObject *
Operand_host(PyObject *self, void *closure)
{
    return PyBool_FromLong(OP(self)->op.is_host);
}

/* The planner's cache key of an operand's layout: dtype, host or device, shape and strides as one bytes object
 * (one allocation, hashed at once), where a tuple of the shape and strides tuples costs two more. */
PyObject *
gr_operand_layout_key(const gr_operand *o)
{
    int64_t key[3 + 2 * GR_MAX_NDIM];
    key[0] = o->dtype;
    key[1] = o->is_host;
    key[2] = o->ndim;
    memcpy(key + 3, o->shape, sizeof(int64_t) * (size_t)o->ndim);
    memcpy(key + 3 + o->ndim, o->strides, sizeof(int64_t) * (size_t)o->ndim);
    return PyBytes_FromStringAndSize((const char *)key, (Py_ssize_t)(sizeof(int64_t) * (size_t)(3 + 2 * o->ndim)));
}

static PyObject *
Operand_layout_key(PyObject *self, void *closure)
{
    return gr_operand_layout_key(&OP(self)->op);
}

static PyObject *
Operand_readonly(PyObject *self, void *closure)
{
    return PyBool_FromLong(OP(self)->op.readonly);
}

static PyObject *
Operand_size(PyObject *self, void *closure)
{
    return PyLong_FromLongLong(OP(self)->op.size);
}

static PyObject *
Operand_obj(PyObject *self, void *closure)
{
    Py_INCREF(OP(self)->obj);
    return OP(self)->obj;
}

static PyObject *
Operand_array(PyObject *self, void *closure)
{
    /* The host ndarray the operand reads (aligned, native); None for device memory. */
    if (!OP(self)->op.is_host) Py_RETURN_NONE;
    PyObject *k = OP(self)->keep;
    while (k && !PyArray_Check(k) && Py_TYPE(k) == Py_TYPE(self)) k = OP(k)->keep;
    if (!k || !PyArray_Check(k)) Py_RETURN_NONE;
    /* a view's shape and strides may differ from the array's own: give exactly what the operand reads */
    const gr_operand *o = &OP(self)->op;
    npy_intp dims[GR_MAX_NDIM], strides[GR_MAX_NDIM];
    const npy_intp itemsize = (npy_intp)gr_dtype_itemsize(o->dtype);
    for (int i = 0; i < o->ndim; i++) {
        dims[i] = (npy_intp)o->shape[i];
        strides[i] = (npy_intp)o->strides[i] * itemsize;
    }
    PyArray_Descr *d = gr_dtype_descr(o->dtype);
    Py_INCREF(d);
    const int flags = o->readonly ? 0 : NPY_ARRAY_WRITEABLE;
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, d, o->ndim, dims, strides, o->ptr, flags, NULL);
    if (!view) return NULL;
    Py_INCREF(k);
    if (PyArray_SetBaseObject((PyArrayObject *)view, k) < 0) { /* steals k */
        Py_DECREF(view);
        return NULL;
    }
    return view;
}

PyObject *
gr_operand_stream_owner(PyObject *operand)
{
    return OP(operand)->stream_owner;
}

PyObject *
gr_operand_host_array(PyObject *operand)
{
    return Operand_array(operand, NULL);
}

static const char *const kProtocolNames[] = {
    [GR_FROM_NUMPY] = "numpy", [GR_FROM_CAI] = "cuda_array_interface", [GR_FROM_DLPACK] = "dlpack",
    [GR_FROM_GPUREDUCE] = "gpureduce", [GR_FROM_CUPY] = "cupy"};

static PyObject *
Operand_protocol(PyObject *self, void *closure)
{
    return PyUnicode_FromString(kProtocolNames[OP(self)->op.protocol]);
}

static int
read_int64s(PyObject *seq, int64_t *out, int n, const char *what)
{
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "Operand.view(): %s must be a tuple of %d ints", what, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* view(shape, strides) -> Operand: the same memory seen with another shape and element strides (a broadcast
 * mask, the flattened input of a scan).  The caller (gpureduce/_planning/plan.py) keeps it within the memory. */
static PyObject *
Operand_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "Operand.view(shape, strides) takes two tuples of ints");
        return NULL;
    }
    const Py_ssize_t ndim = PyTuple_GET_SIZE(args[0]);
    if (ndim > GR_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "Operand.view(): at most %d dimensions", GR_MAX_NDIM);
        return NULL;
    }
    PyObject *module = PyType_GetModule(Py_TYPE(self));
    if (!module) return NULL;
    OperandObject *v = operand_new(module, OP(self)->obj);
    if (!v) return NULL;
    v->op = OP(self)->op;
    v->op.ndim = (int)ndim;
    Py_XINCREF(OP(self)->stream_owner);
    v->stream_owner = OP(self)->stream_owner;
    if (read_int64s(args[0], v->op.shape, (int)ndim, "shape") < 0 ||
        read_int64s(args[1], v->op.strides, (int)ndim, "strides") < 0) {
        Py_DECREF(v);
        return NULL;
    }
    v->op.size = 1;
    for (int i = 0; i < ndim; i++) v->op.size *= v->op.shape[i];
    Py_INCREF(self);
    v->keep = self;
    return (PyObject *)v;
}

PyObject *
gr_operand_result_like(PyObject *operand, PyObject *obj, void *ptr, gr_dtype dtype, int ndim, const int64_t *shape)
{
    const gr_operand *in = &OP(operand)->op;
    PyObject *module = PyType_GetModule(Py_TYPE(operand));
    if (!module) return NULL;
    /* the library's stream unknown here, or an empty input (never checked against the device): the intake reads it */
    if (in->is_host || in->origin != GR_STREAM_CALLER || in->size == 0) return gr_intake(module, obj, "out=");
    OperandObject *r = operand_new(module, obj);
    if (!r) return NULL;
    r->op = (gr_operand){.ptr = ptr, .dtype = dtype, .ndim = ndim, .device = in->device,
                         .has_stream = in->has_stream, .stream = in->stream, .origin = in->origin,
                         .protocol = in->protocol};
    int64_t step = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        r->op.shape[i] = shape[i];
        r->op.strides[i] = step;
        step *= shape[i];
    }
    r->op.size = step;
    r->stream_owner = Py_XNewRef(OP(operand)->stream_owner);
    r->keep = Py_NewRef(obj);
    return (PyObject *)r;
}

/* result_like(obj, pointer, dtype, shape) -> Operand: gr_operand_result_like (ext.h) from Python. */
static PyObject *
Operand_result_like(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyTuple_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "Operand.result_like(obj, pointer, dtype, shape) takes a tuple shape");
        return NULL;
    }
    const Py_ssize_t ndim = PyTuple_GET_SIZE(args[3]);
    const long dtype = PyLong_AsLong(args[2]);
    void *ptr = PyLong_AsVoidPtr(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (ndim > GR_MAX_NDIM || dtype < 0 || dtype >= GR_DTYPE_COUNT) {
        PyErr_SetString(PyExc_ValueError, "Operand.result_like(): a shape of at most 64 dimensions, a dtype code");
        return NULL;
    }
    int64_t shape[GR_MAX_NDIM];
    if (read_int64s(args[3], shape, (int)ndim, "shape") < 0) return NULL;
    return gr_operand_result_like(self, args[0], ptr, (gr_dtype)dtype, (int)ndim, shape);
}

PyObject *
gr_operand_view(PyObject *operand, PyObject *shape, PyObject *strides)
{
    PyObject *args[2] = {shape, strides};
    return Operand_view(operand, args, 2);
}

const gr_operand *
gr_operand_read(PyObject *operand)
{
    return &OP(operand)->op;
}

static PyMethodDef Operand_methods[] = {
    {"view", (PyCFunction)(void (*)(void))Operand_view, METH_FASTCALL,
     "view(shape, strides) -> Operand: the same memory with another shape and element strides."},
    {"result_like", (PyCFunction)(void (*)(void))Operand_result_like, METH_FASTCALL,
     "result_like(obj, pointer, dtype, shape) -> Operand: the out= operand of a C-ordered array its library just\n"
     "allocated on the input's stream, read without a handshake where the input came on the caller's current\n"
     "stream and holds elements, else by the intake."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Operand_getset[] = {
    {"obj", Operand_obj, NULL, "The object the caller passed.", NULL},
    {"array", Operand_array, NULL, "The host ndarray read (aligned, native byte order); None on the device.", NULL},
    {"dtype", Operand_dtype, NULL, "The numpy.dtype of the elements.", NULL},
    {"code", Operand_code, NULL, "The gr_dtype code of the elements.", NULL},
    {"shape", Operand_shape, NULL, "Tuple of dimensions.", NULL},
    {"strides", Operand_strides, NULL, "Tuple of strides, in elements.", NULL},
    {"size", Operand_size, NULL, "Number of elements.", NULL},
    {"host", Operand_host, NULL, "True for host memory (a NumPy array).", NULL},
    {"layout_key", Operand_layout_key, NULL,
     "bytes naming the dtype, host or device, shape and strides: the planner's cache key of the layout.", NULL},
    {"readonly", Operand_readonly, NULL, "True when the memory must not be written.", NULL},
    {"protocol", Operand_protocol, NULL,
     "How it was read: 'numpy', 'cuda_array_interface', 'dlpack' or 'gpureduce'.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Operand_slots[] = {
    {Py_tp_doc, (void *)"An array operand read by gpureduce's intake (_core.intake); made by gpureduce only."},
    {Py_tp_dealloc, Operand_dealloc},
    {Py_tp_traverse, Operand_traverse},
    {Py_tp_methods, Operand_methods},
    {Py_tp_getset, Operand_getset},
    {0, NULL},
};

#ifndef Py_TPFLAGS_DISALLOW_INSTANTIATION
#define Py_TPFLAGS_DISALLOW_INSTANTIATION 0
#endif

static PyType_Spec Operand_spec = {
    .name = "gpureduce._core.Operand",
    .basicsize = sizeof(OperandObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Operand_slots,
};

PyObject *
gr_operand_type_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &Operand_spec, NULL);
}

const gr_operand *
gr_operand_of(PyObject *module, PyObject *obj, const char *role)
{
    if (Py_TYPE(obj) != (PyTypeObject *)gr_state(module)->OperandType) {
        PyErr_Format(PyExc_TypeError, "%s of a plan must be a _core.Operand (from _core.intake), not %.200s", role,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return &OP(obj)->op;
}

/* ---------------------------------------------------------------- shared checks */

/* "" for the input, " of out=" for the others: the CUDA Array Interface messages name whose it is. */
static const char *
of_role(const char *role)
{
    static char buf[4][48];
    if (!strcmp(role, "the input")) return "";
    static int next = 0;
    char *b = buf[next++ & 3];
    PyOS_snprintf(b, sizeof(buf[0]), " of %s", role);
    return b;
}

static int
set_layout(gr_operand *o, int ndim, const int64_t *shape, const int64_t *byte_strides, int64_t itemsize,
           const char *role)
{
    if (ndim > GR_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s has %d dimensions; gpureduce handles at most %d", role, ndim, GR_MAX_NDIM);
        return -1;
    }
    o->ndim = ndim;
    o->size = 1;
    int overflow = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative extent %lld in dimension %d of its shape", role,
                         (long long)shape[i], i);
            return -1;
        }
        o->shape[i] = shape[i];
        overflow |= __builtin_mul_overflow(o->size, shape[i], &o->size);
    }
    /* Every byte offset the operand reaches must fit in 64 bits (a lying producer can claim any shape). */
    int64_t reach = itemsize;
    for (int i = 0; i < ndim && o->size > 0; i++) {
        int64_t r;
        if (byte_strides[i] == INT64_MIN) {
            overflow = 1;
            break;
        }
        const int64_t s = byte_strides[i] < 0 ? -byte_strides[i] : byte_strides[i];
        overflow |= __builtin_mul_overflow(shape[i] - 1, s, &r) || __builtin_add_overflow(reach, r, &reach);
    }
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s: its shape and strides reach beyond 2**63 bytes", role);
        return -1;
    }
    for (int i = 0; i < ndim; i++) {
        if (byte_strides[i] % itemsize) {
            PyErr_Format(PyExc_ValueError,
                         "%s: device array strides must be multiples of the %lld-byte element size; got %lld in "
                         "dimension %d",
                         role, (long long)itemsize, (long long)byte_strides[i], i);
            return -1;
        }
        o->strides[i] = byte_strides[i] / itemsize;
    }
    return 0;
}

static void
c_byte_strides(int ndim, const int64_t *shape, int64_t itemsize, int64_t *strides)
{
    int64_t step = itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = step;
        step *= shape[i];
    }
}

static int
check_alignment(const char *role, unsigned long long ptr, int64_t itemsize)
{
    if (ptr % (unsigned long long)itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: device pointer 0x%llx is not aligned to its %lld-byte element size", role,
                     ptr, (long long)itemsize);
        return -1;
    }
    return 0;
}

static const char *
type_name(PyObject *obj, char *buf, size_t size)
{
    /* builtins by their bare name ("list"), others with their module ("numpy.ndarray", "cupy.ndarray") */
    PyTypeObject *t = Py_TYPE(obj);
    PyObject *mod = PyObject_GetAttrString((PyObject *)t, "__module__");
    const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    const char *dot = strrchr(t->tp_name, '.');
    const char *bare = dot ? dot + 1 : t->tp_name;
    if (m && strcmp(m, "builtins")) PyOS_snprintf(buf, size, "%s.%s", m, bare);
    else PyOS_snprintf(buf, size, "%s", bare);
    Py_XDECREF(mod);
    PyErr_Clear();
    return buf;
}

/* ---------------------------------------------------------------- host arrays */

static int
intake_host(PyObject *obj, const char *role, OperandObject *self)
{
    char tname[200];
    PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (!arr) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: %s; got %s", role, kAccepted, type_name(obj, tname, sizeof(tname)));
        }
        return -1;
    }
    PyArray_Descr *descr = PyArray_DESCR(arr);
    const int dt = gr_dtype_from_descr(descr);
    if (dt < 0) {
        PyObject *s = PyObject_Str((PyObject *)descr); /* '<U3', 'object', 'datetime64[D]', ... */
        const char *name = s ? PyUnicode_AsUTF8(s) : NULL;
        if (name) {
            char where[300], hint[160];
            PyOS_snprintf(where, sizeof(where), " in %s, a %s", role, type_name(obj, tname, sizeof(tname)));
            PyOS_snprintf(hint, sizeof(hint), " (%s)", kAccepted);
            gr_unsupported_dtype(name, descr, where, hint);
        }
        Py_XDECREF(s);
        Py_DECREF(arr);
        return -1;
    }
    const int64_t itemsize = (int64_t)gr_dtype_itemsize((gr_dtype)dt);
    /* Keep a view's layout (the kernels read strides), unless it is unaligned, byte-swapped, or so sparse that
     * uploading the bytes it spans would move more than twice its elements: then one C-ordered copy. */
    int copy = !PyArray_ISALIGNED(arr) || !PyArray_ISNOTSWAPPED(arr);
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < PyArray_NDIM(arr) && !copy; i++) {
        const int64_t stride = PyArray_STRIDE(arr, i), extent = (PyArray_DIM(arr, i) - 1) * stride;
        if (stride % itemsize) copy = 1;
        if (PyArray_DIM(arr, i) == 0) break;
        if (extent < 0) lo += extent;
        else hi += extent;
    }
    if (!copy && PyArray_SIZE(arr) > 0 && hi - lo + itemsize > 2 * (int64_t)PyArray_NBYTES(arr) + 4096) copy = 1;
    if (copy) {
        PyArray_Descr *native = gr_dtype_descr((gr_dtype)dt);
        Py_INCREF(native);
        PyArrayObject *c = (PyArrayObject *)PyArray_FromArray(arr, native, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_ENSURECOPY);
        Py_DECREF(arr);
        if (!c) return -1;
        arr = c;
    }
    int64_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    for (int i = 0; i < PyArray_NDIM(arr); i++) {
        shape[i] = PyArray_DIM(arr, i);
        strides[i] = PyArray_STRIDE(arr, i);
    }
    gr_operand *o = &self->op;
    if (set_layout(o, PyArray_NDIM(arr), shape, strides, itemsize, role) < 0) {
        Py_DECREF(arr);
        return -1;
    }
    o->ptr = PyArray_DATA(arr);
    o->dtype = (gr_dtype)dt;
    o->is_host = 1;
    o->readonly = !PyArray_ISWRITEABLE(arr);
    o->device = -1;
    o->protocol = GR_FROM_NUMPY;
    self->keep = (PyObject *)arr;
    return 0;
}

/* ---------------------------------------------------------------- gpureduce.DeviceArray */

static int
intake_device_array(PyObject *obj, OperandObject *self)
{
    gr_operand *o = &self->op;
    int ndim;
    const int64_t *shape;
    gr_device_array_describe(obj, &o->dtype, &ndim, &shape, &o->device, &o->stream);
    int64_t strides[GR_MAX_NDIM];
    const int64_t itemsize = (int64_t)gr_dtype_itemsize(o->dtype);
    c_byte_strides(ndim, shape, itemsize, strides);
    if (set_layout(o, ndim, shape, strides, itemsize, "the input") < 0) return -1;
    o->ptr = gr_device_array_data(obj);
    o->has_stream = 1;
    o->origin = GR_STREAM_OWN;
    o->protocol = GR_FROM_GPUREDUCE;
    Py_INCREF(obj);
    self->keep = obj;
    Py_XINCREF(gr_device_array_stream_owner(obj));
    self->stream_owner = gr_device_array_stream_owner(obj);
    return 0;
}

/* ---------------------------------------------------------------- __cuda_array_interface__ */

static int
cai_error(const char *role, const char *msg)
{
    PyErr_Format(PyExc_ValueError, "malformed __cuda_array_interface__%s: %s", of_role(role), msg);
    return -1;
}

static int
parse_typestr(PyObject *typestr, const char *role, int *dt_out)
{
    const char *of = of_role(role);
    if (!PyUnicode_Check(typestr)) {
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__%s['typestr'] %R is not a valid type string", of,
                     typestr);
        return -1;
    }
    Py_ssize_t length = 0;
    const char *s = PyUnicode_AsUTF8AndSize(typestr, &length);
    if (!s) return -1;
    if ((size_t)length != strlen(s) || length < 3 || !strchr("<>|=", s[0])) { /* an embedded NUL is no typestr */
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__%s['typestr'] %R is not a valid type string", of,
                     typestr);
        return -1;
    }
    if (s[0] == '>') {
        PyErr_Format(PyExc_ValueError,
                     "__cuda_array_interface__%s['typestr'] %R is big-endian; device arrays must be little-endian",
                     of, typestr);
        return -1;
    }
    PyArray_Descr *descr = NULL;
    PyObject *native = PyUnicode_FromFormat("=%s", s + 1); /* NumPy reads the kind and size: '<f4', '|b1' */
    if (!native) return -1;
    const int ok = PyArray_DescrConverter(native, &descr);
    Py_DECREF(native);
    if (!ok) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__%s['typestr'] %R is not a valid type string", of,
                     typestr);
        return -1;
    }
    const int dt = gr_dtype_from_descr(descr);
    if (dt < 0) {
        char where[64];
        PyOS_snprintf(where, sizeof(where), " in %s", role);
        gr_unsupported_dtype(s, descr, where, NULL);
    }
    Py_DECREF(descr);
    if (dt < 0) return -1;
    *dt_out = dt;
    return 0;
}

/* A stream number of the CUDA Array Interface or DLPack: 1 legacy default, 2 per-thread default, else a handle. */
static cudaStream_t
stream_from_number(unsigned long long s)
{
    return s == 1 ? cudaStreamLegacy : s == 2 ? cudaStreamPerThread : (cudaStream_t)(uintptr_t)s;
}

static int
intake_cai(PyObject *obj, PyObject *cai, const char *role, OperandObject *self)
{
    gr_operand *o = &self->op;
    if (!PyDict_Check(cai)) {
        PyErr_Format(PyExc_TypeError, "__cuda_array_interface__ of %.200s (%s) must be a dict, not %.200s",
                     Py_TYPE(obj)->tp_name, role, Py_TYPE(cai)->tp_name);
        return -1;
    }
    static const char *required[] = {"shape", "typestr", "data", "version"};
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!PyDict_GetItemString(cai, required[i])) {
            char msg[160];
            PyOS_snprintf(msg, sizeof(msg),
                          "the required key '%s' is missing ('shape', 'typestr', 'data' and 'version' are required)",
                          required[i]);
            return cai_error(role, msg);
        }
    }
    const long version = PyLong_AsLong(PyDict_GetItemString(cai, "version"));
    if (version == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return cai_error(role, "'version' must be an int");
    }
    if (version != 2 && version != 3) {
        PyErr_Format(PyExc_ValueError, "unsupported __cuda_array_interface__ version %ld%s: supported versions are 2 and 3",
                     version, of_role(role));
        return -1;
    }
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    if (mask && mask != Py_None) {
        PyErr_Format(PyExc_ValueError, "%s is a masked device array (__cuda_array_interface__['mask']); masks are not "
                     "supported", role);
        return -1;
    }
    int dt;
    if (parse_typestr(PyDict_GetItemString(cai, "typestr"), role, &dt) < 0) return -1;
    const int64_t itemsize = (int64_t)gr_dtype_itemsize((gr_dtype)dt);

    PyObject *shape = PyDict_GetItemString(cai, "shape");
    if (!PyTuple_Check(shape)) return cai_error(role, "'shape' must be a tuple of ints");
    const Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > GR_MAX_NDIM) return cai_error(role, "too many dimensions");
    int64_t dims[GR_MAX_NDIM], strides[GR_MAX_NDIM], n = 1;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        const long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if ((d == -1 && PyErr_Occurred()) || d < 0) {
            PyErr_Clear();
            return cai_error(role, "'shape' must be a tuple of non-negative ints");
        }
        dims[i] = d;
        n *= d;
    }
    PyObject *data = PyDict_GetItemString(cai, "data");
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return cai_error(role, "'data' must be a tuple (pointer, readonly)");
    const unsigned long long ptr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (ptr == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return cai_error(role, "'data'[0] must be the device pointer as a non-negative int");
    }
    if (ptr == 0 && n > 0) return cai_error(role, "'data' holds a null pointer for a non-empty array");
    const int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (readonly < 0) return -1;

    PyObject *st = PyDict_GetItemString(cai, "strides");
    if (st && st != Py_None) {
        if (!PyTuple_Check(st) || PyTuple_GET_SIZE(st) != ndim)
            return cai_error(role, "'strides' must be None or a tuple with one int per dimension");
        for (Py_ssize_t i = 0; i < ndim; i++) {
            const long long s = PyLong_AsLongLong(PyTuple_GET_ITEM(st, i));
            if (s == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return cai_error(role, "'strides' must hold ints");
            }
            strides[i] = s;
        }
    }
    else {
        c_byte_strides((int)ndim, dims, itemsize, strides);
    }
    if (set_layout(o, (int)ndim, dims, strides, itemsize, role) < 0) return -1;

    PyObject *stream = PyDict_GetItemString(cai, "stream");
    if (version >= 3 && stream && stream != Py_None) {
        const unsigned long long s = PyLong_AsUnsignedLongLong(stream);
        if (s == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return cai_error(role, "'stream' must be None or a positive int");
        }
        if (s == 0)
            return cai_error(role, "'stream' is 0, which the protocol forbids (it is ambiguous); use 1 for the legacy "
                                   "default stream or 2 for the per-thread default stream");
        o->has_stream = 1;
        o->stream = stream_from_number(s);
        o->origin = GR_STREAM_PRODUCER;
    }
    if (check_alignment(role, ptr, itemsize) < 0) return -1;
    o->ptr = (void *)(uintptr_t)ptr;
    o->dtype = (gr_dtype)dt;
    o->readonly = readonly;
    o->device = -1; /* asked of CUDA when the work runs (gr_check_operand_device) */
    o->protocol = GR_FROM_CAI;
    Py_INCREF(obj);
    self->keep = obj;
    return 0;
}

/* ---------------------------------------------------------------- raising with a cause */

/* The exception being raised, taken out of the error indicator (normalised); NULL if none. */
static PyObject *
take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb) PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* Set `exc` (stolen; a normalised exception or NULL) as the exception being raised. */
static void
restore_exception(PyObject *exc)
{
    if (!exc) return;
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore((PyObject *)Py_NewRef(Py_TYPE(exc)), exc, NULL);
#endif
}

/* Raise `type` with the formatted message (which may use %S of the cause) and `cause` as __cause__ (stolen). */
static int
raise_with_cause(PyObject *cause, PyObject *type, const char *message)
{
    PyErr_SetString(type, message);
    PyObject *now = take_exception();
    if (now && cause) PyException_SetCause(now, cause); /* steals cause */
    else Py_XDECREF(cause);
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(now);
#else
    if (now) PyErr_Restore((PyObject *)Py_NewRef(Py_TYPE(now)), now, NULL);
#endif
    return -1;
}

/* "<role>: <what> of <type> raised <cause>" as a TypeError chained to the exception being raised. */
static int
reraise(const char *role, const char *what, PyObject *obj)
{
    /* Ctrl-C, SystemExit, MemoryError and the like inside the producer's method are not its answer: as is */
    if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError)) return -1;
    PyObject *cause = take_exception();
    PyObject *text = PyUnicode_FromFormat("%s: %s of %.200s raised %R", role, what, Py_TYPE(obj)->tp_name,
                                          cause ? cause : Py_None);
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    const int rc = raise_with_cause(cause, PyExc_TypeError, msg ? msg : what);
    Py_XDECREF(text);
    return rc;
}

/* ---------------------------------------------------------------- DLPack */

static int
dlpack_dtype(DLDataType t, int *dt)
{
    if (t.lanes != 1) return -1;
    static const struct {
        uint8_t code, bits;
        gr_dtype dt;
    } map[] = { /* cuda/abi/dtypes.def: each dtype's DLPack code, of 8 * bytes bits */
#define GR_DTYPE(NAME, name, device_type, kind, bytes, numpy, dlpack, ...) {kDL##dlpack, 8 * (bytes), GR_##NAME},
#include "abi/dtypes.def"
#undef GR_DTYPE
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].code == t.code && map[i].bits == t.bits) return *dt = map[i].dt, 0;
    return -1;
}

/* (device_type, device_id) from __dlpack_device__(); -1 with an exception naming it. */
static int
dlpack_device(PyObject *obj, const char *role, int *type, int *id)
{
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev) return reraise(role, "__dlpack_device__()", obj);
    int ok = PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2;
    if (ok) {
        const long t = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0)), i = PyLong_AsLong(PyTuple_GET_ITEM(dev, 1));
        *type = (int)t;
        *id = (int)i;
        if (PyErr_Occurred() || t != *type || i != *id || i < 0) {
            PyErr_Clear();
            ok = 0;
        }
    }
    if (!ok)
        PyErr_Format(PyExc_TypeError, "%s: __dlpack_device__() of %.200s must return a tuple (device_type, device_id) "
                     "of ints, not %R", role, Py_TYPE(obj)->tp_name, dev);
    Py_DECREF(dev);
    return ok ? 0 : -1;
}

/* Producers that refuse max_version= (DLPack < 1.0): asked without it from then on.  A set of types, made at
 * module exec (gr_operand_init) so no call finds it half made. */
static PyObject *g_unversioned_types;
/* The protocol's names, interned once (a lookup per call would allocate; one made lazily could be left half made
 * by a MemoryError, and the next call would look a NULL name up). */
static PyObject *g_dlpack_name, *g_dlpack_device_name, *g_cai_name;
/* A call's stream= (gpureduce/_streams.py sets it around the call): unset, or the stream's handle as an int. */
static PyObject *g_call_stream;

PyObject *
gr_call_stream_var(void)
{
    return g_call_stream;
}

int
gr_operand_init(void)
{
    if (!g_call_stream && !(g_call_stream = PyContextVar_New("gpureduce_call_stream", NULL))) return -1;
    if (!g_dlpack_name && !(g_dlpack_name = PyUnicode_InternFromString("__dlpack__"))) return -1;
    if (!g_dlpack_device_name && !(g_dlpack_device_name = PyUnicode_InternFromString("__dlpack_device__")))
        return -1;
    if (!g_cai_name && !(g_cai_name = PyUnicode_InternFromString("__cuda_array_interface__"))) return -1;
    if (!g_unversioned_types && !(g_unversioned_types = PySet_New(NULL))) return -1;
    return 0;
}

/* obj.__dlpack__(stream=<stream>, max_version=(1, x)), or without max_version for a producer that refuses it.
 * A TypeError marks the producer's type as unversioned only when the same call without max_version then
 * succeeds: a TypeError for another reason (a dtype it cannot export, say) is that reason, raised as is. */
static PyObject *
call_dlpack(PyObject *obj, unsigned long long stream)
{
    PyObject *method = PyObject_GetAttr(obj, g_dlpack_name);
    if (!method) return NULL;
    PyObject *empty = PyTuple_New(0);
    PyObject *kw = Py_BuildValue("{s:K}", "stream", stream);
    PyObject *kw_versioned = kw ? PyDict_Copy(kw) : NULL;
    PyObject *version = Py_BuildValue("(ii)", GR_DLPACK_MAJOR, GR_DLPACK_MINOR);
    PyObject *capsule = NULL;
    if (!empty || !kw_versioned || !version || PyDict_SetItemString(kw_versioned, "max_version", version) < 0)
        goto done;
    const int plain = PySet_Contains(g_unversioned_types, (PyObject *)Py_TYPE(obj));
    if (plain < 0) goto done;
    if (plain) {
        capsule = PyObject_Call(method, empty, kw);
        goto done;
    }
    capsule = PyObject_Call(method, empty, kw_versioned);
    if (capsule || !PyErr_ExceptionMatches(PyExc_TypeError)) goto done;
    PyObject *versioned_error = take_exception(); /* an older producer, or another TypeError: ask once more */
    capsule = PyObject_Call(method, empty, kw);
    if (capsule) {
        Py_XDECREF(versioned_error);
        if (PySet_Add(g_unversioned_types, (PyObject *)Py_TYPE(obj)) < 0) PyErr_Clear(); /* only a cache */
    }
    else if (PyErr_ExceptionMatches(PyExc_TypeError)) { /* not about max_version: the first answer stands */
        PyErr_Clear();
        restore_exception(versioned_error);
    }
    else Py_XDECREF(versioned_error);
done:
    Py_XDECREF(version);
    Py_XDECREF(kw_versioned);
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    Py_DECREF(method);
    return capsule;
}

/* Take over the tensor of a DLPack capsule (renamed "used_...", deleted with the operand) and read it as
 * memory of CUDA device `id` (the producer's word), to be read on `stream`. */
static int
consume_capsule(PyObject *capsule, PyObject *obj, const char *role, int type, int id, cudaStream_t stream,
                gr_stream_origin origin, OperandObject *self)
{
    gr_operand *o = &self->op;
    DLTensor *t = NULL;
    uint64_t flags = 0;
    if (PyCapsule_IsValid(capsule, GR_DLPACK_VERSIONED_CAPSULE)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, GR_DLPACK_VERSIONED_CAPSULE);
        if (m->version.major > GR_DLPACK_MAJOR) {
            PyErr_Format(PyExc_BufferError, "%s: DLPack version %u.%u of %.200s is newer than gpureduce reads (%d.x)",
                         role, m->version.major, m->version.minor, Py_TYPE(obj)->tp_name, GR_DLPACK_MAJOR);
            return -1;
        }
        if (PyCapsule_SetName(capsule, GR_DLPACK_VERSIONED_CAPSULE_USED) < 0) return -1;
        self->dl_managed = m;
        self->dl_versioned = 1;
        t = &m->dl_tensor;
        flags = m->flags;
    }
    else if (PyCapsule_IsValid(capsule, GR_DLPACK_CAPSULE)) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, GR_DLPACK_CAPSULE);
        if (PyCapsule_SetName(capsule, GR_DLPACK_CAPSULE_USED) < 0) return -1;
        self->dl_managed = m;
        t = &m->dl_tensor;
    }
    else {
        PyErr_Format(PyExc_TypeError, "%s: __dlpack__() of %.200s must return an unused DLPack capsule ('%s' or '%s'), "
                     "not %.200s", role, Py_TYPE(obj)->tp_name, GR_DLPACK_VERSIONED_CAPSULE, GR_DLPACK_CAPSULE,
                     Py_TYPE(capsule)->tp_name);
        return -1;
    }
    int dt;
    if (dlpack_dtype(t->dtype, &dt) < 0) {
        char name[64], where[64];
        PyOS_snprintf(name, sizeof(name), "(DLPack code %u, %u bits, %u lanes)", t->dtype.code, t->dtype.bits,
                      t->dtype.lanes);
        PyOS_snprintf(where, sizeof(where), " in %s", role);
        return gr_unsupported_dtype(name, NULL, where, NULL);
    }
    if (!gr_dtype_available((gr_dtype)dt)) return -1;
    if ((int)t->device.device_type != type || t->device.device_id != id) {
        PyErr_Format(PyExc_ValueError, "%s: the DLPack tensor says device (%d, %d) but __dlpack_device__() said (%d, %d)",
                     role, (int)t->device.device_type, (int)t->device.device_id, type, id);
        return -1;
    }
    const int64_t itemsize = (int64_t)gr_dtype_itemsize((gr_dtype)dt);
    if (t->ndim < 0 || t->ndim > GR_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: a DLPack tensor of %d dimensions; gpureduce handles at most %d", role,
                     (int)t->ndim, GR_MAX_NDIM);
        return -1;
    }
    int64_t strides[GR_MAX_NDIM];
    if (t->strides) {
        for (int i = 0; i < t->ndim; i++) strides[i] = t->strides[i] * itemsize;
    }
    else {
        c_byte_strides(t->ndim, t->shape, itemsize, strides);
    }
    if (set_layout(o, t->ndim, t->shape, strides, itemsize, role) < 0) return -1;
    const unsigned long long ptr = (unsigned long long)(uintptr_t)t->data + t->byte_offset;
    if (ptr == 0 && o->size > 0) {
        PyErr_Format(PyExc_ValueError, "%s: the DLPack tensor of %.200s has a null data pointer", role,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (check_alignment(role, ptr, itemsize) < 0) return -1;
    o->ptr = (void *)(uintptr_t)ptr;
    o->dtype = (gr_dtype)dt;
    o->readonly = (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    o->device = id;
    o->has_stream = 1;
    o->stream = stream;
    o->origin = origin;
    o->protocol = GR_FROM_DLPACK;
    Py_INCREF(obj);
    self->keep = obj;
    return 0;
}

/* A DLPack exporter's tensor, the producer told to order its work before `stream` (a CUDA stream number:
 * 1 legacy, 2 per-thread, else a handle), where the work then runs. */
static int
intake_dlpack(PyObject *module, PyObject *obj, const char *role, unsigned long long stream, gr_stream_origin origin,
              OperandObject *self)
{
    int type = 0, id = 0;
    if (dlpack_device(obj, role, &type, &id) < 0) return -1;
    if (type == kDLCPU) {
        /* host memory: read it as NumPy does (numpy.from_dlpack), then as any host array */
        PyObject *np = PyImport_ImportModule("numpy");
        PyObject *arr = np ? PyObject_CallMethod(np, "from_dlpack", "O", obj) : NULL;
        Py_XDECREF(np);
        if (!arr) return reraise(role, "numpy.from_dlpack() (reading a CPU tensor through its __dlpack__)", obj);
        const int rc = intake_host(arr, role, self);
        Py_DECREF(arr);
        return rc;
    }
    if (type != kDLCUDA && type != kDLCUDAManaged) {
        PyErr_Format(PyExc_TypeError,
                     "%s: a %.200s lives on DLPack device type %d (id %d); gpureduce reads CUDA memory (DLPack device "
                     "type %d or %d) and host arrays",
                     role, Py_TYPE(obj)->tp_name, type, id, (int)kDLCUDA, (int)kDLCUDAManaged);
        return -1;
    }
    PyObject *capsule = call_dlpack(obj, stream);
    if (!capsule) {
        char what[64];
        PyOS_snprintf(what, sizeof(what), "__dlpack__(stream=%llu)", stream);
        return reraise(role, what, obj);
    }
    /* the producer ordered `stream` after its work: we read there */
    const int rc = consume_capsule(capsule, obj, role, type, id, stream_from_number(stream), origin, self);
    Py_DECREF(capsule); /* a consumed tensor is ours now; an unconsumed one is deleted by the capsule */
    return rc;
}

/* The module `name` if something has imported it already (a new reference), else NULL without an error: an
 * array of a library nobody imported cannot exist, and gpureduce never imports one itself. */
static PyObject *
imported_module(const char *name)
{
    PyObject *key = PyUnicode_FromString(name);
    PyObject *module = key ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    if (!module) PyErr_Clear();
    return module;
}

/* ---------------------------------------------------------------- PyTorch tensors

 * Tensor.__dlpack__ is Python that makes stream objects and events on every call (about 10 us); PyTorch's C
 * export (torch._C._to_dlpack) and its current stream's raw handle give the same tensor in about 1 us, and the
 * work then runs on PyTorch's current stream, exactly where PyTorch's own function would: no event at all.
 * Looked up once torch is imported; anything missing (another PyTorch) falls back to the protocol. */
static struct {
    int state; /* 0: not looked up yet, 1: ready, -1: use the protocol */
    PyObject *tensor_type, *to_dlpack, *raw_stream, *is_cuda;
} g_torch;

static int
torch_lookup(void)
{
    PyObject *torch = imported_module("torch");
    if (!torch) return 0; /* no tensor can exist yet; look again next time */
    PyObject *C = PyObject_GetAttrString(torch, "_C");
    g_torch.tensor_type = PyObject_GetAttrString(torch, "Tensor");
    g_torch.to_dlpack = C ? PyObject_GetAttrString(C, "_to_dlpack") : NULL;
    g_torch.raw_stream = C ? PyObject_GetAttrString(C, "_cuda_getCurrentRawStream") : NULL;
    g_torch.is_cuda = PyUnicode_InternFromString("is_cuda");
    Py_XDECREF(C);
    Py_DECREF(torch);
    PyErr_Clear();
    g_torch.state = g_torch.tensor_type && PyType_Check(g_torch.tensor_type) && g_torch.to_dlpack &&
                            g_torch.raw_stream && g_torch.is_cuda
                        ? 1
                        : -1; /* kept for the module's life: a few references */
    return 0;
}

/* 1 for a PyTorch tensor in CUDA memory, 0 for anything else. */
static int
is_cuda_torch_tensor(PyObject *obj)
{
    if (g_torch.state == 0) torch_lookup();
    if (g_torch.state != 1 || !PyObject_TypeCheck(obj, (PyTypeObject *)g_torch.tensor_type)) return 0;
    PyObject *is_cuda = PyObject_GetAttr(obj, g_torch.is_cuda);
    const int cuda = is_cuda == Py_True;
    Py_XDECREF(is_cuda);
    PyErr_Clear();
    return cuda;
}

/* PyTorch's export refuses a tensor that requires grad; its values are what a reduction reads, so read them
 * through a detached view (what `t.detach()` gives: the same memory). */
static PyObject *
torch_capsule(PyObject *obj)
{
    PyObject *capsule = PyObject_CallOneArg(g_torch.to_dlpack, obj);
    if (capsule || !PyErr_ExceptionMatches(PyExc_RuntimeError)) return capsule;
    PyObject *grad = PyObject_GetAttrString(obj, "requires_grad");
    const int requires = grad == Py_True;
    Py_XDECREF(grad);
    if (!requires) {
        PyErr_Clear();
        return PyObject_CallOneArg(g_torch.to_dlpack, obj); /* the same error again, for reraise */
    }
    PyErr_Clear();
    PyObject *detached = PyObject_CallMethod(obj, "detach", NULL);
    if (!detached) return NULL;
    capsule = PyObject_CallOneArg(g_torch.to_dlpack, detached); /* the capsule keeps the storage alive */
    Py_DECREF(detached);
    return capsule;
}

static int
intake_torch(PyObject *obj, const char *role, OperandObject *self)
{
    PyObject *capsule = torch_capsule(obj);
    if (!capsule) return reraise(role, "PyTorch's DLPack export (torch._C._to_dlpack)", obj);
    int id = -1;
    if (PyCapsule_IsValid(capsule, GR_DLPACK_CAPSULE))
        id = ((DLManagedTensor *)PyCapsule_GetPointer(capsule, GR_DLPACK_CAPSULE))->dl_tensor.device.device_id;
    else if (PyCapsule_IsValid(capsule, GR_DLPACK_VERSIONED_CAPSULE))
        id = ((DLManagedTensorVersioned *)PyCapsule_GetPointer(capsule, GR_DLPACK_VERSIONED_CAPSULE))
                 ->dl_tensor.device.device_id;
    PyObject *device = PyLong_FromLong(id);
    PyObject *raw = device ? PyObject_CallOneArg(g_torch.raw_stream, device) : NULL;
    Py_XDECREF(device);
    const unsigned long long handle = raw ? PyLong_AsUnsignedLongLong(raw) : 0;
    Py_XDECREF(raw);
    if (!raw || PyErr_Occurred()) {
        Py_DECREF(capsule);
        return reraise(role, "PyTorch's current stream (torch._C._cuda_getCurrentRawStream)", obj);
    }
    /* PyTorch's default stream is the legacy default stream (handle 0) */
    const cudaStream_t stream = handle == 0 ? cudaStreamLegacy : (cudaStream_t)(uintptr_t)handle;
    const int rc = consume_capsule(capsule, obj, role, kDLCUDA, id, stream, GR_STREAM_CALLER, self);
    Py_DECREF(capsule);
    return rc;
}

/* ---------------------------------------------------------------- CuPy arrays

 * CuPy works on its current stream, which may be a non-blocking one: its arrays are asked for that stream in the
 * DLPack exchange (nothing to order when CuPy's work is there already) and the work runs there, so what CuPy does
 * next on its stream, out= read back included, comes after it, and CuPy's memory pool frees in that order too.
 * Looked up once cupy is imported. */
static struct {
    int state; /* 0: not looked up yet, 1: ready, -1: treat CuPy arrays as any DLPack producer */
    PyObject *ndarray_type, *current_stream, *ptr, *data, *device_id, *shape, *strides, *dtype;
} g_cupy;

static void
cupy_lookup(void)
{
    PyObject *cupy = imported_module("cupy");
    if (!cupy) return; /* no CuPy array can exist yet; look again next time */
    PyObject *cuda = PyObject_GetAttrString(cupy, "cuda");
    g_cupy.ndarray_type = PyObject_GetAttrString(cupy, "ndarray");
    g_cupy.current_stream = cuda ? PyObject_GetAttrString(cuda, "get_current_stream") : NULL;
    g_cupy.ptr = PyUnicode_InternFromString("ptr");
    g_cupy.data = PyUnicode_InternFromString("data");
    g_cupy.device_id = PyUnicode_InternFromString("device_id");
    g_cupy.shape = PyUnicode_InternFromString("shape");
    g_cupy.strides = PyUnicode_InternFromString("strides");
    g_cupy.dtype = PyUnicode_InternFromString("dtype");
    Py_XDECREF(cuda);
    Py_DECREF(cupy);
    PyErr_Clear();
    g_cupy.state = g_cupy.ndarray_type && PyType_Check(g_cupy.ndarray_type) && g_cupy.current_stream && g_cupy.ptr &&
                           g_cupy.data && g_cupy.device_id && g_cupy.shape && g_cupy.strides && g_cupy.dtype
                       ? 1
                       : -1; /* kept for the module's life: a few references */
}

static int
is_cupy_array(PyObject *obj)
{
    if (g_cupy.state == 0) cupy_lookup();
    return g_cupy.state == 1 && PyObject_TypeCheck(obj, (PyTypeObject *)g_cupy.ndarray_type);
}

/* CuPy's current stream as a DLPack stream number (its null stream, handle 0, is the legacy one: 1); the Stream
 * object in *owner (a new reference), which keeps the CUDA stream alive as long as it is held. */
static int
cupy_stream_number(const char *role, PyObject *obj, unsigned long long *number, PyObject **owner)
{
    PyObject *stream = PyObject_CallNoArgs(g_cupy.current_stream);
    PyObject *ptr = stream ? PyObject_GetAttr(stream, g_cupy.ptr) : NULL;
    const unsigned long long handle = ptr ? PyLong_AsUnsignedLongLong(ptr) : 0;
    Py_XDECREF(ptr);
    if (!ptr || PyErr_Occurred()) {
        Py_XDECREF(stream);
        return reraise(role, "CuPy's current stream (cupy.cuda.get_current_stream())", obj);
    }
    *number = handle == 0 ? 1 : handle;
    *owner = stream;
    return 0;
}

/* A CuPy array read from its own attributes (data.ptr, data.device_id, shape, byte strides, its NumPy dtype), on
 * CuPy's current stream: what the DLPack exchange says, without its three calls into CuPy (__dlpack_device__,
 * __dlpack__ with the stream, the capsule), about a microsecond of a small call (issue 38).  1 where an attribute
 * is not what this CuPy was expected to have (the caller then takes the DLPack route), 0, or -1 with an
 * exception. */
static int
intake_cupy(PyObject *obj, const char *role, OperandObject *self)
{
    gr_operand *o = &self->op;
    PyObject *data = PyObject_GetAttr(obj, g_cupy.data);
    PyObject *ptr = data ? PyObject_GetAttr(data, g_cupy.ptr) : NULL;
    PyObject *device = data ? PyObject_GetAttr(data, g_cupy.device_id) : NULL;
    PyObject *shape = PyObject_GetAttr(obj, g_cupy.shape);
    PyObject *strides = PyObject_GetAttr(obj, g_cupy.strides);
    PyObject *dtype = PyObject_GetAttr(obj, g_cupy.dtype);
    int rc = 1;
    const int ndim = shape && PyTuple_Check(shape) ? (int)PyTuple_GET_SIZE(shape) : -1;
    if (!ptr || !PyLong_Check(ptr) || !device || !PyLong_Check(device) || ndim < 0 || !strides ||
        !PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim || !dtype || !PyArray_DescrCheck(dtype)) {
        PyErr_Clear();
        goto done;
    }
    rc = -1;
    const int dt = gr_dtype_from_descr((PyArray_Descr *)dtype);
    if (dt < 0) { /* as the DLPack route names it */
        PyObject *name = PyObject_Str(dtype);
        char where[64];
        PyOS_snprintf(where, sizeof(where), " in %s", role);
        if (name && PyUnicode_AsUTF8(name)) gr_unsupported_dtype(PyUnicode_AsUTF8(name), (PyArray_Descr *)dtype, where, NULL);
        Py_XDECREF(name);
        goto done;
    }
    if (!gr_dtype_available((gr_dtype)dt)) goto done;
    if (ndim > GR_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s has %d dimensions; gpureduce handles at most %d", role, ndim, GR_MAX_NDIM);
        goto done;
    }
    int64_t dims[GR_MAX_NDIM], byte_strides[GR_MAX_NDIM];
    if (read_int64s(shape, dims, ndim, "shape") < 0 || read_int64s(strides, byte_strides, ndim, "strides") < 0)
        goto done;
    const int64_t itemsize = (int64_t)gr_dtype_itemsize((gr_dtype)dt);
    if (set_layout(o, ndim, dims, byte_strides, itemsize, role) < 0) goto done;
    const unsigned long long address = PyLong_AsUnsignedLongLong(ptr);
    const long id = PyLong_AsLong(device);
    if (PyErr_Occurred() || check_alignment(role, address, itemsize) < 0) goto done;
    o->ptr = (void *)(uintptr_t)address;
    o->dtype = (gr_dtype)dt;
    o->device = (int)id;
    o->protocol = GR_FROM_CUPY;
    self->keep = Py_NewRef(obj);
    rc = 0;
done:
    Py_XDECREF(data);
    Py_XDECREF(ptr);
    Py_XDECREF(device);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(dtype);
    return rc;
}

/* ---------------------------------------------------------------- ndarray subclasses

 * NumPy gives a subclass its own answers (a masked array skips its masked elements, a matrix keeps 2-d results,
 * a subclass's methods decide): its data read as a plain array would be a silent wrong answer.  numpy.memmap is
 * a plain array in a file, whose reductions NumPy answers as a plain array's.  gpureduce's Python layer reads
 * masked arrays by numpy.ma's rules (gpureduce/_planning/subclasses.py); what reaches the intake here is refused. */
static int
refuse_subclass(PyObject *obj, const char *role)
{
    static PyObject *memmap;
    if (!memmap) {
        PyObject *np = PyImport_ImportModule("numpy");
        memmap = np ? PyObject_GetAttrString(np, "memmap") : NULL; /* kept for the module's life */
        Py_XDECREF(np);
        if (!memmap) return -1;
    }
    if (PyArray_CheckExact(obj) || PyObject_TypeCheck(obj, (PyTypeObject *)memmap)) return 0;
    char tname[200];
    PyErr_Format(PyExc_TypeError,
                 "%s: %s is an ndarray subclass, which NumPy answers by the subclass's own rules (a masked array "
                 "skips its masked elements, a matrix keeps 2-d results); gpureduce reads plain arrays here: pass "
                 "numpy.asarray(a) to reduce its values as a plain array (numpy.ma.filled(a, value) or a.compressed() "
                 "for a masked array)",
                 role, type_name(obj, tname, sizeof(tname)));
    return -1;
}

/* ---------------------------------------------------------------- the entry */

static int
has_attr(PyObject *obj, PyObject *name)
{
    /* a type-level lookup: no property is run, no exception made */
    return _PyType_Lookup(Py_TYPE(obj), name) != NULL;
}

/* The call's stream=, if one is set: 1 and its handle, 0 when none, -1 with an exception. */
static int
explicit_stream(cudaStream_t *stream)
{
    PyObject *value = NULL;
    if (PyContextVar_Get(g_call_stream, NULL, &value) < 0) return -1;
    if (!value || value == Py_None) {
        Py_XDECREF(value);
        return 0;
    }
    const unsigned long long handle = PyLong_AsUnsignedLongLong(value);
    Py_DECREF(value);
    if (handle == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    /* handle 0, CUDA's default stream, is the legacy one here (no per-thread default compile) */
    *stream = handle == 0 ? cudaStreamLegacy : (cudaStream_t)(uintptr_t)handle;
    return 1;
}

/* An operand read on the call's stream=: the work runs there (a host input's copies too), after the stream a
 * device operand's data was made on. */
static void
move_to_explicit_stream(gr_operand *o, cudaStream_t stream)
{
    if (!o->is_host && o->has_stream && o->stream != stream) {
        o->has_after = 1;
        o->after = o->stream;
    }
    o->has_stream = 1;
    o->stream = stream;
    o->origin = GR_STREAM_EXPLICIT;
}

PyObject *
gr_intake(PyObject *module, PyObject *obj, const char *role)
{
    /* an operand already taken in this call (gpureduce/_planning/calls.py): one handshake with its producer */
    if (Py_IS_TYPE(obj, (PyTypeObject *)gr_state(module)->OperandType)) return Py_NewRef(obj);
    cudaStream_t explicit = NULL;
    const int has_explicit = explicit_stream(&explicit);
    if (has_explicit < 0) return NULL;
    OperandObject *self = operand_new(module, obj);
    if (!self) return NULL;
    const int is_out = !strcmp(role, "out=");
    int rc;
    if (gr_is_device_array(module, obj)) {
        rc = intake_device_array(obj, self);
    }
    else if (PyArray_Check(obj)) {
        /* where= and out= are read as NumPy's ufuncs read them (a subclass's data); the arrays reduced are not */
        const int plain_only = strcmp(role, "where=") && !is_out;
        rc = plain_only && refuse_subclass(obj, role) < 0 ? -1 : intake_host(obj, role, self);
    }
    else if (is_cuda_torch_tensor(obj)) {
        rc = intake_torch(obj, role, self);
    }
    else if (is_cupy_array(obj)) {
        unsigned long long stream = 1;
        rc = cupy_stream_number(role, obj, &stream, &self->stream_owner);
        if (rc == 0 && (rc = intake_cupy(obj, role, self)) == 0) {
            self->op.has_stream = 1;
            self->op.stream = stream_from_number(stream);
            self->op.origin = GR_STREAM_CALLER;
        }
        else if (rc > 0) {
            rc = intake_dlpack(module, obj, role, stream, GR_STREAM_CALLER, self);
        }
    }
    else if (has_attr(obj, g_dlpack_name) && has_attr(obj, g_dlpack_device_name)) {
        /* a producer whose current stream is unknown: told the call's stream= (cudaStreamLegacy and
         * cudaStreamPerThread are the protocol's 1 and 2), else the legacy default stream, where the work runs */
        if (has_explicit)
            rc = intake_dlpack(module, obj, role, (unsigned long long)(uintptr_t)explicit, GR_STREAM_EXPLICIT, self);
        else
            rc = intake_dlpack(module, obj, role, 1, GR_STREAM_HANDSHAKE, self);
    }
    else {
        PyObject *cai = PyObject_GetAttr(obj, g_cai_name); /* an instance attribute is fine too */
        if (cai) {
            rc = intake_cai(obj, cai, role, self);
            Py_DECREF(cai);
        }
        else if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            rc = -1;
        }
        else if (is_out) { /* out= must be an array the result can be written into */
            char tname[200];
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "out= must be None, a NumPy array, or a device array exporting __cuda_array_interface__ or "
                         "DLPack; got %s", type_name(obj, tname, sizeof(tname)));
            rc = -1;
        }
        else {
            PyErr_Clear(); /* no such attribute (or a CPU tensor refusing it): a host array-like */
            rc = intake_host(obj, role, self);
        }
    }
    if (rc < 0) {
        Py_DECREF(self);
        return NULL;
    }
    if (has_explicit) move_to_explicit_stream(&self->op, explicit);
    return (PyObject *)self;
}

/* intake(obj, role="the input") -> Operand */
PyObject *
gr_py_intake(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "intake(obj, role='the input') takes 1 or 2 arguments");
        return NULL;
    }
    const char *role = "the input";
    if (nargs == 2) {
        role = PyUnicode_AsUTF8(args[1]);
        if (!role) return NULL;
    }
    return gr_intake(module, args[0], role);
}

/* ---------------------------------------------------------------- device checks (when the work runs) */

int
gr_check_device_pointer(PyObject *module, const void *ptr, int device, const char *what)
{
    struct cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "cudaPointerGetAttributes");
        return -1;
    }
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
        PyErr_Format(PyExc_ValueError, "%s: pointer %p is not device memory (CUDA memory type %d)", what, ptr,
                     (int)attr.type);
        return -1;
    }
    if (attr.device != device) {
        PyErr_Format(PyExc_ValueError,
                     "%s lives on device %d but the work runs on device %d (the current one); make device %d "
                     "current (e.g. `with cupy.cuda.Device(%d):`) or move the array",
                     what, attr.device, device, attr.device, attr.device);
        return -1;
    }
    return 0;
}

/* The driver's cuMemGetAddressRange (the runtime has no counterpart), looked up once; NULL where the driver
 * does not offer it.  Called with the GIL held, so the lookup needs no lock. */
typedef int (*address_range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);

static address_range_fn
address_range(void)
{
    static int looked_up = 0;
    static address_range_fn fn = NULL;
    if (!looked_up) {
        looked_up = 1;
        void *p = NULL;
        enum cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 12000, cudaEnableDefault, &found) ==
                cudaSuccess &&
            found == cudaDriverEntryPointSuccess)
            fn = (address_range_fn)p;
        (void)cudaGetLastError();
    }
    return fn;
}

/* The bytes [lo, hi) an operand reads or writes, relative to its pointer. */
static void
byte_span(const gr_operand *o, int64_t *lo, int64_t *hi)
{
    const int64_t itemsize = (int64_t)gr_dtype_itemsize(o->dtype);
    *lo = 0;
    *hi = itemsize;
    for (int i = 0; i < o->ndim; i++) {
        const int64_t reach = (o->shape[i] - 1) * o->strides[i] * itemsize; /* set_layout checked the range */
        if (reach < 0) *lo += reach;
        else *hi += reach;
    }
}

/* A CUDA Array Interface producer's word is all there is about its memory: where the driver knows the
 * allocation that holds the pointer, the shape and strides must stay inside it (a lie would read or write
 * another allocation). */
static int
check_within_allocation(const gr_operand *o, const char *what)
{
    address_range_fn range = address_range();
    unsigned long long base = 0;
    size_t bytes = 0;
    if (!range || range(&base, &bytes, (unsigned long long)(uintptr_t)o->ptr) != 0) return 0; /* not knowable */
    int64_t lo, hi;
    byte_span(o, &lo, &hi);
    const unsigned long long ptr = (unsigned long long)(uintptr_t)o->ptr;
    const unsigned long long offset = ptr - base; /* ptr lies in [base, base + bytes) */
    if ((lo < 0 && (unsigned long long)(-lo) > offset) || (unsigned long long)hi > bytes - offset) {
        PyErr_Format(PyExc_ValueError,
                     "%s: its __cuda_array_interface__ reaches beyond its allocation: bytes [%lld, %lld) around "
                     "pointer 0x%llx, in the %zu-byte device allocation at 0x%llx (shape or strides larger than the "
                     "memory)",
                     what, (long long)lo, (long long)hi, ptr, bytes, base);
        return -1;
    }
    return 0;
}

int
gr_check_operand_device(PyObject *module, const gr_operand *o, int device, const char *what)
{
    if (o->is_host || o->size == 0) return 0;
    if (o->device >= 0) { /* the producer said where the memory is (DLPack, DeviceArray) */
        if (o->device == device) return 0;
        PyErr_Format(PyExc_ValueError,
                     "%s lives on device %d but the work runs on device %d (the current one); make device %d "
                     "current (e.g. `with cupy.cuda.Device(%d):`) or move the array",
                     what, o->device, device, o->device, o->device);
        return -1;
    }
    if (gr_check_device_pointer(module, o->ptr, device, what) < 0) return -1;
    return o->protocol == GR_FROM_CAI ? check_within_allocation(o, what) : 0;
}
