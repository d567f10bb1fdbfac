"""Every scan variant x operator x inclusive/exclusive x dtype x size against NumPy, on the GPU.

Integers must match exactly (wrap-around included); floats must lie within gpureduce.testing.error_bound, an
element-wise bound around a float64 cumulative reference; min/max are exact and propagate NaN.  The matrix
reads fresh random data on the device (CuPy) and writes into a poisoned out= (NaN / a sentinel), so an
element a kernel forgets to write is caught.  Host inputs and outputs, the DeviceArray result, the other
device libraries, streams, misaligned and overlapping pointers and > 2**31 elements have tests of their own.

The bound cannot see a few lost elements among millions of zero-mean values, so float cumsum and cumprod are also
run on exact-valued data (conftest.exact_float_data) and compared bitwise, element by element; cummax and cummin
run on random walks (the running extreme keeps changing) with a unique extreme placed in turn at the first and
last elements and at every block and tile edge, so a lost carry or tail shows.
"""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import gpureduce
from conftest import (DEVICE_LIBRARIES, edge_positions, extreme_poison, one_size_cached, unique_extremes,
                      walk_data)
from gpureduce.testing import SCANS, assert_matches_numpy, error_bound, for_all_variants

pytestmark = pytest.mark.gpu

SCAN = gpureduce.variants(kind="scan")
VARIANTS = [v.name for v in SCAN]
DETERMINISTIC = [v.name for v in SCAN if v.deterministic]
OPS = ["sum", "prod", "min", "max"]
FUNCTION = {op: name for name, op in SCANS.items()}  # "sum" -> "cumsum"
NUMPY = {"sum": np.cumsum, "prod": np.cumprod, "min": np.minimum.accumulate, "max": np.maximum.accumulate}
# warp (32), block (1024) and tile (4096; 8192 for the look-back tiles of 4-byte types) boundaries, one past 2**16,
# one past the look-back windows (32 or 64 tiles: 2**17 .. 2**19 elements), and two large odd sizes
SIZES = [0, 1, 2, 31, 32, 33, 1023, 1024, 1025, 4095, 4096, 4097, 8191, 8193, 65535, 65537, 2**18 + 1, 2**19 + 1,
         2**20 + 7, 2**24 + 3]
# `sequential` is a single thread walking the array: at 2**24 elements its 32 cases alone would take about a
# minute, and its code path is the same at every length, so it stops at 2**20 + 7.
SEQUENTIAL_MAX_N = 2**20 + 7
# ... and in the running-extreme test, which scans each input once per edge position (~40 at the large sizes, each
# twice), it stops at 4097: one thread has no tiles nor carries, and 2**16 elements already take it 8 ms a scan.
SEQUENTIAL_EXTREME_MAX_N = 4097
SEED = int(np.random.SeedSequence().entropy % 2**32)  # fresh data every session; printed on failure

EXERCISED = set()


def _cupy():
    return pytest.importorskip("cupy")


def _cases():
    """The matrix, size by size (outermost), so that one size's inputs are cached at a time."""
    for n in SIZES:
        for dtype in ("float32", "float64", "int32", "int64"):
            for op in OPS:
                for exclusive in (False, True):
                    for v in SCAN:
                        if op not in v.ops or dtype not in v.dtypes:
                            continue
                        if v.name == "sequential" and n > SEQUENTIAL_MAX_N:
                            continue
                        kind = "excl" if exclusive else "incl"
                        yield pytest.param(v.name, op, exclusive, dtype, n, id=f"{v.name}-{op}-{kind}-{dtype}-{n}")


# ---------------------------------------------------------------- inputs and references

def make_host(family, dtype, n, rng):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if family == "prod":  # near 1 with random signs: no overflow or underflow over 2**24 factors
            x = (1 + rng.uniform(-2.0**-10, 2.0**-10, n)) * rng.choice([-1.0, 1.0], n)
        else:  # signed: partial sums wander like sqrt(i), far below the cumsum(|x|) the bound scales with
            x = rng.uniform(-1, 1, n)
        return x.astype(dt)
    if family == "prod":  # odd factors keep a wrapped product non-trivial
        return rng.choice(np.array([-7, -5, -3, -1, 1, 3, 5, 7], dtype=dt), n)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)  # int64 sums wrap, like NumPy's


_cache = {}


def case(op, dtype, n):
    """Input (host and CuPy), NumPy's result dtype, and the inclusive reference (+ float bound) for `op`.

    Made once per (data family, dtype, size) and session: sum, min and max share their data."""
    family = "prod" if op == "prod" else "sum"
    key = (family, dtype, n)
    if key not in _cache:
        if any(k[2] != n for k in _cache):
            _cache.clear()  # the matrix runs size by size: keep one size in memory
        rng = np.random.default_rng([SEED, n, int(family == "prod"), np.dtype(dtype).num])
        host = make_host(family, dtype, n, rng)
        _cache[key] = {"host": host, "dev": _cupy().asarray(host), "refs": {}}
    entry = _cache[key]
    if op not in entry["refs"]:
        x = entry["host"]
        dtype_out = NUMPY[op](x[:0]).dtype
        if x.dtype.kind == "f" and op in ("sum", "prod"):
            ref = NUMPY[op](x.astype(np.float64))
            bound = error_bound(FUNCTION[op], x, dtype_out, reference=ref)  # one bound for every variant
        else:
            ref, bound = NUMPY[op](x), None
        entry["refs"][op] = (dtype_out, ref, bound)
    return entry, entry["refs"][op]


def identity(op, dtype):
    dt = np.dtype(dtype)
    if op in ("sum", "prod"):
        return dt.type(op == "prod")
    if dt.kind == "f":
        return dt.type(np.inf if op == "min" else -np.inf)
    return dt.type(np.iinfo(dt).max if op == "min" else np.iinfo(dt).min)


