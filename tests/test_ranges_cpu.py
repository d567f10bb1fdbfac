"""The segmented reductions' planning (gpureduce.reduceat, gpureduce.segmented_reduce; issue 40), without a GPU.

NumPy's argument rules and exceptions for ``ufunc.reduceat`` (numpy/_core/src/umath/ufunc_object.c:
PyUFunc_Reduceat; its tests test_ufunc.py::test_reduceat_*, test_umath.py::test_reduceat_empty) and for
``ufunc.segmented_reduce`` of NumPy's PR 32243 (TestSegmentedReduce there): everything NumPy refuses is refused
while planning, before any device work, so these run here.  The plans themselves: the bounds operand, the form, the
layout whose reduce_out_stride is the result's stride along the axis, the mean length "auto" chooses by.
"""
import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.ranges import ALGORITHMS, OPS, prepare_ranges, prepare_scan_ranges


def plan_of(fn, op, a, bounds, **kw):
    return prepare_ranges(fn, op, a, bounds, **kw)[0]


# ---------------------------------------------------------------- the one list of algorithms

def test_the_variants_are_ranges_def():
    assert list(gpureduce.segmented_variants()) == [name for name, *_ in _core.range_algorithms] == list(ALGORITHMS)
    assert ALGORITHMS[0] == "auto"
    assert all(doc for doc in gpureduce.segmented_variants().values())


def test_every_reduction_of_one_array_has_a_segmented_form():
    assert "sum" in OPS and "argmax" in OPS and "var" in OPS and "nanmax" in OPS
    assert "dot" not in OPS and "vdot" not in OPS


# ---------------------------------------------------------------- reduceat: NumPy's refusals

@pytest.mark.parametrize("indices, exc, words", [
    ([-1], IndexError, "index -1 out-of-bounds in add.reduceat [0, 8)"),
    ([0, 8], IndexError, "index 8 out-of-bounds in add.reduceat [0, 8)"),
    (2, ValueError, "too small depth"),
    ([[0, 2], [4, 6]], ValueError, "maximum number of dimension of 1"),
    (np.array([0.0, 2.0]), TypeError, "Cannot cast array data from dtype('float64') to dtype('int64')"),
    (np.array([0, 2], dtype=np.uint64), TypeError, "Cannot cast array data"),
])
def test_reduceat_refuses_what_numpy_refuses(indices, exc, words):
    a = np.arange(8)
    with pytest.raises(exc) as numpy_error:
        np.add.reduceat(a, indices)
    with pytest.raises(exc, match=None) as ours:
        gpureduce.reduceat("sum", a, indices)
    assert words in str(ours.value)
    assert type(ours.value) is type(numpy_error.value)


def test_reduceat_of_an_empty_axis_refuses_every_index():
    with pytest.raises(IndexError, match=r"index 0 out-of-bounds in add.reduceat \[0, 0\)"):
        gpureduce.reduceat("sum", np.array([]), [0])


def test_reduceat_names_numpys_ufunc_or_the_function():
    with pytest.raises(IndexError, match="maximum.reduceat"):
        gpureduce.reduceat("max", np.arange(4), [5])
    with pytest.raises(IndexError, match="mean.reduceat"):
        gpureduce.reduceat("mean", np.arange(4.0), [5])


def test_reduceat_axis_rules():
    b = np.arange(12).reshape(3, 4)
    with pytest.raises(ValueError, match="reduceat does not allow multiple axes"):
        gpureduce.reduceat("sum", b, [0], axis=None)
    with pytest.raises(np.exceptions.AxisError):
        gpureduce.reduceat("sum", b, [0], axis=2)
    with pytest.raises(TypeError, match="cannot reduceat on a scalar"):
        gpureduce.reduceat("sum", np.float64(3), [0])
    plan = plan_of("reduceat", "sum", np.arange(8), ([0, 4],), axis=None)
    assert plan.shape == (2,)


def test_a_list_of_floats_is_truncated_as_numpy_does():
    plan = plan_of("reduceat", "sum", np.arange(8), ([0.0, 2.7],))
    bounds = plan.ranges[0]
    assert bounds.array.tolist() == [0, 2] == np.array([0.0, 2.7]).astype(np.intp).tolist()


