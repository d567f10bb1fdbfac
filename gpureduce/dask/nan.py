"""The nan functions of Dask arrays (gpureduce.dask): nansum, nanprod, nanmin, nanmax, nanmean, nanargmin,
nanargmax, nancumsum and nancumprod (nanvar and nanstd are in moments.py).

Each chunk runs gpureduce's nan kernel, which skips NaN as it reads; what a partial must carry beyond the plain
function's is whether a slice had a number at all, so that a slice of NaNs only gives NumPy's result, warning or
error once, at the end, not once per chunk:

* nansum, nanprod: the chunks' nan sums (products) are added (multiplied) as they are: a NaN among the partials
  came from the data (inf - inf) and stays, as NumPy's;
* nanmin, nanmax: each chunk's extreme counted from +inf (-inf), so a slice of NaNs only gives that bound and no
  warning, and whether the slice has a number (looked for only where a result is at the bound); the
  aggregate gives NaN and warns "All-NaN slice encountered" where no chunk had one;
* nanmean: each chunk's count of numbers and their sum, divided once ("Mean of empty slice" where none);
* nanargmin, nanargmax: the structured (value, global index) partials of argmin and argmax, NaN as the value of
  a chunk's slice without a number, which counts as +inf (nanargmax: -inf), as NumPy's own takes a NaN, so it
  wins only a tie with that infinity; NumPy's ValueError where no chunk had a number.

Integer and bool inputs hold no NaN: each function is then the plain one (nansum: sum), as NumPy's.
"""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import dask.array as da
from dask.array import reductions as _reductions

from .._planning.numpy_rules import EXACT, operator_for_dtype
from .._planning.numpy_rules import NoValue
from .._planning.plan import is_exact_variant
from .._registry import scan_function_name
from . import plain as plain_functions
from .chunks import (carried_dtype, checked_array, filled_partial, first_extreme, gather_parts,
                     global_arg, kernel_reduce, mean_agg, mean_combine, one_level, reduced_size, result_meta,
                     scalar_if_0d, structured_partials, whole_arrays_only)
from .exact import exact_reduction
from .scans import block_scan


def _exact(op, a):
    """Whether `a` holds no NaN (integers and bool), so that nan function `op` of it is the plain one."""
    return operator_for_dtype(op, a.dtype) != op


# ---------------------------------------------------------------- nansum, nanprod

def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, *, split_every=None,
           variant="auto"):
    """numpy.nansum of a Dask array: each chunk's nansum, the partial sums added (initial= once, at the end)."""
    return _fold("nansum", a, axis, dtype, out, keepdims, initial, split_every, variant)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, *, split_every=None,
            variant="auto"):
    """numpy.nanprod of a Dask array: each chunk's nanprod, the partial products multiplied."""
    return _fold("nanprod", a, axis, dtype, out, keepdims, initial, split_every, variant)


def _fold(op, a, axis, dtype, out, keepdims, initial, split_every, variant):
    a = checked_array(a)
    plain = EXACT[op]
    if _exact(op, a):
        return getattr(plain_functions, plain)(a, axis=axis, dtype=dtype, keepdims=keepdims, split_every=split_every, out=out,
                                     initial=initial, variant=variant)
    if op == "nansum" and is_exact_variant(variant):
        return exact_reduction(op, a, axis, dtype, keepdims, split_every, out, variant, initial)
    whole_arrays_only(op, variant)
    result_dtype = getattr(np, op)(np.ones((1,), a.dtype), dtype=dtype).dtype
    partials = carried_dtype(result_dtype, op, variant)  # a half sum's in float32, rounded once at the end
    chunk = partial(kernel_reduce, op, variant, result_dtype=partials)
    combine = partial(kernel_reduce, plain, variant, result_dtype=partials)
    aggregate = partial(kernel_reduce, plain, variant, result_dtype=partials, initial=initial, round_to=result_dtype)
    return da.reduction(a, chunk, aggregate, combine=combine, axis=axis, keepdims=keepdims, dtype=result_dtype,
                        split_every=one_level(a, axis, split_every), out=out,
                        meta=result_meta(a, axis, keepdims, result_dtype))


# ---------------------------------------------------------------- nanmin, nanmax

def nanmin(a, axis=None, out=None, keepdims=False, initial=NoValue, *, split_every=None, variant="auto"):
    """numpy.nanmin of a Dask array: the least number of each slice; NaN and one "All-NaN slice encountered"
    warning where a slice has none (initial= given: initial there, no warning, as NumPy's)."""
    return _extreme("nanmin", a, axis, out, keepdims, initial, split_every, variant)


def nanmax(a, axis=None, out=None, keepdims=False, initial=NoValue, *, split_every=None, variant="auto"):
    """numpy.nanmax of a Dask array: the greatest number of each slice; NaN and one "All-NaN slice encountered"
    warning where a slice has none (initial= given: initial there, no warning, as NumPy's)."""
    return _extreme("nanmax", a, axis, out, keepdims, initial, split_every, variant)