def poison(dtype):
    dt = np.dtype(dtype)
    return dt.type(np.nan) if dt.kind == "f" else dt.type(np.iinfo(dt).min + 0x5A5A5A5)


def check(got, op, dtype_out, ref, bound, exclusive, what=""):
    """`got` (host) against the inclusive reference, shifted for an exclusive scan."""
    what = f"{what} (seed {SEED})"
    assert got.dtype == dtype_out, f"result dtype {got.dtype}, NumPy gives {dtype_out} {what}"
    assert got.shape == ref.shape, f"result shape {got.shape}, expected {ref.shape} {what}"
    if exclusive and ref.size:
        first = got[0]
        assert first == identity(op, dtype_out), f"exclusive scan starts with {first!r}, not the identity {what}"
        got, ref, bound = got[1:], ref[:-1], None if bound is None else bound[:-1]
    if bound is None:
        same = (got == ref) | (np.isnan(got) & np.isnan(ref)) if got.dtype.kind == "f" else got == ref
        if not same.all():
            i = int(np.argmin(same))
            pytest.fail(f"element {i + exclusive}: got {got[i]!r}, expected {ref[i]!r} {what}")
    else:
        err = np.abs(got.astype(np.float64) - ref)
        ok = err <= bound  # NaN (poison left behind) fails
        if not ok.all():
            i = int(np.argmin(ok))
            pytest.fail(f"element {i + exclusive}: got {got[i]!r}, float64 reference {ref[i]!r}, "
                        f"|error| {err[i]:.3g} > bound {bound[i]:.3g} {what}")


# ---------------------------------------------------------------- the matrix

@pytest.mark.parametrize("variant, op, exclusive, dtype, n", list(_cases()))
def test_matches_numpy(variant, op, exclusive, dtype, n):
    cupy = _cupy()
    entry, (dtype_out, ref, bound) = case(op, dtype, n)
    out = cupy.full(n, poison(dtype_out), dtype=dtype_out)
    result = gpureduce.scan(op, entry["dev"], out=out, exclusive=exclusive, variant=variant)
    assert result is out
    check(cupy.asnumpy(out), op, dtype_out, ref, bound, exclusive, f"{variant} {op} {dtype} n={n}")
    EXERCISED.add(variant)


# ---------------------------------------------------------------- exactly known answers

def _exact_cases():
    """(variant, op, exclusive, dtype, n) of the exact cumsum / cumprod, size by size; `sequential` beyond
    SEQUENTIAL_MAX_N only for the float32 inclusive cumsum (the one whose data is hardest to keep exact: +-1)."""
    cases = []
    for n in SIZES:
        for dtype in ("float32", "float64"):
            for op in ("sum", "prod"):
                for exclusive in (False, True):
                    for v in SCAN:
                        if op not in v.ops or dtype not in v.dtypes:
                            continue
                        if v.name == "sequential" and n > SEQUENTIAL_MAX_N and (op, exclusive, dtype) != (
                                "sum", False, "float32"):
                            continue
                        kind = "excl" if exclusive else "incl"
                        cases.append(pytest.param(v.name, op, exclusive, dtype, n,
                                                  id=f"{v.name}-cum{op}-{kind}-{dtype}-{n}"))
    assert len(cases) >= 8 * len(SIZES), f"only {len(cases)} exact scan cases"
    return cases


_exact = {}


def exact_case(op, dtype, n):
    """{"dev": CuPy input, "ref": CuPy inclusive scan (NumPy's float64 cumsum / cumprod cast to dtype: exact),
    "seed"} for conftest.exact_float_data, one size in memory at a time, fresh every session."""
    def make(host, seed):
        wide = NUMPY[op](host.astype(np.float64))
        ref = wide.astype(dtype)
        assert (ref.astype(np.float64) == wide).all(), "the data is not exact in this dtype (a test bug)"
        cupy = _cupy()
        return {"dev": cupy.asarray(host), "ref": cupy.asarray(ref), "seed": seed}

    return one_size_cached(_exact, (op, dtype, n), make)


def _first_bits_mismatch(got, want):
    """(index, count) of the first element whose bits differ, or None: compared on the device."""
    cupy = _cupy()
    bits = {4: cupy.uint32, 8: cupy.uint64}[got.dtype.itemsize]
    differ = got.view(bits) != want.view(bits)
    count = int(cupy.count_nonzero(differ))
    return (int(cupy.argmax(differ)), count) if count else None


@pytest.mark.parametrize("variant, op, exclusive, dtype, n", _exact_cases())
def test_exact_float_data_bitwise(variant, op, exclusive, dtype, n):
    """Float cumsum / cumprod of data whose every partial result is exact: every element equals NumPy's float64
    scan cast to the dtype, bit for bit (written into a NaN-poisoned out=).  A lost or duplicated element shifts
    every later one; a tile scanned without its carry (a sum of positive-mostly values, a product whose prefixes
    are all +-2**e, e >= 1) is off throughout; the error bound would let hundreds of lost elements pass."""
    cupy = _cupy()
    entry = exact_case(op, dtype, n)
    ref = entry["ref"]
    out = cupy.full(n, np.nan, dtype=dtype)
    result = gpureduce.scan(op, entry["dev"], out=out, exclusive=exclusive, variant=variant)
    assert result is out
    want = ref
    if exclusive and n:
        want = cupy.empty_like(ref)
        want[0] = identity(op, dtype)
        want[1:] = ref[:-1]
    bad = _first_bits_mismatch(out, want)
    if bad is not None:
        i, count = bad
        pytest.fail(f"cum{op} variant={variant} exclusive={exclusive} {dtype} n={n}: {count} of {n} elements "
                    f"differ; first at {i}: got {out[i].item()!r}, exact {want[i].item()!r} "
                    f"(data seed {entry['seed']})")


# ---------------------------------------------------------------- running extremes: unique values at the edges

