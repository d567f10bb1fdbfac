"""One plan per call: NumPy's arguments (axis, dtype, out, keepdims, initial, where, exclusive) normalised into
a ``_core.Plan`` (src/plan.c), what the one runner (``_core.run``, src/run.c) executes: kind, launcher, variant,
operator, result dtype, operands, layout as segments (gpureduce/_planning/layout.py), the operator's parameter,
initial value, exclusive flag.

Everything that can be decided once per call is decided here, with NumPy's exceptions, the launcher included (a
dense whole-array plan runs the variant's flat kernel; a classic variant is refused here when it cannot); C
verifies the plan when it is built and checks at run time only what needs memory (devices, streams).  A layout
the segment kernels cannot read, or a dtype they have no kernel for, is first copied by a copy plan
(gpureduce/_planning/operands.py).  Plans of calls with no optional argument are cached as templates (plans
without their operands) per (operator, variant, input kind, dtype, shape, strides): a loop over one array plans
once.

``prepare_reduce`` / ``prepare_scan`` / ``prepare_dot`` give (plan, post): `post` is None or what turns the runner's
result into the call's (a copy into out=, the result in the input's own kind); ``run`` runs such a pair and
``reduce_once`` is one reduction's (mean's rewrites, mean.py).  ``reduce_plan`` / ``scan_plan`` give the plan alone
(benchmarks/bench_overhead.py times the stages).
"""
from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np

from .. import _core
from .layout import Dim, c_strides, gather_order, plan as segments_plan
from .operands import (DTYPES, cast, copy_into, default_dtype, dtype_code, dtype_kind, gather, intake,
                        is_c_contiguous, is_default_result)
from .numpy_rules import NoValue, given, operator_for_dtype
from .._registry import EXACT_OPS, OP_NAMES, OPERATORS, REDUCE_OPS, SCAN_OPS, resolve, variants
from .results import allocate_in_kind, in_kind_of, result_maker

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

Plan = _core.Plan  # built by keyword, verified once (src/plan.c)

# the variants that also run the axis machinery (flagged "axes" in cuda/abi/variants.def)
AXIS_VARIANTS = {kind: tuple(v.name for v in variants(kind=kind) if "axes" in v.properties)
                 for kind in ("reduce", "scan")}
# The operators' NumPy side, from their record (cuda/abi/ops.def through _registry.OPERATORS):
# NumPy's ufunc names, for its own error messages ("... reduction operation maximum which has no identity")
_UFUNC_NAME = {op.name: op.ufunc for op in OPERATORS if op.ufunc}
_NO_IDENTITY = {op.name for op in OPERATORS if not op.identity}  # an empty reduction or where= needs initial=
_SUM_LIKE = {op.name for op in OPERATORS if op.result == "SUM"}  # NumPy's (input, out) promotion without dtype=
_MEAN_LIKE = {op.name for op in OPERATORS if op.result == "MEAN"}
# the operators whose parameter is ddof= (cuda/primitives/reducers.cuh: MomentsReducer reads it)
_MOMENTS = {op.name for op in OPERATORS if op.param == "DDOF"}
# the positional reductions (argmin, nanargmin, ...): one int axis, positions counted in C order
ARG_OPS = {op.name for op in OPERATORS if op.result == "INDEX"}
_ZERO_D_INT_AXIS = {op.name for op in OPERATORS if op.zero_d_axis}
# the operators that only ask whether an element is nonzero (result rules BOOL and COUNT of cuda/abi/ops.def):
# an input a variant has no kernel for is cast to bool, not to the result dtype
_TRUTH_OPS = {op.name for op in OPERATORS if op.result in ("BOOL", "COUNT")}
# the keywords each NumPy function lacks, refused as Python refuses an unexpected keyword argument
_NO_DTYPE = {op.name for op in OPERATORS if "dtype" not in op.keywords}
_NO_INITIAL = {op.name for op in OPERATORS if "initial" not in op.keywords}
_NO_WHERE = {op.name for op in OPERATORS if "where" not in op.keywords}
_OP_CODES = {op: code for code, op in enumerate(OP_NAMES)}
_TWO_OPERANDS = {op.name for op in OPERATORS if op.operands == "TWO"}  # dot: prepare_dot plans it
_FLAT = {op.name: op.flat for op in OPERATORS}  # the whole-array variants' operators
_REDUCE, _SCAN = _core.KIND_REDUCE, _core.KIND_SCAN
_FLAT_LAUNCH, _AXIS_LAUNCH = _core.LAUNCH_FLAT, _core.LAUNCH_AXIS


