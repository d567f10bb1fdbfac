"""Segmented reductions (issue 40): NumPy's ``ufunc.reduceat`` and ``ufunc.segmented_reduce`` (numpy/numpy PR
32243) as one plan each.

The ranges of one axis travel as one int64 operand beside the input (its "bounds": reduceat's indices, or the
starts followed by the stops; device starts and stops as two, each read in place where it is contiguous int64),
and the layout is a reduction's over that axis whose result holds the ranges' count in the axis' place
(``Segments.reduce_out_stride`` is the result's stride along it).  The kernels
(cuda/axis/ranges_kernels.cuh) apply NumPy's rules to the bounds themselves (slice rules, reduceat's one-element
rule); what NumPy refuses is refused here, with NumPy's exceptions, before anything runs: reduceat's indices out of
``[0, n)``, an empty range of an operator without an identity and without `initial`, mismatched starts and stops.
Host bounds are checked in full.  Device bounds are not brought to the host: reduceat's indices are checked by two
of gpureduce's own reductions (their smallest and largest, one small wait), device starts and stops not at all, so
an empty range among them gives the operator's identity (-inf for max of floats, the lowest integer, -1 for
argmax, NaN for mean), as JAX's segment_max and torch.segment_reduce give, instead of NumPy's ValueError.

The algorithm is picked by name among cuda/abi/ranges.def's (``_core.range_algorithms``); ``"auto"`` chooses by
the ranges' mean length, measured here for host bounds (else estimated by the kernels as ``n / count``).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np

from .. import _core
from .._registry import OPERATORS, REDUCE_OPS, SCAN_OPS
from .layout import c_strides, plan as segments_plan
from .numpy_rules import NoValue, check_like_numpy, given, operator_for_dtype
from .operands import cast, copy_plan, default_dtype, dtype_code, dtype_kind, intake, to_host
from .ranges_layout import scan_ranges_layout
from .plan import (Plan, fresh_result, initial_bytes, operator_parameter, out_operand, post_for, prepare_reduce,
                   run, scan_layout, segments_supported, variant_for)

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index

# The algorithms, the one list of cuda/abi/ranges.def: a segmented call's `variant=`
ALGORITHMS = tuple(name for name, _doc, _scan_doc in _core.range_algorithms)
ALGORITHM_DOCS = {name: doc for name, doc, _scan_doc in _core.range_algorithms}
# the segmented scans' variants: those with a scan_doc
SCAN_ALGORITHM_DOCS = {name: scan_doc for name, _doc, scan_doc in _core.range_algorithms if scan_doc}
FORMS = {"reduceat": _core.RANGES_REDUCEAT, "segmented_reduce": _core.RANGES_STARTS_STOPS}

_BY_NAME = {op.name: op for op in OPERATORS}
# every reduction of one array (dot and vdot read two: they have no segmented form)
OPS = tuple(op for op in REDUCE_OPS if _BY_NAME[op].operands != "TWO")
_OP_CODES = {op.name: op.code for op in OPERATORS}
_REDUCE, _SCAN = _core.KIND_REDUCE, _core.KIND_SCAN


def _ufunc_name(op):
    """The name NumPy's messages give the operation: its ufunc's (add for sum), else the function's."""
    return _BY_NAME[op].ufunc or op


def _bounds(v, what, fn):
    """`v` as a 1-d array of integer bounds, NumPy's conversion (``PyArray_FromAny(v, intp, 1, 1)``): a list or
    tuple of numbers is converted (floats truncated, as NumPy does); an array must cast safely to int64.  A NumPy
    array (host) or an Operand (device)."""
    if isinstance(v, (list, tuple, range)) or np.isscalar(v):
        try:
            arr = np.array(v, dtype=np.intp)
        except ValueError as e:
            if "sequence" in str(e):
                raise ValueError("setting an array element with a sequence. The requested array would exceed the "
                                 f"maximum number of dimension of 1 ({what} of {fn} is one list of ints).") from None
            raise
        o = intake(arr, what)
    else:
        o = intake(v, what)
    dt = np.dtype(o.dtype)
    if dt.kind not in "biu" or dt == np.uint64:
        raise TypeError(f"Cannot cast array data from {dt!r} to dtype('int64') according to the rule 'safe' "
                        f"({what} of {fn} must be integers)")
    if len(o.shape) == 0:
        raise ValueError(f"object of too small depth for desired array ({what} of {fn} must be 1-dimensional)")
    if len(o.shape) > 1:
        raise ValueError("setting an array element with a sequence. The requested array would exceed the maximum "
                         f"number of dimension of 1 ({what} of {fn} must be 1-dimensional, not {len(o.shape)})")
    return o


