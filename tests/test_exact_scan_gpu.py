"""The scan variant "exact" (issue 41) on the GPU: gpureduce.cumsum(x, variant="exact") gives every element its
exact prefix sum rounded once (to nearest-even), the same bits under every tile boundary, axis, layout, batch and
input kind; NaN and infinities as IEEE 754 says, -0.0 where every element of the prefix is -0.0 (NumPy's cumsum of
zeros).  nancumsum takes a NaN as +0.0.  The reference is gpureduce._bounds.correctly_rounded_cumsum, checked
against Python's fractions in tests/test_exact_scan_cpu.py together with the kernels' arithmetic run on the host."""
import numpy as np
import pytest

import gpureduce
from conftest import DEVICE_LIBRARIES
from gpureduce._bounds import correctly_rounded_cumsum
from gpureduce._planning.operands import BFLOAT16
from gpureduce.testing import to_numpy
from test_exact_gpu import draw
from test_exact_sum_cpu import cases

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

# the tile is 4096 elements (float64: 2048); sizes around one, two and many tiles and the carries' 4096 tiles a step
SIZES = [1, 2, 7, 255, 256, 2047, 2048, 2049, 4095, 4096, 4097, 8193, 65537, 2**20 + 3]
KINDS = ["normal", "uniform", "log-uniform", "full range", "cancellation"]


