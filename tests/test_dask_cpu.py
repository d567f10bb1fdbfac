"""gpureduce.dask without a GPU: the graphs (chunk -> combine -> aggregate, block-by-block scans), result dtypes and
shapes, NumPy's semantics for ties and NaNs, and the errors, with NumPy's functions standing in for gpureduce's on
each chunk (gpureduce.dask.chunks.kernels).  tests/test_dask_gpu.py runs the same calls with gpureduce's kernels."""
import math
import types
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gpureduce
from conftest import count_example
from gpureduce.testing import _moments_bound, error_bound

da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpureduce.dask")


def _accumulate(ufunc):
    def scan(a, axis=None, **options):  # gpureduce.cummax / cummin: axis=None flattens, as cumsum does
        return ufunc.accumulate(a.ravel() if axis is None else a, axis=0 if axis is None else axis)
    return scan


def _in_float64(fn):
    """gpureduce.var / nanvar on a chunk: float64 shifted sums whatever the input (a complex one's real variance),
    rounded to dtype= (NumPy's own var with dtype=float64 would drop a complex input's imaginary part)."""
    def kernel(x, axis=None, dtype=None, keepdims=False, ddof=0, **options):
        result = fn(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), axis=axis, keepdims=keepdims,
                    ddof=ddof)
        return result if dtype is None else result.astype(dtype)
    return kernel


def _logsumexp(x, axis=None, keepdims=False, b=None, return_sign=False, **options):
    """scipy.special.logsumexp (NumPy's same where SciPy is not installed), gpureduce.logsumexp's reference (bool
    and integers in float64)."""
    from gpureduce._bounds import _logsumexp as logsumexp
    return logsumexp(x, axis=axis, keepdims=keepdims, b=b, return_sign=return_sign)


def _logcumsumexp(x, axis=None, **options):
    """gpureduce.logcumsumexp: numpy.logaddexp.accumulate, axis=None flattening, float64 for bool and integers,
    float16 computed in float32 and rounded once per element."""
    result_dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    x = x.astype(np.float32 if result_dtype == np.float16 else result_dtype)
    with np.errstate(invalid="ignore"):
        scanned = np.logaddexp.accumulate(x.ravel() if axis is None else x, axis=0 if axis is None else axis)
    return scanned.astype(result_dtype)


NUMPY_KERNELS = types.SimpleNamespace(
    sum=np.sum, prod=np.prod, min=np.min, max=np.max, argmin=np.argmin, argmax=np.argmax, any=np.any, all=np.all,
    count_nonzero=np.count_nonzero, cumsum=np.cumsum, cumprod=np.cumprod, cummax=_accumulate(np.maximum),
    cummin=_accumulate(np.minimum), vector_norm=np.linalg.vector_norm,
    mean=np.mean, var=_in_float64(np.var), nanvar=_in_float64(np.nanvar), nansum=np.nansum, nanprod=np.nanprod,
    nanmin=np.nanmin, nanmax=np.nanmax, nanmean=np.nanmean, nanargmin=np.nanargmin, nanargmax=np.nanargmax,
    nancumsum=np.nancumsum, nancumprod=np.nancumprod, logsumexp=_logsumexp, logcumsumexp=_logcumsumexp)

REFERENCE = {"cummax": _accumulate(np.maximum), "cummin": _accumulate(np.minimum),
             "vector_norm": np.linalg.vector_norm, "logsumexp": _logsumexp, "logcumsumexp": _logcumsumexp}


@pytest.fixture
def numpy_kernels(monkeypatch):
    monkeypatch.setattr(gd.chunks, "kernels", NUMPY_KERNELS)


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


@pytest.mark.parametrize("axis", [0, 1])
def test_a_scan_reads_each_block_where_it_is(axis):
    """A block's scan is read by two tasks only, both its own: its last slice (the tail) and its result with the
    carry folded in; one task per line of blocks folds the tails into the carries (gpureduce/dask/scans.py).  No
    task reads a block of another: Dask's cumreduction chained the carries through tasks that each read a whole
    block, which moved blocks between workers."""
    from dask.core import get_dependencies

    d = da.ones((40, 60), chunks=(10, 15))  # 4 x 4 blocks
    r = gd.cumsum(d, axis=axis)
    graph = dict(r.__dask_graph__())
    scans = {k for k in graph if any(isinstance(dep, tuple) and dep[0] == d.name for dep in get_dependencies(graph, k))}
    assert len(scans) == d.npartitions
    dependents = {}
    for key in graph:
        for dep in get_dependencies(graph, key):
            dependents.setdefault(dep, set()).add(key)
    for key in scans:
        readers = dependents[key]
        assert all(reader[1:] == key[1:] for reader in readers), (key, readers)  # the same block's tasks only
        assert len(readers) == (1 if key[1 + axis] == d.numblocks[axis] - 1 else 2), (key, readers)
    carries = {k for k in graph if isinstance(k, tuple) and "-carries-" in k[0]}
    assert len(carries) == d.numblocks[1 - axis]
    for c in carries:
        assert all("-tail-" in dep[0] for dep in get_dependencies(graph, c))


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "nancumsum", "logcumsumexp"])
def test_scans_pass_over_empty_chunks(numpy_kernels, op):
    """A chunk without an element along the scan axis (first, in the middle, last, several in a row: what a boolean
    index leaves) passes the carry on: NumPy's answer (Dask's own cumsum raised a broadcasting error here)."""
    x = np.arange(1.0, 11.0) / 4
    for chunks in ((0, 3, 0, 7), (3, 0, 0, 7), (10, 0), (0, 0, 10), (0, 10)):
        got = getattr(gd, op)(da.from_array(x, chunks=(chunks,))).compute()
        np.testing.assert_allclose(got, reference(op, x), rtol=1e-12, err_msg=f"{op} chunks {chunks}")
    m = np.arange(1.0, 31.0).reshape(3, 10) / 4
    for axis in (None, 0, 1):  # axis=None: Dask's own ravel fails on such chunks; they are dropped first
        got = getattr(gd, op)(da.from_array(m, chunks=((1, 0, 2), (4, 0, 6, 0))), axis=axis).compute()
        np.testing.assert_allclose(got, reference(op, m, axis=axis), rtol=1e-12, err_msg=f"{op} axis {axis}")
    y = da.from_array(x, chunks=5)
    filtered = y[y > 1.6]  # the first chunk keeps nothing: unknown chunk sizes, one of them 0
    np.testing.assert_allclose(getattr(gd, op)(filtered).compute(), reference(op, x[x > 1.6]), rtol=1e-12)


