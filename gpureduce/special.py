"""scipy.special's reduction logsumexp, in one read of the input.

Each result folds (m, s): the largest element so far and the sum of exp(x - m) over the elements, rescaled when
m grows (cuda/primitives/reducers.cuh: LogSumExpReducer): one exp per element, no overflow, one log at the end.
"""
from __future__ import annotations

from ._docs import document_variants
from ._planning import calls
from ._planning.operands import is_dask_array

__all__ = ["logsumexp"]


@document_variants("reduce", "logsumexp")
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, *, variant: str = "auto"):
    """Logarithm of the sum of exponentials over the given axes, as ``scipy.special.logsumexp``.

    ``log(sum(exp(a)))`` computed so that it neither overflows nor underflows where the result itself does not.

    Parameters
    ----------
    a : array_like or device array
        %(a)s  Real: bool, integer or floating (complex inputs are not supported).
    axis : None, int or tuple of ints, optional
        The axes to reduce; None (default) reduces all of them.  Negative axes count from the end.
    b : array_like or device array, optional
        SciPy's weights: ``log(sum(b * exp(a)))``, `b` broadcast with `a` (the result's shape is the broadcast
        one's, reduced), negative weights included; an element whose weight is 0 takes no part, as SciPy's.  A
        device `b` needs a device `a`.  Read once, in the same pass as `a`.
    keepdims : bool, optional
        Keep the reduced axes as axes of length 1.
    return_sign : bool, optional
        Also return the sign of the sum, as SciPy does: 1.0, 0.0 where the sum is 0 (every element -inf), -1.0
        for an empty slice (SciPy's value there), NaN where the result is NaN.
    variant : str, keyword-only
        The algorithm, by name (see Notes); ``"auto"`` (default) is the fastest.

    Returns
    -------
    res : numpy.generic, numpy.ndarray or device array
        `a`'s dtype for floating inputs (float16 and bfloat16 in float32, rounded once), float64 for bool and
        integer inputs; with `b`, the common dtype of `a` and `b`, at least floating, as SciPy's; -inf for an
        empty slice; NaN where the weighted sum is negative and `return_sign` is False, as SciPy's.  A
        ``numpy.ndarray``, or a NumPy scalar for 0-d, for a host `a`, complete on return; for a device `a` an array
        of `a`'s kind, 0-d results too (a CuPy array, a tensor, a JAX array, else a ``gpureduce.DeviceArray``),
        computed asynchronously on its stream (``float(r)`` or ``r.item()`` waits for it).
    sgn : same kind as `res`
        Only with ``return_sign=True``: the sign (see above).  Without `b`, for a device `a` it is computed on
        the host from `res` (the call waits for the device) and copied to `a`'s device by `a`'s own library;
        with `b` it is a second reduction on the device (`a` and `b` read again), and `res` is then
        ``log(abs(sum))``.

    Raises
    ------
    TypeError
        `a` or `b` is complex or not an array of a supported dtype; `b` on the device with `a` on the host.
    ValueError
        An unknown `variant`, or one not marked *axes*; a duplicate axis; `a` and `b` that do not broadcast.
    %(raises_axis_cuda)s

    See Also
    --------
    scipy.special.logsumexp : The reference semantics.
    logcumsumexp : The scan (PyTorch's torch.logcumsumexp).

    Notes
    -----
    One read of `a`: -inf elements add nothing, an inf gives inf, a NaN gives NaN.  Shapes are NumPy's: a 0-d
    `a` with ``keepdims=True`` gives a 0-d result and an empty `a` of any shape gives -inf (SciPy 1.17 gives
    shape (1,) for the first and raises IndexError for an empty `a` of 2 or more dimensions with axis=None).
    The sum of the rescaled exponentials errs by about ``log2(n) * eps`` relative, which the log turns into as
    much absolute error.

    Examples
    --------
    >>> import numpy as np
    >>> import gpureduce
    >>> gpureduce.logsumexp(np.zeros(2))  # log(1 + 1)
    np.float64(0.6931471805599453)
    >>> gpureduce.logsumexp(np.array([[1000.0, 1000.0], [-1000.0, -np.inf]]), axis=1)
    array([ 1000.69314718, -1000.        ])
    >>> gpureduce.logsumexp(np.array([-np.inf, -np.inf]), return_sign=True)
    (np.float64(-inf), np.float64(0.0))
    >>> gpureduce.logsumexp(np.zeros(2), b=np.array([2.0, 2.0]))  # log(2 + 2)
    np.float64(1.3862943611198906)
    """
    if is_dask_array(a):  # lazy, return_sign too (gpureduce/dask)
        from .dask import logsumexp as lazy_logsumexp
        return lazy_logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, variant=variant)
    return calls.logsumexp(a, axis, b, keepdims, return_sign, variant)
