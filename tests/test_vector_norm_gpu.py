"""vector_norm on the GPU against numpy.linalg.vector_norm on a float64 / complex128 copy
(gpureduce.testing.assert_matches_numpy): every order (2, 1, 0, inf, -inf, fractional and negative p), every
dtype, shapes of up to 3 dimensions, int and tuple axes, keepdims, host and CuPy inputs, auto and cub; NaN, inf
and zeros; the 2-norm of values whose squares overflow or underflow float64; host arrays through the pipeline."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpureduce
from conftest import at_home, count_example, draw_shape, placement
from gpureduce.testing import assert_matches_numpy

pytestmark = pytest.mark.gpu

EXAMPLES = int(os.environ.get("GR_HYPOTHESIS_EXAMPLES", "200"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = ["float16", "float32", "float64", "complex64", "complex128", "bool", "int8", "int32", "uint64"]
ORDERS = [2, 1, 0, np.inf, -np.inf, 3, 0.5, -1, -2.5, None]
VARIANTS = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]


def data(rng, dtype, n, specials):
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        return rng.integers(0, 2 if dtype.kind == "b" else 50, n).astype(dtype)
    x = rng.standard_normal(n) * 4
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(n) * 4
    x[rng.random(n) < 0.1] = 0  # zeros: ord 0 counts them out, a negative ord turns them into inf
    special = rng.random(n) < specials
    x[special] = rng.choice([-np.inf, np.inf, np.nan], int(special.sum()))
    return x.astype(dtype)


@st.composite
def cases(draw):
    shape = draw_shape(draw)
    ndim = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None),
                          st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple) if ndim
                          else st.just(None)))
    return dict(dtype=draw(st.sampled_from(DTYPES)), shape=shape, ord=draw(st.sampled_from(ORDERS)),
                kwargs={"axis": axis, "keepdims": draw(st.booleans())},
                specials=draw(st.sampled_from([0.0, 0.0, 0.05])), **placement(draw, VARIANTS))


@PROPERTY
@given(cases())
def test_matches_numpy(c):
    rng = np.random.default_rng(c["seed"])
    x = data(rng, c["dtype"], int(np.prod(c["shape"])), c["specials"]).reshape(c["shape"])
    assert_matches_numpy("vector_norm", at_home(c["home"], x, {}), variant=c["variant"], ord=c["ord"], **c["kwargs"])
    count_example()


@pytest.mark.parametrize("ord", ORDERS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1023, 1024, 1025, 65537, 2**20 + 3])
def test_every_order_dtype_and_size_class(ord, dtype, n, rng):
    x = data(rng, dtype, n, 0.0)
    if ord == -np.inf and n == 0:
        with pytest.raises(ValueError, match="zero-size array"):
            gpureduce.vector_norm(x, ord=ord)
        return
    assert_matches_numpy("vector_norm", x, ord=ord)
    if n > 2:  # rows and columns: the rows kernels and the columns kernels
        m = x[: n - n % 3].reshape(3, -1)
        assert_matches_numpy("vector_norm", m, ord=ord, axis=1)
        assert_matches_numpy("vector_norm", np.ascontiguousarray(m.T), ord=ord, axis=0, keepdims=True)


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e300, 1e-300, 1e-320])
@pytest.mark.parametrize("n", [2, 1000, 2**20])
def test_two_norm_neither_overflows_nor_underflows(scale, n, rng):
    """NumPy's float64 sum of squares overflows above about 1e154 and underflows below about 1e-154; the scaled
    sums give the norm itself, checked against scale * the norm of the unscaled data."""
    base = rng.uniform(0.5, 1.0, n)
    x = base * scale
    want = np.linalg.vector_norm(base) * scale
    for y in (x, -x, x.astype(np.complex128) * (1 + 1j) / np.sqrt(2)):
        got = gpureduce.vector_norm(y)
        assert got == pytest.approx(want, rel=1e-13 if scale > 1e-300 else 1e-6), (scale, n, y.dtype)
    mixed = np.concatenate([base * 1e300, base * 1e-300, base])  # all three accumulators at once
    want = np.linalg.vector_norm(base) * 1e300
    assert gpureduce.vector_norm(mixed) == pytest.approx(want, rel=1e-13)


def test_float32_norms_are_taken_in_float64(rng):
    """Squares of float32 values near its limit overflow NumPy's float32 sum; the float64 inside does not."""
    x = np.full(1000, 3e20, np.float32)
    assert np.isinf(np.linalg.vector_norm(x))
    assert gpureduce.vector_norm(x) == pytest.approx(np.float32(3e20) * np.sqrt(1000.0), rel=1e-6)
    assert gpureduce.vector_norm(x).dtype == np.float32


def test_special_values():
    nan, inf = np.nan, np.inf
    for ord in ORDERS:
        for x in (np.array([1.0, nan, 2.0]), np.array([1.0, inf, -2.0]), np.array([inf, nan]), np.array([0.0, -0.0])):
            assert_matches_numpy("vector_norm", x, ord=ord)


def test_device_inputs_give_device_results():
    cp = pytest.importorskip("cupy")
    x = cp.asarray(np.arange(12.0).reshape(3, 4))
    out = gpureduce.vector_norm(x, axis=1)
    assert isinstance(out, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(out), np.linalg.vector_norm(np.arange(12.0).reshape(3, 4), axis=1))
    torch = pytest.importorskip("torch")
    t = torch.arange(12.0, device="cuda").reshape(3, 4)
    got = gpureduce.vector_norm(t, ord=1, axis=0)
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.cpu().numpy(), np.abs(np.arange(12.0).reshape(3, 4)).sum(0))


@pytest.mark.parametrize("ord", [2, 1, np.inf, 3])
def test_host_arrays_through_the_pipeline(ord, rng):
    """Large host arrays go through the pinned pipeline in chunks of whole rows (ord is in every chunk's plan)."""
    x = rng.standard_normal((64, 2**18)).astype(np.float32)
    assert_matches_numpy("vector_norm", x, ord=ord, axis=1)
    assert_matches_numpy("vector_norm", x, ord=ord, axis=0)
    assert_matches_numpy("vector_norm", x, ord=ord)