def _host_int64(o):
    """A host Operand's elements as a contiguous int64 NumPy array."""
    return np.ascontiguousarray(o.array, dtype=np.int64).reshape(-1)


def _contiguous_int64(o):
    """Device Operand `o` (1-d) as the kernels read bounds: itself where it is contiguous int64, else a copy cast
    with NumPy's rules (no wait)."""
    k = o.shape[0]
    if np.dtype(o.dtype) == np.int64 and (k <= 1 or o.strides[0] == 1):
        return o
    return intake(_core.run(copy_plan(o, np.dtype(np.int64), (k,), o.strides)))


def _device_bounds(parts):
    """(bounds, stops) of the device Operands `parts` (one or two 1-d arrays of one length): each read in place
    where it is contiguous int64 (the starts, or reduceat's indices, as the bounds; the stops apart, the plan's
    `ranges` item 6), else copied so: a segmented call on CSR offsets reads them once and copies nothing."""
    return _contiguous_int64(parts[0]), _contiguous_int64(parts[1]) if len(parts) == 2 else None


def _lengths(form, starts, stops, n):
    """Each range's length after NumPy's rules (the kernels' RangeSet::bounds), from host int64 bounds."""
    if form == _core.RANGES_REDUCEAT:
        ends = np.append(starts[1:], n)
        return np.where(ends > starts, ends - starts, 1)
    a = np.clip(np.where(starts < 0, starts + n, starts), 0, n)
    b = np.clip(np.where(stops < 0, stops + n, stops), 0, n)
    return np.maximum(b - a, 0)


def _device_index_range(idx):
    """(smallest, largest) of a device array of reduceat's indices: two of gpureduce's own reductions, one wait."""
    low = run(prepare_reduce("min", idx))
    high = run(prepare_reduce("max", idx))
    return int(to_host(low)), int(to_host(high))


def _bound_operands(fn, x, bounds):
    """(Operands of `bounds`, on the host?): reduceat's (indices,) or (starts, stops), converted and checked with
    NumPy's rules against input Operand `x`."""
    names = {"reduceat": ("indices",), "groupby_reduce": ("group_ids",)}.get(fn, ("starts", "stops"))
    parts = [_bounds(b, what, fn) for b, what in zip(bounds, names)]
    if len(parts) == 2 and parts[0].shape[0] != parts[1].shape[0]:
        raise ValueError(f"'starts' and 'stops' must have the same length, got {parts[0].shape[0]} and "
                         f"{parts[1].shape[0]}")
    on_host = all(p.host for p in parts)
    if x.host and not on_host:
        raise TypeError(f"{fn}: the bounds are a device array but the input is on the host; pass host bounds or a "
                        "device input")
    if not on_host and any(p.host for p in parts):
        raise TypeError(f"{fn}: starts and stops must both be host arrays or both device arrays")
    return parts, on_host


def _axis(axis, ndim, fn):
    if ndim == 0:
        raise TypeError(f"cannot {fn} on a scalar")
    if axis is None:
        if ndim != 1:
            raise ValueError(f"{fn} does not allow multiple axes")
        return 0
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            raise ValueError(f"{fn} does not allow multiple axes")
        axis = axis[0]
    return normalize_axis_index(axis, ndim)


