"""Grouped reductions and scans (issue 40): the reduction of the elements that share a group id, JAX's
``segment_sum`` family and NumPy's ``bincount(ids, weights)`` / ``add.at`` forms, and the running scan within each
group (pandas' ``groupby().cumsum()``), deterministic whatever the order of the ids.

Two paths.  The scatter (groupby_reduce's sums, means, min and max, auto's choice unless ``ids_sorted=True``):
every element added to its group's integer accumulators on the device (RANGES_GROUP_IDS:
cuda/axis/group_scatter_kernels.cuh), no sort, the ids only checked for their range (one pass, one wait for device
ids).  The sort path (every other operator, and the scans): the ids sorted stably in the input's own library (NumPy,
CuPy, PyTorch, JAX: on its current stream, in its memory pool), the input gathered in that order along the axis, and
each group then one range of a segmented reduction (gpureduce/_planning/ranges.py) whose bounds are found by a
binary search of the sorted ids: the elements of a group are folded in their original order, in a fixed tree, so
the bits never depend on timing.
Sorted ids (``ids_sorted=True``, or ids found in order where their range is sought: groupby_reduce's always,
groupby_scan's from 2^16 ids) skip the sort and the gather; the sort runs on the ids shifted to 0 in their narrowest
dtype.  Ids are checked before anything runs: integers, 1-d, one per element along the axis, each in
``[0, num_groups)`` and ascending where ``ids_sorted=True`` says so (small reductions of the ids in their library,
brought to the host in one wait for device ids).
"""
from __future__ import annotations

import contextlib
import math
import operator

import numpy as np

from .. import _core
from .._registry import OPERATORS
from .libraries import library_of
from .numpy_rules import NoValue, operator_for_dtype
from .operands import default_dtype, dtype_code, intake, to_host
from .plan import ARG_OPS
from .ranges import ALGORITHMS, OPS, check_scan_arguments, reduce_ranges, scan_ranges

# groupby_reduce's own variant beside the segmented reductions' algorithms: every element added to its group's
# integer accumulators (cuda/axis/group_scatter_kernels.cuh), no sort; the sums and means of floats exact, min and
# max by an order-preserving key
SCATTER = "scatter"
VARIANTS = ALGORITHMS + (SCATTER,)
_OP_CODES = {op.name: op.code for op in OPERATORS}

def _num_groups(num_groups):
    try:
        k = operator.index(num_groups)
    except TypeError:
        raise TypeError(f"num_groups must be an int, not {type(num_groups).__name__}") from None
    if k < 0:
        raise ValueError(f"num_groups must be non-negative, got {k}")
    return k


def reduce_groups(op, a, group_ids, num_groups=None, axis=0, dtype=None, ids_sorted=False, variant="auto",
                  ddof=None):
    """``groupby_reduce``'s call: checks, the stable sort and gather in the input's library, the ranges' bounds,
    the segmented reduction, and for argmin/argmax the positions in the input.  With stream= (the call's stream),
    the library's own steps run there too."""
    if not hasattr(a, "shape") or isinstance(a, np.generic):  # a list, a NumPy scalar
        a = np.asarray(a)
    lib = library_of(a)
    handle = _core.call_stream.get(None)
    with contextlib.nullcontext() if handle is None else lib.on_stream(handle):
        return _reduce_groups(lib, op, a, group_ids, num_groups, axis, dtype, ids_sorted, variant, ddof)


def narrowest_id_dtype(count):
    """The narrowest signed integer dtype that holds ids 0 .. count - 1: CuPy's and PyTorch's stable sorts are
    radix sorts over every byte of the key, so int16 ids sort in a quarter of int64's passes."""
    for dt in (np.int16, np.int32):
        if count <= np.iinfo(dt).max + 1:
            return np.dtype(dt)
    return np.dtype(np.int64)


# From this many ids on, their range is worth its wait (device ids): below, a sort is cheaper than the wait.
NARROW_SORT_FROM = 1 << 16


