"""gpureduce.dask's var, std, the nan functions, ptp, logsumexp and their scans with gpureduce's kernels on every
chunk: NumPy chunks and CuPy chunks, against NumPy (SciPy for logsumexp) on the data in float64: integers,
extrema and indices exactly, floats within gpureduce.testing's bounds, doubled for the tree of partials; CuPy
chunks give CuPy results.  The graph logic itself is checked without a GPU in tests/test_dask_cpu.py."""
import warnings

import numpy as np
import pytest

import gpureduce
from gpureduce.testing import _moments_bound, error_bound

da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpureduce.dask")

from test_dask_gpu import chunks_of, host  # noqa: E402

pytestmark = pytest.mark.gpu

SHAPE, CHUNKS = (3000, 257), (700, 100)


def computed(kind, r):
    """r computed; of CuPy chunks, an array result is a CuPy array."""
    got = r.compute()
    if kind == "cupy" and np.ndim(got) > 0:
        assert type(got).__module__.startswith("cupy"), f"CuPy chunks gave {type(got).__name__}"
    return host(got)


def data(dtype, rng, near_one=False):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return (rng.integers(-3, 4, SHAPE) if not near_one else rng.choice([-1, 1, 1, 1, 2], SHAPE)).astype(dtype)
    x = 1 + (rng.random(SHAPE) - 0.5) * 1e-3 if near_one else rng.standard_normal(SHAPE)
    if dtype.kind == "c":
        x = x + 1j * (rng.standard_normal(SHAPE) if not near_one else (rng.random(SHAPE) - 0.5) * 1e-3)
    return x.astype(dtype)


def with_nans(x, rng):
    """NaNs: 2% at random, the first and last element, and the first chunk of column 5 (a chunk's slice of NaNs
    only beside chunks with numbers)."""
    if x.dtype.kind not in "fc":
        return x
    x = x.copy()
    x[rng.random(x.shape) < 0.02] = np.nan
    x.flat[0] = x.flat[-1] = np.nan
    x[:CHUNKS[0], 5] = np.nan
    return x


def wide(x):
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def assert_within(got, reference, bound):
    reference = np.asarray(reference)
    assert got.shape == reference.shape, (got.shape, reference.shape)
    with np.errstate(invalid="ignore"):
        same = (got == reference) | (np.isnan(got) & np.isnan(reference))
        error = np.abs(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64) - reference)
    assert np.all(same | (error <= bound)), f"error {np.nanmax(np.where(same, 0, error))} over the bound"


CALLS = [(None, False), (0, False), (1, True), ((0, 1), True)]


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex64"])
@pytest.mark.parametrize("op", ["var", "std", "nanvar", "nanstd"])
def test_moments_match_numpy(kind, dtype, op, rng):
    x = data(dtype, rng)
    if op.startswith("nan"):
        x = with_nans(x, rng)
    d = chunks_of(kind, x, CHUNKS)
    for axis, keepdims in CALLS:
        for ddof in (0, 1):
            got = computed(kind, getattr(gd, op)(d, axis=axis, keepdims=keepdims, ddof=ddof))
            want = getattr(np, op)(x, axis=axis, keepdims=keepdims, ddof=ddof)
            assert got.dtype == want.dtype and got.shape == np.shape(want), (op, got.dtype, got.shape)
            reference, bound = _moments_bound(op, x, want.dtype, axis, {"keepdims": keepdims, "ddof": ddof})
            assert_within(got, reference, 2 * bound)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
def test_var_keeps_its_digits_under_a_large_offset(kind, rng):
    """float32 1e4 + N(0, 1): the chunks' float64 (count, mean, M2) merged with Chan's formula give the variance
    to the result's last bits."""
    x = (1e4 + rng.standard_normal(SHAPE)).astype(np.float32)
    d = chunks_of(kind, x, CHUNKS)
    for op in ("var", "std", "nanvar"):
        for axis in (None, 0):
            got = computed(kind, getattr(gd, op)(d, axis=axis))
            want = getattr(np, op)(x.astype(np.float64), axis=axis)
            assert got.dtype == np.float32
            assert np.all(np.abs(got - want) <= 2 * np.finfo(np.float32).eps * want), (op, axis)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("op", ["nansum", "nanprod", "nanmean", "nanmin", "nanmax"])
