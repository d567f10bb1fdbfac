"""Segmented reductions and scans: many ranges of one axis reduced or scanned in one launch (issue 40).

``reduceat(op, a, indices)`` is NumPy's ``ufunc.reduceat`` and ``segmented_reduce(op, a, starts, stops)`` the
``ufunc.segmented_reduce`` of NumPy's PR 32243, for every reduction operator of one array, named as
``gpureduce.reduce`` names them ("sum" for ``numpy.add``, "max" for ``numpy.maximum``, "mean", "argmax", ...).
``segmented_scan(op, a, starts, stops)`` scans each range alone, as ``gpureduce.scan`` scans a whole axis.
Each call is one plan (gpureduce/_planning/ranges.py) run by the one runner (src/run.c).
"""
from __future__ import annotations

from ._planning.numpy_rules import NoValue as _NoValue
from ._planning.operands import is_dask_array
from ._planning.ranges import ALGORITHM_DOCS, ALGORITHMS, OPS, SCAN_ALGORITHM_DOCS, reduce_ranges, scan_ranges
from ._registry import SCAN_OPS
from ._streams import takes_stream

__all__ = ["reduceat", "segmented_reduce", "segmented_scan", "segmented_variants"]

_OPERATORS = ", ".join(f'"{op}"' for op in OPS)
# the docstrings' shared parts
_OP_AND_A = f"""    op : str
        The reduction, named as ``gpureduce.reduce`` names it: {_OPERATORS}.
    a : array_like or device array
        The input: a NumPy array (or anything ``numpy.asarray`` takes), or a device array read in place (CuPy,
        PyTorch, JAX, anything with DLPack or ``__cuda_array_interface__``)."""
_STARTS_STOPS = """    starts : array_like of ints or device array
        The ranges' first positions, 1-d.
    stops : array_like of ints or device array
        The ranges' ends (excluded), 1-d, as long as `starts`; on the host if `starts` is, on the device if it is.
    axis : int or None, optional
        The axis of the ranges (default 0; negative counts from the end; None for a 1-d `a`)."""
_ERRORS = """    numpy.exceptions.AxisError
        `axis` is out of range.
    gpureduce.CudaError
        The device failed."""
_VARIANTS = "\n".join(f"        * ``{name}``: {doc}" for name, doc in ALGORITHM_DOCS.items())
_SCAN_VARIANTS = "\n".join(f"        * ``{name}``: {doc}" for name, doc in SCAN_ALGORITHM_DOCS.items())
_SCAN_OPERATORS = ", ".join(f'"{op}"' for op in SCAN_OPS)


def _refuse_dask(a, fn):
    if is_dask_array(a):
        raise TypeError(f"{fn} of a Dask array is not supported: its ranges cross chunks; call it on each "
                        "computed block, or on a NumPy or device array")


def reduceat(op: str, a, indices, axis=0, dtype=None, out=None, *, variant: str = "auto"):
    """Reduce `a` over ranges of one axis given by their starting indices, as ``numpy.<ufunc>.reduceat``.

    ``reduceat("sum", a, indices)`` is ``numpy.add.reduceat(a, indices)``: for each ``i``, the reduction of
    ``a[indices[i]:indices[i + 1]]`` along `axis` (the last range runs to the axis' end), or the single element
    ``a[indices[i]]`` where ``indices[i] >= indices[i + 1]``.  Every reduction operator of one array is
    available, not only the ufuncs': mean, var, argmax (its positions count from each range's start) and the nan
    functions too.

    Parameters
    ----------
{op_and_a}
    indices : array_like of ints or device array
        The ranges' starts, 1-d, each in ``[0, a.shape[axis])`` (NumPy's rule: no negative index).  Device indices
        are checked by their smallest and largest value (two small reductions and one wait).
    axis : int or None, optional
        The axis of the ranges (default 0; negative counts from the end; None for a 1-d `a`).
    dtype : dtype, optional
        The result and accumulation dtype, as for the operator's own function.
    out : numpy.ndarray or device array, optional
        Where to write the result: `a`'s shape with ``len(indices)`` at `axis`.
    variant : str, keyword-only
        The algorithm (see Notes); ``"auto"``, the default, picks by the ranges' mean length.

    Returns
    -------
    numpy.ndarray, device array or `out`
        `a`'s shape with ``len(indices)`` in place of ``a.shape[axis]``, the operator's result dtype; for a
        device `a` an array of `a`'s kind, computed on its stream.

    Raises
    ------
    IndexError
        An index is negative or not below ``a.shape[axis]`` (NumPy's words).
    TypeError
        `a` is 0-d, `indices` are not integers, `dtype` is not one the operator takes, or `a` is a Dask array.
    ValueError
        An unknown operator or variant, `indices` not 1-d, or `axis` None for an `a` of several dimensions.
{errors}

    See Also
    --------
    segmented_reduce : Ranges given by starts and stops, empty ones allowed.
    reduce : The whole axis at once.
    numpy.ufunc.reduceat : NumPy's form, which names the operator by its ufunc.

    Notes
    -----
    The variants, each deterministic (the same bits on every run; floating results of different variants may
    differ in their last bits, their folds being ordered differently):

{variants}

    Examples
    --------
    >>> import numpy as np, gpureduce
    >>> a = np.arange(8)
    >>> gpureduce.reduceat("sum", a, [0, 4, 1, 5])
    array([ 6,  4, 10, 18])
    >>> gpureduce.reduceat("max", np.arange(12.0).reshape(3, 4), [0, 2], axis=1)
    array([[ 1.,  3.],
           [ 5.,  7.],
           [ 9., 11.]])
    """
    _refuse_dask(a, "reduceat")
    return reduce_ranges("reduceat", op, a, (indices,), axis, dtype, out, variant=variant)


