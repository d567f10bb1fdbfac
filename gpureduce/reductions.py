"""Reductions with NumPy's signatures, result dtypes and errors: sum, prod, min, max, mean, argmin, argmax, any,
all, count_nonzero, ptp (the nan functions and the variances have modules of their own).

Each call is one plan (gpureduce/_planning/plan.py) run by the one runner (src/run.c).  A whole dense array in
NumPy's result dtype runs the chosen variant's flat kernel (the seeds' teaching variants, cub, and auto's
single-launch kernel); everything else runs the axis kernels (cuda/axis/), which the "auto" and "cub"
variants cover; the teaching variants refuse it with a ValueError.
"""
from __future__ import annotations

import string

from ._docs import document_variants
from ._planning import calls
from ._planning.operands import is_dask_array
from ._planning.numpy_rules import NoValue as _NoValue
from ._planning.plan import AXIS_VARIANTS as _AXIS_VARIANTS

__all__ = ["reduce", "sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all", "count_nonzero", "ptp"]
# (this module defines any, all, min, max and sum: the builtins of those names are not used below)

AXIS_VARIANTS = _AXIS_VARIANTS["reduce"]  # the variants that also run the axis machinery ("axes")


@document_variants("reduce")
def reduce(op: str, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
           variant: str = "auto", ddof=None, ord=None):
    """Reduce `a` with the operator `op`, as the NumPy function of that name does.

    ``reduce("sum", a, ...)`` is ``sum(a, ...)``, and so on for each operator: the same arguments, result
    dtypes, shapes and exceptions as NumPy's function, and the same values (floating-point results up to
    rounding).  The per-operator functions document each one's details.

    Parameters
    ----------
    op : str
        The reduction, named as its function: "sum", "prod", "min", "max", "mean", "argmin", "argmax", "any",
        "all", "count_nonzero", "ptp", "nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin",
        "nanargmax", "var", "std", "nanvar", "nanstd", "logsumexp" or "vector_norm".  Each takes the arguments
        of its function: `dtype` sum, prod, mean, var, std and their nan forms; `initial` sum, prod, min, max
        and their nan forms; `where` all but ptp, count_nonzero, logsumexp, vector_norm and the arg reductions;
        argmin, argmax and their nan forms take only `axis` (an int or None), `out` and `keepdims`, ptp these
        with any axes, count_nonzero, logsumexp and vector_norm only `axis` and `keepdims`; `ddof` var, std and
        their nan forms; `ord` vector_norm.
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all of them.  Negative axes count from the end.
    dtype : dtype, optional
        The result dtype, which is also the accumulation dtype (float16 and bfloat16 in float32).  Default:
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
    ddof : int or float, keyword-only, optional
        The variances' "delta degrees of freedom" (default 0); no other operator takes it.
    ord : float, keyword-only, optional
        vector_norm's order (default 2; inf and -inf included); no other operator takes it.

    Returns
    -------
    numpy.generic, numpy.ndarray, device array or `out`
        `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar for 0-d, for a host `a`, complete on
        return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array, a tensor, a JAX array, else
        a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)`` or ``r.item()`` waits for
        it).

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype`
        is none of them; `where` is not boolean, or on the device while `a` is on the host; `variant` is not a
        str; `dtype` given to min, max, argmin or argmax; a tuple `axis` for argmin or argmax.
    ValueError
        An unknown `op` or `variant` (the message lists the valid ones); a variant not marked *axes* given
        anything but a whole dense array of its dtypes; a duplicate axis; `out` of the wrong shape or
        read-only; `where` not broadcastable to `a`; NumPy's errors for an empty min, max, argmin or argmax,
        and for min or max with `where` but no `initial`; a malformed ``__cuda_array_interface__``; a device
        array that is not in device memory of the current device.
    %(raises_axis_cuda_memory)s

    See Also
    --------
    sum, prod, min, max, mean, argmin, argmax : The same, one function per operator.
    variants : The registered variants, with their properties and dtypes.

    Notes
    -----
    The work runs on the current CUDA device.  A device `a` is read in place: on ``stream=`` when given (after
    the streams its arrays were made on), else a PyTorch tensor on PyTorch's current stream, a CuPy array on
    CuPy's current stream, any other DLPack exporter (JAX, ...) on the legacy default stream its producer is
    told to order its work before, a ``__cuda_array_interface__`` exporter on the stream it names (version 3),
    else on the stream of a device `out`, else on gpureduce's own stream.  Nothing on that path waits for the
    device: the result, 0-d included, comes back in `a`'s own kind (a CuPy array or a tensor allocated by its
    library on that stream, a JAX array, a ``gpureduce.DeviceArray`` for other device arrays); a device `out`
    is written on the caller's stream, and the call completes before it returns only where that stream is
    unknown.  Calls on CuPy and PyTorch arrays can be captured in a CUDA graph (``torch.cuda.graph``, CuPy's
    ``Stream.begin_capture``) once a first call outside the capture has loaded their kernels.  Host arrays are
    staged through pinned buffers; a host result is complete on return.

    Floating-point sums and products are formed in a tree, not in NumPy's order: they differ from NumPy's by
    rounding, about ``eps * log2(n) * sum(abs(a))`` for a sum.  Variants not marked "not deterministic"
    give bitwise the same result on every run.

    A ``numpy.ma.MaskedArray`` gets numpy.ma's answer (its masked elements skipped), a ``numpy.memmap`` its
    data's, and any other ndarray subclass a TypeError.

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

    A device array gives an array of its own kind, 0-d results too, asynchronously on its stream; ``float()``
    or ``.item()`` brings a value home:

    >>> import cupy as cp                                   # doctest: +SKIP
    >>> d = cp.arange(12, dtype=cp.float32).reshape(3, 4)   # doctest: +SKIP
    >>> gpureduce.reduce("sum", d, axis=1)                  # doctest: +SKIP
    array([ 6., 22., 38.], dtype=float32)
    >>> gpureduce.reduce("sum", d)                          # doctest: +SKIP
    array(66., dtype=float32)
    >>> float(gpureduce.reduce("sum", d))                   # doctest: +SKIP
    66.0
    """
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if is_dask_array(a):
        from .dask import reduce_lazily
        return reduce_lazily(op, a, axis, dtype, out, keepdims, initial, where, variant, ord, ddof)
    return calls.reduce(op, a, axis, dtype, out, keepdims, initial, where, variant, ddof, ord)