def test_nan_reductions_match_numpy(kind, dtype, op, rng):
    x = with_nans(data(dtype, rng, near_one=op == "nanprod"), rng)
    d = chunks_of(kind, x, CHUNKS)
    for axis, keepdims in CALLS:
        got = computed(kind, getattr(gd, op)(d, axis=axis, keepdims=keepdims))
        want = getattr(np, op)(x, axis=axis, keepdims=keepdims)
        assert got.dtype == want.dtype and got.shape == np.shape(want), (op, got.dtype, got.shape)
        if op in ("nanmin", "nanmax") or want.dtype.kind not in "fc":
            np.testing.assert_array_equal(got, want)
            continue
        reference = getattr(np, op)(wide(x), axis=axis, keepdims=keepdims)
        bound = 2 * error_bound(op, x, want.dtype, axis=axis, keepdims=keepdims, reference=reference)
        assert_within(got, reference, bound)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
def test_slices_of_nans_only(kind, rng):
    """A column of NaNs only: nanmin and nanmax NaN and NumPy's warning, nanmean NaN and "Mean of empty slice",
    nanvar NaN and "Degrees of freedom", nansum 0, nanargmin NumPy's ValueError; along the other axis, numbers."""
    x = with_nans(data("float32", rng), rng)
    x[:, 7] = np.nan
    d = chunks_of(kind, x, CHUNKS)
    for op, message in (("nanmin", "All-NaN slice"), ("nanmax", "All-NaN slice"), ("nanmean", "Mean of empty"),
                        ("nanvar", "Degrees of freedom"), ("nanstd", "Degrees of freedom")):
        with pytest.warns(RuntimeWarning, match=message):
            got = computed(kind, getattr(gd, op)(d, axis=0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, op)(x, axis=0)
        assert np.isnan(got[7]) and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert computed(kind, gd.nansum(d, axis=0))[7] == 0
    for op in ("nanargmin", "nanargmax"):
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(gd, op)(d, axis=0).compute()
        np.testing.assert_array_equal(computed(kind, getattr(gd, op)(d, axis=1)), getattr(np, op)(x, axis=1))


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("op", ["nanargmin", "nanargmax"])
def test_nan_arg_reductions_give_the_first_number(kind, dtype, op, rng):
    """Few distinct values (ties everywhere), NaNs: the global index of the first extreme number, as NumPy's."""
    x = rng.integers(0, 3, SHAPE).astype(dtype)
    x = with_nans(x, rng)
    d = chunks_of(kind, x, CHUNKS)
    for axis in (None, 0, 1):
        for keepdims in (False, True):
            got = computed(kind, getattr(gd, op)(d, axis=axis, keepdims=keepdims))
            want = getattr(np, op)(x, axis=axis, keepdims=keepdims)
            assert got.dtype == np.int64 and got.shape == np.shape(want)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "float32", "float64"])
def test_ptp_matches_numpy(kind, dtype, rng):
    x = data(dtype, rng) if np.dtype(dtype).kind != "u" else rng.integers(0, 9, SHAPE).astype(dtype)
    if x.dtype.kind in "iu":
        x.flat[0], x.flat[-1] = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max  # the range wraps, as NumPy's
    else:
        x[100, 3] = np.nan
    d = chunks_of(kind, x, CHUNKS)
    for axis, keepdims in CALLS:
        got = computed(kind, gd.ptp(d, axis=axis, keepdims=keepdims))
        want = np.ptp(x, axis=axis, keepdims=keepdims)
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_logsumexp_matches_scipy(kind, dtype, rng):
    """Large values, rows of -inf only, with an inf, with a NaN, with both: SciPy's values, signs and dtypes."""
    special = pytest.importorskip("scipy.special")
    x = data(dtype, rng)
    if x.dtype.kind == "f":
        x = x * 300
        x[0] = -np.inf
        x[1, 200] = np.inf
        x[2, 0] = np.nan
        x[3, 0], x[3, -1] = np.inf, np.nan
    d = chunks_of(kind, x, CHUNKS)
    for axis, keepdims in CALLS:
        res, sign = gd.logsumexp(d, axis=axis, keepdims=keepdims, return_sign=True)
        got, got_sign = computed(kind, res), computed(kind, sign)
        with np.errstate(all="ignore"):
            want, want_sign = special.logsumexp(x, axis=axis, keepdims=keepdims, return_sign=True)
            reference = special.logsumexp(wide(x), axis=axis, keepdims=keepdims)
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        np.testing.assert_array_equal(got_sign, want_sign)
        bound = 2 * error_bound("logsumexp", x, want.dtype, axis=axis, keepdims=keepdims, reference=reference)
        assert_within(got, reference, bound)


