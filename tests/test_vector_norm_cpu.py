"""vector_norm without a GPU: numpy.linalg.vector_norm's signature, the dtypes it gives, how ord reaches the
kernels, and the errors raised before any device work."""
import inspect
import math

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.plan import prepare_reduce


def test_signature_and_namespaces():
    assert list(inspect.signature(gpureduce.vector_norm).parameters) == ["x", "axis", "keepdims", "ord", "variant", "stream"]
    assert gpureduce.linalg.vector_norm is gpureduce.vector_norm  # also where NumPy keeps it


@pytest.mark.parametrize("dtype, want", [("float16", "float16"), ("float32", "float32"), ("float64", "float64"),
                                         ("complex64", "float32"), ("complex128", "float64"), ("int8", "float64"),
                                         ("uint64", "float64"), ("bool", "float64")])
def test_result_dtypes_are_numpys(dtype, want):
    x = np.ones((2, 3), dtype)
    assert np.linalg.vector_norm(x).dtype == want
    assert prepare_reduce("vector_norm", x, axis=1, ord=2.0)[0].result_dtype == _core.dtype_names.index(want)


@pytest.mark.parametrize("ord", [2.0, 1.0, 0.0, 3.5, -1.0, math.inf, -math.inf])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int32"])
def test_ord_is_the_plans_parameter_in_the_result_dtype(ord, dtype):
    plan = prepare_reduce("vector_norm", np.ones((4, 5), dtype), axis=0, ord=ord)[0]
    result = np.dtype(_core.dtype_names[plan.result_dtype])
    assert np.frombuffer(plan.parameter, result)[0] == np.asarray(ord).astype(result)


def test_ord_none_is_two():
    assert prepare_reduce("vector_norm", np.ones(3), ord=None)[0].parameter == np.float64(2.0).tobytes()


def test_errors_before_any_device_work():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="Invalid norm order 'fro' for vectors"):
        gpureduce.vector_norm(x, ord="fro")
    with pytest.raises(TypeError, match="real number"):
        gpureduce.vector_norm(x, ord=1j)
    with pytest.raises(TypeError, match="'axis' must be None, an integer or a tuple of integers"):
        gpureduce.vector_norm(x, axis=[0, 1])
    with pytest.raises(np.exceptions.AxisError):
        gpureduce.vector_norm(x, axis=2)
    with pytest.raises(ValueError, match="duplicate"):
        gpureduce.vector_norm(x, axis=(0, 0))
    with pytest.raises(TypeError):
        gpureduce.vector_norm(x, 0)  # axis is keyword-only, as NumPy's
    with pytest.raises(ValueError, match="does not implement vector_norm"):
        gpureduce.vector_norm(x, variant="shuffle")
    for keyword in ("dtype", "initial", "where"):
        with pytest.raises(TypeError, match=keyword):
            gpureduce.reduce("vector_norm", x, **{keyword: np.ones(3, bool) if keyword == "where" else 1})
    with pytest.raises(TypeError, match="'ord'"):
        gpureduce.reduce("sum", x, ord=2)


@pytest.mark.parametrize("shape, axis", [((0,), None), ((2, 0), 1), ((0, 0), 1), ((2, 0, 3), (0, 1))])
def test_minus_inf_of_nothing_is_refused_as_numpy_refuses_it(shape, axis):
    x = np.zeros(shape)
    with pytest.raises(ValueError) as numpy_error:
        np.linalg.vector_norm(x, ord=-np.inf, axis=axis)
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum") as ours:
        gpureduce.vector_norm(x, ord=-np.inf, axis=axis)
    assert str(ours.value) == str(numpy_error.value)
