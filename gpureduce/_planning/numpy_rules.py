"""What the nan functions (nansum, nanprod, nanmin, nanmax, nanmean, nanargmin, nanargmax, nanvar, nanstd) decide
around their kernels, as NumPy's do.

* Integer and bool inputs hold no NaN: they run the plain operator (nansum -> sum, the `exact` column of
  cuda/abi/ops.def), which also gives NumPy's errors for them (an empty nanmin of ints is min's ValueError).
* NumPy warns where a slice has no number: nanmin and nanmax "All-NaN slice encountered" (the result is NaN),
  nanmean "Mean of empty slice" (NaN too), nanvar and nanstd "Degrees of freedom <= 0 for slice." (NaN).
  gpureduce warns the same for host inputs, and nanmin and nanmax also for 0-d results of device inputs; an
  array result of a device input is not looked at (that would cost a device reduction and a wait), nor is a
  device input's nanmean, nanvar or nanstd (their NaN may come from inf - inf).
* nanargmin and nanargmax raise NumPy's ValueError "All-NaN slice encountered" when a slice has no number: their
  kernels give position -1 there (cuda/primitives/reducers.cuh: NanArgReducer), which is looked for on every
  result, a device one too (copied to the host: the call waits).  An out= holds the result when it raises.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from .operands import dtype_kind, intake, to_host
from .._registry import OPERATORS

EXACT = {op.name: op.exact for op in OPERATORS if op.exact != op.name}  # nansum -> sum, ...


class _NoValueType:
    """The "not given" default of `initial` (NumPy's own sentinel is private).  One instance, also after pickling:
    Dask's distributed workers get a call's arguments pickled, and `initial is NoValue` must hold there too."""
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self):
        return (_NoValueType, ())

    def __repr__(self):
        return "<no value>"


NoValue = _NoValueType()


def given(initial):
    return initial is not NoValue and initial is not getattr(np, "_NoValue", NoValue)


def variance_ddof(op, ddof, correction, mean):
    """var's and std's delta degrees of freedom from NumPy's keywords (ddof, or the array API's correction; mean=
    is refused: the kernels compute the mean in the same pass as the deviations)."""
    if mean is not NoValue:
        raise TypeError(f"{op}() does not take mean=: gpureduce computes the mean in the same pass as the "
                        "deviations")
    if correction is not NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def norm_order(ord):
    """vector_norm's ord as a float, with NumPy's ValueError for a string and a TypeError for what is not a real
    number."""
    if ord is None:
        return 2.0
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if not isinstance(ord, numbers.Real):
        raise TypeError(f"vector_norm(ord=...) must be a real number, inf or -inf (or None for 2); got "
                        f"{type(ord).__name__}")
    return float(ord)


def check_norm_axis(axis):
    """vector_norm's axis: None, an int or a tuple; NumPy refuses a list too."""
    if not (axis is None or isinstance(axis, tuple) or hasattr(axis, "__index__")):
        raise TypeError("'axis' must be None, an integer or a tuple of integers")


def operator_for(op, a):
    """The operator that runs `op` on `a`: the plain one where `a` holds no floating or complex numbers."""
    return operator_for_dtype(op, intake(a).dtype) if op in EXACT else op


def operator_for_dtype(op, dtype):
    """The operator that runs `op` on elements of `dtype`: integers and bool hold no NaN, so nansum is sum."""
    return EXACT[op] if op in EXACT and dtype_kind(np.dtype(dtype)) not in "fc" else op


# the operators check_like_numpy looks at the result of (the others' calls skip it)
CHECKED_OPS = frozenset({"nanargmin", "nanargmax", "nanvar", "nanstd", "nanmin", "nanmax", "nanmean"})


def check_like_numpy(op, a, result, axis, where, ddof):
    """NumPy's RuntimeWarning of a nan function whose result has a slice without a number; nanargmin's and
    nanargmax's ValueError."""
    if op in ("nanargmin", "nanargmax"):
        if np.any(np.asarray(to_host(result)) < 0):
            raise ValueError("All-NaN slice encountered")
        return
    if op in ("nanvar", "nanstd"):
        _warn_few_numbers(a, result, axis, where, ddof)
        return
    if op not in ("nanmin", "nanmax", "nanmean"):
        return
    x = intake(a)  # `a` may be the call's operand already (calls.py): no second handshake
    if not x.host or dtype_kind(x.dtype) not in "fc":  # a device result is not waited for
        return
    got = np.asarray(to_host(result))
    if not np.isnan(got).any():
        return
    if op == "nanmean":
        _warn_empty_mean(x.array if x.host else None, axis, where)  # the values the intake read
    else:
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)


def _warn_empty_mean(data, axis, where):
    """nanmean's "Mean of empty slice": a slice whose taken elements are all NaN.  A NaN mean may also come from
    the data (inf - inf), so only a host input, whose NaNs can be looked at, is warned about; a slice empty by
    its shape or by `where` alone was warned about by the plan already (gpureduce/_planning/plan.py), as NumPy warns
    once."""
    if data is None:
        return
    data = np.asarray(data)
    taken = np.broadcast_to(np.asarray(where, dtype=bool), data.shape)
    if data.size == 0 or np.all(~taken, axis=axis).any():
        return
    if np.all(np.isnan(data) | ~taken, axis=axis).any():
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=5)


def _warn_few_numbers(a, result, axis, where, ddof):
    """nanvar's and nanstd's "Degrees of freedom <= 0 for slice.": a result whose numbers (taken elements not NaN)
    are no more than ddof, for a host input, whose NaNs can be looked at.  Such a result is NaN (the kernels give
    NaN there), so the input is counted only when some result is."""
    x = intake(a)  # `a` may be the call's operand already (calls.py): no second handshake
    if not x.host or dtype_kind(x.dtype) not in "fc" or not np.isnan(np.asarray(to_host(result))).any():
        return
    data = x.array  # the values the intake read (a host DLPack producer is no array NumPy can read again)
    numbers = ~np.isnan(data) & np.broadcast_to(np.asarray(where, dtype=bool), data.shape)
    if np.any(np.sum(numbers, axis=axis) - ddof <= 0):
        warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=5)
