"""The variant "exact" of complex arrays (issue 41) on the GPU: gpureduce.sum / mean / nansum / nanmean(x,
variant="exact") of complex64 and complex128 give each part of each slice its exact real sum (over the count for a
mean) rounded once, whatever the kind, layout or batch (gpureduce/_planning/exact_complex.py: one exact reduction
of each part); nansum and nanmean drop an element where either part is NaN, as NumPy's.  The reference is
gpureduce._bounds.exact_result, which rounds each part's exact sum (math.fsum and fractions)."""
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import _torch
from gpureduce._bounds import exact_result
from gpureduce.testing import assert_matches_numpy, to_numpy
from test_exact_gpu import draw

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

COMPLEX = ["complex64", "complex128"]
OPS = ["sum", "mean", "nansum", "nanmean"]
LAYOUTS = [((1,), None), ((5000,), None), ((2**20 + 3,), None), ((7, 1000), 1), ((1000, 7), 0), ((33, 257), None),
           ((3, 40, 50), (0, 2)), ((4, 0), 1), ((0,), None)]
KINDS = ["normal", "full range", "log-uniform", "cancellation", "uniform"]


def complex_data(kind, dtype, shape, rng):
    part = np.float32 if dtype == "complex64" else np.float64
    n = int(np.prod(shape))
    x = np.empty(n, dtype)
    x.real, x.imag = draw(kind, part, n, rng), draw(KINDS[(KINDS.index(kind) + 2) % len(KINDS)], part, n, rng)
    return x.reshape(shape)


def same_bits(got, want):
    """Bit for bit in each part, any NaN for a NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    bits = np.uint32 if want.dtype == np.complex64 else np.uint64
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        g, w = np.ascontiguousarray(g), np.ascontiguousarray(w)
        nan = np.isnan(w)
        if not (np.all(np.isnan(g)[nan]) and np.array_equal(g[~nan].view(bits), w[~nan].view(bits))):
            return False
    return True


def run(op, x, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a mean of an empty slice: NumPy's warning
        return getattr(gpureduce, op)(x, variant="exact", **kwargs)


def reference(op, x, axis=None, dtype=None, where=True, initial=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return exact_result(op, x, x.dtype if dtype is None else np.dtype(dtype), axis, where, initial)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_each_part_correctly_rounded(dtype, op):
    rng = np.random.default_rng()
    for i, (shape, axis) in enumerate(LAYOUTS):
        x = complex_data(KINDS[i % len(KINDS)], dtype, shape, rng)
        if op.startswith("nan") and x.size:
            flat = x.reshape(-1)
            flat.real[rng.random(x.size) < 0.03] = np.nan
            flat.imag[rng.random(x.size) < 0.03] = np.nan
        want = reference(op, x, axis)
        for given in (x, cupy.asarray(x)):
            got = run(op, given, axis=axis)
            assert isinstance(got, (np.generic if want.ndim == 0 else np.ndarray) if given is x else cupy.ndarray)
            assert same_bits(to_numpy(got), want), f"{op} {dtype} {shape} axis={axis}"


@pytest.mark.parametrize("dtype", COMPLEX)
def test_kinds_views_and_keywords(dtype):
    """PyTorch tensors and strided views, keepdims, where=, initial= (its own parts), dtype= complex128 and out=."""
    torch = _torch()
    rng = np.random.default_rng()
    x = complex_data("log-uniform", dtype, (64, 3000), rng)
    where = rng.random(x.shape) < 0.7
    want = reference("sum", x, 1, where=where, initial=1.5 - 2.5j)
    got = run("sum", cupy.asarray(x), axis=1, where=cupy.asarray(where), initial=1.5 - 2.5j)
    assert same_bits(got.get(), want)
    tensor = torch.from_numpy(x).cuda()
    got = run("mean", tensor, axis=0, keepdims=True)
    assert isinstance(got, torch.Tensor) and got.dtype == tensor.dtype and got.shape == (1, 3000)
    assert same_bits(got.cpu().numpy()[0], reference("mean", x, 0))
    view = cupy.asarray(x)[::3, 5::7]  # strided in both axes
    assert same_bits(run("sum", view).get(), reference("sum", x[::3, 5::7]))
    wide = run("sum", cupy.asarray(x), axis=1, dtype=np.complex128)
    assert wide.dtype == np.complex128 and same_bits(wide.get(), reference("sum", x, 1, dtype=np.complex128))
    out = cupy.full(64, np.nan, dtype)
    assert run("nansum", cupy.asarray(x), axis=1, out=out) is out
    assert same_bits(out.get(), reference("nansum", x, 1))
    host_out = np.full(64, np.nan, dtype)
    assert run("sum", x, axis=1, out=host_out) is host_out and same_bits(host_out, reference("sum", x, 1))
    scalar = run("sum", x)
    assert type(scalar) is np.dtype(dtype).type and same_bits(scalar, reference("sum", x))


def test_infinities_and_nans_stay_in_their_part():
    """An infinite real part leaves the imaginary sum alone (no arithmetic of complex numbers assembles the
    result), inf + -inf in one part is NaN there only, and a NaN in either part drops the element from a nan form."""
    x = np.array([np.inf + 1j, 2 + 3j, -np.inf + 0.5j, 1 + np.nan * 1j, np.nan + 2j], np.complex64)
    got = to_numpy(run("sum", cupy.asarray(x[:3])))
    assert np.isnan(got.real) and got.imag == np.float32(4.5)
    got = to_numpy(run("sum", cupy.asarray(x[:2])))
    assert got.real == np.inf and got.imag == np.float32(4.0)
    assert same_bits(to_numpy(run("nansum", cupy.asarray(x))), reference("nansum", x))
    assert to_numpy(run("nansum", cupy.asarray(x[3:]))) == 0
    assert same_bits(to_numpy(run("nanmean", cupy.asarray(x))), np.complex64(np.nan + 1.5j))


def test_batch_invariant_and_held_to_zero_ulps():
    """A row's bits whatever the rows beside it or alone; gpureduce.testing holds exact complex sums to 0 ulps."""
    rng = np.random.default_rng()
    m = cupy.asarray(complex_data("full range", "complex64", (8, 2**18 + 1), rng))
    rows = run("sum", m, axis=1).get()
    for k in (1, 3):
        assert same_bits(run("sum", m[:k], axis=1).get(), rows[:k])
    assert same_bits(run("sum", m[5]).get(), rows[5])
    assert_matches_numpy("sum", m, variant="exact", axis=1)