def test_reductions_pass_over_empty_chunks(numpy_kernels):
    """Every reduction over chunks without an element (what a boolean index leaves): min, max, argmin and argmax,
    which have no identity, drop such a chunk's partial (Dask's own argmin raised); NumPy's error stays where no
    chunk has an element."""
    x = np.arange(1.0, 11.0) / 4
    m = np.arange(1.0, 31.0).reshape(3, 10) / 4
    for a, chunks, axes in ((x, ((3, 0, 7),), (None, 0)), (x, ((0, 10),), (None,)), (x, ((10, 0, 0),), (None,)),
                            (m, ((1, 0, 2), (4, 0, 6)), (None, 0, 1))):
        d = da.from_array(a, chunks=chunks)
        for op in gd.OPERATORS:
            if "cum" in op:
                continue
            for axis in axes:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    got, want = getattr(gd, op)(d, axis=axis).compute(), reference(op, a, axis=axis)
                check(np.asarray(got), np.asarray(want), a.dtype)
    for op in ("min", "max", "argmin", "argmax"):
        with pytest.raises(ValueError):
            getattr(gd, op)(da.from_array(np.zeros(0), chunks=((0,),))).compute()


def test_a_0d_array_and_no_axis_reduce_as_numpy(numpy_kernels):
    """Every function of a 0-d Dask array (one block, no axis: mean, nanmean, ptp and nanmin combined their one
    partial over an empty list of axes, an IndexError), and axis=() of a 2-d one, as NumPy's."""
    for value in (np.array(2.5), np.array(3, dtype=np.int32), np.array(-0.0, dtype=np.float32)):
        for op in gd.OPERATORS:
            with np.errstate(all="ignore"):
                got, want = getattr(gd, op)(da.from_array(value)).compute(), reference(op, value)
            check(np.asarray(got), np.asarray(want), value.dtype)
    x = np.arange(12.0).reshape(3, 4)
    for op in ("sum", "mean", "nanmean", "ptp", "nanmin", "max", "var"):
        check(np.asarray(getattr(gd, op)(da.from_array(x, chunks=2), axis=()).compute()),
              getattr(np, op)(x, axis=()), x.dtype)


def test_scans_keep_numpys_negative_zero_across_blocks(numpy_kernels):
    """numpy.cumsum of -0.0s is -0.0 throughout (its running sum starts from the first element); the carry into
    each block is the running result itself, never an identity +0.0 added first."""
    x = np.full((7, 6), -0.0)
    for axis in (None, 0, 1):
        got = gd.cumsum(da.from_array(x, chunks=(2, 4)), axis=axis).compute()
        want = np.cumsum(x, axis=axis)
        assert np.array_equal(np.signbit(got), np.signbit(want)), axis


def test_a_scans_fold_never_writes_its_input(monkeypatch):
    """The carry is folded into each block's scan in place (the scan's output becomes the result), never into the
    input: a kernel that hands back its input (a stand-in "scan" that is the identity) is copied first, so the
    caller's array is unchanged and each block gets the last elements of the blocks before added."""
    kernels = types.SimpleNamespace(cumsum=lambda x, axis=None, **options: x)
    monkeypatch.setattr(gd.chunks, "kernels", kernels)
    x = np.arange(1.0, 13.0)
    d = da.from_array(x, chunks=4).persist(scheduler="sync")  # the chunks in memory, as a cluster holds them
    # blocks [1..4], [5..8], [9..12]; carries 4 and 4 + 8: each block's "scan" (itself) plus its carry
    want = np.concatenate([x[:4], x[4:8] + 4, x[8:] + 12])
    for _ in range(2):
        assert np.array_equal(gd.cumsum(d).compute(scheduler="sync"), want)
        assert np.array_equal(d.compute(scheduler="sync"), x)


def test_a_scan_computed_twice_gives_the_same_bits(numpy_kernels, rng):
    """In-place folds write only into arrays the graph made: computing the same graph again (the same keys, a
    threaded and a synchronous scheduler) reads unchanged inputs."""
    x = rng.standard_normal((50, 40)).astype(np.float32)
    kept = x.copy()
    r = gd.cumsum(da.from_array(x, chunks=(7, 9)), axis=0)
    first, second = r.compute(scheduler="threads"), r.compute(scheduler="sync")
    assert np.array_equal(first, second) and np.array_equal(x, kept)
    np.testing.assert_allclose(first, np.cumsum(x, axis=0), rtol=1e-5, atol=1e-5)


def _levels(r):
    """How many tasks of r's reduction tree combine partials: (those of the intermediate levels, the aggregates)."""
    names = [k[0].rsplit("-", 1)[0] for k in dict(r.__dask_graph__()) if isinstance(k, tuple)]
    return sum(n.endswith("-partial") for n in names), sum(n.endswith("-aggregate") for n in names)


