"""The variant "exact" along axes (issue 41) on the GPU: gpureduce.sum / mean / nansum / nanmean(x, axis=...,
variant="exact") give each slice the exact real sum of its elements (divided by their count for a mean) rounded
once to nearest-even, so a slice's bits do not depend on the batch it was reduced in, on the layout, the view, the
input's kind or how the kernels cut it (cuda/axis/exact_segments_kernels.cuh: a warp per row, a thread per column,
long ones cut into chunks whose digits add up exactly).

The reference of every slice is gpureduce._bounds.exact_result (math.fsum, float32 ties settled by the exact rest;
correctly_rounded_sum is checked against Python's fractions in tests/test_exact_sum_cpu.py)."""
import itertools
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import _torch
from gpureduce._bounds import exact_result
from gpureduce._planning.operands import BFLOAT16
from gpureduce.testing import to_numpy
from test_exact_gpu import draw, half_device, half_draw
from test_exact_sum_cpu import cases

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float64"]
HALVES = ["float16", "bfloat16"]
OPS = ["sum", "mean", "nansum", "nanmean"]
# (shape, axis): rows (a warp each) and columns (a thread each) around the kernels' boundaries -- a warp's 32
# lanes x 8 loads, 256- and 64-thread blocks, rows too short for a warp (<= 16), few long rows or columns that the
# host half cuts into chunks (added up through the workspace), one segment, empty segments
LAYOUTS = [((1, 1), 1), ((3, 1), 1), ((1, 5000), 1), ((5, 16), 1), ((5, 17), 1), ((1000, 7), 1), ((7, 1000), 1),
           ((33, 257), 1), ((4097, 33), 1), ((2, 100_003), 1), ((2, 2**20 + 3), 1), ((3, 4), 0), ((1000, 7), 0),
           ((7, 1000), 0), ((257, 65), 0), ((50_000, 40), 0), ((3, 700, 50), 1), ((100_003, 3), 0),
           ((2**20 + 3, 2), 0), ((300_001, 5), 0), ((4, 0), 1), ((0, 4), 0), ((6, 5), None)]


def dtype_of(name):
    return BFLOAT16 if name == "bfloat16" else np.dtype(name)


def data(kind, dtype, shape, rng):
    n = int(np.prod(shape))
    x = draw(kind, dtype, n, rng) if dtype in FLOATS else half_draw(kind, dtype_of(dtype), n, rng)
    return x.reshape(shape)


def device(x):
    return half_device(x) if x.dtype == BFLOAT16 else cupy.asarray(x)


def reference(op, x, axis, dtype, where=None, initial=None):
    """Each slice's exact result (gpureduce._bounds.exact_result, per slice), a mean of nothing quietly NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return exact_result(op, x, dtype, axis, True if where is None else where, initial)


def same_bits(got, want):
    """Bit for bit, any NaN for a NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    nan = np.isnan(want.astype(np.float64))
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.dtype.itemsize]
    return bool(np.all(np.isnan(got.astype(np.float64))[nan])) and \
        bool(np.array_equal(got[~nan].view(bits), want[~nan].view(bits)))


def run(op, x, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a mean of an empty slice: NumPy's warning
        return to_numpy(getattr(gpureduce, op)(x, variant="exact", **kwargs))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS + HALVES)
