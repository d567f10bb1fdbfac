"""logsumexp (scipy.special's) and logcumsumexp (PyTorch's) on the GPU against a float64 reference
(gpureduce.testing.assert_matches_numpy; SciPy's logsumexp where installed): real dtypes, shapes of up to 3
dimensions, axes, keepdims, out= for the scan, exclusive, host and CuPy inputs, auto and cub; values far beyond
exp's range, -inf, inf and NaN; return_sign; the errors; host arrays through the pipeline."""
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
DTYPES = ["float16", "float32", "float64", "bool", "int8", "int32", "uint64"]
REDUCE_VARIANTS = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]
SCAN_VARIANTS = [v.name for v in gpureduce.variants(kind="scan") if "axes" in v.properties]


def data(rng, dtype, n, spread, specials):
    dtype = np.dtype(dtype)
    if dtype.kind not in "f":
        return rng.integers(0, 2 if dtype.kind == "b" else 50, n).astype(dtype)
    x = rng.standard_normal(n) * spread
    special = rng.random(n) < specials
    x[special] = rng.choice([-np.inf, np.inf, np.nan], int(special.sum()))
    return x.astype(dtype)


@st.composite
def cases(draw):
    shape = draw_shape(draw)
    ndim = len(shape)
    scan = draw(st.booleans())
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None)))
    kwargs = {"axis": axis}
    if scan and draw(st.booleans()):
        kwargs["exclusive"] = True
    if not scan:
        # (SciPy 1.17's quirks left out: a 0-d input with keepdims gives shape (1,), an empty input of 2 or more
        # dimensions with axis=None raises IndexError; gpureduce gives NumPy's shape () and -inf there)
        kwargs["keepdims"] = draw(st.booleans()) and ndim > 0
        if axis is None and ndim > 1 and 0 in shape:
            kwargs["axis"] = 0
    dtype = draw(st.sampled_from(DTYPES))
    spread = draw(st.sampled_from([1.0, 100.0] if dtype == "float16" else [1.0, 100.0, 1e4]))
    return dict(op="logcumsumexp" if scan else "logsumexp", dtype=dtype, shape=shape, kwargs=kwargs, spread=spread,
                specials=draw(st.sampled_from([0.0, 0.0, 0.05])),
                **placement(draw, SCAN_VARIANTS if scan else REDUCE_VARIANTS))


@PROPERTY
@given(cases())
def test_matches_the_reference(c):
    rng = np.random.default_rng(c["seed"])
    x = data(rng, c["dtype"], int(np.prod(c["shape"])), c["spread"], c["specials"]).reshape(c["shape"])
    assert_matches_numpy(c["op"], at_home(c["home"], x, {}), variant=c["variant"], **c["kwargs"])
    count_example()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 33, 4097, 2**20 + 3])
def test_beyond_exps_range_and_at_every_edge(dtype, n, rng):
    """Values of +-1e4 (exp overflows float64 at 710): the largest first, last or in the middle."""
    for pos in sorted({0, n - 1, n // 2}):
        x = (rng.standard_normal(n) * 3 - 1e4).astype(dtype)
        x[pos] = 1e4
        for y, axis in ((x, None), (np.stack([x, x[::-1]]), 1), (np.stack([x, x[::-1]]).T.copy(), 0)):
            assert_matches_numpy("logsumexp", y, axis=axis)
            assert_matches_numpy("logcumsumexp", y, axis=axis)


def test_infinities_nan_and_empty_as_scipy():
    cases = [np.array([-np.inf, -np.inf]), np.array([np.inf, 1.0]), np.array([np.inf, np.inf]),
             np.array([np.inf, -np.inf]), np.array([np.nan, 1.0]), np.zeros(0), np.array([3.0])]
    for x in cases:
        assert_matches_numpy("logsumexp", x)
        assert_matches_numpy("logcumsumexp", x)


def test_return_sign_as_scipy():
    scipy_special = pytest.importorskip("scipy.special")
    cp = pytest.importorskip("cupy")
    x = np.array([[-np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [np.nan, 0.0, 1.0]])
    for a, axis in ((x, 1), (x, None), (np.zeros((2, 0)), 1), (cp.asarray(x), 1)):
        res, sign = gpureduce.logsumexp(a, axis=axis, return_sign=True)
        want_res, want_sign = scipy_special.logsumexp(gpureduce.testing.to_numpy(a), axis=axis, return_sign=True)
        np.testing.assert_allclose(gpureduce.testing.to_numpy(res), want_res, rtol=1e-14)
        np.testing.assert_array_equal(gpureduce.testing.to_numpy(sign), want_sign)
        assert type(sign) is type(res)


def test_refuses_complex_and_weights():
    with pytest.raises(TypeError, match="logsumexp"):
        gpureduce.logsumexp(np.ones(3, np.complex64))
    with pytest.raises(TypeError, match="weights"):
        gpureduce.logsumexp(np.ones(3), b=np.ones(3))


@pytest.mark.parametrize("op", ["logsumexp", "logcumsumexp"])
@pytest.mark.parametrize("shape, axis", [((2**23 + 5,), None), ((3, 2**21 + 7), 1), ((2**20 + 3, 7), 0)])
def test_host_arrays_through_the_pipeline(op, shape, axis, rng):
    assert_matches_numpy(op, (rng.standard_normal(shape) * 10).astype(np.float32), axis=axis)
