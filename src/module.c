/* module.c -- the extension module gpureduce._core: multi-phase init and the method table (the state itself
 * is state.c, a leaf). */
#define GR_DEFINE_NUMPY_API
#include "ext.h"

static PyMethodDef core_methods[] = {
    {"intake", (PyCFunction)(void (*)(void))gr_py_intake, METH_FASTCALL,
     "intake(obj, role='the input') -> Operand: read an array (NumPy, __cuda_array_interface__, DLPack, DeviceArray)\n"
     "without touching the device; `role` names it in errors ('the input', 'where=', 'out=')."},
    {"run", gr_py_run, METH_O,
     "run(plan) -> result: the one runner of a Plan (gpureduce/_planning/plan.py builds it; src/run.c)."},
    {"call_whole", (PyCFunction)(void (*)(void))gr_py_call_whole, METH_FASTCALL,
     "call_whole(kind, op, variant, exclusive, a, with_operand=False) -> the result (with_operand: (result, the\n"
     "Operand read)) of a whole-array reduction or scan of `a` with the default arguments, run from the plan\n"
     "remember_whole kept for its key; where none is kept (or the input's library made no result), the Operand read\n"
     "from `a` (for the planner), or NotImplemented when no plan is kept for `a`'s type (nothing was asked of it)."},
    {"remember_whole", (PyCFunction)(void (*)(void))gr_py_remember_whole, METH_FASTCALL,
     "remember_whole(kind, op, variant, exclusive, x, template, maker, convert, view) -> None:\n"
     "keep a planned whole-array call for call_whole (src/whole_calls.c says what each argument is)."},
    {"result_dtype", gr_py_result_dtype, METH_VARARGS,
     "result_dtype(kind, op, in_dtype) -> the result dtype code NumPy's function gives with dtype=None."},
    {"groups_scatter_runs", gr_py_groups_scatter_runs, METH_VARARGS,
     "groups_scatter_runs(op, in_dtype, out_dtype, length, accumulators) -> bool: a reduction over group ids in any\n"
     "order (RANGES_GROUP_IDS) runs that pair along an axis of that length, with that many accumulators, by its\n"
     "integer scatter."},
    {"segments_supported", gr_py_segments_supported, METH_VARARGS,
     "segments_supported(kind, variant, op, in_dtype, out_dtype) -> bool: the variant runs that pair along axes\n"
     "without casting the input first."},
    {"variant_table", gr_py_variant_table, METH_NOARGS,
     "variant_table() -> tuple of (index, kind, name, properties, ops mask, dtypes mask, seed, doc)."},
    {"device_count", gr_py_device_count, METH_NOARGS, "device_count() -> number of CUDA devices (0 without a driver)."},
    {"device_properties", gr_py_device_properties, METH_NOARGS,
     "device_properties() -> dict: the current device's ordinal, name, compute capability, SM count, L2 and\n"
     "memory sizes.  CudaError if there is no device."},
    {"memory_info", gr_py_memory_info, METH_NOARGS,
     "memory_info() -> (free, total): bytes of device memory on the current device (cudaMemGetInfo)."},
    {"resource_stats", gr_py_resource_stats, METH_NOARGS,
     "resource_stats() -> dict: bytes of the device memory pool in use and reserved, the device and pinned bytes "
     "held by cached execution contexts, and their count (current device)."},
    {"to_device", gr_py_to_device, METH_O,
     "to_device(a) -> DeviceArray: a copy of the host array `a` (anything numpy.asarray takes, in C order) in\n"
     "device memory of the current device, complete on return."},
    {"empty", (PyCFunction)(void (*)(void))gr_py_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype, fill_byte=None) -> DeviceArray: a new array on the current device, uninitialised, or\n"
     "every byte set to `fill_byte` (0xFF is NaN in every floating dtype, -1 in signed integers)."},
    {"time_device", (PyCFunction)(void (*)(void))gr_py_time_device, METH_VARARGS | METH_KEYWORDS,
     "time_device(plan, repeats, warmup=3, flush_l2=True) -> (times_us, result)\n"
     "Device time of a plan's kernels (CUDA events, the L2 flushed before each call), for the benchmarks."},
    {"time_ceiling", (PyCFunction)(void (*)(void))gr_py_time_ceiling, METH_VARARGS | METH_KEYWORDS,
     "time_ceiling(what, a, repeats, warmup=3, flush_l2=True) -> times_us\n"
     "Device time of what bounds a kernel over the dense device array a: 'read', 'copy', 'h2d' or 'd2h'."},
    {"time_calls", (PyCFunction)(void (*)(void))gr_py_time_calls, METH_VARARGS | METH_KEYWORDS,
     "time_calls(fn, repeats, warmup=3, flush_l2=True) -> times_us\n"
     "Device-side time of each fn() call, measured on the legacy default stream (peers such as CuPy, PyTorch)."},
    {"time_stages", (PyCFunction)(void (*)(void))gr_py_time_stages, METH_VARARGS | METH_KEYWORDS,
     "time_stages(plan, repeats, warmup=10) -> {stage: median microseconds} of the runner's stages (host clock)."},
    {"jit_compile", gr_py_jit_compile, METH_VARARGS,
     "jit_compile(program, name, arch, with_pch=False) -> (path, compiled): the kernel `name` of a first-use program\n"
     "(jit_kernels()) in the disk cache for sm_<arch>, compiled with NVRTC when it was not there (no GPU needed);\n"
     "with_pch: NVRTC's automatic precompiled headers, 60-200 MB a program under $TMPDIR until a normal exit."},
    {"jit_kernels", gr_py_jit_kernels, METH_NOARGS,
     "jit_kernels() -> ((program, name), ...): every kernel compiled on first use (outside cuda/abi/hot_set.def)."},
    {"jit_info", gr_py_jit_info, METH_NOARGS,
     "jit_info() -> dict: the kernel cache's folder, the NVRTC found, and what this process compiled, read from\n"
     "the cache and found already loaded."},
    {NULL, NULL, 0, NULL},
};