def stable_order(lib, ids, bounds=None):
    """The stable order of 1-d integer `ids` in their library, or None where they are in order already.  The sort
    runs on the ids shifted to start at 0 and cast to their narrowest dtype (narrowest_id_dtype).  `bounds`:
    (smallest, largest, sorted?) when known; else found here from NARROW_SORT_FROM ids on (a wait for device
    ids), and below that the ids are sorted as they are."""
    if bounds is None and ids.shape[0] >= NARROW_SORT_FROM:
        bounds = lib.bounds(ids)
    if bounds is None:
        return lib.stable_order(ids)
    low, high, ordered = bounds
    if ordered:
        return None
    if high - low < 2 ** 31:
        narrow = narrowest_id_dtype(high - low + 1)
        if low != 0:  # shifted in 64 bits: exact, where a narrower dtype's difference could wrap
            wide = ids if _dtype_of(ids).itemsize == 8 else lib.astype(ids, np.int64)
            ids = lib.astype(wide - low, narrow)
        elif _dtype_of(ids).itemsize > narrow.itemsize:  # (already so: no copy)
            ids = lib.astype(ids, narrow)
    return lib.stable_order(ids)


def _check_ids(low, high, k):
    """IndexError naming an id out of [0, k), from the smallest and largest ids (the smallest first)."""
    bad = low if low < 0 else high if high >= k else None
    if bad is not None:
        raise IndexError(f"group id {bad} is out of range for {k} groups (ids must lie in [0, {k}))")


def _dtype_of(ids):
    """The NumPy dtype of an array of any of the libraries (a tensor's torch.int16 as int16)."""
    return np.dtype(str(ids.dtype).replace("torch.", ""))


def _ids_along(lib, fn, a, group_ids, axis):
    """(axis, n, ids): the axis the ids label, normalized, its length and the ids in the input's library, with the
    refusals every grouped function makes."""
    ndim = len(a.shape)
    if ndim == 0:
        raise TypeError(f"cannot {fn} a 0-d array")
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"axis must be an int, not {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    axis %= ndim
    n = a.shape[axis]
    ids = lib.ids(group_ids, a)
    kind = _dtype_of(ids).kind
    if kind not in "iu":
        raise TypeError(f"group_ids must be integers, not {ids.dtype}")
    if len(ids.shape) != 1 or ids.shape[0] != n:
        raise ValueError(f"group_ids must be 1-d with one id per element along axis {axis} ({n}), got shape "
                         f"{tuple(ids.shape)}")
    return axis, n, ids


def scatter_runs(op, a, axis, dtype, k):
    """Whether the scatter (variant "scatter") reduces `op` of `a` along `axis` into `k` groups: a sum, mean or nan
    form of a floating dtype into that dtype, a sum of integers or bools into NumPy's sum dtype, or min, max and
    their nan forms into the input's dtype, with at most the accumulators and the axis length the C side allows
    (_core.groups_scatter_runs; k = 0 asks the operator, dtypes and length only)."""
    x = intake(a)
    op = operator_for_dtype(op, x.dtype)
    if op not in _OP_CODES:
        return False
    try:
        rt = np.dtype(dtype) if dtype is not None else default_dtype(op, x.dtype)
        out_code = dtype_code(rt)
    except (TypeError, ValueError):
        return False
    kept = math.prod(e for i, e in enumerate(x.shape) if i != axis)
    return _core.groups_scatter_runs(_OP_CODES[op], x.code, out_code, x.shape[axis], kept * k)