def prepare_ranges(fn, op, a, bounds, axis=0, dtype=None, out=None, initial=NoValue, variant="auto", ddof=None,
                   ord=None, empty_gives_identity=False, groups=None, id_notes=None):
    """(plan, post) of ``reduceat(op, a, indices, ...)`` (fn "reduceat", bounds (indices,)) or
    ``segmented_reduce(op, a, starts, stops, ...)`` (fn "segmented_reduce", bounds (starts, stops)), with NumPy's
    exceptions and warnings for bad arguments.  `empty_gives_identity`: host bounds' empty ranges give the
    identity (or -1, NaN) as device bounds' do, with no error or warning (the grouped reductions' empty groups,
    JAX's rule).  `groups`: bounds (group_ids,) hold one id per element along the axis, each in [0, groups) (the
    caller's checks, or `id_notes`': two zero int64 on the ids' device where the kernels note the ids out of
    range, read by the caller after the call), reduced by the grouped sums' scatter (RANGES_GROUP_IDS, for the
    pairs ``_core.groups_scatter_runs`` takes: no cast first)."""
    if not isinstance(op, str):
        raise TypeError(f"op must be an operator's name (a str), not {type(op).__name__}")
    if op not in OPS:
        raise ValueError(f"{fn}: unknown operator {op!r}; operators are {', '.join(OPS)}")
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if variant not in ALGORITHMS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; the segmented reductions' variants are "
                         f"{', '.join(ALGORITHMS)} (see gpureduce.segmented_variants())")
    x = intake(a)
    a = x.obj
    op = operator_for_dtype(op, x.dtype)  # no NaN in integers and bool: nansum is sum there
    record = _BY_NAME[op]
    form = FORMS[fn] if groups is None else _core.RANGES_GROUP_IDS
    ax = _axis(axis, len(x.shape), fn)
    n = x.shape[ax]
    parts, on_host = _bound_operands(fn, x, bounds)
    count = parts[0].shape[0] if groups is None else groups
    rshape = tuple(count if i == ax else e for i, e in enumerate(x.shape))

    parameter = operator_parameter(op, x.dtype, dtype, initial, True, ddof, ord)  # NumPy's keyword rules
    if op in ("mean", "nanmean") and dtype is not None and dtype_kind(np.dtype(dtype)) not in "fc":
        raise TypeError(f"{fn} of {op} with an integer or bool dtype= ({np.dtype(dtype)}) is not supported; "
                        "reduce with dtype=float64 and cast the result")
    rt = np.dtype(dtype) if dtype is not None else default_dtype(op, x.dtype)
    dtype_code(rt)
    out_desc = out_operand(out, rshape, f"the result of {fn}") if out is not None else None
    has_initial = given(initial) and initial is not None

    # NumPy's refusals and warnings, from host bounds (device starts and stops are not read: no wait)
    host = [_host_int64(p) for p in parts] if on_host else None
    summary = None  # (shortest, total) of the ranges' lengths, where known
    if host is not None and groups is None:
        if form == _core.RANGES_REDUCEAT:
            bad = host[0][(host[0] < 0) | (host[0] >= n)]
            if bad.size:
                raise IndexError(f"index {int(bad[0])} out-of-bounds in {_ufunc_name(op)}.reduceat [0, {n})")
        lengths = _lengths(form, host[0], host[1] if len(host) > 1 else None, n)
        summary = (int(lengths.min()), int(lengths.sum())) if lengths.size else (0, 0)
    elif form == _core.RANGES_REDUCEAT and count:  # device indices: their range only, one small wait
        low, high = _device_index_range(parts[0])
        if low < 0 or high >= n:
            raise IndexError(f"index {low if low < 0 else high} out-of-bounds in {_ufunc_name(op)}.reduceat [0, {n})")
    # device starts and stops are not read here (no wait): an empty range gives the operator's identity
    some_empty = summary is not None and count > 0 and math.prod(rshape) > 0 and summary[0] == 0 \
        and not empty_gives_identity
    if some_empty and record.result == "INDEX":
        raise ValueError(f"attempt to get {op.removeprefix('nan')} of an empty sequence (an empty segment of {fn})")
    if some_empty and (not record.identity or initial is None) and not has_initial:
        raise ValueError(f"zero-size segment in reduction operation '{_ufunc_name(op)}' which does not have an "
                         "identity, so to allow empty segments one has to specify 'initial'")
    if some_empty and record.result == "MEAN":
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)
    if record.result == "VAR" and summary is not None and count and math.prod(rshape) > 0 \
            and summary[0] - parameter <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)

    # the bounds operand: host bounds as one host array (the runner uploads them for a device input)
    bounds_operand, stops_operand = (intake(np.concatenate(host) if len(host) > 1 else host[0], "the bounds"), None) \
        if on_host else _device_bounds(parts)
    if id_notes is not None:
        stops_operand = intake(id_notes, "the ids' notes")
    mean_length = round(summary[1] / count) if summary is not None and count else 0

    # the input in a (input, result) pair the kernels have, else cast first (as NumPy's buffered casts)
    v = variant_for("reduce", "sum", "auto")  # the axis machinery; the algorithm travels in `ranges`
    op_code = _OP_CODES[op]
    if groups is None and not segments_supported(_REDUCE, v.index, op_code, x.code, dtype_code(rt)):
        x = cast(x, np.dtype(np.bool_) if record.result in ("BOOL", "COUNT") else rt)
    fresh = None
    if out is None:
        fresh, out_desc = fresh_result(a, x, rshape, rt)
    direct = out_desc is not None and not out_desc.host and out_desc.dtype == rt
    out_strides = tuple(out_desc.strides) if direct else c_strides(rshape)
    seg = segments_plan(x.shape, x.strides, {ax}, out_strides=out_strides)
    if seg is None and direct:
        direct, out_strides = False, c_strides(rshape)
        seg = segments_plan(x.shape, x.strides, {ax}, out_strides=out_strides)
    if seg is None:  # C order: the kept axes before and after the reduced one merge into one each
        x = cast(x, x.dtype)
        seg = segments_plan(x.shape, x.strides, {ax}, out_strides=out_strides)
    seg = replace(seg, reduce_out_stride=out_strides[ax] if count > 1 else 0)
    plan = Plan(kind=_REDUCE, variant=v.index, op=op_code, result_dtype=dtype_code(rt), a=x,
                out=out_desc if direct else None, layout=seg.as_tuple(), shape=rshape,
                parameter=None if parameter is None else initial_bytes(parameter, rt),
                initial=initial_bytes(initial, rt) if has_initial else None, launcher=_core.LAUNCH_AXIS,
                ranges=(bounds_operand, form, ALGORITHMS.index(variant) if groups is None else 0, mean_length, 0, 0,
                        stops_operand))
    return plan, post_for(a, out if fresh is None else fresh, out_desc, direct)