@lru_cache(maxsize=None)
def segments_supported(kind, variant, op, in_code, out_code):
    return _core.segments_supported(kind, variant, op, in_code, out_code)


def launcher_for(kind, v, op, x, rt_code, seg, reads_more, result_ndim, out_desc):
    """LAUNCH_FLAT where variant `v`'s whole-array kernel runs the plan: one dense segment of an input dtype it
    reads, no mask, second operand or value (`reads_more`), in NumPy's result dtype, a reduction's result one new
    value, a scan's dense (src/plan.c verifies the same); else LAUNCH_AXIS.  A classic variant, which has no axis
    kernels, is refused here with what it takes and the variants that do more."""
    if (op in v.ops and x.dtype in v.numpy_dtypes and not reads_more and seg.count[0] * seg.count[1] <= 1
            and is_default_result(kind, op, x.code, rt_code)
            and (seg.reduce_count <= 1 or seg.reduce_in_stride == 1)
            and ((result_ndim == 0 and (out_desc is None or "axes" not in v.properties)) if kind == _REDUCE
                 else (seg.reduce_count <= 1 or seg.reduce_out_stride == 1))):
        return _FLAT_LAUNCH
    if "axes" in v.properties or ("exact" in v.properties and x.dtype in v.numpy_dtypes):
        return _AXIS_LAUNCH  # exact: its floating sums and means along axes too (reduce_segments_exact.cu)
    axis = ", ".join(AXIS_VARIANTS["reduce" if kind == _REDUCE else "scan"])
    if x.dtype not in v.numpy_dtypes:
        raise ValueError(f"variant '{v.name}' does not support dtype {x.dtype}; it supports {', '.join(v.dtypes)}; "
                         f"variants that do: {axis}")
    if kind == _REDUCE:
        raise ValueError(f"variant '{v.name}' reduces a whole array (axis=None, no dtype/out/keepdims/initial/where, "
                         "a C- or Fortran-ordered array) and nothing else; the variants that cover every NumPy argument "
                         f"(axis, dtype, out, keepdims, initial, where, all dtypes, every operator) are: {axis}")
    raise ValueError(f"variant '{v.name}' scans a whole array flattened in C order, of dtypes {', '.join(v.dtypes)}, in "
                     "the result dtype NumPy picks, and nothing else; the variants that cover every NumPy argument "
                     f"(axis, dtype, all dtypes and layouts) are: {axis}")


def _whole_kernel_reads(kind, v, op, x, rt, seg, reads_more, out_desc):
    """Whether axis variant `v`'s whole-array kernel runs the plan of `x` in layout `seg` (None: not one
    segment) as it is: it reads every input dtype of its mask (launcher_for's flat case), so an input its axis
    kernels lack (CUB's have only input = result: an int32 sum's int64) is not cast first (a cast copy read at
    twice the bytes: CUB's int32 sum took float64's time)."""
    return seg is not None and launcher_for(kind, v, op, x, dtype_code(rt), seg, reads_more, 0 if kind == _REDUCE
                                            else len(x.shape), out_desc) == _FLAT_LAUNCH


def is_exact_variant(variant):
    """Whether `variant` names a reduction variant with the "exact" property (False for any other value: the
    planner's own errors name unknown ones)."""
    return isinstance(variant, str) and any(v.name == variant and "exact" in v.properties
                                            for v in variants(kind="reduce"))


def takes_axes(op, variant):
    """Whether reduction `variant` runs `op` along axes (an axis variant) rather than of whole arrays only (a
    classic one); a ValueError naming the choices for an unknown variant or one without `op`."""
    return "axes" in variant_for("reduce", op, variant).properties


def post_for(a, out, out_desc, direct):
    """What turns the runner's result into the call's, or None when it is that already (out= written in place,
    a NumPy scalar or array of a host input)."""
    if out is not None:
        return None if direct else (lambda r: copy_into(out, out_desc, r))
    return in_kind_of(a)


def fresh_result(a, x, shape, dtype):
    """(array, its out= Operand) of the result of device input `a` from `a`'s own library, written in place by the
    kernels (results.allocate_in_kind), or (None, None) where the runner makes a DeviceArray.  The Operand is
    Operand.result_like's: read from the input's (the same stream and device, no DLPack handshake) where the input
    came on the library's current stream and holds elements (an empty one was not checked against the device)."""
    if x.host:
        return None, None
    made = allocate_in_kind(a, shape, dtype)
    if made is None:
        return None, None
    fresh, pointer = made
    return fresh, x.result_like(fresh, pointer, dtype_code(dtype), shape)