# The public functions call reduce's body: their own wrapper has taken stream= and torch.compile's route once.
unwrapped_reduce = reduce.__wrapped__


# sum and prod: one docstring, the words that differ filled in (gpureduce/_docs.py, document_variants)
_SUM_PROD_DOC = """${summary}

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to ${verb} over; None (default) ${verbs} all elements.  Negative axes count from the end.
    dtype : dtype, optional
        The result and accumulation dtype.  Default: int64 for bool and signed integers narrower than 64
        bits, uint64 for narrower unsigned integers, else `a`'s dtype (or `out`'s, when `out` is given).
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    initial : scalar, optional
        Starting value of every ${noun} (default ${identity}).
    where : array_like of bool, optional
${where}    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, device array or `out`
        `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar for 0-d, for a host `a`, complete on
        return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array, a tensor, a JAX array, else
        a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)`` or ``r.item()`` waits for
        it).

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
    %(raises_axis_cuda)s

    See Also
    --------
    numpy.${name} : The reference semantics.
    reduce : Any reduction by name; its Notes describe streams and asynchrony.
    ${related}

${notes}${examples}"""


_SUM_WORDS = dict(
    summary="Sum of array elements over the given axes, as ``numpy.sum``.", verb="sum", verbs="sums", noun="sum",
    identity="0", name="sum", related="mean, cumsum",
    where="""        Sum only the elements where `where` (broadcast to ``a.shape``) is True.  A device mask needs a device
        `a`.
""",
    notes="""    Notes
    -----
    Integer sums wrap around on overflow, as NumPy's do; a bool sum counts the True elements.  float16 and
    bfloat16 are summed in float32 and rounded once.  The sum of an empty array (or axis) is `initial`, or 0.
    Floating-point sums are formed in a tree: they differ from NumPy's by rounding, about
    ``eps * log2(n) * sum(abs(a))``.  ``variant="exact"`` gives the exact sum of a whole float16, bfloat16,
    float32 or float64 array rounded once to nearest in its dtype (the bits ``math.fsum`` rounds to), the same
    whatever the order of the elements, the launch, the device or the input's kind; NaN and infinities as IEEE 754
    says, +0.0 for an exact zero.

""",
    examples="""    Examples
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
""",
)


