"""variant="exact" of sum, nansum, mean and nanmean of Dask arrays (issue 41): the correctly rounded result of the
whole reduction, whatever the chunking (of a complex array, each part's).

A chunk's exact sum along the reduced axes cannot travel as one float (its rounding would be added to the
others'), so each partial is kept exactly, as a few float64 terms whose sum it is (``exact_terms``): gpureduce's
exact sum of the row gives r1 (the exact sum rounded once to float64), the exact sum of the row and -r1 gives r2,
and so on until a term is zero; every term is a float64 number and their sum is the row's exact sum, since each
pass sums the elements and the terms so far exactly (a float64 copy of the rows with room for the terms after each
row: a pass each, usually three for float32 data, each a read of the copy).  The combine does the same to the
partials' terms along the reduced axes, and the aggregate adds each result's few terms in rationals, divides a
mean's by the count taken, and rounds once into the result dtype (gpureduce._bounds.rational_rounded).  NaN where
an element is NaN (a nan form: none are taken) or both infinities are, an infinity where one is, as the eager exact
sum; a chunk of float64 elements whose exact sum along the reduced axes passes float64's range raises
OverflowError, where its partial could not be kept.
"""
from __future__ import annotations

import math
import warnings
from fractions import Fraction
from functools import partial

import numpy as np
import dask.array as da
from dask.array import reductions as _reductions
from dask.array.core import handle_out
from dask.core import flatten

from .._bounds import rational_rounded
from .._planning.exact_complex import warn_discarded_imaginary
from .._planning.numpy_rules import NoValue
from .._planning.libraries import library_of
from .._planning.operands import COMPLEX_PART, to_host
from .._planning.results import host_in_kind_of
from . import chunks
from .chunks import axes_of, checked_array, one_level, result_meta, scalar_if_0d

_FLOATS = ("float16", "bfloat16", "float32", "float64")
# the most terms a partial can need: the exact sums of float64 elements span 2^-1074 .. 2^1084 (2^60 elements), of
# float32, bfloat16 and float16 ones 2^-149 .. 2^188: 53 bits a term
MOST_TERMS = {True: 42, False: 8}


def exact_reduction(op, a, axis, dtype, keepdims, split_every, out, variant, initial=NoValue):
    """`op` (sum, nansum, mean or nanmean) of Dask array `a` under an exact variant (the module's documentation)."""
    a = checked_array(a)
    if a.dtype.kind == "c":
        return _complex_reduction(op, a, axis, dtype, keepdims, split_every, out, variant, initial)
    if a.dtype.name not in _FLOATS:
        raise TypeError(f"variant {variant!r} of a Dask array of {a.dtype}: it sums float16, bfloat16, float32, "
                        "float64, complex64 and complex128 chunks exactly (integers and bool: variant='auto' is "
                        "exact)")
    mean = op.endswith("mean")
    result_dtype = (np.mean if mean else np.sum)(np.ones((1,), a.dtype), dtype=dtype).dtype
    if result_dtype.name not in _FLOATS:
        raise TypeError(f"variant {variant!r} of a Dask array: dtype={result_dtype} is not a floating dtype")
    # elements of a narrower dtype= are rounded into it first, as NumPy's sum casts them
    element_dtype = result_dtype if result_dtype.itemsize < a.dtype.itemsize else None
    most = MOST_TERMS[a.dtype == np.float64 and element_dtype is None]
    return da.reduction(a, partial(exact_chunk, variant, most, op.startswith("nan"), element_dtype),
                        partial(exact_aggregate, variant, most, mean, result_dtype, initial),
                        combine=partial(exact_combine, variant, most), axis=axis, keepdims=keepdims,
                        dtype=result_dtype, split_every=one_level(a, axis, split_every), out=out, concatenate=False,
                        meta=result_meta(a, axis, keepdims, result_dtype))


