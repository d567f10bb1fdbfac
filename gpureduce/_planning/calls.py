"""The eager call: a reduction or scan of an array in memory, done now (host or device).

It is the public functions' work after their Dask dispatch, each chunk's work under gpureduce.dask, and the real
implementation of the PyTorch custom operators.  ``reduce``: a numpy.ma or memmap input (subclasses.py), mean's
two rewrites (mean.py), an exact sum or cumsum of a complex array (exact_complex.py: one of each part), else one plan
(plan.py) run by the C runner, then its post and NumPy's warnings and errors around the kernels (numpy_rules.py).
``scan`` likewise; ``logsumexp`` adds SciPy's weights and sign.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _core
from .exact_complex import reduce_exact_complex, runs_exact_complex, scan_exact_complex, scans_exact_complex
from .mean import integer_mean, mean_by_sum, streams_as_sum
from .numpy_rules import CHECKED_OPS, NoValue, check_like_numpy, operator_for_dtype
from .operands import intake, to_host
from .plan import normalize_axis_tuple, prepare_reduce, prepare_scan, run
from .results import host_in_kind_of
from .subclasses import reduce_subclass, scan_subclass


def reduce(op, a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=True, variant="auto",
           ddof=None, ord=None):
    """``gpureduce.reduce(op, a, ...)`` of an array that is not a Dask array."""
    x = None
    if axis is None and dtype is None and out is None and keepdims is False and initial is NoValue and \
            where is True and ddof is None and ord is None and type(variant) is str:
        checks = op in CHECKED_OPS  # NumPy's checks read the operand after the kernels: ask for it
        done = _core.call_whole(_core.KIND_REDUCE, op, variant, False, a, checks)  # planned before: run from C
        if type(done) is _core.Operand:  # read, but not planned yet
            x = done
        elif done is not NotImplemented:
            if not checks:
                return done
            result, x = done
            checked = operator_for_dtype(op, x.dtype)  # (nanmin of integers is min: nothing to check)
            if checked in CHECKED_OPS:
                check_like_numpy(checked, x, result, None, True, 0)
            return result
    if type(a) is not np.ndarray and isinstance(a, np.ndarray):  # a subclass: memmap, masked array, or refused
        return reduce_subclass(reduce, op, a, axis, dtype, out, keepdims, initial, where, variant, ddof, ord)
    if x is None:
        x = intake(a)  # the one handshake with `a`'s producer: the planner and NumPy's checks take the operand
    named, op = op, operator_for_dtype(op, x.dtype)  # nanmean of integers is their mean, and so on
    if runs_exact_complex(op, x, dtype, variant):
        return reduce_exact_complex(reduce, op, a, x, axis, dtype, out, keepdims, initial, where, variant)
    if op == "mean" and streams_as_sum(a, dtype, out, where, variant):
        return mean_by_sum(a, axis, dtype, keepdims, variant)
    if op == "mean" and dtype is not None and np.dtype(dtype).kind in "biu":
        return integer_mean(a, axis, dtype, out, keepdims, where, variant)
    # the plan under the name the caller used: the one call_whole above looks up
    result = run(prepare_reduce(named, x, axis, dtype, out, keepdims, initial, where, variant, ddof, ord))
    if op in CHECKED_OPS:
        check_like_numpy(op, x, result, axis, where, ddof or 0)
    return result


def scan(op, a, axis=None, dtype=None, out=None, exclusive=False, variant="auto"):
    """``gpureduce.scan(op, a, ...)`` of an array that is not a Dask array."""
    x = None
    if axis is None and dtype is None and out is None and (exclusive is False or exclusive is True) and \
            type(variant) is str:
        done = _core.call_whole(_core.KIND_SCAN, op, variant, exclusive, a)  # planned before: run from C
        if type(done) is _core.Operand:  # read, but not planned yet: the planner takes the operand
            x = done
        elif done is not NotImplemented:
            return done
    if type(a) is not np.ndarray and isinstance(a, np.ndarray):  # a subclass: memmap, masked array, or refused
        return scan_subclass(scan, op, a, axis, dtype, out, exclusive, variant)
    if x is None:
        x = intake(a)
    if scans_exact_complex(op, x, dtype, variant):
        return scan_exact_complex(scan, op, a, x, axis, dtype, out, exclusive, variant)
    return run(prepare_scan(op, x, axis, dtype, out, exclusive, variant))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, variant="auto"):
    """``gpureduce.logsumexp(a, ...)`` of an array that is not a Dask array: one read of `a` (and `b`)."""
    if b is not None:
        return _weighted_logsumexp(a, axis, b, keepdims, return_sign, variant)
    result = reduce("logsumexp", a, axis, None, None, keepdims, variant=variant)
    if not return_sign:
        return result
    x = intake(a)
    res = np.asarray(to_host(result))
    reduced = range(len(x.shape)) if axis is None else normalize_axis_tuple(axis, len(x.shape))
    taken = math.prod(x.shape[i] for i in reduced)  # elements per result: the same for every result
    sign = np.where(np.isnan(res), np.nan, -1.0 if taken == 0 else np.where(res == -np.inf, 0.0, 1.0))
    sign = sign.astype(res.dtype)
    if x.host:
        return result, (sign[()] if sign.ndim == 0 else sign)
    return result, host_in_kind_of(a, sign)  # a 0-d one too, as the result


def _weighted_logsumexp(a, axis, b, keepdims, return_sign, variant):
    """logsumexp with weights: one read of `a` and `b` (log|sum| in a second read when the sign is asked for)."""
    def plan_of(what):
        return prepare_reduce("logsumexp", a, axis, None, None, keepdims, variant=variant, weights=b,
                              weighted_result=what)

    if not return_sign:
        return run(plan_of("log"))  # NaN where the weighted sum is negative, as SciPy's
    planned = plan_of("log_abs")
    result = run(planned)
    plan = planned[0]
    if math.prod(plan.a.shape) > 0 or math.prod(plan.shape) == 0:
        return result, run(plan_of("sign"))
    # every slice is empty: SciPy's sign there is -1 (the kernel's would be 0, the sign of an empty sum)
    sign = np.full(plan.shape, -1.0, np.dtype(_core.dtype_names[plan.result_dtype]))
    if plan.a.host:
        return result, (sign[()] if sign.ndim == 0 else sign)
    return result, host_in_kind_of(a, sign)
