"""ndarray subclasses as inputs (issue 36), checked without a GPU.

The old intake read any ndarray subclass as its data: ``gpureduce.sum(np.ma.array([1, 2, 3], mask=[0, 1, 0]))``
gave 6 where NumPy gives 4 (the mask dropped, by every operator alike), and a numpy.matrix or any other subclass was
answered as a plain array where NumPy answers by the subclass's rules.  gpureduce/_planning/subclasses.py now answers a
masked array as numpy.ma does, reads a numpy.memmap as its data and refuses every other subclass.

* The refusals, each a TypeError raised before any device work (so they pass on a machine without a GPU, where
  device work raises gpureduce.CudaError): numpy.matrix and a user's subclass with every public reduction and
  scan, naming the class and what to pass instead (np.asarray(a)); masked arrays with what numpy.ma does not
  define or define simply (the nan-functions, count_nonzero, logsumexp, vector_norm, cummax, cummin and the other
  scans, exclusive scans, where=, initial=, an out= that is a MaskedArray, out= for min, max, ptp, mean, var and
  std), naming numpy.ma.MaskedArray, the function and what to pass instead (np.ma.filled(a, value) or
  a.compressed()); var and std in a dtype that is not floating, refused as for a plain array.
* numpy.ma's answers with NumPy standing in for the kernels: gpureduce/_planning/subclasses.py given a reduce and a scan
  that are NumPy's functions of plain arrays (the kernels' contract), against NumPy called on the masked array, for
  every operator, axis, keepdims, ddof, dtype and mask kind.  tests/test_subclasses_gpu.py checks the same with the
  kernels.
"""
import re
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import (MASK_KINDS, assert_same_answer, masked_input, masked_tolerance, numpy_ma_answer,
                      reduction_data)
from gpureduce import _registry
from gpureduce._planning import calls, subclasses as _subclasses
from gpureduce._planning.numpy_rules import NoValue

# every public reduction and scan of one array (dot and vdot read two: the intake refuses their subclasses)
REDUCTIONS = [op.name for op in _registry.OPERATORS if op.operands != "TWO"]
SCANS = sorted(_registry.SCAN_FUNCTIONS)
MASKED_REDUCTIONS = list(_subclasses.MASKED_REDUCTIONS)
MASKED_SCANS = ["cumsum", "cumprod"]
REFUSED_MASKED = [name for name in REDUCTIONS + SCANS if name not in MASKED_REDUCTIONS + MASKED_SCANS]


class Meters(np.ndarray):
    """A user's subclass, as a units library makes one."""


def call(name, a, **kw):
    return getattr(gpureduce, name)(a, **kw)


def refused(cls_name, function):
    """The start of the refusal of an input of class `cls_name` by gpureduce.`function`."""
    return re.escape(f"gpureduce.{function} does not take a {cls_name}")


# ---------------------------------------------------------------- other subclasses: refused

@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("name", REDUCTIONS + SCANS)
def test_a_matrix_is_refused_naming_numpy_matrix(name):
    with pytest.raises(TypeError, match=refused("numpy.matrix", name)) as error:
        call(name, np.matrix([[1.0, 2.0], [3.0, 4.0]]))
    message = str(error.value)
    assert "keeps its results 2-d" in message and "np.asarray(a)" in message


@pytest.mark.parametrize("name", REDUCTIONS + SCANS)
def test_a_user_subclass_is_refused_naming_its_module(name):
    a = np.arange(6.0).reshape(2, 3).view(Meters)
    with pytest.raises(TypeError, match=refused(f"{Meters.__module__}.Meters", name)) as error:
        call(name, a)
    assert "subclass" in str(error.value) and "np.asarray(a)" in str(error.value)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("entry", ["reduce", "scan"])
