"""Grouped reductions and scans: the elements that share a group id reduced or scanned together, many groups in
one call (issue 40).

``groupby_reduce(op, a, group_ids, num_groups)`` is JAX's ``jax.ops.segment_<op>(a, group_ids, num_groups)`` and
NumPy's ``bincount(group_ids, weights=a, minlength=num_groups)`` / ``add.at`` for every reduction operator of one
array, along any axis, deterministic whatever the order of the ids (gpureduce/_planning/groups.py).  Ranges of
positions are the segmented reductions' (gpureduce/segmented.py); the name follows flox's ``groupby_reduce``, the
group-by of xarray.
"""
from __future__ import annotations

from ._planning.groups import reduce_groups, scan_groups
from ._planning.ranges import ALGORITHMS, OPS, SCAN_ALGORITHM_DOCS
from ._registry import SCAN_OPS
from ._streams import takes_stream

__all__ = ["groupby_reduce", "groupby_scan"]

_OPERATORS = ", ".join(f'"{op}"' for op in OPS)


def groupby_reduce(op: str, a, group_ids, num_groups=None, axis=0, dtype=None, *, ids_sorted: bool = False,
                   variant: str = "auto", ddof=None):
    """Reduce the elements of `a` that share a group id, for every group at once.

    Result ``g`` is the reduction of the elements of `a` along `axis` whose id is ``g``, in their order in `a`:
    ``groupby_reduce("sum", a, ids, k)`` is ``jax.ops.segment_sum(a, ids, k)`` and, for a 1-d `a`,
    ``numpy.bincount(ids, weights=a, minlength=k)`` (with `a`'s dtype rules, not bincount's float64).  A group
    without elements gives the operator's identity, as JAX's: 0 for sum, -inf (the dtype's lowest) for max, +inf
    for min, NaN for mean, -1 for argmin and argmax.  The bits do not depend on the order of the ids or on timing.
    Sums, means, min and max are scattered, ids in any order, into integer accumulators, one to three atomics an
    element and no sort (variant ``"scatter"``): the sums and means of floating dtypes (and their nan forms) are
    then each group's exact sum rounded once (a mean: divided by its count, then rounded once), so their bits depend
    on nothing but which elements each group holds; integer and bool sums wrap as NumPy's; min and max (and nanmin,
    nanmax) keep each group's extreme as an order-preserving integer key.  Other operators, and ``ids_sorted=True``,
    take the sort path: the ids sorted stably (in the input's library; not where they are sorted) and each group
    folded in a fixed order by the segmented reduction, which reads each group once.

    Parameters
    ----------
    op : str
        The reduction, named as ``gpureduce.reduce`` names it: {operators}.
    a : numpy.ndarray or device array
        The input: a NumPy array, or a CuPy array, PyTorch tensor or JAX array on the GPU (the ids are sorted and
        `a` gathered in its own library, on its current stream).
    group_ids : array_like of ints or device array
        One id per element along `axis`, 1-d, each in ``[0, num_groups)``; in any order.
    num_groups : int, optional
        How many groups (the result's length along `axis`); default: the largest id plus one (for device ids, one
        wait for that value, as JAX's ``segment_sum`` computes it concretely).
    axis : int, optional
        The axis the ids label (default 0; negative counts from the end).
    dtype : dtype, optional
        The result and accumulation dtype, as for the operator's own function.
    ids_sorted : bool, keyword-only
        The ids are ascending: no sort, no gather (checked: an unsorted list is refused).
    variant : str, keyword-only
        ``"auto"`` (the default): the scatter where it takes the call (unless ``ids_sorted=True``), else the sort
        path with the algorithm picked by the groups' mean size.  ``"scatter"``: the scatter (floating sums, means,
        nansum and nanmean into the input's dtype, integer and bool sums with ``dtype=None``, min, max, nanmin and
        nanmax into the input's dtype; at most 64 MiB of accumulators, 272 bytes a float32 sum's group, 24 an
        extreme's; anything else a ValueError).  Or the sort path with the segmented reduction's algorithm named:
        {algorithms}.
    ddof : int or float, keyword-only, optional
        The variances' delta degrees of freedom (var, std and their nan forms).

    Returns
    -------
    numpy.ndarray or device array
        `a`'s shape with `num_groups` in place of ``a.shape[axis]``, the operator's result dtype, an array of
        `a`'s kind; argmin and argmax give positions along `axis` in `a` itself (-1 for an empty group).

    Raises
    ------
    IndexError
        An id is negative or not below `num_groups` (with `num_groups` given and CuPy or PyTorch ids that the
        scatter takes, the kernels note such ids as they read them and the call raises after them).
    TypeError
        `a` is not one of the accepted kinds or is 0-d, `group_ids` are not integers, `num_groups` is not an int.
    ValueError
        An unknown operator or variant, `group_ids` not 1-d or not one per element, a negative `num_groups`,
        ``ids_sorted=True`` with ids out of order, or ``variant="scatter"`` for a call it does not take.
    numpy.exceptions.AxisError
        `axis` is out of range.
    gpureduce.CudaError
        The device failed.

    See Also
    --------
    segmented_reduce : Groups given as ranges of positions (starts and stops).
    reduce : The whole axis at once.

    Notes
    -----
    The ids, the sort, the gather and the bounds of each group (a binary search of the sorted ids) stay in the
    input's library: for device inputs nothing comes to the host but the ids' smallest and largest value (on the
    sort path also whether they ascend: the checks, small reductions in the input's library brought home in one
    wait), the largest also serving ``num_groups=None`` (so a call cannot be captured in a CUDA graph); a scatter
    with `num_groups` given (CuPy or PyTorch ids) brings home instead the two notes its kernels keep of the ids
    out of range, after the call, with no pass over the ids of its own.  On the sort
    path the sort costs more than the reduction: sorted ids (``ids_sorted=True``) save it.  The scatter keeps its
    accumulators in shared memory while a block's fit 110 KB (a float32 sum's: up to 414 groups), else in global
    memory (L2 atomics).

    Examples
    --------
    >>> import numpy as np, gpureduce
    >>> x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> gpureduce.groupby_reduce("sum", x, [2, 0, 2, 1, 0], 4)
    array([7., 4., 4., 0.])
    >>> gpureduce.groupby_reduce("argmax", x, [2, 0, 2, 1, 0])
    array([4, 3, 2])
    """
    return reduce_groups(op, a, group_ids, num_groups, axis, dtype, ids_sorted, variant, ddof)


