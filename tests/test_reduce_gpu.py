"""Every reduction variant x operator x dtype x size class against NumPy, on the GPU.

Integers must match exactly (wrap-around included); floats must lie within gpureduce.testing.error_bound
(it grows with log2(n)) around a float64 reference; min/max are exact and propagate NaN.  Inputs are fresh
random data on the device (CuPy), so the matrix measures the kernels and not host transfers; host inputs,
the other device libraries, misaligned pointers and > 2**31 elements have tests of their own.
"""
import numpy as np
import pytest

import gpureduce
from conftest import DEVICE_LIBRARIES
from gpureduce.testing import assert_matches_numpy, for_all_variants

pytestmark = pytest.mark.gpu

VARIANTS = [v.name for v in gpureduce.variants(kind="reduce")]
DETERMINISTIC = [v.name for v in gpureduce.variants(kind="reduce") if v.deterministic]
OPS = ["sum", "prod", "min", "max"]
DTYPES = ["float32", "float64", "int32", "int64"]
# every power of two and block boundary the kernels care about (warp 32, blocks 128..1024, tiles 2048/4096)
SIZES = [0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4097, 65537, 2**20 + 3, 2**24 + 1]

EXERCISED = set()
_inputs = {}


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
    if n == 0 and op in ("min", "max"):
        with pytest.raises(ValueError, match="zero-size array"):
            gpureduce.reduce(op, dev, variant=variant)
    else:
        assert_matches_numpy(op, dev, variant=variant)
    EXERCISED.add(variant)


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
    """NumPy arrays, small (pinned staging) and large (page-locked in place), contiguous or not."""
    small = rng.uniform(-1, 1, 1000).astype(np.float32)
    assert_matches_numpy("sum", small, variant=variant)
    large = rng.integers(-(2**31), 2**31 - 1, 3 * 2**21 + 5, dtype=np.int32)  # 24 MiB: above the pinned size
    assert_matches_numpy("sum", large, variant=variant)
    strided = rng.uniform(-1, 1, (300, 7)).astype(np.float64)[::2, 1:6]
    assert_matches_numpy("max", strided, variant=variant)
    swapped = rng.integers(-1000, 1000, 999).astype(">i8")
    assert_matches_numpy("sum", swapped, variant=variant)
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


@pytest.mark.parametrize("variant", DETERMINISTIC)
def test_deterministic_variants_repeat_bitwise(variant, rng):
    dev = DEVICE_LIBRARIES["cupy"](rng.uniform(-1, 1, 2**22 + 3).astype(np.float32))
    first = gpureduce.sum(dev, variant=variant)
    assert all(gpureduce.sum(dev, variant=variant).tobytes() == first.tobytes() for _ in range(5))


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


def test_zz_every_variant_exercised():
    """Runs last: every registered reduction variant went through the NumPy comparison."""
    assert EXERCISED == set(VARIANTS), f"never exercised: {set(VARIANTS) - EXERCISED}"