def _complex_reduction(op, a, axis, dtype, keepdims, split_every, out, variant, initial):
    """A complex array's: each part's exact reduction, the parts joined block by block with no arithmetic (an
    infinite part leaves the other alone), as the eager call's (gpureduce/_planning/exact_complex.py).  A nan form
    drops an element where either part is NaN: both parts are NaN there, so each part's drops the same ones.  A
    real dtype=: the real parts' alone."""
    result_dtype = np.dtype(dtype) if dtype is not None else a.dtype
    real, imag = da.real(a), da.imag(a)
    if op.startswith("nan"):
        either = da.isnan(a)
        real, imag = da.where(either, np.nan, real), da.where(either, np.nan, imag)
    if result_dtype.kind != "c":  # NumPy casts the elements first: the real parts, with its warning
        warn_discarded_imaginary()
        return exact_reduction(op, real, axis, result_dtype, keepdims, split_every, out, variant, initial)
    part_dtype = COMPLEX_PART[result_dtype]
    start = (initial, initial) if initial is NoValue or initial is None else \
        (complex(initial).real, complex(initial).imag)
    parts = [exact_reduction(op, part, axis, part_dtype, keepdims, split_every, None, variant, first)
             for part, first in zip((real, imag), start)]
    joined = da.map_blocks(joined_parts, *parts, dtype=result_dtype,
                           meta=result_meta(a, axis, keepdims, result_dtype))
    return handle_out(out, joined)


def joined_parts(real, imag):
    """The complex array of parts `real` and `imag` (one block of each), in their library."""
    if isinstance(real, np.generic):  # a 0-d result's block: a NumPy scalar
        real, imag = np.asarray(real), np.asarray(imag)
    return scalar_if_0d(library_of(real, "gpureduce.dask's exact sum of a complex array",
                                   "it joins the parts in the chunks' own library").complex_of(real, imag))


def exact_chunk(variant, most, nan, element_dtype, x, axis=None, keepdims=True, computing_meta=False,
                **dask_options):
    """A chunk's partial: {"terms": its exact sums along the reduced axes as float64 terms (a trailing axis), "n":
    the elements taken}, the reduced axes kept as 1."""
    if computing_meta:
        return x
    axes = axes_of(x.ndim, axis)
    rows = _rows((x if element_dtype is None else x.astype(element_dtype)).astype(np.float64), axes)
    if nan:
        taken = ~np.isnan(rows)
        rows = np.where(taken, rows, 0.0)
        n = to_host(taken.sum(axis=-1, dtype=np.int64))  # (counts on the host: a few numbers)
    else:
        n = np.full(rows.shape[:-1], rows.shape[-1], np.int64)
    return _partial(exact_terms(rows, variant, most), n, x.shape, axes)


def exact_combine(variant, most, parts, axis=None, keepdims=True, computing_meta=False, **dask_options):
    """The partials' partial: their terms along the reduced axes summed exactly into terms again."""
    if computing_meta:
        return parts
    parts = parts if isinstance(parts, list) else [parts]
    axes = axes_of(_first(parts)["n"].ndim, axis)
    terms = _gather(parts, "terms", axes)  # a partial's terms a block along the reduced axes
    n = _gather(parts, "n", axes).sum(axis=axes, dtype=np.int64)
    return _partial(exact_terms(_rows(terms, axes + (terms.ndim - 1,)), variant, most), n, terms.shape[:-1], axes)


def _partial(terms, n, shape, axes):
    """{"terms", "n"} of `shape` with the reduced axes `axes` kept as 1 (terms: and the terms' axis)."""
    kept = tuple(1 if i in axes else e for i, e in enumerate(shape))
    return {"terms": terms.reshape(kept + terms.shape[-1:]), "n": np.asarray(n).reshape(kept)}


def _first(parts):
    while isinstance(parts, list):
        parts = parts[0]
    return parts


def _gather(parts, key, axes):
    """The `key` arrays of the partials, concatenated along the reduced axes (terms: padded with zeros to the
    longest list of terms first)."""
    if key == "terms":
        most = max(p["terms"].shape[-1] for p in flatten(parts))
        parts = _reductions.deepmap(lambda p: {"terms": _padded(p["terms"], most)}, parts)
    return chunks.gather_parts(parts, key, axes)


