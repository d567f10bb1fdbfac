"""ndarray subclasses on the GPU (issue 36): numpy.ma's answers for masked arrays, a memmap's data's for memmaps.

The old code failed silently: ``gpureduce.sum(np.ma.array([1, 2, 3], mask=[0, 1, 0]))`` gave 6 where NumPy gives 4.
The intake read a masked array as its data and dropped the mask, for every operator alike (min, mean, argmax,
cumsum... of the masked elements too).  Now gpureduce/_planning/subclasses.py follows numpy.ma (MaskedArray.sum, prod, min,
max, mean, var, std, argmin, argmax, any, all, ptp, cumsum, cumprod), the masked elements skipped on the GPU.

Every supported operator, axis None, 0 and 1, keepdims, ddof 0, 1 and 6 for var and std (6: no degree of freedom
left along axis 0 of the (6, 7) inputs), dtypes float32, float64, int32, int64 and bool, and masks of some
elements, of some elements and a whole row, of every element, numpy.ma's nomask and an all-False mask array,
against NumPy called on the same masked array (np.sum(ma) calls ma.sum; ptp: np.ma.ptp, since NumPy 2's np.ptp
drops the mask): the value (float32 within rtol 1e-5), dtype, type (a NumPy scalar, numpy.ma.masked, a MaskedArray,
a plain ndarray for argmin and argmax) and mask.  Where NumPy raises, gpureduce raises the same exception type.
Larger arrays (past a block), NaN and inf in the data, dtype=, a plain out=, 0-d masked arrays, and numpy.memmap
inputs for every public reduction and scan (plain ndarrays and NumPy scalars, as NumPy answers a memmap).
"""
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import (MASK_KINDS, assert_same_answer, masked_input, masked_tolerance, numpy_ma_answer,
                      reduction_data)
from gpureduce import _registry

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
REDUCTIONS = ["sum", "prod", "min", "max", "mean", "var", "std", "argmin", "argmax", "any", "all", "ptp"]
SCANS = ["cumsum", "cumprod"]


def keywords(name, axis, keepdims, ddof):
    kw = dict(axis=axis) if name in SCANS else dict(axis=axis, keepdims=keepdims)
    if ddof is not None:
        kw["ddof"] = ddof
    return kw


# (function, axis, keepdims, ddof)
CASES = [(name, axis, keepdims, ddof)
         for name in REDUCTIONS + SCANS for axis in (None, 0, 1) for keepdims in ((False,) if name in SCANS else
                                                                                 (False, True))
         for ddof in ((0, 1, 6) if name in ("var", "std") else (None,))]
CASE_IDS = ["-".join(f"{k}={v}" if k != "name" else str(v) for k, v in
                     dict(name=name, axis=axis, keepdims=keepdims, ddof=ddof).items() if v is not None)
            for name, axis, keepdims, ddof in CASES]


