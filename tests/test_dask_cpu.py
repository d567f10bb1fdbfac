"""gpureduce.dask without a GPU: the graphs (chunk -> combine -> aggregate, block-by-block scans), result dtypes and
shapes, NumPy's semantics for ties and NaNs, and the errors, with NumPy's functions standing in for gpureduce's on
each chunk (gpureduce.dask.kernels).  tests/test_dask_gpu.py runs the same calls with gpureduce's kernels."""
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gpureduce
from conftest import count_example

da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpureduce.dask")


def _accumulate(ufunc):
    def scan(a, axis=None, **options):  # gpureduce.cummax / cummin: axis=None flattens, as cumsum does
        return ufunc.accumulate(a.ravel() if axis is None else a, axis=0 if axis is None else axis)
    return scan


NUMPY_KERNELS = types.SimpleNamespace(
    sum=np.sum, prod=np.prod, min=np.min, max=np.max, argmin=np.argmin, argmax=np.argmax, any=np.any, all=np.all,
    count_nonzero=np.count_nonzero, cumsum=np.cumsum, cumprod=np.cumprod, cummax=_accumulate(np.maximum),
    cummin=_accumulate(np.minimum), vector_norm=np.linalg.vector_norm)

REFERENCE = {"cummax": _accumulate(np.maximum), "cummin": _accumulate(np.minimum),
             "vector_norm": np.linalg.vector_norm}


@pytest.fixture
def numpy_kernels(monkeypatch):
    monkeypatch.setattr(gd, "kernels", NUMPY_KERNELS)


def reference(op, x, **kwargs):
    return REFERENCE[op](x, **kwargs) if op in REFERENCE else getattr(np, op)(x, **kwargs)