def test_a_reductions_partials_are_combined_in_one_task():
    """Every chunk's partial result combined by one task (one level, where Dask's default tree combines 4 a task:
    three levels for 32 chunks), for every reduction; split_every= as given; past 1,024 partials, or partials too
    large for one task (64 MiB at 32 bytes an element), two levels."""
    d = da.ones(2**15, chunks=2**10)  # 32 chunks
    for op in gd.OPERATORS:
        if "cum" not in op:
            assert _levels(getattr(gd, op)(d)) == (0, 1), op
    assert _levels(gd.mean(da.ones((40, 60), chunks=(10, 15)), axis=(0, 1))) == (0, 1)
    assert _levels(gd.sum(d, split_every=4)) == (8 + 2, 1)  # the caller's tree
    assert _levels(gd.sum(da.ones(2000, chunks=1))) == (45, 1)  # ceil(sqrt(2000)) a task
    assert _levels(gd.sum(da.ones((64, 2**20), chunks=(1, 2**20)), axis=0)) == (8, 1)  # 64 rows of 2^20: too large


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
    for op in gd.OPERATORS:
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
    # a scan's axis: NumPy's errors, when the graph is built
    with pytest.raises(np.exceptions.AxisError):
        gd.cumsum(d, axis=-3)
    for axis in ((0, 1), 1.0):
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            gd.cummax(d, axis=axis)


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
    """A stand-in for a classic variant's kernel: it refuses an axis, keepdims or a dtype other than NumPy's, as
    gpureduce's do."""
    def kernel(x, axis=None, variant="auto", **options):
        calls.append((variant, axis, options.get("keepdims", False)))
        numpy_dtype = fn(np.ones(1, x.dtype)).dtype
        if variant != "auto" and (axis is not None or options.get("keepdims")
                                  or np.dtype(options.get("dtype", numpy_dtype)) != numpy_dtype):
            raise ValueError(f"variant {variant!r} reduces a whole array (axis=None, no keepdims) in NumPy's result "
                             "dtype and nothing else")
        return fn(x, axis=axis, **options)
    return kernel


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, (0, 1), (1, 0)])
def test_classic_variants_reduce_whole_chunks(monkeypatch, axis, keepdims, dtype, rng):
    """The seeds' classic variants (no "axes" property) take whole arrays only, in NumPy's result dtype: a
    reduction over every axis gives them each chunk and each group of partials whole (a float16 sum's partials kept
    in float16, not auto's float32), and the kept dimensions are restored around the value."""
    calls = []
    stand_in = types.SimpleNamespace(**{op: _whole_arrays_only(getattr(np, op), calls)
                                        for op in ("sum", "prod", "min", "max")})
    monkeypatch.setattr(gd.chunks, "kernels", stand_in)
    x = rng.integers(-3, 4, (37, 29)).astype(dtype)
    d = da.from_array(x, chunks=(8, 7))
    for op in ("sum", "max", "min"):
        got = getattr(gd, op)(d, axis=axis, keepdims=keepdims, variant="two_pass").compute()
        check(np.asarray(got), getattr(np, op)(x, axis=axis, keepdims=keepdims), x.dtype)
    assert calls and all(c == ("two_pass", None, False) for c in calls), calls[:5]
    mean = gd.mean(d, axis=axis, keepdims=keepdims, variant="two_pass").compute()
    check(np.asarray(mean), np.mean(x, axis=axis, keepdims=keepdims), x.dtype)
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
    # exact's sums and means keep their partials exactly (tests/test_dask_exact_cpu.py); its other operators are
    # refused when the graph is built, naming those
    for call in (lambda: gd.max(d, variant="exact"), lambda: gpureduce.min(d, variant="exact")):
        with pytest.raises(ValueError, match="sum, nansum, mean and nanmean"):
            call()


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
    eager = gd.chunks.kernels
    gd.chunks.kernels = NUMPY_KERNELS  # (a property test cannot take the monkeypatch fixture: set, then restored below)
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
        gd.chunks.kernels = eager
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


# ---------------------------------------------------------------- var, std, ptp, logsumexp, the nan functions and scans
# Floats against NumPy (SciPy) on the data in float64 (complex128), within gpureduce.testing's bounds; integers,
# extrema and indices exactly; NumPy's warnings about slices without numbers given exactly where NumPy gives them.

SLICE_WARNINGS = ("Degrees of freedom <= 0 for slice", "Mean of empty slice", "All-NaN slice encountered")
NEW_SHAPES = [((37, 53), (10, 17)), ((6, 7, 8), (4, 3, 5)), ((5, 4), (5, 4)), ((7, 5), (1, 1)), ((0, 3), (2, 2))]
# (axis, keepdims, ddof): None, an int, a negative int and a tuple, each side of keepdims
MOMENT_CALLS = [(None, False, 0), (0, True, 1), (-1, False, 0), ((0, 1), False, 1), (None, True, 2)]


def _with_nans(x):
    """`x` with NaNs in its first and last element (first and last chunk) and two slices of NaNs only: row 1 and
    column 2 (reducing over either axis leaves a slice without a number)."""
    if x.dtype.kind not in "fc" or x.size == 0:
        return x
    x = x.copy()
    x.flat[0] = x.flat[-1] = np.nan
    x[1] = np.nan
    x[:, 2] = np.nan
    return x


