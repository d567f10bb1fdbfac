"""variant="exact" of complex arrays (issue 41): sum, mean, nansum and nanmean, each part correctly rounded, and
cumsum and nancumsum, each part of each element its exact prefix sum rounded once.

A complex sum is the sum of the real parts and the sum of the imaginary parts, so each part is its own exact sum
(or exact mean: the part's exact sum over the count), rounded once: the bits NumPy's float64 reference of each part
rounds to, whatever the launch, layout or batch.  The parts are read in place as the strided views the input's
library gives (NumPy, CuPy, PyTorch; JAX copies them), one exact reduction each, and the result is assembled from
them by that library, part by part with no arithmetic (an infinite part leaves the other alone).  nansum and
nanmean drop an element whose real or imaginary part is NaN, as NumPy's (its isnan of a complex number): a where=
mask the library makes, since each part alone cannot see the other's NaN.  Cost: two launches, and each reads all
of the input's memory once (the parts interleave), where a real exact sum reads it once.  The scans likewise: one
exact scan of each part, assembled; nancumsum scans a copy with each element that has a NaN part set to 0 (NumPy's).
A real dtype= keeps the real parts alone, with NumPy's ComplexWarning (NumPy casts the elements first).
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
from numpy.exceptions import ComplexWarning

from .._registry import EXACT_OPS

EXACT_SCAN_OPS = ("sum", "nansum")  # cumsum and nancumsum: the exact scan's (GR_OPS_EXACT_SCAN_KERNEL)
from .libraries import library_of
from .numpy_rules import NoValue, given
from .operands import COMPLEX_PART, intake
from .plan import is_exact_variant


def runs_exact_complex(op, x, dtype, variant):
    """Whether reduce(op, ...) of operand `x` is an exact reduction of a complex array (a real dtype= too: the
    real part's, as NumPy casts)."""
    return x.dtype.kind == "c" and op in EXACT_OPS and is_exact_variant(variant)


def scans_exact_complex(op, x, dtype, variant):
    """Whether scan(op, ...) of operand `x` is an exact cumsum or nancumsum of a complex array (a real dtype= too:
    the real part's, as NumPy casts)."""
    return x.dtype.kind == "c" and op in EXACT_SCAN_OPS and is_exact_variant(variant)


def _real_dtype(dtype):
    """Whether dtype= asks a complex input for a real result: NumPy casts the elements first, with its
    ComplexWarning, and keeps their real parts."""
    if dtype is None or np.dtype(dtype).kind == "c":
        return False
    warn_discarded_imaginary()
    return True


def warn_discarded_imaginary():
    """NumPy's ComplexWarning of a complex input cast to a real dtype, at the caller's line (eager and Dask)."""
    warnings.warn("Casting complex values to real discards the imaginary part", ComplexWarning,
                  stacklevel=_outside_the_package())


def _outside_the_package():
    """The stacklevel, for a warning issued by the caller of this function, of the first frame outside gpureduce:
    the user's line, however many of the package's functions lie between (the public function, Dask's chunk)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(root + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def scan_exact_complex(scan, op, a, x, axis, dtype, out, exclusive, variant):
    """scan(op, a, ...) of complex operand `x` (read from `a`) under an exact variant, by `scan` of each part.
    The result's dtype is NumPy's accumulate's: dtype=, else out='s, else the input's."""
    whole = x.array if x.host else a
    name = "cumsum" if op == "sum" else "nancumsum"
    lib = library_of(whole, f"gpureduce.{name}(..., variant={variant!r}) of a complex array",
                     "it takes the parts from the input's own library")
    if _real_dtype(dtype):  # (a nan form: an element with a NaN part is 0, then its real part)
        return scan("sum", lib.parts(lib.zero_where(lib.is_nan(whole), whole) if op == "nansum" else whole)[0],
                    axis, dtype, out, exclusive, variant)
    out_dtype = None if out is None else intake(out, "out=").dtype
    if out_dtype is not None and out_dtype.kind != "c":
        raise TypeError(f"Cannot cast the complex result of {name} to out's dtype {out_dtype} with casting rule "
                        "'same_kind'")
    result_dtype = np.dtype(dtype) if dtype is not None else out_dtype if out_dtype is not None else x.dtype
    if op == "nansum":
        whole = lib.zero_where(lib.is_nan(whole), whole)  # a copy: each part alone cannot see the other's NaN
    parts = [scan("sum", part, axis, COMPLEX_PART[result_dtype], None, exclusive, variant)
             for part in lib.parts(whole)]
    if x.host:
        parts = [np.asarray(p) for p in parts]
    result = lib.complex_of(*parts)
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"provided out is the wrong size for the accumulation: found {tuple(out.shape)}, expected "
                         f"{tuple(result.shape)}")
    return _copy_into(out, result, lib)


def reduce_exact_complex(reduce, op, a, x, axis, dtype, out, keepdims, initial, where, variant):
    """reduce(op, a, ...) of complex operand `x` (read from `a`) under an exact variant, by `reduce` of each part."""
    whole = x.array if x.host else a
    lib = library_of(whole, f"gpureduce.{op}(..., variant={variant!r}) of a complex array",
                     "it takes the parts from the input's own library")
    real, imag = lib.parts(whole)
    if _real_dtype(dtype):  # (a nan form drops an element with a NaN part, then sums real parts)
        if op.startswith("nan"):
            where = lib.both(~lib.is_nan(whole), where)
        return reduce(op.removeprefix("nan"), real, axis, dtype, out, keepdims, initial, where, variant)
    out_dtype = None if out is None else intake(out, "out=").dtype
    if dtype is not None:
        result_dtype = np.dtype(dtype)
    elif out_dtype is not None and out_dtype.kind == "c":
        result_dtype = np.promote_types(x.dtype, out_dtype)  # NumPy's loop for (input, out), as the planner's
    else:
        result_dtype = x.dtype
    part_dtype = COMPLEX_PART[result_dtype]
    if op.startswith("nan"):
        where = lib.both(~lib.is_nan(whole), where)
    parts = []
    for part, value in ((real, "real"), (imag, "imag")):
        start = NoValue
        if given(initial):
            start = None if initial is None else getattr(complex(initial), value)
        parts.append(reduce(op.removeprefix("nan"), part, axis, part_dtype, None, keepdims, start, where, variant))
    if x.host:
        parts = [np.asarray(p) for p in parts]
    result = lib.complex_of(*parts)
    if out is not None:
        return _into(out, out_dtype, result, lib, op)
    if x.host and result.ndim == 0:
        return result[()]
    return result


def _into(out, out_dtype, result, lib, op):
    """`result` copied into the caller's out= (NumPy's casting rule for a reduction's out: the same kind)."""
    if out_dtype.kind != "c":
        raise TypeError(f"Cannot cast the complex result of {op} to out's dtype {out_dtype} with casting rule "
                        "'same_kind'")
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"output parameter for reduction operation {op} has the wrong shape: found "
                         f"{tuple(out.shape)}, expected {tuple(result.shape)}")
    return _copy_into(out, result, lib)


def _copy_into(out, result, lib):
    if lib.name == "torch":
        out.copy_(result)
    else:
        out[...] = result
    return out