def test_unknown_operators_and_variants_name_the_choices():
    with pytest.raises(ValueError, match="operators are sum"):
        gpureduce.reduceat("add", np.arange(4), [0])
    with pytest.raises(ValueError, match="thread"):
        gpureduce.reduceat("sum", np.arange(4), [0], variant="shuffle")
    with pytest.raises(ValueError, match="unknown operator 'dot'"):
        gpureduce.reduceat("dot", np.arange(4), [0])
    with pytest.raises(TypeError, match="a str"):
        gpureduce.reduceat(np.add, np.arange(4), [0])


def test_keywords_the_operator_does_not_take():
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtype'"):
        gpureduce.reduceat("max", np.arange(4), [0], dtype=np.float64)
    with pytest.raises(TypeError, match="unexpected keyword argument 'initial'"):
        gpureduce.segmented_reduce("argmax", np.arange(4), [0], [2], initial=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'ddof'"):
        gpureduce.segmented_reduce("sum", np.arange(4), [0], [2], ddof=1)
    with pytest.raises(TypeError):
        gpureduce.reduceat("sum", np.arange(4), [0], initial=0)  # NumPy's reduceat has no initial


# ---------------------------------------------------------------- segmented_reduce: NumPy PR 32243's rules

def test_starts_and_stops_of_different_lengths():
    with pytest.raises(ValueError, match="'starts' and 'stops' must have the same length, got 2 and 1"):
        gpureduce.segmented_reduce("sum", np.arange(8), [0, 4], [4])


def test_an_empty_range_without_an_identity_is_refused_before_anything_is_written():
    out = np.full(2, -7)
    with pytest.raises(ValueError, match="zero-size segment in reduction operation 'maximum' which does not have "
                                         "an identity, so to allow empty segments one has to specify 'initial'"):
        gpureduce.segmented_reduce("max", np.arange(8), [0, 4], [4, 4], out=out)
    assert out.tolist() == [-7, -7]
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        gpureduce.segmented_reduce("argmax", np.arange(8), [0, 5], [4, 2])
    with pytest.raises(ValueError, match="'add' which does not have an identity"):  # initial=None: no identity
        gpureduce.segmented_reduce("sum", np.arange(8), [0, 4], [0, 8], initial=None)


def test_an_empty_range_is_allowed_with_initial_or_an_identity():
    plan_of("segmented_reduce", "max", np.arange(8), ([0, 4], [0, 8]), initial=-1)
    plan_of("segmented_reduce", "sum", np.arange(8), ([0, 4], [0, 8]))
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        plan_of("segmented_reduce", "mean", np.arange(8.0), ([0, 4], [0, 8]))


def test_nothing_to_write_checks_nothing():
    # NumPy PR 32243: maximum.segmented_reduce(zeros((0, 5)), [0, 2], [0, 5], axis=1).shape == (0, 2)
    plan = plan_of("segmented_reduce", "max", np.zeros((0, 5)), ([0, 2], [0, 5]), axis=1)
    assert plan.shape == (0, 2)


def test_device_bounds_for_a_host_input_are_refused():
    class DeviceLike:  # a CUDA Array Interface exporter: intake sees a device array without touching the device
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<i8", "data": (1 << 40, False), "version": 3,
                                    "strides": None, "stream": None}
    with pytest.raises(TypeError, match="device array but the input is on the host"):
        gpureduce.segmented_reduce("sum", np.arange(8), DeviceLike(), DeviceLike())


# ---------------------------------------------------------------- the plans

def test_a_plan_carries_its_bounds_form_algorithm_and_mean_length():
    a = np.arange(24.0).reshape(2, 12)
    plan = plan_of("segmented_reduce", "sum", a, ([0, 3, -2], [3, 9, 12]), axis=1, variant="warp")
    bounds, form, algorithm, mean_length, gaps, longest, apart = plan.ranges
    assert bounds.array.tolist() == [0, 3, -2, 3, 9, 12] and gaps == longest == 0 and apart is None  # the scans'
    assert form == _core.RANGES_STARTS_STOPS and ALGORITHMS[algorithm] == "warp"
    assert mean_length == round((3 + 6 + 2) / 3)
    assert plan.shape == (2, 3) and plan.launcher == _core.LAUNCH_AXIS
    layout = dict(zip(_core.SEGMENT_FIELDS, plan.layout))
    assert layout["R"] == 12 and layout["ir"] == 1 and layout["or"] == 1  # k steps through the result's rows
    assert (layout["c0"], layout["c1"], layout["is1"], layout["os1"]) == (1, 2, 12, 3)  # the rows: i1


