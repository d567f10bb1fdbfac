"""The exact sum's arithmetic (cuda/primitives/exact_sum.cuh, issue 41) run on the host by
tests/c/exact_sum_check.cu, against the exact real sum rounded to nearest-even in Python's fractions: every array
summed three ways (one accumulator; per-piece windows whose digits are added, as blocks combine; the same pieces
walked backwards) must give exactly the correctly rounded bits, NaN and infinities as IEEE 754 says.  Hard cases
after Neal's and the ReproBLAS papers': huge cancellations, subnormals, the full exponent range, ties that round
differently under every order, sums that overflow only in the last step.  The same digits rounded the other ways
the header gives: divided by the count (the exact mean), and float32's digits rounded to float16 and bfloat16."""
import math
import os
import struct
import subprocess
import tempfile
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import count_example
from test_stream_host_cpu import nvcc_host_check

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
# mantissa bits (with the hidden one) and exponent bits of each format, and its bits' unsigned dtype
FORMATS = {np.dtype(np.float16): (11, 5, np.uint16), BFLOAT16: (8, 8, np.uint16),
           np.dtype(np.float32): (24, 8, np.uint32), np.dtype(np.float64): (53, 11, np.uint64)}


def correctly_rounded(values, dtype, divisor=1):
    """The exact sum of `values` divided by `divisor` (the count, for a mean; 0 gives NaN), rounded once to `dtype`
    (float16, bfloat16, float32 or float64; ties to even), NaN and infinities by IEEE 754's rules: a NumPy value of
    `dtype`, encoded by NumPy (ml_dtypes for bfloat16) from the exactly representable float64 value."""
    dtype = np.dtype(dtype)
    values = [float(v) for v in values]
    if divisor == 0 or any(math.isnan(v) for v in values) or (math.inf in values and -math.inf in values):
        return np.array(np.nan, dtype)[()]
    if math.inf in values or -math.inf in values:
        return np.array(math.inf if math.inf in values else -math.inf, dtype)[()]
    exact = sum((Fraction(v) for v in values), Fraction(0)) / divisor
    mantissa_bits, exponent_bits, _ = FORMATS[dtype]
    if exact == 0:  # +0.0, also of -0.0 elements alone: NumPy's sums start from +0.0, as math.fsum
        return np.array(0.0, dtype)[()]
    sign = -1 if exact < 0 else 1
    magnitude = abs(exact)
    bias = 2 ** (exponent_bits - 1) - 1
    lowest = 1 - bias - (mantissa_bits - 1)  # the smallest subnormal's exponent
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    while Fraction(2) ** e > magnitude:
        e -= 1
    while Fraction(2) ** (e + 1) <= magnitude:
        e += 1
    step = max(e - (mantissa_bits - 1), lowest)  # the unit in the last place at that binade
    m = round(magnitude / Fraction(2) ** step)  # Fraction's round: half to even
    value = Fraction(m) * Fraction(2) ** step
    if value >= Fraction(2) ** (bias + 1):
        return np.array(sign * math.inf, dtype)[()]
    return np.array(sign * float(value), dtype)[()]  # exactly representable: no rounding here


def bits(x, dtype):
    return int(np.array(x, dtype).view(FORMATS[np.dtype(dtype)][2]))


def same_bits(got, want, dtype):
    """`got` (bits) is `want`'s encoding, any NaN for a NaN."""
    if np.isnan(float(want)):
        return bool(np.isnan(float(np.array(got, FORMATS[np.dtype(dtype)][2]).view(dtype))))
    return got == bits(want, dtype)