/* PyModule_Add (3.13+) for older Pythons: steals `value`, NULL-safe. */
static int
add_owned(PyObject *module, const char *name, PyObject *value)
{
    if (!value) return -1;
    int rc = PyModule_AddObjectRef(module, name, value);
    Py_DECREF(value);
    return rc;
}

/* hot_set: {"dtypes", "reduce", "scan"}: the hot set of cuda/abi/hot_set.def, by name (what is compiled ahead of time;
 * the rest compiles on first use). */
static PyObject *
hot_set_dict(void)
{
    const char *dtypes[GR_DTYPE_COUNT], *reduce[GR_OP_COUNT], *scan[GR_OP_COUNT];
    int n_dtypes = 0, n_reduce = 0, n_scan = 0;
#define GR_HOT_DTYPE(CODE) dtypes[n_dtypes++] = gr_dtype_name(CODE);
#define GR_HOT_REDUCE(NAME) reduce[n_reduce++] = gr_op_name(GR_OP_##NAME);
#define GR_HOT_SCAN(NAME) scan[n_scan++] = gr_op_name(GR_OP_##NAME);
#define GR_HOT_CUB(KIND, NAME, CODE)
#include "abi/hot_set.def"
#undef GR_HOT_DTYPE
#undef GR_HOT_REDUCE
#undef GR_HOT_SCAN
#undef GR_HOT_CUB
    PyObject *d = gr_names_tuple(dtypes, n_dtypes), *r = gr_names_tuple(reduce, n_reduce);
    PyObject *s = gr_names_tuple(scan, n_scan);
    PyObject *result = d && r && s ? Py_BuildValue("{s:O, s:O, s:O}", "dtypes", d, "reduce", r, "scan", s) : NULL;
    Py_XDECREF(d);
    Py_XDECREF(r);
    Py_XDECREF(s);
    return result;
}

/* cub_hot_set: ((kind, operator, dtype), ...) of hot_set.def's GR_HOT_CUB lines: CUB's axis baselines (variant
 * "cub") compiled ahead of time. */
static PyObject *
cub_hot_set_tuple(void)
{
    static const struct { gr_kind kind; gr_op op; gr_dtype dtype; } lines[] = {
#define GR_HOT_DTYPE(CODE)
#define GR_HOT_REDUCE(NAME)
#define GR_HOT_SCAN(NAME)
#define GR_HOT_CUB(KIND, NAME, CODE) {GR_KIND_##KIND, GR_OP_##NAME, CODE},
#include "abi/hot_set.def"
#undef GR_HOT_DTYPE
#undef GR_HOT_REDUCE
#undef GR_HOT_SCAN
#undef GR_HOT_CUB
    };
    const Py_ssize_t n = (Py_ssize_t)(sizeof lines / sizeof lines[0]);
    PyObject *result = PyTuple_New(n);
    for (Py_ssize_t i = 0; result && i < n; i++) {
        PyObject *row = Py_BuildValue("(sss)", lines[i].kind == GR_KIND_SCAN ? "scan" : "reduce",
                                      gr_op_name(lines[i].op), gr_dtype_name(lines[i].dtype));
        if (!row) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, i, row);
    }
    return result;
}

