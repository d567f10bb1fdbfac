"""Reductions with NumPy's signatures, result dtypes and errors: sum, prod, min, max, mean, argmin, argmax.

Two paths.  A plain whole-array reduction (no axis, dtype, out, keepdims, initial or where; a dtype the
variant lists; a dense array) goes to the chosen variant's flat kernel: the seeds' teaching variants, cub, and
auto's single-launch kernel.  Everything else goes to the axis machinery (gpureduce/_layout.py ->
cuda/segments.cuh), which the "auto" and "cub" variants cover; the teaching variants refuse it with a ValueError.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from . import _core
from ._docs import document_variants
from ._layout import Dim, c_strides, gather_order, plan
from ._operands import Operand, cast, copy_into, default_dtype, dtype_code, gather, operand, out_operand, to_host
from ._registry import OP_NAMES, resolve, variants

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

__all__ = ["reduce", "sum", "prod", "min", "max", "mean", "argmin", "argmax"]

REDUCE_OPS = ("sum", "prod", "min", "max", "mean", "argmin", "argmax")
_FLAT_OPS = ("sum", "prod", "min", "max")
# The variants that also run the axis machinery (flagged "axes" in cuda/variants.def)
AXIS_VARIANTS = tuple(v.name for v in variants(kind="reduce") if "axes" in v.properties)
# NumPy's ufunc names, for its own error messages ("... reduction operation maximum which has no identity")
_UFUNC_NAME = {"sum": "add", "prod": "multiply", "min": "minimum", "max": "maximum"}


class _NoValueType:
    """The "not given" default of `initial` (NumPy's own sentinel is private)."""

    def __repr__(self):
        return "<no value>"


_NoValue = _NoValueType()


def _given(initial):
    return initial is not _NoValue and initial is not getattr(np, "_NoValue", _NoValue)


def _axes(op, axis, ndim):
    """The reduced axes as a sorted tuple, with NumPy's AxisError / duplicate-axis ValueError / TypeError."""
    if axis is None:
        return tuple(range(ndim))
    if op in ("argmin", "argmax"):
        if isinstance(axis, (tuple, list)):
            raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
        index = normalize_axis_index(axis, ndim or 1)  # NumPy's arg reductions see a 0-d array as 1-d
        return (index,) if ndim else ()
    try:
        return tuple(sorted(normalize_axis_tuple(axis, ndim)))
    except ValueError as e:
        if type(e) is not ValueError:  # AxisError: NumPy's own text already
            raise
        raise ValueError("duplicate value in 'axis'") from None


def _mask(where, x: Operand):
    """where= as an Operand broadcast to x's shape (strides 0 where it broadcasts), or None for True."""
    if where is True or (isinstance(where, (bool, np.bool_)) and where):
        return None
    w = operand(where, "where=")
    if w.dtype != np.bool_:
        raise TypeError(f"Cannot cast array data from {w.dtype!r} to dtype('bool') according to the rule 'safe' "
                        "(where= must be a boolean array)")
    try:
        broadcasts = np.broadcast_shapes(w.shape, x.shape) == tuple(x.shape)
    except ValueError:
        broadcasts = False
    if not broadcasts:
        raise ValueError(f"where= of shape {w.shape} does not broadcast to the input's shape {x.shape}")
    if x.host and not w.host:
        raise TypeError("where= is a device array but the input is on the host; pass a host mask or a device input")
    lead = len(x.shape) - len(w.shape)
    strides = tuple(0 if i < lead or w.shape[i - lead] == 1 else w.strides[i - lead] for i in range(len(x.shape)))
    obj = w.obj
    if w.host:  # a host view with the broadcast strides, so its upload is just the bytes it spans
        obj = np.lib.stride_tricks.as_strided(w.obj, shape=x.shape, strides=[s * w.obj.itemsize for s in strides])
    return Operand(obj, w.host, w.dtype, tuple(x.shape), strides)


def _result_shape(shape, axes, keepdims):
    return tuple(1 if i in axes else e for i, e in enumerate(shape)) if keepdims else \
        tuple(e for i, e in enumerate(shape) if i not in axes)


def _refuse(v_name, op, reason):
    raise ValueError(f"variant {v_name!r} {reason}; the variants that cover every NumPy argument (axis, dtype, "
                     f"out, keepdims, initial, where, all dtypes, mean/argmin/argmax) are: {', '.join(AXIS_VARIANTS)}")


def _finish(result, out, out_desc, keepdims, shape0):
    """What the call returns: out=, a NumPy scalar for 0-d results, else the array."""
    if out is not None:
        return copy_into(out, out_desc, result) if result is not out else out
    if len(shape0) == 0:
        return to_host(result)[()]
    return result


@document_variants("reduce")
def reduce(op: str, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
           variant: str = "auto"):
    """Reduce `a` with the operator `op`, as the NumPy function of that name does.

    ``reduce("sum", a, ...)`` is ``sum(a, ...)``, and so on for each operator: the same arguments, result
    dtypes, shapes and exceptions as NumPy's function, and the same values (floating-point results up to
    rounding).  The per-operator functions document each one's details.

    Parameters
    ----------
    op : {"sum", "prod", "min", "max", "mean", "argmin", "argmax"}
        The reduction.  `dtype` is taken by sum, prod and mean; `initial` by sum, prod, min and max; `where`
        by all but argmin and argmax, which take only `axis` (an int or None), `out` and `keepdims`.
    a : array_like or device array
        %(a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all of them.  Negative axes count from the end.
    dtype : dtype, optional
        The result dtype, which is also the accumulation dtype (float16 is accumulated in float32).  Default:
        NumPy's (see the per-operator functions).
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape (with `keepdims`'s 1s if set), writable, and for a
        device array on the current device; a result of another dtype is cast into it as NumPy's
        ``casting="unsafe"`` does.  sum and prod without `dtype` accumulate in `out`'s dtype, as NumPy.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1, so the result broadcasts against `a`.
    initial : scalar, optional
        A starting value folded into every result; required by min and max over an empty axis or with `where`.
    where : array_like of bool, optional
        Only the elements where `where` (broadcast to ``a.shape``) is True take part.  A device mask needs a
        device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"``, the default, is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, gpureduce.DeviceArray or `out`
        `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a device `a` (the call then
        waits for the device); an array result is a ``numpy.ndarray`` for a host `a`, complete on return, and
        a ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously.

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype`
        is none of them; `where` is not boolean, or on the device while `a` is on the host; `variant` is not a
        str; `dtype` given to min, max, argmin or argmax; a tuple `axis` for argmin or argmax; an integer
        `dtype` for mean.
    ValueError
        An unknown `op` or `variant` (the message lists the valid ones); a variant not marked *axes* given
        anything but a whole dense array of its dtypes; a duplicate axis; `out` of the wrong shape or
        read-only; `where` not broadcastable to `a`; NumPy's errors for an empty min, max, argmin or argmax,
        and for min or max with `where` but no `initial`; a malformed ``__cuda_array_interface__``; a device
        array that is not in device memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed (for example out of memory).

    See Also
    --------
    sum, prod, min, max, mean, argmin, argmax : The same, one function per operator.
    variants : The registered variants, with their properties and dtypes.

    Notes
    -----
    The work runs on the current CUDA device.  A device `a` is read on the stream its
    ``__cuda_array_interface__`` names (version 3), else on the stream of a device `out`, else on
    gpureduce's own stream for the device, after the work already enqueued there; a ``DeviceArray``
    result exports the stream it is ready on, so CuPy, PyTorch (through DLPack) and Numba consumers wait
    for it.  Host arrays are staged through pinned buffers; a host result is complete on return.

    Floating-point sums and products are formed in a tree, not in NumPy's order: they differ from NumPy's by
    rounding, about ``eps * log2(n) * sum(abs(a))`` for a sum.  Variants not marked "not deterministic"
    give bitwise the same result on every run.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.arange(12.0).reshape(3, 4)
    >>> gpureduce.reduce("sum", x)
    np.float64(66.0)
    >>> gpureduce.reduce("max", x, axis=0)
    array([ 8.,  9., 10., 11.])
    >>> gpureduce.reduce("argmin", x, axis=1)
    array([0, 0, 0])

    A device array gives a ``DeviceArray`` for an array result, a NumPy scalar for a 0-d one:

    >>> import cupy as cp                                   # doctest: +SKIP
    >>> d = cp.arange(12, dtype=cp.float32).reshape(3, 4)   # doctest: +SKIP
    >>> gpureduce.reduce("sum", d, axis=1)                  # doctest: +SKIP
    DeviceArray([ 6., 22., 38.], dtype=float32, device=0)
    >>> gpureduce.reduce("sum", d)                          # doctest: +SKIP
    np.float32(66.0)
    """
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(REDUCE_OPS)}")
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if op in _FLAT_OPS:
        v = resolve("reduce", variant, op)
    else:
        v = resolve("reduce", variant, "sum")  # unknown names: the list of valid ones
        if variant not in AXIS_VARIANTS:
            _refuse(variant, op, f"does not implement {op}")
    x = operand(a)
    ndim = len(x.shape)
    axes = _axes(op, axis, ndim)
    rshape = _result_shape(x.shape, axes, bool(keepdims)) if (op not in ("argmin", "argmax") or axis is not None) \
        else ((1,) * ndim if keepdims else ())
    if dtype is not None and op in ("min", "max", "argmin", "argmax"):
        raise TypeError(f"{op}() got an unexpected keyword argument 'dtype'")
    out_desc = out_operand(out, rshape, f"the result of {op}") if out is not None else None
    if dtype is not None:
        rt = np.dtype(dtype)
        dtype_code(rt)
    elif out_desc is not None and op in ("sum", "prod"):
        rt = out_desc.dtype  # NumPy reduces in out's dtype when no dtype is given
    else:
        rt = default_dtype(op, x.dtype)
    has_initial = _given(initial)
    mask = _mask(where, x)
    red_count = math.prod(x.shape[i] for i in axes)
    kept_count = math.prod(rshape)
    if op in ("min", "max") and not has_initial:
        if mask is not None:
            raise ValueError(f"reduction operation '{_UFUNC_NAME[op]}' does not have an identity, so to use a "
                             "where mask one has to specify 'initial'")
        if red_count == 0:  # NumPy refuses even when the result would be empty
            raise ValueError(f"zero-size array to reduction operation {_UFUNC_NAME[op]} which has no identity")
    if op in ("argmin", "argmax") and red_count == 0:
        raise ValueError(f"attempt to get {op} of an empty sequence")

    plain = ((axis is None or ndim <= 1) and len(axes) == ndim and op in _FLAT_OPS and rt == default_dtype(op, x.dtype)
             and out is None
             and not keepdims and not has_initial and mask is None and x.dense)
    if variant not in AXIS_VARIANTS:
        if not plain:
            _refuse(variant, op, "reduces a whole array (axis=None, no dtype/out/keepdims/initial/where, a "
                                 "C- or Fortran-ordered array) and nothing else")
        if x.dtype not in v.numpy_dtypes:
            raise ValueError(f"variant {variant!r} does not support dtype {x.dtype}; it supports "
                             f"{', '.join(v.dtypes)}; variants that do: {', '.join(AXIS_VARIANTS)}")
    if plain and x.dtype in v.numpy_dtypes:
        return _core.reduce(v.index, OP_NAMES.index(op), x.obj)

    if op == "mean" and red_count == 0 and mask is None and kept_count > 0:
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
    result = _reduce_axes(v, op, x, axes, rt, rshape, out, out_desc, initial if has_initial else None, mask)
    return _finish(result, out, out_desc, keepdims, rshape)