# ---------------------------------------------------------------- reductions

def reduced_axes(op, axis, ndim):
    """The reduced axes as a sorted tuple, with NumPy's AxisError / duplicate-axis ValueError / TypeError."""
    if axis is None:
        return tuple(range(ndim))
    if ndim == 0 and op in _ZERO_D_INT_AXIS and isinstance(axis, (int, np.integer)) and axis in (0, -1):
        return ()  # NumPy's ufunc.reduce takes an int axis 0 (or -1) of a 0-d array as reducing nothing
    if op in ARG_OPS:
        if isinstance(axis, (tuple, list)):
            raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
        index = normalize_axis_index(axis, ndim or 1)  # NumPy's arg reductions see a 0-d array as 1-d
        return (index,) if ndim else ()
    try:
        return tuple(sorted(normalize_axis_tuple(axis, ndim)))
    except ValueError as e:
        if type(e) is not ValueError:  # AxisError: NumPy's own text already
            raise
        raise ValueError("duplicate value in 'axis'") from None


def _mask(where, x):
    """where= as an Operand broadcast to x's shape (strides 0 where it broadcasts), or None for True."""
    if where is True or (isinstance(where, (bool, np.bool_)) and where):
        return None
    w = intake(where, "where=")
    if w.dtype != np.bool_:
        raise TypeError(f"Cannot cast array data from {w.dtype!r} to dtype('bool') according to the rule 'safe' "
                        "(where= must be a boolean array)")
    try:
        broadcasts = np.broadcast_shapes(w.shape, x.shape) == tuple(x.shape)
    except ValueError:
        broadcasts = False
    if not broadcasts:
        raise ValueError(f"where= of shape {w.shape} does not broadcast to the input's shape {x.shape}")
    if x.host and not w.host:
        raise TypeError("where= is a device array but the input is on the host; pass a host mask or a device input")
    lead = len(x.shape) - len(w.shape)
    strides = tuple(0 if i < lead or w.shape[i - lead] == 1 else w.strides[i - lead] for i in range(len(x.shape)))
    return w.view(tuple(x.shape), strides)


def weighted_dtype(a_dtype, b, b_dtype):
    """SciPy's dtype of logsumexp(a, b=b): the common one of a's and b's (`b` a Python number does not widen a's,
    as in NumPy 2), at least floating (float64 for bool and integers); a TypeError for complex ones."""
    dtype = np.result_type(a_dtype, b if type(b) in (bool, int, float) else b_dtype)
    if dtype.kind == "c":
        raise TypeError(f"logsumexp of complex inputs is not supported (a {a_dtype}, b {b_dtype})")
    return dtype if dtype_kind(dtype) == "f" else np.dtype(np.float64)


def _weighted(x, b):
    """(input, weights): logsumexp's `a` and `b` broadcast together (strides 0 where one broadcasts) and cast to
    SciPy's dtype, the common one of the two and at least floating (float64 for bool and integers)."""
    w = intake(b, "b")
    if x.host and not w.host:
        raise TypeError("b is a device array but a is on the host; pass a host b or a device a")
    dtype = weighted_dtype(x.dtype, b, w.dtype)
    try:
        shape = np.broadcast_shapes(tuple(x.shape), tuple(w.shape))
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with shapes {tuple(x.shape)} {tuple(w.shape)}") \
            from None
    out = []
    for v in (x, w):
        v = v if v.dtype == dtype else cast(v, dtype)
        lead = len(shape) - len(v.shape)
        strides = tuple(0 if i < lead or v.shape[i - lead] == 1 else v.strides[i - lead] for i in range(len(shape)))
        out.append(v.view(shape, strides))
    return out


def _some_mean_is_empty(red_count, mask, where, x, axes, rshape):
    """NumPy's "Mean of empty slice" test: an empty reduced axis, or with a where= mask any result that takes
    no element.  A device mask is not counted (that would cost a reduction and a wait): no warning then."""
    if mask is None:
        return red_count == 0 and math.prod(rshape) > 0
    if not x.host:
        return False
    taken = np.broadcast_to(np.asarray(where, dtype=bool), tuple(x.shape)).sum(axis=axes)
    return bool(np.any(taken == 0))


def _fewest_taken(red_count, mask, where, x, axes, rshape):
    """The fewest elements any result takes (var's "Degrees of freedom <= 0" test), or infinity when no result
    takes part or the mask is on the device (not counted: that would cost a reduction and a wait)."""
    if math.prod(rshape) == 0 or (mask is not None and not x.host):
        return math.inf
    if mask is None:
        return red_count
    return int(np.broadcast_to(np.asarray(where, dtype=bool), tuple(x.shape)).sum(axis=axes).min())


