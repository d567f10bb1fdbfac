"""The exact sum's arithmetic (cuda/primitives/exact_sum.cuh, issue 41) run on the host by
tests/c/exact_sum_check.cu, against the exact real sum rounded to nearest-even in Python's fractions: every array
summed three ways (one accumulator; per-piece windows whose digits are added, as blocks combine; the same pieces
walked backwards) must give exactly the correctly rounded bits, NaN and infinities as IEEE 754 says.  Hard cases
after Neal's and the ReproBLAS papers': huge cancellations, subnormals, the full exponent range, ties that round
differently under every order, sums that overflow only in the last step."""
import math
import struct
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from test_stream_host_cpu import nvcc_host_check

FORMATS = {np.float32: (24, 8, "<f", "<I"), np.float64: (53, 11, "<d", "<Q")}


def correctly_rounded(values, dtype):
    """The exact sum of `values` rounded to `dtype` (ties to even), NaN and infinities by IEEE 754's rules."""
    values = [float(v) for v in values]
    if any(math.isnan(v) for v in values) or (math.inf in values and -math.inf in values):
        return dtype(np.nan)
    if math.inf in values or -math.inf in values:
        return dtype(math.inf if math.inf in values else -math.inf)
    exact = sum((Fraction(v) for v in values), Fraction(0))
    mantissa_bits, exponent_bits, _, _ = FORMATS[dtype]
    if exact == 0:  # +0.0, also of -0.0 elements alone: NumPy's sums start from +0.0, as math.fsum
        return dtype(0.0)
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
        return dtype(sign * math.inf)
    return dtype(sign * float(value)) if dtype is np.float64 else np.float32(sign * float(value))


def bits(x, dtype):
    _, _, fmt, ifmt = FORMATS[dtype]
    (v,) = struct.unpack(ifmt, struct.pack(fmt, x))
    return v


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_every_way_gives_the_correctly_rounded_sum(exact_check, dtype, tmp_path):
    named = cases(dtype)
    path = tmp_path / "cases.bin"
    with open(path, "wb") as f:
        for i, (_, x) in enumerate(named):
            f.write(struct.pack("<iiq", np.dtype(dtype).itemsize, 1 + i % 7, x.size))
            f.write(np.ascontiguousarray(x).tobytes())
    done = subprocess.run([str(exact_check), str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.split("\n")
    bad = []
    for (name, x), line in zip(named, lines):
        want = correctly_rounded(x, dtype)
        got = [int(h, 16) for h in line.split()[1:]]
        if np.isnan(want):
            ok = all(np.isnan(np.array([g], dtype=np.uint32 if dtype is np.float32 else np.uint64).view(dtype)[0])
                     for g in got)
        else:
            ok = got == [bits(want, dtype)] * 3
        if not ok:
            bad.append(f"{name}: want {bits(want, dtype) if not np.isnan(want) else 'nan':x} got "
                       f"{[format(g, 'x') for g in got]}" if not np.isnan(want) else f"{name}: want nan got {got}")
    assert len(lines) > len(named) - 1
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_the_testing_reference_is_correctly_rounded(dtype):
    """gpureduce.testing holds the variant "exact" to gpureduce._bounds.correctly_rounded_sum's bits (math.fsum, a
    float32 tie settled by the sign of the exact rest): it must be the exact sum rounded once, on every hard set."""
    from gpureduce._bounds import correctly_rounded_sum

    bad = []
    for name, x in cases(dtype):
        want, got = correctly_rounded(x, dtype), correctly_rounded_sum(x, dtype)
        same = (np.isnan(want) and np.isnan(got)) or (got.dtype == np.dtype(dtype) and bits(got, dtype) == bits(want, dtype))
        if not same:
            bad.append(f"{name}: want {want!r}, got {got!r}")
    assert not bad, "\n".join(bad)