def mean_cases(dtype):
    """(name, array) whose mean rounds at the edges: quotients below, at and above half the smallest subnormal, a
    tie made by the quotient, a sum beyond the range with a mean inside it."""
    info = np.finfo(dtype)
    tiny, big, eps = dtype(info.smallest_subnormal), dtype(info.max), np.spacing(dtype(1.0))
    return [
        ("a third of the smallest subnormal", np.array([tiny, 0, 0], dtype)),
        ("minus a third of it: -0.0, a negative result rounded to zero", np.array([-tiny, 0, 0], dtype)),
        ("half the smallest subnormal: a tie to zero", np.array([tiny, 0], dtype)),
        ("two thirds of the smallest subnormal", np.array([tiny, tiny, 0], dtype)),
        ("three halves of the smallest subnormal: a tie to two", np.array([3 * tiny, 0], dtype)),
        ("a tie made by halving", np.array([1.0 + eps, 1.0 + 2 * eps], dtype)),
        ("a tie made by quartering", np.array([1.0 + eps, 1.0 + eps, 1.0 + eps, 1.0 + 3 * eps], dtype)),
        ("a sum beyond the range, its mean the largest value", np.array([big, big], dtype)),
        ("the same negative", np.array([-big, -big, -big], dtype)),
        ("sevenths", np.array([1.0, eps, 2 * eps, 3 * eps, 0, 0, -tiny], dtype)),
    ]


def half_cases(target):
    """(name, float32 array) whose exact sum rounds to float16 or bfloat16 at its format's edges: ties each way, a
    tie broken by a bit far below, subnormals, the largest value and the tie above it (to infinity: the largest
    value's mantissa is odd)."""
    info = ml_dtypes.finfo(target)
    eps, tiny, big = float(info.eps), float(info.smallest_subnormal), float(info.max)
    half_ulp_at_max = 2.0 ** (info.maxexp - 1) * eps / 2
    return [(name, np.array(v, np.float32)) for name, v in [
        ("half format: a tie to even below", [1.0, eps / 2]),
        ("half format: a tie to even above", [1.0 + eps, eps / 2]),
        ("half format: a tie broken upwards", [1.0, eps / 2, 2.0 ** -60]),
        ("half format: a tie broken downwards", [1.0, eps / 2, -(2.0 ** -60)]),
        ("half format: negative", [-1.0, -eps / 2, -eps]),
        ("half format: the smallest subnormal", [tiny]),
        ("half format: a tiny negative sum rounds to -0.0", [-tiny / 4]),
        ("half format: float32's smallest negative subnormal, to -0.0", [-(2.0 ** -149)]),
        ("half format: half of it, a tie to zero", [tiny / 2]),
        ("half format: three halves of it, a tie to two", [3 * tiny / 2]),
        ("half format: half of it and a bit", [tiny / 2, tiny / 2 ** 20]),
        ("half format: the largest value", [big]),
        ("half format: the tie above it, to infinity", [big, half_ulp_at_max]),
        ("half format: just below that tie", [big, half_ulp_at_max, -half_ulp_at_max / 2 ** 10]),
        ("half format: beyond, cancelled", [big, big, -big]),
    ]]


@pytest.fixture(scope="module")
def exact_check(tmp_path_factory):
    return nvcc_host_check(tmp_path_factory, "exact_sum_check")