@document_variants("reduce", "sum", _SUM_PROD_DOC, **_SUM_WORDS)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
        variant: str = "auto"):
    return unwrapped_reduce("sum", a, axis, dtype, out, keepdims, initial, where, variant=variant)


_PROD_WORDS = dict(
    summary="Product of array elements over the given axes, as ``numpy.prod``.", verb="multiply",
    verbs="multiplies", noun="product", identity="1", name="prod", related="cumprod",
    where="""        Multiply only the elements where `where` (broadcast to ``a.shape``) is True.  A device mask needs a
        device `a`.
""",
    notes="""    Notes
    -----
    Integer products wrap around on overflow, as NumPy's do.  float16 and bfloat16 are multiplied in float32
    and rounded once.  The product of an empty array (or axis) is `initial`, or 1.

""",
    examples="""    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.prod(np.arange(1, 6, dtype=np.int32))   # int32 multiplies in int64
    np.int64(120)
    >>> gpureduce.prod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    array([ 2., 12.])
""",
)


@document_variants("reduce", "prod", _SUM_PROD_DOC, **_PROD_WORDS)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
         variant: str = "auto"):
    return unwrapped_reduce("prod", a, axis, dtype, out, keepdims, initial, where, variant=variant)


# min and max: one docstring, the words that differ filled in (gpureduce/_docs.py, document_variants)
_EXTREME_DOC = """${Name} over the given axes, as ``numpy.${name}``.

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all elements.  Negative axes count from the end.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    initial : scalar, optional
        A value every ${name} also takes into account; needed for an empty axis and with `where`.
    where : array_like of bool, optional
        Only the elements where `where` (broadcast to ``a.shape``) is True take part; needs `initial`.  A
        device mask needs a device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, device array or `out`
        Of `a`'s dtype.  `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar for 0-d, for a host
        `a`, complete on return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array, a tensor, a
        JAX array, else a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)`` or
        ``r.item()`` waits for it).

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...); `where` is
        not boolean, or on the device while `a` is on the host; `variant` is not a str.
    ValueError
        NumPy's ``zero-size array to reduction operation ${extreme} which has no identity`` for an empty `a` or
        reduced axis without `initial`, and its error for `where` without `initial`; an unknown `variant` (the
        message lists the valid ones), or one not marked *axes* given anything but a whole dense array of its
        dtypes; a duplicate axis; `out` of the wrong shape or read-only; `where` not broadcastable to `a`; a
        device array that is not in device memory of the current device.
    %(raises_axis_cuda)s

    See Also
    --------
    numpy.${name} : The reference semantics.
    ${arg}, ${cum}
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    NaN propagates: the ${name} of a slice holding a NaN is NaN.  Complex numbers are ordered
    lexicographically (real part, then imaginary part), as in NumPy.  Results are exact.

${examples}"""

_MIN_EXAMPLES = """    Examples
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


@document_variants("reduce", "min", _EXTREME_DOC, examples=_MIN_EXAMPLES,
                   Name="Minimum", extreme="minimum", arg="argmin", cum="cummin", name="min")
def min(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    return unwrapped_reduce("min", a, axis, None, out, keepdims, initial, where, variant=variant)


_MAX_EXAMPLES = """    Examples
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