EXTREME_DTYPES = ["int8", "int32", "uint64", "float32", "float64"]


def _running_extreme_cases():
    """(variant, op, dtype, n), size by size: every variant that scans the dtype (the others take only their own
    dtypes); `sequential` up to SEQUENTIAL_EXTREME_MAX_N."""
    cases = []
    for n in SIZES:
        if n == 0:
            continue
        for dtype in EXTREME_DTYPES:
            for op in ("max", "min"):
                for v in SCAN:
                    if op not in v.ops or not (dtype in v.dtypes or "axes" in v.properties):
                        continue
                    if v.name == "sequential" and n > SEQUENTIAL_EXTREME_MAX_N:
                        continue
                    cases.append(pytest.param(v.name, op, dtype, n, id=f"{v.name}-{FUNCTION[op]}-{dtype}-{n}"))
    assert len(cases) >= 2 * (len(SIZES) - 1) * len(EXTREME_DTYPES), f"only {len(cases)} running extreme cases"
    return cases


_walks = {}


def walk_case(dtype, n):
    """{"host", "dev", "ref": {op: CuPy running extreme of the walk, NumPy's}, "seed"} for conftest.walk_data,
    one size in memory at a time, fresh every session."""
    key = (dtype, n)
    if key not in _walks:
        if any(k[1] != n for k in _walks):
            _walks.clear()
        seed = int(np.random.SeedSequence().entropy % 2**32)
        print(f"random seed of the {dtype} n={n} walk: {seed}")  # shown when the case fails
        host = walk_data(dtype, n, np.random.default_rng(seed))
        cupy = _cupy()
        _walks[key] = {"host": host, "dev": cupy.asarray(host), "seed": seed,
                       "ref": {op: cupy.asarray(NUMPY[op](host)) for op in ("max", "min")}}
    return _walks[key]


@pytest.mark.parametrize("variant, op, dtype, n", _running_extreme_cases())
def test_running_extreme_unique_at_every_edge(variant, op, dtype, n):
    """cummax / cummin of a random walk with one unique extreme placed in turn at 0, 1, n // 2, n - 2, n - 1 and
    either side of the warp, block and tile edges (conftest.edge_positions), inclusive and exclusive, into a
    poisoned out=: before the extreme, NumPy's running extreme of the walk (np.maximum / np.minimum.accumulate),
    from it on the extreme itself.  A tile scanned without its carry shows the walk's local extreme where the
    extreme should be; a lost last element leaves the last output poisoned or short of the extreme."""
    cupy = _cupy()
    entry = walk_case(dtype, n)
    host, dev, ref = entry["host"], entry["dev"], entry["ref"][op]
    lowest, highest = unique_extremes(dtype)
    value = highest if op == "max" else lowest
    extreme = cupy.asarray(np.array([value], dtype))
    first = identity(op, dtype)
    out = cupy.empty(n, dtype=dtype)
    for p in edge_positions(n):
        dev[p:p + 1] = extreme
        try:
            for exclusive in (False, True):
                out.fill(extreme_poison(dtype))
                gpureduce.scan(op, dev, out=out, exclusive=exclusive, variant=variant)
                if exclusive:  # identity, then the inclusive result shifted by one
                    ok = (out[0] == first) & (out[1:p + 1] == ref[:p]).all() & (out[p + 1:] == value).all()
                else:
                    ok = (out[:p] == ref[:p]).all() & (out[p:] == value).all()
                if not bool(ok):
                    got = cupy.asnumpy(out)
                    want = np.concatenate([ref[:p].get(), np.full(n - p, value, dtype)])
                    if exclusive:
                        want = np.concatenate([[first], want[:-1]]).astype(dtype)
                    i = int(np.argmax(got != want))
                    pytest.fail(f"{FUNCTION[op]} variant={variant} exclusive={exclusive} {dtype} n={n} with the "
                                f"unique extreme {value!r} at index {p}: {int(np.count_nonzero(got != want))} "
                                f"elements wrong; first at {i}: got {got[i]!r}, expected {want[i]!r} "
                                f"(walk seed {entry['seed']})")
        finally:
            dev[p:p + 1] = cupy.asarray(host[p:p + 1])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["min", "max"])
@for_all_variants("scan")
def test_nan_propagates(variant, op, dtype, exclusive, rng):
    """NumPy: every element from the first NaN on is NaN (the result is a CuPy array here, as the input)."""
    for n in (1, 70001):
        host = rng.uniform(-1e3, 1e3, n).astype(dtype)
        host[rng.integers(n)] = np.nan
        dev = DEVICE_LIBRARIES["cupy"](host)
        got = assert_matches_numpy(FUNCTION[op], dev, exclusive=exclusive, variant=variant)
        assert type(got) is type(dev)


# ---------------------------------------------------------------- host arrays in and out

@for_all_variants("scan")
def test_host_inputs_give_numpy_arrays(variant, rng):
    """Small (pinned staging) and large (page-locked in place) NumPy inputs, non-contiguous, byte-swapped,
    lists, 0-d and 2-d (flattened in C order, like numpy.cumsum)."""
    small = rng.uniform(-1, 1, 1000).astype(np.float32)
    got = assert_matches_numpy("cumsum", small, variant=variant)
    assert type(got) is np.ndarray
    large = rng.integers(-(2**31), 2**31 - 1, 3 * 2**21 + 5, dtype=np.int32)  # 24 MiB: above the pinned size
    assert_matches_numpy("cumsum", large, variant=variant)
    assert_matches_numpy("cummax", large, exclusive=True, variant=variant)
    strided = rng.uniform(-1, 1, (300, 7))[::2, 1:6]
    assert_matches_numpy("cummin", strided, variant=variant)
    fortran = np.asfortranarray(rng.integers(-9, 9, (33, 17)))
    assert_matches_numpy("cumsum", fortran, variant=variant)
    swapped = rng.integers(-1000, 1000, 999).astype(">i8")
    assert_matches_numpy("cumsum", swapped, variant=variant)
    if any(v.name == variant and "prod" in v.ops for v in gpureduce.variants(kind="scan")):  # (exact has none)
        np.testing.assert_array_equal(gpureduce.cumprod([3, 5, 7], variant=variant), [3, 15, 105])
    np.testing.assert_array_equal(gpureduce.cumsum(np.float64(2.5), variant=variant), [2.5])


