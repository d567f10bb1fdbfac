"""What gpureduce.dask's reductions and scans share: the chunk, combine and aggregate functions Dask's
``reduction`` calls, the functions each chunk is reduced or scanned with (``kernels``: the eager calls under
gpureduce's public functions), and mean's machinery, which the nan family reuses.  The public functions are in
gpureduce/dask/__init__.py (the moments in moments.py, the nan family in nan.py, the scans' graph in scans.py).
"""
from __future__ import annotations

import math
import types
import warnings
from functools import partial

import numpy as np
import dask.array as da
from dask.array import reductions as _reductions
from dask.array.utils import meta_from_array

from .. import _registry
from .._planning import calls
from .._planning.numpy_rules import NoValue
from .._planning.operands import ACCUMULATOR, dtype_kind
from .._planning.plan import takes_axes, variant_for
from .._registry import DTYPE_NAMES

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.numeric import normalize_axis_tuple


def _eager_functions():
    """gpureduce's reductions and scans by their public names and keywords, as the eager calls under the public
    functions run them (gpureduce/_planning/calls.py): what a chunk, or its partials, are reduced or scanned with."""
    functions = {}
    for op in _registry.REDUCE_OPS:
        functions[op] = partial(_eager_reduce, op)
    for op in _registry.SCAN_OPS:
        functions[_registry.scan_function_name(op)] = partial(_eager_scan, op)
    functions["logsumexp"] = _eager_logsumexp
    return types.SimpleNamespace(**functions)


def _eager_reduce(op, x, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=True, *,
                  variant="auto", ddof=None, ord=None):
    return calls.reduce(op, x, axis, dtype, out, keepdims, initial, where, variant, ddof, ord)


def _eager_scan(op, x, axis=None, dtype=None, out=None, *, exclusive=False, variant="auto"):
    return calls.scan(op, x, axis, dtype, out, exclusive, variant)


def _eager_logsumexp(x, axis=None, b=None, keepdims=False, return_sign=False, *, variant="auto"):
    return calls.logsumexp(x, axis, b, keepdims, return_sign, variant)


# The functions each chunk is reduced or scanned with (gpureduce's; tests without a GPU put NumPy's here).
kernels = _eager_functions()


def checked_array(a):
    if not isinstance(a, da.Array):
        raise TypeError(f"gpureduce.dask functions take a dask.array.Array, not {type(a).__name__}; for NumPy or "
                        "device arrays call gpureduce's own functions")
    if a.dtype.name not in DTYPE_NAMES:
        raise TypeError(f"unsupported dtype {a.dtype} of the Dask array: gpureduce reduces {', '.join(DTYPE_NAMES)}")
    return a


def reduced_dtype(op, dtype, a):
    """NumPy's result dtype of `op` over `a`'s dtype (with dtype= if given); NumPy's errors for bad ones."""
    probe = np.ones((1,), a.dtype)
    return getattr(np, op)(probe, dtype=dtype).dtype if op in ("sum", "prod") else getattr(np, op)(probe).dtype


def result_meta(a, axis, keepdims, dtype):
    """The result's meta (an empty array of the chunks' kind), given so that Dask never calls a kernel on one."""
    if axis is None:
        reduced = a.ndim
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        reduced = len({int(ax) % a.ndim if a.ndim else 0 for ax in axes})
    with warnings.catch_warnings():  # a complex input's empty meta cast to a real result dtype (var): nothing lost
        warnings.simplefilter("ignore", getattr(np, "exceptions", np).ComplexWarning)
        return meta_from_array(a, ndim=a.ndim if keepdims else a.ndim - reduced, dtype=dtype)


def axes_of(ndim, axis):
    """`axis` (None, an int or a tuple; negative counts from the end) as a tuple of axes; NumPy's AxisError."""
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


# One task combines every chunk's partial result: one level of tree, as few tasks and as few waits between levels
# as the answer allows (Dask's default combines 4 a task: log4(chunks) levels, each a round of scheduling), while
# a task's partials stay under _COMBINE_BYTES (at a generous _PARTIAL_BYTES an element: mean's count and sum,
# argmin's value and index, var's three moments) and number at most _COMBINE_PARTIALS; past either, two levels.
_COMBINE_BYTES = 64 << 20
_PARTIAL_BYTES = 32
_COMBINE_PARTIALS = 1024