def reduce_ranges(fn, op, a, bounds, axis=0, dtype=None, out=None, initial=NoValue, variant="auto", ddof=None,
                  ord=None, empty_gives_identity=False, groups=None, id_notes=None):
    """The call of prepare_ranges' arguments, run."""
    if isinstance(a, np.ma.MaskedArray):  # its mask would be read as data: a silent wrong answer
        raise TypeError(f"{fn} of a numpy.ma.MaskedArray is not supported (its masked elements would count); pass "
                        "a.filled(value) or the data and a where-free layout of your own")
    x = intake(a)
    result = run(prepare_ranges(fn, op, x, bounds, axis, dtype, out, initial, variant, ddof, ord,
                                empty_gives_identity, groups, id_notes))
    if operator_for_dtype(op, x.dtype) in ("nanargmin", "nanargmax", "nanmin", "nanmax"):
        # NumPy's ValueError of an all-NaN range (nanargmin, nanargmax: read from the result, one wait) and
        # RuntimeWarning (nanmin, nanmax of a host input), as the whole-axis calls give them
        check_like_numpy(op, x, result, None, True, 0)
    return result


def check_scan_arguments(fn, op, variant, exclusive):
    """The refusals a segmented or grouped scan (`fn`) makes of its operator, variant and `exclusive`."""
    if not isinstance(op, str):
        raise TypeError(f"op must be an operator's name (a str), not {type(op).__name__}")
    if op not in SCAN_OPS:
        raise ValueError(f"{fn}: unknown operator {op!r}; the scans' operators are {', '.join(SCAN_OPS)}")
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if variant not in SCAN_ALGORITHM_DOCS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; the segmented scans' variants are "
                         f"{', '.join(SCAN_ALGORITHM_DOCS)}")
    if not isinstance(exclusive, (bool, np.bool_)):
        raise TypeError(f"exclusive must be a bool (True or False), not {type(exclusive).__name__}")


