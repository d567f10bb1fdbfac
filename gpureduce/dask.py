"""Reductions and scans of Dask arrays, gpureduce's kernels doing the work on every chunk.

``gpureduce.dask.sum(x, axis=0)`` takes a ``dask.array.Array`` whose chunks are NumPy or CuPy arrays and
returns a lazy ``dask.array.Array``, NumPy's signature and result dtype, built on Dask's own machinery:

* sum, prod, min, max, any, all: ``dask.array.reduction`` with gpureduce's function on each chunk and on the
  partial results (chunk -> combine -> aggregate); count_nonzero: each chunk's count, the counts summed;
* mean: each chunk gives its count and its sum in the accumulator dtype NumPy uses (float64 for integers and
  bool, the input's own for floats), summed over the partials and divided once at the end;
* argmin, argmax: each chunk gives its extreme value and the global index of its first occurrence; the
  partials are combined in block order, so ties and NaNs resolve to the first one, as NumPy's do;
* vector_norm: each chunk's norm, then the norm of those norms with the same order (ord 0's counts added);
* ptp: each chunk's minimum and maximum (two kernel calls: gpureduce.ptp gives only their difference), the
  minima's minimum and the maxima's maximum, subtracted once at the end (integers wrap, as NumPy's);
* logsumexp: each chunk's logsumexp in float64, which is the pair (m, sum of exp(x - m)) folded into one number
  m + log(sum); the partials' logsumexp (the same kernel, shifted by their largest) gives the result;
* var, std, nanvar, nanstd (gpureduce/_dask_moments.py): each chunk's count, mean and sum of squared
  deviations M2 in float64, merged pairwise with Chan et al.'s formula; ddof is applied once at the end;
* nansum, nanprod, nanmin, nanmax, nanmean, nanargmin, nanargmax (gpureduce/_dask_nan.py): gpureduce's nan
  kernels on each chunk; nanmin and nanmax carry whether a slice has a number (an all-NaN slice gives NaN and
  one "All-NaN slice encountered" warning, at the end), nanmean the count of numbers and their sum,
  nanargmin and nanargmax NaN for a chunk's slice without a number, which never wins;
* cumsum, cumprod, cummax, cummin, nancumsum, nancumprod, logcumsumexp: ``dask.array.reductions.cumreduction``:
  gpureduce scans each chunk and the last result of the blocks before it is folded into each block (added,
  multiplied, the larger or smaller taken, ``numpy.logaddexp``; a large host block on several threads), block
  after block.

Integer and bool inputs hold no NaN: a nan function of them is the plain one, as NumPy's.  The tree of partial
results is fixed by the chunks and ``split_every`` (Dask's ``split_every`` config, 4 by default), never by
scheduling, so the result is the same run after run; floats differ from a single call of gpureduce or NumPy by
the roundings of that tree, within ``gpureduce.testing.error_bound`` of the exact result.  ``gpureduce.sum(x)``
& co. of a Dask array return this module's lazy result.

Many GPUs: run one Dask worker per GPU (``local_cluster()``, gpureduce/_dask_cluster.py: dask-cuda's
``LocalCUDACluster`` where it is installed, else one ``distributed`` nanny per GPU with its own
``CUDA_VISIBLE_DEVICES``) and persist the array on the workers; each chunk is reduced on the GPU of the worker
that holds it.  Needs ``pip install gpureduce[dask]``.
"""
from __future__ import annotations

import builtins
import concurrent.futures
import math
import os
import warnings
from functools import partial

import numpy as np

try:
    import dask.array as da
    from dask.array import reductions as _reductions
    from dask.array.utils import meta_from_array
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("gpureduce.dask needs Dask: pip install 'gpureduce[dask]' (or 'dask[array]')") from e

import gpureduce
from gpureduce import _registry
from gpureduce._plan import NoValue, _variant_for, weighted_dtype
from gpureduce._dask_cluster import local_cluster  # noqa: F401  (part of this module's API)
from gpureduce._operands import dtype_kind
from gpureduce._registry import DTYPE_NAMES

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.numeric import normalize_axis_tuple

# Every reduction and scan of this module (gpureduce.<name> of a Dask array hands the call to the one named here).
OPERATORS = ["sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all", "count_nonzero", "vector_norm",
           "ptp", "logsumexp", "var", "std", "nanvar", "nanstd", "nansum", "nanprod", "nanmin", "nanmax", "nanmean",
           "nanargmin", "nanargmax", "cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod",
           "logcumsumexp"]
__all__ = OPERATORS + ["local_cluster"]

# The functions each chunk is reduced or scanned with (gpureduce's; tests without a GPU put NumPy's here).
kernels = gpureduce