def same_bits(got, want):
    """Indices where `got` differs from `want` (any NaN for a NaN; a zero's sign counts)."""
    got, want = to_numpy(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    g, w = got.reshape(-1), want.reshape(-1)
    nan = np.isnan(w.astype(np.float64))
    differ = np.where(nan, ~np.isnan(g.astype(np.float64)), g.view(f"u{w.itemsize}") != w.view(f"u{w.itemsize}"))
    return np.flatnonzero(differ)


def reference(x, axis=-1, exclusive=False, nan_form=False):
    """correctly_rounded_cumsum of every 1-D line of host array x along `axis`."""
    x = np.moveaxis(np.asarray(x), axis, -1)
    out = np.empty(x.shape, x.dtype)
    for index in np.ndindex(x.shape[:-1]):
        out[index] = correctly_rounded_cumsum(x[index], x.dtype, exclusive=exclusive, nan_form=nan_form)
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_prefix_is_correctly_rounded(dtype, n):
    rng = np.random.default_rng(n)
    for kind in KINDS if n <= 65537 else ["normal", "full range"]:
        x = draw(kind, np.dtype(dtype).type, n, rng)
        got = gpureduce.cumsum(cupy.asarray(x), variant="exact")
        wrong = same_bits(got, correctly_rounded_cumsum(x, dtype))
        assert wrong.size == 0, f"{kind}: {wrong.size} wrong, first at {wrong[0]}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_hard_sets(dtype):
    """test_exact_sum_cpu's hard sets: cancellations, subnormals, the full range, ties, overflow, NaN, infinities,
    -0.0; each also repeated past a tile, so that a later tile starts from a prefix with every kind of low bit."""
    bad = []
    for name, x in cases(np.dtype(dtype).type):
        for y in (x, np.tile(x, 4096 // max(x.size, 1) + 2)):
            wrong = same_bits(gpureduce.cumsum(cupy.asarray(y), variant="exact"), correctly_rounded_cumsum(y, dtype))
            if wrong.size:
                bad.append(f"{name} ({y.size}): {wrong.size} wrong, first at {wrong[0]}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_formats_round_once_from_the_exact_prefix(dtype):
    dt = np.dtype(dtype) if dtype == "float16" else BFLOAT16
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(10000) * 4).astype(dt)
    want = correctly_rounded_cumsum(x, dt)
    if dtype == "float16":
        assert same_bits(gpureduce.cumsum(cupy.asarray(x), variant="exact"), want).size == 0
    else:  # (CuPy has no bfloat16)
        import torch
        t = torch.from_numpy(x.view(np.int16).copy()).cuda().view(torch.bfloat16)
        got = gpureduce.cumsum(t, variant="exact")
        assert same_bits(got.view(torch.int16).cpu().numpy().view(dt), want).size == 0


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("op", ["cumsum", "nancumsum"])
def test_exclusive_and_the_nan_form(op, exclusive):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(9000)
    x[rng.integers(0, x.size, 40)] = np.nan
    x[:3] = -0.0
    got = getattr(gpureduce, op)(cupy.asarray(x), variant="exact", exclusive=exclusive)
    want = correctly_rounded_cumsum(x, np.float64, exclusive=exclusive, nan_form=op == "nancumsum")
    assert same_bits(got, want).size == 0


@pytest.mark.parametrize("shape,axis", [((3, 5000), 1), ((5000, 3), 0), ((4, 3, 3000), 2), ((4, 3000, 3), 1),
                                        ((2000, 7), -1), ((7, 9000), 0)])
def test_every_axis_and_layout(shape, axis):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(1e3)
    want = reference(x, axis)
    for view in (cupy.asarray(x), cupy.asfortranarray(cupy.asarray(x))):
        assert same_bits(gpureduce.cumsum(view, axis=axis, variant="exact"), want).size == 0
    flat = gpureduce.cumsum(cupy.asarray(x), variant="exact")  # axis=None: the flattened array
    assert same_bits(flat, correctly_rounded_cumsum(x.reshape(-1), np.float32)).size == 0


def test_a_row_has_the_same_bits_alone_and_in_any_batch():
    """Batch invariance: a row's exact cumsum is its bits whatever is scanned beside it, and a strided view's."""
    rng = np.random.default_rng(13)
    m = cupy.asarray(rng.standard_normal((16, 12345)).astype(np.float32))
    batch = to_numpy(gpureduce.cumsum(m, axis=1, variant="exact"))
    for rows in (1, 3, 16):
        part = to_numpy(gpureduce.cumsum(m[:rows], axis=1, variant="exact"))
        assert same_bits(part, batch[:rows]).size == 0
    assert same_bits(gpureduce.cumsum(m[5], variant="exact"), batch[5]).size == 0
    assert same_bits(gpureduce.cumsum(m[5, ::-1][::-1], variant="exact"), batch[5]).size == 0


@pytest.mark.parametrize("library", sorted(DEVICE_LIBRARIES))
def test_every_input_kind_and_numpy(library):
    rng = np.random.default_rng(17)
    x = rng.standard_normal(5000)
    want = correctly_rounded_cumsum(x, np.float64)
    assert same_bits(gpureduce.cumsum(DEVICE_LIBRARIES[library](x), variant="exact"), want).size == 0
    assert same_bits(gpureduce.cumsum(x, variant="exact"), want).size == 0  # a NumPy array: copied in, result host


def test_dtype_out_integers_and_extremes():
    rng = np.random.default_rng(19)
    x = rng.standard_normal(6000).astype(np.float32)
    got = gpureduce.cumsum(cupy.asarray(x), dtype=np.float64, variant="exact")  # the float32 values' exact prefixes
    assert same_bits(got, correctly_rounded_cumsum(x, np.float64)).size == 0
    out = cupy.full(x.size, np.nan, np.float32)
    assert gpureduce.cumsum(cupy.asarray(x), out=out, variant="exact") is out
    assert same_bits(out, correctly_rounded_cumsum(x, np.float32)).size == 0
    ints = rng.integers(-100, 100, 7000).astype(np.int32)
    assert np.array_equal(to_numpy(gpureduce.cumsum(cupy.asarray(ints), variant="exact")), np.cumsum(ints))
    assert np.array_equal(to_numpy(gpureduce.cummax(cupy.asarray(x), variant="exact")), np.maximum.accumulate(x))
    assert to_numpy(gpureduce.cumsum(cupy.zeros(0, np.float32), variant="exact")).shape == (0,)
    with pytest.raises(ValueError, match="exact"):
        gpureduce.cumprod(cupy.asarray(x), variant="exact")


@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", ["cummin", "cummax"])
def test_minima_and_maxima_of_every_dtype(op, dtype):
    """cummin and cummax (exact in any order: auto's kernels) of each dtype the variant takes, whole arrays (float16
    and bfloat16 through auto's axis kernels: its whole-array kernels lack them) and along an axis."""
    rng = np.random.default_rng(29)
    dt = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    x = (rng.standard_normal((3, 5001)) * 100).astype(dt)
    ufunc = np.minimum if op == "cummin" else np.maximum
    for arg in (x, cupy.asarray(x) if dtype != "bfloat16" else x):
        got = to_numpy(getattr(gpureduce, op)(arg, variant="exact"))
        assert same_bits(got, ufunc.accumulate(x.reshape(-1))).size == 0
        got = to_numpy(getattr(gpureduce, op)(arg, axis=0, variant="exact"))
        assert same_bits(got, ufunc.accumulate(x, axis=0)).size == 0


def complex_reference(x, axis=-1, exclusive=False, nan_form=False, dtype=None):
    """Each part's reference scan (nan form: an element with a NaN part is 0, NumPy's nancumsum of complex)."""
    x = np.asarray(x)
    dtype = np.dtype(dtype or x.dtype)
    if nan_form:
        x = np.where(np.isnan(x), 0, x)
    part = np.float32 if dtype == np.complex64 else np.float64
    out = np.empty(x.shape, dtype)
    out.real = reference(x.real.astype(part), axis, exclusive)
    out.imag = reference(x.imag.astype(part), axis, exclusive)
    return out


def same_complex_bits(got, want):
    got = to_numpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    return same_bits(np.ascontiguousarray(got.real), np.ascontiguousarray(want.real)).size == 0 and \
        same_bits(np.ascontiguousarray(got.imag), np.ascontiguousarray(want.imag)).size == 0


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_each_part_its_exact_scan(dtype):
    """complex64 and complex128: each part of each element its own exact prefix sum rounded once (one exact scan of
    each part, gpureduce/_planning/exact_complex.py), for NumPy, CuPy and PyTorch inputs, whole and along an axis,
    exclusive, nancumsum (an element with a NaN part counts as 0), dtype= and out=."""
    rng = np.random.default_rng(37)
    part = np.float32 if dtype == "complex64" else np.float64
    x = np.empty(3 * 5001, dtype)
    x.real, x.imag = draw("normal", part, x.size, rng), draw("full range", part, x.size, rng)
    x = x.reshape(3, 5001)
    inputs = [x, cupy.asarray(x)] + ([DEVICE_LIBRARIES["torch"](x)] if "torch" in DEVICE_LIBRARIES else [])
    for arg in inputs:
        assert same_complex_bits(gpureduce.cumsum(arg, variant="exact"), complex_reference(x.reshape(-1)))
        assert same_complex_bits(gpureduce.cumsum(arg, axis=1, exclusive=True, variant="exact"),
                                 complex_reference(x, 1, exclusive=True))
        assert same_complex_bits(gpureduce.cumsum(arg, axis=0, variant="exact"), complex_reference(x, 0))
    holes = x.copy()
    holes.real[0, ::7] = np.nan
    holes.imag[1, ::11] = np.nan
    got = gpureduce.nancumsum(cupy.asarray(holes), axis=1, variant="exact")
    assert same_complex_bits(got, complex_reference(holes, 1, nan_form=True))
    got = gpureduce.cumsum(cupy.asarray(holes), axis=1, variant="exact")
    assert same_complex_bits(got, complex_reference(holes, 1))
    if dtype == "complex64":
        got = gpureduce.cumsum(cupy.asarray(x), axis=1, dtype=np.complex128, variant="exact")
        assert same_complex_bits(got, complex_reference(x.astype(np.complex128), 1))
    out = cupy.full(x.shape, np.nan, dtype)
    assert gpureduce.cumsum(cupy.asarray(x), axis=1, out=out, variant="exact") is out
    assert same_complex_bits(out, complex_reference(x, 1))
    with pytest.raises(TypeError, match="same_kind"):
        gpureduce.cumsum(cupy.asarray(x), out=cupy.zeros(x.size, part), variant="exact")


def test_repeatable_and_in_place():
    rng = np.random.default_rng(23)
    x = cupy.asarray(draw("full range", np.float64, 50000, rng))
    first = to_numpy(gpureduce.cumsum(x, variant="exact"))
    assert same_bits(gpureduce.cumsum(x, variant="exact"), first).size == 0
    y = x.copy()
    gpureduce.cumsum(y, out=y, variant="exact")
    assert same_bits(y, first).size == 0