def one_level(a, axis, split_every):
    """split_every for Dask's reduction of `a` over `axis`: the caller's if given, else every reduced block's
    partial combined by one task where they are few and small enough, else about the square root of their count a
    task (two levels)."""
    if split_every is not None:
        return split_every
    axes = axes_of(a.ndim, axis)
    blocks = math.prod(a.numblocks[i] for i in axes)
    kept = math.prod(max(a.chunks[i], default=1) for i in range(a.ndim) if i not in axes)
    if blocks <= _COMBINE_PARTIALS and blocks * kept * _PARTIAL_BYTES <= _COMBINE_BYTES:
        return {i: max(a.numblocks[i], 2) for i in axes}
    return max(2, math.isqrt(blocks - 1) + 1)


def reduced_size(shape, axis):
    """How many elements each result of a reduction over `axis` takes."""
    return math.prod(shape[i] for i in axes_of(len(shape), axis))


def filled_partial(x, axis, value, dtype):
    """`value` in the shape of a chunk's partial (`x` reduced over the axes `axis`, kept), of `x`'s kind: what a
    chunk without elements to reduce gives, without a kernel call."""
    kept = tuple(1 if i in axis else e for i, e in enumerate(x.shape))
    return np.full_like(x, value, dtype=dtype, shape=kept)


def empty_partial(x, axis):
    """The partial of a chunk without an element along the reduced axes `axis`, for a reduction without an
    identity (min, max, argmin, argmax): of no extent along those of them the chunk has none of (1 along the
    others, the kept axes the chunk's), so that the partials' concatenation drops it."""
    axes = axes_of(x.ndim, axis)
    return np.empty_like(x, shape=tuple((0 if x.shape[i] == 0 else 1) if i in axes else x.shape[i]
                                        for i in range(x.ndim)))


def kernel_options(variant):
    return {} if variant == "auto" else {"variant": variant}


def gather_parts(parts, key, axis):
    """The `key` arrays of the partial results Dask gives a combine or aggregate with concatenate=False (one
    result, or nested lists of them, one level per reduced axis), concatenated along the reduced axes."""
    if not isinstance(parts, list):
        parts = [parts]
    values = _reductions.deepmap(lambda p: p[key], parts)
    if not axis:  # no reduced axis (a 0-d array, axis=()): one block's partial, nothing to concatenate
        return values[0]
    return _reductions._concatenate2(values, axes=sorted(axis))


NO_INITIAL = NoValue  # "not given"; one object in every worker process, as pickled there


def whole_arrays_only(op, variant):
    """Whether reduction `variant` is one of the seeds' classic ones, which reduce a whole array and take no axis
    or keepdims (the planner's rule); a ValueError naming the choices for an unknown variant or one without `op`,
    and for an exact variant of an operator other than sum, nansum, mean and nanmean (gpureduce/dask/exact.py keeps
    those partials exactly)."""
    if variant != "auto" and "exact" in variant_for("reduce", op, variant).properties:
        raise ValueError(f"variant {variant!r} of a Dask array takes sum, nansum, mean and nanmean of floating "
                         f"arrays, not {op}; use variant='auto' (min, max and integer sums are exact in any order)")
    return variant != "auto" and not takes_axes(op, variant)


def carried_dtype(dtype, op, variant, kind="reduce"):
    """The dtype the partials of reduction `op` (or the carry of scan `op`) with `dtype` results are kept in
    between chunks: float32 for float16 and bfloat16 (the kernels' accumulator), else `dtype` itself.  gpureduce's
    own call rounds a half result once; rounding every chunk's partial to the half dtype would add a rounding per
    chunk.  A classic variant keeps the half dtype: it reduces in NumPy's result dtype and no other."""
    dtype = np.dtype(dtype)
    if variant != "auto" and "axes" not in variant_for(kind, op, variant).properties:
        return dtype
    return ACCUMULATOR.get(dtype, dtype)


