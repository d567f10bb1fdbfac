"""NumPy's own tests of sum, prod, min, max, mean, argmin, argmax, cumsum and cumprod, ported to gpureduce.

Each test re-expresses cases of NumPy's test suite (numpy/numpy at 1f90bbb: numpy/_core/tests/ and
numpy/lib/tests/test_function_base.py) with the NumPy function replaced by gpureduce's; the comment above each
test names its source as ``path::Class::test``.  Inputs are NumPy arrays or lists and, where a test takes a
`source`, CuPy arrays too.  Where NumPy asserts exact values (small integers, integer-valued sums), so does
the port; rounded results go through ``gpureduce.testing.assert_matches_numpy``.
"""
# Not ported:
# * object, str, datetime64, timedelta64 inputs (gpureduce raises TypeError for those dtypes):
#   TestArgmax/TestArgmin::test_combinations' datetime64, timedelta64 and datetime.timedelta cases,
#   TestArgmaxArgminCommon::test_unicode and test_object_with_NULLs, TestMinMax::test_datetime,
#   TestStats' Decimal matrices, test_zerosize_reduction's object array, test_initial_reduction's dtype=object
#   cases, test_reduce_identity_depends_on_loop, test_object_array_reduction, test_reduce_casterrors,
#   test_object_reduce_cleanup_on_failure (all numpy/_core/tests/test_multiarray.py or test_ufunc.py).
# * longdouble and clongdouble ('g', 'G'), which gpureduce does not have: those rows of TestUfunc::test_sum,
#   test_sum_complex, TestStats::test_dtype_from_input / test_dtype_from_dtype, test_addition_reduce_negative_zero.
# * NumPy API that gpureduce does not have: np.cumulative_sum / np.cumulative_prod (the second parametrisation of
#   TestCumsum/TestCumprod::test_basic, test_cumulative_include_initial), ptp (TestPtp), var and std (TestStats,
#   TestStdVar), reduceat, and reductions of subtract / divide / true_divide (test_empty_reduction_and_identity,
#   test_identityless_reduction_nonreorderable, test_regression.py::test_noncommutative_reduce_accumulate).
# * ndarray subclasses and masked arrays: TestStats::test_subclass, test_reduce_output_subclass_ok,
#   test_scalar_reduction's MyArray part, test_numeric.py's *_with_mean_keyword_keepdims_true_masked.
# * Floating-point error reporting: TestUfunc::test_sum's overflow-warning counts and
#   test_ufunc_methods_floaterrors; GPU kernels raise no floating-point status flags for np.errstate to report.
# * Reference counts and memory: test_reduction_no_reference_leak, test_ufunc_reduce_memoryleak;
#   test_identityless_reduction_huge_array (2**32 bytes; test_reduce_gpu.py covers inputs beyond 2**31).
# * test_addition_reduce_negative_zero without initial= (NumPy marks it xfail) and the never-taken
#   ``ctype in ['1', 'b']`` branch of TestProd / TestCumprod::test_basic.
import warnings

import numpy as np
import pytest
from numpy.exceptions import AxisError
from numpy.testing import assert_allclose, assert_almost_equal, assert_array_equal, assert_equal

import gpureduce
from gpureduce import _core
from conftest import DEVICE_LIBRARIES
from gpureduce._bounds import correctly_rounded_sum
from gpureduce.testing import assert_matches_numpy, for_all_variants, to_numpy

pytestmark = pytest.mark.gpu

SOURCES = ["host", "cupy"]
VARIANTS = {(v.kind, v.name): v for v in gpureduce.variants()}
NUMPY = {op: getattr(np, op) for op in ("sum", "prod", "min", "max", "mean", "argmin", "argmax", "cumsum", "cumprod")}


def on(source, a):
    """`a` as the test passes it: as given (a NumPy array or a list) for "host", else a device copy."""
    return a if source == "host" else DEVICE_LIBRARIES[source](np.asarray(a))


def assert_exact(op, x, expected, *args, variant="auto", **kwargs):
    """``gpureduce.<op>(x, ...)`` equals `expected` exactly (NaN where it has NaN), with NumPy's result dtype and
    shape, a NumPy scalar where NumPy's result is 0-d.  For the exact data of NumPy's tests.  Returns the
    result as NumPy."""
    got = getattr(gpureduce, op)(x, *args, variant=variant, **kwargs)
    reference = np.asarray(NUMPY[op](to_numpy(x), *args, **kwargs))
    host = to_numpy(got)
    assert host.dtype == reference.dtype, f"{op}: dtype {host.dtype}, NumPy gives {reference.dtype}"
    assert host.shape == reference.shape, f"{op}: shape {host.shape}, NumPy gives {reference.shape}"
    if reference.ndim == 0 and _core.intake(x).host:
        assert isinstance(got, np.generic), f"{op}: a 0-d result must be a NumPy scalar, got {type(got).__name__}"
    elif reference.ndim == 0:  # a device input's: a 0-d array of its kind (issue 38)
        assert not isinstance(got, (np.ndarray, np.generic)) and tuple(got.shape) == (), type(got).__name__
    assert_array_equal(host, expected)
    return host


# ==================================================================== numpy/lib/tests/test_function_base.py

BASIC_1D = [1, 2, 10, 11, 6, 5, 4]
BASIC_2D = [[1, 2, 3, 4], [5, 6, 7, 9], [10, 3, 4, 5]]
CUMSUM_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.float32, np.float64,
                 np.complex64, np.complex128]
PROD_DTYPES = [np.int16, np.uint16, np.int32, np.uint32, np.float32, np.float64, np.complex64, np.complex128]


def dtype_id(dtype):
    return np.dtype(dtype).name


# numpy/lib/tests/test_function_base.py::TestAmax::test_basic
@pytest.mark.parametrize("source", SOURCES)
def test_max_of_a_list_and_along_each_axis(source):
    a = [3, 4, 5, 10, -3, -5, 6.0]
    b = [[3, 6.0, 9.0], [4, 10.0, 5.0], [8, 3.0, 2.0]]
    assert_exact("max", on(source, a), 10.0)
    assert_exact("max", on(source, b), [8.0, 10.0, 9.0], axis=0)
    assert_exact("max", on(source, b), [9.0, 10.0, 8.0], axis=1)


# numpy/lib/tests/test_function_base.py::TestAmin::test_basic
@pytest.mark.parametrize("source", SOURCES)
def test_min_of_a_list_and_along_each_axis(source):
    a = [3, 4, 5, 10, -3, -5, 6.0]
    b = [[3, 6.0, 9.0], [4, 10.0, 5.0], [8, 3.0, 2.0]]
    assert_exact("min", on(source, a), -5.0)
    assert_exact("min", on(source, b), [3.0, 3.0, 2.0], axis=0)
    assert_exact("min", on(source, b), [3.0, 4.0, 2.0], axis=1)


def check_cumsum_basic(source, dtype):
    a = on(source, np.array(BASIC_1D, dtype))
    a2 = on(source, np.array(BASIC_2D, dtype))
    assert_exact("cumsum", a, np.array([1, 3, 13, 24, 30, 35, 39], dtype), axis=0)
    assert_exact("cumsum", a2, np.array([[1, 2, 3, 4], [6, 8, 10, 13], [16, 11, 14, 18]], dtype), axis=0)
    assert_exact("cumsum", a2, np.array([[1, 3, 6, 10], [5, 11, 18, 27], [10, 13, 17, 22]], dtype), axis=1)


# numpy/lib/tests/test_function_base.py::TestCumsum::test_basic
@pytest.mark.parametrize("dtype", CUMSUM_DTYPES, ids=dtype_id)
def test_cumsum_basic(dtype):
    check_cumsum_basic("host", dtype)


