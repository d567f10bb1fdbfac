"""gpureduce.dask's reductions and scans without NaN handling or moments: sum, prod, min, max, any, all,
count_nonzero, mean, argmin, argmax, vector_norm, ptp, logsumexp and the scans (see gpureduce/dask/__init__.py for
how each is built: on Dask's reduction, the scans on gpureduce/dask/scans.py's graph)."""
from __future__ import annotations

import math
import warnings
from functools import partial

import numpy as np

import dask.array as da
from dask.array import reductions as _reductions

from .. import _registry
from .._planning.numpy_rules import NoValue, check_norm_axis, norm_order
from .._planning.operands import dtype_kind
from .._planning.plan import is_exact_variant, weighted_dtype
from . import chunks
from .chunks import (NO_INITIAL, axes_of, carried_dtype, checked_array, empty_partial, filled_partial,
                     first_extreme, gather_parts, global_arg, highest, kernel_options, kernel_reduce, lowest,
                     one_level, reduced_dtype, reduced_size, result_meta, scalar_if_0d, structured_partials,
                     whole_arrays_only)
from .exact import exact_reduction
from .scans import block_scan



def _reduce(op, a, axis, dtype, keepdims, split_every, out, variant, initial=NO_INITIAL):
    a = checked_array(a)
    whole_arrays_only(op, variant)  # an unknown variant fails here, not at compute()
    result_dtype = reduced_dtype(op, dtype, a)
    # a half sum's partials in float32, rounded once by the aggregate (carried_dtype)
    pass_dtype = carried_dtype(result_dtype, op, variant) if op in ("sum", "prod") else None
    # initial= is folded in once, by the aggregate; min and max take it everywhere (it changes nothing twice, and an
    # empty chunk then has a result)
    partial_initial = initial if op in ("min", "max") else NO_INITIAL
    chunk = partial(_min_max_chunk if op in ("min", "max") else kernel_reduce, op, variant, result_dtype=pass_dtype,
                    initial=partial_initial)
    aggregate = partial(kernel_reduce, op, variant, result_dtype=pass_dtype, initial=initial,
                        round_to=result_dtype if pass_dtype else None)
    return da.reduction(a, chunk, aggregate, combine=chunk, axis=axis, keepdims=keepdims, dtype=result_dtype,
                        split_every=one_level(a, axis, split_every), out=out,
                        meta=result_meta(a, axis, keepdims, result_dtype))


def _min_max_chunk(op, variant, x, axis=None, keepdims=False, initial=NO_INITIAL, **options):
    """min or max of one chunk or of a group of partials; one without an element along the reduced axes (a boolean
    index's empty chunk) gives an empty partial, which the concatenation of partials drops, as Dask's own min does:
    NumPy's error only where no chunk has an element (the aggregate's)."""
    if initial is NO_INITIAL and reduced_size(x.shape, axis) == 0:
        return empty_partial(x, axis)
    return kernel_reduce(op, variant, x, axis=axis, keepdims=keepdims, initial=initial, **options)


def sum(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, initial=NO_INITIAL, variant="auto"):
    """numpy.sum of a Dask array, each chunk summed by gpureduce (see the module's documentation); an exact
    variant's partials kept exactly (gpureduce/dask/exact.py)."""
    if is_exact_variant(variant):
        if dtype_kind(checked_array(a).dtype) in "biu":
            variant = "auto"  # exact in any order
        else:
            return exact_reduction("sum", a, axis, dtype, keepdims, split_every, out, variant, initial)
    return _reduce("sum", a, axis, dtype, keepdims, split_every, out, variant, initial)


def mean(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.mean of a Dask array: each chunk's count and sum, divided once at the end (gpureduce/dask/chunks.py);
    an exact variant's partials kept exactly (gpureduce/dask/exact.py).  An empty reduction gives NaN and warns
    "Mean of empty slice", as NumPy's."""
    if is_exact_variant(variant):
        if dtype_kind(checked_array(a).dtype) in "biu":
            variant = "auto"  # the float64 mean of integers: auto's, as the eager exact call runs it
        else:
            return exact_reduction("mean", a, axis, dtype, keepdims, split_every, out, variant)
    return chunks.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, split_every=split_every, out=out,
                       variant=variant)


