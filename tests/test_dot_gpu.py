"""dot and vdot on the GPU against NumPy's: every dtype and pairs of dtypes, lengths around the kernels' block
and chunk edges, strided and reversed operands, host, CuPy and PyTorch inputs, auto and cub; bitwise the same
on every run; integers exact, floats within a bound that grows with log2(n)."""
import math

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.operands import ACCUMULATOR, BFLOAT16, finfo
from gpureduce.testing import to_numpy

pytestmark = pytest.mark.gpu

DTYPES = list(_core.dtype_names)
SIZES = [0, 1, 2, 31, 32, 33, 255, 257, 4096, 65537, 1 << 20]
VARIANTS = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]


def _cupy():
    return pytest.importorskip("cupy")


def data(rng, dtype, n):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < 0.3
    if dtype.kind in "iu":
        return rng.integers(0, 100 if dtype.itemsize > 1 else 12, n).astype(dtype)
    x = rng.uniform(-1, 1, n)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(-1, 1, n)
    return x.astype(dtype)


def check(got, a, b, conj=False):
    """Integers and bool exactly as NumPy's; floats against the float64 / complex128 sum of the products."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    want = np.vdot(a, b) if conj else np.dot(a, b)
    if not isinstance(got, np.generic):  # a device operand's result: a 0-d array of its kind (issue 38)
        assert not isinstance(got, np.ndarray) and tuple(got.shape) == (), type(got)
        got = to_numpy(got)[()]
    assert isinstance(got, np.generic) and got.dtype == want.dtype, (type(got), getattr(got, "dtype", None))
    if want.dtype.kind in "biu":
        assert got == want
        return
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    exact = np.vdot(a.astype(wide), b.astype(wide)) if conj else np.dot(a.astype(wide), b.astype(wide))
    scale = float(np.sum(np.abs(a.astype(wide)) * np.abs(b.astype(wide))))
    work = ACCUMULATOR.get(want.dtype, want.dtype)
    eps = finfo(work).eps
    bound = 4 * eps * (math.log2(max(a.size, 2)) + 2) * scale + finfo(want.dtype).eps * abs(exact) + 1e-300
    assert abs(complex(got) - complex(exact)) <= bound, (got, exact, bound)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_dot_matches_numpy(dtype, n, rng):
    a, b = data(rng, dtype, n), data(rng, dtype, n)
    check(gpureduce.dot(a, b), a, b)
    check(gpureduce.vdot(a, b), a, b, conj=True)
    if a.dtype == BFLOAT16:  # CuPy has no bfloat16: test_bfloat16_gpu.py reads PyTorch's
        return
    cupy = _cupy()
    da, db = cupy.asarray(a), cupy.asarray(b)
    for variant in VARIANTS:
        check(gpureduce.dot(da, db, variant=variant), a, b)
        check(gpureduce.vdot(da, db, variant=variant), a, b, conj=True)


@pytest.mark.parametrize("a_dtype, b_dtype", [("int32", "float32"), ("bool", "int8"), ("uint64", "int64"),
                                              ("float16", "float64"), ("complex64", "float64"), ("int8", "uint8")])
def test_mixed_dtypes_meet_in_numpys_common_dtype(a_dtype, b_dtype, rng):
    a, b = data(rng, a_dtype, 1001), data(rng, b_dtype, 1001)
    check(gpureduce.dot(a, b), a, b)
    cupy = _cupy()
    check(gpureduce.vdot(cupy.asarray(a), cupy.asarray(b)), a, b, conj=True)


def test_strided_and_reversed_operands(rng):
    cupy = _cupy()
    a, b = data(rng, "float64", 30_000), data(rng, "float64", 90_000)
    check(gpureduce.dot(a[::3][::-1], b[::9]), a[::3][::-1], b[::9])
    da, db = cupy.asarray(a), cupy.asarray(b)
    check(gpureduce.dot(da[::-3], db[5::9]), a[::-3], b[5::9])
    z = data(rng, "complex128", 600).reshape(20, 30)
    w = data(rng, "complex128", 600).reshape(30, 20)
    check(gpureduce.vdot(cupy.asarray(z).T, cupy.asarray(w)), z.T, w, conj=True)  # a transposed view: C order


def test_wrapping_integers_and_bool_as_numpy():
    a = np.full(1000, 100, np.int8)
    assert gpureduce.dot(a, a) == np.dot(a, a)
    t = np.array([False, True, False])
    assert gpureduce.dot(t, t) == np.True_ and gpureduce.dot(t, ~t) == np.False_


def test_empty_vectors_give_zero():
    for dtype in ("float32", "int16", "complex128", "bool"):
        e = np.empty(0, dtype)
        got = gpureduce.dot(e, e)
        assert got == np.dot(e, e) and got.dtype == np.dot(e, e).dtype


def test_nan_and_inf_propagate():
    a = np.array([1.0, np.nan, 2.0])
    assert np.isnan(gpureduce.dot(a, np.ones(3)))
    assert gpureduce.dot(np.array([np.inf, 1.0]), np.array([1.0, 1.0])) == np.inf


def test_out_as_numpy(rng):
    a, b = data(rng, "float32", 100), data(rng, "float32", 100)
    out = np.zeros((), np.float32)
    assert gpureduce.dot(a, b, out=out) is out
    check(out[()], a, b)
    cupy = _cupy()
    dout = cupy.zeros((), cupy.float32)
    gpureduce.dot(cupy.asarray(a), cupy.asarray(b), out=dout)
    check(np.float32(dout.get()), a, b)


def test_torch_tensors(rng):
    torch = pytest.importorskip("torch")
    a, b = data(rng, "float32", 5000), data(rng, "float32", 5000)
    check(gpureduce.dot(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()), a, b)


def test_host_and_device_do_not_mix():
    cupy = _cupy()
    with pytest.raises(TypeError, match="one operand is on the device"):
        gpureduce.dot(np.ones(3), cupy.ones(3))


def test_bitwise_the_same_on_every_run(rng):
    cupy = _cupy()
    a, b = cupy.asarray(data(rng, "float32", 1 << 22)), cupy.asarray(data(rng, "float32", 1 << 22))
    first = gpureduce.dot(a, b)
    assert all(gpureduce.dot(a, b).tobytes() == first.tobytes() for _ in range(10))


@pytest.mark.parametrize("n", [5, 100, 4097, 1 << 20])
def test_vector_loads_of_both_operands_and_their_alignment(n, rng):
    """Both operands aligned alike take 16-byte vector loads (segments.cuh: reads_vectors), after a scalar head
    when both start mid-vector; operands aligned differently take the scalar path: the same answers."""
    cupy = _cupy()
    for dtype in ("float32", "float64", "int8", "complex64", "float16"):
        a, b = data(rng, dtype, n + 3), data(rng, dtype, n + 3)
        da, db = cupy.asarray(a), cupy.asarray(b)
        for sa, sb in ((slice(0, n), slice(0, n)), (slice(1, n + 1), slice(1, n + 1)),
                       (slice(3, n + 3), slice(3, n + 3)), (slice(1, n + 1), slice(0, n)), (slice(0, n), slice(2, n + 2))):
            check(gpureduce.dot(da[sa], db[sb]), a[sa], b[sb])
            check(gpureduce.vdot(da[sa], db[sb]), a[sa], b[sb], conj=True)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("pairs", [255, 256, 512, 257])
@pytest.mark.parametrize("n", [1000, 65537])
def test_a_dot_of_bools_is_true_at_any_count_of_true_pairs(variant, pairs, n, rng):
    """NumPy's dot of bools is an OR of ANDs: 256 true pairs once came back False (a uint8 sum of products)."""
    a, b = np.zeros(n, bool), np.zeros(n, bool)
    both = rng.choice(n, pairs, replace=False)
    a[both] = b[both] = True
    a[rng.choice(n, n // 4)] = True  # and elements true in one operand only
    for x, y in [(a, b), (_cupy().asarray(a), _cupy().asarray(b))]:
        assert bool(to_numpy(gpureduce.dot(x, y, variant=variant))) is True
        assert bool(to_numpy(gpureduce.vdot(x, y, variant=variant))) is True
    assert bool(to_numpy(gpureduce.dot(a, ~a, variant=variant))) is False
