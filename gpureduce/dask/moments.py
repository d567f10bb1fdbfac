"""var, std, nanvar and nanstd of Dask arrays (gpureduce.dask): each chunk's count, mean and M2 (the sum of
squared deviations from that mean), merged pairwise with Chan, Golub and LeVeque's formula.

A chunk's partial comes from gpureduce's kernels, in float64 whatever the input (complex128 for a complex mean):
its mean, and its variance times its count (the kernels' shifted sums lose nothing to a large common offset).
Two partials merge as

    n = n_a + n_b,   mean = mean_a + d n_b / n,   M2 = M2_a + M2_b + |d|^2 n_a n_b / n,   d = mean_b - mean_a,

every term of M2 a sum of nonnegative ones, never the difference of a sum of squares and a squared sum, which
a large offset turns into noise.  ddof is applied once, at the end: M2 / max(n - ddof, 0) for var (NumPy's: inf
or NaN where n <= ddof), NaN there for nanvar; either warns "Degrees of freedom <= 0 for slice", as NumPy's.  A
complex input's variance is real, the mean of |x - mean|^2, as NumPy's.
"""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import dask.array as da

from .._planning.numpy_rules import operator_for_dtype
from .._planning.operands import dtype_kind
from .._planning.numpy_rules import NoValue, variance_ddof
from . import chunks
from .chunks import (checked_array, filled_partial, kernel_options, kernel_reduce, one_level, reduced_size, result_meta,
                     scalar_if_0d, whole_arrays_only)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=NoValue, split_every=None,
        variant="auto"):
    """numpy.var of a Dask array: the chunks' (count, mean, M2) merged pairwise (see the module's documentation);
    float64 inside, the result in NumPy's dtype (real for complex inputs) or `dtype` (a float dtype)."""
    return _moments("var", a, axis, dtype, out, variance_ddof("var", ddof, correction, NoValue), keepdims, split_every,
                    variant)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=NoValue, split_every=None,
        variant="auto"):
    """numpy.std of a Dask array: the square root of var's result, taken in float64 before the result's rounding."""
    return _moments("std", a, axis, dtype, out, variance_ddof("std", ddof, correction, NoValue), keepdims, split_every,
                    variant)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=NoValue, split_every=None,
           variant="auto"):
    """numpy.nanvar of a Dask array: var of each slice's numbers (NaN skipped); NaN and NumPy's warning for a slice
    with no more than `ddof` numbers."""
    return _moments("nanvar", a, axis, dtype, out, variance_ddof("nanvar", ddof, correction, NoValue), keepdims,
                    split_every, variant)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=NoValue, split_every=None,
           variant="auto"):
    """numpy.nanstd of a Dask array: the square root of nanvar's result."""
    return _moments("nanstd", a, axis, dtype, out, variance_ddof("nanstd", ddof, correction, NoValue), keepdims,
                    split_every, variant)


def _moments(op, a, axis, dtype, out, ddof, keepdims, split_every, variant):
    a = checked_array(a)
    whole_arrays_only(op, variant)  # an unknown variant fails here, not at compute()
    if dtype is not None and dtype_kind(np.dtype(dtype)) != "f":
        raise TypeError(f"{op}() with dtype={np.dtype(dtype)}: gpureduce computes a variance in a floating dtype "
                        "(float16, float32 or float64)")
    result_dtype = np.dtype(dtype) if dtype is not None else np.var(np.ones((1,), a.dtype)).dtype
    skip_nan = operator_for_dtype(op, a.dtype).startswith("nan")  # integers and bool: nanvar is their var
    sqrt = op.endswith("std")
    return da.reduction(a, partial(_chunk, skip_nan, variant), partial(_aggregate, skip_nan, sqrt, ddof, result_dtype),
                        combine=_combine, axis=axis, keepdims=keepdims, dtype=result_dtype,
                        split_every=one_level(a, axis, split_every), out=out, concatenate=False,
                        meta=result_meta(a, axis, keepdims, result_dtype))