def kernel_reduce(op, variant, x, axis=None, keepdims=False, result_dtype=None, initial=NO_INITIAL, round_to=None,
                  **dask_options):
    """`op` of one chunk or of concatenated partials (Dask's own options, dtype= among them, are not NumPy's), in
    `result_dtype`, then rounded once to `round_to` where given (a half dtype's aggregate of float32 partials)."""
    if round_to is not None and np.dtype(round_to) != np.dtype(result_dtype):
        reduced = kernel_reduce(op, variant, x, axis, keepdims, result_dtype, initial)
        return reduced.astype(round_to)
    fn = getattr(kernels, op)
    options = {"keepdims": keepdims}
    if result_dtype is not None:
        options["dtype"] = result_dtype
    if initial is not NO_INITIAL:
        options["initial"] = initial
    if variant != "auto":
        options["variant"] = variant
        axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, (int, np.integer)) else axis
        if whole_arrays_only(op, variant) and len({int(ax) % (x.ndim or 1) for ax in axes}) == x.ndim:
            # Dask asks for every axis with keepdims=True; a classic variant takes the whole chunk (axis=None)
            # and nothing else, so its one value is given the kept dimensions here.
            del options["keepdims"]
            whole = fn(x, axis=None, **options)
            return whole.reshape((1,) * x.ndim) if keepdims else whole
    return fn(x, axis=axis, **options)


def mean_chunk(variant, x, axis=None, keepdims=True, accumulate=None, computing_meta=False, **dask_options):
    if computing_meta:
        return x
    total = kernel_reduce("sum", variant, x, axis=axis, keepdims=True, result_dtype=accumulate)
    n = np.prod([x.shape[i] for i in axis], dtype=np.int64)
    count = np.full_like(total, n, dtype=np.int64, shape=total.shape) if hasattr(total, "shape") else n
    return {"n": count, "total": total}


def mean_combine(pairs, axis=None, keepdims=True, accumulate=None, computing_meta=False, **dask_options):
    n, total = gather_parts(pairs, "n", axis), gather_parts(pairs, "total", axis)
    return {"n": n.sum(axis=axis, keepdims=True), "total": total.sum(axis=axis, keepdims=True, dtype=accumulate)}


def mean_agg(pairs, axis=None, keepdims=False, accumulate=None, result_dtype=None, computing_meta=False,
              **dask_options):
    combined = mean_combine(pairs, axis=axis, accumulate=accumulate)
    n, total = combined["n"], combined["total"]
    if not keepdims:
        n, total = n.squeeze(axis=axis), total.squeeze(axis=axis)
    if bool((n == 0).any()):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)  # and NaN, as NumPy's mean
    with np.errstate(divide="ignore", invalid="ignore"):
        return scalar_if_0d(np.true_divide(total, n).astype(result_dtype, copy=False))


def mean(a, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, variant="auto"):
    """numpy.mean of a Dask array: each chunk's count and sum (float64 for integers and bool, as NumPy
    accumulates), divided once at the end.  An empty reduction gives NaN and warns "Mean of empty slice", as
    NumPy's."""
    a = checked_array(a)
    whole_arrays_only("sum", variant)  # an unknown variant fails here, not at compute()
    result_dtype = np.mean(np.ones((1,), a.dtype), dtype=dtype).dtype
    accumulate = carried_dtype(dtype if dtype is not None else (
        a.dtype if dtype_kind(a.dtype) in "fc" else np.float64), "sum", variant)
    return da.reduction(a, partial(mean_chunk, variant, accumulate=accumulate),
                        partial(mean_agg, accumulate=accumulate, result_dtype=result_dtype),
                        combine=partial(mean_combine, accumulate=accumulate), axis=axis, keepdims=keepdims,
                        dtype=result_dtype, split_every=one_level(a, axis, split_every), out=out, concatenate=False,
                        meta=result_meta(a, axis, keepdims, result_dtype))


def structured_partials(vals, arg):
    """(vals, arg) as one structured array, or a dict for array types without structured dtypes (CuPy)."""
    try:
        result = np.empty_like(vals, shape=vals.shape, dtype=[("vals", vals.dtype), ("arg", arg.dtype)])
    except TypeError:
        result = {}
    result["vals"] = vals
    result["arg"] = arg
    return result


def global_arg(x, arg, arg_axis, offset_info):
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


def first_extreme(value_op, data, axis, keepdims, skip_nan=False):
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


def scalar_if_0d(result):
    """A 0-d NumPy result as a NumPy scalar, as NumPy's own reductions give (a device 0-d array stays one)."""
    return result[()] if isinstance(result, np.ndarray) and result.ndim == 0 else result


def lowest(dtype):
    dtype = np.dtype(dtype)
    return False if dtype.kind == "b" else np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def highest(dtype):
    dtype = np.dtype(dtype)
    return True if dtype.kind == "b" else np.iinfo(dtype).max if dtype.kind in "iu" else np.inf
