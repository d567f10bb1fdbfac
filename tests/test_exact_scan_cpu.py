"""The exact cumsum's arithmetic (cuda/primitives/exact_scan.cuh, issue 41) run on the host by
tests/c/exact_scan_check.cu the way its kernels run it, tile by tile (a tile's prefix as digits, its own running sum
in 128 bits at its smallest element's lowest bit, the undecided elements and the tiles that do not fit rounded from
digits): every element must be its exact prefix sum rounded once, against gpureduce._bounds.correctly_rounded_cumsum,
itself checked here against Python's fractions.  The hard sets are the exact sum's (test_exact_sum_cpu.py): huge
cancellations, subnormals, the full exponent range, ties, overflow, NaN and infinities, -0.0."""
import os
import struct
import subprocess
import tempfile
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gpureduce._bounds import correctly_rounded_cumsum, rational_rounded
from test_exact_sum_cpu import BFLOAT16, FORMATS, cases
from test_stream_host_cpu import nvcc_host_check

TILES = [1, 3, 64, 4096]
EXCLUSIVE, NAN_FORM, TO_FLOAT16, TO_BFLOAT16 = 1, 2, 4, 8


@pytest.fixture(scope="module")
def scan_check(tmp_path_factory):
    return nvcc_host_check(tmp_path_factory, "exact_scan_check")


def run_scans(scan_check, records, dtype):
    """(fast, undecided, slow, bits) of each record (array, tile, flags) the check scanned."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "records.bin")
        with open(path, "wb") as f:
            for x, tile, flags in records:
                f.write(struct.pack("<iiiq", np.dtype(dtype).itemsize, tile, flags, x.size))
                f.write(np.ascontiguousarray(x, dtype).tobytes())
        done = subprocess.run([str(scan_check), path], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line.split() for line in done.stdout.split("\n") if line]
    assert len(lines) == len(records)
    return [(int(w[0]), int(w[1]), int(w[2]), [int(h, 16) for h in w[3:]]) for w in lines]


def same_scan_bits(got, want):
    """Bits `got` are `want`'s elements (any NaN for a NaN): the indices where they differ."""
    want_bits = want.view(FORMATS[want.dtype][2]).astype(np.uint64)
    got = np.array(got, np.uint64)
    nan = np.isnan(want.astype(np.float64))
    got_nan = np.isnan(got.astype(FORMATS[want.dtype][2]).view(want.dtype).astype(np.float64))
    return np.flatnonzero(np.where(nan, ~got_nan, got != want_bits))