# numpy/lib/tests/test_function_base.py::TestCumsum::test_basic, on device inputs
def test_cumsum_basic_on_device():
    for dtype in CUMSUM_DTYPES:
        check_cumsum_basic("cupy", dtype)


# numpy/lib/tests/test_function_base.py::TestProd::test_basic
# numpy/_core/tests/test_multiarray.py::TestMethods::test_prod (the same cases through ndarray.prod)
@pytest.mark.parametrize("dtype", PROD_DTYPES, ids=dtype_id)
def test_prod_basic(dtype):
    a = np.array(BASIC_1D, dtype)
    a2 = np.array(BASIC_2D, dtype)
    assert_exact("prod", a, 26400, axis=0)
    assert_exact("prod", a2, np.array([50, 36, 84, 180], dtype), axis=0)
    assert_exact("prod", a2, np.array([24, 1890, 600], dtype), axis=-1)


def check_cumprod_basic(source, dtype):
    a = on(source, np.array(BASIC_1D, dtype))
    a2 = on(source, np.array(BASIC_2D, dtype))
    assert_exact("cumprod", a, np.array([1, 2, 20, 220, 1320, 6600, 26400], dtype), axis=-1)
    assert_exact("cumprod", a2, np.array([[1, 2, 3, 4], [5, 12, 21, 36], [50, 36, 84, 180]], dtype), axis=0)
    assert_exact("cumprod", a2, np.array([[1, 2, 6, 24], [5, 30, 210, 1890], [10, 30, 120, 600]], dtype), axis=-1)


# numpy/lib/tests/test_function_base.py::TestCumprod::test_basic
@pytest.mark.parametrize("dtype", PROD_DTYPES, ids=dtype_id)
def test_cumprod_basic(dtype):
    check_cumprod_basic("host", dtype)


# numpy/lib/tests/test_function_base.py::TestCumprod::test_basic, on device inputs
def test_cumprod_basic_on_device():
    for dtype in PROD_DTYPES:
        check_cumprod_basic("cupy", dtype)


# ==================================================================== numpy/_core/tests/test_multiarray.py

# numpy/_core/tests/test_multiarray.py::TestBool::test_sum (np.ones)
@pytest.mark.parametrize("source", SOURCES)
def test_bool_sum_counts_the_true_elements(source):
    d = on(source, np.ones(101, dtype=bool))
    assert_exact("sum", d, 101)
    assert_exact("sum", d[::2], 51)
    assert_exact("sum", d[::-2], 51)


# numpy/_core/tests/test_multiarray.py::TestBool::test_sum (np.frombuffer of 0xff bytes: True stored as 255)
@pytest.mark.parametrize("source", SOURCES)
def test_bool_sum_counts_true_stored_as_nonzero_bytes(source):
    d = on(source, np.frombuffer(b"\xff\xff" * 100, dtype=bool))
    assert_exact("sum", d, 200)
    assert_exact("sum", d[::2], 100)
    assert_exact("sum", d[::-2], 100)


# True stored as a byte other than 1: NumPy's argmax is the first True, argmin the first False, max a True (stored
# as 1).  bool's extremes once ran uint8's kernels, which compared the stored bytes.
@pytest.mark.parametrize("source", SOURCES)
def test_bool_extremes_of_true_stored_as_other_bytes(source):
    d = on(source, np.array([1, 2, 0, 3, 0], np.uint8).view(np.bool_))
    assert_exact("argmax", d, 0)
    assert_exact("argmin", on(source, np.array([2, 1, 0], np.uint8).view(np.bool_)), 2)
    assert_exact("argmin", on(source, np.array([2, 1], np.uint8).view(np.bool_)), 0)
    assert np.asarray(to_numpy(gpureduce.max(d))).view(np.uint8) == 1


# numpy/_core/tests/test_multiarray.py::TestArgmaxArgminCommon::test_np_argmin_argmax_keepdims (a subset of
# NumPy's sizes; every axis of each)
@pytest.mark.parametrize("size", [(), (2, 3, 4), (4, 1, 2, 3), (256,)], ids=str)
@pytest.mark.parametrize("method", ["argmax", "argmin"])
def test_arg_reduction_keepdims_and_out(method, size, rng):
    func = getattr(gpureduce, method)
    arr = rng.normal(size=size)
    for axis in [*range(-len(size), len(size)), None]:
        # contiguous arrays
        if axis is None:
            new_shape = (1,) * len(size)
        else:
            new_shape = tuple(1 if i == axis % len(size) else side for i, side in enumerate(size))
        res_orig = np.reshape(func(arr, axis=axis), new_shape)
        res = func(arr, axis=axis, keepdims=True)
        assert_equal(res, res_orig)
        assert res.shape == new_shape
        outarray = np.empty(res.shape, dtype=res.dtype)
        res1 = func(arr, axis=axis, out=outarray, keepdims=True)
        assert res1 is outarray
        assert_equal(res, outarray)
        if len(size) > 0:
            wrong_shape = list(new_shape)
            wrong_shape[0 if axis is None else axis] = 2
            with pytest.raises(ValueError):
                func(arr.T, axis=axis, out=np.empty(wrong_shape, dtype=res.dtype), keepdims=True)

        # non-contiguous arrays
        if axis is None:
            new_shape = (1,) * len(size)
        else:
            new_shape = list(size)[::-1]
            new_shape[axis] = 1
            new_shape = tuple(new_shape)
        res_orig = np.reshape(func(arr.T, axis=axis), new_shape)
        res = func(arr.T, axis=axis, keepdims=True)
        assert_equal(res, res_orig)
        assert res.shape == new_shape
        outarray = np.empty(new_shape[::-1], dtype=res.dtype).T
        res1 = func(arr.T, axis=axis, out=outarray, keepdims=True)
        assert res1 is outarray
        assert_equal(res, outarray)
        if len(size) > 0:
            # one dimension fewer: the out of keepdims=True no longer fits
            with pytest.raises(ValueError):
                func(arr[0], axis=axis, out=outarray, keepdims=True)
            wrong_shape = list(new_shape)
            wrong_shape[0 if axis is None else axis] = 2
            with pytest.raises(ValueError):
                func(arr.T, axis=axis, out=np.empty(wrong_shape, dtype=res.dtype), keepdims=True)


# numpy/_core/tests/test_multiarray.py::TestArgmaxArgminCommon::test_all
# numpy/_core/tests/test_regression.py::TestRegression::test_argmax (ticket #119: argmax along each of 5 axes)
@pytest.mark.parametrize("method", ["max", "min"])
def test_arg_reduction_points_at_the_extreme_along_every_axis(method, rng):
    a = rng.normal(0, 1, (4, 5, 6, 7, 8))
    for i in range(a.ndim):
        a_maxmin = getattr(gpureduce, method)(a, i)
        aarg_maxmin = getattr(gpureduce, "arg" + method)(a, i)
        axes = list(range(a.ndim))
        axes.remove(i)
        assert np.all(a_maxmin == aarg_maxmin.choose(*a.transpose(i, *axes)))


# numpy/_core/tests/test_multiarray.py::TestArgmaxArgminCommon::test_output_shape
@pytest.mark.parametrize("method", ["argmax", "argmin"])
def test_arg_reduction_refuses_out_of_the_wrong_shape(method):
    func = getattr(gpureduce, method)
    a = np.ones((10, 5))
    for shape in [(11,), (2, 5), (1, 10)]:
        with pytest.raises(ValueError):
            func(a, -1, np.ones(shape, dtype=np.int_))
    out = np.ones(10, dtype=np.int_)
    func(a, -1, out=out)
    assert_equal(out, func(a, -1))
    assert_equal(out, 0)


