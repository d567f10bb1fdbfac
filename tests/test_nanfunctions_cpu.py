"""The nan functions without a GPU: NumPy's signatures and errors (before any device work), the plain operator
for integer and bool inputs, the plans, and NumPy's warnings decided from a result (gpureduce/_planning/numpy_rules.py, with
NumPy's own results standing in for the device's)."""
import warnings

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.numpy_rules import EXACT, check_like_numpy, operator_for
from gpureduce._planning.plan import prepare_reduce

OPS = ["nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin", "nanargmax", "nanvar", "nanstd"]


def test_each_runs_its_plain_operator_where_there_is_no_nan():
    assert EXACT == {"nansum": "sum", "nanprod": "prod", "nanmin": "min", "nanmax": "max", "nanmean": "mean",
                     "nanargmin": "argmin", "nanargmax": "argmax", "nanvar": "var", "nanstd": "std"}
    for op in OPS:
        for dtype in ("bool", "int8", "uint32", "int64"):
            assert operator_for(op, np.ones(3, dtype)) == EXACT[op]
            plan, _ = prepare_reduce(op, np.ones((2, 3), dtype), axis=1)
            assert plan.op == _core.op_names.index(EXACT[op])
        for dtype in ("float16", "float32", "complex128"):
            assert operator_for(op, np.ones(3, dtype)) == op
            plan, _ = prepare_reduce(op, np.ones((2, 3), dtype), axis=1)
            assert plan.op == _core.op_names.index(op)
            assert plan.a.dtype == np.dtype(dtype)  # read as it is, NaN skipped in the kernel


@pytest.mark.parametrize("op", OPS)
def test_numpys_signatures_and_errors(op):
    x = np.ones((2, 3))
    fn = getattr(gpureduce, op)
    if op in ("nanmin", "nanmax"):
        with pytest.raises(TypeError):
            fn(x, dtype=np.float32)
        with pytest.raises(ValueError, match="zero-size array to reduction operation f"):
            fn(np.zeros(0))
        with pytest.raises(ValueError, match="does not have an identity"):
            fn(x, where=np.ones((2, 3), bool))
    if op in ("nanargmin", "nanargmax"):
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            fn(x, axis=(0, 1))
        with pytest.raises(ValueError, match=f"attempt to get {op[3:]} of an empty sequence"):
            fn(np.zeros((2, 0)), axis=1)
        with pytest.raises(TypeError, match="where"):
            gpureduce.reduce(op, x, where=np.ones((2, 3), bool))
        with pytest.raises(TypeError, match="dtype"):
            gpureduce.reduce(op, x, dtype=np.float32)
    if op in ("nanvar", "nanstd"):
        with pytest.raises(TypeError, match="mean="):
            fn(x, mean=np.ones((2, 1)))
        with pytest.raises(ValueError, match="ddof and correction"):
            fn(x, ddof=1, correction=1)
        with pytest.raises(TypeError, match="initial"):
            gpureduce.reduce(op, x, initial=1.0)
    if op == "nanmean":
        with pytest.raises(TypeError, match="If a is inexact, then dtype must be inexact"):
            fn(x, dtype=np.int32)
        with pytest.raises(TypeError, match="initial"):
            gpureduce.reduce(op, x, initial=1.0)
    with pytest.raises(np.exceptions.AxisError):
        fn(x, axis=2)
    with pytest.raises(ValueError, match="auto"):
        fn(x, variant="shuffle")


@pytest.mark.parametrize("op", ["nanmin", "nanmax", "nanmean"])
def test_warnings_come_from_the_result_as_numpy_gives_them(op):
    x = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 2.0]])
    for axis in (None, 0, 1):
        for where in (True, np.array([[True, True, True], [False, True, True]])):
            with warnings.catch_warnings(record=True) as numpy_warned:
                warnings.simplefilter("always")
                kwargs = {} if where is True else {"where": where}
                if op != "nanmean" and where is not True:
                    kwargs["initial"] = np.inf if op == "nanmin" else -np.inf
                result = getattr(np, op)(x, axis=axis, **kwargs)
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                check_like_numpy(op, x, result, axis, where, 0)
            assert [str(w.message) for w in warned] == [str(w.message) for w in numpy_warned], (axis, where)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_like_numpy("nanmean", np.array([np.inf, -np.inf]), np.float64(np.nan), None, True, 0)  # not empty


@pytest.mark.parametrize("op", ["nanvar", "nanstd"])
def test_variances_warn_where_numpy_counts_too_few_numbers(op):
    x = np.array([[np.nan, np.nan, 1.0], [1.0, np.nan, 2.0], [4.0, 5.0, 6.0]])
    for axis in (None, 0, 1):
        for ddof in (0, 1, 2):
            for where in (True, np.array([[True, True, True], [False, True, True], [True, True, False]])):
                kwargs = {} if where is True else {"where": where}
                with warnings.catch_warnings(record=True) as numpy_warned:
                    warnings.simplefilter("always")
                    result = getattr(np, op)(x, axis=axis, ddof=ddof, **kwargs)
                with warnings.catch_warnings(record=True) as warned:
                    warnings.simplefilter("always")
                    check_like_numpy(op, x, result, axis, where, ddof)
                dof = [str(w.message) for w in numpy_warned if "Degrees of freedom" in str(w.message)]
                assert [str(w.message) for w in warned] == dof[:1], (axis, ddof, where)


def test_positions_of_all_nan_slices_raise_numpys_valueerror():
    x = np.array([[np.nan, 1.0], [np.nan, np.nan]])
    for op in ("nanargmin", "nanargmax"):
        check_like_numpy(op, x, np.array([1, 0]), 0, True, 0)  # what the kernels give: positions
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            check_like_numpy(op, x, np.array([1, -1]), 1, True, 0)  # -1: no number in the slice
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(np, op)(x, axis=1)  # NumPy's own


def test_ptp_signature_and_errors_as_numpys():
    x = np.ones((2, 3))
    with pytest.raises(TypeError, match="numpy boolean subtract"):
        gpureduce.ptp(np.ones(3, bool))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        gpureduce.ptp(np.zeros((0, 3)), axis=0)
    for keyword in ("dtype", "initial", "where"):
        with pytest.raises(TypeError, match=keyword):
            gpureduce.reduce("ptp", x, **{keyword: np.ones((2, 3), bool) if keyword == "where" else 1})
    with pytest.raises(np.exceptions.AxisError):
        gpureduce.ptp(x, axis=2)
    plan, _ = prepare_reduce("ptp", np.ones((2, 3), np.int8), axis=(0, 1))
    assert plan.result_dtype == _core.dtype_names.index("int8")


def test_nan_scans_plan_like_numpy():
    """nancumsum/nancumprod: the plain scan for integers and bool, their own kernels for inexact inputs, the axis
    variants only; NumPy's errors before any device work."""
    from gpureduce._planning.plan import prepare_scan

    for op, plain in (("nansum", "sum"), ("nanprod", "prod")):
        assert prepare_scan(op, np.ones(3, np.int16))[0].op == _core.op_names.index(plain)
        plan, _ = prepare_scan(op, np.ones((2, 3), np.float32), axis=1)
        assert plan.op == _core.op_names.index(op) and plan.a.dtype == np.float32
        with pytest.raises(ValueError, match=f"does not scan {op}"):
            prepare_scan(op, np.ones(3), variant="decoupled_lookback")
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        gpureduce.nancumsum(np.ones((2, 3)), axis=(0, 1))
    with pytest.raises(np.exceptions.AxisError):
        gpureduce.nancumprod(np.ones((2, 3)), axis=2)
