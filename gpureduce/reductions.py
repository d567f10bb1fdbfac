"""Whole-array reductions with NumPy's names, result dtypes and errors: sum, prod, min, max."""
from __future__ import annotations

import numpy as np

from . import _core
from ._registry import OP_NAMES, resolve

__all__ = ["reduce", "sum", "prod", "min", "max"]

# NumPy's ufunc names, for its own error messages ("... reduction operation maximum which has no identity")
_UFUNC_NAME = {"sum": "add", "prod": "multiply", "min": "minimum", "max": "maximum"}
_HAS_IDENTITY = {"sum": True, "prod": True, "min": False, "max": False}


def _size(a):
    """Element count without touching device memory, or None when it cannot be told cheaply."""
    cai = getattr(type(a), "__cuda_array_interface__", None) and getattr(a, "__cuda_array_interface__", None)
    shape = cai.get("shape") if isinstance(cai, dict) else getattr(a, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(d, (int, np.integer)) for d in shape):
        return int(np.prod(shape, dtype=np.int64))
    return None


def reduce(op: str, a, axis=None, *, variant: str = "auto"):
    """Reduce every element of `a` with `op` ("sum", "prod", "min" or "max") using `variant`.

    `a` is a NumPy array (or anything numpy.asarray accepts) or a device array exporting
    ``__cuda_array_interface__`` (CuPy, PyTorch, Numba, gpureduce.DeviceArray), read in place.
    Returns a NumPy scalar of NumPy's result dtype (int32 sums and products give int64).
    """
    if op not in OP_NAMES:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(OP_NAMES)}")
    if axis is not None:
        raise NotImplementedError("gpureduce reduces the whole array for now: only axis=None is supported")
    v = resolve("reduce", variant, op)
    if not _HAS_IDENTITY[op] and _size(a) == 0:
        raise ValueError(f"zero-size array to reduction operation {_UFUNC_NAME[op]} which has no identity")
    return _core.reduce(v.index, OP_NAMES.index(op), a)


def sum(a, axis=None, *, variant: str = "auto"):
    """Sum of all elements, as numpy.sum(a): int32 sums to int64, an empty array sums to 0."""
    return reduce("sum", a, axis, variant=variant)


def prod(a, axis=None, *, variant: str = "auto"):
    """Product of all elements, as numpy.prod(a): integer products wrap around like NumPy's."""
    return reduce("prod", a, axis, variant=variant)


def min(a, axis=None, *, variant: str = "auto"):
    """Smallest element, as numpy.min(a): NaN propagates; an empty array raises ValueError."""
    return reduce("min", a, axis, variant=variant)


def max(a, axis=None, *, variant: str = "auto"):
    """Largest element, as numpy.max(a): NaN propagates; an empty array raises ValueError."""
    return reduce("max", a, axis, variant=variant)
