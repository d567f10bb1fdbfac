"""var, std, nanvar and nanstd on the GPU against NumPy: every dtype (complex ones give real results), shapes of
up to 3 dimensions with zero-size sides, axes, keepdims, where=, ddof, dtype=, out=, host and CuPy inputs, auto and
cub, NaN densities up to all-NaN slices, as hypothesis properties; then accuracy with a large common offset (where
the two-moment formula loses every digit), inf and NaN, and host arrays through the pipeline.  Values are compared
with a float64 (complex128) reference computed by NumPy; gpureduce computes in float64 for every input, so the
tolerance is a few roundings of the result dtype plus the parallel update's own float64 error (reference())."""
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpureduce
from conftest import at_home, count_example, placement

pytestmark = pytest.mark.gpu

EXAMPLES = int(os.environ.get("GR_HYPOTHESIS_EXAMPLES", "200"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = ["bool", "int8", "int32", "uint64", "float16", "float32", "float64", "complex64", "complex128"]
VARIANTS = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]


def reference(op, x, **kwargs):
    """(NumPy's result dtype, its var/std computed in float64 (complex128) on the same values, the relative
    error gpureduce's shifted sums may add in float64: 4 log2(n) eps (1 + z^2), z the largest distance of an
    element (a possible pivot) from the mean in standard deviations; a common offset does not enter it)."""
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    plain = op[3:] if op.startswith("nan") and x.dtype.kind not in "fc" else op  # NumPy's nanvar(ints) is var
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, op)(x, **kwargs)
        exact = getattr(np, plain)(x.astype(wide), **{k: v for k, v in kwargs.items() if k != "dtype"})
        xw = x.astype(wide).ravel()
        xw = xw[~np.isnan(xw)]  # (the nan forms' NaNs take no part; a NaN makes var's reference NaN anyway)
        spread = float(np.var(xw)) if xw.size else 0.0
        z2 = float(np.max(np.abs(xw - np.mean(xw)) ** 2)) / spread if spread > 0 else 0.0
    slack = 4 * np.log2(max(x.size, 2)) * float(np.finfo(np.float64).eps) * (1 + z2)
    return np.asarray(want).dtype, np.asarray(exact), slack


def check(got, dtype, exact, slack, rounding=8):
    """Equal NaN and inf places; elsewhere within `rounding` roundings of the result dtype plus `slack`."""
    got = np.asarray(got.get() if hasattr(got, "get") else got)
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == exact.shape, (got.shape, exact.shape)
    finite = np.isfinite(exact)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    np.testing.assert_array_equal(got[~finite & ~np.isnan(exact)], exact[~finite & ~np.isnan(exact)])
    err = np.abs(got[finite].astype(np.float64) - exact[finite])
    bound = (rounding * float(np.finfo(dtype).eps) + slack) * np.abs(exact[finite])
    assert np.all(err <= bound + 4 * float(np.finfo(dtype).smallest_subnormal)), \
        f"worst relative error {np.max(err / np.maximum(np.abs(exact[finite]), 1e-300))}, slack {slack:.3g}"


@st.composite
def cases(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.one_of(st.integers(0, 6), st.sampled_from([33, 257, 1025])),
                                min_size=ndim, max_size=ndim)))
    if int(np.prod(shape)) > 20000:
        shape = tuple(min(s, 6) for s in shape)
    kwargs = {"axis": draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None))),
              "keepdims": draw(st.booleans()), "ddof": draw(st.sampled_from([0, 1, 2, 0.5]))}
    dtype = draw(st.sampled_from(DTYPES))
    if draw(st.booleans()) and np.dtype(dtype).kind == "f" and dtype != "float64":
        kwargs["dtype"] = np.float64
    return dict(op=draw(st.sampled_from(["var", "std", "nanvar", "nanstd"])), dtype=dtype, shape=shape, kwargs=kwargs,
                where=draw(st.booleans()), offset=draw(st.sampled_from([0.0, 100.0])),
                nans=draw(st.sampled_from([0.0, 0.3, 1.0])), **placement(draw, VARIANTS))


@PROPERTY
@given(cases())
def test_matches_numpy(c):
    rng = np.random.default_rng(c["seed"])
    dtype = np.dtype(c["dtype"])
    n = int(np.prod(c["shape"]))
    if dtype.kind in "biu":
        x = rng.integers(0, 2 if dtype.kind == "b" else 100, n).astype(dtype)
    else:
        x = c["offset"] + rng.standard_normal(n)
        if dtype.kind == "c":
            x = x + 1j * rng.standard_normal(n)
        x[rng.random(n) < c["nans"]] = np.nan  # var and std give NaN there, the nan forms skip them
        x = x.astype(dtype)
    x = x.reshape(c["shape"])
    kwargs = dict(c["kwargs"])
    if c["where"]:
        kwargs["where"] = rng.random(x.shape) < 0.8
    want_dtype, exact, slack = reference(c["op"], x, **kwargs)
    a = at_home(c["home"], x, kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = getattr(gpureduce, c["op"])(a, variant=c["variant"], **kwargs)
    check(got, want_dtype, exact, slack)
    count_example()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [2, 33, 4097, 2**20 + 3, 2**24 + 1])
