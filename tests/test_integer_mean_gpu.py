"""mean with an integer or bool dtype=, as NumPy: the sum wraps in that dtype, the quotient is truncated.

NumPy's own ``numpy.mean(x, dtype=int8)`` is the reference, exactly (integers), for host inputs and every
device library, with axis=, keepdims=, where= and out=.
"""
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import DEVICE_LIBRARIES
from gpureduce.testing import to_numpy

pytestmark = pytest.mark.gpu

INTEGER_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "uint64"]
INPUT_DTYPES = ["int8", "int32", "uint16", "float32", "bool"]


def data(dtype, shape, rng):
    x = rng.integers(-120, 120, shape)
    return (x > 0 if dtype == "bool" else x).astype(dtype)


def expected(x, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.mean(x, **kwargs)


def check_equal(got, want):
    got_host = to_numpy(got)
    assert got_host.dtype == np.asarray(want).dtype and got_host.shape == np.shape(want)
    np.testing.assert_array_equal(got_host, want)


@pytest.mark.parametrize("in_dtype", INPUT_DTYPES)
@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_whole_array_host(dtype, in_dtype, rng):
    x = data(in_dtype, 1001, rng)
    got = gpureduce.mean(x, dtype=dtype)
    assert isinstance(got, np.generic)
    check_equal(got, expected(x, dtype=dtype))


def test_sum_wraps_in_the_dtype_before_dividing():
    x = np.array([100, 100, 3], np.int8)  # int8 sum 203 wraps to -53; -53 / 3 truncates to -17
    assert gpureduce.mean(x, dtype=np.int8) == np.int8(-17) == np.mean(x, dtype=np.int8)
    assert gpureduce.mean(np.array([-7, 0]), dtype=np.int64) == -3  # toward zero, not floor
    assert gpureduce.mean(np.array([True, False]), dtype=np.uint8) == 0


@pytest.mark.parametrize("library", ["numpy"] + sorted(DEVICE_LIBRARIES))
@pytest.mark.parametrize("axis", [0, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_axes_every_library(library, axis, keepdims, rng):
    x = data("int32", (6, 7, 33), rng)
    a = x if library == "numpy" else DEVICE_LIBRARIES[library](x)
    check_equal(gpureduce.mean(a, axis=axis, dtype=np.int16, keepdims=keepdims),
                expected(x, axis=axis, dtype=np.int16, keepdims=keepdims))


@pytest.mark.parametrize("library", ["numpy", "cupy", "torch"])
def test_where(library, rng):
    x = data("int16", (5, 40), rng)
    where = rng.random((1, 40)) > 0.4  # broadcast over the rows
    a, w = (x, where) if library == "numpy" else (DEVICE_LIBRARIES[library](x), DEVICE_LIBRARIES[library](where))
    check_equal(gpureduce.mean(a, axis=1, dtype=np.int64, where=w), expected(x, axis=1, dtype=np.int64, where=where))
    check_equal(gpureduce.mean(a, dtype=np.int8, where=w), expected(x, dtype=np.int8, where=where))


@pytest.mark.parametrize("library", ["numpy", "cupy"])
@pytest.mark.parametrize("out_dtype", ["int32", "float32", "uint8"])
def test_out(library, out_dtype, rng):
    x = data("int32", (9, 50), rng)
    want = np.zeros(9, out_dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.mean(x, axis=1, dtype=np.int64, out=want)
    if library == "numpy":
        out = np.full(9, 77, out_dtype)
        assert gpureduce.mean(x, axis=1, dtype=np.int64, out=out) is out
    else:
        cupy = pytest.importorskip("cupy")
        out = cupy.full(9, 77, out_dtype)
        assert gpureduce.mean(cupy.asarray(x), axis=1, dtype=np.int64, out=out) is out
    np.testing.assert_array_equal(to_numpy(out), want)


def test_empty_axis_warns_like_numpy():
    x = np.zeros((0, 3), np.int32)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = gpureduce.mean(x, axis=0, dtype=np.int32)
    check_equal(got, expected(x, axis=0, dtype=np.int32))


def test_a_variant_without_mean_is_refused():
    with pytest.raises(ValueError, match="does not implement mean"):
        gpureduce.mean(np.arange(10), dtype=np.int64, variant="shuffle")