def test_small_host_input_with_a_large_result_in_a_fresh_process():
    """An int32 input that fits the pinned buffer (4 MB) with an int64 result that does not (8 MB): the pinned
    buffer must be sized for the larger of its two uses.  In a fresh process, so no earlier call has grown the
    buffer already (the fault this pins wrote past it and killed the process)."""
    code = ("import numpy as np, gpureduce\n"
            "y = np.random.default_rng(0).integers(-1000, 1000, 1_000_003).astype(np.int32)\n"
            "for v in gpureduce.variants(kind='scan'):\n"
            "    assert np.array_equal(gpureduce.cumsum(y, variant=v.name), np.cumsum(y)), v.name\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", f"rc {done.returncode}: {done.stderr[-2000:]}"


@for_all_variants("scan")
def test_host_out(variant, rng):
    """A NumPy out= is written and returned, contiguous or strided, for host and device inputs."""
    host = rng.integers(-100, 100, 5000, dtype=np.int32)
    out = np.full(5000, poison(np.int64), np.int64)
    assert_matches_numpy("cumsum", host, out=out, variant=variant)  # returns out, written
    backing = np.full(2 * 5000, poison(np.int64), np.int64)
    strided = backing[::2]
    assert_matches_numpy("cumsum", host, out=strided, exclusive=True, variant=variant)
    assert (backing[1::2] == poison(np.int64)).all(), "wrote between the strided out='s elements"
    out[:] = poison(np.int64)
    assert_matches_numpy("cumsum", DEVICE_LIBRARIES["cupy"](host), out=out, variant=variant)


@for_all_variants("scan")
def test_device_out_for_a_host_input(variant, rng):
    cupy = _cupy()
    for n in (1000, 3 * 2**20 + 1):  # through the pinned buffer, and page-locked in place
        host = rng.uniform(-1, 1, n)
        out = cupy.full(n, np.nan)
        assert_matches_numpy("cumsum", host, out=out, variant=variant)


@for_all_variants("scan")
def test_in_place_and_overlapping_out(variant, rng):
    """out= the input itself (the kernels allow that), and out= overlapping it shifted (read via a copy)."""
    cupy = _cupy()
    host = rng.integers(-1000, 1000, 70001).astype(np.int64)
    x = cupy.asarray(host)
    assert_matches_numpy("cumsum", x, out=x, variant=variant)  # NumPy's answer is taken before x is written
    buf = cupy.asarray(host)
    assert_matches_numpy("cummax", buf[:-1], out=buf[1:], variant=variant)
    buf = cupy.asarray(host)
    assert_matches_numpy("cumsum", buf[1:], out=buf[:-1], exclusive=True, variant=variant)


@pytest.mark.parametrize("variant", [v.name for v in gpureduce.variants(kind="scan") if "axes" in v.properties])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_axis_scan_in_place(variant, axis, exclusive, rng):
    """out= the input along an axis, over many CUB tiles: an exclusive scan reads element r - 1 for output r,
    so the cub variant must read a copy when the output is the input."""
    cupy = _cupy()
    host = rng.integers(-1000, 1000, (3, 40_001) if axis == 1 else (40_001, 3)).astype(np.int64)
    x = cupy.asarray(host)
    assert_matches_numpy("cumsum", x, axis=axis, out=x, exclusive=exclusive, variant=variant)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("R", [1, 2, 3, 5, 31, 32, 33, 100, 1023, 1024, 1025])
def test_axis_scan_of_rows_back_to_back(R, exclusive, rng):
    """Rows of up to 1024 elements lying back to back are scanned a run of rows per warp (the packed rows
    kernel, cuda/axis/scan_segments.cuh): rows shorter than, as long as and longer than a warp's step of 32,
    runs that end mid-step, more rows than one warp takes; 1025 takes the warp-per-row kernel.  Integer data,
    so float32 sums are exact too."""
    cupy = _cupy()
    for rows in (1, 7, 3001):
        host = rng.integers(-1000, 1000, (rows, R)).astype(np.int64)
        for dtype in ("int64", "float32"):
            x = cupy.asarray(host.astype(dtype))
            assert_matches_numpy("cumsum", x, axis=1, exclusive=exclusive)
            assert_matches_numpy("cummax", x, axis=-1, exclusive=exclusive)
        # a C-ordered block of three axes merges into the same rows; out= a fresh C-ordered array
        x3 = cupy.asarray(host.reshape(rows, 1, R))
        assert_matches_numpy("cumsum", x3, axis=2, exclusive=exclusive, out=cupy.empty_like(x3))


@pytest.mark.parametrize("shape, axis", [((2**20, 2), 0), ((300_001, 3), 0), ((70_000, 33), 0), ((2, 2**20), 1)])
def test_axis_scan_of_few_long_segments(shape, axis, rng):
    """Few long columns (or rows) are cut into chunks, and a warp per segment scans the chunk totals: exact on
    int64 data, inclusive and exclusive."""
    cupy = _cupy()
    x = cupy.asarray(rng.integers(-1000, 1000, shape).astype(np.int64))
    for exclusive in (False, True):
        assert_matches_numpy("cumsum", x, axis=axis, exclusive=exclusive)
        assert_matches_numpy("cummin", x, axis=axis, exclusive=exclusive)


@pytest.mark.parametrize("C", [2, 4, 8, 16, 32])
@pytest.mark.parametrize("R", [1, 5, 127, 128, 129, 4097, 200_003])
def test_axis_scan_of_interleaved_columns(C, R, rng):
    """Columns whose rows lie back to back, C dividing 32, are scanned C at a time by a warp reading 32
    consecutive elements (the interleaved kernel, cuda/axis/scan_segments.cuh): chunk edges (multiples of
    128/C rows), rows past one chunk, a long scan cut into thousands of chunks; a 3-axis block (c0 > 1);
    exact on int64, inclusive and exclusive, float32 and complex64 through the float64 reference."""
    cupy = _cupy()
    host = rng.integers(-1000, 1000, (R, C)).astype(np.int64)
    for exclusive in (False, True):
        x = cupy.asarray(host)
        assert_matches_numpy("cumsum", x, axis=0, exclusive=exclusive)
        assert_matches_numpy("cummax", x, axis=0, exclusive=exclusive)
        x3 = cupy.asarray(np.stack([host, -host, host[::-1]]))  # (3, R, C): c0 = 3 blocks of R x C
        assert_matches_numpy("cumsum", x3, axis=1, exclusive=exclusive)
    assert_matches_numpy("cumsum", cupy.asarray(host.astype(np.float32)), axis=0)
    z = (host + 1j * host[::-1]).astype(np.complex64) / 1000
    assert_matches_numpy("cumsum", cupy.asarray(z), axis=0)
    assert_matches_numpy("cumprod", cupy.asarray(np.exp(1j * host[: min(R, 4097)] / 1000).astype(np.complex64)), axis=0)
    assert_matches_numpy("logcumsumexp", cupy.asarray(host.astype(np.float64) / 100), axis=0)


@pytest.mark.parametrize("R", [1025, 1100, 4095, 4097, 65_537, 300_007])
def test_axis_scan_of_long_unit_stride_rows(R, rng):
    """Rows longer than the packed kernel's take the rows kernel, which scans unit-stride rows 4 consecutive
    elements a lane (scan_consecutive, cuda/axis/scan_segments.cuh), cut into chunks when the rows are few:
    groups of 128 and 256 ending mid-row, chunk edges; exact on integers (int32 summed into int64 too), inclusive
    and exclusive; complex and logcumsumexp through the float64 reference; a strided output takes the other path."""
    cupy = _cupy()
    host = rng.integers(-1000, 1000, (3, R)).astype(np.int64)
    for exclusive in (False, True):
        assert_matches_numpy("cumsum", cupy.asarray(host), axis=1, exclusive=exclusive)
        assert_matches_numpy("cummin", cupy.asarray(host), axis=1, exclusive=exclusive)
        assert_matches_numpy("cumsum", cupy.asarray(host.astype(np.int32)), axis=1, dtype=np.int64,
                             exclusive=exclusive)
    assert_matches_numpy("cumsum", cupy.asarray(host.astype(np.float32)), axis=1)
    z = ((host + 1j * host[::-1]) / 1000).astype(np.complex64)
    assert_matches_numpy("cumsum", cupy.asarray(z), axis=1)
    assert_matches_numpy("logcumsumexp", cupy.asarray(host.astype(np.float64) / 10), axis=1)
    out = cupy.empty((3, 2 * R), dtype=cupy.int64)[:, ::2]  # a strided output: the step-by-32 path
    assert_matches_numpy("cumsum", cupy.asarray(host), axis=1, out=out)


# ---------------------------------------------------------------- device inputs

@pytest.mark.parametrize("offset", [1, 3])
@for_all_variants("scan")
def test_misaligned_input(variant, offset, rng):
    cupy = _cupy()
    for n in (1000, 2**20 + 3):
        host = rng.uniform(-1, 1, n + offset).astype(np.float32)
        dev = cupy.asarray(host)[offset:]
        assert dev.data.ptr % 16 != 0
        assert_matches_numpy("cumsum", dev, variant=variant)
        ints = rng.integers(-(2**31), 2**31 - 1, n + offset, dtype=np.int32)
        assert_matches_numpy("cummin", cupy.asarray(ints)[offset:], variant=variant)


@pytest.mark.parametrize("library", sorted(DEVICE_LIBRARIES))
@for_all_variants("scan")
def test_inputs_from_device_libraries(variant, library, rng):
    f = rng.uniform(-1, 1, 65537).astype(np.float32)
    i = rng.integers(-(2**31), 2**31 - 1, 65537, dtype=np.int32)
    make = DEVICE_LIBRARIES[library]
    assert_matches_numpy("cumsum", make(f), variant=variant)
    assert_matches_numpy("cummax", make(i), variant=variant)
    assert_matches_numpy("cumsum", make(i), exclusive=True, variant=variant)


def test_multidimensional_device_input_is_flattened_in_c_order(rng):
    cupy = _cupy()
    host = rng.integers(-9, 9, (33, 17)).astype(np.int32)
    np.testing.assert_array_equal(gpureduce.cumsum(cupy.asarray(host)).get(), np.cumsum(host))
    # other layouts are read in place and still flattened in C order, as NumPy does
    fortran = cupy.asfortranarray(cupy.asarray(host))
    np.testing.assert_array_equal(gpureduce.cumsum(fortran).get(), np.cumsum(host))
    np.testing.assert_array_equal(gpureduce.cumsum(cupy.asarray(host)[::2, ::-3]).get(), np.cumsum(host[::2, ::-3]))


def test_pointer_that_is_not_device_memory():
    host = np.zeros(64, np.float64)

    class HostPointer:
        __cuda_array_interface__ = dict(shape=(64,), typestr="<f8", data=(host.ctypes.data, False), version=3)

    with pytest.raises(ValueError, match="not device memory"):
        gpureduce.cumsum(np.ones(64), out=HostPointer())
    np.testing.assert_array_equal(gpureduce.cumsum(np.ones(3)), [1, 2, 3])  # the next call works


# ---------------------------------------------------------------- the DeviceArray result

def test_device_array_attributes_and_host_copies(rng):
    host = rng.integers(-1000, 1000, 4097).astype(np.int32)
    r = gpureduce.cumsum(gpureduce._core.to_device(host))  # a DeviceArray in, a DeviceArray out
    ref = np.cumsum(host)
    assert isinstance(r, gpureduce.DeviceArray)
    assert r.shape == (4097,) and r.ndim == 1 and r.size == len(r) == 4097
    assert r.dtype == np.dtype(np.int64) and r.itemsize == 8 and r.nbytes == 8 * 4097
    assert r.device == 0
    np.testing.assert_array_equal(r.get(), ref)
    np.testing.assert_array_equal(np.asarray(r), ref)
    as_float = np.asarray(r, dtype=np.float64)
    assert as_float.dtype == np.float64
    np.testing.assert_array_equal(as_float, ref)
    with pytest.raises(ValueError, match="copy=False"):
        np.array(r, copy=False)
    small = gpureduce.cumsum(gpureduce._core.to_device(np.array([1, 2, 3], np.int32)))
    assert repr(small) == "DeviceArray([1, 3, 6], dtype=int64, device=0)"
    big = gpureduce.cumsum(gpureduce._core.to_device(np.ones(2**20, np.float32)))
    assert repr(big) == "DeviceArray(shape=(1048576,), dtype=float32, device=0)"
    empty = gpureduce.cumsum(DEVICE_LIBRARIES["cupy"](np.ones(0, np.float32)))
    assert empty.shape == (0,) and len(empty) == 0 and empty.get().shape == (0,)


def test_cuda_array_interface_of_the_result():
    cupy = _cupy()
    r = gpureduce.cumsum(cupy.ones(1000, dtype=cupy.float32))
    cai = r.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (1000,) and cai["typestr"] == "<f4"
    assert cai["strides"] is None and cai["data"][1] is False and cai["descr"] == [("", "<f4")]
    assert isinstance(cai["stream"], int) and cai["stream"] != 0


def test_zero_copy_views_cupy():
    cupy = _cupy()
    r = gpureduce.cumsum(cupy.arange(1000, dtype=cupy.float64))
    ptr = r.__cuda_array_interface__["data"][0]
    view = cupy.asarray(r)
    assert view.data.ptr == ptr
    np.testing.assert_array_equal(cupy.asnumpy(view), np.cumsum(np.arange(1000.0)))
    dl = cupy.from_dlpack(r)
    assert dl.data.ptr == ptr
    del r  # the views keep the memory alive
    np.testing.assert_array_equal(cupy.asnumpy(view), cupy.asnumpy(dl))


def test_zero_copy_views_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    r = gpureduce.cumsum(torch.arange(1000, dtype=torch.float32, device="cuda"))
    ptr = r.__cuda_array_interface__["data"][0]
    t = torch.as_tensor(r, device="cuda")
    assert t.data_ptr() == ptr
    d = torch.from_dlpack(r)
    assert d.data_ptr() == ptr
    np.testing.assert_array_equal(t.cpu().numpy(), np.cumsum(np.arange(1000, dtype=np.float32)))


def test_zero_copy_views_numba():
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("numba without CUDA")
    r = gpureduce.cummax(numba_cuda.to_device(np.arange(1000, dtype=np.int64)[::-1].copy()))
    view = numba_cuda.as_cuda_array(r)
    assert view.device_ctypes_pointer.value == r.__cuda_array_interface__["data"][0]
    np.testing.assert_array_equal(view.copy_to_host(), np.full(1000, 999))


def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule).decode()