# numpy/_core/tests/test_multiarray.py::TestArgmaxArgminCommon::test_ret_is_out
@pytest.mark.parametrize("ndim", [0, 1])
@pytest.mark.parametrize("method", ["argmax", "argmin"])
def test_arg_reduction_returns_out(method, ndim):
    a = np.ones((4,) + (256,) * ndim)
    out = np.empty((256,) * ndim, dtype=np.intp)
    ret = getattr(gpureduce, method)(a, axis=0, out=out)
    assert ret is out
    assert_equal(out, 0)  # all equal: the first occurrence


# numpy/_core/tests/test_multiarray.py::TestArgmaxArgminCommon::test_np_vs_ndarray (out= by position and by name)
@pytest.mark.parametrize("method", ["argmax", "argmin"])
def test_arg_reduction_out_by_position_and_by_keyword(method, rng):
    func, np_func = getattr(gpureduce, method), getattr(np, method)
    a = rng.normal(size=(2, 3))
    out1 = np.zeros(2, dtype=int)
    assert func(a, 1, out1) is out1
    assert_equal(out1, np_func(a, 1))
    out2 = np.zeros(3, dtype=int)
    assert func(a, out=out2, axis=0) is out2
    assert_equal(out2, np_func(a, axis=0))


# The data of numpy/_core/tests/test_multiarray.py::TestArgmax / TestArgmin (without datetime and timedelta):
# (values, index of the first maximum / minimum), grouped as NumPy builds them.
_NAN_TAILS = [([1] * (k * 5 - 1) + [np.nan], k * 5 - 1) for k in (2, 4, 8, 16, 32)]
_NAN_FLOATS = [([0, 1, 2, 3, np.nan], 4), ([0, 1, 2, np.nan, 3], 3), ([np.nan, 0, 1, 2, 3], 0),
               ([np.nan, 0, np.nan, 2, 3], 0)] + _NAN_TAILS
_NAN_COMPLEX = [
    ([0, 1, 2, 3, complex(0, np.nan)], 4),
    ([0, 1, 2, 3, complex(np.nan, 0)], 4),
    ([0, 1, 2, complex(np.nan, 0), 3], 3),
    ([0, 1, 2, complex(0, np.nan), 3], 3),
    ([complex(0, np.nan), 0, 1, 2, 3], 0),
    ([complex(np.nan, np.nan), 0, 1, 2, 3], 0),
    ([complex(np.nan, 0), complex(np.nan, 2), complex(np.nan, 1)], 0),
    ([complex(np.nan, np.nan), complex(np.nan, 2), complex(np.nan, 1)], 0),
    ([complex(np.nan, 0), complex(np.nan, 2), complex(np.nan, np.nan)], 0),
]
ARG_CASES = {
    "argmax": {
        "unsigned": [([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], 0), ([3, 3, 3, 3, 2, 2, 2, 2], 0),
                     ([0, 1, 2, 3, 4, 5, 6, 7], 7), ([7, 6, 5, 4, 3, 2, 1, 0], 0)],
        "signed": [([1, 2, 3, 4, -4, -3, -2, -1], 3), ([1, 2, 3, 4, -1, -2, -3, -4], 3)],
        "complex": _NAN_COMPLEX + [([complex(0, 0), complex(0, 2), complex(0, 1)], 1),
                                   ([complex(1, 0), complex(0, 2), complex(0, 1)], 0),
                                   ([complex(1, 0), complex(0, 2), complex(1, 1)], 2)],
        "bool": [([False, False, False, False, True], 4), ([False, False, False, True, False], 3),
                 ([True, False, False, False, False], 0), ([True, False, True, False, False], 0)],
    },
    "argmin": {
        "unsigned": [([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], 8), ([3, 3, 3, 3, 2, 2, 2, 2], 4),
                     ([0, 1, 2, 3, 4, 5, 6, 7], 0), ([7, 6, 5, 4, 3, 2, 1, 0], 7)],
        "signed": [([1, 2, 3, 4, -4, -3, -2, -1], 4), ([1, 2, 3, 4, -1, -2, -3, -4], 7)],
        "complex": _NAN_COMPLEX + [([complex(0, 0), complex(0, 2), complex(0, 1)], 0),
                                   ([complex(1, 0), complex(0, 2), complex(0, 1)], 2),
                                   ([complex(1, 0), complex(0, 2), complex(1, 1)], 1)],
        "bool": [([True, True, True, True, False], 4), ([True, True, True, False, True], 3),
                 ([False, True, True, True, True], 0), ([False, True, False, True, True], 0)],
    },
}
ARG_GROUPS = {  # group -> [(dtype, the data sets NumPy gives that dtype)]
    "unsigned": [(dt, ["unsigned"]) for dt in (np.uint8, np.uint16, np.uint32, np.uint64)],
    "signed": [(dt, ["unsigned", "signed"]) for dt in (np.int8, np.int16, np.int32, np.int64)],
    "float": [(dt, ["unsigned", "signed", "nan"]) for dt in (np.float32, np.float64)],
    "complex": [(None, ["complex"])],
    "bool": [(None, ["bool"])],
}


def arg_cases(method, group):
    """(array, expected index) pairs of one group, as NumPy's test builds them (lists become arrays)."""
    for dtype, sets in ARG_GROUPS[group]:
        for name in sets:
            data = _NAN_FLOATS if name == "nan" else ARG_CASES[method][name]
            for values, pos in data:
                yield np.array(values, dtype), pos


def check_arg_combination(method, arr, pos, variant="auto"):
    """NumPy's three checks: the index, the index after repeating every element 129 times, the index with 513
    copies of the opposite extreme appended; and the element there is the min / max."""
    func = getattr(gpureduce, method)
    extreme = gpureduce.max if method == "argmax" else gpureduce.min
    with np.errstate(invalid="ignore"):
        opposite = np.min(arr) if method == "argmax" else np.max(arr)
    val = extreme(arr, variant=variant)
    for values, expected in [(arr, pos), (np.repeat(arr, 129), pos * 129),
                             (np.concatenate((arr, np.repeat(opposite, 513))), pos)]:
        got = func(values, variant=variant)
        assert got == expected, f"{method} of {values!r}: {got}, NumPy's test expects {expected}"
        assert_equal(values[got], val, err_msg=f"{values!r}")


# numpy/_core/tests/test_multiarray.py::TestArgmax::test_combinations
# numpy/_core/tests/test_multiarray.py::TestArgmin::test_combinations
@pytest.mark.parametrize("group", list(ARG_GROUPS))
@pytest.mark.parametrize("method", ["argmax", "argmin"])
def test_arg_reduction_combinations(method, group):
    for arr, pos in arg_cases(method, group):
        check_arg_combination(method, arr, pos)


# numpy/_core/tests/test_multiarray.py::TestArgmax::test_maximum_signed_integers
def test_argmax_of_signed_integer_limits():
    for dtype, bits in [(np.int8, 8), (np.int16, 16), (np.int32, 32), (np.int64, 64)]:
        a = np.array([1, 2**(bits - 1) - 1, -2**(bits - 1)], dtype=dtype)
        assert_exact("argmax", a, 1)
        assert_exact("argmax", a.repeat(129), 129)


# numpy/_core/tests/test_multiarray.py::TestArgmin::test_minimum_signed_integers
def test_argmin_of_signed_integer_limits():
    for dtype, bits in [(np.int8, 8), (np.int16, 16), (np.int32, 32), (np.int64, 64)]:
        a = np.array([1, -2**(bits - 1), -2**(bits - 1) + 1, 2**(bits - 1) - 1], dtype=dtype)
        assert_exact("argmin", a, 1)
        assert_exact("argmin", a.repeat(129), 129)


# numpy/_core/tests/test_multiarray.py::TestMinMax::test_scalar (axis=1 of a scalar)
def test_min_max_of_a_scalar_along_axis_1_is_an_axis_error():
    with pytest.raises(AxisError):
        gpureduce.max(1, 1)
    with pytest.raises(AxisError):
        gpureduce.min(1, 1)