def prod(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, initial=NO_INITIAL, variant="auto"):
    """numpy.prod of a Dask array, each chunk multiplied out by gpureduce."""
    return _reduce("prod", a, axis, dtype, keepdims, split_every, out, variant, initial)


def min(a, axis=None, keepdims=False, split_every=None, out=None, *, initial=NO_INITIAL, variant="auto"):
    """numpy.min of a Dask array (NaN propagates; an empty reduction raises ValueError unless initial= is given,
    as NumPy's)."""
    return _reduce("min", a, axis, None, keepdims, split_every, out, variant, initial)


def max(a, axis=None, keepdims=False, split_every=None, out=None, *, initial=NO_INITIAL, variant="auto"):
    """numpy.max of a Dask array (NaN propagates; an empty reduction raises ValueError unless initial= is given,
    as NumPy's)."""
    return _reduce("max", a, axis, None, keepdims, split_every, out, variant, initial)


def any(a, axis=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.any of a Dask array: each chunk's, then the partial results' (an empty reduction is False)."""
    return _reduce("any", a, axis, None, keepdims, split_every, out, variant)


def all(a, axis=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.all of a Dask array: each chunk's, then the partial results' (an empty reduction is True)."""
    return _reduce("all", a, axis, None, keepdims, split_every, out, variant)


def count_nonzero(a, axis=None, *, keepdims=False, split_every=None, variant="auto"):
    """numpy.count_nonzero of a Dask array: each chunk's count (int64), the counts summed."""
    a = checked_array(a)
    whole_arrays_only("count_nonzero", variant)
    counts = np.dtype(np.int64)
    chunk = partial(kernel_reduce, "count_nonzero", variant)
    total = partial(kernel_reduce, "sum", variant)
    return da.reduction(a, chunk, total, combine=total, axis=axis, keepdims=keepdims, dtype=counts,
                        split_every=one_level(a, axis, split_every), meta=result_meta(a, axis, keepdims, counts))


# ---------------------------------------------------------------- mean: counts and sums, divided once


# ---------------------------------------------------------------- argmin, argmax: value and global index

def _arg(op, a, axis, keepdims, split_every, out, variant):
    a = checked_array(a)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be None or an int for {op}, not {type(axis).__name__}")
    whole_arrays_only(op, variant)  # the classic variants have no argmin/argmax: a ValueError naming those that do
    value_op = "min" if op == "argmin" else "max"
    chunk = partial(_arg_chunk, op, variant)
    return _reductions.arg_reduction(a, chunk, partial(_arg_combine, value_op), partial(_arg_agg, value_op),
                                     axis=axis, keepdims=keepdims, split_every=one_level(a, axis, split_every), out=out)


def _arg_chunk(op, variant, x, axis, offset_info):
    """One chunk's first extreme: its index from gpureduce (one read of the chunk, one transfer for a host chunk),
    its value picked from the chunk at that index, and the index made global with the block's offset."""
    if reduced_size(x.shape, axis) == 0:  # an empty chunk: nothing to offer (see _min_max_chunk)
        nothing = empty_partial(x, axis)
        return structured_partials(nothing, np.empty_like(nothing, dtype=np.int64))
    arg_axis = None if len(axis) == x.ndim or x.ndim == 1 else axis[0]
    arg = kernel_reduce(op, variant, x, axis=arg_axis, keepdims=True)
    return structured_partials(*global_arg(x, arg, arg_axis, offset_info))


def _arg_combine(value_op, data, axis=None, **dask_options):
    first, extreme = first_extreme(value_op, data, axis, keepdims=True)
    return structured_partials(extreme, first)


def _arg_agg(value_op, data, axis=None, keepdims=False, **dask_options):
    return scalar_if_0d(first_extreme(value_op, data, axis, keepdims)[0])


def argmin(a, axis=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.argmin of a Dask array: the global index of the first minimum (the first NaN, where there is one)."""
    return _arg("argmin", a, axis, keepdims, split_every, out, variant)


def argmax(a, axis=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.argmax of a Dask array: the global index of the first maximum (the first NaN, where there is one)."""
    return _arg("argmax", a, axis, keepdims, split_every, out, variant)


# ---------------------------------------------------------------- vector_norm: the norm of the chunks' norms

def _kernel_norm(variant, order, x, axis=None, keepdims=False, computing_meta=False, **dask_options):
    options = kernel_options(variant)
    return chunks.kernels.vector_norm(x, axis=axis, keepdims=keepdims, ord=order, **options)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2, split_every=None, variant="auto"):
    """numpy.linalg.vector_norm of a Dask array: each chunk's norm of order `ord`, then the norm of those norms
    with the same order (the largest of the largest, the square root of the sum of squares, ...), except that
    ord 0's counts are added (order 1).  The partial norms are rounded to the result dtype once per level of
    the tree; an axis may be an int or a tuple, as NumPy's."""
    a = checked_array(x)
    check_norm_axis(axis)
    order = norm_order(ord)
    whole_arrays_only("vector_norm", variant)
    reduced = range(a.ndim) if axis is None else (axis,) if not isinstance(axis, tuple) else axis
    if order == -np.inf and a.ndim and math.prod(a.shape[int(ax) % a.ndim] for ax in reduced) == 0:  # (any: ours)
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    result_dtype = np.linalg.vector_norm(np.ones((1,), a.dtype)).dtype  # NumPy's: real, float64 for integers
    chunk = partial(_kernel_norm, variant, order)
    combined = partial(_kernel_norm, variant, 1.0 if order == 0 else order)
    with warnings.catch_warnings():  # Dask casts a complex array's empty meta to the real result dtype
        warnings.simplefilter("ignore", getattr(np, "exceptions", np).ComplexWarning)
        return da.reduction(a, chunk, combined, combine=combined, axis=axis, keepdims=keepdims, dtype=result_dtype,
                            split_every=one_level(a, axis, split_every),
                            meta=result_meta(a, axis, keepdims, result_dtype))


# ---------------------------------------------------------------- ptp: the chunks' minima and maxima

def ptp(a, axis=None, out=None, keepdims=False, *, split_every=None, variant="auto"):
    """numpy.ptp of a Dask array: each chunk's minimum and maximum, the minima's minimum and the maxima's maximum,
    subtracted once at the end in `a`'s dtype (an integer range wraps, as NumPy's; NaN propagates)."""
    a = checked_array(a)
    whole_arrays_only("ptp", variant)
    if a.dtype == np.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                        "operator, or the logical_xor function instead.")
    if reduced_size(a.shape, axis) == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    return da.reduction(a, partial(_ptp_chunk, variant), partial(_ptp_agg, variant),
                        combine=partial(_ptp_combine, variant), axis=axis, keepdims=keepdims, dtype=a.dtype,
                        split_every=one_level(a, axis, split_every), out=out, concatenate=False,
                        meta=result_meta(a, axis, keepdims, a.dtype))


