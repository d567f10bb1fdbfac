/* whole_calls.c -- a whole-array call run again from its plan: _core.call_whole(kind, op, variant, exclusive, a).
 *
 * A reduction or scan of a whole array with the default arguments (gpureduce.sum(t), cumsum(x)) is planned by
 * gpureduce/_planning/plan.py once per key (kind, operator as the caller named it, variant, exclusive, the input's
 * type, its device, its layout: dtype, host or device, shape, strides).  The planner keeps that plan here as a
 * template (remember_whole) with how the call's result is made; a later call with the same key reads its input,
 * has the input's library make its result, copies the template with these operands (verified as
 * Plan.with_operands verifies them) and runs it, with no Python in between: most of what a small call on device
 * data costs is not the kernel (issue 38).
 * With with_operand, a call it runs gives (result, the input's Operand), for NumPy's checks after the kernels (the nan
 * functions') without a second handshake.  An input type it holds nothing for goes back to the planner untouched
 * (NotImplemented); a key it does not hold,
 * or a result its library would not make (its allocation failed: the planner raises the library's error as
 * gpureduce's), goes back as the input's Operand, so that the planner asks the input's producer nothing more (one
 * DLPack handshake a call); the planner plans the call and keeps it here where it can.
 *
 * The entry of a key, as remember_whole takes it:
 *   template  the plan without its operands (Plan.with_operands(None)): the result's shape and dtype are its own
 *   maker     where the input's library makes the result (CuPy, PyTorch: written in place on the caller's stream),
 *             gpureduce/_planning/results.result_maker's (allocate, args, pointer): allocate(*args) is the array,
 *             pointer(array) its address; else None: the runner makes it
 *   convert   None, or gpureduce/_planning/results.in_kind_of: convert(a) turns the runner's result into `a`'s kind
 *   view      None, or (shape, strides): the input seen flattened (a scan of the whole array)
 */
#include "ext.h"

#define WHOLE_CALLS_KEPT 4096 /* keys held at most: a process that sees many layouts plans them again */

enum { E_TEMPLATE, E_MAKER, E_CONVERT, E_VIEW, E_COUNT };
enum { M_ALLOCATE, M_ARGS, M_POINTER, M_COUNT };

/* (kind, op, variant, exclusive, type(obj), device, layout): the device too, where the result's maker allocates */
static PyObject *
whole_key(PyObject *kind, PyObject *op, PyObject *variant, PyObject *exclusive, PyObject *obj, const gr_operand *x)
{
    const int excl = PyObject_IsTrue(exclusive);
    if (excl < 0) return NULL;
    PyObject *layout = gr_operand_layout_key(x);
    PyObject *device = layout ? PyLong_FromLong(x->device) : NULL;
    PyObject *key = device ? PyTuple_Pack(7, kind, op, variant, excl ? Py_True : Py_False, (PyObject *)Py_TYPE(obj),
                                          device, layout)
                           : NULL;
    Py_XDECREF(device);
    Py_XDECREF(layout);
    return key;
}

/* The result the input's library makes by `maker` (see the top), as (array, its out= Operand) in *made and *out:
 * 0; or 1 where it made none (an allocation that failed: the planner makes it again and raises its error as
 * gpureduce's); -1 with an exception that is not an Exception's (KeyboardInterrupt). */
static int
make_result(PyObject *module, PyObject *maker, PyObject *x, const gr_plan *tmpl, PyObject **made, PyObject **out)
{
    *made = PyObject_Call(PyTuple_GET_ITEM(maker, M_ALLOCATE), PyTuple_GET_ITEM(maker, M_ARGS), NULL);
    PyObject *address = *made ? PyObject_CallOneArg(PyTuple_GET_ITEM(maker, M_POINTER), *made) : NULL;
    void *ptr = address ? PyLong_AsVoidPtr(address) : NULL;
    Py_XDECREF(address);
    if (address && !PyErr_Occurred()) {
        *out = gr_operand_result_like(x, *made, ptr, tmpl->out_dtype, tmpl->res_ndim, tmpl->res_shape);
        if (*out) return 0;
    }
    Py_CLEAR(*made);
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
    PyErr_Clear();
    return 1;
}

