"""The nan functions without a GPU: NumPy's signatures and errors (before any device work), the plain operator
for integer and bool inputs, the plans, and NumPy's warnings decided from a result (gpureduce/_nan.py, with
NumPy's own results standing in for the device's)."""
import warnings

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._nan import EXACT, operator_for, warn_like_numpy
from gpureduce._plan import prepare_reduce

OPS = ["nansum", "nanprod", "nanmin", "nanmax", "nanmean"]


def test_each_runs_its_plain_operator_where_there_is_no_nan():
    assert EXACT == {"nansum": "sum", "nanprod": "prod", "nanmin": "min", "nanmax": "max", "nanmean": "mean"}
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
                warn_like_numpy(op, x, result, axis, where)
            assert [str(w.message) for w in warned] == [str(w.message) for w in numpy_warned], (axis, where)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_like_numpy("nanmean", np.array([np.inf, -np.inf]), np.float64(np.nan), None, True)  # not empty
