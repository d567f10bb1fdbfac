"""ptp on the GPU against NumPy's, exactly (max - min in the input's dtype, as NumPy subtracts): every dtype but
bool (NumPy refuses it: so does gpureduce), shapes of up to 3 dimensions, axes, keepdims, out=, host and CuPy
inputs, auto and cub, NaN anywhere; integer ranges that wrap around; NumPy's errors; host arrays through the
pipeline."""
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
DTYPES = [d for d in gpureduce._registry.DTYPE_NAMES if d != "bool"]
VARIANTS = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]


def data(rng, dtype, n, nans):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)  # the whole range: max - min wraps around for signed types
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x = rng.standard_normal(n) * 100
    if dtype.kind == "c":
        x = x + 1j * rng.choice([-1.0, 0.0, 1.0], n)  # equal real parts: the imaginary part decides
    x[rng.random(n) < nans] = np.nan
    return x.astype(dtype)


@st.composite
def cases(draw):
    shape = draw_shape(draw, smallest=1)
    ndim = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None),
                          st.just(tuple(range(ndim)))))
    kwargs = {"axis": axis, "keepdims": draw(st.booleans())}
    return dict(dtype=draw(st.sampled_from(DTYPES)), shape=shape, kwargs=kwargs,
                nans=draw(st.sampled_from([0.0, 0.001, 0.5])), out=draw(st.booleans()), **placement(draw, VARIANTS))


@PROPERTY
@given(cases())
def test_matches_numpy(c):
    rng = np.random.default_rng(c["seed"])
    x = data(rng, c["dtype"], int(np.prod(c["shape"])), c["nans"]).reshape(c["shape"])
    kwargs = dict(c["kwargs"])
    a = at_home(c["home"], x, kwargs)
    if c["out"]:
        shape = np.ptp(x, **kwargs).shape
        kwargs["out"] = np.full(shape, 7, x.dtype) if c["home"] == "numpy" else \
            at_home("cupy", np.full(shape, 7, x.dtype), {})
    assert_matches_numpy("ptp", a, variant=c["variant"], **kwargs)
    count_example()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "uint64", "float16", "float32", "complex128"])
@pytest.mark.parametrize("n", [1, 2, 33, 4097, 2**20 + 3])
def test_extremes_at_every_edge(dtype, n, rng):
    """The minimum and the maximum at the first, last and a random place, alone in a flat array: whole arrays,
    rows and columns."""
    for lo, hi in [(0, n - 1), (n - 1, 0), tuple(rng.integers(0, n, 2))]:
        x = np.ones(n, dtype)
        x[hi] = 5
        x[lo] = -3 if np.dtype(dtype).kind != "u" else 0
        for y, axis in ((x, None), (np.stack([x, x[::-1]]), 1), (np.stack([x, x[::-1]]).T.copy(), 0)):
            assert_matches_numpy("ptp", y, axis=axis)


def test_wraps_nans_and_errors_as_numpy():
    assert gpureduce.ptp(np.array([-128, 127], np.int8)) == np.int8(-1)
    assert gpureduce.ptp(np.array([0, 2**64 - 1], np.uint64)) == np.uint64(2**64 - 1)
    assert np.isnan(gpureduce.ptp(np.array([1.0, np.nan, 3.0])))
    assert gpureduce.ptp(np.array([1 + 5j, 1 - 2j, 0.5 + 9j])) == np.ptp(np.array([1 + 5j, 1 - 2j, 0.5 + 9j]))
    for x, kwargs in ((np.zeros(0), {}), (np.zeros((3, 0)), {"axis": 1}), (np.zeros((0, 3)), {"axis": 1}),
                      (np.ones(3, bool), {})):
        assert_matches_numpy("ptp", x, **kwargs)  # NumPy's ValueError / TypeError, or its empty result
    with pytest.raises(TypeError, match="where"):
        gpureduce.reduce("ptp", np.ones(3), where=np.ones(3, bool))


@pytest.mark.parametrize("shape, axis", [((2**23 + 5,), None), ((3, 2**21 + 7), 1), ((2**20 + 3, 7), 0)])
def test_host_arrays_through_the_pipeline(shape, axis, rng):
    x = data(rng, "float32", int(np.prod(shape)), 0.0).reshape(shape)
    assert_matches_numpy("ptp", x, axis=axis)
