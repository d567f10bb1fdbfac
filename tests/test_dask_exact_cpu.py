"""variant="exact" of Dask arrays without a GPU (gpureduce/dask/exact.py): each chunk's partial kept exactly as
float64 terms, the combine's and the aggregate's rounding once, with gpureduce's exact sum along the last axis stood
in for by gpureduce._bounds.exact_result (the reference tests/test_exact_sum_cpu.py checks against fractions and
the GPU suite holds the kernels to).  The result must be the whole reduction's correctly rounded value, the same
bits under every chunking; tests/test_dask_gpu.py's exact test runs it on the kernels."""
import types
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import count_example
from gpureduce._bounds import exact_result
from test_dask_cpu import NUMPY_KERNELS

da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpureduce.dask")


def _sum(x, axis=None, variant="auto", **options):
    """The exact sum of float64 rows along the last axis (what gpureduce/dask/exact.py asks), else NumPy's sum
    (auto's integer sums)."""
    if variant != "exact":
        return np.sum(x, axis=axis, **options)
    assert x.dtype == np.float64 and axis == -1 and not options
    return exact_result("sum", x, np.float64, axis)


@pytest.fixture
def exact_kernels(monkeypatch):
    monkeypatch.setattr(gd.chunks, "kernels", types.SimpleNamespace(**{**vars(NUMPY_KERNELS), "sum": _sum}))


def reference(op, x, axis=None, keepdims=False, dtype=None, initial=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = exact_result(op, x, np.dtype(dtype or x.dtype), axis, True, initial)
    if keepdims:
        want = np.expand_dims(want, tuple(range(x.ndim)) if axis is None else axis)
    return want


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and \
        np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))


def hard(dtype, n, rng, kind):
    if kind == "cancellation":
        half = rng.standard_normal((n + 1) // 2) * (1e3 if dtype == "float16" else 1e6)
        x = np.concatenate([half, -half])[:n] + rng.standard_normal(n) * 1e-6
    elif kind == "wide":
        info = np.finfo(dtype)
        exponents = rng.integers(info.minexp - info.nmant, info.maxexp - 12, n)
        x = rng.choice([-1, 1], n) * np.ldexp(rng.random(n) + 0.5, exponents)
    else:
        x = rng.standard_normal(n)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kind", ["normal", "cancellation", "wide"])
def test_any_chunking_gives_the_correctly_rounded_sum(exact_kernels, dtype, kind):
    rng = np.random.default_rng(3)
    x = hard(dtype, 600, rng, kind).reshape(20, 30)
    for op in ("sum", "mean"):
        for axis in (None, 0, 1, (0, 1)):
            want = reference(op, x, axis)
            for chunks in ((20, 30), (7, 11), (1, 30), (20, 1), (3, 4)):
                got = getattr(gd, op)(da.from_array(x, chunks=chunks), axis=axis, variant="exact").compute()
                assert same_bits(got, want), (op, dtype, kind, axis, chunks, got, want)


def test_nan_forms_keywords_and_special_values(exact_kernels):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((12, 9)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    d = da.from_array(x, chunks=(5, 4))
    for op in ("nansum", "nanmean"):
        assert same_bits(getattr(gd, op)(d, axis=1, variant="exact").compute(), reference(op, x, 1))
    assert np.isnan(gd.sum(d, variant="exact").compute())
    assert same_bits(gd.sum(d, axis=0, keepdims=True, variant="exact").compute(), reference("sum", x, 0, True))
    y = np.nan_to_num(x)
    dy = da.from_array(y, chunks=(5, 4))
    assert same_bits(gd.sum(dy, dtype=np.float64, variant="exact").compute(), reference("sum", y, dtype=np.float64))
    assert same_bits(gd.sum(dy, axis=1, initial=2.5, variant="exact").compute(), reference("sum", y, 1, initial=2.5))
    inf = np.array([np.inf, 1, 2, 3], np.float32)
    assert gd.sum(da.from_array(inf, chunks=2), variant="exact").compute() == np.inf
    both = np.array([np.inf, 1, 2, -np.inf], np.float32)
    assert np.isnan(gd.sum(da.from_array(both, chunks=2), variant="exact").compute())
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(gd.nanmean(da.from_array(np.full(4, np.nan, np.float32), chunks=2), variant="exact").compute())
    ints = np.arange(10)
    assert gd.sum(da.from_array(ints, chunks=3), variant="exact").compute() == 45  # integers: auto's kernels
    with pytest.raises(ValueError, match="sum, nansum, mean and nanmean"):
        gd.min(d, variant="exact")


def test_a_float64_chunk_beyond_float64_is_refused(exact_kernels):
    x = np.array([1.7e308, 1.7e308, -1.7e308, -1.7e308])
    with pytest.raises(OverflowError, match="beyond float64's range"):
        gd.sum(da.from_array(x, chunks=2), variant="exact").compute()
    assert gd.sum(da.from_array(x, chunks=1), variant="exact").compute() == 0.0  # chunks that fit: exactly 0


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # (a stand-in only)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_any_values_any_split(exact_kernels, data, dtype):
    """Any finite values, any 1-d chunking: the correctly rounded sum and mean of the whole."""
    bounds = {} if dtype is np.float32 else {"min_value": -1e300, "max_value": 1e300}  # no chunk's sum overflows
    values = data.draw(st.lists(st.floats(width=32 if dtype is np.float32 else 64, allow_nan=False,
                                          allow_infinity=False, **bounds), min_size=1, max_size=40), label="values")
    x = np.array(values, dtype)
    size = data.draw(st.integers(1, len(values)), label="chunk")
    d = da.from_array(x, chunks=size)
    assert same_bits(gd.sum(d, variant="exact").compute(), reference("sum", x))
    assert same_bits(gd.mean(d, variant="exact").compute(), reference("mean", x))
    count_example()


def test_complex_arrays_each_part(exact_kernels):
    """A complex Dask array: each part's exact reduction, joined with no arithmetic; a nan form drops an element
    where either part is NaN, as NumPy's; the eager reference's bits under every chunking."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((9, 14)) * 1e5 + 1j * rng.standard_normal((9, 14))).astype(np.complex64)
    x[2, 3] = complex(np.nan, 1)
    x[5, 7] = complex(np.inf, 2)
    for op in ("sum", "mean", "nansum", "nanmean"):
        for axis in (None, 0, 1):
            want = reference(op, x, axis)
            for chunks in ((9, 14), (4, 5)):
                got = getattr(gd, op)(da.from_array(x, chunks=chunks), axis=axis, variant="exact").compute()
                got, exact = np.asarray(got), np.asarray(want)
                assert got.dtype == np.complex64 and got.shape == exact.shape
                for g, w in ((got.real, exact.real), (got.imag, exact.imag)):
                    numbers = ~np.isnan(w)
                    assert np.array_equal(np.isnan(g), ~numbers) and np.array_equal(g[numbers].view(np.uint32),
                                                                                     w[numbers].view(np.uint32)), \
                        (op, axis, chunks, got, want)
    wide = gd.sum(da.from_array(x, chunks=4), axis=0, dtype=np.complex128, initial=1 - 2j, variant="exact").compute()
    want = reference("sum", x.astype(np.complex128), 0, initial=1 - 2j)
    assert wide.dtype == np.complex128 and np.array_equal(wide, want, equal_nan=True)
