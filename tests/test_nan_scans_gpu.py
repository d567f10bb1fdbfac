"""nancumsum and nancumprod on the GPU against NumPy's (gpureduce.testing.assert_matches_numpy: exact for integer
results, within error_bound of a float64 reference for the rest): every dtype, shapes of up to 3 dimensions,
axis None or an int, dtype=, out=, exclusive, host and CuPy inputs, auto and cub, NaN densities up to all-NaN
rows; NaN made by the data (inf - inf) is kept; host arrays through the pipeline."""
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
FLOATS = ["float16", "float32", "float64", "complex64", "complex128"]
DTYPES = FLOATS + ["bool", "int8", "int32", "uint64"]
OPS = ["nancumsum", "nancumprod"]
VARIANTS = [v.name for v in gpureduce.variants(kind="scan") if "axes" in v.properties]


def with_nans(rng, dtype, shape, nans):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind not in "fc":
        return rng.integers(0, 3, n).astype(dtype).reshape(shape)
    # |x| = exp(N(0, 0.002)): a running product is exp of a random walk without drift, so a million factors stay
    # within exp(+-10) (float16 too) and clear of the subnormals, where a product keeps no relative precision
    x = np.exp(rng.normal(0.0, 0.002, n)) * rng.choice([-1.0, 1.0], n)
    if dtype.kind == "c":
        x = x * np.exp(1j * rng.uniform(-0.1, 0.1, n))
    x[rng.random(n) < nans] = np.nan
    return x.astype(dtype).reshape(shape)


@st.composite
def cases(draw):
    shape = draw_shape(draw)
    ndim = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None)))
    kwargs = {"axis": axis}
    if draw(st.booleans()):
        kwargs["exclusive"] = True
    dtype = draw(st.sampled_from(DTYPES))
    if draw(st.booleans()) and dtype in ("float16", "float32"):
        kwargs["dtype"] = np.float64
    return dict(op=draw(st.sampled_from(OPS)), dtype=dtype, shape=shape, kwargs=kwargs,
                nans=draw(st.sampled_from([0.0, 0.2, 0.9, 1.0])), **placement(draw, VARIANTS))


@PROPERTY
@given(cases())
def test_matches_numpy(c):
    x = with_nans(np.random.default_rng(c["seed"]), c["dtype"], c["shape"], c["nans"])
    assert_matches_numpy(c["op"], at_home(c["home"], x, {}), variant=c["variant"], **c["kwargs"])
    count_example()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [1, 33, 4097, 65537, 2**20 + 3])
def test_nans_at_every_edge(op, dtype, n, rng):
    """NaN first, last and in the middle, alone or everywhere: whole arrays, rows and columns."""
    for nans in (0.0, 0.5, 1.0):
        x = with_nans(rng, dtype, (n,), nans)
        x[0] = x[-1] = x[n // 2] = np.nan
        for y, axis in ((x, None), (np.stack([x, x[::-1], x]), 1), (np.stack([x, x[::-1], x]).T.copy(), 0)):
            assert_matches_numpy(op, y, axis=axis)


def test_nan_made_by_the_data_is_kept_and_signed_zeros_are_numpys():
    x = np.array([1.0, np.inf, np.nan, -np.inf, 2.0])
    np.testing.assert_array_equal(gpureduce.nancumsum(x), np.nancumsum(x))  # inf - inf: NaN from there on
    z = np.array([-0.0, np.nan, -0.0])
    assert np.array_equal(np.signbit(gpureduce.nancumsum(z)), np.signbit(np.nancumsum(z)))


def test_integers_run_the_plain_scan_and_variants_are_refused_by_name():
    x = np.arange(10, dtype=np.int32)
    got = gpureduce.nancumsum(x)
    assert got.dtype == np.nancumsum(x).dtype and np.array_equal(got, np.nancumsum(x))
    with pytest.raises(ValueError, match="does not scan nansum"):
        gpureduce.nancumsum(np.ones(3), variant="decoupled_lookback")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape, axis", [((2**23 + 5,), None), ((3, 2**21 + 7), 1), ((2**20 + 3, 7), 0)])
def test_host_arrays_through_the_pipeline(op, shape, axis, rng):
    assert_matches_numpy(op, with_nans(rng, "float32", shape, 0.3), axis=axis)