def test_reduceat_plans_the_indices_alone():
    plan = plan_of("reduceat", "max", np.arange(10), ([0, 4, 1, 5],))
    bounds, form, _, mean_length, _, _, apart = plan.ranges
    assert bounds.array.tolist() == [0, 4, 1, 5] and form == _core.RANGES_REDUCEAT and apart is None
    assert mean_length == round((4 + 1 + 4 + 5) / 4)  # NumPy's rule: a[4] alone where 4 >= 1


@pytest.mark.parametrize("starts, stops, gaps, mean_length, longest", [
    ([0, 3], [3, 10], 0, 5, 7),        # CSR offsets: every position in a range, no fill
    ([7, 0], [10, 7], 0, 5, 7),        # the same, listed out of order
    ([0, 5], [3, 10], 1, 4, 5),        # positions 3 and 4 in no range: the identity first
    ([0, -3], [2, 10], 1, 2, 3),       # slice rules: [7, 10)
    ([4, 4, 0], [4, 2, 10], 0, 3, 10),  # empty ranges inside another do not overlap it
])
def test_a_scan_plan_knows_its_gaps_and_lengths(starts, stops, gaps, mean_length, longest):
    plan = prepare_scan_ranges("sum", np.arange(10.0), starts, stops)[0]
    assert plan.kind == _core.KIND_SCAN and plan.shape == (10,)
    assert plan.ranges[1:] == (_core.RANGES_STARTS_STOPS, ALGORITHMS.index("auto"), mean_length, gaps, longest, None)


@pytest.mark.parametrize("starts, stops", [([0, 3], [5, 8]), ([0, 2], [10, 3]), ([-4, 5], [10, 7])])
def test_a_scan_refuses_overlapping_ranges(starts, stops):
    with pytest.raises(ValueError, match="overlap"):
        prepare_scan_ranges("sum", np.arange(10.0), starts, stops)


@pytest.mark.parametrize("shape, axis", [((5, 6, 7), 1), ((5, 6, 7), 0), ((5, 6, 7), -1), ((4, 9), 0)])
def test_the_result_stride_along_the_axis_is_the_layouts(shape, axis):
    a = np.zeros(shape, np.float32)
    plan = plan_of("reduceat", "sum", a, ([0, 2, 3],), axis=axis)
    rshape = tuple(3 if i == axis % len(shape) else e for i, e in enumerate(shape))
    assert plan.shape == rshape
    layout = dict(zip(_core.SEGMENT_FIELDS, plan.layout))
    c_strides = np.zeros(rshape).strides
    assert layout["or"] == c_strides[axis] // 8


def test_default_dtypes_are_the_operators():
    assert plan_of("reduceat", "sum", np.arange(8, dtype=np.int8), ([0],)).result_dtype == \
        _core.dtype_names.index("int64")
    assert plan_of("reduceat", "max", np.arange(8, dtype=np.int8), ([0],)).result_dtype == \
        _core.dtype_names.index("int8")
    assert plan_of("reduceat", "mean", np.arange(8), ([0],)).result_dtype == _core.dtype_names.index("float64")
    assert plan_of("reduceat", "argmax", np.arange(8.0), ([0],)).result_dtype == _core.dtype_names.index("int64")
    assert plan_of("reduceat", "sum", np.arange(8, dtype=np.int8), ([0],), dtype=np.int8).result_dtype == \
        _core.dtype_names.index("int8")


def test_a_masked_array_is_refused_not_read_as_plain_data():
    m = np.ma.masked_array(np.arange(8.0), mask=[0, 1, 0, 0, 0, 0, 0, 0])
    with pytest.raises(TypeError, match="MaskedArray"):
        gpureduce.reduceat("sum", m, [0, 4])
    with pytest.raises(TypeError, match="MaskedArray"):
        gpureduce.segmented_reduce("sum", m, [0], [4])