# numpy/_core/tests/test_multiarray.py::TestMinMax::test_scalar (axis=0 and None of a scalar)
def test_min_max_of_a_scalar_along_axis_0_or_none():
    assert_exact("max", 1, 1, axis=0)
    assert_exact("min", 1, 1, axis=0)
    assert_exact("max", 1, 1, axis=None)
    assert_exact("min", 1, 1, axis=None)


# numpy/_core/tests/test_multiarray.py::TestMinMax::test_axis
def test_max_axis_out_of_bounds_and_along_axis_1():
    with pytest.raises(AxisError):
        gpureduce.max([1, 2, 3], 1000)
    assert_exact("max", [[1, 2, 3]], [3], axis=1)


# numpy/_core/tests/test_multiarray.py::TestStats::test_python_type
def test_mean_of_a_list_of_one_python_or_numpy_scalar():
    for x in (np.float16(1.), 1, 1., 1 + 0j):
        assert gpureduce.mean([x]) == 1.


# numpy/_core/tests/test_multiarray.py::TestStats::test_keepdims
def test_mean_keepdims():
    mat = np.eye(3)
    for axis in [0, 1]:
        res = assert_matches_numpy("mean", mat, axis=axis, keepdims=True)
        assert res.ndim == mat.ndim
        assert res.shape[axis] == 1
    res = assert_matches_numpy("mean", mat, axis=None, keepdims=True)
    assert res.shape == (1, 1)


# numpy/_core/tests/test_multiarray.py::TestStats::test_out
@pytest.mark.parametrize("source", SOURCES)
def test_mean_into_out(source):
    mat = on(source, np.eye(3))
    out = on(source, np.zeros(3))
    res = assert_matches_numpy("mean", mat, axis=1, out=out)
    assert res is out
    assert_almost_equal(to_numpy(out), [1 / 3] * 3)
    for shape in [(2,), (2, 2)]:
        with pytest.raises(ValueError):
            gpureduce.mean(mat, axis=1, out=on(source, np.empty(shape)))


# numpy/_core/tests/test_multiarray.py::TestStats::test_dtype_from_input (integer types)
def test_mean_of_integers_is_float64():
    for code in np.typecodes["AllInteger"]:
        mat = np.eye(3, dtype=code)
        assert gpureduce.mean(mat, axis=1).dtype.type is np.float64
        assert gpureduce.mean(mat, axis=None).dtype.type is np.float64


# numpy/_core/tests/test_multiarray.py::TestStats::test_dtype_from_input (float types but long double)
def test_mean_of_inexact_types_keeps_the_type():
    for code in np.typecodes["AllFloat"].replace("g", "").replace("G", ""):
        mat = np.eye(3, dtype=code)
        assert gpureduce.mean(mat, axis=1).dtype.type is mat.dtype.type
        assert gpureduce.mean(mat, axis=None).dtype.type is mat.dtype.type


# numpy/_core/tests/test_multiarray.py::TestStats::test_dtype_from_dtype (float types but long double)
def test_mean_dtype_argument_gives_the_result_type():
    mat = np.eye(3)
    for code in np.typecodes["AllFloat"].replace("g", "").replace("G", ""):
        assert gpureduce.mean(mat, axis=1, dtype=code).dtype.type is np.dtype(code).type
        assert gpureduce.mean(mat, axis=None, dtype=code).dtype.type is np.dtype(code).type


# numpy/_core/tests/test_multiarray.py::TestStats::test_empty
def test_mean_of_empty_slices():
    a = np.zeros((0, 3))
    for axis in [0, None]:
        with pytest.warns(RuntimeWarning):
            assert np.isnan(gpureduce.mean(a, axis=axis)).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no slice is empty: nothing to warn about
        assert_exact("mean", a, np.zeros(0), axis=1)


# numpy/_core/tests/test_multiarray.py::TestStats::test_mean_values (the float and complex matrices)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_mean_times_count_is_the_sum(kind):
    rmat = np.random.default_rng(range(3)).random((4, 5))
    mat = rmat if kind == "real" else rmat + 1j * rmat
    for axis in [0, 1, None]:
        res = assert_matches_numpy("mean", mat, axis=axis)
        count = mat.size if axis is None else mat.shape[axis]
        assert_almost_equal(res * count, mat.sum(axis=axis))


# numpy/_core/tests/test_multiarray.py::TestStats::test_mean_float16 (float16 must be summed in float32)
@pytest.mark.parametrize("source", SOURCES)
def test_mean_of_many_float16_ones_is_one(source):
    assert gpureduce.mean(on(source, np.ones(100000, dtype="float16"))) == 1


# numpy/_core/tests/test_multiarray.py::TestStats::test_mean_axis_error
def test_mean_axis_out_of_bounds_is_an_axis_error():
    with pytest.raises(AxisError):
        gpureduce.mean(np.arange(10), axis=2)


MEAN_WHERE_FULL = np.array([[False, True, False, True], [True, False, True, False], [True, True, False, False],
                            [False, False, True, True]])
MEAN_WHERE_PARTIAL = np.array([[False], [True], [True], [False]])
MEAN_WHERE_CASES = [(1, True, [1.5, 5.5, 9.5, 13.5]), (0, MEAN_WHERE_FULL, [6., 5., 10., 9.]),
                    (1, MEAN_WHERE_FULL, [2., 5., 8.5, 14.5]), (0, MEAN_WHERE_PARTIAL, [6., 7., 8., 9.])]


# numpy/_core/tests/test_multiarray.py::TestStats::test_mean_where (the 2-d cases)
@pytest.mark.parametrize("source", SOURCES)
def test_mean_where(source):
    a = on(source, np.arange(16).reshape((4, 4)))
    for axis, where, expected in MEAN_WHERE_CASES:
        assert_allclose(to_numpy(gpureduce.mean(a, axis=axis, where=where)), expected)


# numpy/_core/tests/test_multiarray.py::TestStats::test_mean_where (the 3-d case)
def test_mean_where_broadcast_along_the_last_axis():
    a3d = np.arange(16).reshape((2, 2, 4))
    res = gpureduce.mean(a3d, axis=2, where=np.array([False, True, True, False]))
    assert_allclose(res, [[1.5, 5.5], [9.5, 13.5]])


# numpy/_core/tests/test_multiarray.py::TestStats::test_mean_where (nothing selected: NaN)
def test_mean_where_nothing_is_selected_is_nan():
    a = np.arange(16).reshape((4, 4))
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):  # as NumPy's (a host mask)
        assert_allclose(gpureduce.mean(a, axis=1, where=MEAN_WHERE_PARTIAL), [np.nan, 5.5, 9.5, np.nan])
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert_equal(gpureduce.mean(a, where=False), np.nan)


# numpy/_core/tests/test_multiarray.py::TestWritebackIfCopy::test_argmax_with_out
def test_argmax_into_an_int16_out():
    out = np.empty(5, dtype="i2")
    assert_equal(gpureduce.argmax(np.eye(5), 0, out=out), range(5))
    assert_equal(out, range(5))


# numpy/_core/tests/test_multiarray.py::TestWritebackIfCopy::test_argmin_with_out
def test_argmin_into_an_int16_out():
    out = np.empty(5, dtype="i2")
    assert_equal(gpureduce.argmin(-np.eye(5), 0, out=out), range(5))
    assert_equal(out, range(5))


# ==================================================================== numpy/_core/tests/test_ufunc.py

SUM_LENGTHS = (0, 1, 2, 7, 8, 9, 15, 16, 19, 127, 128, 1024, 1235)
SUM_DTYPES = [int, np.float16, np.float32, np.float64]


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_sum_stability
@pytest.mark.parametrize("dtype, decimal", [(np.float32, 4), (np.float64, 13)], ids=["float32", "float64"])
def test_sum_of_tenths_is_stable(dtype, decimal):
    a = np.ones(500, dtype=dtype)
    assert_almost_equal(gpureduce.sum(a / 10.) - a.size / 10., 0, decimal)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_sum (1 + ... + v, forwards and reversed).  Every partial sum