def _reduce_axes(v, op, x: Operand, axes, rt, rshape, out, out_desc, initial, mask):
    """The axis machinery: cast if no kernel reads x.dtype into rt, plan (gathering if needed), run."""
    op_code = OP_NAMES.index(op)
    if not _core.segments_supported(_core.KIND_REDUCE, v.index, op_code, dtype_code(x.dtype), dtype_code(rt)):
        if op == "mean" and rt.kind not in "fc":
            raise TypeError(f"mean with an integer or bool dtype= ({rt}) is not supported; pass a floating dtype")
        x = cast(x, rt)
        if mask is not None and not mask.host and x.host:  # keep mask and input on one side
            raise TypeError("where= is a device array but the input is on the host")
    reduced = set(axes)
    ordered = op in ("argmin", "argmax")
    kept_shape = tuple(e for i, e in enumerate(x.shape) if i not in reduced)
    fresh = c_strides(kept_shape)
    fresh_full, k = [], 0
    for i in range(len(x.shape)):  # output strides laid over the input's axes
        if i in reduced:
            fresh_full.append(0)
        else:
            fresh_full.append(fresh[k])
            k += 1
    direct_out = (out_desc is not None and not out_desc.host and out_desc.dtype == rt)
    out_full = fresh_full
    if direct_out:
        os = [s for e, s in zip(out_desc.shape, out_desc.strides)]
        if len(out_desc.shape) == len(x.shape):  # keepdims: drop the reduced positions
            os = [s for i, s in enumerate(os) if i not in reduced]
        out_full, k = [], 0
        for i in range(len(x.shape)):
            out_full.append(0 if i in reduced else os[k])
            k += 0 if i in reduced else 1
    seg = plan(x.shape, x.strides, reduced, mask_strides=mask.strides if mask else None, out_strides=out_full,
               ordered=ordered)
    if seg is None and direct_out:
        direct_out, out_full = False, fresh_full
        seg = plan(x.shape, x.strides, reduced, mask_strides=mask.strides if mask else None,
                   out_strides=out_full, ordered=ordered)
    if seg is None:  # gather into (kept..., reduced...) C order, then every operand merges
        operands = (x.strides, mask.strides) if mask is not None else (x.strides,)
        kept_dims, red_dims = gather_order(x.shape, operands, reduced)  # merged for input and mask alike
        gx = gather(x, kept_dims + red_dims)
        gmask = None
        if mask is not None:
            gmask = gather(mask, [Dim(d.extent, d.strides[1:]) for d in kept_dims + red_dims])
        nk = len(kept_dims)
        gshape = gx.shape
        gred = set(range(nk, len(gshape)))
        out_full = list(c_strides(gshape[:nk])) + [0] * (len(gshape) - nk)
        seg = plan(gshape, gx.strides, gred, mask_strides=gmask.strides if gmask else None, out_strides=out_full,
                   ordered=ordered)
        x, mask, direct_out = gx, gmask, False
    init_bytes = None if initial is None else np.asarray(initial).astype(rt).tobytes()
    result = _core.segments(_core.KIND_REDUCE, v.index, op_code, x.obj,
                            dtype_code(rt), seg.as_tuple(), tuple(rshape), out if direct_out else None,
                            mask.obj if mask is not None else None, init_bytes, False)
    return result