def _padded(terms, most):
    if terms.shape[-1] == most:
        return terms
    pad = np.zeros_like(terms, shape=terms.shape[:-1] + (most - terms.shape[-1],))
    return np.concatenate([terms, pad], axis=-1)


def _rows(values, axes):
    """`values` with the axes `axes` moved last and flattened into one: (kept..., elements)."""
    kept = tuple(e for i, e in enumerate(values.shape) if i not in axes)
    moved = np.moveaxis(values, axes, tuple(range(values.ndim - len(axes), values.ndim)))
    return moved.reshape(kept + (-1,))


def exact_terms(rows, variant, most):
    """Float64 terms (rows' shape[:-1] + (k,)) whose sum along the last axis is each row's exact sum, from
    gpureduce's exact sum of float64 `rows` (a NumPy or device array): r1, then the sum of the row and -r1, ...
    until every row's last term is zero.  A row whose exact sum is not finite (a NaN, an infinity) has that value
    as its first term and zeros after."""
    m = rows.shape[-1]
    buffer = np.zeros_like(rows, shape=rows.shape[:-1] + (m + most,))  # each row, then room for -r1, -r2, ...
    buffer[..., :m] = rows
    first = chunks.kernels.sum(buffer, axis=-1, variant=variant)
    finite = np.isfinite(first)
    if bool((~finite & ~np.isnan(first) & ~np.isinf(rows).any(axis=-1)).any()):
        raise OverflowError("variant 'exact' of a Dask array: a chunk's exact sum of float64 elements along the "
                            "reduced axes is beyond float64's range, where its partial cannot be kept; compute the "
                            "array into one NumPy or device array first")
    terms, r = [first], np.where(finite, first, 0.0)
    for j in range(most + 1):
        if not bool((r != 0).any()):  # (one wait for a device array)
            return np.stack(terms, axis=-1)
        if j == most:
            break
        buffer[..., m + j] = -r
        r = np.where(finite, chunks.kernels.sum(buffer, axis=-1, variant=variant), 0.0)
        terms.append(r)
    raise RuntimeError(f"variant 'exact' of a Dask array: a partial needed more than {most} terms")


def exact_aggregate(variant, most, mean, result_dtype, initial, parts, axis=None, keepdims=False,
                    computing_meta=False, **dask_options):
    """The result: each one's terms (and initial=) added in rationals, a mean's divided by its count, rounded once
    into `result_dtype`."""
    if computing_meta:
        return parts
    parts = parts if isinstance(parts, list) else [parts]
    axes = axes_of(_first(parts)["n"].ndim, axis)
    combined = exact_combine(variant, most, parts, axis=axes)
    terms, counts = np.asarray(to_host(combined["terms"])), combined["n"]
    start = [] if initial is NoValue or initial is None else \
        [float(np.asarray(initial).astype(result_dtype))]  # cast to the result dtype first, as NumPy's
    out = np.empty(counts.shape, result_dtype)
    for index in np.ndindex(*counts.shape):
        out[index] = _rounded(terms[index].tolist() + start, int(counts[index]), mean, result_dtype)
    if mean and bool((counts == 0).any()):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)  # and NaN, as NumPy's mean
    if not keepdims:
        out = out.reshape(tuple(e for i, e in enumerate(out.shape) if i not in axes))
    if not isinstance(combined["terms"], np.ndarray):
        out = host_in_kind_of(combined["terms"], out)  # a CuPy chunk's result on its device, as auto's
    return scalar_if_0d(out)


def _rounded(values, count, mean, result_dtype):
    """The exact sum of float64 `values` (a mean's over `count`) rounded once: NaN where one is NaN or both
    infinities are, an infinity where one is."""
    if any(math.isnan(v) for v in values) or (math.inf in values and -math.inf in values):
        return np.nan
    if math.inf in values or -math.inf in values:
        return math.inf if math.inf in values else -math.inf
    if mean and count == 0:
        return np.nan
    exact = sum(map(Fraction, values), Fraction(0))
    return rational_rounded(exact / count if mean else exact, result_dtype)
