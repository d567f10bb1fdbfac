"""The segmented and grouped scans' checks (gpureduce.segmented_scan, gpureduce.groupby_scan; issue 40), without a
GPU: every bad argument is refused with a clear exception before any device work, overlapping ranges too (host
bounds are checked on the host), and the layout helper the check runs on (overlap, positions covered, longest
range) agrees with a brute-force count of the positions each range holds, NumPy's slice rules applied by
``slice.indices``; the plans carry what the kernels choose by.
"""
import inspect

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.libraries import library_of
from gpureduce._planning.operands import default_dtype
from gpureduce._planning.ranges import ALGORITHMS, SCAN_ALGORITHM_DOCS, prepare_scan_ranges
from gpureduce._planning.ranges_layout import scan_ranges_layout
from gpureduce._registry import SCAN_OPS

A = np.arange(10.0)
IDS = [0] * 10


class DeviceLike:
    """A CUDA Array Interface exporter: intake sees a device array without touching the device."""
    __cuda_array_interface__ = {"shape": (2,), "typestr": "<i8", "data": (1 << 40, False), "version": 3,
                                "strides": None, "stream": None}


class ShapedObject:
    """Has a shape but is no array of a library groupby_scan sorts in."""
    shape = (10,)


# ---------------------------------------------------------------- the public face

def test_both_scans_are_public():
    assert "segmented_scan" in gpureduce.__all__ and "groupby_scan" in gpureduce.__all__
    assert callable(gpureduce.segmented_scan) and callable(gpureduce.groupby_scan)


def test_the_scan_variants_are_the_ranges_algorithms_but_lanes():
    assert list(SCAN_ALGORITHM_DOCS) == [name for name in ALGORITHMS if name != "lanes"]
    assert list(SCAN_ALGORITHM_DOCS) == ["auto", "thread", "warp", "block"]
    assert all(SCAN_ALGORITHM_DOCS.values())


def test_the_signatures():
    """NumPy's order for the positional parameters; the scan's own choices keyword-only, stream= last."""
    seg = inspect.signature(gpureduce.segmented_scan).parameters
    assert list(seg)[:7] == ["op", "a", "starts", "stops", "axis", "dtype", "out"]
    grp = inspect.signature(gpureduce.groupby_scan).parameters
    assert list(grp)[:5] == ["op", "a", "group_ids", "axis", "dtype"]
    for parameters, keywords in ((seg, ("exclusive", "variant", "stream")),
                                 (grp, ("exclusive", "ids_sorted", "variant", "stream"))):
        for name in keywords:
            assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameters["exclusive"].default is False and parameters["variant"].default == "auto"
        assert parameters["stream"].default is None and list(parameters)[-1] == "stream"


# ---------------------------------------------------------------- refusals before any device work

