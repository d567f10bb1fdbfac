"""Scans with NumPy's names, result dtypes and errors: cumsum, cumprod, cummax, cummin, and scan(op, ...)."""
from __future__ import annotations

import textwrap

import numpy as np

from . import _core
from ._registry import OP_NAMES, resolve, variants

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index

__all__ = ["scan", "cumsum", "cumprod", "cummax", "cummin"]

def _check_axis(a, axis):
    """Scans run over the flattened array for now: axis=None, or the only axis of a 1-D array.

    Returns `a`, converted to a NumPy array when its dimensions could not be told without that.
    """
    if axis is None:
        return a
    ndim = getattr(a, "ndim", None)
    if not isinstance(ndim, (int, np.integer)):
        cai = getattr(a, "__cuda_array_interface__", None)
        if isinstance(cai, dict) and isinstance(cai.get("shape"), tuple):
            ndim = len(cai["shape"])
        else:
            a = np.asarray(a)
            ndim = a.ndim
    normalize_axis_index(axis, max(int(ndim), 1))  # NumPy's AxisError; a 0-d array scans like a 1-d one
    if ndim > 1:
        raise NotImplementedError(
            f"gpureduce scans the flattened array for now: axis={axis!r} of a {ndim}-d array is not supported "
            "(scans along an axis come later); pass axis=None to scan the flattened array")
    return a


def scan(op: str, a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Cumulative `op` ("sum", "prod", "min" or "max") of the elements of `a`, flattened in C order.

    Parameters
    ----------
    op : {"sum", "prod", "min", "max"}
        The operator: ``scan("sum", a)`` is ``cumsum(a)``, ``scan("max", a)`` is ``cummax(a)``, and so on.
    a : array_like or device array
        A NumPy array (or anything ``numpy.asarray`` accepts), or a device array exporting
        ``__cuda_array_interface__`` (CuPy, PyTorch, Numba, ``gpureduce.DeviceArray``), read in place on the
        stream it names.  Contiguous (C or Fortran order) device arrays only; dtypes: see the variants.
    axis : None, or 0 / -1 for a 1-d array
        None scans the flattened array like ``numpy.cumsum(a)``.  Other axes raise NotImplementedError.
    out : numpy.ndarray or device array, optional
        Where to write the result: shape ``(a.size,)`` and exactly the result dtype (no casting).  A device
        ``out`` must be writable, contiguous and on the input's device; a NumPy ``out`` must be writable.
        Either kind is accepted for either kind of input.  ``out`` is returned.
    exclusive : bool, keyword-only
        False (default): ``out[i] = op(a[0], ..., a[i])``, as NumPy.  True: ``out[0]`` is the identity of
        `op` and ``out[i] = op(a[0], ..., a[i-1])``.
    variant : str, keyword-only
        The algorithm, by name (see below); ``"auto"`` is the fastest.

    Returns
    -------
    numpy.ndarray, gpureduce.DeviceArray or `out`
        Shape ``(a.size,)``, NumPy's result dtype (int32 cumsum/cumprod give int64; min/max keep the dtype).
        A NumPy array for a host input, complete on return; a ``DeviceArray`` for a device input, computed
        asynchronously on the input's stream (or gpureduce's own) and exporting that stream.

    Raises
    ------
    ValueError
        Unknown `op` or `variant` (the message lists the valid ones), an `out` of the wrong shape, read-only,
        non-contiguous or on another device.
    TypeError
        `exclusive` not a bool, a dtype the variant does not support, an `out` of the wrong dtype.
    numpy.exceptions.AxisError, NotImplementedError
        An axis out of bounds / an axis of a multi-dimensional array.
    gpureduce.CudaError
        No CUDA device, or a CUDA call failed.

    Notes
    -----
    Integer scans wrap around on overflow like NumPy's; NaN propagates through cummax/cummin (every element
    from the first NaN on is NaN).  Floating-point results differ from NumPy's serial loop by rounding only:
    the parallel variants associate differently (error about eps * log2(n) * cumsum(|a|)).  Deterministic
    variants give bitwise identical results run after run.  The ``block_local`` variants are block-level
    algorithms (one thread block scans one tile); they run over any length as the block step of the
    multi-block driver, which scans the tile totals the same way and adds the prefixes back.

    Variants (``gpureduce.variants(kind="scan")``):

    {variants}
    """
    if op not in OP_NAMES:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(OP_NAMES)}")
    v = resolve("scan", variant, op)
    if not isinstance(exclusive, (bool, np.bool_)):
        raise TypeError(f"exclusive must be a bool (True or False), not {type(exclusive).__name__}")
    a = _check_axis(a, axis)
    return _core.scan(v.index, OP_NAMES.index(op), a, bool(exclusive), out)


def cumsum(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Cumulative sum of the flattened array, as ``numpy.cumsum(a)`` (int32 sums to int64).

    ``exclusive=True`` starts from 0 and leaves the last element out.  A host input gives a NumPy array, a
    device input a ``gpureduce.DeviceArray``; see ``gpureduce.scan`` for every parameter and the variants.
    """
    return scan("sum", a, axis, out, exclusive=exclusive, variant=variant)


def cumprod(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Cumulative product of the flattened array, as ``numpy.cumprod(a)`` (int32 multiplies in int64, wrapping).

    ``exclusive=True`` starts from 1 and leaves the last element out.  See ``gpureduce.scan``.
    """
    return scan("prod", a, axis, out, exclusive=exclusive, variant=variant)


def cummax(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Running maximum of the flattened array, as ``numpy.maximum.accumulate(a.ravel())``; NaN propagates.

    ``exclusive=True`` starts from the identity (-inf, or the dtype's smallest integer).  See ``gpureduce.scan``.
    """
    return scan("max", a, axis, out, exclusive=exclusive, variant=variant)


def cummin(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Running minimum of the flattened array, as ``numpy.minimum.accumulate(a.ravel())``; NaN propagates.

    ``exclusive=True`` starts from the identity (+inf, or the dtype's largest integer).  See ``gpureduce.scan``.
    """
    return scan("min", a, axis, out, exclusive=exclusive, variant=variant)


def _describe_variants():
    """The variant list of scan's docstring, from the registry (cuda/variants.def): never a hand-kept list."""
    rows = []
    for v in variants(kind="scan"):
        props = list(v.properties) if v.deterministic else ["not deterministic", *v.properties]
        text = f"{v.doc}.  Dtypes: {', '.join(v.dtypes)}.  Source: {v.seed}."
        rows.append(f"    ``{v.name}`` ({', '.join(props)})\n" + textwrap.fill(
            text, width=108, initial_indent=" " * 8, subsequent_indent=" " * 8))
    return "\n".join(rows).lstrip() if rows else "(none registered in this build)"


if scan.__doc__:  # not under python -OO
    scan.__doc__ = scan.__doc__.replace("{variants}", _describe_variants())
