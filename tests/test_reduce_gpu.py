"""Every reduction variant x operator x dtype x size class against NumPy, on the GPU.

Integers must match exactly (wrap-around included); floats must lie within gpureduce.testing.error_bound
(it grows with log2(n)) around a float64 reference; min/max are exact and propagate NaN.  Inputs are fresh
random data on the device (CuPy), so the matrix measures the kernels and not host transfers; host inputs,
the other device libraries, misaligned pointers and > 2**31 elements have tests of their own.

The bound cannot see a few lost elements among millions of zero-mean values, so float sums and products are also
run on exact-valued data (conftest.exact_float_data: every partial result representable) and compared bitwise;
min and max are run with a unique extreme at the first and last elements and at every block and tile edge.
"""
import os

import numpy as np
import pytest

import gpureduce
from conftest import DEVICE_LIBRARIES, edge_positions, one_size_cached, unique_extremes, walk_data
from gpureduce.testing import assert_matches_numpy, for_all_variants

pytestmark = pytest.mark.gpu

REDUCE = gpureduce.variants(kind="reduce")
VARIANTS = [v.name for v in REDUCE]
DETERMINISTIC = [v.name for v in REDUCE if v.deterministic]
DETERMINISTIC_AXES = [v.name for v in REDUCE if v.deterministic and "axes" in v.properties]
assert DETERMINISTIC_AXES, "no deterministic reduction variant takes axes (the default, auto, should)"
OPS = ["sum", "prod", "min", "max"]
DTYPES = ["float32", "float64", "int32", "int64"]
# every power of two and block boundary the kernels care about (warp 32, blocks 128..1024, tiles 2048/4096)
SIZES = [0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4097, 65537, 2**20 + 3, 2**24 + 1]

EXERCISED = set()
_inputs = {}


def refuses_what_it_lacks(variant, op, a):
    """True where `variant` implements `op`; else checks that it refuses it, naming the operator (the variant
    "exact" sums, takes min and max, and has no correctly rounded product), and gives False."""
    if op in next(v for v in REDUCE if v.name == variant).ops:
        return True
    with pytest.raises(ValueError, match=f"does not implement {op}"):
        gpureduce.reduce(op, a, variant=variant)
    return False


def make_host(op, dtype, n, rng):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if op == "prod":  # near 1 with random signs: the product neither overflows nor underflows
            x = (1 + rng.uniform(-2.0**-10, 2.0**-10, n)) * rng.choice([-1.0, 1.0], n)
        elif op == "sum":
            x = rng.uniform(-1, 1, n)
        else:
            x = rng.uniform(-1e3, 1e3, n)
        return x.astype(dt)
    if op == "prod":  # odd factors keep a wrapped product non-trivial
        return rng.choice(np.array([-7, -5, -3, -1, 1, 3, 5, 7], dtype=dt), n)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)  # int64 sums wrap, like NumPy's


def device_input(op, dtype, n):
    """The device array for this case: made once per session, fresh each session."""
    kind = "prod" if op == "prod" else ("sum" if op == "sum" else "minmax")
    key = (kind, dtype, n)
    if key not in _inputs:
        seed = np.random.SeedSequence().entropy % (2**32)
        print(f"random seed of the {kind} {dtype} n={n} input: {seed}")  # shown when the case fails
        _inputs[key] = DEVICE_LIBRARIES["cupy"](make_host(op, dtype, n, np.random.default_rng(seed)))
    return _inputs[key]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@for_all_variants("reduce")
def test_matches_numpy(variant, op, dtype, n):
    dev = device_input(op, dtype, n)
    if not refuses_what_it_lacks(variant, op, dev):
        return
    if n == 0 and op in ("min", "max"):
        with pytest.raises(ValueError, match="zero-size array"):
            gpureduce.reduce(op, dev, variant=variant)
    else:
        assert_matches_numpy(op, dev, variant=variant)
    EXERCISED.add(variant)


# ---------------------------------------------------------------- exactly known answers

_exact = {}


def exact_input(op, dtype, n):
    """(CuPy input, the exact result as a NumPy scalar of `dtype`, seed) for exact_float_data: one size in memory
    at a time (the tests run size by size), fresh data every session."""
    def make(host, seed):
        want = np.dtype(dtype).type(getattr(np, op)(host.astype(np.float64)))  # exact in float64 and in dtype
        return DEVICE_LIBRARIES["cupy"](host), want, seed

    return one_size_cached(_exact, (op, dtype, n), make)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "prod"])
