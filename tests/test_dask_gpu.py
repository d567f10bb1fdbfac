"""gpureduce.dask with gpureduce's kernels on every chunk: NumPy chunks and CuPy chunks, against NumPy (integers
exactly, floats within gpureduce.testing.error_bound, doubled for the tree of partials); CuPy chunks give CuPy
results.  The graph logic itself is checked without a GPU in tests/test_dask_cpu.py."""
import warnings

import numpy as np
import pytest

import gpureduce
from gpureduce.testing import error_bound

da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpureduce.dask")

pytestmark = pytest.mark.gpu

SCANS = {"cumsum": np.cumsum, "cumprod": np.cumprod,
         "cummax": lambda x, axis=None: np.maximum.accumulate(x.ravel() if axis is None else x,
                                                              axis=0 if axis is None else axis),
         "cummin": lambda x, axis=None: np.minimum.accumulate(x.ravel() if axis is None else x,
                                                              axis=0 if axis is None else axis)}


def chunks_of(kind, x, chunks):
    d = da.from_array(x, chunks=chunks)
    if kind == "cupy":
        cupy = pytest.importorskip("cupy")
        d = d.map_blocks(cupy.asarray)
    return d


def host(r):
    return r.get() if hasattr(r, "get") else np.asarray(r)


def data(op, dtype, shape, rng):
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(-3, 4, shape) if "prod" not in op else rng.choice([-1, 1, 1, 1, 2], shape)
        return x.astype(dtype)
    return (1 + (rng.random(shape) - 0.5) * 1e-3 if "prod" in op else rng.standard_normal(shape)).astype(dtype)


def check(op, x, got, axis, keepdims=False):
    if op in SCANS:
        want = SCANS[op](x, axis=axis)
        bound_op = op if op in ("cumsum", "cumprod") else None
    else:
        want = getattr(np, op)(x, axis=axis, keepdims=keepdims)
        bound_op = op if op in ("sum", "prod", "mean") else None
    got = host(got)
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want), (op, got.dtype, got.shape)
    if bound_op is None or got.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want)
        return
    kw = {"keepdims": keepdims} if op not in SCANS else {}
    bound = 2 * error_bound(bound_op, x, got.dtype, axis=axis, **kw)
    wide = SCANS[op](x.astype(np.float64), axis=axis) if op in SCANS else getattr(np, op)(
        x.astype(np.float64), axis=axis, keepdims=keepdims)
    assert np.all(np.abs(got - wide) <= bound), f"{op} axis={axis}: error {np.max(np.abs(got - wide))} > bound"


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "mean", "argmin", "argmax",
                                "cumsum", "cumprod", "cummax", "cummin"])
def test_matches_numpy(kind, dtype, op, rng):
    x = data(op, dtype, (3000, 257), rng)
    d = chunks_of(kind, x, (700, 100))
    for axis in (None, 0, 1):
        got = getattr(gd, op)(d, axis=axis).compute()
        if kind == "cupy" and np.ndim(got) > 0:
            assert type(got).__module__.startswith("cupy"), f"{op} of CuPy chunks gave {type(got).__name__}"
        check(op, x, got, axis)
    if op not in SCANS and not op.startswith("arg"):
        check(op, x, getattr(gd, op)(d, axis=(0, 1), keepdims=True).compute(), (0, 1), keepdims=True)


def test_variant_reaches_the_chunks(rng):
    x = rng.standard_normal(2**20).astype(np.float32)
    d = da.from_array(x, chunks=2**18)
    got = gd.sum(d, variant="two_pass").compute()
    assert abs(float(got) - x.astype(np.float64).sum()) <= 2 * error_bound("sum", x, np.float32, variant="two_pass")
    with pytest.raises(ValueError, match="variant"):
        gd.sum(d, variant="no_such_variant").compute()