def _array(a):
    if not isinstance(a, da.Array):
        raise TypeError(f"gpureduce.dask functions take a dask.array.Array, not {type(a).__name__}; for NumPy or "
                        "device arrays call gpureduce's own functions")
    if a.dtype.name not in DTYPE_NAMES:
        raise TypeError(f"unsupported dtype {a.dtype} of the Dask array: gpureduce reduces {', '.join(DTYPE_NAMES)}")
    return a


def _reduced_dtype(op, dtype, a):
    """NumPy's result dtype of `op` over `a`'s dtype (with dtype= if given); NumPy's errors for bad ones."""
    probe = np.ones((1,), a.dtype)
    return getattr(np, op)(probe, dtype=dtype).dtype if op in ("sum", "prod") else getattr(np, op)(probe).dtype


def _meta(a, axis, keepdims, dtype):
    """The result's meta (an empty array of the chunks' kind), given so that Dask never calls a kernel on one."""
    if axis is None:
        reduced = a.ndim
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        reduced = len({int(ax) % a.ndim if a.ndim else 0 for ax in axes})
    with warnings.catch_warnings():  # a complex input's empty meta cast to a real result dtype (var): nothing lost
        warnings.simplefilter("ignore", getattr(np, "exceptions", np).ComplexWarning)
        return meta_from_array(a, ndim=a.ndim if keepdims else a.ndim - reduced, dtype=dtype)


def _axes(ndim, axis):
    """`axis` (None, an int or a tuple; negative counts from the end) as a tuple of axes; NumPy's AxisError."""
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _reduced_size(shape, axis):
    """How many elements each result of a reduction over `axis` takes."""
    return math.prod(shape[i] for i in _axes(len(shape), axis))


def _filled(x, axis, value, dtype):
    """`value` in the shape of a chunk's partial (`x` reduced over the axes `axis`, kept), of `x`'s kind: what a
    chunk without elements to reduce gives, without a kernel call."""
    kept = tuple(1 if i in axis else e for i, e in enumerate(x.shape))
    return np.full_like(x, value, dtype=dtype, shape=kept)


def _options(variant):
    return {} if variant == "auto" else {"variant": variant}


def _gather(parts, key, axis):
    """The `key` arrays of the partial results Dask gives a combine or aggregate with concatenate=False (one
    result, or nested lists of them, one level per reduced axis), concatenated along the reduced axes."""
    if not isinstance(parts, list):
        parts = [parts]
    return _reductions._concatenate2(_reductions.deepmap(lambda p: p[key], parts), axes=sorted(axis))


_NO_INITIAL = NoValue  # "not given"; one object in every worker process, as pickled there


def _whole_arrays_only(op, variant):
    """Whether reduction `variant` is one of the seeds' classic ones, which reduce a whole array and take no axis
    or keepdims; a ValueError naming the choices for an unknown variant or one without `op`."""
    if variant == "auto":
        return False
    v = next((v for v in _registry.variants("reduce") if v.name == variant), None)
    if v is None or not _registry.implements(v, op):
        _registry.resolve("reduce", variant, op)  # raises
    return "axes" not in v.properties


def _kernel_reduce(op, variant, x, axis=None, keepdims=False, result_dtype=None, initial=_NO_INITIAL,
                   **dask_options):
    """`op` of one chunk or of concatenated partials (Dask's own options, dtype= among them, are not NumPy's)."""
    fn = getattr(kernels, op)
    options = {"keepdims": keepdims}
    if result_dtype is not None:
        options["dtype"] = result_dtype
    if initial is not _NO_INITIAL:
        options["initial"] = initial
    if variant != "auto":
        options["variant"] = variant
        axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, (int, np.integer)) else axis
        if _whole_arrays_only(op, variant) and len({int(ax) % (x.ndim or 1) for ax in axes}) == x.ndim:
            # Dask asks for every axis with keepdims=True; a classic variant takes the whole chunk (axis=None)
            # and nothing else, so its one value is given the kept dimensions here.
            del options["keepdims"]
            whole = fn(x, axis=None, **options)
            return whole.reshape((1,) * x.ndim) if keepdims else whole
    return fn(x, axis=axis, **options)