def cases(dtype):
    """(name, array) of the hard sets for `dtype`."""
    rng = np.random.default_rng(41 if dtype is np.float32 else 64)
    info = np.finfo(dtype)
    tiny = dtype(info.smallest_subnormal)
    big = info.max
    out = [
        ("empty", np.zeros(0, dtype)),
        ("one", np.array([1.5], dtype)),
        ("negative zeros", np.array([-0.0, -0.0, -0.0], dtype)),
        ("a positive zero among negative ones", np.array([-0.0, 0.0, -0.0], dtype)),
        ("cancellation of one pair to +0", np.array([-0.0, 1.0, -1.0], dtype)),
        ("zeros after a nonzero", np.array([2.5, -0.0, 0.0, -2.5, -0.0], dtype)),
        ("many zeros", np.concatenate([np.zeros(500, dtype), [dtype(3.0)], -np.zeros(500, dtype)])),
        ("normal", rng.standard_normal(5000).astype(dtype)),
        ("uniform", rng.random(5000).astype(dtype)),
        ("log-uniform", (10.0 ** rng.uniform(-6, 6, 5000)).astype(dtype)),
        ("full exponent range", (rng.choice([-1, 1], 4000) * np.ldexp(rng.random(4000) + 0.5,
                                 rng.integers(info.minexp - info.nmant, info.maxexp - 1, 4000))).astype(dtype)),
        ("cancellation to zero", np.concatenate([x := rng.standard_normal(2000).astype(dtype) * 1e20, -x])),
        ("cancellation to a tiny rest", np.array([big / 2, 1.0, -big / 2, tiny], dtype)),
        ("subnormals", (rng.integers(-2 ** 20, 2 ** 20, 3000) * tiny).astype(dtype)),
        ("ties", np.array([1.0, np.spacing(dtype(1.0)) / 2, np.spacing(dtype(1.0)) / 4, -np.spacing(dtype(1.0)) / 4],
                          dtype)),
        ("tie to even up", np.array([1.0, np.spacing(dtype(1.0)) * 1.5, np.spacing(dtype(1.0)) / 2 ** 30], dtype)),
        ("an exact tie, to even above", np.array([1.0, np.spacing(dtype(1.0)) * 1.5], dtype)),
        ("a tie after float64's rounding, above it exactly", np.array([1.0, np.spacing(dtype(1.0)) / 2, 2.0 ** -70],
                                                                       dtype)),
        ("a tie after float64's rounding, below it exactly", np.array([1.0, np.spacing(dtype(1.0)) * 1.5,
                                                                       -(2.0 ** -70)], dtype)),
        ("overflow at the end", np.array([big, big, -big], dtype)),
        ("overflow", np.array([big, big / 2], dtype)),
        ("max exactly", np.array([big / 2, big / 2], dtype)),
        ("nan", np.array([1.0, np.nan, 2.0], dtype)),
        ("inf", np.array([1.0, np.inf, -big], dtype)),
        ("-inf", np.array([np.inf * -1, 3.0], dtype)),
        ("inf - inf", np.array([np.inf, 1.0, -np.inf], dtype)),
        ("growing", np.ldexp(np.ones(200, dtype), np.arange(-100, 100))),
        ("shrinking", np.ldexp(np.ones(200, dtype), np.arange(100, -100, -1))),
        ("a small first element", np.concatenate([[tiny * 3], rng.standard_normal(1000).astype(dtype) * 1e30])),
        # a huge element moves a window's anchor past the bits it held: they must reach the digits
        ("bits below a moved anchor", np.array([1.0, np.spacing(dtype(1.0)) * 1.25, 2.0 ** 70, -(2.0 ** 70)], dtype)),
        ("a whole window moved out", np.array([tiny * 3, np.ldexp(1.0, info.maxexp - 28),
                                               -np.ldexp(1.0, info.maxexp - 28)], dtype)),
        ("many small, then a large one", np.concatenate([np.full(1000, 1 + np.spacing(dtype(1.0)), dtype),
                                                        [dtype(2.0 ** 60), dtype(-(2.0 ** 60))]])),
    ]
    for seed in range(20):  # random mixes of every magnitude, sign and count
        r = np.random.default_rng(seed)
        n = int(r.integers(1, 400))
        e = r.integers(info.minexp - info.nmant, info.maxexp - 8, n)
        out.append((f"mix {seed}", (r.choice([-1, 1], n) * np.ldexp(r.random(n) + 0.5, e)).astype(dtype)))
    return out


