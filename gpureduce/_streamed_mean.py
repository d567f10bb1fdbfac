"""``mean`` of a large host array as a sum that streams, divided on the host.

A host array of more than ``_core.STREAM_FROM_BYTES`` streams through the device chunk by chunk
(src/stream_host.c), so arrays larger than the GPU reduce too; but a mean's chunks do not combine into the
whole's mean, so the runner streams a mean only along rows that fit one chunk and otherwise stages the array
whole, which fails for an array larger than the device.  The mean kernel computes ``sum / count`` in its
accumulator anyway (float32 for float16, float64 for integers and bool, the input's own for floats and
complex, ``dtype=`` where given, as NumPy's ``_mean`` does), so here the sum, which streams in every layout,
runs on gpureduce's kernels in that accumulator, and the division by the count happens once on the host.
"""
from __future__ import annotations

import math

import numpy as np

from . import _core
from ._plan import AXIS_VARIANTS, _axes
from ._operands import ACCUMULATOR, dtype_kind


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


def mean_by_sum(reduce, a, axis, dtype, keepdims, variant):
    """NumPy's mean of host array `a` (see the module's documentation); `reduce` is gpureduce.reduce."""
    result_dtype = np.mean(np.ones((1,), a.dtype), dtype=dtype).dtype
    accumulate = _accumulator(a.dtype, dtype)
    total = reduce("sum", a, axis, accumulate, None, keepdims, variant=variant)
    count = math.prod(a.shape[i] for i in _axes("mean", axis, a.ndim))  # > 0: the array has bytes
    quotient = np.true_divide(total, count, dtype=accumulate)
    if isinstance(quotient, np.ndarray) and quotient.ndim:
        return quotient.astype(result_dtype, copy=False)
    return result_dtype.type(quotient)