def out_operand(out, shape, what):
    """out= as an Operand, checked against the result's shape (ValueError, as NumPy) and writability."""
    o = intake(out, "out=")
    if tuple(o.shape) != tuple(shape):
        raise ValueError(f"out= has shape {tuple(o.shape)} but {what} has shape {tuple(shape)}")
    if o.readonly:
        raise ValueError("out= is read-only")
    if not o.host and o.size > 1 and any(st == 0 and n > 1 for st, n in zip(o.strides, o.shape)):
        # a broadcast view: several result elements would land on one address (NumPy's broadcast views are
        # read-only for the same reason)
        raise ValueError(f"out= has a zero stride (strides {tuple(o.strides)} elements, shape {tuple(o.shape)}): "
                         "its elements overlap, so it cannot hold a result; pass an array of its own memory")
    return o


# The kept whole-array calls live in C (src/whole_calls.c: its key, its entry, and its bound of 4,096 keys, so that
# a loop over ever new shapes cannot grow it without bound); a template is a plan without its operands
# (with_operands(None)), which holds no array alive.
def remember_whole(kind, op, variant, exclusive, x, plan, fresh, view=None):
    """Keep `plan`, a whole-array call of `x` with the default arguments, for later calls with the same key (kind,
    `op` as the caller named it, `variant`, `exclusive`, the input's type, device and layout): they run it from C
    (``_core.call_whole``, src/whole_calls.c) without planning again.  `fresh`: the result the input's library made
    (then each call has it make its own, by results.result_maker's maker); None: the runner's result, in the input's
    kind through in_kind_of, is the call's.  `view`: the (shape, strides) the input is read at (a scan of the whole
    array)."""
    maker = None
    if fresh is not None:
        maker = result_maker(x.obj, plan.shape, DTYPES[plan.result_dtype])
        if maker is None or not maker[3]:  # made in a graph capture: planned again next time
            return
    post = None if x.host or fresh is not None else in_kind_of
    _core.remember_whole(kind, op, variant, exclusive, x, plan.with_operands(None), maker and maker[:3], post, view)


# What the weighted logsumexp gives (cuda/primitives/reducers.cuh: WeightedLogSumExpReducer's parameter)
WEIGHTED_RESULTS = {"log": 0, "log_abs": 1, "sign": 2}


