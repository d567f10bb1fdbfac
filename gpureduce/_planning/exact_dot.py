"""variant="exact" of dot and vdot (issue 41): the exact sum of the products, rounded once to the result's dtype.

A product of two float32 numbers (float16, bfloat16) is a float64 number exactly: 48 significant bits of 53, an
exponent well inside float64's range.  So the exact dot product is the exact sum of the float64 products: the
input's library forms them (one new float64 vector; a complex dot's parts, ac - bd and ad + bc, each a vector of
twice the length), and gpureduce's exact sum of that vector gives r1, the exact sum rounded once to float64.  r1
rounded again to the result's dtype is the exact sum's rounding, except where r1 is a midpoint of that dtype (a
tie between two of its values, every one a float64 number): then the side is the sign of the rest, r2, the exact
sum of the products and -r1 (exact's initial=) rounded once.  (A float64 r1 nearer than a midpoint never reaches
one: r1 is the float64 nearest the exact sum.)  The rounding is decided on the host, so an exact dot of device
arrays waits for its first sum; the result is a 0-d array of the inputs' kind, as the other variants give.

float64 and complex128 products are not float64 numbers (106 significant bits): refused, naming auto.  Integer and
bool dots are exact in any order: auto's kernels run them (NumPy's wrapping answer).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._bounds import rational_rounded
from .._registry import variants
from .calls import reduce
from .libraries import library_of
from .numpy_rules import NoValue
from .plan import dot_operands, prepare_dot, run
from .results import host_in_kind_of

_EXACT_PRODUCTS = ("float16", "bfloat16", "float32", "complex64")  # products that are float64 numbers
_BELOW_EVERY_SPACING = Fraction(1, 2**1200)  # far below float64's smallest subnormal, 2^-1074


def is_exact_variant(variant):
    return isinstance(variant, str) and any(v.name == variant and "exact" in v.properties
                                            for v in variants(kind="reduce"))


def exact_dot(a, b, out, *, conj, flatten, variant):
    """dot(a, b) (vdot: `conj`, `flatten`) under an exact variant."""
    name = "vdot" if flatten else "dot"
    x, y, rt, _ = dot_operands(a, b, flatten=flatten, out=out)
    if rt.kind in "biu":
        return run(prepare_dot(a, b, conj=conj, flatten=flatten, out=out, variant="auto"))
    if rt.name not in _EXACT_PRODUCTS:
        raise ValueError(f"variant {variant!r} of {name} takes {', '.join(_EXACT_PRODUCTS)} vectors (their products "
                         f"are float64 numbers, summed exactly), not {rt}: use variant 'auto'")
    xa, ya = (x.array, y.array) if x.host else (a, b)
    lib = library_of(xa, f"gpureduce.{name}(..., variant={variant!r})",
                     "it forms the products in float64 in the inputs' own library")
    with np.errstate(invalid="ignore"):  # inf * 0: NaN, quietly, as numpy.dot
        if rt.kind == "c":
            (xr, xi), (yr, yi) = ([lib.float64_vector(p) for p in lib.parts(lib.astype(v, rt))] for v in (xa, ya))
            if conj:
                xi = -xi
            real_terms, imag_terms = lib.concatenate([xr * yr, -(xi * yi)]), lib.concatenate([xr * yi, xi * yr])
            value = np.asarray(complex(_exact_sum(real_terms, rt, variant), _exact_sum(imag_terms, rt, variant)), rt)
        else:
            value = np.asarray(_exact_sum(lib.float64_vector(xa) * lib.float64_vector(ya), rt, variant), rt)
    scalar = complex(value) if rt.kind == "c" else float(value)  # (exactly: value is the rounded one)
    if out is not None:
        if lib.name == "torch":
            out.fill_(scalar)
        else:
            out[...] = value
        return out
    if x.host:
        return value[()]
    if lib.name == "torch":  # (torch.as_tensor takes no bfloat16 NumPy array: ml_dtypes')
        return lib.torch.tensor(scalar, dtype=getattr(lib.torch, rt.name), device=a.device)
    return host_in_kind_of(a, value)


def _exact_sum(terms, rt, variant):
    """The exact sum of float64 vector `terms` rounded once to `rt` (a complex dtype: to its parts' dtype), as a
    Python float."""
    target = np.dtype(np.float32) if rt == np.complex64 else rt
    r1 = float(reduce("sum", terms, None, None, None, False, NoValue, True, variant))  # waits for the device
    if not math.isfinite(r1):
        return r1
    below, above = (rational_rounded(Fraction(r1) + side * _BELOW_EVERY_SPACING, target) for side in (-1, 1))
    if below == above:  # not a midpoint of `target`: r1's rounding is the exact sum's (an exact zero's +0.0)
        return float(rational_rounded(Fraction(r1), target))
    rest = float(reduce("sum", terms, None, None, None, False, -r1, True, variant))  # the sign of sum - r1
    return float(above if rest > 0 else below if rest < 0 else rational_rounded(Fraction(r1), target))