def _chunk(skip_nan, variant, x, axis=None, keepdims=True, computing_meta=False, **dask_options):
    """One chunk's {"n", "mean", "M2"}, the reduced axes kept: two kernel calls (mean, var) and, for the nan forms,
    a count of the NaNs."""
    if computing_meta:
        return x
    wide = np.dtype(np.complex128 if x.dtype.kind == "c" else np.float64)
    size = reduced_size(x.shape, axis)
    if size == 0:  # (a chunk of a non-empty array can be empty): nothing, which merges as nothing
        return {"n": filled_partial(x, axis, 0, np.int64), "mean": filled_partial(x, axis, 0, wide),
                "M2": filled_partial(x, axis, 0, np.float64)}
    if skip_nan:
        n = size - kernel_reduce("count_nonzero", variant, np.isnan(x), axis=axis, keepdims=True)
        if not bool((n > 0).all()):
            # a slice of NaNs only, which the kernels would warn about (per chunk): zeros in its place, counted as
            # none (n = 0), give it the partial of nothing
            x = np.where(n > 0, x, 0)
    else:
        n = filled_partial(x, axis, size, np.int64)
    options = {"axis": axis, "keepdims": True, **kernel_options(variant)}
    kernels = chunks.kernels
    mean = (kernels.nanmean if skip_nan else kernels.mean)(x, dtype=wide, **options)
    spread = (kernels.nanvar if skip_nan else kernels.var)(x, dtype=np.float64, **options)
    return {"n": n, "mean": mean, "M2": spread * n}


def _combine(parts, axis=None, keepdims=True, computing_meta=False, **dask_options):
    return _merge_all(_leaves(parts))


def _aggregate(skip_nan, sqrt, ddof, result_dtype, parts, axis=None, keepdims=False, computing_meta=False,
               **dask_options):
    merged = _merge_all(_leaves(parts))
    n, m2 = merged["n"], merged["M2"]
    if not keepdims:
        n, m2 = n.squeeze(axis=axis), m2.squeeze(axis=axis)
    dof = n - ddof
    few = dof <= 0
    if bool(few.any()):  # NumPy's words: nanvar's end in a period, var's do not
        warnings.warn("Degrees of freedom <= 0 for slice" + ("." if skip_nan else ""), RuntimeWarning, stacklevel=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        if skip_nan:
            result = np.where(few, np.nan, m2 / np.where(few, 1, dof))
        else:
            result = m2 / np.maximum(dof, 0)
        if sqrt:
            result = np.sqrt(result)
    return scalar_if_0d(result.astype(result_dtype, copy=False))


def _leaves(parts):
    """The partials Dask gives a combine or aggregate (one, or nested lists of them), in block order."""
    if isinstance(parts, dict):
        return [parts]
    return [leaf for part in parts for leaf in _leaves(part)]


def _merge_all(parts):
    """The partials merged pairwise, neighbours first (a balanced tree, in a fixed order)."""
    while len(parts) > 1:
        merged = [_merge(a, b) for a, b in zip(parts[0::2], parts[1::2])]
        parts = merged + parts[2 * len(merged):]
    return parts[0]


def _merge(a, b):
    """Chan et al.'s update: the count, mean and M2 of the union of two parts."""
    with np.errstate(invalid="ignore"):  # a part holding inf has mean inf or NaN and M2 NaN: NaN, as NumPy's var
        n = a["n"] + b["n"]
        share = b["n"] / np.maximum(n, 1)  # b's share of the union: 1 where a is empty, 0 where b is
        delta = b["mean"] - a["mean"]
        weight = a["n"] * share  # n_a n_b / n: 0 where either part is empty
        # an empty part's placeholder mean (0) counts for nothing, even against a mean whose square overflows
        seen = np.where(weight > 0, delta, 0)
        square = (seen * seen.conj()).real if seen.dtype.kind == "c" else seen * seen
        return {"n": n, "mean": a["mean"] + delta * share, "M2": a["M2"] + b["M2"] + square * weight}