def _reduce(op, a, axis, dtype, keepdims, split_every, out, variant, initial=_NO_INITIAL):
    a = _array(a)
    _whole_arrays_only(op, variant)  # an unknown variant fails here, not at compute()
    result_dtype = _reduced_dtype(op, dtype, a)
    pass_dtype = result_dtype if op in ("sum", "prod") else None
    # initial= is folded in once, by the aggregate; min and max take it everywhere (it changes nothing twice, and an
    # empty chunk then has a result)
    partial_initial = initial if op in ("min", "max") else _NO_INITIAL
    chunk = partial(_kernel_reduce, op, variant, result_dtype=pass_dtype, initial=partial_initial)
    aggregate = partial(_kernel_reduce, op, variant, result_dtype=pass_dtype, initial=initial)
    return da.reduction(a, chunk, aggregate, combine=chunk, axis=axis, keepdims=keepdims, dtype=result_dtype,
                        split_every=split_every, out=out, meta=_meta(a, axis, keepdims, result_dtype))


def sum(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, initial=_NO_INITIAL, variant="auto"):
    """numpy.sum of a Dask array, each chunk summed by gpureduce (see the module's documentation)."""
    return _reduce("sum", a, axis, dtype, keepdims, split_every, out, variant, initial)


def prod(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, initial=_NO_INITIAL, variant="auto"):
    """numpy.prod of a Dask array, each chunk multiplied out by gpureduce."""
    return _reduce("prod", a, axis, dtype, keepdims, split_every, out, variant, initial)


def min(a, axis=None, keepdims=False, split_every=None, out=None, *, initial=_NO_INITIAL, variant="auto"):
    """numpy.min of a Dask array (NaN propagates; an empty reduction raises ValueError unless initial= is given,
    as NumPy's)."""
    return _reduce("min", a, axis, None, keepdims, split_every, out, variant, initial)


def max(a, axis=None, keepdims=False, split_every=None, out=None, *, initial=_NO_INITIAL, variant="auto"):
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
    a = _array(a)
    _whole_arrays_only("count_nonzero", variant)
    counts = np.dtype(np.int64)
    chunk = partial(_kernel_reduce, "count_nonzero", variant)
    total = partial(_kernel_reduce, "sum", variant)
    return da.reduction(a, chunk, total, combine=total, axis=axis, keepdims=keepdims, dtype=counts,
                        split_every=split_every, meta=_meta(a, axis, keepdims, counts))


# ---------------------------------------------------------------- mean: counts and sums, divided once

def _mean_chunk(variant, x, axis=None, keepdims=True, accumulate=None, computing_meta=False, **dask_options):
    if computing_meta:
        return x
    total = _kernel_reduce("sum", variant, x, axis=axis, keepdims=True, result_dtype=accumulate)
    n = np.prod([x.shape[i] for i in axis], dtype=np.int64)
    count = np.full_like(total, n, dtype=np.int64, shape=total.shape) if hasattr(total, "shape") else n
    return {"n": count, "total": total}


def _mean_combine(pairs, axis=None, keepdims=True, accumulate=None, computing_meta=False, **dask_options):
    n, total = _gather(pairs, "n", axis), _gather(pairs, "total", axis)
    return {"n": n.sum(axis=axis, keepdims=True), "total": total.sum(axis=axis, keepdims=True, dtype=accumulate)}


def _mean_agg(pairs, axis=None, keepdims=False, accumulate=None, result_dtype=None, computing_meta=False,
              **dask_options):
    combined = _mean_combine(pairs, axis=axis, accumulate=accumulate)
    n, total = combined["n"], combined["total"]
    if not keepdims:
        n, total = n.squeeze(axis=axis), total.squeeze(axis=axis)
    if bool((n == 0).any()):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)  # and NaN, as NumPy's mean
    with np.errstate(divide="ignore", invalid="ignore"):
        return _scalar_if_0d(np.true_divide(total, n).astype(result_dtype, copy=False))


def mean(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.mean of a Dask array: each chunk's count and sum (float64 for integers and bool, as NumPy
    accumulates), divided once at the end.  An empty reduction gives NaN and warns "Mean of empty slice", as
    NumPy's."""
    a = _array(a)
    _whole_arrays_only("sum", variant)  # an unknown variant fails here, not at compute()
    result_dtype = np.mean(np.ones((1,), a.dtype), dtype=dtype).dtype
    accumulate = np.dtype(dtype) if dtype is not None else (
        a.dtype if dtype_kind(a.dtype) in "fc" else np.dtype(np.float64))
    return da.reduction(a, partial(_mean_chunk, variant, accumulate=accumulate),
                        partial(_mean_agg, accumulate=accumulate, result_dtype=result_dtype),
                        combine=partial(_mean_combine, accumulate=accumulate), axis=axis, keepdims=keepdims,
                        dtype=result_dtype, split_every=split_every, out=out, concatenate=False,
                        meta=_meta(a, axis, keepdims, result_dtype))


# ---------------------------------------------------------------- argmin, argmax: value and global index

