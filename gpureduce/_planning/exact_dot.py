"""variant="exact" of dot and vdot (issue 41): the exact sum of the products, rounded once to the result's dtype.

The exact dot product is the exact sum of float64 terms that the input's library forms (NumPy, CuPy, PyTorch,
JAX), summed by gpureduce's exact sum:

* float16, bfloat16, float32 (complex64's parts): each product is a float64 number exactly (48 significant bits of
  53, its exponent well inside float64's range), one term a pair;
* float64 (complex128's parts): each factor is split into two halves of 26 significant bits (Veltkamp: c = x *
  (2^27 + 1), high = c - (c - x), low = x - high), and the four products of halves are float64 numbers exactly,
  four terms a pair; where a factor beyond 2^995 would overflow the split, or a product below 2^-969 would lose
  bits of the halves' products (or beyond 2^1000, overflow), the pairs are summed on the host in rationals
  instead (exact, slow; such magnitudes are rare); a NaN or infinite factor gives the sum of the plain products
  (NaN, or the infinity), as IEEE says;
* a complex dot's parts are ac - bd and ad + bc, each the terms of two dots.

The exact sum gives r1, the terms' sum rounded once to float64: a float64 result.  Rounded again to a narrower
dtype, r1 gives the exact sum's rounding except where it is a midpoint of that dtype (a tie between two of its
values, every one a float64 number): then the side is the sign of the rest, the exact sum of the terms and -r1
(exact's initial=) rounded once.  (A float64 r1 nearer than a midpoint never reaches one: r1 is the float64 nearest
the exact sum.)  The rounding is decided on the host, so an exact dot of device arrays waits for its sums; the
result is a 0-d array of the inputs' kind, as the other variants give.  Integer and bool dots are exact in any
order: auto's kernels run them (NumPy's wrapping answer).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._bounds import rational_rounded
from .calls import reduce
from .libraries import library_of
from .numpy_rules import NoValue
from .operands import COMPLEX_PART, to_host
from .plan import dot_operands, prepare_dot, run
from .results import host_in_kind_of

_BELOW_EVERY_SPACING = Fraction(1, 2**1200)  # far below float64's smallest subnormal, 2^-1074
_SPLIT = 134217729.0  # 2^27 + 1
_SPLITS_BELOW, _PRODUCTS_FROM, _PRODUCTS_BELOW = 2.0**995, 2.0**-969, 2.0**1000


def exact_dot(a, b, out, *, conj, flatten, variant):
    """dot(a, b) (vdot: `conj`, `flatten`) under an exact variant."""
    name = "vdot" if flatten else "dot"
    x, y, rt, _ = dot_operands(a, b, flatten=flatten, out=out)
    if rt.kind in "biu":
        return run(prepare_dot(a, b, conj=conj, flatten=flatten, out=out, variant="auto"))
    xa, ya = (x.array, y.array) if x.host else (a, b)
    fn, needs = f"gpureduce.{name}(..., variant={variant!r})", "it forms the products' terms in the inputs' own library"
    lib = library_of(xa, fn, needs)
    if library_of(ya, fn, needs).name != lib.name:
        raise TypeError(f"variant {variant!r} of {name} forms the products in the inputs' own library: pass two "
                        f"arrays of one library, not a {type(xa).__module__}.{type(xa).__name__} and a "
                        f"{type(ya).__module__}.{type(ya).__name__}")
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0: NaN, quietly, as numpy.dot
        if rt.kind == "c":
            part = COMPLEX_PART[rt]
            (xr, xi), (yr, yi) = ([lib.float64_vector(p) for p in lib.parts(lib.astype(v, rt))] for v in (xa, ya))
            if conj:
                xi = -xi
            real = _rounded_dot(lib, [(xr, yr), (-xi, yi)], part, variant)
            imag = _rounded_dot(lib, [(xr, yi), (xi, yr)], part, variant)
            value = np.asarray(complex(real, imag), rt)
        else:
            value = np.asarray(_rounded_dot(lib, [(lib.float64_vector(xa), lib.float64_vector(ya))], rt, variant),
                               rt)
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


def _rounded_dot(lib, pairs, target, variant):
    """sum(x * y) over float64 vector pairs (x, y) of `pairs`, exactly, rounded once to `target`: a Python float."""
    if target != np.float64:  # the factors' products are float64 numbers
        return _exact_sum(lib.concatenate([x * y for x, y in pairs]), target, variant)
    if lib.any_true(_any_of([~lib.is_finite(v) for pair in pairs for v in pair])):
        return _exact_sum(lib.concatenate([x * y for x, y in pairs]), target, variant)  # NaN, or the infinity
    if lib.any_true(_any_of([_beyond_splitting(x, y) for x, y in pairs])):
        exact = sum((Fraction(float(u)) * Fraction(float(v)) for x, y in pairs
                     for u, v in zip(to_host(x).tolist(), to_host(y).tolist())), Fraction(0))
        return float(rational_rounded(exact, target))
    terms = []
    for x, y in pairs:
        (xh, xl), (yh, yl) = _halves(x), _halves(y)
        terms += [xh * yh, xh * yl, xl * yh, xl * yl]
    return _exact_sum(lib.concatenate(terms), target, variant)


def _halves(v):
    """float64 `v` as high + low, each of at most 26 significant bits (|v| below 2^995)."""
    c = v * _SPLIT
    high = c - (c - v)
    return high, v - high


def _beyond_splitting(x, y):
    """Where the halves' products of a pair would not be exact: a factor the split overflows, a product so small
    that the halves' products fall below float64's subnormals, or one beyond float64's range."""
    ax, ay = abs(x), abs(y)
    product = ax * ay
    return (ax > _SPLITS_BELOW) | (ay > _SPLITS_BELOW) | (product > _PRODUCTS_BELOW) | \
        ((product < _PRODUCTS_FROM) & (ax != 0) & (ay != 0))


def _any_of(masks):
    result = masks[0]
    for m in masks[1:]:
        result = result | m
    return result


def _exact_sum(terms, target, variant):
    """The exact sum of float64 vector `terms` rounded once to `target`, as a Python float."""
    r1 = float(reduce("sum", terms, None, None, None, False, NoValue, True, variant))  # waits for the device
    if not math.isfinite(r1):
        return r1
    below, above = (rational_rounded(Fraction(r1) + side * _BELOW_EVERY_SPACING, target) for side in (-1, 1))
    if below == above:  # not a midpoint of `target`: r1's rounding is the exact sum's (an exact zero's +0.0)
        return float(rational_rounded(Fraction(r1), target))
    rest = float(reduce("sum", terms, None, None, None, False, -r1, True, variant))  # the sign of sum - r1
    return float(above if rest > 0 else below if rest < 0 else rational_rounded(Fraction(r1), target))