def test_a_large_common_offset_keeps_its_digits(dtype, n, variant, rng):
    """1e4 + N(0, 1) in float32 and 1e8 + N(0, 1) in float64: the two-moment formula sum(x^2)/n - mean^2 keeps
    no digit of the variance there (eps * mean^2 / var: 6 in float32, 1.1 in float64); the shifted sums keep
    all of them but a few roundings (reference()'s bound, which the offset does not enter).  The reference is
    NumPy's of x - x[0]: the elements lie within a factor 2 of each other, so that shift is exact (Sterbenz), and
    NumPy's own float64 mean of x errs by half an ulp of 1e8, 4e-13 of a variance of 2 elements."""
    offset = 1e4 if dtype == "float32" else 1e8
    x = (offset + rng.standard_normal(n)).astype(dtype)
    rows = x[: n - n % 3].reshape(3, -1) if n >= 3 else x.reshape(1, -1)
    for op in ("var", "std", "nanvar", "nanstd"):
        want_dtype, _, slack = reference(op, x, ddof=1)
        exact = reference(op, x - x[0], ddof=1)[1]
        assert slack < 1e-11  # what is checked is far from "no digit"
        check(getattr(gpureduce, op)(x, ddof=1, variant=variant), want_dtype, exact, slack)
        want_dtype, _, slack = reference(op, rows, axis=1)
        exact = reference(op, rows - rows[:, :1], axis=1)[1]
        check(getattr(gpureduce, op)(rows, axis=1, variant=variant), want_dtype, exact, slack)


def test_inf_and_nan_give_nan_as_numpy():
    for x in (np.array([1.0, np.inf, 2.0]), np.array([np.inf, np.inf]), np.array([1.0, np.nan]),
              np.array([1 + 1j, complex(np.inf, 0)])):
        for op in ("var", "std"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = getattr(np, op)(x)
            got = getattr(gpureduce, op)(x)
            assert np.isnan(got) and np.isnan(want), (op, x, got, want)


@pytest.mark.parametrize("op", ["var", "std", "nanvar"])
@pytest.mark.parametrize("shape, axis", [((2**23 + 5,), None), ((3, 2**21 + 7), 1), ((2**20 + 3, 7), 0)])
def test_host_arrays_through_the_pipeline(op, shape, axis, rng):
    x = (3.0 + rng.standard_normal(shape)).astype(np.float32)
    want_dtype, exact, slack = reference(op, x, axis=axis)
    check(getattr(gpureduce, op)(x, axis=axis), want_dtype, exact, slack)


def test_nan_forms_skip_nan_and_give_nan_where_numpy_does():
    """nanvar/nanstd: NaN skipped; an inf gives NaN; a slice with no more than ddof numbers gives NaN (var gives inf
    there when its sum of squares is not 0), with NumPy's warning "Degrees of freedom <= 0 for slice."."""
    cases = [(np.array([1.0, np.nan, 3.0]), {}), (np.array([np.nan, np.nan]), {}), (np.array([1.0, np.inf]), {}),
             (np.array([1.0, 2.0, np.nan]), {"ddof": 2}), (np.array([1.0, 2.0, 4.0]), {"ddof": 5}),
             (np.array([[np.nan, 1.0, 2.0], [np.nan, np.nan, 5.0]]), {"axis": 1, "ddof": 1}),
             (np.array([complex(1, np.nan), 2 + 1j, 3 - 1j]), {}), (np.zeros((0, 3)), {"axis": 0})]
    for x, kwargs in cases:
        for op in ("nanvar", "nanstd"):
            with warnings.catch_warnings(record=True) as numpy_warned:
                warnings.simplefilter("always")
                want = getattr(np, op)(x, **kwargs)
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                got = getattr(gpureduce, op)(x, **kwargs)
            np.testing.assert_allclose(got, want, rtol=1e-14, equal_nan=True, err_msg=f"{op} {x} {kwargs}")
            dof = [str(w.message) for w in numpy_warned if "Degrees of freedom" in str(w.message)]
            ours = [str(w.message) for w in warned if "Degrees of freedom" in str(w.message)]
            assert ours == dof[:1], (op, x, kwargs)