# ---------------------------------------------------------------- the grouped scatter's plans

@pytest.mark.parametrize("shape, axis", [((12,), 0), ((3, 12), 1), ((12, 5), 0), ((2, 12, 3), 1)])
def test_a_grouped_plan_carries_the_ids_and_the_group_count(shape, axis):
    """groupby_reduce's scatter: the ids one per element along the axis (RANGES_GROUP_IDS), the groups the result's
    length there, no cast of the input (the pairs the scatter takes)."""
    a = np.zeros(shape, np.float32)
    ids = np.arange(12) % 4
    plan = plan_of("groupby_reduce", "mean", a, (ids,), axis=axis, groups=7)
    bounds, form, algorithm, _, gaps, longest, apart = plan.ranges
    assert form == _core.RANGES_GROUP_IDS and algorithm == ALGORITHMS.index("auto") and gaps == longest == 0
    assert apart is None
    assert bounds.array.tolist() == ids.tolist() and np.dtype(bounds.dtype) == np.int64
    assert plan.shape == tuple(7 if i == axis else e for i, e in enumerate(shape))
    assert plan.a.dtype == np.float32 and plan.result_dtype == _core.dtype_names.index("float32")
    assert plan_of("groupby_reduce", "sum", a.astype(np.int8), (ids,), axis=axis, groups=7).result_dtype == \
        _core.dtype_names.index("int64")


def test_a_grouped_plan_checks_its_ids_and_kind():
    """src/plan.c: group ids are one per element of the reduced axis, and group a reduction only."""
    from gpureduce._planning.plan import variant_for
    a = np.zeros(12, np.float32)
    plan = plan_of("groupby_reduce", "sum", a, (np.arange(12) % 3,), groups=3)
    fields = {name: getattr(plan, name) for name in ("kind", "variant", "op", "result_dtype", "a", "layout",
                                                    "shape", "launcher")}
    short = gpureduce._core.intake(np.arange(11, dtype=np.int64) % 3)
    with pytest.raises(ValueError, match="one id per element of the reduced axis"):
        _core.Plan(**fields, ranges=(short, _core.RANGES_GROUP_IDS, 0, 0, 0, 0))
    scan = dict(fields, kind=_core.KIND_SCAN, variant=variant_for("scan", "sum", "auto").index, shape=(12,))
    with pytest.raises(ValueError, match="groups a reduction, not a scan"):
        _core.Plan(**scan, ranges=(plan.ranges[0], _core.RANGES_GROUP_IDS, 0, 0, 0, 0))


def test_stops_apart_from_the_starts_are_device_starts_and_stops_only():
    """src/plan.c: a 7th item of ranges, the stops read apart from the starts, is taken only for
    RANGES_STARTS_STOPS with device bounds, contiguous int64 and as long as the starts (or, for RANGES_GROUP_IDS,
    the two device int64 where the kernels note the ids out of range); host bounds travel as one array, starts
    then stops (the plan's own: its 7th item None)."""
    a = np.arange(12.0)
    plan = plan_of("segmented_reduce", "sum", a, ([0, 4], [4, 12]))
    assert plan.ranges[6] is None and plan.ranges[0].shape == (4,)
    fields = {name: getattr(plan, name) for name in ("kind", "variant", "op", "result_dtype", "a", "layout",
                                                    "shape", "launcher")}
    starts = _core.intake(np.array([0, 4], np.int64))
    stops = _core.intake(np.array([4, 12], np.int64))
    for form in (_core.RANGES_STARTS_STOPS, _core.RANGES_REDUCEAT, _core.RANGES_GROUP_IDS):
        with pytest.raises(ValueError, match="7th item is RANGES_STARTS_STOPS' stops apart from their starts"):
            _core.Plan(**fields, ranges=(starts, form, 0, 0, 0, 0, stops))
    with pytest.raises(TypeError, match=r"max_length\[, stops\]\), not a tuple of 8 items"):
        _core.Plan(**fields, ranges=(starts, _core.RANGES_STARTS_STOPS, 0, 0, 0, 0, stops, None))
    assert _core.Plan(**fields, ranges=plan.ranges[:6] + (None,)).ranges[6] is None