def _extreme(op, a, axis, out, keepdims, initial, split_every, variant):
    a = checked_array(a)
    plain = EXACT[op]
    if _exact(op, a):
        return getattr(plain_functions, plain)(a, axis=axis, keepdims=keepdims, split_every=split_every, out=out,
                                     initial=initial, variant=variant)
    whole_arrays_only(op, variant)
    meta = result_meta(a, axis, keepdims, a.dtype)
    if initial is not NoValue:  # every slice has a value, initial's at least: no NaN result, no warning
        chunk = partial(kernel_reduce, op, variant, initial=initial)
        fold = partial(kernel_reduce, plain, variant, initial=initial)
        return da.reduction(a, chunk, fold, combine=fold, axis=axis, keepdims=keepdims, dtype=a.dtype,
                            split_every=one_level(a, axis, split_every), out=out, meta=meta)
    if reduced_size(a.shape, axis) == 0:
        raise ValueError(f"zero-size array to reduction operation f{plain} which has no identity")
    return da.reduction(a, partial(_extreme_chunk, op, variant), partial(_extreme_agg, plain, variant, a.dtype),
                        combine=partial(_extreme_combine, plain, variant), axis=axis, keepdims=keepdims,
                        dtype=a.dtype, split_every=one_level(a, axis, split_every), out=out, concatenate=False,
                        meta=meta)


def _extreme_chunk(op, variant, x, axis=None, keepdims=True, computing_meta=False, **dask_options):
    """{"value": the chunk's extreme of numbers counted from the far bound, "has": whether the slice has a number}."""
    if computing_meta:
        return x
    bound = np.inf if op == "nanmin" else -np.inf
    if reduced_size(x.shape, axis) == 0:
        return {"value": filled_partial(x, axis, bound, x.dtype), "has": filled_partial(x, axis, False, np.bool_)}
    value = kernel_reduce(op, variant, x, axis=axis, keepdims=True, initial=bound)
    has = value != bound
    if not bool(has.all()):  # NaNs only, or numbers all at the bound (rare): only then is the chunk read again
        has = kernel_reduce("any", variant, ~np.isnan(x), axis=axis, keepdims=True)
    return {"value": value, "has": has}


def _extreme_combine(plain, variant, parts, axis=None, keepdims=True, **dask_options):
    # the values hold no NaN (a slice without a number holds the bound), so the plain extreme folds them
    return {"value": kernel_reduce(plain, variant, gather_parts(parts, "value", axis), axis=axis,
                                          keepdims=keepdims),
            "has": kernel_reduce("any", variant, gather_parts(parts, "has", axis), axis=axis,
                                        keepdims=keepdims)}


def _extreme_agg(plain, variant, result_dtype, parts, axis=None, keepdims=False, computing_meta=False,
                 **dask_options):
    folded = _extreme_combine(plain, variant, parts, axis=axis, keepdims=keepdims)
    value, has = folded["value"], folded["has"]
    if not bool(np.all(has)):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
        value = np.where(has, value, np.nan).astype(result_dtype, copy=False)
    return scalar_if_0d(value)


# ---------------------------------------------------------------- nanmean: counts of numbers and their sums

def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, split_every=None, variant="auto"):
    """numpy.nanmean of a Dask array: each chunk's count of numbers and their nansum (in the input's dtype or
    `dtype`, as NumPy accumulates), divided once at the end; NaN and "Mean of empty slice" where a slice has no
    number."""
    a = checked_array(a)
    if _exact("nanmean", a):
        return plain_functions.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, split_every=split_every, out=out,
                                    variant=variant)
    if is_exact_variant(variant):
        return exact_reduction("nanmean", a, axis, dtype, keepdims, split_every, out, variant)
    whole_arrays_only("nanmean", variant)
    result_dtype = np.nanmean(np.ones((1,), a.dtype), dtype=dtype).dtype  # NumPy's TypeError for an integer dtype
    accumulate = carried_dtype(dtype if dtype is not None else a.dtype, "nansum", variant)
    return da.reduction(a, partial(_nanmean_chunk, variant, accumulate),
                        partial(mean_agg, accumulate=accumulate, result_dtype=result_dtype),
                        combine=partial(mean_combine, accumulate=accumulate), axis=axis, keepdims=keepdims,
                        dtype=result_dtype, split_every=one_level(a, axis, split_every), out=out, concatenate=False,
                        meta=result_meta(a, axis, keepdims, result_dtype))


def _nanmean_chunk(variant, accumulate, x, axis=None, keepdims=True, computing_meta=False, **dask_options):
    """{"n": the count of numbers, "total": their sum}, as mean's partials (gpureduce/dask: _mean_chunk)."""
    if computing_meta:
        return x
    size = reduced_size(x.shape, axis)
    if size == 0:
        return {"n": filled_partial(x, axis, 0, np.int64), "total": filled_partial(x, axis, 0, accumulate)}
    nans = kernel_reduce("count_nonzero", variant, np.isnan(x), axis=axis, keepdims=True)
    total = kernel_reduce("nansum", variant, x, axis=axis, keepdims=True, result_dtype=accumulate)
    return {"n": size - nans, "total": total}