def _ptp_chunk(variant, x, axis=None, keepdims=True, computing_meta=False, **dask_options):
    if computing_meta:
        return x
    if reduced_size(x.shape, axis) == 0:  # (a chunk of a non-empty array can be empty): the identities
        return {"min": filled_partial(x, axis, highest(x.dtype), x.dtype), "max": filled_partial(x, axis, lowest(x.dtype), x.dtype)}
    return {"min": kernel_reduce("min", variant, x, axis=axis, keepdims=True),
            "max": kernel_reduce("max", variant, x, axis=axis, keepdims=True)}


def _ptp_combine(variant, parts, axis=None, keepdims=True, **dask_options):
    return {"min": kernel_reduce("min", variant, gather_parts(parts, "min", axis), axis=axis, keepdims=True),
            "max": kernel_reduce("max", variant, gather_parts(parts, "max", axis), axis=axis, keepdims=True)}


def _ptp_agg(variant, parts, axis=None, keepdims=False, computing_meta=False, **dask_options):
    extremes = _ptp_combine(variant, parts, axis=axis)
    spread = np.subtract(extremes["max"], extremes["min"])  # on arrays: wraps without a scalar overflow warning
    return scalar_if_0d(spread if keepdims else spread.squeeze(axis=axis))


# ---------------------------------------------------------------- logsumexp: the chunks' logsumexps

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, *, split_every=None, variant="auto"):
    """scipy.special.logsumexp of a Dask array: each chunk's logsumexp (its largest element m and the sum s of
    exp(x - m) folded into m + log(s), one rounding) in float64, then the logsumexp of those partials, which the
    kernel shifts by their largest, so nothing overflows; -inf, inf and NaN as SciPy's (and gpureduce's).  float64
    for bool and integer inputs, else `a`'s dtype; -inf for an empty slice.  return_sign=True also gives the
    sign, lazily: 1.0, 0.0 where every element is -inf, -1.0 for an empty slice (SciPy's), NaN where the result
    is NaN.  With weights b (a Dask or NumPy array, broadcast with `a`): each chunk's log|sum| and sign, then the
    weighted logsumexp of those partials with their signs as weights (_weighted_logsumexp)."""
    a = checked_array(a)
    if b is not None:
        return _weighted_logsumexp(a, axis, b, keepdims, return_sign, split_every, variant)
    if a.dtype.kind == "c":
        raise TypeError(f"unsupported dtype {a.dtype} of the Dask array: logsumexp has no kernel for it "
                        "(gpureduce.logsumexp takes real inputs)")
    whole_arrays_only("logsumexp", variant)
    result_dtype = a.dtype if dtype_kind(a.dtype) == "f" else np.dtype(np.float64)
    result = da.reduction(a, partial(_lse_chunk, variant), partial(_lse_kernel, variant, result_dtype),
                          combine=partial(_lse_kernel, variant, np.float64), axis=axis, keepdims=keepdims,
                          dtype=result_dtype, split_every=one_level(a, axis, split_every),
                          meta=result_meta(a, axis, keepdims, result_dtype))
    if not return_sign:
        return result
    empty = reduced_size(a.shape, axis) == 0
    return result, result.map_blocks(_lse_sign, empty=empty, dtype=result_dtype, meta=result._meta)