def test_the_generic_entries_refuse_too(entry):
    with pytest.raises(TypeError, match=refused("numpy.matrix", "sum" if entry == "reduce" else "cumsum")):
        getattr(gpureduce, entry)("sum", np.matrix([[1, 2]]))


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_subclasses_of_masked_arrays_and_the_masked_constant_are_refused():
    class Flagged(np.ma.MaskedArray):
        pass

    with pytest.raises(TypeError, match=refused(f"{Flagged.__module__}.{Flagged.__qualname__}", "sum")):
        gpureduce.sum(Flagged([1, 2, 3], mask=[0, 1, 0]))
    with pytest.raises(TypeError, match=refused("numpy.ma.core.MaskedConstant", "max")):  # numpy.ma.masked
        gpureduce.max(np.ma.masked)
    with pytest.raises(TypeError, match=refused("numpy.ma.MaskedArray of numpy.matrix", "mean")):
        gpureduce.mean(np.ma.array(np.matrix([[1.0, 2.0]]), mask=[[0, 1]]))


# ---------------------------------------------------------------- masked arrays: what numpy.ma does not define

def masked():
    return np.ma.array(np.arange(6.0).reshape(2, 3), mask=[[0, 1, 0], [0, 0, 1]])


def refused_masked(function):
    return refused("numpy.ma.MaskedArray", function)


def assert_says_what_to_pass(error):
    assert "np.ma.filled(a, value)" in str(error.value) and "a.compressed()" in str(error.value)


@pytest.mark.parametrize("name", REFUSED_MASKED)
def test_masked_arrays_are_refused_where_numpy_ma_has_no_simple_answer(name):
    with pytest.raises(TypeError, match=refused_masked(name)) as error:
        call(name, masked())
    assert_says_what_to_pass(error)


def test_the_refused_masked_functions_are_the_expected_ones():
    assert sorted(REFUSED_MASKED) == sorted(
        ["count_nonzero", "nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin", "nanargmax", "nanvar",
         "nanstd", "logsumexp", "vector_norm", "cummax", "cummin", "nancumsum", "nancumprod", "logcumsumexp"])


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean", "any", "all", "var", "std"])
def test_where_is_refused_with_a_masked_array_as_numpy_refuses_it(name):
    where = np.array([True, False, True])
    with pytest.raises(TypeError):
        getattr(np, name)(masked(), where=where)  # MaskedArray.<name>() got an unexpected keyword argument
    with pytest.raises(TypeError, match=refused_masked(name) + " with where=") as error:
        call(name, masked(), where=where)
    assert_says_what_to_pass(error)
    assert "~np.ma.getmaskarray(a)" in str(error.value)


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max"])
def test_initial_is_refused_with_a_masked_array_as_numpy_refuses_it(name):
    with pytest.raises(TypeError):
        getattr(np, name)(masked(), initial=1.0)
    with pytest.raises(TypeError, match=refused_masked(name) + " with initial=") as error:
        call(name, masked(), initial=1.0)
    assert_says_what_to_pass(error)


@pytest.mark.parametrize("name", ["sum", "prod", "argmin", "argmax", "any", "all", "cumsum", "cumprod"])
def test_a_masked_out_is_refused(name):
    if name.startswith("cum"):
        kw = dict(out=np.ma.zeros(6))
    else:
        kw = dict(axis=0, out=np.ma.zeros(3, dtype=np.int64 if name.startswith("arg") else np.float64))
    with pytest.raises(TypeError, match=refused_masked(name) + " and out= a MaskedArray") as error:
        call(name, masked(), **kw)
    assert_says_what_to_pass(error)


@pytest.mark.parametrize("name", ["min", "max", "ptp", "mean", "var", "std"])
def test_out_is_refused_where_numpy_ma_writes_it_its_own_way(name):
    with pytest.raises(TypeError, match=refused_masked(name) + " and out=") as error:
        call(name, masked(), axis=0, out=np.zeros(3))
    assert_says_what_to_pass(error)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_exclusive_scans_of_masked_arrays_are_refused(name):
    with pytest.raises(TypeError, match=refused_masked(name)) as error:
        call(name, masked(), exclusive=True)
    assert "exclusive" in str(error.value)
    assert_says_what_to_pass(error)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.complex128])