def _arg(op, a, axis, keepdims, split_every, out, variant):
    a = _array(a)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be None or an int for {op}, not {type(axis).__name__}")
    _whole_arrays_only(op, variant)  # the classic variants have no argmin/argmax: a ValueError naming those that do
    value_op = "min" if op == "argmin" else "max"
    chunk = partial(_arg_chunk, op, variant)
    return _reductions.arg_reduction(a, chunk, partial(_arg_combine, value_op), partial(_arg_agg, value_op),
                                     axis=axis, keepdims=keepdims, split_every=split_every, out=out)


def _structured(vals, arg):
    """(vals, arg) as one structured array, or a dict for array types without structured dtypes (CuPy)."""
    try:
        result = np.empty_like(vals, shape=vals.shape, dtype=[("vals", vals.dtype), ("arg", arg.dtype)])
    except TypeError:
        result = {}
    result["vals"] = vals
    result["arg"] = arg
    return result


def _arg_chunk(op, variant, x, axis, offset_info):
    """One chunk's first extreme: its index from gpureduce (one read of the chunk, one transfer for a host chunk),
    its value picked from the chunk at that index, and the index made global with the block's offset."""
    arg_axis = None if len(axis) == x.ndim or x.ndim == 1 else axis[0]
    arg = _kernel_reduce(op, variant, x, axis=arg_axis, keepdims=True)
    return _structured(*_global_arg(x, arg, arg_axis, offset_info))


def _global_arg(x, arg, arg_axis, offset_info):
    """(value, global index) of a chunk's extremes at the chunk's positions `arg` (arg_axis None: the flattened
    chunk, one position), the index made global with the block's offset."""
    if arg_axis is None:
        vals = x.reshape(-1)[arg.reshape(-1)].reshape(arg.shape)
        offset, total_shape = offset_info
        local = np.unravel_index(int(arg.reshape(-1)[0]), x.shape)
        arg = np.full_like(arg, np.ravel_multi_index(tuple(o + i for o, i in zip(offset, local)), total_shape))
    else:
        vals = np.take_along_axis(x, arg, axis=arg_axis)
        arg = arg + offset_info
    return vals, arg


def _first_extreme(value_op, data, axis, keepdims, skip_nan=False):
    """(global index, value) of the partials' extreme: NaN counts as extreme, and of tied partials the smallest
    global index wins (NumPy's first occurrence; Dask's own combine takes the first in block order, which is not
    the first in the array's order when the reduction runs over several axes).  skip_nan (nanargmin, nanargmax):
    a NaN partial stands for a chunk's slice without a number (its index that slice's first); it counts as +inf
    (nanargmax: -inf), as NumPy's nanargmin takes a NaN, so it wins only a tie with that infinity; the value is
    NaN where no partial has a number."""
    vals, arg = data["vals"], data["arg"]
    ax = None if len(axis) == vals.ndim or vals.ndim == 1 else axis[0]
    if skip_nan:
        numbers = ~np.isnan(vals)
        filled = np.where(numbers, vals, np.inf if value_op == "min" else -np.inf)
        extreme = getattr(np, value_op)(filled, axis=ax, keepdims=True)
        tied = filled == extreme
        extreme = np.where(numbers.any(axis=ax, keepdims=True), extreme, np.nan)
    else:
        extreme = getattr(np, value_op)(vals, axis=ax, keepdims=True)  # NaN propagates
        tied = vals == extreme
        if dtype_kind(vals.dtype) in "fc":
            tied = tied | (np.isnan(vals) & np.isnan(extreme))
    first = np.where(tied, arg, np.iinfo(arg.dtype).max).min(axis=ax, keepdims=True)
    if not keepdims:
        extreme, first = (np.squeeze(extreme), np.squeeze(first)) if ax is None else (
            np.squeeze(extreme, axis=ax), np.squeeze(first, axis=ax))
    return first, extreme


def _arg_combine(value_op, data, axis=None, **dask_options):
    first, extreme = _first_extreme(value_op, data, axis, keepdims=True)
    return _structured(extreme, first)


def _arg_agg(value_op, data, axis=None, keepdims=False, **dask_options):
    return _scalar_if_0d(_first_extreme(value_op, data, axis, keepdims)[0])


def _scalar_if_0d(result):
    """A 0-d NumPy result as a NumPy scalar, as NumPy's own reductions give (a device 0-d array stays one)."""
    return result[()] if isinstance(result, np.ndarray) and result.ndim == 0 else result