/* range_algorithms: ((name, doc, scan_doc), ...) of cuda/abi/ranges.def in gr_range_algorithm's order (a plan's
 * ranges name one by its index): the `variant=` of gpureduce's segmented reductions, and of its segmented scans
 * where scan_doc is not "". */
static PyObject *
range_algorithms_tuple(void)
{
    static const struct { const char *name, *doc, *scan_doc; } rows[] = {
#define GR_RANGE_ALGORITHM(NAME, name, doc, scan_doc) {#name, doc, scan_doc},
#include "abi/ranges.def"
#undef GR_RANGE_ALGORITHM
    };
    _Static_assert(sizeof rows / sizeof rows[0] == GR_RANGE_ALGORITHM_COUNT, "one row per gr_range_algorithm");
    const Py_ssize_t n = (Py_ssize_t)(sizeof rows / sizeof rows[0]);
    PyObject *result = PyTuple_New(n);
    for (Py_ssize_t i = 0; result && i < n; i++) {
        PyObject *row = Py_BuildValue("(sss)", rows[i].name, rows[i].doc, rows[i].scan_doc);
        if (!row) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, i, row);
    }
    return result;
}

/* Module objects alive that share the process's CUDA resources (streams, execs, pools: exec.c, keepalive.c,
 * pinned_results.c).  A re-import (the module dropped from sys.modules and imported again) makes a second one
 * while the first may still be referenced: the resources go only with the last. */
static int g_instances;

