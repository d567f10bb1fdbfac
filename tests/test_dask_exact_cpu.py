"""variant="exact" of Dask arrays without a GPU (gpureduce/dask/exact.py): each chunk's partial kept exactly as
float64 terms, the combine's and the aggregate's rounding once, with gpureduce's exact sum along the last axis stood
in for by gpureduce._bounds.exact_result (the reference tests/test_exact_sum_cpu.py checks against fractions and
the GPU suite holds the kernels to).  The result must be the whole reduction's correctly rounded value, the same
bits under every chunking; tests/test_dask_gpu.py's exact test runs it on the kernels."""
import types
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import count_example
from gpureduce._bounds import correctly_rounded_cumsum, exact_result
from test_dask_cpu import NUMPY_KERNELS

da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpureduce.dask")


def _sum(x, axis=None, variant="auto", **options):
    """The exact sum of float64 rows along the last axis (what gpureduce/dask/exact.py asks), else NumPy's sum
    (auto's integer sums)."""
    if variant != "exact":
        return np.sum(x, axis=axis, **options)
    assert x.dtype == np.float64 and axis == -1 and not options
    return exact_result("sum", x, np.float64, axis)


@pytest.fixture
def exact_kernels(monkeypatch):
    monkeypatch.setattr(gd.chunks, "kernels", types.SimpleNamespace(**{**vars(NUMPY_KERNELS), "sum": _sum}))


def reference(op, x, axis=None, keepdims=False, dtype=None, initial=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = exact_result(op, x, np.dtype(dtype or x.dtype), axis, True, initial)
    if keepdims:
        want = np.expand_dims(want, tuple(range(x.ndim)) if axis is None else axis)
    return want


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and \
        np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))


