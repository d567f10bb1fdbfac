"""variant="exact" of dot and vdot (gpureduce/_planning/exact_dot.py) without a GPU: its float64 terms (products,
the float64 factors' split halves, the rationals past their reach) and its rounding of r1 (the terms' exact sum
rounded to float64) to float32, float16, bfloat16 and complex parts, with gpureduce's exact sum stood in for by
gpureduce._bounds.exact_result (the reference tests/test_exact_sum_cpu.py checks against fractions, and the GPU
tests hold the kernels to).  Each result is compared with the exact dot product, summed in fractions and rounded
once; the sets include sums that are float32 midpoints, and a hair above and below one, where r1 alone cannot say
which way to round."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gpureduce
from conftest import count_example
from gpureduce._bounds import exact_result, rational_rounded
from gpureduce._planning import exact_dot
from gpureduce._planning.operands import BFLOAT16


@pytest.fixture(autouse=True)
def host_exact_sum(monkeypatch):
    """gpureduce's exact sum of a float64 vector, on the host: the calls exact_dot makes, counted."""
    calls = []

    def reduce(op, terms, axis, dtype, out, keepdims, initial, where, variant):
        assert (op, axis, dtype, out, keepdims, where, variant) == ("sum", None, None, None, False, True, "exact")
        assert isinstance(terms, np.ndarray) and terms.dtype == np.float64 and terms.ndim == 1
        calls.append(initial)
        return exact_result("sum", terms, np.float64, None, True,
                            None if initial is exact_dot.NoValue else initial)[()]

    monkeypatch.setattr(exact_dot, "reduce", reduce)
    return calls


def exact_dot_product(x, y, dtype, conj=False):
    """The dot product in fractions, rounded once to `dtype` (a complex one: each part to its parts' dtype)."""
    x = np.asarray(x).astype(np.complex128 if dtype.kind == "c" else np.float64).ravel()
    y = np.asarray(y).astype(np.complex128 if dtype.kind == "c" else np.float64).ravel()
    if dtype.kind != "c":
        exact = sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x, y)), Fraction(0))
        return rational_rounded(exact, dtype)
    if conj:
        x = np.conj(x)
    re = sum((Fraction(a.real) * Fraction(b.real) - Fraction(a.imag) * Fraction(b.imag) for a, b in zip(x, y)),
             Fraction(0))
    im = sum((Fraction(a.real) * Fraction(b.imag) + Fraction(a.imag) * Fraction(b.real) for a, b in zip(x, y)),
             Fraction(0))
    part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    return dtype.type(complex(float(rational_rounded(re, part)), float(rational_rounded(im, part))))


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("side", [1, -1, 0])
def test_a_midpoint_goes_the_way_of_the_rest(host_exact_sum, side):
    """1 + 2^-24 is halfway between float32's 1 and 1 + 2^-23, and r1 for 1 + 2^-24 +- 2^-80 too (2^-80 is below
    float64's half ulp at 1): the rest's sign decides, a second exact sum; a true tie rounds to even (1.0)."""
    x = np.array([1.0, 2.0**-24, 2.0**-40], np.float32)
    y = np.array([1.0, 1.0, side * 2.0**-40], np.float32)
    got = gpureduce.dot(x, y, variant="exact")
    want = {1: np.float32(1 + 2.0**-23), -1: np.float32(1.0), 0: np.float32(1.0)}[side]
    assert same(got, want) and same(got, exact_dot_product(x, y, np.dtype(np.float32))), (got, want)
    assert len(host_exact_sum) == 2, "a midpoint r1 asks for the rest"


def test_no_midpoint_takes_one_sum(host_exact_sum):
    x = np.linspace(-3, 7, 1001, dtype=np.float32)
    assert same(gpureduce.dot(x, x[::-1].copy(), variant="exact"), exact_dot_product(x, x[::-1], np.dtype(np.float32)))
    assert len(host_exact_sum) == 1


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # (a stand-in only)
@given(data=st.data(), dtype=st.sampled_from(["float32", "float16", "bfloat16", "complex64", "float64",
                                              "complex128"]),
       conj=st.booleans())
