"""dot and vdot without a GPU: NumPy's signatures and result dtypes, how the second operand and vdot's
conjugation reach the runner, and the errors raised before any device work."""
import inspect

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce._planning.plan import prepare_dot, prepare_reduce

DTYPES = list(_core.dtype_names)


def test_signatures_and_namespaces():
    assert list(inspect.signature(gpureduce.dot).parameters) == ["a", "b", "out", "variant", "stream"]
    assert list(inspect.signature(gpureduce.vdot).parameters) == ["a", "b", "variant", "stream"]
    assert gpureduce.linalg.dot is gpureduce.dot and gpureduce.linalg.vdot is gpureduce.vdot


@pytest.mark.parametrize("a_dtype", DTYPES)
@pytest.mark.parametrize("b_dtype", ["bool", "int8", "uint64", "float16", "float32", "complex64"])
def test_result_dtype_is_numpys_common_dtype(a_dtype, b_dtype):
    a, b = np.ones(3, a_dtype), np.ones(3, b_dtype)
    try:
        np.result_type(a, b)
    except TypeError as e:  # no common dtype (bfloat16 with uint64 or float16: ml_dtypes' rule): the same error
        with pytest.raises(type(e)):
            prepare_dot(a, b, conj=False, flatten=False)
        return
    want = np.dot(a, b).dtype
    plan = prepare_dot(a, b, conj=False, flatten=False)[0]
    assert _core.dtype_names[plan.result_dtype] == want.name
    assert plan.a.dtype == want and plan.second.dtype == want  # both operands cast to it, b the second operand
    assert np.vdot(a, b).dtype == want


def test_the_second_operand_keeps_its_strides():
    a, b = np.arange(10.0), np.arange(30.0)[::-3]
    plan = prepare_dot(a, b, conj=False, flatten=False)[0]
    c0, c1, is0, is1, ir, os0, os1, orr, ms0, ms1, mr, R = plan.layout
    assert (R, ir, mr) == (10, 1, -3)


def test_vdot_conjugates_complex_inputs_only():
    """vdot's conjugation is the plan's parameter (reducers.cuh: reducer_choice<GR_OP_DOT>)."""
    z = np.ones(4, np.complex64)
    assert prepare_dot(z, z, conj=True, flatten=True)[0].parameter == np.ones((), np.complex64).tobytes()
    assert prepare_dot(z, z, conj=False, flatten=False)[0].parameter is None
    assert prepare_dot(np.ones(4), np.ones(4), conj=True, flatten=True)[0].parameter is None


def test_vdot_reads_any_shapes_of_one_size_in_c_order():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2).T  # b not C-contiguous: copied
    plan = prepare_dot(a, b, conj=True, flatten=True)[0]
    assert plan.layout[-1] == 6 and plan.a.shape == (6,) and plan.second.shape == (6,)
    assert np.asarray(plan.second.array).tolist() == b.ravel().tolist()


@pytest.mark.parametrize("call, exc, words", [
    (lambda: gpureduce.dot(np.ones(3), np.ones(4)), ValueError, "shapes (3,) and (4,) not aligned: 3 (dim 0) != 4"),
    (lambda: gpureduce.vdot(np.ones(3), np.ones(4)), ValueError, "cannot reshape array of size 4 into shape (3,)"),
    (lambda: gpureduce.dot(np.ones((2, 2)), np.ones((2, 2))), ValueError, "takes two vectors"),
    (lambda: gpureduce.dot(np.ones(3), np.ones(3), out=np.zeros((), np.float32)), ValueError,
     "output array is not acceptable"),
    (lambda: gpureduce.dot(np.ones(3), np.array(["a", "b", "c"])), TypeError, "dtype"),
    (lambda: gpureduce.dot(np.ones(3), np.ones(3), variant=1), TypeError, "variant must be a str"),
    (lambda: gpureduce.dot(np.ones(3), np.ones(3), variant="shuffle"), ValueError, "variant 'shuffle' does not"),
    (lambda: gpureduce.reduce("dot", np.ones(3)), TypeError, "gpureduce.dot(a, b)"),
])
def test_errors_before_device_work(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


def test_numpy_gives_the_same_errors():
    for call in (lambda: np.dot(np.ones(3), np.ones(4)), lambda: np.vdot(np.ones(3), np.ones(4)),
                 lambda: np.dot(np.ones(3), np.ones(3), out=np.zeros((), np.float32))):
        with pytest.raises(ValueError):
            call()


def test_reduce_refuses_dot_before_planning():
    with pytest.raises(TypeError):
        prepare_reduce("dot", np.ones(3))


def test_dask_arrays_are_refused_not_computed_whole():
    da = pytest.importorskip("dask.array")
    for call in (gpureduce.dot, gpureduce.vdot):
        with pytest.raises(TypeError, match="does not take Dask arrays yet"):
            call(da.ones(4, chunks=2), np.ones(4))