def segmented_reduce(op: str, a, starts, stops, axis=0, dtype=None, out=None, initial=_NoValue, *,
                     variant: str = "auto", ddof=None):
    """Reduce `a` over ranges ``[starts[i], stops[i])`` of one axis, as NumPy's ``ufunc.segmented_reduce``.

    ``segmented_reduce("sum", a, starts, stops)`` is ``numpy.add.segmented_reduce(a, starts, stops)`` of NumPy's
    PR 32243: result ``i`` is the reduction of ``a[starts[i]:stops[i]]`` along `axis`, with slice rules (a
    negative bound counts from the end, bounds are clipped to the axis, ``stop <= start`` is an empty range).
    Ranges may overlap, leave elements out and come in any order.  CSR offsets ``o`` are ``starts=o[:-1],
    stops=o[1:]``.  An empty range gives `initial`, else the operator's identity (0 for sum, NaN for mean); with
    host bounds, an operator without one (min, max, argmax, ...) refuses an empty range unless `initial` is given
    (min and max), as NumPy; device bounds are not read on the host (no wait), so there an empty range gives -inf
    for max of floats (the lowest value of an integer dtype), +inf for min, -1 for argmin and argmax.

    Parameters
    ----------
{op_and_a}
{starts_stops}
    dtype : dtype, optional
        The result and accumulation dtype, as for the operator's own function.
    out : numpy.ndarray or device array, optional
        Where to write the result: `a`'s shape with ``len(starts)`` at `axis`.
    initial : scalar, optional
        A starting value folded into every range (sum, prod, min, max and their nan forms).  ``initial=None``
        refuses empty ranges for every operator, as NumPy.
    variant : str, keyword-only
        The algorithm (see Notes); ``"auto"``, the default, picks by the ranges' mean length.
    ddof : int or float, keyword-only, optional
        The variances' delta degrees of freedom (var, std and their nan forms).

    Returns
    -------
    numpy.ndarray, device array or `out`
        `a`'s shape with ``len(starts)`` in place of ``a.shape[axis]``, the operator's result dtype; for a device
        `a` an array of `a`'s kind, computed on its stream.

    Raises
    ------
    TypeError
        `a` is 0-d, the bounds are not integers, a keyword the operator does not take, or a Dask array.
    ValueError
        An unknown operator or variant, bounds not 1-d or of different lengths, an empty range without an
        identity or `initial` (NumPy's words), or `axis` None for an `a` of several dimensions.
{errors}

    See Also
    --------
    reduceat : Ranges given by their starts alone, NumPy's older form.
    reduce : The whole axis at once.

    Notes
    -----
    Empty ranges are found from host bounds, as NumPy finds them; device bounds are never waited for.  The
    variants, each deterministic (the same bits on every run; floating results of different variants may differ
    in their last bits, their folds being ordered differently):

{variants}

    Examples
    --------
    >>> import numpy as np, gpureduce
    >>> a = np.arange(8)
    >>> gpureduce.segmented_reduce("sum", a, [0, 2], [5, 4])
    array([10,  5])
    >>> gpureduce.segmented_reduce("max", a, [0, 4], [0, 8], initial=-1)
    array([-1,  7])
    >>> offsets = np.array([0, 3, 8])  # CSR: two ranges
    >>> gpureduce.segmented_reduce("argmax", np.array([3, 1, 4, 1, 5, 9, 2, 6]), offsets[:-1], offsets[1:])
    array([2, 2])
    """
    _refuse_dask(a, "segmented_reduce")
    return reduce_ranges("segmented_reduce", op, a, (starts, stops), axis, dtype, out, initial, variant, ddof)