def _reduce_groups(lib, op, a, group_ids, num_groups, axis, dtype, ids_sorted, variant, ddof):
    if not isinstance(op, str):
        raise TypeError(f"op must be an operator's name (a str), not {type(op).__name__}")
    if op not in OPS:
        raise ValueError(f"groupby_reduce: unknown operator {op!r}; operators are {', '.join(OPS)}")
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"groupby_reduce: unknown variant {variant!r}; its variants are {', '.join(VARIANTS)}")
    axis, n, ids = _ids_along(lib, "groupby_reduce", a, group_ids, axis)
    ndim = len(a.shape)
    k = None if num_groups is None else _num_groups(num_groups)
    # the scatter (integer accumulators, no sort: the same bits whatever the order of the ids) wherever it takes
    # the call, unless ids_sorted=True promises the order the segmented reduction reads each group in at once
    # (with num_groups given, its accumulators are asked now: a call past their limit reads the ids once, sorting)
    runs = scatter_runs(op, a, axis, dtype, 0 if k is None else k)
    scatter = variant == SCATTER or (variant == "auto" and not ids_sorted and runs)
    ordered = None  # whether the ids ascend: asked only where the sort path may run
    # with num_groups given, the scatter's kernels note the ids out of range as they read them (a pass over the
    # ids of its own took 165 us of a 2^26-element sum on the H200): the check follows the call.  Not where no
    # kernel reads every id (no groups, an empty input), nor for uint64 ids (read as int64)
    notes = lib.id_notes(ids) if scatter and runs and not ids_sorted and k and math.prod(a.shape) > 0 and \
        _dtype_of(ids) != np.uint64 else None
    if n and notes is None:
        if scatter and not ids_sorted:
            low, high = lib.id_range(ids)  # one pass, one wait for device ids
        else:
            low, high, ordered = lib.bounds(ids)  # waits for device ids
        if k is None:
            k = max(high + 1, 0)
        _check_ids(low, high, k)
        if ids_sorted and not ordered:
            raise ValueError("group_ids are not sorted (ascending): pass ids_sorted=False")
    elif k is None:
        k = 0
    if scatter and (runs if num_groups is not None else scatter_runs(op, a, axis, dtype, k)):
        if _dtype_of(ids) == np.uint64:  # in [0, k): int64 holds them (the kernels read int64 ids)
            ids = lib.astype(ids, np.int64)
        result = reduce_ranges("groupby_reduce", op, a, (ids,), axis, dtype, None, NoValue, "auto", ddof,
                               empty_gives_identity=True, groups=k, id_notes=notes)
        if notes is not None:  # one wait, as the check before the call was
            low, excess = (int(v) for v in to_host(notes))
            _check_ids(low, excess + k - 1, k)
        return result
    if variant == SCATTER:
        raise ValueError(f"groupby_reduce: variant {SCATTER!r} takes the sums and means of floating dtypes (their "
                         "nan forms too, into the input's dtype), the sums of integers and bools (dtype=None), and "
                         "min, max, nanmin and nanmax into the input's dtype, with at most 64 MiB of accumulators, "
                         f"not {op!r} of {getattr(a, 'dtype', '?')} with dtype={dtype!r} into {k} groups; use "
                         "variant='auto'")
    if n > 1 and ordered is None:  # too many groups to scatter: the sort path, which asks the order
        ordered = lib.bounds(ids)[2]
    order = None
    if n:
        ids = lib.astype(ids, narrowest_id_dtype(k))  # a radix sort's passes are the key's bytes, as the gather's
    if not ids_sorted and n > 1:
        order = stable_order(lib, ids, (0, max(k - 1, 0), ordered))  # None: in order already
    if order is not None:
        a = lib.take(a, order, axis)
        ids = lib.take(ids, order, 0)
    starts = lib.first_at_least(ids, k, right=False)
    stops = lib.first_at_least(ids, k, right=True)
    result = reduce_ranges("segmented_reduce", op, a, (starts, stops), axis, dtype, None, NoValue, variant, ddof,
                           empty_gives_identity=True)
    if op in ARG_OPS:  # positions in the input along the axis, not within the group
        result = lib.positions(result, starts, order, axis, ndim)
    return result


def scan_groups(op, a, group_ids, axis=0, dtype=None, exclusive=False, ids_sorted=False, variant="auto"):
    """``groupby_scan``'s call: checks, the stable sort and gather in the input's library, the runs of equal ids
    as ranges of a segmented scan, and the scattering back to the input's order."""
    if not hasattr(a, "shape") or isinstance(a, np.generic):  # a list, a NumPy scalar
        a = np.asarray(a)
    lib = library_of(a, "groupby_scan")
    handle = _core.call_stream.get(None)
    with contextlib.nullcontext() if handle is None else lib.on_stream(handle):
        return _scan_groups(lib, op, a, group_ids, axis, dtype, exclusive, ids_sorted, variant)


def _scan_groups(lib, op, a, group_ids, axis, dtype, exclusive, ids_sorted, variant):
    fn = "groupby_scan"
    check_scan_arguments(fn, op, variant, exclusive)
    axis, n, ids = _ids_along(lib, fn, a, group_ids, axis)
    if ids_sorted and n > 1 and not lib.bounds(ids)[2]:  # waits for device ids
        raise ValueError("group_ids are not sorted (ascending): pass ids_sorted=False")
    order = None
    if not ids_sorted and n > 1:
        order = stable_order(lib, ids)  # None: in order already
    if order is not None:
        a = lib.take(a, order, axis)
        ids = lib.take(ids, order, 0)
    if n == 0:
        starts = stops = lib.first_at_least(ids, 0, right=False)  # none, in the input's library
        layout = (False, 0, 0)
    else:
        starts, stops = lib.runs(ids)  # their count: a wait for device ids
        layout = (False, round(n / starts.shape[0]), 0)  # disjoint, covering every position; longest unknown
    result = scan_ranges(op, a, starts, stops, axis, dtype, None, exclusive, variant, layout)
    return result if order is None else lib.scatter(result, order, axis)
