"""Operands: what the one intake (``_core.intake``, src/operand.c) made of an input, a where= mask or an out=,
and the copies that prepare a layout the kernels cannot read directly (a cast, a gather into C order), each
one run of a copy plan through the one runner.  Dtype codes and NumPy's result dtypes live here too."""
from __future__ import annotations


import math
import os

import ml_dtypes
import numpy as np

from .. import _core
from .layout import Dim, c_strides
from .._registry import DTYPE_NAMES, DTYPE_TABLE, OP_NAMES

# bfloat16 is no NumPy builtin: ml_dtypes gives NumPy its dtype (a user dtype of kind 'V', no np.finfo)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = tuple(BFLOAT16 if name == "bfloat16" else np.dtype(name) for name in DTYPE_NAMES)  # gr_dtype code -> dtype
_CODES = {dt: code for code, dt in enumerate(DTYPES)}  # hot path: a dict lookup, not dtype.name
# the accumulator of the dtypes not accumulated in themselves (cuda/abi/dtypes.def: accumulate_as; float16 and
# bfloat16 in float32); the others accumulate in the result dtype
ACCUMULATOR = {DTYPES[d.code]: DTYPES[DTYPE_NAMES.index(d.accumulate_as)] for d in DTYPE_TABLE
               if d.accumulate_as != d.name}
# the dtype of a complex dtype's parts (cuda/abi/dtypes.def: real; complex64 -> float32)
COMPLEX_PART = {DTYPES[d.code]: DTYPES[DTYPE_NAMES.index(d.real)] for d in DTYPE_TABLE if d.kind == "COMPLEX"}
# NumPy's kind letter of each dtype by its kind in dtypes.def (bfloat16 a float, where ml_dtypes says 'V')
_KINDS = {DTYPES[d.code]: {"BOOL": "b", "INT": "i", "UINT": "u", "FLOAT": "f", "COMPLEX": "c"}[d.kind]
          for d in DTYPE_TABLE}
# What the dtype kinds NumPy cannot reduce hold, for the error message
_KIND_NAMES = {"O": "Python objects", "U": "str", "S": "bytes", "V": "void", "M": "datetime", "m": "timedelta"}

intake = _core.intake  # intake(obj, role="the input") -> _core.Operand


def unsupported_dtype(dt, where="", hint="") -> TypeError:
    """The error for a dtype gpureduce has no kernel for (the same words as the C intake's): the dtype first
    (the cause), then what works.  `where` says whose dtype it is; `hint` ends the message."""
    kind = "structured" if dt.fields is not None else _KIND_NAMES.get(dt.kind)
    return TypeError(f"unsupported dtype {dt}{f' ({kind})' if kind else ''}{where}: gpureduce reduces "
                     f"{', '.join(DTYPE_NAMES)}{hint}")


def dtype_kind(dt) -> str:
    """NumPy's kind letter of a dtype, with bfloat16 a float ('f') as float16 is: for the checks that ask whether
    a dtype is floating (ml_dtypes gives bfloat16 kind 'V'); the others may read dtype.kind."""
    return _KINDS.get(dt) or dt.kind


def finfo(dt):
    """numpy.finfo, which also knows bfloat16 (ml_dtypes.finfo)."""
    return ml_dtypes.finfo(dt) if dt == BFLOAT16 else np.finfo(dt)


def dtype_code(dt) -> int:
    """gr_dtype code of a NumPy dtype (any byte order), or TypeError naming the dtypes gpureduce knows."""
    code = _CODES.get(dt) if isinstance(dt, np.dtype) else None
    if code is not None:
        return code
    dt = np.dtype(dt)
    code = _CODES.get(dt)  # ml_dtypes.bfloat16 given as its scalar type
    if code is not None:
        return code
    if dt.fields is None and dt.kind in "biufc" and dt.name in DTYPE_NAMES:
        return DTYPE_NAMES.index(dt.name)
    raise unsupported_dtype(dt)


# NumPy's result dtype of each (kind, operator, input dtype) with dtype=None, from the one rule in the
# extension (gr_default_result_dtype), read once at import: bool and narrow ints sum to int64/uint64, ...
_RESULT_CODES = {(kind, op, code): _core.result_dtype(kind, op_code, code)
                 for kind in (_core.KIND_REDUCE, _core.KIND_SCAN)
                 for op_code, op in enumerate(OP_NAMES) for code in range(len(DTYPES))}


def default_dtype(op: str, dt, kind=_core.KIND_REDUCE) -> np.dtype:
    """NumPy's result dtype of `op` over `dt` with dtype=None."""
    code = _RESULT_CODES[kind, op, dtype_code(dt)]
    if code >= len(DTYPES):
        raise unsupported_dtype(np.dtype(dt), hint=f" ({op} has no kernel for it)")
    return DTYPES[code]


def is_default_result(kind, op: str, in_code: int, out_code: int) -> bool:
    """Whether `out_code` is NumPy's result dtype of `op` over `in_code` with dtype=None (the flat kernels' only)."""
    return _RESULT_CODES[kind, op, in_code] == out_code