def segmented_scan(op: str, a, starts, stops, axis=0, dtype=None, out=None, *, exclusive: bool = False,
                   variant: str = "auto"):
    """Scan `a` within each range ``[starts[i], stops[i])`` of one axis, restarting at every range's start.

    ``segmented_scan("sum", a, offsets[:-1], offsets[1:])`` is the cumulative sum of each CSR row of a ragged
    array laid out in `a`: the result has `a`'s shape, and each range's positions hold ``numpy.cumsum`` of that
    range alone (``exclusive=True``: the operator's identity at the range's start, then the sum of the elements
    before each one).  Bounds follow slice rules, as ``segmented_reduce``'s (a negative bound counts from the end,
    bounds are clipped, ``stop <= start`` is empty); ranges may come in any order and leave positions out, but
    must not overlap.  Positions in no range hold the operator's identity (0 for sum, 1 for prod, -inf or the
    dtype's lowest for max, +inf or its highest for min, -inf for logsumexp).

    Parameters
    ----------
    op : str
        The scan, named as ``gpureduce.scan`` names it: {scan_operators} ("sum" is cumsum, "max" cummax, ...).
    a : array_like or device array
        The input: a NumPy array (or anything ``numpy.asarray`` takes), or a device array read in place (CuPy,
        PyTorch, JAX, anything with DLPack or ``__cuda_array_interface__``).
{starts_stops}
    dtype : dtype, optional
        The result and accumulation dtype, as for ``gpureduce.scan`` (``numpy.cumsum``'s rules by default: int32
        sums in int64, bool in int64).
    out : numpy.ndarray or device array, optional
        Where to write the result: `a`'s shape.
    exclusive : bool, keyword-only
        Each position gets the scan of the elements before it in its range (the identity at the range's start).
    variant : str, keyword-only
        The algorithm (see Notes); ``"auto"``, the default, picks by the ranges' mean length.

    Returns
    -------
    numpy.ndarray, device array or `out`
        `a`'s shape, the scan's result dtype; for a device `a` an array of `a`'s kind, computed on its stream.

    Raises
    ------
    TypeError
        `a` is 0-d or a masked array, the bounds are not integers, or `exclusive` is not a bool.
    ValueError
        An unknown operator or variant, bounds not 1-d or of different lengths, two ranges that overlap, or `axis`
        None for an `a` of several dimensions.
{errors}

    See Also
    --------
    segmented_reduce : One value per range.
    groupby_scan : The running scan of each group of elements that share an id.
    scan : The whole axis at once.

    Notes
    -----
    The ranges are checked before anything runs, in one pass over the bounds where each starts at or after the
    one before it stops (CSR offsets; for device bounds a small kernel, then one wait for three numbers: whether
    they are in order, how many positions they cover, the longest), else sorted by their start in the bounds' own
    library.  That also gives ``auto`` their mean and longest length and tells whether any position needs the
    identity first.  The variants, each deterministic (the same bits on every run):

{scan_variants}

    Examples
    --------
    >>> import numpy as np, gpureduce
    >>> a = np.arange(1, 9)
    >>> offsets = np.array([0, 3, 8])
    >>> gpureduce.segmented_scan("sum", a, offsets[:-1], offsets[1:])
    array([ 1,  3,  6,  4,  9, 15, 22, 30])
    >>> x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    >>> gpureduce.segmented_scan("max", x, [5, 0], [8, 3])  # positions 3 and 4 in no range
    array([  3.,   3.,   4., -inf, -inf,   9.,   9.,   9.])
    """
    _refuse_dask(a, "segmented_scan")
    return scan_ranges(op, a, starts, stops, axis, dtype, out, exclusive, variant)


def segmented_variants():
    """The algorithms of the segmented reductions: the names their ``variant=`` takes (the segmented scans take
    those their docstring lists: all but "lanes").

    Returns
    -------
    dict
        {name: one line on what it does and when "auto" picks it}, in declaration order
        (cuda/abi/ranges.def).

    Examples
    --------
    >>> import gpureduce
    >>> list(gpureduce.segmented_variants())
    ['auto', 'thread', 'lanes', 'warp', 'block']
    """
    return {name: ALGORITHM_DOCS[name] for name in ALGORITHMS}


for _f in (reduceat, segmented_reduce, segmented_scan):
    if _f.__doc__:  # None under python -OO
        _f.__doc__ = (_f.__doc__.replace("{op_and_a}", _OP_AND_A).replace("{errors}", _ERRORS)
                      .replace("{variants}", _VARIANTS).replace("{starts_stops}", _STARTS_STOPS)
                      .replace("{scan_variants}", _SCAN_VARIANTS)
                      .replace("{scan_operators}", _SCAN_OPERATORS))
# stream= as every public function takes it (gpureduce/_streams.py): the bounds' cast, the check of device
# indices and the reduction all run on it
reduceat = takes_stream(reduceat, "segmented")
segmented_reduce = takes_stream(segmented_reduce, "segmented")
segmented_scan = takes_stream(segmented_scan, "segmented_scan")