@pytest.mark.parametrize("mask", [np.ma.nomask, [[0, 1, 0], [0, 0, 1]]])
@pytest.mark.parametrize("name", ["var", "std"])
def test_a_variance_in_a_dtype_not_floating_is_refused_as_for_plain_arrays(name, mask, dtype):
    """numpy.ma's masked var takes the deviations from a mean summed in `dtype` (truncated for integers)."""
    with pytest.raises(TypeError, match=f"{name}\\(\\) with dtype=.*floating dtype"):
        call(name, np.ma.array(np.arange(6.0).reshape(2, 3), mask=mask), dtype=dtype)


@pytest.mark.parametrize("name, kw", [("min", dict(dtype=np.float32)), ("argmax", dict(dtype=np.float32)),
                                      ("sum", dict(ddof=1)), ("any", dict(ord=2))])
def test_keywords_an_operator_lacks_are_refused_for_masked_arrays_as_for_plain_ones(name, kw):
    with pytest.raises(TypeError, match=f"{name}\\(\\) got an unexpected keyword argument"):
        gpureduce.reduce(name, masked(), **kw)


def test_plain_arrays_and_non_arrays_never_reach_the_subclass_module(monkeypatch):
    def boom(*args):
        raise AssertionError("a plain input reached gpureduce/_planning/subclasses.py")

    monkeypatch.setattr(calls, "reduce_subclass", boom)
    monkeypatch.setattr(calls, "scan_subclass", boom)
    for a in (np.ones(3), [1.0, 2.0], np.float64(2.0)):
        for function in (gpureduce.sum, gpureduce.cumsum):
            try:
                function(a)
            except gpureduce.CudaError:  # no GPU here: the plain path ran
                pass


# ---------------------------------------------------------------- numpy.ma's answers, NumPy standing in for the kernels

def numpy_reduce(op, a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=True, *,
                 variant="auto", ddof=None, ord=None):
    """reduce(op, a, ...) of a plain array by NumPy's functions: the contract gpureduce's kernels keep."""
    assert type(a) is np.ndarray or isinstance(a, np.generic), f"{type(a)} reached the kernels"
    assert type(where) is np.ndarray or where is True or isinstance(where, np.bool_), f"where= {type(where)}"
    kw = dict(axis=axis, out=out, keepdims=keepdims)
    if op not in ("argmin", "argmax"):
        if where is not True:
            kw["where"] = where
        if op in ("sum", "prod", "mean", "var", "std"):
            kw["dtype"] = dtype
        if initial is not NoValue:
            kw["initial"] = initial
        if ddof is not None:
            kw["ddof"] = ddof
    return getattr(np, op)(a, **kw)


def numpy_scan(op, a, axis=None, dtype=None, out=None, *, exclusive=False, variant="auto"):
    assert type(a) is np.ndarray, f"{type(a)} reached the kernels"
    return {"sum": np.cumsum, "prod": np.cumprod}[op](a, axis=axis, dtype=dtype, out=out)


def numpy_kernels(name, x, **kw):
    """gpureduce.<name>(x, **kw) through gpureduce/_planning/subclasses.py with NumPy as the kernels."""
    if name.startswith("cum"):
        return _subclasses.scan_subclass(numpy_scan, name[3:], x, kw.get("axis"), kw.get("dtype"), kw.get("out"),
                                         False, "auto")
    return _subclasses.reduce_subclass(numpy_reduce, name, x, kw.get("axis"), kw.get("dtype"), kw.get("out"),
                                       kw.get("keepdims", False), NoValue, True, "auto", kw.get("ddof"), None)