# is an integer below 2**24 and float16 is summed in float32, so the result is v(v+1)/2 rounded once: exact.
@pytest.mark.parametrize("dtype", SUM_DTYPES, ids=dtype_id)
def test_sum_of_arange(dtype):
    for v in SUM_LENGTHS:
        with np.errstate(over="ignore"):  # inf in float16 from v = 362 on
            tgt = dtype(v * (v + 1) / 2)
            d = np.arange(1, v + 1, dtype=dtype)
            assert_exact("sum", d, tgt)
            assert_exact("sum", d[::-1], tgt)


STRIDED_ONES = [(slice(None, None, 2), 250), (slice(1, None, 2), 250), (slice(None, None, 3), 167),
                (slice(1, None, 3), 167), (slice(None, None, -2), 250), (slice(-1, None, -2), 250),
                (slice(None, None, -3), 167), (slice(-1, None, -3), 167)]


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_sum (np.ones(500) with steps 2, 3, -2, -3)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dtype", SUM_DTYPES, ids=dtype_id)
def test_sum_of_strided_ones(dtype, source):
    d = on(source, np.ones(500, dtype=dtype))
    for step, expected in STRIDED_ONES:
        assert_exact("sum", d[step], expected)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_sum_complex
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=dtype_id)
def test_sum_of_complex_arange_and_strided_ones(dtype):
    for v in SUM_LENGTHS:
        tgt = dtype(v * (v + 1) / 2) - dtype((v * (v + 1) / 2) * 1j)
        d = np.empty(v, dtype=dtype)
        d.real = np.arange(1, v + 1)
        d.imag = -np.arange(1, v + 1)
        assert_exact("sum", d, tgt)
        assert_exact("sum", d[::-1], tgt)
    d = np.ones(500, dtype=dtype) + 1j
    for step, expected in STRIDED_ONES:
        assert_exact("sum", d[step], expected * (1 + 1j))


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_sum_initial
@pytest.mark.parametrize("source", SOURCES)
def test_sum_initial(source):
    assert_exact("sum", on(source, [3]), 5, initial=2)
    assert_almost_equal(gpureduce.sum(on(source, [0.2]), initial=0.1), 0.3)
    assert_exact("sum", on(source, np.ones((2, 3, 5), dtype=np.int64)), [12, 12, 12], axis=(0, 2), initial=2)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_sum_where
@pytest.mark.parametrize("source", SOURCES)
def test_sum_where(source):
    x = on(source, [[1., 2.], [3., 4.]])
    assert_exact("sum", x, 4., where=[True, False])
    assert_exact("sum", x, [9., 5.], axis=0, initial=5., where=[True, False])


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_zerosize_reduction (sum and prod)
def test_sum_and_prod_of_nothing_are_their_identities():
    assert_exact("sum", [], 0)
    assert_exact("prod", [], 1)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_zerosize_reduction (max and min)
def test_max_and_min_of_nothing_raise():
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        gpureduce.max([])
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum which has no identity"):
        gpureduce.min([])


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_scalar_reduction (the values)
def test_reductions_of_a_scalar_along_axis_0():
    assert_exact("sum", 3, 3, axis=0)
    assert_exact("prod", 3.5, 3.5, axis=0)
    assert_exact("max", 3, 3, axis=0)
    assert_exact("min", 2.5, 2.5, axis=0)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_scalar_reduction (the scalar types)
def test_reductions_of_a_numpy_scalar_keep_its_type():
    for op in ("prod", "sum", "max", "min"):
        assert type(getattr(gpureduce, op)(np.float32(2.5), axis=0)) is np.float32


def unaligned_float64(shape):
    """An empty float64 array of `shape` whose data start one byte into an int8 buffer."""
    size = int(np.prod(shape))
    return np.empty((size * 8 + 1,), dtype="i1")[1:].view(dtype="f8").reshape(shape)


IDENTITYLESS_ARRAYS = {  # NumPy's identityless_reduce_arrs, by layout
    "C": lambda: np.empty((2, 3, 4), order="C"),
    "F": lambda: np.empty((2, 3, 4), order="F"),
    "mixed-order": lambda: np.empty((2, 4, 3), order="C").swapaxes(1, 2),
    "reversed": lambda: np.empty((2, 3, 4), order="C")[::-1, ::-1, ::-1],
    "not-contiguous": lambda: np.empty((3, 5, 4), order="C").swapaxes(1, 2)[1:, 1:, 1:],
    "not-contiguous-not-aligned": lambda: unaligned_float64((3, 4, 5))[1:, 1:, 1:],
}


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_identityless_reduction (np.minimum.reduce).  The array is
# filled in place, so that its layout is the one named (NumPy's test fills a copy, C-ordered for some).
@pytest.mark.parametrize("layout", list(IDENTITYLESS_ARRAYS))
def test_min_over_every_axis_combination_and_layout(layout):
    for pos in [(1, 0, 0), (0, 1, 0), (0, 0, 1)]:
        a = IDENTITYLESS_ARRAYS[layout]()
        a[...] = 1
        a[pos] = 0
        for axis in [None, (0, 1), (0, 2), (1, 2), 0, 1, 2, ()]:
            if axis is None:
                axes = np.array([], dtype=np.intp)
            else:
                axes = np.delete(np.arange(a.ndim), axis)
            expected = np.ones(np.array(a.shape)[axes])
            expected[tuple(np.array(pos)[axes])] = 0
            res = gpureduce.min(a, axis=axis)
            assert_equal(res, expected, strict=True)
            res = np.full_like(res, np.nan)
            gpureduce.min(a, axis=axis, out=res)
            assert_equal(res, expected, strict=True)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_initial_reduction (np.maximum / np.minimum with initial=)
