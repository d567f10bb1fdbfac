/* buffer.c -- turn a Python object into a gr_buffer: a NumPy array (or anything numpy.asarray takes),
 * or a device array exporting __cuda_array_interface__ (read in place, never copied).
 *
 * __cuda_array_interface__ (versions 2 and 3): shape, typestr, data=(ptr, readonly), version; optional
 * strides (bytes; None = C-contiguous), descr, mask (must be None here), stream (v3: None = no ordering
 * needed, 1 = legacy default stream, 2 = per-thread default stream, 0 is illegal, else a cudaStream_t).
 */
#include "ext.h"

#include <string.h>

static const char kAccepted[] =
    "expected a NumPy array, a sequence of numbers, or a device array exporting __cuda_array_interface__";

void
gr_buffer_release(gr_buffer *buf)
{
    Py_CLEAR(buf->owner);
}

/* What a dtype kind that NumPy cannot reduce holds, for the error message (NULL for the numeric kinds). */
static const char *
kind_name(const PyArray_Descr *descr)
{
    if (PyDataType_HASFIELDS(descr)) return "structured";
    switch (descr->kind) {
    case 'O': return "Python objects";
    case 'U': return "str";
    case 'S': return "bytes";
    case 'V': return "void";
    case 'M': return "datetime";
    case 'm': return "timedelta";
    default: return NULL;
    }
}

/* TypeError naming the dtype first (the cause), then the dtypes gpureduce reduces, as
 * gpureduce/_operands.py words it; `obj` (may be NULL) is the object whose conversion gave that dtype. */
static int
unsupported_dtype(const char *dtype, const PyArray_Descr *descr, PyObject *obj)
{
    char names[512];
    gr_dtype_mask_names((1u << GR_DTYPE_COUNT) - 1, names, sizeof(names));
    const char *kind = kind_name(descr);
    char what[32] = "";
    if (kind) PyOS_snprintf(what, sizeof(what), " (%s)", kind);
    if (obj)
        PyErr_Format(PyExc_TypeError, "unsupported dtype %s%s in the input, a %.200s: gpureduce reduces %s (%s)",
                     dtype, what, Py_TYPE(obj)->tp_name, names, kAccepted);
    else
        PyErr_Format(PyExc_TypeError, "unsupported dtype %s%s: gpureduce reduces %s", dtype, what, names);
    return -1;
}

/* ---------------------------------------------------------------- host arrays */

static int
buffer_from_host(PyObject *obj, gr_buffer *buf)
{
    PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (!arr) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s; got %.200s", kAccepted, Py_TYPE(obj)->tp_name);
        }
        return -1;
    }
    PyArray_Descr *descr = PyArray_DESCR(arr);
    int dt = gr_dtype_from_descr(descr);
    if (dt < 0) {
        PyObject *s = PyObject_Str((PyObject *)descr); /* '<U3', 'object', 'datetime64[D]', ... */
        const char *name = s ? PyUnicode_AsUTF8(s) : NULL;
        if (name) unsupported_dtype(name, descr, obj);
        Py_XDECREF(s);
        Py_DECREF(arr);
        return -1;
    }
    /* C-contiguous, aligned, native byte order: copies only when the input is none of these. */
    PyArray_Descr *native = PyArray_DescrFromType(gr_dtype_to_typenum((gr_dtype)dt));
    PyArrayObject *c = (PyArrayObject *)PyArray_FromArray(arr, native, NPY_ARRAY_IN_ARRAY);
    Py_DECREF(arr);
    if (!c) return -1;
    buf->ptr = PyArray_DATA(c);
    buf->dtype = (gr_dtype)dt;
    buf->n = (int64_t)PyArray_SIZE(c);
    if (PyArray_NDIM(c) > GR_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "gpureduce handles at most %d dimensions", GR_MAX_NDIM);
        Py_DECREF(c);
        return -1;
    }
    buf->ndim = PyArray_NDIM(c);
    for (int i = 0; i < buf->ndim; i++) {
        buf->shape[i] = PyArray_DIM(c, i);
        buf->strides[i] = PyArray_STRIDE(c, i) / PyArray_ITEMSIZE(c);
    }
    buf->dense = 1;
    buf->readonly = !PyArray_ISWRITEABLE(c);
    buf->is_host = 1;
    buf->device = -1;
    buf->has_stream = 0;
    buf->stream = NULL;
    buf->owner = (PyObject *)c;
    return 0;
}

