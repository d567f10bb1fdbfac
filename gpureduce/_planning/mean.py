"""``mean``'s two forms that are not one kernel's plan, written as rewrites the eager call (calls.py) picks.

* An integer or bool ``dtype=``, NumPy's way.  NumPy (``numpy/_core/_methods.py``, ``_mean``) sums in the
  requested dtype (wrapping around like any integer sum), then divides by the count with ``true_divide`` (in
  float64 for integer sums) and casts the quotient back to that dtype, truncating: ``mean(int8([100, 100, 3]),
  dtype=int8)`` is ``trunc(int8(203) / 3) = -17``.  The float mean kernel cannot give that (it never wraps), so
  the sum runs on gpureduce's kernels and the division on the result's own side: NumPy for host results, the
  result's library for device ones (CuPy, PyTorch, JAX), a host round trip for a ``gpureduce.DeviceArray``.
* A large host array, as a sum that streams, divided on the host.  A host array of more than
  ``_core.STREAM_FROM_BYTES`` streams through the device chunk by chunk (src/stream_host.c), so arrays larger than
  the GPU reduce too; but a mean's chunks do not combine into the whole's mean, so the runner streams a mean only
  along rows that fit one chunk and otherwise stages the array whole, which fails for an array larger than the
  device.  The mean kernel computes ``sum / count`` in its accumulator anyway (float32 for float16, float64 for
  integers and bool, the input's own for floats and complex, ``dtype=`` where given, as NumPy's ``_mean`` does),
  so here the sum, which streams in every layout, runs on gpureduce's kernels in that accumulator, and the
  division by the count happens once on the host.

Each step is one plan (plan.py: ``reduce_once``): nothing here calls back into the public functions.
"""
from __future__ import annotations

import importlib
import math
import warnings

import numpy as np

from .. import _core
from .operands import ACCUMULATOR, copy_into, dtype_kind, intake, to_host
from .plan import AXIS_VARIANTS, reduce_once, reduced_axes, variant_for


def _count(a, x, axis, keepdims, where, sum_):
    """The number of elements each result averages: an int, or an array of the result's shape where `where`
    is an array (summed on its own side: a device mask gives a device count)."""
    axes = reduced_axes("mean", axis, len(x.shape))
    if where is True or (isinstance(where, (bool, np.bool_)) and where):
        return math.prod(x.shape[i] for i in axes)
    if isinstance(where, (bool, np.bool_)):
        return 0
    # __dlpack__ before __cuda_array_interface__: reading a DeviceArray's interface marks it as read by a
    # consumer of unknown stream (its memory is then freed only after the whole device is done)
    if not hasattr(where, "__array_namespace__") and not hasattr(where, "__dlpack__") and \
            not hasattr(where, "__cuda_array_interface__"):
        where = np.asarray(where)
    xp = _namespace(where)
    full = xp.broadcast_to(where, tuple(x.shape))
    return sum_(full, axis=axis, keepdims=keepdims, dtype=np.int64)


def _namespace(arr):
    """The array library of `arr`: its __array_namespace__ where it has one, else its top-level module (CuPy
    before 14, PyTorch), which has broadcast_to too."""
    if isinstance(arr, (np.ndarray, np.generic)):
        return np
    ns = getattr(arr, "__array_namespace__", None)
    if ns is not None:
        return ns()
    library = importlib.import_module(type(arr).__module__.split(".")[0])
    if not hasattr(library, "broadcast_to"):
        raise TypeError(f"mean with an integer dtype= and a where= mask of type {type(arr).__name__}: its library "
                        "has no broadcast_to; pass a NumPy, CuPy, PyTorch or JAX mask")
    return library


def _divide(total, count):
    """``total / count`` in float64 (complex128 for complex) cast back to total's dtype, truncating, as NumPy's
    ``true_divide(..., casting="unsafe")``; `total` of any kind gpureduce returns."""
    if isinstance(total, np.generic):  # NumPy warns of 0 / 0 itself, as in numpy.mean
        return total.dtype.type(total / count)
    if isinstance(total, np.ndarray):
        np.true_divide(total, count, out=total, casting="unsafe")
        return total
    if isinstance(total, _core.DeviceArray):
        return _core.to_device(_divide(total.get(), to_host(count)))
    if type(total).__module__.split(".")[0] == "torch":
        import torch
        wide = torch.complex128 if total.is_complex() else torch.float64
        return (total.to(wide) / count).to(total.dtype)
    wide = np.promote_types(np.dtype(str(total.dtype)), np.float64)
    return (total.astype(wide) / count).astype(total.dtype)


def integer_mean(a, axis, dtype, out, keepdims, where, variant):
    """``mean(a, axis, dtype, out, keepdims, where=where, variant=variant)`` for an integer or bool `dtype`."""
    def sum_(arr, **kw):
        return reduce_once("sum", arr, variant=variant, **kw)

    variant_for("reduce", "mean", variant)  # a variant that has no mean says so, whatever the dtype
    x = intake(a)
    count = _count(a, x, axis, keepdims, where, sum_)
    if isinstance(count, int) and count == 0 and where is True and out is None:
        shape = [e for i, e in enumerate(x.shape) if i not in reduced_axes("mean", axis, len(x.shape))]
        if math.prod(shape) > 0:
            warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)
    if out is None:
        return _divide(sum_(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where), count)
    # NumPy sums into out (cast to its dtype), then divides out in place in out's dtype
    sum_(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    out_desc = intake(out, "out=")
    if out_desc.host:
        np.true_divide(out, to_host(count), out=out, casting="unsafe")
        return out
    return copy_into(out, out_desc, _divide(out, count))



def streams_as_sum(a, dtype, out, where, variant):
    """Whether mean(a, ...) should be a streamed sum divided on the host: a large host array, no where=/out=,
    a floating (or no) dtype=, an axis variant."""
    return (isinstance(a, np.ndarray) and a.nbytes > _core.STREAM_FROM_BYTES and out is None and
            (where is True) and variant in AXIS_VARIANTS["reduce"] and
            (dtype is None or dtype_kind(np.dtype(dtype)) in "fc") and dtype_kind(a.dtype) in "biufc")


def _accumulator(x_dtype, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    if x_dtype.kind in "biu":
        return np.dtype(np.float64)
    return ACCUMULATOR.get(x_dtype, x_dtype)


def mean_by_sum(a, axis, dtype, keepdims, variant):
    """NumPy's mean of host array `a` as a streamed sum divided on the host (see the module's documentation)."""
    result_dtype = np.mean(np.ones((1,), a.dtype), dtype=dtype).dtype
    accumulate = _accumulator(a.dtype, dtype)
    total = reduce_once("sum", a, axis, accumulate, None, keepdims, variant=variant)
    count = math.prod(a.shape[i] for i in reduced_axes("mean", axis, a.ndim))  # > 0: the array has bytes
    quotient = np.true_divide(total, count, dtype=accumulate)
    if isinstance(quotient, np.ndarray) and quotient.ndim:
        return quotient.astype(result_dtype, copy=False)
    return result_dtype.type(quotient)
