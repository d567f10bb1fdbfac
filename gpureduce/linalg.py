"""numpy.linalg's reduction vector_norm, in one read of the input.

Every order is one operator whose kernels read ``ord`` as a parameter (cuda/primitives/reducers.cuh: NormReducer):
sums of |x|, of (x != 0) or of |x|^p, the largest or smallest |x|, or for ord 2 a sum of squares split by
magnitude and scaled (Blue's algorithm, as LAPACK's dnrm2), so the 2-norm of a float64 array neither overflows
nor underflows where the norm itself does not.  float64 inside for every input dtype, rounded once at the end.
"""
from __future__ import annotations

import numbers

from ._docs import document_variants
from .reductions import reduce

__all__ = ["vector_norm"]


def _order(ord):
    """ord as a float, with NumPy's ValueError for a string and a TypeError for what is not a real number."""
    if ord is None:
        return 2.0
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if not isinstance(ord, numbers.Real):
        raise TypeError(f"vector_norm(ord=...) must be a real number, inf or -inf (or None for 2); got "
                        f"{type(ord).__name__}")
    return float(ord)


@document_variants("reduce", "vector_norm")
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2, variant: str = "auto"):
    """Vector norm over the given axes, as ``numpy.linalg.vector_norm``.

    ``sum(abs(x)**ord)**(1/ord)`` over the reduced elements, and for the special orders: ``max(abs(x))``
    (``inf``), ``min(abs(x))`` (``-inf``), the count of nonzero elements (``0``).

    Parameters
    ----------
    x : array_like or device array
        %(a)s
    axis : None, int or tuple of ints, optional
        The axes to reduce, as vectors; None (default) reduces all of them, as the norm of ``x.ravel()``.
        Negative axes count from the end.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    ord : int, float, inf or -inf, optional
        The order (default 2; None is 2 as well): any real number, negative and fractional ones included.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic, numpy.ndarray or device array
        Real: `x`'s dtype for floating inputs, its real dtype for complex ones (complex64 gives float32), float64
        for bool and integer inputs, as NumPy's.  A 0-d result is a NumPy scalar; an array result is a
        ``numpy.ndarray`` for a host `x` and a device array of `x`'s kind for a device `x`.

    Raises
    ------
    ValueError
        `ord` is a string (NumPy's "Invalid norm order"); ``ord=-inf`` over an empty axis (NumPy's
        "zero-size array to reduction operation minimum which has no identity"); an unknown `variant`, or one
        not marked *axes*; a duplicate axis.
    TypeError
        `ord` is not a real number; `axis` is neither None, an int nor a tuple of ints; `x` is not an array of
        a supported dtype.
    numpy.exceptions.AxisError
        An axis out of range for ``x.ndim``.
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.linalg.vector_norm : The reference semantics.
    sum, max, count_nonzero : The orders 1, inf and 0 are these of ``abs(x)``.

    Notes
    -----
    One read of `x`, accumulated in float64 whatever its dtype and rounded once to the result dtype (NumPy sums
    a float32 input in float32): a float32 2-norm is the correctly rounded one up to float64's error, and a
    float64 2-norm overflows or underflows only where the norm does (NumPy's sum of squares overflows for
    elements above about 1e154).  A NaN gives NaN; an inf gives inf (a NaN with ``ord=0`` counts as nonzero).
    An empty axis gives 0 (inf for a negative `ord`, as NumPy's 0 ** (1/ord)).  A Dask array gives a lazy Dask
    array: the norm of its chunks' norms (``gpureduce.dask.vector_norm``).

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.vector_norm(np.array([3.0, 4.0]))
    np.float64(5.0)
    >>> gpureduce.vector_norm(np.array([[1.0, -2.0], [3.0, 0.0]]), ord=1, axis=1)
    array([3., 3.])
    >>> gpureduce.vector_norm(np.array([1e300, 1e300]))  # NumPy's sum of squares overflows: inf
    np.float64(1.4142135623730952e+300)
    """
    _check_axis(axis)
    return reduce("vector_norm", x, axis, None, None, keepdims, variant=variant, ord=_order(ord))


def _check_axis(axis):
    if not (axis is None or isinstance(axis, tuple) or hasattr(axis, "__index__")):  # NumPy refuses a list too
        raise TypeError("'axis' must be None, an integer or a tuple of integers")