def prepare_reduce(op, a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=True,
                   variant="auto", ddof=None, ord=None, *, weights=None, weighted_result="log"):
    """(plan, post) of ``reduce(op, a, ...)``; raises NumPy's exceptions for bad arguments.

    weights: logsumexp's b (array_like or device array), broadcast with `a`: the plan's second operand;
    `weighted_result` says what the reduction gives (WEIGHTED_RESULTS)."""
    x = intake(a)  # an operand the eager call took already passes through
    a = x.obj
    if weights is not None:
        x, weights = _weighted(x, weights)
    named, taken = op, x  # the cache's key: the operator as the caller named it, the input as it came
    op = operator_for_dtype(op, x.dtype)  # no NaN in integers and bool: nansum is sum there
    whole = axis is None and dtype is None and out is None and where is True and initial is NoValue \
        and keepdims is False and weights is None and ddof is None and ord is None
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(REDUCE_OPS)}")
    if op in _TWO_OPERANDS:
        raise TypeError(f"{op} reads two arrays: call gpureduce.{op}(a, b), not reduce({op!r}, a)")
    v = variant_for("reduce", op, variant)
    if "exact" in v.properties and x.dtype in v.numpy_dtypes and \
            not (op in EXACT_OPS and dtype_kind(x.dtype) == "f"):
        v = variant_for("reduce", op, "auto")  # its integer sums and means, min and max: auto's kernels
    ndim = len(x.shape)
    axes = reduced_axes(op, axis, ndim)
    if op in ARG_OPS and axis is None:
        rshape = (1,) * ndim if keepdims else ()
    else:
        rshape = tuple(1 if i in axes else e for i, e in enumerate(x.shape)) if keepdims else \
            tuple(e for i, e in enumerate(x.shape) if i not in axes)
    parameter = operator_parameter(op, x.dtype, dtype, initial, where, ddof, ord)
    if weights is not None:
        parameter = WEIGHTED_RESULTS[weighted_result]
    if op == "vector_norm" and parameter == -math.inf and math.prod(x.shape[i] for i in axes) == 0:
        raise ValueError("zero-size array to reduction operation minimum which has no identity")  # abs(x).min(axis)
    out_desc = out_operand(out, rshape, f"the result of {op}") if out is not None else None
    if dtype is not None:
        rt = np.dtype(dtype)
        dtype_code(rt)
    elif out_desc is not None and op in _SUM_LIKE:
        # NumPy's loop for (input, out) without dtype=: the promotion of the two (int64 into a float32 out
        # sums in float64), cast into out at the end
        rt = np.promote_types(x.dtype, out_desc.dtype)
    else:
        rt = default_dtype(op, x.dtype)
    has_initial = given(initial) and initial is not None
    mask = _mask(where, x)
    red_count = math.prod(x.shape[i] for i in axes)
    # initial=None is NumPy's "no identity": sum and prod then refuse what min and max refuse
    if (op in _NO_IDENTITY or initial is None) and not has_initial:
        if mask is not None:
            raise ValueError(f"reduction operation '{_UFUNC_NAME[op]}' does not have an identity, so to use a "
                             "where mask one has to specify 'initial'")
        if red_count == 0:  # NumPy refuses even when the result would be empty
            raise ValueError(f"zero-size array to reduction operation {_UFUNC_NAME[op]} which has no identity")
    if op in ARG_OPS and red_count == 0:
        raise ValueError(f"attempt to get {op.removeprefix('nan')} of an empty sequence")
    if op in _MEAN_LIKE and _some_mean_is_empty(red_count, mask, where, x, axes, rshape):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)
    if op in ("var", "std") and _fewest_taken(red_count, mask, where, x, axes, rshape) - parameter <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
    if op == "nanmean" and dtype is not None and dtype_kind(rt) not in "fc":
        raise TypeError("If a is inexact, then dtype must be inexact")
    if op == "mean" and dtype is not None and dtype_kind(rt) not in "fc":
        # two steps, not one plan: the sum in that dtype, then NumPy's truncating division (_integer_mean.py)
        raise TypeError(f"mean with an integer or bool dtype= ({rt}) has no single plan; gpureduce.mean runs it")

    op_code = _OP_CODES[op]
    # a device input's result is made by its own library where that can (its pool; in a CUDA graph's capture the
    # graph's pool, not an allocation the graph would own and never free) and written in place, by every variant;
    # a caller's device out= of the result dtype is written in place by an axis variant, while a classic
    # variant's flat kernel writes one scalar, copied into it afterwards
    fresh = None
    if out is None:
        fresh, out_desc = fresh_result(a, x, tuple(rshape), rt)
    direct = out_desc is not None and not out_desc.host and out_desc.dtype == rt and \
        ("axes" in v.properties or fresh is not None)
    reads_more = mask is not None or weights is not None or has_initial or parameter is not None
    if ("axes" in v.properties or "exact" in v.properties) and \
            not segments_supported(_REDUCE, v.index, op_code, x.code, dtype_code(rt)):
        dense = None if rshape else segments_plan(x.shape, x.strides, set(axes), out_strides=(0,) * len(x.shape),
                                                  ordered=op in ARG_OPS)
        if not _whole_kernel_reads(_REDUCE, v, op, x, rt, dense, reads_more, out_desc if direct else None):
            x = cast(x, np.dtype(np.bool_) if op in _TRUTH_OPS else rt)
    x, read_along, seg, direct = _reduce_layout(op, x, axes, weights if weights is not None else mask,
                                                out_desc if direct else None)
    second, mask = (read_along, None) if weights is not None else (None, read_along)
    rt_code = dtype_code(rt)
    plan = Plan(kind=_REDUCE, variant=v.index, op=op_code, result_dtype=rt_code, a=x, second=second, mask=mask,
                out=out_desc if direct else None, layout=seg.as_tuple(), shape=tuple(rshape),
                parameter=None if parameter is None else initial_bytes(parameter, rt),
                initial=initial_bytes(initial, rt) if has_initial else None,
                launcher=launcher_for(_REDUCE, v, op, x, rt_code, seg, reads_more, len(rshape),
                                      out_desc if direct else None))
    if whole and x.obj is a and red_count > 0 and isinstance(variant, str):
        remember_whole(_REDUCE, named, variant, False, taken, plan, fresh)
    return plan, post_for(a, out if fresh is None else fresh, out_desc, direct)


