"""NumPy's nan functions: reductions that skip NaN (nansum, nanprod, nanmin, nanmax, nanmean, nanargmin,
nanargmax; nanvar and nanstd are with var and std in gpureduce/moments.py).

Each reads its input once: the kernels skip a NaN as they load it (cuda/primitives/reducers.cuh), where NumPy
first copies the array with NaN replaced.  Integer and bool inputs hold no NaN and run the plain reduction
(gpureduce/_planning/numpy_rules.py), as NumPy's do.
"""
from __future__ import annotations

from ._docs import document_variants
from ._planning.numpy_rules import NoValue as _NoValue
from .reductions import unwrapped_reduce

__all__ = ["nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin", "nanargmax"]

_TEMPLATE = """${summary}

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all of them.  Negative axes count from the end.${dtype}
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.${initial}
    where : array_like of bool, optional
        Only the elements where `where` (broadcast to ``a.shape``) is True take part.  A device mask needs a
        device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, device array or `out`
        ${returns}  `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar for 0-d, for a host `a`,
        complete on return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array, a tensor, a JAX
        array, else a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)`` or
        ``r.item()`` waits for it).

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a supported dtype, or `dtype` is none; `where` is not boolean.
    ValueError
        An unknown `variant`, or one not marked *axes*; a duplicate axis; `out` of the wrong shape or
        read-only; `where` not broadcastable to `a`.${raises}
    %(raises_axis_cuda)s

    Warns
    -----
    RuntimeWarning
        ${warns}

    See Also
    --------
    numpy.${name} : The reference semantics.
    ${plain} : The same without skipping NaN.

    Notes
    -----
    A NaN is skipped as it is read (a complex number is NaN when either part is): one read of `a`, no copy.
    Integer and bool inputs run ``${plain}``.  The warning is given for host inputs and 0-d results; an array
    result of a device input is not inspected (that would cost a reduction and a wait).

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 6.0]])
${examples}"""

_DTYPE = """
    dtype : dtype, optional
        The result and accumulation dtype; default: NumPy's (as ``${plain}``)."""
_INITIAL = """
    initial : scalar, optional
        A starting value folded into every result${no_identity}."""
_EMPTY = """
        An empty reduction (or a `where` mask) without `initial`: NumPy's error."""


def _words(name, plain, summary, returns, examples, dtype=False, initial=False, warns="Never."):
    return dict(name=name, plain=plain, summary=summary, returns=returns, examples=examples, warns=warns,
                dtype=_DTYPE.replace("${plain}", plain) if dtype else "",
                initial=_INITIAL.replace("${no_identity}", "; required over an empty axis or with `where`"
                                         if plain in ("min", "max") else "") if initial else "",
                raises=_EMPTY if plain in ("min", "max") else "")


