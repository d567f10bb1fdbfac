"""nansum, nanprod, nanmin, nanmax, nanmean, nanargmin and nanargmax on the GPU against NumPy's
(gpureduce.testing.assert_matches_numpy: exact for nanmin/nanmax, the positions and integer results, within
error_bound of a float64 reference for the rest, NaN where NumPy has NaN): every dtype, shapes of up to 4
dimensions with zero-size sides, axes, keepdims, where=, initial=, dtype=, out=, host and CuPy inputs, auto and
cub, NaN densities up to all-NaN slices; NumPy's warnings and errors (the positions' ValueError for all-NaN
slices); NaN made by the data (inf - inf) is not skipped; host arrays through the pipeline."""
import os
import warnings

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
OPS = ["nansum", "nanprod", "nanmin", "nanmax", "nanmean"]
ARG_OPS = ["nanargmin", "nanargmax"]  # one int axis or None, no where= or initial=; all-NaN slices: ValueError
VARIANTS = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]


def with_nans(rng, dtype, shape, nans):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind not in "fc":
        return rng.integers(0, 3, n).astype(dtype).reshape(shape)
    x = rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n)  # products stay near 1
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(-0.5, 0.5, n)
    x[rng.random(n) < nans] = np.nan
    if dtype.kind == "c":  # NaN in one part only is NaN too
        part = rng.random(n) < nans / 2
        x[part] = x[part].real + 1j * np.nan
    return x.astype(dtype).reshape(shape)


@st.composite
def cases(draw):
    op = draw(st.sampled_from(OPS))
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw_shape(draw)
    ndim = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None)))
    kwargs = {"axis": axis, "keepdims": draw(st.booleans())}
    if draw(st.booleans()):
        kwargs["where"] = draw(st.integers(0, 2**32 - 1))  # seeds a mask below
    if op in ("nanmin", "nanmax") and (draw(st.booleans()) or "where" in kwargs):
        kwargs["initial"] = draw(st.sampled_from([-1.0, 0.25, 4.0]))
    if op in ("nansum", "nanprod") and draw(st.booleans()):
        kwargs["initial"] = draw(st.sampled_from([0.5, 2.0]))
    return dict(op=op, dtype=dtype, shape=shape, kwargs=kwargs, nans=draw(st.sampled_from([0.0, 0.2, 0.9, 1.0])),
                **placement(draw, VARIANTS))


@PROPERTY
@given(cases())
def test_matches_numpy(c):
    rng = np.random.default_rng(c["seed"])
    x = with_nans(rng, c["dtype"], c["shape"], c["nans"])
    kwargs = dict(c["kwargs"])
    if "where" in kwargs:
        kwargs["where"] = np.random.default_rng(kwargs["where"]).random(x.shape) < 0.7
    if np.dtype(c["dtype"]).kind == "c" and c["op"] in ("nanmin", "nanmax") and "initial" in kwargs:
        kwargs["initial"] = complex(kwargs["initial"])
    a = at_home(c["home"], x, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the warnings have their own test below
        assert_matches_numpy(c["op"], a, variant=c["variant"], **kwargs)
    count_example()


@st.composite
def arg_cases(draw):
    shape = draw_shape(draw, smallest=1)
    ndim = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None)))
    return dict(op=draw(st.sampled_from(ARG_OPS)), dtype=draw(st.sampled_from(DTYPES)), shape=shape,
                kwargs={"axis": axis, "keepdims": draw(st.booleans())},
                nans=draw(st.sampled_from([0.0, 0.2, 0.9, 1.0])), **placement(draw, VARIANTS))


@PROPERTY
@given(arg_cases())
def test_arg_forms_match_numpy(c):
    """The first extreme number's position; NumPy's ValueError where a slice holds NaNs only (nans=1.0 and, by
    chance, 0.9); ties (the values are 0, 1, 2 for integers) go to the first position."""
    x = with_nans(np.random.default_rng(c["seed"]), c["dtype"], c["shape"], c["nans"])
    assert_matches_numpy(c["op"], at_home(c["home"], x, {}), variant=c["variant"], **c["kwargs"])
    count_example()


def test_arg_forms_refuse_all_nan_slices_on_device_too():
    cp = pytest.importorskip("cupy")
    x = cp.asarray([[np.nan, 1.0], [np.nan, np.nan]])
    for op in ARG_OPS:
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(gpureduce, op)(x, axis=1)
        got = getattr(gpureduce, op)(cp.asarray([[np.nan, 1.0], [2.0, np.nan]]), axis=0)
        assert isinstance(got, cp.ndarray) and cp.asnumpy(got).tolist() == [1, 0]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS + ARG_OPS)