def check(name, x, case, **kw):
    """gpureduce.<name>(x, **kw) is NumPy's answer for the masked array `x`, or raises the type NumPy raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's and gpureduce's warnings are not compared here
        try:
            want = numpy_ma_answer(name, x, **kw)
        except (TypeError, ValueError) as error:
            with pytest.raises(type(error)):
                getattr(gpureduce, name)(x, **kw)
            return
        got = getattr(gpureduce, name)(x, **kw)
    rtol, atol = masked_tolerance(name, x)
    assert_same_answer(got, want, rtol, atol, case)


def test_the_issue_s_case():
    got = gpureduce.sum(np.ma.array([1, 2, 3], mask=[0, 1, 0]))
    assert got == 4  # the old intake dropped the mask: 6
    assert type(got) is type(np.sum(np.ma.array([1, 2, 3], mask=[0, 1, 0]))) is np.int64


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, axis, keepdims, ddof", CASES, ids=CASE_IDS)
def test_masked_arrays_get_numpy_ma_s_answers(name, axis, keepdims, ddof, dtype, kind, rng):
    data = reduction_data(rng, dtype, (6, 7), "prod" if "prod" in name else name)
    x = masked_input(data, kind, rng)
    check(name, x, f"{name} {dtype} {kind}", **keywords(name, axis, keepdims, ddof))


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "min", "max", "argmin", "argmax", "any", "ptp",
                                  "cumsum"])
def test_masked_arrays_past_a_block(name, dtype, rng):
    data = reduction_data(rng, dtype, (257, 1025), name)
    for kind in ("partial", "masked_row"):
        x = masked_input(data, kind, rng)
        x[:, 5] = np.ma.masked  # a column with no element too
        for axis in (None, 0, 1):
            check(name, x, f"{name} {dtype} {kind} (257, 1025) axis={axis}", axis=axis)


@pytest.mark.parametrize("name", REDUCTIONS + SCANS)
def test_nan_and_inf_in_masked_arrays(name, rng):
    """numpy.ma masks a mean that is not finite, and gives such a slice of a masked array a variance of 0, unmasked
    (of a nomask array: masked); gpureduce as NumPy."""
    data = rng.standard_normal((6, 7)) * 4
    data[0, 1], data[2, 2], data[3, :] = np.nan, np.inf, -np.inf
    for kind in ("partial", "masked_row", "all_false", "nomask"):
        x = masked_input(data, kind, rng)
        for axis in (None, 0, 1):
            check(name, x, f"{name} {kind} axis={axis}", axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
@pytest.mark.parametrize("name, result_dtypes", [("sum", [np.float32, np.int64]), ("prod", [np.float64]),
                                                 ("mean", [np.float32, np.float64]), ("var", [np.float32]),
                                                 ("std", [np.float64]), ("cumsum", [np.float64, np.int64]),
                                                 ("cumprod", [np.float64])])
def test_masked_arrays_with_dtype(name, result_dtypes, dtype, rng):
    x = masked_input(reduction_data(rng, dtype, (6, 7), name), "masked_row", rng)
    for result_dtype in result_dtypes:
        for axis in (None, 0, 1):
            check(name, x, f"{name} {dtype} dtype={result_dtype} axis={axis}", axis=axis, dtype=result_dtype)


@pytest.mark.parametrize("name", ["sum", "prod", "any", "all", "argmin", "argmax", "cumsum", "cumprod"])
def test_masked_arrays_into_a_plain_out(name, rng):
    x = masked_input(reduction_data(rng, "float32", (6, 7), name), "masked_row", rng)
    axis, shape = (None, (42,)) if name in SCANS else (1, (6,))
    dtype = np.int64 if name.startswith("arg") else np.float64
    want_out, got_out = np.full(shape, -7, dtype), np.full(shape, -7, dtype)
    want = getattr(np, name)(x, axis=axis, out=want_out)
    got = getattr(gpureduce, name)(x, axis=axis, out=got_out)
    assert want is want_out and got is got_out
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-5 * np.abs(x.data).sum())


def test_a_masked_0d_array():
    for mask in (False, True):
        x = np.ma.array(2.5, mask=mask)
        for name in REDUCTIONS + SCANS:
            check(name, x, f"{name} 0-d mask={mask}")


# ---------------------------------------------------------------- numpy.memmap: its data

def memmap(tmp_path, dtype):
    mm = np.memmap(tmp_path / f"{dtype}.bin", dtype=dtype, mode="w+", shape=(5, 6))
    mm[:] = np.arange(30).reshape(5, 6) % 7 + 0.5 * (np.dtype(dtype).kind == "f")
    return mm


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("name", [op.name for op in _registry.OPERATORS if op.operands != "TWO"] +
                         sorted(_registry.SCAN_FUNCTIONS))
def test_a_memmap_is_read_as_its_data(name, dtype, tmp_path):
    """The same answer as for np.asarray(mm) (the same memory): a plain ndarray or NumPy scalar, as NumPy's answer
    for a memmap is (but for the arg functions along an axis, whose NumPy answer is an in-memory numpy.memmap, an
    artifact of ndarray.argmin's wrapping: gpureduce gives the plain ndarray of the same values)."""
    mm = memmap(tmp_path, dtype)
    plain = np.asarray(mm)
    function = getattr(gpureduce, name)
    for kw in (dict(), dict(axis=0)):
        got = function(mm, **kw)
        assert_same_answer(got, function(plain, **kw), 0.0, 0.0, f"{name} {dtype} memmap {kw}")
        assert type(got) is np.ndarray or isinstance(got, np.generic), f"{name}: a {type(got).__name__}"
        numpy_function = getattr(np, name, None)
        if numpy_function is not None and name not in ("cummax", "cummin"):
            numpy_kind = type(numpy_function(mm, **kw))
            if "arg" in name and kw:
                assert numpy_kind is np.memmap, f"NumPy's {name} of a memmap is a {numpy_kind.__name__} now"
            else:
                assert numpy_kind is type(numpy_function(plain, **kw)), f"NumPy's {name}: a {numpy_kind.__name__}"