/* ---------------------------------------------------------------- __cuda_array_interface__ */

static int
parse_typestr(PyObject *typestr, int *dt_out)
{
    if (!PyUnicode_Check(typestr)) {
        PyErr_SetString(PyExc_TypeError, "__cuda_array_interface__['typestr'] must be a str such as '<f4'");
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(typestr);
    if (!s) return -1;
    if (strlen(s) < 3 || !strchr("<>|=", s[0])) {
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__['typestr'] %R is not a valid type string", typestr);
        return -1;
    }
    if (s[0] == '>') {
        PyErr_Format(PyExc_ValueError,
                     "__cuda_array_interface__['typestr'] %R is big-endian; device arrays must be little-endian",
                     typestr);
        return -1;
    }
    /* Let NumPy read the kind and size; '|b1', '<i4', '<f8', ... */
    PyArray_Descr *descr = NULL;
    PyObject *native = PyUnicode_FromFormat("=%s", s + 1);
    if (!native) return -1;
    int ok = PyArray_DescrConverter(native, &descr);
    Py_DECREF(native);
    if (!ok) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__['typestr'] %R is not a valid type string", typestr);
        return -1;
    }
    int dt = gr_dtype_from_descr(descr);
    if (dt < 0) unsupported_dtype(s, descr, NULL);
    Py_DECREF(descr);
    if (dt < 0) return -1;
    *dt_out = dt;
    return 0;
}

static int
cai_error(const char *msg)
{
    PyErr_Format(PyExc_ValueError, "malformed __cuda_array_interface__: %s", msg);
    return -1;
}

/* A dense layout (C- or Fortran-ordered) is all a flat reduction needs. */
static int
is_dense(Py_ssize_t ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize)
{
    int64_t expect = itemsize;
    int c_ok = 1, f_ok = 1;
    for (Py_ssize_t i = ndim - 1; i >= 0; i--) {
        if (shape[i] != 1 && strides[i] != expect) c_ok = 0;
        expect *= shape[i];
    }
    expect = itemsize;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        if (shape[i] != 1 && strides[i] != expect) f_ok = 0;
        expect *= shape[i];
    }
    return c_ok || f_ok;
}

#define GR_MAX_DIMS GR_MAX_NDIM