def argmin(a, axis=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.argmin of a Dask array: the global index of the first minimum (the first NaN, where there is one)."""
    return _arg("argmin", a, axis, keepdims, split_every, out, variant)


def argmax(a, axis=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.argmax of a Dask array: the global index of the first maximum (the first NaN, where there is one)."""
    return _arg("argmax", a, axis, keepdims, split_every, out, variant)


# ---------------------------------------------------------------- vector_norm: the norm of the chunks' norms

def _kernel_norm(variant, order, x, axis=None, keepdims=False, computing_meta=False, **dask_options):
    options = _options(variant)
    return kernels.vector_norm(x, axis=axis, keepdims=keepdims, ord=order, **options)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2, split_every=None, variant="auto"):
    """numpy.linalg.vector_norm of a Dask array: each chunk's norm of order `ord`, then the norm of those norms
    with the same order (the largest of the largest, the square root of the sum of squares, ...), except that
    ord 0's counts are added (order 1).  The partial norms are rounded to the result dtype once per level of
    the tree; an axis may be an int or a tuple, as NumPy's."""
    from .linalg import _check_axis, _order

    a = _array(x)
    _check_axis(axis)
    order = _order(ord)
    _whole_arrays_only("vector_norm", variant)
    reduced = range(a.ndim) if axis is None else (axis,) if not isinstance(axis, tuple) else axis
    if order == -np.inf and a.ndim and math.prod(a.shape[int(ax) % a.ndim] for ax in reduced) == 0:  # (any: ours)
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    result_dtype = np.linalg.vector_norm(np.ones((1,), a.dtype)).dtype  # NumPy's: real, float64 for integers
    chunk = partial(_kernel_norm, variant, order)
    combined = partial(_kernel_norm, variant, 1.0 if order == 0 else order)
    with warnings.catch_warnings():  # Dask casts a complex array's empty meta to the real result dtype
        warnings.simplefilter("ignore", getattr(np, "exceptions", np).ComplexWarning)
        return da.reduction(a, chunk, combined, combine=combined, axis=axis, keepdims=keepdims, dtype=result_dtype,
                            split_every=split_every, meta=_meta(a, axis, keepdims, result_dtype))


# ---------------------------------------------------------------- ptp: the chunks' minima and maxima

def ptp(a, axis=None, out=None, keepdims=False, *, split_every=None, variant="auto"):
    """numpy.ptp of a Dask array: each chunk's minimum and maximum, the minima's minimum and the maxima's maximum,
    subtracted once at the end in `a`'s dtype (an integer range wraps, as NumPy's; NaN propagates)."""
    a = _array(a)
    _whole_arrays_only("ptp", variant)
    if a.dtype == np.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                        "operator, or the logical_xor function instead.")
    if _reduced_size(a.shape, axis) == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    return da.reduction(a, partial(_ptp_chunk, variant), partial(_ptp_agg, variant),
                        combine=partial(_ptp_combine, variant), axis=axis, keepdims=keepdims, dtype=a.dtype,
                        split_every=split_every, out=out, concatenate=False, meta=_meta(a, axis, keepdims, a.dtype))


def _ptp_chunk(variant, x, axis=None, keepdims=True, computing_meta=False, **dask_options):
    if computing_meta:
        return x
    if _reduced_size(x.shape, axis) == 0:  # (a chunk of a non-empty array can be empty): the identities
        return {"min": _filled(x, axis, _highest(x.dtype), x.dtype), "max": _filled(x, axis, _lowest(x.dtype), x.dtype)}
    return {"min": _kernel_reduce("min", variant, x, axis=axis, keepdims=True),
            "max": _kernel_reduce("max", variant, x, axis=axis, keepdims=True)}


def _ptp_combine(variant, parts, axis=None, keepdims=True, **dask_options):
    return {"min": _kernel_reduce("min", variant, _gather(parts, "min", axis), axis=axis, keepdims=True),
            "max": _kernel_reduce("max", variant, _gather(parts, "max", axis), axis=axis, keepdims=True)}


def _ptp_agg(variant, parts, axis=None, keepdims=False, computing_meta=False, **dask_options):
    extremes = _ptp_combine(variant, parts, axis=axis)
    spread = np.subtract(extremes["max"], extremes["min"])  # on arrays: wraps without a scalar overflow warning
    return _scalar_if_0d(spread if keepdims else spread.squeeze(axis=axis))