def prepare_scan_ranges(op, a, starts, stops, axis=0, dtype=None, out=None, exclusive=False, variant="auto",
                        layout=None):
    """(plan, post) of ``segmented_scan(op, a, starts, stops, ...)``, with NumPy's exceptions for bad arguments.
    `layout`: (gaps, mean length, longest or 0) where the caller built the ranges (groupby_scan's runs of ids:
    disjoint, covering), else they are checked here (ValueError where two overlap)."""
    fn = "segmented_scan"
    check_scan_arguments(fn, op, variant, exclusive)
    x = intake(a)
    a = x.obj
    op = operator_for_dtype(op, x.dtype)  # no NaN in integers and bool: nancumsum is cumsum there
    ax = _axis(axis, len(x.shape), fn)
    n = x.shape[ax]
    parts, on_host = _bound_operands(fn, x, (starts, stops))
    count = parts[0].shape[0]
    host = [_host_int64(p) for p in parts] if on_host else None
    if layout is None:
        gaps, covered, longest = scan_ranges_layout(parts, host, n, fn) if count and n else (True, 0, 0)
        mean_length = round(covered / count) if count else 0
    else:
        gaps, mean_length, longest = layout
    if dtype is not None:
        rt = np.dtype(dtype)
        dtype_code(rt)
    else:
        rt = default_dtype(op, x.dtype, _SCAN)
    v = variant_for("scan", "sum", "auto")  # the axis machinery; the algorithm travels in `ranges`
    op_code = _OP_CODES[op]
    if not segments_supported(_SCAN, v.index, op_code, x.code, dtype_code(rt)):
        x = cast(x, rt)
    rshape = tuple(x.shape)
    out_desc = out_operand(out, rshape, f"the result of {fn} (the input's shape)") if out is not None else None
    fresh = None
    if out is None:
        fresh, out_desc = fresh_result(a, x, rshape, rt)
    x, seg, direct = scan_layout(x, ax, out_desc, rt)
    bounds_operand, stops_operand = (intake(np.concatenate(host), "the bounds"), None) if on_host \
        else _device_bounds(parts)
    plan = Plan(kind=_SCAN, variant=v.index, op=op_code, result_dtype=dtype_code(rt), a=x,
                out=out_desc if direct else None, layout=seg.as_tuple(), shape=rshape, exclusive=bool(exclusive),
                launcher=_core.LAUNCH_AXIS,
                ranges=(bounds_operand, FORMS["segmented_reduce"], ALGORITHMS.index(variant), mean_length,
                        int(bool(gaps)), longest, stops_operand))
    return plan, post_for(a, out if fresh is None else fresh, out_desc, direct)


def scan_ranges(op, a, starts, stops, axis=0, dtype=None, out=None, exclusive=False, variant="auto", layout=None):
    """The call of prepare_scan_ranges' arguments, run."""
    if isinstance(a, np.ma.MaskedArray):  # its mask would be read as data: a silent wrong answer
        raise TypeError("segmented_scan of a numpy.ma.MaskedArray is not supported (its masked elements would "
                        "count); pass a.filled(value)")
    return run(prepare_scan_ranges(op, a, starts, stops, axis, dtype, out, exclusive, variant, layout))