def _logcumsumexp(x, axis=None):
    x = wide(x) if x.dtype.kind != "f" else x
    with np.errstate(invalid="ignore"):
        return np.logaddexp.accumulate(x.ravel() if axis is None else x, axis=0 if axis is None else axis)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("op", ["nancumsum", "nancumprod", "logcumsumexp"])
def test_new_scans_carry_across_blocks(kind, dtype, op, rng):
    x = with_nans(data(dtype, rng, near_one=op == "nancumprod"), rng)
    if op == "logcumsumexp" and x.dtype.kind == "f":
        x = np.nan_to_num(x, nan=-np.inf)  # (a NaN would make every later element NaN)
    d = chunks_of(kind, x, CHUNKS)
    reference = _logcumsumexp if op == "logcumsumexp" else getattr(np, op)
    for axis in (None, 0, 1):
        got = computed(kind, getattr(gd, op)(d, axis=axis))
        want = reference(x, axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape, (op, got.dtype, want.dtype)
        if want.dtype.kind not in "fc":
            np.testing.assert_array_equal(got, want)
            continue
        exact = reference(wide(x), axis=axis)
        assert_within(got, exact, 2 * error_bound(op, x, want.dtype, axis=axis, reference=exact))


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
def test_gpureduce_functions_of_dask_arrays_are_lazy(kind, rng):
    x = with_nans(data("float64", rng), rng)
    d = chunks_of(kind, x, CHUNKS)
    for op in ("var", "std", "nanvar", "nanstd", "nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin",
               "nanargmax", "ptp", "logsumexp", "nancumsum", "nancumprod", "logcumsumexp"):
        r = getattr(gpureduce, op)(d, axis=1)
        assert isinstance(r, da.Array), f"gpureduce.{op} of a Dask array gave {type(r).__name__}"
        np.testing.assert_array_equal(computed(kind, r), computed(kind, getattr(gd, op)(d, axis=1)))
    np.testing.assert_array_equal(computed(kind, gpureduce.var(d, axis=0, ddof=1)),
                                  computed(kind, gd.var(d, axis=0, ddof=1)))


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
def test_xarray_reduce_var_and_nanmean(kind, rng):
    """xarray's DataArray.reduce with gpureduce's functions on Dask-backed data equals xarray's own reductions."""
    xr = pytest.importorskip("xarray")
    x = rng.standard_normal((400, 30))
    x[rng.random(x.shape) < 0.05] = np.nan
    x[:, 3] = np.nan
    arr = xr.DataArray(chunks_of(kind, x, (64, 30)), dims=("time", "space"))
    plain = xr.DataArray(x, dims=("time", "space"))
    for fn, kwargs, want in ((gpureduce.var, {}, plain.var(dim="time", skipna=False)),
                             (gpureduce.var, {"ddof": 1}, plain.var(dim="time", skipna=False, ddof=1)),
                             (gpureduce.nanvar, {}, plain.var(dim="time", skipna=True)),
                             (gpureduce.nanmean, {}, plain.mean(dim="time", skipna=True))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # column 3: NumPy's warnings, as xarray's own
            got = arr.reduce(fn, dim="time", **kwargs).compute()
        assert got.dims == ("space",)
        np.testing.assert_allclose(host(got.data), want.values, rtol=1e-12)