def _run(call):
    """call()'s result and the set of NumPy's slice warnings it gave (floating-point warnings left out)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="ignore"):
            result = call()
    return result, {str(w.message).rstrip(".") for w in caught if str(w.message).startswith(SLICE_WARNINGS)}


def _assert_within(got, reference, bound):
    """NaN, inf and exact values where the reference has them; elsewhere |got - reference| <= bound."""
    got, reference = np.asarray(got), np.asarray(reference)
    assert got.shape == reference.shape, (got.shape, reference.shape)
    wide = np.complex128 if got.dtype.kind == "c" else np.float64
    with np.errstate(invalid="ignore"):
        same = (got == reference) | (np.isnan(got) & np.isnan(reference))
        close = np.abs(got.astype(wide) - reference) <= bound
    assert np.all(same | (np.isfinite(reference) & close)), \
        f"worst error {np.nanmax(np.where(same, 0, np.abs(got.astype(wide) - reference)))} over bound"


def _moments_data(dtype, shape, rng, nans):
    x = data(dtype, shape, rng)
    return _with_nans(x) if nans else x


# (std and nanstd are var's and nanvar's square roots: fewer dtypes)
MOMENT_DTYPES = ("bool", "int32", "int64", "float16", "float32", "float64", "complex64")
MOMENTS = [(op, dt) for op in ("var", "nanvar") for dt in MOMENT_DTYPES] + \
    [(op, dt) for op in ("std", "nanstd") for dt in ("int32", "float32", "complex64")]


@pytest.mark.parametrize("op,dtype", MOMENTS, ids=[f"{o}-{d}" for o, d in MOMENTS])
@pytest.mark.parametrize("shape,chunks", NEW_SHAPES, ids=[str(s) for s, _ in NEW_SHAPES])
def test_moments_match_numpy(numpy_kernels, op, dtype, shape, chunks, rng):
    """NumPy's dtype, shape, values (within gpureduce.testing's var bound), and its "Degrees of freedom" warning
    exactly where NumPy warns (n <= ddof, empty slices, a nan form's slices of NaNs only)."""
    x = _moments_data(dtype, shape, rng, nans=op.startswith("nan"))
    d = da.from_array(x, chunks=chunks)
    for axis, keepdims, ddof in MOMENT_CALLS:
        if len(shape) < 2 and axis == (0, 1):
            continue
        got, warned = _run(lambda: getattr(gd, op)(d, axis=axis, keepdims=keepdims, ddof=ddof, split_every=2).compute())
        want, numpy_warned = _run(lambda: getattr(np, op)(x, axis=axis, keepdims=keepdims, ddof=ddof))
        assert np.asarray(got).dtype == want.dtype and np.shape(got) == np.shape(want)
        assert warned == numpy_warned, (axis, ddof, warned, numpy_warned)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference, bound = _moments_bound(op, x, want.dtype, axis, {"keepdims": keepdims, "ddof": ddof})
        _assert_within(got, reference, bound)


@pytest.mark.parametrize("op", ["var", "std"])
def test_moments_keep_their_digits_under_a_large_offset(numpy_kernels, op, rng):
    """float32 data 1e4 + N(0, 1) in 200 chunks: the float64 (count, mean, M2) partials merged with Chan's formula
    give the variance to the result's last bits, where the textbook mean(x^2) - mean(x)^2 of float32 partials loses
    every digit."""
    x = (1e4 + rng.standard_normal((2000, 100))).astype(np.float32)
    d = da.from_array(x, chunks=(100, 10))
    wide = x.astype(np.float64)
    for axis in (None, 0):
        got = getattr(gd, op)(d, axis=axis).compute()
        want = getattr(np, op)(wide, axis=axis)
        assert np.asarray(got).dtype == np.float32
        assert np.all(np.abs(got - want) <= 2 * np.finfo(np.float32).eps * want), np.max(np.abs(got - want) / want)
    squares = da.from_array(x * x, chunks=(100, 10)).mean(dtype=np.float32).compute()
    textbook = squares - np.float32(x.mean(dtype=np.float64)) ** 2
    assert abs(textbook - wide.var()) > 0.5  # (the test would notice that formula)
    # integers: float64 inside, as NumPy's; the chunks' float64 means hold the offset to eps64 |mean|, which Chan's
    # difference of means carries: relative error about eps64 |mean| / std (here 5e-9), against the exact variance
    n = rng.integers(0, 1000, 10**5) + 10**9
    got = gd.var(da.from_array(n, chunks=999)).compute()
    exact = np.var(n - 10**9)
    assert abs(got - exact) <= 8 * np.finfo(np.float64).eps * np.mean(n) / np.sqrt(exact) * exact


def test_moments_warn_and_give_numpys_values_for_few_numbers(numpy_kernels):
    x = np.arange(12.0).reshape(3, 4)
    d = da.from_array(x, chunks=(2, 3))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
        got = gd.var(d, axis=0, ddof=3).compute()  # 3 elements, ddof 3: M2 / 0, inf as NumPy's
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(got, np.var(x, axis=0, ddof=3))
    assert np.isinf(got).all()
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
        assert np.isnan(gd.std(d[:1], axis=0, ddof=1).compute()).all()  # one element, M2 0: 0 / 0
    y = x.copy()
    y[:, 1] = np.nan
    with pytest.warns(RuntimeWarning, match=r"Degrees of freedom <= 0 for slice\."):
        got = gd.nanvar(da.from_array(y, chunks=(2, 3)), axis=0).compute()
    np.testing.assert_allclose(got, [32.0 / 3, np.nan, 32.0 / 3, 32.0 / 3])
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        assert np.isnan(gd.var(da.ones((0, 4), chunks=2), axis=0).compute()).all()


def test_moments_arguments(numpy_kernels, rng):
    x = rng.integers(-50, 50, (30, 20)).astype(np.int32)
    d = da.from_array(x, chunks=(7, 6))
    for dtype in ("float32", "float64", "float16"):
        got = gd.var(d, axis=0, dtype=dtype).compute()
        assert got.dtype == np.var(x, axis=0, dtype=dtype).dtype
        np.testing.assert_allclose(got, np.var(x.astype(np.float64), axis=0), rtol=8 * np.finfo(dtype).eps)
    np.testing.assert_allclose(gd.std(d, correction=1).compute(), np.std(x, ddof=1), rtol=1e-13)
    np.testing.assert_allclose(gd.nanvar(d, ddof=1.5).compute(), np.var(x, ddof=1.5), rtol=1e-13)
    with pytest.raises(TypeError, match="floating dtype"):
        gd.var(d, dtype=np.int64)
    with pytest.raises(ValueError, match="ddof and correction"):
        gd.var(d, ddof=1, correction=1)
    c = (x + 1j * x[::-1]).astype(np.complex64)
    got = gd.var(da.from_array(c, chunks=(7, 6)), axis=1).compute()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.var(c.astype(np.complex128), axis=1), rtol=1e-6)


# (integers and bool run the plain functions: a few of them)
NAN_FOLDS = [("nansum", dt) for dt in ("bool", "int32", "float16", "float32", "float64", "complex64")] + \
    [("nanprod", dt) for dt in ("int32", "float32", "complex64")] + \
    [("nanmean", dt) for dt in ("bool", "float16", "float32", "float64", "complex64")] + \
    [(op, dt) for op in ("nanmin", "nanmax") for dt in ("int32", "float16", "float32", "float64")]


@pytest.mark.parametrize("op,dtype", NAN_FOLDS, ids=[f"{o}-{d}" for o, d in NAN_FOLDS])
@pytest.mark.parametrize("shape,chunks", NEW_SHAPES, ids=[str(s) for s, _ in NEW_SHAPES])
def test_nan_reductions_match_numpy(numpy_kernels, op, dtype, shape, chunks, rng):
    """NaNs in the first and last chunk and slices of NaNs only: NumPy's dtype, shape, values (sums and means
    within error_bound, twice for the tree of partials; extrema exactly) and slice warnings."""
    x = data(dtype, shape, rng)
    if op == "nanprod" and x.dtype.kind in "fc":
        x = (1 + (x - x.real.mean()) / 64).astype(dtype) if x.size else x
    x = _with_nans(x)
    d = da.from_array(x, chunks=chunks)
    for axis, keepdims, _ in MOMENT_CALLS:
        if len(shape) < 2 and axis == (0, 1):
            continue
        if op in ("nanmin", "nanmax") and _empty_reduction(shape, axis):
            with pytest.raises(ValueError, match="zero-size array"):
                getattr(np, op)(x, axis=axis)
            with pytest.raises(ValueError, match="zero-size array"):
                getattr(gd, op)(d, axis=axis).compute()
            continue
        got, warned = _run(lambda: getattr(gd, op)(d, axis=axis, keepdims=keepdims, split_every=2).compute())
        want, numpy_warned = _run(lambda: getattr(np, op)(x, axis=axis, keepdims=keepdims))
        assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
        assert warned == numpy_warned, (axis, warned, numpy_warned)
        if op in ("nanmin", "nanmax") or want.dtype.kind not in "fc":
            np.testing.assert_array_equal(got, want)
            continue
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
            reference = getattr(np, op)(wide, axis=axis, keepdims=keepdims)
            bound = 2 * error_bound(op, x, want.dtype, axis=axis, keepdims=keepdims, reference=reference)
        _assert_within(got, reference, bound)