def is_c_contiguous(x) -> bool:
    return x.size <= 1 or all(s == c for e, s, c in zip(x.shape, x.strides, c_strides(x.shape)) if e != 1)


_CHECKED_FROM = 1 << 30  # bytes from which a host copy first asks whether the host could hold it


def _fits_the_host(nbytes, what):
    """MemoryError naming the size when `what` is larger than the host's physical memory, before the copy starts
    (where the kernel overcommits, NumPy's allocation succeeds and the process is killed when the copy touches
    the pages).  Copies larger than the device are fine: host arrays stream through it (src/stream_host.c)."""
    if nbytes >= _CHECKED_FROM:
        try:
            total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return
        if nbytes > total > 0:
            raise MemoryError(f"{what} needs {nbytes} bytes ({nbytes / 2**30:.1f} GiB) of host memory, more than "
                              f"the host's {total / 2**30:.1f} GiB")


def is_dask_array(a):
    """A Dask array: gpureduce's functions hand it to gpureduce.dask (a lazy result, as numpy.sum gives) rather
    than let the intake compute it whole into host memory.  A module-name test: Dask need not be installed."""
    return type(a).__module__.startswith("dask.array")


def to_host(a):
    """A NumPy copy of device array `a` (host arrays and scalars pass through as arrays): each library's own copy,
    CuPy and gpureduce.DeviceArray ``.get()``, Numba ``.copy_to_host()``, PyTorch ``.cpu()`` (bfloat16 as
    ml_dtypes' bfloat16), any other ``__cuda_array_interface__`` exporter through a device copy of gpureduce's, a
    DLPack one through numpy.from_dlpack.  It waits for the array's stream."""
    if isinstance(a, (np.ndarray, np.generic)):
        return np.asarray(a)
    for fetch in ("get", "copy_to_host"):  # CuPy and gpureduce.DeviceArray; Numba
        method = getattr(a, fetch, None)
        if callable(method):
            return np.asarray(method())
    if callable(getattr(a, "cpu", None)) and callable(getattr(a, "numpy", None)):  # PyTorch
        t = a.detach().cpu()
        if str(getattr(t, "dtype", "")) == "torch.bfloat16":  # no NumPy bfloat16 in PyTorch: ml_dtypes' has its bits
            import torch

            return t.view(torch.int16).numpy().view(BFLOAT16)
        return t.numpy()
    if hasattr(a, "__cuda_array_interface__"):  # any other device array: a device copy made by gpureduce
        x = intake(a)
        return to_host(cast(x, x.dtype).obj)
    if hasattr(a, "__dlpack__") and not hasattr(a, "__array__"):
        return np.from_dlpack(a, device="cpu", copy=True)
    return np.asarray(a)


def copy_plan(x, dtype, shape, in_strides, out=None, out_strides=None):
    """The runner's plan of a strided copy of `x` (an Operand) with NumPy's cast into `out` (a device
    Operand written through `out_strides`) or into a new C-ordered array of `shape`."""
    shape = tuple(shape)
    return _core.Plan(kind=_core.KIND_COPY, launcher=_core.LAUNCH_COPY, result_dtype=dtype_code(dtype), a=x, out=out,
                      layout=(shape, tuple(in_strides), tuple(out_strides or c_strides(shape))), shape=shape)


def gather(x, dims, dtype=None):
    """A C-ordered copy of operand `x` walked along `dims` (layout.Dim, input strides first), cast to `dtype`,
    as a new Operand."""
    dtype = np.dtype(dtype) if dtype is not None else x.dtype
    shape = tuple(d.extent for d in dims)
    strides = tuple(d.strides[0] for d in dims)
    if x.host:
        _fits_the_host(math.prod(shape) * dtype.itemsize, "a C-ordered copy of the host input")
        base = x.array
        view = np.lib.stride_tricks.as_strided(base, shape=shape, strides=[s * base.itemsize for s in strides])
        return intake(np.array(view, dtype=dtype, order="C", copy=True))
    if len(dims) > 8:
        raise ValueError(f"this layout needs a copy over {len(dims)} non-mergeable dimensions; at most 8 are "
                         "supported (make the device array contiguous first)")
    return intake(_core.run(copy_plan(x, dtype, shape, strides)))


def cast(x, dtype):
    """Operand `x` converted to `dtype` with NumPy's casts, C-ordered, same shape."""
    return gather(x, [Dim(e, (s,)) for e, s in zip(x.shape, x.strides)], dtype)


def copy_into(out, out_desc, result):
    """Write `result` (a host or device array of out's shape) into out= (`out_desc` its Operand) with NumPy's
    unsafe cast; returns `out`."""
    if out_desc.host:
        np.copyto(out, to_host(result), casting="unsafe")
        return out
    src = intake(result, "the result")
    _core.run(copy_plan(src, out_desc.dtype, out_desc.shape, src.strides, out_desc, out_desc.strides))
    return out