@pytest.mark.parametrize("call, error, words", [
    # the operator, the variant, exclusive
    (lambda: gpureduce.segmented_scan("mean", A, [0], [5]), ValueError, "unknown operator 'mean'"),
    (lambda: gpureduce.segmented_scan("nope", A, [0], [5]), ValueError, "unknown operator 'nope'"),
    (lambda: gpureduce.segmented_scan(len, A, [0], [5]), TypeError, "operator's name"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], variant="lanes"), ValueError, "unknown variant 'lanes'"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], variant="bogus"), ValueError, "unknown variant"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], variant=3), TypeError, "variant must be a str"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], exclusive=1), TypeError, "exclusive must be a bool"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], exclusive="yes"), TypeError, "exclusive must be a bool"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], exclusive=None), TypeError, "exclusive must be a bool"),
    # the input and the axis
    (lambda: gpureduce.segmented_scan("sum", np.float64(1.0), [0], [1]), TypeError, "scalar"),
    (lambda: gpureduce.segmented_scan("sum", np.array(1.0), [0], [1]), TypeError, "scalar"),
    (lambda: gpureduce.segmented_scan("sum", np.ma.masked_array(A, mask=[0, 1] * 5), [0], [5]), TypeError,
     "MaskedArray"),
    (lambda: gpureduce.segmented_scan("sum", A.reshape(2, 5), [0], [1], axis=None), ValueError,
     "does not allow multiple axes"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], axis=1), np.exceptions.AxisError, "axis 1"),
    (lambda: gpureduce.segmented_scan("sum", A.reshape(2, 5), [0], [1], axis=-3), np.exceptions.AxisError,
     "axis -3"),
    # the bounds
    (lambda: gpureduce.segmented_scan("sum", A, np.array([0.0, 2.0]), [1, 3]), TypeError, "must be integers"),
    (lambda: gpureduce.segmented_scan("sum", A, [0, 2], np.array([1.0, 3.0])), TypeError, "must be integers"),
    (lambda: gpureduce.segmented_scan("sum", A, np.array([0], np.uint64), [1]), TypeError, "must be integers"),
    (lambda: gpureduce.segmented_scan("sum", A, np.array(["0"]), [1]), TypeError, "unsupported dtype"),
    (lambda: gpureduce.segmented_scan("sum", A, [[0, 2]], [[1, 3]]), ValueError, "1-d"),
    (lambda: gpureduce.segmented_scan("sum", A, np.zeros((2, 2), np.int64), [1, 3]), ValueError, "1-dimensional"),
    (lambda: gpureduce.segmented_scan("sum", A, 0, 5), ValueError, "1-dimensional"),
    (lambda: gpureduce.segmented_scan("sum", A, [0, 1], [5]), ValueError, "same length"),
    (lambda: gpureduce.segmented_scan("sum", A, [], [5]), ValueError, "same length"),
    (lambda: gpureduce.segmented_scan("sum", A, DeviceLike(), DeviceLike()), TypeError,
     "device array but the input is on the host"),
    (lambda: gpureduce.segmented_scan("sum", A, [0, 3], DeviceLike()), TypeError, "device array"),
    # the rest
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], dtype="U3"), TypeError, "unsupported dtype"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], out=np.zeros(9)), ValueError, "out= has shape"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], out=[0.0] * 10), TypeError, "out= must be"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], stream="1"), TypeError, "stream"),
    (lambda: gpureduce.segmented_scan("sum", A, [0], [5], initial=0), TypeError, "initial"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_segmented_scan_refuses_bad_arguments_before_any_device_work(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("call, error, words", [
    (lambda: gpureduce.groupby_scan("mean", A, IDS), ValueError, "unknown operator 'mean'"),
    (lambda: gpureduce.groupby_scan(len, A, IDS), TypeError, "operator's name"),
    (lambda: gpureduce.groupby_scan("sum", A, IDS, variant="lanes"), ValueError, "unknown variant 'lanes'"),
    (lambda: gpureduce.groupby_scan("sum", A, IDS, exclusive=1), TypeError, "exclusive must be a bool"),
    (lambda: gpureduce.groupby_scan("sum", A, IDS, exclusive="yes"), TypeError, "exclusive must be a bool"),
    (lambda: gpureduce.groupby_scan("sum", A, [0, 1, 2]), ValueError, "one id per element"),
    (lambda: gpureduce.groupby_scan("sum", A, [IDS]), ValueError, "1-d"),
    (lambda: gpureduce.groupby_scan("sum", A, 0), ValueError, "1-d"),
    (lambda: gpureduce.groupby_scan("sum", A, [0.5] * 10), TypeError, "must be integers"),
    (lambda: gpureduce.groupby_scan("sum", A, np.ones(10, bool)), TypeError, "must be integers"),
    (lambda: gpureduce.groupby_scan("sum", A, [1, 0] + [2] * 8, ids_sorted=True), ValueError, "not sorted"),
    (lambda: gpureduce.groupby_scan("sum", A, [0] * 9 + [-1], ids_sorted=True), ValueError, "not sorted"),
    (lambda: gpureduce.groupby_scan("sum", A.reshape(2, 5), [0, 0, 1, 0, 1], axis=1, ids_sorted=True), ValueError,
     "not sorted"),
    (lambda: gpureduce.groupby_scan("sum", A, IDS, axis=1), np.exceptions.AxisError, "axis 1"),
    (lambda: gpureduce.groupby_scan("sum", A, IDS, axis=0.0), TypeError, "axis must be an int"),
    (lambda: gpureduce.groupby_scan("sum", A, IDS, axis=None), TypeError, "axis must be an int"),
    (lambda: gpureduce.groupby_scan("sum", A.reshape(2, 5), IDS), ValueError, "one id per element along axis 0"),
    (lambda: gpureduce.groupby_scan("sum", np.float64(1.0), [0]), TypeError, "0-d"),
    (lambda: gpureduce.groupby_scan("sum", np.ma.masked_array(A), IDS), TypeError, "takes a NumPy array"),
    (lambda: gpureduce.groupby_scan("sum", ShapedObject(), IDS), TypeError, "takes a NumPy array"),
    (lambda: gpureduce.groupby_scan("sum", A, IDS, stream="1"), TypeError, "stream"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_groupby_scan_refuses_bad_arguments_before_any_device_work(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_dask_arrays_are_refused():
    da = pytest.importorskip("dask.array")
    x = da.from_array(A, chunks=5)
    with pytest.raises(TypeError, match="Dask"):
        gpureduce.segmented_scan("sum", x, [0], [5])
    with pytest.raises(TypeError, match="takes a NumPy array"):
        gpureduce.groupby_scan("sum", x, IDS)


# ---------------------------------------------------------------- overlapping ranges

@pytest.mark.parametrize("starts, stops", [
    ([0, 3], [5, 8]),              # [0, 5) & [3, 8)
    ([3, 0], [8, 5]),              # the same, in the other order
    ([2, 2], [4, 4]),              # one range twice
    ([0, 3], [10, 4]),             # one inside another
    ([0, 9], [10, 10]),            # the last position twice
    ([0, 5, 4], [4, 9, 6]),        # the third bridges the first two
    ([0, 6, 2, 8], [2, 8, 7, 9]),  # [2, 7) & [6, 8), among disjoint ones
    ([0, 0, 3, 2], [3, 0, 3, 4]),  # empty ones between them do not hide [0, 3) & [2, 4)
    ([0, -3], [8, 10]),            # negative start: [0, 8) & [7, 10)
    ([0, 5], [-4, 10]),            # negative stop: [0, 6) & [5, 10)
    ([-100, 3], [5, 4]),           # start clipped to 0: [0, 5) & [3, 4)
    ([5, 8], [100, 9]),            # stop clipped to 10: [5, 10) & [8, 9)
    ([-1, 9], [10, 10]),           # [9, 10) twice, once from the end
])
def test_overlapping_ranges_are_refused_before_any_device_work(starts, stops):
    with pytest.raises(ValueError, match="overlap"):
        gpureduce.segmented_scan("sum", A, starts, stops)
    with pytest.raises(ValueError, match="overlap"):
        gpureduce.segmented_scan("max", np.tile(A, (3, 1)), starts, stops, axis=1, exclusive=True, variant="warp")
    with pytest.raises(ValueError, match="overlap"):  # the bounds' own integer dtype does not matter
        gpureduce.segmented_scan("sum", A, np.array(starts, np.int32), np.array(stops, np.int16))
    with pytest.raises(ValueError, match="overlap"):
        gpureduce.segmented_scan("prod", A.reshape(10, 1), starts, stops, variant="block")


def layout(starts, stops, n):
    """The helper the check runs on host bounds (one range or more): (overlap, covered, longest)."""
    return library_of(np.zeros(1)).ranges_layout(np.asarray(starts, np.int64), np.asarray(stops, np.int64), n)


def brute_force_layout(starts, stops, n):
    """(overlap, covered, longest) counted position by position, each range's positions by ``slice.indices``:
    whether a position lies in two ranges, the ranges' lengths added up, the longest one's."""
    hits = np.zeros(n, np.int64)
    longest = 0
    for s, e in zip(np.asarray(starts).tolist(), np.asarray(stops).tolist()):
        first, last, _ = slice(s, e).indices(n)
        if last > first:
            hits[first:last] += 1
            longest = max(longest, last - first)
    return bool((hits > 1).any()), int(hits.sum()), longest


BIG = np.iinfo(np.int64)


@pytest.mark.parametrize("starts, stops, n, want", [
    ([0, 5], [5, 8], 10, (False, 8, 5)),               # touching is not overlapping
    ([7, 0], [9, 2], 10, (False, 4, 2)),               # any order
    ([0, 3, 3], [10, 3, 1], 10, (False, 10, 10)),      # empty and reversed ranges inside another
    ([3, 0, 3], [3, 10, 3], 10, (False, 10, 10)),      # an empty range starting where a range starts
    ([-5, 0], [10, -5], 10, (False, 10, 5)),           # from the end: [5, 10) & [0, 5)
    ([-100, 3], [3, 100], 10, (False, 10, 7)),         # clipped: [0, 3) & [3, 10)
    ([BIG.min, 4], [4, BIG.max], 10, (False, 10, 6)),  # the extremes of int64, clipped
    ([4, 6], [4, 2], 10, (False, 0, 0)),               # all empty
    ([0, 0], [5, 5], 0, (False, 0, 0)),                # an empty axis: every range is empty
    ([10, -10], [20, 0], 10, (False, 0, 0)),           # past the end, before the start
    ([3], [7], 10, (False, 4, 4)),                     # one range
    ([0, 3], [5, 8], 10, (True, 10, 5)),
    ([0, 0], [1, 1], 1, (True, 2, 1)),
    ([5, -5], [6, -4], 10, (True, 2, 1)),              # [5, 6) twice, once from the end
    ([0, 2, 4, 3], [2, 4, 6, 5], 10, (True, 8, 2)),    # [2, 4) & [3, 5) & [4, 6): lengths add up
])
def test_the_layout_helper_on_chosen_ranges(starts, stops, n, want):
    assert layout(starts, stops, n) == want
    assert brute_force_layout(starts, stops, n) == want  # the brute force holds the same view


def random_ranges(rng, n):
    """Starts and stops of many shapes over an axis of n: disjoint pieces of the axis (gaps between them,
    touching ones), some empty or reversed, bounds written from the end or past it, in shuffled order; in about
    one case in three one range is stretched, which may or may not make it overlap a neighbour; in one in six the
    bounds are plain random integers (mostly overlapping)."""
    k = int(rng.integers(1, 12))
    if rng.random() < 1 / 6:
        return rng.integers(-n - 3, n + 4, k), rng.integers(-n - 3, n + 4, k)
    cuts = np.sort(rng.integers(0, n + 1, 2 * k))
    starts, stops = cuts[0::2].copy(), cuts[1::2].copy()
    kind = rng.integers(0, 8, k)
    stops = np.where(kind == 0, starts, stops)                            # empty
    stops = np.where(kind == 1, starts - rng.integers(1, 4, k), stops)    # reversed: empty too
    if k and rng.random() < 1 / 3:
        i = rng.integers(0, k)
        stops[i] += rng.integers(1, 4)
        starts[i] -= rng.integers(0, 3)
    # the same positions written another way: from the end, or clipped from beyond either end
    from_end = (rng.random(k) < 0.3) & (starts < n) & (starts >= 0)
    starts = np.where(from_end, starts - n, starts)
    starts = np.where((starts == 0) & (rng.random(k) < 0.5), -n - rng.integers(0, 5, k), starts)
    from_end = (rng.random(k) < 0.3) & (stops < n) & (stops > 0)
    stops = np.where(from_end, stops - n, stops)
    stops = np.where((stops == n) & (rng.random(k) < 0.5), n + rng.integers(0, 5, k), stops)
    order = rng.permutation(k)
    return starts[order], stops[order]


CASES = 600


def test_the_layout_helper_against_a_brute_force_count():
    rng = np.random.default_rng(20240611)
    outcomes = {False: 0, True: 0}
    for _ in range(CASES):
        n = int(rng.choice([0, 1, 2, 3, 7, 8, 31, 64, 100]))
        starts, stops = random_ranges(rng, n)
        want = brute_force_layout(starts, stops, n)
        assert layout(starts, stops, n) == want, (starts.tolist(), stops.tolist(), n)
        outcomes[want[0]] += 1
    assert min(outcomes.values()) > CASES // 10, outcomes  # both answers were asked for, many times


def test_the_check_and_the_plan_of_random_host_bounds():
    """Through prepare_scan_ranges (no device work): overlapping bounds refused, others planned with their mean
    length (covered / count) and whether some positions need the identity first."""
    rng = np.random.default_rng(7)
    for _ in range(CASES // 2):
        n = int(rng.choice([1, 2, 5, 16, 33, 100]))
        starts, stops = random_ranges(rng, n)
        overlap, covered, longest = brute_force_layout(starts, stops, n)
        a = rng.standard_normal((2, n))
        if overlap:
            with pytest.raises(ValueError, match="overlap"):
                prepare_scan_ranges("sum", a, starts, stops, axis=1)
            continue
        assert scan_ranges_layout(None, [starts.astype(np.int64), stops.astype(np.int64)], n,
                                   "segmented_scan") == (covered < n, covered, longest)
        plan = prepare_scan_ranges("sum", a, starts, stops, axis=1)[0]
        bounds, form, algorithm, mean_length, gaps, planned_longest, apart = plan.ranges
        assert bounds.array.tolist() == starts.tolist() + stops.tolist()  # as given: the kernels apply the rules
        assert apart is None  # host bounds: one array
        assert form == _core.RANGES_STARTS_STOPS and ALGORITHMS[algorithm] == "auto"
        assert (mean_length, gaps, planned_longest) == (round(covered / len(starts)), int(covered < n), longest)


# ---------------------------------------------------------------- the plans

def plan_of(op, a, starts, stops, **kw):
    return prepare_scan_ranges(op, a, starts, stops, **kw)[0]


def test_a_plan_carries_its_bounds_exclusive_algorithm_mean_length_and_gaps():
    plan = plan_of("sum", np.arange(10, dtype=np.int32), [0, 5], [5, 8], exclusive=True, variant="warp")
    bounds, form, algorithm, mean_length, gaps, longest, apart = plan.ranges
    assert bounds.array.tolist() == [0, 5, 5, 8] and form == _core.RANGES_STARTS_STOPS and apart is None
    assert ALGORITHMS[algorithm] == "warp" and mean_length == 4 and longest == 5
    assert gaps == 1  # positions 8 and 9 in no range: the identity goes there first
    assert plan.exclusive is True and plan.kind == _core.KIND_SCAN and plan.shape == (10,)
    assert plan.result_dtype == _core.dtype_names.index("int64")  # numpy.cumsum's int32 -> int64

    offsets = np.array([0, 3, 3, 10])  # CSR: every position in a range, an empty one among them
    plan = plan_of("max", np.arange(10.0), offsets[:-1], offsets[1:], variant="block")
    assert plan.ranges[2:] == (ALGORITHMS.index("block"), round(10 / 3), 0, 7, None) and plan.exclusive is False

    plan = plan_of("sum", np.arange(10.0), [], [])  # no range: every position holds the identity
    assert plan.ranges[3:] == (0, 1, 0, None)


def test_exclusive_takes_numpys_bool_too():
    assert plan_of("sum", A, [0], [5], exclusive=np.True_).exclusive is True
    assert plan_of("sum", A, [0], [5], exclusive=np.False_).exclusive is False


@pytest.mark.parametrize("shape, axis", [((10,), None), ((10,), -1), ((3, 10), 1), ((10, 3), 0), ((2, 10, 3), 1),
                                         ((2, 3, 10), -1)])
def test_the_result_has_the_inputs_shape(shape, axis):
    plan = plan_of("sum", np.zeros(shape, np.float32), [0, 4], [3, 10], axis=axis)
    assert plan.shape == shape
    layout = dict(zip(_core.SEGMENT_FIELDS, plan.layout))
    assert layout["R"] == 10


def numpys_scan_dtype(op, dt):
    """The result dtype of NumPy's own scan of `op` (logsumexp: float64 for bool and integers, as SciPy's)."""
    x = np.zeros(1, dt)
    if op == "logsumexp":
        return dt if dt.kind == "f" else np.dtype(np.float64)
    f = {"sum": np.cumsum, "prod": np.cumprod, "nansum": np.nancumsum, "nanprod": np.nancumprod,
         "min": np.minimum.accumulate, "max": np.maximum.accumulate}[op]
    return f(x).dtype


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64", "uint16", "float16", "float32", "float64"])
@pytest.mark.parametrize("op", SCAN_OPS)
def test_default_dtypes_are_numpys_scans(op, dtype):
    dt = np.dtype(dtype)
    want = numpys_scan_dtype(op, dt)
    assert default_dtype(op, dt, _core.KIND_SCAN) == want
    assert plan_of(op, np.zeros(6, dt), [0, 3], [2, 6]).result_dtype == _core.dtype_names.index(want.name)


def test_dtype_chooses_the_result():
    plan = plan_of("sum", np.arange(10, dtype=np.int32), [0], [5], dtype=np.int32)
    assert plan.result_dtype == _core.dtype_names.index("int32")
    plan = plan_of("max", np.arange(10, dtype=np.int32), [0], [5], dtype=np.float64)
    assert plan.result_dtype == _core.dtype_names.index("float64")


@pytest.mark.parametrize("offsets", [[0, 3, 3, 10], [2, 5, 9], [0, 10], [4, 4, 4]])
def test_csr_offsets_are_known_in_order_without_a_sort(offsets, monkeypatch):
    """Ranges in order that do not touch take the one pass: the sort is never asked for."""
    from gpureduce._planning import libraries
    monkeypatch.setattr(libraries._ArrayModule, "ranges_layout", lambda *a: pytest.fail("sorted"))
    o = np.asarray(offsets, np.int64)
    gaps, covered, longest = scan_ranges_layout(None, [o[:-1], o[1:]], 10, "segmented_scan")
    assert (gaps, covered, longest) == (covered < 10, o[-1] - o[0], int(np.diff(o).max()))