def data(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -50, 50, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def check(got, want, dtype):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
    if np.dtype(want.dtype).kind in "fc":
        tol = 1e-2 if want.dtype == np.float16 else 1e-4 if want.dtype in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    else:
        np.testing.assert_array_equal(got, want)


SHAPES = [((37, 53), (10, 17)), ((1000,), (99,)), ((6, 7, 8), (4, 3, 5)), ((5, 4), (5, 4)), ((0, 3), (2, 2))]
AXES = [None, 0, -1, (0, 1)]
DTYPES = ["bool", "int8", "int32", "uint16", "int64", "float16", "float32", "float64", "complex64"]


# (no min/max of complex numbers: gpureduce's min and max order real dtypes only)
OP_DTYPES = [(op, dt) for op in ("sum", "prod", "min", "max", "mean") for dt in DTYPES
             if not (op in ("min", "max") and np.dtype(dt).kind == "c")]


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@pytest.mark.parametrize("op,dtype", OP_DTYPES, ids=[f"{o}-{d}" for o, d in OP_DTYPES])
@pytest.mark.parametrize("shape,chunks", SHAPES, ids=[str(s) for s, _ in SHAPES])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(numpy_kernels, op, dtype, shape, chunks, keepdims, rng):
    x = data(dtype, shape, rng)
    if op == "prod" and np.dtype(dtype).kind in "fc":  # near 1: no overflow meeting underflow (order-dependent)
        x = (1 + (x - x.real.mean()) / 64).astype(dtype) if x.size else x
    d = da.from_array(x, chunks=chunks)
    for axis in AXES:
        if axis is not None and len(shape) < 2 and axis != 0 and axis != -1:
            continue
        reduced = range(len(shape)) if axis is None else np.atleast_1d(axis)
        if op in ("min", "max") and any(shape[a] == 0 for a in reduced):
            with pytest.raises(ValueError):
                reference(op, x, axis=axis)
            with pytest.raises(ValueError):
                getattr(gd, op)(d, axis=axis, keepdims=keepdims).compute()
            continue
        with np.errstate(all="ignore"):
            want = reference(op, x, axis=axis, keepdims=keepdims)
            got = getattr(gd, op)(d, axis=axis, keepdims=keepdims, split_every=2).compute()
        check(np.asarray(got), np.asarray(want), dtype)


@pytest.mark.parametrize("op,dtype", [("sum", "float64"), ("sum", "int64"), ("prod", "float64"), ("mean", "float32"),
                                      ("mean", "float64")])
def test_dtype_argument(numpy_kernels, op, dtype, rng):
    x = data("int32", (40, 30), rng)
    if op == "prod":  # no overflow: where inf meets 0 the answer depends on the order (NaN or 0)
        x = rng.choice(np.array([-1, 1, 1, 2], np.int32), x.shape)
    d = da.from_array(x, chunks=(7, 11))
    for axis in (None, 1):
        check(np.asarray(getattr(gd, op)(d, axis=axis, dtype=dtype).compute()),
              np.asarray(getattr(np, op)(x, axis=axis, dtype=dtype)), dtype)


@pytest.mark.parametrize("op,initial", [("sum", 7), ("prod", 2), ("min", -3), ("max", 4), ("min", 100)])
def test_initial_is_folded_in_once(numpy_kernels, op, initial, rng):
    """initial= counts once however many chunks and tree levels there are; it also gives min/max of an empty
    reduction a result, as NumPy's."""
    x = rng.choice(np.array([-1, 1, 1, 2], np.int64), (30, 40))
    d = da.from_array(x, chunks=(7, 9))
    for axis in (None, 0, 1):
        got = getattr(gd, op)(d, axis=axis, initial=initial, split_every=2).compute()
        check(np.asarray(got), np.asarray(getattr(np, op)(x, axis=axis, initial=initial)), "int64")
    if op in ("min", "max"):
        empty = da.ones((0, 5), chunks=2, dtype=np.int64)
        check(np.asarray(getattr(gd, op)(empty, axis=0, initial=initial).compute()),
              getattr(np, op)(np.ones((0, 5), np.int64), axis=0, initial=initial), "int64")


@pytest.mark.parametrize("op", ["argmin", "argmax"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "float64"])
def test_arg_reductions_give_the_first_global_index(numpy_kernels, op, dtype, rng):
    """Ties everywhere (few distinct values) and, for floats, NaNs: the first occurrence wins, across blocks."""
    x = rng.integers(0, 3, (41, 29)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.random(x.shape) < 0.02] = np.nan
    d = da.from_array(x, chunks=(9, 8))
    for axis in (None, 0, 1, -1):
        for keepdims in (False, True):
            got = getattr(gd, op)(d, axis=axis, keepdims=keepdims, split_every=3).compute()
            check(np.asarray(got), np.asarray(getattr(np, op)(x, axis=axis, keepdims=keepdims)), "int64")


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float32", "float64"])
@pytest.mark.parametrize("shape,chunks", SHAPES[:3], ids=[str(s) for s, _ in SHAPES[:3]])
def test_scans_carry_across_blocks(numpy_kernels, op, dtype, shape, chunks, rng):
    x = data(dtype, shape, rng)
    if op == "cumprod" and np.dtype(dtype).kind in "iu":
        x = np.sign(x).astype(dtype)  # products stay small
    d = da.from_array(x, chunks=chunks)
    for axis in [None] + list(range(len(shape))):
        with np.errstate(all="ignore"):
            want = reference(op, x, axis=axis)
            got = getattr(gd, op)(d, axis=axis).compute()
        check(np.asarray(got), np.asarray(want), dtype)


@pytest.mark.parametrize("op", ["cumsum", "cummax"])
def test_flattened_scans_keep_the_blocks_few(op):
    """axis=None: the flattened array keeps about the input's blocks (Dask's own cumreduction rechunks to blocks of
    `npartitions` elements: 51,400 blocks of 15 here, a graph whose ordering took 50 s)."""
    d = da.ones((3000, 257), chunks=(700, 100))
    r = getattr(gd, op)(d)
    assert r.shape == (3000 * 257,) and r.npartitions <= d.npartitions


def test_results_do_not_depend_on_scheduling(numpy_kernels, rng):
    """The tree of partials is fixed by the chunks and split_every: any scheduler gives the same bits."""
    import dask
    x = rng.standard_normal((300, 200)).astype(np.float32)
    d = da.from_array(x, chunks=(17, 23))
    results = []
    for scheduler in ("sync", "threads"):
        with dask.config.set(scheduler=scheduler):
            results.append([np.asarray(f(d, axis=0).compute()).tobytes() for f in (gd.sum, gd.mean, gd.cumsum)])
    assert results[0] == results[1]


def test_graphs_are_built_without_a_device():
    """Building a graph never runs a kernel: dtypes and shapes are NumPy's before compute()."""
    d = da.ones((100, 60), chunks=(30, 20), dtype=np.int32)
    for op in gd.__all__:
        for axis in (None, 0):
            r = getattr(gd, op)(d, axis=axis)
            want = reference(op, np.ones((100, 60), np.int32), axis=axis)
            assert r.dtype == np.asarray(want).dtype and r.shape == np.shape(want), (op, axis, r.dtype, r.shape)


def test_mean_of_nothing_warns_and_is_nan(numpy_kernels):
    d = da.ones((0, 4), chunks=2)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = gd.mean(d, axis=0).compute()
    assert got.shape == (4,) and np.isnan(got).all()


def test_gpureduce_functions_take_dask_arrays_lazily(numpy_kernels, rng):
    """gpureduce.sum(dask_array) is lazy, as numpy.sum(dask_array) is (never computed whole into host memory)."""
    x = rng.integers(-9, 9, (30, 40)).astype(np.int32)
    d = da.from_array(x, chunks=(7, 9))
    for op in ("sum", "prod", "min", "max", "mean", "argmin", "argmax", "cumsum", "cumprod", "cummax", "cummin"):
        r = getattr(gpureduce, op)(d, axis=0)
        assert isinstance(r, da.Array), f"gpureduce.{op} of a Dask array gave {type(r).__name__}"
        check(np.asarray(r.compute()), np.asarray(reference(op, x, axis=0)), "int64")
    check(np.asarray(gpureduce.sum(d, initial=3, dtype=np.int64).compute()), np.asarray(x.sum(dtype=np.int64) + 3),
          "int64")
    with pytest.raises(TypeError, match="where="):
        gpureduce.sum(d, where=x > 0)
    with pytest.raises(TypeError, match="exclusive"):
        gpureduce.cumsum(d, exclusive=True)


def test_assert_matches_numpy_takes_dask_arrays(numpy_kernels, rng):
    """gpureduce.testing computes the lazy result of a Dask input and holds it to NumPy's like any other:
    0-d results are NumPy scalars, dtypes and shapes NumPy's."""
    from gpureduce.testing import assert_matches_numpy
    x = rng.standard_normal((40, 30)).astype(np.float32)
    d = da.from_array(x, chunks=(9, 7))
    for op in ("sum", "mean", "max", "argmax", "argmin", "cumsum"):
        for axis in (None, 0):
            assert_matches_numpy(op, d, axis=axis)


def test_errors():
    with pytest.raises(TypeError, match="dask.array.Array"):
        gd.sum(np.ones(3))
    d = da.ones((4, 5), chunks=2)
    with pytest.raises(TypeError, match="axis"):
        gd.argmin(d, axis=(0, 1))
    with pytest.raises(np.exceptions.AxisError):
        gd.sum(d, axis=2)
    with pytest.raises(TypeError):
        gd.sum(da.ones(3, chunks=1, dtype=object))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("op", ["any", "all", "count_nonzero"])
def test_truth_reductions_match_numpy(numpy_kernels, op, axis, keepdims, rng):
    """any/all fold the partial results again; count_nonzero's partial counts are summed, not counted."""
    x = (rng.random((37, 29)) < 0.02).astype(np.float32) * rng.uniform(0.5, 2, (37, 29))
    for data in (x, np.zeros_like(x), np.ones_like(x)):
        d = da.from_array(data, chunks=(8, 7))
        got = getattr(gd, op)(d, axis=axis, keepdims=keepdims).compute()
        check(np.asarray(got), np.asarray(getattr(np, op)(data, axis=axis, keepdims=keepdims)), None)
        # through gpureduce's own function, as a user calls it
        assert np.array_equal(getattr(gpureduce, op)(d, axis=axis, keepdims=keepdims).compute(), got)


def _whole_arrays_only(fn, calls):
    """A stand-in for a classic variant's kernel: it refuses an axis or keepdims, as gpureduce's do."""
    def kernel(x, axis=None, variant="auto", **options):
        calls.append((variant, axis, options.get("keepdims", False)))
        if variant != "auto" and (axis is not None or options.get("keepdims")):
            raise ValueError(f"variant {variant!r} reduces a whole array (axis=None, no keepdims) and nothing else")
        return fn(x, axis=axis, **options)
    return kernel


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, (0, 1), (1, 0)])
def test_classic_variants_reduce_whole_chunks(monkeypatch, axis, keepdims, rng):
    """The seeds' classic variants (no "axes" property) take whole arrays only: a reduction over every axis gives
    them each chunk and each group of partials whole, and the kept dimensions are restored around the value."""
    calls = []
    stand_in = types.SimpleNamespace(**{op: _whole_arrays_only(getattr(np, op), calls)
                                        for op in ("sum", "prod", "min", "max")})
    monkeypatch.setattr(gd, "kernels", stand_in)
    x = rng.integers(-3, 4, (37, 29)).astype(np.float32)
    d = da.from_array(x, chunks=(8, 7))
    for op in ("sum", "max", "min"):
        got = getattr(gd, op)(d, axis=axis, keepdims=keepdims, variant="two_pass").compute()
        check(np.asarray(got), getattr(np, op)(x, axis=axis, keepdims=keepdims), np.float32)
    assert calls and all(c == ("two_pass", None, False) for c in calls), calls[:5]
    mean = gd.mean(d, axis=axis, keepdims=keepdims, variant="two_pass").compute()
    check(np.asarray(mean), np.mean(x, axis=axis, keepdims=keepdims), np.float32)
    with pytest.raises(ValueError, match="whole array"):  # one axis of two: the kernel's own refusal
        gd.sum(d, axis=0, variant="two_pass").compute()


