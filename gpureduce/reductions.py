"""Reductions with NumPy's signatures, result dtypes and errors: sum, prod, min, max, mean, argmin, argmax.

Two paths.  A plain whole-array reduction (no axis, dtype, out, keepdims, initial or where; a dtype the
variant lists; a dense array) goes to the chosen variant's flat kernel: the seeds' teaching variants, cub, and
auto's single-launch kernel.  Everything else goes to the axis machinery (gpureduce/_layout.py ->
cuda/segments.cuh), which the "auto" and "cub" variants cover; the teaching variants refuse it with a ValueError.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from . import _core
from ._layout import Dim, c_strides, gather_order, plan
from ._operands import Operand, cast, copy_into, default_dtype, dtype_code, gather, operand, out_operand, to_host
from ._registry import OP_NAMES, resolve, variants

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

__all__ = ["reduce", "sum", "prod", "min", "max", "mean", "argmin", "argmax"]

REDUCE_OPS = ("sum", "prod", "min", "max", "mean", "argmin", "argmax")
_FLAT_OPS = ("sum", "prod", "min", "max")
# The variants that also run the axis machinery (flagged "axes" in cuda/variants.def)
AXIS_VARIANTS = tuple(v.name for v in variants(kind="reduce") if "axes" in v.properties)
# NumPy's ufunc names, for its own error messages ("... reduction operation maximum which has no identity")
_UFUNC_NAME = {"sum": "add", "prod": "multiply", "min": "minimum", "max": "maximum"}


class _NoValueType:
    """The "not given" default of `initial` (NumPy's own sentinel is private)."""

    def __repr__(self):
        return "<no value>"


_NoValue = _NoValueType()


def _given(initial):
    return initial is not _NoValue and initial is not getattr(np, "_NoValue", _NoValue)


def _axes(op, axis, ndim):
    """The reduced axes as a sorted tuple, with NumPy's AxisError / duplicate-axis ValueError / TypeError."""
    if axis is None:
        return tuple(range(ndim))
    if op in ("argmin", "argmax"):
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


def _mask(where, x: Operand):
    """where= as an Operand broadcast to x's shape (strides 0 where it broadcasts), or None for True."""
    if where is True or (isinstance(where, (bool, np.bool_)) and where):
        return None
    w = operand(where, "where=")
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
    obj = w.obj
    if w.host:  # a host view with the broadcast strides, so its upload is just the bytes it spans
        obj = np.lib.stride_tricks.as_strided(w.obj, shape=x.shape, strides=[s * w.obj.itemsize for s in strides])
    return Operand(obj, w.host, w.dtype, tuple(x.shape), strides)


def _result_shape(shape, axes, keepdims):
    return tuple(1 if i in axes else e for i, e in enumerate(shape)) if keepdims else \
        tuple(e for i, e in enumerate(shape) if i not in axes)


def _refuse(v_name, op, reason):
    raise ValueError(f"variant {v_name!r} {reason}; the variants that cover every NumPy argument (axis, dtype, "
                     f"out, keepdims, initial, where, all dtypes, mean/argmin/argmax) are: {', '.join(AXIS_VARIANTS)}")


def _finish(result, out, out_desc, keepdims, shape0):
    """What the call returns: out=, a NumPy scalar for 0-d results, else the array."""
    if out is not None:
        return copy_into(out, out_desc, result) if result is not out else out
    if len(shape0) == 0:
        return to_host(result)[()]
    return result


def reduce(op: str, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
           variant: str = "auto"):
    """Reduce `a` with `op` ("sum", "prod", "min", "max", "mean", "argmin" or "argmax") as NumPy would.

    Same arguments, result dtypes, shapes and errors as the NumPy function of that name (argmin/argmax take
    only `axis`, `out` and `keepdims`; mean takes no `initial`).  `a` is a NumPy array (any layout, byte order
    or dtype NumPy reduces) or a device array exporting ``__cuda_array_interface__`` (CuPy, PyTorch, Numba,
    gpureduce.DeviceArray), read in place whatever its strides.  A 0-d result is a NumPy scalar; an array
    result is a NumPy array for a host input and a ``gpureduce.DeviceArray`` for a device input (computed
    asynchronously on the input's stream); ``out=`` (host or device) is written and returned.
    ``variant`` picks the algorithm: "auto" (gpureduce's kernels) and "cub" (CUB's) cover everything; the
    seeds' teaching variants reduce a whole array of their dtypes only (see gpureduce.variants()).
    """
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(REDUCE_OPS)}")
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, not {type(variant).__name__}")
    if op in _FLAT_OPS:
        v = resolve("reduce", variant, op)
    else:
        v = resolve("reduce", variant, "sum")  # unknown names: the list of valid ones
        if variant not in AXIS_VARIANTS:
            _refuse(variant, op, f"does not implement {op}")
    x = operand(a)
    ndim = len(x.shape)
    axes = _axes(op, axis, ndim)
    rshape = _result_shape(x.shape, axes, bool(keepdims)) if (op not in ("argmin", "argmax") or axis is not None) \
        else ((1,) * ndim if keepdims else ())
    if dtype is not None and op in ("min", "max", "argmin", "argmax"):
        raise TypeError(f"{op}() got an unexpected keyword argument 'dtype'")
    out_desc = out_operand(out, rshape, f"the result of {op}") if out is not None else None
    if dtype is not None:
        rt = np.dtype(dtype)
        dtype_code(rt)
    elif out_desc is not None and op in ("sum", "prod"):
        rt = out_desc.dtype  # NumPy reduces in out's dtype when no dtype is given
    else:
        rt = default_dtype(op, x.dtype)
    has_initial = _given(initial)
    mask = _mask(where, x)
    red_count = math.prod(x.shape[i] for i in axes)
    kept_count = math.prod(rshape)
    if op in ("min", "max") and not has_initial:
        if mask is not None:
            raise ValueError(f"reduction operation '{_UFUNC_NAME[op]}' does not have an identity, so to use a "
                             "where mask one has to specify 'initial'")
        if red_count == 0:  # NumPy refuses even when the result would be empty
            raise ValueError(f"zero-size array to reduction operation {_UFUNC_NAME[op]} which has no identity")
    if op in ("argmin", "argmax") and red_count == 0:
        raise ValueError(f"attempt to get {op} of an empty sequence")

    plain = ((axis is None or ndim <= 1) and len(axes) == ndim and op in _FLAT_OPS and rt == default_dtype(op, x.dtype)
             and out is None
             and not keepdims and not has_initial and mask is None and x.dense)
    if variant not in AXIS_VARIANTS:
        if not plain:
            _refuse(variant, op, "reduces a whole array (axis=None, no dtype/out/keepdims/initial/where, a "
                                 "C- or Fortran-ordered array) and nothing else")
        if x.dtype not in v.numpy_dtypes:
            raise ValueError(f"variant {variant!r} does not support dtype {x.dtype}; it supports "
                             f"{', '.join(v.dtypes)}; variants that do: {', '.join(AXIS_VARIANTS)}")
    if plain and x.dtype in v.numpy_dtypes:
        return _core.reduce(v.index, OP_NAMES.index(op), x.obj)

    if op == "mean" and red_count == 0 and mask is None and kept_count > 0:
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
    result = _reduce_axes(v, op, x, axes, rt, rshape, out, out_desc, initial if has_initial else None, mask)
    return _finish(result, out, out_desc, keepdims, rshape)