# ---------------------------------------------------------------- logsumexp: the chunks' logsumexps

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, *, split_every=None, variant="auto"):
    """scipy.special.logsumexp of a Dask array: each chunk's logsumexp (its largest element m and the sum s of
    exp(x - m) folded into m + log(s), one rounding) in float64, then the logsumexp of those partials, which the
    kernel shifts by their largest, so nothing overflows; -inf, inf and NaN as SciPy's (and gpureduce's).  float64
    for bool and integer inputs, else `a`'s dtype; -inf for an empty slice.  return_sign=True also gives the
    sign, lazily: 1.0, 0.0 where every element is -inf, -1.0 for an empty slice (SciPy's), NaN where the result
    is NaN.  With weights b (a Dask or NumPy array, broadcast with `a`): each chunk's log|sum| and sign, then the
    weighted logsumexp of those partials with their signs as weights (_weighted_logsumexp)."""
    a = _array(a)
    if b is not None:
        return _weighted_logsumexp(a, axis, b, keepdims, return_sign, split_every, variant)
    if a.dtype.kind == "c":
        raise TypeError(f"unsupported dtype {a.dtype} of the Dask array: logsumexp has no kernel for it "
                        "(gpureduce.logsumexp takes real inputs)")
    _whole_arrays_only("logsumexp", variant)
    result_dtype = a.dtype if dtype_kind(a.dtype) == "f" else np.dtype(np.float64)
    result = da.reduction(a, partial(_lse_chunk, variant), partial(_lse_kernel, variant, result_dtype),
                          combine=partial(_lse_kernel, variant, np.float64), axis=axis, keepdims=keepdims,
                          dtype=result_dtype, split_every=split_every, meta=_meta(a, axis, keepdims, result_dtype))
    if not return_sign:
        return result
    empty = _reduced_size(a.shape, axis) == 0
    return result, result.map_blocks(_lse_sign, empty=empty, dtype=result_dtype, meta=result._meta)


def _weighted_logsumexp(a, axis, b, keepdims, return_sign, split_every, variant):
    """logsumexp(a, b=b) of Dask arrays: `a` and `b` broadcast, cast to SciPy's dtype (the common one, at least
    floating) and stacked on a new leading axis, so that one reduction reads a chunk of each; a chunk's partial is
    (log|sum|, sign) on that axis, and partials fold as a weighted logsumexp whose weights are their signs (a zero
    sum, sign 0, drops out).  The sign of an empty slice is -1, as SciPy's."""
    number = b
    b = b if isinstance(b, da.Array) else da.asarray(b)
    dtype = weighted_dtype(a.dtype, number, b.dtype)
    _whole_arrays_only("logsumexp", variant)
    a, b = da.broadcast_arrays(a.astype(dtype), b.astype(dtype))
    pair = da.stack([a, b.rechunk(a.chunks)]).rechunk({0: 2})
    axes = tuple(ax + 1 for ax in _axes(a.ndim, axis))  # the stacked axis 0 is never reduced
    folded = da.reduction(pair, partial(_wlse_fold, variant, np.float64), partial(_wlse_fold, variant, dtype),
                          combine=partial(_wlse_fold, variant, np.float64), axis=axes, keepdims=keepdims,
                          dtype=dtype, split_every=split_every, concatenate=True,
                          meta=_meta(pair, axes, keepdims, dtype))
    result, sign = folded[0], folded[1]
    if not return_sign:
        return da.where(sign < 0, np.nan, result)  # SciPy's value of a negative sum
    if _reduced_size(a.shape, axis) == 0:  # SciPy's sign of an empty slice (its value stays -inf)
        sign = da.full_like(sign, -1.0)
    return result, sign


def _wlse_fold(variant, fold_dtype, pair, axis=None, keepdims=True, computing_meta=False, **dask_options):
    """A (values, weights) pair of chunks, or of (log|sum|, sign) partials, on axis 0 -> their weighted logsumexp as
    (log|sum|, sign) on axis 0, in `fold_dtype`, of the chunks' kind (np.stack and np.full_like dispatch to CuPy's)."""
    if computing_meta:
        return pair
    axes = tuple(ax - 1 for ax in axis)
    if _reduced_size(pair.shape[1:], axes) == 0:  # nothing to fold: log 0 with sign 0, which later folds drop
        kept = tuple(1 if i in axes else e for i, e in enumerate(pair.shape[1:]))
        if not keepdims:
            kept = tuple(e for i, e in enumerate(pair.shape[1:]) if i not in axes)
        return np.stack([np.full_like(pair[0], -np.inf, dtype=fold_dtype, shape=kept),
                         np.full_like(pair[0], 0, dtype=fold_dtype, shape=kept)])
    value, sign = kernels.logsumexp(pair[0], axis=axes, b=pair[1], keepdims=keepdims, return_sign=True,
                                    **_options(variant))
    return np.stack([value, sign]).astype(fold_dtype, copy=False)


def _lse_chunk(variant, x, axis=None, keepdims=True, computing_meta=False, **dask_options):
    if computing_meta:
        return x
    if _reduced_size(x.shape, axis) == 0:
        return _filled(x, axis, -np.inf, np.float64)  # the log of an empty sum
    return kernels.logsumexp(x, axis=axis, keepdims=True, **_options(variant)).astype(np.float64, copy=False)