def same_or_same_error(name, x, case, rtol=None, **kw):
    """numpy_kernels(name, x, **kw) is NumPy's answer for the masked array `x`, or raises the type NumPy raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            want = numpy_ma_answer(name, x, **kw)
        except (TypeError, ValueError) as error:
            with pytest.raises(type(error)):
                numpy_kernels(name, x, **kw)
            return
        got = numpy_kernels(name, x, **kw)
    assert_same_answer(got, want, *masked_tolerance(name, x, rtol), case)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool", "float16", "complex64", "uint8"])
@pytest.mark.parametrize("name", MASKED_REDUCTIONS + MASKED_SCANS)
def test_masked_answers_are_numpy_ma_s_with_numpy_as_the_kernels(name, dtype, rng):
    rtol = 1e-2 if dtype == "float16" else None  # NumPy sums float16 in float16, in another order with where=
    for shape in [(6, 7), (5,), (0, 3), ()]:
        data = reduction_data(rng, dtype, shape, "prod" if "prod" in name else name)
        if np.dtype(dtype).kind == "f" and data.ndim and data.size:  # (NumPy's var of a 0-d inf raises)
            data.flat[rng.integers(data.size)] = rng.choice([np.nan, np.inf, -np.inf, 1.0])  # masked or not
        for kind in MASK_KINDS:
            x = masked_input(data, kind, rng)
            for axis in [None, 0, 1, -1][:len(shape) + 1]:
                for keepdims in ([False] if name.startswith("cum") else [False, True]):
                    for ddof in ([0, 1, 5, 6] if name in ("var", "std") else [None]):
                        kw = dict(axis=axis) if name.startswith("cum") else dict(axis=axis, keepdims=keepdims)
                        if ddof is not None:
                            kw["ddof"] = ddof
                        same_or_same_error(name, x, f"{name} {dtype} {shape} {kind} {kw}", rtol, **kw)


@pytest.mark.parametrize("name, dtypes", [("sum", [np.float32, np.int64, np.float64]), ("prod", [np.float64]),
                                          ("mean", [np.float32, np.float64, np.int32]),
                                          ("var", [np.float32, np.float64]), ("std", [np.float64]),
                                          ("cumsum", [np.float64, np.int64]), ("cumprod", [np.float64])])
def test_masked_answers_with_dtype_are_numpy_ma_s_with_numpy_as_the_kernels(name, dtypes, rng):
    for data_dtype in ["float32", "int32", "bool"]:
        x = masked_input(reduction_data(rng, data_dtype, (6, 7), name), "masked_row", rng)
        for dtype in dtypes:
            for axis in [None, 0, 1]:
                same_or_same_error(name, x, f"{name} {data_dtype} dtype={dtype} axis={axis}", axis=axis,
                                   dtype=dtype)


@pytest.mark.parametrize("name", ["sum", "prod", "any", "all", "argmin", "argmax", "cumsum", "cumprod"])
def test_a_plain_out_gets_numpy_ma_s_values_with_numpy_as_the_kernels(name, rng):
    x = masked_input(reduction_data(rng, "float64", (6, 7), name), "masked_row", rng)
    axis = None if name.startswith("cum") else 1
    shape = (42,) if name.startswith("cum") else (6,)
    dtype = np.int64 if name.startswith("arg") else np.float64
    want_out, got_out = np.full(shape, -7, dtype), np.full(shape, -7, dtype)
    want = getattr(np, name)(x, axis=axis, out=want_out)
    got = numpy_kernels(name, x, axis=axis, out=got_out)
    assert want is want_out and got is got_out
    np.testing.assert_allclose(got_out, want_out, rtol=1e-12)


def test_the_issue_s_case_with_numpy_as_the_kernels():
    got = numpy_kernels("sum", np.ma.array([1, 2, 3], mask=[0, 1, 0]))
    assert got == 4 and type(got) is np.int64


def test_a_memmap_is_read_as_its_data(tmp_path):
    mm = np.memmap(tmp_path / "data.bin", dtype=np.float32, mode="w+", shape=(3, 4))
    mm[:] = np.arange(12).reshape(3, 4)
    got = _subclasses.reduce_subclass(numpy_reduce, "sum", mm, 0, None, None, False, NoValue, True, "auto", None,
                                      None)
    want = np.sum(mm, axis=0)
    assert type(got) is type(want) is np.ndarray
    np.testing.assert_array_equal(got, want)
    got = _subclasses.scan_subclass(numpy_scan, "sum", mm, None, None, None, False, "auto")
    assert type(got) is type(np.cumsum(mm)) is np.ndarray