def test_min_max_initial():
    assert_exact("max", [], 0, initial=0)
    assert_exact("min", [], np.inf, initial=np.inf)
    assert_exact("max", [], -np.inf, initial=-np.inf)
    assert_exact("min", [5], 4, initial=4)
    assert_exact("max", [4], 5, initial=5)
    assert_exact("max", [5], 5, initial=4)
    assert_exact("min", [4], 4, initial=5)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_initial_reduction (initial=None: no initial value, so an
# empty reduction raises, with or without an identity)
def test_initial_none_over_nothing_raises():
    with pytest.raises(ValueError):
        gpureduce.min([], initial=None)
    with pytest.raises(ValueError):
        gpureduce.sum([], initial=None)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_initial_reduction (np._NoValue is "not given")
def test_initial_numpy_novalue_is_the_default():
    assert_exact("sum", [], 0, initial=np._NoValue)


REDUCTION_WHERE = {
    "columns": np.array([False, True, True]),
    "rows": np.array([[True], [False], [True]]),
    "elements": np.array([[True, False, False], [False, True, False], [False, True, True]]),
}


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduction_with_where (np.add.reduce)
@pytest.mark.parametrize("where", list(REDUCTION_WHERE))
def test_sum_with_where_leaves_the_input_alone(where):
    mask = REDUCTION_WHERE[where]
    for axis in (0, 1, None):
        a = np.arange(9.).reshape(3, 3)
        a_copy = a.copy()
        a_check = np.zeros_like(a)
        np.positive(a, out=a_check, where=mask)
        assert_exact("sum", a, a_check.sum(axis), axis=axis, where=mask)
        assert_array_equal(a, a_copy)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduction_with_where_and_initial (np.maximum.reduce)
@pytest.mark.parametrize("initial", [-np.inf, 5.])
def test_max_with_where_and_initial(initial):
    for axis, where in [(0, np.array([True, False, True])), (1, [True, True, False]), (None, True)]:
        a = np.arange(9.).reshape(3, 3)
        a_check = np.full(a.shape, -np.inf)
        np.positive(a, out=a_check, where=where)
        assert_exact("max", a, a_check.max(axis, initial=initial), axis=axis, where=where, initial=initial)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduction_where_initial_needed
def test_max_with_where_needs_initial():
    a = np.arange(9.).reshape(3, 3)
    with pytest.raises(ValueError, match="to use a where mask one has to specify 'initial'"):
        gpureduce.max(a, where=[False, True, False])


def zero_axis_cases(n, m):
    """NumPy's (shape, axis) pairs: n reductions of m elements each, in several layouts of the axes."""
    return [((n, m), 1), ((m, n), 0), ((n // 2, n // 2, m), 2), ((n // 2, m, n // 2), 1),
            ((n, m // 2, m // 2), (1, 2)), ((m // 2, n, m // 2), (0, 2)),
            ((m // 3, m // 3, m // 3, n // 2, n // 2), (0, 1, 2)),
            ((10, m, n), (0, 1)), ((10, n, m), (0, 2)), ((m, 10, n), 0), ((10, m, n), 1), ((10, n, m), 2)]


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduce_zero_axis (np.maximum.reduce, np.add.reduce): an
# empty reduction raises exactly where the operator has no identity and the reduced extent is empty
@pytest.mark.parametrize("op", ["max", "sum"])
def test_reductions_over_zero_length_axes(op):
    for n, m in [(30, 30), (0, 30), (30, 0), (0, 0)]:
        for shape, axis in zero_axis_cases(n, m):
            if op == "max" and m == 0:
                with pytest.raises(ValueError):
                    gpureduce.max(np.zeros(shape), axis=axis)
            else:
                assert_matches_numpy(op, np.zeros(shape), axis=axis)
    if op == "max":
        with pytest.raises(ValueError):
            gpureduce.max([])
    else:
        assert_exact("sum", [], 0)
    assert_exact(op, np.zeros((0, 0)), np.zeros((0, 0)), axis=())


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduce_zero_axis (np.add / np.maximum .accumulate)
@pytest.mark.parametrize("op", ["cumsum", "cummax"])
def test_scans_along_axes_of_zero_length(op):
    for shape in [(30, 0), (0, 30), (30, 30), (0, 0)]:
        assert_matches_numpy(op, np.zeros(shape), axis=0)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduce_arguments (np.sum takes np.add.reduce's arguments in
# the same order: a, axis, dtype, out, keepdims, initial, where)
def test_sum_takes_arguments_by_position_and_by_name():
    f = gpureduce.sum
    d = np.ones((5, 2), dtype=int)
    o = np.ones((2,), dtype=d.dtype)
    r = o * 5
    assert_equal(f(d, axis=0), r)
    assert_equal(f(d, 0), r)
    assert_equal(f(d, 0, dtype=None), r)
    assert_equal(f(d, 0, dtype='i'), r)
    assert_equal(f(d, 0, 'i'), r)
    assert_equal(f(d, 0, None), r)
    assert_equal(f(d, 0, None, out=None), r)
    assert_equal(f(d, 0, None, out=o), r)
    assert_equal(f(d, 0, None, o), r)
    assert_equal(f(d, 0, None, None), r)
    assert_equal(f(d, 0, None, None, keepdims=False), r)
    assert_equal(f(d, 0, None, None, True), r.reshape((1,) + r.shape))
    assert_equal(f(d, 0, None, None, False, 0), r)
    assert_equal(f(d, 0, None, None, False, initial=0), r)
    assert_equal(f(d, 0, None, None, False, 0, True), r)
    assert_equal(f(d, 0, None, None, False, 0, where=True), r)
    assert_equal(f(d, axis=0, dtype=None, out=None, keepdims=False), r)
    assert_equal(f(d, 0, dtype=None, out=None, keepdims=False), r)
    assert_equal(f(d, 0, None, out=None, keepdims=False), r)
    assert_equal(f(d, 0, None, out=None, keepdims=False, initial=0, where=True), r)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduce_arguments (the TypeErrors)
def test_sum_refuses_numpys_invalid_arguments():
    f = gpureduce.sum
    d = np.ones((5, 2), dtype=int)
    calls = {
        "no argument": lambda: f(),
        "too many": lambda: f(d, 0, None, None, False, 0, True, 1),
        "axis by position": lambda: f(d, "invalid"),
        "axis by name": lambda: f(d, axis="invalid"),
        "axis with dtype and keepdims": lambda: f(d, axis="invalid", dtype=None, keepdims=True),
        "dtype by position": lambda: f(d, 0, "invalid"),
        "dtype by name": lambda: f(d, dtype="invalid"),
        "dtype with out": lambda: f(d, dtype="invalid", out=None),
        "out by position": lambda: f(d, 0, None, "invalid"),
        "out by name": lambda: f(d, out="invalid"),
        "out with dtype": lambda: f(d, out="invalid", dtype=None),
        "keepdims and dtype": lambda: f(d, 0, keepdims="invalid", dtype="invalid", out=None),
        "unknown keyword with axis": lambda: f(d, axis=0, dtype=None, invalid=0),
        "unknown keyword": lambda: f(d, invalid=0),
        "unknown keyword with keepdims": lambda: f(d, 0, keepdims=True, invalid="invalid", out=None),
        "unknown keyword with all": lambda: f(d, axis=0, dtype=None, keepdims=True, out=None, invalid=0),
        "unknown keyword with out": lambda: f(d, axis=0, dtype=None, out=None, invalid=0),
    }
    raised = {}
    for name, call in calls.items():
        try:
            call()
        except Exception as error:  # noqa: BLE001 - any exception but TypeError is reported below
            raised[name] = type(error).__name__
        else:
            raised[name] = "nothing"
    assert {name: what for name, what in raised.items() if what != "TypeError"} == {}


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reducelike_byteorder_resolution
def test_sum_and_cumsum_of_big_endian_input():
    arr_be = np.arange(10, dtype=">i8")
    arr_le = np.arange(10, dtype="<i8")
    assert gpureduce.sum(arr_be) == gpureduce.sum(arr_le) == 45
    assert_array_equal(gpureduce.cumsum(arr_be), gpureduce.cumsum(arr_le))
    assert_array_equal(gpureduce.cumsum(arr_be), np.cumsum(arr_le))


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reducelike_out_promotes (uint8 input, uint16 out)
def test_sum_and_prod_into_a_wider_out():
    arr = np.ones(1000, dtype=np.uint8)
    out = np.zeros((), dtype=np.uint16)
    assert gpureduce.sum(arr, out=out) == 1000
    arr[:10] = 2
    assert gpureduce.prod(arr, out=out) == 2**10


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reducelike_out_promotes (int64 input, float32 out, dtype=
# float32: every element is cast to float32 first, 2**25 - 1 -> 2**25, so the product is 2**125 exactly)
def test_prod_with_dtype_computes_in_that_dtype():
    arr = np.full(5, 2**25 - 1, dtype=np.int64)
    single_res = np.zeros((), dtype=np.float32)
    gpureduce.prod(arr, out=single_res, dtype=np.float32)
    assert single_res == np.float32(2.0**125)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reducelike_out_promotes (its comment: without dtype= the
# result is np.prod(arr.astype("f8")).astype("f4"), the int64 input and float32 out promoting to float64)
def test_prod_without_dtype_computes_in_the_promoted_type_of_input_and_out():
    arr = np.full(5, 2**25 - 1, dtype=np.int64)
    res = np.zeros((), dtype=np.float32)
    gpureduce.prod(arr, out=res)
    assert res == np.prod(arr.astype("f8")).astype("f4")
    assert res != np.float32(2.0**125)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reducelike_output_needs_identical_cast
def test_sum_and_cumsum_into_out_of_the_other_byte_order():
    arr = np.ones(20, dtype="f8")
    out = np.empty((), dtype=arr.dtype.newbyteorder())
    gpureduce.sum(arr, out=out)
    assert_array_equal(out, np.add.reduce(arr))
    out = np.empty(arr.shape, dtype=arr.dtype.newbyteorder())
    gpureduce.cumsum(arr, out=out)
    assert_array_equal(out, np.add.accumulate(arr))


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduce_noncontig_output (gh-8036)
@pytest.mark.parametrize("source", SOURCES)
def test_sum_into_a_strided_out_leaves_the_rest_alone(source):
    x_host = np.arange(7 * 13 * 8, dtype=np.int16).reshape(7, 13, 8)[4:6, 1:11:6, 1:5].transpose(1, 2, 0)
    x = on(source, np.arange(7 * 13 * 8, dtype=np.int16).reshape(7, 13, 8))[4:6, 1:11:6, 1:5].transpose(1, 2, 0)
    y_base = on(source, np.arange(4 * 4, dtype=np.int16).reshape(4, 4))
    y = y_base[::2, :]
    y_base_copy = to_numpy(y_base).copy()
    r0 = gpureduce.sum(x, out=y.copy(), axis=2)
    r1 = gpureduce.sum(x, out=y, axis=2)
    assert r1 is y
    assert_equal(to_numpy(r0), to_numpy(r1))
    assert_equal(to_numpy(r1), np.add.reduce(x_host, axis=2))
    assert_equal(to_numpy(y_base)[1, :], y_base_copy[1, :])
    assert_equal(to_numpy(y_base)[3, :], y_base_copy[3, :])


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduceat_and_accumulate_out_shape_mismatch (accumulate)
@pytest.mark.parametrize("with_cast", [True, False])
def test_cumsum_refuses_out_of_the_wrong_shape(with_cast):
    arr = np.arange(5)
    out = np.arange(3)
    if with_cast:
        out = out.astype(np.float64)
    with pytest.raises(ValueError, match="(shape|size)"):
        gpureduce.cumsum(arr, out=out)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduce_wrong_dimension_output (gh-15144)
@pytest.mark.parametrize("keepdims", [True, False])
@pytest.mark.parametrize("op", ["sum", "min"])
def test_reduction_out_must_have_the_result_shape(op, keepdims):
    a = np.arange(12.).reshape(4, 3)
    correct_out = NUMPY[op](a, axis=0, keepdims=keepdims)
    for out_shape in [(), (1,), (3,), (1, 1), (1, 3), (4, 3)]:
        out = np.empty(out_shape, a.dtype)
        if out_shape != correct_out.shape:
            with pytest.raises(ValueError):
                getattr(gpureduce, op)(a, axis=0, out=out, keepdims=keepdims)
        else:
            check = getattr(gpureduce, op)(a, axis=0, out=out, keepdims=keepdims)
            assert check is out
            assert_array_equal(check, correct_out)


# numpy/_core/tests/test_ufunc.py::TestUfunc::test_reduce_output_does_not_broadcast_input
def test_sum_out_cannot_broadcast_the_input():
    a = np.ones((1, 10))
    out_correct = np.empty((1, 1))
    out_incorrect = np.empty((3, 1))
    gpureduce.sum(a, axis=-1, out=out_correct, keepdims=True)
    assert_equal(out_correct, [[10.]])
    gpureduce.sum(a, axis=-1, out=out_correct[:, 0], keepdims=False)
    assert_equal(out_correct, [[10.]])
    with pytest.raises(ValueError):
        gpureduce.sum(a, axis=-1, out=out_incorrect, keepdims=True)
    with pytest.raises(ValueError):
        gpureduce.sum(a, axis=-1, out=out_incorrect[:, 0], keepdims=False)


def is_negative_zero(value):
    value = np.asarray(value)
    if value != 0.0 or not np.signbit(value.real):
        return False
    return value.dtype.kind != "c" or bool(np.signbit(value.imag))


# numpy/_core/tests/test_ufunc.py::test_addition_reduce_negative_zero (use_initial=True; long double dropped)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_sum_of_negative_zeros_from_a_negative_zero_initial_is_negative_zero(dtype):
    dtype = np.dtype(dtype)
    neg_zero = dtype.type(complex(-0.0, -0.0)) if dtype.kind == "c" else dtype.type(-0.0)
    for i in range(150):  # lengths beyond NumPy's pairwise block and a warp
        res = gpureduce.sum(np.array([neg_zero] * i, dtype=dtype), initial=neg_zero)
        assert is_negative_zero(res), f"sum of {i} times -0.0 with initial=-0.0 is {res!r}"


# ==================================================================== numpy/_core/tests/test_numeric.py

# numpy/_core/tests/test_numeric.py::TestNonarrayArgs::test_mean
def test_mean_of_nested_lists():
    A = [[1, 2, 3], [4, 5, 6]]
    assert gpureduce.mean(A) == 3.5
    assert np.all(gpureduce.mean(A, 0) == np.array([2.5, 3.5, 4.5]))
    assert np.all(gpureduce.mean(A, 1) == np.array([2., 5.]))
    with pytest.warns(RuntimeWarning):
        assert np.isnan(gpureduce.mean([]))


# numpy/_core/tests/test_numeric.py::TestNonarrayArgs::test_prod
def test_prod_of_nested_lists():
    assert_exact("prod", [[1, 2, 3, 4], [5, 6, 7, 9], [10, 3, 4, 5]], [24, 1890, 600], axis=-1)


# numpy/_core/tests/test_numeric.py::TestNonarrayArgs::test_sum
def test_sum_of_nested_lists_keepdims():
    assert_exact("sum", [[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[6], [15], [24]], axis=1, keepdims=True)


# numpy/_core/tests/test_numeric.py::TestStdVar::test_out_scalar (mean)
def test_mean_into_a_0d_out():
    d = np.arange(10)
    out = np.array(0.)
    r = gpureduce.mean(d, out=out)
    assert r is out
    assert_array_equal(out, 4.5)


# ==================================================================== numpy/_core/tests/test_regression.py

# numpy/_core/tests/test_regression.py::TestRegression::test_reduce (ticket #40)
def test_sum_of_a_float_list_with_dtype_none():
    assert_exact("sum", [1., .5], 1.5, dtype=None)


# numpy/_core/tests/test_regression.py::TestRegression::test_argmax_byteorder (ticket #546)
def test_argmax_of_big_endian_float32():
    a = np.arange(3, dtype=">f")
    assert a[gpureduce.argmax(a)] == gpureduce.max(a) == 2


# numpy/_core/tests/test_regression.py::TestRegression::test_large_float_sum
def test_float32_sum_with_dtype_float64_is_the_float64_sum():
    a = np.arange(10000, dtype="f")
    assert_exact("sum", a, gpureduce.sum(a.astype("d")), dtype="d")
    assert gpureduce.sum(a, dtype="d") == 49995000.0


# numpy/_core/tests/test_regression.py::TestRegression::test_reduce_contiguous (GitHub issue #387)
def test_sum_results_are_contiguous():
    a = gpureduce.sum(np.zeros((2, 1, 2)), (0, 1))
    b = gpureduce.sum(np.zeros((2, 1, 2)), 1)
    assert a.flags.c_contiguous
    assert a.flags.f_contiguous
    assert b.flags.c_contiguous


# numpy/_core/tests/test_regression.py::TestRegression::test_zerosize_accumulate (ticket #1733)
def test_cumsum_of_an_empty_view():
    x = np.array([[42, 0]], dtype=np.uint32)
    assert_exact("cumsum", x[:-1, 0], [])


# ==================================================================== numpy/_core/tests/test_umath.py

INTEGER_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
INEXACT_DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128]


# numpy/_core/tests/test_umath.py::TestMaximum::test_reduce (integer types)
# numpy/_core/tests/test_umath.py::TestMinimum::test_reduce (integer types)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("op, extreme", [("max", 10), ("min", 0)], ids=["max", "min"])
def test_min_max_of_integer_aranges(op, extreme, source):
    seq1 = np.arange(11)
    for dtype in INTEGER_DTYPES:
        assert_exact(op, on(source, seq1.astype(dtype)), extreme)
        assert_exact(op, on(source, seq1[::-1].astype(dtype)), extreme)


# numpy/_core/tests/test_umath.py::TestMaximum::test_reduce (float and complex types, then NaN at every other)
# numpy/_core/tests/test_umath.py::TestMinimum::test_reduce (the same)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("op, extreme", [("max", 10), ("min", 0)], ids=["max", "min"])
def test_min_max_of_inexact_aranges_propagate_nan(op, extreme, source):
    seq1 = np.arange(11)
    for dtype in INEXACT_DTYPES:
        tmp1 = seq1.astype(dtype)
        tmp2 = seq1[::-1].astype(dtype)
        assert_exact(op, on(source, tmp1), extreme)
        assert_exact(op, on(source, tmp2), extreme)
        tmp1[::2] = np.nan
        tmp2[::2] = np.nan
        assert_equal(to_numpy(getattr(gpureduce, op)(on(source, tmp1)))[()], np.nan)
        assert_equal(to_numpy(getattr(gpureduce, op)(on(source, tmp2)))[()], np.nan)


# numpy/_core/tests/test_umath.py::TestMaximum::test_reduce_complex
def test_max_of_complex_orders_real_part_first():
    assert_exact("max", [1, 2j], 1)
    assert_exact("max", [1 + 3j, 2j], 1 + 3j)


# numpy/_core/tests/test_umath.py::TestMinimum::test_reduce_complex
def test_min_of_complex_orders_real_part_first():
    assert_exact("min", [1, 2j], 2j)
    assert_exact("min", [1 + 3j, 2j], 2j)


# numpy/_core/tests/test_umath.py::TestAdd::test_reduce_alignment (gh-9876: a float64 field at a 4-byte offset,
# 12-byte strides)
def test_sum_of_a_structured_field_view():
    a = np.zeros(2, dtype=[("a", np.int32), ("b", np.float64)])
    a["a"] = -1
    assert_exact("sum", a["b"], 0)


# numpy/_core/tests/test_umath.py::TestMinMax::test_lower_align (float64 data aligned to 4 bytes only)
def test_min_max_of_float64_data_not_aligned_to_8_bytes():
    d = np.zeros(23 * 8, dtype=np.int8)[4:-4].view(np.float64)
    assert_exact("max", d, d[0])
    assert_exact("min", d, d[0])


# numpy/_core/tests/test_umath.py::TestMinMax::test_reduce_reorder (gh 10370, 11029)
def test_min_of_rows_holding_one_nan():
    for dtype in (np.float32, np.float16, np.complex64):
        for n in (2, 4, 8, 16, 32):
            for r in np.diagflat(np.array([np.nan] * n, dtype=dtype)):
                assert_equal(gpureduce.min(r), np.nan)


# numpy/_core/tests/test_umath.py::test_memoverlap_accumulate (np.maximum / np.minimum .accumulate, gh-15597)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dtype_id)
def test_cummax_and_cummin(dtype):
    arr = np.array([0.61, 0.60, 0.77, 0.41, 0.19], dtype=dtype)
    assert_equal(gpureduce.cummax(arr), np.array([0.61, 0.61, 0.77, 0.77, 0.77], dtype=dtype))
    assert_equal(gpureduce.cummin(arr), np.array([0.61, 0.60, 0.60, 0.41, 0.19], dtype=dtype))


# ==================================================================== every variant

# numpy/_core/tests/test_ufunc.py::TestUfunc::test_sum and test_zerosize_reduction,
# numpy/lib/tests/test_function_base.py::TestProd::test_basic,
# numpy/_core/tests/test_umath.py::TestMaximum::test_reduce and TestMinimum::test_reduce:
# their whole-array cases (C-ordered: what every variant reduces) in each dtype the variant's flat kernels take.
@for_all_variants("reduce")
def test_whole_array_cases_on_every_reduce_variant(variant):
    for dtype in VARIANTS["reduce", variant].dtypes:
        # exact's float16 and bfloat16 sums: the elements' exact total rounded once to the dtype (1024 * 1025 / 2
        # overflows float16: inf, as NumPy's own; bfloat16 rounds the elements above 256); the other dtypes hold
        # every element and total exactly
        half = np.dtype(dtype).itemsize == 2
        for v in SUM_LENGTHS:
            x = np.arange(1, v + 1).astype(dtype)
            assert_exact("sum", x, correctly_rounded_sum(x, dtype) if half else v * (v + 1) // 2, variant=variant)
        if "prod" in VARIANTS["reduce", variant].ops:  # (exact: no correctly rounded product)
            assert_exact("prod", np.array(BASIC_1D, dtype), 26400, variant=variant)
        for seq in (np.arange(11).astype(dtype), np.arange(10, -1, -1).astype(dtype)):
            assert_exact("max", seq, 10, variant=variant)
            assert_exact("min", seq, 0, variant=variant)
            if seq.dtype.kind == "f":
                seq[::2] = np.nan
                assert_exact("max", seq, np.nan, variant=variant)
                assert_exact("min", seq, np.nan, variant=variant)
        assert_exact("sum", np.zeros(0, dtype), 0, variant=variant)
        if "prod" in VARIANTS["reduce", variant].ops:
            assert_exact("prod", np.zeros(0, dtype), 1, variant=variant)
        for op in ("max", "min"):
            with pytest.raises(ValueError, match="zero-size array"):
                getattr(gpureduce, op)(np.zeros(0, dtype), variant=variant)


# numpy/lib/tests/test_function_base.py::TestCumsum::test_basic and TestCumprod::test_basic (their 1-d arrays,
# whole: what every variant scans), numpy/_core/tests/test_umath.py::test_memoverlap_accumulate (cummax, cummin)
@for_all_variants("scan")
def test_whole_array_cases_on_every_scan_variant(variant):
    dtypes = VARIANTS["scan", variant].dtypes
    for dtype in dtypes:
        a = np.array(BASIC_1D, dtype)
        assert_exact("cumsum", a, [1, 3, 13, 24, 30, 35, 39], variant=variant)
        if "prod" in VARIANTS["scan", variant].ops:  # (exact scans sums, minima and maxima)
            assert_exact("cumprod", a, [1, 2, 20, 220, 1320, 6600, 26400], variant=variant)
    for dtype in [dt for dt in dtypes if np.dtype(dt).kind == "f"]:
        arr = np.array([0.61, 0.60, 0.77, 0.41, 0.19], dtype=dtype)
        assert_equal(gpureduce.cummax(arr, variant=variant), np.array([0.61, 0.61, 0.77, 0.77, 0.77], dtype=dtype))
        assert_equal(gpureduce.cummin(arr, variant=variant), np.array([0.61, 0.60, 0.60, 0.41, 0.19], dtype=dtype))


# numpy/_core/tests/test_multiarray.py::TestArgmax/TestArgmin::test_combinations (signed and NaN data) and
# TestStats::test_mean_where on each variant that implements argmin, argmax and mean (the "axes" variants)
@for_all_variants("reduce", op="argmax")  # the axis variants (op="mean" adds exact's whole-array mean)
def test_arg_and_mean_cases_on_every_axes_variant(variant):
    for method in ("argmax", "argmin"):
        for arr, pos in arg_cases(method, "float"):
            check_arg_combination(method, arr, pos, variant=variant)
    a = np.arange(16).reshape((4, 4))
    for axis, where, expected in MEAN_WHERE_CASES:
        assert_allclose(gpureduce.mean(a, axis=axis, where=where, variant=variant), expected)