@document_variants("reduce", "max", _EXTREME_DOC, examples=_MAX_EXAMPLES,
                   Name="Maximum", extreme="maximum", arg="argmax", cum="cummax", name="max")
def max(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    return unwrapped_reduce("max", a, axis, None, out, keepdims, initial, where, variant=variant)


@document_variants("reduce", "mean")
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True, variant: str = "auto"):
    """Arithmetic mean over the given axes, as ``numpy.mean``.

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to average over; None (default) averages all elements.  Negative axes count from the end.
    dtype : dtype, optional
        The result and accumulation dtype.  Default: float64 for bool and integers, else `a`'s dtype
        (float16 and bfloat16 accumulated in float32).  An integer or bool dtype works as NumPy's: the sum is
        taken in it (wrapping around), divided by the count in float64 and truncated back to it.
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
    numpy.generic, numpy.ndarray, device array or `out`
        The sum divided by the count.  `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar for 0-d,
        for a host `a`, complete on return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array,
        a tensor, a JAX array, else a ``gpureduce.DeviceArray``), computed asynchronously on its stream
        (``float(r)`` or ``r.item()`` waits for it).

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a dtype listed above (object, str, datetime...), or `dtype`
        is none of them; `where` is not boolean, or on the device while `a` is on the host; `variant` is not
        a str.
    ValueError
        An unknown `variant`, or one not marked *axes* (only those implement mean) other than ``"exact"``, or
        ``"exact"`` with arguments it does not take (see Notes); a duplicate axis; `out` of the wrong shape or
        read-only; `where` not broadcastable to `a`; a device array that is not in device memory of the current
        device.
    %(raises_axis_cuda)s

    Warns
    -----
    RuntimeWarning
        ``Mean of empty slice`` when a reduced axis is empty, or a host `where` leaves some result no element
        (a device `where` is not counted, which would cost a wait); those results are NaN.

    See Also
    --------
    numpy.mean : The reference semantics.
    sum
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    Integers are summed in float64 (no wrap-around) unless `dtype` is an integer dtype.  The sum is formed
    in a tree: the result differs from NumPy's by rounding, about ``eps * log2(n) * mean(abs(a))``.  With an
    integer or bool `dtype` on a device `a`, the division runs in `a`'s library (CuPy, PyTorch, JAX), or on
    the host for a ``gpureduce.DeviceArray``.  ``variant="exact"`` gives the exact sum of a whole float16,
    bfloat16, float32 or float64 array divided by the count and rounded once to nearest in its dtype, the same
    bits whatever the order of the elements, the launch or the input's kind (a mean whose sum overflows the
    dtype is still finite where the quotient is); NaN and infinities as IEEE 754 says, NaN for no element.  It
    takes no axis, dtype=, out= or where= for floating inputs; integer and bool inputs run ``"auto"``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.mean(np.arange(4, dtype=np.int32))
    np.float64(1.5)
    >>> gpureduce.mean(np.arange(12.0).reshape(3, 4), axis=0, keepdims=True)
    array([[4., 5., 6., 7.]])
    """
    return unwrapped_reduce("mean", a, axis, dtype, out, keepdims, _NoValue, where, variant=variant)


# argmin and argmax: one docstring, the words that differ filled in
_ARG_EXTREME_DOC = """Index of the first ${extreme} along an axis, as ``numpy.${arg}``.

    Parameters
    ----------
    %(param_a)s
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
    numpy.int64, numpy.ndarray, device array or `out`
        Indices, of dtype int64.  `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar for 0-d, for a
        host `a`, complete on return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array, a
        tensor, a JAX array, else a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)``
        or ``r.item()`` waits for it).

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a dtype listed above (object, str, datetime...); `axis` is a tuple or
        list; `variant` is not a str.
    ValueError
        NumPy's ``attempt to get ${arg} of an empty sequence`` for an empty axis (or empty `a`); an unknown
        `variant`, or one not marked *axes* (only those implement ${arg}); `out` of the wrong shape or
        read-only; a device array that is not in device memory of the current device.
    %(raises_axis_cuda)s

    See Also
    --------
    numpy.${arg} : The reference semantics.
    ${name}, ${other}
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    Ties go to the first occurrence.  A NaN counts as the ${extreme}: the index of the first NaN is returned
    if there is one.  Complex numbers are ordered lexicographically (real part, then imaginary part).

${examples}"""