def test_a_real_dtype_keeps_the_real_parts():
    """NumPy casts a complex input to a real dtype= first (ComplexWarning), keeping the real parts; a nan form drops
    an element with a NaN in either part."""
    from numpy.exceptions import ComplexWarning

    x = cupy.asarray(np.array([1 + 2j, complex(2, np.nan), 3 - 1j, complex(np.nan, 1)], np.complex64))
    with pytest.warns(ComplexWarning):
        got = to_numpy(run("nansum", x, dtype=np.float64))
    assert got.dtype == np.float64 and got == 4.0
    with pytest.warns(ComplexWarning):
        got = to_numpy(gpureduce.nancumsum(x, dtype=np.float32, variant="exact"))
    assert got.dtype == np.float32 and np.array_equal(got, [1, 1, 4, 4])
    with pytest.warns(ComplexWarning):
        got = to_numpy(gpureduce.cumsum(x, dtype=np.float32, variant="exact"))
    assert np.array_equal(got, [1, 3, 6, np.nan], equal_nan=True)


def test_what_it_refuses():
    x = cupy.ones(4, cupy.complex64)
    with pytest.raises(ValueError, match="exact"):
        gpureduce.prod(x, variant="exact")
    with pytest.raises(TypeError, match="same_kind"):
        gpureduce.sum(x, variant="exact", out=cupy.zeros((), cupy.float32))
    with pytest.raises(ValueError, match="wrong shape"):
        gpureduce.sum(cupy.ones((2, 3), cupy.complex64), axis=1, variant="exact", out=cupy.zeros(3, cupy.complex64))
