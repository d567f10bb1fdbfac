"""mean of a large host array as a streamed sum divided on the host (gpureduce/_planning/mean.py), checked without
a GPU: NumPy's sum stands in for gpureduce's; the accumulator, the count, the result's dtype and shape and the
cases that keep the mean kernel are the module's own."""
import numpy as np
import pytest

from gpureduce import _core
from gpureduce._planning import mean as mean_module
from gpureduce._planning.mean import mean_by_sum, streams_as_sum

BIG = _core.STREAM_FROM_BYTES + 1


def numpy_reduce(op, a, axis=None, dtype=None, out=None, keepdims=False, *, variant="auto"):
    assert op == "sum" and out is None
    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


@pytest.fixture(autouse=True)
def numpy_sums(monkeypatch):
    """NumPy's sum in place of the kernels' (the rewrite's one step, mean.reduce_once)."""
    monkeypatch.setattr(mean_module, "reduce_once", numpy_reduce)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8", "bool", "complex64"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matches_numpys_mean(dtype, axis, keepdims, rng):
    x = (rng.random((1000, 1500)) * 4).astype(dtype) if dtype != "complex64" else \
        (rng.random((1000, 1500)) + 1j * rng.random((1000, 1500))).astype(dtype)
    got = mean_by_sum(x, axis, None, keepdims, "auto")
    want = np.mean(x, axis=axis, keepdims=keepdims)
    assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
    if np.ndim(want) == 0:
        assert isinstance(got, np.generic), type(got)
    tol = 2e-3 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol)


def test_dtype_argument_is_the_accumulator(rng):
    x = rng.random((3000, 500)).astype(np.float32)
    got = mean_by_sum(x, 0, np.float64, False, "auto")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, x.astype(np.float64).mean(axis=0), rtol=1e-12)


def test_which_means_stream_as_sums():
    big = np.ones(BIG // 4 + 1, np.float32)
    assert streams_as_sum(big, None, None, True, "auto")
    assert streams_as_sum(big, np.float64, None, True, "cub")
    assert not streams_as_sum(np.ones(1000, np.float32), None, None, True, "auto")  # small: the mean kernel
    assert not streams_as_sum(big, None, None, big > 0, "auto")                      # where=: staged whole
    assert not streams_as_sum(big, None, np.empty(()), True, "auto")                 # out=
    assert not streams_as_sum(big, np.int32, None, True, "auto")                     # integer dtype=: NumPy's wrap
    assert not streams_as_sum(big, None, None, True, "shuffle")                      # a whole-array variant refuses
    assert not streams_as_sum(big.astype(object), None, None, True, "auto")          # unsupported: the usual error
