/* py_values.c -- the Python values the module builds from C arrays: tuples of ints and names, a list of floats,
 * and any tuple whose items a function makes (the operator and variant tables).  A leaf every file may call. */
#include "ext.h"

PyObject *
gr_tuple_of(const void *items, Py_ssize_t count, gr_item_fn item)
{
    PyObject *t = PyTuple_New(count);
    if (!t) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *x = item(items, i);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *
int64_item(const void *items, Py_ssize_t i)
{
    return PyLong_FromLongLong(((const int64_t *)items)[i]);
}

static PyObject *
name_item(const void *items, Py_ssize_t i)
{
    return PyUnicode_FromString(((const char *const *)items)[i]);
}

PyObject *
gr_int64_tuple(const int64_t *v, int count)
{
    return gr_tuple_of(v, count, int64_item);
}

PyObject *
gr_names_tuple(const char *const *names, int count)
{
    return gr_tuple_of(names, count, name_item);
}

static PyObject *
float_item(const void *items, Py_ssize_t i)
{
    return PyFloat_FromDouble(((const double *)items)[i]);
}

PyObject *
gr_float_list(const double *v, int count)
{
    PyObject *t = gr_tuple_of(v, count, float_item);
    PyObject *list = t ? PySequence_List(t) : NULL;
    Py_XDECREF(t);
    return list;
}