def _empty_reduction(shape, axis):
    return math.prod(shape[a] for a in (range(len(shape)) if axis is None else np.atleast_1d(axis))) == 0


def test_nanmin_nanmax_warn_once_for_an_all_nan_slice(numpy_kernels):
    """A column of NaNs only across 4 chunks: NaN and one warning (the aggregate's), not one per chunk; a column of
    +inf only is a number (nanmin +inf, no warning); a chunk's slice of NaNs only beside numbers is no slice of
    NaNs only."""
    x = np.arange(40.0).reshape(10, 4)
    x[:, 1] = np.nan
    x[:, 2] = np.inf
    x[:5, 3] = np.nan
    d = da.from_array(x, chunks=(3, 4))
    for op in ("nanmin", "nanmax"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = getattr(gd, op)(d, axis=0, split_every=2).compute()
        assert [str(w.message) for w in caught] == ["All-NaN slice encountered"]
        with pytest.warns(RuntimeWarning, match="All-NaN"):
            np.testing.assert_array_equal(got, getattr(np, op)(x, axis=0))
        # initial=: every slice has a value, no NaN, no warning, as NumPy's
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(getattr(gd, op)(d, axis=0, initial=7.0).compute(),
                                          getattr(np, op)(x, axis=0, initial=7.0))
    with pytest.raises(ValueError, match="zero-size array to reduction operation fmin"):
        gd.nanmin(da.ones((0, 3), chunks=2), axis=0)
    with pytest.raises(ValueError, match="zero-size array"):  # integers: min's error, as gpureduce.nanmin's
        gd.nanmin(da.ones((0, 3), chunks=2, dtype=np.int32), axis=0).compute()


def test_nan_arguments(numpy_kernels, rng):
    x = rng.standard_normal((30, 20)).astype(np.float32)
    x[0] = np.nan
    d = da.from_array(x, chunks=(7, 6))
    for op, dtype in (("nansum", np.float64), ("nanprod", np.float64), ("nanmean", np.float64)):
        got = getattr(gd, op)(d, axis=0, dtype=dtype).compute()
        assert got.dtype == dtype
        np.testing.assert_allclose(got, getattr(np, op)(x.astype(np.float64), axis=0), rtol=1e-12)
    np.testing.assert_allclose(gd.nansum(d, initial=5.0, split_every=2).compute(), np.nansum(x, initial=5.0),
                               rtol=1e-5)
    with pytest.raises(TypeError, match="inexact"):
        gd.nanmean(d, dtype=np.int64)
    i = rng.integers(-9, 9, (30, 20))
    np.testing.assert_array_equal(gd.nansum(da.from_array(i, chunks=7), axis=1, initial=3).compute(),
                                  np.nansum(i, axis=1, initial=3))


NAN_ARGS = [(op, dt) for op in ("nanargmin", "nanargmax") for dt in ("int32", "float32", "float64")]


@pytest.mark.parametrize("op,dtype", NAN_ARGS, ids=[f"{o}-{d}" for o, d in NAN_ARGS])
def test_nan_arg_reductions_give_the_first_number(numpy_kernels, op, dtype, rng):
    """Ties everywhere, NaNs in the first and last chunk, a chunk's slices of NaNs only beside numbers: the global
    index of the first extreme number, as NumPy's; a slice of NaNs only: NumPy's ValueError."""
    x = rng.integers(0, 3, (41, 29)).astype(dtype)
    if x.dtype.kind == "f":
        x[rng.random(x.shape) < 0.05] = np.nan
        x.flat[0] = x.flat[-1] = np.nan
        x[:9, 3] = np.nan  # the whole first chunk of column 3
        x[5, :8] = np.nan  # the whole first chunk of row 5
    d = da.from_array(x, chunks=(9, 8))
    for axis in (None, 0, 1, -1):
        for keepdims in (False, True):
            got = getattr(gd, op)(d, axis=axis, keepdims=keepdims, split_every=3).compute()
            check(np.asarray(got), np.asarray(getattr(np, op)(x, axis=axis, keepdims=keepdims)), "int64")
    if x.dtype.kind == "f":
        x[:, 7] = np.nan
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(np, op)(x, axis=0)
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(gd, op)(da.from_array(x, chunks=(9, 8)), axis=0).compute()
        np.testing.assert_array_equal(getattr(gd, op)(da.from_array(x, chunks=(9, 8)), axis=1).compute(),
                                      getattr(np, op)(x, axis=1))
    with pytest.raises(ValueError, match="empty sequence"):
        getattr(gd, op)(da.ones((0, 3), chunks=2), axis=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("shape,chunks", NEW_SHAPES[:4], ids=[str(s) for s, _ in NEW_SHAPES[:4]])
def test_ptp_matches_numpy(numpy_kernels, dtype, shape, chunks, rng):
    """The minima's minimum and the maxima's maximum, subtracted in the input's dtype: integers wrap (int8's
    -128..127 gives -1), a NaN propagates."""
    x = data(dtype, shape, rng)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        x.flat[0], x.flat[-1] = info.min, info.max
    else:
        x.flat[3] = np.nan
    d = da.from_array(x, chunks=chunks)
    for axis, keepdims, _ in MOMENT_CALLS:
        if len(shape) < 2 and axis == (0, 1):
            continue
        with np.errstate(all="ignore"):
            check(np.asarray(gd.ptp(d, axis=axis, keepdims=keepdims, split_every=2).compute()),
                  np.asarray(np.ptp(x, axis=axis, keepdims=keepdims)), None)
    # exactly: a float range is one subtraction of two of the elements
    got, want = gd.ptp(d, axis=-1).compute(), np.ptp(x, axis=-1)
    np.testing.assert_array_equal(got, want)


def test_ptp_errors(numpy_kernels):
    with pytest.raises(TypeError, match="boolean subtract"):
        gd.ptp(da.ones((4, 3), chunks=2, dtype=bool))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        gd.ptp(da.ones((0, 3), chunks=2), axis=0)
    np.testing.assert_array_equal(gd.ptp(da.ones((0, 3), chunks=2), axis=1).compute(), np.zeros(0))


@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float32", "float64"])
@pytest.mark.parametrize("shape,chunks", NEW_SHAPES, ids=[str(s) for s, _ in NEW_SHAPES])
def test_logsumexp_matches_scipy(numpy_kernels, dtype, shape, chunks, rng):
    """Rows of -inf only, with an inf, with a NaN, with inf and NaN, and large values: SciPy's values (within
    error_bound, twice), signs and dtypes; -inf and sign -1 for an empty slice (SciPy's)."""
    pytest.importorskip("scipy.special")
    x = data(dtype, shape, rng)
    if x.dtype.kind == "f" and x.shape[0] >= 4:
        x = x * 30
        x[0] = -np.inf
        x[1, -1] = np.inf
        x[2, 0] = np.nan
        x[3, 0], x[3, -1] = np.inf, np.nan
    d = da.from_array(x, chunks=chunks)
    for axis, keepdims, _ in MOMENT_CALLS:
        if len(shape) < 2 and axis == (0, 1):
            continue
        got, sign = gd.logsumexp(d, axis=axis, keepdims=keepdims, return_sign=True, split_every=2)
        assert isinstance(got, da.Array) and isinstance(sign, da.Array)
        got, sign = got.compute(), sign.compute()
        if _empty_reduction(shape, axis):  # (SciPy raises for some of these shapes)
            want = np.full(np.shape(got), -np.inf, got.dtype)
            want_sign = np.full(np.shape(got), -1.0, got.dtype)
        else:
            from scipy.special import logsumexp
            with np.errstate(all="ignore"):
                want, want_sign = logsumexp(x, axis=axis, keepdims=keepdims, return_sign=True)
        assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
        assert np.asarray(sign).dtype == np.asarray(want_sign).dtype
        np.testing.assert_array_equal(sign, want_sign)
        with np.errstate(all="ignore"):
            wide = x.astype(np.float64)
            reference = np.asarray(_logsumexp(wide, axis=axis, keepdims=keepdims)) if x.size else want
            bound = 2 * error_bound("logsumexp", x, want.dtype, axis=axis, keepdims=keepdims, reference=reference)
        _assert_within(got, reference, bound)


@pytest.mark.parametrize("a_dtype, b_kind", [("float32", "float32"), ("float64", "float64"), ("int32", "float32"),
                                             ("float16", "number")])
@pytest.mark.parametrize("shape, chunks, b_shape", [((12, 10), (5, 4), (12, 10)), ((12, 10), (12, 3), (10,)),
                                                    ((10,), (3,), (4, 10)), ((6, 0), (3, 1), (6, 0))])
def test_weighted_logsumexp_matches_scipy(numpy_kernels, a_dtype, b_kind, shape, chunks, b_shape, rng):
    """Weights of both signs and zeros, broadcast either way, chunked: each chunk's (log|sum|, sign) folded as a
    weighted logsumexp of the partials gives SciPy's value and sign (gpureduce.testing's NumPy logsumexp, checked
    against SciPy's values in test_testing_cpu.py), NaN where the sum is negative without return_sign."""
    from gpureduce._bounds import _numpy_logsumexp as reference_logsumexp  # SciPy's (which raises for some empties)
    x = data(a_dtype, shape, rng) * (3 if a_dtype != "int32" else 1)
    if b_kind == "number":
        w = 2.0
    else:
        w = rng.choice(np.array([-1.0, 0.0, 0.5, 2.0]), b_shape).astype(b_kind)
    d = da.from_array(x, chunks=chunks)
    for axis in (None, 0, -1):
        for keepdims in (False, True):
            got, sign = gd.logsumexp(d, axis=axis, b=w, keepdims=keepdims, return_sign=True, split_every=2)
            plain = gd.logsumexp(d, axis=axis, b=w, keepdims=keepdims)
            assert isinstance(got, da.Array) and isinstance(sign, da.Array) and isinstance(plain, da.Array)
            got, sign, plain = got.compute(), sign.compute(), plain.compute()
            with np.errstate(all="ignore"):
                want, want_sign = reference_logsumexp(x, axis=axis, b=w, keepdims=keepdims, return_sign=True)
                want_plain = reference_logsumexp(x, axis=axis, b=w, keepdims=keepdims)
            assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
            assert np.shape(plain) == np.shape(want_plain)
            # the condition of each sum: sum |b exp(a)| / |sum b exp(a)|; partial sums rounded in a's dtype err
            # by about eps times it (the log makes it absolute); the sign of a sum within that of 0 is not defined
            with np.errstate(all="ignore"):
                magnitudes = reference_logsumexp(x, axis=axis, b=np.abs(w), keepdims=keepdims)
                cond = np.exp(np.asarray(magnitudes, np.float64) - np.asarray(want, np.float64))
            eps = 1e-2 if np.asarray(want).dtype == np.float16 else 1e-5
            sure = ~(cond > 1e3)  # NaN (empty, 0 / 0) and -inf sums included
            tol = eps * (1 + np.where(np.isfinite(cond), cond, 0)) * (1 + np.abs(np.nan_to_num(np.asarray(want, float))))
            for g, ref in ((got, want), (plain, want_plain)):
                g, ref = np.asarray(g, np.float64), np.asarray(ref, np.float64)
                np.testing.assert_array_equal(np.isnan(g)[sure], np.isnan(ref)[sure])
                with np.errstate(invalid="ignore"):  # inf - inf
                    close = np.isclose(g, ref, rtol=0, atol=0, equal_nan=True) | (np.abs(g - ref) <= tol)
                assert np.all(close[sure]), (g[sure & ~close], ref[sure & ~close])
            np.testing.assert_array_equal(np.asarray(sign)[sure], np.asarray(want_sign)[sure])


def test_logsumexp_errors(numpy_kernels):
    d = da.ones((4, 6), chunks=(2, 3))
    with pytest.raises(TypeError, match="complex"):
        gd.logsumexp(d, b=np.ones((4, 6), np.complex64))
    with pytest.raises(TypeError, match="logsumexp has no kernel"):
        gd.logsumexp(d.astype(np.complex64))
    with pytest.raises(TypeError, match="logsumexp has no kernel"):
        gd.logcumsumexp(d.astype(np.complex128))
    with pytest.raises(np.exceptions.AxisError):
        gd.logsumexp(d, axis=2)


# float16 scans are carried in float32 between blocks and rounded once, as gpureduce's own (carried_dtype)
NEW_SCANS = [("nancumsum", dt) for dt in ("bool", "int32", "float16", "float32", "float64", "complex64")] + \
    [("nancumprod", dt) for dt in ("int8", "float32", "complex64")] + \
    [("logcumsumexp", dt) for dt in ("bool", "int32", "float16", "float32", "float64")]


@pytest.mark.parametrize("op,dtype", NEW_SCANS, ids=[f"{o}-{d}" for o, d in NEW_SCANS])
@pytest.mark.parametrize("shape,chunks", SHAPES[:3], ids=[str(s) for s, _ in SHAPES[:3]])
def test_new_scans_carry_across_blocks(numpy_kernels, op, dtype, shape, chunks, rng):
    """NaN read as 0 (1) by nancumsum (nancumprod), NaNs in the first and last chunk; logcumsumexp carried with
    numpy.logaddexp from -inf, a NaN spreading to every later element, -inf adding nothing."""
    x = data(dtype, shape, rng)
    if op == "nancumprod":
        x = np.sign(x).astype(dtype) if x.dtype.kind in "iu" else (1 + x / 64).astype(dtype)
    if x.dtype.kind in "fc":
        x.flat[0] = x.flat[-1] = np.nan
        x.flat[x.size // 2] = -np.inf if op == "logcumsumexp" else np.nan
    d = da.from_array(x, chunks=chunks)
    reference = _logcumsumexp if op == "logcumsumexp" else getattr(np, op)
    for axis in [None] + list(range(len(shape))):
        got = getattr(gd, op)(d, axis=axis).compute()
        with np.errstate(all="ignore"):
            want = reference(x, axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
        if want.dtype.kind not in "fc":
            np.testing.assert_array_equal(got, want)
            continue
        with np.errstate(all="ignore"):
            wide = reference(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), axis=axis)
            bound = 2 * error_bound(op, x, want.dtype, axis=axis, reference=wide)
        _assert_within(got, wide, bound)


def test_new_functions_take_dask_arrays_through_gpureduce(numpy_kernels, rng):
    """gpureduce.var(dask_array) & co. are lazy and give gpureduce.dask's results, ddof, correction, initial and
    return_sign passed on; gpureduce.nancumsum and gpureduce.scan("nansum") too (a KeyError before)."""
    x = rng.standard_normal((30, 40))
    x[2, 3] = x[:, 5] = np.nan
    d = da.from_array(x, chunks=(7, 9))
    calls = [("var", {"ddof": 1}), ("std", {"correction": 1}), ("nanvar", {"ddof": 2}), ("nanstd", {}),
             ("nansum", {"initial": 2.0}), ("nanprod", {}), ("nanmin", {}), ("nanmax", {"initial": 1.0}),
             ("nanmean", {}), ("nanargmin", {"keepdims": True}), ("nanargmax", {}), ("ptp", {"keepdims": True}),
             ("logsumexp", {}), ("nancumsum", {}), ("nancumprod", {}), ("logcumsumexp", {})]
    for op, kw in calls:
        y = x if op not in ("nanargmin", "nanargmax") else np.nan_to_num(x, nan=0.5)
        dy = d if y is x else da.from_array(y, chunks=(7, 9))
        r = getattr(gpureduce, op)(dy, axis=1, **kw)
        assert isinstance(r, da.Array), f"gpureduce.{op} of a Dask array gave {type(r).__name__}"
        want = getattr(gd, op)(dy, axis=1, **kw).compute()
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(r.compute(), want)
            np.testing.assert_allclose(want, reference(op, y, axis=1, **kw), rtol=1e-12, atol=1e-12)
    res, sign = gpureduce.logsumexp(d, axis=0, return_sign=True)
    assert isinstance(res, da.Array) and isinstance(sign, da.Array)
    assert isinstance(gpureduce.scan("nansum", d), da.Array) and isinstance(gpureduce.scan("logsumexp", d), da.Array)
    with pytest.raises(ValueError, match="unknown operator"):
        gpureduce.scan("no_such_op", d)
    with pytest.raises(TypeError, match="where="):
        gpureduce.nanmean(d, where=x > 0)
    with pytest.raises(TypeError, match="mean="):
        gpureduce.var(d, mean=np.zeros(40))


NEW_OPS = ["var", "std", "nanvar", "nanstd", "nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin",
           "nanargmax", "ptp", "logsumexp", "nancumsum", "nancumprod", "logcumsumexp"]


def test_new_variants_fail_when_the_graph_is_built():
    d = da.ones((4, 5), chunks=2)
    for op in NEW_OPS:
        with pytest.raises(ValueError, match="variant"):
            getattr(gd, op)(d, variant="no_such_variant")
        # a classic variant has no kernel for these: the message names the operator
        with pytest.raises(ValueError, match=op.replace("cum", "") if op != "logcumsumexp" else "logsumexp"):
            getattr(gd, op)(d, variant="two_pass" if "cum" not in op else "decoupled_lookback")


def test_new_results_do_not_depend_on_scheduling(numpy_kernels, rng):
    import dask
    x = rng.standard_normal((300, 200)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    d = da.from_array(x, chunks=(17, 23))
    results = []
    for scheduler in ("sync", "threads"):
        with dask.config.set(scheduler=scheduler):
            results.append([np.asarray(f(d, axis=0).compute()).tobytes()
                            for f in (gd.nanvar, gd.nanmean, gd.nansum, gd.logsumexp, gd.nancumsum)])
    assert results[0] == results[1]


def test_new_graphs_compute_after_pickling(numpy_kernels, rng):
    """Distributed pickles the tasks: every new function's graph gives the same result after a round trip."""
    cloudpickle = pytest.importorskip("cloudpickle")
    x = rng.standard_normal((30, 40))
    x[3] = np.nan
    x[5, 6] = np.nan
    d = da.from_array(x, chunks=(7, 9))
    for op in NEW_OPS:
        r = getattr(gd, op)(d, axis=0)
        graph = cloudpickle.loads(cloudpickle.dumps(dict(r.__dask_graph__())))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            again = da.Array(graph, r.name, r.chunks, meta=r._meta).compute(scheduler="sync")
            np.testing.assert_array_equal(again, r.compute(scheduler="sync"))


def test_xarray_reduce_var_and_nanmean_with_dask_data(numpy_kernels, rng):
    xr = pytest.importorskip("xarray")
    x = rng.standard_normal((20, 30))
    x[3, 4] = np.nan
    arr = xr.DataArray(da.from_array(x, chunks=(7, 8)), dims=("time", "space"))
    plain = xr.DataArray(x, dims=("time", "space"))
    for fn, want in ((gpureduce.var, plain.var(dim="time", skipna=False)),
                     (gpureduce.nanmean, plain.mean(dim="time", skipna=True))):
        got = arr.reduce(fn, dim="time")
        assert got.dims == want.dims and isinstance(got.data, da.Array)
        np.testing.assert_allclose(got.values, want.values, rtol=1e-12)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays=chunked_arrays(), op=st.sampled_from(["var", "nanstd", "nanmean", "nansum", "nanmin", "nanmax",
                                                    "nanargmax", "ptp", "logsumexp", "nancumsum", "logcumsumexp"]),
       axis_pick=st.integers(-4, 3), keepdims=st.booleans(), split_every=st.integers(2, 5), nans=st.booleans())
def test_any_chunking_matches_numpy_for_the_new_functions(arrays, op, axis_pick, keepdims, split_every, nans):
    x, chunks = arrays
    eager = gd.chunks.kernels
    gd.chunks.kernels = NUMPY_KERNELS  # (set, then restored below, as in test_any_chunking_matches_numpy)
    try:
        if nans and x.dtype.kind == "f":
            x = x.copy()
            x[np.random.default_rng(x.size).random(x.shape) < 0.3] = np.nan
        if op == "ptp" and x.dtype == np.bool_:
            x = x.astype(np.int8)
        if axis_pick == -4:
            axis = None
        elif axis_pick == 3 and x.ndim >= 2 and not op.startswith(("nanarg", "nancum", "logcum")):
            axis = (0, x.ndim - 1)
        else:
            axis = axis_pick % x.ndim if axis_pick >= 0 else -1
        d = da.from_array(x, chunks=chunks)
        kw = {"axis": axis} if "cum" in op else {"axis": axis, "keepdims": keepdims}
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = reference(op, x, **kw)
            except ValueError:  # nanargmax of a slice of NaNs only
                with pytest.raises(ValueError, match="All-NaN"):
                    getattr(gd, op)(d, **kw).compute()
                count_example()
                return
            extra = {} if "cum" in op else {"split_every": split_every}
            got = getattr(gd, op)(d, **kw, **extra).compute()
        check(np.asarray(got), np.asarray(want), x.dtype)
    finally:
        gd.chunks.kernels = eager
    count_example()


@pytest.mark.parametrize("op", ["cumsum", "cummax", "cumprod"])
def test_large_host_blocks_are_folded_on_several_threads(numpy_kernels, op, rng, monkeypatch):
    """Blocks of 32 MiB and more have the blocks before them folded in slices on several threads: along the scan
    axis of a 1-D block, along the rows or the columns (where the carry is broadcast) of a 2-D one."""
    calls = []
    real = gd.scans._fold_slice
    monkeypatch.setattr(gd.scans, "_fold_slice", lambda *args: calls.append(len(args) == 4) or real(*args))  # out=
    x = rng.integers(-3, 4, 2**23).astype(np.int64)
    if op == "cumprod":
        x = np.where(rng.random(x.size) < 0.999, 1, -1).astype(np.int64)
    for shape, chunks, axis in (((2**23,), 2**22, 0), ((16, 2**19), (8, 2**19), 0), ((16, 2**19), (16, 2**18), 1)):
        calls.clear()
        data = x.reshape(shape)
        got = getattr(gd, op)(da.from_array(data, chunks=chunks), axis=axis).compute(scheduler="sync")
        np.testing.assert_array_equal(got, reference(op, data, axis=axis))
        assert any(calls), f"no block of {shape} was folded in slices"


def test_nan_arg_reductions_take_a_nan_for_the_infinity_as_numpy_does(numpy_kernels, rng):
    """numpy.nanargmin takes a NaN for +inf (nanargmax: for -inf): where a slice's extreme is that infinity, the
    first of the infinities and the NaNs wins, also when they lie in different chunks; every array of up to 4
    elements of NaN, inf, -inf and 1 in chunks of 1 and 2, and rows and columns of a 2-D one."""
    import itertools

    for n in range(1, 5):
        for values in itertools.product([np.nan, np.inf, -np.inf, 1.0], repeat=n):
            x = np.array(values)
            for op in ("nanargmin", "nanargmax"):
                for chunks in (1, 2):
                    d = da.from_array(x, chunks=chunks)
                    if np.isnan(x).all():
                        with pytest.raises(ValueError, match="All-NaN"):
                            getattr(gd, op)(d, split_every=2).compute()
                    else:
                        assert getattr(gd, op)(d, split_every=2).compute() == getattr(np, op)(x), (values, op, chunks)
    x = rng.choice([np.nan, np.inf, -np.inf, 0.0, 1.0], (40, 30), p=[0.3, 0.2, 0.2, 0.15, 0.15])
    x[rng.integers(0, 40, 30), np.arange(30)] = 0.5  # a number in every column and every row
    x[np.arange(40), rng.integers(0, 30, 40)] = 0.5
    d = da.from_array(x, chunks=(7, 4))
    for op in ("nanargmin", "nanargmax"):
        for axis in (0, 1):
            np.testing.assert_array_equal(getattr(gd, op)(d, axis=axis).compute(), getattr(np, op)(x, axis=axis))