@for_all_variants("reduce")
def test_exact_float_data_bitwise(variant, op, dtype, n):
    """Float sums and products of data whose every partial result is exact, whatever the order: the result is
    NumPy's float64 answer cast to the dtype, bit for bit.  A lost or duplicated element (the last one, a tile,
    a block's partial) changes it; the error bound would let hundreds of them pass."""
    dev, want, seed = exact_input(op, dtype, n)
    if not refuses_what_it_lacks(variant, op, dev):
        return
    got = gpureduce.reduce(op, dev, variant=variant)
    assert type(got) is type(dev) and got.shape == (), type(got).__name__  # a 0-d CuPy array (issue 38)
    got = got.get()[()]
    assert isinstance(got, np.generic) and got.dtype == want.dtype, f"{type(got).__name__} {got.dtype}"
    assert got.tobytes() == want.tobytes(), (f"{op} variant={variant} {dtype} n={n}: got {got!r}, exact {want!r} "
                                             f"(data seed {seed})")


EXTREME_DTYPES = ["int8", "int32", "uint64", "float32", "float64"]


def _extreme_cases():
    """(variant, op, dtype, n): size by size (one size's inputs in memory at a time), every variant that reduces
    the dtype (the teaching variants take only their own dtypes)."""
    cases = []
    for n in SIZES:
        if n == 0:
            continue
        for dtype in EXTREME_DTYPES:
            for op in ("max", "min"):
                for v in REDUCE:
                    if v.supports(op) and (dtype in v.dtypes or "axes" in v.properties):
                        cases.append(pytest.param(v.name, op, dtype, n, id=f"{v.name}-{op}-{dtype}-{n}"))
    assert len(cases) >= 2 * (len(SIZES) - 1) * len(EXTREME_DTYPES), f"only {len(cases)} extreme cases"
    return cases


_walks = {}


def walk_input(dtype, n):
    """(host walk, CuPy copy, seed): conftest.walk_data, one size in memory at a time, fresh every session."""
    key = (dtype, n)
    if key not in _walks:
        if any(k[1] != n for k in _walks):
            _walks.clear()
        seed = int(np.random.SeedSequence().entropy % 2**32)
        print(f"random seed of the {dtype} n={n} walk: {seed}")  # shown when the case fails
        host = walk_data(dtype, n, np.random.default_rng(seed))
        _walks[key] = (host, DEVICE_LIBRARIES["cupy"](host), seed)
    return _walks[key]


@pytest.mark.parametrize("variant, op, dtype, n", _extreme_cases())
def test_unique_extreme_at_every_edge(variant, op, dtype, n):
    """min/max with one unique extreme placed in turn at 0, 1, n // 2, n - 2, n - 1 and either side of the
    warp, block and tile edges (conftest.edge_positions): a kernel that drops the last element, the tail tile or
    a block's partial, or reads one element short, returns the walk's own extreme instead."""
    cupy = pytest.importorskip("cupy")
    host, dev, seed = walk_input(dtype, n)
    lowest, highest = unique_extremes(dtype)
    value = highest if op == "max" else lowest
    extreme = cupy.asarray(np.array([value], dtype))
    for p in edge_positions(n):
        dev[p:p + 1] = extreme
        try:
            got = gpureduce.reduce(op, dev, variant=variant).get()[()]  # a 0-d CuPy array (issue 38)
        finally:
            dev[p:p + 1] = cupy.asarray(host[p:p + 1])
        assert isinstance(got, np.generic) and got.dtype == np.dtype(dtype), f"{type(got).__name__} {got.dtype}"
        assert got == value, (f"{op} variant={variant} {dtype} n={n} with the unique {op} {value!r} at index {p}: "
                              f"got {got!r} (walk seed {seed})")


@for_all_variants("reduce")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["min", "max", "sum"])
def test_nan_propagates(variant, op, dtype, rng):
    n = 70001
    host = rng.uniform(-1, 1, n).astype(dtype)
    host[rng.integers(n)] = np.nan
    got = assert_matches_numpy(op, DEVICE_LIBRARIES["cupy"](host), variant=variant)
    assert np.isnan(got)