if groupby_reduce.__doc__:  # None under python -OO
    groupby_reduce.__doc__ = groupby_reduce.__doc__.replace("{operators}", _OPERATORS).replace(
        "{algorithms}", ", ".join(f'"{name}"' for name in ALGORITHMS))
groupby_reduce = takes_stream(groupby_reduce, "grouped")


def groupby_scan(op: str, a, group_ids, axis=0, dtype=None, *, exclusive: bool = False, ids_sorted: bool = False,
                 variant: str = "auto"):
    """Scan each group of the elements of `a` that share a group id, in their order in `a`.

    Result ``i`` (along `axis`) is the scan of the elements ``j <= i`` whose id is ``group_ids[i]`` (``j < i``
    with ``exclusive=True``, the identity for a group's first element): ``groupby_scan("sum", a, ids)`` is
    pandas' ``Series(a).groupby(ids).cumsum()`` and flox's ``groupby_scan``; with sorted ids it is a scan that
    restarts at every new id (CUB's ``InclusiveSumByKey``, Thrust's ``inclusive_scan_by_key``).  The ids may be any
    integers, in any order; the bits never depend on that order or on timing (a stable sort of the ids in the
    input's library, a segmented scan of each run of equal ids, and the results put back in place).

    Parameters
    ----------
    op : str
        The scan, named as ``gpureduce.scan`` names it: {operators}.
    a : numpy.ndarray or device array
        The input: a NumPy array, or a CuPy array, PyTorch tensor or JAX array on the GPU.
    group_ids : array_like of ints or device array
        One id per element along `axis`, 1-d.
    axis : int, optional
        The axis the ids label (default 0; negative counts from the end).
    dtype : dtype, optional
        The result and accumulation dtype, as for ``gpureduce.scan``.
    exclusive : bool, keyword-only
        Each element gets the scan of the elements before it in its group.
    ids_sorted : bool, keyword-only
        The ids are ascending: no sort, no gather, no scatter (checked: an unsorted list is refused).
    variant : str, keyword-only
        The segmented scan's algorithm ({algorithms}); ``"auto"``, the default, picks by the groups' mean size.

    Returns
    -------
    numpy.ndarray or device array
        `a`'s shape, the scan's result dtype, an array of `a`'s kind.

    Raises
    ------
    TypeError
        `a` is not one of the accepted kinds or is 0-d, `group_ids` are not integers.
    ValueError
        An unknown operator or variant, `group_ids` not 1-d or not one per element, or ``ids_sorted=True`` with
        ids out of order.
    numpy.exceptions.AxisError
        `axis` is out of range.
    gpureduce.CudaError
        The device failed.

    See Also
    --------
    groupby_reduce : One value per group.
    segmented_scan : Ranges given as positions (starts and stops).

    Notes
    -----
    The number of distinct ids sizes the ranges, so device ids are waited for once (twice with
    ``ids_sorted=True``, whose check is a second wait).

    Examples
    --------
    >>> import numpy as np, gpureduce
    >>> x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> gpureduce.groupby_scan("sum", x, [2, 0, 2, 1, 0])
    array([1., 2., 4., 4., 7.])
    >>> gpureduce.groupby_scan("max", np.array([3.0, 1.0, 4.0, 1.0, 5.0]), [0, 0, 1, 1, 0], exclusive=True)
    array([-inf,   3., -inf,   4.,   3.])
    """
    return scan_groups(op, a, group_ids, axis, dtype, exclusive, ids_sorted, variant)


if groupby_scan.__doc__:  # None under python -OO
    groupby_scan.__doc__ = groupby_scan.__doc__.replace("{operators}", ", ".join(f'"{op}"' for op in SCAN_OPS)).replace(
        "{algorithms}", ", ".join(f'"{name}"' for name in SCAN_ALGORITHM_DOCS))
groupby_scan = takes_stream(groupby_scan, "grouped")
