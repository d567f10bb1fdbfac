/* module.c -- the extension module gpureduce._core: multi-phase init, module state, method table. */
#define GR_DEFINE_NUMPY_API
#include "ext.h"

static const char *const kOpNames[GR_OP_COUNT] = {
    [GR_OP_SUM] = "sum",   [GR_OP_PROD] = "prod",     [GR_OP_MIN] = "min",      [GR_OP_MAX] = "max",
    [GR_OP_MEAN] = "mean", [GR_OP_ARGMIN] = "argmin", [GR_OP_ARGMAX] = "argmax"};

/* result_dtype(op, in) -> the dtype code NumPy's function gives with dtype=None (gr_default_result_dtype). */
static PyObject *
py_result_dtype(PyObject *module, PyObject *args)
{
    int op, in;
    if (!PyArg_ParseTuple(args, "ii", &op, &in)) return NULL;
    if (op < 0 || op >= GR_OP_COUNT || in < 0 || in >= GR_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "result_dtype(): bad operator %d or dtype %d", op, in);
        return NULL;
    }
    return PyLong_FromLong((long)gr_default_result_dtype(GR_KIND_REDUCE, (gr_op)op, (gr_dtype)in));
}

/* segments_supported(kind, variant, op, in, out) -> bool: the variant runs that triple along axes with no cast
 * first (gr_segments_supported). */
static PyObject *
py_segments_supported(PyObject *module, PyObject *args)
{
    int kind, variant, op, in, out;
    if (!PyArg_ParseTuple(args, "iiiii", &kind, &variant, &op, &in, &out)) return NULL;
    if (variant < 0 || variant >= GR_VARIANT_COUNT || op < 0 || op >= GR_OP_COUNT || in < 0 || in >= GR_DTYPE_COUNT ||
        out < 0 || out >= GR_DTYPE_COUNT)
        Py_RETURN_FALSE;
    return PyBool_FromLong(gr_segments_supported((gr_kind)kind, (gr_variant)variant, (gr_op)op, (gr_dtype)in, (gr_dtype)out));
}

gr_module_state *
gr_state(PyObject *module)
{
    return (gr_module_state *)PyModule_GetState(module);
}

PyObject *
gr_py_variant_table(PyObject *module, PyObject *unused)
{
    int count;
    const gr_variant_info *table = gr_variant_table(&count);
    PyObject *rows = PyTuple_New(count);
    if (!rows) return NULL;
    for (int i = 0; i < count; i++) {
        const gr_variant_info *v = &table[i];
        PyObject *row = Py_BuildValue("(iisIIIss)", i, (int)v->kind, v->name, v->properties, v->ops, v->dtypes,
                                      v->seed, v->doc);
        if (!row) {
            Py_DECREF(rows);
            return NULL;
        }
        PyTuple_SET_ITEM(rows, i, row);
    }
    return rows;
}

static PyMethodDef core_methods[] = {
    {"reduce", (PyCFunction)(void (*)(void))gr_py_reduce, METH_FASTCALL,
     "reduce(variant, op, a) -> NumPy scalar: reduce every element of `a` with operator `op`."},
    {"scan", (PyCFunction)(void (*)(void))gr_py_scan, METH_FASTCALL,
     "scan(variant, op, a, exclusive, out) -> ndarray, DeviceArray or `out`: the inclusive (or exclusive) scan of\n"
     "the flattened `a` with operator `op`; a NumPy array for a host input, a DeviceArray for a device input."},
    {"result_dtype", py_result_dtype, METH_VARARGS,
     "result_dtype(op, in_dtype) -> the result dtype code of `op` over `in_dtype` with dtype=None (NumPy's rule)."},
    {"segments_supported", py_segments_supported, METH_VARARGS,
     "segments_supported(kind, variant, op, in_dtype, out_dtype) -> bool: the variant runs that triple along axes\n"
     "without casting the input first."},
    {"describe", gr_py_describe, METH_O,
     "describe(a) -> (dtype code, shape, strides in elements, is_host, readonly) of a device array, read from its\n"
     "__cuda_array_interface__ without touching the device."},
    {"segments", (PyCFunction)(void (*)(void))gr_py_segments, METH_FASTCALL,
     "segments(kind, variant, op, a, out_dtype, segments, result_shape, out, where, initial, exclusive) -> result\n"
     "One axis reduction or scan over merged axes (see gpureduce/_layout.py and gr_segments in gpureduce.h)."},
    {"copy_strided", (PyCFunction)(void (*)(void))gr_py_copy_strided, METH_FASTCALL,
     "copy_strided(a, out_dtype, shape, in_strides, out, out_strides) -> DeviceArray or out: a cast strided copy."},
    {"variant_table", gr_py_variant_table, METH_NOARGS,
     "variant_table() -> tuple of (index, kind, name, properties, ops mask, dtypes mask, seed, doc)."},
    {"device_count", gr_py_device_count, METH_NOARGS, "device_count() -> number of CUDA devices (0 without a driver)."},
    {"device_properties", gr_py_device_properties, METH_NOARGS,
     "device_properties() -> dict: the current device's ordinal, name, compute capability, SM count, L2 and\n"
     "memory sizes.  CudaError if there is no device."},
    {"memory_info", gr_py_memory_info, METH_NOARGS,
     "memory_info() -> (free, total): bytes of device memory on the current device (cudaMemGetInfo)."},
    {"to_device", gr_py_to_device, METH_O,
     "to_device(a) -> DeviceArray: a copy of the host array `a` (anything numpy.asarray takes, in C order) in\n"
     "device memory of the current device, complete on return."},
    {"empty", (PyCFunction)(void (*)(void))gr_py_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype, fill_byte=None) -> DeviceArray: a new array on the current device, uninitialised, or\n"
     "every byte set to `fill_byte` (0xFF is NaN in every floating dtype, -1 in signed integers)."},
    {"time_device", (PyCFunction)(void (*)(void))gr_py_time_device, METH_VARARGS | METH_KEYWORDS,
     "time_device(what, a, repeats, warmup=3, flush_l2=True, variant=-1, op=0, exclusive=False) -> (times_us, value)\n"
     "Device-side timings for the benchmarks (what: 'reduce', 'scan', 'read' or 'copy')."},
    {"time_calls", (PyCFunction)(void (*)(void))gr_py_time_calls, METH_VARARGS | METH_KEYWORDS,
     "time_calls(fn, repeats, warmup=3, flush_l2=True) -> times_us\n"
     "Device-side time of each fn() call, measured on the legacy default stream (peers such as CuPy, PyTorch)."},
    {NULL, NULL, 0, NULL},
};