@for_all_variants("reduce")
def test_host_inputs(variant, rng):
    """NumPy arrays, small (one pinned buffer) and large (staged through the ring of pinned chunks), contiguous or
    not."""
    small = rng.uniform(-1, 1, 1000).astype(np.float32)
    assert_matches_numpy("sum", small, variant=variant)
    large = rng.integers(-(2**31), 2**31 - 1, 3 * 2**21 + 5, dtype=np.int32)  # 24 MiB: above the pinned size
    assert_matches_numpy("sum", large, variant=variant)
    strided = rng.uniform(-1, 1, (300, 7)).astype(np.float64)[::2, 1:6]
    assert_matches_numpy("max", strided, variant=variant)
    swapped = rng.integers(-1000, 1000, 999).astype(">i8")
    assert_matches_numpy("sum", swapped, variant=variant)
    if refuses_what_it_lacks(variant, "prod", [3, 5, 7]):
        assert gpureduce.prod([3, 5, 7], variant=variant) == 105


@pytest.mark.parametrize("library", sorted(DEVICE_LIBRARIES))
@for_all_variants("reduce")
def test_device_libraries(variant, library, rng):
    f = rng.uniform(-1, 1, 65537).astype(np.float32)
    i = rng.integers(-(2**31), 2**31 - 1, 65537, dtype=np.int32)
    assert_matches_numpy("sum", DEVICE_LIBRARIES[library](f), variant=variant)
    assert_matches_numpy("max", DEVICE_LIBRARIES[library](i), variant=variant)
    assert_matches_numpy("sum", DEVICE_LIBRARIES[library](i), variant=variant)


@pytest.mark.parametrize("offset", [1, 2, 3])
@for_all_variants("reduce")
def test_misaligned_views(variant, offset, rng):
    cupy = pytest.importorskip("cupy")
    for n in (1000, 2**20 + 3):
        host = rng.uniform(-1, 1, n + offset).astype(np.float32)
        dev = cupy.asarray(host)[offset:]
        assert dev.data.ptr % 16 != 0
        assert_matches_numpy("sum", dev, variant=variant)
        assert_matches_numpy("min", dev, variant=variant)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("variant", DETERMINISTIC)
def test_deterministic_variants_repeat_bitwise(variant, dtype, rng):
    dev = DEVICE_LIBRARIES["cupy"](rng.uniform(-1, 1, 2**22 + 3).astype(dtype))
    first = gpureduce.sum(dev, variant=variant)
    for _ in range(5):
        again = gpureduce.sum(dev, variant=variant)
        assert again.tobytes() == first.tobytes(), f"{variant} {dtype}: {again!r} after {first!r}"


# rows (axis=1 of an (m, k) array) and columns (axis=0): short and long rows, few and many columns
AXIS_SHAPES = [(4099, 1027), (5, 2**20 + 3), (2**20 + 3, 5)]