# argmin's and argmax's examples: one text, the positions each finds filled in
_ARG_EXAMPLES = string.Template("""    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[4, 9, 2], [3, 9, 7]])
    >>> gpureduce.${arg}(x)
    np.int64(${whole})
    >>> gpureduce.${arg}(x, axis=1)
    array(${rows})
    >>> gpureduce.${arg}(np.array([1.0, np.nan, 3.0, np.nan]))
    np.int64(1)
    """)


@document_variants("reduce", "argmin", _ARG_EXTREME_DOC,
                   examples=_ARG_EXAMPLES.substitute(arg="argmin", whole=2, rows=[2, 0]),
                   arg="argmin", extreme="minimum", name="min", other="argmax")
def argmin(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    return unwrapped_reduce("argmin", a, axis, None, out, keepdims, variant=variant)


@document_variants("reduce", "argmax", _ARG_EXTREME_DOC,
                   examples=_ARG_EXAMPLES.substitute(arg="argmax", whole=1, rows=[1, 1]),
                   arg="argmax", extreme="maximum", name="max", other="argmin")
def argmax(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    return unwrapped_reduce("argmax", a, axis, None, out, keepdims, variant=variant)


_TRUTH_DOC = """Test whether ${which} element along the given axes is true, as ``numpy.${name}``.

    An element is true when it is nonzero: a NaN is true, a complex number is true when either part is
    nonzero.

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all of them.  Negative axes count from the end.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does (True is 1).
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    where : array_like of bool, keyword-only, optional
        Only the elements where `where` (broadcast to ``a.shape``) is True take part; a result that takes no
        element is ${empty}.  A device mask needs a device `a`.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.bool, numpy.ndarray, device array or `out`
        bool: ${returns}; ${empty} over an empty axis.  `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy
        scalar for 0-d, for a host `a`, complete on return; for a device `a` an array of `a`'s kind, 0-d results too
        (a CuPy array, a tensor, a JAX array, else a ``gpureduce.DeviceArray``), computed asynchronously on its
        stream (``float(r)`` or ``r.item()`` waits for it).

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a supported dtype, or `where` is not boolean.
    ValueError
        An unknown `variant`, or one not marked *axes*; a duplicate axis; `out` of the wrong shape or
        read-only; `where` not broadcastable to `a`.
    %(raises_axis_cuda)s

    See Also
    --------
    numpy.${name} : The reference semantics.
    ${other}, count_nonzero
    reduce : Any reduction by name; its Notes describe streams and asynchrony.

    Notes
    -----
    One read of `a`: each element's truth is folded with "${fold}" as it is loaded, whatever its dtype (no
    bool copy is made first, except by the CUB baseline, which reduces bool only).

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[0.0, 2.0, np.nan], [0.0, 0.0, 1.0]])
${examples}"""


@document_variants("reduce", "any", _TRUTH_DOC, which="any", name="any", other="all", empty="False",
                   returns="whether any element taken is true", fold="or", examples="""\
    >>> gpureduce.any(x)
    np.True_
    >>> gpureduce.any(x, axis=0)
    array([False,  True,  True])
    >>> gpureduce.any(np.zeros(0))
    np.False_
    """)
def any(a, axis=None, out=None, keepdims=False, *, where=True, variant: str = "auto"):
    return unwrapped_reduce("any", a, axis, None, out, keepdims, where=where, variant=variant)


@document_variants("reduce", "all", _TRUTH_DOC, which="every", name="all", other="any", empty="True",
                   returns="whether every element taken is true", fold="and", examples="""\
    >>> gpureduce.all(x)
    np.False_
    >>> gpureduce.all(x, axis=0)
    array([False, False,  True])
    >>> gpureduce.all(np.zeros(0))
    np.True_
    """)
def all(a, axis=None, out=None, keepdims=False, *, where=True, variant: str = "auto"):
    return unwrapped_reduce("all", a, axis, None, out, keepdims, where=where, variant=variant)


@document_variants("reduce", "count_nonzero")
def count_nonzero(a, axis=None, *, keepdims=False, variant: str = "auto"):
    """Count the nonzero elements along the given axes, as ``numpy.count_nonzero``.

    An element counts when it is nonzero: a NaN counts, a complex number counts when either part is nonzero.

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to count along; None (default) counts all elements.  Negative axes count from the end.
    keepdims : bool, keyword-only, optional
        Keep the counted axes as axes of length 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.int64, numpy.ndarray or device array
        The counts, int64 (NumPy's intp).  A ``numpy.ndarray``, or a NumPy scalar for 0-d, for a host `a`, complete
        on return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array, a tensor, a JAX array,
        else a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)`` or ``r.item()`` waits
        for it).

    Raises
    ------
    TypeError
        `a` is not an array of a supported dtype.
    ValueError
        An unknown `variant`, or one not marked *axes*; a duplicate axis.
    %(raises_axis_cuda)s

    See Also
    --------
    numpy.count_nonzero : The reference semantics.
    any, all, sum

    Notes
    -----
    One read of `a`: each element's truth is added as it is loaded, in int64, whatever its dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[0, 1, 7, 0], [3, 0, 2, 19]])
    >>> gpureduce.count_nonzero(x)
    np.int64(5)
    >>> gpureduce.count_nonzero(x, axis=0)
    array([1, 1, 2, 1])
    >>> gpureduce.count_nonzero(x, axis=1, keepdims=True)
    array([[2],
           [3]])
    """
    return unwrapped_reduce("count_nonzero", a, axis, None, None, keepdims, variant=variant)


@document_variants("reduce", "ptp")
def ptp(a, axis=None, out=None, keepdims=False, *, variant: str = "auto"):
    """Range of values (maximum - minimum) along the given axes, as ``numpy.ptp``.

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all of them.  Negative axes count from the end.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, device array or `out`
        ``max - min`` in `a`'s dtype: an integer range that does not fit wraps around, as NumPy's (int8
        ``[-128, 127]`` gives -1); NaN where a slice holds a NaN; complex numbers are ordered as NumPy orders
        them (real part first).  `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar for 0-d, for a
        host `a`, complete on return; for a device `a` an array of `a`'s kind, 0-d results too (a CuPy array, a
        tensor, a JAX array, else a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)``
        or ``r.item()`` waits for it).

    Raises
    ------
    TypeError
        `a` or `out` is not an array of a supported dtype; `a` is bool (NumPy has no boolean subtract).
    ValueError
        An empty reduction (NumPy's "zero-size array to reduction operation maximum which has no identity");
        an unknown `variant`, or one not marked *axes*; a duplicate axis; `out` of the wrong shape or read-only.
    %(raises_axis_cuda)s

    See Also
    --------
    numpy.ptp : The reference semantics.
    min, max

    Notes
    -----
    One read of `a`: each result carries its minimum and maximum together and subtracts them once at the end
    (NumPy reads `a` twice, once for each).

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[4, 9, 2, 10], [6, 9, 7, 12]])
    >>> gpureduce.ptp(x)
    np.int64(10)
    >>> gpureduce.ptp(x, axis=1)
    array([8, 6])
    >>> gpureduce.ptp(np.array([-128, 127], dtype=np.int8))
    np.int8(-1)
    """
    return unwrapped_reduce("ptp", a, axis, None, out, keepdims, variant=variant)