static int
core_exec(PyObject *module)
{
    if (PyArray_ImportNumPyAPI() < 0 || gr_dtypes_init() < 0 || gr_operand_init() < 0) return -1;
    gr_module_state *state = gr_state(module);
    state->CudaError = PyErr_NewExceptionWithDoc(
        "gpureduce.CudaError", "A CUDA runtime call failed, or no CUDA device is available.", PyExc_RuntimeError, NULL);
    if (!state->CudaError || PyModule_AddObjectRef(module, "CudaError", state->CudaError) < 0) return -1;
    /* Out of device memory is also a MemoryError, as NumPy's and CuPy's are: `except MemoryError` catches all. */
    PyObject *bases = PyTuple_Pack(2, state->CudaError, PyExc_MemoryError);
    if (!bases) return -1;
    state->OutOfMemoryError = PyErr_NewExceptionWithDoc(
        "gpureduce.OutOfMemoryError", "A device (or pinned host) allocation failed: a CudaError and a MemoryError.",
        bases, NULL);
    Py_DECREF(bases);
    if (!state->OutOfMemoryError || PyModule_AddObjectRef(module, "OutOfMemoryError", state->OutOfMemoryError) < 0)
        return -1;
    state->DeviceArrayType = gr_device_array_type_new(module);
    if (!state->DeviceArrayType || PyModule_AddObjectRef(module, "DeviceArray", state->DeviceArrayType) < 0)
        return -1;
    state->OperandType = gr_operand_type_new(module);
    if (!state->OperandType || PyModule_AddObjectRef(module, "Operand", state->OperandType) < 0) return -1;
    state->PlanType = gr_plan_type_new(module);
    if (!state->PlanType || PyModule_AddObjectRef(module, "Plan", state->PlanType) < 0) return -1;
    if (PyModule_AddObjectRef(module, "call_stream", gr_call_stream_var()) < 0) return -1;

    const char *dtype_names[GR_DTYPE_COUNT];
    for (int i = 0; i < GR_DTYPE_COUNT; i++) dtype_names[i] = gr_dtype_name((gr_dtype)i);
    const char *op_names[GR_OP_COUNT];
    for (int i = 0; i < GR_OP_COUNT; i++) op_names[i] = gr_op_name((gr_op)i);
    if (add_owned(module, "op_names", gr_names_tuple(op_names, GR_OP_COUNT)) < 0) return -1;
    if (add_owned(module, "op_table", gr_operator_table()) < 0) return -1;
    if (add_owned(module, "dtype_table", gr_dtype_table()) < 0) return -1;
    if (add_owned(module, "dtype_names", gr_names_tuple(dtype_names, GR_DTYPE_COUNT)) < 0) return -1;
    if (add_owned(module, "hot_set", hot_set_dict()) < 0) return -1;
    if (add_owned(module, "cub_hot_set", cub_hot_set_tuple()) < 0) return -1;
    if (add_owned(module, "range_algorithms", range_algorithms_tuple()) < 0) return -1;
    int n_fields;
    const char *const *fields = gr_plan_segment_fields(&n_fields);
    if (add_owned(module, "SEGMENT_FIELDS", gr_names_tuple(fields, n_fields)) < 0) return -1;
    if (PyModule_AddIntConstant(module, "KIND_REDUCE", GR_KIND_REDUCE) < 0 ||
        PyModule_AddIntConstant(module, "KIND_SCAN", GR_KIND_SCAN) < 0 ||
        PyModule_AddIntConstant(module, "KIND_COPY", GR_KIND_COPY) < 0 ||
        PyModule_AddIntConstant(module, "LAUNCH_FLAT", GR_LAUNCH_FLAT) < 0 ||
        PyModule_AddIntConstant(module, "LAUNCH_AXIS", GR_LAUNCH_AXIS) < 0 ||
        PyModule_AddIntConstant(module, "LAUNCH_COPY", GR_LAUNCH_COPY) < 0 ||
        PyModule_AddIntConstant(module, "RANGES_STARTS_STOPS", GR_RANGES_STARTS_STOPS) < 0 ||
        PyModule_AddIntConstant(module, "RANGES_REDUCEAT", GR_RANGES_REDUCEAT) < 0 ||
        PyModule_AddIntConstant(module, "RANGES_GROUP_IDS", GR_RANGES_GROUP_IDS) < 0 ||
        PyModule_AddIntConstant(module, "PROP_DETERMINISTIC", GR_PROP_DETERMINISTIC) < 0 ||
        PyModule_AddIntConstant(module, "PROP_BASELINE", GR_PROP_BASELINE) < 0 ||
        PyModule_AddIntConstant(module, "PROP_DEFAULT", GR_PROP_DEFAULT) < 0 ||
        PyModule_AddIntConstant(module, "PROP_BLOCK_LOCAL", GR_PROP_BLOCK_LOCAL) < 0 ||
        PyModule_AddIntConstant(module, "PROP_AXES", GR_PROP_AXES) < 0 ||
        PyModule_AddIntConstant(module, "PROP_EXACT", GR_PROP_EXACT) < 0 ||
        PyModule_AddIntConstant(module, "OPS_EXACT_KERNEL", GR_OPS_EXACT_KERNEL) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_CHUNK_BYTES", (long)GR_RING_CHUNK_BYTES) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_TAIL_PIECES", GR_STREAM_TAIL_PIECES) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_FROM_BYTES", (long)GR_PINNED_SMALL) < 0)
        return -1;
    gr_state(module)->counted = 1;
    g_instances++;
    return 0;
}

static int
core_traverse(PyObject *module, visitproc visit, void *arg)
{
    Py_VISIT(gr_state(module)->CudaError);
    Py_VISIT(gr_state(module)->OutOfMemoryError);
    Py_VISIT(gr_state(module)->DeviceArrayType);
    Py_VISIT(gr_state(module)->OperandType);
    Py_VISIT(gr_state(module)->PlanType);
    Py_VISIT(gr_state(module)->whole_plans);
    Py_VISIT(gr_state(module)->whole_kinds);
    return 0;
}

static int
core_clear(PyObject *module)
{
    Py_CLEAR(gr_state(module)->CudaError);
    Py_CLEAR(gr_state(module)->OutOfMemoryError);
    Py_CLEAR(gr_state(module)->DeviceArrayType);
    Py_CLEAR(gr_state(module)->OperandType);
    Py_CLEAR(gr_state(module)->PlanType);
    Py_CLEAR(gr_state(module)->whole_plans);
    Py_CLEAR(gr_state(module)->whole_kinds);
    return 0;
}

static void
core_free(void *module)
{
    gr_module_state *state = gr_state((PyObject *)module);
    const int counted = state && state->counted;
    core_clear((PyObject *)module);
    if (!counted || --g_instances > 0) return; /* another instance still uses the streams and pools */
    gr_kept_release_all();
    gr_exec_release_all();
    gr_pinned_results_release_idle();
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
#ifdef Py_mod_multiple_interpreters
    /* The CUDA resources and the caches of PyTorch's and CuPy's functions are the process's, held for one
     * interpreter: a subinterpreter's import raises ImportError instead of sharing (or freeing) them. */
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
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