def operator_parameter(op, in_dtype, dtype, initial, where, ddof, ord):
    """NumPy's keyword rules of `op`'s function, a TypeError naming a keyword it does not take (dtype=, initial=,
    where=, ddof=, ord=, ptp of bool), and the operator's parameter (cuda/abi/ops.def: param; one value of the
    result dtype in the plan): ddof for the variances (default 0), ord for vector_norm (default 2), else None."""
    if dtype is not None and op in _NO_DTYPE:
        raise TypeError(f"{op}() got an unexpected keyword argument 'dtype'")
    if initial is not NoValue and op in _NO_INITIAL:
        raise TypeError(f"{op}() got an unexpected keyword argument 'initial'")
    if where is not True and op in _NO_WHERE:
        raise TypeError(f"{op}() got an unexpected keyword argument 'where'")
    if op == "ptp" and in_dtype == np.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                        "operator, or the logical_xor function instead.")
    parameter = None
    if op in _MOMENTS:
        if dtype is not None and dtype_kind(np.dtype(dtype)) != "f":
            raise TypeError(f"{op}() with dtype={np.dtype(dtype)}: gpureduce computes a variance in a floating dtype "
                            "(float16, float32 or float64)")
        parameter = 0 if ddof is None else ddof
    elif ddof is not None:
        raise TypeError(f"{op}() got an unexpected keyword argument 'ddof'")
    if op == "vector_norm":
        parameter = 2.0 if ord is None else ord
    elif ord is not None:
        raise TypeError(f"{op}() got an unexpected keyword argument 'ord'")
    return parameter


def initial_bytes(initial, rt):
    """initial= as the bytes of one `rt` value, converted as NumPy converts it: a Python int or float into an
    integer dtype is truncated to an int and must fit (OverflowError, NumPy's words); anything else is cast (into
    bool: nonzero is True, 0.25 too)."""
    if rt.kind in "iu" and isinstance(initial, (int, float)) and not isinstance(initial, (bool, np.generic)):
        value = int(initial)
        if not -2**63 <= value < (2**64 if rt == np.uint64 else 2**63):  # what a C long (unsigned for uint64) holds
            raise OverflowError("Python int too large to convert to C long")
        info = np.iinfo(rt)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {rt}")
        return np.asarray(value).astype(rt).tobytes()
    return np.asarray(initial).astype(rt).tobytes()


def variant_for(kind, op, variant):
    """The variant `variant` of `kind` for `op`: any that lists it among its whole-array operators (ops.def's flat
    column; exact's means and nan forms, which no other whole-array variant has), else one of the axis variants,
    which run every operator; a ValueError that names those otherwise."""
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if _FLAT[op]:
        return resolve(kind, variant, op)
    v = resolve(kind, variant, "sum")  # unknown names: the list of valid ones
    if op in v.ops:
        return v
    if variant not in AXIS_VARIANTS[kind]:
        verb = "implement" if kind == "reduce" else "scan"
        raise ValueError(f"variant {variant!r} does not {verb} {op} (it runs {', '.join(v.ops)} of whole arrays); "
                         "the variants that run every operator with every NumPy argument (axis, dtype, out, keepdims, "
                         f"initial, where, all dtypes) are: {', '.join(AXIS_VARIANTS[kind])}")
    return v


def _reduce_layout(op, x, axes, mask, out_desc):
    """(input, mask, Segments, direct): the segment layout of a reduction over `axes`, writing through out's
    strides when `out_desc` is given and they merge, else into a new C-ordered result; the input (and mask)
    gathered into (kept..., reduced...) C order first when no two-kept-one-reduced layout fits."""
    reduced = set(axes)
    ordered = op in ARG_OPS
    kept_shape = tuple(e for i, e in enumerate(x.shape) if i not in reduced)
    fresh = iter(c_strides(kept_shape))
    fresh_full = [0 if i in reduced else next(fresh) for i in range(len(x.shape))]
    out_full = fresh_full
    if out_desc is not None:
        os = list(out_desc.strides)
        if len(out_desc.shape) == len(x.shape):  # keepdims: drop the reduced positions
            os = [s for i, s in enumerate(os) if i not in reduced]
        it = iter(os)
        out_full = [0 if i in reduced else next(it) for i in range(len(x.shape))]
    mask_strides = mask.strides if mask is not None else None
    seg = segments_plan(x.shape, x.strides, reduced, mask_strides=mask_strides, out_strides=out_full, ordered=ordered)
    if seg is None and out_desc is not None:
        out_desc, out_full = None, fresh_full
        seg = segments_plan(x.shape, x.strides, reduced, mask_strides=mask_strides, out_strides=out_full,
                            ordered=ordered)
    if seg is None:  # gather into (kept..., reduced...) C order, then every operand merges
        operands = (x.strides, mask.strides) if mask is not None else (x.strides,)
        kept_dims, red_dims = gather_order(x.shape, operands, reduced)  # merged for input and mask alike
        x = gather(x, kept_dims + red_dims)
        if mask is not None:
            mask = gather(mask, [Dim(d.extent, d.strides[1:]) for d in kept_dims + red_dims])
        nk = len(kept_dims)
        out_full = list(c_strides(x.shape[:nk])) + [0] * (len(x.shape) - nk)
        seg = segments_plan(x.shape, x.strides, set(range(nk, len(x.shape))),
                            mask_strides=mask.strides if mask is not None else None, out_strides=out_full,
                            ordered=ordered)
        out_desc = None
    return x, mask, seg, out_desc is not None