def test_unknown_or_unable_variants_fail_when_the_graph_is_built():
    d = da.ones((4, 5), chunks=2)
    for call in (lambda: gd.sum(d, variant="no_such_variant"), lambda: gd.mean(d, variant="shufle"),
                 lambda: gd.cumsum(d, variant="no_such_scan")):
        with pytest.raises(ValueError, match="variant"):
            call()
    with pytest.raises(ValueError, match="argmin"):  # a classic variant has none: the message names those that do
        gd.argmin(d, variant="two_pass")


def test_xarray_reduce_with_dask_data(numpy_kernels, rng):
    xr = pytest.importorskip("xarray")
    x = rng.standard_normal((20, 30))
    arr = xr.DataArray(da.from_array(x, chunks=(7, 8)), dims=("time", "space"))
    got = arr.reduce(gd.sum, dim="time")
    want = xr.DataArray(x, dims=("time", "space")).sum(dim="time")
    assert got.dims == want.dims
    np.testing.assert_allclose(got.values, want.values)


# ---------------------------------------------------------------- properties: any shape, chunking and axes


@st.composite
def chunked_arrays(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 13), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    dtype = draw(st.sampled_from(["int8", "int32", "int64", "uint8", "bool", "float32", "float64"]))
    seed = draw(st.integers(0, 2**32 - 1))
    x = data(dtype, shape, np.random.default_rng(seed))
    return x, chunks


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays=chunked_arrays(), op=st.sampled_from(["sum", "prod", "min", "max", "mean", "argmin", "argmax",
                                                    "cumsum", "cumprod", "cummax", "cummin"]),
       axis_pick=st.integers(-4, 3), keepdims=st.booleans(), split_every=st.integers(2, 5))