def _lse_kernel(variant, result_dtype, partials, axis=None, keepdims=True, computing_meta=False, **dask_options):
    result = kernels.logsumexp(partials, axis=axis, keepdims=keepdims, **_options(variant))
    return result.astype(result_dtype, copy=False)


def _lse_sign(result, empty):
    """SciPy's sign of a logsumexp result: -1.0 for an empty slice, else 1.0, 0.0 for -inf (an empty sum), NaN."""
    if empty:
        sign = np.full_like(result, -1.0)
    else:
        sign = (result != -np.inf).astype(result.dtype)
        sign = np.where(np.isnan(result), result, sign)
    return _scalar_if_0d(sign.astype(result.dtype, copy=False))


# ---------------------------------------------------------------- scans: each block behind the ones before

_DTYPED_SCANS = ("cumsum", "cumprod", "nancumsum", "nancumprod")  # the scans that take dtype=


def _kernel_scan(op, variant, x, axis=None, dtype=None):
    options = _options(variant)
    if dtype is not None and op in _DTYPED_SCANS:
        options["dtype"] = dtype
    return getattr(kernels, op)(x, axis=axis, **options)


def _check_scan_variant(op, variant):
    """An unknown variant, or one that does not scan `op`: gpureduce's ValueError naming the choices, here, not at
    compute()."""
    if variant != "auto":
        _variant_for("scan", _registry.SCAN_FUNCTIONS[op], variant)


def _scan(op, a, axis, dtype, out, variant):
    a = _array(a)
    _check_scan_variant(op, variant)
    probe = np.ones((1,), a.dtype)
    if op in _DTYPED_SCANS:
        result_dtype = getattr(np, op)(probe, dtype=dtype).dtype
    elif op == "logcumsumexp":
        if a.dtype.kind == "c":
            raise TypeError(f"unsupported dtype {a.dtype} of the Dask array: logsumexp has no kernel for it "
                            "(gpureduce.logcumsumexp takes real inputs)")
        result_dtype = a.dtype if dtype_kind(a.dtype) == "f" else np.dtype(np.float64)
    else:
        result_dtype = a.dtype
    # the step that folds the blocks before into a block, and what folds in nothing (a nan scan's carry holds no
    # NaN of an element: only one of the data's own, inf - inf, which stays, as NumPy's)
    ufunc, ident = {
        "cumsum": (np.add, 0),
        "cumprod": (np.multiply, 1),
        "nancumsum": (np.add, 0),
        "nancumprod": (np.multiply, 1),
        "cummax": (np.maximum, _lowest(result_dtype)),
        "cummin": (np.minimum, _highest(result_dtype)),
        "logcumsumexp": (np.logaddexp, -np.inf),
    }[op]
    binop = partial(_fold, ufunc)
    if axis is None:
        # Flattened here, not by cumreduction: Dask 2026.8 rechunks its flattened array to chunks of
        # `npartitions` elements (15 elements a chunk for 15 blocks), a graph whose ordering alone takes about a
        # minute for 10^6 elements.  ravel() keeps about as many blocks as the input has.
        a, axis = a.ravel(), 0
    func = partial(_kernel_scan, op, variant, dtype=result_dtype)
    func.__name__ = op  # cumreduction names its graph layer after it
    return _reductions.cumreduction(func, binop, ident, a, axis=axis, dtype=result_dtype, out=out)


# A host block at least this large has the blocks before it folded in on several threads (NumPy's ufuncs release
# the GIL): the fold reads and writes the whole block in host memory, which one thread does at a fraction of the
# memory's bandwidth, about 7 GB/s, seven times slower than the GPU's scan of the same block.
_PARALLEL_FOLD_BYTES = 32 << 20
_FOLD_THREADS = 8
_fold_pool = None


def _fold(ufunc, carry, block):
    """ufunc(carry, block): the running result of the blocks before (length 1 along the scan axis) folded into
    a scanned block, as cumreduction asks; a large NumPy block in slices on up to _FOLD_THREADS threads."""
    threads = builtins.min(_FOLD_THREADS, os.cpu_count() or 1)  # (this module's min is the Dask reduction)
    along = [d for d in range(block.ndim) if np.ndim(carry) == block.ndim and np.shape(carry)[d] == 1]
    if (type(block) is not np.ndarray or block.nbytes < _PARALLEL_FOLD_BYTES or threads < 2 or not along
            or np.result_type(carry, block) != block.dtype):
        return _fold_slice(ufunc, carry, block)
    d = builtins.max(along, key=lambda k: block.shape[k])  # slices along a dimension the carry is broadcast over
    if block.shape[d] < threads:
        return _fold_slice(ufunc, carry, block)
    global _fold_pool
    if _fold_pool is None:
        _fold_pool = concurrent.futures.ThreadPoolExecutor(_FOLD_THREADS, thread_name_prefix="gpureduce-fold")
    out = np.empty_like(block)
    bounds = np.linspace(0, block.shape[d], threads + 1).astype(int)
    pieces = [(slice(None),) * d + (slice(lo, hi),) for lo, hi in zip(bounds[:-1], bounds[1:])]
    for done in [_fold_pool.submit(_fold_slice, ufunc, carry, block[p], out[p]) for p in pieces]:
        done.result()
    return out