def test_any_vectors_give_the_exact_dot_rounded_once(host_exact_sum, data, dtype, conj):
    """Any finite values (subnormals, extremes, cancellations), dot and vdot, against the dot in fractions: float64
    ones through the split halves, or in rationals on the host where a product is beyond the split's reach."""
    dt = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    n = data.draw(st.integers(0, 9), label="n")
    wide = dt in (np.float64, np.complex128)
    part = np.float64 if wide else np.float32
    finite = st.floats(width=64 if wide else 32, allow_nan=False, allow_infinity=False)
    def vector(label):
        re = np.array(data.draw(st.lists(finite, min_size=n, max_size=n), label=label), part)
        if dt.kind == "c":
            im = np.array(data.draw(st.lists(finite, min_size=n, max_size=n), label=label + " imag"), part)
            v = np.empty(n, dt)
            v.real, v.imag = re, im
            return v
        with np.errstate(over="ignore"):
            v = re.astype(dt)
        return np.where(np.isfinite(v.astype(np.float64)), v, dt.type(1))
    x, y = vector("x"), vector("y")
    got = (gpureduce.vdot if conj else gpureduce.dot)(x, y, variant="exact")
    want = exact_dot_product(x, y, dt, conj=conj and dt.kind == "c")
    assert same(got, want), (x, y, got, want)
    count_example()


def test_nan_inf_integers_and_what_it_refuses(host_exact_sum):
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    assert np.isnan(gpureduce.dot(np.array([inf, 1], np.float32), np.array([0, 1], np.float32), variant="exact"))
    assert gpureduce.dot(np.array([inf, 1], np.float32), np.array([1, 1], np.float32), variant="exact") == inf
    assert np.isnan(gpureduce.dot(np.array([nan], np.float32), np.array([1], np.float32), variant="exact"))
    big = np.full(4, 3e38, np.float32)
    assert gpureduce.dot(big, big, variant="exact") == inf  # beyond float32's range, exactly summed in float64
    out = np.zeros((), np.float32)
    assert gpureduce.dot(np.ones(3, np.float32), np.ones(3, np.float32), out=out, variant="exact") is out
    assert out == 3
    asked = len(host_exact_sum)
    with pytest.raises(ValueError, match="not aligned"):
        gpureduce.dot(np.ones(3, np.float32), np.ones(4, np.float32), variant="exact")
    assert len(host_exact_sum) == asked  # refused before any sum


def test_float64_halves_extremes_and_non_finite(host_exact_sum):
    """float64: the halves' products for ordinary magnitudes (one exact sum), rationals on the host past the split's
    reach (no sum), IEEE's NaN and infinities where a factor is not finite."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(300) * 1e10, rng.standard_normal(300) * 1e-7
    assert same(gpureduce.dot(x, y, variant="exact"), exact_dot_product(x, y, np.dtype(np.float64)))
    assert len(host_exact_sum) == 1
    for big in ([1e300, 3.0, -1e300], [2.0**-1000, 1.0, 2.0**-60]):
        v = np.array(big)
        asked = len(host_exact_sum)
        want = exact_dot_product(v, v[::-1], np.dtype(np.float64))
        assert same(gpureduce.dot(v, v[::-1].copy(), variant="exact"), want)
        assert len(host_exact_sum) == asked, "beyond the split: summed on the host"
    one = np.ones(2)
    assert np.isnan(gpureduce.dot(np.array([np.inf, 1.0]), np.array([0.0, 1.0]), variant="exact"))
    assert gpureduce.dot(np.array([np.inf, 1.0]), one, variant="exact") == np.inf
    assert np.isnan(gpureduce.dot(np.array([np.inf, -np.inf]), one, variant="exact"))
    c = np.array([1e200 + 1j, 1 - 1e-200j])
    assert same(gpureduce.vdot(c, c, variant="exact"), exact_dot_product(c, c, np.dtype(np.complex128), conj=True))


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # (a stand-in only)
@given(data=st.data())
def test_float64_halves_give_the_exact_dot(host_exact_sum, data):
    """float64 vectors of every bit pattern within the split's reach (2^-450 .. 2^450, either sign, zeros): the
    halves' four products a pair, one exact sum, against the dot in fractions."""
    n = data.draw(st.integers(1, 12), label="n")
    magnitudes = st.floats(min_value=2.0**-450, max_value=2.0**450) | st.just(0.0)
    def vector(label):
        values = data.draw(st.lists(st.tuples(magnitudes, st.booleans()), min_size=n, max_size=n), label=label)
        return np.array([-m if negative else m for m, negative in values])
    x, y = vector("x"), vector("y")
    asked = len(host_exact_sum)
    got = gpureduce.dot(x, y, variant="exact")
    assert same(got, exact_dot_product(x, y, np.dtype(np.float64))), (x, y, got)
    assert len(host_exact_sum) == asked + 1, "one exact sum, no rationals on the host"
    count_example()