def run_records(exact_check, records, dtype):
    """The check's output for records of (array, pieces): lists of ints (bits), one per record."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "records.bin")
        with open(path, "wb") as f:
            for x, pieces in records:
                f.write(struct.pack("<iiq", np.dtype(dtype).itemsize, pieces, x.size))
                f.write(np.ascontiguousarray(x, dtype).tobytes())
        done = subprocess.run([str(exact_check), path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-4000:]
    return [[int(h, 16) for h in line.split()[1:]] for line in done.stdout.split("\n") if line]


def run_check(exact_check, named, dtype):
    """The check's output line for each of the (name, array) records, as lists of ints (bits), each array cut
    into 1 to 7 pieces."""
    lines = run_records(exact_check, [(x, 1 + i % 7) for i, (_, x) in enumerate(named)], dtype)
    assert len(lines) == len(named)
    return lines


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_every_way_gives_the_correctly_rounded_sum(exact_check, dtype):
    named = cases(dtype)
    bad = []
    for (name, x), got in zip(named, run_check(exact_check, named, dtype)):
        want = correctly_rounded(x, dtype)
        if not all(same_bits(g, want, dtype) for g in got[:3]):
            bad.append(f"{name}: want {want!r} ({bits(want, dtype):x}), got {[format(g, 'x') for g in got[:3]]}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_the_digits_divided_by_the_count_give_the_correctly_rounded_mean(exact_check, dtype):
    """round_quotient_bits: the exact sum divided by the count, rounded once (the exact mean's rounding; a remainder
    that breaks a tie, quotients below the smallest subnormal)."""
    named = cases(dtype) + mean_cases(dtype)
    bad = []
    for (name, x), got in zip(named, run_check(exact_check, named, dtype)):
        want = correctly_rounded(x, dtype, divisor=x.size)
        if not same_bits(got[3], want, dtype):
            bad.append(f"{name}: want {want!r} ({bits(want, dtype):x}), got {got[3]:x}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_float32_digits_round_to_a_half_format(exact_check, target):
    """round_bits<ExactHalf> and <ExactBfloat16>: float32 elements' exact sum rounded once to float16 or bfloat16
    (what an exact sum of half-precision inputs rounds through): the float32 hard sets and the half formats' own
    ties, subnormals and overflow."""
    dtype = np.dtype(target) if target == "float16" else BFLOAT16
    named = cases(np.float32) + half_cases(dtype)
    bad = []
    for (name, x), got in zip(named, run_check(exact_check, named, np.float32)):
        want = correctly_rounded(x, dtype)
        if not same_bits(got[4 if target == "float16" else 5], want, dtype):
            bad.append(f"{name}: want {want!r} ({bits(want, dtype):x}), got {got[4 if target == 'float16' else 5]:x}")
    assert not bad, "\n".join(bad)


REFERENCE_CASES = [("float32 sum", np.float32, np.float32, False), ("float64 sum", np.float64, np.float64, False),
                   ("float32 mean", np.float32, np.float32, True), ("float64 mean", np.float64, np.float64, True),
                   ("float16 sum", np.float32, np.float16, False), ("bfloat16 sum", np.float32, BFLOAT16, False)]


@pytest.mark.parametrize("data,target,mean", [c[1:] for c in REFERENCE_CASES], ids=[c[0] for c in REFERENCE_CASES])
def test_the_testing_reference_is_correctly_rounded(data, target, mean):
    """gpureduce.testing holds the variant "exact" to gpureduce._bounds.correctly_rounded_sum's bits (math.fsum's
    passes give the exact sum, rounded once): it must be the exact sum (or mean) rounded once, on every hard set."""
    from gpureduce._bounds import correctly_rounded_sum

    target = np.dtype(target)
    extra = mean_cases(data) if mean else half_cases(target) if target.itemsize == 2 else []
    bad = []
    for name, x in cases(data) + extra:
        want = correctly_rounded(x, target, divisor=x.size if mean else 1)
        got = correctly_rounded_sum(x, target, count=x.size if mean else None)
        if got.dtype != target or not same_bits(bits(got, target), want, target):
            bad.append(f"{name}: want {want!r}, got {got!r}")
    assert not bad, "\n".join(bad)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_any_order_and_any_split_give_the_same_correctly_rounded_bits(exact_check, data, dtype):
    """The property: any floats (subnormals, infinities and NaN among them), in any order, cut into any number of
    pieces summed apart and added as digits, give the correctly rounded sum's bits, and the digits the correctly
    rounded mean's (and, for float32, float16's and bfloat16's roundings of the sum)."""
    width = 32 if dtype is np.float32 else 64
    x = np.array(data.draw(st.lists(st.floats(width=width), max_size=200), label="values"), dtype)
    shuffled = x[data.draw(st.permutations(range(x.size)), label="order")] if x.size else x
    pieces = data.draw(st.integers(1, 9), label="pieces")
    first, again = run_records(exact_check, [(x, 1), (shuffled, pieces)], dtype)
    want = correctly_rounded(x, dtype)
    assert all(same_bits(g, want, dtype) for g in first[:3] + again[:3]), (x, want, first, again)
    mean = correctly_rounded(x, dtype, divisor=x.size)
    assert same_bits(first[3], mean, dtype) and same_bits(again[3], mean, dtype), (x, mean, first[3], again[3])
    if dtype is np.float32:
        for column, target in ((4, np.dtype(np.float16)), (5, BFLOAT16)):
            half = correctly_rounded(x, target)
            assert same_bits(first[column], half, target) and same_bits(again[column], half, target), (x, target)
    count_example()


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]),
       op=st.sampled_from(["sum", "mean", "nansum", "nanmean"]))
