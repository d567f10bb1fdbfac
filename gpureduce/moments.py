"""Variance and standard deviation, as numpy.var, numpy.std, numpy.nanvar and numpy.nanstd, in one read of the
input.

The kernels carry shifted sums (count, a pivot element K, sum(x - K), sum(|x - K|^2)) in float64 and merge
them onto a common pivot (cuda/primitives/reducers.cuh: MomentsReducer), so the result is accurate where the
two-moment formula sum(x^2)/n - mean^2 loses every digit to a large common offset, and the input is read once
(NumPy and CuPy read it twice: the mean first, then the deviations).
"""
from __future__ import annotations

from ._docs import document_variants
from ._planning.numpy_rules import NoValue as _NoValue, variance_ddof
from .reductions import unwrapped_reduce

__all__ = ["var", "std", "nanvar", "nanstd"]


_TEMPLATE = """${summary}

    Parameters
    ----------
    %(param_a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all of them.  Negative axes count from the end.
    dtype : dtype, optional
        The dtype the ${what} is computed and returned in: float16, bfloat16, float32 or float64.  Default: float64 for
        bool and integer inputs, else `a`'s own (its real dtype for complex inputs); float16 and bfloat16 are
        computed in float32.
    out : numpy.ndarray or device array, optional
        Where to write the result: of the result's shape, writable, on the current device if a device array;
        another dtype is cast into it as NumPy does.
    ddof : int or float, optional
        "Delta degrees of freedom": the divisor is ``N - ddof`` for ``N`` elements taken (default 0).
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    where : array_like of bool, keyword-only, optional
        Only the elements where `where` (broadcast to ``a.shape``) is True take part.  A device mask needs a
        device `a`.
    mean : array_like, keyword-only, optional
        NumPy's precomputed mean: not taken (the mean comes from the same pass); a TypeError says so.
    correction : int or float, keyword-only, optional
        The Array API's name for `ddof`; give one of the two.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray, device array or `out`
        The ${what}: real for complex inputs.  `out` when given.  Otherwise a ``numpy.ndarray``, or a NumPy scalar
        for 0-d, for a host `a`, complete on return; for a device `a` an array of `a`'s kind, 0-d results too (a
        CuPy array, a tensor, a JAX array, else a ``gpureduce.DeviceArray``), computed asynchronously on its stream
        (``float(r)`` or ``r.item()`` waits for it).

    Raises
    ------
    TypeError
        `a`, `where` or `out` is not an array of a supported dtype; `dtype` is not a float dtype; `mean` given.
    ValueError
        Both `ddof` and `correction`; an unknown `variant`, or one not marked *axes*; a duplicate axis; `out`
        of the wrong shape or read-only; `where` not broadcastable to `a`.
    %(raises_axis_cuda)s

    Warns
    -----
    RuntimeWarning
        ${warns}

    See Also
    --------
    numpy.${name} : The reference semantics.
    ${other}

    Notes
    -----
    One read of `a`: each result folds shifted sums (count, a pivot element, the sums of the elements' and
    their squares' differences from it) in float64 and merges partial results onto one pivot, so a large
    common offset costs no digit.  ${nan_note}

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> x = np.array([[1.0, 2.0, 3.0, 4.0], [1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4]])
${examples}"""


_PLAIN = dict(warns='"Degrees of freedom <= 0 for slice" when a result takes no more than `ddof` elements (its value '
                    "is\n        NaN or inf, as NumPy's).  A device `where` mask is not counted for it.",
              nan_note="A slice holding an inf or a NaN gives NaN, as NumPy's.")
_NAN = dict(warns='"Degrees of freedom <= 0 for slice." when a result has no more than `ddof` numbers (its value is '
                  "NaN,\n        as NumPy's); looked for in host inputs only (a device input's NaNs are not counted).",
            nan_note="A NaN element is skipped as it is read (a complex one: either part NaN); a slice\n    holding an "
                     "inf gives NaN, and so does one with no more than `ddof` numbers, as NumPy's.  Integer and\n"
                     "    bool inputs hold no NaN: they run the plain function.")


@document_variants("reduce", "var", _TEMPLATE, name="var", other="std, nanvar, mean", what="variance", **_PLAIN,
                   summary="Variance over the given axes, as ``numpy.var``.", examples="""\
    >>> gpureduce.var(x, axis=1)
    array([1.25, 1.25])
    >>> gpureduce.var(x[0], ddof=1)
    np.float64(1.6666666666666667)
""")
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue, variant: str = "auto"):
    return unwrapped_reduce("var", a, axis, dtype, out, keepdims, where=where, variant=variant,
                            ddof=variance_ddof("var", ddof, correction, mean))


@document_variants("reduce", "std", _TEMPLATE, name="std", other="var, nanstd, mean", what="standard deviation",
                   **_PLAIN,
                   summary="Standard deviation over the given axes, as ``numpy.std``.", examples="""\
    >>> gpureduce.std(x, axis=1)
    array([1.11803399, 1.11803399])
    >>> gpureduce.std(x[0], ddof=1)
    np.float64(1.2909944487358056)
""")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue, variant: str = "auto"):
    return unwrapped_reduce("std", a, axis, dtype, out, keepdims, where=where, variant=variant,
                            ddof=variance_ddof("std", ddof, correction, mean))


@document_variants("reduce", "nanvar", _TEMPLATE, name="nanvar", other="var, nanstd, nanmean", what="variance", **_NAN,
                   summary="Variance over the given axes, ignoring NaN, as ``numpy.nanvar``.", examples="""\
    >>> gpureduce.nanvar(np.array([1.0, np.nan, 3.0]))
    np.float64(1.0)
    >>> gpureduce.nanvar(x, axis=1)
    array([1.25, 1.25])
""")
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
           correction=_NoValue, variant: str = "auto"):
    return unwrapped_reduce("nanvar", a, axis, dtype, out, keepdims, where=where, variant=variant,
                            ddof=variance_ddof("nanvar", ddof, correction, mean))


@document_variants("reduce", "nanstd", _TEMPLATE, name="nanstd", other="std, nanvar, nanmean",
                   what="standard deviation", **_NAN,
                   summary="Standard deviation over the given axes, ignoring NaN, as ``numpy.nanstd``.", examples="""\
    >>> gpureduce.nanstd(np.array([1.0, np.nan, 3.0]))
    np.float64(1.0)
    >>> gpureduce.nanstd(x, axis=1)
    array([1.11803399, 1.11803399])
""")
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
           correction=_NoValue, variant: str = "auto"):
    return unwrapped_reduce("nanstd", a, axis, dtype, out, keepdims, where=where, variant=variant,
                            ddof=variance_ddof("nanstd", ddof, correction, mean))
