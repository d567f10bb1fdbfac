"""any, all and count_nonzero without a GPU: their NumPy signatures and errors (raised before any device work),
and the plans they make (result dtypes, the bool cast for CUB's kernels).  tests/test_truth_ops_gpu.py checks
their values against NumPy on the device."""
import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.plan import prepare_reduce
from gpureduce._registry import DTYPE_NAMES

OPS = ["any", "all", "count_nonzero"]


@pytest.mark.parametrize("op", OPS)
def test_numpys_keywords_only(op):
    x = np.ones((2, 3))
    fn = getattr(gpureduce, op)
    with pytest.raises(TypeError):
        fn(x, dtype=np.float64)  # no dtype=, as NumPy's
    with pytest.raises(TypeError, match="dtype"):
        gpureduce.reduce(op, x, dtype=np.float64)
    with pytest.raises(TypeError, match="initial"):
        gpureduce.reduce(op, x, initial=1)
    with pytest.raises(np.exceptions.AxisError):
        fn(x, axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        fn(x, axis=(0, 0))
    with pytest.raises(np.exceptions.AxisError):
        fn(np.array(1.0), axis=(0,))  # a tuple axis of a 0-d array is out of range, as in NumPy
    if op == "count_nonzero":
        with pytest.raises(TypeError):
            fn(x, out=np.zeros(3))
        with pytest.raises(TypeError, match="where"):
            gpureduce.reduce(op, x, where=np.ones((2, 3), bool))


@pytest.mark.parametrize("op", OPS)
def test_variants_that_cannot_run_them_say_which_can(op):
    with pytest.raises(ValueError, match="auto") as e:
        getattr(gpureduce, op)(np.ones(3), variant="shuffle")
    assert "cub" in str(e.value)
    with pytest.raises(ValueError, match="no_such"):
        getattr(gpureduce, op)(np.ones(3), variant="no_such")


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("op", OPS)
def test_plans(op, dtype):
    """The result dtype is NumPy's (bool, int64); the axis kernels read every dtype as it is, and CUB's, which
    exist for few inputs, get a bool copy: a truth cast, so 0.5 stays true (a cast to int64 would lose it)."""
    x = np.array([[0, 0.5, 2], [0, 0, 0]]).astype(dtype)
    want = np.dtype(np.bool_) if op != "count_nonzero" else np.dtype(np.int64)
    auto, _ = prepare_reduce(op, x, axis=1)
    assert DTYPE_NAMES[auto.result_dtype] == want.name
    assert auto.a.dtype == x.dtype  # read as it is
    cub, _ = prepare_reduce(op, x, axis=1, variant="cub")
    assert DTYPE_NAMES[cub.result_dtype] == want.name
    assert cub.a.dtype in (x.dtype, np.dtype(np.bool_))  # as it is where CUB's kernels exist, else bool
    if x.dtype.kind in "fc":
        assert cub.a.dtype == np.bool_
    assert cub.op == auto.op == _core.op_names.index(op)


def test_zero_d_arrays_take_an_int_axis_as_numpy():
    for op in OPS:
        plan, _ = prepare_reduce(op, np.array(3.0), axis=0)
        assert plan.shape == ()
        plan, _ = prepare_reduce(op, np.array(3.0), axis=-1, keepdims=True)
        assert plan.shape == ()
