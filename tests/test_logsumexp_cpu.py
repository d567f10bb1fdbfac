"""logsumexp and logcumsumexp without a GPU: SciPy's and PyTorch's signatures, the dtypes they give, and the
errors raised before any device work."""
import inspect

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._plan import prepare_reduce, prepare_scan


def test_signatures():
    assert list(inspect.signature(gpureduce.logsumexp).parameters) == ["a", "axis", "b", "keepdims", "return_sign",
                                                                      "variant"]
    assert list(inspect.signature(gpureduce.logcumsumexp).parameters) == ["a", "axis", "out", "exclusive", "variant"]


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
    with pytest.raises(TypeError, match="weights are not supported"):
        gpureduce.logsumexp(np.ones(3), b=np.ones(3))
    for keyword in ("dtype", "initial", "where"):
        with pytest.raises(TypeError, match=keyword):
            gpureduce.reduce("logsumexp", np.ones(3), **{keyword: np.ones(3, bool) if keyword == "where" else 1})
    with pytest.raises(ValueError, match="does not scan logsumexp"):
        gpureduce.logcumsumexp(np.ones(3), variant="decoupled_lookback")
    with pytest.raises(np.exceptions.AxisError):
        gpureduce.logsumexp(np.ones((2, 3)), axis=2)
