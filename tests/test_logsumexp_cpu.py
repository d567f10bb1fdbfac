"""logsumexp and logcumsumexp without a GPU: SciPy's and PyTorch's signatures, the dtypes they give, and the
errors raised before any device work."""
import inspect

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.plan import prepare_reduce, prepare_scan


def test_signatures():
    assert list(inspect.signature(gpureduce.logsumexp).parameters) == ["a", "axis", "b", "keepdims", "return_sign",
                                                                      "variant", "stream"]
    assert list(inspect.signature(gpureduce.logcumsumexp).parameters) == ["a", "axis", "out", "exclusive", "variant",
                                                                         "stream"]


@pytest.mark.parametrize("dtype, want", [("float16", "float16"), ("float32", "float32"), ("float64", "float64"),
                                         ("int8", "float64"), ("uint64", "float64"), ("bool", "float64")])
def test_result_dtypes_are_scipys(dtype, want):
    x = np.ones((2, 3), dtype)
    code = _core.dtype_names.index(want)
    assert prepare_reduce("logsumexp", x, axis=1)[0].result_dtype == code
    assert prepare_scan("logsumexp", x, axis=1)[0].result_dtype == code


def test_errors_before_any_device_work():
    with pytest.raises(TypeError, match="logsumexp has no kernel"):
        gpureduce.logsumexp(np.ones(3, np.complex128))
    with pytest.raises(TypeError, match="logsumexp has no kernel"):
        gpureduce.logcumsumexp(np.ones(3, np.complex64))
    with pytest.raises(TypeError, match="complex"):
        gpureduce.logsumexp(np.ones(3), b=np.ones(3, np.complex64))
    with pytest.raises(ValueError, match="could not be broadcast together with shapes"):
        gpureduce.logsumexp(np.ones(3), b=np.ones(4))
    with pytest.raises(TypeError, match="variant must be a str"):
        gpureduce.logsumexp(np.ones(3), b=np.ones(3), variant=1)
    for keyword in ("dtype", "initial", "where"):
        with pytest.raises(TypeError, match=keyword):
            gpureduce.reduce("logsumexp", np.ones(3), **{keyword: np.ones(3, bool) if keyword == "where" else 1})
    with pytest.raises(ValueError, match="does not scan logsumexp"):
        gpureduce.logcumsumexp(np.ones(3), variant="decoupled_lookback")
    with pytest.raises(np.exceptions.AxisError):
        gpureduce.logsumexp(np.ones((2, 3)), axis=2)


@pytest.mark.parametrize("a_dtype, b, want", [("float32", np.ones(3, np.float32), "float32"),
                                              ("float32", np.ones(3), "float64"), ("float16", 2.0, "float16"),
                                              ("int32", np.ones(3, np.float32), "float64"), ("bool", 1, "float64"),
                                              ("float64", np.ones(3, np.int8), "float64")])
def test_weights_give_scipys_dtype_and_ride_in_the_where_place(a_dtype, b, want):
    """SciPy's dtype with b: the common one of a and b, at least floating (a Python number does not widen a);
    b broadcast with a; what the weighted reduction gives as the plan's parameter (WEIGHTED_RESULTS)."""
    from gpureduce._planning.plan import WEIGHTED_RESULTS
    plan = prepare_reduce("logsumexp", np.ones((2, 3), a_dtype), axis=1, weights=b, weighted_result="sign")[0]
    assert _core.dtype_names[plan.result_dtype] == want
    assert plan.a.dtype == want and plan.second.dtype == want and plan.second.shape == (2, 3)
    assert np.frombuffer(plan.parameter, want)[0] == WEIGHTED_RESULTS["sign"]


def test_weights_broadcast_the_input_too():
    plan = prepare_reduce("logsumexp", np.ones(3), axis=0, weights=np.ones((4, 3)))[0]
    assert plan.a.shape == (4, 3) and plan.a.strides == (0, 1) and plan.shape == (3,)


@pytest.mark.parametrize("shape, axis, keepdims, want_shape", [((0,), None, False, ()), ((2, 0), 1, False, (2,)),
                                                               ((2, 0), 1, True, (2, 1)), ((0, 3), 0, False, (3,))])
def test_weighted_sign_of_empty_slices_is_scipys(monkeypatch, shape, axis, keepdims, want_shape):
    """SciPy gives the sign -1 for an empty slice (the kernel's would be 0): no sign reduction runs then, and the
    sign has the result's shape and dtype.  The runner is replaced by one that fills the result with -inf."""
    ran = []

    def fake_run(plan):
        ran.append(plan.parameter)
        return np.full(plan.shape, -np.inf, np.dtype(_core.dtype_names[plan.result_dtype]))[()]

    monkeypatch.setattr(_core, "run", fake_run)
    res, sign = gpureduce.logsumexp(np.zeros(shape, np.float32), axis=axis, b=np.ones(shape, np.float32),
                                    keepdims=keepdims, return_sign=True)
    assert np.shape(sign) == np.shape(res) == want_shape
    assert np.asarray(sign).dtype == np.float32 and np.all(np.asarray(sign) == -1.0)
    assert len(ran) == 1  # log|sum| only
