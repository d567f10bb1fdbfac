"""var and std without a GPU: NumPy's signatures, errors and "Degrees of freedom" warning (raised before any
device work), and their plans (result dtypes, ddof as the plan's parameter)."""
import warnings

import numpy as np
import pytest

import gpureduce
from gpureduce._planning.plan import prepare_reduce
from gpureduce._registry import DTYPE_NAMES


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_plans_carry_numpys_result_dtype_and_ddof(op, dtype):
    x = np.ones((4, 5), dtype)
    want = getattr(np, op)(x, axis=1).dtype
    for ddof in (0, 1, 2.5):
        plan, _ = prepare_reduce(op, x, axis=1, ddof=ddof)
        assert DTYPE_NAMES[plan.result_dtype] == want.name
        assert np.frombuffer(plan.parameter, want)[0] == want.type(ddof)


@pytest.mark.parametrize("op", ["var", "std"])
def test_numpys_arguments_and_errors(op):
    fn = getattr(gpureduce, op)
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="ddof and correction can't be provided simultaneously"):
        fn(x, ddof=1, correction=1)
    with pytest.raises(TypeError, match="mean="):
        fn(x, mean=np.ones((2, 1)))
    with pytest.raises(TypeError, match="floating dtype"):
        fn(x, dtype=np.int32)
    with pytest.raises(TypeError, match="initial"):
        gpureduce.reduce(op, x, initial=1.0)
    with pytest.raises(TypeError, match="ddof"):
        gpureduce.reduce("sum", x, ddof=1)
    with pytest.raises(np.exceptions.AxisError):
        fn(x, axis=2)
    with pytest.raises(ValueError, match="auto"):
        fn(x, variant="two_pass")


@pytest.mark.parametrize("op", ["var", "std"])
def test_degrees_of_freedom_warning_as_numpy(op):
    """Warned before the device runs: a result taking no more than ddof elements (by shape or host mask)."""
    cases = [(np.ones(1), {"ddof": 1}), (np.ones(2), {"ddof": 2}), (np.zeros(0), {}),
             (np.ones((2, 3)), {"axis": 1, "ddof": 1, "where": np.array([[True, False, False], [True] * 3])}),
             (np.ones((2, 3)), {"axis": 1, "ddof": 1}), (np.ones((0, 3)), {"axis": 0, "ddof": 0})]
    for x, kwargs in cases:
        with warnings.catch_warnings(record=True) as numpy_warned:
            warnings.simplefilter("always")
            getattr(np, op)(x, **kwargs)
        numpy_said = any("Degrees of freedom" in str(w.message) for w in numpy_warned)
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            prepare_reduce(op, x, kwargs.get("axis"), where=kwargs.get("where", True), ddof=kwargs.get("ddof", 0))
        assert any("Degrees of freedom" in str(w.message) for w in warned) == numpy_said, (x.shape, kwargs)