def _weighted_logsumexp(a, axis, b, keepdims, return_sign, split_every, variant):
    """logsumexp(a, b=b) of Dask arrays: `a` and `b` broadcast, cast to SciPy's dtype (the common one, at least
    floating) and stacked on a new leading axis, so that one reduction reads a chunk of each; a chunk's partial is
    (log|sum|, sign) on that axis, and partials fold as a weighted logsumexp whose weights are their signs (a zero
    sum, sign 0, drops out).  The sign of an empty slice is -1, as SciPy's."""
    number = b
    b = b if isinstance(b, da.Array) else da.asarray(b)
    dtype = weighted_dtype(a.dtype, number, b.dtype)
    whole_arrays_only("logsumexp", variant)
    a, b = da.broadcast_arrays(a.astype(dtype), b.astype(dtype))
    pair = da.stack([a, b.rechunk(a.chunks)]).rechunk({0: 2})
    axes = tuple(ax + 1 for ax in axes_of(a.ndim, axis))  # the stacked axis 0 is never reduced
    folded = da.reduction(pair, partial(_wlse_fold, variant, np.float64), partial(_wlse_fold, variant, dtype),
                          combine=partial(_wlse_fold, variant, np.float64), axis=axes, keepdims=keepdims,
                          dtype=dtype, split_every=one_level(pair, axes, split_every), concatenate=True,
                          meta=result_meta(pair, axes, keepdims, dtype))
    result, sign = folded[0], folded[1]
    if not return_sign:
        return da.where(sign < 0, np.nan, result)  # SciPy's value of a negative sum
    if reduced_size(a.shape, axis) == 0:  # SciPy's sign of an empty slice (its value stays -inf)
        sign = da.full_like(sign, -1.0)
    return result, sign