def dot_operands(a, b, *, flatten, out=None):
    """(x, y, result dtype, out's operand or None) of ``dot(a, b)`` (vdot: `flatten`, arrays of one size read as
    vectors), with NumPy's errors for operands on both sides, vectors that do not pair up and an unacceptable
    `out`."""
    x, y = intake(a), intake(b, "b")
    if x.host != y.host:
        raise TypeError(f"{'vdot' if flatten else 'dot'}: one operand is on the device and the other on the host; "
                        "pass both as host arrays or both as device arrays")
    if flatten:
        if x.size != y.size:
            raise ValueError(f"cannot reshape array of size {y.size} into shape ({x.size},)")
    elif len(x.shape) != 1 or len(y.shape) != 1:
        raise ValueError(f"dot of arrays of shapes {tuple(x.shape)} and {tuple(y.shape)}: gpureduce.dot takes two "
                         "vectors (1-d arrays); for matrix products use numpy.dot, cupy.dot or torch.matmul")
    elif x.shape != y.shape:
        raise ValueError(f"shapes ({x.shape[0]},) and ({y.shape[0]},) not aligned: {x.shape[0]} (dim 0) != "
                         f"{y.shape[0]} (dim 0)")
    rt = np.result_type(x.dtype, y.dtype)
    dtype_code(rt)  # a TypeError naming the dtypes gpureduce has
    out_desc = None
    if out is not None:
        out_desc = intake(out, "out=")
        if out_desc.dtype != rt or out_desc.shape != () or out_desc.readonly:
            raise ValueError("output array is not acceptable (must have the right datatype, number of dimensions, "
                             "and be a C-Array)")
    return x, y, rt, out_desc


def prepare_dot(a, b, *, conj, flatten, out=None, variant="auto"):
    """(plan, post) of ``dot(a, b)`` (vdot: `conj` conjugates `a`, `flatten` reads both arrays in C order, as
    vectors of one size): the sum of the products of paired elements, each array read once.  Both are cast to
    NumPy's common dtype first; `b` is the plan's second operand, read at its own strides (cuda/abi/ops.def:
    operands TWO)."""
    x, y, rt, out_desc = dot_operands(a, b, flatten=flatten, out=out)
    if flatten:
        x, y = (v if is_c_contiguous(v) else cast(v, v.dtype) for v in (x, y))
        x, y = x.view((x.size,), (1,)), y.view((y.size,), (1,))
    x, y = (v if v.dtype == rt else cast(v, rt) for v in (x, y))
    v = variant_for("reduce", "dot", variant)
    fresh = None
    if out is None and "axes" in v.properties:
        fresh, out_desc = fresh_result(a, x, (), rt)
    direct = out_desc is not None and not out_desc.host and "axes" in v.properties
    x, y, seg, direct = _reduce_layout("dot", x, (0,), y, out_desc if direct else None)
    conj_flag = np.ones((), rt).tobytes() if conj and rt.kind == "c" else None
    rt_code = dtype_code(rt)
    plan = Plan(kind=_REDUCE, variant=v.index, op=_OP_CODES["dot"], result_dtype=rt_code, a=x, second=y,
                out=out_desc if direct else None, layout=seg.as_tuple(), shape=(), parameter=conj_flag,
                launcher=launcher_for(_REDUCE, v, "dot", x, rt_code, seg, True, 0, out_desc if direct else None))
    return plan, post_for(a, out if fresh is None else fresh, out_desc, direct)


def reduce_plan(op, a, *args, **kwargs):
    """The runner's plan of ``reduce(op, a, ...)`` alone."""
    return prepare_reduce(op, a, *args, **kwargs)[0]


# ---------------------------------------------------------------- scans