@pytest.mark.parametrize("axis", [1, 0], ids=["rows", "columns"])
@pytest.mark.parametrize("shape", AXIS_SHAPES, ids=[f"{m}x{k}" for m, k in AXIS_SHAPES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("variant", DETERMINISTIC_AXES)
def test_deterministic_axis_reductions_repeat_bitwise(variant, dtype, shape, axis, rng):
    """The deterministic variants that reduce along axes give bitwise the same row and column sums every run."""
    dev = DEVICE_LIBRARIES["cupy"](rng.uniform(-1, 1, shape).astype(dtype))
    first = gpureduce.sum(dev, axis=axis, variant=variant).get()
    for _ in range(5):
        again = gpureduce.sum(dev, axis=axis, variant=variant).get()
        assert again.tobytes() == first.tobytes(), (
            f"{variant} {dtype} {shape} axis={axis}: {np.count_nonzero(again != first)} of {again.size} sums differ "
            f"between runs")


def test_cai_stream_is_honoured(rng):
    """Work queued on a CuPy stream that writes the input must finish before we read it."""
    cupy = pytest.importorskip("cupy")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.zeros(2**24, dtype=cupy.float32)
        for _ in range(20):  # keep the stream busy
            x += 1
        assert x.__cuda_array_interface__["stream"] == stream.ptr
        got = gpureduce.sum(x)
    assert got == np.float32(20 * 2**24)


def test_pointer_that_is_not_device_memory():
    host = np.ones(64, np.float32)

    class HostPointer:
        __cuda_array_interface__ = dict(shape=(64,), typestr="<f4", data=(host.ctypes.data, False), version=3)

    with pytest.raises(ValueError, match="not device memory"):
        gpureduce.sum(HostPointer())
    assert gpureduce.sum(host) == 64  # the next call works


@pytest.mark.slow
@for_all_variants("reduce")
def test_beyond_2_to_the_31(variant):
    """64-bit indexing: int32 values (i % 7) - 3 with unique extremes at the last two positions."""
    cupy = pytest.importorskip("cupy")
    n = 2**31 + 2**20 + 5
    key = ("big", n)
    if key not in _inputs:
        x = (cupy.arange(n, dtype=cupy.int64) % 7 - 3).astype(cupy.int32)
        x[-2], x[-1] = -100, 100
        _inputs.clear()  # free the size matrix's inputs: this one is 8 GiB
        _inputs[key] = x
    x = _inputs[key]
    r = n % 7
    cycles = sum(k - 3 for k in range(7))  # 0
    expected = (n // 7) * cycles + sum(k - 3 for k in range(r))
    expected += (-100 - ((n - 2) % 7 - 3)) + (100 - ((n - 1) % 7 - 3))
    assert gpureduce.sum(x, variant=variant) == expected
    assert gpureduce.max(x, variant=variant) == 100
    assert gpureduce.min(x, variant=variant) == -100


def test_zz_every_variant_exercised(request):
    """Runs last: every registered reduction variant is a case of the NumPy comparison, and in a whole run of this
    file in one process each went through it.  Under pytest-xdist a process runs only some of the cases, so
    there only the cases' list is checked."""
    compared = {item.callspec.params["variant"] for item in request.session.items
                if item.module is request.module and item.originalname == "test_matches_numpy"}
    assert compared == set(VARIANTS), f"not in the NumPy comparison: {set(VARIANTS) - compared}"
    if os.environ.get("PYTEST_XDIST_WORKER") is None and not request.config.option.keyword:
        assert EXERCISED == set(VARIANTS), f"never exercised: {set(VARIANTS) - EXERCISED}"


@for_all_variants("reduce", "sum")
def test_signed_zero_sums_like_numpy(variant):
    """The sign of a zero sum, as NumPy: its reductions start from +0.0 (sum of -0.0s is +0.0) unless
    initial=-0.0 is given (then -0.0, whatever the length: padding must not turn it into +0.0)."""
    cupy = pytest.importorskip("cupy")
    v = next(v for v in gpureduce.variants(kind="reduce") if v.name == variant)
    dtypes = [d for d in ("float32", "float64", "complex64") if d in v.dtypes or "axes" in v.properties]
    assert "float32" in dtypes
    for dtype in dtypes:
        zero = np.dtype(dtype).type(complex(-0.0, -0.0) if dtype.startswith("complex") else -0.0)
        for n in (0, 1, 2, 33, 1025, 65537, 2**20 + 3):
            x = cupy.full(n, zero, dtype)
            want = np.sum(np.full(n, zero, dtype))
            got = gpureduce.sum(x, variant=variant)
            assert got == 0 and np.signbit(np.real(got)) == np.signbit(np.real(want)), (dtype, n, got, want)
            if "axes" in v.properties:
                got = gpureduce.sum(x, initial=zero, variant=variant)
                assert np.signbit(np.real(got)) and np.signbit(np.real(np.sum(np.full(n, zero), initial=zero)))
                rows = gpureduce.sum(cupy.full((3, n), zero, dtype), axis=1, initial=zero, variant=variant).get()
                assert np.signbit(np.real(rows)).all(), (dtype, n)


@for_all_variants("reduce", "sum")
def test_cupys_arange_case_within_the_stated_bound(variant):
    """CuPy's own test sums arange(1, 24001) in float32 with rtol 1e-6, which atomic_warp's 750 warp partials
    added one after another into the result exceed: every variant must stay within its own stated bound
    (Variant.rounding_chain, through gpureduce.testing.error_bound)."""
    x = np.arange(1, 24001, dtype=np.float32).reshape(20, 30, 40)
    assert_matches_numpy("sum", DEVICE_LIBRARIES["cupy"](x), variant=variant)
    v = next(v for v in gpureduce.variants(kind="reduce") if v.name == variant)
    assert v.rounding and v.rounding_chain(x.size) >= 1
