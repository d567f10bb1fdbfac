/* errors.c -- CUDA errors and gr_status codes as Python exceptions. */
#include "ext.h"

#include "abi/jit.h"

#include <stdlib.h>

PyObject *
gr_raise_cuda(PyObject *module, cudaError_t err, const char *what)
{
    (void)cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */
    gr_module_state *state = gr_state(module);
    PyObject *type = err == cudaErrorMemoryAllocation ? state->OutOfMemoryError : state->CudaError;
    PyErr_Format(type, "%s: %s: %s", what, cudaGetErrorName(err), cudaGetErrorString(err));
    return NULL;
}

PyObject *
gr_raise_no_device(PyObject *module, cudaError_t err)
{
    (void)cudaGetLastError();
    PyObject *type = gr_state(module)->CudaError;
    int driver = 0, runtime = 0; /* cudaDriverGetVersion gives 0 when no driver is installed */
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    (void)cudaGetLastError();
    const char *name = cudaGetErrorName(err);
    /* Every text starts the same way, so callers (and tests) can match the case as a whole. */
    if (err == cudaErrorInsufficientDriver && driver == 0) {
        PyErr_Format(type,
                     "no CUDA device is available: no NVIDIA driver was found (%s); gpureduce needs an NVIDIA driver "
                     "and GPU to run its kernels (import works without one)",
                     name);
    }
    else if (err == cudaErrorInsufficientDriver) {
        PyErr_Format(type,
                     "no CUDA device is available: the NVIDIA driver supports CUDA %d.%d, older than the CUDA %d.%d "
                     "runtime gpureduce was built with (%s); update the NVIDIA driver",
                     driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10, name);
    }
    else if (err == cudaErrorNoDevice) {
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        PyErr_Format(type, "no CUDA device is available: the NVIDIA driver (CUDA %d.%d) sees no GPU (%s); %s%s%s",
                     driver / 1000, driver % 1000 / 10, name,
                     visible ? "CUDA_VISIBLE_DEVICES is set to \"" : "nvidia-smi lists the GPUs the driver sees",
                     visible ? visible : "", visible ? "\": unset it or name a GPU that exists" : "");
    }
    else {
        PyErr_Format(type, "no CUDA device is available: initialising CUDA failed (%s: %s)", name,
                     cudaGetErrorString(err));
    }
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
    case GR_ERR_JIT: /* the calling thread's reason (abi/jit.h): the device work ran on this thread */
        PyErr_Format(PyExc_RuntimeError, "%s: %s", context, gr_jit_error());
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