# ---------------------------------------------------------------- nanargmin, nanargmax

def nanargmin(a, axis=None, out=None, *, keepdims=False, split_every=None, variant="auto"):
    """numpy.nanargmin of a Dask array: the global index of the first least number (where that is +inf, of the
    first +inf or NaN, as NumPy's); ValueError "All-NaN slice encountered" (at compute()) where a slice has none."""
    return _nanarg("nanargmin", a, axis, out, keepdims, split_every, variant)


def nanargmax(a, axis=None, out=None, *, keepdims=False, split_every=None, variant="auto"):
    """numpy.nanargmax of a Dask array: the global index of the first greatest number (where that is -inf, of the
    first -inf or NaN, as NumPy's); ValueError "All-NaN slice encountered" (at compute()) where a slice has none."""
    return _nanarg("nanargmax", a, axis, out, keepdims, split_every, variant)


def _nanarg(op, a, axis, out, keepdims, split_every, variant):
    a = checked_array(a)
    plain = EXACT[op]
    if _exact(op, a):
        return getattr(plain_functions, plain)(a, axis=axis, keepdims=keepdims, split_every=split_every, out=out,
                                     variant=variant)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be None or an int for {op}, not {type(axis).__name__}")
    whole_arrays_only(op, variant)
    if reduced_size(a.shape, axis) == 0:
        raise ValueError(f"attempt to get {plain} of an empty sequence")
    value_op = "min" if plain == "argmin" else "max"
    return _reductions.arg_reduction(a, partial(_nanarg_chunk, op, variant), partial(_nanarg_combine, value_op),
                                     partial(_nanarg_agg, value_op), axis=axis, keepdims=keepdims,
                                     split_every=one_level(a, axis, split_every), out=out)


def _nanarg_chunk(op, variant, x, axis, offset_info):
    """argmin's partial of one chunk (gpureduce/dask: _arg_chunk), the value NaN for a slice without a number."""
    arg_axis = None if len(axis) == x.ndim or x.ndim == 1 else axis[0]
    if x.size == 0:
        return structured_partials(filled_partial(x, axis, np.nan, x.dtype), filled_partial(x, axis, 0, np.int64))
    numbers = None
    try:
        arg = kernel_reduce(op, variant, x, axis=arg_axis, keepdims=True)
    except ValueError as e:  # a slice of NaNs only in this chunk (the kernel's error, as NumPy's): only then
        if "All-NaN" not in str(e):
            raise
        numbers = kernel_reduce("any", variant, ~np.isnan(x), axis=arg_axis, keepdims=True)
        arg = kernel_reduce(op, variant, np.where(numbers, x, 0), axis=arg_axis, keepdims=True)
    vals, arg = global_arg(x, arg, arg_axis, offset_info)
    # NumPy's nanargmin takes a NaN for +inf (nanargmax: for -inf), so in a slice whose extreme is that infinity
    # its index may be a NaN's: the value there stands for the infinity, not for "no number"
    vals = np.where(np.isnan(vals), np.inf if op == "nanargmin" else -np.inf, vals).astype(x.dtype, copy=False)
    if numbers is not None:
        vals = np.where(numbers, vals, np.nan).astype(x.dtype, copy=False)
    return structured_partials(vals, arg)


def _nanarg_combine(value_op, data, axis=None, **dask_options):
    first, extreme = first_extreme(value_op, data, axis, keepdims=True, skip_nan=True)
    return structured_partials(extreme, first)


def _nanarg_agg(value_op, data, axis=None, keepdims=False, **dask_options):
    first, extreme = first_extreme(value_op, data, axis, keepdims, skip_nan=True)
    if bool(np.isnan(extreme).any()):
        raise ValueError("All-NaN slice encountered")
    return scalar_if_0d(first)


# ---------------------------------------------------------------- nancumsum, nancumprod

def nancumsum(a, axis=None, dtype=None, out=None, *, variant="auto"):
    """numpy.nancumsum of a Dask array (axis=None: the flattened array): each chunk's nancumsum, the blocks
    before added in."""
    a = checked_array(a)
    return block_scan(scan_function_name(operator_for_dtype("nansum", a.dtype)), a, axis, dtype, out, variant)


def nancumprod(a, axis=None, dtype=None, out=None, *, variant="auto"):
    """numpy.nancumprod of a Dask array (axis=None: the flattened array): each chunk's nancumprod, the blocks
    before multiplied in."""
    a = checked_array(a)
    return block_scan(scan_function_name(operator_for_dtype("nanprod", a.dtype)), a, axis, dtype, out, variant)