def test_every_layout_and_size_class(dtype, op):
    rng = np.random.default_rng()
    dt = dtype_of(dtype)
    for (shape, axis), kind in zip(LAYOUTS, itertools.cycle(["normal", "full range", "log-uniform", "cancellation",
                                                              "uniform"])):
        x = data(kind, dtype, shape, rng)
        if op.startswith("nan") and x.size:
            x.reshape(-1)[rng.random(x.size) < 0.05] = np.nan
        got = run(op, device(x), axis=axis)
        want = reference(op, x, axis, dt)
        assert same_bits(got, want), f"{op} {shape} axis={axis} {kind}: {np.flatnonzero(got != want)[:5]}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_slice_has_the_same_bits_in_any_batch(dtype):
    """The batch-invariance probe of issue 41: rows reduced with 1, 2, 3, 5 or all of their neighbours, a row
    reduced alone (the whole-array kernel), and the same for columns, all give one value a slice."""
    rng = np.random.default_rng()
    m = cupy.asarray(data("log-uniform", dtype, (16, 2**20 + 5), rng))
    rows = to_numpy(gpureduce.sum(m, axis=1, variant="exact"))
    for k in (1, 2, 3, 5):
        assert same_bits(to_numpy(gpureduce.sum(m[:k], axis=1, variant="exact")), rows[:k])
    for i in (0, 7, 15):
        assert same_bits(to_numpy(gpureduce.sum(m[i], variant="exact")), rows[i])
    c = cupy.ascontiguousarray(m.T)  # (2^20 + 5, 16): the rows above as columns
    assert same_bits(to_numpy(gpureduce.sum(c, axis=0, variant="exact")), rows)
    for k in (1, 2, 3, 5):
        assert same_bits(to_numpy(gpureduce.sum(c[:, :k], axis=0, variant="exact")), rows[:k])
    assert same_bits(to_numpy(gpureduce.sum(c[:, 3], variant="exact")), rows[3])  # a strided 1-D view
    assert same_bits(to_numpy(gpureduce.sum(m.get(), axis=1, variant="exact")), rows)  # a host array
    assert same_bits(rows, reference("sum", m.get(), 1, np.dtype(dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_hard_sets_in_any_order_along_either_axis(dtype):
    """Every row a different permutation of one of test_exact_sum_cpu's hard sets (cancellations, subnormals, the
    whole exponent range, ties, overflow): every row and every column has the set's correctly rounded sum."""
    rng = np.random.default_rng()
    for name, values in cases(np.dtype(dtype).type):
        if values.size == 0:
            continue
        rows = np.stack([values[rng.permutation(values.size)] for _ in range(5)])
        want = exact_result("sum", values, np.dtype(dtype))
        for x, axis in ((rows, 1), (np.ascontiguousarray(rows.T), 0)):
            got = run("sum", cupy.asarray(x), axis=axis)
            assert same_bits(got, np.full(5, want)), f"{name} axis={axis}: {got} != {want!r}"


@pytest.mark.parametrize("op", OPS)
def test_where_initial_keepdims_and_out(op):
    rng = np.random.default_rng()
    x = data("full range", "float32", (300, 4001), rng)
    if op.startswith("nan"):
        x[rng.random(x.shape) < 0.05] = np.nan
    where = rng.random(x.shape) < 0.7
    where[3] = False  # a row of nothing: 0 for a sum, NaN for a mean
    for axis in (0, 1):
        got = run(op, cupy.asarray(x), axis=axis, where=cupy.asarray(where))
        assert same_bits(got, reference(op, x, axis, np.dtype(np.float32), where=where)), (op, axis)
    if op in ("sum", "nansum"):
        initial = np.float32(2.0 ** 40)
        got = run(op, cupy.asarray(x), axis=1, initial=initial, where=cupy.asarray(where))
        assert same_bits(got, reference(op, x, 1, np.dtype(np.float32), where=where, initial=initial))
        assert np.isnan(run(op, cupy.asarray(x[:2]), axis=1, initial=np.float32(np.nan))).all()  # NumPy's NaN
    out = cupy.full((1, 4001), 7, np.float32)
    r = getattr(gpureduce, op)(cupy.asarray(x), axis=0, keepdims=True, out=out, variant="exact")
    assert r is out
    assert same_bits(out.get()[0], reference(op, x, 0, np.dtype(np.float32)))


def test_views_strides_and_many_axes():
    rng = np.random.default_rng()
    x = data("normal", "float64", (40, 30, 50), rng)
    d = cupy.asarray(x)
    for view, host in ((d[::-1], x[::-1]), (d[:, ::3], x[:, ::3]), (d.transpose(2, 0, 1), x.transpose(2, 0, 1)),
                       (d[5], x[5])):
        for axis in range(view.ndim):
            assert same_bits(run("sum", view, axis=axis), reference("sum", host, axis, np.dtype(np.float64)))
    got = run("sum", d, axis=(0, 2))  # two reduced axes: gathered first
    want = np.array([exact_result("sum", x[:, j, :].ravel(), np.dtype(np.float64)) for j in range(30)])
    assert same_bits(got, want)


def test_dtype_argument_and_every_input_kind():
    """dtype=float64 of float32 elements: their exact sum rounded once to float64; float16 elements summed into
    float32; the same bits from CuPy, PyTorch and NumPy inputs."""
    rng = np.random.default_rng()
    x = data("log-uniform", "float32", (64, 3001), rng)
    got = run("sum", cupy.asarray(x), axis=1, dtype=np.float64)
    assert same_bits(got, reference("sum", x.astype(np.float64), 1, np.dtype(np.float64)))
    h = data("normal", "float16", (9, 2049), rng)
    assert same_bits(run("sum", cupy.asarray(h), axis=1, dtype=np.float32),
                     reference("sum", h.astype(np.float32), 1, np.dtype(np.float32)))
    want = run("mean", cupy.asarray(x), axis=0)
    assert same_bits(run("mean", x, axis=0), want)
    torch = _torch()
    assert same_bits(run("mean", torch.from_numpy(x).cuda(), axis=0), want)


def test_special_values_per_slice():
    rows = np.array([[1.0, np.inf, 2.0], [np.nan, 1.0, 2.0], [np.inf, -np.inf, 0.0], [-np.inf, 1.0, 1.0],
                     [np.finfo(np.float32).max] * 2 + [-np.finfo(np.float32).max], [-0.0, -0.0, -0.0]], np.float32)
    for op in OPS:
        for x, axis in ((rows, 1), (np.ascontiguousarray(rows.T), 0)):
            got = run(op, cupy.asarray(x), axis=axis)
            assert same_bits(got, reference(op, rows, 1, np.dtype(np.float32))), (op, axis, got)
    assert not np.signbit(run("sum", cupy.asarray(rows[5:]), axis=1)).any()  # an exact zero is +0.0


def test_graph_capture_and_replay_on_new_data():
    """Along axes too, the call can be captured (the chunks' workspace zeroed by a memset node) and replayed."""
    rng = np.random.default_rng()
    x = cupy.asarray(data("normal", "float32", (3, 2**20), rng))  # few long rows: cut into chunks
    first = to_numpy(gpureduce.sum(x, axis=1, variant="exact"))
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        gpureduce.sum(x, axis=1, variant="exact")
        stream.synchronize()
        stream.begin_capture()
        r = gpureduce.sum(x, axis=1, variant="exact")
        graph = stream.end_capture()
    for factor in (2, 4):
        x *= 2
        cupy.cuda.Device().synchronize()
        graph.launch(stream)
        stream.synchronize()
        assert same_bits(r.get(), (first * factor).astype(np.float32))


def test_a_cut_call_leaves_the_next_calls_their_zeroed_counters():
    """A call cut into chunks keeps its words after the workspace's counters (gpureduce.h: zero on entry, left
    zero): the whole-array kernel after it, which counts its blocks there, still finds them zero."""
    rng = np.random.default_rng()
    for _ in range(3):
        m = data("normal", "float32", (2, 2**20 + 7), rng)
        assert same_bits(run("sum", cupy.asarray(m), axis=1), reference("sum", m, 1, np.dtype(np.float32)))
        x = data("full range", "float64", (1001,), rng)
        assert same_bits(run("sum", cupy.asarray(x)), reference("sum", x, None, np.dtype(np.float64)))
        assert same_bits(run("mean", cupy.asarray(x[:1])), x[0])