def _wlse_fold(variant, fold_dtype, pair, axis=None, keepdims=True, computing_meta=False, **dask_options):
    """A (values, weights) pair of chunks, or of (log|sum|, sign) partials, on axis 0 -> their weighted logsumexp as
    (log|sum|, sign) on axis 0, in `fold_dtype`, of the chunks' kind (np.stack and np.full_like dispatch to CuPy's)."""
    if computing_meta:
        return pair
    axes = tuple(ax - 1 for ax in axis)
    if reduced_size(pair.shape[1:], axes) == 0:  # nothing to fold: log 0 with sign 0, which later folds drop
        kept = tuple(1 if i in axes else e for i, e in enumerate(pair.shape[1:]))
        if not keepdims:
            kept = tuple(e for i, e in enumerate(pair.shape[1:]) if i not in axes)
        return np.stack([np.full_like(pair[0], -np.inf, dtype=fold_dtype, shape=kept),
                         np.full_like(pair[0], 0, dtype=fold_dtype, shape=kept)])
    value, sign = chunks.kernels.logsumexp(pair[0], axis=axes, b=pair[1], keepdims=keepdims, return_sign=True,
                                    **kernel_options(variant))
    return np.stack([value, sign]).astype(fold_dtype, copy=False)


def _lse_chunk(variant, x, axis=None, keepdims=True, computing_meta=False, **dask_options):
    if computing_meta:
        return x
    if reduced_size(x.shape, axis) == 0:
        return filled_partial(x, axis, -np.inf, np.float64)  # the log of an empty sum
    return chunks.kernels.logsumexp(x, axis=axis, keepdims=True, **kernel_options(variant)).astype(np.float64, copy=False)


def _lse_kernel(variant, result_dtype, partials, axis=None, keepdims=True, computing_meta=False, **dask_options):
    result = chunks.kernels.logsumexp(partials, axis=axis, keepdims=keepdims, **kernel_options(variant))
    return result.astype(result_dtype, copy=False)


def _lse_sign(result, empty):
    """SciPy's sign of a logsumexp result: -1.0 for an empty slice, else 1.0, 0.0 for -inf (an empty sum), NaN."""
    if empty:
        sign = np.full_like(result, -1.0)
    else:
        sign = (result != -np.inf).astype(result.dtype)
        sign = np.where(np.isnan(result), result, sign)
    return scalar_if_0d(sign.astype(result.dtype, copy=False))


# ---------------------------------------------------------------- scans: each block behind the ones before


def cumsum(a, axis=None, dtype=None, out=None, *, variant="auto"):
    """numpy.cumsum of a Dask array (axis=None: the flattened array, as NumPy's)."""
    return block_scan("cumsum", a, axis, dtype, out, variant)


def cumprod(a, axis=None, dtype=None, out=None, *, variant="auto"):
    """numpy.cumprod of a Dask array (axis=None: the flattened array, as NumPy's)."""
    return block_scan("cumprod", a, axis, dtype, out, variant)


def cummax(a, axis=None, out=None, *, variant="auto"):
    """numpy.maximum.accumulate of a Dask array (axis=None: the flattened array, as gpureduce.cummax)."""
    return block_scan("cummax", a, axis, None, out, variant)


def cummin(a, axis=None, out=None, *, variant="auto"):
    """numpy.minimum.accumulate of a Dask array (axis=None: the flattened array, as gpureduce.cummin)."""
    return block_scan("cummin", a, axis, None, out, variant)


def logcumsumexp(a, axis=None, out=None, *, variant="auto"):
    """gpureduce.logcumsumexp of a Dask array (torch.logcumsumexp; axis=None: the flattened array): gpureduce
    scans each chunk and the blocks before are folded in with numpy.logaddexp, from -inf (the log of an empty
    sum).  float64 for bool and integer inputs, else `a`'s dtype."""
    return block_scan("logcumsumexp", a, axis, None, out, variant)