def _fold_slice(ufunc, carry, block, out=None):
    with np.errstate(invalid="ignore"):  # logaddexp of a NaN: NumPy warns, the kernels propagate it silently
        return ufunc(carry, block) if out is None else ufunc(carry, block, out=out)


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return False if dtype.kind == "b" else np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _highest(dtype):
    dtype = np.dtype(dtype)
    return True if dtype.kind == "b" else np.iinfo(dtype).max if dtype.kind in "iu" else np.inf


def cumsum(a, axis=None, dtype=None, out=None, *, variant="auto"):
    """numpy.cumsum of a Dask array (axis=None: the flattened array, as NumPy's)."""
    return _scan("cumsum", a, axis, dtype, out, variant)


def cumprod(a, axis=None, dtype=None, out=None, *, variant="auto"):
    """numpy.cumprod of a Dask array (axis=None: the flattened array, as NumPy's)."""
    return _scan("cumprod", a, axis, dtype, out, variant)


def cummax(a, axis=None, out=None, *, variant="auto"):
    """numpy.maximum.accumulate of a Dask array (axis=None: the flattened array, as gpureduce.cummax)."""
    return _scan("cummax", a, axis, None, out, variant)


def cummin(a, axis=None, out=None, *, variant="auto"):
    """numpy.minimum.accumulate of a Dask array (axis=None: the flattened array, as gpureduce.cummin)."""
    return _scan("cummin", a, axis, None, out, variant)


def logcumsumexp(a, axis=None, out=None, *, variant="auto"):
    """gpureduce.logcumsumexp of a Dask array (torch.logcumsumexp; axis=None: the flattened array): gpureduce
    scans each chunk and the blocks before are folded in with numpy.logaddexp, from -inf (the log of an empty
    sum).  float64 for bool and integer inputs, else `a`'s dtype."""
    return _scan("logcumsumexp", a, axis, None, out, variant)


# ---------------------------------------------------------------- gpureduce.sum(dask_array) & co: lazy, as numpy's

def reduce_lazily(op, a, axis, dtype, out, keepdims, initial, where, variant, ord=None, ddof=None):
    """gpureduce.reduce(op, a, ...) of a Dask array: the lazy result of this module's function."""
    if where is not True:
        raise TypeError("where= is not supported for Dask arrays (gpureduce.dask); mask the array first "
                        "(dask.array.where) or reduce a NumPy or device array")
    if op not in OPERATORS:
        raise TypeError(f"gpureduce.{op} does not take Dask arrays yet; gpureduce.dask has {', '.join(OPERATORS)}")
    options = {"axis": axis, "keepdims": keepdims, "variant": variant}
    if out is not None:
        options["out"] = out
    if dtype is not None:
        options["dtype"] = dtype
    if initial is not NoValue and initial is not None:
        options["initial"] = initial
    if ord is not None:
        options["ord"] = ord
    if ddof is not None:
        options["ddof"] = ddof
    return globals()[op](a, **options)


def scan_lazily(op, a, axis, dtype, out, exclusive, variant):
    """gpureduce.scan(op, a, ...) of a Dask array: the lazy result of this module's function."""
    if exclusive:
        raise TypeError("exclusive=True is not supported for Dask arrays (gpureduce.dask)")
    if op not in _registry.SCAN_OPS:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(_registry.SCAN_OPS)}")
    name = _registry.scan_function_name(op)  # sum: cumsum, nansum: nancumsum, logsumexp: logcumsumexp
    options = {"axis": axis, "out": out, "variant": variant}
    if dtype is not None:
        options["dtype"] = dtype
    return globals()[name](a, **options)


# The moments and the nan family live in modules of their own, which read `kernels` and the helpers above from
# this module when they run (imported last: both import each other).
from ._dask_moments import nanstd, nanvar, std, var  # noqa: E402
from ._dask_nan import (nanargmax, nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmin, nanprod,  # noqa: E402
                        nansum)