def test_any_chunking_matches_numpy(arrays, op, axis_pick, keepdims, split_every):
    """Random shapes, chunkings, axes (None, an int, or for reductions a pair) and split_every: NumPy's dtype,
    shape and values, with NumPy's functions on the chunks."""
    x, chunks = arrays
    gd.kernels = NUMPY_KERNELS  # (a property test cannot take the monkeypatch fixture: set, then restored below)
    try:
        if axis_pick == -4:
            axis = None
        elif axis_pick == 3 and x.ndim >= 2 and not op.startswith(("arg", "cum")):
            axis = (0, x.ndim - 1)
        else:
            axis = axis_pick % x.ndim if axis_pick >= 0 else -1
        if op == "cumprod" and x.dtype.kind in "fiu":
            x = np.sign(x).astype(x.dtype) if x.dtype.kind in "iu" else (1 + x / 64).astype(x.dtype)
        d = da.from_array(x, chunks=chunks)
        if op.startswith("cum"):
            want, got = reference(op, x, axis=axis), getattr(gd, op)(d, axis=axis).compute()
        else:
            kw = {"axis": axis, "keepdims": keepdims}
            with np.errstate(all="ignore"):
                want = getattr(np, op)(x, **kw)
            got = getattr(gd, op)(d, split_every=split_every, **kw).compute()
        check(np.asarray(got), np.asarray(want), x.dtype)
    finally:
        gd.kernels = gpureduce
    count_example()


NORM_ORDERS = [2, None, 1, 0, np.inf, -np.inf, 3, 0.5, -1]


@pytest.mark.filterwarnings("ignore:divide by zero")  # NumPy's own 0 ** (1/ord) for a negative ord
@pytest.mark.parametrize("ord", NORM_ORDERS, ids=str)
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex64"])
@pytest.mark.parametrize("shape,chunks", SHAPES, ids=[str(s) for s, _ in SHAPES])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm_is_the_norm_of_the_chunks_norms(numpy_kernels, ord, dtype, shape, chunks, keepdims, rng):
    x = data(dtype, shape, rng)
    x[(x != 0) & (rng.random(shape) < 0.1)] = 0  # zeros: ord 0 counts them out, a negative ord gives 0
    d = da.from_array(x, chunks=chunks)
    for axis in [None, 0, -1, tuple(range(x.ndim))]:
        try:
            want = np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
        except ValueError:  # -inf over an empty axis
            with pytest.raises(ValueError, match="zero-size array"):
                gd.vector_norm(d, axis=axis, keepdims=keepdims, ord=ord)
            continue
        got = gd.vector_norm(d, axis=axis, keepdims=keepdims, ord=ord)
        assert isinstance(got, da.Array)
        check(got.compute(), np.asarray(want), want.dtype)
        # gpureduce.vector_norm of a Dask array is this, lazily
        check(gpureduce.vector_norm(d, axis=axis, keepdims=keepdims, ord=ord).compute(), np.asarray(want),
              want.dtype)


def test_vector_norm_errors(numpy_kernels):
    d = da.ones((4, 6), chunks=(2, 3))
    with pytest.raises(ValueError, match="Invalid norm order"):
        gd.vector_norm(d, ord="fro")
    with pytest.raises(TypeError, match="'axis' must be"):
        gd.vector_norm(d, axis=[0])