static int
buffer_from_cai(PyObject *module, PyObject *obj, PyObject *cai, gr_buffer *buf)
{
    if (!PyDict_Check(cai)) {
        PyErr_Format(PyExc_TypeError, "__cuda_array_interface__ of %.200s must be a dict, not %.200s",
                     Py_TYPE(obj)->tp_name, Py_TYPE(cai)->tp_name);
        return -1;
    }
    static const char *required[] = {"shape", "typestr", "data", "version"};
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        PyObject *v = PyDict_GetItemString(cai, required[i]); /* borrowed */
        if (!v) {
            PyErr_Format(PyExc_ValueError, "malformed __cuda_array_interface__: the required key '%s' is missing",
                         required[i]);
            return -1;
        }
    }
    long version = PyLong_AsLong(PyDict_GetItemString(cai, "version"));
    if (version == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return cai_error("'version' must be an int");
    }
    if (version != 2 && version != 3) {
        PyErr_Format(PyExc_ValueError, "unsupported __cuda_array_interface__ version %ld: supported versions are 2 and 3",
                     version);
        return -1;
    }
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    if (mask && mask != Py_None) {
        PyErr_SetString(PyExc_ValueError, "masked device arrays (__cuda_array_interface__['mask']) are not supported");
        return -1;
    }

    int dt;
    if (parse_typestr(PyDict_GetItemString(cai, "typestr"), &dt) < 0) return -1;
    const int64_t itemsize = (int64_t)gr_dtype_itemsize((gr_dtype)dt);

    PyObject *shape = PyDict_GetItemString(cai, "shape");
    if (!PyTuple_Check(shape)) return cai_error("'shape' must be a tuple of ints");
    const Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > GR_MAX_DIMS) return cai_error("too many dimensions");
    int64_t dims[GR_MAX_DIMS], strides[GR_MAX_DIMS];
    int64_t n = 1;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if ((d == -1 && PyErr_Occurred()) || d < 0) {
            PyErr_Clear();
            return cai_error("'shape' must be a tuple of non-negative ints");
        }
        dims[i] = d;
        n *= d;
    }

    PyObject *data = PyDict_GetItemString(cai, "data");
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) return cai_error("'data' must be a tuple (pointer, readonly)");
    unsigned long long ptr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (ptr == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return cai_error("'data'[0] must be the device pointer as a non-negative int");
    }
    if (ptr == 0 && n > 0) return cai_error("'data' holds a null pointer for a non-empty array");

    PyObject *st = PyDict_GetItemString(cai, "strides");
    if (st && st != Py_None) {
        if (!PyTuple_Check(st) || PyTuple_GET_SIZE(st) != ndim)
            return cai_error("'strides' must be None or a tuple with one int per dimension");
        for (Py_ssize_t i = 0; i < ndim; i++) {
            long long s = PyLong_AsLongLong(PyTuple_GET_ITEM(st, i));
            if (s == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return cai_error("'strides' must hold ints");
            }
            strides[i] = s;
        }
        for (Py_ssize_t i = 0; i < ndim; i++) {
            if (strides[i] % itemsize) {
                PyErr_Format(PyExc_ValueError,
                             "device array strides must be multiples of the %lld-byte element size; got %lld in "
                             "dimension %zd",
                             (long long)itemsize, (long long)strides[i], i);
                return -1;
            }
        }
        buf->dense = n == 0 || is_dense(ndim, dims, strides, itemsize);
    }
    else { /* C-contiguous */
        int64_t expect = itemsize;
        for (Py_ssize_t i = ndim - 1; i >= 0; i--) {
            strides[i] = expect;
            expect *= dims[i];
        }
        buf->dense = 1;
    }
    buf->ndim = (int)ndim;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        buf->shape[i] = dims[i];
        buf->strides[i] = strides[i] / itemsize;
    }
    buf->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1)) == 1;

    buf->has_stream = 0;
    buf->stream = NULL;
    PyObject *stream = PyDict_GetItemString(cai, "stream");
    if (version >= 3 && stream && stream != Py_None) {
        unsigned long long s = PyLong_AsUnsignedLongLong(stream);
        if (s == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return cai_error("'stream' must be None or a positive int");
        }
        if (s == 0)
            return cai_error("'stream' is 0, which the protocol forbids (it is ambiguous); use 1 for the legacy "
                             "default stream or 2 for the per-thread default stream");
        buf->has_stream = 1;
        buf->stream = s == 1 ? cudaStreamLegacy : s == 2 ? cudaStreamPerThread : (cudaStream_t)(uintptr_t)s;
    }

    if (ptr % (unsigned long long)itemsize) {
        PyErr_Format(PyExc_ValueError, "device pointer 0x%llx is not aligned to its %lld-byte element size", ptr,
                     (long long)itemsize);
        return -1;
    }

    buf->ptr = (void *)(uintptr_t)ptr;
    buf->dtype = (gr_dtype)dt;
    buf->n = n;
    buf->is_host = 0;
    buf->device = -1; /* found by gr_buffer_device(), once the dtype has been accepted */
    Py_INCREF(obj);
    buf->owner = obj;
    return 0;
}

int
gr_buffer_from_object(PyObject *module, PyObject *obj, gr_buffer *buf)
{
    memset(buf, 0, sizeof(*buf));
    if (PyArray_Check(obj)) return buffer_from_host(obj, buf);
    PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (!cai) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear(); /* no such attribute (or a CPU tensor refusing it): a host array-like */
    }
    else {
        int rc = buffer_from_cai(module, obj, cai, buf);
        Py_DECREF(cai);
        return rc;
    }
    return buffer_from_host(obj, buf);
}

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

int
gr_buffer_device(PyObject *module, gr_buffer *buf)
{
    int current = gr_current_device(module);
    if (current < 0) return -1;
    if (!buf->is_host && buf->n > 0 && gr_check_device_pointer(module, buf->ptr, current, "the input") < 0) return -1;
    return buf->device = current;
}