static PyObject *
names_tuple(const char *const *names, int count)
{
    PyObject *t = PyTuple_New(count);
    if (!t) return NULL;
    for (int i = 0; i < count; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* PyModule_Add (3.13+) for older Pythons: steals `value`, NULL-safe. */
static int
add_owned(PyObject *module, const char *name, PyObject *value)
{
    if (!value) return -1;
    int rc = PyModule_AddObjectRef(module, name, value);
    Py_DECREF(value);
    return rc;
}

static int
core_exec(PyObject *module)
{
    if (PyArray_ImportNumPyAPI() < 0) return -1;
    gr_module_state *state = gr_state(module);
    state->CudaError = PyErr_NewExceptionWithDoc(
        "gpureduce.CudaError", "A CUDA runtime call failed, or no CUDA device is available.", PyExc_RuntimeError, NULL);
    if (!state->CudaError || PyModule_AddObjectRef(module, "CudaError", state->CudaError) < 0) return -1;
    state->DeviceArrayType = gr_device_array_type_new(module);
    if (!state->DeviceArrayType || PyModule_AddObjectRef(module, "DeviceArray", state->DeviceArrayType) < 0)
        return -1;

    const char *dtype_names[GR_DTYPE_COUNT];
    for (int i = 0; i < GR_DTYPE_COUNT; i++) dtype_names[i] = gr_dtype_name((gr_dtype)i);
    if (add_owned(module, "op_names", names_tuple(kOpNames, GR_OP_COUNT)) < 0) return -1;
    if (add_owned(module, "dtype_names", names_tuple(dtype_names, GR_DTYPE_COUNT)) < 0) return -1;
    if (PyModule_AddIntConstant(module, "KIND_REDUCE", GR_KIND_REDUCE) < 0 ||
        PyModule_AddIntConstant(module, "KIND_SCAN", GR_KIND_SCAN) < 0 ||
        PyModule_AddIntConstant(module, "PROP_DETERMINISTIC", GR_PROP_DETERMINISTIC) < 0 ||
        PyModule_AddIntConstant(module, "PROP_BASELINE", GR_PROP_BASELINE) < 0 ||
        PyModule_AddIntConstant(module, "PROP_DEFAULT", GR_PROP_DEFAULT) < 0 ||
        PyModule_AddIntConstant(module, "PROP_BLOCK_LOCAL", GR_PROP_BLOCK_LOCAL) < 0 ||
        PyModule_AddIntConstant(module, "PROP_AXES", GR_PROP_AXES) < 0)
        return -1;
    return 0;
}

static int
core_traverse(PyObject *module, visitproc visit, void *arg)
{
    Py_VISIT(gr_state(module)->CudaError);
    Py_VISIT(gr_state(module)->DeviceArrayType);
    return 0;
}

static int
core_clear(PyObject *module)
{
    Py_CLEAR(gr_state(module)->CudaError);
    Py_CLEAR(gr_state(module)->DeviceArrayType);
    return 0;
}

static void
core_free(void *module)
{
    core_clear((PyObject *)module);
    gr_exec_release_all();
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
    {0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpureduce._core",
    .m_doc = "C core of gpureduce: array intake, device resources, and the CUDA kernels' C ABI.",
    .m_size = sizeof(gr_module_state),
    .m_methods = core_methods,
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&core_module);
}