def test_xarray_reduce_on_dask_chunks(rng):
    xr = pytest.importorskip("xarray")
    x = rng.integers(-5, 5, (200, 30)).astype(np.int64)
    arr = xr.DataArray(da.from_array(x, chunks=(64, 30)), dims=("time", "space"))
    got = arr.reduce(gd.sum, dim="time").compute()
    np.testing.assert_array_equal(got.values, x.sum(axis=0))
    assert got.dims == ("space",)
    assert gpureduce.sum(x) == x.sum()


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
def test_initial(kind, rng):
    x = rng.integers(-9, 9, (500, 40)).astype(np.int64)
    d = chunks_of(kind, x, (128, 16))
    for op, initial in (("sum", 5), ("max", 100), ("min", -100)):
        for axis in (None, 0):
            np.testing.assert_array_equal(host(getattr(gd, op)(d, axis=axis, initial=initial).compute()),
                                          getattr(np, op)(x, axis=axis, initial=initial))


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex64"])
@pytest.mark.parametrize("ord", [2, 1, 0, np.inf, -np.inf, 3, -1])
def test_vector_norm_of_chunks(kind, dtype, ord, rng):
    """The norm of the chunks' norms against NumPy's on the float64 (complex128) data: within a few roundings of
    the result dtype per level of the tree (float64 inside each chunk, rounded once), or the float64 sums' own
    rounding (1e-12) for float64 results."""
    x = data("vector_norm", dtype, (3000, 257), rng)
    if np.dtype(dtype).kind == "c":
        x = (x + 1j * rng.standard_normal(x.shape)).astype(dtype)
    d = chunks_of(kind, x, (700, 100))
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    eps = float(np.finfo(np.linalg.vector_norm(x[:1]).dtype).eps)
    for axis, keepdims in ((None, False), (0, False), (1, True), ((0, 1), True)):
        got = host(gd.vector_norm(d, axis=axis, keepdims=keepdims, ord=ord).compute())
        want = np.linalg.vector_norm(wide, axis=axis, keepdims=keepdims, ord=ord)
        assert got.dtype == np.linalg.vector_norm(x, ord=ord).dtype and got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=max(16 * eps, 1e-12), atol=0)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_exact_is_the_whole_arrays_correctly_rounded_result_under_any_chunking(kind, dtype):
    """variant="exact" (gpureduce/dask/exact.py): each chunk's partial kept as exact float64 terms, so every
    chunking gives the bits of the eager exact call on the whole array and of the rational reference."""
    from gpureduce._bounds import exact_result

    rng = np.random.default_rng()
    half = rng.standard_normal((60, 250)) * (1e3 if dtype == "float16" else 1e6)
    x = (np.concatenate([half, -half[:, ::-1]], axis=1) + rng.standard_normal((60, 500))).astype(dtype)
    x[rng.random(x.shape) < 0.01] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a mean of a slice with a NaN, or of none
        for op in ("sum", "mean", "nansum", "nanmean"):
            for axis in (None, 0, 1):
                want = exact_result(op, x, np.dtype(dtype), axis)
                eager = host(getattr(gpureduce, op)(x, axis=axis, variant="exact"))
                for chunks in ((60, 500), (7, 61), (60, 13)):
                    got = host(getattr(gd, op)(chunks_of(kind, x, chunks), axis=axis, variant="exact").compute())
                    for value in (got, eager):
                        assert value.dtype == want.dtype and np.array_equal(value, want, equal_nan=True), \
                            (op, axis, chunks)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64"])
def test_exact_cumsum_is_the_eager_ones_under_any_chunking(kind, dtype):
    """variant="exact" cumsum and nancumsum (gpureduce/dask/exact_scans.py): each block's exact scan from its exact
    carry, so every chunking gives the eager exact scan's bits (tests/test_exact_scan_gpu.py holds those to the
    rational reference)."""
    rng = np.random.default_rng()
    part = np.float32 if dtype == "complex64" else dtype
    half = rng.standard_normal((40, 250)) * (1e2 if dtype == "float16" else 1e6)
    x = (np.concatenate([half, -half[:, ::-1]], axis=1) + rng.standard_normal((40, 500))).astype(part)
    if dtype == "complex64":
        x = (x + 1j * rng.standard_normal(x.shape)).astype(np.complex64)
    x[rng.random(x.shape) < 0.01] = np.nan
    for op in ("cumsum", "nancumsum"):
        for axis in (None, 0, 1):
            eager = host(getattr(gpureduce, op)(x, axis=axis, variant="exact"))
            for chunks in ((40, 500), (7, 61), (40, 13)):
                got = host(getattr(gd, op)(chunks_of(kind, x, chunks), axis=axis, variant="exact").compute())
                assert got.dtype == eager.dtype and got.shape == eager.shape, (op, axis, chunks)
                pairs = ((got.real, eager.real), (got.imag, eager.imag)) if dtype == "complex64" else ((got, eager),)
                for g, e in pairs:
                    number = ~np.isnan(e)  # (a zero's sign counts; a NaN's does not)
                    assert np.array_equal(g, e, equal_nan=True) and \
                        np.array_equal(np.signbit(g[number]), np.signbit(e[number])), (op, axis, chunks)


@pytest.mark.parametrize("kind", ["numpy", "cupy"])
def test_exact_of_complex_chunks_is_each_parts(kind):
    from gpureduce._bounds import exact_result

    rng = np.random.default_rng()
    x = (rng.standard_normal((40, 300)) * 1e5 + 1j * rng.standard_normal((40, 300))).astype(np.complex64)
    for op in ("sum", "nanmean"):
        want = exact_result(op, x, np.dtype(np.complex64), 1)
        got = host(getattr(gd, op)(chunks_of(kind, x, (9, 70)), axis=1, variant="exact").compute())
        assert got.dtype == want.dtype and np.array_equal(got, want), op