def test_the_testing_reference_along_axes_rounds_each_slice(data, dtype, op):
    """gpureduce._bounds.exact_result along axes (what tests/test_exact_axes_gpu.py and gpureduce.testing hold the
    exact axis kernels to): each slice's elements that `where` takes (a nan form: not its NaNs), `initial` one more
    element of a sum, summed exactly in fractions and rounded once (a mean: divided by the count taken)."""
    from gpureduce._bounds import exact_result

    width = 32 if dtype is np.float32 else 64
    shape = tuple(data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=3), label="shape"))
    n = int(np.prod(shape))
    x = np.array(data.draw(st.lists(st.floats(width=width), min_size=n, max_size=n), label="values"),
                 dtype).reshape(shape)
    axis = data.draw(st.sampled_from([None] + list(range(len(shape))) + [tuple(range(len(shape)))]), label="axis")
    where = data.draw(st.one_of(st.just(True), st.lists(st.booleans(), min_size=n, max_size=n).map(
        lambda m: np.array(m, bool).reshape(shape))), label="where")
    initial = data.draw(st.none() | st.floats(width=width), label="initial") if op.endswith("sum") else None
    got = exact_result(op, x, np.dtype(dtype), axis, where, initial)
    axes = tuple(range(x.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    kept = [i for i in range(x.ndim) if i not in axes]
    assert got.shape == tuple(x.shape[i] for i in kept)
    mask = np.broadcast_to(np.asarray(where, bool), x.shape)
    for index in np.ndindex(*got.shape):
        full = [slice(None)] * x.ndim
        for i, k in zip(kept, index):
            full[i] = k
        values = [float(v) for v, taken in zip(x[tuple(full)].ravel(), mask[tuple(full)].ravel()) if taken]
        if op.startswith("nan"):
            values = [v for v in values if not math.isnan(v)]
        if initial is not None:
            values.append(float(initial))
        want = correctly_rounded(values, dtype, divisor=len(values) if op.endswith("mean") else 1)
        assert same_bits(bits(got[index], dtype), want, dtype), (op, x, axis, where, initial, index, got[index], want)
    count_example()


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dtype=st.sampled_from([np.complex64, np.complex128]),
       op=st.sampled_from(["sum", "mean", "nansum", "nanmean"]))
def test_the_testing_reference_of_complex_rounds_each_part(data, dtype, op):
    """exact_result of a complex array (what tests/test_exact_complex_gpu.py and gpureduce.testing hold variant
    "exact" of complex inputs to): each part's exact sum in fractions rounded once (a mean: over the count taken);
    a nan form drops an element from both parts where either part is NaN, as NumPy's isnan of a complex number."""
    from gpureduce._bounds import exact_result

    part = np.float32 if dtype is np.complex64 else np.float64
    width = 32 if dtype is np.complex64 else 64
    n = data.draw(st.integers(0, 12), label="n")
    x = np.empty(n, dtype)
    x.real = np.array(data.draw(st.lists(st.floats(width=width), min_size=n, max_size=n), label="real"), part)
    x.imag = np.array(data.draw(st.lists(st.floats(width=width), min_size=n, max_size=n), label="imag"), part)
    initial = data.draw(st.none() | st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e30),
                        label="initial") if op.endswith("sum") else None
    got = exact_result(op, x, np.dtype(dtype), None, True, initial)
    assert got.dtype == dtype and got.shape == ()
    keep = [i for i in range(n) if not (op.startswith("nan") and np.isnan(x[i]))]
    start = (None, None) if initial is None else (complex(initial).real, complex(initial).imag)
    for value, values, first in ((got.real, x.real, start[0]), (got.imag, x.imag, start[1])):
        taken = [float(values[i]) for i in keep]
        if first is not None:
            taken.append(float(part(first)))
        want = correctly_rounded(taken, part, divisor=len(taken) if op.endswith("mean") else 1)
        assert same_bits(bits(np.asarray(value)[()], part), want, part), (op, x, initial, got, want)
    count_example()