def prepare_scan(op, a, axis=None, dtype=None, out=None, exclusive=False, variant="auto"):
    """(plan, post) of ``scan(op, a, ...)``; raises NumPy's exceptions for bad arguments."""
    x = intake(a)  # an operand the eager call took already passes through
    a = x.obj
    named, taken = op, x  # the cache's key: the operator as the caller named it, the input as it came
    op = operator_for_dtype(op, x.dtype)  # no NaN in integers and bool: nancumsum is cumsum there
    whole = axis is None and dtype is None and out is None and (exclusive is False or exclusive is True)
    if op not in SCAN_OPS:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(SCAN_OPS)}")
    if not isinstance(exclusive, (bool, np.bool_)):
        raise TypeError(f"exclusive must be a bool (True or False), not {type(exclusive).__name__}")
    v = variant_for("scan", op, variant)
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
    ax = None if axis is None else normalize_axis_index(axis, max(len(x.shape), 1))
    if ax is not None and len(x.shape) == 0:
        ax = None  # a 0-d array scans like a 1-d one, as NumPy's cumsum does
    if dtype is not None:
        rt = np.dtype(dtype)
        dtype_code(rt)
    else:
        rt = default_dtype(op, x.dtype, _SCAN)
    op_code = _OP_CODES[op]
    casts = "axes" in v.properties and not segments_supported(_SCAN, v.index, op_code, x.code, dtype_code(rt))
    if ax is None:
        if not is_c_contiguous(x):  # a C-ordered copy: NumPy scans the array flattened in C order
            x, casts = cast(x, rt if casts else x.dtype), False
        x = x.view((x.size,), (1,))
        ax = 0
    rshape = tuple(x.shape)
    what = "the result (the flattened input's scan)" if axis is None else f"the result (the scan along axis {ax})"
    out_desc = out_operand(out, rshape, what) if out is not None else None
    fresh = None
    if out is None:  # a device input's result from its own library, where that can
        fresh, out_desc = fresh_result(a, x, rshape, rt)
    if casts:  # (a 1-d layout is planned without a copy)
        _, dense, direct = scan_layout(x, ax, out_desc, rt) if len(x.shape) == 1 else (x, None, False)
        if not _whole_kernel_reads(_SCAN, v, op, x, rt, dense, False, out_desc if direct else None):
            x = cast(x, rt)
    x, seg, direct = scan_layout(x, ax, out_desc, rt)
    rt_code = dtype_code(rt)
    plan = Plan(kind=_SCAN, variant=v.index, op=op_code, result_dtype=rt_code, a=x, out=out_desc if direct else None,
                layout=seg.as_tuple(), shape=rshape, exclusive=bool(exclusive),
                launcher=launcher_for(_SCAN, v, op, x, rt_code, seg, False, len(rshape), out_desc if direct else None))
    if whole and x.obj is a and isinstance(variant, str):
        remember_whole(_SCAN, named, variant, exclusive, taken, plan, fresh, (x.shape, x.strides))
    return plan, post_for(a, out if fresh is None else fresh, out_desc, direct)


def scan_layout(x, ax, out_desc, rt):
    """(x, layout, direct) of a scan of Operand `x` along axis `ax` into `out_desc` (or a new C-ordered result):
    `direct` where the kernels write `out_desc` itself (a device array of the result dtype whose layout merges with
    the input's), else a C-ordered result; an input whose axes do not merge is copied into C order first."""
    rshape = tuple(x.shape)
    direct = out_desc is not None and not out_desc.host and out_desc.dtype == rt
    out_strides = tuple(out_desc.strides) if direct else c_strides(rshape)
    seg = segments_plan(x.shape, x.strides, {ax}, out_strides=out_strides, scan=True)
    if seg is None and direct:
        direct, out_strides = False, c_strides(rshape)
        seg = segments_plan(x.shape, x.strides, {ax}, out_strides=out_strides, scan=True)
    if seg is None:  # both in C order: the kept axes merge into one
        x = cast(x, x.dtype)
        seg = segments_plan(x.shape, x.strides, {ax}, out_strides=out_strides, scan=True)
    return x, seg, direct


def scan_plan(op, a, *args, **kwargs):
    """The runner's plan of ``scan(op, a, ...)`` alone."""
    return prepare_scan(op, a, *args, **kwargs)[0]


def run(planned):
    """The result of a (plan, post) pair of prepare_reduce, prepare_scan or prepare_dot: the C runner's result,
    through post where there is one."""
    plan, post = planned
    result = _core.run(plan)
    return result if post is None else post(result)


def reduce_once(op, a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=True, variant="auto",
                ddof=None, ord=None):
    """One plan's reduction, run (the steps of mean's rewrites, mean.py): no rewrite of its own."""
    return run(prepare_reduce(op, a, axis, dtype, out, keepdims, initial, where, variant, ddof, ord))