@document_variants("reduce", "nansum", _TEMPLATE, **_words(
    "nansum", "sum", "Sum of array elements over the given axes, NaN counted as zero, as ``numpy.nansum``.",
    "The sums; a slice of NaNs only sums to 0.", """    >>> gpureduce.nansum(x)
    np.float64(10.0)
    >>> gpureduce.nansum(x, axis=0)
    array([1., 0., 9.])
""", dtype=True, initial=True))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
           variant: str = "auto"):
    return unwrapped_reduce("nansum", a, axis, dtype, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "nanprod", _TEMPLATE, **_words(
    "nanprod", "prod", "Product of array elements over the given axes, NaN counted as one, as ``numpy.nanprod``.",
    "The products; a slice of NaNs only gives 1.", """    >>> gpureduce.nanprod(x)
    np.float64(18.0)
    >>> gpureduce.nanprod(x, axis=1)
    array([3., 6.])
""", dtype=True, initial=True))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
            variant: str = "auto"):
    return unwrapped_reduce("nanprod", a, axis, dtype, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "nanmin", _TEMPLATE, **_words(
    "nanmin", "min", "Minimum over the given axes, ignoring NaN, as ``numpy.nanmin``.",
    "The minima, of `a`'s dtype; NaN for a slice of NaNs only.", """    >>> gpureduce.nanmin(x)
    np.float64(1.0)
    >>> gpureduce.nanmin(x, axis=1)
    array([1., 6.])
""", initial=True, warns='"All-NaN slice encountered" when a slice holds NaNs only (its result is NaN).'))
def nanmin(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    return unwrapped_reduce("nanmin", a, axis, None, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "nanmax", _TEMPLATE, **_words(
    "nanmax", "max", "Maximum over the given axes, ignoring NaN, as ``numpy.nanmax``.",
    "The maxima, of `a`'s dtype; NaN for a slice of NaNs only.", """    >>> gpureduce.nanmax(x)
    np.float64(6.0)
    >>> gpureduce.nanmax(x, axis=0)
    array([ 1., nan,  6.])
""", initial=True, warns='"All-NaN slice encountered" when a slice holds NaNs only (its result is NaN).'))
def nanmax(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    return unwrapped_reduce("nanmax", a, axis, None, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "nanmean", _TEMPLATE, **_words(
    "nanmean", "mean", "Arithmetic mean over the given axes, ignoring NaN, as ``numpy.nanmean``.",
    "The means (float64 for integer and bool inputs); NaN for a slice of NaNs only.", """    >>> gpureduce.nanmean(x)
    np.float64(3.3333333333333335)
    >>> gpureduce.nanmean(x, axis=1)
    array([2., 6.])
""", dtype=True, warns='"Mean of empty slice" when a slice holds no number (its result is NaN).'))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True, variant: str = "auto"):
    return unwrapped_reduce("nanmean", a, axis, dtype, out, keepdims, where=where, variant=variant)


_ARG_TEMPLATE = """Indices of the ${extreme} values along an axis, ignoring NaN, as ``numpy.nan${arg}``.

    Parameters
    ----------
    %(param_a)s
    axis : int, optional
        The axis to search; None (default) searches the flattened array (positions count in C order).
    out : numpy.ndarray or device array, optional
        Where to write the indices: of the result's shape, writable, on the current device if a device array.
    keepdims : bool, keyword-only, optional
        Keep the searched axis (every axis when `axis` is None) as an axis of length 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.int64, numpy.ndarray, device array or `out`
        The position of the first ${extreme} number of each slice, int64.  `out` when given.  Otherwise a
        ``numpy.ndarray`` (a NumPy scalar for 0-d) for a host `a`, and an array of `a`'s kind, 0-d results too,
        for a device `a` (the call waits for it: see Raises).

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a supported dtype; a tuple `axis`.
    ValueError
        A slice of NaNs only: NumPy's "All-NaN slice encountered" (every result is looked at, a device one
        too, so the call waits for the device; an `out` holds -1 there when it raises); an empty slice
        ("attempt to get ${arg} of an empty sequence"); an unknown `variant`, or one not marked *axes*; `out`
        of the wrong shape or read-only.
    numpy.exceptions.AxisError
        `axis` out of range for ``a.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.nan${arg} : The reference semantics.
    ${arg} : The same without skipping NaN (the first NaN is the ${extreme} there).
    nan${other}

    Notes
    -----
    A NaN is skipped as it is read (a complex number is NaN when either part is): one read of `a`, no copy.
    Integer and bool inputs run ``${arg}``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[np.nan, 4.0, 1.0], [2.0, np.nan, 7.0]])
${examples}"""


@document_variants("reduce", "nanargmin", _ARG_TEMPLATE, arg="argmin", other="argmax", extreme="minimum",
                   examples="""\
    >>> gpureduce.nanargmin(x)
    np.int64(2)
    >>> gpureduce.nanargmin(x, axis=1)
    array([2, 0])
""")
def nanargmin(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    return unwrapped_reduce("nanargmin", a, axis, None, out, keepdims, variant=variant)


@document_variants("reduce", "nanargmax", _ARG_TEMPLATE, arg="argmax", other="argmin", extreme="maximum",
                   examples="""\
    >>> gpureduce.nanargmax(x)
    np.int64(5)
    >>> gpureduce.nanargmax(x, axis=0)
    array([1, 0, 1])
""")
def nanargmax(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    return unwrapped_reduce("nanargmax", a, axis, None, out, keepdims, variant=variant)
