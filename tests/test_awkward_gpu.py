"""A real client of the segmented reductions (issue 40): an Awkward Array on the GPU reduced along its ragged axis
through its own buffers, as Awkward's CUDA reducers do with CUB's segmented reduction.

A ragged array's layout is a flat `content` and, per list, where it starts and stops: `offsets` (ListOffsetArray,
``starts = offsets[:-1], stops = offsets[1:]``) or separate `starts` and `stops` (ListArray: lists out of order,
overlapping, or with gaps).  ``gpureduce.segmented_reduce(op, content, starts, stops)`` on those device buffers, read
in place, must give what ``ak.<op>(array, axis=-1, mask_identity=False)`` gives: the identity for an empty list
(-inf or the dtype's lowest for max, +inf or its largest for min, 0 for sum, 1 for prod, NaN for mean), -1 for
argmin and argmax of an empty list, positions counted from each list's start, the first extreme on ties.  The
reference is Awkward itself, on the CPU, and on the GPU where its CUDA kernels are installed.  Where a list holds a
NaN the two differ by design: gpureduce's min and max propagate it as NumPy's do, Awkward's skip it (its answer is
gpureduce's nanmin and nanmax) -- test_nan_follows_numpy.
"""
import zlib

import numpy as np
import pytest

import gpureduce

pytestmark = pytest.mark.gpu

ak = pytest.importorskip("awkward")
cp = pytest.importorskip("cupy")

# (gpureduce's operator, Awkward's function); mask_identity=False where Awkward takes it
OPS = [("sum", ak.sum), ("prod", ak.prod), ("min", ak.min), ("max", ak.max), ("argmin", ak.argmin),
       ("argmax", ak.argmax), ("any", ak.any), ("all", ak.all), ("count_nonzero", ak.count_nonzero),
       ("mean", ak.mean)]
EXACT = {"min", "max", "argmin", "argmax", "any", "all", "count_nonzero"}
DTYPES = ["int32", "int64", "float32", "float64"]


def ragged(rng, dtype, lists, longest):
    """An Awkward Array (CPU) of `lists` lists of random lengths in [0, longest], empty ones included, values with
    ties (small integers, or many 1.0s among floats)."""
    lengths = rng.integers(0, longest + 1, lists)
    lengths[rng.random(lists) < 0.1] = 0
    n = int(lengths.sum())
    if np.dtype(dtype).kind == "f":
        content = rng.standard_normal(n).astype(dtype)
        content[rng.random(n) < 0.05] = 1.0  # ties
    else:
        content = rng.integers(-50, 50, n).astype(dtype)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    layout = ak.contents.ListOffsetArray(ak.index.Index64(offsets), ak.contents.NumpyArray(content))
    return ak.Array(layout)


def list_array(array, rng):
    """The same lists as a ListArray whose lists are shuffled in the content: starts and stops, not offsets, out of
    order, with a gap before each list (the gaps hold values no list reads)."""
    layout = array.layout
    offsets = np.asarray(layout.offsets.data)
    content = np.asarray(layout.content.data)
    order = rng.permutation(len(offsets) - 1)
    pieces, starts, stops, at = [], np.empty(len(order), np.int64), np.empty(len(order), np.int64), 0
    for i in order:
        piece = content[offsets[i]:offsets[i + 1]]
        gap = np.full(3, 99, dtype=content.dtype)
        pieces += [gap, piece]
        at += len(gap)
        starts[i], stops[i] = at, at + len(piece)
        at += len(piece)
    flat = np.concatenate(pieces) if pieces else content[:0]
    return ak.Array(ak.contents.ListArray(ak.index.Index64(starts), ak.index.Index64(stops),
                                          ak.contents.NumpyArray(flat)))


def device_buffers(array):
    """(content, starts, stops) of a ragged Awkward Array moved to the GPU, as CuPy arrays: its own buffers."""
    layout = ak.to_backend(array, "cuda").layout
    if isinstance(layout, ak.contents.ListOffsetArray):
        offsets = layout.offsets.data
        starts, stops = offsets[:-1], offsets[1:]
    else:
        assert isinstance(layout, ak.contents.ListArray), type(layout)
        starts, stops = layout.starts.data, layout.stops.data
    content = layout.content.data
    assert all(isinstance(x, cp.ndarray) for x in (content, starts, stops))
    return content, starts, stops


def awkward_answer(func, op, array):
    kwargs = {"axis": -1}
    if op not in ("sum", "prod", "any", "all", "count_nonzero"):
        kwargs["mask_identity"] = False
    return np.asarray(ak.to_numpy(func(array, **kwargs)))