@pytest.mark.parametrize("n", [1, 33, 4097, 65537, 2**20 + 3])
def test_lone_number_among_nans_and_lone_nan_among_numbers(op, dtype, n, rng):
    """One number among NaNs at the first, last and a random place (what every NaN-skipping fold must find),
    and one NaN among numbers; whole arrays and rows."""
    for pos in sorted({0, n - 1, int(rng.integers(0, n))}):
        lone = np.full(n, np.nan, dtype)
        lone[pos] = 1.25
        some = with_nans(rng, dtype, (n,), 0.0)
        some[pos] = np.nan
        for x in (lone, some, np.stack([lone, some, lone])):
            for axis in ([None, 1] if x.ndim == 2 else [None]):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    assert_matches_numpy(op, x, axis=axis)


@pytest.mark.parametrize("op, message", [("nanmin", "All-NaN slice encountered"),
                                         ("nanmax", "All-NaN slice encountered"),
                                         ("nanmean", "Mean of empty slice")])
def test_warns_as_numpy(op, message):
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    for axis in (1, None):
        with warnings.catch_warnings(record=True) as numpy_warned:
            warnings.simplefilter("always")
            want = getattr(np, op)(x, axis=axis)
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            got = getattr(gpureduce, op)(x, axis=axis)
        np.testing.assert_array_equal(got, want)
        assert [str(w.message) for w in warned] == [str(w.message) for w in numpy_warned], axis
        if axis == 1:
            assert any(message in str(w.message) for w in warned), [str(w.message) for w in warned]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NaN made by inf - inf is not "empty": no warning from nanmean
        np.testing.assert_array_equal(gpureduce.nanmean(np.array([np.inf, -np.inf])), np.nan)


def test_nan_made_by_the_data_is_not_skipped():
    x = np.array([np.inf, 1.0, -np.inf, np.nan], np.float32)
    for op in ("nansum", "nanmean"):
        assert np.isnan(getattr(gpureduce, op)(x)) and np.isnan(getattr(np, op)(x))
    big = np.zeros(2**20, np.float32)
    big[5], big[2**19 + 7], big[100] = np.inf, -np.inf, np.nan
    assert np.isnan(gpureduce.nansum(big))


@pytest.mark.parametrize("op", OPS + ARG_OPS)
def test_empty_and_errors_as_numpy(op):
    for x in (np.zeros(0), np.zeros((3, 0))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert_matches_numpy(op, x)
            assert_matches_numpy(op, x, axis=-1)
    if op in ("nanmin", "nanmax"):
        assert_matches_numpy(op, np.zeros(0), initial=3.0)
        assert_matches_numpy(op, np.zeros((0, 3), np.int32), axis=0)  # ints run min: NumPy's error


@pytest.mark.parametrize("op", OPS + ARG_OPS)
@pytest.mark.parametrize("shape, axis", [((2**23 + 5,), None), ((3, 2**21 + 7), 1), ((2**20 + 3, 7), 0)])
def test_host_arrays_through_the_pipeline(op, shape, axis, rng):
    x = with_nans(rng, "float32", shape, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_matches_numpy(op, x, axis=axis)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_arg_forms_take_a_nan_for_the_infinity_as_numpy_does(dtype, rng):
    """NumPy's nanargmin reads a NaN as +inf (nanargmax: as -inf), so where a slice's extreme is that infinity
    the first of the infinities and the NaNs wins.  Every array of up to 4 elements of NaN, inf, -inf and 1 with
    a number; then rows and columns of NaNs and the one infinity, long enough for every level of the kernels'
    trees, on the host and on the device."""
    import itertools

    for n in range(1, 5):
        for values in itertools.product([np.nan, np.inf, -np.inf, 1.0], repeat=n):
            x = np.array(values, dtype)
            if not np.isnan(x).all():
                for op in ARG_OPS:
                    assert_matches_numpy(op, x)
    for op, far in (("nanargmin", np.inf), ("nanargmax", -np.inf)):
        x = np.where(rng.random((67, 4099)) < 0.7, np.nan, far).astype(dtype)
        x[rng.integers(0, 67, 4099), np.arange(4099)] = far  # an infinity in every column and every row
        x[np.arange(67), rng.integers(0, 4099, 67)] = far
        for axis in (None, 0, 1):
            assert_matches_numpy(op, x, axis=axis)
            assert_matches_numpy(op, at_home("cupy", x, {}), axis=axis)
