"""Scans with NumPy's names, result dtypes and errors: cumsum, cumprod, cummax, cummin, and scan(op, ...)."""
from __future__ import annotations

import textwrap

import numpy as np

from . import _core
from ._layout import c_strides, plan
from ._operands import Operand, cast, copy_into, default_dtype, dtype_code, operand, out_operand
from ._registry import OP_NAMES, resolve, variants

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index

__all__ = ["scan", "cumsum", "cumprod", "cummax", "cummin"]

SCAN_OPS = ("sum", "prod", "min", "max")
# the variants that also scan along axes (flagged "axes" in cuda/variants.def)
AXIS_VARIANTS = tuple(v.name for v in variants(kind="scan") if "axes" in v.properties)

def _scan_axes(v, op, x: Operand, axis, rt, out, exclusive):
    """A scan through the axis machinery (cuda/scan_segments.cuh): along `axis` of x, or of x flattened in C
    order when axis is None.  Returns the result (host array, DeviceArray, or `out`)."""
    op_code = OP_NAMES.index(op)
    if not _core.segments_supported(_core.KIND_SCAN, op_code, dtype_code(x.dtype), dtype_code(rt)):
        x = cast(x, rt)
    if axis is None:
        if not x.c_contiguous:
            x = cast(x, x.dtype)  # a C-ordered copy: NumPy scans the array flattened in C order
        x = Operand(x.obj, x.host, x.dtype, (x.size,), (1,))
        ax = 0
    else:
        ax = axis
    rshape = tuple(x.shape)
    out_desc = None
    if out is not None:
        out_desc = out_operand(out, rshape)
    direct = out_desc is not None and not out_desc.host and out_desc.dtype == rt
    if direct and axis is None and not out_desc.c_contiguous:
        direct = False
    out_strides = (1,) if (direct and axis is None) else out_desc.strides if direct else c_strides(rshape)
    seg = plan(x.shape, x.strides, {ax}, out_strides=out_strides, scan=True)
    if seg is None and direct:
        direct, out_strides = False, c_strides(rshape)
        seg = plan(x.shape, x.strides, {ax}, out_strides=out_strides, scan=True)
    if seg is None:  # both in C order: the kept axes merge into one
        x = cast(x, x.dtype)
        seg = plan(x.shape, x.strides, {ax}, out_strides=out_strides, scan=True)
    result = _core.segments(_core.KIND_SCAN, v.index, op_code, x.obj, dtype_code(rt),
                            seg.as_tuple(), rshape, out if direct else None, None, None, bool(exclusive))
    if out is not None and not direct:
        return copy_into(out, out_desc, result)
    return result


def scan(op: str, a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Cumulative `op` ("sum", "prod", "min" or "max") of `a` along `axis` (None: flattened in C order).

    Parameters
    ----------
    op : {"sum", "prod", "min", "max"}
        The operator: ``scan("sum", a)`` is ``cumsum(a)``, ``scan("max", a)`` is ``cummax(a)``, and so on.
    a : array_like or device array
        A NumPy array (or anything ``numpy.asarray`` accepts), or a device array exporting
        ``__cuda_array_interface__`` (CuPy, PyTorch, Numba, ``gpureduce.DeviceArray``), read in place on the
        stream it names.  Contiguous (C or Fortran order) device arrays only; dtypes: see the variants.
    axis : None or int
        None scans the array flattened in C order, like ``numpy.cumsum(a)``; an int (negative counts from the
        end) scans along that axis, every other index independently, in one launch.
    dtype : dtype, optional
        The result and accumulation dtype (sum/prod), as NumPy's ``dtype=``; by default NumPy's (bool and
        narrow ints accumulate in int64/uint64, float16 in float32 with a float16 result).
    out : numpy.ndarray or device array, optional
        Where to write the result: the result's shape; another dtype is cast into it as NumPy does.  A device
        ``out`` must be writable and on the input's device.  ``out`` is returned.
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
    numpy.exceptions.AxisError
        An axis out of bounds (a tuple of axes: TypeError, as NumPy).
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
    if op not in SCAN_OPS:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(SCAN_OPS)}")
    v = resolve("scan", variant, op)
    if not isinstance(exclusive, (bool, np.bool_)):
        raise TypeError(f"exclusive must be a bool (True or False), not {type(exclusive).__name__}")
    x = operand(a)
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
    ax = None if axis is None else normalize_axis_index(axis, max(len(x.shape), 1))
    if ax is not None and len(x.shape) == 0:
        ax = None  # a 0-d array scans like a 1-d one, as NumPy's cumsum does
    if dtype is not None:
        rt = np.dtype(dtype)
        dtype_code(rt)
    else:
        rt = default_dtype(op, x.dtype)
    one_d = ax is None or len(x.shape) == 1
    plain = (one_d and rt == default_dtype(op, x.dtype) and x.dtype in v.numpy_dtypes and
             (x.host or x.c_contiguous) and (out is None or np.dtype(getattr(out, "dtype", rt)) == rt))
    if plain:
        return _core.scan(v.index, OP_NAMES.index(op), x.obj, bool(exclusive), out)
    if variant not in AXIS_VARIANTS:
        raise ValueError(f"variant {variant!r} scans a whole array flattened in C order, of dtypes "
                         f"{', '.join(v.dtypes)}, in the result dtype NumPy picks, and nothing else; the variants "
                         f"that cover every NumPy argument (axis, dtype, all dtypes and layouts) are: "
                         f"{', '.join(AXIS_VARIANTS)}")
    return _scan_axes(v, op, x, ax, rt, out, exclusive)


def cumsum(a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Cumulative sum along `axis` (None: of the flattened array), as ``numpy.cumsum`` (int32 sums to int64).

    ``exclusive=True`` starts from 0 and leaves the last element out.  A host input gives a NumPy array, a
    device input a ``gpureduce.DeviceArray``; see ``gpureduce.scan`` for every parameter and the variants.
    """
    return scan("sum", a, axis, dtype, out, exclusive=exclusive, variant=variant)


def cumprod(a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Cumulative product along `axis` (None: flattened), as ``numpy.cumprod`` (int32 multiplies in int64, wrapping).

    ``exclusive=True`` starts from 1 and leaves the last element out.  See ``gpureduce.scan``.
    """
    return scan("prod", a, axis, dtype, out, exclusive=exclusive, variant=variant)


def cummax(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Running maximum along `axis` (None: flattened), as ``numpy.maximum.accumulate``; NaN propagates.

    ``exclusive=True`` starts from the identity (-inf, or the dtype's smallest integer).  See ``gpureduce.scan``.
    """
    return scan("max", a, axis, None, out, exclusive=exclusive, variant=variant)


def cummin(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Running minimum along `axis` (None: flattened), as ``numpy.minimum.accumulate``; NaN propagates.

    ``exclusive=True`` starts from the identity (+inf, or the dtype's largest integer).  See ``gpureduce.scan``.
    """
    return scan("min", a, axis, None, out, exclusive=exclusive, variant=variant)


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