@pytest.mark.parametrize("flags", [0, EXCLUSIVE, NAN_FORM], ids=["inclusive", "exclusive", "nan form"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_every_prefix_is_correctly_rounded_under_every_tile(scan_check, dtype, flags):
    named = cases(dtype)
    records = [(x, tile, flags) for _, x in named for tile in TILES]
    bad, paths, typical_slow = [], np.zeros(3, np.int64), []
    for (x, tile, _), (fast, undecided, slow, got) in zip(records, run_scans(scan_check, records, dtype)):
        name = next(n for n, y in named if y is x)
        paths += (fast, undecided, slow)
        # typical data: no tile too wide for 128 bits, and an element left undecided (a tile summed in 64 bits keeps
        # its anchor above P's lowest bit, and a prefix within 2^24 units of it then needs P's low bits) rare
        if name in ("normal", "uniform", "log-uniform") and (slow or undecided > x.size // 1000):
            typical_slow.append(f"{name}, tile {tile}: {undecided} undecided, {slow} slow of {x.size}")
        want = correctly_rounded_cumsum(x, dtype, exclusive=bool(flags & EXCLUSIVE), nan_form=bool(flags & NAN_FORM))
        wrong = same_scan_bits(got, want)
        if wrong.size:
            i = int(wrong[0])
            bad.append(f"{name}, tile {tile}: {wrong.size} wrong, first at {i}: want {want[i]!r}, got {got[i]:x}")
    assert not bad, "\n".join(bad[:20])
    # typical data takes the fast paths (but for a rare undecided element); the hard sets reach both slow paths
    assert not typical_slow, typical_slow
    assert paths[1] > 0 and paths[2] > 0, paths


@pytest.mark.parametrize("target,flag", [("float16", TO_FLOAT16), ("bfloat16", TO_BFLOAT16)])
def test_float32_prefixes_round_to_a_half_format(scan_check, target, flag):
    """A float16 or bfloat16 cumsum: the elements widened to float32 exactly, every prefix rounded once to the
    half format (its own ties, subnormals and overflow among the float32 hard sets)."""
    dtype = np.dtype(target) if target == "float16" else BFLOAT16
    named = [(n, x) for n, x in cases(np.float32)]
    records = [(x, tile, flag) for _, x in named for tile in (1, 64, 4096)]
    bad = []
    for (x, tile, _), (_, _, _, got) in zip(records, run_scans(scan_check, records, np.float32)):
        want = correctly_rounded_cumsum(x, dtype)
        wrong = same_scan_bits(got, want)
        if wrong.size:
            bad.append(f"tile {tile}: {wrong.size} wrong, first at {int(wrong[0])}")
    assert not bad, "\n".join(bad[:20])


def test_the_reference_is_each_prefix_in_fractions():
    """correctly_rounded_cumsum against each prefix summed in fractions and rounded (rational_rounded), the special
    values by NumPy's cumsum (which is exact on these small integers' sums)."""
    rng = np.random.default_rng(7)
    x = np.ldexp(rng.standard_normal(300), rng.integers(-60, 60, 300))
    want = [rational_rounded(sum(map(Fraction, x[:i + 1].tolist()), Fraction(0)), np.dtype(np.float32))
            for i in range(x.size)]
    assert np.array_equal(correctly_rounded_cumsum(x, np.float32), np.array(want, np.float32))
    small = np.array([-0.0, -0.0, 1.0, -1.0, -0.0, np.inf, 2.0, -np.inf, 1.0])
    got = correctly_rounded_cumsum(small, np.float64)
    assert np.array_equal(got, np.cumsum(small), equal_nan=True)
    assert np.array_equal(np.signbit(got[:5]), np.signbit(np.cumsum(small)[:5]))
    assert np.array_equal(correctly_rounded_cumsum(small, np.float64, exclusive=True)[1:], got[:-1], equal_nan=True)
    nan = np.array([1.0, np.nan, 2.0])
    assert np.array_equal(correctly_rounded_cumsum(nan, np.float64, nan_form=True), np.nancumsum(nan))


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_any_values_any_tile(scan_check, data, dtype):
    """Any finite or special values (hypothesis), any tile: the correctly rounded prefixes."""
    width = 32 if dtype is np.float32 else 64
    values = data.draw(st.lists(st.floats(width=width, allow_nan=True, allow_infinity=True), min_size=1,
                                max_size=60))
    x = np.array(values, dtype)
    tile = data.draw(st.integers(1, 70))
    flags = data.draw(st.sampled_from([0, EXCLUSIVE, NAN_FORM]))
    (_, _, _, got), = run_scans(scan_check, [(x, tile, flags)], dtype)
    want = correctly_rounded_cumsum(x, dtype, exclusive=bool(flags & EXCLUSIVE), nan_form=bool(flags & NAN_FORM))
    assert same_scan_bits(got, want).size == 0, (x, tile, flags, got)


def test_narrow_tiles_round_as_the_128_bit_path(scan_check):
    """exact_prefix_bits64 (a float32 tile summed in 64 bits: the hardware's int64 conversion where the result is
    normal) gives exact_prefix_bits's bits and undecided cases on 5 million prefixes: around powers of two, the
    targets' 2^kMantissa (where 2M + 1 stands for a sticky prefix) and 2^62, both signs, subnormal to overflowing."""
    done = subprocess.run([str(scan_check), "--rounding"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [tuple(map(int, line.split())) for line in done.stdout.split("\n") if line]
    assert len(rows) == 4 and all(bad == 0 and 0 < undecided < cases for bad, undecided, cases in rows), rows



def test_complex_scans_are_each_parts_exact_scan():
    """gpureduce/_planning/exact_complex.py's scans (no GPU: `scan` is the rational reference of a real part): the
    parts go to the real exact scan as float32 or float64 in NumPy's accumulate dtype (dtype=, else out='s, else
    the input's), exclusive passed on, nancumsum's elements with a NaN part zeroed first, the result assembled part
    by part (an infinite part leaves the other alone), out= written and returned, the wrong out= refused as NumPy."""
    from gpureduce._planning.exact_complex import scan_exact_complex, scans_exact_complex
    from gpureduce._planning.operands import intake

    calls = []

    def real_scan(op, part, axis, dtype, out, exclusive, variant):
        calls.append((op, np.dtype(dtype), exclusive, variant))
        assert op == "sum" and out is None and axis is None
        return correctly_rounded_cumsum(np.asarray(part).reshape(-1), np.dtype(dtype), exclusive=exclusive)

    x = np.array([[1 + 2j, np.nan + 1j, 3 - 1j], [np.inf + 2j, 2 + np.nan * 1j, 1e-30 + 1e30j]], np.complex64)
    operand = intake(x)
    assert scans_exact_complex("sum", operand, None, "exact") and scans_exact_complex("nansum", operand, None, "exact")
    assert not scans_exact_complex("sum", operand, None, "auto")
    assert not scans_exact_complex("max", operand, None, "exact")
    assert scans_exact_complex("sum", operand, np.float32, "exact")  # (the real parts': the next test)
    assert not scans_exact_complex("sum", intake(x.real.copy()), None, "exact")

    def expect(z, dtype, exclusive=False):
        part = np.float32 if np.dtype(dtype) == np.complex64 else np.float64
        want = np.empty(z.size, dtype)
        want.real = correctly_rounded_cumsum(z.real.reshape(-1).astype(part), part, exclusive=exclusive)
        want.imag = correctly_rounded_cumsum(z.imag.reshape(-1).astype(part), part, exclusive=exclusive)
        return want

    def same(got, want):
        return got.dtype == want.dtype and all(
            np.array_equal(g, w, equal_nan=True) and np.array_equal(np.signbit(g), np.signbit(w))
            for g, w in ((got.real, want.real), (got.imag, want.imag)))

    got = scan_exact_complex(real_scan, "sum", x, operand, None, None, None, False, "exact")
    assert same(got, expect(x, np.complex64)) and calls[-1] == ("sum", np.dtype(np.float32), False, "exact")
    assert got[3].imag == 4 and np.isnan(got[3].real)  # the NaN real part left the imaginary sums alone
    zeroed = np.where(np.isnan(x), 0, x)
    got = scan_exact_complex(real_scan, "nansum", x, operand, None, None, None, True, "exact")
    assert same(got, expect(zeroed, np.complex64, exclusive=True)) and calls[-1][2] is True
    got = scan_exact_complex(real_scan, "sum", x, operand, None, np.complex128, None, False, "exact")
    assert same(got, expect(x, np.complex128)) and calls[-1][1] == np.float64
    out = np.zeros(6, np.complex128)
    assert scan_exact_complex(real_scan, "sum", x, operand, None, None, out, False, "exact") is out
    assert same(out, expect(x, np.complex128))
    with pytest.raises(TypeError, match="same_kind"):
        scan_exact_complex(real_scan, "sum", x, operand, None, None, np.zeros(6, np.float64), False, "exact")
    with pytest.raises(ValueError, match="wrong size"):
        scan_exact_complex(real_scan, "sum", x, operand, None, None, np.zeros(5, np.complex64), False, "exact")


def test_complex_exact_scans_are_routed_to_the_parts(monkeypatch):
    """gpureduce.cumsum / nancumsum of a complex array under variant="exact" reach exact_complex.py's scan (no
    GPU: the route alone), with the call's arguments; another variant, or a real array, does not."""
    import gpureduce
    from gpureduce._planning import calls

    seen = []
    monkeypatch.setattr(calls, "scan_exact_complex",
                        lambda scan, op, a, x, axis, dtype, out, exclusive, variant: seen.append(
                            (op, axis, dtype, out, exclusive, variant)) or "routed")
    z = np.ones((2, 3), np.complex64)
    assert gpureduce.cumsum(z, variant="exact") == "routed"
    assert gpureduce.nancumsum(z, axis=1, dtype=np.complex128, exclusive=True, variant="exact") == "routed"
    assert seen == [("sum", None, None, None, False, "exact"), ("nansum", 1, np.complex128, None, True, "exact")]
    for call in (lambda: gpureduce.cumsum(z), lambda: gpureduce.cumsum(z.real.copy(), variant="exact")):
        try:
            call()
        except Exception:  # (no GPU here: the kernels' error)
            pass
    assert len(seen) == 2


def test_complex_input_with_a_real_dtype_keeps_the_real_parts():
    """NumPy's cumsum / sum of a complex array with a real dtype= casts the elements first (ComplexWarning) and keeps
    their real parts; a nan form zeroes (drops) an element with a NaN in either part first.  Under variant="exact":
    the exact scan (reduction) of the real parts, in that dtype, the warning pointing at the caller's line."""
    from numpy.exceptions import ComplexWarning

    from gpureduce._planning.exact_complex import reduce_exact_complex, scan_exact_complex
    from gpureduce._planning.operands import intake

    x = np.array([1 + 2j, complex(np.nan, 1), complex(3, np.nan), 0.5 - 1j], np.complex64)
    operand = intake(x)
    calls = []

    def real_call(op, part, axis, dtype, out, *rest):
        calls.append((op, np.asarray(part).copy(), dtype, rest[-1]))
        return "done"

    for op, want in (("sum", [1, np.nan, 3, 0.5]), ("nansum", [1, 0, 0, 0.5])):
        with pytest.warns(ComplexWarning, match="discards the imaginary part") as caught:
            assert scan_exact_complex(real_call, op, x, operand, None, np.float32, None, False, "exact") == "done"
        assert caught[0].filename == __file__
        got_op, part, dtype, variant = calls[-1]
        assert got_op == "sum" and dtype == np.float32 and variant == "exact"
        assert np.array_equal(part, np.array(want, np.float32), equal_nan=True)
    with pytest.warns(ComplexWarning):
        reduce_exact_complex(real_call, "nansum", x, operand, None, np.float64, None, False, None, True, "exact")
    got_op, part, dtype, variant = calls[-1]
    assert got_op == "sum" and dtype == np.float64 and np.array_equal(part, x.real.astype(np.float32), equal_nan=True)
