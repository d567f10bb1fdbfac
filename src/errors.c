/* errors.c -- CUDA errors and gr_status codes as Python exceptions. */
#include "ext.h"

PyObject *
gr_raise_cuda(PyObject *module, cudaError_t err, const char *what)
{
    (void)cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */
    PyErr_Format(gr_state(module)->CudaError, "%s: %s: %s", what, cudaGetErrorName(err), cudaGetErrorString(err));
    return NULL;
}

PyObject *
gr_raise_status(PyObject *module, gr_status st, int cuda_error, const char *context)
{
    switch (st) {
    case GR_OK:
        PyErr_Format(PyExc_SystemError, "%s: reported an error without one", context);
        return NULL;
    case GR_ERR_CUDA:
        return gr_raise_cuda(module, (cudaError_t)cuda_error, context);
    case GR_ERR_UNSUPPORTED_DTYPE:
        PyErr_Format(PyExc_TypeError, "%s: no kernel for this dtype", context);
        return NULL;
    case GR_ERR_UNSUPPORTED_OP:
        PyErr_Format(PyExc_ValueError, "%s: this variant does not implement this operator", context);
        return NULL;
    case GR_ERR_UNKNOWN_VARIANT:
        PyErr_Format(PyExc_ValueError, "%s: unknown variant", context);
        return NULL;
    case GR_ERR_INVALID_ARGUMENT:
    default:
        PyErr_Format(PyExc_ValueError, "%s: invalid argument (status %d)", context, (int)st);
        return NULL;
    }
}

int
gr_outcome_ok(const gr_outcome *o)
{
    return o->err == cudaSuccess && o->st == GR_OK;
}

void
gr_outcome_keep(gr_outcome *o, cudaError_t err, const char *stage)
{
    if (err != cudaSuccess && gr_outcome_ok(o)) {
        o->err = err;
        o->stage = stage;
    }
}

int
gr_outcome_raise(PyObject *module, const gr_outcome *o, const char *context)
{
    if (o->st != GR_OK) {
        gr_raise_status(module, o->st, o->cuda_error, context);
        return -1;
    }
    if (o->err != cudaSuccess) {
        gr_raise_cuda(module, o->err, o->stage);
        return -1;
    }
    return 0;
}
