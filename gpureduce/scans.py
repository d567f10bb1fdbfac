"""Scans with NumPy's names, result dtypes and errors: cumsum, cumprod, cummax, cummin, nancumsum, nancumprod,
logcumsumexp (PyTorch's), and scan(op, ...).

Each call is one plan (gpureduce/_planning/plan.py) run by the one runner (src/run.c), as for the reductions."""
from __future__ import annotations

from ._docs import document_variants
from ._planning import calls
from ._planning.operands import is_dask_array
from ._planning.plan import AXIS_VARIANTS as _AXIS_VARIANTS

__all__ = ["scan", "cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "logcumsumexp"]

AXIS_VARIANTS = _AXIS_VARIANTS["scan"]  # the variants that also scan along axes ("axes")


@document_variants("scan")
def scan(op: str, a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Cumulative `op` of `a` along `axis`, as NumPy's cumulative function of that operator.

    ``scan("sum", a)`` is ``cumsum(a)``, ``scan("prod", a)`` is ``cumprod(a)``, ``scan("max", a)`` is
    ``cummax(a)`` (``numpy.maximum.accumulate`` of the flattened array) and ``scan("min", a)`` is ``cummin(a)``.

    Parameters
    ----------
    op : {"sum", "prod", "min", "max"}
        The operator.
    %(param_a)s
    axis : None or int, optional
        None (default) scans the array flattened in C order, like ``numpy.cumsum(a)``; an int (negative
        counts from the end) scans along that axis, every other index independently.
    dtype : dtype, optional
        The result and accumulation dtype (sum and prod; float16 and bfloat16 in float32).  Default: NumPy's
        (sum and prod: int64 for bool and signed integers narrower than 64 bits, uint64 for narrower
        unsigned ones, else `a`'s dtype; min and max: `a`'s dtype).
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape and writable.  A device `out` must be on the input's
        device, and contiguous when it has the result dtype and `a` is 1-d or `axis` is None.  Another dtype is
        cast into it as NumPy does.
    exclusive : bool, keyword-only
        False (default): ``out[i] = op(a[0], ..., a[i])``, as NumPy.  True: ``out[0]`` is the identity of
        `op` (0, 1, the dtype's largest value or +inf for min, its smallest or -inf for max) and
        ``out[i] = op(a[0], ..., a[i-1])``.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"``, the default, is the fastest.

    Returns
    -------
    numpy.ndarray, device array or `out`
        Shape ``(a.size,)`` for ``axis=None``, else ``a.shape``; NumPy's result dtype.  `out` when given.
        Otherwise a ``numpy.ndarray`` for a host `a`, complete on return, and a device array of `a`'s kind for a device `a`, computed asynchronously.

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype` is none of
        them; `axis` is a tuple or list; `exclusive` is not a bool; `variant` is not a str.
    ValueError
        An unknown `op` or `variant` (the message lists the valid ones), or a variant not marked *axes* given
        anything but what it scans (see below); `out` of the wrong shape, read-only, on another device, or not
        contiguous where it must be; a malformed ``__cuda_array_interface__``; a device array that is not in
        device memory of the current device.
    %(raises_axis_cuda_memory)s

    See Also
    --------
    cumsum, cumprod, cummax, cummin : The same, one function per operator.
    variants : The registered variants, with their properties and dtypes.

    Notes
    -----
    The work runs on the current CUDA device.  A device `a` is read in place: a PyTorch tensor on PyTorch's
    current stream, a CuPy array on CuPy's current stream, any other DLPack exporter on the legacy default
    stream its producer is told to order its work before, a ``__cuda_array_interface__`` exporter on the
    stream it names (version 3), else on the stream of a device `out`, else on gpureduce's own stream; a
    device `out` whose caller's stream is unknown is complete on return.  The result comes back in `a`'s own kind
    without a copy (a CuPy array, a tensor, a JAX array; a ``gpureduce.DeviceArray`` for other device
    arrays), asynchronously, ordered before the consumer's stream.  Host arrays are staged through pinned
    buffers; a host result is complete on return.

    Integer scans wrap around on overflow, as NumPy's do; NaN propagates through cummax and cummin (every
    element from the first NaN on is NaN), and complex numbers are ordered lexicographically.  float16 (and
    bfloat16) is accumulated in float32 and each element rounded once, so long float16 sums can differ from NumPy's,
    which rounds at every step.  Floating-point sums and products are associated differently from NumPy's
    serial loop: they differ by rounding, about ``eps * log2(n) * cumsum(abs(a))``.  Variants not marked
    "not deterministic" give bitwise the same result on every run.  The *block-local* variants are
    block-level algorithms (one thread block scans one tile); they scan any length as the block step of
    the multi-block driver, which scans the tile totals the same way and adds the prefixes back.

    A ``numpy.ma.MaskedArray`` gets numpy.ma's cumsum and cumprod (its masked elements skipped, its mask kept), a
    ``numpy.memmap`` its data's scan, and any other ndarray subclass a TypeError.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.scan("sum", np.arange(1, 6, dtype=np.int32))
    array([ 1,  3,  6, 10, 15])
    >>> gpureduce.scan("sum", np.arange(1, 6), exclusive=True)
    array([ 0,  1,  3,  6, 10])
    >>> gpureduce.scan("max", np.array([1.0, 3.0, 2.0, 5.0]))
    array([1., 3., 3., 5.])

    A device array gives an array of its own kind (here CuPy's), without a copy:

    >>> import cupy as cp                                   # doctest: +SKIP
    >>> r = gpureduce.scan("sum", cp.arange(1, 6, dtype=cp.int32))   # doctest: +SKIP
    >>> r                                                   # doctest: +SKIP
    array([ 1,  3,  6, 10, 15])
    """
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if is_dask_array(a):
        from .dask import scan_lazily
        return scan_lazily(op, a, axis, dtype, out, exclusive, variant)
    return calls.scan(op, a, axis, dtype, out, exclusive, variant)


# The public functions call scan's body: their own wrapper has taken stream= and torch.compile's route once.
unwrapped_scan = scan.__wrapped__


# cumsum and cumprod: one docstring, the words that differ filled in (gpureduce/_docs.py, document_variants)
_CUMSUM_CUMPROD_DOC = """${summary}

    Parameters
    ----------
    %(param_a)s
    axis : None or int, optional
        None (default) scans the array flattened in C order; an int (negative counts from the end) scans along
        that axis, every other index independently.
    dtype : dtype, optional
        The result and accumulation dtype.  Default: int64 for bool and signed integers narrower than 64
        bits, uint64 for narrower unsigned integers, else `a`'s dtype.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape and writable.  A device `out` must be on the input's
        device, and contiguous when it has the result dtype and `a` is 1-d or `axis` is None.  Another dtype is
        cast into it as NumPy does.
    exclusive : bool, keyword-only
${exclusive}    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"``, the default, is the fastest.

    Returns
    -------
    numpy.ndarray, device array or `out`
${returns}
    Raises
    ------
    TypeError
        `a` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype` is none of
        them; `axis` is a tuple or list; `exclusive` is not a bool; `variant` is not a str.
    %(raises_scan)s

    See Also
    --------
${see_also}    scan : Any scan by name; its Notes describe streams, asynchrony and the variants' properties.

    Notes
    -----
${notes}
    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
${examples}"""


_CUMSUM_WORDS = dict(
    summary="Cumulative sum along `axis`, as ``numpy.cumsum``.",
    exclusive="""        False (default): element i sums elements 0 to i, as NumPy.  True: element 0 is 0 and
        element i sums elements 0 to i - 1.
""",
    returns="""        Shape ``(a.size,)`` for ``axis=None``, else ``a.shape``; NumPy's result dtype (int32 sums in int64),
        or `dtype`.  `out` when given.  Otherwise a ``numpy.ndarray`` for a host `a`, complete on return, and
        a device array of `a`'s kind for a device `a`, computed asynchronously on its stream.
""",
    see_also="""    numpy.cumsum : The reference semantics.
    sum, cumprod
""",
    notes="""    Integer sums wrap around on overflow, as NumPy's do.  float16 and bfloat16 are summed in float32, each element
    rounded once (NumPy rounds at every step, so long float16 sums can differ).  Floating-point sums are
    associated differently from NumPy's serial loop: they differ by rounding, about
    ``eps * log2(n) * cumsum(abs(a))``.
""",
    examples="""    >>> gpureduce.cumsum(np.arange(1, 6, dtype=np.int32))
    array([ 1,  3,  6, 10, 15])
    >>> gpureduce.cumsum(np.arange(6).reshape(2, 3), axis=1)
    array([[ 0,  1,  3],
           [ 3,  7, 12]])
    >>> gpureduce.cumsum(np.arange(1, 6), exclusive=True)
    array([ 0,  1,  3,  6, 10])
""",
)


@document_variants("scan", "sum", _CUMSUM_CUMPROD_DOC, **_CUMSUM_WORDS)
def cumsum(a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    return unwrapped_scan("sum", a, axis, dtype, out, exclusive=exclusive, variant=variant)


_CUMPROD_WORDS = dict(
    summary="Cumulative product along `axis`, as ``numpy.cumprod``.",
    exclusive="""        False (default): element i multiplies elements 0 to i, as NumPy.  True: element 0 is 1 and
        element i multiplies elements 0 to i - 1.
""",
    returns="""        Shape ``(a.size,)`` for ``axis=None``, else ``a.shape``; NumPy's result dtype (int32 multiplies in
        int64), or `dtype`.  `out` when given.  Otherwise a ``numpy.ndarray`` for a host `a`, complete on
        return, and a device array of `a`'s kind for a device `a`, computed asynchronously on its stream.
""",
    see_also="""    numpy.cumprod : The reference semantics.
    prod, cumsum
""",
    notes="""    Integer products wrap around on overflow, as NumPy's do.  float16 and bfloat16 are multiplied in float32,
    each element rounded once.  Floating-point products are associated differently from NumPy's serial loop:
    they differ by rounding.
""",
    examples="""    >>> gpureduce.cumprod(np.arange(1, 6, dtype=np.int32))
    array([  1,   2,   6,  24, 120])
    >>> gpureduce.cumprod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)
    array([[1., 2.],
           [3., 8.]])
""",
)


@document_variants("scan", "prod", _CUMSUM_CUMPROD_DOC, **_CUMPROD_WORDS)
def cumprod(a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    return unwrapped_scan("prod", a, axis, dtype, out, exclusive=exclusive, variant=variant)


# cummax and cummin: one docstring, the words that differ filled in (gpureduce/_docs.py, document_variants)
_RUNNING_EXTREME_DOC = """Running ${extreme} along `axis`, as ``numpy.${extreme}.accumulate``.

    Parameters
    ----------
    %(param_a)s
    axis : None or int, optional
        None (default) scans the array flattened in C order; an int (negative counts from the end) scans along
        that axis, every other index independently.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape and writable.  A device `out` must be on the input's
        device, and contiguous when it has the result dtype and `a` is 1-d or `axis` is None.  Another dtype is
        cast into it as NumPy does.
    exclusive : bool, keyword-only
        False (default): element i is the ${extreme} of elements 0 to i, as NumPy.  True: element 0 is the
        ${bound} and element i is
        the ${extreme} of elements 0 to i - 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"``, the default, is the fastest.

    Returns
    -------
    numpy.ndarray, device array or `out`
        Shape ``(a.size,)`` for ``axis=None``, else ``a.shape``; `a`'s dtype.  `out` when given.  Otherwise a
        ``numpy.ndarray`` for a host `a`, complete on return, and a device array of `a`'s kind for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a dtype listed above (object, str, datetime...); `axis` is a tuple or
        list; `exclusive` is not a bool; `variant` is not a str.
    %(raises_scan)s

    See Also
    --------
    numpy.${extreme}.accumulate : The reference semantics.
    ${name}, ${other}
    scan : Any scan by name; its Notes describe streams, asynchrony and the variants' properties.

    Notes
    -----
    NaN propagates: every element from the first NaN on is NaN.  Complex numbers are ordered
    lexicographically (real part, then imaginary part).  Results are exact.  Unlike
    ``numpy.${extreme}.accumulate``, ``axis=None`` scans the flattened array, as ``numpy.cumsum`` does.

${examples}"""

_CUMMAX_EXAMPLES = """    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.cummax(np.array([1, 3, 2, 5, 4]))
    array([1, 3, 3, 5, 5])
    >>> gpureduce.cummax(np.array([1.0, 3.0, np.nan, 7.0, 2.0]))
    array([ 1.,  3., nan, nan, nan])
    """


@document_variants("scan", "max", _RUNNING_EXTREME_DOC, examples=_CUMMAX_EXAMPLES,
                   extreme="maximum",
                   bound="smallest value of the dtype (-inf for floating and complex dtypes, False for bool)",
                   other="cummin",
                   name="max")
def cummax(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    return unwrapped_scan("max", a, axis, None, out, exclusive=exclusive, variant=variant)


_CUMMIN_EXAMPLES = """    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.cummin(np.array([5, 3, 4, 1, 2]))
    array([5, 3, 3, 1, 1])
    >>> gpureduce.cummin(np.array([[4, 2], [1, 3]]), axis=0)
    array([[4, 2],
           [1, 2]])
    """


@document_variants("scan", "min", _RUNNING_EXTREME_DOC, examples=_CUMMIN_EXAMPLES,
                   extreme="minimum",
                   bound="largest value of the dtype (+inf for floating and complex dtypes, True for bool)",
                   other="cummax",
                   name="min")
def cummin(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    return unwrapped_scan("min", a, axis, None, out, exclusive=exclusive, variant=variant)



_NAN_SCAN_DOC = """Cumulative ${what} along `axis`, NaN counted as ${one}, as ``numpy.nan${cum}``.

    Parameters
    ----------
    %(param_a)s
    axis : None or int, optional
        None (default) scans the array flattened in C order; an int (negative counts from the end) scans along
        that axis, every other index independently.
    dtype : dtype, optional
        The result and accumulation dtype; default: NumPy's (as ``${cum}``).
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape and writable; another dtype is cast into it as NumPy
        does.
    exclusive : bool, keyword-only
        False (default): element i takes elements 0 to i, as NumPy.  True: element 0 is ${one} and element i
        takes elements 0 to i - 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.ndarray, device array or `out`
        Shape ``(a.size,)`` for ``axis=None``, else ``a.shape``; NumPy's result dtype, or `dtype`.  `out` when
        given.  Otherwise a ``numpy.ndarray`` for a host `a`, complete on return, and a device array of `a`'s
        kind for a device `a`, computed asynchronously on its stream.

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a supported dtype, or `dtype` is none; `axis` is a tuple or list;
        `exclusive` is not a bool.
    ValueError
        An unknown `variant`, or one not marked *axes*; `out` of the wrong shape or read-only.
    %(raises_axis_cuda)s

    See Also
    --------
    numpy.nan${cum} : The reference semantics.
    ${cum} : The same without skipping NaN.

    Notes
    -----
    A NaN element is read as ${one} as it is loaded (a complex one: either part NaN): one read of `a`, no copy.
    A NaN made by the data (inf - inf) is kept, as NumPy's.  Integer and bool inputs run ``${cum}``.
    Floating-point results differ from NumPy's serial loop by rounding, as ``${cum}``'s do.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
${examples}"""


@document_variants("scan", "nansum", _NAN_SCAN_DOC, what="sum", one="zero", cum="cumsum", examples="""\
    >>> gpureduce.nancumsum(np.array([1.0, np.nan, 3.0]))
    array([1., 1., 4.])
    >>> gpureduce.nancumsum(np.array([[np.nan, 2.0], [3.0, np.nan]]), axis=0)
    array([[0., 2.],
           [3., 2.]])
""")
def nancumsum(a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    return unwrapped_scan("nansum", a, axis, dtype, out, exclusive=exclusive, variant=variant)


@document_variants("scan", "nanprod", _NAN_SCAN_DOC, what="product", one="one", cum="cumprod", examples="""\
    >>> gpureduce.nancumprod(np.array([2.0, np.nan, 3.0]))
    array([2., 2., 6.])
""")
def nancumprod(a, axis=None, dtype=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    return unwrapped_scan("nanprod", a, axis, dtype, out, exclusive=exclusive, variant=variant)


@document_variants("scan", "logsumexp")
def logcumsumexp(a, axis=None, out=None, *, exclusive: bool = False, variant: str = "auto"):
    """Logarithm of the cumulative sum of exponentials along `axis`, as ``torch.logcumsumexp``.

    Element i is ``log(exp(a[0]) + ... + exp(a[i]))``, computed as ``m + log1p(exp(-|x - m|))`` step by step, so
    it neither overflows nor underflows where the result itself does not.

    Parameters
    ----------
    a : array_like or device array
        %(a)s  Real: bool, integer or floating.
    axis : None or int, optional
        None (default) scans the array flattened in C order (PyTorch requires a dimension; NumPy's cumulative
        functions flatten); an int (negative counts from the end) scans along that axis.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape and writable; another dtype is cast into it.
    exclusive : bool, keyword-only
        False (default): element i takes elements 0 to i.  True: element 0 is -inf (the log of an empty sum) and
        element i takes elements 0 to i - 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.ndarray, device array or `out`
        Shape ``(a.size,)`` for ``axis=None``, else ``a.shape``: `a`'s dtype for floating inputs (float16 and
        bfloat16 are computed in float32 and rounded once per element), float64 for bool and integer inputs.

    Raises
    ------
    TypeError
        `a` is complex (not supported), or not an array of a supported dtype; `axis` is a tuple or list.
    ValueError
        An unknown `variant`, or one not marked *axes*; `out` of the wrong shape or read-only.
    %(raises_axis_cuda)s

    See Also
    --------
    logsumexp : The whole reduction, as ``scipy.special.logsumexp``.
    numpy.logaddexp : The step, as a ufunc (``numpy.logaddexp.accumulate`` is the same scan, serially).

    Notes
    -----
    -inf elements add nothing; an inf stays inf from its place on; a NaN makes every later element NaN.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.logcumsumexp(np.log(np.array([1.0, 2.0, 3.0])))
    array([0.        , 1.09861229, 1.79175947])
    >>> gpureduce.logcumsumexp(np.array([1000.0, 1000.0]))
    array([1000.        , 1000.69314718])
    """
    return unwrapped_scan("logsumexp", a, axis, None, out, exclusive=exclusive, variant=variant)