def assert_same(op, got, expected, array):
    got = cp.asnumpy(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if op in EXACT or np.asarray(array.layout.content.data).dtype.kind != "f":
        np.testing.assert_array_equal(got, expected, err_msg=op)
        return
    # floating sums, products, means: Awkward adds in order, gpureduce in a fixed tree; both within n eps of the
    # float64 sum of magnitudes
    wide = ak.values_astype(array, np.float64)
    scale = np.asarray(ak.to_numpy(ak.sum(abs(wide), axis=-1)))
    counts = np.asarray(ak.to_numpy(ak.num(array, axis=-1)))
    eps = np.finfo(got.dtype).eps
    if op == "prod":
        # (a product that underflows may end on 0 in one order and on a subnormal in the other)
        bound = 4 * eps * np.maximum(counts, 1) * np.abs(expected) + np.finfo(got.dtype).tiny
        assert np.all((np.abs(got - expected) <= bound) | (got == expected)), (op, np.max(np.abs(got - expected)))
        return
    if op == "mean":
        scale = scale / np.maximum(counts, 1)
    bound = 2 * eps * np.maximum(counts, 1) * scale + np.finfo(got.dtype).tiny
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=op)
    assert np.all(np.abs(got[~nan] - expected[~nan]) <= bound[~nan]), (op, np.max(np.abs(got - expected)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("longest", [3, 40, 3000])
@pytest.mark.parametrize("op,func", OPS, ids=[op for op, _ in OPS])
def test_ragged_axis_of_a_gpu_awkward_array(op, func, dtype, longest):
    rng = np.random.default_rng(zlib.crc32(f"{op} {dtype} {longest}".encode()))
    array = ragged(rng, dtype, lists=2000 if longest < 1000 else 60, longest=longest)
    expected = awkward_answer(func, op, array)
    for form in (array, list_array(array, rng)):
        content, starts, stops = device_buffers(form)
        got = gpureduce.segmented_reduce(op, content, starts, stops)
        assert isinstance(got, cp.ndarray), type(got)
        assert_same(op, got, expected, array)


def test_the_result_is_an_awkward_array_again():
    """The per-list results are a CuPy array: ak.from_cupy makes them an Awkward Array on the GPU."""
    array = ak.Array([[1.0, 3.0, 2.0], [], [5.0, 4.0]])
    content, starts, stops = device_buffers(array)
    result = ak.from_cupy(gpureduce.segmented_reduce("argmax", content, starts, stops))
    assert ak.backend(result) == "cuda"
    assert ak.to_list(ak.to_backend(result, "cpu")) == [1, -1, 0]
    assert ak.to_list(ak.argmax(array, axis=-1)) == [1, None, 0]  # Awkward's default masks the empty list


@pytest.mark.parametrize("op,func", [("sum", ak.sum), ("max", ak.max), ("argmax", ak.argmax)])
def test_against_awkwards_own_cuda_reducers(op, func):
    """Awkward's reducers on the GPU itself, where installed (its CUDA kernels, and CCCL's cuda.compute, through
    which Awkward runs CUB's segmented reduction)."""
    pytest.importorskip("awkward_cuda_kernels")
    pytest.importorskip("cuda.compute")
    rng = np.random.default_rng(7)
    array = ragged(rng, "float32", lists=5000, longest=50)
    garray = ak.to_backend(array, "cuda")
    kwargs = {"axis": -1} if op == "sum" else {"axis": -1, "mask_identity": False}
    try:
        expected = func(garray, **kwargs)
    except ImportError as e:  # Awkward's argmax on the GPU compiles a Python callable (numba-cuda-mlir)
        pytest.skip(f"Awkward's CUDA {op}: {e}")
    assert ak.backend(expected) == "cuda"
    content, starts, stops = device_buffers(array)
    assert_same(op, gpureduce.segmented_reduce(op, content, starts, stops), np.asarray(ak.to_numpy(
        ak.to_backend(expected, "cpu"))), array)


def test_nan_follows_numpy():
    """A NaN in a list: gpureduce's max and argmax answer as NumPy's (the NaN, its first position); Awkward's max
    skips NaNs, which is gpureduce's nanmax."""
    array = ak.Array([[1.0, np.nan, 2.0], [3.0, 5.0, np.nan, 4.0], [0.5]])
    content, starts, stops = device_buffers(array)
    lists = [np.asarray(x) for x in ak.to_list(array)]
    got = cp.asnumpy(gpureduce.segmented_reduce("max", content, starts, stops))
    np.testing.assert_array_equal(got, [np.max(x) for x in lists])
    got = cp.asnumpy(gpureduce.segmented_reduce("argmax", content, starts, stops))
    np.testing.assert_array_equal(got, [np.argmax(x) for x in lists])
    got = cp.asnumpy(gpureduce.segmented_reduce("nanmax", content, starts, stops))
    np.testing.assert_array_equal(got, ak.to_numpy(ak.max(array, axis=-1)))