def test_dlpack_protocol():
    cupy = _cupy()
    r = gpureduce.cumsum(gpureduce._core.to_device(np.ones(100, np.float32)))
    assert r.__dlpack_device__() == (2, 0)
    refs = sys.getrefcount(r)
    assert _capsule_name(r.__dlpack__()) == "dltensor"
    assert _capsule_name(r.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert _capsule_name(r.__dlpack__(max_version=(0, 8), stream=-1)) == "dltensor"
    assert sys.getrefcount(r) == refs, "an unconsumed capsule leaked its reference to the array"
    assert _capsule_name(r.__dlpack__(dl_device=(2, 0), copy=False, max_version=(1, 1))) == "dltensor_versioned"
    with pytest.raises(BufferError, match="dl_device"):
        r.__dlpack__(dl_device=(1, 0))
    with pytest.raises(ValueError, match="stream"):
        r.__dlpack__(stream=0)

    class Copying:  # asks for a copy whatever the consumer passes
        def __dlpack__(self, **kwargs):
            return r.__dlpack__(**{**kwargs, "copy": True})

        def __dlpack_device__(self):
            return r.__dlpack_device__()

    copied = cupy.from_dlpack(Copying())
    assert copied.data.ptr != r.__cuda_array_interface__["data"][0]
    np.testing.assert_array_equal(cupy.asnumpy(copied), np.arange(1, 101, dtype=np.float32))


# ---------------------------------------------------------------- streams and determinism

class OnStream:
    """A CuPy array that exports the stream it was produced on (CuPy exports its current stream)."""

    def __init__(self, array, stream):
        self.array, self.stream = array, stream

    @property
    def __cuda_array_interface__(self):
        return {**self.array.__cuda_array_interface__, "stream": self.stream.ptr}


def test_streams_are_honoured():
    """Input produced on one busy stream, out= on another: the scan waits for both, and out='s stream waits
    for the scan; a DeviceArray result exports the input's stream."""
    cupy = _cupy()
    n = 2**24
    s_in, s_out = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    with s_in:
        x = cupy.zeros(n, dtype=cupy.int32)
        for _ in range(20):
            x += 1
    with s_out:
        out = cupy.zeros(n, dtype=cupy.int64)
        for _ in range(20):
            out -= 1
    gpureduce.cumsum(OnStream(x, s_in), out=OnStream(out, s_out))
    with s_out:  # work after the scan, on out='s own stream
        assert bool((out == 20 * cupy.arange(1, n + 1, dtype=cupy.int64)).all())
    r = gpureduce.cummax(OnStream(x, s_in))
    # the result lives on gpureduce's own stream, ordered after s_in: the caller's stream may go first
    assert r.__cuda_array_interface__["stream"] not in (None, 0, s_in.ptr)
    del s_in, x
    assert (r.get() == 20).all()
    del r  # freed on a stream that still exists


def _deterministic_cases():
    """(variant, dtype, axis): the variants registered deterministic (auto among them; not cub, not
    decoupled_lookback), whole arrays of float32 and float64, and along rows and columns where the variant scans
    along axes."""
    cases = []
    for v in SCAN:
        if not v.deterministic:
            continue
        for dtype in ("float32", "float64"):
            for axis in [None] + ([1, 0] if "axes" in v.properties else []):
                where = {None: "whole", 1: "rows", 0: "columns"}[axis]
                cases.append(pytest.param(v.name, dtype, axis, id=f"{v.name}-{dtype}-{where}"))
    assert len(cases) >= 2, f"only {len(cases)} determinism cases"
    return cases


@pytest.mark.parametrize("variant, dtype, axis", _deterministic_cases())
def test_deterministic_variants_repeat_bitwise(variant, dtype, axis, rng):
    """A deterministic variant's float cumsum is bitwise the same on every run (float32 and float64)."""
    cupy = _cupy()
    # one thread walks the array in `sequential`: a shorter one keeps it to a second
    n = 2**22 + 3 if variant != "sequential" else SEQUENTIAL_MAX_N
    shape = (n,) if axis is None else ((5, n // 5) if axis == 1 else (n // 5, 5))
    x = cupy.asarray(rng.uniform(-1, 1, shape).astype(dtype))
    first = gpureduce.cumsum(x, axis=axis, variant=variant).get()
    for _ in range(3):
        again = gpureduce.cumsum(x, axis=axis, variant=variant).get()
        assert again.tobytes() == first.tobytes(), (f"{variant} {dtype} axis={axis}: "
                                                    f"{np.count_nonzero(again != first)} elements differ between runs")


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [2**24, 2**28])
def test_default_scan_repeats_bitwise_at_scale(op, dtype, n, rng):
    """The default scan gives the same bits on every run (issue 14: eleven runs of cumsum of one 2^24 float32
    array used to differ), compared on the device."""
    cupy = _cupy()
    values = rng.uniform(0.999, 1.001, n) if op == "cumprod" else rng.uniform(-1, 1, n)
    x = cupy.asarray(values.astype(dtype))
    del values
    word = cupy.uint32 if dtype == "float32" else cupy.uint64
    first = getattr(gpureduce, op)(x).view(word)
    for run in range(10):
        again = getattr(gpureduce, op)(x).view(word)
        differ = int(cupy.count_nonzero(again != first))
        assert differ == 0, f"auto {op} {dtype} n={n}: run {run + 2} differs from run 1 in {differ} elements"
        del again
    del first, x


# ---------------------------------------------------------------- status words left by earlier launches

@pytest.mark.parametrize("variant", ["decoupled_lookback", "ordered_lookback", "lookahead", "auto"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_status_words_of_earlier_launches_are_not_read(variant, dtype, rng):
    """The look-back tile kernels no longer clear their status words before a launch (below 2048 tiles): each
    launch tags its own (cuda/variants/tile_status.cuh).  Scans of other data, of the same size and of a larger
    one, and a reduction leave their words in the workspace; the next scan must take none of them."""
    cupy = _cupy()
    sizes = [2**24 + 3, 2**16 + 1, 2**21 + 5, 2**16 + 1, 2**21 + 5, 2**24 + 3, 2**21 + 5]  # 9 to 4097 tiles
    for step, n in enumerate(sizes):
        host = rng.integers(-1000, 1000, n).astype(dtype)
        x = cupy.asarray(host)
        got = gpureduce.cumsum(x, variant=variant).get()
        ref = np.cumsum(host)
        wrong = np.flatnonzero(got != ref)
        assert wrong.size == 0, (f"{variant} {dtype} n={n} (step {step}): {wrong.size} elements wrong, "
                                 f"first {wrong[0]}: got {got[wrong[0]]}, expected {ref[wrong[0]]}")
        gpureduce.sum(x)  # a reduction's partials between the scans


# ---------------------------------------------------------------- 64-bit lengths

@pytest.mark.slow
def test_beyond_2_to_the_31_elements():
    """64-bit indexing for `auto`: ones give cumsum[i] = i + 1 (exclusive: i); checked on the device."""
    cupy = _cupy()
    _cache.clear()
    n = 2**31 + 2**20 + 5
    free, _ = cupy.cuda.runtime.memGetInfo()
    need = n * (4 + 8 + 8) + 2**30  # the input, out= and the expected values, and the scan's workspace
    if free < need:  # as when pytest-xdist runs other processes on the card
        pytest.skip(f"needs {need / 2**30:.0f} GiB of free device memory, {free / 2**30:.0f} GiB free")
    x = cupy.ones(n, dtype=cupy.int32)
    out = cupy.empty(n, dtype=cupy.int64)  # CuPy's memory (not gpureduce's pool), freed below
    expected = None
    try:
        gpureduce.cumsum(x, out=out)
        expected = cupy.arange(1, n + 1, dtype=cupy.int64)
        assert bool((out == expected).all())
        gpureduce.cumsum(x, out=out, exclusive=True)
        expected -= 1
        assert bool((out == expected).all())
    finally:
        del x, out, expected
        cupy.get_default_memory_pool().free_all_blocks()


def test_zz_every_variant_exercised(request):
    """Runs last: every registered scan variant is a case of the NumPy comparison, and in a whole run of this
    file in one process each went through it.  Under pytest-xdist a process runs only some of the cases, so
    there only the cases' list is checked."""
    assert SCAN, "no scan variant is registered"
    compared = {item.callspec.params["variant"] for item in request.session.items
                if item.module is request.module and item.originalname == "test_matches_numpy"}
    assert compared == set(VARIANTS), f"not in the NumPy comparison: {set(VARIANTS) - compared}"
    if os.environ.get("PYTEST_XDIST_WORKER") is None and not request.config.option.keyword:
        assert EXERCISED == set(VARIANTS), f"never exercised: {set(VARIANTS) - EXERCISED}"


# ---------------------------------------------------------------- issue 12: cases others' suites found

_CUB_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
               "complex64", "complex128"]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(128,), (128, 128), (128, 2, 128), (128, 2, 2, 128)])
@pytest.mark.parametrize("dtype", _CUB_DTYPES)
@pytest.mark.parametrize("func", ["cumsum", "cumprod"])
def test_cub_scans_of_cupys_cub_cases(func, dtype, shape, order, rng):
    """CuPy's TestCubReduction cumsum/cumprod cases (cupy/tests/cupy_tests/core_tests/test_cub_reduction.py:
    these shapes, C and Fortran order, every dtype) with variant="cub" (once raised cudaErrorInvalidValue).
    Exact data: +-1 factors (products stay +-1), small integers for sums, so results compare with ==."""
    cupy = _cupy()
    if func == "cumprod":
        host = rng.choice([1, -1] if dtype[0] != "u" else [1], size=shape).astype(dtype)
    else:
        host = rng.integers(-3, 4 if dtype[0] != "u" else 4, size=shape).clip(0 if dtype[0] == "u" else -3)
        host = host.astype(dtype)
    host = np.asarray(host, order=order)
    dev = cupy.asarray(host, order=order)
    for axis in [None] + list(range(len(shape))):
        got = getattr(gpureduce, func)(dev, axis=axis, variant="cub")
        np.testing.assert_array_equal(cupy.asnumpy(got), getattr(np, func)(host, axis=axis), err_msg=f"axis={axis}")


@pytest.mark.parametrize("n", [33, 1025, 100003])
@pytest.mark.parametrize("where", ["host", "device"])
def test_cub_cummax_of_int8(n, where, rng):
    """cummax of int8 with variant="cub" (once raised cudaErrorInvalidValue), random-walk data so the running
    maximum keeps changing, a unique maximum at the last element."""
    host = np.cumsum(rng.integers(-1, 2, n)).clip(-127, 120).astype(np.int8)
    host[-1] = 127
    arg = host if where == "host" else _cupy().asarray(host)
    got = gpureduce.cummax(arg, variant="cub")
    np.testing.assert_array_equal(got if where == "host" else _cupy().asnumpy(got), np.maximum.accumulate(host))


@pytest.mark.parametrize("variant", [v.name for v in gpureduce.variants(kind="scan") if "axes" in v.properties])
def test_strided_device_out(variant, rng):
    """A strided device out= (every other element of a poisoned buffer) is written through its strides, as
    NumPy writes any out= (once: 'out= is not contiguous'); the elements between stay untouched."""
    cupy = _cupy()
    host = rng.integers(-100, 100, 5001).astype(np.int64)
    backing = cupy.full(2 * host.size, poison(np.int64), dtype=np.int64)
    got = gpureduce.cumsum(cupy.asarray(host), out=backing[::2], variant=variant)
    np.testing.assert_array_equal(cupy.asnumpy(backing[::2]), np.cumsum(host))
    assert (cupy.asnumpy(backing[1::2]) == poison(np.int64)).all(), "wrote between the strided out='s elements"
    assert got.data.ptr == backing.data.ptr


# ---------------------------------------------------------------- the pipelined kernel's tiles and windows

# cuda/variants/pipeline_tiles.cuh: 9216 elements a tile for 4-byte inputs and results, 5632 for 8-byte ones,
# 5120 for int32 -> int64 sums and products; 64 tiles a window (scan_pipelined.cu)
PIPELINED_TILES = {"float32": [9216], "float64": [5632], "int32": [5120, 9216], "int64": [5632]}


@pytest.mark.parametrize("dtype", sorted(PIPELINED_TILES))
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_pipelined_tile_and_window_edges(dtype, offset, rng):
    """`pipelined` one element either side of its tile and window boundaries and over hundreds of tiles, with the
    input and a poisoned out= both `offset` elements past a 16-byte boundary: its bulk copies then run with a
    partial first tile copied element by element (any other pair of alignments runs `lookahead`)."""
    cupy = _cupy()
    result = {"cumsum": np.result_type(dtype, np.int64) if dtype.startswith("int") else np.dtype(dtype)}
    result["cummax"] = np.dtype(dtype)
    for tile in PIPELINED_TILES[dtype]:
        for n in (tile - 1, tile + 1, 64 * tile - 1, 64 * tile + 1, 300 * tile + 7):
            host = (rng.integers(-1000, 1000, n + offset) if dtype.startswith("int")
                    else rng.uniform(-1, 1, n + offset)).astype(dtype)
            x = cupy.asarray(host)[offset:]
            assert x.data.ptr % 16 == offset * x.itemsize % 16
            for func in ("cumsum", "cummax"):
                for exclusive in (False, True):
                    width = result[func].itemsize
                    out = cupy.full(n + 16 // width, poison(result[func]), dtype=result[func])
                    assert out.data.ptr % 16 == 0
                    out = out[offset * width % 16 // width:][:n]  # on the input's 16-byte grid, `offset` elements in
                    assert (out.data.ptr - offset * width) % 16 == 0
                    assert_matches_numpy(func, x, out=out, exclusive=exclusive, variant="pipelined")
