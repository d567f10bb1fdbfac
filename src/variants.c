/* variants.c -- the registry's C face: the variant and operator tables and the dtype rules, as the Python layer reads
 * them once (gpureduce/_registry.py, gpureduce/_planning/plan.py), and the check the runner makes of a plan's
 * variant. */
#include "ext.h"

#include <string.h>

/* The operators (cuda/abi/ops.def): their kernel side and their NumPy side, the table Python reads
 * (gpureduce._core.op_table). */
static const struct operator_row {
    const char *name;
    int scans, flat;
    const char *result;
    gr_op exact;
    gr_operands operands;
    const char *operands_name;
    const char *keywords; /* NumPy's optional keywords it takes, of dtype, initial, where */
    int identity;         /* an empty reduction, or one under where=, needs no initial= */
    const char *ufunc;    /* NumPy's ufunc, as its messages name it; "" for none */
    int zero_d_axis;      /* NumPy reduces a 0-d array over an int axis 0 (or -1), as ufunc.reduce does */
    const char *param;    /* what its parameter is: NONE, DDOF, ORD, CONJ, WEIGHTS */
    const char *reference; /* the function gpureduce.testing compares with */
    const char *bound;    /* gpureduce.testing's error-bound family: SUM, PROD, LOG, OWN, EXACT */
} kOperators[GR_OP_COUNT] = {
#define GR_OP(NAME, name, scans, flat, result, exact, operands, keywords, identity, ufunc, zero_d_axis, param, \
              reference, bound, ...)                                                                             \
    [GR_OP_##NAME] = {#name,         0 GR_IF_##scans(+1), 0 GR_IF_##flat(+1), #result, GR_OP_##exact,                \
                      GR_OPERANDS_##operands, #operands, keywords, 0 GR_IF_##identity(+1), ufunc,                    \
                      0 GR_IF_##zero_d_axis(+1), #param, reference, #bound},
#include "abi/ops.def"
#undef GR_OP
};

const char *
gr_op_name(gr_op op)
{
    return op >= 0 && op < GR_OP_COUNT ? kOperators[op].name : "?";
}

gr_operands
gr_op_operands(gr_op op)
{
    return op >= 0 && op < GR_OP_COUNT ? kOperators[op].operands : GR_OPERANDS_ONE;
}

int
gr_op_has_parameter(gr_op op)
{
    return op >= 0 && op < GR_OP_COUNT && strcmp(kOperators[op].param, "NONE") != 0;
}

/* op_table: one (name, scans, flat, result rule, the operator of integer and bool inputs, operands: "ONE", "TWO" or
 * "ONE_OR_TWO", keywords, identity, ufunc, zero_d_axis, param, reference, bound) row per gr_op code: ops.def's
 * columns in order. */
static PyObject *
operator_row_item(const void *items, Py_ssize_t i)
{
    const struct operator_row *r = &((const struct operator_row *)items)[i];
    return Py_BuildValue("(sNNssssNsNsss)", r->name, PyBool_FromLong(r->scans), PyBool_FromLong(r->flat), r->result,
                         kOperators[r->exact].name, r->operands_name, r->keywords, PyBool_FromLong(r->identity),
                         r->ufunc, PyBool_FromLong(r->zero_d_axis), r->param, r->reference, r->bound);
}

PyObject *
gr_operator_table(void)
{
    return gr_tuple_of(kOperators, GR_OP_COUNT, operator_row_item);
}

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
    /* the axis variants run every operator of their kind: a reduction variant's mean, argmin and argmax too
     * (gpureduce/_registry.py: implements) */
    const int axis_op = (table[variant].properties & GR_PROP_AXES) && op >= 0 && op < GR_OP_COUNT &&
                        (kind == GR_KIND_REDUCE || kOperators[op].scans);
    if (op < 0 || op >= GR_OP_COUNT || !((table[variant].ops & GR_OPBIT(op)) || axis_op)) {
        PyErr_Format(PyExc_ValueError, "variant '%s' does not implement operator %ld", table[variant].name, op);
        return NULL;
    }
    return &table[variant];
}

static PyObject *
variant_row_item(const void *items, Py_ssize_t i)
{
    const gr_variant_info *v = &((const gr_variant_info *)items)[i];
    return Py_BuildValue("(nisIIIss)", i, (int)v->kind, v->name, v->properties, v->ops, v->dtypes, v->seed, v->doc);
}

PyObject *
gr_py_variant_table(PyObject *module, PyObject *unused)
{
    int count;
    const gr_variant_info *table = gr_variant_table(&count);
    return gr_tuple_of(table, count, variant_row_item);
}

/* result_dtype(kind, op, in) -> the dtype code NumPy's function gives with dtype=None
 * (gr_default_result_dtype); GR_DTYPE_COUNT where there is none. */
PyObject *
gr_py_result_dtype(PyObject *module, PyObject *args)
{
    int kind, op, in;
    if (!PyArg_ParseTuple(args, "iii", &kind, &op, &in)) return NULL;
    if ((kind != GR_KIND_REDUCE && kind != GR_KIND_SCAN) || op < 0 || op >= GR_OP_COUNT || in < 0 ||
        in >= GR_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "result_dtype(): bad kind %d, operator %d or dtype %d", kind, op, in);
        return NULL;
    }
    return PyLong_FromLong((long)gr_default_result_dtype((gr_kind)kind, (gr_op)op, (gr_dtype)in));
}

/* groups_scatter_runs(op, in, out, length, accumulators) -> bool: a reduction over group ids (RANGES_GROUP_IDS)
 * runs that pair along an axis of that length with that many accumulators (gr_groups_scatter_runs). */
PyObject *
gr_py_groups_scatter_runs(PyObject *module, PyObject *args)
{
    int op, in, out;
    long long length, accumulators;
    if (!PyArg_ParseTuple(args, "iiiLL", &op, &in, &out, &length, &accumulators)) return NULL;
    return PyBool_FromLong(gr_groups_scatter_runs((gr_op)op, (gr_dtype)in, (gr_dtype)out, (int64_t)length,
                                                  (int64_t)accumulators));
}

/* segments_supported(kind, variant, op, in, out) -> bool: the variant runs that pair along axes with no cast
 * first (gr_segments_supported). */
PyObject *
gr_py_segments_supported(PyObject *module, PyObject *args)
{
    int kind, variant, op, in, out;
    if (!PyArg_ParseTuple(args, "iiiii", &kind, &variant, &op, &in, &out)) return NULL;
    if (variant < 0 || variant >= GR_VARIANT_COUNT || op < 0 || op >= GR_OP_COUNT || in < 0 || in >= GR_DTYPE_COUNT ||
        out < 0 || out >= GR_DTYPE_COUNT)
        Py_RETURN_FALSE;
    return PyBool_FromLong(gr_segments_supported((gr_kind)kind, (gr_variant)variant, (gr_op)op, (gr_dtype)in,
                                                 (gr_dtype)out));
}
