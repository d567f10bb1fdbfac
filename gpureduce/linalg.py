"""numpy.linalg's reduction vector_norm, in one read of the input, and NumPy's vector products dot and vdot, in one
read of each operand.

Every order is one operator whose kernels read ``ord`` as a parameter (cuda/primitives/reducers.cuh: NormReducer):
sums of |x|, of (x != 0) or of |x|^p, the largest or smallest |x|, or for ord 2 a sum of squares split by
magnitude and scaled (Blue's algorithm, as LAPACK's dnrm2), so the 2-norm of a float64 array neither overflows
nor underflows where the norm itself does not.  float64 inside for every input dtype, rounded once at the end.
"""
from __future__ import annotations

from ._docs import document_variants
from ._planning.operands import is_dask_array
from ._planning.exact_dot import exact_dot
from ._planning.numpy_rules import check_norm_axis, norm_order
from ._planning.plan import is_exact_variant, prepare_dot, run
from .reductions import unwrapped_reduce

__all__ = ["vector_norm", "dot", "vdot"]


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
        for bool and integer inputs, as NumPy's.  A ``numpy.ndarray``, or a NumPy scalar for 0-d, for a host `x`,
        complete on return; for a device `x` an array of `x`'s kind, 0-d results too (a CuPy array, a tensor, a JAX
        array, else a ``gpureduce.DeviceArray``), computed asynchronously on its stream (``float(r)`` or
        ``r.item()`` waits for it).

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
    check_norm_axis(axis)
    return unwrapped_reduce("vector_norm", x, axis, None, None, keepdims, variant=variant, ord=norm_order(ord))


@document_variants("reduce", "dot")
def dot(a, b, out=None, *, variant: str = "auto"):
    """Dot product of two vectors, as ``numpy.dot`` of two 1-d arrays: ``sum(a * b)``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s  A vector (1-d).
    b : array_like or device array
        A vector of `a`'s length, on the same side as `a` (host or device).
    out : numpy.ndarray or device array, optional
        A 0-d array of the result dtype to write the result into, as NumPy's.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic or `out`
        ``numpy.result_type(a, b)``: `a`'s dtype when both share it (int8 stays int8, wrapping; bool gives
        bool), as NumPy's; `out` when given.

    Raises
    ------
    ValueError
        The vectors differ in length (NumPy's "shapes (3,) and (4,) not aligned"); `a` or `b` not 1-d (matrix
        products are not reductions: use numpy.dot, cupy.dot or torch.matmul); `out` that is not a 0-d array of
        the result dtype (NumPy's "output array is not acceptable"); an unknown `variant`, or one not marked
        *axes* but "exact" (see Notes).
    TypeError
        An operand is not an array of a supported dtype, or their common dtype is not one; one operand on the
        host and the other on the device.
    numpy.exceptions.AxisError
        Never: dot takes no axis (listed as every reduction lists it).
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.dot : The reference semantics.
    vdot : `a` conjugated, for arrays of any shape read as vectors.

    Notes
    -----
    One read of each operand.  Both are cast to NumPy's common dtype (``numpy.result_type(a, b)``) first, a copy
    only where a dtype differs, and the products are summed in that dtype's accumulator: float16 and bfloat16 in
    float32, integers with wrap-around (NumPy adds them in a wider type and truncates once: the same value), bool as
    "some pair is True and True".  Floating-point sums are formed in a tree, not in BLAS's order: they differ
    from NumPy's by rounding, about ``eps * log2(n) * sum(abs(a * b))``, and are bitwise the same on every run.
    Host operands are copied to the device whole.  The result is a NumPy scalar for host operands, a 0-d array of
    `a`'s kind for device ones, computed asynchronously (``float(r)`` waits for it).

    ``variant="exact"``: the exact dot product rounded once to nearest-even (each part of a complex one), the
    same bits whatever the order of the elements: the inputs' library (NumPy, CuPy, PyTorch, JAX) forms float64
    terms whose exact sum is the dot product (float16, bfloat16 and float32 products are float64 numbers; a
    float64 product is four products of the factors' 26-bit halves, or, past 2^995 or below 2^-969, the pairs are
    summed in rationals on the host), summed by the exact sum; where that sum rounded to float64 is a midpoint of
    a narrower result dtype, a second exact sum gives the side.  The rounding is decided on the host, so a
    device call waits for its sums.  Integers and bool run auto (exact in any order).

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.dot(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    np.float64(32.0)
    >>> gpureduce.dot(np.array([1j, 2]), np.array([1j, 1]))
    np.complex128(1+0j)
    """
    return _run_dot(a, b, out, conj=False, flatten=False, variant=variant)


@document_variants("reduce", "dot")
def vdot(a, b, /, *, variant: str = "auto"):
    """Dot product of two arrays read as vectors, `a` conjugated, as ``numpy.vdot``: ``sum(conj(a) * b)``.

    Parameters
    ----------
    a : array_like or device array
        %(a)s  Any shape: read in C order, as ``a.ravel()``; complex elements are conjugated.
    b : array_like or device array
        An array of `a`'s size (any shape, read in C order), on the same side as `a` (host or device).
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    numpy.generic
        ``numpy.result_type(a, b)``, as NumPy's.

    Raises
    ------
    ValueError
        The sizes differ (NumPy's "cannot reshape array of size 4 into shape (3,)"); an unknown `variant`, or
        one not marked *axes* but "exact".
    TypeError
        An operand is not an array of a supported dtype, or their common dtype is not one; one operand on the
        host and the other on the device.
    numpy.exceptions.AxisError
        Never: vdot takes no axis (listed as every reduction lists it).
    gpureduce.CudaError
        No CUDA device or driver, or a CUDA call failed.

    See Also
    --------
    numpy.vdot : The reference semantics.
    dot : Without the conjugation, for vectors.

    Notes
    -----
    dot's kernels with the first operand conjugated (see `dot` for dtypes, accumulation, rounding and
    ``variant="exact"``); an operand that is not C-contiguous is copied into C order first.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.vdot(np.array([1j, 2]), np.array([1j, 1]))
    np.complex128(3+0j)
    >>> gpureduce.vdot(np.arange(4.0).reshape(2, 2), np.ones(4))
    np.float64(6.0)
    """
    return _run_dot(a, b, None, conj=True, flatten=True, variant=variant)


def _run_dot(a, b, out, *, conj, flatten, variant):
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if is_dask_array(a) or is_dask_array(b):  # the intake would compute it whole into host memory
        raise TypeError(f"gpureduce.{'vdot' if flatten else 'dot'} does not take Dask arrays yet; use "
                        "dask.array.dot, or compute the operands first")
    if is_exact_variant(variant):
        return exact_dot(a, b, out, conj=conj, flatten=flatten, variant=variant)
    return run(prepare_dot(a, b, conj=conj, flatten=flatten, out=out, variant=variant))