PyObject *
gr_py_call_whole(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "call_whole(kind, op, variant, exclusive, a, with_operand=False) takes 5 or 6 "
                                         "arguments");
        return NULL;
    }
    const int with_operand = nargs == 6 ? PyObject_IsTrue(args[5]) : 0; /* (result, operand): NumPy's checks read it */
    if (with_operand < 0) return NULL;
    gr_module_state *state = gr_state(module);
    PyObject *a = args[4];
    /* only the types a plan was kept for: an ndarray subclass (a masked array), a Dask array and every other kind
     * go to the planner without a handshake here */
    if (!state->whole_kinds) Py_RETURN_NOTIMPLEMENTED;
    const int known = PySet_Contains(state->whole_kinds, (PyObject *)Py_TYPE(a));
    if (known <= 0) return known < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    PyObject *x = gr_intake(module, a, "the input");
    if (!x) return NULL;
    PyObject *key = whole_key(args[0], args[1], args[2], args[3], a, gr_operand_read(x));
    PyObject *entry = key ? PyDict_GetItemWithError(state->whole_plans, key) : NULL; /* borrowed */
    Py_XDECREF(key);
    if (!entry) { /* the planner's, with the operand read */
        if (!PyErr_Occurred()) return x;
        Py_DECREF(x);
        return NULL;
    }
    Py_INCREF(entry); /* a call below may run Python that clears the cache */
    PyObject *result = NULL, *in = NULL, *made = NULL, *out = NULL, *plan = NULL;
    PyObject *view = PyTuple_GET_ITEM(entry, E_VIEW);
    in = view == Py_None ? Py_NewRef(x)
                         : gr_operand_view(x, PyTuple_GET_ITEM(view, 0), PyTuple_GET_ITEM(view, 1));
    if (!in) goto done;
    PyObject *maker = PyTuple_GET_ITEM(entry, E_MAKER), *tmpl = PyTuple_GET_ITEM(entry, E_TEMPLATE);
    if (maker != Py_None) {
        const gr_plan *t = gr_plan_template_of(module, tmpl);
        const int rc = t ? make_result(module, maker, x, t, &made, &out) : -1;
        if (rc < 0) goto done;
        if (rc > 0) { /* the library made none this time: the planner decides */
            result = Py_NewRef(x);
            goto done;
        }
    }
    if (!(plan = gr_plan_with_operands(tmpl, in, out ? out : Py_None))) goto done;
    result = gr_py_run(module, plan);
    PyObject *convert = PyTuple_GET_ITEM(entry, E_CONVERT);
    if (result && convert != Py_None) {
        PyObject *post = PyObject_CallOneArg(convert, a);
        if (post && post != Py_None) Py_SETREF(result, PyObject_CallOneArg(post, result));
        else if (!post) Py_CLEAR(result);
        Py_XDECREF(post);
    }
    if (result && with_operand) Py_SETREF(result, PyTuple_Pack(2, result, x));
done:
    Py_XDECREF(plan);
    Py_XDECREF(out);
    Py_XDECREF(made);
    Py_XDECREF(in);
    Py_DECREF(x);
    Py_DECREF(entry);
    return result;
}

PyObject *
gr_py_remember_whole(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "remember_whole(kind, op, variant, exclusive, x, template, maker, convert, "
                                         "view) takes 9 arguments");
        return NULL;
    }
    gr_module_state *state = gr_state(module);
    PyObject *x = args[4], *maker = args[6], *view = args[8];
    const gr_operand *xo = gr_operand_of(module, x, "remember_whole's x");
    if (!xo || !gr_plan_template_of(module, args[5])) return NULL;
    if ((maker != Py_None && (!PyTuple_Check(maker) || PyTuple_GET_SIZE(maker) != M_COUNT ||
                              !PyTuple_Check(PyTuple_GET_ITEM(maker, M_ARGS)))) ||
        (view != Py_None && (!PyTuple_Check(view) || PyTuple_GET_SIZE(view) != 2))) {
        PyErr_SetString(PyExc_TypeError, "remember_whole: maker is None or (allocate, args tuple, pointer), view None "
                                         "or (shape, strides)");
        return NULL;
    }
    if (!state->whole_plans && !(state->whole_plans = PyDict_New())) return NULL;
    if (!state->whole_kinds && !(state->whole_kinds = PySet_New(NULL))) return NULL;
    if (PyDict_GET_SIZE(state->whole_plans) >= WHOLE_CALLS_KEPT) PyDict_Clear(state->whole_plans);
    PyObject *obj = PyObject_GetAttrString(x, "obj");
    if (!obj) return NULL;
    PyObject *key = whole_key(args[0], args[1], args[2], args[3], obj, xo);
    PyObject *entry = key ? PyTuple_Pack(E_COUNT, args[5], maker, args[7], view) : NULL;
    const int rc = entry ? PyDict_SetItem(state->whole_plans, key, entry) : -1;
    const int added = rc < 0 ? -1 : PySet_Add(state->whole_kinds, (PyObject *)Py_TYPE(obj));
    Py_XDECREF(entry);
    Py_XDECREF(key);
    Py_DECREF(obj);
    if (added < 0) return NULL;
    Py_RETURN_NONE;
}