def hard(dtype, n, rng, kind):
    if kind == "cancellation":
        half = rng.standard_normal((n + 1) // 2) * (1e3 if dtype == "float16" else 1e6)
        x = np.concatenate([half, -half])[:n] + rng.standard_normal(n) * 1e-6
    elif kind == "wide":
        info = np.finfo(dtype)
        exponents = rng.integers(info.minexp - info.nmant, info.maxexp - 12, n)
        x = rng.choice([-1, 1], n) * np.ldexp(rng.random(n) + 0.5, exponents)
    else:
        x = rng.standard_normal(n)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kind", ["normal", "cancellation", "wide"])
def test_any_chunking_gives_the_correctly_rounded_sum(exact_kernels, dtype, kind):
    rng = np.random.default_rng(3)
    x = hard(dtype, 600, rng, kind).reshape(20, 30)
    for op in ("sum", "mean"):
        for axis in (None, 0, 1, (0, 1)):
            want = reference(op, x, axis)
            for chunks in ((20, 30), (7, 11), (1, 30), (20, 1), (3, 4)):
                got = getattr(gd, op)(da.from_array(x, chunks=chunks), axis=axis, variant="exact").compute()
                assert same_bits(got, want), (op, dtype, kind, axis, chunks, got, want)


def test_nan_forms_keywords_and_special_values(exact_kernels):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((12, 9)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    d = da.from_array(x, chunks=(5, 4))
    for op in ("nansum", "nanmean"):
        assert same_bits(getattr(gd, op)(d, axis=1, variant="exact").compute(), reference(op, x, 1))
    assert np.isnan(gd.sum(d, variant="exact").compute())
    assert same_bits(gd.sum(d, axis=0, keepdims=True, variant="exact").compute(), reference("sum", x, 0, True))
    y = np.nan_to_num(x)
    dy = da.from_array(y, chunks=(5, 4))
    assert same_bits(gd.sum(dy, dtype=np.float64, variant="exact").compute(), reference("sum", y, dtype=np.float64))
    assert same_bits(gd.sum(dy, axis=1, initial=2.5, variant="exact").compute(), reference("sum", y, 1, initial=2.5))
    inf = np.array([np.inf, 1, 2, 3], np.float32)
    assert gd.sum(da.from_array(inf, chunks=2), variant="exact").compute() == np.inf
    both = np.array([np.inf, 1, 2, -np.inf], np.float32)
    assert np.isnan(gd.sum(da.from_array(both, chunks=2), variant="exact").compute())
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(gd.nanmean(da.from_array(np.full(4, np.nan, np.float32), chunks=2), variant="exact").compute())
    ints = np.arange(10)
    assert gd.sum(da.from_array(ints, chunks=3), variant="exact").compute() == 45  # integers: auto's kernels
    with pytest.raises(ValueError, match="sum, nansum, mean and nanmean"):
        gd.min(d, variant="exact")


def test_a_float64_chunk_beyond_float64_is_refused(exact_kernels):
    x = np.array([1.7e308, 1.7e308, -1.7e308, -1.7e308])
    with pytest.raises(OverflowError, match="beyond float64's range"):
        gd.sum(da.from_array(x, chunks=2), variant="exact").compute()
    assert gd.sum(da.from_array(x, chunks=1), variant="exact").compute() == 0.0  # chunks that fit: exactly 0


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # (a stand-in only)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_any_values_any_split(exact_kernels, data, dtype):
    """Any finite values, any 1-d chunking: the correctly rounded sum and mean of the whole."""
    bounds = {} if dtype is np.float32 else {"min_value": -1e300, "max_value": 1e300}  # no chunk's sum overflows
    values = data.draw(st.lists(st.floats(width=32 if dtype is np.float32 else 64, allow_nan=False,
                                          allow_infinity=False, **bounds), min_size=1, max_size=40), label="values")
    x = np.array(values, dtype)
    size = data.draw(st.integers(1, len(values)), label="chunk")
    d = da.from_array(x, chunks=size)
    assert same_bits(gd.sum(d, variant="exact").compute(), reference("sum", x))
    assert same_bits(gd.mean(d, variant="exact").compute(), reference("mean", x))
    count_example()


def test_complex_arrays_each_part(exact_kernels):
    """A complex Dask array: each part's exact reduction, joined with no arithmetic; a nan form drops an element
    where either part is NaN, as NumPy's; the eager reference's bits under every chunking."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((9, 14)) * 1e5 + 1j * rng.standard_normal((9, 14))).astype(np.complex64)
    x[2, 3] = complex(np.nan, 1)
    x[5, 7] = complex(np.inf, 2)
    for op in ("sum", "mean", "nansum", "nanmean"):
        for axis in (None, 0, 1):
            want = reference(op, x, axis)
            for chunks in ((9, 14), (4, 5)):
                got = getattr(gd, op)(da.from_array(x, chunks=chunks), axis=axis, variant="exact").compute()
                got, exact = np.asarray(got), np.asarray(want)
                assert got.dtype == np.complex64 and got.shape == exact.shape
                for g, w in ((got.real, exact.real), (got.imag, exact.imag)):
                    numbers = ~np.isnan(w)
                    assert np.array_equal(np.isnan(g), ~numbers) and np.array_equal(g[numbers].view(np.uint32),
                                                                                     w[numbers].view(np.uint32)), \
                        (op, axis, chunks, got, want)
    wide = gd.sum(da.from_array(x, chunks=4), axis=0, dtype=np.complex128, initial=1 - 2j, variant="exact").compute()
    want = reference("sum", x.astype(np.complex128), 0, initial=1 - 2j)
    assert wide.dtype == np.complex128 and np.array_equal(wide, want, equal_nan=True)


# ---------------------------------------------------------------- exact cumsum and nancumsum (exact_scans.py)

def _exact_scan_kernel(nan):
    """The eager exact scan along `axis` stood in for by gpureduce._bounds.correctly_rounded_cumsum of each line
    (checked against fractions in tests/test_exact_scan_cpu.py); NumPy's otherwise."""
    def scan(x, axis=None, variant="auto", **options):
        if variant != "exact":
            return (np.nancumsum if nan else np.cumsum)(x, axis=axis, **options)
        assert axis is not None and not options and x.dtype.kind == "f"
        return exact_cumsum(x, axis, nan)
    return scan


@pytest.fixture
def exact_scan_kernels(monkeypatch):
    scans = {"cumsum": _exact_scan_kernel(False), "nancumsum": _exact_scan_kernel(True)}
    monkeypatch.setattr(gd.chunks, "kernels", types.SimpleNamespace(**{**vars(NUMPY_KERNELS), "sum": _sum, **scans}))


def exact_cumsum(x, axis=None, nan=False):
    """The eager exact cumsum's bits: each line's exact prefixes rounded once (axis None: flattened in C order)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    if x.size == 0:
        return x.copy()
    return np.apply_along_axis(lambda line: correctly_rounded_cumsum(line, x.dtype, nan_form=nan), axis, x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kind", ["normal", "cancellation", "wide"])
def test_exact_cumsum_is_the_eager_ones_under_any_chunking(exact_scan_kernels, dtype, kind):
    """Each block's exact scan from its carry, the exact sum of the blocks before it kept as float64 terms and put
    before the block as elements of its dtype: the whole array's exact prefixes, whatever the chunking."""
    rng = np.random.default_rng(5)
    x = hard(dtype, 600, rng, kind).reshape(20, 30)
    for chunks in [(20, 30), (7, 11), (1, 30), (20, 1), (3, (5, 0, 25))]:
        a = da.from_array(x, chunks=chunks)
        for axis in (None, 0, 1, -1):
            got = gd.cumsum(a, axis=axis, variant="exact").compute()
            assert same_bits(got, exact_cumsum(x, axis)), (chunks, axis)


def test_exact_cumsum_specials_zeros_nan_form_dtype_and_complex(exact_scan_kernels):
    rng = np.random.default_rng(7)
    # NaN and infinities through the carry, NaN as +0.0 in the nan form
    x = rng.standard_normal(40).astype(np.float32)
    x[[5, 17]], x[30] = np.nan, np.inf
    for op, nan in (("cumsum", False), ("nancumsum", True)):
        got = getattr(gd, op)(da.from_array(x, chunks=7), variant="exact").compute()
        assert same_bits(got, exact_cumsum(x, nan=nan)), op
    y = np.array([1e30, -np.inf, 2.0, np.inf, 3.0], np.float32)
    assert same_bits(gd.cumsum(da.from_array(y, chunks=2), variant="exact").compute(), exact_cumsum(y))
    # -0.0 where every element of the prefix is -0.0, across blocks; +0.0 once any other element came
    z = np.array([-0.0] * 9 + [0.0, -0.0, -0.0], np.float64)
    assert same_bits(gd.cumsum(da.from_array(z, chunks=4), variant="exact").compute(), exact_cumsum(z))
    assert same_bits(gd.cumsum(da.from_array(z[:8], chunks=3), variant="exact").compute(), np.full(8, -0.0))
    # dtype=: the input cast first, as the eager exact scan
    w = hard("float32", 300, rng, "cancellation")
    got = gd.cumsum(da.from_array(w, chunks=40), dtype=np.float64, variant="exact").compute()
    assert same_bits(got, exact_cumsum(w.astype(np.float64)))
    # complex: each part's exact scan; nancumsum zeroes an element with a NaN part in both parts
    c = (rng.standard_normal(90) + 1j * hard("float64", 90, rng, "wide")).astype(np.complex128)
    c[[4, 50]] = np.nan + 1j, 2 + 1j * np.nan
    for op, nan in (("cumsum", False), ("nancumsum", True)):
        got = getattr(gd, op)(da.from_array(c, chunks=13), variant="exact").compute()
        src = np.where(np.isnan(c), 0, c) if nan else c
        want = exact_cumsum(src.real) + 1j * exact_cumsum(src.imag)
        assert got.dtype == np.complex128 and same_bits(got.real, exact_cumsum(src.real)) and \
            same_bits(got.imag, exact_cumsum(src.imag)), (op, want)


def test_exact_cumsum_carry_elements_sum_exactly():
    """A carry written as elements of the block's dtype (exact_scans._elements) sums exactly to its terms' sum, in
    rationals: large (many elements at the dtype's largest power of two), tiny (subnormal) and mixed terms."""
    from fractions import Fraction
    from gpureduce.dask.exact_scans import _elements

    # (the terms of a dtype's sums are multiples of its smallest subnormal: so are these)
    cases = {np.float32: [[3e38, float(np.float32(2.5e-40))], [2.0**130, 2.0**-149], [1.0 + 2.0**-40, -2.0**-60]],
             np.float16: [[65504.0 * 3, 2.0**-24], [1.0 + 2.0**-24, 0.0], [-1000.5, 3.0 * 2.0**-24]],
             np.float64: [[1e308, 1e-300], [2.0**1000, -5e-324]]}
    for dtype, rows in cases.items():
        terms = np.array(rows, np.float64)
        elements = _elements(terms, np.zeros(len(rows), bool), dtype)
        assert elements.dtype == dtype
        for t, e in zip(terms, elements):
            assert sum(map(Fraction, e.astype(np.float64).tolist())) == sum(map(Fraction, t.tolist())), (dtype, t, e)


def test_what_exact_cumsum_refuses(exact_scan_kernels, monkeypatch):
    """A float16 running sum past 65504 is carried as that many of 2^15 (the eager scan's infinities, then finite
    values again where the sum comes back); a carry beyond what a block can be given: OverflowError naming the way
    out (the eager exact scan)."""
    import gpureduce.dask.exact_scans as exact_scans

    x = np.concatenate([np.full(40, 60000.0), np.full(40, -60000.0), [3.0]]).astype(np.float16)
    got = gd.cumsum(da.from_array(x, chunks=3), variant="exact").compute()
    assert same_bits(got, exact_cumsum(x)) and got[-1] == 3 and np.isinf(got[5])
    monkeypatch.setattr(exact_scans, "_CARRY_ELEMENTS_A_CALL", 64)  # (2.4e6 / 2^15: 73 elements)
    with pytest.raises(OverflowError, match="compute the array"):
        gd.cumsum(da.from_array(x, chunks=3), variant="exact").compute()


def test_a_complex_array_with_a_real_dtype_keeps_the_real_parts(exact_scan_kernels):
    """As NumPy, which casts the elements first (ComplexWarning): the real parts' exact sum and cumsum; a nan form
    drops (zeroes) an element with a NaN in either part first."""
    from numpy.exceptions import ComplexWarning

    x = np.array([1 + 2j, complex(2, np.nan), 3 - 1j, complex(np.nan, 1), 0.25 + 0j], np.complex64)
    a = da.from_array(x, chunks=2)
    with pytest.warns(ComplexWarning):
        got = gd.nansum(a, dtype=np.float64, variant="exact").compute()
    assert np.asarray(got).dtype == np.float64 and got == 4.25
    with pytest.warns(ComplexWarning):
        got = gd.sum(a, dtype=np.float32, variant="exact").compute()
    assert np.isnan(got)
    with pytest.warns(ComplexWarning):
        got = gd.nancumsum(a, dtype=np.float32, variant="exact").compute()
    assert got.dtype == np.float32 and np.array_equal(got, [1, 1, 4, 4, 4.25])
    with pytest.warns(ComplexWarning):
        got = gd.cumsum(a, dtype=np.float32, variant="exact").compute()
    assert np.array_equal(got, [1, 3, 6, np.nan, np.nan], equal_nan=True)
