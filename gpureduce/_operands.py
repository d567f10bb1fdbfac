"""Array operands of the NumPy-parity path: what an input, a where= mask or an out= is, without copying
device data; host arrays made aligned and native-endian; the strided copies (casts, gathers) that prepare
layouts the segment kernels cannot read directly."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from . import _core
from ._layout import Dim, c_strides
from ._registry import DTYPE_NAMES, OP_NAMES

DTYPES = tuple(np.dtype(name) for name in DTYPE_NAMES)  # gr_dtype code -> NumPy dtype
_ACCEPTED = "expected a NumPy array, a sequence of numbers, or a device array exporting __cuda_array_interface__"
_CODES = {dt: code for code, dt in enumerate(DTYPES)}  # hot path: a dict lookup, not dtype.name
# What the dtype kinds NumPy cannot reduce hold, for the error message
_KIND_NAMES = {"O": "Python objects", "U": "str", "S": "bytes", "V": "void", "M": "datetime", "m": "timedelta"}


def unsupported_dtype(dt, where="", hint="") -> TypeError:
    """The error for a dtype gpureduce has no kernel for: the dtype first (the cause), then what works.
    `where` says whose dtype it is (" in the input, a list"); `hint` ends the message."""
    kind = "structured" if dt.fields is not None else _KIND_NAMES.get(dt.kind)
    return TypeError(f"unsupported dtype {dt}{f' ({kind})' if kind else ''}{where}: gpureduce reduces "
                     f"{', '.join(DTYPE_NAMES)}{hint}")


def _type_name(obj) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def dtype_code(dt) -> int:
    """gr_dtype code of a NumPy dtype (any byte order), or TypeError naming the dtypes gpureduce knows."""
    code = _CODES.get(dt) if isinstance(dt, np.dtype) else None
    if code is not None:
        return code
    dt = np.dtype(dt)
    if dt.fields is None and dt.kind in "biufc" and dt.name in DTYPE_NAMES:
        return DTYPE_NAMES.index(dt.name)
    raise unsupported_dtype(dt)


_RESULT_DTYPES = {}


def default_dtype(op: str, dt) -> np.dtype:
    """NumPy's result dtype of `op` over `dt` with dtype=None, from the one rule in the extension
    (gr_default_result_dtype): bool and narrow ints sum to int64/uint64, mean of ints is float64, ..."""
    key = (op, dt)
    got = _RESULT_DTYPES.get(key)
    if got is None:
        got = _RESULT_DTYPES[key] = DTYPES[_core.result_dtype(OP_NAMES.index(op), dtype_code(dt))]
    return got


@dataclass
class Operand:
    obj: object  # an aligned native np.ndarray, or the device object itself
    host: bool
    dtype: np.dtype
    shape: tuple
    strides: tuple  # elements
    readonly: bool = False

    @property
    def size(self):
        return prod(self.shape)

    @property
    def c_contiguous(self):
        return self.size <= 1 or all(
            s == c for e, s, c in zip(self.shape, self.strides, c_strides(self.shape)) if e != 1)

    @property
    def dense(self):
        """C- or Fortran-ordered: what the flat whole-array kernels read."""
        f = c_strides(self.shape[::-1])[::-1]
        return self.c_contiguous or all(s == c for e, s, c in zip(self.shape, self.strides, f) if e != 1)


def _device_interface(a):
    if isinstance(a, np.ndarray):
        return None
    try:
        return getattr(a, "__cuda_array_interface__", None)
    except (AttributeError, TypeError, RuntimeError):  # e.g. a CPU tensor refusing to export one
        return None


def operand(a, what="the input") -> Operand:
    """Describe `a`: a device array (read in place) or anything numpy.asarray takes (made aligned, native)."""
    if _device_interface(a) is not None:
        code, shape, strides, _, readonly = _core.describe(a)
        return Operand(a, False, DTYPES[code], tuple(shape), tuple(strides), bool(readonly))
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {_ACCEPTED}; got {type(a).__name__}") from e
    try:
        dtype_code(arr.dtype)
    except TypeError:
        raise unsupported_dtype(arr.dtype, f" in {what}, a {_type_name(a)}", f" ({_ACCEPTED})") from None
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    itemsize = arr.dtype.itemsize
    span = sum(abs(s) * (e - 1) for s, e in zip(arr.strides, arr.shape)) + itemsize if arr.size else 0
    if not arr.flags.aligned or any(s % itemsize for s in arr.strides) or span > 2 * arr.nbytes + 4096:
        arr = np.array(arr, order="C", copy=True)  # aligned, and no upload of bytes the view skips
    return Operand(arr, True, arr.dtype, arr.shape, tuple(s // itemsize for s in arr.strides),
                   not arr.flags.writeable)


def out_operand(out, shape, what="the result"):
    """out= as an Operand, checked against the result's shape (ValueError, as NumPy) and writability."""
    o = operand(out, "out=") if not isinstance(out, np.ndarray) else Operand(
        out, True, out.dtype, out.shape, tuple(s // out.itemsize for s in out.strides), not out.flags.writeable)
    if tuple(o.shape) != tuple(shape):
        raise ValueError(f"out= has shape {tuple(o.shape)} but {what} has shape {tuple(shape)}")
    if o.readonly:
        raise ValueError("out= is read-only")
    return o


def to_host(result):
    """A DeviceArray (or any device array) as a NumPy array; host arrays pass through."""
    if isinstance(result, np.ndarray):
        return result
    get = getattr(result, "get", None)
    return get() if callable(get) else np.asarray(result)


def gather(x: Operand, dims, dtype=None) -> Operand:
    """A C-ordered copy of `x` walked along `dims` (layout.Dim, input strides first), cast to `dtype`."""
    dtype = np.dtype(dtype) if dtype is not None else x.dtype
    shape = tuple(d.extent for d in dims)
    strides = tuple(d.strides[0] for d in dims)
    if x.host:
        base = x.obj
        view = np.lib.stride_tricks.as_strided(base, shape=shape, strides=[s * base.itemsize for s in strides])
        arr = np.array(view, dtype=dtype, order="C", copy=True)
        return Operand(arr, True, arr.dtype, shape, c_strides(shape))
    if len(dims) > 8:
        raise ValueError(f"this layout needs a copy over {len(dims)} non-mergeable dimensions; at most 8 are "
                         "supported (make the device array contiguous first)")
    result = _core.copy_strided(x.obj, dtype_code(dtype), shape, strides, None, c_strides(shape))
    return Operand(result, False, dtype, shape, c_strides(shape))


def cast(x: Operand, dtype) -> Operand:
    """`x` converted to `dtype` with NumPy's casts, C-ordered, same shape."""
    return gather(x, [Dim(e, (s,)) for e, s in zip(x.shape, x.strides)], dtype)


def copy_into(out, out_desc: Operand, result):
    """Write `result` (host or device array of out's shape) into out= with NumPy's unsafe cast."""
    if out_desc.host:
        np.copyto(out, to_host(result), casting="unsafe")
        return out
    src = operand(result, "the result")  # host results are uploaded by copy_strided
    _core.copy_strided(src.obj, dtype_code(out_desc.dtype), out_desc.shape, src.strides, out, out_desc.strides)
    return out