@document_variants("reduce", "sum")
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
        variant: str = "auto"):
    """Sum of array elements over the given axes, as ``numpy.sum``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s
    axis : None, int or tuple of ints, optional
        The axes to sum over; None (default) sums all elements.  Negative axes count from the end.
    dtype : dtype, optional
        The result and accumulation dtype.  Default: int64 for bool and signed integers narrower than 64
        bits, uint64 for narrower unsigned integers, else `a`'s dtype (or `out`'s, when `out` is given).
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    initial : scalar, optional
        Starting value of every sum (default 0).
    where : array_like of bool, optional
        Sum only the elements where `where` (broadcast to ``a.shape``) is True.  A device mask needs a device
        `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, gpureduce.DeviceArray or `out`
        `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a device `a` (the call waits
        for the device); an array result is a ``numpy.ndarray`` for a host `a`, complete on return, and a
        ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype`
        is none of them; `where` is not boolean, or on the device while `a` is on the host; `variant` is not a
        str.
    ValueError
        An unknown `variant` (the message lists the valid ones), or one not marked *axes* given anything but a
        whole dense array of its dtypes; a duplicate axis; `out` of the wrong shape or read-only; `where` not
        broadcastable to `a`; a device array that is not in device memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.sum : The reference semantics.
    reduce : Any reduction by name; its Notes describe streams and asynchrony.
    mean, cumsum

    Notes
    -----
    Integer sums wrap around on overflow, as NumPy's do; a bool sum counts the True elements.  float16 is
    summed in float32 and rounded once.  The sum of an empty array (or axis) is `initial`, or 0.
    Floating-point sums are formed in a tree: they differ from NumPy's by rounding, about
    ``eps * log2(n) * sum(abs(a))``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.sum(np.arange(10, dtype=np.int32))      # int32 sums in int64
    np.int64(45)
    >>> gpureduce.sum(np.arange(6.0).reshape(2, 3), axis=0)
    array([3., 5., 7.])
    >>> gpureduce.sum(np.full(1000, 100, np.int8), dtype=np.int8)   # wraps around, as NumPy
    np.int8(-96)
    >>> gpureduce.sum(np.arange(12.0).reshape(3, 4), axis=1, where=[True, False, True, False])
    array([ 2., 10., 18.])
    """
    return reduce("sum", a, axis, dtype, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "prod")
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
         variant: str = "auto"):
    """Product of array elements over the given axes, as ``numpy.prod``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s
    axis : None, int or tuple of ints, optional
        The axes to multiply over; None (default) multiplies all elements.  Negative axes count from the end.
    dtype : dtype, optional
        The result and accumulation dtype.  Default: int64 for bool and signed integers narrower than 64
        bits, uint64 for narrower unsigned integers, else `a`'s dtype (or `out`'s, when `out` is given).
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    initial : scalar, optional
        Starting value of every product (default 1).
    where : array_like of bool, optional
        Multiply only the elements where `where` (broadcast to ``a.shape``) is True.  A device mask needs a
        device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, gpureduce.DeviceArray or `out`
        `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a device `a` (the call waits
        for the device); an array result is a ``numpy.ndarray`` for a host `a`, complete on return, and a
        ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype`
        is none of them; `where` is not boolean, or on the device while `a` is on the host; `variant` is not a
        str.
    ValueError
        An unknown `variant` (the message lists the valid ones), or one not marked *axes* given anything but a
        whole dense array of its dtypes; a duplicate axis; `out` of the wrong shape or read-only; `where` not
        broadcastable to `a`; a device array that is not in device memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.prod : The reference semantics.
    reduce : Any reduction by name; its Notes describe streams and asynchrony.
    cumprod

    Notes
    -----
    Integer products wrap around on overflow, as NumPy's do.  float16 is multiplied in float32 and rounded
    once.  The product of an empty array (or axis) is `initial`, or 1.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.prod(np.arange(1, 6, dtype=np.int32))   # int32 multiplies in int64
    np.int64(120)
    >>> gpureduce.prod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    array([ 2., 12.])
    """
    return reduce("prod", a, axis, dtype, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "min")