def _reduce_axes(v, op, x: Operand, axes, rt, rshape, out, out_desc, initial, mask):
    """The axis machinery: cast if no kernel reads x.dtype into rt, plan (gathering if needed), run."""
    op_code = OP_NAMES.index(op)
    if not _core.segments_supported(_core.KIND_REDUCE, op_code, dtype_code(x.dtype), dtype_code(rt)):
        if op == "mean" and rt.kind not in "fc":
            raise TypeError(f"mean with an integer or bool dtype= ({rt}) is not supported; pass a floating dtype")
        x = cast(x, rt)
        if mask is not None and not mask.host and x.host:  # keep mask and input on one side
            raise TypeError("where= is a device array but the input is on the host")
    reduced = set(axes)
    ordered = op in ("argmin", "argmax")
    kept_shape = tuple(e for i, e in enumerate(x.shape) if i not in reduced)
    fresh = c_strides(kept_shape)
    fresh_full, k = [], 0
    for i in range(len(x.shape)):  # output strides laid over the input's axes
        if i in reduced:
            fresh_full.append(0)
        else:
            fresh_full.append(fresh[k])
            k += 1
    direct_out = (out_desc is not None and not out_desc.host and out_desc.dtype == rt)
    out_full = fresh_full
    if direct_out:
        os = [s for e, s in zip(out_desc.shape, out_desc.strides)]
        if len(out_desc.shape) == len(x.shape):  # keepdims: drop the reduced positions
            os = [s for i, s in enumerate(os) if i not in reduced]
        out_full, k = [], 0
        for i in range(len(x.shape)):
            out_full.append(0 if i in reduced else os[k])
            k += 0 if i in reduced else 1
    seg = plan(x.shape, x.strides, reduced, mask_strides=mask.strides if mask else None, out_strides=out_full,
               ordered=ordered)
    if seg is None and direct_out:
        direct_out, out_full = False, fresh_full
        seg = plan(x.shape, x.strides, reduced, mask_strides=mask.strides if mask else None,
                   out_strides=out_full, ordered=ordered)
    if seg is None:  # gather into (kept..., reduced...) C order, then every operand merges
        operands = (x.strides, mask.strides) if mask is not None else (x.strides,)
        kept_dims, red_dims = gather_order(x.shape, operands, reduced)  # merged for input and mask alike
        gx = gather(x, kept_dims + red_dims)
        gmask = None
        if mask is not None:
            gmask = gather(mask, [Dim(d.extent, d.strides[1:]) for d in kept_dims + red_dims])
        nk = len(kept_dims)
        gshape = gx.shape
        gred = set(range(nk, len(gshape)))
        out_full = list(c_strides(gshape[:nk])) + [0] * (len(gshape) - nk)
        seg = plan(gshape, gx.strides, gred, mask_strides=gmask.strides if gmask else None, out_strides=out_full,
                   ordered=ordered)
        x, mask, direct_out = gx, gmask, False
    init_bytes = None if initial is None else np.asarray(initial).astype(rt).tobytes()
    result = _core.segments(_core.KIND_REDUCE, v.index, op_code, x.obj,
                            dtype_code(rt), seg.as_tuple(), tuple(rshape), out if direct_out else None,
                            mask.obj if mask is not None else None, init_bytes, False)
    return result


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
        variant: str = "auto"):
    """Sum of array elements over the given axes, as numpy.sum (bool/narrow ints sum in int64/uint64,
    float16 accumulates in float32, integers wrap like NumPy's).  See gpureduce.reduce."""
    return reduce("sum", a, axis, dtype, out, keepdims, initial, where, variant=variant)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True, *,
         variant: str = "auto"):
    """Product of array elements over the given axes, as numpy.prod.  See gpureduce.reduce."""
    return reduce("prod", a, axis, dtype, out, keepdims, initial, where, variant=variant)


def min(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    """Minimum over the given axes, as numpy.min: NaN propagates; empty without initial raises ValueError."""
    return reduce("min", a, axis, None, out, keepdims, initial, where, variant=variant)


def max(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True, *, variant: str = "auto"):
    """Maximum over the given axes, as numpy.max: NaN propagates; empty without initial raises ValueError."""
    return reduce("max", a, axis, None, out, keepdims, initial, where, variant=variant)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True, variant: str = "auto"):
    """Arithmetic mean over the given axes, as numpy.mean (integers in float64, float16 through float32);
    an empty slice warns and gives nan."""
    return reduce("mean", a, axis, dtype, out, keepdims, _NoValue, where, variant=variant)


def argmin(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    """Index of the first minimum (NaN counts as the minimum), as numpy.argmin: int64."""
    return reduce("argmin", a, axis, None, out, keepdims, variant=variant)


def argmax(a, axis=None, out=None, *, keepdims=False, variant: str = "auto"):
    """Index of the first maximum (NaN counts as the maximum), as numpy.argmax: int64."""
    return reduce("argmax", a, axis, None, out, keepdims, variant=variant)