def min(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    """Minimum over the given axes, as ``numpy.min``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all elements.  Negative axes count from the end.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    initial : scalar, optional
        A value every min also takes into account; needed for an empty axis and with `where`.
    where : array_like of bool, optional
        Only the elements where `where` (broadcast to ``a.shape``) is True take part; needs `initial`.  A
        device mask needs a device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, gpureduce.DeviceArray or `out`
        Of `a`'s dtype.  `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a device `a`
        (the call waits for the device); an array result is a ``numpy.ndarray`` for a host `a`, complete on
        return, and a ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...); `where` is
        not boolean, or on the device while `a` is on the host; `variant` is not a str.
    ValueError
        NumPy's ``zero-size array to reduction operation minimum which has no identity`` for an empty `a` or
        reduced axis without `initial`, and its error for `where` without `initial`; an unknown `variant` (the
        message lists the valid ones), or one not marked *axes* given anything but a whole dense array of its
        dtypes; a duplicate axis; `out` of the wrong shape or read-only; `where` not broadcastable to `a`; a
        device array that is not in device memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.min : The reference semantics.
    argmin, cummin
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    NaN propagates: the min of a slice holding a NaN is NaN.  Complex numbers are ordered
    lexicographically (real part, then imaginary part), as in NumPy.  Results are exact.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[4, 9, 2], [3, 5, 7]])
    >>> gpureduce.min(x)
    np.int64(2)
    >>> gpureduce.min(x, axis=0)
    array([3, 5, 2])
    >>> gpureduce.min(np.array([1.0, np.nan, 3.0]))
    np.float64(nan)
    >>> gpureduce.min(np.zeros(0, np.float32), initial=5.0)
    np.float32(5.0)
    """
    return reduce("min", a, axis, None, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "max")
def max(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    """Maximum over the given axes, as ``numpy.max``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all elements.  Negative axes count from the end.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    initial : scalar, optional
        A value every max also takes into account; needed for an empty axis and with `where`.
    where : array_like of bool, optional
        Only the elements where `where` (broadcast to ``a.shape``) is True take part; needs `initial`.  A
        device mask needs a device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, gpureduce.DeviceArray or `out`
        Of `a`'s dtype.  `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a device `a`
        (the call waits for the device); an array result is a ``numpy.ndarray`` for a host `a`, complete on
        return, and a ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...); `where` is
        not boolean, or on the device while `a` is on the host; `variant` is not a str.
    ValueError
        NumPy's ``zero-size array to reduction operation maximum which has no identity`` for an empty `a` or
        reduced axis without `initial`, and its error for `where` without `initial`; an unknown `variant` (the
        message lists the valid ones), or one not marked *axes* given anything but a whole dense array of its
        dtypes; a duplicate axis; `out` of the wrong shape or read-only; `where` not broadcastable to `a`; a
        device array that is not in device memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.max : The reference semantics.
    argmax, cummax
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    NaN propagates: the max of a slice holding a NaN is NaN.  Complex numbers are ordered
    lexicographically (real part, then imaginary part), as in NumPy.  Results are exact.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[4, 9, 2], [3, 5, 7]])
    >>> gpureduce.max(x)
    np.int64(9)
    >>> gpureduce.max(x, axis=0)
    array([4, 9, 7])
    >>> gpureduce.max(np.array([1.0, np.nan, 3.0]))
    np.float64(nan)
    >>> gpureduce.max(np.zeros(0, np.float32), initial=-5.0)
    np.float32(-5.0)
    """
    return reduce("max", a, axis, None, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "mean")
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True, variant: str = "auto"):
    """Arithmetic mean over the given axes, as ``numpy.mean``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s
    axis : None, int or tuple of ints, optional
        The axes to average over; None (default) averages all elements.  Negative axes count from the end.
    dtype : floating or complex dtype, optional
        The result and accumulation dtype.  Default: float64 for bool and integers, else `a`'s dtype
        (float16 accumulated in float32).
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    where : array_like of bool, keyword-only, optional
        Average only the elements where `where` (broadcast to ``a.shape``) is True.  A device mask needs a
        device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, gpureduce.DeviceArray or `out`
        The sum divided by the count.  `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a
        device `a` (the call waits for the device); an array result is a ``numpy.ndarray`` for a host `a`,
        complete on return, and a ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously on its
        stream.

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype`
        is none of them; `where` is not boolean, or on the device while `a` is on the host; an integer or bool
        `dtype` (NumPy accepts one); `variant` is not a str.
    ValueError
        An unknown `variant`, or one not marked *axes* (only those implement mean); a duplicate axis; `out` of
        the wrong shape or read-only; `where` not broadcastable to `a`; a device array that is not in device
        memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    Warns
    -----
    RuntimeWarning
        ``Mean of empty slice.`` when a reduced axis is empty (without `where`); those results are NaN.

    See Also
    --------
    numpy.mean : The reference semantics.
    sum
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    Integers are summed in float64 (no wrap-around).  The sum is formed in a tree: the result differs from
    NumPy's by rounding, about ``eps * log2(n) * mean(abs(a))``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.mean(np.arange(4, dtype=np.int32))
    np.float64(1.5)
    >>> gpureduce.mean(np.arange(12.0).reshape(3, 4), axis=0, keepdims=True)
    array([[4., 5., 6., 7.]])
    """
    return reduce("mean", a, axis, dtype, out, keepdims, _NoValue, where, variant=variant)


@document_variants("reduce", "argmin")
def argmin(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    """Index of the first minimum along an axis, as ``numpy.argmin``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s
    axis : None or int, optional
        The axis to search; None (default) gives an index into the array flattened in C order.
    out : numpy.ndarray or device array, optional
        Where to write the indices: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, keyword-only, optional
        Keep the reduced axis (all of them for ``axis=None``) as axes of length 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.int64, numpy.ndarray, gpureduce.DeviceArray or `out`
        Indices, of dtype int64.  `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a device `a`
        (the call waits for the device); an array result is a ``numpy.ndarray`` for a host `a`, complete on
        return, and a ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a dtype listed above (object, str, datetime...); `axis` is a tuple or
        list; `variant` is not a str.
    ValueError
        NumPy's ``attempt to get argmin of an empty sequence`` for an empty axis (or empty `a`); an unknown
        `variant`, or one not marked *axes* (only those implement argmin); `out` of the wrong shape or
        read-only; a device array that is not in device memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.argmin : The reference semantics.
    min, argmax
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    Ties go to the first occurrence.  A NaN counts as the minimum: the index of the first NaN is returned
    if there is one.  Complex numbers are ordered lexicographically (real part, then imaginary part).

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[4, 9, 2], [3, 9, 7]])
    >>> gpureduce.argmin(x)
    np.int64(2)
    >>> gpureduce.argmin(x, axis=1)
    array([2, 0])
    >>> gpureduce.argmin(np.array([1.0, np.nan, 3.0, np.nan]))
    np.int64(1)
    """
    return reduce("argmin", a, axis, None, out, keepdims, variant=variant)


@document_variants("reduce", "argmax")
def argmax(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    """Index of the first maximum along an axis, as ``numpy.argmax``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s
    axis : None or int, optional
        The axis to search; None (default) gives an index into the array flattened in C order.
    out : numpy.ndarray or device array, optional
        Where to write the indices: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, keyword-only, optional
        Keep the reduced axis (all of them for ``axis=None``) as axes of length 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.int64, numpy.ndarray, gpureduce.DeviceArray or `out`
        Indices, of dtype int64.  `out` when given.  Otherwise a 0-d result is a NumPy scalar, also for a device `a`
        (the call waits for the device); an array result is a ``numpy.ndarray`` for a host `a`, complete on
        return, and a ``gpureduce.DeviceArray`` for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a dtype listed above (object, str, datetime...); `axis` is a tuple or
        list; `variant` is not a str.
    ValueError
        NumPy's ``attempt to get argmax of an empty sequence`` for an empty axis (or empty `a`); an unknown
        `variant`, or one not marked *axes* (only those implement argmax); `out` of the wrong shape or
        read-only; a device array that is not in device memory of the current device.
    numpy.exceptions.AxisError
        An axis out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.argmax : The reference semantics.
    max, argmin
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    Ties go to the first occurrence.  A NaN counts as the maximum: the index of the first NaN is returned
    if there is one.  Complex numbers are ordered lexicographically (real part, then imaginary part).

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[4, 9, 2], [3, 9, 7]])
    >>> gpureduce.argmax(x)
    np.int64(1)
    >>> gpureduce.argmax(x, axis=1)
    array([1, 1])
    >>> gpureduce.argmax(np.array([1.0, np.nan, 3.0, np.nan]))
    np.int64(1)
    """
    return reduce("argmax", a, axis, None, out, keepdims, variant=variant)
